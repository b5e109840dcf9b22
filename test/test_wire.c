/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Wire codec tests: golden vectors (test/golden/vectors.py, built from the
 * RFC diagrams), byte-boundary and random re-chunking of the receive
 * stream, markers, and a table of malformed inputs with their exact RFC
 * error triples.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "iwarp/crc32c.h"
#include "iwarp/rx.h"
#include "iwarp/wire.h"
#include "golden/golden.h"
#include "tap.h"

static const struct golden *find_golden(const char *name)
{
	size_t i;

	for (i = 0; i < N_GOLDEN; i++)
		if (!strcmp(goldens[i].name, name))
			return &goldens[i];
	fprintf(stderr, "no golden vector %s\n", name);
	exit(2);
}

/* ---- a recorder for the receive stream: every event as one text line */

struct rec {
	char log[65536];
	size_t n;
	uint8_t payload[70000];
};

static void rec_printf(struct rec *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	r->n += (size_t)vsnprintf(r->log + r->n, sizeof(r->log) - r->n, fmt,
				  ap);
	va_end(ap);
	if (r->n >= sizeof(r->log))
		r->n = sizeof(r->log) - 1;
}

static int rec_start(void *arg, const struct iw_rx_seg *s,
		     struct iw_rx_dst *dst, struct iw_err *err)
{
	struct rec *r = arg;
	const struct ddp_hdr *h = &s->hdr;

	rec_printf(r, "start op=%u T=%d L=%d ulpdu=%u plen=%u", h->opcode,
		   h->tagged, h->last, s->ulpdu_len, s->payload_len);
	if (h->tagged)
		rec_printf(r, " stag=%08x to=%llx", h->stag,
			   (unsigned long long)h->to);
	else
		rec_printf(r, " inv=%08x qn=%u msn=%u mo=%u", h->inv_stag,
			   h->qn, h->msn, h->mo);
	if (h->opcode == RDMAP_READ_REQ)
		rec_printf(r, " rreq=%08x/%llx/%u/%08x/%llx",
			   s->rreq.sink_stag,
			   (unsigned long long)s->rreq.sink_to, s->rreq.size,
			   s->rreq.src_stag,
			   (unsigned long long)s->rreq.src_to);
	if (h->opcode == RDMAP_TERMINATE)
		rec_printf(r, " term=%u/%u/%u hdrct=%u seglen=%u ddp=%u rreq=%d",
			   s->term.layer, s->term.etype, s->term.ecode,
			   s->term.hdrct, s->term.seg_len, s->term.ddp_hdr_len,
			   s->term.has_rreq);
	if (h->opcode == RDMAP_ATOMIC_REQ)
		rec_printf(r, " areq=%u/%u/%08x/%llx/%llx/%llx/%llx/%llx",
			   s->areq.op, s->areq.req_id, s->areq.stag,
			   (unsigned long long)s->areq.to,
			   (unsigned long long)s->areq.add_swap,
			   (unsigned long long)s->areq.add_swap_mask,
			   (unsigned long long)s->areq.compare,
			   (unsigned long long)s->areq.compare_mask);
	if (h->opcode == RDMAP_ATOMIC_RESP)
		rec_printf(r, " aresp=%u/%llx", s->aresp.req_id,
			   (unsigned long long)s->aresp.orig);
	rec_printf(r, "\n");
	dst->buf = s->payload_len ? r->payload : NULL;
	dst->len = s->payload_len;
	return 0;
}

static int rec_done(void *arg, const struct iw_rx_seg *s,
		    struct iw_err *err)
{
	struct rec *r = arg;
	uint32_t i;

	rec_printf(r, "done payload=");
	for (i = 0; i < s->payload_len && i < 64; i++)
		rec_printf(r, "%02x", r->payload[i]);
	rec_printf(r, " crc32c=%08x\n",
		   iw_crc32c(r->payload, s->payload_len));
	return 0;
}

static const struct iw_rx_ops rec_ops = {
	.seg_start = rec_start,
	.seg_done = rec_done,
};

/* Feeds `len` octets in chunks chosen by `chunk` (NULL: all at once). */
static int run_rx(struct rec *r, bool crc, bool markers, const uint8_t *p,
		  size_t len, size_t (*chunk)(size_t left, void *arg),
		  void *arg)
{
	struct iw_rx rx;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	iw_rx_init(&rx, crc, markers, &rec_ops, r);
	while (len && !ret) {
		size_t n = chunk ? chunk(len, arg) : len;

		ret = iw_rx_feed(&rx, p, n);
		p += n;
		len -= n;
	}
	if (ret)
		rec_printf(r, "ERR %u/%u/%u\n", rx.err.layer, rx.err.etype,
			   rx.err.ecode);
	else if (!iw_rx_at_boundary(&rx))
		rec_printf(r, "INCOMPLETE %s\n", iw_rx_state_str(rx.state));
	return ret;
}

/* ---- MPA Request/Reply golden vectors (RFC 5044 §7.1, RFC 6581 §9) */

struct mpa_expect {
	const char *name;
	enum mpa_kind kind;
	uint8_t rev;
	bool m, c, r, s, p2p;
	uint8_t rtr;
	uint16_t ird, ord, pd_len, ulp_len;
};

static const struct mpa_expect mpa_expects[] = {
	{ "req_v1", MPA_REQUEST, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0 },
	{ "req_v1_markers_pd", MPA_REQUEST, 1, 1, 1, 0, 0, 0, 0, 0, 0, 5, 5 },
	{ "rep_v1", MPA_REPLY, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0 },
	{ "req_v2_p2p_all_rtr", MPA_REQUEST, 2, 0, 1, 0, 1, 1,
	  MPA_RTR_SEND | MPA_RTR_WRITE | MPA_RTR_READ, 16, 8, 8, 4 },
	{ "rep_v2_write_rtr", MPA_REPLY, 2, 0, 1, 0, 1, 1, MPA_RTR_WRITE,
	  8, 16, 4, 0 },
	{ "rep_v2_read_rtr", MPA_REPLY, 2, 0, 0, 0, 1, 1, MPA_RTR_READ,
	  1, 1, 4, 0 },
	{ "rep_v2_send_rtr", MPA_REPLY, 2, 0, 0, 0, 1, 1, MPA_RTR_SEND,
	  4, 4, 4, 0 },
	{ "req_v2_no_negotiation", MPA_REQUEST, 2, 0, 0, 0, 1, 0, 0,
	  MPA_IRD_ORD_NO_NEG, MPA_IRD_ORD_NO_NEG, 4, 0 },
	{ "req_v2_no_enhanced", MPA_REQUEST, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0 },
	{ "rep_v2_reject", MPA_REPLY, 2, 0, 0, 1, 1, 0, 0, 0, 0, 10, 6 },
	{ "req_v2_pd_512", MPA_REQUEST, 2, 0, 0, 0, 1, 1, MPA_RTR_WRITE,
	  1, 1, 512, 508 },
};

static void test_mpa_golden(void)
{
	size_t i;

	for (i = 0; i < sizeof(mpa_expects) / sizeof(mpa_expects[0]); i++) {
		const struct mpa_expect *e = &mpa_expects[i];
		const struct golden *g = find_golden(e->name);
		struct mpa_frame f;
		struct iw_err err = { 0 };
		uint8_t buf[600];
		ssize_t n;
		size_t k;
		int ret, partial_ok = 1;

		ret = mpa_frame_parse(g->bytes, g->len, e->kind, &f, &err);
		tap_ok(ret == 0 && f.rev == e->rev && f.markers == e->m &&
		       f.crc == e->c && f.reject == e->r &&
		       f.enhanced == e->s && f.p2p == e->p2p &&
		       f.rtr == e->rtr && f.ird == e->ird && f.ord == e->ord &&
		       f.pd_len == e->pd_len && f.ulp_pd_len == e->ulp_len &&
		       f.ulp_pd == g->bytes + g->len - e->ulp_len &&
		       mpa_frame_len(g->bytes, g->len) == (ssize_t)g->len,
		       "mpa parse %s", e->name);

		n = mpa_frame_build(buf, sizeof(buf), &f, f.ulp_pd,
				    f.ulp_pd_len);
		tap_ok(n == (ssize_t)g->len && !memcmp(buf, g->bytes, g->len),
		       "mpa build %s reproduces the golden octets", e->name);

		/* every prefix is "need more", never an error or success */
		for (k = 0; k < g->len; k++)
			if (mpa_frame_parse(g->bytes, k, e->kind, &f, &err) !=
			    -EAGAIN)
				partial_ok = 0;
		tap_ok(partial_ok, "mpa %s: every prefix asks for more",
		       e->name);
	}
}

/* ---- FPDU golden vectors through the receive stream */

struct fpdu_expect {
	const char *name;
	const char *log;
};

static const struct fpdu_expect fpdu_expects[] = {
	{ "rtr_write", "start op=0 T=1 L=1 ulpdu=14 plen=0 stag=00000001 to=0\n"
		       "done payload= crc32c=00000000\n" },
	{ "rtr_read", "start op=1 T=0 L=1 ulpdu=46 plen=0 inv=00000000 qn=1 "
		      "msn=1 mo=0 rreq=00000001/0/0/00000001/0\n"
		      "done payload= crc32c=00000000\n" },
	{ "rtr_send", "start op=3 T=0 L=1 ulpdu=18 plen=0 inv=00000000 qn=0 "
		      "msn=1 mo=0\ndone payload= crc32c=00000000\n" },
	{ "send_pad3", "start op=3 T=0 L=1 ulpdu=19 plen=1 inv=00000000 qn=0 "
		       "msn=2 mo=0\ndone payload=41 crc32c=" },
	{ "send_se_pad2", "start op=5 T=0 L=1 ulpdu=20 plen=2 inv=00000000 "
			  "qn=0 msn=3 mo=0\ndone payload=4243 crc32c=" },
	{ "send_inv_pad1", "start op=4 T=0 L=1 ulpdu=21 plen=3 inv=12345678 "
			   "qn=0 msn=4 mo=0\ndone payload=444546 crc32c=" },
	{ "send_se_inv_pad0", "start op=6 T=0 L=1 ulpdu=22 plen=4 "
			      "inv=9abcdef0 qn=0 msn=5 mo=0\n"
			      "done payload=4748494a crc32c=" },
	{ "send_middle_segment", "start op=3 T=0 L=0 ulpdu=21 plen=3 "
				 "inv=00000000 qn=0 msn=6 mo=4096\n"
				 "done payload=6d6964 crc32c=" },
	{ "write", "start op=0 T=1 L=1 ulpdu=22 plen=8 stag=deadbeef "
		   "to=100000000\ndone payload=0102030405060708 crc32c=" },
	{ "write_not_last", "start op=0 T=1 L=0 ulpdu=17 plen=3 stag=deadbeef "
			    "to=10\ndone payload=78797a crc32c=" },
	{ "read_resp", "start op=2 T=1 L=1 ulpdu=19 plen=5 stag=01020304 "
		       "to=10\ndone payload=3132333435 crc32c=" },
	{ "read_req", "start op=1 T=0 L=1 ulpdu=46 plen=0 inv=00000000 qn=1 "
		      "msn=1 mo=0 rreq=11223344/1000/65536/55667788/2000\n"
		      "done payload= crc32c=00000000\n" },
	{ "terminate", "start op=7 T=0 L=1 ulpdu=22 plen=0 inv=00000000 qn=2 "
		       "msn=1 mo=0 term=2/0/2 hdrct=0 seglen=0 ddp=0 rreq=0\n"
		       "done payload= crc32c=00000000\n" },
	{ "terminate_ddp_copy", "start op=7 T=0 L=1 ulpdu=42 plen=0 "
				"inv=00000000 qn=2 msn=1 mo=0 term=1/2/1 "
				"hdrct=6 seglen=18 ddp=18 rreq=0\n"
				"done payload= crc32c=00000000\n" },
	{ "terminate_rreq_copy", "start op=7 T=0 L=1 ulpdu=70 plen=0 "
				 "inv=00000000 qn=2 msn=1 mo=0 term=0/1/0 "
				 "hdrct=7 seglen=46 ddp=18 rreq=1\n"
				 "done payload= crc32c=00000000\n" },
	{ "terminate_tagged_copy", "start op=7 T=0 L=1 ulpdu=38 plen=0 "
				   "inv=00000000 qn=2 msn=1 mo=0 term=1/1/1 "
				   "hdrct=6 seglen=14 ddp=14 rreq=0\n"
				   "done payload= crc32c=00000000\n" },
	{ "atomic_fetch_add", "start op=10 T=0 L=1 ulpdu=70 plen=0 "
			      "inv=00000000 qn=4 msn=1 mo=0 areq=0/7/0badf00d/"
			      "1000/101010101010101/8000000080000000/0/0\n"
			      "done payload= crc32c=00000000\n" },
	{ "atomic_cmp_swap", "start op=10 T=0 L=1 ulpdu=70 plen=0 "
			     "inv=00000000 qn=4 msn=2 mo=0 areq=2/8/0badf00d/"
			     "1008/cafef00ddeadbeef/ffffffff00000000/"
			     "1122334455667788/ffff\n"
			     "done payload= crc32c=00000000\n" },
	{ "atomic_resp", "start op=11 T=0 L=1 ulpdu=30 plen=0 inv=00000000 "
			 "qn=3 msn=1 mo=0 aresp=7/1122334455667788\n"
			 "done payload= crc32c=00000000\n" },
};

static bool is_fpdu(const struct golden *g)
{
	return g->kind >= 2;
}

static void test_fpdu_golden(void)
{
	struct rec *r = malloc(sizeof(*r));
	size_t i;

	for (i = 0; i < sizeof(fpdu_expects) / sizeof(fpdu_expects[0]); i++) {
		const struct fpdu_expect *e = &fpdu_expects[i];
		const struct golden *g = find_golden(e->name);
		uint8_t buf[256];
		ssize_t n;
		int ret;

		ret = run_rx(r, true, false, g->bytes, g->len, NULL, NULL);
		tap_ok(ret == 0 && !strncmp(r->log, e->log, strlen(e->log)),
		       "fpdu rx %s", e->name);
		if (ret || strncmp(r->log, e->log, strlen(e->log)))
			tap_diag("got: %s", r->log);

		n = mpa_fpdu_build(buf, sizeof(buf), g->bytes + 2,
				   iw_get16(g->bytes), true, false, NULL);
		tap_ok(n == (ssize_t)g->len && !memcmp(buf, g->bytes, g->len),
		       "fpdu build %s reproduces the golden octets", e->name);
		/* the same FPDU closed in place: pad and CRC appended */
		memset(buf, 0xa5, sizeof(buf));
		memcpy(buf, g->bytes, MPA_FPDU_HDR + iw_get16(g->bytes));
		n = (ssize_t)mpa_fpdu_close(buf, MPA_FPDU_HDR +
						 iw_get16(g->bytes), true);
		tap_ok(n == (ssize_t)g->len && !memcmp(buf, g->bytes, g->len),
		       "fpdu close %s reproduces the golden octets", e->name);
	}
	free(r);
}

/* DDP/RDMAP header builders reproduce the golden headers. */
static void test_hdr_build(void)
{
	size_t i;
	int ok = 1, count = 0;

	for (i = 0; i < N_GOLDEN; i++) {
		const struct golden *g = &goldens[i];
		const uint8_t *ddp = g->bytes + 2;
		struct ddp_hdr h;
		struct iw_err err;
		uint8_t buf[64];
		ssize_t n;

		if (!is_fpdu(g))
			continue;
		count++;
		if (ddp_hdr_parse(ddp, iw_get16(g->bytes), &h, &err)) {
			ok = 0;
			continue;
		}
		n = ddp_hdr_build(buf, sizeof(buf), &h);
		if (n <= 0 || memcmp(buf, ddp, (size_t)n))
			ok = 0;
		if (h.opcode == RDMAP_READ_REQ) {
			struct rdmap_rreq rr;

			if (rdmap_rreq_parse(ddp + 18, 28, &rr, &err) ||
			    rdmap_rreq_build(buf, sizeof(buf), &rr) != 28 ||
			    memcmp(buf, ddp + 18, 28))
				ok = 0;
		}
		if (h.opcode == RDMAP_ATOMIC_REQ) {
			struct rdmap_areq a;

			if (rdmap_areq_parse(ddp + 18, 52, &a, &err) ||
			    rdmap_areq_build(buf, sizeof(buf), &a) != 52 ||
			    memcmp(buf, ddp + 18, 52))
				ok = 0;
		}
		if (h.opcode == RDMAP_ATOMIC_RESP) {
			struct rdmap_aresp a;

			if (rdmap_aresp_parse(ddp + 18, 12, &a, &err) ||
			    rdmap_aresp_build(buf, sizeof(buf), &a) != 12 ||
			    memcmp(buf, ddp + 18, 12))
				ok = 0;
		}
		if (h.opcode == RDMAP_TERMINATE) {
			struct rdmap_term t;
			size_t tl = iw_get16(g->bytes) - 18;

			if (rdmap_term_parse(ddp + 18, tl, &t, &err) ||
			    rdmap_term_build(buf, sizeof(buf), &t) !=
				    (ssize_t)tl ||
			    memcmp(buf, ddp + 18, tl))
				ok = 0;
		}
	}
	tap_ok(ok && count >= 18,
	       "ddp/rdmap/terminate/atomic builders reproduce %d golden "
	       "headers", count);
}

/* ---- the concatenated golden stream, re-chunked */

static size_t chunk_fixed(size_t left, void *arg)
{
	size_t *at = arg;
	size_t n = *at;

	*at = (size_t)-1;	/* the rest in one go */
	return n < left ? n : left;
}

static size_t chunk_random(size_t left, void *arg)
{
	unsigned int *seed = arg;
	size_t n = (size_t)(rand_r(seed) % 40) + 1;

	if (rand_r(seed) % 8 == 0)
		n = (size_t)(rand_r(seed) % 700) + 1;
	return n < left ? n : left;
}

static size_t chunk_one(size_t left, void *arg)
{
	return 1;
}

static uint8_t *golden_stream(size_t *len, bool crc_only)
{
	uint8_t *s = NULL;
	size_t i, n = 0;

	for (i = 0; i < N_GOLDEN; i++) {
		const struct golden *g = &goldens[i];

		if (g->kind != 2 && !(g->kind == 3 && !crc_only))
			continue;
		s = realloc(s, n + g->len);
		memcpy(s + n, g->bytes, g->len);
		n += g->len;
	}
	*len = n;
	return s;
}

static void check_rechunk(const char *what, bool crc, bool markers,
			  const uint8_t *s, size_t len)
{
	struct rec *ref = malloc(sizeof(*ref)), *r = malloc(sizeof(*r));
	int same = 1, ret;
	size_t at;
	unsigned int seed;

	ret = run_rx(ref, crc, markers, s, len, NULL, NULL);
	tap_ok(ret == 0 && !strstr(ref->log, "INCOMPLETE"),
	       "%s: whole stream decodes (%zu octets)", what, len);
	for (at = 1; at < len; at++) {
		size_t split = at;

		run_rx(r, crc, markers, s, len, chunk_fixed, &split);
		if (r->n != ref->n || memcmp(r->log, ref->log, ref->n)) {
			tap_diag("split at %zu differs", at);
			same = 0;
			break;
		}
	}
	tap_ok(same, "%s: split at every byte boundary gives identical "
	       "results", what);
	same = 1;
	for (seed = 1; seed <= 300 && same; seed++) {
		unsigned int st = seed;

		run_rx(r, crc, markers, s, len, chunk_random, &st);
		if (r->n != ref->n || memcmp(r->log, ref->log, ref->n))
			same = 0;
	}
	tap_ok(same, "%s: 300 random chunkings give identical results", what);
	run_rx(r, crc, markers, s, len, chunk_one, NULL);
	tap_ok(r->n == ref->n && !memcmp(r->log, ref->log, ref->n),
	       "%s: one octet at a time gives identical results", what);
	free(ref);
	free(r);
}

static void test_rechunk(void)
{
	size_t len;
	uint8_t *s = golden_stream(&len, true);

	check_rechunk("golden FPDU stream", true, false, s, len);
	free(s);
	/* with CRC off, the CRC field is present but ignored */
	s = golden_stream(&len, false);
	check_rechunk("golden stream, CRC off", false, false, s, len);
	free(s);
}

/* MPA frames via want/advance style partial arrival are covered by the
 * prefix test; here the same stream with markers. */
static uint8_t *marked_stream(size_t *len, bool crc)
{
	size_t cap = 65536, n = 0, i;
	uint8_t *s = malloc(cap);
	uint64_t pos = 0;

	for (i = 0; i < N_GOLDEN; i++) {
		const struct golden *g = &goldens[i];
		ssize_t k;

		if (g->kind != 2)
			continue;
		k = mpa_fpdu_build(s + n, cap - n, g->bytes + 2,
				   iw_get16(g->bytes), crc, true, &pos);
		if (k < 0)
			abort();
		n += (size_t)k;
	}
	*len = n;
	return s;
}

/* ---- markers (RFC 5044 §5) */

static void test_markers(void)
{
	uint8_t ulpdu[2000], out[4096], strip[4096], plain[4096];
	struct iw_err err = { 0 };
	uint64_t pos = 0;
	ssize_t n, m, p;
	size_t len, i;
	uint8_t *s;
	struct rec *r = malloc(sizeof(*r));

	for (i = 0; i < sizeof(ulpdu); i++)
		ulpdu[i] = (uint8_t)(i * 7 + 1);
	/* an untagged Send of 484 octets: marked FPDU is exactly 512 long */
	memcpy(ulpdu, golden_send_pad3 + 2, 18);
	n = mpa_fpdu_build(out, sizeof(out), ulpdu, 502, true, true, &pos);
	tap_ok(n == 512 && pos == 512 && !memcmp(out, "\0\0\0\0", 4) &&
	       iw_get16(out + 4) == 502,
	       "marker precedes the first FPDU with FPDUPTR 0");
	/* the next FPDU starts on a marker: FPDUPTR 0 again, then 512 */
	m = mpa_fpdu_build(out + n, sizeof(out) - (size_t)n, ulpdu, 1000,
			   true, true, &pos);
	tap_ok(m > 0 && iw_get32(out + 512) == 0 &&
	       iw_get16(out + 516) == 1000 && iw_get32(out + 1024) == 512,
	       "markers every 512 octets; FPDUPTR counts back to the FPDU");
	tap_ok((size_t)(n + m) == mpa_marked_len(mpa_fpdu_len(502), 0) +
				   mpa_marked_len(mpa_fpdu_len(1000), 512),
	       "mpa_marked_len matches what the builder wrote");

	/* CRC covers the markers: recomputing over the marked octets */
	{
		uint32_t c = iw_crc32c(out, 508);

		tap_ok(out[508] == (uint8_t)c && out[511] == (uint8_t)(c >> 24),
		       "CRC of a marked FPDU covers its leading marker");
	}

	p = mpa_marker_strip(strip, sizeof(strip), out, (size_t)(n + m), 0,
			     &err);
	len = (size_t)mpa_fpdu_build(plain, sizeof(plain), ulpdu, 502, true,
				     false, NULL);
	tap_ok(p == (ssize_t)(mpa_fpdu_len(502) + mpa_fpdu_len(1000)) &&
	       !memcmp(strip + 2, plain + 2, 502),
	       "marker strip restores the marker-free octets");

	out[1024 + 3] ^= 4;
	p = mpa_marker_strip(strip, sizeof(strip), out, (size_t)(n + m), 0,
			     &err);
	tap_ok(p == -EPROTO && err.layer == 2 && err.etype == 0 &&
	       err.ecode == 3, "bad FPDUPTR -> LLP/MPA/3 from strip");
	run_rx(r, false, true, out, (size_t)(n + m), NULL, NULL);
	tap_ok(strstr(r->log, "ERR 2/0/3") != NULL,
	       "bad FPDUPTR -> LLP/MPA/3 from the receive stream");
	out[1024 + 3] ^= 4;
	run_rx(r, true, true, out, (size_t)(n + m), NULL, NULL);
	tap_ok(!strstr(r->log, "ERR") && !strstr(r->log, "INCOMPLETE"),
	       "receive stream accepts the marked FPDUs with CRC");

	/* 4 + 2 + 506 = 512: the next marker falls between pad and CRC */
	pos = 0;
	n = mpa_fpdu_build(out, sizeof(out), ulpdu, 506, true, true, &pos);
	{
		uint32_t c = iw_crc32c(out, 516);

		tap_ok(n == 520 && iw_get32(out + 512) == 512 &&
		       out[516] == (uint8_t)c && out[519] == (uint8_t)(c >> 24),
		       "a marker right before the CRC is covered by it");
	}
	run_rx(r, true, true, out, (size_t)n, NULL, NULL);
	tap_ok(!strstr(r->log, "ERR") && !strstr(r->log, "INCOMPLETE") &&
	       strstr(r->log, "ulpdu=506"),
	       "receive stream accepts a marker before the CRC");

	s = marked_stream(&len, true);
	check_rechunk("golden stream with markers", true, true, s, len);
	{
		/* same decode as without markers */
		struct rec *ref = malloc(sizeof(*ref));
		size_t plen;
		uint8_t *ps = golden_stream(&plen, true);

		run_rx(ref, true, false, ps, plen, NULL, NULL);
		run_rx(r, true, true, s, len, NULL, NULL);
		tap_ok(ref->n == r->n && !memcmp(ref->log, r->log, r->n),
		       "marked and unmarked streams decode identically");
		free(ps);
		free(ref);
	}
	free(s);
	free(r);
}

static void test_mulpdu(void)
{
	tap_ok(mpa_mulpdu(1460, false) == 1454 &&
	       mpa_mulpdu(1448, false) == 1442 &&
	       mpa_mulpdu(1450, false) == 1442,
	       "MULPDU = EMSS - (6 + EMSS mod 4)");
	tap_ok(mpa_mulpdu(1460, true) == 1460 - (6 + 4 * 3) &&
	       mpa_mulpdu(512, true) == 512 - (6 + 4),
	       "MULPDU with markers subtracts 4 * ceil(EMSS / 512)");
	tap_ok(mpa_mulpdu(0, false) >= DDP_UNTAGGED_HDR + RDMAP_RREQ_LEN &&
	       mpa_mulpdu(1u << 30, false) == 65536 - 6,
	       "MULPDU clamps absurd EMSS values");
	tap_ok((mpa_fpdu_len(mpa_mulpdu(1460, false)) <= 1460) &&
	       (mpa_fpdu_len(mpa_mulpdu(1461, false)) <= 1461),
	       "an FPDU of MULPDU fits the EMSS");
}

static void test_crc_wire_order(void)
{
	const struct golden *g = find_golden("rtr_write");

	tap_ok(iw_crc32c("123456789", 9) == 0xE3069283,
	       "CRC32c check value 123456789 -> 0xE3069283");
	/* Linux siw's zero-length Write RTR ends in eb d3 4c 5f */
	tap_ok(g->len == 20 && g->bytes[16] == 0xeb && g->bytes[17] == 0xd3 &&
	       g->bytes[18] == 0x4c && g->bytes[19] == 0x5f &&
	       iw_crc32c(g->bytes, 16) == 0x5f4cd3eb,
	       "CRC trailer is the value in little-endian octet order");
}

/*
 * Terminates as Linux siw 6.1 sends them on x86 (nibbles swapped, M/D/R
 * in the low bits of octet 2), captured from a siw guest (test/siw),
 * next to the RFC 5040 layout of the same.
 */
static void test_term_siw(void)
{
	/* RDMA Write to an unknown STag: DDP tagged buffer, invalid STag,
	 * M and D, then the segment length and the tagged header */
	static const uint8_t stag[] = {
		0x11, 0x00, 0x03, 0x00, 0x00, 0x40, 0xc1, 0x40, 0x5e, 0xed,
		0x0b, 0x0b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
	};
	/* RDMAP remote operation, catastrophic, M and D (siw: 20 07 03) */
	static const uint8_t cat[] = {
		0x20, 0x07, 0x03, 0x00, 0x00, 0x12, 0x41, 0x41, 0, 0, 0, 0,
		0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0,
	};
	static const uint8_t crc[] = { 0x02, 0x02, 0x00, 0x00 };
	static const uint8_t rtr[] = { 0x02, 0x07, 0x00, 0x00 };
	static const uint8_t rfc[] = {
		0x02, 0x07, 0xc0, 0x00, 0x00, 0x12, 0x41, 0x41, 0, 0, 0, 0,
		0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0,
	};
	struct rdmap_term t;
	struct iw_err err;

	tap_ok(!rdmap_term_parse(stag, sizeof(stag), &t, &err) &&
	       t.layer == 1 && t.etype == 1 && t.ecode == 0 &&
	       t.hdrct == (RDMAP_TERM_M | RDMAP_TERM_D) && t.seg_len == 64 &&
	       t.ddp_hdr_len == DDP_TAGGED_HDR && t.ddp_hdr[2] == 0x5e,
	       "siw Terminate 11 00 03 00: DDP/1/0 with its header copies");
	tap_ok(!rdmap_term_parse(cat, sizeof(cat), &t, &err) &&
	       t.layer == 0 && t.etype == 2 && t.ecode == 7 &&
	       t.hdrct == (RDMAP_TERM_M | RDMAP_TERM_D) &&
	       t.ddp_hdr_len == DDP_UNTAGGED_HDR,
	       "siw Terminate 20 07 03 00: its flag bits show the swapped "
	       "layout, RDMAP/2/7");
	tap_ok(!rdmap_term_parse(crc, sizeof(crc), &t, &err) &&
	       t.layer == 2 && t.etype == 0 && t.ecode == 2 && !t.hdrct,
	       "siw Terminate 02 02 00 00: only the swapped triple is "
	       "defined, MPA CRC error");
	/* ambiguous: RDMAP/2/7 is defined too, so the RFC reading stays */
	tap_ok(!rdmap_term_parse(rtr, sizeof(rtr), &t, &err) &&
	       t.layer == 0 && t.etype == 2 && t.ecode == 7,
	       "siw Terminate 02 07 00 00 reads as RFC 5040 (ambiguous)");
	tap_ok(!rdmap_term_parse(rfc, sizeof(rfc), &t, &err) &&
	       t.layer == 0 && t.etype == 2 && t.ecode == 7 &&
	       t.hdrct == (RDMAP_TERM_M | RDMAP_TERM_D) &&
	       t.ddp_hdr_len == DDP_UNTAGGED_HDR,
	       "RFC 5040 layout 02 07 c0 00 unchanged");
}

/* ---- malformed inputs and their exact errors */

struct bad {
	const char *what;
	int (*run)(struct iw_err *err);
	uint8_t layer, etype, ecode;
};

static uint8_t mbuf[1024];

static size_t mpa_copy(const char *golden)
{
	const struct golden *g = find_golden(golden);

	memcpy(mbuf, g->bytes, g->len);
	return g->len;
}

static int bad_key(struct iw_err *err)
{
	struct mpa_frame f;
	size_t n = mpa_copy("req_v1");

	mbuf[4] = 'X';
	return mpa_frame_parse(mbuf, n, MPA_REQUEST, &f, err);
}

static int bad_key_kind(struct iw_err *err)
{
	struct mpa_frame f;
	size_t n = mpa_copy("rep_v1");

	return mpa_frame_parse(mbuf, n, MPA_REQUEST, &f, err);
}

static int bad_key_early(struct iw_err *err)
{
	struct mpa_frame f;

	/* an HTTP request is refused after 5 octets, not after 20 */
	return mpa_frame_parse((const uint8_t *)"GET /", 5, MPA_REQUEST, &f,
			       err);
}

static int bad_rev(struct iw_err *err, uint8_t rev)
{
	struct mpa_frame f;
	size_t n = mpa_copy("req_v1");

	mbuf[17] = rev;
	return mpa_frame_parse(mbuf, n, MPA_REQUEST, &f, err);
}

static int bad_rev0(struct iw_err *err)
{
	return bad_rev(err, 0);
}

static int bad_rev3(struct iw_err *err)
{
	return bad_rev(err, 3);
}

static int bad_pd_513(struct iw_err *err)
{
	struct mpa_frame f;

	mpa_copy("req_v1");
	iw_put16(mbuf + 18, 513);
	/* decided from the header alone: no need to wait for 513 octets */
	return mpa_frame_parse(mbuf, 20, MPA_REQUEST, &f, err);
}

static int bad_s_short(struct iw_err *err)
{
	struct mpa_frame f;

	mpa_copy("req_v2_no_enhanced");
	mbuf[16] |= MPA_FLAG_S;
	iw_put16(mbuf + 18, 3);
	return mpa_frame_parse(mbuf, 23, MPA_REQUEST, &f, err);
}

/* Feeds one FPDU (from a golden, patched) through the receive stream. */
static int rx_patched(struct iw_err *err, const char *golden, size_t off,
		      uint8_t xor, bool fix_crc)
{
	struct iw_rx rx;
	size_t n = mpa_copy(golden);
	int ret;

	mbuf[off] ^= xor;
	if (fix_crc) {
		uint32_t c = iw_crc32c(mbuf, n - 4);

		mbuf[n - 4] = (uint8_t)c;
		mbuf[n - 3] = (uint8_t)(c >> 8);
		mbuf[n - 2] = (uint8_t)(c >> 16);
		mbuf[n - 1] = (uint8_t)(c >> 24);
	}
	iw_rx_init(&rx, true, false, NULL, NULL);
	ret = iw_rx_feed(&rx, mbuf, n);
	*err = rx.err;
	return ret;
}

static int bad_crc(struct iw_err *err)
{
	return rx_patched(err, "write", 10, 0x01, false);
}

static int bad_crc_trailer(struct iw_err *err)
{
	return rx_patched(err, "send_pad3", 23, 0x80, false);
}

static int bad_ulpdu_short(struct iw_err *err)
{
	struct iw_rx rx;
	/* ULPDU_Length 8: shorter than any DDP header */
	static const uint8_t f[] = { 0, 8, 0xc1, 0x40, 0, 0, 0, 1, 0, 0,
				     0, 0, 0, 0, 0, 0 };

	iw_rx_init(&rx, false, false, NULL, NULL);
	iw_rx_feed(&rx, f, sizeof(f));
	*err = rx.err;
	return rx.state == IW_RX_ERROR ? -EPROTO : 0;
}

static int bad_ulpdu_untagged_short(struct iw_err *err)
{
	/* ULPDU_Length 14 is enough for tagged but not for a Send */
	return rx_patched(err, "rtr_send", 1, 0x12 ^ 0x0e, true);
}

static int bad_ddp_ver(struct iw_err *err, uint8_t v, const char *g)
{
	return rx_patched(err, g, 2, (uint8_t)(1 ^ v), true);
}

static int bad_ddp_v0_tagged(struct iw_err *err)
{
	return bad_ddp_ver(err, 0, "write");
}

static int bad_ddp_v2_tagged(struct iw_err *err)
{
	return bad_ddp_ver(err, 2, "write");
}

static int bad_ddp_v0_untagged(struct iw_err *err)
{
	return bad_ddp_ver(err, 0, "send_pad3");
}

static int bad_ddp_v2_untagged(struct iw_err *err)
{
	return bad_ddp_ver(err, 2, "send_pad3");
}

static int bad_rdmap_v2(struct iw_err *err)
{
	/* RV 01 -> 10 */
	return rx_patched(err, "send_pad3", 3, 0xc0, true);
}

static int bad_opcode(struct iw_err *err)
{
	/* opcode 3 -> 8 (reserved) */
	return rx_patched(err, "send_pad3", 3, 0x03 ^ 0x08, true);
}

static int bad_opcode_15(struct iw_err *err)
{
	return rx_patched(err, "send_pad3", 3, 0x03 ^ 0x0f, true);
}

static int bad_tagged_send(struct iw_err *err)
{
	/* a Send with the T bit */
	return rx_patched(err, "send_se_inv_pad0", 2, 0x80, true);
}

static int bad_qn3(struct iw_err *err)
{
	return rx_patched(err, "send_pad3", 11, 3, true);
}

static int bad_qn_huge(struct iw_err *err)
{
	return rx_patched(err, "send_pad3", 8, 0x80, true);
}

static int bad_qn_mismatch(struct iw_err *err)
{
	/* a Send on the Read Request queue */
	return rx_patched(err, "send_pad3", 11, 1, true);
}

static int bad_rreq_mo(struct iw_err *err)
{
	return rx_patched(err, "read_req", 17, 4, true);
}

static int bad_rreq_not_last(struct iw_err *err)
{
	return rx_patched(err, "read_req", 2, 0x40, true);
}

static int bad_rreq_len(struct iw_err *err)
{
	struct iw_rx rx;
	uint8_t f[64];
	ssize_t n;

	/* a Read Request with 27 octets of RDMAP header */
	n = mpa_fpdu_build(f, sizeof(f), golden_read_req + 2, 18 + 27, true,
			   false, NULL);
	iw_rx_init(&rx, true, false, NULL, NULL);
	iw_rx_feed(&rx, f, (size_t)n);
	*err = rx.err;
	return rx.state == IW_RX_ERROR ? -EPROTO : 0;
}

/* An atomic golden re-framed with `len` octets after its DDP header. */
static int atomic_len(struct iw_err *err, const char *golden, size_t len)
{
	const struct golden *g = find_golden(golden);
	uint8_t u[128] = { 0 }, f[160];
	struct iw_rx rx;
	ssize_t n;

	memcpy(u, g->bytes + 2, iw_get16(g->bytes));
	n = mpa_fpdu_build(f, sizeof(f), u, DDP_UNTAGGED_HDR + len, true,
			   false, NULL);
	iw_rx_init(&rx, true, false, NULL, NULL);
	iw_rx_feed(&rx, f, (size_t)n);
	*err = rx.err;
	return rx.state == IW_RX_ERROR ? -EPROTO : 0;
}

static int bad_areq_51(struct iw_err *err)
{
	return atomic_len(err, "atomic_fetch_add", 51);
}

static int bad_areq_53(struct iw_err *err)
{
	return atomic_len(err, "atomic_cmp_swap", 53);
}

static int bad_aresp_11(struct iw_err *err)
{
	return atomic_len(err, "atomic_resp", 11);
}

static int bad_areq_op1(struct iw_err *err)
{
	/* FetchAdd 0 -> 1, between FetchAdd and CmpSwap */
	return rx_patched(err, "atomic_fetch_add", 2 + 18 + 3, 1, true);
}

static int bad_areq_op15(struct iw_err *err)
{
	return rx_patched(err, "atomic_cmp_swap", 2 + 18 + 3, 0x02 ^ 0x0f,
			  true);
}

static int bad_areq_not_last(struct iw_err *err)
{
	return rx_patched(err, "atomic_fetch_add", 2, 0x40, true);
}

static int bad_areq_mo(struct iw_err *err)
{
	return rx_patched(err, "atomic_fetch_add", 2 + 17, 52, true);
}

static int bad_areq_qn3(struct iw_err *err)
{
	/* an Atomic Request on the Atomic Response queue */
	return rx_patched(err, "atomic_fetch_add", 2 + 9, 4 ^ 3, true);
}

static int bad_areq_qn5(struct iw_err *err)
{
	return rx_patched(err, "atomic_fetch_add", 2 + 9, 4 ^ 5, true);
}

static int bad_aresp_qn4(struct iw_err *err)
{
	return rx_patched(err, "atomic_resp", 2 + 9, 3 ^ 4, true);
}

static int bad_send_qn4(struct iw_err *err)
{
	/* queue 4 exists for Atomic Requests only */
	return rx_patched(err, "send_pad3", 11, 4, true);
}

static int bad_opcode_9(struct iw_err *err)
{
	/* RFC 7306 Immediate Data with SE carries exactly 8 octets */
	return rx_patched(err, "send_pad3", 3, 0x03 ^ 0x09, true);
}

static int bad_opcode_12(struct iw_err *err)
{
	return rx_patched(err, "send_pad3", 3, 0x03 ^ 0x0c, true);
}

static int term_fpdu(struct iw_err *err, const char *golden, size_t cut,
		     uint8_t hdrct)
{
	const struct golden *g = find_golden(golden);
	uint8_t u[128], f[160];
	size_t ul = iw_get16(g->bytes) - cut;
	struct iw_rx rx;
	ssize_t n;

	memcpy(u, g->bytes + 2, ul);
	if (hdrct)
		u[18 + 2] = (uint8_t)(hdrct << 5);
	n = mpa_fpdu_build(f, sizeof(f), u, ul, true, false, NULL);
	iw_rx_init(&rx, true, false, NULL, NULL);
	iw_rx_feed(&rx, f, (size_t)n);
	*err = rx.err;
	return rx.state == IW_RX_ERROR ? -EPROTO : 0;
}

static int bad_term_short(struct iw_err *err)
{
	/* Terminate with 3 octets of control */
	return term_fpdu(err, "terminate", 1, 0);
}

static int bad_term_d_cut(struct iw_err *err)
{
	/* D set, DDP header copy cut by one octet */
	return term_fpdu(err, "terminate_ddp_copy", 1, 0);
}

static int bad_term_r_cut(struct iw_err *err)
{
	/* R set, Read Request copy cut by 10 octets */
	return term_fpdu(err, "terminate_rreq_copy", 10, 0);
}

static int bad_term_r_claimed(struct iw_err *err)
{
	/* D only present, but D+R claimed */
	return term_fpdu(err, "terminate_ddp_copy", 0, 7);
}

static int bad_term_m_no_len(struct iw_err *err)
{
	/* M set without room for the segment length */
	return term_fpdu(err, "terminate", 0, RDMAP_TERM_M);
}

static int bad_hdr_truncated(struct iw_err *err)
{
	struct ddp_hdr h;
	int ret;

	/* a truncated header buffer asks for more; never reads past it */
	ret = ddp_hdr_parse(golden_write + 2, 13, &h, err);
	if (ret != -EAGAIN)
		return 0;
	ret = ddp_hdr_parse(golden_send_pad3 + 2, 17, &h, err);
	if (ret != -EAGAIN)
		return 0;
	return iw_fail(err, 9, 9, 9, "truncated headers asked for more");
}

static const struct bad bads[] = {
	{ "MPA wrong key", bad_key, 2, 0, 4 },
	{ "MPA Reply key where a Request is due", bad_key_kind, 2, 0, 4 },
	{ "MPA key checked on a 5-octet prefix", bad_key_early, 2, 0, 4 },
	{ "MPA rev 0", bad_rev0, 2, 0, 4 },
	{ "MPA rev 3", bad_rev3, 2, 0, 4 },
	{ "MPA PD_Length 513", bad_pd_513, 2, 0, 4 },
	{ "MPA S bit with PD_Length 3", bad_s_short, 2, 0, 4 },
	{ "bad CRC (payload octet flipped)", bad_crc, 2, 0, 2 },
	{ "bad CRC (trailer octet flipped)", bad_crc_trailer, 2, 0, 2 },
	{ "ULPDU_Length below any DDP header", bad_ulpdu_short, 1, 0, 0 },
	{ "ULPDU_Length below untagged header", bad_ulpdu_untagged_short,
	  1, 0, 0 },
	{ "DDP version 0, tagged", bad_ddp_v0_tagged, 1, 1, 4 },
	{ "DDP version 2, tagged", bad_ddp_v2_tagged, 1, 1, 4 },
	{ "DDP version 0, untagged", bad_ddp_v0_untagged, 1, 2, 6 },
	{ "DDP version 2, untagged", bad_ddp_v2_untagged, 1, 2, 6 },
	{ "RDMAP version 2", bad_rdmap_v2, 0, 2, 5 },
	{ "reserved opcode 8", bad_opcode, 0, 2, 6 },
	{ "reserved opcode 15", bad_opcode_15, 0, 2, 6 },
	{ "Send with T bit", bad_tagged_send, 0, 2, 6 },
	{ "untagged QN 3", bad_qn3, 1, 2, 1 },
	{ "untagged QN 0x80000000", bad_qn_huge, 1, 2, 1 },
	{ "Send on QN 1", bad_qn_mismatch, 0, 2, 6 },
	{ "Read Request with MO 4", bad_rreq_mo, 1, 2, 4 },
	{ "Read Request without L", bad_rreq_not_last, 0, 2, 7 },
	{ "Read Request of 27 octets", bad_rreq_len, 0, 2, 7 },
	{ "Terminate of 3 octets", bad_term_short, 0, 2, 7 },
	{ "Terminate D copy cut short", bad_term_d_cut, 0, 2, 7 },
	{ "Terminate R copy cut short", bad_term_r_cut, 0, 2, 7 },
	{ "Terminate claims R without room", bad_term_r_claimed, 0, 2, 7 },
	{ "Terminate M without segment length", bad_term_m_no_len, 0, 2, 7 },
	{ "reserved opcode 9", bad_opcode_9, 0, 2, 6 },
	{ "reserved opcode 12", bad_opcode_12, 0, 2, 6 },
	{ "Atomic Request of 51 octets", bad_areq_51, 0, 2, 6 },
	{ "Atomic Request of 53 octets", bad_areq_53, 0, 2, 6 },
	{ "Atomic Response of 11 octets", bad_aresp_11, 0, 2, 6 },
	{ "atomic operation 1", bad_areq_op1, 0, 2, 6 },
	{ "atomic operation 15", bad_areq_op15, 0, 2, 6 },
	{ "Atomic Request without L", bad_areq_not_last, 0, 2, 6 },
	{ "Atomic Request with MO 52", bad_areq_mo, 0, 2, 6 },
	{ "Atomic Request on QN 3", bad_areq_qn3, 0, 2, 6 },
	{ "Atomic Request on QN 5", bad_areq_qn5, 1, 2, 1 },
	{ "Atomic Response on QN 4", bad_aresp_qn4, 0, 2, 6 },
	{ "Send on QN 4", bad_send_qn4, 1, 2, 1 },
	{ "truncated DDP headers ask for more", bad_hdr_truncated, 9, 9, 9 },
};

static void test_malformed(void)
{
	size_t i;

	for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		const struct bad *b = &bads[i];
		struct iw_err err = { 0 };
		int ret = b->run(&err);

		tap_ok(ret == -EPROTO && err.layer == b->layer &&
		       err.etype == b->etype && err.ecode == b->ecode,
		       "malformed: %s -> %u/%u/%u (%s)", b->what, b->layer,
		       b->etype, b->ecode,
		       iw_err_str(b->layer, b->etype, b->ecode));
		if (ret != -EPROTO || err.layer != b->layer ||
		    err.etype != b->etype || err.ecode != b->ecode)
			tap_diag("got ret %d, %u/%u/%u (%s)", ret, err.layer,
				 err.etype, err.ecode,
				 err.why ? err.why : "-");
	}
}

/* An error is sticky: later octets change nothing. */
static void test_error_sticky(void)
{
	struct iw_rx rx;
	struct iw_err first;
	uint8_t *buf;
	size_t n;

	mpa_copy("write");
	mbuf[10] ^= 1;
	iw_rx_init(&rx, true, false, NULL, NULL);
	iw_rx_feed(&rx, mbuf, find_golden("write")->len);
	first = rx.err;
	iw_rx_feed(&rx, golden_rtr_write, sizeof(golden_rtr_write));
	iw_rx_want(&rx, &buf, &n);
	tap_ok(rx.state == IW_RX_ERROR && n == 0 &&
	       rx.err.ecode == first.ecode && first.ecode == MPA_ECODE_CRC &&
	       iw_rx_advance(&rx, 1) == -EPROTO,
	       "first error wins and the stream stays failed");
}

/* Builders refuse what the wire cannot carry. */
static void test_build_limits(void)
{
	struct mpa_frame f = { .kind = MPA_REQUEST, .rev = 2,
			       .enhanced = true };
	uint8_t buf[600], pd[600] = { 0 };

	tap_ok(mpa_frame_build(buf, sizeof(buf), &f, pd, 508) == 532 &&
	       mpa_frame_build(buf, sizeof(buf), &f, pd, 509) == -EINVAL,
	       "MPA build: 508 ULP octets + enhanced block fit, 509 do not");
	f.rev = 1;
	tap_ok(mpa_frame_build(buf, sizeof(buf), &f, pd, 0) == -EINVAL,
	       "MPA build: enhanced block needs rev 2");
	f.enhanced = false;
	f.reject = true;
	tap_ok(mpa_frame_build(buf, sizeof(buf), &f, pd, 0) == -EINVAL,
	       "MPA build: R bit only in a Reply");
	f.kind = MPA_REPLY;
	tap_ok(mpa_frame_build(buf, 19, &f, pd, 0) == -ENOSPC,
	       "MPA build: short buffer -> -ENOSPC");
	tap_ok(mpa_fpdu_build(buf, sizeof(buf), pd, 70000, true, false,
			      NULL) == -EINVAL &&
	       mpa_fpdu_build(buf, 10, pd, 18, true, false, NULL) == -ENOSPC,
	       "FPDU build: ULPDU over 65535 -> -EINVAL, short -> -ENOSPC");
}

static void test_err_names(void)
{
	tap_ok(!strcmp(iw_err_str(1, 2, 3),
		       "DDP untagged buffer: invalid MSN (MSN range is not valid)") &&
	       !strcmp(iw_err_str(2, 0, 7), "MPA: no matching RTR model") &&
	       !strcmp(iw_err_str(0, 0, 0x42),
		       "RDMAP local catastrophic error") &&
	       !strcmp(iw_err_str(9, 9, 9), "unknown iWARP error"),
	       "error triples have RFC names");
	tap_ok(!strcmp(rdmap_opcode_str(6), "Send with SE and Invalidate") &&
	       !strcmp(rdmap_opcode_str(12), "reserved") &&
	       rdmap_hdr_len(RDMAP_READ_REQ) == 46 &&
	       rdmap_hdr_len(RDMAP_WRITE) == 14 && rdmap_hdr_len(12) == 0,
	       "opcode table: names and header sizes");
	tap_ok(!strcmp(rdmap_opcode_str(10), "Atomic Request") &&
	       !strcmp(rdmap_opcode_str(11), "Atomic Response") &&
	       !strcmp(rdmap_opcode_str(8), "Immediate Data") &&
	       !strcmp(rdmap_opcode_str(9), "Immediate Data with SE") &&
	       rdmap_hdr_len(RDMAP_ATOMIC_REQ) == 70 &&
	       rdmap_hdr_len(RDMAP_ATOMIC_RESP) == 30 &&
	       rdmap_hdr_len(RDMAP_IMM) == 26 && rdmap_hdr_len(RDMAP_IMM_SE) == 26,
	       "opcode table: RFC 7306 atomics and Immediate Data");
}

/* Atomic header codecs beyond the golden round trips. */
static void test_atomic_codec(void)
{
	const struct golden *g = find_golden("atomic_fetch_add");
	struct rdmap_areq a = {
		.op = RDMAP_ATOMIC_FETCH_ADD, .req_id = 7, .stag = 0x0badf00d,
		.to = 0x1000, .add_swap = 0x0101010101010101ull,
		.add_swap_mask = 0x8000000080000000ull,
	}, b;
	struct rdmap_aresp r = { 1, 2 };
	struct ddp_hdr h = {
		.last = true, .ddp_ver = DDP_VERSION,
		.rdmap_ver = RDMAP_VERSION, .opcode = RDMAP_ATOMIC_REQ,
		.qn = DDP_QN_AREQ, .msn = 1,
	};
	struct iw_err err;
	uint8_t buf[128], p[RDMAP_AREQ_LEN];

	tap_ok(ddp_hdr_build(buf, sizeof(buf), &h) == DDP_UNTAGGED_HDR &&
	       rdmap_areq_build(buf + 18, sizeof(buf) - 18, &a) == 52 &&
	       !memcmp(buf, g->bytes + 2, 70),
	       "Atomic Request built from fields matches the golden octets");
	memcpy(p, g->bytes + 20, sizeof(p));
	p[0] = 0xff;
	p[3] |= 0xf0;
	tap_ok(rdmap_areq_parse(p, sizeof(p), &b, &err) == 0 &&
	       b.op == RDMAP_ATOMIC_FETCH_ADD && b.req_id == 7 &&
	       b.add_swap_mask == a.add_swap_mask,
	       "Atomic Request: reserved bits are ignored");
	a.op = 1;
	tap_ok(rdmap_areq_build(buf, sizeof(buf), &a) == -EINVAL,
	       "Atomic Request build refuses atomic operation 1");
	a.op = RDMAP_ATOMIC_CMP_SWAP;
	tap_ok(rdmap_areq_build(buf, 51, &a) == -ENOSPC &&
	       rdmap_aresp_build(buf, 11, &r) == -ENOSPC,
	       "atomic builders: short buffer -> -ENOSPC");
	h.opcode = 12;
	tap_ok(ddp_hdr_build(buf, sizeof(buf), &h) == -EINVAL,
	       "DDP header build refuses reserved opcode 12");
}

int main(void)
{
	test_crc_wire_order();
	test_term_siw();
	test_mpa_golden();
	test_fpdu_golden();
	test_hdr_build();
	test_rechunk();
	test_markers();
	test_mulpdu();
	test_malformed();
	test_error_sticky();
	test_build_limits();
	test_err_names();
	test_atomic_codec();
	return tap_done();
}
