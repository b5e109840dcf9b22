/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA on FI_EP_RDM (rdm.h): fi_write/fi_read as RDMA Writes and Reads
 * through the peer's transport, fi_writedata with a WDATA message behind
 * the Write, delivery completion with a zero-length Read behind it.
 * Target memory is named by the key (our STag) and an address (virtual
 * or offset, as the target's mr_mode says).
 */
#include "rdm.h"

#include <stdlib.h>

#define RDM(ep_) iwarp_rdm_ep_of(&(ep_)->fid)

/* ---- fi_ops_rma */

static ssize_t iwarp_rdm_rma(struct iwarp_rdm_ep *ep, bool write,
			     const struct iovec *iov, size_t count,
			     fi_addr_t dest, uint64_t addr, uint64_t key,
			     uint64_t data, void *context, uint64_t flags)
{
	struct iwarp_rdm_tx *tx;
	size_t i;

	if (count > IW_MAX_SGE || (count && !iov) || key > UINT32_MAX)
		return -FI_EINVAL;
	tx = iwarp_rdm_tx_new();
	if (!tx)
		return -FI_ENOMEM;
	tx->kind = write ? IWARP_RDM_K_WRITE : IWARP_RDM_K_READ;
	tx->context = context;
	tx->cq_flags = FI_RMA | (write ? FI_WRITE : FI_READ);
	tx->count = count;
	for (i = 0; i < count; i++) {
		tx->iov[i] = iov[i];
		tx->len += iov[i].iov_len;
	}
	if (tx->len > UINT32_MAX ||
	    ((flags & FI_INJECT) && tx->len > IWARP_RDM_INJECT_MAX)) {
		free(tx);
		return -FI_EINVAL;
	}
	tx->rkey = (uint32_t)key;
	tx->raddr = addr;
	tx->cq = iwarp_rdm_wants_cq(&ep->base, flags);
	tx->op_flags = flags & ~IWARP_INJECT_CALL;
	if (write && (flags & FI_INJECT) && iwarp_rdm_tx_flatten(tx)) {
		free(tx);
		return -FI_ENOMEM;
	}
	if (write && (flags & FI_REMOTE_CQ_DATA)) {
		tx->wdata = true;
		tx->hdr.data = data;
		tx->hdr.len = (uint32_t)tx->len;
	}
	/* a Write is delivered when a Read behind it is answered */
	tx->fence = write && (flags & IWARP_RDM_DELIVERY);
	return iwarp_rdm_submit(ep, tx, dest);
}

static ssize_t iwarp_rdm_read(struct fid_ep *e, void *buf, size_t len,
			      void *desc, fi_addr_t src, uint64_t addr,
			      uint64_t key, void *context)
{
	struct iovec iov = { buf, len };

	(void)desc;
	return iwarp_rdm_rma(RDM(e), false, &iov, 1, src, addr, key, 0,
			     context, RDM(e)->base.tx_op_flags);
}

static ssize_t iwarp_rdm_readv(struct fid_ep *e, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t src,
			       uint64_t addr, uint64_t key, void *context)
{
	(void)desc;
	return iwarp_rdm_rma(RDM(e), false, iov, count, src, addr, key, 0,
			     context, RDM(e)->base.tx_op_flags);
}

static ssize_t iwarp_rdm_rma_msg(struct fid_ep *e, bool write,
				 const struct fi_msg_rma *m, uint64_t flags)
{
	if (!m || m->rma_iov_count != 1 || !m->rma_iov)
		return -FI_EINVAL;
	return iwarp_rdm_rma(RDM(e), write, m->msg_iov, m->iov_count,
			     m->addr, m->rma_iov[0].addr, m->rma_iov[0].key,
			     m->data, m->context, flags);
}

static ssize_t iwarp_rdm_readmsg(struct fid_ep *e, const struct fi_msg_rma *m,
				 uint64_t flags)
{
	return iwarp_rdm_rma_msg(e, false, m, flags);
}

static ssize_t iwarp_rdm_write(struct fid_ep *e, const void *buf, size_t len,
			       void *desc, fi_addr_t dest, uint64_t addr,
			       uint64_t key, void *context)
{
	struct iovec iov = { (void *)buf, len };

	(void)desc;
	return iwarp_rdm_rma(RDM(e), true, &iov, 1, dest, addr, key, 0,
			     context, RDM(e)->base.tx_op_flags);
}

static ssize_t iwarp_rdm_writev(struct fid_ep *e, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t dest,
				uint64_t addr, uint64_t key, void *context)
{
	(void)desc;
	return iwarp_rdm_rma(RDM(e), true, iov, count, dest, addr, key, 0,
			     context, RDM(e)->base.tx_op_flags);
}

static ssize_t iwarp_rdm_writemsg(struct fid_ep *e,
				  const struct fi_msg_rma *m, uint64_t flags)
{
	return iwarp_rdm_rma_msg(e, true, m, flags);
}

static ssize_t iwarp_rdm_inject_write(struct fid_ep *e, const void *buf,
				      size_t len, fi_addr_t dest,
				      uint64_t addr, uint64_t key)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_rma(RDM(e), true, &iov, 1, dest, addr, key, 0, NULL,
			     (RDM(e)->base.tx_op_flags & ~IWARP_RDM_DELIVERY) |
				     FI_INJECT | IWARP_INJECT_CALL);
}

static ssize_t iwarp_rdm_writedata(struct fid_ep *e, const void *buf,
				   size_t len, void *desc, uint64_t data,
				   fi_addr_t dest, uint64_t addr, uint64_t key,
				   void *context)
{
	struct iovec iov = { (void *)buf, len };

	(void)desc;
	return iwarp_rdm_rma(RDM(e), true, &iov, 1, dest, addr, key, data,
			     context,
			     RDM(e)->base.tx_op_flags | FI_REMOTE_CQ_DATA);
}

static ssize_t iwarp_rdm_inject_writedata(struct fid_ep *e, const void *buf,
					  size_t len, uint64_t data,
					  fi_addr_t dest, uint64_t addr,
					  uint64_t key)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_rma(RDM(e), true, &iov, 1, dest, addr, key, data,
			     NULL,
			     (RDM(e)->base.tx_op_flags & ~IWARP_RDM_DELIVERY) |
				     FI_INJECT | FI_REMOTE_CQ_DATA |
				     IWARP_INJECT_CALL);
}

struct fi_ops_rma iwarp_rdm_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = iwarp_rdm_read,
	.readv = iwarp_rdm_readv,
	.readmsg = iwarp_rdm_readmsg,
	.write = iwarp_rdm_write,
	.writev = iwarp_rdm_writev,
	.writemsg = iwarp_rdm_writemsg,
	.inject = iwarp_rdm_inject_write,
	.writedata = iwarp_rdm_writedata,
	.injectdata = iwarp_rdm_inject_writedata,
};

/* The Write before a WDATA on this stream is placed: report its data. */
void iwarp_rdm_wdata_in(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in)
{
	iwarp_cq_write(peer->ep->base.rx_cq, NULL,
		       FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
		       in->hdr.len, NULL, in->hdr.data, 0,
		       iwarp_rdm_from(peer));
	iwarp_rdm_owe(peer);
}
