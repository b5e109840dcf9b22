/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion counters (FI_CNTR_EVENTS_COMP): a success and an error
 * count under the fabric lock. Reads drive progress; every change
 * signals the wait object so fi_cntr_wait and FI_GETWAIT users wake.
 */
#include "iwarp.h"

#include <stdlib.h>

void iwarp_cntr_inc(struct iwarp_cntr *c)
{
	c->value++;
	iwarp_wait_signal(&c->wait);
}

void iwarp_cntr_inc_err(struct iwarp_cntr *c)
{
	c->err++;
	iwarp_wait_signal(&c->wait);
}

static uint64_t iwarp_cntr_read(struct fid_cntr *cntr_fid)
{
	struct iwarp_cntr *c = iwarp_cntr_of(&cntr_fid->fid);
	uint64_t v;

	iwarp_trig_kick(c->fab);
	iwarp_lock(c->fab);
	iwarp_progress(c->fab);
	v = c->value;
	iwarp_unlock(c->fab);
	return v;
}

static uint64_t iwarp_cntr_readerr(struct fid_cntr *cntr_fid)
{
	struct iwarp_cntr *c = iwarp_cntr_of(&cntr_fid->fid);
	uint64_t v;

	iwarp_trig_kick(c->fab);
	iwarp_lock(c->fab);
	iwarp_progress(c->fab);
	v = c->err;
	iwarp_unlock(c->fab);
	return v;
}

/* Applies op to the success (err == false) or the error count. */
static int iwarp_cntr_update(struct fid_cntr *cntr_fid, bool err, bool add,
			     uint64_t value)
{
	struct iwarp_cntr *c = iwarp_cntr_of(&cntr_fid->fid);
	uint64_t *v = err ? &c->err : &c->value;

	iwarp_lock(c->fab);
	*v = add ? *v + value : value;
	iwarp_wait_signal(&c->wait);
	iwarp_unlock(c->fab);
	/* a triggered operation may be waiting for this very value */
	iwarp_trig_kick(c->fab);
	return 0;
}

static int iwarp_cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
	return iwarp_cntr_update(cntr_fid, false, true, value);
}

static int iwarp_cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	return iwarp_cntr_update(cntr_fid, false, false, value);
}

static int iwarp_cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
	return iwarp_cntr_update(cntr_fid, true, true, value);
}

static int iwarp_cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
	return iwarp_cntr_update(cntr_fid, true, false, value);
}

struct iwarp_cntr_cond {
	struct iwarp_cntr *c;
	uint64_t threshold, err;
};

static bool iwarp_cntr_ready(void *arg)
{
	struct iwarp_cntr_cond *w = arg;

	return w->c->value >= w->threshold || w->c->err != w->err;
}

/*
 * 0 once the count reaches threshold; -FI_EAVAIL if the error count
 * moved first (as libfabric's util counter); -FI_ETIMEDOUT.
 */
static int iwarp_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
			   int timeout)
{
	struct iwarp_cntr *c = iwarp_cntr_of(&cntr_fid->fid);
	struct iwarp_cntr_cond w = { .c = c, .threshold = threshold };
	int ret;

	iwarp_lock(c->fab);
	w.err = c->err;
	ret = iwarp_wait_block(c->fab, &c->wait, iwarp_cntr_ready, &w,
			       timeout, false);
	if (!ret && c->value < threshold)
		ret = -FI_EAVAIL;
	else if (ret == -FI_EAGAIN)
		ret = -FI_ETIMEDOUT;
	iwarp_unlock(c->fab);
	return ret;
}

static int iwarp_cntr_control(struct fid *fid, int command, void *arg)
{
	struct iwarp_cntr *c = iwarp_cntr_of(fid);

	return iwarp_wait_control(c->fab, &c->wait, command, arg);
}

static int iwarp_cntr_close(struct fid *fid)
{
	struct iwarp_cntr *c = iwarp_cntr_of(fid);

	if (atomic_load(&c->ref)) {
		FI_WARN(&iwarp_prov, FI_LOG_CNTR,
			"counter still has endpoints\n");
		return -FI_EBUSY;
	}
	iwarp_lock(c->fab);
	iwarp_trig_forget(c->fab, c);
	iwarp_unlock(c->fab);
	atomic_fetch_sub(&c->dom->ref, 1);
	iwarp_wait_quit(c->fab, &c->wait, &c->cntr_fid.fid);
	iwarp_wait_fini(&c->wait);
	free(c);
	return 0;
}

static struct fi_ops iwarp_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_cntr_close,
	.bind = iwarp_no_bind,
	.control = iwarp_cntr_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

static struct fi_ops_cntr iwarp_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = iwarp_cntr_read,
	.readerr = iwarp_cntr_readerr,
	.add = iwarp_cntr_add,
	.set = iwarp_cntr_set,
	.wait = iwarp_cntr_wait,
	.adderr = iwarp_cntr_adderr,
	.seterr = iwarp_cntr_seterr,
};

/* fi_cntr_open without attributes: completion events, an fd to wait on */
static const struct fi_cntr_attr iwarp_cntr_def_attr = {
	.events = FI_CNTR_EVENTS_COMP,
	.wait_obj = FI_WAIT_UNSPEC,
};

bool iwarp_cntr_is_ours(const struct fid *fid)
{
	return fid && fid->fclass == FI_CLASS_CNTR &&
	       fid->ops == &iwarp_cntr_fi_ops;
}

int iwarp_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		    struct fid_cntr **cntr_fid, void *context)
{
	const struct fi_cntr_attr *a = attr ? attr : &iwarp_cntr_def_attr;
	struct iwarp_domain *dom = iwarp_domain_of(&domain->fid);
	struct iwarp_cntr *c;
	int ret;

	if (a->events != FI_CNTR_EVENTS_COMP)
		return -FI_ENOSYS;
	if (a->flags)
		return -FI_EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -FI_ENOMEM;
	if (a->wait_obj == FI_WAIT_SET)
		ret = iwarp_wait_enter(&c->wait, dom->fabric, a->wait_set,
				      &c->cntr_fid.fid);
	else
		ret = iwarp_wait_init(&c->wait, a->wait_obj);
	if (ret) {
		free(c);
		return ret;
	}
	c->dom = dom;
	c->fab = dom->fabric;
	atomic_init(&c->ref, 0);
	atomic_fetch_add(&dom->ref, 1);
	c->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	c->cntr_fid.fid.context = context;
	c->cntr_fid.fid.ops = &iwarp_cntr_fi_ops;
	c->cntr_fid.ops = &iwarp_cntr_ops;
	*cntr_fid = &c->cntr_fid;
	return 0;
}
