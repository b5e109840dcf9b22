/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_line [-s SIZE] [-c A,B]: the round trip of one cache line between
 * two threads pinned to CPUs A and B (default 0 and 1, where mpirun puts
 * ranks 0 and 1), in ns, as "RESULT line SIZE NS 0".
 *
 * Same-host MPI latency is mostly this round trip, and a VM's host may
 * place the two vCPUs near each other or far apart, and change that
 * within seconds (on the development VM: about 100 ns or 420-860 ns).
 * bench/run measures it before and after each same-host latency run, so
 * the summary can tell which placement a run had.
 *
 * Bounded: at most ROUNDS round trips and about one second; with the
 * two CPUs not available (or one CPU only) the threads run where the
 * kernel puts them, and the figure says so on stderr.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 200000
#define MAX_NS 1000000000ull

static _Alignas(64) atomic_ulong line;
static atomic_bool stop;
static int cpu_a, cpu_b;
static atomic_int pinned = 2;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull +
	       (unsigned long long)ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	if (pthread_setaffinity_np(pthread_self(), sizeof(s), &s))
		pinned--;
}

/* the other thread may need this CPU to answer */
static void wait_turn(void)
{
	if (cpu_a == cpu_b || atomic_load_explicit(&pinned,
						   memory_order_relaxed) < 2)
		sched_yield();
}

/* answers each odd value with the next even one */
static void *echo(void *arg)
{
	unsigned long v = 1;

	(void)arg;
	pin(cpu_b);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&line, memory_order_acquire) != v) {
			wait_turn();
			continue;
		}
		atomic_store_explicit(&line, v + 1, memory_order_release);
		v += 2;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long long t0, t1 = 0;
	unsigned long size = 0, i, v = 1;
	pthread_t t;
	int c;

	cpu_a = 0;
	cpu_b = 1;
	while ((c = getopt(argc, argv, "s:c:")) != -1) {
		if (c == 's') {
			size = strtoul(optarg, NULL, 10);
		} else if (c == 'c' &&
			   sscanf(optarg, "%d,%d", &cpu_a, &cpu_b) == 2 &&
			   cpu_a >= 0 && cpu_b >= 0 && cpu_a < CPU_SETSIZE &&
			   cpu_b < CPU_SETSIZE) {
			continue;
		} else {
			fprintf(stderr, "usage: bench_line [-s SIZE] [-c A,B]\n");
			return 2;
		}
	}
	pin(cpu_a);
	if (pthread_create(&t, NULL, echo, NULL)) {
		fprintf(stderr, "bench_line: no thread\n");
		return 1;
	}
	t0 = now_ns();
	for (i = 0; i < ROUNDS; i++) {
		atomic_store_explicit(&line, v, memory_order_release);
		while (atomic_load_explicit(&line, memory_order_acquire) != v + 1)
			wait_turn();
		v += 2;
		if (!(i & 1023) && (t1 = now_ns()) - t0 > MAX_NS) {
			i++;
			break;
		}
	}
	t1 = now_ns();
	atomic_store_explicit(&stop, true, memory_order_relaxed);
	pthread_join(t, NULL);
	if (pinned < 2)
		fprintf(stderr, "bench_line: CPUs %d and %d not both available: "
			"unpinned\n", cpu_a, cpu_b);
	printf("RESULT line %lu %.1f 0\n", size, (double)(t1 - t0) / (double)i);
	return 0;
}
