/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fault_rdm: FI_EP_RDM traffic for the fault tests.
 *
 *   fault_rdm srv -l PORT -n PEERS [options]   one endpoint on PORT
 *   fault_rdm cli -t ADDR:PORT -n PEERS [opts] PEERS endpoints in this
 *                                              process, each a peer
 *
 * Each client endpoint sends HELLO (carrying its own address), then -m
 * tagged messages of 1..-z octets; the server inserts every peer it
 * hears from into its AV and sends -m messages back. Every octet is a
 * function of (seed, stream, sequence) and is checked; each sequence
 * must arrive exactly once. A client finishes with FIN.
 *
 * The client may reach the server through iwproxy (-t is the proxy):
 * RDM peers name themselves in the connection's private data, so the
 * server maps the proxied connection to the client's real address, and
 * its messages back take the same (proxied) connection.
 *
 *   -e ok|err   err: a peer dies; our sends to it must end in error
 *               completions, every posted operation completes once
 *               (receives by fi_cancel at the end), and we close cleanly
 *   -K N        client: SIGKILL ourselves after N messages received
 *   -T S        bound in seconds (default 60)
 *
 * Last line "RESULT PASS|FAIL ...", exit status 0 only on PASS.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault_util.h"

#define MAGIC		0x6977726du	/* "iwrm" */
#define MAX_PEERS	64
#define MAX_MSGS	4096
#define WINDOW		16	/* sends in flight per peer */
#define NRX		64	/* receives posted */
#define TAG		0x5eedULL

/* T_PING: the server (-e err) keeps talking to peers that have not
 * said FIN, so a dead one shows up as failed sends */
enum { T_HELLO = 1, T_DATA, T_FIN, T_PING };

struct rhdr {
	uint32_t magic, type, peer, pad;
	uint64_t seq, len;
	struct sockaddr_in name;
};

/* One operation in flight; its index in ops[] is its tracked context. */
struct op {
	bool rx;
	int peer;
	uint8_t *buf;
};

struct peer {
	struct fid_ep *ep;	/* client: our endpoint for this peer */
	struct sockaddr_in name;
	fi_addr_t addr;		/* where we send */
	bool known, fin, dead;
	uint64_t tx_seq, inflight, got, tx_err;
	uint8_t seen[MAX_MSGS];
};

static struct {
	bool server, expect_err;
	const char *target;
	int port, npeers, timeout_s;
	uint64_t msgs, seed, kill_after;
	size_t max;
} o = { .npeers = 1, .msgs = 100, .seed = 7, .max = 65536,
	.timeout_s = 60 };

static struct {
	struct fault_fab f;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *sep;	/* the server's endpoint */
	struct peer p[MAX_PEERS];
	struct op *ops;
	size_t nops;
	struct op_track tr;
	uint64_t bytes_ok, got_total, eagain, cq_errs, t_err;
	int known;
	char why[200];
} s;

static uint64_t deadline;

#define fail(...) fault_fail(s.why, sizeof(s.why), __VA_ARGS__)

static size_t buf_len(void)
{
	return sizeof(struct rhdr) + o.max;
}

/* A free op slot (its buffer stays allocated), or -1. */
static long op_get(bool rx, int peer)
{
	size_t i;

	for (i = 0; i < s.nops; i++)
		if (!s.tr.state[i]) {
			s.ops[i].rx = rx;
			s.ops[i].peer = peer;
			return (long)i;
		}
	return -1;
}

static int ops_init(void)
{
	size_t i;

	s.nops = NRX + (size_t)o.npeers * (WINDOW + 2);
	s.ops = calloc(s.nops, sizeof(*s.ops));
	if (!s.ops || track_init(&s.tr, s.nops))
		return -1;
	for (i = 0; i < s.nops; i++) {
		s.ops[i].buf = malloc(buf_len());
		if (!s.ops[i].buf)
			return -1;
		/* touched now, so the memory figures count the provider */
		memset(s.ops[i].buf, 0, buf_len());
	}
	return 0;
}

static void ops_free(void)
{
	size_t i;

	for (i = 0; i < s.nops; i++)
		free(s.ops[i].buf);
	free(s.ops);
	track_free(&s.tr);
}

static void *ctx_of(long i)
{
	return (void *)(uintptr_t)(i + 1);
}

static long idx_of(void *ctx)
{
	return (long)(uintptr_t)ctx - 1;
}

static struct fid_ep *ep_of(int peer)
{
	return o.server ? s.sep : s.p[peer].ep;
}

static int post_recv(struct fid_ep *ep, int peer)
{
	long i = op_get(true, peer);
	ssize_t r;

	if (i < 0)
		return -FI_EAGAIN;
	r = fi_trecv(ep, s.ops[i].buf, buf_len(), NULL, FI_ADDR_UNSPEC, TAG,
		     0, ctx_of(i));
	if (!r)
		track_post(&s.tr, (size_t)i);
	return (int)r;
}

static int open_ep(struct fi_info *info, struct fid_ep **ep,
		   struct sockaddr_in *name)
{
	size_t len = sizeof(*name);
	int ret = fi_endpoint(s.f.domain, info, ep, NULL);

	if (ret)
		return ret;
	ret = fi_ep_bind(*ep, &s.cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(*ep, &s.av->fid, 0);
	if (!ret)
		ret = fi_enable(*ep);
	if (!ret)
		ret = fi_getname(&(*ep)->fid, name, &len);
	return ret;
}

/* Sends one message of type to peer; false if it must wait. */
static bool send_msg(int peer, uint32_t type)
{
	struct peer *p = &s.p[peer];
	uint64_t stream = (o.server ? 1000u : 0u) + (uint64_t)peer;
	struct rhdr h = { .magic = MAGIC, .type = type,
			  .peer = (uint32_t)peer };
	long i = op_get(false, peer);
	ssize_t r;

	if (i < 0)
		return false;
	if (type == T_DATA) {
		h.seq = p->tx_seq;
		h.len = pat_size(o.max, o.seed, stream, h.seq);
		pat_fill(s.ops[i].buf + sizeof(h), h.len, o.seed, stream,
			 h.seq);
	}
	if (!o.server) {
		size_t len = sizeof(h.name);

		fi_getname(&p->ep->fid, &h.name, &len);
	}
	memcpy(s.ops[i].buf, &h, sizeof(h));
	r = fi_tsend(ep_of(peer), s.ops[i].buf, sizeof(h) + h.len, NULL,
		     p->addr, TAG, ctx_of(i));
	if (r == -FI_EAGAIN) {
		s.eagain++;
		return false;
	}
	if (r) {
		fail("fi_tsend: %s", fi_strerror((int)-r));
		return false;
	}
	track_post(&s.tr, (size_t)i);
	p->inflight++;
	if (type == T_DATA)
		p->tx_seq++;
	return true;
}

static void maybe_kill(void);

static void note_error(const char *what)
{
	if (!s.t_err) {
		s.t_err = fault_now_ms();
		fault_log("first error: %s", what);
	}
}

/* The server learns a peer from its HELLO. */
static void srv_hello(const struct rhdr *h)
{
	struct peer *p;

	if (h->peer >= (uint32_t)o.npeers) {
		fail("HELLO from peer %u of %d", h->peer, o.npeers);
		return;
	}
	p = &s.p[h->peer];
	if (p->known)
		return;
	p->name = h->name;
	if (fi_av_insert(s.av, &p->name, 1, &p->addr, 0, NULL) != 1) {
		fail("fi_av_insert of peer %u", h->peer);
		return;
	}
	p->known = true;
	s.known++;
}

static void on_message(const uint8_t *buf, size_t len)
{
	struct rhdr h;
	struct peer *p;
	uint64_t stream;
	size_t at;

	if (len < sizeof(h)) {
		fail("short message (%zu octets)", len);
		return;
	}
	memcpy(&h, buf, sizeof(h));
	if (h.magic != MAGIC || h.peer >= (uint32_t)o.npeers) {
		fail("bad header (magic %#x peer %u)", h.magic, h.peer);
		return;
	}
	if (h.type == T_HELLO) {
		if (o.server)
			srv_hello(&h);
		return;
	}
	p = &s.p[h.peer];
	if (h.type == T_FIN) {
		p->fin = true;
		return;
	}
	if (h.type == T_PING)
		return;
	stream = (o.server ? 0u : 1000u) + h.peer;
	if (h.seq >= o.msgs || p->seen[h.seq]) {
		fail("peer %u: message %llu twice or out of range", h.peer,
		     (unsigned long long)h.seq);
		return;
	}
	if (h.len != pat_size(o.max, o.seed, stream, h.seq) ||
	    len != sizeof(h) + h.len) {
		fail("peer %u message %llu: %zu octets", h.peer,
		     (unsigned long long)h.seq, len);
		return;
	}
	at = pat_check(buf + sizeof(h), h.len, o.seed, stream, h.seq);
	if (at != SIZE_MAX) {
		fail("peer %u message %llu: octet %zu differs", h.peer,
		     (unsigned long long)h.seq, at);
		return;
	}
	p->seen[h.seq] = 1;
	p->got++;
	s.got_total++;
	s.bytes_ok += h.len;
	maybe_kill();	/* right here: one progress call may finish all */
}

static void on_completion(void *ctx, size_t len, int err)
{
	long i = idx_of(ctx);
	struct op *op;

	if (i < 0 || (size_t)i >= s.nops) {
		fail("completion with unknown context %p", ctx);
		return;
	}
	op = &s.ops[i];
	if (!track_done(&s.tr, (size_t)i, err != 0))
		fail("context %ld completed twice or unposted", i);
	if (!op->rx) {
		s.p[op->peer].inflight--;
		if (err) {
			s.p[op->peer].tx_err++;
			s.p[op->peer].dead = true;
			note_error(fi_strerror(err));
		}
		return;
	}
	if (err)
		return;		/* a cancelled receive */
	on_message(op->buf, len);
	if (post_recv(ep_of(op->peer), op->peer))
		fail("fi_trecv repost");
}

static bool progress(void)
{
	struct fi_cq_tagged_entry e[16];
	bool any = false;
	ssize_t n, k;

	for (;;) {
		n = fi_cq_read(s.cq, e, 16);
		if (n > 0) {
			any = true;
			for (k = 0; k < n; k++)
				on_completion(e[k].op_context, e[k].len, 0);
			continue;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			if (fi_cq_readerr(s.cq, &err, 0) != 1)
				break;
			any = true;
			s.cq_errs++;
			on_completion(err.op_context, 0,
				      err.err ? err.err : FI_EOTHER);
			continue;
		}
		break;
	}
	return any;
}

/* Sends what the windows allow; true when every stream is sent. */
static bool send_more(void)
{
	bool all = true;
	int i;

	for (i = 0; i < o.npeers; i++) {
		struct peer *p = &s.p[i];

		if (!p->known || p->dead) {
			all &= p->dead;
			continue;
		}
		while (p->tx_seq < o.msgs && p->inflight < WINDOW)
			if (!send_msg(i, T_DATA))
				break;
		all &= p->tx_seq == o.msgs;
	}
	return all;
}

static bool done(void)
{
	int i;

	for (i = 0; i < o.npeers; i++) {
		struct peer *p = &s.p[i];

		if (p->dead)
			continue;
		if (!p->known || p->got < o.msgs || p->tx_seq < o.msgs ||
		    p->inflight)
			return false;
		if (o.server && !p->fin)
			return false;
	}
	return true;
}

static bool all_dead_or_done(void)
{
	int i, dead = 0;

	for (i = 0; i < o.npeers; i++)
		dead += s.p[i].dead;
	return dead && done();
}

static void ping_live_peers(void)
{
	static uint64_t next;
	int i;

	if (!o.expect_err || !o.server || fault_now_ms() < next)
		return;
	next = fault_now_ms() + 20;
	for (i = 0; i < o.npeers; i++) {
		struct peer *p = &s.p[i];

		if (p->known && !p->dead && !p->fin && p->tx_seq == o.msgs &&
		    p->inflight < WINDOW)
			send_msg(i, T_PING);
	}
}

static void maybe_kill(void)
{
	if (o.kill_after && s.got_total >= o.kill_after) {
		printf("KILL %llu\n", (unsigned long long)fault_now_ms());
		fflush(stdout);
		raise(SIGKILL);
	}
}

/* Cancels the receives still posted; each must complete once. */
static void cancel_receives(void)
{
	uint64_t end = fault_now_ms() + 3000;
	size_t i;

	for (i = 0; i < s.nops; i++)
		if (s.tr.state[i] && s.ops[i].rx)
			fi_cancel(&ep_of(s.ops[i].peer)->fid, ctx_of((long)i));
	while (track_outstanding(&s.tr) && fault_now_ms() < end)
		if (!progress())
			fault_sleep_ms(1);
}

static int setup(void)
{
	struct fi_info *h = fault_hints(FI_EP_RDM);
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED,
				  .size = 4096 };
	struct fi_av_attr ava = { .type = FI_AV_MAP };
	struct sockaddr_in name;
	char port[16];
	int ret, i, k;

	snprintf(port, sizeof(port), "%d", o.port);
	ret = o.server ? fault_fab_open(&s.f, h, "127.0.0.1", port, FI_SOURCE)
		       : fault_fab_open(&s.f, h, NULL, NULL, 0);
	if (!ret)
		ret = fi_cq_open(s.f.domain, &cqa, &s.cq, NULL);
	if (!ret)
		ret = fi_av_open(s.f.domain, &ava, &s.av, NULL);
	if (ret || ops_init())
		return ret ? ret : -FI_ENOMEM;
	if (o.server) {
		ret = open_ep(s.f.info, &s.sep, &name);
		for (k = 0; !ret && k < NRX; k++)
			ret = post_recv(s.sep, 0);
		return ret;
	}
	if (fault_parse_addr(o.target, &name))
		return -FI_EINVAL;
	for (i = 0; i < o.npeers; i++) {
		struct peer *p = &s.p[i];

		ret = open_ep(s.f.info, &p->ep, &p->name);
		if (ret)
			return ret;
		if (!i && fi_av_insert(s.av, &name, 1, &p->addr, 0, NULL) != 1)
			return -FI_EINVAL;
		p->addr = s.p[0].addr;
		p->known = true;
		for (k = 0; k < NRX / o.npeers + 2; k++)
			ret = ret ? ret : post_recv(p->ep, i);
		if (ret)
			return ret;
	}
	return 0;
}

static void run(void)
{
	long rss0 = fault_rss_kb(), rss1 = 0;
	size_t heap0 = mallinfo2().uordblks, heap1 = 0;
	uint64_t t0 = fault_now_ms(), t_all = 0;
	bool hello_sent = o.server, fin_sent = false;
	int i;

	while (fault_now_ms() < deadline && !s.why[0]) {
		bool any;

		maybe_kill();
		ping_live_peers();
		if (!hello_sent) {
			for (i = 0; i < o.npeers; i++)
				while (!send_msg(i, T_HELLO) &&
				       fault_now_ms() < deadline && !s.why[0])
					progress();
			hello_sent = true;
		}
		if (send_more() && !t_all && (!o.server ||
					      s.known == o.npeers)) {
			t_all = fault_now_ms();
			rss1 = fault_rss_kb();
			heap1 = mallinfo2().uordblks;
		}
		any = progress();
		if (done() || (o.expect_err && all_dead_or_done())) {
			if (o.server || fin_sent)
				break;
			for (i = 0; i < o.npeers; i++)
				while (!send_msg(i, T_FIN) &&
				       fault_now_ms() < deadline)
					progress();
			fin_sent = true;
		}
		if (!any)
			fault_sleep_ms(0);
	}
	if (!done() && !o.expect_err)
		fail("deadline: %llu of %llu messages received",
		     (unsigned long long)s.got_total,
		     (unsigned long long)(o.msgs * (uint64_t)o.npeers));
	/* the FINs (client) leave before we close */
	while (fault_now_ms() < deadline && !o.expect_err && !s.why[0]) {
		bool busy = false;

		for (i = 0; i < o.npeers; i++)
			busy |= s.p[i].inflight != 0;
		if (!busy)
			break;
		progress();
	}
	if (!o.server) {
		uint64_t end = fault_now_ms() + 200;

		while (fault_now_ms() < end)
			progress();
	}
	cancel_receives();
	printf("RESULT-DATA peers=%d msgs_rx=%llu bytes_verified=%llu "
	       "eagain=%llu secs=%.2f posted=%llu completed=%llu "
	       "errors=%llu doubles=%llu outstanding=%llu cq_errors=%llu "
	       "t_err=%llu rss_kb=%ld..%ld per_peer_kb=%.1f "
	       "heap_per_peer_kb=%.1f\n", o.npeers,
	       (unsigned long long)s.got_total,
	       (unsigned long long)s.bytes_ok, (unsigned long long)s.eagain,
	       (double)(fault_now_ms() - t0) / 1000,
	       (unsigned long long)s.tr.posted, (unsigned long long)s.tr.done,
	       (unsigned long long)s.tr.errors,
	       (unsigned long long)s.tr.doubles,
	       (unsigned long long)track_outstanding(&s.tr),
	       (unsigned long long)s.cq_errs, (unsigned long long)s.t_err,
	       rss0, rss1, rss1 ? (double)(rss1 - rss0) / o.npeers : 0,
	       heap1 ? ((double)heap1 - (double)heap0) / 1024 / o.npeers : 0);
	if (s.tr.doubles || s.tr.strays)
		fail("double or stray completions");
	if (track_outstanding(&s.tr))
		fail("%llu posted operations never completed",
		     (unsigned long long)track_outstanding(&s.tr));
	if (o.expect_err && !s.t_err)
		fail("no error completion for the dead peer");
	if (!o.expect_err && s.t_err)
		fail("unexpected error completion");
}

static void teardown(void)
{
	uint64_t t0 = fault_now_ms();
	int i, ret;

	for (i = 0; i < o.npeers; i++)
		if (s.p[i].ep && (ret = fi_close(&s.p[i].ep->fid)))
			fail("fi_close(ep): %d", ret);
	if (s.sep && (ret = fi_close(&s.sep->fid)))
		fail("fi_close(ep): %d", ret);
	if (s.av && (ret = fi_close(&s.av->fid)))
		fail("fi_close(av): %d", ret);
	if (s.cq && (ret = fi_close(&s.cq->fid)))
		fail("fi_close(cq): %d", ret);
	fault_fab_close(&s.f);
	ops_free();
	printf("RESULT-DATA close_ms=%llu\n",
	       (unsigned long long)(fault_now_ms() - t0));
	if (fault_now_ms() - t0 > 5000)
		fail("closing took %llu ms",
		     (unsigned long long)(fault_now_ms() - t0));
}

static void usage(void)
{
	fprintf(stderr, "usage: fault_rdm srv -l PORT | cli -t ADDR:PORT "
		"[-n PEERS] [-m N] [-z MAX] [-x SEED] [-e ok|err] [-K N] "
		"[-T S]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int c, ret;

	if (argc < 2)
		usage();
	o.server = !strcmp(argv[1], "srv");
	if (!o.server && strcmp(argv[1], "cli"))
		usage();
	optind = 2;
	while ((c = getopt(argc, argv, "l:t:n:m:z:x:e:K:T:")) != -1)
		switch (c) {
		case 'l': o.port = atoi(optarg); break;
		case 't': o.target = optarg; break;
		case 'n': o.npeers = atoi(optarg); break;
		case 'm': o.msgs = strtoull(optarg, NULL, 0); break;
		case 'z': o.max = strtoull(optarg, NULL, 0); break;
		case 'x': o.seed = strtoull(optarg, NULL, 0); break;
		case 'e': o.expect_err = !strcmp(optarg, "err"); break;
		case 'K': o.kill_after = strtoull(optarg, NULL, 0); break;
		case 'T': o.timeout_s = atoi(optarg); break;
		default: usage();
		}
	if ((o.server && o.port <= 0) || (!o.server && !o.target) ||
	    o.npeers < 1 || o.npeers > MAX_PEERS || !o.msgs ||
	    o.msgs > MAX_MSGS || !o.max || o.max > (1 << 22))
		usage();
	fault_set_name(o.server ? "fault_rdm srv" : "fault_rdm cli");
	setvbuf(stdout, NULL, _IOLBF, 0);
	deadline = fault_now_ms() + (uint64_t)o.timeout_s * 1000;
	fault_nofile(-1);
	ret = setup();
	if (ret)
		fail("setup: %s", fi_strerror(-ret));
	else
		run();
	teardown();
	printf("RESULT %s%s%s\n", s.why[0] ? "FAIL" : "PASS",
	       s.why[0] ? " " : "", s.why);
	return s.why[0] ? 1 : 0;
}
