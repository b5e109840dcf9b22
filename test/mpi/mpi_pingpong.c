/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * OSU-style MPI latency: blocking ping-pong between ranks 0 and 1 after a
 * warm-up, 0 B to 64 MiB (or to the size given as the first argument),
 * every message's length and contents checked. Prints one line per size
 * (half round-trip time, not counting the time spent filling and checking
 * buffers) and exits non-zero on any corruption.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_idle.h"

#define MAX_SIZE (64 << 20)

static void fill(unsigned char *b, int n, int seed)
{
	int i;

	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 31 + i * 7 + (i >> 12));
}

static int check(const unsigned char *b, int n, int seed)
{
	int i;

	for (i = 0; i < n; i++)
		if (b[i] != (unsigned char)(seed * 31 + i * 7 + (i >> 12)))
			return 1;
	return 0;
}

static double proc;	/* seconds spent filling and checking, timed */

/* Checks the length and the pattern of seed of a received message. */
static int check_msg(const unsigned char *buf, int n, MPI_Status *st,
		     int seed)
{
	int count = -1;

	MPI_Get_count(st, MPI_BYTE, &count);
	if (count != n) {
		fprintf(stderr, "size %d: received %d bytes\n", n, count);
		return 1;
	}
	if (check(buf, n, seed)) {
		fprintf(stderr, "size %d: corrupted data\n", n);
		return 1;
	}
	return 0;
}

/*
 * Half the round-trip time, less the time both ranks spent poisoning,
 * filling and checking buffers: each rank does that only between its
 * receive and its send, so it all lies on the one serial path.
 */
static double pingpong(int rank, unsigned char *sbuf, unsigned char *rbuf,
		       int n, int warm, int iters, int *bad)
{
	double t0 = 0, t, total, peer = 0;
	MPI_Status st;
	int i;

	memset(rbuf, 0x5a, n);
	for (i = -warm; i < iters; i++) {
		if (i == 0) {
			idle_barrier(1);
			t0 = MPI_Wtime();
			proc = 0;
		}
		if (rank == 0) {
			t = MPI_Wtime();
			memset(rbuf, 0x5a, n);
			fill(sbuf, n, i + 10);
			proc += MPI_Wtime() - t;
			MPI_Send(sbuf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(rbuf, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &st);
			t = MPI_Wtime();
			*bad += check_msg(rbuf, n, &st, i + 11);
			proc += MPI_Wtime() - t;
		} else {
			MPI_Recv(rbuf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
			t = MPI_Wtime();
			*bad += check_msg(rbuf, n, &st, i + 10);
			memset(rbuf, 0x5a, n);
			fill(sbuf, n, i + 11);
			proc += MPI_Wtime() - t;
			MPI_Send(sbuf, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
		}
	}
	total = MPI_Wtime() - t0;
	if (rank == 1)
		MPI_Send(&proc, 1, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD);
	else
		MPI_Recv(&peer, 1, MPI_DOUBLE, 1, 3, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
	return (total - proc - peer) / iters / 2 * 1e6;
}

int main(int argc, char **argv)
{
	int rank, nranks, n, bad = 0, all = 0;
	long max = argc > 1 ? atol(argv[1]) : MAX_SIZE;
	unsigned char *sbuf, *rbuf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (max < 0 || max > MAX_SIZE)
		max = MAX_SIZE;
	sbuf = malloc(max ? max : 1);
	rbuf = malloc(max ? max : 1);
	if (!sbuf || !rbuf || nranks < 2) {
		fprintf(stderr, "rank %d: %s\n", rank,
			nranks < 2 ? "needs 2 ranks" : "out of memory");
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	if (rank == 0)
		printf("# bytes  latency(us)\n");
	for (n = 0; n <= max; n = n ? n * 4 : 1) {
		int iters = n >= (16 << 20) ? 5 : n >= (1 << 20) ? 20 :
			    n >= 65536 ? 100 : 1000;
		int warm = n >= (16 << 20) ? 1 : 5;
		double us = 0;

		if (rank < 2)
			us = pingpong(rank, sbuf, rbuf, n, warm, iters,
				      &bad);
		else
			idle_barrier(0);
		if (rank == 0) {
			printf("%8d %12.2f\n", n, us);
			fflush(stdout);
		}
	}
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("# corrupted messages: %d\n", all);
		if (all == 0)
			printf("# mpi_pingpong: OK\n");
	}
	MPI_Finalize();
	free(rbuf);
	free(sbuf);
	return all != 0;
}
