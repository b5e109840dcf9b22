/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA/DDP receive stream: header -> payload -> trailer, one enum and a
 * switch, consuming whatever octets arrive (RFC 5044 §4-§6, RFC 5041 §4).
 */
#include <errno.h>
#include <string.h>

#include "iwarp/crc32c.h"
#include "iwarp/rx.h"

static const char *const iw_rx_state_names[] = {
	[IW_RX_HDR] = "header",
	[IW_RX_PAYLOAD] = "payload",
	[IW_RX_TRAILER] = "trailer",
	[IW_RX_STALLED] = "stalled",
	[IW_RX_ERROR] = "error",
};

const char *iw_rx_state_str(enum iw_rx_state s)
{
	if ((unsigned int)s >= sizeof(iw_rx_state_names) /
				sizeof(iw_rx_state_names[0]))
		return "invalid";
	return iw_rx_state_names[s];
}

static void iw_rx_next_fpdu(struct iw_rx *rx)
{
	rx->state = IW_RX_HDR;
	rx->hdr_have = 0;
	rx->hdr_need = MPA_FPDU_HDR;
	rx->in_fpdu = false;
}

void iw_rx_init(struct iw_rx *rx, bool crc, bool markers,
		const struct iw_rx_ops *ops, void *arg)
{
	memset(rx, 0, sizeof(*rx));
	rx->crc = crc;
	rx->markers = markers;
	rx->ops = ops;
	rx->arg = arg;
	iw_rx_next_fpdu(rx);
}


bool iw_rx_at_boundary(const struct iw_rx *rx)
{
	return rx->state == IW_RX_HDR && !rx->in_fpdu;
}

static int iw_rx_fail(struct iw_rx *rx, uint8_t layer, uint8_t etype,
		      uint8_t ecode, const char *why)
{
	rx->state = IW_RX_ERROR;
	return iw_fail(&rx->err, layer, etype, ecode, why);
}

/* An LLP error, with the value received and the one expected. */
static int iw_rx_fail_llp(struct iw_rx *rx, uint8_t ecode, const char *why,
			  uint64_t got, uint64_t want)
{
	rx->state = IW_RX_ERROR;
	return iw_fail_v(&rx->err, IW_LAYER_LLP, MPA_ETYPE, ecode, why, got,
			 want);
}

/* With markers, stream positions 0..3 modulo 512 always hold a marker. */
static size_t iw_rx_marker_left(const struct iw_rx *rx)
{
	unsigned int off = rx->pos % MPA_MARKER_INTERVAL;

	return rx->markers && off < MPA_MARKER_LEN ? MPA_MARKER_LEN - off : 0;
}

void iw_rx_want(struct iw_rx *rx, uint8_t **buf, size_t *len)
{
	size_t mk = iw_rx_marker_left(rx), n;

	*buf = NULL;
	*len = 0;
	if (rx->state == IW_RX_ERROR || rx->state == IW_RX_STALLED)
		return;
	if (mk) {
		*buf = rx->marker + (MPA_MARKER_LEN - mk);
		*len = mk;
		return;
	}
	switch (rx->state) {
	case IW_RX_HDR:
		*buf = rx->hdr + rx->hdr_have;
		n = rx->hdr_need - rx->hdr_have;
		break;
	case IW_RX_PAYLOAD:
		*buf = rx->discard ? rx->scratch : rx->dst.buf;
		n = rx->discard ? sizeof(rx->scratch) : rx->dst.len;
		if (n > rx->payload_left)
			n = rx->payload_left;
		break;
	case IW_RX_TRAILER:
		*buf = rx->trailer + rx->trailer_have;
		n = rx->trailer_need - rx->trailer_have;
		break;
	default:
		return;
	}
	if (rx->markers &&
	    n > MPA_MARKER_INTERVAL - rx->pos % MPA_MARKER_INTERVAL)
		n = MPA_MARKER_INTERVAL - rx->pos % MPA_MARKER_INTERVAL;
	*len = n;
}

static int iw_rx_marker_done(struct iw_rx *rx)
{
	uint64_t at = rx->pos - MPA_MARKER_LEN;
	/* RFC 5044 §5: receivers treat the two low FPDUPTR bits as zero */
	uint16_t ptr = iw_get16(rx->marker + 2) & ~3u;

	if (ptr != (uint16_t)(at - rx->fpdu_start))
		return iw_rx_fail_llp(rx, MPA_ECODE_MARKER, "FPDUPTR mismatch",
				      ptr, (uint16_t)(at - rx->fpdu_start));
	return 0;
}

/* The largest header buffered must fit rx->hdr. */
_Static_assert(RDMAP_AREQ_LEN <= RDMAP_TERM_MAX, "Atomic Request header");

/* Octets of RDMAP header beyond DDP that are worth buffering. */
static size_t iw_rx_extra(unsigned int op, size_t avail)
{
	size_t cap;

	switch (op) {
	case RDMAP_READ_REQ:
		cap = RDMAP_RREQ_LEN;
		break;
	case RDMAP_TERMINATE:
		cap = RDMAP_TERM_MAX;
		break;
	case RDMAP_ATOMIC_REQ:
		cap = RDMAP_AREQ_LEN;
		break;
	case RDMAP_ATOMIC_RESP:
		cap = RDMAP_ARESP_LEN;
		break;
	case RDMAP_IMM:
	case RDMAP_IMM_SE:
		cap = RDMAP_IMM_LEN;
		break;
	default:
		cap = 0;
		break;
	}
	return avail < cap ? avail : cap;
}

static void iw_rx_to_trailer(struct iw_rx *rx)
{
	rx->state = IW_RX_TRAILER;
	rx->trailer_have = 0;
	rx->trailer_need = mpa_pad(rx->seg.ulpdu_len) + MPA_CRC_LEN;
}

/* Asks for the next destination while the current one is full. */
static int iw_rx_refill(struct iw_rx *rx)
{
	struct iw_rx_seg *seg = &rx->seg;

	while (!rx->discard && !rx->dst.len && rx->payload_left) {
		uint32_t off = seg->payload_len - (uint32_t)rx->payload_left;

		if (!rx->dst.buf || !rx->ops || !rx->ops->seg_more) {
			rx->discard = true;
			break;
		}
		if (rx->ops->seg_more(rx->arg, seg, off, &rx->dst, &rx->err)) {
			rx->state = IW_RX_ERROR;
			return -EPROTO;
		}
		if (!rx->dst.buf || !rx->dst.len)
			rx->discard = true;	/* nothing more offered */
	}
	return 0;
}

static int iw_rx_start_payload(struct iw_rx *rx)
{
	struct iw_rx_seg *seg = &rx->seg;
	int ret;

	seg->payload_len = seg->ulpdu_len - (uint32_t)(rx->hdr_need -
						       MPA_FPDU_HDR);
	seg->raw = rx->hdr + MPA_FPDU_HDR;
	seg->raw_len = rx->hdr_need - MPA_FPDU_HDR;
	rx->dst.buf = NULL;
	rx->dst.len = 0;
	ret = rx->ops && rx->ops->seg_start ?
		rx->ops->seg_start(rx->arg, seg, &rx->dst, &rx->err) : 0;
	if (ret == -EAGAIN) {
		rx->state = IW_RX_STALLED;	/* no octet consumed past it */
		return 0;
	}
	if (ret) {
		rx->state = IW_RX_ERROR;
		return -EPROTO;
	}
	rx->discard = rx->dst.buf == NULL;
	rx->payload_left = seg->payload_len;
	rx->state = IW_RX_PAYLOAD;
	if (!rx->payload_left) {
		iw_rx_to_trailer(rx);
		return 0;
	}
	return iw_rx_refill(rx);
}

int iw_rx_resume(struct iw_rx *rx)
{
	if (rx->state != IW_RX_STALLED)
		return rx->state == IW_RX_ERROR ? -EPROTO : 0;
	return iw_rx_start_payload(rx);
}

/* The whole header is in: validate it, then hand over to payload. */
static int iw_rx_hdr_done(struct iw_rx *rx)
{
	struct iw_rx_seg *seg = &rx->seg;
	const uint8_t *ddp = rx->hdr + MPA_FPDU_HDR;
	size_t base = seg->hdr.tagged ? DDP_TAGGED_HDR : DDP_UNTAGGED_HDR;
	size_t extra = rx->hdr_need - MPA_FPDU_HDR - base;
	int ret = 0;

	if (seg->hdr.opcode == RDMAP_READ_REQ)
		ret = rdmap_rreq_parse(ddp + base, seg->ulpdu_len - base,
				       &seg->rreq, &rx->err);
	else if (seg->hdr.opcode == RDMAP_TERMINATE)
		ret = rdmap_term_parse(ddp + base, extra, &seg->term,
				       &rx->err);
	else if (seg->hdr.opcode == RDMAP_ATOMIC_REQ)
		ret = rdmap_areq_parse(ddp + base, seg->ulpdu_len - base,
				       &seg->areq, &rx->err);
	else if (seg->hdr.opcode == RDMAP_ATOMIC_RESP)
		ret = rdmap_aresp_parse(ddp + base, seg->ulpdu_len - base,
					&seg->aresp, &rx->err);
	else if (seg->hdr.opcode == RDMAP_IMM ||
		 seg->hdr.opcode == RDMAP_IMM_SE)
		ret = rdmap_imm_parse(ddp + base, seg->ulpdu_len - base,
				      &seg->imm, &rx->err);
	if (ret)
		goto fail;
	return iw_rx_start_payload(rx);
fail:
	rx->state = IW_RX_ERROR;
	return -EPROTO;
}

/*
 * Header octets arrive in steps: ULPDU_Length; the control word, whose T
 * bit fixes the DDP header size; the DDP header, validated once complete
 * (so a Terminate can always copy it, RFC 5040 figure 10); then the
 * RDMAP header of a Read Request, Terminate or atomic.
 */
static int iw_rx_hdr_progress(struct iw_rx *rx)
{
	struct iw_rx_seg *seg = &rx->seg;
	size_t base;

	seg->raw_len = rx->hdr_have - MPA_FPDU_HDR;
	if (rx->hdr_have < rx->hdr_need)
		return 0;
	if (rx->hdr_need == MPA_FPDU_HDR) {
		memset(seg, 0, sizeof(*seg));
		seg->raw = rx->hdr + MPA_FPDU_HDR;
		seg->ulpdu_len = iw_get16(rx->hdr);
		if (seg->ulpdu_len < DDP_TAGGED_HDR)
			return iw_rx_fail(rx, IW_LAYER_DDP,
					  DDP_ETYPE_CATASTROPHIC, 0,
					  "ULPDU shorter than any DDP header");
		rx->hdr_need = MPA_FPDU_HDR + 2;
		return 0;
	}
	base = ddp_hdr_size(rx->hdr[MPA_FPDU_HDR]);
	if (rx->hdr_need == MPA_FPDU_HDR + 2) {
		if (seg->ulpdu_len < base)
			return iw_rx_fail(rx, IW_LAYER_DDP,
					  DDP_ETYPE_CATASTROPHIC, 0,
					  "ULPDU shorter than its DDP header");
		rx->hdr_need = MPA_FPDU_HDR + base;
		return 0;
	}
	if (rx->hdr_need == MPA_FPDU_HDR + base) {
		if (ddp_hdr_parse(rx->hdr + MPA_FPDU_HDR, base, &seg->hdr,
				  &rx->err)) {
			rx->state = IW_RX_ERROR;
			return -EPROTO;
		}
		rx->hdr_need += iw_rx_extra(seg->hdr.opcode,
					    seg->ulpdu_len - base);
		if (rx->hdr_have < rx->hdr_need)
			return 0;
	}
	return iw_rx_hdr_done(rx);
}

static int iw_rx_trailer_done(struct iw_rx *rx)
{
	const uint8_t *c = rx->trailer + rx->trailer_need - MPA_CRC_LEN;
	uint32_t got = (uint32_t)c[0] | (uint32_t)c[1] << 8 |
		       (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24;

	if (rx->crc && got != iw_crc32c_final(rx->crc_acc))
		return iw_rx_fail_llp(rx, MPA_ECODE_CRC, "CRC mismatch", got,
				      iw_crc32c_final(rx->crc_acc));
	rx->segs++;
	iw_rx_next_fpdu(rx);
	if (rx->ops && rx->ops->seg_done &&
	    rx->ops->seg_done(rx->arg, &rx->seg, &rx->err)) {
		rx->state = IW_RX_ERROR;
		return -EPROTO;
	}
	return 0;
}

static void iw_rx_crc(struct iw_rx *rx, const uint8_t *p, size_t n)
{
	if (rx->crc)
		rx->crc_acc = iw_crc32c_update(rx->crc_acc, p, n);
}

/* n payload octets arrived at buf, where the stream asked for them. */
static int iw_rx_payload_more(struct iw_rx *rx, const uint8_t *buf, size_t n)
{
	iw_rx_crc(rx, buf, n);
	rx->payload_left -= n;
	if (!rx->discard) {
		rx->dst.buf += n;
		rx->dst.len -= n;
	}
	if (!rx->payload_left) {
		iw_rx_to_trailer(rx);
		return 0;
	}
	return iw_rx_refill(rx);
}

static int iw_rx_trailer_more(struct iw_rx *rx, const uint8_t *buf, size_t n)
{
	size_t pad = rx->trailer_need - MPA_CRC_LEN;

	/* pad octets are covered by the CRC, the CRC itself not */
	if (rx->trailer_have < pad)
		iw_rx_crc(rx, buf, n < pad - rx->trailer_have ?
				   n : pad - rx->trailer_have);
	rx->trailer_have += n;
	if (rx->trailer_have < rx->trailer_need)
		return 0;
	return iw_rx_trailer_done(rx);
}

int iw_rx_advance(struct iw_rx *rx, size_t n)
{
	uint8_t *buf;
	size_t len;
	bool marker;

	iw_rx_want(rx, &buf, &len);
	if (rx->state == IW_RX_ERROR)
		return -EPROTO;
	if (n == 0)
		return 0;
	if (rx->state == IW_RX_STALLED)
		return -EINVAL;	/* it asked for nothing */
	if (n > len)
		return -EINVAL;
	if (!rx->in_fpdu) {
		rx->in_fpdu = true;
		rx->fpdu_start = rx->pos;
		rx->crc_acc = IW_CRC32C_INIT;
	}
	marker = iw_rx_marker_left(rx) != 0;
	rx->pos += n;
	if (marker) {
		iw_rx_crc(rx, buf, n);
		if (rx->pos % MPA_MARKER_INTERVAL == MPA_MARKER_LEN)
			return iw_rx_marker_done(rx);
		return 0;
	}
	switch (rx->state) {
	case IW_RX_HDR:
		iw_rx_crc(rx, buf, n);
		rx->hdr_have += n;
		return iw_rx_hdr_progress(rx);
	case IW_RX_PAYLOAD:
		return iw_rx_payload_more(rx, buf, n);
	case IW_RX_TRAILER:
		return iw_rx_trailer_more(rx, buf, n);
	default:
		return -EPROTO;
	}
}

/*
 * The length of the FPDU at p if all of it is in the avail octets there
 * and iw_rx_whole may take it; else 0. Not with markers, whose positions
 * the general path keeps, and not for a header in error, which the
 * general path names.
 */
size_t iw_rx_whole_len(const struct iw_rx *rx, const uint8_t *p,
		       size_t avail)
{
	size_t fpdu;
	uint16_t ulen;

	if (rx->state != IW_RX_HDR || rx->hdr_have || rx->markers ||
	    avail < MPA_FPDU_HDR + 2)
		return 0;
	ulen = iw_get16(p);
	if (ulen < ddp_hdr_size(p[MPA_FPDU_HDR]))
		return 0;
	fpdu = mpa_fpdu_len(ulen);
	return avail < fpdu ? 0 : fpdu;
}

/* Places the payload at q, destination by destination; returns where
 * the trailer starts, or NULL when no destination was found. */
static const uint8_t *iw_rx_whole_payload(struct iw_rx *rx, const uint8_t *q)
{
	while (rx->state == IW_RX_PAYLOAD) {
		size_t n = rx->payload_left;

		if (!rx->discard) {
			if (n > rx->dst.len)
				n = rx->dst.len;
			memcpy(rx->dst.buf, q, n);
			rx->dst.buf += n;
			rx->dst.len -= n;
		}
		q += n;
		rx->pos += n;
		rx->payload_left -= n;
		if (!rx->payload_left)
			iw_rx_to_trailer(rx);
		else if (iw_rx_refill(rx))
			return NULL;
	}
	return q;
}

/*
 * Takes the FPDU of iw_rx_whole_len() octets at p with the same steps as
 * octets arriving one state at a time (the header through
 * iw_rx_hdr_progress, payload placed before the CRC is known), without
 * a want/advance round per field. *used is all of it, or only the header
 * when the payload has no destination yet (stalled).
 */
int iw_rx_whole(struct iw_rx *rx, const uint8_t *p, size_t fpdu,
		size_t *used)
{
	uint16_t ulen = iw_get16(p);
	size_t base = ddp_hdr_size(p[MPA_FPDU_HDR]);
	size_t pad = mpa_pad(ulen), hlen;
	const uint8_t *q;
	int ret = 0;

	hlen = MPA_FPDU_HDR + base +
	       iw_rx_extra(p[MPA_FPDU_HDR + 1] & DDP_CTRL_OP, ulen - base);
	*used = fpdu;
	rx->in_fpdu = true;
	rx->fpdu_start = rx->pos;
	memcpy(rx->hdr, p, hlen);
	/* each step sets the next hdr_need, never beyond hlen */
	while (!ret && rx->state == IW_RX_HDR && rx->hdr_need <= hlen) {
		rx->hdr_have = rx->hdr_need;
		ret = iw_rx_hdr_progress(rx);
	}
	rx->pos = rx->fpdu_start + rx->hdr_have;
	if (ret || rx->state == IW_RX_ERROR)
		return -EPROTO;
	if (rx->state == IW_RX_HDR)	/* cannot be: the steps end at hlen */
		return iw_rx_fail(rx, IW_LAYER_LLP, MPA_ETYPE, MPA_ECODE_CLOSED,
				  "header steps past the FPDU");
	if (rx->state == IW_RX_STALLED) {
		/* the payload waits for a destination: stop after the
		 * header, as the general path does */
		*used = hlen;
		rx->crc_acc = rx->crc ? iw_crc32c_update(IW_CRC32C_INIT, p,
							 hlen) :
					IW_CRC32C_INIT;
		return 0;
	}
	q = iw_rx_whole_payload(rx, p + hlen);
	if (!q)
		return -EPROTO;
	memcpy(rx->trailer, q, pad + MPA_CRC_LEN);
	rx->trailer_have = rx->trailer_need;
	rx->pos += pad + MPA_CRC_LEN;
	if (rx->crc)
		rx->crc_acc = iw_crc32c_update(IW_CRC32C_INIT, p,
					       MPA_FPDU_HDR + ulen + pad);
	return iw_rx_trailer_done(rx);
}

int iw_rx_feed(struct iw_rx *rx, const uint8_t *p, size_t len)
{
	while (len) {
		uint8_t *buf;
		size_t n = iw_rx_whole_len(rx, p, len), used;
		int ret;

		if (n) {
			ret = iw_rx_whole(rx, p, n, &used);
			if (ret)
				return ret;
			p += used;
			len -= used;
			continue;
		}
		iw_rx_want(rx, &buf, &n);
		if (!n)
			return rx->state == IW_RX_STALLED ? -EAGAIN : -EPROTO;
		if (n > len)
			n = len;
		memmove(buf, p, n);
		ret = iw_rx_advance(rx, n);
		if (ret)
			return ret;
		p += n;
		len -= n;
	}
	return rx->state == IW_RX_ERROR ? -EPROTO : 0;
}
