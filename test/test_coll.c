/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_COLLECTIVE on the native RDM endpoint, through the public libfabric
 * API, between 4 real processes on 127.0.0.1 (the parent is rank 0, the
 * names go round over socketpairs; FI_AV_TABLE, so rank r is fi_addr r):
 * - fi_getinfo offers FI_COLLECTIVE on RDM only when asked, and then
 *   takes tag bit 63 from mem_tag_format;
 * - fi_query_collective: what runs, and an op or collective that does not;
 * - fi_av_set from a range, with a stride, and the set operations
 *   (each process checks what it can; membership shows in allgather);
 * - fi_join_collective ends with FI_JOIN_COMPLETE on the bound EQ (also
 *   read with no buffer, event only, as fabtests' multinode harness does);
 * - barrier, allreduce (SUM uint64, MAX int32), allgather, scatter from
 *   rank 2, broadcast from rank 1 of 160 KiB (rendezvous), a strided
 *   subset {1, 3} and two disjoint groups at once;
 * - an application tagged receive that ignores every tag bit, posted
 *   before all this, takes none of the collectives' messages, only the
 *   application's message sent after them; tags with bit 63 are refused;
 * - a rogue endpoint without FI_COLLECTIVE sends messages tagged like the
 *   collectives' to every rank first: they change nothing.
 * A child's checks come back to the parent as one byte per check; each
 * TAP result holds for every rank.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so and
 * FI_IWARP_IFACE=lo.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "fi_api.h"
#include "tap.h"

#define NR 4			/* processes */
#define BCAST_N 20000		/* uint64: past the eager size */
#define APP_TAG 0x77ULL
#define TMO 20.0

enum {
	C_OPEN, C_QUERY, C_SETS, C_JOIN, C_BARRIER, C_SUM, C_MAX, C_GATHER,
	C_SCATTER, C_BCAST, C_STRIDE, C_DISJOINT, C_AFTER, C_RESV, C_APP,
	C_BAD, C_ROGUE, NCHECK
};

static const char *check_name[NCHECK] = {
	[C_OPEN] = "every rank opened an RDM endpoint with FI_COLLECTIVE and "
		   "an EQ, and inserted the 4 names",
	[C_QUERY] = "fi_query_collective: barrier, SUM/MAX allreduce, "
		    "allgather, scatter, broadcast run; CSWAP allreduce, "
		    "reduce-scatter, alltoall do not (-FI_EOPNOTSUPP)",
	[C_SETS] = "fi_av_set: a range with stride, FI_ADDR_NOTAVAIL ends, "
		   "insert/remove errors, stride 0 refused, set addresses "
		   "distinct from the peers'",
	[C_JOIN] = "fi_join_collective: FI_JOIN_COMPLETE on the EQ with the "
		   "group's fid and the context",
	[C_BARRIER] = "fi_barrier completes with FI_COLLECTIVE and its context",
	[C_SUM] = "fi_allreduce SUM uint64 x3: every rank has the sum",
	[C_MAX] = "fi_allreduce MAX int32 x2 (negative values): every rank "
		  "has the maximum",
	[C_GATHER] = "fi_allgather uint64 x2: every rank has all in rank order",
	[C_SCATTER] = "fi_scatter from rank 2: each rank has its share",
	[C_BCAST] = "fi_broadcast of 160 KiB from rank 1: every rank has it",
	[C_STRIDE] = "a strided set {1, 3} (start 1, stride 2): its members "
		     "allreduce alone",
	[C_DISJOINT] = "two disjoint groups at once, built with diff (0, 2) "
		       "and insert+intersect (1, 3), joins read from the EQ "
		       "without a buffer: allgather sees the members",
	[C_AFTER] = "the world group still works after the subsets (barrier)",
	[C_RESV] = "tagged send and receive with tag bit 63 -> -FI_EINVAL",
	[C_APP] = "an application receive ignoring all tag bits took no "
		  "collective message, then the application's own",
	[C_BAD] = "bad calls: unknown group address, a set without us, an "
		  "unsupported op -> -FI_EINVAL/-FI_EOPNOTSUPP; a join that "
		  "cannot end (rank 1 never joins {0, 1}) closed: no event",
	[C_ROGUE] = "an endpoint without FI_COLLECTIVE sent every rank 40 "
		    "messages tagged with bit 63 (random tags, 0-300 octets) "
		    "before the join: the checks above still hold",
};

struct rank {
	int r;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_eq *eq;
	struct fid_cq *txcq, *rxcq;
	struct fid_ep *ep;
	fi_addr_t addr[NR];
	/* the application's receive, posted before any collective */
	uint64_t app_buf;
	struct fi_context app_ctx;
	int app_done;			/* its completions */
	int stray;			/* other receive completions */
	struct fid_mc *world;		/* closed after the endpoint */
	uint8_t ok[NCHECK];
};

static struct fi_info *hints_coll(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		exit(1);
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_MSG | FI_TAGGED | FI_COLLECTIVE;
	h->mode = FI_CONTEXT;
	h->domain_attr->av_type = FI_AV_TABLE;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	h->fabric_attr->prov_name = strdup("iwarp");
	return h;
}

static int rank_open(struct rank *k)
{
	struct fi_info *h = hints_coll();
	struct fi_av_attr aa = { .type = FI_AV_TABLE, .count = NR };
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_eq_attr ea = { .size = 16 };
	int ret;

	ret = fi_getinfo(TEST_API, "127.0.0.1", NULL, 0, h, &k->info);
	fi_freeinfo(h);
	if (!ret)
		ret = fi_fabric(k->info->fabric_attr, &k->fabric, NULL);
	if (!ret)
		ret = fi_domain(k->fabric, k->info, &k->domain, NULL);
	if (!ret)
		ret = fi_av_open(k->domain, &aa, &k->av, NULL);
	if (!ret)
		ret = fi_eq_open(k->fabric, &ea, &k->eq, NULL);
	if (!ret)
		ret = fi_cq_open(k->domain, &ca, &k->txcq, NULL);
	if (!ret)
		ret = fi_cq_open(k->domain, &ca, &k->rxcq, NULL);
	if (!ret)
		ret = fi_endpoint(k->domain, k->info, &k->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(k->ep, &k->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(k->ep, &k->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(k->ep, &k->txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(k->ep, &k->rxcq->fid, FI_RECV);
	if (!ret)
		ret = fi_enable(k->ep);
	return ret;
}

static void rank_close(struct rank *k)
{
	if (k->ep)
		fi_close(&k->ep->fid);
	if (k->rxcq)
		fi_close(&k->rxcq->fid);
	if (k->txcq)
		fi_close(&k->txcq->fid);
	if (k->eq)
		fi_close(&k->eq->fid);
	if (k->av)
		fi_close(&k->av->fid);
	if (k->domain)
		fi_close(&k->domain->fid);
	if (k->fabric)
		fi_close(&k->fabric->fid);
	fi_freeinfo(k->info);
}

/* Receive completions: the application's receive, or strays. */
static void poll_rx(struct rank *k)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;

	while (fi_cq_read(k->rxcq, &e, 1) == 1) {
		if (e.op_context == &k->app_ctx)
			k->app_done++;
		else
			k->stray++;
	}
	memset(&ee, 0, sizeof(ee));
	if (fi_cq_readerr(k->rxcq, &ee, 0) == 1)
		k->stray++;
}

/* The completion of a collective with context ctx, on the tx CQ. */
static bool wait_coll(struct rank *k, void *ctx)
{
	double end = tap_now() + TMO;
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry ee;

	while (tap_now() < end) {
		ssize_t n = fi_cq_read(k->txcq, &e, 1);

		poll_rx(k);
		if (n == 1)
			return e.op_context == ctx &&
			       (e.flags & FI_COLLECTIVE);
		if (n == -FI_EAVAIL) {
			memset(&ee, 0, sizeof(ee));
			fi_cq_readerr(k->txcq, &ee, 0);
			fprintf(stderr, "rank %d: error completion %d\n", k->r,
				ee.err);
			return false;
		}
	}
	fprintf(stderr, "rank %d: no completion in %.0f s\n", k->r, TMO);
	return false;
}

/* Joins set; FI_JOIN_COMPLETE must name the group and carry ctx, or,
 * read without a buffer (bare, as fabtests does), be the event alone. */
static struct fid_mc *join(struct rank *k, struct fid_av_set *set,
			   void *ctx, bool bare)
{
	double end = tap_now() + TMO;
	struct fi_eq_entry e;
	struct fid_mc *mc = NULL;
	fi_addr_t a;
	uint32_t ev;

	if (fi_av_set_addr(set, &a) ||
	    fi_join_collective(k->ep, a, set, 0, &mc, ctx))
		return NULL;
	while (tap_now() < end) {
		ssize_t n = bare ? fi_eq_read(k->eq, &ev, NULL, 0, 0) :
				   fi_eq_read(k->eq, &ev, &e, sizeof(e), 0);

		poll_rx(k);
		if (n == -FI_EAGAIN)
			continue;
		if (bare && n == 0 && ev == FI_JOIN_COMPLETE)
			return mc;
		if (n == sizeof(e) && ev == FI_JOIN_COMPLETE &&
		    e.fid == &mc->fid && e.context == ctx)
			return mc;
		break;
	}
	fprintf(stderr, "rank %d: join did not complete\n", k->r);
	fi_close(&mc->fid);
	return NULL;
}

static struct fid_av_set *range(struct rank *k, fi_addr_t start,
				fi_addr_t end, uint64_t stride)
{
	struct fi_av_set_attr a = {
		.start_addr = start, .end_addr = end, .stride = stride,
	};
	struct fid_av_set *s = NULL;

	return fi_av_set(k->av, &a, &s, NULL) ? NULL : s;
}

static bool query(struct rank *k, enum fi_collective_op c, enum fi_op op,
		  enum fi_datatype dt, int want)
{
	struct fi_collective_attr a = { .op = op, .datatype = dt };

	return fi_query_collective(k->domain, c, &a, 0) == want;
}

static bool check_query(struct rank *k)
{
	return query(k, FI_BARRIER, FI_NOOP, FI_VOID, 0) &&
	       query(k, FI_ALLREDUCE, FI_SUM, FI_UINT64, 0) &&
	       query(k, FI_ALLREDUCE, FI_MAX, FI_INT32, 0) &&
	       query(k, FI_ALLGATHER, FI_NOOP, FI_UINT64, 0) &&
	       query(k, FI_SCATTER, FI_NOOP, FI_UINT64, 0) &&
	       query(k, FI_BROADCAST, FI_NOOP, FI_UINT8, 0) &&
	       query(k, FI_ALLREDUCE, FI_CSWAP, FI_UINT64, -FI_EOPNOTSUPP) &&
	       query(k, FI_ALLREDUCE, FI_BXOR, FI_DOUBLE, -FI_EOPNOTSUPP) &&
	       query(k, FI_REDUCE_SCATTER, FI_SUM, FI_UINT64,
		     -FI_EOPNOTSUPP) &&
	       query(k, FI_ALLTOALL, FI_NOOP, FI_UINT64, -FI_EOPNOTSUPP);
}

/* Set operations a process can see without traffic. */
static bool check_sets(struct rank *k)
{
	struct fi_av_set_attr bad = { .start_addr = 0, .end_addr = 3 };
	struct fid_av_set *a = range(k, 0, NR - 1, 1), *b = range(k, 1, 3, 2);
	struct fid_av_set *e = range(k, FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0);
	struct fid_av_set *s = NULL;
	fi_addr_t x = 0, y = 0;
	bool ok = a && b && e;
	int i;

	ok = ok && !fi_av_set_addr(a, &x) && !fi_av_set_addr(b, &y) && x != y;
	for (i = 0; ok && i < NR; i++)
		ok = x != k->addr[i] && y != k->addr[i];
	ok = ok && fi_av_set(k->av, &bad, &s, NULL) == -FI_EINVAL;
	bad.stride = 1;
	bad.end_addr = NR;		/* past the AV */
	ok = ok && fi_av_set(k->av, &bad, &s, NULL) == -FI_EINVAL;
	ok = ok && fi_av_set_insert(e, 1) == 0 &&
	     fi_av_set_insert(e, 1) == -FI_EINVAL &&
	     fi_av_set_remove(e, 2) == -FI_EINVAL &&
	     fi_av_set_insert(e, 99) == -FI_EINVAL &&
	     fi_av_set_remove(e, 1) == 0;
	if (a)
		fi_close(&a->fid);
	if (b)
		fi_close(&b->fid);
	if (e)
		fi_close(&e->fid);
	return ok;
}

static bool run_barrier(struct rank *k, struct fid_mc *mc)
{
	struct fi_context c;

	return !fi_barrier(k->ep, fi_mc_addr(mc), &c) && wait_coll(k, &c);
}

static bool run_sum(struct rank *k, struct fid_mc *mc, const int *members,
		    int n)
{
	uint64_t v[3], res[3] = { 0 }, want[3] = { 0 };
	struct fi_context c;
	int i, j;

	for (i = 0; i < 3; i++)
		v[i] = 1000ULL * k->r + i + (1ULL << 40);
	for (j = 0; j < n; j++)
		for (i = 0; i < 3; i++)
			want[i] += 1000ULL * members[j] + i + (1ULL << 40);
	return !fi_allreduce(k->ep, v, 3, NULL, res, NULL, fi_mc_addr(mc),
			     FI_UINT64, FI_SUM, 0, &c) &&
	       wait_coll(k, &c) && !memcmp(res, want, sizeof(res));
}

static bool run_max(struct rank *k, struct fid_mc *mc)
{
	int32_t v[2] = { -100 - k->r, 7 * k->r - 30 }, res[2] = { 0 };
	struct fi_context c;

	return !fi_allreduce(k->ep, v, 2, NULL, res, NULL, fi_mc_addr(mc),
			     FI_INT32, FI_MAX, 0, &c) &&
	       wait_coll(k, &c) && res[0] == -100 && res[1] == 7 * 3 - 30;
}

/* Allgather of (rank, 100 + rank): the members in group order. */
static bool run_gather(struct rank *k, struct fid_mc *mc, const int *members,
		       int n)
{
	uint64_t v[2] = { (uint64_t)k->r, 100ULL + k->r }, res[2 * NR];
	struct fi_context c;
	int j;
	bool ok;

	memset(res, 0xff, sizeof(res));
	ok = !fi_allgather(k->ep, v, 2, NULL, res, NULL, fi_mc_addr(mc),
			   FI_UINT64, 0, &c) && wait_coll(k, &c);
	for (j = 0; ok && j < n; j++)
		ok = res[2 * j] == (uint64_t)members[j] &&
		     res[2 * j + 1] == 100ULL + members[j];
	return ok;
}

static bool run_scatter(struct rank *k, struct fid_mc *mc)
{
	uint64_t src[2 * NR], res[2] = { 0 };
	struct fi_context c;
	int i;

	for (i = 0; i < 2 * NR; i++)
		src[i] = 50 + i;
	return !fi_scatter(k->ep, k->r == 2 ? src : NULL, 2, NULL, res, NULL,
			   fi_mc_addr(mc), k->addr[2], FI_UINT64, 0, &c) &&
	       wait_coll(k, &c) && res[0] == 50u + 2 * k->r &&
	       res[1] == 51u + 2 * k->r;
}

static bool run_bcast(struct rank *k, struct fid_mc *mc)
{
	uint64_t *b = calloc(BCAST_N, sizeof(*b));
	struct fi_context c;
	bool ok = b;
	int i;

	for (i = 0; b && k->r == 1 && i < BCAST_N; i++)
		b[i] = i * 3ULL + 1;
	ok = ok && !fi_broadcast(k->ep, b, BCAST_N, NULL, fi_mc_addr(mc),
				 k->addr[1], FI_UINT64, 0, &c) &&
	     wait_coll(k, &c);
	for (i = 0; ok && i < BCAST_N; i++)
		ok = b[i] == i * 3ULL + 1;
	free(b);
	return ok;
}

/* The strided set {1, 3}; ranks 0 and 2 are not in it. */
static bool run_stride(struct rank *k)
{
	static const int m[] = { 1, 3 };
	struct fid_av_set *s;
	struct fid_mc *mc;
	bool ok;

	if (k->r % 2 == 0)
		return true;
	s = range(k, 1, 3, 2);
	mc = s ? join(k, s, &k->ok[C_STRIDE], false) : NULL;
	ok = mc && run_sum(k, mc, m, 2);
	if (mc)
		fi_close(&mc->fid);
	if (s)
		fi_close(&s->fid);
	return ok;
}

/* Even ranks: {0..3} diff {1, 3}; odd ones: {} + 3, 1, then intersect
 * {0..3} (order kept: 3, 1). Both groups run at once. */
static bool run_disjoint(struct rank *k)
{
	static const int even[] = { 0, 2 }, odd[] = { 3, 1 };
	struct fid_av_set *all = range(k, 0, NR - 1, 1), *s, *b = NULL;
	struct fid_mc *mc = NULL;
	bool ok = all;

	if (k->r % 2 == 0) {
		s = range(k, 0, NR - 1, 1);
		b = range(k, 1, 3, 2);
		ok = ok && s && b && !fi_av_set_diff(s, b);
	} else {
		s = range(k, FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL, 0);
		ok = ok && s && !fi_av_set_insert(s, 3) &&
		     !fi_av_set_insert(s, 1) && !fi_av_set_intersect(s, all);
	}
	mc = ok ? join(k, s, NULL, true) : NULL;
	ok = mc && run_gather(k, mc, k->r % 2 ? odd : even, 2);
	if (mc)
		fi_close(&mc->fid);
	if (s)
		fi_close(&s->fid);
	if (b)
		fi_close(&b->fid);
	if (all)
		fi_close(&all->fid);
	return ok;
}

static bool check_resv(struct rank *k)
{
	uint64_t x = 0;

	return fi_tsend(k->ep, &x, sizeof(x), NULL, k->addr[(k->r + 1) % NR],
			1ULL << 63, NULL) == -FI_EINVAL &&
	       fi_trecv(k->ep, &x, sizeof(x), NULL, FI_ADDR_UNSPEC,
			(1ULL << 63) | 5, 0, NULL) == -FI_EINVAL;
}

/* After the collectives: the application's message to the next rank. */
static bool check_app(struct rank *k)
{
	uint64_t v = 0xabc000ULL + k->r;
	struct fi_context c;
	double end = tap_now() + TMO;
	bool sent = false;
	int stray = k->stray;

	if (fi_tsend(k->ep, &v, sizeof(v), NULL, k->addr[(k->r + 1) % NR],
		     APP_TAG, &c))
		return false;
	while (tap_now() < end && (!sent || !k->app_done)) {
		struct fi_cq_tagged_entry e;

		if (fi_cq_read(k->txcq, &e, 1) == 1 && e.op_context == &c)
			sent = true;
		poll_rx(k);
	}
	if (stray)
		fprintf(stderr, "rank %d: %d stray receive completions\n",
			k->r, stray);
	return sent && k->app_done == 1 && !k->stray &&
	       k->app_buf == 0xabc000ULL + (k->r + NR - 1) % NR;
}

/* Rank 0 joins {0, 1}, which rank 1 never joins, then closes it. */
static bool orphan_join(struct rank *k)
{
	struct fid_av_set *s = range(k, 0, 1, 1);
	struct fid_mc *mc = NULL;
	fi_addr_t a = 0;
	uint32_t ev;
	struct fi_eq_entry e;
	bool ok;
	int i;

	ok = s && !fi_av_set_addr(s, &a) &&
	     !fi_join_collective(k->ep, a, s, 0, &mc, NULL);
	for (i = 0; ok && i < 50; i++) {
		ok = fi_eq_read(k->eq, &ev, &e, sizeof(e), 0) == -FI_EAGAIN;
		poll_rx(k);
	}
	if (mc)
		ok = !fi_close(&mc->fid) && ok;
	ok = ok && fi_eq_read(k->eq, &ev, &e, sizeof(e), 0) == -FI_EAGAIN;
	if (s)
		fi_close(&s->fid);
	return ok;
}

static bool check_bad(struct rank *k, struct fid_mc *mc)
{
	uint64_t v = 1, res;
	struct fi_context c;
	fi_addr_t next = (k->r + 1) % NR;
	struct fid_av_set *other = range(k, next, next, 1);
	struct fid_mc *m2 = NULL;
	fi_addr_t a = 0;
	bool ok;

	ok = fi_barrier(k->ep, 12345, &c) == -FI_EINVAL &&
	     fi_allreduce(k->ep, &v, 1, NULL, &res, NULL, fi_mc_addr(mc),
			  FI_UINT64, FI_CSWAP, 0, &c) == -FI_EOPNOTSUPP &&
	     fi_scatter(k->ep, &v, 1, NULL, &res, NULL, fi_mc_addr(mc), 99,
			FI_UINT64, 0, &c) == -FI_EINVAL &&
	     other && !fi_av_set_addr(other, &a) &&
	     fi_join_collective(k->ep, a, other, 0, &m2, NULL) == -FI_EINVAL;
	if (other)
		fi_close(&other->fid);
	return ok && (k->r || orphan_join(k));
}

/*
 * Rank 0 opens a second endpoint without FI_COLLECTIVE (all 64 tag bits
 * are the application's there) and sends every rank, itself included,
 * messages tagged like the collectives': not from a member, so they may
 * only wait as unexpected messages.
 */
static bool rogue_flood(struct rank *k, const struct sockaddr_in *names)
{
	struct fi_cq_attr ca = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr aa = { .type = FI_AV_TABLE, .count = NR };
	static uint8_t junk[300];
	struct fi_info *fi = fi_dupinfo(k->info);
	struct fid_ep *ep = NULL;
	struct fid_cq *cq = NULL;
	struct fid_av *av = NULL;
	fi_addr_t to[NR];
	double end = tap_now() + TMO;
	int i, done = 0, ret;

	if (!fi)
		return false;
	fi->caps &= ~FI_COLLECTIVE;
	fi->tx_attr->caps &= ~FI_COLLECTIVE;
	fi->ep_attr->mem_tag_format = ~0ULL;
	ret = fi_endpoint(k->domain, fi, &ep, NULL);
	if (!ret)
		ret = fi_av_open(k->domain, &aa, &av, NULL);
	if (!ret)
		ret = fi_cq_open(k->domain, &ca, &cq, NULL);
	if (!ret)
		ret = fi_ep_bind(ep, &av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(ep);
	if (!ret)
		ret = fi_av_insert(av, names, NR, to, 0, NULL) == NR ? 0 : -1;
	for (i = 0; i < 40 * NR && !ret; i++)
		ret = (int)fi_tsend(ep, junk, (size_t)(rand() % 301), NULL,
				    to[i % NR], (1ULL << 63) |
				    ((uint64_t)rand() << 20) | (i & 0xffff),
				    NULL);
	while (!ret && done < 40 * NR && tap_now() < end) {
		struct fi_cq_tagged_entry e;
		ssize_t n = fi_cq_read(cq, &e, 1);

		if (n == 1)
			done++;
		else if (n != -FI_EAGAIN)
			ret = -1;
		poll_rx(k);	/* progress for the ranks' own endpoint */
	}
	if (ep)
		fi_close(&ep->fid);
	if (cq)
		fi_close(&cq->fid);
	if (av)
		fi_close(&av->fid);
	fi_freeinfo(fi);
	return !ret && done == 40 * NR;
}

/* Every check, in the same order on every rank. */
static void rank_run(struct rank *k, const struct sockaddr_in *names)
{
	static const int world[] = { 0, 1, 2, 3 };
	struct fid_av_set *ws;
	struct fid_mc *mc = NULL;

	k->ok[C_QUERY] = check_query(k);
	k->ok[C_SETS] = check_sets(k);
	k->ok[C_RESV] = check_resv(k);
	if (fi_trecv(k->ep, &k->app_buf, sizeof(k->app_buf), NULL,
		     FI_ADDR_UNSPEC, 0, ~0ULL, &k->app_ctx))
		return;
	k->ok[C_ROGUE] = k->r ? true : rogue_flood(k, names);
	ws = range(k, 0, NR - 1, 1);
	mc = ws ? join(k, ws, &k->ok[C_JOIN], false) : NULL;
	k->ok[C_JOIN] = mc != NULL;
	if (mc) {
		k->ok[C_BARRIER] = run_barrier(k, mc);
		k->ok[C_SUM] = run_sum(k, mc, world, NR);
		k->ok[C_MAX] = run_max(k, mc);
		k->ok[C_GATHER] = run_gather(k, mc, world, NR);
		k->ok[C_SCATTER] = run_scatter(k, mc);
		k->ok[C_BCAST] = run_bcast(k, mc);
		k->ok[C_STRIDE] = run_stride(k);
		k->ok[C_DISJOINT] = run_disjoint(k);
		k->ok[C_AFTER] = run_barrier(k, mc);
		k->ok[C_BAD] = check_bad(k, mc);
		k->ok[C_APP] = check_app(k);
		/* nobody leaves while a peer may still send to it; the
		 * group outlives the endpoint (closed after it) */
		run_barrier(k, mc);
		k->world = mc;
	}
	if (ws)
		fi_close(&ws->fid);
}

/* One process: open, trade names with rank 0 over fd, run, report. */
static int rank_main(int r, int fd, const int *cfd, uint8_t *ok)
{
	struct sockaddr_in names[NR], mine;
	struct rank k = { .r = r };
	size_t len = sizeof(mine);
	int i, ret;

	ret = rank_open(&k);
	if (!ret)
		ret = fi_getname(&k.ep->fid, &mine, &len);
	if (r) {
		if (xfull(fd, &mine, sizeof(mine), true) ||
		    xfull(fd, names, sizeof(names), false))
			ret = -1;
	} else {
		names[0] = mine;
		for (i = 1; i < NR; i++)
			if (xfull(cfd[i], &names[i], sizeof(names[i]), false))
				ret = -1;
		for (i = 1; i < NR; i++)
			if (xfull(cfd[i], names, sizeof(names), true))
				ret = -1;
	}
	if (!ret)
		ret = fi_av_insert(k.av, names, NR, k.addr, 0, NULL) == NR ?
		      0 : -1;
	k.ok[C_OPEN] = !ret;
	if (!ret)
		rank_run(&k, names);
	if (k.world)	/* before the fabric whose lock its close takes */
		fi_close(&k.world->fid);
	rank_close(&k);
	if (r)
		return xfull(fd, k.ok, sizeof(k.ok), true) ? 1 : 0;
	memcpy(ok, k.ok, sizeof(k.ok));
	return 0;
}

/* ---- fi_getinfo, in the parent */

static void test_getinfo(void)
{
	struct fi_info *h = hints_coll(), *fi = NULL, *p;
	bool ok = true;
	int ret;

	ret = fi_getinfo(TEST_API, "127.0.0.1", NULL, 0, h, &fi);
	for (p = fi; !ret && p; p = p->next)
		ok = ok && (p->caps & FI_COLLECTIVE) &&
		     (p->tx_attr->caps & FI_COLLECTIVE) &&
		     (p->rx_attr->caps & FI_COLLECTIVE) &&
		     p->ep_attr->type == FI_EP_RDM &&
		     p->ep_attr->mem_tag_format == 0x7fffffffffffffffULL;
	tap_ok(!ret && fi && ok, "asked for FI_COLLECTIVE on RDM: offered (caps, tx and rx "
	       "caps), mem_tag_format without bit 63 (%d)", ret);
	fi_freeinfo(fi);
	fi = NULL;
	h->caps = FI_MSG | FI_TAGGED;
	ret = fi_getinfo(TEST_API, "127.0.0.1", NULL, 0, h, &fi);
	ok = !ret && fi;
	for (p = fi; ok && p; p = p->next)
		ok = !(p->caps & FI_COLLECTIVE) &&
		     !(p->tx_attr->caps & FI_COLLECTIVE) &&
		     p->ep_attr->mem_tag_format == ~0ULL;
	tap_ok(ok, "not asked: RDM without FI_COLLECTIVE, all 64 tag bits");
	fi_freeinfo(fi);
	fi = NULL;
	h->caps = FI_MSG | FI_COLLECTIVE;
	h->ep_attr->type = FI_EP_MSG;
	ret = fi_getinfo(TEST_API, "127.0.0.1", NULL, 0, h, &fi);
	tap_ok(ret == -FI_ENODATA, "FI_COLLECTIVE on MSG: -FI_ENODATA (%d)",
	       ret);
	fi_freeinfo(fi);
	fi = NULL;
	h->ep_attr->type = FI_EP_DGRAM;
	ret = fi_getinfo(TEST_API, "127.0.0.1", NULL, 0, h, &fi);
	tap_ok(ret == -FI_ENODATA, "FI_COLLECTIVE on DGRAM: -FI_ENODATA (%d)",
	       ret);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

/* The children are forked before the parent opens anything. */
int main(void)
{
	uint8_t all[NCHECK], got[NCHECK];
	int sp[NR][2], cfd[NR] = { -1 }, i, j;
	pid_t pid[NR] = { 0 };
	bool child_ok[NR] = { true };
	struct timeval tmo = { .tv_sec = 240 };

	test_getinfo();
	for (i = 1; i < NR; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp[i]))
			exit(1);
		pid[i] = fork();
		if (!pid[i]) {
			for (j = 1; j <= i; j++)
				close(sp[j][0]);
			_exit(rank_main(i, sp[i][1], NULL, NULL));
		}
		close(sp[i][1]);
		cfd[i] = sp[i][0];
		/* a child stuck past its own bounded waits fails, not hangs */
		setsockopt(cfd[i], SOL_SOCKET, SO_RCVTIMEO, &tmo, sizeof(tmo));
	}
	memset(all, 0, sizeof(all));
	rank_main(0, -1, cfd, all);
	for (i = 1; i < NR; i++) {
		child_ok[i] = !xfull(cfd[i], got, sizeof(got), false);
		for (j = 0; j < NCHECK; j++)
			all[j] = all[j] && child_ok[i] && got[j];
		if (!child_ok[i])
			tap_diag("rank %d sent no results", i);
	}
	for (j = 0; j < NCHECK; j++)
		tap_ok(all[j], "%s", check_name[j]);
	for (i = 1; i < NR; i++) {
		char what[32];

		snprintf(what, sizeof(what), "rank %d", i);
		tap_child(pid[i], 60, what);
		close(cfd[i]);
	}
	return tap_done();
}
