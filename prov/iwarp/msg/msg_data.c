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

#include <string.h>

#define IWARP_DELIVERY (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)
/* The fi_inject calls complete silently; an FI_INJECT op flag on other
 * calls only frees the buffer at once (fi_msg(3)). */
#define IWARP_INJECT_CALL (1ULL << 62)

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

static void iwarp_op_report(struct iwarp_ep *ep, struct iw_qp *qp,
			    struct iwarp_op *op, const struct iw_wc *wc)
{
	struct iwarp_ep_base *b = &ep->base;
	struct iwarp_cq *cq = op->flags & FI_RECV ? b->rx_cq : b->tx_cq;
	struct iwarp_cntr *cntr = iwarp_ep_base_cntr(b, op->flags);
	size_t len = op->flags & FI_RECV ? wc->byte_len : op->len;
	int err, prov;

	if (op->status == IW_WC_SUCCESS) {
		if (op->cq)
			iwarp_cq_write(cq, op->context, op->flags, len, NULL,
				       0, 0, FI_ADDR_NOTAVAIL);
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
	iwarp_cq_write_err(cq, op->context, op->flags, len, NULL, 0, 0, err,
			   prov, NULL, 0, 0);
	if (cntr)
		iwarp_cntr_inc_err(cntr);
}

/* Engine callback: an op may span two work requests (delivery). */
void iwarp_ep_complete(void *arg, struct iw_qp *qp, const struct iw_wc *wc)
{
	struct iwarp_ep *ep = arg;
	struct iwarp_op *op = wc->ctx;

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
	iwarp_op_report(ep, qp, op, wc);
	iwarp_op_put(ep, op);
}

struct iwarp_tx {
	enum iw_wr_opcode op;
	const struct iovec *iov;
	size_t count;
	uint64_t raddr;
	uint64_t key;
	void *context;
	uint64_t flags;		/* op flags */
	uint64_t cqflags;
};

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

/* Posts the engine work request(s) of one transmit op; lock held. */
static int iwarp_tx_post(struct iwarp_ep *ep, const struct iwarp_tx *t,
			 struct iwarp_op *op, const struct iw_sge *sgl)
{
	bool delivery = (t->flags & IWARP_DELIVERY) &&
			!(t->flags & FI_INJECT) && t->op != IW_WR_READ;
	struct iw_send_wr wr = {
		.ctx = op,
		.op = t->op,
		.flags = IW_WR_SIGNALED,
		.sgl = sgl,
		.num_sge = (int)t->count,
		.rstag = (uint32_t)t->key,
		.rto = t->raddr,
	};
	struct iw_send_wr fence = {
		.ctx = op,
		.op = IW_WR_READ,
		.flags = IW_WR_SIGNALED,
	};
	int ret;

	if (t->flags & FI_INJECT)
		wr.flags |= IW_WR_INLINE;
	if (t->flags & FI_FENCE)
		wr.flags |= IW_WR_FENCE;
	op->pending = delivery ? 2 : 1;
	if (delivery)	/* the Read goes in the Send's TCP segment */
		wr.flags |= IW_WR_MORE;
	ret = iw_qp_post_send(ep->qp, &wr);
	if (ret || !delivery)
		return ret;
	ret = iw_qp_post_send(ep->qp, &fence);
	if (ret) {
		op->pending = 1;	/* only the first will complete */
		iw_qp_progress(ep->qp);	/* and it is still to be sent */
	}
	return 0;
}

static ssize_t iwarp_tx(struct iwarp_ep *ep, const struct iwarp_tx *t)
{
	struct iw_sge sgl[IWARP_IOV_MAX];
	struct iwarp_op *op;
	size_t len;
	int ret;

	ret = iwarp_sgl(t->iov, t->count, sgl, &len);
	if (ret)
		return ret;
	if ((t->flags & FI_INJECT) && len > IWARP_INJECT_MAX)
		return -FI_EINVAL;
	if (t->flags & FI_REMOTE_CQ_DATA)
		return -FI_EINVAL;	/* not offered on MSG */
	iwarp_lock(ep->base.fab);
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
	op->len = len;
	op->status = IW_WC_SUCCESS;
	memset(&op->err, 0, sizeof(op->err));
	op->cq = !(t->flags & IWARP_INJECT_CALL) &&
		 (!ep->base.tx_selective || (t->flags & FI_COMPLETION));
	ret = iwarp_tx_post(ep, t, op, sgl);
	if (ret == -EAGAIN) {
		iwarp_progress(ep->base.fab);
		ret = iwarp_tx_post(ep, t, op, sgl);
	}
	if (ret)
		iwarp_op_put(ep, op);
	iwarp_unlock(ep->base.fab);
	return iwarp_fi_err(ret);
}

static ssize_t iwarp_rx(struct iwarp_ep *ep, const struct iovec *iov,
			size_t count, void *context, uint64_t flags)
{
	struct iw_sge sgl[IWARP_IOV_MAX];
	struct iw_recv_wr wr = { .sgl = sgl, .num_sge = (int)count };
	struct iwarp_op *op;
	size_t len;
	int ret;

	ret = iwarp_sgl(iov, count, sgl, &len);
	if (ret)
		return ret;
	iwarp_lock(ep->base.fab);
	if (!ep->qp) {
		iwarp_unlock(ep->base.fab);
		return -FI_EOPBADSTATE;
	}
	op = iwarp_op_get(ep);
	if (!op) {
		iwarp_unlock(ep->base.fab);
		return -FI_EAGAIN;
	}
	op->context = context;
	op->flags = FI_RECV | FI_MSG;
	op->len = len;
	op->pending = 1;
	op->status = IW_WC_SUCCESS;
	memset(&op->err, 0, sizeof(op->err));
	op->cq = !ep->base.rx_selective || (flags & FI_COMPLETION);
	wr.ctx = op;
	ret = iw_qp_post_recv(ep->qp, &wr);
	if (ret)
		iwarp_op_put(ep, op);
	iwarp_unlock(ep->base.fab);
	return iwarp_fi_err(ret);
}

/* ---- fi_ops_msg */

static ssize_t iwarp_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			  void *desc, fi_addr_t src_addr, void *context)
{
	struct iwarp_ep *ep = iwarp_ep_of(&ep_fid->fid);
	struct iovec iov = { buf, len };

	return iwarp_rx(ep, &iov, 1, context, ep->base.rx_op_flags);
}

static ssize_t iwarp_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t src_addr,
			   void *context)
{
	struct iwarp_ep *ep = iwarp_ep_of(&ep_fid->fid);

	return iwarp_rx(ep, iov, count, context, ep->base.rx_op_flags);
}

static ssize_t iwarp_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			     uint64_t flags)
{
	return iwarp_rx(iwarp_ep_of(&ep_fid->fid), msg->msg_iov,
			msg->iov_count, msg->context, flags);
}

static ssize_t iwarp_send_common(struct fid_ep *ep_fid,
				 const struct iovec *iov, size_t count,
				 void *context, uint64_t flags)
{
	struct iwarp_tx t = {
		.op = IW_WR_SEND,
		.iov = iov,
		.count = count,
		.context = context,
		.flags = flags,
		.cqflags = FI_SEND | FI_MSG,
	};

	return iwarp_tx(iwarp_ep_of(&ep_fid->fid), &t);
}

static ssize_t iwarp_send(struct fid_ep *ep_fid, const void *buf, size_t len,
			  void *desc, fi_addr_t dest_addr, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_send_common(ep_fid, &iov, 1, context,
				 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags);
}

static ssize_t iwarp_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t dest_addr,
			   void *context)
{
	return iwarp_send_common(ep_fid, iov, count, context,
				 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags);
}

static ssize_t iwarp_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
			     uint64_t flags)
{
	return iwarp_send_common(ep_fid, msg->msg_iov, msg->iov_count,
				 msg->context, flags);
}

static ssize_t iwarp_inject(struct fid_ep *ep_fid, const void *buf,
			    size_t len, fi_addr_t dest_addr)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_send_common(ep_fid, &iov, 1, NULL,
				 FI_INJECT | IWARP_INJECT_CALL);
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
	.senddata = iwarp_no_senddata,
	.injectdata = iwarp_no_injectdata,
};

/* ---- fi_ops_rma */

static ssize_t iwarp_rma(struct fid_ep *ep_fid, enum iw_wr_opcode op,
			 const struct iovec *iov, size_t count,
			 uint64_t addr, uint64_t key, void *context,
			 uint64_t flags)
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
	};

	if (key > UINT32_MAX)
		return -FI_EINVAL;
	return iwarp_tx(iwarp_ep_of(&ep_fid->fid), &t);
}

static ssize_t iwarp_read(struct fid_ep *ep_fid, void *buf, size_t len,
			  void *desc, fi_addr_t src_addr, uint64_t addr,
			  uint64_t key, void *context)
{
	struct iovec iov = { buf, len };

	return iwarp_rma(ep_fid, IW_WR_READ, &iov, 1, addr, key, context,
			 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags);
}

static ssize_t iwarp_readv(struct fid_ep *ep_fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t src_addr,
			   uint64_t addr, uint64_t key, void *context)
{
	return iwarp_rma(ep_fid, IW_WR_READ, iov, count, addr, key, context,
			 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags);
}

static ssize_t iwarp_rma_msg(struct fid_ep *ep_fid, enum iw_wr_opcode op,
			     const struct fi_msg_rma *msg, uint64_t flags)
{
	if (msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	return iwarp_rma(ep_fid, op, msg->msg_iov, msg->iov_count,
			 msg->rma_iov[0].addr, msg->rma_iov[0].key,
			 msg->context, flags);
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
			 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags);
}

static ssize_t iwarp_writev(struct fid_ep *ep_fid, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t dest_addr,
			    uint64_t addr, uint64_t key, void *context)
{
	return iwarp_rma(ep_fid, IW_WR_WRITE, iov, count, addr, key, context,
			 iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags);
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
			 FI_INJECT | IWARP_INJECT_CALL);
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
	.writedata = iwarp_no_writedata,
	.injectdata = iwarp_no_inject_writedata,
};
