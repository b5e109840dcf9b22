/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Engine tests over real loopback TCP, driven through the fds and
 * deadlines the engine exposes (engine_util.c):
 *
 *	every opcode and payload size in peer-to-peer and client-server
 *	mode, CRC and markers on and off; RTR choice; MPA rev 1 and the
 *	rev-1 retry; reject and private data; IRD/ORD negotiation (RFC 6581
 *	§9.1) as a table and end to end; ordering and fencing (RFC 5040
 *	§5.5); STag invalidation and remote access errors; graceful and
 *	abortive close; shared receive queues; peek placement; a pipeline
 *	of small sends; a receiver that stops reading.
 *
 * Each check group prints one TAP line; details of a failure follow as
 * "#" lines.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "engine_util.h"
#include "tap.h"
#include "tcp_info.h"

static struct eu_env env;
#define LP (&env.loop)

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

/* Puts "prefix: " in front of the current reason. */
static void why_prefix(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static void why_prefix(const char *fmt, ...)
{
	char old[sizeof(why)];
	size_t n;
	va_list ap;

	memcpy(old, why, sizeof(old));
	va_start(ap, fmt);
	n = (size_t)vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (n < sizeof(why))
		snprintf(why + n, sizeof(why) - n, ": %.900s", old);
}

static int report(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int report(bool ok, const char *fmt, ...)
{
	char name[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	tap_ok(ok, "%s", name);
	if (!ok)
		tap_diag("  %s", why[0] ? why : "(no detail)");
	why[0] = 0;
	return ok;
}

static void qp_diag(const struct eu_qp *q)
{
	int i;

	for (i = 0; i < q->n_ev; i++) {
		const struct eu_ev *e = &q->ev[i];

		if (e->type == IW_CM_ESTABLISHED ||
		    e->type == IW_CM_CONNECT_REQUEST) {
			tap_diag("  %s: %s rev %u rtr_used %#x ird/ord %u/%u",
				 q->name, eu_ev_str(e->type), e->rev,
				 e->rtr_used, e->ird, e->ord);
			continue;
		}
		tap_diag("  %s: %s status %d err %s (%s) remote %d", q->name,
			 eu_ev_str(e->type), e->status, eu_err_str(&e->err),
			 iw_err_str(e->err.layer, e->err.etype, e->err.ecode),
			 e->remote);
	}
	if (q->qp)
		tap_diag("  %s: state %s, %zu completions", q->name,
			 iw_qp_state_str(iw_qp_state(q->qp)), q->n_wc);
}

static void pair_diag(const struct eu_pair *p)
{
	qp_diag(&p->a);
	qp_diag(&p->b);
	if (p->lst.n_req || p->lst.accept_rc)
		tap_diag("  listener: %d request(s), last accept/reject %d",
			 p->lst.n_req, p->lst.accept_rc);
}

static unsigned int ctx_seq;

static void *nctx(void)
{
	return (void *)(uintptr_t)(0x100000u + ++ctx_seq);
}

static void cfg_default(struct eu_pair_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->init.ird = 16;
	c->init.ord = 16;
	c->resp.ird = 16;
	c->resp.ord = 16;
	c->timeout_ms = 5000;
}

/* Connects; on failure reports why and leaves the pair for eu_pair_fini. */
static bool connect_pair(struct eu_pair *p, const struct eu_pair_cfg *c)
{
	int rc = eu_pair_connect(p, &env, c);

	if (!rc)
		return true;
	bad("connection setup failed: %d (%s)", rc, strerror(-rc));
	pair_diag(p);
	return false;
}

/* ---- waiting for a set of completions */

struct want {
	struct eu_pair *p;
	int n;
	struct eu_qp *q[4];
	const void *ctx[4];
};

static void want_add(struct want *w, struct eu_qp *q, const void *ctx)
{
	w->q[w->n] = q;
	w->ctx[w->n++] = ctx;
}

static bool done_want(void *arg)
{
	struct want *w = arg;
	int i;

	if (w->p && (eu_qp_failed(&w->p->a) || eu_qp_failed(&w->p->b)))
		return true;
	for (i = 0; i < w->n; i++)
		if (!eu_find_wc(w->q[i], w->ctx[i]))
			return false;
	return true;
}

static bool wait_want(struct want *w, int tmo)
{
	if (eu_run(LP, done_want, w, tmo))
		return true;
	return bad("timeout after %d ms waiting for %d completions", tmo,
		   w->n);
}

/* One completion for ctx, successful, with these values. */
static bool check_wc(const struct eu_qp *q, const void *ctx,
		     enum iw_wc_opcode op, uint32_t len, unsigned int flags,
		     uint32_t inv_stag)
{
	const struct iw_wc *wc = eu_find_wc(q, ctx);
	int n = eu_count_ctx(q, ctx);

	if (n != 1)
		return bad("%s: %d completions for one request", q->name, n);
	if (wc->status != IW_WC_SUCCESS)
		return bad("%s: status %s err %s", q->name,
			   eu_status_str(wc->status), eu_err_str(&wc->err));
	if (wc->op != op)
		return bad("%s: opcode %d, want %d", q->name, wc->op, op);
	if (wc->byte_len != len)
		return bad("%s: byte_len %u, want %u", q->name, wc->byte_len,
			   len);
	if (wc->flags != flags)
		return bad("%s: flags %#x, want %#x", q->name, wc->flags,
			   flags);
	if ((flags & IW_WC_F_INV) && wc->inv_stag != inv_stag)
		return bad("%s: inv_stag %#x, want %#x", q->name,
			   wc->inv_stag, inv_stag);
	return true;
}

/* ---- buffers shared by the transfer tests: one set per side */

#define SRC_OFF 3		/* unaligned on purpose */
#define DST_OFF 5
#define SLACK 64		/* canary octets after a sink */
#define RSLACK 8		/* receive room beyond the message */
#define CANARY 0xa5
#define BIG_LEN ((size_t)4 << 20)
#define INV_LEN 4096

struct side {
	struct eu_buf src;	/* remote read source, send source */
	struct eu_buf dst;	/* remote write sink, receive sink */
	struct eu_buf inv;	/* target of Send with Invalidate */
};

static struct side sd[2];

static bool sides_alloc(void)
{
	unsigned int rd = IW_ACC_REMOTE_READ;
	unsigned int wr = IW_ACC_LOCAL_WRITE | IW_ACC_REMOTE_WRITE;
	unsigned int inv = wr | IW_ACC_REMOTE_INVALIDATE;
	size_t len = BIG_LEN + 4096;
	int i;

	for (i = 0; i < 2; i++) {
		/* side 0 in virtual-address mode, side 1 in offset mode */
		if (eu_buf_alloc(&sd[i].src, env.pd, len, rd, i == 0) ||
		    eu_buf_alloc(&sd[i].dst, env.pd, len, wr, i == 0) ||
		    eu_buf_alloc(&sd[i].inv, env.pd, INV_LEN, inv, i == 0))
			return false;
	}
	return true;
}

static void sides_free(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		eu_buf_free(&sd[i].src);
		eu_buf_free(&sd[i].dst);
		eu_buf_free(&sd[i].inv);
	}
}

/*
 * Splits [base, base + len) into n entries of uneven sizes; short
 * buffers get one entry.
 */
static int split(struct iw_sge *sg, uint8_t *base, size_t len, int n)
{
	static const unsigned int w[IW_MAX_SGE] = { 1, 5, 2, 7, 3, 4, 1, 9 };
	unsigned int sum = 0;
	size_t off = 0, part;
	int i;

	if (n <= 1 || len < (size_t)n * 16) {
		sg[0] = (struct iw_sge){ .addr = base, .len = (uint32_t)len };
		return 1;
	}
	for (i = 0; i < n; i++)
		sum += w[i];
	for (i = 0; i < n - 1; i++) {
		part = len * w[i] / sum;
		sg[i] = (struct iw_sge){ .addr = base + off,
					 .len = (uint32_t)part };
		off += part;
	}
	sg[n - 1] = (struct iw_sge){ .addr = base + off,
				     .len = (uint32_t)(len - off) };
	return n;
}

/* Compares a sink (at sink_base + DST_OFF) with the source; canaries. */
static bool check_data(const uint8_t *sink_base, const uint8_t *src,
		       size_t len)
{
	const uint8_t *d = sink_base + DST_OFF;
	size_t i;

	if (eu_hash(d, len) != eu_hash(src, len)) {
		for (i = 0; i < len && d[i] == src[i]; i++)
			;
		if (i < len)
			return bad("data differs at offset %zu of %zu: %02x, want %02x",
				   i, len, d[i], src[i]);
	}
	if (eu_find_not(sink_base, DST_OFF, CANARY) != DST_OFF)
		return bad("octets before the sink were written");
	i = eu_find_not(d + len, SLACK, CANARY);
	if (i != SLACK)
		return bad("octet %zu after the end of the sink was written",
			   i);
	return true;
}

/* ---- the opcode matrix */

struct mx {
	struct eu_pair *p;
	struct eu_qp *q[2];	/* 0 initiator, 1 responder */
	uint32_t mulpdu[2];	/* per side, as its ESTABLISHED reported */
	uint64_t seed;
	bool broken;
};

static void mx_init(struct mx *m, struct eu_pair *p)
{
	const struct eu_ev *e;
	int i;

	memset(m, 0, sizeof(*m));
	m->p = p;
	m->q[0] = &p->a;
	m->q[1] = &p->b;
	for (i = 0; i < 2; i++) {
		e = eu_est(m->q[i]);
		m->mulpdu[i] = e ? e->mulpdu : 0;
	}
	m->broken = !p->up;
	m->seed = 1;
}

static bool is_send(enum iw_wr_opcode op)
{
	return op == IW_WR_SEND || op == IW_WR_SEND_SE ||
	       op == IW_WR_SEND_INV || op == IW_WR_SEND_SE_INV;
}

static const char *op_name(enum iw_wr_opcode op)
{
	static const char *const n[] = {
		[IW_WR_SEND] = "Send",
		[IW_WR_SEND_SE] = "SendSE",
		[IW_WR_SEND_INV] = "SendInv",
		[IW_WR_SEND_SE_INV] = "SendSEInv",
		[IW_WR_WRITE] = "Write",
		[IW_WR_READ] = "Read",
	};

	return n[op];
}

/* The Send family: t posts a receive, r sends. */
static bool xfer_send(struct mx *m, int r, enum iw_wr_opcode op, size_t len,
		      bool multi)
{
	int t = !r;
	uint8_t *src = sd[r].src.addr + SRC_OFF;
	bool inv = op == IW_WR_SEND_INV || op == IW_WR_SEND_SE_INV;
	bool se = op == IW_WR_SEND_SE || op == IW_WR_SEND_SE_INV;
	unsigned int fl = (se ? IW_WC_F_SE : 0) | (inv ? IW_WC_F_INV : 0);
	struct iw_sge ssg[IW_MAX_SGE], rsg[IW_MAX_SGE];
	struct iw_recv_wr rwr = { .ctx = nctx(), .sgl = rsg };
	struct iw_send_wr swr = { .ctx = nctx(), .op = op, .sgl = ssg,
				  .flags = IW_WR_SIGNALED };
	struct want w = { .p = m->p };
	uint32_t stag = sd[t].inv.stag;
	int rc;

	eu_fill(src, len, m->seed++);
	memset(sd[t].dst.addr, CANARY, DST_OFF + len + SLACK);
	rwr.num_sge = split(rsg, sd[t].dst.addr + DST_OFF, len + RSLACK,
			    multi ? 4 : 1);
	swr.num_sge = split(ssg, src, len, multi ? 3 : 1);
	swr.inv_stag = inv ? stag : 0;
	rc = iw_qp_post_recv(m->q[t]->qp, &rwr);
	if (rc)
		return bad("post_recv: %d", rc);
	rc = iw_qp_post_send(m->q[r]->qp, &swr);
	if (rc)
		return bad("post_send: %d", rc);
	want_add(&w, m->q[t], rwr.ctx);
	want_add(&w, m->q[r], swr.ctx);
	if (!wait_want(&w, 10000))
		return false;
	if (!check_wc(m->q[t], rwr.ctx, IW_WC_RECV, (uint32_t)len, fl, stag) ||
	    !check_wc(m->q[r], swr.ctx, IW_WC_SEND, (uint32_t)len, 0, 0) ||
	    !check_data(sd[t].dst.addr, src, len))
		return false;
	if (!inv)
		return true;
	if (iw_mr_valid(sd[t].inv.mr))
		return bad("the invalidated region is still valid");
	sd[t].inv.stag = iw_mr_rekey(sd[t].inv.mr);
	return true;
}

/* Write, then a zero-length Send that tells t the data is in place. */
static bool xfer_write(struct mx *m, int r, size_t len, bool multi)
{
	int t = !r;
	uint8_t *src = sd[r].src.addr + SRC_OFF;
	struct iw_sge ssg[IW_MAX_SGE];
	struct iw_recv_wr rwr = { .ctx = nctx() };
	struct iw_send_wr wwr = { .ctx = nctx(), .op = IW_WR_WRITE,
				  .flags = IW_WR_SIGNALED, .sgl = ssg };
	struct iw_send_wr swr = { .ctx = nctx(), .op = IW_WR_SEND,
				  .flags = IW_WR_SIGNALED };
	struct want w = { .p = m->p };
	int rc;

	eu_fill(src, len, m->seed++);
	memset(sd[t].dst.addr, CANARY, DST_OFF + len + SLACK);
	wwr.num_sge = split(ssg, src, len, multi ? 3 : 1);
	wwr.rstag = sd[t].dst.stag;
	wwr.rto = eu_to(&sd[t].dst, DST_OFF);
	rc = iw_qp_post_recv(m->q[t]->qp, &rwr);
	if (!rc)
		rc = iw_qp_post_send(m->q[r]->qp, &wwr);
	if (!rc)
		rc = iw_qp_post_send(m->q[r]->qp, &swr);
	if (rc)
		return bad("post: %d", rc);
	want_add(&w, m->q[t], rwr.ctx);
	want_add(&w, m->q[r], wwr.ctx);
	want_add(&w, m->q[r], swr.ctx);
	if (!wait_want(&w, 10000))
		return false;
	return check_wc(m->q[r], wwr.ctx, IW_WC_WRITE, (uint32_t)len, 0, 0) &&
	       check_wc(m->q[r], swr.ctx, IW_WC_SEND, 0, 0, 0) &&
	       check_wc(m->q[t], rwr.ctx, IW_WC_RECV, 0, 0, 0) &&
	       check_data(sd[t].dst.addr, src, len);
}

/* r reads t's source into its own sink. */
static bool xfer_read(struct mx *m, int r, size_t len, bool multi)
{
	int t = !r;
	uint8_t *src = sd[t].src.addr + SRC_OFF;
	struct iw_sge dsg[IW_MAX_SGE];
	struct iw_send_wr rd = { .ctx = nctx(), .op = IW_WR_READ,
				 .flags = IW_WR_SIGNALED, .sgl = dsg };
	struct want w = { .p = m->p };
	int rc;

	eu_fill(src, len, m->seed++);
	memset(sd[r].dst.addr, CANARY, DST_OFF + len + SLACK);
	rd.num_sge = split(dsg, sd[r].dst.addr + DST_OFF, len, multi ? 4 : 1);
	rd.rstag = sd[t].src.stag;
	rd.rto = eu_to(&sd[t].src, SRC_OFF);
	rc = iw_qp_post_send(m->q[r]->qp, &rd);
	if (rc)
		return bad("post_send: %d", rc);
	want_add(&w, m->q[r], rd.ctx);
	if (!wait_want(&w, 10000))
		return false;
	return check_wc(m->q[r], rd.ctx, IW_WC_READ, (uint32_t)len, 0, 0) &&
	       check_data(sd[r].dst.addr, src, len);
}

static bool xfer(struct mx *m, int r, enum iw_wr_opcode op, size_t len,
		 bool multi)
{
	if (m->broken)
		return bad("the connection broke earlier");
	if (is_send(op))
		return xfer_send(m, r, op, len, multi);
	if (op == IW_WR_WRITE)
		return xfer_write(m, r, len, multi);
	return xfer_read(m, r, len, multi);
}

/*
 * Payload sizes around the boundaries that matter: tiny, MULPDU (the
 * largest ULPDU) and MULPDU minus the DDP/RDMAP header (the largest
 * payload of one FPDU) of the side that sends the data, then large.
 */
static int build_sizes(size_t *s, uint32_t mulpdu, size_t hdr, bool big)
{
	static const size_t fixed[] = { 0, 1, 3, 4, 5, 1000 };
	int n = 0;
	size_t i;

	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		s[n++] = fixed[i];
	if (mulpdu > hdr + 1) {
		s[n++] = mulpdu - hdr - 1;
		s[n++] = mulpdu - hdr;
		s[n++] = mulpdu - hdr + 1;
		s[n++] = (size_t)mulpdu - 1;
		s[n++] = mulpdu;
		s[n++] = (size_t)mulpdu + 1;
	}
	s[n++] = 65536 + 7;
	if (big) {
		s[n++] = (1u << 20) + 13;
		s[n++] = BIG_LEN;
	}
	return n;
}

static bool run_sizes(struct mx *m, int r, enum iw_wr_opcode op, bool big)
{
	/* Read Responses come from the other side */
	int data_tx = op == IW_WR_READ ? !r : r;
	size_t hdr = is_send(op) ? DDP_UNTAGGED_HDR : DDP_TAGGED_HDR;
	size_t sizes[16];
	int i, n;

	n = build_sizes(sizes, m->mulpdu[data_tx], hdr, big);
	for (i = 0; i < n; i++) {
		if (xfer(m, r, op, sizes[i], i & 1))
			continue;
		why_prefix("size %zu%s", sizes[i], i & 1 ? " (multi-SGE)" : "");
		if (eu_qp_failed(m->q[0]) || eu_qp_failed(m->q[1]) ||
		    strstr(why, "timeout")) {
			m->broken = true;
			pair_diag(m->p);
		}
		return false;
	}
	return true;
}

struct combo {
	bool cs;		/* client-server */
	bool crc;
	bool mk_init;		/* initiator asks for markers */
	bool mk_resp;		/* responder asks for markers */
	uint32_t mulpdu;	/* attr.mulpdu on both sides */
	bool big;		/* 1 MiB + 13 and 4 MiB too */
};

static bool check_negotiated(const struct eu_pair *p, const struct combo *c)
{
	const struct eu_ev *a = eu_est(&p->a), *b = eu_est(&p->b);

	if (!a || !b)
		return bad("no ESTABLISHED event");
	if (a->crc != c->crc || b->crc != c->crc)
		return bad("crc %d/%d, want %d", a->crc, b->crc, c->crc);
	if (a->markers_rx != c->mk_init || b->markers_tx != c->mk_init ||
	    a->markers_tx != c->mk_resp || b->markers_rx != c->mk_resp)
		return bad("markers init rx/tx %d/%d resp rx/tx %d/%d",
			   a->markers_rx, a->markers_tx, b->markers_rx,
			   b->markers_tx);
	if (a->p2p == c->cs || b->p2p == c->cs)
		return bad("p2p flags %d/%d in client-server %d", a->p2p,
			   b->p2p, c->cs);
	if (!a->mulpdu || !b->mulpdu)
		return bad("mulpdu %u/%u", a->mulpdu, b->mulpdu);
	if (c->mulpdu && (a->mulpdu > c->mulpdu || b->mulpdu > c->mulpdu))
		return bad("mulpdu %u/%u above the requested %u", a->mulpdu,
			   b->mulpdu, c->mulpdu);
	return true;
}

static const enum iw_wr_opcode all_ops[] = {
	IW_WR_SEND, IW_WR_SEND_SE, IW_WR_SEND_INV, IW_WR_SEND_SE_INV,
	IW_WR_WRITE, IW_WR_READ,
};
#define N_OPS (sizeof(all_ops) / sizeof(all_ops[0]))

static void run_combo(const struct combo *c)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct mx m;
	char name[64];
	size_t i;
	int r;
	bool ok;

	snprintf(name, sizeof(name), "%s crc%d mk%d%d%s", c->cs ? "cs" : "p2p",
		 c->crc, c->mk_init, c->mk_resp, c->mulpdu ? " mulpdu" : "");
	cfg_default(&cfg);
	cfg.init.client_server = c->cs;
	cfg.init.crc = c->crc;
	cfg.resp.crc = c->crc;
	cfg.init.markers = c->mk_init;
	cfg.resp.markers = c->mk_resp;
	cfg.init_attr.mulpdu = c->mulpdu;
	cfg.resp_attr.mulpdu = c->mulpdu;
	ok = connect_pair(&p, &cfg) && check_negotiated(&p, c);
	report(ok, "matrix %s: connected, negotiated values", name);
	mx_init(&m, &p);
	tap_diag("  %s: mulpdu %u/%u", name, m.mulpdu[0], m.mulpdu[1]);
	for (r = 0; r < 2; r++) {
		for (i = 0; i < N_OPS; i++) {
			ok = run_sizes(&m, r, all_ops[i], c->big && !r);
			report(ok, "matrix %s: %s %s, all sizes%s", name,
			       r ? "resp->init" : "init->resp",
			       op_name(all_ops[i]), c->big && !r ? " to 4 MiB" :
								  "");
		}
	}
	eu_pair_fini(&p);
}

static void test_matrix(void)
{
	struct combo c;
	int cs, crc, mk;

	for (cs = 0; cs < 2; cs++) {
		for (crc = 0; crc < 2; crc++) {
			for (mk = 0; mk < 4; mk++) {
				memset(&c, 0, sizeof(c));
				c.cs = cs;
				c.crc = crc;
				c.mk_init = mk & 1;
				c.mk_resp = mk >> 1;
				c.big = (mk == 0 && crc) || (mk == 3 && !crc);
				c.mulpdu = mk == 2 && !crc ? 1400 : 0;
				run_combo(&c);
			}
		}
	}
}

/* Compares the first len octets of two scatter lists. */
static bool cmp_sgl(const struct iw_sge *a, const struct iw_sge *b,
		    size_t len)
{
	size_t ai = 0, bi = 0, ao = 0, bo = 0, k;

	for (k = 0; k < len; k++) {
		while (ao == a[ai].len) {
			ai++;
			ao = 0;
		}
		while (bo == b[bi].len) {
			bi++;
			bo = 0;
		}
		if (((uint8_t *)a[ai].addr)[ao++] !=
		    ((uint8_t *)b[bi].addr)[bo++])
			return bad("octet %zu differs", k);
	}
	return true;
}

/* The gap octets after each entry still hold the canary. */
static bool gaps_intact(const struct iw_sge *sg, int n, size_t gap)
{
	int k;

	for (k = 0; k < n; k++) {
		const uint8_t *g = (const uint8_t *)sg[k].addr + sg[k].len;

		if (eu_find_not(g, gap, CANARY) != gap)
			return bad("gap after receive entry %d written", k);
	}
	return true;
}

/* Up to eight entries on both ends, including zero-length ones. */
static void test_multi_sge(void)
{
	static const uint32_t slen[8] = { 7, 0, 100, 1, 3000, 0, 65, 20000 };
	static const uint32_t rlen[8] = { 1, 2, 0, 5000, 13, 0, 19000, 500 };
	struct iw_sge ssg[8], rsg[8];
	struct iw_recv_wr rwr = { .ctx = nctx(), .sgl = rsg, .num_sge = 8 };
	struct iw_send_wr swr = { .ctx = nctx(), .op = IW_WR_SEND,
				  .flags = IW_WR_SIGNALED, .sgl = ssg,
				  .num_sge = 8 };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct want w = { .p = &p };
	uint8_t *src = sd[0].src.addr, *dst = sd[1].dst.addr;
	size_t so = 0, ro = 0, total = 0;
	int i;
	bool ok;

	cfg_default(&cfg);
	ok = connect_pair(&p, &cfg);
	memset(dst, CANARY, 64 << 10);
	for (i = 0; i < 8; i++) {
		/* gaps of 16 between entries: canaries that must survive */
		ssg[i] = (struct iw_sge){ .addr = src + so, .len = slen[i] };
		rsg[i] = (struct iw_sge){ .addr = dst + ro, .len = rlen[i] };
		so += slen[i] + 16;
		ro += rlen[i] + 16;
		total += slen[i];
	}
	eu_fill(src, so, 77);
	if (ok && (iw_qp_post_recv(p.b.qp, &rwr) ||
		   iw_qp_post_send(p.a.qp, &swr)))
		ok = bad("post failed");
	if (ok) {
		want_add(&w, &p.b, rwr.ctx);
		want_add(&w, &p.a, swr.ctx);
		ok = wait_want(&w, 5000) &&
		     check_wc(&p.b, rwr.ctx, IW_WC_RECV, (uint32_t)total, 0,
			      0);
	}
	if (ok)
		ok = cmp_sgl(ssg, rsg, total) && gaps_intact(rsg, 8, 16);
	report(ok, "multi-SGE: 8 send entries into 8 receive entries, zero-length ones included");
	eu_pair_fini(&p);
}

/* ---- connection setup: RTR */

static uint8_t rtr_rbuf[64];
static void *rtr_rctx;

/* Posts a receive right after the accept, before any RTR can arrive. */
static void rtr_post_recv(struct eu_listener *el, struct eu_qp *q)
{
	struct iw_sge sg = { .addr = rtr_rbuf, .len = sizeof(rtr_rbuf) };
	struct iw_recv_wr wr = { .ctx = rtr_rctx, .sgl = &sg, .num_sge = 1 };

	el->accept_rc = iw_qp_post_recv(q->qp, &wr);
}

static const char *rtr_name(uint8_t t)
{
	switch (t) {
	case IW_RTR_WRITE:
		return "Write";
	case IW_RTR_READ:
		return "Read";
	case IW_RTR_SEND:
		return "Send";
	}
	return "mixed";
}

static bool check_rtr_used(const struct eu_pair *p, uint8_t want)
{
	const struct eu_ev *a = eu_est(&p->a), *b = eu_est(&p->b);

	if (!a || !b)
		return bad("not established");
	if (a->rtr_used != want || b->rtr_used != want)
		return bad("rtr_used init %#x resp %#x, want %#x", a->rtr_used,
			   b->rtr_used, want);
	return true;
}

/* After the connection is up, the receive is still there for data. */
static bool check_recv_not_consumed(struct eu_pair *p)
{
	static const char msg[] = "after";
	struct iw_sge sg = { .addr = (void *)msg, .len = 5 };
	struct iw_send_wr wr = { .ctx = nctx(), .op = IW_WR_SEND,
				 .sgl = &sg, .num_sge = 1 };
	struct want w = { .p = p };

	eu_idle(LP, 30);
	if (eu_count_ctx(&p->b, rtr_rctx))
		return bad("the RTR consumed the posted receive");
	if (iw_qp_post_send(p->a.qp, &wr))
		return bad("post_send failed");
	want_add(&w, &p->b, rtr_rctx);
	return wait_want(&w, 3000) &&
	       check_wc(&p->b, rtr_rctx, IW_WC_RECV, 5, 0, 0) &&
	       (memcmp(rtr_rbuf, msg, 5) ? bad("data differs") : true);
}

static void test_rtr_forced(void)
{
	static const uint8_t types[] = { IW_RTR_WRITE, IW_RTR_READ,
					 IW_RTR_SEND };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	size_t i;
	bool ok;

	for (i = 0; i < sizeof(types); i++) {
		cfg_default(&cfg);
		cfg.init.rtr = types[i];
		rtr_rctx = nctx();
		ok = eu_pair_init(&p, &env, &cfg) == 0;
		p.lst.after_accept = rtr_post_recv;
		ok = ok && !eu_pair_start(&p, &cfg.init) &&
		     !eu_pair_wait(&p, &cfg);
		if (!ok) {
			bad("connection setup failed");
			pair_diag(&p);
		}
		ok = ok && check_rtr_used(&p, types[i]);
		if (ok && p.b.req.rtr != types[i])
			ok = bad("request offered %#x", p.b.req.rtr);
		report(ok, "rtr: initiator offers only %s: used on both sides",
		       rtr_name(types[i]));
		ok = ok && (p.lst.accept_rc ?
			    bad("post_recv after accept: %d",
				p.lst.accept_rc) :
			    check_recv_not_consumed(&p));
		report(ok, "rtr: %s RTR leaves the posted receive alone",
		       rtr_name(types[i]));
		eu_pair_fini(&p);
	}
}

/*
 * The initiator learns it is connected inside its transmit path, once the
 * RTR is out: a Send posted from that upcall, larger than the socket
 * takes, is left half written. The path must not forget it when the upcall
 * returns: the Send ends once, with its MSN, and the next one follows
 * (else: a second last segment with that MSN, which the peer terminates).
 */
#define NEST_LEN 200000u	/* one batch of FPDUs, its last one included */
static uint8_t *nest_src, *nest_dst;
static uint8_t nest_msg[32], nest_msg_dst[64];
static void *nest_sctx, *nest_rctx, *nest_sctx2, *nest_rctx2;
static int nest_rc;

static void nest_post_recv(struct eu_listener *el, struct eu_qp *q)
{
	struct iw_sge sg[2] = { { .addr = nest_dst, .len = NEST_LEN },
				{ .addr = nest_msg_dst,
				  .len = sizeof(nest_msg_dst) } };
	struct iw_recv_wr wr = { .ctx = nest_rctx, .sgl = &sg[0],
				 .num_sge = 1 };
	int small = 16384;

	setsockopt(iw_qp_fd(q->qp), SOL_SOCKET, SO_RCVBUF, &small,
		   sizeof(small));
	el->accept_rc = iw_qp_post_recv(q->qp, &wr);
	wr.ctx = nest_rctx2;
	wr.sgl = &sg[1];
	if (!el->accept_rc)
		el->accept_rc = iw_qp_post_recv(q->qp, &wr);
}

static void nest_on_ev(struct eu_qp *q, const struct eu_ev *ev)
{
	struct iw_sge sg = { .addr = nest_src, .len = NEST_LEN };
	struct iw_send_wr wr = { .ctx = nest_sctx, .op = IW_WR_SEND,
				 .sgl = &sg, .num_sge = 1,
				 .flags = IW_WR_SIGNALED };
	int small = 16384;

	if (ev->type != IW_CM_ESTABLISHED || nest_rc != 1)
		return;
	/* a small send buffer: the Send cannot go out in one call */
	setsockopt(iw_qp_fd(q->qp), SOL_SOCKET, SO_SNDBUF, &small,
		   sizeof(small));
	nest_rc = iw_qp_post_send(q->qp, &wr);
}

static void test_send_from_upcall(void)
{
	struct iw_sge sg = { .addr = nest_msg, .len = sizeof(nest_msg) };
	struct iw_send_wr wr = { .op = IW_WR_SEND, .sgl = &sg, .num_sge = 1,
				 .flags = IW_WR_SIGNALED };
	struct eu_pair_cfg cfg;
	struct want w = { 0 };
	struct eu_pair p;
	bool ok;

	nest_src = malloc(NEST_LEN);
	nest_dst = malloc(NEST_LEN);
	if (!nest_src || !nest_dst) {
		report(false, "upcall send: buffers");
		goto out;
	}
	eu_fill(nest_src, NEST_LEN, 77);
	memset(nest_dst, CANARY, NEST_LEN);
	eu_fill(nest_msg, sizeof(nest_msg), 78);
	nest_sctx = nctx();
	nest_rctx = nctx();
	nest_sctx2 = nctx();
	nest_rctx2 = nctx();
	nest_rc = 1;
	cfg_default(&cfg);
	cfg.init.rtr = IW_RTR_WRITE;
	ok = eu_pair_init(&p, &env, &cfg) == 0;
	p.lst.after_accept = nest_post_recv;
	p.a.on_ev = nest_on_ev;
	ok = ok && !eu_pair_start(&p, &cfg.init) && !eu_pair_wait(&p, &cfg);
	if (!ok) {
		bad("connection setup failed");
		pair_diag(&p);
	}
	if (ok && (nest_rc || p.lst.accept_rc))
		ok = bad("post from the upcall %d, receives %d", nest_rc,
			 p.lst.accept_rc);
	wr.ctx = nest_sctx2;
	if (ok && iw_qp_post_send(p.a.qp, &wr))
		ok = bad("second post_send failed");
	w.p = &p;
	want_add(&w, &p.a, nest_sctx);
	want_add(&w, &p.a, nest_sctx2);
	want_add(&w, &p.b, nest_rctx);
	want_add(&w, &p.b, nest_rctx2);
	ok = ok && wait_want(&w, 10000) &&
	     check_wc(&p.b, nest_rctx, IW_WC_RECV, NEST_LEN, 0, 0) &&
	     check_wc(&p.b, nest_rctx2, IW_WC_RECV, sizeof(nest_msg), 0, 0) &&
	     check_wc(&p.a, nest_sctx, IW_WC_SEND, NEST_LEN, 0, 0) &&
	     check_wc(&p.a, nest_sctx2, IW_WC_SEND, sizeof(nest_msg), 0, 0);
	if (ok && (memcmp(nest_dst, nest_src, NEST_LEN) ||
		   memcmp(nest_msg_dst, nest_msg, sizeof(nest_msg))))
		ok = bad("data differs");
	report(ok, "a %u-octet Send posted from the ESTABLISHED upcall, left "
		   "half written, ends once; the next Send follows",
	       NEST_LEN);
	eu_pair_fini(&p);
out:
	free(nest_src);
	free(nest_dst);
}

/* The responder's accepted set decides, in the order Write, Read, Send. */
static void test_rtr_responder(void)
{
	static const struct {
		uint8_t init, resp, want;
	} t[] = {
		{ IW_RTR_ALL, IW_RTR_WRITE, IW_RTR_WRITE },
		{ IW_RTR_ALL, IW_RTR_READ, IW_RTR_READ },
		{ IW_RTR_ALL, IW_RTR_SEND, IW_RTR_SEND },
		{ IW_RTR_ALL, IW_RTR_ALL, IW_RTR_WRITE },
		{ IW_RTR_READ | IW_RTR_SEND, IW_RTR_ALL, IW_RTR_READ },
		{ IW_RTR_SEND | IW_RTR_WRITE, IW_RTR_READ | IW_RTR_SEND,
		  IW_RTR_SEND },
	};
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	size_t i;
	bool ok;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cfg_default(&cfg);
		cfg.init.rtr = t[i].init;
		cfg.resp.rtr = t[i].resp;
		ok = connect_pair(&p, &cfg) && check_rtr_used(&p, t[i].want);
		report(ok, "rtr: offered %#x, accepted %#x -> %s", t[i].init,
		       t[i].resp, rtr_name(t[i].want));
		eu_pair_fini(&p);
	}
}

static void test_rtr_reply_all(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	const struct eu_ev *a;
	bool ok;

	cfg_default(&cfg);
	cfg.resp.rtr = IW_RTR_WRITE | IW_RTR_READ;
	cfg.resp.rtr_reply_all = true;
	ok = connect_pair(&p, &cfg);
	a = eu_est(&p.a);
	if (ok && a->rtr != (IW_RTR_WRITE | IW_RTR_READ))
		ok = bad("reply carried RTR flags %#x", a->rtr);
	if (ok && a->rtr_used != IW_RTR_WRITE && a->rtr_used != IW_RTR_READ)
		ok = bad("initiator used %#x", a->rtr_used);
	if (ok && eu_est(&p.b)->rtr_used != a->rtr_used)
		ok = bad("sides disagree: %#x vs %#x", a->rtr_used,
			 eu_est(&p.b)->rtr_used);
	report(ok, "rtr: rtr_reply_all: reply lists every accepted type");
	eu_pair_fini(&p);
}

static bool done_both_failed(void *arg)
{
	struct eu_pair *p = arg;

	return eu_qp_failed(&p->a) && eu_qp_failed(&p->b);
}

/* RFC 6581 §9.2: no RTR the initiator can send: TERM with 2/0/7. */
static void test_rtr_none(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	const struct eu_ev *e;
	bool ok;

	cfg_default(&cfg);
	cfg.init.rtr = IW_RTR_SEND;
	cfg.resp.rtr = IW_RTR_WRITE | IW_RTR_READ;
	ok = eu_pair_init(&p, &env, &cfg) == 0 &&
	     eu_pair_start(&p, &cfg.init) == 0;
	if (ok)
		eu_pair_wait(&p, &cfg);
	eu_run(LP, done_both_failed, &p, 2000);
	e = eu_fail_ev(&p.a);
	if (!ok)
		ok = bad("setup calls failed");
	else if (eu_est(&p.a))
		ok = bad("initiator established");
	else if (!e || (e->type != IW_CM_ERROR &&
			e->type != IW_CM_UNREACHABLE))
		ok = bad("initiator event %s", e ? eu_ev_str(e->type) : "none");
	else if (!eu_err_is(&e->err, IW_LAYER_LLP, MPA_ETYPE,
			    MPA_ECODE_NO_RTR))
		ok = bad("initiator err %s", eu_err_str(&e->err));
	report(ok, "rtr: no common RTR: initiator fails with 2/0/7");
	if (!ok)
		pair_diag(&p);
	e = eu_fail_ev(&p.b);
	ok = e && e->type == IW_CM_ERROR && e->remote &&
	     eu_err_is(&e->err, IW_LAYER_LLP, MPA_ETYPE, MPA_ECODE_NO_RTR);
	if (!ok)
		bad("responder event %s err %s remote %d",
		    e ? eu_ev_str(e->type) : "none",
		    e ? eu_err_str(&e->err) : "-", e ? e->remote : 0);
	report(ok, "rtr: no common RTR: responder gets the Terminate 2/0/7");
	if (!ok)
		pair_diag(&p);
	eu_pair_fini(&p);
}

/* Client-server: the responder is not established before the first FPDU. */
static void test_cs_first_fpdu(void)
{
	struct iw_recv_wr rwr = { .ctx = EU_HELLO_CTX };
	struct iw_send_wr swr = { .ctx = nctx(), .op = IW_WR_SEND };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	bool ok;

	cfg_default(&cfg);
	cfg.init.client_server = true;
	cfg.no_hello = true;
	ok = connect_pair(&p, &cfg);
	eu_idle(LP, 50);
	if (ok && eu_est(&p.b))
		ok = bad("responder established before the first FPDU");
	if (ok && (iw_qp_post_recv(p.b.qp, &rwr) ||
		   iw_qp_post_send(p.a.qp, &swr)))
		ok = bad("post failed");
	if (ok && !eu_wait_ev(LP, &p.b, IW_CM_ESTABLISHED, 3000))
		ok = bad("responder never established");
	if (ok && !eu_wait_ctx(LP, &p.b, EU_HELLO_CTX, 3000))
		ok = bad("first message not received");
	report(ok, "client-server: responder established by the initiator's first FPDU");
	eu_pair_fini(&p);
}

/* ---- MPA revisions */

/* Small traffic in every direction and opcode. */
static bool quick_traffic(struct eu_pair *p)
{
	struct mx m;
	size_t i;
	int r;

	mx_init(&m, p);
	for (r = 0; r < 2; r++)
		for (i = 0; i < N_OPS; i++)
			if (!xfer(&m, r, all_ops[i], 1000 + i, i & 1)) {
				why_prefix("%s %s", r ? "resp" : "init",
					   op_name(all_ops[i]));
				return false;
			}
	return true;
}

static bool check_rev(const struct eu_pair *p, uint8_t rev)
{
	const struct eu_ev *a = eu_est(&p->a), *b = eu_est(&p->b);

	if (!a || !b)
		return bad("not established");
	if (a->rev != rev || b->rev != rev)
		return bad("rev %u/%u, want %u", a->rev, b->rev, rev);
	if (rev == 1 && (a->enhanced || b->enhanced))
		return bad("enhanced in rev 1");
	return true;
}

static void test_rev1(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	const struct eu_ev *e;
	bool ok;

	cfg_default(&cfg);
	cfg.init.rev = 1;
	cfg.init.client_server = true;
	cfg.init.no_enhanced = true;
	cfg.resp.max_rev = 1;
	ok = connect_pair(&p, &cfg) && check_rev(&p, 1) && quick_traffic(&p);
	report(ok, "rev 1 on both sides: connects and carries traffic");
	eu_pair_fini(&p);

	cfg_default(&cfg);
	cfg.init.retry_rev1 = true;
	cfg.resp.max_rev = 1;
	ok = connect_pair(&p, &cfg) && check_rev(&p, 1) && quick_traffic(&p);
	report(ok, "rev 2 initiator with retry_rev1 against a rev 1 responder: rev 1, works");
	tap_diag("  listener saw %d request(s)", p.lst.n_req);
	eu_pair_fini(&p);

	cfg_default(&cfg);
	cfg.resp.max_rev = 1;
	ok = eu_pair_connect(&p, &env, &cfg) != 0;
	e = eu_fail_ev(&p.a);
	if (!ok)
		ok = bad("connected");
	else if (!e || e->type != IW_CM_UNREACHABLE)
		ok = bad("initiator event %s", e ? eu_ev_str(e->type) : "none");
	report(ok, "rev 2 initiator without retry against rev 1: UNREACHABLE");
	if (!ok)
		pair_diag(&p);
	eu_pair_fini(&p);
}

/* ---- reject and private data */

/* The REJECTED event carries the exact private data. */
static bool check_rejected(const struct eu_pair *p, const char *pd,
			   uint16_t len)
{
	const struct eu_ev *e = eu_find_ev(&p->a, IW_CM_REJECTED);

	if (!e)
		return bad("no REJECTED event");
	if (e->pdata_len != len || memcmp(e->pdata, pd, len))
		return bad("private data %u octets, want %u", e->pdata_len,
			   len);
	if (p->lst.accept_rc)
		return bad("iw_reject returned %d", p->lst.accept_rc);
	return true;
}

static void test_reject(void)
{
	static const char pd[] = "rejected: collision, try again later";
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	const char *what;
	int enh;
	bool ok;

	for (enh = 0; enh < 2; enh++) {
		what = enh ? "enhanced" : "unenhanced";
		cfg_default(&cfg);
		cfg.init.no_enhanced = !enh;
		cfg.init.client_server = !enh;
		ok = eu_pair_init(&p, &env, &cfg) == 0;
		p.lst.mode = EU_L_REJECT;
		p.lst.rej_pdata = pd;
		p.lst.rej_len = sizeof(pd);
		ok = ok && !eu_pair_start(&p, &cfg.init);
		if (ok)
			eu_pair_wait(&p, &cfg);
		eu_idle(LP, 20);
		ok = (ok || bad("setup calls failed")) &&
		     check_rejected(&p, pd, sizeof(pd));
		report(ok, "reject (%s): initiator gets REJECTED with the exact private data",
		       what);
		ok = p.a.n_ev == 1 ||
		     bad("initiator saw %d CM events", p.a.n_ev);
		report(ok, "reject (%s): REJECTED is the initiator's only CM event",
		       what);
		if (!ok)
			pair_diag(&p);
		eu_pair_fini(&p);
	}
}

static bool check_pdata(const struct eu_ev *e, const uint8_t *want,
			uint16_t len, const char *where)
{
	if (!e)
		return bad("%s: no event", where);
	if (e->pdata_len != len)
		return bad("%s: %u octets, want %u", where, e->pdata_len, len);
	if (memcmp(e->pdata, want, len))
		return bad("%s: contents differ", where);
	return true;
}

static void pdata_case(bool enhanced, uint16_t len)
{
	static uint8_t ipd[MPA_MAX_PD + 1], rpd[MPA_MAX_PD + 1];
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	bool ok;

	eu_fill(ipd, sizeof(ipd), len);
	eu_fill(rpd, sizeof(rpd), len + 1000u);
	cfg_default(&cfg);
	cfg.init.no_enhanced = !enhanced;
	cfg.init.client_server = !enhanced;
	cfg.init.pdata = ipd;
	cfg.init.pdata_len = len;
	cfg.resp.pdata = rpd;
	cfg.resp.pdata_len = len;
	ok = connect_pair(&p, &cfg) &&
	     check_pdata(&p.b.req, ipd, len, "CONNECT_REQUEST") &&
	     check_pdata(eu_est(&p.a), rpd, len, "initiator ESTABLISHED");
	report(ok, "private data: %u octets %s arrive intact both ways", len,
	       enhanced ? "with the enhanced block" : "without it");
	eu_pair_fini(&p);
}

static void pdata_too_long(bool enhanced, uint16_t len)
{
	static uint8_t pd[MPA_MAX_PD + 8];
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	int rc;

	cfg_default(&cfg);
	cfg.init.no_enhanced = !enhanced;
	cfg.init.client_server = !enhanced;
	cfg.init.pdata = pd;
	cfg.init.pdata_len = len;
	rc = eu_pair_init(&p, &env, &cfg);
	if (!rc)
		rc = eu_pair_start(&p, &cfg.init);
	if (rc != -EINVAL)
		bad("iw_qp_connect returned %d", rc);
	report(rc == -EINVAL, "private data: %u octets %s: connect -EINVAL",
	       len, enhanced ? "with the enhanced block" : "without it");
	eu_pair_fini(&p);
}

static void test_pdata(void)
{
	pdata_case(true, 0);
	pdata_case(true, 1);
	pdata_case(true, MPA_MAX_PD - MPA_ENH_LEN);
	pdata_too_long(true, MPA_MAX_PD - MPA_ENH_LEN + 1);
	pdata_case(false, MPA_MAX_PD);
	pdata_too_long(false, MPA_MAX_PD + 1);
}

/* ---- IRD/ORD: the pure functions (RFC 6581 §9.1) */

#define NONEG MPA_IRD_ORD_NO_NEG

struct resp_row {
	const char *what;
	uint16_t ird, ord, max_ird, ord_min;	/* responder's local */
	uint16_t p_ird, p_ord;			/* initiator's request */
	bool read_rtr;
	int rc;
	uint16_t r_ird, r_ord;			/* reply */
	uint16_t u_ird, u_ord;			/* local use */
};

static const struct resp_row resp_rows[] = {
	{ "normal", 8, 4, 128, 0, 6, 3, false, 0, 8, 4, 8, 4 },
	{ "ORD lowered to initiator IRD", 8, 8, 128, 0, 2, 4, false, 0,
	  8, 2, 8, 2 },
	{ "IRD raised to initiator ORD", 2, 2, 128, 0, 4, 16, false, 0,
	  16, 2, 16, 2 },
	{ "IRD raised only up to max_ird", 2, 2, 8, 0, 4, 16, false, 0,
	  8, 2, 8, 2 },
	{ "initiator ORD 0x3FFF", 8, 4, 128, 0, 6, NONEG, false, 0,
	  NONEG, 4, 8, 4 },
	{ "initiator IRD 0x3FFF", 8, 4, 128, 0, NONEG, 3, false, 0,
	  8, NONEG, 8, 4 },
	{ "both 0x3FFF", 8, 4, 128, 0, NONEG, NONEG, false, 0,
	  NONEG, NONEG, 8, 4 },
	{ "Read RTR with initiator ORD 0", 0, 4, 128, 0, 4, 0, true, 0,
	  1, 4, 1, 4 },
	{ "Read RTR, IRD already 3", 3, 4, 128, 0, 4, 0, true, 0,
	  3, 4, 3, 4 },
	{ "no Read RTR, IRD 0 stays", 0, 4, 128, 0, 4, 0, false, 0,
	  0, 4, 0, 4 },
	{ "initiator IRD equals ord_min", 8, 4, 128, 4, 4, 2, false, 0,
	  8, 4, 8, 4 },
	{ "initiator IRD below ord_min", 8, 4, 128, 4, 2, 1, false, -EPROTO,
	  0, 4, 0, 0 },
};

static bool resp_row_ok(const struct resp_row *t)
{
	struct iw_ird_ord reply = { 0xdead, 0xdead }, use = { 0xdead, 0xdead };
	struct iw_err err = { 0 };
	int rc;

	rc = iw_negotiate_responder((struct iw_ird_ord){ t->ird, t->ord },
				    t->max_ird, t->ord_min,
				    (struct iw_ird_ord){ t->p_ird, t->p_ord },
				    t->read_rtr, &reply, &use, &err);
	if (rc != t->rc)
		return bad("rc %d, want %d", rc, t->rc);
	if (rc) {
		if (!eu_err_is(&err, IW_LAYER_LLP, MPA_ETYPE,
			       MPA_ECODE_INSUFFICIENT_IRD))
			return bad("err %s, want 2/0/6", eu_err_str(&err));
		if (reply.ord != t->r_ord)
			return bad("reject ORD %u, want ord_min %u", reply.ord,
				   t->r_ord);
		return true;
	}
	if (reply.ird != t->r_ird || reply.ord != t->r_ord)
		return bad("reply %#x/%#x, want %#x/%#x", reply.ird, reply.ord,
			   t->r_ird, t->r_ord);
	if (use.ird != t->u_ird || use.ord != t->u_ord)
		return bad("use %#x/%#x, want %#x/%#x", use.ird, use.ord,
			   t->u_ird, t->u_ord);
	return true;
}

struct init_row {
	const char *what;
	uint16_t ird, ord, max_ird;	/* initiator's local */
	uint16_t r_ird, r_ord;		/* responder's reply */
	int rc;
	uint16_t u_ird, u_ord;
};

static const struct init_row init_rows[] = {
	{ "normal", 4, 8, 128, 16, 2, 0, 4, 8 },
	{ "ORD lowered to responder IRD", 4, 8, 128, 3, 2, 0, 4, 3 },
	{ "IRD raised to responder ORD", 2, 2, 128, 8, 6, 0, 6, 2 },
	{ "IRD raised exactly to max_ird", 2, 2, 6, 8, 6, 0, 6, 2 },
	{ "max_ird below responder ORD", 2, 2, 5, 8, 6, -EPROTO, 0, 0 },
	{ "responder IRD 0x3FFF", 4, 8, 128, NONEG, 2, 0, 4, 8 },
	{ "responder ORD 0x3FFF", 4, 8, 128, 16, NONEG, 0, 4, 8 },
	{ "both 0x3FFF", 4, 8, 128, NONEG, NONEG, 0, 4, 8 },
};

static bool init_row_ok(const struct init_row *t)
{
	struct iw_ird_ord use = { 0xdead, 0xdead };
	struct iw_err err = { 0 };
	int rc;

	rc = iw_negotiate_initiator((struct iw_ird_ord){ t->ird, t->ord },
				    t->max_ird,
				    (struct iw_ird_ord){ t->r_ird, t->r_ord },
				    &use, &err);
	if (rc != t->rc)
		return bad("rc %d, want %d", rc, t->rc);
	if (rc)
		return eu_err_is(&err, IW_LAYER_LLP, MPA_ETYPE,
				 MPA_ECODE_INSUFFICIENT_IRD) ||
		       bad("err %s, want 2/0/6", eu_err_str(&err));
	if (use.ird != t->u_ird || use.ord != t->u_ord)
		return bad("use %#x/%#x, want %#x/%#x", use.ird, use.ord,
			   t->u_ird, t->u_ord);
	return true;
}

static void test_ird_ord_table(void)
{
	size_t i;

	for (i = 0; i < sizeof(resp_rows) / sizeof(resp_rows[0]); i++)
		report(resp_row_ok(&resp_rows[i]), "ird/ord responder: %s",
		       resp_rows[i].what);
	for (i = 0; i < sizeof(init_rows) / sizeof(init_rows[0]); i++)
		report(init_row_ok(&init_rows[i]), "ird/ord initiator: %s",
		       init_rows[i].what);
}

static bool check_ird_ord(const struct eu_ev *e, const char *who,
			  uint16_t ird, uint16_t ord, uint16_t pird,
			  uint16_t pord)
{
	if (!e)
		return bad("%s: no event", who);
	if (e->ird != ird || e->ord != ord || e->peer_ird != pird ||
	    e->peer_ord != pord)
		return bad("%s: ird/ord %u/%u peer %u/%u, want %u/%u peer %u/%u",
			   who, e->ird, e->ord, e->peer_ird, e->peer_ord, ird,
			   ord, pird, pord);
	return true;
}

/* End to end: values that need no adjustment, then ones that do. */
static void test_ird_ord_e2e(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	bool ok;

	cfg_default(&cfg);
	cfg.init.ird = 6;
	cfg.init.ord = 3;
	cfg.resp.ird = 5;
	cfg.resp.ord = 2;
	ok = connect_pair(&p, &cfg);
	if (ok && (p.b.req.peer_ird != 6 || p.b.req.peer_ord != 3))
		ok = bad("request carried ird/ord %u/%u, want 6/3",
			 p.b.req.peer_ird, p.b.req.peer_ord);
	ok = ok && check_ird_ord(eu_est(&p.a), "initiator", 6, 3, 5, 2) &&
	     check_ird_ord(eu_est(&p.b), "responder", 5, 2, 6, 3);
	report(ok, "ird/ord end to end: values reach both ESTABLISHED events");
	eu_pair_fini(&p);

	cfg_default(&cfg);
	cfg.init.ird = 1;
	cfg.init.ord = 8;
	cfg.resp.ird = 2;
	cfg.resp.ord = 4;
	cfg.resp.max_ird = 4;
	ok = connect_pair(&p, &cfg) &&
	     check_ird_ord(eu_est(&p.a), "initiator", 1, 4, 4, 1) &&
	     check_ird_ord(eu_est(&p.b), "responder", 4, 1, 1, 8);
	report(ok, "ird/ord end to end: responder raises IRD to max_ird, both ORDs lowered");
	eu_pair_fini(&p);
}

/* ---- helpers over lists of contexts */

struct wantv {
	struct eu_pair *p;
	struct eu_qp *q;
	void *const *ctx;
	int n;
};

static bool done_wantv(void *arg)
{
	struct wantv *w = arg;
	int i;

	if (w->p && (eu_qp_failed(&w->p->a) || eu_qp_failed(&w->p->b)))
		return true;
	for (i = 0; i < w->n; i++)
		if (!eu_find_wc(w->q, w->ctx[i]))
			return false;
	return true;
}

static bool wait_list(struct eu_pair *p, struct eu_qp *q, void *const *ctx,
		      int n, int tmo)
{
	struct wantv w = { .p = p, .q = q, .ctx = ctx, .n = n };

	return eu_run(LP, done_wantv, &w, tmo) ||
	       bad("timeout waiting for %d completions on %s", n, q->name);
}

/* The completions of ctx[0..n) appear in this order on q. */
static bool check_order(const struct eu_qp *q, void *const *ctx, int n)
{
	size_t i;
	int next = 0;

	for (i = 0; i < q->n_wc && next < n; i++) {
		int k;

		for (k = 0; k < n; k++)
			if (q->wc[i].ctx == ctx[k])
				break;
		if (k == n)
			continue;
		if (k != next)
			return bad("%s: completion %d came where %d was due",
				   q->name, k, next);
		next++;
	}
	return next == n || bad("%s: only %d of %d completions", q->name,
				next, n);
}

/* Each ctx completed exactly once; with status want unless want < 0. */
static bool check_once(const struct eu_qp *q, void *const *ctx, int n,
		       int want)
{
	int i, c;

	for (i = 0; i < n; i++) {
		const struct iw_wc *wc = eu_find_wc(q, ctx[i]);

		c = eu_count_ctx(q, ctx[i]);
		if (c != 1)
			return bad("%s: request %d completed %d times", q->name,
				   i, c);
		if (want >= 0 && wc->status != (enum iw_wc_status)want)
			return bad("%s: request %d status %s, want %s",
				   q->name, i, eu_status_str(wc->status),
				   eu_status_str((enum iw_wc_status)want));
	}
	return true;
}

static int post_read(struct eu_qp *q, void *ctx, struct iw_sge *sg,
		     const struct eu_buf *src, size_t off, unsigned int flags)
{
	struct iw_send_wr wr = { .ctx = ctx, .op = IW_WR_READ,
				 .flags = IW_WR_SIGNALED | flags,
				 .sgl = sg, .num_sge = 1, .rstag = src->stag,
				 .rto = eu_to(src, off) };

	return iw_qp_post_send(q->qp, &wr);
}

static int post_write(struct eu_qp *q, void *ctx, struct iw_sge *sg,
		      uint32_t stag, uint64_t to)
{
	struct iw_send_wr wr = { .ctx = ctx, .op = IW_WR_WRITE,
				 .flags = IW_WR_SIGNALED, .sgl = sg,
				 .num_sge = 1, .rstag = stag, .rto = to };

	return iw_qp_post_send(q->qp, &wr);
}

static int post_send(struct eu_qp *q, void *ctx, struct iw_sge *sg,
		     int nsge, unsigned int flags)
{
	struct iw_send_wr wr = { .ctx = ctx, .op = IW_WR_SEND,
				 .flags = IW_WR_SIGNALED | flags,
				 .sgl = sg, .num_sge = nsge };

	return iw_qp_post_send(q->qp, &wr);
}

static int post_recv(struct eu_qp *q, void *ctx, void *buf, uint32_t len)
{
	struct iw_sge sg = { .addr = buf, .len = len };
	struct iw_recv_wr wr = { .ctx = ctx, .sgl = &sg,
				 .num_sge = buf ? 1 : 0 };

	return iw_qp_post_recv(q->qp, &wr);
}

struct both_failed {
	struct eu_pair *p;
	int na, nb;		/* completions each side must have */
};

static bool done_failed_and_flushed(void *arg)
{
	struct both_failed *f = arg;

	return eu_qp_failed(&f->p->a) && eu_qp_failed(&f->p->b) &&
	       f->p->a.n_wc >= (size_t)f->na && f->p->b.n_wc >= (size_t)f->nb;
}

static bool check_fail_ev(const struct eu_qp *q, bool remote,
			  const struct iw_err *want, const struct iw_err *alt)
{
	const struct eu_ev *e = eu_fail_ev(q);

	if (!e)
		return bad("%s: no failure event", q->name);
	if (e->type != IW_CM_ERROR || e->remote != remote)
		return bad("%s: %s remote %d, want ERROR remote %d", q->name,
			   eu_ev_str(e->type), e->remote, remote);
	if (!eu_err_is(&e->err, want->layer, want->etype, want->ecode) &&
	    !(alt && eu_err_is(&e->err, alt->layer, alt->etype, alt->ecode)))
		return bad("%s: err %s (%s), want %s%s%s", q->name,
			   eu_err_str(&e->err),
			   iw_err_str(e->err.layer, e->err.etype,
				      e->err.ecode),
			   eu_err_str(want), alt ? " or " : "",
			   alt ? eu_err_str(alt) : "");
	return true;
}

/* ---- ORD is respected: more Reads than ORD queue and complete */

#define ORD_N 12
#define ORD_STEP 100000
#define ORD_LEN 90000

static void test_ord_limit(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct iw_sge sg[ORD_N];
	void *ctx[ORD_N];
	const struct eu_ev *e;
	uint8_t *dst = sd[0].dst.addr, *src = sd[1].src.addr;
	int i;
	bool ok;

	cfg_default(&cfg);
	cfg.init.ord = 8;
	cfg.resp.ird = 2;
	cfg.resp.max_ird = 2;	/* a third outstanding Read terminates */
	ok = connect_pair(&p, &cfg);
	e = eu_est(&p.a);
	if (ok && e->ord != 2)
		ok = bad("negotiated ORD %u, want 2", e->ord);
	eu_fill(src, ORD_N * ORD_STEP, 99);
	memset(dst, CANARY, ORD_N * ORD_STEP);
	for (i = 0; ok && i < ORD_N; i++) {
		ctx[i] = nctx();
		sg[i] = (struct iw_sge){ .addr = dst + i * ORD_STEP,
					 .len = ORD_LEN };
		if (post_read(&p.a, ctx[i], &sg[i], &sd[1].src,
			      (size_t)i * ORD_STEP, 0))
			ok = bad("post_read %d failed", i);
	}
	ok = ok && wait_list(&p, &p.a, ctx, ORD_N, 10000) &&
	     check_order(&p.a, ctx, ORD_N);
	for (i = 0; ok && i < ORD_N; i++) {
		ok = check_wc(&p.a, ctx[i], IW_WC_READ, ORD_LEN, 0, 0);
		if (ok && memcmp(dst + i * ORD_STEP, src + i * ORD_STEP,
				 ORD_LEN))
			ok = bad("data of Read %d differs", i);
		if (ok && eu_find_not(dst + i * ORD_STEP + ORD_LEN,
				      ORD_STEP - ORD_LEN, CANARY) !=
				  ORD_STEP - ORD_LEN)
			ok = bad("octets after Read %d written", i);
	}
	if (!ok)
		pair_diag(&p);
	report(ok, "ord: %d Reads with ORD 2 against IRD 2 all complete in order",
	       ORD_N);
	/* a Read request with the next one held by ORD is not corked: it
	 * would take a second call (setsockopt) to push it */
	if (ok) {
		struct iw_qp_stats st;

		iw_qp_stats(p.a.qp, &st);
		ok = st.tx_pushes == 0 ||
		     bad("%llu pushes after MSG_MORE sends",
			 (unsigned long long)st.tx_pushes);
	}
	report(ok, "ord: Read Requests waiting for ORD take one send call "
	       "each, no push (setsockopt) after a held-back one");
	eu_pair_fini(&p);
}

/*
 * The other half: with 0x3FFF ("no negotiation", RFC 6581 §9.1) the
 * initiator keeps an unlimited ORD, so it may overrun the responder's
 * IRD of 2, which must then terminate (RDMAP, remote operation,
 * catastrophic: layer 0, type 2, code 7).
 */
static void test_ird_exceeded(void)
{
	static const struct iw_err e027 = { IW_LAYER_RDMAP,
					    RDMAP_ETYPE_REMOTE_OP,
					    RDMAP_ECODE_CATASTROPHIC_STREAM,
					    NULL };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct both_failed f = { .p = &p, .na = ORD_N };
	struct iw_sge sg[ORD_N];
	void *ctx[ORD_N];
	const struct eu_ev *a, *b;
	int i;
	bool ok;

	cfg_default(&cfg);
	cfg.init.ord = MPA_IRD_ORD_NO_NEG;
	cfg.resp.ird = 2;
	cfg.resp.max_ird = 2;
	ok = connect_pair(&p, &cfg);
	a = eu_est(&p.a);
	b = eu_est(&p.b);
	/* the local ORD stays un-negotiated; the engine may cap it */
	if (ok && (a->ord < ORD_N || b->ird != 2 ||
		   a->peer_ird != MPA_IRD_ORD_NO_NEG))
		ok = bad("init ord %#x peer ird %#x, resp ird %u", a->ord,
			 a->peer_ird, b->ird);
	if (ok)
		tap_diag("  initiator's local ORD for 0x3FFF: %#x", a->ord);
	for (i = 0; ok && i < ORD_N; i++) {
		ctx[i] = nctx();
		sg[i] = (struct iw_sge){ .addr = sd[0].dst.addr + i * 4096,
					 .len = 1 << 20 };
		ok = !post_read(&p.a, ctx[i], &sg[i], &sd[1].src, 0, 0) ||
		     bad("post_read %d failed", i);
	}
	if (ok && !eu_run(LP, done_failed_and_flushed, &f, 5000))
		ok = bad("no error after %d Reads against IRD 2", ORD_N);
	ok = ok && check_fail_ev(&p.b, false, &e027, NULL) &&
	     check_fail_ev(&p.a, true, &e027, NULL) &&
	     check_once(&p.a, ctx, ORD_N, -1);
	if (!ok)
		pair_diag(&p);
	report(ok, "ird: ORD 0x3FFF (not negotiated) overrunning IRD 2: Terminate 0/2/7, Reads complete once");
	eu_pair_fini(&p);
}

/* ---- ordering (RFC 5040 §5.5) */

static void test_order_read_writes(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct iw_sge rs = { .addr = sd[0].dst.addr, .len = 1 << 20 };
	struct iw_sge ws[3];
	void *ctx[4];
	int i;
	bool ok;

	cfg_default(&cfg);
	ok = connect_pair(&p, &cfg);
	for (i = 0; i < 4; i++)
		ctx[i] = nctx();
	eu_fill(sd[1].src.addr, 1 << 20, 3);
	ok = ok && !post_read(&p.a, ctx[0], &rs, &sd[1].src, 0, 0);
	for (i = 0; ok && i < 3; i++) {
		ws[i] = (struct iw_sge){ .addr = sd[0].src.addr + i * 1000,
					 .len = 1000 };
		ok = !post_write(&p.a, ctx[i + 1], &ws[i], sd[1].dst.stag,
				 eu_to(&sd[1].dst, (size_t)i * 1000));
	}
	if (!ok && !why[0])
		bad("post failed");
	ok = ok && wait_list(&p, &p.a, ctx, 4, 5000) &&
	     check_once(&p.a, ctx, 4, IW_WC_SUCCESS) &&
	     check_order(&p.a, ctx, 4);
	if (ok && memcmp(sd[0].dst.addr, sd[1].src.addr, 1 << 20))
		ok = bad("Read data differs");
	report(ok, "order: a Read then three Writes complete in posting order");
	eu_pair_fini(&p);
}

static void *vis_ctx;
static size_t vis_len;
static uint64_t vis_hash;
static bool vis_seen;

/* At the Send's completion the Write's data must already be in place. */
static void vis_hook(struct eu_qp *q, const struct iw_wc *wc)
{
	if (wc->ctx != vis_ctx)
		return;
	vis_seen = true;
	vis_hash = eu_hash(sd[1].dst.addr + DST_OFF, vis_len);
}

static void test_order_write_send(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct iw_sge ws = { .addr = sd[0].src.addr, .len = (1 << 20) + 13 };
	struct iw_sge ss = { .addr = sd[0].src.addr, .len = 8 };
	static uint8_t rbuf[16];
	void *ctx[2] = { nctx(), nctx() };
	bool ok;

	cfg_default(&cfg);
	ok = connect_pair(&p, &cfg);
	vis_ctx = nctx();
	vis_len = ws.len;
	vis_seen = false;
	p.b.on_wc = vis_hook;
	eu_fill(sd[0].src.addr, ws.len, 4);
	memset(sd[1].dst.addr, 0, DST_OFF + ws.len);
	ok = ok && !post_recv(&p.b, vis_ctx, rbuf, sizeof(rbuf)) &&
	     !post_write(&p.a, ctx[0], &ws, sd[1].dst.stag,
			 eu_to(&sd[1].dst, DST_OFF)) &&
	     !post_send(&p.a, ctx[1], &ss, 1, 0);
	ok = ok && eu_wait_ctx(LP, &p.b, vis_ctx, 5000);
	if (!ok)
		bad("no receive completion");
	else if (!vis_seen || vis_hash != eu_hash(ws.addr, ws.len))
		ok = bad("Write data not in place when the Send completed");
	report(ok, "order: a Write's data is in place when the following Send completes");
	eu_pair_fini(&p);
}

static void *fence_rd, *fence_rctx;
static bool fence_seen, fence_read_done;

static void fence_hook(struct eu_qp *q, const struct iw_wc *wc)
{
	struct eu_pair *p = q->user;

	if (wc->ctx != fence_rctx)
		return;
	fence_seen = true;
	fence_read_done = eu_find_wc(&p->a, fence_rd) != NULL;
}

/* Read 4 MiB, then a Send; returns whether the peer saw the Send first. */
static bool fence_run(bool fence, bool *early)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct iw_sge rs = { .addr = sd[0].dst.addr, .len = BIG_LEN };
	struct iw_sge ss = { .addr = sd[0].src.addr, .len = 16 };
	static uint8_t rbuf[16];
	void *ctx[2];
	bool ok;

	cfg_default(&cfg);
	ok = connect_pair(&p, &cfg);
	fence_rd = ctx[0] = nctx();
	fence_rctx = nctx();
	ctx[1] = nctx();
	fence_seen = fence_read_done = false;
	p.b.on_wc = fence_hook;
	p.b.user = &p;
	eu_fill(sd[1].src.addr, BIG_LEN, 5);
	ok = ok && !post_recv(&p.b, fence_rctx, rbuf, sizeof(rbuf)) &&
	     !post_read(&p.a, ctx[0], &rs, &sd[1].src, 0, 0) &&
	     !post_send(&p.a, ctx[1], &ss, 1, fence ? IW_WR_FENCE : 0);
	ok = ok && wait_list(&p, &p.a, ctx, 2, 10000) &&
	     eu_wait_ctx(LP, &p.b, fence_rctx, 5000) &&
	     check_once(&p.a, ctx, 2, IW_WC_SUCCESS) &&
	     check_order(&p.a, ctx, 2);
	if (ok && !fence_seen)
		ok = bad("the Send never arrived");
	if (ok && memcmp(sd[0].dst.addr, sd[1].src.addr, BIG_LEN))
		ok = bad("Read data differs");
	*early = !fence_read_done;
	eu_pair_fini(&p);
	return ok;
}

static void test_fence(void)
{
	bool early = true, ok;

	ok = fence_run(true, &early);
	if (ok && early)
		ok = bad("the peer received the fenced Send before the Read completed");
	report(ok, "order: a fenced Send after a Read is seen only after the Read completed");
	if (fence_run(false, &early))
		tap_diag("  control without FENCE: Send seen %s the Read completed",
			 early ? "before" : "after");
}

/* ---- memory: keys, invalidation, access errors */

static void test_mr_rekey(void)
{
	struct eu_buf b;
	uint32_t s1, s2, s3;
	bool ok;
	int i;

	ok = !eu_buf_alloc(&b, env.pd, 4096, IW_ACC_REMOTE_WRITE, true);
	s1 = b.stag;
	ok = ok && iw_mr_valid(b.mr) && !iw_mr_invalidate(b.mr) &&
	     !iw_mr_valid(b.mr);
	if (!ok) {
		bad("register/invalidate state wrong");
	} else {
		/*
		 * 12 random key bits: 20000 rekeys would repeat the key two
		 * back about five times if the engine allowed it.
		 */
		s2 = iw_mr_rekey(b.mr);
		for (i = 0; ok && i < 20000; i++) {
			s3 = iw_mr_rekey(b.mr);
			if (s3 == s2 || s3 == s1)
				ok = bad("rekey %d: STag %#x after %#x %#x", i,
					 s3, s1, s2);
			else if (iw_mr_stag(b.mr) != s3 || !iw_mr_valid(b.mr))
				ok = bad("stag %#x valid %d after rekey",
					 iw_mr_stag(b.mr), iw_mr_valid(b.mr));
			s1 = s2;
			s2 = s3;
		}
	}
	report(ok, "mr: invalidate makes a region invalid, rekey avoids the last two STags");
	eu_buf_free(&b);
}

/* ---- QP memory: prepared ahead, and reused once freed */

static long minor_faults(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return r.ru_minflt;
}

/*
 * A server prepares the next QP's block while its peer answers
 * (iw_qp_prepare): creating that QP then faults no page in. A destroyed
 * QP's block serves the next QP of its size. A QP of a size nobody
 * prepared shows that the count does see the faults.
 */
static void test_qp_memory(void)
{
	struct iw_qp_attr a = { .sq_size = 256, .rq_size = 203 };
	struct iw_qp_attr b = { .sq_size = 256, .rq_size = 205 };
	struct iw_qp *q1 = NULL, *q2 = NULL, *q3 = NULL;
	long f1, f2, f3;
	int tries = 0;
	bool ok;

	/*
	 * The kernel may fault a page in now and then on its own (seen
	 * once in many runs under ASan): a fresh block is prepared again,
	 * at most 3 times. Without iw_qp_prepare every try faults.
	 */
	do {
		if (tries++) {
			iw_qp_destroy(q2);
			q2 = NULL;
			iw_mem_spares_free();
		}
		iw_qp_prepare(&a);
		f1 = minor_faults();
		ok = !iw_qp_create(env.pd, &a, &q1);
		f1 = minor_faults() - f1;
		ok = ok && !iw_qp_destroy(q1);
		f2 = minor_faults();
		ok = ok && !iw_qp_create(env.pd, &a, &q2);
		f2 = minor_faults() - f2;
	} while (ok && (f1 || f2) && tries < 3);
	f3 = minor_faults();
	ok = ok && !iw_qp_create(env.pd, &b, &q3);
	f3 = minor_faults() - f3;
	if (!ok)
		bad("QP create/destroy failed");
	else if (f1 || f2 || q2 != q1)
		ok = bad("prepared: %ld faults; again after destroy: %ld "
			 "faults, %s block", f1, f2, q2 == q1 ? "same" : "new");
	else if (f3 < 2)
		ok = bad("an unprepared QP: %ld faults, expected its header's "
			 "two pages at least", f3);
	report(ok, "qp memory: a prepared QP and one made after a destroy "
	       "fault no page in (%ld, %ld, try %d; unprepared %ld)", f1, f2,
	       tries, f3);
	if (q2)
		iw_qp_destroy(q2);
	if (q3)
		iw_qp_destroy(q3);
}

static const struct iw_err err_tagged_stag = { IW_LAYER_DDP, DDP_ETYPE_TAGGED,
					       DDP_ECODE_T_INVALID_STAG, NULL };

/* A Write to a locally invalidated STag; work flushes exactly once. */
static void test_write_invalidated(void)
{
	static uint8_t abuf[2][64], bbuf[2][64], msg[100];
	struct iw_sge ws = { .addr = msg, .len = 100 };
	struct iw_sge ss = { .addr = msg, .len = 10 };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct both_failed f = { .p = &p, .na = 4, .nb = 2 };
	struct eu_buf t;
	void *actx[4], *bctx[2];
	int i;
	bool ok;

	cfg_default(&cfg);
	ok = connect_pair(&p, &cfg) &&
	     !eu_buf_alloc(&t, env.pd, 4096,
			   IW_ACC_LOCAL_WRITE | IW_ACC_REMOTE_WRITE, true);
	for (i = 0; i < 4; i++)
		actx[i] = nctx();
	bctx[0] = nctx();
	bctx[1] = nctx();
	memset(t.addr, CANARY, 4096);
	ok = ok && !iw_mr_invalidate(t.mr) &&
	     !post_recv(&p.a, actx[0], abuf[0], 64) &&
	     !post_recv(&p.a, actx[1], abuf[1], 64) &&
	     !post_recv(&p.b, bctx[0], bbuf[0], 64) &&
	     !post_recv(&p.b, bctx[1], bbuf[1], 64) &&
	     !post_write(&p.a, actx[2], &ws, t.stag, eu_to(&t, 0)) &&
	     !post_send(&p.a, actx[3], &ss, 1, 0);
	if (ok && !eu_run(LP, done_failed_and_flushed, &f, 3000))
		ok = bad("timeout: the error did not reach both sides");
	ok = ok && check_fail_ev(&p.a, true, &err_tagged_stag, NULL);
	report(ok, "mr: Write to an invalidated STag: writer gets ERROR remote, DDP 1/1/0");
	if (!ok)
		pair_diag(&p);
	ok = check_fail_ev(&p.b, false, &err_tagged_stag, NULL);
	report(ok, "mr: Write to an invalidated STag: target reports DDP 1/1/0 locally");
	ok = check_once(&p.a, actx, 2, IW_WC_FLUSHED) &&
	     check_once(&p.a, actx + 2, 2, -1) &&
	     check_once(&p.b, bctx, 2, IW_WC_FLUSHED);
	if (ok && eu_find_not(t.addr, 4096, CANARY) != 4096)
		ok = bad("data was placed into the invalid region");
	if (ok && (post_recv(&p.a, nctx(), NULL, 0) != -ENOTCONN ||
		   post_send(&p.a, nctx(), NULL, 0, 0) != -ENOTCONN))
		ok = bad("posting after the error did not return -ENOTCONN");
	eu_qp_destroy(&p.a);
	eu_qp_destroy(&p.b);
	ok = ok && check_once(&p.a, actx, 4, -1) &&
	     check_once(&p.b, bctx, 2, -1);
	report(ok, "mr: after the error all posted work completed exactly once (flushed)");
	eu_pair_fini(&p);
	eu_buf_free(&t);
}

struct acc_row {
	const char *what;
	enum iw_wr_opcode op;
	unsigned int access;
	bool invalidate;
	bool bogus_stag;
	size_t off, len;
	struct iw_err want, alt;	/* alt.layer 0xff: none */
};

#define NO_ALT { 0xff, 0, 0, NULL }
static const struct acc_row acc_rows[] = {
	{ "Write beyond the end", IW_WR_WRITE, IW_ACC_REMOTE_WRITE, false,
	  false, 4050, 100, { 1, 1, 1, NULL }, NO_ALT },
	{ "Write without remote write right", IW_WR_WRITE,
	  IW_ACC_REMOTE_READ, false, false, 0, 100, { 1, 1, 0, NULL },
	  { 0, 1, 2, NULL } },
	{ "Write to an unknown STag", IW_WR_WRITE, IW_ACC_REMOTE_WRITE, false,
	  true, 0, 100, { 1, 1, 0, NULL }, NO_ALT },
	{ "Read from an invalidated STag", IW_WR_READ, IW_ACC_REMOTE_READ,
	  true, false, 0, 100, { 0, 1, 0, NULL }, NO_ALT },
	{ "Read without remote read right", IW_WR_READ, IW_ACC_REMOTE_WRITE,
	  false, false, 0, 100, { 0, 1, 2, NULL }, NO_ALT },
	{ "Read beyond the end", IW_WR_READ, IW_ACC_REMOTE_READ, false,
	  false, 4000, 200, { 0, 1, 1, NULL }, NO_ALT },
};

static bool acc_case(const struct acc_row *r)
{
	static uint8_t buf[4096];
	struct iw_sge sg = { .addr = buf, .len = (uint32_t)r->len };
	const struct iw_err *alt = r->alt.layer == 0xff ? NULL : &r->alt;
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct both_failed f = { .p = &p, .na = 1 };
	struct eu_buf t;
	uint32_t stag;
	void *ctx = nctx();
	bool ok;

	cfg_default(&cfg);
	if (eu_buf_alloc(&t, env.pd, 4096, r->access, true))
		return bad("register failed");
	ok = connect_pair(&p, &cfg);
	stag = r->bogus_stag ? t.stag ^ 0xa5a5a5a5u : t.stag;
	if (ok && r->invalidate)
		ok = !iw_mr_invalidate(t.mr);
	if (ok && r->op == IW_WR_WRITE)
		ok = !post_write(&p.a, ctx, &sg, stag, eu_to(&t, r->off));
	else if (ok)
		ok = !post_read(&p.a, ctx, &sg, &t, r->off, 0);
	if (!ok && !why[0])
		bad("post failed");
	if (ok && !eu_run(LP, done_failed_and_flushed, &f, 3000))
		ok = bad("timeout: the error did not reach both sides");
	ok = ok && check_fail_ev(&p.a, true, &r->want, alt) &&
	     check_fail_ev(&p.b, false, &r->want, alt) &&
	     check_once(&p.a, &ctx, 1, -1);
	if (ok && r->op == IW_WR_READ &&
	    eu_find_wc(&p.a, ctx)->status == IW_WC_SUCCESS)
		ok = bad("the failed Read completed successfully");
	eu_pair_fini(&p);
	eu_buf_free(&t);
	return ok;
}

static void test_access_errors(void)
{
	size_t i;

	for (i = 0; i < sizeof(acc_rows) / sizeof(acc_rows[0]); i++)
		report(acc_case(&acc_rows[i]), "access: %s: Terminate %s%s%s",
		       acc_rows[i].what, eu_err_str(&acc_rows[i].want),
		       acc_rows[i].alt.layer == 0xff ? "" : " or ",
		       acc_rows[i].alt.layer == 0xff ?
			       "" :
			       eu_err_str(&acc_rows[i].alt));
}

/* Send with Invalidate against a region that allows it. */
static void test_send_inv_ok(void)
{
	static uint8_t rbuf[64], msg[32];
	struct iw_sge ss = { .addr = msg, .len = 32 };
	struct iw_sge ws = { .addr = msg, .len = 8 };
	struct iw_send_wr wr = { .ctx = nctx(), .op = IW_WR_SEND_INV,
				 .flags = IW_WR_SIGNALED, .sgl = &ss,
				 .num_sge = 1 };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct both_failed f = { .p = &p, .na = 2 };
	struct eu_buf t;
	void *rctx = nctx(), *wctx = nctx();
	bool ok;

	cfg_default(&cfg);
	ok = !eu_buf_alloc(&t, env.pd, 4096,
			   IW_ACC_REMOTE_WRITE | IW_ACC_REMOTE_INVALIDATE,
			   true) &&
	     connect_pair(&p, &cfg);
	wr.inv_stag = t.stag;
	ok = ok && !post_recv(&p.b, rctx, rbuf, 64) &&
	     !iw_qp_post_send(p.a.qp, &wr) &&
	     eu_wait_ctx(LP, &p.b, rctx, 3000) &&
	     check_wc(&p.b, rctx, IW_WC_RECV, 32, IW_WC_F_INV, t.stag);
	if (ok && iw_mr_valid(t.mr))
		ok = bad("region still valid after Send with Invalidate");
	report(ok, "mr: Send with Invalidate invalidates a region with the right");
	ok = ok && !post_write(&p.a, wctx, &ws, t.stag, eu_to(&t, 0));
	if (ok && !eu_run(LP, done_failed_and_flushed, &f, 3000))
		ok = bad("a Write to the invalidated STag did not fail");
	ok = ok && check_fail_ev(&p.a, true, &err_tagged_stag, NULL);
	report(ok, "mr: a Write to the remotely invalidated STag then fails with 1/1/0");
	eu_pair_fini(&p);
	eu_buf_free(&t);
}

/* Without IW_ACC_REMOTE_INVALIDATE: RDMAP 0/1/9 or 0/2/9. */
static void test_send_inv_denied(void)
{
	static const struct iw_err e19 = { 0, 1, 9, NULL }, e29 = { 0, 2, 9, NULL };
	static uint8_t rbuf[64], msg[32];
	struct iw_sge ss = { .addr = msg, .len = 32 };
	struct iw_send_wr wr = { .ctx = nctx(), .op = IW_WR_SEND_INV,
				 .flags = IW_WR_SIGNALED, .sgl = &ss,
				 .num_sge = 1 };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct both_failed f = { .p = &p, .na = 1, .nb = 1 };
	struct eu_buf t;
	const struct eu_ev *e;
	void *rctx = nctx();
	bool ok;

	cfg_default(&cfg);
	ok = !eu_buf_alloc(&t, env.pd, 4096, IW_ACC_REMOTE_WRITE, true) &&
	     connect_pair(&p, &cfg);
	wr.inv_stag = t.stag;
	ok = ok && !post_recv(&p.b, rctx, rbuf, 64) &&
	     !iw_qp_post_send(p.a.qp, &wr);
	if (ok && !eu_run(LP, done_failed_and_flushed, &f, 3000))
		ok = bad("timeout: no error on both sides");
	ok = ok && check_fail_ev(&p.b, false, &e19, &e29) &&
	     check_fail_ev(&p.a, true, &e19, &e29) &&
	     check_once(&p.b, &rctx, 1, -1) &&
	     check_once(&p.a, &wr.ctx, 1, -1);
	if (ok && !iw_mr_valid(t.mr))
		ok = bad("the region was invalidated without the right");
	e = eu_fail_ev(&p.b);
	if (e)
		tap_diag("  engine: receiver terminated with %s, receive status %s",
			 eu_err_str(&e->err),
			 eu_find_wc(&p.b, rctx) ?
				 eu_status_str(eu_find_wc(&p.b, rctx)->status) :
				 "none");
	e = eu_fail_ev(&p.a);
	if (e)
		tap_diag("  engine: sender got %s remote %d err %s, send status %s",
			 eu_ev_str(e->type), e->remote, eu_err_str(&e->err),
			 eu_find_wc(&p.a, wr.ctx) ?
				 eu_status_str(eu_find_wc(&p.a, wr.ctx)->status) :
				 "none");
	report(ok, "mr: Send with Invalidate without the right: Terminate 0/1/9 or 0/2/9, region stays valid");
	eu_pair_fini(&p);
	eu_buf_free(&t);
}

/* ---- close */

static bool done_both_disc(void *arg)
{
	struct eu_pair *p = arg;

	return eu_qp_failed(&p->a) && eu_qp_failed(&p->b);
}

static bool check_disconnected(const struct eu_qp *q)
{
	const struct eu_ev *e = eu_fail_ev(q);

	if (!e || e->type != IW_CM_DISCONNECTED)
		return bad("%s: first failure event %s", q->name,
			   e ? eu_ev_str(e->type) : "none");
	if (e->status)
		return bad("%s: DISCONNECTED with status %d", q->name,
			   e->status);
	if (eu_count_ev(q, IW_CM_DISCONNECTED) != 1 ||
	    eu_count_ev(q, IW_CM_ERROR))
		return bad("%s: %d DISCONNECTED, %d ERROR events", q->name,
			   eu_count_ev(q, IW_CM_DISCONNECTED),
			   eu_count_ev(q, IW_CM_ERROR));
	return true;
}

#define CL_RLEN (128u << 10)

/* Posts n receives of CL_RLEN octets from side's dst buffer. */
static bool post_recvs(struct eu_qp *q, int side, void **ctx, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		ctx[i] = nctx();
		if (post_recv(q, ctx[i], sd[side].dst.addr + i * CL_RLEN,
			      CL_RLEN))
			return bad("%s: post_recv %d failed", q->name, i);
	}
	return true;
}

static void test_close_graceful(void)
{
	struct iw_sge s1 = { .addr = sd[0].src.addr, .len = 1000 };
	struct iw_sge s2 = { .addr = sd[1].src.addr, .len = 1000 };
	struct iw_sge s3 = { .addr = sd[0].src.addr, .len = 100000 };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	void *actx[4], *bctx[4], *sctx[3] = { nctx(), nctx(), nctx() };
	bool ok;

	cfg_default(&cfg);
	eu_fill(sd[0].src.addr, 100000, 11);
	ok = connect_pair(&p, &cfg) && post_recvs(&p.a, 0, actx, 4) &&
	     post_recvs(&p.b, 1, bctx, 4);
	ok = ok && !post_send(&p.a, sctx[0], &s1, 1, 0) &&
	     !post_send(&p.b, sctx[1], &s2, 1, 0) &&
	     eu_wait_ctx(LP, &p.b, bctx[0], 3000) &&
	     eu_wait_ctx(LP, &p.a, actx[0], 3000);
	if (!ok && !why[0])
		bad("traffic before the close failed");
	ok = ok && !post_send(&p.a, sctx[2], &s3, 1, 0) &&
	     !iw_qp_disconnect(p.a.qp);
	if (ok && !eu_run(LP, done_both_disc, &p, 3000))
		ok = bad("timeout waiting for both sides to close");
	ok = ok && check_disconnected(&p.a) && check_disconnected(&p.b);
	report(ok, "close: graceful disconnect after traffic: DISCONNECTED on both sides");
	if (!ok)
		pair_diag(&p);
	ok = check_once(&p.a, sctx, 1, IW_WC_SUCCESS) &&
	     check_once(&p.a, sctx + 2, 1, IW_WC_SUCCESS) &&
	     check_wc(&p.b, bctx[1], IW_WC_RECV, 100000, 0, 0);
	if (ok && memcmp(sd[1].dst.addr + CL_RLEN, sd[0].src.addr, 100000))
		ok = bad("the last message's data differs");
	report(ok, "close: a Send posted before iw_qp_disconnect is delivered");
	eu_idle(LP, 100);
	ok = check_once(&p.a, actx + 1, 3, IW_WC_FLUSHED) &&
	     check_once(&p.b, bctx + 2, 2, IW_WC_FLUSHED);
	report(ok, "close: after DISCONNECTED the remaining receives are flushed once");
	ok = post_recv(&p.a, nctx(), NULL, 0) == -ENOTCONN &&
	     post_send(&p.b, nctx(), NULL, 0, 0) == -ENOTCONN;
	report(ok || bad("posting on a closed QP did not return -ENOTCONN"),
	       "close: posting after the close returns -ENOTCONN");
	eu_qp_destroy(&p.a);
	eu_qp_destroy(&p.b);
	ok = check_once(&p.a, actx, 4, -1) && check_once(&p.b, bctx, 4, -1) &&
	     check_once(&p.a, sctx, 1, -1) && check_once(&p.b, sctx + 1, 1, -1);
	report(ok, "close: after destroy every receive completed exactly once");
	eu_pair_fini(&p);
}

static bool is_local_catastrophic(const struct iw_err *e)
{
	return eu_err_is(e, IW_LAYER_LLP, MPA_ETYPE,
			 MPA_ECODE_LOCAL_CATASTROPHIC) ||
	       (e->layer == IW_LAYER_RDMAP &&
		e->etype == RDMAP_ETYPE_CATASTROPHIC);
}

/* Abort with a Read outstanding (idle) or a 4 MiB Write in flight. */
static void abort_case(bool busy)
{
	struct iw_sge rs = { .addr = sd[0].dst.addr + 4 * CL_RLEN,
			     .len = 1 << 20 };
	struct iw_sge ws = { .addr = sd[0].src.addr, .len = BIG_LEN };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	void *actx[3], *bctx[3], *op = nctx();
	const struct eu_ev *e;
	const char *what = busy ? "with a 4 MiB Write in flight" :
				  "with a Read outstanding";
	bool ok;

	cfg_default(&cfg);
	ok = connect_pair(&p, &cfg) && post_recvs(&p.a, 0, actx, 3) &&
	     post_recvs(&p.b, 1, bctx, 3);
	if (ok && busy)
		ok = !post_write(&p.a, op, &ws, sd[1].dst.stag,
				 eu_to(&sd[1].dst, 0));
	else if (ok)
		ok = !post_read(&p.a, op, &rs, &sd[1].src, 0, 0);
	ok = ok && !iw_qp_abort(p.a.qp);
	if (!ok && !why[0])
		bad("post or abort failed");
	if (ok && !eu_wait_n_wc(LP, &p.b, 3, 3000))
		ok = bad("the peer's receives were not flushed");
	e = eu_fail_ev(&p.b);
	if (ok && busy && (!e || (e->type != IW_CM_ERROR &&
				  e->type != IW_CM_DISCONNECTED)))
		ok = bad("peer event %s", e ? eu_ev_str(e->type) : "none");
	else if (ok && !busy &&
		 (!e || e->type != IW_CM_ERROR || !e->remote ||
		  !is_local_catastrophic(&e->err)))
		ok = bad("peer event %s remote %d err %s",
			 e ? eu_ev_str(e->type) : "none", e ? e->remote : 0,
			 e ? eu_err_str(&e->err) : "-");
	if (e)
		tap_diag("  abort %s: peer saw %s remote %d err %s", what,
			 eu_ev_str(e->type), e->remote, eu_err_str(&e->err));
	report(ok, "close: abort %s: peer gets %s", what,
	       busy ? "ERROR or DISCONNECTED" :
		      "ERROR remote=true, local catastrophic");
	eu_idle(LP, 50);
	ok = check_once(&p.a, actx, 3, IW_WC_FLUSHED) &&
	     check_once(&p.a, &op, 1, -1) &&
	     check_once(&p.b, bctx, 3, IW_WC_FLUSHED);
	if (ok && !busy && eu_find_wc(&p.a, op)->status == IW_WC_SUCCESS)
		ok = bad("the aborted Read completed successfully");
	eu_qp_destroy(&p.a);
	eu_qp_destroy(&p.b);
	ok = ok && check_once(&p.a, actx, 3, -1) &&
	     check_once(&p.a, &op, 1, -1) && check_once(&p.b, bctx, 3, -1);
	report(ok, "close: abort %s: all work flushed exactly once on both sides",
	       what);
	eu_pair_fini(&p);
}

static void test_close_abort(void)
{
	abort_case(false);
	abort_case(true);
}

/* ---- shared receive queue */

#define SRQ_N 20

/* QP k got messages k/0, k/1, ... in order, from the SRQ's buffers. */
static bool srq_check_qp(const struct eu_qp *q, int k, void *const *rctx,
			 const uint8_t *rbuf)
{
	size_t i, idx;

	for (i = 0; i < SRQ_N; i++) {
		const struct iw_wc *wc = &q->wc[i];
		const uint8_t *d;

		idx = (uintptr_t)wc->ctx - (uintptr_t)rctx[0];
		if (idx >= 2 * SRQ_N)
			return bad("QP %d message %zu: unknown ctx %p", k, i,
				   wc->ctx);
		d = rbuf + idx * 64;
		if (wc->status != IW_WC_SUCCESS || wc->op != IW_WC_RECV)
			return bad("QP %d message %zu: status %s", k, i,
				   eu_status_str(wc->status));
		if (wc->byte_len != 2 + i || d[0] != k || d[1] != i)
			return bad("QP %d message %zu: len %u from %u seq %u",
				   k, i, wc->byte_len, d[0], d[1]);
	}
	return true;
}

static void test_srq(void)
{
	static uint8_t rbuf[2 * SRQ_N][64];
	struct iw_recv_wr rwr;
	struct iw_sge rsg[2 * SRQ_N], ssg[2][SRQ_N];
	struct eu_pair_cfg cfg;
	struct eu_pair p[2];
	struct iw_srq *srq = NULL;
	static uint8_t msg[2][SRQ_N][32];
	void *rctx[2 * SRQ_N];
	int i, k, rc;
	bool ok;

	rc = iw_srq_create(env.pd, 64, &srq);
	ok = !rc || bad("iw_srq_create: %d", rc);
	cfg_default(&cfg);
	cfg.resp_attr.srq = srq;
	ok = ok && connect_pair(&p[0], &cfg) && connect_pair(&p[1], &cfg);
	for (i = 0; ok && i < 2 * SRQ_N; i++) {
		rctx[i] = nctx();
		rsg[i] = (struct iw_sge){ .addr = rbuf[i], .len = 64 };
		rwr = (struct iw_recv_wr){ .ctx = rctx[i], .sgl = &rsg[i],
					   .num_sge = 1 };
		ok = !iw_srq_post_recv(srq, &rwr) || bad("srq post %d", i);
	}
	for (i = 0; ok && i < SRQ_N; i++) {
		for (k = 0; k < 2 && ok; k++) {
			msg[k][i][0] = (uint8_t)k;
			msg[k][i][1] = (uint8_t)i;
			ssg[k][i] = (struct iw_sge){ .addr = msg[k][i],
						     .len = 2 + (uint32_t)i };
			ok = !post_send(&p[k].a, nctx(), &ssg[k][i], 1, 0);
		}
	}
	for (k = 0; ok && k < 2; k++)
		if (!eu_wait_n_wc(LP, &p[k].b, SRQ_N, 5000))
			ok = bad("QP %d got %zu of %d messages", k, p[k].b.n_wc,
				 SRQ_N);
	for (k = 0; ok && k < 2; k++)
		ok = srq_check_qp(&p[k].b, k, rctx, &rbuf[0][0]);
	for (i = 0; ok && i < 2 * SRQ_N; i++)
		if (eu_count_ctx(&p[0].b, rctx[i]) +
			    eu_count_ctx(&p[1].b, rctx[i]) > 1)
			ok = bad("receive %d completed twice", i);
	report(ok, "srq: two QPs on one SRQ receive their own messages in order");
	eu_pair_fini(&p[0]);
	eu_pair_fini(&p[1]);
	/* the unused receives flush at destroy */
	rc = srq ? iw_srq_destroy(srq) : 0;
	report(rc == 0 || bad("iw_srq_destroy: %d", rc),
	       "srq: destroyed after its QPs");
}

/* ---- peek placement */

#define PK_N 9
#define PK_PEEK 16
#define PK_MAGIC 0x5045454bu

struct pk_msg {
	enum iw_wr_opcode op;
	uint32_t len;
	bool discard;
};

static const struct pk_msg pk_msgs[PK_N] = {
	{ IW_WR_SEND, 16, false },	{ IW_WR_SEND_SE, 1000, false },
	{ IW_WR_SEND, 5, false },	{ IW_WR_SEND, 0, false },
	{ IW_WR_SEND, 70000, false },	{ IW_WR_SEND, 300000, false },
	{ IW_WR_SEND, 3000, true },	{ IW_WR_SEND_INV, 100, false },
	{ IW_WR_SEND, 17, false },
};

struct pk_seen {
	uint32_t msn, peek_len, seg_len;
	bool last;
	unsigned int flags;
	uint32_t inv_stag;
	uint8_t peek[PK_PEEK];
	void *ctx;
};

static struct {
	int n;
	struct pk_seen seen[PK_N + 4];
	uint8_t *src[PK_N];
	uint8_t *dst[PK_N];
	size_t room[PK_N];
} pk;

static uint32_t pk_peeked(uint32_t len)
{
	return len < PK_PEEK ? len : PK_PEEK;
}

/* The header (when there is room for it) names the destination. */
static int pk_place(struct eu_qp *q, const struct iw_place *p,
		    struct iw_sge *dst, void **ctx)
{
	struct pk_seen *s;
	size_t k = (size_t)pk.n, first;

	if (pk.n >= PK_N + 4)
		return -1;
	s = &pk.seen[pk.n++];
	*s = (struct pk_seen){ .msn = p->msn, .peek_len = p->peek_len,
			       .seg_len = p->seg_len, .last = p->last,
			       .flags = p->flags, .inv_stag = p->inv_stag };
	memcpy(s->peek, p->peek, p->peek_len < PK_PEEK ? p->peek_len : PK_PEEK);
	if (p->peek_len >= 8 && iw_get32(p->peek) == PK_MAGIC)
		k = iw_get32(p->peek + 4);
	if (k >= PK_N)
		return -1;
	s->ctx = *ctx = &pk.dst[k];
	if (p->peek_len >= 16 && iw_get32(p->peek + 12))
		return 0;
	first = pk.room[k] < 100 ? pk.room[k] : 100;
	dst[0] = (struct iw_sge){ .addr = pk.dst[k], .len = (uint32_t)first };
	dst[1] = (struct iw_sge){ .addr = pk.dst[k] + first,
				  .len = (uint32_t)(pk.room[k] - first) };
	return 2;
}

static bool pk_setup(void)
{
	int k;

	memset(&pk, 0, sizeof(pk));
	for (k = 0; k < PK_N; k++) {
		uint32_t len = pk_msgs[k].len;

		pk.room[k] = len - pk_peeked(len) + RSLACK;
		pk.src[k] = malloc(len + 1);
		pk.dst[k] = malloc(pk.room[k] + SLACK);
		if (!pk.src[k] || !pk.dst[k])
			return bad("out of memory");
		memset(pk.dst[k], CANARY, pk.room[k] + SLACK);
		eu_fill(pk.src[k], len, 1000u + (unsigned int)k);
		if (len < 16)
			continue;
		iw_put32(pk.src[k], PK_MAGIC);
		iw_put32(pk.src[k] + 4, (uint32_t)k);
		iw_put32(pk.src[k] + 8, len);
		iw_put32(pk.src[k] + 12, pk_msgs[k].discard);
	}
	return true;
}

static void pk_free(void)
{
	int k;

	for (k = 0; k < PK_N; k++) {
		free(pk.src[k]);
		free(pk.dst[k]);
	}
}

static unsigned int pk_flags(int k)
{
	switch (pk_msgs[k].op) {
	case IW_WR_SEND_SE:
		return IW_WC_F_SE;
	case IW_WR_SEND_INV:
		return IW_WC_F_INV;
	default:
		return 0;
	}
}

/* What place() saw for each message. */
static bool pk_check_seen(uint32_t mulpdu, uint32_t inv_stag)
{
	int k;

	if (pk.n != PK_N)
		return bad("place() called %d times for %d messages", pk.n,
			   PK_N);
	for (k = 0; k < PK_N; k++) {
		const struct pk_seen *s = &pk.seen[k];
		uint32_t len = pk_msgs[k].len;
		bool one = len + DDP_UNTAGGED_HDR <= mulpdu;

		if (s->peek_len != pk_peeked(len) ||
		    memcmp(s->peek, pk.src[k], s->peek_len))
			return bad("message %d: peek %u octets, want %u", k,
				   s->peek_len, pk_peeked(len));
		if (s->msn != pk.seen[0].msn + (uint32_t)k ||
		    pk.seen[0].msn != 1)
			return bad("message %d: MSN %u (first %u)", k, s->msn,
				   pk.seen[0].msn);
		if (s->flags != pk_flags(k) ||
		    ((s->flags & IW_WC_F_INV) && s->inv_stag != inv_stag))
			return bad("message %d: flags %#x inv %#x", k, s->flags,
				   s->inv_stag);
		if (s->seg_len > len || s->last != (s->seg_len == len) ||
		    (one && s->seg_len != len))
			return bad("message %d (%u octets): seg_len %u last %d",
				   k, len, s->seg_len, s->last);
	}
	return true;
}

/* Completions carry place()'s ctx; data lands after the peeked part. */
static bool pk_check_done(const struct eu_qp *q, int *total_len)
{
	int k;

	if (q->n_wc != PK_N)
		return bad("%zu completions for %d messages", q->n_wc, PK_N);
	for (k = 0; k < PK_N; k++) {
		const struct iw_wc *wc = &q->wc[k];
		uint32_t len = pk_msgs[k].len, rest = len - pk_peeked(len);

		if (wc->ctx != pk.seen[k].ctx || wc->status != IW_WC_SUCCESS ||
		    wc->op != IW_WC_RECV || wc->flags != pk_flags(k))
			return bad("message %d: ctx %p (want %p) status %s flags %#x",
				   k, wc->ctx, pk.seen[k].ctx,
				   eu_status_str(wc->status), wc->flags);
		if (wc->byte_len != len && wc->byte_len != rest)
			return bad("message %d: byte_len %u, want %u", k,
				   wc->byte_len, len);
		*total_len += wc->byte_len == len;
		if (pk_msgs[k].discard) {
			if (eu_find_not(pk.dst[k], pk.room[k] + SLACK,
					CANARY) != pk.room[k] + SLACK)
				return bad("discarded message %d was placed",
					   k);
			continue;
		}
		if (memcmp(pk.dst[k], pk.src[k] + pk_peeked(len), rest) ||
		    eu_find_not(pk.dst[k] + rest, RSLACK + SLACK, CANARY) !=
			    RSLACK + SLACK)
			return bad("message %d: placed data wrong", k);
	}
	return true;
}

static void test_peek(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct iw_sge sg[PK_N];
	void *sctx[PK_N];
	int k, full = 0;
	bool ok;

	cfg_default(&cfg);
	cfg.init.rtr = IW_RTR_WRITE;
	cfg.resp_attr.peek_len = PK_PEEK;
	ok = pk_setup() && connect_pair(&p, &cfg);
	p.b.place = pk_place;
	for (k = 0; ok && k < PK_N; k++) {
		struct iw_send_wr wr = { .ctx = sctx[k] = nctx(),
					 .op = pk_msgs[k].op,
					 .flags = IW_WR_SIGNALED,
					 .sgl = &sg[k], .num_sge = 1,
					 .inv_stag = sd[1].inv.stag };

		sg[k] = (struct iw_sge){ .addr = pk.src[k],
					 .len = pk_msgs[k].len };
		ok = !iw_qp_post_send(p.a.qp, &wr) || bad("post %d", k);
	}
	ok = ok && wait_list(&p, &p.a, sctx, PK_N, 5000) &&
	     check_once(&p.a, sctx, PK_N, IW_WC_SUCCESS);
	if (ok && !eu_wait_n_wc(LP, &p.b, PK_N, 5000))
		ok = bad("%zu of %d messages completed", p.b.n_wc, PK_N);
	if (!ok)
		pair_diag(&p);
	ok = ok && pk_check_seen(eu_est(&p.a)->mulpdu, sd[1].inv.stag);
	report(ok, "peek: place() sees the first octets, MSN, flags and segment of each Send");
	ok = ok && pk_check_done(&p.b, &full);
	report(ok, "peek: completions carry place()'s ctx; data lands after the peek; discard works");
	tap_diag("  peek: byte_len counted the whole message in %d of %d completions",
		 full, PK_N);
	ok = !iw_mr_valid(sd[1].inv.mr);
	report(ok || bad("still valid"),
	       "peek: Send with Invalidate in peek mode invalidates the STag");
	if (!iw_mr_valid(sd[1].inv.mr))
		sd[1].inv.stag = iw_mr_rekey(sd[1].inv.mr);
	eu_pair_fini(&p);
	pk_free();
}

/* ---- a pipeline of small sends with credits */

#define PL_N 10000
#define PL_RQ 128
#define PL_SIG 16
#define PL_RCTX(i) ((void *)(uintptr_t)(0x4000000u + (i)))
#define PL_SCTX(i) ((void *)(uintptr_t)(0x5000000u + (i)))

static struct {
	bool active;
	struct eu_qp *rq;
	uint8_t rbuf[PL_RQ][64];
	uint8_t sbuf[256][64];
	int credits;
	uint32_t next_rx;
	int n_bad;
} pl;

static uint32_t pl_len(uint32_t seq)
{
	return 4 + seq % 61;
}

static void pl_msg(uint8_t *b, uint32_t seq)
{
	eu_fill(b, pl_len(seq), seq);
	iw_put32(b, seq);
}

static void pl_bad(const char *fmt, uint32_t a, uint32_t b)
{
	if (!pl.n_bad++)
		bad(fmt, a, b);
}

/* Receiver: check in order, repost the buffer, return a credit. */
static void pl_on_wc(struct eu_qp *q, const struct iw_wc *wc)
{
	size_t slot = (uintptr_t)wc->ctx - (uintptr_t)PL_RCTX(0);
	uint8_t want[64];

	if (!pl.active)
		return;
	if (slot >= PL_RQ || wc->status != IW_WC_SUCCESS) {
		pl_bad("message %u: status %u", pl.next_rx, wc->status);
		return;
	}
	pl_msg(want, pl.next_rx);
	if (wc->byte_len != pl_len(pl.next_rx) ||
	    memcmp(pl.rbuf[slot], want, wc->byte_len))
		pl_bad("message %u: wrong length or data (len %u)",
		       pl.next_rx, wc->byte_len);
	pl.next_rx++;
	if (post_recv(q, wc->ctx, pl.rbuf[slot], 64))
		pl_bad("repost failed after %u (%u)", pl.next_rx, 0);
	pl.credits++;
}

static bool pl_can_send(void *arg)
{
	return pl.credits > 0 || pl.n_bad;
}

static bool pl_all_in(void *arg)
{
	return pl.next_rx >= PL_N || pl.n_bad;
}

/* Posts while credits last; returns the next sequence number. */
static uint32_t pl_post(struct eu_qp *q, uint32_t seq)
{
	while (pl.credits > 0 && seq < PL_N && !pl.n_bad) {
		uint8_t *b = pl.sbuf[seq % 256];
		struct iw_sge sg = { .addr = b, .len = pl_len(seq) };
		struct iw_send_wr wr = { .ctx = PL_SCTX(seq), .op = IW_WR_SEND,
					 .sgl = &sg, .num_sge = 1 };
		int rc;

		pl_msg(b, seq);
		if (seq % PL_SIG == PL_SIG - 1)
			wr.flags |= IW_WR_SIGNALED;
		if (seq & 1)
			wr.flags |= IW_WR_INLINE;
		rc = iw_qp_post_send(q->qp, &wr);
		if (rc == -EAGAIN) {
			eu_idle(LP, 1);
			continue;
		}
		if (rc) {
			pl_bad("post_send %u: %d", seq, (uint32_t)rc);
			break;
		}
		seq++;
		pl.credits--;
	}
	return seq;
}

static bool pl_check_sender(const struct eu_qp *q)
{
	size_t i;

	if (q->n_wc != PL_N / PL_SIG)
		return bad("%zu send completions, want %d", q->n_wc,
			   PL_N / PL_SIG);
	for (i = 0; i < q->n_wc; i++)
		if (q->wc[i].ctx != PL_SCTX(i * PL_SIG + PL_SIG - 1) ||
		    q->wc[i].status != IW_WC_SUCCESS)
			return bad("send completion %zu: ctx %p status %s", i,
				   q->wc[i].ctx,
				   eu_status_str(q->wc[i].status));
	return true;
}

static void test_pipeline(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	uint64_t t0 = eu_now_us(), end;
	uint32_t seq = 0;
	int i;
	bool ok;

	memset(&pl, 0, sizeof(pl));
	cfg_default(&cfg);
	ok = connect_pair(&p, &cfg);
	pl.active = true;
	p.b.on_wc = pl_on_wc;
	for (i = 0; ok && i < PL_RQ; i++)
		ok = !post_recv(&p.b, PL_RCTX(i), pl.rbuf[i], 64);
	pl.credits = PL_RQ;
	end = iw_now_ms() + 30000;
	while (ok && seq < PL_N && !pl.n_bad && iw_now_ms() < end) {
		seq = pl_post(&p.a, seq);
		eu_run(LP, pl_can_send, NULL, 2000);
		if (eu_qp_failed(&p.a) || eu_qp_failed(&p.b))
			ok = bad("connection failed after %u sends", seq);
	}
	ok = ok && eu_run(LP, pl_all_in, NULL, 5000) && !pl.n_bad;
	if (ok && pl.next_rx != PL_N)
		ok = bad("%u of %d messages arrived", pl.next_rx, PL_N);
	if (!ok)
		pair_diag(&p);
	report(ok, "pipeline: %d small sends, receives refilled on completion, arrive in order",
	       PL_N);
	tap_diag("  pipeline: %.1f ms", (double)(eu_now_us() - t0) / 1000);
	ok = ok && pl_check_sender(&p.a);
	report(ok, "pipeline: only the signaled sends complete, in order");
	pl.active = false;
	eu_pair_fini(&p);
}

/* Invalid requests on a connected QP. */
static void test_bad_requests(void)
{
	static uint8_t big[IW_MAX_INLINE + 1];
	struct iw_sge sg[IW_MAX_SGE + 1];
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	int i, rc1 = 0, rc2 = 0, rc3 = 0;
	bool ok;

	for (i = 0; i <= IW_MAX_SGE; i++)
		sg[i] = (struct iw_sge){ .addr = big, .len = 1 };
	cfg_default(&cfg);
	ok = connect_pair(&p, &cfg);
	if (ok) {
		struct iw_send_wr wr = { .op = IW_WR_SEND, .sgl = sg,
					 .num_sge = IW_MAX_SGE + 1 };
		struct iw_recv_wr rwr = { .sgl = sg,
					  .num_sge = IW_MAX_SGE + 1 };

		rc1 = iw_qp_post_send(p.a.qp, &wr);
		rc2 = iw_qp_post_recv(p.b.qp, &rwr);
		sg[0].len = IW_MAX_INLINE + 1;
		wr.num_sge = 1;
		wr.flags = IW_WR_INLINE;
		rc3 = iw_qp_post_send(p.a.qp, &wr);
		ok = rc1 == -EINVAL && rc2 == -EINVAL && rc3 == -EINVAL;
		if (!ok)
			bad("9 SGEs send %d recv %d, inline 257 octets %d", rc1,
			    rc2, rc3);
	}
	report(ok, "api: too many SGEs and oversized inline data: -EINVAL");
	eu_idle(LP, 20);
	report((!eu_qp_failed(&p.a) && !eu_qp_failed(&p.b)) ||
		       bad("a refused request broke the connection"),
	       "api: refused requests leave the connection up");
	eu_pair_fini(&p);
}

/* ---- flow control: a receiver that stops reading */

#define FC_LEN ((size_t)64 << 20)
#define FC_CHUNK ((size_t)1 << 20)
#define FC_N ((int)(FC_LEN / FC_CHUNK))
#define FC_MAX_US 50000

static bool fc_post_all(struct eu_pair *p, uint8_t *src, struct eu_buf *dst,
			void **ctx, uint64_t *max_us)
{
	static struct iw_sge sg[FC_N];
	uint64_t t0, dt;
	int i;

	for (i = 0; i < FC_N; i++) {
		ctx[i] = nctx();
		sg[i] = (struct iw_sge){ .addr = src + i * FC_CHUNK,
					 .len = (uint32_t)FC_CHUNK };
		t0 = eu_now_us();
		if (post_write(&p->a, ctx[i], &sg[i], dst->stag,
			       eu_to(dst, i * FC_CHUNK)))
			return bad("post_write %d failed", i);
		dt = eu_now_us() - t0;
		if (dt > *max_us)
			*max_us = dt;
	}
	return true;
}

/* Extra progress calls as a spurious wakeup would make them, timed. */
static void fc_spin(struct eu_qp *q, int n)
{
	uint64_t t0, dt;

	while (n--) {
		t0 = eu_now_us();
		if (iw_qp_progress(q->qp) < 0)
			q->finished = true;
		dt = eu_now_us() - t0;
		q->n_progress++;
		if (dt > q->max_progress_us)
			q->max_progress_us = dt;
	}
}

static void test_flow_control(void)
{
	static uint8_t none[1];
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct eu_buf dst = { 0 };
	uint8_t *src = malloc(FC_LEN);
	void *ctx[FC_N], *rctx = nctx(), *sctx = nctx();
	uint64_t max_post = 0;
	size_t held;
	bool ok;

	cfg_default(&cfg);
	cfg.init.crc = true;
	ok = src && !eu_buf_alloc(&dst, env.pd, FC_LEN,
				  IW_ACC_LOCAL_WRITE | IW_ACC_REMOTE_WRITE,
				  false) &&
	     connect_pair(&p, &cfg);
	if (src)
		eu_fill(src, FC_LEN, 4242);
	p.b.paused = true;
	p.a.max_progress_us = 0;
	ok = ok && fc_post_all(&p, src, &dst, ctx, &max_post);
	eu_idle(LP, 300);
	fc_spin(&p.a, 20);
	eu_idle(LP, 300);
	held = p.a.n_wc;
	if (ok && (max_post >= FC_MAX_US || p.a.max_progress_us >= FC_MAX_US))
		ok = bad("longest post_send %llu us, progress %llu us",
			 (unsigned long long)max_post,
			 (unsigned long long)p.a.max_progress_us);
	report(ok, "flow: receiver stopped: post_send and progress never block");
	tap_diag("  flow: %zu of %d Writes completed while the receiver slept; longest post %llu us, progress %llu us (%llu calls)",
		 held, FC_N, (unsigned long long)max_post,
		 (unsigned long long)p.a.max_progress_us,
		 (unsigned long long)p.a.n_progress);
	p.b.paused = false;
	ok = ok && wait_list(&p, &p.a, ctx, FC_N, 30000) &&
	     check_once(&p.a, ctx, FC_N, IW_WC_SUCCESS) &&
	     !post_recv(&p.b, rctx, none, 1) &&
	     !post_send(&p.a, sctx, NULL, 0, 0) &&
	     eu_wait_ctx(LP, &p.b, rctx, 10000) &&
	     check_wc(&p.b, rctx, IW_WC_RECV, 0, 0, 0);
	if (ok && (eu_hash(dst.addr, FC_LEN) != eu_hash(src, FC_LEN) ||
		   memcmp(dst.addr, src, FC_LEN)))
		ok = bad("the 64 MiB differ");
	if (ok && p.a.max_progress_us >= FC_MAX_US)
		ok = bad("a sender progress call took %llu us",
			 (unsigned long long)p.a.max_progress_us);
	if (!ok)
		pair_diag(&p);
	report(ok, "flow: all 64 MiB arrive intact once the receiver resumes");
	eu_pair_fini(&p);
	eu_buf_free(&dst);
	free(src);
}

/* ---- main */

static int n_only;
static char **only;

/* Runs fn when no names were given or name contains one of them. */
static void timed(const char *name, void (*fn)(void))
{
	uint64_t t0 = eu_now_us();
	int i;

	for (i = 0; i < n_only; i++)
		if (strstr(name, only[i]))
			break;
	if (n_only && i == n_only)
		return;
	fn();
	tap_diag("%s: %.0f ms", name, (double)(eu_now_us() - t0) / 1000);
}

/*
 * The listener's fd must wake its owner for the octets of a Request on a
 * connection it already accepted, not only for new connections: else the
 * Request waits for an unrelated wakeup or a timer.
 */
static void test_listener_wakes(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	struct iw_listener *l = NULL;
	struct pollfd pf = { .events = POLLIN };
	bool ok;
	int c = -1;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = !iw_listen(env.dev, (struct sockaddr *)&sin, sizeof(sin), 8,
			NULL, NULL, NULL, &l) &&
	     !iw_listener_getname(l, (struct sockaddr *)&sin, &sl);
	c = ok ? socket(AF_INET, SOCK_STREAM, 0) : -1;
	ok = ok && c >= 0 &&
	     !connect(c, (struct sockaddr *)&sin, sizeof(sin));
	pf.fd = ok ? iw_listener_fd(l) : -1;
	ok = ok && poll(&pf, 1, 2000) == 1;
	if (ok)
		iw_listener_progress(l);	/* accepts; nothing to read */
	report(ok && poll(&pf, 1, 0) == 0,
	       "listener fd: quiet once the connection is accepted");
	ok = ok && send(c, "MPA ID Req", 10, 0) == 10;
	report(ok && poll(&pf, 1, 2000) == 1 && (pf.revents & POLLIN),
	       "listener fd: readable when an accepted connection sends "
	       "part of its Request");
	if (ok)
		iw_listener_progress(l);
	report(ok && poll(&pf, 1, 0) == 0,
	       "listener fd: quiet again once the part is read");
	if (c >= 0)
		close(c);
	if (l)
		iw_listener_close(l);
}

/*
 * A connect whose TCP handshake is over when connect() returns (as on
 * loopback) sends the MPA Request from inside iw_qp_connect: it waits in
 * the peer's receive queue before any progress call (it used to leave
 * on the first progress turn that saw the socket connected).
 */
static void test_request_at_connect(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	struct eu_pair_cfg cfg;
	struct eu_qp q = { 0 };
	uint8_t buf[64];
	ssize_t n = -1;
	int l = socket(AF_INET, SOCK_STREAM, 0), c = -1;
	bool ok;

	cfg_default(&cfg);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = l >= 0 && !bind(l, (struct sockaddr *)&sin, sizeof(sin)) &&
	     !listen(l, 1) && !getsockname(l, (struct sockaddr *)&sin, &sl) &&
	     !eu_qp_create(&q, env.pd, "init", NULL) &&
	     !iw_qp_connect(q.qp, (struct sockaddr *)&sin, sizeof(sin),
			    &cfg.init);
	c = ok ? accept(l, NULL, NULL) : -1;
	if (c >= 0)
		n = recv(c, buf, sizeof(buf), MSG_DONTWAIT);
	report(n >= 20 && !memcmp(buf, "MPA ID Req Frame", 16),
	       "connect: the MPA Request is on its way when iw_qp_connect "
	       "returns, before any progress call (%zd octets)", n);
	if (c >= 0)
		close(c);
	if (l >= 0)
		close(l);
	if (q.qp)
		eu_qp_destroy(&q);
}

/*
 * What a long message costs in syscalls: the sender hands many FPDUs to
 * one sendmsg, the receiver reads each payload together with the next
 * header. Counted, not timed.
 */
static void test_syscall_economy(void)
{
	enum { LEN = 4 << 20 };
	uint8_t *src = malloc(LEN), *dst = malloc(LEN);
	struct iw_sge ssg = { .addr = src, .len = LEN };
	struct iw_qp_stats sa = { 0 }, sb = { 0 };
	struct eu_pair_cfg cfg;
	struct want w = { 0 };
	struct eu_pair p;
	bool ok, made = src && dst;

	cfg_default(&cfg);
	ok = made && connect_pair(&p, &cfg);
	w.p = &p;
	if (ok) {
		iw_qp_stats(p.a.qp, &sa);
		iw_qp_stats(p.b.qp, &sb);
		eu_fill(src, LEN, 77);
		memset(dst, 0, LEN);
		ok = !post_recv(&p.b, dst, dst, LEN) &&
		     !post_send(&p.a, src, &ssg, 1, 0);
		want_add(&w, &p.b, dst);
		want_add(&w, &p.a, src);
		ok = ok && wait_want(&w, 10000) && !memcmp(src, dst, LEN);
	}
	report(ok, "4 MiB Send arrives intact");
	if (ok) {
		struct iw_qp_stats ea, eb;

		iw_qp_stats(p.a.qp, &ea);
		iw_qp_stats(p.b.qp, &eb);
		ea.tx_calls -= sa.tx_calls;
		ea.tx_fpdus -= sa.tx_fpdus;
		eb.rx_calls -= sb.rx_calls;
		eb.rx_fpdus -= sb.rx_fpdus;
		eb.rx_short -= sb.rx_short;
		tap_diag("  4 MiB Send: %llu FPDUs in %llu sendmsg; %llu FPDUs "
			 "in %llu receive calls, %llu of them cut short by an "
			 "empty socket",
			 (unsigned long long)ea.tx_fpdus,
			 (unsigned long long)ea.tx_calls,
			 (unsigned long long)eb.rx_fpdus,
			 (unsigned long long)eb.rx_calls,
			 (unsigned long long)eb.rx_short);
		report(ea.tx_fpdus >= 64 && ea.tx_calls * 4 <= ea.tx_fpdus,
		       "sender: at least 4 FPDUs per sendmsg (%llu in %llu)",
		       (unsigned long long)ea.tx_fpdus,
		       (unsigned long long)ea.tx_calls);
		/* a call that found only part of an FPDU there (the sender
		 * not yet run, on a busy machine) is the scheduler's, not
		 * ours: the full ones are counted */
		report(eb.rx_fpdus >= 64 &&
		       eb.rx_calls - eb.rx_short <= eb.rx_fpdus + 8,
		       "receiver: one full receive call per FPDU at most (%llu "
		       "in %llu, %llu short)", (unsigned long long)eb.rx_fpdus,
		       (unsigned long long)(eb.rx_calls - eb.rx_short),
		       (unsigned long long)eb.rx_short);
	} else {
		report(false, "sender: at least 4 FPDUs per sendmsg");
		report(false, "receiver: one full receive call per FPDU at "
		       "most");
	}
	if (made)
		eu_pair_fini(&p);
	free(src);
	free(dst);
}

/*
 * A new loopback connection starts with its MSS held to half the peer's
 * first window (32 KiB); once data flowed it is 64 KiB, and so are the
 * FPDUs of the next large messages. Counted, not timed: the last of 8
 * messages of 1 MiB against the MULPDU its sender's MSS now gives.
 */
#define MSS_LEN (1 << 20)

static void mss_check(struct eu_qp *q, const char *what, uint64_t fpdus,
		      uint32_t room_less)
{
	const struct eu_ev *e = eu_est(q);
	uint32_t m0 = e ? e->mulpdu : 0, m1 = 0;
	socklen_t sl = sizeof(int);
	uint64_t want = 0;
	int mss = 0;

	if (!getsockopt(iw_qp_fd(q->qp), IPPROTO_TCP, TCP_MAXSEG, &mss, &sl) &&
	    mss > 0) {
		m1 = mpa_mulpdu((uint32_t)mss, false);
		if (m1 > MPA_MAX_ULPDU)
			m1 = MPA_MAX_ULPDU;
	}
	if (m1 > room_less)
		want = (MSS_LEN + (m1 - room_less) - 1) / (m1 - room_less);
	tap_diag("  %s: MULPDU %u at ESTABLISHED, %u from the MSS now (%d); "
		 "the last in %llu FPDUs", what, m0, m1, mss,
		 (unsigned long long)fpdus);
	if (m1 && m1 == m0)
		tap_skip_n(1, "%s: the MSS did not grow here (%d)", what, mss);
	else
		report(want && fpdus == want,
		       "mss growth: the last %s went in %llu FPDUs, %llu at "
		       "the MSS now (MULPDU %u, %u at ESTABLISHED)", what,
		       (unsigned long long)fpdus, (unsigned long long)want,
		       m1, m0);
}

static void test_mss_growth(void)
{
	enum { N = 8 };
	uint8_t *src = malloc(MSS_LEN), *dst = malloc(MSS_LEN);
	struct iw_sge ssg = { .addr = src, .len = MSS_LEN };
	struct iw_sge dsg = { .addr = dst, .len = MSS_LEN };
	struct iw_qp_stats s0, s1;
	struct eu_buf rsrc = { 0 };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	uint64_t sends = 0, reads = 0;
	int i;
	bool ok, made = src && dst;

	cfg_default(&cfg);
	ok = made && connect_pair(&p, &cfg) &&
	     !eu_buf_alloc(&rsrc, env.pd, MSS_LEN, IW_ACC_REMOTE_READ, true);
	for (i = 0; ok && i < 2 * N; i++) {
		struct want w = { .p = &p };
		void *rctx = nctx(), *sctx = nctx();
		bool rd = i >= N;
		struct eu_qp *tx = rd ? &p.b : &p.a;

		eu_fill(rd ? rsrc.addr : src, MSS_LEN, (uint8_t)(11 + i));
		memset(dst, 0, MSS_LEN);
		iw_qp_stats(tx->qp, &s0);
		if (rd) {
			ok = !post_read(&p.a, sctx, &dsg, &rsrc, 0, 0);
		} else {
			ok = !post_recv(&p.b, rctx, dst, MSS_LEN) &&
			     !post_send(&p.a, sctx, &ssg, 1, 0);
			want_add(&w, &p.b, rctx);
		}
		want_add(&w, &p.a, sctx);
		ok = ok && wait_want(&w, 10000) &&
		     !memcmp(rd ? rsrc.addr : src, dst, MSS_LEN);
		iw_qp_stats(tx->qp, &s1);
		*(rd ? &reads : &sends) = s1.tx_fpdus - s0.tx_fpdus;
	}
	report(ok, "mss growth: %d Sends and %d Reads of 1 MiB arrive intact",
	       N, N);
	if (ok) {
		mss_check(&p.a, "Send", sends, DDP_UNTAGGED_HDR);
		mss_check(&p.b, "Read Response", reads, DDP_TAGGED_HDR);
	} else {
		report(false, "mss growth: the last Send");
		report(false, "mss growth: the last Read Response");
	}
	if (rsrc.addr)
		eu_buf_free(&rsrc);
	if (made)
		eu_pair_fini(&p);
	free(src);
	free(dst);
}

/*
 * Read Responses with more Reads queued behind them (a rendezvous
 * stream): without the CRC each goes in one long sendmsg, not in 256 KiB
 * pieces; the last, alone, keeps them so its first octets leave early.
 * Counted, not timed.
 */
static void test_read_stream_calls(void)
{
	enum { N = 4, LEN = 1 << 20 };
	uint8_t *sink = malloc((size_t)N * LEN);
	struct iw_qp_stats s0 = { 0 }, s1 = { 0 }, a0 = { 0 }, a1 = { 0 };
	struct eu_pair_cfg cfg;
	struct want w = { 0 };
	struct eu_buf src = { 0 };
	struct eu_pair p;
	void *ctx[N];
	bool ok, made;
	int i, rc = 0;

	cfg_default(&cfg);
	made = sink && connect_pair(&p, &cfg);
	ok = made && !eu_buf_alloc(&src, env.pd, (size_t)N * LEN,
				   IW_ACC_REMOTE_READ, true);
	w.p = &p;
	if (ok) {
		eu_fill(src.addr, (size_t)N * LEN, 91);
		memset(sink, 0, (size_t)N * LEN);
		iw_qp_stats(p.b.qp, &s0);
		iw_qp_stats(p.a.qp, &a0);
		/* the Requests leave together: the responder queues all
		 * four before it answers the first */
		for (i = 0; i < N && !rc; i++) {
			struct iw_sge sg = { .addr = sink + (size_t)i * LEN,
					     .len = LEN };

			ctx[i] = nctx();
			rc = post_read(&p.a, ctx[i], &sg, &src, (size_t)i * LEN,
				       i < N - 1 ? IW_WR_MORE : 0);
			want_add(&w, &p.a, ctx[i]);
		}
		ok = !rc && wait_want(&w, 10000) &&
		     !memcmp(sink, src.addr, (size_t)N * LEN);
		iw_qp_stats(p.b.qp, &s1);
		iw_qp_stats(p.a.qp, &a1);
	}
	report(ok, "read stream: %d Reads of 1 MiB come back intact", N);
	/* each payload is read with the next ones it is guessed to go on
	 * into (iw_rx_guesses): a call that found the socket short of what
	 * it asked is the scheduler's, the full ones are counted */
	a1.rx_calls -= a0.rx_calls + (a1.rx_short - a0.rx_short);
	a1.rx_fpdus -= a0.rx_fpdus;
	report(ok && a1.rx_fpdus >= 4 * 16 && a1.rx_calls * 2 <= a1.rx_fpdus,
	       "read stream: the Reads' issuer takes their %llu FPDUs in "
	       "%llu full receive calls, at most one per two",
	       (unsigned long long)a1.rx_fpdus,
	       (unsigned long long)a1.rx_calls);
	/* 256 KiB pieces take 4 or 5 a Read, 16 or more in all; one call
	 * each while others wait and 4 for the last make 7, and a full
	 * socket may add one or two */
	report(ok && s1.tx_calls - s0.tx_calls <= 10,
	       "read stream: the responder answers them in %llu sendmsg, "
	       "at most 10 (%llu FPDUs; the socket full %llu times)",
	       (unsigned long long)(s1.tx_calls - s0.tx_calls),
	       (unsigned long long)(s1.tx_fpdus - s0.tx_fpdus),
	       (unsigned long long)(s1.tx_full - s0.tx_full));
	if (src.addr)
		eu_buf_free(&src);
	if (made)
		eu_pair_fini(&p);
	free(sink);
}

/*
 * Small messages, one at a time, the receiver driven when its socket is
 * readable: each costs one receive call, with no second call that only
 * finds the socket empty (a syscall before every reply in a ping-pong).
 */
static void test_small_recv_calls(void)
{
	enum { N = 200 };
	static uint8_t rbuf[N][64], sbuf[64];
	struct iw_sge ssg = { .addr = sbuf, .len = sizeof(sbuf) };
	struct iw_qp_stats s0 = { 0 }, s1 = { 0 };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	int i, got = 0;
	bool ok;

	cfg_default(&cfg);
	ok = connect_pair(&p, &cfg);
	for (i = 0; ok && i < N; i++)
		ok = !post_recv(&p.b, rbuf[i], rbuf[i], sizeof(rbuf[i]));
	if (ok)
		iw_qp_stats(p.b.qp, &s0);
	for (i = 0; ok && i < N; i++) {
		struct want w = { .p = &p };

		ok = !post_send(&p.a, sbuf, &ssg, 1, 0);
		want_add(&w, &p.b, rbuf[i]);
		ok = ok && wait_want(&w, 5000);
		got += ok;
	}
	if (ok)
		iw_qp_stats(p.b.qp, &s1);
	report(ok, "%d small Sends one at a time arrive (%d)", N, got);
	report(ok && s1.rx_fpdus - s0.rx_fpdus == N &&
	       s1.rx_empty - s0.rx_empty <= N / 10,
	       "receiver: no empty receive call behind each message (%llu "
	       "empty, %llu with data, for %d messages)",
	       (unsigned long long)(s1.rx_empty - s0.rx_empty),
	       (unsigned long long)(s1.rx_calls - s0.rx_calls), N);
	eu_pair_fini(&p);
}

/*
 * One side of a pair in a child process, the other busy-polling here:
 * the child runs `child` on its side and exits with 0 on success.
 */
static bool fork_side(struct eu_pair *p, struct eu_qp *mine,
		      struct eu_qp *theirs, bool (*child)(struct eu_pair *),
		      struct want *w, int tmo, pid_t *pid,
		      struct want *first, struct iw_qp_stats *st)
{
	bool busy = LP->busy, ok = true;

	fflush(stdout);
	*pid = fork();
	if (*pid < 0)
		return false;
	if (*pid == 0) {
		mine->paused = true;
		alarm(60);
		_exit(child(p) ? 0 : 1);
	}
	theirs->paused = true;
	LP->busy = true;
	/* counted from the first completion on: before it nothing came */
	if (first)
		ok = eu_run(LP, done_want, first, tmo);
	iw_qp_stats(theirs == &p->a ? p->b.qp : p->a.qp, st);
	ok = ok && eu_run(LP, done_want, w, tmo);
	LP->busy = busy;
	return ok;
}

static bool child_ok(pid_t pid)
{
	int st;

	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	       WEXITSTATUS(st) == 0;
}

enum { TRICKLE_PIECES = 32, TRICKLE_PIECE = 64 << 10 };
static uint8_t *trickle_src;

/* The child's sender: one 64 KiB Send, then 2 ms of nothing, 32 times. */
static bool trickle_send(struct eu_pair *p)
{
	int i;

	for (i = 0; i < TRICKLE_PIECES; i++) {
		uint8_t *at = trickle_src + (size_t)i * TRICKLE_PIECE;
		struct iw_sge sg = { .addr = at, .len = TRICKLE_PIECE };
		struct want w = { 0 };

		if (post_send(&p->a, at, &sg, 1, 0))
			return false;
		want_add(&w, &p->a, at);
		if (!eu_run(LP, done_want, &w, 5000))
			return false;
		usleep(2000);
	}
	return true;
}

/* The child's receiver: takes 16 MiB, sleeping 1 ms between reads. */
enum { SLOW_LEN = 16 << 20 };
static uint8_t *slow_dst;

static bool slow_recv(struct eu_pair *p)
{
	struct want w = { 0 };
	int i;

	want_add(&w, &p->b, slow_dst);
	for (i = 0; i < 20000 && !done_want(&w); i++) {
		if (iw_qp_progress(p->b.qp) < 0)
			return false;
		usleep(1000);
	}
	return done_want(&w) && !memcmp(slow_dst, trickle_src, SLOW_LEN);
}

/* Segments the QP's socket has sent (TCP_INFO). */
static unsigned int segs_out(struct eu_qp *q)
{
	return tcp_info_of(iw_qp_fd(q->qp)).tcpi_segs_out;
}

/*
 * IW_WR_MORE: a Send posted with it waits for the next post, and the two
 * leave in one TCP segment (MSG_MORE on the first), which is how the
 * provider sends the zero-length Read behind a transmit/delivery-complete
 * Send. Without the flag (the control) they take two. A Read followed by
 * a Send fenced behind it cannot share a segment: the Read Request must
 * still leave at once, or the fence never opens.
 */
static void test_tx_more(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	char rbuf[2][16], sbuf[16] = "more";
	struct iw_sge sg = { .addr = sbuf, .len = sizeof(sbuf) };
	unsigned int segs[2] = { 0, 0 };
	int round;

	cfg_default(&cfg);
	if (!connect_pair(&p, &cfg)) {
		eu_pair_fini(&p);
		return;
	}
	eu_idle(&p.env->loop, 50);	/* handshake ACKs settle */
	for (round = 0; round < 2; round++) {
		struct iw_send_wr rd = { .ctx = nctx(), .op = IW_WR_READ,
					 .flags = IW_WR_SIGNALED };
		void *sctx = nctx(), *rctx = nctx();
		struct want w = { .p = &p };
		unsigned int before;

		post_recv(&p.b, rctx, rbuf[round], sizeof(rbuf[round]));
		before = segs_out(&p.a);
		if (post_send(&p.a, sctx, &sg, 1, round ? IW_WR_MORE : 0) ||
		    iw_qp_post_send(p.a.qp, &rd)) {
			bad("posting a Send and a Read");
			break;
		}
		segs[round] = segs_out(&p.a) - before;
		want_add(&w, &p.a, sctx);
		want_add(&w, &p.a, rd.ctx);
		want_add(&w, &p.b, rctx);
		if (!wait_want(&w, 5000))
			break;
	}
	report(segs[0] == 2 && segs[1] == 1,
	       "IW_WR_MORE: a Send and the Read behind it leave in one TCP "
	       "segment (%u; %u without the flag), both complete",
	       segs[1], segs[0]);
	{
		struct iw_send_wr rd = { .ctx = nctx(), .op = IW_WR_READ,
					 .flags = IW_WR_SIGNALED };
		void *sctx = nctx(), *rctx = nctx();
		struct want w = { .p = &p };
		unsigned int before, now;

		post_recv(&p.b, rctx, rbuf[0], sizeof(rbuf[0]));
		rd.flags |= IW_WR_MORE;
		before = segs_out(&p.a);
		if (iw_qp_post_send(p.a.qp, &rd) ||
		    post_send(&p.a, sctx, &sg, 1, IW_WR_FENCE)) {
			bad("posting a Read and a fenced Send");
		} else {
			now = segs_out(&p.a) - before;
			want_add(&w, &p.a, rd.ctx);
			want_add(&w, &p.a, sctx);
			want_add(&w, &p.b, rctx);
			report(wait_want(&w, 5000) && now == 1,
			       "IW_WR_MORE: a Read with a fenced Send behind it "
			       "leaves at once (%u segment), the Send after its "
			       "response", now);
		}
	}
	eu_pair_fini(&p);
}

/*
 * Whole messages queued behind each other (IW_WR_MORE on all but the last
 * post) leave in one sendmsg: Sends and Writes join one batch in posting
 * order, and each completes once the batch is written, in order. A Read's
 * Request joins too, but the Read completes only when its response is
 * in. Counted, not timed: posted one by one, the 16 messages took 16
 * sendmsg calls.
 */
static void test_tx_join(void)
{
	enum { N = 16, LEN = 1000 };
	static uint8_t src[N][LEN], dst[N][LEN];
	struct iw_qp_stats s0, s1;
	struct eu_pair_cfg cfg;
	struct eu_buf wb = { 0 }, rb = { 0 };
	struct eu_pair p;
	void *sctx[N], *rctx[N], *rd_ctx = nctx();
	uint8_t rsink[64];
	struct iw_sge rsg = { .addr = rsink, .len = sizeof(rsink) };
	int i, nr = 0, bad_data = 0, rc = 0;
	bool ok;

	cfg_default(&cfg);
	ok = connect_pair(&p, &cfg) &&
	     !eu_buf_alloc(&wb, env.pd, LEN,
			   IW_ACC_LOCAL_WRITE | IW_ACC_REMOTE_WRITE, true) &&
	     !eu_buf_alloc(&rb, env.pd, sizeof(rsink), IW_ACC_REMOTE_READ,
			   true);
	if (!ok) {
		report(false, "tx join: pair and buffers");
		goto out;
	}
	/* sixteen messages, the ninth a Write, all but the last held */
	iw_qp_stats(p.a.qp, &s0);
	for (i = 0; i < N && !rc; i++) {
		struct iw_sge sg = { .addr = src[i], .len = LEN };
		unsigned int more = i < N - 1 ? IW_WR_MORE : 0;

		eu_fill(src[i], LEN, 500 + i);
		sctx[i] = nctx();
		if (i == N / 2) {
			struct iw_send_wr wr = {
				.ctx = sctx[i], .op = IW_WR_WRITE,
				.flags = IW_WR_SIGNALED | more, .sgl = &sg,
				.num_sge = 1, .rstag = wb.stag,
				.rto = eu_to(&wb, 0) };

			rc = iw_qp_post_send(p.a.qp, &wr);
			continue;
		}
		rctx[nr] = nctx();
		rc = post_recv(&p.b, rctx[nr], dst[i], LEN);
		nr++;
		if (!rc)
			rc = post_send(&p.a, sctx[i], &sg, 1, more);
	}
	iw_qp_stats(p.a.qp, &s1);
	if (rc)
		bad("tx join: posting failed (%d)", rc);
	ok = !rc && wait_list(&p, &p.a, sctx, N, 10000) &&
	     wait_list(&p, &p.b, rctx, nr, 10000);
	for (i = 0; ok && i < N; i++)
		if (memcmp(i == N / 2 ? wb.addr : dst[i], src[i], LEN))
			bad_data++;
	report(ok && !bad_data && s1.tx_calls - s0.tx_calls == 1 &&
		       s1.tx_fpdus - s0.tx_fpdus == N,
	       "tx join: %d whole messages (Sends and a Write) in one "
	       "sendmsg (%llu calls, %llu FPDUs), all intact (%d bad)", N,
	       (unsigned long long)(s1.tx_calls - s0.tx_calls),
	       (unsigned long long)(s1.tx_fpdus - s0.tx_fpdus), bad_data);
	report(ok && check_order(&p.a, sctx, N) && check_order(&p.b, rctx,
							       N - 1) &&
		       check_once(&p.a, sctx, N, IW_WC_SUCCESS) &&
		       check_wc(&p.a, sctx[N / 2], IW_WC_WRITE, LEN, 0, 0) &&
		       check_wc(&p.a, sctx[0], IW_WC_SEND, LEN, 0, 0),
	       "tx join: completions on both sides come once each, in "
	       "posting order, successful, with their lengths");
	/* a Read, then two Sends: all three leave together; the Read
	 * completes when its data is in, the Sends in their own receives */
	iw_qp_stats(p.a.qp, &s0);
	eu_fill(rb.addr, sizeof(rsink), 77);
	memset(rsink, 0, sizeof(rsink));
	memset(dst, 0, 2 * LEN);
	rc = post_read(&p.a, rd_ctx, &rsg, &rb, 0, IW_WR_MORE);
	for (i = 0; i < 2 && !rc; i++) {
		struct iw_sge sg = { .addr = src[i], .len = LEN };

		rctx[i] = nctx();
		sctx[i] = nctx();
		rc = post_recv(&p.b, rctx[i], dst[i], LEN);
		if (!rc)
			rc = post_send(&p.a, sctx[i], &sg, 1,
				       i ? 0 : IW_WR_MORE);
	}
	iw_qp_stats(p.a.qp, &s1);
	sctx[2] = rd_ctx;
	ok = !rc && wait_list(&p, &p.a, sctx, 3, 10000) &&
	     wait_list(&p, &p.b, rctx, 2, 10000);
	report(ok && s1.tx_calls - s0.tx_calls == 1 &&
		       check_once(&p.a, sctx, 3, IW_WC_SUCCESS) &&
		       check_wc(&p.a, rd_ctx, IW_WC_READ, sizeof(rsink), 0,
				0) &&
		       !memcmp(rsink, rb.addr, sizeof(rsink)) &&
		       check_order(&p.b, rctx, 2) &&
		       !memcmp(dst[0], src[0], LEN) &&
		       !memcmp(dst[1], src[1], LEN),
	       "tx join: a Read and the two Sends behind it leave together "
	       "(%llu sendmsg); the Read completes with its data, the Sends "
	       "into their own receives",
	       (unsigned long long)(s1.tx_calls - s0.tx_calls));
out:
	if (wb.addr)
		eu_buf_free(&wb);
	if (rb.addr)
		eu_buf_free(&rb);
	eu_pair_fini(&p);
}

/*
 * Reads that join a batch still respect the ORD: with ORD 2, four Reads
 * and a Send posted together leave in at least two sendmsg calls (the
 * third Request waits for the first Response), the responder never
 * holds more than its IRD (it would Terminate), and every Read completes
 * with its own data, in posting order, before the Send.
 */
static void test_tx_join_ord(void)
{
	enum { NR = 4, LEN = 256 };
	static uint8_t sink[NR][LEN], msg[64], got[64];
	struct iw_sge sg[NR], ssg = { .addr = msg, .len = sizeof(msg) };
	struct iw_qp_stats s0, s1;
	struct eu_pair_cfg cfg;
	struct eu_buf rb = { 0 };
	struct eu_pair p;
	void *ctx[NR + 1], *rctx = nctx();
	int i, bad_data = 0, rc;
	bool ok;

	cfg_default(&cfg);
	cfg.init.ord = 2;
	cfg.resp.ird = 2;
	ok = connect_pair(&p, &cfg) &&
	     !eu_buf_alloc(&rb, env.pd, NR * LEN, IW_ACC_REMOTE_READ, true);
	if (!ok) {
		report(false, "tx join, ORD 2: pair and buffer");
		goto out;
	}
	eu_fill(rb.addr, NR * LEN, 31);
	eu_fill(msg, sizeof(msg), 32);
	memset(sink, 0, sizeof(sink));
	rc = post_recv(&p.b, rctx, got, sizeof(got));
	iw_qp_stats(p.a.qp, &s0);
	for (i = 0; i < NR && !rc; i++) {
		sg[i].addr = sink[i];
		sg[i].len = LEN;
		ctx[i] = nctx();
		rc = post_read(&p.a, ctx[i], &sg[i], &rb, (size_t)i * LEN,
			       IW_WR_MORE);
	}
	ctx[NR] = nctx();
	if (!rc)
		rc = post_send(&p.a, ctx[NR], &ssg, 1, 0);
	ok = !rc && wait_list(&p, &p.a, ctx, NR + 1, 10000) &&
	     wait_list(&p, &p.b, &rctx, 1, 10000);
	iw_qp_stats(p.a.qp, &s1);
	for (i = 0; ok && i < NR; i++)
		if (memcmp(sink[i], rb.addr + (size_t)i * LEN, LEN))
			bad_data++;
	report(ok && !bad_data && !memcmp(got, msg, sizeof(msg)) &&
		       s1.tx_calls - s0.tx_calls >= 2 &&
		       check_once(&p.a, ctx, NR + 1, IW_WC_SUCCESS) &&
		       check_order(&p.a, ctx, NR + 1) &&
		       check_wc(&p.a, ctx[0], IW_WC_READ, LEN, 0, 0),
	       "tx join, ORD 2: 4 Reads and a Send posted together leave in "
	       "%llu sendmsg (>= 2), all complete once, in order, with their "
	       "data (%d bad)",
	       (unsigned long long)(s1.tx_calls - s0.tx_calls), bad_data);
out:
	if (rb.addr)
		eu_buf_free(&rb);
	eu_pair_fini(&p);
}

/*
 * What a completion upcall posts from inside the receive path (a
 * rendezvous receiver's FIN and its next Read, both without IW_WR_MORE)
 * waits for the end of that read from the socket and leaves in one
 * sendmsg, not one each.
 */
static struct {
	struct eu_qp *q;
	void *trigger, *send_ctx, *read_ctx;
	struct iw_sge ssg, rsg;
	const struct eu_buf *src;
	int rc;
	bool posted;
} rx_ans;

static void rx_ans_hook(struct eu_qp *q, const struct iw_wc *wc)
{
	if (q != rx_ans.q || wc->ctx != rx_ans.trigger || rx_ans.posted)
		return;
	rx_ans.posted = true;
	rx_ans.rc = post_send(q, rx_ans.send_ctx, &rx_ans.ssg, 1, 0);
	if (!rx_ans.rc)
		rx_ans.rc = post_read(q, rx_ans.read_ctx, &rx_ans.rsg,
				      rx_ans.src, 0, 0);
}

static void test_rx_answers(void)
{
	static uint8_t ping[64], pong[64], pong_in[64], ping_in[64];
	static uint8_t sink[512];
	struct iw_sge sg = { .addr = ping, .len = sizeof(ping) };
	struct iw_qp_stats s0, s1;
	struct eu_pair_cfg cfg;
	struct eu_buf rb = { 0 };
	struct eu_pair p;
	void *a_ctx[2], *pong_rctx = nctx(), *b_ctx[2];
	bool ok;
	int rc;

	cfg_default(&cfg);
	ok = connect_pair(&p, &cfg) &&
	     !eu_buf_alloc(&rb, env.pd, sizeof(sink), IW_ACC_REMOTE_READ,
			   true);
	if (!ok) {
		report(false, "answers from the receive path: pair and buffer");
		goto out;
	}
	eu_fill(ping, sizeof(ping), 41);
	eu_fill(pong, sizeof(pong), 42);
	eu_fill(rb.addr, sizeof(sink), 43);
	memset(sink, 0, sizeof(sink));
	memset(&rx_ans, 0, sizeof(rx_ans));
	rx_ans.q = &p.b;
	rx_ans.trigger = nctx();
	rx_ans.send_ctx = b_ctx[0] = nctx();
	rx_ans.read_ctx = b_ctx[1] = nctx();
	rx_ans.ssg = (struct iw_sge){ .addr = pong, .len = sizeof(pong) };
	rx_ans.rsg = (struct iw_sge){ .addr = sink, .len = sizeof(sink) };
	rx_ans.src = &rb;
	p.b.on_wc = rx_ans_hook;
	rc = post_recv(&p.b, rx_ans.trigger, ping_in, sizeof(ping_in));
	if (!rc)
		rc = post_recv(&p.a, pong_rctx, pong_in, sizeof(pong_in));
	iw_qp_stats(p.b.qp, &s0);
	a_ctx[0] = nctx();
	if (!rc)
		rc = post_send(&p.a, a_ctx[0], &sg, 1, 0);
	a_ctx[1] = pong_rctx;
	ok = !rc && wait_list(&p, &p.a, a_ctx, 2, 10000) &&
	     wait_list(&p, &p.b, b_ctx, 2, 10000) && rx_ans.posted &&
	     !rx_ans.rc;
	iw_qp_stats(p.b.qp, &s1);
	p.b.on_wc = NULL;
	report(ok && s1.tx_calls - s0.tx_calls == 1 &&
		       !memcmp(ping_in, ping, sizeof(ping)) &&
		       !memcmp(pong_in, pong, sizeof(pong)) &&
		       !memcmp(sink, rb.addr, sizeof(sink)) &&
		       check_once(&p.b, b_ctx, 2, IW_WC_SUCCESS) &&
		       check_wc(&p.b, b_ctx[1], IW_WC_READ, sizeof(sink), 0, 0),
	       "answers from the receive path: a Send and a Read posted by a "
	       "receive's completion leave in %llu sendmsg (1), both complete "
	       "with their data",
	       (unsigned long long)(s1.tx_calls - s0.tx_calls));
out:
	if (rb.addr)
		eu_buf_free(&rb);
	eu_pair_fini(&p);
}

/*
 * A connection whose two ends are on this host runs Reno on both
 * sockets, whatever the system's default: a controller that paces
 * (BBR, common as a default) would let each side's stream out by timer.
 * The initiator sets it before connecting, the listener before its
 * accepted sockets' handshake.
 */
static void test_local_cc(void)
{
	char cc[2][16] = { "", "" };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	socklen_t n;
	int i, rc[2] = { -1, -1 };

	cfg_default(&cfg);
	if (!connect_pair(&p, &cfg)) {
		report(false, "congestion control on this host: pair");
		eu_pair_fini(&p);
		return;
	}
	for (i = 0; i < 2; i++) {
		n = sizeof(cc[i]) - 1;
		rc[i] = getsockopt(iw_qp_fd(i ? p.b.qp : p.a.qp), IPPROTO_TCP,
				   TCP_CONGESTION, cc[i], &n);
	}
	report(!rc[0] && !rc[1] && !strcmp(cc[0], "reno") &&
		       !strcmp(cc[1], "reno"),
	       "congestion control on this host: initiator \"%s\", "
	       "responder \"%s\" (reno on both)", cc[0], cc[1]);
	eu_pair_fini(&p);
}

/*
 * A busy-polling side that has to wait for its socket: once a read found
 * it empty in the middle of a long transfer, or a send found it full, it
 * asks poll() before the next try instead of retrying the syscall, which
 * holds the socket lock the other direction's segments need. So empty
 * reads and full sends stay as few as the reads and sends that moved
 * data. Counted, not timed.
 */
static void test_socket_waits(void)
{
	size_t len = (size_t)TRICKLE_PIECES * TRICKLE_PIECE;
	uint8_t *dst = malloc(len);
	struct iw_qp_stats s0 = { 0 }, s1 = { 0 };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct want w = { 0 }, w1 = { 0 };
	pid_t pid = -1;
	bool ok, made;
	int i;

	trickle_src = malloc(len);
	made = dst && trickle_src;
	cfg_default(&cfg);
	ok = made && connect_pair(&p, &cfg);
	if (ok) {
		eu_fill(trickle_src, len, 90);
		memset(dst, 0, len);
		for (i = 0; ok && i < TRICKLE_PIECES; i++) {
			uint8_t *at = dst + (size_t)i * TRICKLE_PIECE;

			ok = !post_recv(&p.b, at, at, TRICKLE_PIECE);
		}
		/* receives complete in order: the last one ends it */
		want_add(&w, &p.b, dst + len - TRICKLE_PIECE);
		want_add(&w1, &p.b, dst);
		ok = ok && fork_side(&p, &p.b, &p.a, trickle_send, &w, 20000,
				     &pid, &w1, &s0);
		ok = child_ok(pid) && ok && !memcmp(trickle_src, dst, len);
		iw_qp_stats(p.b.qp, &s1);
	}
	report(ok, "32 Sends of 64 KiB, 2 ms apart, to a busy-polling "
	       "receiver arrive intact");
	report(ok && s1.rx_empty - s0.rx_empty <= s1.rx_calls - s0.rx_calls,
	       "receiver: empty reads (%llu) no more than reads with data "
	       "(%llu)", (unsigned long long)(s1.rx_empty - s0.rx_empty),
	       (unsigned long long)(s1.rx_calls - s0.rx_calls));
	if (made)
		eu_pair_fini(&p);
	free(trickle_src);
	free(dst);

	slow_dst = malloc(SLOW_LEN);
	trickle_src = malloc(SLOW_LEN);
	made = slow_dst && trickle_src;
	cfg_default(&cfg);
	ok = made && connect_pair(&p, &cfg);
	if (ok) {
		struct iw_sge sg = { .addr = trickle_src, .len = SLOW_LEN };

		eu_fill(trickle_src, SLOW_LEN, 91);
		memset(slow_dst, 0, SLOW_LEN);
		ok = !post_recv(&p.b, slow_dst, slow_dst, SLOW_LEN);
		memset(&w, 0, sizeof(w));
		want_add(&w, &p.a, trickle_src);
		ok = ok && !post_send(&p.a, trickle_src, &sg, 1, 0) &&
		     fork_side(&p, &p.a, &p.b, slow_recv, &w, 40000, &pid,
			       NULL, &s0);
		ok = child_ok(pid) && ok;
		iw_qp_stats(p.a.qp, &s1);
	}
	report(ok, "16 MiB Send from a busy-polling sender to a receiver "
	       "that reads once a millisecond arrives intact");
	report(ok && s1.tx_full - s0.tx_full >= 1 &&
	       s1.tx_full - s0.tx_full <= s1.tx_calls - s0.tx_calls,
	       "sender: sends that found the socket full (%llu) no more "
	       "than sends that wrote (%llu)",
	       (unsigned long long)(s1.tx_full - s0.tx_full),
	       (unsigned long long)(s1.tx_calls - s0.tx_calls));
	if (made)
		eu_pair_fini(&p);
	free(trickle_src);
	free(slow_dst);
}

/*
 * FPDUs up to 2 KiB leave as one gathered iovec. Sends of 1..2100 octets
 * in three pieces go into small socket buffers while the receiver is
 * paused, so writes stop inside gathered FPDUs and resume later.
 */
enum { FLAT_N = 150, FLAT_MAXLEN = 2100 };

static uint32_t flat_len(int i)
{
	return 1 + (uint32_t)(i * 523) % FLAT_MAXLEN;
}

static bool tx_full_seen(void *arg)
{
	struct iw_qp_stats st;

	iw_qp_stats(arg, &st);
	return st.tx_full > 0;
}

static void test_tx_flat(void)
{
	static uint8_t src[FLAT_N * FLAT_MAXLEN], dst[FLAT_N * FLAT_MAXLEN];
	struct iw_qp_stats s0, s1;
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct want w = { 0 };
	int i, small = 0, bad_at = -1, buf = 4096, rbuf = 16384;
	size_t off = 0;
	bool ok;

	cfg_default(&cfg);
	cfg.init.crc = cfg.resp.crc = true;
	ok = connect_pair(&p, &cfg);
	if (!ok) {
		eu_pair_fini(&p);
		report(false, "small FPDUs through full sockets");
		return;
	}
	eu_fill(src, sizeof(src), 92);
	memset(dst, 0, sizeof(dst));
	setsockopt(iw_qp_fd(p.a.qp), SOL_SOCKET, SO_SNDBUF, &buf, sizeof(buf));
	setsockopt(iw_qp_fd(p.b.qp), SOL_SOCKET, SO_RCVBUF, &rbuf, sizeof(rbuf));
	iw_qp_stats(p.a.qp, &s0);
	p.b.paused = true;
	for (i = 0; ok && i < FLAT_N; i++, off += FLAT_MAXLEN)
		ok = !post_recv(&p.b, dst + off, dst + off, FLAT_MAXLEN);
	for (i = 0, off = 0; ok && i < FLAT_N; i++, off += FLAT_MAXLEN) {
		uint32_t len = flat_len(i), a = len / 3, b = len / 3;
		struct iw_sge sg[3] = {
			{ .addr = src + off, .len = a },
			{ .addr = src + off + a, .len = b },
			{ .addr = src + off + a + b, .len = len - a - b },
		};

		if (mpa_fpdu_len(DDP_UNTAGGED_HDR + len) <= 2048)
			small++;
		ok = !post_send(&p.a, src + off, sg, 3, 0);
	}
	ok = ok && eu_run(LP, tx_full_seen, p.a.qp, 5000);
	report(ok, "a paused receiver fills the sender's socket");
	p.b.paused = false;
	want_add(&w, &p.b, dst + (size_t)(FLAT_N - 1) * FLAT_MAXLEN);
	ok = ok && wait_want(&w, 10000);
	for (i = 0, off = 0; ok && i < FLAT_N; i++, off += FLAT_MAXLEN) {
		const struct iw_wc *wc = eu_find_wc(&p.b, dst + off);

		if (!wc || wc->status != IW_WC_SUCCESS ||
		    wc->byte_len != flat_len(i) ||
		    memcmp(src + off, dst + off, flat_len(i))) {
			bad_at = i;
			ok = false;
		}
	}
	report(ok, "%d Sends of 1..%d octets in three pieces arrive intact "
	       "through small socket buffers, CRC on (first bad: %d)",
	       FLAT_N, FLAT_MAXLEN, bad_at);
	iw_qp_stats(p.a.qp, &s1);
	report(s1.tx_flat - s0.tx_flat == (uint64_t)small,
	       "FPDUs of at most 2 KiB went out as one iovec: %llu of %d",
	       (unsigned long long)(s1.tx_flat - s0.tx_flat), small);
	eu_pair_fini(&p);
}

int main(int argc, char **argv)
{
	int rc;

	n_only = argc - 1;
	only = argv + 1;
	alarm(120);	/* a hang is a failure, not a stuck CI job */
	rc = eu_env_open(&env);
	if (rc || !sides_alloc()) {
		tap_ok(0, "device, PD and buffers (%d)", rc);
		return tap_done();
	}
	env.loop.busy = getenv("EU_BUSY") != NULL;
	timed("ird/ord table", test_ird_ord_table);
	timed("mr rekey", test_mr_rekey);
	timed("qp memory", test_qp_memory);
	timed("matrix", test_matrix);
	timed("multi-sge", test_multi_sge);
	timed("rtr forced", test_rtr_forced);
	timed("rtr responder", test_rtr_responder);
	timed("rtr reply all", test_rtr_reply_all);
	timed("rtr none", test_rtr_none);
	timed("send from upcall", test_send_from_upcall);
	timed("client-server", test_cs_first_fpdu);
	timed("rev1", test_rev1);
	timed("reject", test_reject);
	timed("listener wakes", test_listener_wakes);
	timed("pdata", test_pdata);
	timed("ird/ord e2e", test_ird_ord_e2e);
	timed("ord limit", test_ord_limit);
	timed("ird exceeded", test_ird_exceeded);
	timed("order read/writes", test_order_read_writes);
	timed("order write/send", test_order_write_send);
	timed("fence", test_fence);
	timed("write invalidated", test_write_invalidated);
	timed("access errors", test_access_errors);
	timed("send inv", test_send_inv_ok);
	timed("send inv denied", test_send_inv_denied);
	timed("close graceful", test_close_graceful);
	timed("close abort", test_close_abort);
	timed("srq", test_srq);
	timed("peek", test_peek);
	timed("pipeline", test_pipeline);
	timed("syscall economy", test_syscall_economy);
	timed("mss growth", test_mss_growth);
	timed("read stream calls", test_read_stream_calls);
	timed("small recv calls", test_small_recv_calls);
	timed("socket waits", test_socket_waits);
	timed("Send and Read in one segment", test_tx_more);
	timed("Request sent at connect", test_request_at_connect);
	timed("whole messages joined in one sendmsg", test_tx_join);
	timed("joined Reads within the ORD", test_tx_join_ord);
	timed("answers from the receive path", test_rx_answers);
	timed("congestion control on this host", test_local_cc);
	timed("small FPDUs in one iovec", test_tx_flat);
	timed("bad requests", test_bad_requests);
	timed("flow control", test_flow_control);
	sides_free();
	rc = eu_env_close(&env);
	report(rc == 0 || bad("eu_env_close: %d", rc),
	       "teardown: PD and device close with nothing left over");
	return tap_done();
}
