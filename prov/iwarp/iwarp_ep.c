/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_MSG endpoint: one engine queue pair. Connection management maps
 * engine CM events to EQ events (FI_CONNECTED, FI_SHUTDOWN, error
 * entries with the reject data); MPA rev 2 peer-to-peer mode is used by
 * default, so either side may send first once connected.
 */
#include "iwarp.h"

#include <stdlib.h>
#include <string.h>

#include "iwarp/engine.h"

/* ---- operation contexts */

struct iwarp_op *iwarp_op_get(struct iwarp_ep *ep)
{
	struct iwarp_op *op = ep->free_ops;

	if (op)
		ep->free_ops = op->next;
	return op;
}

void iwarp_op_put(struct iwarp_ep *ep, struct iwarp_op *op)
{
	op->next = ep->free_ops;
	ep->free_ops = op;
}

/* ---- progress */

static void iwarp_ep_progress(struct iwarp_pollable *p)
{
	struct iwarp_ep *ep = iwarp_container_of(p, struct iwarp_ep, poll);

	if (ep->qp)
		iw_qp_progress(ep->qp);
}

static void iwarp_ep_poll_info(struct iwarp_pollable *p, int *fd,
			       short *events, uint64_t *deadline)
{
	struct iwarp_ep *ep = iwarp_container_of(p, struct iwarp_ep, poll);

	*fd = ep->qp ? iw_qp_fd(ep->qp) : -1;
	*events = ep->qp ? iw_qp_poll_events(ep->qp) : 0;
	*deadline = ep->qp ? iw_qp_deadline(ep->qp) : 0;
}

/* ---- CM events from the engine */

static void iwarp_ep_eq_cm(struct iwarp_ep *ep, uint32_t event,
			   const struct iw_cm_event *ev)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 512];
	struct fi_eq_cm_entry *entry = (void *)buf;
	size_t dlen = ev && event == FI_CONNECTED ? ev->pdata_len : 0;

	if (!ep->eq)
		return;
	memset(entry, 0, sizeof(*entry));
	entry->fid = &ep->ep_fid.fid;
	if (dlen)
		memcpy(entry->data, ev->pdata, dlen);
	iwarp_eq_write_locked(ep->eq, event, entry, sizeof(*entry) + dlen);
}

static void iwarp_ep_eq_err(struct iwarp_ep *ep, int err,
			    const struct iw_cm_event *ev)
{
	int prov = ev->err.why ? IWARP_PROV_ERRNO(ev->err.layer,
						  ev->err.etype,
						  ev->err.ecode) : 0;

	if (ep->eq)
		iwarp_eq_write_err(ep->eq, &ep->ep_fid.fid,
				   ep->ep_fid.fid.context, 0, err, prov,
				   ev->pdata_len ? ev->pdata : NULL,
				   ev->pdata_len);
}

static void iwarp_ep_cm_event(void *arg, struct iw_qp *qp,
			      const struct iw_cm_event *ev)
{
	struct iwarp_ep *ep = arg;
	bool connected = ep->state == IWARP_EP_CONNECTED;

	switch (ev->type) {
	case IW_CM_ESTABLISHED:
		iwarp_log_established("MSG", ev);
		ep->state = IWARP_EP_CONNECTED;
		/* the active side reports the Reply's private data */
		iwarp_ep_eq_cm(ep, FI_CONNECTED,
			       ep->state_passive ? NULL : ev);
		break;
	case IW_CM_REJECTED:
		ep->state = IWARP_EP_SHUTDOWN;
		iwarp_ep_eq_err(ep, FI_ECONNREFUSED, ev);
		break;
	case IW_CM_UNREACHABLE:
		ep->state = IWARP_EP_SHUTDOWN;
		iwarp_ep_eq_err(ep, ev->status == -ETIMEDOUT ? FI_ETIMEDOUT :
				    FI_ECONNREFUSED, ev);
		break;
	case IW_CM_DISCONNECTED:
	case IW_CM_ERROR:
		ep->state = IWARP_EP_SHUTDOWN;
		if (ev->type == IW_CM_ERROR)
			FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
				"connection terminated (%s): %s\n",
				ev->remote ? "by the peer" : "locally",
				iw_err_str(ev->err.layer, ev->err.etype,
					   ev->err.ecode));
		/* both sides hear of the close, the one that called
		 * fi_shutdown too (fi_cm(3); libfabric's tcp does it) */
		if (connected)
			iwarp_ep_eq_cm(ep, FI_SHUTDOWN, NULL);
		else if (!connected)
			iwarp_ep_eq_err(ep, FI_ECONNRESET, ev);
		break;
	default:
		break;
	}
}

static const struct iw_qp_ops iwarp_ep_qp_ops = {
	.cm_event = iwarp_ep_cm_event,
	.complete = iwarp_ep_complete,
};

/* ---- enable, bind */

static int iwarp_ep_enable(struct iwarp_ep *ep)
{
	const struct fi_info *info = ep->info;
	struct iw_qp_attr attr = {
		.sq_size = info->tx_attr && info->tx_attr->size ?
				   (uint32_t)info->tx_attr->size :
				   IWARP_QUEUE_SIZE,
		.rq_size = info->rx_attr && info->rx_attr->size ?
				   (uint32_t)info->rx_attr->size :
				   IWARP_QUEUE_SIZE,
		.ops = &iwarp_ep_qp_ops,
		.arg = ep,
		/* FI_RM_ENABLED: a Send ahead of its receive waits for it */
		.wait_for_recv = true,
	};
	size_t i;
	int ret;

	if (ep->enabled)
		return 0;
	if (!ep->eq || !ep->tx_cq || !ep->rx_cq)
		return ep->eq ? -FI_ENOCQ : -FI_ENOEQ;
	/* the engine may queue one more internal Read per op (delivery) */
	ep->nops = (size_t)attr.sq_size + attr.rq_size;
	ep->ops = calloc(ep->nops, sizeof(*ep->ops));
	if (!ep->ops)
		return -FI_ENOMEM;
	for (i = 0; i < ep->nops; i++)
		iwarp_op_put(ep, &ep->ops[i]);
	iwarp_lock(ep->fab);
	ret = iw_qp_create(ep->dom->pd, &attr, &ep->qp);
	if (!ret) {
		iwarp_pollable_add(ep->fab, &ep->poll);
		iwarp_wait_bind(&ep->tx_cq->wait, &ep->poll);
		if (ep->rx_cq != ep->tx_cq)
			iwarp_wait_bind(&ep->rx_cq->wait, &ep->poll);
		iwarp_wait_bind(&ep->eq->wait, &ep->poll);
		ep->enabled = true;
	}
	iwarp_unlock(ep->fab);
	return ret ? -FI_ENOMEM : 0;
}

static int iwarp_ep_bind_cq(struct iwarp_ep *ep, struct iwarp_cq *cq,
			    uint64_t flags)
{
	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EINVAL;
	if (flags & FI_TRANSMIT) {
		if (ep->tx_cq)
			return -FI_EINVAL;
		ep->tx_cq = cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&cq->ref, 1);
	}
	if (flags & FI_RECV) {
		if (ep->rx_cq)
			return -FI_EINVAL;
		ep->rx_cq = cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&cq->ref, 1);
	}
	return 0;
}

static int iwarp_ep_bind_cntr(struct iwarp_ep *ep, struct iwarp_cntr *c,
			      uint64_t flags)
{
	if (flags & (FI_REMOTE_READ | FI_REMOTE_WRITE))
		return -FI_ENOSYS;	/* iWARP targets see no RMA events */
	if (!(flags & (FI_SEND | FI_RECV | FI_READ | FI_WRITE)))
		return -FI_EINVAL;
	if (flags & FI_SEND)
		ep->cntr_send = c;
	if (flags & FI_RECV)
		ep->cntr_recv = c;
	if (flags & FI_READ)
		ep->cntr_read = c;
	if (flags & FI_WRITE)
		ep->cntr_write = c;
	atomic_fetch_add(&c->ref, 1);
	return 0;
}

static int iwarp_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct iwarp_ep *ep = iwarp_ep_of(fid);

	if (ep->enabled)
		return -FI_EBUSY;
	switch (bfid->fclass) {
	case FI_CLASS_CQ:
		return iwarp_ep_bind_cq(ep, iwarp_cq_of(bfid), flags);
	case FI_CLASS_EQ:
		if (ep->eq)
			return -FI_EINVAL;
		ep->eq = iwarp_eq_of(bfid);
		atomic_fetch_add(&ep->eq->ref, 1);
		return 0;
	case FI_CLASS_CNTR:
		return iwarp_ep_bind_cntr(ep, iwarp_cntr_of(bfid), flags);
	default:
		return -FI_EINVAL;
	}
}

static int iwarp_ep_control(struct fid *fid, int command, void *arg)
{
	struct iwarp_ep *ep = iwarp_ep_of(fid);

	switch (command) {
	case FI_ENABLE:
		return iwarp_ep_enable(ep);
	case FI_GETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		*(uint64_t *)arg = *(uint64_t *)arg & FI_TRANSMIT ?
					   ep->tx_op_flags : ep->rx_op_flags;
		return 0;
	case FI_SETOPSFLAG:
		if (!arg)
			return -FI_EINVAL;
		if (*(uint64_t *)arg & FI_TRANSMIT)
			ep->tx_op_flags = *(uint64_t *)arg & ~FI_TRANSMIT;
		else
			ep->rx_op_flags = *(uint64_t *)arg & ~FI_RECV;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static void iwarp_ep_unbind_all(struct iwarp_ep *ep)
{
	struct iwarp_cntr *c[] = { ep->cntr_send, ep->cntr_recv,
				   ep->cntr_read, ep->cntr_write };
	size_t i, j;

	if (ep->enabled) {
		iwarp_wait_unbind(&ep->tx_cq->wait, &ep->poll);
		if (ep->rx_cq != ep->tx_cq)
			iwarp_wait_unbind(&ep->rx_cq->wait, &ep->poll);
		iwarp_wait_unbind(&ep->eq->wait, &ep->poll);
		iwarp_pollable_del(&ep->poll);
	}
	if (ep->tx_cq)
		atomic_fetch_sub(&ep->tx_cq->ref, 1);
	if (ep->rx_cq)
		atomic_fetch_sub(&ep->rx_cq->ref, 1);
	if (ep->eq)
		atomic_fetch_sub(&ep->eq->ref, 1);
	for (i = 0; i < 4; i++) {
		bool seen = false;

		for (j = 0; j < i; j++)
			seen |= c[j] == c[i];
		if (c[i])
			atomic_fetch_sub(&c[i]->ref, 1);
		(void)seen;
	}
}

static int iwarp_ep_close(struct fid *fid)
{
	struct iwarp_ep *ep = iwarp_ep_of(fid);
	struct iwarp_fabric *fab = ep->fab;

	iwarp_lock(fab);
	if (ep->qp) {
		iw_qp_destroy(ep->qp);	/* flushes into the CQs */
		ep->qp = NULL;
	}
	if (ep->connreq)
		iwarp_connreq_release(ep->connreq);
	iwarp_ep_unbind_all(ep);
	atomic_fetch_sub(&ep->dom->ref, 1);
	iwarp_unlock(fab);
	fi_freeinfo(ep->info);
	free(ep->ops);
	free(ep);
	return 0;
}

static struct fi_ops iwarp_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_ep_close,
	.bind = iwarp_ep_bind,
	.control = iwarp_ep_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

/* ---- connection management */

static void iwarp_ep_conn_param(struct iwarp_ep *ep,
				struct iw_conn_param *p, const void *data,
				size_t len)
{
	memset(p, 0, sizeof(*p));
	p->ird = IWARP_RDMA_DEPTH;
	p->ord = IWARP_RDMA_DEPTH;
	p->crc = iwarp_params.crc;
	p->rev = (uint8_t)iwarp_params.mpa_rev;
	p->rtr = (uint8_t)iwarp_params.rtr;
	p->rtr_delay_ms = (uint16_t)iwarp_params.rtr_delay_ms;
	p->pdata = data;
	p->pdata_len = (uint16_t)len;
}

static int iwarp_ep_connect(struct fid_ep *ep_fid, const void *addr,
			    const void *param, size_t paramlen)
{
	struct iwarp_ep *ep = iwarp_ep_of(&ep_fid->fid);
	const struct sockaddr *sa = addr ? addr : ep->info->dest_addr;
	struct iw_conn_param p;
	int ret;

	if (paramlen > IWARP_CM_DATA_MAX || (paramlen && !param) || !sa)
		return -FI_EINVAL;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (ep->state != IWARP_EP_IDLE)
		return -FI_EISCONN;
	iwarp_ep_conn_param(ep, &p, param, paramlen);
	if (ep->src.sa.sa_family && (ep->src.sa.sa_family == AF_INET6 ?
				     ep->src.sin6.sin6_port :
				     ep->src.sin.sin_port)) {
		p.src = &ep->src.sa;
		p.src_len = iwarp_sa_len(&ep->src.sa);
	}
	iwarp_lock(ep->fab);
	ret = iw_qp_connect(ep->qp, sa, iwarp_sa_len(sa), &p);
	if (!ret)
		ep->state = IWARP_EP_CONNECTING;
	iwarp_unlock(ep->fab);
	return ret;
}

static int iwarp_ep_accept(struct fid_ep *ep_fid, const void *param,
			   size_t paramlen)
{
	struct iwarp_ep *ep = iwarp_ep_of(&ep_fid->fid);
	struct iw_conn_param p;
	int ret;

	if (paramlen > IWARP_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!ep->connreq || ep->state != IWARP_EP_IDLE)
		return -FI_EINVAL;
	iwarp_ep_conn_param(ep, &p, param, paramlen);
	iwarp_lock(ep->fab);
	if (!ep->connreq->req) {
		ret = -FI_ECONNABORTED;	/* the peer gave up meanwhile */
	} else {
		ret = iw_accept(ep->connreq->req, ep->qp, &p);
		ep->connreq->req = NULL;	/* consumed either way */
	}
	iwarp_connreq_release(ep->connreq);
	ep->connreq = NULL;
	if (!ret)
		ep->state = IWARP_EP_ACCEPTING;
	iwarp_unlock(ep->fab);
	return ret == -ECONNREFUSED ? -FI_ECONNREFUSED : ret;
}

static int iwarp_ep_shutdown(struct fid_ep *ep_fid, uint64_t flags)
{
	struct iwarp_ep *ep = iwarp_ep_of(&ep_fid->fid);
	int ret = 0;

	iwarp_lock(ep->fab);
	if (ep->qp) {
		ret = iw_qp_disconnect(ep->qp);
		iwarp_progress(ep->fab);
	}
	iwarp_unlock(ep->fab);
	return ret == -ENOTCONN ? 0 : ret;
}

static int iwarp_ep_name(struct iwarp_ep *ep, bool peer, void *addr,
			 size_t *addrlen)
{
	union iwarp_sockaddr a = ep->src;
	socklen_t len = sizeof(a);
	size_t need;
	int ret = -FI_ENOTCONN;

	iwarp_lock(ep->fab);
	if (ep->qp)
		ret = peer ? iw_qp_getpeer(ep->qp, &a.sa, &len) :
			     iw_qp_getname(ep->qp, &a.sa, &len);
	iwarp_unlock(ep->fab);
	if (ret && peer)
		return -FI_ENOTCONN;
	if (!a.sa.sa_family)
		a.sin.sin_family = AF_INET;
	need = iwarp_sa_len(&a.sa);
	if (!addr || *addrlen < need) {
		*addrlen = need;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &a, need);
	*addrlen = need;
	return 0;
}

static int iwarp_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	return iwarp_ep_name(iwarp_ep_of(fid), false, addr, addrlen);
}

static int iwarp_ep_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return iwarp_ep_name(iwarp_ep_of(&ep->fid), true, addr, addrlen);
}

static int iwarp_ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct iwarp_ep *ep = iwarp_ep_of(fid);

	if (!addr || addrlen > sizeof(ep->src) ||
	    addrlen < sizeof(struct sockaddr_in))
		return -FI_EINVAL;
	memcpy(&ep->src, addr, addrlen);
	return 0;
}

static int iwarp_ep_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

static int iwarp_ep_no_reject(struct fid_pep *pep, fid_t handle,
			      const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int iwarp_ep_no_join(struct fid_ep *ep, const void *addr,
			    uint64_t flags, struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cm iwarp_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = iwarp_ep_setname,
	.getname = iwarp_ep_getname,
	.getpeer = iwarp_ep_getpeer,
	.connect = iwarp_ep_connect,
	.listen = iwarp_ep_no_listen,
	.accept = iwarp_ep_accept,
	.reject = iwarp_ep_no_reject,
	.shutdown = iwarp_ep_shutdown,
	.join = iwarp_ep_no_join,
};

static int iwarp_ep_getopt(fid_t fid, int level, int optname, void *optval,
			   size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	switch (optname) {
	case FI_OPT_CM_DATA_SIZE:
		if (*optlen < sizeof(size_t)) {
			*optlen = sizeof(size_t);
			return -FI_ETOOSMALL;
		}
		*(size_t *)optval = IWARP_CM_DATA_MAX;
		*optlen = sizeof(size_t);
		return 0;
	default:
		return -FI_ENOPROTOOPT;
	}
}

static int iwarp_ep_setopt(fid_t fid, int level, int optname,
			   const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static ssize_t iwarp_ep_cancel(fid_t fid, void *context)
{
	struct iwarp_ep *ep = iwarp_ep_of(fid);
	size_t i;
	int ret = -FI_ENOENT;

	iwarp_lock(ep->fab);
	for (i = 0; ep->qp && i < ep->nops; i++) {
		struct iwarp_op *op = &ep->ops[i];

		if (op->context == context && (op->flags & FI_RECV) &&
		    !iw_qp_cancel_recv(ep->qp, op)) {
			ret = 0;
			break;
		}
	}
	iwarp_unlock(ep->fab);
	return ret;
}

static ssize_t iwarp_ep_rx_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

static struct fi_ops_ep iwarp_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = iwarp_ep_cancel,
	.getopt = iwarp_ep_getopt,
	.setopt = iwarp_ep_setopt,
	.tx_ctx = NULL,
	.rx_ctx = NULL,
	.rx_size_left = iwarp_ep_rx_size_left,
	.tx_size_left = iwarp_ep_rx_size_left,
};

int iwarp_ep_open(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **epp, void *context)
{
	struct iwarp_domain *dom = iwarp_domain_of(&domain->fid);
	struct iwarp_ep *ep;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_MSG)
		return -FI_EINVAL;
	/* fi_getinfo(3): a passive endpoint may be named as the handle; it
	 * carries nothing we need, a connection request carries the peer */
	if (info->handle && info->handle->fclass != FI_CLASS_CONNREQ &&
	    info->handle->fclass != FI_CLASS_PEP)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->dom = dom;
	ep->fab = dom->fabric;
	iwarp_list_init(&ep->poll.link);
	ep->poll.progress = iwarp_ep_progress;
	ep->poll.poll_info = iwarp_ep_poll_info;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	if (info->handle && info->handle->fclass == FI_CLASS_CONNREQ) {
		ep->connreq = iwarp_container_of(info->handle,
						 struct iwarp_connreq, fid);
		ep->state_passive = true;
	}
	if (info->src_addr && info->src_addrlen <= sizeof(ep->src))
		memcpy(&ep->src, info->src_addr, info->src_addrlen);
	/* fi_endpoint(3): an active endpoint made from a passive one takes
	 * over its address; connections then leave from that port */
	if (info->handle && info->handle->fclass == FI_CLASS_PEP)
		ep->src = iwarp_container_of(info->handle, struct iwarp_pep,
					     pep_fid.fid)->addr;
	atomic_fetch_add(&dom->ref, 1);
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &iwarp_ep_fi_ops;
	ep->ep_fid.ops = &iwarp_ep_ops;
	ep->ep_fid.cm = &iwarp_ep_cm_ops;
	ep->ep_fid.msg = &iwarp_msg_ops;
	ep->ep_fid.rma = &iwarp_rma_ops;
	*epp = &ep->ep_fid;
	return 0;
}
