/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fault_msg: one side of a FI_EP_MSG connection for the fault tests.
 *
 *   fault_msg srv -l PORT [options]        passive side, listens on PORT
 *   fault_msg cli -t 127.0.0.1:PORT [opts] active side (the port may be
 *                                          an iwproxy in between)
 *
 * Stream mode (default): each side sends -m messages of 1..-z octets to
 * the other, every octet a function of (seed, direction, sequence); the
 * receiver checks length, order and content of each. iWARP has no
 * receiver-not-ready retry, so the sender keeps at most WINDOW messages
 * beyond the peer's last acknowledgement (small ACK messages). With
 * manual progress a side that stops calling the provider stops reading
 * its socket, which is how -W stalls a receiver.
 *
 *   -e ok|err   expectation: every message intact (ok), or the
 *               connection fails (err): an FI_SHUTDOWN / error entry /
 *               error completion arrives, and every posted operation
 *               completes exactly once (counted by context)
 *   -K N        after N data messages received, print KILL and SIGKILL
 *               ourselves
 *   -W N:MS     after N data messages received, make no provider call
 *               for MS ms (the sender must back off and lose nothing)
 *   -q N        transmit queue size (default 32): a full queue gives
 *               -FI_EAGAIN, which the sender counts and retries
 *   -C N        connection mode: N connections, one message each way on
 *               each, memory per connection reported
 *   -L N        RLIMIT_NOFILE soft limit (exhaustion; the run fails if
 *               it cannot be set); without it the
 *               limit is raised to the hard one
 *   -A          connection mode: the peer may run out of descriptors, so
 *               failed connects are expected (they must fail cleanly)
 *   -T S        bound of the whole run in seconds (default 60)
 *
 * The last line is "RESULT PASS|FAIL key=value ...", the exit status 0
 * only on PASS.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_util.h"

#define HDR_MAGIC	0x69776674u	/* "iwft" */
#define WINDOW		128	/* data messages beyond the last ACK */
#define ACK_EVERY	16
#define RXN		200	/* posted receives (rx size is 256) */
#define TXN		(WINDOW + 16)

enum { T_DATA = 1, T_ACK = 2 };

struct hdr {
	uint32_t magic, type;
	uint64_t seq, len, acked;
};

struct slot {
	size_t idx;		/* in the op tracker: rx 0..RXN-1, tx after */
	bool busy;
	uint8_t *buf;
};

static struct {
	bool server;
	const char *target;
	int port;
	uint64_t msgs, seed;
	size_t max;
	bool expect_err;
	uint64_t kill_after, stall_after;
	int stall_ms, txq, conns, timeout_s;
	bool partial;		/* -A: the peer may run out; errors are fine */
	long nofile;
} o = { .msgs = 300, .max = 65536, .seed = 1, .txq = 32, .timeout_s = 60,
	.nofile = -1 };

static struct {
	struct fault_fab f;
	struct fid_eq *eq;	/* the pep's and every endpoint's */
	struct fid_pep *pep;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct slot rx[RXN], tx[TXN];
	struct op_track tr;
	uint64_t tx_seq, peer_acked, rx_seq, ack_sent, eagain;
	uint64_t bytes_ok, bad, max_gap, t_err, cq_errs;
	/* longest single provider call, ms: without the time the thread
	 * waited for a CPU (fault_own_ns), and in wall-clock time */
	uint64_t max_call, max_call_wall;
	bool call_exact;	/* the run-queue delay was known */
	/* the first error completion and the first EQ error entry:
	 * err, and prov_errno (the iWARP error triple, see
	 * IWARP_PROV_ERRNO), so run-fault can tell which check fired */
	int cq_err0, cq_prov0, eq_err0, eq_prov0;
	bool shutdown_seen, eq_err_seen;
	bool closing;		/* our own orderly fi_shutdown is under way */
	char why[200];
} s;

static uint64_t deadline;

#define fail(...) fault_fail(s.why, sizeof(s.why), __VA_ARGS__)

static struct fi_info *hints(void)
{
	struct fi_info *h = fault_hints(FI_EP_MSG);

	if (h)
		h->tx_attr->size = (size_t)o.txq;
	return h;
}

static int open_common(void)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_MSG,
				  .wait_obj = FI_WAIT_UNSPEC,
				  .size = o.conns ? (size_t)o.conns * 4 : 1024 };
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC,
				  .size = o.conns ? (size_t)o.conns * 4 : 64 };
	char port[16];
	int ret;

	snprintf(port, sizeof(port), "%d", o.port);
	if (o.server)
		ret = fault_fab_open(&s.f, hints(), "127.0.0.1", port,
				     FI_SOURCE);
	else
		ret = fault_fab_open(&s.f, hints(), NULL, NULL, 0);
	if (ret)
		return ret;
	ret = fi_eq_open(s.f.fabric, &eqa, &s.eq, NULL);
	if (!ret)
		ret = fi_cq_open(s.f.domain, &cqa, &s.cq, NULL);
	if (ret || !o.server)
		return ret;
	ret = fi_passive_ep(s.f.fabric, s.f.info, &s.pep, NULL);
	if (!ret)
		ret = fi_pep_bind(s.pep, &s.eq->fid, 0);
	if (!ret)
		ret = fi_listen(s.pep);
	return ret;
}

static int ep_open(struct fi_info *info, struct fid_ep **ep, void *ctx)
{
	int ret = fi_endpoint(s.f.domain, info, ep, ctx);

	if (ret)
		return ret;
	ret = fi_ep_bind(*ep, &s.eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(*ep, &s.cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(*ep);
	if (ret) {
		fi_close(&(*ep)->fid);
		*ep = NULL;
	}
	return ret;
}

/* Reads one EQ event (or error) without blocking: event, 0 or -errno. */
static int eq_poll(struct fi_eq_cm_entry *e, struct fi_eq_err_entry *err)
{
	uint32_t ev;
	ssize_t n = fi_eq_read(s.eq, &ev, e, sizeof(*e), 0);

	if (n == -FI_EAVAIL) {
		memset(err, 0, sizeof(*err));
		fi_eq_readerr(s.eq, err, 0);
		if (!s.eq_err0) {
			s.eq_err0 = err->err ? err->err : FI_EOTHER;
			s.eq_prov0 = err->prov_errno;
			fault_log("first EQ error entry: %s, prov_errno %#x (%s)",
				  fi_strerror(s.eq_err0), err->prov_errno,
				  fi_eq_strerror(s.eq, err->prov_errno,
						 err->err_data, NULL, 0));
		}
		return -(int)(err->err ? err->err : FI_EOTHER);
	}
	return n < 0 ? 0 : (int)ev;
}

/* Waits up to ms for an event of kind want on fid (NULL: any). */
static int eq_wait_for(uint32_t want, struct fid *fid, int ms,
		       struct fi_eq_cm_entry *e)
{
	uint64_t end = fault_now_ms() + (uint64_t)ms;
	struct fi_eq_err_entry err;

	while (fault_now_ms() < end) {
		int ev = eq_poll(e, &err);

		if (ev < 0)
			return ev;
		if (ev == FI_SHUTDOWN)
			s.shutdown_seen = true;
		if (ev == (int)want && (!fid || e->fid == fid))
			return 0;
		if (ev)
			continue;
		fi_cq_read(s.cq, NULL, 0);	/* progress */
		fault_sleep_ms(1);
	}
	return -FI_ETIMEDOUT;
}

static int connect_one(struct fid_ep **ep)
{
	struct sockaddr_in dst;
	struct fi_eq_cm_entry e;
	int ret;

	if (fault_parse_addr(o.target, &dst))
		return -FI_EINVAL;
	ret = ep_open(s.f.info, ep, NULL);
	if (!ret)
		ret = fi_connect(*ep, &dst, NULL, 0);
	if (!ret)
		ret = eq_wait_for(FI_CONNECTED, &(*ep)->fid, 10000, &e);
	return ret;
}

static int accept_one(struct fid_ep **ep, bool post_rx)
{
	struct fi_eq_cm_entry e;
	int ret = eq_wait_for(FI_CONNREQ, NULL, 15000, &e), i;

	if (ret)
		return ret;
	ret = ep_open(e.info, ep, NULL);
	fi_freeinfo(e.info);
	for (i = 0; !ret && post_rx && i < RXN; i++) {
		ret = (int)fi_recv(*ep, s.rx[i].buf, sizeof(struct hdr) + o.max,
				   NULL, 0, &s.rx[i]);
		track_post(&s.tr, s.rx[i].idx);
	}
	if (!ret)
		ret = fi_accept(*ep, NULL, 0);
	if (!ret)
		ret = eq_wait_for(FI_CONNECTED, &(*ep)->fid, 10000, &e);
	return ret;
}

/* ---- stream mode */

static int slots_init(void)
{
	size_t i, len = sizeof(struct hdr) + o.max;

	if (track_init(&s.tr, RXN + TXN))
		return -1;
	for (i = 0; i < RXN; i++) {
		s.rx[i].idx = i;
		s.rx[i].buf = malloc(len);
		if (!s.rx[i].buf)
			return -1;
	}
	for (i = 0; i < TXN; i++) {
		s.tx[i].idx = RXN + i;
		s.tx[i].buf = malloc(len);
		if (!s.tx[i].buf)
			return -1;
	}
	return 0;
}

static void slots_free(void)
{
	size_t i;

	for (i = 0; i < RXN; i++)
		free(s.rx[i].buf);
	for (i = 0; i < TXN; i++)
		free(s.tx[i].buf);
	track_free(&s.tr);
}

static struct slot *tx_free_slot(void)
{
	size_t i;

	for (i = 0; i < TXN; i++)
		if (!s.tx[i].busy)
			return &s.tx[i];
	return NULL;
}

static struct slot *slot_of(void *ctx)
{
	struct slot *sl = ctx;

	if (sl >= s.rx && sl < s.rx + RXN)
		return sl;
	if (sl >= s.tx && sl < s.tx + TXN)
		return sl;
	return NULL;
}

/* Errors are judged once per progress round (judge_errors): a
 * disconnect, a flush or a refused repost after both directions are
 * complete is the end of the stream, not a failure. */
static const char *pending_err;

static void note_error(const char *what)
{
	if (!pending_err)
		pending_err = what;
}

static void judge_errors(void)
{
	if (!pending_err)
		return;
	if (s.rx_seq == o.msgs && s.peer_acked == o.msgs)
		s.closing = true;
	if (!s.t_err && !s.closing) {
		s.t_err = fault_now_ms();
		fault_log("first error: %s (sent %llu acked %llu received "
			  "%llu)", pending_err, (unsigned long long)s.tx_seq,
			  (unsigned long long)s.peer_acked,
			  (unsigned long long)s.rx_seq);
	}
	pending_err = NULL;
}

/* Checks one received message and takes in its acknowledgement. */
static void rx_message(struct slot *sl, size_t len)
{
	struct hdr h;
	size_t at;
	uint64_t stream = o.server ? 0 : 1;	/* what the peer sends */

	if (len < sizeof(h)) {
		fail("short message: %zu octets", len);
		return;
	}
	memcpy(&h, sl->buf, sizeof(h));
	if (h.magic != HDR_MAGIC) {
		fail("bad magic %#x", h.magic);
		return;
	}
	if (h.acked > s.peer_acked)
		s.peer_acked = h.acked;
	if (h.type == T_ACK)
		return;
	if (h.seq != s.rx_seq) {
		fail("message %llu arrived, expected %llu",
		     (unsigned long long)h.seq, (unsigned long long)s.rx_seq);
		return;
	}
	if (h.len != pat_size(o.max, o.seed, stream, h.seq) ||
	    len != sizeof(h) + h.len) {
		fail("message %llu: %zu octets, expected %zu",
		     (unsigned long long)h.seq, len,
		     sizeof(h) + pat_size(o.max, o.seed, stream, h.seq));
		return;
	}
	at = pat_check(sl->buf + sizeof(h), h.len, o.seed, stream, h.seq);
	if (at != SIZE_MAX) {
		s.bad++;
		fail("message %llu: octet %zu differs",
		     (unsigned long long)h.seq, at);
		return;
	}
	s.bytes_ok += h.len;
	s.rx_seq++;
}

static void repost(struct slot *sl)
{
	ssize_t r;

	/* not after an error, nor after a failed check: the endpoint may
	 * be closed already (the completions read after fi_close) */
	if (s.t_err || s.why[0] || !s.ep)
		return;
	r = fi_recv(s.ep, sl->buf, sizeof(struct hdr) + o.max, NULL, 0, sl);
	if (r) {
		note_error("fi_recv failed");
		return;
	}
	track_post(&s.tr, sl->idx);
}

static void on_completion(void *ctx, size_t len, bool error)
{
	struct slot *sl = slot_of(ctx);

	if (!sl) {
		s.tr.strays++;
		fail("completion with unknown context %p", ctx);
		return;
	}
	if (!track_done(&s.tr, sl->idx, error))
		fail("context %zu completed twice or unposted", sl->idx);
	if (sl->idx >= RXN) {
		sl->busy = false;
		return;
	}
	if (error)
		return;
	rx_message(sl, len);
	repost(sl);
}

/* A provider call: call_start before, call_took after; a call may take
 * allowed_ms (a blocking wait) without counting. */
struct call_t0 {
	uint64_t wall, own;
};

static struct call_t0 call_start(void)
{
	struct call_t0 t;

	t.own = fault_own_ns(&t.wall, &s.call_exact);
	return t;
}

static void call_took(struct call_t0 t0, uint64_t allowed_ms)
{
	uint64_t wall, own = fault_own_ns(&wall, NULL);
	/* no wrap-around, whatever the two readings */
	uint64_t d = own > t0.own ? (own - t0.own) / 1000000 : 0;
	uint64_t dw = (wall - t0.wall) / 1000000;

	d = d > allowed_ms ? d - allowed_ms : 0;
	dw = dw > allowed_ms ? dw - allowed_ms : 0;
	if (d > s.max_call)
		s.max_call = d;
	if (dw > s.max_call_wall)
		s.max_call_wall = dw;
}

static ssize_t timed_cq_read(struct fi_cq_msg_entry *e, size_t n)
{
	struct call_t0 t0 = call_start();
	ssize_t r = fi_cq_read(s.cq, e, n);

	call_took(t0, 0);
	return r;
}

/* Reads the CQ and the EQ; true if anything happened. */
static bool progress(void)
{
	struct fi_cq_msg_entry e[16];
	struct fi_cq_err_entry err;
	struct fi_eq_cm_entry cm;
	struct fi_eq_err_entry eqe;
	bool any = false, shut = false;
	int cq_err = 0;
	ssize_t n, i;
	int ev;

	/* the EQ first: completions queued before a disconnect are read
	 * below, before the disconnect counts as an error */
	while ((ev = eq_poll(&cm, &eqe)) != 0) {
		any = true;
		if (ev == FI_SHUTDOWN) {
			s.shutdown_seen = true;
			shut = true;
		} else if (ev < 0) {
			s.eq_err_seen = true;
			note_error(fi_strerror(-ev));
		}
	}
	while ((n = timed_cq_read(e, 16)) > 0) {
		any = true;
		for (i = 0; i < n; i++)
			on_completion(e[i].op_context, e[i].len, false);
	}
	while (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		if (fi_cq_readerr(s.cq, &err, 0) != 1)
			break;
		any = true;
		if (!s.cq_errs++) {
			cq_err = err.err;
			s.cq_err0 = err.err ? err.err : FI_EOTHER;
			s.cq_prov0 = err.prov_errno;
			fault_log("first error completion: %s, prov_errno %#x "
				  "(%s)", fi_strerror(s.cq_err0), err.prov_errno,
				  fi_cq_strerror(s.cq, err.prov_errno,
						 err.err_data, NULL, 0));
		}
		on_completion(err.op_context, 0, true);
		while ((n = fi_cq_read(s.cq, e, 16)) > 0)
			for (i = 0; i < n; i++)
				on_completion(e[i].op_context, e[i].len,
					      false);
	}
	/* error and plain entries sit in two queues: judge once both are
	 * read (a flush may be read before the last message) */
	if (cq_err)
		note_error(fi_strerror(cq_err));
	if (shut)
		note_error("FI_SHUTDOWN");
	judge_errors();
	return any;
}

static bool send_one(uint32_t type)
{
	struct slot *sl = tx_free_slot();
	struct hdr h = { .magic = HDR_MAGIC, .type = type,
			 .acked = s.rx_seq };
	uint64_t stream = o.server ? 1 : 0;
	struct call_t0 t0;
	ssize_t r;

	if (!sl)
		return false;
	if (type == T_DATA) {
		h.seq = s.tx_seq;
		h.len = pat_size(o.max, o.seed, stream, h.seq);
		pat_fill(sl->buf + sizeof(h), h.len, o.seed, stream, h.seq);
	}
	memcpy(sl->buf, &h, sizeof(h));
	t0 = call_start();
	r = fi_send(s.ep, sl->buf, sizeof(h) + h.len, NULL, 0, sl);
	call_took(t0, 0);
	if (r == -FI_EAGAIN) {
		s.eagain++;
		return false;
	}
	if (r) {
		note_error("fi_send failed");
		judge_errors();
		return false;
	}
	sl->busy = true;
	track_post(&s.tr, sl->idx);
	if (type == T_DATA)
		s.tx_seq++;
	else
		s.ack_sent = s.rx_seq;
	return true;
}

static void send_more(void)
{
	if (s.t_err)
		return;
	if (s.rx_seq - s.ack_sent >= ACK_EVERY ||
	    (s.rx_seq == o.msgs && s.ack_sent < o.msgs))
		if (!send_one(T_ACK))
			return;
	while (s.tx_seq < o.msgs && s.tx_seq - s.peer_acked < WINDOW)
		if (!send_one(T_DATA))
			return;
}

static bool tx_idle(void)
{
	size_t i;

	for (i = 0; i < TXN; i++)
		if (s.tx[i].busy)
			return false;
	return true;
}

static void maybe_fault(void)
{
	if (o.kill_after && s.rx_seq >= o.kill_after) {
		printf("KILL %llu\n", (unsigned long long)fault_now_ms());
		fflush(stdout);
		raise(SIGKILL);
	}
	if (o.stall_after && s.rx_seq >= o.stall_after) {
		fault_log("stalling for %d ms (no provider calls)",
			  o.stall_ms);
		o.stall_after = 0;
		fault_sleep_ms(o.stall_ms);
		fault_log("stall over");
	}
}

/* Drives the stream until done, an error, or the deadline. */
static void stream(void)
{
	uint64_t last = fault_now_ms();

	while (fault_now_ms() < deadline) {
		uint64_t now = fault_now_ms();
		struct fi_cq_msg_entry e;

		if (now - last > s.max_gap)
			s.max_gap = now - last;
		maybe_fault();
		last = fault_now_ms();
		if (s.t_err || s.why[0])
			return;
		send_more();
		if (s.tx_seq == o.msgs && s.peer_acked == o.msgs &&
		    s.rx_seq == o.msgs && s.ack_sent == o.msgs && tx_idle())
			return;
		if (!progress()) {
			/* a short blocking wait; it drives progress too */
			struct call_t0 t0 = call_start();
			ssize_t n = fi_cq_sread(s.cq, &e, 1, NULL, 5);

			call_took(t0, 5);

			if (n == 1)
				on_completion(e.op_context, e.len, false);
			else if (n == -FI_EAVAIL)
				progress();
		}
	}
	fail("deadline: sent %llu acked %llu received %llu",
	     (unsigned long long)s.tx_seq, (unsigned long long)s.peer_acked,
	     (unsigned long long)s.rx_seq);
}

/* After an error: every posted operation must complete once. */
static void drain_after_error(uint64_t *at_close)
{
	uint64_t end = fault_now_ms() + 5000;

	while (track_outstanding(&s.tr) && fault_now_ms() < end)
		if (!progress())
			fault_sleep_ms(2);
	*at_close = track_outstanding(&s.tr);
}

static int run_stream(void)
{
	uint64_t t0, left_open = 0, left_closed;
	int ret, i;
	struct fi_eq_cm_entry cm;

	if (slots_init())
		return -FI_ENOMEM;
	if (o.server) {
		ret = accept_one(&s.ep, true);
	} else {
		ret = connect_one(&s.ep);
		for (i = 0; !ret && i < RXN; i++) {
			ret = (int)fi_recv(s.ep, s.rx[i].buf,
					   sizeof(struct hdr) + o.max, NULL, 0,
					   &s.rx[i]);
			track_post(&s.tr, s.rx[i].idx);
		}
	}
	if (ret) {
		fail("connection setup: %s", fi_strerror(-ret));
		return ret;
	}
	t0 = fault_now_ms();
	fault_log("connected");
	stream();
	if (s.t_err) {
		s.closing = true;
		drain_after_error(&left_open);
	} else if (!s.why[0]) {
		s.closing = true;
		fi_shutdown(s.ep, 0);
		/* each side hears of the close, the one that called
		 * fi_shutdown too (the provider's rule, iwarp_ep.c) */
		if (!s.shutdown_seen &&
		    eq_wait_for(FI_SHUTDOWN, &s.ep->fid, 3000, &cm))
			fail("no FI_SHUTDOWN within 3 s of fi_shutdown");
	}
	ret = fi_close(&s.ep->fid);
	s.ep = NULL;
	if (ret)
		fail("fi_close(ep): %d", ret);
	progress();	/* what the close flushed */
	left_closed = track_outstanding(&s.tr);
	printf("RESULT-DATA msgs_tx=%llu msgs_rx=%llu bytes_verified=%llu "
	       "eagain=%llu max_gap_ms=%llu max_call_ms=%llu "
	       "max_call_wall_ms=%llu call_clock=%s secs=%.2f posted=%llu "
	       "completed=%llu errors=%llu doubles=%llu strays=%llu "
	       "open_after_drain=%llu open_after_close=%llu "
	       "shutdown=%d eq_error=%d cq_errors=%llu t_err=%llu "
	       "cq_err=%d cq_prov=%d eq_err=%d eq_prov=%d\n",
	       (unsigned long long)s.tx_seq, (unsigned long long)s.rx_seq,
	       (unsigned long long)s.bytes_ok, (unsigned long long)s.eagain,
	       (unsigned long long)s.max_gap,
	       (unsigned long long)s.max_call,
	       (unsigned long long)s.max_call_wall,
	       s.call_exact ? "schedstat" : "wall",
	       (double)(fault_now_ms() - t0) / 1000,
	       (unsigned long long)s.tr.posted,
	       (unsigned long long)s.tr.done,
	       (unsigned long long)s.tr.errors,
	       (unsigned long long)s.tr.doubles,
	       (unsigned long long)s.tr.strays,
	       (unsigned long long)left_open,
	       (unsigned long long)left_closed, s.shutdown_seen,
	       s.eq_err_seen, (unsigned long long)s.cq_errs,
	       (unsigned long long)s.t_err, s.cq_err0, s.cq_prov0, s.eq_err0,
	       s.eq_prov0);
	if (s.tr.doubles || s.tr.strays)
		fail("%llu double and %llu stray completions",
		     (unsigned long long)s.tr.doubles,
		     (unsigned long long)s.tr.strays);
	if (o.expect_err) {
		if (!s.t_err)
			fail("no error seen");
		else if (!s.shutdown_seen && !s.eq_err_seen)
			fail("errors but no FI_SHUTDOWN or EQ error entry");
		if (left_closed)
			fail("%llu posted operations never completed",
			     (unsigned long long)left_closed);
	} else if (s.t_err) {
		fail("unexpected error");
	}
	slots_free();
	return 0;
}

/* ---- connection mode: many connections, one message each way */

struct conn {
	struct fid_ep *ep;
	uint8_t rbuf[64], sbuf[64];
	bool connected, failed, got, sent;
};

static struct conn *cs;
static uint64_t conn_up, conn_got, conn_sent, conn_shut, conn_flushed;
static int first_err, first_err_where;

static const char *where_name[] = { "none", "fi_endpoint", "fi_connect",
				    "connect event", "fi_recv", "accept" };

static void conn_err(int where, int err)
{
	if (!first_err) {
		first_err = err;
		first_err_where = where;
		fault_log("first resource error in %s: %d (%s) with %d "
			  "descriptors open", where_name[where], err,
			  fi_strerror(err), fault_fd_count());
	}
}

static void conn_fill(struct conn *c, size_t i, uint64_t stream)
{
	uint64_t idx = i;

	pat_fill(c->sbuf, sizeof(c->sbuf), o.seed, stream, i);
	memcpy(c->sbuf, &idx, sizeof(idx));
}

/* The 64 octets of connection i's message: its index, then pattern. */
static bool conn_check(const uint8_t *buf, uint64_t i, uint64_t stream)
{
	uint8_t ref[64];

	pat_fill(ref, sizeof(ref), o.seed, stream, i);
	memcpy(ref, &i, sizeof(i));
	return !memcmp(ref, buf, sizeof(ref));
}

static struct conn *conn_of(fid_t fid)
{
	return fid->context;
}

/* Serves the EQ and the CQ once; true if anything happened. */
static bool conn_progress(size_t n)
{
	struct fi_cq_msg_entry e[32];
	struct fi_eq_cm_entry cm;
	struct fi_eq_err_entry err;
	bool any = false;
	ssize_t k, i;
	int ev;

	/* the server reads its EQ itself (it accepts) */
	while (!o.server && (ev = eq_poll(&cm, &err)) != 0) {
		any = true;
		if (ev == FI_CONNECTED) {
			conn_of(cm.fid)->connected = true;
			conn_up++;
		} else if (ev == FI_SHUTDOWN) {
			conn_shut++;
		} else if (ev < 0) {
			conn_err(3, -ev);
			if (err.fid && (!s.pep || err.fid != &s.pep->fid)) {
				conn_of(err.fid)->failed = true;
				conn_of(err.fid)->connected = false;
			}
		}
	}
	while ((k = fi_cq_read(s.cq, e, 32)) > 0)
		for (i = 0; i < k; i++) {
			struct conn *c = e[i].op_context;
			size_t idx = (size_t)(c - cs);
			uint64_t got;

			any = true;
			if (c < cs || idx >= n) {
				fail("stray completion");
				continue;
			}
			if (e[i].flags & FI_SEND) {
				conn_sent++;
				continue;
			}
			memcpy(&got, c->rbuf, sizeof(got));
			if (e[i].len != sizeof(c->rbuf) ||
			    !conn_check(c->rbuf, got, o.server ? 2 : 3) ||
			    (!o.server && got != idx)) {
				fail("connection %zu: bad message", idx);
				continue;
			}
			c->got = true;
			conn_got++;
		}
	/* a connection that failed flushes its receive: counted, and it
	 * must be one of ours */
	while (k == -FI_EAVAIL) {
		struct fi_cq_err_entry ce = { 0 };
		struct conn *c;

		if (fi_cq_readerr(s.cq, &ce, 0) != 1)
			break;
		any = true;
		c = ce.op_context;
		if (c < cs || c >= cs + n)
			fail("stray error completion: %s",
			     fi_strerror(ce.err));
		else if (c->connected && !c->failed)
			fail("connection %zu: error completion %s",
			     (size_t)(c - cs), fi_strerror(ce.err));
		conn_flushed++;
		k = fi_cq_read(s.cq, e, 0);
	}
	return any;
}

static const char *err_name(int err)
{
	static char other[16];

	switch (err) {
	case 0: return "SUCCESS";
	case FI_EMFILE: return "EMFILE";
	case FI_ENOMEM: return "ENOMEM";
	case FI_EAGAIN: return "EAGAIN";
	case FI_ETIMEDOUT: return "ETIMEDOUT";
	case FI_ECONNREFUSED: return "ECONNREFUSED";
	case FI_ECONNRESET: return "ECONNRESET";
	case FI_ECONNABORTED: return "ECONNABORTED";
	default:
		snprintf(other, sizeof(other), "E%d", err);
		return other;
	}
}

static double cpu_secs(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) /
		       1e6;
}

/* Memory figures, taken when every connection made so far is up. */
static long rss0, rss1;
static size_t heap0, heap1;

static void mem_sample(void)
{
	long r = fault_rss_kb();
	size_t h = mallinfo2().uordblks;

	if (r > rss1)
		rss1 = r;
	if (h > heap1)
		heap1 = h;
}

static int srv_accept_conn(struct fi_eq_cm_entry *cm, size_t made)
{
	struct conn *c = &cs[made];
	int ret = fi_endpoint(s.f.domain, cm->info, &c->ep, c);

	fi_freeinfo(cm->info);
	if (ret)
		return ret;
	ret = fi_ep_bind(c->ep, &s.eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(c->ep, &s.cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(c->ep);
	if (!ret)
		ret = (int)fi_recv(c->ep, c->rbuf, 64, NULL, 0, c);
	if (!ret)
		ret = fi_accept(c->ep, NULL, 0);
	return ret;
}

/* Sleeps on the wait fds of the EQ and the CQ (fi_trywait first), as
 * an application with blocking waits would: a descriptor that stays
 * readable without work would spin here, which the CPU figure shows. */
static uint64_t idle_waits, idle_wakeups;

static void idle_wait(int ms)
{
	struct fid *f[2] = { &s.eq->fid, &s.cq->fid };
	struct pollfd pf[2] = { { .events = POLLIN }, { .events = POLLIN } };

	if (fi_control(&s.eq->fid, FI_GETWAIT, &pf[0].fd) ||
	    fi_control(&s.cq->fid, FI_GETWAIT, &pf[1].fd)) {
		fault_sleep_ms(1);
		return;
	}
	if (fi_trywait(s.f.fabric, f, 2) != FI_SUCCESS)
		return;
	idle_waits++;
	if (poll(pf, 2, ms) > 0)
		idle_wakeups++;
}

/* The server answers every message; it ends when every connection it
 * accepted was shut down by the client (the client decides how many). */
static size_t conn_server(size_t n)
{
	uint64_t last_req = fault_now_ms();
	size_t made = 0, i, settled;
	int ret;

	while (fault_now_ms() < deadline && !s.why[0]) {
		struct fi_eq_cm_entry cm;
		struct fi_eq_err_entry err;
		bool any = false;
		int ev;

		while ((ev = eq_poll(&cm, &err)) != 0) {
			any = true;
			if (ev == FI_CONNREQ && made < n) {
				last_req = fault_now_ms();
				ret = srv_accept_conn(&cm, made);
				if (ret)
					conn_err(5, -ret);
				made += cs[made].ep != NULL;
			} else if (ev == FI_CONNREQ) {
				fi_freeinfo(cm.info);
			} else if (ev == FI_CONNECTED) {
				conn_of(cm.fid)->connected = true;
				if (++conn_up == made)
					mem_sample();
			} else if (ev == FI_SHUTDOWN) {
				conn_shut++;
			} else if (ev < 0) {
				conn_err(3, -ev);
				if (err.fid && err.fid != &s.pep->fid)
					conn_of(err.fid)->failed = true;
			}
		}
		any |= conn_progress(n);
		for (i = 0; i < made; i++)
			if (cs[i].got && !cs[i].sent) {
				uint64_t idx;

				memcpy(&idx, cs[i].rbuf, 8);
				conn_fill(&cs[i], idx, 3);
				cs[i].sent = true;
				if (fi_send(cs[i].ep, cs[i].sbuf, 64, NULL, 0,
					    &cs[i]))
					fail("fi_send %zu", i);
			}
		for (i = 0, settled = 0; i < made; i++)
			settled += cs[i].failed;
		if (made && conn_shut + settled >= made &&
		    (made == n || fault_now_ms() - last_req > 2000))
			break;
		if (!any)
			idle_wait(50);
	}
	return made;
}

/* The client keeps at most 64 connects under way; it stops at the
 * first resource error and carries on with what it has. */
static size_t conn_client(size_t n)
{
	struct sockaddr_in dst;
	size_t made = 0, i, settled = 0;
	int ret;

	if (fault_parse_addr(o.target, &dst))
		return 0;
	while (fault_now_ms() < deadline && !first_err && made < n) {
		struct conn *c = &cs[made];

		if (made - conn_up >= 64) {
			if (!conn_progress(n))
				fault_sleep_ms(1);
			continue;
		}
		ret = fi_endpoint(s.f.domain, s.f.info, &c->ep, c);
		if (ret) {
			c->ep = NULL;
			conn_err(1, -ret);
			break;
		}
		made++;
		ret = fi_ep_bind(c->ep, &s.eq->fid, 0);
		if (!ret)
			ret = fi_ep_bind(c->ep, &s.cq->fid,
					 FI_TRANSMIT | FI_RECV);
		if (!ret)
			ret = fi_enable(c->ep);
		if (ret) {
			conn_err(1, -ret);
			c->failed = true;
			break;
		}
		ret = (int)fi_recv(c->ep, c->rbuf, 64, NULL, 0, c);
		if (ret) {
			conn_err(4, -ret);
			c->failed = true;
			break;
		}
		ret = fi_connect(c->ep, &dst, NULL, 0);
		if (ret) {
			conn_err(2, -ret);
			c->failed = true;
			break;
		}
		conn_progress(n);
	}
	/* the connects still under way end one way or the other */
	while (fault_now_ms() < deadline) {
		settled = 0;
		for (i = 0; i < made; i++)
			settled += cs[i].connected || cs[i].failed;
		if (settled == made)
			break;
		if (!conn_progress(n))
			fault_sleep_ms(1);
	}
	mem_sample();
	fault_log("set-up over: %zu endpoints, %llu connected", made,
		  (unsigned long long)conn_up);
	for (i = 0; i < made; i++)
		if (cs[i].connected) {
			conn_fill(&cs[i], i, 2);
			ret = (int)fi_send(cs[i].ep, cs[i].sbuf, 64, NULL, 0,
					   &cs[i]);
			if (ret)
				fail("fi_send on connection %zu: %d", i, ret);
		}
	while (fault_now_ms() < deadline && !s.why[0] &&
	       (conn_got < conn_up || conn_sent < conn_up))
		if (!conn_progress(n))
			fault_sleep_ms(1);
	return made;
}

static int conn_mode(void)
{
	size_t n = (size_t)o.conns, i, made, live = 0;
	int fd0 = fault_fd_count(), fd1, ret;
	uint64_t t0 = fault_now_ms();

	cs = calloc(n, sizeof(*cs));
	if (!cs)
		return -FI_ENOMEM;
	rss0 = rss1 = fault_rss_kb();
	heap0 = heap1 = mallinfo2().uordblks;
	made = o.server ? conn_server(n) : conn_client(n);
	fd1 = fault_fd_count();
	for (i = 0; i < made; i++)
		live += cs[i].connected;
	if (conn_got < live)
		fail("%llu of %zu connections carried their message",
		     (unsigned long long)conn_got, live);
	for (i = 0; i < made; i++)
		if (cs[i].ep && (ret = fi_close(&cs[i].ep->fid)))
			fail("fi_close(ep %zu): %d", i, ret);
	printf("RESULT-DATA conns=%zu made=%zu live=%zu verified=%llu "
	       "shutdowns=%llu flushed=%llu rss_kb=%ld..%ld per_conn_kb=%.1f "
	       "heap_per_conn_kb=%.1f fds=%d..%d "
	       "first_err=-FI_%s in=%s secs=%.1f cpu=%.2f "
	       "waits=%llu wakeups=%llu\n", n, made, live,
	       (unsigned long long)conn_got, (unsigned long long)conn_shut,
	       (unsigned long long)conn_flushed, rss0, rss1, live ? (double)(rss1 - rss0) / (double)live : 0,
	       live ? ((double)heap1 - (double)heap0) / 1024 / (double)live :
		      0,
	       fd0, fd1, err_name(first_err),
	       where_name[first_err_where],
	       (double)(fault_now_ms() - t0) / 1000, cpu_secs(),
	       (unsigned long long)idle_waits,
	       (unsigned long long)idle_wakeups);
	if (o.nofile > 0 && !o.server && !first_err)
		fail("the descriptor limit %ld never bit", o.nofile);
	if (o.nofile < 0 && !o.server && !o.partial && live != n)
		fail("%zu of %zu connections up", live, n);
	if (o.server && conn_shut != live)
		fail("%llu FI_SHUTDOWN for %zu live connections",
		     (unsigned long long)conn_shut, live);
	free(cs);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: fault_msg srv -l PORT | cli -t ADDR:PORT "
		"[-m N] [-z MAX] [-x SEED] [-e ok|err] [-K N] [-W N:MS] "
		"[-q N] [-C N] [-L N] [-T S]\n");
	exit(2);
}

static void parse(int argc, char **argv)
{
	int c;

	if (argc < 2)
		usage();
	o.server = !strcmp(argv[1], "srv");
	if (!o.server && strcmp(argv[1], "cli"))
		usage();
	optind = 2;
	while ((c = getopt(argc, argv, "l:t:m:z:x:e:K:W:q:C:L:T:A")) != -1)
		switch (c) {
		case 'l': o.port = atoi(optarg); break;
		case 't': o.target = optarg; break;
		case 'm': o.msgs = strtoull(optarg, NULL, 0); break;
		case 'z': o.max = strtoull(optarg, NULL, 0); break;
		case 'x': o.seed = strtoull(optarg, NULL, 0); break;
		case 'e': o.expect_err = !strcmp(optarg, "err"); break;
		case 'K': o.kill_after = strtoull(optarg, NULL, 0); break;
		case 'W':
			if (sscanf(optarg, "%llu:%d",
				   (unsigned long long *)&o.stall_after,
				   &o.stall_ms) != 2)
				usage();
			break;
		case 'q': o.txq = atoi(optarg); break;
		case 'C': o.conns = atoi(optarg); break;
		case 'L': o.nofile = atol(optarg); break;
		case 'T': o.timeout_s = atoi(optarg); break;
		case 'A': o.partial = true; break;
		default: usage();
		}
	if ((o.server && o.port <= 0) || (!o.server && !o.target) ||
	    !o.max || o.max > (1 << 24) || o.txq < 1)
		usage();
}

int main(int argc, char **argv)
{
	long lim;
	int ret;

	parse(argc, argv);
	fault_set_name(o.server ? "fault_msg srv" : "fault_msg cli");
	setvbuf(stdout, NULL, _IOLBF, 0);
	deadline = fault_now_ms() + (uint64_t)o.timeout_s * 1000;
	fault_rss_kb();		/* opens its file while descriptors last */
	lim = fault_nofile(o.nofile);
	if (o.conns)
		fault_log("RLIMIT_NOFILE %ld", lim);
	/* an exhaustion test whose limit did not take tests nothing */
	if (o.nofile > 0 && lim != o.nofile) {
		fail("RLIMIT_NOFILE is %ld, not the %ld asked for", lim,
		     o.nofile);
	} else if ((ret = open_common())) {
		fail("open: %s", fi_strerror(-ret));
	} else if (o.conns) {
		conn_mode();
	} else {
		run_stream();
	}
	if (s.pep && (ret = fi_close(&s.pep->fid)))
		fail("fi_close(pep): %d", ret);
	if (s.cq && (ret = fi_close(&s.cq->fid)))
		fail("fi_close(cq): %d", ret);
	if (s.eq && (ret = fi_close(&s.eq->fid)))
		fail("fi_close(eq): %d", ret);
	fault_fab_close(&s.f);
	printf("RESULT %s%s%s\n", s.why[0] ? "FAIL" : "PASS",
	       s.why[0] ? " " : "", s.why);
	return s.why[0] ? 1 : 0;
}
