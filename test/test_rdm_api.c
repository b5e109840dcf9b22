/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Documented FI_EP_RDM behaviour (fi_iwarp(7)) through the public
 * libfabric API, between real processes over loopback TCP:
 * - FI_MULTI_RECV: pieces land back to back at the right offsets, the
 *   buffer is retired with FI_MULTI_RECV once less than
 *   FI_OPT_MIN_MULTI_RECV is left, later messages go to the next buffer;
 *   the same for messages that were waiting as unexpected and for
 *   rendezvous-sized pieces (FI_MULTI_RECV is the buffer's last event);
 * - FI_PEEK, FI_CLAIM, FI_DISCARD on the tagged unexpected queue, for
 *   eager and rendezvous messages: a claimed message arrives intact, a
 *   discarded one is never delivered;
 * - fi_senddata, fi_tsenddata, fi_injectdata, fi_tinjectdata: the 8
 *   octets of remote CQ data with FI_REMOTE_CQ_DATA, posted and
 *   unexpected, eager and rendezvous;
 * - fi_writev, fi_readv, fi_writemsg, fi_readmsg with several local
 *   iovecs of odd lengths: scatter/gather lands where it should;
 * - FI_THREAD_SAFE: four threads sending on one endpoint while other
 *   threads read its CQ, two threads posting receives and two reading
 *   completions on the peer's: every message exactly once, intact;
 * - FI_IWARP_RDM_EAGER: sizes around the threshold arrive intact, and
 *   the threshold shows in when a send to a peer that has not posted its
 *   receive completes (eager: at once; rendezvous: after the receive);
 * - FI_IWARP_RDM_EAGER_IDLE: after a ping-pong, with every credit back,
 *   a 1 MiB send (the most an EAGER carries) to a peer that has not
 *   posted its receive completes at once over TCP (eager) and only
 *   after the receive with the knob at 0 or in shared memory
 *   (rendezvous); it arrives intact;
 * - the endpoint base shared with MSG: one CQ per direction, counters
 *   for local events only, FI_GET/SETOPSFLAG and getopt/getname
 *   contracts, fi_tx/rx_size_left -FI_ENOSYS, no bind once enabled;
 * - windows of unexpected messages: their buffers are reused, so later
 *   windows fault in (next to) no pages;
 * - FI_IWARP_ALLOW_RXM: whether iwarp;ofi_rxm exists and comes before
 *   the native RDM entries, the log line that says it is off, and a
 *   message through iwarp;ofi_rxm when it is on.
 *
 * The parent never opens libfabric: every test runs in forked children
 * (a pair talking over a socket, or one alone) that set their environment
 * before their first fi_getinfo and report their checks over a socket.
 * The parent prints the checks each child owes, "not ok" for those it
 * never reported, and each child's end as a check of its own, so the
 * number of TAP lines is the same in every run.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "pattern.h"
#include "tap.h"
#include "fi_api.h"

/* ==== reporting from children ==== */

static int report_fd = -1;

static int check(int cond, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	char *p;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (p = line; *p; p++)
		if (*p == '\n')
			*p = ' ';
	if (report_fd < 0)
		return tap_ok(cond, "%s", line);
	{
		char out[1040];
		int n = snprintf(out, sizeof(out), "%d %s\n", cond ? 1 : 0,
				 line);

		/* no SIGPIPE if the parent is gone: only the provider's
		 * own sockets are to prove they never raise it */
		if (send(report_fd, out, (size_t)n, MSG_NOSIGNAL) < 0)
			return cond;
	}
	return cond;
}

/* ==== data patterns (pattern.h) ==== */

static bool pok(const void *p, size_t n, uint64_t seed, uint64_t off)
{
	return pat_diff(p, n, seed, off) == SIZE_MAX;
}

static bool all_is(const void *p, size_t n, uint8_t v)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

#define SENT 0xa5	/* what buffers hold where nothing may land */

/* ==== one process's endpoint ==== */

struct node {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t peer;
	int to, from;		/* socket to the peer process (both) */
	bool still;		/* get() leaves the endpoint alone */
	bool defer;		/* node_open leaves fi_enable to the caller */
	uint64_t mode;		/* offered in the hints */
};

static int node_open(struct node *n, uint64_t caps, enum fi_threading th)
{
	struct fi_info *hints = fi_allocinfo(), *list = NULL, *fi;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->fabric_attr->prov_name = strdup("iwarp");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->mode = n->mode;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	if (th)
		hints->domain_attr->threading = th;
	ret = fi_getinfo(TEST_API, NULL, NULL, 0, hints, &list);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	/* the native RDM endpoint, whatever FI_IWARP_ALLOW_RXM says */
	for (fi = list; fi; fi = fi->next)
		if (fi->ep_attr->type == FI_EP_RDM &&
		    !strcmp(fi->fabric_attr->prov_name, "iwarp"))
			break;
	n->info = fi ? fi_dupinfo(fi) : NULL;
	fi_freeinfo(list);
	if (!n->info)
		return -FI_ENODATA;
	ret = fi_fabric(n->info->fabric_attr, &n->fabric, NULL);
	if (!ret)
		ret = fi_domain(n->fabric, n->info, &n->domain, NULL);
	if (!ret)
		ret = fi_endpoint(n->domain, n->info, &n->ep, NULL);
	if (!ret)
		ret = fi_cq_open(n->domain, &cq_attr, &n->cq, NULL);
	if (!ret)
		ret = fi_av_open(n->domain, &av_attr, &n->av, NULL);
	if (!ret)
		ret = fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(n->ep, &n->av->fid, 0);
	if (!ret && !n->defer)
		ret = fi_enable(n->ep);
	return ret;
}

static void node_close(struct node *n)
{
	if (n->ep)
		fi_close(&n->ep->fid);
	if (n->av)
		fi_close(&n->av->fid);
	if (n->cq)
		fi_close(&n->cq->fid);
	if (n->domain)
		fi_close(&n->domain->fid);
	if (n->fabric)
		fi_close(&n->fabric->fid);
	if (n->info)
		fi_freeinfo(n->info);
	n->ep = NULL;
	n->av = NULL;
	n->cq = NULL;
	n->domain = NULL;
	n->fabric = NULL;
	n->info = NULL;
}

/* Drives progress without taking completions. */
static void progress(struct node *n)
{
	if (n->cq)
		fi_cq_read(n->cq, NULL, 0);
}

/* ==== the socket between the two processes of a pair ==== */

/* A peer that died gives EPIPE here, not a SIGPIPE. */
static int put(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t k = send(fd, p, len, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

/* Reads len octets within secs, progressing the endpoint meanwhile;
 * -1 on the peer's end or the time running out. */
static int get(struct node *n, void *buf, size_t len, double secs)
{
	double end = tap_now() + secs;
	uint8_t *p = buf;

	while (len) {
		struct pollfd pf = { .fd = n->from, .events = POLLIN };
		ssize_t k;

		if (tap_now() > end)
			return -1;
		if (!n->still)
			progress(n);
		if (poll(&pf, 1, 1) <= 0)
			continue;
		k = read(n->from, p, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

static int token_put(struct node *n, uint32_t t)
{
	return put(n->to, &t, sizeof(t));
}

/* 0 when the peer sent token `want` within secs. */
static int token_wait(struct node *n, uint32_t want, double secs)
{
	uint32_t t = 0;

	if (get(n, &t, sizeof(t), secs))
		return -1;
	return t == want ? 0 : -1;
}

/* Both sides' last step: neither closes while the other still needs it
 * (a rendezvous sender serves the Read, the receiver sends the FIN). */
#define TOK_BYE 0xb7e

static void barrier(struct node *n)
{
	token_put(n, TOK_BYE);
	token_wait(n, TOK_BYE, 20);
}

/* Exchanges endpoint names with the peer and inserts its name. */
static int node_meet(struct node *n)
{
	uint8_t mine[64], theirs[64];
	size_t len = sizeof(mine);
	uint32_t l32, r32;

	if (fi_getname(&n->ep->fid, mine, &len))
		return -1;
	l32 = (uint32_t)len;
	if (put(n->to, &l32, 4) || put(n->to, mine, len))
		return -1;
	if (get(n, &r32, 4, 20) || r32 > sizeof(theirs) ||
	    get(n, theirs, r32, 20))
		return -1;
	return fi_av_insert(n->av, theirs, 1, &n->peer, 0, NULL) == 1 ? 0 : -1;
}

static int node_up(struct node *n, uint64_t caps, enum fi_threading th)
{
	return node_open(n, caps, th) || node_meet(n) ? -1 : 0;
}

/* ==== completions ==== */

/* One completion (1), one error (-1, *err filled) or nothing in time. */
static int cq_wait(struct node *n, double secs, struct fi_cq_tagged_entry *e,
		   struct fi_cq_err_entry *err)
{
	double end = tap_now() + secs;

	do {
		ssize_t k = fi_cq_read(n->cq, e, 1);

		if (k == 1)
			return 1;
		if (k == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			if (fi_cq_readerr(n->cq, err, 0) == 1)
				return -1;
		}
	} while (tap_now() < end);
	return 0;
}

/* True if nothing at all comes on the CQ for secs. */
static bool cq_quiet(struct node *n, double secs)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	return cq_wait(n, secs, &e, &err) == 0;
}

/* Reads up to `want` completions (successes only) into e[] in CQ order
 * within secs; returns how many came, -1 if an error came. */
static int cq_collect(struct node *n, struct fi_cq_tagged_entry *e, int want,
		      double secs)
{
	double end = tap_now() + secs;
	struct fi_cq_err_entry err;
	int got = 0;

	while (got < want && tap_now() < end) {
		int r = cq_wait(n, end - tap_now(), &e[got], &err);

		if (r < 0) {
			tap_diag("error completion: %s (ctx %p)",
				 fi_strerror(err.err), err.op_context);
			return -1;
		}
		if (r == 1)
			got++;
	}
	return got;
}

/* The completion of e[0..n) with context ctx, or NULL. */
static struct fi_cq_tagged_entry *by_ctx(struct fi_cq_tagged_entry *e,
					 int n, const void *ctx)
{
	int i;

	for (i = 0; i < n; i++)
		if (e[i].op_context == ctx)
			return &e[i];
	return NULL;
}

/* ==== tagged receive with flags (peek, claim, discard) ==== */

static ssize_t trecv_flags(struct node *n, void *buf, size_t len, uint64_t tag,
			   void *ctx, uint64_t flags)
{
	struct iovec iov = { buf, len };
	struct fi_msg_tagged m = {
		.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
		.tag = tag, .ignore = 0, .context = ctx,
	};

	return fi_trecvmsg(n->ep, &m, flags);
}

/* FI_PEEK | flags for tag: 1 found (*e), 0 FI_ENOMSG, -1 anything else */
static int peek(struct node *n, uint64_t tag, uint64_t flags, void *ctx,
		void *buf, size_t len, struct fi_cq_tagged_entry *e)
{
	struct fi_cq_err_entry err;
	int got;

	if (trecv_flags(n, buf, len, tag, ctx, FI_PEEK | flags))
		return -1;
	got = cq_wait(n, 5, e, &err);
	if (got == 1 && e->op_context == ctx)
		return 1;
	if (got < 0 && err.err == FI_ENOMSG && err.op_context == ctx)
		return 0;
	return -1;
}

/* Peeks until the message is there (it may still be on its way). */
static int peek_until(struct node *n, uint64_t tag, uint64_t flags, void *ctx,
		      void *buf, size_t len, struct fi_cq_tagged_entry *e,
		      double secs)
{
	double end = tap_now() + secs;
	int r;

	while ((r = peek(n, tag, flags, ctx, buf, len, e)) == 0 &&
	       tap_now() < end)
		usleep(2000);
	return r;
}

/* Posts until accepted (the provider may ask to come back). */
#define POST(n, call)							\
	({								\
		ssize_t r_;						\
		double e_ = tap_now() + 10;				\
		while ((r_ = (call)) == -FI_EAGAIN && tap_now() < e_)	\
			progress(n);					\
		r_;							\
	})

/* ==== 1: FI_MULTI_RECV ==== */

#define MR_MIN 256
#define TOK(x) (0x7000u + (x))

static const size_t mr_p1[] = { 1000, 1, 999, 1200, 700, 300, 50 };
static const size_t mr_p2[] = { 2000, 1500, 10, 300 };
#define MR_RNDV 70000
#define MR_SMALL 100

static ssize_t post_multi(struct node *n, void *buf, size_t len, void *ctx)
{
	struct iovec iov = { buf, len };
	struct fi_msg m = {
		.msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
		.context = ctx,
	};

	return fi_recvmsg(n->ep, &m, FI_MULTI_RECV);
}

/* The piece of message (len, seed) at buf+off, as its completion e says. */
static bool piece_ok(const struct fi_cq_tagged_entry *e, const void *ctx,
		     uint8_t *base, size_t off, size_t len, uint64_t seed)
{
	return e && e->op_context == ctx && (uint8_t *)e->buf == base + off &&
	       e->len == len && (e->flags & (FI_RECV | FI_MSG)) ==
				(FI_RECV | FI_MSG) &&
	       pok(base + off, len, seed, 0);
}

/* Which completion of e[0..k) has buf at base+off (NULL: none). */
static struct fi_cq_tagged_entry *at_buf(struct fi_cq_tagged_entry *e, int k,
					 uint8_t *addr)
{
	int i;

	for (i = 0; i < k; i++)
		if ((uint8_t *)e[i].buf == addr)
			return &e[i];
	return NULL;
}

/*
 * Rendezvous piece then eager piece into one buffer the eager one
 * retires: both in place, and FI_MULTI_RECV only on the buffer's last
 * completion (the application owns the buffer once it sees it).
 */
static void mr_rndv_round(const char *how, uint8_t *m, void *ctx,
			  struct fi_cq_tagged_entry *e, int got, uint64_t seed)
{
	struct fi_cq_tagged_entry *r = at_buf(e, got, m);
	struct fi_cq_tagged_entry *s = at_buf(e, got, m + MR_RNDV);
	int i, multi = 0, last = -1;

	check(got == 2 && piece_ok(r, ctx, m, 0, MR_RNDV, seed) &&
	      piece_ok(s, ctx, m, MR_RNDV, MR_SMALL, seed + 1),
	      "multi_recv: %s: a %d-octet rendezvous piece at offset 0 and "
	      "a %d-octet eager one at %d, intact (%d completions)", how,
	      MR_RNDV, MR_SMALL, MR_RNDV, got);
	for (i = 0; i < got; i++)
		if (e[i].flags & FI_MULTI_RECV) {
			multi++;
			last = i;
		}
	check(got == 2 && multi == 1 && last == got - 1,
	      "multi_recv: %s: exactly one FI_MULTI_RECV, on the buffer's "
	      "last completion (%d of them, last at %d of %d)", how, multi,
	      last, got);
}

/* Shared memory carries this run (test/run also runs FI_IWARP_SHM=0). */
static bool shm_run(void)
{
	const char *v = getenv("FI_IWARP_SHM");

	return !v || strcmp(v, "0");
}

/*
 * The TCP run's cancel-while-read case, over shared memory: the receiver
 * copies a rendezvous piece from the sender's memory itself, so the piece
 * lands while the sender makes no progress at all (it waits for TOK(7));
 * the buffer, with room left, is then cancelled.
 */
static void mr_cancel_shm(struct node *n, uint8_t *m5, size_t size, int *c5,
			  struct fi_cq_tagged_entry *e)
{
	struct fi_cq_err_entry err;
	uint8_t mark[8];
	int cm, got, k;

	memset(m5, SENT, size);
	k = post_multi(n, m5, size - 64, c5) ? -1 : 0;
	token_put(n, TOK(6));
	if (!k)
		k = token_wait(n, TOK(6), 10);
	got = k ? 0 : cq_collect(n, e, 1, 10);
	check(got == 1 && piece_ok(&e[0], c5, m5, 0, MR_RNDV, 500) &&
	      !(e[0].flags & FI_MULTI_RECV),
	      "multi_recv (shared memory): the rendezvous piece is read by "
	      "the receiver alone while the sender makes no progress, and "
	      "lands intact (%d)", got);
	got = fi_cancel(&n->ep->fid, c5) ? 0 : cq_wait(n, 5, &e[0], &err);
	if (got == -1 && err.op_context == c5 && err.err == FI_ECANCELED)
		got = fi_trecv(n->ep, mark, sizeof(mark), NULL,
			       FI_ADDR_UNSPEC, 0x79, 0, &cm) ? 0 :
		      cq_collect(n, e, 1, 5) == 1 && e[0].op_context == &cm ?
		      2 : 0;
	token_put(n, TOK(7));
	check(got == 2 && all_is(m5 + MR_RNDV, size - MR_RNDV, SENT) &&
	      cq_quiet(n, 0.2),
	      "multi_recv (shared memory): cancelling the buffer then gives "
	      "FI_ECANCELED, the marker comes to its own receive, nothing "
	      "more (%d)", got);
}

static int mr_rx(struct node *n)
{
	size_t min = MR_MIN, opt = 0, optlen = sizeof(opt), off;
	struct fi_cq_tagged_entry e[8], pe;
	static uint8_t m1[4096 + 64], m2[512 + 64], m3[64 + 64];
	static uint8_t m4[4000 + 64], m5[MR_RNDV + MR_SMALL + 200 + 64];
	static uint8_t m6[MR_RNDV + MR_SMALL + 200 + 64];
	uint8_t mark[8];
	int c1, c2, c3, c4, c5, c6, cm, k, got, bad, i, multi, nflag;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED | FI_MULTI_RECV, 0),
		   "multi_recv: endpoint with FI_MULTI_RECV up, peer known"))
		return 1;
	k = fi_setopt(&n->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
		      &min, sizeof(min)) ||
	    fi_getopt(&n->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
		      &opt, &optlen);
	check(!k && opt == MR_MIN, "multi_recv: FI_OPT_MIN_MULTI_RECV set to "
	      "%d reads back %zu", MR_MIN, opt);

	/* posted first: 1000+1+999+1200+700 leave 196 < 256 of 4096; the
	 * next 300 retire a 512 buffer; the 50 after go to a plain one */
	memset(m1, SENT, sizeof(m1));
	memset(m2, SENT, sizeof(m2));
	memset(m3, SENT, sizeof(m3));
	if (post_multi(n, m1, 4096, &c1) || post_multi(n, m2, 512, &c2) ||
	    fi_recv(n->ep, m3, 64, NULL, FI_ADDR_UNSPEC, &c3))
		tap_diag("multi_recv: posting failed");
	token_put(n, TOK(1));
	got = cq_collect(n, e, 7, 10);
	check(got == 7, "multi_recv: 7 messages into posted buffers: %d "
	      "completions", got);
	bad = 0;
	multi = -1;
	nflag = 0;
	for (k = 0, off = 0; k < 5; k++) {
		struct fi_cq_tagged_entry *p = at_buf(e, got < 0 ? 0 : got,
						      m1 + off);

		if (!piece_ok(p, &c1, m1, off, mr_p1[k], 100 + k)) {
			tap_diag("multi_recv: message %d not at offset %zu", k,
				 off);
			bad++;
		}
		if (p && (p->flags & FI_MULTI_RECV)) {
			multi = k;
			nflag++;
		}
		off += mr_p1[k];
	}
	check(!bad, "multi_recv: the first 5 land back to back at offsets 0, "
	      "1000, 1001, 2000, 3200 of the first buffer, with their lengths "
	      "and data");
	/* the retiring completion is the first buffer's last one */
	for (i = 0, k = -1; got > 0 && i < got; i++)
		if (e[i].op_context == &c1)
			k = i;
	check(multi == 4 && nflag == 1 && k >= 0 &&
	      (e[k].flags & FI_MULTI_RECV),
	      "multi_recv: FI_MULTI_RECV on the 5th (196 octets left < %d), "
	      "the buffer's last completion, only (flag on message %d, %d "
	      "flagged)", MR_MIN, multi, nflag);
	{
		struct fi_cq_tagged_entry *p = by_ctx(e, got < 0 ? 0 : got,
						      &c2);

		check(piece_ok(p, &c2, m2, 0, 300, 105) &&
		      (p->flags & FI_MULTI_RECV),
		      "multi_recv: the next message goes to the next buffer, "
		      "at offset 0, and retires it (212 left) with "
		      "FI_MULTI_RECV");
	}
	{
		struct fi_cq_tagged_entry *p = by_ctx(e, got < 0 ? 0 : got,
						      &c3);

		check(p && p->len == 50 && !(p->flags & FI_MULTI_RECV) &&
		      pok(m3, 50, 106, 0),
		      "multi_recv: the one after that goes to the plain "
		      "receive posted behind them");
	}
	check(all_is(m1 + 3900, sizeof(m1) - 3900, SENT) &&
	      all_is(m2 + 300, sizeof(m2) - 300, SENT) &&
	      all_is(m3 + 50, sizeof(m3) - 50, SENT),
	      "multi_recv: nothing written past the pieces");

	/* unexpected first: 3 waiting messages taken when the buffer is
	 * posted, which stays posted (490 left) until a 4th retires it */
	token_put(n, TOK(2));
	k = token_wait(n, TOK(2), 10);
	if (!k)
		k = peek_until(n, 0x77, 0, &cm, NULL, 0, &pe, 5) == 1 ? 0 : -1;
	memset(m4, SENT, sizeof(m4));
	if (k || post_multi(n, m4, 4000, &c4))
		tap_diag("multi_recv: unexpected round not set up");
	got = cq_collect(n, e, 3, 5);
	bad = got != 3;
	for (k = 0, off = 0; k < 3; k++) {
		struct fi_cq_tagged_entry *p = at_buf(e, got < 0 ? 0 : got,
						      m4 + off);

		if (!piece_ok(p, &c4, m4, off, mr_p2[k], 200 + k) ||
		    (p->flags & FI_MULTI_RECV))
			bad++;
		off += mr_p2[k];
	}
	check(!bad, "multi_recv: 3 messages that came before the buffer "
	      "land at offsets 0, 2000, 3500 when it is posted, without "
	      "FI_MULTI_RECV (%d completions)", got);
	token_put(n, TOK(3));
	got = cq_collect(n, e, 1, 5);
	check(got == 1 && piece_ok(&e[0], &c4, m4, 3510, 300, 203) &&
	      (e[0].flags & FI_MULTI_RECV) &&
	      all_is(m4 + 3810, sizeof(m4) - 3810, SENT),
	      "multi_recv: the buffer left posted takes the next message at "
	      "offset 3510 and retires (190 left) with FI_MULTI_RECV");
	got = fi_trecv(n->ep, mark, sizeof(mark), NULL, FI_ADDR_UNSPEC, 0x77,
		       0, &cm) ? 0 : cq_collect(n, e, 1, 5);
	check(got == 1 && e[0].op_context == &cm && e[0].len == 8,
	      "multi_recv: the tagged marker is still there for a tagged "
	      "receive");

	/* rendezvous pieces, posted: 70000 then 100 of 70300 leave 200 */
	memset(m5, SENT, sizeof(m5));
	if (post_multi(n, m5, MR_RNDV + MR_SMALL + 200, &c5))
		tap_diag("multi_recv: posting failed");
	token_put(n, TOK(4));
	got = cq_collect(n, e, 2, 10);
	mr_rndv_round("posted", m5, &c5, e, got, 300);

	/* the same when both wait as unexpected when the buffer comes */
	token_put(n, TOK(5));
	k = token_wait(n, TOK(5), 10);
	if (!k)
		k = peek_until(n, 0x78, 0, &cm, NULL, 0, &pe, 5) == 1 ? 0 : -1;
	memset(m6, SENT, sizeof(m6));
	if (k || post_multi(n, m6, MR_RNDV + MR_SMALL + 200, &c6))
		tap_diag("multi_recv: unexpected rendezvous round not set up");
	got = cq_collect(n, e, 2, 10);
	mr_rndv_round("unexpected", m6, &c6, e, got, 400);
	got = fi_trecv(n->ep, mark, sizeof(mark), NULL, FI_ADDR_UNSPEC, 0x78,
		       0, &cm) ? 0 : cq_collect(n, e, 1, 5);
	check(got == 1 && e[0].op_context == &cm && cq_quiet(n, 0.2),
	      "multi_recv: the second marker received, nothing else on the "
	      "CQ");

	if (shm_run()) {
		mr_cancel_shm(n, m5, sizeof(m5), &c5, e);
		barrier(n);
		node_close(n);
		return 0;
	}
	/*
	 * Cancel while a rendezvous piece is still being read: the sender
	 * posts it and a marker, then stops progressing, so our Read stays
	 * unanswered; once the marker is here the piece exists. The buffer
	 * cancels; the piece still lands and releases the buffer.
	 */
	memset(m5, SENT, sizeof(m5));
	k = post_multi(n, m5, sizeof(m5) - 64, &c5) ? -1 : 0;
	token_put(n, TOK(6));
	if (!k)
		k = token_wait(n, TOK(6), 10);
	if (!k)
		k = peek_until(n, 0x79, 0, &cm, NULL, 0, &pe, 5) == 1 ? 0 : -1;
	{
		struct fi_cq_err_entry err;

		got = k || fi_cancel(&n->ep->fid, &c5) ? 0 :
		      cq_wait(n, 5, &e[0], &err);
		check(got == -1 && err.op_context == &c5 &&
		      err.err == FI_ECANCELED,
		      "multi_recv: cancelling a buffer whose rendezvous piece "
		      "is still being read: FI_ECANCELED (%d)", got);
	}
	got = fi_trecv(n->ep, mark, sizeof(mark), NULL, FI_ADDR_UNSPEC, 0x79,
		       0, &cm) ? 0 : cq_collect(n, e, 1, 5);
	token_put(n, TOK(7));	/* the sender answers our Read now */
	if (got == 1)
		got = cq_collect(n, e, 1, 10);
	check(got == 1 && piece_ok(&e[0], &c5, m5, 0, MR_RNDV, 500) &&
	      (e[0].flags & FI_MULTI_RECV) &&
	      all_is(m5 + MR_RNDV, sizeof(m5) - MR_RNDV, SENT) &&
	      cq_quiet(n, 0.2),
	      "multi_recv: the piece then lands intact and releases the "
	      "cancelled buffer with FI_MULTI_RECV, nothing more after it");
	barrier(n);
	node_close(n);
	return 0;
}

/* Sends count messages (lengths len[], pattern seed0+i) untagged. */
static int send_some(struct node *n, const size_t *len, int count,
		     uint64_t seed0, uint8_t **bufs, int *ctx)
{
	int i, bad = 0;

	for (i = 0; i < count; i++) {
		bufs[i] = malloc(len[i] ? len[i] : 1);
		pat_fill(bufs[i], len[i], seed0 + (uint64_t)i, 0);
		if (POST(n, fi_send(n->ep, bufs[i], len[i], NULL, n->peer,
				    &ctx[i])))
			bad++;
	}
	return bad;
}

/* Waits for count send completions with contexts ctx[0..count). */
static bool sends_done(struct node *n, int *ctx, int count, double secs)
{
	struct fi_cq_tagged_entry e[16];
	int got = cq_collect(n, e, count, secs), i;

	if (got != count)
		return false;
	for (i = 0; i < count; i++)
		if (!by_ctx(e, got, &ctx[i]))
			return false;
	return true;
}

static void free_bufs(uint8_t **bufs, int count)
{
	int i;

	for (i = 0; i < count; i++) {
		free(bufs[i]);
		bufs[i] = NULL;
	}
}

static int mr_tx(struct node *n)
{
	uint8_t *bufs[8] = { NULL }, mark[8] = "marker";
	size_t l[2] = { MR_RNDV, MR_SMALL };
	int ctx[8];
	bool ok;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "multi_recv sender: endpoint up, peer known"))
		return 1;
	ok = !token_wait(n, TOK(1), 10) &&
	     !send_some(n, mr_p1, 7, 100, bufs, ctx) &&
	     sends_done(n, ctx, 7, 10);
	free_bufs(bufs, 7);
	check(ok, "multi_recv sender: 7 sends complete");

	ok = !token_wait(n, TOK(2), 10) &&
	     !send_some(n, mr_p2, 3, 200, bufs, ctx) &&
	     !POST(n, fi_tsend(n->ep, mark, 8, NULL, n->peer, 0x77, &ctx[3])) &&
	     sends_done(n, ctx, 4, 10);
	ok = !token_put(n, TOK(2)) && ok;
	free_bufs(bufs, 3);
	ok = !token_wait(n, TOK(3), 10) &&
	     !send_some(n, mr_p2 + 3, 1, 203, bufs, ctx) &&
	     sends_done(n, ctx, 1, 10) && ok;
	free_bufs(bufs, 1);
	check(ok, "multi_recv sender: 4 sends for the unexpected round and "
	      "the marker complete");

	ok = !token_wait(n, TOK(4), 10) && !send_some(n, l, 2, 300, bufs, ctx);
	ok = sends_done(n, ctx, 2, 10) && ok;
	free_bufs(bufs, 2);
	check(ok, "multi_recv sender: rendezvous and eager send complete");

	ok = !token_wait(n, TOK(5), 10) &&
	     !send_some(n, l, 2, 400, bufs, ctx) &&
	     !POST(n, fi_tsend(n->ep, mark, 8, NULL, n->peer, 0x78, &ctx[2]));
	ok = !token_put(n, TOK(5)) && ok;
	/* the small one and the marker complete at once, the rendezvous
	 * one when the buffer is posted */
	ok = sends_done(n, ctx, 3, 10) && ok;
	free_bufs(bufs, 2);
	check(ok, "multi_recv sender: the unexpected rendezvous round's "
	      "sends complete");

	/* a rendezvous message and a marker, then no progress until the
	 * receiver cancelled its buffer (posting writes them at once) */
	ok = !token_wait(n, TOK(6), 10) &&
	     !send_some(n, l, 1, 500, bufs, ctx) &&
	     !POST(n, fi_tsend(n->ep, mark, 8, NULL, n->peer, 0x79, &ctx[1]));
	n->still = true;
	ok = !token_put(n, TOK(6)) && !token_wait(n, TOK(7), 20) && ok;
	n->still = false;
	ok = sends_done(n, ctx, 2, 10) && ok;
	free_bufs(bufs, 1);
	check(ok, "multi_recv sender: the rendezvous send into the cancelled "
	      "buffer completes");
	barrier(n);
	node_close(n);
	return 0;
}

/* ==== 2: FI_PEEK, FI_CLAIM, FI_DISCARD ==== */

#define PC_T(k) (0x1000ull + (k))
#define PC_DATA 0xd1d2d3d4d5d6d7d8ull

/* generation 1: tag k+1, length, seed 10+k+1 */
static const size_t pc_g1[] = { 1000, 200000, 500, 150000, 700, 100000 };
/* generation 2 for tags 3..6 */
static const size_t pc_g2[] = { 600, 90000, 40, 80000 };

/* FI_PEEK for a message that must not be there (any more) */
static bool gone(struct node *n, uint64_t tag)
{
	struct fi_cq_tagged_entry e;
	int ctx;

	return peek(n, tag, 0, &ctx, NULL, 0, &e) == 0;
}

static int pc_rx(struct node *n)
{
	struct fi_cq_tagged_entry e, es[8];
	struct fi_cq_err_entry err;
	static uint8_t buf[200000 + 64], junk[1000];
	int k1, k2, k3, k4, k5, k6, kx, x1, ctx[4], r, got, i, bad;
	bool ok;

	memset(&e, 0, sizeof(e));
	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "peek: endpoint up, peer known"))
		return 1;
	/* nothing sent yet */
	r = peek(n, PC_T(1), 0, &kx, NULL, 0, &e);
	check(r == 0, "peek: FI_PEEK with nothing there: FI_ENOMSG with the "
	      "context (%d)", r);
	token_put(n, TOK(10));
	if (token_wait(n, TOK(10), 10))
		tap_diag("peek: the sender did not say it sent");

	r = peek_until(n, PC_T(1), 0, &k1, NULL, 0, &e, 5);
	check(r == 1 && (e.flags & (FI_RECV | FI_TAGGED)) ==
			(FI_RECV | FI_TAGGED) && e.len == pc_g1[0] &&
	      e.tag == PC_T(1) && (e.flags & FI_REMOTE_CQ_DATA) &&
	      e.data == PC_DATA,
	      "peek: eager message found: FI_RECV|FI_TAGGED, length %zu, "
	      "tag, FI_REMOTE_CQ_DATA and its data", (size_t)e.len);
	r = peek(n, PC_T(1), 0, &k1, NULL, 0, &e);
	check(r == 1 && e.len == pc_g1[0],
	      "peek: a peek does not take the message: found again");
	r = peek_until(n, PC_T(2), 0, &k2, NULL, 0, &e, 5);
	check(r == 1 && e.len == pc_g1[1] && e.tag == PC_T(2) &&
	      !(e.flags & FI_REMOTE_CQ_DATA),
	      "peek: rendezvous message found with its length %zu, tag, no "
	      "remote CQ data", (size_t)e.len);

	/* claim the eager one; a plain receive must not get it */
	r = peek(n, PC_T(1), FI_CLAIM, &k1, NULL, 0, &e);
	check(r == 1 && e.op_context == &k1 && gone(n, PC_T(1)),
	      "peek: FI_PEEK|FI_CLAIM takes it: later peeks miss it");
	memset(junk, SENT, sizeof(junk));
	ok = !fi_trecv(n->ep, junk, sizeof(junk), NULL, FI_ADDR_UNSPEC,
		       PC_T(1), 0, &x1) && cq_quiet(n, 0.2);
	check(ok, "peek: a plain receive for the claimed tag gets nothing");
	memset(buf, SENT, sizeof(buf));
	got = trecv_flags(n, buf, pc_g1[0], PC_T(1), &k1, FI_CLAIM) ? -1 :
	      cq_wait(n, 5, &e, &err);
	check(got == 1 && e.op_context == &k1 && e.len == pc_g1[0] &&
	      e.tag == PC_T(1) && (e.flags & FI_REMOTE_CQ_DATA) &&
	      e.data == PC_DATA && pok(buf, pc_g1[0], 11, 0) &&
	      all_is(buf + pc_g1[0], 64, SENT),
	      "peek: FI_CLAIM with the peek's context receives it intact, "
	      "with its data");
	got = fi_cancel(&n->ep->fid, &x1) ? 0 : cq_wait(n, 5, &e, &err);
	check(got == -1 && err.op_context == &x1 && err.err == FI_ECANCELED &&
	      all_is(junk, sizeof(junk), SENT),
	      "peek: the plain receive then cancels untouched "
	      "(FI_ECANCELED)");

	/* claim the rendezvous one */
	r = peek(n, PC_T(2), FI_CLAIM, &k2, NULL, 0, &e);
	memset(buf, SENT, sizeof(buf));
	got = r != 1 || trecv_flags(n, buf, pc_g1[1], PC_T(2), &k2,
				    FI_CLAIM) ? -1 : cq_wait(n, 10, &e, &err);
	check(got == 1 && e.op_context == &k2 && e.len == pc_g1[1] &&
	      pok(buf, pc_g1[1], 12, 0),
	      "peek: rendezvous message claimed then received intact "
	      "(%zu octets)", pc_g1[1]);

	/* discards: peek+discard and claim+discard, eager and rendezvous */
	memset(buf, SENT, sizeof(buf));
	r = peek(n, PC_T(3), FI_DISCARD, &k3, buf, sizeof(buf), &e);
	check(r == 1 && e.op_context == &k3 && all_is(buf, sizeof(buf), SENT) &&
	      gone(n, PC_T(3)),
	      "peek: FI_PEEK|FI_DISCARD drops an eager message: completes, "
	      "writes nothing, the message is gone");
	memset(buf, SENT, sizeof(buf));
	r = peek(n, PC_T(4), FI_CLAIM, &k4, NULL, 0, &e);
	got = r != 1 || trecv_flags(n, buf, sizeof(buf), PC_T(4), &k4,
				    FI_CLAIM | FI_DISCARD) ? -1 :
	      cq_wait(n, 5, &e, &err);
	check(got == 1 && e.op_context == &k4 &&
	      all_is(buf, sizeof(buf), SENT) && gone(n, PC_T(4)),
	      "peek: FI_CLAIM|FI_DISCARD drops a claimed rendezvous message");
	memset(buf, SENT, sizeof(buf));
	r = peek(n, PC_T(5), FI_CLAIM, &k5, NULL, 0, &e);
	got = r != 1 || trecv_flags(n, buf, sizeof(buf), PC_T(5), &k5,
				    FI_CLAIM | FI_DISCARD) ? -1 :
	      cq_wait(n, 5, &e, &err);
	check(got == 1 && e.op_context == &k5 &&
	      all_is(buf, sizeof(buf), SENT) && gone(n, PC_T(5)),
	      "peek: FI_CLAIM|FI_DISCARD drops a claimed eager message");
	memset(buf, SENT, sizeof(buf));
	r = peek(n, PC_T(6), FI_DISCARD, &k6, buf, sizeof(buf), &e);
	check(r == 1 && e.op_context == &k6 && all_is(buf, sizeof(buf), SENT) &&
	      gone(n, PC_T(6)),
	      "peek: FI_PEEK|FI_DISCARD drops a rendezvous message");

	/* second generation on the discarded tags: only it arrives */
	{
		static uint8_t rb[4][200000];

		bad = 0;
		for (i = 0; i < 4; i++) {
			memset(rb[i], SENT, sizeof(rb[i]));
			if (fi_trecv(n->ep, rb[i], sizeof(rb[i]), NULL,
				     FI_ADDR_UNSPEC, PC_T(3 + i), 0, &ctx[i]))
				bad++;
		}
		token_put(n, TOK(11));
		got = bad ? 0 : cq_collect(n, es, 4, 10);
		for (i = 0; i < 4; i++) {
			struct fi_cq_tagged_entry *p = by_ctx(es, got < 0 ? 0 :
							      got, &ctx[i]);

			if (!p || p->len != pc_g2[i] ||
			    !pok(rb[i], pc_g2[i], 20 + 3 + i, 0) ||
			    !all_is(rb[i] + pc_g2[i], 64, SENT))
				bad++;
		}
		check(got == 4 && !bad,
		      "peek: receives on the 4 discarded tags get the next "
		      "messages (eager and rendezvous), not the discarded "
		      "ones");
		check(cq_quiet(n, 0.3),
		      "peek: no discarded message is ever delivered");
	}
	barrier(n);
	node_close(n);
	return 0;
}

static int pc_tx(struct node *n)
{
	uint8_t *g1[6], *g2[4];
	int c1[6], c2[4], i, bad = 0;
	bool ok;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "peek sender: endpoint up, peer known"))
		return 1;
	if (token_wait(n, TOK(10), 10))
		bad++;
	for (i = 0; i < 6; i++) {
		g1[i] = malloc(pc_g1[i]);
		pat_fill(g1[i], pc_g1[i], 10 + 1 + i, 0);
		if (i == 0 ?
		    POST(n, fi_tsenddata(n->ep, g1[i], pc_g1[i], NULL, PC_DATA,
					 n->peer, PC_T(1), &c1[i])) :
		    POST(n, fi_tsend(n->ep, g1[i], pc_g1[i], NULL, n->peer,
				     PC_T(1 + i), &c1[i])))
			bad++;
	}
	token_put(n, TOK(10));
	ok = !bad && sends_done(n, c1, 6, 20);
	check(ok, "peek sender: the 6 sends complete, the discarded "
	      "rendezvous ones too");
	bad = token_wait(n, TOK(11), 20) ? 1 : 0;
	for (i = 0; i < 4; i++) {
		g2[i] = malloc(pc_g2[i]);
		pat_fill(g2[i], pc_g2[i], 20 + 3 + i, 0);
		if (!bad && POST(n, fi_tsend(n->ep, g2[i], pc_g2[i], NULL,
					     n->peer, PC_T(3 + i), &c2[i])))
			bad++;
	}
	ok = !bad && sends_done(n, c2, 4, 10);
	check(ok, "peek sender: the 4 second-generation sends complete");
	barrier(n);
	free_bufs(g1, 6);
	free_bufs(g2, 4);
	node_close(n);
	return 0;
}

/* ==== 3: remote CQ data ==== */

#define CD(i) (0x0123456789abcdefull ^ ((uint64_t)(i) * 0x1111111111111111ull))

enum { CD_SEND, CD_SEND0, CD_SENDR, CD_INJ, CD_PLAIN, CD_TSEND, CD_TSENDR,
       CD_TINJ, CD_UINJ, CD_UTSENDR, CD_UTINJ, CD_N };

static const struct {
	const char *what;
	size_t len;
	bool tagged;
	bool data;
} cd_msg[CD_N] = {
	[CD_SEND] = { "fi_senddata eager", 777, false, true },
	[CD_SEND0] = { "fi_senddata of 0 octets", 0, false, true },
	[CD_SENDR] = { "fi_senddata rendezvous", 100000, false, true },
	[CD_INJ] = { "fi_injectdata", 200, false, true },
	[CD_PLAIN] = { "fi_send (no data)", 64, false, false },
	[CD_TSEND] = { "fi_tsenddata eager", 3000, true, true },
	[CD_TSENDR] = { "fi_tsenddata rendezvous", 70000, true, true },
	[CD_TINJ] = { "fi_tinjectdata", 256, true, true },
	[CD_UINJ] = { "unexpected fi_injectdata", 100, false, true },
	[CD_UTSENDR] = { "unexpected fi_tsenddata rendezvous", 80000, true,
			 true },
	[CD_UTINJ] = { "unexpected fi_tinjectdata", 32, true, true },
};

#define CD_TAG(i) (0x300ull + (i))
#define CD_BUF 100000

/* Receives for messages from..to-1 of cd_msg[]. */
static void cd_post(struct node *n, uint8_t (*rb)[CD_BUF + 64], int *ctx,
		    int from, int to)
{
	int i;

	for (i = from; i < to; i++)
		if (cd_msg[i].tagged ?
		    fi_trecv(n->ep, rb[i], CD_BUF, NULL, FI_ADDR_UNSPEC,
			     CD_TAG(i), 0, &ctx[i]) :
		    fi_recv(n->ep, rb[i], CD_BUF, NULL, FI_ADDR_UNSPEC,
			    &ctx[i]))
			tap_diag("cq_data: receive %d not posted", i);
}

static int cd_rx(struct node *n)
{
	static uint8_t rb[CD_N][CD_BUF + 64];
	struct fi_cq_tagged_entry e[CD_N], pe;
	int ctx[CD_N], got, i, pctx;

	bool up = !node_up(n, FI_MSG | FI_TAGGED, 0);
	size_t cds = up ? n->info->domain_attr->cq_data_size : 0;

	if (!check(up && cds >= 8, "cq_data: endpoint up, cq_data_size %zu "
		   ">= 8", cds))
		return 1;
	for (i = 0; i < CD_N; i++)
		memset(rb[i], SENT, sizeof(rb[i]));
	/* receives for the first 8 first (untagged match in order) */
	cd_post(n, rb, ctx, 0, CD_UINJ);
	token_put(n, TOK(20));
	got = cq_collect(n, e, CD_UINJ, 10);
	/* the rest after they arrived */
	if (token_wait(n, TOK(20), 10) ||
	    peek_until(n, CD_TAG(CD_UTINJ), 0, &pctx, NULL, 0, &pe, 5) != 1)
		tap_diag("cq_data: unexpected messages not seen");
	cd_post(n, rb, ctx, CD_UINJ, CD_N);
	if (got == CD_UINJ) {
		int more = cq_collect(n, e + got, CD_N - CD_UINJ, 10);

		got = more < 0 ? more : got + more;
	}
	for (i = 0; i < CD_N; i++) {
		struct fi_cq_tagged_entry *p = by_ctx(e, got < 0 ? 0 : got,
						      &ctx[i]);
		uint64_t want = FI_RECV | (cd_msg[i].tagged ? FI_TAGGED :
							      FI_MSG);

		check(p && (p->flags & want) == want &&
		      !!(p->flags & FI_REMOTE_CQ_DATA) == cd_msg[i].data &&
		      (!cd_msg[i].data || p->data == CD(i)) &&
		      p->len == cd_msg[i].len &&
		      (!cd_msg[i].tagged || p->tag == CD_TAG(i)) &&
		      pok(rb[i], cd_msg[i].len, 30 + i, 0) &&
		      all_is(rb[i] + cd_msg[i].len, 64, SENT),
		      "cq_data: %s: %s, length %zu%s, data intact",
		      cd_msg[i].what,
		      cd_msg[i].data ? "FI_REMOTE_CQ_DATA with its 8 octets" :
				       "no FI_REMOTE_CQ_DATA",
		      cd_msg[i].len, cd_msg[i].tagged ? ", tag" : "");
	}
	check(cq_quiet(n, 0.2), "cq_data: nothing else on the receiver's CQ");
	barrier(n);
	node_close(n);
	return 0;
}

static int cd_tx(struct node *n)
{
	struct fi_cq_tagged_entry e[CD_N];
	uint8_t *b[CD_N];
	int ctx[CD_N], i, bad = 0, got, nctx = 0, want = 0;
	bool ok = true;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "cq_data sender: endpoint up, peer known"))
		return 1;
	if (token_wait(n, TOK(20), 10))
		bad++;
	for (i = 0; i < CD_N; i++) {
		size_t len = cd_msg[i].len;
		ssize_t r;

		if (i == CD_UINJ)	/* the rest go before the receives */
			token_put(n, TOK(20));
		b[i] = malloc(len ? len : 1);
		pat_fill(b[i], len, 30 + i, 0);
		switch (i) {
		case CD_SEND: case CD_SEND0: case CD_SENDR:
			r = POST(n, fi_senddata(n->ep, b[i], len, NULL, CD(i),
						n->peer, &ctx[i]));
			want++;
			break;
		case CD_INJ: case CD_UINJ:
			r = POST(n, fi_injectdata(n->ep, b[i], len, CD(i),
						  n->peer));
			memset(b[i], 0xee, len);	/* ours again at once */
			break;
		case CD_PLAIN:
			r = POST(n, fi_send(n->ep, b[i], len, NULL, n->peer,
					    &ctx[i]));
			want++;
			break;
		case CD_TSEND: case CD_TSENDR: case CD_UTSENDR:
			r = POST(n, fi_tsenddata(n->ep, b[i], len, NULL, CD(i),
						 n->peer, CD_TAG(i), &ctx[i]));
			want++;
			break;
		default:	/* CD_TINJ, CD_UTINJ */
			r = POST(n, fi_tinjectdata(n->ep, b[i], len, CD(i),
						   n->peer, CD_TAG(i)));
			memset(b[i], 0xee, len);
			break;
		}
		if (r) {
			tap_diag("cq_data sender: %s: %s", cd_msg[i].what,
				 fi_strerror((int)-r));
			bad++;
		}
	}
	check(!bad, "cq_data sender: fi_senddata, fi_tsenddata, "
	      "fi_injectdata, fi_tinjectdata accepted");
	got = cq_collect(n, e, want, 15);
	for (i = 0; i < CD_N; i++) {
		if (i == CD_INJ || i == CD_UINJ || i == CD_TINJ ||
		    i == CD_UTINJ)
			continue;
		if (!by_ctx(e, got < 0 ? 0 : got, &ctx[i]))
			ok = false;
		nctx++;
	}
	check(ok && got == want && nctx == want && cq_quiet(n, 0.3),
	      "cq_data sender: the %d sends with a context complete, the "
	      "injects without a completion (%d completions)", want, got);
	barrier(n);
	free_bufs(b, CD_N);
	node_close(n);
	return 0;
}

/* ==== FI_MSG_PREFIX: buffers start with room the provider leaves ==== */

#define PFX_EAGER 300
#define PFX_RNDV 100000
#define PFX_SEED 90

static int pf_rx(struct node *n)
{
	size_t len[3] = { PFX_EAGER, PFX_RNDV, 64 }, pfx, i;
	struct fi_cq_tagged_entry e[3], *p;
	uint8_t *b[3] = { NULL };
	int ctx[3], got;
	bool ok = true;
	ssize_t r = 0;

	n->mode = FI_MSG_PREFIX;
	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "prefix receiver: endpoint up, peer known"))
		return 1;
	pfx = n->info->ep_attr->msg_prefix_size;
	check((n->info->mode & FI_MSG_PREFIX) && pfx > 0,
	      "prefix: RDM takes FI_MSG_PREFIX when offered (%zu octets)",
	      pfx);
	for (i = 0; i < 3; i++) {
		b[i] = malloc(pfx + len[i] + 64);
		memset(b[i], SENT, pfx + len[i] + 64);
	}
	check(fi_recv(n->ep, b[0], pfx ? pfx - 1 : 0, NULL, FI_ADDR_UNSPEC,
		      &ctx[0]) == -FI_EINVAL,
	      "prefix: a receive buffer shorter than the prefix: -FI_EINVAL");
	r |= POST(n, fi_recv(n->ep, b[0], pfx + len[0], NULL, FI_ADDR_UNSPEC,
			     &ctx[0]));
	r |= POST(n, fi_trecv(n->ep, b[1], pfx + len[1], NULL,
			      FI_ADDR_UNSPEC, 7, 0, &ctx[1]));
	r |= POST(n, fi_recv(n->ep, b[2], pfx + len[2], NULL, FI_ADDR_UNSPEC,
			     &ctx[2]));
	token_put(n, TOK(90));
	got = cq_collect(n, e, 3, 15);
	for (i = 0; i < 3; i++) {
		p = by_ctx(e, got < 0 ? 0 : got, &ctx[i]);
		if (!p || p->len != pfx + len[i] ||
		    !pok(b[i] + pfx, len[i], PFX_SEED + i, 0) ||
		    !all_is(b[i], pfx, SENT) ||
		    !all_is(b[i] + pfx + len[i], 64, SENT)) {
			tap_diag("prefix: message %zu: len %zu", i,
				 p ? p->len : 0);
			ok = false;
		}
	}
	check(!r && ok && got == 3, "prefix: eager, rendezvous and inject land "
	      "after the prefix, which stays untouched; the length counts it");
	barrier(n);
	free_bufs(b, 3);
	node_close(n);
	return 0;
}

static int pf_tx(struct node *n)
{
	size_t len[3] = { PFX_EAGER, PFX_RNDV, 64 }, pfx, i;
	struct fi_cq_tagged_entry e[2];
	uint8_t *b[3] = { NULL };
	int ctx[2], got;
	ssize_t r = 0;

	n->mode = FI_MSG_PREFIX;
	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "prefix sender: endpoint up, peer known"))
		return 1;
	pfx = n->info->ep_attr->msg_prefix_size;
	for (i = 0; i < 3; i++) {
		b[i] = malloc(pfx + len[i]);
		memset(b[i], 0xee, pfx);	/* must not travel */
		pat_fill(b[i] + pfx, len[i], PFX_SEED + i, 0);
	}
	check(fi_send(n->ep, b[0], pfx ? pfx - 1 : 0, NULL, n->peer,
		      NULL) == -FI_EINVAL,
	      "prefix: a send buffer shorter than the prefix: -FI_EINVAL");
	if (token_wait(n, TOK(90), 10))
		tap_diag("prefix sender: the receives were not posted");
	r |= POST(n, fi_send(n->ep, b[0], pfx + len[0], NULL, n->peer,
			     &ctx[0]));
	r |= POST(n, fi_tsend(n->ep, b[1], pfx + len[1], NULL, n->peer, 7,
			      &ctx[1]));
	r |= POST(n, fi_inject(n->ep, b[2], pfx + len[2], n->peer));
	got = cq_collect(n, e, 2, 15);
	check(!r && got == 2, "prefix sender: send, tsend and inject "
	      "accepted, two completions (%d)", got);
	barrier(n);
	free_bufs(b, 3);
	node_close(n);
	return 0;
}

/* ==== 4: fi_readv, fi_writev, fi_readmsg, fi_writemsg ==== */

#define RMA_REGION (1u << 20)
#define RMA_SEED 40
#define RMA_OFF1 1003		/* writev lands here */
#define RMA_OFF2 200001		/* readv reads from here */
#define RMA_OFF3 500007		/* writemsg / readmsg */
#define RMA_GUARD 7

static const size_t rma_wv[4] = { 1, 4093, 17, 65539 };	/* seeds 41.. */
static const size_t rma_rv[4] = { 3, 70001, 5, 1000 };
static const size_t rma_wm[4] = { 7, 13, 100003, 11 };	/* seeds 51.. */
static const size_t rma_rm[5] = { 50, 99983, 0, 1, 0 };	/* = 100034 */

struct rma_hello {
	uint64_t base, key;
};

static size_t sum(const size_t *v, int k)
{
	size_t s = 0;
	int i;

	for (i = 0; i < k; i++)
		s += v[i];
	return s;
}

static int rma_target(struct node *n)
{
	uint8_t *region = aligned_alloc(4096, RMA_REGION), *want;
	struct fid_mr *mr = NULL;
	struct rma_hello h;
	size_t off;
	int i;

	pat_fill(region, RMA_REGION, RMA_SEED, 0);
	if (!check(!node_up(n, FI_MSG | FI_RMA, 0) &&
		   !fi_mr_reg(n->domain, region, RMA_REGION,
			      FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			      NULL),
		   "rma target: endpoint with FI_RMA up, region registered")) {
		free(region);
		return 1;
	}
	h.base = n->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
		 (uint64_t)(uintptr_t)region : 0;
	h.key = fi_mr_key(mr);
	put(n->to, &h, sizeof(h));
	/* the initiator says when it is done; then our region must be the
	 * pattern with its two writes in place */
	token_wait(n, TOK(30), 30);
	want = malloc(RMA_REGION);
	pat_fill(want, RMA_REGION, RMA_SEED, 0);
	for (i = 0, off = RMA_OFF1; i < 4; i++) {
		pat_fill(want + off, rma_wv[i], 41 + i, 0);
		off += rma_wv[i];
	}
	for (i = 0, off = RMA_OFF3; i < 4; i++) {
		pat_fill(want + off, rma_wm[i], 51 + i, 0);
		off += rma_wm[i];
	}
	check(!memcmp(region, want, RMA_REGION),
	      "rma target: the region holds exactly the pattern with the "
	      "gathered writes at %d and %d", RMA_OFF1, RMA_OFF3);
	free(want);
	barrier(n);
	fi_close(&mr->fid);
	node_close(n);
	free(region);
	return 0;
}

static int rma_op(struct node *n, ssize_t posted)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int got;

	if (posted)
		return -1;
	got = cq_wait(n, 10, &e, &err);
	if (got < 0)
		tap_diag("rma: error %s", fi_strerror(err.err));
	return got == 1 ? 0 : -1;
}

static int rma_init(struct node *n)
{
	struct rma_hello h;
	struct iovec iov[8];
	struct fi_rma_iov rio;
	struct fi_msg_rma m;
	uint8_t *src[4], *dst[5], *back;
	size_t total, off, limit;
	int i, c, bad;
	bool ok;

	bool up = !node_up(n, FI_MSG | FI_RMA, 0) &&
		  !get(n, &h, sizeof(h), 10);

	limit = up ? n->info->tx_attr->iov_limit : 0;
	if (!check(up && limit >= 4, "rma initiator: endpoint up, target's "
		   "key known, tx iov_limit %zu >= 4", limit))
		return 1;
	back = malloc(RMA_REGION);

	/* fi_writev: 4 local pieces of odd lengths to one remote range */
	for (i = 0; i < 4; i++) {
		src[i] = malloc(rma_wv[i]);
		pat_fill(src[i], rma_wv[i], 41 + i, 0);
		iov[i].iov_base = src[i];
		iov[i].iov_len = rma_wv[i];
	}
	total = sum(rma_wv, 4);
	ok = !rma_op(n, POST(n, fi_writev(n->ep, iov, NULL, 4, n->peer,
					     h.base + RMA_OFF1, h.key, &c)));
	check(ok, "rma: fi_writev of 4 iovecs (%zu octets) completes", total);
	/* read back in one piece, with the octets around it */
	memset(back, 0, RMA_REGION);
	ok = !rma_op(n, POST(n, fi_read(n->ep, back, total + 2 * RMA_GUARD,
					   NULL, n->peer,
					   h.base + RMA_OFF1 - RMA_GUARD,
					   h.key, &c)));
	bad = !pok(back, RMA_GUARD, RMA_SEED, RMA_OFF1 - RMA_GUARD) ||
	      !pok(back + RMA_GUARD + total, RMA_GUARD, RMA_SEED,
		   RMA_OFF1 + total);
	for (i = 0, off = RMA_GUARD; i < 4; i++) {
		if (!pok(back + off, rma_wv[i], 41 + i, 0))
			bad++;
		off += rma_wv[i];
	}
	check(ok && !bad, "rma: the range reads back as the 4 pieces in "
	      "order, the octets around it untouched");

	/* fi_readv: one remote range scattered into 4 local pieces */
	for (i = 0; i < 4; i++) {
		dst[i] = malloc(rma_rv[i] + 16);
		memset(dst[i], SENT, rma_rv[i] + 16);
		iov[i].iov_base = dst[i];
		iov[i].iov_len = rma_rv[i];
	}
	ok = !rma_op(n, POST(n, fi_readv(n->ep, iov, NULL, 4, n->peer,
					    h.base + RMA_OFF2, h.key, &c)));
	bad = 0;
	for (i = 0, off = RMA_OFF2; i < 4; i++) {
		if (!pok(dst[i], rma_rv[i], RMA_SEED, off) ||
		    !all_is(dst[i] + rma_rv[i], 16, SENT))
			bad++;
		off += rma_rv[i];
	}
	check(ok && !bad, "rma: fi_readv scatters a remote range into 4 "
	      "iovecs of 3, 70001, 5, 1000 octets, each exactly");
	for (i = 0; i < 4; i++)
		free(dst[i]);

	/* fi_writemsg with iov_limit pieces (delivery complete) */
	for (i = 0; i < 4; i++) {
		free(src[i]);
		src[i] = malloc(rma_wm[i]);
		pat_fill(src[i], rma_wm[i], 51 + i, 0);
		iov[i].iov_base = src[i];
		iov[i].iov_len = rma_wm[i];
	}
	total = sum(rma_wm, 4);
	rio = (struct fi_rma_iov){ h.base + RMA_OFF3, total, h.key };
	m = (struct fi_msg_rma){ .msg_iov = iov, .iov_count = 4,
				 .addr = n->peer, .rma_iov = &rio,
				 .rma_iov_count = 1, .context = &c };
	ok = !rma_op(n, POST(n, fi_writemsg(n->ep, &m,
					       FI_DELIVERY_COMPLETE)));
	check(ok, "rma: fi_writemsg with 4 iovecs and FI_DELIVERY_COMPLETE "
	      "completes");
	/* fi_readmsg split differently, with an empty entry inside (and a
	 * last one if the limit allows 5) */
	{
		size_t cnt = limit >= 5 ? 5 : 4;
		size_t lens[5];

		memcpy(lens, rma_rm, sizeof(lens));
		for (i = 0; i < (int)cnt; i++) {
			dst[i] = malloc(lens[i] + 16);
			memset(dst[i], SENT, lens[i] + 16);
			iov[i].iov_base = dst[i];
			iov[i].iov_len = lens[i];
		}
		total = sum(lens, (int)cnt);
		rio = (struct fi_rma_iov){ h.base + RMA_OFF3, total, h.key };
		m.iov_count = cnt;
		ok = !rma_op(n, POST(n, fi_readmsg(n->ep, &m, 0)));
		/* what the concatenation must be */
		memset(back, 0, RMA_REGION);
		for (i = 0, off = 0; i < 4; i++) {
			pat_fill(back + off, rma_wm[i], 51 + i, 0);
			off += rma_wm[i];
		}
		bad = total != off;
		for (i = 0, off = 0; i < (int)cnt; i++) {
			if (memcmp(dst[i], back + off, lens[i]) ||
			    !all_is(dst[i] + lens[i], 16, SENT))
				bad++;
			off += lens[i];
		}
		check(ok && !bad, "rma: fi_readmsg with %zu iovecs (50, 99983, "
		      "0, 1%s) reads back what fi_writemsg gathered", cnt,
		      cnt == 5 ? ", 0" : "");
		for (i = 0; i < (int)cnt; i++)
			free(dst[i]);
	}
	token_put(n, TOK(30));
	barrier(n);
	for (i = 0; i < 4; i++)
		free(src[i]);
	free(back);
	node_close(n);
	return 0;
}

/* ==== 5: FI_THREAD_SAFE ==== */

#define TH_SEND 4		/* sender threads */
#define TH_N 400		/* messages each */
#define TH_MSGS (TH_SEND * TH_N)
#define TH_SECS 25.0

static size_t th_len(int t, int i)
{
	if (i % 100 == 57)	/* a few rendezvous ones */
		return 70000 + (size_t)t;
	return 1 + ((size_t)t * 977 + (size_t)i * 131) % 3000;
}

static uint64_t th_tag(int t, int i)
{
	return ((uint64_t)(t + 1) << 32) | (uint64_t)i;
}

static uint64_t th_seed(int t, int i)
{
	return 1000 + (uint64_t)t * TH_N + (uint64_t)i;
}

struct th {
	struct node *n;
	double end;
	uint8_t *arena;
	size_t *offs;
	char *ctx;		/* TH_MSGS distinct context addresses */
	atomic_int *seen;	/* per message: completions */
	atomic_int done, bad, fails, errs;
	pthread_barrier_t go;	/* all threads start together */
};

struct th_arg {
	struct th *th;
	int id;
};

/* The message a context points at. */
static int th_index(struct th *th, void *ctx)
{
	uintptr_t c = (uintptr_t)ctx, base = (uintptr_t)th->ctx;

	return c >= base && c - base < TH_MSGS ? (int)(c - base) : -1;
}

static void *th_sender(void *p)
{
	struct th_arg *a = p;
	struct th *th = a->th;
	int t = a->id, i;

	pthread_barrier_wait(&th->go);
	for (i = 0; i < TH_N && tap_now() < th->end; i++) {
		int k = t * TH_N + i;
		ssize_t r;

		while ((r = fi_tsend(th->n->ep, th->arena + th->offs[k],
				     th_len(t, i), NULL, th->n->peer,
				     th_tag(t, i), &th->ctx[k])) ==
			       -FI_EAGAIN &&
		       tap_now() < th->end)
			sched_yield();
		if (r)
			atomic_fetch_add(&th->fails, 1);
	}
	return NULL;
}

/* Reads completions until all messages are done or time is up. */
static void *th_reader(void *p)
{
	struct th_arg *a = p;
	struct th *th = a->th;
	bool rx = a->id >= 0;

	pthread_barrier_wait(&th->go);
	while (atomic_load(&th->done) < TH_MSGS && tap_now() < th->end &&
	       atomic_load(&th->errs) < 10) {
		struct fi_cq_tagged_entry e[8];
		ssize_t r = fi_cq_read(th->n->cq, e, 8), j;

		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			if (fi_cq_readerr(th->n->cq, &err, 0) == 1)
				atomic_fetch_add(&th->errs, 1);
			continue;
		}
		if (r == -FI_EAGAIN)	/* leave the CPUs to the others */
			sched_yield();
		for (j = 0; j < r; j++) {
			int k = th_index(th, e[j].op_context), t, i;

			if (k < 0) {
				atomic_fetch_add(&th->bad, 1);
				continue;
			}
			t = k / TH_N;
			i = k % TH_N;
			if (rx && (e[j].len != th_len(t, i) ||
				   e[j].tag != th_tag(t, i) ||
				   !(e[j].flags & FI_RECV) ||
				   !pok(th->arena + th->offs[k], th_len(t, i),
					th_seed(t, i), 0) ||
				   !all_is(th->arena + th->offs[k] +
					   th_len(t, i), 16, SENT)))
				atomic_fetch_add(&th->bad, 1);
			if (!rx && !(e[j].flags & FI_SEND))
				atomic_fetch_add(&th->bad, 1);
			atomic_fetch_add(&th->seen[k], 1);
			atomic_fetch_add(&th->done, 1);
		}
	}
	return NULL;
}

/* Posts the receives of sender threads id and id + 2, interleaved. */
static void *th_poster(void *p)
{
	struct th_arg *a = p;
	struct th *th = a->th;
	int i, s;

	pthread_barrier_wait(&th->go);
	for (i = 0; i < TH_N && tap_now() < th->end; i++)
		for (s = 0; s < 2; s++) {
			int t = a->id + 2 * s, k = t * TH_N + i;
			ssize_t r;

			while ((r = fi_trecv(th->n->ep,
					     th->arena + th->offs[k],
					     th_len(t, i) + 16, NULL,
					     FI_ADDR_UNSPEC, th_tag(t, i), 0,
					     &th->ctx[k])) == -FI_EAGAIN &&
			       tap_now() < th->end)
				sched_yield();
			if (r)
				atomic_fetch_add(&th->fails, 1);
		}
	return NULL;
}

static struct th *th_new(struct node *n, bool rx)
{
	struct th *th = calloc(1, sizeof(*th));
	size_t total = 0;
	int t, i;

	th->n = n;
	th->offs = calloc(TH_MSGS, sizeof(size_t));
	th->ctx = calloc(TH_MSGS, 1);
	th->seen = calloc(TH_MSGS, sizeof(atomic_int));
	for (t = 0; t < TH_SEND; t++)
		for (i = 0; i < TH_N; i++) {
			th->offs[t * TH_N + i] = total;
			total += th_len(t, i) + 16;
		}
	th->arena = malloc(total);
	/* the receiver's 4 threads, or the sender's 4 and its reader */
	pthread_barrier_init(&th->go, NULL, rx ? 4 : TH_SEND + 1);
	for (t = 0; t < TH_SEND; t++)
		for (i = 0; i < TH_N; i++) {
			uint8_t *b = th->arena + th->offs[t * TH_N + i];

			if (rx)
				memset(b, SENT, th_len(t, i) + 16);
			else
				pat_fill(b, th_len(t, i), th_seed(t, i), 0);
		}
	return th;
}

static void th_free(struct th *th)
{
	pthread_barrier_destroy(&th->go);
	free(th->offs);
	free(th->ctx);
	free(th->seen);
	free(th->arena);
	free(th);
}

static int th_count(struct th *th, int want)
{
	int k, n = 0;

	for (k = 0; k < TH_MSGS; k++)
		if (atomic_load(&th->seen[k]) == want)
			n++;
	return n;
}

static int th_rx(struct node *n)
{
	pthread_t pt[4];
	struct th_arg args[4];
	struct th *th;
	int i, once;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, FI_THREAD_SAFE) &&
		   n->info->domain_attr->threading == FI_THREAD_SAFE,
		   "threads: receiver's domain is FI_THREAD_SAFE"))
		return 1;
	th = th_new(n, true);
	th->end = tap_now() + TH_SECS;
	for (i = 0; i < 4; i++) {
		args[i] = (struct th_arg){ th, i % 2 };
		pthread_create(&pt[i], NULL, i < 2 ? th_reader : th_poster,
			       &args[i]);
	}
	token_put(n, TOK(40));	/* the sender may start */
	for (i = 0; i < 4; i++)
		pthread_join(pt[i], NULL);
	once = th_count(th, 1);
	check(!atomic_load(&th->fails),
	      "threads: 2 threads posted %d tagged receives concurrently "
	      "(%d refused)", TH_MSGS, atomic_load(&th->fails));
	check(once == TH_MSGS && !atomic_load(&th->errs),
	      "threads: 2 threads reading the CQ saw each of the %d messages "
	      "exactly once (%d once, %d errors)", TH_MSGS, once,
	      atomic_load(&th->errs));
	check(!atomic_load(&th->bad) && once == TH_MSGS,
	      "threads: every message has its tag, length and data (%d "
	      "wrong)", atomic_load(&th->bad));
	check(cq_quiet(n, 0.2), "threads: nothing more on the receiver's CQ");
	barrier(n);
	node_close(n);
	th_free(th);
	return 0;
}

static int th_tx(struct node *n)
{
	pthread_t pt[TH_SEND + 1];
	struct th_arg args[TH_SEND + 1];
	struct th *th;
	int i, once;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, FI_THREAD_SAFE) &&
		   n->info->domain_attr->threading == FI_THREAD_SAFE,
		   "threads: sender's domain is FI_THREAD_SAFE"))
		return 1;
	th = th_new(n, false);
	token_wait(n, TOK(40), 10);
	th->end = tap_now() + TH_SECS;
	for (i = 0; i <= TH_SEND; i++) {
		args[i] = (struct th_arg){ th, i < TH_SEND ? i : -1 };
		pthread_create(&pt[i], NULL, i < TH_SEND ? th_sender :
			       th_reader, &args[i]);
	}
	for (i = 0; i <= TH_SEND; i++)
		pthread_join(pt[i], NULL);
	once = th_count(th, 1);
	check(!atomic_load(&th->fails),
	      "threads: %d threads sent %d tagged messages each on one "
	      "endpoint (%d refused)", TH_SEND, TH_N, atomic_load(&th->fails));
	check(once == TH_MSGS && !atomic_load(&th->errs) &&
	      !atomic_load(&th->bad) && cq_quiet(n, 0.2),
	      "threads: a thread reading the sender's CQ meanwhile saw each "
	      "send complete exactly once (%d, %d errors)", once,
	      atomic_load(&th->errs));
	barrier(n);
	node_close(n);
	th_free(th);
	return 0;
}

/* ==== 6: FI_IWARP_RDM_EAGER ==== */

static const size_t eg_sizes[] = { 1023, 1024, 1025, 65535, 65536, 65537,
				   1048576, 1048577 };
#define EG_N (int)(sizeof(eg_sizes) / sizeof(eg_sizes[0]))
static const size_t eg_probe[] = { 1024, 1025, 65536, 65537, 1048576,
				   1048577 };
#define EG_P (int)(sizeof(eg_probe) / sizeof(eg_probe[0]))
#define EG_PROBE_SECS 1.0

/* The threshold the role runs with: what it expects, not what it reads */
static size_t eg_threshold;

#define EG_BUF (1048577 + 64)

/* Posts receives of sizes[i] + 64 octets (guard filled) on tags tag0 + i;
 * returns how many failed. */
static int eg_post(struct node *n, uint8_t (*rb)[EG_BUF], const size_t *sizes,
		   int cnt, uint64_t tag0, int *ctx)
{
	int i, bad = 0;

	for (i = 0; i < cnt; i++) {
		memset(rb[i], SENT, sizes[i] + 64);
		if (fi_trecv(n->ep, rb[i], sizes[i] + 64, NULL,
			     FI_ADDR_UNSPEC, tag0 + (uint64_t)i, 0, &ctx[i]))
			bad++;
	}
	return bad;
}

/* Of `got` completions: how many of the cnt receives are missing, the
 * wrong length, or not pattern seed0 + i with the guard behind intact. */
static int eg_verify(uint8_t (*rb)[EG_BUF], const size_t *sizes, int cnt,
		     uint64_t seed0, const int *ctx,
		     struct fi_cq_tagged_entry *e, int got)
{
	int i, bad = 0;

	for (i = 0; i < cnt; i++) {
		struct fi_cq_tagged_entry *p = by_ctx(e, got < 0 ? 0 : got,
						      &ctx[i]);

		if (!p || p->len != sizes[i] ||
		    !pok(rb[i], sizes[i], seed0 + (uint64_t)i, 0) ||
		    !all_is(rb[i] + sizes[i], 64, SENT))
			bad++;
	}
	return bad;
}

static int eg_rx(struct node *n)
{
	static uint8_t rb[EG_N][EG_BUF];
	struct fi_cq_tagged_entry e[EG_N];
	int ctx[EG_N], got, bad;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "eager %zu: receiver up", eg_threshold))
		return 1;
	/* 1: posted receives, sizes around both thresholds */
	bad = eg_post(n, rb, eg_sizes, EG_N, 0x600, ctx);
	token_put(n, TOK(50));
	got = bad ? 0 : cq_collect(n, e, EG_N, 15);
	bad += eg_verify(rb, eg_sizes, EG_N, 60, ctx, e, got);
	check(got == EG_N && !bad, "eager %zu: %d messages of 1023 .. 1048577 "
	      "octets arrive intact", eg_threshold, EG_N);
	/* 2: probes sent before any receive; posted after the sender looked
	 * at which of its sends completed */
	if (token_wait(n, TOK(51), 20))
		tap_diag("eager: the sender did not finish probing");
	bad = eg_post(n, rb, eg_probe, EG_P, 0x700, ctx);
	got = bad ? 0 : cq_collect(n, e, EG_P, 15);
	bad += eg_verify(rb, eg_probe, EG_P, 70, ctx, e, got);
	check(got == EG_P && !bad, "eager %zu: the %d probes, received late, "
	      "arrive intact", eg_threshold, EG_P);
	barrier(n);
	node_close(n);
	return 0;
}

static int eg_tx(struct node *n)
{
	struct fi_cq_tagged_entry e[EG_N];
	uint8_t *b[EG_N];
	int ctx[EG_N], got, i, bad = 0, k;
	char early[128] = "", expect[128] = "";
	bool done[EG_P] = { false }, ok = true;
	double end;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "eager %zu: sender up", eg_threshold))
		return 1;
	if (token_wait(n, TOK(50), 10))
		bad++;
	for (i = 0; i < EG_N; i++) {
		b[i] = malloc(eg_sizes[i]);
		pat_fill(b[i], eg_sizes[i], 60 + i, 0);
		if (!bad && POST(n, fi_tsend(n->ep, b[i], eg_sizes[i], NULL,
					     n->peer, 0x600 + (uint64_t)i,
					     &ctx[i])))
			bad++;
	}
	check(!bad && sends_done(n, ctx, EG_N, 15),
	      "eager %zu: the %d sends complete", eg_threshold, EG_N);
	free_bufs(b, EG_N);

	/* probes: which complete while the peer has no receive posted? */
	for (i = 0; i < EG_P; i++) {
		b[i] = malloc(eg_probe[i]);
		pat_fill(b[i], eg_probe[i], 70 + i, 0);
		if (POST(n, fi_tsend(n->ep, b[i], eg_probe[i], NULL, n->peer,
				     0x700 + (uint64_t)i, &ctx[i])))
			ok = false;
	}
	end = tap_now() + EG_PROBE_SECS;
	got = 0;
	while (tap_now() < end && got < EG_P) {
		struct fi_cq_err_entry err;
		int r = cq_wait(n, end - tap_now(), &e[0], &err);

		if (r < 0)
			ok = false;
		if (r != 1)
			continue;
		for (k = 0; k < EG_P && e[0].op_context != &ctx[k]; k++)
			;
		if (k < EG_P && !done[k]) {
			done[k] = true;
			got++;
		}
	}
	bad = 0;
	for (i = 0; i < EG_P; i++) {
		bool want = eg_probe[i] <= eg_threshold;

		if (done[i])
			snprintf(early + strlen(early),
				 sizeof(early) - strlen(early), " %zu",
				 eg_probe[i]);
		if (want)
			snprintf(expect + strlen(expect),
				 sizeof(expect) - strlen(expect), " %zu",
				 eg_probe[i]);
		if (done[i] != want)
			bad++;
	}
	check(ok && !bad, "eager %zu: sends done before the peer posted its "
	      "receives:%s (expected:%s); the others wait for the receive "
	      "(rendezvous)", eg_threshold, early[0] ? early : " none",
	      expect[0] ? expect : " none");
	token_put(n, TOK(51));
	/* the rest complete once the receives are there */
	end = tap_now() + 15;
	while (ok && tap_now() < end && got < EG_P) {
		struct fi_cq_err_entry err;
		int r = cq_wait(n, end - tap_now(), &e[0], &err);

		if (r < 0)
			ok = false;
		if (r != 1)
			continue;
		for (k = 0; k < EG_P && e[0].op_context != &ctx[k]; k++)
			;
		if (k < EG_P && !done[k]) {
			done[k] = true;
			got++;
		} else {
			ok = false;
		}
	}
	check(ok && got == EG_P, "eager %zu: all %d probes complete after the "
	      "receives are posted (%d)", eg_threshold, EG_P, got);
	barrier(n);
	free_bufs(b, EG_P);
	node_close(n);
	return 0;
}

/* ==== 6b: FI_IWARP_RDM_EAGER_IDLE ==== */

#define EI_BIG 1048576	/* the most an EAGER carries */

/* Answers the sender's ping, then receives the big message only once the
 * sender has looked at whether its send completed without it. */
static int ei_rx(struct node *n)
{
	static uint8_t rb[EI_BIG + 64];
	struct fi_cq_tagged_entry e[2];
	uint64_t ping = 0, pong = 0x706f6e67;
	int cp, cs, cb, got, bad;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "eager idle %zu: receiver up", eg_threshold))
		return 1;
	bad = POST(n, fi_trecv(n->ep, &ping, sizeof(ping), NULL,
			       FI_ADDR_UNSPEC, 0x800, 0, &cp)) != 0;
	got = bad ? 0 : cq_collect(n, e, 1, 10);
	bad |= got != 1 || POST(n, fi_tsend(n->ep, &pong, sizeof(pong), NULL,
					    n->peer, 0x801, &cs)) != 0;
	got = bad ? 0 : cq_collect(n, e, 1, 10);
	check(got == 1 && e[0].op_context == &cs && ping == 0x70696e67,
	      "eager idle %zu: ping received, pong sent", eg_threshold);
	if (token_wait(n, TOK(60), 20))
		tap_diag("eager idle: the sender did not finish probing");
	memset(rb, SENT, sizeof(rb));
	got = POST(n, fi_trecv(n->ep, rb, sizeof(rb), NULL, FI_ADDR_UNSPEC,
			       0x802, 0, &cb)) ? 0 : cq_collect(n, e, 1, 15);
	check(got == 1 && e[0].op_context == &cb && e[0].len == EI_BIG &&
	      pok(rb, EI_BIG, 80, 0) && all_is(rb + EI_BIG, 64, SENT),
	      "eager idle %zu: the %d octets, received late, arrive intact",
	      eg_threshold, EI_BIG);
	barrier(n);
	node_close(n);
	return 0;
}

/* After a ping-pong every credit is back: whether a big send completes
 * before the peer posts its receive tells eager from rendezvous. */
static int ei_tx(struct node *n)
{
	struct fi_cq_tagged_entry e[2];
	struct fi_cq_err_entry err;
	uint64_t ping = 0x70696e67, pong = 0;
	bool want = eg_threshold && !shm_run();
	int cp, cs, cb, got, r;
	uint8_t *b;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "eager idle %zu: sender up", eg_threshold))
		return 1;
	r = POST(n, fi_trecv(n->ep, &pong, sizeof(pong), NULL,
			     FI_ADDR_UNSPEC, 0x801, 0, &cp)) ||
	    POST(n, fi_tsend(n->ep, &ping, sizeof(ping), NULL, n->peer,
			     0x800, &cs));
	got = r ? 0 : cq_collect(n, e, 2, 10);
	check(got == 2 && pong == 0x706f6e67,
	      "eager idle %zu: ping-pong done", eg_threshold);
	b = malloc(EI_BIG);
	pat_fill(b, EI_BIG, 80, 0);
	r = POST(n, fi_tsend(n->ep, b, EI_BIG, NULL, n->peer, 0x802, &cb));
	got = r ? 0 : cq_wait(n, EG_PROBE_SECS, &e[0], &err);
	if (got == 1 && e[0].op_context != &cb)
		got = -1;
	check(!r && got == (want ? 1 : 0),
	      "eager idle %zu: a %d-octet send to an idle peer without its "
	      "receive %s (%s)", eg_threshold, EI_BIG,
	      got == 1 ? "completed at once" : "waited",
	      want ? "expected at once: eager over TCP" :
		     "expected to wait: rendezvous");
	token_put(n, TOK(60));
	if (!r && !got)
		got = cq_collect(n, e, 1, 15) == 1 &&
		      e[0].op_context == &cb ? 1 : -1;
	check(got == 1, "eager idle %zu: the send completed (%d)",
	      eg_threshold, got);
	barrier(n);
	free(b);
	node_close(n);
	return 0;
}

/* ==== 6c: both sides streaming ==== */

#define ST_BIG 32768	/* above shared memory's stream_eager (16 KiB) */
#define ST_N 5		/* the last one has 4 (IWARP_RDM_STREAM_DEPTH) out */

/* Streams two large messages to the sender, then takes the sender's
 * only once it has looked at which of them completed without a receive. */
static int st_rx(struct node *n)
{
	static uint8_t out[2][ST_BIG], in[ST_N][ST_BIG + 64];
	struct fi_cq_tagged_entry e[ST_N];
	int cs[2], cr[ST_N], i, got, r = 0, bad = 0;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "stream: receiver up"))
		return 1;
	for (i = 0; i < 2; i++) {
		pat_fill(out[i], ST_BIG, 90 + i, 0);
		r |= POST(n, fi_tsend(n->ep, out[i], ST_BIG, NULL, n->peer,
				      0x900, &cs[i]));
	}
	got = r ? 0 : cq_collect(n, e, 2, 10);
	check(got == 2, "stream: two %d-octet sends to the sender done (%d)",
	      ST_BIG, got);
	token_put(n, TOK(61));
	if (token_wait(n, TOK(62), 20))
		tap_diag("stream: the sender did not finish probing");
	for (i = 0; i < ST_N; i++) {
		memset(in[i], SENT, sizeof(in[i]));
		r |= POST(n, fi_trecv(n->ep, in[i], sizeof(in[i]), NULL,
				      FI_ADDR_UNSPEC, 0x901 + i, 0, &cr[i]));
	}
	got = r ? 0 : cq_collect(n, e, ST_N, 15);
	for (i = 0; i < got; i++)
		bad += e[i].len != ST_BIG;
	for (i = 0; i < ST_N; i++)
		bad += !pok(in[i], ST_BIG, 92 + i, 0) ||
		       !all_is(in[i] + ST_BIG, 64, SENT);
	check(got == ST_N && !bad, "stream: the sender's %d messages, "
	      "received late, arrive intact (%d, %d bad)", ST_N, got, bad);
	barrier(n);
	node_close(n);
	return 0;
}

/*
 * Having taken the peer's large messages, large sends go eagerly (done
 * before the peer posts its receives) until 4 are out; the fifth goes by
 * rendezvous through shared memory (the receiver's single copy), and
 * eagerly over TCP: whether it completes before the receive tells.
 */
static int st_tx(struct node *n)
{
	static uint8_t in[2][ST_BIG], out[ST_N][ST_BIG];
	struct fi_cq_tagged_entry e[2];
	struct fi_cq_err_entry err;
	bool rndv = shm_run();
	int cr[2], cs[ST_N], i, got[ST_N], r = 0, early = 0;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0), "stream: sender up"))
		return 1;
	for (i = 0; i < 2; i++)
		r |= POST(n, fi_trecv(n->ep, in[i], ST_BIG, NULL,
				      FI_ADDR_UNSPEC, 0x900, 0, &cr[i]));
	got[0] = r ? 0 : cq_collect(n, e, 2, 10);
	check(got[0] == 2 && pok(in[0], ST_BIG, 90, 0) &&
	      pok(in[1], ST_BIG, 91, 0),
	      "stream: the peer's two %d-octet messages arrive intact",
	      ST_BIG);
	if (token_wait(n, TOK(61), 20))
		tap_diag("stream: the peer did not finish sending");
	for (i = 0; i < ST_N; i++) {
		pat_fill(out[i], ST_BIG, 92 + i, 0);
		r = POST(n, fi_tsend(n->ep, out[i], ST_BIG, NULL, n->peer,
				     0x901 + i, &cs[i]));
		got[i] = r ? -1 : cq_wait(n, EG_PROBE_SECS, &e[0], &err);
		if (got[i] == 1 && e[0].op_context != &cs[i])
			got[i] = -1;
		early += got[i] == 1 && i < ST_N - 1;
	}
	check(early == ST_N - 1, "stream: the first %d sends, without their "
	      "receives, completed at once (eager) (%d)", ST_N - 1, early);
	check(got[ST_N - 1] == (rndv ? 0 : 1),
	      "stream: the %dth, with %d out, %s (%s)", ST_N, ST_N - 1,
	      got[ST_N - 1] == 1 ? "completed at once" : "waited",
	      rndv ? "expected to wait: rendezvous through shared memory" :
		     "expected at once: eager over TCP");
	token_put(n, TOK(62));
	if (!got[ST_N - 1])
		got[ST_N - 1] = cq_collect(n, e, 1, 15) == 1 &&
				e[0].op_context == &cs[ST_N - 1] ? 1 : -1;
	check(got[ST_N - 1] == 1, "stream: the last send completed (%d)",
	      got[ST_N - 1]);
	barrier(n);
	node_close(n);
	return 0;
}

/* ==== 6d: windows of unexpected messages ==== */

#define UW_N 64		/* a window, as osu_bibw's */
#define UW_LEN 4096	/* above the record's own room: a buffer each */
#define UW_ROUNDS 8

/* The first window is of smaller messages, as when osu_bibw goes from
 * one size to the next: the records of the stored messages are kept
 * for reuse between those buffers, so the larger ones that follow are
 * carved from the top of the heap. */
static size_t uw_len(int k)
{
	return k ? UW_LEN : UW_LEN / 4;
}

/*
 * Takes UW_ROUNDS windows of UW_N messages, each window stored as
 * unexpected before its receives are posted. Their buffers are kept for
 * the next window: once the second is in, the rest fault in (next to)
 * no new pages. Freed to glibc, each window's buffers left the top of
 * the heap free, which glibc trimmed and the next window faulted in
 * again (a page for every 4 KiB of the window).
 */
static int uw_rx(struct node *n)
{
	static uint8_t in[UW_N][UW_LEN + 64];
	struct fi_cq_tagged_entry e[UW_N];
	struct rusage ru;
	long f0 = 0, faults;
	int cr[UW_N], cm, i, k, got, r = 0, bad = 0, short_rounds = 0;
	uint8_t mark;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "unexpected windows: receiver up"))
		return 1;
	for (k = 0; k < UW_ROUNDS && !r; k++) {
		token_put(n, TOK(70 + k));
		/* the mark comes after the window: all of it is stored */
		r |= POST(n, fi_trecv(n->ep, &mark, 1, NULL, FI_ADDR_UNSPEC,
				      0xa02, 0, &cm));
		if (r || cq_collect(n, e, 1, 15) != 1) {
			short_rounds++;
			break;
		}
		if (k == 2) {
			getrusage(RUSAGE_SELF, &ru);
			f0 = ru.ru_minflt;
		}
		for (i = 0; i < UW_N; i++) {
			memset(in[i], SENT, sizeof(in[i]));
			r |= POST(n, fi_trecv(n->ep, in[i], sizeof(in[i]), NULL,
					      FI_ADDR_UNSPEC, 0xa01, 0, &cr[i]));
		}
		got = r ? 0 : cq_collect(n, e, UW_N, 15);
		short_rounds += got != UW_N;
		for (i = 0; i < got; i++) {
			int j = (int *)e[i].op_context - cr;

			bad += j < 0 || j >= UW_N || e[i].len != uw_len(k) ||
			       !pok(in[j], uw_len(k), 300 + k * UW_N + j, 0) ||
			       !all_is(in[j] + uw_len(k), 64, SENT);
		}
	}
	getrusage(RUSAGE_SELF, &ru);
	faults = ru.ru_minflt - f0;
	check(!short_rounds && !bad && k == UW_ROUNDS,
	      "unexpected windows: %d windows of %d messages (of %d octets, "
	      "then %d), each stored before its receives, arrive intact "
	      "(%d rounds short, %d bad)", UW_ROUNDS, UW_N, UW_LEN / 4,
	      UW_LEN, short_rounds, bad);
#ifdef __SANITIZE_ADDRESS__
	(void)faults;
	check(1, "unexpected windows: page faults not counted: ASan's "
	      "allocator takes fresh memory for every record # SKIP");
#else
	check(faults < UW_N * UW_LEN / 4096,
	      "unexpected windows: windows 3-%d faulted in %ld pages (less "
	      "than one window's %d)", UW_ROUNDS, faults,
	      UW_N * UW_LEN / 4096);
#endif
	barrier(n);
	node_close(n);
	return 0;
}

static int uw_tx(struct node *n)
{
	static uint8_t out[UW_N][UW_LEN];
	struct fi_cq_tagged_entry e[UW_N + 1];
	int cs[UW_N + 1], i, k, r = 0, done = 0;
	uint8_t mark = 1;

	if (!check(!node_up(n, FI_MSG | FI_TAGGED, 0),
		   "unexpected windows: sender up"))
		return 1;
	for (k = 0; k < UW_ROUNDS && !r; k++) {
		if (token_wait(n, TOK(70 + k), 20)) {
			tap_diag("unexpected windows: no round %d", k);
			break;
		}
		for (i = 0; i < UW_N; i++) {
			pat_fill(out[i], uw_len(k), 300 + k * UW_N + i, 0);
			r |= POST(n, fi_tsend(n->ep, out[i], uw_len(k), NULL,
					      n->peer, 0xa01, &cs[i]));
		}
		r |= POST(n, fi_tsend(n->ep, &mark, 1, NULL, n->peer, 0xa02,
				      &cs[UW_N]));
		done += !r && cq_collect(n, e, UW_N + 1, 15) == UW_N + 1;
	}
	check(done == UW_ROUNDS, "unexpected windows: %d windows sent (%d)",
	      UW_ROUNDS, done);
	barrier(n);
	node_close(n);
	return 0;
}

/* ==== 7: FI_IWARP_ALLOW_RXM ==== */

static bool is_rxm(const struct fi_info *fi)
{
	return fi->fabric_attr->prov_name &&
	       !strcmp(fi->fabric_attr->prov_name, "iwarp;ofi_rxm");
}

static bool is_native(const struct fi_info *fi)
{
	return fi->fabric_attr->prov_name &&
	       !strcmp(fi->fabric_attr->prov_name, "iwarp");
}

static int getinfo_rdm(const char *prov, struct fi_info **out)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	if (prov)
		hints->fabric_attr->prov_name = strdup(prov);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	ret = fi_getinfo(TEST_API, NULL, NULL, 0, hints, out);
	fi_freeinfo(hints);
	return ret;
}

/* Counts the iwarp;ofi_rxm and native iwarp RDM entries of a list, and
 * whether every iwarp;ofi_rxm one comes before every native one. */
static void rxm_scan(const struct fi_info *list, int *rxm, int *native,
		     bool *rxm_first)
{
	const struct fi_info *fi;

	*rxm = *native = 0;
	*rxm_first = true;
	for (fi = list; fi; fi = fi->next) {
		if (fi->ep_attr->type != FI_EP_RDM)
			continue;
		if (is_rxm(fi)) {
			(*rxm)++;
			if (*native)
				*rxm_first = false;
		} else if (is_native(fi)) {
			(*native)++;
		}
	}
}

/* Progress on both endpoints of rxm_traffic (no completion is taken). */
static void rxm_poke(struct fid_cq **cq)
{
	fi_cq_read(cq[0], NULL, 0);
	fi_cq_read(cq[1], NULL, 0);
}

/* A tagged message each way between two endpoints of one info, sent from
 * as many iov entries as the info allows (up to 8). */
static bool rxm_traffic(struct fi_info *info)
{
	struct fid_fabric *fab = NULL;
	struct fid_domain *dom = NULL;
	struct fid_ep *ep[2] = { NULL, NULL };
	struct fid_cq *cq[2] = { NULL, NULL };
	struct fid_av *av[2] = { NULL, NULL };
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	uint8_t name[2][64], out[2][3000], in[2][3000 + 16];
	fi_addr_t to[2];
	/* as many entries as offered: ofi_rxm once overflowed at its limit */
	size_t k, niov = info->tx_attr->iov_limit;
	struct iovec iov[2][8];
	int i, ret, seen = 0, ctx[4];
	double end;

	if (!niov)
		niov = 1;
	while (niov > sizeof(iov[0]) / sizeof(iov[0][0]) ||
	       sizeof(out[0]) % niov)
		niov--;

	ret = fi_fabric(info->fabric_attr, &fab, NULL);
	if (!ret)
		ret = fi_domain(fab, info, &dom, NULL);
	for (i = 0; i < 2 && !ret; i++) {
		size_t len = sizeof(name[i]);

		ret = fi_endpoint(dom, info, &ep[i], NULL);
		if (!ret)
			ret = fi_cq_open(dom, &ca, &cq[i], NULL);
		if (!ret)
			ret = fi_av_open(dom, &aa, &av[i], NULL);
		if (!ret)
			ret = fi_ep_bind(ep[i], &cq[i]->fid,
					 FI_TRANSMIT | FI_RECV);
		if (!ret)
			ret = fi_ep_bind(ep[i], &av[i]->fid, 0);
		if (!ret)
			ret = fi_enable(ep[i]);
		if (!ret)
			ret = fi_getname(&ep[i]->fid, name[i], &len);
	}
	for (i = 0; i < 2 && !ret; i++)
		if (fi_av_insert(av[i], name[1 - i], 1, &to[i], 0, NULL) != 1)
			ret = -1;
	/* ofi_rxm says -FI_EAGAIN while it connects: progress, retry */
	end = tap_now() + 10;
	for (i = 0; i < 2 && !ret; i++) {
		pat_fill(out[i], sizeof(out[i]), 90 + i, 0);
		memset(in[i], SENT, sizeof(in[i]));
		for (k = 0; k < niov; k++) {
			iov[i][k].iov_base = out[i] + k * sizeof(out[i]) / niov;
			iov[i][k].iov_len = sizeof(out[i]) / niov;
		}
		while ((ret = fi_trecv(ep[i], in[i], sizeof(in[i]), NULL,
				       FI_ADDR_UNSPEC, 0x900, 0,
				       &ctx[i])) == -FI_EAGAIN &&
		       tap_now() < end)
			rxm_poke(cq);
		if (ret)
			break;
		while ((ret = fi_tsendv(ep[i], iov[i], NULL, niov, to[i],
					0x900, &ctx[2 + i])) == -FI_EAGAIN &&
		       tap_now() < end)
			rxm_poke(cq);
	}
	while (!ret && seen < 4 && tap_now() < end)
		for (i = 0; i < 2; i++) {
			struct fi_cq_tagged_entry e;
			ssize_t r = fi_cq_read(cq[i], &e, 1);

			if (r == 1) {
				seen++;
			} else if (r == -FI_EAVAIL) {
				ret = -1;
			}
		}
	for (i = 0; i < 2; i++) {
		/* each got the other's message */
		if (seen == 4 &&
		    (!pok(in[i], sizeof(out[i]), 90 + (1 - i), 0) ||
		     !all_is(in[i] + 3000, 16, SENT)))
			seen = 0;
		if (ep[i])
			fi_close(&ep[i]->fid);
		if (av[i])
			fi_close(&av[i]->fid);
		if (cq[i])
			fi_close(&cq[i]->fid);
	}
	if (dom)
		fi_close(&dom->fid);
	if (fab)
		fi_close(&fab->fid);
	return !ret && seen == 4;
}

#define RXM_OFF_LINE "not offered to utility providers " \
		     "(FI_IWARP_ALLOW_RXM is off)"

/*
 * In a process of its own that logs at FI_LOG_LEVEL=info into a pipe:
 * whether fi_getinfo for iwarp;ofi_rxm logs RXM_OFF_LINE (1) or not (0);
 * -1 if that process failed or did not end in time. Called before this
 * process opens libfabric, which reads FI_LOG_* once.
 */
static int rxm_logged(void)
{
	size_t used = 0, cap = 1 << 20;
	char *log = malloc(cap + 1);
	double end = tap_now() + 15;
	int p[2], st = 0, found;
	pid_t pid, got = 0;

	if (!log || pipe(p)) {
		free(log);
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		struct fi_info *x = NULL;

		close(p[0]);
		dup2(p[1], 2);
		close(p[1]);
		setenv("FI_LOG_LEVEL", "info", 1);
		setenv("FI_LOG_PROV", "iwarp", 1);
		setenv("FI_LOG_SUBSYS", "core", 1);
		getinfo_rdm("iwarp;ofi_rxm", &x);
		fi_freeinfo(x);
		exit(0);
	}
	close(p[1]);
	while (pid > 0 && tap_now() < end) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };
		char chunk[4096];
		ssize_t k;

		if (poll(&pf, 1, 50) <= 0)
			continue;
		k = read(p[0], chunk, sizeof(chunk));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if ((size_t)k > cap - used)
			k = (ssize_t)(cap - used);
		memcpy(log + used, chunk, (size_t)k);
		used += (size_t)k;
	}
	close(p[0]);
	log[used] = 0;
	found = strstr(log, RXM_OFF_LINE) != NULL;
	free(log);
	while (pid > 0 && (got = waitpid(pid, &st, WNOHANG)) == 0 &&
	       tap_now() < end)
		usleep(2000);
	if (pid > 0 && got == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return -1;
	}
	return pid > 0 && got == pid && WIFEXITED(st) && !WEXITSTATUS(st) ?
		       found : -1;
}

static int rxm_role(struct node *n, bool on)
{
	struct fi_info *all = NULL, *mine = NULL, *rxm = NULL;
	int ret_all, ret_mine, ret_rxm, nr, nn, nr2, nn2;
	int logged = rxm_logged();
	bool first, first2;

	(void)n;
	ret_all = getinfo_rdm(NULL, &all);
	ret_mine = getinfo_rdm("iwarp", &mine);
	ret_rxm = getinfo_rdm("iwarp;ofi_rxm", &rxm);
	rxm_scan(ret_all ? NULL : all, &nr, &nn, &first);
	rxm_scan(ret_mine ? NULL : mine, &nr2, &nn2, &first2);
	if (on) {
		check(!ret_all && !ret_mine && nr > 0 && nn > 0 && first &&
		      nr2 > 0 && nn2 > 0 && first2 && is_rxm(mine),
		      "allow_rxm on: iwarp;ofi_rxm entries (%d) come before "
		      "the native iwarp RDM ones (%d), also for prov_name "
		      "iwarp", nr, nn);
		check(!ret_rxm && rxm && is_rxm(rxm),
		      "allow_rxm on: prov_name iwarp;ofi_rxm is offered (%s)",
		      fi_strerror(-ret_rxm));
		check(logged == 0, "allow_rxm on: with FI_LOG_LEVEL=info, "
		      "fi_getinfo for iwarp;ofi_rxm logs no '%s' (%d)",
		      RXM_OFF_LINE, logged);
		check(!ret_rxm && rxm && rxm_traffic(rxm),
		      "allow_rxm on: a tagged message each way through "
		      "iwarp;ofi_rxm endpoints arrives intact");
	} else {
		check(!ret_all && !ret_mine && nr == 0 && nn > 0 && nr2 == 0 &&
		      is_native(mine) && mine->ep_attr->type == FI_EP_RDM,
		      "allow_rxm off: no iwarp;ofi_rxm entry; the native "
		      "RDM endpoint is the first iwarp entry (%d native)", nn);
		check(ret_rxm == -FI_ENODATA,
		      "allow_rxm off: prov_name iwarp;ofi_rxm gives "
		      "-FI_ENODATA (%d)", ret_rxm);
		check(logged == 1, "allow_rxm off: with FI_LOG_LEVEL=info, "
		      "fi_getinfo for iwarp;ofi_rxm logs '%s' (%d)",
		      RXM_OFF_LINE, logged);
		check(!ret_mine && mine && rxm_traffic(mine),
		      "allow_rxm off: a tagged message each way through the "
		      "native iwarp RDM endpoints arrives intact");
	}
	fi_freeinfo(all);
	fi_freeinfo(mine);
	fi_freeinfo(rxm);
	return 0;
}

static int rxm_on(struct node *n) { return rxm_role(n, true); }
static int rxm_off(struct node *n) { return rxm_role(n, false); }

/* ==== the endpoint base: binds, control, options as MSG has them ==== */

static ssize_t size_left(struct fid_ep *ep, bool tx)
{
	return tx ? ep->ops->tx_size_left(ep) : ep->ops->rx_size_left(ep);
}

/* Binds before fi_enable: one CQ per direction, one AV, counters for
 * local events only. */
static void base_binds(struct node *n, struct fid_cntr *cntr)
{
	int t = fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT);
	int r = fi_ep_bind(n->ep, &n->cq->fid, FI_RECV);
	int rw = fi_ep_bind(n->ep, &cntr->fid, FI_REMOTE_WRITE);
	int none = fi_ep_bind(n->ep, &cntr->fid, 0);

	check(t == -FI_EINVAL && r == -FI_EINVAL, "base: a second CQ for a "
	      "direction -> -FI_EINVAL (%d, %d)", t, r);
	check(rw == -FI_ENOSYS && none == -FI_EINVAL, "base: a counter for "
	      "FI_REMOTE_WRITE -> -FI_ENOSYS (%d), for no event -> "
	      "-FI_EINVAL (%d)", rw, none);
	r = fi_ep_bind(n->ep, &n->av->fid, 0);
	check(r == -FI_EINVAL, "base: a second AV -> -FI_EINVAL (%d)", r);
}

static void base_control(struct node *n)
{
	size_t v = 0, len = 1;
	int g = fi_control(&n->ep->fid, FI_GETOPSFLAG, NULL);
	int s = fi_control(&n->ep->fid, FI_SETOPSFLAG, NULL);
	ssize_t tx = size_left(n->ep, true), rx = size_left(n->ep, false);
	int o = fi_getopt(&n->ep->fid, FI_OPT_ENDPOINT,
			  FI_OPT_MIN_MULTI_RECV, &v, &len);

	check(g == -FI_EINVAL && s == -FI_EINVAL, "base: FI_GET/SETOPSFLAG "
	      "with NULL -> -FI_EINVAL (%d, %d)", g, s);
	check(tx == -FI_ENOSYS && rx == -FI_ENOSYS, "base: fi_tx/rx_size_left "
	      "-> -FI_ENOSYS, as MSG (%zd, %zd)", tx, rx);
	check(o == -FI_ETOOSMALL && len == sizeof(size_t), "base: getopt "
	      "FI_OPT_MIN_MULTI_RECV into 1 octet -> -FI_ETOOSMALL, needs %zu "
	      "(%d, %zu)", sizeof(size_t), o, len);
}

static int base_role(struct node *n)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr = NULL;
	char name[64];
	size_t len = 1;
	int ret, b, g;

	n->defer = true;
	ret = node_open(n, FI_MSG | FI_TAGGED, 0);
	if (!ret)
		ret = fi_cntr_open(n->domain, &ca, &cntr, NULL);
	if (!check(!ret, "base: endpoint and counter open (%d)", ret))
		goto out;
	base_binds(n, cntr);
	base_control(n);
	ret = fi_enable(n->ep);
	b = fi_ep_bind(n->ep, &cntr->fid, FI_SEND);
	g = fi_getname(&n->ep->fid, name, &len);
	check(!ret && b == -FI_EBUSY && g == -FI_ETOOSMALL && len >= 16,
	      "base: after fi_enable (%d) a bind -> -FI_EBUSY (%d); getname "
	      "into 1 octet -> -FI_ETOOSMALL with the size (%d, %zu)", ret,
	      b, g, len);
out:
	if (cntr)
		fi_close(&cntr->fid);
	node_close(n);
	return 0;
}

/* ==== the parent: runs children, prints what they owe ==== */

struct role {
	const char *name;
	int nchecks;
	int (*fn)(struct node *n);
	const char *env[4];	/* "NAME=value", or "NAME" to unset */
	size_t eager;		/* eg_threshold for the eager roles */
};

struct kid {
	const struct role *r;
	pid_t pid;
	int rep;		/* its reports; -1 once closed */
	int got;
	char **text;
	int *ok;
	char buf[4096];		/* a partial line */
	size_t used;
};

static pid_t start(const struct role *r, int sock, int rep,
		   const int *close_fds, int nclose)
{
	pid_t pid;
	int i;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid)
		return pid;
	for (i = 0; i < nclose; i++)
		if (close_fds[i] >= 0)
			close(close_fds[i]);
	report_fd = rep;
	setenv("FI_IWARP_IFACE", "lo", 0);
	for (i = 0; i < 4 && r->env[i]; i++) {
		const char *eq = strchr(r->env[i], '=');

		if (eq) {
			char name[64];

			snprintf(name, sizeof(name), "%.*s",
				 (int)(eq - r->env[i]), r->env[i]);
			setenv(name, eq + 1, 1);
		} else {
			unsetenv(r->env[i]);
		}
	}
	eg_threshold = r->eager;
	{
		struct node n = { .to = sock, .from = sock };
		int ret = r->fn(&n);

		close(rep);
		exit(ret);
	}
}

static void kid_line(struct kid *k, const char *line)
{
	if (k->got < k->r->nchecks) {
		k->ok[k->got] = line[0] == '1';
		k->text[k->got] = strdup(line[0] && line[1] ? line + 2 : "");
	} else {
		/* more than it owes: the last one fails */
		k->ok[k->r->nchecks - 1] = 0;
	}
	k->got++;
}

/* Reads what the child wrote; whole lines become results. */
static void kid_read(struct kid *k)
{
	ssize_t n = read(k->rep, k->buf + k->used,
			 sizeof(k->buf) - 1 - k->used);
	char *nl;

	if (n < 0 && errno == EINTR)
		return;
	if (n <= 0) {
		if (k->used) {	/* a last line without its newline */
			k->buf[k->used] = 0;
			kid_line(k, k->buf);
			k->used = 0;
		}
		close(k->rep);
		k->rep = -1;
		return;
	}
	k->used += (size_t)n;
	k->buf[k->used] = 0;
	while ((nl = strchr(k->buf, '\n'))) {
		*nl = 0;
		kid_line(k, k->buf);
		k->used -= (size_t)(nl + 1 - k->buf);
		memmove(k->buf, nl + 1, k->used + 1);
	}
	if (k->used == sizeof(k->buf) - 1) {	/* too long: take it */
		kid_line(k, k->buf);
		k->used = 0;
	}
}

/* Collects the children's reports until they close or time runs out,
 * then prints exactly the checks they owe and their ends. */
static void finish(struct kid *kids, int nk, double end)
{
	int i, j, open = nk;

	for (i = 0; i < nk; i++) {
		kids[i].text = calloc((size_t)kids[i].r->nchecks,
				      sizeof(char *));
		kids[i].ok = calloc((size_t)kids[i].r->nchecks, sizeof(int));
	}
	while (open && tap_now() < end) {
		struct pollfd pf[2];

		for (i = 0; i < nk; i++)
			pf[i] = (struct pollfd){ .fd = kids[i].rep,
						 .events = POLLIN };
		if (poll(pf, (nfds_t)nk, 50) <= 0)
			continue;
		for (i = 0; i < nk; i++)
			if (kids[i].rep >= 0 &&
			    (pf[i].revents & (POLLIN | POLLHUP | POLLERR))) {
				kid_read(&kids[i]);
				if (kids[i].rep < 0)
					open--;
			}
	}
	for (i = 0; i < nk; i++) {
		const struct role *r = kids[i].r;

		for (j = 0; j < r->nchecks; j++) {
			if (j < kids[i].got && kids[i].text[j])
				tap_ok(kids[i].ok[j], "%s", kids[i].text[j]);
			else
				tap_ok(0, "%s: check %d of %d never reported "
				       "(the child ended or hung before it)",
				       r->name, j + 1, r->nchecks);
			free(kids[i].text[j]);
		}
		if (kids[i].got > r->nchecks)
			tap_diag("%s reported %d checks, owes %d", r->name,
				 kids[i].got, r->nchecks);
		free(kids[i].text);
		free(kids[i].ok);
		if (kids[i].rep >= 0)
			close(kids[i].rep);
	}
	for (i = 0; i < nk; i++) {
		double left = end - tap_now();

		tap_child(kids[i].pid, left > 2 ? left : 2, kids[i].r->name);
	}
}

/* Two processes that talk over a socket, or one alone (b NULL). */
static void run(const struct role *a, const struct role *b, double secs)
{
	int sp[2] = { -1, -1 }, ra[2] = { -1, -1 }, rb[2] = { -1, -1 };
	static struct kid kids[2];
	double end = tap_now() + secs;
	int nk = b ? 2 : 1;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, ra) ||
	    (b && socketpair(AF_UNIX, SOCK_STREAM, 0, rb))) {
		tap_diag("socketpair: %s", strerror(errno));
		exit(1);
	}
	{
		int ca[] = { sp[1], ra[0], rb[0], rb[1] };
		int cb[] = { sp[0], ra[0], ra[1], rb[0] };

		kids[0] = (struct kid){ .r = a, .rep = ra[0] };
		kids[0].pid = start(a, sp[0], ra[1], ca, 4);
		if (b) {
			kids[1] = (struct kid){ .r = b, .rep = rb[0] };
			kids[1].pid = start(b, sp[1], rb[1], cb, 4);
		}
	}
	close(sp[0]);
	close(sp[1]);
	close(ra[1]);
	if (b)
		close(rb[1]);
	finish(kids, nk, end);
}

/* Sections 1-5 size their messages for the default eager threshold:
 * above it they go rendezvous, also to a peer that is idle. */
#define DEF_EAGER { "FI_IWARP_RDM_EAGER", "FI_IWARP_RDM_EAGER_IDLE=0" }
static const struct role mr_r = { "multi_recv receiver", 18, mr_rx,
				  DEF_EAGER };
static const struct role mr_s = { "multi_recv sender", 6, mr_tx, DEF_EAGER };
static const struct role pc_r = { "peek receiver", 16, pc_rx, DEF_EAGER };
static const struct role pc_s = { "peek sender", 3, pc_tx, DEF_EAGER };
static const struct role cd_r = { "cq_data receiver", CD_N + 2, cd_rx,
				  DEF_EAGER };
static const struct role cd_s = { "cq_data sender", 3, cd_tx, DEF_EAGER };
static const struct role rma_t = { "rma target", 2, rma_target, DEF_EAGER };
static const struct role rma_i = { "rma initiator", 6, rma_init, DEF_EAGER };
static const struct role th_r = { "threads receiver", 5, th_rx, DEF_EAGER };
static const struct role th_s = { "threads sender", 3, th_tx, DEF_EAGER };
static const struct role eg_r[3] = {
	{ "eager 1024 receiver", 3, eg_rx,
	  { "FI_IWARP_RDM_EAGER=1024", "FI_IWARP_RDM_EAGER_IDLE=0" }, 1024 },
	{ "eager default receiver", 3, eg_rx,
	  { "FI_IWARP_RDM_EAGER", "FI_IWARP_RDM_EAGER_IDLE=0" }, 65536 },
	{ "eager 2000000 (1048576) receiver", 3, eg_rx,
	  { "FI_IWARP_RDM_EAGER=2000000", "FI_IWARP_RDM_EAGER_IDLE=0" },
	  1048576 },
};
static const struct role eg_s[3] = {
	{ "eager 1024 sender", 4, eg_tx,
	  { "FI_IWARP_RDM_EAGER=1024", "FI_IWARP_RDM_EAGER_IDLE=0" }, 1024 },
	{ "eager default sender", 4, eg_tx,
	  { "FI_IWARP_RDM_EAGER", "FI_IWARP_RDM_EAGER_IDLE=0" }, 65536 },
	{ "eager 2000000 (1048576) sender", 4, eg_tx,
	  { "FI_IWARP_RDM_EAGER=2000000", "FI_IWARP_RDM_EAGER_IDLE=0" },
	  1048576 },
};
/* eager: whether the idle send is expected to go eagerly over TCP */
static const struct role ei_r[2] = {
	{ "eager idle default receiver", 3, ei_rx,
	  { "FI_IWARP_RDM_EAGER", "FI_IWARP_RDM_EAGER_IDLE" }, 1 },
	{ "eager idle 0 receiver", 3, ei_rx,
	  { "FI_IWARP_RDM_EAGER", "FI_IWARP_RDM_EAGER_IDLE=0" }, 0 },
};
static const struct role ei_s[2] = {
	{ "eager idle default sender", 4, ei_tx,
	  { "FI_IWARP_RDM_EAGER", "FI_IWARP_RDM_EAGER_IDLE" }, 1 },
	{ "eager idle 0 sender", 4, ei_tx,
	  { "FI_IWARP_RDM_EAGER", "FI_IWARP_RDM_EAGER_IDLE=0" }, 0 },
};
static const struct role st_r = { "stream receiver", 3, st_rx, DEF_EAGER };
static const struct role st_s = { "stream sender", 5, st_tx, DEF_EAGER };
static const struct role uw_r = { "unexpected windows receiver", 3, uw_rx,
				  DEF_EAGER };
static const struct role uw_s = { "unexpected windows sender", 2, uw_tx,
				  DEF_EAGER };
static const struct role pf_r = { "prefix receiver", 4, pf_rx, DEF_EAGER };
static const struct role pf_s = { "prefix sender", 3, pf_tx, DEF_EAGER };
static const struct role base_r = { "endpoint base", 8, base_role,
				    DEF_EAGER };
static const struct role rxm_r[2] = {
	{ "allow_rxm off", 4, rxm_off,
	  { "FI_IWARP_ALLOW_RXM=0", "FI_LOG_LEVEL" } },
	{ "allow_rxm on", 4, rxm_on,
	  { "FI_IWARP_ALLOW_RXM=1", "FI_LOG_LEVEL" } },
};

int main(void)
{
	int i;

	run(&mr_r, &mr_s, 40);
	run(&pc_r, &pc_s, 40);
	run(&cd_r, &cd_s, 40);
	run(&rma_t, &rma_i, 40);
	run(&th_r, &th_s, 40);
	run(&pf_r, &pf_s, 40);
	for (i = 0; i < 3; i++)
		run(&eg_r[i], &eg_s[i], 40);
	for (i = 0; i < 2; i++)
		run(&ei_r[i], &ei_s[i], 40);
	run(&st_r, &st_s, 40);
	run(&uw_r, &uw_s, 40);
	for (i = 0; i < 2; i++)
		run(&rxm_r[i], NULL, 30);
	run(&base_r, NULL, 30);
	return tap_done();
}
