/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Data transfer on FI_EP_MSG: fi_send/fi_recv families on Sends, fi_write
 * and fi_read on RDMA Write and Read. A completion normally means the
 * data was handed to TCP. FI_TRANSMIT_COMPLETE and FI_DELIVERY_COMPLETE
 * add a zero-length RDMA Read behind the operation: its response arrives
 * only after the target placed everything before it (RFC 5040 §5.5 rule
 * 12), so the operation completes when the data is at the target.
 */
#include "msg.h"

#include <stdlib.h>
#include <string.h>

#define IWARP_DELIVERY (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)

/* An op that failed for another reason than a flush names its
 * connection: the CQ entry cannot. */
static void iwarp_op_log_err(struct iw_qp *qp, const struct iwarp_op *op)
{
	if (op->status == IW_WC_FLUSHED)
		return;
	FI_INFO(&iwarp_prov, FI_LOG_EP_DATA,
		"%s: %s of %zu octets failed (status %d): %s\n",
		iw_qp_label(qp), op->flags & FI_RECV ? "receive" : "transmit",
		op->len, op->status,
		op->err.why ? iw_err_str(op->err.layer, op->err.etype,
					 op->err.ecode) : "no error triple");
}

/* What a completion reports: the op's own, or a receive's data. */
struct iwarp_done {
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
};

/*
 * A receive that succeeded: the peer's Immediate Data either was an
 * RDMA Write's remote CQ data (it completed this receive on its own) or
 * came just before the Send that filled it.
 */
static void iwarp_rx_done(struct iwarp_ep *ep, struct iw_qp *qp,
			  const struct iwarp_op *op, const struct iw_wc *wc,
			  struct iwarp_done *d)
{
	d->flags = op->flags;
	d->len = wc->byte_len + (op->mbuf ? 0 : ep->prefix);
	d->buf = op->mbuf ? op->mbuf + op->moff : NULL;
	d->data = 0;
	if (wc->flags & IW_WC_F_IMM) {
		d->flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
		d->len = iw_qp_rx_write_len(qp);
		d->buf = NULL;
		d->data = (uint32_t)wc->imm;
	} else if (ep->imm_next) {
		d->flags |= FI_REMOTE_CQ_DATA;
		d->data = ep->imm_data;
		ep->imm_next = false;
	}
}

static void iwarp_op_report(struct iwarp_ep *ep, struct iw_qp *qp,
			    struct iwarp_op *op, const struct iw_wc *wc,
			    uint64_t extra)
{
	struct iwarp_ep_base *b = &ep->base;
	struct iwarp_cq *cq = op->flags & FI_RECV ? b->rx_cq : b->tx_cq;
	struct iwarp_cntr *cntr = iwarp_ep_base_cntr(b, op->flags);
	struct iwarp_done d = { op->flags | extra, op->len, NULL, 0 };
	int err, prov;

	if (op->status == IW_WC_SUCCESS) {
		if (op->flags & FI_RECV) {
			iwarp_rx_done(ep, qp, op, wc, &d);
			d.flags |= extra;
		}
		if (op->cq)
			iwarp_cq_write(cq, op->context, d.flags, d.len, d.buf,
				       d.data, 0, FI_ADDR_NOTAVAIL);
		if (cntr)
			iwarp_cntr_inc(cntr);
		return;
	}
	iwarp_op_log_err(qp, op);
	err = iwarp_errno_from_status(op->status);
	/* a Send that did not fit the posted buffer (RFC 5041 code 5) */
	if (op->err.layer == IW_LAYER_DDP &&
	    op->err.etype == DDP_ETYPE_UNTAGGED &&
	    op->err.ecode == DDP_ECODE_UT_TOO_LONG && (op->flags & FI_RECV))
		err = FI_ETRUNC;
	prov = iwarp_prov_errno_of(&op->err);
	if (op->flags & FI_RECV)
		d.len = wc->byte_len;
	iwarp_cq_write_err(cq, op->context, d.flags, d.len, NULL, 0, 0, err,
			   prov, NULL, 0, 0);
	if (cntr)
		iwarp_cntr_inc_err(cntr);
}

/* Posts what is left of a multi-receive buffer ahead of later
 * receives: it stays the first to fill, as if never taken down. */
static int iwarp_multi_repost(struct iwarp_ep *ep, struct iw_qp *qp,
			      struct iwarp_op *op)
{
	struct iw_sge sge = { op->mbuf + op->moff,
			      (uint32_t)(op->msize - op->moff) };
	struct iw_recv_wr wr = { .ctx = op, .sgl = &sge, .num_sge = 1 };

	op->pending = 1;
	return iw_qp_post_recv_first(qp, &wr);
}

/* A message landed in a multi-receive buffer: report it, and release
 * the buffer (FI_MULTI_RECV) once less than the minimum is left. */
static void iwarp_multi_complete(struct iwarp_ep *ep, struct iw_qp *qp,
				 struct iwarp_op *op, const struct iw_wc *wc)
{
	size_t used = wc->flags & IW_WC_F_IMM ? 0 : wc->byte_len;
	bool keep = op->status == IW_WC_SUCCESS &&
		    op->msize - op->moff - used >= ep->base.min_multi_recv &&
		    op->msize - op->moff - used > 0;

	if (keep) {
		iwarp_op_report(ep, qp, op, wc, 0);
		op->moff += used;
		if (!iwarp_multi_repost(ep, qp, op))
			return;
		/* the rest could not be posted: released, empty */
		op->status = IW_WC_SUCCESS;
		op->flags = FI_MULTI_RECV;
		if (op->cq)
			iwarp_cq_write(ep->base.rx_cq, op->context,
				       FI_MULTI_RECV, 0, NULL, 0, 0,
				       FI_ADDR_NOTAVAIL);
	} else {
		iwarp_op_report(ep, qp, op, wc, FI_MULTI_RECV);
	}
	iwarp_op_put(ep, op);
}

/* Engine callback: an op may span several work requests (remote CQ
 * data, delivery). */
void iwarp_ep_complete(void *arg, struct iw_qp *qp, const struct iw_wc *wc)
{
	struct iwarp_ep *ep = arg;
	struct iwarp_op *op = wc->ctx;

	if (ep->tagged && wc->op == IW_WC_RECV) {
		iwarp_tag_recv_done(ep, wc);
		return;
	}
	if (op->internal) {
		iwarp_ep_auth_complete(ep, qp, wc);
		return;
	}
	if (wc->status != IW_WC_SUCCESS && op->status == IW_WC_SUCCESS) {
		op->status = wc->status;
		op->err = wc->err;
	}
	if (--op->pending)
		return;
	if (op->mbuf) {
		iwarp_multi_complete(ep, qp, op, wc);
		return;
	}
	iwarp_op_report(ep, qp, op, wc, 0);
	free(op->copy);
	op->copy = NULL;
	iwarp_op_put(ep, op);
}

/*
 * A Write's remote CQ data on an endpoint without FI_RX_CQ_DATA: its
 * own completion. Unread ones are bounded; past that the stream ends.
 */
static int iwarp_imm_norecv(struct iwarp_ep *ep, struct iw_qp *qp,
			    uint32_t data)
{
	struct iwarp_cq *cq = ep->base.rx_cq;

	if (cq && iwarp_cq_pending(cq) >= IWARP_IMM_UNREAD_MAX) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
			"%s: remote CQ data refused: %u completions unread\n",
			iw_qp_label(qp), IWARP_IMM_UNREAD_MAX);
		return -1;
	}
	if (iwarp_cq_write(cq, NULL, FI_RMA | FI_REMOTE_WRITE |
			   FI_REMOTE_CQ_DATA, iw_qp_rx_write_len(qp), NULL,
			   data, 0, FI_ADDR_NOTAVAIL))
		return -1;
	return 0;
}

/* Engine callback (lock held): the peer's Immediate Data, by kind
 * (msg.h). Anything out of that order ends the stream. */
int iwarp_ep_imm(void *arg, struct iw_qp *qp, uint64_t data,
		 unsigned int flags)
{
	struct iwarp_ep *ep = arg;
	uint32_t kind = (uint32_t)(data >> 32);

	if (!ep->imm_next && kind == IWARP_IMM_WRITE) {
		/* to an endpoint that takes no Writes: forged */
		if (!ep->rwrite) {
			FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
				"%s: remote CQ data of a Write refused: the "
				"endpoint has no FI_RMA with FI_REMOTE_WRITE\n",
				iw_qp_label(qp));
			return -1;
		}
		return ep->imm_norecv ?
			       iwarp_imm_norecv(ep, qp, (uint32_t)data) : 1;
	}
	if (!ep->imm_next && kind == IWARP_IMM_SEND) {
		ep->imm_next = true;
		ep->imm_data = (uint32_t)data;
		return 0;
	}
	FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
		"%s: Immediate Data %#llx refused: %s\n", iw_qp_label(qp),
		(unsigned long long)data, ep->imm_next ?
		"a Send was due" : "unknown kind");
	return -1;
}

static int iwarp_sgl(const struct iovec *iov, size_t count,
		     struct iw_sge *sgl, size_t *len)
{
	size_t i;

	if (count > IWARP_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	*len = 0;
	for (i = 0; i < count; i++) {
		if (iov[i].iov_len > UINT32_MAX)
			return -FI_EINVAL;
		sgl[i].addr = iov[i].iov_base;
		sgl[i].len = (uint32_t)iov[i].iov_len;
		*len += iov[i].iov_len;
	}
	return *len > UINT32_MAX ? -FI_EMSGSIZE : 0;
}

/* The Immediate Data carrying an op's remote CQ data (msg.h). */
static struct iw_send_wr iwarp_imm_wr(const struct iwarp_tx *t,
				      struct iwarp_op *op)
{
	uint64_t kind = t->op == IW_WR_SEND ? IWARP_IMM_SEND :
					      IWARP_IMM_WRITE;
	struct iw_send_wr wr = {
		.ctx = op,
		.op = IW_WR_IMM,
		.flags = IW_WR_SIGNALED,
		.imm = kind << 32 | (uint32_t)t->data,
	};

	return wr;
}

/*
 * The engine work requests of one transmit op, in posting order: the
 * Immediate Data of a Send goes before it, that of a Write after it;
 * FI_TRANSMIT_COMPLETE and FI_DELIVERY_COMPLETE add the zero-length
 * Read last. All but the last say more follows (one TCP segment).
 */
static int iwarp_tx_wrs(const struct iwarp_tx *t, struct iwarp_op *op,
			const struct iw_sge *sgl, struct iw_send_wr *wr)
{
	bool delivery = (t->flags & IWARP_DELIVERY) &&
			!(t->flags & FI_INJECT) && t->op != IW_WR_READ;
	bool imm = t->flags & FI_REMOTE_CQ_DATA;
	struct iw_send_wr main = {
		.ctx = op,
		.op = t->op,
		.flags = IW_WR_SIGNALED,
		.sgl = sgl,
		.num_sge = (int)t->count,
		.rstag = (uint32_t)t->key,
		.rto = t->raddr,
	};
	int i, n = 0;

	if ((t->flags & FI_INJECT) && !t->no_inline)
		main.flags |= IW_WR_INLINE;
	if (t->flags & FI_FENCE)
		main.flags |= IW_WR_FENCE;
	if (imm && t->op == IW_WR_SEND)
		wr[n++] = iwarp_imm_wr(t, op);
	wr[n++] = main;
	if (imm && t->op == IW_WR_WRITE)
		wr[n++] = iwarp_imm_wr(t, op);
	if (delivery)
		wr[n++] = (struct iw_send_wr){ .ctx = op, .op = IW_WR_READ,
					       .flags = IW_WR_SIGNALED };
	for (i = 0; i < n - 1; i++)
		wr[i].flags |= IW_WR_MORE;
	return n;
}

/* Posts the work requests of one transmit op together or not at all
 * (a lone Immediate Data would be misread); lock held. */
static int iwarp_tx_post(struct iwarp_ep *ep, const struct iwarp_tx *t,
			 struct iwarp_op *op, const struct iw_sge *sgl)
{
	struct iw_send_wr wr[3];
	int i, ret, n = iwarp_tx_wrs(t, op, sgl, wr);

	if (iw_qp_sq_free(ep->qp) < (uint32_t)n)
		return -EAGAIN;
	op->pending = n;
	for (i = 0; i < n; i++) {
		ret = iw_qp_post_send(ep->qp, &wr[i]);
		if (ret && !i)
			return ret;
		if (ret) {	/* the stream failed meanwhile */
			op->pending = i;	/* only these will complete */
			iw_qp_progress(ep->qp);
			break;
		}
	}
	iwarp_pollable_touch(&ep->poll);
	return 0;
}

/* FI_MSG_PREFIX: the first iov starts with room we do not send from or
 * receive into (fi_getinfo(3)). */
static int iwarp_skip_prefix(struct iwarp_ep *ep, struct iw_sge *sgl,
			     size_t count, size_t *len)
{
	if (!ep->prefix)
		return 0;
	if (!count || sgl[0].len < ep->prefix)
		return -FI_EINVAL;
	sgl[0].addr = (uint8_t *)sgl[0].addr + ep->prefix;
	sgl[0].len -= (uint32_t)ep->prefix;
	*len -= ep->prefix;
	return 0;
}

/* Remote CQ data needs the peer's word for it (msg.h). */
static int iwarp_tx_data_ok(struct iwarp_ep *ep, const struct iwarp_tx *t)
{
	if (!(t->flags & FI_REMOTE_CQ_DATA) || ep->imm_on)
		return 0;
	FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
		"remote CQ data: not negotiated with this peer (no cq_data_size "
		"asked for on one side, or not this provider)\n");
	return -FI_EOPNOTSUPP;
}

/*
 * FI_TAGGED endpoints: the header goes first (msg.h). An injected Send
 * too long to go inline with it is copied: the caller's buffer is free
 * at once.
 */
static int iwarp_tx_thdr(struct iwarp_tx *t, struct iwarp_op *op,
			 struct iw_sge *sgl, size_t len)
{
	size_t i, off = 0;
	uint8_t *c;

	if (t->count + 1 > IW_MAX_SGE)
		return -FI_EINVAL;
	if (len > UINT32_MAX - IWARP_THDR_LEN)
		return -FI_EMSGSIZE;
	iwarp_thdr_put(op->thdr, t->cqflags & FI_TAGGED, (uint32_t)len,
		       t->tag);
	if ((t->flags & FI_INJECT) && IWARP_THDR_LEN + len > IW_MAX_INLINE) {
		c = malloc(len);
		if (!c)
			return -FI_ENOMEM;
		for (i = 0; i < t->count; off += sgl[i].len, i++)
			memcpy(c + off, sgl[i].addr, sgl[i].len);
		op->copy = c;
		sgl[0] = (struct iw_sge){ c, (uint32_t)len };
		t->count = 1;
		t->no_inline = true;
	}
	memmove(sgl + 1, sgl, t->count * sizeof(*sgl));
	sgl[0] = (struct iw_sge){ op->thdr, IWARP_THDR_LEN };
	t->count++;
	return 0;
}

ssize_t iwarp_tx(struct iwarp_ep *ep, const struct iwarp_tx *t_in)
{
	struct iw_sge sgl[IWARP_IOV_MAX + 1];
	struct iwarp_tx tt = *t_in, *t = &tt;
	struct iwarp_op *op;
	size_t len;
	int ret;

	ret = iwarp_sgl(t->iov, t->count, sgl, &len);
	if (!ret && t->op == IW_WR_SEND)
		ret = iwarp_skip_prefix(ep, sgl, t->count, &len);
	if (ret)
		return ret;
	if ((t->flags & FI_INJECT) && len > IWARP_INJECT_MAX)
		return -FI_EINVAL;
	iwarp_lock(ep->base.fab);
	ret = iwarp_tx_data_ok(ep, t);
	if (ret) {
		iwarp_unlock(ep->base.fab);
		return ret;
	}
	if (!ep->qp || ep->tx_hold) {
		/* with a key nothing goes out before the peer's proof */
		iwarp_unlock(ep->base.fab);
		return ep->qp ? -FI_EAGAIN : -FI_EOPBADSTATE;
	}
	op = iwarp_op_get(ep);
	if (!op) {
		iwarp_progress(ep->base.fab);
		op = iwarp_op_get(ep);
	}
	if (!op) {
		iwarp_unlock(ep->base.fab);
		return -FI_EAGAIN;
	}
	op->context = t->context;
	op->flags = t->cqflags;
	op->len = len + (t->op == IW_WR_SEND ? ep->prefix : 0);
	op->mbuf = NULL;
	op->status = IW_WC_SUCCESS;
	memset(&op->err, 0, sizeof(op->err));
	op->cq = !(t->flags & IWARP_INJECT_CALL) &&
		 (!ep->base.tx_selective || (t->flags & FI_COMPLETION));
	op->copy = NULL;
	ret = ep->tagged && t->op == IW_WR_SEND ?
		      iwarp_tx_thdr(t, op, sgl, len) : 0;
	if (!ret)
		ret = iwarp_tx_post(ep, t, op, sgl);
	if (ret == -EAGAIN) {
		iwarp_progress(ep->base.fab);
		ret = iwarp_tx_post(ep, t, op, sgl);
	}
	if (ret) {
		free(op->copy);
		op->copy = NULL;
		iwarp_op_put(ep, op);
	}
	iwarp_unlock(ep->base.fab);
	return iwarp_fi_err(ret);
}

/* The op of a receive; a multi-receive buffer is one iov. */
static int iwarp_rx_op(struct iwarp_ep *ep, struct iwarp_op *op,
		       const struct iovec *iov, size_t count, void *context,
		       uint64_t flags)
{
	op->context = context;
	op->flags = FI_RECV | FI_MSG;
	op->pending = 1;
	op->status = IW_WC_SUCCESS;
	memset(&op->err, 0, sizeof(op->err));
	op->cq = !ep->base.rx_selective || (flags & FI_COMPLETION);
	op->mbuf = NULL;
	if (!(flags & FI_MULTI_RECV))
		return 0;
	if (count != 1 || !iov[0].iov_len)
		return -FI_EINVAL;
	op->mbuf = iov[0].iov_base;
	op->msize = iov[0].iov_len;
	op->moff = 0;
	return 0;
}

/* FI_TAGGED endpoints keep their receives (msg_tagged.c); one entry
 * stays free for truncation. Lock held. */
static int iwarp_rx_keep(struct iwarp_ep *ep, struct iwarp_op *op,
			 const struct iw_sge *sgl, size_t count,
			 uint64_t flags, uint64_t tag, uint64_t ignore)
{
	enum iw_qp_state st = iw_qp_state(ep->qp);

	if (count >= IW_MAX_SGE || (flags & FI_MULTI_RECV))
		return -FI_EINVAL;
	if (st == IW_QPS_CLOSED || st == IW_QPS_ERROR)
		return -FI_ENOTCONN;
	if (flags & FI_TAGGED)
		op->flags = FI_RECV | FI_TAGGED;
	memcpy(op->sgl, sgl, count * sizeof(*sgl));
	op->nsge = (int)count;
	op->tag = tag;
	op->ignore = ignore;
	iwarp_tag_post_rx(ep, op);
	return 0;
}

/* Lock held: posts a receive on the QP (or keeps it, FI_TAGGED). */
static int iwarp_rx_locked(struct iwarp_ep *ep, const struct iovec *iov,
			   size_t count, void *context, uint64_t flags,
			   uint64_t tag, uint64_t ignore)
{
	struct iw_sge sgl[IWARP_IOV_MAX];
	struct iw_recv_wr wr = { .sgl = sgl, .num_sge = (int)count };
	struct iwarp_op *op;
	size_t len;
	int ret;

	ret = iwarp_sgl(iov, count, sgl, &len);
	/* a multi-receive buffer takes messages, not prefixed ones */
	if (!ret && !(flags & FI_MULTI_RECV))
		ret = iwarp_skip_prefix(ep, sgl, count, &len);
	if (ret)
		return ret;
	if (!ep->qp)
		return -FI_EOPBADSTATE;
	op = iwarp_op_get(ep);
	if (!op)
		return -FI_EAGAIN;
	op->len = len;
	ret = iwarp_rx_op(ep, op, iov, count, context,
			  ep->tagged ? flags & ~FI_MULTI_RECV : flags);
	wr.ctx = op;
	if (!ret && ep->tagged)
		ret = iwarp_rx_keep(ep, op, sgl, count, flags, tag, ignore);
	else if (!ret)
		ret = iw_qp_post_recv(ep->qp, &wr);
	if (ret)
		iwarp_op_put(ep, op);
	else	/* a stream stalled for want of a receive reads again */
		iwarp_pollable_touch(&ep->poll);
	return iwarp_fi_err(ret);
}

ssize_t iwarp_rx(struct iwarp_ep *ep, const struct iovec *iov, size_t count,
		 void *context, uint64_t flags, uint64_t tag, uint64_t ignore)
{
	int ret;

	/* its receives come from the shared context */
	if (ep->base.srx)
		return -FI_EINVAL;
	iwarp_lock(ep->base.fab);
	ret = iwarp_rx_locked(ep, iov, count, context, flags, tag, ignore);
	iwarp_unlock(ep->base.fab);
	return ret;
}

/* ---- shared receive context: a stream waiting for a receive takes the
 * first one posted to the context (lock held) */

static bool iwarp_ep_srx_post(struct iwarp_ep *ep, struct iwarp_srx_rx *rx)
{
	int ret = iwarp_rx_locked(ep, rx->iov, rx->count, rx->context,
				  rx->flags, 0, 0);

	if (ret == -FI_EAGAIN)
		return false;
	if (ret)	/* e.g. shorter than the prefix: the caller's error */
		iwarp_cq_write_err(ep->base.rx_cq, rx->context,
				   FI_RECV | FI_MSG, 0, NULL, 0, 0, -ret, 0,
				   NULL, 0, 0);
	return true;
}

bool iwarp_ep_srx_offer(struct iwarp_ep_base *b, struct iwarp_srx_rx *rx)
{
	struct iwarp_ep *ep = iwarp_container_of(b, struct iwarp_ep, base);

	if (rx->tagged || !ep->qp || !iw_qp_rx_waiting(ep->qp))
		return false;
	return iwarp_ep_srx_post(ep, rx);
}

void iwarp_ep_srx_feed(struct iwarp_ep *ep)
{
	struct iwarp_srx_rx *rx;

	while (ep->qp && iw_qp_rx_waiting(ep->qp)) {
		rx = iwarp_srx_take(ep->base.srx, iwarp_srx_match_msg, NULL);
		if (!rx)
			return;
		if (!iwarp_ep_srx_post(ep, rx)) {
			iwarp_srx_untake(ep->base.srx, rx);
			return;
		}
		free(rx);
	}
}

/* ---- fi_ops_msg */

static ssize_t iwarp_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			  void *desc, fi_addr_t src_addr, void *context)
{
	struct iwarp_ep *ep = iwarp_ep_of(&ep_fid->fid);
	struct iovec iov = { buf, len };

	return iwarp_rx(ep, &iov, 1, context, ep->base.rx_op_flags, 0, 0);
}

static ssize_t iwarp_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t src_addr,
			   void *context)
{
	struct iwarp_ep *ep = iwarp_ep_of(&ep_fid->fid);

	return iwarp_rx(ep, iov, count, context, ep->base.rx_op_flags, 0, 0);
}

static ssize_t iwarp_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			     uint64_t flags)
{
	return iwarp_rx(iwarp_ep_of(&ep_fid->fid), msg->msg_iov,
			msg->iov_count, msg->context, flags & ~FI_TAGGED, 0, 0);
}

static ssize_t iwarp_send_common(struct fid_ep *ep_fid,
				 const struct iovec *iov, size_t count,
				 void *context, uint64_t flags, uint64_t data)
{
	struct iwarp_tx t = {
		.op = IW_WR_SEND,
		.iov = iov,
		.count = count,
		.context = context,
		.flags = flags,
		.cqflags = FI_SEND | FI_MSG,
		.data = data,
	};

	return iwarp_tx(iwarp_ep_of(&ep_fid->fid), &t);
}

static ssize_t iwarp_send(struct fid_ep *ep_fid, const void *buf, size_t len,
			  void *desc, fi_addr_t dest_addr, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_send_common(ep_fid, &iov, 1, context,
				 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags,
				 0);
}

static ssize_t iwarp_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t dest_addr,
			   void *context)
{
	return iwarp_send_common(ep_fid, iov, count, context,
				 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags,
				 0);
}

static ssize_t iwarp_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			     uint64_t flags)
{
	return iwarp_send_common(ep_fid, msg->msg_iov, msg->iov_count,
				 msg->context, flags, msg->data);
}

static ssize_t iwarp_inject(struct fid_ep *ep_fid, const void *buf,
			    size_t len, fi_addr_t dest_addr)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_send_common(ep_fid, &iov, 1, NULL,
				 FI_INJECT | IWARP_INJECT_CALL, 0);
}

static ssize_t iwarp_senddata(struct fid_ep *ep_fid, const void *buf,
			      size_t len, void *desc, uint64_t data,
			      fi_addr_t dest_addr, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_send_common(ep_fid, &iov, 1, context,
				 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags |
				 FI_REMOTE_CQ_DATA, data);
}

static ssize_t iwarp_injectdata(struct fid_ep *ep_fid, const void *buf,
				size_t len, uint64_t data,
				fi_addr_t dest_addr)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_send_common(ep_fid, &iov, 1, NULL, FI_INJECT |
				 IWARP_INJECT_CALL | FI_REMOTE_CQ_DATA, data);
}

struct fi_ops_msg iwarp_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = iwarp_recv,
	.recvv = iwarp_recvv,
	.recvmsg = iwarp_recvmsg,
	.send = iwarp_send,
	.sendv = iwarp_sendv,
	.sendmsg = iwarp_sendmsg,
	.inject = iwarp_inject,
	.senddata = iwarp_senddata,
	.injectdata = iwarp_injectdata,
};

/* ---- fi_ops_rma */

static ssize_t iwarp_rma(struct fid_ep *ep_fid, enum iw_wr_opcode op,
			 const struct iovec *iov, size_t count,
			 uint64_t addr, uint64_t key, void *context,
			 uint64_t flags, uint64_t data)
{
	struct iwarp_tx t = {
		.op = op,
		.iov = iov,
		.count = count,
		.raddr = addr,
		.key = key,
		.context = context,
		.flags = flags,
		.cqflags = FI_RMA | (op == IW_WR_READ ? FI_READ : FI_WRITE),
		.data = data,
	};

	/* remote CQ data rides on Writes only (fi_rma(3)) */
	if (key > UINT32_MAX ||
	    (op == IW_WR_READ && (flags & FI_REMOTE_CQ_DATA)))
		return -FI_EINVAL;
	return iwarp_tx(iwarp_ep_of(&ep_fid->fid), &t);
}

static ssize_t iwarp_read(struct fid_ep *ep_fid, void *buf, size_t len,
			  void *desc, fi_addr_t src_addr, uint64_t addr,
			  uint64_t key, void *context)
{
	struct iovec iov = { buf, len };

	return iwarp_rma(ep_fid, IW_WR_READ, &iov, 1, addr, key, context,
			 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags, 0);
}

static ssize_t iwarp_readv(struct fid_ep *ep_fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t src_addr,
			   uint64_t addr, uint64_t key, void *context)
{
	return iwarp_rma(ep_fid, IW_WR_READ, iov, count, addr, key, context,
			 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags, 0);
}

static ssize_t iwarp_rma_msg(struct fid_ep *ep_fid, enum iw_wr_opcode op,
			     const struct fi_msg_rma *msg, uint64_t flags)
{
	if (msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	return iwarp_rma(ep_fid, op, msg->msg_iov, msg->iov_count,
			 msg->rma_iov[0].addr, msg->rma_iov[0].key,
			 msg->context, flags, msg->data);
}

static ssize_t iwarp_readmsg(struct fid_ep *ep_fid,
			     const struct fi_msg_rma *msg, uint64_t flags)
{
	return iwarp_rma_msg(ep_fid, IW_WR_READ, msg, flags);
}

static ssize_t iwarp_write(struct fid_ep *ep_fid, const void *buf,
			   size_t len, void *desc, fi_addr_t dest_addr,
			   uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rma(ep_fid, IW_WR_WRITE, &iov, 1, addr, key, context,
			 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags, 0);
}

static ssize_t iwarp_writev(struct fid_ep *ep_fid, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t dest_addr,
			    uint64_t addr, uint64_t key, void *context)
{
	return iwarp_rma(ep_fid, IW_WR_WRITE, iov, count, addr, key, context,
			 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags, 0);
}

static ssize_t iwarp_writemsg(struct fid_ep *ep_fid,
			      const struct fi_msg_rma *msg, uint64_t flags)
{
	return iwarp_rma_msg(ep_fid, IW_WR_WRITE, msg, flags);
}

static ssize_t iwarp_inject_write(struct fid_ep *ep_fid, const void *buf,
				  size_t len, fi_addr_t dest_addr,
				  uint64_t addr, uint64_t key)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rma(ep_fid, IW_WR_WRITE, &iov, 1, addr, key, NULL,
			 FI_INJECT | IWARP_INJECT_CALL, 0);
}

static ssize_t iwarp_writedata(struct fid_ep *ep_fid, const void *buf,
			       size_t len, void *desc, uint64_t data,
			       fi_addr_t dest_addr, uint64_t addr,
			       uint64_t key, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rma(ep_fid, IW_WR_WRITE, &iov, 1, addr, key, context,
			 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags |
			 FI_REMOTE_CQ_DATA, data);
}

static ssize_t iwarp_inject_writedata(struct fid_ep *ep_fid,
				      const void *buf, size_t len,
				      uint64_t data, fi_addr_t dest_addr,
				      uint64_t addr, uint64_t key)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rma(ep_fid, IW_WR_WRITE, &iov, 1, addr, key, NULL,
			 FI_INJECT | IWARP_INJECT_CALL | FI_REMOTE_CQ_DATA,
			 data);
}

struct fi_ops_rma iwarp_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = iwarp_read,
	.readv = iwarp_readv,
	.readmsg = iwarp_readmsg,
	.write = iwarp_write,
	.writev = iwarp_writev,
	.writemsg = iwarp_writemsg,
	.inject = iwarp_inject_write,
	.writedata = iwarp_writedata,
	.injectdata = iwarp_inject_writedata,
};
