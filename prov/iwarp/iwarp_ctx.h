/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared contexts (fi_stx_context, fi_srx_context), for every endpoint
 * type. A shared receive context keeps the receives posted to it in
 * posting order until an endpoint bound to it takes one: the endpoint a
 * message arrives at takes the first that matches it, and a new receive
 * is first offered to the bound endpoints (an RDM endpoint holding a
 * matching unexpected message, a MSG stream waiting for a receive). A
 * taken receive is the endpoint's own from then on: it completes on the
 * endpoint's receive CQ and counter. A shared transmit context is the
 * transmit attributes the bound endpoints share; each keeps its own send
 * queue, as the engine has one per connection.
 */
#ifndef IWARP_CTX_H
#define IWARP_CTX_H

#include <sys/uio.h>

struct iwarp_ep_base;
struct iwarp_ep_type;

/* A receive posted to a shared receive context, not taken yet. */
struct iwarp_srx_rx {
	struct iwarp_list link;
	void *context;
	uint64_t flags;			/* the caller's op flags */
	bool tagged;
	fi_addr_t src;
	uint64_t tag, ignore;
	size_t count;
	struct iovec iov[IWARP_IOV_MAX];
};

struct iwarp_srx {
	struct fid_ep ep_fid;
	struct iwarp_domain *dom;
	struct fi_rx_attr attr;
	enum fi_ep_type ep_type;	/* of the bound endpoints, or UNSPEC */
	struct iwarp_list eps;		/* iwarp_ep_base.srx_link */
	struct iwarp_list posted;	/* iwarp_srx_rx, posting order */
	size_t nposted;
	uint64_t op_flags;
};

struct iwarp_stx {
	struct fid_stx stx_fid;
	struct iwarp_domain *dom;
	struct fi_tx_attr attr;
	atomic_int ref;			/* bound endpoints */
};

/* fi_ops_domain.stx_ctx and .srx_ctx */
int iwarp_stx_open(struct fid_domain *domain, struct fi_tx_attr *attr,
		   struct fid_stx **stx, void *context);
int iwarp_srx_open(struct fid_domain *domain, struct fi_rx_attr *attr,
		   struct fid_ep **rx_ep, void *context);

/* Endpoint base, lock not needed before enable: fi_ep_bind of a shared
 * context (-FI_EINVAL: bound already, or another type's srx). */
int iwarp_ctx_bind(struct iwarp_ep_base *b, struct fid *bfid);
/* Lock held: the endpoint lets go of its shared contexts. */
void iwarp_ctx_unbind(struct iwarp_ep_base *b);

/* A receive as posted (-FI_EINVAL for what no shared context takes,
 * -FI_ENOMEM), for a shared or a scalable endpoint's receive context. */
int iwarp_srx_rx_new(const struct iovec *iov, size_t count, fi_addr_t src,
		     uint64_t tag, uint64_t ignore, void *context,
		     uint64_t flags, bool tagged, struct iwarp_srx_rx **out);
/* The transmit calls of a receive context: -FI_ENOSYS. */
ssize_t iwarp_srx_no_send(struct fid_ep *e, const void *buf, size_t len,
			  void *desc, fi_addr_t dest, void *ctx);
ssize_t iwarp_srx_no_sendv(struct fid_ep *e, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t dest,
			   void *ctx);
ssize_t iwarp_srx_no_sendmsg(struct fid_ep *e, const struct fi_msg *m,
			     uint64_t flags);
ssize_t iwarp_srx_no_inject(struct fid_ep *e, const void *buf, size_t len,
			    fi_addr_t dest);
ssize_t iwarp_srx_no_tsend(struct fid_ep *e, const void *buf, size_t len,
			   void *desc, fi_addr_t dest, uint64_t tag,
			   void *ctx);
ssize_t iwarp_srx_no_tsendv(struct fid_ep *e, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t dest,
			    uint64_t tag, void *ctx);
ssize_t iwarp_srx_no_tsendmsg(struct fid_ep *e, const struct fi_msg_tagged *m,
			      uint64_t flags);
ssize_t iwarp_srx_no_tinject(struct fid_ep *e, const void *buf, size_t len,
			     fi_addr_t dest, uint64_t tag);
ssize_t iwarp_srx_no_tsenddata(struct fid_ep *e, const void *buf, size_t len,
			       void *desc, uint64_t data, fi_addr_t dest,
			       uint64_t tag, void *ctx);
ssize_t iwarp_srx_no_tinjectdata(struct fid_ep *e, const void *buf,
				 size_t len, uint64_t data, fi_addr_t dest,
				 uint64_t tag);

/* Lock held. The first receive posted to srx that match() accepts,
 * unlinked (the caller frees it), or NULL. */
struct iwarp_srx_rx *iwarp_srx_take(struct iwarp_srx *srx,
				    bool (*match)(const struct iwarp_srx_rx *,
						  const void *),
				    const void *arg);
/* Lock held: a receive taken but not usable goes back first in line. */
void iwarp_srx_untake(struct iwarp_srx *srx, struct iwarp_srx_rx *rx);
/* Does rx accept an untagged message, or one with this tag? */
bool iwarp_srx_match_msg(const struct iwarp_srx_rx *rx, const void *arg);
bool iwarp_srx_match_tag(const struct iwarp_srx_rx *rx, const void *tag);

#endif /* IWARP_CTX_H */
