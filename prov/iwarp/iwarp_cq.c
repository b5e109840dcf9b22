/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues. Completions live in a ring of fi_cq_tagged_entry,
 * whose prefixes are the smaller formats, so a read copies entry_size
 * octets of each. The ring grows instead of overflowing: the size the
 * user asks for is a floor, never a cap. Error completions wait in a
 * queue of their own, each marked with the successes written before it:
 * fi_cq_read returns those first, then answers -FI_EAVAIL (fi_cq(3)), so
 * the application sees completions in the order they happened.
 *
 * Every entry point takes the fabric lock and drives progress first.
 */
#include "iwarp.h"

#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <time.h>

/*
 * The ring is allocated at the first completion, sized by the user's hint
 * up to this many entries: applications open CQs they never use (fabtests
 * opens thousands), and the ring doubles when it must anyway.
 */
#define IWARP_CQ_FIRST_MAX	256
#define IWARP_CQ_FIRST_DEF	64

/* struct fi_cq_err_entry as API 1.0-1.4 callers know it */
#define IWARP_CQ_ERR_1_0_SIZE \
	offsetof(struct fi_cq_err_entry, err_data_size)

static size_t iwarp_cq_entry_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return 0;
	}
}

static int iwarp_cq_grow(struct iwarp_cq *cq)
{
	size_t cap = cq->cap ? cq->cap * 2 : cq->first_cap, i;
	struct fi_cq_tagged_entry *ring;
	fi_addr_t *src;

	ring = malloc(sizeof(*ring) * cap);
	src = malloc(sizeof(*src) * cap);
	if (!ring || !src) {
		free(ring);
		free(src);
		return -FI_ENOMEM;
	}
	for (i = 0; i < cq->count; i++) {
		ring[i] = cq->ring[iw_ring_at(cq->head, i, cq->cap)];
		src[i] = cq->src[iw_ring_at(cq->head, i, cq->cap)];
	}
	free(cq->ring);
	free(cq->src);
	cq->ring = ring;
	cq->src = src;
	cq->head = 0;
	cq->cap = cap;
	return 0;
}

static int iwarp_cq_grow_errs(struct iwarp_cq *cq)
{
	size_t cap = cq->ecap ? cq->ecap * 2 : 8, i;
	struct iwarp_cq_err *errs;

	errs = malloc(sizeof(*errs) * cap);
	if (!errs)
		return -FI_ENOMEM;
	for (i = 0; i < cq->ecount; i++)
		errs[i] = cq->errs[iw_ring_at(cq->ehead, i, cq->ecap)];
	free(cq->errs);
	cq->errs = errs;
	cq->ehead = 0;
	cq->ecap = cap;
	return 0;
}

int iwarp_cq_write(struct iwarp_cq *cq, void *context, uint64_t flags,
		   size_t len, void *buf, uint64_t data, uint64_t tag,
		   fi_addr_t src)
{
	size_t i;

	/* a scalable endpoint's own completions, or a closed context's */
	if (!cq)
		return 0;
	if (cq->count == cq->cap && iwarp_cq_grow(cq)) {
		FI_WARN(&iwarp_prov, FI_LOG_CQ, "completion lost: no memory\n");
		return -FI_ENOMEM;
	}
	i = iw_ring_at(cq->head, cq->count++, cq->cap);
	atomic_store_explicit(&cq->just_emptied, false, memory_order_relaxed);
	cq->ring[i] = (struct fi_cq_tagged_entry){
		.op_context = context,
		.flags = flags,
		.len = len,
		.buf = buf,
		.data = data,
		.tag = tag,
	};
	cq->src[i] = src;
	cq->written++;
	iwarp_wait_signal(&cq->wait);
	return 0;
}

int iwarp_cq_write_err(struct iwarp_cq *cq, void *context, uint64_t flags,
		       size_t len, void *buf, uint64_t data, uint64_t tag,
		       int err, int prov_errno, const void *err_data,
		       size_t err_data_size, size_t olen)
{
	struct iwarp_cq_err *e;
	char *copy = NULL;

	if (!cq)
		return 0;
	if (err_data_size) {
		copy = malloc(err_data_size);
		if (!copy)
			return -FI_ENOMEM;
		memcpy(copy, err_data, err_data_size);
	}
	if (cq->ecount == cq->ecap && iwarp_cq_grow_errs(cq)) {
		free(copy);
		FI_WARN(&iwarp_prov, FI_LOG_CQ, "error completion lost\n");
		return -FI_ENOMEM;
	}
	e = &cq->errs[iw_ring_at(cq->ehead, cq->ecount++, cq->ecap)];
	atomic_store_explicit(&cq->just_emptied, false, memory_order_relaxed);
	e->after = cq->written;
	e->e = (struct fi_cq_err_entry){
		.op_context = context,
		.flags = flags,
		.len = len,
		.buf = buf,
		.data = data,
		.tag = tag,
		.olen = olen,
		.err = err < 0 ? -err : err,
		.prov_errno = prov_errno,
		.err_data = copy,
		.err_data_size = copy ? err_data_size : 0,
	};
	e->err_data_buf = copy;
	iwarp_wait_signal(&cq->wait);
	return 0;
}

/* Lock held. The read behind fi_cq_read, fi_cq_readfrom and sread. */
static ssize_t iwarp_cq_read_locked(struct iwarp_cq *cq, void *buf,
				    size_t count, fi_addr_t *src_addr)
{
	char *dst = buf;
	size_t i, ready;

	iwarp_progress(cq->fab);
	ready = cq->count;
	if (cq->ecount && cq->errs[cq->ehead].after - cq->taken < ready)
		ready = (size_t)(cq->errs[cq->ehead].after - cq->taken);
	if (!ready)
		return cq->ecount ? -FI_EAVAIL : -FI_EAGAIN;
	if (count > ready)
		count = ready;
	for (i = 0; i < count; i++) {
		memcpy(dst, &cq->ring[cq->head], cq->entry_size);
		dst += cq->entry_size;
		if (src_addr)
			src_addr[i] = cq->src[cq->head];
		cq->head = iw_ring_next(cq->head, cq->cap);
	}
	cq->count -= count;
	cq->taken += count;
	return count;
}

/*
 * A yield that took this long gave the core to another task. While most
 * yields do, the core is shared (more busy ranks than cores) and a
 * reader waiting on a peer yields early, as the peer may be the task
 * that needs the core; a yield now and then to a passing daemon does not
 * make a core shared. On a core of its own a reader keeps spinning, for
 * its latency.
 */
#define IWARP_YIELD_SWITCHED_NS	2000
#define IWARP_SHARED_UP		8	/* a yield that gave the core away */
#define IWARP_SHARED_MAX	64
#define IWARP_SHARED_AT		32	/* at least: yield early */

static uint64_t iwarp_cq_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void iwarp_cq_yield(struct iwarp_cq *cq)
{
	uint64_t t0 = iwarp_cq_ns();
	unsigned int score;

	sched_yield();
	score = atomic_load_explicit(&cq->shared, memory_order_relaxed);
	if (iwarp_cq_ns() - t0 >= IWARP_YIELD_SWITCHED_NS)
		score = score + IWARP_SHARED_UP > IWARP_SHARED_MAX ?
				IWARP_SHARED_MAX : score + IWARP_SHARED_UP;
	else if (score)
		score--;
	atomic_store_explicit(&cq->shared, score, memory_order_relaxed);
}

/* Empty reads in a row before the first yield. */
static unsigned int iwarp_cq_yield_after(struct iwarp_cq *cq)
{
	unsigned int after = (unsigned int)iwarp_params.idle_yield;

	if (atomic_load_explicit(&cq->shared, memory_order_relaxed) >=
		    IWARP_SHARED_AT &&
	    after > IWARP_IDLE_YIELD_SHARED)
		after = IWARP_IDLE_YIELD_SHARED;
	return after;
}

static ssize_t iwarp_cq_readfrom(struct fid_cq *cq_fid, void *buf,
				 size_t count, fi_addr_t *src_addr)
{
	struct iwarp_cq *cq = iwarp_cq_of(&cq_fid->fid);
	unsigned int idle;
	ssize_t ret;

	/*
	 * Consumers drain a CQ in a loop that ends on -FI_EAGAIN (Open MPI's
	 * mtl ofi does): right after a read that took the last entry that
	 * progress had just produced, a second pass would only find empty
	 * sockets, one syscall before the consumer's reply. The call after
	 * that progresses again. Any entry written meanwhile clears the flag,
	 * so the check needs no lock.
	 */
	if (atomic_load_explicit(&cq->just_emptied, memory_order_relaxed)) {
		atomic_store_explicit(&cq->just_emptied, false,
				      memory_order_relaxed);
		return -FI_EAGAIN;
	}
	iwarp_trig_kick(cq->fab);
	iwarp_lock(cq->fab);
	ret = iwarp_cq_read_locked(cq, buf, count, src_addr);
	atomic_store_explicit(&cq->just_emptied,
			      ret > 0 && !cq->count && !cq->ecount,
			      memory_order_relaxed);
	idle = ret == -FI_EAGAIN ? ++cq->idle_reads : (cq->idle_reads = 0);
	iwarp_unlock(cq->fab);
	/*
	 * A caller that spins on us alone for long (Open MPI's blocking
	 * send waits for its completion without ever yielding) keeps a
	 * peer that shares its core, the very one whose progress it waits
	 * for, off the processor for a whole time slice.
	 */
	if (iwarp_params.idle_yield && !(idle % IWARP_IDLE_YIELD_EVERY) &&
	    idle >= iwarp_cq_yield_after(cq))
		iwarp_cq_yield(cq);
	return ret;
}

static ssize_t iwarp_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return iwarp_cq_readfrom(cq_fid, buf, count, NULL);
}

/*
 * err_data (fi_cq(3)): API >= 1.5 callers that bring a buffer get a copy
 * and its size; the others get our copy, kept until the next readerr.
 * Callers below 1.5 know the entry without err_data_size.
 */
static void iwarp_cq_err_out(struct iwarp_cq *cq, struct iwarp_cq_err *e,
			     struct fi_cq_err_entry *buf)
{
	uint32_t api = cq->fab->fabric_fid.api_version;
	void *user = buf->err_data;
	size_t n;

	free(cq->last_err_data);
	cq->last_err_data = e->err_data_buf;
	e->err_data_buf = NULL;
	if (!FI_VERSION_GE(api, FI_VERSION(1, 5))) {
		memcpy(buf, &e->e, IWARP_CQ_ERR_1_0_SIZE);
		return;
	}
	if (!buf->err_data_size) {
		*buf = e->e;
		return;
	}
	n = e->e.err_data_size < buf->err_data_size ? e->e.err_data_size :
						      buf->err_data_size;
	*buf = e->e;
	if (n)
		memcpy(user, e->e.err_data, n);
	buf->err_data = user;
	buf->err_data_size = n;
}

static ssize_t iwarp_cq_readerr(struct fid_cq *cq_fid,
				struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct iwarp_cq *cq = iwarp_cq_of(&cq_fid->fid);
	ssize_t ret = -FI_EAGAIN;

	iwarp_trig_kick(cq->fab);
	iwarp_lock(cq->fab);
	iwarp_progress(cq->fab);
	if (cq->ecount) {
		iwarp_cq_err_out(cq, &cq->errs[cq->ehead], buf);
		cq->ehead = iw_ring_next(cq->ehead, cq->ecap);
		cq->ecount--;
		ret = 1;
	}
	iwarp_unlock(cq->fab);
	return ret;
}

struct iwarp_cq_cond {
	struct iwarp_cq *cq;
	size_t threshold;
};

static bool iwarp_cq_ready(void *arg)
{
	struct iwarp_cq_cond *c = arg;

	return c->cq->ecount || c->cq->signaled ||
	       c->cq->count >= c->threshold;
}

/*
 * FI_CQ_COND_THRESHOLD passes the threshold as the value of cond (as
 * the sockets and psm2 providers read it), capped at count. A timeout
 * returns whatever arrived below the threshold before -FI_EAGAIN.
 */
static size_t iwarp_cq_threshold(const struct iwarp_cq *cq, const void *cond,
				 size_t count)
{
	size_t t = (uintptr_t)cond;

	if (!cq->threshold || !t)
		return 1;
	return t < count ? t : (count ? count : 1);
}

/*
 * fi_cq_signal, pending or arriving while blocked, ends one sread with
 * -FI_EAGAIN when nothing can be read, as libfabric's util CQ does.
 */
static ssize_t iwarp_cq_sreadfrom(struct fid_cq *cq_fid, void *buf,
				  size_t count, fi_addr_t *src_addr,
				  const void *cond, int timeout)
{
	struct iwarp_cq *cq = iwarp_cq_of(&cq_fid->fid);
	struct iwarp_cq_cond c = {
		.cq = cq,
		.threshold = iwarp_cq_threshold(cq, cond, count),
	};
	ssize_t ret;

	iwarp_lock(cq->fab);
	ret = -FI_EAGAIN;
	if (!cq->signaled && cq->count < c.threshold && !cq->ecount)
		ret = iwarp_wait_block(cq->fab, &cq->wait, iwarp_cq_ready, &c,
				       timeout, false);
	if (ret == 0 || ret == -FI_EAGAIN || ret == -FI_EINTR) {
		ret = iwarp_cq_read_locked(cq, buf, count, src_addr);
		if (ret == -FI_EAGAIN)
			cq->signaled = false;
	}
	iwarp_unlock(cq->fab);
	return ret;
}

static ssize_t iwarp_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
			      const void *cond, int timeout)
{
	return iwarp_cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

static int iwarp_cq_signal(struct fid_cq *cq_fid)
{
	struct iwarp_cq *cq = iwarp_cq_of(&cq_fid->fid);

	iwarp_lock(cq->fab);
	cq->signaled = true;
	iwarp_wait_signal(&cq->wait);
	iwarp_unlock(cq->fab);
	return 0;
}

static const char *iwarp_cq_strerror(struct fid_cq *cq_fid, int prov_errno,
				     const void *err_data, char *buf,
				     size_t len)
{
	return iwarp_strerror(prov_errno, buf, len);
}

static int iwarp_cq_control(struct fid *fid, int command, void *arg)
{
	struct iwarp_cq *cq = iwarp_cq_of(fid);

	return iwarp_wait_control(cq->fab, &cq->wait, command, arg);
}

static void iwarp_cq_free(struct iwarp_cq *cq)
{
	while (cq->ecount) {
		free(cq->errs[cq->ehead].err_data_buf);
		cq->ehead = iw_ring_next(cq->ehead, cq->ecap);
		cq->ecount--;
	}
	free(cq->errs);
	free(cq->last_err_data);
	free(cq->ring);
	free(cq->src);
	iwarp_wait_quit(cq->fab, &cq->wait, &cq->cq_fid.fid);
	iwarp_wait_fini(&cq->wait);
	free(cq);
}

static int iwarp_cq_close(struct fid *fid)
{
	struct iwarp_cq *cq = iwarp_cq_of(fid);

	if (atomic_load(&cq->ref)) {
		FI_WARN(&iwarp_prov, FI_LOG_CQ, "CQ still has endpoints\n");
		return -FI_EBUSY;
	}
	atomic_fetch_sub(&cq->dom->ref, 1);
	iwarp_cq_free(cq);
	return 0;
}

static struct fi_ops iwarp_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_cq_close,
	.bind = iwarp_no_bind,
	.control = iwarp_cq_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

static struct fi_ops_cq iwarp_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = iwarp_cq_read,
	.readfrom = iwarp_cq_readfrom,
	.readerr = iwarp_cq_readerr,
	.sread = iwarp_cq_sread,
	.sreadfrom = iwarp_cq_sreadfrom,
	.signal = iwarp_cq_signal,
	.strerror = iwarp_cq_strerror,
};

static int iwarp_cq_check_attr(const struct fi_cq_attr *attr)
{
	if (attr->flags & ~(uint64_t)FI_AFFINITY)
		return -FI_EINVAL;
	if (attr->format != FI_CQ_FORMAT_UNSPEC &&
	    !iwarp_cq_entry_size(attr->format))
		return -FI_EINVAL;
	if (attr->wait_obj != FI_WAIT_NONE &&
	    attr->wait_cond != FI_CQ_COND_NONE &&
	    attr->wait_cond != FI_CQ_COND_THRESHOLD)
		return -FI_EINVAL;
	return 0;
}

int iwarp_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		  struct fid_cq **cq_fid, void *context)
{
	struct iwarp_domain *dom = iwarp_domain_of(&domain->fid);
	struct iwarp_cq *cq;
	size_t size;
	int ret;

	if (!attr)
		return -FI_EINVAL;
	ret = iwarp_cq_check_attr(attr);
	if (ret)
		return ret;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	if (attr->wait_obj == FI_WAIT_SET)
		ret = iwarp_wait_enter(&cq->wait, dom->fabric, attr->wait_set,
				      &cq->cq_fid.fid);
	else
		ret = iwarp_wait_init(&cq->wait, attr->wait_obj);
	if (ret) {
		free(cq);
		return ret;
	}
	size = attr->size ? attr->size : IWARP_CQ_FIRST_DEF;
	cq->first_cap = size < IWARP_CQ_FIRST_MAX ? size : IWARP_CQ_FIRST_MAX;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ?
		     FI_CQ_FORMAT_CONTEXT : attr->format;
	cq->entry_size = iwarp_cq_entry_size(cq->format);
	cq->threshold = attr->wait_cond == FI_CQ_COND_THRESHOLD;
	cq->dom = dom;
	cq->fab = dom->fabric;
	atomic_init(&cq->ref, 0);
	atomic_fetch_add(&dom->ref, 1);
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &iwarp_cq_fi_ops;
	cq->cq_fid.ops = &iwarp_cq_ops;
	*cq_fid = &cq->cq_fid;
	return 0;
}
