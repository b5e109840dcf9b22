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
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_util.h"
#include "tap.h"

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
	char pre[256], old[sizeof(why)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	snprintf(old, sizeof(old), "%s", why);
	snprintf(why, sizeof(why), "%s: %s", pre, old);
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

		tap_diag("  %s: %s status %d err %s (%s) remote %d rev %u",
			 q->name, eu_ev_str(e->type), e->status,
			 eu_err_str(&e->err),
			 iw_err_str(e->err.layer, e->err.etype, e->err.ecode),
			 e->remote, e->rev);
	}
	if (q->qp)
		tap_diag("  %s: state %s, %zu completions", q->name,
			 iw_qp_state_str(iw_qp_state(q->qp)), q->n_wc);
}

static void pair_diag(const struct eu_pair *p)
{
	qp_diag(&p->a);
	qp_diag(&p->b);
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
		[IW_WR_SEND] = "Send",		[IW_WR_SEND_SE] = "SendSE",
		[IW_WR_SEND_INV] = "SendInv",	[IW_WR_SEND_SE_INV] = "SendSEInv",
		[IW_WR_WRITE] = "Write",	[IW_WR_READ] = "Read",
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
	eu_pair_fini(&p);
}

/* ---- reject and private data */

static void test_reject(void)
{
	static const char pd[] = "rejected: collision, try again later";
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	const struct eu_ev *e;
	int enh;
	bool ok;

	for (enh = 0; enh < 2; enh++) {
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
		e = eu_fail_ev(&p.a);
		if (!ok)
			ok = bad("setup calls failed");
		else if (!e || e->type != IW_CM_REJECTED)
			ok = bad("initiator event %s",
				 e ? eu_ev_str(e->type) : "none");
		else if (e->pdata_len != sizeof(pd) ||
			 memcmp(e->pdata, pd, sizeof(pd)))
			ok = bad("private data %u octets, want %zu",
				 e->pdata_len, sizeof(pd));
		else if (p.lst.accept_rc)
			ok = bad("iw_reject returned %d", p.lst.accept_rc);
		report(ok, "reject (%s): initiator gets REJECTED with the exact private data",
		       enh ? "enhanced" : "unenhanced");
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
