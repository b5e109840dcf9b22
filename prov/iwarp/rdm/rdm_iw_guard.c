/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The guard of RDM's iWARP transport (rdm_iw.h): job keys on every
 * connection, and requests that claim a live peer restarted. Runs inside
 * engine callbacks; QPs that end here are buried, never destroyed.
 */
#include "rdm_iw.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <string.h>

/* ---- job keys */

struct rdm_iw_auth *rdm_iw_auth_of(struct iwarp_rdm_xconn *c,
				   struct iw_qp *qp)
{
	size_t i;

	for (i = 0; qp && i < RDM_IW_AUTH_SLOTS; i++)
		if (c->au[i].qp == qp)
			return &c->au[i];
	return NULL;
}

void rdm_iw_auth_end(struct iwarp_rdm_xconn *c, struct iw_qp *qp)
{
	struct rdm_iw_auth *s = rdm_iw_auth_of(c, qp);

	if (!s)
		return;
	if (s->gated)
		c->gated--;
	OPENSSL_cleanse(s, sizeof(*s));
	memset(s, 0, sizeof(*s));
}

int rdm_iw_auth_begin(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
		      bool initiator, const uint8_t *apd, uint8_t *pd)
{
	struct rdm_iw_auth *s = NULL;
	size_t i;

	for (i = 0; !s && i < RDM_IW_AUTH_SLOTS; i++)
		if (!c->au[i].qp)
			s = &c->au[i];
	if (!s || iwarp_auth_start(&s->a, initiator))
		return -FI_EIO;
	if (apd && iwarp_auth_pd_get(&s->a, apd, IWARP_AUTH_PD_LEN))
		return -FI_EINVAL;
	/* nothing but the proof and the RTR until it checked */
	iw_qp_gate(qp, true);
	iwarp_auth_pd_put(pd, &s->a);
	s->qp = qp;
	s->gated = true;
	c->gated++;
	return 0;
}

/*
 * Authentication failed on qp: it goes, and what waits for the peer fails
 * with FI_ECONNREFUSED / IWARP_PROV_ERRNO_AUTH. Not retried: a key does
 * not change by trying again.
 */
static void rdm_iw_auth_fail(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			     const char *why)
{
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: job key authentication failed on %s: %s; "
		"connection refused\n", c->name, iw_qp_label(qp), why);
	rdm_iw_auth_end(c, qp);
	rdm_iw_bury(c->xe, qp);
	if (qp == c->rx_qp) {
		c->rx_qp = NULL;
		if (c->candidate)
			rdm_iw_candidate_gone(c);
		return;
	}
	if (qp != c->qp)
		return;
	c->qp = NULL;
	c->up = false;
	c->tries = 0;
	c->xe->up->unreachable(c->peer, FI_ECONNREFUSED,
			       IWARP_PROV_ERRNO_AUTH);
}

bool rdm_iw_auth_established(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			     const struct iw_cm_event *ev)
{
	struct rdm_iw_auth *s = rdm_iw_auth_of(c, qp);
	struct iw_sge sge = { s ? s->proof : NULL, IWARP_AUTH_MSG_LEN };
	struct iw_send_wr wr = {
		.ctx = s,	/* inside c: ours, not the protocol's */
		.op = IW_WR_SEND,
		.flags = IW_WR_INLINE,
		.sgl = &sge,
		.num_sge = 1,
	};

	if (!s) {
		rdm_iw_auth_fail(c, qp, "no handshake for this connection");
		return false;
	}
	if (s->a.initiator &&
	    iwarp_auth_pd_get(&s->a, ev->pdata, ev->pdata_len)) {
		rdm_iw_auth_fail(c, qp, "its Reply carries no job key block");
		return false;
	}
	s->established = true;
	/* our proof is the first message on the connection */
	if (iwarp_auth_msg_put(s->proof, &c->xe->key, &s->a) ||
	    iw_qp_post_send(qp, &wr)) {
		rdm_iw_auth_fail(c, qp, "our proof could not be sent");
		return false;
	}
	return true;
}

int rdm_iw_auth_proof_in(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			 const struct iw_place *p)
{
	struct rdm_iw_auth *s = rdm_iw_auth_of(c, qp);
	int ret = -FI_EINVAL;

	if (p->last && p->seg_len == IWARP_AUTH_MSG_LEN)
		ret = iwarp_auth_msg_check(&s->a, &c->xe->key, p->peek,
					   p->peek_len);
	if (ret) {
		rdm_iw_auth_fail(c, qp, ret == -FI_EACCES ?
			"wrong proof (another key, or a replayed handshake)" :
			"its first message is no proof of the key");
		return 0;	/* discarded; the QP is buried */
	}
	s->gated = false;
	c->gated--;
	iw_qp_gate(qp, false);
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: %s proved the job key\n", c->name,
		iw_qp_label(qp));
	rdm_iw_ready(c, qp);
	return 0;
}

static void rdm_iw_req_from(struct iw_conn_req *req, char *buf, size_t len)
{
	union iwarp_sockaddr from;
	socklen_t alen = sizeof(from);

	memset(&from, 0, sizeof(from));
	iw_conn_req_getpeer(req, &from.sa, &alen);
	iwarp_addr_str(&from, buf, len);
}

bool rdm_iw_auth_request(struct iwarp_rdm_xep *xe, struct iw_conn_req *req,
			 const uint8_t *pd, size_t len, size_t *rdm_off)
{
	struct iwarp_auth scratch = { .initiator = false };
	bool has = !iwarp_auth_pd_get(&scratch, pd, len);
	char from[64];

	*rdm_off = has ? IWARP_AUTH_PD_LEN : 0;
	if (has == rdm_iw_keyed(xe))
		return true;
	rdm_iw_req_from(req, from, sizeof(from));
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL, "RDM connection request from "
		"%s %s: refused (job key)\n", from, has ?
		"offers a job key, but this endpoint has none" :
		"carries no job key, which this endpoint requires");
	rdm_iw_reject(xe, req, IWARP_RDM_KEYREF);
	return false;
}

void rdm_iw_auth_refused(struct iwarp_rdm_xconn *c, struct iw_qp *qp)
{
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s refused our connection %s for the job key (%s): "
		"not retried\n", c->name, rdm_iw_label(qp),
		rdm_iw_keyed(c->xe) ? "it has none" : "it requires one");
	c->tries = 0;
	c->xe->up->unreachable(c->peer, FI_ECONNREFUSED,
			       IWARP_PROV_ERRNO_AUTH);
}

/* ---- restart claims */

/* The newcomer takes the place of the live connection. */
static void rdm_iw_replace(struct iwarp_rdm_xconn *c, struct iw_conn_req *req)
{
	if (c->qp) {
		rdm_iw_auth_end(c, c->qp);
		rdm_iw_bury(c->xe, c->qp);
		c->qp = NULL;
	}
	if (c->up) {
		c->up = false;
		c->xe->up->lost(c->peer, FI_EIO);
	}
	c->instance = c->nc_instance;
	rdm_iw_accept_into(c, req, false, c->nc_rfc7306, NULL);
}

/* The probe ended: ok, the live connection answered. */
static void rdm_iw_probe_end(struct iwarp_rdm_xconn *c, bool ok,
			     const char *why)
{
	struct iw_conn_req *req = c->held;

	c->probe_until = 0;
	if (!req)
		return;
	c->held = NULL;
	iw_conn_req_set_ctx(req, NULL);
	if (ok) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
			"RDM peer %s: request from %s claiming a restart "
			"(instance %#" PRIx64 ") refused: the live connection "
			"%s answered a probe\n", c->name, c->nc_from,
			c->nc_instance, rdm_iw_label(c->qp));
		rdm_iw_reject(c->xe, req, 0);
		return;
	}
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: the live connection %s %s: the restarted peer "
		"at %s (instance %#" PRIx64 ") replaces it\n", c->name,
		rdm_iw_label(c->qp), why, c->nc_from, c->nc_instance);
	rdm_iw_replace(c, req);
}

void rdm_iw_probe_done(struct iwarp_rdm_xconn *c, bool ok)
{
	rdm_iw_probe_end(c, ok, "failed a probe");
}

void rdm_iw_probe_tick(struct iwarp_rdm_xconn *c)
{
	if (iw_now_ms() >= c->probe_until)
		rdm_iw_probe_end(c, false, "did not answer a probe in time");
}

void rdm_iw_claim_lost(struct iwarp_rdm_xconn *c)
{
	if (c->held)
		rdm_iw_probe_end(c, false, "was lost");
}

void rdm_iw_claim_dropped(struct iwarp_rdm_xconn *c, struct iw_conn_req *req)
{
	if (c->held != req)
		return;
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: the held request from %s went away\n", c->name,
		c->nc_from);
	c->held = NULL;
	c->probe_until = 0;
}

void rdm_iw_claim_close(struct iwarp_rdm_xconn *c)
{
	if (c->held)
		iw_reject(c->held, NULL, 0);
	c->held = NULL;
	c->probe_until = 0;
}

/* Without a key: hold the request, probe the live connection with a
 * zero-length Read that only a live peer answers. */
static void rdm_iw_hold(struct iwarp_rdm_xconn *c, struct iw_conn_req *req)
{
	struct iw_send_wr wr = {
		.ctx = &c->probe_until,	/* inside c: ours */
		.op = IW_WR_READ,
		.flags = IW_WR_SIGNALED,
	};

	c->held = req;
	iw_conn_req_set_ctx(req, c);
	c->probe_until = iw_now_ms() + (uint64_t)iwarp_params.rdm_probe_ms;
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: request from %s claims a restart (instance "
		"%#" PRIx64 ", live %#" PRIx64 "): held while the live "
		"connection %s is probed (up to %d ms)\n", c->name, c->nc_from,
		c->nc_instance, c->instance, rdm_iw_label(c->qp),
		iwarp_params.rdm_probe_ms);
	if (iw_qp_post_send(c->qp, &wr))
		rdm_iw_probe_end(c, false, "took no probe");
}

void rdm_iw_claim(struct iwarp_rdm_xconn *c, struct iw_conn_req *req,
		  const struct iwarp_rdm_pdata *them, const uint8_t *apd)
{
	char from[64];

	rdm_iw_req_from(req, from, sizeof(from));
	if (c->held || c->candidate || c->rx_qp) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
			"RDM peer %s: request from %s claiming a restart "
			"while another is pending: refused\n", c->name, from);
		rdm_iw_reject(c->xe, req, 0);
		return;
	}
	memcpy(c->nc_from, from, sizeof(from));
	c->nc_instance = them->instance;
	c->nc_rfc7306 = them->version & IWARP_RDM_RFC7306;
	if (!apd) {
		rdm_iw_hold(c, req);
		return;
	}
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: request from %s claims a restart (instance "
		"%#" PRIx64 ", live %#" PRIx64 " on %s): it replaces the live "
		"connection only once it proves the job key\n", c->name, from,
		c->nc_instance, c->instance, rdm_iw_label(c->qp));
	c->candidate = true;
	if (rdm_iw_accept_into(c, req, true, c->nc_rfc7306, apd))
		c->candidate = false;
}

void rdm_iw_promote(struct iwarp_rdm_xconn *c)
{
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: %s proved the job key: the restarted peer "
		"(instance %#" PRIx64 ") replaces %s\n", c->name,
		iw_qp_label(c->rx_qp), c->nc_instance, rdm_iw_label(c->qp));
	if (c->qp) {
		rdm_iw_auth_end(c, c->qp);
		rdm_iw_bury(c->xe, c->qp);
	}
	c->qp = c->rx_qp;
	c->rx_qp = NULL;
	c->candidate = false;
	c->initiated = false;
	c->instance = c->nc_instance;
	c->rfc7306 = iwarp_params.rfc7306 && c->nc_rfc7306;
	if (c->up) {
		c->up = false;
		c->xe->up->lost(c->peer, FI_EIO);
	}
}

void rdm_iw_candidate_gone(struct iwarp_rdm_xconn *c)
{
	c->candidate = false;
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: the request from %s claiming a restart did not "
		"prove the job key: refused; %s stays\n", c->name, c->nc_from,
		rdm_iw_label(c->qp));
}
