/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_MSG endpoint object: one engine queue pair, created on
 * fi_enable. The shared plumbing (CQ and counter binding, control,
 * options) is the endpoint base's; this file adds the EQ, the QP and its
 * operation contexts. Connection management is msg_cm.c.
 */
#include "msg.h"

#include <stdlib.h>
#include <string.h>

/* ---- progress */

static void iwarp_ep_progress(struct iwarp_pollable *p)
{
	struct iwarp_ep *ep = iwarp_container_of(p, struct iwarp_ep, poll);

	if (ep->qp)
		iw_qp_progress(ep->qp);
	if (ep->base.srx)
		iwarp_ep_srx_feed(ep);
	if (ep->auth && ep->qp)
		iwarp_ep_auth_progress(ep);
}

static void iwarp_ep_poll_info(struct iwarp_pollable *p, int *fd,
			       short *events, uint64_t *deadline)
{
	struct iwarp_ep *ep = iwarp_container_of(p, struct iwarp_ep, poll);

	*fd = ep->qp ? iw_qp_fd(ep->qp) : -1;
	*events = ep->qp ? iw_qp_poll_events(ep->qp) : 0;
	*deadline = ep->qp ? iw_qp_deadline(ep->qp) : 0;
	if (ep->auth && ep->auth->deadline &&
	    (!*deadline || ep->auth->deadline < *deadline))
		*deadline = ep->auth->deadline;
	/* a stream waiting for a receive polls nothing: when the shared
	 * context has one, it is due now */
	if (ep->base.srx && ep->base.srx->nposted && ep->qp &&
	    iw_qp_rx_waiting(ep->qp))
		*deadline = iw_now_ms();
}

/* ---- enable, bind */

static uint32_t iwarp_ep_qsize(size_t size)
{
	return size ? (uint32_t)size : IWARP_QUEUE_SIZE;
}

/* The QP's attributes from the tx/rx sizes asked for. */
static void iwarp_ep_qp_attr(struct iwarp_ep *ep, struct iw_qp_attr *attr)
{
	const struct fi_info *info = ep->base.info;

	memset(attr, 0, sizeof(*attr));
	attr->sq_size = iwarp_ep_qsize(info->tx_attr ? info->tx_attr->size : 0);
	attr->rq_size = iwarp_ep_qsize(info->rx_attr ? info->rx_attr->size : 0);
	if (ep->auth)
		attr->rq_size++;	/* the peer's proof goes first */
	attr->ops = &iwarp_ep_qp_ops;
	attr->arg = ep;
	/* FI_RM_ENABLED: a Send ahead of its receive waits for it; with
	 * FI_TAGGED we place Sends, and keep those ahead (msg_tagged.c) */
	attr->wait_for_recv = !ep->tagged;
	attr->peek_len = ep->tagged ? IWARP_THDR_LEN : 0;
}

/* The engine may queue one more internal Read per op (delivery). Not
 * cleared here: iwarp_op_get clears a context when it first hands it
 * out, so only the contexts ever used are touched. */
static size_t iwarp_ep_ops_count(const struct iw_qp_attr *a)
{
	return (size_t)a->sq_size + a->rq_size;
}

static int iwarp_ep_ops_alloc(struct iwarp_ep *ep, const struct iw_qp_attr *a)
{
	size_t n = iwarp_ep_ops_count(a);

	ep->ops = iw_mem_alloc(n * sizeof(*ep->ops));
	if (!ep->ops)
		return -FI_ENOMEM;
	ep->nops = n;
	ep->ops_fresh = 0;
	return 0;
}

/*
 * Lock not held. A passive side that accepted one connection likely
 * accepts more: while this one's peer answers, the memory of the next
 * endpoint like it (QP block and operation contexts) is mapped and its
 * first pages faulted in, so that endpoint's fi_enable faults nothing.
 */
void iwarp_ep_prepare_next(struct iwarp_ep *ep)
{
	struct iw_mem_span first = { 0, 4 * sizeof(*ep->ops) };
	struct iw_qp_attr attr;

	iwarp_ep_qp_attr(ep, &attr);
	iw_qp_prepare(&attr);
	iw_mem_ready(iwarp_ep_ops_count(&attr) * sizeof(*ep->ops), &first, 1);
}

static void iwarp_ep_ops_free(struct iwarp_ep *ep)
{
	iw_mem_free(ep->ops, ep->nops * sizeof(*ep->ops));
	ep->ops = NULL;
}

/* Lock held: the QP's socket wakes the CQs' and the EQ's waiters. */
static void iwarp_ep_wait_bind(struct iwarp_ep *ep)
{
	struct iwarp_ep_base *b = &ep->base;

	iwarp_pollable_add(b->fab, &ep->poll);
	iwarp_wait_bind(&b->tx_cq->wait, &ep->poll);
	if (b->rx_cq != b->tx_cq)
		iwarp_wait_bind(&b->rx_cq->wait, &ep->poll);
	iwarp_wait_bind(&ep->eq->wait, &ep->poll);
}

/* Lock held. The family of the address it will connect to: fi_getinfo's
 * destination, else its own address's; unknown, nothing is made. */
static void iwarp_ep_presock(struct iwarp_ep *ep)
{
	const struct sockaddr *dst = ep->base.info->dest_addr;
	int family = dst ? dst->sa_family : ep->src.sa.sa_family;

	if (family == AF_INET || family == AF_INET6)
		iw_qp_presock(ep->qp, family);
}

static int iwarp_ep_enable(struct iwarp_ep_base *b)
{
	struct iwarp_ep *ep = iwarp_container_of(b, struct iwarp_ep, base);
	struct iw_qp_attr attr;
	int ret;

	if (b->enabled)
		return 0;
	if (!ep->eq || !b->tx_cq || !b->rx_cq)
		return ep->eq ? -FI_ENOCQ : -FI_ENOEQ;
	iwarp_ep_qp_attr(ep, &attr);
	ret = iwarp_ep_ops_alloc(ep, &attr);
	if (ret)
		return ret;
	iwarp_lock(b->fab);
	ret = iw_qp_create(b->dom->pd, &attr, &ep->qp);
	if (!ret && ep->auth)
		ret = iwarp_ep_auth_enable(ep);
	/* an active endpoint connects with a socket made now (as tcp's
	 * fi_endpoint makes it), not inside its fi_connect */
	if (!ret && !ep->connreq)
		iwarp_ep_presock(ep);
	if (!ret) {
		iwarp_ep_wait_bind(ep);
		b->enabled = true;
	} else if (ep->qp) {
		iw_qp_destroy(ep->qp);
		ep->qp = NULL;
	}
	iwarp_unlock(b->fab);
	return ret ? -FI_ENOMEM : 0;
}

/* MSG binds an EQ besides the CQs and counters. */
static int iwarp_ep_bind_other(struct iwarp_ep_base *b, struct fid *bfid,
			       uint64_t flags)
{
	struct iwarp_ep *ep = iwarp_container_of(b, struct iwarp_ep, base);

	if (bfid->fclass != FI_CLASS_EQ || ep->eq)
		return -FI_EINVAL;
	ep->eq = iwarp_eq_of(bfid);
	atomic_fetch_add(&ep->eq->ref, 1);
	return 0;
}

static const struct iwarp_ep_type iwarp_msg_type = {
	.name = "MSG",
	.opts = IWARP_OPT_CM_DATA_SIZE | IWARP_OPT_MIN_MULTI_RECV,
	.cm_data_max = IWARP_CM_DATA_MAX,
	.bind = iwarp_ep_bind_other,
	.enable = iwarp_ep_enable,
	.srx_offer = iwarp_ep_srx_offer,
};

/* With a job key the auth block takes the head of the private data. */
static const struct iwarp_ep_type iwarp_msg_type_keyed = {
	.name = "MSG",
	.opts = IWARP_OPT_CM_DATA_SIZE | IWARP_OPT_MIN_MULTI_RECV,
	.cm_data_max = IWARP_CM_DATA_MAX - IWARP_AUTH_PD_LEN,
	.bind = iwarp_ep_bind_other,
	.enable = iwarp_ep_enable,
	.srx_offer = iwarp_ep_srx_offer,
};

/* ---- close */

static void iwarp_ep_unbind_all(struct iwarp_ep *ep)
{
	struct iwarp_ep_base *b = &ep->base;

	if (b->enabled) {
		iwarp_wait_unbind(&b->tx_cq->wait, &ep->poll);
		if (b->rx_cq != b->tx_cq)
			iwarp_wait_unbind(&b->rx_cq->wait, &ep->poll);
		iwarp_wait_unbind(&ep->eq->wait, &ep->poll);
		iwarp_pollable_del(&ep->poll);
	}
	if (ep->eq)
		atomic_fetch_sub(&ep->eq->ref, 1);
}

static int iwarp_ep_close(struct fid *fid)
{
	struct iwarp_ep *ep = iwarp_ep_of(fid);
	struct iwarp_fabric *fab = ep->base.fab;

	iwarp_lock(fab);
	if (ep->qp) {
		iw_qp_destroy(ep->qp);	/* flushes into the CQs */
		ep->qp = NULL;
	}
	if (ep->tagged)
		iwarp_tag_flush(ep);
	if (ep->connreq)
		iwarp_connreq_release(ep->connreq);
	iwarp_ep_unbind_all(ep);
	iwarp_ep_base_fini(&ep->base);
	iwarp_unlock(fab);
	if (ep->auth)
		iwarp_auth_key_clear(&ep->auth->key);
	free(ep->auth);
	iwarp_ep_ops_free(ep);
	free(ep);
	return 0;
}

static struct fi_ops iwarp_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_ep_close,
	.bind = iwarp_ep_base_bind,
	.control = iwarp_ep_base_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

/* ---- fi_ops_ep */

static ssize_t iwarp_ep_cancel(fid_t fid, void *context)
{
	struct iwarp_ep *ep = iwarp_ep_of(fid);
	size_t i;
	int ret = -FI_ENOENT;

	iwarp_lock(ep->base.fab);
	if (ep->tagged) {
		ret = iwarp_tag_cancel(ep, context);
		iwarp_unlock(ep->base.fab);
		return ret;
	}
	for (i = 0; ep->qp && i < ep->ops_fresh; i++) {
		struct iwarp_op *op = &ep->ops[i];

		if (op->context == context && (op->flags & FI_RECV) &&
		    !iw_qp_cancel_recv(ep->qp, op)) {
			ret = 0;
			break;
		}
	}
	iwarp_unlock(ep->base.fab);
	return ret;
}

static struct fi_ops_ep iwarp_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = iwarp_ep_cancel,
	.getopt = iwarp_ep_base_getopt,
	.setopt = iwarp_ep_base_setopt,
	.tx_ctx = NULL,
	.rx_ctx = NULL,
	.rx_size_left = iwarp_ep_base_size_left,
	.tx_size_left = iwarp_ep_base_size_left,
};

/* ---- open */

/* fi_getinfo(3): a passive endpoint may be named as the handle; a
 * connection request carries the peer. */
static bool iwarp_ep_handle_ok(const struct fi_info *info)
{
	return !info->handle || info->handle->fclass == FI_CLASS_CONNREQ ||
	       info->handle->fclass == FI_CLASS_PEP;
}

/* Where the endpoint starts from: a request to accept, a source. */
static void iwarp_ep_from_info(struct iwarp_ep *ep, const struct fi_info *info)
{
	if (info->handle && info->handle->fclass == FI_CLASS_CONNREQ) {
		ep->connreq = iwarp_container_of(info->handle,
						 struct iwarp_connreq, fid);
		ep->state_passive = true;
	}
	if (info->src_addr && info->src_addrlen <= sizeof(ep->src))
		memcpy(&ep->src, info->src_addr, info->src_addrlen);
	/* what fi_getinfo offered only when asked (iwarp_attr.c) */
	ep->imm_offer = info->domain_attr &&
			info->domain_attr->cq_data_size > 0;
	ep->rwrite = iwarp_caps_rwrite(info->caps);
	ep->imm_norecv = ep->imm_offer && !(info->mode & FI_RX_CQ_DATA) &&
			 !(info->rx_attr &&
			   (info->rx_attr->mode & FI_RX_CQ_DATA));
	if ((info->mode & FI_MSG_PREFIX) && info->ep_attr)
		ep->prefix = info->ep_attr->msg_prefix_size;
	/* FI_TAGGED: offered only when asked, without prefix or CQ data */
	ep->tagged = info->caps & FI_TAGGED;
	iwarp_list_init(&ep->rx_msg);
	iwarp_list_init(&ep->rx_tag);
	iwarp_list_init(&ep->unexp);
	/* fi_endpoint(3): an active endpoint made from a passive one takes
	 * over its address; connections then leave from that port */
	if (info->handle && info->handle->fclass == FI_CLASS_PEP)
		ep->src = iwarp_container_of(info->handle, struct iwarp_pep,
					     pep_fid.fid)->addr;
}

/* The job key (ep_attr, domain_attr, FI_IWARP_AUTH_KEY): a handshake
 * state for the endpoint, or none. 0, -FI_EINVAL or -FI_ENOMEM. */
static int iwarp_ep_auth_open(struct iwarp_ep *ep, const struct fi_info *info)
{
	struct iwarp_auth_key key;
	int ret = iwarp_auth_key_pick(&key, info);

	if (ret || !iwarp_auth_on(&key))
		return ret;
	ep->auth = calloc(1, sizeof(*ep->auth));
	if (ep->auth)
		ep->auth->key = key;
	iwarp_auth_key_clear(&key);
	return ep->auth ? 0 : -FI_ENOMEM;
}

int iwarp_msg_open(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **epp, void *context)
{
	struct iwarp_domain *dom = iwarp_domain_of(&domain->fid);
	struct iwarp_ep *ep;
	int ret;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_MSG ||
	    !iwarp_ep_handle_ok(info))
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ret = iwarp_ep_auth_open(ep, info);
	if (!ret && iwarp_ep_base_init(&ep->base, ep->auth ?
				       &iwarp_msg_type_keyed : &iwarp_msg_type,
				       dom, info, context))
		ret = -FI_ENOMEM;
	if (ret) {
		if (ep->auth)
			iwarp_auth_key_clear(&ep->auth->key);
		free(ep->auth);
		free(ep);
		return ret;
	}
	iwarp_list_init(&ep->poll.link);
	ep->poll.progress = iwarp_ep_progress;
	ep->poll.poll_info = iwarp_ep_poll_info;
	ep->poll.nofd_idle = true;
	iwarp_ep_from_info(ep, info);
	if (ep->tagged)
		ep->base.ep_fid.tagged = &iwarp_msg_tagged_ops;
	ep->base.ep_fid.fid.ops = &iwarp_ep_fi_ops;
	ep->base.ep_fid.ops = &iwarp_ep_ops;
	ep->base.ep_fid.cm = &iwarp_ep_cm_ops;
	ep->base.ep_fid.msg = &iwarp_msg_ops;
	ep->base.ep_fid.rma = &iwarp_rma_ops;
	if (ep->tagged && (ep->auth || ep->prefix || ep->imm_offer)) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL, "FI_TAGGED on MSG takes "
			"no job key, FI_MSG_PREFIX or remote CQ data\n");
		iwarp_ep_close(&ep->base.ep_fid.fid);
		return -FI_EOPNOTSUPP;
	}
	*epp = &ep->base.ep_fid;
	return 0;
}
