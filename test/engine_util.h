/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A small harness for engine tests over real loopback TCP: a poll(2) loop
 * that drives registered QPs and listeners through their fds and
 * deadlines, recorders of completions and CM events per QP, a helper that
 * builds a connected pair, and buffer helpers.
 *
 * Everything runs on the calling thread; callbacks record into the
 * eu_qp / eu_listener they were registered with, then call the optional
 * hooks. Recorded events are deep copies: private data and Terminate
 * octets stay valid after the callback returns.
 */
#ifndef IWARP_TEST_ENGINE_UTIL_H
#define IWARP_TEST_ENGINE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iwarp/engine.h"

#define EU_MAX_EV 16		/* CM events kept per QP */
#define EU_MAX_REQ 8		/* connection requests kept per listener */
#define EU_MAX_TARGETS 8	/* QPs a listener may accept into */
#define EU_MAX_OBJS 64		/* QPs (and listeners) per loop */
#define EU_PORT_BASE 23840
#define EU_TERM_RAW_MAX 64

/* A context value that is not a pointer to anything: for ctx fields. */
#define EU_CTX(n) ((void *)(uintptr_t)(0x10000u + (unsigned int)(n)))
/* ctx of the first message the pair helper sends in client-server mode */
#define EU_HELLO_CTX EU_CTX(0xfffe)

/* A copy of struct iw_cm_event that outlives the callback. */
struct eu_ev {
	enum iw_cm_event_type type;
	int status;
	struct iw_err err;
	bool remote;
	uint8_t rev;
	bool enhanced;
	bool p2p;
	uint8_t rtr;
	uint16_t peer_ird, peer_ord;
	uint16_t pdata_len;
	uint8_t pdata[MPA_MAX_PD];
	uint16_t ird, ord;
	uint8_t rtr_used;
	bool crc;
	bool markers_rx, markers_tx;
	uint32_t mulpdu;
	uint8_t term_raw[EU_TERM_RAW_MAX];
	size_t term_raw_len;
	uint64_t when_ms;	/* iw_now_ms() at the callback */
};

struct eu_qp;

typedef void (*eu_wc_hook)(struct eu_qp *q, const struct iw_wc *wc);
typedef void (*eu_ev_hook)(struct eu_qp *q, const struct eu_ev *ev);
typedef int (*eu_place_hook)(struct eu_qp *q, const struct iw_place *p,
			     struct iw_sge *dst, void **ctx);

/* One QP with its recorders. */
struct eu_qp {
	struct iw_qp *qp;
	const char *name;
	struct iw_qp_ops ops;
	/* every completion, in arrival order */
	struct iw_wc *wc;
	size_t n_wc, cap_wc;
	/* CM events in arrival order; extra ones are only counted */
	struct eu_ev ev[EU_MAX_EV];
	int n_ev;
	int ev_dropped;
	/* the request this QP was accepted for (responder side) */
	struct eu_ev req;
	bool has_req;
	bool finished;		/* iw_qp_progress() returned < 0 */
	bool paused;		/* eu_run() leaves it alone */
	uint64_t n_progress;
	uint64_t max_progress_us;	/* longest single progress call */
	/* optional hooks, called after recording */
	eu_wc_hook on_wc;
	eu_ev_hook on_ev;
	eu_place_hook place;	/* peek mode; NULL refuses */
	void *user;
};

struct eu_listener;
typedef void (*eu_accept_hook)(struct eu_listener *el, struct eu_qp *q);

enum eu_lmode {
	EU_L_ACCEPT,		/* accept into the next target QP */
	EU_L_REJECT,		/* reject with rej_pdata */
	EU_L_IGNORE,		/* leave the request pending */
};

struct eu_listener {
	struct iw_listener *l;
	uint16_t port;
	struct iw_conn_param param;	/* listen and accept policy */
	enum eu_lmode mode;
	struct eu_qp *targets[EU_MAX_TARGETS];
	int n_targets, next_target;
	const void *rej_pdata;
	uint16_t rej_len;
	struct eu_ev req[EU_MAX_REQ];
	int n_req;
	int req_dropped;
	int accept_rc;		/* last iw_accept / iw_reject result */
	int n_accept_fail;
	bool finished;
	eu_accept_hook after_accept;	/* right after a successful accept */
	void *user;
};

/* The set of objects eu_run() drives. */
struct eu_loop {
	struct eu_qp *qps[EU_MAX_OBJS];
	int n_qps;
	struct eu_listener *ls[EU_MAX_OBJS];
	int n_ls;
	bool busy;		/* progress everything on every pass */
	uint64_t passes;
};

struct eu_env {
	struct iw_dev *dev;
	struct iw_pd *pd;
	struct eu_loop loop;
};

/* ---- environment and loop */

/* With EU_LOG=<level> in the environment, engine log lines up to that
 * level (0 warn, 1 info, 2 debug) go to stderr. */
int eu_env_open(struct eu_env *env);
/* Frees the PD and the device; returns the first error (-EBUSY = leak). */
int eu_env_close(struct eu_env *env);

void eu_loop_add_qp(struct eu_loop *lp, struct eu_qp *q);
void eu_loop_del_qp(struct eu_loop *lp, struct eu_qp *q);
void eu_loop_add_listener(struct eu_loop *lp, struct eu_listener *el);
void eu_loop_del_listener(struct eu_loop *lp, struct eu_listener *el);

/*
 * Drives the registered objects until done(arg) is true or timeout_ms
 * passed: poll(2) on their fds with the events they ask for, progress
 * when an fd is ready or a deadline passed. done may be NULL (run for
 * the whole timeout). Returns whether done() became true.
 */
bool eu_run(struct eu_loop *lp, bool (*done)(void *), void *arg,
	    int timeout_ms);
/* eu_run() without a condition. */
void eu_idle(struct eu_loop *lp, int ms);

/* ---- QPs and recorders */

/* attr's ops and arg are replaced by the recorder's. */
int eu_qp_create(struct eu_qp *q, struct iw_pd *pd, const char *name,
		 const struct iw_qp_attr *attr);
/* Destroys the engine QP (flush completions are recorded); keeps the
 * recorder for inspection. */
int eu_qp_destroy(struct eu_qp *q);
/* Frees the recorder's memory. */
void eu_qp_release(struct eu_qp *q);
void eu_qp_clear_wc(struct eu_qp *q);

int eu_count_ctx(const struct eu_qp *q, const void *ctx);
/* The latest completion with this ctx, or NULL. */
const struct iw_wc *eu_find_wc(const struct eu_qp *q, const void *ctx);
int eu_count_ev(const struct eu_qp *q, enum iw_cm_event_type t);
const struct eu_ev *eu_find_ev(const struct eu_qp *q,
			       enum iw_cm_event_type t);
/* The QP saw REJECTED, UNREACHABLE, ERROR or DISCONNECTED. */
bool eu_qp_failed(const struct eu_qp *q);
/* The first such event, or NULL. */
const struct eu_ev *eu_fail_ev(const struct eu_qp *q);

bool eu_wait_n_wc(struct eu_loop *lp, struct eu_qp *q, size_t n,
		  int timeout_ms);
bool eu_wait_ctx(struct eu_loop *lp, struct eu_qp *q, const void *ctx,
		 int timeout_ms);
bool eu_wait_ev(struct eu_loop *lp, struct eu_qp *q,
		enum iw_cm_event_type t, int timeout_ms);

/* Posts, driving the loop while the send queue is full (-EAGAIN). */
int eu_post_send(struct eu_loop *lp, struct eu_qp *q,
		 const struct iw_send_wr *wr, int timeout_ms);

const char *eu_ev_str(enum iw_cm_event_type t);
const char *eu_status_str(enum iw_wc_status s);
/* "layer/etype/ecode" in a static buffer (one of four in rotation) */
const char *eu_err_str(const struct iw_err *e);
bool eu_err_is(const struct iw_err *e, uint8_t layer, uint8_t etype,
	       uint8_t ecode);

/* ---- listeners */

uint16_t eu_next_port(void);
/* Listens on 127.0.0.1:port, or on the next free fixed port when port
 * is 0 (from EU_PORT_BASE upward). */
int eu_listen(struct eu_listener *el, struct iw_dev *dev, uint16_t port,
	      const struct iw_conn_param *param);
/* eu_listen() with a listen(2) backlog other than 16. */
int eu_listen_backlog(struct eu_listener *el, struct iw_dev *dev,
		      uint16_t port, const struct iw_conn_param *param,
		      int backlog);
int eu_listener_close(struct eu_listener *el);
/* Queues a pre-created QP to accept the next request into. */
void eu_listener_target(struct eu_listener *el, struct eu_qp *q);

/* ---- connected pairs */

struct eu_pair_cfg {
	struct iw_conn_param init;	/* initiator's iw_qp_connect() */
	struct iw_conn_param resp;	/* responder: listen and accept */
	struct iw_qp_attr init_attr, resp_attr;	/* ops/arg ignored */
	int timeout_ms;			/* 0 = 5000 */
	uint16_t port;			/* listener port, 0: the next free */
	/* Client-server (or unenhanced) connections: the responder may
	 * only send once the initiator's first FPDU arrived, so the helper
	 * sends a zero-length Send into a receive it posts (ctx
	 * EU_HELLO_CTX). no_hello leaves that to the test. */
	bool no_hello;
};

struct eu_pair {
	struct eu_env *env;
	struct eu_listener lst;
	struct eu_qp a;		/* initiator */
	struct eu_qp b;		/* responder */
	struct sockaddr_storage dst;
	socklen_t dst_len;
	bool cs;		/* responder waited for the first FPDU */
	int connect_rc;		/* iw_qp_connect() */
	bool up;		/* both saw IW_CM_ESTABLISHED */
};

/* Creates both QPs and the listener and registers them with the loop. */
int eu_pair_init(struct eu_pair *p, struct eu_env *env,
		 const struct eu_pair_cfg *cfg);
/* iw_qp_connect() from a to the listener. */
int eu_pair_start(struct eu_pair *p, const struct iw_conn_param *init);
/* Drives until both sides are established (plus the hello exchange in
 * client-server mode) or one side failed: 0, -ETIMEDOUT, -ECONNREFUSED,
 * or the error of a failed iw_accept(). */
int eu_pair_wait(struct eu_pair *p, const struct eu_pair_cfg *cfg);
/* init + start + wait. On failure the pair stays inspectable; call
 * eu_pair_fini() in every case. */
int eu_pair_connect(struct eu_pair *p, struct eu_env *env,
		    const struct eu_pair_cfg *cfg);
/* Destroys the QPs and the listener, releases the recorders. */
void eu_pair_fini(struct eu_pair *p);
/* The established event of a side, or NULL. */
const struct eu_ev *eu_est(const struct eu_qp *q);

/* ---- buffers */

struct eu_buf {
	uint8_t *addr;
	size_t len;
	struct iw_mr *mr;	/* NULL when not registered */
	uint32_t stag;
	uint64_t base_to;	/* tagged offset of addr[0] */
};

/* Allocates len octets (zeroed); registers them when access != 0, in
 * virtual-address mode (base_to = address) or offset mode (0). */
int eu_buf_alloc(struct eu_buf *b, struct iw_pd *pd, size_t len,
		 unsigned int access, bool va_mode);
void eu_buf_free(struct eu_buf *b);
/* Tagged offset of addr[off]. */
static inline uint64_t eu_to(const struct eu_buf *b, size_t off)
{
	return b->base_to + off;
}

/* Deterministic pseudo-random octets. */
void eu_fill(void *p, size_t len, uint64_t seed);
/* 64-bit FNV-1a. */
uint64_t eu_hash(const void *p, size_t len);
/* Index of the first octet != c, or len. */
size_t eu_find_not(const void *p, size_t len, uint8_t c);
/* Microseconds on the monotonic clock. */
uint64_t eu_now_us(void);

#endif /* IWARP_TEST_ENGINE_UTIL_H */
