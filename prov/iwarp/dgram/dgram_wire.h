/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The header of every FI_EP_DGRAM datagram (dgram_wire.c): a pure codec
 * over bytes, with no libfabric or socket in sight, so that tests and
 * the fuzzer drive it directly. All fields are big-endian.
 *
 *	0  2  magic	0x6957 ("iW")
 *	2  1  version	1
 *	3  1  flags	0x01 tag follows, 0x02 remote CQ data follows;
 *			every other bit must be 0
 *	4  4  length	payload octets after the header
 *	8  8  tag	if flag 0x01
 *	.  8  data	if flag 0x02
 *
 * The header is 8, 16 or 24 octets; a datagram is exactly header plus
 * length octets.
 */
#ifndef IWARP_DGRAM_WIRE_H
#define IWARP_DGRAM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define IWARP_DGRAM_MAGIC	0x6957u
#define IWARP_DGRAM_VERSION	1
#define IWARP_DGRAM_F_TAG	0x01u
#define IWARP_DGRAM_F_DATA	0x02u
#define IWARP_DGRAM_F_ALL	(IWARP_DGRAM_F_TAG | IWARP_DGRAM_F_DATA)
#define IWARP_DGRAM_BASE_LEN	8
#define IWARP_DGRAM_HDR_MAX	24
/* the largest UDP payload over IPv4 (65535 - 20 - 8); IPv6 allows 20
 * more, but one limit serves both families */
#define IWARP_DGRAM_UDP_MAX	65507
#define IWARP_DGRAM_MSG_MAX	(IWARP_DGRAM_UDP_MAX - IWARP_DGRAM_HDR_MAX)

/* Why a datagram was dropped: the parser's answers first, then the
 * endpoint's own (dgram_ep.c counts each). */
enum iwarp_dgram_drop {
	IWARP_DGRAM_OK = 0,
	IWARP_DGRAM_SHORT,		/* shorter than its header */
	IWARP_DGRAM_BAD_MAGIC,
	IWARP_DGRAM_BAD_VERSION,
	IWARP_DGRAM_BAD_FLAGS,		/* a reserved bit set */
	IWARP_DGRAM_BAD_LENGTH,		/* length disagrees with the size */
	IWARP_DGRAM_OVERSIZE,		/* larger than any we send */
	IWARP_DGRAM_NO_MATCH,		/* no posted receive takes it */
	IWARP_DGRAM_DROP_MAX,
};

struct iwarp_dgram_hdr {
	uint8_t flags;
	uint32_t len;			/* payload octets */
	uint64_t tag;			/* 0 unless IWARP_DGRAM_F_TAG */
	uint64_t data;			/* 0 unless IWARP_DGRAM_F_DATA */
};

/* Header octets for these flags (reserved bits ignored): 8, 16 or 24. */
size_t iwarp_dgram_hdr_len(uint8_t flags);
/* Writes the header of h at p (room for IWARP_DGRAM_HDR_MAX octets);
 * returns its length. */
size_t iwarp_dgram_hdr_put(uint8_t *p, const struct iwarp_dgram_hdr *h);
/*
 * Validates a whole datagram of len octets: IWARP_DGRAM_OK with *h and
 * *hdr_len (the payload starts there), else why it must be dropped.
 */
enum iwarp_dgram_drop iwarp_dgram_hdr_get(const uint8_t *p, size_t len,
					  struct iwarp_dgram_hdr *h,
					  size_t *hdr_len);
/* "short", "bad magic", ...; "?" out of range. */
const char *iwarp_dgram_drop_str(enum iwarp_dgram_drop why);

#endif /* IWARP_DGRAM_WIRE_H */
