/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_MSG, private to msg/: the active endpoint (one engine queue
 * pair: msg_ep.c objects, msg_cm.c connection management, msg_data.c
 * data transfer) and the passive one (msg_pep.c, an engine listener).
 */
#ifndef IWARP_MSG_H
#define IWARP_MSG_H

#include "../iwarp.h"
#include "../iwarp_auth.h"

#include "iwarp/engine.h"

/* One posted operation; the engine work request's context. */
struct iwarp_op {
	void *context;
	uint64_t flags;			/* CQ entry flags */
	size_t len;
	bool cq;			/* report success in the CQ */
	int pending;			/* engine work requests still out */
	int status;			/* first failure (enum iw_wc_status) */
	bool internal;			/* the job key's own Send or receive */
	/* FI_MULTI_RECV: the user's buffer; the engine receive covers
	 * [buf + off, buf + size) and is posted again after each message */
	uint8_t *mbuf;
	size_t moff, msize;
	struct iw_err err;
	struct iwarp_op *next;		/* free list */
	/* FI_TAGGED endpoints (msg_tagged.c): a receive waits in a list
	 * for its message; a Send carries a header */
	struct iwarp_list link;
	struct iw_sge sgl[IWARP_IOV_MAX];
	int nsge;
	uint64_t tag, ignore;		/* what a receive matches */
	uint64_t rtag;			/* the message's tag */
	uint32_t rlen;			/* ... and length */
	uint8_t thdr[16];		/* IWARP_THDR_LEN */
	void *copy;			/* an injected Send's octets */
};

enum iwarp_ep_state {
	IWARP_EP_IDLE,
	IWARP_EP_CONNECTING,
	IWARP_EP_ACCEPTING,
	IWARP_EP_CONNECTED,
	IWARP_EP_SHUTDOWN,
};

struct iwarp_connreq;

/*
 * Provider extensions, offered in an ext block at the head of the MPA
 * private data (before any auth block) and on only when both sides put
 * one there; a peer that is not this provider (Linux siw) never sends
 * one, so it is never sent what it does not know:
 *
 *	0 magic "IWXF"  4 version(8)  5 flags(8)  6 reserved(16)
 *
 * IWARP_EXT_IMM: remote CQ data as RFC 7306 Immediate Data. Its 8
 * octets (big-endian) are a kind word and the 32-bit CQ data: kind
 * IWARP_IMM_SEND goes just before the Send it belongs to and uses no
 * receive; kind IWARP_IMM_WRITE follows an RDMA Write and completes a
 * receive of its own when the endpoint has mode FI_RX_CQ_DATA, else a
 * completion of its own. Either reports the Write's length.
 */
#define IWARP_EXT_PD_LEN	8
#define IWARP_EXT_VERSION	1
#define IWARP_EXT_IMM		0x01
/*
 * IWARP_EXT_TAG: FI_TAGGED. An endpoint that asked for it connects only
 * to a peer that offered it too (msg_tagged.c). Its QP places Sends
 * itself (engine peek mode) and every Send on it, tagged or not, starts
 * with a header, big-endian:
 *
 *	0 kind(8)  1 reserved(24) = 0  4 length(32)  8 tag(64)
 *
 * length counts the octets after the header. A header out of these
 * rules ends the stream with a Terminate.
 */
#define IWARP_EXT_TAG		0x02
#define IWARP_THDR_LEN		16
#define IWARP_THDR_MSG		1
#define IWARP_THDR_TAGGED	2
/* messages held before their receive is posted, at most */
#define IWARP_UNEXP_MAX		4096
#define IWARP_UNEXP_BYTES	(64u << 20)
#define IWARP_IMM_WRITE		0u
#define IWARP_IMM_SEND		1u
#define IWARP_MSG_CQ_DATA	4	/* cq_data_size when offered */
/* remote CQ data of Writes without a receive, unread, at most */
#define IWARP_IMM_UNREAD_MAX	(1u << 16)

/* The ext block of flags at p (IWARP_EXT_PD_LEN octets). */
void iwarp_ext_put(uint8_t *p, uint8_t flags);
/* A leading ext block's flags, stripped from pd/len; 0 when none. */
uint8_t iwarp_ext_get(const uint8_t **pd, uint16_t *len);

/*
 * A keyed endpoint's handshake (iwarp_auth.h). On the responder its
 * receive is the first in the receive queue, so the initiator's first
 * Send lands there and never in a user buffer; user transmits wait
 * (-FI_EAGAIN) until the peer's proof checked (the Reply's, on the
 * initiator), and FI_CONNECTED is reported only then.
 */
struct iwarp_ep_auth {
	struct iwarp_auth_key key;	/* len 0: no job key */
	struct iwarp_auth hs;
	bool hold;			/* user transmits wait */
	bool refused;			/* reported; later CM events are not */
	uint64_t deadline;		/* for the peer's proof, 0: none */
	struct iwarp_op rx_op, tx_op;
	uint8_t rx[IWARP_AUTH_MSG_LEN];
	uint8_t tx[IWARP_AUTH_MSG_LEN];
};

/* Private data we send: a keyed Reply carries the responder's proof on
 * top of IWARP_CM_DATA_MAX (only this provider gets keyed ones). */
#define IWARP_MSG_PD_MAX (IWARP_CM_DATA_MAX + IWARP_AUTH_MAC_LEN)

struct iwarp_ep {
	struct iwarp_ep_base base;	/* first: fids convert through it */
	struct iw_qp *qp;
	struct iwarp_pollable poll;
	enum iwarp_ep_state state;
	bool state_passive;		/* made from an FI_CONNREQ */
	struct iwarp_eq *eq;
	struct iwarp_connreq *connreq;	/* passive side, from info->handle */
	struct iwarp_op *ops;
	struct iwarp_op *free_ops;
	size_t nops;
	size_t ops_fresh;		/* ops[0, ops_fresh) were handed out */
	union iwarp_sockaddr src;	/* fi_setname / info->src_addr */
	struct iwarp_ep_auth *auth;	/* NULL without a job key */
	bool tx_hold;			/* auth->hold, in the data path */
	bool imm_offer;			/* the app asked for remote CQ data */
	bool imm_norecv;		/* ... without FI_RX_CQ_DATA */
	bool rwrite;			/* takes remote Writes (caps) */
	bool imm_on;			/* ... and the peer said yes */
	bool imm_next;			/* imm_data is for the next Send */
	uint32_t imm_data;
	size_t prefix;			/* FI_MSG_PREFIX octets, or 0 */
	bool tagged;			/* FI_TAGGED: msg_tagged.c */
	bool tag_refused;		/* the peer did not offer it */
	struct iwarp_list rx_msg, rx_tag;	/* receives waiting */
	struct iwarp_list unexp;	/* messages ahead of their receive */
	size_t unexp_n, unexp_bytes;
};

static inline struct iwarp_ep *iwarp_ep_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_ep, base.ep_fid.fid);
}

/* Lock held. The free list of operation contexts, then the array's
 * untouched tail: an endpoint faults in only the contexts it uses. */
static inline struct iwarp_op *iwarp_op_get(struct iwarp_ep *ep)
{
	struct iwarp_op *op = ep->free_ops;

	if (op)
		ep->free_ops = op->next;
	else if (ep->ops_fresh < ep->nops) {
		op = &ep->ops[ep->ops_fresh++];
		memset(op, 0, sizeof(*op));
	}
	return op;
}

static inline void iwarp_op_put(struct iwarp_ep *ep, struct iwarp_op *op)
{
	op->next = ep->free_ops;
	ep->free_ops = op;
}

/* msg_data.c: the data ops and the engine completion callback (lock
 * held). */
extern struct fi_ops_msg iwarp_msg_ops;
extern struct fi_ops_rma iwarp_rma_ops;
void iwarp_ep_complete(void *arg, struct iw_qp *qp, const struct iw_wc *wc);
/* msg_data.c, lock held: a stream waiting for a receive takes one from
 * the shared receive context (iwarp_ep_type.srx_offer, and after
 * progress) */
bool iwarp_ep_srx_offer(struct iwarp_ep_base *b, struct iwarp_srx_rx *rx);
void iwarp_ep_srx_feed(struct iwarp_ep *ep);
/* msg_ep.c, lock not held: readies memory for the next endpoint like ep */
void iwarp_ep_prepare_next(struct iwarp_ep *ep);

/* msg_data.c: one transmit op (also a tagged one, msg_tagged.c). */
struct iwarp_tx {
	enum iw_wr_opcode op;
	const struct iovec *iov;
	size_t count;
	uint64_t raddr;
	uint64_t key;
	void *context;
	uint64_t flags;		/* op flags */
	uint64_t cqflags;
	uint64_t data;		/* FI_REMOTE_CQ_DATA */
	uint64_t tag;		/* FI_TAGGED */
	bool no_inline;		/* FI_INJECT octets copied already */
};
/* The fi_inject calls complete silently; an FI_INJECT op flag on other
 * calls only frees the buffer at once (fi_msg(3)). */
#define IWARP_INJECT_CALL (1ULL << 62)
ssize_t iwarp_tx(struct iwarp_ep *ep, const struct iwarp_tx *t);
/* A receive of op flags (FI_TAGGED: tag and ignore match). */
ssize_t iwarp_rx(struct iwarp_ep *ep, const struct iovec *iov, size_t count,
		 void *context, uint64_t flags, uint64_t tag, uint64_t ignore);

/* msg_tagged.c, lock held. The header of a Send on a FI_TAGGED
 * endpoint; a receive's matching or waiting; placement and completion
 * of the peer's Sends (iw_qp_ops.place, iwarp_ep_complete); the end of
 * what waits (connection gone or endpoint closed); fi_cancel. */
extern struct fi_ops_tagged iwarp_msg_tagged_ops;
void iwarp_thdr_put(uint8_t *p, bool tagged, uint32_t len, uint64_t tag);
void iwarp_tag_post_rx(struct iwarp_ep *ep, struct iwarp_op *op);
int iwarp_tag_place(void *arg, struct iw_qp *qp, const struct iw_place *p,
		    struct iw_sge *dst, void **ctx);
void iwarp_tag_recv_done(struct iwarp_ep *ep, const struct iw_wc *wc);
void iwarp_tag_flush(struct iwarp_ep *ep);
int iwarp_tag_cancel(struct iwarp_ep *ep, void *context);

/* msg_data.c: the peer's Immediate Data (iw_qp_ops.imm). */
int iwarp_ep_imm(void *arg, struct iw_qp *qp, uint64_t data,
		 unsigned int flags);

/* msg_cm.c: fi_ops_cm and the engine callbacks of the endpoint's QP. */
extern struct fi_ops_cm iwarp_ep_cm_ops;
extern const struct iw_qp_ops iwarp_ep_qp_ops;

/* msg_auth.c, lock held. enable: closes the gate and posts the receive
 * of the peer's proof (0 or -FI_ENOMEM). pdata: private data with this
 * side's auth block before the user's data; nonce_i is the initiator's
 * (NULL: we are the initiator). Its length, or -FI_EIO. */
int iwarp_ep_auth_enable(struct iwarp_ep *ep);
int iwarp_ep_auth_pdata(struct iwarp_ep *ep, const uint8_t *nonce_i,
			uint8_t *out, const void *data, size_t len);
/* The connection is up: the initiator checks the Reply, sends its
 * proof and is connected; the responder waits for that proof. */
void iwarp_ep_auth_established(struct iwarp_ep *ep, struct iw_qp *qp,
			       const struct iw_cm_event *ev);
/* An internal op completed: the peer's proof is checked here. */
void iwarp_ep_auth_complete(struct iwarp_ep *ep, struct iw_qp *qp,
			    const struct iw_wc *wc);
/* Refuses a connection whose peer's proof is overdue. */
void iwarp_ep_auth_progress(struct iwarp_ep *ep);
/* msg_cm.c: ends a connection whose handshake failed (warn log,
 * FI_ECONNREFUSED on the EQ, later CM events unreported). */
/* msg_eq.c: EQ entries of a connection's events */
void iwarp_ep_eq_cm(struct iwarp_ep *ep, uint32_t event,
		    const struct iw_cm_event *ev);
void iwarp_ep_eq_err(struct iwarp_ep *ep, int err,
		     const struct iw_cm_event *ev);
void iwarp_ep_auth_refuse(struct iwarp_ep *ep, struct iw_qp *qp,
			  const char *why);
/* msg_cm.c: FI_CONNECTED with cm data, lock held. */
void iwarp_ep_report_connected(struct iwarp_ep *ep, const void *data,
			       size_t len);

/* ---- passive endpoints (msg_pep.c) */

struct iwarp_pep {
	struct fid_pep pep_fid;
	struct iwarp_fabric *fab;
	struct fi_info *info;
	struct iwarp_eq *eq;
	struct iw_dev *dev;
	struct iw_listener *l;
	struct iwarp_pollable poll;
	union iwarp_sockaddr addr;
	struct iwarp_list reqs;		/* undecided iwarp_connreqs */
	struct iwarp_auth_key key;	/* requests must carry an auth block */
	struct fi_info *info_next;	/* the next FI_CONNREQ's, copied ahead */
};

/* Lock held. Copies the pep's info for its next FI_CONNREQ now, off the
 * request's path (fi_accept does, once its Reply is out). */
void iwarp_pep_info_ahead(struct iwarp_pep *pep);

/* info->handle of FI_CONNREQ: the request until accepted or rejected. */
struct iwarp_connreq {
	struct fid fid;
	struct iwarp_list link;
	struct iwarp_pep *pep;
	struct iw_conn_req *req;	/* NULL once the engine dropped it */
	bool authed;			/* carried an auth block: nonce_i */
	uint8_t ext;			/* its ext block's flags */
	uint8_t nonce_i[IWARP_AUTH_NONCE_LEN];
};

/* Detaches a request from its pep (accept/reject/endpoint close). */
void iwarp_connreq_release(struct iwarp_connreq *cr);

#endif /* IWARP_MSG_H */
