/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Poll sets and wait sets (fi_poll(3)).
 *
 * A poll set lists CQs and counters of a domain; fi_poll drives progress
 * once and returns the context of each member that has something: a CQ
 * with entries (or errors) to read, a counter that changed since the
 * set last reported it, as libfabric's util pollset does.
 *
 * A wait set is a wait object of its own (an eventfd inside an epoll
 * set, as for a CQ with FI_WAIT_FD) that its member CQs and counters
 * signal and bind their endpoints' sockets to instead of theirs, so one
 * fi_wait or one fd covers them all.
 */
#include "iwarp.h"

#include <stdlib.h>
#include <string.h>

/* A member and what the set last saw of it (counters only). */
struct iwarp_member {
	struct fid *fid;
	uint64_t chk_value, chk_err;
};

struct iwarp_members {
	struct iwarp_member *m;
	int n, cap;
};

/* Lock held. Would a read find something? A counter reports a change
 * once to each set. */
static bool iwarp_member_busy(struct iwarp_member *m)
{
	struct iwarp_cntr *c;
	struct iwarp_cq *cq;
	bool busy;

	if (m->fid->fclass == FI_CLASS_CQ) {
		cq = iwarp_cq_of(m->fid);
		return cq->count || cq->ecount || cq->signaled;
	}
	c = iwarp_cntr_of(m->fid);
	busy = c->value != m->chk_value || c->err != m->chk_err;
	m->chk_value = c->value;
	m->chk_err = c->err;
	return busy;
}

static int iwarp_members_find(const struct iwarp_members *s,
			      const struct fid *fid)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->m[i].fid == fid)
			return i;
	return -1;
}

/* Lock held. Counters start from their value now: changes count. */
static int iwarp_members_add(struct iwarp_members *s, struct fid *fid)
{
	struct iwarp_member *nm;
	int cap;

	if (s->n == s->cap) {
		cap = s->cap ? s->cap * 2 : 4;
		nm = realloc(s->m, sizeof(*nm) * cap);
		if (!nm)
			return -FI_ENOMEM;
		s->m = nm;
		s->cap = cap;
	}
	s->m[s->n] = (struct iwarp_member){ .fid = fid };
	if (fid->fclass == FI_CLASS_CNTR) {
		s->m[s->n].chk_value = iwarp_cntr_of(fid)->value;
		s->m[s->n].chk_err = iwarp_cntr_of(fid)->err;
	}
	s->n++;
	return 0;
}

static void iwarp_members_del(struct iwarp_members *s, int i)
{
	s->m[i] = s->m[--s->n];
}

/* ---- poll sets */

struct iwarp_poll {
	struct fid_poll poll_fid;
	struct iwarp_domain *dom;
	struct iwarp_fabric *fab;
	struct iwarp_members set;
};

static struct iwarp_poll *iwarp_poll_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_poll, poll_fid.fid);
}

/* The member's own count of holders: CQs and counters refuse to close
 * while a poll set lists them. */
static atomic_int *iwarp_poll_ref(struct fid *fid, struct iwarp_domain **dom)
{
	switch (fid->fclass) {
	case FI_CLASS_CQ:
		*dom = iwarp_cq_of(fid)->dom;
		return &iwarp_cq_of(fid)->ref;
	case FI_CLASS_CNTR:
		if (!iwarp_cntr_is_ours(fid))
			return NULL;
		*dom = iwarp_cntr_of(fid)->dom;
		return &iwarp_cntr_of(fid)->ref;
	default:
		return NULL;
	}
}

static int iwarp_poll_add(struct fid_poll *poll_fid, struct fid *fid,
			  uint64_t flags)
{
	struct iwarp_poll *ps = iwarp_poll_of(&poll_fid->fid);
	struct iwarp_domain *dom = NULL;
	atomic_int *ref;
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	ref = fid ? iwarp_poll_ref(fid, &dom) : NULL;
	if (!ref || dom != ps->dom)
		return -FI_EINVAL;
	iwarp_lock(ps->fab);
	if (iwarp_members_find(&ps->set, fid) < 0) {
		ret = iwarp_members_add(&ps->set, fid);
		if (!ret)
			atomic_fetch_add(ref, 1);
	}
	iwarp_unlock(ps->fab);
	return ret;
}

static int iwarp_poll_del(struct fid_poll *poll_fid, struct fid *fid,
			  uint64_t flags)
{
	struct iwarp_poll *ps = iwarp_poll_of(&poll_fid->fid);
	struct iwarp_domain *dom;
	int i;

	if (flags)
		return -FI_EBADFLAGS;
	iwarp_lock(ps->fab);
	i = fid ? iwarp_members_find(&ps->set, fid) : -1;
	if (i >= 0) {
		iwarp_members_del(&ps->set, i);
		atomic_fetch_sub(iwarp_poll_ref(fid, &dom), 1);
	}
	iwarp_unlock(ps->fab);
	return i >= 0 ? 0 : -FI_EINVAL;
}

/* The contexts of up to count members with events; 0 if none. */
static int iwarp_poll_poll(struct fid_poll *poll_fid, void **context,
			   int count)
{
	struct iwarp_poll *ps = iwarp_poll_of(&poll_fid->fid);
	int i, n = 0;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	iwarp_trig_kick(ps->fab);
	iwarp_lock(ps->fab);
	iwarp_progress(ps->fab);
	for (i = 0; i < ps->set.n && n < count; i++)
		if (iwarp_member_busy(&ps->set.m[i]))
			context[n++] = ps->set.m[i].fid->context;
	iwarp_unlock(ps->fab);
	return n;
}

static int iwarp_poll_close(struct fid *fid)
{
	struct iwarp_poll *ps = iwarp_poll_of(fid);
	struct iwarp_domain *dom;

	iwarp_lock(ps->fab);
	while (ps->set.n) {
		atomic_fetch_sub(iwarp_poll_ref(ps->set.m[0].fid, &dom), 1);
		iwarp_members_del(&ps->set, 0);
	}
	iwarp_unlock(ps->fab);
	atomic_fetch_sub(&ps->dom->ref, 1);
	free(ps->set.m);
	free(ps);
	return 0;
}

static struct fi_ops iwarp_poll_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_poll_close,
	.bind = iwarp_no_bind,
	.control = iwarp_no_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

static struct fi_ops_poll iwarp_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = iwarp_poll_poll,
	.poll_add = iwarp_poll_add,
	.poll_del = iwarp_poll_del,
};

int iwarp_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		    struct fid_poll **pollset)
{
	struct iwarp_domain *dom = iwarp_domain_of(&domain->fid);
	struct iwarp_poll *ps;

	if (!pollset || (attr && attr->flags))
		return -FI_EINVAL;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	ps->dom = dom;
	ps->fab = dom->fabric;
	atomic_fetch_add(&dom->ref, 1);
	ps->poll_fid.fid.fclass = FI_CLASS_POLL;
	ps->poll_fid.fid.ops = &iwarp_poll_fi_ops;
	ps->poll_fid.ops = &iwarp_poll_ops;
	*pollset = &ps->poll_fid;
	return 0;
}

/* ---- wait sets */

struct iwarp_waitset {
	struct fid_wait wait_fid;
	struct iwarp_fabric *fab;
	struct iwarp_wait wait;
	struct iwarp_members set;
};

static struct iwarp_waitset *iwarp_waitset_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_waitset, wait_fid.fid);
}

static bool iwarp_waitset_ready(void *arg)
{
	struct iwarp_waitset *ws = arg;
	bool any = false;
	int i;

	/* every counter's checkpoint moves, not just the first busy one */
	for (i = 0; i < ws->set.n; i++)
		any |= iwarp_member_busy(&ws->set.m[i]);
	return any;
}

/* 0 once a member has something, -FI_ETIMEDOUT (fi_poll(3)). */
static int iwarp_waitset_wait(struct fid_wait *wait_fid, int timeout)
{
	struct iwarp_waitset *ws = iwarp_waitset_of(&wait_fid->fid);
	int ret;

	iwarp_trig_kick(ws->fab);
	iwarp_lock(ws->fab);
	ret = iwarp_wait_block(ws->fab, &ws->wait, iwarp_waitset_ready, ws,
			       timeout, false);
	iwarp_unlock(ws->fab);
	return ret == -FI_EAGAIN ? -FI_ETIMEDOUT : ret;
}

static int iwarp_waitset_control(struct fid *fid, int command, void *arg)
{
	struct iwarp_waitset *ws = iwarp_waitset_of(fid);

	return iwarp_wait_control(ws->fab, &ws->wait, command, arg);
}

static int iwarp_waitset_close(struct fid *fid)
{
	struct iwarp_waitset *ws = iwarp_waitset_of(fid);

	if (ws->set.n) {
		FI_WARN(&iwarp_prov, FI_LOG_CORE, "wait set still in use\n");
		return -FI_EBUSY;
	}
	iwarp_wait_fini(&ws->wait);
	free(ws->set.m);
	free(ws);
	return 0;
}

static struct fi_ops iwarp_waitset_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_waitset_close,
	.bind = iwarp_no_bind,
	.control = iwarp_waitset_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

static struct fi_ops_wait iwarp_waitset_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = iwarp_waitset_wait,
};

int iwarp_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		    struct fid_wait **waitset)
{
	struct iwarp_waitset *ws;
	int ret;

	if (!attr || !waitset || attr->flags)
		return -FI_EINVAL;
	if (attr->wait_obj != FI_WAIT_UNSPEC && attr->wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS;
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return -FI_ENOMEM;
	ret = iwarp_wait_init(&ws->wait, FI_WAIT_FD);
	if (ret) {
		free(ws);
		return ret;
	}
	attr->wait_obj = FI_WAIT_FD;
	ws->fab = iwarp_fabric_of(&fabric->fid);
	ws->fab->wait_join = iwarp_wait_join;
	ws->fab->wait_leave = iwarp_wait_leave;
	ws->wait_fid.fid.fclass = FI_CLASS_WAIT;
	ws->wait_fid.fid.ops = &iwarp_waitset_fi_ops;
	ws->wait_fid.ops = &iwarp_waitset_ops;
	*waitset = &ws->wait_fid;
	return 0;
}

int iwarp_wait_join(struct iwarp_wait *w, struct iwarp_fabric *fab,
		    struct fid_wait *set, struct fid *member)
{
	struct iwarp_waitset *ws;
	int ret;

	if (!set || set->fid.fclass != FI_CLASS_WAIT ||
	    set->fid.ops != &iwarp_waitset_fi_ops)
		return -FI_EINVAL;
	ws = iwarp_waitset_of(&set->fid);
	if (ws->fab != fab)
		return -FI_EINVAL;
	memset(w, 0, sizeof(*w));
	w->type = FI_WAIT_SET;
	w->epfd = w->efd = -1;
	w->set = &ws->wait;
	iwarp_lock(fab);
	ret = iwarp_members_add(&ws->set, member);
	iwarp_unlock(fab);
	return ret;
}

void iwarp_wait_leave(struct iwarp_wait *w, struct fid *member)
{
	struct iwarp_waitset *ws;
	int i;

	if (!w->set)
		return;
	ws = iwarp_container_of(w->set, struct iwarp_waitset, wait);
	iwarp_lock(ws->fab);
	i = iwarp_members_find(&ws->set, member);
	if (i >= 0)
		iwarp_members_del(&ws->set, i);
	iwarp_unlock(ws->fab);
	w->set = NULL;
}
