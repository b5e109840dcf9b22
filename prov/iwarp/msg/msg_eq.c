/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a MSG endpoint reports on its EQ: connection events and error
 * entries. Beneath both connection management (msg_cm.c) and the job-key
 * handshake (msg_auth.c), which report through it.
 */
#include "msg.h"

#include <string.h>

void iwarp_ep_eq_cm(struct iwarp_ep *ep, uint32_t event,
		    const struct iw_cm_event *ev)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 512];
	struct fi_eq_cm_entry *entry = (void *)buf;
	size_t dlen = ev && event == FI_CONNECTED ? ev->pdata_len : 0;

	if (!ep->eq)
		return;
	memset(entry, 0, sizeof(*entry));
	entry->fid = &ep->base.ep_fid.fid;
	if (dlen)
		memcpy(entry->data, ev->pdata, dlen);
	iwarp_eq_write_locked(ep->eq, event, entry, sizeof(*entry) + dlen);
}

void iwarp_ep_eq_err(struct iwarp_ep *ep, int err,
		     const struct iw_cm_event *ev)
{
	if (ep->eq)
		iwarp_eq_write_err(ep->eq, &ep->base.ep_fid.fid,
				   ep->base.ep_fid.fid.context, 0, err,
				   iwarp_prov_errno_of(&ev->err),
				   ev->pdata_len ? ev->pdata : NULL,
				   ev->pdata_len);
}

void iwarp_ep_report_connected(struct iwarp_ep *ep, const void *data,
			       size_t len)
{
	struct iw_cm_event ev = { .pdata = data, .pdata_len = (uint16_t)len };

	iwarp_ep_eq_cm(ep, FI_CONNECTED, ep->state_passive ? NULL : &ev);
}

void iwarp_ep_auth_refuse(struct iwarp_ep *ep, struct iw_qp *qp,
			  const char *why)
{
	struct iw_cm_event ev = { .type = IW_CM_REJECTED };

	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"%s: authentication failed, connection refused: %s\n",
		iw_qp_label(qp), why);
	ep->auth->refused = true;
	ep->auth->hold = false;
	ep->tx_hold = false;
	ep->state = IWARP_EP_SHUTDOWN;
	/* its CM event comes back here, unreported */
	iw_qp_abort(qp);
	iwarp_ep_eq_err(ep, FI_ECONNREFUSED, &ev);
}
