/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The FI_EP_MSG endpoint of the iwarp provider through the public
 * libfabric API only, over real sockets on lo. Every case runs in two
 * processes: this one is the client, a forked child the server (passive
 * side); the child's checks come back over a pipe and are printed here,
 * so each counts once. Connection management cases live in this file,
 * data transfer cases in msg_data.c, the harness in msg_util.c.
 *
 *   FI_PROVIDER_PATH=<build>/.libs test/test_msg [substring of a case]
 *
 * TEST_MSG_SEED=<n> replays the random offsets and patterns of a run.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/wait.h>

#include "msg_util.h"
#include "tap.h"

static void tap_report(bool ok, const char *text)
{
	tap_ok(ok, "%s", text);
}

static void tap_note(const char *text)
{
	tap_diag("%s", text);
	fflush(stdout);
}

/* ---- CM data: every size in fi_connect and fi_accept */

static uint64_t cm_seed(const struct proc *p, int side, size_t len)
{
	return p->seed ^ ((uint64_t)side << 40) ^ ((uint64_t)len << 8);
}

static size_t cm_getopt(struct fid *fid)
{
	size_t v = 0, len = sizeof(v);

	if (fi_getopt(fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v, &len))
		return 0;
	return v;
}

/* The size a too short option buffer is told it needs; 0 if the call
 * did not answer -FI_ETOOSMALL. */
static size_t cm_getopt_short(struct fid *fid)
{
	size_t v = 0, len = sizeof(v) - 1;

	if (fi_getopt(fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v, &len) !=
	    -FI_ETOOSMALL)
		return 0;
	return len;
}

/* fi_tx/rx_size_left, called as their deprecated inlines do (without
 * the deprecation warning). */
static ssize_t size_left(struct fid_ep *ep, bool tx)
{
	return tx ? ep->ops->tx_size_left(ep) : ep->ops->rx_size_left(ep);
}

/* The first client endpoint also tries the limits. */
static int cm_first_endpoint(struct node *n)
{
	uint8_t big[CM_MAX + 1] = { 0 };
	int ret = cli_endpoint(n);

	if (ret)
		return ret;
	/* fi_tx/rx_size_left are deprecated in fi_endpoint(3): no endpoint
	 * type claims a bound it cannot keep (the base answers for all) */
	check(cm_getopt(&n->ep->fid) == CM_MAX &&
		      cm_getopt_short(&n->ep->fid) == sizeof(size_t) &&
		      size_left(n->ep, true) == -FI_ENOSYS &&
		      size_left(n->ep, false) == -FI_ENOSYS,
	      "fi_getopt(FI_OPT_CM_DATA_SIZE) on an endpoint is %d (%zu); "
	      "a short buffer learns the size it needs (%zu); "
	      "fi_tx/rx_size_left -> -FI_ENOSYS (%zd, %zd)",
	      CM_MAX, cm_getopt(&n->ep->fid), cm_getopt_short(&n->ep->fid),
	      size_left(n->ep, true), size_left(n->ep, false));
	ret = fi_connect(n->ep, n->info->dest_addr, big, sizeof(big));
	check(ret == -FI_EINVAL,
	      "fi_connect with %zu octets of data -> -FI_EINVAL (%d)",
	      sizeof(big), ret);
	return 0;
}

/* What is wrong with the accept data of connection sz, "" if nothing. */
static const char *cm_check_acc(const struct proc *p, struct eq_ev *acc,
				size_t sz)
{
	size_t alen = CM_MAX - sz;

	if (acc->data_len != alen)
		return "FI_CONNECTED data length differs";
	if (pat_diff(acc->u.cm.data, alen, cm_seed(p, 1, alen), 0) !=
	    SIZE_MAX)
		return "FI_CONNECTED data differs";
	return "";
}

static void cm_data_client(struct proc *p)
{
	const char *why = "", *w;
	uint8_t data[CM_MAX];
	struct eq_ev acc;
	struct node n;
	long bad = -1;
	size_t sz;
	int ret;

	ret = node_open(&n, p, NULL);
	if (!check(!ret && ctl_expect(p, CTL_READY, NULL, 10000),
		   "open, and the server listens (%d)", ret))
		goto out;
	for (sz = 0; sz <= CM_MAX; sz++) {
		pat_fill(data, sz, cm_seed(p, 0, sz), 0);
		ret = sz ? 0 : cm_first_endpoint(&n);
		if (!ret)
			ret = cli_connect(&n, data, sz, &acc);
		w = ret ? "connection failed" : cm_check_acc(p, &acc, sz);
		if (*w && bad < 0) {
			bad = (long)sz;
			why = w;
			diag("connection %zu: %s (%zu octets)", sz, w,
			     acc.data_len);
		}
		if (!ctl_expect(p, CTL_NEXT, NULL, WAIT_MS))
			ret = -FI_EIO;
		node_close_ep(&n);
		if (ret)
			break;
	}
	check(bad < 0 && sz > CM_MAX,
	      "FI_CONNECTED carries the fi_accept data, every size 0..%d "
	      "(%s at connection %ld of %zu)", CM_MAX, why, bad, sz);
out:
	node_close(&n);
}

static const char *cm_check_req(const struct node *n, const struct proc *p,
				struct eq_ev *req, size_t sz)
{
	if (req->data_len != sz)
		return "FI_CONNREQ data length differs";
	if (pat_diff(req->u.cm.data, sz, cm_seed(p, 0, sz), 0) != SIZE_MAX)
		return "FI_CONNREQ data differs";
	if (req->u.cm.fid != &n->pep->fid)
		return "FI_CONNREQ fid is not the passive endpoint";
	if (!req->u.cm.info || !req->u.cm.info->handle)
		return "FI_CONNREQ without info->handle";
	return "";
}

static void cm_first_accept(struct node *n)
{
	uint8_t big[CM_MAX + 1] = { 0 };
	int ret;

	check(cm_getopt(&n->pep->fid) == CM_MAX,
	      "fi_getopt(FI_OPT_CM_DATA_SIZE) on the passive endpoint is "
	      "%d (%zu)", CM_MAX, cm_getopt(&n->pep->fid));
	check(cm_getopt(&n->ep->fid) == CM_MAX,
	      "fi_getopt(FI_OPT_CM_DATA_SIZE) on an accepting endpoint is "
	      "%d (%zu)", CM_MAX, cm_getopt(&n->ep->fid));
	ret = fi_accept(n->ep, big, sizeof(big));
	check(ret == -FI_EINVAL,
	      "fi_accept with %zu octets of data -> -FI_EINVAL (%d)",
	      sizeof(big), ret);
}

/* The request's addresses: the listener's, and the peer's, as the
 * accepted endpoint then reports it (the kernel's getpeername). */
static bool cm_req_addrs(struct node *n, const struct fi_info *info,
			 struct sockaddr_in *peer)
{
	struct sockaddr_in me;
	size_t len = sizeof(me);

	if (fi_getname(&n->pep->fid, &me, &len) || len != sizeof(me) ||
	    !info->src_addr || info->src_addrlen != sizeof(me) ||
	    memcmp(info->src_addr, &me, sizeof(me)) || !info->dest_addr ||
	    info->dest_addrlen != sizeof(*peer))
		return false;
	memcpy(peer, info->dest_addr, sizeof(*peer));
	return peer->sin_family == AF_INET && peer->sin_port &&
	       peer->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
}

static bool cm_peer_is(struct node *n, const struct sockaddr_in *peer)
{
	struct sockaddr_in got;
	size_t len = sizeof(got);

	return !fi_getpeer(n->ep, &got, &len) && len == sizeof(got) &&
	       got.sin_port == peer->sin_port &&
	       got.sin_addr.s_addr == peer->sin_addr.s_addr;
}

static void cm_data_server(struct proc *p)
{
	const char *why = "", *w;
	uint8_t data[CM_MAX];
	struct sockaddr_in peer;
	struct eq_ev req;
	struct node n;
	long bad = -1, addr_bad = -1;
	size_t sz;
	int ret;

	ret = node_open(&n, p, NULL);
	if (!check(!ret && ctl_send(p, CTL_READY, 0, 0, 0, 0, 0),
		   "listening (%d)", ret))
		goto out;
	for (sz = 0; sz <= CM_MAX; sz++) {
		ret = srv_connreq(&n, &req, WAIT_MS);
		w = ret ? "no FI_CONNREQ" : cm_check_req(&n, p, &req, sz);
		if (!ret && !cm_req_addrs(&n, req.u.cm.info, &peer) &&
		    addr_bad < 0)
			addr_bad = (long)sz;
		if (!ret)
			ret = srv_endpoint(&n, &req);
		if (!ret && !sz)
			cm_first_accept(&n);
		pat_fill(data, CM_MAX - sz, cm_seed(p, 1, CM_MAX - sz), 0);
		if (!ret)
			ret = srv_accept(&n, data, CM_MAX - sz);
		if (!ret && !cm_peer_is(&n, &peer) && addr_bad < 0)
			addr_bad = (long)sz;
		if (!*w && ret)
			w = "accepting failed";
		if (*w && bad < 0) {
			bad = (long)sz;
			why = w;
			diag("connection %zu: %s (%zu octets)", sz, w,
			     req.data_len);
		}
		ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
		node_close_ep(&n);
		if (ret)
			break;
	}
	check(bad < 0 && sz > CM_MAX,
	      "FI_CONNREQ carries the fi_connect data, every size 0..%d "
	      "(%s at connection %ld of %zu)", CM_MAX, why, bad, sz);
	check(addr_bad < 0 && sz > CM_MAX,
	      "FI_CONNREQ's src_addr is the listener's name and dest_addr "
	      "the peer the accepted endpoint reports, every connection "
	      "(first wrong: %ld)", addr_bad);
out:
	node_close(&n);
}

/* ---- fi_reject with data */

#define REJECT_LEN 100

static void reject_client(struct proc *p)
{
	uint8_t rdata[REJECT_LEN];
	struct fi_eq_err_entry err;
	uint8_t edata[512];
	struct fi_eq_cm_entry ent[2];
	struct node n;
	uint32_t ev;
	uint64_t end;
	ssize_t ret;

	ret = node_open(&n, p, NULL);
	if (!ret && ctl_expect(p, CTL_READY, NULL, 10000))
		ret = cli_endpoint(&n);
	if (!ret)
		ret = fi_connect(n.ep, n.info->dest_addr, "knock", 5);
	if (!check(!ret, "fi_connect (%zd)", ret))
		goto out;
	end = now_ms() + WAIT_MS;
	do {
		ret = fi_eq_read(n.ep_eq, &ev, ent, sizeof(ent), 0);
		if (ret == -FI_EAGAIN)
			sleep_ms(1);
	} while (ret == -FI_EAGAIN && now_ms() < end);
	check(ret == -FI_EAVAIL,
	      "the rejected connect: fi_eq_read -> -FI_EAVAIL (%zd)", ret);
	memset(&err, 0, sizeof(err));
	err.err_data = edata;
	err.err_data_size = sizeof(edata);
	ret = fi_eq_readerr(n.ep_eq, &err, 0);
	check(ret > 0 && err.err == FI_ECONNREFUSED,
	      "fi_eq_readerr: err FI_ECONNREFUSED (%zd, err %d)", ret,
	      err.err);
	check(ret > 0 && err.fid == &n.ep->fid,
	      "the error entry's fid is the endpoint");
	pat_fill(rdata, sizeof(rdata), p->seed ^ 0xeeeeULL, 0);
	check(ret > 0 && err.err_data_size == REJECT_LEN &&
	      err.err_data == edata && !memcmp(edata, rdata, REJECT_LEN),
	      "err_data holds the %d octets of fi_reject data (%zu)",
	      REJECT_LEN, err.err_data_size);
	sleep_ms(100);
	ret = fi_eq_read(n.ep_eq, &ev, ent, sizeof(ent), 0);
	check(ret == -FI_EAGAIN, "nothing follows the rejection (%zd)", ret);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
}

static void reject_server(struct proc *p)
{
	uint8_t rdata[REJECT_LEN], big[CM_MAX + 1] = { 0 };
	struct eq_ev req;
	struct node n;
	struct ctl m;
	int ret;

	ret = node_open(&n, p, NULL);
	if (!ret && !ctl_send(p, CTL_READY, 0, 0, 0, 0, 0))
		ret = -FI_EIO;
	if (!ret)
		ret = srv_connreq(&n, &req, 10000);
	if (!check(!ret, "FI_CONNREQ arrives (%d)", ret))
		goto out;
	ret = fi_reject(n.pep, req.u.cm.info->handle, big, sizeof(big));
	check(ret == -FI_EINVAL,
	      "fi_reject with %zu octets of data -> -FI_EINVAL (%d)",
	      sizeof(big), ret);
	pat_fill(rdata, sizeof(rdata), p->seed ^ 0xeeeeULL, 0);
	ret = fi_reject(n.pep, req.u.cm.info->handle, rdata, sizeof(rdata));
	check(!ret, "fi_reject with %d octets of data (%d)", REJECT_LEN, ret);
	fi_freeinfo(req.u.cm.info);
	ctl_wait_serving(&n, &m, 10000);
out:
	node_close(&n);
}

/* Server: closes the current endpoint, then accepts the next request. */
static int srv_next(struct node *n)
{
	struct eq_ev req;
	int ret;

	node_close_ep(n);
	ret = srv_connreq(n, &req, WAIT_MS);
	if (!ret)
		ret = srv_endpoint(n, &req);
	if (!ret)
		ret = srv_accept(n, NULL, 0);
	return ret;
}

/* ---- fi_shutdown from either side */

/* Waits for FI_SHUTDOWN of the current endpoint. */
static void expect_shutdown(struct node *n, const char *who)
{
	uint64_t t0 = now_ms();
	struct eq_ev e;

	eq_wait(n->ep_eq, &e, WAIT_MS);
	check(e.ret > 0 && e.event == FI_SHUTDOWN &&
	      e.u.cm.fid == &n->ep->fid,
	      "fi_shutdown by the %s -> FI_SHUTDOWN with our fid within "
	      "%d ms (%s after %llu ms)", who, WAIT_MS, eq_ev_str(&e),
	      (unsigned long long)(now_ms() - t0));
}

static void shutdown_client(struct proc *p)
{
	struct node n;
	struct ctl m;
	int ret;

	if (!cli_setup(&n, p, NULL))
		goto out;
	ret = fi_shutdown(n.ep, 0);
	check(!ret, "fi_shutdown (%d)", ret);
	ctl_wait_serving(&n, &m, 2 * WAIT_MS);
	node_close_ep(&n);
	ret = cli_connect(&n, NULL, 0, NULL);
	if (check(!ret, "second connection (%d)", ret))
		expect_shutdown(&n, "server");
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
}

static void shutdown_server(struct proc *p)
{
	struct node n;
	struct ctl m;
	int ret;

	if (!srv_setup(&n, p, NULL))
		goto out;
	expect_shutdown(&n, "client");
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
	ret = srv_next(&n);
	if (!check(!ret, "second connection (%d)", ret))
		goto out;
	ret = fi_shutdown(n.ep, 0);
	check(!ret, "fi_shutdown (%d)", ret);
	ctl_wait_serving(&n, &m, 2 * WAIT_MS);
out:
	node_close(&n);
}

/* ---- the active side's socket comes with fi_enable (as tcp's comes with
 * fi_endpoint): fi_connect does not pay for making it, and an endpoint
 * closed unconnected gives it back */

static void presock_client(struct proc *p)
{
	struct node n;
	int a, b, c, d;
	int ret = node_open(&n, p, NULL);

	if (!ret && !ctl_expect(p, CTL_READY, NULL, 10000))
		ret = -FI_ETIMEDOUT;
	if (!check(!ret, "client open (%d)", ret))
		goto out;
	/* an endpoint enabled and closed without connecting: nothing kept */
	a = tap_fd_count();
	ret = cli_endpoint(&n);
	b = tap_fd_count();
	node_close_ep(&n);
	c = tap_fd_count();
	check(!ret && b > a && c == a, "an endpoint closed unconnected gives "
	      "back every descriptor (%d, then %d, then %d)", a, b, c);
	ret = cli_endpoint(&n);
	b = tap_fd_count();
	if (!ret)
		ret = cli_connect(&n, NULL, 0, NULL);
	d = tap_fd_count();
	check(!ret && d == b, "fi_connect makes no descriptor: the socket "
	      "came with fi_enable (%d before, %d connected; %d)", b, d, ret);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
}

static void presock_server(struct proc *p)
{
	struct node n;
	struct ctl m;

	if (!srv_setup(&n, p, NULL))
		goto out;
	ctl_wait_serving(&n, &m, 2 * WAIT_MS);
out:
	node_close(&n);
}

/* ---- endpoints with nothing to drive (closed by the peer, or made from
 * a request not accepted yet) leave the progress walk until the
 * application gives them work: a server keeping thousands paid for each
 * on every call. Such an endpoint must still accept, connect and move
 * data, and a dead one must refuse work at once. */

#define IDLE_MS		150	/* many rare turns, so the walk drops it */
#define IDLE_LEN	4096

/* Progress for ms (the CQ's and the endpoint's EQ), no control message. */
static void serve_ms(struct node *n, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	struct eq_ev e;

	while (now_ms() < end) {
		cq_drain(n);
		if (n->ep_eq)
			eq_wait(n->ep_eq, &e, 1);
	}
}

static void idle_client(struct proc *p)
{
	char *buf = calloc(1, IDLE_LEN);
	struct comp cp = { 0 };
	struct node n;
	ssize_t ret;

	if (!buf || !cli_setup(&n, p, NULL))
		goto out;
	check(!fi_shutdown(n.ep, 0), "fi_shutdown of the first connection");
	if (!ctl_expect(p, CTL_NEXT, NULL, 2 * WAIT_MS))
		goto out;
	node_close_ep(&n);
	ret = cli_connect(&n, NULL, 0, NULL);
	if (!check(!ret, "the second connection, accepted after its "
		   "endpoint idled %d ms, is up (%zd)", IDLE_MS, ret))
		goto out;
	if (!ctl_expect(p, CTL_NEXT, NULL, 2 * WAIT_MS))
		goto out;
	pat_fill(buf, IDLE_LEN, p->seed ^ 0x1d1e, 0);
	ret = fi_send(n.ep, buf, IDLE_LEN, NULL, 0, buf);
	check(!ret && cq_take(&n, buf, &cp, WAIT_MS) && !cp.err,
	      "a Send over it completes (%zd, err %d)", ret, cp.err);
	memset(buf, 0, IDLE_LEN);
	ret = fi_recv(n.ep, buf, IDLE_LEN, NULL, 0, buf);
	check(!ret && cq_take(&n, buf, &cp, WAIT_MS) && !cp.err &&
	      cp.len == IDLE_LEN &&
	      pat_diff(buf, IDLE_LEN, p->seed ^ 0x1d1f, 0) == SIZE_MAX,
	      "the server's answer arrives intact (%zd, err %d, len %zu)",
	      ret, cp.err, cp.len);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
	free(buf);
}

static void idle_server(struct proc *p)
{
	char *buf = calloc(1, IDLE_LEN), tiny[8];
	struct fid_ep *dead = NULL;
	struct fid_eq *dead_eq = NULL;
	struct comp cp = { 0 };
	struct eq_ev req;
	struct node n;
	struct ctl m;
	ssize_t r1, r2;
	int ret;

	if (!buf || !srv_setup(&n, p, NULL))
		goto out;
	expect_shutdown(&n, "client");
	/* the dead endpoint stays open, as a server's do */
	serve_ms(&n, IDLE_MS);
	r1 = fi_recv(n.ep, tiny, sizeof(tiny), NULL, 0, tiny);
	r2 = fi_send(n.ep, tiny, sizeof(tiny), NULL, 0, tiny);
	check(r1 < 0 && r1 != -FI_EAGAIN && r2 < 0 && r2 != -FI_EAGAIN,
	      "after %d ms of progress a closed endpoint refuses a receive "
	      "and a Send at once (%zd, %zd)", IDLE_MS, r1, r2);
	check(!fi_shutdown(n.ep, 0), "and takes fi_shutdown");
	dead = n.ep;
	dead_eq = n.ep_eq;
	n.ep = NULL;
	n.ep_eq = NULL;
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	ret = srv_connreq(&n, &req, WAIT_MS);
	if (!ret)
		ret = srv_endpoint(&n, &req);
	if (!check(!ret, "the second request's endpoint (%d)", ret))
		goto out;
	serve_ms(&n, IDLE_MS);	/* unaccepted: no socket of its own */
	ret = srv_accept(&n, NULL, 0);
	if (!check(!ret, "fi_accept after %d ms idle: FI_CONNECTED (%d)",
		   IDLE_MS, ret))
		goto out;
	ret = (int)fi_recv(n.ep, buf, IDLE_LEN, NULL, 0, buf);
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	check(!ret && cq_take(&n, buf, &cp, WAIT_MS) && !cp.err &&
	      cp.len == IDLE_LEN &&
	      pat_diff(buf, IDLE_LEN, p->seed ^ 0x1d1e, 0) == SIZE_MAX,
	      "the client's message arrives intact (%d, err %d, len %zu)",
	      ret, cp.err, cp.len);
	pat_fill(buf, IDLE_LEN, p->seed ^ 0x1d1f, 0);
	ret = (int)POST_RETRY(&n, WAIT_MS,
			      fi_send(n.ep, buf, IDLE_LEN, NULL, 0, buf));
	check(!ret && cq_take(&n, buf, &cp, WAIT_MS) && !cp.err,
	      "the answer's Send completes (%d, err %d)", ret, cp.err);
	ctl_wait_serving(&n, &m, 2 * WAIT_MS);
out:
	if (dead)
		check(!fi_close(&dead->fid), "the closed endpoint closes");
	if (dead_eq)
		fi_close(&dead_eq->fid);
	node_close(&n);
	free(buf);
}

/* ---- an fd wait across connections: the CQ's fd (FI_GETWAIT), in the
 * application's epoll set, must wake for a new connection whose socket
 * took the closed one's descriptor number. The provider's set keeps
 * registrations that did not change; a closed descriptor makes it
 * register everything again, or the new socket would be missed. */

#define REUSE_LATER_MS	100

static bool is_socket_fd(int fd)
{
	char name[16], link[64];

	snprintf(name, sizeof(name), "%d", fd);
	tap_fd_link(name, link, sizeof(link));
	return !strncmp(link, "socket:", 7);
}

/* The lowest socket descriptor not in `old` (-1: none). */
static int new_socket_fd(const bool *old, int max)
{
	int fd;

	for (fd = 0; fd < max; fd++)
		if (!(old && old[fd]) && is_socket_fd(fd))
			return fd;
	return -1;
}

static void socket_fds(bool *out, int max)
{
	int fd;

	for (fd = 0; fd < max; fd++)
		out[fd] = is_socket_fd(fd);
}

/* The server sends `what` REUSE_LATER_MS from now; we sleep in
 * epoll_wait on the CQ's fd, which must wake for it. */
static void reuse_round(struct node *n, struct proc *p, int epfd,
			const char *what)
{
	struct epoll_event ev;
	struct fid *f = &n->cq->fid;
	char buf[16] = "";
	struct comp cp = { 0 };
	uint64_t t0;
	int tw, woke = 0;
	ssize_t r;

	r = fi_recv(n->ep, buf, sizeof(buf), NULL, 0, buf);
	ctl_send(p, CTL_SEND_LATER, REUSE_LATER_MS, 0, 0, 0, 0);
	t0 = now_ms();
	tw = fi_trywait(n->fabric, &f, 1);
	if (!tw)
		woke = epoll_wait(epfd, &ev, 1, 2 * WAIT_MS);
	t0 = now_ms() - t0;
	check(!r && !tw && woke == 1 && t0 < WAIT_MS,
	      "%s: fi_trywait says sleep, and epoll_wait on the CQ's fd wakes "
	      "for the message sent %d ms later (post %zd, trywait %d, "
	      "woke %d after %llu ms)", what, REUSE_LATER_MS, r, tw, woke,
	      (unsigned long long)t0);
	check(cq_take(n, buf, &cp, WAIT_MS) && !cp.err && !strcmp(buf, what),
	      "%s: the message arrives (err %d, '%s')", what, cp.err, buf);
}

#define REUSE_FDS	1024

static void reuse_client(struct proc *p)
{
	struct fi_cq_attr cqa = {
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_FD,
	};
	struct epoll_event ev = { .events = EPOLLIN };
	bool *before = calloc(REUSE_FDS, sizeof(bool));
	int ret, fd = -1, epfd = -1, first, second;
	struct node n;

	ret = before ? node_open(&n, p, &cqa) : -FI_ENOMEM;
	if (!ret && !ctl_expect(p, CTL_READY, NULL, 10000))
		ret = -FI_ETIMEDOUT;
	if (!check(!ret, "client open (%d)", ret))
		goto out;
	socket_fds(before, REUSE_FDS);
	ret = cli_connect(&n, NULL, 0, NULL);
	first = new_socket_fd(before, REUSE_FDS);
	if (!check(!ret && first >= 0, "first connection (%d, socket %d)",
		   ret, first))
		goto out;
	ret = fi_control(&n.cq->fid, FI_GETWAIT, &fd);
	epfd = epoll_create1(0);
	ev.data.fd = fd;
	if (!check(!ret && fd >= 0 && epfd >= 0 &&
		   !epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev),
		   "the CQ's fd (FI_GETWAIT %d) goes into an epoll set", ret))
		goto out;
	reuse_round(&n, p, epfd, "one");
	node_close_ep(&n);
	socket_fds(before, REUSE_FDS);
	ret = cli_connect(&n, NULL, 0, NULL);
	second = new_socket_fd(before, REUSE_FDS);
	if (second < 0)	/* it took a number no socket had */
		second = new_socket_fd(NULL, REUSE_FDS);
	if (!check(!ret, "second connection (%d)", ret))
		goto out;
	diag("client: the second connection's socket is %d, the first's "
	     "was %d", second, first);
	reuse_round(&n, p, epfd, "two");
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	if (epfd >= 0)
		close(epfd);
	node_close(&n);
	free(before);
}

static void reuse_server(struct proc *p)
{
	char one[] = "one", two[] = "two";
	struct comp cp;
	struct node n;
	struct ctl m;
	int round, ret;

	if (!srv_setup(&n, p, NULL))
		goto out;
	for (round = 0; round < 2; round++) {
		char *msg = round ? two : one;

		if (round) {
			ret = srv_next(&n);
			if (!check(!ret, "second connection accepted (%d)",
				   ret))
				goto out;
		}
		if (!ctl_wait_serving(&n, &m, 2 * WAIT_MS) ||
		    m.op != CTL_SEND_LATER)
			goto out;
		sleep_ms((int)m.v[0]);
		ret = (int)POST_RETRY(&n, WAIT_MS, fi_send(n.ep, msg,
			sizeof(one), NULL, 0, msg));
		check(!ret && cq_take(&n, msg, &cp, WAIT_MS) && !cp.err,
		      "'%s' sent (%d)", msg, ret);
	}
	ctl_wait_serving(&n, &m, 2 * WAIT_MS);
out:
	node_close(&n);
}

/* ---- one EQ for the passive endpoint and the endpoints it accepts, the
 * client connecting them one after another (fabtests' fi_multi_ep): the
 * client's RTR for one and its Request for the next can wake the server
 * together; FI_CONNECTED of the first must still come first. Two
 * processes burn the CPUs meanwhile, which is what lets them coincide. */

#define ORDER_ROUNDS	15
#define ORDER_EPS	3

static pid_t order_burner(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		alarm(30);	/* bounded even if nobody kills it */
		for (;;)
			;
	}
	return pid;
}

static void order_client(struct proc *p)
{
	struct fid_ep *eps[ORDER_EPS];
	struct fid_eq *eqs[ORDER_EPS];
	pid_t burn[2] = { order_burner(), order_burner() };
	int r, i, k, ret, up = 0;
	struct node n;
	struct eq_ev e;

	ret = node_open(&n, p, NULL);
	if (!ret && !ctl_expect(p, CTL_READY, NULL, 10000))
		ret = -FI_ETIMEDOUT;
	for (r = 0; !ret && r < ORDER_ROUNDS; r++) {
		for (i = 0; !ret && i < ORDER_EPS; i++) {
			ret = cli_connect(&n, NULL, 0, &e);
			eps[i] = n.ep;
			eqs[i] = n.ep_eq;
			n.ep = NULL;
			n.ep_eq = NULL;
			up += !ret;
		}
		/* the server closes its side first: its EQ stays quiet */
		ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
		if (!ctl_expect(p, CTL_NEXT, NULL, 2 * WAIT_MS))
			ret = -FI_ETIMEDOUT;
		for (k = 0; k < i; k++) {
			if (eps[k])
				fi_close(&eps[k]->fid);
			if (eqs[k])
				fi_close(&eqs[k]->fid);
		}
	}
	for (i = 0; i < 2; i++) {
		if (burn[i] > 0) {
			kill(burn[i], SIGKILL);
			waitpid(burn[i], NULL, 0);
		}
	}
	check(up == ORDER_ROUNDS * ORDER_EPS, "one EQ: %d of %d endpoints "
	      "connected one after another (%d)", up,
	      ORDER_ROUNDS * ORDER_EPS, ret);
	node_close(&n);
}

static void order_server(struct proc *p)
{
	struct fid_ep *eps[ORDER_EPS] = { 0 };
	int r, i, k, ret, bad = 0, done = 0;
	char what[160] = "";
	struct eq_ev e;
	struct node n;

	ret = node_open(&n, p, NULL);
	if (!ret && !ctl_send(p, CTL_READY, 0, 0, 0, 0, 0))
		ret = -FI_EIO;
	for (r = 0; !ret && r < ORDER_ROUNDS; r++) {
		for (i = 0; !ret && i < ORDER_EPS; i++) {
			ret = srv_connreq(&n, &e, WAIT_MS);
			if (!ret) {
				ret = fi_endpoint(n.domain, e.u.cm.info,
						  &eps[i], NULL);
				fi_freeinfo(e.u.cm.info);
			}
			if (!ret)
				ret = fi_ep_bind(eps[i], &n.eq->fid, 0);
			if (!ret)
				ret = fi_ep_bind(eps[i], &n.cq->fid,
						 FI_TRANSMIT | FI_RECV);
			if (!ret)
				ret = fi_enable(eps[i]);
			if (!ret)
				ret = fi_accept(eps[i], NULL, 0);
			if (ret)
				break;
			eq_wait(n.eq, &e, WAIT_MS);
			if (e.ret > 0 && e.event == FI_CONNECTED &&
			    e.u.cm.fid == &eps[i]->fid) {
				done++;
				continue;
			}
			if (!bad++)
				snprintf(what, sizeof(what), "%s",
					 eq_ev_str(&e));
			if (e.ret > 0 && e.event == FI_CONNREQ)
				fi_freeinfo(e.u.cm.info);
			ret = -FI_EOTHER;
		}
		ctl_expect(p, CTL_NEXT, NULL, 2 * WAIT_MS);
		for (k = 0; k < ORDER_EPS; k++) {
			if (eps[k])
				fi_close(&eps[k]->fid);
			eps[k] = NULL;
		}
		ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	}
	check(!bad && done == ORDER_ROUNDS * ORDER_EPS, "one EQ: each of %d "
	      "endpoints' FI_CONNECTED came before the next FI_CONNREQ (%d "
	      "in order; the first out of order: %s)",
	      ORDER_ROUNDS * ORDER_EPS, done, bad ? what : "none");
	node_close(&n);
}

/* ---- fi_close right after a Send completed */

#define CAS_LEN	(1u << 20)	/* fits in the socket buffers */

/* A Send completes once TCP has it; closing then must not drop it. */
static void close_after_send_client(struct proc *p)
{
	char *buf = malloc(CAS_LEN);
	struct comp cp;
	struct node n;
	ssize_t ret;

	if (!buf || !cli_setup(&n, p, NULL))
		goto out;
	if (!ctl_expect(p, CTL_NEXT, NULL, WAIT_MS))
		goto out;
	pat_fill(buf, CAS_LEN, p->seed ^ 0xca5, 0);
	ret = fi_send(n.ep, buf, CAS_LEN, NULL, 0, buf);
	check(!ret && cq_take(&n, buf, &cp, WAIT_MS) && !cp.err,
	      "a 1 MiB Send completes (%zd)", ret);
	check(!node_close_ep(&n), "fi_close at once");
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	ctl_expect(p, CTL_DONE, NULL, WAIT_MS);
out:
	node_close(&n);
	free(buf);
}

static void close_after_send_server(struct proc *p)
{
	char *buf = malloc(2 * (size_t)CAS_LEN);
	struct comp c1 = { 0 }, c2 = { 0 };
	struct node n;
	bool got1, got2;
	ssize_t r1 = -1, r2 = -1;

	if (!buf || !srv_setup(&n, p, NULL))
		goto out;
	memset(buf, 0, 2 * (size_t)CAS_LEN);
	r1 = fi_recv(n.ep, buf, CAS_LEN, NULL, 0, buf);
	r2 = fi_recv(n.ep, buf + CAS_LEN, CAS_LEN, NULL, 0, buf + CAS_LEN);
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	/* no progress here until the client has closed: the message, the
	 * close and the flush then all come in one go */
	ctl_expect(p, CTL_NEXT, NULL, WAIT_MS);
	expect_shutdown(&n, "client's fi_close");
	/* the message's completion is queued now; an error behind it must
	 * not overtake it (whether the flush or this cancel makes it) */
	fi_cancel(&n.ep->fid, buf + CAS_LEN);
	{
		struct eq_ev e;	/* progress without reading the CQ */

		eq_wait(n.ep_eq, &e, 100);
	}
	got1 = cq_take_any(&n, &c1, WAIT_MS);
	got2 = cq_take_any(&n, &c2, WAIT_MS);
	check(!r1 && !r2 && got1 && c1.ctx == buf && !c1.err &&
	      c1.len == CAS_LEN &&
	      pat_diff(buf, CAS_LEN, p->seed ^ 0xca5, 0) == SIZE_MAX,
	      "the message arrives whole and completes first (ctx %s, "
	      "err %d, len %zu)", c1.ctx == buf ? "first" : "other", c1.err,
	      c1.len);
	check(got2 && c2.ctx == buf + CAS_LEN && c2.err == FI_ECANCELED,
	      "then the other receive is flushed (err %d)", c2.err);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
	free(buf);
}

/* ---- fi_close right after a receive, a transmit-complete Send */

/*
 * The sender's FI_TRANSMIT_COMPLETE Send waits for the answer to a
 * zero-length Read sent behind it. The receiver takes the message, makes
 * no provider call for 20 ms (the Read Request is in its socket by then)
 * and closes: the close must answer it, or the sender's Send fails.
 */
#define CAR_ROUNDS 10

static void close_after_recv_client(struct proc *p)
{
	char buf[64];
	struct iovec iov = { buf, sizeof(buf) };
	struct fi_msg m = { .msg_iov = &iov, .iov_count = 1, .context = buf };
	struct comp cp = { 0 };
	struct node n;
	ssize_t ret;
	int i;

	if (!cli_setup(&n, p, NULL))
		goto out;
	for (i = 0; i < CAR_ROUNDS; i++) {
		if (!ctl_expect(p, CTL_NEXT, NULL, WAIT_MS))
			goto out;
		memset(buf, 'a' + i, sizeof(buf));
		ret = fi_sendmsg(n.ep, &m, FI_TRANSMIT_COMPLETE);
		check(!ret && cq_take(&n, buf, &cp, WAIT_MS) && !cp.err,
		      "send %d: completes although the receiver closed right "
		      "after it (%zd, err %d)", i, ret, cp.err);
		ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
		node_close(&n);
		if (i < CAR_ROUNDS - 1 && !cli_setup(&n, p, NULL))
			goto out;
	}
	ctl_expect(p, CTL_DONE, NULL, WAIT_MS);
	return;
out:
	node_close(&n);
}

/* Busy-polls the CQ, as fabtests do: the message is often taken before
 * the Read Request behind it is in the socket. */
static bool spin_recv(struct node *n, void *ctx)
{
	uint64_t end = now_ms() + WAIT_MS;
	struct fi_cq_msg_entry e;

	while (now_ms() < end) {
		ssize_t r = fi_cq_read(n->cq, &e, 1);

		if (r == 1)
			return e.op_context == ctx;
		if (r != -FI_EAGAIN)
			return false;
	}
	return false;
}

static void close_after_recv_server(struct proc *p)
{
	struct timespec nap = { 0, 20 * 1000000L };
	char buf[64];
	struct node n;
	int i;

	for (i = 0; i < CAR_ROUNDS; i++) {
		if (!srv_setup(&n, p, NULL))
			return;
		check(!fi_recv(n.ep, buf, sizeof(buf), NULL, 0, buf) &&
		      (ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0), true) &&
		      spin_recv(&n, buf), "receive %d arrives", i);
		nanosleep(&nap, NULL);
		check(!node_close_ep(&n), "fi_close %d at once", i);
		ctl_expect(p, CTL_NEXT, NULL, WAIT_MS);
		node_close(&n);
	}
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
}

/* ---- a read right after one that emptied the CQ */

/*
 * Consumers such as Open MPI's mtl ofi read until -FI_EAGAIN: the read
 * after the one that took the last entry answers -FI_EAGAIN without a
 * progress pass (which would only find the socket empty), the next one
 * progresses. The second message is in the socket before either read.
 */
static void drain_client(struct proc *p)
{
	char a[16] = "first", b[16] = "second", c[16];
	struct comp cp = { 0 };
	struct node n;

	if (!cli_setup(&n, p, NULL))
		goto out;
	if (!ctl_expect(p, CTL_NEXT, NULL, WAIT_MS))
		goto out;
	check(!fi_send(n.ep, a, sizeof(a), NULL, 0, a) &&
	      cq_take(&n, a, &cp, WAIT_MS) && !cp.err, "first Send");
	if (!ctl_expect(p, CTL_NEXT, NULL, WAIT_MS))
		goto out;
	check(!fi_send(n.ep, b, sizeof(b), NULL, 0, b) &&
	      cq_take(&n, b, &cp, WAIT_MS) && !cp.err, "second Send");
	check(!fi_recv(n.ep, c, sizeof(c), NULL, 0, c), "receive for a third");
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	ctl_expect(p, CTL_DONE, NULL, WAIT_MS);
out:
	node_close(&n);
}

static void drain_server(struct proc *p)
{
	struct timespec nap = { 0, 20 * 1000000L };
	char a[16], b[16], c[16] = "third";
	struct fi_cq_msg_entry e;
	struct node n;
	ssize_t r1, r2;

	if (!srv_setup(&n, p, NULL))
		return;
	check(!fi_recv(n.ep, a, sizeof(a), NULL, 0, a) &&
	      !fi_recv(n.ep, b, sizeof(b), NULL, 0, b), "two receives posted");
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	check(spin_recv(&n, a) && !strcmp(a, "first"),
	      "first message taken by a read loop");
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	ctl_expect(p, CTL_NEXT, NULL, WAIT_MS);
	nanosleep(&nap, NULL);	/* the second is in our socket */
	r1 = fi_cq_read(n.cq, &e, 1);
	r2 = fi_cq_read(n.cq, &e, 1);
	check(r1 == -FI_EAGAIN && r2 == 1 && e.op_context == b &&
	      !strcmp(b, "second"),
	      "the read after the one that emptied the CQ says -FI_EAGAIN "
	      "without progress, the next one takes the waiting message "
	      "(%zd, %zd)", r1, r2);
	/* an entry written after the emptying read is not skipped */
	r1 = fi_send(n.ep, c, sizeof(c), NULL, 0, c);
	r2 = fi_cq_read(n.cq, &e, 1);
	check(r1 == 0 && r2 == 1 && e.op_context == c,
	      "a Send completed right after the CQ was emptied is read at "
	      "once (%zd, %zd)", r1, r2);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
	node_close(&n);
}

/* ---- 100 connections through one passive endpoint */

#define NCONN	100
#define BATCH	10

struct mconn {
	struct fid_ep *ep;
	bool connected, sent, replied, shut;
	char rbuf[32];
	char sbuf[32];
};

struct many {
	struct node n;
	struct mconn c[NCONN];
	int connected, exchanged, stray;
};

static struct mconn *many_by_fid(struct many *m, struct fid *fid)
{
	int i;

	for (i = 0; i < NCONN; i++)
		if (m->c[i].ep && &m->c[i].ep->fid == fid)
			return &m->c[i];
	return NULL;
}

/* The connection whose rbuf or sbuf is ctx; *rx tells which. */
static struct mconn *many_by_ctx(struct many *m, void *ctx, bool *rx)
{
	int i;

	for (i = 0; i < NCONN; i++) {
		*rx = ctx == m->c[i].rbuf;
		if (*rx || ctx == m->c[i].sbuf)
			return &m->c[i];
	}
	return NULL;
}

/* Endpoint on the shared EQ and CQ, a receive posted, enabled. */
static int many_ep(struct many *m, struct mconn *c, struct fi_info *info)
{
	struct node *n = &m->n;
	int ret;

	ret = fi_endpoint(n->domain, info, &c->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(c->ep, &(n->p->server ? n->eq : n->ep_eq)->fid,
				 0);
	if (!ret)
		ret = fi_ep_bind(c->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(c->ep);
	if (!ret)
		ret = fi_recv(c->ep, c->rbuf, sizeof(c->rbuf), NULL, 0,
			      c->rbuf);
	if (ret)
		diag("endpoint %td: %d", c - m->c, ret);
	return ret;
}

static void many_connect_batch(struct many *m, int first)
{
	struct node *n = &m->n;
	uint64_t end = now_ms() + WAIT_MS;
	int i, want = 0, got = 0;
	struct mconn *c;
	struct eq_ev e;

	for (i = first; i < first + BATCH; i++) {
		uint32_t idx = (uint32_t)i;

		if (many_ep(m, &m->c[i], n->info) ||
		    fi_connect(m->c[i].ep, n->info->dest_addr, &idx,
			       sizeof(idx)))
			continue;
		want++;
	}
	while (got < want && now_ms() < end) {
		eq_wait(n->ep_eq, &e, (int)(end - now_ms()));
		c = e.ret > 0 && e.event == FI_CONNECTED ?
			    many_by_fid(m, e.u.cm.fid) : NULL;
		if (c && !c->connected) {
			c->connected = true;
			got++;
		} else if (e.ret != -FI_EAGAIN) {
			m->stray++;
			diag("unexpected EQ entry: %s", eq_ev_str(&e));
		}
	}
	m->connected += got;
}

static void many_complete(struct many *m, struct comp *cp, bool client)
{
	struct mconn *c;
	bool rx;
	char want[32];

	c = many_by_ctx(m, cp->ctx, &rx);
	if (!c || cp->err) {
		m->stray++;
		diag("unexpected completion %p err %d", cp->ctx, cp->err);
		return;
	}
	if (!rx) {
		c->sent = true;
		m->exchanged += client ? 0 : 1;
		return;
	}
	snprintf(want, sizeof(want), "%s %td", client ? "reply" : "hello",
		 c - m->c);
	if (strcmp(c->rbuf, want) || cp->len != strlen(want) + 1) {
		m->stray++;
		diag("connection %td received '%.31s'", c - m->c, c->rbuf);
		return;
	}
	if (client) {
		c->replied = true;
		m->exchanged++;
		return;
	}
	snprintf(c->sbuf, sizeof(c->sbuf), "reply %td", c - m->c);
	if (POST_RETRY(&m->n, WAIT_MS, fi_send(c->ep, c->sbuf,
					       strlen(c->sbuf) + 1, NULL, 0,
					       c->sbuf)))
		m->stray++;
}

/* Drains the CQ into many_complete until `done` or the deadline. */
static void many_pump(struct many *m, bool client, int target, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	struct comp cp;

	while (m->exchanged < target && now_ms() < end) {
		while (cq_take_any(&m->n, &cp, 0))
			many_complete(m, &cp, client);
		node_wait(&m->n, 2, false);
	}
}

static void many_exchange_batch(struct many *m, int first)
{
	struct mconn *c;
	int i, target = m->exchanged;

	for (i = first; i < first + BATCH; i++) {
		c = &m->c[i];
		if (!c->connected)
			continue;
		snprintf(c->sbuf, sizeof(c->sbuf), "hello %d", i);
		if (!POST_RETRY(&m->n, WAIT_MS,
				fi_send(c->ep, c->sbuf, strlen(c->sbuf) + 1,
					NULL, 0, c->sbuf)))
			target++;
	}
	many_pump(m, true, target, WAIT_MS);
}

static int many_close_all(struct many *m)
{
	int i, bad = 0;

	for (i = 0; i < NCONN; i++) {
		if (m->c[i].ep && fi_close(&m->c[i].ep->fid))
			bad++;
		m->c[i].ep = NULL;
	}
	return bad;
}

static void many_client(struct proc *p)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	struct many *m = calloc(1, sizeof(*m));
	struct node *n = &m->n;
	int i, bad = 0, ret;
	struct ctl msg;

	if (!check(m != NULL, "memory"))
		return;
	ret = node_open(n, p, NULL);
	if (!ret)
		ret = fi_eq_open(n->fabric, &eqa, &n->ep_eq, NULL);
	if (!check(!ret && ctl_expect(p, CTL_READY, NULL, 10000),
		   "open, and the server listens (%d)", ret))
		goto out;
	for (i = 0; i < NCONN; i += BATCH) {
		many_connect_batch(m, i);
		many_exchange_batch(m, i);
	}
	check(m->connected == NCONN, "%d connections through one passive "
	      "endpoint (%d connected)", NCONN, m->connected);
	check(m->exchanged == NCONN && !m->stray,
	      "a message and its reply on each (%d, %d unexpected)",
	      m->exchanged, m->stray);
	for (i = 0; i < NCONN; i++)
		if (m->c[i].ep && fi_shutdown(m->c[i].ep, 0))
			bad++;
	check(!bad, "fi_shutdown on all of them (%d failed)", bad);
	ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
	ctl_wait_serving(n, &msg, 3 * WAIT_MS);
	bad = many_close_all(m);
	check(!bad, "fi_close of all of them (%d failed)", bad);
out:
	many_close_all(m);
	node_close(n);
	free(m);
}

static void many_connreq(struct many *m, struct eq_ev *e)
{
	struct fi_info *info = e->u.cm.info;
	struct mconn *c = NULL;
	uint32_t idx;

	if (e->data_len == sizeof(idx)) {
		memcpy(&idx, e->u.cm.data, sizeof(idx));
		c = idx < NCONN && !m->c[idx].ep ? &m->c[idx] : NULL;
	}
	if (!c || many_ep(m, c, info) || fi_accept(c->ep, NULL, 0)) {
		m->stray++;
		diag("connection request %zu octets: not accepted",
		     e->data_len);
	}
	fi_freeinfo(info);
}

/* One EQ entry of the accepting loop; false if there was none. */
static bool many_event(struct many *m)
{
	struct mconn *c;
	struct eq_ev e;

	memset(&e, 0, sizeof(e));
	e.ret = fi_eq_read(m->n.eq, &e.event, &e.u, sizeof(e.u), 0);
	if (e.ret == -FI_EAGAIN)
		return false;
	if (e.ret >= (ssize_t)sizeof(struct fi_eq_cm_entry))
		e.data_len = (size_t)e.ret - sizeof(struct fi_eq_cm_entry);
	if (e.ret > 0 && e.event == FI_CONNREQ) {
		many_connreq(m, &e);
		return true;
	}
	c = e.ret > 0 && e.event == FI_CONNECTED ?
		    many_by_fid(m, e.u.cm.fid) : NULL;
	if (c && !c->connected) {
		c->connected = true;
		m->connected++;
		return true;
	}
	if (e.ret == -FI_EAVAIL)
		fi_eq_readerr(m->n.eq, &e.err, 0);
	m->stray++;
	diag("unexpected EQ entry: %s", eq_ev_str(&e));
	return true;
}

static void many_accept_all(struct many *m)
{
	uint64_t end = now_ms() + 30000;
	struct comp cp;
	bool busy;

	while ((m->connected < NCONN || m->exchanged < NCONN) &&
	       now_ms() < end) {
		busy = many_event(m);
		while (cq_take_any(&m->n, &cp, 0)) {
			many_complete(m, &cp, false);
			busy = true;
		}
		if (!busy)
			node_wait(&m->n, 2, false);
	}
}

static void many_wait_shutdowns(struct many *m)
{
	uint64_t end = now_ms() + 2 * WAIT_MS;
	struct mconn *c;
	struct eq_ev e;
	int shut = 0;

	while (shut < m->connected && now_ms() < end) {
		eq_wait(m->n.eq, &e, (int)(end - now_ms()));
		c = e.ret > 0 && e.event == FI_SHUTDOWN ?
			    many_by_fid(m, e.u.cm.fid) : NULL;
		if (c && !c->shut) {
			c->shut = true;
			shut++;
		} else if (e.ret != -FI_EAGAIN) {
			diag("unexpected EQ entry: %s", eq_ev_str(&e));
		}
	}
	check(shut == NCONN, "FI_SHUTDOWN for each of the %d connections "
	      "(%d)", NCONN, shut);
}

static void many_server(struct proc *p)
{
	struct many *m = calloc(1, sizeof(*m));
	struct ctl msg;
	int ret;

	if (!check(m != NULL, "memory"))
		return;
	ret = node_open(&m->n, p, NULL);
	if (!check(!ret && ctl_send(p, CTL_READY, 0, 0, 0, 0, 0),
		   "listening (%d)", ret))
		goto out;
	many_accept_all(m);
	check(m->connected == NCONN, "%d connections accepted (%d)", NCONN,
	      m->connected);
	check(m->exchanged == NCONN && !m->stray,
	      "a message answered on each (%d, %d unexpected)", m->exchanged,
	      m->stray);
	if (ctl_wait_serving(&m->n, &msg, 3 * WAIT_MS))
		many_wait_shutdowns(m);
	ret = many_close_all(m);
	check(!ret, "fi_close of all of them (%d failed)", ret);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	many_close_all(m);
	node_close(&m->n);
	free(m);
}

/* ---- the server killed while the client streams */

#define KILL_RECVS	16
#define KILL_SENDS	64
#define KILL_SEND_LEN	16384
#define KILL_CHUNK	(256 * 1024)
#define KILL_REGION	(16 * KILL_CHUNK)
#define KILL_MAX_OPS	65536
#define KILL_WINDOW	64
#define KILL_AFTER_MS	400	/* streaming before the kill */
#define KILL_POST_MS	300	/* posting on after it */

struct stream {
	struct node n;
	uint8_t done[KILL_MAX_OPS];	/* completions per context */
	char rbuf[KILL_RECVS][64];
	char *buf;
	uint64_t key, base;
	size_t posted, completed, sends, outstanding;
	size_t dup, unknown, recv_err, errors, before_kill;
	bool killed, dead;
	uint64_t t_kill;
};

static void stream_account(struct stream *s)
{
	struct comp cp;
	size_t i;

	while (cq_take_any(&s->n, &cp, 0)) {
		i = (size_t)((uint8_t *)cp.ctx - s->done);
		if (i >= KILL_MAX_OPS) {
			s->unknown++;
			continue;
		}
		if (s->done[i]++)
			s->dup++;
		s->completed++;
		s->outstanding--;
		s->errors += cp.err != 0;
		if (i < KILL_RECVS && cp.err)
			s->recv_err++;
		if (!s->killed && !cp.err)
			s->before_kill++;
	}
}

/* One more send or write; false once posting is refused. */
static bool stream_post(struct stream *s)
{
	void *ctx = &s->done[s->posted];
	ssize_t ret;

	if (s->outstanding >= KILL_WINDOW || s->posted >= KILL_MAX_OPS)
		return true;
	if (s->posted % 8 == 0 && s->sends < KILL_SENDS)
		ret = fi_send(s->n.ep, s->buf, KILL_SEND_LEN, NULL, 0, ctx);
	else
		ret = fi_write(s->n.ep, s->buf, KILL_CHUNK, NULL, 0,
			       rma_addr(&s->n, s->base,
					(s->posted % 16) * KILL_CHUNK),
			       s->key, ctx);
	if (ret == -FI_EAGAIN)
		return true;
	if (ret) {
		if (!s->killed)
			diag("posting failed before the kill: %zd", ret);
		return false;
	}
	s->sends += s->posted % 8 == 0 && s->sends < KILL_SENDS;
	s->posted++;
	s->outstanding++;
	return true;
}

static bool stream_recvs(struct stream *s)
{
	int i;

	for (i = 0; i < KILL_RECVS; i++) {
		if (fi_recv(s->n.ep, s->rbuf[i], sizeof(s->rbuf[i]), NULL, 0,
			    &s->done[i]))
			return false;
		s->posted++;
		s->outstanding++;
	}
	return true;
}

static void stream_run(struct stream *s, pid_t server)
{
	uint64_t t0 = now_ms();

	while (now_ms() < t0 + KILL_AFTER_MS + KILL_POST_MS && !s->dead) {
		if (!s->killed && now_ms() >= t0 + KILL_AFTER_MS) {
			kill(server, SIGKILL);
			s->killed = true;
			s->t_kill = now_ms();
		}
		s->dead = !stream_post(s);
		stream_account(s);
		node_wait(&s->n, 1, false);
	}
	if (!s->killed) {
		kill(server, SIGKILL);
		s->killed = true;
		s->t_kill = now_ms();
	}
	while (s->completed < s->posted && now_ms() < s->t_kill + WAIT_MS) {
		stream_account(s);
		node_wait(&s->n, 2, false);
	}
}

static void stream_report(struct stream *s)
{
	uint64_t took = now_ms() - s->t_kill;
	uint64_t end = s->t_kill + WAIT_MS;
	struct eq_ev e;
	int ret;

	check(s->before_kill > 0 && s->errors <= s->completed,
	      "transfers were under way when the server was killed "
	      "(%zu completed before)", s->before_kill);
	check(s->completed == s->posted && !s->dup && !s->unknown,
	      "every posted operation completed exactly once (%zu posted, "
	      "%zu completed, %zu twice, %zu unknown, %zu errors)",
	      s->posted, s->completed, s->dup, s->unknown, s->errors);
	check(s->recv_err == KILL_RECVS,
	      "all %d posted receives completed with an error (%zu)",
	      KILL_RECVS, s->recv_err);
	check(s->completed == s->posted && took < WAIT_MS,
	      "within %d ms of the kill (%llu ms)", WAIT_MS,
	      (unsigned long long)took);
	eq_wait(s->n.ep_eq, &e, now_ms() < end ? (int)(end - now_ms()) : 1);
	check((e.ret > 0 && e.event == FI_SHUTDOWN &&
	       e.u.cm.fid == &s->n.ep->fid) || e.ret == -FI_EAVAIL,
	      "FI_SHUTDOWN or an EQ error entry within %d ms of the kill "
	      "(%s)", WAIT_MS, eq_ev_str(&e));
	ret = node_close_ep(&s->n);
	check(!ret, "fi_close of the endpoint afterwards (%d)", ret);
}

static void kill_client(struct proc *p)
{
	struct stream *s = calloc(1, sizeof(*s));
	struct ctl m;

	if (!s || !cli_setup(&s->n, p, NULL))
		goto out;
	s->buf = malloc(KILL_CHUNK);
	if (!check(s->buf && ctl_expect(p, CTL_KEYS, &m, WAIT_MS) &&
		   stream_recvs(s), "region key and receives posted"))
		goto out;
	memset(s->buf, 0x5a, KILL_CHUNK);
	s->key = m.v[0];
	s->base = m.v[1];
	stream_run(s, p->peer);
	stream_report(s);
out:
	if (s) {
		node_close(&s->n);
		free(s->buf);
	}
	free(s);
	/* whatever happened, the server is not to outlive this case */
	kill(p->peer, SIGKILL);
}

static void kill_server(struct proc *p)
{
	char *region = malloc(KILL_REGION), *rbuf = malloc(KILL_SENDS *
							     KILL_SEND_LEN);
	struct fid_mr *mr = NULL;
	struct node n;
	struct ctl m;
	int i, ret = 0;

	if (!srv_setup(&n, p, NULL) || !region || !rbuf)
		goto out;
	mr = mr_reg(&n, region, KILL_REGION, FI_REMOTE_WRITE);
	for (i = 0; mr && !ret && i < KILL_SENDS; i++)
		ret = (int)fi_recv(n.ep, rbuf + (size_t)i * KILL_SEND_LEN,
				   KILL_SEND_LEN, NULL, 0, rbuf);
	if (!check(mr && !ret, "region registered, receives posted (%d)",
		   ret))
		goto out;
	ctl_send(p, CTL_KEYS, fi_mr_key(mr), (uintptr_t)region, KILL_REGION,
		 0, 0);
	while (ctl_wait_serving(&n, &m, 60000))
		;
out:
	if (mr)
		fi_close(&mr->fid);
	node_close(&n);
	free(region);
	free(rbuf);
}

/* ---- the cases */

static const struct msg_case cases[] = {
	{ "CM data sizes", cm_data_client, cm_data_server, false, false, 40 },
	{ "reject with data", reject_client, reject_server, false, false, 20 },
	{ "shutdown from either side", shutdown_client, shutdown_server,
	  false, false, 30 },
	{ "the client's socket comes with fi_enable", presock_client,
	  presock_server, false, false, 20 },
	{ "endpoints with nothing to drive: accepted later, closed ones "
	  "refuse work", idle_client, idle_server, false, false, 30 },
	{ "FD wait across connections: a reused descriptor number",
	  reuse_client, reuse_server, false, false, 30 },
	{ "one EQ, endpoints connected one after another", order_client,
	  order_server, false, false, 60 },
	{ "close right after a Send", close_after_send_client,
	  close_after_send_server, false, false, 30 },
	{ "close right after a receive", close_after_recv_client,
	  close_after_recv_server, false, false, 30 },
	{ "a read after the CQ was emptied", drain_client, drain_server,
	  false, false, 20 },
	{ "100 connections", many_client, many_server, false, false, 60 },
	{ "sizes, virtual addresses", sizes_client, sizes_server, false,
	  false, 90 },
	{ "sizes, offset mode", sizes_client, sizes_server, true, false, 90 },
	{ "delivery and transmit complete", delivery_client, delivery_server,
	  false, false, 40 },
	{ "remote access violation", violation_client, violation_server,
	  false, false, 40 },
	{ "cancel", cancel_client, cancel_server, false, false, 20 },
	{ "CQ overrun", overrun_client, overrun_server, false, false, 30 },
	{ "FD waits with epoll", epoll_client, epoll_server, false, false,
	  40 },
	{ "inject", inject_client, inject_server, false, false, 20 },
	{ "selective completion", selective_client, selective_server, false,
	  false, 20 },
	{ "peer killed mid-transfer", kill_client, kill_server, false, true,
	  30 },
	{ "remote CQ data both ways", cqdata_client, cqdata_server, false,
	  false, 20 },
	{ "remote CQ data without FI_RX_CQ_DATA", cqdata_norecv_client,
	  cqdata_norecv_server, false, false, 20 },
	{ "remote CQ data flooding an endpoint that reads none",
	  cqdata_flood_client, cqdata_flood_server, false, false, 60 },
	{ "a Write's CQ data at an endpoint without FI_RMA",
	  cqdata_norma_client, cqdata_norma_server, false, false, 30 },
	{ "remote CQ data asked by one side only", cqdata_half_client,
	  cqdata_half_server, false, false, 20 },
	{ "multi-receive buffer", multi_client, multi_server, false, false,
	  20 },
	{ "FI_MSG_PREFIX", prefix_client, prefix_server, false, false, 20 },
	{ "FI_TAGGED both ways", tagged_client, tagged_server, false, false,
	  30 },
	{ "FI_TAGGED asked by one side only", tagged_half_client,
	  tagged_half_server, false, false, 20 },
};

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	const char *env = getenv("TEST_MSG_SEED");
	uint64_t seed;
	size_t i;

	/* before the first libfabric call: the provider reads it at load */
	setenv("FI_IWARP_IFACE", "lo", 1);
	seed = env ? strtoull(env, NULL, 0) :
		     (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
	tap_diag("seed %llu (TEST_MSG_SEED=%llu replays it)",
		 (unsigned long long)seed, (unsigned long long)seed);
	msg_set_reporter(tap_report, tap_note);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		if (only && !strstr(cases[i].name, only))
			continue;
		msg_run(&cases[i], MSG_PORT_BASE + (int)i, seed);
	}
	return tap_done();
}
