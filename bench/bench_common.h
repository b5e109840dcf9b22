/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared by the benchmark programs: clocks, CPU time, the size list and
 * the one output format bench/run parses:
 *
 *	RESULT <mode> <size> <value> <cpu_us_per_msg>
 *
 * value: half round trip in us (lat), MB/s with MB = 10^6 octets (bw),
 * connection setup in us (conn, size 0). cpu: user + system time of both
 * processes divided by the messages moved (lat: 2 per round trip; bw: the
 * window's messages; conn: per connection).
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BENCH_MAX_SIZES 32
#define BENCH_WINDOW 64

static inline double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* user + system CPU of this process, in us */
static inline double bench_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* "1,64,1k,64k,1m" -> sizes; returns the count or -1 */
static inline int bench_parse_sizes(const char *s, size_t *out)
{
	int n = 0;

	while (*s && n < BENCH_MAX_SIZES) {
		char *end;
		unsigned long v = strtoul(s, &end, 0);

		if (end == s)
			return -1;
		if (*end == 'k' || *end == 'K')
			v <<= 10, end++;
		else if (*end == 'm' || *end == 'M')
			v <<= 20, end++;
		out[n++] = v;
		if (*end == ',')
			end++;
		else if (*end)
			return -1;
		s = end;
	}
	return n;
}

/* Iterations for one size: about `budget_us` of traffic at ~1 GB/s, at
 * least `min`, at most `max`. */
static inline long bench_iters(size_t size, long min, long max,
			       double budget_us)
{
	double per = 5.0 + (double)size / 1000.0;
	long it = (long)(budget_us / per);

	return it < min ? min : it > max ? max : it;
}

/* The receiver checks what it got, so a benchmark that moves garbage
 * fails instead of reporting a figure. */
static inline void bench_fill(unsigned char *b, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(seed + i * 131 + (i >> 9));
}

static inline int bench_check(const unsigned char *b, size_t n, unsigned seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != (unsigned char)(seed + i * 131 + (i >> 9)))
			return -1;
	return 0;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* conn mode: the median of n setup times (reported as size `at`), and
 * the CPU per connection */
static inline void bench_report_conn(double *t, size_t n, size_t at,
				     double cpu)
{
	qsort(t, n, sizeof(t[0]), bench_cmp_double);
	printf("RESULT conn %zu %.3f %.3f\n", at, t[n / 2], cpu / (double)n);
}

#endif
