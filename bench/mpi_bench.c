/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * mpi_bench: OSU-style latency and bandwidth between ranks 0 and 1.
 *
 *	mpi_bench lat|bw|bibw [SIZES]  (default 0,1,8,64,512,4k,64k,256k,1m,4m)
 *
 * lat: blocking MPI_Send/MPI_Recv ping-pong after a warm-up, half the round
 * trip (osu_latency). bw (osu_bw): rank 0 posts a window of 64 MPI_Isend
 * from one buffer, rank 1 64 MPI_Irecv into one buffer, then rank 1
 * answers with a 4-octet ack. bibw (osu_bibw): each rank posts 64
 * MPI_Irecv into one buffer and 64 MPI_Isend from another, then waits for
 * all 128; the figure counts both directions. Both run OSU's count of
 * windows: 2 untimed and 20 timed above 8 KiB, 10 and 100 up to it. After
 * the timed loop of each size one more message carries a pattern that
 * the receiver checks
 * (untimed; in bibw each rank sends one and checks one). Prints the RESULT
 * lines of bench_common.h, with the CPU time of both ranks per message
 * (bibw: the messages of both directions). Before and after the timed loop
 * of each size the two ranks bounce one cache line in a shared page (when
 * they can map one: same host) and rank 0 prints the round trip, the
 * host's placement of their vCPUs during that size (0: not measured):
 *	PLACE SIZE ns-before ns-after
 *
 *	mpirun -np N mpi_bench allpairs
 *
 * allpairs: the first MPI_Alltoall of 1 KiB per pair, which connects
 * every pair (checked): its time on the slowest rank and the CPU time per
 * rank, then the resident memory (/proc/self/statm) a rank gained per
 * peer, the mean over the ranks:
 *	RESULT allpairs N us cpu-us-per-rank
 *	RESULT peermem N KiB-per-peer 0
 *
 *	mpirun -np N mpi_bench allreduce|alltoall [SIZES]  (default 8,64k,256k)
 *
 * allreduce (osu_allreduce): MPI_Allreduce (MPI_SUM) of SIZE MPI_CHAR,
 * OSU's default type, which also picks Open MPI's algorithm by count;
 * alltoall (osu_alltoall): MPI_Alltoall of SIZE MPI_CHAR per pair. As OSU
 * times it: each call alone, a barrier between calls, each rank's mean and
 * then the mean over the ranks; the CPU time per call (barrier included)
 * summed over the ranks. After the loop one more call's result is checked
 * on every rank.
 */
#include <mpi.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bench_common.h"

#define LAT_WARM 50
#define OSU_LARGE 8192		/* OSU's large messages: 20 windows after 2 */

static void check_pattern(const unsigned char *b, size_t n)
{
	if (bench_check(b, n, (unsigned)n)) {
		fprintf(stderr, "mpi_bench: size %zu corrupted\n", n);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

/* The last message of a size: rank `from` sends a pattern from sbuf,
 * the other rank checks what arrives in rbuf. */
static void verify(int from, int rank, unsigned char *sbuf,
		   unsigned char *rbuf, size_t n)
{
	if (rank == from) {
		bench_fill(sbuf, n, (unsigned)n);
		MPI_Send(sbuf, (int)n, MPI_BYTE, !from, 9, MPI_COMM_WORLD);
	} else {
		memset(rbuf, 0, n);
		MPI_Recv(rbuf, (int)n, MPI_BYTE, from, 9, MPI_COMM_WORLD,
			 MPI_STATUS_IGNORE);
		check_pattern(rbuf, n);
	}
}

/* Both ranks start the timed loop together. */
static double start_clock(void)
{
	MPI_Barrier(MPI_COMM_WORLD);
	return MPI_Wtime();
}

/* MB/s (10^6 octets) of `octets` moved since t0 */
static double mb_per_s(double octets, double t0)
{
	return octets / ((MPI_Wtime() - t0) * 1e6);
}

/*
 * The cache line the two ranks bounce (NULL: no shared page). A VM's
 * host moves its vCPUs near each other or far apart within seconds, and
 * every MPI path between the two ranks follows that, over TCP too.
 */
static _Atomic uint64_t *pair_line;

#define LINE_ROUNDS 2000
#define LINE_MAX_US 200000.0	/* rank 0 gives up after this */
#define LINE_STOP UINT64_MAX
#define LINE_LOOK 256

/* Rank 0 makes a page in /dev/shm, rank 1 maps it by name, and the name
 * is gone before either uses it. */
static void pair_line_map(int rank)
{
	char name[64];
	int fd = -1, ok;
	void *p = MAP_FAILED;

	snprintf(name, sizeof(name), "/mpi_bench_line.%ld", (long)getpid());
	MPI_Bcast(name, sizeof(name), MPI_CHAR, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd >= 0 && ftruncate(fd, 4096)) {
			close(fd);
			fd = -1;
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1)
		fd = shm_open(name, O_RDWR, 0);
	if (fd >= 0) {
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 0);
		close(fd);
	}
	ok = p != MAP_FAILED;
	MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND,
		      MPI_COMM_WORLD);
	if (rank == 0)
		shm_unlink(name);
	if (ok)
		pair_line = p;
	else if (p != MAP_FAILED)
		munmap(p, 4096);
}

/* ns per round trip of the line between the ranks, 0 when not measured;
 * rank 0's figure, bounded in rounds and time on both sides */
static double pair_line_ns(int rank)
{
	uint64_t v, i = 0, spins = 0;
	double t0, ns = 0;

	if (!pair_line)
		return 0;
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = bench_now();
	/* the clock is read every LINE_LOOK spins: not in the round trip */
	if (rank == 0) {
		for (i = 0; i < LINE_ROUNDS; i++) {
			atomic_store(pair_line, 2 * i + 1);
			while (atomic_load(pair_line) != 2 * i + 2)
				if (!(++spins % LINE_LOOK) &&
				    bench_now() - t0 > LINE_MAX_US)
					goto out;
		}
		ns = (bench_now() - t0) * 1e3 / LINE_ROUNDS;
out:
		atomic_store(pair_line, LINE_STOP);
	} else {
		while ((v = atomic_load(pair_line)) != LINE_STOP) {
			if (v == 2 * i + 1) {
				atomic_store(pair_line, v + 1);
				i++;
			} else if (!(++spins % LINE_LOOK) &&
				   bench_now() - t0 > 2 * LINE_MAX_US) {
				break;
			}
		}
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		atomic_store(pair_line, 0);
	return ns;
}

static double lat(int rank, unsigned char *buf, size_t n, long it)
{
	double t0 = 0;
	long i;

	for (i = -LAT_WARM; i < it; i++) {
		if (i == 0)
			t0 = start_clock();
		if (rank == 0) {
			MPI_Send(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)n, MPI_BYTE, 1, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(buf, (int)n, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) * 1e6 / (double)it / 2;
}

/* A window of BENCH_WINDOW nonblocking sends to (or receives from) peer,
 * all from (into) one buffer, as OSU's bandwidth tests post them. */
static void post_window(int send, int peer, unsigned char *buf, size_t n,
			MPI_Request *req)
{
	int w;

	for (w = 0; w < BENCH_WINDOW; w++) {
		if (send)
			MPI_Isend(buf, (int)n, MPI_BYTE, peer, 2,
				  MPI_COMM_WORLD, &req[w]);
		else
			MPI_Irecv(buf, (int)n, MPI_BYTE, peer, 2,
				  MPI_COMM_WORLD, &req[w]);
	}
}

static double bw(int rank, unsigned char *buf, size_t n, long it, long warm)
{
	MPI_Request req[BENCH_WINDOW];
	double t0 = 0;
	int ack = 0;
	long i;

	for (i = -warm; i < it; i++) {
		if (i == 0)
			t0 = start_clock();
		post_window(rank == 0, !rank, buf, n, req);
		MPI_Waitall(BENCH_WINDOW, req, MPI_STATUSES_IGNORE);
		if (rank == 0)
			MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		else
			MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
	}
	return mb_per_s((double)n * BENCH_WINDOW * (double)it, t0);
}

/* both directions at once: receives first, so no send waits for one */
static double bibw(int rank, unsigned char *sbuf, unsigned char *rbuf,
		   size_t n, long it, long warm)
{
	MPI_Request req[2 * BENCH_WINDOW];
	double t0 = 0;
	long i;

	for (i = -warm; i < it; i++) {
		if (i == 0)
			t0 = start_clock();
		post_window(0, !rank, rbuf, n, req);
		post_window(1, !rank, sbuf, n, req + BENCH_WINDOW);
		MPI_Waitall(2 * BENCH_WINDOW, req, MPI_STATUSES_IGNORE);
	}
	return mb_per_s(2.0 * (double)n * BENCH_WINDOW * (double)it, t0);
}

#define PAIR_LEN 1024

static double rss_kib(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &pages, &res) != 2)
		MPI_Abort(MPI_COMM_WORLD, 1);
	fclose(f);
	return (double)res * (double)sysconf(_SC_PAGESIZE) / 1024.0;
}

static void allpairs(int rank, int nranks)
{
	size_t n = (size_t)nranks * PAIR_LEN;
	unsigned char *s = malloc(n), *r = calloc(1, n);
	double r0, t0, v[3];
	int i;

	if (!s || !r)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (i = 0; i < nranks; i++)	/* from rank to i */
		memset(s + (size_t)i * PAIR_LEN, (rank + 3 * i) & 0xff,
		       PAIR_LEN);
	r0 = rss_kib();
	MPI_Barrier(MPI_COMM_WORLD);
	v[1] = bench_cpu();
	t0 = MPI_Wtime();
	MPI_Alltoall(s, PAIR_LEN, MPI_BYTE, r, PAIR_LEN, MPI_BYTE,
		     MPI_COMM_WORLD);
	v[0] = (MPI_Wtime() - t0) * 1e6;
	v[1] = bench_cpu() - v[1];
	for (i = 0; i < nranks; i++)
		if (r[(size_t)i * PAIR_LEN] != ((i + 3 * rank) & 0xff) ||
		    memcmp(r + (size_t)i * PAIR_LEN,
			   r + (size_t)i * PAIR_LEN + 1, PAIR_LEN - 1)) {
			fprintf(stderr, "mpi_bench: alltoall corrupted\n");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	MPI_Barrier(MPI_COMM_WORLD);
	v[2] = rss_kib() - r0;
	MPI_Allreduce(MPI_IN_PLACE, &v[0], 1, MPI_DOUBLE, MPI_MAX,
		      MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &v[1], 2, MPI_DOUBLE, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0) {
		printf("RESULT allpairs %d %.3f %.3f\n", nranks, v[0],
		       v[1] / nranks);
		printf("RESULT peermem %d %.3f 0\n", nranks,
		       v[2] / nranks / (nranks - 1));
	}
	free(s);
	free(r);
}

#define COLL_WARM 20

/* One collective call of n octets per rank (per pair for alltoall). */
static void coll_call(int alltoall, char *s, char *r, size_t n)
{
	if (alltoall)
		MPI_Alltoall(s, (int)n, MPI_CHAR, r, (int)n, MPI_CHAR,
			     MPI_COMM_WORLD);
	else
		MPI_Allreduce(s, r, (int)n, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD);
}

/* The last call's result: each peer's block of octets (peer * 7 + rank +
 * i) mod 256, or sums of small values (rank + i) % 8, which stay below
 * what a char holds (Open MPI's sum of MPI_CHAR saturates). */
static void coll_check(int alltoall, int rank, int nranks, char *s, char *r,
		       size_t n)
{
	size_t i, p, np = alltoall ? (size_t)nranks : 1, bad = 0;
	unsigned int want;
	int q;

	for (p = 0; p < np; p++)
		for (i = 0; i < n; i++)
			s[p * n + i] = (char)(alltoall ?
				((size_t)rank * 7 + p + i) & 0xff :
				((size_t)rank + i) % 8);
	memset(r, 0, n * np);
	coll_call(alltoall, s, r, n);
	for (p = 0; p < np; p++)
		for (i = 0; i < n; i++) {
			if (alltoall)
				want = (unsigned int)((p * 7 + (size_t)rank +
						       i) & 0xff);
			else
				for (want = 0, q = 0; q < nranks; q++)
					want += (unsigned int)
						(((size_t)q + i) % 8);
			bad += (unsigned char)r[p * n + i] != want;
		}
	if (bad) {
		fprintf(stderr, "mpi_bench: %s of %zu corrupted\n",
			alltoall ? "alltoall" : "allreduce", n);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

static void coll(int alltoall, int rank, int nranks, size_t n)
{
	size_t len = alltoall ? n * (size_t)nranks : n;
	char *s = malloc(len), *r = malloc(len);
	long it = bench_iters(n * (size_t)nranks, 100, 20000, 300000), i;
	double t0, v[2];

	if (!s || !r || !n)
		MPI_Abort(MPI_COMM_WORLD, 1);
	memset(s, 1, len);
	v[0] = v[1] = 0;
	for (i = -COLL_WARM; i < it; i++) {
		if (i == 0)
			v[1] = bench_cpu();
		t0 = MPI_Wtime();
		coll_call(alltoall, s, r, n);
		if (i >= 0)
			v[0] += MPI_Wtime() - t0;
		MPI_Barrier(MPI_COMM_WORLD);
	}
	v[0] *= 1e6 / (double)it;
	v[1] = bench_cpu() - v[1];
	coll_check(alltoall, rank, nranks, s, r, n);
	MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_SUM,
		      MPI_COMM_WORLD);
	if (rank == 0) {
		printf("RESULT %s %zu %.3f %.3f\n",
		       alltoall ? "alltoall" : "allreduce", n, v[0] / nranks,
		       v[1] / (double)it);
		fflush(stdout);
	}
	free(s);
	free(r);
}

enum mode { LAT, BW, BIBW, NMODES };

static const char *const mode_names[NMODES] = { "lat", "bw", "bibw" };

static int mode_of(const char *s)
{
	int m;

	for (m = 0; m < NMODES; m++)
		if (!strcmp(s, mode_names[m]))
			return m;
	return -1;
}

/* One size: the timed loop, then the pattern check, then rank 0 prints
 * the RESULT line. sbuf and rbuf hold the largest size. */
static void one_size(int mode, int rank, unsigned char *sbuf,
		     unsigned char *rbuf, size_t n)
{
	/* messages per iteration, both ranks together */
	int per = mode == LAT ? 2 : mode == BW ? BENCH_WINDOW :
		  2 * BENCH_WINDOW;
	/* windows as osu_bw and osu_bibw count them: the figures agree */
	long it = mode == LAT ? bench_iters(n, 50, 40000, 200000) :
		  n > OSU_LARGE ? 20 : 100;
	long warm = mode == LAT ? LAT_WARM : n > OSU_LARGE ? 2 : 10;
	double line0 = pair_line_ns(rank), c0 = bench_cpu(), v, cpu, line1;

	v = mode == LAT ? lat(rank, sbuf, n, it) :
	    mode == BW ? bw(rank, rank ? rbuf : sbuf, n, it, warm) :
	    bibw(rank, sbuf, rbuf, n, it, warm);
	cpu = bench_cpu() - c0;
	line1 = pair_line_ns(rank);
	MPI_Allreduce(MPI_IN_PLACE, &cpu, 1, MPI_DOUBLE, MPI_SUM,
		      MPI_COMM_WORLD);
	verify(0, rank, sbuf, rbuf, n);
	if (mode == BIBW)
		verify(1, rank, sbuf, rbuf, n);
	if (rank == 0) {
		printf("RESULT %s %zu %.3f %.3f\n", mode_names[mode], n, v,
		       cpu / ((double)per * (double)(it + warm)));
		printf("PLACE %zu %.1f %.1f\n", n, line0, line1);
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	size_t sizes[BENCH_MAX_SIZES], max = 1;
	int rank, nranks, nsizes, s, mode;
	unsigned char *sbuf, *rbuf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (argc > 1 && !strcmp(argv[1], "allpairs") && nranks > 1) {
		allpairs(rank, nranks);
		MPI_Finalize();
		return 0;
	}
	if (argc > 1 && (!strcmp(argv[1], "allreduce") ||
			 !strcmp(argv[1], "alltoall")) && nranks > 1) {
		int alltoall = !strcmp(argv[1], "alltoall");

		nsizes = bench_parse_sizes(argc > 2 ? argv[2] : "8,64k,256k",
					   sizes);
		for (s = 0; s < nsizes; s++)
			coll(alltoall, rank, nranks, sizes[s]);
		MPI_Finalize();
		return 0;
	}
	mode = mode_of(argc > 1 ? argv[1] : "lat");
	nsizes = bench_parse_sizes(argc > 2 ? argv[2] :
				   "0,1,8,64,512,4k,64k,256k,1m,4m", sizes);
	if (nranks != 2 || nsizes <= 0 || mode < 0) {
		if (!rank)
			fprintf(stderr, "usage: mpirun -np 2 mpi_bench "
				"lat|bw|bibw [SIZES] | mpirun -np N mpi_bench "
				"allpairs|allreduce|alltoall [SIZES]\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (s = 0; s < nsizes; s++)
		if (sizes[s] > max)
			max = sizes[s];
	sbuf = calloc(1, max);
	rbuf = calloc(1, max);
	if (!sbuf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	pair_line_map(rank);
	for (s = 0; s < nsizes; s++)
		one_size(mode, rank, sbuf, rbuf, sizes[s]);
	if (pair_line)
		munmap((void *)pair_line, 4096);
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
