/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The peer transport under the RDM protocol: what carries RDM messages
 * and RDMA to one peer. The protocol (matching, credits, eager and
 * rendezvous, RMA and atomics) calls the ops; the transport calls back
 * through the upcalls it was given at listen. Today's transport is an
 * iWARP engine connection per peer (rdm_iw.c); a same-host transport
 * (shared-memory rings, process_vm_readv/writev) and an authentication
 * step of the connect fit under the same two structs.
 *
 * Everything runs under the fabric lock. A transport never frees a
 * context it was given: each comes back exactly once through recv (a
 * message it placed) or done (an operation it accepted), also when the
 * connection fails (with an error).
 */
#ifndef IWARP_RDM_XPORT_H
#define IWARP_RDM_XPORT_H

#include "../iwarp.h"
#include "iwarp/engine.h"
#include "../iwarp_auth.h"

struct iwarp_rdm_ep;
struct iwarp_rdm_peer;
struct iwarp_rdm_xep;		/* a transport's state for an endpoint */
struct iwarp_rdm_xconn;		/* ... and for one peer */

enum iwarp_rdm_xop {
	IWARP_RDM_X_WRITE,
	IWARP_RDM_X_READ,
};

/* iwarp_rdm_xport.post_rdma flags */
#define IWARP_RDM_X_FENCE 1	/* after every earlier Read completed */
/* a Read of a rendezvous: raddr is the peer's own virtual address of the
 * message it offered, which a transport that can read the peer's memory
 * may copy itself */
#define IWARP_RDM_X_PEER_VA 2
/* the caller posts more to the peer at once (a Write's WDATA or fence
 * Read): a transport may hold this back to send them together */
#define IWARP_RDM_X_MORE 4

/* An RFC 7306 Atomic Request: FetchAdd or masked CmpSwap of 64 bits. */
struct iwarp_rdm_xatomic {
	bool cswap;
	uint64_t add_swap, add_swap_mask, compare, compare_mask;
	uint32_t rkey;
	uint64_t raddr;
	uint64_t *old;			/* the value before, host order */
};

/* What the transport tells the protocol. */
struct iwarp_rdm_upcalls {
	/* The transport state of the protocol's peer for a listening
	 * address (made if new), for a connection that peer opened; NULL
	 * refuses it. */
	struct iwarp_rdm_xconn *(*peer)(struct iwarp_rdm_ep *ep,
					const union iwarp_sockaddr *addr);
	/* Whether work waits for the connection (worth connecting for). */
	bool (*queued)(struct iwarp_rdm_peer *peer);
	/* A message's first hdr_len octets arrived: fill dst (at most
	 * IW_MAX_SGE) with where the rest goes, set *ctx; the entry count,
	 * or negative to refuse the message (the connection ends). */
	int (*place)(struct iwarp_rdm_peer *peer, const uint8_t *hdr,
		     size_t hdr_len, struct iw_sge *dst, void **ctx);
	/* The message placed with ctx ended: len octets in all, or !ok. */
	void (*recv)(struct iwarp_rdm_peer *peer, void *ctx, uint64_t len,
		     bool ok);
	/* A whole message at hand, its header and all its len octets of
	 * payload: taken (true) when it is an EAGER that a posted receive
	 * matches; otherwise nothing is done and the transport goes
	 * through place and recv. */
	bool (*recv_whole)(struct iwarp_rdm_peer *peer, const uint8_t *hdr,
			   size_t hdr_len, const uint8_t *payload,
			   uint32_t len);
	/* A posted operation completed: err 0 or a positive FI errno,
	 * prov_errno the transport's detail (0 when none). */
	void (*done)(struct iwarp_rdm_peer *peer, void *ctx, int err,
		     int prov_errno);
	/* The peer's connection is up: queued work may go. */
	void (*connected)(struct iwarp_rdm_peer *peer);
	/* The connection that was up is gone (or the peer restarted): what
	 * is queued or waiting for an answer fails with err, and the next
	 * connection starts with full credit windows. */
	void (*lost)(struct iwarp_rdm_peer *peer, int err);
	/* Connecting failed for good: what is queued fails with err and
	 * prov_errno (IWARP_PROV_ERRNO_AUTH: refused for the job key). */
	void (*unreachable)(struct iwarp_rdm_peer *peer, int err,
			    int prov_errno);
	/* The peer wrote or read a region of ours (mr_ctx: its iwarp_mr;
	 * NULL for the protocol's own regions and empty Writes). */
	void (*target)(struct iwarp_rdm_ep *ep, bool write, void *mr_ctx);
	/* Where the transport's pollables go: the progress engine and the
	 * waits of the endpoint's CQs. */
	void (*poll_add)(struct iwarp_rdm_ep *ep, struct iwarp_pollable *p);
	void (*poll_del)(struct iwarp_rdm_ep *ep, struct iwarp_pollable *p);
};

/* What the transport offers the protocol. */
struct iwarp_rdm_xport {
	const char *name;
	/* Listens on *name (its port filled in on return) for the endpoint;
	 * with a job key (key->len > 0) every connection proves it
	 * (iwarp_auth.h) before the peer is connected. 0 or a negative
	 * errno. */
	int (*listen)(struct iwarp_rdm_ep *ep, struct iwarp_domain *dom,
		      union iwarp_sockaddr *name, uint64_t instance,
		      const struct iwarp_auth_key *key,
		      const struct iwarp_rdm_upcalls *up,
		      struct iwarp_rdm_xep **xe);
	/* Stops listening and frees xe (after every peer's close). */
	void (*shutdown)(struct iwarp_rdm_xep *xe);
	/* A peer's transport state, made with the protocol's peer. */
	struct iwarp_rdm_xconn *(*peer_open)(struct iwarp_rdm_xep *xe,
					     struct iwarp_rdm_peer *peer,
					     const union iwarp_sockaddr *addr);
	/* Ends it: connections go without further upcalls. */
	void (*peer_close)(struct iwarp_rdm_xconn *xc);
	/* Starts connecting unless connected or on the way; retried while
	 * upcalls->queued says so, until unreachable. */
	void (*connect)(struct iwarp_rdm_xconn *xc);
	/*
	 * Posts, in order behind what is already posted to the peer: 0, or
	 * a negative errno when nothing was posted. The connection may fail
	 * inside the call (upcalls included) and still return 0.
	 */
	int (*post_msg)(struct iwarp_rdm_xconn *xc, void *ctx,
			const uint8_t *hdr, size_t hdr_len,
			const struct iovec *iov, size_t count);
	/* iov of count 0 with IWARP_RDM_X_READ: the zero-length Read that
	 * fences what went before (delivery completion). */
	int (*post_rdma)(struct iwarp_rdm_xconn *xc, void *ctx,
			 enum iwarp_rdm_xop op, const struct iovec *iov,
			 size_t count, uint32_t rkey, uint64_t raddr,
			 unsigned int flags);
	/* An RFC 7306 Atomic Request (see atomics). */
	int (*post_atomic)(struct iwarp_rdm_xconn *xc, void *ctx,
			   const struct iwarp_rdm_xatomic *a);
	/* Whether post_atomic works with this peer now. */
	bool (*atomics)(const struct iwarp_rdm_xconn *xc);
	/* The eager window (credits) both sides took, once connected. */
	unsigned int (*window)(const struct iwarp_rdm_xconn *xc);
	/* Whether a message above rdm_eager gains by going eagerly when the
	 * peer is idle: over TCP its payload follows the header at once,
	 * where a rendezvous waits a round trip for the Read; through a
	 * ring of small slots it would only be copied twice. */
	bool (*eager_idle)(const struct iwarp_rdm_xconn *xc);
	/* The largest message worth sending eagerly while the peer streams
	 * large messages to us too. Through shared memory an eager message
	 * is copied twice, once by each side, a rendezvous once (the
	 * receiver's process_vm_readv): when both sides stream, each core's
	 * copies are the whole cost. Over TCP both take two. */
	size_t (*stream_eager)(const struct iwarp_rdm_xconn *xc);
	/* Octets per Read of a rendezvous, 0 for one Read of the whole
	 * message (shared memory copies it in one process_vm_readv). */
	size_t (*read_chunk)(const struct iwarp_rdm_xconn *xc);
	/* Octets of chunked Reads a peer may have outstanding (four Reads
	 * at least, whatever their size). */
	uint64_t (*read_window)(const struct iwarp_rdm_xconn *xc);
	/*
	 * Posts between batch(xc, true) and batch(xc, false) (nested) go
	 * out together when the outermost batch ends: a flush of messages
	 * that waited for credits. NULL where each post goes at once.
	 */
	void (*batch)(struct iwarp_rdm_xconn *xc, bool on);
	/*
	 * A message posted now, with no completion to come, if the
	 * transport takes it whole at once and what it took is as good as
	 * delivered (a shared-memory ring): true when it went; false,
	 * nothing posted, to take the ordinary way. NULL where there is no
	 * such way.
	 */
	bool (*post_inline)(struct iwarp_rdm_xconn *xc, const uint8_t *hdr,
			    size_t hdr_len, const struct iovec *iov,
			    size_t count);
};

extern const struct iwarp_rdm_xport iwarp_rdm_iw_xport;
/* The same-host transport (rdm_shm.c): iWARP connects, then peers on
 * one host and network namespace move to shared memory. */
extern const struct iwarp_rdm_xport iwarp_rdm_shm_xport;
/* What rdm_shm.c asks of the iWARP transport beneath it: its connection
 * data offers shared memory; whether the connected peer offered it. */
void iwarp_rdm_iw_offer_shm(struct iwarp_rdm_xep *xe);
bool iwarp_rdm_iw_peer_shm(const struct iwarp_rdm_xconn *c);
/* An idle connection (the data goes elsewhere): polled only every
 * IWARP_RARE_US on a rare turn, so a busy loop makes few syscalls. */
void iwarp_rdm_iw_quiet(struct iwarp_rdm_xconn *c, bool quiet);

#endif /* IWARP_RDM_XPORT_H */
