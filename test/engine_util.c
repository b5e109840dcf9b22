/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Test harness for the engine: see engine_util.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine_util.h"

/* ---- small helpers */

uint64_t eu_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

void eu_fill(void *p, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
	uint8_t *o = p;
	size_t i;

	for (i = 0; i < len; i++) {
		if (!(i & 7)) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
		}
		o[i] = (uint8_t)(x >> ((i & 7) * 8));
	}
}

uint64_t eu_hash(const void *p, size_t len)
{
	const uint8_t *s = p;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

size_t eu_find_not(const void *p, size_t len, uint8_t c)
{
	const uint8_t *s = p;
	size_t i;

	for (i = 0; i < len; i++)
		if (s[i] != c)
			return i;
	return len;
}

const char *eu_ev_str(enum iw_cm_event_type t)
{
	static const char *const names[] = {
		[IW_CM_CONNECT_REQUEST] = "CONNECT_REQUEST",
		[IW_CM_ESTABLISHED] = "ESTABLISHED",
		[IW_CM_REJECTED] = "REJECTED",
		[IW_CM_UNREACHABLE] = "UNREACHABLE",
		[IW_CM_DISCONNECTED] = "DISCONNECTED",
		[IW_CM_ERROR] = "ERROR",
	};

	if ((unsigned int)t >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[t];
}

const char *eu_status_str(enum iw_wc_status s)
{
	static const char *const names[] = {
		[IW_WC_SUCCESS] = "SUCCESS",   [IW_WC_FLUSHED] = "FLUSHED",
		[IW_WC_LOC_LEN] = "LOC_LEN",   [IW_WC_LOC_PROT] = "LOC_PROT",
		[IW_WC_REM_ERROR] = "REM_ERROR", [IW_WC_FATAL] = "FATAL",
	};

	if ((unsigned int)s >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[s];
}

const char *eu_err_str(const struct iw_err *e)
{
	static char bufs[4][24];
	static int next;
	char *b = bufs[next++ & 3];

	snprintf(b, sizeof(bufs[0]), "%u/%u/%u", e->layer, e->etype,
		 e->ecode);
	return b;
}

bool eu_err_is(const struct iw_err *e, uint8_t layer, uint8_t etype,
	       uint8_t ecode)
{
	return e->layer == layer && e->etype == etype && e->ecode == ecode;
}

/* ---- recorders */

static void copy_ev(struct eu_ev *d, const struct iw_cm_event *ev)
{
	size_t n;

	memset(d, 0, sizeof(*d));
	d->type = ev->type;
	d->status = ev->status;
	d->err = ev->err;
	d->remote = ev->remote;
	d->rev = ev->rev;
	d->enhanced = ev->enhanced;
	d->p2p = ev->p2p;
	d->rtr = ev->rtr;
	d->peer_ird = ev->peer_ird;
	d->peer_ord = ev->peer_ord;
	d->pdata_len = ev->pdata_len;
	n = ev->pdata_len < MPA_MAX_PD ? ev->pdata_len : MPA_MAX_PD;
	if (ev->pdata && n)
		memcpy(d->pdata, ev->pdata, n);
	d->ird = ev->ird;
	d->ord = ev->ord;
	d->rtr_used = ev->rtr_used;
	d->crc = ev->crc;
	d->markers_rx = ev->markers_rx;
	d->markers_tx = ev->markers_tx;
	d->mulpdu = ev->mulpdu;
	n = ev->term_raw_len < EU_TERM_RAW_MAX ? ev->term_raw_len :
						 EU_TERM_RAW_MAX;
	if (ev->term_raw && n)
		memcpy(d->term_raw, ev->term_raw, n);
	d->term_raw_len = ev->term_raw_len;
	d->when_ms = iw_now_ms();
}

static void rec_cm_event(void *arg, struct iw_qp *qp,
			 const struct iw_cm_event *ev)
{
	struct eu_qp *q = arg;
	struct eu_ev *d;

	if (q->n_ev >= EU_MAX_EV) {
		q->ev_dropped++;
		return;
	}
	d = &q->ev[q->n_ev++];
	copy_ev(d, ev);
	if (q->on_ev)
		q->on_ev(q, d);
}

static void rec_complete(void *arg, struct iw_qp *qp, const struct iw_wc *wc)
{
	struct eu_qp *q = arg;

	if (q->n_wc == q->cap_wc) {
		size_t cap = q->cap_wc ? q->cap_wc * 2 : 64;
		struct iw_wc *n = realloc(q->wc, cap * sizeof(*n));

		if (!n) {
			fprintf(stderr, "eu: out of memory\n");
			abort();
		}
		q->wc = n;
		q->cap_wc = cap;
	}
	q->wc[q->n_wc++] = *wc;
	if (q->on_wc)
		q->on_wc(q, wc);
}

static int rec_place(void *arg, struct iw_qp *qp, const struct iw_place *p,
		     struct iw_sge *dst, void **ctx)
{
	struct eu_qp *q = arg;

	if (!q->place)
		return -1;
	return q->place(q, p, dst, ctx);
}

int eu_qp_create(struct eu_qp *q, struct iw_pd *pd, const char *name,
		 const struct iw_qp_attr *attr)
{
	struct iw_qp_attr a = {0};

	memset(q, 0, sizeof(*q));
	q->name = name;
	q->ops.cm_event = rec_cm_event;
	q->ops.complete = rec_complete;
	q->ops.place = rec_place;
	if (attr)
		a = *attr;
	a.ops = &q->ops;
	a.arg = q;
	return iw_qp_create(pd, &a, &q->qp);
}

int eu_qp_destroy(struct eu_qp *q)
{
	int rc = 0;

	if (q->qp)
		rc = iw_qp_destroy(q->qp);
	q->qp = NULL;
	return rc;
}

void eu_qp_release(struct eu_qp *q)
{
	free(q->wc);
	q->wc = NULL;
	q->n_wc = 0;
	q->cap_wc = 0;
}

void eu_qp_clear_wc(struct eu_qp *q)
{
	q->n_wc = 0;
}

int eu_count_ctx(const struct eu_qp *q, const void *ctx)
{
	size_t i;
	int n = 0;

	for (i = 0; i < q->n_wc; i++)
		if (q->wc[i].ctx == ctx)
			n++;
	return n;
}

const struct iw_wc *eu_find_wc(const struct eu_qp *q, const void *ctx)
{
	size_t i;

	for (i = q->n_wc; i-- > 0;)
		if (q->wc[i].ctx == ctx)
			return &q->wc[i];
	return NULL;
}

int eu_count_ev(const struct eu_qp *q, enum iw_cm_event_type t)
{
	int i, n = 0;

	for (i = 0; i < q->n_ev; i++)
		if (q->ev[i].type == t)
			n++;
	return n;
}

const struct eu_ev *eu_find_ev(const struct eu_qp *q,
			       enum iw_cm_event_type t)
{
	int i;

	for (i = 0; i < q->n_ev; i++)
		if (q->ev[i].type == t)
			return &q->ev[i];
	return NULL;
}

static bool is_fail_type(enum iw_cm_event_type t)
{
	return t == IW_CM_REJECTED || t == IW_CM_UNREACHABLE ||
	       t == IW_CM_DISCONNECTED || t == IW_CM_ERROR;
}

const struct eu_ev *eu_fail_ev(const struct eu_qp *q)
{
	int i;

	for (i = 0; i < q->n_ev; i++)
		if (is_fail_type(q->ev[i].type))
			return &q->ev[i];
	return NULL;
}

bool eu_qp_failed(const struct eu_qp *q)
{
	return eu_fail_ev(q) != NULL;
}

const struct eu_ev *eu_est(const struct eu_qp *q)
{
	return eu_find_ev(q, IW_CM_ESTABLISHED);
}

/* ---- the loop */

void eu_loop_add_qp(struct eu_loop *lp, struct eu_qp *q)
{
	if (lp->n_qps >= EU_MAX_OBJS) {
		fprintf(stderr, "eu: too many QPs in the loop\n");
		abort();
	}
	lp->qps[lp->n_qps++] = q;
}

void eu_loop_del_qp(struct eu_loop *lp, struct eu_qp *q)
{
	int i;

	for (i = 0; i < lp->n_qps; i++) {
		if (lp->qps[i] == q) {
			lp->qps[i] = lp->qps[--lp->n_qps];
			return;
		}
	}
}

void eu_loop_add_listener(struct eu_loop *lp, struct eu_listener *el)
{
	if (lp->n_ls >= EU_MAX_OBJS) {
		fprintf(stderr, "eu: too many listeners in the loop\n");
		abort();
	}
	lp->ls[lp->n_ls++] = el;
}

void eu_loop_del_listener(struct eu_loop *lp, struct eu_listener *el)
{
	int i;

	for (i = 0; i < lp->n_ls; i++) {
		if (lp->ls[i] == el) {
			lp->ls[i] = lp->ls[--lp->n_ls];
			return;
		}
	}
}

static bool qp_driven(const struct eu_qp *q)
{
	return q->qp && !q->finished && !q->paused;
}

/* Earliest deadline of the driven objects, 0 if none. */
static uint64_t loop_deadline(const struct eu_loop *lp)
{
	uint64_t dl = 0, d;
	int i;

	for (i = 0; i < lp->n_qps; i++) {
		if (!qp_driven(lp->qps[i]))
			continue;
		d = iw_qp_deadline(lp->qps[i]->qp);
		if (d && (!dl || d < dl))
			dl = d;
	}
	for (i = 0; i < lp->n_ls; i++) {
		if (!lp->ls[i]->l || lp->ls[i]->finished)
			continue;
		d = iw_listener_deadline(lp->ls[i]->l);
		if (d && (!dl || d < dl))
			dl = d;
	}
	return dl;
}

static void qp_progress(struct eu_qp *q)
{
	uint64_t t0 = eu_now_us(), dt;

	if (iw_qp_progress(q->qp) < 0)
		q->finished = true;
	dt = eu_now_us() - t0;
	q->n_progress++;
	if (dt > q->max_progress_us)
		q->max_progress_us = dt;
}

/* Which object each pollfd entry belongs to. */
struct poll_slot {
	struct eu_qp *q;
	struct eu_listener *el;
};

static int fill_pollfds(struct eu_loop *lp, struct pollfd *pfd,
			struct poll_slot *slot)
{
	int i, n = 0, fd;

	for (i = 0; i < lp->n_qps; i++) {
		struct eu_qp *q = lp->qps[i];
		short ev;

		if (!qp_driven(q))
			continue;
		fd = iw_qp_fd(q->qp);
		ev = iw_qp_poll_events(q->qp);
		if (fd < 0 || !ev)
			continue;
		pfd[n] = (struct pollfd){ .fd = fd, .events = ev };
		slot[n++] = (struct poll_slot){ .q = q };
	}
	for (i = 0; i < lp->n_ls; i++) {
		struct eu_listener *el = lp->ls[i];

		if (!el->l || el->finished)
			continue;
		fd = iw_listener_fd(el->l);
		if (fd < 0)
			continue;
		pfd[n] = (struct pollfd){ .fd = fd, .events = POLLIN };
		slot[n++] = (struct poll_slot){ .el = el };
	}
	return n;
}

static void listener_progress(struct eu_listener *el)
{
	if (iw_listener_progress(el->l) < 0)
		el->finished = true;
}

/*
 * Progress for every object whose fd was ready, then for every object
 * whose deadline passed (objects may appear or vanish inside callbacks,
 * so the second pass re-reads the loop's arrays).
 */
static void dispatch(struct eu_loop *lp, struct pollfd *pfd,
		     struct poll_slot *slot, int n)
{
	uint64_t now;
	int i;

	for (i = 0; i < n; i++) {
		if (!pfd[i].revents && !lp->busy)
			continue;
		if (slot[i].q && qp_driven(slot[i].q))
			qp_progress(slot[i].q);
		else if (slot[i].el && slot[i].el->l && !slot[i].el->finished)
			listener_progress(slot[i].el);
	}
	now = iw_now_ms();
	for (i = 0; i < lp->n_qps; i++) {
		struct eu_qp *q = lp->qps[i];
		uint64_t d;

		if (!qp_driven(q))
			continue;
		d = iw_qp_deadline(q->qp);
		if ((d && now >= d) || (lp->busy && iw_qp_fd(q->qp) < 0))
			qp_progress(q);
	}
	for (i = 0; i < lp->n_ls; i++) {
		struct eu_listener *el = lp->ls[i];
		uint64_t d;

		if (!el->l || el->finished)
			continue;
		d = iw_listener_deadline(el->l);
		if (d && now >= d)
			listener_progress(el);
	}
}

static int poll_timeout(struct eu_loop *lp, uint64_t end_ms)
{
	uint64_t now = iw_now_ms(), dl = loop_deadline(lp), until = end_ms;

	if (lp->busy)
		return 0;
	if (dl && dl < until)
		until = dl;
	if (until <= now)
		return 0;
	return (int)(until - now);
}

bool eu_run(struct eu_loop *lp, bool (*done)(void *), void *arg,
	    int timeout_ms)
{
	struct pollfd pfd[2 * EU_MAX_OBJS];
	struct poll_slot slot[2 * EU_MAX_OBJS];
	uint64_t end = iw_now_ms();
	int n, rc;

	if (timeout_ms > 0)
		end += (uint64_t)timeout_ms;

	for (;;) {
		if (done && done(arg))
			return true;
		if (iw_now_ms() >= end)
			return false;
		n = fill_pollfds(lp, pfd, slot);
		rc = poll(pfd, (nfds_t)n, poll_timeout(lp, end));
		if (rc < 0 && errno != EINTR) {
			perror("eu: poll");
			return false;
		}
		if (rc < 0)
			continue;
		lp->passes++;
		dispatch(lp, pfd, slot, n);
	}
}

void eu_idle(struct eu_loop *lp, int ms)
{
	eu_run(lp, NULL, NULL, ms);
}

struct wait_wc {
	struct eu_qp *q;
	size_t n;
	const void *ctx;
	enum iw_cm_event_type t;
};

static bool done_n_wc(void *arg)
{
	struct wait_wc *w = arg;

	return w->q->n_wc >= w->n;
}

static bool done_ctx(void *arg)
{
	struct wait_wc *w = arg;

	return eu_find_wc(w->q, w->ctx) != NULL;
}

static bool done_ev(void *arg)
{
	struct wait_wc *w = arg;

	return eu_find_ev(w->q, w->t) != NULL;
}

bool eu_wait_n_wc(struct eu_loop *lp, struct eu_qp *q, size_t n,
		  int timeout_ms)
{
	struct wait_wc w = { .q = q, .n = n };

	return eu_run(lp, done_n_wc, &w, timeout_ms);
}

bool eu_wait_ctx(struct eu_loop *lp, struct eu_qp *q, const void *ctx,
		 int timeout_ms)
{
	struct wait_wc w = { .q = q, .ctx = ctx };

	return eu_run(lp, done_ctx, &w, timeout_ms);
}

bool eu_wait_ev(struct eu_loop *lp, struct eu_qp *q,
		enum iw_cm_event_type t, int timeout_ms)
{
	struct wait_wc w = { .q = q, .t = t };

	return eu_run(lp, done_ev, &w, timeout_ms);
}

int eu_post_send(struct eu_loop *lp, struct eu_qp *q,
		 const struct iw_send_wr *wr, int timeout_ms)
{
	uint64_t end = iw_now_ms() + (uint64_t)timeout_ms;
	int rc;

	for (;;) {
		rc = iw_qp_post_send(q->qp, wr);
		if (rc != -EAGAIN || iw_now_ms() >= end)
			return rc;
		eu_idle(lp, 1);
	}
}

/* ---- environment */

/* Engine log lines up to EU_LOG's level go to stderr. */
static void eu_log(void *arg, int level, const char *msg)
{
	int max = *(int *)arg;

	if ((level & IW_LOG_LEVEL_MASK) <= max)
		fprintf(stderr, "# engine[%d%s]: %s\n", level & IW_LOG_LEVEL_MASK,
			level & IW_LOG_DATA ? " data" : "", msg);
}

int eu_env_open(struct eu_env *env)
{
	static int log_level;
	const char *lv = getenv("EU_LOG");
	int rc;

	memset(env, 0, sizeof(*env));
	rc = iw_dev_open(&env->dev);
	if (rc)
		return rc;
	if (lv) {
		log_level = atoi(lv);
		iw_dev_set_log(env->dev, eu_log, &log_level);
	}
	rc = iw_pd_alloc(env->dev, &env->pd);
	if (rc) {
		iw_dev_close(env->dev);
		env->dev = NULL;
	}
	return rc;
}

int eu_env_close(struct eu_env *env)
{
	int rc = 0, rc2;

	if (env->pd)
		rc = iw_pd_free(env->pd);
	if (env->dev) {
		rc2 = iw_dev_close(env->dev);
		if (!rc)
			rc = rc2;
	}
	env->pd = NULL;
	env->dev = NULL;
	return rc;
}

/* ---- listeners */

static uint16_t port_next = EU_PORT_BASE;

uint16_t eu_next_port(void)
{
	return port_next++;
}

static void lst_record(struct eu_listener *el, const struct iw_cm_event *ev)
{
	if (el->n_req >= EU_MAX_REQ) {
		el->req_dropped++;
		return;
	}
	copy_ev(&el->req[el->n_req++], ev);
}

static void lst_accept(struct eu_listener *el, struct iw_conn_req *req,
		       const struct iw_cm_event *ev)
{
	struct eu_qp *q;

	if (el->next_target >= el->n_targets) {
		el->accept_rc = iw_reject(req, NULL, 0);
		el->n_accept_fail++;
		return;
	}
	q = el->targets[el->next_target++];
	copy_ev(&q->req, ev);
	q->has_req = true;
	el->accept_rc = iw_accept(req, q->qp, &el->param);
	if (el->accept_rc) {
		el->n_accept_fail++;
		return;
	}
	if (el->after_accept)
		el->after_accept(el, q);
}

static void lst_conn_request(void *arg, struct iw_conn_req *req,
			     const struct iw_cm_event *ev)
{
	struct eu_listener *el = arg;

	lst_record(el, ev);
	switch (el->mode) {
	case EU_L_ACCEPT:
		lst_accept(el, req, ev);
		break;
	case EU_L_REJECT:
		el->accept_rc = iw_reject(req, el->rej_pdata, el->rej_len);
		break;
	case EU_L_IGNORE:
		break;
	}
}

static const struct iw_listener_ops lst_ops = {
	.conn_request = lst_conn_request,
};

static void loopback(struct sockaddr_in *sin, uint16_t port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

int eu_listen(struct eu_listener *el, struct iw_dev *dev, uint16_t port,
	      const struct iw_conn_param *param)
{
	return eu_listen_backlog(el, dev, port, param, 16);
}

int eu_listen_backlog(struct eu_listener *el, struct iw_dev *dev,
		      uint16_t port, const struct iw_conn_param *param,
		      int backlog)
{
	struct sockaddr_in sin;
	int tries, rc = -EADDRINUSE;

	memset(el, 0, sizeof(*el));
	if (param)
		el->param = *param;
	for (tries = 0; tries < 32 && rc == -EADDRINUSE; tries++) {
		el->port = port ? port : eu_next_port();
		loopback(&sin, el->port);
		rc = iw_listen(dev, (struct sockaddr *)&sin, sizeof(sin),
			       backlog, &el->param, &lst_ops, el, &el->l);
		if (port)
			break;
	}
	if (rc)
		el->l = NULL;
	return rc;
}

int eu_listener_close(struct eu_listener *el)
{
	int rc = 0;

	if (el->l)
		rc = iw_listener_close(el->l);
	el->l = NULL;
	return rc;
}

void eu_listener_target(struct eu_listener *el, struct eu_qp *q)
{
	if (el->n_targets < EU_MAX_TARGETS)
		el->targets[el->n_targets++] = q;
}

/* ---- connected pairs */

int eu_pair_init(struct eu_pair *p, struct eu_env *env,
		 const struct eu_pair_cfg *cfg)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&p->dst;
	int rc;

	memset(p, 0, sizeof(*p));
	p->env = env;
	rc = eu_qp_create(&p->a, env->pd, "init", &cfg->init_attr);
	if (rc)
		return rc;
	rc = eu_qp_create(&p->b, env->pd, "resp", &cfg->resp_attr);
	if (rc)
		return rc;
	eu_loop_add_qp(&env->loop, &p->a);
	eu_loop_add_qp(&env->loop, &p->b);
	rc = eu_listen(&p->lst, env->dev, cfg->port, &cfg->resp);
	if (rc)
		return rc;
	eu_loop_add_listener(&env->loop, &p->lst);
	eu_listener_target(&p->lst, &p->b);
	loopback(sin, p->lst.port);
	p->dst_len = sizeof(*sin);
	return 0;
}

int eu_pair_start(struct eu_pair *p, const struct iw_conn_param *init)
{
	p->connect_rc = iw_qp_connect(p->a.qp, (struct sockaddr *)&p->dst,
				      p->dst_len, init);
	return p->connect_rc;
}

static bool done_init_side(void *arg)
{
	struct eu_pair *p = arg;

	return eu_est(&p->a) || eu_qp_failed(&p->a) || eu_qp_failed(&p->b) ||
	       p->lst.n_accept_fail;
}

static bool done_both(void *arg)
{
	struct eu_pair *p = arg;

	if (eu_qp_failed(&p->a) || eu_qp_failed(&p->b))
		return true;
	if (!eu_est(&p->a) || !eu_est(&p->b))
		return false;
	return !p->cs || eu_find_wc(&p->b, EU_HELLO_CTX);
}

/* Client-server: the initiator's first FPDU lets the responder send. */
static int pair_hello(struct eu_pair *p, const struct eu_pair_cfg *cfg)
{
	struct iw_recv_wr rwr = { .ctx = EU_HELLO_CTX };
	struct iw_send_wr swr = { .ctx = EU_HELLO_CTX, .op = IW_WR_SEND };
	int rc;

	if (cfg->resp_attr.srq)
		rc = iw_srq_post_recv(cfg->resp_attr.srq, &rwr);
	else
		rc = iw_qp_post_recv(p->b.qp, &rwr);
	if (rc)
		return rc;
	return iw_qp_post_send(p->a.qp, &swr);
}

int eu_pair_wait(struct eu_pair *p, const struct eu_pair_cfg *cfg)
{
	struct eu_loop *lp = &p->env->loop;
	int tmo = cfg->timeout_ms ? cfg->timeout_ms : 5000;
	const struct eu_ev *e;
	int rc;

	if (!eu_run(lp, done_init_side, p, tmo))
		return -ETIMEDOUT;
	if (p->lst.n_accept_fail)
		return p->lst.accept_rc ? p->lst.accept_rc : -ECONNREFUSED;
	e = eu_est(&p->a);
	if (!e)
		return -ECONNREFUSED;
	p->cs = !e->enhanced || !e->p2p;
	if (p->cs && !cfg->no_hello) {
		rc = pair_hello(p, cfg);
		if (rc)
			return rc;
	} else if (p->cs) {
		p->up = true;
		return 0;
	}
	if (!eu_run(lp, done_both, p, tmo))
		return -ETIMEDOUT;
	if (eu_qp_failed(&p->a) || eu_qp_failed(&p->b))
		return -ECONNREFUSED;
	p->up = true;
	return 0;
}

int eu_pair_connect(struct eu_pair *p, struct eu_env *env,
		    const struct eu_pair_cfg *cfg)
{
	int rc = eu_pair_init(p, env, cfg);

	if (rc)
		return rc;
	rc = eu_pair_start(p, &cfg->init);
	if (rc)
		return rc;
	return eu_pair_wait(p, cfg);
}

void eu_pair_fini(struct eu_pair *p)
{
	struct eu_loop *lp = &p->env->loop;

	eu_loop_del_qp(lp, &p->a);
	eu_loop_del_qp(lp, &p->b);
	eu_loop_del_listener(lp, &p->lst);
	eu_qp_destroy(&p->a);
	eu_qp_destroy(&p->b);
	eu_listener_close(&p->lst);
	eu_qp_release(&p->a);
	eu_qp_release(&p->b);
}

/* ---- buffers */

int eu_buf_alloc(struct eu_buf *b, struct iw_pd *pd, size_t len,
		 unsigned int access, bool va_mode)
{
	int rc;

	memset(b, 0, sizeof(*b));
	b->addr = calloc(1, len ? len : 1);
	if (!b->addr)
		return -ENOMEM;
	b->len = len;
	b->base_to = va_mode ? (uint64_t)(uintptr_t)b->addr : 0;
	if (!access)
		return 0;
	rc = iw_mr_reg(pd, b->addr, len, b->base_to, access, &b->mr);
	if (rc) {
		free(b->addr);
		b->addr = NULL;
		return rc;
	}
	b->stag = iw_mr_stag(b->mr);
	return 0;
}

void eu_buf_free(struct eu_buf *b)
{
	if (b->mr)
		iw_mr_dereg(b->mr);
	free(b->addr);
	memset(b, 0, sizeof(*b));
}
