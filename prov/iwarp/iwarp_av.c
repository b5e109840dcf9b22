/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address vectors: a table of peer names (sockaddr_in or sockaddr_in6,
 * the domain's family) whose index is the fi_addr_t for FI_AV_MAP and
 * FI_AV_TABLE alike, and an open addressing hash (linear probing,
 * backward-shift deletion) for the reverse lookup an RDM endpoint does
 * when a peer introduces itself. Inserts are synchronous; a name that
 * cannot be inserted gets FI_ADDR_NOTAVAIL and is not counted.
 */
#include "iwarp_av.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IWARP_AV_MIN_CAP	16
/* attr->count is only a hint: do not trust it with gigabytes */
#define IWARP_AV_MAX_INIT_CAP	65536
#define IWARP_AV_INSERT_FLAGS	(FI_MORE | FI_SYNC_ERR)
#define IWARP_AV_OPEN_FLAGS	FI_SYMMETRIC	/* a hint, ignored */

/* ---- reverse lookup hash */

static uint64_t iwarp_av_mix(uint64_t h)	/* splitmix64 finalizer */
{
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	return h ^ (h >> 31);
}

/* Family, port and address; the same fields iwarp_addr_equal compares. */
static uint64_t iwarp_av_hash_sa(const union iwarp_sockaddr *a)
{
	uint64_t h = (uint64_t)a->sa.sa_family << 16;
	uint64_t w[2];

	if (a->sa.sa_family == AF_INET)
		return iwarp_av_mix(h ^ a->sin.sin_port ^
				    (uint64_t)a->sin.sin_addr.s_addr << 32);
	memcpy(w, &a->sin6.sin6_addr, sizeof(w));
	h = iwarp_av_mix(h ^ a->sin6.sin6_port ^ w[0]);
	return iwarp_av_mix(h ^ w[1]);
}

static size_t iwarp_av_home(const struct iwarp_av *av,
			    const union iwarp_sockaddr *a)
{
	return (size_t)iwarp_av_hash_sa(a) & (av->hcap - 1);
}

/* The hash holds every used index; its load stays at most one half. */
static void iwarp_av_hash_add(struct iwarp_av *av, size_t idx)
{
	size_t mask = av->hcap - 1;
	size_t s = iwarp_av_home(av, &av->tab[idx].addr);

	while (av->hash[s])
		s = (s + 1) & mask;
	av->hash[s] = idx + 1;
	av->gen++;
}

/* Backward-shift deletion: later members of the chain move up so that
 * no probe sequence is broken (no tombstones). */
static void iwarp_av_hash_del(struct iwarp_av *av, size_t idx)
{
	size_t mask = av->hcap - 1;
	size_t i = iwarp_av_home(av, &av->tab[idx].addr), j, k;

	while (av->hash[i] != idx + 1)
		i = (i + 1) & mask;
	for (j = (i + 1) & mask; av->hash[j]; j = (j + 1) & mask) {
		k = iwarp_av_home(av, &av->tab[av->hash[j] - 1].addr);
		/* stays where it is if its home lies cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		av->hash[i] = av->hash[j];
		i = j;
	}
	av->hash[i] = 0;
	av->gen++;
}

static size_t iwarp_av_hcap(size_t cap)
{
	size_t h = 1;

	while (h < 2 * cap)
		h <<= 1;
	return h;
}

/* Grows the table to cap entries and rebuilds the hash for it. */
static int iwarp_av_resize(struct iwarp_av *av, size_t cap)
{
	struct iwarp_av_entry *t;
	size_t hcap, *h, i;

	if (cap <= av->cap || cap > SIZE_MAX / 4 / sizeof(*t))
		return -FI_ENOMEM;
	hcap = iwarp_av_hcap(cap);
	h = calloc(hcap, sizeof(*h));
	if (!h)
		return -FI_ENOMEM;
	t = realloc(av->tab, cap * sizeof(*t));
	if (!t) {
		free(h);
		return -FI_ENOMEM;
	}
	memset(t + av->cap, 0, (cap - av->cap) * sizeof(*t));
	av->tab = t;
	av->cap = cap;
	free(av->hash);
	av->hash = h;
	av->hcap = hcap;
	for (i = 0; i < av->count; i++)
		if (av->tab[i].used)
			iwarp_av_hash_add(av, i);
	return 0;
}

fi_addr_t iwarp_av_reverse(struct iwarp_av *av, const struct sockaddr *sa)
{
	size_t mask = av->hcap - 1, best = SIZE_MAX, idx, s;
	union iwarp_sockaddr a;

	if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return FI_ADDR_NOTAVAIL;
	memcpy(&a, sa, iwarp_sa_len(sa));
	for (s = iwarp_av_home(av, &a); av->hash[s]; s = (s + 1) & mask) {
		idx = av->hash[s] - 1;
		if (idx < best && iwarp_addr_equal(&av->tab[idx].addr, &a))
			best = idx;
	}
	return best == SIZE_MAX ? FI_ADDR_NOTAVAIL : (fi_addr_t)best;
}

const union iwarp_sockaddr *iwarp_av_addr(struct iwarp_av *av, fi_addr_t a)
{
	return a < av->count && av->tab[a].used ? &av->tab[a].addr : NULL;
}

/* ---- table */

/* 0 if a is a name this AV can hold, else a positive fabric errno. */
static int iwarp_av_check(const struct iwarp_av *av,
			  const union iwarp_sockaddr *a)
{
	if (a->sa.sa_family != av->family)
		return FI_EINVAL;
	if (a->sa.sa_family == AF_INET)
		return a->sin.sin_port &&
		       a->sin.sin_addr.s_addr != htonl(INADDR_ANY) ?
		       0 : FI_EADDRNOTAVAIL;
	return a->sin6.sin6_port &&
	       !IN6_IS_ADDR_UNSPECIFIED(&a->sin6.sin6_addr) ?
	       0 : FI_EADDRNOTAVAIL;
}

/* Stores a checked name at the lowest unused index. */
static int iwarp_av_put(struct iwarp_av *av, const union iwarp_sockaddr *a,
			fi_addr_t *out)
{
	size_t i = av->free_hint;
	int ret;

	while (i < av->count && av->tab[i].used)
		i++;
	av->free_hint = i;
	if (i == av->cap) {
		ret = iwarp_av_resize(av, av->cap * 2);
		if (ret)
			return ret;
	}
	av->tab[i].addr = *a;
	av->tab[i].used = true;
	if (i == av->count)
		av->count++;
	av->free_hint = i + 1;
	iwarp_av_hash_add(av, i);
	*out = i;
	return 0;
}

/*
 * The endpoint hears of the removal first, while iwarp_av_addr() still
 * answers for the entry.
 */
static void iwarp_av_drop(struct iwarp_av *av, size_t i)
{
	if (av->on_remove)
		av->on_remove(av->on_remove_arg, i);
	iwarp_av_hash_del(av, i);
	av->tab[i].used = false;
	if (i < av->free_hint)
		av->free_hint = i;
}

/* ---- insertion */

/* Where the results of one insert call go. */
struct iwarp_av_batch {
	fi_addr_t *fi_addr;	/* may be NULL */
	int *sync_err;		/* FI_SYNC_ERR: 0 or a positive errno */
	int done;		/* names inserted */
};

static int iwarp_av_batch_init(struct iwarp_av_batch *b, fi_addr_t *fi_addr,
			       size_t count, uint64_t flags, void *context)
{
	if (flags & ~(uint64_t)IWARP_AV_INSERT_FLAGS)
		return -FI_EBADFLAGS;
	if (count > INT_MAX || ((flags & FI_SYNC_ERR) && !context))
		return -FI_EINVAL;
	b->fi_addr = fi_addr;
	b->sync_err = flags & FI_SYNC_ERR ? context : NULL;
	b->done = 0;
	return 0;
}

/* Lock held. Inserts name number i of the call unless err is set. */
static void iwarp_av_one(struct iwarp_av *av, struct iwarp_av_batch *b,
			 size_t i, const union iwarp_sockaddr *a, int err)
{
	fi_addr_t fa = FI_ADDR_NOTAVAIL;

	if (!err)
		err = iwarp_av_check(av, a);
	if (!err)
		err = -iwarp_av_put(av, a, &fa);
	if (err)
		FI_INFO(&iwarp_prov, FI_LOG_AV,
			"address %zu not inserted: %s\n", i,
			fi_strerror(err));
	else
		b->done++;
	if (b->fi_addr)
		b->fi_addr[i] = fa;
	if (b->sync_err)
		b->sync_err[i] = err;
}

/* Names are packed at the stride of the domain's sockaddr. */
static int iwarp_av_insert(struct fid_av *av_fid, const void *addr,
			   size_t count, fi_addr_t *fi_addr, uint64_t flags,
			   void *context)
{
	struct iwarp_av *av = iwarp_av_of(&av_fid->fid);
	struct iwarp_av_batch b;
	union iwarp_sockaddr a;
	size_t i;
	int ret;

	ret = iwarp_av_batch_init(&b, fi_addr, count, flags, context);
	if (ret)
		return ret;
	if (count && !addr)
		return -FI_EINVAL;
	iwarp_lock(av->fab);
	for (i = 0; i < count; i++) {
		memset(&a, 0, sizeof(a));
		memcpy(&a, (const char *)addr + i * av->addrlen, av->addrlen);
		iwarp_av_one(av, &b, i, &a, 0);
	}
	iwarp_unlock(av->fab);
	return b.done;
}

/* A decimal port 0..65535, host order; -1 if service is not one. */
static long iwarp_av_port(const char *service)
{
	char *end;
	long v;

	if (!service || *service < '0' || *service > '9')
		return -1;
	v = strtol(service, &end, 10);
	return *end || v > 65535 ? -1 : v;
}

/* The first name of a symmetric insert: numeric node of our family. */
static int iwarp_av_parse(const struct iwarp_av *av, const char *node,
			  const char *service, union iwarp_sockaddr *base)
{
	long port = iwarp_av_port(service);
	void *dst = av->family == AF_INET ? (void *)&base->sin.sin_addr :
					    (void *)&base->sin6.sin6_addr;

	memset(base, 0, sizeof(*base));
	if (!node || port < 0 || inet_pton(av->family, node, dst) != 1)
		return FI_EINVAL;
	base->sa.sa_family = av->family;
	if (av->family == AF_INET)
		base->sin.sin_port = htons((uint16_t)port);
	else
		base->sin6.sin6_port = htons((uint16_t)port);
	return 0;
}

/* Adds n to a big-endian number of len octets; false if it overflows. */
static bool iwarp_av_add_be(uint8_t *p, size_t len, size_t n)
{
	uint64_t carry = n, sum;

	while (len--) {
		sum = p[len] + (carry & 0xff);
		p[len] = (uint8_t)sum;
		carry = (carry >> 8) + (sum >> 8);
	}
	return !carry;
}

/* base's address plus node, its port plus svc; FI_EINVAL past the end. */
static int iwarp_av_sym_addr(const union iwarp_sockaddr *base, size_t node,
			     size_t svc, union iwarp_sockaddr *out)
{
	bool v4 = base->sa.sa_family == AF_INET;
	uint16_t *port = v4 ? &out->sin.sin_port : &out->sin6.sin6_port;
	uint8_t *ip = v4 ? (uint8_t *)&out->sin.sin_addr :
			   (uint8_t *)&out->sin6.sin6_addr;
	size_t p;

	*out = *base;
	p = ntohs(*port) + (svc > 65536 ? 65536 : svc);
	if (p > 65535 || !iwarp_av_add_be(ip, v4 ? 4 : 16, node))
		return FI_EINVAL;
	*port = htons((uint16_t)p);
	return 0;
}

static int iwarp_av_insertsym(struct fid_av *av_fid, const char *node,
			      size_t nodecnt, const char *service,
			      size_t svccnt, fi_addr_t *fi_addr,
			      uint64_t flags, void *context)
{
	struct iwarp_av *av = iwarp_av_of(&av_fid->fid);
	union iwarp_sockaddr base, a;
	struct iwarp_av_batch b;
	size_t n, s;
	int ret, err;

	if (nodecnt && svccnt > SIZE_MAX / nodecnt)
		return -FI_EINVAL;
	ret = iwarp_av_batch_init(&b, fi_addr, nodecnt * svccnt, flags,
				  context);
	if (ret)
		return ret;
	err = iwarp_av_parse(av, node, service, &base);
	memset(&a, 0, sizeof(a));
	iwarp_lock(av->fab);
	for (n = 0; n < nodecnt; n++) {
		for (s = 0; s < svccnt; s++) {
			ret = err ? err : iwarp_av_sym_addr(&base, n, s, &a);
			iwarp_av_one(av, &b, n * svccnt + s, &a, ret);
		}
	}
	iwarp_unlock(av->fab);
	return b.done;
}

/* Numeric host and port only: nothing blocks on a resolver. */
static int iwarp_av_insertsvc(struct fid_av *av_fid, const char *node,
			      const char *service, fi_addr_t *fi_addr,
			      uint64_t flags, void *context)
{
	return iwarp_av_insertsym(av_fid, node, 1, service, 1, fi_addr, flags,
				  context);
}

/* ---- removal, lookup, printing */

/* All or nothing: -FI_EINVAL if any fi_addr is not in use. */
static int iwarp_av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr,
			   size_t count, uint64_t flags)
{
	struct iwarp_av *av = iwarp_av_of(&av_fid->fid);
	size_t i;
	int ret = 0;

	if (flags)
		return -FI_EBADFLAGS;
	if (count && !fi_addr)
		return -FI_EINVAL;
	iwarp_lock(av->fab);
	for (i = 0; i < count && !ret; i++)
		if (!iwarp_av_addr(av, fi_addr[i]))
			ret = -FI_EINVAL;
	for (i = 0; i < count && !ret; i++)
		if (iwarp_av_addr(av, fi_addr[i]))	/* listed twice */
			iwarp_av_drop(av, fi_addr[i]);
	iwarp_unlock(av->fab);
	return ret;
}

/*
 * fi_av(3): a buffer too small gets the first *addrlen octets; *addrlen
 * becomes the size of the name either way and the call returns 0.
 */
static int iwarp_av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr,
			   void *addr, size_t *addrlen)
{
	struct iwarp_av *av = iwarp_av_of(&av_fid->fid);
	const union iwarp_sockaddr *a;
	size_t len;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	iwarp_lock(av->fab);
	a = iwarp_av_addr(av, fi_addr);
	if (a) {
		len = iwarp_sa_len(&a->sa);
		if (*addrlen)
			memcpy(addr, a, *addrlen < len ? *addrlen : len);
		*addrlen = len;
	}
	iwarp_unlock(av->fab);
	return a ? 0 : -FI_EINVAL;
}

/* libfabric's format; NULL for anything but sockaddr_in/in6. */
static int iwarp_av_format(const void *addr, char *buf, size_t len)
{
	char host[IWARP_ADDR_STRLEN];
	union iwarp_sockaddr a;

	memcpy(&a.sa, addr, sizeof(a.sa));
	if (a.sa.sa_family != AF_INET && a.sa.sa_family != AF_INET6)
		return -1;
	memcpy(&a, addr, iwarp_sa_len(&a.sa));
	return snprintf(buf, len, "%s://%s",
			a.sa.sa_family == AF_INET ? "fi_sockaddr_in" :
						   "fi_sockaddr_in6",
			iwarp_addr_str(&a, host, sizeof(host)));
}

/* Truncated to *len (NUL included); *len becomes the size needed. */
static const char *iwarp_av_straddr(struct fid_av *av_fid, const void *addr,
				    char *buf, size_t *len)
{
	struct iwarp_av *av = iwarp_av_of(&av_fid->fid);
	int n;

	if (!addr || !len || (*len && !buf))
		return NULL;
	iwarp_lock(av->fab);		/* reads no AV state, but uniform */
	n = iwarp_av_format(addr, buf, *len);
	iwarp_unlock(av->fab);
	if (n < 0)
		return NULL;
	*len = (size_t)n + 1;
	return buf;
}

static int iwarp_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
			struct fid_av_set **av_set, void *context)
{
	return -FI_ENOSYS;
}

/* ---- the object */

static int iwarp_av_close(struct fid *fid)
{
	struct iwarp_av *av = iwarp_av_of(fid);
	bool busy;

	iwarp_lock(av->fab);
	busy = atomic_load(&av->ref) > 0;
	iwarp_unlock(av->fab);
	if (busy) {
		FI_WARN(&iwarp_prov, FI_LOG_AV, "AV still has endpoints\n");
		return -FI_EBUSY;
	}
	atomic_fetch_sub(&av->dom->ref, 1);
	free(av->hash);
	free(av->tab);
	free(av);
	return 0;
}

static struct fi_ops iwarp_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_av_close,
	.bind = iwarp_no_bind,		/* no FI_EVENT: no EQ to bind */
	.control = iwarp_no_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

static struct fi_ops_av iwarp_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = iwarp_av_insert,
	.insertsvc = iwarp_av_insertsvc,
	.insertsym = iwarp_av_insertsym,
	.remove = iwarp_av_remove,
	.lookup = iwarp_av_lookup,
	.straddr = iwarp_av_straddr,
	.av_set = iwarp_av_set,
};

/*
 * FI_EVENT (asynchronous inserts), FI_READ and named (shared) AVs, and
 * receive context bits are not supported; map_addr only matters with a
 * name (fi_av(3)).
 */
static int iwarp_av_check_attr(const struct fi_av_attr *attr)
{
	if (!attr)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP &&
	    attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr->flags & (FI_EVENT | FI_READ))
		return -FI_ENOSYS;
	if (attr->flags & ~(uint64_t)IWARP_AV_OPEN_FLAGS)
		return -FI_EBADFLAGS;
	if (attr->name || attr->rx_ctx_bits)
		return -FI_ENOSYS;
	return 0;
}

int iwarp_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av_fid, void *context)
{
	struct iwarp_domain *dom = iwarp_domain_of(&domain->fid);
	struct iwarp_av *av;
	size_t cap;
	int ret;

	ret = iwarp_av_check_attr(attr);
	if (ret)
		return ret;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	cap = attr->count < IWARP_AV_MIN_CAP ? IWARP_AV_MIN_CAP :
	      attr->count > IWARP_AV_MAX_INIT_CAP ? IWARP_AV_MAX_INIT_CAP :
	      attr->count;
	ret = iwarp_av_resize(av, cap);
	if (ret) {
		free(av);
		return ret;
	}
	/* fi_av(3) 2.x deprecates FI_AV_MAP; both index a table here */
	if (attr->type == FI_AV_UNSPEC)
		attr->type = iwarp_api_v2(dom->fabric->fabric_fid.api_version) ?
			     FI_AV_TABLE : FI_AV_MAP;
	av->type = attr->type;
	av->dom = dom;
	av->fab = dom->fabric;
	av->family = dom->iface.addr.sa.sa_family;
	av->addrlen = iwarp_sa_len(&dom->iface.addr.sa);
	atomic_init(&av->ref, 0);
	atomic_fetch_add(&dom->ref, 1);
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &iwarp_av_fi_ops;
	av->av_fid.ops = &iwarp_av_ops;
	*av_fid = &av->av_fid;
	FI_INFO(&iwarp_prov, FI_LOG_AV, "opened %s AV of %zu entries\n",
		av->type == FI_AV_MAP ? "map" : "table", cap);
	return 0;
}
