/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared transmit and receive contexts (iwarp_ctx.h).
 */
#include "iwarp.h"

#include <stdlib.h>
#include <string.h>

/* ---- shared transmit context */

static int iwarp_stx_close(struct fid *fid)
{
	struct iwarp_stx *stx = iwarp_container_of(fid, struct iwarp_stx,
						   stx_fid.fid);

	if (atomic_load(&stx->ref))
		return -FI_EBUSY;
	atomic_fetch_sub(&stx->dom->ref, 1);
	free(stx);
	return 0;
}

static struct fi_ops iwarp_stx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_stx_close,
	.bind = iwarp_no_bind,
	.control = iwarp_no_control,
	.ops_open = iwarp_no_ops_open,
};

static ssize_t iwarp_ctx_no_cancel(fid_t fid, void *context)
{
	return -FI_ENOENT;
}

static int iwarp_ctx_no_getopt(fid_t fid, int level, int optname,
			       void *optval, size_t *optlen)
{
	return -FI_ENOPROTOOPT;
}

static int iwarp_ctx_no_setopt(fid_t fid, int level, int optname,
			       const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static struct fi_ops_ep iwarp_stx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = iwarp_ctx_no_cancel,
	.getopt = iwarp_ctx_no_getopt,
	.setopt = iwarp_ctx_no_setopt,
	.rx_size_left = iwarp_ep_base_size_left,
	.tx_size_left = iwarp_ep_base_size_left,
};

/* The attributes must be what an endpoint's transmit side could have. */
static bool iwarp_stx_attr_ok(const struct fi_tx_attr *a)
{
	return a->iov_limit <= IWARP_IOV_MAX && a->size <= (1u << 20);
}

int iwarp_stx_open(struct fid_domain *domain, struct fi_tx_attr *attr,
		   struct fid_stx **stxp, void *context)
{
	struct iwarp_domain *dom = iwarp_container_of(domain,
						      struct iwarp_domain,
						      domain_fid);
	struct iwarp_stx *stx;

	if (attr && !iwarp_stx_attr_ok(attr))
		return -FI_EINVAL;
	stx = iwarp_zalloc(sizeof(*stx));
	if (!stx)
		return -FI_ENOMEM;
	if (attr)
		stx->attr = *attr;
	stx->dom = dom;
	stx->stx_fid.fid.fclass = FI_CLASS_STX_CTX;
	stx->stx_fid.fid.context = context;
	stx->stx_fid.fid.ops = &iwarp_stx_fi_ops;
	stx->stx_fid.ops = &iwarp_stx_ep_ops;
	atomic_fetch_add(&dom->ref, 1);
	*stxp = &stx->stx_fid;
	return 0;
}

/* ---- shared receive context: taking receives */

bool iwarp_srx_match_msg(const struct iwarp_srx_rx *rx, const void *arg)
{
	return !rx->tagged;
}

bool iwarp_srx_match_tag(const struct iwarp_srx_rx *rx, const void *arg)
{
	uint64_t tag = *(const uint64_t *)arg;

	return rx->tagged && !((rx->tag ^ tag) & ~rx->ignore);
}

struct iwarp_srx_rx *iwarp_srx_take(struct iwarp_srx *srx,
				    bool (*match)(const struct iwarp_srx_rx *,
						  const void *),
				    const void *arg)
{
	struct iwarp_list *e;

	for (e = srx->posted.next; e != &srx->posted; e = e->next) {
		struct iwarp_srx_rx *rx = iwarp_container_of(
			e, struct iwarp_srx_rx, link);

		if (!match(rx, arg))
			continue;
		iwarp_list_del(&rx->link);
		srx->nposted--;
		return rx;
	}
	return NULL;
}

void iwarp_srx_untake(struct iwarp_srx *srx, struct iwarp_srx_rx *rx)
{
	iwarp_list_add_head(&srx->posted, &rx->link);
	srx->nposted++;
}

/* ---- shared receive context: the object */

static struct iwarp_srx *iwarp_srx_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_srx, ep_fid.fid);
}

static void iwarp_srx_free_posted(struct iwarp_srx *srx)
{
	while (!iwarp_list_empty(&srx->posted)) {
		struct iwarp_srx_rx *rx = iwarp_container_of(
			srx->posted.next, struct iwarp_srx_rx, link);

		iwarp_list_del(&rx->link);
		free(rx);
	}
	srx->nposted = 0;
}

static int iwarp_srx_close(struct fid *fid)
{
	struct iwarp_srx *srx = iwarp_srx_of(fid);
	struct iwarp_fabric *fab = srx->dom->fabric;

	iwarp_lock(fab);
	if (!iwarp_list_empty(&srx->eps)) {
		iwarp_unlock(fab);
		return -FI_EBUSY;
	}
	iwarp_srx_free_posted(srx);
	iwarp_unlock(fab);
	atomic_fetch_sub(&srx->dom->ref, 1);
	free(srx);
	return 0;
}

static int iwarp_srx_control(struct fid *fid, int command, void *arg)
{
	struct iwarp_srx *srx = iwarp_srx_of(fid);
	uint64_t *flags = arg;

	if (command != FI_GETOPSFLAG && command != FI_SETOPSFLAG)
		return -FI_ENOSYS;
	if (!flags)
		return -FI_EINVAL;
	if (command == FI_GETOPSFLAG)
		*flags = srx->op_flags;
	else
		srx->op_flags = *flags & ~FI_RECV;
	return 0;
}

static struct fi_ops iwarp_srx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_srx_close,
	.bind = iwarp_no_bind,
	.control = iwarp_srx_control,
	.ops_open = iwarp_no_ops_open,
};

/* The first bound endpoint's receive CQ and counter hear of a receive
 * that no message reached (canceled). */
static void iwarp_srx_report_cancel(struct iwarp_srx *srx,
				    const struct iwarp_srx_rx *rx)
{
	struct iwarp_ep_base *b;
	uint64_t flags = FI_RECV | (rx->tagged ? FI_TAGGED : FI_MSG);

	if (iwarp_list_empty(&srx->eps))
		return;
	b = iwarp_container_of(srx->eps.next, struct iwarp_ep_base, srx_link);
	if (b->rx_cq)
		iwarp_cq_write_err(b->rx_cq, rx->context, flags, 0, NULL, 0,
				   rx->tag, FI_ECANCELED, 0, NULL, 0, 0);
	if (b->cntr_recv)
		iwarp_cntr_inc_err(b->cntr_recv);
}

static ssize_t iwarp_srx_cancel(fid_t fid, void *context)
{
	struct iwarp_srx *srx = iwarp_srx_of(fid);
	struct iwarp_fabric *fab = srx->dom->fabric;
	struct iwarp_list *e;

	iwarp_lock(fab);
	for (e = srx->posted.next; e != &srx->posted; e = e->next) {
		struct iwarp_srx_rx *rx = iwarp_container_of(
			e, struct iwarp_srx_rx, link);

		if (rx->context != context)
			continue;
		iwarp_list_del(&rx->link);
		srx->nposted--;
		iwarp_srx_report_cancel(srx, rx);
		iwarp_unlock(fab);
		free(rx);
		return 0;
	}
	iwarp_unlock(fab);
	return -FI_ENOENT;
}

static struct fi_ops_ep iwarp_srx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = iwarp_srx_cancel,
	.getopt = iwarp_ctx_no_getopt,
	.setopt = iwarp_ctx_no_setopt,
	.rx_size_left = iwarp_ep_base_size_left,
	.tx_size_left = iwarp_ep_base_size_left,
};

/* Lock held. A bound endpoint takes rx now, or it waits in line. */
static void iwarp_srx_offer(struct iwarp_srx *srx, struct iwarp_srx_rx *rx)
{
	struct iwarp_list *e;

	for (e = srx->eps.next; e != &srx->eps; e = e->next) {
		struct iwarp_ep_base *b = iwarp_container_of(
			e, struct iwarp_ep_base, srx_link);

		if (b->enabled && b->type->srx_offer(b, rx)) {
			free(rx);
			return;
		}
	}
	iwarp_list_add_tail(&srx->posted, &rx->link);
	srx->nposted++;
}

/* What a shared context cannot hand over: a buffer for several
 * messages, or a peek at the bound endpoints' unexpected messages. */
#define IWARP_SRX_BAD_FLAGS (FI_MULTI_RECV | FI_PEEK | FI_CLAIM | FI_DISCARD)

int iwarp_srx_rx_new(const struct iovec *iov, size_t count, fi_addr_t src,
		     uint64_t tag, uint64_t ignore, void *context,
		     uint64_t flags, bool tagged, struct iwarp_srx_rx **out)
{
	struct iwarp_srx_rx *rx;

	if (count > IWARP_IOV_MAX || (count && !iov) ||
	    (flags & IWARP_SRX_BAD_FLAGS))
		return -FI_EINVAL;
	rx = iwarp_zalloc(sizeof(*rx));
	if (!rx)
		return -FI_ENOMEM;
	rx->context = context;
	rx->flags = flags;
	rx->tagged = tagged;
	rx->src = src;
	rx->tag = tag;
	rx->ignore = ignore;
	rx->count = count;
	if (count)
		memcpy(rx->iov, iov, count * sizeof(*iov));
	*out = rx;
	return 0;
}

static ssize_t iwarp_srx_post(struct iwarp_srx *srx, const struct iovec *iov,
			      size_t count, fi_addr_t src, uint64_t tag,
			      uint64_t ignore, void *context, uint64_t flags,
			      bool tagged)
{
	struct iwarp_fabric *fab = srx->dom->fabric;
	struct iwarp_srx_rx *rx;
	int ret;

	if (srx->attr.size && srx->nposted >= srx->attr.size)
		return -FI_EAGAIN;
	ret = iwarp_srx_rx_new(iov, count, src, tag, ignore, context, flags,
			       tagged, &rx);
	if (ret)
		return ret;
	iwarp_lock(fab);
	iwarp_srx_offer(srx, rx);
	iwarp_unlock(fab);
	return 0;
}

#define SRX(e) iwarp_srx_of(&(e)->fid)

static ssize_t iwarp_srx_recv(struct fid_ep *e, void *buf, size_t len,
			      void *desc, fi_addr_t src, void *ctx)
{
	struct iovec iov = { buf, len };

	return iwarp_srx_post(SRX(e), &iov, 1, src, 0, 0, ctx,
			      SRX(e)->op_flags, false);
}

static ssize_t iwarp_srx_recvv(struct fid_ep *e, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t src,
			       void *ctx)
{
	return iwarp_srx_post(SRX(e), iov, count, src, 0, 0, ctx,
			      SRX(e)->op_flags, false);
}

static ssize_t iwarp_srx_recvmsg(struct fid_ep *e, const struct fi_msg *m,
				 uint64_t flags)
{
	return iwarp_srx_post(SRX(e), m->msg_iov, m->iov_count, m->addr, 0, 0,
			      m->context, flags, false);
}

static ssize_t iwarp_srx_trecv(struct fid_ep *e, void *buf, size_t len,
			       void *desc, fi_addr_t src, uint64_t tag,
			       uint64_t ignore, void *ctx)
{
	struct iovec iov = { buf, len };

	return iwarp_srx_post(SRX(e), &iov, 1, src, tag, ignore, ctx,
			      SRX(e)->op_flags, true);
}

static ssize_t iwarp_srx_trecvv(struct fid_ep *e, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t src,
				uint64_t tag, uint64_t ignore, void *ctx)
{
	return iwarp_srx_post(SRX(e), iov, count, src, tag, ignore, ctx,
			      SRX(e)->op_flags, true);
}

static ssize_t iwarp_srx_trecvmsg(struct fid_ep *e,
				  const struct fi_msg_tagged *m,
				  uint64_t flags)
{
	return iwarp_srx_post(SRX(e), m->msg_iov, m->iov_count, m->addr,
			      m->tag, m->ignore, m->context, flags, true);
}

/* A receive context sends nothing (iwarp_ctx.h). */
ssize_t iwarp_srx_no_send(struct fid_ep *e, const void *buf,
				 size_t len, void *desc, fi_addr_t dest,
				 void *ctx)
{
	return -FI_ENOSYS;
}

ssize_t iwarp_srx_no_sendv(struct fid_ep *e, const struct iovec *iov,
				  void **desc, size_t count, fi_addr_t dest,
				  void *ctx)
{
	return -FI_ENOSYS;
}

ssize_t iwarp_srx_no_sendmsg(struct fid_ep *e, const struct fi_msg *m,
				    uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t iwarp_srx_no_inject(struct fid_ep *e, const void *buf,
				   size_t len, fi_addr_t dest)
{
	return -FI_ENOSYS;
}

static struct fi_ops_msg iwarp_srx_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = iwarp_srx_recv,
	.recvv = iwarp_srx_recvv,
	.recvmsg = iwarp_srx_recvmsg,
	.send = iwarp_srx_no_send,
	.sendv = iwarp_srx_no_sendv,
	.sendmsg = iwarp_srx_no_sendmsg,
	.inject = iwarp_srx_no_inject,
	.senddata = iwarp_no_senddata,
	.injectdata = iwarp_no_injectdata,
};

ssize_t iwarp_srx_no_tsend(struct fid_ep *e, const void *buf,
				  size_t len, void *desc, fi_addr_t dest,
				  uint64_t tag, void *ctx)
{
	return -FI_ENOSYS;
}

ssize_t iwarp_srx_no_tsendv(struct fid_ep *e, const struct iovec *iov,
				   void **desc, size_t count, fi_addr_t dest,
				   uint64_t tag, void *ctx)
{
	return -FI_ENOSYS;
}

ssize_t iwarp_srx_no_tsendmsg(struct fid_ep *e,
				     const struct fi_msg_tagged *m,
				     uint64_t flags)
{
	return -FI_ENOSYS;
}

ssize_t iwarp_srx_no_tinject(struct fid_ep *e, const void *buf,
				    size_t len, fi_addr_t dest, uint64_t tag)
{
	return -FI_ENOSYS;
}

ssize_t iwarp_srx_no_tsenddata(struct fid_ep *e, const void *buf,
				      size_t len, void *desc, uint64_t data,
				      fi_addr_t dest, uint64_t tag, void *ctx)
{
	return -FI_ENOSYS;
}

ssize_t iwarp_srx_no_tinjectdata(struct fid_ep *e, const void *buf,
					size_t len, uint64_t data,
					fi_addr_t dest, uint64_t tag)
{
	return -FI_ENOSYS;
}

static struct fi_ops_tagged iwarp_srx_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = iwarp_srx_trecv,
	.recvv = iwarp_srx_trecvv,
	.recvmsg = iwarp_srx_trecvmsg,
	.send = iwarp_srx_no_tsend,
	.sendv = iwarp_srx_no_tsendv,
	.sendmsg = iwarp_srx_no_tsendmsg,
	.inject = iwarp_srx_no_tinject,
	.senddata = iwarp_srx_no_tsenddata,
	.injectdata = iwarp_srx_no_tinjectdata,
};

static bool iwarp_srx_attr_ok(const struct fi_rx_attr *a)
{
	return a->iov_limit <= IWARP_IOV_MAX &&
	       !(a->op_flags & IWARP_SRX_BAD_FLAGS);
}

int iwarp_srx_open(struct fid_domain *domain, struct fi_rx_attr *attr,
		   struct fid_ep **rx_ep, void *context)
{
	struct iwarp_domain *dom = iwarp_container_of(domain,
						      struct iwarp_domain,
						      domain_fid);
	struct iwarp_srx *srx;

	if (attr && !iwarp_srx_attr_ok(attr))
		return -FI_EINVAL;
	srx = iwarp_zalloc(sizeof(*srx));
	if (!srx)
		return -FI_ENOMEM;
	if (attr) {
		srx->attr = *attr;
		srx->op_flags = attr->op_flags;
	}
	srx->dom = dom;
	iwarp_list_init(&srx->eps);
	iwarp_list_init(&srx->posted);
	srx->ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	srx->ep_fid.fid.context = context;
	srx->ep_fid.fid.ops = &iwarp_srx_fi_ops;
	srx->ep_fid.ops = &iwarp_srx_ep_ops;
	srx->ep_fid.msg = &iwarp_srx_msg_ops;
	srx->ep_fid.tagged = &iwarp_srx_tagged_ops;
	atomic_fetch_add(&dom->ref, 1);
	*rx_ep = &srx->ep_fid;
	return 0;
}

/* ---- binding endpoints */

static int iwarp_srx_bind(struct iwarp_ep_base *b, struct iwarp_srx *srx)
{
	enum fi_ep_type type = b->info->ep_attr->type;

	if (!b->type->srx_offer || b->srx || srx->dom != b->dom ||
	    (srx->ep_type != FI_EP_UNSPEC && srx->ep_type != type))
		return -FI_EINVAL;
	iwarp_lock(b->fab);
	srx->ep_type = type;
	b->srx = srx;
	iwarp_list_add_tail(&srx->eps, &b->srx_link);
	iwarp_unlock(b->fab);
	return 0;
}

int iwarp_ctx_bind(struct iwarp_ep_base *b, struct fid *bfid)
{
	struct iwarp_stx *stx;

	if (bfid->fclass == FI_CLASS_SRX_CTX)
		return iwarp_srx_bind(b, iwarp_srx_of(bfid));
	stx = iwarp_container_of(bfid, struct iwarp_stx, stx_fid.fid);
	if (b->stx || stx->dom != b->dom)
		return -FI_EINVAL;
	b->stx = stx;
	atomic_fetch_add(&stx->ref, 1);
	return 0;
}

void iwarp_ctx_unbind(struct iwarp_ep_base *b)
{
	if (b->srx) {
		iwarp_list_del(&b->srx_link);
		if (iwarp_list_empty(&b->srx->eps))
			b->srx->ep_type = FI_EP_UNSPEC;
		b->srx = NULL;
	}
	if (b->stx)
		atomic_fetch_sub(&b->stx->ref, 1);
	b->stx = NULL;
}
