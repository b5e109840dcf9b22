/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_RMA_EVENT on FI_EP_RDM and FI_EP_MSG between two real processes
 * over loopback TCP, through the public API: the target (the parent)
 * counts the initiator's (a forked child's) RDMA Writes and Reads with
 * counters bound to its endpoint (FI_REMOTE_WRITE, FI_REMOTE_READ) and to
 * each region (fi_mr_bind), and the counts are exact: every access once,
 * none for the connection's own traffic (the MPA RTR, RDM rendezvous
 * Reads of the sender's buffer, which the child's counters watch).
 * Written data is compared at the target, read data at the initiator.
 * The capability is offered only where asked and only for MSG and RDM;
 * without it remote counters cannot be bound; fi_mr_bind refuses what
 * it cannot count and a bound counter cannot be closed. Keys of a few
 * regions stay below 2^24, as hardware STags do.
 *
 * The child reports its checks over a pipe as fixed slots, and a slot it
 * never filled (crash, hang: it is killed) is a failure, so the number of
 * TAP lines never changes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "tap.h"
#include "fi_api.h"

#define NWRITE		5	/* Writes into region A */
#define NREAD		3	/* Reads of region B */
#define SLOT		4096	/* one Write's part of A */
#define REG_A		(NWRITE * SLOT)
#define REG_B		65536
#define BIG		(1 << 20)	/* an RDM rendezvous message */
#define WAIT_S		10
#define KEY_A		7	/* requested: taken with FI_IWARP_MR_APP_KEYS */
#define KEY_B		8

/* What the target tells the initiator over the pipe. */
struct keys {
	char addr[128];
	size_t addr_len;
	uint64_t key_a, base_a, key_b, base_b;
};

/* The initiator's checks, reported as slots. */
enum {
	C_OPEN,		/* endpoint of its own, connected */
	C_WRITES,	/* every Write completed */
	C_READS,	/* every Read completed with B's pattern */
	C_WRITE_B,	/* the Write into B completed */
	C_RDV,		/* RDM: the big send completed */
	C_NO_COUNT,	/* its own remote-read counter stayed 0 */
	NCHILD,
};

static const char *const child_name[NCHILD] = {
	"opened and connected", "5 Writes into A completed",
	"3 Reads of B completed with B's octets",
	"a Write into B completed",
	"a rendezvous send completed (RDM) / skipped (MSG)",
	"serving the target's rendezvous Read counted nothing here",
};

struct side {
	enum fi_ep_type type;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t peer;
};

static uint8_t pat(size_t i, uint64_t seed)
{
	return (uint8_t)((i * 2654435761u) >> 7 ^ seed);
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = pat(i, seed);
}

static bool same(const uint8_t *p, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != pat(i, seed))
			return false;
	return true;
}


static struct fi_info *hints_for(enum fi_ep_type type, uint64_t caps)
{
	struct fi_info *h = fi_allocinfo();

	h->fabric_attr->prov_name = strdup("iwarp");
	h->ep_attr->type = type;
	h->caps = caps;
	h->addr_format = FI_SOCKADDR_IN;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				  FI_MR_PROV_KEY;
	return h;
}

static int getinfo(enum fi_ep_type type, uint64_t caps, const char *node,
		   const char *service, uint64_t flags, struct fi_info **info)
{
	struct fi_info *h = hints_for(type, caps);
	int ret = fi_getinfo(TEST_API, node, service, flags, h, info);

	fi_freeinfo(h);
	return ret;
}

/* fabric, domain, CQ, and (RDM) an AV, from s->info */
static int side_open(struct side *s)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_DATA };
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	int ret;

	ret = fi_fabric(s->info->fabric_attr, &s->fabric, NULL);
	if (!ret)
		ret = fi_domain(s->fabric, s->info, &s->domain, NULL);
	if (!ret)
		ret = fi_cq_open(s->domain, &cqa, &s->cq, NULL);
	if (!ret && s->type == FI_EP_MSG)
		ret = fi_eq_open(s->fabric, &eqa, &s->eq, NULL);
	if (!ret && s->type == FI_EP_RDM)
		ret = fi_av_open(s->domain, &ava, &s->av, NULL);
	return ret;
}

/* An endpoint for info, bound to the CQ (and AV or EQ) and cntrs. */
static int side_ep(struct side *s, struct fi_info *info,
		   struct fid_cntr **cntr, const uint64_t *flags, int ncntr)
{
	int ret, i;

	ret = fi_endpoint(s->domain, info, &s->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret && s->av)
		ret = fi_ep_bind(s->ep, &s->av->fid, 0);
	if (!ret && s->eq)
		ret = fi_ep_bind(s->ep, &s->eq->fid, 0);
	for (i = 0; !ret && i < ncntr; i++)
		ret = fi_ep_bind(s->ep, &cntr[i]->fid, flags[i]);
	if (!ret)
		ret = fi_enable(s->ep);
	return ret;
}

/* Everything but the domain and fabric (regions, counters close next). */
static void side_close_eps(struct side *s)
{
	if (s->ep)
		fi_close(&s->ep->fid);
	if (s->pep)
		fi_close(&s->pep->fid);
	if (s->av)
		fi_close(&s->av->fid);
	if (s->eq)
		fi_close(&s->eq->fid);
	if (s->cq)
		fi_close(&s->cq->fid);
	s->ep = NULL;
	s->pep = NULL;
	s->av = NULL;
	s->eq = NULL;
	s->cq = NULL;
}

static void side_close(struct side *s)
{
	side_close_eps(s);
	if (s->domain)
		fi_close(&s->domain->fid);
	if (s->fabric)
		fi_close(&s->fabric->fid);
	fi_freeinfo(s->info);
}

/* Waits for one EQ event of type ev (copying the entry); 0 or -1. */
static int eq_wait(struct side *s, uint32_t ev, struct fi_eq_cm_entry *e)
{
	double end = tap_now() + WAIT_S;
	uint32_t got;

	while (tap_now() < end) {
		ssize_t n = fi_eq_read(s->eq, &got, e, sizeof(*e), 0);

		fi_cq_read(s->cq, NULL, 0);
		if (n == -FI_EAGAIN)
			continue;
		return n > 0 && got == ev ? 0 : -1;
	}
	return -1;
}

/* One completion of ctx on the CQ; 0, or -1 on error or timeout. */
static int cq_wait(struct side *s, void *ctx, struct fi_cq_data_entry *e)
{
	double end = tap_now() + WAIT_S;

	while (tap_now() < end) {
		ssize_t n = fi_cq_read(s->cq, e, 1);

		if (n == 1)
			return e->op_context == ctx ? 0 : -1;
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(s->cq, &err, 0);
			return -1;
		}
	}
	return -1;
}

/* ---- the initiator (child) */

static int child_connect(struct side *s, const struct keys *k,
			 struct fid_cntr *rread)
{
	uint64_t fl = FI_REMOTE_READ;
	struct fi_eq_cm_entry e;
	int ret;

	if (s->type == FI_EP_RDM) {
		ret = side_ep(s, s->info, &rread, &fl, 1);
		if (!ret && fi_av_insert(s->av, k->addr, 1, &s->peer, 0,
					 NULL) != 1)
			ret = -1;
		return ret;
	}
	ret = side_ep(s, s->info, &rread, &fl, 1);
	if (!ret)
		ret = fi_connect(s->ep, k->addr, NULL, 0);
	if (!ret)
		ret = eq_wait(s, FI_CONNECTED, &e);
	s->peer = FI_ADDR_UNSPEC;
	return ret;
}

static bool child_writes(struct side *s, const struct keys *k,
			 uint8_t *buf)
{
	struct fi_cq_data_entry e;
	bool ok = true;
	int i;

	for (i = 0; i < NWRITE; i++) {
		fill(buf, SLOT, 100 + i);
		ok &= fi_write(s->ep, buf, SLOT, NULL, s->peer,
			       k->base_a + (uint64_t)i * SLOT, k->key_a,
			       buf) == 0 &&
		      cq_wait(s, buf, &e) == 0;
	}
	return ok;
}

static bool child_reads(struct side *s, const struct keys *k, uint8_t *buf)
{
	struct fi_cq_data_entry e;
	bool ok = true;
	int i;

	for (i = 0; i < NREAD; i++) {
		memset(buf, 0, REG_B);
		ok &= fi_read(s->ep, buf, REG_B, NULL, s->peer, k->base_b,
			      k->key_b, buf) == 0 &&
		      cq_wait(s, buf, &e) == 0 && same(buf, REG_B, 7);
	}
	return ok;
}

static int child(enum fi_ep_type type, int rfd, int wfd)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	uint8_t res[NCHILD] = { 0 }, *buf = malloc(BIG);
	struct fi_cq_data_entry e;
	struct fid_cntr *rread = NULL;
	struct side s = { .type = type };
	struct keys k;

	if (!buf || xfull(rfd, &k, sizeof(k), false))
		goto out;
	if (getinfo(type, FI_MSG | FI_RMA | FI_RMA_EVENT, NULL, NULL, 0,
		    &s.info) || side_open(&s) ||
	    fi_cntr_open(s.domain, &ca, &rread, NULL))
		goto out;
	res[C_OPEN] = child_connect(&s, &k, rread) == 0;
	if (!res[C_OPEN])
		goto out;
	res[C_WRITES] = child_writes(&s, &k, buf);
	res[C_READS] = child_reads(&s, &k, buf);
	fill(buf, SLOT, 200);
	res[C_WRITE_B] = fi_write(s.ep, buf, SLOT, NULL, s.peer,
				  k.base_b + REG_B - SLOT, k.key_b, buf) == 0 &&
			 cq_wait(&s, buf, &e) == 0;
	/* RDM: the target reads this from us; it is not an FI_RMA_EVENT */
	fill(buf, BIG, 300);
	res[C_RDV] = type != FI_EP_RDM ||
		     (fi_send(s.ep, buf, BIG, NULL, s.peer, buf) == 0 &&
		      cq_wait(&s, buf, &e) == 0);
	res[C_NO_COUNT] = fi_cntr_read(rread) == 0;
	/* the target counts before it lets us go */
	xfull(rfd, &k, 1, false);
out:
	xfull(wfd, res, sizeof(res), true);
	side_close_eps(&s);
	if (rread)
		fi_close(&rread->fid);
	side_close(&s);
	free(buf);
	return 0;
}

/* ---- the target (parent) */

enum { K_EP_W, K_EP_R, K_MR_A, K_MR_B, NCNTR };

struct target {
	struct side s;
	struct fid_cntr *c[NCNTR];
	struct fid_mr *mr_a, *mr_b;
	uint8_t *a, *b, *big;
};

/* Waits until c reaches want, then a moment more for a surplus. */
static uint64_t settle(struct target *t, struct fid_cntr *c, uint64_t want)
{
	double end = tap_now() + 0.2;

	fi_cntr_wait(c, want, WAIT_S * 1000);
	while (tap_now() < end)
		fi_cq_read(t->s.cq, NULL, 0);
	return fi_cntr_read(c);
}

static bool target_regions(struct target *t, const char *what)
{
	bool ok;

	t->a = calloc(1, REG_A);
	t->b = malloc(REG_B);
	fill(t->b, REG_B, 7);
	ok = fi_mr_reg(t->s.domain, t->a, REG_A, FI_REMOTE_WRITE, 0, KEY_A, 0,
		       &t->mr_a, NULL) == 0 &&
	     fi_mr_reg(t->s.domain, t->b, REG_B,
		       FI_REMOTE_WRITE | FI_REMOTE_READ, 0, KEY_B, 0, &t->mr_b,
		       NULL) == 0;
	tap_ok(ok && fi_mr_bind(t->mr_a, &t->c[K_MR_A]->fid,
				FI_REMOTE_WRITE) == 0 &&
		       fi_mr_bind(t->mr_b, &t->c[K_MR_B]->fid,
				  FI_REMOTE_WRITE | FI_REMOTE_READ) == 0,
	       "%s: fi_mr_bind of a counter for FI_REMOTE_WRITE and "
	       "FI_REMOTE_READ", what);
	tap_ok(ok && fi_mr_bind(t->mr_a, &t->c[K_MR_A]->fid, FI_SEND) ==
			     -FI_EINVAL &&
		       fi_mr_bind(t->mr_a, &t->s.cq->fid, FI_REMOTE_WRITE) ==
			       -FI_EINVAL,
	       "%s: fi_mr_bind refuses FI_SEND and a CQ", what);
	tap_ok(fi_close(&t->c[K_MR_A]->fid) == -FI_EBUSY,
	       "%s: a counter bound to a region cannot be closed", what);
	/* index high, key low, as hardware: rdm_rma_trigger needs it */
	tap_ok(ok && fi_mr_key(t->mr_a) < (1u << 24) &&
		       fi_mr_key(t->mr_b) < (1u << 24) &&
		       fi_mr_key(t->mr_a) != fi_mr_key(t->mr_b),
	       "%s: keys of a few regions differ and stay below 2^24", what);
	return ok;
}

/* Address for the child: the RDM endpoint's or the listener's. */
static int target_listen(struct target *t, struct keys *k)
{
	int ret;

	k->addr_len = sizeof(k->addr);
	if (t->s.type == FI_EP_RDM)
		return fi_getname(&t->s.ep->fid, k->addr, &k->addr_len);
	ret = fi_passive_ep(t->s.fabric, t->s.info, &t->s.pep, NULL);
	if (!ret)
		ret = fi_pep_bind(t->s.pep, &t->s.eq->fid, 0);
	if (!ret)
		ret = fi_listen(t->s.pep);
	if (!ret)
		ret = fi_getname(&t->s.pep->fid, k->addr, &k->addr_len);
	return ret;
}

static int target_accept(struct target *t, const uint64_t *fl)
{
	struct fi_eq_cm_entry e;
	int ret;

	ret = eq_wait(&t->s, FI_CONNREQ, &e);
	if (ret)
		return ret;
	ret = side_ep(&t->s, e.info, t->c, fl, 2);
	fi_freeinfo(e.info);
	if (!ret)
		ret = fi_accept(t->s.ep, NULL, 0);
	if (!ret)
		ret = eq_wait(&t->s, FI_CONNECTED, &e);
	return ret;
}

static void target_counts(struct target *t, const char *what, bool rdm,
			  bool up)
{
	struct fi_cq_data_entry e;
	bool ok = true;
	int i;

	if (!up) {
		for (i = 0; i < 5 + rdm; i++)
			tap_ok(0, "%s: counts (no endpoint)", what);
		return;
	}
	tap_ok(settle(t, t->c[K_EP_W], NWRITE + 1) == NWRITE + 1,
	       "%s: endpoint FI_REMOTE_WRITE counter is exactly %d", what,
	       NWRITE + 1);
	tap_ok(settle(t, t->c[K_EP_R], NREAD) == NREAD,
	       "%s: endpoint FI_REMOTE_READ counter is exactly %d", what,
	       NREAD);
	tap_ok(settle(t, t->c[K_MR_A], NWRITE) == NWRITE,
	       "%s: region A's counter is exactly %d (its Writes)", what,
	       NWRITE);
	tap_ok(settle(t, t->c[K_MR_B], NREAD + 1) == NREAD + 1,
	       "%s: region B's counter is exactly %d (Reads and a Write)",
	       what, NREAD + 1);
	for (i = 0; i < NWRITE; i++)
		ok &= same(t->a + (size_t)i * SLOT, SLOT, 100 + i);
	tap_ok(ok && same(t->b + REG_B - SLOT, SLOT, 200),
	       "%s: written octets are in place when the counters say so",
	       what);
	if (!rdm)
		return;
	ok = fi_recv(t->s.ep, t->big, BIG, NULL, FI_ADDR_UNSPEC, t->big) ==
		     0 &&
	     cq_wait(&t->s, t->big, &e) == 0 && e.len == BIG &&
	     same(t->big, BIG, 300);
	tap_ok(ok && fi_cntr_read(t->c[K_EP_W]) == NWRITE + 1 &&
		       fi_cntr_read(t->c[K_EP_R]) == NREAD,
	       "%s: a rendezvous message arrives and counts nothing", what);
}

static void run(enum fi_ep_type type, const char *what)
{
	static const uint64_t fl[] = { FI_REMOTE_WRITE, FI_REMOTE_READ };
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct target t = { .s = { .type = type } };
	uint8_t res[NCHILD] = { 0 };
	int down[2], up[2], i;
	struct keys k = { 0 };
	bool ok;
	pid_t pid;

	/* fork before any thread of ours exists: a child forked while the
	 * progress thread holds an allocator lock (ASan's) would hang */
	if (pipe(down) || pipe(up))
		exit(1);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(down[1]);
		close(up[0]);
		_exit(child(type, down[0], up[1]));
	}
	close(down[0]);
	close(up[1]);
	ok = getinfo(type, FI_MSG | FI_RMA | FI_RMA_EVENT, "127.0.0.1",
		     "0", FI_SOURCE, &t.s.info) == 0;
	tap_ok(ok && (t.s.info->caps & FI_RMA_EVENT) &&
		       (t.s.info->rx_attr->caps & FI_RMA_EVENT),
	       "%s: FI_RMA_EVENT offered in caps and rx caps", what);
	if (ok)
		ok = side_open(&t.s) == 0;
	for (i = 0; ok && i < NCNTR; i++)
		ok = fi_cntr_open(t.s.domain, &ca, &t.c[i], NULL) == 0;
	if (ok)
		ok = target_regions(&t, what);
	else
		for (i = 0; i < 4; i++)
			tap_ok(0, "%s: regions and counters", what);
	t.big = malloc(BIG);
	if (ok && type == FI_EP_RDM)
		ok = side_ep(&t.s, t.s.info, t.c, fl, 2) == 0;
	if (ok)
		ok = target_listen(&t, &k) == 0;
	k.key_a = t.mr_a ? fi_mr_key(t.mr_a) : 0;
	k.key_b = t.mr_b ? fi_mr_key(t.mr_b) : 0;
	/* offsets unless FI_MR_VIRT_ADDR (FI_IWARP_MR_APP_KEYS drops it) */
	if (t.s.info && (t.s.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)) {
		k.base_a = (uintptr_t)t.a;
		k.base_b = (uintptr_t)t.b;
	}
	xfull(down[1], &k, sizeof(k), true);
	if (ok && type == FI_EP_MSG)
		ok = target_accept(&t, fl) == 0;
	tap_ok(ok, "%s: target endpoint with remote counters is up", what);
	target_counts(&t, what, type == FI_EP_RDM, ok);
	xfull(down[1], &k, 1, true);
	/* the child's slots, read while we drive progress for its ops */
	xfull(up[0], res, sizeof(res), false);
	for (i = 0; i < NCHILD; i++)
		tap_ok(res[i], "%s: initiator: %s", what, child_name[i]);
	tap_child(pid, 3 * WAIT_S, "initiator");
	close(down[1]);
	close(up[0]);
	side_close_eps(&t.s);
	if (t.mr_a)
		fi_close(&t.mr_a->fid);
	if (t.mr_b)
		fi_close(&t.mr_b->fid);
	for (i = 0; i < NCNTR; i++)
		if (t.c[i])
			fi_close(&t.c[i]->fid);
	side_close(&t.s);
	free(t.a);
	free(t.b);
	free(t.big);
}

/* Without FI_RMA_EVENT in the hints it is not there, nor bindable. */
static void not_asked(enum fi_ep_type type, const char *what)
{
	struct fi_cntr_attr ca = { .events = FI_CNTR_EVENTS_COMP };
	struct side s = { .type = type };
	struct fid_cntr *c = NULL;
	bool ok;

	ok = getinfo(type, FI_MSG | FI_RMA, NULL, NULL, 0, &s.info) == 0;
	tap_ok(ok && !(s.info->caps & FI_RMA_EVENT) &&
		       !(s.info->rx_attr->caps & FI_RMA_EVENT),
	       "%s: FI_RMA_EVENT not in caps unless asked", what);
	if (ok)
		ok = side_open(&s) == 0 &&
		     fi_cntr_open(s.domain, &ca, &c, NULL) == 0 &&
		     fi_endpoint(s.domain, s.info, &s.ep, NULL) == 0;
	tap_ok(ok && fi_ep_bind(s.ep, &c->fid, FI_REMOTE_WRITE) ==
			     -FI_ENOSYS &&
		       fi_ep_bind(s.ep, &c->fid, FI_REMOTE_READ) == -FI_ENOSYS,
	       "%s: without it FI_REMOTE_WRITE/READ counters are refused",
	       what);
	side_close_eps(&s);
	if (c)
		fi_close(&c->fid);
	side_close(&s);
}

/*
 * FI_IWARP_MR_APP_KEYS=1 in the environment (test/run runs it both
 * ways): the reply drops FI_MR_PROV_KEY and FI_MR_VIRT_ADDR and regions
 * take the keys asked for, each once; otherwise the keys are ours.
 */
static void app_keys(void)
{
	const char *env = getenv("FI_IWARP_MR_APP_KEYS");
	bool app = env && atoi(env);
	struct side s = { .type = FI_EP_RDM };
	struct fid_mr *m1 = NULL, *m2 = NULL, *m3 = NULL;
	static uint8_t buf[64];
	int r2 = 0, r3 = 0;
	bool ok;

	ok = getinfo(FI_EP_RDM, FI_MSG | FI_RMA, NULL, NULL, 0, &s.info) == 0;
	tap_ok(ok && !(s.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) &&
		       !(s.info->domain_attr->mr_mode & FI_MR_PROV_KEY) == app,
	       "FI_IWARP_MR_APP_KEYS %s: the reply %s FI_MR_PROV_KEY, never "
	       "has FI_MR_VIRT_ADDR", app ? "on" : "off",
	       app ? "drops" : "keeps");
	if (ok)
		ok = side_open(&s) == 0 &&
		     fi_mr_reg(s.domain, buf, 32, FI_REMOTE_WRITE, 0, KEY_A, 0,
			       &m1, NULL) == 0;
	if (ok) {
		r2 = fi_mr_reg(s.domain, buf + 32, 32, FI_REMOTE_WRITE, 0,
			       KEY_A, 0, &m2, NULL);
		r3 = fi_mr_reg(s.domain, buf, 8, FI_REMOTE_WRITE, 0,
			       1ULL << 33, 0, &m3, NULL);
	}
	if (app)
		tap_ok(ok && fi_mr_key(m1) == KEY_A && r2 == -FI_ENOKEY &&
			       r3 == -FI_EKEYREJECTED,
		       "application keys: key %d taken, again -FI_ENOKEY, "
		       "beyond 32 bits -FI_EKEYREJECTED (%d %d)", KEY_A, r2,
		       r3);
	else
		tap_ok(ok && !r2 && !r3 && fi_mr_key(m1) == KEY_A &&
			       fi_mr_key(m2) != KEY_A &&
			       fi_mr_key(m3) != fi_mr_key(m2) &&
			       fi_mr_key(m3) >> 32 == 0,
		       "provider keys: a free key asked for is taken; a taken "
		       "one or one beyond 32 bits gets one of ours (%d %d)",
		       r2, r3);
	if (m3)
		fi_close(&m3->fid);
	if (m2)
		fi_close(&m2->fid);
	if (m1)
		fi_close(&m1->fid);
	side_close(&s);	/* nothing of the domain is left open */
}

int main(void)
{
	struct fi_info *info = NULL;

	setenv("FI_IWARP_IFACE", "lo", 1);
	app_keys();
	run(FI_EP_RDM, "RDM");
	run(FI_EP_MSG, "MSG");
	not_asked(FI_EP_RDM, "RDM");
	not_asked(FI_EP_MSG, "MSG");
	tap_ok(getinfo(FI_EP_DGRAM, FI_MSG | FI_RMA_EVENT, NULL, NULL, 0,
		       &info) == -FI_ENODATA,
	       "DGRAM: FI_RMA_EVENT is not offered");
	fi_freeinfo(info);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
