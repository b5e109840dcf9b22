// SPDX-License-Identifier: BSD-2-Clause
/*
 * test_msg cases of the MSG extensions: remote CQ data (RFC 7306
 * Immediate Data, negotiated in the MPA private data), multi-receive
 * buffers and FI_MSG_PREFIX, each through the public API between two
 * processes.
 */
#include <stdlib.h>
#include <string.h>

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
};

/* Both sides ask for it: the hints fi_cq_data and fi_rma_bw use. */
static void cqd_hints(struct proc *p)
{
	p->mode = FI_RX_CQ_DATA;
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
	for (i = 0; i < 3; i++)
		bad += fi_recv(c->n.ep, c->rbuf[i], sizeof(c->rbuf[i]), NULL,
			       0, c->rbuf[i]) != 0;
	ctl_send(p, CTL_KEYS, fi_mr_key(c->mr), (uintptr_t)c->region, 0, 0,
		 0);
	if (!ctl_expect(p, CTL_KEYS, &k, RPC_MS))
		return check(false, "the peer's keys");
	c->peer_key = k.v[0];
	c->peer_base = k.v[1];
	return check(!bad, "three receives posted");
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
	gw = cq_take(n, c->rbuf[2], &w, WAIT_MS) && !w.err;
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
	      w.data == base + 2 && w.len == 0 &&
	      pat_diff(c->region + CQD_WOFF, CQD_WLEN, seed_k(p, k + 1), 0) ==
		      SIZE_MAX,
	      "fi_writedata takes a receive: FI_REMOTE_WRITE|"
	      "FI_REMOTE_CQ_DATA %#x, the Write's data in place (flags %#llx "
	      "data %#llx len %zu)", base + 2, (unsigned long long)w.flags,
	      (unsigned long long)w.data, w.len);
}

static void cqd_close(struct cqd *c)
{
	if (c->mr)
		fi_close(&c->mr->fid);
	node_close(&c->n);
}

void cqdata_client(struct proc *p)
{
	struct cqd *c = calloc(1, sizeof(*c));

	cqd_hints(p);
	if (!c || !cli_setup(&c->n, p, NULL) || !cqd_prepare(c, p))
		goto out;
	check(c->n.info->domain_attr->cq_data_size == 4,
	      "cq_data_size 4 offered");
	cqd_send(c, p, 0x1234abc0, 1);
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	cqd_recv(c, p, 0xfeed0000, 11);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	if (c)
		cqd_close(c);
	free(c);
}

void cqdata_server(struct proc *p)
{
	struct cqd *c = calloc(1, sizeof(*c));
	struct ctl m;

	cqd_hints(p);
	if (!c || !srv_setup(&c->n, p, NULL) || !cqd_prepare(c, p))
		goto out;
	cqd_recv(c, p, 0x1234abc0, 1);
	ctl_wait_serving(&c->n, &m, RPC_MS);
	cqd_send(c, p, 0xfeed0000, 11);
	ctl_wait_serving(&c->n, &m, RPC_MS);
out:
	if (c)
		cqd_close(c);
	free(c);
}

/* ---- only one side asks: nothing of it goes on the wire */

void cqdata_half_client(struct proc *p)
{
	char buf[32] = "no CQ data";
	struct comp cp;
	struct node n;
	ssize_t r1, r2, r3;

	cqd_hints(p);
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
