/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Resident memory of RDM peers, through the public libfabric API: a
 * child process opens 64 RDM endpoints; this process connects to all of
 * them (one message each, all at once) and then runs 100 rounds in which
 * every peer echoes a 4 KiB message. The resident set of this process
 * (/proc/self/statm) may grow by less than 48 KiB per connected peer, and
 * by less than 2 KiB per peer from the first round to the last: an idle
 * peer pins no staging buffers, and slots that went round once are not
 * touched anew. Not run under ASan, whose shadow and quarantine are
 * resident too. With that many sockets, progress asks an epoll set which
 * are ready rather than polling all of them on every call: one epoll set
 * of this process holds every peer's socket once they are connected.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "tap.h"

#define PEERS 64
#define ROUNDS 100
#define MSG 4096
#define NAME_LEN 128
#define NRX (PEERS + 4)
#define KIB_PER_PEER 48.0
#define GROWTH_PER_PEER 2.0

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
};

struct node {
	struct fid_ep *ep;
	struct fid_cq *txcq, *rxcq;
	uint8_t *buf;		/* nrx receive buffers, then the send buffer */
	struct fi_context *ctx, tx_ctx;
	int nrx;
	bool greeted;
};

static double deadline;

static double rss_kib(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f && fscanf(f, "%ld %ld", &pages, &res) != 2)
		res = 0;
	if (f)
		fclose(f);
	return (double)res * (double)sysconf(_SC_PAGESIZE) / 1024.0;
}

/* What /proc/self/fd/NAME links to; "" if nothing. */
/* The most sockets that one epoll set of this process holds (its
 * fdinfo lists a "tfd:" line per registered descriptor). */
static int epoll_sockets(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int best = 0;

	while (d && (e = readdir(d))) {
		char link[64], path[64], line[256], tfd[16];
		FILE *f;
		int n = 0, fd;

		tap_fd_link(e->d_name, link, sizeof(link));
		if (strcmp(link, "anon_inode:[eventpoll]"))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fdinfo/%s",
			 e->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "tfd: %d", &fd) != 1)
				continue;
			snprintf(tfd, sizeof(tfd), "%d", fd);
			tap_fd_link(tfd, link, sizeof(link));
			n += !strncmp(link, "socket:", 7);
		}
		if (f)
			fclose(f);
		if (n > best)
			best = n;
	}
	if (d)
		closedir(d);
	return best;
}

static int side_open(struct side *s)
{
	struct fi_info *h = fi_allocinfo();
	struct fi_av_attr ava = { .type = FI_AV_MAP };
	int ret;

	if (!h)
		return -FI_ENOMEM;
	h->caps = FI_MSG;
	h->ep_attr->type = FI_EP_RDM;
	h->mode = FI_CONTEXT;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->fabric_attr->prov_name = strdup("iwarp");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &s->info);
	fi_freeinfo(h);
	if (!ret)
		ret = fi_fabric(s->info->fabric_attr, &s->fabric, NULL);
	if (!ret)
		ret = fi_domain(s->fabric, s->info, &s->domain, NULL);
	if (!ret)
		ret = fi_av_open(s->domain, &ava, &s->av, NULL);
	return ret;
}

static void side_close(struct side *s)
{
	fi_close(&s->av->fid);
	fi_close(&s->domain->fid);
	fi_close(&s->fabric->fid);
	fi_freeinfo(s->info);
}

static uint8_t *rxbuf(struct node *n, int i)
{
	return n->buf + (size_t)i * MSG;
}

static int post_recv(struct node *n, int i)
{
	return (int)fi_recv(n->ep, rxbuf(n, i), MSG, NULL, FI_ADDR_UNSPEC,
			    &n->ctx[i]);
}

/* Buffers are allocated and touched before the first figure. */
static int node_open(struct side *s, struct node *n, int nrx)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_MSG,
				  .size = (size_t)nrx + 16 };
	int i, ret;

	n->nrx = nrx;
	n->buf = calloc((size_t)nrx + 1, MSG);
	n->ctx = calloc((size_t)nrx, sizeof(*n->ctx));
	if (!n->buf || !n->ctx)
		return -FI_ENOMEM;
	memset(n->buf, 0xee, ((size_t)nrx + 1) * MSG);
	ret = fi_cq_open(s->domain, &cqa, &n->txcq, NULL);
	if (!ret)
		ret = fi_cq_open(s->domain, &cqa, &n->rxcq, NULL);
	if (!ret)
		ret = fi_endpoint(s->domain, s->info, &n->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(n->ep, &s->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(n->ep, &n->txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(n->ep, &n->rxcq->fid, FI_RECV);
	if (!ret)
		ret = fi_enable(n->ep);
	for (i = 0; !ret && i < nrx; i++)
		ret = post_recv(n, i);
	return ret;
}

static void node_close(struct node *n)
{
	fi_close(&n->ep->fid);
	fi_close(&n->txcq->fid);
	fi_close(&n->rxcq->fid);
	free(n->buf);
	free(n->ctx);
}

/* 0, or -1 on an error completion or past the deadline */
static int poll_tx(struct node *n)
{
	struct fi_cq_msg_entry c[16];
	ssize_t got = fi_cq_read(n->txcq, c, 16);

	return (got >= 0 || got == -FI_EAGAIN) && tap_now() < deadline ? 0 :
									 -1;
}

static int send_to(struct node *n, size_t len, fi_addr_t to)
{
	uint8_t *b = rxbuf(n, n->nrx);
	ssize_t rc;

	while ((rc = fi_send(n->ep, b, len, NULL, to, &n->tx_ctx)) ==
	       -FI_EAGAIN)
		if (poll_tx(n))
			return -1;
	return rc ? -1 : 0;
}

/* A completed receive's slot, -1 for none yet, -2 on an error. */
static int try_recv(struct node *n, size_t *len)
{
	struct fi_cq_msg_entry c;
	ssize_t got = fi_cq_read(n->rxcq, &c, 1);

	if (poll_tx(n))
		return -2;
	if (got == -FI_EAGAIN)
		return -1;
	if (got != 1)
		return -2;
	*len = c.len;
	return (int)((struct fi_context *)c.op_context - n->ctx);
}

static bool pattern_ok(const uint8_t *b, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (b[i] != (uint8_t)(i * 7 + 3))
			return false;
	return len == MSG;
}

/* One endpoint's turn: the parent's address (answered with an octet,
 * inserted once), an echo, or the goodbye (len 1). 1 when it ended. */
static int child_turn(struct side *s, struct node *n, fi_addr_t *parent)
{
	size_t len = 0;
	int i = try_recv(n, &len), ret = 0;

	if (i == -1)
		return 0;
	if (i < 0)
		exit(3);
	if (!n->greeted) {
		n->greeted = true;
		if (*parent == FI_ADDR_UNSPEC &&
		    fi_av_insert(s->av, rxbuf(n, i), 1, parent, 0, NULL) != 1)
			exit(4);
		ret = send_to(n, 1, *parent);
	} else if (len == 1) {
		ret = 1;
	} else {
		if (!pattern_ok(rxbuf(n, i), len))
			exit(5);
		memcpy(rxbuf(n, n->nrx), rxbuf(n, i), MSG);
		ret = send_to(n, MSG, *parent);
	}
	if (ret < 0 || post_recv(n, i))
		exit(6);
	return ret;
}

static void run_child(int wfd)
{
	static struct node nodes[PEERS];
	fi_addr_t parent = FI_ADDR_UNSPEC;
	struct side s = { 0 };
	int i, left = PEERS;

	if (side_open(&s))
		exit(2);
	for (i = 0; i < PEERS; i++) {
		char name[NAME_LEN] = { 0 };
		size_t len = sizeof(name);

		if (node_open(&s, &nodes[i], 4) ||
		    fi_getname(&nodes[i].ep->fid, name, &len) ||
		    write(wfd, name, sizeof(name)) != sizeof(name))
			exit(2);
	}
	close(wfd);
	while (left) {
		for (i = 0; i < PEERS; i++)
			if (child_turn(&s, &nodes[i], &parent) == 1)
				left--;
		if (tap_now() > deadline)
			exit(7);
	}
	for (i = 0; i < PEERS; i++)
		node_close(&nodes[i]);
	side_close(&s);
	exit(0);
}

/* count answers of want octets (echoes checked); false on any error */
static bool gather(struct node *n, int count, size_t want)
{
	while (count) {
		size_t len = 0;
		int i = try_recv(n, &len);

		if (i == -1)
			continue;
		if (i < 0 || len != want ||
		    (want == MSG && !pattern_ok(rxbuf(n, i), len)) ||
		    post_recv(n, i))
			return false;
		count--;
	}
	return true;
}

static void run_parent(int rfd, pid_t pid)
{
	static char names[PEERS][NAME_LEN];
	static fi_addr_t peer[PEERS];
	struct side s = { 0 };
	struct node n = { 0 };
	size_t len = NAME_LEN, k;
	double r0, r1, ra = 0, rb;
	bool ok = true;
	int i, r;

	for (i = 0; i < PEERS && ok; i++)
		ok = read(rfd, names[i], NAME_LEN) == NAME_LEN;
	tap_ok(ok, "the child opened %d RDM endpoints", PEERS);
	ok = ok && !side_open(&s) && !node_open(&s, &n, NRX) &&
	     !fi_getname(&n.ep->fid, rxbuf(&n, NRX), &len);
	r0 = rss_kib();
	for (i = 0; ok && i < PEERS; i++)
		ok = fi_av_insert(s.av, names[i], 1, &peer[i], 0, NULL) == 1 &&
		     !send_to(&n, len, peer[i]);
	tap_ok(ok && gather(&n, PEERS, 1), "all %d peers connected and "
	       "answered", PEERS);
	r1 = rss_kib();
	tap_ok(ok && (r1 - r0) / PEERS < KIB_PER_PEER, "resident memory per "
	       "connected peer: %.1f KiB (< %.0f)", (r1 - r0) / PEERS,
	       KIB_PER_PEER);
	/* the set learns of the sockets at the rare turns of a poll */
	for (i = 0; ok && i < 1000 && epoll_sockets() < PEERS; i++)
		ok = !poll_tx(&n);
	r = epoll_sockets();
	tap_ok(ok && r >= PEERS, "progress asks an epoll set that holds the "
	       "%d peers' sockets (%d) which are ready", PEERS, r);
	for (k = 0; k < MSG; k++)
		rxbuf(&n, NRX)[k] = (uint8_t)(k * 7 + 3);
	for (r = 0; ok && r < ROUNDS; r++) {
		for (i = 0; ok && i < PEERS; i++)
			ok = !send_to(&n, MSG, peer[i]);
		ok = ok && gather(&n, PEERS, MSG);
		if (!r)
			ra = rss_kib();
	}
	rb = rss_kib();
	tap_ok(ok, "%d rounds of %d-octet echoes with every peer intact",
	       ROUNDS, MSG);
	tap_ok(ok && (rb - ra) / PEERS < GROWTH_PER_PEER, "growth from the "
	       "first round to the last: %.2f KiB per peer (< %.0f)",
	       (rb - ra) / PEERS, GROWTH_PER_PEER);
	tap_diag("resident %.0f KiB before, %.0f connected, %.0f after",
		 r0, r1, rb);
	for (i = 0; ok && i < PEERS; i++)
		ok = !send_to(&n, 1, peer[i]);
	/* the child leaves once it has every goodbye */
	while (ok && !poll_tx(&n)) {
		siginfo_t si = { 0 };

		if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) ||
		    si.si_pid)
			break;
	}
	tap_child(pid, 30, "the peers' process");
	node_close(&n);
	side_close(&s);
}

int main(void)
{
	int fds[2];
	pid_t pid;

#ifdef UNDER_ASAN
	tap_skip_n(7, "resident memory is not measurable under ASan");
	return tap_done();
#endif
	deadline = tap_now() + 120;
	if (pipe(fds))
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		close(fds[0]);
		run_child(fds[1]);
	}
	close(fds[1]);
	run_parent(fds[0], pid);
	return tap_done();
}
