/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_peers: resident memory an RDM endpoint adds per connected peer.
 *
 *	bench_peers [-p PROV] [-n PEERS] [-r ROUNDS] [-s SIZE]
 *
 * A child process opens PEERS RDM endpoints; this process opens one,
 * sends its address to every peer (all at once, as a first all-to-all
 * does) and waits for each answer, then runs ROUNDS rounds in which every
 * peer echoes a SIZE-octet message (checked both ways). The resident set
 * (/proc/self/statm) of this process is read before the first message,
 * after the first peer, after all peers and after the first and the last
 * round; its growth per peer is what the peers cost:
 *
 *	RESULT peers  PEERS KiB-per-peer-connected  CPU-us-per-connect
 *	RESULT peers_run PEERS KiB-per-peer-after-ROUNDS  CPU-us-per-message
 *
 * and a "#" line adds the marginal cost (past the first peer), the growth
 * between the first and the last round and the host's TCP socket memory
 * (kernel, not in the resident set; /proc/net/sockstat, host-wide).
 */
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "bench_common.h"

#define NAME_MAX_LEN 128
#define MAX_PEERS 1024

static const char *prov = "iwarp";
static int npeers = 16, rounds = 100;
static size_t size = 1024;
static int child;
static double deadline;

struct side {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fi_info *info;
};

/* one endpoint, its queues and buffers */
struct node {
	struct fid_ep *ep;
	struct fid_cq *txcq, *rxcq;
	unsigned char *rxbuf, *txbuf;
	struct fi_context *rx_ctx, tx_ctx;
	int nrx;
	long posted, done;
};

#define CHK(call)							\
	do {								\
		int rc_ = (int)(call);					\
		if (rc_) {						\
			fprintf(stderr, "bench_peers %s: %s: %s\n",	\
				child ? "child" : "parent", #call,	\
				fi_strerror(-rc_));			\
			exit(1);					\
		}							\
	} while (0)

static void timed_out(const char *what)
{
	if (bench_now() > deadline) {
		fprintf(stderr, "bench_peers %s: timed out %s\n",
			child ? "child" : "parent", what);
		exit(1);
	}
}

static double rss_kib(void)
{
	long pages = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f || fscanf(f, "%ld %ld", &pages, &res) != 2)
		exit(1);
	fclose(f);
	return (double)res * (double)sysconf(_SC_PAGESIZE) / 1024.0;
}

/* host-wide TCP socket memory in KiB, -1 if unknown */
static double tcp_mem_kib(void)
{
	char line[256];
	long mem = -1;
	FILE *f = fopen("/proc/net/sockstat", "r");
	char *m;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "TCP:", 4) && (m = strstr(line, " mem ")))
			mem = atol(m + 5);
	fclose(f);
	return mem < 0 ? -1 : (double)mem * (double)sysconf(_SC_PAGESIZE) /
			      1024.0;
}

static void side_open(struct side *s)
{
	struct fi_info *h = fi_allocinfo();
	struct fi_av_attr ava = { .type = FI_AV_MAP };

	if (!h)
		exit(1);
	h->caps = FI_MSG;
	h->ep_attr->type = FI_EP_RDM;
	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->fabric_attr->prov_name = strdup(prov);
	CHK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &s->info));
	fi_freeinfo(h);
	CHK(fi_fabric(s->info->fabric_attr, &s->fabric, NULL));
	CHK(fi_domain(s->fabric, s->info, &s->domain, NULL));
	CHK(fi_av_open(s->domain, &ava, &s->av, NULL));
}

static void cq_fail(struct fid_cq *cq)
{
	struct fi_cq_err_entry e = { 0 };

	fi_cq_readerr(cq, &e, 0);
	fprintf(stderr, "bench_peers %s: completion error: %s\n",
		child ? "child" : "parent", fi_strerror(e.err));
	exit(1);
}

static void poll_tx(struct node *n)
{
	struct fi_cq_msg_entry c[16];
	ssize_t got = fi_cq_read(n->txcq, c, 16);

	if (got > 0)
		n->done += got;
	else if (got != -FI_EAGAIN)
		cq_fail(n->txcq);
}

static void post_recv(struct node *n, int i)
{
	ssize_t rc;

	while ((rc = fi_recv(n->ep, n->rxbuf + (size_t)i * size, size, NULL,
			     FI_ADDR_UNSPEC, &n->rx_ctx[i])) == -FI_EAGAIN) {
		poll_tx(n);
		timed_out("posting a receive");
	}
	CHK(rc);
}

/* Buffers come from the heap before the first figure, already touched. */
static void node_open(struct side *s, struct node *n, int nrx)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_MSG,
				  .size = (size_t)nrx + 16 };
	int i;

	n->nrx = nrx;
	n->rxbuf = calloc((size_t)nrx + 1, size);
	n->rx_ctx = calloc((size_t)nrx, sizeof(*n->rx_ctx));
	if (!n->rxbuf || !n->rx_ctx)
		exit(1);
	n->txbuf = n->rxbuf + (size_t)nrx * size;
	memset(n->rxbuf, 0xee, ((size_t)nrx + 1) * size);
	CHK(fi_cq_open(s->domain, &cqa, &n->txcq, NULL));
	CHK(fi_cq_open(s->domain, &cqa, &n->rxcq, NULL));
	CHK(fi_endpoint(s->domain, s->info, &n->ep, NULL));
	CHK(fi_ep_bind(n->ep, &s->av->fid, 0));
	CHK(fi_ep_bind(n->ep, &n->txcq->fid, FI_TRANSMIT));
	CHK(fi_ep_bind(n->ep, &n->rxcq->fid, FI_RECV));
	CHK(fi_enable(n->ep));
	for (i = 0; i < nrx; i++)
		post_recv(n, i);
}

static void node_close(struct node *n)
{
	fi_close(&n->ep->fid);
	fi_close(&n->txcq->fid);
	fi_close(&n->rxcq->fid);
	free(n->rxbuf);
	free(n->rx_ctx);
}

static void send_to(struct node *n, const void *buf, size_t len,
		    fi_addr_t to)
{
	ssize_t rc;

	while ((rc = fi_send(n->ep, buf, len, NULL, to, &n->tx_ctx)) ==
	       -FI_EAGAIN) {
		poll_tx(n);
		timed_out("sending");
	}
	CHK(rc);
	n->posted++;
}

/* A receive that completed (its buffer in *buf), or -1 for none yet. */
static ssize_t try_recv(struct node *n, unsigned char **buf)
{
	struct fi_cq_msg_entry c;
	ssize_t got = fi_cq_read(n->rxcq, &c, 1);
	size_t i;

	poll_tx(n);
	if (got == -FI_EAGAIN)
		return -1;
	if (got != 1)
		cq_fail(n->rxcq);
	i = (size_t)((struct fi_context *)c.op_context - n->rx_ctx);
	*buf = n->rxbuf + i * size;
	return (ssize_t)c.len;
}

static size_t wait_recv(struct node *n, unsigned char **buf)
{
	ssize_t r;

	while ((r = try_recv(n, buf)) < 0)
		timed_out("receiving");
	return (size_t)r;
}

static void repost(struct node *n, unsigned char *buf)
{
	post_recv(n, (int)((size_t)(buf - n->rxbuf) / size));
}

static void check(const unsigned char *b, size_t len, unsigned seed)
{
	if (len != size || bench_check(b, len, seed)) {
		fprintf(stderr, "bench_peers %s: message corrupted\n",
			child ? "child" : "parent");
		exit(1);
	}
}

/*
 * The peers: each endpoint answers the parent's address with one octet,
 * echoes every round's message and ends at a one-octet goodbye.
 */
static void run_child(int wfd)
{
	struct side s = { 0 };
	struct node *nodes = calloc((size_t)npeers, sizeof(*nodes));
	fi_addr_t parent = FI_ADDR_UNSPEC;
	int i, left = npeers;
	char *greeted = calloc((size_t)npeers, 1);

	if (!nodes || !greeted)
		exit(1);
	side_open(&s);
	for (i = 0; i < npeers; i++) {
		char name[NAME_MAX_LEN] = { 0 };
		size_t len = sizeof(name);

		node_open(&s, &nodes[i], 4);
		CHK(fi_getname(&nodes[i].ep->fid, name, &len));
		if (write(wfd, name, sizeof(name)) != sizeof(name))
			exit(1);
	}
	close(wfd);
	while (left) {
		for (i = 0; i < npeers; i++) {
			struct node *n = &nodes[i];
			unsigned char *b;
			ssize_t r = try_recv(n, &b);

			if (r < 0)
				continue;
			if (!greeted[i]) {	/* the parent's address */
				greeted[i] = 1;
				if (parent == FI_ADDR_UNSPEC &&
				    fi_av_insert(s.av, b, 1, &parent, 0,
						 NULL) != 1)
					exit(1);
				send_to(n, n->txbuf, 1, parent);
			} else if (r == 1) {	/* goodbye */
				left--;
			} else {
				check(b, (size_t)r, 7);
				memcpy(n->txbuf, b, size);
				send_to(n, n->txbuf, size, parent);
			}
			repost(n, b);
		}
		timed_out("in the child");
	}
	for (i = 0; i < npeers; i++) {
		while (nodes[i].done < nodes[i].posted) {
			poll_tx(&nodes[i]);
			timed_out("draining");
		}
		node_close(&nodes[i]);
	}
	fi_close(&s.av->fid);
	fi_close(&s.domain->fid);
	fi_close(&s.fabric->fid);
	fi_freeinfo(s.info);
	exit(0);
}

/* Waits for one answer from each of count peers; checks echoes. */
static void gather(struct node *n, int count, size_t want)
{
	while (count--) {
		unsigned char *b;
		size_t len = wait_recv(n, &b);

		if (len != want)
			exit(1);
		if (want == size)
			check(b, len, 7);
		repost(n, b);
	}
}

static void run_parent(int rfd, pid_t pid)
{
	static char names[MAX_PEERS][NAME_MAX_LEN];
	static fi_addr_t peer[MAX_PEERS];
	struct side s = { 0 };
	struct node n = { 0 };
	size_t len = NAME_MAX_LEN;
	double r0, r1, rn, ra, rb, m0, mn, c0, c1, t0, t1;
	int i, r, status;

	for (i = 0; i < npeers; i++)
		if (read(rfd, names[i], NAME_MAX_LEN) != NAME_MAX_LEN)
			exit(1);
	side_open(&s);
	node_open(&s, &n, npeers + 4);
	CHK(fi_getname(&n.ep->fid, n.txbuf, &len));
	r0 = rss_kib();
	m0 = tcp_mem_kib();
	c0 = bench_cpu();
	t0 = bench_now();
	for (i = 0; i < npeers; i++)
		if (fi_av_insert(s.av, names[i], 1, &peer[i], 0, NULL) != 1)
			exit(1);
	send_to(&n, n.txbuf, len, peer[0]);
	gather(&n, 1, 1);
	r1 = rss_kib();
	for (i = 1; i < npeers; i++)
		send_to(&n, n.txbuf, len, peer[i]);
	gather(&n, npeers - 1, 1);
	t1 = bench_now() - t0;
	c1 = bench_cpu() - c0;
	rn = rss_kib();
	mn = tcp_mem_kib();
	ra = rn;
	bench_fill(n.txbuf, size, 7);
	c0 = bench_cpu();
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < npeers; i++)
			send_to(&n, n.txbuf, size, peer[i]);
		gather(&n, npeers, size);
		if (!r)
			ra = rss_kib();
	}
	rb = rss_kib();
	printf("# %s, %d peers: %.0f us to connect all, resident %.0f KiB "
	       "before, +%.1f KiB the first peer, +%.1f KiB/peer past it, "
	       "+%.1f KiB/peer after %d rounds of %zu octets (%.0f KiB growth "
	       "from the first round to the last); host TCP socket memory "
	       "+%.0f KiB\n", prov, npeers, t1, r0, r1 - r0,
	       npeers > 1 ? (rn - r1) / (npeers - 1) : 0, (rb - r0) / npeers,
	       rounds, size, rb - ra, m0 < 0 ? 0 : mn - m0);
	printf("RESULT peers %d %.3f %.3f\n", npeers, (rn - r0) / npeers,
	       c1 / npeers);
	printf("RESULT peers_run %d %.3f %.3f\n", npeers, (rb - r0) / npeers,
	       (bench_cpu() - c0) / (2.0 * rounds * npeers));
	fflush(stdout);
	for (i = 0; i < npeers; i++)
		send_to(&n, n.txbuf, 1, peer[i]);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		poll_tx(&n);
		timed_out("waiting for the child");
	}
	node_close(&n);
	fi_close(&s.av->fid);
	fi_close(&s.domain->fid);
	fi_close(&s.fabric->fid);
	fi_freeinfo(s.info);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench_peers: the peers' process failed\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	int opt, fds[2];
	pid_t pid;

	while ((opt = getopt(argc, argv, "p:n:r:s:")) != -1) {
		switch (opt) {
		case 'p': prov = optarg; break;
		case 'n': npeers = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		case 's': size = strtoul(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (npeers < 1 || npeers > MAX_PEERS || rounds < 1 || size < 2 ||
	    size > (1u << 24) || optind != argc) {
		fprintf(stderr, "usage: bench_peers [-p PROV] [-n PEERS] "
			"[-r ROUNDS] [-s SIZE]\n");
		return 2;
	}
	deadline = bench_now() + 100e6;
	if (pipe(fds))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (!pid) {
		child = 1;
		close(fds[0]);
		run_child(fds[1]);
	}
	close(fds[1]);
	run_parent(fds[0], pid);
	return 0;
}
