/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_MSG, private to msg/: the active endpoint (one engine queue
 * pair: msg_ep.c objects, msg_cm.c connection management, msg_data.c
 * data transfer) and the passive one (msg_pep.c, an engine listener).
 */
#ifndef IWARP_MSG_H
#define IWARP_MSG_H

#include "../iwarp.h"

#include "iwarp/engine.h"

/* One posted operation; the engine work request's context. */
struct iwarp_op {
	void *context;
	uint64_t flags;			/* CQ entry flags */
	size_t len;
	bool cq;			/* report success in the CQ */
	int pending;			/* engine work requests still out */
	int status;			/* first failure (enum iw_wc_status) */
	struct iw_err err;
	struct iwarp_op *next;		/* free list */
};

enum iwarp_ep_state {
	IWARP_EP_IDLE,
	IWARP_EP_CONNECTING,
	IWARP_EP_ACCEPTING,
	IWARP_EP_CONNECTED,
	IWARP_EP_SHUTDOWN,
};

struct iwarp_connreq;

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
	union iwarp_sockaddr src;	/* fi_setname / info->src_addr */
};

static inline struct iwarp_ep *iwarp_ep_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_ep, base.ep_fid.fid);
}

/* Lock held. The free list of operation contexts. */
static inline struct iwarp_op *iwarp_op_get(struct iwarp_ep *ep)
{
	struct iwarp_op *op = ep->free_ops;

	if (op)
		ep->free_ops = op->next;
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

/* msg_cm.c: fi_ops_cm and the engine callbacks of the endpoint's QP. */
extern struct fi_ops_cm iwarp_ep_cm_ops;
extern const struct iw_qp_ops iwarp_ep_qp_ops;

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
};

/* info->handle of FI_CONNREQ: the request until accepted or rejected. */
struct iwarp_connreq {
	struct fid fid;
	struct iwarp_list link;
	struct iwarp_pep *pep;
	struct iw_conn_req *req;	/* NULL once the engine dropped it */
};

/* Detaches a request from its pep (accept/reject/endpoint close). */
void iwarp_connreq_release(struct iwarp_connreq *cr);

#endif /* IWARP_MSG_H */
