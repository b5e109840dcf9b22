/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Queue pairs: work queues, completions in posting order, the move to
 * error (Terminate, flush: every work request completes exactly once),
 * graceful and abortive close, and the progress entry point.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iw_priv.h"

static const char *const iw_qp_state_names[] = {
	[IW_QPS_IDLE] = "idle",
	[IW_QPS_CONNECTING] = "connecting",
	[IW_QPS_RTS] = "rts",
	[IW_QPS_CLOSING] = "closing",
	[IW_QPS_CLOSED] = "closed",
	[IW_QPS_ERROR] = "error",
};

const char *iw_qp_state_str(enum iw_qp_state s)
{
	if ((unsigned int)s >= sizeof(iw_qp_state_names) /
				sizeof(iw_qp_state_names[0]))
		return "invalid";
	return iw_qp_state_names[s];
}

enum iw_qp_state iw_qp_state(const struct iw_qp *qp)
{
	switch (qp->cm) {
	case CM_IDLE:
		return IW_QPS_IDLE;
	case CM_TCP_CONNECT:
	case CM_WAIT_REP:
	case CM_SEND_RTR:
	case CM_WAIT_RTR:
		return IW_QPS_CONNECTING;
	case CM_RTS:
		return IW_QPS_RTS;
	case CM_CLOSING:
		return IW_QPS_CLOSING;
	case CM_CLOSED:
		return IW_QPS_CLOSED;
	default:
		return IW_QPS_ERROR;
	}
}

static uint32_t iw_qp_next_id;

static size_t iw_sq_bytes(uint32_t size)
{
	return (size_t)size * (sizeof(struct iw_swqe) + IW_MAX_INLINE);
}

/* A receive queue's depth: the one asked for, 256 when none was. */
static uint32_t iw_rq_depth(uint32_t size)
{
	return size ? size : 256;
}

static int iw_rq_init(struct iw_rq *rq, uint32_t size)
{
	rq->size = iw_rq_depth(size);
	rq->q = malloc((size_t)rq->size * sizeof(*rq->q));
	return rq->q ? 0 : -ENOMEM;
}

static void iw_rq_fini(struct iw_rq *rq)
{
	free(rq->q);
	rq->q = NULL;
}

#define IW_QP_HEAD (((sizeof(struct iw_qp) + 63) / 64) * 64)

/*
 * The QP, its send queue with the inline buffers and its receive queue
 * are one block: each block of its own took a fresh heap page for the
 * next chunk's header, a page fault (several us in a VM) per queue in
 * every fi_enable. The queues are never cleared: a slot is written
 * whole before it is read, and both queues restart at slot 0 whenever
 * they empty, so only pages as deep as a queue ever got are touched.
 */
static size_t iw_qp_block_len(uint32_t sq_size, uint32_t rq_size)
{
	return IW_QP_HEAD + iw_sq_bytes(sq_size) +
	       (size_t)rq_size * sizeof(struct iw_rwqe);
}

/* Where the SQ's inline buffers and the RQ start in the block. */
static size_t iw_qp_inline_off(uint32_t sq_size)
{
	return IW_QP_HEAD + (size_t)sq_size * sizeof(struct iw_swqe);
}

static size_t iw_qp_rq_off(uint32_t sq_size)
{
	return IW_QP_HEAD + iw_sq_bytes(sq_size);
}

static void iw_qp_sizes(const struct iw_qp_attr *attr, uint32_t *sq_size,
			uint32_t *rq_size)
{
	*sq_size = 1;
	while (*sq_size < (attr->sq_size ? attr->sq_size : 256))
		*sq_size <<= 1;
	/* with placement by peek (attr.peek_len) nothing is ever posted */
	*rq_size = 0;
	if (!attr->srq && !attr->peek_len)
		*rq_size = iw_rq_depth(attr->rq_size);
}

void iw_qp_prepare(const struct iw_qp_attr *attr)
{
	uint32_t sq_size, rq_size;
	struct iw_mem_span span[4];
	int n = 0;

	iw_qp_sizes(attr, &sq_size, &rq_size);
	/* the QP, then slot 0 of the SQ, of its inline data, of the RQ:
	 * the queues restart there whenever they empty */
	span[n++] = (struct iw_mem_span){ 0, IW_QP_HEAD +
					  sizeof(struct iw_swqe) };
	span[n++] = (struct iw_mem_span){ iw_qp_inline_off(sq_size),
					  IW_MAX_INLINE };
	if (rq_size)
		span[n++] = (struct iw_mem_span){ iw_qp_rq_off(sq_size),
						  sizeof(struct iw_rwqe) };
	iw_mem_ready(iw_qp_block_len(sq_size, rq_size), span, n);
}

int iw_qp_create(struct iw_pd *pd, const struct iw_qp_attr *attr,
		 struct iw_qp **qpp)
{
	uint32_t sq_size, rq_size;
	struct iw_qp *qp;
	uint8_t *block;
	int i;

	iw_qp_sizes(attr, &sq_size, &rq_size);
	block = iw_mem_alloc(iw_qp_block_len(sq_size, rq_size));
	if (!block)
		return -ENOMEM;
	qp = (struct iw_qp *)(void *)block;
	memset(qp, 0, sizeof(*qp));
	qp->sq_size = sq_size;
	qp->sq = (struct iw_swqe *)(void *)(block + IW_QP_HEAD);
	qp->sq_inline = block + iw_qp_inline_off(sq_size);
	if (rq_size) {
		qp->rq.size = rq_size;
		qp->rq.q = (struct iw_rwqe *)(void *)(block +
						     iw_qp_rq_off(sq_size));
	}
	qp->id = __atomic_add_fetch(&iw_qp_next_id, 1, __ATOMIC_RELAXED);
	qp->pd = pd;
	qp->attr = *attr;
	qp->fd = -1;
	qp->spare_fd = -1;
	qp->srq = attr->srq;
	qp->rx.ops = &iw_qprx_ops;	/* placement into this QP's queues */
	if (attr->peek_len) {
		qp->rcv.peek = malloc(attr->peek_len);
		if (!qp->rcv.peek) {
			iw_mem_free(block, iw_qp_block_len(sq_size, rq_size));
			return -ENOMEM;
		}
	}
	qp->sq_msn = qp->rreq_msn = qp->term_msn = 1;
	qp->aresp_msn = qp->areq_msn = 1;
	for (i = 0; i < DDP_QN_COUNT; i++)
		qp->rx_msn[i] = 1;
	if (qp->srq)
		qp->srq->nqp++;
	pd->nqp++;
	*qpp = qp;
	return 0;
}

/*
 * The socket refused a send. A peer that terminated reset the
 * connection, and its Terminate, which tells the real reason, may still
 * wait in our receive queue: read it first.
 */
static void iw_qp_send_failed(struct iw_qp *qp)
{
	struct iw_err err;

	if (qp->cm == CM_RTS || qp->cm == CM_CLOSING)
		iw_rx_pump(qp);
	if (qp->cm == CM_ERROR)
		return;
	iw_fail(&err, IW_LAYER_LLP, MPA_ETYPE, MPA_ECODE_CLOSED,
		"TCP send failed");
	iw_qp_fatal(qp, &err, NULL, false);
}

/* Transmits what is ready; the idle check spares the busy-poll loop a
 * call. */
static inline void iw_qp_tx(struct iw_qp *qp)
{
	if (!iw_tx_idle(qp) && iw_tx_pump(qp) == -EPIPE)
		iw_qp_send_failed(qp);
}

void iw_qp_stats(const struct iw_qp *qp, struct iw_qp_stats *st)
{
	*st = qp->stats;
}

int iw_qp_destroy(struct iw_qp *qp)
{
	/* What the peer already sent may want an answer, such as the Read
	 * Request behind its last message that tells it delivery: give it
	 * before the FIN (unread octets would also turn the close into a
	 * reset). */
	if (qp->cm == CM_RTS) {
		iw_rx_pump(qp);
		if (qp->cm == CM_RTS)
			iw_qp_tx(qp);
	}
	/* Everything posted is already in the kernel: close gracefully so
	 * TCP still delivers it (a Send completes once TCP has it, and an
	 * abortive close would drop what the peer has not read yet). */
	if (qp->cm == CM_RTS && !iw_tx_pending(qp) && !qp->orq_count &&
	    !qp->irq_count && qp->sq_head == qp->sq_tail) {
		shutdown(qp->fd, SHUT_WR);
		qp->ev_final = true;
		iw_qp_flush(qp, IW_WC_FLUSHED);
		iw_qp_close_socket(qp, false);
		qp->cm = CM_CLOSED;
	}
	if (qp->cm != CM_ERROR && qp->cm != CM_CLOSED && qp->cm != CM_IDLE) {
		struct iw_err err;

		iw_fail(&err, IW_LAYER_RDMAP, RDMAP_ETYPE_CATASTROPHIC, 0,
			"QP destroyed");
		qp->ev_final = true;	/* no events from a dying QP */
		iw_qp_fatal(qp, &err, NULL, true);
		iw_qp_tx(qp);
	}
	qp->ev_final = true;
	iw_qp_flush(qp, IW_WC_FLUSHED);
	iw_qp_close_socket(qp, true);
	if (qp->spare_fd >= 0)
		iw_fd_close(qp->spare_fd);
	if (qp->srq)
		qp->srq->nqp--;
	qp->pd->nqp--;
	free(qp->orq);
	free(qp->irq);
	free(qp->tx_bounce);
	free(qp->tx_ulpdu);
	iw_pd_give(&qp->pd->txb_pool, qp->txb);
	iw_rx_stage_put(qp);
	free(qp->rcv.peek);
	iw_mem_free(qp, iw_qp_block_len(qp->sq_size, qp->rq.size));
	return 0;
}

/* ---- posting */

static int iw_sgl_len(const struct iw_sge *sgl, int n, uint32_t *len)
{
	uint64_t sum = 0;
	int i;

	if (n < 0 || n > IW_MAX_SGE || (n && !sgl))
		return -EINVAL;
	for (i = 0; i < n; i++)
		sum += sgl[i].len;
	if (sum > UINT32_MAX)
		return -EINVAL;
	*len = (uint32_t)sum;
	return 0;
}

static bool iw_qp_can_post(const struct iw_qp *qp)
{
	return qp->cm != CM_IDLE && qp->cm != CM_CLOSING &&
	       qp->cm != CM_CLOSED && qp->cm != CM_ERROR;
}

/* The work request is well formed: -EINVAL if not, else its length. */
static int iw_send_wr_check(const struct iw_qp *qp,
			    const struct iw_send_wr *wr, uint32_t *len)
{
	if (iw_sgl_len(wr->sgl, wr->num_sge, len) || wr->op > IW_WR_IMM_SE)
		return -EINVAL;
	/* Immediate Data carries wr->imm and nothing else */
	if (iw_wr_imm(wr->op) && (!qp->imm || wr->num_sge))
		return -EINVAL;
	if ((wr->flags & IW_WR_INLINE) &&
	    (*len > IW_MAX_INLINE || wr->op == IW_WR_READ ||
	     iw_wr_atomic(wr->op)))
		return -EINVAL;
	/* the original value goes to one 8-octet buffer or nowhere */
	if (iw_wr_atomic(wr->op) &&
	    (!qp->atomics || (wr->num_sge &&
			      (wr->num_sge != 1 || *len != 8 ||
			       !wr->sgl[0].addr))))
		return -EINVAL;
	return 0;
}

/* Inline data is copied into the slot's own buffer, one SGE. */
static void iw_swqe_inline(struct iw_qp *qp, struct iw_swqe *w,
			   const struct iw_send_wr *wr, uint32_t idx)
{
	uint8_t *buf = qp->sq_inline + (size_t)idx * IW_MAX_INLINE;
	uint32_t off = 0;
	int i;

	for (i = 0; i < wr->num_sge; i++) {
		memcpy(buf + off, wr->sgl[i].addr, wr->sgl[i].len);
		off += wr->sgl[i].len;
	}
	w->sge[0].addr = buf;
	w->sge[0].len = w->len;
	w->nsge = w->len ? 1 : 0;
}

static void iw_swqe_fill(struct iw_qp *qp, struct iw_swqe *w,
			 const struct iw_send_wr *wr, uint32_t len,
			 uint32_t idx)
{
	memset(w, 0, sizeof(*w));
	w->ctx = wr->ctx;
	w->op = wr->op;
	w->flags = wr->flags;
	w->len = len;
	w->inv_stag = wr->inv_stag;
	w->rstag = wr->rstag;
	w->rto = wr->rto;
	w->imm = wr->imm;
	if (iw_wr_atomic(wr->op)) {
		w->len = 8;	/* what the completion reports */
		w->add_swap = wr->add_swap;
		w->add_swap_mask = wr->add_swap_mask;
		w->compare = wr->compare;
		w->compare_mask = wr->compare_mask;
	}
	if (wr->flags & IW_WR_INLINE) {
		iw_swqe_inline(qp, w, wr, idx);
		return;
	}
	if (wr->num_sge)
		memcpy(w->sge, wr->sgl, (size_t)wr->num_sge * sizeof(*w->sge));
	w->nsge = wr->num_sge;
}

int iw_qp_post_send(struct iw_qp *qp, const struct iw_send_wr *wr)
{
	uint32_t idx, len;

	if (iw_send_wr_check(qp, wr, &len))
		return -EINVAL;
	if (!iw_qp_can_post(qp))
		return -ENOTCONN;
	if (qp->sq_tail - qp->sq_head == qp->sq_size)
		return -EAGAIN;
	if (qp->sq_head == qp->sq_tail)	/* empty: the same few slots again */
		qp->sq_head = qp->sq_tx = qp->sq_tail = 0;
	idx = qp->sq_tail & (qp->sq_size - 1);
	iw_swqe_fill(qp, &qp->sq[idx], wr, len, idx);
	qp->sq_tail++;
	if (qp->cm != CM_RTS || (wr->flags & IW_WR_MORE))
		return 0;
	/* an answer posted from inside the receive path (a rendezvous
	 * receiver's FIN and next Read): it leaves with whatever else that
	 * read calls for, in one sendmsg once the read is taken */
	if (qp->rx_depth)
		qp->tx_deferred = true;
	else
		iw_qp_tx(qp);
	return 0;
}

void iw_qp_push(struct iw_qp *qp)
{
	if (qp->cm == CM_RTS)
		iw_qp_tx(qp);
}

static int iw_rq_post(struct iw_rq *rq, const struct iw_recv_wr *wr)
{
	struct iw_rwqe *w;
	uint32_t len;

	if (iw_sgl_len(wr->sgl, wr->num_sge, &len))
		return -EINVAL;
	if (rq->count == rq->size)
		return -EAGAIN;
	if (!rq->count)
		rq->head = 0;
	w = &rq->q[iw_ring_at(rq->head, rq->count, rq->size)];
	w->ctx = wr->ctx;
	if (wr->num_sge)
		memcpy(w->sge, wr->sgl, (size_t)wr->num_sge * sizeof(*w->sge));
	w->nsge = wr->num_sge;
	w->len = len;
	rq->count++;
	return 0;
}

int iw_qp_post_recv_first(struct iw_qp *qp, const struct iw_recv_wr *wr)
{
	struct iw_rq *rq = &qp->rq;
	int ret;

	if (qp->srq || qp->attr.peek_len)
		return -EINVAL;
	if (qp->cm == CM_ERROR || qp->cm == CM_CLOSED)
		return -ENOTCONN;
	/* posted last, then rotated to the head: one copy of the checks */
	ret = iw_rq_post(rq, wr);
	if (ret)
		return ret;
	rq->count--;
	rq->head = (rq->head + rq->size - 1) % rq->size;
	rq->q[rq->head] = rq->q[(rq->head + rq->count + 1) % rq->size];
	rq->count++;
	if (!iw_rx_stalled(qp))
		return 0;
	if (iw_rx_resume(&qp->rx))
		iw_qp_fatal(qp, &qp->rx.err, &qp->rx.seg, true);
	else
		iw_rx_pump(qp);
	return 0;
}

int iw_qp_post_recv(struct iw_qp *qp, const struct iw_recv_wr *wr)
{
	int ret;

	if (qp->srq || qp->attr.peek_len)
		return -EINVAL;
	if (qp->cm == CM_ERROR || qp->cm == CM_CLOSED)
		return -ENOTCONN;
	ret = iw_rq_post(&qp->rq, wr);
	if (!ret && iw_rx_stalled(qp)) {
		/* the Send that waited for it goes on now */
		if (iw_rx_resume(&qp->rx))
			iw_qp_fatal(qp, &qp->rx.err, &qp->rx.seg, true);
		else
			iw_rx_pump(qp);
	}
	return ret;
}

int iw_qp_set_atomics(struct iw_qp *qp, bool on)
{
	qp->atomics = on;
	return 0;
}

int iw_qp_set_imm(struct iw_qp *qp, bool on)
{
	qp->imm = on;
	return 0;
}

void iw_qp_set_imm_nowait(struct iw_qp *qp, bool on)
{
	qp->imm_nowait = on;
}

uint32_t iw_qp_rx_write_len(const struct iw_qp *qp)
{
	return qp->rx_write_len;
}

bool iw_qp_rx_waiting(const struct iw_qp *qp)
{
	return iw_rx_stalled(qp);
}

uint32_t iw_qp_sq_free(const struct iw_qp *qp)
{
	return qp->sq_size - (qp->sq_tail - qp->sq_head);
}

int iw_qp_gate(struct iw_qp *qp, bool closed)
{
	qp->gated = closed;
	return 0;
}

void iw_qp_rtr_more(struct iw_qp *qp, bool more)
{
	qp->rtr_more = more;
}

int iw_qp_cancel_recv(struct iw_qp *qp, void *ctx)
{
	struct iw_rq *rq = &qp->rq;
	uint32_t i, j;

	if (qp->srq)
		return -ENOENT;
	for (i = 0; i < rq->count; i++) {
		struct iw_rwqe w = rq->q[(rq->head + i) % rq->size];

		if (w.ctx != ctx)
			continue;
		for (j = i; j + 1 < rq->count; j++)
			rq->q[(rq->head + j) % rq->size] =
				rq->q[(rq->head + j + 1) % rq->size];
		rq->count--;
		iw_qp_flush_rwqe(qp, ctx, IW_WC_FLUSHED, NULL);
		return 0;
	}
	return -ENOENT;
}

int iw_srq_create(struct iw_pd *pd, uint32_t size, struct iw_srq **srqp)
{
	struct iw_srq *srq = calloc(1, sizeof(*srq));

	if (!srq)
		return -ENOMEM;
	if (iw_rq_init(&srq->rq, size)) {
		free(srq);
		return -ENOMEM;
	}
	srq->pd = pd;
	*srqp = srq;
	return 0;
}

int iw_srq_destroy(struct iw_srq *srq)
{
	if (srq->nqp)
		return -EBUSY;
	iw_rq_fini(&srq->rq);
	free(srq);
	return 0;
}

int iw_srq_post_recv(struct iw_srq *srq, const struct iw_recv_wr *wr)
{
	return iw_rq_post(&srq->rq, wr);
}

/* ---- close */

static void iw_qp_closing_progress(struct iw_qp *qp);

int iw_qp_disconnect(struct iw_qp *qp)
{
	switch (qp->cm) {
	case CM_RTS:
		qp->cm = CM_CLOSING;
		qp->deadline = iw_now_ms() + qp->param.timeout_ms;
		iw_qp_tx(qp);
		iw_qp_closing_progress(qp);	/* FIN now if nothing is queued */
		return 0;
	case CM_CLOSING:
	case CM_CLOSED:
	case CM_ERROR:
		return 0;
	case CM_IDLE:
		return -ENOTCONN;
	default:
		/* still setting up: there is nothing to drain */
		return iw_qp_abort(qp);
	}
}

int iw_qp_abort(struct iw_qp *qp)
{
	struct iw_err err;

	if (qp->cm == CM_IDLE || qp->cm == CM_CLOSED || qp->cm == CM_ERROR)
		return 0;
	iw_fail(&err, IW_LAYER_RDMAP, RDMAP_ETYPE_CATASTROPHIC, 0,
		"abortive close");
	iw_qp_fatal(qp, &err, NULL,
		    qp->cm == CM_RTS || qp->cm == CM_CLOSING ||
		    qp->cm == CM_SEND_RTR || qp->cm == CM_WAIT_RTR);
	iw_qp_tx(qp);
	return 0;
}

/* Graceful close ends when our side drained and the peer's FIN came. */
static void iw_qp_closing_progress(struct iw_qp *qp)
{
	if (qp->cm != CM_CLOSING)
		return;
	if (!qp->fin_sent && !iw_tx_pending(qp) && !qp->orq_count &&
	    !qp->irq_count && qp->sq_head == qp->sq_tail) {
		shutdown(qp->fd, SHUT_WR);
		qp->fin_sent = true;
	}
	if (qp->fin_sent && qp->rx_eof) {
		iw_qp_close_socket(qp, false);
		qp->cm = CM_CLOSED;
		qp->deadline = 0;
		qp->ev_final = false;
		iw_qp_flush(qp, IW_WC_FLUSHED);
		iw_qp_final_event(qp, IW_CM_DISCONNECTED, 0);
	} else if (qp->deadline && iw_now_ms() >= qp->deadline) {
		iw_qp_close_socket(qp, true);
		qp->cm = CM_CLOSED;
		qp->deadline = 0;
		iw_qp_flush(qp, IW_WC_FLUSHED);
		iw_qp_final_event(qp, IW_CM_DISCONNECTED, -ETIMEDOUT);
	}
}

/* ---- progress */

int iw_qp_fd(const struct iw_qp *qp)
{
	return qp->fd;
}

short iw_qp_poll_events(const struct iw_qp *qp)
{
	short ev = 0;

	if (qp->fd < 0)
		return 0;
	if (qp->cm == CM_TCP_CONNECT)
		return POLLOUT;
	if (!qp->rx_eof && !iw_rx_stalled(qp))
		ev |= POLLIN;	/* a stalled stream waits for a receive */
	if (iw_tx_pending(qp))
		ev |= POLLOUT;
	return ev;
}

uint64_t iw_qp_deadline(const struct iw_qp *qp)
{
	if (qp->tx_hold && (!qp->deadline || qp->tx_hold < qp->deadline))
		return qp->tx_hold;
	return qp->deadline;
}

/* True once nothing is left to drive: no socket, nothing queued. */
static bool iw_qp_finished(const struct iw_qp *qp)
{
	return (qp->cm == CM_ERROR || qp->cm == CM_CLOSED) && qp->fd < 0;
}

/* In error the only work left is pushing the Terminate out, then the
 * reset (bounded by the deadline set when the error happened). */
static void iw_qp_error_progress(struct iw_qp *qp)
{
	if (qp->fd < 0)
		return;
	iw_qp_tx(qp);
	if (!iw_tx_pending(qp) || iw_now_ms() >= qp->deadline) {
		iw_qp_close_socket(qp, true);
		qp->deadline = 0;
	}
}

int iw_qp_progress(struct iw_qp *qp)
{
	if (qp->cm == CM_IDLE)
		return 0;
	if (qp->cm != CM_ERROR && qp->cm != CM_CLOSED) {
		/* its steps are those of connection setup: none in RTS */
		if (qp->cm != CM_RTS)
			iw_cm_progress(qp);
		if (qp->cm == CM_TCP_CONNECT || qp->cm == CM_WAIT_REP) {
			if (qp->fd >= 0)
				iw_qp_tx(qp);
		} else if (qp->cm != CM_ERROR && qp->cm != CM_CLOSED) {
			iw_qp_tx(qp);
			if (qp->cm != CM_ERROR)
				iw_rx_pump(qp);
			if (qp->cm != CM_ERROR && qp->cm != CM_CLOSED)
				iw_qp_tx(qp);
			iw_qp_closing_progress(qp);
		}
	}
	if (qp->cm == CM_ERROR)
		iw_qp_error_progress(qp);
	return iw_qp_finished(qp) ? -ENOTCONN : 0;
}
