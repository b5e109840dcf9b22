/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A hostile peer of an FI_TAGGED MSG endpoint: the test's own engine QP
 * (the initiator, whose Send payloads are raw octets) offers FI_TAGGED
 * in its MPA private data, then sends one Send per connection to the
 * provider's endpoint (a forked child, through the public API). A header
 * out of the rules (unknown kind, reserved octets set, a length that is
 * not the message's, shorter than a header) must end the connection with
 * a Terminate (DDP untagged, no buffer) and complete no receive; a good
 * header is delivered to the receive of its tag. A request without the
 * offer is rejected, and the Reply to one carries the flag.
 *
 * The child reports, per connection, what its receive and EQ saw over a
 * pipe; a missing report is a failure, so the TAP count never changes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
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
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "engine_util.h"
#include "fi_api.h"
#include "iwarp/wire.h"
#include "tap.h"

#define PORT		23990
#define TAG		0x5eedULL
#define WAIT_MS		5000

enum { R_NONE = 'N', R_GOOD = 'G', R_BAD = 'B', R_LOST = 'L' };

/* One connection: the Send's octets and what should come of them. */
struct tcase {
	const char *name;
	uint8_t msg[64];
	uint32_t len;
	bool good;
};

static void hdr(uint8_t *p, uint8_t kind, uint32_t len, uint64_t tag)
{
	memset(p, 0, 16);
	p[0] = kind;
	iw_put32(p + 4, len);
	iw_put64(p + 8, tag);
}

static void cases_make(struct tcase *c)
{
	c[0] = (struct tcase){ .name = "a good tagged header", .len = 16 + 8,
			       .good = true };
	hdr(c[0].msg, 2, 8, TAG);
	memcpy(c[0].msg + 16, "8 octets", 8);
	c[1] = (struct tcase){ .name = "kind 3", .len = 24 };
	hdr(c[1].msg, 3, 8, TAG);
	c[2] = (struct tcase){ .name = "a reserved octet set", .len = 24 };
	hdr(c[2].msg, 2, 8, TAG);
	c[2].msg[2] = 1;
	c[3] = (struct tcase){ .name = "length 40 on 8 octets", .len = 24 };
	hdr(c[3].msg, 2, 40, TAG);
	c[4] = (struct tcase){ .name = "length 2 on 8 octets", .len = 24 };
	hdr(c[4].msg, 2, 2, TAG);
	c[5] = (struct tcase){ .name = "10 octets, less than a header",
			       .len = 10 };
	hdr(c[5].msg, 2, 0, TAG);
}

#define NCASE 6

/* ---- the provider's side (child) */

struct srv {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_cq *cq;
};

static int srv_open(struct srv *s)
{
	struct fi_info *h = fi_allocinfo();
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_TAGGED };
	char port[8];
	int ret;

	snprintf(port, sizeof(port), "%d", PORT);
	h->fabric_attr->prov_name = strdup("iwarp");
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_TAGGED;
	ret = fi_getinfo(TEST_API, "127.0.0.1", port, FI_SOURCE, h, &s->info);
	fi_freeinfo(h);
	if (!ret)
		ret = fi_fabric(s->info->fabric_attr, &s->fabric, NULL);
	if (!ret)
		ret = fi_domain(s->fabric, s->info, &s->domain, NULL);
	if (!ret)
		ret = fi_eq_open(s->fabric, &eqa, &s->eq, NULL);
	if (!ret)
		ret = fi_cq_open(s->domain, &cqa, &s->cq, NULL);
	if (!ret)
		ret = fi_passive_ep(s->fabric, s->info, &s->pep, NULL);
	if (!ret)
		ret = fi_pep_bind(s->pep, &s->eq->fid, 0);
	if (!ret)
		ret = fi_listen(s->pep);
	return ret;
}

/* The next connection request within the bound (what the connection
 * before left in the EQ is skipped): FI_CONNREQ, or 0. */
static uint32_t srv_event(struct srv *s, struct fi_eq_cm_entry *e)
{
	uint64_t end = iw_now_ms() + WAIT_MS;
	uint32_t ev;

	while (iw_now_ms() < end) {
		ssize_t n = fi_eq_read(s->eq, &ev, e, sizeof(*e), 0);
		struct fi_eq_err_entry err = { 0 };

		fi_cq_read(s->cq, NULL, 0);
		if (n > 0 && ev == FI_CONNREQ)
			return ev;
		if (n == -FI_EAVAIL)
			fi_eq_readerr(s->eq, &err, 0);
	}
	return 0;
}

/* One connection: accept, a tagged receive, what came of it. */
static char srv_one(struct srv *s)
{
	struct fi_cq_tagged_entry te;
	struct fi_eq_cm_entry e;
	struct fid_ep *ep = NULL;
	char buf[64], r = R_NONE;
	uint64_t end;

	if (srv_event(s, &e) != FI_CONNREQ)
		return R_LOST;
	if (fi_endpoint(s->domain, e.info, &ep, NULL) ||
	    fi_ep_bind(ep, &s->eq->fid, 0) ||
	    fi_ep_bind(ep, &s->cq->fid, FI_TRANSMIT | FI_RECV) ||
	    fi_enable(ep) ||
	    fi_trecv(ep, buf, sizeof(buf), NULL, 0, TAG, 0, buf) ||
	    fi_accept(ep, NULL, 0)) {
		fi_freeinfo(e.info);
		if (ep)
			fi_close(&ep->fid);
		return R_LOST;
	}
	fi_freeinfo(e.info);
	end = iw_now_ms() + WAIT_MS;
	while (iw_now_ms() < end && r == R_NONE) {
		ssize_t n = fi_cq_read(s->cq, &te, 1);
		struct fi_eq_err_entry ee = { 0 };
		uint32_t ev;

		if (n == 1 && te.tag == TAG && te.len == 8 &&
		    !memcmp(buf, "8 octets", 8))
			r = R_GOOD;
		else if (n == 1)
			r = R_BAD;	/* a wrong message */
		if (r != R_NONE || n == -FI_EAVAIL)
			break;		/* an error entry: flushed */
		n = fi_eq_read(s->eq, &ev, &e, sizeof(e), 0);
		if (n == -FI_EAVAIL)
			fi_eq_readerr(s->eq, &ee, 0);
		if (n == -FI_EAVAIL || (n > 0 && ev == FI_SHUTDOWN))
			break;
	}
	fi_close(&ep->fid);
	/* leftovers of this connection */
	while (fi_cq_read(s->cq, &te, 1) == -FI_EAVAIL) {
		struct fi_cq_err_entry ce = { 0 };

		fi_cq_readerr(s->cq, &ce, 0);
	}
	return r;
}

static int srv_main(int up, int go)
{
	struct srv s = { 0 };
	char r;
	int i;

	r = srv_open(&s) ? R_LOST : 'R';
	if (write(up, &r, 1) != 1 || r != 'R')
		return 1;
	for (i = 0; i < NCASE + 1; i++) {
		if (read(go, &r, 1) != 1)
			break;
		r = srv_one(&s);
		if (write(up, &r, 1) != 1)
			break;
	}
	fi_close(&s.pep->fid);
	fi_close(&s.cq->fid);
	fi_close(&s.eq->fid);
	fi_close(&s.domain->fid);
	fi_close(&s.fabric->fid);
	fi_freeinfo(s.info);
	return 0;
}

/* ---- the hostile initiator (parent) */

static const uint8_t ext_tag[8] = { 'I', 'W', 'X', 'F', 1, 0x02, 0, 0 };

static struct sockaddr_in srv_addr(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(PORT) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* Connects offering (or not) FI_TAGGED; ESTABLISHED or not. */
static bool cli_connect(struct eu_env *env, struct eu_qp *q, bool offer)
{
	struct iw_qp_attr attr = { 0 };
	struct iw_conn_param p = { 0 };
	struct sockaddr_in a = srv_addr();

	if (eu_qp_create(q, env->pd, "hostile", &attr))
		return false;
	eu_loop_add_qp(&env->loop, q);
	p.pdata = offer ? ext_tag : NULL;
	p.pdata_len = offer ? sizeof(ext_tag) : 0;
	if (iw_qp_connect(q->qp, (struct sockaddr *)&a, sizeof(a), &p))
		return false;
	return eu_wait_ev(&env->loop, q, IW_CM_ESTABLISHED, WAIT_MS);
}

static void cli_done(struct eu_env *env, struct eu_qp *q)
{
	eu_loop_del_qp(&env->loop, q);
	eu_qp_destroy(q);
	eu_qp_release(q);
}

static char srv_result(int go, int up)
{
	char r = R_LOST;

	if (read(up, &r, 1) != 1)
		r = R_LOST;
	(void)go;
	return r;
}

static void run_case(struct eu_env *env, const struct tcase *c, int go,
		     int up)
{
	struct iw_sge sge = { (void *)c->msg, c->len };
	struct iw_send_wr wr = { .ctx = EU_CTX(1), .op = IW_WR_SEND,
				 .flags = IW_WR_SIGNALED, .sgl = &sge,
				 .num_sge = 1 };
	struct eu_qp q = { 0 };
	const struct eu_ev *est, *fail;
	bool up_ok, flag;
	char r;

	if (write(go, "c", 1) != 1)
		return;
	up_ok = cli_connect(env, &q, true);
	est = eu_find_ev(&q, IW_CM_ESTABLISHED);
	flag = est && est->pdata_len >= 8 && !memcmp(est->pdata, "IWXF", 4) &&
	       (est->pdata[5] & 0x02);
	if (up_ok)
		eu_post_send(&env->loop, &q, &wr, WAIT_MS);
	if (c->good)
		eu_idle(&env->loop, 300);
	else
		eu_wait_ev(&env->loop, &q, IW_CM_ERROR, WAIT_MS);
	fail = eu_find_ev(&q, IW_CM_ERROR);
	r = srv_result(go, up);
	if (c->good)
		tap_ok(up_ok && flag && !fail && r == R_GOOD,
		       "%s: the Reply carries the flag, the receive of its "
		       "tag gets it (%c)", c->name, r);
	else
		tap_ok(up_ok && flag && fail && fail->remote &&
			       eu_err_is(&fail->err, IW_LAYER_DDP,
					 DDP_ETYPE_UNTAGGED,
					 DDP_ECODE_UT_NO_BUFFER) &&
			       r != R_GOOD,
		       "%s: the peer's Terminate is DDP untagged no-buffer "
		       "(%s), no receive completes (%c)", c->name,
		       fail ? eu_err_str(&fail->err) : "none", r);
	cli_done(env, &q);
}

/* A request without the offer: rejected, no receive completes. */
static void run_plain(struct eu_env *env, int go, int up)
{
	struct eu_qp q = { 0 };
	bool up_ok;
	char r;

	if (write(go, "c", 1) != 1)
		return;
	up_ok = cli_connect(env, &q, false);
	if (!up_ok)
		eu_wait_ev(&env->loop, &q, IW_CM_REJECTED, WAIT_MS);
	r = srv_result(go, up);
	tap_ok(!up_ok && eu_find_ev(&q, IW_CM_REJECTED) && r == R_LOST,
	       "a request without the FI_TAGGED offer is rejected (%c)", r);
	cli_done(env, &q);
}

int main(void)
{
	struct tcase c[NCASE];
	struct eu_env env;
	int go[2], up[2], i;
	char r = 0;
	pid_t pid;

	setenv("FI_IWARP_IFACE", "lo", 1);
	cases_make(c);
	if (pipe(go) || pipe(up))
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		close(up[0]);
		_exit(srv_main(up[1], go[0]));
	}
	close(go[0]);
	close(up[1]);
	tap_ok(!eu_env_open(&env) && read(up[0], &r, 1) == 1 && r == 'R',
	       "a provider endpoint with FI_TAGGED listens");
	for (i = 0; i < NCASE; i++)
		run_case(&env, &c[i], go[1], up[0]);
	run_plain(&env, go[1], up[0]);
	close(go[1]);
	tap_child(pid, 10, "provider side");
	close(up[0]);
	eu_env_close(&env);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
