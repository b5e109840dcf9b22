/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_DGRAM of the iwarp provider through the public libfabric API,
 * over real UDP on 127.0.0.1:
 * - fi_getinfo: the attributes a datagram endpoint offers and the hints
 *   it refuses (ordering, RMA, delivery completion);
 * - two endpoints in one process: verified data at sizes up to
 *   max_msg_size, an over-size send refused, inject, remote CQ data,
 *   FI_SOURCE (known and unknown senders), tags, counters, fi_cq_sread
 *   with a timeout, an FD wait, truncation, cancel, FI_MSG_PREFIX;
 * - hostile datagrams from a plain UDP socket (short, a length beyond
 *   the datagram, bad magic, version and flags, over-size, garbage):
 *   each dropped and counted without a completion, and a real datagram
 *   afterwards still arrives intact;
 * - a forked process echoing datagrams back, waited for with sread.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so.
 */
#include <arpa/inet.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "fi_api.h"
#include "tap.h"

#define API		TEST_API
#define MAX_MSG		65483	/* 65507 less the 24-octet header */
#define HDR_MAX		24
/* the provider's statistics option (fi_iwarp(7)) and its slots */
#define OPT_DGRAM_STATS	(-(0x1e7 << 16))
enum {
	ST_DELIVERED, ST_SHORT, ST_MAGIC, ST_VERSION, ST_FLAGS, ST_LENGTH,
	ST_OVERSIZE, ST_NO_MATCH, ST_UNKNOWN_SRC, ST_TRUNC, ST_KERNEL,
	ST_SENT, ST_MAX
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;

struct dep {
	struct fid_ep *ep;
	struct fid_cq *txcq, *rxcq;
	struct fid_av *av;
	struct fid_cntr *txc, *rxc;
	struct sockaddr_in name;
};

static uint8_t *sbuf, *rbuf;

/* ---- helpers */

static struct fi_info *hints_new(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		exit(2);
	h->ep_attr->type = FI_EP_DGRAM;
	h->addr_format = FI_SOCKADDR_IN;
	h->caps = FI_MSG | FI_TAGGED | FI_SOURCE;
	h->fabric_attr->prov_name = strdup("iwarp");
	h->domain_attr->name = strdup("lo");
	return h;
}

static int getinfo(struct fi_info *h, struct fi_info **out)
{
	int ret = fi_getinfo(API, NULL, NULL, 0, h, out);

	fi_freeinfo(h);
	if (ret)
		*out = NULL;
	return ret;
}

static int dep_open(struct dep *d, struct fi_info *fi, enum fi_wait_obj wait)
{
	struct fi_cq_attr tx_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cq_attr rx_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = wait };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fi_cntr_attr c_attr = { .events = FI_CNTR_EVENTS_COMP };
	size_t len = sizeof(d->name);
	int ret;

	memset(d, 0, sizeof(*d));
	ret = fi_endpoint(domain, fi, &d->ep, NULL);
	ret = ret ? ret : fi_cq_open(domain, &tx_attr, &d->txcq, NULL);
	ret = ret ? ret : fi_cq_open(domain, &rx_attr, &d->rxcq, NULL);
	ret = ret ? ret : fi_av_open(domain, &av_attr, &d->av, NULL);
	ret = ret ? ret : fi_cntr_open(domain, &c_attr, &d->txc, NULL);
	ret = ret ? ret : fi_cntr_open(domain, &c_attr, &d->rxc, NULL);
	ret = ret ? ret : fi_ep_bind(d->ep, &d->av->fid, 0);
	ret = ret ? ret : fi_ep_bind(d->ep, &d->txcq->fid, FI_TRANSMIT);
	ret = ret ? ret : fi_ep_bind(d->ep, &d->rxcq->fid, FI_RECV);
	ret = ret ? ret : fi_ep_bind(d->ep, &d->txc->fid, FI_SEND);
	ret = ret ? ret : fi_ep_bind(d->ep, &d->rxc->fid, FI_RECV);
	ret = ret ? ret : fi_enable(d->ep);
	ret = ret ? ret : fi_getname(&d->ep->fid, &d->name, &len);
	if (ret)
		tap_diag("dep_open: %s", fi_strerror(-ret));
	return ret;
}

static void dep_close(struct dep *d)
{
	struct fid *f[] = { &d->ep->fid, &d->txcq->fid, &d->rxcq->fid,
			    &d->av->fid, &d->txc->fid, &d->rxc->fid };
	size_t i;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (f[i] && fi_close(f[i]))
			tap_diag("close of fid %zu failed", i);
}

static fi_addr_t insert(struct dep *d, const struct sockaddr_in *name)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;

	if (fi_av_insert(d->av, name, 1, &a, 0, NULL) != 1)
		tap_diag("fi_av_insert failed");
	return a;
}

/* One completion within secs: 1, -FI_EAVAIL, -FI_EAGAIN (none). */
static ssize_t cq_wait(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
		       fi_addr_t *src, double secs)
{
	double end = tap_now() + secs;
	ssize_t ret;

	do {
		ret = fi_cq_readfrom(cq, e, 1, src);
		if (ret != -FI_EAGAIN)
			return ret;
	} while (tap_now() < end);
	return -FI_EAGAIN;
}

static ssize_t cq_err(struct fid_cq *cq, struct fi_cq_err_entry *err)
{
	memset(err, 0, sizeof(*err));
	return fi_cq_readerr(cq, err, 0);
}

static void stats(struct dep *d, uint64_t *st)
{
	size_t len = ST_MAX * sizeof(uint64_t);

	memset(st, 0, len);
	if (fi_getopt(&d->ep->fid, FI_OPT_ENDPOINT, OPT_DGRAM_STATS, st, &len))
		tap_diag("stats: fi_getopt failed");
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed);
}

/* ---- fi_getinfo */

static void test_getinfo(void)
{
	struct fi_info *fi;
	struct fi_info *h;
	int ret;

	fi = info;
	tap_ok(fi->ep_attr->type == FI_EP_DGRAM &&
	       fi->ep_attr->protocol == FI_PROTO_UDP &&
	       fi->ep_attr->max_msg_size == MAX_MSG &&
	       fi->tx_attr->inject_size == MAX_MSG && fi->mode == 0 &&
	       fi->ep_attr->msg_prefix_size == 0,
	       "getinfo: DGRAM over UDP, max_msg_size = inject_size = %d, "
	       "no mode", MAX_MSG);
	tap_ok(fi->tx_attr->msg_order == TEST_ORDER_NONE &&
	       fi->rx_attr->msg_order == TEST_ORDER_NONE &&
	       fi->tx_attr->comp_order == TEST_ORDER_NONE &&
	       fi->rx_attr->comp_order == TEST_ORDER_NONE,
	       "getinfo: unordered messages and completions");
	tap_ok((fi->caps & (FI_MSG | FI_TAGGED | FI_SOURCE)) ==
	       (FI_MSG | FI_TAGGED | FI_SOURCE) &&
	       !(fi->caps & (FI_RMA | FI_ATOMIC | FI_MULTICAST |
			     FI_DIRECTED_RECV)) &&
	       fi->domain_attr->cq_data_size == 8,
	       "getinfo: FI_MSG, FI_TAGGED, FI_SOURCE, 8 octets of CQ data");
	h = hints_new();
	h->mode = FI_MSG_PREFIX | FI_CONTEXT;
	ret = getinfo(h, &fi);
	tap_ok(!ret && (fi->mode & FI_MSG_PREFIX) &&
	       (fi->tx_attr->mode & FI_MSG_PREFIX) &&
	       (fi->rx_attr->mode & FI_MSG_PREFIX) &&
	       fi->ep_attr->msg_prefix_size == HDR_MAX,
	       "getinfo: FI_MSG_PREFIX offered -> taken, %d octets", HDR_MAX);
	fi_freeinfo(fi);
	h = hints_new();
	h->tx_attr->msg_order = FI_ORDER_SAS;
	ret = getinfo(h, &fi);
	tap_ok(ret == -FI_ENODATA, "getinfo: FI_ORDER_SAS -> ENODATA (%d)",
	       ret);
	fi_freeinfo(fi);
	h = hints_new();
	h->caps |= FI_RMA;
	ret = getinfo(h, &fi);
	tap_ok(ret == -FI_ENODATA, "getinfo: FI_RMA -> ENODATA (%d)", ret);
	fi_freeinfo(fi);
	h = hints_new();
	h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	ret = getinfo(h, &fi);
	tap_ok(ret == -FI_ENODATA,
	       "getinfo: FI_DELIVERY_COMPLETE -> ENODATA (%d)", ret);
	fi_freeinfo(fi);
}

/* ---- two endpoints */

/* One datagram a -> b of len octets; verified at b. */
static bool xfer(struct dep *a, fi_addr_t to_b, struct dep *b, size_t len,
		 unsigned int seed)
{
	struct fi_cq_tagged_entry e;
	fi_addr_t src;
	ssize_t ret;

	fill(sbuf, len, seed);
	memset(rbuf, 0, len + 16);
	if (fi_recv(b->ep, rbuf, MAX_MSG + 16, NULL, 0, rbuf) ||
	    fi_send(a->ep, sbuf, len, NULL, to_b, sbuf))
		return false;
	if (cq_wait(a->txcq, &e, NULL, 5) != 1 || e.op_context != sbuf)
		return false;
	ret = cq_wait(b->rxcq, &e, &src, 5);
	return ret == 1 && e.op_context == rbuf && e.len == len &&
	       e.flags == (FI_RECV | FI_MSG) && !memcmp(sbuf, rbuf, len) &&
	       rbuf[len] == 0;
}

static void test_sizes(struct dep *a, fi_addr_t to_b, struct dep *b)
{
	static const size_t sizes[] = { 0, 1, 7, 64, 1000, 4096, 16384,
					MAX_MSG };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		tap_ok(xfer(a, to_b, b, sizes[i], (unsigned int)i),
		       "%zu octets arrive intact", sizes[i]);
	tap_ok(fi_send(a->ep, sbuf, MAX_MSG + 1, NULL, to_b, NULL) ==
	       -FI_EMSGSIZE && fi_inject(a->ep, sbuf, MAX_MSG + 1, to_b) ==
	       -FI_EMSGSIZE,
	       "a send of max_msg_size + 1 is refused with -FI_EMSGSIZE");
}

static void test_inject_data(struct dep *a, fi_addr_t to_b, struct dep *b)
{
	struct fi_cq_tagged_entry e;
	uint64_t sent = fi_cntr_read(a->txc);
	bool ok;

	fill(sbuf, MAX_MSG, 9);
	ok = !fi_recv(b->ep, rbuf, MAX_MSG, NULL, 0, rbuf) &&
	     !fi_inject(a->ep, sbuf, MAX_MSG, to_b) &&
	     cq_wait(b->rxcq, &e, NULL, 5) == 1 &&
	     !memcmp(sbuf, rbuf, MAX_MSG) &&
	     cq_wait(a->txcq, &e, NULL, 0.2) == -FI_EAGAIN &&
	     fi_cntr_read(a->txc) == sent + 1;
	tap_ok(ok, "fi_inject of max_msg_size: delivered, no send "
	       "completion, the send counter counts it");
	ok = !fi_recv(b->ep, rbuf, 64, NULL, 0, rbuf) &&
	     !fi_senddata(a->ep, sbuf, 10, NULL, 0xfeedfacecafebeefULL,
			  to_b, sbuf) &&
	     cq_wait(b->rxcq, &e, NULL, 5) == 1 &&
	     e.flags == (FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA) &&
	     e.data == 0xfeedfacecafebeefULL && e.len == 10 &&
	     cq_wait(a->txcq, &e, NULL, 5) == 1;
	tap_ok(ok, "fi_senddata: 64-bit remote CQ data and FI_REMOTE_CQ_DATA");
}

/* b knows a (as a_at_b); c is known to nobody. */
static void test_source(struct dep *a, fi_addr_t a_at_b, fi_addr_t to_b,
			struct dep *b, struct dep *c)
{
	struct fi_cq_tagged_entry e;
	uint64_t st0[ST_MAX], st1[ST_MAX];
	fi_addr_t src = 0, c_to_b = insert(c, &b->name);
	bool ok;

	ok = !fi_recv(b->ep, rbuf, 64, NULL, 0, rbuf) &&
	     !fi_send(a->ep, sbuf, 5, NULL, to_b, NULL) &&
	     cq_wait(b->rxcq, &e, &src, 5) == 1 && src == a_at_b;
	tap_ok(ok, "FI_SOURCE: fi_cq_readfrom names the sender's fi_addr");
	stats(b, st0);
	ok = !fi_recv(b->ep, rbuf, 64, NULL, 0, rbuf) &&
	     !fi_send(c->ep, sbuf, 6, NULL, c_to_b, NULL) &&
	     cq_wait(b->rxcq, &e, &src, 5) == 1 &&
	     src == FI_ADDR_NOTAVAIL && e.len == 6;
	stats(b, st1);
	tap_ok(ok && st1[ST_UNKNOWN_SRC] == st0[ST_UNKNOWN_SRC] + 1,
	       "a sender not in the AV: delivered with FI_ADDR_NOTAVAIL, "
	       "counted as unknown");
	while (cq_wait(a->txcq, &e, NULL, 0.05) == 1 ||
	       cq_wait(c->txcq, &e, NULL, 0.05) == 1)
		;
}

static void test_tagged(struct dep *a, fi_addr_t to_b, struct dep *b)
{
	struct fi_cq_tagged_entry e;
	uint64_t st0[ST_MAX], st1[ST_MAX];
	static uint8_t r1[64], r2[64];
	bool ok;

	fill(sbuf, 32, 3);
	ok = !fi_trecv(b->ep, r1, 64, NULL, 0, 0x1111, 0, r1) &&
	     !fi_trecv(b->ep, r2, 64, NULL, 0, 0x2200, 0xff, r2) &&
	     !fi_tsend(a->ep, sbuf, 32, NULL, to_b, 0x22ab, sbuf) &&
	     cq_wait(b->rxcq, &e, NULL, 5) == 1 && e.op_context == r2 &&
	     e.tag == 0x22ab && e.flags == (FI_RECV | FI_TAGGED) &&
	     !memcmp(r2, sbuf, 32);
	tap_ok(ok, "tagged: the receive whose tag (with ignore bits) "
	       "matches takes the datagram");
	stats(b, st0);
	ok = !fi_tinject(a->ep, sbuf, 8, to_b, 0x9999);
	do {
		stats(b, st1);
	} while (ok && st1[ST_NO_MATCH] == st0[ST_NO_MATCH] &&
		 cq_wait(b->rxcq, &e, NULL, 0.01) == -FI_EAGAIN);
	ok = ok && st1[ST_NO_MATCH] == st0[ST_NO_MATCH] + 1 &&
	     !fi_tsend(a->ep, sbuf, 16, NULL, to_b, 0x1111, NULL) &&
	     cq_wait(b->rxcq, &e, NULL, 5) == 1 && e.op_context == r1 &&
	     e.len == 16;
	tap_ok(ok, "tagged: a tag nobody posted is dropped and counted; "
	       "the waiting receive still gets its own");
	while (cq_wait(a->txcq, &e, NULL, 0.05) == 1)
		;
}

static void test_counters(struct dep *a, fi_addr_t to_b, struct dep *b)
{
	uint64_t s0 = fi_cntr_read(a->txc), r0 = fi_cntr_read(b->rxc);
	struct fi_cq_tagged_entry e;
	int i, ok = 1;

	for (i = 0; i < 3 && ok; i++)
		ok = !fi_recv(b->ep, rbuf, 64, NULL, 0, NULL) &&
		     !fi_send(a->ep, sbuf, 8, NULL, to_b, NULL) &&
		     cq_wait(b->rxcq, &e, NULL, 5) == 1;
	ok = ok && !fi_cntr_wait(b->rxc, r0 + 3, 2000);
	tap_ok(ok && fi_cntr_read(a->txc) == s0 + 3 &&
	       fi_cntr_read(b->rxc) == r0 + 3,
	       "counters: 3 sends and 3 receives counted, fi_cntr_wait");
	while (cq_wait(a->txcq, &e, NULL, 0.05) == 1)
		;
}

/* b's rx CQ waits on an fd (FI_WAIT_FD). */
static void test_waits(struct dep *a, fi_addr_t to_b, struct dep *b)
{
	struct fi_cq_tagged_entry e;
	struct fid *f = &b->rxcq->fid;
	struct pollfd pfd = { .events = POLLIN };
	double t0 = tap_now(), dt;
	ssize_t ret;
	bool ok;

	ret = fi_recv(b->ep, rbuf, 64, NULL, 0, rbuf);
	ret = ret ? ret : fi_cq_sread(b->rxcq, &e, 1, NULL, 300);
	dt = tap_now() - t0;
	tap_ok(ret == -FI_EAGAIN && dt >= 0.25 && dt < 3,
	       "fi_cq_sread with nothing coming: -FI_EAGAIN after its 300 ms "
	       "(%zd after %.0f ms)", ret, dt * 1000);
	ok = !fi_control(f, FI_GETWAIT, &pfd.fd) &&
	     fi_trywait(fabric, &f, 1) == 0 && poll(&pfd, 1, 0) == 0 &&
	     !fi_send(a->ep, sbuf, 4, NULL, to_b, NULL) &&
	     poll(&pfd, 1, 5000) == 1 &&
	     fi_cq_sread(b->rxcq, &e, 1, NULL, 5000) == 1 && e.len == 4;
	tap_ok(ok, "FI_WAIT_FD: the fd is quiet after fi_trywait, readable "
	       "when a datagram arrives");
	while (cq_wait(a->txcq, &e, NULL, 0.05) == 1)
		;
}

static void test_trunc_cancel(struct dep *a, fi_addr_t to_b, struct dep *b)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	static uint8_t small[100];
	bool ok;

	fill(sbuf, 1000, 5);
	ok = !fi_recv(b->ep, small, sizeof(small), NULL, 0, small) &&
	     !fi_send(a->ep, sbuf, 1000, NULL, to_b, NULL) &&
	     cq_wait(b->rxcq, &e, NULL, 5) == -FI_EAVAIL &&
	     cq_err(b->rxcq, &err) == 1 && err.err == FI_ETRUNC &&
	     err.op_context == small && err.len == 100 && err.olen == 900 &&
	     !memcmp(small, sbuf, 100);
	tap_ok(ok, "1000 octets into 100: FI_ETRUNC, len 100, olen 900, "
	       "the first 100 octets placed");
	ok = !fi_recv(b->ep, rbuf, 64, NULL, 0, rbuf) &&
	     !fi_cancel(&b->ep->fid, rbuf) &&
	     cq_wait(b->rxcq, &e, NULL, 5) == -FI_EAVAIL &&
	     cq_err(b->rxcq, &err) == 1 && err.err == FI_ECANCELED &&
	     err.op_context == rbuf &&
	     fi_cancel(&b->ep->fid, rbuf) == -FI_ENOENT;
	tap_ok(ok, "fi_cancel: FI_ECANCELED with the context, once");
	while (cq_wait(a->txcq, &e, NULL, 0.05) == 1)
		;
}

/* Prefix mode: buffers start with HDR_MAX octets that carry nothing. */
static void test_prefix(void)
{
	struct fi_cq_tagged_entry e;
	struct fi_info *h = hints_new(), *fi;
	struct dep p, q;
	fi_addr_t to_q;
	bool ok = false;

	h->mode = FI_MSG_PREFIX;
	if (getinfo(h, &fi) || dep_open(&p, fi, FI_WAIT_NONE) ||
	    dep_open(&q, fi, FI_WAIT_NONE))
		goto out;
	to_q = insert(&p, &q.name);
	fill(sbuf, HDR_MAX + 300, 8);
	memset(rbuf, 0, 1024);
	ok = !fi_recv(q.ep, rbuf, 1024, NULL, 0, NULL) &&
	     !fi_send(p.ep, sbuf, HDR_MAX + 300, NULL, to_q, NULL) &&
	     cq_wait(q.rxcq, &e, NULL, 5) == 1 && e.len == HDR_MAX + 300 &&
	     !memcmp(rbuf + HDR_MAX, sbuf + HDR_MAX, 300) &&
	     fi_send(p.ep, sbuf, HDR_MAX - 1, NULL, to_q, NULL) == -FI_EINVAL;
	dep_close(&p);
	dep_close(&q);
out:
	fi_freeinfo(fi);
	tap_ok(ok, "FI_MSG_PREFIX: the payload follows the prefix, len counts "
	       "it, a buffer shorter than the prefix is refused");
}

/* ---- hostile datagrams */

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* A header: magic, version, flags, length. */
static void hdr(uint8_t *p, uint16_t magic, uint8_t ver, uint8_t flags,
		uint32_t len)
{
	p[0] = magic >> 8;
	p[1] = (uint8_t)magic;
	p[2] = ver;
	p[3] = flags;
	put32(p + 4, len);
}

/* Sends n octets of p from raw to b; true if b dropped it under slot
 * `why` within 2 s with no completion. */
static bool hostile(int raw, struct dep *b, const uint8_t *p, size_t n,
		    int why)
{
	struct fi_cq_tagged_entry e;
	uint64_t st0[ST_MAX], st1[ST_MAX];
	double end = tap_now() + 2;

	stats(b, st0);
	if (sendto(raw, p, n, 0, (const struct sockaddr *)&b->name,
		   sizeof(b->name)) != (ssize_t)n)
		return false;
	do {
		if (fi_cq_read(b->rxcq, &e, 1) != -FI_EAGAIN)
			return false;
		stats(b, st1);
	} while (st1[why] == st0[why] && tap_now() < end);
	return st1[why] == st0[why] + 1 &&
	       st1[ST_DELIVERED] == st0[ST_DELIVERED];
}

static void test_hostile_fields(int raw, struct dep *b)
{
	static uint8_t p[65507];

	hdr(p, 0x6957, 1, 0, 0);
	tap_ok(hostile(raw, b, p, 3, ST_SHORT), "hostile: 3 octets: short");
	hdr(p, 0x6957, 1, 0x03, 8);
	tap_ok(hostile(raw, b, p, 12, ST_SHORT),
	       "hostile: flags promise 24 header octets, 12 sent: short");
	hdr(p, 0x6957, 1, 0, 5000);
	tap_ok(hostile(raw, b, p, 108, ST_LENGTH),
	       "hostile: length 5000 in a datagram of 100: bad length");
	hdr(p, 0x1234, 1, 0, 4);
	tap_ok(hostile(raw, b, p, 12, ST_MAGIC), "hostile: bad magic");
	hdr(p, 0x6957, 2, 0, 4);
	tap_ok(hostile(raw, b, p, 12, ST_VERSION), "hostile: version 2");
	hdr(p, 0x6957, 1, 0x80, 4);
	tap_ok(hostile(raw, b, p, 12, ST_FLAGS), "hostile: reserved flag");
	hdr(p, 0x6957, 1, 0, sizeof(p) - 8);
	tap_ok(hostile(raw, b, p, sizeof(p), ST_OVERSIZE),
	       "hostile: %zu payload octets, beyond max_msg_size: oversize",
	       sizeof(p) - 8);
}

/* Garbage never starts with the magic's first octet. */
static void test_hostile_garbage(int raw, struct dep *b)
{
	uint64_t st0[ST_MAX], st1[ST_MAX], drops0 = 0, drops1 = 0;
	static uint8_t p[2048];
	struct fi_cq_tagged_entry e;
	double end = tap_now() + 5;
	int i, k, sent = 0;

	srand(7);
	stats(b, st0);
	for (i = 0; i < 300; i++) {
		size_t n = (size_t)(rand() % (int)sizeof(p));

		for (k = 0; k < (int)n; k++)
			p[k] = (uint8_t)rand();
		p[0] = 0x42;
		sent += sendto(raw, p, n, 0, (struct sockaddr *)&b->name,
			       sizeof(b->name)) == (ssize_t)n;
		if (i % 10 == 0)	/* room in the socket buffer */
			fi_cq_read(b->rxcq, &e, 1);
	}
	for (k = ST_SHORT; k <= ST_NO_MATCH; k++)
		drops0 += st0[k];
	do {
		if (fi_cq_read(b->rxcq, &e, 1) != -FI_EAGAIN)
			break;
		stats(b, st1);
		for (drops1 = 0, k = ST_SHORT; k <= ST_NO_MATCH; k++)
			drops1 += st1[k];
	} while (drops1 + st1[ST_KERNEL] - st0[ST_KERNEL] <
		 drops0 + (uint64_t)sent && tap_now() < end);
	tap_ok(sent == 300 && drops1 + st1[ST_KERNEL] - st0[ST_KERNEL] ==
	       drops0 + 300 && st1[ST_DELIVERED] == st0[ST_DELIVERED],
	       "hostile: 300 datagrams of garbage, all dropped and counted "
	       "(%llu by us, %llu by the kernel)",
	       (unsigned long long)(drops1 - drops0),
	       (unsigned long long)(st1[ST_KERNEL] - st0[ST_KERNEL]));
}

/* A well-formed datagram from a stranger is a datagram: DGRAM receives
 * from anyone (fabtests' servers learn their peers that way). */
static void test_hostile_stranger(int raw, struct dep *b)
{
	struct fi_cq_tagged_entry e;
	uint8_t p[8 + 5];
	fi_addr_t src = 0;
	bool ok;

	hdr(p, 0x6957, 1, 0, 5);
	memcpy(p + 8, "hello", 5);
	ok = sendto(raw, p, sizeof(p), 0, (struct sockaddr *)&b->name,
		    sizeof(b->name)) == sizeof(p) &&
	     cq_wait(b->rxcq, &e, &src, 5) == 1 && e.len == 5 &&
	     src == FI_ADDR_NOTAVAIL && !memcmp(rbuf, "hello", 5);
	tap_ok(ok, "a valid datagram from an address not in the AV: "
	       "delivered, source FI_ADDR_NOTAVAIL");
}

static void test_hostile(struct dep *a, fi_addr_t to_b, struct dep *b)
{
	int raw = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in lo = { .sin_family = AF_INET };

	lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (raw < 0 || bind(raw, (struct sockaddr *)&lo, sizeof(lo)) ||
	    fi_recv(b->ep, rbuf, MAX_MSG + 16, NULL, 0, rbuf))
		tap_diag("hostile: setup failed");
	test_hostile_fields(raw, b);
	test_hostile_garbage(raw, b);
	test_hostile_stranger(raw, b);
	tap_ok(xfer(a, to_b, b, 3000, 77),
	       "after the hostile datagrams a real one arrives intact");
	close(raw);
}

/* ---- another process */

/* The child: echoes `rounds` datagrams back to the parent. */
static int child_echo(int wfd, int rfd, int rounds)
{
	struct fi_cq_tagged_entry e;
	struct sockaddr_in parent;
	struct dep c;
	fi_addr_t to_p;
	int i;

	if (fi_fabric(info->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, info, &domain, NULL) ||
	    dep_open(&c, info, FI_WAIT_FD) ||
	    write(wfd, &c.name, sizeof(c.name)) != sizeof(c.name) ||
	    read(rfd, &parent, sizeof(parent)) != sizeof(parent))
		return 1;
	to_p = insert(&c, &parent);
	for (i = 0; i < rounds; i++) {
		if (fi_recv(c.ep, rbuf, MAX_MSG, NULL, 0, NULL) ||
		    fi_cq_sread(c.rxcq, &e, 1, NULL, 10000) != 1 ||
		    fi_send(c.ep, rbuf, e.len, NULL, to_p, NULL) ||
		    cq_wait(c.txcq, &e, NULL, 5) != 1)
			return 2 + i;
	}
	dep_close(&c);
	return 0;
}

static bool echo_round(struct dep *p, fi_addr_t to_c, size_t len,
		       unsigned int seed)
{
	struct fi_cq_tagged_entry e;

	fill(sbuf, len, seed);
	memset(rbuf, 0, len);
	return !fi_recv(p->ep, rbuf, MAX_MSG, NULL, 0, NULL) &&
	       !fi_send(p->ep, sbuf, len, NULL, to_c, NULL) &&
	       cq_wait(p->txcq, &e, NULL, 5) == 1 &&
	       fi_cq_sread(p->rxcq, &e, 1, NULL, 10000) == 1 &&
	       e.len == len && !memcmp(sbuf, rbuf, len);
}

static void test_fork(struct dep *p)
{
	static const size_t sizes[] = { 1, 1472, 30000, MAX_MSG };
	int up[2], down[2], n = 4, i, ok = 1;
	struct sockaddr_in child;
	fi_addr_t to_c;
	pid_t pid;

	if (pipe(up) || pipe(down))
		exit(2);
	pid = fork();
	if (pid == 0)
		_exit(child_echo(up[1], down[0], n));
	if (read(up[0], &child, sizeof(child)) != sizeof(child) ||
	    write(down[1], &p->name, sizeof(p->name)) != sizeof(p->name))
		ok = 0;
	to_c = insert(p, &child);
	for (i = 0; i < n && ok; i++)
		ok = echo_round(p, to_c, sizes[i], (unsigned int)i + 40);
	tap_ok(ok, "another process echoes 1, 1472, 30000 and %d octets "
	       "intact (fi_cq_sread on both sides)", MAX_MSG);
	tap_child(pid, 20, "echo");
}

int main(void)
{
	struct dep a, b, c, p;
	fi_addr_t to_b, a_at_b;

	sbuf = malloc(MAX_MSG + 64);
	rbuf = malloc(MAX_MSG + 64);
	if (!sbuf || !rbuf || getinfo(hints_new(), &info) ||
	    fi_fabric(info->fabric_attr, &fabric, NULL) ||
	    fi_domain(fabric, info, &domain, NULL)) {
		printf("Bail out! no DGRAM endpoint on lo\n");
		return 1;
	}
	test_getinfo();
	if (dep_open(&a, info, FI_WAIT_NONE) ||
	    dep_open(&b, info, FI_WAIT_FD) || dep_open(&c, info, FI_WAIT_NONE)) {
		printf("Bail out! endpoints\n");
		return 1;
	}
	to_b = insert(&a, &b.name);
	a_at_b = insert(&b, &a.name);
	tap_ok(b.name.sin_family == AF_INET && b.name.sin_port &&
	       b.name.sin_addr.s_addr == htonl(INADDR_LOOPBACK),
	       "fi_getname: 127.0.0.1 and the port the socket got");
	test_sizes(&a, to_b, &b);
	test_inject_data(&a, to_b, &b);
	test_source(&a, a_at_b, to_b, &b, &c);
	test_tagged(&a, to_b, &b);
	test_counters(&a, to_b, &b);
	test_waits(&a, to_b, &b);
	test_trunc_cancel(&a, to_b, &b);
	test_prefix();
	test_hostile(&a, to_b, &b);
	if (!dep_open(&p, info, FI_WAIT_FD)) {
		test_fork(&p);
		dep_close(&p);
	}
	dep_close(&a);
	dep_close(&b);
	dep_close(&c);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	free(sbuf);
	free(rbuf);
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}
