/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The endpoint base: plumbing every endpoint type (MSG, RDM, DGRAM)
 * shares, embedded first in each type's endpoint. Binding CQs and
 * counters, fi_control, options, size_left, op flags, the ENOSYS stubs
 * and the mapping of engine errors to fabric errnos live here once;
 * a type adds what is its own through struct iwarp_ep_type.
 */
#ifndef IWARP_EP_BASE_H
#define IWARP_EP_BASE_H

struct iwarp_ep_base;
struct iwarp_srx_rx;

/* FI_OPT_ENDPOINT options a type offers (iwarp_ep_type.opts). */
#define IWARP_OPT_CM_DATA_SIZE	(1u << 0)
#define IWARP_OPT_MIN_MULTI_RECV (1u << 1)

/* What an endpoint type adds to the base. Hooks run with no lock held. */
struct iwarp_ep_type {
	const char *name;		/* "MSG", "RDM": for log lines */
	unsigned int opts;		/* IWARP_OPT_* */
	size_t cm_data_max;		/* FI_OPT_CM_DATA_SIZE */
	/* fi_ep_bind of a class other than CQ and counter (EQ, AV);
	 * NULL: -FI_EINVAL for them */
	int (*bind)(struct iwarp_ep_base *b, struct fid *bfid,
		    uint64_t flags);
	int (*enable)(struct iwarp_ep_base *b);		/* FI_ENABLE */
	/* Lock held: take a receive posted to the bound shared receive
	 * context now, if the endpoint has a use for it (iwarp_ctx.h);
	 * NULL: the type binds no shared receive context */
	bool (*srx_offer)(struct iwarp_ep_base *b, struct iwarp_srx_rx *rx);
};

struct iwarp_ep_base {
	struct fid_ep ep_fid;
	const struct iwarp_ep_type *type;
	struct iwarp_domain *dom;
	struct iwarp_fabric *fab;
	struct fi_info *info;		/* our copy */
	struct iwarp_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	struct iwarp_cntr *cntr_send, *cntr_recv;
	struct iwarp_cntr *cntr_write, *cntr_read;
	/* FI_RMA_EVENT: the peers' Writes and Reads of our memory */
	struct iwarp_cntr *cntr_rwrite, *cntr_rread;
	uint64_t tx_op_flags, rx_op_flags;
	bool enabled;
	size_t min_multi_recv;		/* FI_OPT_MIN_MULTI_RECV */
	struct iwarp_srx *srx;		/* shared receive context, or NULL */
	struct iwarp_list srx_link;	/* in srx->eps */
	struct iwarp_stx *stx;		/* shared transmit context, or NULL */
};

static inline struct iwarp_ep_base *iwarp_ep_base_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_ep_base, ep_fid.fid);
}

/*
 * Fills the base from the domain and info (copied: 0 or -FI_ENOMEM) and
 * takes a domain reference; the caller sets the fid ops. fini drops
 * every reference the base holds (lock held) and frees the info copy.
 */
int iwarp_ep_base_init(struct iwarp_ep_base *b,
		       const struct iwarp_ep_type *type,
		       struct iwarp_domain *dom, const struct fi_info *info,
		       void *context);
void iwarp_ep_base_fini(struct iwarp_ep_base *b);

/* fi_ops.bind and fi_ops.control of every endpoint type. */
int iwarp_ep_base_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int iwarp_ep_base_control(struct fid *fid, int command, void *arg);
/* fi_ops_ep getopt/setopt; -FI_ETOOSMALL reports the size needed. */
int iwarp_ep_base_getopt(fid_t fid, int level, int optname, void *optval,
			 size_t *optlen);
int iwarp_ep_base_setopt(fid_t fid, int level, int optname,
			 const void *optval, size_t optlen);
/* A size_t option out (passive endpoints too); a short buffer learns
 * the size it needs: 0 or -FI_ETOOSMALL. */
int iwarp_opt_size_out(size_t v, void *optval, size_t *optlen);
/* fi_tx/rx_size_left: deprecated in fi_endpoint(3) and "may not be
 * supported": -FI_ENOSYS for every type, as no bound is honest for all
 * (a MSG send may take two queue entries). */
ssize_t iwarp_ep_base_size_left(struct fid_ep *ep);

/* Counter of a completing op by its CQ flags: FI_RECV, READ, WRITE, else
 * SEND. */
static inline struct iwarp_cntr *iwarp_ep_base_cntr(struct iwarp_ep_base *b,
						    uint64_t flags)
{
	if (flags & FI_RECV)
		return b->cntr_recv;
	if (flags & FI_READ)
		return b->cntr_read;
	if (flags & FI_WRITE)
		return b->cntr_write;
	return b->cntr_send;
}

/* ---- errno mapping */

/* CQ error of a failed engine work completion (enum iw_wc_status). */
int iwarp_errno_from_status(int status);
/* prov_errno of an engine error triple; 0 when there is none. */
struct iw_err;
int iwarp_prov_errno_of(const struct iw_err *err);
/* The engine's posting errors as fabric errnos. */
static inline int iwarp_fi_err(int ret)
{
	switch (ret) {
	case -EAGAIN:
		return -FI_EAGAIN;
	case -ENOTCONN:
		return -FI_ENOTCONN;
	case -EINVAL:
		return -FI_EINVAL;
	default:
		return ret;
	}
}

#endif /* IWARP_EP_BASE_H */
