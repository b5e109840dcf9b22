/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * MPA codecs: Request/Reply frames (RFC 5044 §7.1 with the RFC 6581 §9
 * enhanced block), FPDU framing (RFC 5044 §4) and markers (§5).
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "iwarp/crc32c.h"
#include "iwarp/wire.h"

_Static_assert(sizeof(MPA_KEY_REQ) - 1 == MPA_KEY_LEN, "MPA key length");
_Static_assert(sizeof(MPA_KEY_REP) - 1 == MPA_KEY_LEN, "MPA key length");

#define MPA_LLP_FAIL(err, code, why) \
	iw_fail(err, IW_LAYER_LLP, MPA_ETYPE, code, why)

ssize_t mpa_frame_len(const uint8_t *p, size_t len)
{
	if (len < MPA_HDR_LEN)
		return -EAGAIN;
	return MPA_HDR_LEN + iw_get16(p + 18);
}

static int mpa_parse_enhanced(const uint8_t *p, struct mpa_frame *f)
{
	uint16_t ird = iw_get16(p), ord = iw_get16(p + 2);

	f->p2p = ird & MPA_ENH_A;
	f->rtr = (ird & MPA_ENH_B ? MPA_RTR_SEND : 0) |
		 (ord & MPA_ENH_C ? MPA_RTR_WRITE : 0) |
		 (ord & MPA_ENH_D ? MPA_RTR_READ : 0);
	f->ird = ird & MPA_ENH_DEPTH;
	f->ord = ord & MPA_ENH_DEPTH;
	return 0;
}

/*
 * The key is checked on as many octets as are present, so a stream that
 * is not MPA fails at once instead of waiting for 20 octets.
 */
int mpa_frame_parse(const uint8_t *p, size_t len, enum mpa_kind kind,
		    struct mpa_frame *f, struct iw_err *err)
{
	const char *key = kind == MPA_REQUEST ? MPA_KEY_REQ : MPA_KEY_REP;
	size_t klen = len < MPA_KEY_LEN ? len : MPA_KEY_LEN;
	uint8_t flags;

	if (memcmp(p, key, klen))
		return MPA_LLP_FAIL(err, MPA_ECODE_REQ_REP, "wrong MPA key");
	if (len < MPA_HDR_LEN)
		return -EAGAIN;

	memset(f, 0, sizeof(*f));
	f->kind = kind;
	flags = p[16];
	f->rev = p[17];
	f->pd_len = iw_get16(p + 18);
	if (f->rev != 1 && f->rev != 2)
		return iw_fail_v(err, IW_LAYER_LLP, MPA_ETYPE, MPA_ECODE_REQ_REP,
				 "unsupported MPA revision", f->rev, 2);
	if (f->pd_len > MPA_MAX_PD)
		return iw_fail_v(err, IW_LAYER_LLP, MPA_ETYPE, MPA_ECODE_REQ_REP,
				 "private data longer than 512", f->pd_len,
				 MPA_MAX_PD);

	f->markers = flags & MPA_FLAG_M;
	f->crc = flags & MPA_FLAG_C;
	/* R means something only in a Reply; S only in rev 2 (RFC 6581). */
	f->reject = kind == MPA_REPLY && (flags & MPA_FLAG_R);
	f->enhanced = f->rev == 2 && (flags & MPA_FLAG_S);
	f->reserved = flags & (kind == MPA_REPLY ? 0 : MPA_FLAG_R);
	f->reserved |= flags & (f->rev == 2 ? 0x0f : 0x1f);

	if (f->enhanced && f->pd_len < MPA_ENH_LEN)
		return MPA_LLP_FAIL(err, MPA_ECODE_REQ_REP,
				    "S bit set but private data shorter than 4");
	if (len < MPA_HDR_LEN + (size_t)f->pd_len)
		return -EAGAIN;

	f->ulp_pd = p + MPA_HDR_LEN;
	f->ulp_pd_len = f->pd_len;
	if (f->enhanced) {
		mpa_parse_enhanced(p + MPA_HDR_LEN, f);
		f->ulp_pd += MPA_ENH_LEN;
		f->ulp_pd_len -= MPA_ENH_LEN;
	}
	return 0;
}

ssize_t mpa_frame_build(uint8_t *buf, size_t cap, const struct mpa_frame *f,
			const void *ulp_pd, size_t ulp_len)
{
	size_t enh = f->enhanced ? MPA_ENH_LEN : 0;
	size_t total = MPA_HDR_LEN + enh + ulp_len;
	uint8_t flags = 0;

	if ((f->rev != 1 && f->rev != 2) || (f->enhanced && f->rev != 2) ||
	    enh + ulp_len > MPA_MAX_PD || (f->reject && f->kind != MPA_REPLY) ||
	    f->ird > MPA_ENH_DEPTH || f->ord > MPA_ENH_DEPTH ||
	    (ulp_len && !ulp_pd))
		return -EINVAL;
	if (cap < total)
		return -ENOSPC;

	memcpy(buf, f->kind == MPA_REQUEST ? MPA_KEY_REQ : MPA_KEY_REP,
	       MPA_KEY_LEN);
	flags |= f->markers ? MPA_FLAG_M : 0;
	flags |= f->crc ? MPA_FLAG_C : 0;
	flags |= f->reject ? MPA_FLAG_R : 0;
	flags |= f->enhanced ? MPA_FLAG_S : 0;
	buf[16] = flags;
	buf[17] = f->rev;
	iw_put16(buf + 18, (uint16_t)(enh + ulp_len));
	if (f->enhanced) {
		iw_put16(buf + 20, (uint16_t)((f->p2p ? MPA_ENH_A : 0) |
				(f->rtr & MPA_RTR_SEND ? MPA_ENH_B : 0) |
				f->ird));
		iw_put16(buf + 22, (uint16_t)(
				(f->rtr & MPA_RTR_WRITE ? MPA_ENH_C : 0) |
				(f->rtr & MPA_RTR_READ ? MPA_ENH_D : 0) |
				f->ord));
	}
	if (ulp_len)
		memcpy(buf + MPA_HDR_LEN + enh, ulp_pd, ulp_len);
	return (ssize_t)total;
}

/*
 * RFC 5044 §7.1: an FPDU must fit one EMSS-sized segment, so
 * MULPDU = EMSS - (6 + EMSS mod 4), and with markers
 * MULPDU = EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4).
 * Tiny or absurd MSS values are clamped so headers always fit.
 */
uint32_t mpa_mulpdu(uint32_t emss, bool markers)
{
	uint32_t over;

	if (emss < 128)
		emss = 128;
	if (emss > 65536)
		emss = 65536;
	over = 6 + emss % 4;
	if (markers)
		over += 4 * ((emss + MPA_MARKER_INTERVAL - 1) /
			     MPA_MARKER_INTERVAL);
	emss -= over;
	return emss > MPA_MAX_ULPDU ? MPA_MAX_ULPDU : emss;
}

static void mpa_put_crc(uint8_t *p, uint32_t crc)
{
	/* RFC 5044 §4.3 / siw: the CRC value in little-endian octet order */
	p[0] = (uint8_t)crc;
	p[1] = (uint8_t)(crc >> 8);
	p[2] = (uint8_t)(crc >> 16);
	p[3] = (uint8_t)(crc >> 24);
}

size_t mpa_fpdu_trailer(uint8_t *out, const uint8_t hdr[MPA_FPDU_HDR],
			const struct iovec *iov, int iovcnt, bool crc)
{
	size_t ulpdu_len = 0;
	unsigned int pad;
	uint32_t c = IW_CRC32C_INIT;
	int i;

	if (crc)
		c = iw_crc32c_update(c, hdr, MPA_FPDU_HDR);
	for (i = 0; i < iovcnt; i++) {
		ulpdu_len += iov[i].iov_len;
		if (crc)
			c = iw_crc32c_update(c, iov[i].iov_base,
					     iov[i].iov_len);
	}
	pad = mpa_pad(ulpdu_len);
	memset(out, 0, pad);
	if (crc) {
		c = iw_crc32c_update(c, out, pad);
		mpa_put_crc(out + pad, iw_crc32c_final(c));
	} else {
		mpa_put_crc(out + pad, 0);
	}
	return pad + MPA_CRC_LEN;
}

size_t mpa_fpdu_close(uint8_t *fpdu, size_t len, bool crc)
{
	unsigned int pad = mpa_pad(len - MPA_FPDU_HDR);

	memset(fpdu + len, 0, pad);
	len += pad;
	mpa_put_crc(fpdu + len, crc ? iw_crc32c(fpdu, len) : 0);
	return len + MPA_CRC_LEN;
}

size_t mpa_marked_len(size_t len, uint64_t pos)
{
	size_t n = 0;

	/* each marker precedes the data octet at a multiple of 512 */
	while (len) {
		size_t room = MPA_MARKER_INTERVAL - pos % MPA_MARKER_INTERVAL;

		if (room == MPA_MARKER_INTERVAL) {
			n += MPA_MARKER_LEN;
			pos += MPA_MARKER_LEN;
			room -= MPA_MARKER_LEN;
		}
		if (room > len)
			room = len;
		n += room;
		pos += room;
		len -= room;
	}
	return n;
}

/* Marker-aware copy: appends src to out at stream position *pos. */
struct mpa_writer {
	uint8_t *out;
	size_t n;
	uint64_t pos;
	uint64_t fpdu_start;
	bool markers;
	uint32_t crc;
};

/* Appends src; a marker due at the current position comes first, also
 * when len is 0 (so the caller can place one before the CRC). */
static void mpa_write(struct mpa_writer *w, const uint8_t *src, size_t len)
{
	if (!len && w->markers && w->pos % MPA_MARKER_INTERVAL == 0) {
		iw_put16(w->out + w->n, 0);
		iw_put16(w->out + w->n + 2, (uint16_t)(w->pos - w->fpdu_start));
		w->n += MPA_MARKER_LEN;
		w->pos += MPA_MARKER_LEN;
		return;
	}
	while (len) {
		size_t room = len;

		if (w->markers) {
			uint64_t off = w->pos % MPA_MARKER_INTERVAL;

			if (off == 0) {
				uint8_t *m = w->out + w->n;

				iw_put16(m, 0);
				iw_put16(m + 2,
					 (uint16_t)(w->pos - w->fpdu_start));
				w->n += MPA_MARKER_LEN;
				w->pos += MPA_MARKER_LEN;
				off = MPA_MARKER_LEN;
			}
			if (room > MPA_MARKER_INTERVAL - off)
				room = MPA_MARKER_INTERVAL - off;
		}
		memcpy(w->out + w->n, src, room);
		w->n += room;
		w->pos += room;
		src += room;
		len -= room;
	}
}

ssize_t mpa_fpdu_build(uint8_t *buf, size_t cap, const uint8_t *ulpdu,
		       size_t ulpdu_len, bool crc, bool markers,
		       uint64_t *pos)
{
	static const uint8_t zeros[4];
	struct mpa_writer w = {
		.out = buf,
		.pos = markers ? *pos : 0,
		.markers = markers,
	};
	uint8_t hdr[MPA_FPDU_HDR], trailer[MPA_CRC_LEN];
	size_t need;
	uint32_t c;

	if (ulpdu_len > MPA_MAX_ULPDU || (markers && !pos))
		return -EINVAL;
	need = mpa_fpdu_len(ulpdu_len);
	if (markers)
		need = mpa_marked_len(need, w.pos);
	if (cap < need)
		return -ENOSPC;

	w.fpdu_start = w.pos;
	iw_put16(hdr, (uint16_t)ulpdu_len);
	mpa_write(&w, hdr, sizeof(hdr));
	mpa_write(&w, ulpdu, ulpdu_len);
	mpa_write(&w, zeros, mpa_pad(ulpdu_len));
	/* A marker due right before the CRC field belongs to this FPDU and
	 * is covered by its CRC, like every marker before it (RFC 5044 §6;
	 * one can never fall inside the 4-aligned CRC field). */
	mpa_write(&w, NULL, 0);
	/* The CRC covers everything written so far, markers included. */
	c = crc ? iw_crc32c_final(iw_crc32c_update(IW_CRC32C_INIT, buf, w.n))
		: 0;
	mpa_put_crc(trailer, c);
	mpa_write(&w, trailer, sizeof(trailer));
	if (markers)
		*pos = w.pos;
	return (ssize_t)w.n;
}

/* Where mpa_marker_strip is inside the FPDU stream. */
struct mpa_strip {
	uint64_t fpdu_start;
	size_t fpdu_left;	/* marker-free octets left in this FPDU */
	uint8_t lenbuf[MPA_FPDU_HDR];
	size_t lenhave;
	bool in_fpdu;
};

/* The marker at in (pos is a marker position): 0, -EAGAIN or a fail. */
static int mpa_strip_marker(const struct mpa_strip *s, const uint8_t *in,
			    size_t avail, uint64_t pos, struct iw_err *err)
{
	uint16_t got, want = (uint16_t)(pos - s->fpdu_start);

	if (avail < MPA_MARKER_LEN)
		return -EAGAIN;
	got = iw_get16(in + 2) & ~3u;
	if (got != want)
		return iw_fail_v(err, IW_LAYER_LLP, MPA_ETYPE,
				 MPA_ECODE_MARKER, "FPDUPTR mismatch", got,
				 want);
	return 0;
}

/* Takes up to room FPDU octets from in: the ULPDU_Length field (maybe
 * split by a marker) or the rest of the FPDU. Returns what it took. */
static size_t mpa_strip_take(struct mpa_strip *s, const uint8_t *in,
			     size_t room)
{
	if (s->fpdu_left == 0) {
		if (room > MPA_FPDU_HDR - s->lenhave)
			room = MPA_FPDU_HDR - s->lenhave;
		memcpy(s->lenbuf + s->lenhave, in, room);
		s->lenhave += room;
		if (s->lenhave == MPA_FPDU_HDR) {
			s->fpdu_left = mpa_fpdu_len(iw_get16(s->lenbuf)) -
				       MPA_FPDU_HDR;
			s->lenhave = 0;
		}
		return room;
	}
	if (room > s->fpdu_left)
		room = s->fpdu_left;
	s->fpdu_left -= room;
	s->in_fpdu = s->fpdu_left != 0;
	return room;
}

ssize_t mpa_marker_strip(uint8_t *out, size_t cap, const uint8_t *in,
			 size_t len, uint64_t pos, struct iw_err *err)
{
	struct mpa_strip s = { .fpdu_start = pos };
	size_t n = 0, i = 0, room;
	int ret;

	while (i < len) {
		if (!s.in_fpdu) {
			s.fpdu_start = pos;
			s.in_fpdu = true;
		}
		if (pos % MPA_MARKER_INTERVAL == 0) {
			ret = mpa_strip_marker(&s, in + i, len - i, pos, err);
			if (ret)
				return ret;
			i += MPA_MARKER_LEN;
			pos += MPA_MARKER_LEN;
			continue;
		}
		room = MPA_MARKER_INTERVAL - pos % MPA_MARKER_INTERVAL;
		if (room > len - i)
			room = len - i;
		room = mpa_strip_take(&s, in + i, room);
		if (cap - n < room)
			return -ENOSPC;
		memcpy(out + n, in + i, room);
		n += room;
		i += room;
		pos += room;
	}
	return s.in_fpdu ? -EAGAIN : (ssize_t)n;
}
