/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mpi_victim VICTIM_RANK KILL_ITER SIZE: ranks trade SIZE-octet messages
 * around a ring (every octet checked) with an allreduce of the checked
 * octets every 8 iterations; at iteration KILL_ITER the rank VICTIM_RANK
 * prints "KILL <realtime ms>" and SIGKILLs itself. The others carry on
 * until the runtime ends the job: mpirun must exit, in bounded time,
 * without a survivor crashing. With VICTIM_RANK -1 nobody dies and the
 * run ends with "mpi_victim: ok" after 4 * KILL_ITER iterations.
 */
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint8_t pat(int from, long iter, size_t j)
{
	uint64_t x = ((uint64_t)from << 40) ^ ((uint64_t)iter << 20) ^ j;

	x *= 0x9e3779b97f4a7c15ULL;
	return (uint8_t)(x >> 56);
}

static long long realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	int rank, size, victim, right, left;
	long iter, kill_iter, iters;
	size_t len, j;
	uint8_t *sb, *rb;
	long long checked = 0, total;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 4) {
		if (!rank)
			fprintf(stderr, "usage: mpi_victim RANK ITER SIZE\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	victim = atoi(argv[1]);
	kill_iter = atol(argv[2]);
	len = (size_t)atol(argv[3]);
	iters = victim < 0 ? 4 * kill_iter : 1000000;
	sb = malloc(len);
	rb = malloc(len);
	if (!sb || !rb)
		MPI_Abort(MPI_COMM_WORLD, 3);
	right = (rank + 1) % size;
	left = (rank + size - 1) % size;
	for (iter = 0; iter < iters; iter++) {
		if (rank == victim && iter == kill_iter) {
			printf("KILL %lld\n", realtime_ms());
			fflush(stdout);
			raise(SIGKILL);
		}
		for (j = 0; j < len; j++)
			sb[j] = pat(rank, iter, j);
		MPI_Sendrecv(sb, (int)len, MPI_BYTE, right, 1, rb, (int)len,
			     MPI_BYTE, left, 1, MPI_COMM_WORLD,
			     MPI_STATUS_IGNORE);
		for (j = 0; j < len; j++)
			if (rb[j] != pat(left, iter, j)) {
				fprintf(stderr, "rank %d: iteration %ld octet "
					"%zu corrupted\n", rank, iter, j);
				MPI_Abort(MPI_COMM_WORLD, 4);
			}
		checked += (long long)len;
		if (iter % 8 == 7)
			MPI_Allreduce(&checked, &total, 1, MPI_LONG_LONG,
				      MPI_SUM, MPI_COMM_WORLD);
	}
	MPI_Allreduce(&checked, &total, 1, MPI_LONG_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	/* every rank checked len octets in each iteration */
	if (total != (long long)size * iters * (long long)len) {
		if (!rank)
			fprintf(stderr, "mpi_victim: %lld octets checked, "
				"expected %lld\n", total,
				(long long)size * iters * (long long)len);
		MPI_Abort(MPI_COMM_WORLD, 5);
	}
	if (!rank)
		printf("mpi_victim: ok, %lld octets verified\n", total);
	free(sb);
	free(rb);
	MPI_Finalize();
	return 0;
}
