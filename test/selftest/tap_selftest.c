/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fails on purpose, in the way argv[1] names, so test/selftest can show
 * that test/run counts each failure:
 *   good      three passing checks
 *   child     two checks, then a child that dies of SIGSEGV (tap_child)
 *   hung      one check, then a child that never ends (tap_child, 1 s)
 *   crash     two checks, then this process dies of SIGSEGV
 *   early     two of the four checks owed, then a clean exit
 *   hang      one check, then this process sleeps for an hour
 *   overflow  one check, then a child that writes past a heap block
 *             (an ASan build reports it; the child's status is checked)
 *   skip      one check and one skipped check
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

static pid_t child(void (*body)(void))
{
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		body();
		_exit(0);
	}
	return pid;
}

static void segv(void)
{
	raise(SIGSEGV);
}

static void forever(void)
{
	for (;;)
		pause();
}

static void overflow(void)
{
	volatile char *p = malloc(16);
	volatile int i = 16;

	p[i] = 1;
	free((void *)p);
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "good";

	tap_ok(1, "first check");
	if (!strcmp(m, "good")) {
		tap_ok(1, "second check");
		tap_ok(1, "third check");
	} else if (!strcmp(m, "child")) {
		tap_ok(1, "second check");
		tap_child(child(segv), 10, "that dies of SIGSEGV");
	} else if (!strcmp(m, "hung")) {
		tap_child(child(forever), 1, "that never ends");
	} else if (!strcmp(m, "crash")) {
		tap_ok(1, "second check");
		fflush(stdout);
		raise(SIGSEGV);
	} else if (!strcmp(m, "early")) {
		tap_ok(1, "second check");
	} else if (!strcmp(m, "hang")) {
		sleep(3600);
	} else if (!strcmp(m, "overflow")) {
		tap_child(child(overflow), 10, "that writes past a heap block");
	} else if (!strcmp(m, "skip")) {
		printf("ok %d - a check that cannot run here # SKIP on purpose\n",
		       ++tap_n);
	}
	return tap_done();
}
