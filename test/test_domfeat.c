/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Domain-level features through the public libfabric API, between real
 * processes over loopback TCP (fi_iwarp(7)):
 * - poll sets (fi_poll) over CQs and counters that real transfers fill;
 * - wait sets (fi_wait) over a CQ an endpoint sending to itself fills;
 * - triggered operations (FI_TRIGGER): a send queued on the send
 *   counter goes exactly when the counter reaches its threshold and not
 *   before, in order on the wire; a write through an FI_TRIGGER alias
 *   goes when fi_cntr_add reaches its threshold, and its data lands;
 * - shared AVs: a creator's named AV, opened FI_READ by another process
 *   that sends to the creator's fi_addr_t over RDM and sees entries the
 *   creator adds later; the segment goes with the creator;
 * - hostile segments under a name (truncated, corrupted header or
 *   counts, bad entries, writable by others): FI_READ refuses them;
 * - fi_getinfo offers FI_SHARED_AV and FI_TRIGGER on RDM only.
 *
 * Every scenario runs in forked children (the parent never opens
 * libfabric) that report their checks over a pipe; the parent prints
 * them, then each child's end as a check of its own.
 *
 * Needs FI_PROVIDER_PATH (the directory of libiwarp-fi.so) and
 * FI_IWARP_IFACE=lo.
 */
/* poll and wait sets are deprecated in libfabric 2.x but still offered
 * and served: this test is where they are checked */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_trigger.h>

#include "pattern.h"
#include "tap.h"

/* ==== reporting from children ==== */

static int report_fd = -1;

static int check(int cond, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line + 2, sizeof(line) - 3, fmt, ap);
	va_end(ap);
	if (n < 0)
		return cond;
	line[0] = cond ? '1' : '0';
	line[1] = ' ';
	n = (int)strlen(line);
	line[n] = '\n';
	if (write(report_fd, line, (size_t)n + 1) < 0)
		return cond;
	return cond;
}

/* ==== one endpoint ==== */

struct node {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *txcq, *rxcq;
	struct fid_cntr *txcntr, *rxcntr;
	struct fid_av *av;
	struct fid_wait *ws;		/* CQs join it when set before open */
};

static int node_info(struct node *n, uint64_t caps)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->fabric_attr->prov_name = strdup("iwarp");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &n->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ret = fi_fabric(n->info->fabric_attr, &n->fabric, NULL);
	if (!ret)
		ret = fi_domain(n->fabric, n->info, &n->domain, NULL);
	return ret;
}

/* CQ contexts are the addresses of the node's fields, as fabtests do. */
static int node_queues(struct node *n)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	int ret;

	if (n->ws) {
		cq_attr.wait_obj = FI_WAIT_SET;
		cq_attr.wait_set = n->ws;
	}
	ret = fi_cq_open(n->domain, &cq_attr, &n->txcq, &n->txcq);
	if (!ret)
		ret = fi_cq_open(n->domain, &cq_attr, &n->rxcq, &n->rxcq);
	if (!ret)
		ret = fi_cntr_open(n->domain, &ca, &n->txcntr, &n->txcntr);
	if (!ret)
		ret = fi_cntr_open(n->domain, &ca, &n->rxcntr, &n->rxcntr);
	return ret;
}

static int node_ep(struct node *n, struct fi_av_attr *av_attr)
{
	int ret;

	ret = fi_endpoint(n->domain, n->info, &n->ep, NULL);
	if (!ret)
		ret = fi_av_open(n->domain, av_attr, &n->av, NULL);
	if (!ret)
		ret = fi_ep_bind(n->ep, &n->txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(n->ep, &n->rxcq->fid, FI_RECV);
	if (!ret)
		ret = fi_ep_bind(n->ep, &n->txcntr->fid, FI_SEND | FI_WRITE);
	if (!ret)
		ret = fi_ep_bind(n->ep, &n->rxcntr->fid, FI_RECV);
	if (!ret)
		ret = fi_ep_bind(n->ep, &n->av->fid, 0);
	if (!ret)
		ret = fi_enable(n->ep);
	return ret;
}

static int node_open(struct node *n, uint64_t caps, struct fi_av_attr *aa)
{
	struct fi_av_attr def = { .type = FI_AV_TABLE };
	int ret = node_info(n, caps);

	if (!ret)
		ret = node_queues(n);
	return ret ? ret : node_ep(n, aa ? aa : &def);
}

static void node_close(struct node *n)
{
	struct fid **f[] = {
		(struct fid **)&n->ep, (struct fid **)&n->av,
		(struct fid **)&n->txcq, (struct fid **)&n->rxcq,
		(struct fid **)&n->txcntr, (struct fid **)&n->rxcntr,
		(struct fid **)&n->ws, (struct fid **)&n->domain,
		(struct fid **)&n->fabric,
	};
	size_t i;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (*f[i])
			fi_close(*f[i]);
		*f[i] = NULL;
	}
	fi_freeinfo(n->info);
	n->info = NULL;
}

/* ==== the socket between processes ==== */

static int put(int fd, const void *buf, size_t len)
{
	return send(fd, buf, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

/* One datagram-sized message (SOCK_SEQPACKET) within secs. */
static int get(int fd, void *buf, size_t len, double secs)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (poll(&p, 1, (int)(secs * 1000)) != 1)
		return -1;
	return recv(fd, buf, len, 0) == (ssize_t)len ? 0 : -1;
}

static int put_name(int fd, struct node *n)
{
	char name[64] = { 0 };
	size_t len = sizeof(name);

	if (fi_getname(&n->ep->fid, name, &len))
		return -1;
	return put(fd, name, sizeof(name));
}

/* The peer's name into the node's AV: its fi_addr_t, or NOTAVAIL. */
static fi_addr_t get_peer(int fd, struct node *n)
{
	char name[64];
	fi_addr_t fa = FI_ADDR_NOTAVAIL;

	if (get(fd, name, sizeof(name), 20))
		return FI_ADDR_NOTAVAIL;
	if (fi_av_insert(n->av, name, 1, &fa, 0, NULL) != 1)
		return FI_ADDR_NOTAVAIL;
	return fa;
}

/* One completion from cq within secs: its context, or NULL. */
static void *cq_wait1(struct fid_cq *cq, double secs)
{
	struct fi_cq_entry e;
	double end = tap_now() + secs;
	ssize_t r;

	while (tap_now() < end) {
		r = fi_cq_read(cq, &e, 1);
		if (r == 1)
			return e.op_context;
		if (r != -FI_EAGAIN)
			return NULL;
	}
	return NULL;
}

/* Drives progress for secs; completions taken from cq are counted. */
static int idle(struct fid_cq *cq, double secs)
{
	struct fi_cq_entry e;
	double end = tap_now() + secs;
	int n = 0;

	while (tap_now() < end)
		if (fi_cq_read(cq, &e, 1) == 1)
			n++;
	return n;
}

/* ==== poll sets ==== */

/* Polls until every wanted context showed up (their bits in *seen). */
static bool poll_for(struct fid_poll *ps, void *const *want, int nwant,
		     unsigned int *seen, double secs)
{
	void *ctx[8];
	double end = tap_now() + secs;
	unsigned int all = (1u << nwant) - 1;
	int i, j, n;

	while ((*seen & all) != all && tap_now() < end) {
		n = fi_poll(ps, ctx, 8);
		if (n < 0)
			return false;
		for (i = 0; i < n; i++)
			for (j = 0; j < nwant; j++)
				if (ctx[i] == want[j])
					*seen |= 1u << j;
	}
	return (*seen & all) == all;
}

static struct fid_poll *poll_all(struct node *n)
{
	struct fi_poll_attr pa = { 0 };
	struct fid_poll *ps = NULL;
	int ret;

	ret = fi_poll_open(n->domain, &pa, &ps);
	check(!ret, "fi_poll_open (%d)", ret);
	if (ret)
		return NULL;
	ret = fi_poll_add(ps, &n->txcq->fid, 0) ||
	      fi_poll_add(ps, &n->rxcq->fid, 0) ||
	      fi_poll_add(ps, &n->txcntr->fid, 0) ||
	      fi_poll_add(ps, &n->rxcntr->fid, 0);
	check(!ret, "fi_poll_add of two CQs and two counters");
	return ps;
}

static void poll_server(int sock)
{
	struct node n = { 0 };
	void *want[2];
	unsigned int seen = 0;
	struct fid_poll *ps;
	uint8_t buf[256];
	void *ctx[8];
	bool ok;
	int ret;

	ret = node_open(&n, FI_MSG, NULL);
	ps = ret ? NULL : poll_all(&n);
	if (!ps || put_name(sock, &n))
		goto out;
	memset(buf, 0, sizeof(buf));
	ret = (int)fi_recv(n.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf);
	put(sock, "r", 1);
	want[0] = &n.rxcq;
	want[1] = &n.rxcntr;
	ok = !ret && poll_for(ps, want, 2, &seen, 10);
	check(ok, "poll set reports the receive CQ and counter (seen %#x)",
	      seen);
	check(cq_wait1(n.rxcq, 5) == buf && pat_diff(buf, 200, 7, 0) ==
	      SIZE_MAX, "the received message is intact");
	fi_cntr_read(n.rxcntr);
	check(fi_poll(ps, ctx, 8) == 0,
	      "nothing left: a counter reports a change once");
	put(sock, "d", 1);
	get(sock, buf, 1, 20);
	fi_close(&ps->fid);
out:
	node_close(&n);
}

/* CQs in a poll set stay open; del, then del again, refuses. */
static void poll_misuse(struct fid_poll *ps, struct node *n)
{
	void *ctx[2];
	int ret;

	ret = fi_close(&n->txcq->fid);
	check(ret == -FI_EBUSY, "a CQ in a poll set does not close (%d)",
	      ret);
	ret = fi_poll_del(ps, &n->txcq->fid, 0);
	check(!ret && fi_poll_del(ps, &n->txcq->fid, 0) == -FI_EINVAL,
	      "fi_poll_del, then again: -FI_EINVAL");
	ret = fi_poll_add(ps, &n->av->fid, 0);
	check(ret == -FI_EINVAL, "an AV is no poll set member (%d)", ret);
	check(fi_poll(ps, ctx, 2) >= 0, "fi_poll after del");
}

static void poll_client(int sock)
{
	struct node n = { 0 };
	unsigned int seen = 0;
	struct fid_poll *ps;
	uint8_t buf[256], c;
	fi_addr_t peer;
	void *want[2], *ctx[8];
	bool ok;
	int ret;

	ret = node_open(&n, FI_MSG, NULL);
	ps = ret ? NULL : poll_all(&n);
	peer = ps ? get_peer(sock, &n) : FI_ADDR_NOTAVAIL;
	if (peer == FI_ADDR_NOTAVAIL || get(sock, &c, 1, 20))
		goto out;
	check(fi_poll(ps, ctx, 8) == 0, "an idle poll set returns 0");
	pat_fill(buf, 200, 7, 0);
	ret = (int)fi_send(n.ep, buf, 200, NULL, peer, buf);
	want[0] = &n.txcq;
	want[1] = &n.txcntr;
	ok = !ret && poll_for(ps, want, 2, &seen, 10);
	check(ok, "poll set reports the send CQ and counter (seen %#x)",
	      seen);
	check(cq_wait1(n.txcq, 5) == buf, "the send completion is there");
	get(sock, &c, 1, 20);
	poll_misuse(ps, &n);
	put(sock, "d", 1);
	fi_close(&ps->fid);
out:
	node_close(&n);
}

/* ==== wait sets ==== */

static void waitset_child(int sock)
{
	struct fi_wait_attr wa = { .wait_obj = FI_WAIT_UNSPEC };
	struct node n = { 0 };
	uint8_t out[64], in[64];
	fi_addr_t self;
	size_t len = sizeof(in);
	int ret, fd = -1;

	(void)sock;
	ret = node_info(&n, FI_MSG);
	if (!ret)
		ret = fi_wait_open(n.fabric, &wa, &n.ws);
	check(!ret, "fi_wait_open (%d)", ret);
	if (!ret)
		ret = node_queues(&n);
	if (!ret)
		ret = node_ep(&n, &(struct fi_av_attr){ .type = FI_AV_MAP });
	check(!ret, "CQs join the wait set, endpoint opens (%d)", ret);
	if (ret)
		goto out;
	ret = fi_control(&n.ws->fid, FI_GETWAIT, &fd);
	check(!ret && fd >= 0, "FI_GETWAIT on the set gives an fd (%d)", fd);
	ret = fi_wait(n.ws, 100);
	check(ret == -FI_ETIMEDOUT, "fi_wait with nothing: -FI_ETIMEDOUT (%d)",
	      ret);
	fi_getname(&n.ep->fid, in, &len);
	fi_av_insert(n.av, in, 1, &self, 0, NULL);
	fi_recv(n.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, in);
	pat_fill(out, sizeof(out), 3, 0);
	fi_send(n.ep, out, sizeof(out), NULL, self, out);
	ret = fi_wait(n.ws, 5000);
	check(!ret, "fi_wait wakes for a transfer to self (%d)", ret);
	check(cq_wait1(n.rxcq, 5) == in && !memcmp(in, out, sizeof(in)),
	      "the message arrived");
	ret = fi_close(&n.ws->fid);
	check(ret == -FI_EBUSY, "a wait set with members does not close (%d)",
	      ret);
out:
	node_close(&n);
}

/* ==== triggered operations ==== */

struct trig_keys {
	uint64_t addr, key;
};

static void trig_server(int sock)
{
	struct node n = { 0 };
	static uint8_t r[4][64], wbuf[128];
	struct trig_keys k;
	struct fid_mr *mr = NULL;
	void *got[4];
	int i, ret;

	ret = node_open(&n, FI_MSG | FI_RMA, NULL);
	if (!ret)
		ret = fi_mr_reg(n.domain, wbuf, sizeof(wbuf), FI_REMOTE_WRITE,
				0, 0, 0, &mr, NULL);
	if (ret || put_name(sock, &n))
		goto out;
	for (i = 0; i < 4; i++)
		fi_recv(n.ep, r[i], sizeof(r[i]), NULL, FI_ADDR_UNSPEC, r[i]);
	k = (struct trig_keys){ n.info->domain_attr->mr_mode &
				FI_MR_VIRT_ADDR ? (uintptr_t)wbuf : 0,
				fi_mr_key(mr) };
	put(sock, &k, sizeof(k));
	for (i = 0; i < 3; i++)
		got[i] = cq_wait1(n.rxcq, 20);
	check(got[0] == r[0] && got[1] == r[1] && got[2] == r[2] &&
	      !strcmp((char *)r[0], "one") && !strcmp((char *)r[1], "two") &&
	      !strcmp((char *)r[2], "triggered"),
	      "messages arrive as one, two, then the triggered one "
	      "('%s' '%s' '%s')", r[0], r[1], r[2]);
	got[3] = cq_wait1(n.rxcq, 20);
	check(got[3] == r[3] && !strcmp((char *)r[3], "after-write") &&
	      pat_diff(wbuf, 96, 11, 0) == SIZE_MAX &&
	      wbuf[96] == 0,
	      "the triggered write's data landed, nothing beyond it");
	put(sock, "d", 1);
	get(sock, r[0], 1, 20);
out:
	if (mr)
		fi_close(&mr->fid);
	node_close(&n);
}

/* A send queued on the send counter: not before, exactly at. */
static void trig_send(struct node *n, fi_addr_t peer)
{
	static struct fi_triggered_context tctx;
	static char m1[] = "one", m2[] = "two", mt[] = "triggered";
	struct iovec iov = { mt, sizeof(mt) };
	struct fi_msg msg = { &iov, NULL, 1, peer, &tctx, 0 };
	uint64_t base = fi_cntr_read(n->txcntr);
	void *c1, *c2;
	int ret;

	tctx.event_type = FI_TRIGGER_THRESHOLD;
	tctx.trigger.threshold.cntr = n->txcntr;
	tctx.trigger.threshold.threshold = base + 2;
	ret = (int)fi_sendmsg(n->ep, &msg, FI_TRIGGER);
	check(!ret, "fi_sendmsg with FI_TRIGGER is queued (%d)", ret);
	fi_send(n->ep, m1, sizeof(m1), NULL, peer, m1);
	ret = fi_cntr_wait(n->txcntr, base + 1, 10000);
	check(!ret && idle(n->txcq, 0.3) == 1 &&
	      fi_cntr_read(n->txcntr) == base + 1,
	      "at threshold - 1 the triggered send has not gone");
	fi_send(n->ep, m2, sizeof(m2), NULL, peer, m2);
	ret = fi_cntr_wait(n->txcntr, base + 3, 10000);
	check(!ret, "at the threshold it goes: the counter reaches +3 (%d)",
	      ret);
	c1 = cq_wait1(n->txcq, 5);
	c2 = cq_wait1(n->txcq, 5);
	check(c1 == m2 && c2 == &tctx,
	      "its completion follows the second send's, with its context");
}

/* fi_ep_alias(FI_TRIGGER): fi_write waits for a counter we raise. */
static void trig_alias_write(struct node *n, fi_addr_t peer,
			     const struct trig_keys *k)
{
	static struct fi_triggered_context tctx;
	static uint8_t src[96];
	static char m[] = "after-write";
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *tc = NULL;
	struct fid_ep *alias = NULL;
	uint64_t base = fi_cntr_read(n->txcntr);
	int ret;

	ret = fi_cntr_open(n->domain, &ca, &tc, NULL);
	if (!ret)
		ret = fi_ep_alias(n->ep, &alias, FI_TRANSMIT | FI_TRIGGER);
	check(!ret, "fi_ep_alias with FI_TRIGGER (%d)", ret);
	if (ret)
		goto out;
	pat_fill(src, sizeof(src), 11, 0);
	tctx.event_type = FI_TRIGGER_THRESHOLD;
	tctx.trigger.threshold.cntr = tc;
	tctx.trigger.threshold.threshold = 3;
	ret = (int)fi_write(alias, src, sizeof(src), NULL, peer, k->addr,
			    k->key, &tctx);
	fi_cntr_set(tc, 2);
	check(!ret && idle(n->txcq, 0.3) == 0 &&
	      fi_cntr_read(n->txcntr) == base,
	      "a write on the alias waits while its counter is below (%d)",
	      ret);
	fi_cntr_add(tc, 1);
	ret = fi_cntr_wait(n->txcntr, base + 1, 10000);
	check(!ret && cq_wait1(n->txcq, 5) == &tctx,
	      "fi_cntr_add to the threshold issues it (%d)", ret);
	fi_send(n->ep, m, sizeof(m), NULL, peer, m);
	cq_wait1(n->txcq, 10);
out:
	if (alias)
		fi_close(&alias->fid);
	if (tc)
		fi_close(&tc->fid);
}

static void trig_bad(struct node *n, fi_addr_t peer)
{
	struct fi_triggered_context tctx = { .event_type = FI_TRIGGER_XPU };
	char b[8] = "x";
	struct iovec iov = { b, 1 };
	struct fi_msg msg = { &iov, NULL, 1, peer, &tctx, 0 };
	int ret;

	ret = (int)fi_sendmsg(n->ep, &msg, FI_TRIGGER);
	check(ret == -FI_ENOSYS, "an XPU trigger: -FI_ENOSYS (%d)", ret);
	tctx.event_type = FI_TRIGGER_THRESHOLD;
	tctx.trigger.threshold.cntr = NULL;
	ret = (int)fi_sendmsg(n->ep, &msg, FI_TRIGGER);
	check(ret == -FI_EINVAL, "a threshold without a counter: -FI_EINVAL "
	      "(%d)", ret);
}

static void trig_client(int sock)
{
	struct node n = { 0 };
	struct trig_keys k;
	fi_addr_t peer;
	char c;
	int ret;

	ret = node_open(&n, FI_MSG | FI_RMA | FI_TRIGGER, NULL);
	check(!ret, "an RDM endpoint with FI_TRIGGER opens (%d)", ret);
	peer = ret ? FI_ADDR_NOTAVAIL : get_peer(sock, &n);
	if (peer == FI_ADDR_NOTAVAIL || get(sock, &k, sizeof(k), 20))
		goto out;
	trig_bad(&n, peer);
	trig_send(&n, peer);
	trig_alias_write(&n, peer, &k);
	get(sock, &c, 1, 20);
	put(sock, "d", 1);
out:
	node_close(&n);
}

/* ==== shared AVs ==== */

static char av_name[64];

/* Receives what the FI_READ opener sends to the creator's fi_addr_t. */
static void sav_server(int sock)
{
	struct node n = { 0 };
	char buf[64] = { 0 };

	if (node_open(&n, FI_MSG, NULL) || put_name(sock, &n))
		goto out;
	fi_recv(n.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf);
	check(cq_wait1(n.rxcq, 20) == buf && !strcmp(buf, "from the reader"),
	      "the reader's message arrived ('%s')", buf);
	put(sock, "d", 1);
out:
	node_close(&n);
}

static bool shm_exists(void)
{
	char path[128];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/self/ns/net");
	if (stat(path, &st))
		return false;
	snprintf(path, sizeof(path), "/dev/shm/iwarp-av.%llu.%s",
		 (unsigned long long)st.st_ino, av_name);
	return access(path, F_OK) == 0;
}

/* Creator: the server's name at fi_addr_t 0, a second entry later. */
static void sav_creator(int ssock, int ksock)
{
	struct fi_av_attr aa = { .type = FI_AV_MAP, .name = av_name };
	struct sockaddr_in later = { .sin_family = AF_INET,
				     .sin_port = htons(9) };
	struct node n = { 0 };
	fi_addr_t fa, fb;
	char c;
	int ret;

	later.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ret = node_open(&n, FI_MSG | FI_SHARED_AV, &aa);
	check(!ret && aa.map_addr, "the creator opens a named AV (%d)", ret);
	fa = ret ? FI_ADDR_NOTAVAIL : get_peer(ssock, &n);
	check(fa == 0 && ((fi_addr_t *)aa.map_addr)[0] == 0,
	      "the server is fi_addr_t 0, in map_addr too");
	if (fa)
		goto out;
	put(ksock, "g", 1);
	get(ksock, &c, 1, 20);		/* the reader opened it */
	ret = fi_av_insert(n.av, &later, 1, &fb, 0, NULL);
	check(ret == 1 && fb == 1, "a second entry after the reader opened");
	put(ksock, "m", 1);
	get(ksock, &c, 1, 30);		/* the reader is done */
	get(ssock, &c, 1, 30);
	node_close(&n);
	check(!shm_exists(), "the segment goes with the creator");
	return;
out:
	node_close(&n);
}

/* FI_READ opener: the creator's fi_addr_t are ours. */
static void sav_reader(int psock)
{
	struct fi_av_attr aa = { .type = FI_AV_MAP, .name = av_name,
				 .flags = FI_READ };
	struct sockaddr_in sin = { 0 };
	static char msg[] = "from the reader";
	struct node n = { 0 };
	size_t len = sizeof(sin);
	fi_addr_t *map;
	char c;
	int ret;

	if (get(psock, &c, 1, 30))
		return;
	ret = node_open(&n, FI_MSG | FI_SHARED_AV, &aa);
	map = aa.map_addr;
	check(!ret && map && map[0] == 0,
	      "FI_READ opens it; map_addr[0] is the creator's 0 (%d)", ret);
	put(psock, "o", 1);
	if (ret)
		goto out;
	ret = fi_av_insert(n.av, &sin, 1, NULL, 0, NULL);
	check(ret == -FI_EACCES, "insert into it: -FI_EACCES (%d)", ret);
	get(psock, &c, 1, 30);
	ret = fi_av_lookup(n.av, 1, &sin, &len);
	check(!ret && ntohs(sin.sin_port) == 9 && map[1] == 1,
	      "the creator's later entry is seen (%d, port %d)", ret,
	      ntohs(sin.sin_port));
	ret = (int)fi_send(n.ep, msg, sizeof(msg), NULL, map[0], msg);
	check(!ret && cq_wait1(n.txcq, 20) == msg,
	      "a send to the creator's fi_addr_t completes (%d)", ret);
out:
	put(psock, "d", 1);
	node_close(&n);
}

/* ==== hostile segments ==== */

struct seg_hdr {
	uint64_t magic;
	uint32_t version, family;
	uint64_t cap, count, gen;
};

struct seg_ent {
	uint8_t addr[28];
	uint32_t used;
};

#define SEG_MAGIC 0x3176617077726169ULL	/* "iwarpav1" */
#define SEG_CAP 1024

static size_t seg_size(uint64_t cap)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t map = (sizeof(struct seg_hdr) + cap * sizeof(struct seg_ent) +
		      pg - 1) / pg * pg;

	return map + cap * 8;
}

/* A well-formed segment of one entry: 127.0.0.1:5000. */
static uint8_t *seg_good(size_t *len)
{
	struct seg_hdr h = { SEG_MAGIC, 1, AF_INET, SEG_CAP, 1, 2 };
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(5000) };
	struct seg_ent e = { .used = 1 };
	uint8_t *p;

	*len = seg_size(SEG_CAP);
	p = calloc(1, *len);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	memcpy(e.addr, &sin, sizeof(sin));
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), &e, sizeof(e));
	return p;
}

static int seg_write(const char *name, const void *p, size_t len,
		     mode_t mode)
{
	char path[128];
	struct stat st;
	int fd;

	if (stat("/proc/self/ns/net", &st))
		st.st_ino = 0;
	snprintf(path, sizeof(path), "/iwarp-av.%llu.%s",
		 (unsigned long long)st.st_ino, name);
	shm_unlink(path);
	fd = shm_open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -1;
	if (write(fd, p, len) != (ssize_t)len || fchmod(fd, mode)) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static void seg_unlink(const char *name)
{
	char path[128];
	struct stat st;

	if (stat("/proc/self/ns/net", &st))
		st.st_ino = 0;
	snprintf(path, sizeof(path), "/iwarp-av.%llu.%s",
		 (unsigned long long)st.st_ino, name);
	shm_unlink(path);
}

/* Opens what seg holds FI_READ: the result of fi_av_open. */
static int seg_try(struct node *n, const char *name, const uint8_t *seg,
		   size_t len, mode_t mode)
{
	struct fi_av_attr aa = { .type = FI_AV_MAP, .name = name,
				 .flags = FI_READ };
	struct fid_av *av = NULL;
	int ret;

	if (seg_write(name, seg, len, mode))
		return 1;
	ret = fi_av_open(n->domain, &aa, &av, NULL);
	if (!ret)
		fi_close(&av->fid);
	seg_unlink(name);
	return ret;
}

static void hostile_cases(struct node *n, const char *name)
{
	size_t len;
	uint8_t *g = seg_good(&len), *b = malloc(len);
	struct seg_hdr *h = (struct seg_hdr *)b;
	struct seg_ent *e = (struct seg_ent *)(b + sizeof(*h));
	int ret;

#define SEG_CASE(what, expr, mode, cut, want) do {			\
		memcpy(b, g, len);					\
		expr;							\
		ret = seg_try(n, name, b, cut, mode);			\
		check(ret == (want), "%s: %d", what, ret);		\
	} while (0)
	SEG_CASE("a well-formed segment opens", (void)0, 0600, len, 0);
	SEG_CASE("an empty segment: -FI_EINVAL", (void)0, 0600, 0, -FI_EINVAL);
	SEG_CASE("a truncated header: -FI_EINVAL", (void)0, 0600, 10,
		 -FI_EINVAL);
	SEG_CASE("a wrong magic: -FI_EINVAL", h->magic ^= 1, 0600, len,
		 -FI_EINVAL);
	SEG_CASE("count above cap: -FI_EINVAL", h->count = SEG_CAP + 1, 0600,
		 len, -FI_EINVAL);
	SEG_CASE("a huge cap: -FI_EINVAL", h->cap = 1ULL << 40, 0600, len,
		 -FI_EINVAL);
	SEG_CASE("entries cut short: -FI_EINVAL", (void)0, 0600, len / 4,
		 -FI_EINVAL);
	SEG_CASE("an entry with used = 7: -FI_EINVAL", e->used = 7, 0600, len,
		 -FI_EINVAL);
	SEG_CASE("an entry of another family: -FI_EINVAL",
		 e->addr[0] = AF_INET6, 0600, len, -FI_EINVAL);
	SEG_CASE("another family in the header: -FI_EINVAL",
		 h->family = AF_INET6, 0600, len, -FI_EINVAL);
	SEG_CASE("writable by others: -FI_EACCES", (void)0, 0666, len,
		 -FI_EACCES);
#undef SEG_CASE
	free(g);
	free(b);
}

static void hostile_child(int sock)
{
	struct node n = { 0 };
	char name[64];
	int ret;

	(void)sock;
	snprintf(name, sizeof(name), "test_domfeat.hostile.%d", (int)getpid());
	ret = node_info(&n, FI_MSG | FI_SHARED_AV);
	check(!ret, "a domain for hostile segments (%d)", ret);
	if (!ret)
		hostile_cases(&n, name);
	node_close(&n);
}

/* ==== fi_getinfo ==== */

static int gi(enum fi_ep_type type, uint64_t caps, uint64_t *got)
{
	struct fi_info *h = fi_allocinfo(), *fi = NULL;
	int ret;

	h->fabric_attr->prov_name = strdup("iwarp");
	h->ep_attr->type = type;
	h->caps = caps;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &fi);
	if (!ret && got)
		*got = fi->caps | fi->domain_attr->caps;
	fi_freeinfo(fi);
	fi_freeinfo(h);
	return ret;
}

static void getinfo_child(int sock)
{
	uint64_t got = 0;
	int ret;

	(void)sock;
	ret = gi(FI_EP_RDM, FI_MSG | FI_RMA | FI_SHARED_AV | FI_TRIGGER, &got);
	check(!ret && (got & FI_SHARED_AV) && (got & FI_TRIGGER),
	      "RDM offers FI_SHARED_AV and FI_TRIGGER (%d)", ret);
	check(gi(FI_EP_MSG, FI_MSG | FI_TRIGGER, NULL) == -FI_ENODATA,
	      "MSG does not offer FI_TRIGGER");
	check(gi(FI_EP_MSG, FI_MSG | FI_SHARED_AV, NULL) == -FI_ENODATA,
	      "MSG does not offer FI_SHARED_AV");
	check(gi(FI_EP_DGRAM, FI_MSG | FI_TRIGGER, NULL) == -FI_ENODATA,
	      "DGRAM does not offer FI_TRIGGER");
}

/* ==== the parent ==== */

typedef void (*child_fn)(int sock);

static pid_t spawn(int rep, int sock, int other, child_fn fn)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	if (other >= 0)
		close(other);
	report_fd = rep;
	fn(sock);
	exit(0);
}

static pid_t spawn2(int rep, int s1, int s2, int o1, int o2,
		    void (*fn)(int, int))
{
	pid_t pid = fork();

	if (pid)
		return pid;
	close(o1);
	close(o2);
	report_fd = rep;
	fn(s1, s2);
	exit(0);
}

/* Prints the children's checks until every writer is gone. */
static void relay(int rd)
{
	char buf[8192], *line, *nl;
	size_t have = 0;
	ssize_t k;

	while ((k = read(rd, buf + have, sizeof(buf) - have - 1)) > 0) {
		have += (size_t)k;
		buf[have] = 0;
		line = buf;
		while ((nl = strchr(line, '\n'))) {
			*nl = 0;
			tap_ok(line[0] == '1', "%s", line + 2);
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
	}
}

static void pair(const char *what, child_fn a, child_fn b)
{
	int sv[2], rp[2];
	pid_t pa, pb = -1;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) || pipe(rp))
		return;
	pa = spawn(rp[1], sv[0], sv[1], a);
	if (b)
		pb = spawn(rp[1], sv[1], sv[0], b);
	close(rp[1]);
	close(sv[0]);
	close(sv[1]);
	relay(rp[0]);
	close(rp[0]);
	tap_child(pa, 60, what);
	if (b)
		tap_child(pb, 60, what);
}

static void shared_av(void)
{
	int sp[2], kp[2], rp[2];
	pid_t ps, pp, pk;

	snprintf(av_name, sizeof(av_name), "test_domfeat.%d", (int)getpid());
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sp) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, kp) || pipe(rp))
		return;
	ps = spawn(rp[1], sp[0], sp[1], sav_server);
	pp = spawn2(rp[1], sp[1], kp[0], sp[0], kp[1], sav_creator);
	pk = spawn(rp[1], kp[1], kp[0], sav_reader);
	close(rp[1]);
	close(sp[0]);
	close(sp[1]);
	close(kp[0]);
	close(kp[1]);
	relay(rp[0]);
	close(rp[0]);
	tap_child(ps, 60, "shared AV server");
	tap_child(pp, 60, "shared AV creator");
	tap_child(pk, 60, "shared AV reader");
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	pair("getinfo", getinfo_child, NULL);
	pair("poll set", poll_server, poll_client);
	pair("wait set", waitset_child, NULL);
	pair("triggered ops", trig_server, trig_client);
	shared_av();
	pair("hostile segments", hostile_child, NULL);
	return tap_done();
}
