/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by the fault programs (fault_msg, fault_rdm): time,
 * payload patterns, memory and descriptor figures, and the libfabric
 * objects every program opens. Each program prints lines "RESULT ..."
 * with its figures and exits 0 only when its expectation held, so
 * run-fault can turn a run into one PASS or FAIL line.
 */
#ifndef IWARP_FAULT_UTIL_H
#define IWARP_FAULT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

/* the API of the headers built against */
#define FAULT_API FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

uint64_t fault_now_ms(void);
/* CLOCK_MONOTONIC in ns into *wall (if not NULL); returns the same less
 * the time this thread has waited for a CPU (its run-queue delay, from
 * /proc/thread-self/schedstat), so the difference of two readings is how
 * long a call took without the time a loaded machine kept the thread
 * from running: what the call itself spent, computing or blocked. The
 * plain monotonic time if schedstat cannot be read (*exact false). */
uint64_t fault_own_ns(uint64_t *wall, bool *exact);
void fault_sleep_ms(int ms);
/* Prints "prefix: fmt" to stderr with the monotonic time in ms. */
void fault_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fault_set_name(const char *name);
/* Records the first failure in why[len] and logs it; later ones are
 * dropped. */
void fault_fail(char *why, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Message payloads: octet j of message (stream, seq) is a function of
 * the run's seed, so the receiver checks every octet it gets. */
void pat_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t stream,
	      uint64_t seq);
/* Index of the first octet that differs, or SIZE_MAX. */
size_t pat_check(const uint8_t *buf, size_t len, uint64_t seed,
		 uint64_t stream, uint64_t seq);
/* A message size 1..max (some at the extremes), from (seed, stream, seq). */
size_t pat_size(size_t max, uint64_t seed, uint64_t stream, uint64_t seq);

/* Resident set in KiB, from /proc/self/status (0 if unknown). */
long fault_rss_kb(void);
/* Open descriptors of this process. */
int fault_fd_count(void);
/* Sets RLIMIT_NOFILE's soft limit (capped by the hard one); returns the
 * soft limit in force afterwards. want < 0: the hard limit. */
long fault_nofile(long want);

/* "127.0.0.1:24150" into a sockaddr_in; 0 or -1. */
int fault_parse_addr(const char *s, struct sockaddr_in *out);

/* fi_getinfo for the iwarp provider on loopback, then fabric + domain. */
struct fault_fab {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
};
/* hints are consumed (freed). node/service as fi_getinfo takes them. */
int fault_fab_open(struct fault_fab *f, struct fi_info *hints,
		   const char *node, const char *service, uint64_t flags);
void fault_fab_close(struct fault_fab *f);
struct fi_info *fault_hints(enum fi_ep_type type);

/* Every posted operation is tracked by its context: posted once,
 * completed once (success or error). */
struct op_track {
	uint8_t *state;		/* 0 idle, 1 posted */
	size_t n;
	uint64_t posted, done, errors, doubles, strays;
};
int track_init(struct op_track *t, size_t n);
void track_free(struct op_track *t);
void track_post(struct op_track *t, size_t i);
/* false if i was not posted (a double or stray completion). */
bool track_done(struct op_track *t, size_t i, bool error);
uint64_t track_outstanding(const struct op_track *t);

#endif /* IWARP_FAULT_UTIL_H */
