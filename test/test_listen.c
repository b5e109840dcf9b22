/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Listener hygiene over real loopback TCP: a listener holds at most
 * max_pending undecided connections, closes one that has not sent its
 * whole MPA Request within mpa_timeout_ms, and garbage at once. Under a
 * flood of idle, half-sent and garbage connections a real peer still
 * connects, established connections keep carrying verified data, and
 * the process's descriptors come back to where they were.
 *
 * The flood comes from this process, as an attacker on the same host
 * would, under a soft descriptor limit of 1024 (the usual default).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine_util.h"
#include "tap.h"

#define CAP 64			/* the listener's max_pending */
#define MPA_MS 300		/* its mpa_timeout_ms */
#define PHASE_MS 1000		/* its timeout_ms, also the RTR wait */
#define SLACK_MS 400		/* late, but still "at the deadline" */
#define AT_ONCE_MS 150		/* garbage is closed within this */
#define FLOOD 2000		/* connections of the flood */
#define RING 600		/* of which the flood keeps this many open */
#define BATCH 50		/* connects between two looks at the loop */
#define HOLD 900		/* connections held while data flows */
#define HOLD_MS 1500
#define REOPEN_MS 100		/* a held one comes back this long after */
#define BIG (1u << 20)		/* octets sent over the mid-flood connection */
#define RT_LEN 4096		/* octets of each round trip, each way */

static struct eu_env env;
#define LP (&env.loop)
static struct eu_listener lst;

/* ---- reporting */

static char why[1024];

static bool bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return false;
}

static void report(bool ok, const char *name)
{
	tap_ok(ok, "%s", name);
	if (!ok)
		tap_diag("  %s", why[0] ? why : "(no detail)");
	why[0] = 0;
}

/* ---- the engine's warn lines about overflow, kept for the burst check */

#define MAX_WARN 16
static char warn[MAX_WARN][512];
static int n_warn, n_warn_other;

static void log_hook(void *arg, int level, const char *msg)
{
	(void)arg;
	if ((level & IW_LOG_LEVEL_MASK) != IW_LOG_WARN)
		return;
	if (!strstr(msg, "(the cap)") && !strstr(msg, "over its cap")) {
		if (n_warn_other++ < 8)
			fprintf(stderr, "# engine warn: %s\n", msg);
		return;
	}
	fprintf(stderr, "# engine warn: %s\n", msg);
	if (n_warn < MAX_WARN)
		snprintf(warn[n_warn++], sizeof(warn[0]), "%s", msg);
}

/* ---- descriptors */

static void fd_limit_1024(void)
{
	struct rlimit r;

	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur > 1024) {
		r.rlim_cur = 1024;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

/* ---- hostile clients: raw sockets that send a script, or not */

enum kind {
	K_IDLE,		/* connects, sends nothing */
	K_HALF_KEY,	/* 10 octets of the key */
	K_HALF_PD,	/* the header, then 40 of its 100 octets of pdata */
	K_BAD_KEY,	/* an HTTP request */
	K_BAD_PDLEN,	/* a header announcing 65535 octets of pdata */
	K_FULL,		/* a whole Request, then nothing (no RTR) */
	N_KIND
};

static const char *const kind_name[N_KIND] = {
	"idle", "half-sent key", "half-sent private data", "wrong key",
	"private data length 65535", "full Request, no RTR",
};

struct cli {
	int fd;
	enum kind kind;
	size_t sent;
	uint64_t t0;		/* connected, ms */
	uint64_t t_end;		/* EOF or reset seen, 0: open */
	size_t got;
	uint8_t rx[32];		/* first octets received */
};

static size_t script(enum kind k, uint8_t *buf, size_t cap)
{
	static const char http[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	uint8_t pd[96] = { 0 };
	struct mpa_frame f = {
		.kind = MPA_REQUEST, .rev = 2, .enhanced = true, .p2p = true,
		.rtr = MPA_RTR_WRITE, .ird = 1, .ord = 1,
	};
	ssize_t n;

	switch (k) {
	case K_HALF_KEY:
		memcpy(buf, MPA_KEY_REQ, 10);
		return 10;
	case K_HALF_PD:
		n = mpa_frame_build(buf, cap, &f, pd, sizeof(pd));
		return n < 0 ? 0 : MPA_HDR_LEN + 40;
	case K_BAD_KEY:
		memcpy(buf, http, sizeof(http) - 1);
		return sizeof(http) - 1;
	case K_BAD_PDLEN:
		memcpy(buf, MPA_KEY_REQ, MPA_KEY_LEN);
		memcpy(buf + MPA_KEY_LEN, "\x00\x02\xff\xff", 4);
		return MPA_HDR_LEN;
	case K_FULL:
		n = mpa_frame_build(buf, cap, &f, NULL, 0);
		return n < 0 ? 0 : (size_t)n;
	default:
		return 0;
	}
}

static int cli_open(struct cli *c, enum kind k)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(lst.port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};

	memset(c, 0, sizeof(*c));
	c->kind = k;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	if (connect(c->fd, (struct sockaddr *)&sin, sizeof(sin)) &&
	    errno != EINPROGRESS) {
		close(c->fd);
		c->fd = -1;
		return -errno;
	}
	c->t0 = iw_now_ms();
	return 0;
}

static void cli_close(struct cli *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* Sends what is left of the script, notes what came back and the end. */
static void cli_pump(struct cli *c)
{
	uint8_t buf[MPA_HDR_LEN + MPA_MAX_PD], in[256];
	size_t len = script(c->kind, buf, sizeof(buf));
	ssize_t n;

	if (c->fd < 0 || c->t_end)
		return;
	if (c->sent < len) {
		n = send(c->fd, buf + c->sent, len - c->sent,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n > 0)
			c->sent += (size_t)n;
	}
	while ((n = recv(c->fd, in, sizeof(in), MSG_DONTWAIT)) > 0) {
		if (c->got < sizeof(c->rx))
			memcpy(c->rx + c->got, in,
			       (size_t)n < sizeof(c->rx) - c->got ?
			       (size_t)n : sizeof(c->rx) - c->got);
		c->got += (size_t)n;
	}
	if (n == 0 || (errno != EAGAIN && errno != ENOTCONN))
		c->t_end = iw_now_ms();
}

/* ---- real connections through the listener */

struct conn {
	struct eu_qp a, b;	/* initiator, responder */
	bool started;
};

static int conn_start(struct conn *c)
{
	struct iw_qp_attr attr = { 0 };
	struct iw_conn_param init = { 0 };
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_port = htons(lst.port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int rc;

	memset(c, 0, sizeof(*c));
	rc = eu_qp_create(&c->a, env.pd, "init", &attr);
	if (!rc)
		rc = eu_qp_create(&c->b, env.pd, "resp", &attr);
	if (rc)
		return rc;
	eu_loop_add_qp(LP, &c->a);
	eu_loop_add_qp(LP, &c->b);
	eu_listener_target(&lst, &c->b);
	c->started = true;
	return iw_qp_connect(c->a.qp, (struct sockaddr *)&sin, sizeof(sin),
			     &init);
}

static bool conn_settled(void *arg)
{
	struct conn *c = arg;

	return (eu_est(&c->a) && eu_est(&c->b)) || eu_qp_failed(&c->a) ||
	       eu_qp_failed(&c->b);
}

static bool conn_wait(struct conn *c, int ms)
{
	eu_run(LP, conn_settled, c, ms);
	if (eu_est(&c->a) && eu_est(&c->b) && !eu_qp_failed(&c->a) &&
	    !eu_qp_failed(&c->b))
		return true;
	return bad("connection not established (init: %s, resp: %s)",
		   eu_qp_failed(&c->a) ? eu_ev_str(eu_fail_ev(&c->a)->type) :
		   eu_est(&c->a) ? "established" : "pending",
		   eu_qp_failed(&c->b) ? eu_ev_str(eu_fail_ev(&c->b)->type) :
		   eu_est(&c->b) ? "established" : "pending");
}

static void conn_end(struct conn *c)
{
	if (!c->started)
		return;
	eu_loop_del_qp(LP, &c->a);
	eu_loop_del_qp(LP, &c->b);
	eu_qp_destroy(&c->a);
	eu_qp_destroy(&c->b);
	eu_qp_release(&c->a);
	eu_qp_release(&c->b);
	c->started = false;
}

/* One Send of len octets from src to dst's posted buffer, verified. */
static bool xfer(struct eu_qp *src, struct eu_qp *dst, size_t len,
		 uint64_t seed)
{
	uint8_t *out = malloc(len), *in = calloc(1, len);
	struct iw_sge so = { out, (uint32_t)len }, si = { in, (uint32_t)len };
	struct iw_recv_wr r = { .ctx = EU_CTX(seed & 0xffff), .sgl = &si,
				.num_sge = 1 };
	struct iw_send_wr s = { .op = IW_WR_SEND, .sgl = &so, .num_sge = 1 };
	const struct iw_wc *wc;
	bool ok = false;

	if (!out || !in)
		goto out;
	eu_fill(out, len, seed);
	if (iw_qp_post_recv(dst->qp, &r) || eu_post_send(LP, src, &s, 2000)) {
		bad("posting %zu octets failed", len);
		goto out;
	}
	if (!eu_wait_ctx(LP, dst, r.ctx, 5000)) {
		bad("%zu octets did not arrive within 5 s", len);
		goto out;
	}
	wc = eu_find_wc(dst, r.ctx);
	ok = (wc->status == IW_WC_SUCCESS && wc->byte_len == len &&
	      !memcmp(in, out, len)) ||
	     bad("%zu octets arrived changed (status %s, %u octets)", len,
		 eu_status_str(wc->status), wc->byte_len);
	eu_qp_clear_wc(dst);
out:
	free(out);
	free(in);
	return ok;
}

/* There and back: both directions verified. */
static bool round_trip(struct conn *c, uint64_t seed)
{
	return xfer(&c->a, &c->b, RT_LEN, seed) &&
	       xfer(&c->b, &c->a, RT_LEN, seed + 1);
}

/* ---- the listener's bounds */

static bool stats_of(const struct iw_conn_param *p,
		     struct iw_listener_stats *st)
{
	struct eu_listener el;
	int rc = eu_listen(&el, env.dev, 0, p);

	if (rc)
		return bad("eu_listen: %d", rc);
	iw_listener_stats(el.l, st);
	eu_listener_close(&el);
	return true;
}

static void test_defaults(void)
{
	struct iw_conn_param p = { 0 };
	struct iw_listener_stats a, b, c;
	bool ok;

	ok = stats_of(&p, &a);
	iw_listen_set_defaults(100, 2000);
	ok = ok && stats_of(&p, &b);
	p.timeout_ms = 700;
	ok = ok && stats_of(&p, &c);
	iw_listen_set_defaults(0, 0);
	ok = ok && ((a.max_pending == 256 && a.mpa_timeout_ms == 5000) ||
		    bad("built in: cap %u, MPA %u ms", a.max_pending,
			a.mpa_timeout_ms));
	ok = ok && ((b.max_pending == 100 && b.mpa_timeout_ms == 2000) ||
		    bad("process-wide 100/2000: cap %u, MPA %u ms",
			b.max_pending, b.mpa_timeout_ms));
	ok = ok && (c.mpa_timeout_ms == 700 ||
		    bad("timeout_ms 700: MPA %u ms", c.mpa_timeout_ms));
	report(ok, "listener bounds: 256 pending and 5000 ms by default, "
	       "process-wide defaults, the MPA deadline within timeout_ms");
}

/* ---- each kind of stalled or bad connection ends within its bound */

static struct eu_qp q_norr;	/* accepts the Request that never RTRs */

/* After the first accept the listener leaves requests undecided. */
static void after_norr(struct eu_listener *el, struct eu_qp *q)
{
	(void)q;
	el->mode = EU_L_IGNORE;
	el->after_accept = NULL;
}

/* c[N_KIND]: a full Request offered and left undecided by the ULP */
static bool deadlines_done(struct cli *c)
{
	int i;

	for (i = 0; i <= N_KIND; i++)
		if (c[i].fd < 0 || !c[i].t_end)
			return false;
	return true;
}

static void deadlines_run(struct cli *c)
{
	uint64_t end = iw_now_ms() + PHASE_MS + 3000;
	int i;

	c[N_KIND].fd = -1;
	while (!deadlines_done(c) && iw_now_ms() < end) {
		eu_idle(LP, 5);
		for (i = 0; i <= N_KIND; i++)
			cli_pump(&c[i]);
		if (c[N_KIND].fd < 0 && q_norr.has_req &&
		    cli_open(&c[N_KIND], K_FULL))
			break;
	}
}

static bool closed_within(const struct cli *c, uint64_t lo, uint64_t hi)
{
	uint64_t t;

	if (c->fd < 0)
		return bad("never connected");
	if (!c->t_end)
		return bad("still open after %llu ms",
			   (unsigned long long)(iw_now_ms() - c->t0));
	t = c->t_end - c->t0;
	return (t >= lo && t <= hi) ||
	       bad("closed after %llu ms, expected %llu..%llu",
		   (unsigned long long)t, (unsigned long long)lo,
		   (unsigned long long)hi);
}

static void deadlines_report(struct cli *c)
{
	char name[160];
	int k;

	for (k = K_IDLE; k <= K_HALF_PD; k++) {
		snprintf(name, sizeof(name), "%s: closed at the MPA deadline "
			 "(%d ms)", kind_name[k], MPA_MS);
		report(closed_within(&c[k], MPA_MS - 1, MPA_MS + SLACK_MS),
		       name);
	}
	for (k = K_BAD_KEY; k <= K_BAD_PDLEN; k++) {
		snprintf(name, sizeof(name), "%s: closed at once", kind_name[k]);
		report(closed_within(&c[k], 0, AT_ONCE_MS), name);
	}
	report((c[K_FULL].got >= MPA_HDR_LEN &&
		!memcmp(c[K_FULL].rx, MPA_KEY_REP, MPA_KEY_LEN)) &&
	       closed_within(&c[K_FULL], PHASE_MS - 1, PHASE_MS + SLACK_MS),
	       "full Request, Reply never read, no RTR: closed at the "
	       "setup timeout (1000 ms)");
	report((c[N_KIND].got == 0 || bad("got %zu octets", c[N_KIND].got)) &&
	       closed_within(&c[N_KIND], PHASE_MS - 1, PHASE_MS + SLACK_MS),
	       "full Request the ULP never decides: closed at the setup "
	       "timeout (1000 ms), nothing sent");
}

static void test_deadlines(void)
{
	struct cli c[N_KIND + 1];
	struct iw_qp_attr attr = { 0 };
	int k;

	memset(c, 0, sizeof(c));
	if (eu_qp_create(&q_norr, env.pd, "norr", &attr)) {
		tap_ok(0, "QP for the deadline checks");
		return;
	}
	eu_loop_add_qp(LP, &q_norr);
	eu_listener_target(&lst, &q_norr);
	lst.after_accept = after_norr;
	for (k = K_IDLE; k < N_KIND; k++)
		if (cli_open(&c[k], (enum kind)k))
			c[k].fd = -1;
	deadlines_run(c);
	deadlines_report(c);
	for (k = 0; k <= N_KIND; k++)
		cli_close(&c[k]);
	lst.mode = EU_L_ACCEPT;
	eu_loop_del_qp(LP, &q_norr);
	eu_qp_destroy(&q_norr);
	eu_qp_release(&q_norr);
}

/* ---- the flood */

struct flood {
	struct cli cli[HOLD > RING ? HOLD : RING];
	int base;		/* descriptors before */
	uint32_t max_pending;	/* the most the engine reported */
	int max_held;		/* the most sockets the listener held */
	int rts, rt_fail;	/* round trips over the first connection */
	char rt_why[sizeof(why)];
	uint64_t seed;
};

static int open_clients(const struct flood *f, int n)
{
	int i, o = 0;

	for (i = 0; i < n; i++)
		o += f->cli[i].fd >= 0;
	return o;
}

static void sample_pending(struct flood *f)
{
	struct iw_listener_stats st;

	iw_listener_stats(lst.l, &st);
	if (st.pending > f->max_pending)
		f->max_pending = st.pending;
}

/* The listener's count, and its share of this process's descriptors. */
static void sample(struct flood *f, int n, int own)
{
	int held = tap_fd_count() - f->base - open_clients(f, n) - own;

	sample_pending(f);
	if (held > f->max_held)
		f->max_held = held;
}

static void rt_once(struct flood *f, struct conn *c)
{
	if (round_trip(c, f->seed += 2)) {
		f->rts++;
		return;
	}
	if (!f->rt_fail++)
		snprintf(f->rt_why, sizeof(f->rt_why), "%s", why);
	why[0] = 0;
}

/* Lets the engine run, then looks: after every BATCH connects. */
static void flood_step(struct flood *f, struct conn *c1, int n, int own)
{
	int i;

	for (i = 0; i < n; i++)
		cli_pump(&f->cli[i]);
	eu_idle(LP, 2);
	sample(f, n, own);
	rt_once(f, c1);
	sample(f, n, own);
}

static void flood_run(struct flood *f, struct conn *c1, struct conn *c2)
{
	int i, n = 0;

	for (i = 0; i < FLOOD; i++) {
		struct cli *c = &f->cli[i % RING];

		if (i >= RING)
			cli_close(c);
		if (cli_open(c, (enum kind)(i % K_FULL)))
			c->fd = -1;
		if (n < RING)
			n++;
		if (i == FLOOD / 2 && conn_start(c2))
			c2->started = false;
		if (i % BATCH == BATCH - 1)
			flood_step(f, c1, n, c2->started);
	}
}

static void flood_close(struct flood *f)
{
	size_t i;

	for (i = 0; i < sizeof(f->cli) / sizeof(f->cli[0]); i++)
		cli_close(&f->cli[i]);
}

/* The attacker's thread: n connections, each opened again REOPEN_MS
 * after the listener closed it. */
struct attacker {
	struct cli *cli;
	int n;
	atomic_bool stop;
	unsigned long opened;
};

static void *attack(void *arg)
{
	struct attacker *a = arg;
	int i;

	while (!atomic_load(&a->stop)) {
		for (i = 0; i < a->n; i++) {
			struct cli *c = &a->cli[i];

			cli_pump(c);
			if (c->fd >= 0 && (!c->t_end ||
					   iw_now_ms() < c->t_end + REOPEN_MS))
				continue;
			cli_close(c);
			if (cli_open(c, (enum kind)(i % K_BAD_KEY)))
				c->fd = -1;
			else
				a->opened++;
		}
		usleep(1000);
	}
	return NULL;
}

/* Milliseconds of CPU this thread used. */
static double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Round trips per second over c1 for ms, with n connections held
 * meanwhile; *per_cpu: per second of this thread's CPU time. */
static int hold_run(struct flood *f, struct conn *c1, int n, int ms,
		    int *per_cpu)
{
	struct attacker a = { .cli = f->cli, .n = n };
	uint64_t end = iw_now_ms() + (uint64_t)ms;
	double cpu = thread_cpu_ms();
	int rts = f->rts;
	pthread_t t;

	atomic_init(&a.stop, false);
	if (n && pthread_create(&t, NULL, attack, &a))
		return -1;
	while (iw_now_ms() < end) {
		rt_once(f, c1);
		sample_pending(f);
	}
	cpu = thread_cpu_ms() - cpu;
	rts = f->rts - rts;
	*per_cpu = cpu > 0 ? (int)(rts * 1e3 / cpu) : 0;
	if (n) {
		atomic_store(&a.stop, true);
		pthread_join(t, NULL);
		tap_diag("%lu connections opened by the holding thread",
			 a.opened);
	}
	return rts * 1000 / ms;
}

/*
 * The case: the job's process also holds 900 idle or half-sent
 * connections (from another thread, each opened again soon after the
 * listener closed it) while the job's connection does round trips. They
 * go on, and the listener's share of the job thread's time stays small:
 * per second of that thread's CPU, at least a quarter of the quiet rate
 * (the issue saw 3/4 by the clock). By the clock the holding thread
 * competes for the CPUs, so only a floor is checked.
 */
static void test_hold(struct flood *f, struct conn *c1)
{
	int quiet, held, quiet_cpu, held_cpu, fail = f->rt_fail;

	quiet = hold_run(f, c1, 0, 1000, &quiet_cpu);
	held = hold_run(f, c1, HOLD, HOLD_MS, &held_cpu);
	tap_diag("round trips per second: %d quiet, %d with %d connections "
		 "held; per CPU second of the job's thread: %d, %d", quiet,
		 held, HOLD, quiet_cpu, held_cpu);
	report((f->rt_fail == fail ||
		bad("%d round trips failed: %s", f->rt_fail - fail,
		    f->rt_why)) &&
	       (held >= 100 || bad("%d round trips per second", held)) &&
	       (held_cpu * 4 >= quiet_cpu ||
		bad("%d round trips per CPU second, %d quiet", held_cpu,
		    quiet_cpu)),
	       "900 idle or half-sent connections held: round trips go on "
	       "verified, at a quarter or more of the quiet rate per CPU "
	       "second");
	flood_close(f);
}

static void flood_report(struct flood *f, const struct iw_listener_stats *st)
{
	report((st->pending_max <= CAP && f->max_pending <= CAP &&
		st->evicted > 0) ||
	       bad("at most %u pending (%u sampled), cap %d; %llu evicted",
		   st->pending_max, f->max_pending, CAP,
		   (unsigned long long)st->evicted),
	       "flood: the listener never held more than its cap of 64, "
	       "it closed the oldest unfinished ones to make room");
	report(f->max_held <= CAP + 4 ||
	       bad("the listener held up to %d descriptors", f->max_held),
	       "flood: the listener's descriptors stayed within the cap");
	tap_diag("flood: %llu accepted, %llu evicted, %llu refused, %llu "
		 "timed out, %llu bad, at most %u pending, %d descriptors",
		 (unsigned long long)st->accepted,
		 (unsigned long long)st->evicted,
		 (unsigned long long)st->refused,
		 (unsigned long long)st->timed_out,
		 (unsigned long long)st->bad, st->pending_max, f->max_held);
}

/* Descriptors back where they were once the flood stopped. */
static void test_after(struct flood *f)
{
	struct iw_listener_stats st;
	uint64_t end = iw_now_ms() + MPA_MS + SLACK_MS;
	int n;

	do {
		eu_idle(LP, 20);
		iw_listener_stats(lst.l, &st);
		n = tap_fd_count();
	} while ((st.pending || n > f->base) && iw_now_ms() < end);
	tap_diag("descriptors: %d before the flood, %d after", f->base, n);
	report((st.pending == 0 && n <= f->base + 2) ||
	       bad("%u pending, %d descriptors (%d before)", st.pending, n,
		   f->base),
	       "after the flood: nothing pending, descriptors back to what "
	       "they were");
}

static void test_flood(void)
{
	static struct flood f;
	struct iw_listener_stats st;
	struct conn c1, c2 = { .started = false };
	size_t i;

	for (i = 0; i < sizeof(f.cli) / sizeof(f.cli[0]); i++)
		f.cli[i].fd = -1;
	report((!conn_start(&c1) || bad("connect failed")) &&
	       conn_wait(&c1, 5000) && round_trip(&c1, 1),
	       "a connection through the listener before the flood");
	f.base = tap_fd_count();
	flood_run(&f, &c1, &c2);
	report(c2.started && conn_wait(&c2, 5000) &&
	       xfer(&c2.a, &c2.b, BIG, 7) && round_trip(&c2, 9),
	       "a connection made during the flood completes and carries "
	       "1 MiB, verified");
	conn_end(&c2);
	report((f.rt_fail == 0 || bad("%d failed: %s", f.rt_fail, f.rt_why)) &&
	       (f.rts >= FLOOD / BATCH || bad("%d round trips", f.rts)),
	       "the connection made before carried verified round trips "
	       "all through the flood");
	flood_close(&f);
	test_hold(&f, &c1);
	iw_listener_stats(lst.l, &st);
	flood_report(&f, &st);
	test_after(&f);
	conn_end(&c1);
}

/* ---- overflow is logged once per burst, with counts */

static bool burst_lines(const char *name, uint64_t want)
{
	unsigned long long closed, refused, sum = 0;
	int i, starts = 0, ends = 0;
	const char *p;

	for (i = 0; i < n_warn; i++) {
		if (!strstr(warn[i], name))
			return bad("a line without %s: %s", name, warn[i]);
		if (strstr(warn[i], "(the cap)"))
			starts++;
		p = strstr(warn[i], ": closed ");
		if (p && sscanf(p, ": closed %llu connections without a "
				"complete MPA Request, refused %llu",
				&closed, &refused) == 2) {
			ends++;
			sum += closed + refused;
		}
	}
	if (!starts || starts != ends || starts > 4)
		return bad("%d burst lines, %d summaries", starts, ends);
	return sum == want ||
	       bad("summaries count %llu, the listener %llu", sum,
		   (unsigned long long)want);
}

static void test_burst_log(void)
{
	struct iw_listener_stats st;
	char name[64];

	iw_listener_stats(lst.l, &st);
	snprintf(name, sizeof(name), "listener 127.0.0.1:%u", lst.port);
	eu_loop_del_listener(LP, &lst);
	eu_listener_close(&lst);
	report(burst_lines(name, st.evicted + st.refused),
	       "overflow logged at warn once per burst, naming the "
	       "listener, with counts that add up");
	tap_diag("%d other warn lines (bad keys, rate-limited)", n_warn_other);
}

static int listen_main(void)
{
	struct iw_conn_param p = {
		.timeout_ms = PHASE_MS,
		.max_pending = CAP,
		.mpa_timeout_ms = MPA_MS,
	};
	int rc;

	rc = eu_listen_backlog(&lst, env.dev, 0, &p, 1024);
	if (rc) {
		tap_ok(0, "listen: %d", rc);
		return rc;
	}
	eu_loop_add_listener(LP, &lst);
	test_deadlines();
	test_flood();
	test_burst_log();
	return 0;
}

int main(void)
{
	int rc;

	alarm(60);	/* a hang is a failure, not a stuck CI job */
	fd_limit_1024();
	rc = eu_env_open(&env);
	if (rc) {
		tap_ok(0, "device and PD (%d)", rc);
		return tap_done();
	}
	iw_dev_set_log(env.dev, log_hook, NULL);
	test_defaults();
	listen_main();
	rc = eu_env_close(&env);
	report(rc == 0 || bad("eu_env_close: %d", rc),
	       "teardown: PD and device close with nothing left over");
	return tap_done();
}
