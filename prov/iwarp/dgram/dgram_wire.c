/* SPDX-License-Identifier: BSD-2-Clause */
/* The FI_EP_DGRAM header codec (dgram_wire.h has the layout). */
#include "dgram_wire.h"

_Static_assert(IWARP_DGRAM_HDR_MAX == IWARP_DGRAM_BASE_LEN + 2 * 8,
	       "header: base, tag, data");
_Static_assert(IWARP_DGRAM_MSG_MAX == 65483, "one IPv4 UDP datagram");

static void put_be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	put_be16(p, (uint16_t)(v >> 16));
	put_be16(p + 2, (uint16_t)v);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)get_be16(p) << 16 | get_be16(p + 2);
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

size_t iwarp_dgram_hdr_len(uint8_t flags)
{
	return IWARP_DGRAM_BASE_LEN + (flags & IWARP_DGRAM_F_TAG ? 8 : 0) +
	       (flags & IWARP_DGRAM_F_DATA ? 8 : 0);
}

size_t iwarp_dgram_hdr_put(uint8_t *p, const struct iwarp_dgram_hdr *h)
{
	uint8_t flags = h->flags & IWARP_DGRAM_F_ALL;
	size_t off = IWARP_DGRAM_BASE_LEN;

	put_be16(p, IWARP_DGRAM_MAGIC);
	p[2] = IWARP_DGRAM_VERSION;
	p[3] = flags;
	put_be32(p + 4, h->len);
	if (flags & IWARP_DGRAM_F_TAG) {
		put_be64(p + off, h->tag);
		off += 8;
	}
	if (flags & IWARP_DGRAM_F_DATA) {
		put_be64(p + off, h->data);
		off += 8;
	}
	return off;
}

/* Each field is checked before the next is read: the first fault wins. */
enum iwarp_dgram_drop iwarp_dgram_hdr_get(const uint8_t *p, size_t len,
					  struct iwarp_dgram_hdr *h,
					  size_t *hdr_len)
{
	size_t off = IWARP_DGRAM_BASE_LEN;

	if (len < IWARP_DGRAM_BASE_LEN)
		return IWARP_DGRAM_SHORT;
	if (get_be16(p) != IWARP_DGRAM_MAGIC)
		return IWARP_DGRAM_BAD_MAGIC;
	if (p[2] != IWARP_DGRAM_VERSION)
		return IWARP_DGRAM_BAD_VERSION;
	if (p[3] & ~IWARP_DGRAM_F_ALL)
		return IWARP_DGRAM_BAD_FLAGS;
	if (len < iwarp_dgram_hdr_len(p[3]))
		return IWARP_DGRAM_SHORT;
	if (len > IWARP_DGRAM_UDP_MAX)
		return IWARP_DGRAM_OVERSIZE;
	h->flags = p[3];
	h->len = get_be32(p + 4);
	h->tag = h->data = 0;
	if (h->flags & IWARP_DGRAM_F_TAG) {
		h->tag = get_be64(p + off);
		off += 8;
	}
	if (h->flags & IWARP_DGRAM_F_DATA) {
		h->data = get_be64(p + off);
		off += 8;
	}
	if (h->len != len - off)
		return IWARP_DGRAM_BAD_LENGTH;
	*hdr_len = off;
	return IWARP_DGRAM_OK;
}

static const char *const iwarp_dgram_drop_names[IWARP_DGRAM_DROP_MAX] = {
	[IWARP_DGRAM_OK] = "ok",
	[IWARP_DGRAM_SHORT] = "short",
	[IWARP_DGRAM_BAD_MAGIC] = "bad magic",
	[IWARP_DGRAM_BAD_VERSION] = "bad version",
	[IWARP_DGRAM_BAD_FLAGS] = "bad flags",
	[IWARP_DGRAM_BAD_LENGTH] = "bad length",
	[IWARP_DGRAM_OVERSIZE] = "oversize",
	[IWARP_DGRAM_NO_MATCH] = "no receive",
};

const char *iwarp_dgram_drop_str(enum iwarp_dgram_drop why)
{
	if ((unsigned int)why >= IWARP_DGRAM_DROP_MAX)
		return "?";
	return iwarp_dgram_drop_names[why];
}
