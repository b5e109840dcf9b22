/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job keys on FI_EP_MSG (the protocol is iwarp_auth.h's). From fi_enable
 * the QP's gate is closed and the receive of the peer's proof is the
 * first in the receive queue, so the peer's first Send lands there and
 * never in a user buffer. Once established, each side sends its proof
 * as its first message; FI_CONNECTED is reported when the peer's proof
 * checked. Every failure refuses the connection (msg_cm.c).
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
	return iw_qp_post_recv(ep->qp, &wr) ? -FI_ENOMEM : 0;
}

int iwarp_ep_auth_pdata(struct iwarp_ep *ep, const uint8_t *nonce_i,
			uint8_t *out, const void *data, size_t len)
{
	struct iwarp_ep_auth *a = ep->auth;

	if (iwarp_auth_start(&a->hs, !nonce_i))
		return -FI_EIO;
	if (nonce_i)
		memcpy(a->hs.nonce_i, nonce_i, IWARP_AUTH_NONCE_LEN);
	iwarp_auth_pd_put(out, &a->hs);
	if (len)
		memcpy(out + IWARP_AUTH_PD_LEN, data, len);
	return (int)(IWARP_AUTH_PD_LEN + len);
}

/* Initiator: the responder's nonce and the user's part of the Reply. */
static const char *iwarp_ep_auth_reply(struct iwarp_ep_auth *a,
				       const struct iw_cm_event *ev)
{
	size_t len;

	if (iwarp_auth_pd_get(&a->hs, ev->pdata, ev->pdata_len))
		return "the Reply carries no auth block (no key there?)";
	len = ev->pdata_len - IWARP_AUTH_PD_LEN;
	if (len > sizeof(a->cm_data))
		return "the Reply's private data is longer than allowed";
	memcpy(a->cm_data, ev->pdata + IWARP_AUTH_PD_LEN, len);
	a->cm_data_len = len;
	return NULL;
}

void iwarp_ep_auth_established(struct iwarp_ep *ep, struct iw_qp *qp,
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
	const char *why = ep->state_passive ? NULL :
					      iwarp_ep_auth_reply(a, ev);

	if (why) {
		iwarp_ep_auth_refuse(ep, qp, why);
		return;
	}
	/* the first Send: user transmits are held until the peer checked */
	if (iwarp_auth_msg_put(a->tx, &a->key, &a->hs) ||
	    iw_qp_post_send(qp, &wr)) {
		iwarp_ep_auth_refuse(ep, qp, "this side's proof not sent");
		return;
	}
	a->deadline = iw_now_ms() + IWARP_AUTH_TIMEOUT_MS;
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
	iw_qp_gate(qp, false);
	a->hold = false;
	a->deadline = 0;
	ep->tx_hold = false;
	ep->state = IWARP_EP_CONNECTED;
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL, "%s: the peer proved the job key\n",
		iw_qp_label(qp));
	iwarp_ep_report_connected(ep, a->cm_data, a->cm_data_len);
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
