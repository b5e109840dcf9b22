/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Hostile peer tests: raw octets over a real loopback TCP connection to
 * the engine, one misbehaviour per case. For each protocol violation the
 * test decodes the Terminate the engine puts on the wire (layer, type,
 * code and the header copies of RFC 5040 §4.8 figure 10) and checks the
 * engine's own state: QP in error, an IW_CM_ERROR event with the same
 * triple, every posted work request completed exactly once, and not one
 * octet placed into a registered region. Other cases cover a listener fed
 * garbage or cut-off requests, the engine as initiator facing a broken
 * responder, a peer that stops reading, a Terminate from the peer, and
 * RFC 7306 atomics gone wrong in both directions.
 *
 * Single-threaded: the test drives the engine with its own poll loop
 * (fds, poll events, deadlines) and plays the peer on the same loop.
 * Ports 23870 upward on 127.0.0.1, one per case; the atomic cases take
 * turns on 23940-23949.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "iwarp/engine.h"
#include "iwarp/rx.h"
#include "iwarp/wire.h"
#include "tap.h"

#define PORT_BASE 23870
#define ATOMIC_PORT_BASE 23940	/* ten ports, reused in turn */
#define ATOMIC_PORTS 10
#define CASE_MS 3000		/* time bound of one case's main wait */
#define SETUP_MS 2000
#define FILL 0xa5		/* registered regions before each case */
#define WFILL 0x5a		/* payload the peer writes */
#define PEER_IRD 2		/* the peer's MPA Request */
#define PEER_ORD 2
#define ENG_IRD 2		/* the engine's parameters */
#define ENG_ORD 2
#define PEER_STAG 0x00c0ffeeu	/* peer's sink STag for Reads */
#define SINK_STAG 0x00abcd01u	/* peer's sink STag for engine Writes */
#define MAX_WR 64
#define MAX_EV 16
#define MAX_RECV 8
#define RECV_BUF 4096
#define MSG_LEN (1u << 20)	/* slow reader: 32 messages of 1 MiB */
#define N_MSG 32
#define SLOW_TOTAL ((uint64_t)MSG_LEN * N_MSG)
#define SLOW_LIMIT_US 50000	/* one iw_qp_progress / post call */
#define SRC_LEN (16u << 20)
#define ATOM_ADD 0x0102030405060708ull	/* the valid FetchAdd's operand */
#define CASE_ALARM_S 60		/* a hung case process is killed */
#define GUESS_LEN 200000	/* the long Read of run_guess */
#define GUESS_GUARD 4096
#define GUESS_PORT_BASE 23955

/* ---- registered regions, allocated once */

enum { MR_W, MR_NW, MR_PD2, MR_TOP, MR_SINK, MR_SRC, MR_ATOM, MR_GUESS,
       N_MR };

struct mr_spec {
	const char *name;
	size_t len;
	bool pd2;
	uint64_t base_to;
	unsigned int access;
};

static const struct mr_spec mr_specs[N_MR] = {
	[MR_W] = { "write", 65536, false, 0,
		   IW_ACC_LOCAL_WRITE | IW_ACC_REMOTE_WRITE },
	[MR_NW] = { "no-remote-write", 4096, false, 0,
		    IW_ACC_LOCAL_WRITE | IW_ACC_REMOTE_READ },
	[MR_PD2] = { "other-pd", 4096, true, 0,
		     IW_ACC_LOCAL_WRITE | IW_ACC_REMOTE_WRITE |
		     IW_ACC_REMOTE_READ },
	/* the last octet has TO 2^64 - 2: the end is still representable */
	[MR_TOP] = { "top-of-TO-space", 4096, false, UINT64_MAX - 4096,
		     IW_ACC_LOCAL_WRITE | IW_ACC_REMOTE_WRITE |
		     IW_ACC_REMOTE_ATOMIC },
	[MR_SINK] = { "read-sink", 4096, false, 0, IW_ACC_LOCAL_WRITE },
	[MR_SRC] = { "read-source", SRC_LEN, false, 0, IW_ACC_REMOTE_READ },
	/* malloc'ed, so TO 0 is 8-octet aligned in memory */
	[MR_ATOM] = { "atomic", 4096, false, 0,
		      IW_ACC_LOCAL_WRITE | IW_ACC_REMOTE_ATOMIC },
	/* a long Read's sink between two guard pages (run_guess) */
	[MR_GUESS] = { "long-read-sink", GUESS_LEN + 2 * GUESS_GUARD, false, 0,
		       IW_ACC_LOCAL_WRITE },
};

static uint8_t *region[N_MR];
static uint8_t *slow_src;	/* 32 MiB the engine sends */

/* Pattern of the slow-reader stream: differs between 256-octet blocks
 * and between 64 KiB blocks, so a misplaced segment shows. */
static inline uint8_t pat(uint64_t i)
{
	return (uint8_t)(i * 7 + (i >> 8) * 3 + (i >> 16));
}

/* ---- the case table */

struct hctx;
struct hcase;

typedef void (*run_fn)(const struct hcase *k, unsigned short port);
typedef int (*act_fn)(struct hctx *c, const struct hcase *k);

enum {
	PRE_RTR = 1 << 0,	/* peer sends the RTR before misbehaving */
	PRE_READ = 1 << 1,	/* engine posts a Read the peer never answers */
	PRE_ATOMIC = 1 << 2,	/* engine posts a FetchAdd towards the peer */
};

struct hcase {
	const char *name;
	run_fn run;
	act_fn act;
	/* arguments of the misbehaviour */
	int mr;			/* target region, -1: an unregistered STag */
	uint64_t to;
	uint32_t len;
	uint8_t op;
	uint32_t qn, msn;
	unsigned int count;	/* Read Requests; 0: peer's IRD + 1 */
	unsigned int stall_ms;	/* peer stops reading that long after */
	bool bad_crc;
	/* atomics */
	bool atomics;		/* iw_qp_set_atomics on the engine's QP */
	uint8_t aop;		/* atomic operation code sent */
	uint32_t alen;		/* atomic payload octets, 0: the right size */
	bool split;		/* Atomic Request without the L bit */
	uint32_t id_delta;	/* added to the Request Identifier answered */
	unsigned short port;	/* fixed port, 0: PORT_BASE + index */
	/* expected Terminate */
	uint8_t layer, etype, ecode;
	uint8_t hdr_req;	/* M/D/R bits that must be set */
	uint8_t hdr_any;	/* M/D/R bits that may be set */
	/* setup */
	unsigned int pre;
	unsigned int nrecv;
	uint32_t recv_len;
	uint32_t sq_size;
	uint32_t timeout_ms;	/* listener/accept parameter */
	unsigned int ms;	/* main wait, 0: CASE_MS */
	bool recv0_err;		/* first receive may fail instead of flush */
	bool read_rem;		/* engine's Read may complete REM_ERROR */
	bool want_close;	/* listener: engine must close the socket */
	int guess;		/* run_guess: the plan of the Response */
	unsigned int close_min_ms;
};

/* ---- state of one case: the engine objects and the hostile peer */

enum wr_kind { WR_RECV, WR_READ, WR_SEND, WR_ATOMIC };

struct wrrec {
	enum wr_kind kind;
	int done;
	enum iw_wc_status status;
	struct iw_err err;
};

/* Verifier of the slow-reader stream on the peer side. */
struct sink {
	uint64_t exp;		/* next expected octet of the stream */
	bool bad;
	char why[160];
};

enum peer_buf { PB_FRAME, PB_RX, PB_TRASH };

struct peer {
	int fd;
	bool reading;
	bool eof;
	int eof_errno;
	bool crc;
	enum mpa_kind expect;	/* frame the engine sends us */
	uint8_t fr[MPA_HDR_LEN + MPA_MAX_PD];
	size_t fr_have;
	bool fr_done, fr_bad;
	struct mpa_frame frame;
	struct iw_err fr_err;
	enum peer_buf cur;
	uint8_t head[64];	/* first octets received, for logs */
	size_t head_len;
	uint64_t in_octets;
	struct iw_rx rx;
	bool rx_on, rx_bad;
	int n_seg, n_term, after_term, n_rreq;
	struct rdmap_rreq rreq;		/* the engine's last Read Request */
	int n_areq, n_aresp;
	struct rdmap_areq areq;		/* the engine's last Atomic Request */
	struct rdmap_aresp aresp;	/* the engine's last Atomic Response */
	struct ddp_hdr aresp_hdr;
	struct rdmap_term term;
	uint8_t term_raw[DDP_UNTAGGED_HDR + RDMAP_TERM_MAX];
	size_t term_raw_len;
	struct sink *sink;
	uint8_t buf[65536];
};

struct hctx {
	const struct hcase *k;
	unsigned short port;
	struct iw_dev *dev;
	struct iw_pd *pd, *pd2;
	struct iw_mr *mr[N_MR];
	bool top_fallback;
	struct iw_qp *qp;
	struct iw_listener *l;
	struct iw_conn_param lparam, aparam;
	bool qp_done;
	int n_req;
	int accept_rc;
	bool accepted;
	int post_fail;
	struct iw_cm_event ev[MAX_EV];
	int n_ev;
	struct wrrec wr[MAX_WR];
	int n_wr;
	int stray_wc;
	uint8_t recvbuf[MAX_RECV][RECV_BUF];
	uint8_t bad[64];	/* the offending ULPDU's first octets */
	size_t bad_len;
	uint64_t prog_max_us, post_max_us;
	int eagain;
	struct sink sink;
	struct peer peer;
};

static struct hctx ctx;

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void diag_hex(const char *what, const uint8_t *p, size_t n)
{
	char line[3 * 32 + 1];
	size_t i, j;

	for (i = 0; i < n; i += 32) {
		for (j = 0; j < 32 && i + j < n; j++)
			sprintf(line + 3 * j, " %02x", p[i + j]);
		tap_diag("%s[%zu]:%s", what, i, line);
	}
	if (!n)
		tap_diag("%s: (none)", what);
}

static const char *const ev_names[] = {
	[IW_CM_CONNECT_REQUEST] = "CONNECT_REQUEST",
	[IW_CM_ESTABLISHED] = "ESTABLISHED",
	[IW_CM_REJECTED] = "REJECTED",
	[IW_CM_UNREACHABLE] = "UNREACHABLE",
	[IW_CM_DISCONNECTED] = "DISCONNECTED",
	[IW_CM_ERROR] = "ERROR",
};

static const char *ev_name(enum iw_cm_event_type t)
{
	if ((unsigned int)t >= sizeof(ev_names) / sizeof(ev_names[0]))
		return "?";
	return ev_names[t];
}

static void diag_events(const struct hctx *c)
{
	int i;

	for (i = 0; i < c->n_ev && i < MAX_EV; i++)
		tap_diag("cm event %d: %s status %d err %u/%u/%u remote %d",
			 i, ev_name(c->ev[i].type), c->ev[i].status,
			 c->ev[i].err.layer, c->ev[i].err.etype,
			 c->ev[i].err.ecode, c->ev[i].remote);
	if (!c->n_ev)
		tap_diag("no cm events");
}

static const struct iw_cm_event *cm_find(const struct hctx *c,
					 enum iw_cm_event_type t)
{
	int i;

	for (i = 0; i < c->n_ev && i < MAX_EV; i++)
		if (c->ev[i].type == t)
			return &c->ev[i];
	return NULL;
}

/* ---- engine callbacks */

static void eng_log(void *arg, int level, const char *msg)
{
	if ((level & IW_LOG_LEVEL_MASK) == IW_LOG_WARN)
		tap_diag("engine: %s", msg);
}

static void eng_cm_event(void *arg, struct iw_qp *qp,
			 const struct iw_cm_event *ev)
{
	struct hctx *c = arg;

	if (c->n_ev < MAX_EV) {
		c->ev[c->n_ev] = *ev;
		c->ev[c->n_ev].pdata = NULL;
		c->ev[c->n_ev].term_raw = NULL;
	}
	c->n_ev++;
}

static void eng_complete(void *arg, struct iw_qp *qp, const struct iw_wc *wc)
{
	struct hctx *c = arg;
	struct wrrec *w = wc->ctx;

	if (w < c->wr || w >= c->wr + c->n_wr) {
		c->stray_wc++;
		return;
	}
	if (!w->done++) {
		w->status = wc->status;
		w->err = wc->err;
	}
}

static const struct iw_qp_ops qp_ops = {
	.cm_event = eng_cm_event,
	.complete = eng_complete,
};

static struct wrrec *wr_new(struct hctx *c, enum wr_kind kind)
{
	struct wrrec *w;

	if (c->n_wr >= MAX_WR) {
		fprintf(stderr, "test bug: more than %d WRs\n", MAX_WR);
		abort();
	}
	w = &c->wr[c->n_wr++];
	memset(w, 0, sizeof(*w));
	w->kind = kind;
	return w;
}

static int post_recvs(struct hctx *c)
{
	const struct hcase *k = c->k;
	unsigned int i;
	int ret;

	for (i = 0; i < k->nrecv && i < MAX_RECV; i++) {
		struct iw_sge sge = { c->recvbuf[i], k->recv_len };
		struct iw_recv_wr wr = { .sgl = &sge, .num_sge = 1 };

		wr.ctx = wr_new(c, WR_RECV);
		ret = iw_qp_post_recv(c->qp, &wr);
		if (ret) {
			c->n_wr--;
			c->post_fail++;
			tap_diag("iw_qp_post_recv: %d", ret);
			return ret;
		}
	}
	return 0;
}

static int post_send(struct hctx *c, struct iw_send_wr *wr,
		     enum wr_kind kind)
{
	uint64_t t0;
	int ret;

	wr->ctx = wr_new(c, kind);
	t0 = now_us();
	ret = iw_qp_post_send(c->qp, wr);
	t0 = now_us() - t0;
	if (t0 > c->post_max_us)
		c->post_max_us = t0;
	if (ret)
		c->n_wr--;
	return ret;
}

/* The engine's own Read towards the peer, which never answers it. */
static int post_read(struct hctx *c)
{
	struct iw_sge sge = { region[MR_SINK], 64 };
	struct iw_send_wr wr = {
		.op = IW_WR_READ,
		.flags = IW_WR_SIGNALED,
		.sgl = &sge,
		.num_sge = 1,
		.rstag = PEER_STAG,
		.rto = 0,
	};

	return post_send(c, &wr, WR_READ);
}

/* The engine's FetchAdd towards the peer; the result would land in the
 * read sink, which must stay untouched when the response is bad. */
static int post_atomic(struct hctx *c)
{
	struct iw_sge sge = { region[MR_SINK] + 64, 8 };
	struct iw_send_wr wr = {
		.op = IW_WR_ATOMIC_FADD,
		.flags = IW_WR_SIGNALED,
		.sgl = &sge,
		.num_sge = 1,
		.rstag = PEER_STAG,
		.rto = 0x40,
		.add_swap = 1,
	};

	return post_send(c, &wr, WR_ATOMIC);
}

static void lst_conn_request(void *arg, struct iw_conn_req *req,
			     const struct iw_cm_event *ev)
{
	struct hctx *c = arg;

	if (c->n_req++ || c->accepted) {
		iw_reject(req, NULL, 0);
		return;
	}
	c->accept_rc = iw_accept(req, c->qp, &c->aparam);
	if (c->accept_rc)
		return;
	c->accepted = true;
	post_recvs(c);
}

static const struct iw_listener_ops lst_ops = {
	.conn_request = lst_conn_request,
};

/* ---- the hostile peer's receive side */

static int peer_seg_start(void *arg, const struct iw_rx_seg *seg,
			  struct iw_rx_dst *dst, struct iw_err *err);
static int peer_seg_done(void *arg, const struct iw_rx_seg *seg,
			 struct iw_err *err);

static const struct iw_rx_ops peer_rx_ops = {
	.seg_start = peer_seg_start,
	.seg_done = peer_seg_done,
};

static void sink_fail(struct sink *s, const char *fmt, unsigned long long a,
		      unsigned long long b)
{
	if (s->bad)
		return;
	s->bad = true;
	snprintf(s->why, sizeof(s->why), fmt, a, b);
}

/* Every segment must be exactly the next piece of the posted stream:
 * message k (Send if even, Write if odd) at offset exp % MSG_LEN. */
static void sink_start(struct sink *s, const struct iw_rx_seg *seg)
{
	const struct ddp_hdr *h = &seg->hdr;
	uint64_t k = s->exp / MSG_LEN, off = s->exp % MSG_LEN;
	bool last = off + seg->payload_len == MSG_LEN;

	if (k >= N_MSG)
		sink_fail(s, "segment at %llu after the end (op %llu)",
			  s->exp, h->opcode);
	else if (!seg->payload_len || off + seg->payload_len > MSG_LEN)
		sink_fail(s, "segment of %llu octets at %llu",
			  seg->payload_len, s->exp);
	else if (h->last != last)
		sink_fail(s, "L bit %llu at %llu", h->last, s->exp);
	else if ((k & 1) && (h->opcode != RDMAP_WRITE ||
			     h->stag != SINK_STAG || h->to != s->exp))
		sink_fail(s, "expected a Write at %llu, got TO %llu",
			  s->exp, h->to);
	else if (!(k & 1) && (h->opcode != RDMAP_SEND ||
			      h->qn != DDP_QN_SEND || h->msn != k / 2 + 1 ||
			      h->mo != off))
		sink_fail(s, "expected a Send at %llu, got MSN/MO %llx",
			  s->exp, (unsigned long long)h->msn << 32 | h->mo);
}

static void sink_done(struct sink *s, const uint8_t *p, uint32_t n)
{
	uint32_t i;

	if (s->bad)
		return;
	for (i = 0; i < n; i++)
		if (p[i] != pat(s->exp + i))
			break;
	if (i < n)
		sink_fail(s, "octet %llu differs (got %llu)", s->exp + i,
			  p[i]);
	s->exp += n;
}

static int peer_seg_start(void *arg, const struct iw_rx_seg *seg,
			  struct iw_rx_dst *dst, struct iw_err *err)
{
	struct peer *p = arg;

	p->n_seg++;
	if (p->n_term)
		p->after_term++;
	if (p->sink && seg->hdr.opcode != RDMAP_TERMINATE)
		sink_start(p->sink, seg);
	/* a ULPDU is at most 65535 octets: the payload fits buf */
	dst->buf = seg->payload_len ? p->buf : NULL;
	dst->len = seg->payload_len;
	return 0;
}

static int peer_seg_done(void *arg, const struct iw_rx_seg *seg,
			 struct iw_err *err)
{
	struct peer *p = arg;

	if (seg->hdr.opcode == RDMAP_READ_REQ) {
		p->n_rreq++;
		p->rreq = seg->rreq;
	}
	if (seg->hdr.opcode == RDMAP_ATOMIC_REQ) {
		p->n_areq++;
		p->areq = seg->areq;
	}
	if (seg->hdr.opcode == RDMAP_ATOMIC_RESP) {
		p->n_aresp++;
		p->aresp = seg->aresp;
		p->aresp_hdr = seg->hdr;
	}
	if (p->sink && seg->hdr.opcode != RDMAP_TERMINATE)
		sink_done(p->sink, p->buf, seg->payload_len);
	if (seg->hdr.opcode != RDMAP_TERMINATE || p->n_term++)
		return 0;
	p->term = seg->term;
	p->term_raw_len = seg->raw_len < sizeof(p->term_raw) ?
			  seg->raw_len : sizeof(p->term_raw);
	memcpy(p->term_raw, seg->raw, p->term_raw_len);
	return 0;
}

static void peer_want(struct peer *p, uint8_t **buf, size_t *len)
{
	ssize_t flen;

	if (!p->fr_done && !p->fr_bad) {
		flen = p->fr_have < MPA_HDR_LEN ? MPA_HDR_LEN :
		       mpa_frame_len(p->fr, p->fr_have);
		if (flen > (ssize_t)sizeof(p->fr)) {
			p->fr_bad = true;
		} else {
			p->cur = PB_FRAME;
			*buf = p->fr + p->fr_have;
			*len = (size_t)flen - p->fr_have;
			return;
		}
	}
	if (p->rx_on && !p->rx_bad) {
		iw_rx_want(&p->rx, buf, len);
		if (*len) {
			p->cur = PB_RX;
			return;
		}
	}
	p->cur = PB_TRASH;
	*buf = p->buf;
	*len = sizeof(p->buf);
}

/* The key is checked on the first octets, so garbage fails at once. */
static void peer_frame_got(struct peer *p)
{
	int ret = mpa_frame_parse(p->fr, p->fr_have, p->expect, &p->frame,
				  &p->fr_err);

	if (ret == -EAGAIN)
		return;
	if (ret) {
		p->fr_bad = true;
		return;
	}
	p->fr_done = true;
	p->crc = p->crc || p->frame.crc;
	iw_rx_init(&p->rx, p->crc, false, &peer_rx_ops, p);
	p->rx_on = true;
}

static void peer_got(struct peer *p, const uint8_t *buf, size_t n)
{
	size_t h = sizeof(p->head) - p->head_len;

	memcpy(p->head + p->head_len, buf, n < h ? n : h);
	p->head_len += n < h ? n : h;
	p->in_octets += n;
	switch (p->cur) {
	case PB_FRAME:
		p->fr_have += n;
		peer_frame_got(p);
		break;
	case PB_RX:
		if (iw_rx_advance(&p->rx, n))
			p->rx_bad = true;
		break;
	default:
		break;
	}
}

static void peer_pump(struct peer *p)
{
	uint8_t *buf;
	size_t len;
	ssize_t n;

	while (p->fd >= 0 && !p->eof) {
		peer_want(p, &buf, &len);
		n = recv(p->fd, buf, len, 0);
		if (n > 0) {
			peer_got(p, buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		p->eof = true;
		p->eof_errno = n < 0 ? errno : 0;
	}
}

static void peer_close(struct peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

static void peer_reset(struct peer *p, enum mpa_kind expect)
{
	peer_close(p);
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	p->reading = true;
	p->crc = true;		/* the peer always asks for CRC */
	p->expect = expect;
}

/* ---- the poll loop */

static bool due(uint64_t deadline, uint64_t now)
{
	return deadline && now >= deadline;
}

static void wait_until(int *timeout, uint64_t deadline, uint64_t now)
{
	if (deadline && (int64_t)(deadline - now) < *timeout)
		*timeout = deadline > now ? (int)(deadline - now) : 0;
}

static void qp_progress(struct hctx *c)
{
	uint64_t t0 = now_us();
	int ret = iw_qp_progress(c->qp);

	t0 = now_us() - t0;
	if (t0 > c->prog_max_us)
		c->prog_max_us = t0;
	if (ret < 0)
		c->qp_done = true;
}

/* One round: wait up to max_ms for any fd or deadline, then progress
 * whatever is ready. */
static void step(struct hctx *c, int max_ms)
{
	struct pollfd pfd[3];
	int n = 0, il = -1, iq = -1, ip = -1, to = max_ms, fd;
	uint64_t now = iw_now_ms(), ldl = 0, qdl = 0;

	if (c->l) {
		pfd[n] = (struct pollfd){ iw_listener_fd(c->l), POLLIN, 0 };
		il = n++;
		ldl = iw_listener_deadline(c->l);
		wait_until(&to, ldl, now);
	}
	if (c->qp && !c->qp_done) {
		fd = iw_qp_fd(c->qp);
		if (fd >= 0) {
			pfd[n] = (struct pollfd){ fd,
				iw_qp_poll_events(c->qp), 0 };
			iq = n++;
		}
		qdl = iw_qp_deadline(c->qp);
		wait_until(&to, qdl, now);
	}
	if (c->peer.fd >= 0 && c->peer.reading && !c->peer.eof) {
		pfd[n] = (struct pollfd){ c->peer.fd, POLLIN, 0 };
		ip = n++;
	}
	poll(pfd, (nfds_t)n, to);
	now = iw_now_ms();
	if (il >= 0 && (pfd[il].revents || due(ldl, now)))
		iw_listener_progress(c->l);
	if (c->qp && !c->qp_done &&
	    ((iq >= 0 && pfd[iq].revents) || due(qdl, now)))
		qp_progress(c);
	if (ip >= 0 && pfd[ip].revents)
		peer_pump(&c->peer);
}

typedef bool (*done_fn)(struct hctx *c);

static bool drive(struct hctx *c, done_fn done, unsigned int ms)
{
	uint64_t end = iw_now_ms() + ms, now;

	for (;;) {
		if (done && done(c))
			return true;
		now = iw_now_ms();
		if (now >= end)
			return false;
		step(c, end - now < 20 ? (int)(end - now) : 20);
	}
}

static bool wrs_done(const struct hctx *c)
{
	int i;

	for (i = 0; i < c->n_wr; i++)
		if (!c->wr[i].done)
			return false;
	return true;
}

static bool frame_in(struct hctx *c)
{
	return c->peer.fr_done || c->peer.fr_bad || c->peer.eof;
}

static bool established(struct hctx *c)
{
	return cm_find(c, IW_CM_ESTABLISHED) || c->qp_done;
}

static bool peer_saw_rreq(struct hctx *c)
{
	return c->peer.n_rreq > 0 || c->peer.eof;
}

static bool peer_eof(struct hctx *c)
{
	return c->peer.eof;
}

static bool peer_saw_areq(struct hctx *c)
{
	return c->peer.n_areq > 0 || c->peer.eof;
}

/* ---- the peer's send side */

static int peer_send(struct hctx *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t end = iw_now_ms() + SETUP_MS;
	ssize_t n;

	while (len) {
		n = send(c->peer.fd, p, len, MSG_NOSIGNAL);
		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR)
			return -errno;
		if (iw_now_ms() >= end)
			return -ETIMEDOUT;
		step(c, 5);
	}
	return 0;
}

/* Frames one ULPDU and sends it, with a corrupt CRC when asked. */
static int peer_fpdu(struct hctx *c, const uint8_t *u, size_t len,
		     bool bad_crc)
{
	uint8_t f[8192];
	ssize_t n;

	n = mpa_fpdu_build(f, sizeof(f), u, len, c->peer.crc, false, NULL);
	if (n < 0)
		return (int)n;
	if (bad_crc)
		f[n - 1] ^= 0x5a;
	return peer_send(c, f, (size_t)n);
}

static void set_bad(struct hctx *c, const uint8_t *u, size_t len)
{
	memcpy(c->bad, u, len < sizeof(c->bad) ? len : sizeof(c->bad));
	c->bad_len = len;
}

static size_t ulpdu_tagged(uint8_t *u, uint32_t stag, uint64_t to,
			   uint32_t len)
{
	struct ddp_hdr h = {
		.tagged = true, .last = true, .ddp_ver = DDP_VERSION,
		.rdmap_ver = RDMAP_VERSION, .opcode = RDMAP_WRITE,
		.stag = stag, .to = to,
	};

	ddp_hdr_build(u, DDP_TAGGED_HDR, &h);
	memset(u + DDP_TAGGED_HDR, WFILL, len);
	return DDP_TAGGED_HDR + len;
}

/* Untagged header; reserved opcodes are patched in by hand because the
 * codec refuses to build them. */
static size_t ulpdu_untagged(uint8_t *u, uint8_t op, uint32_t qn,
			     uint32_t msn, uint32_t mo, uint32_t len,
			     bool last)
{
	struct ddp_hdr h = {
		.last = last, .ddp_ver = DDP_VERSION,
		.rdmap_ver = RDMAP_VERSION,
		.opcode = rdmap_hdr_len(op) ? op : RDMAP_SEND,
		.qn = qn, .msn = msn, .mo = mo,
	};

	ddp_hdr_build(u, DDP_UNTAGGED_HDR, &h);
	u[1] = (uint8_t)((u[1] & ~DDP_CTRL_OP) | (op & DDP_CTRL_OP));
	memset(u + DDP_UNTAGGED_HDR, WFILL, len);
	return DDP_UNTAGGED_HDR + len;
}

static size_t ulpdu_rreq(uint8_t *u, uint32_t msn,
			 const struct rdmap_rreq *r)
{
	ulpdu_untagged(u, RDMAP_READ_REQ, DDP_QN_RREQ, msn, 0, 0, true);
	rdmap_rreq_build(u + DDP_UNTAGGED_HDR, RDMAP_RREQ_LEN, r);
	return DDP_UNTAGGED_HDR + RDMAP_RREQ_LEN;
}

/* An Atomic Request of `len` payload octets (52 is right); an atomic
 * operation the codec refuses is patched in. */
static size_t ulpdu_areq(uint8_t *u, uint32_t msn, bool last,
			 const struct rdmap_areq *a, uint32_t len)
{
	struct rdmap_areq ok = *a;
	uint8_t p[RDMAP_AREQ_LEN];

	ulpdu_untagged(u, RDMAP_ATOMIC_REQ, DDP_QN_AREQ, msn, 0, len, last);
	ok.op = RDMAP_ATOMIC_FETCH_ADD;
	rdmap_areq_build(p, sizeof(p), &ok);
	p[3] = a->op;
	memcpy(u + DDP_UNTAGGED_HDR, p, len < sizeof(p) ? len : sizeof(p));
	return DDP_UNTAGGED_HDR + len;
}

static size_t ulpdu_aresp(uint8_t *u, uint32_t msn,
			  const struct rdmap_aresp *r, uint32_t len)
{
	uint8_t p[RDMAP_ARESP_LEN];

	ulpdu_untagged(u, RDMAP_ATOMIC_RESP, DDP_QN_ARESP, msn, 0, len, true);
	rdmap_aresp_build(p, sizeof(p), r);
	memcpy(u + DDP_UNTAGGED_HDR, p, len < sizeof(p) ? len : sizeof(p));
	return DDP_UNTAGGED_HDR + len;
}

static int peer_connect(struct hctx *c)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(c->port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -errno;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	c->peer.fd = fd;
	return 0;
}

static ssize_t build_frame(uint8_t *buf, size_t cap, enum mpa_kind kind)
{
	struct mpa_frame f = {
		.kind = kind, .rev = 2, .crc = true, .enhanced = true,
		.p2p = true, .rtr = MPA_RTR_WRITE,
		.ird = PEER_IRD, .ord = PEER_ORD,
	};

	return mpa_frame_build(buf, cap, &f, NULL, 0);
}

static int send_request(struct hctx *c)
{
	uint8_t f[MPA_HDR_LEN + MPA_ENH_LEN];
	ssize_t n = build_frame(f, sizeof(f), MPA_REQUEST);

	return n < 0 ? (int)n : peer_send(c, f, (size_t)n);
}

static int send_rtr(struct hctx *c)
{
	uint8_t u[DDP_TAGGED_HDR];

	return peer_fpdu(c, u, ulpdu_tagged(u, 1, 0, 0), false);
}

/* ---- engine setup and teardown */

static struct hctx *ctx_new(const struct hcase *k, unsigned short port)
{
	struct hctx *c = &ctx;

	memset(c, 0, sizeof(*c));
	c->k = k;
	c->port = port;
	c->peer.fd = -1;
	peer_reset(&c->peer, MPA_REPLY);
	c->lparam = (struct iw_conn_param){
		.rev = 2, .crc = true, .rtr = IW_RTR_WRITE,
		.ird = ENG_IRD, .ord = ENG_ORD,
		.timeout_ms = k->timeout_ms ? k->timeout_ms : 2000,
	};
	c->aparam = c->lparam;
	tap_diag("---- %s (port %u)", k->name, port);
	return c;
}

static int mrs_reg(struct hctx *c)
{
	const struct mr_spec *s;
	int i, ret;

	for (i = 0; i < N_MR; i++) {
		s = &mr_specs[i];
		if (i != MR_SRC)
			memset(region[i], FILL, s->len);
		ret = iw_mr_reg(s->pd2 ? c->pd2 : c->pd, region[i], s->len,
				s->base_to, s->access, &c->mr[i]);
		if (ret && i == MR_TOP) {
			/* the engine refuses the top of the TO space */
			tap_diag("iw_mr_reg(top of TO space): %d, TO wrap "
				 "case falls back to the write region", ret);
			c->top_fallback = true;
			continue;
		}
		if (ret) {
			tap_diag("iw_mr_reg(%s): %d", s->name, ret);
			return ret;
		}
	}
	return 0;
}

static int eng_open(struct hctx *c)
{
	struct iw_qp_attr attr = {
		.sq_size = c->k->sq_size, .ops = &qp_ops, .arg = c,
	};
	int ret;

	ret = iw_dev_open(&c->dev);
	if (ret)
		return ret;
	iw_dev_set_log(c->dev, eng_log, c);
	ret = iw_pd_alloc(c->dev, &c->pd);
	if (!ret)
		ret = iw_pd_alloc(c->dev, &c->pd2);
	if (!ret)
		ret = mrs_reg(c);
	if (!ret)
		ret = iw_qp_create(c->pd, &attr, &c->qp);
	if (ret)
		tap_diag("engine setup: %d", ret);
	return ret;
}

static int eng_listen(struct hctx *c)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(c->port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int ret;

	ret = iw_listen(c->dev, (struct sockaddr *)&sa, sizeof(sa), 8,
			&c->lparam, &lst_ops, c, &c->l);
	if (ret)
		tap_diag("iw_listen(port %u): %d", c->port, ret);
	return ret;
}

/* Destroys everything; the QP's flush must not complete anything twice. */
static void eng_close(struct hctx *c)
{
	int i, ret, rc = 0, twice = 0;

	peer_close(&c->peer);
	if (c->qp && (ret = iw_qp_destroy(c->qp)) && !rc)
		rc = ret;
	for (i = 0; i < c->n_wr; i++)
		if (c->wr[i].done != 1)
			twice++;
	if (c->l && (ret = iw_listener_close(c->l)) && !rc)
		rc = ret;
	for (i = 0; i < N_MR; i++)
		if (c->mr[i] && (ret = iw_mr_dereg(c->mr[i])) && !rc)
			rc = ret;
	if (c->pd2 && (ret = iw_pd_free(c->pd2)) && !rc)
		rc = ret;
	if (c->pd && (ret = iw_pd_free(c->pd)) && !rc)
		rc = ret;
	if (c->dev && (ret = iw_dev_close(c->dev)) && !rc)
		rc = ret;
	tap_ok(!rc && !twice && !c->stray_wc,
	       "%s: teardown clean (rc %d, %d WRs not completed exactly "
	       "once after destroy, %d stray completions)", c->k->name, rc,
	       twice, c->stray_wc);
}

static bool setup_fail(struct hctx *c, const char *what)
{
	tap_ok(0, "%s: setup: %s", c->k->name, what);
	diag_events(c);
	return false;
}

/* Connect, send the MPA Request, read a good Reply picking Write RTR. */
static bool peer_handshake(struct hctx *c)
{
	const struct mpa_frame *f = &c->peer.frame;

	if (peer_connect(c) || send_request(c))
		return false;
	drive(c, frame_in, SETUP_MS);
	if (!c->peer.fr_done) {
		tap_diag("no MPA Reply (bad %d, eof %d, %zu octets in, "
			 "requests %d, accept rc %d)", c->peer.fr_bad,
			 c->peer.eof, c->peer.head_len, c->n_req,
			 c->accept_rc);
		diag_hex("received", c->peer.head, c->peer.head_len);
		return false;
	}
	if (f->reject || !f->enhanced || !f->p2p ||
	    f->rtr != MPA_RTR_WRITE || !c->accepted) {
		tap_diag("Reply: R %d S %d A %d rtr %#x rev %u, accepted %d",
			 f->reject, f->enhanced, f->p2p, f->rtr, f->rev,
			 c->accepted);
		return false;
	}
	return true;
}

/* RTR, then wait for ESTABLISHED; optionally post a Read and a FetchAdd
 * that stay outstanding and wait until they are on the wire. */
static bool peer_establish(struct hctx *c, bool read, bool atomic)
{
	if (send_rtr(c) || !drive(c, established, SETUP_MS) ||
	    !cm_find(c, IW_CM_ESTABLISHED))
		return false;
	if (read) {
		if (post_read(c)) {
			tap_diag("posting the engine's Read failed");
			return false;
		}
		if (!drive(c, peer_saw_rreq, SETUP_MS) || c->peer.n_rreq != 1)
			return false;
	}
	if (atomic) {
		if (post_atomic(c)) {
			tap_diag("posting the engine's FetchAdd failed");
			return false;
		}
		if (!drive(c, peer_saw_areq, SETUP_MS) || c->peer.n_areq != 1)
			return false;
	}
	return true;
}

static bool responder_setup(struct hctx *c)
{
	const struct hcase *k = c->k;

	if (eng_open(c) || eng_listen(c))
		return setup_fail(c, "engine objects");
	iw_qp_set_atomics(c->qp, k->atomics);
	if (!peer_handshake(c))
		return setup_fail(c, "MPA Request/Reply");
	if (c->post_fail)
		return setup_fail(c, "posting receives");
	if ((k->pre & PRE_RTR) &&
	    !peer_establish(c, k->pre & PRE_READ, k->pre & PRE_ATOMIC))
		return setup_fail(c, "RTR / ESTABLISHED / engine Read, atomic");
	return true;
}

/* ---- checks */

static bool region_clean(int i)
{
	size_t j;

	if (i == MR_SRC)
		return true;
	for (j = 0; j < mr_specs[i].len; j++)
		if (region[i][j] != FILL) {
			tap_diag("region %s: octet %zu is %#x",
				 mr_specs[i].name, j, region[i][j]);
			return false;
		}
	return true;
}

static void check_regions(const struct hctx *c)
{
	bool ok = true;
	int i;

	for (i = 0; i < N_MR; i++)
		ok &= region_clean(i);
	tap_ok(ok, "%s: not one octet placed in any registered region",
	       c->k->name);
}

static bool wr_status_ok(const struct hctx *c, int i)
{
	const struct wrrec *w = &c->wr[i];

	if (w->status == IW_WC_FLUSHED)
		return true;
	if (w->kind == WR_RECV && i == 0 && c->k->recv0_err)
		return w->status != IW_WC_SUCCESS;
	if (w->kind == WR_READ && c->k->read_rem)
		return w->status == IW_WC_REM_ERROR;
	return false;
}

static const char *const wr_kinds[] = { "recv", "read", "send", "atomic" };

/* Every posted WR completed exactly once, with a flush (or the error the
 * case allows for the receive that met the bad message). */
static void check_flushed(const struct hctx *c)
{
	bool ok = !c->stray_wc;
	int i;

	for (i = 0; i < c->n_wr; i++) {
		const struct wrrec *w = &c->wr[i];

		if (w->done == 1 && wr_status_ok(c, i))
			continue;
		ok = false;
		tap_diag("WR %d (%s): completed %d times, status %d, "
			 "err %u/%u/%u", i, wr_kinds[w->kind], w->done,
			 w->status, w->err.layer, w->err.etype,
			 w->err.ecode);
	}
	tap_ok(ok, "%s: all %d posted WRs completed once, flushed",
	       c->k->name, c->n_wr);
}

static void diag_term(const struct hctx *c)
{
	const struct peer *p = &c->peer;
	const struct rdmap_term *t = &p->term;

	tap_diag("wire: %d Terminate(s), %d segments, rx %s%s, eof %d "
		 "(errno %d)", p->n_term, p->n_seg,
		 iw_rx_state_str(p->rx.state), p->rx_bad ? " (failed)" : "",
		 p->eof, p->eof_errno);
	if (p->rx_bad)
		tap_diag("peer rx error %u/%u/%u %s", p->rx.err.layer,
			 p->rx.err.etype, p->rx.err.ecode,
			 p->rx.err.why ? p->rx.err.why : "");
	if (!p->n_term)
		return;
	tap_diag("got %u/%u/%u (%s) hdrct %#x seg_len %u ddp %u rreq %d",
		 t->layer, t->etype, t->ecode,
		 iw_err_str(t->layer, t->etype, t->ecode), t->hdrct,
		 t->seg_len, t->ddp_hdr_len, t->has_rreq);
	diag_hex("Terminate (DDP header on)", p->term_raw, p->term_raw_len);
	diag_hex("offending ULPDU", c->bad,
		 c->bad_len < sizeof(c->bad) ? c->bad_len : sizeof(c->bad));
}

static bool copies_ok(const struct hctx *c)
{
	const struct hcase *k = c->k;
	const struct rdmap_term *t = &c->peer.term;
	size_t dlen = c->bad[0] & 0x80 ? DDP_TAGGED_HDR : DDP_UNTAGGED_HDR;

	if (!c->peer.n_term || (t->hdrct & ~k->hdr_any) != k->hdr_req)
		return false;
	if ((t->hdrct & RDMAP_TERM_M) && t->seg_len != c->bad_len)
		return false;
	if ((t->hdrct & RDMAP_TERM_D) &&
	    (t->ddp_hdr_len != dlen || memcmp(t->ddp_hdr, c->bad, dlen)))
		return false;
	if ((t->hdrct & RDMAP_TERM_R) &&
	    (!t->has_rreq ||
	     memcmp(t->rreq, c->bad + DDP_UNTAGGED_HDR, RDMAP_RREQ_LEN)))
		return false;
	return true;
}

static void check_wire_term(const struct hctx *c)
{
	const struct hcase *k = c->k;
	const struct peer *p = &c->peer;
	const struct rdmap_term *t = &p->term;
	bool ok, copies;

	ok = p->n_term == 1 && t->layer == k->layer &&
	     t->etype == k->etype && t->ecode == k->ecode;
	tap_ok(ok, "%s: Terminate %u/%u/%u (%s) on the wire", k->name,
	       k->layer, k->etype, k->ecode,
	       iw_err_str(k->layer, k->etype, k->ecode));
	copies = copies_ok(c);
	tap_ok(copies, "%s: Terminate header copies: M%s D%s R%s",
	       k->name, k->hdr_req & RDMAP_TERM_M ? "+" : "-",
	       k->hdr_req & RDMAP_TERM_D ? "+" : "-",
	       k->hdr_req & RDMAP_TERM_R ? "+" :
	       k->hdr_any & RDMAP_TERM_R ? "?" : "-");
	tap_ok(p->n_term && !p->after_term,
	       "%s: nothing sent after the Terminate (%d segments)",
	       k->name, p->after_term);
	if (!ok || !copies || p->after_term)
		diag_term(c);
	else
		diag_hex("Terminate", p->term_raw, p->term_raw_len);
}

static void check_qp_error(const struct hctx *c, bool remote)
{
	const struct hcase *k = c->k;
	const struct iw_cm_event *ev = cm_find(c, IW_CM_ERROR);
	enum iw_qp_state s = iw_qp_state(c->qp);
	bool ok;

	tap_ok(s == IW_QPS_ERROR, "%s: QP state ERROR (got %s)", k->name,
	       iw_qp_state_str(s));
	ok = ev && ev->remote == remote && ev->err.layer == k->layer &&
	     ev->err.etype == k->etype && ev->err.ecode == k->ecode;
	if (!tap_ok(ok, "%s: IW_CM_ERROR remote=%s err %u/%u/%u", k->name,
		    remote ? "true" : "false", k->layer, k->etype, k->ecode))
		diag_events(c);
}

/* ---- misbehaviours */

static bool stag_in_use(const struct hctx *c, uint32_t s)
{
	int i;

	for (i = 0; i < N_MR; i++)
		if (c->mr[i] && iw_mr_stag(c->mr[i]) == s)
			return true;
	return s <= 1;
}

static uint32_t pick_stag(const struct hctx *c, int mr)
{
	uint32_t s = 0x7e57ba00;

	if (mr >= 0 && c->mr[mr])
		return iw_mr_stag(c->mr[mr]);
	while (stag_in_use(c, s))
		s++;
	return s;
}

static int act_write(struct hctx *c, const struct hcase *k)
{
	uint8_t u[DDP_TAGGED_HDR + 4096];
	int mr = k->mr == MR_TOP && c->top_fallback ? MR_W : k->mr;
	size_t n = ulpdu_tagged(u, pick_stag(c, mr), k->to, k->len);

	set_bad(c, u, n);
	return peer_fpdu(c, u, n, false);
}

static bool never(struct hctx *c)
{
	return false;
}

/* count Read Requests in one send; the last one is the offender. */
static int act_rreq(struct hctx *c, const struct hcase *k)
{
	uint8_t u[DDP_UNTAGGED_HDR + RDMAP_RREQ_LEN];
	uint8_t f[16 * 64];
	unsigned int i, n = k->count ? k->count : c->peer.frame.ird + 1u;
	size_t len = 0;
	ssize_t m;

	if (n > 16) {
		tap_diag("Reply IRD %u: too many Read Requests to send",
			 c->peer.frame.ird);
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		struct rdmap_rreq r = {
			.sink_stag = PEER_STAG,
			.sink_to = (uint64_t)i * k->len,
			.size = k->len,
			.src_stag = pick_stag(c, k->mr),
			.src_to = k->to,
		};
		size_t ul = ulpdu_rreq(u, i + 1, &r);

		set_bad(c, u, ul);
		m = mpa_fpdu_build(f + len, sizeof(f) - len, u, ul,
				   c->peer.crc, false, NULL);
		if (m < 0)
			return (int)m;
		len += (size_t)m;
	}
	if (peer_send(c, f, len))
		return -EIO;
	if (k->stall_ms) {
		c->peer.reading = false;
		drive(c, never, k->stall_ms);
		c->peer.reading = true;
	}
	return 0;
}

static int act_send(struct hctx *c, const struct hcase *k)
{
	uint8_t u[DDP_UNTAGGED_HDR + 4096];
	size_t n = ulpdu_untagged(u, k->op, k->qn, k->msn, 0, k->len, true);

	set_bad(c, u, n);
	return peer_fpdu(c, u, n, k->bad_crc);
}

/* Two segments of one Send; the second does not continue at MO 100. */
static int act_bad_mo(struct hctx *c, const struct hcase *k)
{
	uint8_t u[DDP_UNTAGGED_HDR + 100];
	size_t n;
	int ret;

	n = ulpdu_untagged(u, RDMAP_SEND, DDP_QN_SEND, 1, 0, 100, false);
	ret = peer_fpdu(c, u, n, false);
	if (ret)
		return ret;
	n = ulpdu_untagged(u, RDMAP_SEND, DDP_QN_SEND, 1, 150, 100, true);
	set_bad(c, u, n);
	return peer_fpdu(c, u, n, false);
}

/* A zero-length Read RTR where the Reply asked for a Write RTR. */
static int act_read_rtr(struct hctx *c, const struct hcase *k)
{
	uint8_t u[DDP_UNTAGGED_HDR + RDMAP_RREQ_LEN];
	struct rdmap_rreq r = { .sink_stag = 1, .src_stag = 1 };
	size_t n = ulpdu_rreq(u, 1, &r);

	set_bad(c, u, n);
	return peer_fpdu(c, u, n, false);
}

/* One Atomic Request at region k->mr, TO k->to, as the case bends it. */
static int act_areq(struct hctx *c, const struct hcase *k)
{
	uint8_t u[DDP_UNTAGGED_HDR + 128];
	struct rdmap_areq a = {
		.op = k->aop, .req_id = 0x5eed, .stag = pick_stag(c, k->mr),
		.to = k->to, .add_swap = ATOM_ADD,
	};
	size_t n = ulpdu_areq(u, k->msn ? k->msn : 1, !k->split, &a,
			      k->alen ? k->alen : RDMAP_AREQ_LEN);

	set_bad(c, u, n);
	return peer_fpdu(c, u, n, false);
}

/* A 16 MiB Read, then two FetchAdds in one send: with IRD 2 the second
 * FetchAdd is one request too many while the Read Response cannot
 * drain (the peer stops reading). */
static int act_areq_ird(struct hctx *c, const struct hcase *k)
{
	uint8_t u[DDP_UNTAGGED_HDR + RDMAP_AREQ_LEN], f[3 * 128];
	struct rdmap_rreq r = {
		.sink_stag = PEER_STAG, .size = SRC_LEN,
		.src_stag = pick_stag(c, MR_SRC),
	};
	struct rdmap_areq a = {
		.op = RDMAP_ATOMIC_FETCH_ADD, .stag = pick_stag(c, MR_ATOM),
		.add_swap = 1,
	};
	size_t len = 0, ul;
	ssize_t m;
	uint32_t i;

	for (i = 0; i < 3; i++) {
		if (i == 0) {
			ul = ulpdu_rreq(u, 1, &r);
		} else {
			a.req_id = i;
			a.to = 8 * i;
			ul = ulpdu_areq(u, i, true, &a, RDMAP_AREQ_LEN);
		}
		set_bad(c, u, ul);
		m = mpa_fpdu_build(f + len, sizeof(f) - len, u, ul,
				   c->peer.crc, false, NULL);
		if (m < 0)
			return (int)m;
		len += (size_t)m;
	}
	if (peer_send(c, f, len))
		return -EIO;
	c->peer.reading = false;
	drive(c, never, k->stall_ms);
	c->peer.reading = true;
	return 0;
}

/* An Atomic Response: to the engine's FetchAdd when it sent one (with
 * k->id_delta added to its Request Identifier), else unsolicited. */
static int act_aresp(struct hctx *c, const struct hcase *k)
{
	uint8_t u[DDP_UNTAGGED_HDR + 64];
	struct rdmap_aresp r = {
		.req_id = (c->peer.n_areq ? c->peer.areq.req_id : 0) +
			  k->id_delta,
		.orig = 0x1122334455667788ull,
	};
	size_t n = ulpdu_aresp(u, k->msn ? k->msn : 1, &r,
			       k->alen ? k->alen : RDMAP_ARESP_LEN);

	set_bad(c, u, n);
	return peer_fpdu(c, u, n, false);
}

/* A Read Response while the engine waits for an Atomic Response. */
static int act_rresp(struct hctx *c, const struct hcase *k)
{
	uint8_t u[DDP_TAGGED_HDR + 8];
	struct ddp_hdr h = {
		.tagged = true, .last = true, .ddp_ver = DDP_VERSION,
		.rdmap_ver = RDMAP_VERSION, .opcode = RDMAP_READ_RESP,
		.stag = 1, .to = 0,
	};

	ddp_hdr_build(u, DDP_TAGGED_HDR, &h);
	memset(u + DDP_TAGGED_HDR, WFILL, 8);
	set_bad(c, u, sizeof(u));
	return peer_fpdu(c, u, sizeof(u), false);
}

static int act_http(struct hctx *c, const struct hcase *k)
{
	static const char req[] = "GET / HTTP/1.1\r\n\r\n";

	return peer_send(c, req, sizeof(req) - 1);
}

static int act_req_cut(struct hctx *c, const struct hcase *k)
{
	uint8_t f[MPA_HDR_LEN + MPA_ENH_LEN];
	ssize_t n = build_frame(f, sizeof(f), MPA_REQUEST);

	return n < 0 ? (int)n : peer_send(c, f, 10);
}

static int act_req_cut_close(struct hctx *c, const struct hcase *k)
{
	int ret = act_req_cut(c, k);

	peer_close(&c->peer);
	return ret;
}

static int act_reply_garbage(struct hctx *c, const struct hcase *k)
{
	static const char rep[] = "HTTP/1.1 400 Bad Request\r\n\r\n";

	return peer_send(c, rep, sizeof(rep) - 1);
}

static int act_reply_cut_close(struct hctx *c, const struct hcase *k)
{
	uint8_t f[MPA_HDR_LEN + MPA_ENH_LEN];
	ssize_t n = build_frame(f, sizeof(f), MPA_REPLY);
	int ret = n < 0 ? (int)n : peer_send(c, f, 12);

	peer_close(&c->peer);
	return ret;
}

/* ---- runners */

static bool term_done(struct hctx *c)
{
	const struct peer *p = &c->peer;

	return (p->n_term || p->eof || p->rx_bad) && wrs_done(c) &&
	       (c->qp_done || iw_qp_state(c->qp) == IW_QPS_ERROR) &&
	       cm_find(c, IW_CM_ERROR);
}

/* The engine is the responder; the peer misbehaves once. */
static void run_term(const struct hcase *k, unsigned short port)
{
	struct hctx *c = ctx_new(k, port);

	if (!responder_setup(c))
		goto out;
	if (k->act(c, k)) {
		tap_ok(0, "%s: sending the misbehaviour", k->name);
		goto out;
	}
	drive(c, term_done, k->ms ? k->ms : CASE_MS);
	drive(c, never, 50);	/* anything after the Terminate? */
	tap_diag("connection closed by the engine: %s",
		 c->peer.eof ? "yes" : "no");
	check_wire_term(c);
	check_qp_error(c, false);
	check_flushed(c);
	check_regions(c);
out:
	eng_close(c);
}

/* The listener meets a bad request; then a good one must still work. */
static void run_listen(const struct hcase *k, unsigned short port)
{
	struct hctx *c = ctx_new(k, port);
	uint64_t t0, el;
	bool ok;

	if (eng_open(c) || eng_listen(c) || peer_connect(c)) {
		setup_fail(c, "engine objects / connect");
		goto out;
	}
	if (k->act(c, k)) {
		tap_ok(0, "%s: sending the misbehaviour", k->name);
		goto out;
	}
	t0 = iw_now_ms();
	if (k->want_close) {
		drive(c, peer_eof, k->close_min_ms + 2000);
		el = iw_now_ms() - t0;
		tap_ok(c->peer.eof && el + 20 >= k->close_min_ms &&
		       el <= k->close_min_ms + 1500,
		       "%s: engine closed the connection (after %llu ms, "
		       "want >= %u)", k->name, (unsigned long long)el,
		       k->close_min_ms);
		diag_hex("engine sent", c->peer.head, c->peer.head_len);
	} else {
		drive(c, never, 400);
	}
	tap_ok(c->n_req == 0, "%s: no conn_request callback (%d)", k->name,
	       c->n_req);
	peer_reset(&c->peer, MPA_REPLY);
	ok = peer_handshake(c) && peer_establish(c, false, false);
	tap_ok(ok && c->n_req == 1,
	       "%s: listener still accepts a good connection", k->name);
out:
	eng_close(c);
}

static int tcp_listen(unsigned short port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4)) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool peer_accept(struct hctx *c, int lfd)
{
	uint64_t end = iw_now_ms() + SETUP_MS;

	while (iw_now_ms() < end) {
		c->peer.fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
		if (c->peer.fd >= 0)
			return true;
		step(c, 10);
	}
	return false;
}

static bool init_done(struct hctx *c)
{
	return c->qp_done && wrs_done(c) &&
	       (cm_find(c, IW_CM_UNREACHABLE) || cm_find(c, IW_CM_ERROR));
}

static int eng_connect(struct hctx *c)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET,
		.sin_port = htons(c->port),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
	};
	int ret;

	ret = iw_qp_connect(c->qp, (struct sockaddr *)&sa, sizeof(sa),
			    &c->aparam);
	if (ret)
		tap_diag("iw_qp_connect: %d", ret);
	return ret ? ret : post_recvs(c);
}

static void check_init_failed(struct hctx *c)
{
	const struct hcase *k = c->k;
	const struct iw_cm_event *ev = cm_find(c, IW_CM_UNREACHABLE);
	enum iw_qp_state s;
	bool ok;

	if (!ev)
		ev = cm_find(c, IW_CM_ERROR);
	ok = ev && !cm_find(c, IW_CM_ESTABLISHED);
	tap_ok(ok, "%s: engine reports UNREACHABLE or ERROR", k->name);
	diag_events(c);
	tap_diag("after its Request the engine sent %d FPDUs (%d "
		 "Terminates), eof %d", c->peer.n_seg, c->peer.n_term,
		 c->peer.eof);
	if (!c->qp_done)
		qp_progress(c);
	s = iw_qp_state(c->qp);
	tap_ok(c->qp_done && (s == IW_QPS_ERROR || s == IW_QPS_CLOSED),
	       "%s: QP finished (progress %s, state %s)", k->name,
	       c->qp_done ? "< 0" : ">= 0", iw_qp_state_str(s));
	check_flushed(c);
}

/* The engine initiates; the peer plays a broken responder. */
static void run_init(const struct hcase *k, unsigned short port)
{
	struct hctx *c = ctx_new(k, port);
	int lfd = tcp_listen(port);

	peer_reset(&c->peer, MPA_REQUEST);
	if (lfd < 0 || eng_open(c) || eng_connect(c) ||
	    !peer_accept(c, lfd)) {
		setup_fail(c, "listen / connect / accept");
		goto out;
	}
	drive(c, frame_in, SETUP_MS);
	if (!tap_ok(c->peer.fr_done, "%s: engine sent a well-formed MPA "
		    "Request", k->name))
		diag_hex("received", c->peer.head, c->peer.head_len);
	if (k->act(c, k)) {
		tap_ok(0, "%s: sending the misbehaviour", k->name);
		goto out;
	}
	drive(c, init_done, CASE_MS);
	check_init_failed(c);
out:
	if (lfd >= 0)
		close(lfd);
	eng_close(c);
}

static int slow_post(struct hctx *c, unsigned int m)
{
	struct iw_sge sge = { slow_src + (size_t)m * MSG_LEN, MSG_LEN };
	struct iw_send_wr wr = {
		.op = m & 1 ? IW_WR_WRITE : IW_WR_SEND,
		.flags = IW_WR_SIGNALED,
		.sgl = &sge,
		.num_sge = 1,
		.rstag = SINK_STAG,
		.rto = (uint64_t)m * MSG_LEN,
	};

	return post_send(c, &wr, WR_SEND);
}

static bool slow_done(struct hctx *c)
{
	return c->n_wr == N_MSG && wrs_done(c) &&
	       (c->sink.exp == SLOW_TOTAL || c->sink.bad || c->peer.eof);
}

/* Posts what fits for ms; without reading, progress is also called
 * directly each round to time it against a full socket. */
static unsigned int slow_phase(struct hctx *c, unsigned int posted,
			       unsigned int ms, bool reading)
{
	uint64_t end = iw_now_ms() + ms;
	int ret = 0;

	c->peer.reading = reading;
	while (iw_now_ms() < end && !(reading && slow_done(c))) {
		if (posted < N_MSG) {
			ret = slow_post(c, posted);
			if (!ret)
				posted++;
			else if (ret == -EAGAIN)
				c->eagain++;
			else
				return posted;
		}
		if (!reading && !c->qp_done)
			qp_progress(c);
		step(c, ret ? 5 : 0);
	}
	return posted;
}

static void check_slow(struct hctx *c, unsigned int stalled)
{
	const struct hcase *k = c->k;
	bool ok = !c->stray_wc && iw_qp_state(c->qp) == IW_QPS_RTS;
	int i;

	tap_ok(c->eagain > 0 && stalled < N_MSG,
	       "%s: -EAGAIN when the SQ is full (%u of %u posted, %d "
	       "EAGAIN)", k->name, stalled, N_MSG, c->eagain);
	tap_ok(c->post_max_us < SLOW_LIMIT_US,
	       "%s: iw_qp_post_send never blocks (max %llu us)", k->name,
	       (unsigned long long)c->post_max_us);
	tap_ok(c->prog_max_us < SLOW_LIMIT_US,
	       "%s: each iw_qp_progress < 50 ms (max %llu us)", k->name,
	       (unsigned long long)c->prog_max_us);
	if (!tap_ok(!c->sink.bad && c->sink.exp == SLOW_TOTAL &&
		    !c->peer.rx_bad,
		    "%s: all %llu octets arrived intact and in order (%llu)",
		    k->name, (unsigned long long)SLOW_TOTAL,
		    (unsigned long long)c->sink.exp))
		tap_diag("sink: %s; rx %s", c->sink.why,
			 c->peer.rx_bad ? "failed" : "ok");
	for (i = 0; i < c->n_wr; i++)
		if (c->wr[i].done != 1 || c->wr[i].status != IW_WC_SUCCESS) {
			ok = false;
			tap_diag("WR %d: completed %d times, status %d", i,
				 c->wr[i].done, c->wr[i].status);
		}
	tap_ok(ok && c->n_wr == N_MSG,
	       "%s: %d of %u WRs completed once successfully, QP %s",
	       k->name, c->n_wr, N_MSG, iw_qp_state_str(iw_qp_state(c->qp)));
}

/* 32 MiB of Sends and Writes towards a peer that first does not read. */
static void run_slow(const struct hcase *k, unsigned short port)
{
	struct hctx *c = ctx_new(k, port);
	unsigned int posted, stalled;

	if (!responder_setup(c))
		goto out;
	c->peer.sink = &c->sink;
	c->prog_max_us = 0;
	posted = slow_phase(c, 0, 600, false);
	stalled = posted;
	tap_diag("stalled after %u messages, %d EAGAIN, progress max %llu "
		 "us", stalled, c->eagain,
		 (unsigned long long)c->prog_max_us);
	slow_phase(c, posted, k->ms, true);
	check_slow(c, stalled);
out:
	eng_close(c);
}

static bool peer_term_done(struct hctx *c)
{
	return wrs_done(c) && cm_find(c, IW_CM_ERROR) &&
	       (c->qp_done || iw_qp_state(c->qp) == IW_QPS_ERROR);
}

static int send_peer_term(struct hctx *c, const struct hcase *k)
{
	uint8_t u[DDP_UNTAGGED_HDR + RDMAP_TERM_MAX];
	struct rdmap_term t = {
		.layer = k->layer, .etype = k->etype, .ecode = k->ecode,
		.hdrct = RDMAP_TERM_M | RDMAP_TERM_D,
		.seg_len = DDP_UNTAGGED_HDR,
		.ddp_hdr_len = DDP_UNTAGGED_HDR,
	};
	size_t n;
	ssize_t m;

	/* the "offending" segment: a reserved opcode, as if we saw one */
	ulpdu_untagged(t.ddp_hdr, 8, DDP_QN_SEND, 1, 0, 0, true);
	n = ulpdu_untagged(u, RDMAP_TERMINATE, DDP_QN_TERM, 1, 0, 0, true);
	m = rdmap_term_build(u + n, sizeof(u) - n, &t);
	if (m < 0)
		return (int)m;
	return peer_fpdu(c, u, n + (size_t)m, false);
}

/* A well-formed Terminate from the peer. */
static void run_peer_term(const struct hcase *k, unsigned short port)
{
	struct hctx *c = ctx_new(k, port);

	if (!responder_setup(c))
		goto out;
	if (send_peer_term(c, k)) {
		tap_ok(0, "%s: sending the Terminate", k->name);
		goto out;
	}
	drive(c, peer_term_done, CASE_MS);
	drive(c, never, 50);
	check_qp_error(c, true);
	check_flushed(c);
	if (c->peer.n_term)
		tap_diag("engine answered with a Terminate %u/%u/%u",
			 c->peer.term.layer, c->peer.term.etype,
			 c->peer.term.ecode);
out:
	eng_close(c);
}

static uint64_t atom_word(size_t off)
{
	uint64_t v;

	memcpy(&v, region[MR_ATOM] + off, sizeof(v));
	return v;
}

/* One raw atomic from the peer, answered: the response the engine puts
 * on the wire and the word in memory are checked. */
static bool atomic_round(struct hctx *c, const struct rdmap_areq *a,
			 uint32_t msn, uint64_t want_orig, uint64_t want_new)
{
	uint8_t u[DDP_UNTAGGED_HDR + RDMAP_AREQ_LEN];
	const struct peer *p = &c->peer;
	int before = p->n_aresp;
	uint64_t end = iw_now_ms() + CASE_MS;
	bool ok;

	if (peer_fpdu(c, u, ulpdu_areq(u, msn, true, a, RDMAP_AREQ_LEN),
		      false))
		return false;
	while (p->n_aresp == before && !p->eof && !p->n_term &&
	       iw_now_ms() < end)
		step(c, 20);
	ok = p->n_aresp == before + 1 && p->aresp.req_id == a->req_id &&
	     p->aresp.orig == want_orig && p->aresp_hdr.qn == DDP_QN_ARESP &&
	     p->aresp_hdr.msn == msn && p->aresp_hdr.last &&
	     atom_word((size_t)a->to) == want_new;
	if (!ok)
		tap_diag("responses %d, id %#x orig %#llx qn %u msn %u, word "
			 "%#llx (want orig %#llx new %#llx)", p->n_aresp,
			 p->aresp.req_id,
			 (unsigned long long)p->aresp.orig,
			 p->aresp_hdr.qn, p->aresp_hdr.msn,
			 (unsigned long long)atom_word((size_t)a->to),
			 (unsigned long long)want_orig,
			 (unsigned long long)want_new);
	return ok;
}

/* Well-formed atomics from a raw peer: FetchAdd, then a CmpSwap that
 * matches, on one word; the connection stays up. */
static void run_atomic_ok(const struct hcase *k, unsigned short port)
{
	struct hctx *c = ctx_new(k, port);
	uint64_t fill, sum, swap = 0x0123456789abcdefull;
	struct rdmap_areq a = {
		.op = RDMAP_ATOMIC_FETCH_ADD, .req_id = 0x5eed, .to = 16,
		.add_swap = ATOM_ADD,
	};
	bool ok;

	memset(&fill, FILL, sizeof(fill));
	sum = fill + ATOM_ADD;
	if (!responder_setup(c))
		goto out;
	a.stag = pick_stag(c, MR_ATOM);
	ok = atomic_round(c, &a, 1, fill, sum);
	tap_ok(ok, "%s: FetchAdd answered with the old value on QN 3, word "
	       "updated", k->name);
	a.op = RDMAP_ATOMIC_CMP_SWAP;
	a.req_id = 0x5eee;
	a.add_swap = swap;
	a.add_swap_mask = UINT64_MAX;
	a.compare = sum;
	a.compare_mask = UINT64_MAX;
	ok = atomic_round(c, &a, 2, sum, swap);
	tap_ok(ok, "%s: CmpSwap answered in order (MSN 2), word swapped",
	       k->name);
	drive(c, never, 50);
	tap_ok(!c->peer.n_term && iw_qp_state(c->qp) == IW_QPS_RTS &&
	       !cm_find(c, IW_CM_ERROR),
	       "%s: no Terminate, QP still RTS (%s)", k->name,
	       iw_qp_state_str(iw_qp_state(c->qp)));
out:
	eng_close(c);
}

/*
 * A long Read answered in FPDUs the engine may guess wrong
 * (iw_rx_guesses): sizes that change, a Send between them, a header that
 * is not the one guessed. The whole Response is sent at once or in random
 * pieces with the engine reading in between. What must hold: a good
 * Response lands whole and completes the Read, a bad one ends in its
 * Terminate; either way no octet lands outside the Read's own sink.
 */
enum { G_END, G_RRESP, G_SEND, G_WRITE };

struct gstep {
	uint8_t kind;
	uint32_t len;
	int64_t to_delta;	/* added to the TO due */
	uint32_t stag_xor;	/* applied to the sink STag */
};

static const struct gstep gplans[][8] = {
	/* one size, as a responder sends */
	{ { G_RRESP, 65000 }, { G_RRESP, 65000 }, { G_RRESP, 65000 },
	  { G_RRESP, 5000 } },
	/* shorter, then longer, than the one before */
	{ { G_RRESP, 40000 }, { G_RRESP, 100 }, { G_RRESP, 59900 },
	  { G_RRESP, 60000 }, { G_RRESP, 40000 } },
	{ { G_RRESP, 30000 }, { G_RRESP, 60000 }, { G_RRESP, 60000 },
	  { G_RRESP, 50000 } },
	/* a Send between two of them */
	{ { G_RRESP, 40000 }, { G_SEND, 64 }, { G_RRESP, 60000 },
	  { G_RRESP, 60000 }, { G_RRESP, 40000 } },
	/* the second at the wrong offset, the third to the wrong STag */
	{ { G_RRESP, 40000 }, { G_RRESP, 40000, 8 } },
	{ { G_RRESP, 40000 }, { G_RRESP, 40000 }, { G_RRESP, 40000, 0, 2 } },
	/* a Write into the middle of the Response */
	{ { G_RRESP, 40000 }, { G_WRITE, 40000 } },
};

static uint8_t gpat(uint64_t i)
{
	return (uint8_t)(i * 131 + (i >> 9) + 7);
}

/* The plan's FPDUs, back to back; their length, 0 if they do not fit. */
static size_t guess_stream(const struct hctx *c, const struct gstep *st,
			   uint8_t *out, size_t cap)
{
	static uint8_t u[DDP_TAGGED_HDR + 65536];
	uint64_t off = 0;
	size_t at = 0;
	int i;

	for (i = 0; i < 8 && st[i].kind != G_END; i++) {
		struct ddp_hdr h = {
			.tagged = true, .ddp_ver = DDP_VERSION,
			.rdmap_ver = RDMAP_VERSION,
			.opcode = RDMAP_READ_RESP,
			.stag = c->peer.rreq.sink_stag ^ st[i].stag_xor,
			.to = c->peer.rreq.sink_to + off +
			      (uint64_t)st[i].to_delta,
		};
		size_t ul = DDP_TAGGED_HDR + st[i].len, hl = DDP_TAGGED_HDR;
		ssize_t n;
		uint32_t j;

		if (st[i].kind == G_SEND) {
			ul = ulpdu_untagged(u, RDMAP_SEND, DDP_QN_SEND, 1, 0,
					    st[i].len, true);
		} else if (st[i].kind == G_WRITE) {
			ul = ulpdu_tagged(u, pick_stag(c, MR_W), 0, 1);
		} else {
			h.last = off + st[i].len == GUESS_LEN;
			ddp_hdr_build(u, hl, &h);
			for (j = 0; j < st[i].len; j++)
				u[hl + j] = gpat(off + j);
			off += st[i].len;
		}
		n = mpa_fpdu_build(out + at, cap - at, u, ul, c->peer.crc,
				   false, NULL);
		if (n < 0)
			return 0;
		at += (size_t)n;
	}
	return at;
}

static bool read_done(struct hctx *c)
{
	int i;

	for (i = 0; i < c->n_wr; i++)
		if (c->wr[i].kind == WR_READ && !c->wr[i].done)
			return c->peer.eof;
	return true;
}

static void run_guess(const struct hcase *k, unsigned short port)
{
	const struct gstep *st = gplans[k->guess];
	struct hctx *c = ctx_new(k, port);
	uint8_t *sink = region[MR_GUESS] + GUESS_GUARD, *stream = NULL;
	struct iw_sge sge = { sink, GUESS_LEN };
	struct iw_send_wr wr = {
		.op = IW_WR_READ, .flags = IW_WR_SIGNALED, .sgl = &sge,
		.num_sge = 1, .rstag = PEER_STAG, .rto = 0,
	};
	bool good = true, whole = true, guards = true;
	uint64_t seed = k->msn;
	size_t len = 0, at = 0, j;
	const struct wrrec *rd = NULL;
	int i;

	for (i = 0; i < 8 && st[i].kind != G_END; i++)
		good &= st[i].kind != G_WRITE && !st[i].to_delta &&
			!st[i].stag_xor;
	if (!responder_setup(c))
		goto out;
	if (post_send(c, &wr, WR_READ) ||
	    !drive(c, peer_saw_rreq, SETUP_MS) || c->peer.n_rreq != 1) {
		tap_ok(0, "%s: the engine's Read reached the peer", k->name);
		goto out;
	}
	stream = malloc(GUESS_LEN + 4096);
	len = stream ? guess_stream(c, st, stream, GUESS_LEN + 4096) : 0;
	/* seed 0: all at once; else pieces of 1 octet to 96 KiB */
	while (at < len) {
		size_t n = len - at;

		if (seed) {
			seed = seed * 6364136223846793005ull +
			       1442695040888963407ull;
			n = (size_t)(seed >> 33) % 98304 + 1;
			if (!(seed >> 62))
				n = (size_t)(seed >> 33) % 24 + 1;
			n = n < len - at ? n : len - at;
		}
		if (peer_send(c, stream + at, n))
			break;
		at += n;
		if (seed)
			step(c, 0);
	}
	drive(c, read_done, CASE_MS);
	drive(c, never, 20);
	for (i = 0; i < c->n_wr; i++)
		if (c->wr[i].kind == WR_READ)
			rd = &c->wr[i];
	for (j = 0; j < GUESS_GUARD; j++)
		guards &= region[MR_GUESS][j] == FILL &&
			  sink[GUESS_LEN + j] == FILL;
	for (j = 0; good && j < GUESS_LEN; j++)
		whole &= sink[j] == gpat(j);
	if (good) {
		tap_ok(at == len && rd && rd->done == 1 &&
		       rd->status == IW_WC_SUCCESS && !c->peer.n_term &&
		       iw_qp_state(c->qp) == IW_QPS_RTS,
		       "%s: the Read completes, no Terminate, QP in RTS "
		       "(sent %zu of %zu, Read %s %d, %d Terminates)", k->name,
		       at, len, rd && rd->done ? "status" : "pending",
		       rd ? (int)rd->status : -1, c->peer.n_term);
		tap_ok(whole && guards, "%s: the Response lands whole, "
		       "nothing around it touched", k->name);
	} else {
		tap_ok(c->peer.n_term == 1 && c->peer.term.layer == k->layer &&
		       c->peer.term.etype == k->etype &&
		       c->peer.term.ecode == k->ecode,
		       "%s: Terminate %u/%u/%u, %u/%u/%u due", k->name,
		       c->peer.term.layer, c->peer.term.etype,
		       c->peer.term.ecode, k->layer, k->etype, k->ecode);
		tap_ok(rd && rd->done == 1 && rd->status != IW_WC_SUCCESS &&
		       guards, "%s: the Read fails, nothing outside its sink "
		       "touched (Read %s %d)", k->name,
		       rd && rd->done ? "status" : "pending",
		       rd ? (int)rd->status : -1);
	}
	/* the Send between Response FPDUs took a receive */
	for (i = 0; good && i < 8 && st[i].kind != G_END; i++)
		if (st[i].kind == G_SEND)
			tap_ok(c->wr[0].kind == WR_RECV && c->wr[0].done == 1 &&
			       c->wr[0].status == IW_WC_SUCCESS,
			       "%s: the Send completes its receive", k->name);
out:
	free(stream);
	eng_close(c);
}

/* ---- the cases */

#define TERM_CASE .run = run_term, .pre = PRE_RTR | PRE_READ
#define RECVS(n, l) .nrecv = (n), .recv_len = (l)
#define DDP_ERR(t, code) .layer = IW_LAYER_DDP, .etype = (t), \
	.ecode = (code), .hdr_req = RDMAP_TERM_M | RDMAP_TERM_D
#define RDMAP_OP_ERR(code) .layer = IW_LAYER_RDMAP, \
	.etype = RDMAP_ETYPE_REMOTE_OP, .ecode = (code), \
	.hdr_req = RDMAP_TERM_M | RDMAP_TERM_D
#define RDMAP_PROT_ERR(code) .layer = IW_LAYER_RDMAP, \
	.etype = RDMAP_ETYPE_REMOTE_PROT, .ecode = (code), \
	.hdr_req = RDMAP_TERM_M | RDMAP_TERM_D | RDMAP_TERM_R
#define MPA_ERR(code) .layer = IW_LAYER_LLP, .etype = MPA_ETYPE, \
	.ecode = (code), .hdr_req = 0
/* R copies Read Requests only: an atomic's Terminate has M and D */
#define ATOMIC_PROT_ERR(code) .layer = IW_LAYER_RDMAP, \
	.etype = RDMAP_ETYPE_REMOTE_PROT, .ecode = (code), \
	.hdr_req = RDMAP_TERM_M | RDMAP_TERM_D
#define ATOMIC_CASE(i) .run = run_term, RECVS(4, RECV_BUF), \
	.port = ATOMIC_PORT_BASE + (i) % ATOMIC_PORTS
#define GUESS_CASE(i, plan) .run = run_guess, .pre = PRE_RTR, \
	RECVS(2, RECV_BUF), .port = GUESS_PORT_BASE + (i), .guess = (plan)

static const struct hcase cases[] = {
	/* tagged RDMA Writes (RFC 5041 §7.2, tagged buffer errors) */
	{ "write to an unregistered STag", TERM_CASE, RECVS(4, RECV_BUF),
	  .act = act_write, .mr = -1, .len = 256,
	  DDP_ERR(DDP_ETYPE_TAGGED, DDP_ECODE_T_INVALID_STAG) },
	{ "write to an STag of another PD", TERM_CASE, RECVS(4, RECV_BUF),
	  .act = act_write, .mr = MR_PD2, .len = 256,
	  DDP_ERR(DDP_ETYPE_TAGGED, DDP_ECODE_T_STAG_NOT_ASSOC) },
	/* RFC 5041 has no access-rights code; siw reports invalid STag */
	{ "write without remote write access", TERM_CASE,
	  RECVS(4, RECV_BUF), .act = act_write, .mr = MR_NW, .len = 256,
	  DDP_ERR(DDP_ETYPE_TAGGED, DDP_ECODE_T_INVALID_STAG) },
	{ "write out of bounds", TERM_CASE, RECVS(4, RECV_BUF),
	  .act = act_write, .mr = MR_W, .to = 65536 - 100, .len = 256,
	  DDP_ERR(DDP_ETYPE_TAGGED, DDP_ECODE_T_BASE_BOUNDS) },
	{ "write with TO wrap", TERM_CASE, RECVS(4, RECV_BUF),
	  .act = act_write, .mr = MR_TOP, .to = UINT64_MAX - 99,
	  .len = 256, DDP_ERR(DDP_ETYPE_TAGGED, DDP_ECODE_T_TO_WRAP) },
	/* RDMA Read Requests (RFC 5040 §5.2, §7.1 rule 3); for the IRD
	 * case figure 10 says no RDMA header, §7.1 rule 3 says one: R may
	 * be either, but must be right when set */
	{ "read requests beyond IRD", TERM_CASE, RECVS(4, RECV_BUF),
	  .act = act_rreq, .mr = MR_SRC, .len = SRC_LEN, .stall_ms = 300,
	  .ms = 10000, RDMAP_OP_ERR(RDMAP_ECODE_CATASTROPHIC_STREAM),
	  .hdr_any = RDMAP_TERM_R },
	{ "read request with a bad source STag", TERM_CASE,
	  RECVS(4, RECV_BUF), .act = act_rreq, .mr = -1, .len = 64,
	  .count = 1, RDMAP_PROT_ERR(RDMAP_ECODE_INVALID_STAG) },
	{ "read request larger than the region", TERM_CASE,
	  RECVS(4, RECV_BUF), .act = act_rreq, .mr = MR_NW, .len = 8192,
	  .count = 1, RDMAP_PROT_ERR(RDMAP_ECODE_BASE_BOUNDS) },
	{ "read request without remote read access", TERM_CASE,
	  RECVS(4, RECV_BUF), .act = act_rreq, .mr = MR_W, .len = 64,
	  .count = 1, RDMAP_PROT_ERR(RDMAP_ECODE_ACCESS) },
	/* untagged Sends (RFC 5041 §7.2, untagged buffer errors) */
	{ "send with no posted receive", TERM_CASE, RECVS(0, 0),
	  .act = act_send, .op = RDMAP_SEND, .msn = 1, .len = 64,
	  DDP_ERR(DDP_ETYPE_UNTAGGED, DDP_ECODE_UT_NO_BUFFER) },
	{ "send larger than the posted receive", TERM_CASE, RECVS(4, 64),
	  .act = act_send, .op = RDMAP_SEND, .msn = 1, .len = 128,
	  .recv0_err = true,
	  DDP_ERR(DDP_ETYPE_UNTAGGED, DDP_ECODE_UT_TOO_LONG) },
	{ "send to queue number 3", TERM_CASE, RECVS(4, RECV_BUF),
	  .act = act_send, .op = RDMAP_SEND, .qn = 3, .msn = 1, .len = 64,
	  DDP_ERR(DDP_ETYPE_UNTAGGED, DDP_ECODE_UT_INVALID_QN) },
	{ "send with MSN out of range", TERM_CASE, RECVS(4, RECV_BUF),
	  .act = act_send, .op = RDMAP_SEND, .msn = 1000, .len = 64,
	  DDP_ERR(DDP_ETYPE_UNTAGGED, DDP_ECODE_UT_MSN_RANGE) },
	{ "send segment with a wrong MO", TERM_CASE, RECVS(4, RECV_BUF),
	  .act = act_bad_mo, .recv0_err = true,
	  DDP_ERR(DDP_ETYPE_UNTAGGED, DDP_ECODE_UT_INVALID_MO) },
	{ "reserved RDMAP opcode 8", TERM_CASE, RECVS(4, RECV_BUF),
	  .act = act_send, .op = 8, .msn = 1, .len = 64,
	  RDMAP_OP_ERR(RDMAP_ECODE_OPCODE) },
	{ "send with a bad CRC", TERM_CASE, RECVS(4, RECV_BUF),
	  .act = act_send, .op = RDMAP_SEND, .msn = 1, .len = 64,
	  .bad_crc = true, .recv0_err = true, MPA_ERR(MPA_ECODE_CRC) },
	/* RTR (RFC 6581 §7, §8) */
	{ "send before the RTR", .run = run_term, RECVS(4, RECV_BUF),
	  .act = act_send, .op = RDMAP_SEND, .msn = 1, .len = 64,
	  MPA_ERR(MPA_ECODE_NO_RTR) },
	{ "read RTR where the Reply said write", .run = run_term,
	  RECVS(4, RECV_BUF), .act = act_read_rtr,
	  MPA_ERR(MPA_ECODE_NO_RTR) },
	/* the listener */
	{ "HTTP instead of an MPA Request", .run = run_listen,
	  .act = act_http, .want_close = true },
	{ "MPA Request cut off, then close", .run = run_listen,
	  .act = act_req_cut_close },
	{ "MPA Request that never completes", .run = run_listen,
	  .act = act_req_cut, .timeout_ms = 300, .want_close = true,
	  .close_min_ms = 300 },
	/* the engine as initiator */
	{ "initiator: garbage Reply", .run = run_init,
	  .act = act_reply_garbage, RECVS(1, RECV_BUF) },
	{ "initiator: Reply cut off, then close", .run = run_init,
	  .act = act_reply_cut_close, RECVS(1, RECV_BUF) },
	/* a peer that stops reading */
	{ "peer stops reading", .run = run_slow, .pre = PRE_RTR,
	  .sq_size = 8, .ms = 20000 },
	/* a Terminate from the peer */
	{ "Terminate from the peer", .run = run_peer_term,
	  .pre = PRE_RTR | PRE_READ, RECVS(4, RECV_BUF), .read_rem = true,
	  .layer = IW_LAYER_RDMAP, .etype = RDMAP_ETYPE_REMOTE_OP,
	  .ecode = RDMAP_ECODE_OPCODE },
	/* RFC 7306 Atomic Requests at the engine */
	{ "atomics: FetchAdd and CmpSwap from a raw peer",
	  .run = run_atomic_ok, .pre = PRE_RTR, RECVS(4, RECV_BUF),
	  .atomics = true, .port = ATOMIC_PORT_BASE },
	{ "atomic request while atomics are off", ATOMIC_CASE(1),
	  .pre = PRE_RTR | PRE_READ, .act = act_areq, .mr = MR_ATOM,
	  RDMAP_OP_ERR(RDMAP_ECODE_OPCODE) },
	{ "atomic request with atomic operation 1", ATOMIC_CASE(2),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_areq,
	  .mr = MR_ATOM, .aop = 1, RDMAP_OP_ERR(RDMAP_ECODE_OPCODE) },
	{ "atomic request of 44 octets", ATOMIC_CASE(3),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_areq,
	  .mr = MR_ATOM, .alen = 44, RDMAP_OP_ERR(RDMAP_ECODE_OPCODE) },
	{ "atomic request of 60 octets", ATOMIC_CASE(4),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_areq,
	  .mr = MR_ATOM, .alen = 60, RDMAP_OP_ERR(RDMAP_ECODE_OPCODE) },
	{ "atomic request without the L bit", ATOMIC_CASE(5),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_areq,
	  .mr = MR_ATOM, .split = true, RDMAP_OP_ERR(RDMAP_ECODE_OPCODE) },
	{ "atomic request on an unregistered STag", ATOMIC_CASE(6),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_areq,
	  .mr = -1, ATOMIC_PROT_ERR(RDMAP_ECODE_INVALID_STAG) },
	{ "atomic request on an STag of another PD", ATOMIC_CASE(7),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_areq,
	  .mr = MR_PD2, ATOMIC_PROT_ERR(RDMAP_ECODE_STAG_NOT_ASSOC) },
	{ "atomic request without remote atomic access", ATOMIC_CASE(8),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_areq,
	  .mr = MR_W, ATOMIC_PROT_ERR(RDMAP_ECODE_ACCESS) },
	{ "atomic request at a misaligned TO", ATOMIC_CASE(9),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_areq,
	  .mr = MR_ATOM, .to = 4, ATOMIC_PROT_ERR(RDMAP_ECODE_BASE_BOUNDS) },
	{ "atomic request out of bounds", ATOMIC_CASE(10),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_areq,
	  .mr = MR_ATOM, .to = 4096,
	  ATOMIC_PROT_ERR(RDMAP_ECODE_BASE_BOUNDS) },
	{ "atomic request with TO wrap", ATOMIC_CASE(11),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_areq,
	  .mr = MR_TOP, .to = UINT64_MAX - 3,
	  ATOMIC_PROT_ERR(RDMAP_ECODE_TO_WRAP) },
	{ "atomic request with MSN out of range", ATOMIC_CASE(12),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_areq,
	  .mr = MR_ATOM, .msn = 2,
	  DDP_ERR(DDP_ETYPE_UNTAGGED, DDP_ECODE_UT_MSN_RANGE) },
	{ "atomic requests with a Read beyond IRD", ATOMIC_CASE(13),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_areq_ird,
	  .stall_ms = 300, .ms = 10000,
	  RDMAP_OP_ERR(RDMAP_ECODE_CATASTROPHIC_STREAM) },
	/* RFC 7306 Atomic Responses at the engine as requester */
	{ "atomic response while a Read is due", ATOMIC_CASE(14),
	  .pre = PRE_RTR | PRE_READ, .atomics = true, .act = act_aresp,
	  RDMAP_OP_ERR(RDMAP_ECODE_OPCODE) },
	{ "atomic response with nothing outstanding", ATOMIC_CASE(15),
	  .pre = PRE_RTR, .atomics = true, .act = act_aresp,
	  RDMAP_OP_ERR(RDMAP_ECODE_OPCODE) },
	{ "atomic response with a wrong request id", ATOMIC_CASE(16),
	  .pre = PRE_RTR | PRE_ATOMIC, .atomics = true, .act = act_aresp,
	  .id_delta = 1, RDMAP_OP_ERR(RDMAP_ECODE_OPCODE) },
	{ "atomic response of 11 octets", ATOMIC_CASE(17),
	  .pre = PRE_RTR | PRE_ATOMIC, .atomics = true, .act = act_aresp,
	  .alen = 11, RDMAP_OP_ERR(RDMAP_ECODE_OPCODE) },
	{ "atomic response with MSN out of range", ATOMIC_CASE(18),
	  .pre = PRE_RTR | PRE_ATOMIC, .atomics = true, .act = act_aresp,
	  .msn = 2, DDP_ERR(DDP_ETYPE_UNTAGGED, DDP_ECODE_UT_MSN_RANGE) },
	{ "read response where an atomic response is due", ATOMIC_CASE(19),
	  .pre = PRE_RTR | PRE_ATOMIC, .atomics = true, .act = act_rresp,
	  DDP_ERR(DDP_ETYPE_TAGGED, DDP_ECODE_T_INVALID_STAG) },
	/* a long Read's Response, guessed FPDU by FPDU (.msn: the seed of
	 * the pieces it is sent in, 0: at once) */
	{ "long read response of one FPDU size", GUESS_CASE(0, 0) },
	{ "long read response of one FPDU size, in pieces",
	  GUESS_CASE(1, 0), .msn = 11 },
	{ "long read response in FPDUs that shrink and grow",
	  GUESS_CASE(2, 1) },
	{ "long read response in FPDUs that shrink and grow, in pieces",
	  GUESS_CASE(3, 1), .msn = 12 },
	{ "long read response in FPDUs that grow, in pieces",
	  GUESS_CASE(4, 2), .msn = 13 },
	{ "long read response with a send between its FPDUs",
	  GUESS_CASE(5, 3) },
	{ "long read response with a send between, in pieces",
	  GUESS_CASE(6, 3), .msn = 14 },
	{ "long read response, second FPDU at the wrong offset",
	  GUESS_CASE(7, 4),
	  DDP_ERR(DDP_ETYPE_TAGGED, DDP_ECODE_T_BASE_BOUNDS) },
	{ "long read response, third FPDU to the wrong STag",
	  GUESS_CASE(8, 5),
	  DDP_ERR(DDP_ETYPE_TAGGED, DDP_ECODE_T_INVALID_STAG) },
	{ "long read response with a write into its middle",
	  GUESS_CASE(9, 6),
	  DDP_ERR(DDP_ETYPE_TAGGED, DDP_ECODE_T_INVALID_STAG) },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static int alloc_regions(void)
{
	size_t i;
	int j;

	for (j = 0; j < N_MR; j++) {
		region[j] = malloc(mr_specs[j].len);
		if (!region[j])
			return -1;
	}
	memset(region[MR_SRC], 0x3c, SRC_LEN);
	slow_src = malloc(SLOW_TOTAL);
	if (!slow_src)
		return -1;
	for (i = 0; i < SLOW_TOTAL; i++)
		slow_src[i] = pat(i);
	return 0;
}

/*
 * Each case runs in a child process whose stdout comes back through a
 * pipe: its TAP lines are renumbered here. Its stderr goes to a file that
 * is copied to ours and searched for sanitizer reports (UBSan does not
 * stop the program by default). A crash, a report, a nonzero exit
 * (LeakSanitizer) or a hang fails that case without hiding the others.
 */
static void relay(FILE *in)
{
	char *line = NULL, *rest;
	size_t cap = 0;
	ssize_t n;
	bool ok;

	while ((n = getline(&line, &cap, in)) > 0) {
		if (line[n - 1] == '\n')
			line[n - 1] = 0;
		ok = !strncmp(line, "ok ", 3);
		rest = strstr(line, " - ");
		if ((ok || !strncmp(line, "not ok ", 7)) && rest)
			tap_ok(ok, "%s", rest + 3);
		else
			printf("%s\n", line);
	}
	free(line);
}

/* Copies the child's stderr to ours; returns the sanitizer reports. */
static int sanitizer_reports(FILE *err)
{
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	rewind(err);
	while (getline(&line, &cap, err) > 0) {
		fputs(line, stderr);
		if (strstr(line, "runtime error:") ||
		    strstr(line, "ERROR: AddressSanitizer") ||
		    strstr(line, "ERROR: LeakSanitizer")) {
			if (!n++)
				tap_diag("stderr: %.*s",
					 (int)strcspn(line, "\n"), line);
		}
	}
	free(line);
	return n;
}

static void run_child(const struct hcase *k, unsigned short port,
		      int out, FILE *err)
{
	dup2(out, STDOUT_FILENO);
	close(out);
	dup2(fileno(err), STDERR_FILENO);
	alarm(CASE_ALARM_S);
	k->run(k, port);
	fflush(stdout);
	exit(0);	/* not _exit: LeakSanitizer runs at exit */
}

static void run_isolated(const struct hcase *k, unsigned short port)
{
	int pfd[2], status = 0, reports;
	FILE *in, *err = tmpfile();
	pid_t pid;

	fflush(stdout);
	if (!err || pipe(pfd) || (pid = fork()) < 0) {
		tap_ok(0, "%s: fork: %s", k->name, strerror(errno));
		return;
	}
	if (!pid) {
		close(pfd[0]);
		run_child(k, port, pfd[1], err);
	}
	close(pfd[1]);
	in = fdopen(pfd[0], "r");
	relay(in);
	fclose(in);
	waitpid(pid, &status, 0);
	reports = sanitizer_reports(err);
	fclose(err);
	tap_ok(WIFEXITED(status) && !WEXITSTATUS(status) && !reports,
	       "%s: case process exited cleanly (%s %d, %d sanitizer "
	       "reports)", k->name, WIFSIGNALED(status) ? "signal" : "exit",
	       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
	       reports);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	size_t i;
	int j;

	/* line-buffered before any output, so that a crashing case process
	 * (which inherits it) loses no diagnostics */
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (alloc_regions()) {
		fprintf(stderr, "out of memory\n");
		return 2;
	}
	for (i = 0; i < N_CASES; i++)
		if (!only || strstr(cases[i].name, only))
			run_isolated(&cases[i], cases[i].port ? cases[i].port :
					(unsigned short)(PORT_BASE + i));
	for (j = 0; j < N_MR; j++)
		free(region[j]);
	free(slow_src);
	return tap_done();
}
