/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared contexts of the iwarp provider through the public libfabric
 * API, over real sockets on 127.0.0.1:
 * - fi_getinfo takes FI_SHARED_CONTEXT for tx and rx on every type;
 * - on RDM (a forked sender), DGRAM and MSG (in one process): three
 *   endpoints bound to one shared transmit and one shared receive
 *   context, each with a receive CQ of its own; receives posted to the
 *   shared context are filled in posting order by whichever endpoint a
 *   message reaches, the completion lands on that endpoint's CQ and the
 *   data is the message sent to it; a message that came before any
 *   receive (RDM, MSG) takes one posted later; tagged receives (RDM);
 * - errors: a second bind, a receive posted on a bound endpoint,
 *   FI_MULTI_RECV on the context, closing a context while bound
 *   (-FI_EBUSY), fi_cancel; then the close order that works;
 * - scalable RDM endpoints: fi_rx_addr names the receive context, each
 *   context completes on its own CQ, unexpected messages wait for their
 *   context, tags, a context index the receiver lacks is refused, the
 *   close order.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so.
 */
#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "fi_api.h"
#include "tap.h"

#define API	TEST_API
#define NEP	3
#define LEN	64
#define TMO	10.0

static const char *type_name[] = {
	[FI_EP_MSG] = "MSG", [FI_EP_RDM] = "RDM", [FI_EP_DGRAM] = "DGRAM",
};

/* One side: fabric, domain, and what the endpoints share. */
struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_eq *eq;
	struct fid_stx *stx;
	struct fid_ep *srx;
	struct fid_cq *txcq;
	struct fid_ep *ep[NEP];
	struct fid_cq *rxcq[NEP];
	fi_addr_t peer[NEP];
};

static uint8_t rbuf[NEP + 1][LEN], sbuf[NEP][LEN];
static int ctx[NEP + 1];

/* ---- helpers */

static struct fi_info *hints_new(enum fi_ep_type type, bool shared)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		exit(2);
	h->ep_attr->type = type;
	h->addr_format = FI_SOCKADDR_IN;
	h->caps = FI_MSG | (type == FI_EP_MSG ? 0 : FI_TAGGED);
	h->fabric_attr->prov_name = strdup("iwarp");
	h->domain_attr->name = strdup("lo");
	h->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	if (shared) {
		h->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
		h->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	}
	return h;
}

static int getinfo(enum fi_ep_type type, const char *node, const char *svc,
		   uint64_t flags, struct fi_info **out)
{
	struct fi_info *h = hints_new(type, true);
	int ret = fi_getinfo(API, node, svc, flags, h, out);

	fi_freeinfo(h);
	return ret;
}

static int cq_open(struct side *s, struct fid_cq **cq)
{
	struct fi_cq_attr a = { .format = FI_CQ_FORMAT_TAGGED,
				.wait_obj = FI_WAIT_NONE };

	return fi_cq_open(s->domain, &a, cq, NULL);
}

/* Fabric, domain, AV (not MSG), EQ, shared tx CQ. */
static int side_open(struct side *s, enum fi_ep_type type, const char *node,
		     const char *svc, uint64_t flags)
{
	struct fi_av_attr aa = { .type = FI_AV_TABLE };
	struct fi_eq_attr ea = { .wait_obj = FI_WAIT_UNSPEC };
	int ret;

	memset(s, 0, sizeof(*s));
	ret = getinfo(type, node, svc, flags, &s->info);
	if (!ret)
		ret = fi_fabric(s->info->fabric_attr, &s->fabric, NULL);
	if (!ret)
		ret = fi_domain(s->fabric, s->info, &s->domain, NULL);
	if (!ret && type != FI_EP_MSG)
		ret = fi_av_open(s->domain, &aa, &s->av, NULL);
	if (!ret)
		ret = fi_eq_open(s->fabric, &ea, &s->eq, NULL);
	if (!ret)
		ret = cq_open(s, &s->txcq);
	return ret;
}

static int side_contexts(struct side *s)
{
	int ret = fi_stx_context(s->domain, s->info->tx_attr, &s->stx, NULL);

	return ret ? ret : fi_srx_context(s->domain, s->info->rx_attr,
					  &s->srx, NULL);
}

/* Binds endpoint i to what it shares and to its own receive CQ. */
static int ep_setup(struct side *s, int i, bool shared)
{
	struct fid_ep *ep = s->ep[i];
	int ret = cq_open(s, &s->rxcq[i]);

	if (!ret && s->av)
		ret = fi_ep_bind(ep, &s->av->fid, 0);
	if (!ret && !s->av)
		ret = fi_ep_bind(ep, &s->eq->fid, 0);
	if (!ret && shared)
		ret = fi_ep_bind(ep, &s->stx->fid, 0);
	if (!ret && shared)
		ret = fi_ep_bind(ep, &s->srx->fid, 0);
	if (!ret)
		ret = fi_ep_bind(ep, &s->txcq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(ep, &s->rxcq[i]->fid, FI_RECV);
	return ret ? ret : fi_enable(ep);
}

static void side_close(struct side *s)
{
	int i;

	for (i = 0; i < NEP; i++)
		if (s->ep[i])
			fi_close(&s->ep[i]->fid);
	if (s->srx)
		fi_close(&s->srx->fid);
	if (s->stx)
		fi_close(&s->stx->fid);
	for (i = 0; i < NEP; i++)
		if (s->rxcq[i])
			fi_close(&s->rxcq[i]->fid);
	if (s->txcq)
		fi_close(&s->txcq->fid);
	if (s->av)
		fi_close(&s->av->fid);
	if (s->eq)
		fi_close(&s->eq->fid);
	if (s->domain)
		fi_close(&s->domain->fid);
	if (s->fabric)
		fi_close(&s->fabric->fid);
	fi_freeinfo(s->info);
	memset(s, 0, sizeof(*s));
}

/* One completion of cq within TMO (other CQs given progress), or an
 * error: 1, or 0 on timeout / error entry (err set). */
static int cq_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		   struct fid_cq *also, int *err)
{
	double end = tap_now() + TMO;
	struct fi_cq_tagged_entry junk;
	struct fi_cq_err_entry ee;
	ssize_t n;

	*err = 0;
	while (tap_now() < end) {
		n = fi_cq_read(cq, e, 1);
		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			memset(&ee, 0, sizeof(ee));
			fi_cq_readerr(cq, &ee, 0);
			*err = ee.err;
			e->op_context = ee.op_context;
			return 0;
		}
		if (also)
			fi_cq_read(also, &junk, 1);
	}
	return 0;
}

/* Drives progress of two CQs that expect nothing a little while. */
static void spin(struct fid_cq *a, struct fid_cq *b, double secs)
{
	struct fi_cq_tagged_entry e;
	double end = tap_now() + secs;

	while (tap_now() < end) {
		fi_cq_read(a, &e, 1);
		fi_cq_read(b, &e, 1);
	}
}

static void fill(uint8_t *p, int seed)
{
	int i;

	for (i = 0; i < LEN; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + 1);
}

/* Index of the receive buffer behind context c, or -1. */
static int ctx_index(void *c)
{
	int i;

	for (i = 0; i <= NEP; i++)
		if (c == &ctx[i])
			return i;
	return -1;
}

/* Receives on the shared context: endpoint i's CQ gets exactly one
 * completion and its buffer holds message i (seed base + i). */
static void check_delivery(struct side *r, const char *t, int base)
{
	struct fi_cq_tagged_entry e;
	uint8_t want[LEN];
	bool used[NEP + 1] = { false };
	int i, k, err, ok;

	for (i = 0; i < NEP; i++) {
		ok = cq_wait(r->rxcq[i], &e, r->txcq, &err);
		k = ok ? ctx_index(e.op_context) : -1;
		fill(want, base + i);
		tap_ok(ok && k >= 0 && !used[k] && e.len == LEN &&
		       (e.flags & FI_RECV) && !memcmp(rbuf[k], want, LEN),
		       "%s: endpoint %d's own CQ completes a receive of the "
		       "shared context with the message sent to it (ctx %d, "
		       "err %d)", t, i, k, err);
		if (k >= 0)
			used[k] = true;
		else if (ok)
			tap_diag("context %p flags %#llx len %zu", e.op_context,
				 (unsigned long long)e.flags, e.len);
	}
	spin(r->txcq, r->txcq, 0.05);
	for (i = 0, ok = 0; i < NEP; i++)
		ok += fi_cq_read(r->rxcq[i], &e, 1) == 1;
	tap_ok(!ok, "%s: no completion beyond one per message", t);
}

static int post_shared(struct side *r, int first, int n)
{
	int i, ret = 0;

	for (i = first; i < first + n && !ret; i++) {
		memset(rbuf[i], 0, LEN);
		ret = (int)fi_recv(r->srx, rbuf[i], LEN, NULL, FI_ADDR_UNSPEC,
				   &ctx[i]);
	}
	return ret;
}

/* The error paths every type shares; the context stays usable. */
static void check_errors(struct side *r, const char *t)
{
	struct fi_cq_tagged_entry e;
	struct fi_msg m = { 0 };
	struct iovec iov = { rbuf[0], LEN };
	int err = 0, ok;

	struct fid_ep *spare = NULL;

	ok = !fi_endpoint(r->domain, r->info, &spare, NULL) &&
	     !fi_ep_bind(spare, &r->srx->fid, 0) &&
	     !fi_ep_bind(spare, &r->stx->fid, 0) &&
	     fi_ep_bind(spare, &r->srx->fid, 0) == -FI_EINVAL &&
	     fi_ep_bind(spare, &r->stx->fid, 0) == -FI_EINVAL;
	if (spare)
		ok = !fi_close(&spare->fid) && ok;
	tap_ok(ok, "%s: binding an endpoint to shared contexts twice fails; "
	       "an endpoint never enabled closes", t);
	tap_ok(fi_ep_bind(r->ep[0], &r->srx->fid, 0) == -FI_EBUSY,
	       "%s: binding an enabled endpoint: -FI_EBUSY", t);
	tap_ok(fi_recv(r->ep[0], rbuf[0], LEN, NULL, FI_ADDR_UNSPEC,
		       &ctx[0]) == -FI_EINVAL,
	       "%s: a bound endpoint takes no receive of its own", t);
	m.msg_iov = &iov;
	m.iov_count = 1;
	m.addr = FI_ADDR_UNSPEC;
	m.context = &ctx[0];
	tap_ok(fi_recvmsg(r->srx, &m, FI_MULTI_RECV) == -FI_EINVAL,
	       "%s: FI_MULTI_RECV on a shared context is refused", t);
	tap_ok(fi_close(&r->srx->fid) == -FI_EBUSY &&
	       fi_close(&r->stx->fid) == -FI_EBUSY,
	       "%s: closing a shared context while bound: -FI_EBUSY", t);
	post_shared(r, NEP, 1);
	tap_ok(fi_cancel(&r->srx->fid, &ctx[NEP]) == 0 &&
	       !cq_wait(r->rxcq[0], &e, NULL, &err) &&
	       err == FI_ECANCELED && e.op_context == &ctx[NEP] &&
	       fi_cancel(&r->srx->fid, &ctx[NEP]) == -FI_ENOENT,
	       "%s: fi_cancel on the shared context: FI_ECANCELED on the "
	       "first bound endpoint's CQ, once (err %d)", t, err);
	ok = fi_close(&r->ep[0]->fid) == 0;
	r->ep[0] = NULL;
	ok = ok && fi_close(&r->srx->fid) == -FI_EBUSY;
	ok = ok && !fi_close(&r->ep[1]->fid) && !fi_close(&r->ep[2]->fid);
	r->ep[1] = r->ep[2] = NULL;
	ok = ok && !fi_close(&r->srx->fid) && !fi_close(&r->stx->fid);
	r->srx = NULL;
	r->stx = NULL;
	tap_ok(ok, "%s: endpoints, then the shared contexts, close", t);
}

/* ---- fi_getinfo */

static void test_getinfo(void)
{
	enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_MSG, FI_EP_DGRAM };
	struct fi_info *fi = NULL;
	size_t i;
	int ret;

	for (i = 0; i < 3; i++) {
		ret = getinfo(types[i], "127.0.0.1", NULL, FI_SOURCE, &fi);
		tap_ok(!ret && fi->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT &&
		       fi->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT &&
		       fi->domain_attr->max_ep_stx_ctx >= 1 &&
		       fi->domain_attr->max_ep_srx_ctx >= 1,
		       "%s: fi_getinfo takes and echoes FI_SHARED_CONTEXT "
		       "(%d)", type_name[types[i]], ret);
		fi_freeinfo(fi);
		fi = NULL;
	}
}

/* ---- RDM: a forked sender */

static int rdm_open_eps(struct side *s, bool shared)
{
	int i, ret = 0;

	for (i = 0; i < NEP && !ret; i++) {
		ret = fi_endpoint(s->domain, s->info, &s->ep[i], NULL);
		if (!ret)
			ret = ep_setup(s, i, shared);
	}
	return ret;
}

static int rdm_names(struct side *s, struct sockaddr_in *names)
{
	size_t len;
	int i, ret = 0;

	for (i = 0; i < NEP && !ret; i++) {
		len = sizeof(names[i]);
		ret = fi_getname(&s->ep[i]->fid, &names[i], &len);
	}
	return ret;
}

/* The child: sends message base + i to receiver endpoint i, tagged
 * too, then waits for its send completions. */
static int rdm_sender(int rfd)
{
	struct sockaddr_in names[NEP];
	struct fi_cq_tagged_entry e;
	struct side s;
	int i, err, ret;

	if (read(rfd, names, sizeof(names)) != sizeof(names))
		return 3;
	ret = side_open(&s, FI_EP_RDM, "127.0.0.1", NULL, FI_SOURCE);
	if (!ret)
		ret = fi_endpoint(s.domain, s.info, &s.ep[0], NULL);
	if (!ret)
		ret = ep_setup(&s, 0, false);
	if (!ret)
		ret = fi_av_insert(s.av, names, NEP, s.peer, 0, NULL) == NEP ?
		      0 : 4;
	for (i = 0; i < NEP && !ret; i++) {
		fill(sbuf[i], 10 + i);
		ret = (int)fi_send(s.ep[0], sbuf[i], LEN, NULL, s.peer[i],
				   NULL);
	}
	for (i = 0; i < NEP && !ret; i++)
		ret = cq_wait(s.txcq, &e, NULL, &err) ? 0 : 5;
	/* then one before its receive is posted, and tagged ones */
	if (!ret && read(rfd, &i, sizeof(i)) == sizeof(i)) {
		fill(sbuf[0], 20);
		ret = (int)fi_send(s.ep[0], sbuf[0], LEN, NULL, s.peer[1],
				   NULL);
	}
	for (i = 0; i < NEP && !ret; i++) {
		fill(sbuf[i], 30 + i);
		ret = (int)fi_tsend(s.ep[0], sbuf[i], LEN, NULL, s.peer[i],
				    0x100 + i, NULL);
	}
	for (i = 0; i < NEP + 1 && !ret; i++)
		ret = cq_wait(s.txcq, &e, NULL, &err) ? 0 : 5;
	/* the receiver reads our last messages before we go */
	if (!ret)
		ret = read(rfd, &i, sizeof(i)) == sizeof(i) ? 0 : 6;
	side_close(&s);
	return ret;
}

static void rdm_tagged(struct side *r)
{
	struct fi_cq_tagged_entry e;
	uint8_t want[LEN];
	int i, k, err, ok, ret = 0;

	/* posted in reverse tag order: each takes only its own tag */
	for (i = NEP - 1; i >= 0 && !ret; i--) {
		memset(rbuf[i], 0, LEN);
		ret = (int)fi_trecv(r->srx, rbuf[i], LEN, NULL, FI_ADDR_UNSPEC,
				    0x100 + i, 0, &ctx[i]);
	}
	for (i = 0; i < NEP; i++) {
		ok = !ret && cq_wait(r->rxcq[i], &e, r->txcq, &err);
		k = ok ? ctx_index(e.op_context) : -1;
		fill(want, 30 + i);
		tap_ok(ok && k == i && e.tag == 0x100u + i &&
		       (e.flags & FI_TAGGED) && !memcmp(rbuf[i], want, LEN),
		       "RDM: tagged receive %d of the shared context matched "
		       "by tag, on endpoint %d's CQ", i, i);
	}
}

/* The sender is forked before the receiver opens anything: a child must
 * not inherit the provider's objects (their sockets would be its too). */
static void test_rdm(void)
{
	struct sockaddr_in names[NEP];
	struct fi_cq_tagged_entry e;
	int fds[2], go = 1, err, ok, ret;
	struct side r;
	pid_t pid;
	uint8_t want[LEN];

	if (pipe(fds))
		exit(1);
	pid = fork();
	if (!pid) {
		close(fds[1]);
		_exit(rdm_sender(fds[0]));
	}
	close(fds[0]);
	ret = side_open(&r, FI_EP_RDM, "127.0.0.1", NULL, FI_SOURCE);
	if (!ret)
		ret = side_contexts(&r);
	if (!ret)
		ret = rdm_open_eps(&r, true);
	if (!ret)
		ret = rdm_names(&r, names);
	tap_ok(!ret, "RDM: 3 endpoints bound to a shared tx and rx context "
	       "(%d)", ret);
	if (ret || post_shared(&r, 0, NEP) ||
	    write(fds[1], names, sizeof(names)) != sizeof(names))
		exit(1);
	check_delivery(&r, "RDM", 10);
	/* the next message arrives unexpected, then a receive is posted */
	if (write(fds[1], &go, sizeof(go)) != sizeof(go))
		exit(1);
	spin(r.txcq, r.txcq, 0.3);
	ret = post_shared(&r, 0, 1);
	ok = !ret && cq_wait(r.rxcq[1], &e, r.txcq, &err);
	fill(want, 20);
	tap_ok(ok && e.op_context == &ctx[0] && !memcmp(rbuf[0], want, LEN),
	       "RDM: a message that came first takes the shared receive "
	       "posted later, on its endpoint's CQ");
	rdm_tagged(&r);
	if (write(fds[1], &go, sizeof(go)) != sizeof(go))
		exit(1);
	tap_child(pid, 30, "RDM sender");
	close(fds[1]);
	check_errors(&r, "RDM");
	side_close(&r);
}

/* ---- DGRAM: two sides in one process */

static void test_dgram(void)
{
	struct sockaddr_in names[NEP];
	struct side r, s;
	int i, ret;

	ret = side_open(&r, FI_EP_DGRAM, "127.0.0.1", NULL, FI_SOURCE);
	if (!ret)
		ret = side_contexts(&r);
	if (!ret)
		ret = rdm_open_eps(&r, true);
	if (!ret)
		ret = rdm_names(&r, names);
	if (!ret)
		ret = side_open(&s, FI_EP_DGRAM, "127.0.0.1", NULL, FI_SOURCE);
	if (!ret)
		ret = fi_endpoint(s.domain, s.info, &s.ep[0], NULL);
	if (!ret)
		ret = ep_setup(&s, 0, false);
	if (!ret)
		ret = fi_av_insert(s.av, names, NEP, s.peer, 0, NULL) == NEP ?
		      0 : -1;
	tap_ok(!ret, "DGRAM: 3 endpoints bound to a shared tx and rx context "
	       "(%d)", ret);
	if (ret || post_shared(&r, 0, NEP))
		exit(1);
	for (i = 0; i < NEP && !ret; i++) {
		fill(sbuf[i], 40 + i);
		ret = (int)fi_send(s.ep[0], sbuf[i], LEN, NULL, s.peer[i],
				   NULL);
	}
	check_delivery(&r, "DGRAM", 40);
	check_errors(&r, "DGRAM");
	side_close(&s);
	side_close(&r);
}

/* ---- MSG: passive side and three connections in one process */

static int eq_event(struct fid_eq *eq, uint32_t want,
		    struct fi_eq_cm_entry *e, struct fid_cq *cq)
{
	double end = tap_now() + TMO;
	struct fi_cq_tagged_entry junk;
	uint32_t ev;
	ssize_t n;

	while (tap_now() < end) {
		n = fi_eq_read(eq, &ev, e, sizeof(*e), 0);
		if (n > 0)
			return ev == want ? 0 : -1;
		if (n != -FI_EAGAIN)
			return (int)n;
		fi_cq_read(cq, &junk, 0);
	}
	return -FI_ETIMEDOUT;
}

/* Server endpoint i from a connection request; client endpoint i. */
static int msg_connect(struct side *r, struct side *c, struct fid_pep *pep,
		       int i)
{
	struct fi_eq_cm_entry e;
	int ret;

	ret = fi_endpoint(c->domain, c->info, &c->ep[i], NULL);
	if (!ret)
		ret = ep_setup(c, i, false);
	if (!ret)
		ret = fi_connect(c->ep[i], c->info->dest_addr, NULL, 0);
	if (!ret)
		ret = eq_event(r->eq, FI_CONNREQ, &e, c->txcq);
	if (!ret)
		ret = fi_endpoint(r->domain, e.info, &r->ep[i], NULL);
	fi_freeinfo(e.info);
	if (!ret)
		ret = ep_setup(r, i, true);
	if (!ret)
		ret = fi_accept(r->ep[i], NULL, 0);
	if (!ret)
		ret = eq_event(r->eq, FI_CONNECTED, &e, c->txcq);
	if (!ret)
		ret = eq_event(c->eq, FI_CONNECTED, &e, r->txcq);
	return ret;
}

static int msg_open(struct side *r, struct side *c, struct fid_pep **pep)
{
	int i, ret;

	ret = side_open(r, FI_EP_MSG, "127.0.0.1", "23851", FI_SOURCE);
	if (!ret)
		ret = side_contexts(r);
	if (!ret)
		ret = fi_passive_ep(r->fabric, r->info, pep, NULL);
	if (!ret)
		ret = fi_pep_bind(*pep, &r->eq->fid, 0);
	if (!ret)
		ret = fi_listen(*pep);
	if (!ret)
		ret = side_open(c, FI_EP_MSG, "127.0.0.1", "23851", 0);
	for (i = 0; i < NEP && !ret; i++)
		ret = msg_connect(r, c, *pep, i);
	return ret;
}

static void test_msg(void)
{
	struct fi_cq_tagged_entry e;
	struct fid_pep *pep = NULL;
	struct side r, c;
	uint8_t want[LEN];
	int i, ret, err, ok;

	ret = msg_open(&r, &c, &pep);
	tap_ok(!ret, "MSG: 3 accepted endpoints bound to a shared tx and rx "
	       "context (%d)", ret);
	if (ret)
		exit(1);
	/* the first message waits in its stream for a receive */
	fill(sbuf[0], 50);
	ret = (int)fi_send(c.ep[2], sbuf[0], LEN, NULL, 0, NULL);
	spin(r.txcq, c.txcq, 0.3);
	ret = ret ? ret : post_shared(&r, 0, 1);
	ok = !ret && cq_wait(r.rxcq[2], &e, c.txcq, &err);
	fill(want, 50);
	tap_ok(ok && e.op_context == &ctx[0] && !memcmp(rbuf[0], want, LEN),
	       "MSG: a Send waiting in its stream takes the shared receive "
	       "posted later, on its endpoint's CQ");
	ret = post_shared(&r, 0, NEP);
	for (i = 0; i < NEP && !ret; i++) {
		fill(sbuf[i], 60 + i);
		ret = (int)fi_send(c.ep[i], sbuf[i], LEN, NULL, 0, NULL);
	}
	check_delivery(&r, "MSG", 60);
	check_errors(&r, "MSG");
	fi_close(&pep->fid);
	side_close(&c);
	side_close(&r);
}

/* ---- scalable RDM endpoints: two in one process */

struct sepside {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *sep;
	struct fid_ep *tx[NEP], *rx[NEP];
	struct fid_cq *txcq[NEP], *rxcq[NEP];
};

#define RX_BITS 2

static struct fi_info *sep_hints(enum fi_ep_type type)
{
	struct fi_info *h = hints_new(type, false);

	h->caps = FI_MSG | (type == FI_EP_RDM ? FI_TAGGED | FI_NAMED_RX_CTX :
						0);
	h->ep_attr->tx_ctx_cnt = NEP;
	h->ep_attr->rx_ctx_cnt = NEP;
	return h;
}

/* Contexts carry no RMA: an RMA entry offers none (Open MPI's btl ofi
 * opens a scalable endpoint whenever max_ep_tx_ctx is above 1). */
static void test_sep_rma(void)
{
	struct fi_info *h = hints_new(FI_EP_RDM, false), *fi = NULL;
	int ret, ret2;

	h->caps = FI_MSG | FI_RMA | FI_ATOMIC;
	ret = fi_getinfo(API, "127.0.0.1", NULL, FI_SOURCE, h, &fi);
	ret = ret ? ret : fi->domain_attr->max_ep_tx_ctx != 1 ||
			  fi->domain_attr->max_ep_rx_ctx != 1;
	fi_freeinfo(fi);
	fi = NULL;
	h->ep_attr->rx_ctx_cnt = 2;
	ret2 = fi_getinfo(API, "127.0.0.1", NULL, FI_SOURCE, h, &fi);
	tap_ok(!ret && ret2 == -FI_ENODATA,
	       "RDM with RMA and atomics: one context per endpoint, 2 rx "
	       "contexts -> ENODATA (%d, %d)", ret, ret2);
	fi_freeinfo(fi);
	fi_freeinfo(h);
}

static void test_sep_getinfo(void)
{
	struct fi_info *h = sep_hints(FI_EP_RDM), *fi = NULL;
	int ret = fi_getinfo(API, "127.0.0.1", NULL, FI_SOURCE, h, &fi);

	tap_ok(!ret && fi->ep_attr->tx_ctx_cnt == NEP &&
	       fi->ep_attr->rx_ctx_cnt == NEP &&
	       fi->domain_attr->max_ep_rx_ctx >= NEP &&
	       (fi->caps & FI_NAMED_RX_CTX),
	       "RDM: fi_getinfo offers %d tx and rx contexts and "
	       "FI_NAMED_RX_CTX (%d)", NEP, ret);
	fi_freeinfo(fi);
	fi_freeinfo(h);
	fi = NULL;
	h = sep_hints(FI_EP_MSG);
	ret = fi_getinfo(API, "127.0.0.1", NULL, FI_SOURCE, h, &fi);
	tap_ok(ret == -FI_ENODATA, "MSG: no scalable endpoint (%d)", ret);
	fi_freeinfo(fi);
	fi_freeinfo(h);
	test_sep_rma();
}

static int sep_ctx(struct sepside *s, int i)
{
	struct side tmp = { .domain = s->domain };
	int ret;

	ret = fi_tx_context(s->sep, i, NULL, &s->tx[i], NULL);
	if (!ret)
		ret = cq_open(&tmp, &s->txcq[i]);
	if (!ret)
		ret = fi_ep_bind(s->tx[i], &s->txcq[i]->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_enable(s->tx[i]);
	if (!ret)
		ret = fi_rx_context(s->sep, i, NULL, &s->rx[i], NULL);
	if (!ret)
		ret = cq_open(&tmp, &s->rxcq[i]);
	if (!ret)
		ret = fi_ep_bind(s->rx[i], &s->rxcq[i]->fid, FI_RECV);
	return ret ? ret : fi_enable(s->rx[i]);
}

static int sep_open(struct sepside *s)
{
	struct fi_av_attr aa = { .type = FI_AV_TABLE,
				 .rx_ctx_bits = RX_BITS };
	struct fi_info *h = sep_hints(FI_EP_RDM);
	int i, ret;

	memset(s, 0, sizeof(*s));
	ret = fi_getinfo(API, "127.0.0.1", NULL, FI_SOURCE, h, &s->info);
	fi_freeinfo(h);
	if (!ret)
		ret = fi_fabric(s->info->fabric_attr, &s->fabric, NULL);
	if (!ret)
		ret = fi_domain(s->fabric, s->info, &s->domain, NULL);
	if (!ret)
		ret = fi_av_open(s->domain, &aa, &s->av, NULL);
	if (!ret)
		ret = fi_scalable_ep(s->domain, s->info, &s->sep, NULL);
	if (!ret)
		ret = fi_scalable_ep_bind(s->sep, &s->av->fid, 0);
	for (i = 0; i < NEP && !ret; i++)
		ret = sep_ctx(s, i);
	return ret ? ret : fi_enable(s->sep);
}

static int sep_close_ctxs(struct sepside *s)
{
	int i, ret = 0;

	for (i = 0; i < NEP; i++) {
		if (s->tx[i] && fi_close(&s->tx[i]->fid))
			ret = -1;
		if (s->rx[i] && fi_close(&s->rx[i]->fid))
			ret = -1;
		s->tx[i] = s->rx[i] = NULL;
	}
	return ret;
}

static void sep_close(struct sepside *s)
{
	int i;

	sep_close_ctxs(s);
	if (s->sep)
		fi_close(&s->sep->fid);
	for (i = 0; i < NEP; i++) {
		if (s->txcq[i])
			fi_close(&s->txcq[i]->fid);
		if (s->rxcq[i])
			fi_close(&s->rxcq[i]->fid);
	}
	if (s->av)
		fi_close(&s->av->fid);
	if (s->domain)
		fi_close(&s->domain->fid);
	if (s->fabric)
		fi_close(&s->fabric->fid);
	fi_freeinfo(s->info);
}

/* Receive j of the scalable endpoint: one completion on its own CQ,
 * the buffer holds the message seeded seed. */
static bool sep_got(struct sepside *r, struct sepside *s, int j, int k,
		    int seed)
{
	struct fi_cq_tagged_entry e;
	uint8_t want[LEN];
	int err;

	fill(want, seed);
	return cq_wait(r->rxcq[j], &e, s->rxcq[0], &err) &&
	       e.op_context == &ctx[k] && e.len == LEN &&
	       !memcmp(rbuf[k], want, LEN);
}

static void sep_named(struct sepside *r, struct sepside *s, fi_addr_t peer)
{
	struct fi_cq_tagged_entry e;
	int i, j, err, ret = 0, n = 0;

	for (j = 0; j < NEP && !ret; j++) {
		memset(rbuf[j], 0, LEN);
		ret = (int)fi_recv(r->rx[j], rbuf[j], LEN, NULL,
				   FI_ADDR_UNSPEC, &ctx[j]);
	}
	/* tx context i to rx context i + 1 */
	for (i = 0; i < NEP && !ret; i++) {
		fill(sbuf[i], 70 + i);
		ret = (int)fi_send(s->tx[i], sbuf[i], LEN, NULL,
				   fi_rx_addr(peer, (i + 1) % NEP, RX_BITS),
				   &ctx[i]);
	}
	for (j = 0; j < NEP; j++)
		tap_ok(!ret && sep_got(r, s, j, j, 70 + (j + NEP - 1) % NEP),
		       "scalable: rx context %d completes on its own CQ with "
		       "the message fi_rx_addr named it for (%d)", j, ret);
	for (i = 0; i < NEP; i++) {
		int got = cq_wait(s->txcq[i], &e, r->txcq[0], &err);

		n += got && e.op_context == &ctx[i];
	}
	spin(r->txcq[0], s->rxcq[0], 0.05);
	for (i = 0; i < NEP; i++)
		n -= fi_cq_read(s->txcq[i], &e, 1) == 1;
	tap_ok(n == NEP, "scalable: each tx context's CQ has its own send "
	       "completion, once (%d)", n);
}

static void sep_unexpected(struct sepside *r, struct sepside *s,
			   fi_addr_t peer)
{
	struct fi_cq_tagged_entry e;
	int err = 0, ret;

	fill(sbuf[0], 80);
	ret = (int)fi_send(s->tx[0], sbuf[0], LEN, NULL,
			   fi_rx_addr(peer, 2, RX_BITS), NULL);
	spin(r->txcq[0], s->rxcq[0], 0.3);
	memset(rbuf[0], 0, LEN);
	memset(rbuf[2], 0, LEN);
	if (!ret)
		ret = (int)fi_recv(r->rx[0], rbuf[0], LEN, NULL,
				   FI_ADDR_UNSPEC, &ctx[0]);
	if (!ret)
		ret = (int)fi_recv(r->rx[2], rbuf[2], LEN, NULL,
				   FI_ADDR_UNSPEC, &ctx[2]);
	tap_ok(!ret && sep_got(r, s, 2, 2, 80),
	       "scalable: a message for rx context 2 that came first takes "
	       "context 2's receive posted later (%d)", ret);
	tap_ok(fi_cancel(&r->rx[0]->fid, &ctx[0]) == 0 &&
	       !cq_wait(r->rxcq[0], &e, NULL, &err) && err == FI_ECANCELED,
	       "scalable: context 0's receive stayed posted, then canceled "
	       "on its CQ (err %d)", err);
	cq_wait(s->txcq[0], &e, NULL, &err);
}

static void sep_tagged(struct sepside *r, struct sepside *s, fi_addr_t peer)
{
	struct fi_cq_tagged_entry e;
	int err, ret;

	memset(rbuf[1], 0, LEN);
	ret = (int)fi_trecv(r->rx[1], rbuf[1], LEN, NULL, FI_ADDR_UNSPEC, 7,
			    0, &ctx[1]);
	fill(sbuf[2], 90);
	if (!ret)
		ret = (int)fi_tsend(s->tx[2], sbuf[2], LEN, NULL,
				    fi_rx_addr(peer, 1, RX_BITS), 7, NULL);
	tap_ok(!ret && sep_got(r, s, 1, 1, 90),
	       "scalable: a tagged message to rx context 1 (%d)", ret);
	cq_wait(s->txcq[2], &e, NULL, &err);
}

/* A header naming a context the receiver does not have: refused, no
 * receive of any context completes. */
static void sep_bad_index(struct sepside *r, struct sepside *s,
			  fi_addr_t peer)
{
	struct fi_cq_tagged_entry e;
	int j, n = 0, ret;

	for (j = 0; j < NEP; j++)
		fi_recv(r->rx[j], rbuf[j], LEN, NULL, FI_ADDR_UNSPEC, &ctx[j]);
	ret = (int)fi_send(s->tx[0], sbuf[0], LEN, NULL,
			   fi_rx_addr(peer, NEP, RX_BITS), NULL);
	spin(r->txcq[0], s->rxcq[0], 0.5);
	for (j = 0; j < NEP; j++)
		n += fi_cq_read(r->rxcq[j], &e, 1) == 1;
	tap_ok(!ret && !n, "scalable: a message for rx context %d of %d is "
	       "refused: no receive completes (%d)", NEP, NEP, n);
}

static void test_sep(void)
{
	struct sepside r, s;
	struct fid_ep *x = NULL;
	struct sockaddr_in name;
	size_t len = sizeof(name);
	fi_addr_t peer = FI_ADDR_NOTAVAIL;
	int ret;

	test_sep_getinfo();
	ret = sep_open(&r);
	if (!ret)
		ret = sep_open(&s);
	if (!ret)
		ret = fi_getname(&r.sep->fid, &name, &len);
	if (!ret)
		ret = fi_av_insert(s.av, &name, 1, &peer, 0, NULL) == 1 ? 0 :
									 -1;
	tap_ok(!ret, "scalable: two endpoints of %d tx and rx contexts open "
	       "(%d)", NEP, ret);
	if (ret)
		exit(1);
	tap_ok(fi_tx_context(r.sep, NEP, NULL, &x, NULL) == -FI_EINVAL &&
	       fi_rx_context(r.sep, 0, NULL, &x, NULL) == -FI_EBUSY &&
	       fi_send(r.sep, sbuf[0], LEN, NULL, peer, NULL) == -FI_ENOSYS,
	       "scalable: context %d does not exist, context 0 twice is "
	       "-FI_EBUSY, the endpoint itself sends nothing", NEP);
	sep_named(&r, &s, peer);
	sep_unexpected(&r, &s, peer);
	sep_tagged(&r, &s, peer);
	sep_bad_index(&r, &s, peer);
	ret = fi_close(&r.sep->fid);
	tap_ok(ret == -FI_EBUSY && !sep_close_ctxs(&r) &&
	       !fi_close(&r.sep->fid),
	       "scalable: the endpoint closes after its contexts (%d)", ret);
	r.sep = NULL;
	sep_close(&s);
	sep_close(&r);
}

int main(void)
{
	test_getinfo();
	test_rdm();
	test_dgram();
	test_msg();
	test_sep();
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
