/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Transmit pump: picks the next FPDU (control frames and Terminates
 * first, then the RTR, then the message in progress, then Read Responses,
 * then the send queue), frames it as iovecs [length + headers | payload |
 * pad + CRC] and writes it with non-blocking sendmsg, resuming after
 * short writes. Messages are never interleaved at FPDU level.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "iwarp/crc32c.h"
#include "iw_priv.h"

static bool iw_tx_data_allowed(const struct iw_qp *qp)
{
	return qp->cm == CM_RTS || qp->cm == CM_CLOSING;
}

static struct iw_swqe *iw_sq_at(struct iw_qp *qp, uint32_t seq)
{
	return &qp->sq[seq & (qp->sq_size - 1)];
}

/* Send-queue entry seq may start now: ORD and fences respected. */
static bool iw_tx_sq_can_start(const struct iw_qp *qp, uint32_t seq)
{
	const struct iw_swqe *w;

	if (seq == qp->sq_tail)
		return false;
	w = &qp->sq[seq & (qp->sq_size - 1)];
	if ((w->flags & IW_WR_FENCE) && qp->orq_count)
		return false;
	if ((w->op == IW_WR_READ || iw_wr_atomic(w->op)) &&
	    qp->orq_count >= qp->orq_cap)
		return false;
	return true;
}

/* The next send-queue entry may start: ORD and fences respected. */
static bool iw_tx_sq_ready(const struct iw_qp *qp)
{
	return iw_tx_sq_can_start(qp, qp->sq_tx);
}

bool iw_tx_pending(const struct iw_qp *qp)
{
	if (qp->fd < 0)
		return false;
	if (qp->tx_left || qp->ctrl_off < qp->ctrl_len)
		return true;
	if (qp->tx_hold && iw_now_ms() < qp->tx_hold)
		return false;
	if (qp->cm == CM_SEND_RTR)
		return qp->rtr_pending;
	if (!iw_tx_data_allowed(qp))
		return false;
	return qp->tx_sq_busy || qp->tx_irq_busy || qp->irq_count ||
	       iw_tx_sq_ready(qp);
}

/* iovecs for `len` payload octets starting `off` into a gather list */
static int iw_sge_iov(const struct iw_sge *sge, int nsge, uint32_t off,
		      uint32_t len, struct iovec *iov)
{
	int i, n = 0;

	for (i = 0; i < nsge && len; i++) {
		uint32_t take;

		if (off >= sge[i].len) {
			off -= sge[i].len;
			continue;
		}
		take = sge[i].len - off;
		if (take > len)
			take = len;
		iov[n].iov_base = (uint8_t *)sge[i].addr + off;
		iov[n].iov_len = take;
		n++;
		len -= take;
		off = 0;
	}
	return n;
}

/*
 * Frames one FPDU from tx_hdr (hlen octets of DDP/RDMAP header) and
 * payload iovecs already in txv[1..npay]. Without markers the payload is
 * sent in place; with markers the FPDU is assembled in tx_bounce.
 */
static void iw_tx_frame(struct iw_qp *qp, size_t hlen, int npay)
{
	size_t ulen = hlen, i;
	struct iovec ul[IW_MAX_SGE + 1];

	for (i = 1; i <= (size_t)npay; i++)
		ulen += qp->txv[i].iov_len;
	iw_put16(qp->tx_hdr, (uint16_t)ulen);
	if (qp->markers_tx) {
		size_t off = hlen;
		ssize_t n;

		memcpy(qp->tx_ulpdu, qp->tx_hdr + MPA_FPDU_HDR, hlen);
		for (i = 1; i <= (size_t)npay; i++) {
			memcpy(qp->tx_ulpdu + off, qp->txv[i].iov_base,
			       qp->txv[i].iov_len);
			off += qp->txv[i].iov_len;
		}
		n = mpa_fpdu_build(qp->tx_bounce, (size_t)-1, qp->tx_ulpdu,
				   ulen, qp->crc, true, &qp->tx_mpos);
		qp->txv[0].iov_base = qp->tx_bounce;
		qp->txv[0].iov_len = (size_t)n;
		qp->txcnt = 1;
		qp->tx_left = (size_t)n;
		return;
	}
	ul[0].iov_base = qp->tx_hdr + MPA_FPDU_HDR;
	ul[0].iov_len = hlen;
	memcpy(ul + 1, qp->txv + 1, (size_t)npay * sizeof(*ul));
	qp->txv[0].iov_base = qp->tx_hdr;
	qp->txv[0].iov_len = MPA_FPDU_HDR + hlen;
	qp->txv[npay + 1].iov_base = qp->tx_trl;
	qp->txv[npay + 1].iov_len = mpa_fpdu_trailer(qp->tx_trl, qp->tx_hdr,
						     ul, npay + 1, qp->crc);
	qp->txcnt = npay + 2;
	qp->tx_left = MPA_FPDU_HDR + ulen + qp->txv[npay + 1].iov_len;
}

static size_t iw_tx_hdr(struct iw_qp *qp, const struct ddp_hdr *h)
{
	return (size_t)ddp_hdr_build(qp->tx_hdr + MPA_FPDU_HDR,
				     sizeof(qp->tx_hdr) - MPA_FPDU_HDR, h);
}

static void iw_tx_untagged(struct iw_qp *qp, uint8_t op, uint32_t qn,
			   uint32_t msn, uint32_t mo, bool last,
			   uint32_t inv, const uint8_t *extra, size_t elen,
			   int npay)
{
	struct ddp_hdr h = {
		.last = last, .ddp_ver = DDP_VERSION,
		.rdmap_ver = RDMAP_VERSION, .opcode = op, .qn = qn,
		.msn = msn, .mo = mo, .inv_stag = inv,
	};
	size_t hlen = iw_tx_hdr(qp, &h);

	if (elen)
		memcpy(qp->tx_hdr + MPA_FPDU_HDR + hlen, extra, elen);
	iw_tx_frame(qp, hlen + elen, npay);
}

static void iw_tx_tagged(struct iw_qp *qp, uint8_t op, uint32_t stag,
			 uint64_t to, bool last, int npay)
{
	struct ddp_hdr h = {
		.tagged = true, .last = last, .ddp_ver = DDP_VERSION,
		.rdmap_ver = RDMAP_VERSION, .opcode = op, .stag = stag,
		.to = to,
	};

	iw_tx_frame(qp, iw_tx_hdr(qp, &h), npay);
}

static uint32_t iw_sink_stag(struct iw_qp *qp)
{
	return (uint32_t)(iw_random(qp->pd->dev) >> 32) | 1;
}

/* Queues the Read Request of a Read (or the zero-length Read RTR). */
static void iw_tx_rreq(struct iw_qp *qp, int32_t sq_idx, uint32_t len,
		       uint32_t src_stag, uint64_t src_to)
{
	struct iw_orqe *o;
	struct rdmap_rreq rr = {
		.sink_stag = iw_sink_stag(qp),
		.sink_to = 0,
		.size = len,
		.src_stag = src_stag,
		.src_to = src_to,
	};
	uint8_t extra[RDMAP_RREQ_LEN];

	o = &qp->orq[iw_ring_at(qp->orq_head, qp->orq_count, qp->orq_cap)];
	qp->orq_count++;
	o->sq_idx = sq_idx;
	o->atomic = false;
	o->sink_stag = rr.sink_stag;
	o->sink_to = rr.sink_to;
	o->len = len;
	o->got = 0;
	rdmap_rreq_build(extra, sizeof(extra), &rr);
	iw_tx_untagged(qp, RDMAP_READ_REQ, DDP_QN_RREQ, qp->rreq_msn++, 0,
		       true, 0, extra, sizeof(extra), 0);
}

/* Queues the Atomic Request of an atomic; its response must name the
 * Request Identifier kept in the ORQ entry. */
static void iw_tx_areq(struct iw_qp *qp, int32_t sq_idx,
		       const struct iw_swqe *w)
{
	struct iw_orqe *o;
	struct rdmap_areq a = {
		.op = w->op == IW_WR_ATOMIC_CSWAP ? RDMAP_ATOMIC_CMP_SWAP :
						    RDMAP_ATOMIC_FETCH_ADD,
		.req_id = qp->atomic_id++,
		.stag = w->rstag,
		.to = w->rto,
		.add_swap = w->add_swap,
		.add_swap_mask = w->add_swap_mask,
	};
	uint8_t extra[RDMAP_AREQ_LEN];

	if (a.op == RDMAP_ATOMIC_CMP_SWAP) {
		a.compare = w->compare;
		a.compare_mask = w->compare_mask;
	}
	o = &qp->orq[iw_ring_at(qp->orq_head, qp->orq_count, qp->orq_cap)];
	qp->orq_count++;
	memset(o, 0, sizeof(*o));
	o->sq_idx = sq_idx;
	o->atomic = true;
	o->req_id = a.req_id;
	rdmap_areq_build(extra, sizeof(extra), &a);
	iw_tx_untagged(qp, RDMAP_ATOMIC_REQ, DDP_QN_AREQ, qp->areq_msn++, 0,
		       true, 0, extra, sizeof(extra), 0);
}

/* RFC 6581 §7.1 zero-length RTR; Write and Read use STag 1 (siw) */
static void iw_tx_build_rtr(struct iw_qp *qp)
{
	qp->tx_src = TX_RTR;
	switch (qp->rtr_used) {
	case IW_RTR_WRITE:
		iw_tx_tagged(qp, RDMAP_WRITE, 1, 0, true, 0);
		break;
	case IW_RTR_READ:
		iw_tx_rreq(qp, -1, 0, 1, 0);
		break;
	default:
		iw_tx_untagged(qp, RDMAP_SEND, DDP_QN_SEND, qp->sq_msn++, 0,
			       true, 0, NULL, 0, 0);
		break;
	}
}

static uint32_t iw_seg_room(const struct iw_qp *qp, bool tagged)
{
	return qp->mulpdu - (tagged ? DDP_TAGGED_HDR : DDP_UNTAGGED_HDR);
}

/* iw_seg_room for the next FPDU of a message of len octets, sent of them
 * out: before the first of one that takes several, the MSS is asked
 * again (iw_qp_mss_refresh). */
static uint32_t iw_msg_room(struct iw_qp *qp, bool tagged, uint32_t len,
			    uint32_t sent)
{
	if (!sent && len > iw_seg_room(qp, tagged))
		iw_qp_mss_refresh(qp);
	return iw_seg_room(qp, tagged);
}

/* RFC 7306 FetchAdd: a set mask bit i drops the carry out of bit i. */
static uint64_t iw_masked_add(uint64_t a, uint64_t b, uint64_t mask)
{
	while (b) {
		uint64_t carry = a & b & ~mask;

		a ^= b;
		b = carry << 1;
	}
	return a;
}

/* Applies an Atomic Request to its target; returns the value before.
 * A CAS loop keeps it atomic against other threads using the word. */
static uint64_t iw_atomic_exec(uint64_t *p, const struct rdmap_areq *a)
{
	uint64_t old = __atomic_load_n(p, __ATOMIC_ACQUIRE), new;

	do {
		if (a->op == RDMAP_ATOMIC_FETCH_ADD)
			new = iw_masked_add(old, a->add_swap,
					    a->add_swap_mask);
		else if ((old ^ a->compare) & a->compare_mask)
			break;	/* no match: nothing to write */
		else
			new = (old & ~a->add_swap_mask) |
			      (a->add_swap & a->add_swap_mask);
	} while (!__atomic_compare_exchange_n(p, &old, new, false,
					      __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return old;
}

/*
 * The oldest Atomic Request is executed only now that every response
 * before it has left: a Read that came first never sees its effect, one
 * that came later always does. The target was checked on arrival; like
 * a Read source it is looked up again in case it went away since.
 */
static bool iw_tx_build_aresp(struct iw_qp *qp, struct iw_irqe *e)
{
	struct iw_mr *mr = iw_stag_lookup(qp->pd->dev, e->ar.stag);
	struct rdmap_aresp r = { .req_id = e->ar.req_id };
	uint8_t extra[RDMAP_ARESP_LEN];

	if (!mr || mr->pd != qp->pd) {
		struct iw_err err;

		iw_fail(&err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
			RDMAP_ECODE_INVALID_STAG, "Atomic target went away");
		iw_qp_fatal(qp, &err, NULL, true);
		return false;
	}
	r.orig = iw_atomic_exec((uint64_t *)(void *)(mr->addr +
						     (e->ar.to - mr->base_to)),
				&e->ar);
	rdmap_aresp_build(extra, sizeof(extra), &r);
	qp->tx_src = TX_IRQ;
	qp->tx_irq_busy = true;
	qp->tx_msg_end = true;
	iw_tx_untagged(qp, RDMAP_ATOMIC_RESP, DDP_QN_ARESP, qp->aresp_msn++, 0,
		       true, 0, extra, sizeof(extra), 0);
	return true;
}

/*
 * One segment of the oldest Read Response. The source region is looked up
 * again for every segment, so a region deregistered or invalidated while
 * the response is under way is never read.
 */
static bool iw_tx_build_irq(struct iw_qp *qp)
{
	struct iw_irqe *e = &qp->irq[qp->irq_head];
	uint32_t left, n;
	struct iw_sge sge = { NULL, 0 };
	int npay = 0;

	if (e->atomic)
		return iw_tx_build_aresp(qp, e);
	left = e->rr.size - e->sent;
	n = iw_msg_room(qp, true, e->rr.size, e->sent);
	if (n > left)
		n = left;
	if (n) {
		struct iw_mr *mr = iw_stag_lookup(qp->pd->dev, e->rr.src_stag);
		struct iw_err err;

		if (!mr || mr->pd != qp->pd) {
			iw_fail(&err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_PROT,
				RDMAP_ECODE_INVALID_STAG,
				"Read source went away");
			iw_qp_fatal(qp, &err, NULL, true);
			return false;
		}
		sge.addr = mr->addr + (e->rr.src_to + e->sent - mr->base_to);
		sge.len = n;
		npay = iw_sge_iov(&sge, 1, 0, n, qp->txv + 1);
	}
	qp->tx_src = TX_IRQ;
	qp->tx_irq_busy = true;
	qp->tx_msg_end = n == left;
	iw_tx_tagged(qp, RDMAP_READ_RESP, e->rr.sink_stag,
		     e->rr.sink_to + e->sent, qp->tx_msg_end, npay);
	e->sent += n;
	return true;
}

static const uint8_t iw_send_opcode[] = {
	[IW_WR_SEND] = RDMAP_SEND,
	[IW_WR_SEND_SE] = RDMAP_SEND_SE,
	[IW_WR_SEND_INV] = RDMAP_SEND_INV,
	[IW_WR_SEND_SE_INV] = RDMAP_SEND_SE_INV,
};

/* The Invalidate STag a Send carries: 0 unless it invalidates. */
static uint32_t iw_wr_inv_stag(const struct iw_swqe *w)
{
	return w->op == IW_WR_SEND_INV || w->op == IW_WR_SEND_SE_INV ?
		       w->inv_stag : 0;
}

/*
 * A whole Send in one FPDU that fits IW_TX_FLAT_MAX is framed straight
 * into tx_flat: header, payload and trailer in one buffer, one iovec,
 * one copy.
 */
static bool iw_tx_flat_send(struct iw_qp *qp, const struct iw_swqe *w)
{
	struct ddp_hdr h = {
		.last = true, .ddp_ver = DDP_VERSION,
		.rdmap_ver = RDMAP_VERSION, .opcode = iw_send_opcode[w->op],
		.qn = DDP_QN_SEND, .msn = qp->sq_msn,
		.inv_stag = iw_wr_inv_stag(w),
	};
	uint8_t *p = qp->tx_joining ? qp->txb->flat + qp->txb->flat_len :
				      qp->tx_flat;
	size_t off;
	ssize_t hlen;
	int i;

	if (qp->markers_tx ||
	    mpa_fpdu_len(DDP_UNTAGGED_HDR + (size_t)w->len) > IW_TX_FLAT_MAX)
		return false;
	hlen = ddp_hdr_build(p + MPA_FPDU_HDR, IW_TX_FLAT_MAX - MPA_FPDU_HDR,
			     &h);
	if (hlen < 0)
		return false;
	off = MPA_FPDU_HDR + (size_t)hlen;
	for (i = 0; i < w->nsge; i++) {
		memcpy(p + off, w->sge[i].addr, w->sge[i].len);
		off += w->sge[i].len;
	}
	iw_put16(p, (uint16_t)(off - MPA_FPDU_HDR));
	off = mpa_fpdu_close(p, off, qp->crc);
	qp->txv[0].iov_base = p;
	qp->txv[0].iov_len = off;
	qp->txcnt = 1;
	qp->tx_left = off;
	qp->stats.tx_flat++;
	if (qp->tx_joining)
		qp->txb->flat_len += off;
	return true;
}

/* RFC 7306 Immediate Data: one FPDU on queue 0, numbered like a Send
 * (its MSN advances when the FPDU is written, as a Send's does). */
static void iw_tx_imm(struct iw_qp *qp, const struct iw_swqe *w)
{
	uint8_t extra[RDMAP_IMM_LEN];

	rdmap_imm_build(extra, sizeof(extra), w->imm);
	qp->tx_sq_busy = true;
	qp->tx_msg_end = true;
	iw_tx_untagged(qp, w->op == IW_WR_IMM_SE ? RDMAP_IMM_SE : RDMAP_IMM,
		       DDP_QN_SEND, qp->sq_msn, 0, true, 0, extra,
		       sizeof(extra), 0);
}

static void iw_tx_build_sq(struct iw_qp *qp)
{
	uint32_t seq = qp->sq_tx;
	struct iw_swqe *w = iw_sq_at(qp, seq);
	bool tagged = w->op == IW_WR_WRITE;
	uint32_t left, n;
	int npay;

	qp->tx_src = TX_SQ;
	if (w->op == IW_WR_READ) {
		qp->tx_sq_busy = true;
		qp->tx_msg_end = true;
		iw_tx_rreq(qp, (int32_t)(seq & (qp->sq_size - 1)), w->len,
			   w->rstag, w->rto);
		return;
	}
	if (iw_wr_atomic(w->op)) {
		qp->tx_sq_busy = true;
		qp->tx_msg_end = true;
		iw_tx_areq(qp, (int32_t)(seq & (qp->sq_size - 1)), w);
		return;
	}
	if (iw_wr_imm(w->op)) {
		iw_tx_imm(qp, w);
		return;
	}
	left = w->len - w->sent;
	n = iw_msg_room(qp, tagged, w->len, w->sent);
	/* a whole message in one FPDU */
	if (!tagged && !w->sent && left <= n && iw_tx_flat_send(qp, w)) {
		qp->tx_sq_busy = true;
		qp->tx_msg_end = true;
		w->sent = w->len;
		return;
	}
	if (n > left)
		n = left;
	npay = iw_sge_iov(w->sge, w->nsge, w->sent, n, qp->txv + 1);
	qp->tx_sq_busy = true;
	qp->tx_msg_end = n == left;
	if (tagged)
		iw_tx_tagged(qp, RDMAP_WRITE, w->rstag, w->rto + w->sent,
			     qp->tx_msg_end, npay);
	else
		iw_tx_untagged(qp, iw_send_opcode[w->op], DDP_QN_SEND,
			       qp->sq_msn, w->sent, qp->tx_msg_end,
			       iw_wr_inv_stag(w), NULL, 0, npay);
	w->sent += n;
}

/* Chooses and frames the next FPDU; false when there is none. */
static bool iw_tx_build(struct iw_qp *qp)
{
	if (qp->ctrl_off < qp->ctrl_len) {
		qp->tx_src = TX_CTRL;
		qp->txv[0].iov_base = qp->ctrl + qp->ctrl_off;
		qp->txv[0].iov_len = qp->ctrl_len - qp->ctrl_off;
		qp->txcnt = 1;
		qp->tx_left = qp->txv[0].iov_len;
		return true;
	}
	if (qp->tx_hold) {
		if (iw_now_ms() < qp->tx_hold)
			return false;
		qp->tx_hold = 0;
	}
	if (qp->cm == CM_SEND_RTR && qp->rtr_pending) {
		iw_tx_build_rtr(qp);
		return true;
	}
	if (!iw_tx_data_allowed(qp))
		return false;
	if (qp->tx_irq_busy || (!qp->tx_sq_busy && qp->irq_count))
		return iw_tx_build_irq(qp);
	if (qp->tx_sq_busy || iw_tx_sq_ready(qp)) {
		iw_tx_build_sq(qp);
		return true;
	}
	return false;
}

/* The send-queue message just framed has ended: the next may start.
 * Sends and Immediate Data take an MSN; Writes, Reads and atomics do not
 * (a Read's or atomic's Request is numbered on its own queue). */
static struct iw_swqe *iw_tx_sq_ended(struct iw_qp *qp)
{
	struct iw_swqe *w = iw_sq_at(qp, qp->sq_tx++);

	qp->tx_sq_busy = false;
	if (w->op != IW_WR_WRITE && w->op != IW_WR_READ &&
	    !iw_wr_atomic(w->op))
		qp->sq_msn++;
	return w;
}

/*
 * The FPDU (or batch) just written is done. What this reports upward (the
 * connection, completions, a Read's source) may post and transmit at once,
 * from inside this call: every change to the transmit state comes first,
 * so such a nested pump starts from a clean state and what it leaves half
 * written stays its own.
 */
static void iw_tx_fpdu_done(struct iw_qp *qp)
{
	int src = qp->tx_src;

	qp->tx_src = TX_NONE;
	switch (src) {
	case TX_CTRL:
		qp->ctrl_off = qp->ctrl_len = 0;
		break;
	case TX_RTR:
		qp->rtr_pending = false;
		iw_qp_established(qp);
		break;
	case TX_IRQ: {
		struct iw_irqe *e = &qp->irq[qp->irq_head];
		bool target = !e->atomic && e->rr.size;
		uint32_t stag = e->rr.src_stag;

		if (!qp->tx_msg_end)
			break;
		qp->tx_irq_busy = false;
		qp->irq_head = iw_ring_next(qp->irq_head, qp->irq_cap);
		qp->irq_count--;
		if (target)
			iw_qp_target(qp, false, stag);
		break;
	}
	case TX_SQ: {
		struct iw_swqe *w;

		if (!qp->tx_msg_end)
			break;
		w = iw_tx_sq_ended(qp);
		if (w->op == IW_WR_READ || iw_wr_atomic(w->op))
			break;	/* done when the response arrives */
		w->done = true;
		w->status = IW_WC_SUCCESS;
		iw_qp_sq_complete_ready(qp);
		break;
	}
	default:
		break;
	}
}

/* Copies the FPDU just framed in txv into the batch. */
static void iw_tx_batch_add(struct iw_qp *qp, int frame)
{
	struct iw_tx_batch *b = qp->txb;
	int i;

	memcpy(b->hdr[frame], qp->tx_hdr, sizeof(qp->tx_hdr));
	memcpy(b->trl[frame], qp->tx_trl, sizeof(qp->tx_trl));
	for (i = 0; i < qp->txcnt; i++) {
		struct iovec v = qp->txv[i];

		if (v.iov_base == qp->tx_hdr)
			v.iov_base = b->hdr[frame];
		else if (v.iov_base == qp->tx_trl)
			v.iov_base = b->trl[frame];
		/* flat frames lie back to back: one iovec for all */
		if (b->cnt && (uint8_t *)b->v[b->cnt - 1].iov_base +
					      b->v[b->cnt - 1].iov_len ==
				      v.iov_base)
			b->v[b->cnt - 1].iov_len += v.iov_len;
		else
			b->v[b->cnt++] = v;
	}
}

/* Sends and Writes complete once written, a Read when its Response is
 * in; atomics and Immediate Data are numbered or completed otherwise. */
static bool iw_wr_joinable(const struct iw_swqe *w, bool *tagged)
{
	switch (w->op) {
	case IW_WR_SEND:
	case IW_WR_SEND_SE:
	case IW_WR_SEND_INV:
	case IW_WR_SEND_SE_INV:
	case IW_WR_READ:
		*tagged = false;
		return true;
	case IW_WR_WRITE:
		*tagged = true;
		return true;
	default:
		return false;
	}
}

/*
 * The send-queue message just framed (a Send, a Write or a Read's
 * Request) has ended: may the next one join its batch? Only a Send or
 * Write that is whole in one FPDU, with no fence, or a Read's Request
 * within the ORD, and nothing that goes first (a control frame, Read
 * Responses).
 */
static bool iw_tx_joins(struct iw_qp *qp)
{
	const struct iw_swqe *w;
	size_t fpdu;
	bool tagged;

	if (!qp->txb || qp->tx_src != TX_SQ || !qp->tx_msg_end ||
	    qp->sq_tx + 1 == qp->sq_tail || qp->irq_count ||
	    qp->ctrl_off < qp->ctrl_len ||
	    !iw_wr_joinable(iw_sq_at(qp, qp->sq_tx), &tagged))
		return false;
	w = iw_sq_at(qp, qp->sq_tx + 1);
	if (!iw_wr_joinable(w, &tagged))
		return false;
	if (w->op == IW_WR_READ) {
		/* its Request: a small FPDU, once the ORD has room */
		if (!iw_tx_sq_can_start(qp, qp->sq_tx + 1))
			return false;
		fpdu = mpa_fpdu_len(DDP_UNTAGGED_HDR + RDMAP_RREQ_LEN);
	} else {
		if ((w->flags & IW_WR_FENCE) || w->sent ||
		    w->len > iw_seg_room(qp, tagged))
			return false;
		fpdu = mpa_fpdu_len(DDP_UNTAGGED_HDR + (size_t)w->len);
	}
	/* one that would go flat needs the room for it */
	return tagged || fpdu > IW_TX_FLAT_MAX ||
	       qp->txb->flat_len + fpdu <= IW_TX_BATCH_FLAT;
}

/* The message ahead of a joining one ends (iw_tx_sq_ended), but
 * completes only once the whole batch is written. */
static void iw_tx_join(struct iw_qp *qp)
{
	iw_tx_sq_ended(qp);
	qp->tx_joined++;
	qp->tx_joining = true;
	iw_tx_build_sq(qp);
	qp->tx_joining = false;
}

/* The batch is out: the messages that joined it are done. */
static void iw_tx_joined_done(struct iw_qp *qp)
{
	uint32_t i;

	for (i = qp->sq_tx - qp->tx_joined; i != qp->sq_tx; i++) {
		struct iw_swqe *w = iw_sq_at(qp, i);

		if (w->op == IW_WR_READ)
			continue;	/* done when its Response is in */
		w->done = true;
		w->status = IW_WC_SUCCESS;
	}
	qp->tx_joined = 0;
}

/* What is left of the message being framed fits one more FPDU: a batch
 * that reached its size takes that along rather than leave it a sendmsg
 * of its own (a 256 KiB message in 64 KiB FPDUs ends in a short one). */
static bool iw_tx_tail_next(struct iw_qp *qp)
{
	const struct iw_irqe *e;
	const struct iw_swqe *w;

	if (qp->tx_msg_end)
		return false;
	if (qp->tx_src == TX_IRQ) {
		e = &qp->irq[qp->irq_head];
		return !e->atomic &&
		       e->rr.size - e->sent <= iw_seg_room(qp, true);
	}
	w = iw_sq_at(qp, qp->sq_tx);
	return w->len - w->sent <= iw_seg_room(qp, false);
}

/*
 * The FPDU just framed starts a long message, or more whole messages
 * wait behind it: frame those too, so that one sendmsg carries them
 * all. Their completion needs nothing until the batch is written.
 */
static void iw_tx_gather(struct iw_qp *qp)
{
	size_t bytes = qp->tx_left, most = IW_TX_BATCH_BYTES;
	int frame = 0;

	if (qp->markers_tx || (qp->tx_src != TX_SQ && qp->tx_src != TX_IRQ) ||
	    (qp->tx_msg_end &&
	     (qp->tx_src != TX_SQ || qp->sq_tx + 1 == qp->sq_tail)))
		return;
	if (!qp->txb &&
	    !(qp->txb = iw_pd_take(&qp->pd->txb_pool, sizeof(*qp->txb))))
		return;		/* one FPDU per syscall still works */
	qp->txb->cnt = 0;
	qp->txb->flat_len = 0;
	if (qp->tx_msg_end && !iw_tx_joins(qp))
		return;
	/* a message with others queued behind it: the pipe is full */
	if (!qp->crc && (qp->tx_src == TX_IRQ ? qp->irq_count > 1 :
					       qp->sq_tx + 1 != qp->sq_tail))
		most = IW_TX_BATCH_BYTES_PLAIN;
	iw_tx_batch_add(qp, frame++);
	while (frame < IW_TX_BATCH && (bytes < most || iw_tx_tail_next(qp))) {
		if (qp->tx_msg_end) {
			if (!iw_tx_joins(qp))
				break;
			iw_tx_join(qp);
		} else if (qp->tx_src == TX_SQ) {
			iw_tx_build_sq(qp);
		} else if (!iw_tx_build_irq(qp)) {
			break;	/* source gone: its Terminate follows */
		}
		bytes += qp->tx_left;
		iw_tx_batch_add(qp, frame++);
	}
	qp->tx_left = bytes;
	qp->tx_batched = true;
	qp->tx_frames = frame;
}

static struct iovec *iw_tx_vec(struct iw_qp *qp, int *cnt)
{
	if (qp->tx_batched) {
		*cnt = qp->txb->cnt;
		return qp->txb->v;
	}
	*cnt = qp->txcnt;
	return qp->txv;
}

/* Drops the octets just written from the front of the iovec list. */
static void iw_tx_consume(struct iw_qp *qp, size_t n)
{
	int i = 0, cnt;
	struct iovec *v = iw_tx_vec(qp, &cnt);

	qp->tx_left -= n;
	while (n && i < cnt) {
		if (n >= v[i].iov_len) {
			n -= v[i].iov_len;
			v[i].iov_len = 0;
			i++;
			continue;
		}
		v[i].iov_base = (uint8_t *)v[i].iov_base + n;
		v[i].iov_len -= n;
		n = 0;
	}
	if (qp->tx_src == TX_CTRL)
		qp->ctrl_off = qp->ctrl_len - qp->tx_left;
}

static struct iovec *iw_tx_first(struct iw_qp *qp, int *cnt)
{
	int i = 0, all;
	struct iovec *v = iw_tx_vec(qp, &all);

	while (i < all && !v[i].iov_len)
		i++;
	*cnt = all - i;
	return v + i;
}

/* A small FPDU framed in txv becomes one iovec (batches keep theirs). */
static void iw_tx_flatten(struct iw_qp *qp)
{
	size_t off = 0;
	int i;

	if (qp->tx_batched || qp->txcnt < 2 || qp->tx_left > IW_TX_FLAT_MAX)
		return;
	for (i = 0; i < qp->txcnt; i++) {
		memcpy(qp->tx_flat + off, qp->txv[i].iov_base,
		       qp->txv[i].iov_len);
		off += qp->txv[i].iov_len;
	}
	qp->txv[0].iov_base = qp->tx_flat;
	qp->txv[0].iov_len = off;
	qp->txcnt = 1;
	qp->stats.tx_flat++;
}

/*
 * Data held back by MSG_MORE goes out with the next send; when none
 * follows (the next work request waits for something), setting
 * TCP_NODELAY again pushes it.
 */
static void iw_tx_uncork(struct iw_qp *qp)
{
	int one = 1;

	if (!qp->tx_corked)
		return;
	qp->tx_corked = false;
	if (qp->fd >= 0) {
		setsockopt(qp->fd, IPPROTO_TCP, TCP_NODELAY, &one,
			   sizeof(one));
		qp->stats.tx_pushes++;
	}
}

/* Frames the next FPDU (and the rest of its batch); false if none. */
static bool iw_tx_next(struct iw_qp *qp)
{
	if (!iw_tx_build(qp))
		return false;
	qp->tx_frames = 1;
	iw_tx_gather(qp);
	iw_tx_flatten(qp);
	return true;
}

/* The socket is full: poll() decides when to try again. */
static void iw_tx_full(struct iw_qp *qp)
{
	qp->stats.tx_full++;
	qp->tx_full = true;
}

/*
 * The socket refused a send: nothing more is written. Deciding what that
 * means (the peer's Terminate may still wait in the receive queue) is
 * the QP's business, so only -EPIPE goes up.
 */
static int iw_tx_refused(struct iw_qp *qp)
{
	qp->tx_dead = true;
	qp->tx_left = 0;
	qp->tx_batched = false;
	qp->tx_joined = 0;	/* the flush reports them */
	qp->tx_corked = false;	/* nothing held back will go now */
	return -EPIPE;
}

/* One sendmsg of what is framed: 1 all of it went, 0 the socket is
 * full, -EAGAIN interrupted, -EPIPE refused. */
static int iw_tx_write(struct iw_qp *qp)
{
	/* a message with more work requests behind it that may go at once
	 * (a Send and the Read that tells its delivery): one segment. One
	 * that must wait (a Read with ORD full) would leave this corked
	 * until a setsockopt pushes it: two calls for one message. */
	bool more = (qp->tx_src == TX_SQ && qp->tx_msg_end &&
		     iw_tx_sq_can_start(qp, qp->sq_tx + 1)) ||
		    (qp->tx_src == TX_RTR && qp->rtr_more);
	struct msghdr msg = { 0 };
	ssize_t n;

	msg.msg_iov = iw_tx_first(qp, (int *)&msg.msg_iovlen);
	n = sendmsg(qp->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL |
				  (more ? MSG_MORE : 0));
	if (n < 0 && errno == EINTR)
		return -EAGAIN;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		iw_tx_full(qp);
		return 0;
	}
	if (n < 0)
		return iw_tx_refused(qp);
	qp->stats.tx_calls++;
	qp->tx_corked = more;
	iw_tx_consume(qp, (size_t)n);
	if (qp->tx_left) {
		iw_tx_full(qp);	/* a short write: the socket is full */
		return 0;
	}
	return 1;
}

/*
 * After a send found the socket full, poll() decides (TCP reports POLLOUT
 * only once half the queued octets are gone): retrying sendmsg holds the
 * socket lock again and again, so the ACKs that would free the buffer are
 * processed late, from the backlog, by the sender itself.
 */
int iw_tx_pump(struct iw_qp *qp)
{
	int ret = 0;

	if (qp->tx_left && iw_sock_still(qp->fd, &qp->tx_full, POLLOUT))
		return 0;
	while (qp->fd >= 0 && !qp->tx_dead) {
		if (!qp->tx_left && !iw_tx_next(qp))
			break;
		ret = iw_tx_write(qp);
		if (ret == -EAGAIN)
			continue;
		if (ret <= 0)
			break;
		if (qp->tx_src != TX_CTRL)
			qp->stats.tx_fpdus += (uint64_t)qp->tx_frames;
		qp->tx_batched = false;
		if (qp->tx_joined)
			iw_tx_joined_done(qp);
		iw_tx_fpdu_done(qp);
	}
	iw_tx_uncork(qp);
	/* an unfinished batch keeps its buffer; a finished one goes back */
	if (qp->txb && !qp->tx_batched) {
		iw_pd_give(&qp->pd->txb_pool, qp->txb);
		qp->txb = NULL;
	}
	return ret < 0 ? ret : 0;
}
