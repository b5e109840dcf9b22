/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The listener of an RDM endpoint under a flood, through the public
 * libfabric API, with FI_IWARP_LISTEN_PENDING=16 and
 * FI_IWARP_MPA_TIMEOUT_MS=300: the knobs reach the engine (an idle
 * connection is closed at 300 ms, the endpoint holds at most 16), tagged
 * messages between endpoints stay intact all through, an endpoint that
 * first sends during the flood gets through, and the descriptors come
 * back to where they were.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "tap.h"
#include "fi_api.h"

#define CAP 16
#define MPA_MS 300
#define FLOOD 2000
#define RING 600
#define BATCH 50
#define MSG_LEN 8192

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;

struct rep {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	struct sockaddr_in name;
};

static int rep_open(struct rep *r)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	size_t len = sizeof(r->name);
	int ret;

	ret = fi_endpoint(domain, info, &r->ep, NULL);
	if (!ret)
		ret = fi_cq_open(domain, &cq_attr, &r->cq, NULL);
	if (!ret)
		ret = fi_av_open(domain, &av_attr, &r->av, NULL);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->av->fid, 0);
	if (!ret)
		ret = fi_enable(r->ep);
	if (!ret)
		ret = fi_getname(&r->ep->fid, &r->name, &len);
	return ret;
}

static void rep_close(struct rep *r)
{
	if (r->ep)
		fi_close(&r->ep->fid);
	if (r->av)
		fi_close(&r->av->fid);
	if (r->cq)
		fi_close(&r->cq->fid);
	memset(r, 0, sizeof(*r));
}

/* Drives every endpoint's progress once. */
static void poke(struct rep *const *eps, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (eps[i]->cq)
			fi_cq_read(eps[i]->cq, NULL, 0);
}

/* Waits for the completion with context ctx on r (others driven too). */
static bool reap(struct rep *r, struct rep *const *eps, int n, void *ctx)
{
	double end = tap_now() + 5;
	struct fi_cq_tagged_entry e;

	while (tap_now() < end) {
		ssize_t got = fi_cq_read(r->cq, &e, 1);

		if (got == 1 && e.op_context == ctx)
			return true;
		if (got == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(r->cq, &err, 0);
			return false;
		}
		poke(eps, n);
	}
	return false;
}

/* One tagged message from src to dst, its octets verified. */
static bool msg(struct rep *src, fi_addr_t to, struct rep *dst,
		struct rep *const *eps, int n, unsigned int seed)
{
	static char out[MSG_LEN], in[MSG_LEN];
	int sctx, rctx;
	size_t i;

	for (i = 0; i < MSG_LEN; i++)
		out[i] = (char)(seed * 131 + i * 7);
	memset(in, 0, sizeof(in));
	if (fi_trecv(dst->ep, in, MSG_LEN, NULL, FI_ADDR_UNSPEC, seed, 0,
		     &rctx) ||
	    fi_tsend(src->ep, out, MSG_LEN, NULL, to, seed, &sctx))
		return false;
	return reap(dst, eps, n, &rctx) && reap(src, eps, n, &sctx) &&
	       !memcmp(in, out, MSG_LEN);
}

/* A flood connection: idle, half a Request, or garbage. */
static int cli_open(const struct sockaddr_in *to, int kind)
{
	static const char half[] = "MPA ID Req";
	static const char http[] = "GET / HTTP/1.1\r\n\r\n";
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to))) {
		close(fd);
		return -1;
	}
	if (kind == 1)
		send(fd, half, sizeof(half) - 1, MSG_NOSIGNAL);
	else if (kind == 2)
		send(fd, http, sizeof(http) - 1, MSG_NOSIGNAL);
	return fd;
}

struct flood {
	int cli[RING];
	int n_open;
	int base;
	int max_held;
	int sent, bad;
};

static void flood_close(struct flood *f)
{
	int i;

	for (i = 0; i < RING; i++)
		if (f->cli[i] >= 0)
			close(f->cli[i]);
	for (i = 0; i < RING; i++)
		f->cli[i] = -1;
	f->n_open = 0;
}

/* After each BATCH: a message each way, and the listener's share of the
 * descriptors (those of the late endpoint's connection in slack). */
static void flood_step(struct flood *f, struct rep *a, struct rep *b,
		       fi_addr_t b_at_a, fi_addr_t a_at_b,
		       struct rep *const *eps, int n)
{
	int held;

	f->sent += 2;
	if (!msg(a, b_at_a, b, eps, n, (unsigned int)f->sent) ||
	    !msg(b, a_at_b, a, eps, n, (unsigned int)f->sent + 1))
		f->bad++;
	held = tap_fd_count() - f->base - f->n_open;
	if (held > f->max_held)
		f->max_held = held;
}

/* Returns the descriptors before the flood, or -1. */
static int test_flood(struct rep *a, struct rep *b, struct rep *c)
{
	static struct flood f;
	struct rep *eps[] = { a, b, c };
	fi_addr_t b_at_a, a_at_b, b_at_c;
	bool late = false;
	int i;

	fi_av_insert(a->av, &b->name, 1, &b_at_a, 0, NULL);
	fi_av_insert(b->av, &a->name, 1, &a_at_b, 0, NULL);
	fi_av_insert(c->av, &b->name, 1, &b_at_c, 0, NULL);
	for (i = 0; i < RING; i++)
		f.cli[i] = -1;
	if (!tap_ok(msg(a, b_at_a, b, eps, 3, 1) &&
		    msg(b, a_at_b, a, eps, 3, 2),
		    "endpoints exchange messages before the flood"))
		return -1;
	f.base = tap_fd_count();
	for (i = 0; i < FLOOD; i++) {
		int *fd = &f.cli[i % RING];

		if (*fd >= 0) {
			close(*fd);
			f.n_open--;
		}
		*fd = cli_open(&b->name, i % 3);
		f.n_open += *fd >= 0;
		if (i == FLOOD / 2)
			late = msg(c, b_at_c, b, eps, 3, 99);
		if (i % BATCH == BATCH - 1)
			flood_step(&f, a, b, b_at_a, a_at_b, eps, 3);
	}
	tap_ok(f.bad == 0 && f.sent >= 2 * (FLOOD / BATCH),
	       "flood of %d connections: %d verified messages between two "
	       "endpoints, %d failed", FLOOD, f.sent, f.bad);
	tap_ok(late, "an endpoint that first sends during the flood gets "
	       "its message through");
	tap_diag("the flooded endpoint held up to %d descriptors", f.max_held);
	tap_ok(f.max_held <= CAP + 4, "FI_IWARP_LISTEN_PENDING=%d: the "
	       "listener held at most that many connections (%d descriptors)",
	       CAP, f.max_held);
	flood_close(&f);
	return f.base;
}

/* An idle connection ends at FI_IWARP_MPA_TIMEOUT_MS. */
static void test_idle(struct rep *b)
{
	struct rep *eps[] = { b };
	double t0, t = -1;
	char c;
	int fd = cli_open(&b->name, 0);

	t0 = tap_now();
	while (fd >= 0 && tap_now() < t0 + 3) {
		ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN)) {
			t = (tap_now() - t0) * 1e3;
			break;
		}
		poke(eps, 1);
		usleep(1000);
	}
	if (fd >= 0)
		close(fd);
	tap_ok(t >= MPA_MS - 1 && t <= MPA_MS + 400, "FI_IWARP_MPA_TIMEOUT_MS"
	       "=%d: an idle connection is closed after %.0f ms", MPA_MS, t);
}

/* Descriptors come back to those before the flood, plus the late
 * endpoint's connection (a socket at each end). */
static void test_after(struct rep *a, struct rep *b, struct rep *c,
		       int base)
{
	struct rep *eps[] = { a, b, c };
	double end = tap_now() + 2;
	int n;

	do {
		poke(eps, 3);
		usleep(1000);
		n = tap_fd_count();
	} while (n > base + 2 && tap_now() < end);
	tap_ok(base >= 0 && n <= base + 2, "descriptors back to what they "
	       "were, plus the late endpoint's connection (%d, %d before)",
	       n, base);
}

static int open_all(void)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	hints->fabric_attr->prov_name = strdup("iwarp");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->addr_format = FI_SOCKADDR_IN;
	ret = fi_getinfo(TEST_API, NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (!ret)
		ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (!ret)
		ret = fi_domain(fabric, info, &domain, NULL);
	return ret;
}

int main(void)
{
	struct rep a = { 0 }, b = { 0 }, c = { 0 };
	struct rlimit r;
	int ret;

	alarm(60);
	if (!getrlimit(RLIMIT_NOFILE, &r) && r.rlim_cur > 1024) {
		r.rlim_cur = 1024;
		setrlimit(RLIMIT_NOFILE, &r);
	}
	setenv("FI_IWARP_IFACE", "lo", 1);
	setenv("FI_IWARP_LISTEN_PENDING", "16", 1);
	setenv("FI_IWARP_MPA_TIMEOUT_MS", "300", 1);
	/* the listener's sockets are counted: peers in this process would
	 * otherwise move to shared memory, with doorbell descriptors */
	setenv("FI_IWARP_SHM", "0", 1);
	ret = open_all();
	if (!tap_ok(!ret, "fabric and domain (%d)", ret))
		return tap_done();
	ret = rep_open(&a) || rep_open(&b) || rep_open(&c);
	if (tap_ok(!ret, "three RDM endpoints open")) {
		test_idle(&b);
		test_after(&a, &b, &c, test_flood(&a, &b, &c));
	}
	rep_close(&a);
	rep_close(&b);
	rep_close(&c);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return tap_done();
}
