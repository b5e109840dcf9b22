/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event queues: connection management events, user events
 * (fi_eq_write) and asynchronous errors, in arrival order. An error
 * entry at the head makes fi_eq_read answer -FI_EAVAIL, as libfabric's
 * util EQ does: CM events of one endpoint must not overtake each other.
 * The ring grows, so no event is dropped whatever size was asked for.
 */
#include "iwarp.h"

#include <stdlib.h>
#include <string.h>

#define IWARP_EQ_INIT_CAP	16

/* struct fi_eq_err_entry as API 1.0-1.4 callers know it */
#define IWARP_EQ_ERR_1_0_SIZE \
	offsetof(struct fi_eq_err_entry, err_data_size)

static int iwarp_eq_grow(struct iwarp_eq *eq)
{
	size_t cap = eq->cap * 2, i;
	struct iwarp_eq_event *q;

	q = malloc(sizeof(*q) * cap);
	if (!q)
		return -FI_ENOMEM;
	for (i = 0; i < eq->count; i++)
		q[i] = eq->q[(eq->head + i) % eq->cap];
	free(eq->q);
	eq->q = q;
	eq->head = 0;
	eq->cap = cap;
	return 0;
}

/* Lock held. A zeroed slot at the tail, or NULL without memory. */
static struct iwarp_eq_event *iwarp_eq_push(struct iwarp_eq *eq)
{
	struct iwarp_eq_event *ev;

	if (eq->count == eq->cap && iwarp_eq_grow(eq))
		return NULL;
	ev = &eq->q[(eq->head + eq->count++) % eq->cap];
	memset(ev, 0, offsetof(struct iwarp_eq_event, u));
	return ev;
}

static void iwarp_eq_pop(struct iwarp_eq *eq)
{
	eq->head = (eq->head + 1) % eq->cap;
	eq->count--;
}

static int iwarp_eq_put(struct iwarp_eq *eq, uint32_t event, const void *buf,
			size_t len, bool owns_info)
{
	struct iwarp_eq_event *ev;

	if (len > sizeof(ev->u.raw) || (len && !buf))
		return -FI_EINVAL;
	ev = iwarp_eq_push(eq);
	if (!ev)
		return -FI_ENOMEM;
	ev->event = event;
	ev->len = len;
	ev->owns_info = owns_info && len >= sizeof(struct fi_eq_cm_entry);
	memcpy(ev->u.raw, buf, len);
	iwarp_wait_signal(&eq->wait);
	return 0;
}

int iwarp_eq_write_locked(struct iwarp_eq *eq, uint32_t event,
			  const void *buf, size_t len)
{
	return iwarp_eq_put(eq, event, buf, len, event == FI_CONNREQ);
}

/* Lock held. */
int iwarp_eq_write_err(struct iwarp_eq *eq, fid_t fid, void *context,
		       uint64_t data, int err, int prov_errno,
		       const void *err_data, size_t err_data_size)
{
	struct iwarp_eq_event *ev = iwarp_eq_push(eq);

	if (!ev)
		return -FI_ENOMEM;
	if (err_data_size > sizeof(ev->err_data))
		err_data_size = sizeof(ev->err_data);
	ev->is_err = true;
	ev->len = sizeof(ev->u.err);
	ev->u.err = (struct fi_eq_err_entry){
		.fid = fid,
		.context = context,
		.data = data,
		.err = err < 0 ? -err : err,
		.prov_errno = prov_errno,
		.err_data_size = err_data ? err_data_size : 0,
	};
	if (ev->u.err.err_data_size)
		memcpy(ev->err_data, err_data, err_data_size);
	iwarp_wait_signal(&eq->wait);
	return 0;
}

/* Octets a buffer must hold: the fixed part of the entry. */
static bool iwarp_eq_is_cm(const struct iwarp_eq_event *ev)
{
	return ev->event == FI_CONNREQ || ev->event == FI_CONNECTED ||
	       ev->event == FI_SHUTDOWN;
}

static size_t iwarp_eq_min_len(const struct iwarp_eq_event *ev)
{
	size_t hdr;

	switch (ev->event) {
	case FI_CONNREQ:
	case FI_CONNECTED:
	case FI_SHUTDOWN:
		hdr = sizeof(struct fi_eq_cm_entry);
		break;
	default:
		hdr = sizeof(struct fi_eq_entry);
		break;
	}
	return hdr < ev->len ? hdr : ev->len;
}

/*
 * Lock held. CM data beyond the caller's buffer is cut (fi_eq(3): it is
 * "limited to the buffer space provided"); a buffer too small for the
 * entry itself is -FI_ETOOSMALL and leaves the event queued.
 */
static ssize_t iwarp_eq_take(struct iwarp_eq *eq, uint32_t *event, void *buf,
			     size_t len, uint64_t flags)
{
	struct iwarp_eq_event *ev;
	size_t n;

	if (!eq->count)
		return -FI_EAGAIN;
	ev = &eq->q[eq->head];
	if (ev->is_err)
		return -FI_EAVAIL;
	if (!buf)
		len = 0;
	/* no buffer at all takes only the event, unless a CM event's
	 * entry would be lost (fabtests' multinode harness reads
	 * FI_JOIN_COMPLETE so) */
	if ((buf || iwarp_eq_is_cm(ev)) && len < iwarp_eq_min_len(ev))
		return -FI_ETOOSMALL;
	n = len < ev->len ? len : ev->len;
	if (n)
		memcpy(buf, ev->u.raw, n);
	if (event)
		*event = ev->event;
	if (!(flags & FI_PEEK))
		iwarp_eq_pop(eq);
	return n;
}

/* Lock held. The connections and listeners driven first. */
static ssize_t iwarp_eq_read_locked(struct iwarp_eq *eq, uint32_t *event,
				    void *buf, size_t len, uint64_t flags)
{
	iwarp_progress_cm(eq->fab);
	return iwarp_eq_take(eq, event, buf, len, flags);
}

static ssize_t iwarp_eq_read(struct fid_eq *eq_fid, uint32_t *event,
			     void *buf, size_t len, uint64_t flags)
{
	struct iwarp_eq *eq = iwarp_eq_of(&eq_fid->fid);
	ssize_t ret;

	iwarp_lock(eq->fab);
	ret = iwarp_eq_read_locked(eq, event, buf, len, flags);
	iwarp_unlock(eq->fab);
	return ret;
}

/*
 * err_data (fi_eq(3)): API >= 1.5 callers that bring a buffer get a copy
 * and its size; the others get our copy, kept until the next readerr.
 * Callers below 1.5 know the entry without err_data_size.
 */
static void iwarp_eq_err_out(struct iwarp_eq *eq, struct iwarp_eq_event *ev,
			     struct fi_eq_err_entry *buf)
{
	uint32_t api = eq->fab->fabric_fid.api_version;
	size_t have = ev->u.err.err_data_size;
	struct fi_eq_err_entry e = ev->u.err;
	void *user = buf->err_data;

	if (FI_VERSION_GE(api, FI_VERSION(1, 5)) && buf->err_data_size) {
		if (have > buf->err_data_size)
			have = buf->err_data_size;
		if (have)
			memcpy(user, ev->err_data, have);
		e.err_data = user;
		e.err_data_size = have;
		*buf = e;
		return;
	}
	memcpy(eq->last_err_data, ev->err_data, have);
	e.err_data = have ? eq->last_err_data : NULL;
	if (FI_VERSION_GE(api, FI_VERSION(1, 5)))
		*buf = e;
	else
		memcpy(buf, &e, IWARP_EQ_ERR_1_0_SIZE);
}

static ssize_t iwarp_eq_readerr(struct fid_eq *eq_fid,
				struct fi_eq_err_entry *buf, uint64_t flags)
{
	struct iwarp_eq *eq = iwarp_eq_of(&eq_fid->fid);
	ssize_t ret = -FI_EAGAIN;

	iwarp_lock(eq->fab);
	iwarp_progress_cm(eq->fab);
	if (eq->count && eq->q[eq->head].is_err) {
		iwarp_eq_err_out(eq, &eq->q[eq->head], buf);
		if (!(flags & FI_PEEK))
			iwarp_eq_pop(eq);
		ret = sizeof(*buf);
	}
	iwarp_unlock(eq->fab);
	return ret;
}

/* fi_eq_write: user events, returned as written. */
static ssize_t iwarp_eq_write(struct fid_eq *eq_fid, uint32_t event,
			      const void *buf, size_t len, uint64_t flags)
{
	struct iwarp_eq *eq = iwarp_eq_of(&eq_fid->fid);
	int ret;

	iwarp_lock(eq->fab);
	ret = iwarp_eq_put(eq, event, buf, len, false);
	iwarp_unlock(eq->fab);
	return ret ? ret : (ssize_t)len;
}

static bool iwarp_eq_ready(void *arg)
{
	return ((struct iwarp_eq *)arg)->count;
}

static ssize_t iwarp_eq_sread(struct fid_eq *eq_fid, uint32_t *event,
			      void *buf, size_t len, int timeout,
			      uint64_t flags)
{
	struct iwarp_eq *eq = iwarp_eq_of(&eq_fid->fid);
	ssize_t ret;

	iwarp_lock(eq->fab);
	ret = iwarp_wait_block(eq->fab, &eq->wait, iwarp_eq_ready, eq,
			       timeout, false);
	/* ready: an event is queued and the wait has just driven progress
	 * (a second pass would only poll the listeners once more) */
	if (ret == 0)
		ret = iwarp_eq_take(eq, event, buf, len, flags);
	else if (ret == -FI_EAGAIN || ret == -FI_EINTR)
		ret = iwarp_eq_read_locked(eq, event, buf, len, flags);
	iwarp_unlock(eq->fab);
	return ret;
}

static const char *iwarp_eq_strerror(struct fid_eq *eq_fid, int prov_errno,
				     const void *err_data, char *buf,
				     size_t len)
{
	return iwarp_strerror(prov_errno, buf, len);
}

static int iwarp_eq_control(struct fid *fid, int command, void *arg)
{
	struct iwarp_eq *eq = iwarp_eq_of(fid);

	return iwarp_wait_control(eq->fab, &eq->wait, command, arg);
}

static void iwarp_eq_free(struct iwarp_eq *eq)
{
	struct iwarp_eq_event *ev;

	for (; eq->count; iwarp_eq_pop(eq)) {
		ev = &eq->q[eq->head];
		if (ev->owns_info)
			fi_freeinfo(((struct fi_eq_cm_entry *)ev->u.raw)->info);
	}
	free(eq->q);
	iwarp_wait_fini(&eq->wait);
	free(eq);
}

static int iwarp_eq_close(struct fid *fid)
{
	struct iwarp_eq *eq = iwarp_eq_of(fid);

	if (atomic_load(&eq->ref)) {
		FI_WARN(&iwarp_prov, FI_LOG_EQ, "EQ still has endpoints\n");
		return -FI_EBUSY;
	}
	atomic_fetch_sub(&eq->fab->ref, 1);
	iwarp_eq_free(eq);
	return 0;
}

static struct fi_ops iwarp_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_eq_close,
	.bind = iwarp_no_bind,
	.control = iwarp_eq_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

static struct fi_ops_eq iwarp_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = iwarp_eq_read,
	.readerr = iwarp_eq_readerr,
	.write = iwarp_eq_write,
	.sread = iwarp_eq_sread,
	.strerror = iwarp_eq_strerror,
};

int iwarp_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		  struct fid_eq **eq_fid, void *context)
{
	struct iwarp_fabric *fab = iwarp_fabric_of(&fabric->fid);
	struct iwarp_eq *eq;
	int ret;

	if (!attr || (attr->flags & ~(uint64_t)(FI_WRITE | FI_AFFINITY)))
		return -FI_EINVAL;
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	ret = iwarp_wait_init(&eq->wait, attr->wait_obj);
	if (ret) {
		free(eq);
		return ret;
	}
	eq->wait.cm = true;
	eq->cap = IWARP_EQ_INIT_CAP;
	eq->q = malloc(sizeof(*eq->q) * eq->cap);
	if (!eq->q) {
		iwarp_eq_free(eq);
		return -FI_ENOMEM;
	}
	eq->fab = fab;
	atomic_init(&eq->ref, 0);
	atomic_fetch_add(&fab->ref, 1);
	eq->eq_fid.fid.fclass = FI_CLASS_EQ;
	eq->eq_fid.fid.context = context;
	eq->eq_fid.fid.ops = &iwarp_eq_fi_ops;
	eq->eq_fid.ops = &iwarp_eq_ops;
	*eq_fid = &eq->eq_fid;
	return 0;
}
