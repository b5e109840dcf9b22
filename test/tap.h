/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Minimal TAP output for the unit tests: one "ok N - name" or
 * "not ok N - name" line per check group; test/run counts them and
 * compares the total with the count it expects of each program, so a
 * check that never ran is a failure too.
 */
#ifndef IWARP_TEST_TAP_H
#define IWARP_TEST_TAP_H

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int tap_n, tap_failed;

/* Monotonic seconds, for the bounded waits of the tests. */
static inline double tap_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* What /proc/self/fd/NAME links to ("" if unreadable). */
static inline void tap_fd_link(const char *name, char *buf, size_t size)
{
	char path[sizeof("/proc/self/fd/") + 256];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%s", name);
	n = readlink(path, buf, size - 1);
	buf[n > 0 ? n : 0] = 0;
}

/* Descriptors this process holds open, or -1. */
static inline int tap_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* the directory's own */
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

/*
 * A child process's end is a check of its own: exit status 0 passes; a
 * non-zero status, a signal (a crash, an ASan abort) or a child still
 * running after tmo_s seconds (killed then) fails, with what happened.
 */
static inline int tap_child(pid_t pid, double tmo_s, const char *what)
{
	double end = tap_now() + tmo_s;
	pid_t got = 0;
	int st = 0;

	if (pid <= 0)
		return tap_ok(0, "child %s: never started", what);
	while ((got = waitpid(pid, &st, WNOHANG)) == 0 && tap_now() < end)
		usleep(2000);
	if (got == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return tap_ok(0, "child %s: still running after %.0f s, killed",
			      what, tmo_s);
	}
	if (got < 0)
		return tap_ok(0, "child %s: waitpid: %s", what, strerror(errno));
	if (WIFSIGNALED(st))
		return tap_ok(0, "child %s: killed by signal %d (%s)", what,
			      WTERMSIG(st), strsignal(WTERMSIG(st)));
	return tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "child %s: exit status %d", what, WEXITSTATUS(st));
}

/* n checks that cannot run here, as TAP skips: the count stays the same. */
static inline void tap_skip_n(int n, const char *fmt, ...)
{
	va_list ap;

	while (n-- > 0) {
		printf("ok %d - ", ++tap_n);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf(" # SKIP\n");
	}
	fflush(stdout);
}

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

/* Reads (wr false) or writes all of len octets on a blocking descriptor:
 * 0, or -1 at its end or an error. */
static inline int xfull(int fd, void *buf, size_t len, bool wr)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = wr ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

#endif /* IWARP_TEST_TAP_H */
