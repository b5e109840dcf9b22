/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Scalable RDM endpoints (rdm.h): one RDM endpoint (address, peers,
 * connections) with tx_ctx_cnt transmit and rx_ctx_cnt receive
 * contexts. A transmit context sends through the endpoint's connections
 * and completes on its own CQ; fi_rx_addr's index travels in the
 * header and picks the receive context at the target, whose receives
 * wait in its queue as those of a shared receive context do.
 */
#include "rdm.h"

#include <stdlib.h>
#include <string.h>

static struct iwarp_rdm_ctx *iwarp_rdm_ctx_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_rdm_ctx,
				  base.ep_fid.fid);
}

/* ---- contexts: objects */

/* The application is done with it; the memory stays until the endpoint
 * closes, as operations in flight still name it (their completions go
 * nowhere now). */
static int iwarp_rdm_ctx_close(struct fid *fid)
{
	struct iwarp_rdm_ctx *c = iwarp_rdm_ctx_of(fid);
	struct iwarp_fabric *fab = c->base.fab;

	iwarp_lock(fab);
	c->open = false;
	c->base.enabled = false;
	while (!iwarp_list_empty(&c->q.posted)) {
		struct iwarp_srx_rx *s = iwarp_container_of(
			c->q.posted.next, struct iwarp_srx_rx, link);

		iwarp_list_del(&s->link);
		free(s);
	}
	c->q.nposted = 0;
	iwarp_ep_base_fini(&c->base);
	iwarp_unlock(fab);
	return 0;
}

static int iwarp_rdm_ctx_enable(struct iwarp_ep_base *b)
{
	struct iwarp_rdm_ctx *c = iwarp_container_of(b, struct iwarp_rdm_ctx,
						     base);
	bool rx = b->ep_fid.fid.fclass == FI_CLASS_RX_CTX;

	if ((rx && !b->rx_cq) || (!rx && !b->tx_cq))
		return -FI_ENOCQ;
	iwarp_lock(b->fab);
	b->enabled = c->open;
	iwarp_unlock(b->fab);
	return 0;
}

static const struct iwarp_ep_type iwarp_rdm_ctx_type = {
	.name = "RDM context",
	.enable = iwarp_rdm_ctx_enable,
};

static struct fi_ops iwarp_rdm_ctx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_rdm_ctx_close,
	.bind = iwarp_ep_base_bind,
	.control = iwarp_ep_base_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

/* ---- receive contexts */

static ssize_t iwarp_rdm_ctx_cancel(fid_t fid, void *context)
{
	struct iwarp_rdm_ctx *c = iwarp_rdm_ctx_of(fid);
	struct iwarp_srx_rx *s = NULL;
	struct iwarp_list *e;

	iwarp_lock(c->base.fab);
	for (e = c->q.posted.next; e != &c->q.posted; e = e->next) {
		s = iwarp_container_of(e, struct iwarp_srx_rx, link);
		if (s->context == context)
			break;
		s = NULL;
	}
	if (s) {
		iwarp_list_del(&s->link);
		c->q.nposted--;
		iwarp_cq_write_err(c->base.rx_cq, context, FI_RECV |
				   (s->tagged ? FI_TAGGED : FI_MSG), 0, NULL,
				   0, s->tag, FI_ECANCELED, 0, NULL, 0, 0);
		if (c->base.cntr_recv)
			iwarp_cntr_inc_err(c->base.cntr_recv);
		free(s);
	}
	iwarp_unlock(c->base.fab);
	return s ? 0 : -FI_ENOENT;
}

static struct fi_ops_ep iwarp_rdm_ctx_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = iwarp_rdm_ctx_cancel,
	.getopt = iwarp_ep_base_getopt,
	.setopt = iwarp_ep_base_setopt,
	.rx_size_left = iwarp_ep_base_size_left,
	.tx_size_left = iwarp_ep_base_size_left,
};

static ssize_t iwarp_rdm_ctx_recv_common(struct iwarp_rdm_ctx *c,
					 const struct iovec *iov, size_t count,
					 fi_addr_t src, uint64_t tag,
					 uint64_t ignore, void *context,
					 uint64_t flags, bool tagged)
{
	struct iwarp_srx_rx *s;
	int ret;

	ret = iwarp_srx_rx_new(iov, count, src, tag, ignore, context, flags,
			       tagged, &s);
	if (ret)
		return ret;
	iwarp_lock(c->base.fab);
	if (!c->base.enabled) {
		iwarp_unlock(c->base.fab);
		free(s);
		return -FI_EOPBADSTATE;
	}
	iwarp_rdm_ctx_post(c, s);
	iwarp_unlock(c->base.fab);
	return 0;
}

#define CTX(e) iwarp_rdm_ctx_of(&(e)->fid)

static ssize_t iwarp_rdm_ctx_recv(struct fid_ep *e, void *buf, size_t len,
				  void *desc, fi_addr_t src, void *ctx)
{
	struct iovec iov = { buf, len };

	return iwarp_rdm_ctx_recv_common(CTX(e), &iov, 1, src, 0, 0, ctx,
					 CTX(e)->base.rx_op_flags, false);
}

static ssize_t iwarp_rdm_ctx_recvv(struct fid_ep *e, const struct iovec *iov,
				   void **desc, size_t count, fi_addr_t src,
				   void *ctx)
{
	return iwarp_rdm_ctx_recv_common(CTX(e), iov, count, src, 0, 0, ctx,
					 CTX(e)->base.rx_op_flags, false);
}

static ssize_t iwarp_rdm_ctx_recvmsg(struct fid_ep *e, const struct fi_msg *m,
				     uint64_t flags)
{
	return iwarp_rdm_ctx_recv_common(CTX(e), m->msg_iov, m->iov_count,
					 m->addr, 0, 0, m->context, flags,
					 false);
}

static ssize_t iwarp_rdm_ctx_trecv(struct fid_ep *e, void *buf, size_t len,
				   void *desc, fi_addr_t src, uint64_t tag,
				   uint64_t ignore, void *ctx)
{
	struct iovec iov = { buf, len };

	return iwarp_rdm_ctx_recv_common(CTX(e), &iov, 1, src, tag, ignore,
					 ctx, CTX(e)->base.rx_op_flags, true);
}

static ssize_t iwarp_rdm_ctx_trecvv(struct fid_ep *e, const struct iovec *iov,
				    void **desc, size_t count, fi_addr_t src,
				    uint64_t tag, uint64_t ignore, void *ctx)
{
	return iwarp_rdm_ctx_recv_common(CTX(e), iov, count, src, tag, ignore,
					 ctx, CTX(e)->base.rx_op_flags, true);
}

static ssize_t iwarp_rdm_ctx_trecvmsg(struct fid_ep *e,
				      const struct fi_msg_tagged *m,
				      uint64_t flags)
{
	return iwarp_rdm_ctx_recv_common(CTX(e), m->msg_iov, m->iov_count,
					 m->addr, m->tag, m->ignore,
					 m->context, flags, true);
}

static struct fi_ops_msg iwarp_rdm_rxc_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = iwarp_rdm_ctx_recv,
	.recvv = iwarp_rdm_ctx_recvv,
	.recvmsg = iwarp_rdm_ctx_recvmsg,
	.send = iwarp_srx_no_send,
	.sendv = iwarp_srx_no_sendv,
	.sendmsg = iwarp_srx_no_sendmsg,
	.inject = iwarp_srx_no_inject,
	.senddata = iwarp_no_senddata,
	.injectdata = iwarp_no_injectdata,
};

static struct fi_ops_tagged iwarp_rdm_rxc_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = iwarp_rdm_ctx_trecv,
	.recvv = iwarp_rdm_ctx_trecvv,
	.recvmsg = iwarp_rdm_ctx_trecvmsg,
	.send = iwarp_srx_no_tsend,
	.sendv = iwarp_srx_no_tsendv,
	.sendmsg = iwarp_srx_no_tsendmsg,
	.inject = iwarp_srx_no_tinject,
	.senddata = iwarp_srx_no_tsenddata,
	.injectdata = iwarp_srx_no_tinjectdata,
};

/* ---- transmit contexts */

static ssize_t iwarp_rdm_ctx_no_recv(struct fid_ep *e, void *buf, size_t len,
				     void *desc, fi_addr_t src, void *ctx)
{
	return -FI_ENOSYS;
}

static ssize_t iwarp_rdm_ctx_no_recvv(struct fid_ep *e,
				      const struct iovec *iov, void **desc,
				      size_t count, fi_addr_t src, void *ctx)
{
	return -FI_ENOSYS;
}

static ssize_t iwarp_rdm_ctx_no_recvmsg(struct fid_ep *e,
					const struct fi_msg *m, uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t iwarp_rdm_ctx_no_trecv(struct fid_ep *e, void *buf,
				      size_t len, void *desc, fi_addr_t src,
				      uint64_t tag, uint64_t ignore, void *ctx)
{
	return -FI_ENOSYS;
}

static ssize_t iwarp_rdm_ctx_no_trecvv(struct fid_ep *e,
				       const struct iovec *iov, void **desc,
				       size_t count, fi_addr_t src,
				       uint64_t tag, uint64_t ignore,
				       void *ctx)
{
	return -FI_ENOSYS;
}

static ssize_t iwarp_rdm_ctx_no_trecvmsg(struct fid_ep *e,
					 const struct fi_msg_tagged *m,
					 uint64_t flags)
{
	return -FI_ENOSYS;
}

static struct fi_ops_msg iwarp_rdm_sep_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = iwarp_rdm_ctx_no_recv,
	.recvv = iwarp_rdm_ctx_no_recvv,
	.recvmsg = iwarp_rdm_ctx_no_recvmsg,
	.send = iwarp_srx_no_send,
	.sendv = iwarp_srx_no_sendv,
	.sendmsg = iwarp_srx_no_sendmsg,
	.inject = iwarp_srx_no_inject,
	.senddata = iwarp_no_senddata,
	.injectdata = iwarp_no_injectdata,
};

static struct fi_ops_tagged iwarp_rdm_sep_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = iwarp_rdm_ctx_no_trecv,
	.recvv = iwarp_rdm_ctx_no_trecvv,
	.recvmsg = iwarp_rdm_ctx_no_trecvmsg,
	.send = iwarp_srx_no_tsend,
	.sendv = iwarp_srx_no_tsendv,
	.sendmsg = iwarp_srx_no_tsendmsg,
	.inject = iwarp_srx_no_tinject,
	.senddata = iwarp_srx_no_tsenddata,
	.injectdata = iwarp_srx_no_tinjectdata,
};

/* The send family of a transmit context: the endpoint's, completing on
 * the context's CQ. */
static ssize_t iwarp_rdm_ctx_tx(struct fid_ep *e, const struct iovec *iov,
				size_t count, fi_addr_t dest, uint64_t tag,
				uint64_t data, void *ctx, uint64_t flags,
				bool tagged)
{
	struct iwarp_rdm_ctx *c = CTX(e);

	if (!c->base.enabled)
		return -FI_EOPBADSTATE;
	return iwarp_rdm_send_common(c->core, &c->base, iov, count, dest, tag,
				     data, ctx, flags, tagged);
}

static ssize_t iwarp_rdm_ctx_send(struct fid_ep *e, const void *buf,
				  size_t len, void *desc, fi_addr_t dest,
				  void *ctx)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_ctx_tx(e, &iov, 1, dest, 0, 0, ctx,
				CTX(e)->base.tx_op_flags, false);
}

static ssize_t iwarp_rdm_ctx_sendv(struct fid_ep *e, const struct iovec *iov,
				   void **desc, size_t count, fi_addr_t dest,
				   void *ctx)
{
	return iwarp_rdm_ctx_tx(e, iov, count, dest, 0, 0, ctx,
				CTX(e)->base.tx_op_flags, false);
}

static ssize_t iwarp_rdm_ctx_sendmsg(struct fid_ep *e, const struct fi_msg *m,
				     uint64_t flags)
{
	return iwarp_rdm_ctx_tx(e, m->msg_iov, m->iov_count, m->addr, 0,
				m->data, m->context, flags, false);
}

static ssize_t iwarp_rdm_ctx_inject(struct fid_ep *e, const void *buf,
				    size_t len, fi_addr_t dest)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_ctx_tx(e, &iov, 1, dest, 0, 0, NULL,
				FI_INJECT | IWARP_INJECT_CALL, false);
}

static ssize_t iwarp_rdm_ctx_senddata(struct fid_ep *e, const void *buf,
				      size_t len, void *desc, uint64_t data,
				      fi_addr_t dest, void *ctx)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_ctx_tx(e, &iov, 1, dest, 0, data, ctx,
				CTX(e)->base.tx_op_flags | FI_REMOTE_CQ_DATA,
				false);
}

static ssize_t iwarp_rdm_ctx_tsend(struct fid_ep *e, const void *buf,
				   size_t len, void *desc, fi_addr_t dest,
				   uint64_t tag, void *ctx)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_ctx_tx(e, &iov, 1, dest, tag, 0, ctx,
				CTX(e)->base.tx_op_flags, true);
}

static ssize_t iwarp_rdm_ctx_tsendv(struct fid_ep *e, const struct iovec *iov,
				    void **desc, size_t count, fi_addr_t dest,
				    uint64_t tag, void *ctx)
{
	return iwarp_rdm_ctx_tx(e, iov, count, dest, tag, 0, ctx,
				CTX(e)->base.tx_op_flags, true);
}

static ssize_t iwarp_rdm_ctx_tsendmsg(struct fid_ep *e,
				      const struct fi_msg_tagged *m,
				      uint64_t flags)
{
	return iwarp_rdm_ctx_tx(e, m->msg_iov, m->iov_count, m->addr, m->tag,
				m->data, m->context, flags, true);
}

static ssize_t iwarp_rdm_ctx_tinject(struct fid_ep *e, const void *buf,
				     size_t len, fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_ctx_tx(e, &iov, 1, dest, tag, 0, NULL,
				FI_INJECT | IWARP_INJECT_CALL, true);
}

static struct fi_ops_msg iwarp_rdm_txc_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = iwarp_rdm_ctx_no_recv,
	.recvv = iwarp_rdm_ctx_no_recvv,
	.recvmsg = iwarp_rdm_ctx_no_recvmsg,
	.send = iwarp_rdm_ctx_send,
	.sendv = iwarp_rdm_ctx_sendv,
	.sendmsg = iwarp_rdm_ctx_sendmsg,
	.inject = iwarp_rdm_ctx_inject,
	.senddata = iwarp_rdm_ctx_senddata,
	.injectdata = iwarp_no_injectdata,
};

static struct fi_ops_tagged iwarp_rdm_txc_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = iwarp_rdm_ctx_no_trecv,
	.recvv = iwarp_rdm_ctx_no_trecvv,
	.recvmsg = iwarp_rdm_ctx_no_trecvmsg,
	.send = iwarp_rdm_ctx_tsend,
	.sendv = iwarp_rdm_ctx_tsendv,
	.sendmsg = iwarp_rdm_ctx_tsendmsg,
	.inject = iwarp_rdm_ctx_tinject,
	.senddata = iwarp_srx_no_tsenddata,
	.injectdata = iwarp_srx_no_tinjectdata,
};

/* ---- the scalable endpoint: fi_tx_context, fi_rx_context */

static int iwarp_rdm_ctx_new(struct iwarp_rdm_ep *ep, size_t index, bool rx,
			     void *context, struct iwarp_rdm_ctx **out)
{
	struct iwarp_rdm_ctx *c = iwarp_zalloc(sizeof(*c));

	if (!c)
		return -FI_ENOMEM;
	if (iwarp_ep_base_init(&c->base, &iwarp_rdm_ctx_type, ep->base.dom,
			       ep->base.info, context)) {
		free(c);
		return -FI_ENOMEM;
	}
	c->core = ep;
	c->index = (unsigned int)index;
	c->open = true;
	iwarp_list_init(&c->q.posted);
	c->base.ep_fid.fid.fclass = rx ? FI_CLASS_RX_CTX : FI_CLASS_TX_CTX;
	c->base.ep_fid.fid.ops = &iwarp_rdm_ctx_fi_ops;
	c->base.ep_fid.ops = &iwarp_rdm_ctx_ep_ops;
	c->base.ep_fid.msg = rx ? &iwarp_rdm_rxc_msg_ops :
				  &iwarp_rdm_txc_msg_ops;
	c->base.ep_fid.tagged = rx ? &iwarp_rdm_rxc_tagged_ops :
				     &iwarp_rdm_txc_tagged_ops;
	*out = c;
	return 0;
}

/* Context index of tx or rx: opened once, while the endpoint is not
 * enabled (its receive contexts are fixed from then on). */
static int iwarp_rdm_sep_ctx(struct fid_ep *sep, int index, bool rx,
			     void *context, struct fid_ep **out)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(&sep->fid);
	struct iwarp_rdm_sep *s = ep->sep;
	struct iwarp_rdm_ctx **slot;
	size_t n = rx ? s->nrx : s->ntx;
	int ret;

	if (index < 0 || (size_t)index >= n)
		return -FI_EINVAL;
	slot = rx ? &s->rx[index] : &s->tx[index];
	if (*slot)
		return -FI_EBUSY;
	ret = iwarp_rdm_ctx_new(ep, (size_t)index, rx, context, slot);
	if (!ret)
		*out = &(*slot)->base.ep_fid;
	return ret;
}

static int iwarp_rdm_sep_tx_ctx(struct fid_ep *sep, int index,
				struct fi_tx_attr *attr, struct fid_ep **tx_ep,
				void *context)
{
	return iwarp_rdm_sep_ctx(sep, index, false, context, tx_ep);
}

static int iwarp_rdm_sep_rx_ctx(struct fid_ep *sep, int index,
				struct fi_rx_attr *attr, struct fid_ep **rx_ep,
				void *context)
{
	return iwarp_rdm_sep_ctx(sep, index, true, context, rx_ep);
}

static ssize_t iwarp_rdm_sep_cancel(fid_t fid, void *context)
{
	return -FI_ENOENT;	/* operations belong to the contexts */
}

static struct fi_ops_ep iwarp_rdm_sep_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = iwarp_rdm_sep_cancel,
	.getopt = iwarp_ep_base_getopt,
	.setopt = iwarp_ep_base_setopt,
	.tx_ctx = iwarp_rdm_sep_tx_ctx,
	.rx_ctx = iwarp_rdm_sep_rx_ctx,
	.rx_size_left = iwarp_ep_base_size_left,
	.tx_size_left = iwarp_ep_base_size_left,
};

static bool iwarp_rdm_sep_busy(const struct iwarp_rdm_sep *s)
{
	size_t i;

	for (i = 0; i < s->ntx; i++)
		if (s->tx[i] && s->tx[i]->open)
			return true;
	for (i = 0; i < s->nrx; i++)
		if (s->rx[i] && s->rx[i]->open)
			return true;
	return false;
}

static void iwarp_rdm_sep_free(struct iwarp_rdm_sep *s)
{
	size_t i;

	for (i = 0; i < s->ntx; i++)
		free(s->tx[i]);
	for (i = 0; i < s->nrx; i++)
		free(s->rx[i]);
	free(s->tx);
	free(s->rx);
	free(s);
}

/* Contexts first (fi_endpoint(3)); the endpoint's close flushes what is
 * in flight before the contexts' memory goes. */
static int iwarp_rdm_sep_close(struct fid *fid)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);
	struct iwarp_rdm_sep *s = ep->sep;
	int ret;

	iwarp_lock(ep->base.fab);
	ret = iwarp_rdm_sep_busy(s) ? -FI_EBUSY : 0;
	iwarp_unlock(ep->base.fab);
	if (ret)
		return ret;
	ret = iwarp_rdm_close(fid);
	iwarp_rdm_sep_free(s);
	return ret;
}

/* Only an AV (fi_scalable_ep_bind): CQs and counters are the
 * contexts'. */
static int iwarp_rdm_sep_bind(struct fid *fid, struct fid *bfid,
			      uint64_t flags)
{
	if (bfid->fclass != FI_CLASS_AV)
		return -FI_EINVAL;
	return iwarp_ep_base_bind(fid, bfid, flags);
}

static struct fi_ops iwarp_rdm_sep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_rdm_sep_close,
	.bind = iwarp_rdm_sep_bind,
	.control = iwarp_ep_base_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

static int iwarp_rdm_sep_alloc(struct iwarp_rdm_ep *ep,
			       const struct fi_info *info)
{
	size_t ntx = info->ep_attr->tx_ctx_cnt, nrx = info->ep_attr->rx_ctx_cnt;
	struct iwarp_rdm_sep *s;

	if (!ntx || !nrx || ntx > IWARP_RDM_RXC_MAX ||
	    nrx > IWARP_RDM_RXC_MAX)
		return -FI_EINVAL;
	s = iwarp_zalloc(sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	s->ntx = ntx;
	s->nrx = nrx;
	s->tx = calloc(ntx, sizeof(*s->tx));
	s->rx = calloc(nrx, sizeof(*s->rx));
	if (!s->tx || !s->rx) {
		iwarp_rdm_sep_free(s);
		return -FI_ENOMEM;
	}
	ep->sep = s;
	return 0;
}

/* What the contexts carry: messages and tagged messages (fi_getinfo
 * offers contexts to such entries only). */
#define IWARP_RDM_SEP_NOT (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | \
			   FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV | \
			   FI_TRIGGER)

int iwarp_rdm_scalable_open(struct fid_domain *domain, struct fi_info *info,
			    struct fid_ep **sepp, void *context)
{
	struct iwarp_rdm_ep *ep;
	struct fid_ep *e;
	int ret;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_RDM ||
	    (info->caps & IWARP_RDM_SEP_NOT))
		return -FI_EINVAL;
	ret = iwarp_rdm_open(domain, info, &e, context);
	if (ret)
		return ret;
	ep = iwarp_rdm_ep_of(&e->fid);
	ret = iwarp_rdm_sep_alloc(ep, info);
	if (ret) {
		fi_close(&e->fid);
		return ret;
	}
	e->fid.fclass = FI_CLASS_SEP;
	e->fid.ops = &iwarp_rdm_sep_fi_ops;
	e->ops = &iwarp_rdm_sep_ep_ops;
	/* data moves through the contexts */
	e->msg = &iwarp_rdm_sep_msg_ops;
	e->tagged = &iwarp_rdm_sep_tagged_ops;
	*sepp = e;
	return 0;
}
