/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_ops_tagged of FI_EP_DGRAM: the untagged path (dgram_data.c) with a
 * 64-bit tag in the header. No FI_PEEK, FI_CLAIM or FI_DIRECTED_RECV: a
 * tagged datagram that no posted receive matches is dropped.
 */
#include "dgram.h"

static ssize_t iwarp_dgram_trecvmsg(struct fid_ep *fid,
				    const struct fi_msg_tagged *msg,
				    uint64_t flags)
{
	struct iwarp_dgram_op op = {
		.iov = msg->msg_iov, .count = msg->iov_count,
		.tag = msg->tag, .ignore = msg->ignore,
		.context = msg->context, .flags = flags, .tagged = true,
	};

	return iwarp_dgram_recv(iwarp_dgram_ep_of(&fid->fid), &op);
}

static ssize_t iwarp_dgram_trecvv(struct fid_ep *fid, const struct iovec *iov,
				  void **desc, size_t count, fi_addr_t src,
				  uint64_t tag, uint64_t ignore, void *context)
{
	struct iwarp_dgram_ep *ep = iwarp_dgram_ep_of(&fid->fid);
	struct iwarp_dgram_op op = {
		.iov = iov, .count = count, .tag = tag, .ignore = ignore,
		.context = context, .flags = ep->base.rx_op_flags,
		.tagged = true,
	};

	return iwarp_dgram_recv(ep, &op);
}

static ssize_t iwarp_dgram_trecv(struct fid_ep *fid, void *buf, size_t len,
				 void *desc, fi_addr_t src, uint64_t tag,
				 uint64_t ignore, void *context)
{
	struct iovec v = { buf, len };

	return iwarp_dgram_trecvv(fid, &v, &desc, 1, src, tag, ignore,
				  context);
}

static ssize_t iwarp_dgram_tsendmsg(struct fid_ep *fid,
				    const struct fi_msg_tagged *msg,
				    uint64_t flags)
{
	struct iwarp_dgram_op op = {
		.iov = msg->msg_iov, .count = msg->iov_count,
		.addr = msg->addr, .tag = msg->tag, .data = msg->data,
		.context = msg->context, .flags = flags, .tagged = true,
	};

	return iwarp_dgram_send(iwarp_dgram_ep_of(&fid->fid), &op);
}

/* Every fi_tsend flavour: extra flags over the endpoint's op flags. */
static ssize_t iwarp_dgram_tsend_any(struct fid_ep *fid, const void *buf,
				     size_t len, fi_addr_t dest, uint64_t tag,
				     uint64_t data, uint64_t more,
				     void *context)
{
	struct iwarp_dgram_ep *ep = iwarp_dgram_ep_of(&fid->fid);
	struct iovec v = { (void *)buf, len };
	struct iwarp_dgram_op op = {
		.iov = &v, .count = 1, .addr = dest, .tag = tag, .data = data,
		.context = context, .flags = ep->base.tx_op_flags | more,
		.tagged = true,
	};

	return iwarp_dgram_send(ep, &op);
}

static ssize_t iwarp_dgram_tsendv(struct fid_ep *fid, const struct iovec *iov,
				  void **desc, size_t count, fi_addr_t dest,
				  uint64_t tag, void *context)
{
	struct iwarp_dgram_ep *ep = iwarp_dgram_ep_of(&fid->fid);
	struct iwarp_dgram_op op = {
		.iov = iov, .count = count, .addr = dest, .tag = tag,
		.context = context, .flags = ep->base.tx_op_flags,
		.tagged = true,
	};

	return iwarp_dgram_send(ep, &op);
}

static ssize_t iwarp_dgram_tsend(struct fid_ep *fid, const void *buf,
				 size_t len, void *desc, fi_addr_t dest,
				 uint64_t tag, void *context)
{
	return iwarp_dgram_tsend_any(fid, buf, len, dest, tag, 0, 0, context);
}

static ssize_t iwarp_dgram_tinject(struct fid_ep *fid, const void *buf,
				   size_t len, fi_addr_t dest, uint64_t tag)
{
	return iwarp_dgram_tsend_any(fid, buf, len, dest, tag, 0, FI_INJECT,
				     NULL);
}

static ssize_t iwarp_dgram_tsenddata(struct fid_ep *fid, const void *buf,
				     size_t len, void *desc, uint64_t data,
				     fi_addr_t dest, uint64_t tag,
				     void *context)
{
	return iwarp_dgram_tsend_any(fid, buf, len, dest, tag, data,
				     FI_REMOTE_CQ_DATA, context);
}

static ssize_t iwarp_dgram_tinjectdata(struct fid_ep *fid, const void *buf,
				       size_t len, uint64_t data,
				       fi_addr_t dest, uint64_t tag)
{
	return iwarp_dgram_tsend_any(fid, buf, len, dest, tag, data,
				     FI_INJECT | FI_REMOTE_CQ_DATA, NULL);
}

struct fi_ops_tagged iwarp_dgram_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = iwarp_dgram_trecv,
	.recvv = iwarp_dgram_trecvv,
	.recvmsg = iwarp_dgram_trecvmsg,
	.send = iwarp_dgram_tsend,
	.sendv = iwarp_dgram_tsendv,
	.sendmsg = iwarp_dgram_tsendmsg,
	.inject = iwarp_dgram_tinject,
	.senddata = iwarp_dgram_tsenddata,
	.injectdata = iwarp_dgram_tinjectdata,
};
