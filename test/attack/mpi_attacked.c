/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mpi_attacked MAX_SECONDS DIR: the job an attack runs against
 * (test/attack/run-attack). Every rank first trades a verified 64-octet
 * message with every other rank, so that all RDM connections are up, and
 * then writes DIR/ready.RANK holding its pid. From then on, in rounds,
 * rank 0 plays a verified 64-octet ping-pong with every other rank and
 * all ranks pass a verified 64-octet message around the ring. Rank 0
 * looks for the files DIR/mark (the attack starts) and DIR/stop (the
 * attack is over: finish) every 16 rounds and tells the others whether to
 * go on; MAX_SECONDS bounds the run when no stop comes. Every octet
 * received is checked: a bad one prints "rank R: ... corrupted" and
 * aborts. Rank 0 prints "# mpi_attacked: round N at S s" about once a
 * second and "# mpi_attacked: the mark at round N, S s" when it sees the
 * mark. At the end rank 0 prints
 *	# mpi_attacked: N ranks, M messages verified, B rounds before the
 *	  mark, A after it, S s
 *	# mpi_attacked: OK
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEN 64

static uint8_t pat(int from, int to, long round, int j)
{
	uint64_t x = ((uint64_t)from << 48) ^ ((uint64_t)to << 36) ^
		     ((uint64_t)round << 8) ^ (uint64_t)j;

	x *= 0x9e3779b97f4a7c15ULL;
	return (uint8_t)(x >> 56);
}

static long long verified;

static void fill(uint8_t *b, int from, int to, long round)
{
	int j;

	for (j = 0; j < LEN; j++)
		b[j] = pat(from, to, round, j);
}

static void check(const uint8_t *b, const MPI_Status *st, int from, int to,
		  long round, const char *what)
{
	int j, count = -1;

	MPI_Get_count(st, MPI_BYTE, &count);
	if (count != LEN) {
		fprintf(stderr, "rank %d: %s round %ld from %d: %d octets, "
			"want %d: corrupted\n", to, what, round, from, count,
			LEN);
		MPI_Abort(MPI_COMM_WORLD, 4);
	}
	for (j = 0; j < LEN; j++)
		if (b[j] != pat(from, to, round, j)) {
			fprintf(stderr, "rank %d: %s round %ld from %d: octet "
				"%d corrupted\n", to, what, round, from, j);
			MPI_Abort(MPI_COMM_WORLD, 4);
		}
	verified++;
}

int main(int argc, char **argv)
{
	uint8_t sb[LEN], rb[LEN];
	int rank, size, r, right, left, ctl[2] = { 1, 0 };
	long round, before = -1;
	double t0, max_s, beat;
	long long total = 0;
	MPI_Status st;
	char path[4096];
	FILE *f;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 3 || size < 2) {
		if (!rank)
			fprintf(stderr, "usage: mpi_attacked MAX_SECONDS DIR "
				"(2 ranks or more)\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	max_s = atof(argv[1]);
	right = (rank + 1) % size;
	left = (rank + size - 1) % size;

	/* every pair once: all connections up before anyone is attacked */
	for (r = 1; r < size; r++) {
		int to = (rank + r) % size, from = (rank + size - r) % size;

		fill(sb, rank, to, -1);
		MPI_Sendrecv(sb, LEN, MPI_BYTE, to, 7, rb, LEN, MPI_BYTE, from,
			     7, MPI_COMM_WORLD, &st);
		check(rb, &st, from, rank, -1, "all-pairs");
	}
	MPI_Barrier(MPI_COMM_WORLD);
	snprintf(path, sizeof(path), "%s/ready.%d.tmp", argv[2], rank);
	f = fopen(path, "w");
	if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f)) {
		fprintf(stderr, "rank %d: cannot write %s\n", rank, path);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	{
		char fin[4096];

		snprintf(fin, sizeof(fin), "%s/ready.%d", argv[2], rank);
		if (rename(path, fin)) {
			fprintf(stderr, "rank %d: cannot rename %s\n", rank,
				path);
			MPI_Abort(MPI_COMM_WORLD, 3);
		}
	}

	t0 = beat = MPI_Wtime();
	for (round = 0; ctl[0]; round++) {
		if (rank == 0) {
			for (r = 1; r < size; r++) {
				fill(sb, 0, r, round);
				MPI_Send(sb, LEN, MPI_BYTE, r, 1,
					 MPI_COMM_WORLD);
				MPI_Recv(rb, LEN, MPI_BYTE, r, 2,
					 MPI_COMM_WORLD, &st);
				check(rb, &st, r, 0, round, "pong");
			}
		} else {
			MPI_Recv(rb, LEN, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
			check(rb, &st, 0, rank, round, "ping");
			fill(sb, rank, 0, round);
			MPI_Send(sb, LEN, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
		}
		fill(sb, rank, right, round);
		MPI_Sendrecv(sb, LEN, MPI_BYTE, right, 3, rb, LEN, MPI_BYTE,
			     left, 3, MPI_COMM_WORLD, &st);
		check(rb, &st, left, rank, round, "ring");
		if (round % 16 != 15)
			continue;
		if (rank == 0) {
			snprintf(path, sizeof(path), "%s/mark", argv[2]);
			if (before < 0 && !access(path, F_OK)) {
				before = round + 1;
				printf("# mpi_attacked: the mark at round %ld, "
				       "%.1f s\n", before, MPI_Wtime() - t0);
				fflush(stdout);
			}
			if (MPI_Wtime() - beat >= 1) {
				beat = MPI_Wtime();
				printf("# mpi_attacked: round %ld at %.1f s\n",
				       round + 1, beat - t0);
				fflush(stdout);
			}
			snprintf(path, sizeof(path), "%s/stop", argv[2]);
			if (!access(path, F_OK) || MPI_Wtime() - t0 > max_s)
				ctl[0] = 0;
		}
		MPI_Bcast(ctl, 2, MPI_INT, 0, MPI_COMM_WORLD);
	}
	MPI_Reduce(&verified, &total, 1, MPI_LONG_LONG, MPI_SUM, 0,
		   MPI_COMM_WORLD);
	if (rank == 0) {
		printf("# mpi_attacked: %d ranks, %lld messages verified, "
		       "%ld rounds before the mark, %ld after it, %.1f s\n",
		       size, total, before < 0 ? round : before,
		       before < 0 ? 0 : round - before, MPI_Wtime() - t0);
		printf("# mpi_attacked: OK\n");
		fflush(stdout);
	}
	MPI_Finalize();
	return 0;
}
