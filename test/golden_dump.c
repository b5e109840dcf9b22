/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writes the golden vectors as files, as fuzz seeds and for the tshark
 * check: golden_dump DIR [mpa|term|stream|qprx|auth|raw].
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "golden/golden.h"

static int put(const char *dir, const char *name, const void *pfx,
	       size_t plen, const uint8_t *p, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f) {
		perror(path);
		return 1;
	}
	fwrite(pfx, 1, plen, f);
	fwrite(p, 1, len, f);
	return fclose(f) != 0;
}

/* ---- streams for fuzz_qprx, whose regions have STags 0x00100001..3 */

static void be(uint8_t *p, uint64_t v, int n)
{
	while (n--) {
		p[n] = (uint8_t)v;
		v >>= 8;
	}
}

/* Appends one FPDU with a zero CRC field (fuzz_qprx runs without CRC):
 * the untagged header for qn, or the tagged one for qn < 0. */
static size_t fpdu(uint8_t *s, size_t at, int op, int qn, uint32_t msn,
		   uint32_t stag, uint64_t to, const uint8_t *pay, size_t plen)
{
	size_t hlen = qn < 0 ? 14 : 18, len = hlen + plen, pad;
	uint8_t *u = s + at + 2;

	be(s + at, len, 2);
	u[0] = (qn < 0 ? 0x80 : 0) | 0x40 | 1;	/* T, L, DDP version 1 */
	u[1] = (uint8_t)(0x40 | op);		/* RDMAP version 1 */
	if (qn < 0) {
		be(u + 2, stag, 4);
		be(u + 6, to, 8);
	} else {
		be(u + 2, 0, 4);
		be(u + 6, (uint64_t)qn, 4);
		be(u + 10, msn, 4);
		be(u + 14, 0, 4);
	}
	memcpy(u + hlen, pay, plen);
	pad = (4 - (2 + len) % 4) % 4;
	memset(u + len, 0, pad + 4);
	return at + 2 + len + pad + 4;
}

static size_t areq(uint8_t *s, size_t at, uint32_t msn, int aop,
		   uint64_t to, uint64_t data, uint64_t cmp)
{
	uint8_t p[52] = { 0 };

	p[3] = (uint8_t)aop;
	be(p + 4, msn, 4);		/* Request Identifier */
	be(p + 8, 0x00100001, 4);
	be(p + 12, to, 8);
	be(p + 20, data, 8);
	be(p + 28, aop ? UINT64_MAX : 0, 8);
	be(p + 36, cmp, 8);
	be(p + 44, aop ? UINT64_MAX : 0, 8);
	return fpdu(s, at, 0xa, 4, msn, 0, 0, p, sizeof(p));
}

/* Octet 0 = 1 turns atomics on; then the peer's stream. */
static int qprx_seeds(const char *dir)
{
	static const uint8_t eight[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint8_t s[1024], p[28];
	size_t n = 0;
	int ret = 0;

	/* both atomics, then the answer to the QP's own FetchAdd (id 0) */
	n = areq(s, n, 1, 0, 8, 0x0101010101010101ull, 0);
	n = areq(s, n, 2, 2, 16, 0xcafef00ddeadbeefull, 0);
	memset(p, 0, sizeof(p));
	be(p + 4, 0x1122334455667788ull, 8);
	n = fpdu(s, n, 0xb, 3, 1, 0, 0, p, 12);
	ret |= put(dir, "qprx_atomics", "\1", 1, s, n);
	/* a Write, a Read Request and a Send around a FetchAdd */
	n = fpdu(s, 0, 0, -1, 0, 0x00100001, 0, eight, sizeof(eight));
	be(p, 0x9999, 4);
	be(p + 4, 0, 8);
	be(p + 12, 64, 4);
	be(p + 16, 0x00100001, 4);
	be(p + 20, 0, 8);
	n = fpdu(s, n, 1, 1, 1, 0, 0, p, 28);
	n = areq(s, n, 1, 0, 0, 1, 0);
	n = fpdu(s, n, 3, 0, 1, 0, 0, eight, sizeof(eight));
	ret |= put(dir, "qprx_mixed", "\1", 1, s, n);
	return ret;
}

/* ---- keyed handshakes for fuzz_handshake (iwarp_auth.h) */

/* An MPA rev 2 frame with the enhanced block and an auth block (the
 * Reply's with a proof, not the right one). */
static size_t auth_frame(uint8_t *s, bool reply)
{
	size_t block = reply ? 56 : 24;

	memcpy(s, reply ? "MPA ID Rep Frame" : "MPA ID Req Frame", 16);
	s[16] = 0x40 | 0x10;		/* C, S (enhanced) */
	s[17] = 2;
	be(s + 18, 4 + block, 2);
	be(s + 20, 0x8000 | 8, 2);	/* A (peer-to-peer), IRD 8 */
	be(s + 22, 0x8000 | 8, 2);	/* C (Write RTR), ORD 8 */
	memcpy(s + 24, "IWAK\2\0\0\0", 8);
	memset(s + 32, 0x3c, 16);	/* the peer's nonce */
	memset(s + 48, 0x77, block - 24);
	return 24 + block;
}

/* Octet 0: 1 we initiated (a Reply), 0 a Request followed by the
 * initiator's auth message (its MAC is not the right one). */
static int auth_seeds(const char *dir)
{
	uint8_t s[256], m[40] = "IWAM\2";
	int ret = 0;
	size_t n;

	m[5] = 'I';
	memset(m + 8, 0x77, 32);
	n = auth_frame(s, false);
	n = fpdu(s, n, 3, 0, 1, 0, 0, m, sizeof(m));
	ret |= put(dir, "auth_request", "\0", 1, s, n);
	n = auth_frame(s, true);
	ret |= put(dir, "auth_reply", "\1", 1, s, n);
	return ret;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "raw";
	int ret = 0;
	size_t i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR [mpa|term|stream|qprx|auth|raw]\n",
			argv[0]);
		return 2;
	}
	for (i = 0; i < N_GOLDEN; i++) {
		const struct golden *g = &goldens[i];
		uint8_t pfx[2] = { 0, 0 };

		if (!strcmp(mode, "mpa") && g->kind <= 1) {
			pfx[0] = (uint8_t)g->kind;
			ret |= put(argv[1], g->name, pfx, 1, g->bytes, g->len);
		} else if (!strcmp(mode, "term") && g->kind >= 2 &&
			   (g->bytes[3] == 0x47 || g->bytes[3] == 0x4a ||
			    g->bytes[3] == 0x4b)) {
			/* Terminate or atomic payload after MPA length +
			 * untagged DDP header */
			ret |= put(argv[1], g->name, "", 0, g->bytes + 20,
				   g->len - 20 - 4);
		} else if (!strcmp(mode, "stream") && g->kind >= 2) {
			pfx[0] = g->kind == 2 ? 1 : 0;
			pfx[1] = (uint8_t)i;
			ret |= put(argv[1], g->name, pfx, 2, g->bytes, g->len);
		} else if (!strcmp(mode, "qprx") && g->kind >= 2) {
			/* atomics on; the FPDU as the peer's stream */
			pfx[0] = 1;
			ret |= put(argv[1], g->name, pfx, 1, g->bytes, g->len);
		} else if (!strcmp(mode, "raw")) {
			ret |= put(argv[1], g->name, "", 0, g->bytes, g->len);
		}
	}
	if (!strcmp(mode, "qprx"))
		ret |= qprx_seeds(argv[1]);
	if (!strcmp(mode, "auth"))
		ret |= auth_seeds(argv[1]);
	return ret;
}
