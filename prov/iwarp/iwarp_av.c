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
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "iwarp/engine.h"

#define IWARP_AV_MIN_CAP	16
/* attr->count is only a hint: do not trust it with gigabytes */
#define IWARP_AV_MAX_INIT_CAP	65536
#define IWARP_AV_INSERT_FLAGS	(FI_MORE | FI_SYNC_ERR)
#define IWARP_AV_OPEN_FLAGS	FI_SYMMETRIC	/* a hint, ignored */

static void iwarp_av_shm_put(struct iwarp_av *av, size_t i);
static void iwarp_av_shm_refresh(struct iwarp_av *av);

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

static fi_addr_t iwarp_av_find(struct iwarp_av *av,
				const union iwarp_sockaddr *a)
{
	size_t mask = av->hcap - 1, best = SIZE_MAX, idx, s;

	for (s = iwarp_av_home(av, a); av->hash[s]; s = (s + 1) & mask) {
		idx = av->hash[s] - 1;
		if (idx < best && iwarp_addr_equal(&av->tab[idx].addr, a))
			best = idx;
	}
	return best == SIZE_MAX ? FI_ADDR_NOTAVAIL : (fi_addr_t)best;
}

/* A reader's copy may be behind the creator: a miss looks again. */
fi_addr_t iwarp_av_reverse(struct iwarp_av *av, const struct sockaddr *sa)
{
	union iwarp_sockaddr a;
	fi_addr_t fa;

	if (!sa || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return FI_ADDR_NOTAVAIL;
	memcpy(&a, sa, iwarp_sa_len(sa));
	fa = iwarp_av_find(av, &a);
	if (fa == FI_ADDR_NOTAVAIL && av->read_only) {
		iwarp_av_shm_refresh(av);
		fa = iwarp_av_find(av, &a);
	}
	return fa;
}

static bool iwarp_av_used(const struct iwarp_av *av, fi_addr_t a)
{
	return a < av->count && av->tab[a].used;
}

const union iwarp_sockaddr *iwarp_av_addr(struct iwarp_av *av, fi_addr_t a)
{
	if (!iwarp_av_used(av, a) && av->read_only && a < av->cap)
		iwarp_av_shm_refresh(av);
	return iwarp_av_used(av, a) ? &av->tab[a].addr : NULL;
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
		if (av->max_cap)	/* a named AV's segment is fixed */
			return -FI_ENOSPC;
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
	iwarp_av_shm_put(av, i);
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
	iwarp_av_shm_put(av, i);
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
	if (av->read_only)
		return -FI_EACCES;
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
	if (av->read_only)
		return -FI_EACCES;
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
	if (av->read_only)
		return -FI_EACCES;
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

/* ---- named AVs: the shared segment */

/*
 * Layout, host order (one node): a header, cap entries, then from the
 * next page the map: cap fi_addr_t, map[i] = i while entry i is in use.
 * Only the creator writes, with pwrite(); gen is odd while it does, so
 * a reader that sees gen change or odd around its copy copies again.
 * The provider reads with pread(), never through a mapping, so a
 * segment someone truncates cannot fault it; the map alone is mapped
 * (read-only) because map_addr hands it to the application.
 */
#define IWARP_AV_SHM_MAGIC	0x3176617077726169ULL	/* "iwarpav1" */
#define IWARP_AV_SHM_VERSION	1
#define IWARP_AV_SHM_MIN_CAP	1024
#define IWARP_AV_SHM_TRIES	16

struct iwarp_av_shm_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t family;
	uint64_t cap;		/* entries the segment holds */
	uint64_t count;		/* entries [0, count) may be in use */
	uint64_t gen;
};

struct iwarp_av_shm_ent {
	uint8_t addr[sizeof(struct sockaddr_in6)];
	uint32_t used;		/* 0 or 1 */
};

_Static_assert(sizeof(struct iwarp_av_shm_hdr) == 40, "shm header");
_Static_assert(sizeof(struct iwarp_av_shm_ent) == 32, "shm entry");

static off_t iwarp_av_shm_off(size_t i)
{
	return (off_t)(sizeof(struct iwarp_av_shm_hdr) +
		       i * sizeof(struct iwarp_av_shm_ent));
}

static off_t iwarp_av_shm_map_off(size_t cap)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (off_t)(((size_t)iwarp_av_shm_off(cap) + pg - 1) / pg * pg);
}

static size_t iwarp_av_shm_size(size_t cap)
{
	return (size_t)iwarp_av_shm_map_off(cap) + cap * sizeof(fi_addr_t);
}

int iwarp_av_shm_path(const char *name, char *out, size_t len)
{
	struct stat st;
	size_t i, n = name ? strlen(name) : 0;

	if (!n || n > 200)
		return -FI_EINVAL;
	for (i = 0; i < n; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._-", name[i]))
			return -FI_EINVAL;
	/* addresses mean something only inside one network namespace */
	if (stat("/proc/self/ns/net", &st))
		st.st_ino = 0;
	if (snprintf(out, len, "/iwarp-av.%llu.%s",
		     (unsigned long long)st.st_ino, name) >= (int)len)
		return -FI_EINVAL;
	return 0;
}

static bool iwarp_av_pwrite(int fd, const void *p, size_t n, off_t off)
{
	return pwrite(fd, p, n, off) == (ssize_t)n;
}

static void iwarp_av_shm_gen(struct iwarp_av *av)
{
	av->shm_gen++;
	iwarp_av_pwrite(av->shm_fd, &av->shm_gen, sizeof(av->shm_gen),
			offsetof(struct iwarp_av_shm_hdr, gen));
}

/* Creator, lock held: entry i and the count, between two gen steps. */
static void iwarp_av_shm_put(struct iwarp_av *av, size_t i)
{
	struct iwarp_av_shm_ent e = { .used = av->tab[i].used };
	fi_addr_t fa = e.used ? (fi_addr_t)i : FI_ADDR_NOTAVAIL;
	uint64_t count = av->count;
	off_t moff;

	if (!av->shm_owner)
		return;
	moff = iwarp_av_shm_map_off(av->cap) + (off_t)(i * sizeof(fa));
	memcpy(e.addr, &av->tab[i].addr, iwarp_sa_len(&av->tab[i].addr.sa));
	iwarp_av_shm_gen(av);
	if (!iwarp_av_pwrite(av->shm_fd, &e, sizeof(e), iwarp_av_shm_off(i)) ||
	    !iwarp_av_pwrite(av->shm_fd, &fa, sizeof(fa), moff) ||
	    !iwarp_av_pwrite(av->shm_fd, &count, sizeof(count),
			     offsetof(struct iwarp_av_shm_hdr, count)))
		FI_WARN(&iwarp_prov, FI_LOG_AV, "shared AV %s: write failed\n",
			av->shm_name);
	iwarp_av_shm_gen(av);
}

/* A header worth reading entries by: ours, our family, our size. */
static bool iwarp_av_shm_hdr_ok(const struct iwarp_av *av,
				const struct iwarp_av_shm_hdr *h)
{
	return h->magic == IWARP_AV_SHM_MAGIC &&
	       h->version == IWARP_AV_SHM_VERSION &&
	       h->family == av->family && h->cap == av->cap &&
	       h->count <= h->cap;
}

static bool iwarp_av_shm_read_hdr(struct iwarp_av *av,
				  struct iwarp_av_shm_hdr *h)
{
	return pread(av->shm_fd, h, sizeof(*h), 0) == sizeof(*h) &&
	       iwarp_av_shm_hdr_ok(av, h);
}

/* Entry e as a name this AV may hold, else false. */
static bool iwarp_av_shm_ent_ok(const struct iwarp_av *av,
				const struct iwarp_av_shm_ent *e,
				union iwarp_sockaddr *a)
{
	memset(a, 0, sizeof(*a));
	memcpy(a, e->addr, av->addrlen);
	return e->used == 1 && iwarp_av_check(av, a) == 0;
}

/* Lock held. Makes entry i what the creator's is; false if invalid. */
static bool iwarp_av_shm_apply(struct iwarp_av *av, size_t i,
			       const struct iwarp_av_shm_ent *e)
{
	union iwarp_sockaddr a;
	bool ok = iwarp_av_shm_ent_ok(av, e, &a);

	if (av->tab[i].used &&
	    (!ok || !iwarp_addr_equal(&av->tab[i].addr, &a)))
		iwarp_av_drop(av, i);
	if (ok && !av->tab[i].used) {
		av->tab[i].addr = a;
		av->tab[i].used = true;
		iwarp_av_hash_add(av, i);
	}
	if (ok && i >= av->count)
		av->count = i + 1;
	return ok || e->used == 0;
}

/*
 * Lock held. One consistent copy of the creator's entries: 0, -FI_EAGAIN
 * if the creator kept writing, -FI_EINVAL for a header or entries that
 * are not a valid segment of ours (or a truncated one).
 */
static int iwarp_av_shm_copy(struct iwarp_av *av,
			     struct iwarp_av_shm_ent *ents, int *bad)
{
	struct iwarp_av_shm_hdr h, h2;
	size_t i, n;
	int tries;

	for (tries = 0; tries < IWARP_AV_SHM_TRIES; tries++) {
		if (!iwarp_av_shm_read_hdr(av, &h))
			return -FI_EINVAL;
		if (h.gen == av->shm_gen)
			return 0;
		if (h.gen & 1)
			continue;
		n = (size_t)h.count * sizeof(*ents);
		if (pread(av->shm_fd, ents, n, iwarp_av_shm_off(0)) !=
		    (ssize_t)n)
			return -FI_EINVAL;
		if (!iwarp_av_shm_read_hdr(av, &h2))
			return -FI_EINVAL;
		if (h2.gen != h.gen)
			continue;
		*bad = 0;
		for (i = 0; i < h.count; i++)
			if (!iwarp_av_shm_apply(av, i, &ents[i]))
				(*bad)++;
		for (; i < av->count; i++)
			if (av->tab[i].used)
				iwarp_av_drop(av, i);
		av->shm_gen = h.gen;
		return 0;
	}
	return -FI_EAGAIN;
}

/* Reader, lock held. 0, or why the segment cannot be trusted. */
static int iwarp_av_shm_sync(struct iwarp_av *av, int *bad)
{
	struct iwarp_av_shm_ent *ents;
	int ret;

	*bad = 0;
	ents = malloc(av->cap * sizeof(*ents));
	if (!ents)
		return -FI_ENOMEM;
	ret = iwarp_av_shm_copy(av, ents, bad);
	free(ents);
	return ret;
}

/* A miss costs one pread() of the header when nothing changed. */
static void iwarp_av_shm_refresh(struct iwarp_av *av)
{
	struct iwarp_av_shm_hdr h;
	int bad, ret;

	if (iwarp_av_shm_read_hdr(av, &h) && h.gen == av->shm_gen)
		return;
	ret = iwarp_av_shm_sync(av, &bad);

	if (ret || bad)
		FI_WARN(&iwarp_prov, FI_LOG_AV,
			"shared AV %s: %s, %d bad entries skipped\n",
			av->shm_name, ret ? fi_strerror(-ret) : "updated",
			bad);
}

/* The segment must be our user's own, not writable by others. */
static int iwarp_av_shm_check_file(int fd, const struct iwarp_av *av)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return -FI_EACCES;
	if ((size_t)st.st_size < (size_t)iwarp_av_shm_off(0))
		return -FI_EINVAL;
	return 0;
}

/* A segment too short for cap entries and their map. */
static bool iwarp_av_shm_short(int fd, size_t cap)
{
	struct stat st;

	return fstat(fd, &st) || (size_t)st.st_size < iwarp_av_shm_size(cap);
}

/* FI_READ: the creator's capacity decides ours; a copy at once. */
static int iwarp_av_shm_open_ro(struct iwarp_av *av)
{
	struct iwarp_av_shm_hdr h;
	int bad, ret;

	av->shm_fd = shm_open(av->shm_name, O_RDONLY | O_CLOEXEC, 0);
	if (av->shm_fd < 0)
		return errno == ENOENT ? -FI_ENOENT : -errno;
	ret = iwarp_av_shm_check_file(av->shm_fd, av);
	if (ret)
		return ret;
	if (pread(av->shm_fd, &h, sizeof(h), 0) != sizeof(h))
		return -FI_EINVAL;
	if (h.cap < IWARP_AV_MIN_CAP || h.cap > IWARP_AV_MAX_INIT_CAP ||
	    iwarp_av_shm_short(av->shm_fd, (size_t)h.cap))
		return -FI_EINVAL;
	ret = iwarp_av_resize(av, (size_t)h.cap);
	if (ret)
		return ret;
	av->max_cap = av->cap;
	av->read_only = true;
	av->shm_gen = 1;	/* odd: never what a reader accepts */
	ret = iwarp_av_shm_sync(av, &bad);
	return ret ? ret : bad ? -FI_EINVAL : 0;
}

/* An existing segment whose creator holds no lock on it is left over
 * from a process that ended: replace it. */
static int iwarp_av_shm_create_fd(const char *name)
{
	int fd, tries;

	for (tries = 0; tries < 2; tries++) {
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC,
			      0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST)
			return -errno;
		fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
		if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB)) {
			iw_fd_close(fd);
			return -FI_EBUSY;	/* a live creator */
		}
		if (fd >= 0)
			iw_fd_close(fd);
		shm_unlink(name);
	}
	if (fd < 0)
		return -FI_EBUSY;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		iw_fd_close(fd);
		return -FI_EBUSY;
	}
	return fd;
}

static int iwarp_av_shm_create(struct iwarp_av *av)
{
	struct iwarp_av_shm_hdr h = {
		.magic = IWARP_AV_SHM_MAGIC, .version = IWARP_AV_SHM_VERSION,
		.family = av->family, .cap = av->cap,
	};
	int fd = iwarp_av_shm_create_fd(av->shm_name);

	if (fd < 0)
		return fd;
	av->shm_fd = fd;
	av->shm_owner = true;
	av->max_cap = av->cap;
	if (ftruncate(fd, (off_t)iwarp_av_shm_size(av->cap)) ||
	    !iwarp_av_pwrite(fd, &h, sizeof(h), 0))
		return -errno;
	return 0;
}

/* The map, mapped read-only: the application reads it, we never do. */
static int iwarp_av_shm_map(struct iwarp_av *av)
{
	size_t len = av->cap * sizeof(fi_addr_t);
	void *p;

	p = mmap(NULL, len, PROT_READ, MAP_SHARED, av->shm_fd,
		 iwarp_av_shm_map_off(av->cap));
	if (p == MAP_FAILED)
		return -errno;
	av->map = p;
	return 0;
}

/* The creator's map starts with every index unused. */
static int iwarp_av_shm_map_init(struct iwarp_av *av)
{
	fi_addr_t none = FI_ADDR_NOTAVAIL;
	size_t i;

	for (i = 0; i < av->cap; i++)
		if (!iwarp_av_pwrite(av->shm_fd, &none, sizeof(none),
				     iwarp_av_shm_map_off(av->cap) +
				     i * sizeof(none)))
			return -FI_EIO;
	return 0;
}

static void iwarp_av_shm_close(struct iwarp_av *av)
{
	if (av->shm_owner)
		shm_unlink(av->shm_name);
	if (av->shm_fd >= 0)
		iw_fd_close(av->shm_fd);
	if (av->map)
		munmap(av->map, av->cap * sizeof(fi_addr_t));
	free(av->shm_name);
}

/*
 * A named AV: the creator's capacity is fixed at max(count, 1024)
 * entries; FI_READ opens what a creator made. map_addr, if the caller
 * left it NULL, becomes an array of the fi_addr_t of every index.
 */
static int iwarp_av_shm_open(struct iwarp_av *av, struct fi_av_attr *attr)
{
	char path[256];
	size_t cap;
	int ret;

	ret = iwarp_av_shm_path(attr->name, path, sizeof(path));
	if (ret)
		return ret;
	av->shm_name = strdup(path);
	if (!av->shm_name)
		return -FI_ENOMEM;
	if (attr->flags & FI_READ) {
		ret = iwarp_av_shm_open_ro(av);
	} else {
		cap = attr->count > IWARP_AV_SHM_MIN_CAP ? attr->count :
		      IWARP_AV_SHM_MIN_CAP;
		cap = cap > IWARP_AV_MAX_INIT_CAP ? IWARP_AV_MAX_INIT_CAP : cap;
		ret = iwarp_av_resize(av, cap);
		if (!ret)
			ret = iwarp_av_shm_create(av);
		if (!ret)
			ret = iwarp_av_shm_map_init(av);
	}
	if (!ret)
		ret = iwarp_av_shm_map(av);
	if (ret)
		return ret;
	if (!attr->map_addr)
		attr->map_addr = av->map;
	return 0;
}

/* ---- the object */

static void iwarp_av_free(struct iwarp_av *av)
{
	iwarp_av_shm_close(av);
	free(av->hash);
	free(av->tab);
	free(av);
}

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
	iwarp_av_free(av);
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
	.av_set = iwarp_av_set_open,
};

/*
 * FI_EVENT (asynchronous inserts) and receive context bits are not
 * supported; FI_READ needs a name (fi_av(3)).
 */
static int iwarp_av_check_attr(const struct fi_av_attr *attr)
{
	if (!attr)
		return -FI_EINVAL;
	if (attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP &&
	    attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr->flags & FI_EVENT)
		return -FI_ENOSYS;
	if (attr->flags & ~(uint64_t)(IWARP_AV_OPEN_FLAGS | FI_READ))
		return -FI_EBADFLAGS;
	if ((attr->flags & FI_READ) && !attr->name)
		return -FI_EINVAL;
	if (attr->rx_ctx_bits < 0 ||
	    attr->rx_ctx_bits > IWARP_AV_RX_CTX_BITS_MAX)
		return -FI_EINVAL;
	return 0;
}

/* The table: sized by the hint, or by the segment for a named AV. */
static int iwarp_av_init_tab(struct iwarp_av *av, struct fi_av_attr *attr)
{
	size_t cap;

	av->shm_fd = -1;
	av->family = av->dom->iface.addr.sa.sa_family;
	av->addrlen = iwarp_sa_len(&av->dom->iface.addr.sa);
	if (attr->name)
		return iwarp_av_shm_open(av, attr);
	cap = attr->count < IWARP_AV_MIN_CAP ? IWARP_AV_MIN_CAP :
	      attr->count > IWARP_AV_MAX_INIT_CAP ? IWARP_AV_MAX_INIT_CAP :
	      attr->count;
	return iwarp_av_resize(av, cap);
}

int iwarp_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av_fid, void *context)
{
	struct iwarp_domain *dom = iwarp_domain_of(&domain->fid);
	struct iwarp_av *av;
	int ret;

	ret = iwarp_av_check_attr(attr);
	if (ret)
		return ret;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->dom = dom;
	av->rx_ctx_bits = attr->rx_ctx_bits;
	av->fab = dom->fabric;
	ret = iwarp_av_init_tab(av, attr);
	if (ret) {
		FI_WARN(&iwarp_prov, FI_LOG_AV, "AV %s not opened: %s\n",
			attr->name ? attr->name : "", fi_strerror(-ret));
		iwarp_av_free(av);
		return ret;
	}
	/* fi_av(3) 2.x deprecates FI_AV_MAP; both index a table here */
	if (attr->type == FI_AV_UNSPEC)
		attr->type = iwarp_api_v2(dom->fabric->fabric_fid.api_version) ?
			     FI_AV_TABLE : FI_AV_MAP;
	av->type = attr->type;
	atomic_init(&av->ref, 0);
	atomic_fetch_add(&dom->ref, 1);
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &iwarp_av_fi_ops;
	av->av_fid.ops = &iwarp_av_ops;
	*av_fid = &av->av_fid;
	FI_INFO(&iwarp_prov, FI_LOG_AV, "opened %s AV of %zu entries%s%s\n",
		av->type == FI_AV_MAP ? "map" : "table", av->cap,
		av->shm_name ? " shared as " : "",
		av->shm_name ? av->shm_name : "");
	return 0;
}
