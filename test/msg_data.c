/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Data transfer cases of test_msg: sizes and iovs of Sends, RMA Writes
 * and Reads at random offsets, delivery/transmit complete, a remote
 * access violation, cancel, CQ overrun, fd waits with epoll, inject and
 * selective completion.
 *
 * Most servers run a small command loop: the client asks them over the
 * control socket to post a receive, verify what it received, fill or
 * check a piece of their registered region; in between they keep
 * driving progress (manual progress: RMA targets must be driven too).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "msg_util.h"

#define MiB		(1024 * 1024)
#define BUFLEN		(17 * MiB)	/* 16 MiB + room for random offsets */
#define RECV_EXTRA	100		/* receives are larger than needed */
#define RPC_MS		(3 * WAIT_MS)
#define GUARD_SEED	0x6a09e667f3bcc908ULL

static const size_t sizes[] = {
	0, 1, 4095, 4096, 65537, MiB + 3, 16 * MiB,
};

static uint64_t gseed_of(const struct proc *p)
{
	return p->seed ^ GUARD_SEED;
}

/* Pattern seed of transfer `kind` of size index k. */
static uint64_t seed_of(const struct proc *p, size_t k, int kind)
{
	return p->seed ^ ((uint64_t)(k + 1) << 20) ^ ((uint64_t)kind << 12);
}

/* ---- the server's command loop */

struct srv {
	struct node n;
	char *rbuf;		/* receives land here */
	char *region;		/* registered for RMA */
	size_t region_len;
	struct fid_mr *mr;	/* of the region */
	struct fid_mr *rmr;	/* of rbuf */
	uint64_t gseed;
	struct layout rl;	/* the last posted receive */
	uint64_t rseed;
	bool rreport;
	char rx_ctx;		/* its context */
	size_t dirty_off, dirty_len;	/* region octets to re-guard */
};

static bool srv_open(struct srv *s, struct proc *p, size_t region_len,
		     uint64_t access)
{
	memset(s, 0, sizeof(*s));
	if (!srv_setup(&s->n, p, NULL))
		return false;
	s->gseed = gseed_of(p);
	s->region_len = region_len;
	s->rbuf = malloc(BUFLEN);
	s->region = malloc(region_len);
	if (!s->rbuf || !s->region)
		return check(false, "buffers");
	pat_fill(s->region, region_len, s->gseed, 0);
	s->mr = mr_reg(&s->n, s->region, region_len, access);
	s->rmr = mr_reg(&s->n, s->rbuf, BUFLEN, FI_RECV);
	if (!check(s->mr && s->rmr, "region of %zu octets and receive buffer "
		   "registered", region_len))
		return false;
	return ctl_send(p, CTL_KEYS, fi_mr_key(s->mr),
			(uintptr_t)s->region, region_len, 0, 0);
}

static void srv_close(struct srv *s)
{
	if (s->mr)
		fi_close(&s->mr->fid);
	if (s->rmr)
		fi_close(&s->rmr->fid);
	s->mr = s->rmr = NULL;
	node_close(&s->n);
	free(s->rbuf);
	free(s->region);
}

static void srv_reguard(struct srv *s)
{
	if (s->dirty_len)
		pat_fill(s->region + s->dirty_off, s->dirty_len, s->gseed,
			 s->dirty_off);
	s->dirty_len = 0;
}

static bool srv_post_recv(struct srv *s, const struct ctl *m)
{
	void *desc[3] = { s->rmr ? fi_mr_desc(s->rmr) : NULL };
	struct iovec iov[3];
	int niov = (int)m->v[1];
	ssize_t ret;

	desc[1] = desc[2] = desc[0];
	layout_make(&s->rl, BUFLEN, m->v[0], niov, RECV_EXTRA);
	layout_guard(&s->rl, s->rbuf, s->gseed);
	layout_iov(&s->rl, s->rbuf, iov);
	s->rseed = m->v[2];
	s->rreport = m->v[3];
	if (s->rl.n == 1)
		ret = fi_recv(s->n.ep, iov[0].iov_base, iov[0].iov_len,
			      desc[0], 0, &s->rx_ctx);
	else
		ret = fi_recvv(s->n.ep, iov, desc, (size_t)s->rl.n, 0,
			       &s->rx_ctx);
	if (ret)
		diag("posting a receive: %zd", ret);
	return !ret;
}

static bool srv_verify_recv(struct srv *s)
{
	const char *why = "no completion";
	struct comp cp;

	if (cq_take(&s->n, &s->rx_ctx, &cp, 2 * WAIT_MS)) {
		if (cp.err)
			why = cp.text;
		else if (!(cp.flags & FI_RECV))
			why = "completion without FI_RECV";
		else
			why = layout_verify(&s->rl, s->rbuf, cp.len, s->rseed,
					    s->gseed);
	}
	if (s->rreport)
		check(!*why, "a receive of %zu octets in %d piece(s) arrives "
		      "intact%s%s", s->rl.total, s->rl.n, *why ? ": " : "",
		      why);
	else if (*why)
		diag("receive of %zu octets: %s", s->rl.total, why);
	return !*why;
}

static bool range_ok(const struct srv *s, size_t off, size_t len,
		     uint64_t seed, uint64_t at)
{
	return pat_diff(s->region + off, len, seed, at) == SIZE_MAX;
}

static bool srv_check_region(struct srv *s, const struct ctl *m)
{
	size_t off = m->v[0], len = m->v[1];
	size_t lo = off > LAYOUT_GAP ? off - LAYOUT_GAP : 0;
	size_t hi = off + len + LAYOUT_GAP < s->region_len ?
			    off + len + LAYOUT_GAP : s->region_len;
	bool data, guard;

	if (off > s->region_len || len > s->region_len - off)
		return check(false, "a region check inside the region");
	data = range_ok(s, off, len, m->v[2], 0);
	guard = range_ok(s, lo, off - lo, s->gseed, lo) &&
		range_ok(s, off + len, hi - off - len, s->gseed, off + len);
	check(data && guard, "%s: %zu octets at offset %zu are in place%s",
	      m->v[3] == 1 ? "RMA Write" : m->v[3] == 2 ?
	      "FI_DELIVERY_COMPLETE Write, as its completion arrived" :
	      "Write", len, off, !data ? " (data differs)" :
	      !guard ? " (octets around it changed)" : "");
	/* guarded again at once: the next Write may overlap */
	pat_fill(s->region + off, len, s->gseed, off);
	return data && guard;
}

/* Stops driving progress until RESUME (or 2 * WAIT_MS). */
static void srv_pause(struct srv *s)
{
	struct ctl m;

	ctl_send(s->n.p, CTL_ACK, 1, 0, 0, 0, 0);
	ctl_expect(s->n.p, CTL_RESUME, &m, 2 * WAIT_MS);
}

static void srv_handle(struct srv *s, const struct ctl *m)
{
	bool ok = true;

	srv_reguard(s);
	switch (m->op) {
	case CTL_POST_RECV:
		ok = srv_post_recv(s, m);
		break;
	case CTL_VERIFY_RECV:
		ok = srv_verify_recv(s);
		break;
	case CTL_FILL:
		if (m->v[0] > s->region_len ||
		    m->v[1] > s->region_len - m->v[0]) {
			ok = false;
			break;
		}
		pat_fill(s->region + m->v[0], m->v[1], m->v[2], 0);
		s->dirty_off = m->v[0];
		s->dirty_len = m->v[1];
		break;
	case CTL_CHECK_REGION:
		ok = srv_check_region(s, m);
		break;
	case CTL_PAUSE:
		srv_pause(s);
		return;
	default:
		diag("unexpected command %u", m->op);
		ok = false;
		break;
	}
	ctl_send(s->n.p, CTL_ACK, ok, 0, 0, 0, 0);
}

/* Serves commands until END or the client goes away. */
static void srv_serve(struct srv *s)
{
	struct ctl m;

	while (ctl_wait_serving(&s->n, &m, 60000) && m.op != CTL_END)
		srv_handle(s, &m);
}

/* ---- the client's side of it */

struct cli {
	struct node n;
	char *sbuf;		/* sources */
	char *lbuf;		/* Read sinks */
	struct fid_mr *smr, *lmr;
	void *sdesc[3], *ldesc;	/* their descriptors */
	uint64_t key, base;
	size_t region_len;
	uint64_t gseed;
};

static bool cli_open(struct cli *c, struct proc *p)
{
	struct ctl m;

	memset(c, 0, sizeof(*c));
	if (!cli_setup(&c->n, p, NULL))
		return false;
	c->gseed = gseed_of(p);
	c->sbuf = malloc(BUFLEN);
	c->lbuf = malloc(BUFLEN);
	if (c->sbuf && c->lbuf) {
		c->smr = mr_reg(&c->n, c->sbuf, BUFLEN, FI_SEND | FI_WRITE);
		c->lmr = mr_reg(&c->n, c->lbuf, BUFLEN, FI_READ);
	}
	if (!check(c->smr && c->lmr, "local buffers registered"))
		return false;
	c->sdesc[0] = c->sdesc[1] = c->sdesc[2] = fi_mr_desc(c->smr);
	c->ldesc = fi_mr_desc(c->lmr);
	if (!check(ctl_expect(p, CTL_KEYS, &m, RPC_MS),
		   "the server's region key"))
		return false;
	c->key = m.v[0];
	c->base = m.v[1];
	c->region_len = m.v[2];
	return true;
}

static void cli_close(struct cli *c)
{
	ctl_send(c->n.p, CTL_END, 0, 0, 0, 0, 0);
	if (c->smr)
		fi_close(&c->smr->fid);
	if (c->lmr)
		fi_close(&c->lmr->fid);
	node_close(&c->n);
	free(c->sbuf);
	free(c->lbuf);
}

/* One command; true if the server answered ok. */
static bool rpc(struct cli *c, uint32_t op, uint64_t a, uint64_t b,
		uint64_t cc, uint64_t d)
{
	struct ctl m;

	if (!ctl_send(c->n.p, op, a, b, cc, d, 0))
		return false;
	/* the server keeps our progress going: drive ours meanwhile */
	if (!ctl_wait_serving(&c->n, &m, RPC_MS) || m.op != CTL_ACK) {
		diag("command %u: no answer", op);
		return false;
	}
	return m.v[0] == 1;
}

static size_t remote_off(struct cli *c, size_t len)
{
	return LAYOUT_GAP +
	       rnd_below(c->region_len - len - 2 * LAYOUT_GAP);
}

static const char *comp_str(bool got, const struct comp *cp, ssize_t ret)
{
	static char buf[200];

	if (ret)
		snprintf(buf, sizeof(buf), "posting: %zd", ret);
	else if (!got)
		snprintf(buf, sizeof(buf), "no completion");
	else if (cp->err)
		snprintf(buf, sizeof(buf), "error %d: %s", cp->err, cp->text);
	else
		snprintf(buf, sizeof(buf), "ok");
	return buf;
}

/* Posts, then waits for the completion of ctx: "" or what went wrong. */
static const char *complete(struct cli *c, ssize_t ret, void *ctx,
			    uint64_t flag)
{
	struct comp cp;
	bool got = !ret && cq_take(&c->n, ctx, &cp, 2 * WAIT_MS);

	if (got && !cp.err && !(cp.flags & flag))
		return "completion without the operation's flag";
	if (got && !cp.err)
		return "";
	return comp_str(got, &cp, ret);
}

/* A Send of len octets in niov pieces, into a receive of niov pieces. */
static void xfer_send(struct cli *c, size_t k, int niov)
{
	uint64_t seed = seed_of(c->n.p, k, niov);
	size_t len = sizes[k];
	struct iovec iov[3];
	struct layout l;
	const char *why;
	ssize_t ret;
	char ctx;

	if (!rpc(c, CTL_POST_RECV, len, (uint64_t)niov, seed, 1)) {
		check(false, "the server posts a receive of %zu octets", len);
		return;
	}
	layout_make(&l, BUFLEN, len, niov, 0);
	layout_fill(&l, c->sbuf, seed, c->gseed);
	layout_iov(&l, c->sbuf, iov);
	if (niov == 1)
		ret = fi_send(c->n.ep, iov[0].iov_base, len, c->sdesc[0], 0,
			      &ctx);
	else
		ret = fi_sendv(c->n.ep, iov, c->sdesc, (size_t)niov, 0, &ctx);
	why = complete(c, ret, &ctx, FI_SEND);
	check(!*why, "%s of %zu octets in %d piece(s) completes%s%s",
	      niov == 1 ? "fi_send" : "fi_sendv", len, niov,
	      *why ? ": " : "", why);
	rpc(c, CTL_VERIFY_RECV, 0, 0, 0, 0);
}

/* A Send behind earlier Writes: once it is received, they are placed. */
static bool xfer_fence(struct cli *c)
{
	uint64_t seed = seed_of(c->n.p, 99, 99);
	char ctx;
	ssize_t ret;

	if (!rpc(c, CTL_POST_RECV, 8, 1, seed, 0))
		return false;
	pat_fill(c->sbuf, 8, seed, 0);
	ret = fi_send(c->n.ep, c->sbuf, 8, NULL, 0, &ctx);
	return !*complete(c, ret, &ctx, FI_SEND) &&
	       rpc(c, CTL_VERIFY_RECV, 0, 0, 0, 0);
}

static void xfer_write(struct cli *c, size_t k)
{
	uint64_t seed = seed_of(c->n.p, k, 4);
	size_t len = sizes[k], roff = remote_off(c, len);
	struct layout l;
	const char *why;
	ssize_t ret;
	char ctx;

	layout_make(&l, BUFLEN, len, 1, 0);
	layout_fill(&l, c->sbuf, seed, c->gseed);
	ret = fi_write(c->n.ep, c->sbuf + l.off[0], len, c->sdesc[0], 0,
		       rma_addr(&c->n, c->base, roff), c->key, &ctx);
	why = complete(c, ret, &ctx, FI_WRITE);
	check(!*why, "fi_write of %zu octets to remote offset %zu "
	      "completes%s%s", len, roff, *why ? ": " : "", why);
	if (!xfer_fence(c))
		diag("the Send behind the Write failed");
	rpc(c, CTL_CHECK_REGION, roff, len, seed, 1);
}

static void xfer_read(struct cli *c, size_t k)
{
	uint64_t seed = seed_of(c->n.p, k, 5);
	size_t len = sizes[k], roff = remote_off(c, len);
	struct layout l;
	const char *why;
	ssize_t ret;
	char ctx;

	if (!rpc(c, CTL_FILL, roff, len, seed, 0)) {
		check(false, "the server fills %zu octets", len);
		return;
	}
	layout_make(&l, BUFLEN, len, 1, 0);
	layout_guard(&l, c->lbuf, c->gseed);
	ret = fi_read(c->n.ep, c->lbuf + l.off[0], len, c->ldesc, 0,
		      rma_addr(&c->n, c->base, roff), c->key, &ctx);
	why = complete(c, ret, &ctx, FI_READ);
	if (!*why)
		why = layout_verify(&l, c->lbuf, len, seed, c->gseed);
	check(!*why, "fi_read of %zu octets from remote offset %zu: data "
	      "intact%s%s", len, roff, *why ? ": " : "", why);
}

void sizes_client(struct proc *p)
{
	struct cli c;
	bool virt;
	size_t k;

	if (!cli_open(&c, p))
		goto out;
	virt = c.n.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
	check(!virt, "mr_mode lacks FI_MR_VIRT_ADDR%s: offsets",
	      p->offset_mode ? ", as asked" : " though offered");
	for (k = 0; k < ARRAY_SIZE(sizes) && !p->broken; k++) {
		xfer_send(&c, k, 1);
		xfer_send(&c, k, 3);
		xfer_write(&c, k);
		xfer_read(&c, k);
	}
out:
	cli_close(&c);
}

void sizes_server(struct proc *p)
{
	struct srv s;

	if (srv_open(&s, p, BUFLEN, FI_REMOTE_READ | FI_REMOTE_WRITE))
		srv_serve(&s);
	srv_close(&s);
}

/* ---- FI_DELIVERY_COMPLETE and FI_TRANSMIT_COMPLETE */

#define DC_LEN		65536
#define DC_WLEN		(MiB + 3)

static const char *dc_name(uint64_t flags)
{
	return flags == FI_DELIVERY_COMPLETE ? "FI_DELIVERY_COMPLETE" :
					       "FI_TRANSMIT_COMPLETE";
}

static ssize_t dc_sendmsg(struct cli *c, size_t off, size_t len,
			  uint64_t flags, void *ctx)
{
	struct iovec iov = { c->sbuf + off, len };
	struct fi_msg msg = {
		.msg_iov = &iov,
		.iov_count = 1,
		.context = ctx,
	};

	return fi_sendmsg(c->n.ep, &msg, flags);
}

static ssize_t dc_writemsg(struct cli *c, size_t off, size_t len,
			   size_t roff, uint64_t flags, void *ctx)
{
	struct iovec iov = { c->sbuf + off, len };
	struct fi_rma_iov rma = {
		.addr = rma_addr(&c->n, c->base, roff),
		.len = len,
		.key = c->key,
	};
	struct fi_msg_rma msg = {
		.msg_iov = &iov,
		.iov_count = 1,
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.context = ctx,
	};

	return fi_writemsg(c->n.ep, &msg, flags);
}

static void dc_send(struct cli *c, uint64_t flags, int kind)
{
	uint64_t seed = seed_of(c->n.p, 10, kind);
	const char *why;
	char ctx;

	if (!rpc(c, CTL_POST_RECV, DC_LEN, 1, seed, 1))
		return;
	pat_fill(c->sbuf, DC_LEN, seed, 0);
	why = complete(c, dc_sendmsg(c, 0, DC_LEN, flags, &ctx), &ctx,
		       FI_SEND);
	check(!*why, "fi_sendmsg(%s) of %d octets completes%s%s",
	      dc_name(flags), DC_LEN, *why ? ": " : "", why);
	rpc(c, CTL_VERIFY_RECV, 0, 0, 0, 0);
}

static void dc_write(struct cli *c, uint64_t flags, int kind)
{
	uint64_t seed = seed_of(c->n.p, 10, kind);
	size_t roff = remote_off(c, DC_WLEN);
	const char *why;
	bool dc = flags == FI_DELIVERY_COMPLETE;
	char ctx;

	pat_fill(c->sbuf, DC_WLEN, seed, 0);
	why = complete(c, dc_writemsg(c, 0, DC_WLEN, roff, flags, &ctx),
		       &ctx, FI_WRITE);
	check(!*why, "fi_writemsg(%s) of %d octets completes%s%s",
	      dc_name(flags), DC_WLEN, *why ? ": " : "", why);
	/* delivery: the data must be there now, with nothing in between */
	if (!dc && !xfer_fence(c))
		diag("the Send behind the Write failed");
	rpc(c, CTL_CHECK_REGION, roff, DC_WLEN, seed, dc ? 2 : 1);
}

/* With the target not driving progress, nothing can be delivered. */
static void dc_paused(struct cli *c)
{
	uint64_t sseed = seed_of(c->n.p, 11, 1), wseed = seed_of(c->n.p, 11, 2);
	bool manual = c->n.info->domain_attr->data_progress ==
		      FI_PROGRESS_MANUAL;
	size_t roff = remote_off(c, DC_LEN);
	char sctx, wctx;
	uint64_t end;
	bool early = false;
	const char *ws, *ww;
	ssize_t r1, r2;
	size_t i;

	if (!rpc(c, CTL_POST_RECV, DC_LEN, 1, sseed, 1) ||
	    !rpc(c, CTL_PAUSE, 0, 0, 0, 0))
		return;
	pat_fill(c->sbuf, DC_LEN, wseed, 0);
	pat_fill(c->sbuf + DC_LEN, DC_LEN, sseed, 0);
	r1 = dc_writemsg(c, 0, DC_LEN, roff, FI_DELIVERY_COMPLETE, &wctx);
	r2 = dc_sendmsg(c, DC_LEN, DC_LEN, FI_DELIVERY_COMPLETE, &sctx);
	for (end = now_ms() + 300; now_ms() < end;) {
		cq_drain(&c->n);
		node_wait(&c->n, 2, false);
	}
	for (i = 0; i < c->n.ncomps; i++)
		early |= c->n.comps[i].ctx == &wctx ||
			 c->n.comps[i].ctx == &sctx;
	check(!manual || !early, "no FI_DELIVERY_COMPLETE completion while "
	      "the target drives no progress (manual progress)");
	ctl_send(c->n.p, CTL_RESUME, 0, 0, 0, 0, 0);
	ww = complete(c, r1, &wctx, FI_WRITE);
	ws = complete(c, r2, &sctx, FI_SEND);
	check(!*ww && !*ws, "both complete once it does (write: %s, send: "
	      "%s)", *ww ? ww : "ok", *ws ? ws : "ok");
	rpc(c, CTL_CHECK_REGION, roff, DC_LEN, wseed, 2);
	rpc(c, CTL_VERIFY_RECV, 0, 0, 0, 0);
}

void delivery_client(struct proc *p)
{
	struct cli c;

	if (cli_open(&c, p)) {
		dc_send(&c, FI_DELIVERY_COMPLETE, 1);
		dc_send(&c, FI_TRANSMIT_COMPLETE, 2);
		dc_write(&c, FI_DELIVERY_COMPLETE, 3);
		dc_write(&c, FI_TRANSMIT_COMPLETE, 4);
		dc_paused(&c);
	}
	cli_close(&c);
}

void delivery_server(struct proc *p)
{
	struct srv s;

	if (srv_open(&s, p, 4 * MiB, FI_REMOTE_READ | FI_REMOTE_WRITE))
		srv_serve(&s);
	srv_close(&s);
}

/* ---- remote access violation */

#define VIO_LEN		65536

/* The connection goes down: FI_SHUTDOWN or an error entry. */
static void vio_down(struct node *n)
{
	struct eq_ev e;

	eq_wait(n->ep_eq, &e, 2 * WAIT_MS);
	check((e.ret > 0 && e.event == FI_SHUTDOWN &&
	       e.u.cm.fid == &n->ep->fid) || e.ret == -FI_EAVAIL,
	      "the connection goes down: FI_SHUTDOWN or an EQ error entry "
	      "(%s)", eq_ev_str(&e));
}

/* Waits for every ctx; counts errors, keeps the first error text. */
static int vio_collect(struct node *n, void **ctx, int count, char *text,
		       size_t len)
{
	struct comp cp;
	int i, errs = 0;

	snprintf(text, len, "none");
	for (i = 0; i < count; i++) {
		if (!ctx[i])
			continue;
		if (!cq_take(n, ctx[i], &cp, WAIT_MS)) {
			diag("operation %d: no completion", i);
			continue;
		}
		if (!cp.err)
			continue;
		diag("operation %d: error %d (%s), prov_errno %#x: %s", i,
		     cp.err, fi_strerror(cp.err), cp.prov_errno, cp.text);
		if (!errs++ || !strstr(text, "DDP tagged buffer"))
			snprintf(text, len, "%s", cp.text);
	}
	return errs;
}

/* A Write to a region without FI_REMOTE_WRITE, then a Read behind it. */
static void vio_no_access(struct node *n, char *buf, const struct ctl *k)
{
	char wctx, rctx, text[160];
	void *ctx[2] = { &wctx, &rctx };
	ssize_t ret;
	int errs;

	ret = fi_write(n->ep, buf, 4096, NULL, 0, rma_addr(n, k->v[1], 0),
		       k->v[0], &wctx);
	check(!ret, "fi_write to a key without FI_REMOTE_WRITE is posted "
	      "(%zd)", ret);
	if (ret)
		ctx[0] = NULL;
	if (fi_read(n->ep, buf + 4096, 4096, NULL, 0,
		    rma_addr(n, k->v[1], 0), k->v[0], &rctx))
		ctx[1] = NULL;
	errs = vio_collect(n, ctx, 2, text, sizeof(text));
	check(errs > 0, "an error completion (fi_cq_readerr) for the write "
	      "or the read behind it (%d)", errs);
	check(strstr(text, "DDP tagged buffer") != NULL,
	      "fi_cq_strerror names the Terminate reason (\"%s\")", text);
	vio_down(n);
}

/* An out-of-bounds Write with FI_DELIVERY_COMPLETE: its own error. */
static void vio_bounds(struct node *n, char *buf, const struct ctl *k)
{
	struct iovec iov = { buf, 100 };
	struct fi_rma_iov rma = {
		.addr = rma_addr(n, k->v[4], VIO_LEN - 10),
		.len = 100,
		.key = k->v[3],
	};
	char wctx, text[160];
	void *ctx = &wctx;
	struct fi_msg_rma msg = {
		.msg_iov = &iov,
		.iov_count = 1,
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.context = &wctx,
	};
	ssize_t ret;
	int errs;

	ret = fi_writemsg(n->ep, &msg, FI_DELIVERY_COMPLETE);
	check(!ret, "fi_writemsg(FI_DELIVERY_COMPLETE) past the end of a "
	      "region is posted (%zd)", ret);
	errs = ret ? 0 : vio_collect(n, &ctx, 1, text, sizeof(text));
	check(errs == 1, "it completes with an error");
	check(errs == 1 && strstr(text, "DDP tagged buffer") != NULL,
	      "fi_cq_strerror names the Terminate reason (\"%s\")",
	      errs ? text : "-");
	vio_down(n);
}

void violation_client(struct proc *p)
{
	char buf[8192] = { 0 };
	struct node n;
	struct ctl k;
	int ret;

	if (!cli_setup(&n, p, NULL) || !ctl_expect(p, CTL_KEYS, &k, RPC_MS))
		goto out;
	vio_no_access(&n, buf, &k);
	ctl_expect(p, CTL_NEXT, NULL, 3 * WAIT_MS);
	node_close_ep(&n);
	ret = cli_connect(&n, NULL, 0, NULL);
	if (check(!ret, "second connection (%d)", ret))
		vio_bounds(&n, buf, &k);
	ctl_expect(p, CTL_NEXT, NULL, 3 * WAIT_MS);
out:
	node_close(&n);
}

static char vio_rbuf[64];

/* A receive to be flushed; posted before the client may write. */
static int vio_post(struct node *n)
{
	int ret = (int)fi_recv(n->ep, vio_rbuf, sizeof(vio_rbuf), NULL, 0,
			       vio_rbuf);

	if (ret)
		diag("posting a receive: %d", ret);
	return ret;
}

/* The connection goes down and the receive is flushed. */
static void vio_victim(struct node *n)
{
	struct comp cp;
	bool got;

	vio_down(n);
	got = cq_take(n, vio_rbuf, &cp, WAIT_MS);
	check(got && cp.err, "the posted receive completes with an error "
	      "(%s)", got ? (cp.err ? fi_strerror(cp.err) : "ok") : "none");
}

void violation_server(struct proc *p)
{
	char *ro = calloc(1, VIO_LEN), *rw = calloc(1, VIO_LEN);
	struct fid_mr *mro = NULL, *mrw = NULL;
	struct eq_ev req;
	struct node n;
	int ret;

	if (!srv_setup(&n, p, NULL) || !ro || !rw)
		goto out;
	mro = mr_reg(&n, ro, VIO_LEN, FI_REMOTE_READ);
	mrw = mr_reg(&n, rw, VIO_LEN, FI_REMOTE_READ | FI_REMOTE_WRITE);
	if (!check(mro && mrw && !vio_post(&n),
		   "regions registered, a receive posted"))
		goto out;
	ctl_send(p, CTL_KEYS, fi_mr_key(mro), (uintptr_t)ro, VIO_LEN,
		 fi_mr_key(mrw), (uintptr_t)rw);
	vio_victim(&n);
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	node_close_ep(&n);
	/* the client writes as soon as it is connected */
	ret = srv_connreq(&n, &req, 2 * WAIT_MS);
	if (!ret)
		ret = srv_endpoint(&n, &req);
	if (!ret)
		ret = vio_post(&n);
	if (!ret)
		ret = srv_accept(&n, NULL, 0);
	if (check(!ret, "second connection (%d)", ret))
		vio_victim(&n);
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
out:
	if (mro)
		fi_close(&mro->fid);
	if (mrw)
		fi_close(&mrw->fid);
	node_close(&n);
	free(ro);
	free(rw);
}

/* ---- fi_cancel of a posted receive */

void cancel_client(struct proc *p)
{
	char buf[3][64];
	struct comp cp, c1, c2;
	struct node n;
	bool got, ok;
	int i, ret = 0;

	if (!cli_setup(&n, p, NULL))
		goto out;
	for (i = 0; i < 3 && !ret; i++)
		ret = (int)fi_recv(n.ep, buf[i], sizeof(buf[i]), NULL, 0,
				   buf[i]);
	if (!check(!ret, "three receives posted (%d)", ret))
		goto out;
	ret = (int)fi_cancel(&n.ep->fid, buf[1]);
	check(!ret, "fi_cancel of the second one (%d)", ret);
	got = cq_take(&n, buf[1], &cp, WAIT_MS);
	check(got && cp.err == FI_ECANCELED && (cp.flags & FI_RECV),
	      "it completes with FI_ECANCELED and its op_context (%s, "
	      "flags %#llx)", got ? fi_strerror(cp.err) : "none",
	      got ? (unsigned long long)cp.flags : 0ULL);
	check(n.ncomps == 0, "the other two are still posted (%zu "
	      "completions)", n.ncomps);
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	ok = cq_take_any(&n, &c1, WAIT_MS) && cq_take_any(&n, &c2, WAIT_MS);
	check(ok && !c1.err && !c2.err && c1.ctx == buf[0] &&
	      c2.ctx == buf[2] && !strcmp(buf[0], "one") &&
	      !strcmp(buf[2], "two"),
	      "the next two messages land in the first and the third");
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
}

void cancel_server(struct proc *p)
{
	static const char *const msgs[] = { "one", "two" };
	struct comp cp;
	struct node n;
	struct ctl m;
	int i, ok = 0;

	if (!srv_setup(&n, p, NULL) || !ctl_wait_serving(&n, &m, RPC_MS))
		goto out;
	for (i = 0; i < 2; i++)
		if (!POST_RETRY(&n, WAIT_MS,
				fi_send(n.ep, msgs[i], strlen(msgs[i]) + 1,
					NULL, 0, (void *)msgs[i])) &&
		    cq_take(&n, (void *)msgs[i], &cp, WAIT_MS) && !cp.err)
			ok++;
	check(ok == 2, "two sends complete (%d)", ok);
	ctl_wait_serving(&n, &m, RPC_MS);
out:
	node_close(&n);
}

/* ---- CQ overrun: many more completions than the CQ's size */

#define OVR_CQ_SIZE	8
#define OVR_COUNT	200

/* Progress without reading the CQ: fi_eq_read drives the fabric. */
static void ovr_progress(struct node *n)
{
	struct fi_eq_cm_entry e;
	uint32_t ev;

	if (fi_eq_read(n->ep_eq, &ev, &e, sizeof(e), FI_PEEK) != -FI_EAGAIN)
		diag("an EQ event during the transfer");
}

static int ovr_post(struct node *n, char (*msg)[16])
{
	uint64_t end = now_ms() + WAIT_MS;
	ssize_t ret;
	int i;

	for (i = 0; i < OVR_COUNT; i++) {
		snprintf(msg[i], sizeof(msg[i]), "msg %d", i);
		while ((ret = fi_send(n->ep, msg[i], sizeof(msg[i]), NULL, 0,
				      msg[i])) == -FI_EAGAIN &&
		       now_ms() < end)
			ovr_progress(n);
		if (ret)
			break;
	}
	return i;
}

/* Reads in small batches: all OVR_COUNT, in order, no error. */
static void ovr_read(struct node *n, char (*msg)[16])
{
	struct fi_cq_msg_entry ent[5];
	int got = 0, bad = -1;
	uint64_t end = now_ms() + WAIT_MS;
	ssize_t r, i;

	while (got < OVR_COUNT && now_ms() < end) {
		r = fi_cq_read(n->cq, ent, ARRAY_SIZE(ent));
		if (r == -FI_EAGAIN)
			continue;
		if (r < 0) {
			diag("fi_cq_read: %zd", r);
			bad = got;
			break;
		}
		for (i = 0; i < r; i++, got++)
			if (bad < 0 && (got >= OVR_COUNT ||
					ent[i].op_context != msg[got] ||
					!(ent[i].flags & FI_SEND)))
				bad = got;
	}
	check(got == OVR_COUNT && bad < 0, "%d send completions come back "
	      "in order from a CQ of size %d (%d, first wrong %d)",
	      OVR_COUNT, OVR_CQ_SIZE, got, bad);
	r = fi_cq_read(n->cq, ent, 1);
	check(r == -FI_EAGAIN, "and nothing more (%zd)", r);
}

void overrun_client(struct proc *p)
{
	struct fi_cq_attr cqa = {
		.size = OVR_CQ_SIZE,
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_UNSPEC,
	};
	char (*msg)[16] = calloc(OVR_COUNT, 16);
	struct node n;
	uint64_t end;
	int posted;

	if (!msg || !cli_setup(&n, p, &cqa) ||
	    !ctl_expect(p, CTL_NEXT, NULL, RPC_MS))
		goto out;
	posted = ovr_post(&n, msg);
	check(posted == OVR_COUNT, "%d sends posted without reading the CQ "
	      "(%d)", OVR_COUNT, posted);
	for (end = now_ms() + 2 * WAIT_MS; !ctl_pending(p) && now_ms() < end;)
		ovr_progress(&n);
	for (end = now_ms() + 50; now_ms() < end;)
		ovr_progress(&n);
	ovr_read(&n, msg);
out:
	if (msg)
		node_close(&n);
	free(msg);
}

void overrun_server(struct proc *p)
{
	char (*buf)[16] = calloc(OVR_COUNT, 16);
	char want[16];
	struct comp cp;
	struct node n;
	struct ctl m;
	int i, ret = 0, bad = -1;

	if (!buf || !srv_setup(&n, p, NULL))
		goto out;
	for (i = 0; i < OVR_COUNT && !ret; i++)
		ret = (int)fi_recv(n.ep, buf[i], sizeof(buf[i]), NULL, 0,
				   buf[i]);
	if (!check(!ret, "%d receives posted (%d)", OVR_COUNT, ret))
		goto out;
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	for (i = 0; i < OVR_COUNT; i++) {
		snprintf(want, sizeof(want), "msg %d", i);
		if (!cq_take_any(&n, &cp, WAIT_MS))
			break;
		if (bad < 0 && (cp.err || cp.ctx != buf[i] ||
				strcmp(buf[i], want)))
			bad = i;
	}
	check(i == OVR_COUNT && bad < 0, "%d messages arrive in order (%d, "
	      "first wrong %d)", OVR_COUNT, i, bad);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
	ctl_wait_serving(&n, &m, RPC_MS);
out:
	if (buf)
		node_close(&n);
	free(buf);
}

/* ---- fd waits: FI_WAIT_FD, FI_GETWAIT, fi_trywait, epoll */

#define PINGS		100
#define EPOLL_WAIT_MS	2000

struct ping {
	char rx[PINGS][32];
	char tx[PINGS][32];
	int rx_ok, tx_ok, bad;
};

static void ping_account(struct ping *g, const struct fi_cq_msg_entry *e,
			 const char *word)
{
	char want[32];
	int i;

	for (i = 0; i < PINGS; i++) {
		if (e->op_context == g->tx[i]) {
			g->tx_ok++;
			return;
		}
		if (e->op_context != g->rx[i])
			continue;
		snprintf(want, sizeof(want), "%s %d", word, i);
		if (strcmp(g->rx[i], want))
			g->bad++;
		g->rx_ok++;
		return;
	}
	g->bad++;
}

struct epoll_stats {
	int waits, stalls, errors;
};

/* fi_trywait, then epoll_wait on the CQ's fd; a timeout is a stall. */
static void epoll_step(struct node *n, int epfd, struct epoll_stats *st)
{
	struct epoll_event ev;
	struct fid *f = &n->cq->fid;
	int ret = fi_trywait(n->fabric, &f, 1);

	if (ret == -FI_EAGAIN)
		return;
	if (ret) {
		st->errors++;
		return;
	}
	st->waits++;
	if (epoll_wait(epfd, &ev, 1, EPOLL_WAIT_MS) == 0)
		st->stalls++;
}

/* Reads until `want` completions in all, sleeping in epoll_wait. */
static void epoll_until(struct node *n, int epfd, struct ping *g, int want,
			struct epoll_stats *st, uint64_t end)
{
	struct fi_cq_msg_entry ent[16];
	ssize_t r, i;

	while (g->rx_ok + g->tx_ok < want && now_ms() < end &&
	       st->errors < 100) {
		r = fi_cq_read(n->cq, ent, ARRAY_SIZE(ent));
		for (i = 0; i < r; i++)
			ping_account(g, &ent[i], "pong");
		if (r == -FI_EAGAIN)
			epoll_step(n, epfd, st);
		else if (r < 0)
			st->errors++;
	}
}

/* Ping-pong in lock step: every answer is waited for on the fd. */
static void epoll_loop(struct node *n, int epfd, struct ping *g)
{
	uint64_t end = now_ms() + 3 * WAIT_MS;
	struct epoll_stats st = { 0 };
	ssize_t ret = 0;
	int i;

	for (i = 0; i < PINGS && !ret && now_ms() < end; i++) {
		snprintf(g->tx[i], sizeof(g->tx[i]), "ping %d", i);
		ret = fi_send(n->ep, g->tx[i], strlen(g->tx[i]) + 1, NULL, 0,
			      g->tx[i]);
		if (!ret)
			epoll_until(n, epfd, g, 2 * (i + 1), &st, end);
	}
	check(!ret && g->rx_ok == PINGS && g->tx_ok == PINGS && !g->bad,
	      "%d messages out and %d back in lock step, waiting with "
	      "fi_trywait + epoll_wait (%d, %d, %d wrong, post %zd)", PINGS,
	      PINGS, g->tx_ok, g->rx_ok, g->bad, ret);
	check(st.waits && !st.stalls && !st.errors,
	      "the fd woke every wait (%d waits, %d ran into the %d ms "
	      "timeout, %d errors)", st.waits, st.stalls, EPOLL_WAIT_MS,
	      st.errors);
}

static int epoll_setup(struct node *n)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = -1, epfd, ret;

	ret = fi_control(&n->cq->fid, FI_GETWAIT, &fd);
	check(!ret && fd >= 0, "fi_control(FI_GETWAIT) gives an fd (%d, %d)",
	      ret, fd);
	epfd = epoll_create1(0);
	if (ret || fd < 0 || epfd < 0)
		return -1;
	ev.data.fd = fd;
	if (!check(!epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev),
		   "the fd goes into an epoll set")) {
		close(epfd);
		return -1;
	}
	return epfd;
}

static void sread_checks(struct node *n, struct proc *p)
{
	struct fi_cq_msg_entry ent;
	char buf[32];
	uint64_t t0;
	ssize_t r;

	t0 = now_ms();
	r = fi_cq_sread(n->cq, &ent, 1, NULL, 300);
	t0 = now_ms() - t0;
	check(r == -FI_EAGAIN && t0 >= 250 && t0 < 2000,
	      "fi_cq_sread on an empty CQ times out after 300 ms (%zd after "
	      "%llu ms)", r, (unsigned long long)t0);
	if (fi_recv(n->ep, buf, sizeof(buf), NULL, 0, buf))
		return;
	ctl_send(p, CTL_SEND_LATER, 100, 0, 0, 0, 0);
	t0 = now_ms();
	do
		r = fi_cq_sread(n->cq, &ent, 1, NULL, 2 * WAIT_MS);
	while (r == -FI_EINTR);
	t0 = now_ms() - t0;
	check(r == 1 && ent.op_context == buf && !strcmp(buf, "late") &&
	      t0 < 2 * WAIT_MS, "fi_cq_sread returns the message sent 100 ms "
	      "later (%zd after %llu ms)", r, (unsigned long long)t0);
}

void epoll_client(struct proc *p)
{
	struct fi_cq_attr cqa = {
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_FD,
	};
	struct ping *g = calloc(1, sizeof(*g));
	struct node n;
	int i, epfd = -1;
	ssize_t ret = 0;

	if (!g || !cli_setup(&n, p, &cqa))
		goto out;
	epfd = epoll_setup(&n);
	for (i = 0; i < PINGS && !ret; i++)
		ret = fi_recv(n.ep, g->rx[i], sizeof(g->rx[i]), NULL, 0,
			      g->rx[i]);
	if (epfd < 0 || !ctl_expect(p, CTL_NEXT, NULL, RPC_MS) ||
	    !check(!ret, "receives posted (%zd)", ret))
		goto out;
	epoll_loop(&n, epfd, g);
	sread_checks(&n, p);
out:
	if (epfd >= 0)
		close(epfd);
	if (g)
		node_close(&n);
	free(g);
}

/* Answers each ping with a pong. */
static void pong_loop(struct node *n, struct ping *g)
{
	uint64_t end = now_ms() + 3 * WAIT_MS;
	struct fi_cq_msg_entry e;
	struct comp cp;
	int i;

	while ((g->rx_ok < PINGS || g->tx_ok < PINGS) && now_ms() < end) {
		if (!cq_take_any(n, &cp, 100))
			continue;
		e.op_context = cp.ctx;
		e.flags = cp.flags;
		e.len = cp.len;
		ping_account(g, &e, "ping");
		i = (int)(((char *)cp.ctx - g->rx[0]) / sizeof(g->rx[0]));
		if (cp.err || cp.ctx < (void *)g->rx ||
		    cp.ctx >= (void *)g->tx)
			continue;
		snprintf(g->tx[i], sizeof(g->tx[i]), "pong %d", i);
		/* the client is asleep in epoll_wait by then: its wakeup is
		 * what the case checks (an answer back before its
		 * fi_trywait leaves it nothing to wait for) */
		usleep(300);
		if (POST_RETRY(n, WAIT_MS, fi_send(n->ep, g->tx[i],
						   strlen(g->tx[i]) + 1, NULL,
						   0, g->tx[i])))
			g->bad++;
	}
	check(g->rx_ok == PINGS && g->tx_ok == PINGS && !g->bad,
	      "%d pings answered (%d in, %d out, %d wrong)", PINGS, g->rx_ok,
	      g->tx_ok, g->bad);
}

void epoll_server(struct proc *p)
{
	struct ping *g = calloc(1, sizeof(*g));
	char late[] = "late";
	struct comp cp;
	struct node n;
	struct ctl m;
	ssize_t ret = 0;
	int i;

	if (!g || !srv_setup(&n, p, NULL))
		goto out;
	for (i = 0; i < PINGS && !ret; i++)
		ret = fi_recv(n.ep, g->rx[i], sizeof(g->rx[i]), NULL, 0,
			      g->rx[i]);
	if (!check(!ret, "receives posted (%zd)", ret))
		goto out;
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	pong_loop(&n, g);
	if (!ctl_wait_serving(&n, &m, RPC_MS) || m.op != CTL_SEND_LATER)
		goto out;
	sleep_ms((int)m.v[0]);
	ret = POST_RETRY(&n, WAIT_MS, fi_send(n.ep, late, sizeof(late), NULL,
					      0, late));
	check(!ret && cq_take(&n, late, &cp, WAIT_MS) && !cp.err,
	      "the late message is sent (%zd)", ret);
	ctl_wait_serving(&n, &m, RPC_MS);
out:
	if (g)
		node_close(&n);
	free(g);
}

/* ---- fi_inject and fi_inject_write */

#define INJ_COUNT	3
#define INJ_LEN		100
#define INJ_WLEN	200
#define INJ_WOFF	128

void inject_client(struct proc *p)
{
	char buf[INJ_WLEN], fence[] = "fence";
	struct comp cp;
	struct node n;
	struct ctl k;
	uint64_t end;
	ssize_t ret = 0;
	int i, bad = 0;

	if (!cli_setup(&n, p, NULL) || !ctl_expect(p, CTL_KEYS, &k, RPC_MS))
		goto out;
	for (i = 0; i < INJ_COUNT; i++) {
		pat_fill(buf, INJ_LEN, seed_of(p, 20, i), 0);
		ret = POST_RETRY(&n, WAIT_MS, fi_inject(n.ep, buf, INJ_LEN, 0));
		bad += ret != 0;
		memset(buf, 0xee, sizeof(buf));	/* ours again at once */
	}
	check(!bad, "%d fi_inject of %d octets (%d failed)", INJ_COUNT,
	      INJ_LEN, bad);
	pat_fill(buf, INJ_WLEN, seed_of(p, 21, 0), 0);
	ret = POST_RETRY(&n, WAIT_MS, fi_inject_write(n.ep, buf, INJ_WLEN, 0,
		rma_addr(&n, k.v[1], INJ_WOFF), k.v[0]));
	check(!ret, "fi_inject_write of %d octets (%zd)", INJ_WLEN, ret);
	memset(buf, 0xee, sizeof(buf));
	ret = fi_send(n.ep, fence, sizeof(fence), NULL, 0, fence);
	check(!ret && cq_take_any(&n, &cp, WAIT_MS) && cp.ctx == fence,
	      "the first completion is the Send's: the injects made none");
	for (end = now_ms() + 200; now_ms() < end;) {
		cq_drain(&n);
		node_wait(&n, 2, false);
	}
	check(n.ncomps == 0, "and none follows (%zu)", n.ncomps);
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	ctl_expect(p, CTL_DONE, NULL, RPC_MS);
out:
	node_close(&n);
}

static void inject_verify(struct node *n, struct proc *p, char (*rb)[256],
			  const char *region)
{
	struct comp cp;
	int i, bad = 0;
	bool fence;

	for (i = 0; i < INJ_COUNT; i++)
		if (!cq_take(n, rb[i], &cp, WAIT_MS) || cp.err ||
		    cp.len != INJ_LEN ||
		    pat_diff(rb[i], INJ_LEN, seed_of(p, 20, i), 0) != SIZE_MAX)
			bad++;
	check(!bad, "the %d injected messages arrive intact (%d wrong)",
	      INJ_COUNT, bad);
	fence = cq_take(n, rb[INJ_COUNT], &cp, WAIT_MS) && !cp.err &&
		!strcmp(rb[INJ_COUNT], "fence");
	check(fence && pat_diff(region + INJ_WOFF, INJ_WLEN,
				seed_of(p, 21, 0), 0) == SIZE_MAX,
	      "the fi_inject_write data is in place once the Send behind it "
	      "arrived");
}

void inject_server(struct proc *p)
{
	char (*rb)[256] = calloc(INJ_COUNT + 1, 256);
	char *region = calloc(1, 4096);
	struct fid_mr *mr = NULL;
	struct node n;
	struct ctl m;
	int i, ret = 0;

	if (!rb || !region || !srv_setup(&n, p, NULL))
		goto out;
	for (i = 0; i <= INJ_COUNT && !ret; i++)
		ret = (int)fi_recv(n.ep, rb[i], 256, NULL, 0, rb[i]);
	mr = mr_reg(&n, region, 4096, FI_REMOTE_WRITE);
	if (!check(!ret && mr, "receives posted, region registered (%d)",
		   ret))
		goto out;
	ctl_send(p, CTL_KEYS, fi_mr_key(mr), (uintptr_t)region, 4096, 0, 0);
	if (ctl_wait_serving(&n, &m, RPC_MS))
		inject_verify(&n, p, rb, region);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
	ctl_wait_serving(&n, &m, RPC_MS);
out:
	if (mr)
		fi_close(&mr->fid);
	if (rb && region)
		node_close(&n);
	free(rb);
	free(region);
}

/* ---- selective completion */

#define SEL_COUNT	4

void selective_client(struct proc *p)
{
	char buf[SEL_COUNT][16], got[64] = "";
	struct iovec iov;
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };
	struct comp cp;
	struct node n;
	uint64_t end;
	ssize_t ret;
	int i, bad = 0;

	p->bind_tx = FI_SELECTIVE_COMPLETION;
	if (!cli_setup(&n, p, NULL) || !ctl_expect(p, CTL_NEXT, NULL, RPC_MS))
		goto out;
	for (i = 0; i < SEL_COUNT; i++) {
		snprintf(buf[i], sizeof(buf[i]), "sel %d", i);
		iov = (struct iovec){ buf[i], sizeof(buf[i]) };
		msg.context = buf[i];
		ret = POST_RETRY(&n, WAIT_MS, fi_sendmsg(n.ep, &msg, i & 1 ?
							 FI_COMPLETION : 0));
		bad += ret != 0;
	}
	check(!bad, "fi_sendmsg without, with, without, with FI_COMPLETION");
	for (end = now_ms() + WAIT_MS; now_ms() < end;) {
		if (!cq_take_any(&n, &cp, 2))
			continue;
		i = (int)(((char *)cp.ctx - buf[0]) / sizeof(buf[0]));
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%d",
			 *got ? "," : "", cp.err || i < 0 || i >= SEL_COUNT ?
			 -1 : i);
		if (cp.ctx == buf[SEL_COUNT - 1])
			end = now_ms() + 200;	/* a little for stragglers */
	}
	check(!strcmp(got, "1,3"), "only the ones with FI_COMPLETION give a "
	      "CQ entry (got: %s)", *got ? got : "none");
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
}

void selective_server(struct proc *p)
{
	char buf[SEL_COUNT][16], want[16];
	struct comp cp;
	struct node n;
	struct ctl m;
	int i, ret = 0, bad = 0;

	if (!srv_setup(&n, p, NULL))
		goto out;
	for (i = 0; i < SEL_COUNT && !ret; i++)
		ret = (int)fi_recv(n.ep, buf[i], sizeof(buf[i]), NULL, 0,
				   buf[i]);
	if (!check(!ret, "receives posted (%d)", ret))
		goto out;
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	for (i = 0; i < SEL_COUNT; i++) {
		snprintf(want, sizeof(want), "sel %d", i);
		if (!cq_take(&n, buf[i], &cp, WAIT_MS) || cp.err ||
		    strcmp(buf[i], want))
			bad++;
	}
	check(!bad, "all %d messages arrive (%d missing or wrong)",
	      SEL_COUNT, bad);
	ctl_wait_serving(&n, &m, RPC_MS);
out:
	node_close(&n);
}
