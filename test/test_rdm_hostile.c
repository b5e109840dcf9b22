/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A hostile peer against the RDM endpoint: an engine connection that
 * presents valid RDM connection data, then sends malformed RDM messages.
 * Each must end in a precise error (a Terminate to the sender, or an
 * error completion with the caller's context), never a crash or a wrong
 * success; afterwards the endpoint still serves an honest peer.
 *
 * The RDM wire image is written here from the description in the man
 * page (RDM WIRE FORMAT), not from the provider's code.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_tagged.h>

#include "iwarp/engine.h"
#include "iwarp/wire.h"
#include "tap.h"
#include "fi_api.h"

#define HDR 40
#define FAKE_PORT 23991		/* the address the hostile peer claims */

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_av *av;
static struct sockaddr_in ep_name;

static void rdm_hdr(uint8_t *p, uint8_t op, uint8_t flags, uint16_t credits,
		    uint32_t len, uint32_t msg_id, uint32_t stag, uint64_t tag,
		    uint64_t addr)
{
	memset(p, 0, HDR);
	p[0] = op;
	p[1] = flags;
	iw_put16(p + 2, credits);
	iw_put32(p + 4, len);
	iw_put32(p + 8, msg_id);
	iw_put32(p + 12, stag);
	iw_put64(p + 16, tag);
	iw_put64(p + 32, addr);
}

/* ---- the hostile peer: one engine connection */

struct bad {
	struct iw_dev *dev;
	struct iw_pd *pd;
	struct iw_qp *qp;
	bool up, down, term_rx, rejected;
	struct iw_err err;
	bool remote;
	uint8_t rbuf[4][128];
};

static void bad_cm(void *arg, struct iw_qp *qp, const struct iw_cm_event *ev)
{
	struct bad *b = arg;

	(void)qp;
	if (ev->type == IW_CM_ESTABLISHED) {
		b->up = true;
		return;
	}
	b->rejected = ev->type == IW_CM_REJECTED;
	if (ev->type == IW_CM_ERROR) {
		b->err = ev->err;
		b->remote = ev->remote;
		b->term_rx = ev->remote;
	}
	b->down = true;
}

/* A receive that completed is posted again: the endpoint's CREDIT
 * messages must not be what ends a long hostile run. */
/* Reads the hostile peer served, counted by its target callback */
static unsigned int reads_served;

static void bad_target(void *arg, struct iw_qp *qp, bool write, void *mr_ctx)
{
	(void)arg;
	(void)qp;
	(void)mr_ctx;
	if (!write)
		reads_served++;
}

static void bad_complete(void *arg, struct iw_qp *qp, const struct iw_wc *wc)
{
	struct bad *b = arg;

	if (wc->op == IW_WC_RECV && wc->status == IW_WC_SUCCESS && wc->ctx) {
		struct iw_sge s = { wc->ctx, sizeof(b->rbuf[0]) };
		struct iw_recv_wr wr = { .ctx = wc->ctx, .sgl = &s,
					 .num_sge = 1 };

		iw_qp_post_recv(qp, &wr);
	}
}

static const struct iw_qp_ops bad_ops = {
	.cm_event = bad_cm,
	.complete = bad_complete,
	.target = bad_target,
};

static void drive(struct bad *b, double secs, bool (*done)(struct bad *))
{
	double end = tap_now() + secs;

	while (tap_now() < end && !(done && done(b))) {
		if (b->qp)
			iw_qp_progress(b->qp);
		fi_cq_read(cq, NULL, 0);	/* the endpoint's progress */
	}
}

static bool is_up(struct bad *b) { return b->up || b->down; }
static bool is_down(struct bad *b) { return b->down; }

/* what bad_open claims as its listening IP, and connects from (0: the
 * default, 127.0.0.1, and whatever the kernel picks) */
static struct in_addr claim_ip, from_ip;
/* flags of its connection data: 0x08 takes the wide window (128) */
static uint8_t bad_flags;

static int bad_open(struct bad *b, uint64_t instance)
{
	struct iw_qp_attr attr = { .ops = &bad_ops, .arg = b };
	struct iw_conn_param p = { 0 };
	uint8_t pd[32] = { 'I', 'W', 'R', 'D', 1, 4 };
	struct in_addr lo = { htonl(INADDR_LOOPBACK) };
	int i;

	memset(b, 0, sizeof(*b));
	pd[4] |= bad_flags;
	struct sockaddr_in from = { .sin_family = AF_INET, .sin_addr = from_ip };

	iw_put16(pd + 6, FAKE_PORT);
	memcpy(pd + 8, claim_ip.s_addr ? &claim_ip : &lo, 4);
	iw_put64(pd + 24, instance);
	if (iw_dev_open(&b->dev) || iw_pd_alloc(b->dev, &b->pd) ||
	    iw_qp_create(b->pd, &attr, &b->qp))
		return -1;
	for (i = 0; i < 4; i++) {
		struct iw_sge s = { b->rbuf[i], sizeof(b->rbuf[i]) };
		struct iw_recv_wr wr = { .ctx = b->rbuf[i], .sgl = &s,
					 .num_sge = 1 };

		iw_qp_post_recv(b->qp, &wr);
	}
	p.pdata = pd;
	p.pdata_len = sizeof(pd);
	/* the endpoint's rendezvous Reads are served, as many as it asks
	 * for (its ORD: 16) */
	p.ird = p.ord = 16;
	if (from_ip.s_addr) {
		p.src = (struct sockaddr *)&from;
		p.src_len = sizeof(from);
	}
	if (iw_qp_connect(b->qp, (struct sockaddr *)&ep_name,
			  sizeof(ep_name), &p))
		return -1;
	drive(b, 5, is_up);
	return b->up ? 0 : -1;
}

static void bad_close(struct bad *b)
{
	if (b->qp)
		iw_qp_destroy(b->qp);
	if (b->pd)
		iw_pd_free(b->pd);
	if (b->dev)
		iw_dev_close(b->dev);
	memset(b, 0, sizeof(*b));
}

static int bad_send(struct bad *b, const void *buf, uint32_t len)
{
	struct iw_sge s = { (void *)buf, len };
	struct iw_send_wr wr = { .op = IW_WR_SEND, .sgl = &s,
				 .num_sge = len ? 1 : 0 };

	return iw_qp_post_send(b->qp, &wr);
}

/* Reads one completion or error of the endpoint, driving the peer. */
static int reap(struct bad *b, double secs, struct fi_cq_tagged_entry *e,
		struct fi_cq_err_entry *err)
{
	double end = tap_now() + secs;

	while (tap_now() < end) {
		ssize_t n = fi_cq_read(cq, e, 1);

		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			fi_cq_readerr(cq, err, 0);
			return -1;
		}
		if (b && b->qp)
			iw_qp_progress(b->qp);
	}
	return 0;
}

/* A message the endpoint must refuse by terminating the stream. */
static void expect_terminate(const char *what, const void *msg, uint32_t len,
			     uint64_t instance)
{
	struct bad b;
	bool ok;

	if (!tap_ok(!bad_open(&b, instance), "%s: hostile peer connects",
		    what)) {
		bad_close(&b);
		return;
	}
	bad_send(&b, msg, len);
	drive(&b, 5, is_down);
	ok = b.down && b.term_rx && b.err.layer == IW_LAYER_DDP &&
	     b.err.etype == DDP_ETYPE_UNTAGGED &&
	     b.err.ecode == DDP_ECODE_UT_NO_BUFFER;
	tap_ok(ok, "%s: the endpoint terminates the stream with DDP "
	       "untagged/no buffer (got %s%u/%u/%u)", what,
	       b.term_rx ? "" : "no Terminate, ", b.err.layer, b.err.etype,
	       b.err.ecode);
	bad_close(&b);
}

static void test_refused(void)
{
	uint8_t m[HDR + 8] = { 0 };

	rdm_hdr(m, 9, 0, 0, 0, 1, 0, 0, 0);
	expect_terminate("unknown op 9", m, HDR, 101);
	rdm_hdr(m, 0, 0, 0, 0, 1, 0, 0, 0);
	expect_terminate("op 0", m, HDR, 102);
	rdm_hdr(m, 1, 0, 0, 0, 1, 0, 0, 0);
	expect_terminate("a Send shorter than the header", m, 5, 103);
	expect_terminate("an empty Send", m, 0, 104);
	rdm_hdr(m, 4, 0, 65, 0, 1, 0, 0, 0);
	expect_terminate("credits beyond the window (65)", m, HDR, 105);
	/* a peer that took the wide window may return up to 128, not more */
	bad_flags = 0x08;
	rdm_hdr(m, 4, 0, 129, 0, 1, 0, 0, 0);
	expect_terminate("wide window: credits beyond it (129)", m, HDR, 107);
	bad_flags = 0;
	/* Write data claimed to an endpoint that takes no remote Writes
	 * (FI_TAGGED only, as Open MPI's mtl ofi): no forged completion */
	rdm_hdr(m, 5, 0, 0, 16, 1, 0, 0, 0);
	expect_terminate("WDATA to an endpoint without FI_RMA", m, HDR, 108);
	/* beyond IWARP_RDM_EAGER_MAX (1 MiB), what any receiver accepts */
	rdm_hdr(m, 1, 1, 0, 1048577, 1, 0, 5, 0);
	expect_terminate("EAGER announcing 1048577 octets", m, HDR + 8, 106);
}

/*
 * A peer that ignores credits: 4 KiB messages nobody receives pass the
 * 64 KiB cap, so no credit comes back; the message one past the window
 * (64, or 128 for a peer that took the wide one) is refused with a
 * Terminate, and the stored ones are intact.
 */
static void test_beyond_credits(int window, uint64_t instance)
{
	static uint8_t m[HDR + 4096], in[4096];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct bad b;
	int i, got = 0, wrong = 0, ctx, n = window + 6;

	bad_flags = window > 64 ? 0x08 : 0;
	if (!tap_ok(!bad_open(&b, instance), "credits (window %d): hostile "
		    "peer connects", window)) {
		bad_close(&b);
		bad_flags = 0;
		return;
	}
	bad_flags = 0;
	for (i = 0; i < n; i++) {
		rdm_hdr(m, 1, 1, 0, 4096, 100 + i, 0, 60, 0);
		memset(m + HDR, i, 4096);
		if (bad_send(&b, m, sizeof(m)))
			break;
		iw_qp_progress(b.qp);
	}
	drive(&b, 5, is_down);
	tap_ok(b.down && b.term_rx && b.err.layer == IW_LAYER_DDP &&
	       b.err.etype == DDP_ETYPE_UNTAGGED &&
	       b.err.ecode == DDP_ECODE_UT_NO_BUFFER,
	       "credits (window %d): sending past the window ends in a "
	       "Terminate (got %s%u/%u/%u)", window, b.term_rx ? "" : "none, ",
	       b.err.layer, b.err.etype, b.err.ecode);
	for (i = 0; i < n; i++) {
		fi_trecv(ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 60, 0, &ctx);
		if (reap(NULL, 0.3, &e, &err) != 1) {
			fi_cancel(&ep->fid, &ctx);
			reap(NULL, 1, &e, &err);
			break;
		}
		got++;
		if (in[0] != i || in[4095] != i)
			wrong++;
	}
	tap_ok(got == window && !wrong, "credits (window %d): exactly the "
	       "messages within the window were stored, intact and in order "
	       "(%d, %d wrong)", window, got, wrong);
	bad_close(&b);
}

/* EAGER announcing more than it carries; a FIN for nothing; an RTS for
 * memory the peer does not have. */
static void test_lies(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	uint8_t m[HDR + 16], in[256];
	struct bad b;
	int ctx1, ctx2, ctx3, got;

	if (!tap_ok(!bad_open(&b, 201), "lies: hostile peer connects")) {
		bad_close(&b);
		return;
	}
	memset(in, 0xee, sizeof(in));
	fi_trecv(ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 7, 0, &ctx1);
	rdm_hdr(m, 1, 1, 0, 100, 1, 0, 7, 0);
	memcpy(m + HDR, "short!!!short!!!", 16);
	bad_send(&b, m, HDR + 16);
	got = reap(&b, 5, &e, &err);
	tap_ok(got < 0 && err.err == FI_EIO && err.op_context == &ctx1,
	       "EAGER announcing 100 octets, carrying 16: error completion "
	       "FI_EIO with the receive's context (got %d, err %d)", got,
	       got < 0 ? err.err : 0);

	/* a FIN for no message is ignored; the next message is fine */
	rdm_hdr(m, 3, 0, 0, 0, 4242, 0, 0, 0);
	bad_send(&b, m, HDR);
	fi_trecv(ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 8, 0, &ctx2);
	rdm_hdr(m, 1, 1, 0, 16, 2, 0, 8, 0);
	memcpy(m + HDR, "honest sixteen!!", 16);
	bad_send(&b, m, HDR + 16);
	got = reap(&b, 5, &e, &err);
	tap_ok(got == 1 && e.op_context == &ctx2 && e.len == 16 &&
	       !memcmp(in, "honest sixteen!!", 16),
	       "a FIN for an unknown message is ignored; the next message "
	       "arrives intact (got %d)", got);

	/* RTS naming memory the peer never registered: the Read fails */
	fi_trecv(ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 9, 0, &ctx3);
	rdm_hdr(m, 2, 1, 0, 200, 3, 0x12345601, 9, 0x1000);
	bad_send(&b, m, HDR);
	got = reap(&b, 5, &e, &err);
	tap_ok(got < 0 && err.err == FI_EIO && err.op_context == &ctx3,
	       "RTS for a bogus STag: error completion FI_EIO with the "
	       "receive's context (got %d, err %d)", got,
	       got < 0 ? err.err : 0);
	bad_close(&b);
}

/*
 * Rendezvous Reads outstanding to a peer on this host (loopback): a
 * window of 512 KiB where a peer across a network gets 2 MiB (more in
 * flight on one host is only cache misses), FI_IWARP_RDM_READ_WINDOW
 * (kept within 128 KiB..64 MiB) otherwise; four Reads are let out
 * whatever the window. The hostile peer sends its RTS and then stops
 * reading: the Read Requests queued in its socket are what the endpoint
 * asked before any came back. Then it serves them and the data must land
 * whole, in Reads of 512 KiB at most.
 */
#define RV_SMALL 20		/* RTS of 96 KiB */
#define RV_K ((size_t)96 << 10)
#define RV_BIG ((size_t)4 << 20)	/* then one of 4 MiB */
#define RV_LEN ((size_t)RV_SMALL * RV_K + RV_BIG)

/* The Read Requests (RDMAP opcode 1) queued in the peer's socket, -1
 * when what is queued does not parse as whole FPDUs (no CRC). */
static int queued_read_requests(struct bad *b)
{
	static uint8_t q[16384];
	ssize_t n = recv(iw_qp_fd(b->qp), q, sizeof(q), MSG_PEEK | MSG_DONTWAIT);
	size_t at = 0;
	int rr = 0;

	if (n < 0)
		n = 0;
	while (at + 4 <= (size_t)n) {
		size_t ulpdu = (size_t)q[at] << 8 | q[at + 1];

		if ((q[at + 3] & 0x0f) == 1)
			rr++;
		at += (2 + ulpdu + 3) & ~(size_t)3;
	}
	return at == (size_t)n && n < (ssize_t)sizeof(q) ? rr : -1;
}

/* Reads of k octets out in a window, of count to ask, within ORD 16 */
static int rv_expect(size_t window, size_t k, int count)
{
	size_t fit = (window > 4 * k ? window : 4 * k) / k;

	if (fit > 16)
		fit = 16;
	return (int)fit < count ? (int)fit : count;
}

static void test_rndv_reads(void)
{
	static uint8_t src[RV_LEN], dst[RV_LEN];
	static int ctx[RV_SMALL + 1];
	const char *env = getenv("FI_IWARP_RDM_READ_WINDOW");
	size_t w = env ? strtoull(env, NULL, 0) : (size_t)512 << 10, i, off;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct iw_mr *mr = NULL;
	int out[2], want[2], got = 0, wrong = 0, phase;
	uint8_t m[HDR];
	struct bad b;
	double end;

	if (w < ((size_t)128 << 10))
		w = (size_t)128 << 10;
	if (w > ((size_t)64 << 20))
		w = (size_t)64 << 20;
	want[0] = rv_expect(w, RV_K, RV_SMALL);
	want[1] = rv_expect(w, 512 << 10, (int)(RV_BIG >> 19));
	for (i = 0; i < RV_LEN; i++)
		src[i] = (uint8_t)(i * 7 + (i >> 12));
	memset(dst, 0, sizeof(dst));
	if (!tap_ok(!bad_open(&b, 501), "rendezvous Reads: the peer on "
		    "127.0.0.1 connects") ||
	    !tap_ok(!iw_mr_reg(b.pd, src, sizeof(src), 0, IW_ACC_REMOTE_READ,
			       &mr), "rendezvous Reads: the peer registers "
		    "its memory")) {
		bad_close(&b);
		return;
	}
	reads_served = 0;
	for (phase = 0, off = 0; phase < 2; phase++) {
		int first = phase ? RV_SMALL : 0, n = phase ? 1 : RV_SMALL, j;
		size_t len = phase ? RV_BIG : RV_K;

		for (j = first; j < first + n; j++, off += len) {
			fi_trecv(ep, dst + off, len, NULL, FI_ADDR_UNSPEC,
				 (uint64_t)(100 + j), 0, &ctx[j]);
			rdm_hdr(m, 2, 1, 0, (uint32_t)len, (uint32_t)(50 + j),
				iw_mr_stag(mr), (uint64_t)(100 + j), off);
			bad_send(&b, m, HDR);
		}
		/* the endpoint alone runs: it asks, nobody answers */
		for (end = tap_now() + 0.3; tap_now() < end;)
			fi_cq_read(cq, NULL, 0);
		out[phase] = queued_read_requests(&b);
		for (end = tap_now() + 20; got < first + n && tap_now() < end;) {
			if (reap(&b, 0.01, &e, &err) == 1) {
				if (e.op_context != &ctx[got] || e.len != len)
					wrong++;
				got++;
			}
		}
	}
	tap_ok(out[0] == want[0], "rendezvous Reads: a window of %zu KiB "
	       "lets %d Reads of 96 KiB out (%d were)", w >> 10, want[0],
	       out[0]);
	tap_ok(out[1] == want[1], "rendezvous Reads: ... and %d Reads of "
	       "512 KiB for a 4 MiB message (%d were)", want[1], out[1]);
	tap_ok(got == RV_SMALL + 1 && !wrong && !memcmp(src, dst, RV_LEN) &&
	       reads_served == RV_SMALL + (RV_BIG >> 19),
	       "rendezvous Reads: all %d messages arrive whole and in order, "
	       "in %d Reads (%d arrived, %d wrong, %u Reads)", RV_SMALL + 1,
	       RV_SMALL + (int)(RV_BIG >> 19), got, wrong, reads_served);
	iw_mr_dereg(mr);
	bad_close(&b);
}

/*
 * A peer sending faster than the endpoint receives: past rdm_unexp_max
 * (64 KiB here) stored octets the endpoint stops returning credits, so
 * the sender stalls at its window; once receives are posted everything
 * arrives in order and the sender finishes.
 */
#define FLOOD_N 200	/* past the wide window two honest peers take */
#define FLOOD_LEN 4096
static void test_flood(struct fid_ep *ep2, struct fid_cq *cq2, fi_addr_t dst)
{
	static char out[FLOOD_N][FLOOD_LEN], in[FLOOD_N][FLOOD_LEN];
	struct fi_cq_tagged_entry e;
	int i, sent = 0, recvd = 0, wrong = 0, ctx[FLOOD_N];
	double end;

	/* the earlier send's completion is not part of the flood */
	for (end = tap_now() + 0.5; tap_now() < end;)
		fi_cq_read(cq2, &e, 1);
	for (i = 0; i < FLOOD_N; i++) {
		memset(out[i], 'a' + i % 26, FLOOD_LEN);
		out[i][0] = (char)i;
		if (fi_tsend(ep2, out[i], FLOOD_LEN, NULL, dst, 50, NULL))
			break;
	}
	for (end = tap_now() + 1.5; tap_now() < end;) {
		if (fi_cq_read(cq2, &e, 1) == 1)
			sent++;
		fi_cq_read(cq, NULL, 0);
	}
	tap_ok(sent > 0 && sent < FLOOD_N,
	       "flood: with nothing received the sender stalls "
	       "(%d of %d sends complete; stored octets are capped)", sent,
	       FLOOD_N);
	for (i = 0; i < FLOOD_N; i++)
		fi_trecv(ep, in[i], FLOOD_LEN, NULL, FI_ADDR_UNSPEC, 50, 0,
			 &ctx[i]);
	for (end = tap_now() + 10; tap_now() < end && (recvd < FLOOD_N ||
					      sent < FLOOD_N);) {
		if (fi_cq_read(cq2, &e, 1) == 1)
			sent++;
		if (fi_cq_read(cq, &e, 1) == 1) {
			i = (int)((int *)e.op_context - ctx);
			if (i != recvd || e.len != FLOOD_LEN ||
			    memcmp(in[i], out[i], FLOOD_LEN))
				wrong++;
			recvd++;
		}
	}
	tap_ok(recvd == FLOOD_N && sent == FLOOD_N && !wrong,
	       "flood: once receives are posted all %d messages arrive in "
	       "order, intact, and every send completes (%d received, %d "
	       "wrong, %d sent)", FLOOD_N, recvd, wrong, sent);
}

/*
 * Random peers: each connects and sends a run of RDM messages made from
 * valid ones with fields drawn at random (op, flags, credits, announced
 * length against carried, message id, STag, address, CQ data), while the
 * endpoint has tagged receives of three sizes posted. Whatever the
 * endpoint makes of them (a message, an error completion, a Terminate),
 * every receive completes exactly once, with its own context and no more
 * octets than its buffer, once the peer is gone and what is left is
 * cancelled. The seed is printed (IW_HOSTILE_SEED repeats a run).
 */
#define RND_ROUNDS 24
#define RND_MSGS 48
#define RND_RECVS 12
#define RND_TAG 0x7000u
#define RND_WDATA (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA)

static uint64_t rnd_state;
/* the endpoint's region when it takes RMA and atomics */
static struct {
	bool on;
	uint32_t key;
	uint64_t addr;
} rnd_target;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static uint32_t pick(uint32_t n) { return (uint32_t)(rnd() % n); }

/* An AREQ at the endpoint's region: operation, datatype and fetch bit
 * (the tag) at random, 1-8 elements, operands of 8 or 16 octets each;
 * key, address and count go wrong now and then. */
static uint32_t rnd_areq(uint8_t *m, uint32_t cap, uint8_t flags,
			 uint16_t credits, uint32_t id, uint32_t stag,
			 uint64_t addr)
{
	uint64_t n = 1 + pick(8);
	uint64_t tag = pick(20) | (uint64_t)pick(10) << 8 |
		       (uint64_t)pick(2) << 16;
	uint32_t len = (uint32_t)(n * 8 * (1 + pick(2))), i;

	if (len > cap - HDR)
		len = cap - HDR;
	rdm_hdr(m, 6, flags, credits, len, id, pick(8) ? rnd_target.key : stag,
		tag, pick(8) ? rnd_target.addr + pick(64) * 8 : addr);
	iw_put64(m + 24, pick(8) ? n : rnd());
	for (i = 0; i < len; i++)
		m[HDR + i] = (uint8_t)rnd();
	return pick(150) ? HDR + len : pick(HDR);
}

/* One message into m (room for cap octets); its length on the wire. Most
 * are well formed, so that a run gets past the first refusal: each field
 * goes wrong on its own now and then. An RTS names good_stag, memory the
 * peer registered, unless its STag is one of the wrong fields. */
static uint32_t rnd_msg(uint8_t *m, uint32_t cap, uint32_t good_stag)
{
	static const uint8_t ops[] = { 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
				       3, 3, 4, 4, 5, 6, 7 };
	uint32_t pay = pick(5) ? pick(96) : pick(cap - HDR + 1);
	uint8_t op = pick(100) ? ops[pick(sizeof(ops))] : (uint8_t)pick(256);
	uint32_t len = op == 2 ? 1 + pick(4096) : op == 6 ? pick(64) : pay;
	uint8_t flags = pick(4) ? 1 : 3;
	uint16_t credits = (uint16_t)pick(2);
	uint32_t id = pick(16), stag = op == 2 ? good_stag : 0, i;
	uint64_t addr = pick(4096);

	if (!pick(100))
		flags = (uint8_t)pick(256);
	if (!pick(100))
		credits = (uint16_t)pick(200);
	if (!pick(50))
		len = pick(2) ? pick(600) : (uint32_t)rnd();
	if (!pick(8))
		stag = (uint32_t)rnd();
	if (!pick(10))
		id = (uint32_t)rnd();
	if (!pick(10))
		addr = rnd();
	if (rnd_target.on && op == 6)
		return rnd_areq(m, cap, flags, credits, id, stag, addr);
	rdm_hdr(m, op, flags, credits, len, id, stag, RND_TAG | pick(4), addr);
	iw_put64(m + 24, pick(4) ? pick(8) : rnd());
	for (i = 0; i < pay; i++)
		m[HDR + i] = (uint8_t)(i * 7 + op);
	return pick(150) ? HDR + pay : pick(HDR);
}

struct rnd_rx {
	uint8_t buf[2048];
	size_t size;
	int done;	/* completions seen for it */
	bool posted;
};

/* Reads what the endpoint completed; a completion that is not one of
 * ours, or too long, counts as bad. */
static void rnd_reap(struct rnd_rx *rx, int *bad)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	ssize_t n;

	while ((n = fi_cq_read(cq, &e, 1)) == 1 || n == -FI_EAVAIL) {
		void *ctx = e.op_context;
		size_t len = e.len;
		int i;

		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			if (fi_cq_readerr(cq, &err, 0) != 1) {
				(*bad)++;
				return;
			}
			ctx = err.op_context;
			len = 0;
		}
		/* a Write's data at an RMA target: no context by design */
		if (rnd_target.on && n == 1 && !ctx &&
		    (e.flags & RND_WDATA) == RND_WDATA)
			continue;
		for (i = 0; i < RND_RECVS; i++)
			if (ctx == &rx[i])
				break;
		if (i == RND_RECVS || len > rx[i].size ||
		    (n == 1 && (e.tag & ~3ull) != RND_TAG)) {
			tap_diag("random peers: completion %s ctx %p (ours: "
				 "%d) len %zu tag %#llx err %d", n == 1 ?
				 "ok" : "error", ctx, i < RND_RECVS, len,
				 n == 1 ? (unsigned long long)e.tag : 0ull,
				 n == 1 ? 0 : err.err);
			(*bad)++;
			continue;
		}
		rx[i].done++;
	}
}

static void test_random_peers(void)
{
	static struct rnd_rx rx[RND_RECVS];
	static uint8_t m[HDR + 1024];
	const char *env = getenv("IW_HOSTILE_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) : 0x1d0c5eed5ull;
	int r, i, sent = 0, rounds = 0, down = 0, lost = 0, twice = 0;
	int bad = 0, stuck = 0;
	double end;

	rnd_state = seed ? seed : 1;
	for (r = 0; r < RND_ROUNDS; r++) {
		struct bad b;
		int k;

		for (i = 0; i < RND_RECVS; i++) {
			rx[i].size = i % 3 == 0 ? 16 : i % 3 == 1 ? 256 :
				     sizeof(rx[i].buf);
			rx[i].done = 0;
			rx[i].posted = !fi_trecv(ep, rx[i].buf, rx[i].size,
						 NULL, FI_ADDR_UNSPEC, RND_TAG,
						 3, &rx[i]);
		}
		if (bad_open(&b, 600 + (uint64_t)r)) {
			bad_close(&b);
			stuck++;
		} else {
			static uint8_t src[8192];
			struct iw_mr *mr = NULL;
			uint32_t good = 0;

			if (!iw_mr_reg(b.pd, src, sizeof(src), 0,
				       IW_ACC_REMOTE_READ, &mr))
				good = iw_mr_stag(mr);
			rounds++;
			for (k = 0; k < RND_MSGS && !b.down; k++) {
				if (bad_send(&b, m, rnd_msg(m, sizeof(m),
							    good)))
					break;
				sent++;
				iw_qp_progress(b.qp);
				rnd_reap(rx, &bad);
			}
			drive(&b, 0.05, is_down);
			down += b.down;
			if (mr)
				iw_mr_dereg(mr);
			bad_close(&b);
		}
		/* the peer is gone: what it left half done must end, and
		 * what is still posted ends by cancel */
		for (end = tap_now() + 5; tap_now() < end;) {
			bool open = false;

			rnd_reap(rx, &bad);
			for (i = 0; i < RND_RECVS; i++) {
				if (!rx[i].posted || rx[i].done)
					continue;
				fi_cancel(&ep->fid, &rx[i]);
				open = true;
			}
			if (!open)
				break;
		}
		for (i = 0; i < RND_RECVS; i++) {
			lost += rx[i].posted && !rx[i].done;
			twice += rx[i].done > 1;
		}
	}
	/* unexpected messages they left would match later tests: drained */
	for (end = tap_now() + 10; tap_now() < end;) {
		struct fi_cq_tagged_entry e;
		struct fi_cq_err_entry err;
		int got;

		if (fi_trecv(ep, rx[0].buf, sizeof(rx[0].buf), NULL,
			     FI_ADDR_UNSPEC, RND_TAG, 3, &rx[0]))
			break;
		got = reap(NULL, 0.2, &e, &err);
		if (got == 0) {
			fi_cancel(&ep->fid, &rx[0]);
			reap(NULL, 1, &e, &err);
			break;
		}
	}
	tap_ok(rounds > RND_ROUNDS / 2 && sent > rounds && !lost && !twice &&
	       !bad, "random peers (seed %#llx): %d of %d connected (%d "
	       "not), %d messages sent, %d ended by the endpoint; every "
	       "receive completed once with its own context (%d never, %d "
	       "twice, %d foreign or too long)", (unsigned long long)seed,
	       rounds, RND_ROUNDS, stuck, sent, down, lost, twice, bad);
}

/* After all that, an honest endpoint is still served. */
static void test_still_serving(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct fid_ep *ep2 = NULL;
	struct fid_cq *cq2 = NULL;
	struct fid_av *av2 = NULL;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	fi_addr_t dst;
	char in[32] = "", out[32] = "still here";
	int ctx, got = 0;
	double end;

	if (fi_endpoint(domain, info, &ep2, NULL) ||
	    fi_cq_open(domain, &cq_attr, &cq2, NULL) ||
	    fi_av_open(domain, &av_attr, &av2, NULL) ||
	    fi_ep_bind(ep2, &cq2->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_ep_bind(ep2, &av2->fid, 0) || fi_enable(ep2) ||
	    fi_av_insert(av2, &ep_name, 1, &dst, 0, NULL) != 1) {
		tap_ok(0, "honest peer: opens");
		goto out;
	}
	fi_trecv(ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 1, 0, &ctx);
	fi_tsend(ep2, out, sizeof(out), NULL, dst, 1, NULL);
	for (end = tap_now() + 10; tap_now() < end && got == 0;) {
		fi_cq_read(cq2, NULL, 0);
		got = reap(NULL, 0.01, &e, &err);
	}
	tap_ok(got == 1 && e.op_context == &ctx && !strcmp(in, out),
	       "after the hostile peers, an honest peer's message arrives "
	       "(got %d)", got);
	test_flood(ep2, cq2, dst);
out:
	if (ep2)
		fi_close(&ep2->fid);
	if (av2)
		fi_close(&av2->fid);
	if (cq2)
		fi_close(&cq2->fid);
}

/*
 * A request speaks for the listening address it claims only when it comes
 * from that IP: claiming 127.0.0.2 from 127.0.0.1 is refused (so a local
 * process cannot pose as a peer on another host), the same claim made
 * from 127.0.0.2 gets in.
 */
static void test_identity(void)
{
	struct bad b;
	int ret;

	inet_pton(AF_INET, "127.0.0.2", &claim_ip);
	ret = bad_open(&b, 401);
	tap_ok(ret && b.rejected, "identity: a request from 127.0.0.1 "
	       "claiming 127.0.0.2:%d is refused (%s)", FAKE_PORT,
	       !ret ? "accepted" : b.rejected ? "MPA reject" : "no reject");
	bad_close(&b);
	from_ip = claim_ip;
	ret = bad_open(&b, 402);
	tap_ok(!ret, "identity: the same claim from 127.0.0.2 is accepted "
	       "(%s)", !ret ? "accepted" : b.rejected ? "MPA reject" :
	       "no connection");
	bad_close(&b);
	claim_ip.s_addr = from_ip.s_addr = 0;
}

/* Opens the endpoint under attack (the globals) with these caps, in a
 * domain of its own on the fabric, which the first call opens. */
static int victim_open(uint64_t caps)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	size_t len = sizeof(ep_name);
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->fabric_attr->prov_name = strdup("iwarp");
	if (caps & (FI_RMA | FI_ATOMIC))
		hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR |
					      FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	ret = fi_getinfo(TEST_API, "127.0.0.1", NULL, FI_SOURCE, hints,
			 &info);
	fi_freeinfo(hints);
	if (!ret && !fabric)
		ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (!ret)
		ret = fi_domain(fabric, info, &domain, NULL);
	if (!ret)
		ret = fi_endpoint(domain, info, &ep, NULL);
	if (!ret)
		ret = fi_cq_open(domain, &cq_attr, &cq, NULL);
	if (!ret)
		ret = fi_av_open(domain, &av_attr, &av, NULL);
	if (!ret)
		ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(ep, &av->fid, 0);
	if (!ret)
		ret = fi_enable(ep);
	if (!ret)
		ret = fi_getname(&ep->fid, &ep_name, &len);
	return ret;
}

static void victim_close(void)
{
	if (ep)
		fi_close(&ep->fid);
	if (av)
		fi_close(&av->fid);
	if (cq)
		fi_close(&cq->fid);
	if (domain)
		fi_close(&domain->fid);
	fi_freeinfo(info);
	ep = NULL;
	av = NULL;
	cq = NULL;
	domain = NULL;
	info = NULL;
}

/*
 * The random peers again, at an endpoint that takes remote Writes and
 * atomics to a registered region: WDATA is a completion there (flagged
 * remote CQ data, no context), and AREQs name the region's key and
 * address, so atomics run with random operations, types and counts.
 */
static void test_random_rma(void)
{
	static uint64_t region[512];
	struct fid_mr *mr = NULL;
	int ret = victim_open(FI_TAGGED | FI_RMA | FI_ATOMIC);

	if (!ret)
		ret = fi_mr_reg(domain, region, sizeof(region),
				FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
				NULL);
	if (tap_ok(!ret, "random peers, RMA target: the endpoint and its "
		   "region open (%d)", ret)) {
		rnd_target.key = (uint32_t)fi_mr_key(mr);
		rnd_target.addr = (uintptr_t)region;
		rnd_target.on = true;
		test_random_peers();
		rnd_target.on = false;
	}
	if (mr)
		fi_close(&mr->fid);
	victim_close();
}

/* "window": the rendezvous case alone, for a run with
 * FI_IWARP_RDM_READ_WINDOW set. */
int main(int argc, char **argv)
{
	int ret;

	/* small, so that the flood test reaches it */
	setenv("FI_IWARP_RDM_UNEXP_MAX", "65536", 0);
	ret = victim_open(FI_TAGGED);
	if (!tap_ok(!ret, "the endpoint under attack opens (%d)", ret))
		return tap_done();
	test_rndv_reads();
	if (argc > 1 && !strcmp(argv[1], "window")) {
		victim_close();
		fi_close(&fabric->fid);
		return tap_done();
	}
	test_refused();
	test_identity();
	test_beyond_credits(64, 301);
	test_beyond_credits(128, 302);
	test_lies();
	test_random_peers();
	test_still_serving();
	victim_close();
	test_random_rma();
	fi_close(&fabric->fid);
	return tap_done();
}
