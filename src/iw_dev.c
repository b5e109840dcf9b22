/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Engine device: protection domains and the STag table. An STag is a
 * 20-bit table index plus a 12-bit random key that is never zero, so it
 * cannot be guessed from a neighbour and never equals the STag 1 that
 * RTR messages carry.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "iw_priv.h"

static _Atomic uint64_t iw_fd_closes;

int iw_fd_close(int fd)
{
	atomic_fetch_add_explicit(&iw_fd_closes, 1, memory_order_relaxed);
	return close(fd);
}

uint64_t iw_fd_close_count(void)
{
	return atomic_load_explicit(&iw_fd_closes, memory_order_relaxed);
}

uint64_t iw_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void iw_log(struct iw_dev *dev, int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!iw_log_on(dev, level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dev->log(dev->log_arg, level, msg);
}

/* xorshift64*, seeded from the kernel: keys must not be predictable */
uint64_t iw_random(struct iw_dev *dev)
{
	uint64_t x = dev->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	dev->rng = x;
	return x * 0x2545F4914F6CDD1DULL;
}

uint64_t iw_dev_random(struct iw_dev *dev)
{
	return iw_random(dev);
}

static uint64_t iw_seed(void)
{
	uint64_t s = 0;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		if (read(fd, &s, sizeof(s)) != sizeof(s))
			s = 0;
		iw_fd_close(fd);
	}
	if (!s)
		s = iw_now_ms() * 0x9E3779B97F4A7C15ULL ^ (uint64_t)getpid();
	return s | 1;
}

int iw_dev_open(struct iw_dev **dev)
{
	struct iw_dev *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	d->rng = iw_seed();
	d->log_max = IW_LOG_DEBUG;
	d->nstags = 1;		/* index 0 is never handed out */
	*dev = d;
	return 0;
}

int iw_dev_close(struct iw_dev *dev)
{
	if (dev->npd)
		return -EBUSY;
	free(dev->stags);
	free(dev->free_idx);
	free(dev);
	return 0;
}

void iw_dev_set_log(struct iw_dev *dev, iw_log_fn fn, void *arg)
{
	dev->log = fn;
	dev->log_arg = arg;
}

void iw_dev_set_log_max(struct iw_dev *dev, int level)
{
	dev->log_max = level & IW_LOG_LEVEL_MASK;
}

int iw_pd_alloc(struct iw_dev *dev, struct iw_pd **pd)
{
	struct iw_pd *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->dev = dev;
	dev->npd++;
	*pd = p;
	return 0;
}

void *iw_pd_take(void **pool, size_t size)
{
	void *b = *pool;

	if (!b)
		return malloc(size);
	*pool = *(void **)b;
	return b;
}

void iw_pd_give(void **pool, void *buf)
{
	if (!buf)
		return;
	*(void **)buf = *pool;
	*pool = buf;
}

static void iw_pd_drain(void **pool)
{
	while (*pool) {
		void *b = *pool;

		*pool = *(void **)b;
		free(b);
	}
}

int iw_pd_free(struct iw_pd *pd)
{
	if (pd->nmr || pd->nqp)
		return -EBUSY;
	iw_pd_drain(&pd->stage_pool);
	iw_pd_drain(&pd->txb_pool);
	pd->dev->npd--;
	free(pd);
	return 0;
}

static struct iw_mr **iw_ukey_slot(struct iw_dev *dev, uint32_t stag)
{
	struct iw_mr **pp = &dev->ukeys[(stag ^ stag >> 8 ^ stag >> 16 ^
					 stag >> 24) % IW_UKEY_BUCKETS];

	while (*pp && (*pp)->stag != stag)
		pp = &(*pp)->unext;
	return pp;
}

static struct iw_mr *iw_ukey_find(struct iw_dev *dev, uint32_t stag)
{
	return dev->nukeys ? *iw_ukey_slot(dev, stag) : NULL;
}

/* Never one a region registered under a chosen STag has. */
static uint32_t iw_stag_make(struct iw_dev *dev, uint32_t idx)
{
	uint32_t key = 0;

	while (!key || iw_ukey_find(dev, idx << IW_STAG_KEY_BITS | key))
		key = (uint32_t)(iw_random(dev) >> 40) & IW_STAG_KEY_MASK;
	return idx << IW_STAG_KEY_BITS | key;
}

static int iw_stag_slot(struct iw_dev *dev, uint32_t *idx)
{
	if (dev->nfree) {
		*idx = dev->free_idx[--dev->nfree];
		return 0;
	}
	if (dev->nstags > IW_STAG_IDX_MASK)
		return -ENOSPC;
	if (dev->nstags >= dev->cap) {
		uint32_t cap = dev->cap ? dev->cap * 2 : 64;
		struct iw_mr **t = realloc(dev->stags, cap * sizeof(*t));
		uint32_t *f;

		if (!t)
			return -ENOMEM;
		dev->stags = t;
		f = realloc(dev->free_idx, cap * sizeof(*f));
		if (!f)
			return -ENOMEM;
		dev->free_idx = f;
		dev->cap = cap;
	}
	*idx = dev->nstags++;
	return 0;
}

struct iw_mr *iw_stag_lookup(struct iw_dev *dev, uint32_t stag)
{
	uint32_t idx = iw_stag_idx(stag);
	struct iw_mr *mr = NULL;

	if (idx && idx < dev->nstags)
		mr = dev->stags[idx];
	if (!mr || mr->stag != stag)
		mr = iw_ukey_find(dev, stag);
	return mr && mr->valid ? mr : NULL;
}

void *iw_mr_translate(struct iw_pd *pd, uint32_t stag, uint64_t to,
		      uint64_t len, unsigned int access, uint8_t *ecode)
{
	struct iw_mr *mr = iw_stag_lookup(pd->dev, stag);

	if (!mr)
		*ecode = RDMAP_ECODE_INVALID_STAG;
	else if (mr->pd != pd)
		*ecode = RDMAP_ECODE_STAG_NOT_ASSOC;
	else if ((mr->access & access) != access)
		*ecode = RDMAP_ECODE_ACCESS;
	else if (to + len < to)
		*ecode = RDMAP_ECODE_TO_WRAP;
	else if (to < mr->base_to || to + len > mr->base_to + mr->len)
		*ecode = RDMAP_ECODE_BASE_BOUNDS;
	else
		return mr->addr + (to - mr->base_to);
	return NULL;
}

static struct iw_mr *iw_mr_new(struct iw_pd *pd, void *addr, size_t len,
				uint64_t base_to, unsigned int access)
{
	struct iw_mr *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->pd = pd;
	m->addr = addr;
	m->len = len;
	m->base_to = base_to;
	m->access = access;
	m->valid = true;
	return m;
}

int iw_mr_reg(struct iw_pd *pd, void *addr, size_t len, uint64_t base_to,
	      unsigned int access, struct iw_mr **mr)
{
	struct iw_dev *dev = pd->dev;
	struct iw_mr *m;
	uint32_t idx;
	int ret;

	if ((!addr && len) || base_to + len < base_to)
		return -EINVAL;
	m = iw_mr_new(pd, addr, len, base_to, access);
	if (!m)
		return -ENOMEM;
	ret = iw_stag_slot(dev, &idx);
	if (ret) {
		free(m);
		return ret;
	}
	m->stag = iw_stag_make(dev, idx);
	dev->stags[idx] = m;
	pd->nmr++;
	*mr = m;
	return 0;
}

int iw_mr_reg_stag(struct iw_pd *pd, void *addr, size_t len,
		   uint64_t base_to, unsigned int access, uint32_t stag,
		   struct iw_mr **mr)
{
	struct iw_dev *dev = pd->dev;
	uint32_t idx = iw_stag_idx(stag);
	struct iw_mr *m;

	if ((!addr && len) || base_to + len < base_to)
		return -EINVAL;
	if ((idx && idx < dev->nstags && dev->stags[idx] &&
	     dev->stags[idx]->stag == stag) || iw_ukey_find(dev, stag))
		return -EEXIST;
	m = iw_mr_new(pd, addr, len, base_to, access);
	if (!m)
		return -ENOMEM;
	m->stag = stag;
	m->ukey = true;
	*iw_ukey_slot(dev, stag) = m;
	dev->nukeys++;
	pd->nmr++;
	*mr = m;
	return 0;
}

int iw_mr_dereg(struct iw_mr *mr)
{
	struct iw_dev *dev = mr->pd->dev;
	uint32_t idx = iw_stag_idx(mr->stag);

	if (mr->ukey) {
		*iw_ukey_slot(dev, mr->stag) = mr->unext;
		dev->nukeys--;
		mr->pd->nmr--;
		free(mr);
		return 0;
	}
	dev->stags[idx] = NULL;
	dev->free_idx[dev->nfree++] = idx;
	mr->pd->nmr--;
	free(mr);
	return 0;
}

uint32_t iw_mr_stag(const struct iw_mr *mr)
{
	return mr->stag;
}

void iw_mr_set_ctx(struct iw_mr *mr, void *ctx)
{
	mr->ctx = ctx;
}

int iw_mr_invalidate(struct iw_mr *mr)
{
	mr->valid = false;
	return 0;
}

bool iw_mr_valid(const struct iw_mr *mr)
{
	return mr->valid;
}

uint32_t iw_mr_rekey(struct iw_mr *mr)
{
	uint32_t idx = iw_stag_idx(mr->stag);
	uint32_t cur = mr->stag;
	uint32_t s;

	mr->valid = true;
	if (mr->ukey)
		return mr->stag;	/* the chosen one stays */
	/*
	 * A peer may still hold the key before the current one (a request
	 * in flight across two invalidations): neither comes back next.
	 */
	do
		s = iw_stag_make(mr->pd->dev, idx);
	while (s == cur || s == mr->old_stag);
	mr->old_stag = cur;
	mr->stag = s;
	return s;
}

/* glibc maps blocks this large anyway; below it the heap is cheaper */
#define IW_MEM_MAP_MIN (128u << 10)
/*
 * Freed blocks kept for the next of the same length, their pages still
 * in: an endpoint closed and another opened (a client reconnecting)
 * costs neither the mapping calls nor the page faults again, and
 * iw_mem_ready prepares one ahead for a server. Bounded in count and in
 * the length of each, so what stays allocated is small.
 */
#define IW_MEM_SPARES		4
#define IW_MEM_SPARE_MIN	(16u << 10)
#define IW_MEM_SPARE_MAX	(1u << 20)

static void *iw_mem_new(size_t len)
{
	void *p;

	if (len < IW_MEM_MAP_MIN)
		return malloc(len);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void iw_mem_release(void *p, size_t len)
{
	if (len < IW_MEM_MAP_MIN)
		free(p);
	else
		munmap(p, len);
}

/* Blocks of this length may be kept as spares. */
static bool iw_mem_spare_len(size_t len)
{
	return len >= IW_MEM_SPARE_MIN && len <= IW_MEM_SPARE_MAX;
}

static struct {
	void *p;
	size_t len;
} iw_mem_spare[IW_MEM_SPARES];
static bool iw_mem_spare_lock;
static unsigned int iw_mem_spare_next;	/* the one to give way */

static void iw_mem_lock(void)
{
	while (__atomic_test_and_set(&iw_mem_spare_lock, __ATOMIC_ACQUIRE))
		;
}

static void iw_mem_unlock(void)
{
	__atomic_clear(&iw_mem_spare_lock, __ATOMIC_RELEASE);
}

/* A spare of exactly len (taken out), or NULL. */
static void *iw_mem_spare_take(size_t len)
{
	void *p = NULL;
	int i;

	iw_mem_lock();
	for (i = 0; i < IW_MEM_SPARES; i++) {
		if (iw_mem_spare[i].p && iw_mem_spare[i].len == len) {
			p = iw_mem_spare[i].p;
			iw_mem_spare[i].p = NULL;
			break;
		}
	}
	iw_mem_unlock();
	return p;
}

/* Keeps p as a spare; when all are taken, one gives way in turn (and is
 * released), since what was freed or prepared last is likeliest to be
 * asked for next. With only_new, nothing is kept if a spare of its
 * length exists. */
static bool iw_mem_spare_put(void *p, size_t len, bool only_new)
{
	void *old = NULL;
	size_t old_len = 0;
	int i, room = -1;

	if (!iw_mem_spare_len(len))
		return false;
	iw_mem_lock();
	for (i = 0; i < IW_MEM_SPARES; i++) {
		if (only_new && iw_mem_spare[i].p &&
		    iw_mem_spare[i].len == len) {
			iw_mem_unlock();
			return false;
		}
		if (!iw_mem_spare[i].p && room < 0)
			room = i;
	}
	if (room < 0) {
		room = (int)(iw_mem_spare_next++ % IW_MEM_SPARES);
		old = iw_mem_spare[room].p;
		old_len = iw_mem_spare[room].len;
	}
	iw_mem_spare[room].p = p;
	iw_mem_spare[room].len = len;
	iw_mem_unlock();
	if (old)
		iw_mem_release(old, old_len);
	return true;
}

static bool iw_mem_spare_has(size_t len)
{
	bool has = false;
	int i;

	iw_mem_lock();
	for (i = 0; i < IW_MEM_SPARES; i++)
		has |= iw_mem_spare[i].p && iw_mem_spare[i].len == len;
	iw_mem_unlock();
	return has;
}

void *iw_mem_alloc(size_t len)
{
	void *p = NULL;

	if (iw_mem_spare_len(len))
		p = iw_mem_spare_take(len);
	return p ? p : iw_mem_new(len);
}

void iw_mem_free(void *p, size_t len)
{
	if (p && !iw_mem_spare_put(p, len, false))
		iw_mem_release(p, len);
}

void iw_mem_spares_free(void)
{
	int i;

	iw_mem_lock();
	for (i = 0; i < IW_MEM_SPARES; i++) {
		if (iw_mem_spare[i].p)
			iw_mem_release(iw_mem_spare[i].p, iw_mem_spare[i].len);
		iw_mem_spare[i].p = NULL;
	}
	iw_mem_unlock();
}

void iw_mem_ready(size_t len, const struct iw_mem_span *span, int nspan)
{
	volatile uint8_t *p;
	size_t off, last;
	int i;

	if (!iw_mem_spare_len(len) || iw_mem_spare_has(len))
		return;
	p = iw_mem_new(len);
	if (!p)
		return;
	/* a write fault maps each page (a heap block need not start one) */
	for (i = 0; i < nspan; i++) {
		if (!span[i].len || span[i].off >= len)
			continue;
		last = span[i].off + span[i].len - 1;
		if (last >= len)
			last = len - 1;
		for (off = span[i].off; off <= last; off += 4096)
			p[off] = 0;
		p[last] = 0;
	}
	if (!iw_mem_spare_put((void *)p, len, true))
		iw_mem_release((void *)p, len);
}
