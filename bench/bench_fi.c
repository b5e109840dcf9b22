/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_fi: the same measurements as bench_tcp, through any libfabric
 * provider, so iwarp and tcp run the same code.
 *
 *	bench_fi -p PROV -e msg|rdm -m lat|bw|conn|connkeep [-d DOMAIN]
 *		 [-s SIZES]
 *		 [-t BUDGET_MS] -B PORT              (server)
 *	bench_fi ... -P PORT HOST                    (client)
 *
 * lat: fi_send/fi_recv ping-pong, busy-polling the CQs. bw: the client
 * sends windows of 64 messages from one buffer, the server answers each
 * window with a 1-octet message; receives are reposted as they complete.
 * conn (msg only): time from fi_connect to FI_CONNECTED, median of 100;
 * the server keeps every endpoint it accepted. connkeep: 2000 of them,
 * the medians of the first 100 (size 0) and of the last 100 (size 2000),
 * so that a cost per endpoint the server keeps shows.
 * After each size one more message carries a pattern the server checks.
 */
#include <errno.h>
#include <sys/resource.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "bench_common.h"

#define RX_DEPTH (BENCH_WINDOW + 4)
#define CONN_COUNT 100
#define CONN_KEEP 2000
#define CONN_BLOCK 100

static const char *prov = "iwarp", *mode = "lat", *dom_name;
static enum fi_ep_type ep_type = FI_EP_MSG;
static size_t sizes[BENCH_MAX_SIZES], max_size = 64;
static int nsizes, server, conn_count;	/* 0: not a conn mode */
static double budget_ms = 300;

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *eq;
static struct fid_cq *txcq, *rxcq;
static struct fid_av *av;
static struct fid_ep *ep;
static struct fid_pep *pep;
static struct fid_mr *mr;
static void *desc;
static unsigned char *txbuf, *rxbuf;
static fi_addr_t peer = FI_ADDR_UNSPEC;
static struct fi_context rx_ctx[RX_DEPTH], tx_ctx;
static long tx_posted, tx_done;
static int repost = 1;

#define CHK(call)							\
	do {								\
		int rc_ = (int)(call);					\
		if (rc_) {						\
			fprintf(stderr, "bench_fi %s: %s: %s\n",	\
				server ? "server" : "client", #call,	\
				fi_strerror(-rc_));			\
			exit(1);					\
		}							\
	} while (0)

static void cq_fail(struct fid_cq *cq, const char *which)
{
	struct fi_cq_err_entry e = { 0 };

	fi_cq_readerr(cq, &e, 0);
	fprintf(stderr, "bench_fi: %s completion error: %s (prov_errno %d)\n",
		which, fi_strerror(e.err), e.prov_errno);
	exit(1);
}

static void poll_tx(void)
{
	struct fi_cq_msg_entry c[16];
	ssize_t n = fi_cq_read(txcq, c, 16);

	if (n > 0)
		tx_done += n;
	else if (n != -FI_EAGAIN)
		cq_fail(txcq, "send");
}

static void post_recv(struct fi_context *ctx)
{
	ssize_t rc;

	while ((rc = fi_recv(ep, rxbuf, max_size, desc, FI_ADDR_UNSPEC,
			     ctx)) == -FI_EAGAIN)
		poll_tx();
	CHK(rc);
}

/* Waits for one receive, reposts its buffer, returns its length. */
static size_t wait_recv(void)
{
	struct fi_cq_msg_entry c;
	ssize_t n;

	for (;;) {
		n = fi_cq_read(rxcq, &c, 1);
		if (n == 1)
			break;
		if (n != -FI_EAGAIN)
			cq_fail(rxcq, "receive");
		poll_tx();
	}
	if (repost)
		post_recv(c.op_context);
	return c.len;
}

static void send_msg(const void *buf, size_t n)
{
	ssize_t rc;

	while ((rc = fi_send(ep, buf, n, desc, peer, &tx_ctx)) == -FI_EAGAIN)
		poll_tx();
	CHK(rc);
	tx_posted++;
}

static void drain_tx(void)
{
	while (tx_done < tx_posted)
		poll_tx();
}

static void wait_cm(uint32_t want, fid_t fid, struct fi_eq_cm_entry *entry)
{
	uint32_t ev;
	ssize_t n;

	for (;;) {
		n = fi_eq_sread(eq, &ev, entry, sizeof(*entry), 10000, 0);
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry e = { 0 };

			fi_eq_readerr(eq, &e, 0);
			fprintf(stderr, "bench_fi: connection error: %s\n",
				fi_strerror(e.err));
			exit(1);
		}
		if (n < 0) {
			fprintf(stderr, "bench_fi: no CM event %u: %s\n", want,
				fi_strerror((int)-n));
			exit(1);
		}
		if (ev == want && (!fid || entry->fid == fid))
			return;
	}
}

static struct fi_info *make_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		exit(1);
	h->caps = FI_MSG;
	h->ep_attr->type = ep_type;
	h->mode = FI_CONTEXT;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->fabric_attr->prov_name = strdup(prov);
	if (dom_name)
		h->domain_attr->name = strdup(dom_name);
	h->tx_attr->size = RX_DEPTH;
	h->rx_attr->size = RX_DEPTH;
	return h;
}

static void open_ep(struct fi_info *fi)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_MSG,
				  .size = 2 * RX_DEPTH };

	if (!txcq) {
		CHK(fi_cq_open(domain, &cqa, &txcq, NULL));
		CHK(fi_cq_open(domain, &cqa, &rxcq, NULL));
	}
	CHK(fi_endpoint(domain, fi, &ep, NULL));
	if (ep_type == FI_EP_MSG)
		CHK(fi_ep_bind(ep, &eq->fid, 0));
	else
		CHK(fi_ep_bind(ep, &av->fid, 0));
	CHK(fi_ep_bind(ep, &txcq->fid, FI_TRANSMIT));
	CHK(fi_ep_bind(ep, &rxcq->fid, FI_RECV));
	CHK(fi_enable(ep));
}

static void open_common(struct fi_info *fi)
{
	struct fi_eq_attr eqa = { .size = 64, .wait_obj = FI_WAIT_UNSPEC };

	CHK(fi_fabric(fi->fabric_attr, &fabric, NULL));
	CHK(fi_eq_open(fabric, &eqa, &eq, NULL));
	CHK(fi_domain(fabric, fi, &domain, NULL));
	/* one allocation, so one registration covers both buffers */
	txbuf = calloc(2, max_size);
	if (!txbuf)
		exit(1);
	rxbuf = txbuf + max_size;
	if (fi->domain_attr->mr_mode & FI_MR_LOCAL) {
		CHK(fi_mr_reg(domain, txbuf, 2 * max_size, FI_SEND | FI_RECV,
			      0, 0, 0, &mr, NULL));
		desc = fi_mr_desc(mr);
	}
	if (ep_type == FI_EP_RDM) {
		struct fi_av_attr ava = { .type = FI_AV_MAP };

		CHK(fi_av_open(domain, &ava, &av, NULL));
	}
}

static void setup(const char *host, const char *port)
{
	struct fi_info *hints = make_hints();
	struct fi_eq_cm_entry entry;
	int i;

	CHK(fi_getinfo(FI_VERSION(1, 17), host, port,
		       server ? FI_SOURCE : 0, hints, &info));
	fi_freeinfo(hints);
	open_common(info);
	if (ep_type == FI_EP_MSG && server) {
		CHK(fi_passive_ep(fabric, info, &pep, NULL));
		CHK(fi_pep_bind(pep, &eq->fid, 0));
		CHK(fi_listen(pep));
		if (conn_count)
			return;
		wait_cm(FI_CONNREQ, NULL, &entry);
		open_ep(entry.info);
		for (i = 0; i < RX_DEPTH; i++)
			post_recv(&rx_ctx[i]);
		CHK(fi_accept(ep, NULL, 0));
		wait_cm(FI_CONNECTED, &ep->fid, &entry);
		fi_freeinfo(entry.info);
		return;
	}
	if (ep_type == FI_EP_MSG) {
		if (conn_count)
			return;
		open_ep(info);
		for (i = 0; i < RX_DEPTH; i++)
			post_recv(&rx_ctx[i]);
		CHK(fi_connect(ep, info->dest_addr, NULL, 0));
		wait_cm(FI_CONNECTED, &ep->fid, &entry);
		return;
	}
	open_ep(info);
	for (i = 0; i < RX_DEPTH; i++)
		post_recv(&rx_ctx[i]);
	if (server) {
		/* the client's first message is its address */
		size_t len = wait_recv();

		if (fi_av_insert(av, rxbuf, 1, &peer, 0, NULL) != 1 || !len) {
			fprintf(stderr, "bench_fi: bad peer address\n");
			exit(1);
		}
		send_msg(txbuf, 1);
	} else {
		size_t len = max_size;

		if (fi_av_insert(av, info->dest_addr, 1, &peer, 0, NULL) != 1)
			exit(1);
		CHK(fi_getname(&ep->fid, txbuf, &len));
		send_msg(txbuf, len);
		wait_recv();
	}
	drain_tx();
}

/* Server's CPU time to the client, then one checked message. */
static double finish_size(size_t n, double c0)
{
	double mine = bench_cpu() - c0, peer = 0;

	if (server) {
		/* nothing is in flight towards us until the client has this */
		memset(rxbuf, 0, n);
		memcpy(txbuf, &mine, sizeof(mine));
		send_msg(txbuf, sizeof(mine));
		drain_tx();
		if (wait_recv() != n || bench_check(rxbuf, n, (unsigned)n)) {
			fprintf(stderr, "bench_fi: size %zu corrupted\n", n);
			exit(1);
		}
		return 0;
	}
	wait_recv();
	memcpy(&peer, rxbuf, sizeof(peer));
	bench_fill(txbuf, n, (unsigned)n);
	send_msg(txbuf, n);
	drain_tx();
	return mine + peer;
}

static void lat_size(size_t n)
{
	long it = bench_iters(n, 100, 60000, budget_ms * 1000), i;
	long warm = it / 10 + 1;
	double t0 = 0, c0 = 0, t, cpu;

	for (i = -warm; i < it; i++) {
		if (i == 0) {
			t0 = bench_now();
			c0 = bench_cpu();
		}
		if (server) {
			wait_recv();
			send_msg(txbuf, n);
		} else {
			send_msg(txbuf, n);
			wait_recv();
		}
	}
	t = bench_now() - t0;
	drain_tx();
	cpu = finish_size(n, c0);
	if (!server)
		printf("RESULT lat %zu %.3f %.3f\n", n, t / it / 2,
		       cpu / (2.0 * (double)it));
}

static void bw_size(size_t n)
{
	long it = bench_iters(n * BENCH_WINDOW, 3, 2000, budget_ms * 1000);
	long warm = it / 10 + 1, i;
	double t0 = 0, c0 = 0, t, cpu, msgs;
	int w;

	for (i = -warm; i < it; i++) {
		if (i == 0) {
			t0 = bench_now();
			c0 = bench_cpu();
		}
		if (server) {
			for (w = 0; w < BENCH_WINDOW; w++)
				wait_recv();
			send_msg(txbuf, 1);
		} else {
			for (w = 0; w < BENCH_WINDOW; w++)
				send_msg(txbuf, n);
			wait_recv();
		}
	}
	t = bench_now() - t0;
	drain_tx();
	cpu = finish_size(n, c0);
	msgs = (double)it * BENCH_WINDOW;
	if (!server)
		printf("RESULT bw %zu %.3f %.3f\n", n, (double)n * msgs / t,
		       cpu / msgs);
}

/* conn: the client connects and closes conn_count endpoints in turn. */
static void conn_client(void)
{
	static double t[CONN_KEEP];
	struct fi_eq_cm_entry entry;
	double c0 = bench_cpu(), cpu;
	int i;

	repost = 0;
	for (i = 0; i < conn_count; i++) {
		double t0;

		open_ep(info);
		post_recv(&rx_ctx[0]);
		t0 = bench_now();
		CHK(fi_connect(ep, info->dest_addr, NULL, 0));
		wait_cm(FI_CONNECTED, &ep->fid, &entry);
		t[i] = bench_now() - t0;
		/* the server's message proves both sides are up */
		wait_recv();
		CHK(fi_close(&ep->fid));
		ep = NULL;
	}
	cpu = bench_cpu() - c0;
	if (conn_count == CONN_COUNT) {
		bench_report_conn(t, CONN_COUNT, 0, cpu);
		return;
	}
	bench_report_conn(t, CONN_BLOCK, 0, cpu * CONN_BLOCK / conn_count);
	bench_report_conn(t + conn_count - CONN_BLOCK, CONN_BLOCK,
			  (size_t)conn_count, cpu * CONN_BLOCK / conn_count);
}

static void conn_server(void)
{
	static struct fid_ep *eps[CONN_KEEP];
	struct fi_eq_cm_entry entry;
	struct rlimit rl;
	int i;

	/* a descriptor or two for each endpoint kept, in some providers */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (i = 0; i < conn_count; i++) {
		wait_cm(FI_CONNREQ, NULL, &entry);
		open_ep(entry.info);
		eps[i] = ep;
		CHK(fi_accept(ep, NULL, 0));
		wait_cm(FI_CONNECTED, &ep->fid, &entry);
		fi_freeinfo(entry.info);
		send_msg(txbuf, 1);
		drain_tx();
	}
	for (i = 0; i < conn_count; i++)
		fi_close(&eps[i]->fid);
	ep = NULL;
}

int main(int argc, char **argv)
{
	const char *port = NULL;
	int opt, i;

	nsizes = bench_parse_sizes("1,64,1k,16k,64k,256k,1m,4m", sizes);
	while ((opt = getopt(argc, argv, "p:e:m:d:s:t:B:P:")) != -1) {
		switch (opt) {
		case 'p': prov = optarg; break;
		case 'e': ep_type = !strcmp(optarg, "rdm") ? FI_EP_RDM :
				    FI_EP_MSG; break;
		case 'm': mode = optarg; break;
		case 'd': dom_name = optarg; break;
		case 's': nsizes = bench_parse_sizes(optarg, sizes); break;
		case 't': budget_ms = atof(optarg); break;
		case 'B': server = 1; port = optarg; break;
		case 'P': port = optarg; break;
		default: return 2;
		}
	}
	conn_count = !strcmp(mode, "conn") ? CONN_COUNT :
		     !strcmp(mode, "connkeep") ? CONN_KEEP : 0;
	if (nsizes <= 0 || !port || (!server && optind >= argc) ||
	    (conn_count && ep_type != FI_EP_MSG)) {
		fprintf(stderr, "usage: bench_fi -p PROV -e msg|rdm "
			"-m lat|bw|conn|connkeep [-d DOMAIN] [-s SIZES] "
			"[-t MS] -B PORT | -P PORT HOST\n");
		return 2;
	}
	for (i = 0; i < nsizes; i++)
		if (sizes[i] > max_size)
			max_size = sizes[i];
	setup(optind < argc ? argv[optind] : NULL, port);
	if (conn_count) {
		if (server)
			conn_server();
		else
			conn_client();
	} else {
		for (i = 0; i < nsizes; i++) {
			if (!strcmp(mode, "lat"))
				lat_size(sizes[i]);
			else
				bw_size(sizes[i]);
			fflush(stdout);
		}
		/* closing right after a send could cut it off: the client
		 * leaves only when the server has said it is done */
		repost = 0;
		if (server) {
			send_msg(txbuf, 1);
			drain_tx();
		} else {
			wait_recv();
		}
	}
	if (ep)
		fi_close(&ep->fid);
	if (pep)
		fi_close(&pep->fid);
	if (mr)
		fi_close(&mr->fid);
	if (av)
		fi_close(&av->fid);
	fi_close(&txcq->fid);
	fi_close(&rxcq->fid);
	fi_close(&domain->fid);
	fi_close(&eq->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	free(txbuf);
	return 0;
}
