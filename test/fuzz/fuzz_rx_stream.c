/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer: the FPDU stream consumer. Octet 0 picks CRC/markers/discard,
 * octet 1 seeds the chunking; the rest is the stream. Fed whole through
 * iw_rx_feed (whole FPDUs on the iw_rx_whole path) and in chunks one
 * state at a time (iw_rx_want/iw_rx_advance only), the two runs must
 * report exactly the same events.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/crc32c.h"
#include "iwarp/rx.h"

struct sink {
	uint8_t *buf;		/* exact-size payload room per segment */
	uint32_t hash;
	bool discard;
	unsigned int events;
};

static int sink_start(void *arg, const struct iw_rx_seg *s,
		      struct iw_rx_dst *dst, struct iw_err *err)
{
	struct sink *k = arg;

	free(k->buf);
	k->buf = NULL;
	k->hash = iw_crc32c_update(k->hash, s->raw, s->raw_len);
	k->events++;
	if (!k->discard && s->payload_len) {
		k->buf = malloc(s->payload_len);
		dst->buf = k->buf;
		dst->len = s->payload_len;
	}
	return 0;
}

static int sink_done(void *arg, const struct iw_rx_seg *s,
		     struct iw_err *err)
{
	struct sink *k = arg;

	if (k->buf)
		k->hash = iw_crc32c_update(k->hash, k->buf, s->payload_len);
	k->events++;
	return 0;
}

static const struct iw_rx_ops sink_ops = {
	.seg_start = sink_start,
	.seg_done = sink_done,
};

/* iw_rx_feed without the whole-FPDU path */
static int feed_steps(struct iw_rx *rx, const uint8_t *p, size_t len)
{
	while (len) {
		uint8_t *buf;
		size_t n;

		iw_rx_want(rx, &buf, &n);
		if (!n)
			return -EPROTO;
		if (n > len)
			n = len;
		memmove(buf, p, n);
		if (iw_rx_advance(rx, n))
			return -EPROTO;
		p += n;
		len -= n;
	}
	return rx->state == IW_RX_ERROR ? -EPROTO : 0;
}

static void run(const uint8_t *p, size_t len, uint8_t mode, uint8_t seed,
		struct sink *k, struct iw_rx *rx)
{
	unsigned int s = seed;

	memset(k, 0, sizeof(*k));
	k->discard = mode & 4;
	iw_rx_init(rx, mode & 1, mode & 2, &sink_ops, k);
	while (len) {
		size_t n = seed ? (size_t)(rand_r(&s) % 64) + 1 : len;

		if (n > len)
			n = len;
		if (seed ? feed_steps(rx, p, n) : iw_rx_feed(rx, p, n))
			break;
		p += n;
		len -= n;
	}
	free(k->buf);
	k->buf = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sink a, b;
	struct iw_rx *ra, *rb;
	uint8_t *copy;

	if (size < 2)
		return 0;
	ra = malloc(sizeof(*ra));
	rb = malloc(sizeof(*rb));
	copy = malloc(size - 2 ? size - 2 : 1);
	memcpy(copy, data + 2, size - 2);
	run(copy, size - 2, data[0], 0, &a, ra);
	run(copy, size - 2, data[0], data[1] | 1, &b, rb);
	if (a.hash != b.hash || a.events != b.events ||
	    ra->state != rb->state || ra->segs != rb->segs ||
	    (ra->state == IW_RX_ERROR &&
	     (ra->err.layer != rb->err.layer ||
	      ra->err.etype != rb->err.etype ||
	      ra->err.ecode != rb->err.ecode)))
		abort();
	free(copy);
	free(ra);
	free(rb);
	return 0;
}
