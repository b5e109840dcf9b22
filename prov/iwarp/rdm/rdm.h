/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Native FI_EP_RDM: the protocol's types and the prototypes its files
 * share. The protocol runs over a peer transport (rdm_xport.h); today
 * one engine connection per peer, MPA rev 2 peer-to-peer with an RTR so
 * either side may send first (rdm_iw.c).
 *
 * Files, each calling only those below it: rdm_ep.c (the endpoint)
 * -> rdm_recv.c (incoming messages, transport upcalls) -> rdm_msg.c,
 * rdm_rma.c, rdm_atomic.c (the operations) -> rdm_core.c (peers,
 * operation lifecycle, posting, credits) -> rdm_wire.c (codecs); the
 * transport rdm_iw.c uses only rdm_wire.c and is reached through
 * struct iwarp_rdm_xport. rdm_coll.c (collectives) sits beside rdm_ep.c
 * on rdm_msg.c's internal sends and receives, whose ends come back to it
 * (iwarp_rdm_coll_done) instead of going to a CQ.
 *
 * Every RDM message is one iWARP Send that starts with a 40-octet header
 * (big-endian):
 *
 *	 0 op  1 flags  2 credits(16)  4 len(32)  8 msg_id(32)  12 stag(32)
 *	16 tag(64)  24 data(64)  32 addr(64)
 *
 * EAGER carries the payload after the header; the engine's placement
 * callback sees the header first and hands back the matched receive
 * buffer, so the payload lands in place. RTS announces a large message
 * registered under stag/addr; the receiver RDMA-Reads it straight into
 * the matched buffer and answers FIN, which completes the sender.
 * CREDIT returns eager credits explicitly when none travel piggybacked.
 *
 * One-sided operations: fi_write and fi_read are RDMA Writes and Reads on
 * the peer's connection (the target's STag and address come from the
 * application); fi_writedata adds a WDATA message after the Write, whose
 * data the target reports as remote CQ data. Delivery completion adds a
 * zero-length Read behind the operation (its response comes only after
 * the target placed everything before it). Atomics the peer executes in
 * software travel as AREQ (op/datatype/fetch in `tag`, element count in
 * `data`, target STag/address in stag/addr, operands then compare values
 * as payload) and come back as ARESP (msg_id of the request, fetched
 * values as payload, or F_ERROR with a positive FI errno in `data`). With
 * a peer that also announced RFC 7306, 64-bit FetchAdd and CmpSwap style
 * operations go as RFC 7306 Atomic Requests instead.
 * Credits bound what a peer may have in flight in EAGER and RTS messages;
 * a credit comes back once its message is matched or stored as
 * unexpected (MPI must be able to receive in any order, so stored
 * messages cannot hold credits), up to rdm_unexp_max stored octets;
 * past that a stored message's credit waits until it is received.
 *
 * Connection private data (both directions), 32 octets:
 *	0 magic "IWRD"  4 version(8) 5 family(8) 6 port(16)  8 addr[16]
 *	24 instance(64)
 * plus, in a Reply, the decision (accepted / collision) in `version`'s
 * high bit. Simultaneous connects keep the connection initiated by the
 * side whose (address, port, instance) is smaller; the other is rejected
 * with a collision Reply and its sender waits for the winner to arrive.
 * A request must come from the IP its private data claims, and one that
 * claims a live peer restarted replaces its connection only once that
 * is proven dead or the newcomer proved the job key. With a job key an
 * auth block precedes these 32 octets (the Reply's with the responder's
 * proof) and the initiator's first Send is its proof (rdm_iw.h,
 * iwarp_auth.h).
 */
#ifndef IWARP_RDM_H
#define IWARP_RDM_H

#include "../iwarp.h"
#include "../iwarp_av.h"
#include "../iwarp_rdm.h"
#include "rdm_wire.h"
#include "rdm_xport.h"

#define IWARP_RDM_INJECT_MAX 256

/* AREQ `tag`: the atomic op and datatype, and whether values come back */
#define IWARP_RDM_AT_OP(t) ((unsigned)((t) & 0xff))
#define IWARP_RDM_AT_DT(t) ((unsigned)(((t) >> 8) & 0xff))
#define IWARP_RDM_AT_FETCH (1ULL << 16)
#define IWARP_RDM_ATOMIC_MAX 4096	/* octets per operand array */

/* ---- endpoint state */

struct iw_mr;
struct iwarp_rdm_ep;
struct iwarp_rdm_cop;
struct iwarp_rdm_joins;

/* A peer, keyed by its listening address. */
struct iwarp_rdm_peer {
	struct iwarp_list link;		/* ep->peers */
	struct iwarp_rdm_ep *ep;
	union iwarp_sockaddr addr;
	char name[64];			/* addr as text, for log lines */
	fi_addr_t from;			/* its fi_addr as of AV gen from_gen */
	uint64_t from_gen;		/* 0: not looked up yet */
	const struct iwarp_rdm_xport *xp;	/* what carries it */
	struct iwarp_rdm_xconn *xc;
	bool up;			/* the transport says: post away */
	uint16_t credits;		/* EAGER/RTS we may still send */
	uint16_t owed;			/* credits to give back */
	uint16_t window;		/* credits each way, once connected */
	uint32_t epoch;			/* connections so far: credits owed
					 * to an older one are not given */
	uint16_t granted;		/* EAGER/RTS the peer may still send */
	/* streams both ways (iwarp_rdm_stream_rndv): our sends above the
	 * transport's stream_eager, their count when the peer's last one
	 * came */
	uint32_t big_tx, big_rx_at;
	bool big_rx;
	struct iwarp_list pending;	/* iwarp_rdm_tx not yet posted */
	struct iwarp_list inflight;	/* RTS sent, waiting for FIN */
	/* rendezvous Reads in chunks (iwarp_rdm_start_read): octets asked
	 * and not yet in, receives with parts still to ask, in order */
	uint64_t read_bytes;
	struct iwarp_list read_wait;
	struct iwarp_rdm_rx *read_cur;	/* the one the pump asks for now */
};

enum {
	IWARP_RDM_OWN_RX = 0,		/* transport contexts: who posted */
	IWARP_RDM_OWN_TX = 1,
};

enum iwarp_rdm_kind {
	IWARP_RDM_K_MSG,		/* EAGER/RTS, or a control message */
	IWARP_RDM_K_WRITE,
	IWARP_RDM_K_READ,
	IWARP_RDM_K_ATOMIC,		/* AREQ, done when ARESP arrives */
	IWARP_RDM_K_ATOMIC7306,		/* RFC 7306 Atomic Request */
};

/* One operation, from the call until its completion. */
struct iwarp_rdm_tx {
	uint8_t owner;			/* IWARP_RDM_OWN_TX */
	uint8_t kind;			/* enum iwarp_rdm_kind */
	uint8_t step;			/* work requests posted so far */
	uint8_t pending;		/* of them, not yet completed */
	bool posted;			/* all of them are */
	bool answered;			/* FIN/ARESP came */
	bool listed;			/* on peer->pending or ->inflight */
	int status;			/* first failure: positive FI errno */
	int prov_errno;
	struct iwarp_list link;
	struct iwarp_rdm_peer *peer;
	void *context;
	struct iwarp_ep_base *base;	/* a tx context's, or NULL: the ep's */
	uint64_t cq_flags;
	uint64_t op_flags;
	bool cq;
	bool ctrl;			/* FIN/CREDIT: no user completion */
	struct iwarp_rdm_hdr hdr;
	uint8_t hbuf[IWARP_RDM_HDR_LEN];
	size_t count;			/* of iov */
	size_t len;
	uint8_t *copy;			/* inject copy or rendezvous bounce */
	struct iw_mr *mr;		/* rendezvous source */
	/* one-sided */
	uint32_t rkey;
	uint64_t raddr;
	bool fence;			/* a zero-length Read closes it */
	bool wdata;			/* a WDATA message follows the Write */
	size_t res_count;		/* of res */
	size_t res_len;
	uint64_t a7306[4];		/* add/swap, mask, compare, mask */
	uint64_t a7306_old;
	uint8_t a7306_op;		/* fits one RFC 7306 request: its op */
	struct iwarp_rdm_cop *coll;	/* internal to a collective */
	/* not cleared for a new tx (IWARP_RDM_TX_CLEAR): read only as far
	 * as count, res_count and len say */
	struct iovec iov[IWARP_IOV_MAX];
	struct iovec res[IWARP_IOV_MAX];	/* fetched values go here */
	uint8_t small[64];		/* the inject copy when it fits */
};

#define IWARP_RDM_TX_CLEAR offsetof(struct iwarp_rdm_tx, iov)

enum { IWARP_RDM_7306_FADD = 1, IWARP_RDM_7306_CSWAP = 2 };

/* A posted receive. */
struct iwarp_rdm_rx {
	uint8_t owner;			/* IWARP_RDM_OWN_RX (zeroed) */
	uint8_t rxc;			/* rx context it was posted to */
	struct iwarp_list link;
	void *context;
	struct iwarp_ep_base *base;	/* an rx context's, or NULL: the ep's */
	uint64_t flags;			/* FI_TAGGED or FI_MSG, | FI_RECV */
	fi_addr_t src;
	uint64_t tag, ignore;
	size_t count;
	size_t len;
	bool cq;
	bool multi;			/* FI_MULTI_RECV buffer, still posted */
	size_t used;			/* multi: octets handed out */
	size_t pieces;			/* multi: pieces not completed yet */
	bool retired;			/* multi: unlinked, freed by the
					 * completion of its last piece */
	struct iwarp_rdm_rx *parent;	/* a piece: its multi buffer */
	bool owes;			/* its credit goes back when done */
	/* the message it matched */
	struct iwarp_rdm_hdr hdr;
	fi_addr_t from;
	struct iwarp_rdm_peer *peer;
	uint64_t resv;			/* tag bits that must equal tag's */
	struct iwarp_rdm_cop *coll;	/* internal to a collective */
	/* its rendezvous Read in chunks of rd_chunk (0: one Read): octets
	 * to read, asked, in; Reads out; the first failure */
	uint64_t rd_chunk, rd_len, rd_off, rd_in;
	unsigned int rd_out;
	int rd_err;
	/* last: only count of them are read, so a reused record's are
	 * not cleared (iwarp_rdm_rx_get) */
	struct iovec iov[IWARP_IOV_MAX];
};

#define IWARP_RDM_UX_SMALL 256

/* A message that arrived before its receive was posted. */
struct iwarp_rdm_unexp {
	struct iwarp_list link;
	struct iwarp_rdm_hdr hdr;
	struct iwarp_rdm_peer *peer;
	fi_addr_t from;
	uint8_t *buf;			/* EAGER payload */
	bool arrived;			/* the payload is complete */
	bool claimed;			/* FI_PEEK | FI_CLAIM took it */
	void *claim_ctx;
	struct iwarp_rdm_rx *waiter;	/* matched while still arriving */
	size_t cost;			/* counted in ep->unexp_bytes */
	bool withheld;			/* its credit waits until taken */
	uint32_t epoch;			/* ... owed to that connection */
	/* last, not cleared on reuse: a small payload's buf, so a small
	 * unexpected message (most, when ranks outnumber cores) costs no
	 * allocation (iwarp_rdm_ux_get) */
	uint8_t small[IWARP_RDM_UX_SMALL];
};

/* What an incoming message turned out to be (its transport context). */
struct iwarp_rdm_in {
	struct iwarp_rdm_hdr hdr;
	struct iwarp_rdm_rx *rx;	/* EAGER into a posted receive */
	struct iwarp_rdm_unexp *ux;	/* EAGER into a buffer of ours */
	uint8_t *abuf;			/* AREQ/ARESP payload */
};

/*
 * Freed operation records of one kind, kept for reuse (fabric lock held):
 * malloc and free cost more than the rest of a small message's path.
 * Under ASan every record is a fresh allocation, so that use after free
 * stays visible.
 */
#define IWARP_STASH_MAX 64

struct iwarp_stash {
	void *top;
	unsigned int n;
};

/* size octets, of which the first clear are zeroed (all when new) */
static inline void *iwarp_stash_get_part(struct iwarp_stash *s, size_t size,
					 size_t clear)
{
	void *p = s->top;

	if (!p)
		return iwarp_zalloc(size);
	s->top = *(void **)p;
	s->n--;
	memset(p, 0, clear);
	return p;
}

static inline void *iwarp_stash_get(struct iwarp_stash *s, size_t size)
{
	return iwarp_stash_get_part(s, size, size);
}

static inline struct iwarp_rdm_rx *iwarp_rdm_rx_get(struct iwarp_stash *s)
{
	return iwarp_stash_get_part(s, sizeof(struct iwarp_rdm_rx),
				    offsetof(struct iwarp_rdm_rx, iov));
}

/* what an unexpected message counts against rdm_unexp_max besides its
 * payload: its record without the room for a small payload */
#define IWARP_RDM_UX_COST offsetof(struct iwarp_rdm_unexp, small)

static inline struct iwarp_rdm_unexp *iwarp_rdm_ux_get(struct iwarp_stash *s)
{
	return iwarp_stash_get_part(s, sizeof(struct iwarp_rdm_unexp),
				    offsetof(struct iwarp_rdm_unexp, small));
}

static inline void iwarp_stash_put(struct iwarp_stash *s, void *p)
{
#ifndef __SANITIZE_ADDRESS__
	if (p && s->n < IWARP_STASH_MAX) {
		*(void **)p = s->top;
		s->top = p;
		s->n++;
		return;
	}
#endif
	free(p);
}

static inline void iwarp_stash_fini(struct iwarp_stash *s)
{
	while (s->top) {
		void *p = s->top;

		s->top = *(void **)p;
		free(p);
	}
	s->n = 0;
}

/*
 * Payload buffers of unexpected messages kept for reuse, one free list
 * per power-of-two size from IWARP_RDM_BUF_MIN (fabric lock held), up to
 * IWARP_RDM_BUF_KEEP octets in all. Freed to glibc, a window of them
 * left the top of the heap free: glibc gave it back (brk, a TLB
 * shootdown across CPUs) and the next window faulted it in again, page
 * by page.
 */
#define IWARP_RDM_BUF_MIN_SHIFT 9
#define IWARP_RDM_BUF_CLASSES 12	/* 512 octets .. 1 MiB */
#define IWARP_RDM_BUF_KEEP (8u << 20)

struct iwarp_rdm_bufs {
	void *free[IWARP_RDM_BUF_CLASSES];
	size_t kept;
};

void *iwarp_rdm_buf_get(struct iwarp_rdm_bufs *b, size_t len);
void iwarp_rdm_buf_put(struct iwarp_rdm_bufs *b, void *buf, size_t len);
void iwarp_rdm_bufs_fini(struct iwarp_rdm_bufs *b);

#define IWARP_RDM_DEST_CACHE 64

struct iwarp_rdm_ep {
	struct iwarp_ep_base base;	/* first: fids convert through it */
	struct iwarp_av *av;
	bool closing;
	bool directed;			/* FI_DIRECTED_RECV asked for */
	size_t prefix;			/* FI_MSG_PREFIX octets, or 0 */
	bool async;			/* holds the fabric's progress thread */
	const struct iwarp_rdm_xport *xp;	/* carries new peers */
	struct iwarp_rdm_xep *xe;	/* its state, once listening */
	union iwarp_sockaddr name;
	uint64_t instance;
	uint32_t next_msg_id;
	struct iwarp_list peers;
	/* fi_addr_t to peer, direct-mapped, valid for one AV generation:
	 * every send asks, and peers are many in a large job */
	struct {
		fi_addr_t dest;
		uint64_t gen;		/* the AV's gen + 1; 0: empty */
		struct iwarp_rdm_peer *peer;
	} dest_cache[IWARP_RDM_DEST_CACHE];
	struct iwarp_list posted_tagged, posted_msg;
	struct iwarp_list unexp_tagged, unexp_msg;
	size_t unexp_bytes;		/* stored unexpected messages */
	struct iwarp_stash tx_stash, rx_stash, in_stash, ux_stash;
	struct iwarp_rdm_bufs ux_bufs;	/* unexpected payloads */
	struct iwarp_rdm_sep *sep;	/* a scalable endpoint's contexts */
	struct iwarp_eq *eq;		/* FI_JOIN_COMPLETE goes there */
	bool coll;			/* FI_COLLECTIVE: tag bit 63 is ours */
	struct iwarp_list mcs;		/* joined collective groups */
	struct iwarp_rdm_joins *joins;	/* joins per member list */
	size_t njoins;
	uint64_t next_mc;
};

/*
 * A scalable endpoint (rdm_sep.c) is an RDM endpoint with no CQ of its
 * own and rx_ctx_cnt receive contexts: a message names its context in
 * the header (IWARP_RDM_RXC), the context's receives wait in its queue
 * until one matches, and completions go to the context that posted the
 * operation. Contexts stay allocated until the endpoint closes.
 */
struct iwarp_rdm_ctx {
	struct iwarp_ep_base base;	/* first: fids convert through it */
	struct iwarp_rdm_ep *core;
	unsigned int index;
	bool open;			/* not closed by the application */
	struct iwarp_srx q;		/* rx: receives not matched yet */
};

struct iwarp_rdm_sep {
	size_t ntx, nrx;
	struct iwarp_rdm_ctx **tx, **rx;
};

static inline struct iwarp_rdm_ep *iwarp_rdm_ep_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_rdm_ep, base.ep_fid.fid);
}


#define IWARP_RDM_DELIVERY (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)
/* The fi_inject calls complete silently; an FI_INJECT op flag on other
 * calls only frees the buffer at once (fi_msg(3)). */
#define IWARP_INJECT_CALL (1ULL << 62)
/* AREQ and ARESP payloads: operands and compare values at most */
#define IWARP_RDM_ATOMIC_PAYLOAD_MAX (2 * IWARP_RDM_ATOMIC_MAX)

/* Messages that take one of the receiver's credits. */
static inline bool iwarp_rdm_counted(uint8_t op)
{
	return op == IWARP_RDM_EAGER || op == IWARP_RDM_RTS ||
	       op == IWARP_RDM_WDATA || op == IWARP_RDM_AREQ;
}

/* Whether an operation on b (an endpoint, or its tx context) with these
 * flags makes a completion. */
static inline bool iwarp_rdm_wants_cq(const struct iwarp_ep_base *b,
				      uint64_t flags)
{
	return !(flags & IWARP_INJECT_CALL) &&
	       (!b->tx_selective || (flags & FI_COMPLETION));
}

/* ---- rdm_core.c: peers, operations, posting, credits */

struct iwarp_rdm_tx *iwarp_rdm_tx_new(void);
/* Gathers tx's iov into one buffer of its own (tx->small, else tx->copy),
 * which becomes its only iov entry; 0 or -FI_ENOMEM. */
int iwarp_rdm_tx_flatten(struct iwarp_rdm_tx *tx);
/* Reports tx (unless a control message) and frees it. */
void iwarp_rdm_tx_done(struct iwarp_rdm_ep *ep, struct iwarp_rdm_tx *tx,
		       int err);
/* Ends tx if all its work is done. */
void iwarp_rdm_settle(struct iwarp_rdm_ep *ep, struct iwarp_rdm_tx *tx);
/* One of tx's work requests completed (err: positive FI errno or 0). */
void iwarp_rdm_tx_wr_done(struct iwarp_rdm_ep *ep, struct iwarp_rdm_tx *tx,
			  int err, int prov_errno);
struct iwarp_rdm_peer *iwarp_rdm_peer_get(struct iwarp_rdm_ep *ep,
					  const union iwarp_sockaddr *a);
/* The peer behind an fi_addr_t, or NULL (not enabled, unknown). */
struct iwarp_rdm_peer *iwarp_rdm_dest(struct iwarp_rdm_ep *ep,
				      fi_addr_t dest);
/* The peer's fi_addr_t in the endpoint's AV, or FI_ADDR_NOTAVAIL. */
fi_addr_t iwarp_rdm_from(struct iwarp_rdm_peer *peer);
void iwarp_rdm_queue(struct iwarp_rdm_peer *peer, struct iwarp_rdm_tx *tx);
/* An EAGER posted at once through the peer's post_inline (the caller
 * checked it has one) when nothing waits before it and a credit is
 * left: no send record; false to go the ordinary way, nothing done. */
bool iwarp_rdm_eager_now(struct iwarp_rdm_peer *peer,
			 struct iwarp_rdm_hdr *h, const struct iovec *iov,
			 size_t count);
/* Posts what is queued for a peer, in order, as far as it can. */
void iwarp_rdm_flush(struct iwarp_rdm_peer *peer);
/* Queues a one-sided tx for dest (under the lock), or frees it. */
ssize_t iwarp_rdm_submit(struct iwarp_rdm_ep *ep, struct iwarp_rdm_tx *tx,
			 fi_addr_t dest);
/* A control message (FIN, CREDIT): never blocked by credits. */
void iwarp_rdm_send_ctrl(struct iwarp_rdm_peer *peer, uint8_t op,
			 uint32_t msg_id, uint8_t flags);
void iwarp_rdm_owe(struct iwarp_rdm_peer *peer);
/* Transport events (rdm_xport.h upcalls) about peers. */
struct iwarp_rdm_xconn *iwarp_rdm_peer_xconn(struct iwarp_rdm_ep *ep,
					     const union iwarp_sockaddr *a);
bool iwarp_rdm_queued(struct iwarp_rdm_peer *peer);
void iwarp_rdm_connected(struct iwarp_rdm_peer *peer);
void iwarp_rdm_lost(struct iwarp_rdm_peer *peer, int err);
void iwarp_rdm_unreachable(struct iwarp_rdm_peer *peer, int err,
			   int prov_errno);
void iwarp_rdm_poll_add(struct iwarp_rdm_ep *ep, struct iwarp_pollable *p);
void iwarp_rdm_poll_del(struct iwarp_rdm_ep *ep, struct iwarp_pollable *p);
/* Closes every peer's connection; their operations fail as canceled. */
void iwarp_rdm_peers_close(struct iwarp_rdm_ep *ep);

/* ---- rdm_msg.c: messages, matching, unexpected, rendezvous */

extern struct fi_ops_msg iwarp_rdm_msg_ops;
extern struct fi_ops_tagged iwarp_rdm_tagged_ops;
void iwarp_rdm_free_queues(struct iwarp_rdm_ep *ep);
/* iwarp_ep_type.srx_offer (lock held) */
bool iwarp_rdm_srx_offer(struct iwarp_ep_base *b, struct iwarp_srx_rx *s);
/* The credits a header returns: never more than the window, whatever
 * a peer claims. */
static inline void iwarp_rdm_credits_in(struct iwarp_rdm_peer *peer,
					unsigned int credits)
{
	unsigned int sum = peer->credits + credits;

	peer->credits = sum > peer->window ? peer->window : sum;
}

/*
 * An EAGER h (checked, within the peer's credits) whose payload arrived
 * whole: into the plain posted receive it matches first, or, when none
 * could match (no shared receive context either), stored as unexpected
 * if it fits a record's own room; its credit taken and h's returned.
 * False, nothing changed, for anything else (place's way).
 */
bool iwarp_rdm_eager_whole(struct iwarp_rdm_peer *peer,
			   const struct iwarp_rdm_hdr *h, const uint8_t *payload);
/* Where an EAGER's payload goes; entries of dst, or -1 */
int iwarp_rdm_eager_place(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in,
			  struct iw_sge *dst);
void iwarp_rdm_eager_in(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in);
void iwarp_rdm_eager_drop(struct iwarp_rdm_peer *peer,
			  struct iwarp_rdm_in *in);
void iwarp_rdm_rts_in(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in);
void iwarp_rdm_fin_in(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in);
/* The rendezvous Read into rx ended (err: positive FI errno or 0). */
void iwarp_rdm_read_done(struct iwarp_rdm_rx *rx, int err);
/* The peer's connection is gone: receives whose Read waits fail. */
void iwarp_rdm_reads_lost(struct iwarp_rdm_peer *peer);

/* A receive of an rx context (s, then freed) matches what waits or
 * joins the context's queue (lock held). */
void iwarp_rdm_ctx_post(struct iwarp_rdm_ctx *c, struct iwarp_srx_rx *s);
/* The send family on behalf of owner (a tx context), lock not held. */
ssize_t iwarp_rdm_send_common(struct iwarp_rdm_ep *ep,
			      struct iwarp_ep_base *owner,
			      const struct iovec *iov, size_t count,
			      fi_addr_t dest, uint64_t tag, uint64_t data,
			      void *context, uint64_t flags, bool tagged);

/* ---- rdm_sep.c: scalable endpoints */

/* rdm_ep.c: fi_close of an RDM endpoint */
int iwarp_rdm_close(struct fid *fid);
int iwarp_rdm_scalable_open(struct fid_domain *domain, struct fi_info *info,
			    struct fid_ep **sep, void *context);
/* Receive contexts of ep: 1 unless scalable. */
static inline size_t iwarp_rdm_nrx(const struct iwarp_rdm_ep *ep)
{
	return ep->sep ? ep->sep->nrx : 1;
}

/* ---- rdm_rma.c and rdm_atomic.c: one-sided operations */

extern struct fi_ops_rma iwarp_rdm_rma_ops;
extern struct fi_ops_atomic iwarp_rdm_atomic_ops;
void iwarp_rdm_wdata_in(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in);
/* Target side of AREQ: executes it and queues the ARESP. */
void iwarp_rdm_areq_in(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in);
/* Initiator side: an ARESP for one of our AREQs. */
void iwarp_rdm_aresp_in(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in);

/* ---- rdm_coll.c: collectives over internal tagged messages */

/* Tags with this bit set are the collectives' own (FI_COLLECTIVE). */
#define IWARP_COLL_TAG_BIT (1ULL << 63)

extern struct fi_ops_collective iwarp_rdm_coll_ops;
int iwarp_rdm_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		   struct fid_mc **mc, void *context);
/* An internal send or receive of op ended (lock held; err: positive
 * FI errno or 0). */
void iwarp_rdm_coll_done(struct iwarp_rdm_ep *ep, struct iwarp_rdm_cop *op,
			 int err);
/* fi_close of the endpoint: its groups lose it (lock held). */
void iwarp_rdm_coll_fini(struct iwarp_rdm_ep *ep);
/* Internal tagged send / receive for op (lock held); 0 or -errno. */
int iwarp_rdm_isend(struct iwarp_rdm_ep *ep, fi_addr_t dest, const void *buf,
		    size_t len, uint64_t tag, struct iwarp_rdm_cop *op);
/* The receive takes only a message from src (its fi_addr in our AV). */
int iwarp_rdm_irecv(struct iwarp_rdm_ep *ep, fi_addr_t src, void *buf,
		    size_t len, uint64_t tag, struct iwarp_rdm_cop *op);
/* Removes op's receives not matched yet (lock held); how many. */
size_t iwarp_rdm_irecv_cancel(struct iwarp_rdm_ep *ep,
			      struct iwarp_rdm_cop *op);
/* rdm_atomic.c: octets of dt (0: not offered); acc[i] = acc[i] op v[i] */
size_t iwarp_rdm_dt_size(unsigned int dt);
bool iwarp_rdm_reduce_ok(unsigned int op, unsigned int dt);
void iwarp_rdm_reduce(unsigned int op, unsigned int dt, void *acc,
		      const void *v, size_t count);

/* ---- rdm_recv.c: what the transport reports */

extern const struct iwarp_rdm_upcalls iwarp_rdm_upcalls;

#endif /* IWARP_RDM_H */
