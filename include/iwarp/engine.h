/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The iWARP engine: RFC 6581 connection setup and RFC 5040/5041 data
 * transfer over non-blocking kernel TCP sockets. No libfabric types.
 *
 * Threading: an iw_dev and every object made from it are driven by one
 * thread at a time; callers serialize (the provider holds a domain lock).
 * Callbacks run inside iw_*_progress() and the post calls; they may post
 * work but must not destroy the object they are called for.
 *
 * Progress: the engine never blocks. Each listener and QP exposes a file
 * descriptor, the poll events it waits for and its next deadline; call
 * its progress function when the fd is ready or the deadline passed.
 */
#ifndef IWARP_ENGINE_H
#define IWARP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "iwarp/wire.h"

struct iw_dev;
struct iw_pd;
struct iw_mr;
struct iw_qp;
struct iw_srq;
struct iw_listener;
struct iw_conn_req;

/* Log levels for iw_log_fn; IW_LOG_DATA marks a data-path line. */
enum iw_log_level {
	IW_LOG_WARN = 0,
	IW_LOG_INFO = 1,
	IW_LOG_DEBUG = 2,
	IW_LOG_LEVEL_MASK = 0x0f,
	IW_LOG_DATA = 0x10,
};

/* Logging hook: level is an iw_log_level, maybe | IW_LOG_DATA. */
typedef void (*iw_log_fn)(void *arg, int level, const char *msg);

int iw_dev_open(struct iw_dev **dev);
/* -EBUSY while protection domains remain. */
int iw_dev_close(struct iw_dev *dev);
void iw_dev_set_log(struct iw_dev *dev, iw_log_fn fn, void *arg);
/* Lines above level are never made (default IW_LOG_DEBUG: all). */
void iw_dev_set_log_max(struct iw_dev *dev, int level);
/* Unpredictable 64-bit value (seeded from the kernel). */
uint64_t iw_dev_random(struct iw_dev *dev);
/* Monotonic milliseconds, the engine's clock for deadlines. */
uint64_t iw_now_ms(void);
/*
 * close() that counts: every descriptor the engine or the provider
 * closes goes through it, so an epoll set that saw the same count at its
 * last update knows that no number it registered names another file now.
 */
int iw_fd_close(int fd);
uint64_t iw_fd_close_count(void);
/*
 * Memory for queues that are large and mostly untouched. Large blocks
 * are anonymous mappings of their own: malloc would write a chunk header
 * into a fresh page, a page fault (1-2 us in a VM) at every endpoint's
 * fi_enable, on the path of every accepted connection; a mapping's pages
 * appear only when the queue first reaches them. Never cleared (a block
 * may be a freed one again). iw_mem_free takes the size that was asked
 * for.
 */
void *iw_mem_alloc(size_t len);
void iw_mem_free(void *p, size_t len);
/*
 * Prepares a block of len for the next iw_mem_alloc of that length, with
 * the pages under the given spans faulted in (a few spares are kept;
 * freed blocks join them). Not cleared: a block from a spare holds what
 * its last user wrote. For idle moments, such as a server's wait for the
 * peer's answer, so that the next endpoint's fi_enable faults nothing.
 */
struct iw_mem_span {
	size_t off, len;
};
void iw_mem_ready(size_t len, const struct iw_mem_span *span, int nspan);
/* Releases the spares (a library about to be unloaded). */
void iw_mem_spares_free(void);

/* ---- protection domains and memory regions */

int iw_pd_alloc(struct iw_dev *dev, struct iw_pd **pd);
/* -EBUSY while MRs or QPs of the PD remain. */
int iw_pd_free(struct iw_pd *pd);

enum {
	IW_ACC_LOCAL_WRITE = 1 << 0,
	IW_ACC_REMOTE_READ = 1 << 1,
	IW_ACC_REMOTE_WRITE = 1 << 2,
	/* a Send with Invalidate from the peer may invalidate the STag */
	IW_ACC_REMOTE_INVALIDATE = 1 << 3,
	/* the target of the peer's RFC 7306 Atomic Requests */
	IW_ACC_REMOTE_ATOMIC = 1 << 4,
};

/*
 * Registers [addr, addr + len) under an unguessable STag: a table index
 * plus a random key. The region's first octet has tagged offset base_to
 * (the address itself for virtual-address mode, 0 for offset mode).
 */
int iw_mr_reg(struct iw_pd *pd, void *addr, size_t len, uint64_t base_to,
	      unsigned int access, struct iw_mr **mr);
/* The same under the STag the layer above chose (application keys):
 * -EEXIST if a region has it. Generated STags avoid it. */
int iw_mr_reg_stag(struct iw_pd *pd, void *addr, size_t len,
		   uint64_t base_to, unsigned int access, uint32_t stag,
		   struct iw_mr **mr);
int iw_mr_dereg(struct iw_mr *mr);
uint32_t iw_mr_stag(const struct iw_mr *mr);
/* What iw_qp_ops.target tells for accesses to this region. */
void iw_mr_set_ctx(struct iw_mr *mr, void *ctx);
/* Local invalidation; remote access fails until iw_mr_rekey(). */
int iw_mr_invalidate(struct iw_mr *mr);
bool iw_mr_valid(const struct iw_mr *mr);
/*
 * Makes the region valid again under a new key, never its current or
 * previous one; returns the new STag.
 */
uint32_t iw_mr_rekey(struct iw_mr *mr);
/*
 * For operations the layer above carries itself (software atomics): the
 * host address of [to, to + len) under an STag of this PD that grants
 * every right in `access`, or NULL with *ecode set to the RDMAP error
 * code (RDMAP_ECODE_INVALID_STAG, _STAG_NOT_ASSOC, _ACCESS, _TO_WRAP,
 * _BASE_BOUNDS) that an RDMA operation would have been refused with.
 */
void *iw_mr_translate(struct iw_pd *pd, uint32_t stag, uint64_t to,
		      uint64_t len, unsigned int access, uint8_t *ecode);

/* ---- work requests and completions */

#define IW_MAX_SGE 8
#define IW_MAX_INLINE 256
#define IW_MAX_IRD 128		/* default ceiling for negotiated IRD */

struct iw_sge {
	void *addr;
	uint32_t len;
};

enum iw_wr_opcode {
	IW_WR_SEND,
	IW_WR_SEND_SE,
	IW_WR_SEND_INV,
	IW_WR_SEND_SE_INV,
	IW_WR_WRITE,
	IW_WR_READ,
	IW_WR_ATOMIC_FADD,	/* RFC 7306 FetchAdd */
	IW_WR_ATOMIC_CSWAP,	/* RFC 7306 CmpSwap */
	IW_WR_IMM,		/* RFC 7306 Immediate Data: imm, no payload */
	IW_WR_IMM_SE,		/* ... with Solicited Event */
};

enum {
	IW_WR_SIGNALED = 1 << 0,	/* report a completion on success */
	IW_WR_FENCE = 1 << 1,		/* start after earlier Reads, atomics */
	IW_WR_INLINE = 1 << 2,		/* copy the payload at post time */
	IW_WR_MORE = 1 << 3,		/* the caller posts more at once: wait
					 * for it, to share TCP segments */
};

/*
 * Atomics (iw_qp_set_atomics) work on the peer's 8-octet word at rstag/
 * rto, which must be 8-octet aligned in its memory. FetchAdd adds
 * add_swap; a set bit i of add_swap_mask keeps the carry out of bit i
 * from reaching bit i + 1 (0: a plain 64-bit add). CmpSwap replaces the
 * add_swap_mask bits with those of add_swap when the compare_mask bits
 * equal those of compare. The word's value before the operation is
 * written in host order to the single 8-octet entry of sgl, or dropped
 * when num_sge is 0.
 */
struct iw_send_wr {
	void *ctx;
	enum iw_wr_opcode op;
	unsigned int flags;
	const struct iw_sge *sgl;	/* Read: the local sink buffers */
	int num_sge;
	uint32_t inv_stag;		/* Send with Invalidate */
	uint32_t rstag;			/* Write: sink; Read: source */
	uint64_t rto;
	uint64_t add_swap, add_swap_mask;	/* atomics */
	uint64_t compare, compare_mask;		/* CmpSwap */
	uint64_t imm;			/* Immediate Data (iw_qp_set_imm) */
};

struct iw_recv_wr {
	void *ctx;
	const struct iw_sge *sgl;
	int num_sge;
};

enum iw_wc_opcode {
	IW_WC_SEND,
	IW_WC_WRITE,
	IW_WC_READ,
	IW_WC_RECV,
	IW_WC_ATOMIC,	/* its response arrived; byte_len 8 */
};

enum iw_wc_status {
	IW_WC_SUCCESS = 0,
	IW_WC_FLUSHED,		/* the QP went to error before it was done */
	IW_WC_LOC_LEN,		/* a message did not fit the receive */
	IW_WC_LOC_PROT,		/* local protection / protocol error */
	IW_WC_REM_ERROR,	/* the peer terminated the stream */
	IW_WC_FATAL,		/* we terminated the stream */
};

enum {
	IW_WC_F_SE = 1 << 0,	/* Send with Solicited Event */
	IW_WC_F_INV = 1 << 1,	/* Send with Invalidate: inv_stag valid */
	IW_WC_F_IMM = 1 << 2,	/* RFC 7306 Immediate Data: imm valid */
};

/*
 * Every posted work request completes exactly once: successful
 * unsignaled sends silently, everything else through ops->complete.
 * Send-queue completions come in posting order.
 */
struct iw_wc {
	void *ctx;
	enum iw_wc_opcode op;
	enum iw_wc_status status;
	struct iw_err err;	/* the triple behind a failed status */
	uint32_t byte_len;	/* received or transferred octets */
	uint32_t inv_stag;
	unsigned int flags;	/* IW_WC_F_* */
	uint64_t imm;		/* IW_WC_F_IMM */
};

/* ---- connection setup parameters (RFC 5044 §7, RFC 6581) */

enum {
	IW_RTR_SEND = MPA_RTR_SEND,
	IW_RTR_WRITE = MPA_RTR_WRITE,
	IW_RTR_READ = MPA_RTR_READ,
	IW_RTR_ALL = MPA_RTR_SEND | MPA_RTR_WRITE | MPA_RTR_READ,
};

struct iw_conn_param {
	uint8_t rev;		/* 1 or 2; 0 means 2 */
	bool no_enhanced;	/* rev 2 without the RFC 6581 block */
	bool client_server;	/* A=0: the initiator sends first */
	/* initiator: RTR types offered; responder: types accepted, picked
	 * in the order Write, Read, Send. 0 means IW_RTR_ALL. */
	uint8_t rtr;
	bool rtr_reply_all;	/* responder: reply with every accepted type */
	bool crc;		/* ask for CRC */
	bool crc_strict;	/* refuse a peer that does not ask for CRC */
	bool markers;		/* ask the peer to send markers to us */
	bool refuse_markers;	/* reject/terminate a peer that asks for them */
	bool retry_rev1;	/* initiator: retry with rev 1 on close */
	uint8_t max_rev;	/* responder: highest rev accepted (0 = 2) */
	uint16_t ird, ord;	/* local depths; 0x3FFF: no negotiation */
	uint16_t max_ird;	/* ceiling when raising IRD; 0 = IW_MAX_IRD */
	uint16_t ord_min;	/* responder: reject if peer IRD below this */
	const void *pdata;	/* ULP private data */
	uint16_t pdata_len;	/* up to 508 (rev 2 enhanced) or 512 */
	uint32_t timeout_ms;	/* per setup phase; 0 = 10000 */
	/* listener: connections held before the ULP decides (reading the
	 * Request, or offered); 0 = iw_listen_set_defaults's, else 256 */
	uint32_t max_pending;
	/* listener: time to send the whole MPA Request, at most timeout_ms;
	 * 0 = iw_listen_set_defaults's, else 5000 */
	uint32_t mpa_timeout_ms;
	/* initiator: hold the first FPDU (the RTR, or without one the first
	 * message) this long after the Reply: Linux siw misses FPDUs that
	 * arrive before it watches the socket */
	uint16_t rtr_delay_ms;
	/* initiator: connect from this address (e.g. a port given up by a
	 * passive endpoint); NULL lets the kernel choose */
	const struct sockaddr *src;
	socklen_t src_len;
};

enum iw_cm_event_type {
	IW_CM_CONNECT_REQUEST,	/* listener: request read; accept or reject */
	IW_CM_ESTABLISHED,	/* sending is allowed on our side */
	IW_CM_REJECTED,		/* initiator: the peer rejected (R bit) */
	IW_CM_UNREACHABLE,	/* initiator: TCP or MPA setup failed */
	IW_CM_DISCONNECTED,	/* the stream closed */
	IW_CM_ERROR,		/* Terminate sent or received; see err */
};

struct iw_cm_event {
	enum iw_cm_event_type type;
	int status;		/* negative errno for failures */
	struct iw_err err;	/* IW_CM_ERROR, REJECTED: the triple */
	bool remote;		/* err came from the peer's Terminate */
	/* what the peer sent in its MPA frame */
	uint8_t rev;
	bool enhanced;
	bool p2p;
	uint8_t rtr;		/* peer's RTR flags */
	uint16_t peer_ird, peer_ord;
	const uint8_t *pdata;	/* valid during the callback */
	uint16_t pdata_len;
	/* what was negotiated for our side */
	uint16_t ird, ord;
	uint8_t rtr_used;	/* the RTR sent or received, 0 if none */
	bool crc;
	bool markers_rx, markers_tx;
	uint32_t mulpdu;
	/* raw octets of a received Terminate, for logs */
	const uint8_t *term_raw;
	size_t term_raw_len;
};

/* ---- queue pairs */

/*
 * Placement for untagged Sends chosen by the layer above (the RDM
 * endpoint): with peek_len > 0 the receive queue is not used; for each
 * Send message the engine reads its first min(peek_len, first segment)
 * octets, then asks place() where the rest goes.
 */
struct iw_place {
	uint32_t msn;
	const uint8_t *peek;
	uint32_t peek_len;
	uint32_t seg_len;	/* payload octets of the first segment */
	bool last;		/* the first segment is also the last */
	unsigned int flags;	/* IW_WC_F_SE / IW_WC_F_INV */
	uint32_t inv_stag;
};

struct iw_qp_ops {
	void (*cm_event)(void *arg, struct iw_qp *qp,
			 const struct iw_cm_event *ev);
	void (*complete)(void *arg, struct iw_qp *qp, const struct iw_wc *wc);
	/*
	 * peek mode: fill dst (up to IW_MAX_SGE entries) with room for the
	 * message after the peeked octets, set *ctx for its completion, and
	 * return the entry count; 0 entries discards the rest, and an entry
	 * with a NULL address discards from there on (truncation). Return
	 * negative to refuse (the stream terminates with DDP/2/2).
	 */
	int (*place)(void *arg, struct iw_qp *qp, const struct iw_place *p,
		     struct iw_sge *dst, void **ctx);
	/*
	 * RFC 7306 Immediate Data arrived and checked (iw_qp_set_imm on):
	 * return 1 to have it complete the next posted receive (IW_WC_RECV,
	 * IW_WC_F_IMM, byte_len 0), 0 when the layer above keeps the value
	 * (no receive is used), negative to refuse it (the stream ends with
	 * RDMAP/2/0xFF). NULL: always 1, as RFC 7306 has it.
	 */
	int (*imm)(void *arg, struct iw_qp *qp, uint64_t data,
		   unsigned int flags);
	/*
	 * We were the target of the peer's RDMA: a Write placed in full
	 * (write) or a Read served, its last octet handed to TCP. mr_ctx is
	 * the region's iw_mr_set_ctx value, NULL for a zero-length Write or
	 * a region gone meanwhile. The RTR and zero-length Reads (fences)
	 * are not told. NULL: nothing is.
	 */
	void (*target)(void *arg, struct iw_qp *qp, bool write, void *mr_ctx);
};

struct iw_qp_attr {
	struct iw_srq *srq;	/* NULL: the QP's own receive queue */
	uint32_t sq_size;	/* 0 = 256 */
	uint32_t rq_size;	/* 0 = 256 */
	uint32_t mulpdu;	/* 0: derived from the socket's MSS */
	uint32_t peek_len;	/* > 0: placement through ops->place */
	/* A Send finding no posted receive waits for one: the stream is not
	 * read further, so TCP flow control holds the sender back. Without
	 * it the stream terminates with DDP/2/2 as RFC 5040 says. Needs the
	 * QP's own receive queue (no SRQ). */
	bool wait_for_recv;
	const struct iw_qp_ops *ops;
	void *arg;
};

int iw_qp_create(struct iw_pd *pd, const struct iw_qp_attr *attr,
		 struct iw_qp **qp);
/* Flushes what is posted (completions run) and frees. */
int iw_qp_destroy(struct iw_qp *qp);
/* Readies the memory of a QP with these attributes (iw_mem_ready): the
 * pages a connection's first messages touch are faulted in now. */
void iw_qp_prepare(const struct iw_qp_attr *attr);

/* Makes the socket a later iw_qp_connect to an address of this family
 * uses, so that connecting does not also pay for creating it (several
 * microseconds); 0 or a negative errno. */
int iw_qp_presock(struct iw_qp *qp, int family);
/* Active side: non-blocking; the outcome comes as a CM event. */
int iw_qp_connect(struct iw_qp *qp, const struct sockaddr *dst,
		  socklen_t len, const struct iw_conn_param *param);
/* Graceful close: drain the send queue, then FIN; DISCONNECTED follows. */
int iw_qp_disconnect(struct iw_qp *qp);
/* Abortive close: Terminate (local catastrophic), then reset. */
int iw_qp_abort(struct iw_qp *qp);

/* -EAGAIN queue full, -ENOTCONN closed/in error, -EINVAL bad request
 * (an atomic while atomics are off, too). */
int iw_qp_post_send(struct iw_qp *qp, const struct iw_send_wr *wr);
/* Sends what posts with IW_WR_MORE held back (a post without it does). */
void iw_qp_push(struct iw_qp *qp);
int iw_qp_post_recv(struct iw_qp *qp, const struct iw_recv_wr *wr);
/* Posts at the head of the QP's own receive queue, before what is
 * posted already (the rest of a buffer that takes several messages);
 * -EINVAL with an SRQ. */
int iw_qp_post_recv_first(struct iw_qp *qp, const struct iw_recv_wr *wr);
/* Removes a posted receive that no Send has begun to fill; its
 * completion (IW_WC_FLUSHED) runs now. -ENOENT if there is none. */
int iw_qp_cancel_recv(struct iw_qp *qp, void *ctx);
/*
 * RFC 7306 atomics in both directions, off by default: RFC 5040 has no
 * way to ask, so the layer above turns them on once both peers said
 * (e.g. in private data) that they carry them. While off, posting one
 * is -EINVAL and the peer's Atomic Request terminates (RDMAP/2/6).
 * Atomics count against ORD and the peer's IRD like Reads.
 */
int iw_qp_set_atomics(struct iw_qp *qp, bool on);
/*
 * RFC 7306 Immediate Data, off by default for the same reason: while
 * off, posting it is -EINVAL and the peer's ends the stream with a
 * Terminate (RDMAP/2/6). It takes an MSN of queue 0 like a Send. With
 * wait_for_recv it waits, like a Send, until a receive is posted.
 */
int iw_qp_set_imm(struct iw_qp *qp, bool on);
/* Immediate Data never waits for a receive: the layer above takes
 * them without one (ops->imm returns 0). */
void iw_qp_set_imm_nowait(struct iw_qp *qp, bool on);
/* Octets of the peer's last RDMA Write placed in full on this stream:
 * the length an Immediate Data that follows a Write reports. */
uint32_t iw_qp_rx_write_len(const struct iw_qp *qp);
/* A Send or Immediate Data waits for a receive (wait_for_recv): the
 * stream is read no further until one is posted. */
bool iw_qp_rx_waiting(const struct iw_qp *qp);
/* Send queue entries free now: a layer posting several work requests
 * that must go together checks first. */
uint32_t iw_qp_sq_free(const struct iw_qp *qp);
/*
 * While closed, the peer may send one Send message (its proof of a job
 * key) and the zero-length RTR; no STag is valid for it, and anything
 * else ends the stream with a Terminate. Close it before the connection
 * starts, open it once the proof checked. 0, or -EINVAL.
 */
int iw_qp_gate(struct iw_qp *qp, bool closed);
/*
 * The ESTABLISHED upcall posts a Send at once (an initiator's proof of
 * a job key): the RTR waits for it (MSG_MORE), so both leave in one
 * segment and the responder wakes once. Set before the connection.
 */
void iw_qp_rtr_more(struct iw_qp *qp, bool more);

int iw_qp_fd(const struct iw_qp *qp);
short iw_qp_poll_events(const struct iw_qp *qp);
/* Absolute iw_now_ms() deadline of the current phase, 0 if none. */
uint64_t iw_qp_deadline(const struct iw_qp *qp);
/* Does all work possible without blocking. 0, or negative when the QP
 * is finished (closed or in error) and needs no more progress. */
int iw_qp_progress(struct iw_qp *qp);

enum iw_qp_state {
	IW_QPS_IDLE,
	IW_QPS_CONNECTING,	/* TCP connect, MPA Request/Reply, RTR */
	IW_QPS_RTS,		/* established */
	IW_QPS_CLOSING,		/* draining before FIN */
	IW_QPS_CLOSED,
	IW_QPS_ERROR,
};
enum iw_qp_state iw_qp_state(const struct iw_qp *qp);
const char *iw_qp_state_str(enum iw_qp_state s);
/* Local address, peer address of the TCP connection. */
int iw_qp_getname(const struct iw_qp *qp, struct sockaddr *sa,
		  socklen_t *len);
int iw_qp_getpeer(const struct iw_qp *qp, struct sockaddr *sa,
		  socklen_t *len);
/* Same IP, whatever the port; IPv4 also as ::ffff:a.b.c.d. */
bool iw_sa_same_ip(const struct sockaddr *a, const struct sockaddr *b);
/* "qp 12 127.0.0.1:23800-127.0.0.1:40122" (local-peer, or the
 * destination while connecting): names the connection in log lines.
 * Valid until the next call for the same QP. */
const char *iw_qp_label(struct iw_qp *qp);
/* What a connection cost in syscalls: sendmsg/recv calls that moved
 * octets, and the FPDUs they carried. */
struct iw_qp_stats {
	uint64_t tx_calls, tx_fpdus;
	uint64_t rx_calls, rx_fpdus;
	uint64_t rx_empty;	/* receive calls that found nothing */
	uint64_t rx_short;	/* ... that emptied the socket before the
				 * end of what they asked for */
	uint64_t tx_full;	/* sends that found the socket full */
	uint64_t tx_flat;	/* FPDUs gathered into one iovec */
	uint64_t tx_pushes;	/* setsockopt calls that pushed what a
				 * MSG_MORE send held back */
};
void iw_qp_stats(const struct iw_qp *qp, struct iw_qp_stats *st);

/* ---- shared receive queues */

int iw_srq_create(struct iw_pd *pd, uint32_t size, struct iw_srq **srq);
int iw_srq_destroy(struct iw_srq *srq);
int iw_srq_post_recv(struct iw_srq *srq, const struct iw_recv_wr *wr);

/* ---- passive side */

struct iw_listener_ops {
	/* A complete MPA Request arrived: call iw_accept or iw_reject. */
	void (*conn_request)(void *arg, struct iw_conn_req *req,
			     const struct iw_cm_event *ev);
	/* An offered request went away undecided (timeout, peer gone,
	 * listener closed); req is freed after the call. May be NULL. */
	void (*conn_dropped)(void *arg, struct iw_conn_req *req);
};

/* param applies to every connection: responder policy (rtr, max_rev,
 * crc_strict, refuse_markers, ird/ord, ord_min, timeout_ms) and the
 * listener's bounds (max_pending, mpa_timeout_ms). */
int iw_listen(struct iw_dev *dev, const struct sockaddr *addr,
	      socklen_t len, int backlog, const struct iw_conn_param *param,
	      const struct iw_listener_ops *ops, void *arg,
	      struct iw_listener **l);
int iw_listener_close(struct iw_listener *l);
/* Readable when a connection or a Request's octets are waiting (an
 * epoll fd over the listening socket and the requests being read). */
int iw_listener_fd(const struct iw_listener *l);
int iw_listener_getname(const struct iw_listener *l, struct sockaddr *sa,
			socklen_t *len);
/* Accepts TCP connections, reads requests, expires slow ones. */
int iw_listener_progress(struct iw_listener *l);
/* Earliest deadline among pending requests (and the end of an accept
 * back-off), 0 if none. */
uint64_t iw_listener_deadline(const struct iw_listener *l);
/* False while accept() is backing off after running out of descriptors:
 * then do not poll iw_listener_fd() for POLLIN (it would spin). */
bool iw_listener_accepting(const struct iw_listener *l);
/* True while requests are being read on accepted sockets that
 * iw_listener_fd() does not cover (only if epoll was not available):
 * keep calling iw_listener_progress. */
bool iw_listener_busy(const struct iw_listener *l);

/* Defaults for listeners whose param leaves max_pending or
 * mpa_timeout_ms at 0; 0 restores the built-in one. Process-wide: set
 * once (the provider does at load), before listening. */
void iw_listen_set_defaults(uint32_t max_pending, uint32_t mpa_timeout_ms);

struct iw_listener_stats {
	uint32_t pending;	/* connections held now (undecided) */
	uint32_t pending_max;	/* the most held at once */
	uint32_t max_pending;	/* the cap in force */
	uint32_t mpa_timeout_ms;	/* the Request deadline in force */
	uint64_t accepted;	/* TCP connections taken */
	uint64_t offered;	/* complete Requests handed to the ULP */
	uint64_t evicted;	/* closed unfinished to make room */
	uint64_t refused;	/* closed at once: the cap held offered ones */
	uint64_t timed_out;	/* closed at their deadline */
	uint64_t bad;		/* bad Request, or closed by the peer */
};
void iw_listener_stats(const struct iw_listener *l,
		       struct iw_listener_stats *st);

/* The connection moves into qp (which must be IDLE); the Reply goes out
 * with param's private data and IRD/ORD; CM events then come to qp. */
int iw_accept(struct iw_conn_req *req, struct iw_qp *qp,
	      const struct iw_conn_param *param);
/* Reply with the R bit and private data, then close. Frees req. */
int iw_reject(struct iw_conn_req *req, const void *pdata, uint16_t len);
void iw_conn_req_set_ctx(struct iw_conn_req *req, void *ctx);
/* Local and peer address of a pending request's TCP connection. */
int iw_conn_req_getname(const struct iw_conn_req *req, struct sockaddr *sa,
			socklen_t *len);
int iw_conn_req_getpeer(const struct iw_conn_req *req, struct sockaddr *sa,
			socklen_t *len);
void *iw_conn_req_ctx(const struct iw_conn_req *req);

/* ---- IRD/ORD negotiation (RFC 6581 §9.1), pure functions */

struct iw_ird_ord {
	uint16_t ird, ord;
};

/*
 * Responder: local (ird, ord, max_ird, ord_min) against the initiator's
 * request; fills the values to reply with and the local ones to use.
 * Returns 0, or -EPROTO with LLP/MPA/6 when the initiator's IRD is below
 * ord_min (the caller rejects, replying ORD = ord_min).
 */
int iw_negotiate_responder(struct iw_ird_ord local, uint16_t max_ird,
			   uint16_t ord_min, struct iw_ird_ord peer,
			   bool read_rtr, struct iw_ird_ord *reply,
			   struct iw_ird_ord *use, struct iw_err *err);
/*
 * Initiator: local (ird, ord, max_ird) against the responder's reply;
 * fills the local values to use. -EPROTO with LLP/MPA/6 when the reply's
 * ORD exceeds what IRD can be raised to.
 */
int iw_negotiate_initiator(struct iw_ird_ord local, uint16_t max_ird,
			   struct iw_ird_ord reply, struct iw_ird_ord *use,
			   struct iw_err *err);

#endif /* IWARP_ENGINE_H */
