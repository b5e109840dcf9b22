/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Harness of test_msg: each case runs as two processes, the client (the
 * test's own process) and a forked server (passive side). They meet over
 * a control socket (struct ctl messages) and the server reports its
 * checks over a result pipe, so that the parent prints every check once.
 * Everything else here wraps the public libfabric API: opening a side,
 * connecting, waiting for EQ events and CQ completions in bounded time,
 * and random data patterns.
 */
#ifndef IWARP_TEST_MSG_UTIL_H
#define IWARP_TEST_MSG_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "fi_api.h"
#include "pattern.h"

#define MSG_API		TEST_API
#define MSG_PORT_BASE	23920
#define WAIT_MS		5000	/* the bound of one wait */
#define CM_MAX		252	/* FI_OPT_CM_DATA_SIZE of the provider */

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* One process of a case. */
struct proc {
	bool server;
	bool offset_mode;	/* mr_mode without FI_MR_VIRT_ADDR */
	bool broken;		/* the control channel failed: stop waiting */
	int ctl;		/* control socket (SOCK_SEQPACKET) */
	int port;
	uint64_t bind_tx;	/* extra CQ bind flags for FI_TRANSMIT */
	pid_t peer;		/* in the client: the server's pid */
	uint64_t seed;		/* shared by both sides */
	/* job keys node_open puts in the info (NULL: none) */
	const char *dom_key, *ep_key;
	/* hints beyond msg_hints' (msg_feat.c): mode bits, cq_data_size,
	 * caps; any of them reads the CQ as FI_CQ_FORMAT_DATA */
	uint64_t mode, caps;
	size_t cq_data;
	bool no_rma;	/* caps FI_MSG alone: no remote Writes taken */
};

struct msg_case {
	const char *name;
	void (*client)(struct proc *p);
	void (*server)(struct proc *p);
	bool offset_mode;
	bool server_killed;	/* the client kills the server on purpose */
	int timeout_s;		/* the whole case */
};

/* ---- checks and the process harness (msg_util.c) */

/* How the parent prints one check (tap_ok lives in test_msg.c). */
void msg_set_reporter(void (*report)(bool ok, const char *text),
		      void (*diag)(const char *text));
/* A check of the current process, named "client: ..." / "server: ...". */
bool check(bool cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Runs one case: forks the server, runs the client, collects results. */
void msg_run(const struct msg_case *c, int port, uint64_t seed);

/* ---- control messages */

enum ctl_op {
	CTL_READY = 1,		/* server: listening */
	CTL_ACK,		/* v[0]: 1 ok, 0 failed */
	CTL_NEXT,
	CTL_DONE,
	CTL_KEYS,		/* key, base, length, key2, base2 */
	CTL_POST_RECV,		/* len, niov, seed, report */
	CTL_VERIFY_RECV,	/* wait for the last posted receive */
	CTL_FILL,		/* off, len, seed: write a pattern */
	CTL_CHECK_REGION,	/* off, len, seed: verify a pattern */
	CTL_PAUSE,		/* stop driving progress until RESUME */
	CTL_RESUME,
	CTL_SEND_LATER,		/* ms: sleep, then send one message */
	CTL_END,
};

struct ctl {
	uint32_t op;
	uint32_t pad;
	uint64_t v[5];
};

bool ctl_send(struct proc *p, uint32_t op, uint64_t a, uint64_t b,
	      uint64_t c, uint64_t d, uint64_t e);
/* false on timeout, EOF or error (then p->broken is set). */
bool ctl_recv(struct proc *p, struct ctl *m, int timeout_ms);
bool ctl_expect(struct proc *p, uint32_t op, struct ctl *m, int timeout_ms);
/* A non-blocking peek for a pending message. */
bool ctl_pending(struct proc *p);

/* ---- time, randomness, patterns */

uint64_t now_ms(void);
void sleep_ms(int ms);
void rnd_seed(uint64_t seed);
uint64_t rnd(void);
size_t rnd_below(size_t n);	/* 0 .. n - 1, 0 if n == 0 */

/*
 * Up to three pieces of one message inside a buffer, with gaps between
 * them and a guarded window around; guard octets carry the pattern gseed
 * at their offset in the buffer, so the window can be checked after a
 * transfer for stray writes.
 */
#define LAYOUT_GAP	64

struct layout {
	int n;
	size_t off[3], len[3];	/* capacity of each piece */
	size_t total;		/* message octets (the last piece may be
				 * larger by `extra`) */
	size_t lo, hi;		/* guarded window */
};

/* Places total (+ extra capacity) in buf of buflen at a random spot. */
void layout_make(struct layout *l, size_t buflen, size_t total, int niov,
		 size_t extra);
void layout_iov(const struct layout *l, char *buf, struct iovec *iov);
/* Writes the guard over the window, then the message pattern. */
void layout_fill(const struct layout *l, char *buf, uint64_t seed,
		 uint64_t gseed);
void layout_guard(const struct layout *l, char *buf, uint64_t gseed);
/* "": intact; else what differs (static buffer). */
const char *layout_verify(const struct layout *l, const char *buf,
			  size_t got, uint64_t seed, uint64_t gseed);

/* ---- one side of a connection */

struct comp {
	void *ctx;
	uint64_t flags;
	size_t len;
	int err;		/* 0, or the positive FI_E* of an error */
	uint64_t data;		/* FI_CQ_FORMAT_DATA only */
	uint64_t tag;		/* FI_CQ_FORMAT_TAGGED only */
	size_t olen;		/* of an error */
	void *buf;
	int prov_errno;
	char text[160];		/* fi_cq_strerror of an error */
};

struct node {
	struct proc *p;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	int cq_fd;		/* FI_GETWAIT of the CQ, or -1 */
	bool fmt_data;		/* the CQ is FI_CQ_FORMAT_DATA */
	bool fmt_tagged;	/* ... FI_CQ_FORMAT_TAGGED (caps FI_TAGGED) */
	struct fid_eq *eq;	/* server: the passive endpoint's */
	struct fid_pep *pep;
	struct fid_ep *ep;	/* the current connection */
	struct fid_eq *ep_eq;	/* its own EQ */
	struct comp *comps;	/* completions read, not yet taken */
	size_t ncomps, capcomps;
};

/* An EQ event or error entry as eq_wait returns it: the entry with room
 * for its CM data behind it (a GNU extension clang names) */
#ifdef __clang__
#pragma clang diagnostic ignored "-Wgnu-variable-sized-type-not-at-end"
#endif
struct eq_ev {
	ssize_t ret;
	uint32_t event;
	union {
		struct fi_eq_cm_entry cm;
		uint8_t raw[sizeof(struct fi_eq_cm_entry) + 512];
	} u;
	size_t data_len;	/* CM data octets after the entry */
	struct fi_eq_err_entry err;
	uint8_t err_data[512];
};

struct fi_info *msg_hints(const struct proc *p);
/* Sets (or with NULL clears) info's domain_attr and ep_attr auth_key. */
void info_keys(struct fi_info *info, const char *dom_key, const char *ep_key);
/* getinfo, fabric, domain, CQ (default: FI_CQ_FORMAT_MSG, wait fd);
 * the server also listens on its port. 0 or a negative error. */
int node_open(struct node *n, struct proc *p, const struct fi_cq_attr *cqa);
void node_close(struct node *n);
/* Closes the current endpoint and its EQ; returns fi_close's result. */
int node_close_ep(struct node *n);
/* Remote address of offset off in a region registered at base. */
uint64_t rma_addr(const struct node *n, uint64_t base, size_t off);
struct fid_mr *mr_reg(struct node *n, void *buf, size_t len,
		      uint64_t access);

/* Waits up to ms for an event: length read, -FI_EAVAIL (err filled) or
 * -FI_EAGAIN on timeout. */
ssize_t eq_wait(struct fid_eq *eq, struct eq_ev *e, int ms);
const char *eq_ev_str(const struct eq_ev *e);

/* Client: endpoint with its own EQ, bound to the CQ, enabled. */
int cli_endpoint(struct node *n);
/* Client: cli_endpoint unless done, connect with data, wait FI_CONNECTED.
 * The accept data lands in *acc. 0, or a negative error (diag'ed). */
int cli_connect(struct node *n, const void *data, size_t len,
		struct eq_ev *acc);
/* Server: wait for FI_CONNREQ on the pep's EQ (in *req). */
int srv_connreq(struct node *n, struct eq_ev *req, int ms);
/* Server: endpoint for req's info (freed), own EQ, bound and enabled. */
int srv_endpoint(struct node *n, struct eq_ev *req);
/* Server: fi_accept with data, wait FI_CONNECTED. */
int srv_accept(struct node *n, const void *data, size_t len);

/* node_open + READY + connect, one check "connected". */
bool cli_setup(struct node *n, struct proc *p, const struct fi_cq_attr *cqa);
/* node_open + READY + accept, one check "accepted". */
bool srv_setup(struct node *n, struct proc *p, const struct fi_cq_attr *cqa);

/* Reads every available completion into n->comps (drives progress). */
void cq_drain(struct node *n);
/* Sleeps up to ms on the CQ's fd (after fi_trywait) and, if watch_ctl,
 * the control socket. */
void node_wait(struct node *n, int ms, bool watch_ctl);
/* Takes the completion of ctx, waiting up to ms. */
bool cq_take(struct node *n, void *ctx, struct comp *out, int ms);
/* Takes the oldest completion, waiting up to ms. */
bool cq_take_any(struct node *n, struct comp *out, int ms);
/* Waits for a control message while driving progress. */
bool ctl_wait_serving(struct node *n, struct ctl *m, int ms);

/* Posts with -FI_EAGAIN retried (progress in between) for up to ms. */
#define POST_RETRY(n, ms, call) ({					\
	uint64_t end_ = now_ms() + (ms);				\
	ssize_t r_;							\
	while ((r_ = (call)) == -FI_EAGAIN && now_ms() < end_)		\
		cq_drain(n);						\
	r_;								\
})

/* ---- the data transfer cases (msg_data.c) */

void sizes_client(struct proc *p);
void sizes_server(struct proc *p);
void delivery_client(struct proc *p);
void delivery_server(struct proc *p);
void violation_client(struct proc *p);
void violation_server(struct proc *p);
void cancel_client(struct proc *p);
void cancel_server(struct proc *p);
void overrun_client(struct proc *p);
void overrun_server(struct proc *p);
void epoll_client(struct proc *p);
void epoll_server(struct proc *p);
void inject_client(struct proc *p);
void inject_server(struct proc *p);
void selective_client(struct proc *p);
void selective_server(struct proc *p);

/* ---- remote CQ data, multi-receive, prefix (msg_feat.c) */

void cqdata_client(struct proc *p);
void cqdata_server(struct proc *p);
void cqdata_norecv_client(struct proc *p);
void cqdata_norecv_server(struct proc *p);
void cqdata_flood_client(struct proc *p);
void cqdata_flood_server(struct proc *p);
void cqdata_norma_client(struct proc *p);
void cqdata_norma_server(struct proc *p);
void cqdata_half_client(struct proc *p);
void cqdata_half_server(struct proc *p);
void multi_client(struct proc *p);
void multi_server(struct proc *p);
void prefix_client(struct proc *p);
void prefix_server(struct proc *p);
void tagged_client(struct proc *p);
void tagged_server(struct proc *p);
void tagged_half_client(struct proc *p);
void tagged_half_server(struct proc *p);

#endif /* IWARP_TEST_MSG_UTIL_H */
