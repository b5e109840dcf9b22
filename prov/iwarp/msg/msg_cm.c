/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_MSG connection management: engine CM events become EQ events
 * (FI_CONNECTED, FI_SHUTDOWN, error entries with the reject data); MPA
 * rev 2 peer-to-peer mode is used by default, so either side may send
 * first once connected.
 */
#include "msg.h"

#include <stdio.h>
#include <string.h>

/* Lock held: remote CQ data goes on once both sides offered it. */
static void iwarp_ep_imm_set(struct iwarp_ep *ep, struct iw_qp *qp,
			     uint8_t peer)
{
	ep->imm_on = ep->imm_offer && (peer & IWARP_EXT_IMM);
	iw_qp_set_imm(qp, ep->imm_on);
	iw_qp_set_imm_nowait(qp, ep->imm_on && ep->imm_norecv);
	if (ep->imm_offer)
		FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
			"%s: remote CQ data as RFC 7306 Immediate Data: %s\n",
			iw_qp_label(qp), ep->imm_on ? "on" :
			"off (the peer did not offer it)");
}

/* The ext flags this endpoint offers (msg.h). */
static uint8_t iwarp_ep_ext_flags(const struct iwarp_ep *ep)
{
	return (ep->imm_offer ? IWARP_EXT_IMM : 0) |
	       (ep->tagged ? IWARP_EXT_TAG : 0);
}

/* An FI_TAGGED endpoint and a peer that did not offer it: the
 * connection ends before anything is sent on it. */
static void iwarp_ep_tag_refuse(struct iwarp_ep *ep, struct iw_qp *qp)
{
	struct iw_cm_event ev = { .type = IW_CM_REJECTED };

	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"%s: FI_TAGGED: the peer did not offer it, connection "
		"refused\n", iw_qp_label(qp));
	ep->tag_refused = true;
	ep->state = IWARP_EP_SHUTDOWN;
	iw_qp_abort(qp);	/* its CM event comes back unreported */
	iwarp_ep_eq_err(ep, FI_ECONNREFUSED, &ev);
}

/* Initiator: the Reply's ext block, stripped from what the user and
 * the auth check see. false: refused. */
static bool iwarp_ep_reply_ext(struct iwarp_ep *ep, struct iw_qp *qp,
			       struct iw_cm_event *ev)
{
	uint8_t peer = iwarp_ext_get(&ev->pdata, &ev->pdata_len);

	if (ep->tagged && !(peer & IWARP_EXT_TAG)) {
		iwarp_ep_tag_refuse(ep, qp);
		return false;
	}
	iwarp_ep_imm_set(ep, qp, peer);
	return true;
}

/* ---- CM events from the engine */

/* The connection ended: both sides hear of it, the one that called
 * fi_shutdown too (fi_cm(3); libfabric's tcp does it). */
static void iwarp_ep_cm_closed(struct iwarp_ep *ep, struct iw_qp *qp,
			       const struct iw_cm_event *ev, bool connected)
{
	char why[200];

	/* a keyed peer that refused us ends the stream before its proof */
	if (ep->auth && ep->auth->hold && ep->state != IWARP_EP_IDLE) {
		snprintf(why, sizeof(why), "the connection ended (%s%s) "
			 "before the peer proved the key",
			 ev->remote ? "by the peer: " : "",
			 iw_err_str(ev->err.layer, ev->err.etype,
				    ev->err.ecode));
		iwarp_ep_auth_refuse(ep, qp, why);
		return;
	}
	ep->state = IWARP_EP_SHUTDOWN;
	if (ev->type == IW_CM_ERROR)
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
			"%s: connection terminated (%s): %s\n",
			iw_qp_label(qp),
			ev->remote ? "by the peer" : "locally",
			iw_err_str(ev->err.layer, ev->err.etype,
				   ev->err.ecode));
	if (connected)
		iwarp_ep_eq_cm(ep, FI_SHUTDOWN, NULL);
	else
		iwarp_ep_eq_err(ep, FI_ECONNRESET, ev);
}

static void iwarp_ep_cm_event(void *arg, struct iw_qp *qp,
			      const struct iw_cm_event *cm_ev)
{
	struct iwarp_ep *ep = arg;
	bool connected = ep->state == IWARP_EP_CONNECTED;
	struct iw_cm_event copy = *cm_ev;
	const struct iw_cm_event *ev = &copy;

	if ((ep->auth && ep->auth->refused) || ep->tag_refused)
		return;		/* FI_ECONNREFUSED said it all */
	switch (ev->type) {
	case IW_CM_ESTABLISHED:
		iwarp_log_connected("MSG", qp, ev);
		if (!ep->state_passive && !iwarp_ep_reply_ext(ep, qp, &copy))
			break;
		if (ep->auth) {
			iwarp_ep_auth_established(ep, qp, ev);
			break;
		}
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
		iwarp_ep_cm_closed(ep, qp, ev, connected);
		if (ep->tagged)
			iwarp_tag_flush(ep);
		break;
	default:
		break;
	}
}

static void iwarp_ep_target(void *arg, struct iw_qp *qp, bool write,
			    void *mr_ctx)
{
	struct iwarp_ep *ep = arg;

	(void)qp;
	iwarp_rma_target(&ep->base, write, mr_ctx);
}

const struct iw_qp_ops iwarp_ep_qp_ops = {
	.cm_event = iwarp_ep_cm_event,
	.complete = iwarp_ep_complete,
	.imm = iwarp_ep_imm,
	.target = iwarp_ep_target,
	.place = iwarp_tag_place,	/* FI_TAGGED endpoints only */
};

/* ---- connect, accept, shutdown */

static void iwarp_ep_conn_param(struct iw_conn_param *p, const void *data,
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

/* Private data beyond what MPA carries (less the auth block with a
 * key), or promised and missing. */
static bool iwarp_ep_cm_data_bad(struct iwarp_ep *ep, const char *call,
				 const void *param, size_t paramlen)
{
	size_t max = ep->base.type->cm_data_max;

	if (iwarp_ep_ext_flags(ep))
		max -= IWARP_EXT_PD_LEN;
	if (paramlen <= max && (!paramlen || param))
		return false;
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"%s: %zu octets of CM data%s, at most %zu allowed%s\n", call,
		paramlen, param ? "" : " without a buffer", max,
		ep->auth ? " with a job key" : "");
	return true;
}

/* The private data to send: the user's, after our auth block if keyed,
 * after an ext block of flags `ext` if any. Its length, or a negative
 * error. */
static int iwarp_ep_pdata(struct iwarp_ep *ep, const uint8_t *nonce_i,
			  uint8_t ext, uint8_t *buf, const void **param,
			  size_t len)
{
	size_t off = ext ? IWARP_EXT_PD_LEN : 0;
	int ret = (int)len;

	if (ext)
		iwarp_ext_put(buf, ext);
	if (ep->auth)
		ret = iwarp_ep_auth_pdata(ep, nonce_i, buf + off, *param, len);
	else if (ext && len)
		memcpy(buf + off, *param, len);
	if (ret < 0 || (!ext && !ep->auth))
		return ret;
	*param = buf;
	return ret + (int)off;
}

static int iwarp_ep_connect(struct fid_ep *ep_fid, const void *addr,
			    const void *param, size_t paramlen)
{
	struct iwarp_ep *ep = iwarp_ep_of(&ep_fid->fid);
	const struct sockaddr *sa = addr ? addr : ep->base.info->dest_addr;
	uint8_t pd[IWARP_MSG_PD_MAX];
	struct iw_conn_param p;
	int ret;

	if (iwarp_ep_cm_data_bad(ep, "fi_connect", param, paramlen) || !sa)
		return -FI_EINVAL;
	if (!ep->base.enabled)
		return -FI_EOPBADSTATE;
	if (ep->state != IWARP_EP_IDLE)
		return -FI_EISCONN;
	ret = iwarp_ep_pdata(ep, NULL, iwarp_ep_ext_flags(ep), pd, &param,
			     paramlen);
	if (ret < 0)
		return ret;
	iwarp_ep_conn_param(&p, param, (size_t)ret);
	if (ep->src.sa.sa_family && iwarp_addr_port(&ep->src.sa)) {
		p.src = &ep->src.sa;
		p.src_len = iwarp_sa_len(&ep->src.sa);
	}
	iwarp_lock(ep->base.fab);
	ret = iw_qp_connect(ep->qp, sa, iwarp_sa_len(sa), &p);
	if (!ret)
		ep->state = IWARP_EP_CONNECTING;
	iwarp_pollable_touch(&ep->poll);
	iwarp_unlock(ep->base.fab);
	return ret;
}

/* A keyed endpoint made from a request that carried no auth block
 * (its passive endpoint had no key): refused. */
static int iwarp_ep_accept_unauthed(struct iwarp_ep *ep)
{
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"fi_accept: the request carried no auth block and this "
		"endpoint has a job key: refused\n");
	iw_reject(ep->connreq->req, NULL, 0);
	return -FI_ECONNREFUSED;
}

/* Lock held. Accepts the request the endpoint was made from. */
static int iwarp_ep_accept_locked(struct iwarp_ep *ep, const void *param,
				  size_t len)
{
	struct iwarp_connreq *cr = ep->connreq;
	uint8_t pd[IWARP_MSG_PD_MAX];
	struct iw_conn_param p;
	int ret;

	if (!cr->req) {
		ret = -FI_ECONNABORTED;	/* the peer gave up meanwhile */
	} else if (ep->auth && !cr->authed) {
		ret = iwarp_ep_accept_unauthed(ep);
		cr->req = NULL;
	} else if (ep->tagged && !(cr->ext & IWARP_EXT_TAG)) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL, "fi_accept: FI_TAGGED: "
			"the peer did not offer it: refused\n");
		iw_reject(cr->req, NULL, 0);
		cr->req = NULL;
		ret = -FI_ECONNREFUSED;
	} else {
		/* an ext block only in answer to one */
		ret = iwarp_ep_pdata(ep, cr->nonce_i,
				     iwarp_ep_ext_flags(ep) & cr->ext,
				     pd, &param, len);
		if (ret < 0) {
			iw_reject(cr->req, NULL, 0);
		} else {
			iwarp_ep_imm_set(ep, ep->qp, cr->ext);
			iwarp_ep_conn_param(&p, param, (size_t)ret);
			ret = iw_accept(cr->req, ep->qp, &p);
		}
		cr->req = NULL;	/* consumed either way */
	}
	iwarp_connreq_release(ep->connreq);
	ep->connreq = NULL;
	if (!ret)
		ep->state = IWARP_EP_ACCEPTING;
	return ret;
}

static int iwarp_ep_accept(struct fid_ep *ep_fid, const void *param,
			   size_t paramlen)
{
	struct iwarp_ep *ep = iwarp_ep_of(&ep_fid->fid);
	struct iwarp_pep *pep;
	int ret;

	if (iwarp_ep_cm_data_bad(ep, "fi_accept", param, paramlen))
		return -FI_EINVAL;
	if (!ep->base.enabled)
		return -FI_EOPBADSTATE;
	if (!ep->connreq || ep->state != IWARP_EP_IDLE)
		return -FI_EINVAL;
	iwarp_lock(ep->base.fab);
	pep = ep->connreq->pep;
	ret = iwarp_ep_accept_locked(ep, param, paramlen);
	iwarp_pollable_touch(&ep->poll);
	/* the Reply leaves now, not at the next progress call; then what
	 * the next request will need is made while the peer answers */
	if (!ret) {
		iw_qp_progress(ep->qp);
		iwarp_pep_info_ahead(pep);
	}
	iwarp_unlock(ep->base.fab);
	if (!ret)
		iwarp_ep_prepare_next(ep);
	return ret == -ECONNREFUSED ? -FI_ECONNREFUSED : ret;
}

static int iwarp_ep_shutdown(struct fid_ep *ep_fid, uint64_t flags)
{
	struct iwarp_ep *ep = iwarp_ep_of(&ep_fid->fid);
	int ret = 0;

	iwarp_lock(ep->base.fab);
	if (ep->qp) {
		ret = iw_qp_disconnect(ep->qp);
		iwarp_pollable_touch(&ep->poll);
		iwarp_progress(ep->base.fab);
	}
	iwarp_unlock(ep->base.fab);
	return ret == -ENOTCONN ? 0 : ret;
}

/* ---- names */

static int iwarp_ep_name(struct iwarp_ep *ep, bool peer, void *addr,
			 size_t *addrlen)
{
	union iwarp_sockaddr a = ep->src;
	socklen_t len = sizeof(a);
	int ret = -FI_ENOTCONN;

	iwarp_lock(ep->base.fab);
	if (ep->qp)
		ret = peer ? iw_qp_getpeer(ep->qp, &a.sa, &len) :
			     iw_qp_getname(ep->qp, &a.sa, &len);
	iwarp_unlock(ep->base.fab);
	if (ret && peer)
		return -FI_ENOTCONN;
	if (!a.sa.sa_family)
		a.sin.sin_family = AF_INET;
	return iwarp_addr_copy_out(&a, addr, addrlen);
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

struct fi_ops_cm iwarp_ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = iwarp_ep_setname,
	.getname = iwarp_ep_getname,
	.getpeer = iwarp_ep_getpeer,
	.connect = iwarp_ep_connect,
	.listen = iwarp_no_listen,
	.accept = iwarp_ep_accept,
	.reject = iwarp_no_reject,
	.shutdown = iwarp_ep_shutdown,
	.join = iwarp_no_join,
};
