/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The FI_EP_RDM endpoint object: open, close, bind, control, options,
 * names, cancel, and the fi_ops_cm of a connectionless endpoint. Its
 * operations are in rdm_msg.c, rdm_rma.c and rdm_atomic.c; what arrives
 * in rdm_recv.c.
 */
#include "rdm.h"

#include <stdlib.h>
#include <string.h>

static ssize_t iwarp_rdm_cancel(fid_t fid, void *context)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);
	struct iwarp_list *heads[] = { &ep->posted_tagged, &ep->posted_msg };
	size_t i;

	iwarp_lock(ep->fab);
	for (i = 0; i < 2; i++) {
		struct iwarp_list *e;

		for (e = heads[i]->next; e != heads[i]; e = e->next) {
			struct iwarp_rdm_rx *rx = iwarp_container_of(
				e, struct iwarp_rdm_rx, link);

			if (rx->context != context)
				continue;
			iwarp_list_del(&rx->link);
			iwarp_cq_write_err(ep->rx_cq, context, rx->flags, 0,
					   NULL, 0, rx->tag, FI_ECANCELED, 0,
					   NULL, 0, 0);
			if (rx->pieces)	/* the last piece frees it */
				rx->retired = true;
			else
				free(rx);
			iwarp_unlock(ep->fab);
			return 0;
		}
	}
	iwarp_unlock(ep->fab);
	return -FI_ENOENT;
}

static int iwarp_rdm_getopt(fid_t fid, int level, int optname,
			    void *optval, size_t *optlen)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_MIN_MULTI_RECV) {
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = ep->min_multi_recv;
		*optlen = sizeof(size_t);
		return 0;
	}
	return -FI_ENOPROTOOPT;
}

static int iwarp_rdm_setopt(fid_t fid, int level, int optname,
			    const void *optval, size_t optlen)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (optlen != sizeof(size_t) || !optval)
		return -FI_EINVAL;
	ep->min_multi_recv = *(const size_t *)optval;
	return 0;
}

static ssize_t iwarp_rdm_size_left(struct fid_ep *ep)
{
	return IWARP_QUEUE_SIZE;
}

static struct fi_ops_ep iwarp_rdm_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = iwarp_rdm_cancel,
	.getopt = iwarp_rdm_getopt,
	.setopt = iwarp_rdm_setopt,
	.rx_size_left = iwarp_rdm_size_left,
	.tx_size_left = iwarp_rdm_size_left,
};

static int iwarp_rdm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);
	size_t need = iwarp_sa_len(&ep->name.sa);

	if (!addr || *addrlen < need) {
		*addrlen = need;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &ep->name, need);
	*addrlen = need;
	return 0;
}

static int iwarp_rdm_no_getpeer(struct fid_ep *ep, void *addr,
				size_t *addrlen)
{
	return -FI_ENOSYS;
}

static int iwarp_rdm_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);

	if (ep->enabled)
		return -FI_EBUSY;	/* the listener has its address */
	if (!addr || addrlen > sizeof(ep->name) ||
	    addrlen < sizeof(struct sockaddr_in))
		return -FI_EINVAL;
	memcpy(&ep->name, addr, addrlen);
	return 0;
}

static int iwarp_rdm_no_connect(struct fid_ep *ep, const void *addr,
				const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int iwarp_rdm_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

static int iwarp_rdm_no_accept(struct fid_ep *ep, const void *param,
			       size_t paramlen)
{
	return -FI_ENOSYS;
}

static int iwarp_rdm_no_reject(struct fid_pep *pep, fid_t handle,
			       const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

/* Connectionless to the user: connections come and go per peer. */
static int iwarp_rdm_shutdown_op(struct fid_ep *ep, uint64_t flags)
{
	return 0;
}

static int iwarp_rdm_no_join(struct fid_ep *ep, const void *addr,
			     uint64_t flags, struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cm iwarp_rdm_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = iwarp_rdm_setname,
	.getname = iwarp_rdm_getname,
	.getpeer = iwarp_rdm_no_getpeer,
	.connect = iwarp_rdm_no_connect,
	.listen = iwarp_rdm_no_listen,
	.accept = iwarp_rdm_no_accept,
	.reject = iwarp_rdm_no_reject,
	.shutdown = iwarp_rdm_shutdown_op,
	.join = iwarp_rdm_no_join,
};

static int iwarp_rdm_close(struct fid *fid)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);
	struct iwarp_fabric *fab = ep->fab;

	if (ep->async)
		iwarp_async_put(fab);
	iwarp_lock(fab);
	ep->enabled = false;
	ep->closing = true;
	iwarp_rdm_peers_close(ep);
	if (ep->xe)
		ep->xp->shutdown(ep->xe);
	ep->xe = NULL;
	iwarp_rdm_free_queues(ep);
	if (ep->tx_cq)
		atomic_fetch_sub(&ep->tx_cq->ref, 1);
	if (ep->rx_cq)
		atomic_fetch_sub(&ep->rx_cq->ref, 1);
	if (ep->av)
		atomic_fetch_sub(&ep->av->ref, 1);
	if (ep->cntr_send)
		atomic_fetch_sub(&ep->cntr_send->ref, 1);
	if (ep->cntr_recv)
		atomic_fetch_sub(&ep->cntr_recv->ref, 1);
	if (ep->cntr_write)
		atomic_fetch_sub(&ep->cntr_write->ref, 1);
	if (ep->cntr_read)
		atomic_fetch_sub(&ep->cntr_read->ref, 1);
	atomic_fetch_sub(&ep->dom->ref, 1);
	iwarp_stash_fini(&ep->tx_stash);
	iwarp_stash_fini(&ep->rx_stash);
	iwarp_stash_fini(&ep->in_stash);
	iwarp_unlock(fab);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static int iwarp_rdm_bind_cq(struct iwarp_rdm_ep *ep, struct fid *bfid,
			     uint64_t flags)
{
	if (flags & FI_TRANSMIT) {
		ep->tx_cq = iwarp_cq_of(bfid);
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&ep->tx_cq->ref, 1);
	}
	if (flags & FI_RECV) {
		ep->rx_cq = iwarp_cq_of(bfid);
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&ep->rx_cq->ref, 1);
	}
	return flags & (FI_TRANSMIT | FI_RECV) ? 0 : -FI_EINVAL;
}

static int iwarp_rdm_bind_cntr(struct iwarp_rdm_ep *ep, struct fid *bfid,
			       uint64_t flags)
{
	struct iwarp_cntr **slot[] = { &ep->cntr_send, &ep->cntr_recv,
				       &ep->cntr_write, &ep->cntr_read };
	const uint64_t bit[] = { FI_SEND, FI_RECV, FI_WRITE, FI_READ };
	size_t i;

	/* no FI_RMA_EVENT: nothing counts remote accesses */
	if (flags & ~(FI_SEND | FI_RECV | FI_WRITE | FI_READ))
		return -FI_ENOSYS;
	for (i = 0; i < 4; i++) {
		if (!(flags & bit[i]))
			continue;
		if (*slot[i])
			atomic_fetch_sub(&(*slot[i])->ref, 1);
		*slot[i] = iwarp_cntr_of(bfid);
		atomic_fetch_add(&(*slot[i])->ref, 1);
	}
	return 0;
}

static int iwarp_rdm_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);

	if (ep->enabled)
		return -FI_EBUSY;
	switch (bfid->fclass) {
	case FI_CLASS_CQ:
		return iwarp_rdm_bind_cq(ep, bfid, flags);
	case FI_CLASS_AV:
		if (ep->av)
			return -FI_EINVAL;
		ep->av = iwarp_av_of(bfid);
		atomic_fetch_add(&ep->av->ref, 1);
		return 0;
	case FI_CLASS_CNTR:
		return iwarp_rdm_bind_cntr(ep, bfid, flags);
	case FI_CLASS_EQ:
		return 0;	/* RDM reports no CM events */
	default:
		return -FI_EINVAL;
	}
}

static int iwarp_rdm_control(struct fid *fid, int command, void *arg)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);
	int ret;

	switch (command) {
	case FI_ENABLE:
		if (ep->enabled)
			return 0;
		if (!ep->tx_cq || !ep->rx_cq)
			return -FI_ENOCQ;
		if (!ep->av)
			return -FI_ENOAV;
		iwarp_lock(ep->fab);
		ret = ep->xp->listen(ep, ep->dom, &ep->name, ep->instance,
				     &iwarp_rdm_upcalls, &ep->xe);
		if (!ret)
			ep->enabled = true;
		iwarp_unlock(ep->fab);
		/* a target of RMA must answer while its application computes */
		if (!ret && (ep->info->caps & (FI_RMA | FI_ATOMIC)) &&
		    !iwarp_async_get(ep->fab))
			ep->async = true;
		return ret;
	case FI_GETOPSFLAG:
		*(uint64_t *)arg = *(uint64_t *)arg & FI_TRANSMIT ?
					   ep->tx_op_flags : ep->rx_op_flags;
		return 0;
	case FI_SETOPSFLAG:
		if (*(uint64_t *)arg & FI_TRANSMIT)
			ep->tx_op_flags = *(uint64_t *)arg & ~FI_TRANSMIT;
		else
			ep->rx_op_flags = *(uint64_t *)arg & ~FI_RECV;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops iwarp_rdm_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_rdm_close,
	.bind = iwarp_rdm_bind,
	.control = iwarp_rdm_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

int iwarp_rdm_open(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **epp, void *context)
{
	struct iwarp_domain *dom = iwarp_domain_of(&domain->fid);
	struct iwarp_rdm_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->dom = dom;
	ep->fab = dom->fabric;
	ep->xp = &iwarp_rdm_iw_xport;
	ep->name = dom->iface.addr;
	if (info->src_addr && info->src_addrlen <= sizeof(ep->name))
		memcpy(&ep->name, info->src_addr, info->src_addrlen);
	iwarp_lock(ep->fab);
	/* a restarted process gets a new instance: peers replace it */
	ep->instance = iw_dev_random(dom->dev) | 1;
	iwarp_unlock(ep->fab);
	iwarp_list_init(&ep->peers);
	iwarp_list_init(&ep->posted_tagged);
	iwarp_list_init(&ep->posted_msg);
	iwarp_list_init(&ep->unexp_tagged);
	iwarp_list_init(&ep->unexp_msg);
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->min_multi_recv = 64;	/* fi_endpoint(3): provider's choice */
	ep->directed = (info->caps & FI_DIRECTED_RECV) ||
		       (info->rx_attr && (info->rx_attr->caps & FI_DIRECTED_RECV));
	atomic_fetch_add(&dom->ref, 1);
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &iwarp_rdm_fi_ops;
	ep->ep_fid.ops = &iwarp_rdm_ep_ops;
	ep->ep_fid.cm = &iwarp_rdm_cm_ops;
	ep->ep_fid.msg = &iwarp_rdm_msg_ops;
	ep->ep_fid.tagged = &iwarp_rdm_tagged_ops;
	ep->ep_fid.rma = &iwarp_rdm_rma_ops;
	ep->ep_fid.atomic = &iwarp_rdm_atomic_ops;
	*epp = &ep->ep_fid;
	return 0;
}
