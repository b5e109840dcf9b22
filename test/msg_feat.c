// SPDX-License-Identifier: BSD-2-Clause
/*
 * test_msg cases of the MSG extensions: remote CQ data (RFC 7306
 * Immediate Data, negotiated in the MPA private data), multi-receive
 * buffers and FI_MSG_PREFIX, each through the public API between two
 * processes.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_tagged.h>

#include "msg_util.h"

#define RPC_MS		(3 * WAIT_MS)
#define CQD_LEN		100
#define CQD_WLEN	64
#define CQD_WOFF	128
#define CQD_REGION	4096
#define MR_MIN		64	/* FI_OPT_MIN_MULTI_RECV */
#define MR_BUF		1024
#define MR_LEN		48
#define MR_FIT		21	/* 1024 - 21 * 48 = 16 < 64: released */
#define PFX		8

static uint64_t seed_k(const struct proc *p, int k)
{
	return p->seed ^ ((uint64_t)k << 24) ^ 0x7306;
}

/* ---- remote CQ data, both ways */

struct cqd {
	struct node n;
	char rbuf[3][CQD_LEN + 16];
	char region[CQD_REGION];
	char tbuf[CQD_LEN];
	struct fid_mr *mr;
	uint64_t peer_key, peer_base;
	bool norecv;	/* no FI_RX_CQ_DATA: a Write's data takes no receive */
};

/* Both sides ask for it: the hints fi_cq_data and fi_rma_bw use, or
 * those of libfabric 2.x's address lookup (no FI_RX_CQ_DATA). */
static void cqd_hints(struct proc *p, bool norecv)
{
	p->mode = norecv ? 0 : FI_RX_CQ_DATA;
	p->cq_data = 4;
}

/* Three receives, the region, and the keys swapped over ctl. */
static bool cqd_prepare(struct cqd *c, struct proc *p)
{
	struct ctl k;
	int i, bad = 0;

	c->mr = mr_reg(&c->n, c->region, sizeof(c->region),
		       FI_REMOTE_WRITE);
	if (!check(c->mr != NULL, "region registered"))
		return false;
	for (i = 0; i < (c->norecv ? 2 : 3); i++)
		bad += fi_recv(c->n.ep, c->rbuf[i], sizeof(c->rbuf[i]), NULL,
			       0, c->rbuf[i]) != 0;
	ctl_send(p, CTL_KEYS, fi_mr_key(c->mr), (uintptr_t)c->region, 0, 0,
		 0);
	if (!ctl_expect(p, CTL_KEYS, &k, RPC_MS))
		return check(false, "the peer's keys");
	c->peer_key = k.v[0];
	c->peer_base = k.v[1];
	check(!c->norecv || !(c->n.info->mode & FI_RX_CQ_DATA),
	      "no FI_RX_CQ_DATA asked, none required");
	return check(!bad, "receives posted");
}

/* fi_senddata, a plain fi_send, fi_writedata; data base + 0, 1, 2. */
static void cqd_send(struct cqd *c, struct proc *p, uint32_t base, int k)
{
	struct node *n = &c->n;
	struct comp cp;
	ssize_t r1, r2, r3;
	bool ok = true;

	pat_fill(c->tbuf, CQD_LEN, seed_k(p, k), 0);
	r1 = fi_senddata(n->ep, c->tbuf, CQD_LEN, NULL, base, 0, &r1);
	ok &= cq_take(n, &r1, &cp, WAIT_MS) && !cp.err;
	r2 = fi_send(n->ep, c->tbuf, CQD_LEN, NULL, 0, &r2);
	ok &= cq_take(n, &r2, &cp, WAIT_MS) && !cp.err;
	pat_fill(c->tbuf, CQD_WLEN, seed_k(p, k + 1), 0);
	r3 = fi_writedata(n->ep, c->tbuf, CQD_WLEN, NULL, base + 2, 0,
			  rma_addr(n, c->peer_base, CQD_WOFF), c->peer_key,
			  &r3);
	ok &= cq_take(n, &r3, &cp, WAIT_MS) && !cp.err &&
	      cp.flags == (FI_RMA | FI_WRITE);
	check(!r1 && !r2 && !r3 && ok,
	      "fi_senddata, fi_send, fi_writedata complete (%zd %zd %zd)",
	      r1, r2, r3);
}

static void cqd_recv(struct cqd *c, struct proc *p, uint32_t base, int k)
{
	uint64_t rcv = FI_RECV | FI_MSG;
	struct node *n = &c->n;
	struct comp a, b, w;
	bool ga, gb, gw;

	ga = cq_take(n, c->rbuf[0], &a, WAIT_MS) && !a.err;
	gb = cq_take(n, c->rbuf[1], &b, WAIT_MS) && !b.err;
	gw = cq_take(n, c->norecv ? NULL : c->rbuf[2], &w, WAIT_MS) &&
	     !w.err;
	check(ga && a.flags == (rcv | FI_REMOTE_CQ_DATA) && a.data == base &&
	      a.len == CQD_LEN &&
	      pat_diff(c->rbuf[0], CQD_LEN, seed_k(p, k), 0) == SIZE_MAX,
	      "fi_senddata: its receive has FI_REMOTE_CQ_DATA %#x and the "
	      "data (flags %#llx data %#llx)", base,
	      (unsigned long long)a.flags, (unsigned long long)a.data);
	check(gb && b.flags == rcv && b.len == CQD_LEN,
	      "the plain fi_send behind it carries none (flags %#llx)",
	      (unsigned long long)b.flags);
	check(gw && w.flags == (FI_RMA | FI_REMOTE_WRITE |
				FI_REMOTE_CQ_DATA) &&
	      w.data == base + 2 && w.len == CQD_WLEN &&
	      pat_diff(c->region + CQD_WOFF, CQD_WLEN, seed_k(p, k + 1), 0) ==
		      SIZE_MAX,
	      "fi_writedata %s: FI_REMOTE_WRITE|FI_REMOTE_CQ_DATA %#x, the "
	      "Write's length and data in place (flags %#llx data %#llx len "
	      "%zu)", c->norecv ? "completes without a receive" :
	      "takes a receive", base + 2, (unsigned long long)w.flags,
	      (unsigned long long)w.data, w.len);
}

static void cqd_close(struct cqd *c)
{
	if (c->mr)
		fi_close(&c->mr->fid);
	node_close(&c->n);
}

/* A connected endpoint asking for remote CQ data (norecv: without
 * FI_RX_CQ_DATA), its region registered and keys swapped; NULL if not. */
static struct cqd *cqd_open(struct proc *p, bool norecv, bool server)
{
	struct cqd *c = calloc(1, sizeof(*c));

	cqd_hints(p, norecv);
	if (!c)
		return NULL;
	c->norecv = norecv;
	if ((server ? srv_setup(&c->n, p, NULL) : cli_setup(&c->n, p, NULL)) &&
	    cqd_prepare(c, p))
		return c;
	cqd_close(c);
	free(c);
	return NULL;
}

static void cqd_free(struct cqd *c)
{
	cqd_close(c);
	free(c);
}

static void cqd_client(struct proc *p, bool norecv)
{
	struct cqd *c = cqd_open(p, norecv, false);

	if (!c)
		return;
	check(c->n.info->domain_attr->cq_data_size == 4,
	      "cq_data_size 4 offered");
	cqd_send(c, p, 0x1234abc0, 1);
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	cqd_recv(c, p, 0xfeed0000, 11);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
	cqd_free(c);
}

static void cqd_server(struct proc *p, bool norecv)
{
	struct cqd *c = cqd_open(p, norecv, true);
	struct ctl m;

	if (!c)
		return;
	cqd_recv(c, p, 0x1234abc0, 1);
	ctl_wait_serving(&c->n, &m, RPC_MS);
	cqd_send(c, p, 0xfeed0000, 11);
	ctl_wait_serving(&c->n, &m, RPC_MS);
	cqd_free(c);
}

void cqdata_client(struct proc *p)
{
	cqd_client(p, false);
}

void cqdata_server(struct proc *p)
{
	cqd_server(p, false);
}

void cqdata_norecv_client(struct proc *p)
{
	cqd_client(p, true);
}

void cqdata_norecv_server(struct proc *p)
{
	cqd_server(p, true);
}

/*
 * A peer that floods Writes with CQ data at an endpoint without
 * FI_RX_CQ_DATA that never reads its CQ: the endpoint holds exactly
 * IWARP_IMM_UNREAD_MAX (msg.h) completions, then ends the stream.
 */
/* Progress without taking a completion until the stream ends or ms pass;
 * then the completions: *data counts those with remote CQ data. */
static bool cqd_until_end(struct cqd *c, int ms, struct eq_ev *ev,
			  size_t *data)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	bool ended = false;
	size_t i;

	while (!ended && now_ms() < end) {
		(void)fi_cq_read(c->n.cq, NULL, 0);
		eq_wait(c->n.ep_eq, ev, 1);
		ended = ev->event == FI_SHUTDOWN || ev->ret == -FI_EAVAIL;
	}
	cq_drain(&c->n);
	*data = 0;
	for (i = 0; i < c->n.ncomps; i++)
		*data += !c->n.comps[i].err &&
			 (c->n.comps[i].flags & FI_REMOTE_CQ_DATA);
	return ended;
}

#define CQD_UNREAD_MAX	(1u << 16)
#define CQD_FLOOD	(CQD_UNREAD_MAX + 4096)

void cqdata_flood_client(struct proc *p)
{
	struct cqd *c;
	uint64_t end = now_ms() + 30000;
	struct eq_ev ev = { 0 };
	size_t sent = 0;
	ssize_t r = 0;

	c = cqd_open(p, true, false);
	if (!c)
		return;
	while (sent < CQD_FLOOD && now_ms() < end) {
		r = fi_inject_writedata(c->n.ep, c->tbuf, 8, (uint64_t)sent, 0,
					rma_addr(&c->n, c->peer_base, CQD_WOFF),
					c->peer_key);
		if (r == -FI_EAGAIN) {
			cq_drain(&c->n);
			continue;
		}
		if (r)
			break;
		sent++;
	}
	if (!r || r == -FI_EAGAIN)
		eq_wait(c->n.ep_eq, &ev, 10000);
	check(sent >= CQD_UNREAD_MAX &&
	      (r < 0 || ev.event == FI_SHUTDOWN || ev.ret == -FI_EAVAIL),
	      "flood: %zu Writes with CQ data sent, then the peer ended the "
	      "connection (last post %zd, EQ %zd event %u)", sent, r, ev.ret,
	      ev.event);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
	cqd_free(c);
}

void cqdata_flood_server(struct proc *p)
{
	struct cqd *c = cqd_open(p, true, true);
	struct eq_ev ev = { 0 };
	size_t data;
	bool ended;

	if (!c)
		return;
	ended = cqd_until_end(c, 30000, &ev, &data);
	check(ended && data == CQD_UNREAD_MAX,
	      "flood: %zu completions held unread (at most %u), then the "
	      "stream ended (EQ %zd event %u)", data, CQD_UNREAD_MAX, ev.ret,
	      ev.event);
	ctl_expect(p, CTL_DONE, NULL, 30000);
	cqd_free(c);
}

/*
 * Remote CQ data of a Write at an endpoint that asked cq_data_size but not
 * FI_RMA: it takes no remote Writes, so such data would be a completion
 * with no context of its own making. The stream ends instead.
 */
void cqdata_norma_client(struct proc *p)
{
	struct cqd *c = cqd_open(p, true, false);
	struct eq_ev ev = { 0 };
	ssize_t r;

	if (!c)
		return;
	r = fi_writedata(c->n.ep, c->tbuf, CQD_WLEN, NULL, 0x5151, 0,
			 rma_addr(&c->n, c->peer_base, CQD_WOFF), c->peer_key,
			 c->tbuf);
	if (!r)
		eq_wait(c->n.ep_eq, &ev, 10000);
	check(!r && (ev.event == FI_SHUTDOWN || ev.ret == -FI_EAVAIL),
	      "no FI_RMA at the peer: fi_writedata is posted (%zd), then the "
	      "peer ends the connection (EQ %zd event %u)", r, ev.ret,
	      ev.event);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
	cqd_free(c);
}

void cqdata_norma_server(struct proc *p)
{
	struct cqd *c;
	struct eq_ev ev = { 0 };
	size_t data;
	bool ended;

	p->no_rma = true;
	c = cqd_open(p, true, true);
	if (!c)
		return;
	check(!(c->n.info->caps & FI_RMA) &&
	      c->n.info->domain_attr->cq_data_size > 0,
	      "no FI_RMA: the endpoint has cq_data_size %zu, caps without "
	      "FI_RMA", c->n.info->domain_attr->cq_data_size);
	ended = cqd_until_end(c, 15000, &ev, &data);
	check(ended && !data, "no FI_RMA: the Write's CQ data makes no "
	      "completion (%zu) and the stream ends (EQ %zd event %u)", data,
	      ev.ret, ev.event);
	ctl_expect(p, CTL_DONE, NULL, 30000);
	cqd_free(c);
}

/* ---- only one side asks: nothing of it goes on the wire */

void cqdata_half_client(struct proc *p)
{
	char buf[32] = "no CQ data";
	struct comp cp;
	struct node n;
	ssize_t r1, r2, r3;

	cqd_hints(p, false);
	if (!cli_setup(&n, p, NULL))
		goto out;
	r1 = fi_senddata(n.ep, buf, sizeof(buf), NULL, 7, 0, &r1);
	r2 = fi_writedata(n.ep, buf, sizeof(buf), NULL, 7, 0, 0, 0, &r2);
	check(r1 == -FI_EOPNOTSUPP && r2 == -FI_EOPNOTSUPP,
	      "the peer did not ask for remote CQ data: fi_senddata and "
	      "fi_writedata say -FI_EOPNOTSUPP (%zd %zd)", r1, r2);
	r3 = fi_send(n.ep, buf, sizeof(buf), NULL, 0, &r3);
	check(!r3 && cq_take(&n, &r3, &cp, WAIT_MS) && !cp.err,
	      "a plain fi_send still works");
	ctl_expect(p, CTL_DONE, NULL, RPC_MS);
out:
	node_close(&n);
}

void cqdata_half_server(struct proc *p)
{
	char buf[64];
	struct comp cp;
	struct node n;

	if (!srv_setup(&n, p, NULL))
		goto out;
	check(fi_recv(n.ep, buf, sizeof(buf), NULL, 0, buf) == 0 &&
	      cq_take(&n, buf, &cp, WAIT_MS) && !cp.err && cp.len == 32 &&
	      !strcmp(buf, "no CQ data"),
	      "the server that did not ask gets the Send alone");
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
}

/* ---- a multi-receive buffer */

void multi_client(struct proc *p)
{
	char buf[MR_LEN];
	struct node n;
	int i, bad = 0;

	if (!cli_setup(&n, p, NULL) || !ctl_expect(p, CTL_NEXT, NULL, RPC_MS))
		goto out;
	for (i = 0; i <= MR_FIT; i++) {
		pat_fill(buf, MR_LEN, seed_k(p, 100 + i), 0);
		bad += POST_RETRY(&n, WAIT_MS,
				  fi_send(n.ep, buf, MR_LEN, NULL, 0, NULL)) != 0;
		cq_drain(&n);
	}
	check(!bad, "%d Sends of %d octets", MR_FIT + 1, MR_LEN);
	ctl_expect(p, CTL_DONE, NULL, RPC_MS);
out:
	node_close(&n);
}

static bool multi_post(struct node *n, char *mbuf, char *rbuf)
{
	struct iovec iov = { mbuf, MR_BUF };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1,
			      .context = mbuf };
	size_t min = MR_MIN;
	int r0, r1, r2;

	r0 = fi_setopt(&n->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
		       &min, sizeof(min));
	r1 = fi_recvmsg(n->ep, &msg, FI_MULTI_RECV);
	/* posted after the buffer: it must see nothing until its release */
	r2 = fi_recv(n->ep, rbuf, MR_LEN, NULL, 0, rbuf);
	return check(!r0 && !r1 && !r2, "FI_OPT_MIN_MULTI_RECV %d, a buffer "
		     "of %d with FI_MULTI_RECV, a receive behind it (%d %d %d)",
		     MR_MIN, MR_BUF, r0, r1, r2);
}

void multi_server(struct proc *p)
{
	char *mbuf = malloc(MR_BUF), rbuf[MR_LEN];
	int i, bad = 0, multi = 0;
	struct comp cp;
	struct node n;

	p->caps = FI_MULTI_RECV;
	if (!mbuf || !srv_setup(&n, p, NULL) || !multi_post(&n, mbuf, rbuf))
		goto out;
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	for (i = 0; i < MR_FIT; i++) {
		if (!cq_take_any(&n, &cp, WAIT_MS) || cp.err ||
		    cp.ctx != mbuf || cp.len != MR_LEN ||
		    cp.buf != mbuf + i * MR_LEN ||
		    pat_diff(cp.buf, MR_LEN, seed_k(p, 100 + i), 0) != SIZE_MAX)
			bad++;
		multi += !!(cp.flags & FI_MULTI_RECV);
		if (i == MR_FIT - 1)
			check(cp.flags == (FI_RECV | FI_MSG | FI_MULTI_RECV),
			      "the last message releases the buffer: "
			      "FI_MULTI_RECV (flags %#llx)",
			      (unsigned long long)cp.flags);
	}
	check(!bad && multi == 1, "%d messages packed one after the other "
	      "in the buffer, in order, intact (%d wrong, %d releases)",
	      MR_FIT, bad, multi);
	check(cq_take_any(&n, &cp, WAIT_MS) && cp.ctx == rbuf && !cp.err &&
	      !(cp.flags & FI_MULTI_RECV) &&
	      pat_diff(rbuf, MR_LEN, seed_k(p, 100 + MR_FIT), 0) == SIZE_MAX,
	      "the next lands in the receive posted behind the buffer");
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
	free(mbuf);
}

/* ---- FI_MSG_PREFIX */

void prefix_client(struct proc *p)
{
	char buf[PFX + 256 + 8];
	struct comp cp;
	struct node n;
	ssize_t r1, r2;

	p->mode = FI_MSG_PREFIX;
	if (!cli_setup(&n, p, NULL))
		goto out;
	check(n.info->ep_attr->msg_prefix_size == PFX &&
	      (n.info->mode & FI_MSG_PREFIX),
	      "FI_MSG_PREFIX offered with msg_prefix_size %d (%zu)", PFX,
	      n.info->ep_attr->msg_prefix_size);
	memset(buf, 0xee, PFX);
	pat_fill(buf + PFX, 100, seed_k(p, 200), 0);
	r1 = fi_send(n.ep, buf, PFX + 100, NULL, 0, &r1);
	check(!r1 && cq_take(&n, &r1, &cp, WAIT_MS) && !cp.err,
	      "a Send of 100 octets behind the prefix");
	r2 = POST_RETRY(&n, WAIT_MS, fi_inject(n.ep, buf, PFX + 256, 0));
	check(!r2, "fi_inject of 256 octets (the inject size) plus the "
	      "prefix (%zd)", r2);
	check(fi_send(n.ep, buf, PFX - 1, NULL, 0, NULL) == -FI_EINVAL,
	      "a buffer shorter than the prefix: -FI_EINVAL");
	ctl_expect(p, CTL_DONE, NULL, RPC_MS);
out:
	node_close(&n);
}

void prefix_server(struct proc *p)
{
	char rb[2][PFX + 300];
	struct comp cp;
	struct node n;
	size_t i;

	p->mode = FI_MSG_PREFIX;
	if (!srv_setup(&n, p, NULL))
		goto out;
	memset(rb, 0x11, sizeof(rb));
	for (i = 0; i < 2; i++)
		fi_recv(n.ep, rb[i], sizeof(rb[i]), NULL, 0, rb[i]);
	check(cq_take(&n, rb[0], &cp, WAIT_MS) && !cp.err &&
	      cp.len == PFX + 100 &&
	      pat_diff(rb[0] + PFX, 100, seed_k(p, 200), 0) == SIZE_MAX &&
	      rb[0][0] == 0x11 && rb[0][PFX - 1] == 0x11,
	      "the payload lands after the prefix, which is left alone; "
	      "the length counts it (%zu)", cp.len);
	check(cq_take(&n, rb[1], &cp, WAIT_MS) && !cp.err &&
	      cp.len == PFX + 256, "the inject arrives, %d + 256 (%zu)", PFX,
	      cp.len);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
}

/* ---- FI_TAGGED, between two ends that both asked for it */

#define TG_BASE		0x7a6000ULL
#define TG_N		5
#define TG_BIG		(1 << 20)
#define TG_SMALL	64

/* The message of tag k: 100 + k octets (TG_BIG for k = 9). */
static size_t tg_len(int k)
{
	return k == 9 ? TG_BIG : 100 + (size_t)k;
}

static bool tg_send(struct node *n, struct proc *p, char *buf, int k,
		    bool tagged)
{
	size_t len = tagged ? tg_len(k) : 50;
	struct comp cp;
	ssize_t r;

	pat_fill(buf, len, seed_k(p, 300 + k), 0);
	r = tagged ? POST_RETRY(n, WAIT_MS, fi_tsend(n->ep, buf, len, NULL, 0,
						     TG_BASE + k, buf)) :
		     POST_RETRY(n, WAIT_MS, fi_send(n->ep, buf, len, NULL, 0,
						    buf));
	return !r && cq_take(n, buf, &cp, WAIT_MS) && !cp.err &&
	       cp.flags == (FI_SEND | (tagged ? FI_TAGGED : FI_MSG));
}

void tagged_client(struct proc *p)
{
	char *buf = malloc(TG_BIG);
	struct node n;
	bool ok = true;
	int k;

	p->caps = FI_TAGGED | FI_MSG;
	if (!cli_setup(&n, p, NULL) || !buf)
		goto out;
	/* all before the server posts a receive */
	for (k = 0; k < TG_N; k++)
		ok &= tg_send(&n, p, buf, k, true);
	ok &= tg_send(&n, p, buf, 0, false);
	ok &= tg_send(&n, p, buf, 9, true);
	check(ok, "five tagged Sends, an untagged one and a tagged 1 MiB "
	      "complete before any receive is posted");
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	if (!ctl_expect(p, CTL_NEXT, NULL, RPC_MS))
		goto out;
	/* the server's receives wait: matched as they come */
	ok = tg_send(&n, p, buf, 0x25, true) && tg_send(&n, p, buf, 0x30,
							 true);
	check(ok, "tagged Sends to waiting receives complete");
	ctl_expect(p, CTL_DONE, NULL, RPC_MS);
out:
	node_close(&n);
	free(buf);
}

/* The unexpected ones, received in the reverse order of their tags. */
static void tagged_unexpected(struct node *n, struct proc *p, char *big)
{
	char rb[TG_N][128], ub[64];
	struct comp cp;
	bool ok = true;
	int k;

	for (k = TG_N - 1; k >= 0; k--) {
		ok &= fi_trecv(n->ep, rb[k], sizeof(rb[k]), NULL, 0,
			       TG_BASE + k, 0, rb[k]) == 0 &&
		      cq_take(n, rb[k], &cp, WAIT_MS) && !cp.err &&
		      cp.flags == (FI_RECV | FI_TAGGED) &&
		      cp.tag == TG_BASE + k && cp.len == tg_len(k) &&
		      pat_diff(rb[k], tg_len(k), seed_k(p, 300 + k), 0) ==
			      SIZE_MAX;
	}
	check(ok, "five unexpected tagged messages, each in the receive of "
	      "its tag, posted in reverse order");
	ok = fi_recv(n->ep, ub, sizeof(ub), NULL, 0, ub) == 0 &&
	     cq_take(n, ub, &cp, WAIT_MS) && !cp.err &&
	     cp.flags == (FI_RECV | FI_MSG) && cp.len == 50 &&
	     pat_diff(ub, 50, seed_k(p, 300), 0) == SIZE_MAX;
	check(ok, "the untagged one goes to fi_recv, not to a tagged receive");
	ok = fi_trecv(n->ep, big, TG_BIG, NULL, 0, TG_BASE, 0xff, big) ==
		     0 &&
	     cq_take(n, big, &cp, WAIT_MS) && !cp.err &&
	     cp.tag == TG_BASE + 9 && cp.len == TG_BIG &&
	     pat_diff(big, TG_BIG, seed_k(p, 309), 0) == SIZE_MAX;
	check(ok, "1 MiB unexpected, matched through ignore bits, intact");
}

void tagged_server(struct proc *p)
{
	char *big = malloc(TG_BIG), small[16], mask[256], never[8];
	struct comp cp, cc;
	struct node n;
	struct ctl m;
	bool ok;

	p->caps = FI_TAGGED | FI_MSG;
	if (!srv_setup(&n, p, NULL) || !big ||
	    !ctl_wait_serving(&n, &m, RPC_MS))
		goto out;
	sleep_ms(100);
	cq_drain(&n);		/* whatever still came, read unexpected */
	tagged_unexpected(&n, p, big);
	ok = fi_trecv(n.ep, mask, sizeof(mask), NULL, 0, TG_BASE + 0x20, 0x0f,
		      mask) == 0 &&
	     fi_trecv(n.ep, small, sizeof(small), NULL, 0, TG_BASE + 0x30, 0,
		      small) == 0 &&
	     fi_trecv(n.ep, never, sizeof(never), NULL, 0, 1, 0, never) == 0;
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	check(ok && cq_take(&n, mask, &cp, WAIT_MS) && !cp.err &&
		      cp.tag == TG_BASE + 0x25 && cp.len == tg_len(0x25),
	      "a waiting receive matches through its ignore bits and reports "
	      "the message's tag (%#llx, %zu octets, err %d)",
	      (unsigned long long)cp.tag, cp.len, cp.err);
	check(cq_take(&n, small, &cp, WAIT_MS) && cp.err == FI_ETRUNC &&
		      cp.len == sizeof(small) &&
		      cp.olen == tg_len(0x30) - sizeof(small) &&
		      pat_diff(small, sizeof(small), seed_k(p, 300 + 0x30),
			       0) == SIZE_MAX,
	      "a longer message is truncated: FI_ETRUNC, olen %zu", cp.olen);
	check(fi_cancel(&n.ep->fid, never) == 0 &&
		      cq_take(&n, never, &cc, WAIT_MS) &&
		      cc.err == FI_ECANCELED,
	      "fi_cancel of a tagged receive: FI_ECANCELED");
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
	free(big);
}

/* One side asked for FI_TAGGED, the other did not: no connection, and
 * nothing reaches the one that did not ask. */
void tagged_half_client(struct proc *p)
{
	struct eq_ev e;
	struct node n;
	int ret;

	p->caps = FI_TAGGED;
	ret = node_open(&n, p, NULL);
	if (!ret && !ctl_expect(p, CTL_READY, NULL, 10000))
		ret = -FI_ETIMEDOUT;
	if (!ret)
		ret = cli_endpoint(&n);
	if (!ret)
		ret = fi_connect(n.ep, n.info->dest_addr, NULL, 0);
	if (!ret)
		eq_wait(n.ep_eq, &e, WAIT_MS);
	check(!ret && e.ret == -FI_EAVAIL && e.err.err == FI_ECONNREFUSED,
	      "a tagged client and a plain server: FI_ECONNREFUSED (%s)",
	      ret ? fi_strerror(-ret) : eq_ev_str(&e));
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
	node_close(&n);
}

void tagged_half_server(struct proc *p)
{
	char buf[64];
	struct eq_ev req;
	struct comp cp;
	struct node n;
	struct ctl m;
	int ret;

	ret = node_open(&n, p, NULL);
	if (!ret && !ctl_send(p, CTL_READY, 0, 0, 0, 0, 0))
		ret = -FI_EIO;
	if (!ret)
		ret = srv_connreq(&n, &req, 10000);
	if (!ret)
		ret = srv_endpoint(&n, &req);
	if (!ret)
		ret = fi_recv(n.ep, buf, sizeof(buf), NULL, 0, buf);
	if (!ret)
		ret = fi_accept(n.ep, NULL, 0);
	ctl_wait_serving(&n, &m, RPC_MS);
	check(!ret && (!cq_take(&n, buf, &cp, 0) || cp.err),
	      "the plain server's receive got no message (%d)", ret);
	node_close(&n);
}
