/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job keys and restart claims on FI_EP_RDM (issue 18), between real
 * processes over loopback TCP, through the public API:
 * - same key: tagged messages, RMA Write/Read and atomics verified both
 *   ways, and each side logs that the other proved the key;
 * - wrong key, and a key on one side only (both directions): every send
 *   fails with FI_ECONNREFUSED whose fi_cq_strerror names the job key,
 *   nothing is delivered, and both sides log why;
 * - without keys, a forged MPA Request (an engine connection carrying
 *   hand-built RDM connection data) from the same IP claiming a live
 *   peer's address with a made-up instance: refused once the live
 *   connection answered a probe, and the live peers still talk;
 * - a real restart (SIGKILL, a new process at the same address): the
 *   survivor carries data with the new one;
 * - with keys, the same forgery without a key is refused at once;
 * - a handshake recorded from a peer that held the key (its nonce and
 *   proof) and replayed on a new connection ends in a Terminate;
 * - an engine responder whose Reply carries the right proof and that
 *   sends nothing after it: the keyed initiator's send completes, its
 *   proof and message arrive; with a wrong proof in the Reply the send
 *   fails naming the job key and the initiator sends a Terminate.
 *
 * Wire images come from iwarp_auth.h and the man page (RDM WIRE FORMAT).
 * The parent never opens libfabric; every role is a forked child that
 * logs to a file of its own (FI_LOG_LEVEL=info) and reports its checks
 * over a pipe. Fixed ports 24300-24309 on 127.0.0.1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "iwarp/engine.h"
#include "iwarp/wire.h"
#include "pattern.h"
#include "tap.h"
#include "tcp_info.h"

#define PA 24300		/* peer A's RDM address */
#define PB 24301		/* peer B's */
#define PFAKE 24309		/* an identity the recorder invents */
#define MSG 4096
#define NATOM 10

/* ==== children: reporting, sync ==== */

static int rep_fd = -1;		/* checks to the parent */
static int ctl_fd = -1;		/* one-byte steps from/to the parent */
static int peer_fd = -1;	/* to the other peer child */

static int check(int cond, const char *fmt, ...)
{
	char line[900], out[920];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = snprintf(out, sizeof(out), "%d %s\n", cond ? 1 : 0, line);
	if (write(rep_fd, out, (size_t)n) < 0)
		return cond;
	return cond;
}

static void say(int fd)
{
	char b = 1;

	if (fd >= 0 && write(fd, &b, 1) < 0)
		return;
}

/* ==== one endpoint ==== */

struct node {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_mr *mr;
	fi_addr_t peer;
	int port, peer_port;
	uint64_t rkey, raddr;	/* the peer's region */
	uint8_t region[MSG + 64];	/* RMA target; counter at MSG */
	uint8_t in[MSG], out[MSG];
};

static struct node me;

static int node_getinfo(int port)
{
	struct fi_info *hints = fi_allocinfo();
	char svc[16];
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	snprintf(svc, sizeof(svc), "%d", port);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED | FI_RMA | FI_ATOMIC;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("iwarp");
	ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", svc, FI_SOURCE,
			 hints, &me.info);
	fi_freeinfo(hints);
	return ret;
}

static int node_open(int port, int peer_port)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct sockaddr_in pa = { .sin_family = AF_INET,
				  .sin_port = htons(peer_port) };
	int ret = node_getinfo(port);

	me.port = port;
	me.peer_port = peer_port;
	pa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!ret)
		ret = fi_fabric(me.info->fabric_attr, &me.fabric, NULL);
	if (!ret)
		ret = fi_domain(me.fabric, me.info, &me.domain, NULL);
	if (!ret)
		ret = fi_endpoint(me.domain, me.info, &me.ep, NULL);
	if (!ret)
		ret = fi_cq_open(me.domain, &cq_attr, &me.cq, NULL);
	if (!ret)
		ret = fi_av_open(me.domain, &av_attr, &me.av, NULL);
	if (!ret)
		ret = fi_ep_bind(me.ep, &me.cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(me.ep, &me.av->fid, 0);
	if (!ret)
		ret = fi_enable(me.ep);
	if (!ret)
		ret = fi_mr_reg(me.domain, me.region, sizeof(me.region),
				FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0,
				&me.mr, NULL);
	if (!ret && fi_av_insert(me.av, &pa, 1, &me.peer, 0, NULL) != 1)
		ret = -FI_EINVAL;
	return ret;
}

/* Everything closed before exit: the provider's progress thread must
 * be gone before libfabric unloads it. */
static void node_close(void)
{
	if (me.mr)
		fi_close(&me.mr->fid);
	if (me.ep)
		fi_close(&me.ep->fid);
	if (me.av)
		fi_close(&me.av->fid);
	if (me.cq)
		fi_close(&me.cq->fid);
	if (me.domain)
		fi_close(&me.domain->fid);
	if (me.fabric)
		fi_close(&me.fabric->fid);
	if (me.info)
		fi_freeinfo(me.info);
	memset(&me, 0, sizeof(me));
}

/* Progress only, until the parent's next step (or secs). */
static void serve(double secs)
{
	double end = tap_now() + secs;
	struct pollfd pf = { .fd = ctl_fd, .events = POLLIN };
	char b;

	while (tap_now() < end) {
		fi_cq_read(me.cq, NULL, 0);
		if (poll(&pf, 1, 1) > 0) {
			if (read(ctl_fd, &b, 1) <= 0)
				return;
			return;
		}
	}
}

/* Contexts that completed (ok or not) before anyone waited for them. */
static struct { void *ctx; int res; struct fi_cq_err_entry err; } early[8];

static int early_take(void *ctx, struct fi_cq_err_entry *err)
{
	int i, res;

	for (i = 0; i < 8; i++)
		if (early[i].ctx == ctx) {
			early[i].ctx = NULL;
			*err = early[i].err;
			res = early[i].res;
			return res;
		}
	return 0;
}

static void early_put(void *ctx, int res, const struct fi_cq_err_entry *err)
{
	int i;

	for (i = 0; i < 8; i++)
		if (!early[i].ctx) {
			early[i].ctx = ctx;
			early[i].res = res;
			if (err)
				early[i].err = *err;
			return;
		}
}

/* Waits for the completion of ctx: 1 done, -1 failed (*err filled), 0
 * not within secs. */
static int wait_ctx(void *ctx, double secs, struct fi_cq_err_entry *err)
{
	double end = tap_now() + secs;
	struct fi_cq_tagged_entry e;
	int res = early_take(ctx, err);

	while (!res && tap_now() < end) {
		ssize_t n = fi_cq_read(me.cq, &e, 1);

		if (n == 1 && e.op_context == ctx)
			return 1;
		if (n == 1)
			early_put(e.op_context, 1, NULL);
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			fi_cq_readerr(me.cq, err, 0);
			if (err->op_context == ctx)
				return -1;
			early_put(err->op_context, -1, err);
		}
	}
	return res;
}

/*
 * Tagged message each way; sends retried a few times. recv_first: our
 * send waits for the peer's message (a Send completes once TCP has it,
 * so one sent before a restarted peer's connection is up may go to the
 * dead one).
 */
static bool xchg_ordered(int tries, bool recv_first)
{
	struct fi_cq_err_entry err;
	int rctx, sctx, got = 0, sent = 0;

	memset(me.in, 0, MSG);
	pat_fill(me.out, MSG, (uint64_t)me.port, 0);
	fi_trecv(me.ep, me.in, MSG, NULL, FI_ADDR_UNSPEC, 7, 0, &rctx);
	if (recv_first)
		got = wait_ctx(&rctx, 10, &err);
	while (tries-- > 0 && sent != 1) {
		fi_tsend(me.ep, me.out, MSG, NULL, me.peer, 7, &sctx);
		sent = wait_ctx(&sctx, 5, &err);
		if (sent != 1)
			usleep(200000);
	}
	if (!recv_first)
		got = wait_ctx(&rctx, 5, &err);
	if (got != 1)
		fi_cancel(&me.ep->fid, &rctx);
	return sent == 1 && got == 1 &&
	       pat_diff(me.in, MSG, (uint64_t)me.peer_port, 0) == SIZE_MAX;
}

static bool xchg(int tries)
{
	return xchg_ordered(tries, false);
}

/* The peers tell each other where their regions are. */
static bool swap_regions(void)
{
	uint64_t mine[2] = { fi_mr_key(me.mr),
			     me.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
				     (uint64_t)(uintptr_t)me.region : 0 };
	uint64_t theirs[2];

	if (write(peer_fd, mine, sizeof(mine)) != sizeof(mine) ||
	    read(peer_fd, theirs, sizeof(theirs)) != sizeof(theirs))
		return false;
	me.rkey = theirs[0];
	me.raddr = theirs[1];
	return true;
}

static void hear_peer(void)
{
	struct pollfd pf = { .fd = peer_fd, .events = POLLIN };
	double end = tap_now() + 30;
	char b;

	say(peer_fd);
	/* keep progressing: the peer may still need our listener's answer
	 * (its own refusal) before it can get here */
	while (tap_now() < end) {
		fi_cq_read(me.cq, NULL, 0);
		if (poll(&pf, 1, 1) > 0) {
			if (read(peer_fd, &b, 1) < 0)
				return;
			return;
		}
	}
}

static bool rma_check(void)
{
	struct fi_cq_err_entry err;
	int ctx;

	pat_fill(me.out, MSG, (uint64_t)me.port + 100, 0);
	memset(me.in, 0, MSG);
	if (fi_write(me.ep, me.out, MSG, NULL, me.peer, me.raddr, me.rkey,
		     &ctx) || wait_ctx(&ctx, 5, &err) != 1)
		return false;
	if (fi_read(me.ep, me.in, MSG, NULL, me.peer, me.raddr, me.rkey,
		    &ctx) || wait_ctx(&ctx, 5, &err) != 1)
		return false;
	return !memcmp(me.in, me.out, MSG);
}

/* FI_SUM of 1..NATOM on the peer's counter; the fetched values must be
 * the running sums. */
static bool atomics_check(void)
{
	struct fi_cq_err_entry err;
	uint64_t add, old, sum = 0;
	int ctx, i;

	for (i = 1; i <= NATOM; i++) {
		add = (uint64_t)i;
		if (fi_fetch_atomic(me.ep, &add, 1, NULL, &old, NULL, me.peer,
				    me.raddr + MSG, me.rkey, FI_UINT64, FI_SUM,
				    &ctx) ||
		    wait_ctx(&ctx, 5, &err) != 1 || old != sum)
			return false;
		sum += add;
	}
	return true;
}

/* ---- the roles */

/* Same key on both: everything goes, both ways. */
static int role_keyed(void)
{
	uint64_t counter;
	int ok;

	check(xchg(1), "same key %d: tagged messages both ways, verified",
	      me.port);
	ok = swap_regions();
	check(ok && rma_check(), "same key %d: RMA Write then Read of the "
	      "peer's region, verified", me.port);
	check(ok && atomics_check(), "same key %d: %d fetching atomics "
	      "(FI_SUM) on the peer's counter return the running sums",
	      me.port, NATOM);
	hear_peer();
	serve(0.3);
	memcpy(&counter, me.region + MSG, sizeof(counter));
	check(counter == NATOM * (NATOM + 1) / 2, "same key %d: the peer's "
	      "atomics left %d in our counter (%llu)", me.port,
	      NATOM * (NATOM + 1) / 2, (unsigned long long)counter);
	hear_peer();
	return 0;
}

/* A key that does not fit the peer's: our send fails naming the job key,
 * nothing of the peer's arrives. */
static int role_refused(void)
{
	struct fi_cq_err_entry err;
	char text[256] = "";
	int sctx, rctx, s, r;

	fi_trecv(me.ep, me.in, MSG, NULL, FI_ADDR_UNSPEC, 7, 0, &rctx);
	pat_fill(me.out, MSG, (uint64_t)me.port, 0);
	fi_tsend(me.ep, me.out, MSG, NULL, me.peer, 7, &sctx);
	s = wait_ctx(&sctx, 8, &err);
	if (s < 0)
		fi_cq_strerror(me.cq, err.prov_errno, err.err_data, text,
			       sizeof(text));
	check(s < 0 && err.err == FI_ECONNREFUSED && strstr(text, "job key"),
	      "%s %d: the send fails with FI_ECONNREFUSED, fi_cq_strerror "
	      "names the job key (got %d, err %d, \"%s\")",
	      getenv("ROLE_NAME"), me.port, s, s < 0 ? err.err : 0, text);
	hear_peer();
	r = wait_ctx(&rctx, 1.5, &err);
	check(r == 0, "%s %d: nothing of the peer's was delivered (%d)",
	      getenv("ROLE_NAME"), me.port, r);
	fi_cancel(&me.ep->fid, &rctx);
	wait_ctx(&rctx, 1, &err);
	hear_peer();
	return 0;
}

/* A live pair that talks, waits while the parent attacks, talks again. */
static int role_live(void)
{
	check(xchg(1), "%s %d: tagged messages both ways before the attack",
	      getenv("ROLE_NAME"), me.port);
	say(ctl_fd);
	serve(30);	/* until the attack is over */
	check(xchg(1), "%s %d: tagged messages both ways after the attack, "
	      "verified, no send retried", getenv("ROLE_NAME"), me.port);
	hear_peer();
	return 0;
}

/* A peer that talks once, then waits to be killed. */
static int role_victim(void)
{
	check(xchg(1), "restart: the first process at %d talks", me.port);
	say(ctl_fd);
	serve(60);
	return 0;
}

/* The survivor: talks with the first process, then (after the kill)
 * with the new one at the same address. */
static int role_survivor(void)
{
	check(xchg(1), "restart: the survivor %d talks with the first "
	      "process", me.port);
	serve(30);	/* the parent killed it and started the next */
	check(xchg_ordered(5, true), "restart: the survivor %d carries data both ways "
	      "with the restarted process, verified", me.port);
	return 0;
}

static int role_restarted(void)
{
	check(xchg(5), "restart: the new process at %d carries data both "
	      "ways with the survivor, verified", me.port);
	return 0;
}

/* ==== the forger: an engine connection with hand-built private data ==== */

struct forger {
	struct iw_dev *dev;
	struct iw_pd *pd;
	struct iw_qp *qp;
	bool up, down, rejected;
	bool remote;		/* down by the peer's Terminate: err */
	struct iw_err err;
	uint8_t reply[128];	/* the Reply's private data */
	size_t reply_len;
	uint8_t rbuf[4][128];
	uint32_t rlen[4];
	int nrecv;
};

static void fg_cm(void *arg, struct iw_qp *qp, const struct iw_cm_event *ev)
{
	struct forger *f = arg;

	(void)qp;
	if (ev->type == IW_CM_ESTABLISHED) {
		f->reply_len = ev->pdata_len < sizeof(f->reply) ?
				       ev->pdata_len : sizeof(f->reply);
		memcpy(f->reply, ev->pdata, f->reply_len);
		f->up = true;
		return;
	}
	f->rejected = ev->type == IW_CM_REJECTED;
	f->remote = ev->remote;
	f->err = ev->err;
	f->down = true;
}

static void fg_complete(void *arg, struct iw_qp *qp, const struct iw_wc *wc)
{
	struct forger *f = arg;

	(void)qp;
	if (wc->op == IW_WC_RECV && wc->status == IW_WC_SUCCESS &&
	    f->nrecv < 4)
		f->rlen[f->nrecv++] = wc->byte_len;
}

static const struct iw_qp_ops fg_ops = {
	.cm_event = fg_cm,
	.complete = fg_complete,
};

static void fg_drive(struct forger *f, double secs, bool until_up)
{
	double end = tap_now() + secs;

	while (tap_now() < end && !f->down && !(until_up && f->up))
		iw_qp_progress(f->qp);
}

/* RDM connection data claiming 127.0.0.1:port, instance inst. */
static void rdm_pd(uint8_t *p, int port, uint64_t inst)
{
	struct in_addr lo = { htonl(INADDR_LOOPBACK) };

	memset(p, 0, 32);
	memcpy(p, "IWRD", 4);
	p[4] = 1;
	p[5] = 4;
	iw_put16(p + 6, (uint16_t)port);
	memcpy(p + 8, &lo, 4);
	iw_put64(p + 24, inst);
}

static void fg_post_recvs(struct forger *f)
{
	int i;

	for (i = 0; i < 4; i++) {
		struct iw_sge s = { f->rbuf[i], sizeof(f->rbuf[i]) };
		struct iw_recv_wr wr = { .sgl = &s, .num_sge = 1 };

		iw_qp_post_recv(f->qp, &wr);
	}
}

/* Connects to port with private data pd; drives until up or down. */
static int fg_open(struct forger *f, int port, const uint8_t *pd,
		   uint16_t len)
{
	struct iw_qp_attr attr = { .ops = &fg_ops, .arg = f };
	struct iw_conn_param p = { .pdata = pd, .pdata_len = len };
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(port) };

	memset(f, 0, sizeof(*f));
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (iw_dev_open(&f->dev) || iw_pd_alloc(f->dev, &f->pd) ||
	    iw_qp_create(f->pd, &attr, &f->qp))
		return -1;
	fg_post_recvs(f);
	if (iw_qp_connect(f->qp, (struct sockaddr *)&to, sizeof(to), &p))
		return -1;
	fg_drive(f, 8, true);
	return f->up ? 0 : -1;
}

static void fg_close(struct forger *f)
{
	if (f->qp)
		iw_qp_destroy(f->qp);
	if (f->pd)
		iw_pd_free(f->pd);
	if (f->dev)
		iw_dev_close(f->dev);
	memset(f, 0, sizeof(*f));
}

static int fg_send(struct forger *f, const void *buf, uint32_t len)
{
	struct iw_sge s = { (void *)buf, len };
	struct iw_send_wr wr = { .op = IW_WR_SEND, .sgl = &s, .num_sge = 1,
				 .flags = IW_WR_INLINE };

	return iw_qp_post_send(f->qp, &wr);
}

/* Claims to be peer A (a live peer of B) with a made-up instance. */
static int role_spoof(void)
{
	bool keyed = getenv("SPOOF_KEYED") != NULL;
	uint8_t pd[32];
	struct forger f;
	double t0 = tap_now(), dt;
	int ret;

	rdm_pd(pd, PA, 0x5b00f5b00f51ULL);
	ret = fg_open(&f, PB, pd, sizeof(pd));
	dt = tap_now() - t0;
	if (keyed)
		check(ret && f.rejected && dt < 0.5, "keyed spoof: a request "
		      "without a job key claiming a live peer is refused at "
		      "once (%s, %.0f ms)", !ret ? "accepted" : f.rejected ?
		      "MPA Reject" : "no Reject", dt * 1000);
	else
		check(ret && f.rejected, "spoof: a request from the live "
		      "peer's IP claiming its address with a made-up instance "
		      "is refused (%s after %.0f ms)", !ret ? "accepted" :
		      f.rejected ? "MPA Reject" : "no Reject", dt * 1000);
	fg_drive(&f, 0.5, false);
	fg_close(&f);
	return 0;
}

/* ---- the recorded handshake */

/* HMAC-SHA256(key, "iwarp auth 2" | role | nonce_I | nonce_R) */
static void hmac_role(uint8_t *mac, const char *key, char role,
		      const uint8_t *ni, const uint8_t *nr)
{
	uint8_t in[12 + 1 + 32];
	unsigned int len = 32;

	memcpy(in, "iwarp auth 2", 12);
	in[12] = (uint8_t)role;
	memcpy(in + 13, ni, 16);
	memcpy(in + 29, nr, 16);
	HMAC(EVP_sha256(), key, (int)strlen(key), in, sizeof(in), mac, &len);
}

/* The initiator's proof, a 40-octet Send. */
static void hmac_proof(uint8_t *msg, const char *key, const uint8_t *ni,
		       const uint8_t *nr)
{
	memset(msg, 0, 40);
	memcpy(msg, "IWAM", 4);
	msg[4] = 2;
	msg[5] = 'I';
	hmac_role(msg + 8, key, 'I', ni, nr);
}

/* The Reply proves the key: version 2 block, HMAC 'R' over both nonces
 * (iwarp_auth.h). */
static bool reply_proves(const struct forger *f, const char *key,
			 const uint8_t *ni)
{
	uint8_t want[32];

	if (f->reply_len < 56 + 32 || memcmp(f->reply, "IWAK\2", 5))
		return false;
	hmac_role(want, key, 'R', ni, f->reply + 8);
	return !memcmp(f->reply + 24, want, sizeof(want));
}

/* Ended by the peer's Terminate: RDMAP, local catastrophic, code 0. */
static bool terminated(const struct forger *f)
{
	return f->down && f->remote && f->err.layer == IW_LAYER_RDMAP &&
	       f->err.etype == RDMAP_ETYPE_CATASTROPHIC && !f->err.ecode;
}

/*
 * One who holds the key connects under a name of its own (nonce ni) and
 * proves it; its nonce and proof are then replayed by one who does not,
 * on a new connection: the responder's fresh nonce makes the proof
 * wrong there.
 */
static int role_replay(void)
{
	uint8_t pd[56] = { 'I', 'W', 'A', 'K', 2 }, proof[40];
	struct forger f;
	bool kept, gone;
	int ret;

	memset(pd + 8, 0x42, 16);	/* the recorded nonce */
	rdm_pd(pd + 24, PFAKE, 0xabcdef01ULL);
	ret = fg_open(&f, PB, pd, sizeof(pd));
	kept = !ret && reply_proves(&f, "secret", pd + 8);
	if (kept) {
		hmac_proof(proof, "secret", pd + 8, f.reply + 8);
		fg_send(&f, proof, sizeof(proof));
		fg_drive(&f, 1, false);
	}
	kept = kept && !f.down && f.nrecv == 0;
	check(kept, "replay: a peer that holds the key gets the endpoint's "
	      "proof in the Reply and gets in, no Send from the endpoint "
	      "(%s, %d messages)", ret ? "refused" : f.down ? "closed" : "up",
	      f.nrecv);
	fg_close(&f);
	usleep(300000);
	ret = fg_open(&f, PB, pd, sizeof(pd));
	if (!ret)
		fg_send(&f, proof, sizeof(proof));
	fg_drive(&f, 3, false);
	gone = !ret && terminated(&f);
	check(gone, "replay: the recorded nonce and proof on a new connection "
	      "are refused: a Terminate (%s, %u/%u/%u)", ret ?
	      "no connection" : !f.down ? "still up" : f.remote ?
	      "Terminate" : "no Terminate", f.err.layer, f.err.etype,
	      f.err.ecode);
	fg_close(&f);
	return 0;
}

/* ---- a responder that proves the key in its Reply, then sends nothing */

struct responder {
	struct forger f;
	struct iw_listener *l;
	const char *key;	/* its proof's */
	uint8_t ni[16], nr[16];
};

/* Accepts a keyed RDM Request: the Reply is the auth block with our
 * proof, then RDM connection data claiming PB. */
static void rs_request(void *arg, struct iw_conn_req *req,
		       const struct iw_cm_event *ev)
{
	struct responder *rs = arg;
	struct forger *f = &rs->f;
	struct iw_qp_attr attr = { .ops = &fg_ops, .arg = f };
	uint8_t pd[56 + 32] = { 'I', 'W', 'A', 'K', 2 };
	struct iw_conn_param p = { .pdata = pd, .pdata_len = sizeof(pd) };

	if (f->qp || ev->pdata_len < 24 || memcmp(ev->pdata, "IWAK\2", 5) ||
	    iw_qp_create(f->pd, &attr, &f->qp)) {
		iw_reject(req, NULL, 0);
		return;
	}
	memcpy(rs->ni, ev->pdata + 8, 16);
	pat_fill(rs->nr, 16, (uint64_t)getpid(), 0);
	memcpy(pd + 8, rs->nr, 16);
	hmac_role(pd + 24, rs->key, 'R', rs->ni, rs->nr);
	rdm_pd(pd + 56, PB, 0x7e5700ULL);
	fg_post_recvs(f);
	if (iw_accept(req, f->qp, &p))
		f->down = true;
}

static const struct iw_listener_ops rs_ops = { .conn_request = rs_request };

/* Drives the listener and the connection until cond or secs. */
#define RS_DRIVE(rs, secs, cond) do {					\
	double end_ = tap_now() + (secs);				\
									\
	while (tap_now() < end_ && !(cond)) {				\
		iw_listener_progress((rs)->l);				\
		if ((rs)->f.qp)						\
			iw_qp_progress((rs)->f.qp);			\
	}								\
} while (0)

/* A message received after the proof ends with the initiator's 64
 * octets of pattern PA. */
static bool rs_got_message(const struct forger *f)
{
	int i;

	for (i = 1; i < f->nrecv; i++)
		if (f->rlen[i] >= 64 &&
		    pat_diff(f->rbuf[i] + f->rlen[i] - 64, 64, PA, 0) ==
			    SIZE_MAX)
			return true;
	return false;
}

static void rs_check(struct responder *rs, bool bad)
{
	struct forger *f = &rs->f;
	unsigned int segs;
	uint8_t want[40];

	if (bad) {
		RS_DRIVE(rs, 10, f->down);
		check(terminated(f), "responder with a wrong proof: the "
		      "initiator ends the stream in a Terminate (%s, %u/%u/%u)",
		      !f->down ? "still up" : f->remote ? "Terminate" :
		      "no Terminate", f->err.layer, f->err.etype, f->err.ecode);
		return;
	}
	RS_DRIVE(rs, 10, f->down || rs_got_message(f));
	hmac_proof(want, rs->key, rs->ni, rs->nr);
	check(f->up && !f->down && f->nrecv >= 2 && f->rlen[0] == 40 &&
	      !memcmp(f->rbuf[0], want, 40) && rs_got_message(f),
	      "responder that sends nothing after its Reply: the initiator's "
	      "proof, as iwarp_auth.h describes it, then its tagged message "
	      "(%s, %d messages)", f->down ? "down" : f->up ? "up" : "never up",
	      f->nrecv);
	/* Request, RTR with proof, message (which may join them): one
	 * segment more when the RTR leaves alone */
	segs = f->qp ? tcp_info_of(iw_qp_fd(f->qp)).tcpi_data_segs_in : 0;
	check(segs == 2 || segs == 3, "responder: the initiator's RTR and "
	      "proof came in one TCP segment (%u with data, the Request and "
	      "the message included)", segs);
}

static int role_responder(void)
{
	static struct responder rs;
	bool bad = getenv("RESP_BAD") != NULL;
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(PB) };
	struct pollfd pf = { .fd = ctl_fd, .events = POLLIN };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rs.key = bad ? "other" : "secret";
	if (iw_dev_open(&rs.f.dev) || iw_pd_alloc(rs.f.dev, &rs.f.pd) ||
	    iw_listen(rs.f.dev, (struct sockaddr *)&a, sizeof(a), 4, NULL,
		      &rs_ops, &rs, &rs.l)) {
		check(0, "responder listening at %d", PB);
		return 1;
	}
	say(ctl_fd);
	rs_check(&rs, bad);
	RS_DRIVE(&rs, 15, poll(&pf, 1, 0) > 0);	/* the parent's step */
	iw_listener_close(rs.l);
	fg_close(&rs.f);
	return 0;
}

/* A keyed initiator's first send to the responder above. */
static int role_initiator(void)
{
	bool bad = getenv("RESP_BAD") != NULL;
	struct fi_cq_err_entry err;
	char text[256] = "";
	int sctx, s;

	pat_fill(me.out, 64, PA, 0);
	fi_tsend(me.ep, me.out, 64, NULL, me.peer, 7, &sctx);
	s = wait_ctx(&sctx, 8, &err);
	if (s < 0)
		fi_cq_strerror(me.cq, err.prov_errno, err.err_data, text,
			       sizeof(text));
	if (bad)
		check(s < 0 && err.err == FI_ECONNREFUSED &&
		      strstr(text, "job key"), "initiator: a Reply with a "
		      "wrong proof fails the send with FI_ECONNREFUSED naming "
		      "the job key (got %d, \"%s\")", s, text);
	else
		check(s == 1, "initiator: its send completes though the "
		      "responder sent nothing after its Reply (%d)", s);
	say(ctl_fd);
	serve(15);
	return 0;
}

/* ==== the parent ==== */

struct kid {
	const char *name;
	int nchecks;
	pid_t pid;
	int rep, ctl;
	char log[128];
	int got;
	char text[16][256];
	int ok[16];
};

static char logdir[64];
static bool pair_sync;		/* the kids being started are a pair */
static char logs[32][128];	/* removed at the end when all passed */
static int nlogs;

/* env: "NAME=value" strings set in the child before libfabric opens. */
static void kid_start(struct kid *k, int (*fn)(void), int port, int peer,
		      const char *const *env, int pfd, int close_fd)
{
	int r[2], c[2];

	if (pipe(r) || socketpair(AF_UNIX, SOCK_STREAM, 0, c))
		exit(1);
	snprintf(k->log, sizeof(k->log), "%s/%s.log", logdir, k->name);
	if (nlogs < 32)
		snprintf(logs[nlogs++], sizeof(logs[0]), "%s", k->log);
	fflush(stdout);
	k->pid = fork();
	if (!k->pid) {
		int fd = open(k->log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		close(r[0]);
		close(c[0]);
		if (close_fd >= 0)
			close(close_fd);
		dup2(fd, 2);
		rep_fd = r[1];
		ctl_fd = c[1];
		peer_fd = pfd;
		setenv("FI_LOG_LEVEL", "info", 1);
		setenv("ROLE_NAME", k->name, 1);
		unsetenv("FI_IWARP_AUTH_KEY");
		for (; env && *env; env++)
			putenv((char *)*env);
		if (port && node_open(port, peer)) {
			check(0, "%s: endpoint at %d opens", k->name, port);
			node_close();
			exit(1);
		}
		/* a pair starts talking once both listen: a peer that is
		 * slow to start must not use up the other's connect tries */
		if (pair_sync)
			hear_peer();
		fd = fn();
		node_close();
		exit(fd);
	}
	close(r[1]);
	close(c[1]);
	k->rep = r[0];
	k->ctl = c[0];
	k->got = 0;
}

/* Reads a kid's reports until EOF or the deadline. */
static void kid_read(struct kid *k, double end)
{
	static char buf[4096];
	size_t used = 0;
	struct pollfd pf = { .fd = k->rep, .events = POLLIN };

	while (tap_now() < end && poll(&pf, 1, 50) >= 0) {
		ssize_t n;
		char *nl, *p = buf;

		if (!(pf.revents & (POLLIN | POLLHUP)))
			continue;
		n = read(k->rep, buf + used, sizeof(buf) - 1 - used);
		if (n <= 0)
			break;
		used += (size_t)n;
		buf[used] = 0;
		while ((nl = strchr(p, '\n'))) {
			*nl = 0;
			if (k->got < k->nchecks) {
				k->ok[k->got] = p[0] == '1';
				snprintf(k->text[k->got], 256, "%s", p + 2);
			}
			k->got++;
			p = nl + 1;
		}
		used -= (size_t)(p - buf);
		memmove(buf, p, used);
	}
}

/* Prints what a kid owes: its checks, then its end. */
static void kid_finish(struct kid *k, double end)
{
	int i;

	kid_read(k, end);
	for (i = 0; i < k->nchecks; i++)
		if (i < k->got)
			tap_ok(k->ok[i] && k->got <= k->nchecks, "%s",
			       k->text[i]);
		else
			tap_ok(0, "%s: check %d never reported", k->name,
			       i + 1);
	tap_child(k->pid, end - tap_now() > 1 ? end - tap_now() : 1,
		  k->name);
	close(k->rep);
	close(k->ctl);
}

static void step(struct kid *k)
{
	char b = 1;

	if (write(k->ctl, &b, 1) < 0)
		return;
}

static bool wait_step(struct kid *k, double secs)
{
	struct pollfd pf = { .fd = k->ctl, .events = POLLIN };
	char b;

	return poll(&pf, 1, (int)(secs * 1000)) > 0 && read(k->ctl, &b, 1) == 1;
}

static bool log_has(const struct kid *k, const char *what)
{
	char line[1024];
	bool found = false;
	FILE *f = fopen(k->log, "r");

	while (f && !found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	if (f)
		fclose(f);
	return found;
}

static void log_check(const struct kid *k, const char *what)
{
	tap_ok(log_has(k, what), "%s logs \"%s\"", k->name, what);
}

static void pair(struct kid *a, int (*fa)(void), const char *const *ea,
		 struct kid *b, int (*fb)(void), const char *const *eb)
{
	int sp[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
		exit(1);
	pair_sync = true;
	kid_start(a, fa, PA, PB, ea, sp[0], sp[1]);
	kid_start(b, fb, PB, PA, eb, sp[1], sp[0]);
	pair_sync = false;
	close(sp[0]);
	close(sp[1]);
}

static const char *const KEY[] = { "FI_IWARP_AUTH_KEY=secret", NULL };
static const char *const OTHER[] = { "FI_IWARP_AUTH_KEY=other", NULL };
static const char *const NOKEY[] = { NULL };

static void test_same_key(void)
{
	struct kid a = { "keyed A", 4 }, b = { "keyed B", 4 };
	double end = tap_now() + 40;

	pair(&a, role_keyed, KEY, &b, role_keyed, KEY);
	kid_finish(&a, end);
	kid_finish(&b, end);
	log_check(&a, "proved the job key");
	log_check(&b, "proved the job key");
}

static void test_refused(const char *na, const char *const *ea,
			 const char *nb, const char *const *eb,
			 const char *la, const char *lb)
{
	struct kid a = { na, 2 }, b = { nb, 2 };
	double end = tap_now() + 40;

	pair(&a, role_refused, ea, &b, role_refused, eb);
	kid_finish(&a, end);
	kid_finish(&b, end);
	log_check(&a, la);
	log_check(&b, lb);
}

/* A live pair (keys or not) under an attack run by `attacker`. */
static void test_attack(const char *tag, const char *const *env,
			struct kid *atk, int (*fa)(void),
			const char *const *aenv, const char *logline)
{
	struct kid a = { 0 }, b = { 0 };
	double end = tap_now() + 60;
	static char na[32], nb[32];

	snprintf(na, sizeof(na), "%s A", tag);
	snprintf(nb, sizeof(nb), "%s B", tag);
	a.name = na;
	b.name = nb;
	a.nchecks = b.nchecks = 2;
	pair(&a, role_live, env, &b, role_live, env);
	wait_step(&a, 15);
	wait_step(&b, 15);
	kid_start(atk, fa, 0, 0, aenv, -1, -1);
	kid_finish(atk, end);
	step(&a);
	step(&b);
	kid_finish(&a, end);
	kid_finish(&b, end);
	log_check(&b, logline);
}

/* A keyed initiator against a responder whose Reply carries its proof. */
static void test_responder(bool bad)
{
	static const char *const rb[] = { "RESP_BAD=1", NULL };
	static const char *const ib[] = { "FI_IWARP_AUTH_KEY=secret",
					  "RESP_BAD=1", NULL };
	struct kid r = { bad ? "bad responder" : "responder", bad ? 1 : 2 };
	struct kid i = { bad ? "initiator of bad" : "initiator", 1 };
	double end = tap_now() + 40;

	kid_start(&r, role_responder, 0, 0, bad ? rb : NOKEY, -1, -1);
	wait_step(&r, 10);
	kid_start(&i, role_initiator, PA, PB, bad ? ib : KEY, -1, -1);
	wait_step(&i, 15);
	step(&r);
	step(&i);
	kid_finish(&r, end);
	kid_finish(&i, end);
	log_check(&i, bad ? "wrong proof in its Reply" : "proved the job key");
}

static void test_restart(void)
{
	struct kid v = { "restart victim", 1 }, s = { "restart survivor", 2 };
	struct kid n = { "restart newcomer", 1 };
	double end = tap_now() + 60;
	int sp[2];

	pair(&v, role_victim, NOKEY, &s, role_survivor, NOKEY);
	wait_step(&v, 15);
	kill(v.pid, SIGKILL);
	/* gone, and its listening port with it, before the newcomer binds */
	waitpid(v.pid, NULL, 0);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp))
		exit(1);
	kid_start(&n, role_restarted, PA, PB, NOKEY, sp[0], sp[1]);
	step(&s);
	kid_finish(&n, end);
	kid_finish(&s, end);
	kid_read(&v, tap_now() + 1);
	tap_ok(v.got == 1 && v.ok[0], "%s", v.got ? v.text[0] :
	       "restart: the first process never talked");
	close(v.rep);
	close(v.ctl);
	close(sp[0]);
	close(sp[1]);
}

int main(void)
{
	static const char *const sk[] = { "SPOOF_KEYED=1", NULL };
	struct kid spoof = { "spoofer", 1 }, kspoof = { "keyed spoofer", 1 };
	struct kid rec = { "replayer", 2 };

	snprintf(logdir, sizeof(logdir), "/tmp/test_rdm_auth.%d", getpid());
	if (mkdir(logdir, 0755) && errno != EEXIST)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	test_same_key();
	test_refused("wrong key A", KEY, "wrong key B", OTHER,
		     "job key authentication failed",
		     "job key authentication failed");
	test_refused("key A", KEY, "no key B", NOKEY,
		     "refused our connection", "offers a job key");
	test_refused("no key A", NOKEY, "key B", KEY,
		     "offers a job key", "refused our connection");
	test_attack("spoof", NOKEY, &spoof, role_spoof, NOKEY,
		    "answered a probe");
	test_restart();
	test_attack("keyed spoof", KEY, &kspoof, role_spoof, sk,
		    "carries no job key");
	test_attack("replay", KEY, &rec, role_replay, NOKEY,
		    "wrong proof");
	test_responder(false);
	test_responder(true);
	if (tap_failed) {
		tap_diag("logs in %s", logdir);
	} else {
		while (nlogs)
			unlink(logs[--nlogs]);
		rmdir(logdir);
	}
	return tap_done();
}
