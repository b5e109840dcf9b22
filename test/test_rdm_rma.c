/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RMA and atomics on FI_EP_RDM between real processes over loopback TCP,
 * through the public libfabric API:
 * - fi_write/fi_read of 1 B .. 16 MiB at random offsets, read back and
 *   compared, and the target's whole region checked against a mirror the
 *   initiator kept (CRC over a pipe);
 * - fi_writedata: the target's CQ reports the data, and the written
 *   octets are in place when it does;
 * - FI_DELIVERY_COMPLETE: when the initiator's completion comes the target
 *   already holds the data; a flag written after data is never seen first;
 * - remote access violations (bad key, no rights, out of bounds) end in
 *   error completions with the caller's context, and the next operation
 *   works again;
 * - every atomic op and datatype that fi_atomicvalid, fi_fetch_atomicvalid
 *   and fi_compare_atomicvalid offer, run over the remote region as one
 *   vector and one element at a time, against an oracle written from the
 *   definitions in fi_atomic(3) (not from the provider): operands include
 *   the types' limits, negative values, zeros and wrap-around; the target
 *   memory and the fetched old values are compared, and an offered
 *   combination the test could not run is a failure;
 * - concurrent fetch-and-add from several processes on one counter: the
 *   fetched values are exactly 0..N-1 and the counter ends at N;
 * - counters bound with FI_WRITE and FI_READ count the operations.
 *
 * The parent is the target; initiators are forked children that report
 * their checks over a pipe, each as a numbered slot. Every wait on a child
 * is bounded; a child that hangs is killed; a child's end is a check of
 * its own, and a slot a child never reported (it crashed, was aborted by
 * a sanitizer, hung) is reported by the parent as a failure, so the number
 * of TAP lines is the same whatever happens. FI_IWARP_RFC7306=0 in the
 * environment keeps 64-bit atomics off RFC 7306 (both paths are run by
 * test/run).
 */
#include <arpa/inet.h>
#include <complex.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "tap.h"
#include "fi_api.h"

#define REGION (32u << 20)
#define ATOMIC_AREA 4096		/* at the start of the region */
#define COUNTER_OFF 8192		/* the shared counters */
/* fi_writedata's octets: clear of the delivery rounds (1-5 MiB), which
 * the initiator starts before the target has looked */
#define WDATA_OFF (8u << 20)
#define NCONC 3				/* concurrent initiators */
#define NADD 1500			/* fetch-adds each */
#define MAIN_TMO 300			/* s: the main initiator, all phases */
#define CONC_TMO 120			/* s: the concurrent initiators */

/* What the target tells initiators (and they it) over pipes. */
struct hello {
	struct sockaddr_in name;
	uint64_t base;			/* remote address of offset 0 */
	uint64_t key, key_ro, key_wo;	/* rw, read-only, write-only */
	int virt;
};

/* ---- the checks the children report, one slot each */

#define NKIND 3				/* fi_atomic, fetch, compare */
#define NOPS FI_ATOMIC_OP_LAST		/* FI_MIN .. FI_MSWAP */
#define NDT (FI_UINT128 + 1)		/* every datatype that is asked */

enum {
	S_WRITE, S_READ, S_WRITE_PLAIN, S_READ_AFTER, S_CNTR,
	S_WD_POST, S_WD_DONE, S_DELIVERY,
	S_BAD_KEY, S_AGAIN, S_NO_READ, S_NO_WRITE, S_BOUNDS, S_READ_OK,
	S_AT_BAD_KEY, S_AT_ALIGN,
	S_AT_OP,				/* per atomic kind and op */
	S_AT_ALL = S_AT_OP + NKIND * NOPS,	/* per kind: all were run */
	S_AT_BTL = S_AT_ALL + NKIND,
	S_MAIN					/* the main initiator's */
};

enum { S_ADDS, S_CONC };		/* a concurrent initiator's */

static const char *const kind_name[NKIND] = { "fi_atomic",
					      "fi_fetch_atomic",
					      "fi_compare_atomic" };

static const char *const op_name[NOPS] = {
	"FI_MIN", "FI_MAX", "FI_SUM", "FI_PROD", "FI_LOR", "FI_LAND",
	"FI_BOR", "FI_BAND", "FI_LXOR", "FI_BXOR", "FI_ATOMIC_READ",
	"FI_ATOMIC_WRITE", "FI_CSWAP", "FI_CSWAP_NE", "FI_CSWAP_LE",
	"FI_CSWAP_LT", "FI_CSWAP_GE", "FI_CSWAP_GT", "FI_MSWAP",
};

static const char *const dt_name[NDT] = {
	"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
	"uint64", "float", "double", "float_complex", "double_complex",
	"long_double", "long_double_complex", "int128", "uint128",
};

static const char *const main_slot_name[S_AT_OP] = {
	"write: sizes 1 B..16 MiB at random offsets complete",
	"read: each written range reads back identical",
	"write without FI_DELIVERY_COMPLETE completes",
	"read after the plain write",
	"counter bound FI_WRITE|FI_READ counted the operations",
	"fi_writedata posts",
	"fi_writedata completes with FI_RMA|FI_WRITE and the context",
	"delivery complete: the target held the data each time",
	"write to a bad key: error completion with the context",
	"the next write works again",
	"read from a region without FI_REMOTE_READ: error",
	"write to a region without FI_REMOTE_WRITE: error",
	"write past the end of the region: error",
	"a read works after all of them",
	"atomic on a bad key: error completion with the context",
	"misaligned atomic: error completion",
};

static const char *main_slot(int s, char *buf, size_t len)
{
	if (s < S_AT_OP)
		return main_slot_name[s];
	if (s < S_AT_ALL)
		snprintf(buf, len, "atomics %s %s",
			 kind_name[(s - S_AT_OP) / NOPS],
			 op_name[(s - S_AT_OP) % NOPS]);
	else if (s < S_AT_BTL)
		snprintf(buf, len, "atomics %s: every offered combination "
			 "was run", kind_name[s - S_AT_ALL]);
	else
		snprintf(buf, len, "the atomics btl ofi uses are offered");
	return buf;
}

static const char *conc_slot(int s, char *buf, size_t len)
{
	(void)s;
	snprintf(buf, len, "%d fetch-adds on each counter completed", NADD);
	return buf;
}

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_cntr *cntr;
static int report_fd = -1;		/* child: where checks go */

/* A child's check: slot, verdict and text, one line on the report pipe. */
static int check(int slot, int cond, const char *fmt, ...)
{
	char line[1024], *p;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (p = line; *p; p++)
		if (*p == '\n')
			*p = ' ';
	if (dprintf(report_fd, "%d %d %s\n", slot, cond ? 1 : 0, line) < 0)
		_exit(3);	/* nobody listens: the target is gone */
	return cond;
}

/* A child's diagnostic line: printed as "# ..." by the parent. */
static void note(const char *fmt, ...)
{
	char line[512], *p;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (p = line; *p; p++)
		if (*p == '\n')
			*p = ' ';
	dprintf(report_fd, "# %s\n", line);
}


static int open_all(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	int ret;

	setenv("FI_IWARP_IFACE", "lo", 1);
	hints->fabric_attr->prov_name = strdup("iwarp");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_RMA | FI_ATOMIC | FI_SOURCE;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	ret = fi_getinfo(TEST_API, NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (!ret)
		ret = fi_domain(fabric, info, &domain, NULL);
	if (!ret)
		ret = fi_endpoint(domain, info, &ep, NULL);
	if (!ret)
		ret = fi_cq_open(domain, &cq_attr, &cq, NULL);
	if (!ret)
		ret = fi_av_open(domain, &av_attr, &av, NULL);
	if (!ret)
		ret = fi_cntr_open(domain, &cntr_attr, &cntr, NULL);
	if (!ret)
		ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(ep, &av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(ep, &cntr->fid, FI_WRITE | FI_READ);
	if (!ret)
		ret = fi_enable(ep);
	return ret;
}

static void close_all(void)
{
	fi_close(&ep->fid);
	fi_close(&cntr->fid);
	fi_close(&av->fid);
	fi_close(&cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
}

/* Drives the provider (manual progress), if it is open. */
static void progress(void)
{
	if (cq)
		fi_cq_read(cq, NULL, 0);
}

/* One completion (1), an error (-1, *err filled) or nothing in time. */
static int wait_cq(double secs, struct fi_cq_data_entry *e,
		   struct fi_cq_err_entry *err)
{
	double end = tap_now() + secs;

	while (cq && tap_now() < end) {
		ssize_t n = fi_cq_read(cq, e, 1);

		if (n == 1)
			return 1;
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			fi_cq_readerr(cq, err, 0);
			return -1;
		}
	}
	return 0;
}

/* Posts until accepted (the queue may be full for a moment). */
#define POST(call)							\
	({								\
		ssize_t r_;						\
		double e_ = tap_now() + 10;				\
		while ((r_ = (call)) == -FI_EAGAIN && tap_now() < e_)	\
			fi_cq_read(cq, NULL, 0);			\
		r_;							\
	})

static uint32_t crc32(const uint8_t *p, size_t n)
{
	uint32_t c = ~0u;
	size_t i;
	int k;

	for (i = 0; i < n; i++) {
		c ^= p[i];
		for (k = 0; k < 8; k++)
			c = c >> 1 ^ (0xedb88320u & -(c & 1));
	}
	return ~c;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	size_t i;

	for (i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(seed >> 56);
	}
}

/* ---- the initiator's tests */

struct peer {
	fi_addr_t fa;
	struct hello h;
};

static int do_op(struct peer *t, bool wr, void *buf, size_t len,
		 uint64_t off, uint64_t key, uint64_t flags,
		 struct fi_cq_err_entry *err)
{
	struct iovec iov = { buf, len };
	struct fi_rma_iov rma = { t->h.base + off, len, key };
	struct fi_msg_rma m = {
		.msg_iov = &iov, .iov_count = 1, .addr = t->fa,
		.rma_iov = &rma, .rma_iov_count = 1, .context = buf,
	};
	struct fi_cq_data_entry e;
	ssize_t ret;
	int got;

	ret = POST(wr ? fi_writemsg(ep, &m, flags) : fi_readmsg(ep, &m, flags));
	if (ret)
		return (int)ret;
	got = wait_cq(30, &e, err);
	if (got == 1 && e.op_context != buf)
		return -FI_EOTHER;
	return got == 1 ? 0 : got < 0 ? -1 : -FI_ETIMEDOUT;
}

static void init_rma(struct peer *t, int tx, int rx)
{
	uint8_t *mirror = calloc(1, REGION), *buf = malloc(16u << 20);
	uint8_t *back = malloc(16u << 20);
	struct fi_cq_err_entry err;
	bool ok_w = true, ok_r = true;
	size_t sizes = 0, total = 0;
	uint64_t before, n_ops = 0;
	uint32_t crc;
	size_t len;

	before = fi_cntr_read(cntr);
	for (len = 1; len <= (16u << 20); len = len * 3 + 1) {
		size_t l = len > (16u << 20) ? (16u << 20) : len;
		uint64_t off = COUNTER_OFF + 64 +
			       next() % (REGION - COUNTER_OFF - 64 - l);
		uint64_t seed = next();

		fill(buf, l, seed);
		if (do_op(t, true, buf, l, off, t->h.key, FI_DELIVERY_COMPLETE,
			  &err)) {
			ok_w = false;
			break;
		}
		memcpy(mirror + off, buf, l);
		memset(back, 0, l);
		if (do_op(t, false, back, l, off, t->h.key, 0, &err) ||
		    memcmp(back, buf, l)) {
			ok_r = false;
			break;
		}
		sizes++;
		total += l;
		n_ops += 2;
	}
	check(S_WRITE, ok_w, "write: %zu sizes 1 B..16 MiB at random offsets "
	      "complete", sizes);
	check(S_READ, ok_r, "read: each written range reads back identical "
	      "(%zu octets)", total);
	/* the same once more without delivery completion: plain writes */
	fill(buf, 1 << 20, 7);
	memcpy(mirror + (REGION - (1 << 20)), buf, 1 << 20);
	check(S_WRITE_PLAIN, !do_op(t, true, buf, 1 << 20, REGION - (1 << 20),
				    t->h.key, 0, &err),
	      "write without FI_DELIVERY_COMPLETE completes");
	n_ops++;
	/* the target checks its whole region against our mirror; counters
	 * can be read only after the read behind settles it */
	check(S_READ_AFTER, !do_op(t, false, back, 1, 0, t->h.key, 0, &err),
	      "read after the plain write");
	n_ops++;
	check(S_CNTR, fi_cntr_read(cntr) - before == n_ops,
	      "counter bound FI_WRITE|FI_READ counted %llu of %llu",
	      (unsigned long long)(fi_cntr_read(cntr) - before),
	      (unsigned long long)n_ops);
	crc = crc32(mirror + COUNTER_OFF + 64, REGION - COUNTER_OFF - 64);
	xfull(tx, &crc, sizeof(crc), true);
	xfull(rx, &crc, sizeof(crc), false);	/* target is done looking */
	free(mirror);
	free(buf);
	free(back);
}

static void init_delivery(struct peer *t, int tx, int rx)
{
	uint8_t *buf = malloc(4u << 20);
	struct fi_cq_err_entry err;
	int i, bad = 0, verdict = 0;
	uint64_t flag;

	for (i = 1; i <= 10; i++) {
		fill(buf, 4u << 20, 1000 + i);
		/* data then flag: the target polls the flag */
		if (do_op(t, true, buf, 4u << 20, 1u << 20, t->h.key,
			  FI_DELIVERY_COMPLETE, &err)) {
			bad++;
			break;
		}
		/* delivered: the target must see it now, without waiting */
		if (xfull(tx, &i, sizeof(i), true) ||
		    xfull(rx, &verdict, sizeof(verdict), false)) {
			bad++;
			break;
		}
		if (!verdict)
			bad++;
		flag = (uint64_t)i;
		if (do_op(t, true, &flag, 8, COUNTER_OFF + 56, t->h.key, 0,
			  &err))
			bad++;
	}
	check(S_DELIVERY, !bad, "delivery complete: the target held 4 MiB each "
	      "time the initiator's completion came (10 rounds)");
	free(buf);
}

static void init_writedata(struct peer *t)
{
	uint8_t buf[3000];
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	int got;

	fill(buf, sizeof(buf), 99);
	check(S_WD_POST, !POST(fi_writedata(ep, buf, sizeof(buf), NULL,
					    0x1122334455667788ull, t->fa,
					    t->h.base + WDATA_OFF, t->h.key,
					    buf)),
	      "fi_writedata posts");
	got = wait_cq(10, &e, &err);
	check(S_WD_DONE, got == 1 && e.op_context == buf &&
	      (e.flags & (FI_RMA | FI_WRITE)) == (FI_RMA | FI_WRITE),
	      "fi_writedata completes with FI_RMA|FI_WRITE and the context");
}

/*
 * Errors at the target end the connection with a Terminate; a Write that
 * completed when TCP took it cannot report it, so these use delivery
 * completion (the fence Read carries the verdict).
 */
#define DC FI_DELIVERY_COMPLETE

static void init_violations(struct peer *t)
{
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_data_entry e;
	char buf[64] = "x", ebuf[256];
	uint64_t one = 1, res;
	int ret, ctx, got;

	ret = do_op(t, true, buf, 64, 0, t->h.key ^ 0x5a5a00, DC, &err);
	check(S_BAD_KEY, ret == -1 && err.op_context == buf && err.err &&
	      err.prov_errno,
	      "write to a bad key: error completion (%s) with the context",
	      fi_cq_strerror(cq, err.prov_errno, err.err_data, ebuf,
			     sizeof(ebuf)));
	check(S_AGAIN, !do_op(t, true, buf, 64, 0, t->h.key, DC, &err),
	      "the next write works again");
	ret = do_op(t, false, buf, 64, 0, t->h.key_wo, 0, &err);
	check(S_NO_READ, ret == -1 && err.op_context == buf && err.err,
	      "read from a region without FI_REMOTE_READ: error %d", err.err);
	ret = do_op(t, true, buf, 64, 0, t->h.key_ro, DC, &err);
	check(S_NO_WRITE, ret == -1 && err.op_context == buf && err.err,
	      "write to a region without FI_REMOTE_WRITE: error %d", err.err);
	ret = do_op(t, true, buf, 64, REGION - 32, t->h.key, DC, &err);
	check(S_BOUNDS, ret == -1 && err.op_context == buf && err.err,
	      "write past the end of the region: error %d", err.err);
	check(S_READ_OK, !do_op(t, false, buf, 64, 0, t->h.key, 0, &err),
	      "a read works after all of them");

	/* atomics on bad targets answer with errors, not Terminates */
	ret = (int)POST(fi_fetch_atomic(ep, &one, 1, NULL, &res, NULL, t->fa,
					t->h.base, t->h.key ^ 0x5a5a00,
					FI_UINT32, FI_SUM, &ctx));
	got = ret ? 0 : wait_cq(10, &e, &err);
	check(S_AT_BAD_KEY, got == -1 && err.op_context == &ctx &&
	      err.err == FI_EACCES,
	      "atomic on a bad key: error completion %d with the context",
	      err.err);
	ret = (int)POST(fi_fetch_atomic(ep, &one, 1, NULL, &res, NULL, t->fa,
					t->h.base + 2, t->h.key, FI_UINT32,
					FI_SUM, &ctx));
	got = ret ? 0 : wait_cq(10, &e, &err);
	check(S_AT_ALIGN, got == -1 && err.op_context == &ctx &&
	      err.err == FI_EINVAL, "misaligned atomic: error completion %d",
	      err.err);
}

/*
 * ---- the atomics oracle
 *
 * Written from the definitions in fi_atomic(3), element by element, not
 * from the provider: integers are taken as their mathematical values
 * (signed types sign-extended to 64 bits, unsigned ones zero-extended),
 * orderings are decided on those values, and arithmetic is done modulo
 * 2^64 in uint64_t and cut to the element's width when it is stored, so
 * wrap-around never relies on C's signed overflow. Floating-point types
 * are computed in their own C type. An op the oracle has no definition
 * for on a datatype returns false (the combination is then "not run").
 */

static size_t dt_size(int dt)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: return 1;
	case FI_INT16: case FI_UINT16: return 2;
	case FI_INT32: case FI_UINT32: case FI_FLOAT: return 4;
	case FI_INT64: case FI_UINT64: case FI_DOUBLE: return 8;
	case FI_FLOAT_COMPLEX: return sizeof(float complex);
	case FI_DOUBLE_COMPLEX: return sizeof(double complex);
	case FI_LONG_DOUBLE: return sizeof(long double);
	case FI_LONG_DOUBLE_COMPLEX: return sizeof(long double complex);
	case FI_INT128: case FI_UINT128: return 16;
	default: return 0;
	}
}

static bool dt_signed(int dt)
{
	return dt == FI_INT8 || dt == FI_INT16 || dt == FI_INT32 ||
	       dt == FI_INT64;
}

static bool dt_unsigned(int dt)
{
	return dt == FI_UINT8 || dt == FI_UINT16 || dt == FI_UINT32 ||
	       dt == FI_UINT64;
}

/* The value of a signed integer element. */
static int64_t get_s(int dt, const void *p)
{
	int8_t v8;
	int16_t v16;
	int32_t v32;
	int64_t v64;

	switch (dt) {
	case FI_INT8: memcpy(&v8, p, 1); return v8;
	case FI_INT16: memcpy(&v16, p, 2); return v16;
	case FI_INT32: memcpy(&v32, p, 4); return v32;
	default: memcpy(&v64, p, 8); return v64;
	}
}

/* The value of an unsigned integer element. */
static uint64_t get_u(int dt, const void *p)
{
	uint8_t v8;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	switch (dt) {
	case FI_UINT8: memcpy(&v8, p, 1); return v8;
	case FI_UINT16: memcpy(&v16, p, 2); return v16;
	case FI_UINT32: memcpy(&v32, p, 4); return v32;
	default: memcpy(&v64, p, 8); return v64;
	}
}

/* Stores the low bits of v that fit the element: the wrap-around. */
static void put_bits(int dt, void *p, uint64_t v)
{
	uint8_t v8 = (uint8_t)v;
	uint16_t v16 = (uint16_t)v;
	uint32_t v32 = (uint32_t)v;

	switch (dt_size(dt)) {
	case 1: memcpy(p, &v8, 1); break;
	case 2: memcpy(p, &v16, 2); break;
	case 4: memcpy(p, &v32, 4); break;
	default: memcpy(p, &v, 8); break;
	}
}

/* -1, 0 or 1 as x is below, equal to or above y, as numbers of dt. */
static int order(int dt, const void *x, const void *y)
{
	if (dt_signed(dt)) {
		int64_t a = get_s(dt, x), b = get_s(dt, y);

		return a < b ? -1 : a > b;
	} else {
		uint64_t a = get_u(dt, x), b = get_u(dt, y);

		return a < b ? -1 : a > b;
	}
}

static bool oracle_int(int op, int dt, void *addr, const void *buf,
		       const void *cmp)
{
	/* all 64 bits of each value; a signed one sign-extended */
	uint64_t a = dt_signed(dt) ? (uint64_t)get_s(dt, addr) :
				     get_u(dt, addr);
	uint64_t b = dt_signed(dt) ? (uint64_t)get_s(dt, buf) :
				     get_u(dt, buf);
	uint64_t c = dt_signed(dt) ? (uint64_t)get_s(dt, cmp) :
				     get_u(dt, cmp);
	int buf_vs_addr = order(dt, buf, addr);
	int cmp_vs_addr = order(dt, cmp, addr);
	uint64_t r = a;

	switch (op) {
	case FI_MIN: if (buf_vs_addr < 0) r = b; break;
	case FI_MAX: if (buf_vs_addr > 0) r = b; break;
	case FI_SUM: r = a + b; break;
	case FI_PROD: r = a * b; break;
	case FI_LOR: r = a != 0 || b != 0; break;
	case FI_LAND: r = a != 0 && b != 0; break;
	case FI_LXOR: r = (a != 0 && b == 0) || (a == 0 && b != 0); break;
	case FI_BOR: r = a | b; break;
	case FI_BAND: r = a & b; break;
	case FI_BXOR: r = a ^ b; break;
	case FI_ATOMIC_READ: break;
	case FI_ATOMIC_WRITE: r = b; break;
	case FI_CSWAP: if (cmp_vs_addr == 0) r = b; break;
	case FI_CSWAP_NE: if (cmp_vs_addr != 0) r = b; break;
	case FI_CSWAP_LE: if (cmp_vs_addr <= 0) r = b; break;
	case FI_CSWAP_LT: if (cmp_vs_addr < 0) r = b; break;
	case FI_CSWAP_GE: if (cmp_vs_addr >= 0) r = b; break;
	case FI_CSWAP_GT: if (cmp_vs_addr > 0) r = b; break;
	case FI_MSWAP: r = (b & c) | (a & ~c); break;
	default: return false;
	}
	put_bits(dt, addr, r);
	return true;
}

static bool oracle_float(int op, void *addr, const void *buf,
			 const void *cmp)
{
	float a, b, c, r;

	memcpy(&a, addr, sizeof(a));
	memcpy(&b, buf, sizeof(b));
	memcpy(&c, cmp, sizeof(c));
	r = a;
	switch (op) {
	case FI_MIN: if (b < a) r = b; break;
	case FI_MAX: if (b > a) r = b; break;
	case FI_SUM: r = a + b; break;
	case FI_PROD: r = a * b; break;
	case FI_LOR: r = a != 0 || b != 0; break;
	case FI_LAND: r = a != 0 && b != 0; break;
	case FI_LXOR: r = (a != 0 && b == 0) || (a == 0 && b != 0); break;
	case FI_ATOMIC_READ: break;
	case FI_ATOMIC_WRITE: r = b; break;
	case FI_CSWAP: if (c == a) r = b; break;
	case FI_CSWAP_NE: if (c != a) r = b; break;
	case FI_CSWAP_LE: if (c <= a) r = b; break;
	case FI_CSWAP_LT: if (c < a) r = b; break;
	case FI_CSWAP_GE: if (c >= a) r = b; break;
	case FI_CSWAP_GT: if (c > a) r = b; break;
	default: return false;
	}
	memcpy(addr, &r, sizeof(r));
	return true;
}

static bool oracle_double(int op, void *addr, const void *buf,
			  const void *cmp)
{
	double a, b, c, r;

	memcpy(&a, addr, sizeof(a));
	memcpy(&b, buf, sizeof(b));
	memcpy(&c, cmp, sizeof(c));
	r = a;
	switch (op) {
	case FI_MIN: if (b < a) r = b; break;
	case FI_MAX: if (b > a) r = b; break;
	case FI_SUM: r = a + b; break;
	case FI_PROD: r = a * b; break;
	case FI_LOR: r = a != 0 || b != 0; break;
	case FI_LAND: r = a != 0 && b != 0; break;
	case FI_LXOR: r = (a != 0 && b == 0) || (a == 0 && b != 0); break;
	case FI_ATOMIC_READ: break;
	case FI_ATOMIC_WRITE: r = b; break;
	case FI_CSWAP: if (c == a) r = b; break;
	case FI_CSWAP_NE: if (c != a) r = b; break;
	case FI_CSWAP_LE: if (c <= a) r = b; break;
	case FI_CSWAP_LT: if (c < a) r = b; break;
	case FI_CSWAP_GE: if (c >= a) r = b; break;
	case FI_CSWAP_GT: if (c > a) r = b; break;
	default: return false;
	}
	memcpy(addr, &r, sizeof(r));
	return true;
}

static bool oracle_ldouble(int op, void *addr, const void *buf,
			   const void *cmp)
{
	long double a, b, c, r;

	memcpy(&a, addr, sizeof(a));
	memcpy(&b, buf, sizeof(b));
	memcpy(&c, cmp, sizeof(c));
	r = a;
	switch (op) {
	case FI_MIN: if (b < a) r = b; break;
	case FI_MAX: if (b > a) r = b; break;
	case FI_SUM: r = a + b; break;
	case FI_PROD: r = a * b; break;
	case FI_LOR: r = a != 0 || b != 0; break;
	case FI_LAND: r = a != 0 && b != 0; break;
	case FI_LXOR: r = (a != 0 && b == 0) || (a == 0 && b != 0); break;
	case FI_ATOMIC_READ: break;
	case FI_ATOMIC_WRITE: r = b; break;
	case FI_CSWAP: if (c == a) r = b; break;
	case FI_CSWAP_NE: if (c != a) r = b; break;
	case FI_CSWAP_LE: if (c <= a) r = b; break;
	case FI_CSWAP_LT: if (c < a) r = b; break;
	case FI_CSWAP_GE: if (c >= a) r = b; break;
	case FI_CSWAP_GT: if (c > a) r = b; break;
	default: return false;
	}
	memcpy(addr, &r, sizeof(r));
	return true;
}

/* Complex numbers have no order: no MIN/MAX and no ordered compares. */
static bool oracle_fcomplex(int op, void *addr, const void *buf,
			    const void *cmp)
{
	float complex a, b, c, r;

	memcpy(&a, addr, sizeof(a));
	memcpy(&b, buf, sizeof(b));
	memcpy(&c, cmp, sizeof(c));
	r = a;
	switch (op) {
	case FI_SUM: r = a + b; break;
	case FI_PROD: r = a * b; break;
	case FI_LOR: r = a != 0 || b != 0; break;
	case FI_LAND: r = a != 0 && b != 0; break;
	case FI_LXOR: r = (a != 0 && b == 0) || (a == 0 && b != 0); break;
	case FI_ATOMIC_READ: break;
	case FI_ATOMIC_WRITE: r = b; break;
	case FI_CSWAP: if (c == a) r = b; break;
	case FI_CSWAP_NE: if (c != a) r = b; break;
	default: return false;
	}
	memcpy(addr, &r, sizeof(r));
	return true;
}

static bool oracle_dcomplex(int op, void *addr, const void *buf,
			    const void *cmp)
{
	double complex a, b, c, r;

	memcpy(&a, addr, sizeof(a));
	memcpy(&b, buf, sizeof(b));
	memcpy(&c, cmp, sizeof(c));
	r = a;
	switch (op) {
	case FI_SUM: r = a + b; break;
	case FI_PROD: r = a * b; break;
	case FI_LOR: r = a != 0 || b != 0; break;
	case FI_LAND: r = a != 0 && b != 0; break;
	case FI_LXOR: r = (a != 0 && b == 0) || (a == 0 && b != 0); break;
	case FI_ATOMIC_READ: break;
	case FI_ATOMIC_WRITE: r = b; break;
	case FI_CSWAP: if (c == a) r = b; break;
	case FI_CSWAP_NE: if (c != a) r = b; break;
	default: return false;
	}
	memcpy(addr, &r, sizeof(r));
	return true;
}

static bool oracle_ldcomplex(int op, void *addr, const void *buf,
			     const void *cmp)
{
	long double complex a, b, c, r;

	memcpy(&a, addr, sizeof(a));
	memcpy(&b, buf, sizeof(b));
	memcpy(&c, cmp, sizeof(c));
	r = a;
	switch (op) {
	case FI_SUM: r = a + b; break;
	case FI_PROD: r = a * b; break;
	case FI_LOR: r = a != 0 || b != 0; break;
	case FI_LAND: r = a != 0 && b != 0; break;
	case FI_LXOR: r = (a != 0 && b == 0) || (a == 0 && b != 0); break;
	case FI_ATOMIC_READ: break;
	case FI_ATOMIC_WRITE: r = b; break;
	case FI_CSWAP: if (c == a) r = b; break;
	case FI_CSWAP_NE: if (c != a) r = b; break;
	default: return false;
	}
	memcpy(addr, &r, sizeof(r));
	return true;
}

/* *addr after op with operand buf and compare value cmp (one element). */
static bool oracle(int op, int dt, void *addr, const void *buf,
		   const void *cmp)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: case FI_INT16: case FI_UINT16:
	case FI_INT32: case FI_UINT32: case FI_INT64: case FI_UINT64:
		return oracle_int(op, dt, addr, buf, cmp);
	case FI_FLOAT: return oracle_float(op, addr, buf, cmp);
	case FI_DOUBLE: return oracle_double(op, addr, buf, cmp);
	case FI_LONG_DOUBLE: return oracle_ldouble(op, addr, buf, cmp);
	case FI_FLOAT_COMPLEX: return oracle_fcomplex(op, addr, buf, cmp);
	case FI_DOUBLE_COMPLEX: return oracle_dcomplex(op, addr, buf, cmp);
	case FI_LONG_DOUBLE_COMPLEX:
		return oracle_ldcomplex(op, addr, buf, cmp);
	default:
		return false;	/* 128-bit integers: no oracle yet */
	}
}

static bool oracle_knows(int op, int dt)
{
	long double complex a = 0, b = 0, c = 0;	/* big enough */

	return dt_size(dt) && dt_size(dt) <= sizeof(a) &&
	       oracle(op, dt, &a, &b, &c);
}

/* Equal elements: bit for bit, except the padding of long doubles. */
static bool same_ld(long double x, long double y)
{
	if (isnan(x) || isnan(y))
		return isnan(x) && isnan(y);
	return x == y && !signbit(x) == !signbit(y);
}

static bool elem_equal(int dt, const void *x, const void *y)
{
	long double complex u, v;
	long double a, b;

	switch (dt) {
	case FI_LONG_DOUBLE:
		memcpy(&a, x, sizeof(a));
		memcpy(&b, y, sizeof(b));
		return same_ld(a, b);
	case FI_LONG_DOUBLE_COMPLEX:
		memcpy(&u, x, sizeof(u));
		memcpy(&v, y, sizeof(v));
		return same_ld(creall(u), creall(v)) &&
		       same_ld(cimagl(u), cimagl(v));
	default:
		return !memcmp(x, y, dt_size(dt));
	}
}

static void fmt_elem(int dt, const void *p, char *out, size_t len)
{
	float complex fc;
	double complex dc;
	long double complex lc;
	long double ld;
	double d;
	float f;
	size_t i, n;

	switch (dt) {
	case FI_INT8: case FI_INT16: case FI_INT32: case FI_INT64:
		snprintf(out, len, "%lld", (long long)get_s(dt, p));
		break;
	case FI_UINT8: case FI_UINT16: case FI_UINT32: case FI_UINT64:
		snprintf(out, len, "%llu", (unsigned long long)get_u(dt, p));
		break;
	case FI_FLOAT:
		memcpy(&f, p, sizeof(f));
		snprintf(out, len, "%.9g", f);
		break;
	case FI_DOUBLE:
		memcpy(&d, p, sizeof(d));
		snprintf(out, len, "%.17g", d);
		break;
	case FI_LONG_DOUBLE:
		memcpy(&ld, p, sizeof(ld));
		snprintf(out, len, "%.21Lg", ld);
		break;
	case FI_FLOAT_COMPLEX:
		memcpy(&fc, p, sizeof(fc));
		snprintf(out, len, "(%.9g%+.9gi)", crealf(fc), cimagf(fc));
		break;
	case FI_DOUBLE_COMPLEX:
		memcpy(&dc, p, sizeof(dc));
		snprintf(out, len, "(%.17g%+.17gi)", creal(dc), cimag(dc));
		break;
	case FI_LONG_DOUBLE_COMPLEX:
		memcpy(&lc, p, sizeof(lc));
		snprintf(out, len, "(%.21Lg%+.21Lgi)", creall(lc),
			 cimagl(lc));
		break;
	default:
		n = dt_size(dt);
		for (i = 0; i < n && 2 * i + 3 < len; i++)
			snprintf(out + 2 * i, len - 2 * i, "%02x",
				 ((const uint8_t *)p)[i]);
		break;
	}
}

/* Complex values from their two parts (C11: laid out as T[2]). */
static float complex fc(float re, float im)
{
	float v[2] = { re, im };
	float complex z;

	memcpy(&z, v, sizeof(z));
	return z;
}

static double complex dc(double re, double im)
{
	double v[2] = { re, im };
	double complex z;

	memcpy(&z, v, sizeof(z));
	return z;
}

static long double complex lc(long double re, long double im)
{
	long double v[2] = { re, im };
	long double complex z;

	memcpy(&z, v, sizeof(z));
	return z;
}

#define NVAL 16				/* operand values per datatype */
#define VAL_MAX 32			/* largest element, octets */

/*
 * The values each datatype is tried with (every ordered pair of them, see
 * at_layout): zero, small positive and negative numbers, the type's
 * limits and their neighbours (so MAX+1, MIN-1, MIN*-1 and MAX*MAX wrap
 * around), and bit patterns. Returns how many, 0 for a datatype without
 * any.
 */
static size_t at_values(int dt, uint8_t *out)
{
	int64_t smin = 0, smax = 0;
	uint64_t umax = 0;
	size_t i, s = dt_size(dt);

	switch (dt) {
	case FI_INT8: smin = INT8_MIN; smax = INT8_MAX; break;
	case FI_INT16: smin = INT16_MIN; smax = INT16_MAX; break;
	case FI_INT32: smin = INT32_MIN; smax = INT32_MAX; break;
	case FI_INT64: smin = INT64_MIN; smax = INT64_MAX; break;
	case FI_UINT8: umax = UINT8_MAX; break;
	case FI_UINT16: umax = UINT16_MAX; break;
	case FI_UINT32: umax = UINT32_MAX; break;
	case FI_UINT64: umax = UINT64_MAX; break;
	default: break;
	}
	if (dt_signed(dt)) {
		const int64_t v[NVAL] = {
			0, 1, -1, 2, -2, 3, -7, 100, -100, smin, smin + 1,
			smax, smax - 1, smax / 3, smin / 5, 11,
		};

		for (i = 0; i < NVAL; i++)
			put_bits(dt, out + i * s, (uint64_t)v[i]);
		return NVAL;
	}
	if (dt_unsigned(dt)) {
		const uint64_t v[NVAL] = {
			0, 1, 2, 3, 7, 100, 200, umax, umax - 1, umax / 2,
			umax / 2 + 1, umax / 3, umax / 3 * 2, umax / 5,
			umax / 17, 42,
		};

		for (i = 0; i < NVAL; i++)
			put_bits(dt, out + i * s, v[i]);
		return NVAL;
	}
	switch (dt) {
	case FI_FLOAT: {
		const float v[] = { 0, 1, -1, 2.5f, -3.25f, 0.1f, 1024, -7,
				    -0.0f };

		memcpy(out, v, sizeof(v));
		return sizeof(v) / sizeof(v[0]);
	}
	case FI_DOUBLE: {
		const double v[] = { 0, 1, -1, 2.5, -3.25, 0.1, 1024, -7,
				     -0.0 };

		memcpy(out, v, sizeof(v));
		return sizeof(v) / sizeof(v[0]);
	}
	case FI_LONG_DOUBLE: {
		const long double v[] = { 0, 1, -1, 2.5L, -3.25L, 0.1L, 1024,
					  -7 };

		memcpy(out, v, sizeof(v));
		return sizeof(v) / sizeof(v[0]);
	}
	case FI_FLOAT_COMPLEX:
	case FI_DOUBLE_COMPLEX:
	case FI_LONG_DOUBLE_COMPLEX: {
		static const float v[][2] = {
			{ 0, 0 }, { 1, 0 }, { 0, 1 }, { 1.5f, -2 },
			{ -3, 0.25f }, { -1, -1 }, { 2, 2 }, { 0.5f, 4 },
		};
		size_t nc = sizeof(v) / sizeof(v[0]);

		for (i = 0; i < nc; i++) {
			float complex f = fc(v[i][0], v[i][1]);
			double complex d = dc(v[i][0], v[i][1]);
			long double complex l = lc(v[i][0], v[i][1]);

			if (dt == FI_FLOAT_COMPLEX)
				memcpy(out + i * s, &f, s);
			else if (dt == FI_DOUBLE_COMPLEX)
				memcpy(out + i * s, &d, s);
			else
				memcpy(out + i * s, &l, s);
		}
		return nc;
	}
	default:
		return 0;
	}
}

/*
 * The oracle against answers worked out by hand, so a mistake in it
 * shows here and not as a provider bug; run by the target process.
 */
static int known(int op, int dt, const void *a, const void *b,
		 const void *c, const void *want, const char *what,
		 char *why, size_t len)
{
	long double complex m;

	memcpy(&m, a, dt_size(dt));
	if (oracle(op, dt, &m, b, c) && elem_equal(dt, &m, want))
		return 0;
	if (!*why)
		snprintf(why, len, "%s", what);
	return 1;
}

#define KNOWN(dt, T, op, a, b, c, want)					\
	(n++, bad += known(op, dt, &(T){ a }, &(T){ b }, &(T){ c },	\
			   &(T){ want },				\
			   #op " " #dt " " #a " " #b " " #c " -> " #want,	\
			   why, sizeof(why)))

static void oracle_selftest(void)
{
	char why[200] = "";
	int n = 0, bad = 0;
	float z = 0;

	/* wrap-around: MAX+1, MIN-1, MIN*-1, products past the width */
	KNOWN(FI_INT8, int8_t, FI_SUM, INT8_MAX, 1, 0, INT8_MIN);
	KNOWN(FI_INT8, int8_t, FI_SUM, INT8_MIN, -1, 0, INT8_MAX);
	KNOWN(FI_UINT8, uint8_t, FI_SUM, UINT8_MAX, 1, 0, 0);
	KNOWN(FI_UINT8, uint8_t, FI_SUM, 0, UINT8_MAX, 0, UINT8_MAX);
	KNOWN(FI_UINT8, uint8_t, FI_PROD, 200, 200, 0, 64);
	KNOWN(FI_INT8, int8_t, FI_PROD, INT8_MIN, -1, 0, INT8_MIN);
	KNOWN(FI_INT16, int16_t, FI_PROD, 300, 300, 0, 24464);
	KNOWN(FI_INT16, int16_t, FI_PROD, 200, 200, 0, -25536);
	KNOWN(FI_UINT16, uint16_t, FI_PROD, UINT16_MAX, UINT16_MAX, 0, 1);
	KNOWN(FI_INT32, int32_t, FI_SUM, INT32_MAX, INT32_MAX, 0, -2);
	KNOWN(FI_UINT32, uint32_t, FI_PROD, 65536, 65536, 0, 0);
	KNOWN(FI_UINT64, uint64_t, FI_SUM, UINT64_MAX, 2, 0, 1);
	KNOWN(FI_INT64, int64_t, FI_SUM, INT64_MAX, 1, 0, INT64_MIN);
	KNOWN(FI_INT64, int64_t, FI_PROD, INT64_MIN, -1, 0, INT64_MIN);
	KNOWN(FI_UINT64, uint64_t, FI_PROD, UINT64_MAX, UINT64_MAX, 0, 1);
	/* orderings follow the type's signedness */
	KNOWN(FI_UINT32, uint32_t, FI_MIN, UINT32_MAX, 1, 0, 1);
	KNOWN(FI_INT32, int32_t, FI_MIN, -1, 1, 0, -1);
	KNOWN(FI_INT32, int32_t, FI_MAX, -1, 0, 0, 0);
	KNOWN(FI_UINT16, uint16_t, FI_MAX, 1, UINT16_MAX, 0, UINT16_MAX);
	KNOWN(FI_INT64, int64_t, FI_MAX, INT64_MIN, -1, 0, -1);
	KNOWN(FI_UINT16, uint16_t, FI_CSWAP_LT, 65535, 9, 1, 9);
	KNOWN(FI_INT16, int16_t, FI_CSWAP_LT, -1, 9, 1, -1);
	KNOWN(FI_INT32, int32_t, FI_CSWAP_GE, 5, 9, 5, 9);
	KNOWN(FI_INT32, int32_t, FI_CSWAP_GT, 5, 9, 5, 5);
	KNOWN(FI_INT8, int8_t, FI_CSWAP_LE, -3, 9, -4, 9);
	KNOWN(FI_UINT8, uint8_t, FI_CSWAP_LE, 3, 9, 4, 3);
	KNOWN(FI_UINT64, uint64_t, FI_CSWAP, 7, 1, 7, 1);
	KNOWN(FI_UINT64, uint64_t, FI_CSWAP, 7, 1, 8, 7);
	KNOWN(FI_UINT64, uint64_t, FI_CSWAP_NE, 7, 1, 7, 7);
	KNOWN(FI_INT64, int64_t, FI_CSWAP_NE, -1, 1, 0, 1);
	/* bits and logic */
	KNOWN(FI_UINT8, uint8_t, FI_MSWAP, 0xaa, 0x55, 0x0f, 0xa5);
	KNOWN(FI_INT16, int16_t, FI_MSWAP, -1, 0, 0x00ff, -256);
	KNOWN(FI_UINT32, uint32_t, FI_BXOR, 0xf0f0f0f0, 0xff00ff00, 0,
	      0x0ff00ff0);
	KNOWN(FI_INT64, int64_t, FI_BAND, -1, 0x1234, 0, 0x1234);
	KNOWN(FI_INT8, int8_t, FI_BOR, INT8_MIN, 1, 0, -127);
	KNOWN(FI_INT8, int8_t, FI_LXOR, 5, 0, 0, 1);
	KNOWN(FI_INT8, int8_t, FI_LXOR, 5, 3, 0, 0);
	KNOWN(FI_INT8, int8_t, FI_LAND, -1, 2, 0, 1);
	KNOWN(FI_UINT32, uint32_t, FI_LAND, 4, 0, 0, 0);
	KNOWN(FI_UINT16, uint16_t, FI_LOR, 0, 0, 0, 0);
	KNOWN(FI_INT32, int32_t, FI_LOR, INT32_MIN, 0, 0, 1);
	KNOWN(FI_INT8, int8_t, FI_ATOMIC_READ, -3, 4, 0, -3);
	KNOWN(FI_INT8, int8_t, FI_ATOMIC_WRITE, -3, 4, 0, 4);
	/* floating point */
	KNOWN(FI_FLOAT, float, FI_SUM, 1.5f, -2.25f, 0, -0.75f);
	KNOWN(FI_FLOAT, float, FI_MIN, 2.5f, -7, 0, -7);
	KNOWN(FI_FLOAT, float, FI_MAX, 2.5f, -7, 0, 2.5f);
	KNOWN(FI_FLOAT, float, FI_PROD, -1, z, 0, -z);
	KNOWN(FI_DOUBLE, double, FI_PROD, 2.5, -3.25, 0, -8.125);
	KNOWN(FI_DOUBLE, double, FI_MAX, -1, -7, 0, -1);
	KNOWN(FI_DOUBLE, double, FI_CSWAP_GE, 0.5, 3, 1, 3);
	KNOWN(FI_DOUBLE, double, FI_CSWAP_LT, 0.5, 3, 1, 0.5);
	KNOWN(FI_LONG_DOUBLE, long double, FI_SUM, 1.5L, 2, 0, 3.5L);
	KNOWN(FI_LONG_DOUBLE, long double, FI_CSWAP_LE, 2, 8, 3, 2);
	KNOWN(FI_FLOAT_COMPLEX, float complex, FI_PROD, fc(1, 2),
	      fc(3, -1), 0, fc(5, 5));
	KNOWN(FI_DOUBLE_COMPLEX, double complex, FI_SUM, dc(1, 2),
	      dc(-0.5, 0.5), 0, dc(0.5, 2.5));
	KNOWN(FI_DOUBLE_COMPLEX, double complex, FI_CSWAP_NE, dc(1, 1),
	      dc(9, 9), dc(1, 1), dc(1, 1));
	KNOWN(FI_LONG_DOUBLE_COMPLEX, long double complex, FI_CSWAP,
	      lc(1, 1), lc(9, 9), lc(1, 1), lc(9, 9));
	/* no definition where fi_atomic(3) has none */
	n += 3;
	if (oracle_knows(FI_BOR, FI_FLOAT) ||
	    oracle_knows(FI_MIN, FI_DOUBLE_COMPLEX) ||
	    oracle_knows(FI_SUM, FI_INT128)) {
		bad++;
		if (!*why)
			snprintf(why, sizeof(why), "defines an op a datatype "
				 "does not have");
	}
	tap_ok(!bad, "oracle: %d of %d answers worked out by hand hold%s%s",
	       n - bad, n, bad ? "; first wrong: " : "", why);
}

/* ---- atomics over the remote region, against the oracle */

#define AT_MAXE (NVAL * NVAL)		/* elements of one combination */
#define GUARD 64			/* octets after them, must stay */

static bool at_dead;			/* an atomic timed out: stop */

static int at_valid(int kind, int dt, int op, size_t *cnt)
{
	enum fi_datatype d = (enum fi_datatype)dt;
	enum fi_op o = (enum fi_op)op;

	return kind == 0 ? fi_atomicvalid(ep, d, o, cnt) :
	       kind == 1 ? fi_fetch_atomicvalid(ep, d, o, cnt) :
			   fi_compare_atomicvalid(ep, d, o, cnt);
}

static bool is_compare_op(int op)
{
	return op == FI_CSWAP || op == FI_CSWAP_NE || op == FI_CSWAP_LE ||
	       op == FI_CSWAP_LT || op == FI_CSWAP_GE || op == FI_CSWAP_GT ||
	       op == FI_MSWAP;
}

/* One element that came out wrong, in words. */
static void at_describe(int kind, int op, int dt, bool single,
			const uint8_t *old, const uint8_t *opnd,
			const uint8_t *cmp, const uint8_t *got,
			const uint8_t *want, const char *what, char *why,
			size_t len)
{
	char o[64], a[64], c[64], g[64], w[64];

	fmt_elem(dt, old, o, sizeof(o));
	fmt_elem(dt, opnd, a, sizeof(a));
	fmt_elem(dt, cmp, c, sizeof(c));
	fmt_elem(dt, got, g, sizeof(g));
	fmt_elem(dt, want, w, sizeof(w));
	snprintf(why, len, "%s %s: target %s, operand %s%s%s -> %s %s, "
		 "oracle %s", dt_name[dt], single ? "count 1" : "vector", o,
		 op == FI_ATOMIC_READ ? "(none)" : a,
		 kind == 2 ? ", compare " : "", kind == 2 ? c : "", what, g, w);
}

/*
 * Runs op on dt over every ordered pair of the datatype's values: element
 * (i, j) starts as value i, with value j as the operand (the compare value
 * for compare ops, whose operand is then a third value); once as vectors
 * as long as the provider takes, once one element per call (which sends
 * 64-bit ones as RFC 7306 Atomic Requests when that is on). The memory is
 * read back and compared with the oracle, with the fetched old values.
 * Returns 0 when everything matched, else -1 with why filled.
 */
static int at_run(struct peer *t, int kind, int op, int dt, size_t maxcnt,
		  long *elems, char *why, size_t len)
{
	static uint8_t vals[NVAL * VAL_MAX];
	static uint8_t old[AT_MAXE * VAL_MAX + GUARD], opnd[AT_MAXE * VAL_MAX];
	static uint8_t cmp[AT_MAXE * VAL_MAX], want[AT_MAXE * VAL_MAX + GUARD];
	static uint8_t mem[AT_MAXE * VAL_MAX + GUARD];
	static uint8_t res[AT_MAXE * VAL_MAX + GUARD];
	size_t s = dt_size(dt), nv = at_values(dt, vals), ne = nv * nv;
	size_t i, j, e, span = ne * s + GUARD, per, first, n;
	bool swapped = is_compare_op(op);
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_data_entry ce;
	int mode, got;
	ssize_t ret;

	for (i = 0; i < nv; i++)
		for (j = 0; j < nv; j++) {
			size_t k = (i * 7 + j * 3 + 1) % nv;

			e = i * nv + j;
			memcpy(old + e * s, vals + i * s, s);
			memcpy((swapped ? cmp : opnd) + e * s, vals + j * s, s);
			memcpy((swapped ? opnd : cmp) + e * s, vals + k * s, s);
			memcpy(want + e * s, old + e * s, s);
			oracle(op, dt, want + e * s, opnd + e * s, cmp + e * s);
		}
	memset(old + ne * s, 0xa5, GUARD);
	memcpy(want + ne * s, old + ne * s, GUARD);
	for (mode = 0; mode < 2; mode++) {
		per = mode ? 1 : maxcnt;
		ret = do_op(t, true, old, span, 0, t->h.key, 0, &err);
		if (ret) {
			at_dead = ret == -FI_ETIMEDOUT;
			snprintf(why, len, "%s: the RMA write of the starting "
				 "values failed (%zd)", dt_name[dt], ret);
			return -1;
		}
		memset(res, 0xee, span);
		for (first = 0; first < ne; first += per) {
			uint8_t *ctx = res + first * s;
			uint64_t addr = t->h.base + first * s;

			n = ne - first < per ? ne - first : per;
			ret = POST(kind == 0 ?
				   fi_atomic(ep, opnd + first * s, n, NULL,
					     t->fa, addr, t->h.key,
					     (enum fi_datatype)dt,
					     (enum fi_op)op, ctx) :
				   kind == 1 ?
				   fi_fetch_atomic(ep, opnd + first * s, n,
						   NULL, ctx, NULL, t->fa, addr,
						   t->h.key,
						   (enum fi_datatype)dt,
						   (enum fi_op)op, ctx) :
				   fi_compare_atomic(ep, opnd + first * s, n,
						     NULL, cmp + first * s,
						     NULL, ctx, NULL, t->fa,
						     addr, t->h.key,
						     (enum fi_datatype)dt,
						     (enum fi_op)op, ctx));
			if (ret) {
				snprintf(why, len, "%s: %s of %zu element(s) "
					 "returned %zd", dt_name[dt],
					 kind_name[kind], n, ret);
				return -1;
			}
			got = wait_cq(10, &ce, &err);
			if (got == 0) {
				at_dead = true;
				snprintf(why, len, "%s: no completion within "
					 "10 s", dt_name[dt]);
				return -1;
			}
			if (got < 0) {
				snprintf(why, len, "%s: error completion %d "
					 "for %zu element(s)", dt_name[dt],
					 err.err, n);
				return -1;
			}
			if (ce.op_context != ctx || !(ce.flags & FI_ATOMIC)) {
				snprintf(why, len, "%s: completion with "
					 "context %p (not %p), flags %#llx",
					 dt_name[dt], ce.op_context,
					 (void *)ctx,
					 (unsigned long long)ce.flags);
				return -1;
			}
		}
		ret = do_op(t, false, mem, span, 0, t->h.key, 0, &err);
		if (ret) {
			at_dead = ret == -FI_ETIMEDOUT;
			snprintf(why, len, "%s: reading the results back "
				 "failed (%zd)", dt_name[dt], ret);
			return -1;
		}
		for (e = 0; e < ne; e++) {
			if (!elem_equal(dt, mem + e * s, want + e * s)) {
				at_describe(kind, op, dt, mode, old + e * s,
					    opnd + e * s, cmp + e * s,
					    mem + e * s, want + e * s,
					    "memory", why, len);
				return -1;
			}
			if (kind && !elem_equal(dt, res + e * s, old + e * s)) {
				at_describe(kind, op, dt, mode, old + e * s,
					    opnd + e * s, cmp + e * s,
					    res + e * s, old + e * s,
					    "fetched", why, len);
				return -1;
			}
		}
		if (memcmp(mem + ne * s, want + ne * s, GUARD)) {
			snprintf(why, len, "%s %s: the target changed octets "
				 "after the last element", dt_name[dt],
				 mode ? "count 1" : "vector");
			return -1;
		}
		for (i = ne * s; i < span; i++)
			if (kind && res[i] != 0xee) {
				snprintf(why, len, "%s %s: the result buffer "
					 "was written past its %zu elements",
					 dt_name[dt], mode ? "count 1" :
					 "vector", ne);
				return -1;
			}
		*elems += (long)ne;
	}
	return 0;
}

static void appendf(char *buf, size_t len, const char *fmt, ...)
{
	size_t have = strlen(buf);
	va_list ap;

	if (have + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + have, len - have, fmt, ap);
	va_end(ap);
}

/*
 * Every op of every kind, one check each, naming the datatypes that
 * matched and what went wrong with the others; per kind, one check that
 * no offered combination was left out.
 */
static void init_atomics(struct peer *t)
{
	int kind, op, dt;

	for (kind = 0; kind < NKIND; kind++) {
		char left_out[700] = "";
		int offered_k = 0, left_k = 0;

		for (op = 0; op < NOPS; op++) {
			char good[300] = "", bad[800] = "", why[512];
			int offered = 0, matched = 0;
			long elems = 0;

			for (dt = 0; dt < NDT; dt++) {
				const char *skip = NULL;
				size_t cnt = 0;

				if (at_valid(kind, dt, op, &cnt))
					continue;
				offered++;
				if (!oracle_knows(op, dt))
					skip = "the test has no oracle for it";
				else if (at_dead)
					skip = "an earlier atomic timed out";
				else if (!cnt)
					skip = "offered with count 0";
				if (skip) {
					left_k++;
					appendf(left_out, sizeof(left_out),
						"%s%s/%s (%s)",
						*left_out ? ", " : "",
						op_name[op], dt_name[dt], skip);
					appendf(bad, sizeof(bad),
						"%s%s not run: %s",
						*bad ? "; " : "", dt_name[dt],
						skip);
					continue;
				}
				if (!at_run(t, kind, op, dt, cnt, &elems, why,
					    sizeof(why))) {
					matched++;
					appendf(good, sizeof(good), "%s%s",
						*good ? " " : "", dt_name[dt]);
				} else {
					appendf(bad, sizeof(bad), "%s%s",
						*bad ? "; " : "", why);
				}
			}
			offered_k += offered;
			if (!offered)
				check(S_AT_OP + kind * NOPS + op, 1,
				      "atomics %s %s: not offered for any "
				      "datatype", kind_name[kind],
				      op_name[op]);
			else
				check(S_AT_OP + kind * NOPS + op,
				      matched == offered,
				      "atomics %s %s: %d of %d offered "
				      "datatypes match the oracle, %ld "
				      "element results as vectors and one "
				      "by one (%s)%s%s", kind_name[kind],
				      op_name[op], matched, offered, elems,
				      good, *bad ? "; WRONG: " : "", bad);
		}
		check(S_AT_ALL + kind, !left_k && offered_k,
		      "atomics %s: %d of the %d offered op/datatype "
		      "combinations were run%s%s", kind_name[kind],
		      offered_k - left_k, offered_k,
		      left_k ? "; not run: " : "", left_out);
	}
	check(S_AT_BTL, fi_atomicvalid(ep, FI_UINT64, FI_SUM, NULL) == 0 &&
	      fi_compare_atomicvalid(ep, FI_UINT32, FI_CSWAP, NULL) == 0 &&
	      fi_fetch_atomicvalid(ep, FI_UINT64, FI_ATOMIC_WRITE, NULL) == 0,
	      "the atomics btl ofi uses are offered");
}

/* Concurrent fetch-adds on the shared counters (32 and 64 bit). */
static void init_counter(struct peer *t, int tx)
{
	uint64_t one = 1, got64;
	uint32_t one32 = 1, got32;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	int i, bad = 0;

	for (i = 0; i < NADD; i++) {
		if (POST(fi_fetch_atomic(ep, &one, 1, NULL, &got64, NULL, t->fa,
					 t->h.base + COUNTER_OFF, t->h.key,
					 FI_UINT64, FI_SUM, &got64)) ||
		    wait_cq(10, &e, &err) != 1)
			bad++;
		if (POST(fi_fetch_atomic(ep, &one32, 1, NULL, &got32, NULL,
					 t->fa, t->h.base + COUNTER_OFF + 8,
					 t->h.key, FI_UINT32, FI_SUM,
					 &got32)) ||
		    wait_cq(10, &e, &err) != 1)
			bad++;
		xfull(tx, &got64, sizeof(got64), true);
		xfull(tx, &got32, sizeof(got32), true);
	}
	check(S_ADDS, !bad, "%d fetch-adds on each counter completed", NADD);
}

static int child_main(int tx, int rx, int role)
{
	struct peer t;
	int ret;

	ret = open_all();
	if (ret) {
		note("initiator %d: opening the endpoint failed: %s", role,
		     fi_strerror(-ret));
		return 1;
	}
	if (xfull(rx, &t.h, sizeof(t.h), false)) {
		note("initiator %d: the target sent no address", role);
		return 1;
	}
	if (fi_av_insert(av, &t.h.name, 1, &t.fa, 0, NULL) != 1) {
		note("initiator %d: fi_av_insert of the target failed", role);
		return 1;
	}
	rng += (uint64_t)role * 7919;
	if (role == 0) {
		init_rma(&t, tx, rx);
		init_writedata(&t);
		init_delivery(&t, tx, rx);
		init_violations(&t);
		init_atomics(&t);
	} else {
		init_counter(&t, tx);
	}
	close_all();
	return 0;
}

/* ---- the target: its children, their reports, bounded waits */

struct kid {
	const char *name;
	pid_t pid;
	int to, from, rep;		/* -1 once closed */
	int nslots, got, bad;		/* slots; reported; bad lines */
	bool seen[S_MAIN];
	const char *(*slot)(int s, char *buf, size_t len);
	bool eof;			/* its report has ended */
	double start;			/* when it was started */
	char why[200];			/* why the test stopped it */
	char line[4096];		/* a report line being read */
	size_t have;
};

static int parent_fds[4 * (1 + NCONC)], n_parent_fds;

static void closefd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static pid_t spawn(struct kid *k, int role, const char *name, int nslots,
		   const char *(*slot)(int, char *, size_t))
{
	int a[2] = { -1, -1 }, b[2] = { -1, -1 }, c[2] = { -1, -1 }, i;

	memset(k, 0, sizeof(*k));
	k->name = name;
	k->nslots = nslots;
	k->slot = slot;
	k->pid = -1;
	k->to = k->from = k->rep = -1;
	k->eof = true;
	k->start = tap_now();
	if (pipe(a) || pipe(b) || pipe(c))
		goto fail;
	fflush(stdout);
	k->pid = fork();
	if (k->pid < 0)
		goto fail;
	if (k->pid == 0) {
		/* none of the other children's pipes: their ends must close
		 * when the target closes them */
		for (i = 0; i < n_parent_fds; i++)
			close(parent_fds[i]);
		close(a[1]);
		close(b[0]);
		close(c[0]);
		report_fd = c[1];
		_exit(child_main(b[1], a[0], role));
	}
	close(a[0]);
	close(b[1]);
	close(c[1]);
	k->to = a[1];
	k->from = b[0];
	k->rep = c[0];
	k->eof = false;
	fcntl(k->rep, F_SETFL, fcntl(k->rep, F_GETFL) | O_NONBLOCK);
	parent_fds[n_parent_fds++] = k->to;
	parent_fds[n_parent_fds++] = k->from;
	parent_fds[n_parent_fds++] = k->rep;
	return k->pid;
fail:
	tap_diag("%s: could not start: %s", name, strerror(errno));
	for (i = 0; i < 2; i++) {
		closefd(&a[i]);
		closefd(&b[i]);
		closefd(&c[i]);
	}
	k->pid = -1;
	return -1;
}

/* One line of a child's report: "slot verdict text" or "# note". */
static void kid_line(struct kid *k, char *s)
{
	int slot, cond, off = 0;

	if (s[0] == '#') {
		tap_diag("%s:%s", k->name, s + 1);
		return;
	}
	if (sscanf(s, "%d %d %n", &slot, &cond, &off) != 2 || !off ||
	    slot < 0 || slot >= k->nslots || k->seen[slot] ||
	    (cond != 0 && cond != 1)) {
		k->bad++;
		tap_diag("%s: unexpected report line: %s", k->name, s);
		return;
	}
	k->seen[slot] = true;
	k->got++;
	tap_ok(cond, "%s", s + off);
}

/* Reads what a child has reported so far, never blocking. */
static void kid_pump(struct kid *k)
{
	char *nl;
	ssize_t n;

	while (k->rep >= 0) {
		n = read(k->rep, k->line + k->have,
			 sizeof(k->line) - 1 - k->have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return;
		if (n == 0) {
			if (k->have) {	/* cut off in the middle */
				k->line[k->have] = 0;
				k->bad++;
				tap_diag("%s: report ends in a partial line: "
					 "%s", k->name, k->line);
				k->have = 0;
			}
			closefd(&k->rep);
			k->eof = true;
			return;
		}
		k->have += (size_t)n;
		while ((nl = memchr(k->line, '\n', k->have))) {
			size_t used = (size_t)(nl + 1 - k->line);

			*nl = 0;
			kid_line(k, k->line);
			memmove(k->line, nl + 1, k->have - used);
			k->have -= used;
		}
		if (k->have == sizeof(k->line) - 1) {
			k->line[k->have] = 0;
			k->bad++;
			tap_diag("%s: overlong report line", k->name);
			k->have = 0;
		}
	}
}

/* Has the child ended? (It stays a zombie for tap_child to reap.) */
static bool kid_exited(struct kid *k)
{
	siginfo_t si;

	if (k->pid <= 0)
		return true;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)k->pid, &si, WEXITED | WNOHANG | WNOWAIT))
		return true;
	return si.si_pid == k->pid;
}

/* A child that hangs is killed; why goes into its checks. */
static void kid_stop(struct kid *k, const char *fmt, ...)
{
	va_list ap;

	if (k->pid <= 0 || k->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(k->why, sizeof(k->why), fmt, ap);
	va_end(ap);
	tap_diag("%s: %s; killing it", k->name, k->why);
	if (!kid_exited(k))
		kill(k->pid, SIGKILL);
}

/* Why a child's pipe gave nothing. */
static const char *kid_gone(struct kid *k)
{
	if (k->why[0])
		return k->why;
	if (k->pid <= 0)
		return "it never started";
	return "its pipe closed early: it ended (see its exit below)";
}

/*
 * Serves the provider and reads the child's report until fd has data
 * (or its end); past the deadline the child is stopped. False when
 * nothing can be read from fd.
 */
static bool await(struct kid *k, int fd, double deadline, const char *what)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (fd < 0)
		return false;
	for (;;) {
		progress();
		kid_pump(k);
		if (poll(&p, 1, 0) > 0)
			return true;
		if (tap_now() >= deadline) {
			kid_stop(k, "hung: %s did not come within %.0f s of "
				 "its start", what, deadline - k->start);
			return false;
		}
	}
}

/*
 * The child's end: serves it until it has exited and its report ended, or
 * stops it at the deadline; then its exit is a check (tap_child), its
 * report is a check, and every slot it never reported is a failure.
 */
static void kid_finish(struct kid *k, double deadline)
{
	char what[300], buf[200];
	double end;
	int s;

	closefd(&k->to);
	closefd(&k->from);
	while (!(k->eof && kid_exited(k)) && tap_now() < deadline) {
		progress();
		kid_pump(k);
	}
	if (!(k->eof && kid_exited(k)))
		kid_stop(k, "hung: still running %.0f s after its start",
			 deadline - k->start);
	/* the rest of its report, now that it has ended or been killed */
	end = tap_now() + 10;
	while (!k->eof && tap_now() < end) {
		kid_pump(k);
		usleep(1000);
	}
	if (!k->eof) {
		k->bad++;
		tap_diag("%s: its report does not end", k->name);
	}
	closefd(&k->rep);
	snprintf(what, sizeof(what), "%s%s%s%s", k->name, k->why[0] ? " (" :
		 "", k->why, k->why[0] ? ", killed by the test)" : "");
	tap_child(k->pid, 10, what);
	tap_ok(k->got == k->nslots && !k->bad,
	       "%s: reported %d of its %d checks%s", k->name, k->got,
	       k->nslots, k->bad ? ", and lines that are not checks" : "");
	for (s = 0; s < k->nslots; s++)
		if (!k->seen[s])
			tap_ok(0, "%s: never reported by the %s: %s",
			       k->slot(s, buf, sizeof(buf)), k->name,
			       k->why[0] ? k->why :
			       "its report ended before it");
}

int main(void)
{
	static const char *const conc_name[NCONC] = {
		"concurrent initiator 1", "concurrent initiator 2",
		"concurrent initiator 3",
	};
	struct fid_mr *mr = NULL, *mr_ro = NULL, *mr_wo = NULL;
	struct kid kids[1 + NCONC], *m = &kids[0];
	uint8_t *region, *ro, *wo;
	struct hello h = { 0 };
	size_t len = sizeof(h.name);
	double deadline;
	bool up, reg;
	int i, k;

	/* a child gone: writes to it fail with EPIPE, they do not kill us */
	signal(SIGPIPE, SIG_IGN);
	/* fork before libfabric and the provider's threads exist here */
	spawn(m, 0, "initiator", S_MAIN, main_slot);
	for (k = 0; k < NCONC; k++)
		spawn(&kids[1 + k], 1 + k, conc_name[k], S_CONC, conc_slot);
	deadline = m->start + MAIN_TMO;
	region = aligned_alloc(4096, REGION);
	ro = aligned_alloc(4096, 4096);
	wo = aligned_alloc(4096, 4096);
	memset(region, 0, REGION);
	up = !open_all();
	if (!up)
		cq = NULL;
	tap_ok(up, "target: RDM endpoint with FI_RMA|FI_ATOMIC");
	reg = up && !fi_mr_reg(domain, region, REGION,
			       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			       NULL) &&
	      !fi_mr_reg(domain, ro, 4096, FI_REMOTE_READ, 0, 0, 0, &mr_ro,
			 NULL) &&
	      !fi_mr_reg(domain, wo, 4096, FI_REMOTE_WRITE, 0, 0, 0, &mr_wo,
			 NULL);
	tap_ok(reg, "target: regions registered");
	oracle_selftest();
	if (reg) {
		fi_getname(&ep->fid, &h.name, &len);
		h.virt = !!(info->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
		h.base = h.virt ? (uint64_t)(uintptr_t)region : 0;
		h.key = fi_mr_key(mr);
		h.key_ro = fi_mr_key(mr_ro);
		h.key_wo = fi_mr_key(mr_wo);
	}

	/* ---- the main initiator; without a target it is told nothing and
	 * ends, and each of its checks fails */
	if (reg)
		xfull(m->to, &h, sizeof(h), true);
	else
		closefd(&m->to);
	{
		uint32_t theirs = 0, ours;
		int round, verdict;

		if (await(m, m->from, deadline, "its CRC of the region") &&
		    !xfull(m->from, &theirs, sizeof(theirs), false)) {
			ours = crc32(region + COUNTER_OFF + 64,
				     REGION - COUNTER_OFF - 64);
			tap_ok(ours == theirs, "target: the whole region equals "
			       "the initiator's mirror (CRC %08x)", ours);
			xfull(m->to, &ours, sizeof(ours), true);
		} else {
			tap_ok(0, "target: the whole region equals the "
			       "initiator's mirror: no CRC came (%s)",
			       kid_gone(m));
		}
		/* writedata: the data is reported, the octets are there */
		{
			struct fi_cq_data_entry e;
			struct fi_cq_err_entry err;
			uint8_t want[3000];
			double end = tap_now() + 20;
			int got = 0;

			fill(want, sizeof(want), 99);
			/* until it comes, or (after a last look) the
			 * initiator is gone */
			while (reg && !got && tap_now() < end) {
				bool gone = m->eof && kid_exited(m);

				got = wait_cq(0.05, &e, &err);
				kid_pump(m);
				if (gone)
					break;
			}
			tap_ok(got == 1 && (e.flags & FI_REMOTE_CQ_DATA) &&
			       (e.flags & FI_REMOTE_WRITE) &&
			       e.data == 0x1122334455667788ull &&
			       e.len == sizeof(want) &&
			       !memcmp(region + WDATA_OFF, want, sizeof(want)),
			       "target: writedata reported with its data "
			       "(flags %#llx) and the octets in place%s%s",
			       got == 1 ? (unsigned long long)e.flags : 0ull,
			       got == 1 ? "" : ": nothing came; the initiator: ",
			       got == 1 ? "" : kid_gone(m));
		}
		for (round = 1; round <= 10; round++) {
			uint8_t *want;

			if (!await(m, m->from, deadline, "a delivery round") ||
			    xfull(m->from, &i, sizeof(i), false))
				break;
			want = malloc(4u << 20);
			fill(want, 4u << 20, 1000 + (uint64_t)i);
			verdict = !memcmp(region + (1u << 20), want, 4u << 20);
			free(want);
			xfull(m->to, &verdict, sizeof(verdict), true);
		}
		tap_ok(round > 10, "target: answered the 10 delivery-complete "
		       "rounds of the initiator%s%s", round > 10 ? "" :
		       ": the initiator stopped asking; ",
		       round > 10 ? "" : kid_gone(m));
	}
	/* the child ends after its atomics; keep serving until it does */
	kid_finish(m, deadline);

	/* ---- concurrent initiators on one counter */
	{
		uint8_t *seen64 = calloc(NCONC * NADD, 1);
		uint8_t *seen32 = calloc(NCONC * NADD, 1);
		int dup = 0, left = 0;
		double end = tap_now() + CONC_TMO;
		uint64_t v64;
		uint32_t v32;

		memset(region + COUNTER_OFF, 0, 16);
		for (k = 0; k < NCONC; k++) {
			struct kid *c = &kids[1 + k];

			c->start = tap_now();
			if (reg)
				xfull(c->to, &h, sizeof(h), true);
			else
				closefd(&c->to);
			if (c->from >= 0)
				left++;
		}
		while (left && tap_now() < end) {
			struct pollfd p[NCONC];

			for (k = 0; k < NCONC; k++) {
				p[k] = (struct pollfd){ .fd = kids[1 + k].from,
							.events = POLLIN };
				kid_pump(&kids[1 + k]);
			}
			progress();
			if (poll(p, NCONC, 0) <= 0)
				continue;
			for (k = 0; k < NCONC; k++) {
				struct kid *c = &kids[1 + k];

				if (!(p[k].revents & (POLLIN | POLLHUP)) ||
				    c->from < 0)
					continue;
				if (xfull(c->from, &v64, 8, false) ||
				    xfull(c->from, &v32, 4, false)) {
					closefd(&c->from);
					left--;
					continue;
				}
				if (v64 >= NCONC * NADD || seen64[v64]++)
					dup++;
				if (v32 >= NCONC * NADD || seen32[v32]++)
					dup++;
			}
		}
		for (k = 0; k < NCONC; k++)
			if (kids[1 + k].from >= 0)
				kid_stop(&kids[1 + k], "hung: its fetch-adds "
					 "did not end within %d s", CONC_TMO);
		for (k = 0; k < NCONC; k++)
			kid_finish(&kids[1 + k], end);
		for (k = 0; k < NCONC * NADD; k++)
			if (!seen64[k] || !seen32[k])
				dup++;
		memcpy(&v64, region + COUNTER_OFF, 8);
		memcpy(&v32, region + COUNTER_OFF + 8, 4);
		tap_ok(!dup && v64 == NCONC * NADD && v32 == NCONC * NADD,
		       "concurrent: %d processes x %d fetch-adds: fetched "
		       "values are exactly 0..%d on 64 and 32 bits, counters "
		       "%llu and %u", NCONC, NADD, NCONC * NADD - 1,
		       (unsigned long long)v64, v32);
		free(seen64);
		free(seen32);
	}
	if (mr)
		fi_close(&mr->fid);
	if (mr_ro)
		fi_close(&mr_ro->fid);
	if (mr_wo)
		fi_close(&mr_wo->fid);
	if (up)
		close_all();
	free(region);
	free(ro);
	free(wo);
	return tap_done();
}
