/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC32c unit test: known vectors (RFC 3720 B.4), agreement of every
 * available implementation with the portable one for all lengths and
 * alignments, chaining across split points, and the MPA wire order.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/crc32c.h"
#include "tap.h"

#define BIG_LEN (3u << 20)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

/* xorshift64*: deterministic, so failures reproduce. */
static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void fill_random(unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (unsigned char)(rng() >> 56);
}

/* Bit at a time, straight from the definition: the reference of the
 * reference. */
static uint32_t crc_bitwise(uint32_t crc, const unsigned char *p, size_t len)
{
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ ((crc & 1) ? 0x82f63b78u : 0);
	}
	return crc;
}

static uint32_t one_shot(const struct iw_crc32c_impl *im, const void *p,
			 size_t len)
{
	return iw_crc32c_final(im->update(IW_CRC32C_INIT, p, len));
}

static void check_vectors(const struct iw_crc32c_impl *im)
{
	unsigned char b[32];
	int i;

	tap_ok(one_shot(im, "123456789", 9) == 0xE3069283u,
	       "%s: \"123456789\" -> E3069283", im->name);
	tap_ok(one_shot(im, "", 0) == 0 &&
	       im->update(0x12345678u, NULL, 0) == 0x12345678u,
	       "%s: empty buffer", im->name);

	memset(b, 0x00, sizeof(b));
	tap_ok(one_shot(im, b, 32) == 0x8A9136AAu,
	       "%s: RFC 3720 B.4 32 x 00", im->name);
	memset(b, 0xff, sizeof(b));
	tap_ok(one_shot(im, b, 32) == 0x62A8AB43u,
	       "%s: RFC 3720 B.4 32 x FF", im->name);
	for (i = 0; i < 32; i++)
		b[i] = (unsigned char)i;
	tap_ok(one_shot(im, b, 32) == 0x46DD794Eu,
	       "%s: RFC 3720 B.4 ascending", im->name);
	for (i = 0; i < 32; i++)
		b[i] = (unsigned char)(31 - i);
	tap_ok(one_shot(im, b, 32) == 0x113FDB5Cu,
	       "%s: RFC 3720 B.4 descending", im->name);
}

/* One random seed through both; 1 (and a diagnostic) if they differ. */
static int differ(const struct iw_crc32c_impl *im,
		  const struct iw_crc32c_impl *ref, const unsigned char *buf,
		  size_t off, size_t len)
{
	uint32_t seed = (uint32_t)rng();
	uint32_t a = im->update(seed, buf + off, len);
	uint32_t b = ref->update(seed, buf + off, len);

	if (a == b)
		return 0;
	tap_diag("%s: len %zu off %zu: %08x != %08x", im->name, len, off, a,
		 b);
	return 1;
}

/* Every length 0..4096 at offsets 0..15, then some large odd sizes. */
static void check_agree(const struct iw_crc32c_impl *im,
			const struct iw_crc32c_impl *ref, unsigned char *buf)
{
	static const size_t big[] = {
		12287, 12288, 12289, 13824, 65536, 65536 + 7, 100003,
		(1u << 20), (1u << 20) + 13, BIG_LEN - 15,
	};
	size_t len, off, i;
	int bad = 0;

	for (len = 0; len <= 4096 && !bad; len++) {
		off = (size_t)(rng() & 15);
		bad = differ(im, ref, buf, off, len);
	}
	tap_ok(!bad, "%s agrees with %s, lengths 0..4096", im->name,
	       ref->name);

	bad = 0;
	for (i = 0; i < sizeof(big) / sizeof(big[0]) && !bad; i++) {
		for (off = 0; off < 16 && !bad; off += 5)
			bad = differ(im, ref, buf, off, big[i]);
	}
	tap_ok(!bad, "%s agrees with %s, large buffers", im->name,
	       ref->name);
}

/*
 * Every offset within two cache lines, at lengths either side of the
 * block sizes of the folding code (64, 256 and the short cut-over); buf is
 * only 16-octet aligned, so the offsets above do not cover these.
 */
static void check_align(const struct iw_crc32c_impl *im,
			const struct iw_crc32c_impl *ref, unsigned char *buf)
{
	static const size_t lens[] = {
		64, 66, 67, 68, 95, 96, 97, 127, 128, 129, 191, 192, 193,
		255, 256, 257, 319, 320, 321, 4095, 4096, 4097,
		65535, 65536, 65537, 65536 + 63, 65536 + 64,
	};
	unsigned char *base = buf + (-(uintptr_t)buf & 63);
	size_t len, off, i;
	int bad = 0;

	for (off = 0; off < 128 && !bad; off++) {
		for (i = 0; i < sizeof(lens) / sizeof(lens[0]) && !bad; i++)
			bad = differ(im, ref, base, off, lens[i]);
		for (len = 511; len <= 1025 && !bad; len++)
			bad = differ(im, ref, base, off, len);
	}
	tap_ok(!bad, "%s agrees with %s, 0..127 past a cache line",
	       im->name, ref->name);
}

static void check_chain(const struct iw_crc32c_impl *im, unsigned char *buf)
{
	uint32_t whole, c;
	size_t s, n;
	int bad = 0;

	whole = im->update(IW_CRC32C_INIT, buf, 1000);
	for (s = 0; s <= 1000; s++) {
		c = im->update(IW_CRC32C_INIT, buf, s);
		c = im->update(c, buf + s, 1000 - s);
		bad |= c != whole;
	}
	tap_ok(!bad, "%s: chaining over every split of 1000 octets",
	       im->name);

	/* Long enough for the three-stream path on both sides. */
	n = 40000;
	whole = im->update(IW_CRC32C_INIT, buf + 3, n);
	bad = 0;
	for (s = 0; s <= n; s += 997) {
		c = im->update(IW_CRC32C_INIT, buf + 3, s);
		c = im->update(c, buf + 3 + s, n - s);
		bad |= c != whole;
	}
	tap_ok(!bad, "%s: chaining over splits of 40000 octets", im->name);
}

int main(void)
{
	const struct iw_crc32c_impl *impls, *ref = NULL;
	const char *sel;
	unsigned char *buf, wire[4];
	size_t n, i;
	uint32_t v;
	int ok, found = 0, bad = 0;

	buf = malloc(BIG_LEN + 16);
	if (!buf)
		return 1;
	fill_random(buf, BIG_LEN + 16);

	impls = iw_crc32c_impls(&n);
	for (i = 0; i < n; i++)
		if (!strcmp(impls[i].name, "table"))
			ref = &impls[i];
	if (!tap_ok(ref && ref->available, "table implementation present"))
		return tap_done();

	/* Pin the portable one to the definition before trusting it. */
	for (i = 0; i <= 300 && !bad; i++)
		bad = ref->update(~(uint32_t)i, buf + (i & 15), i * 7) !=
		      crc_bitwise(~(uint32_t)i, buf + (i & 15), i * 7);
	tap_ok(!bad, "table agrees with bitwise definition");

	sel = iw_crc32c_impl_name();
	for (i = 0; i < n; i++) {
		tap_diag("impl %s: %savailable", impls[i].name,
			 impls[i].available ? "" : "not ");
		if (sel && !strcmp(sel, impls[i].name) && impls[i].available)
			found = 1;
	}
	tap_ok(found, "run-time selection \"%s\" is an available impl",
	       sel ? sel : "(null)");

	for (i = 0; i < n; i++) {
		/* vectors 6, agree 2, align 1, chain 2: the count stays the
		 * same on a CPU without it */
		if (!impls[i].available) {
			tap_skip_n(&impls[i] != ref ? 11 : 8,
				   "%s: not available on this CPU",
				   impls[i].name);
			continue;
		}
		check_vectors(&impls[i]);
		if (&impls[i] != ref) {
			check_agree(&impls[i], ref, buf);
			check_align(&impls[i], ref, buf);
		}
		check_chain(&impls[i], buf);
	}

	ok = iw_crc32c("123456789", 9) == 0xE3069283u;
	ok &= iw_crc32c_update(IW_CRC32C_INIT, buf + 1, 65536) ==
	      ref->update(IW_CRC32C_INIT, buf + 1, 65536);
	tap_ok(ok, "iw_crc32c_update dispatch");

	/* MPA puts the CRC on the wire least significant octet first. */
	v = iw_crc32c("123456789", 9);
	for (i = 0; i < 4; i++)
		wire[i] = (unsigned char)(v >> (8 * i));
	tap_ok(wire[0] == 0x83 && wire[1] == 0x92 && wire[2] == 0x06 &&
	       wire[3] == 0xE3, "wire order 83 92 06 E3");

	free(buf);
	return tap_done();
}
