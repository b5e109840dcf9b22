/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPI correctness suite for any number of ranks >= 2. Each test is one
 * function; every message's length, envelope and contents are checked:
 * simultaneous first contact between all ranks (the program's first MPI
 * communication, no barrier before it), sends to self, a ring, Bcast,
 * Allreduce, Alltoall, Alltoallv, Probe/Iprobe/Mprobe/Improbe, Ssend and
 * its synchronous completion, cancel of a posted receive, a storm of
 * unexpected messages, MPI_ANY_SOURCE/MPI_ANY_TAG receives, pairs of ranks
 * with 256 messages out to each other at once, and an Alltoall
 * of 64 KiB blocks. Prints one line per test; rank 0 ends with
 * "# mpi_suite: OK" when everything passed, and the exit status is
 * non-zero on any error. A test still running after TEST_TIMEOUT seconds
 * names itself and ends the job. Arguments name tests to skip (debugging
 * only: a run with skipped tests never prints OK).
 */
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEADLINE 30.0		/* seconds a polling loop may spin */

static int rank, nranks, errors;
static const char *current = "init";

static void fail(int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	if (errors++ >= 20)
		return;
	n = snprintf(msg, sizeof(msg), "rank %d: %s (line %d): ", rank,
		     current, line);
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - n - 1, fmt, ap);
	va_end(ap);
	strcat(msg, "\n");
	fputs(msg, stderr);	/* one write: lines of ranks do not mix */
	fflush(stderr);
}

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond))						\
			fail(__LINE__, __VA_ARGS__);			\
	} while (0)

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "rank %d: out of memory\n", rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	return p;
}

static unsigned char pat(int a, int b, long i)
{
	return (unsigned char)(a * 131 + b * 29 + i * 7 + (i >> 8) + 1);
}

static void fill(unsigned char *buf, long n, int a, int b)
{
	long i;

	for (i = 0; i < n; i++)
		buf[i] = pat(a, b, i);
}

static long bad_at(const unsigned char *buf, long n, int a, int b)
{
	long i;

	for (i = 0; i < n; i++)
		if (buf[i] != pat(a, b, i))
			return i;
	return -1;
}

/* Checks a received message's status, length and pattern (a, b). */
static void check_msg(const unsigned char *buf, MPI_Status *st, int src,
		      int tag, long n, int a, int b)
{
	int count = -1;
	long at;

	MPI_Get_count(st, MPI_BYTE, &count);
	CHECK(st->MPI_SOURCE == src, "source %d, expected %d",
	      st->MPI_SOURCE, src);
	CHECK(st->MPI_TAG == tag, "tag %d, expected %d", st->MPI_TAG, tag);
	CHECK(count == n, "from %d tag %d: %d bytes, expected %ld", src, tag,
	      count, n);
	if (count == n && (at = bad_at(buf, n, a, b)) >= 0)
		CHECK(0, "from %d tag %d size %ld: byte %ld is 0x%02x, "
		      "expected 0x%02x", src, tag, n, at, buf[at],
		      pat(a, b, at));
}

/* Receives into a buffer of cap bytes and checks (src, tag, n, a, b). */
static void recv_check(unsigned char *buf, long cap, int src, int tag,
		       long n, int a, int b)
{
	MPI_Status st;

	memset(buf, 0x5a, cap);
	MPI_Recv(buf, (int)cap, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st);
	check_msg(buf, &st, src, tag, n, a, b);
}

static int next_rank(int d)
{
	return (rank + d) % nranks;
}

static int prev_rank(int d)
{
	return (rank - d % nranks + nranks) % nranks;
}

/* ---- the tests ---- */

/*
 * Every rank sends a small (eager) and a large (rendezvous) message to
 * every other rank at once, so that all connections are opened from both
 * sides at the same time.
 */
#define COLL_SMALL 100
#define COLL_LARGE (64 << 10)
static void test_collision(void)
{
	long each = COLL_SMALL + nranks + COLL_LARGE + nranks;
	unsigned char *sbuf = xmalloc(each * nranks);
	unsigned char *rbuf = xmalloc(each);
	MPI_Request *req = xmalloc(2 * nranks * sizeof(*req));
	int p, k, nreq = 0;

	for (p = 0; p < nranks; p++) {
		unsigned char *s = sbuf + p * each;
		long small = COLL_SMALL + p, large = COLL_LARGE + p;

		if (p == rank)
			continue;
		fill(s, small, rank, p);
		fill(s + small, large, p, rank);
		MPI_Isend(s, (int)small, MPI_BYTE, p, 1, MPI_COMM_WORLD,
			  &req[nreq++]);
		MPI_Isend(s + small, (int)large, MPI_BYTE, p, 2,
			  MPI_COMM_WORLD, &req[nreq++]);
	}
	for (k = 1; k < nranks; k++) {
		p = next_rank(k);
		recv_check(rbuf, each, p, 1, COLL_SMALL + rank, p, rank);
		recv_check(rbuf, each, p, 2, COLL_LARGE + rank, rank, p);
	}
	MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
	free(req);
	free(rbuf);
	free(sbuf);
}

/* Sends to self through the provider: small, eager limit, rendezvous. */
static void test_self(void)
{
	static const long sizes[] = { 0, 1, 256, 16384, 16385, 1 << 20 };
	long cap = (1 << 20) + 1, i;
	unsigned char *s = xmalloc(cap), *r = xmalloc(cap);
	MPI_Request req;

	for (i = 0; i < (long)(sizeof(sizes) / sizeof(sizes[0])); i++) {
		fill(s, sizes[i], rank, (int)i);
		MPI_Isend(s, (int)sizes[i], MPI_BYTE, rank, 40 + (int)i,
			  MPI_COMM_WORLD, &req);
		recv_check(r, cap, rank, 40 + (int)i, sizes[i], rank, (int)i);
		MPI_Wait(&req, MPI_STATUS_IGNORE);
	}
	free(r);
	free(s);
}

/*
 * A token and a buffer go round the ring once per size; every hop checks
 * what its predecessor wrote and writes its own pattern.
 */
static void test_ring(void)
{
	static const long sizes[] = { 0, 1, 3000, 16384, 16385, 200000,
				      1 << 20, 4 << 20 };
	long cap = (4 << 20) + 1;
	unsigned char *buf = xmalloc(cap);
	int lap, laps = (int)(sizeof(sizes) / sizeof(sizes[0]));
	int next = next_rank(1), prev = prev_rank(1);
	MPI_Status st;

	for (lap = 0; lap < laps; lap++) {
		long n = sizes[lap];
		int token, expect = lap * 1000 + nranks * (nranks - 1) / 2;

		if (rank == 0) {
			token = lap * 1000;
			fill(buf, n, lap, 0);
			MPI_Send(&token, 1, MPI_INT, next, 10, MPI_COMM_WORLD);
			MPI_Send(buf, (int)n, MPI_BYTE, next, 11,
				 MPI_COMM_WORLD);
		}
		token = -1;
		MPI_Recv(&token, 1, MPI_INT, prev, 10, MPI_COMM_WORLD, &st);
		recv_check(buf, cap, prev, 11, n, lap, prev);
		if (rank == 0) {
			CHECK(token == expect, "lap %d: token %d, expected %d",
			      lap, token, expect);
			continue;
		}
		token += rank;
		fill(buf, n, lap, rank);
		MPI_Send(&token, 1, MPI_INT, next, 10, MPI_COMM_WORLD);
		MPI_Send(buf, (int)n, MPI_BYTE, next, 11, MPI_COMM_WORLD);
	}
	free(buf);
}

static void test_bcast(void)
{
	static const int counts[] = { 1, 1000, 300000 };
	int *buf = xmalloc(300000 * sizeof(int));
	int root, c, i, bad;

	for (root = 0; root < nranks; root++)
		for (c = 0; c < 3; c++) {
			int n = counts[c];

			for (i = 0; i < n; i++)
				buf[i] = rank == root ? root * 7 + i * 3 + n
						      : -1;
			MPI_Bcast(buf, n, MPI_INT, root, MPI_COMM_WORLD);
			for (i = 0, bad = -1; i < n && bad < 0; i++)
				if (buf[i] != root * 7 + i * 3 + n)
					bad = i;
			CHECK(bad < 0, "root %d count %d: element %d is %d",
			      root, n, bad, bad < 0 ? 0 : buf[bad]);
		}
	free(buf);
}

static void test_allreduce(void)
{
	static const int counts[] = { 1, 1000, 100000 };
	int *iin = xmalloc(100000 * sizeof(int));
	int *iout = xmalloc(100000 * sizeof(int));
	double *din = xmalloc(100000 * sizeof(double));
	double *dout = xmalloc(100000 * sizeof(double));
	int tri = nranks * (nranks - 1) / 2;
	int c, i, ibad, dbad, pbad;

	for (c = 0; c < 3; c++) {
		int n = counts[c];

		for (i = 0; i < n; i++) {
			iin[i] = rank * (i % 97) + i;
			iout[i] = -1;
			din[i] = rank * 0.5 + i * 0.25;
			dout[i] = -1;
		}
		MPI_Allreduce(iin, iout, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Allreduce(din, dout, n, MPI_DOUBLE, MPI_SUM,
			      MPI_COMM_WORLD);
		/* in place: iin becomes the sum too */
		MPI_Allreduce(MPI_IN_PLACE, iin, n, MPI_INT, MPI_SUM,
			      MPI_COMM_WORLD);
		ibad = dbad = pbad = -1;
		for (i = n - 1; i >= 0; i--) {
			int isum = tri * (i % 97) + nranks * i;
			double dsum = tri * 0.5 + nranks * i * 0.25;

			if (iout[i] != isum)
				ibad = i;
			if (dout[i] != dsum)
				dbad = i;
			if (iin[i] != isum)
				pbad = i;
		}
		CHECK(ibad < 0, "int count %d: element %d wrong", n, ibad);
		CHECK(dbad < 0, "double count %d: element %d wrong", n, dbad);
		CHECK(pbad < 0, "in-place int count %d: element %d wrong", n,
		      pbad);
	}
	free(dout);
	free(din);
	free(iout);
	free(iin);
}

static int a2a_val(int from, int to, int k, int seed)
{
	return from * 1000003 + to * 10007 + k * 3 + seed;
}

/* Alltoall of blk ints per peer, checked. */
static void alltoall_check(int blk, int seed)
{
	long total = (long)blk * nranks;
	int *s = xmalloc(total * sizeof(int));
	int *r = xmalloc(total * sizeof(int));
	int p, k, badp = -1, badk = -1;

	for (p = 0; p < nranks; p++)
		for (k = 0; k < blk; k++) {
			s[(long)p * blk + k] = a2a_val(rank, p, k, seed);
			r[(long)p * blk + k] = -1;
		}
	MPI_Alltoall(s, blk, MPI_INT, r, blk, MPI_INT, MPI_COMM_WORLD);
	for (p = 0; p < nranks && badp < 0; p++)
		for (k = 0; k < blk && badp < 0; k++)
			if (r[(long)p * blk + k] != a2a_val(p, rank, k, seed)) {
				badp = p;
				badk = k;
			}
	CHECK(badp < 0, "block %d ints: from %d element %d wrong", blk, badp,
	      badk);
	free(r);
	free(s);
}

static void test_alltoall(void)
{
	alltoall_check(1, 1);
	alltoall_check(16, 2);
	alltoall_check(1000, 3);
}

/* Counts from 0 to 9970 ints, some crossing the eager limit. */
static int a2av_count(int from, int to)
{
	return (from * 7 + to * 3) % 11 * 997;
}

#define GAP 3			/* untouched ints between blocks */
static void test_alltoallv(void)
{
	int *sc = xmalloc(nranks * sizeof(int));
	int *sd = xmalloc(nranks * sizeof(int));
	int *rc = xmalloc(nranks * sizeof(int));
	int *rd = xmalloc(nranks * sizeof(int));
	int p, k, stot = 0, rtot = 0, bad = 0;
	int *s, *r;

	for (p = 0; p < nranks; p++) {
		sc[p] = a2av_count(rank, p);
		rc[p] = a2av_count(p, rank);
		sd[p] = stot;
		rd[p] = rtot;
		stot += sc[p] + GAP;
		rtot += rc[p] + GAP;
	}
	s = xmalloc(stot * sizeof(int));
	r = xmalloc(rtot * sizeof(int));
	for (k = 0; k < stot; k++)
		s[k] = -2;
	for (k = 0; k < rtot; k++)
		r[k] = -1;
	for (p = 0; p < nranks; p++)
		for (k = 0; k < sc[p]; k++)
			s[sd[p] + k] = a2a_val(rank, p, k, 4);
	MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD);
	for (p = 0; p < nranks; p++) {
		for (k = 0; k < rc[p]; k++)
			if (r[rd[p] + k] != a2a_val(p, rank, k, 4) &&
			    bad++ < 3)
				CHECK(0, "from %d (%d ints): element %d is %d",
				      p, rc[p], k, r[rd[p] + k]);
		for (k = 0; k < GAP; k++)
			if (r[rd[p] + rc[p] + k] != -1 && bad++ < 3)
				CHECK(0, "from %d: gap after block written", p);
	}
	free(r);
	free(s);
	free(rd);
	free(rc);
	free(sd);
	free(sc);
}

/*
 * Each rank sends messages of several sizes to its successor; the
 * successor finds each one (in reverse order of tags) with one of the
 * probe calls, sizes its buffer from MPI_Get_count, then receives it.
 */
static const long probe_sizes[] = { 0, 1, 200, 5000, 16384, 16385, 100000,
				    2 << 20 };
#define NPROBE ((int)(sizeof(probe_sizes) / sizeof(probe_sizes[0])))
enum { PROBE, IPROBE, MPROBE, IMPROBE };
static const char *const probe_names[] = { "MPI_Probe", "MPI_Iprobe",
					   "MPI_Mprobe", "MPI_Improbe" };

static void probe_variant(int v)
{
	int to = next_rank(1), from = prev_rank(1), tag0 = 200 + v * 16;
	unsigned char *sbuf = xmalloc(4 << 20);
	MPI_Request req[NPROBE];
	long off = 0;
	int k, flag;

	for (k = 0; k < NPROBE; k++) {
		fill(sbuf + off, probe_sizes[k], v, k);
		MPI_Isend(sbuf + off, (int)probe_sizes[k], MPI_BYTE, to,
			  tag0 + k, MPI_COMM_WORLD, &req[k]);
		off += probe_sizes[k];
	}
	for (k = NPROBE - 1; k >= 0; k--) {
		MPI_Message msg = MPI_MESSAGE_NULL;
		MPI_Status st, rst;
		int count = -1, tag = tag0 + k;
		double t0 = MPI_Wtime();
		unsigned char *buf;

		flag = 0;
		switch (v) {
		case PROBE:
			MPI_Probe(from, tag, MPI_COMM_WORLD, &st);
			break;
		case IPROBE:
			while (!flag && MPI_Wtime() - t0 < DEADLINE)
				MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag,
					   &st);
			break;
		case MPROBE:
			MPI_Mprobe(from, tag, MPI_COMM_WORLD, &msg, &st);
			break;
		case IMPROBE:
			while (!flag && MPI_Wtime() - t0 < DEADLINE)
				MPI_Improbe(from, tag, MPI_COMM_WORLD, &flag,
					    &msg, &st);
			break;
		}
		if ((v == IPROBE || v == IMPROBE) && !flag) {
			CHECK(0, "%s: tag %d from %d not found in %.0f s",
			      probe_names[v], tag, from, DEADLINE);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		MPI_Get_count(&st, MPI_BYTE, &count);
		CHECK(st.MPI_SOURCE == from && st.MPI_TAG == tag,
		      "%s: status source %d tag %d, expected %d %d",
		      probe_names[v], st.MPI_SOURCE, st.MPI_TAG, from, tag);
		CHECK(count == probe_sizes[k], "%s: count %d, expected %ld",
		      probe_names[v], count, probe_sizes[k]);
		if (count < 0 || count > (4 << 20))
			MPI_Abort(MPI_COMM_WORLD, 2);
		buf = xmalloc(count);
		memset(buf, 0x5a, count);
		if (v == MPROBE || v == IMPROBE) {
			CHECK(msg != MPI_MESSAGE_NULL, "%s: no message handle",
			      probe_names[v]);
			MPI_Mrecv(buf, count, MPI_BYTE, &msg, &rst);
			CHECK(msg == MPI_MESSAGE_NULL,
			      "MPI_Mrecv left the message handle set");
		} else {
			MPI_Recv(buf, count, MPI_BYTE, from, tag,
				 MPI_COMM_WORLD, &rst);
		}
		check_msg(buf, &rst, from, tag, probe_sizes[k], v, k);
		free(buf);
	}
	/* nothing was sent with this tag */
	MPI_Iprobe(from, 777, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
	CHECK(!flag, "MPI_Iprobe found a message never sent");
	MPI_Improbe(MPI_ANY_SOURCE, 777, MPI_COMM_WORLD, &flag,
		    &(MPI_Message){ MPI_MESSAGE_NULL }, MPI_STATUS_IGNORE);
	CHECK(!flag, "MPI_Improbe found a message never sent");
	MPI_Waitall(NPROBE, req, MPI_STATUSES_IGNORE);
	free(sbuf);
}

static void test_probe(void)
{
	int v;

	for (v = PROBE; v <= IMPROBE; v++)
		probe_variant(v);
}

/*
 * MPI_Ssend to every other rank (small and large), receives pre-posted;
 * then between pairs (even, odd): an MPI_Issend may not complete while the
 * receiver has not posted its receive, which it does only when told to.
 */
static void test_ssend(void)
{
	static const long sizes[] = { 0, 100, 16385, 1 << 20 };
	long cap = (1 << 20) + 1;
	unsigned char *s = xmalloc(cap), *r = xmalloc(cap);
	int d, k, partner = rank ^ 1;

	for (k = 0; k < 4; k++)
		for (d = 1; d < nranks; d++) {
			int to = next_rank(d), from = prev_rank(d);
			MPI_Request req;
			MPI_Status st;

			memset(r, 0x5a, cap);
			MPI_Irecv(r, (int)cap, MPI_BYTE, from, 300 + k,
				  MPI_COMM_WORLD, &req);
			fill(s, sizes[k], rank, to + k);
			MPI_Ssend(s, (int)sizes[k], MPI_BYTE, to, 300 + k,
				  MPI_COMM_WORLD);
			MPI_Wait(&req, &st);
			check_msg(r, &st, from, 300 + k, sizes[k], from,
				  rank + k);
		}
	if (partner >= nranks)
		goto out;
	for (k = 0; k < 4; k++) {
		int go = 0;

		if ((rank & 1) == 0) {
			MPI_Request req;
			double t0 = MPI_Wtime();
			int flag = 0;

			fill(s, sizes[k], rank, k);
			MPI_Issend(s, (int)sizes[k], MPI_BYTE, partner, 310,
				   MPI_COMM_WORLD, &req);
			while (!flag && MPI_Wtime() - t0 < 0.2)
				MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
			CHECK(!flag, "MPI_Issend of %ld bytes completed before "
			      "the receive was posted", sizes[k]);
			MPI_Send(&go, 1, MPI_INT, partner, 311,
				 MPI_COMM_WORLD);
			if (!flag)
				MPI_Wait(&req, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(&go, 1, MPI_INT, partner, 311, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			recv_check(r, cap, partner, 310, sizes[k], partner, k);
		}
	}
out:
	free(r);
	free(s);
}

/*
 * Cancels receives that nothing matches (directed and MPI_ANY_SOURCE,
 * small and large buffers): MPI_Test_cancelled must be true and the buffer
 * untouched. Then a receive that a message may already match: either it is
 * cancelled and the message is still there, or it completes normally.
 */
static void test_cancel(void)
{
	long cap = 1 << 20;
	unsigned char *buf = xmalloc(cap);
	int k, flag;
	MPI_Request req;
	MPI_Status st;

	for (k = 0; k < 4; k++) {
		long n = k & 1 ? cap : 10;
		int src = k & 2 ? MPI_ANY_SOURCE : next_rank(1);
		long i;

		memset(buf, 0x77, n);
		MPI_Irecv(buf, (int)n, MPI_BYTE, src, 999, MPI_COMM_WORLD,
			  &req);
		MPI_Cancel(&req);
		MPI_Wait(&req, &st);
		flag = 0;
		MPI_Test_cancelled(&st, &flag);
		CHECK(flag, "receive of %ld bytes from %d not cancelled", n,
		      src);
		CHECK(req == MPI_REQUEST_NULL, "request not freed");
		for (i = 0; i < n && buf[i] == 0x77; i++)
			;
		CHECK(i == n, "cancelled receive wrote byte %ld", i);
	}
	/* a message that has arrived before the receive is cancelled */
	fill(buf, 5000, rank, 1);
	MPI_Isend(buf, 5000, MPI_BYTE, next_rank(1), 998, MPI_COMM_WORLD,
		  &req);
	{
		unsigned char *r = xmalloc(8192);
		MPI_Request rreq;

		MPI_Probe(prev_rank(1), 998, MPI_COMM_WORLD, &st);
		memset(r, 0x5a, 8192);
		MPI_Irecv(r, 8192, MPI_BYTE, prev_rank(1), 998,
			  MPI_COMM_WORLD, &rreq);
		MPI_Cancel(&rreq);
		MPI_Wait(&rreq, &st);
		MPI_Test_cancelled(&st, &flag);
		if (flag)	/* still to be received */
			recv_check(r, 8192, prev_rank(1), 998, 5000,
				   prev_rank(1), 1);
		else
			check_msg(r, &st, prev_rank(1), 998, 5000,
				  prev_rank(1), 1);
		free(r);
	}
	MPI_Wait(&req, MPI_STATUS_IGNORE);
	/* the cancelled tag stays empty */
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, &st);
	CHECK(!flag, "a message with the cancelled tag appeared");
	free(buf);
}

/*
 * Odd ranks send 2000 small messages (0..8 KiB) and 8 of 1 MiB to the even
 * rank below before it posts anything; the receiver sleeps, then takes the
 * large ones in reverse order and the small ones in a scrambled tag order.
 */
#define STORM_SMALL 2000
#define STORM_LARGE 8
static long storm_size(int i)
{
	return i < STORM_SMALL ? (long)i * 37 % 8193 : (1 << 20) + i;
}

static void test_storm(void)
{
	int n = STORM_SMALL + STORM_LARGE, i, peer = rank ^ 1;
	long cap = (1 << 20) + n, off, total = 0;
	unsigned char *buf;

	if (peer >= nranks) {
		MPI_Barrier(MPI_COMM_WORLD);
		return;
	}
	if (rank & 1) {
		MPI_Request *req = xmalloc(n * sizeof(*req));

		for (i = 0; i < n; i++)
			total += storm_size(i);
		buf = xmalloc(total);
		MPI_Barrier(MPI_COMM_WORLD);
		for (i = 0, off = 0; i < n; i++) {
			fill(buf + off, storm_size(i), rank, i);
			MPI_Isend(buf + off, (int)storm_size(i), MPI_BYTE,
				  peer, 1000 + i, MPI_COMM_WORLD, &req[i]);
			off += storm_size(i);
		}
		MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
		free(req);
	} else {
		buf = xmalloc(cap);
		MPI_Barrier(MPI_COMM_WORLD);
		sleep(1);
		for (i = n - 1; i >= STORM_SMALL; i--)
			recv_check(buf, cap, peer, 1000 + i, storm_size(i),
				   peer, i);
		for (i = 0; i < STORM_SMALL; i++) {
			int t = (int)((long)i * 7919 % STORM_SMALL);

			recv_check(buf, 8193 + 1, peer, 1000 + t,
				   storm_size(t), peer, t);
		}
	}
	free(buf);
}

/*
 * Each pair of ranks (rank ^ 1) posts 256 receives from the other, then
 * 256 sends to it, eager and then rendezvous sizes: more messages out
 * each way than a peer has credits (osu_bibw -W 256, which hung).
 */
#define BOTH_N 256
static void test_both_ways(void)
{
	static const long size[2] = { 1000, 100000 };
	MPI_Request *req = xmalloc(2 * BOTH_N * sizeof(*req));
	MPI_Status *st = xmalloc(2 * BOTH_N * sizeof(*st));
	int peer = rank ^ 1, i, k;
	unsigned char *in, *out;

	if (peer >= nranks) {
		free(req);
		free(st);
		return;
	}
	in = xmalloc(BOTH_N * size[1]);
	out = xmalloc(BOTH_N * size[1]);
	for (k = 0; k < 2; k++) {
		long n = size[k];

		memset(in, 0x5a, BOTH_N * n);
		for (i = 0; i < BOTH_N; i++) {
			fill(out + i * n, n, rank, i + k);
			MPI_Irecv(in + i * n, (int)n, MPI_BYTE, peer, 3000 + i,
				  MPI_COMM_WORLD, &req[i]);
		}
		for (i = 0; i < BOTH_N; i++)
			MPI_Isend(out + i * n, (int)n, MPI_BYTE, peer, 3000 + i,
				  MPI_COMM_WORLD, &req[BOTH_N + i]);
		MPI_Waitall(2 * BOTH_N, req, st);
		for (i = 0; i < BOTH_N; i++)
			check_msg(in + i * n, &st[i], peer, 3000 + i, n, peer,
				  i + k);
	}
	free(in);
	free(out);
	free(req);
	free(st);
}

/*
 * Every rank in turn is the root: the others send it 20 messages each
 * (sizes up to 100000 bytes), which it receives with MPI_ANY_SOURCE and
 * MPI_ANY_TAG, checking source, tag, count and per-source order. Then
 * MPI_ANY_SOURCE with a given tag and a given source with MPI_ANY_TAG.
 */
#define ANY_K 20
#define ANY_TAG0 10000
static long any_size(int src, int j)
{
	return j == ANY_K - 1 ? 100000 : (src * 13 + j * 101) % 3000;
}

static void test_any(void)
{
	long cap = 100001;
	unsigned char *sbuf = xmalloc(ANY_K * cap), *rbuf = xmalloc(cap);
	int *seen = xmalloc(nranks * sizeof(int));
	MPI_Request req[ANY_K + 2];
	int root, j, src, tag, count;
	MPI_Status st;

	for (root = 0; root < nranks; root++) {
		if (rank != root) {
			for (j = 0; j < ANY_K; j++) {
				long n = any_size(rank, j);

				fill(sbuf + j * cap, n, rank, j);
				MPI_Isend(sbuf + j * cap, (int)n, MPI_BYTE,
					  root, ANY_TAG0 + rank * ANY_K + j,
					  MPI_COMM_WORLD, &req[j]);
			}
			MPI_Waitall(ANY_K, req, MPI_STATUSES_IGNORE);
		} else {
			memset(seen, 0, nranks * sizeof(int));
			for (j = 0; j < (nranks - 1) * ANY_K; j++) {
				memset(rbuf, 0x5a, cap);
				MPI_Recv(rbuf, (int)cap, MPI_BYTE,
					 MPI_ANY_SOURCE, MPI_ANY_TAG,
					 MPI_COMM_WORLD, &st);
				src = st.MPI_SOURCE;
				if (src < 0 || src >= nranks || src == root) {
					CHECK(0, "status source %d", src);
					continue;
				}
				tag = ANY_TAG0 + src * ANY_K + seen[src];
				check_msg(rbuf, &st, src, tag,
					  any_size(src, seen[src]), src,
					  seen[src]);
				seen[src]++;
			}
		}
		MPI_Barrier(MPI_COMM_WORLD);
		/* two tags per sender: A by any source, then B by any tag */
		if (rank != root) {
			for (j = 0; j < 2; j++) {
				fill(sbuf + j * cap, 10 + j, rank, 50 + j);
				MPI_Isend(sbuf + j * cap, 10 + j, MPI_BYTE,
					  root, 6000 + j, MPI_COMM_WORLD,
					  &req[j]);
			}
			MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
			continue;
		}
		memset(seen, 0, nranks * sizeof(int));
		for (j = 0; j < nranks - 1; j++) {
			MPI_Recv(rbuf, (int)cap, MPI_BYTE, MPI_ANY_SOURCE,
				 6001, MPI_COMM_WORLD, &st);
			src = st.MPI_SOURCE;
			if (src < 0 || src >= nranks || src == root ||
			    seen[src]++) {
				CHECK(0, "tag 6001: status source %d", src);
				continue;
			}
			check_msg(rbuf, &st, src, 6001, 11, src, 51);
		}
		for (src = 0; src < nranks; src++) {
			if (src == root)
				continue;
			MPI_Recv(rbuf, (int)cap, MPI_BYTE, src, MPI_ANY_TAG,
				 MPI_COMM_WORLD, &st);
			check_msg(rbuf, &st, src, 6000, 10, src, 50);
		}
	}
	count = 0;
	MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &count,
		   MPI_STATUS_IGNORE);
	CHECK(!count, "a message is left over");
	free(seen);
	free(rbuf);
	free(sbuf);
}

static void test_alltoall_big(void)
{
	int seed;

	for (seed = 10; seed < 13; seed++)
		alltoall_check((64 << 10) / (int)sizeof(int), seed);
}

/* ---- driver ---- */

#define TEST_TIMEOUT 60		/* seconds before a test counts as hung */

static char **skip;		/* names given on the command line */
static int nskip;

/* Async-signal-safe: names the hung test and this rank, then exits. */
static void on_alarm(int sig)
{
	static const char head[] = "mpi_suite: rank ", mid[] = ": hung in ";
	char msg[128], num[12];
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
	msg[len++] = '\n';
	if (write(2, msg, len) < 0)
		_exit(4);
	_exit(3);
}

static int run(const char *name, void (*fn)(void))
{
	int before = errors, bad, all = 0, i;
	double t0 = MPI_Wtime();

	for (i = 0; i < nskip; i++)
		if (strstr(name, skip[i])) {
			if (rank == 0)
				printf("skip %s\n", name);
			return 0;
		}
	current = name;
	alarm(TEST_TIMEOUT);
	fn();
	bad = errors - before;
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	alarm(0);
	if (rank == 0) {
		printf("%-4s %-22s %7.2f s\n", all ? "FAIL" : "ok", name,
		       MPI_Wtime() - t0);
		fflush(stdout);
	}
	return all;
}

int main(int argc, char **argv)
{
	int failed = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks < 2) {
		fprintf(stderr, "mpi_suite needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	skip = argv + 1;	/* mpi_suite [NAME...]: skip tests matching */
	nskip = argc - 1;
	signal(SIGALRM, on_alarm);
	/* must stay the first communication of the program */
	failed += run("connection collision", test_collision) != 0;
	failed += run("send to self", test_self) != 0;
	failed += run("ring", test_ring) != 0;
	failed += run("MPI_Bcast", test_bcast) != 0;
	failed += run("MPI_Allreduce", test_allreduce) != 0;
	failed += run("MPI_Alltoall", test_alltoall) != 0;
	failed += run("MPI_Alltoallv", test_alltoallv) != 0;
	failed += run("probe", test_probe) != 0;
	failed += run("MPI_Ssend", test_ssend) != 0;
	failed += run("cancel", test_cancel) != 0;
	failed += run("unexpected storm", test_storm) != 0;
	failed += run("ANY_SOURCE/ANY_TAG", test_any) != 0;
	failed += run("256 each way", test_both_ways) != 0;
	failed += run("MPI_Alltoall 64 KiB", test_alltoall_big) != 0;
	if (rank == 0) {
		printf("# %d ranks, %d test(s) failed%s\n", nranks, failed,
		       nskip ? ", some skipped" : "");
		if (!failed && !nskip)
			printf("# mpi_suite: OK\n");
	}
	MPI_Finalize();
	return failed != 0;
}
