/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A bounded MPI soak for any number of ranks >= 2, run in rounds until
 * SOAK_SECONDS (default 60) have passed or SOAK_MAX_OPS operations (summed
 * over the ranks) were done. Every round, all derived from SOAK_SEED
 * (default 1) and the round number, so that every rank knows what every
 * other sends:
 *  - tagged traffic: each rank sends 0..3 messages of 1 B..1 MiB
 *    (log-uniform) to every other rank with MPI_Isend, tags varying with
 *    the round; the receiver takes about two thirds with MPI_Irecv naming
 *    source and tag and the rest with MPI_ANY_SOURCE/MPI_ANY_TAG (posted
 *    after the named ones, so they only ever match the rest). Every
 *    message is checked: its length, and its bytes against the pattern of
 *    (seed, round, source, index) that the receiver generates itself;
 *  - RMA, unless SOAK_RMA=0: in an MPI_Win_allocate window, each rank
 *    MPI_Puts 1 B..256 KiB into its own slot at a target, fence, the target
 *    checks the slot; the origin MPI_Gets the same bytes back, fence,
 *    checks them; and MPI_Accumulate (MPI_SUM, int64) adds to counters
 *    the target checks against a running expected sum;
 *  - an MPI_Allreduce that ends the round and decides whether to go on.
 * Every rank samples VmRSS once warmed up (after WARM_SECONDS or a sixth of
 * the run, whichever is less) and at the end; the growth must stay within
 * SOAK_RSS_SLACK_KIB (default 8192). Rank 0 prints one line per rank and a
 * summary "# soak: ..." and, when there were no errors, at least one round
 * and flat memory, "# mpi_soak: OK"; exits non-zero otherwise.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MSGS 3		/* per (source, destination) and round */
#define MAX_SIZE (1 << 20)
#define NAMED_BASE 100		/* tags: base + (round % 64) * 16 + index */
#define WILD_BASE 2000
#define SLOT (256 << 10)	/* window bytes per origin */
#define NACC 16			/* int64 counters per origin */
#define WARM_SECONDS 5.0

static int rank, nranks, errors;
static uint64_t seed = 1;

#define FAIL(...)							\
	do {								\
		if (errors++ < 10) {					\
			fprintf(stderr, "rank %d: ", rank);		\
			fprintf(stderr, __VA_ARGS__);			\
		}							\
	} while (0)

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* A generator for one (round, a, b, what) stream. */
static uint64_t stream(long round, int a, int b, int what)
{
	return mix(seed ^ mix((uint64_t)round << 24 ^ (uint64_t)a << 12 ^
			      (uint64_t)b ^ (uint64_t)what << 40));
}

static uint64_t next(uint64_t *s)
{
	*s = mix(*s);
	return *s;
}

/* 1..max, log-uniform */
static long pick_size(uint64_t *s, long max)
{
	int bits = 0, e;
	long n;

	while ((1L << bits) < max)
		bits++;
	e = (int)(next(s) % (uint64_t)(bits + 1));
	n = 1 + (long)(next(s) % (uint64_t)(1L << e));
	return n > max ? max : n;
}

/* The messages src sends dst in a round. */
struct plan {
	int count;
	long size[MAX_MSGS];
	int wild[MAX_MSGS];	/* received with ANY_SOURCE/ANY_TAG */
};

static struct plan plan_of(long round, int src, int dst)
{
	uint64_t s = stream(round, src, dst, 1);
	struct plan p;
	int i;

	memset(&p, 0, sizeof(p));
	p.count = (int)(next(&s) % (MAX_MSGS + 1));
	for (i = 0; i < p.count; i++) {
		p.size[i] = pick_size(&s, MAX_SIZE);
		p.wild[i] = next(&s) % 3 == 0;
	}
	return p;
}

static int tag_of(long round, int index, int wild)
{
	return (wild ? WILD_BASE : NAMED_BASE) + (int)(round % 64) * 16 + index;
}

/* Fills b with the pattern of key; returns nothing, see pattern_bad. */
static void pattern(unsigned char *b, long n, uint64_t key)
{
	uint64_t x = key;
	long i = 0;

	for (; i + 8 <= n; i += 8) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		memcpy(b + i, &x, 8);
	}
	x = x * 6364136223846793005ull + 1442695040888963407ull;
	for (; i < n; i++)
		b[i] = (unsigned char)(x >> (8 * (i & 7)));
}

/* Index of the first byte of b that differs from key's pattern, or -1. */
static long pattern_bad(const unsigned char *b, long n, uint64_t key)
{
	uint64_t x = key, y;
	long i = 0, k;

	for (; i + 8 <= n; i += 8) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		memcpy(&y, b + i, 8);
		if (y != x)
			for (k = 0; k < 8; k++)
				if (b[i + k] != (unsigned char)(x >> (8 * k)))
					return i + k;
	}
	x = x * 6364136223846793005ull + 1442695040888963407ull;
	for (; i < n; i++)
		if (b[i] != (unsigned char)(x >> (8 * (i & 7))))
			return i;
	return -1;
}

static uint64_t msg_key(long round, int src, int dst, int index)
{
	return stream(round, src, dst, 16 + index);
}

static long vmrss_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "rank %d: out of memory (%zu)\n", rank, n);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return p;
}

/* What a rank did, summed at the end. */
struct tally {
	long long ops;		/* messages sent, puts, gets, accumulates */
	long long bytes;	/* bytes checked on arrival */
	long long offhost;	/* bytes sent to ranks on another node */
};

static char (*names)[MPI_MAX_PROCESSOR_NAME];
static struct tally t;

/* ---- tagged traffic */

struct msgs {
	unsigned char *sarena, *rarena;
	MPI_Request *req;
	/* receives: who and what (wildcards learn it from the status) */
	int *rsrc;
	long *rcap;
	unsigned char **rbuf;
};

static void msgs_init(struct msgs *m)
{
	size_t n = (size_t)nranks * MAX_MSGS;

	/* touched now, so that RSS does not grow as larger rounds come */
	m->sarena = xmalloc(n * MAX_SIZE);
	m->rarena = xmalloc(n * (MAX_SIZE + 1));
	memset(m->sarena, 0, n * MAX_SIZE);
	memset(m->rarena, 0, n * (MAX_SIZE + 1));
	m->req = xmalloc(2 * n * sizeof(*m->req));
	m->rsrc = xmalloc(n * sizeof(*m->rsrc));
	m->rcap = xmalloc(n * sizeof(*m->rcap));
	m->rbuf = xmalloc(n * sizeof(*m->rbuf));
}

static void msgs_fini(struct msgs *m)
{
	free(m->sarena);
	free(m->rarena);
	free(m->req);
	free(m->rsrc);
	free(m->rcap);
	free(m->rbuf);
}

/* Checks one arrived message against its plan and pattern. */
static void check_arrival(long round, const MPI_Status *st,
			  const unsigned char *buf)
{
	int src = st->MPI_SOURCE, tag = st->MPI_TAG, wild, index, count;
	struct plan p;
	long at;

	wild = tag >= WILD_BASE;
	index = (tag - (wild ? WILD_BASE : NAMED_BASE)) % 16;
	if ((tag - (wild ? WILD_BASE : NAMED_BASE)) / 16 != round % 64 ||
	    src < 0 || src >= nranks || src == rank) {
		FAIL("round %ld: message from %d with tag %d\n", round, src,
		     tag);
		return;
	}
	p = plan_of(round, src, rank);
	if (index >= p.count || p.wild[index] != wild) {
		FAIL("round %ld: unplanned message from %d tag %d\n", round,
		     src, tag);
		return;
	}
	MPI_Get_count(st, MPI_BYTE, &count);
	if (count != p.size[index]) {
		FAIL("round %ld: from %d #%d: %d bytes, expected %ld\n",
		     round, src, index, count, p.size[index]);
		return;
	}
	at = pattern_bad(buf, count, msg_key(round, src, rank, index));
	if (at >= 0) {
		FAIL("round %ld: from %d #%d size %d: byte %ld corrupted\n",
		     round, src, index, count, at);
		return;
	}
	t.bytes += count;
}

/* Posts the named receives, then the wildcards; returns their count. */
static int post_receives(struct msgs *m, long round, int *nwild_out)
{
	unsigned char *at = m->rarena;
	long wildcap = 1;
	int src, i, n = 0, nwild = 0;

	for (src = 0; src < nranks; src++) {
		struct plan p;

		if (src == rank)
			continue;
		p = plan_of(round, src, rank);
		for (i = 0; i < p.count; i++) {
			if (p.wild[i]) {
				nwild++;
				if (p.size[i] > wildcap)
					wildcap = p.size[i];
				continue;
			}
			/* one byte more: a longer message would truncate */
			MPI_Irecv(at, (int)p.size[i] + 1, MPI_BYTE, src,
				  tag_of(round, i, 0), MPI_COMM_WORLD,
				  &m->req[n]);
			m->rbuf[n] = at;
			at += p.size[i] + 1;
			n++;
		}
	}
	for (i = 0; i < nwild; i++) {
		MPI_Irecv(at, (int)wildcap + 1, MPI_BYTE, MPI_ANY_SOURCE,
			  MPI_ANY_TAG, MPI_COMM_WORLD, &m->req[n]);
		m->rbuf[n] = at;
		at += wildcap + 1;
		n++;
	}
	*nwild_out = nwild;
	return n;
}

static int post_sends(struct msgs *m, long round, MPI_Request *req)
{
	unsigned char *at = m->sarena;
	int dst, i, n = 0;

	for (dst = 0; dst < nranks; dst++) {
		struct plan p;

		if (dst == rank)
			continue;
		p = plan_of(round, rank, dst);
		for (i = 0; i < p.count; i++) {
			pattern(at, p.size[i], msg_key(round, rank, dst, i));
			MPI_Isend(at, (int)p.size[i], MPI_BYTE, dst,
				  tag_of(round, i, p.wild[i]), MPI_COMM_WORLD,
				  &req[n++]);
			t.ops++;
			if (strcmp(names[dst], names[rank]))
				t.offhost += p.size[i];
			at += p.size[i];
		}
	}
	return n;
}

static void tagged_round(struct msgs *m, long round)
{
	MPI_Status *st;
	int nrecv, nsend, nwild, i;

	nrecv = post_receives(m, round, &nwild);
	nsend = post_sends(m, round, m->req + nrecv);
	st = xmalloc((size_t)(nrecv + nsend) * sizeof(*st));
	MPI_Waitall(nrecv + nsend, m->req, st);
	for (i = 0; i < nrecv; i++)
		check_arrival(round, &st[i], m->rbuf[i]);
	free(st);
	(void)nwild;
}

/* ---- RMA in a window: puts, gets and accumulates, fence epochs */

struct rma {
	MPI_Win win;
	unsigned char *base;	/* nranks slots, then the counters */
	int64_t *acc;		/* nranks * NACC counters */
	int64_t *want;		/* what acc must hold */
	unsigned char *got;	/* MPI_Get lands here */
};

static MPI_Aint rma_bytes(void)
{
	return (MPI_Aint)nranks * SLOT +
	       (MPI_Aint)nranks * NACC * (MPI_Aint)sizeof(int64_t);
}

static void rma_init(struct rma *r)
{
	MPI_Win_allocate(rma_bytes(), 1, MPI_INFO_NULL, MPI_COMM_WORLD,
			 &r->base, &r->win);
	memset(r->base, 0, (size_t)rma_bytes());
	r->acc = (int64_t *)(r->base + (size_t)nranks * SLOT);
	r->want = calloc((size_t)nranks * NACC, sizeof(int64_t));
	r->got = xmalloc(SLOT);
	if (!r->want)
		MPI_Abort(MPI_COMM_WORLD, 2);
	MPI_Win_fence(0, r->win);
}

static void rma_fini(struct rma *r)
{
	MPI_Win_free(&r->win);
	free(r->want);
	free(r->got);
}

/* Where origin puts in a round: target, offset and length in its slot. */
struct put {
	int target;
	long off, len;
};

static struct put put_of(long round, int origin)
{
	uint64_t s = stream(round, origin, 0, 2);
	struct put p;

	p.target = (origin + 1 + (int)(next(&s) % (uint64_t)(nranks - 1))) %
		   nranks;
	p.len = pick_size(&s, SLOT);
	p.off = (long)(next(&s) % (uint64_t)(SLOT - p.len + 1));
	return p;
}

static int64_t acc_val(long round, int origin, int i)
{
	return (int64_t)(stream(round, origin, i, 3) % 1000003) - 500000;
}

static void rma_round(struct rma *r, long round)
{
	struct put mine = put_of(round, rank), p;
	int64_t add[NACC];
	uint64_t key = stream(round, rank, 0, 4);
	unsigned char *src = r->got;
	int o, i;
	long at;

	/* epoch 1: put into my slot at the target, accumulate my counters */
	pattern(src, mine.len, key);
	for (i = 0; i < NACC; i++)
		add[i] = acc_val(round, rank, i);
	MPI_Put(src, (int)mine.len, MPI_BYTE, mine.target,
		(MPI_Aint)rank * SLOT + mine.off, (int)mine.len, MPI_BYTE,
		r->win);
	MPI_Accumulate(add, NACC, MPI_INT64_T, mine.target,
		       (MPI_Aint)nranks * SLOT +
			       (MPI_Aint)rank * NACC * (MPI_Aint)sizeof(int64_t),
		       NACC, MPI_INT64_T, MPI_SUM, r->win);
	t.ops += 2;
	if (strcmp(names[mine.target], names[rank]))
		t.offhost += mine.len + (long)sizeof(add);
	MPI_Win_fence(0, r->win);

	/* the target checks what each origin put and added */
	for (o = 0; o < nranks; o++) {
		p = put_of(round, o);
		if (p.target != rank)
			continue;
		at = pattern_bad(r->base + (size_t)o * SLOT + p.off, p.len,
				 stream(round, o, 0, 4));
		if (at >= 0)
			FAIL("round %ld: put from %d (%ld bytes at %ld): byte "
			     "%ld wrong\n", round, o, p.len, p.off, at);
		else
			t.bytes += p.len;
		for (i = 0; i < NACC; i++) {
			r->want[o * NACC + i] += acc_val(round, o, i);
			if (r->acc[o * NACC + i] != r->want[o * NACC + i])
				FAIL("round %ld: counter %d of %d is %lld, "
				     "expected %lld\n", round, i, o,
				     (long long)r->acc[o * NACC + i],
				     (long long)r->want[o * NACC + i]);
		}
		t.bytes += (long long)sizeof(add);
	}
	MPI_Win_fence(0, r->win);

	/* epoch 2: get the bytes back from the target */
	memset(r->got, 0x5a, mine.len);
	MPI_Get(r->got, (int)mine.len, MPI_BYTE, mine.target,
		(MPI_Aint)rank * SLOT + mine.off, (int)mine.len, MPI_BYTE,
		r->win);
	t.ops++;
	MPI_Win_fence(0, r->win);
	at = pattern_bad(r->got, mine.len, key);
	if (at >= 0)
		FAIL("round %ld: get from %d (%ld bytes at %ld): byte %ld "
		     "wrong\n", round, mine.target, mine.len, mine.off, at);
	else
		t.bytes += mine.len;
}

/* ---- driver */

static double env_num(const char *name, double dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtod(v, NULL) : dflt;
}

struct rss {
	long warm, end;
};

static void report(const struct rss *mine, long rounds, double secs,
		   long slack)
{
	struct rss *all = NULL;
	struct tally sum;
	long worst = 0;
	int all_errors = 0, i, flat = 1;

	if (rank == 0)
		all = xmalloc((size_t)nranks * sizeof(*all));
	MPI_Gather(mine, 2, MPI_LONG, all, 2, MPI_LONG, 0, MPI_COMM_WORLD);
	MPI_Reduce(&t.ops, &sum.ops, 3, MPI_LONG_LONG, MPI_SUM, 0,
		   MPI_COMM_WORLD);
	MPI_Reduce(&errors, &all_errors, 1, MPI_INT, MPI_SUM, 0,
		   MPI_COMM_WORLD);
	if (rank != 0)
		return;
	for (i = 0; i < nranks; i++) {
		long growth = all[i].end - all[i].warm;

		if (all[i].warm < 0 || all[i].end < 0 || growth > slack)
			flat = 0;
		if (growth > worst)
			worst = growth;
		printf("rank %d on %s: VmRSS %ld KiB warm, %ld KiB at the end, "
		       "%+ld KiB\n", i, names[i], all[i].warm, all[i].end,
		       growth);
	}
	printf("# soak: %ld rounds, %lld ops, %lld bytes verified, %lld "
	       "bytes off-host, %d errors, RSS growth max %ld KiB (limit %ld "
	       "KiB), %.0f s\n", rounds, sum.ops, sum.bytes, sum.offhost,
	       all_errors, worst, slack, secs);
	if (!all_errors && flat && rounds > 0)
		printf("# mpi_soak: OK\n");
	else if (!flat)
		printf("# memory grew by more than %ld KiB\n", slack);
	fflush(stdout);
	free(all);
	errors = all_errors + !flat + (rounds == 0);
}

int main(int argc, char **argv)
{
	double secs, max_ops, warm_at, t0, now;
	int use_rma, go = 1, len;
	long rounds = 0, slack;
	struct rss rss = { -1, -1 };
	struct msgs m;
	struct rma r;
	char name[MPI_MAX_PROCESSOR_NAME];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2) {
		fprintf(stderr, "mpi_soak needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	secs = env_num("SOAK_SECONDS", 60);
	max_ops = env_num("SOAK_MAX_OPS", 1e12);
	seed = (uint64_t)env_num("SOAK_SEED", 1);
	use_rma = env_num("SOAK_RMA", 1) != 0;
	slack = (long)env_num("SOAK_RSS_SLACK_KIB", 8192);
	warm_at = secs / 6 < WARM_SECONDS ? secs / 6 : WARM_SECONDS;

	names = xmalloc((size_t)nranks * sizeof(*names));
	memset(name, 0, sizeof(name));
	MPI_Get_processor_name(name, &len);
	MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names,
		      MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
	msgs_init(&m);
	if (use_rma)
		rma_init(&r);
	if (rank == 0) {
		printf("# mpi_soak: %d ranks, %.0f s, seed %llu, RMA %s\n",
		       nranks, secs, (unsigned long long)seed,
		       use_rma ? "on" : "off");
		fflush(stdout);
	}
	t0 = MPI_Wtime();
	while (go) {
		long long ops;

		tagged_round(&m, rounds);
		if (use_rma)
			rma_round(&r, rounds);
		rounds++;
		now = MPI_Wtime() - t0;
		if (rss.warm < 0 && now >= warm_at)
			rss.warm = vmrss_kib();
		/* rank 0's clock and everyone's operations decide */
		MPI_Allreduce(&t.ops, &ops, 1, MPI_LONG_LONG, MPI_SUM,
			      MPI_COMM_WORLD);
		go = now < secs && ops < max_ops;
		MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
	}
	rss.end = vmrss_kib();
	if (rss.warm < 0)	/* a run shorter than the warm-up */
		rss.warm = rss.end;
	if (use_rma)
		rma_fini(&r);
	msgs_fini(&m);
	report(&rss, rounds, MPI_Wtime() - t0, slack);
	free(names);
	MPI_Finalize();
	return rank == 0 && errors ? 1 : 0;
}
