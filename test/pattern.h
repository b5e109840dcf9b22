/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Data patterns for the tests: the octet at position pos of pattern seed
 * is the same whatever slice of a message is filled or checked, so a
 * receiver can verify any piece on its own.
 */
#ifndef IWARP_TEST_PATTERN_H
#define IWARP_TEST_PATTERN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* splitmix64: the pattern generator (and test_msg's random numbers) */
static inline uint64_t pat_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The octet at message position pos of pattern seed. */
static inline uint8_t pat_byte(uint64_t seed, size_t pos)
{
	return (uint8_t)(pat_mix(seed ^ (pos / 8) * 0xd1b54a32d192ed03ULL) >>
			 (8 * (pos % 8)));
}

static inline void pat_fill(void *buf, size_t len, uint64_t seed, size_t pos)
{
	uint8_t *b = buf;
	size_t i = 0;
	uint64_t w;

	for (; i < len && (pos + i) % 8; i++)
		b[i] = pat_byte(seed, pos + i);
	for (; i + 8 <= len; i += 8) {
		w = pat_mix(seed ^ ((pos + i) / 8) * 0xd1b54a32d192ed03ULL);
		memcpy(b + i, &w, 8);	/* little endian, as pat_byte */
	}
	for (; i < len; i++)
		b[i] = pat_byte(seed, pos + i);
}

/* Index of the first octet that differs from the pattern, or SIZE_MAX. */
static inline size_t pat_diff(const void *buf, size_t len, uint64_t seed, size_t pos)
{
	const uint8_t *b = buf;
	size_t i = 0;
	uint64_t w;

	for (; i < len && (pos + i) % 8; i++)
		if (b[i] != pat_byte(seed, pos + i))
			return i;
	for (; i + 8 <= len; i += 8) {
		w = pat_mix(seed ^ ((pos + i) / 8) * 0xd1b54a32d192ed03ULL);
		if (memcmp(b + i, &w, 8))
			break;
	}
	for (; i < len; i++)
		if (b[i] != pat_byte(seed, pos + i))
			return i;
	return SIZE_MAX;
}

#endif /* IWARP_TEST_PATTERN_H */
