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

	iwarp_lock(ep->base.fab);
	for (i = 0; i < 2; i++) {
		struct iwarp_list *e;

		for (e = heads[i]->next; e != heads[i]; e = e->next) {
			struct iwarp_rdm_rx *rx = iwarp_container_of(
				e, struct iwarp_rdm_rx, link);

			if (rx->context != context || rx->coll)
				continue;
			iwarp_list_del(&rx->link);
			iwarp_cq_write_err(ep->base.rx_cq, context, rx->flags, 0,
					   NULL, 0, rx->tag, FI_ECANCELED, 0,
					   NULL, 0, 0);
			if (rx->pieces)	/* the last piece frees it */
				rx->retired = true;
			else
				free(rx);
			iwarp_unlock(ep->base.fab);
			return 0;
		}
	}
	iwarp_unlock(ep->base.fab);
	return -FI_ENOENT;
}

static struct fi_ops_ep iwarp_rdm_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = iwarp_rdm_cancel,
	.getopt = iwarp_ep_base_getopt,
	.setopt = iwarp_ep_base_setopt,
	.rx_size_left = iwarp_ep_base_size_left,
	.tx_size_left = iwarp_ep_base_size_left,
};

static int iwarp_rdm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);

	return iwarp_addr_copy_out(&ep->name, addr, addrlen);
}

static int iwarp_rdm_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);

	if (ep->base.enabled)
		return -FI_EBUSY;	/* the listener has its address */
	if (!addr || addrlen > sizeof(ep->name) ||
	    addrlen < sizeof(struct sockaddr_in))
		return -FI_EINVAL;
	memcpy(&ep->name, addr, addrlen);
	return 0;
}

/* Connectionless to the user: connections come and go per peer. */
static int iwarp_rdm_shutdown_op(struct fid_ep *ep, uint64_t flags)
{
	return 0;
}

static struct fi_ops_cm iwarp_rdm_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = iwarp_rdm_setname,
	.getname = iwarp_rdm_getname,
	.getpeer = iwarp_no_getpeer,
	.connect = iwarp_no_connect,
	.listen = iwarp_no_listen,
	.accept = iwarp_no_accept,
	.reject = iwarp_no_reject,
	.shutdown = iwarp_rdm_shutdown_op,
	.join = iwarp_rdm_join,
};

int iwarp_rdm_close(struct fid *fid)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);
	struct iwarp_fabric *fab = ep->base.fab;

	if (ep->async)
		iwarp_async_put(fab);
	iwarp_lock(fab);
	iwarp_rdm_coll_fini(ep);
	ep->base.enabled = false;
	ep->closing = true;
	iwarp_rdm_peers_close(ep);
	if (ep->xe)
		ep->xp->shutdown(ep->xe);
	ep->xe = NULL;
	iwarp_rdm_free_queues(ep);
	if (ep->av)
		atomic_fetch_sub(&ep->av->ref, 1);
	if (ep->eq)
		atomic_fetch_sub(&ep->eq->ref, 1);
	free(ep->joins);
	iwarp_stash_fini(&ep->tx_stash);
	iwarp_stash_fini(&ep->rx_stash);
	iwarp_stash_fini(&ep->in_stash);
	iwarp_stash_fini(&ep->ux_stash);
	iwarp_rdm_bufs_fini(&ep->ux_bufs);
	iwarp_ep_base_fini(&ep->base);
	iwarp_unlock(fab);
	free(ep);
	return 0;
}

/* RDM binds an AV besides the CQs and counters; an EQ reports only
 * FI_JOIN_COMPLETE of collective groups. */
static int iwarp_rdm_bind_other(struct iwarp_ep_base *b, struct fid *bfid,
				uint64_t flags)
{
	struct iwarp_rdm_ep *ep = iwarp_container_of(b, struct iwarp_rdm_ep,
						     base);

	switch (bfid->fclass) {
	case FI_CLASS_AV:
		if (ep->av)
			return -FI_EINVAL;
		ep->av = iwarp_av_of(bfid);
		atomic_fetch_add(&ep->av->ref, 1);
		return 0;
	case FI_CLASS_EQ:
		if (ep->eq)
			return -FI_EINVAL;
		ep->eq = iwarp_eq_of(bfid);
		atomic_fetch_add(&ep->eq->ref, 1);
		return 0;
	default:
		return -FI_EINVAL;
	}
}

static int iwarp_rdm_enable(struct iwarp_ep_base *b)
{
	struct iwarp_rdm_ep *ep = iwarp_container_of(b, struct iwarp_rdm_ep,
						     base);
	struct iwarp_auth_key key;
	int ret;

	if (b->enabled)
		return 0;
	if ((!b->tx_cq || !b->rx_cq) && !ep->sep)
		return -FI_ENOCQ;
	if (!ep->av)
		return -FI_ENOAV;
	ret = iwarp_auth_key_pick(&key, b->info);
	if (ret)
		return ret;
	iwarp_lock(b->fab);
	ret = ep->xp->listen(ep, b->dom, &ep->name, ep->instance, &key,
			     &iwarp_rdm_upcalls, &ep->xe);
	if (!ret)
		b->enabled = true;
	iwarp_unlock(b->fab);
	/* a target of RMA must answer while its application computes */
	if (!ret && (b->info->caps & (FI_RMA | FI_ATOMIC)) &&
	    !iwarp_async_get(b->fab, b->dom->iface.name))
		ep->async = true;
	return ret;
}

static const struct iwarp_ep_type iwarp_rdm_type = {
	.name = "RDM",
	.opts = IWARP_OPT_MIN_MULTI_RECV,
	.bind = iwarp_rdm_bind_other,
	.enable = iwarp_rdm_enable,
	.srx_offer = iwarp_rdm_srx_offer,
};

static struct fi_ops iwarp_rdm_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_rdm_close,
	.bind = iwarp_ep_base_bind,
	.control = iwarp_ep_base_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

int iwarp_rdm_open(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **epp, void *context)
{
	struct iwarp_domain *dom = iwarp_domain_of(&domain->fid);
	struct iwarp_rdm_ep *ep = calloc(1, sizeof(*ep));
	bool shm;

	if (!ep)
		return -FI_ENOMEM;
	if (iwarp_ep_base_init(&ep->base, &iwarp_rdm_type, dom, info,
			       context)) {
		free(ep);
		return -FI_ENOMEM;
	}
	/* remote access counters count what the iWARP engine places */
	shm = iwarp_params.shm && !(info->caps & FI_RMA_EVENT);
	ep->xp = shm ? &iwarp_rdm_shm_xport : &iwarp_rdm_iw_xport;
	if (!shm)
		FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL, "RDM endpoint: every peer "
			"over TCP, same-host ones too (%s)\n",
			iwarp_params.shm ? "FI_RMA_EVENT" : "FI_IWARP_SHM=0");
	ep->name = dom->iface.addr;
	if (info->src_addr && info->src_addrlen <= sizeof(ep->name))
		memcpy(&ep->name, info->src_addr, info->src_addrlen);
	iwarp_lock(dom->fabric);
	/* a restarted process gets a new instance: peers replace it */
	ep->instance = iw_dev_random(dom->dev) | 1;
	iwarp_unlock(dom->fabric);
	iwarp_list_init(&ep->peers);
	iwarp_list_init(&ep->posted_tagged);
	iwarp_list_init(&ep->posted_msg);
	iwarp_list_init(&ep->unexp_tagged);
	iwarp_list_init(&ep->unexp_msg);
	iwarp_list_init(&ep->mcs);
	ep->coll = info->caps & FI_COLLECTIVE;
	if ((info->mode & FI_MSG_PREFIX) && info->ep_attr)
		ep->prefix = info->ep_attr->msg_prefix_size;
	ep->directed = (info->caps & FI_DIRECTED_RECV) ||
		       (info->rx_attr && (info->rx_attr->caps & FI_DIRECTED_RECV));
	ep->base.ep_fid.fid.ops = &iwarp_rdm_fi_ops;
	ep->base.ep_fid.ops = &iwarp_rdm_ep_ops;
	ep->base.ep_fid.cm = &iwarp_rdm_cm_ops;
	ep->base.ep_fid.msg = &iwarp_rdm_msg_ops;
	ep->base.ep_fid.tagged = &iwarp_rdm_tagged_ops;
	ep->base.ep_fid.rma = &iwarp_rdm_rma_ops;
	ep->base.ep_fid.atomic = &iwarp_rdm_atomic_ops;
	if (ep->coll)
		ep->base.ep_fid.collective = &iwarp_rdm_coll_ops;
	*epp = &ep->base.ep_fid;
	return 0;
}
