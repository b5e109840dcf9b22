/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The iWARP transport of RDM inside: its per-endpoint and per-peer state,
 * shared by the transport proper and its guard (job keys and requests
 * that claim a peer restarted), both in rdm_iw.c.
 *
 * Job keys (iwarp_auth.h): with a key, every connection's private data is
 * the auth block followed by the RDM connection data; the QP's gate is
 * closed from its creation. The responder's proof is in its Reply, the
 * initiator's is its first Send; the peer is connected only once its
 * proof checked and the gate opened.
 *
 * A request that claims a peer whose connection is up, with another
 * instance (a restart), never replaces that connection on its word:
 * without a key it is held unanswered while a zero-length Read probes the
 * live connection (answered: the request is refused; failed or no answer
 * within FI_IWARP_RDM_PROBE_MS: the newcomer replaces it); with a key it
 * is accepted as a candidate that replaces the live connection only once
 * it proved the key.
 */
#ifndef IWARP_RDM_IW_H
#define IWARP_RDM_IW_H

#include "rdm_wire.h"
#include "rdm_xport.h"

/* ULPDU of every FPDU an RDM connection sends: 64 KiB less 4 */
#define IWARP_RDM_MULPDU 65532
#define IWARP_RDM_CONNECT_TRIES 5
/* after losing a collision: the winner's connection should come by then */
#define IWARP_RDM_COLLISION_WAIT_MS 200
/* a burst's messages that leave at once, then octets of the later ones
 * held back for one sendmsg (rdm_iw_burst) */
#define RDM_IW_BURST_FREE 4
#define RDM_IW_HOLD (256u << 10)
/* private data: the auth block (with a key), then the RDM data */
#define IWARP_RDM_PD_MAX (IWARP_AUTH_REPLY_LEN + IWARP_RDM_PD_LEN)

struct iwarp_rdm_xep {
	struct iwarp_rdm_ep *ep;	/* the owner, named in upcalls */
	const struct iwarp_rdm_upcalls *up;
	struct iwarp_domain *dom;
	union iwarp_sockaddr name;	/* where peers reach us */
	uint64_t instance;
	struct iwarp_auth_key key;	/* len 0: no job key */
	struct iw_listener *l;
	struct iwarp_pollable lpoll;
	bool shm;			/* offer shared memory (rdm_shm.c) */
	struct iw_qp **dead;		/* QPs to destroy outside callbacks */
	size_t ndead, deadcap;
};

/* One connection's job-key handshake; qp NULL: a free slot. */
struct rdm_iw_auth {
	struct iw_qp *qp;
	struct iwarp_auth a;
	uint8_t proof[IWARP_AUTH_MSG_LEN];	/* ours, while it is sent */
	bool established;
	bool gated;			/* the peer's proof not checked yet */
};

/* qp, rx_qp and one on its way out can each be authenticating */
#define RDM_IW_AUTH_SLOTS 3

struct iwarp_rdm_xconn {
	struct iwarp_rdm_xep *xe;
	struct iwarp_rdm_peer *peer;
	union iwarp_sockaddr addr;	/* the peer's listening address */
	char name[64];			/* ... as text */
	uint64_t instance;		/* 0 until the peer told us */
	struct iw_qp *qp;		/* the connection we send on */
	/* self: the accepted half; a restart with a key: the candidate */
	struct iw_qp *rx_qp;
	bool rx_polled;			/* rx_poll is registered */
	bool rfc7306;			/* the peer announced RFC 7306 */
	bool shm;			/* ... shared memory (qp's peer) */
	bool wide;			/* ... the wide eager window */
	bool initiated;			/* qp is our connect, not an accept */
	bool host;			/* qp's peer is on this host
					 * (loopback, or one address) */
	bool up;
	struct iwarp_pollable poll, rx_poll;
	int tries;
	uint64_t retry_at;
	/* a burst of posts between two progress calls: the fabric's call
	 * count at the last post, and the octets held back since */
	unsigned int post_tick;
	unsigned int post_run;		/* posts since */
	size_t post_held;
	unsigned int batch;		/* depth of batch(true) */
	size_t batch_held;		/* octets held back in it */
	/* job keys: slots of connections still proving it */
	unsigned int gated;		/* slots waiting for a proof: 0 fast */
	struct rdm_iw_auth au[RDM_IW_AUTH_SLOTS];
	/* a newcomer claiming a restart while qp is up */
	struct iw_conn_req *held;	/* no key: unanswered while probing */
	bool candidate;			/* key: rx_qp, until it proves it */
	uint64_t nc_instance;
	bool nc_rfc7306;
	bool nc_shm;
	bool nc_wide;
	char nc_from[64];		/* its TCP source, for log lines */
	uint64_t probe_until;		/* a probe is out until then */
};

/* ---- rdm_iw.c */

const char *rdm_iw_label(struct iw_qp *qp);
void rdm_iw_bury(struct iwarp_rdm_xep *xe, struct iw_qp *qp);
/* Accepts req into a new QP: c->qp, or rx_qp when rx (self, candidate);
 * apd: the request's auth block (with a key). */
int rdm_iw_accept_into(struct iwarp_rdm_xconn *c, struct iw_conn_req *req,
		       bool rx, bool rfc7306, const uint8_t *apd);
void rdm_iw_reject(struct iwarp_rdm_xep *xe, struct iw_conn_req *req,
		   uint8_t flags);
/* The peer's connection qp is up (and proven, with a key). */
void rdm_iw_ready(struct iwarp_rdm_xconn *c, struct iw_qp *qp);

/* ---- the guard (end of rdm_iw.c): job keys */

static inline bool rdm_iw_keyed(const struct iwarp_rdm_xep *xe)
{
	return iwarp_auth_on(&xe->key);
}

/* A new QP's handshake: gate closed, nonce drawn; with the peer's auth
 * block apd (responder). Writes our block to pd; 0 or -FI_EIO. */
int rdm_iw_auth_begin(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
		      bool initiator, const uint8_t *apd, uint8_t *pd);
struct rdm_iw_auth *rdm_iw_auth_of(struct iwarp_rdm_xconn *c,
				   struct iw_qp *qp);
void rdm_iw_auth_end(struct iwarp_rdm_xconn *c, struct iw_qp *qp);
/* qp still waits for the peer's proof */
static inline bool rdm_iw_gated(struct iwarp_rdm_xconn *c, struct iw_qp *qp)
{
	struct rdm_iw_auth *s = rdm_iw_auth_of(c, qp);

	return s && s->gated;
}
/* ESTABLISHED with a key: the initiator checks the Reply's proof and
 * sends its own; false when the connection was refused. */
bool rdm_iw_auth_established(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			     const struct iw_cm_event *ev);
/* The first Send on a gated QP: the peer's proof. */
int rdm_iw_auth_proof_in(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			 const struct iw_place *p);
/* A request's auth block: checks it against our key (logging and
 * rejecting when it does not fit); NULL when refused. pd/len are the
 * request's private data; *rdm_off where the RDM data starts. */
bool rdm_iw_auth_request(struct iwarp_rdm_xep *xe, struct iw_conn_req *req,
			 const uint8_t *pd, size_t len, size_t *rdm_off);
/* Our connect was rejected for the job key: fail what waits. */
void rdm_iw_auth_refused(struct iwarp_rdm_xconn *c, struct iw_qp *qp);

/* ---- the guard (end of rdm_iw.c): restart claims against a live
 * connection */

void rdm_iw_claim(struct iwarp_rdm_xconn *c, struct iw_conn_req *req,
		  const struct iwarp_rdm_pdata *them, const uint8_t *apd);
/* The probe's completion (ok: the peer answered) and its deadline. */
void rdm_iw_probe_done(struct iwarp_rdm_xconn *c, bool ok);
void rdm_iw_probe_tick(struct iwarp_rdm_xconn *c);
/* The live connection went away while a newcomer waits. */
void rdm_iw_claim_lost(struct iwarp_rdm_xconn *c);
void rdm_iw_claim_dropped(struct iwarp_rdm_xconn *c, struct iw_conn_req *req);
/* The candidate (rx_qp) proved the key: it becomes qp. */
void rdm_iw_promote(struct iwarp_rdm_xconn *c);
/* The candidate failed or ended. */
void rdm_iw_candidate_gone(struct iwarp_rdm_xconn *c);
void rdm_iw_claim_close(struct iwarp_rdm_xconn *c);

#endif /* IWARP_RDM_IW_H */
