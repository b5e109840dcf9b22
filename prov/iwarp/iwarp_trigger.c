/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Triggered operations (fi_trigger(3), FI_TRIGGER_THRESHOLD).
 *
 * Independent of the endpoint type: at open, an endpoint asked with
 * FI_TRIGGER gets per-endpoint copies of its ops tables in which the
 * message-form calls (sendmsg, writemsg, ...) look for FI_TRIGGER. Such
 * a call is copied (iovecs, descriptors, inject data) into an op queued
 * on the fabric, sorted by threshold then age; iwarp_trig_run issues the
 * ops whose counter reached its threshold through the endpoint's
 * original ops, without FI_TRIGGER. It runs with the fabric lock free,
 * as any application call does, from the entry points that drive
 * progress (CQ and counter reads and waits, fi_poll, fi_cntr_add/set,
 * the progress thread): never from inside an endpoint's own code.
 *
 * fi_ep_alias is served here too, since its purpose with FI_TRIGGER is
 * an endpoint whose every call is triggered (fabtests' rdm_rma_trigger).
 */
#include "iwarp.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_trigger.h>

enum iwarp_trig_kind {
	IWARP_TRIG_SEND,
	IWARP_TRIG_RECV,
	IWARP_TRIG_TSEND,
	IWARP_TRIG_TRECV,
	IWARP_TRIG_WRITE,
	IWARP_TRIG_READ,
	IWARP_TRIG_ATOMIC,
};

/* One call in message form, whatever entry point it came through. */
struct iwarp_trig_args {
	enum iwarp_trig_kind kind;
	const struct iovec *iov;
	void **desc;
	size_t iov_count;
	const struct fi_rma_iov *rma;
	size_t rma_count;
	fi_addr_t addr;
	void *context;
	uint64_t data, tag, ignore;
	enum fi_datatype dt;
	enum fi_op aop;
	bool inject;		/* came through fi_inject*: issue that way */
};

/* An endpoint's original ops and the copies it now points to. */
struct iwarp_trig_ep {
	struct fid_ep *ep;
	struct iwarp_fabric *fab;
	struct fi_ops *o_fi;
	struct fi_ops_msg *o_msg;
	struct fi_ops_tagged *o_tagged;
	struct fi_ops_rma *o_rma;
	struct fi_ops_atomic *o_atomic;
	struct fi_ops fi;
	struct fi_ops_msg msg;
	struct fi_ops_tagged tagged;
	struct fi_ops_rma rma;
	struct fi_ops_atomic atomic;
	int aliases;			/* open aliases: close them first */
};

struct iwarp_trig_op {
	struct iwarp_list link;		/* in fab->trig_ops */
	struct iwarp_trig_ep *t;
	struct iwarp_cntr *cntr;
	uint64_t threshold, seq, flags;
	struct iwarp_trig_args a;	/* its arrays point below */
	struct iovec iov[IWARP_IOV_MAX];
	void *desc[IWARP_IOV_MAX];
	struct fi_rma_iov rma[IWARP_IOV_MAX];
	uint8_t inject[IWARP_INJECT_MAX];
};

/* ---- the queue */

static struct iwarp_list *iwarp_trig_list(struct iwarp_fabric *fab)
{
	if (!fab->trig_ops.next)	/* the fabric is calloc()ed */
		iwarp_list_init(&fab->trig_ops);
	return &fab->trig_ops;
}

/* Lock held. Behind every op of a lower or equal threshold: equal
 * thresholds keep the order of submission (fi_trigger(3)). */
static void iwarp_trig_insert(struct iwarp_fabric *fab,
			      struct iwarp_trig_op *op)
{
	struct iwarp_list *h = iwarp_trig_list(fab), *e = h->prev;
	struct iwarp_trig_op *o;

	for (; e != h; e = e->prev) {
		o = iwarp_container_of(e, struct iwarp_trig_op, link);
		if (o->threshold < op->threshold ||
		    (o->threshold == op->threshold && o->seq < op->seq))
			break;
	}
	iwarp_list_add_head(e, &op->link);
	atomic_fetch_add(&fab->trig_count, 1);
}

static void iwarp_trig_unlink(struct iwarp_fabric *fab,
			      struct iwarp_trig_op *op)
{
	iwarp_list_del(&op->link);
	atomic_fetch_sub(&fab->trig_count, 1);
}

/* Lock held. Drops every op for which match() says so. */
static void iwarp_trig_purge(struct iwarp_fabric *fab, const void *what,
			     bool (*match)(const struct iwarp_trig_op *,
					   const void *))
{
	struct iwarp_list *h = iwarp_trig_list(fab), *e, *next;
	struct iwarp_trig_op *op;

	for (e = h->next; e != h; e = next) {
		next = e->next;
		op = iwarp_container_of(e, struct iwarp_trig_op, link);
		if (!match(op, what))
			continue;
		FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
			"triggered operation dropped: threshold %llu unmet\n",
			(unsigned long long)op->threshold);
		iwarp_trig_unlink(fab, op);
		free(op);
	}
}

static bool iwarp_trig_of_cntr(const struct iwarp_trig_op *op,
			       const void *c)
{
	return op->cntr == c;
}

static bool iwarp_trig_of_ep(const struct iwarp_trig_op *op, const void *t)
{
	return op->t == t;
}

void iwarp_trig_cntr_gone(struct iwarp_cntr *c)
{
	iwarp_trig_purge(c->fab, c, iwarp_trig_of_cntr);
}

/* ---- issuing */

static ssize_t iwarp_trig_send(struct iwarp_trig_ep *t,
			       const struct iwarp_trig_args *a, uint64_t fl)
{
	struct fi_msg m = { a->iov, a->desc, a->iov_count, a->addr,
			    a->context, a->data };
	void *b = a->iov_count ? a->iov[0].iov_base : NULL;
	size_t len = a->iov_count ? a->iov[0].iov_len : 0;

	if (!a->inject)
		return t->o_msg->sendmsg(t->ep, &m, fl);
	if (fl & FI_REMOTE_CQ_DATA)
		return t->o_msg->injectdata(t->ep, b, len, a->data, a->addr);
	return t->o_msg->inject(t->ep, b, len, a->addr);
}

static ssize_t iwarp_trig_tsend(struct iwarp_trig_ep *t,
				const struct iwarp_trig_args *a, uint64_t fl)
{
	struct fi_msg_tagged m = { a->iov, a->desc, a->iov_count, a->addr,
				   a->tag, a->ignore, a->context, a->data };
	void *b = a->iov_count ? a->iov[0].iov_base : NULL;
	size_t len = a->iov_count ? a->iov[0].iov_len : 0;

	if (!a->inject)
		return t->o_tagged->sendmsg(t->ep, &m, fl);
	if (fl & FI_REMOTE_CQ_DATA)
		return t->o_tagged->injectdata(t->ep, b, len, a->data,
					       a->addr, a->tag);
	return t->o_tagged->inject(t->ep, b, len, a->addr, a->tag);
}

static ssize_t iwarp_trig_rma(struct iwarp_trig_ep *t,
			      const struct iwarp_trig_args *a, uint64_t fl)
{
	struct fi_msg_rma m = { a->iov, a->desc, a->iov_count, a->addr,
				a->rma, a->rma_count, a->context, a->data };
	void *b = a->iov_count ? a->iov[0].iov_base : NULL;
	size_t len = a->iov_count ? a->iov[0].iov_len : 0;

	if (a->kind == IWARP_TRIG_READ)
		return t->o_rma->readmsg(t->ep, &m, fl);
	if (!a->inject || !a->rma_count)
		return t->o_rma->writemsg(t->ep, &m, fl);
	if (fl & FI_REMOTE_CQ_DATA)
		return t->o_rma->injectdata(t->ep, b, len, a->data, a->addr,
					    a->rma[0].addr, a->rma[0].key);
	return t->o_rma->inject(t->ep, b, len, a->addr, a->rma[0].addr,
				a->rma[0].key);
}

/* fi_ioc and fi_rma_ioc carry what iovec and fi_rma_iov do. */
static ssize_t iwarp_trig_atomic(struct iwarp_trig_ep *t,
				 const struct iwarp_trig_args *a, uint64_t fl)
{
	struct fi_ioc ioc[IWARP_IOV_MAX];
	struct fi_rma_ioc rioc[IWARP_IOV_MAX];
	struct fi_msg_atomic m = { ioc, a->desc, a->iov_count, a->addr, rioc,
				   a->rma_count, a->dt, a->aop, a->context,
				   a->data };
	size_t i;

	for (i = 0; i < a->iov_count; i++)
		ioc[i] = (struct fi_ioc){ a->iov[i].iov_base,
					  a->iov[i].iov_len };
	for (i = 0; i < a->rma_count; i++)
		rioc[i] = (struct fi_rma_ioc){ a->rma[i].addr, a->rma[i].len,
					       a->rma[i].key };
	return t->o_atomic->writemsg(t->ep, &m, fl);
}

static ssize_t iwarp_trig_issue(struct iwarp_trig_ep *t,
				const struct iwarp_trig_args *a, uint64_t fl)
{
	struct fi_msg m = { a->iov, a->desc, a->iov_count, a->addr,
			    a->context, a->data };
	struct fi_msg_tagged tm = { a->iov, a->desc, a->iov_count, a->addr,
				    a->tag, a->ignore, a->context, a->data };

	switch (a->kind) {
	case IWARP_TRIG_SEND:
		return iwarp_trig_send(t, a, fl);
	case IWARP_TRIG_RECV:
		return t->o_msg->recvmsg(t->ep, &m, fl);
	case IWARP_TRIG_TSEND:
		return iwarp_trig_tsend(t, a, fl);
	case IWARP_TRIG_TRECV:
		return t->o_tagged->recvmsg(t->ep, &tm, fl);
	case IWARP_TRIG_WRITE:
	case IWARP_TRIG_READ:
		return iwarp_trig_rma(t, a, fl);
	default:
		return iwarp_trig_atomic(t, a, fl);
	}
}

/* Lock held. Moves the ops that are due, in queue order, to ready. */
static void iwarp_trig_take(struct iwarp_fabric *fab, struct iwarp_list *ready)
{
	struct iwarp_list *h = iwarp_trig_list(fab), *e, *next;
	struct iwarp_trig_op *op;

	for (e = h->next; e != h; e = next) {
		next = e->next;
		op = iwarp_container_of(e, struct iwarp_trig_op, link);
		if (op->cntr->value < op->threshold)
			continue;
		iwarp_trig_unlink(fab, op);
		iwarp_list_add_tail(ready, &op->link);
	}
}

/* What could not be issued yet (-FI_EAGAIN) goes back, still first. */
static void iwarp_trig_requeue(struct iwarp_fabric *fab,
			       struct iwarp_list *ready)
{
	struct iwarp_trig_op *op;

	iwarp_lock(fab);
	while (!iwarp_list_empty(ready)) {
		op = iwarp_container_of(ready->next, struct iwarp_trig_op,
					link);
		iwarp_list_del(&op->link);
		iwarp_trig_insert(fab, op);
	}
	iwarp_unlock(fab);
}

/* Issuing may lead back here (an endpoint that reads a CQ to make room):
 * the outer call keeps the order. */
static __thread bool iwarp_trig_running;

void iwarp_trig_run(struct iwarp_fabric *fab)
{
	struct iwarp_list ready;
	struct iwarp_trig_op *op;
	ssize_t ret;

	if (!iwarp_trig_due(fab) || iwarp_trig_running)
		return;
	iwarp_trig_running = true;
	iwarp_list_init(&ready);
	iwarp_lock(fab);
	iwarp_trig_take(fab, &ready);
	iwarp_unlock(fab);
	while (!iwarp_list_empty(&ready)) {
		op = iwarp_container_of(ready.next, struct iwarp_trig_op, link);
		ret = iwarp_trig_issue(op->t, &op->a, op->flags & ~FI_TRIGGER);
		if (ret == -FI_EAGAIN)
			break;
		if (ret)
			FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
				"triggered operation failed: %s\n",
				fi_strerror((int)-ret));
		iwarp_list_del(&op->link);
		free(op);
	}
	if (!iwarp_list_empty(&ready))
		iwarp_trig_requeue(fab, &ready);
	iwarp_trig_running = false;
}

/* ---- posting */

/* The counter and threshold of a triggered context; -FI_EINVAL if it
 * names none of ours, -FI_ENOSYS for other trigger types (XPU). */
static int iwarp_trig_cond(struct iwarp_trig_ep *t, void *context,
			   struct iwarp_trig_op *op)
{
	struct fi_triggered_context *tc = context;
	struct fid_cntr *cf;

	if (!tc)
		return -FI_EINVAL;
	if (tc->event_type != FI_TRIGGER_THRESHOLD)
		return -FI_ENOSYS;
	cf = tc->trigger.threshold.cntr;
	if (!cf || !iwarp_cntr_is_ours(&cf->fid) ||
	    iwarp_cntr_of(&cf->fid)->fab != t->fab)
		return -FI_EINVAL;
	op->cntr = iwarp_cntr_of(&cf->fid);
	op->threshold = tc->trigger.threshold.threshold;
	return 0;
}

/* FI_INJECT: the buffer is the caller's again once we return. */
static int iwarp_trig_copy_inject(struct iwarp_trig_op *op)
{
	size_t i, len = 0;

	for (i = 0; i < op->a.iov_count; i++) {
		if (op->iov[i].iov_len > IWARP_INJECT_MAX - len)
			return -FI_EINVAL;
		memcpy(op->inject + len, op->iov[i].iov_base,
		       op->iov[i].iov_len);
		len += op->iov[i].iov_len;
	}
	op->a.iov_count = 1;
	op->iov[0] = (struct iovec){ op->inject, len };
	op->desc[0] = NULL;
	op->a.inject = true;
	return 0;
}

static int iwarp_trig_copy(struct iwarp_trig_op *op,
			   const struct iwarp_trig_args *a, uint64_t flags)
{
	if (a->iov_count > IWARP_IOV_MAX || a->rma_count > IWARP_IOV_MAX ||
	    (a->iov_count && !a->iov) || (a->rma_count && !a->rma))
		return -FI_EINVAL;
	op->a = *a;
	op->flags = flags;
	if (a->iov_count)
		memcpy(op->iov, a->iov, a->iov_count * sizeof(*a->iov));
	if (a->desc && a->iov_count)
		memcpy(op->desc, a->desc, a->iov_count * sizeof(*a->desc));
	if (a->rma_count)
		memcpy(op->rma, a->rma, a->rma_count * sizeof(*a->rma));
	op->a.iov = op->iov;
	op->a.desc = op->desc;
	op->a.rma = op->rma;
	if ((flags & FI_INJECT) || a->inject)
		return iwarp_trig_copy_inject(op);
	return 0;
}

static ssize_t iwarp_trig_post(struct iwarp_trig_ep *t,
			       const struct iwarp_trig_args *a, uint64_t flags)
{
	struct iwarp_trig_op *op;
	int ret;

	op = calloc(1, sizeof(*op));
	if (!op)
		return -FI_ENOMEM;
	ret = iwarp_trig_cond(t, a->context, op);
	if (!ret)
		ret = iwarp_trig_copy(op, a, flags);
	if (ret) {
		free(op);
		return ret;
	}
	op->t = t;
	iwarp_lock(t->fab);
	op->seq = t->fab->trig_seq++;
	iwarp_trig_insert(t->fab, op);
	iwarp_unlock(t->fab);
	/* the threshold may be met already */
	iwarp_trig_run(t->fab);
	return 0;
}

/* Every call with its flags: queued with FI_TRIGGER, else issued. */
static ssize_t iwarp_trig_call(struct iwarp_trig_ep *t,
			       const struct iwarp_trig_args *a, uint64_t flags)
{
	if (flags & FI_TRIGGER)
		return iwarp_trig_post(t, a, flags);
	return iwarp_trig_issue(t, a, flags);
}

/* ---- message-form calls into arguments */

static void iwarp_trig_from_msg(struct iwarp_trig_args *a,
				enum iwarp_trig_kind kind,
				const struct fi_msg *m)
{
	*a = (struct iwarp_trig_args){
		.kind = kind, .iov = m->msg_iov, .desc = m->desc,
		.iov_count = m->iov_count, .addr = m->addr,
		.context = m->context, .data = m->data,
	};
}

static void iwarp_trig_from_tmsg(struct iwarp_trig_args *a,
				 enum iwarp_trig_kind kind,
				 const struct fi_msg_tagged *m)
{
	*a = (struct iwarp_trig_args){
		.kind = kind, .iov = m->msg_iov, .desc = m->desc,
		.iov_count = m->iov_count, .addr = m->addr,
		.context = m->context, .data = m->data, .tag = m->tag,
		.ignore = m->ignore,
	};
}

static void iwarp_trig_from_rmsg(struct iwarp_trig_args *a,
				 enum iwarp_trig_kind kind,
				 const struct fi_msg_rma *m)
{
	*a = (struct iwarp_trig_args){
		.kind = kind, .iov = m->msg_iov, .desc = m->desc,
		.iov_count = m->iov_count, .addr = m->addr,
		.rma = m->rma_iov, .rma_count = m->rma_iov_count,
		.context = m->context, .data = m->data,
	};
}

/* ---- the endpoint's own message-form calls */

static struct iwarp_trig_ep *iwarp_trig_msg_of(struct fid_ep *ep)
{
	return iwarp_container_of(ep->msg, struct iwarp_trig_ep, msg);
}

static struct iwarp_trig_ep *iwarp_trig_tagged_of(struct fid_ep *ep)
{
	return iwarp_container_of(ep->tagged, struct iwarp_trig_ep, tagged);
}

static struct iwarp_trig_ep *iwarp_trig_rma_of(struct fid_ep *ep)
{
	return iwarp_container_of(ep->rma, struct iwarp_trig_ep, rma);
}

static ssize_t iwarp_trig_ep_sendmsg(struct fid_ep *ep,
				     const struct fi_msg *msg, uint64_t flags)
{
	struct iwarp_trig_ep *t = iwarp_trig_msg_of(ep);
	struct iwarp_trig_args a;

	if (!(flags & FI_TRIGGER) || !msg)
		return t->o_msg->sendmsg(ep, msg, flags);
	iwarp_trig_from_msg(&a, IWARP_TRIG_SEND, msg);
	return iwarp_trig_post(t, &a, flags);
}

static ssize_t iwarp_trig_ep_recvmsg(struct fid_ep *ep,
				     const struct fi_msg *msg, uint64_t flags)
{
	struct iwarp_trig_ep *t = iwarp_trig_msg_of(ep);
	struct iwarp_trig_args a;

	if (!(flags & FI_TRIGGER) || !msg)
		return t->o_msg->recvmsg(ep, msg, flags);
	iwarp_trig_from_msg(&a, IWARP_TRIG_RECV, msg);
	return iwarp_trig_post(t, &a, flags);
}

static ssize_t iwarp_trig_ep_tsendmsg(struct fid_ep *ep,
				      const struct fi_msg_tagged *msg,
				      uint64_t flags)
{
	struct iwarp_trig_ep *t = iwarp_trig_tagged_of(ep);
	struct iwarp_trig_args a;

	if (!(flags & FI_TRIGGER) || !msg)
		return t->o_tagged->sendmsg(ep, msg, flags);
	iwarp_trig_from_tmsg(&a, IWARP_TRIG_TSEND, msg);
	return iwarp_trig_post(t, &a, flags);
}

static ssize_t iwarp_trig_ep_trecvmsg(struct fid_ep *ep,
				      const struct fi_msg_tagged *msg,
				      uint64_t flags)
{
	struct iwarp_trig_ep *t = iwarp_trig_tagged_of(ep);
	struct iwarp_trig_args a;

	if (!(flags & FI_TRIGGER) || !msg)
		return t->o_tagged->recvmsg(ep, msg, flags);
	iwarp_trig_from_tmsg(&a, IWARP_TRIG_TRECV, msg);
	return iwarp_trig_post(t, &a, flags);
}

static ssize_t iwarp_trig_ep_writemsg(struct fid_ep *ep,
				      const struct fi_msg_rma *msg,
				      uint64_t flags)
{
	struct iwarp_trig_ep *t = iwarp_trig_rma_of(ep);
	struct iwarp_trig_args a;

	if (!(flags & FI_TRIGGER) || !msg)
		return t->o_rma->writemsg(ep, msg, flags);
	iwarp_trig_from_rmsg(&a, IWARP_TRIG_WRITE, msg);
	return iwarp_trig_post(t, &a, flags);
}

static ssize_t iwarp_trig_ep_readmsg(struct fid_ep *ep,
				     const struct fi_msg_rma *msg,
				     uint64_t flags)
{
	struct iwarp_trig_ep *t = iwarp_trig_rma_of(ep);
	struct iwarp_trig_args a;

	if (!(flags & FI_TRIGGER) || !msg)
		return t->o_rma->readmsg(ep, msg, flags);
	iwarp_trig_from_rmsg(&a, IWARP_TRIG_READ, msg);
	return iwarp_trig_post(t, &a, flags);
}

/* Atomics: fi_ioc and fi_rma_ioc become iovec and fi_rma_iov. */
static ssize_t iwarp_trig_atomic_post(struct iwarp_trig_ep *t,
				      const struct fi_msg_atomic *m,
				      uint64_t flags)
{
	struct iovec iov[IWARP_IOV_MAX];
	struct fi_rma_iov rma[IWARP_IOV_MAX];
	struct iwarp_trig_args a = {
		.kind = IWARP_TRIG_ATOMIC, .iov = iov, .desc = m->desc,
		.iov_count = m->iov_count, .addr = m->addr, .rma = rma,
		.rma_count = m->rma_iov_count, .context = m->context,
		.data = m->data, .dt = m->datatype, .aop = m->op,
	};
	size_t i;

	if (m->iov_count > IWARP_IOV_MAX || m->rma_iov_count > IWARP_IOV_MAX)
		return -FI_EINVAL;
	for (i = 0; i < m->iov_count; i++)
		iov[i] = (struct iovec){ m->msg_iov[i].addr,
					 m->msg_iov[i].count };
	for (i = 0; i < m->rma_iov_count; i++)
		rma[i] = (struct fi_rma_iov){ m->rma_iov[i].addr,
					      m->rma_iov[i].count,
					      m->rma_iov[i].key };
	return iwarp_trig_post(t, &a, flags);
}

static ssize_t iwarp_trig_ep_atomicmsg(struct fid_ep *ep,
				       const struct fi_msg_atomic *msg,
				       uint64_t flags)
{
	struct iwarp_trig_ep *t = iwarp_container_of(ep->atomic,
						     struct iwarp_trig_ep,
						     atomic);

	if (!(flags & FI_TRIGGER) || !msg)
		return t->o_atomic->writemsg(ep, msg, flags);
	return iwarp_trig_atomic_post(t, msg, flags);
}

/* Fetching and comparing atomics are not triggerable here. */
static ssize_t iwarp_trig_ep_fetchmsg(struct fid_ep *ep,
				      const struct fi_msg_atomic *msg,
				      struct fi_ioc *resultv,
				      void **result_desc, size_t result_count,
				      uint64_t flags)
{
	struct iwarp_trig_ep *t = iwarp_container_of(ep->atomic,
						     struct iwarp_trig_ep,
						     atomic);

	if (flags & FI_TRIGGER)
		return -FI_ENOSYS;
	return t->o_atomic->readwritemsg(ep, msg, resultv, result_desc,
					 result_count, flags);
}

static ssize_t iwarp_trig_ep_cmpmsg(struct fid_ep *ep,
				    const struct fi_msg_atomic *msg,
				    const struct fi_ioc *comparev,
				    void **compare_desc, size_t compare_count,
				    struct fi_ioc *resultv, void **result_desc,
				    size_t result_count, uint64_t flags)
{
	struct iwarp_trig_ep *t = iwarp_container_of(ep->atomic,
						     struct iwarp_trig_ep,
						     atomic);

	if (flags & FI_TRIGGER)
		return -FI_ENOSYS;
	return t->o_atomic->compwritemsg(ep, msg, comparev, compare_desc,
					 compare_count, resultv, result_desc,
					 result_count, flags);
}

/* ---- aliases (fi_ep_alias): the endpoint with other op flags */

struct iwarp_trig_alias {
	struct fid_ep ep_fid;
	struct iwarp_trig_ep *t;
	uint64_t flags;			/* what every non-msg call uses */
};

static struct iwarp_trig_alias *iwarp_alias_of(struct fid_ep *ep)
{
	return iwarp_container_of(ep, struct iwarp_trig_alias, ep_fid);
}

/* A one-buffer call through the alias, with the alias's flags. */
static ssize_t iwarp_alias_one(struct fid_ep *ep, struct iwarp_trig_args *a,
			       const void *buf, size_t len, void **desc,
			       uint64_t more)
{
	struct iwarp_trig_alias *al = iwarp_alias_of(ep);
	struct iovec iov = { (void *)buf, len };

	a->iov = &iov;
	a->desc = desc;
	a->iov_count = 1;
	return iwarp_trig_call(al->t, a, al->flags | more);
}

static ssize_t iwarp_alias_send(struct fid_ep *ep, const void *buf,
				size_t len, void *desc, fi_addr_t dest,
				void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_SEND, .addr = dest,
				     .context = context };

	return iwarp_alias_one(ep, &a, buf, len, &desc, 0);
}

static ssize_t iwarp_alias_sendv(struct fid_ep *ep, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t dest,
				 void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_SEND, .iov = iov,
				     .desc = desc, .iov_count = count,
				     .addr = dest, .context = context };

	return iwarp_trig_call(iwarp_alias_of(ep)->t, &a,
			       iwarp_alias_of(ep)->flags);
}

static ssize_t iwarp_alias_sendmsg(struct fid_ep *ep, const struct fi_msg *msg,
				   uint64_t flags)
{
	struct iwarp_trig_args a;

	if (!msg)
		return -FI_EINVAL;
	iwarp_trig_from_msg(&a, IWARP_TRIG_SEND, msg);
	return iwarp_trig_call(iwarp_alias_of(ep)->t, &a, flags);
}

static ssize_t iwarp_alias_inject(struct fid_ep *ep, const void *buf,
				  size_t len, fi_addr_t dest)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_SEND, .addr = dest,
				     .inject = true };

	return iwarp_alias_one(ep, &a, buf, len, NULL, 0);
}

static ssize_t iwarp_alias_senddata(struct fid_ep *ep, const void *buf,
				    size_t len, void *desc, uint64_t data,
				    fi_addr_t dest, void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_SEND, .addr = dest,
				     .context = context, .data = data };

	return iwarp_alias_one(ep, &a, buf, len, &desc, FI_REMOTE_CQ_DATA);
}

static ssize_t iwarp_alias_injectdata(struct fid_ep *ep, const void *buf,
				      size_t len, uint64_t data,
				      fi_addr_t dest)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_SEND, .addr = dest,
				     .data = data, .inject = true };

	return iwarp_alias_one(ep, &a, buf, len, NULL, FI_REMOTE_CQ_DATA);
}

static ssize_t iwarp_alias_recv(struct fid_ep *ep, void *buf, size_t len,
				void *desc, fi_addr_t src, void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_RECV, .addr = src,
				     .context = context };

	return iwarp_alias_one(ep, &a, buf, len, &desc, 0);
}

static ssize_t iwarp_alias_recvv(struct fid_ep *ep, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t src,
				 void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_RECV, .iov = iov,
				     .desc = desc, .iov_count = count,
				     .addr = src, .context = context };

	return iwarp_trig_call(iwarp_alias_of(ep)->t, &a,
			       iwarp_alias_of(ep)->flags);
}

static ssize_t iwarp_alias_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
				   uint64_t flags)
{
	struct iwarp_trig_args a;

	if (!msg)
		return -FI_EINVAL;
	iwarp_trig_from_msg(&a, IWARP_TRIG_RECV, msg);
	return iwarp_trig_call(iwarp_alias_of(ep)->t, &a, flags);
}

static struct fi_ops_msg iwarp_alias_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = iwarp_alias_recv,
	.recvv = iwarp_alias_recvv,
	.recvmsg = iwarp_alias_recvmsg,
	.send = iwarp_alias_send,
	.sendv = iwarp_alias_sendv,
	.sendmsg = iwarp_alias_sendmsg,
	.inject = iwarp_alias_inject,
	.senddata = iwarp_alias_senddata,
	.injectdata = iwarp_alias_injectdata,
};

static ssize_t iwarp_alias_tsend(struct fid_ep *ep, const void *buf,
				 size_t len, void *desc, fi_addr_t dest,
				 uint64_t tag, void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_TSEND, .addr = dest,
				     .context = context, .tag = tag };

	return iwarp_alias_one(ep, &a, buf, len, &desc, 0);
}

static ssize_t iwarp_alias_tsendv(struct fid_ep *ep, const struct iovec *iov,
				  void **desc, size_t count, fi_addr_t dest,
				  uint64_t tag, void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_TSEND, .iov = iov,
				     .desc = desc, .iov_count = count,
				     .addr = dest, .context = context,
				     .tag = tag };

	return iwarp_trig_call(iwarp_alias_of(ep)->t, &a,
			       iwarp_alias_of(ep)->flags);
}

static ssize_t iwarp_alias_tsendmsg(struct fid_ep *ep,
				    const struct fi_msg_tagged *msg,
				    uint64_t flags)
{
	struct iwarp_trig_args a;

	if (!msg)
		return -FI_EINVAL;
	iwarp_trig_from_tmsg(&a, IWARP_TRIG_TSEND, msg);
	return iwarp_trig_call(iwarp_alias_of(ep)->t, &a, flags);
}

static ssize_t iwarp_alias_tinject(struct fid_ep *ep, const void *buf,
				   size_t len, fi_addr_t dest, uint64_t tag)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_TSEND, .addr = dest,
				     .tag = tag, .inject = true };

	return iwarp_alias_one(ep, &a, buf, len, NULL, 0);
}

static ssize_t iwarp_alias_tsenddata(struct fid_ep *ep, const void *buf,
				     size_t len, void *desc, uint64_t data,
				     fi_addr_t dest, uint64_t tag,
				     void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_TSEND, .addr = dest,
				     .context = context, .data = data,
				     .tag = tag };

	return iwarp_alias_one(ep, &a, buf, len, &desc, FI_REMOTE_CQ_DATA);
}

static ssize_t iwarp_alias_tinjectdata(struct fid_ep *ep, const void *buf,
				       size_t len, uint64_t data,
				       fi_addr_t dest, uint64_t tag)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_TSEND, .addr = dest,
				     .data = data, .tag = tag,
				     .inject = true };

	return iwarp_alias_one(ep, &a, buf, len, NULL, FI_REMOTE_CQ_DATA);
}

static ssize_t iwarp_alias_trecv(struct fid_ep *ep, void *buf, size_t len,
				 void *desc, fi_addr_t src, uint64_t tag,
				 uint64_t ignore, void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_TRECV, .addr = src,
				     .context = context, .tag = tag,
				     .ignore = ignore };

	return iwarp_alias_one(ep, &a, buf, len, &desc, 0);
}

static ssize_t iwarp_alias_trecvv(struct fid_ep *ep, const struct iovec *iov,
				  void **desc, size_t count, fi_addr_t src,
				  uint64_t tag, uint64_t ignore, void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_TRECV, .iov = iov,
				     .desc = desc, .iov_count = count,
				     .addr = src, .context = context,
				     .tag = tag, .ignore = ignore };

	return iwarp_trig_call(iwarp_alias_of(ep)->t, &a,
			       iwarp_alias_of(ep)->flags);
}

static ssize_t iwarp_alias_trecvmsg(struct fid_ep *ep,
				    const struct fi_msg_tagged *msg,
				    uint64_t flags)
{
	struct iwarp_trig_args a;

	if (!msg)
		return -FI_EINVAL;
	iwarp_trig_from_tmsg(&a, IWARP_TRIG_TRECV, msg);
	return iwarp_trig_call(iwarp_alias_of(ep)->t, &a, flags);
}

static struct fi_ops_tagged iwarp_alias_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = iwarp_alias_trecv,
	.recvv = iwarp_alias_trecvv,
	.recvmsg = iwarp_alias_trecvmsg,
	.send = iwarp_alias_tsend,
	.sendv = iwarp_alias_tsendv,
	.sendmsg = iwarp_alias_tsendmsg,
	.inject = iwarp_alias_tinject,
	.senddata = iwarp_alias_tsenddata,
	.injectdata = iwarp_alias_tinjectdata,
};

/* One local buffer and one remote, as fi_read/fi_write name them. */
static ssize_t iwarp_alias_rma_one(struct fid_ep *ep,
				   struct iwarp_trig_args *a, const void *buf,
				   size_t len, void **desc, uint64_t raddr,
				   uint64_t key, uint64_t more)
{
	struct fi_rma_iov rma = { raddr, len, key };

	a->rma = &rma;
	a->rma_count = 1;
	return iwarp_alias_one(ep, a, buf, len, desc, more);
}

static ssize_t iwarp_alias_read(struct fid_ep *ep, void *buf, size_t len,
				void *desc, fi_addr_t src, uint64_t addr,
				uint64_t key, void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_READ, .addr = src,
				     .context = context };

	return iwarp_alias_rma_one(ep, &a, buf, len, &desc, addr, key, 0);
}

/* The remote length of a vector call is the sum of the local ones. */
static ssize_t iwarp_alias_rmav(struct fid_ep *ep, enum iwarp_trig_kind kind,
				const struct iovec *iov, void **desc,
				size_t count, fi_addr_t peer, uint64_t addr,
				uint64_t key, void *context)
{
	struct fi_rma_iov rma = { addr, 0, key };
	struct iwarp_trig_args a = { .kind = kind, .iov = iov, .desc = desc,
				     .iov_count = count, .addr = peer,
				     .rma = &rma, .rma_count = 1,
				     .context = context };
	size_t i;

	for (i = 0; iov && i < count; i++)
		rma.len += iov[i].iov_len;
	return iwarp_trig_call(iwarp_alias_of(ep)->t, &a,
			       iwarp_alias_of(ep)->flags);
}

static ssize_t iwarp_alias_readv(struct fid_ep *ep, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t src,
				 uint64_t addr, uint64_t key, void *context)
{
	return iwarp_alias_rmav(ep, IWARP_TRIG_READ, iov, desc, count, src,
				addr, key, context);
}

static ssize_t iwarp_alias_readmsg(struct fid_ep *ep,
				   const struct fi_msg_rma *msg,
				   uint64_t flags)
{
	struct iwarp_trig_args a;

	if (!msg)
		return -FI_EINVAL;
	iwarp_trig_from_rmsg(&a, IWARP_TRIG_READ, msg);
	return iwarp_trig_call(iwarp_alias_of(ep)->t, &a, flags);
}

static ssize_t iwarp_alias_write(struct fid_ep *ep, const void *buf,
				 size_t len, void *desc, fi_addr_t dest,
				 uint64_t addr, uint64_t key, void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_WRITE, .addr = dest,
				     .context = context };

	return iwarp_alias_rma_one(ep, &a, buf, len, &desc, addr, key, 0);
}

static ssize_t iwarp_alias_writev(struct fid_ep *ep, const struct iovec *iov,
				  void **desc, size_t count, fi_addr_t dest,
				  uint64_t addr, uint64_t key, void *context)
{
	return iwarp_alias_rmav(ep, IWARP_TRIG_WRITE, iov, desc, count, dest,
				addr, key, context);
}

static ssize_t iwarp_alias_writemsg(struct fid_ep *ep,
				    const struct fi_msg_rma *msg,
				    uint64_t flags)
{
	struct iwarp_trig_args a;

	if (!msg)
		return -FI_EINVAL;
	iwarp_trig_from_rmsg(&a, IWARP_TRIG_WRITE, msg);
	return iwarp_trig_call(iwarp_alias_of(ep)->t, &a, flags);
}

static ssize_t iwarp_alias_rinject(struct fid_ep *ep, const void *buf,
				   size_t len, fi_addr_t dest, uint64_t addr,
				   uint64_t key)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_WRITE, .addr = dest,
				     .inject = true };

	return iwarp_alias_rma_one(ep, &a, buf, len, NULL, addr, key, 0);
}

static ssize_t iwarp_alias_writedata(struct fid_ep *ep, const void *buf,
				     size_t len, void *desc, uint64_t data,
				     fi_addr_t dest, uint64_t addr,
				     uint64_t key, void *context)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_WRITE, .addr = dest,
				     .context = context, .data = data };

	return iwarp_alias_rma_one(ep, &a, buf, len, &desc, addr, key,
				   FI_REMOTE_CQ_DATA);
}

static ssize_t iwarp_alias_rinjectdata(struct fid_ep *ep, const void *buf,
				       size_t len, uint64_t data,
				       fi_addr_t dest, uint64_t addr,
				       uint64_t key)
{
	struct iwarp_trig_args a = { .kind = IWARP_TRIG_WRITE, .addr = dest,
				     .data = data, .inject = true };

	return iwarp_alias_rma_one(ep, &a, buf, len, NULL, addr, key,
				   FI_REMOTE_CQ_DATA);
}

static struct fi_ops_rma iwarp_alias_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = iwarp_alias_read,
	.readv = iwarp_alias_readv,
	.readmsg = iwarp_alias_readmsg,
	.write = iwarp_alias_write,
	.writev = iwarp_alias_writev,
	.writemsg = iwarp_alias_writemsg,
	.inject = iwarp_alias_rinject,
	.writedata = iwarp_alias_writedata,
	.injectdata = iwarp_alias_rinjectdata,
};

/* Atomics through an alias: only the message form, triggered or not. */
static ssize_t iwarp_alias_atomicmsg(struct fid_ep *ep,
				     const struct fi_msg_atomic *msg,
				     uint64_t flags)
{
	struct iwarp_trig_ep *t = iwarp_alias_of(ep)->t;

	if (!msg)
		return -FI_EINVAL;
	if (flags & FI_TRIGGER)
		return iwarp_trig_atomic_post(t, msg, flags);
	return t->o_atomic->writemsg(t->ep, msg, flags);
}

static struct fi_ops_atomic iwarp_alias_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.writemsg = iwarp_alias_atomicmsg,
};

/* ---- alias object */

static struct iwarp_trig_alias *iwarp_alias_fid(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_trig_alias, ep_fid.fid);
}

static int iwarp_alias_close(struct fid *fid)
{
	struct iwarp_trig_alias *al = iwarp_alias_fid(fid);

	iwarp_lock(al->t->fab);
	al->t->aliases--;
	iwarp_unlock(al->t->fab);
	free(al);
	return 0;
}

static int iwarp_trig_alias(struct iwarp_trig_ep *t, struct fi_alias *arg);

/* The endpoint's controls; FI_ALIAS makes a sibling. */
static int iwarp_alias_control(struct fid *fid, int command, void *arg)
{
	struct iwarp_trig_alias *al = iwarp_alias_fid(fid);

	if (command == FI_ALIAS)
		return iwarp_trig_alias(al->t, arg);
	return al->t->o_fi->control(&al->t->ep->fid, command, arg);
}

static struct fi_ops iwarp_alias_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_alias_close,
	.bind = iwarp_no_bind,
	.control = iwarp_alias_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

static ssize_t iwarp_alias_cancel(fid_t fid, void *context)
{
	struct fid_ep *ep = iwarp_alias_fid(fid)->t->ep;

	return ep->ops->cancel(&ep->fid, context);
}

static int iwarp_alias_getopt(fid_t fid, int level, int optname,
			      void *optval, size_t *optlen)
{
	struct fid_ep *ep = iwarp_alias_fid(fid)->t->ep;

	return ep->ops->getopt(&ep->fid, level, optname, optval, optlen);
}

static int iwarp_alias_setopt(fid_t fid, int level, int optname,
			      const void *optval, size_t optlen)
{
	return -FI_ENOSYS;	/* options belong to the endpoint itself */
}

static struct fi_ops_ep iwarp_alias_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = iwarp_alias_cancel,
	.getopt = iwarp_alias_getopt,
	.setopt = iwarp_alias_setopt,
};

static int iwarp_alias_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct fid_ep *ep = iwarp_alias_fid(fid)->t->ep;

	return ep->cm->getname(&ep->fid, addr, addrlen);
}

static int iwarp_alias_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cm iwarp_alias_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = iwarp_alias_setname,
	.getname = iwarp_alias_getname,
	.getpeer = iwarp_no_getpeer,
	.connect = iwarp_no_connect,
	.listen = iwarp_no_listen,
	.accept = iwarp_no_accept,
	.reject = iwarp_no_reject,
	.shutdown = iwarp_no_shutdown,
	.join = iwarp_no_join,
};

/* fi_endpoint(3): the alias's flags are its operation flags; the
 * FI_TRANSMIT/FI_RECV selector is not one. */
static int iwarp_trig_alias(struct iwarp_trig_ep *t, struct fi_alias *arg)
{
	struct iwarp_trig_alias *al;

	if (!arg || !arg->fid)
		return -FI_EINVAL;
	al = calloc(1, sizeof(*al));
	if (!al)
		return -FI_ENOMEM;
	al->t = t;
	al->flags = arg->flags & ~(uint64_t)(FI_TRANSMIT | FI_RECV);
	al->ep_fid.fid.fclass = FI_CLASS_EP;
	al->ep_fid.fid.context = t->ep->fid.context;
	al->ep_fid.fid.ops = &iwarp_alias_fi_ops;
	al->ep_fid.ops = &iwarp_alias_ep_ops;
	al->ep_fid.cm = &iwarp_alias_cm_ops;
	al->ep_fid.msg = &iwarp_alias_msg_ops;
	al->ep_fid.tagged = &iwarp_alias_tagged_ops;
	al->ep_fid.rma = &iwarp_alias_rma_ops;
	al->ep_fid.atomic = &iwarp_alias_atomic_ops;
	iwarp_lock(t->fab);
	t->aliases++;
	iwarp_unlock(t->fab);
	*arg->fid = &al->ep_fid.fid;
	return 0;
}

/* ---- wrapping an endpoint */

static struct iwarp_trig_ep *iwarp_trig_fi_of(struct fid *fid)
{
	return iwarp_container_of(fid->ops, struct iwarp_trig_ep, fi);
}

static int iwarp_trig_ep_control(struct fid *fid, int command, void *arg)
{
	struct iwarp_trig_ep *t = iwarp_trig_fi_of(fid);

	if (command == FI_ALIAS)
		return iwarp_trig_alias(t, arg);
	return t->o_fi->control(fid, command, arg);
}

/* Ops still queued for the endpoint go with it. */
static int iwarp_trig_ep_close(struct fid *fid)
{
	struct iwarp_trig_ep *t = iwarp_trig_fi_of(fid);
	int ret;

	if (t->aliases)
		return -FI_EBUSY;
	ret = t->o_fi->close(fid);
	if (ret)
		return ret;
	iwarp_lock(t->fab);
	iwarp_trig_purge(t->fab, t, iwarp_trig_of_ep);
	iwarp_unlock(t->fab);
	free(t);
	return 0;
}

static void iwarp_trig_wrap_data(struct iwarp_trig_ep *t, struct fid_ep *ep)
{
	if (ep->msg) {
		t->o_msg = ep->msg;
		t->msg = *ep->msg;
		t->msg.sendmsg = iwarp_trig_ep_sendmsg;
		t->msg.recvmsg = iwarp_trig_ep_recvmsg;
		ep->msg = &t->msg;
	}
	if (ep->tagged) {
		t->o_tagged = ep->tagged;
		t->tagged = *ep->tagged;
		t->tagged.sendmsg = iwarp_trig_ep_tsendmsg;
		t->tagged.recvmsg = iwarp_trig_ep_trecvmsg;
		ep->tagged = &t->tagged;
	}
	if (ep->rma) {
		t->o_rma = ep->rma;
		t->rma = *ep->rma;
		t->rma.writemsg = iwarp_trig_ep_writemsg;
		t->rma.readmsg = iwarp_trig_ep_readmsg;
		ep->rma = &t->rma;
	}
	if (ep->atomic) {
		t->o_atomic = ep->atomic;
		t->atomic = *ep->atomic;
		t->atomic.writemsg = iwarp_trig_ep_atomicmsg;
		t->atomic.readwritemsg = iwarp_trig_ep_fetchmsg;
		t->atomic.compwritemsg = iwarp_trig_ep_cmpmsg;
		ep->atomic = &t->atomic;
	}
}

/*
 * Lock not held, before the endpoint is handed out. Its ops tables are
 * static and shared by every endpoint of the type, so the endpoint gets
 * copies of its own, through which the wrappers find their state.
 */
int iwarp_trig_wrap(struct fid_ep *ep, struct iwarp_fabric *fab)
{
	struct iwarp_trig_ep *t;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -FI_ENOMEM;
	t->ep = ep;
	t->fab = fab;
	fab->trig_run = iwarp_trig_run;
	fab->trig_cntr_gone = iwarp_trig_cntr_gone;
	t->o_fi = ep->fid.ops;
	t->fi = *ep->fid.ops;
	t->fi.close = iwarp_trig_ep_close;
	t->fi.control = iwarp_trig_ep_control;
	ep->fid.ops = &t->fi;
	iwarp_trig_wrap_data(t, ep);
	return 0;
}
