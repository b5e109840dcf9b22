/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI one-sided (RMA) correctness test for any number of ranks >= 2; every
 * value moved is checked against what it must be:
 *  - MPI_Put/MPI_Get of 1 B..4 MiB pieces at random offsets, in fence
 *    epochs, under MPI_LOCK_EXCLUSIVE, MPI_LOCK_SHARED and
 *    MPI_Win_lock_all with MPI_Win_flush, each on an MPI_Win_allocate and
 *    an MPI_Win_create window; the bytes around the pieces must stay
 *    untouched;
 *  - progress of a get aimed at a rank that polls its own window;
 *  - an exclusive lock protecting a read-modify-write of a 4 KiB block;
 *  - MPI_Accumulate (MPI_SUM, MPI_MAX, MPI_MIN, MPI_REPLACE on int32,
 *    uint32, int64, uint64, double) from all ranks into one target;
 *  - MPI_Fetch_and_op: a shared counter (MPI_SUM) whose fetched values must
 *    be 0..nranks*N-1 once each, and a chain of swaps (MPI_REPLACE) in
 *    which every value written is fetched exactly once; MPI_NO_OP reads;
 *  - MPI_Compare_and_swap: first writer wins, a spin lock, and a chain of
 *    successful swaps that must form one sequence;
 *  - MPI_Get_accumulate with MPI_SUM, element by element.
 * The atomics use MPI_Win_create windows (see NO_LOCAL_CAS64 below).
 * Byte patterns depend on (origin rank, target rank, offset, iteration).
 * Failures print "rank N: <test>: <what> expected X got Y"; rank 0 ends
 * with "mpi_osc OK" when everything passed, and calls MPI_Abort otherwise.
 * A test still running after TEST_TIMEOUT seconds names itself (and,
 * in the spin lock, the step each rank is at) and ends the job.
 *
 * Usage: mpi_osc [SEED] (offsets and sizes derive from SEED, default 1).
 * With MPI_OSC_SABOTAGE=TEXT in the environment, the last rank corrupts
 * one received value in each test whose name contains TEXT before checking
 * it: a debugging aid proving that the checks can fail.
 */
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TEST_TIMEOUT 60		/* seconds one test may take */
#define DEADLINE 30.0		/* seconds a retry loop may spin */

#define WIN_BYTES ((4L << 20) + (64L << 10) + 3)	/* Win_allocate */
#define CREATE_BYTES ((3L << 20) + 517)		/* Win_create */
#define MAX_PUT (4L << 20)	/* largest single MPI_Put/MPI_Get */
#define SRC_SKEW 4093		/* origin buffers are not at the target */
#define DST_SKEW 1237		/* offsets, so that mixing them up shows */
#define MAXP 256		/* pieces per epoch */
#define BG (-1)			/* pat() origin of a window's background */
#define SENTINEL (-2)		/* ... and of a get buffer's */
#define ALLOCATE 0		/* window flavors: MPI_Win_allocate */
#define CREATE 1		/* MPI_Win_create on malloc'd memory */

/*
 * Open MPI's osc rdma before 4.1.5 hands a 64-bit MPI_Compare_and_swap on
 * a window's local memory (every rank's in an MPI_Win_allocate window on
 * one node, the caller's own in an MPI_Win_create one) to the btl with a
 * NULL registration handle: a crash in the btl (fixed upstream by "RDMA
 * osc: perform CAS in shared memory if possible"). Through 4.1.x it also
 * hands accumulates of up to osc_rdma_network_max_amo (32) integers to
 * the btl as atomics whatever the op, and btl ofi aborts on all but
 * MPI_SUM and MPI_REPLACE. There, the 64-bit compare-and-swap tests leave
 * the target's own rank out, and integer MPI_MAX/MPI_MIN accumulates use
 * counts above 32. On one node, osc rdma reaches a peer's memory through
 * the btl only in MPI_Win_create windows, hence those for the atomics.
 */
#if defined(OPEN_MPI) && OPEN_MPI
#define NO_LOCAL_CAS64 (OMPI_MAJOR_VERSION * 10000 + \
			OMPI_MINOR_VERSION * 100 + OMPI_RELEASE_VERSION < 40105)
#define NO_SMALL_MINMAX (OMPI_MAJOR_VERSION < 5)
#else
#define NO_LOCAL_CAS64 0
#define NO_SMALL_MINMAX 0
#endif

static int rank, nranks, errors;
static const char *current = "init";
static const char *volatile step = "";	/* where a test is, for on_alarm */
static uint64_t seed0;

/* ---- diagnostics ---- */

static void say(int line, const char *fmt, va_list ap)
{
	char msg[600];
	int n;

	n = snprintf(msg, sizeof(msg), "rank %d: %s: ", rank, current);
	vsnprintf(msg + n, sizeof(msg) - n - 20, fmt, ap);
	n = (int)strlen(msg);
	snprintf(msg + n, sizeof(msg) - n, " (line %d)\n", line);
	fputs(msg, stderr);	/* one write: lines of ranks do not mix */
	fflush(stderr);
}

static void fail(int line, const char *fmt, ...)
{
	va_list ap;

	if (errors++ >= 20)
		return;
	va_start(ap, fmt);
	say(line, fmt, ap);
	va_end(ap);
}

/* A failure after which the test cannot go on (a lock never acquired) */
static void give_up(int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(line, fmt, ap);
	va_end(ap);
	MPI_Abort(MPI_COMM_WORLD, 3);
}

/*
 * As give_up, when another rank may be stuck inside MPI (the holder of a
 * lock that never comes free): we idle until the test's alarm, so that
 * the stuck rank's own alarm says where it is before anything aborts.
 */
static void give_up_late(int line, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(line, fmt, ap);
	va_end(ap);
	for (;;)
		pause();	/* on_alarm ends the process */
}

#define GIVE_UP_LATE(...) give_up_late(__LINE__, __VA_ARGS__)

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond))						\
			fail(__LINE__, __VA_ARGS__);			\
	} while (0)

#define GIVE_UP(...) give_up(__LINE__, __VA_ARGS__)

/* MPI calls on windows return their errors (MPI_ERRORS_RETURN): name them */
static void mpi_ok(int line, const char *call, int rc)
{
	char s[MPI_MAX_ERROR_STRING];
	int len = 0;

	if (rc == MPI_SUCCESS)
		return;
	MPI_Error_string(rc, s, &len);
	fprintf(stderr, "rank %d: %s: %.*s failed: %s (line %d)\n", rank,
		current, (int)strcspn(call, "("), call, s, line);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 2);
}

#define MUST(call) mpi_ok(__LINE__, #call, (call))

/* With MPI_OSC_SABOTAGE=TEXT, true on the last rank in tests naming TEXT */
static int sabotage(void)
{
	const char *s = getenv("MPI_OSC_SABOTAGE");

	return s && *s && rank == nranks - 1 && strstr(current, s);
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return p;
}

static int next_rank(int d)
{
	return (rank + d) % nranks;
}

static int prev_rank(int d)
{
	return (rank - d % nranks + nranks) % nranks;
}

/* ---- windows ---- */

struct win {
	MPI_Win win;
	unsigned char *base;
	long size;
	void *mem;		/* a Win_create window's malloc'd memory */
};

static void win_attr(struct win *w, int key, MPI_Aint expect,
		     const char *name)
{
	void *val;
	int flag = 0;
	MPI_Aint got;

	MUST(MPI_Win_get_attr(w->win, key, &val, &flag));
	CHECK(flag, "window attribute %s missing", name);
	if (!flag)
		return;
	if (key == MPI_WIN_BASE)
		got = (MPI_Aint)val;
	else if (key == MPI_WIN_SIZE)
		got = *(MPI_Aint *)val;
	else
		got = *(int *)val;
	CHECK(got == expect, "window attribute %s expected %ld got %ld", name,
	      (long)expect, (long)got);
}

/* Collective: a window of size bytes of the flavor ALLOCATE or CREATE */
static void win_open(struct win *w, long size, int disp, int flavor)
{
	static int told;
	int *model, flag = 0;

	w->size = size;
	w->mem = NULL;
	/* a missing osc component shows as an error here: say so */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (flavor == CREATE) {
		w->base = w->mem = xmalloc(size);
		MUST(MPI_Win_create(w->base, size, disp, MPI_INFO_NULL,
				    MPI_COMM_WORLD, &w->win));
	} else {
		MUST(MPI_Win_allocate(size, disp, MPI_INFO_NULL,
				      MPI_COMM_WORLD, &w->base, &w->win));
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	MUST(MPI_Win_set_errhandler(w->win, MPI_ERRORS_RETURN));
	win_attr(w, MPI_WIN_BASE, (MPI_Aint)w->base, "MPI_WIN_BASE");
	win_attr(w, MPI_WIN_SIZE, size, "MPI_WIN_SIZE");
	win_attr(w, MPI_WIN_DISP_UNIT, disp, "MPI_WIN_DISP_UNIT");
	win_attr(w, MPI_WIN_CREATE_FLAVOR, flavor == CREATE ?
		 MPI_WIN_FLAVOR_CREATE : MPI_WIN_FLAVOR_ALLOCATE,
		 "MPI_WIN_CREATE_FLAVOR");
	MUST(MPI_Win_get_attr(w->win, MPI_WIN_MODEL, &model, &flag));
	if (rank == 0 && !told++ && flag)
		printf("# window memory model: %s\n",
		       *model == MPI_WIN_UNIFIED ? "unified" : "separate");
}

static void win_close(struct win *w)
{
	MUST(MPI_Win_free(&w->win));
	free(w->mem);
}

/* ---- byte patterns and pieces ---- */

/* The byte at window offset off of data from rank o to t in iteration it */
static unsigned char pat(int o, int t, long off, int it)
{
	uint32_t x = (uint32_t)off * 2654435761u;

	x ^= (uint32_t)((o + 3) * 40503 + (t + 5) * 7919 + it * 104729) *
	     2246822519u;
	return (unsigned char)(x >> 24 ^ x >> 13);
}

static uint64_t rng(uint64_t *s)	/* splitmix64 */
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);

	z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ z >> 27) * 0x94D049BB133111EBull;
	return z ^ z >> 31;
}

static long rnd(uint64_t *s, long lo, long hi)	/* in [lo, hi] */
{
	return lo + (long)(rng(s) % (uint64_t)(hi - lo + 1));
}

/* The origin and the target of a transfer derive the same pieces from it */
static uint64_t seed_of(int o, int t, int it)
{
	uint64_t s = seed0 ^ (uint64_t)(o + 1) << 42 ^ (uint64_t)(t + 1) << 21 ^
		     (uint64_t)it;

	return rng(&s);
}

struct piece {
	long off, len;
};

/*
 * Lays out up to MAXP non-overlapping pieces in [base, base + span) in
 * ascending order, sized by kind: 0 tiny (1..64 B, the first exactly
 * 1 B), 1 medium (65 B..64 KiB), 2 large (64 KiB..1 MiB), 3 a single piece
 * of min(span, 4 MiB) at a random offset. Returns how many.
 */
static int make_pieces(struct piece *p, long base, long span, int kind,
		       uint64_t seed)
{
	static const long lo[] = { 1, 65, 64 << 10 },
			  hi[] = { 64, 64 << 10, 1 << 20 },
			  gap[] = { 200, 4096, 64 << 10 };
	uint64_t s = seed;
	long off, len;
	int n = 0;

	if (kind == 3) {
		len = span < MAX_PUT ? span : MAX_PUT;
		p[0].off = base + rnd(&s, 0, span - len);
		p[0].len = len;
		return 1;
	}
	off = rnd(&s, 0, gap[kind]);
	while (n < MAXP && off + lo[kind] <= span) {
		len = n == 0 && kind == 0 ? 1 : rnd(&s, lo[kind], hi[kind]);
		if (len > span - off)
			len = span - off;
		p[n].off = base + off;
		p[n].len = len;
		n++;
		off += len + rnd(&s, 0, gap[kind]);
	}
	return n;
}

/* buf[skew + x] = pat(o, t, x, it) for x in the pieces */
static void fill_pieces(unsigned char *buf, long skew, const struct piece *p,
			int np, int o, int t, int it)
{
	long x;
	int k;

	for (k = 0; k < np; k++)
		for (x = p[k].off; x < p[k].off + p[k].len; x++)
			buf[skew + x] = pat(o, t, x, it);
}

/* buf[skew + x] = pat(o, t, x, it) for x in [lo, hi) */
static void fill_span(unsigned char *buf, long skew, long lo, long hi, int o,
		      int t, int it)
{
	long x;

	for (x = lo; x < hi; x++)
		buf[skew + x] = pat(o, t, x, it);
}

static long first_bad(const unsigned char *buf, long skew, long lo, long hi,
		      int o, int t, int it)
{
	long x;

	for (x = lo; x < hi; x++)
		if (buf[skew + x] != pat(o, t, x, it))
			return x;
	return -1;
}

/*
 * Checks buf[skew + x] for x in [lo, hi): pat(o, t, x, it) inside the
 * pieces (ascending, within [lo, hi)), the background pat(bg, t, x, it)
 * everywhere else. what names the buffer. Returns the number of bad runs.
 */
static int check_span(const unsigned char *buf, long skew, long lo, long hi,
		      const struct piece *p, int np, int o, int t, int it,
		      int bg, const char *what)
{
	long x = lo, end, at;
	int k = 0, bad = 0, in;

	while (x < hi) {
		in = k < np && p[k].off <= x;
		end = in ? p[k].off + p[k].len : k < np ? p[k].off : hi;
		at = first_bad(buf, skew, x, end, in ? o : bg, t, it);
		if (at >= 0 && in)
			CHECK(0, "%s: offset %ld (byte %ld of the %ld-byte "
			      "piece at %ld, rank %d to %d, iteration %d) "
			      "expected 0x%02x got 0x%02x", what, at,
			      at - p[k].off, p[k].len, p[k].off, o, t, it,
			      pat(o, t, at, it), buf[skew + at]);
		else if (at >= 0)
			CHECK(0, "%s: offset %ld, outside the pieces (%ld..%ld "
			      "must stay untouched, iteration %d) expected "
			      "0x%02x got 0x%02x", what, at, x, end - 1, it,
			      pat(bg, t, at, it), buf[skew + at]);
		bad += at >= 0;
		k += in;
		x = end;
	}
	return bad;
}

static void put_pieces(const unsigned char *src, long skew,
		       const struct piece *p, int np, int t, MPI_Win win)
{
	int k;

	for (k = 0; k < np; k++)
		MUST(MPI_Put(src + (skew + p[k].off), (int)p[k].len, MPI_BYTE,
			     t, p[k].off, (int)p[k].len, MPI_BYTE, win));
}

static void get_pieces(unsigned char *dst, long skew, const struct piece *p,
		       int np, int t, MPI_Win win)
{
	int k;

	for (k = 0; k < np; k++)
		MUST(MPI_Get(dst + (skew + p[k].off), (int)p[k].len, MPI_BYTE,
			     t, p[k].off, (int)p[k].len, MPI_BYTE, win));
}

/* ---- typed values for the atomics ---- */

enum kind { K_I32, K_U32, K_I64, K_U64, K_DBL };
static const char *const kind_name[] = { "int32", "uint32", "int64",
					 "uint64", "double" };

typedef union {
	int64_t i;		/* int32 sign-extended */
	uint64_t u;		/* uint32 zero-extended */
	double d;
} val_t;

static int ksize(enum kind k)
{
	return k == K_I32 || k == K_U32 ? 4 : 8;
}

static MPI_Datatype kdt(enum kind k)
{
	switch (k) {
	case K_I32:
		return MPI_INT32_T;
	case K_U32:
		return MPI_UINT32_T;
	case K_I64:
		return MPI_INT64_T;
	case K_U64:
		return MPI_UINT64_T;
	default:
		return MPI_DOUBLE;
	}
}

static val_t load(enum kind k, const void *p)
{
	val_t v;
	int32_t i32;
	uint32_t u32;

	switch (k) {
	case K_I32:
		memcpy(&i32, p, 4);
		v.i = i32;
		break;
	case K_U32:
		memcpy(&u32, p, 4);
		v.u = u32;
		break;
	default:
		memcpy(&v, p, 8);
		break;
	}
	return v;
}

static void store(enum kind k, void *p, val_t v)
{
	int32_t i32 = (int32_t)v.i;
	uint32_t u32 = (uint32_t)v.u;

	if (k == K_I32)
		memcpy(p, &i32, 4);
	else if (k == K_U32)
		memcpy(p, &u32, 4);
	else
		memcpy(p, &v, 8);
}

static val_t norm(enum kind k, val_t v)	/* wrapped to the type's width */
{
	unsigned char b[8];

	store(k, b, v);
	return load(k, b);
}

static val_t ival(enum kind k, int64_t i)
{
	val_t v;

	v.i = i;
	return norm(k, v);
}

static int same(enum kind k, val_t a, val_t b)
{
	return norm(k, a).u == norm(k, b).u;
}

/* The bit pattern of v - base in the type's width, as a count */
static uint64_t rel(enum kind k, val_t v, val_t base)
{
	uint64_t d = v.u - base.u;

	return ksize(k) == 4 ? d & 0xffffffffu : d;
}

static const char *show(enum kind k, val_t v, char *s)	/* s[48] */
{
	v = norm(k, v);
	if (k == K_DBL)
		snprintf(s, 48, "%.17g", v.d);
	else if (k == K_U32 || k == K_U64)
		snprintf(s, 48, "%llu (0x%llx)", (unsigned long long)v.u,
			 (unsigned long long)v.u);
	else
		snprintf(s, 48, "%lld", (long long)v.i);
	return s;
}

/* a op b: what the target holds after an origin's b is applied to its a */
static val_t apply(enum kind k, MPI_Op op, val_t a, val_t b)
{
	val_t r = a;
	int gt;

	if (op == MPI_REPLACE) {
		r = b;
	} else if (op == MPI_SUM) {
		if (k == K_DBL)
			r.d = a.d + b.d;
		else
			r.u = a.u + b.u;
	} else if (op == MPI_MAX || op == MPI_MIN) {
		if (k == K_DBL)
			gt = a.d > b.d;
		else if (k == K_I32 || k == K_I64)
			gt = a.i > b.i;
		else
			gt = a.u > b.u;
		r = (op == MPI_MAX) == gt ? a : b;
	}
	return norm(k, r);
}

/*
 * Unique values: rank r's j-th (j < 65536), r = -1 for the initial one.
 * 64-bit tags all share their low half (and the initial uint64 value's
 * high half is 0), so that an operation on only 32 bits of them shows.
 */
static val_t tag(enum kind k, int r, int j)
{
	uint32_t t = (uint32_t)(r + 1) << 16 | (uint32_t)j;
	val_t v;

	switch (k) {
	case K_I32:
		v.i = (int32_t)t;
		break;
	case K_U32:
		v.u = t | 0x80000000u;
		break;
	case K_I64:
		v.i = -(int64_t)((uint64_t)t << 32 | 0x5A5A5A5Au);
		break;
	default:
		v.u = (uint64_t)t << 32 | 0x5A5A5A5Au;
		break;
	}
	return v;
}

/* Inverse of tag(): 0 with *r, *j set, or -1 if v is no tag. */
static int untag(enum kind k, val_t v, int *r, int *j)
{
	uint64_t t;

	v = norm(k, v);
	switch (k) {
	case K_I32:
		if (v.i < 0)
			return -1;
		t = (uint64_t)v.i;
		break;
	case K_U32:
		if (!(v.u & 0x80000000u))
			return -1;
		t = v.u & 0x7fffffffu;
		break;
	case K_I64:
		t = (uint64_t)0 - v.u;
		if ((t & 0xffffffffu) != 0x5A5A5A5Au || t >> 63)
			return -1;
		t >>= 32;
		break;
	default:
		if ((v.u & 0xffffffffu) != 0x5A5A5A5Au || v.u >> 63)
			return -1;
		t = v.u >> 32;
		break;
	}
	*r = (int)(t >> 16) - 1;
	*j = (int)(t & 0xffff);
	return *r < nranks && (*r >= 0 || *j == 0) ? 0 : -1;
}

/* tag index: 0 for the initial value, 1 + r * per + j for rank r's j-th */
static uint64_t tag_index(enum kind k, val_t v, int per)
{
	int r, j;

	if (untag(k, v, &r, &j) || j >= per)
		return UINT64_MAX;
	return r < 0 ? 0 : 1 + (uint64_t)r * per + j;
}

/*
 * Rank 0 gathers the count values of each rank (counts may differ),
 * appends extra if with_extra and checks that together they hold every
 * number 0..n-1 exactly once, n being how many there are. Collective.
 */
struct cover {
	int *counts, *displs;
	long total;
};

static const char *who(const struct cover *c, long i, char *s) /* s[64] */
{
	int r;

	for (r = 0; r < nranks; r++)
		if (i >= c->displs[r] && i < c->displs[r] + c->counts[r]) {
			snprintf(s, 64, "rank %d's operation %ld", r,
				 i - c->displs[r]);
			return s;
		}
	snprintf(s, 64, "the final value");
	return s;
}

static uint64_t *gather_all(const uint64_t *v, int count, struct cover *c)
{
	uint64_t *all = NULL;
	int r;

	c->total = 0;
	c->counts = c->displs = NULL;
	if (rank == 0) {
		c->counts = xmalloc(nranks * sizeof(int));
		c->displs = xmalloc(nranks * sizeof(int));
	}
	MPI_Gather(&count, 1, MPI_INT, c->counts, 1, MPI_INT, 0,
		   MPI_COMM_WORLD);
	if (rank == 0) {
		for (r = 0; r < nranks; r++) {
			c->displs[r] = (int)c->total;
			c->total += c->counts[r];
		}
		all = xmalloc((c->total + 1) * sizeof(*all));
	}
	MPI_Gatherv(v, count, MPI_UINT64_T, all, c->counts, c->displs,
		    MPI_UINT64_T, 0, MPI_COMM_WORLD);
	return all;
}

static void check_cover(const uint64_t *v, int count, int with_extra,
			uint64_t extra, const char *what)
{
	struct cover c;
	uint64_t *all = gather_all(v, count, &c);
	long total, i, missing = 0, *first;
	char s1[64], s2[64];

	if (rank != 0)
		return;
	total = c.total + with_extra;
	if (with_extra)
		all[c.total] = extra;
	first = xmalloc(total * sizeof(*first));
	for (i = 0; i < total; i++)
		first[i] = -1;
	for (i = 0; i < total; i++) {
		uint64_t x = all[i];

		if (x >= (uint64_t)total) {
			CHECK(0, "%s: value of %s expected one of 0..%ld got "
			      "%llu", what, who(&c, i, s1), total - 1,
			      (unsigned long long)x);
		} else if (first[x] >= 0) {
			CHECK(0, "%s: value %llu seen twice (%s and %s), "
			      "expected each of 0..%ld once", what,
			      (unsigned long long)x, who(&c, first[x], s1),
			      who(&c, i, s2), total - 1);
		} else {
			first[x] = i;
		}
	}
	for (i = 0; i < total; i++)
		missing += first[i] < 0;
	for (i = 0; i < total && missing; i++)
		if (first[i] < 0) {
			CHECK(0, "%s: value %ld never seen (%ld missing), "
			      "expected each of 0..%ld once", what, i,
			      missing, total - 1);
			break;
		}
	free(first);
	free(all);
	free(c.counts);
	free(c.displs);
}

/* ---- the tests ---- */

/*
 * Fence epochs. For every shift d (0 = self), each rank puts pieces to
 * rank + d and receives from rank - d: the whole window is the target's to
 * check, so pieces can be as large as the window. After the puts' fence
 * the target checks its window, then the origin gets its pieces back.
 */
static void fence_putget(struct win *w)
{
	long span = w->size;
	unsigned char *src = xmalloc(span + SRC_SKEW);
	unsigned char *dst = xmalloc(span + DST_SKEW);
	struct piece out[MAXP], in[MAXP];
	int d, kind, nout, nin, t, o, it;

	for (d = 0; d < nranks; d++)
		for (kind = 0; kind < 4; kind++) {
			t = next_rank(d);
			o = prev_rank(d);
			it = d * 4 + kind;
			nout = make_pieces(out, 0, span, kind,
					   seed_of(rank, t, it));
			nin = make_pieces(in, 0, span, kind,
					  seed_of(o, rank, it));
			fill_span(w->base, 0, 0, span, BG, rank, it);
			fill_pieces(src, SRC_SKEW, out, nout, rank, t, it);
			fill_span(dst, DST_SKEW, 0, span, SENTINEL, t, it);
			MUST(MPI_Win_fence(MPI_MODE_NOPRECEDE, w->win));
			put_pieces(src, SRC_SKEW, out, nout, t, w->win);
			MUST(MPI_Win_fence(0, w->win));
			if (sabotage() && d == 1)
				w->base[in[nin - 1].off] ^= 0x10;
			check_span(w->base, 0, 0, span, in, nin, o, rank, it,
				   BG, "window after put");
			get_pieces(dst, DST_SKEW, out, nout, t, w->win);
			MUST(MPI_Win_fence(MPI_MODE_NOSUCCEED, w->win));
			check_span(dst, DST_SKEW, 0, span, out, nout, rank, t,
				   it, SENTINEL, "get buffer");
		}
	free(src);
	free(dst);
}

enum { LOCK_EXCL, LOCK_SHARED, LOCK_ALL };

/*
 * Passive target. Each target's window is cut into one slot per origin;
 * every rank puts pieces into its slot at every rank (itself included)
 * under an exclusive or a shared lock per target, or under
 * MPI_Win_lock_all with MPI_Win_flush, then gets them back. The gets are
 * checked after the unlocks; each target checks its window under a shared
 * lock on itself once all are done.
 */
static void lock_putget(struct win *w, int mode)
{
	long slot = w->size / nranks & ~7L;
	unsigned char *src = xmalloc(slot + SRC_SKEW);
	unsigned char *dst = xmalloc(nranks * slot + DST_SKEW);
	struct piece p[MAXP];
	int kind, d, t, np, it;
	long sskew = SRC_SKEW - rank * slot, dskew;

	for (kind = 0; kind < 4; kind++) {
		it = 100 + mode * 4 + kind;
		MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w->win));
		fill_span(w->base, 0, 0, w->size, BG, rank, it);
		MUST(MPI_Win_unlock(rank, w->win));
		for (t = 0; t < nranks; t++)
			fill_span(dst, (t - rank) * slot + DST_SKEW,
				  rank * slot, (rank + 1) * slot, SENTINEL, t,
				  it);
		MPI_Barrier(MPI_COMM_WORLD);
		if (mode == LOCK_ALL)
			MUST(MPI_Win_lock_all(0, w->win));
		for (d = 0; d < nranks; d++) {
			t = next_rank(d);
			dskew = (t - rank) * slot + DST_SKEW;
			np = make_pieces(p, rank * slot, slot, kind,
					 seed_of(rank, t, it));
			fill_pieces(src, sskew, p, np, rank, t, it);
			if (mode != LOCK_ALL)
				MUST(MPI_Win_lock(mode == LOCK_EXCL ?
						  MPI_LOCK_EXCLUSIVE :
						  MPI_LOCK_SHARED, t, 0,
						  w->win));
			put_pieces(src, sskew, p, np, t, w->win);
			if (mode == LOCK_ALL) {
				MUST(MPI_Win_flush(t, w->win));
			} else {
				MUST(MPI_Win_unlock(t, w->win));
				MUST(MPI_Win_lock(MPI_LOCK_SHARED, t, 0,
						  w->win));
			}
			/* left outstanding until the unlock(_all) */
			get_pieces(dst, dskew, p, np, t, w->win);
			if (mode != LOCK_ALL)
				MUST(MPI_Win_unlock(t, w->win));
		}
		if (mode == LOCK_ALL)
			MUST(MPI_Win_unlock_all(w->win));
		for (t = 0; t < nranks; t++) {
			np = make_pieces(p, rank * slot, slot, kind,
					 seed_of(rank, t, it));
			check_span(dst, (t - rank) * slot + DST_SKEW,
				   rank * slot, (rank + 1) * slot, p, np, rank,
				   t, it, SENTINEL, "get buffer");
		}
		MPI_Barrier(MPI_COMM_WORLD);	/* all puts are done */
		MUST(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, w->win));
		if (sabotage() && kind == 2)
			w->base[w->size - 1] ^= 0x01;
		for (t = 0; t < nranks; t++) {
			np = make_pieces(p, t * slot, slot, kind,
					 seed_of(t, rank, it));
			check_span(w->base, 0, t * slot, (t + 1) * slot, p, np,
				   t, rank, it, BG, "window");
		}
		check_span(w->base, 0, nranks * slot, w->size, NULL, 0, 0,
			   rank, it, BG, "window tail");
		MUST(MPI_Win_unlock(rank, w->win));
		MPI_Barrier(MPI_COMM_WORLD);	/* before the next refill */
	}
	free(src);
	free(dst);
}

static void test_fence(int flavor)
{
	struct win w;

	win_open(&w, flavor == CREATE ? CREATE_BYTES : WIN_BYTES, 1, flavor);
	fence_putget(&w);
	win_close(&w);
}

static void test_lock(int flavor, int mode)
{
	struct win w;

	win_open(&w, flavor == CREATE ? CREATE_BYTES : WIN_BYTES, 1, flavor);
	lock_putget(&w, mode);
	win_close(&w);
}

static void test_lock_exclusive(int flavor)
{
	test_lock(flavor, LOCK_EXCL);
}

static void test_lock_shared(int flavor)
{
	test_lock(flavor, LOCK_SHARED);
}

static void test_lock_all(int flavor)
{
	test_lock(flavor, LOCK_ALL);
}

/*
 * Passive-target progress: the last rank polls a flag in its own window
 * with MPI_Fetch_and_op(MPI_NO_OP) and MPI_Win_flush on itself, while rank
 * 0 gets a word from that window and only then puts the flag. The poller
 * is inside MPI all the while, so by MPI's progress rule the get
 * completes. A provider that moves data only when called
 * (FI_PROGRESS_MANUAL), under an osc that does not call it in those
 * functions, leaves it pending: the test then fails, and a barrier (which
 * does progress) lets it finish.
 */
#define PROGRESS_WAIT 10.0	/* seconds the poller polls */
static void test_progress(int flavor)
{
	int64_t v = 0, flag = 0, one = 1, want = 0x1234567890ll;
	int P = nranks - 1;
	struct win w;
	double t0;

	win_open(&w, 16, 8, flavor);
	if (rank == P) {
		MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, P, 0, w.win));
		memcpy(w.base, &flag, 8);
		memcpy(w.base + 8, &want, 8);
		MUST(MPI_Win_unlock(P, w.win));
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MUST(MPI_Win_lock_all(0, w.win));
	if (rank == 0) {
		MUST(MPI_Get(&v, 1, MPI_INT64_T, P, 1, 1, MPI_INT64_T,
			     w.win));
		MUST(MPI_Win_flush(P, w.win));
		CHECK(v == want, "word got from rank %d expected %lld got "
		      "%lld", P, (long long)want, (long long)v);
		MUST(MPI_Put(&one, 1, MPI_INT64_T, P, 0, 1, MPI_INT64_T,
			     w.win));
		MUST(MPI_Win_flush(P, w.win));
	} else if (rank == P) {
		t0 = MPI_Wtime();
		do {
			MUST(MPI_Fetch_and_op(&one, &flag, MPI_INT64_T, P, 0,
					      MPI_NO_OP, w.win));
			MUST(MPI_Win_flush(P, w.win));
		} while (flag != 1 && MPI_Wtime() - t0 < PROGRESS_WAIT);
		if (sabotage())
			flag = 0;
		CHECK(flag == 1, "flag put by rank 0 expected 1 got %lld after "
		      "%.0f s of MPI_Fetch_and_op and MPI_Win_flush on this "
		      "rank's own window: rank 0's get from here made no "
		      "progress meanwhile", (long long)flag, PROGRESS_WAIT);
	}
	MUST(MPI_Win_unlock_all(w.win));
	MPI_Barrier(MPI_COMM_WORLD);
	win_close(&w);
}

/*
 * MPI_LOCK_EXCLUSIVE as a mutex: every rank increments a 4 KiB block of
 * equal int64 words by a get, a flush and a put under the lock, EX_K
 * times. Without mutual exclusion increments get lost or blocks tear;
 * with it the counts each rank read are 0..nranks*EX_K-1 once each.
 */
#define EX_WORDS 512
#define EX_K 20
static void test_exclusive_rmw(int flavor)
{
	int64_t *blk = xmalloc(EX_WORDS * sizeof(*blk));
	uint64_t seen[EX_K];
	char what[64];
	struct win w;
	int pass, T, k, i;
	int64_t v;

	win_open(&w, EX_WORDS * 8, 8, flavor);
	for (pass = 0; pass < 2; pass++) {
		T = pass ? nranks - 1 : 0;
		if (rank == T) {
			MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, w.win));
			memset(w.base, 0, EX_WORDS * 8);
			MUST(MPI_Win_unlock(T, w.win));
		}
		MPI_Barrier(MPI_COMM_WORLD);
		for (k = 0; k < EX_K; k++) {
			MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, w.win));
			MUST(MPI_Get(blk, EX_WORDS, MPI_INT64_T, T, 0,
				     EX_WORDS, MPI_INT64_T, w.win));
			MUST(MPI_Win_flush(T, w.win));
			v = blk[0];
			for (i = 1; i < EX_WORDS; i++)
				if (blk[i] != v) {
					CHECK(0, "block at rank %d torn: word "
					      "%d expected %lld (word 0) got "
					      "%lld", T, i, (long long)v,
					      (long long)blk[i]);
					break;
				}
			seen[k] = (uint64_t)v;
			for (i = 0; i < EX_WORDS; i++)
				blk[i] = v + 1;
			MUST(MPI_Put(blk, EX_WORDS, MPI_INT64_T, T, 0,
				     EX_WORDS, MPI_INT64_T, w.win));
			MUST(MPI_Win_unlock(T, w.win));
			if (k)
				CHECK(seen[k] > seen[k - 1], "count read under "
				      "the lock went from %llu to %llu, "
				      "expected it to grow",
				      (unsigned long long)seen[k - 1],
				      (unsigned long long)seen[k]);
		}
		if (sabotage())
			seen[EX_K - 1] = seen[0];
		snprintf(what, sizeof(what), "counts read at rank %d", T);
		check_cover(seen, EX_K, 0, 0, what);
		MPI_Barrier(MPI_COMM_WORLD);
		MUST(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, w.win));
		MUST(MPI_Get(blk, EX_WORDS, MPI_INT64_T, T, 0, EX_WORDS,
			     MPI_INT64_T, w.win));
		MUST(MPI_Win_unlock(T, w.win));
		for (i = 0; i < EX_WORDS; i++)
			if (blk[i] != (int64_t)nranks * EX_K) {
				CHECK(0, "final block at rank %d: word %d "
				      "expected %lld got %lld", T, i,
				      (long long)nranks * EX_K,
				      (long long)blk[i]);
				break;
			}
		MPI_Barrier(MPI_COMM_WORLD);
	}
	win_close(&w);
	free(blk);
}

/*
 * MPI_Accumulate: all ranks into one target at once, in a fence epoch
 * (target 0) and under MPI_Win_lock_all (the last rank). Each case has
 * its own array; afterwards every rank reads all of them back.
 */
#define ACC_LEN 609		/* counts 1, 8 and 600 */
#define ACC_REP 3		/* each rank accumulates everything 3 times */
#define ACC_OWN_N 40		/* MPI_REPLACE: each rank its own 40 */
#define ACC_SAME_N 16		/* MPI_REPLACE: all ranks the first 16 */
static const int acc_seg_lo[] = { 0, 1, 9 }, acc_seg_n[] = { 1, 8, 600 };

enum { ACC_ALL, ACC_OWN, ACC_SAME };

struct acc_case {
	char name[48];
	enum kind k;
	MPI_Datatype dt;
	MPI_Op op;
	int how;
};

static int acc_add(struct acc_case *c, int n, const char *op_name,
		   const char *dt_name, enum kind k, MPI_Datatype dt, MPI_Op op,
		   int how)
{
	int size = 0;

	MPI_Type_size(dt, &size);
	if (size != ksize(k))	/* e.g. a long long that is not 64 bits */
		return n;
	snprintf(c[n].name, sizeof(c[n].name), "%s on %s", op_name,
		 dt_name);
	c[n].k = k;
	c[n].dt = dt;
	c[n].op = op;
	c[n].how = how;
	return n + 1;
}

static int acc_cases(struct acc_case *c)
{
	int n = 0;

	n = acc_add(c, n, "MPI_SUM", "MPI_INT", K_I32, MPI_INT, MPI_SUM,
		    ACC_ALL);
	n = acc_add(c, n, "MPI_SUM", "MPI_LONG_LONG", K_I64, MPI_LONG_LONG,
		    MPI_SUM, ACC_ALL);
	n = acc_add(c, n, "MPI_SUM", "MPI_INT64_T", K_I64, MPI_INT64_T,
		    MPI_SUM, ACC_ALL);
	n = acc_add(c, n, "MPI_SUM", "MPI_UNSIGNED", K_U32, MPI_UNSIGNED,
		    MPI_SUM, ACC_ALL);
	n = acc_add(c, n, "MPI_SUM", "MPI_UINT64_T", K_U64, MPI_UINT64_T,
		    MPI_SUM, ACC_ALL);
	n = acc_add(c, n, "MPI_SUM", "MPI_DOUBLE", K_DBL, MPI_DOUBLE, MPI_SUM,
		    ACC_ALL);
	n = acc_add(c, n, "MPI_MAX", "MPI_INT", K_I32, MPI_INT, MPI_MAX,
		    ACC_ALL);
	n = acc_add(c, n, "MPI_MAX", "MPI_INT64_T", K_I64, MPI_INT64_T,
		    MPI_MAX, ACC_ALL);
	n = acc_add(c, n, "MPI_MAX", "MPI_UINT64_T", K_U64, MPI_UINT64_T,
		    MPI_MAX, ACC_ALL);
	n = acc_add(c, n, "MPI_MAX", "MPI_DOUBLE", K_DBL, MPI_DOUBLE, MPI_MAX,
		    ACC_ALL);
	n = acc_add(c, n, "MPI_MIN", "MPI_INT", K_I32, MPI_INT, MPI_MIN,
		    ACC_ALL);
	n = acc_add(c, n, "MPI_MIN", "MPI_LONG_LONG", K_I64, MPI_LONG_LONG,
		    MPI_MIN, ACC_ALL);
	n = acc_add(c, n, "MPI_MIN", "MPI_UNSIGNED", K_U32, MPI_UNSIGNED,
		    MPI_MIN, ACC_ALL);
	n = acc_add(c, n, "MPI_MIN", "MPI_DOUBLE", K_DBL, MPI_DOUBLE, MPI_MIN,
		    ACC_ALL);
	n = acc_add(c, n, "MPI_REPLACE (own elements)", "MPI_INT64_T", K_I64,
		    MPI_INT64_T, MPI_REPLACE, ACC_OWN);
	n = acc_add(c, n, "MPI_REPLACE (same elements)", "MPI_INT64_T", K_I64,
		    MPI_INT64_T, MPI_REPLACE, ACC_SAME);
	n = acc_add(c, n, "MPI_REPLACE (same elements)", "MPI_INT", K_I32,
		    MPI_INT, MPI_REPLACE, ACC_SAME);
	return n;
}

static long acc_len(void)	/* elements per case */
{
	return nranks * ACC_OWN_N > ACC_LEN ? nranks * ACC_OWN_N : ACC_LEN;
}

/* What rank r contributes to element i; sums stay exact in any order. */
static val_t acc_val(const struct acc_case *c, int r, int i)
{
	int64_t sign = i & 1 ? -1 : 1;
	int64_t m = (r * 7 + i * 3) % nranks - nranks / 2;
	val_t v;

	v.u = 0;
	if (c->op == MPI_SUM) {
		switch (c->k) {
		case K_I32:
			v.i = sign * ((r + 1) * 1000 + i);
			break;
		case K_U32:
			v.u = 0xF0000000u + (uint64_t)r * 0x01000001u + i;
			break;
		case K_I64:
			v.i = sign * (((int64_t)(r + 1) << 33) + i * 3);
			break;
		case K_U64:
			v.u = 0xF000000000000000ull + ((uint64_t)r << 40) + i;
			break;
		case K_DBL:
			v.d = sign * ((r + 1) * 0.5 + i * 0.25);
			break;
		}
	} else if (c->op == MPI_MAX || c->op == MPI_MIN) {
		switch (c->k) {
		case K_I32:
			v.i = m * 1000 + i;
			break;
		case K_U32:
			v.u = 0x80000000u + (uint64_t)(m + nranks) * 0x10001u +
			      i;
			break;
		case K_I64:
			v.i = m * ((int64_t)1 << 35) + i;
			break;
		case K_U64:
			v.u = 0x8000000000000000ull +
			      ((uint64_t)(m + nranks) << 36) + i;
			break;
		case K_DBL:
			v.d = m * 1.5 + i * 0.125;
			break;
		}
	} else if (c->how == ACC_OWN) {
		v.i = ((int64_t)(r + 1) << 40) + i;
	} else {	/* ACC_SAME: whole words of one rank's byte */
		v.u = (uint64_t)(r + 1) * 0x0101010101010101ull;
	}
	return norm(c->k, v);
}

/* The target's value before the epoch */
static val_t acc_init(const struct acc_case *c, int i)
{
	int high = i % 5 == 0;	/* MPI_MAX: some elements beat every rank */
	val_t v;

	if (c->op == MPI_MIN)
		high = !high;
	v.u = 0;
	if (c->op == MPI_SUM) {
		switch (c->k) {
		case K_I32:
			v.i = i - 3;
			break;
		case K_U32:
			v.u = 0xFFFFFFF0u + (uint64_t)i;
			break;
		case K_I64:
			v.i = -((int64_t)i << 20);
			break;
		case K_U64:
			v.u = ~(uint64_t)i;
			break;
		case K_DBL:
			v.d = -0.75 * i;
			break;
		}
	} else if (c->op == MPI_MAX || c->op == MPI_MIN) {
		switch (c->k) {
		case K_I32:
			v.i = high ? 1 << 30 : -(1 << 30);
			break;
		case K_U32:
			v.u = high ? 0xFFFFFF00u : 1;
			break;
		case K_I64:
			v.i = high ? (int64_t)1 << 60 : -((int64_t)1 << 60);
			break;
		case K_U64:
			v.u = high ? ~(uint64_t)i : (uint64_t)i;
			break;
		case K_DBL:
			v.d = high ? 1e300 : -1e300;
			break;
		}
	} else {
		v.i = (int64_t)0x7777777700000000ll + i;
	}
	return norm(c->k, v);
}

/* One accumulate of all ACC_LEN elements rather than counts 1, 8, 600 */
static int acc_whole(const struct acc_case *c)
{
	return NO_SMALL_MINMAX && c->k != K_DBL &&
	       (c->op == MPI_MAX || c->op == MPI_MIN);
}

static void acc_issue(const struct acc_case *c, const unsigned char *org,
		      long off, int T, MPI_Win win)
{
	int sz = ksize(c->k), rep, s;
	long lo;

	if (c->how == ACC_OWN) {
		lo = (long)rank * ACC_OWN_N;
		MUST(MPI_Accumulate(org + lo * sz, ACC_OWN_N, c->dt, T,
				    (off + lo * sz) / 4, ACC_OWN_N, c->dt,
				    c->op, win));
		return;
	}
	for (rep = 0; rep < ACC_REP; rep++) {
		if (c->how == ACC_SAME || acc_whole(c)) {
			lo = c->how == ACC_SAME ? ACC_SAME_N : ACC_LEN;
			MUST(MPI_Accumulate(org, (int)lo, c->dt, T, off / 4,
					    (int)lo, c->dt, c->op, win));
			continue;
		}
		for (s = 0; s < 3; s++) {
			lo = acc_seg_lo[s];
			MUST(MPI_Accumulate(org + lo * sz, acc_seg_n[s], c->dt,
					    T, (off + lo * sz) / 4,
					    acc_seg_n[s], c->dt, c->op, win));
		}
	}
}

static void acc_verify(const struct acc_case *c, const unsigned char *got,
		       int T, const char *epoch)
{
	int sz = ksize(c->k), bad = 0, ok, r, rep, i, n;
	char e[48], g[48];
	val_t v, x;

	for (i = 0; i < acc_len(); i++) {
		v = load(c->k, got + (long)i * sz);
		x = acc_init(c, i);
		n = acc_whole(c) ? ACC_LEN : i < 1 ? 1 : i < 9 ? 8 : 600;
		if (c->how == ACC_ALL && i < ACC_LEN) {
			for (r = 0; r < nranks; r++)
				for (rep = 0; rep < ACC_REP; rep++)
					x = apply(c->k, c->op, x,
						  acc_val(c, r, i));
		} else if (c->how == ACC_OWN && i / ACC_OWN_N < nranks) {
			x = acc_val(c, i / ACC_OWN_N, i);
			n = ACC_OWN_N;
		}
		ok = same(c->k, x, v);
		if (c->how == ACC_SAME && i < ACC_SAME_N) {
			n = ACC_SAME_N;
			ok = 0;	/* the initial value must be gone */
			for (r = 0; r < nranks && !ok; r++)
				ok = same(c->k, acc_val(c, r, i), v);
			x = acc_val(c, 0, i);
		}
		if (!ok && bad++ < 3)
			CHECK(0, "%s into rank %d (%s epoch), element %d of a "
			      "count-%d accumulate: expected %s%s got %s",
			      c->name, T, epoch, i, n,
			      c->how == ACC_SAME && i < ACC_SAME_N ?
			      "some rank's value like " : "",
			      show(c->k, x, e), show(c->k, v, g));
	}
}

static void test_accumulate(int flavor)
{
	struct acc_case c[20];
	int nc = acc_cases(c), phase, T, ci, i;
	long len = acc_len(), reg = len * 8, total;
	unsigned char *org, *got;
	struct win w;

	total = nc * reg;
	org = xmalloc(total);
	got = xmalloc(total);
	for (ci = 0; ci < nc; ci++)
		for (i = 0; i < len; i++)
			store(c[ci].k,
			      org + ci * reg + (long)i * ksize(c[ci].k),
			      acc_val(&c[ci], rank, i));
	win_open(&w, total, 4, flavor);
	for (phase = 0; phase < 2; phase++) {
		T = phase ? nranks - 1 : 0;
		if (rank == T) {
			MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, w.win));
			for (ci = 0; ci < nc; ci++)
				for (i = 0; i < len; i++)
					store(c[ci].k, w.base + ci * reg +
					      (long)i * ksize(c[ci].k),
					      acc_init(&c[ci], i));
			MUST(MPI_Win_unlock(T, w.win));
		}
		MPI_Barrier(MPI_COMM_WORLD);
		if (phase == 0)
			MUST(MPI_Win_fence(MPI_MODE_NOPRECEDE, w.win));
		else
			MUST(MPI_Win_lock_all(0, w.win));
		for (ci = 0; ci < nc; ci++)
			acc_issue(&c[ci], org + ci * reg, ci * reg, T, w.win);
		if (phase == 0)
			MUST(MPI_Win_fence(MPI_MODE_NOSUCCEED, w.win));
		else
			MUST(MPI_Win_unlock_all(w.win));
		MPI_Barrier(MPI_COMM_WORLD);
		memset(got, 0x5a, total);
		MUST(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, w.win));
		MUST(MPI_Get(got, (int)total, MPI_BYTE, T, 0, (int)total,
			     MPI_BYTE, w.win));
		MUST(MPI_Win_unlock(T, w.win));
		if (sabotage())
			got[phase * 5 * reg + 8 * 4] ^= 0x02;
		for (ci = 0; ci < nc; ci++)
			acc_verify(&c[ci], got + ci * reg, T,
				   phase ? "lock_all" : "fence");
		MPI_Barrier(MPI_COMM_WORLD);	/* before the next init */
	}
	win_close(&w);
	free(org);
	free(got);
}

static const enum kind atomic_kinds[] = { K_I32, K_U32, K_I64, K_U64 };

/* Counter starts: crossing 0, 2^32 (a carry into the high half) and 2^64 */
static val_t fop_base(enum kind k)
{
	switch (k) {
	case K_I32:
		return ival(k, -50);
	case K_U32:
		return ival(k, 0xFFFFFFC0ll);
	case K_I64:
		return ival(k, ((int64_t)1 << 32) - 40);
	default:
		return ival(k, -40);
	}
}

/*
 * MPI_Fetch_and_op MPI_SUM: every rank adds 1 FOP_N times to one counter
 * under MPI_Win_lock_all, flushing each. The fetched values (minus the
 * start) must be 0..nranks*FOP_N-1 once each, growing on each rank; the
 * final value, read with MPI_NO_OP, the start plus nranks*FOP_N.
 */
#define FOP_N 100
static void test_fetch_sum(int flavor)
{
	unsigned char one[8], res[FOP_N][8], fin[8];
	uint64_t idx[FOP_N];
	char what[96], a[48], b[48];
	struct win w;
	int q, T, j;
	enum kind k;
	val_t base, v, want;

	win_open(&w, 64, 8, flavor);
	for (q = 0; q < 4; q++) {
		k = atomic_kinds[q];
		T = q % nranks;
		base = fop_base(k);
		store(k, one, ival(k, 1));
		if (rank == T) {
			MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, w.win));
			store(k, w.base + q * 8, base);
			MUST(MPI_Win_unlock(T, w.win));
		}
		MPI_Barrier(MPI_COMM_WORLD);
		MUST(MPI_Win_lock_all(0, w.win));
		for (j = 0; j < FOP_N; j++) {
			MUST(MPI_Fetch_and_op(one, res[j], kdt(k), T, q,
					      MPI_SUM, w.win));
			MUST(MPI_Win_flush(T, w.win));
		}
		MUST(MPI_Win_unlock_all(w.win));
		snprintf(what, sizeof(what),
			 "MPI_Fetch_and_op MPI_SUM on %s at rank %d",
			 kind_name[k], T);
		for (j = 0; j < FOP_N; j++) {
			v = load(k, res[j]);
			idx[j] = rel(k, v, base);
			if (j && idx[j] <= idx[j - 1])
				CHECK(0, "%s: fetch %d returned %s after %s, "
				      "expected a larger value", what, j,
				      show(k, v, a),
				      show(k, load(k, res[j - 1]), b));
		}
		if (sabotage())
			idx[FOP_N - 1] = idx[0];
		check_cover(idx, FOP_N, 0, 0, what);
		MPI_Barrier(MPI_COMM_WORLD);
		MUST(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, w.win));
		MUST(MPI_Fetch_and_op(one, fin, kdt(k), T, q, MPI_NO_OP,
				      w.win));
		MUST(MPI_Win_unlock(T, w.win));
		want = ival(k, base.i + (int64_t)nranks * FOP_N);
		v = load(k, fin);
		CHECK(same(k, want, v), "%s: final value (MPI_NO_OP) expected "
		      "%s got %s", what, show(k, want, a), show(k, v, b));
		MPI_Barrier(MPI_COMM_WORLD);
	}
	win_close(&w);
}

/*
 * MPI_Fetch_and_op MPI_REPLACE: every rank swaps its own unique values
 * into one slot FOP_N times. Each value written, and the initial one,
 * must come back exactly once: fetched by some swap, or left in the slot.
 */
static void test_fetch_replace(int flavor)
{
	unsigned char mine[8], res[FOP_N][8], fin[8];
	uint64_t idx[FOP_N], last;
	char what[96], a[48];
	struct win w;
	int q, T, j;
	enum kind k;
	val_t v;

	win_open(&w, 64, 8, flavor);
	for (q = 0; q < 4; q++) {
		k = atomic_kinds[q];
		T = (q + 1) % nranks;
		if (rank == T) {
			MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, w.win));
			store(k, w.base + q * 8, tag(k, -1, 0));
			MUST(MPI_Win_unlock(T, w.win));
		}
		MPI_Barrier(MPI_COMM_WORLD);
		MUST(MPI_Win_lock_all(0, w.win));
		for (j = 0; j < FOP_N; j++) {
			store(k, mine, tag(k, rank, j));
			MUST(MPI_Fetch_and_op(mine, res[j], kdt(k), T, q,
					      MPI_REPLACE, w.win));
			MUST(MPI_Win_flush(T, w.win));
		}
		MUST(MPI_Win_unlock_all(w.win));
		snprintf(what, sizeof(what),
			 "MPI_Fetch_and_op MPI_REPLACE on %s at rank %d",
			 kind_name[k], T);
		for (j = 0; j < FOP_N; j++) {
			v = load(k, res[j]);
			idx[j] = tag_index(k, v, FOP_N);
			CHECK(idx[j] != UINT64_MAX, "%s: swap %d fetched %s, "
			      "which no rank wrote", what, j, show(k, v, a));
		}
		if (sabotage())
			idx[0] = idx[1];
		MPI_Barrier(MPI_COMM_WORLD);
		MUST(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, w.win));
		MUST(MPI_Fetch_and_op(mine, fin, kdt(k), T, q, MPI_NO_OP,
				      w.win));
		MUST(MPI_Win_unlock(T, w.win));
		last = tag_index(k, load(k, fin), FOP_N);
		check_cover(idx, FOP_N, 1, last, what);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	win_close(&w);
}

/*
 * MPI_Compare_and_swap, first writer wins: all ranks at once try to swap
 * their value into an empty slot. Exactly one must find it empty, all
 * others must find the winner's value, which the slot must hold.
 */
#define CAS_ROUNDS 6
static const enum kind cas_kinds[] = { K_I32, K_U64 };

/* Whether this rank may compare-and-swap k at rank T (see NO_LOCAL_CAS64) */
static int cas_may(enum kind k, int T)
{
	return !(NO_LOCAL_CAS64 && ksize(k) == 8 && rank == T);
}

static void test_cas_first(int flavor)
{
	unsigned char mine[8], empty[8], res[8];
	uint64_t *all = xmalloc(2 * nranks * sizeof(*all)), me[2], emptyu;
	char a[48], b[48];
	struct win w;
	int q, rr, T, i, winners, winner;
	enum kind k;
	val_t v;

	win_open(&w, 2 * CAS_ROUNDS * 8, 8, flavor);
	for (q = 0; q < 2; q++) {
		k = cas_kinds[q];
		store(k, empty, tag(k, -1, 0));
		emptyu = norm(k, tag(k, -1, 0)).u;
		MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, w.win));
		for (rr = 0; rr < CAS_ROUNDS; rr++)
			store(k, w.base + (q * CAS_ROUNDS + rr) * 8,
			      tag(k, -1, 0));
		MUST(MPI_Win_unlock(rank, w.win));
		MPI_Barrier(MPI_COMM_WORLD);
		for (rr = 0; rr < CAS_ROUNDS; rr++) {
			T = rr % nranks;
			store(k, mine, tag(k, rank, rr));
			memset(res, 0, sizeof(res));
			me[0] = cas_may(k, T);	/* took part, and found: */
			MUST(MPI_Win_lock_all(0, w.win));
			if (me[0])
				MUST(MPI_Compare_and_swap(mine, empty, res,
							  kdt(k), T,
							  q * CAS_ROUNDS + rr,
							  w.win));
			MUST(MPI_Win_unlock_all(w.win));
			me[1] = norm(k, load(k, res)).u;
			if (sabotage())
				me[1] = emptyu;
			MPI_Allgather(me, 2, MPI_UINT64_T, all, 2,
				      MPI_UINT64_T, MPI_COMM_WORLD);
			winners = 0;
			winner = -1;
			for (i = 0; i < nranks; i++)
				if (all[2 * i] && all[2 * i + 1] == emptyu) {
					winners++;
					winner = i;
				}
			CHECK(winners == 1, "%s round %d at rank %d: %d ranks "
			      "found the slot empty, expected exactly 1",
			      kind_name[k], rr, T, winners);
			if (winners != 1)
				continue;
			for (i = 0; i < nranks; i++) {
				v.u = all[2 * i + 1];
				CHECK(i == winner || !all[2 * i] ||
				      same(k, v, tag(k, winner, rr)),
				      "%s round %d at rank %d: rank %d's "
				      "compare-and-swap returned %s, expected "
				      "the winner's (rank %d) %s", kind_name[k],
				      rr, T, i, show(k, v, a), winner,
				      show(k, tag(k, winner, rr), b));
			}
			MUST(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, w.win));
			MUST(MPI_Fetch_and_op(mine, res, kdt(k), T,
					      q * CAS_ROUNDS + rr, MPI_NO_OP,
					      w.win));
			MUST(MPI_Win_unlock(T, w.win));
			v = load(k, res);
			CHECK(same(k, v, tag(k, winner, rr)), "%s round %d at "
			      "rank %d: slot holds %s, expected the winner's "
			      "(rank %d) %s", kind_name[k], rr, T,
			      show(k, v, a), winner,
			      show(k, tag(k, winner, rr), b));
		}
	}
	win_close(&w);
	free(all);
}

/*
 * A spin lock made of MPI_Compare_and_swap (free -> mine, then mine ->
 * free): each rank takes it LOCK_K times and increments a block of 8
 * int64 by get and put while holding it. The counts read must be
 * 0..takers*LOCK_K-1 once each. The free value and the owners' values
 * share their low 32 bits on uint64. Where NO_LOCAL_CAS64, the target
 * takes no 64-bit lock on itself.
 *
 * A rank that finds the lock taken backs off (1 us, doubling to 1 ms)
 * before it asks again. Without that the holder may never release it:
 * Open MPI 4.1's osc rdma emulates a 32-bit MPI_Compare_and_swap by get
 * and put under a per-target accumulate lock, a test-and-set on a word
 * in the node's shared memory, which the waiters re-take the moment
 * they let it go; each holds it across its get's round trip, yielding
 * the CPU meanwhile (opal_progress when oversubscribed). The holder of
 * our lock, needing that accumulate lock to release ours, then finds it
 * taken for as long as the waiters spin: 30 s and more with four ranks
 * on one CPU (taskset -c 0), and once in a while on two.
 */
#define LOCK_K 10
#define LOCK_BACKOFF_MAX_US 1000
static void cas_lock(enum kind k, struct win *w, int T)
{
	unsigned char mine[8], freev[8], res[8];
	int64_t blk[8];
	uint64_t seen[LOCK_K];
	char what[64], a[48], b[48];
	int n, i, r, j, my_k = cas_may(k, T) ? LOCK_K : 0;
	int takers = nranks - (NO_LOCAL_CAS64 && ksize(k) == 8);
	double t0;
	val_t v;

	store(k, freev, tag(k, -1, 0));
	store(k, mine, tag(k, rank, 0));
	if (rank == T) {
		MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, w->win));
		memset(w->base, 0, 9 * 8);
		store(k, w->base, tag(k, -1, 0));
		MUST(MPI_Win_unlock(T, w->win));
	}
	snprintf(what, sizeof(what), "%s lock at rank %d", kind_name[k], T);
	MPI_Barrier(MPI_COMM_WORLD);
	MUST(MPI_Win_lock_all(0, w->win));
	for (n = 0; n < my_k; n++) {
		unsigned int pause_us = 1;

		t0 = MPI_Wtime();
		for (;;) {
			step = "taking the lock";
			MUST(MPI_Compare_and_swap(mine, freev, res, kdt(k), T,
						  0, w->win));
			MUST(MPI_Win_flush(T, w->win));
			v = load(k, res);
			if (same(k, v, tag(k, -1, 0)))
				break;
			if (untag(k, v, &r, &j) || r < 0 || r == rank)
				GIVE_UP("%s: lock word holds %s, expected "
					"free or another rank's value", what,
					show(k, v, a));
			if (MPI_Wtime() - t0 > DEADLINE)
				GIVE_UP_LATE("%s: not acquired in %.0f s, held "
					     "by rank %d", what, DEADLINE, r);
			step = "backing off";
			usleep(pause_us);
			if (pause_us < LOCK_BACKOFF_MAX_US)
				pause_us *= 2;
		}
		step = "holding the lock: Fetch_and_op and Get";
		MUST(MPI_Fetch_and_op(mine, res, kdt(k), T, 0, MPI_NO_OP,
				      w->win));
		MUST(MPI_Get(blk, 8, MPI_INT64_T, T, 1, 8, MPI_INT64_T,
			     w->win));
		MUST(MPI_Win_flush(T, w->win));
		v = load(k, res);
		CHECK(same(k, v, tag(k, rank, 0)), "%s: while held, lock word "
		      "expected %s got %s", what, show(k, tag(k, rank, 0), a),
		      show(k, v, b));
		for (i = 1; i < 8; i++)
			CHECK(blk[i] == blk[0], "%s: block word %d expected "
			      "%lld (word 0) got %lld", what, i,
			      (long long)blk[0], (long long)blk[i]);
		seen[n] = (uint64_t)blk[0];
		for (i = 0; i < 8; i++)
			blk[i] = (int64_t)seen[n] + 1;
		step = "holding the lock: Put";
		MUST(MPI_Put(blk, 8, MPI_INT64_T, T, 1, 8, MPI_INT64_T,
			     w->win));
		MUST(MPI_Win_flush(T, w->win));
		step = "releasing the lock";
		MUST(MPI_Compare_and_swap(freev, mine, res, kdt(k), T, 0,
					  w->win));
		MUST(MPI_Win_flush(T, w->win));
		v = load(k, res);
		CHECK(same(k, v, tag(k, rank, 0)), "%s: on release, lock "
		      "word expected %s got %s", what,
		      show(k, tag(k, rank, 0), a), show(k, v, b));
	}
	step = "Win_unlock_all after the last take";
	MUST(MPI_Win_unlock_all(w->win));
	step = "";
	if (sabotage() && my_k)
		seen[1] = seen[0];
	check_cover(seen, my_k, 0, 0, what);
	step = "the barrier after the takes";
	MPI_Barrier(MPI_COMM_WORLD);
	step = "";
	MUST(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, w->win));
	MUST(MPI_Get(blk, 8, MPI_INT64_T, T, 1, 8, MPI_INT64_T, w->win));
	MUST(MPI_Fetch_and_op(mine, res, kdt(k), T, 0, MPI_NO_OP, w->win));
	MUST(MPI_Win_unlock(T, w->win));
	for (i = 0; i < 8; i++)
		CHECK(blk[i] == (int64_t)takers * LOCK_K, "%s: final block "
		      "word %d expected %lld got %lld", what, i,
		      (long long)takers * LOCK_K, (long long)blk[i]);
	v = load(k, res);
	CHECK(same(k, v, tag(k, -1, 0)), "%s: lock word at the end expected "
	      "%s got %s", what, show(k, tag(k, -1, 0), a), show(k, v, b));
	MPI_Barrier(MPI_COMM_WORLD);
}

static void test_cas_lock(int flavor)
{
	struct win w;

	win_open(&w, 9 * 8, 8, flavor);
	cas_lock(K_U64, &w, nranks - 1);
	cas_lock(K_I32, &w, 0);
	win_close(&w);
}

/*
 * MPI_Compare_and_swap chain: every rank repeatedly swaps its next value
 * in, comparing with the last value it saw, until it has succeeded
 * CHAIN_S times. The successes, each (old, new), must link from the
 * initial value through all of them to the slot's final value: no value
 * replaced twice, none lost. Failures must return a value some rank
 * wrote. Where NO_LOCAL_CAS64, the target makes no 64-bit swaps itself.
 */
#define CHAIN_S 30
static void cas_chain(enum kind k, struct win *w, int T)
{
	unsigned char mine[8], cmp[8], res[8];
	uint64_t pairs[2 * CHAIN_S], *all, *next, cur, steps, o, n;
	long slots = (long)nranks * CHAIN_S, total, i;
	char what[64], a[48];
	int s = 0, r, j, my_s = cas_may(k, T) ? CHAIN_S : 0;
	double t0 = MPI_Wtime();
	val_t last = tag(k, -1, 0), v;
	struct cover c;

	snprintf(what, sizeof(what), "%s chain at rank %d", kind_name[k], T);
	if (rank == T) {
		MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, w->win));
		store(k, w->base, last);
		MUST(MPI_Win_unlock(T, w->win));
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MUST(MPI_Win_lock_all(0, w->win));
	while (s < my_s) {
		store(k, mine, tag(k, rank, s));
		store(k, cmp, last);
		MUST(MPI_Compare_and_swap(mine, cmp, res, kdt(k), T, 0,
					  w->win));
		MUST(MPI_Win_flush(T, w->win));
		v = load(k, res);
		if (same(k, v, last)) {
			pairs[2 * s] = tag_index(k, last, CHAIN_S);
			pairs[2 * s + 1] = tag_index(k, tag(k, rank, s),
						     CHAIN_S);
			last = tag(k, rank, s++);
			continue;
		}
		if (untag(k, v, &r, &j) || j >= CHAIN_S)
			GIVE_UP("%s: compare-and-swap returned %s, which no "
				"rank wrote", what, show(k, v, a));
		last = v;
		if (MPI_Wtime() - t0 > DEADLINE)
			GIVE_UP("%s: only %d of %d swaps done in %.0f s", what,
				s, CHAIN_S, DEADLINE);
	}
	MUST(MPI_Win_unlock_all(w->win));
	if (sabotage() && s > 1)
		pairs[2] = pairs[0];
	all = gather_all(pairs, 2 * s, &c);
	MPI_Barrier(MPI_COMM_WORLD);
	MUST(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, w->win));
	MUST(MPI_Fetch_and_op(mine, res, kdt(k), T, 0, MPI_NO_OP, w->win));
	MUST(MPI_Win_unlock(T, w->win));
	if (rank == 0) {
		/* next[old] = new over the tag indexes 0..slots */
		total = c.total / 2;
		next = xmalloc((slots + 1) * sizeof(*next));
		memset(next, 0xff, (slots + 1) * sizeof(*next)); /* none */
		for (i = 0; i < total; i++) {
			o = all[2 * i];
			n = all[2 * i + 1];
			if (o > (uint64_t)slots || n > (uint64_t)slots)
				continue;	/* cannot be: tags checked */
			for (r = 0; 2 * i >= c.displs[r] + c.counts[r]; r++)
				;
			CHECK(next[o] == UINT64_MAX, "%s: value %llu "
			      "replaced twice (by value %llu and, in rank "
			      "%d's swap %ld, by value %llu), expected once",
			      what, (unsigned long long)o,
			      (unsigned long long)next[o], r,
			      (2 * i - c.displs[r]) / 2,
			      (unsigned long long)n);
			next[o] = n;
		}
		for (cur = 0, steps = 0; next[cur] != UINT64_MAX &&
		     steps <= (uint64_t)total; steps++)
			cur = next[cur];
		CHECK(steps == (uint64_t)total, "%s: %llu successful swaps "
		      "link from the initial value, expected %ld", what,
		      (unsigned long long)steps, total);
		v = load(k, res);
		CHECK(cur == tag_index(k, v, CHAIN_S), "%s: the chain ends at "
		      "value %llu, but the slot holds %s", what,
		      (unsigned long long)cur, show(k, v, a));
		free(next);
		free(all);
		free(c.counts);
		free(c.displs);
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

static void test_cas_chain(int flavor)
{
	struct win w;

	win_open(&w, 8, 8, flavor);
	cas_chain(K_I32, &w, 1 % nranks);
	cas_chain(K_U64, &w, 0);
	win_close(&w);
}

/*
 * MPI_Get_accumulate MPI_SUM: every rank adds 1 to each of m elements,
 * ga_k times, fetching the old values. Per element, the fetched values
 * (minus the start) must be 0..nranks*ga_k-1 once each and grow on each
 * rank; the final values, read with MPI_NO_OP, the start plus nranks*ga_k.
 */
static void get_acc(enum kind k, MPI_Datatype dt, const char *dt_name,
		    int m, int K, int T, struct win *w)
{
	int sz = ksize(k), j, e, bad = 0;
	unsigned char *ones = xmalloc((long)m * sz);
	unsigned char *res = xmalloc((long)K * m * sz);
	uint64_t *idx = xmalloc((long)K * m * sizeof(*idx));
	uint64_t *all = NULL, *col;
	char what[96], a[48], b[48];
	val_t v, base;

	snprintf(what, sizeof(what), "MPI_Get_accumulate MPI_SUM on %d %s "
		 "at rank %d", m, dt_name, T);
	for (e = 0; e < m; e++)
		store(k, ones + (long)e * sz, ival(k, 1));
	if (rank == T) {
		MUST(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, T, 0, w->win));
		for (e = 0; e < m; e++)
			store(k, w->base + (long)e * sz,
			      ival(k, k == K_I32 ? e * 1000 - 7 :
				   ((int64_t)e << 36) - 7));
		MUST(MPI_Win_unlock(T, w->win));
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MUST(MPI_Win_lock_all(0, w->win));
	for (j = 0; j < K; j++) {
		MUST(MPI_Get_accumulate(ones, m, dt, res + (long)j * m * sz,
					m, dt, T, 0, m, dt, MPI_SUM, w->win));
		MUST(MPI_Win_flush(T, w->win));
	}
	MUST(MPI_Win_unlock_all(w->win));
	for (j = 0; j < K; j++)
		for (e = 0; e < m; e++) {
			base = ival(k, k == K_I32 ? e * 1000 - 7 :
				    ((int64_t)e << 36) - 7);
			v = load(k, res + ((long)j * m + e) * sz);
			idx[(long)j * m + e] = rel(k, v, base);
			if (j && idx[(long)j * m + e] <=
			    idx[(long)(j - 1) * m + e] && bad++ < 3)
				CHECK(0, "%s: element %d, fetch %d returned "
				      "%s after %s, expected a larger value",
				      what, e, j, show(k, v, a),
				      show(k, load(k, res + ((long)(j - 1) *
							   m + e) * sz), b));
		}
	if (sabotage())
		idx[(long)(K - 1) * m + m - 1] += 1000;
	/* per element, the values of all ranks: as check_cover, column e */
	if (rank == 0)
		all = xmalloc((long)nranks * K * m * sizeof(*all));
	MPI_Gather(idx, K * m, MPI_UINT64_T, all, K * m, MPI_UINT64_T, 0,
		   MPI_COMM_WORLD);
	if (rank == 0) {
		long n = (long)nranks * K, i;
		char *seen = xmalloc(n);

		col = xmalloc(n * sizeof(*col));
		for (e = 0; e < m; e++) {
			memset(seen, 0, n);
			for (i = 0; i < n; i++)
				col[i] = all[i * m + e];
			for (i = 0; i < n; i++)
				if (col[i] >= (uint64_t)n || seen[col[i]]++) {
					CHECK(0, "%s: element %d: rank %ld's "
					      "fetch %ld returned start + "
					      "%llu, expected each of start + "
					      "0..%ld once", what, e, i / K,
					      i % K,
					      (unsigned long long)col[i],
					      n - 1);
					break;
				}
			if (i < n && bad++ >= 3)
				break;
		}
		free(col);
		free(seen);
		free(all);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MUST(MPI_Win_lock(MPI_LOCK_SHARED, T, 0, w->win));
	MUST(MPI_Get_accumulate(ones, m, dt, res, m, dt, T, 0, m, dt,
				MPI_NO_OP, w->win));
	MUST(MPI_Win_unlock(T, w->win));
	for (e = 0; e < m; e++) {
		base = ival(k, k == K_I32 ? e * 1000 - 7 :
			    ((int64_t)e << 36) - 7);
		base = ival(k, base.i + (int64_t)nranks * K);
		v = load(k, res + (long)e * sz);
		if (!same(k, v, base)) {
			CHECK(0, "%s: final element %d (MPI_NO_OP) expected %s "
			      "got %s", what, e, show(k, base, a),
			      show(k, v, b));
			break;
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
	free(ones);
	free(res);
	free(idx);
}

static void test_get_accumulate(int flavor)
{
	struct win w;

	win_open(&w, 1000 * 8, 8, flavor);
	get_acc(K_I64, MPI_LONG_LONG, "MPI_LONG_LONG", 16, 25, 0, &w);
	get_acc(K_I32, MPI_INT, "MPI_INT", 16, 25, nranks - 1, &w);
	get_acc(K_I32, MPI_INT, "MPI_INT", 1000, 4, 1 % nranks, &w);
	win_close(&w);
}

/* ---- driver ---- */

/* Async-signal-safe: names the hung test and this rank, then exits. */
static void on_alarm(int sig)
{
	static const char head[] = "mpi_osc: rank ", mid[] = ": hung in ";
	char msg[240], num[12];
	size_t len = 0, k, i = sizeof(num);
	int r = rank;

	(void)sig;
	do
		num[--i] = (char)('0' + r % 10);
	while ((r /= 10) && i > 0);
	memcpy(msg, head, sizeof(head) - 1);
	len += sizeof(head) - 1;
	memcpy(msg + len, num + i, sizeof(num) - i);
	len += sizeof(num) - i;
	memcpy(msg + len, mid, sizeof(mid) - 1);
	len += sizeof(mid) - 1;
	for (k = 0; current[k] && len < sizeof(msg) - 1; k++)
		msg[len++] = current[k];
	if (*step && len < sizeof(msg) - 5) {
		memcpy(msg + len, " at ", 4);
		len += 4;
	}
	for (k = 0; step[k] && len < sizeof(msg) - 1; k++)
		msg[len++] = step[k];
	msg[len++] = '\n';
	if (write(2, msg, len) < 0)
		_exit(4);
	_exit(3);
}

static int run(const char *name, void (*fn)(int), int flavor)
{
	int before = errors, bad, all = 0;
	double t0 = MPI_Wtime();

	current = name;
	step = "";
	alarm(TEST_TIMEOUT);
	fn(flavor);
	bad = errors - before;
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	alarm(0);
	if (rank == 0) {
		printf("%-4s %-46s %6.2f s\n", all ? "FAIL" : "ok", name,
		       MPI_Wtime() - t0);
		fflush(stdout);
	}
	return all;
}

static const struct test {
	const char *name;
	void (*fn)(int);
	int flavor;
} tests[] = {
	{ "fence put/get, Win_allocate", test_fence, ALLOCATE },
	{ "fence put/get, Win_create", test_fence, CREATE },
	{ "lock exclusive put/get, Win_allocate", test_lock_exclusive,
	  ALLOCATE },
	{ "lock exclusive put/get, Win_create", test_lock_exclusive, CREATE },
	{ "lock shared put/get, Win_allocate", test_lock_shared, ALLOCATE },
	{ "lock shared put/get, Win_create", test_lock_shared, CREATE },
	{ "lock_all+flush put/get, Win_allocate", test_lock_all, ALLOCATE },
	{ "lock_all+flush put/get, Win_create", test_lock_all, CREATE },
	{ "progress while polling own window, Win_create", test_progress,
	  CREATE },
	{ "exclusive lock read-modify-write, Win_create", test_exclusive_rmw,
	  CREATE },
	{ "Accumulate, Win_allocate", test_accumulate, ALLOCATE },
	{ "Accumulate, Win_create", test_accumulate, CREATE },
	{ "Fetch_and_op SUM counter, Win_create", test_fetch_sum, CREATE },
	{ "Fetch_and_op REPLACE chain, Win_create", test_fetch_replace,
	  CREATE },
	{ "Compare_and_swap first wins, Win_create", test_cas_first, CREATE },
	{ "Compare_and_swap spin lock, Win_create", test_cas_lock, CREATE },
	{ "Compare_and_swap chain, Win_create", test_cas_chain, CREATE },
	{ "Get_accumulate SUM, Win_create", test_get_accumulate, CREATE },
};

int main(int argc, char **argv)
{
	int failed = 0, i;
	double t0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2 || nranks > 32000) {
		fprintf(stderr, "mpi_osc needs 2..32000 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	seed0 = argc > 1 ? strtoull(argv[1], NULL, 0) : 1;
	if (rank == 0)
		printf("# mpi_osc: %d ranks, seed %llu\n", nranks,
		       (unsigned long long)seed0);
	if (rank == 0 && (NO_LOCAL_CAS64 || NO_SMALL_MINMAX))
		printf("# avoiding Open MPI osc rdma bugs:%s%s\n",
		       NO_LOCAL_CAS64 ? " no 64-bit compare-and-swap on the "
		       "caller's own memory;" : "", NO_SMALL_MINMAX ?
		       " integer MPI_MAX/MPI_MIN accumulates of counts > 32" :
		       "");
	signal(SIGALRM, on_alarm);
	t0 = MPI_Wtime();
	for (i = 0; i < (int)(sizeof(tests) / sizeof(tests[0])); i++)
		failed += run(tests[i].name, tests[i].fn, tests[i].flavor) != 0;
	if (rank == 0) {
		printf("# %d ranks, %d test(s) failed, %.1f s\n", nranks,
		       failed, MPI_Wtime() - t0);
		if (!failed)
			printf("mpi_osc OK\n");
		fflush(stdout);
		if (failed)
			MPI_Abort(MPI_COMM_WORLD, 1);
	}
	MPI_Finalize();
	return failed != 0;
}
