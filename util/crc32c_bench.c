/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwarp-crc32c-bench: CRC32c throughput of every implementation the CPU
 * can run, plus the run-time dispatch, at a few buffer sizes.
 *
 *	iwarp-crc32c-bench [-t SECONDS]
 *
 * Each cell is the best of three runs of SECONDS (default 0.2) each.
 * GB/s means 10^9 octets per second.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "iwarp/crc32c.h"

#define BENCH_RUNS 3
#define BENCH_MAX (1u << 20)

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static const size_t bench_sizes[] = { 64, 4096, 65536, 1u << 20 };
static const char *const bench_labels[] = { "64B", "4KiB", "64KiB", "1MiB" };

#define BENCH_NSIZES (sizeof(bench_sizes) / sizeof(bench_sizes[0]))

static volatile uint32_t bench_sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One timed run: returns GB/s. */
static double bench_run(crc_fn fn, const unsigned char *buf, size_t len,
			double secs)
{
	size_t batch = BENCH_MAX / len, i;
	uint64_t calls = 0;
	uint32_t acc = 0;
	double t0, t;

	if (!batch)
		batch = 1;
	t0 = now();
	do {
		/* Read the clock only every ~1 MiB of work. */
		for (i = 0; i < batch; i++)
			acc ^= fn(IW_CRC32C_INIT, buf, len);
		calls += batch;
		t = now() - t0;
	} while (t < secs);
	bench_sink ^= acc;
	return (double)calls * (double)len / t / 1e9;
}

static void bench_row(const char *name, crc_fn fn, const unsigned char *buf,
		      double secs)
{
	double best, r;
	size_t s;
	int k;

	printf("| %-21s |", name);
	for (s = 0; s < BENCH_NSIZES; s++) {
		best = 0;
		for (k = 0; k < BENCH_RUNS; k++) {
			r = bench_run(fn, buf, bench_sizes[s], secs);
			if (r > best)
				best = r;
		}
		printf(" %7.2f |", best);
		fflush(stdout);
	}
	printf("\n");
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-t SECONDS]\n", prog);
	exit(2);
}

int main(int argc, char **argv)
{
	const struct iw_crc32c_impl *impls;
	unsigned char *buf;
	double secs = 0.2;
	char label[64];
	char *end;
	size_t n, i, s;
	int opt;

	while ((opt = getopt(argc, argv, "t:h")) != -1) {
		switch (opt) {
		case 't':
			secs = strtod(optarg, &end);
			if (*end || !(secs > 0))
				usage(argv[0]);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc)
		usage(argv[0]);

	buf = aligned_alloc(64, BENCH_MAX);
	if (!buf) {
		perror("aligned_alloc");
		return 1;
	}
	for (i = 0; i < BENCH_MAX; i++)
		buf[i] = (unsigned char)(i * 131 + (i >> 9));

	impls = iw_crc32c_impls(&n);
	printf("selected at run time: %s\n", iw_crc32c_impl_name());
	printf("GB/s, best of %d runs of %.3g s\n\n", BENCH_RUNS, secs);

	printf("| %-21s |", "impl");
	for (s = 0; s < BENCH_NSIZES; s++)
		printf(" %7s |", bench_labels[s]);
	printf("\n|-----------------------|");
	for (s = 0; s < BENCH_NSIZES; s++)
		printf("---------|");
	printf("\n");

	for (i = 0; i < n; i++) {
		if (!impls[i].available) {
			printf("| %-21s | (not supported by this CPU)\n",
			       impls[i].name);
			continue;
		}
		bench_row(impls[i].name, impls[i].update, buf, secs);
	}
	snprintf(label, sizeof(label), "auto (%s)", iw_crc32c_impl_name());
	bench_row(label, iw_crc32c_update, buf, secs);

	free(buf);
	return 0;
}
