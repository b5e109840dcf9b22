/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive placement: every inbound segment is checked (STag, protection
 * domain, access, bounds, MSN, MO, IRD) before a byte of it is placed,
 * and its payload goes straight to its destination: the registered region
 * (RDMA Write), the Read's sink buffers (Read Response), the posted
 * receive or the buffer chosen by ops->place (Send). Atomic Requests and
 * Responses and Immediate Data (RFC 7306) are headers only. Errors carry the
 * triples Linux siw uses (RFC 5040 §7, RFC 5041 §7).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "iw_priv.h"

#define RXBUF_LEN 16384
#define RX_DIRECT_MIN 2048	/* payload reads this big skip staging */
#define RX_HDR_READ 128		/* stage read after a large payload */
#define RX_GUESS_MAX 3		/* Read Response FPDUs guessed per read */
#define RX_GUESS_HDR (MPA_FPDU_HDR + DDP_TAGGED_HDR)

static int iw_fail_t(struct iw_err *err, uint8_t ecode, const char *why)
{
	return iw_fail(err, IW_LAYER_DDP, DDP_ETYPE_TAGGED, ecode, why);
}

static int iw_fail_u(struct iw_err *err, uint8_t ecode, const char *why)
{
	return iw_fail(err, IW_LAYER_DDP, DDP_ETYPE_UNTAGGED, ecode, why);
}

/* Untagged and tagged failures naming what came and what was due. */
static int iw_fail_uv(struct iw_err *err, uint8_t ecode, const char *why,
		      uint64_t got, uint64_t want)
{
	return iw_fail_v(err, IW_LAYER_DDP, DDP_ETYPE_UNTAGGED, ecode, why, got,
			 want);
}

static int iw_fail_tv(struct iw_err *err, uint8_t ecode, const char *why,
		      uint64_t got, uint64_t want)
{
	return iw_fail_v(err, IW_LAYER_DDP, DDP_ETYPE_TAGGED, ecode, why, got,
			 want);
}

/* Points dst at offset `off` of a gather list; false past its end. */
static bool iw_sge_at(const struct iw_sge *sge, int nsge, uint64_t off,
		      struct iw_rx_dst *dst)
{
	int i;

	for (i = 0; i < nsge; i++) {
		if (off < sge[i].len) {
			dst->buf = sge[i].addr ? (uint8_t *)sge[i].addr + off :
						 NULL;
			dst->len = sge[i].len - off;
			return true;
		}
		off -= sge[i].len;
	}
	return false;
}

/* ---- RDMA Write: RFC 5041 §7.2 tagged buffer checks */

/* Until iw_qp_gate opens, no STag is valid for the peer. */
static struct iw_mr *iw_rx_mr(struct iw_qp *qp, uint32_t stag)
{
	return qp->gated ? NULL : iw_stag_lookup(qp->pd->dev, stag);
}

static int iw_rx_write(struct iw_qp *qp, const struct iw_rx_seg *seg,
		       struct iw_rx_dst *dst, struct iw_err *err)
{
	const struct ddp_hdr *h = &seg->hdr;
	uint64_t len = seg->payload_len;
	struct iw_mr *mr;

	if (qp->tag.active && (qp->tag.op != RDMAP_WRITE ||
			       qp->tag.stag != h->stag))
		return iw_fail_t(err, DDP_ECODE_T_INVALID_STAG,
				 "tagged messages intersect");
	if (qp->tag.active && qp->tag.next_to != h->to)
		return iw_fail_tv(err, DDP_ECODE_T_BASE_BOUNDS,
				  "Write segment out of sequence: TO", h->to,
				  qp->tag.next_to);
	if (!len)
		return 0;	/* zero-length Writes place nothing */
	mr = iw_rx_mr(qp, h->stag);
	if (!mr)
		return iw_fail_t(err, DDP_ECODE_T_INVALID_STAG,
				 "Write to an invalid STag");
	if (mr->pd != qp->pd)
		return iw_fail_t(err, DDP_ECODE_T_STAG_NOT_ASSOC,
				 "Write STag of another protection domain");
	/* RFC 5041 has no access code; siw reports an invalid STag too */
	if (!(mr->access & IW_ACC_REMOTE_WRITE))
		return iw_fail_t(err, DDP_ECODE_T_INVALID_STAG,
				 "Write to a region without remote write");
	if (h->to + len < h->to)
		return iw_fail_t(err, DDP_ECODE_T_TO_WRAP, "Write TO wraps");
	if (h->to < mr->base_to || h->to + len > mr->base_to + mr->len)
		return iw_fail_t(err, DDP_ECODE_T_BASE_BOUNDS,
				 "Write outside the region");
	dst->buf = mr->addr + (h->to - mr->base_to);
	dst->len = len;
	return 0;
}

/* ---- Read Response: must match the oldest outstanding Read */

static struct iw_swqe *iw_orq_wqe(struct iw_qp *qp, const struct iw_orqe *o)
{
	return o->sq_idx < 0 ? NULL : &qp->sq[o->sq_idx];
}

static int iw_rx_rresp_dst(struct iw_qp *qp, uint64_t off,
			   struct iw_rx_dst *dst, struct iw_err *err)
{
	struct iw_orqe *o = &qp->orq[qp->orq_head];
	struct iw_swqe *w = iw_orq_wqe(qp, o);

	if (!w || !iw_sge_at(w->sge, w->nsge, off, dst))
		return iw_fail_t(err, DDP_ECODE_T_BASE_BOUNDS,
				 "Read Response longer than the Read");
	return 0;
}

static int iw_rx_rresp(struct iw_qp *qp, const struct iw_rx_seg *seg,
		       struct iw_rx_dst *dst, struct iw_err *err)
{
	const struct ddp_hdr *h = &seg->hdr;
	struct iw_orqe *o;

	if (!qp->orq_count)
		return iw_fail(err, IW_LAYER_DDP, DDP_ETYPE_CATASTROPHIC, 0,
			       "Read Response without a Read");
	if (qp->tag.active && qp->tag.op != RDMAP_READ_RESP)
		return iw_fail_t(err, DDP_ECODE_T_INVALID_STAG,
				 "tagged messages intersect");
	o = &qp->orq[qp->orq_head];
	if (o->atomic)
		return iw_fail_t(err, DDP_ECODE_T_INVALID_STAG,
				 "Read Response, Atomic Response due");
	if (h->stag != o->sink_stag)
		return iw_fail_tv(err, DDP_ECODE_T_INVALID_STAG,
				  "Read Response to the wrong sink STag",
				  h->stag, o->sink_stag);
	if (h->to != o->sink_to + o->got)
		return iw_fail_tv(err, DDP_ECODE_T_BASE_BOUNDS,
				  "Read Response at the wrong offset", h->to,
				  o->sink_to + o->got);
	if ((uint64_t)o->got + seg->payload_len > o->len)
		return iw_fail_t(err, DDP_ECODE_T_BASE_BOUNDS,
				 "Read Response longer than the Read");
	if (!seg->payload_len)
		return 0;
	return iw_rx_rresp_dst(qp, o->got, dst, err);
}

static int iw_rx_rresp_done(struct iw_qp *qp, const struct iw_rx_seg *seg,
			    struct iw_err *err)
{
	struct iw_orqe *o = &qp->orq[qp->orq_head];
	struct iw_swqe *w;

	o->got += seg->payload_len;
	qp->tag.active = !seg->hdr.last;
	qp->tag.op = RDMAP_READ_RESP;
	if (!seg->hdr.last)
		return 0;
	if (o->got != o->len)
		return iw_fail_tv(err, DDP_ECODE_T_BASE_BOUNDS,
				  "Read Response shorter than the Read", o->got,
				  o->len);
	w = iw_orq_wqe(qp, o);
	qp->orq_head = iw_ring_next(qp->orq_head, qp->orq_cap);
	qp->orq_count--;
	if (w) {
		w->done = true;
		w->status = IW_WC_SUCCESS;
		iw_qp_sq_complete_ready(qp);
	}
	return 0;
}

/* ---- Sends: RFC 5041 §5.3 untagged buffers, MSN and MO rules */

static void iw_rcv_take(struct iw_qp *qp, struct iw_rq *rq)
{
	qp->rcv.w = rq->q[rq->head];
	qp->rcv.ctx = qp->rcv.w.ctx;
	rq->head = iw_ring_next(rq->head, rq->size);
	rq->count--;
}

/* Destination for message offset `off`; peek octets come first. */
static int iw_rcv_dst(struct iw_qp *qp, uint64_t off, struct iw_rx_dst *dst,
		      struct iw_err *err);

static int iw_rcv_place(struct iw_qp *qp, struct iw_err *err)
{
	const struct iw_rx_seg *seg = &qp->rx.seg;
	struct iw_place p = {
		.msn = qp->rcv.msn,
		.peek = qp->rcv.peek,
		.peek_len = qp->rcv.peek_got,
		.seg_len = seg->payload_len,
		.last = seg->hdr.last,
		.inv_stag = qp->rcv.inv_stag,
	};
	void *ctx = NULL;
	int n;

	if (qp->rcv.op == RDMAP_SEND_SE || qp->rcv.op == RDMAP_SEND_SE_INV)
		p.flags |= IW_WC_F_SE;
	if (qp->rcv.op == RDMAP_SEND_INV || qp->rcv.op == RDMAP_SEND_SE_INV)
		p.flags |= IW_WC_F_INV;
	n = qp->attr.ops->place(qp->attr.arg, qp, &p, qp->rcv.w.sge, &ctx);
	if (n < 0 || n > IW_MAX_SGE)
		return iw_fail_u(err, DDP_ECODE_UT_NO_BUFFER,
				 "no buffer for the Send");
	qp->rcv.w.nsge = n;
	qp->rcv.w.len = 0;
	while (n--)
		qp->rcv.w.len += qp->rcv.w.sge[n].len;
	qp->rcv.ctx = ctx;
	qp->rcv.placed = true;
	return 0;
}

static int iw_rcv_dst(struct iw_qp *qp, uint64_t off, struct iw_rx_dst *dst,
		      struct iw_err *err)
{
	uint32_t peek = qp->attr.peek_len;

	if (qp->rcv.peek_mode && !qp->rcv.placed) {
		if (off < peek) {
			dst->buf = qp->rcv.peek + off;
			dst->len = peek - off;
			return 0;
		}
		qp->rcv.peek_got = peek;
		if (iw_rcv_place(qp, err))
			return -EPROTO;
	}
	if (qp->rcv.peek_mode)
		off -= qp->rcv.peek_got;
	if (qp->rcv.peek_mode && !qp->rcv.w.nsge) {
		dst->buf = NULL;	/* the ULP discards the rest */
		dst->len = 0;
		return 0;
	}
	if (!iw_sge_at(qp->rcv.w.sge, qp->rcv.w.nsge, off, dst))
		return iw_fail_u(err, DDP_ECODE_UT_TOO_LONG,
				 "Send longer than the receive buffer");
	if (qp->rcv.peek_mode && !dst->buf)
		dst->len = 0;	/* a NULL entry: the ULP truncates here */
	return 0;
}

static int iw_rx_send_new(struct iw_qp *qp, const struct iw_rx_seg *seg,
			  struct iw_err *err)
{
	const struct ddp_hdr *h = &seg->hdr;
	struct iw_rq *rq = qp->srq ? &qp->srq->rq : &qp->rq;

	if (h->msn != qp->rx_msn[DDP_QN_SEND])
		return iw_fail_uv(err, DDP_ECODE_UT_MSN_RANGE,
				  "Send MSN out of range", h->msn,
				  qp->rx_msn[DDP_QN_SEND]);
	if (h->mo != 0)
		return iw_fail_uv(err, DDP_ECODE_UT_INVALID_MO,
				  "first Send segment: MO", h->mo, 0);
	if (qp->gated && qp->gate_used)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_UNSPECIFIED,
			       "a second Send before the peer authenticated");
	memset(&qp->rcv.w, 0, sizeof(qp->rcv.w));
	qp->rcv.peek_mode = qp->attr.peek_len > 0;
	qp->rcv.placed = false;
	qp->rcv.peek_got = 0;
	if (!qp->rcv.peek_mode) {
		if (!rq->count && qp->attr.wait_for_recv && !qp->srq)
			return -EAGAIN;	/* stall until iw_qp_post_recv */
		if (!rq->count)
			return iw_fail_u(err, DDP_ECODE_UT_NO_BUFFER,
					 "Send without a posted receive");
		iw_rcv_take(qp, rq);
	}
	/* counted once taken: a Send stalled for its receive comes again */
	qp->gate_used |= qp->gated;
	qp->rcv.active = true;
	qp->rcv.msn = h->msn;
	qp->rcv.got = 0;
	qp->rcv.op = h->opcode;
	qp->rcv.inv_stag = h->inv_stag;
	return 0;
}

static int iw_rx_send(struct iw_qp *qp, const struct iw_rx_seg *seg,
		      struct iw_rx_dst *dst, struct iw_err *err)
{
	const struct ddp_hdr *h = &seg->hdr;

	if (!qp->rcv.active) {
		int ret = iw_rx_send_new(qp, seg, err);

		if (ret)
			return ret;	/* -EAGAIN stalls, -EPROTO fails */
	} else if (h->msn != qp->rcv.msn) {
		return iw_fail_uv(err, DDP_ECODE_UT_MSN_RANGE,
				  "Send segment of another message: MSN",
				  h->msn, qp->rcv.msn);
	} else if (h->mo != qp->rcv.got) {
		return iw_fail_uv(err, DDP_ECODE_UT_INVALID_MO,
				  "Send segment at the wrong MO", h->mo,
				  qp->rcv.got);
	} else if (h->opcode != qp->rcv.op) {
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_OPCODE,
			       "opcode changes within a message");
	}
	if (!seg->payload_len)
		return 0;
	if (!qp->rcv.peek_mode &&
	    (uint64_t)qp->rcv.got + seg->payload_len > qp->rcv.w.len)
		return iw_fail_u(err, DDP_ECODE_UT_TOO_LONG,
				 "Send longer than the receive buffer");
	return iw_rcv_dst(qp, qp->rcv.got, dst, err);
}

/* RFC 5040 §5.1: a Send with Invalidate disables the named STag. */
static int iw_rx_invalidate(struct iw_qp *qp, uint32_t stag,
			    struct iw_err *err)
{
	struct iw_mr *mr = iw_rx_mr(qp, stag);

	if (!mr || mr->pd != qp->pd ||
	    !(mr->access & IW_ACC_REMOTE_INVALIDATE))
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			       RDMAP_ECODE_CANNOT_INVALIDATE,
			       "STag cannot be invalidated");
	mr->valid = false;
	return 0;
}

static int iw_rx_send_done(struct iw_qp *qp, const struct iw_rx_seg *seg,
			   struct iw_err *err)
{
	struct iw_wc wc = { .op = IW_WC_RECV };
	uint8_t op = qp->rcv.op;

	qp->rcv.got += seg->payload_len;
	if (qp->rcv.peek_mode && !qp->rcv.placed) {
		qp->rcv.peek_got = qp->rcv.got;
		if (seg->hdr.last && iw_rcv_place(qp, err))
			return -EPROTO;
	}
	if (!seg->hdr.last)
		return 0;
	if (op == RDMAP_SEND_INV || op == RDMAP_SEND_SE_INV) {
		if (iw_rx_invalidate(qp, qp->rcv.inv_stag, err))
			return -EPROTO;
		wc.flags |= IW_WC_F_INV;
		wc.inv_stag = qp->rcv.inv_stag;
	}
	if (op == RDMAP_SEND_SE || op == RDMAP_SEND_SE_INV)
		wc.flags |= IW_WC_F_SE;
	wc.ctx = qp->rcv.ctx;
	wc.byte_len = qp->rcv.got;
	qp->rcv.active = false;
	qp->rx_msn[DDP_QN_SEND]++;
	iw_qp_complete(qp, &wc);
	return 0;
}

/* ---- Immediate Data (RFC 7306): a message of queue 0 without payload.
 * Checked when its header is in; delivered once its CRC checked. */

static int iw_rx_imm(struct iw_qp *qp, const struct iw_rx_seg *seg,
		     struct iw_err *err)
{
	const struct ddp_hdr *h = &seg->hdr;
	struct iw_rq *rq = qp->srq ? &qp->srq->rq : &qp->rq;

	if (!qp->imm)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_OPCODE,
			       "Immediate Data, not negotiated");
	if (qp->gated)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_UNSPECIFIED,
			       "Immediate Data before the peer authenticated");
	if (qp->rcv.active || h->msn != qp->rx_msn[DDP_QN_SEND])
		return iw_fail_uv(err, DDP_ECODE_UT_MSN_RANGE,
				  "Immediate Data MSN out of range", h->msn,
				  qp->rx_msn[DDP_QN_SEND]);
	/* it may need a receive: wait for one, as a Send would */
	if (!qp->attr.peek_len && !rq->count && qp->attr.wait_for_recv &&
	    !qp->srq && !qp->imm_nowait)
		return -EAGAIN;
	return 0;
}

static int iw_rx_imm_done(struct iw_qp *qp, const struct iw_rx_seg *seg,
			  struct iw_err *err)
{
	struct iw_wc wc = { .op = IW_WC_RECV, .flags = IW_WC_F_IMM };
	struct iw_rq *rq = qp->srq ? &qp->srq->rq : &qp->rq;
	const struct iw_qp_ops *ops = qp->attr.ops;
	int ret = 1;

	if (seg->hdr.opcode == RDMAP_IMM_SE)
		wc.flags |= IW_WC_F_SE;
	if (ops && ops->imm)
		ret = ops->imm(qp->attr.arg, qp, seg->imm, wc.flags);
	if (ret < 0)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_UNSPECIFIED,
			       "Immediate Data refused by the ULP");
	qp->rx_msn[DDP_QN_SEND]++;
	if (!ret)
		return 0;
	if (qp->attr.peek_len || !rq->count)
		return iw_fail_u(err, DDP_ECODE_UT_NO_BUFFER,
				 "Immediate Data without a posted receive");
	wc.ctx = rq->q[rq->head].ctx;
	rq->head = iw_ring_next(rq->head, rq->size);
	rq->count--;
	wc.imm = seg->imm;
	iw_qp_complete(qp, &wc);
	return 0;
}

/* ---- Read Requests: RFC 5040 §4.4, checked once delivered (§5.5 #12) */

static int iw_rx_rreq_done(struct iw_qp *qp, const struct iw_rx_seg *seg,
			   struct iw_err *err)
{
	const struct rdmap_rreq *rr = &seg->rreq;
	struct iw_irqe *e;
	struct iw_mr *mr = NULL;

	if (seg->hdr.msn != qp->rx_msn[DDP_QN_RREQ])
		return iw_fail_uv(err, DDP_ECODE_UT_MSN_RANGE,
				  "Read Request MSN out of range", seg->hdr.msn,
				  qp->rx_msn[DDP_QN_RREQ]);
	if (qp->irq_count >= qp->ird || qp->irq_count >= qp->irq_cap)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_CATASTROPHIC_STREAM,
			       "more Read Requests than IRD");
	if (rr->size) {
		mr = iw_rx_mr(qp, rr->src_stag);
		if (!mr)
			return iw_fail(err, IW_LAYER_RDMAP,
				       RDMAP_ETYPE_REMOTE_PROT,
				       RDMAP_ECODE_INVALID_STAG,
				       "Read from an invalid STag");
		if (mr->pd != qp->pd)
			return iw_fail(err, IW_LAYER_RDMAP,
				       RDMAP_ETYPE_REMOTE_PROT,
				       RDMAP_ECODE_STAG_NOT_ASSOC,
				       "Read STag of another protection domain");
		if (!(mr->access & IW_ACC_REMOTE_READ))
			return iw_fail(err, IW_LAYER_RDMAP,
				       RDMAP_ETYPE_REMOTE_PROT,
				       RDMAP_ECODE_ACCESS,
				       "Read from a region without remote read");
		if (rr->src_to + rr->size < rr->src_to)
			return iw_fail(err, IW_LAYER_RDMAP,
				       RDMAP_ETYPE_REMOTE_PROT,
				       RDMAP_ECODE_TO_WRAP, "Read TO wraps");
		if (rr->src_to < mr->base_to ||
		    rr->src_to + rr->size > mr->base_to + mr->len)
			return iw_fail(err, IW_LAYER_RDMAP,
				       RDMAP_ETYPE_REMOTE_PROT,
				       RDMAP_ECODE_BASE_BOUNDS,
				       "Read outside the region");
	}
	e = &qp->irq[iw_ring_at(qp->irq_head, qp->irq_count, qp->irq_cap)];
	e->atomic = false;
	e->rr = *rr;
	e->sent = 0;
	qp->irq_count++;
	qp->rx_msn[DDP_QN_RREQ]++;
	return 0;
}

/* ---- Atomic Requests (RFC 7306): checked once delivered, like Read
 * Requests, and answered in arrival order together with them */

static int iw_fail_aprot(struct iw_err *err, uint8_t ecode, const char *why)
{
	return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT, ecode,
		       why);
}

static int iw_rx_areq_done(struct iw_qp *qp, const struct iw_rx_seg *seg,
			   struct iw_err *err)
{
	const struct rdmap_areq *a = &seg->areq;
	struct iw_irqe *e;
	struct iw_mr *mr;

	if (!qp->atomics)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_OPCODE,
			       "Atomic Request, atomics not enabled");
	if (seg->hdr.msn != qp->rx_msn[DDP_QN_AREQ])
		return iw_fail_uv(err, DDP_ECODE_UT_MSN_RANGE,
				  "Atomic Request MSN out of range",
				  seg->hdr.msn, qp->rx_msn[DDP_QN_AREQ]);
	if (qp->irq_count >= qp->ird || qp->irq_count >= qp->irq_cap)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_CATASTROPHIC_STREAM,
			       "more Read and Atomic Requests than IRD");
	mr = iw_rx_mr(qp, a->stag);
	if (!mr)
		return iw_fail_aprot(err, RDMAP_ECODE_INVALID_STAG,
				     "Atomic on an invalid STag");
	if (mr->pd != qp->pd)
		return iw_fail_aprot(err, RDMAP_ECODE_STAG_NOT_ASSOC,
				     "Atomic STag of another PD");
	if (!(mr->access & IW_ACC_REMOTE_ATOMIC))
		return iw_fail_aprot(err, RDMAP_ECODE_ACCESS,
				     "Atomic without remote atomic access");
	if (a->to + 8 < a->to)
		return iw_fail_aprot(err, RDMAP_ECODE_TO_WRAP,
				     "Atomic TO wraps");
	if (a->to < mr->base_to || a->to + 8 > mr->base_to + mr->len)
		return iw_fail_aprot(err, RDMAP_ECODE_BASE_BOUNDS,
				     "Atomic outside the region");
	/* the word is updated in place, so it must be a whole host word */
	if ((uintptr_t)(mr->addr + (a->to - mr->base_to)) & 7)
		return iw_fail_aprot(err, RDMAP_ECODE_BASE_BOUNDS,
				     "Atomic target not 8-octet aligned");
	e = &qp->irq[iw_ring_at(qp->irq_head, qp->irq_count, qp->irq_cap)];
	memset(e, 0, sizeof(*e));
	e->atomic = true;
	e->ar = *a;
	qp->irq_count++;
	qp->rx_msn[DDP_QN_AREQ]++;
	return 0;
}

/* The requester's side: responses come in request order, so each must
 * answer the atomic at the head of the ORQ. */
static int iw_rx_aresp_done(struct iw_qp *qp, const struct iw_rx_seg *seg,
			    struct iw_err *err)
{
	const struct rdmap_aresp *r = &seg->aresp;
	struct iw_orqe *o = &qp->orq[qp->orq_head];
	struct iw_swqe *w;

	if (seg->hdr.msn != qp->rx_msn[DDP_QN_ARESP])
		return iw_fail_uv(err, DDP_ECODE_UT_MSN_RANGE,
				  "Atomic Response MSN out of range",
				  seg->hdr.msn, qp->rx_msn[DDP_QN_ARESP]);
	if (!qp->orq_count || !o->atomic)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_OPCODE,
			       "Atomic Response where none is due");
	if (r->req_id != o->req_id)
		return iw_fail_v(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
				 RDMAP_ECODE_OPCODE,
				 "Atomic Response for another request",
				 r->req_id, o->req_id);
	w = iw_orq_wqe(qp, o);
	if (w->nsge)
		memcpy(w->sge[0].addr, &r->orig, sizeof(r->orig));
	qp->orq_head = iw_ring_next(qp->orq_head, qp->orq_cap);
	qp->orq_count--;
	qp->rx_msn[DDP_QN_ARESP]++;
	w->done = true;
	w->status = IW_WC_SUCCESS;
	iw_qp_sq_complete_ready(qp);
	return 0;
}

/* ---- the RTR (RFC 6581 §9.2): first FPDU at a waiting responder */

static int iw_rx_rtr(struct iw_qp *qp, const struct iw_rx_seg *seg,
		     struct iw_err *err)
{
	const struct ddp_hdr *h = &seg->hdr;
	bool zero = !seg->payload_len && h->last;
	uint8_t type = 0;

	if (!qp->p2p)
		return 0;	/* client-server: any FPDU unblocks us */
	if (h->opcode == RDMAP_WRITE && zero)
		type = IW_RTR_WRITE;
	else if (h->opcode == RDMAP_READ_REQ && seg->rreq.size == 0)
		type = IW_RTR_READ;
	else if (h->opcode == RDMAP_SEND && zero &&
		 h->msn == qp->rx_msn[DDP_QN_SEND])
		type = IW_RTR_SEND;
	if (!(type & qp->rtr_set))
		return iw_fail(err, IW_LAYER_LLP, MPA_ETYPE, MPA_ECODE_NO_RTR,
			       type ? "RTR of a type we did not accept" :
				      "first FPDU is not an RTR");
	qp->rtr_used = type;
	return 0;
}

static int iw_qprx_start(void *arg, const struct iw_rx_seg *seg,
			 struct iw_rx_dst *dst, struct iw_err *err)
{
	struct iw_qp *qp = arg;

	/* a Terminate instead of the RTR is the peer's verdict, not ours */
	if (qp->cm == CM_WAIT_RTR && seg->hdr.opcode != RDMAP_TERMINATE) {
		if (iw_rx_rtr(qp, seg, err))
			return -EPROTO;
		if (!qp->p2p)
			iw_qp_established(qp);
		else if (qp->rtr_used == IW_RTR_SEND)
			return 0;	/* consumed without a receive */
	}
	switch (seg->hdr.opcode) {
	case RDMAP_WRITE:
		return iw_rx_write(qp, seg, dst, err);
	case RDMAP_READ_RESP:
		return iw_rx_rresp(qp, seg, dst, err);
	case RDMAP_SEND:
	case RDMAP_SEND_INV:
	case RDMAP_SEND_SE:
	case RDMAP_SEND_SE_INV:
		return iw_rx_send(qp, seg, dst, err);
	case RDMAP_IMM:
	case RDMAP_IMM_SE:
		return iw_rx_imm(qp, seg, err);
	default:
		return 0;	/* Read Request, Terminate, atomics: headers */
	}
}

static int iw_qprx_more(void *arg, const struct iw_rx_seg *seg, uint32_t off,
			struct iw_rx_dst *dst, struct iw_err *err)
{
	struct iw_qp *qp = arg;

	switch (seg->hdr.opcode) {
	case RDMAP_READ_RESP:
		return iw_rx_rresp_dst(qp, (uint64_t)qp->orq[qp->orq_head].got +
					       off, dst, err);
	case RDMAP_WRITE:
		return iw_fail_t(err, DDP_ECODE_T_BASE_BOUNDS,
				 "Write outside the region");
	default:
		return iw_rcv_dst(qp, (uint64_t)qp->rcv.got + off, dst, err);
	}
}

static int iw_qprx_done(void *arg, const struct iw_rx_seg *seg,
			struct iw_err *err)
{
	struct iw_qp *qp = arg;
	const struct ddp_hdr *h = &seg->hdr;

	qp->stats.rx_fpdus++;
	/* what an empty read will mean: more of a long transfer (ask
	 * poll() first), or after a small message of one FPDU, a reply */
	if (!h->last || seg->payload_len >= RX_DIRECT_MIN)
		qp->rx_stream = true;
	else if (!qp->rx_mid_msg)
		qp->rx_stream = false;
	qp->rx_mid_msg = !h->last;
	if (qp->cm == CM_WAIT_RTR && h->opcode != RDMAP_TERMINATE) {
		iw_qp_established(qp);
		if (qp->rtr_used == IW_RTR_SEND) {
			qp->rx_msn[DDP_QN_SEND]++;
			return 0;
		}
		if (qp->rtr_used == IW_RTR_WRITE)
			return 0;	/* zero-length: nothing to track */
	}
	switch (h->opcode) {
	case RDMAP_WRITE:
		if (!qp->tag.active)
			qp->tag.wlen = 0;
		qp->tag.wlen += seg->payload_len;
		if (h->last)
			qp->rx_write_len = qp->tag.wlen;
		/* a one-segment Write of no octets names no region */
		if (h->last)
			iw_qp_target(qp, true, !qp->tag.active &&
					       !seg->payload_len ? 0 : h->stag);
		qp->tag.active = !h->last;
		qp->tag.op = RDMAP_WRITE;
		qp->tag.stag = h->stag;
		qp->tag.next_to = h->to + seg->payload_len;
		return 0;
	case RDMAP_READ_RESP:
		return iw_rx_rresp_done(qp, seg, err);
	case RDMAP_READ_REQ:
		return iw_rx_rreq_done(qp, seg, err);
	case RDMAP_ATOMIC_REQ:
		return iw_rx_areq_done(qp, seg, err);
	case RDMAP_ATOMIC_RESP:
		return iw_rx_aresp_done(qp, seg, err);
	case RDMAP_IMM:
	case RDMAP_IMM_SE:
		return iw_rx_imm_done(qp, seg, err);
	case RDMAP_TERMINATE:
		iw_qp_remote_fatal(qp, &seg->term, seg->raw + DDP_UNTAGGED_HDR,
				   seg->raw_len - DDP_UNTAGGED_HDR);
		return -EPROTO;
	default:
		return iw_rx_send_done(qp, seg, err);
	}
}

const struct iw_rx_ops iw_qprx_ops = {
	.seg_start = iw_qprx_start,
	.seg_more = iw_qprx_more,
	.seg_done = iw_qprx_done,
};

/* ---- the socket side */

static void iw_rx_failed(struct iw_qp *qp)
{
	if (qp->cm == CM_ERROR)
		return;		/* a Terminate from the peer got here first */
	iw_qp_fatal(qp, &qp->rx.err, &qp->rx.seg, true);
}

/* The peer's FIN. Between FPDUs it is a close; inside one, an error. */
static void iw_rx_eof(struct iw_qp *qp)
{
	struct iw_err err;

	qp->rx_eof = true;
	if (!iw_rx_at_boundary(&qp->rx) || qp->cm == CM_WAIT_RTR ||
	    qp->cm == CM_SEND_RTR) {
		iw_fail(&err, IW_LAYER_LLP, MPA_ETYPE, MPA_ECODE_CLOSED,
			"TCP connection closed mid-stream");
		iw_qp_fatal(qp, &err, NULL, false);
		return;
	}
	if (qp->cm == CM_RTS) {
		qp->cm = CM_CLOSING;
		qp->deadline = iw_now_ms() + qp->param.timeout_ms;
	}
}

/* Feeds what is staged; false when the stream failed or stalled. */
static bool iw_rx_drain_stage(struct iw_qp *qp)
{
	while (qp->stage_len) {
		const uint8_t *p = qp->stage + qp->stage_off;
		uint8_t *buf;
		size_t n = iw_rx_whole_len(&qp->rx, p, qp->stage_len), used;

		if (n) {
			/* taken before the callbacks run: the completion of
			 * this FPDU may pump this QP again */
			qp->stage_off += n;
			qp->stage_len -= n;
			if (iw_rx_whole(&qp->rx, p, n, &used)) {
				iw_rx_failed(qp);
				return false;
			}
			if (used < n) {	/* stalled: nothing ran */
				qp->stage_off -= n - used;
				qp->stage_len += n - used;
			}
			continue;
		}
		iw_rx_want(&qp->rx, &buf, &n);
		if (!n) {
			if (qp->rx.state != IW_RX_STALLED)
				iw_rx_failed(qp);
			return false;
		}
		if (n > qp->stage_len)
			n = qp->stage_len;
		memcpy(buf, qp->stage + qp->stage_off, n);
		qp->stage_off += n;
		qp->stage_len -= n;
		if (iw_rx_advance(&qp->rx, n)) {
			iw_rx_failed(qp);
			return false;
		}
	}
	qp->stage_off = 0;
	return qp->rx.state != IW_RX_STALLED;
}

/* A read that failed; true when it is worth trying again at once. */
static bool iw_rx_recv_failed(struct iw_qp *qp)
{
	struct iw_err err;

	if (errno == EINTR)
		return true;
	if (errno == EAGAIN || errno == EWOULDBLOCK) {
		qp->stats.rx_empty++;
		/* only while long messages stream in: a small-message
		 * ping-pong reads at once */
		qp->rx_dry = qp->rx_stream || !iw_rx_at_boundary(&qp->rx);
		return false;
	}
	iw_fail(&err, IW_LAYER_LLP, MPA_ETYPE, MPA_ECODE_CLOSED,
		"TCP receive failed");
	iw_qp_fatal(qp, &err, NULL, false);
	return false;
}

/*
 * A long Read Response comes in FPDUs of one size, back to back, into the
 * Read's own buffers: while the rest of one payload is read in place, the
 * next few are guessed to continue it, so that one recvmsg takes several
 * (MPA's 16-bit length keeps an FPDU under 64 KiB). Each guess names the
 * octets it places into: the next piece of the Read's sink, contiguous,
 * no longer than the Read's remainder, which only that Read's Response
 * may write. The header read before each guessed payload is compared with
 * the guess before anything else is done with it; when it differs, all
 * that was read from there on is moved to a stage of its own and fed as
 * any staged octets, so a wrong guess costs a copy, never an octet.
 */
struct iw_rx_guess {
	uint8_t *buf;		/* where its payload goes */
	uint32_t len;		/* its payload */
	uint64_t to;		/* its TO */
	uint32_t stag;		/* the Read's sink */
	uint32_t trail;		/* pad and CRC of the FPDU before it */
	size_t at;		/* stage offset of that trailer and its header */
};

/* What one read asks for: with direct, len octets of payload in place at
 * buf, then ng guessed FPDUs, then the stage from end on; else the stage
 * alone. */
struct iw_rx_read {
	uint8_t *buf;
	size_t len;
	bool direct;
	int ng;
	size_t end;
	struct iw_rx_guess g[RX_GUESS_MAX];
};

/* Guesses the FPDUs after the current one into r (r->ng, r->end). */
static void iw_rx_guesses(struct iw_qp *qp, struct iw_rx_read *r)
{
	const struct iw_rx *rx = &qp->rx;
	const struct iw_rx_seg *seg = &rx->seg;
	const struct iw_orqe *o;
	struct iw_swqe *w;
	uint32_t trail = mpa_pad(seg->ulpdu_len) + MPA_CRC_LEN;
	uint64_t off;

	if (rx->markers || rx->discard || !seg->hdr.tagged ||
	    seg->hdr.opcode != RDMAP_READ_RESP || seg->hdr.last ||
	    r->len != rx->payload_left || !qp->orq_count)
		return;
	o = &qp->orq[qp->orq_head];
	w = iw_orq_wqe(qp, o);
	if (!w || o->atomic || seg->hdr.stag != o->sink_stag)
		return;
	off = (uint64_t)o->got + seg->payload_len;
	while (r->ng < RX_GUESS_MAX && off < o->len) {
		struct iw_rx_dst d;
		uint64_t left = o->len - off;
		uint32_t l = left < seg->payload_len ? (uint32_t)left :
						       seg->payload_len;

		if (!iw_sge_at(w->sge, w->nsge, off, &d) || !d.buf ||
		    d.len < l)
			break;
		r->g[r->ng++] = (struct iw_rx_guess){
			.buf = d.buf, .len = l, .to = o->sink_to + off,
			.stag = o->sink_stag, .trail = trail, .at = r->end };
		r->end += trail + RX_GUESS_HDR;
		trail = mpa_pad(DDP_TAGGED_HDR + l) + MPA_CRC_LEN;
		off += l;
	}
}

/* What the next read asks for; false when the stream wants nothing
 * (stalled, or failed). */
static bool iw_rx_plan(struct iw_qp *qp, struct iw_rx_read *r)
{
	iw_rx_want(&qp->rx, &r->buf, &r->len);
	if (!r->len)
		return false;
	/* after a large segment the next is likely large too */
	r->direct = qp->rx.state == IW_RX_PAYLOAD && r->len >= RX_DIRECT_MIN;
	r->ng = 0;
	r->end = 0;
	if (r->direct)
		iw_rx_guesses(qp, r);
	return true;
}

/* Whether the header at p is the one g guessed. */
static bool iw_rx_guess_ok(const uint8_t *p, const struct iw_rx_guess *g)
{
	struct ddp_hdr h;
	struct iw_err err;

	return iw_get16(p) == DDP_TAGGED_HDR + g->len &&
	       ddp_hdr_size(p[MPA_FPDU_HDR]) == DDP_TAGGED_HDR &&
	       !ddp_hdr_parse(p + MPA_FPDU_HDR, DDP_TAGGED_HDR, &h, &err) &&
	       h.opcode == RDMAP_READ_RESP && h.stag == g->stag &&
	       h.to == g->to;
}

/* One read: the rest of the current payload in place, then for each
 * guess the trailer and header before it (staged) and its payload in
 * place, then what follows (staged); or the stage alone. */
static ssize_t iw_rx_recv(struct iw_qp *qp, const struct iw_rx_read *r,
			  size_t *asked)
{
	struct iovec v[2 + 2 * RX_GUESS_MAX];
	struct msghdr mh = { .msg_iov = v };
	int i, k = 0;

	if (!r->direct) {
		*asked = qp->rx_big ? RX_HDR_READ : IW_RX_STAGE;
		return recv(qp->fd, qp->stage, *asked, MSG_DONTWAIT);
	}
	v[k++] = (struct iovec){ r->buf, r->len };
	for (i = 0; i < r->ng; i++) {
		v[k++] = (struct iovec){ qp->stage + r->g[i].at,
					 r->g[i].trail + RX_GUESS_HDR };
		v[k++] = (struct iovec){ r->g[i].buf, r->g[i].len };
	}
	v[k++] = (struct iovec){ qp->stage + r->end, RX_HDR_READ };
	mh.msg_iovlen = (size_t)k;
	*asked = 0;
	while (k--)
		*asked += v[k].iov_len;
	return recvmsg(qp->fd, &mh, MSG_DONTWAIT);
}

/*
 * A guess was wrong: the n octets read from guess j's staged trailer on
 * (or from its payload, when its header was taken) become the stage, in
 * stream order, and are fed from there. They are moved before a byte of
 * them is used, since feeding them places payload where they lie.
 */
static bool iw_rx_spill(struct iw_qp *qp, const struct iw_rx_read *r, int j,
			bool hdr_taken, size_t n)
{
	size_t cap = n > IW_RX_STAGE ? n : IW_RX_STAGE, at = 0, take;
	uint8_t *sp = malloc(cap);
	struct iw_err err;

	if (!sp) {
		iw_fail(&err, IW_LAYER_LLP, MPA_ETYPE, MPA_ECODE_CLOSED,
			"no memory for the receive stage");
		iw_qp_fatal(qp, &err, NULL, false);
		return false;
	}
	for (; j < r->ng && n; j++, hdr_taken = false) {
		const struct iw_rx_guess *g = &r->g[j];

		if (!hdr_taken) {
			take = g->trail + RX_GUESS_HDR;
			take = n < take ? n : take;
			memcpy(sp + at, qp->stage + g->at, take);
			at += take;
			n -= take;
		}
		take = n < g->len ? n : g->len;
		memcpy(sp + at, g->buf, take);
		at += take;
		n -= take;
	}
	memcpy(sp + at, qp->stage + r->end, n);
	at += n;
	iw_rx_stage_put(qp);
	qp->stage = sp;
	qp->stage_big = true;
	qp->stage_off = 0;
	qp->stage_len = at;
	return iw_rx_drain_stage(qp);
}

/* Feeds n octets read as r asked; false when the pump should stop. */
static bool iw_rx_take(struct iw_qp *qp, const struct iw_rx_read *r,
		       size_t n, bool drained)
{
	int j;

	qp->rx_big = r->direct;
	if (r->direct) {
		size_t placed = n < r->len ? n : r->len;

		if (iw_rx_advance(&qp->rx, placed)) {
			iw_rx_failed(qp);
			return false;
		}
		if (n == placed)
			return !drained;
		n -= placed;
	}
	for (j = 0; j < r->ng && n; j++) {
		const struct iw_rx_guess *g = &r->g[j];
		size_t hl = g->trail + RX_GUESS_HDR;
		size_t a = n < hl ? n : hl, want;
		uint8_t *buf;

		/* only a header that is the one guessed may go first:
		 * anything else must not see the payload's octets placed */
		if (n > hl && !iw_rx_guess_ok(qp->stage + g->at + g->trail, g))
			return iw_rx_spill(qp, r, j, false, n) && !drained;
		/* the previous FPDU's trailer (not its Read's last, which
		 * is not guessed past: no completion runs here) and the
		 * guessed header */
		qp->stage_off = g->at;
		qp->stage_len = a;
		if (!iw_rx_drain_stage(qp))
			return false;
		n -= a;
		if (!n)
			break;
		a = n < g->len ? n : g->len;
		iw_rx_want(&qp->rx, &buf, &want);
		if (qp->rx.state != IW_RX_PAYLOAD || buf != g->buf || want < a)
			return iw_rx_spill(qp, r, j, true, n) && !drained;
		if (iw_rx_advance(&qp->rx, a)) {
			iw_rx_failed(qp);
			return false;
		}
		n -= a;
	}
	qp->stage_off = r->end;
	qp->stage_len = n;
	return iw_rx_drain_stage(qp) && !drained;
}

/* The stream can be read now: what is staged went through and, after an
 * empty read, poll() says more has come. */
static bool iw_rx_ready(struct iw_qp *qp)
{
	if (qp->stage_len || qp->rx_dry)
		return iw_rx_drain_stage(qp) &&
		       !iw_sock_still(qp->fd, &qp->rx_dry, POLLIN);
	return qp->rx.state != IW_RX_STALLED;
}

/* What the read just taken made its upcalls post (iw_qp_post_send),
 * in one sendmsg. */
static void iw_rx_push_deferred(struct iw_qp *qp)
{
	if (!qp->tx_deferred)
		return;
	qp->tx_deferred = false;
	iw_qp_push(qp);
}

/*
 * Reads what the socket has. Headers and small payloads go through the
 * staging buffer (one recv for many FPDUs); large payload pieces are
 * received in place. Bounded per call so one busy peer cannot starve the
 * others. A stalled stream (no receive posted yet) reads nothing.
 * After a read found the socket empty mid-transfer, poll() decides: a
 * receiver that keeps the socket lock busy with empty reads makes the
 * sender's segments wait in the backlog, to be processed late by the
 * receiver itself.
 */
static void iw_rx_pump_stage(struct iw_qp *qp)
{
	size_t budget = 8u << 20;

	if (!iw_rx_ready(qp))
		return;
	while (qp->fd >= 0 && !qp->rx_eof && budget &&
	       qp->cm != CM_ERROR && qp->cm != CM_CLOSED) {
		struct iw_rx_read r;
		size_t asked;
		ssize_t n;
		bool cut;

		if (!iw_rx_plan(qp, &r)) {
			if (qp->rx.state != IW_RX_STALLED)
				iw_rx_failed(qp);
			break;
		}
		n = iw_rx_recv(qp, &r, &asked);
		if (n < 0 && iw_rx_recv_failed(qp))
			continue;
		if (n <= 0) {
			if (n == 0)
				iw_rx_eof(qp);
			break;
		}
		/* A short read emptied the socket: asking again would only
		 * say EAGAIN, one more syscall before every reply. */
		cut = (size_t)n < asked;
		qp->stats.rx_calls++;
		qp->stats.rx_short += cut;
		budget -= (size_t)n < budget ? (size_t)n : budget;
		if (!iw_rx_take(qp, &r, (size_t)n, cut))
			break;
		iw_rx_push_deferred(qp);
	}
}

/* Gives the stage back: to the pool, or to the heap when it is a spill
 * (iw_rx_spill) of another size. */
void iw_rx_stage_put(struct iw_qp *qp)
{
	if (qp->stage_big)
		free(qp->stage);
	else
		iw_pd_give(&qp->pd->stage_pool, qp->stage);
	qp->stage = NULL;
	qp->stage_big = false;
}

/* Holds a stage from the PD's pool for the pump; an empty one goes back
 * when the outermost pump of the QP ends. */
int iw_rx_pump(struct iw_qp *qp)
{
	struct iw_err err;

	if (!qp->stage &&
	    !(qp->stage = iw_pd_take(&qp->pd->stage_pool, IW_RX_STAGE))) {
		iw_fail(&err, IW_LAYER_LLP, MPA_ETYPE, MPA_ECODE_CLOSED,
			"no memory for the receive stage");
		iw_qp_fatal(qp, &err, NULL, false);
		return 0;
	}
	qp->rx_depth++;
	iw_rx_pump_stage(qp);
	if (!--qp->rx_depth) {
		if (!qp->stage_len)
			iw_rx_stage_put(qp);
		iw_rx_push_deferred(qp);
	}
	return 0;
}

bool iw_rx_stalled(const struct iw_qp *qp)
{
	return qp->rx.state == IW_RX_STALLED;
}
