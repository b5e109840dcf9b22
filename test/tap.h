/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Minimal TAP output for the unit tests: one "ok N - name" or
 * "not ok N - name" line per check group; test/run counts them.
 */
#ifndef IWARP_TEST_TAP_H
#define IWARP_TEST_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static int tap_n, tap_failed;

/* Monotonic seconds, for the bounded waits of the tests. */
static inline double tap_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reports one result; returns cond so callers can chain. */
static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!cond)
		tap_failed++;
	return cond;
}

/* Diagnostic line, ignored by the counter. */
#define tap_diag(...) \
	do { printf("# "); printf(__VA_ARGS__); printf("\n"); } while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif /* IWARP_TEST_TAP_H */
