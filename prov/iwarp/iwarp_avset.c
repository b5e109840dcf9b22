/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_av_set(3): address sets of an AV, the member lists collective
 * groups are joined from (rdm/rdm_coll.c). A set keeps the order its
 * members were added in; members are distinct and in use in the AV
 * when added (removing one from the AV later is the application's
 * business: the join checks again).
 */
#include "iwarp.h"
#include "iwarp_av.h"

#include <stdlib.h>
#include <string.h>

static uint64_t iwarp_av_set_serial;	/* atomic: sets of every AV */

static ssize_t iwarp_av_set_find(const struct iwarp_av_set *s, fi_addr_t a)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->member[i] == a)
			return (ssize_t)i;
	return -1;
}

/* Appends a (lock held); 0 or a negative fabric errno. */
static int iwarp_av_set_add(struct iwarp_av_set *s, fi_addr_t a)
{
	fi_addr_t *m;

	if (!iwarp_av_addr(s->av, a))
		return -FI_EINVAL;
	if (iwarp_av_set_find(s, a) >= 0)
		return 0;
	if (s->n >= IWARP_AV_SET_MAX)
		return -FI_ENOSPC;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;

		m = realloc(s->member, cap * sizeof(*m));
		if (!m)
			return -FI_ENOMEM;
		s->member = m;
		s->cap = cap;
	}
	s->member[s->n++] = a;
	return 0;
}

static void iwarp_av_set_drop(struct iwarp_av_set *s, size_t i)
{
	memmove(&s->member[i], &s->member[i + 1],
		(s->n - i - 1) * sizeof(*s->member));
	s->n--;
}

/* Both sets of one AV? Then the lock is taken. */
static bool iwarp_av_set_pair(struct iwarp_av_set *d,
			      const struct fid_av_set *src,
			      const struct iwarp_av_set **s)
{
	if (!src || src->fid.fclass != FI_CLASS_AV_SET)
		return false;
	*s = iwarp_av_set_of(src);
	if ((*s)->av != d->av)
		return false;
	iwarp_lock(d->av->fab);
	return true;
}

static int iwarp_av_set_union(struct fid_av_set *dst,
			      const struct fid_av_set *src)
{
	struct iwarp_av_set *d = iwarp_av_set_of(dst);
	const struct iwarp_av_set *s;
	size_t i;
	int ret = 0;

	if (!iwarp_av_set_pair(d, src, &s))
		return -FI_EINVAL;
	for (i = 0; i < s->n && !ret; i++)
		ret = iwarp_av_set_add(d, s->member[i]);
	iwarp_unlock(d->av->fab);
	return ret;
}

/* Keeps the members of dst that are (keep) or are not in src. */
static int iwarp_av_set_filter(struct fid_av_set *dst,
			       const struct fid_av_set *src, bool keep)
{
	struct iwarp_av_set *d = iwarp_av_set_of(dst);
	const struct iwarp_av_set *s;
	size_t i = 0;

	if (!iwarp_av_set_pair(d, src, &s))
		return -FI_EINVAL;
	while (i < d->n) {
		if ((iwarp_av_set_find(s, d->member[i]) >= 0) == keep)
			i++;
		else
			iwarp_av_set_drop(d, i);
	}
	iwarp_unlock(d->av->fab);
	return 0;
}

static int iwarp_av_set_intersect(struct fid_av_set *dst,
				  const struct fid_av_set *src)
{
	return iwarp_av_set_filter(dst, src, true);
}

static int iwarp_av_set_diff(struct fid_av_set *dst,
			     const struct fid_av_set *src)
{
	return iwarp_av_set_filter(dst, src, false);
}

/* fi_av_set(3): inserting a member twice or removing a non-member is
 * an error. */
static int iwarp_av_set_insert(struct fid_av_set *set, fi_addr_t a)
{
	struct iwarp_av_set *s = iwarp_av_set_of(set);
	int ret;

	iwarp_lock(s->av->fab);
	ret = iwarp_av_set_find(s, a) >= 0 ? -FI_EINVAL :
					     iwarp_av_set_add(s, a);
	iwarp_unlock(s->av->fab);
	return ret;
}

static int iwarp_av_set_remove(struct fid_av_set *set, fi_addr_t a)
{
	struct iwarp_av_set *s = iwarp_av_set_of(set);
	ssize_t i;

	iwarp_lock(s->av->fab);
	i = iwarp_av_set_find(s, a);
	if (i >= 0)
		iwarp_av_set_drop(s, (size_t)i);
	iwarp_unlock(s->av->fab);
	return i >= 0 ? 0 : -FI_EINVAL;
}

static int iwarp_av_set_addr(struct fid_av_set *set, fi_addr_t *coll_addr)
{
	if (!coll_addr)
		return -FI_EINVAL;
	*coll_addr = iwarp_av_set_of(set)->addr;
	return 0;
}

static struct fi_ops_av_set iwarp_av_set_ops = {
	.size = sizeof(struct fi_ops_av_set),
	.set_union = iwarp_av_set_union,
	.intersect = iwarp_av_set_intersect,
	.diff = iwarp_av_set_diff,
	.insert = iwarp_av_set_insert,
	.remove = iwarp_av_set_remove,
	.addr = iwarp_av_set_addr,
};

static int iwarp_av_set_close(struct fid *fid)
{
	struct iwarp_av_set *s = iwarp_container_of(fid, struct iwarp_av_set,
						    set_fid.fid);

	atomic_fetch_sub(&s->av->ref, 1);
	free(s->member);
	free(s);
	return 0;
}

static struct fi_ops iwarp_av_set_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_av_set_close,
	.bind = iwarp_no_bind,
	.control = iwarp_no_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

/*
 * The initial members: FI_UNIVERSE takes every address in use; else
 * start_addr + i * stride up to end_addr, at most count of them (count
 * 0: no limit), or none when both ends are FI_ADDR_NOTAVAIL.
 */
static int iwarp_av_set_fill(struct iwarp_av_set *s,
			     const struct fi_av_set_attr *attr)
{
	fi_addr_t a;
	size_t n = 0;
	int ret = 0;

	if (attr->flags & FI_UNIVERSE) {
		for (a = 0; a < s->av->count && !ret; a++)
			if (iwarp_av_addr(s->av, a))
				ret = iwarp_av_set_add(s, a);
		return ret;
	}
	if (attr->start_addr == FI_ADDR_NOTAVAIL &&
	    attr->end_addr == FI_ADDR_NOTAVAIL)
		return 0;
	if (!attr->stride || attr->start_addr > attr->end_addr ||
	    attr->end_addr >= s->av->count)
		return -FI_EINVAL;
	for (a = attr->start_addr; a <= attr->end_addr && !ret;
	     a += attr->stride) {
		if (attr->count && ++n > attr->count)
			return -FI_EINVAL;
		ret = iwarp_av_set_add(s, a);
		if (attr->end_addr - a < attr->stride)
			break;
	}
	return ret;
}

int iwarp_av_set_open(struct fid_av *av_fid, struct fi_av_set_attr *attr,
		      struct fid_av_set **set, void *context)
{
	struct iwarp_av *av = iwarp_av_of(&av_fid->fid);
	struct iwarp_av_set *s;
	int ret;

	if (!attr || !set || attr->comm_key_size ||
	    (attr->flags & ~FI_UNIVERSE))
		return -FI_EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -FI_ENOMEM;
	s->av = av;
	iwarp_lock(av->fab);
	ret = iwarp_av_set_fill(s, attr);
	s->addr = __atomic_add_fetch(&iwarp_av_set_serial, 1,
				     __ATOMIC_RELAXED);
	s->addr = IWARP_AV_SET_ADDR | (s->addr & 0xffffffffffffULL);
	iwarp_unlock(av->fab);
	if (ret) {
		free(s->member);
		free(s);
		return ret;
	}
	s->set_fid.fid.fclass = FI_CLASS_AV_SET;
	s->set_fid.fid.context = context;
	s->set_fid.fid.ops = &iwarp_av_set_fi_ops;
	s->set_fid.ops = &iwarp_av_set_ops;
	atomic_fetch_add(&av->ref, 1);
	*set = &s->set_fid;
	return 0;
}
