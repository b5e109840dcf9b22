/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * OSU-style MPI latency: blocking ping-pong between ranks 0 and 1 after a
 * warm-up, 0 B to 64 MiB (or to the size given as the first argument),
 * every message's length and contents checked. Prints one line per size
 * (half round-trip time) and exits non-zero on any corruption.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Receives n bytes and checks the length and the pattern of seed. */
static int recv_check(unsigned char *buf, int n, int src, int tag, int seed)
{
	MPI_Status st;
	int count = -1;

	memset(buf, 0x5a, n);
	MPI_Recv(buf, n, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st);
	MPI_Get_count(&st, MPI_BYTE, &count);
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

static double pingpong(int rank, unsigned char *buf, int n, int warm,
		       int iters, int *bad)
{
	double t0 = 0;
	int i;

	for (i = -warm; i < iters; i++) {
		if (i == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		if (rank == 0) {
			fill(buf, n, i + 10);
			MPI_Send(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			*bad += recv_check(buf, n, 1, 2, i + 11);
		} else {
			*bad += recv_check(buf, n, 0, 1, i + 10);
			fill(buf, n, i + 11);
			MPI_Send(buf, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) / iters / 2 * 1e6;
}

int main(int argc, char **argv)
{
	int rank, nranks, n, bad = 0, all = 0;
	long max = argc > 1 ? atol(argv[1]) : MAX_SIZE;
	unsigned char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (max < 0 || max > MAX_SIZE)
		max = MAX_SIZE;
	buf = malloc(max ? max : 1);
	if (!buf || nranks < 2) {
		fprintf(stderr, "rank %d: %s\n", rank,
			buf ? "needs 2 ranks" : "out of memory");
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
			us = pingpong(rank, buf, n, warm, iters, &bad);
		else
			MPI_Barrier(MPI_COMM_WORLD);
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
	free(buf);
	return all != 0;
}
