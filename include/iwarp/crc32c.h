/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC32c (Castagnoli, reflected polynomial 0x82F63B78) as MPA uses it
 * (RFC 5044 §4.3): initial value all ones, final one's complement.
 *
 * iw_crc32c_update() works on the raw register so that a CRC can be built
 * over scattered pieces:
 *	uint32_t c = IW_CRC32C_INIT;
 *	c = iw_crc32c_update(c, a, alen);
 *	c = iw_crc32c_update(c, b, blen);
 *	value = iw_crc32c_final(c);
 * The MPA trailer carries `value` in little-endian octet order.
 */
#ifndef IWARP_CRC32C_H
#define IWARP_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#define IW_CRC32C_INIT 0xffffffffu

/* Implementation chosen at run time (SSE4.2 when the CPU has it). */
uint32_t iw_crc32c_update(uint32_t crc, const void *buf, size_t len);

static inline uint32_t iw_crc32c_final(uint32_t crc)
{
	return ~crc;
}

/* One-shot: iw_crc32c("123456789", 9) == 0xE3069283. */
static inline uint32_t iw_crc32c(const void *buf, size_t len)
{
	return iw_crc32c_final(iw_crc32c_update(IW_CRC32C_INIT, buf, len));
}

/* Every implementation, for tests and the benchmark. `available` is false
 * when the CPU lacks the instructions it needs. */
struct iw_crc32c_impl {
	const char *name;
	uint32_t (*update)(uint32_t crc, const void *buf, size_t len);
	int available;
};

/* Returns the table of implementations and its length in *n. */
const struct iw_crc32c_impl *iw_crc32c_impls(size_t *n);
/* Name of the implementation iw_crc32c_update() uses. */
const char *iw_crc32c_impl_name(void);

#endif /* IWARP_CRC32C_H */
