/* SPDX-License-Identifier: BSD-2-Clause */
/* The harness of test_msg: processes, control channel, fabric helpers. */
#define _GNU_SOURCE	/* pipe2 */
#include "msg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- checks: printed by the parent, sent over the pipe by the child */

#define REC_TEXT 252

struct rec {
	char kind;		/* 'y' ok, 'n' not ok, 'd' diagnostic */
	char pad[3];
	char text[REC_TEXT];
};

static void (*report_fn)(bool ok, const char *text);
static void (*diag_fn)(const char *text);
static int res_fd = -1;		/* child: write end of the result pipe */
static bool in_child;

void msg_set_reporter(void (*report)(bool ok, const char *text),
		      void (*dg)(const char *text))
{
	report_fn = report;
	diag_fn = dg;
}

static void emit(char kind, const char *fmt, va_list ap)
{
	struct rec r = { .kind = kind };
	int n;

	n = snprintf(r.text, sizeof(r.text), "%s: ",
		     in_child ? "server" : "client");
	vsnprintf(r.text + n, sizeof(r.text) - (size_t)n, fmt, ap);
	if (!in_child) {
		if (kind == 'd')
			diag_fn(r.text);
		else
			report_fn(kind == 'y', r.text);
		return;
	}
	/* sizeof(r) < PIPE_BUF: each record is written atomically */
	if (write(res_fd, &r, sizeof(r)) != sizeof(r))
		_exit(3);
}

bool check(bool cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(cond ? 'y' : 'n', fmt, ap);
	va_end(ap);
	return cond;
}

void diag(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit('d', fmt, ap);
	va_end(ap);
}

/* Parent only: a check or note of the harness, without a side. */
static void harness(char kind, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void harness(char kind, const char *fmt, ...)
{
	char text[REC_TEXT];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (kind == 'd')
		diag_fn(text);
	else
		report_fn(kind == 'y', text);
}

/* ---- time and randomness */

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

void rnd_seed(uint64_t seed)
{
	rnd_state = seed ? seed : 1;
}

uint64_t rnd(void)
{
	rnd_state = pat_mix(rnd_state);
	return rnd_state;
}

size_t rnd_below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}


/* ---- layouts */

void layout_make(struct layout *l, size_t buflen, size_t total, int niov,
		 size_t extra)
{
	size_t need, base, i;

	memset(l, 0, sizeof(*l));
	l->n = niov < 1 ? 1 : niov > 3 ? 3 : niov;
	l->total = total;
	if (l->n == 3) {
		l->len[0] = total / 2;
		l->len[1] = total / 7;
		l->len[2] = total - l->len[0] - l->len[1];
	} else {
		l->len[0] = total;
	}
	l->len[l->n - 1] += extra;
	need = total + extra + (size_t)(l->n + 1) * LAYOUT_GAP;
	base = LAYOUT_GAP + rnd_below(buflen - need);
	l->lo = base - LAYOUT_GAP;
	for (i = 0; i < (size_t)l->n; i++) {
		l->off[i] = base;
		base += l->len[i] + LAYOUT_GAP;
	}
	l->hi = base;
}

void layout_iov(const struct layout *l, char *buf, struct iovec *iov)
{
	int i;

	for (i = 0; i < l->n; i++) {
		iov[i].iov_base = buf + l->off[i];
		iov[i].iov_len = l->len[i];
	}
}

void layout_guard(const struct layout *l, char *buf, uint64_t gseed)
{
	pat_fill(buf + l->lo, l->hi - l->lo, gseed, l->lo);
}

void layout_fill(const struct layout *l, char *buf, uint64_t seed,
		 uint64_t gseed)
{
	size_t pos = 0, take;
	int i;

	layout_guard(l, buf, gseed);
	for (i = 0; i < l->n; i++) {
		take = l->len[i] < l->total - pos ? l->len[i] : l->total - pos;
		pat_fill(buf + l->off[i], take, seed, pos);
		pos += take;
	}
}

static char verify_msg[160];

/* Checks [from, to) of buf for the guard. */
static bool guard_ok(const char *buf, size_t from, size_t to, uint64_t gseed)
{
	size_t d;

	if (to <= from)
		return true;
	d = pat_diff(buf + from, to - from, gseed, from);
	if (d == SIZE_MAX)
		return true;
	snprintf(verify_msg, sizeof(verify_msg),
		 "guard octet at buffer offset %zu overwritten", from + d);
	return false;
}

const char *layout_verify(const struct layout *l, const char *buf,
			  size_t got, uint64_t seed, uint64_t gseed)
{
	size_t pos = 0, take, d, end = l->lo;
	int i;

	if (got != l->total) {
		snprintf(verify_msg, sizeof(verify_msg),
			 "length %zu, expected %zu", got, l->total);
		return verify_msg;
	}
	for (i = 0; i < l->n; i++) {
		if (!guard_ok(buf, end, l->off[i], gseed))
			return verify_msg;
		take = l->len[i] < l->total - pos ? l->len[i] : l->total - pos;
		d = pat_diff(buf + l->off[i], take, seed, pos);
		if (d != SIZE_MAX) {
			snprintf(verify_msg, sizeof(verify_msg),
				 "octet %zu of the message differs (piece %d)",
				 pos + d, i);
			return verify_msg;
		}
		pos += take;
		end = l->off[i] + take;
	}
	return guard_ok(buf, end, l->hi, gseed) ? "" : verify_msg;
}

/* ---- control channel */

bool ctl_send(struct proc *p, uint32_t op, uint64_t a, uint64_t b,
	      uint64_t c, uint64_t d, uint64_t e)
{
	struct ctl m = { .op = op, .v = { a, b, c, d, e } };

	if (p->broken)
		return false;
	if (send(p->ctl, &m, sizeof(m), MSG_NOSIGNAL) != sizeof(m)) {
		p->broken = true;
		return false;
	}
	return true;
}

bool ctl_pending(struct proc *p)
{
	struct pollfd pfd = { .fd = p->ctl, .events = POLLIN };

	return !p->broken && poll(&pfd, 1, 0) == 1;
}

bool ctl_recv(struct proc *p, struct ctl *m, int timeout_ms)
{
	struct pollfd pfd = { .fd = p->ctl, .events = POLLIN };
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	int left, r;

	if (p->broken)
		return false;
	for (;;) {
		left = (int)(end > now_ms() ? end - now_ms() : 0);
		r = poll(&pfd, 1, left);
		if (r == 1)
			break;
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0 && timeout_ms == 0)
			return false;	/* a peek: nothing is broken */
		p->broken = true;
		return false;
	}
	if (recv(p->ctl, m, sizeof(*m), 0) != sizeof(*m)) {
		p->broken = true;
		return false;
	}
	return true;
}

bool ctl_expect(struct proc *p, uint32_t op, struct ctl *m, int timeout_ms)
{
	struct ctl tmp;

	if (!m)
		m = &tmp;
	if (!ctl_recv(p, m, timeout_ms)) {
		diag("no control message %u from the peer", op);
		return false;
	}
	if (m->op != op) {
		diag("control message %u, expected %u", m->op, op);
		p->broken = true;
		return false;
	}
	return true;
}

/* ---- the process harness */

struct collected {
	struct rec *r;
	size_t n, cap;
	size_t partial;		/* octets of r[n] already read */
};

/* Reads what the child reported so far; false at EOF. */
static bool collect(int fd, struct collected *c)
{
	ssize_t got;

	for (;;) {
		if (c->n == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 64;
			struct rec *r = realloc(c->r, cap * sizeof(*r));

			if (!r)
				return false;
			c->r = r;
			c->cap = cap;
		}
		got = read(fd, (char *)&c->r[c->n] + c->partial,
			   sizeof(struct rec) - c->partial);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 && errno == EAGAIN;
		c->partial += (size_t)got;
		if (c->partial == sizeof(struct rec)) {
			c->partial = 0;
			c->n++;
		}
	}
}

/* Waits for the child within the deadline, collecting its reports. */
static int reap(pid_t pid, int fd, struct collected *c, uint64_t end,
		bool *timed_out)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	bool open = true;
	int status = 0;

	*timed_out = false;
	for (;;) {
		if (open)
			open = collect(fd, c);
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (now_ms() >= end) {
			*timed_out = true;
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		if (open)
			poll(&pfd, 1, 20);
		else
			sleep_ms(20);
	}
	while (open && collect(fd, c))
		;
	return status;
}

static void child_main(const struct msg_case *c, struct proc *p, int res)
{
	in_child = true;
	res_fd = res;
	p->server = true;
	rnd_seed(p->seed ^ 0x5e7e5e7eULL ^ (uint64_t)p->port);
	c->server(p);
	close(p->ctl);
	close(res);
	_exit(0);
}

static void report_child(const struct msg_case *c, struct collected *col,
			 int status, bool timed_out)
{
	size_t i;

	for (i = 0; i < col->n; i++) {
		col->r[i].text[REC_TEXT - 1] = '\0';
		if (col->r[i].kind == 'd')
			diag_fn(col->r[i].text);
		else
			report_fn(col->r[i].kind == 'y', col->r[i].text);
	}
	if (c->server_killed) {
		harness(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ?
			'y' : 'n', "%s: the server died of our SIGKILL "
			"(status %#x)", c->name, status);
		return;
	}
	harness(timed_out ? 'n' : 'y', "%s: the server finished within %d s",
		c->name, c->timeout_s);
	harness(WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 'y' : 'n',
		"%s: the server exited normally (status %#x)", c->name,
		status);
}

/* The last resort against a call that never returns: end the run. */
static volatile pid_t watched;

static void watchdog(int sig)
{
	static const char msg[] = "Bail out! a case hung (watchdog)\n";

	if (watched > 0)
		kill(watched, SIGKILL);
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(2);
}

void msg_run(const struct msg_case *c, int port, uint64_t seed)
{
	struct proc p = { .port = port, .seed = seed,
			  .offset_mode = c->offset_mode };
	struct collected col = { 0 };
	int sv[2], res[2], status;
	bool timed_out;
	uint64_t start = now_ms();
	pid_t pid;

	harness('d', "---- %s (port %d)", c->name, port);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) ||
	    pipe2(res, O_CLOEXEC | O_NONBLOCK)) {
		harness('n', "%s: control channel: %s", c->name,
			strerror(errno));
		return;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		close(res[0]);
		p.ctl = sv[1];
		/* blocking writes in the child */
		fcntl(res[1], F_SETFL, 0);
		child_main(c, &p, res[1]);
	}
	close(sv[1]);
	close(res[1]);
	if (pid < 0) {
		harness('n', "%s: fork: %s", c->name, strerror(errno));
		close(sv[0]);
		close(res[0]);
		return;
	}
	p.ctl = sv[0];
	p.peer = pid;
	watched = pid;
	signal(SIGALRM, watchdog);
	alarm((unsigned int)c->timeout_s + 30);
	rnd_seed(seed ^ (uint64_t)port);
	c->client(&p);
	close(p.ctl);	/* a server still waiting sees EOF */
	status = reap(pid, res[0], &col, start + (uint64_t)c->timeout_s * 1000,
		      &timed_out);
	alarm(0);
	watched = 0;
	close(res[0]);
	report_child(c, &col, status, timed_out);
	free(col.r);
	harness('d', "%s took %llu ms", c->name,
		(unsigned long long)(now_ms() - start));
}

/* ---- fabric: opening and closing a side */

struct fi_info *msg_hints(const struct proc *p)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->fabric_attr->prov_name = strdup("iwarp");
	h->ep_attr->type = FI_EP_MSG;
	h->caps = p->no_rma ? FI_MSG : FI_MSG | FI_RMA;
	h->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (!p->offset_mode)
		h->domain_attr->mr_mode |= FI_MR_VIRT_ADDR;
	/* the server checks RMA Writes after a later Send arrived */
	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_SAW;
	h->rx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_SAW;
	h->mode |= p->mode;
	h->caps |= p->caps;
	h->domain_attr->cq_data_size = p->cq_data;
	return h;
}

static void key_set(uint8_t **key, size_t *size, const char *v)
{
	free(*key);
	*key = v ? (uint8_t *)strdup(v) : NULL;
	*size = *key ? strlen(v) : 0;
}

void info_keys(struct fi_info *info, const char *dom_key, const char *ep_key)
{
	key_set(&info->domain_attr->auth_key, &info->domain_attr->auth_key_size,
		dom_key);
	key_set(&info->ep_attr->auth_key, &info->ep_attr->auth_key_size,
		ep_key);
}

static int node_fail(const char *what, int ret)
{
	diag("%s: %d (%s)", what, ret, fi_strerror(ret < 0 ? -ret : ret));
	return ret < 0 ? ret : -FI_EOTHER;
}

static int node_listen(struct node *n)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	int ret;

	ret = fi_eq_open(n->fabric, &eqa, &n->eq, NULL);
	if (ret)
		return node_fail("fi_eq_open", ret);
	ret = fi_passive_ep(n->fabric, n->info, &n->pep, NULL);
	if (ret)
		return node_fail("fi_passive_ep", ret);
	ret = fi_pep_bind(n->pep, &n->eq->fid, 0);
	if (ret)
		return node_fail("fi_pep_bind", ret);
	ret = fi_listen(n->pep);
	return ret ? node_fail("fi_listen", ret) : 0;
}

int node_open(struct node *n, struct proc *p, const struct fi_cq_attr *cqa)
{
	struct fi_cq_attr attr = {
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_UNSPEC,
	};
	struct fi_info *hints = msg_hints(p);
	char port[16];
	int ret;

	memset(n, 0, sizeof(*n));
	n->p = p;
	n->cq_fd = -1;
	if (!hints)
		return -FI_ENOMEM;
	if (cqa)
		attr = *cqa;
	n->fmt_data = p->mode || p->cq_data || p->caps;
	n->fmt_tagged = p->caps & FI_TAGGED;
	if (n->fmt_data)
		attr.format = n->fmt_tagged ? FI_CQ_FORMAT_TAGGED :
					      FI_CQ_FORMAT_DATA;
	snprintf(port, sizeof(port), "%d", p->port);
	ret = fi_getinfo(MSG_API, "127.0.0.1", port,
			 p->server ? FI_SOURCE : 0, hints, &n->info);
	fi_freeinfo(hints);
	if (ret)
		return node_fail("fi_getinfo", ret);
	if (p->dom_key || p->ep_key)
		info_keys(n->info, p->dom_key, p->ep_key);
	ret = fi_fabric(n->info->fabric_attr, &n->fabric, NULL);
	if (ret)
		return node_fail("fi_fabric", ret);
	ret = fi_domain(n->fabric, n->info, &n->domain, NULL);
	if (ret)
		return node_fail("fi_domain", ret);
	ret = fi_cq_open(n->domain, &attr, &n->cq, NULL);
	if (ret)
		return node_fail("fi_cq_open", ret);
	if (attr.wait_obj != FI_WAIT_NONE &&
	    fi_control(&n->cq->fid, FI_GETWAIT, &n->cq_fd))
		n->cq_fd = -1;
	return p->server ? node_listen(n) : 0;
}

static void close_fid(struct fid *f, const char *what)
{
	int ret;

	if (!f)
		return;
	ret = fi_close(f);
	if (ret)
		diag("fi_close(%s): %d", what, ret);
}

int node_close_ep(struct node *n)
{
	int ret = 0;

	if (n->ep)
		ret = fi_close(&n->ep->fid);
	n->ep = NULL;
	close_fid(n->ep_eq ? &n->ep_eq->fid : NULL, "ep EQ");
	n->ep_eq = NULL;
	return ret;
}

void node_close(struct node *n)
{
	node_close_ep(n);
	close_fid(n->pep ? &n->pep->fid : NULL, "pep");
	close_fid(n->eq ? &n->eq->fid : NULL, "EQ");
	close_fid(n->cq ? &n->cq->fid : NULL, "CQ");
	close_fid(n->domain ? &n->domain->fid : NULL, "domain");
	close_fid(n->fabric ? &n->fabric->fid : NULL, "fabric");
	fi_freeinfo(n->info);
	free(n->comps);
	memset(n, 0, sizeof(*n));
	n->cq_fd = -1;
}

uint64_t rma_addr(const struct node *n, uint64_t base, size_t off)
{
	if (n->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
		return base + off;
	return off;
}

struct fid_mr *mr_reg(struct node *n, void *buf, size_t len,
		      uint64_t access)
{
	struct fid_mr *mr = NULL;
	int ret;

	ret = fi_mr_reg(n->domain, buf, len, access, 0, 0, 0, &mr, NULL);
	if (ret) {
		node_fail("fi_mr_reg", ret);
		return NULL;
	}
	return mr;
}

/* ---- EQ events */

static const char *event_name(uint32_t ev)
{
	switch (ev) {
	case FI_CONNREQ:
		return "FI_CONNREQ";
	case FI_CONNECTED:
		return "FI_CONNECTED";
	case FI_SHUTDOWN:
		return "FI_SHUTDOWN";
	default:
		return "other";
	}
}

const char *eq_ev_str(const struct eq_ev *e)
{
	static char buf[160];

	if (e->ret == -FI_EAVAIL)
		snprintf(buf, sizeof(buf), "error entry err %d (%s) prov %d",
			 e->err.err, fi_strerror(e->err.err),
			 e->err.prov_errno);
	else if (e->ret > 0)
		snprintf(buf, sizeof(buf), "%s (%zd octets)",
			 event_name(e->event), e->ret);
	else
		snprintf(buf, sizeof(buf), "%zd (%s)", e->ret,
			 fi_strerror((int)-e->ret));
	return buf;
}

ssize_t eq_wait(struct fid_eq *eq, struct eq_ev *e, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	int left;

	memset(e, 0, sizeof(*e));
	do {
		left = (int)(end > now_ms() ? end - now_ms() : 0);
		/* slices: the wait stays bounded even if sread's is not */
		e->ret = fi_eq_sread(eq, &e->event, &e->u, sizeof(e->u),
				     left < 100 ? left : 100, 0);
	} while ((e->ret == -FI_EAGAIN || e->ret == -FI_EINTR) &&
		 now_ms() < end);
	if (e->ret == -FI_EINTR)
		e->ret = -FI_EAGAIN;
	if (e->ret == -FI_EAVAIL) {
		e->err.err_data = e->err_data;
		e->err.err_data_size = sizeof(e->err_data);
		if (fi_eq_readerr(eq, &e->err, 0) < 0)
			e->ret = -FI_EOTHER;
	}
	if (e->ret >= (ssize_t)sizeof(struct fi_eq_cm_entry))
		e->data_len = (size_t)e->ret - sizeof(struct fi_eq_cm_entry);
	return e->ret;
}

/* ---- connecting */

static int ep_prepare(struct node *n, struct fi_info *info)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	int ret;

	ret = fi_eq_open(n->fabric, &eqa, &n->ep_eq, NULL);
	if (ret)
		return node_fail("fi_eq_open (endpoint)", ret);
	ret = fi_endpoint(n->domain, info, &n->ep, NULL);
	if (ret)
		return node_fail("fi_endpoint", ret);
	ret = fi_ep_bind(n->ep, &n->ep_eq->fid, 0);
	if (ret)
		return node_fail("fi_ep_bind(EQ)", ret);
	ret = fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | n->p->bind_tx);
	if (ret)
		return node_fail("fi_ep_bind(CQ, FI_TRANSMIT)", ret);
	ret = fi_ep_bind(n->ep, &n->cq->fid, FI_RECV);
	if (ret)
		return node_fail("fi_ep_bind(CQ, FI_RECV)", ret);
	ret = fi_enable(n->ep);
	return ret ? node_fail("fi_enable", ret) : 0;
}

/* Waits for FI_CONNECTED of the current endpoint on its EQ. */
static int wait_connected(struct node *n, struct eq_ev *e)
{
	eq_wait(n->ep_eq, e, WAIT_MS);
	if (e->ret <= 0 || e->event != FI_CONNECTED) {
		diag("waiting for FI_CONNECTED: %s", eq_ev_str(e));
		return -FI_ECONNREFUSED;
	}
	if (e->u.cm.fid != &n->ep->fid) {
		diag("FI_CONNECTED fid %p, the endpoint is %p",
		     (void *)e->u.cm.fid, (void *)&n->ep->fid);
		return -FI_EOTHER;
	}
	return 0;
}

int cli_endpoint(struct node *n)
{
	return ep_prepare(n, n->info);
}

int cli_connect(struct node *n, const void *data, size_t len,
		struct eq_ev *acc)
{
	struct eq_ev tmp;
	int ret;

	ret = n->ep ? 0 : cli_endpoint(n);
	if (ret)
		return ret;
	ret = fi_connect(n->ep, n->info->dest_addr, data, len);
	if (ret)
		return node_fail("fi_connect", ret);
	return wait_connected(n, acc ? acc : &tmp);
}

int srv_connreq(struct node *n, struct eq_ev *req, int ms)
{
	eq_wait(n->eq, req, ms);
	if (req->ret <= 0 || req->event != FI_CONNREQ) {
		diag("waiting for FI_CONNREQ: %s", eq_ev_str(req));
		if (req->ret > 0 && req->event == FI_CONNREQ)
			fi_freeinfo(req->u.cm.info);
		return -FI_ENODATA;
	}
	return 0;
}

int srv_endpoint(struct node *n, struct eq_ev *req)
{
	int ret = ep_prepare(n, req->u.cm.info);

	fi_freeinfo(req->u.cm.info);
	req->u.cm.info = NULL;
	return ret;
}

int srv_accept(struct node *n, const void *data, size_t len)
{
	struct eq_ev e;
	int ret;

	ret = fi_accept(n->ep, data, len);
	if (ret)
		return node_fail("fi_accept", ret);
	return wait_connected(n, &e);
}

bool cli_setup(struct node *n, struct proc *p, const struct fi_cq_attr *cqa)
{
	int ret = node_open(n, p, cqa);

	if (!ret && !ctl_expect(p, CTL_READY, NULL, 10000))
		ret = -FI_ETIMEDOUT;
	if (!ret)
		ret = cli_connect(n, NULL, 0, NULL);
	return check(!ret, "connected (FI_CONNECTED carries the endpoint's "
		     "fid) (%d)", ret);
}

bool srv_setup(struct node *n, struct proc *p, const struct fi_cq_attr *cqa)
{
	struct eq_ev req;
	int ret = node_open(n, p, cqa);

	if (!ret && !ctl_send(p, CTL_READY, 0, 0, 0, 0, 0))
		ret = -FI_EIO;
	if (!ret)
		ret = srv_connreq(n, &req, 10000);
	if (!ret)
		ret = srv_endpoint(n, &req);
	if (!ret)
		ret = srv_accept(n, NULL, 0);
	return check(!ret, "accepted (FI_CONNECTED carries the endpoint's "
		     "fid) (%d)", ret);
}

/* ---- completions */

static void comp_push(struct node *n, const struct comp *c)
{
	if (n->ncomps == n->capcomps) {
		size_t cap = n->capcomps ? n->capcomps * 2 : 256;
		struct comp *nc = realloc(n->comps, cap * sizeof(*nc));

		if (!nc) {
			diag("out of memory: completion dropped");
			return;
		}
		n->comps = nc;
		n->capcomps = cap;
	}
	n->comps[n->ncomps++] = *c;
}

static void cq_read_err(struct node *n)
{
	struct fi_cq_err_entry e;
	struct comp c = { 0 };

	memset(&e, 0, sizeof(e));
	if (fi_cq_readerr(n->cq, &e, 0) != 1) {
		diag("fi_cq_read said -FI_EAVAIL but fi_cq_readerr has none");
		return;
	}
	c.ctx = e.op_context;
	c.flags = e.flags;
	c.len = e.len;
	c.err = e.err ? e.err : FI_EOTHER;
	c.prov_errno = e.prov_errno;
	c.tag = e.tag;
	c.olen = e.olen;
	fi_cq_strerror(n->cq, e.prov_errno, e.err_data, c.text,
		       sizeof(c.text));
	c.text[sizeof(c.text) - 1] = '\0';
	comp_push(n, &c);
}

/* One entry of the CQ's format into c. */
static void comp_of(const struct node *n, const void *ents, ssize_t i,
		    struct comp *c)
{
	const struct fi_cq_tagged_entry *t = ents;
	const struct fi_cq_data_entry *d = ents;
	const struct fi_cq_msg_entry *m = ents;

	if (n->fmt_tagged) {
		c->ctx = t[i].op_context;
		c->flags = t[i].flags;
		c->len = t[i].len;
		c->data = t[i].data;
		c->buf = t[i].buf;
		c->tag = t[i].tag;
		return;
	}
	if (n->fmt_data) {
		c->ctx = d[i].op_context;
		c->flags = d[i].flags;
		c->len = d[i].len;
		c->data = d[i].data;
		c->buf = d[i].buf;
		return;
	}
	c->ctx = m[i].op_context;
	c->flags = m[i].flags;
	c->len = m[i].len;
}

void cq_drain(struct node *n)
{
	struct fi_cq_tagged_entry ent[16];	/* the largest format */
	struct comp c = { 0 };
	ssize_t r, i;

	for (;;) {
		r = fi_cq_read(n->cq, ent, ARRAY_SIZE(ent));
		if (r == -FI_EAVAIL) {
			cq_read_err(n);
			continue;
		}
		if (r <= 0) {
			if (r != -FI_EAGAIN)
				diag("fi_cq_read: %zd", r);
			return;
		}
		for (i = 0; i < r; i++) {
			comp_of(n, ent, i, &c);
			comp_push(n, &c);
		}
	}
}

void node_wait(struct node *n, int ms, bool watch_ctl)
{
	struct pollfd pfd[2];
	int k = 0;

	if (watch_ctl && !n->p->broken)
		pfd[k++] = (struct pollfd){ .fd = n->p->ctl, .events = POLLIN };
	if (n->cq_fd >= 0) {
		struct fid *f = &n->cq->fid;

		if (fi_trywait(n->fabric, &f, 1))
			return;		/* something to read already */
		pfd[k++] = (struct pollfd){ .fd = n->cq_fd, .events = POLLIN };
	}
	/* short slices: a wait fd that fails to wake us only costs time */
	poll(pfd, (nfds_t)k, ms < 2 ? ms : 2);
}

static bool comp_pop(struct node *n, size_t i, struct comp *out)
{
	if (out)
		*out = n->comps[i];
	memmove(&n->comps[i], &n->comps[i + 1],
		(n->ncomps - i - 1) * sizeof(*n->comps));
	n->ncomps--;
	return true;
}

bool cq_take(struct node *n, void *ctx, struct comp *out, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	size_t i;

	for (;;) {
		cq_drain(n);
		for (i = 0; i < n->ncomps; i++)
			if (n->comps[i].ctx == ctx)
				return comp_pop(n, i, out);
		if (now_ms() >= end)
			return false;
		node_wait(n, 2, false);
	}
}

bool cq_take_any(struct node *n, struct comp *out, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	for (;;) {
		cq_drain(n);
		if (n->ncomps)
			return comp_pop(n, 0, out);
		if (now_ms() >= end)
			return false;
		node_wait(n, 2, false);
	}
}

bool ctl_wait_serving(struct node *n, struct ctl *m, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;

	while (!n->p->broken) {
		if (n->cq)
			cq_drain(n);
		if (ctl_pending(n->p))
			return ctl_recv(n->p, m, 1000);
		if (now_ms() >= end)
			break;
		if (n->cq)
			node_wait(n, 2, true);
		else
			sleep_ms(1);
	}
	n->p->broken = true;
	return false;
}
