/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * OSU-style MPI latency: blocking ping-pong between ranks 0 and 1 after a
 * warm-up, 0 B to 4 MiB, every message's contents checked. Prints one line
 * per size (half round-trip time) and exits non-zero on any corruption.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE (4 << 20)

static void fill(unsigned char *b, int n, int seed)
{
	int i;

	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(seed * 31 + i * 7);
}

static int check(const unsigned char *b, int n, int seed)
{
	int i;

	for (i = 0; i < n; i++)
		if (b[i] != (unsigned char)(seed * 31 + i * 7))
			return 1;
	return 0;
}

static double pingpong(int rank, unsigned char *buf, int n, int iters,
		       int *bad)
{
	double t0 = 0;
	int i;

	for (i = -5; i < iters; i++) {	/* 5 warm-up rounds */
		if (i == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		if (rank == 0) {
			fill(buf, n, i + 10);
			MPI_Send(buf, n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, n, MPI_BYTE, 1, 2, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			*bad += check(buf, n, i + 11);
		} else {
			MPI_Recv(buf, n, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			*bad += check(buf, n, i + 10);
			fill(buf, n, i + 11);
			MPI_Send(buf, n, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) / iters / 2 * 1e6;
}

int main(int argc, char **argv)
{
	unsigned char *buf = malloc(MAX_SIZE);
	int rank, n, bad = 0, all = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 0)
		printf("# bytes  latency(us)\n");
	for (n = 0; n <= MAX_SIZE; n = n ? n * 4 : 1) {
		int iters = n >= (1 << 20) ? 20 : n >= 65536 ? 100 : 1000;
		double us = rank < 2 ? pingpong(rank, buf, n, iters, &bad) : 0;

		if (rank == 0)
			printf("%8d %12.2f\n", n, us);
	}
	MPI_Reduce(&bad, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("# corrupted messages: %d\n", all);
	MPI_Finalize();
	free(buf);
	return all != 0;
}
