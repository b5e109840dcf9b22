/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Engine internals. The files are layered and call only downward:
 *
 *   iw_qp.c       the QP: create, post, close, the progress entry point;
 *                 it alone decides when to transmit and when to receive
 *   iw_cm.c  iw_tx.c  iw_qprx.c
 *                 connection setup, transmit pump, receive placement;
 *                 none calls another or iw_qp.c
 *   iw_qpcore.c   what those three report upward: events, completions,
 *                 the move to error (Terminate, flush), socket close,
 *                 control frames, log lines naming the connection
 *   iw_dev.c  rx.c  ddp.c  mpa.c  crc32c.c  iw_err.c
 *                 device and STags, receive stream, codecs
 */
#ifndef IWARP_IW_PRIV_H
#define IWARP_IW_PRIV_H

#include <poll.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "iwarp/engine.h"
#include "iwarp/rx.h"
#include "iwarp/ring.h"

/* ---- device, PDs, memory */

/*
 * An STag is a table index (high 20 bits) and a random key (low 12), as
 * iWARP hardware lays them out: with few regions an STag stays below
 * 2^24 like theirs, which some applications (fabtests' rdm_rma_trigger)
 * quietly rely on.
 */
#define IW_STAG_KEY_BITS 12
#define IW_STAG_KEY_MASK ((1u << IW_STAG_KEY_BITS) - 1)
#define IW_STAG_IDX_MASK ((1u << (32 - IW_STAG_KEY_BITS)) - 1)

static inline uint32_t iw_stag_idx(uint32_t stag)
{
	return stag >> IW_STAG_KEY_BITS;
}

#define IW_UKEY_BUCKETS 256

struct iw_dev {
	struct iw_mr **stags;	/* by index; [0] unused */
	/* STags the layer above chose (iw_mr_reg_stag), hashed */
	struct iw_mr *ukeys[IW_UKEY_BUCKETS];
	uint32_t nukeys;
	uint32_t nstags;	/* slots in use or free-listed */
	uint32_t cap;
	uint32_t *free_idx;
	uint32_t nfree;
	uint64_t rng;
	int npd;
	iw_log_fn log;
	void *log_arg;
	int log_max;		/* lines above this level are not made */
};

/* Whether a line of this level goes anywhere: its label and text, which
 * cost syscalls and formatting, are made only then. */
static inline bool iw_log_on(const struct iw_dev *dev, int level)
{
	return dev && dev->log && (level & IW_LOG_LEVEL_MASK) <= dev->log_max;
}

struct iw_pd {
	struct iw_dev *dev;
	int nmr;
	int nqp;
	/* buffers a QP holds only while it uses them (free lists) */
	void *stage_pool;	/* receive stages, IW_RX_STAGE octets */
	void *txb_pool;		/* struct iw_tx_batch */
};

/* iw_dev.c: a buffer from a PD's pool (malloc'd if empty), and back */
void *iw_pd_take(void **pool, size_t size);
void iw_pd_give(void **pool, void *buf);

struct iw_mr {
	struct iw_pd *pd;
	uint32_t stag;
	uint32_t old_stag;	/* the one before: a rekey avoids both */
	uint8_t *addr;
	uint64_t len;
	uint64_t base_to;
	unsigned int access;
	bool valid;
	void *ctx;		/* iw_mr_set_ctx */
	bool ukey;		/* chosen above: in dev->ukeys, no index */
	struct iw_mr *unext;
};

void iw_log(struct iw_dev *dev, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
uint64_t iw_random(struct iw_dev *dev);
/* The valid MR behind stag, or NULL. */
struct iw_mr *iw_stag_lookup(struct iw_dev *dev, uint32_t stag);

/* ---- queues */

struct iw_swqe {
	void *ctx;
	enum iw_wr_opcode op;
	unsigned int flags;
	struct iw_sge sge[IW_MAX_SGE];
	int nsge;
	uint32_t len;
	uint32_t inv_stag;
	uint32_t rstag;
	uint64_t rto;
	uint64_t add_swap, add_swap_mask, compare, compare_mask;
	uint64_t imm;
	uint32_t sent;		/* payload octets framed (Send/Write) */
	bool done;		/* transmitted, or Read Response received */
	enum iw_wc_status status;
	struct iw_err err;
};

struct iw_rwqe {
	void *ctx;
	struct iw_sge sge[IW_MAX_SGE];
	int nsge;
	uint32_t len;
};

struct iw_rq {
	struct iw_rwqe *q;
	uint32_t size;
	uint32_t head;		/* next to consume */
	uint32_t count;
};

struct iw_srq {
	struct iw_pd *pd;
	struct iw_rq rq;
	int nqp;
};

/* An inbound Read or Atomic Request being answered (IRQ entry); both
 * kinds are answered in arrival order. */
struct iw_irqe {
	bool atomic;
	struct rdmap_rreq rr;	/* validated when it arrived */
	struct rdmap_areq ar;
	uint32_t sent;
};

/* An outstanding outbound Read or atomic (ORQ entry): index into the
 * SQ, or -1 for the internal zero-length Read RTR. */
struct iw_orqe {
	int32_t sq_idx;
	bool atomic;
	uint32_t req_id;	/* atomic: what the response must name */
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t len;
	uint32_t got;
};

/* ---- connection setup */

enum iw_cm_state {
	CM_IDLE,
	CM_TCP_CONNECT,		/* initiator: non-blocking connect */
	CM_WAIT_REP,		/* initiator: Request queued/sent, reading Reply */
	CM_SEND_RTR,		/* initiator: RTR queued, not yet written */
	CM_WAIT_RTR,		/* responder: Reply queued/sent, awaiting RTR */
	CM_RTS,
	CM_CLOSING,		/* draining, then FIN */
	CM_CLOSED,
	CM_ERROR,
};

struct iw_conn_req {
	struct iw_listener *l;
	struct iw_conn_req *next;
	int fd;
	uint8_t buf[MPA_HDR_LEN + MPA_MAX_PD];
	size_t have;
	bool notified;
	bool watched;		/* in the listener's epoll set */
	bool fresh;		/* not read yet: a Request sent right after
				 * connect() is usually whole by accept() */
	bool ready;		/* epoll says octets or an end wait */
	uint32_t pass;		/* the last read pass that looked at it */
	uint64_t deadline;
	struct mpa_frame f;
	void *ctx;
	struct sockaddr_storage peer;	/* from accept(): no getpeername */
	socklen_t peer_len;
};

struct iw_listener {
	struct iw_dev *dev;
	int fd;
	int efd;		/* epoll: fd and the sockets of unread requests */
	uint32_t nwatched;	/* requests in efd */
	struct iw_conn_param param;
	const struct iw_listener_ops *ops;
	void *arg;
	struct iw_conn_req *reqs;
	uint64_t accept_after;	/* out of descriptors: no accept() before */
	bool starved;
	bool accept_dry;	/* no connection at the last look */
	uint32_t pass;		/* read passes so far */
	struct iw_listener_stats st;
	/* an overflow burst: its start, last overflow and counts, logged
	 * once it has been quiet for IW_BURST_QUIET_MS */
	uint64_t burst_start, burst_last;
	uint64_t burst_evicted, burst_refused;
	uint64_t bad_key_at;	/* the last wrong key logged at warn */
	char name[64];		/* "addr:port" for log lines */
	struct sockaddr_storage addr;	/* bound to, as getsockname says */
	socklen_t addr_len;		/* 0: unknown */
	/* the congestion control a peer on another host gets back (the
	 * listener has IW_LOCAL_CC); "": accepted sockets keep the
	 * listener's */
	char cc[16];
};

#define IW_CTRL_MAX (MPA_HDR_LEN + MPA_MAX_PD + 128)

/*
 * The FPDUs of one long message (Send, Write or Read Response) go to the
 * kernel in one sendmsg: the pump frames them ahead, each with its own
 * header and trailer, instead of one syscall per FPDU.
 */
#define IW_TX_BATCH		64
#define IW_RX_STAGE		16384	/* octets of one receive stage */
/* FPDUs up to this size leave as one contiguous iovec: the kernel's
 * per-segment cost of a 4-entry sendmsg is worth more than the copy */
#define IW_TX_FLAT_MAX		2048
/* A batch stays in L2 between the CRC and the kernel's copy, and a lone
 * message's first octets leave early (the kernel pushes a long sendmsg's
 * segments late); without the CRC, a message with others queued behind
 * goes in fewer, longer sendmsg calls, which cost the sender less */
#define IW_TX_BATCH_BYTES	(256u << 10)
#define IW_TX_BATCH_BYTES_PLAIN	(1024u << 10)

#define IW_TX_BATCH_FLAT	(32u << 10)	/* small joined messages */

struct iw_tx_batch {
	struct iovec v[IW_TX_BATCH * (IW_MAX_SGE + 2)];
	uint8_t hdr[IW_TX_BATCH][MPA_FPDU_HDR + DDP_UNTAGGED_HDR +
				 RDMAP_AREQ_LEN];
	uint8_t trl[IW_TX_BATCH][3 + MPA_CRC_LEN];
	int cnt;
	/* joined Sends of at most IW_TX_FLAT_MAX, framed back to back */
	size_t flat_len;
	uint8_t flat[IW_TX_BATCH_FLAT];
};

struct iw_qp {
	struct iw_pd *pd;
	uint32_t id;		/* per process, for log lines */
	char label[112];	/* iw_qp_label */
	struct iw_qp_attr attr;
	struct iw_conn_param param;
	uint8_t pdata[MPA_MAX_PD];	/* our private data, kept for retry */
	int fd;
	int spare_fd;		/* made ahead for connect (iw_qp_presock) */
	int spare_family;
	enum iw_cm_state cm;
	uint64_t deadline;
	bool initiator;
	bool p2p;
	uint8_t rev;
	bool enhanced;
	uint8_t rtr_set;	/* responder: RTR types in the Reply */
	uint8_t rtr_used;
	bool crc;
	bool markers_tx, markers_rx;
	uint16_t ird, ord;
	uint32_t mulpdu;
	uint32_t mss_settled;	/* iw_qp_mss_refresh: same MSS so often */
	struct sockaddr_storage dst;
	socklen_t dst_len;
	struct sockaddr_storage src;	/* bind before connect, if set */
	socklen_t src_len;
	bool retried;
	struct iw_cm_event est;	/* negotiated values, for ESTABLISHED */
	uint8_t peer_pdata[MPA_MAX_PD];

	/* MPA Reply being read by the initiator */
	uint8_t rep[MPA_HDR_LEN + MPA_MAX_PD];
	size_t rep_have;

	/* send queue, as sequence numbers (size is a power of two):
	 * [head, tx) started, [tx, tail) queued; slot = seq & (size - 1) */
	struct iw_swqe *sq;
	uint8_t *sq_inline;
	uint32_t sq_size, sq_head, sq_tx, sq_tail;
	uint32_t sq_msn;	/* next MSN of our Sends (QN 0) */
	uint32_t rreq_msn;	/* next MSN of our Read Requests (QN 1) */
	uint32_t term_msn;
	uint32_t aresp_msn;	/* our Atomic Responses (QN 3) */
	uint32_t areq_msn;	/* our Atomic Requests (QN 4) */
	uint32_t atomic_id;	/* next Request Identifier */
	bool atomics;		/* iw_qp_set_atomics */
	bool imm;		/* iw_qp_set_imm */
	bool imm_nowait;	/* iw_qp_set_imm_nowait */
	uint32_t rx_write_len;	/* octets of the peer's last whole Write */
	bool gated;		/* iw_qp_gate: one Send, no STag for the peer */
	bool gate_used;		/* ... and that Send came */

	struct iw_orqe *orq;
	uint32_t orq_head, orq_count, orq_cap;

	struct iw_irqe *irq;
	uint32_t irq_head, irq_count, irq_cap;

	struct iw_rq rq;
	struct iw_srq *srq;

	/* transmit: the FPDU being written */
	struct iovec txv[IW_MAX_SGE + 3];
	int txcnt;
	size_t tx_left;
	uint8_t tx_hdr[MPA_FPDU_HDR + DDP_UNTAGGED_HDR + RDMAP_AREQ_LEN];
	uint8_t tx_trl[3 + MPA_CRC_LEN];
	uint8_t *tx_bounce;	/* markers: the whole FPDU, marked */
	uint8_t *tx_ulpdu;	/* markers: the ULPDU gathered first */
	uint64_t tx_mpos;
	struct iw_tx_batch *txb;	/* the rest of a long message; NULL
					 * until one needs it */
	bool tx_batched;	/* tx_left counts txb's frames, not txv */
	int tx_frames;		/* FPDUs in the batch (or 1) */
	uint32_t tx_joined;	/* whole SQ messages ahead of the last one
				 * in the batch, completed when it is out */
	bool tx_joining;	/* framing a joined message: flat ones go
				 * to txb->flat */
	struct iw_qp_stats stats;
	enum { TX_NONE, TX_CTRL, TX_RTR, TX_SQ, TX_IRQ } tx_src;
	bool tx_msg_end;	/* the FPDU in flight ends its message */
	bool tx_irq_busy;	/* a Read Response message is mid-way */
	bool tx_sq_busy;	/* an SQ message is mid-way */
	uint8_t ctrl[IW_CTRL_MAX];
	size_t ctrl_len, ctrl_off;
	bool rtr_pending;
	bool rtr_more;		/* iw_qp_rtr_more */
	uint64_t tx_hold;	/* no FPDU before this iw_now_ms(); 0: none */
	bool term_queued;
	bool tx_dead;		/* the socket refused a send: no more tries */
	bool tx_full;		/* the last send found the socket full */
	bool tx_corked;		/* the last send said MSG_MORE */
	bool fin_sent;

	/* receive: octets read from the socket not yet fed to rx (kept
	 * across calls so a stalled stream loses nothing); the stage comes
	 * from the PD's pool for a pump and goes back once empty, so an
	 * idle connection holds none */
	uint8_t *stage;
	bool stage_big;		/* a spill from the heap, not the pool's */
	size_t stage_off, stage_len;
	unsigned int rx_depth;	/* iw_rx_pump calls under way (nested) */
	bool tx_deferred;	/* posted inside the pump: sent after its read */
	bool rx_big;		/* the last read went straight to a payload */
	bool rx_dry;		/* the last read found the socket empty */
	bool rx_stream;		/* long messages are coming in */
	bool rx_mid_msg;	/* the last FPDU did not end its message */
	struct iw_rx rx;
	uint32_t rx_msn[DDP_QN_COUNT];	/* expected MSN per untagged queue */
	bool rx_eof;
	struct {
		bool active;	/* a Send message is mid-way */
		uint32_t msn;
		uint32_t got;
		bool from_srq;
		struct iw_rwqe w;
		void *ctx;
		int sge_idx;
		uint32_t sge_off;
		uint8_t op;
		uint32_t inv_stag;
		bool peek_mode;
		bool placed;
		uint8_t *peek;
		uint32_t peek_got;
	} rcv;
	struct {
		bool active;	/* a tagged message is mid-way */
		uint8_t op;
		uint32_t stag;
		uint32_t wlen;	/* a Write's octets so far */
		uint64_t next_to;
		int orq_sge;
		uint32_t orq_off;
	} tag;
	struct iw_err fatal;
	bool fatal_remote;
	bool flushed;
	bool ev_final;		/* DISCONNECTED/ERROR/... already reported */
	bool in_callback;
	const uint8_t *term_raw;
	size_t term_raw_len;
	uint8_t term_copy[RDMAP_TERM_MAX];
	/* last: 2 KiB that would part the hot transmit fields above */
	uint8_t tx_flat[IW_TX_FLAT_MAX];	/* a small FPDU, gathered */
};

/*
 * *waiting says the socket was found empty (full) last time: then poll(),
 * which takes no socket lock, decides whether to read (write) again.
 * True while it is still so.
 */
static inline bool iw_sock_still(int fd, bool *waiting, short ev)
{
	struct pollfd pf = { .fd = fd, .events = ev };

	if (!*waiting)
		return false;
	if (poll(&pf, 1, 0) == 0)
		return true;
	*waiting = false;
	return false;
}

static inline bool iw_wr_atomic(enum iw_wr_opcode op)
{
	return op == IW_WR_ATOMIC_FADD || op == IW_WR_ATOMIC_CSWAP;
}

static inline bool iw_wr_imm(enum iw_wr_opcode op)
{
	return op == IW_WR_IMM || op == IW_WR_IMM_SE;
}

/* ---- iw_qpcore.c: the narrow interface beneath the QP. Connection
 * setup, transmit and receive report upward only through these. */
int iw_qp_setup_full_op(struct iw_qp *qp);
void iw_qp_mss_refresh(struct iw_qp *qp);
void iw_qp_event(struct iw_qp *qp, struct iw_cm_event *ev);
void iw_qp_established(struct iw_qp *qp);
void iw_qp_final_event(struct iw_qp *qp, enum iw_cm_event_type type,
		       int status);
void iw_qp_complete(struct iw_qp *qp, const struct iw_wc *wc);
/* ops->target for an access through stag (0: no region). */
void iw_qp_target(struct iw_qp *qp, bool write, uint32_t stag);
void iw_qp_sq_complete_ready(struct iw_qp *qp);
void iw_qp_flush_rwqe(struct iw_qp *qp, void *ctx, enum iw_wc_status st,
		      const struct iw_err *err);
void iw_qp_flush(struct iw_qp *qp, enum iw_wc_status st);
/* Queues a control frame (MPA frame, Terminate) ahead of all FPDUs. */
int iw_qp_ctrl(struct iw_qp *qp, const uint8_t *p, size_t len);
void iw_qp_close_socket(struct iw_qp *qp, bool reset);
/* Moves the QP to error: queues a Terminate (unless the stream is dead),
 * flushes everything, reports IW_CM_ERROR. seg: the offending segment
 * for header copies, or NULL. */
void iw_qp_fatal(struct iw_qp *qp, const struct iw_err *err,
		 const struct iw_rx_seg *seg, bool send_term);
void iw_qp_remote_fatal(struct iw_qp *qp, const struct rdmap_term *t,
			const uint8_t *raw, size_t len);
/* "addr:port" or "[addr]:port" of ss, "-" if neither. */
void iw_sa_str(const struct sockaddr_storage *ss, char *buf, size_t size);
/* A log line that starts with iw_qp_label(qp). */
void iw_qp_log(struct iw_qp *qp, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- iw_cm.c */
int iw_cm_progress(struct iw_qp *qp);
void iw_cm_defaults(struct iw_conn_param *p);
/* Sets qp's negotiated view from the peer's frame (shared by roles). */
void iw_cm_fill_event(struct iw_qp *qp, const struct mpa_frame *f,
		      struct iw_cm_event *ev);

/* ---- iw_tx.c */
/* Nothing that iw_tx_build could frame, nothing half written or held
 * back: the busy-poll loop's common case, answered without a call. */
static inline bool iw_tx_idle(const struct iw_qp *qp)
{
	return !qp->tx_left && !qp->tx_corked && !qp->rtr_pending &&
	       qp->ctrl_off == qp->ctrl_len && !qp->tx_sq_busy &&
	       !qp->tx_irq_busy && !qp->irq_count && qp->sq_tx == qp->sq_tail;
}

/* Writes what is ready to go. -EPIPE: the socket refused a send and
 * the QP has not failed yet (the caller decides how); else 0. */
int iw_tx_pump(struct iw_qp *qp);
bool iw_tx_pending(const struct iw_qp *qp);

/* ---- iw_qprx.c */
extern const struct iw_rx_ops iw_qprx_ops;
int iw_rx_pump(struct iw_qp *qp);
void iw_rx_stage_put(struct iw_qp *qp);
bool iw_rx_stalled(const struct iw_qp *qp);

#define IW_DEFAULT_TIMEOUT_MS 10000
#define IW_DEFAULT_LISTEN_PENDING 256
#define IW_DEFAULT_MPA_TIMEOUT_MS 5000

#endif /* IWARP_IW_PRIV_H */
