/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RFC 7306 atomics between two engines over loopback TCP (ports
 * 23940-23949): FetchAdd and CmpSwap results and target words against a
 * bit-by-bit model written here, masked adds, compares and swaps, in
 * virtual-address and offset mode; atomics beyond ORD mixed with Reads
 * and Writes, completing in posting order and ordered with them at the
 * responder; what the API refuses; a responder with atomics off; two
 * threads updating one word through two engines.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_util.h"
#include "tap.h"

#define PORT_BASE 23940
#define PORTS 10

static struct eu_env env;
#define LP (&env.loop)

static char why[512];

static bool bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return false;
}

static void report(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void report(bool ok, const char *fmt, ...)
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
}

static void qp_diag(const struct eu_qp *q)
{
	int i;

	for (i = 0; i < q->n_ev; i++)
		tap_diag("  %s: %s status %d err %s remote %d", q->name,
			 eu_ev_str(q->ev[i].type), q->ev[i].status,
			 eu_err_str(&q->ev[i].err), q->ev[i].remote);
}

static unsigned int ctx_seq, port_seq;

static void *nctx(void)
{
	return (void *)(uintptr_t)(0x200000u + ++ctx_seq);
}

static void cfg_default(struct eu_pair_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->init.ird = c->init.ord = 16;
	c->resp.ird = c->resp.ord = 16;
	c->timeout_ms = 5000;
	c->port = (uint16_t)(PORT_BASE + port_seq++ % PORTS);
}

/* Connects and turns atomics on at the sides asked for. */
static bool connect_pair(struct eu_pair *p, struct eu_env *e,
			 const struct eu_pair_cfg *c, bool init_on,
			 bool resp_on)
{
	int rc = eu_pair_connect(p, e, c);

	if (rc) {
		qp_diag(&p->a);
		qp_diag(&p->b);
		return bad("connection setup failed: %d (%s)", rc,
			   strerror(-rc));
	}
	iw_qp_set_atomics(p->a.qp, init_on);
	iw_qp_set_atomics(p->b.qp, resp_on);
	return true;
}

/* ---- the model: RFC 7306 in the most literal form */

/* Bit by bit: the carry out of bit i goes on to bit i + 1 unless bit i
 * of the mask is set. */
static uint64_t model_add(uint64_t a, uint64_t b, uint64_t mask)
{
	uint64_t r = 0, carry = 0;
	int i;

	for (i = 0; i < 64; i++) {
		uint64_t s = (a >> i & 1) + (b >> i & 1) + carry;

		r |= (s & 1) << i;
		carry = mask >> i & 1 ? 0 : s >> 1;
	}
	return r;
}

static uint64_t model_cswap(uint64_t old, uint64_t swap, uint64_t smask,
			    uint64_t cmp, uint64_t cmask)
{
	int i;

	for (i = 0; i < 64; i++)
		if ((cmask >> i & 1) && (old >> i & 1) != (cmp >> i & 1))
			return old;
	return (old & ~smask) | (swap & smask);
}

struct acase {
	const char *what;
	enum iw_wr_opcode op;
	uint64_t init;		/* the word before */
	uint64_t data, mask;	/* add/swap data and mask */
	uint64_t cmp, cmask;
};

static uint64_t model(const struct acase *k)
{
	if (k->op == IW_WR_ATOMIC_FADD)
		return model_add(k->init, k->data, k->mask);
	return model_cswap(k->init, k->data, k->mask, k->cmp, k->cmask);
}

#define FADD IW_WR_ATOMIC_FADD
#define CSWAP IW_WR_ATOMIC_CSWAP
#define ALL UINT64_MAX

static const struct acase cases[] = {
	{ "FetchAdd 41 + 1", FADD, 41, 1, 0, 0, 0 },
	{ "FetchAdd carries across bit 31", FADD, 0xffffffffull, 1, 0, 0,
	  0 },
	{ "FetchAdd wraps at 2^64", FADD, ALL, 2, 0, 0, 0 },
	{ "FetchAdd of two 32-bit lanes (mask 0x8000000080000000)", FADD,
	  0x00000001ffffffffull, 0x0000000100000001ull,
	  0x8000000080000000ull, 0, 0 },
	{ "FetchAdd of eight byte lanes (mask 0x8080...80)", FADD,
	  0x01ff7f80fe00ff10ull, 0x0101018181ff01f0ull,
	  0x8080808080808080ull, 0, 0 },
	{ "FetchAdd with every carry dropped (mask all ones)", FADD,
	  0xf0f0f0f0f0f0f0f0ull, 0xff00ff00ff00ff0full, ALL, 0, 0 },
	{ "FetchAdd with one carry dropped (mask bit 4)", FADD,
	  0x00000000000000ffull, 0x0000000000000011ull, 0x10, 0, 0 },
	{ "FetchAdd with a lone top mask bit (mask bit 63)", FADD, ALL, ALL,
	  1ull << 63, 0, 0 },
	{ "CmpSwap that matches", CSWAP, 0x1122334455667788ull,
	  0xcafef00ddeadbeefull, ALL, 0x1122334455667788ull, ALL },
	{ "CmpSwap that does not match (one bit)", CSWAP,
	  0x1122334455667788ull, 0xcafef00ddeadbeefull, ALL,
	  0x1122334455667789ull, ALL },
	{ "CmpSwap: difference outside the compare mask matches", CSWAP,
	  0x1122334455667788ull, 0x0123456789abcdefull, ALL,
	  0xffff334455667788ull, 0x0000ffffffffffffull },
	{ "CmpSwap: difference inside the compare mask", CSWAP,
	  0x1122334455667788ull, 0x0123456789abcdefull, ALL,
	  0x1122334455667700ull, 0x00000000000000ffull },
	{ "CmpSwap with a swap mask replaces only its bits", CSWAP,
	  0x1122334455667788ull, 0xa5a5a5a5a5a5a5a5ull,
	  0x00000000ffff0000ull, 0x1122334455667788ull, ALL },
	{ "CmpSwap with compare mask 0 always swaps", CSWAP,
	  0x1122334455667788ull, 0x0f0f0f0f0f0f0f0full, ALL, 0, 0 },
	{ "CmpSwap with swap mask 0 changes nothing", CSWAP,
	  0x1122334455667788ull, 0x0f0f0f0f0f0f0f0full, 0,
	  0x1122334455667788ull, ALL },
};

#define N_CASES ((int)(sizeof(cases) / sizeof(cases[0])))
#define CANARY 0x5a5a5a5a5a5a5a5aull

static int post_atomic(struct eu_loop *lp, struct eu_qp *q, void *ctx,
		       enum iw_wr_opcode op, uint64_t *res, uint32_t stag,
		       uint64_t to, uint64_t data, uint64_t mask,
		       uint64_t cmp, uint64_t cmask)
{
	struct iw_sge sg = { res, 8 };
	struct iw_send_wr wr = {
		.ctx = ctx, .op = op, .flags = IW_WR_SIGNALED,
		.sgl = res ? &sg : NULL, .num_sge = res ? 1 : 0,
		.rstag = stag, .rto = to,
		.add_swap = data, .add_swap_mask = mask,
		.compare = cmp, .compare_mask = cmask,
	};

	return eu_post_send(lp, q, &wr, 5000);
}

static bool check_atomic_wc(const struct eu_qp *q, const void *ctx)
{
	const struct iw_wc *wc = eu_find_wc(q, ctx);
	int n = eu_count_ctx(q, ctx);

	if (n != 1 || !wc)
		return bad("%d completions", n);
	if (wc->status != IW_WC_SUCCESS)
		return bad("status %s err %s", eu_status_str(wc->status),
			   eu_err_str(&wc->err));
	if (wc->op != IW_WC_ATOMIC || wc->byte_len != 8)
		return bad("opcode %d byte_len %u, want IW_WC_ATOMIC and 8",
			   wc->op, wc->byte_len);
	return true;
}

static uint64_t word_at(const struct eu_buf *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b->addr + off, sizeof(v));
	return v;
}

static void word_set(struct eu_buf *b, size_t off, uint64_t v)
{
	memcpy(b->addr + off, &v, sizeof(v));
}

/* Every case on its own word, all posted at once; results land in
 * 8-octet slots with a canary after each. */
static void test_cases(bool va_mode)
{
	const char *mode = va_mode ? "VA" : "offset";
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct eu_buf tgt = { 0 };
	uint64_t res[2 * N_CASES + 2];
	void *ctx[N_CASES + 1];
	bool ok, up;
	int i;

	cfg_default(&cfg);
	up = ok = connect_pair(&p, &env, &cfg, true, true) &&
		  !eu_buf_alloc(&tgt, env.pd, 4096, IW_ACC_LOCAL_WRITE |
				IW_ACC_REMOTE_ATOMIC, va_mode);
	for (i = 0; i < 2 * N_CASES + 2; i++)
		res[i] = CANARY;
	for (i = 0; ok && i < N_CASES; i++) {
		const struct acase *k = &cases[i];

		word_set(&tgt, 64 + 8 * (size_t)i, k->init);
		ctx[i] = nctx();
		if (post_atomic(LP, &p.a, ctx[i], k->op, &res[2 * i],
				tgt.stag, eu_to(&tgt, 64 + 8 * (size_t)i),
				k->data, k->mask, k->cmp, k->cmask))
			ok = bad("post %d failed", i);
	}
	/* without a result buffer: the value is dropped, the add is not */
	word_set(&tgt, 8, 1000);
	ctx[N_CASES] = nctx();
	if (ok && post_atomic(LP, &p.a, ctx[N_CASES], FADD, NULL, tgt.stag,
			      eu_to(&tgt, 8), 5, 0, 0, 0))
		ok = bad("post without a result buffer failed");
	if (ok && !eu_wait_n_wc(LP, &p.a, N_CASES + 1, 10000))
		ok = bad("%zu of %d completions", p.a.n_wc, N_CASES + 1);
	if (!ok) {
		report(false, "atomics (%s mode): %d cases posted", mode,
		       N_CASES);
		goto out;
	}
	for (i = 0; i < N_CASES; i++) {
		const struct acase *k = &cases[i];
		uint64_t want = model(k), got = word_at(&tgt,
							64 + 8 * (size_t)i);

		ok = check_atomic_wc(&p.a, ctx[i]);
		if (ok && res[2 * i] != k->init)
			ok = bad("returned %#llx, the word held %#llx",
				 (unsigned long long)res[2 * i],
				 (unsigned long long)k->init);
		if (ok && res[2 * i + 1] != CANARY)
			ok = bad("octets after the result written");
		if (ok && got != want)
			ok = bad("word %#llx, model %#llx",
				 (unsigned long long)got,
				 (unsigned long long)want);
		report(ok, "atomics (%s mode): %s", mode, k->what);
	}
	ok = check_atomic_wc(&p.a, ctx[N_CASES]);
	if (ok && word_at(&tgt, 8) != 1005)
		ok = bad("word %llu, want 1005",
			 (unsigned long long)word_at(&tgt, 8));
	report(ok, "atomics (%s mode): no result buffer: completes, word "
	       "updated", mode);
	ok = eu_find_not(tgt.addr + 64 + 8 * N_CASES,
			 4096 - 64 - 8 * N_CASES, 0) ==
		     4096 - 64 - 8 * (size_t)N_CASES &&
	     eu_find_not(tgt.addr, 8, 0) == 8 &&
	     eu_find_not(tgt.addr + 16, 48, 0) == 48;
	report(ok || bad("octets around the words changed"),
	       "atomics (%s mode): nothing else in the region changed", mode);
out:
	if (up)
		eu_pair_fini(&p);
	eu_buf_free(&tgt);
}

/* ---- ordering beyond ORD, with Reads and Writes */

enum mkind { M_FADD, M_READ, M_WRITE, M_CSWAP, M_READ_C, M_WRITE_E,
	     M_FADD_E, M_KINDS };
#define ROUNDS 12
#define N_MIX (ROUNDS * M_KINDS)
#define CHUNK 4096
#define WCHUNK 1024

/*
 * One pass posts, in each round: FetchAdd on C, a 4 KiB Read, a 1 KiB
 * Write, CmpSwap on D (always matching), an 8-octet Read of C, a Write
 * of E and a FetchAdd on E. With ORD 2 against IRD 2 most of them wait
 * in the send queue. The Read of C sees exactly the adds before it; the
 * FetchAdd on E sees the Write before it.
 */
static void test_mixed(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct eu_buf tgt = { 0 }, src = { 0 }, sink = { 0 };
	static uint8_t rdst[N_MIX][CHUNK], wsrc[N_MIX][WCHUNK];
	static uint64_t res[N_MIX], evals[N_MIX], creads[N_MIX];
	static struct iw_sge sg[N_MIX];
	static void *ctx[N_MIX];
	uint64_t c = 7, d = 3, dnext, want;
	const struct eu_ev *e;
	bool ok, up;
	size_t i;
	int rc = 0;

	cfg_default(&cfg);
	cfg.init.ord = 2;
	cfg.resp.ird = 2;
	cfg.resp.max_ird = 2;
	up = ok = connect_pair(&p, &env, &cfg, true, true) &&
		  !eu_buf_alloc(&tgt, env.pd, 64, IW_ACC_LOCAL_WRITE |
				IW_ACC_REMOTE_ATOMIC | IW_ACC_REMOTE_READ |
				IW_ACC_REMOTE_WRITE, true) &&
		  !eu_buf_alloc(&src, env.pd, N_MIX * CHUNK,
				IW_ACC_REMOTE_READ, true) &&
		  !eu_buf_alloc(&sink, env.pd, N_MIX * WCHUNK,
				IW_ACC_LOCAL_WRITE | IW_ACC_REMOTE_WRITE,
				false);
	e = ok ? eu_est(&p.a) : NULL;
	if (ok && e->ord != 2)
		ok = bad("negotiated ORD %u, want 2", e->ord);
	if (ok) {
		eu_fill(src.addr, src.len, 77);
		eu_fill(wsrc, sizeof(wsrc), 78);
		memset(rdst, 0, sizeof(rdst));
		word_set(&tgt, 0, c);
		word_set(&tgt, 8, d);
	}
	for (i = 0; ok && i < N_MIX; i++) {
		struct iw_send_wr wr = { .flags = IW_WR_SIGNALED, .sgl = &sg[i],
					 .num_sge = 1 };

		ctx[i] = wr.ctx = nctx();
		res[i] = CANARY;
		switch (i % M_KINDS) {
		case M_FADD:
			rc = post_atomic(LP, &p.a, ctx[i], FADD, &res[i],
					 tgt.stag, eu_to(&tgt, 0), i, 0, 0, 0);
			break;
		case M_CSWAP:
			rc = post_atomic(LP, &p.a, ctx[i], CSWAP, &res[i],
					 tgt.stag, eu_to(&tgt, 8), i * 3 + 1,
					 ALL, d, ALL);
			d = i * 3 + 1;
			break;
		case M_FADD_E:
			rc = post_atomic(LP, &p.a, ctx[i], FADD, &res[i],
					 tgt.stag, eu_to(&tgt, 16), 1, 0, 0,
					 0);
			break;
		case M_READ:
			sg[i] = (struct iw_sge){ rdst[i], CHUNK };
			wr.op = IW_WR_READ;
			wr.rstag = src.stag;
			wr.rto = eu_to(&src, i * CHUNK);
			rc = eu_post_send(LP, &p.a, &wr, 5000);
			break;
		case M_READ_C:
			sg[i] = (struct iw_sge){ &creads[i], 8 };
			wr.op = IW_WR_READ;
			wr.rstag = tgt.stag;
			wr.rto = eu_to(&tgt, 0);
			rc = eu_post_send(LP, &p.a, &wr, 5000);
			break;
		case M_WRITE:
			sg[i] = (struct iw_sge){ wsrc[i], WCHUNK };
			wr.op = IW_WR_WRITE;
			wr.rstag = sink.stag;
			wr.rto = eu_to(&sink, i * WCHUNK);
			rc = eu_post_send(LP, &p.a, &wr, 5000);
			break;
		default:	/* M_WRITE_E */
			evals[i] = 1000 * i;
			sg[i] = (struct iw_sge){ &evals[i], 8 };
			wr.op = IW_WR_WRITE;
			wr.rstag = tgt.stag;
			wr.rto = eu_to(&tgt, 16);
			rc = eu_post_send(LP, &p.a, &wr, 5000);
			break;
		}
		if (rc)
			ok = bad("post %zu (kind %zu): %d", i, i % M_KINDS, rc);
	}
	if (ok && !eu_wait_n_wc(LP, &p.a, N_MIX, 20000))
		ok = bad("%zu of %d completions", p.a.n_wc, N_MIX);
	for (i = 0; ok && i < N_MIX; i++)
		if (p.a.wc[i].ctx != ctx[i])
			ok = bad("completion %zu is request %#lx", i,
				 (unsigned long)(uintptr_t)p.a.wc[i].ctx);
		else if (p.a.wc[i].status != IW_WC_SUCCESS)
			ok = bad("request %zu: %s %s", i,
				 eu_status_str(p.a.wc[i].status),
				 eu_err_str(&p.a.wc[i].err));
	report(ok, "mixed: %d atomics, Reads and Writes with ORD 2: all "
	       "complete in posting order", N_MIX);
	d = 3;
	for (i = 0; ok && i < N_MIX; i++) {
		switch (i % M_KINDS) {
		case M_FADD:
			if (res[i] != c)
				ok = bad("FetchAdd %zu returned %llu, want "
					 "%llu", i,
					 (unsigned long long)res[i],
					 (unsigned long long)c);
			c += i;
			break;
		case M_CSWAP:
			dnext = i * 3 + 1;
			if (res[i] != d)
				ok = bad("CmpSwap %zu returned %llu, want %llu",
					 i, (unsigned long long)res[i],
					 (unsigned long long)d);
			d = dnext;
			break;
		case M_FADD_E:
			want = 1000 * (i - 1);
			if (res[i] != want)
				ok = bad("FetchAdd %zu after a Write returned "
					 "%llu, want %llu", i,
					 (unsigned long long)res[i],
					 (unsigned long long)want);
			break;
		case M_READ:
			if (memcmp(rdst[i], src.addr + i * CHUNK, CHUNK))
				ok = bad("Read %zu data differs", i);
			break;
		case M_READ_C:
			if (creads[i] != c)
				ok = bad("Read %zu of C saw %llu, want %llu", i,
					 (unsigned long long)creads[i],
					 (unsigned long long)c);
			break;
		case M_WRITE:
			if (memcmp(sink.addr + i * WCHUNK, wsrc[i], WCHUNK))
				ok = bad("Write %zu data differs", i);
			break;
		default:
			break;
		}
	}
	if (ok && (word_at(&tgt, 0) != c || word_at(&tgt, 8) != d ||
		   word_at(&tgt, 16) != 1000 * (N_MIX - 2) + 1))
		ok = bad("final words %llu %llu %llu",
			 (unsigned long long)word_at(&tgt, 0),
			 (unsigned long long)word_at(&tgt, 8),
			 (unsigned long long)word_at(&tgt, 16));
	if (!ok && up) {
		qp_diag(&p.a);
		qp_diag(&p.b);
	}
	report(ok, "mixed: results, Read data and words as executed in "
	       "request order at the responder");
	if (up)
		eu_pair_fini(&p);
	eu_buf_free(&tgt);
	eu_buf_free(&src);
	eu_buf_free(&sink);
}

/* ---- the API */

static void test_api(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct eu_buf tgt = { 0 };
	uint64_t res[2];
	struct iw_sge sg[2] = { { &res[0], 8 }, { &res[1], 8 } };
	struct iw_send_wr wr = {
		.op = FADD, .sgl = sg, .num_sge = 1, .add_swap = 1,
	};
	struct iw_qp *idle = NULL;
	int rc[6] = { 0 }, i;
	bool ok, up;

	cfg_default(&cfg);
	up = ok = connect_pair(&p, &env, &cfg, false, true) &&
		  !eu_buf_alloc(&tgt, env.pd, 64, IW_ACC_LOCAL_WRITE |
				IW_ACC_REMOTE_ATOMIC, true);
	if (!ok) {
		report(false, "api: pair for the API checks");
		goto out;
	}
	wr.rstag = tgt.stag;
	wr.rto = eu_to(&tgt, 0);
	rc[0] = iw_qp_post_send(p.a.qp, &wr);
	wr.op = CSWAP;
	rc[1] = iw_qp_post_send(p.a.qp, &wr);
	report((rc[0] == -EINVAL && rc[1] == -EINVAL) ||
		       bad("FetchAdd %d, CmpSwap %d", rc[0], rc[1]),
	       "api: atomics are off by default: posting is -EINVAL");
	iw_qp_set_atomics(p.a.qp, true);
	sg[0].len = 4;
	rc[0] = iw_qp_post_send(p.a.qp, &wr);
	sg[0].len = 16;
	rc[1] = iw_qp_post_send(p.a.qp, &wr);
	sg[0].len = 8;
	wr.num_sge = 2;
	rc[2] = iw_qp_post_send(p.a.qp, &wr);
	wr.num_sge = 1;
	sg[0].addr = NULL;
	rc[3] = iw_qp_post_send(p.a.qp, &wr);
	sg[0].addr = &res[0];
	wr.flags = IW_WR_INLINE;
	rc[4] = iw_qp_post_send(p.a.qp, &wr);
	wr.flags = 0;
	wr.op = (enum iw_wr_opcode)(CSWAP + 1);
	rc[5] = iw_qp_post_send(p.a.qp, &wr);
	wr.op = FADD;
	ok = true;
	for (i = 0; i < 6; i++)
		if (rc[i] != -EINVAL)
			ok = bad("case %d returned %d", i, rc[i]);
	report(ok, "api: result buffer of 4 or 16 octets, 2 entries, NULL, "
	       "inline, unknown opcode: -EINVAL");
	eu_idle(LP, 20);
	report((!eu_qp_failed(&p.a) && !eu_qp_failed(&p.b) &&
		!p.a.n_wc && word_at(&tgt, 0) == 0) ||
		       bad("refused requests reached the wire"),
	       "api: refused atomics leave the connection and the word "
	       "alone");
	wr.ctx = nctx();
	wr.flags = IW_WR_SIGNALED;
	rc[0] = iw_qp_post_send(p.a.qp, &wr);
	ok = (!rc[0] && eu_wait_ctx(LP, &p.a, wr.ctx, 5000) &&
	      check_atomic_wc(&p.a, wr.ctx) && res[0] == 0 &&
	      word_at(&tgt, 0) == 1) ||
	     bad("post %d, result %llu, word %llu", rc[0],
		 (unsigned long long)res[0],
		 (unsigned long long)word_at(&tgt, 0));
	report(ok, "api: once on, a FetchAdd posts and completes");
	iw_qp_set_atomics(p.a.qp, false);
	rc[0] = iw_qp_post_send(p.a.qp, &wr);
	report(rc[0] == -EINVAL || bad("got %d", rc[0]),
	       "api: turned off again: -EINVAL");
	rc[0] = iw_qp_create(env.pd, &(struct iw_qp_attr){ 0 }, &idle);
	if (!rc[0]) {
		iw_qp_set_atomics(idle, true);
		rc[1] = iw_qp_post_send(idle, &wr);
		iw_qp_destroy(idle);
	}
	report((!rc[0] && rc[1] == -ENOTCONN) ||
		       bad("create %d, post %d", rc[0], rc[1]),
	       "api: an atomic on an unconnected QP: -ENOTCONN");
out:
	if (up)
		eu_pair_fini(&p);
	eu_buf_free(&tgt);
}

/* ---- a responder with atomics off terminates; ours flush */

static bool done_failed(void *arg)
{
	struct eu_pair *p = arg;

	return eu_qp_failed(&p->a) && eu_qp_failed(&p->b) && p->a.n_wc >= 4;
}

static bool done_failed_imm(void *arg)
{
	struct eu_pair *p = arg;

	return eu_qp_failed(&p->a) && eu_qp_failed(&p->b);
}

static void test_peer_off(void)
{
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	struct eu_buf tgt = { 0 };
	uint64_t res[4] = { CANARY, CANARY, CANARY, CANARY };
	void *ctx[4];
	const struct eu_ev *ea, *eb;
	bool ok, up;
	int i;

	cfg_default(&cfg);
	up = ok = connect_pair(&p, &env, &cfg, true, false) &&
		  !eu_buf_alloc(&tgt, env.pd, 64, IW_ACC_LOCAL_WRITE |
				IW_ACC_REMOTE_ATOMIC, true);
	for (i = 0; ok && i < 4; i++) {
		ctx[i] = nctx();
		if (post_atomic(LP, &p.a, ctx[i], i & 1 ? CSWAP : FADD,
				&res[i], tgt.stag, eu_to(&tgt, 8), 1, ALL, 0,
				0))
			ok = bad("post %d failed", i);
	}
	if (ok && !eu_run(LP, done_failed, &p, 5000))
		ok = bad("no error on both sides");
	ea = ok ? eu_fail_ev(&p.a) : NULL;
	eb = ok ? eu_fail_ev(&p.b) : NULL;
	if (ok && (!eb || eb->type != IW_CM_ERROR || eb->remote ||
		   !eu_err_is(&eb->err, IW_LAYER_RDMAP,
			      RDMAP_ETYPE_REMOTE_OP, RDMAP_ECODE_OPCODE)))
		ok = bad("responder: %s %s", eb ? eu_ev_str(eb->type) : "-",
			 eb ? eu_err_str(&eb->err) : "-");
	if (ok && (!ea || ea->type != IW_CM_ERROR || !ea->remote ||
		   !eu_err_is(&ea->err, IW_LAYER_RDMAP,
			      RDMAP_ETYPE_REMOTE_OP, RDMAP_ECODE_OPCODE)))
		ok = bad("requester: %s %s", ea ? eu_ev_str(ea->type) : "-",
			 ea ? eu_err_str(&ea->err) : "-");
	for (i = 0; ok && i < 4; i++) {
		const struct iw_wc *wc = eu_find_wc(&p.a, ctx[i]);

		if (eu_count_ctx(&p.a, ctx[i]) != 1 ||
		    wc->status != IW_WC_FLUSHED || wc->op != IW_WC_ATOMIC)
			ok = bad("request %d: %d completions, status %s", i,
				 eu_count_ctx(&p.a, ctx[i]),
				 wc ? eu_status_str(wc->status) : "-");
		else if (res[i] != CANARY)
			ok = bad("request %d wrote a result", i);
	}
	if (ok && word_at(&tgt, 8) != 0)
		ok = bad("the word changed");
	if (!ok && up) {
		qp_diag(&p.a);
		qp_diag(&p.b);
	}
	report(ok, "peer off: its Terminate 0/2/6 reaches us, our atomics "
	       "flush once, the word stays");
	if (up)
		eu_pair_fini(&p);
	eu_buf_free(&tgt);
}

/* ---- RFC 7306 Immediate Data */

static bool imm_post(struct eu_pair *p, void *ctx, uint64_t v)
{
	struct iw_send_wr wr = { .ctx = ctx, .op = IW_WR_IMM,
				 .flags = IW_WR_SIGNALED, .imm = v };

	return iw_qp_post_send(p->a.qp, &wr) == 0;
}

/* A receive of the responder's, waited for. */
static const struct iw_wc *imm_recv_wc(struct eu_pair *p, void *ctx)
{
	if (!eu_wait_ctx(LP, &p->b, ctx, 5000))
		return NULL;
	return eu_find_wc(&p->b, ctx);
}

static bool imm_both_on(struct eu_pair *p)
{
	static char buf[64];
	struct iw_sge sge = { buf, sizeof(buf) };
	void *r1 = nctx(), *r2 = nctx(), *s1 = nctx(), *s2 = nctx();
	struct iw_recv_wr rw = { .ctx = r1, .sgl = &sge, .num_sge = 1 };
	struct iw_send_wr sw = { .ctx = s2, .op = IW_WR_SEND,
				 .flags = IW_WR_SIGNALED, .sgl = &sge,
				 .num_sge = 1 };
	const struct iw_wc *w1, *w2;

	iw_qp_set_imm(p->a.qp, true);
	iw_qp_set_imm(p->b.qp, true);
	if (iw_qp_post_recv(p->b.qp, &rw))
		return bad("post recv");
	rw.ctx = r2;
	if (iw_qp_post_recv(p->b.qp, &rw) ||
	    !imm_post(p, s1, 0x0102030405060708ULL))
		return bad("post recv/imm");
	sge.len = 5;
	if (iw_qp_post_send(p->a.qp, &sw))
		return bad("post send");
	w1 = imm_recv_wc(p, r1);
	w2 = imm_recv_wc(p, r2);
	if (!w1 || w1->status || !(w1->flags & IW_WC_F_IMM) ||
	    w1->imm != 0x0102030405060708ULL || w1->byte_len != 0)
		return bad("Immediate Data's receive: %s flags %#x imm %#llx",
			   w1 ? eu_status_str(w1->status) : "-",
			   w1 ? w1->flags : 0,
			   w1 ? (unsigned long long)w1->imm : 0ULL);
	if (!w2 || w2->status || (w2->flags & IW_WC_F_IMM) ||
	    w2->byte_len != 5)
		return bad("the Send's receive");
	return eu_wait_ctx(LP, &p->a, s1, 5000) ||
	       bad("no completion of the Immediate Data");
}

static void test_imm(void)
{
	struct iw_send_wr wr = { .op = IW_WR_IMM, .imm = 1 };
	struct eu_pair_cfg cfg;
	struct eu_pair p;
	const struct eu_ev *eb, *ea;
	bool ok, up;
	int rc;

	cfg_default(&cfg);
	up = ok = connect_pair(&p, &env, &cfg, false, false);
	rc = ok ? iw_qp_post_send(p.a.qp, &wr) : 0;
	report(rc == -EINVAL || bad("got %d", rc),
	       "imm: off by default: posting Immediate Data is -EINVAL");
	report(ok && imm_both_on(&p),
	       "imm: on at both ends: it completes the next receive with "
	       "its 8 octets (IW_WC_F_IMM, no length); a Send after it "
	       "takes the one behind");
	if (up)
		eu_pair_fini(&p);
	cfg_default(&cfg);
	up = ok = connect_pair(&p, &env, &cfg, false, false);
	if (ok) {
		iw_qp_set_imm(p.a.qp, true);	/* the peer never said yes */
		ok = imm_post(&p, nctx(), 42) &&
		     (eu_run(LP, done_failed_imm, &p, 5000) ||
		      bad("no error on both sides"));
	}
	eb = ok ? eu_fail_ev(&p.b) : NULL;
	ea = ok ? eu_fail_ev(&p.a) : NULL;
	if (ok && (!eb || eb->type != IW_CM_ERROR || eb->remote ||
		   !eu_err_is(&eb->err, IW_LAYER_RDMAP,
			      RDMAP_ETYPE_REMOTE_OP, RDMAP_ECODE_OPCODE) ||
		   !ea || !ea->remote))
		ok = bad("responder: %s %s", eb ? eu_ev_str(eb->type) : "-",
			 eb ? eu_err_str(&eb->err) : "-");
	report(ok, "imm: a peer that did not turn it on terminates with "
	       "0/2/6 (unexpected opcode); the sender hears it");
	if (up)
		eu_pair_fini(&p);
}

/* ---- two threads, two engines, one word */

#define T_N 3000

static uint64_t shared_word[2] __attribute__((aligned(16)));

struct thr {
	struct eu_env env;
	struct eu_pair p;
	struct iw_mr *mr;
	uint64_t res[T_N];
	int posted, rc;
	bool ok;
};

static void *thr_run(void *arg)
{
	struct thr *t = arg;
	int i;

	for (i = 0; i < T_N; i++) {
		t->rc = post_atomic(&t->env.loop, &t->p.a, NULL, FADD,
				    &t->res[i], iw_mr_stag(t->mr),
				    (uintptr_t)shared_word, 1, 0, 0, 0);
		if (t->rc)
			break;
		t->posted++;
	}
	t->ok = eu_wait_n_wc(&t->env.loop, &t->p.a, (size_t)t->posted,
			     30000);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_threads(void)
{
	static struct thr t[2];
	static uint64_t all[2 * T_N];
	pthread_t th[2];
	struct eu_pair_cfg cfg;
	bool ok = true, up[2] = { false, false }, run[2] = { false, false };
	size_t i, j;

	shared_word[0] = 0;
	for (i = 0; i < 2; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		cfg_default(&cfg);
		if (eu_env_open(&t[i].env) ||
		    !connect_pair(&t[i].p, &t[i].env, &cfg, true, true) ||
		    iw_mr_reg(t[i].env.pd, shared_word, 8,
			      (uintptr_t)shared_word,
			      IW_ACC_LOCAL_WRITE | IW_ACC_REMOTE_ATOMIC,
			      &t[i].mr)) {
			ok = bad("engine %zu setup", i);
			break;
		}
		up[i] = true;
	}
	for (i = 0; ok && i < 2; i++)
		if (pthread_create(&th[i], NULL, thr_run, &t[i]))
			ok = bad("pthread_create");
		else
			run[i] = true;
	for (i = 0; i < 2; i++)
		if (run[i])
			pthread_join(th[i], NULL);
	for (i = 0; ok && i < 2; i++) {
		if (!t[i].ok || t[i].posted != T_N)
			ok = bad("engine %zu: %d posted (%d), %zu completions",
				 i, t[i].posted, t[i].rc, t[i].p.a.n_wc);
		for (j = 0; ok && j < t[i].p.a.n_wc; j++)
			if (t[i].p.a.wc[j].status != IW_WC_SUCCESS)
				ok = bad("engine %zu: completion %zu %s", i,
					 j, eu_status_str(
						 t[i].p.a.wc[j].status));
	}
	if (ok) {
		memcpy(all, t[0].res, sizeof(t[0].res));
		memcpy(all + T_N, t[1].res, sizeof(t[1].res));
		qsort(all, 2 * T_N, sizeof(all[0]), cmp_u64);
		for (i = 0; ok && i < 2 * T_N; i++)
			if (all[i] != i)
				ok = bad("old values: %zu-th is %llu", i,
					 (unsigned long long)all[i]);
	}
	if (ok && __atomic_load_n(&shared_word[0], __ATOMIC_ACQUIRE) !=
		  2 * T_N)
		ok = bad("word %llu, want %d",
			 (unsigned long long)shared_word[0], 2 * T_N);
	report(ok, "threads: %d FetchAdds from each of two engines on one "
	       "word: every old value once, sum exact", T_N);
	for (i = 0; i < 2; i++) {
		if (!up[i])
			continue;
		eu_pair_fini(&t[i].p);
		if (t[i].mr)
			iw_mr_dereg(t[i].mr);
		eu_env_close(&t[i].env);
	}
}

int main(void)
{
	int rc;

	alarm(120);	/* a hang is a failure */
	rc = eu_env_open(&env);
	if (rc) {
		tap_ok(0, "device and PD (%d)", rc);
		return tap_done();
	}
	test_api();
	test_cases(true);
	test_cases(false);
	test_mixed();
	test_peer_off();
	test_imm();
	test_threads();
	rc = eu_env_close(&env);
	report(rc == 0 || bad("eu_env_close: %d", rc),
	       "teardown: PD and device close with nothing left over");
	return tap_done();
}
