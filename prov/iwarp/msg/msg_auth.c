/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job keys on FI_EP_MSG (the protocol is iwarp_auth.h's). From fi_enable
 * the QP's gate is closed. The initiator checks the responder's proof
 * on the Reply, sends its own as its first message and is connected
 * right away. The responder's receive of that proof is the first in its
 * receive queue, so the peer's first Send lands there and never in a
 * user buffer; it is connected once the proof checked. Every failure
 * refuses the connection (msg_eq.c).
 */
#include "msg.h"

#include <string.h>

/* The peer's proof must come within this after the MPA exchange. */
#define IWARP_AUTH_TIMEOUT_MS 10000

int iwarp_ep_auth_enable(struct iwarp_ep *ep)
{
	struct iwarp_ep_auth *a = ep->auth;
	struct iw_sge sge = { a->rx, sizeof(a->rx) };
	struct iw_recv_wr wr = { .ctx = &a->rx_op, .sgl = &sge, .num_sge = 1 };

	a->rx_op.internal = true;
	a->tx_op.internal = true;
	a->hold = true;
	ep->tx_hold = true;
	iw_qp_gate(ep->qp, true);
	if (!ep->state_passive) {
		/* the responder's proof is in its Reply; ours follows the
		 * RTR at once */
		iw_qp_rtr_more(ep->qp, true);
		return 0;
	}
	return iw_qp_post_recv(ep->qp, &wr) ? -FI_ENOMEM : 0;
}

int iwarp_ep_auth_pdata(struct iwarp_ep *ep, const uint8_t *nonce_i,
			uint8_t *out, const void *data, size_t len)
{
	struct iwarp_ep_auth *a = ep->auth;
	size_t off = iwarp_auth_pd_len(!nonce_i);

	if (iwarp_auth_start(&a->hs, !nonce_i))
		return -FI_EIO;
	if (nonce_i)
		memcpy(a->hs.nonce_i, nonce_i, IWARP_AUTH_NONCE_LEN);
	if (iwarp_auth_pd_put(out, &a->key, &a->hs))
		return -FI_EIO;
	if (len)
		memcpy(out + off, data, len);
	return (int)(off + len);
}

/* The peer proved the key: the gate opens, FI_CONNECTED (with the
 * Reply's CM data on the initiator). */
static void iwarp_ep_auth_done(struct iwarp_ep *ep, struct iw_qp *qp,
			       const void *data, size_t len)
{
	struct iwarp_ep_auth *a = ep->auth;

	iw_qp_gate(qp, false);
	a->hold = false;
	a->deadline = 0;
	ep->tx_hold = false;
	ep->state = IWARP_EP_CONNECTED;
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL, "%s: the peer proved the job key\n",
		iw_qp_label(qp));
	iwarp_ep_report_connected(ep, data, len);
}

/* Initiator: the Reply's auth block and proof; NULL or why refused. */
static const char *iwarp_ep_auth_reply(struct iwarp_ep_auth *a,
				       const struct iw_cm_event *ev)
{
	switch (iwarp_auth_pd_get(&a->hs, &a->key, ev->pdata, ev->pdata_len)) {
	case 0:
		return NULL;
	case -FI_EACCES:
		return "wrong proof in the Reply (another key, or a replayed "
		       "handshake)";
	case -FI_EINVAL:
		return "the Reply carries no auth block of this version (no "
		       "key there?)";
	default:
		return "the Reply's proof could not be checked";
	}
}

/* Initiator: the Reply checked, our proof is our first Send. */
static void iwarp_ep_auth_active(struct iwarp_ep *ep, struct iw_qp *qp,
				 const struct iw_cm_event *ev)
{
	struct iwarp_ep_auth *a = ep->auth;
	struct iw_sge sge = { a->tx, sizeof(a->tx) };
	struct iw_send_wr wr = {
		.ctx = &a->tx_op,
		.op = IW_WR_SEND,
		.sgl = &sge,
		.num_sge = 1,
	};
	const char *why = iwarp_ep_auth_reply(a, ev);

	if (!why && (iwarp_auth_msg_put(a->tx, &a->key, &a->hs) ||
		     iw_qp_post_send(qp, &wr)))
		why = "this side's proof not sent";
	if (why) {
		iwarp_ep_auth_refuse(ep, qp, why);
		return;
	}
	iwarp_ep_auth_done(ep, qp, ev->pdata + IWARP_AUTH_REPLY_LEN,
			   ev->pdata_len - IWARP_AUTH_REPLY_LEN);
}

void iwarp_ep_auth_established(struct iwarp_ep *ep, struct iw_qp *qp,
			       const struct iw_cm_event *ev)
{
	if (!ep->state_passive)
		iwarp_ep_auth_active(ep, qp, ev);
	else	/* our proof went in the Reply: the initiator's comes now */
		ep->auth->deadline = iw_now_ms() + IWARP_AUTH_TIMEOUT_MS;
}

static void iwarp_ep_auth_check(struct iwarp_ep *ep, struct iw_qp *qp,
				const struct iw_wc *wc)
{
	struct iwarp_ep_auth *a = ep->auth;
	int ret = iwarp_auth_msg_check(&a->hs, &a->key, a->rx, wc->byte_len);

	if (ret) {
		iwarp_ep_auth_refuse(ep, qp, ret == -FI_EACCES ?
			"wrong proof (another key, or a replayed handshake)" :
			"the peer's first message is no auth message");
		return;
	}
	iwarp_ep_auth_done(ep, qp, NULL, 0);
}

void iwarp_ep_auth_complete(struct iwarp_ep *ep, struct iw_qp *qp,
			    const struct iw_wc *wc)
{
	struct iwarp_ep_auth *a = ep->auth;

	/* a failed stream is reported by its CM event (msg_cm.c) */
	if (wc->ctx != &a->rx_op || wc->status != IW_WC_SUCCESS ||
	    a->refused || !a->hold)
		return;
	iwarp_ep_auth_check(ep, qp, wc);
}

void iwarp_ep_auth_progress(struct iwarp_ep *ep)
{
	struct iwarp_ep_auth *a = ep->auth;

	if (a->deadline && a->hold && !a->refused &&
	    iw_now_ms() >= a->deadline)
		iwarp_ep_auth_refuse(ep, ep->qp,
				     "no proof from the peer in time");
}
