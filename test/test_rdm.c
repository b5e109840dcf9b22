/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_RDM behaviour that MPI runs do not isolate, through the public
 * libfabric API with endpoints in one process (each with its own
 * listening socket, so the traffic crosses real loopback TCP):
 * - a send to an address where nobody listens fails, after bounded
 *   retries, with an error completion carrying the caller's context;
 * - sends to our own address are delivered;
 * - a message from a peer not in our AV reports FI_ADDR_NOTAVAIL as its
 *   source, and the peer's fi_addr once it is inserted;
 * - a message stored before its sender was inserted matches a receive
 *   directed at the sender once it is (an MPI rank may send before the
 *   receiver has inserted it);
 * - a peer that restarts on the same address (new instance) replaces its
 *   old connection and traffic goes on;
 * - truncation, FI_PEEK miss (FI_ENOMSG) and cancel (FI_ECANCELED) keep
 *   the caller's context;
 * - two peers with more messages out to each other than their credits
 *   (all receives posted first) deliver them all: the credits go back
 *   ahead of the messages that wait for them;
 * - messages posted back to back arrive intact and in order; over TCP
 *   the first four leave at once and those behind them leave together,
 *   at the next progress call or once 256 KiB wait (TCP segments counted);
 * - a Write with FI_DELIVERY_COMPLETE and the Read behind it leave in
 *   one segment, and complete with the data in place;
 * - with FI_PROGRESS_AUTO a message lands while the application makes
 *   no call;
 * - rendezvous messages of several Read chunks land intact in receives
 *   of three buffers, three at once, and one into a short buffer is cut
 *   there (FI_ETRUNC) with nothing written past it;
 * - eager messages into receives of the most buffers fill the last one
 *   too, and longer ones are cut after it.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "tap.h"
#include "tcp_info.h"
#include "fi_api.h"

#define PORT_DEAD 23998		/* nothing listens here */
#define PORT_RESTART 23997	/* the endpoint that restarts */
#define WINDOW 64		/* credits a peer gives: eager messages */
#define RX_IOV_MOST 8		/* buffers fi_trecvv takes at most */

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;

struct rep {
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_cntr *txc;	/* set before rep_open: bound FI_SEND */
	struct sockaddr_in name;
};

/* An endpoint of dom (opened from fi0) with its CQ and AV. */
static int rep_open_in(struct rep *r, const struct fi_info *fi0,
		       struct fid_domain *dom, int port)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_info *fi = fi_dupinfo(fi0);
	size_t len = sizeof(r->name);
	int ret;

	if (!fi)
		return -FI_ENOMEM;
	if (port) {	/* a fixed address, to restart on it */
		struct sockaddr_in *sin = fi->src_addr;

		sin->sin_port = htons(port);
	}
	ret = fi_endpoint(dom, fi, &r->ep, NULL);
	if (!ret)
		ret = fi_cq_open(dom, &cq_attr, &r->cq, NULL);
	if (!ret)
		ret = fi_av_open(dom, &av_attr, &r->av, NULL);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->av->fid, 0);
	if (!ret && r->txc)
		ret = fi_ep_bind(r->ep, &r->txc->fid, FI_SEND);
	if (!ret)
		ret = fi_enable(r->ep);
	if (!ret)
		ret = fi_getname(&r->ep->fid, &r->name, &len);
	fi_freeinfo(fi);
	return ret;
}

static int rep_open(struct rep *r, int port)
{
	return rep_open_in(r, info, domain, port);
}

/* Hints for iwarp's RDM endpoints with caps, over IPv4; NULL if out of
 * memory. */
static struct fi_info *rdm_hints(uint64_t caps)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->fabric_attr->prov_name = strdup("iwarp");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->addr_format = FI_SOCKADDR_IN;
	return hints;
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

/* Reads one entry (or one error) from r's CQ, driving others too. */
static int reap(struct rep *r, struct rep *other, double secs,
		struct fi_cq_tagged_entry *e, fi_addr_t *src,
		struct fi_cq_err_entry *err)
{
	double end = tap_now() + secs;

	while (tap_now() < end) {
		ssize_t n = fi_cq_readfrom(r->cq, e, 1, src);

		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			fi_cq_readerr(r->cq, err, 0);
			return -1;
		}
		if (other)
			fi_cq_read(other->cq, NULL, 0);
	}
	return 0;
}

static void test_unreachable(void)
{
	struct sockaddr_in dead = { .sin_family = AF_INET,
				    .sin_port = htons(PORT_DEAD) };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct rep a = { 0 };
	fi_addr_t fa, src;
	int ctx, got;
	double t0;
	char buf[8] = "x";

	dead.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!tap_ok(!rep_open(&a, 0), "unreachable: endpoint opens"))
		return;
	tap_ok(fi_av_insert(a.av, &dead, 1, &fa, 0, NULL) == 1,
	       "unreachable: address inserted");
	tap_ok(!fi_tsend(a.ep, buf, sizeof(buf), NULL, fa, 7, &ctx),
	       "unreachable: fi_tsend queues");
	t0 = tap_now();
	got = reap(&a, NULL, 20, &e, &src, &err);
	tap_ok(got < 0 && err.op_context == &ctx && err.err == FI_EHOSTUNREACH,
	       "unreachable: error completion FI_EHOSTUNREACH with the "
	       "caller's context after %.1f s", tap_now() - t0);
	tap_ok(tap_now() - t0 < 15, "unreachable: retries are bounded in time");
	/* fi_cq(3): an operation without a completion still reports its
	 * error, with a NULL op_context (Open MPI < 4.1.7 crashes on it) */
	tap_ok(!fi_tinject(a.ep, buf, sizeof(buf), fa, 9),
	       "unreachable: fi_tinject queues");
	got = reap(&a, NULL, 20, &e, &src, &err);
	tap_ok(got < 0 && !err.op_context && err.err == FI_EHOSTUNREACH &&
	       (err.flags & (FI_SEND | FI_TAGGED)) == (FI_SEND | FI_TAGGED) &&
	       err.tag == 9,
	       "unreachable: the inject's error has op_context NULL, "
	       "FI_SEND|FI_TAGGED, tag 9, FI_EHOSTUNREACH (got %d, ctx %p, "
	       "err %d, tag %llu)", got, err.op_context, err.err,
	       (unsigned long long)err.tag);
	tap_ok(fi_cq_read(a.cq, &e, 1) == -FI_EAGAIN,
	       "unreachable: nothing else on the CQ");
	rep_close(&a);
}

static void test_self(void)
{
	struct fi_cq_tagged_entry e[2];
	struct fi_cq_err_entry err;
	struct rep a = { 0 };
	char out[100], in[100];
	fi_addr_t self, src = 0;
	int sctx, rctx, i, seen = 0;

	if (!tap_ok(!rep_open(&a, 0), "self: endpoint opens"))
		return;
	tap_ok(fi_av_insert(a.av, &a.name, 1, &self, 0, NULL) == 1,
	       "self: own address inserted");
	memset(out, 0x5a, sizeof(out));
	fi_trecv(a.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 3, 0, &rctx);
	fi_tsend(a.ep, out, sizeof(out), NULL, self, 3, &sctx);
	for (i = 0; i < 2; i++)
		if (reap(&a, NULL, 5, &e[i], &src, &err) == 1)
			seen |= e[i].op_context == &rctx ? 1 :
				e[i].op_context == &sctx ? 2 : 0;
	tap_ok(seen == 3 && !memcmp(in, out, sizeof(in)),
	       "self: a send to our own address is received intact");
	rep_close(&a);
}

/*
 * An inject's data must be the caller's at the time of the call, whatever
 * the caller writes into its buffer afterwards: here every inject is
 * posted before the connection exists, so all of them wait queued. Two
 * pieces each, around the 64 octets an inject keeps inside the operation.
 */
static void test_inject(void)
{
	static const size_t sizes[] = { 0, 1, 40, 63, 64, 65, 200, 256 };
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct rep a = { 0 }, b = { 0 };
	static char out[256], in[N][256];
	int ctx[N];
	fi_addr_t b_at_a;
	size_t i, j, bad = 0, got = 0;

	if (!tap_ok(!rep_open(&a, 0) && !rep_open(&b, 0),
		    "inject: two endpoints open"))
		goto out;
	fi_av_insert(a.av, &b.name, 1, &b_at_a, 0, NULL);
	for (i = 0; i < N; i++) {
		struct iovec iov[2];
		struct fi_msg_tagged m = {
			.msg_iov = iov, .iov_count = 2, .addr = b_at_a,
			.tag = 100 + i, .context = &ctx[i],
		};

		for (j = 0; j < sizes[i]; j++)
			out[j] = (char)(i * 31 + j);
		iov[0].iov_base = out;
		iov[0].iov_len = sizes[i] / 3;
		iov[1].iov_base = out + sizes[i] / 3;
		iov[1].iov_len = sizes[i] - sizes[i] / 3;
		fi_trecv(b.ep, in[i], sizeof(in[i]), NULL, FI_ADDR_UNSPEC,
			 100 + i, 0, &in[i]);
		if (fi_tsendmsg(a.ep, &m, FI_INJECT))
			bad++;
		memset(out, 0xee, sizeof(out));	/* ours again at once */
	}
	tap_ok(!bad, "inject: %d fi_tsendmsg(FI_INJECT) of 0..256 octets "
	       "in two pieces queue before the connection is up (%zu failed)",
	       N, bad);
	for (i = 0, bad = 0; i < N; i++) {
		if (reap(&b, &a, 5, &e, NULL, &err) != 1)
			break;
		j = (size_t)((char (*)[256])e.op_context - in);
		if (j >= N || e.len != sizes[j])
			break;
		got++;
		for (size_t k = 0; k < sizes[j]; k++)
			if (in[j][k] != (char)(j * 31 + k)) {
				tap_diag("inject %zu: octet %zu is %02x", j, k,
					 (unsigned char)in[j][k]);
				bad++;
				break;
			}
	}
	tap_ok(got == N && !bad, "inject: all %d arrive with the data of the "
	       "time of the call (%zu arrived, %zu corrupt)", N, got, bad);
	for (i = 0, got = 0; i < N; i++)
		if (reap(&a, &b, 5, &e, NULL, &err) == 1 &&
		    e.op_context == &ctx[i])
			got++;
	tap_ok(got == N, "inject: the sender's completions come in order "
	       "with their contexts (%zu of %d)", got, N);
out:
	rep_close(&a);
	rep_close(&b);
}

static void test_source(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct rep a = { 0 }, b = { 0 };
	fi_addr_t b_at_a, a_at_b, src = 0;
	char buf[16] = "hello", in[16];
	int ctx;

	if (!tap_ok(!rep_open(&a, 0) && !rep_open(&b, 0),
		    "source: two endpoints open"))
		goto out;
	fi_av_insert(a.av, &b.name, 1, &b_at_a, 0, NULL);
	/* b does not know a yet */
	fi_trecv(b.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 1, 0, &ctx);
	fi_tsend(a.ep, buf, sizeof(buf), NULL, b_at_a, 1, NULL);
	tap_ok(reap(&b, &a, 5, &e, &src, &err) == 1 &&
	       src == FI_ADDR_NOTAVAIL,
	       "source: a peer not in the AV is FI_ADDR_NOTAVAIL");
	fi_av_insert(b.av, &a.name, 1, &a_at_b, 0, NULL);
	fi_trecv(b.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 1, 0, &ctx);
	fi_tsend(a.ep, buf, sizeof(buf), NULL, b_at_a, 1, NULL);
	src = FI_ADDR_NOTAVAIL;
	tap_ok(reap(&b, &a, 5, &e, &src, &err) == 1 && src == a_at_b,
	       "source: once inserted, the peer's fi_addr (%llu)",
	       (unsigned long long)a_at_b);
out:
	rep_close(&a);
	rep_close(&b);
}

/*
 * d stores a message from c before c is in d's AV; a receive directed at
 * c, posted after the insert, must take it.
 */
static void test_late_insert(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct rep c = { 0 }, d = { 0 };
	fi_addr_t d_at_c, c_at_d, src = FI_ADDR_NOTAVAIL;
	char buf[16] = "early", in[16] = "";
	int ctx, i;

	if (!tap_ok(!rep_open(&c, 0) && !rep_open(&d, 0),
		    "late insert: two endpoints open"))
		goto out;
	fi_av_insert(c.av, &d.name, 1, &d_at_c, 0, NULL);
	fi_tsend(c.ep, buf, sizeof(buf), NULL, d_at_c, 7, NULL);
	/* both progress until d has stored it; nothing completes at d */
	for (i = 0; i < 200; i++) {
		fi_cq_read(c.cq, NULL, 0);
		fi_cq_read(d.cq, NULL, 0);
	}
	if (!tap_ok(fi_av_insert(d.av, &c.name, 1, &c_at_d, 0, NULL) == 1 &&
		    c_at_d != FI_ADDR_NOTAVAIL, "late insert: d inserts c"))
		goto out;
	fi_trecv(d.ep, in, sizeof(in), NULL, c_at_d, 7, 0, &ctx);
	tap_ok(reap(&d, &c, 5, &e, &src, &err) == 1 && e.op_context == &ctx &&
	       src == c_at_d && !strcmp(in, "early"),
	       "late insert: the stored message matches a receive directed "
	       "at its sender (%llu)", (unsigned long long)c_at_d);
out:
	rep_close(&c);
	rep_close(&d);
}

/*
 * b restarts on the same address with a new instance and speaks first:
 * a must let the new connection replace the old one, then both ways work.
 */
static void test_restart(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct rep a = { 0 }, b = { 0 };
	fi_addr_t b_at_a, a_at_b, src;
	char buf[32] = "", in[32];
	int round, ctx, ok = 1, got;

	if (!tap_ok(!rep_open(&a, 0), "restart: endpoint a opens"))
		return;
	for (round = 0; round < 2 && ok; round++) {
		if (rep_open(&b, PORT_RESTART)) {
			ok = 0;
			break;
		}
		if (!round)
			fi_av_insert(a.av, &b.name, 1, &b_at_a, 0, NULL);
		fi_av_insert(b.av, &a.name, 1, &a_at_b, 0, NULL);
		snprintf(buf, sizeof(buf), "b%d says hi", round);
		fi_trecv(a.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 8, 0,
			 &ctx);
		fi_tsend(b.ep, buf, sizeof(buf), NULL, a_at_b, 8, NULL);
		got = reap(&a, &b, 10, &e, &src, &err);
		ok = got == 1 && !strcmp(in, buf) && src == b_at_a;
		if (!ok) {
			tap_diag("round %d: b->a: got %d err %d src %llu '%s'",
				 round, got, got < 0 ? err.err : 0,
				 (unsigned long long)src, in);
			break;
		}
		snprintf(buf, sizeof(buf), "round %d", round);
		fi_trecv(b.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 9, 0,
			 &ctx);
		/* the first send after a restart may fail on the old
		 * connection; the next one must reach the new instance */
		fi_tsend(a.ep, buf, sizeof(buf), NULL, b_at_a, 9, NULL);
		if (reap(&b, &a, 3, &e, &src, &err) != 1) {
			fi_tsend(a.ep, buf, sizeof(buf), NULL, b_at_a, 9,
				 NULL);
			ok = reap(&b, &a, 10, &e, &src, &err) == 1;
		}
		ok = ok && !strcmp(in, buf);
		/* a's send completions (or the error of a send lost with
		 * the old connection) are not the next round's receive */
		while (reap(&a, &b, 0.2, &e, &src, &err))
			;
		rep_close(&b);
	}
	tap_ok(ok, "restart: a peer restarted on its address (new instance) "
	       "reconnects; traffic flows both ways");
	rep_close(&a);
}

static void test_errors_keep_context(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct rep a = { 0 }, b = { 0 };
	struct fi_msg_tagged peek = { 0 };
	fi_addr_t b_at_a, src;
	char big[64] = "0123456789abcdef", small[4];
	int c1, c2, c3, got;

	if (!tap_ok(!rep_open(&a, 0) && !rep_open(&b, 0),
		    "errors: two endpoints open"))
		goto out;
	fi_av_insert(a.av, &b.name, 1, &b_at_a, 0, NULL);
	fi_trecv(b.ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, 5, 0, &c1);
	fi_tsend(a.ep, big, sizeof(big), NULL, b_at_a, 5, NULL);
	got = reap(&b, &a, 5, &e, &src, &err);
	tap_ok(got < 0 && err.err == FI_ETRUNC && err.op_context == &c1 &&
	       err.olen == sizeof(big) - sizeof(small) &&
	       !memcmp(small, big, sizeof(small)),
	       "errors: truncation -> FI_ETRUNC, context, olen %zu",
	       err.olen);
	peek.tag = 77;
	peek.context = &c2;
	peek.addr = FI_ADDR_UNSPEC;
	fi_trecvmsg(b.ep, &peek, FI_PEEK);
	tap_ok(reap(&b, &a, 5, &e, &src, &err) < 0 &&
	       err.err == FI_ENOMSG && err.op_context == &c2,
	       "errors: FI_PEEK that finds nothing -> FI_ENOMSG, context");
	fi_trecv(b.ep, small, sizeof(small), NULL, FI_ADDR_UNSPEC, 88, 0,
		 &c3);
	tap_ok(fi_cancel(&b.ep->fid, &c3) == 0 &&
	       reap(&b, &a, 5, &e, &src, &err) < 0 &&
	       err.err == FI_ECANCELED && err.op_context == &c3,
	       "errors: cancel -> FI_ECANCELED, context");
out:
	rep_close(&a);
	rep_close(&b);
}

/* Shared memory carries this run (test/run runs it again with
 * FI_IWARP_SHM=0). */
static bool shm_run(void)
{
	const char *v = getenv("FI_IWARP_SHM");

	return !v || strcmp(v, "0");
}

/* Our TCP socket whose peer is `to`, or -1. */
static int sock_to(const struct sockaddr_in *to)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int found = -1;

	while (d && found < 0 && (de = readdir(d))) {
		struct sockaddr_in peer;
		socklen_t len = sizeof(peer);
		struct stat st;
		int fd = atoi(de->d_name);

		if (de->d_name[0] == '.' || fstat(fd, &st) ||
		    !S_ISSOCK(st.st_mode) ||
		    getpeername(fd, (struct sockaddr *)&peer, &len) ||
		    peer.sin_family != AF_INET)
			continue;
		if (peer.sin_port == to->sin_port &&
		    peer.sin_addr.s_addr == to->sin_addr.s_addr)
			found = fd;
	}
	if (d)
		closedir(d);
	return found;
}

static unsigned int segs_out(int fd)
{
	return tcp_info_of(fd).tcpi_segs_out;
}

/* n sends of len from a to b, tags 600 + i, posted back to back;
 * segments a's socket sent by the time the last post returned. */
static int burst_post(struct rep *a, fi_addr_t to, int fd, char *out,
		      size_t len, int n, int *ctx)
{
	unsigned int s0 = segs_out(fd);
	int i, bad = 0;

	for (i = 0; i < n; i++) {
		memset(out + (size_t)i * len, 'a' + i, len);
		if (fi_tsend(a->ep, out + (size_t)i * len, len, NULL, to,
			     600 + i, &ctx[i]))
			bad++;
	}
	return bad ? -1 : (int)(segs_out(fd) - s0);
}

/* b receives the n messages in order, a completes them in order. */
static bool burst_reap(struct rep *a, struct rep *b, const char *out,
		       char *in, size_t len, int n, const int *ctx)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int i, got = 0, sent = 0;

	for (i = 0; i < n; i++)
		if (reap(b, a, 5, &e, NULL, &err) == 1 &&
		    e.op_context == in + (size_t)i * len && e.len == len &&
		    e.tag == (uint64_t)(600 + i) &&
		    !memcmp(in + (size_t)i * len, out + (size_t)i * len, len))
			got++;
	for (i = 0; i < n; i++)
		if (reap(a, b, 5, &e, NULL, &err) == 1 &&
		    e.op_context == &ctx[i])
			sent++;
	return got == n && sent == n;
}

/*
 * A burst: sends posted back to back with no progress call between
 * them. Over TCP the first four leave at once (an application may post
 * a few and then compute without progress); those behind them wait for
 * the next progress call, or until 256 KiB wait, and leave in one
 * sendmsg. Loopback sends a segment per sendmsg here, so segments count
 * sendmsg calls.
 */
/* Connects a to b: a first message goes through and completes, and b
 * owes nothing back. */
static bool rep_warm(struct rep *a, struct rep *b, fi_addr_t b_at_a)
{
	static char w[8] = "warm", in[8];
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	fi_trecv(b->ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 1, 0, NULL);
	fi_tsend(a->ep, w, sizeof(w), NULL, b_at_a, 1, NULL);
	return reap(b, a, 5, &e, NULL, &err) == 1 &&
	       reap(a, b, 5, &e, NULL, &err) == 1;
}

/*
 * Injects between ordinary sends once connected (shared memory takes an
 * inject straight into its ring, with no send record): more than the
 * peer's credits, sent while it posts nothing, all arrive once it does,
 * in the order sent, with their tags, data and CQ data; the injects make
 * no completion of their own and count on the send counter.
 */
static void test_inject_mix(void)
{
	enum { N = 3 * WINDOW };
	static uint32_t out[N], in[N];
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct rep a = { 0 }, b = { 0 };
	struct fid_cntr *tc = NULL;
	fi_addr_t b_at_a;
	uint64_t base = 0;
	int i, bad = 0, wrong = 0, got = 0, sends = 0;

	if (!tap_ok(!fi_cntr_open(domain, &ca, &tc, NULL) && (a.txc = tc) &&
		    !rep_open(&a, 0) && !rep_open(&b, 0),
		    "inject mix: two endpoints, a send counter on one"))
		goto out;
	fi_av_insert(a.av, &b.name, 1, &b_at_a, 0, NULL);
	tap_ok(rep_warm(&a, &b, b_at_a),
	       "inject mix: a first message goes through");
	base = fi_cntr_read(tc);
	for (i = 0; i < N; i++) {
		ssize_t r;

		out[i] = 0x5eed0000u + (uint32_t)i;
		if (i % 3 == 0)
			r = fi_tinjectdata(a.ep, &out[i], sizeof(out[i]),
					   1000 + i, b_at_a, 700 + i);
		else if (i % 3 == 1)
			r = fi_tinject(a.ep, &out[i], sizeof(out[i]), b_at_a,
				       700 + i);
		else
			r = fi_tsend(a.ep, &out[i], sizeof(out[i]), NULL,
				     b_at_a, 700 + i, &out[i]);
		bad += r != 0;
	}
	for (i = 0; i < N; i++)
		fi_trecv(b.ep, &in[i], sizeof(in[i]), NULL, FI_ADDR_UNSPEC, 0,
			 ~0ull, &in[i]);
	for (i = 0; i < N && reap(&b, &a, 5, &e, NULL, &err) == 1; i++) {
		bool data = i % 3 == 0;

		got++;
		if (e.op_context != &in[i] || e.tag != 700u + (unsigned)i ||
		    in[i] != out[i] || !(e.flags & FI_REMOTE_CQ_DATA) != !data ||
		    (data && e.data != 1000u + (unsigned)i)) {
			if (!wrong++)
				tap_diag("inject mix: message %d: tag %llu, "
					 "%08x, data %llu", i,
					 (unsigned long long)e.tag, in[i],
					 (unsigned long long)e.data);
		}
	}
	tap_ok(!bad && got == N && !wrong, "inject mix: %d injects, "
	       "injects with data and sends, %d more than the credits, "
	       "arrive in order, intact (%d refused, %d arrived, %d wrong)",
	       N, N - WINDOW, bad, got, wrong);
	while (reap(&a, &b, 0.3, &e, NULL, &err) == 1)
		sends += e.tag >= 700 && e.tag < 700 + N &&
			 e.op_context == &out[e.tag - 700] &&
			 (e.tag - 700) % 3 == 2;
	tap_ok(sends == N / 3 && fi_cntr_read(tc) - base == N,
	       "inject mix: only the %d sends complete; the send counter "
	       "counts all %d (%d, +%llu)", N / 3, N, sends,
	       (unsigned long long)(fi_cntr_read(tc) - base));
out:
	rep_close(&a);
	rep_close(&b);
	if (tc)
		fi_close(&tc->fid);
}

static void test_burst(void)
{
	enum { N = 16, SMALL = 1000, BIG = 16384, NBIG = 24, FREE = 4 };
	static char out[NBIG * BIG], in[NBIG * BIG];
	struct rep a = { 0 }, b = { 0 };
	fi_addr_t b_at_a;
	int ctx[N], i, fd = -1, at_post, s0;
	bool tcp = !shm_run();

	if (!tap_ok(!rep_open(&a, 0) && !rep_open(&b, 0),
		    "burst: two endpoints open"))
		goto out;
	fi_av_insert(a.av, &b.name, 1, &b_at_a, 0, NULL);
	tap_ok(rep_warm(&a, &b, b_at_a),
	       "burst: a first message goes through");
	if (tcp)
		fd = sock_to(&b.name);
	for (i = 0; i < N; i++)
		fi_trecv(b.ep, in + (size_t)i * SMALL, SMALL, NULL,
			 FI_ADDR_UNSPEC, 600 + i, 0, in + (size_t)i * SMALL);
	s0 = (int)segs_out(fd);
	at_post = burst_post(&a, b_at_a, fd, out, SMALL, N, ctx);
	tap_ok(at_post >= 0 && burst_reap(&a, &b, out, in, SMALL, N, ctx),
	       "burst: %d sends of %d octets posted back to back arrive "
	       "intact and in order, and complete in order", N, SMALL);
	if (tcp)
		tap_ok(fd >= 0 && at_post == FREE &&
		       (int)segs_out(fd) - s0 <= FREE + 2,
		       "burst: the first %d leave at once, the %d behind them "
		       "together at the next progress call (%d segment(s) "
		       "when the posts returned, %d in all; 16 before)",
		       FREE, N - FREE, at_post, (int)segs_out(fd) - s0);
	else
		tap_skip_n(1, "burst: shared memory carries this run");
	for (i = 0; i < NBIG; i++)
		fi_trecv(b.ep, in + (size_t)i * BIG, BIG, NULL, FI_ADDR_UNSPEC,
			 600 + i, 0, in + (size_t)i * BIG);
	at_post = burst_post(&a, b_at_a, fd, out, BIG, NBIG, ctx);
	if (tcp)
		tap_ok(fd >= 0 && at_post > FREE,
		       "burst: what waits is bounded: %d sends of %d octets "
		       "put %d segment(s) on the wire before any progress "
		       "call", NBIG, BIG, at_post);
	else
		tap_skip_n(1, "burst: shared memory carries this run");
	tap_ok(at_post >= 0 && burst_reap(&a, &b, out, in, BIG, NBIG, ctx),
	       "burst: %d sends of %d octets arrive intact and in order",
	       NBIG, BIG);
out:
	rep_close(&a);
	rep_close(&b);
}

/*
 * Two peers each with more messages out to the other than it gives
 * credits (osu_bibw -W 256): every receive posted on both sides first,
 * then N sends each way, eager and then rendezvous. The credits each
 * side owes go back in a CREDIT (or FIN) that must not wait behind its
 * own messages, which wait for the other's: all 2N arrive intact and in
 * order, and all 2N sends complete, within a bound (the run hung).
 */
static bool both_ways_run(struct rep *p, fi_addr_t *to, uint8_t **out,
			  uint8_t **in, size_t len, int n)
{
	struct fi_cq_tagged_entry e;
	int s, i, sent[2] = { 0, 0 }, got[2] = { 0, 0 }, bad = 0;
	double end = tap_now() + 20;
	ssize_t r;

	for (s = 0; s < 2; s++)
		for (i = 0; i < n; i++) {
			memset(in[s] + (size_t)i * len, 0, len);
			memset(out[s] + (size_t)i * len, (int)(s * 101 + i), len);
			out[s][(size_t)i * len] = (uint8_t)i;
			if (fi_trecv(p[s].ep, in[s] + (size_t)i * len, len,
				     NULL, FI_ADDR_UNSPEC, 700 + i, 0,
				     in[s] + (size_t)i * len))
				bad++;
		}
	/* all of a's sends, then all of b's, before anything is reaped */
	for (s = 0; s < 2; s++)
		for (i = 0; i < n && tap_now() < end; i++) {
			r = fi_tsend(p[s].ep, out[s] + (size_t)i * len, len,
				     NULL, to[s], 700 + i,
				     out[s] + (size_t)i * len);
			if (r == -FI_EAGAIN) {
				fi_cq_read(p[!s].cq, NULL, 0);
				i--;
				continue;
			}
			if (r)
				bad++;
		}
	while ((sent[0] + got[0] < 2 * n || sent[1] + got[1] < 2 * n) &&
	       tap_now() < end)
		for (s = 0; s < 2; s++) {
			r = fi_cq_read(p[s].cq, &e, 1);
			if (r == -FI_EAVAIL) {
				struct fi_cq_err_entry err = { 0 };

				fi_cq_readerr(p[s].cq, &err, 0);
				bad++;
			} else if (r == 1 && (e.flags & FI_RECV)) {
				uint8_t *at = in[s] + (size_t)got[s] * len;

				/* in order: the got-th receive completes got-th */
				if (e.op_context != at || e.len != len ||
				    e.tag != (uint64_t)(700 + got[s]) ||
				    memcmp(at, out[!s] + (size_t)got[s] * len,
					   len))
					bad++;
				got[s]++;
			} else if (r == 1) {
				sent[s]++;
			}
		}
	return tap_ok(!bad && sent[0] == n && got[0] == n && sent[1] == n &&
		      got[1] == n,
		      "both ways: %d messages of %zu octets each way, more than "
		      "the credits, all posted before any is reaped: a sent "
		      "%d, received %d; b sent %d, received %d; %d bad",
		      n, len, sent[0], got[0], sent[1], got[1], bad);
}

static unsigned int data_segs_out(int fd)
{
	return tcp_info_of(fd).tcpi_data_segs_out;
}

/*
 * Messages that waited for credits leave together when the credits come
 * back. Over TCP a sends N small messages while b has no receive posted:
 * 128 go (the credits), b stores them and gives the credits back, and a
 * sends the N - 128 that waited from inside a progress call, where
 * nothing holds a post back: in a sendmsg per credit message that frees
 * them, not one each (osu_bibw -W 256 of 1 octet ran at under a third
 * of the rate). Then b receives all N, in order.
 */
static void test_credit_flush(void)
{
	enum { N = 200, LEN = 100, MOST = 6 };
	static char out[N * LEN], in[N * LEN];
	struct fi_cq_tagged_entry e;
	struct rep a = { 0 }, b = { 0 };
	fi_addr_t b_at_a;
	int ctx[N], i, fd, sent = 0, got = 0, bad;
	unsigned int d0, d1;
	double end;

	if (shm_run()) {
		tap_skip_n(3, "credit flush: shared memory carries this run");
		return;
	}
	if (!tap_ok(!rep_open(&a, 0) && !rep_open(&b, 0),
		    "credit flush: two endpoints open"))
		goto out;
	fi_av_insert(a.av, &b.name, 1, &b_at_a, 0, NULL);
	rep_warm(&a, &b, b_at_a);
	fd = sock_to(&b.name);
	bad = burst_post(&a, b_at_a, fd, out, LEN, N, ctx) < 0;
	d0 = data_segs_out(fd);
	end = tap_now() + 5;
	while (sent < N && tap_now() < end) {
		if (fi_cq_read(a.cq, &e, 1) == 1)
			sent++;
		fi_cq_read(b.cq, NULL, 0);
	}
	d1 = data_segs_out(fd);
	for (i = 0; i < N; i++)
		fi_trecv(b.ep, in + (size_t)i * LEN, LEN, NULL, FI_ADDR_UNSPEC,
			 600 + i, 0, in + (size_t)i * LEN);
	for (i = 0; i < N; i++) {
		struct fi_cq_err_entry err;

		if (reap(&b, &a, 5, &e, NULL, &err) == 1 &&
		    e.op_context == in + (size_t)i * LEN &&
		    e.tag == (uint64_t)(600 + i) &&
		    !memcmp(in + (size_t)i * LEN, out + (size_t)i * LEN, LEN))
			got++;
	}
	tap_ok(!bad && sent == N && fd >= 0 && d1 - d0 <= MOST,
	       "credit flush: %d sends of %d octets, %d more than the "
	       "credits, all went in %u data segments (at most %d; one each "
	       "for those that waited before)", N, LEN, N - 128, d1 - d0,
	       MOST);
	tap_ok(got == N, "credit flush: b then receives all %d in order "
	       "(%d)", N, got);
out:
	rep_close(&a);
	rep_close(&b);
}

static void test_both_ways(void)
{
	/* more than the 128 credits, within the 256 a queue holds */
	enum { N = 250, SMALL = 1000, BIG = 70000 };
	struct rep p[2] = { { 0 }, { 0 } };
	uint8_t *out[2], *in[2];
	fi_addr_t to[2];
	int s;

	for (s = 0; s < 2; s++) {
		out[s] = malloc((size_t)N * BIG);
		in[s] = malloc((size_t)N * BIG);
	}
	if (!tap_ok(out[0] && out[1] && in[0] && in[1] &&
		    !rep_open(&p[0], 0) && !rep_open(&p[1], 0),
		    "both ways: two endpoints open"))
		goto out;
	fi_av_insert(p[0].av, &p[1].name, 1, &to[0], 0, NULL);
	fi_av_insert(p[1].av, &p[0].name, 1, &to[1], 0, NULL);
	tap_ok(rep_warm(&p[0], &p[1], to[0]) && rep_warm(&p[1], &p[0], to[1]),
	       "both ways: a first message each way goes through");
	if (both_ways_run(p, to, out, in, SMALL, N))
		both_ways_run(p, to, out, in, BIG, N);
	else
		tap_skip_n(1, "both ways: the eager run did not end");
out:
	rep_close(&p[0]);
	rep_close(&p[1]);
	for (s = 0; s < 2; s++) {
		free(out[s]);
		free(in[s]);
	}
}

/*
 * fi_write with FI_DELIVERY_COMPLETE over TCP is a Write and the
 * zero-length Read whose answer tells its delivery: both leave in one
 * segment (a put and its flush in MPI's one-sided btl ofi path; they
 * were two sendmsg calls, two segments). The data lands, and the
 * completion comes once the Read Response is back.
 */
static void test_write_delivery(void)
{
	enum { LEN = 64, N = 8 };
	static uint8_t src[LEN], dst[N * LEN];
	struct fi_info *hints = rdm_hints(FI_TAGGED | FI_RMA), *ri = NULL;
	struct fid_domain *rd = NULL;
	struct fid_mr *mr = NULL;
	struct rep a = { 0 }, b = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t b_at_a;
	uint64_t base = 0;
	int i, fd, one = 0, done = 0, intact = 0, most = 0;

	if (!hints)
		return;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	if (!tap_ok(!fi_getinfo(TEST_API, NULL, NULL, 0, hints, &ri) &&
		    !fi_domain(fabric, ri, &rd, NULL) &&
		    !fi_mr_reg(rd, dst, sizeof(dst), FI_REMOTE_WRITE, 0, 0, 0,
			       &mr, NULL) &&
		    !rep_open_in(&a, ri, rd, 0) && !rep_open_in(&b, ri, rd, 0),
		    "write delivery: RMA endpoints and a registered target"))
		goto out;
	fi_av_insert(a.av, &b.name, 1, &b_at_a, 0, NULL);
	tap_ok(rep_warm(&a, &b, b_at_a),
	       "write delivery: a first message goes through");
	fd = shm_run() ? -1 : sock_to(&b.name);
	if (ri->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
		base = (uint64_t)(uintptr_t)dst;
	for (i = 0; i < N; i++) {
		struct iovec iov = { src, LEN };
		struct fi_rma_iov rma = { base + (uint64_t)i * LEN, LEN,
					  fi_mr_key(mr) };
		struct fi_msg_rma m = {
			.msg_iov = &iov, .iov_count = 1, .addr = b_at_a,
			.rma_iov = &rma, .rma_iov_count = 1, .context = &dst[i],
		};
		unsigned int s0 = segs_out(fd), at_post;

		memset(src, 0xa0 + i, LEN);
		if (fi_writemsg(a.ep, &m, FI_DELIVERY_COMPLETE |
				FI_COMPLETION))
			continue;
		at_post = segs_out(fd) - s0;
		one += at_post == 1;
		most = at_post > (unsigned int)most ? (int)at_post : most;
		if (reap(&a, &b, 5, &e, NULL, &err) == 1 &&
		    e.op_context == &dst[i] && (e.flags & FI_WRITE)) {
			done++;
			intact += !memcmp(dst + i * LEN, src, LEN);
		}
	}
	tap_ok(done == N && intact == N, "write delivery: %d Writes with "
	       "FI_DELIVERY_COMPLETE complete with their data in place "
	       "(%d completed, %d intact)", N, done, intact);
	if (fd >= 0)
		tap_ok(one == N, "write delivery: each Write and its Read "
		       "leave in one segment (%d of %d did, most %d)", one, N,
		       most);
	else
		tap_skip_n(1, "write delivery: shared memory carries this run");
out:
	rep_close(&a);
	rep_close(&b);
	if (mr)
		fi_close(&mr->fid);
	if (rd)
		fi_close(&rd->fid);
	fi_freeinfo(ri);
	fi_freeinfo(hints);
}

/*
 * FI_PROGRESS_AUTO: a domain opened with it drives its endpoints while
 * the application makes no call. A receive is posted on b, a sends to b
 * (a first message: the connection is set up too), and this thread only
 * watches b's buffer: it fills, and both completions are then there.
 */
static void test_auto_progress(void)
{
	static char out[3000], in[3000];
	struct fi_info *hints = rdm_hints(FI_TAGGED), *ri = NULL;
	struct fid_domain *rd = NULL;
	struct rep a = { 0 }, b = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t b_at_a;
	double end;
	bool filled = false;

	if (!hints)
		return;
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	hints->domain_attr->control_progress = FI_PROGRESS_AUTO;
	if (!tap_ok(!fi_getinfo(TEST_API, NULL, NULL, 0, hints, &ri) &&
		    ri->domain_attr->data_progress == FI_PROGRESS_AUTO &&
		    ri->domain_attr->control_progress == FI_PROGRESS_AUTO &&
		    !fi_domain(fabric, ri, &rd, NULL) &&
		    !rep_open_in(&a, ri, rd, 0) && !rep_open_in(&b, ri, rd, 0),
		    "auto progress: fi_getinfo offers FI_PROGRESS_AUTO, a "
		    "domain and two endpoints open with it"))
		goto out;
	fi_av_insert(a.av, &b.name, 1, &b_at_a, 0, NULL);
	memset(out, 'p', sizeof(out));
	memset(in, 0, sizeof(in));
	if (!tap_ok(!fi_trecv(b.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 9, 0,
			      in) &&
		    !fi_tsend(a.ep, out, sizeof(out), NULL, b_at_a, 9, out),
		    "auto progress: a receive and a send posted"))
		goto out;
	end = tap_now() + 5;
	while (!(filled = !memcmp(in, out, sizeof(in))) && tap_now() < end)
		usleep(1000);
	tap_ok(filled, "auto progress: the message lands while the "
	       "application makes no call");
	tap_ok(reap(&b, NULL, 0.5, &e, NULL, &err) == 1 && e.op_context == in &&
	       e.len == sizeof(in) && reap(&a, NULL, 0.5, &e, NULL, &err) == 1 &&
	       e.op_context == out, "auto progress: both completions are "
	       "there");
out:
	rep_close(&a);
	rep_close(&b);
	if (rd)
		fi_close(&rd->fid);
	fi_freeinfo(ri);
	fi_freeinfo(hints);
}

/*
 * Rendezvous messages larger than a Read chunk (512 KiB over TCP) into
 * receives of three buffers whose edges fall inside chunks, three
 * messages at once (more chunks than the 2 MiB window lets out at once),
 * the last into a shorter buffer: each arrives intact where it belongs,
 * the short one truncated (FI_ETRUNC) with nothing written past its
 * buffer. Over shared memory the same messages go in one Read each.
 */
static void test_chunks(void)
{
	enum { MSG = 2500000, CUT = 1600000, NMSG = 3, GUARD = 4096 };
	static const size_t part[2] = { 700001, 1048575 };
	struct rep a = { 0 }, b = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	struct iovec iov[NMSG][3];
	uint8_t *out = malloc((size_t)NMSG * MSG);
	uint8_t *in = malloc((size_t)NMSG * MSG + GUARD);
	fi_addr_t b_at_a, src;
	int i, r, got = 0, sent = 0, trunc = 0, other = 0;
	size_t k, bad = 0;

	if (!tap_ok(out && in && !rep_open(&a, 0) && !rep_open(&b, 0),
		    "chunks: two endpoints open"))
		goto out;
	fi_av_insert(a.av, &b.name, 1, &b_at_a, 0, NULL);
	rep_warm(&a, &b, b_at_a);
	for (k = 0; k < (size_t)NMSG * MSG; k++)
		out[k] = (uint8_t)(k * 7 + k / 4099);
	memset(in, 0xa5, (size_t)NMSG * MSG + GUARD);
	for (i = 0; i < NMSG; i++) {
		uint8_t *p = in + (size_t)i * MSG;

		iov[i][0] = (struct iovec){ p, part[0] };
		iov[i][1] = (struct iovec){ p + part[0], part[1] };
		iov[i][2] = (struct iovec){ p + part[0] + part[1],
					    MSG - part[0] - part[1] };
		if (i == NMSG - 1)
			r = (int)fi_trecv(b.ep, p, CUT, NULL, FI_ADDR_UNSPEC,
					  900 + i, 0, p);
		else
			r = (int)fi_trecvv(b.ep, iov[i], NULL, 3,
					   FI_ADDR_UNSPEC, 900 + i, 0, p);
		if (r)
			tap_diag("chunks: receive %d: %d", i, r);
	}
	for (i = 0; i < NMSG; i++)
		if (fi_tsend(a.ep, out + (size_t)i * MSG, MSG, NULL, b_at_a,
			     900 + i, out + (size_t)i * MSG))
			tap_diag("chunks: send %d refused", i);
	while (got + trunc + other < NMSG) {
		r = reap(&b, &a, 20, &e, &src, &err);
		if (r == 1 && e.len == MSG && e.tag >= 900 &&
		    e.tag < 900 + NMSG - 1 &&
		    e.op_context == in + (e.tag - 900) * MSG)
			got++;
		else if (r == -1 && err.err == FI_ETRUNC &&
			 err.tag == 900 + NMSG - 1 && err.len == CUT &&
			 err.olen == MSG - CUT)
			trunc++;
		else if (r)
			other++;
		else
			break;
	}
	for (k = 0; k < (size_t)(NMSG - 1) * MSG + CUT; k++)
		bad += in[k] != out[k];
	for (k = (size_t)(NMSG - 1) * MSG + CUT;
	     k < (size_t)NMSG * MSG + GUARD; k++)
		bad += in[k] != 0xa5;
	tap_ok(got == NMSG - 1 && bad == 0,
	       "chunks: %d messages of %d octets into buffers of %zu, %zu "
	       "and %zu octets arrive intact (%d complete, %zu octets wrong)",
	       NMSG - 1, MSG, part[0], part[1], (size_t)MSG - part[0] - part[1],
	       got, bad);
	tap_ok(trunc == 1 && other == 0 && bad == 0,
	       "chunks: one into a buffer of %d is cut there: FI_ETRUNC, %d "
	       "octets over, nothing written past the buffer (%d cut, %d "
	       "other completions)", CUT, MSG - CUT, trunc, other);
	while (sent < NMSG && reap(&a, &b, 20, &e, &src, &err) == 1 &&
	       e.op_context == out + (size_t)sent * MSG)
		sent++;
	tap_ok(sent == NMSG, "chunks: the %d sends complete, in order (%d)",
	       NMSG, sent);
out:
	rep_close(&a);
	rep_close(&b);
	free(out);
	free(in);
}

/*
 * Receives of as many buffers as fi_trecvv takes (8, more than the
 * iov_limit fi_getinfo offers): eager messages that fill every buffer
 * arrive whole, the last one included; longer ones fill them all and
 * are cut there (FI_ETRUNC), nothing written past; in one shared-memory
 * slot and over several.
 */
static void test_iov_max(void)
{
	enum { GUARD = 64 };
	static const struct { size_t piece, msg; } c[] = {
		{ 1, 8 }, { 1, 12 }, { 1500, 12000 }, { 1500, 13000 },
	};
	struct rep a = { 0 }, b = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	size_t n = RX_IOV_MOST, i, k;
	struct iovec iov[RX_IOV_MOST];
	uint8_t *out = malloc(16384), *in = malloc(16384 + GUARD);
	fi_addr_t b_at_a;

	if (!tap_ok(out && in && !rep_open(&a, 0) && !rep_open(&b, 0),
		    "iov max: two endpoints open"))
		goto out;
	fi_av_insert(a.av, &b.name, 1, &b_at_a, 0, NULL);
	rep_warm(&a, &b, b_at_a);
	for (k = 0; k < 16384; k++)
		out[k] = (uint8_t)(k * 13 + 5);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		size_t room = n * c[i].piece, bad = 0, fill;
		int r;

		memset(in, 0xa5, 16384 + GUARD);
		for (k = 0; k < n; k++)
			iov[k] = (struct iovec){ in + k * c[i].piece,
						 c[i].piece };
		r = (int)fi_trecvv(b.ep, iov, NULL, n, FI_ADDR_UNSPEC,
				   700 + i, 0, in);
		if (r)
			tap_diag("iov max: receive of %zu buffers: %d", n, r);
		if (!r)
			r = (int)fi_tsend(a.ep, out, c[i].msg, NULL, b_at_a,
					  700 + i, out);
		r = r ? 0 : reap(&b, &a, 10, &e, NULL, &err);
		fill = c[i].msg < room ? c[i].msg : room;
		for (k = 0; k < fill; k++)
			bad += in[k] != out[k];
		for (k = fill; k < 16384 + GUARD; k++)
			bad += in[k] != 0xa5;
		if (c[i].msg <= room)
			tap_ok(r == 1 && e.len == c[i].msg && bad == 0,
			       "iov max: %zu octets into %zu buffers of %zu "
			       "fill them all, the last one too (%d, len %zu, "
			       "%zu octets wrong)", c[i].msg, n, c[i].piece,
			       r, r == 1 ? e.len : 0, bad);
		else
			tap_ok(r == -1 && err.err == FI_ETRUNC &&
			       err.len == room && err.olen == c[i].msg - room &&
			       bad == 0,
			       "iov max: %zu octets into %zu buffers of %zu: "
			       "all filled, FI_ETRUNC with %zu over, nothing "
			       "past them (%d, err %d, olen %zu, %zu octets "
			       "wrong)", c[i].msg, n, c[i].piece,
			       c[i].msg - room, r, r == -1 ? err.err : 0,
			       r == -1 ? err.olen : 0, bad);
		reap(&a, &b, 10, &e, NULL, &err);	/* the send's */
	}
out:
	rep_close(&a);
	rep_close(&b);
	free(out);
	free(in);
}

int main(void)
{
	struct fi_info *hints;
	int ret;

	setenv("FI_IWARP_IFACE", "lo", 1);
	hints = rdm_hints(FI_TAGGED | FI_SOURCE | FI_DIRECTED_RECV);
	ret = hints ? fi_getinfo(TEST_API, NULL, NULL, 0, hints, &info) :
		      -FI_ENOMEM;
	fi_freeinfo(hints);
	if (!tap_ok(!ret, "fi_getinfo FI_EP_RDM (%d)", ret))
		return tap_done();
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (!ret)
		ret = fi_domain(fabric, info, &domain, NULL);
	if (!tap_ok(!ret, "fabric and domain (%d)", ret))
		return tap_done();
	test_self();
	test_source();
	test_inject();
	test_inject_mix();
	test_late_insert();
	test_errors_keep_context();
	test_burst();
	test_both_ways();
	test_credit_flush();
	test_write_delivery();
	test_auto_progress();
	test_chunks();
	test_iov_max();
	test_restart();
	test_unreachable();
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return tap_done();
}
