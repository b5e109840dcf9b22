/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The QP's core, beneath connection setup (iw_cm.c), transmit (iw_tx.c)
 * and receive (iw_qprx.c): what they report upward goes through here
 * (events, completions, the move to error and its Terminate, closing the
 * socket, log lines naming the connection). Nothing here calls those
 * three or iw_qp.c, so the engine's calls point one way.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iw_priv.h"

#define IW_MSS_SETTLE 32	/* same answers in a row: asked no more */

/* MULPDU from the socket's current MSS (RFC 5044 §7.1), or the fixed one
 * the QP was created with. */
static uint32_t iw_qp_mss_mulpdu(struct iw_qp *qp)
{
	int mss = 0;
	socklen_t sl = sizeof(mss);
	uint32_t m;

	if (qp->attr.mulpdu)
		m = qp->attr.mulpdu;
	else if (getsockopt(qp->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &sl) ||
		 mss <= 0)
		m = mpa_mulpdu(1460, qp->markers_tx);
	else
		m = mpa_mulpdu((uint32_t)mss, qp->markers_tx);
	if (m > MPA_MAX_ULPDU)
		m = MPA_MAX_ULPDU;
	/* header-only messages are never split */
	if (m < DDP_UNTAGGED_HDR + RDMAP_AREQ_LEN)
		m = DDP_UNTAGGED_HDR + RDMAP_AREQ_LEN;
	return m;
}

/*
 * A message about to be split into several FPDUs: Linux holds a new
 * connection's MSS to half the largest window the peer advertised so
 * far (32 KiB at first on loopback, then 64 KiB), so the MSS is asked
 * again, as siw does per message, until it stayed the same
 * IW_MSS_SETTLE times in a row. Each FPDU stands alone on the wire,
 * so the size may change between two of one message.
 */
void iw_qp_mss_refresh(struct iw_qp *qp)
{
	uint32_t m;

	if (qp->attr.mulpdu || qp->mss_settled >= IW_MSS_SETTLE)
		return;
	m = iw_qp_mss_mulpdu(qp);
	if (m == qp->mulpdu) {
		qp->mss_settled++;
		return;
	}
	qp->mulpdu = m;
	qp->mss_settled = 0;
}

/* Sizes the Read queues and starts both MPA streams. */
int iw_qp_setup_full_op(struct iw_qp *qp)
{
	qp->orq_cap = qp->ord ? qp->ord : 1;	/* one for a Read RTR */
	qp->irq_cap = qp->ird ? qp->ird : 1;
	qp->orq = calloc(qp->orq_cap, sizeof(*qp->orq));
	qp->irq = calloc(qp->irq_cap, sizeof(*qp->irq));
	if (!qp->orq || !qp->irq)
		return -ENOMEM;
	if (qp->markers_tx) {
		qp->tx_bounce = malloc(mpa_marked_len(
			mpa_fpdu_len(MPA_MAX_ULPDU), 0) + MPA_MARKER_LEN);
		qp->tx_ulpdu = malloc(MPA_MAX_ULPDU);
		if (!qp->tx_bounce || !qp->tx_ulpdu)
			return -ENOMEM;
	}
	/* asked once established: a responder's Reply goes first */
	qp->mulpdu = 0;
	qp->mss_settled = 0;
	/* the placement ops were chosen when the QP was created */
	iw_rx_init(&qp->rx, qp->crc, qp->markers_rx, qp->rx.ops, qp);
	qp->tx_mpos = 0;
	return 0;
}

void iw_qp_event(struct iw_qp *qp, struct iw_cm_event *ev)
{
	if (qp->attr.ops && qp->attr.ops->cm_event)
		qp->attr.ops->cm_event(qp->attr.arg, qp, ev);
}

void iw_qp_established(struct iw_qp *qp)
{
	struct iw_cm_event ev = qp->est;

	qp->cm = CM_RTS;
	qp->deadline = 0;
	if (!qp->mulpdu)
		qp->mulpdu = iw_qp_mss_mulpdu(qp);
	ev.type = IW_CM_ESTABLISHED;
	ev.ird = qp->ird;
	ev.ord = qp->ord;
	ev.rtr_used = qp->rtr_used;
	ev.crc = qp->crc;
	ev.markers_rx = qp->markers_rx;
	ev.markers_tx = qp->markers_tx;
	ev.mulpdu = qp->mulpdu;
	iw_qp_event(qp, &ev);
}

void iw_qp_final_event(struct iw_qp *qp, enum iw_cm_event_type type,
		       int status)
{
	struct iw_cm_event ev = { .type = type, .status = status };

	if (qp->ev_final)
		return;
	qp->ev_final = true;
	iw_qp_event(qp, &ev);
}

void iw_qp_complete(struct iw_qp *qp, const struct iw_wc *wc)
{
	if (qp->attr.ops && qp->attr.ops->complete)
		qp->attr.ops->complete(qp->attr.arg, qp, wc);
}

void iw_qp_target(struct iw_qp *qp, bool write, uint32_t stag)
{
	struct iw_mr *mr = NULL;

	if (!qp->attr.ops || !qp->attr.ops->target)
		return;
	if (stag)
		mr = iw_stag_lookup(qp->pd->dev, stag);
	qp->attr.ops->target(qp->attr.arg, qp, write,
			     mr && mr->pd == qp->pd ? mr->ctx : NULL);
}

static enum iw_wc_opcode iw_wc_op(enum iw_wr_opcode op)
{
	switch (op) {
	case IW_WR_WRITE:
		return IW_WC_WRITE;
	case IW_WR_READ:
		return IW_WC_READ;
	case IW_WR_ATOMIC_FADD:
	case IW_WR_ATOMIC_CSWAP:
		return IW_WC_ATOMIC;
	default:
		return IW_WC_SEND;
	}
}

/* Reports finished send-queue entries from the head, in posting order. */
void iw_qp_sq_complete_ready(struct iw_qp *qp)
{
	while (qp->sq_head != qp->sq_tail) {
		struct iw_swqe *w = &qp->sq[qp->sq_head & (qp->sq_size - 1)];
		struct iw_wc wc;

		if (!w->done)
			break;
		qp->sq_head++;
		if (w->status == IW_WC_SUCCESS && !(w->flags & IW_WR_SIGNALED))
			continue;
		memset(&wc, 0, sizeof(wc));
		wc.ctx = w->ctx;
		wc.op = iw_wc_op(w->op);
		wc.status = w->status;
		wc.err = w->err;
		wc.byte_len = w->len;
		iw_qp_complete(qp, &wc);
	}
}

void iw_qp_flush_rwqe(struct iw_qp *qp, void *ctx,
			  enum iw_wc_status st, const struct iw_err *err)
{
	struct iw_wc wc = { .ctx = ctx, .op = IW_WC_RECV, .status = st };

	if (err)
		wc.err = *err;
	iw_qp_complete(qp, &wc);
}

/*
 * Completes everything still posted. The message that was being received
 * or sent when the stream failed gets `st`; the rest IW_WC_FLUSHED.
 */
void iw_qp_flush(struct iw_qp *qp, enum iw_wc_status st)
{
	const struct iw_err *err = &qp->fatal;
	uint32_t i;

	if (qp->flushed)
		return;
	qp->flushed = true;
	/* send queue: everything not done, in order */
	for (i = qp->sq_head; i != qp->sq_tail; i++) {
		struct iw_swqe *w = &qp->sq[i & (qp->sq_size - 1)];

		if (w->done)
			continue;
		/* our own work did not cause the failure: it is flushed */
		w->done = true;
		w->status = IW_WC_FLUSHED;
		w->err = *err;
		w->flags |= IW_WR_SIGNALED;
	}
	iw_qp_sq_complete_ready(qp);
	qp->sq_tx = qp->sq_head;
	qp->tx_joined = 0;
	qp->tx_sq_busy = false;
	qp->tx_irq_busy = false;
	qp->orq_count = 0;
	qp->irq_count = 0;
	/* the Send being received, then the receive queue */
	if (qp->rcv.active && (qp->rcv.placed || !qp->rcv.peek_mode))
		iw_qp_flush_rwqe(qp, qp->rcv.ctx, st, err);
	qp->rcv.active = false;
	while (!qp->srq && qp->rq.count) {
		struct iw_rwqe *w = &qp->rq.q[qp->rq.head];

		qp->rq.head = iw_ring_next(qp->rq.head, qp->rq.size);
		qp->rq.count--;
		iw_qp_flush_rwqe(qp, w->ctx, IW_WC_FLUSHED, err);
	}
}

int iw_qp_ctrl(struct iw_qp *qp, const uint8_t *p, size_t len)
{
	if (qp->ctrl_off == qp->ctrl_len)
		qp->ctrl_off = qp->ctrl_len = 0;
	if (len > sizeof(qp->ctrl) - qp->ctrl_len)
		return -ENOSPC;
	memcpy(qp->ctrl + qp->ctrl_len, p, len);
	qp->ctrl_len += len;
	return 0;
}

/* RFC 5040 §4.8 and figure 10: which header copies a Terminate carries */
static void iw_qp_terminate(struct iw_qp *qp, const struct iw_err *err,
		     const struct iw_rx_seg *seg)
{
	struct rdmap_term t = {
		.layer = err->layer,
		.etype = err->etype,
		.ecode = err->ecode,
	};
	bool copy = seg && seg->raw && err->layer != IW_LAYER_LLP &&
		    !(err->layer == IW_LAYER_RDMAP &&
		      err->etype == RDMAP_ETYPE_CATASTROPHIC);
	uint8_t term[RDMAP_TERM_MAX], ulpdu[DDP_UNTAGGED_HDR + RDMAP_TERM_MAX];
	uint8_t fpdu[IW_CTRL_MAX];
	struct ddp_hdr h = {
		.last = true, .ddp_ver = DDP_VERSION,
		.rdmap_ver = RDMAP_VERSION, .opcode = RDMAP_TERMINATE,
		.qn = DDP_QN_TERM, .msn = qp->term_msn++,
	};
	ssize_t tl, n;
	size_t dl;

	if (qp->term_queued)
		return;
	qp->term_queued = true;
	dl = copy ? ddp_hdr_size(seg->raw[0]) : 0;
	if (copy && seg->raw_len >= dl) {	/* "if possible" */
		t.hdrct = RDMAP_TERM_M | RDMAP_TERM_D;
		t.seg_len = seg->ulpdu_len;
		t.ddp_hdr_len = (uint8_t)dl;
		memcpy(t.ddp_hdr, seg->raw, dl);
		if (seg->hdr.opcode == RDMAP_READ_REQ &&
		    err->layer == IW_LAYER_RDMAP &&
		    err->etype == RDMAP_ETYPE_REMOTE_PROT &&
		    seg->raw_len >= dl + RDMAP_RREQ_LEN) {
			t.hdrct |= RDMAP_TERM_R;
			memcpy(t.rreq, seg->raw + dl, RDMAP_RREQ_LEN);
		}
	}
	tl = rdmap_term_build(term, sizeof(term), &t);
	n = ddp_hdr_build(ulpdu, sizeof(ulpdu), &h);
	memcpy(ulpdu + n, term, (size_t)tl);
	n = mpa_fpdu_build(fpdu, sizeof(fpdu), ulpdu, (size_t)(n + tl),
			   qp->crc, qp->markers_tx, &qp->tx_mpos);
	if (n > 0)
		iw_qp_ctrl(qp, fpdu, (size_t)n);
}

void iw_qp_close_socket(struct iw_qp *qp, bool reset)
{
	if (qp->fd < 0)
		return;
	if (reset) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(qp->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	iw_fd_close(qp->fd);
	qp->fd = -1;
}

void iw_qp_fatal(struct iw_qp *qp, const struct iw_err *err,
		 const struct iw_rx_seg *seg, bool send_term)
{
	struct iw_cm_event ev = {
		.type = IW_CM_ERROR,
		.status = -ECONNABORTED,
		.remote = false,
	};

	if (qp->flushed && qp->cm == CM_ERROR)
		return;
	iw_qp_label(qp);	/* named while the socket is still there */
	qp->fatal = *err;
	qp->cm = CM_ERROR;
	qp->deadline = iw_now_ms() + 2000;	/* to push the Terminate out */
	if (send_term && qp->fd >= 0)
		iw_qp_terminate(qp, err, seg);
	else
		iw_qp_close_socket(qp, true);
	iw_qp_flush(qp, send_term ? IW_WC_FATAL : IW_WC_FLUSHED);
	ev.err = *err;
	if (!qp->ev_final) {
		qp->ev_final = true;
		char why[160];

		/* a violation the receive path found is a data-path line */
		iw_qp_log(qp, IW_LOG_WARN | (seg ? IW_LOG_DATA : 0),
			  "stream terminated: %u/%u/%u %s (%s)", err->layer,
			  err->etype, err->ecode,
			  iw_err_str(err->layer, err->etype, err->ecode),
			  iw_err_why(err, why, sizeof(why)));
		iw_qp_event(qp, &ev);
	}
}

/* The peer's Terminate: no Terminate back, report its triple. */
void iw_qp_remote_fatal(struct iw_qp *qp, const struct rdmap_term *t,
			const uint8_t *raw, size_t len)
{
	struct iw_cm_event ev = {
		.type = IW_CM_ERROR,
		.status = -ECONNRESET,
		.remote = true,
	};

	iw_qp_label(qp);	/* named while the socket is still there */
	iw_fail(&qp->fatal, t->layer, t->etype, t->ecode,
		"Terminate from the peer");
	qp->cm = CM_ERROR;
	iw_qp_close_socket(qp, true);
	iw_qp_flush(qp, IW_WC_REM_ERROR);
	ev.err = qp->fatal;
	if (len > sizeof(qp->term_copy))
		len = sizeof(qp->term_copy);
	memcpy(qp->term_copy, raw, len);
	ev.term_raw = qp->term_copy;
	ev.term_raw_len = len;
	if (!qp->ev_final) {
		char hex[3 * RDMAP_TERM_MAX + 1] = "";
		size_t i, n = 0;

		/* raw, because peers disagree on the layout: Linux siw 6.1
		 * swaps the layer/etype nibbles and moves M/D/R */
		for (i = 0; i < len; i++)
			n += (size_t)snprintf(hex + n, sizeof(hex) - n,
					      " %02x", raw[i]);
		qp->ev_final = true;
		iw_qp_log(qp, IW_LOG_WARN, "peer terminated: %u/%u/%u %s; "
			  "Terminate octets:%s", t->layer, t->etype, t->ecode,
			  iw_err_str(t->layer, t->etype, t->ecode), hex);
		iw_qp_event(qp, &ev);
	}
}

static int iw_qp_sockname(int fd, bool peer, struct sockaddr *sa,
			  socklen_t *len)
{
	int ret;

	if (fd < 0)
		return -ENOTCONN;
	ret = peer ? getpeername(fd, sa, len) : getsockname(fd, sa, len);
	return ret ? -errno : 0;
}

int iw_qp_getname(const struct iw_qp *qp, struct sockaddr *sa,
		  socklen_t *len)
{
	return iw_qp_sockname(qp->fd, false, sa, len);
}

int iw_qp_getpeer(const struct iw_qp *qp, struct sockaddr *sa,
		  socklen_t *len)
{
	return iw_qp_sockname(qp->fd, true, sa, len);
}

bool iw_sa_same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	const struct sockaddr_in *a4 = (const void *)a, *b4 = (const void *)b;
	const struct sockaddr_in6 *a6 = (const void *)a, *b6 = (const void *)b;
	const struct in6_addr *v6;
	const struct in_addr *v4;

	if (a->sa_family == b->sa_family)
		return a->sa_family == AF_INET6 ?
			       !memcmp(&a6->sin6_addr, &b6->sin6_addr,
				       sizeof(struct in6_addr)) :
			       a4->sin_addr.s_addr == b4->sin_addr.s_addr;
	v6 = a->sa_family == AF_INET6 ? &a6->sin6_addr : &b6->sin6_addr;
	v4 = a->sa_family == AF_INET ? &a4->sin_addr : &b4->sin_addr;
	return IN6_IS_ADDR_V4MAPPED(v6) && !memcmp(&v6->s6_addr[12], v4, 4);
}

void iw_sa_str(const struct sockaddr_storage *ss, char *buf,
		      size_t size)
{
	const struct sockaddr_in *a4 = (const void *)ss;
	const struct sockaddr_in6 *a6 = (const void *)ss;
	char ip[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &a4->sin_addr, ip, sizeof(ip));
		snprintf(buf, size, "%s:%u", ip, ntohs(a4->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &a6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, size, "[%s]:%u", ip, ntohs(a6->sin6_port));
	} else {
		snprintf(buf, size, "-");
	}
}

const char *iw_qp_label(struct iw_qp *qp)
{
	struct sockaddr_storage a = { 0 }, b = { 0 };
	socklen_t al = sizeof(a), bl = sizeof(b);
	char la[64] = "-", pa[64] = "-";

	if (qp->fd < 0 && qp->label[0])
		return qp->label;	/* the connection it was */
	if (!iw_qp_getname(qp, (struct sockaddr *)&a, &al))
		iw_sa_str(&a, la, sizeof(la));
	if (!iw_qp_getpeer(qp, (struct sockaddr *)&b, &bl))
		iw_sa_str(&b, pa, sizeof(pa));
	else if (qp->dst_len)
		iw_sa_str(&qp->dst, pa, sizeof(pa));
	snprintf(qp->label, sizeof(qp->label), "qp %u %s-%s", qp->id, la, pa);
	return qp->label;
}

void iw_qp_log(struct iw_qp *qp, int level, const char *fmt, ...)
{
	struct iw_dev *dev = qp->pd->dev;
	char msg[400];
	va_list ap;

	if (!iw_log_on(dev, level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	iw_log(dev, level, "%s: %s", iw_qp_label(qp), msg);
}
