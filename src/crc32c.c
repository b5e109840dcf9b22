/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CRC32c (Castagnoli) for the MPA FPDU trailer, RFC 5044 §4.3.
 *
 * MPA checksums every octet that goes over the wire, so this is on the
 * data path of every send and receive. Four implementations:
 *
 *   table        portable slice-by-8; works on any CPU and byte order.
 *   sse42        the SSE4.2 crc32 instruction, one 8-byte word at a time.
 *   sse42-clmul  three crc32 streams over three blocks of the buffer at
 *                once (the instruction has a latency of ~3 cycles but a
 *                throughput of one per cycle), the partial CRCs joined
 *                with a carry-less multiply.
 *   avx512-vpclmul  carry-less multiply folding of 256 octets per round
 *                in four 512-bit registers (AVX-512, VPCLMULQDQ);
 *                buffers under 96 octets go to sse42.
 *
 * All of them work on the raw CRC register (no pre/post inversion, see
 * include/iwarp/crc32c.h), so pieces can be chained.
 *
 * The SIMD code is compiled with target attributes, so this file needs no
 * -msse4.2 or -mavx512f; the choice is made at run time from CPUID.
 * IW_CRC32C_IMPL=<name> in the environment forces an implementation.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/crc32c.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define IW_CRC32C_X86 1
#include <immintrin.h>
#endif

#define CRC32C_POLY 0x82f63b78u /* reflected x^32 + ... + 1 */

/* crc32c_tab[k][i]: register after byte i followed by k zero bytes. */
static uint32_t crc32c_tab[8][256];

/* 0 untouched, 1 being built, 2 ready (tables, constants, selection) */
static int crc32c_state;

static uint32_t crc32c_resolve(uint32_t crc, const void *buf, size_t len);

static uint32_t (*crc32c_fn)(uint32_t, const void *, size_t) = crc32c_resolve;
static const char *crc32c_sel_name;

static void crc32c_init(void);

/* Loads never assume alignment; memcpy compiles to a plain move. */
static inline uint64_t crc32c_ld64le(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/* Multiply by x modulo P, in the reflected bit order. */
static inline uint32_t crc32c_mulx(uint32_t v)
{
	return (v >> 1) ^ ((v & 1) ? CRC32C_POLY : 0);
}

static void crc32c_build_tables(void)
{
	uint32_t v;
	int i, j, k;

	for (i = 0; i < 256; i++) {
		v = (uint32_t)i;
		for (j = 0; j < 8; j++)
			v = crc32c_mulx(v);
		crc32c_tab[0][i] = v;
	}
	for (k = 1; k < 8; k++) {
		for (i = 0; i < 256; i++) {
			v = crc32c_tab[k - 1][i];
			crc32c_tab[k][i] = (v >> 8) ^ crc32c_tab[0][v & 0xff];
		}
	}
}

/* ---- portable slice-by-8 --------------------------------------------- */

static uint32_t crc32c_table(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	uint64_t w;

	if (!len)
		return crc;
	crc32c_init();
	while (len >= 8) {
		/* The first octet has seven more behind it: table 7. */
		w = crc32c_ld64le(p) ^ crc;
		crc = crc32c_tab[7][w & 0xff] ^
		      crc32c_tab[6][(w >> 8) & 0xff] ^
		      crc32c_tab[5][(w >> 16) & 0xff] ^
		      crc32c_tab[4][(w >> 24) & 0xff] ^
		      crc32c_tab[3][(w >> 32) & 0xff] ^
		      crc32c_tab[2][(w >> 40) & 0xff] ^
		      crc32c_tab[1][(w >> 48) & 0xff] ^
		      crc32c_tab[0][w >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ crc32c_tab[0][(crc ^ *p++) & 0xff];
	return crc;
}

#ifdef IW_CRC32C_X86

/* ---- SSE4.2, one stream ---------------------------------------------- */

__attribute__((target("sse4.2")))
static inline uint32_t crc32c_hw_bytes(uint32_t crc, const unsigned char *p,
				       size_t len)
{
	while (len--)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}

__attribute__((target("sse4.2")))
static inline uint32_t crc32c_hw_words(uint32_t crc, const unsigned char *p,
				       size_t len)
{
	uint64_t c = crc;
	uint32_t w;
	uint16_t h;

	while (len >= 8) {
		c = _mm_crc32_u64(c, crc32c_ld64le(p));
		p += 8;
		len -= 8;
	}
	/* the rest in at most three steps, not up to seven */
	if (len & 4) {
		memcpy(&w, p, 4);
		c = _mm_crc32_u32((uint32_t)c, w);
		p += 4;
	}
	if (len & 2) {
		memcpy(&h, p, 2);
		c = _mm_crc32_u16((uint32_t)c, h);
		p += 2;
	}
	if (len & 1)
		c = _mm_crc32_u8((uint32_t)c, *p);
	return (uint32_t)c;
}

__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t head;

	if (!len)
		return crc;
	/* Aligned words never straddle a cache line. */
	head = (8 - ((uintptr_t)p & 7)) & 7;
	if (head > len)
		head = len;
	crc = crc32c_hw_bytes(crc, p, head);
	return crc32c_hw_words(crc, p + head, len - head);
}

/* ---- SSE4.2, three streams joined with PCLMULQDQ ---------------------- */

/*
 * The buffer is cut into chunks of three blocks A, B, C of `len` octets
 * each. A continues the running CRC, B and C start from zero, and since
 * the CRC register is linear over GF(2):
 *
 *	crc(A B C) = crc(A) * x^(2*8*len) + crc(B) * x^(8*len) + crc(C)
 *
 * all mod P. A carry-less product of two reflected 32-bit values is the
 * polynomial product times x, and crc32(0, 64-bit word w) is w * x^32;
 * so crc32(0, clmul(a, x^(n - 33))) == a * x^n mod P. k1 and k2 hold
 * x^(8*len - 33) and x^(16*len - 33). Blocks shrink down the tiers so
 * that mid-sized buffers still get three streams.
 */
struct crc32c_tier {
	size_t len;
	uint32_t k1, k2;
};

static struct crc32c_tier crc32c_tiers[] = {
	{ .len = 4096 },
	{ .len = 512 },
	{ .len = 64 },
};

#define CRC32C_NTIERS (sizeof(crc32c_tiers) / sizeof(crc32c_tiers[0]))

/* x^n mod P, reflected; uses the byte table to step 8 powers at a time. */
static uint32_t crc32c_xpow(size_t n)
{
	uint32_t v = 0x80000000u; /* x^0 */

	for (; n & 7; n--)
		v = crc32c_mulx(v);
	for (; n; n -= 8)
		v = (v >> 8) ^ crc32c_tab[0][v & 0xff];
	return v;
}

static void crc32c_build_tiers(void)
{
	size_t t, bits;

	for (t = 0; t < CRC32C_NTIERS; t++) {
		bits = 8 * crc32c_tiers[t].len;
		crc32c_tiers[t].k1 = crc32c_xpow(bits - 33);
		crc32c_tiers[t].k2 = crc32c_xpow(2 * bits - 33);
	}
}

__attribute__((target("sse4.2,pclmul")))
static inline uint32_t crc32c_join3(uint32_t c0, uint32_t c1, uint32_t c2,
				    uint32_t k1, uint32_t k2)
{
	__m128i a = _mm_set_epi64x(c1, c0);
	__m128i k = _mm_set_epi64x(k1, k2);
	__m128i p;

	/* c0 * k2 + c1 * k1: one reduction for both. */
	p = _mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00),
			  _mm_clmulepi64_si128(a, k, 0x11));
	return (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(p)) ^
	       c2;
}

__attribute__((target("sse4.2,pclmul")))
static uint32_t crc32c_sse42_clmul(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf, *end;
	const struct crc32c_tier *tr;
	uint64_t c0, c1, c2;
	size_t head, bl, t;

	if (len < 3 * crc32c_tiers[CRC32C_NTIERS - 1].len + 8)
		return crc32c_sse42(crc, buf, len);

	crc32c_init();
	head = (8 - ((uintptr_t)p & 7)) & 7;
	crc = crc32c_hw_bytes(crc, p, head);
	p += head;
	len -= head;

	c0 = crc;
	for (t = 0; t < CRC32C_NTIERS; t++) {
		tr = &crc32c_tiers[t];
		bl = tr->len;
		while (len >= 3 * bl) {
			c1 = 0;
			c2 = 0;
			for (end = p + bl; p < end; p += 8) {
				c0 = _mm_crc32_u64(c0, crc32c_ld64le(p));
				c1 = _mm_crc32_u64(c1, crc32c_ld64le(p + bl));
				c2 = _mm_crc32_u64(c2,
						   crc32c_ld64le(p + 2 * bl));
			}
			c0 = crc32c_join3((uint32_t)c0, (uint32_t)c1,
					  (uint32_t)c2, tr->k1, tr->k2);
			p += 2 * bl;
			len -= 3 * bl;
		}
	}
	return crc32c_hw_words((uint32_t)c0, p, len);
}

/* ---- AVX-512 + VPCLMULQDQ folding ------------------------------------- */

/*
 * Carry-less folding, 512 bits per register. Each 128-bit lane A of an
 * accumulator stands for A(x) (first octet = highest degree, reflected
 * bit order). Moving it F bits further down the message is multiplying
 * by x^F; split A into its first qword H (times x^64) and second qword L:
 *
 *	A * x^F = H * x^(F + 64) + L * x^F	(mod P)
 *
 * A reflected 64 x 32-bit clmul yields the product times x^33 (see the
 * three-stream comment), so lane constants are { x^(F+31), x^(F-33) }
 * mod P: 32-bit values, hence a product of at most 95 bits that fits the
 * lane and can be XORed into the data F bits later. Everything ends up in
 * one lane, a 16-octet message whose zero-seeded CRC the crc32
 * instruction computes directly.
 */
struct crc32c_fold {
	uint64_t lo, hi; /* x^(F+31), x^(F-33) */
};

/* moves of 256, 192, 128 and 64 octets */
static struct crc32c_fold crc32c_folds[4];

/*
 * crc32c_ends[t][i]: lane i of the last full 64 octets moves 48 - 16 i + t
 * octets, onto the last lane of a message that has t octets more.
 */
static struct crc32c_fold crc32c_ends[64][4] __attribute__((aligned(64)));

/* v * x^-1 mod P: undoes crc32c_mulx (the product's top bit tells
 * whether P was added). */
static inline uint32_t crc32c_divx(uint32_t v)
{
	return (v & 0x80000000u) ? ((v ^ CRC32C_POLY) << 1) | 1 : v << 1;
}

static void crc32c_set_fold(struct crc32c_fold *f, long octets)
{
	long e[2] = { 8 * octets + 31, 8 * octets - 33 };
	uint32_t v[2];
	int i;

	/* Only the short moves of crc32c_ends go below x^0. */
	for (i = 0; i < 2; i++) {
		if (e[i] >= 0) {
			v[i] = crc32c_xpow((size_t)e[i]);
		} else {
			for (v[i] = 0x80000000u; e[i]; e[i]++)
				v[i] = crc32c_divx(v[i]);
		}
	}
	f->lo = v[0];
	f->hi = v[1];
}

static void crc32c_build_folds(void)
{
	long t, i;

	for (i = 0; i < 4; i++)
		crc32c_set_fold(&crc32c_folds[i], 256 - 64 * i);
	for (t = 0; t < 64; t++)
		for (i = 0; i < 4; i++)
			crc32c_set_fold(&crc32c_ends[t][i], 48 - 16 * i + t);
}

/* Crossover with sse42(-clmul) measured at ~72; the head needs 64 + 3. */
#define CRC32C_AVX512_MIN 96

#define CRC32C_AVX512_TARGET __attribute__(( \
	target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.2")))

CRC32C_AVX512_TARGET
static inline __m512i crc32c_kbcast(int i)
{
	return _mm512_broadcast_i32x4(
		_mm_loadu_si128((const __m128i *)&crc32c_folds[i]));
}

/* a * x^F + d, lane by lane */
CRC32C_AVX512_TARGET
static inline __m512i crc32c_fold512(__m512i a, __m512i k, __m512i d)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00),
					 _mm512_clmulepi64_epi128(a, k, 0x11),
					 d, 0x96);
}

CRC32C_AVX512_TARGET
static uint32_t crc32c_avx512(uint32_t crc, const void *buf, size_t len)
{
	const unsigned char *p = buf, *end;
	__m512i x0, x1, x2, x3, k;
	__m256i y;
	__m128i a;
	unsigned int z, r;
	uint32_t rot, tail;
	uint64_t c;

	/* sse42-clmul would hand these to sse42 as well. */
	if (len < CRC32C_AVX512_MIN)
		return crc32c_sse42(crc, buf, len);
	crc32c_init();
	end = p + len;

	/*
	 * Start at the 64-octet boundary below the buffer so that no load
	 * straddles a cache line. The z octets in front are masked to zero;
	 * zeros in front of a message leave a zero-seeded CRC alone, so the
	 * register is XORed in at offset z instead of 0. Rotated by z mod 4
	 * octets, every dword of the broadcast has the right octet at each
	 * offset. Past 60 it would straddle two blocks: step to the next.
	 */
	z = (uintptr_t)p & 63;
	if (z > 60) {
		crc = crc32c_hw_bytes(crc, p, 64 - z);
		p += 64 - z;
		z = 0;
	}
	r = 8 * (z & 3);
	rot = r ? crc << r | crc >> (32 - r) : crc;
	p -= z;
	x0 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(~0ull << z, p),
			      _mm512_maskz_mov_epi8(0xfull << z,
						    _mm512_set1_epi32((int)rot)));
	p += 64;

	if (end - p >= 192) {
		x1 = _mm512_load_si512(p);
		x2 = _mm512_load_si512(p + 64);
		x3 = _mm512_load_si512(p + 128);
		p += 192;

		/* Four independent chains hide the clmul latency. */
		k = crc32c_kbcast(0);
		while (end - p >= 256) {
			x0 = crc32c_fold512(x0, k, _mm512_load_si512(p));
			x1 = crc32c_fold512(x1, k, _mm512_load_si512(p + 64));
			x2 = crc32c_fold512(x2, k, _mm512_load_si512(p + 128));
			x3 = crc32c_fold512(x3, k, _mm512_load_si512(p + 192));
			p += 256;
		}

		/* Distinct distances keep the clmuls independent. */
		x0 = crc32c_fold512(x0, crc32c_kbcast(1), x3);
		x1 = crc32c_fold512(x1, crc32c_kbcast(2), x0);
		x0 = crc32c_fold512(x2, crc32c_kbcast(3), x1);
	}

	k = crc32c_kbcast(3);
	while (end - p >= 64) {
		x0 = crc32c_fold512(x0, k, _mm512_load_si512(p));
		p += 64;
	}

	/*
	 * With len < 64 octets left, the lanes move straight onto the end
	 * of the message: their CRC and that of the tail alone (computed on
	 * the crc32 unit meanwhile) add up to the whole.
	 */
	len = (size_t)(end - p);
	tail = crc32c_hw_words(0, p, len);
	k = _mm512_load_si512(crc32c_ends[len]);
	x0 = _mm512_xor_si512(_mm512_clmulepi64_epi128(x0, k, 0x00),
			      _mm512_clmulepi64_epi128(x0, k, 0x11));
	y = _mm256_xor_si256(_mm512_castsi512_si256(x0),
			     _mm512_extracti64x4_epi64(x0, 1));
	a = _mm_xor_si128(_mm256_castsi256_si128(y),
			  _mm256_extracti128_si256(y, 1));

	c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(a));
	return (uint32_t)_mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(a, 1)) ^
	       tail;
}

#endif /* IW_CRC32C_X86 */

/* ---- selection -------------------------------------------------------- */

static struct iw_crc32c_impl crc32c_impls[] = {
	{ "table", crc32c_table, 1 },
#ifdef IW_CRC32C_X86
	{ "sse42", crc32c_sse42, 0 },
	{ "sse42-clmul", crc32c_sse42_clmul, 0 },
	{ "avx512-vpclmul", crc32c_avx512, 0 },
#endif
};

#define CRC32C_NIMPLS (sizeof(crc32c_impls) / sizeof(crc32c_impls[0]))

static void crc32c_select(void)
{
	const struct iw_crc32c_impl *best = &crc32c_impls[0];
	const char *env;
	size_t i;

#ifdef IW_CRC32C_X86
	__builtin_cpu_init();
	crc32c_impls[1].available = __builtin_cpu_supports("sse4.2");
	crc32c_impls[2].available = __builtin_cpu_supports("sse4.2") &&
				    __builtin_cpu_supports("pclmul");
	/* AVX-512 is reported only when the OS saves the ZMM state. */
	crc32c_impls[3].available = crc32c_impls[2].available &&
				    __builtin_cpu_supports("avx512f") &&
				    __builtin_cpu_supports("avx512bw") &&
				    __builtin_cpu_supports("avx512vl") &&
				    __builtin_cpu_supports("vpclmulqdq");
#endif
	/* The table is ordered slowest first. */
	for (i = 0; i < CRC32C_NIMPLS; i++)
		if (crc32c_impls[i].available)
			best = &crc32c_impls[i];

	env = getenv("IW_CRC32C_IMPL");
	for (i = 0; env && i < CRC32C_NIMPLS; i++)
		if (crc32c_impls[i].available &&
		    !strcmp(env, crc32c_impls[i].name))
			best = &crc32c_impls[i];

	crc32c_sel_name = best->name;
	__atomic_store_n(&crc32c_fn, best->update, __ATOMIC_RELEASE);
}

/*
 * Runs once, from the constructor or from whichever thread gets here
 * first; others wait the few microseconds it takes.
 */
static void crc32c_init(void)
{
	int s = __atomic_load_n(&crc32c_state, __ATOMIC_ACQUIRE);

	if (s == 2)
		return;
	s = 0;
	if (__atomic_compare_exchange_n(&crc32c_state, &s, 1, 0,
					__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE)) {
		crc32c_build_tables();
#ifdef IW_CRC32C_X86
		crc32c_build_tiers();
		crc32c_build_folds();
#endif
		crc32c_select();
		__atomic_store_n(&crc32c_state, 2, __ATOMIC_RELEASE);
		return;
	}
	while (__atomic_load_n(&crc32c_state, __ATOMIC_ACQUIRE) != 2)
		sched_yield();
}

__attribute__((constructor))
static void crc32c_ctor(void)
{
	crc32c_init();
}

static uint32_t crc32c_resolve(uint32_t crc, const void *buf, size_t len)
{
	crc32c_init();
	return __atomic_load_n(&crc32c_fn, __ATOMIC_ACQUIRE)(crc, buf, len);
}

uint32_t iw_crc32c_update(uint32_t crc, const void *buf, size_t len)
{
	return __atomic_load_n(&crc32c_fn, __ATOMIC_ACQUIRE)(crc, buf, len);
}

const struct iw_crc32c_impl *iw_crc32c_impls(size_t *n)
{
	crc32c_init();
	*n = CRC32C_NIMPLS;
	return crc32c_impls;
}

const char *iw_crc32c_impl_name(void)
{
	crc32c_init();
	return crc32c_sel_name;
}
