/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * OSU-style MPI bandwidth between ranks 0 and 1: rank 0 posts a window of
 * MPI_Isend, rank 1 the matching MPI_Irecv into distinct slots, then rank 1
 * answers with a 1-byte ack; sizes 0 B and 1 B to 64 MiB in powers of 4.
 * The window is 64 messages while 64 slots fit in a 512 MiB area (allocated
 * once), fewer for the largest sizes. Every received message has its length
 * and a per-iteration, per-slot stamp at both ends checked; one extra
 * untimed window per size, received into poisoned slots, is checked byte by
 * byte. Prints MB/s (10^6 bytes/s) and messages/s per size; exits non-zero
 * on any error.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_idle.h"

#define MAX_SIZE (64L << 20)
#define WINDOW 64
#define AREA (512L << 20)
#define STAMP 16		/* header + trailer bytes of a stamp */

static int errors;

#define FAIL(...)							\
	do {								\
		if (errors++ < 10)					\
			fprintf(stderr, __VA_ARGS__);			\
	} while (0)

static int window_for(long n)
{
	return n && AREA / n < WINDOW ? (int)(AREA / n) : WINDOW;
}

static int iters_for(long n, int w)
{
	long it = (256L << 20) / (n * w + 1);

	return it < 2 ? 2 : it > 100 ? 100 : (int)it;
}

static uint32_t stamp_of(long n, int it, int slot)
{
	return (uint32_t)(0x9e3779b1u * (uint32_t)(it * WINDOW + slot + 1) ^
			  (uint32_t)n);
}

static unsigned char body(long n, long i)
{
	return (unsigned char)(i * 7 + (i >> 12) + n);
}

/* Fills slot 0 with the body pattern and copies it into the others. */
static void fill_slots(unsigned char *area, long n, int w)
{
	long i;
	int s;

	for (i = 0; i < n; i++)
		area[i] = body(n, i);
	for (s = 1; s < w; s++)
		memcpy(area + s * n, area, n);
}

/*
 * Messages of STAMP bytes or more carry the stamp in their first and last 8
 * bytes; shorter ones are entirely made of stamp-derived bytes.
 */
static void put_stamp(unsigned char *m, long n, uint32_t st)
{
	uint32_t h[2] = { st, (uint32_t)n };
	long i;

	if (n < STAMP) {
		for (i = 0; i < n; i++)
			m[i] = (unsigned char)(st >> (8 * (i & 3))) + i;
		return;
	}
	memcpy(m, h, 8);
	memcpy(m + n - 8, h, 8);
}

static int stamp_ok(const unsigned char *m, long n, uint32_t st)
{
	uint32_t h[2] = { st, (uint32_t)n };
	long i;

	if (n < STAMP) {
		for (i = 0; i < n; i++)
			if (m[i] != (unsigned char)((st >> (8 * (i & 3))) + i))
				return 0;
		return 1;
	}
	return !memcmp(m, h, 8) && !memcmp(m + n - 8, h, 8);
}

static long body_bad(const unsigned char *m, long n)
{
	long i;

	if (n < STAMP)
		return -1;
	for (i = 8; i < n - 8; i++)
		if (m[i] != body(n, i))
			return i;
	return -1;
}

static void sender(unsigned char *area, long n, int w, int it)
{
	MPI_Request req[WINDOW];
	unsigned char ack = 0;
	int s;

	for (s = 0; s < w; s++) {
		put_stamp(area + s * n, n, stamp_of(n, it, s));
		MPI_Isend(area + s * n, (int)n, MPI_BYTE, 1, 100 + s,
			  MPI_COMM_WORLD, &req[s]);
	}
	MPI_Waitall(w, req, MPI_STATUSES_IGNORE);
	MPI_Recv(&ack, 1, MPI_BYTE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	if (ack != (unsigned char)it)
		FAIL("size %ld iteration %d: ack %u\n", n, it, ack);
}

static void receiver(unsigned char *area, long n, int w, int it, int full)
{
	MPI_Request req[WINDOW];
	MPI_Status st[WINDOW];
	unsigned char ack = (unsigned char)it;
	int s, count;
	long at;

	if (full)
		memset(area, 0xee, n * w);
	for (s = 0; s < w; s++)
		MPI_Irecv(area + s * n, (int)n, MPI_BYTE, 0, 100 + s,
			  MPI_COMM_WORLD, &req[s]);
	MPI_Waitall(w, req, st);
	for (s = 0; s < w; s++) {
		MPI_Get_count(&st[s], MPI_BYTE, &count);
		if (count != n)
			FAIL("size %ld iteration %d slot %d: %d bytes\n",
			     n, it, s, count);
		else if (!stamp_ok(area + s * n, n, stamp_of(n, it, s)))
			FAIL("size %ld iteration %d slot %d: bad stamp\n",
			     n, it, s);
		else if (full && (at = body_bad(area + s * n, n)) >= 0)
			FAIL("size %ld iteration %d slot %d: byte %ld is "
			     "0x%02x\n", n, it, s, at, area[s * n + at]);
	}
	MPI_Send(&ack, 1, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	unsigned char *area = NULL;
	int rank, nranks, all = 0;
	long n;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (rank < 2)
		area = malloc(AREA);
	if ((rank < 2 && !area) || nranks < 2) {
		fprintf(stderr, "rank %d: %s\n", rank,
			nranks < 2 ? "needs 2 ranks" : "out of memory");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (rank == 0)
		printf("# %9s %6s %5s %12s %12s\n", "bytes", "window",
		       "iters", "MB/s", "messages/s");
	for (n = 0; n <= MAX_SIZE; n = n ? n * 4 : 1) {
		int w = window_for(n), iters = iters_for(n, w), it;
		double t0 = 0, t = 0;

		if (rank == 0)
			fill_slots(area, n, w);
		for (it = 0; it <= iters + 1 && rank < 2; it++) {
			if (it == 1) {	/* iteration 0 warms up */
				idle_barrier(1);
				t0 = MPI_Wtime();
			}
			if (rank == 0)
				sender(area, n, w, it);
			else
				receiver(area, n, w, it, it == iters + 1);
			if (it == iters)
				t = MPI_Wtime() - t0;
		}
		if (rank >= 2)
			idle_barrier(0);
		if (rank == 0) {
			printf("%11ld %6d %5d %12.2f %12.0f\n", n, w, iters,
			       (double)n * w * iters / t / 1e6,
			       (double)w * iters / t);
			fflush(stdout);
		}
	}
	MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("# errors: %d\n", all);
		if (all == 0)
			printf("# mpi_bw: OK\n");
	}
	MPI_Finalize();
	free(area);
	return all != 0;
}
