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
 * - every atomic op and datatype fi_atomicvalid offers, single and vector,
 *   against a locally computed expectation (fetched values and memory);
 * - concurrent fetch-and-add from several processes on one counter: the
 *   fetched values are exactly 0..N-1 and the counter ends at N;
 * - counters bound with FI_WRITE and FI_READ count the operations.
 *
 * The parent is the target; initiators are forked children that report
 * their checks over a pipe. FI_IWARP_RFC7306=0 in the environment keeps
 * 64-bit atomics off RFC 7306 (both paths are run by test/run).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
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

#define REGION (32u << 20)
#define ATOMIC_AREA 4096		/* at the start of the region */
#define COUNTER_OFF 8192		/* the shared counters */
#define NCONC 3				/* concurrent initiators */
#define NADD 1500			/* fetch-adds each */

/* What the target tells initiators (and they it) over pipes. */
struct hello {
	struct sockaddr_in name;
	uint64_t base;			/* remote address of offset 0 */
	uint64_t key, key_ro, key_wo;	/* rw, read-only, write-only */
	int virt;
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_ep *ep;
static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_cntr *cntr;
static int report_fd = -1;		/* child: where checks go */

/* A check: printed as TAP in the parent, sent to it from children. */
static int check(int cond, const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (report_fd < 0)
		return tap_ok(cond, "%s", line);
	n = dprintf(report_fd, "%d %s\n", cond ? 1 : 0, line);
	(void)n;
	return cond;
}

static int xfull(int fd, void *buf, size_t len, bool wr)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = wr ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
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
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
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

/* One completion (1), an error (-1, *err filled) or nothing in time. */
static int wait_cq(double secs, struct fi_cq_data_entry *e,
		   struct fi_cq_err_entry *err)
{
	double end = tap_now() + secs;

	while (tap_now() < end) {
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
	check(ok_w, "write: %zu sizes 1 B..16 MiB at random offsets complete",
	      sizes);
	check(ok_r, "read: each written range reads back identical (%zu "
	      "octets)", total);
	/* the same once more without delivery completion: plain writes */
	fill(buf, 1 << 20, 7);
	memcpy(mirror + (REGION - (1 << 20)), buf, 1 << 20);
	check(!do_op(t, true, buf, 1 << 20, REGION - (1 << 20), t->h.key, 0,
		     &err), "write without FI_DELIVERY_COMPLETE completes");
	n_ops++;
	/* the target checks its whole region against our mirror; counters
	 * can be read only after the read behind settles it */
	check(!do_op(t, false, back, 1, 0, t->h.key, 0, &err),
	      "read after the plain write");
	n_ops++;
	check(fi_cntr_read(cntr) - before == n_ops,
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
		xfull(tx, &i, sizeof(i), true);
		xfull(rx, &verdict, sizeof(verdict), false);
		if (!verdict)
			bad++;
		flag = (uint64_t)i;
		if (do_op(t, true, &flag, 8, COUNTER_OFF + 56, t->h.key, 0,
			  &err))
			bad++;
	}
	check(!bad, "delivery complete: the target held 4 MiB each time the "
	      "initiator's completion came (10 rounds)");
	free(buf);
}

static void init_writedata(struct peer *t)
{
	uint8_t buf[3000];
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	int got;

	fill(buf, sizeof(buf), 99);
	check(!POST(fi_writedata(ep, buf, sizeof(buf), NULL,
				 0x1122334455667788ull, t->fa,
				 t->h.base + (2u << 20), t->h.key, buf)),
	      "fi_writedata posts");
	got = wait_cq(10, &e, &err);
	check(got == 1 && e.op_context == buf &&
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
	struct fi_cq_err_entry err;
	struct fi_cq_data_entry e;
	char buf[64] = "x", ebuf[256];
	uint64_t one = 1, res;
	int ret, ctx, got;

	ret = do_op(t, true, buf, 64, 0, t->h.key ^ 0x5a5a00, DC, &err);
	check(ret == -1 && err.op_context == buf && err.err && err.prov_errno,
	      "write to a bad key: error completion (%s) with the context",
	      fi_cq_strerror(cq, err.prov_errno, err.err_data, ebuf,
			     sizeof(ebuf)));
	check(!do_op(t, true, buf, 64, 0, t->h.key, DC, &err),
	      "the next write works again");
	ret = do_op(t, false, buf, 64, 0, t->h.key_wo, 0, &err);
	check(ret == -1 && err.op_context == buf && err.err,
	      "read from a region without FI_REMOTE_READ: error %d", err.err);
	ret = do_op(t, true, buf, 64, 0, t->h.key_ro, DC, &err);
	check(ret == -1 && err.op_context == buf && err.err,
	      "write to a region without FI_REMOTE_WRITE: error %d", err.err);
	ret = do_op(t, true, buf, 64, REGION - 32, t->h.key, DC, &err);
	check(ret == -1 && err.op_context == buf && err.err,
	      "write past the end of the region: error %d", err.err);
	check(!do_op(t, false, buf, 64, 0, t->h.key, 0, &err),
	      "a read works after all of them");

	/* atomics on bad targets answer with errors, not Terminates */
	ret = (int)POST(fi_fetch_atomic(ep, &one, 1, NULL, &res, NULL, t->fa,
					t->h.base, t->h.key ^ 0x5a5a00,
					FI_UINT32, FI_SUM, &ctx));
	got = ret ? 0 : wait_cq(10, &e, &err);
	check(got == -1 && err.op_context == &ctx && err.err == FI_EACCES,
	      "atomic on a bad key: error completion %d with the context",
	      err.err);
	ret = (int)POST(fi_fetch_atomic(ep, &one, 1, NULL, &res, NULL, t->fa,
					t->h.base + 2, t->h.key, FI_UINT32,
					FI_SUM, &ctx));
	got = ret ? 0 : wait_cq(10, &e, &err);
	check(got == -1 && err.op_context == &ctx && err.err == FI_EINVAL,
	      "misaligned atomic: error completion %d", err.err);
}

/* ---- atomics against a local model */

static size_t dt_size(int dt)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: return 1;
	case FI_INT16: case FI_UINT16: return 2;
	case FI_INT32: case FI_UINT32: case FI_FLOAT: return 4;
	default: return 8;
	}
}

/* The model: new value for op on one element; false: no write. */
#define MODEL(T, U, isint)						\
	static bool model_##T(int op, T o, T a, T c, T *n)		\
	{								\
		switch (op) {						\
		case FI_MIN: *n = o < a ? o : a; return true;		\
		case FI_MAX: *n = o > a ? o : a; return true;		\
		case FI_SUM: *n = (T)((U)o + (U)a); return true;	\
		case FI_PROD: *n = (T)((U)o * (U)a); return true;	\
		case FI_LOR: *n = (T)(o || a); return true;		\
		case FI_LAND: *n = (T)(o && a); return true;		\
		case FI_LXOR: *n = (T)((o && !a) || (!o && a));		\
			return true;					\
		case FI_ATOMIC_WRITE: *n = a; return true;		\
		case FI_ATOMIC_READ: return false;			\
		case FI_CSWAP: *n = a; return c == o;			\
		case FI_CSWAP_NE: *n = a; return c != o;		\
		case FI_CSWAP_LE: *n = a; return c <= o;		\
		case FI_CSWAP_LT: *n = a; return c < o;			\
		case FI_CSWAP_GE: *n = a; return c >= o;		\
		case FI_CSWAP_GT: *n = a; return c > o;			\
		default: break;						\
		}							\
		if (isint)						\
			return model_bits_##T(op, o, a, c, n);		\
		return false;						\
	}
#define BITS(T)								\
	static bool model_bits_##T(int op, T o, T a, T c, T *n)		\
	{								\
		switch (op) {						\
		case FI_BOR: *n = o | a; return true;			\
		case FI_BAND: *n = o & a; return true;			\
		case FI_BXOR: *n = o ^ a; return true;			\
		case FI_MSWAP: *n = (T)((a & c) | (o & ~c)); return true; \
		default: return false;					\
		}							\
	}
#define NOBITS(T)							\
	static bool model_bits_##T(int op, T o, T a, T c, T *n)		\
	{								\
		(void)op; (void)o; (void)a; (void)c; (void)n;		\
		return false;						\
	}
BITS(int8_t) BITS(uint8_t) BITS(int16_t) BITS(uint16_t) BITS(int32_t)
BITS(uint32_t) BITS(int64_t) BITS(uint64_t) NOBITS(float) NOBITS(double)
MODEL(int8_t, uint8_t, 1) MODEL(uint8_t, uint8_t, 1)
MODEL(int16_t, uint16_t, 1) MODEL(uint16_t, uint16_t, 1)
MODEL(int32_t, uint32_t, 1) MODEL(uint32_t, uint32_t, 1)
MODEL(int64_t, uint64_t, 1) MODEL(uint64_t, uint64_t, 1)
MODEL(float, float, 0) MODEL(double, double, 0)

#define APPLY(T)							\
	{								\
		T o, a, c, n;						\
		memcpy(&o, mem, sizeof(T));				\
		memcpy(&a, opnd, sizeof(T));				\
		memcpy(&c, cmp, sizeof(T));				\
		if (model_##T(op, o, a, c, &n))				\
			memcpy(mem, &n, sizeof(T));			\
		return;							\
	}

static void model(int op, int dt, uint8_t *mem, const uint8_t *opnd,
		  const uint8_t *cmp)
{
	switch (dt) {
	case FI_INT8: APPLY(int8_t)
	case FI_UINT8: APPLY(uint8_t)
	case FI_INT16: APPLY(int16_t)
	case FI_UINT16: APPLY(uint16_t)
	case FI_INT32: APPLY(int32_t)
	case FI_UINT32: APPLY(uint32_t)
	case FI_INT64: APPLY(int64_t)
	case FI_UINT64: APPLY(uint64_t)
	case FI_FLOAT: APPLY(float)
	case FI_DOUBLE: APPLY(double)
	}
}

/* Small values whose results are exact in every type (floats too). */
static void values(uint8_t *p, int dt, size_t n, int salt)
{
	size_t i, s = dt_size(dt);

	for (i = 0; i < n; i++) {
		int v = (int)((next() + (uint64_t)salt) % 7);

		if (dt == FI_FLOAT) {
			float f = (float)v;
			memcpy(p + i * s, &f, s);
		} else if (dt == FI_DOUBLE) {
			double d = (double)v;
			memcpy(p + i * s, &d, s);
		} else {
			uint64_t u = (uint64_t)v;
			memcpy(p + i * s, &u, s);	/* little endian */
		}
	}
}

static void init_atomics(struct peer *t)
{
	static const int dts[] = { FI_INT8, FI_UINT8, FI_INT16, FI_UINT16,
				   FI_INT32, FI_UINT32, FI_INT64, FI_UINT64,
				   FI_FLOAT, FI_DOUBLE };
	int op, d, class, bad = 0, runs = 0, unsup = 0;
	struct fi_cq_err_entry err;
	struct fi_cq_data_entry e;
	char what[128] = "";

	for (class = 0; class < 3; class++)
		for (op = FI_MIN; op <= FI_MSWAP; op++)
			for (d = 0; d < 10; d++) {
				int dt = dts[d];
				size_t cnt, n, s = dt_size(dt), i;
				uint8_t init[64], opnd[64], cmp[64];
				uint8_t expect[64], res[64], mem[64];
				int ret;

				ret = class == 0 ? fi_atomicvalid(ep, dt, op,
								  &cnt) :
				      class == 1 ? fi_fetch_atomicvalid(
							   ep, dt, op, &cnt) :
						   fi_compare_atomicvalid(
							   ep, dt, op, &cnt);
				if (ret) {
					unsup++;
					continue;
				}
				for (n = 1; n <= 4; n += 3) {
					values(init, dt, n, 1);
					values(opnd, dt, n, 2);
					values(cmp, dt, n, 3);
					/* half the compares match */
					if (n == 4)
						memcpy(cmp, init, 2 * s);
					memcpy(expect, init, n * s);
					for (i = 0; i < n; i++)
						model(op, dt, expect + i * s,
						      opnd + i * s, cmp + i * s);
					if (do_op(t, true, init, n * s, 0,
						  t->h.key, 0, &err))
						goto fail;
					memset(res, 0xee, sizeof(res));
					ret = (int)POST(
						class == 0 ?
						fi_atomic(ep, opnd, n, NULL,
							  t->fa, t->h.base,
							  t->h.key, dt, op,
							  res) :
						class == 1 ?
						fi_fetch_atomic(ep, opnd, n,
							NULL, res, NULL, t->fa,
							t->h.base, t->h.key,
							dt, op, res) :
						fi_compare_atomic(ep, opnd, n,
							NULL, cmp, NULL, res,
							NULL, t->fa, t->h.base,
							t->h.key, dt, op,
							res));
					if (ret || wait_cq(10, &e, &err) != 1 ||
					    e.op_context != res ||
					    !(e.flags & FI_ATOMIC))
						goto fail;
					if (class && memcmp(res, init, n * s))
						goto fail;
					if (do_op(t, false, mem, n * s, 0,
						  t->h.key, 0, &err) ||
					    memcmp(mem, expect, n * s))
						goto fail;
					runs++;
					continue;
fail:
					if (!bad++)
						snprintf(what, sizeof(what),
							 "class %d op %d dt %d "
							 "count %zu", class, op,
							 dt, n);
				}
			}
	check(!bad && runs > 300, "atomics: %d op/datatype/count runs match "
	      "the model (%d combinations not offered)%s%s", runs, unsup,
	      bad ? "; first failure: " : "", what);
	check(fi_atomicvalid(ep, FI_UINT64, FI_SUM, NULL) == 0 &&
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
	check(!bad, "%d fetch-adds on each counter completed", NADD);
}

static int child_main(int tx, int rx, int role)
{
	struct peer t;

	if (open_all())
		return check(0, "child: open"), 1;
	if (xfull(rx, &t.h, sizeof(t.h), false))
		return 1;
	if (fi_av_insert(av, &t.h.name, 1, &t.fa, 0, NULL) != 1)
		return check(0, "child: av insert"), 1;
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

/* ---- the target */

static void progress_until_readable(int fd, double secs)
{
	double end = tap_now() + secs;
	struct pollfd p = { .fd = fd, .events = POLLIN };

	while (tap_now() < end && poll(&p, 1, 0) == 0)
		fi_cq_read(cq, NULL, 0);
}

static void collect(int fd)
{
	char line[600];
	FILE *f = fdopen(fd, "r");

	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		tap_ok(line[0] == '1', "%s", line + 2);
	}
	if (f)
		fclose(f);
}

static pid_t spawn(int role, int *to, int *from, int *rep)
{
	int a[2], b[2], c[2];
	pid_t pid;

	if (pipe(a) || pipe(b) || pipe(c))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(a[1]);
		close(b[0]);
		close(c[0]);
		report_fd = c[1];
		_exit(child_main(b[1], a[0], role));
	}
	close(a[0]);
	close(b[1]);
	close(c[1]);
	*to = a[1];
	*from = b[0];
	*rep = c[0];
	return pid;
}

int main(void)
{
	struct fid_mr *mr, *mr_ro, *mr_wo;
	uint8_t *region, *ro, *wo;
	struct hello h = { 0 };
	size_t len = sizeof(h.name);
	int to, from, rep, st, i;
	pid_t pid;

	pid_t pids[NCONC];
	int tos[NCONC], froms[NCONC], reps[NCONC], k;

	/* fork before libfabric and the provider's threads exist here */
	pid = spawn(0, &to, &from, &rep);
	for (k = 0; k < NCONC; k++)
		pids[k] = spawn(1 + k, &tos[k], &froms[k], &reps[k]);
	region = aligned_alloc(4096, REGION);
	ro = aligned_alloc(4096, 4096);
	wo = aligned_alloc(4096, 4096);
	memset(region, 0, REGION);
	if (!tap_ok(!open_all(), "target: RDM endpoint with FI_RMA|FI_ATOMIC"))
		return tap_done();
	tap_ok(!fi_mr_reg(domain, region, REGION,
			  FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) &&
	       !fi_mr_reg(domain, ro, 4096, FI_REMOTE_READ, 0, 0, 0, &mr_ro,
			  NULL) &&
	       !fi_mr_reg(domain, wo, 4096, FI_REMOTE_WRITE, 0, 0, 0, &mr_wo,
			  NULL), "target: regions registered");
	fi_getname(&ep->fid, &h.name, &len);
	h.virt = !!(info->domain_attr->mr_mode & FI_MR_VIRT_ADDR);
	h.base = h.virt ? (uint64_t)(uintptr_t)region : 0;
	h.key = fi_mr_key(mr);
	h.key_ro = fi_mr_key(mr_ro);
	h.key_wo = fi_mr_key(mr_wo);

	/* ---- the main initiator */
	xfull(to, &h, sizeof(h), true);
	{
		uint32_t theirs = 0, ours;
		int round, verdict;

		progress_until_readable(from, 300);
		if (!xfull(from, &theirs, sizeof(theirs), false)) {
			ours = crc32(region + COUNTER_OFF + 64,
				     REGION - COUNTER_OFF - 64);
			tap_ok(ours == theirs, "target: the whole region equals "
			       "the initiator's mirror (CRC %08x)", ours);
			xfull(to, &ours, sizeof(ours), true);
		}
		/* writedata: the data is reported, the octets are there */
		{
			struct fi_cq_data_entry e;
			struct fi_cq_err_entry err;
			uint8_t want[3000];
			int got;

			fill(want, sizeof(want), 99);
			got = wait_cq(20, &e, &err);
			tap_ok(got == 1 && (e.flags & FI_REMOTE_CQ_DATA) &&
			       (e.flags & FI_REMOTE_WRITE) &&
			       e.data == 0x1122334455667788ull &&
			       e.len == sizeof(want) &&
			       !memcmp(region + (2u << 20), want, sizeof(want)),
			       "target: writedata reported with its data "
			       "(flags %#llx) and the octets in place",
			       got == 1 ? (unsigned long long)e.flags : 0ull);
		}
		for (round = 1; round <= 10; round++) {
			uint8_t *want;

			progress_until_readable(from, 60);
			if (xfull(from, &i, sizeof(i), false))
				break;
			want = malloc(4u << 20);
			fill(want, 4u << 20, 1000 + (uint64_t)i);
			verdict = !memcmp(region + (1u << 20), want, 4u << 20);
			free(want);
			xfull(to, &verdict, sizeof(verdict), true);
		}
		progress_until_readable(rep, 300);
	}
	close(to);
	close(from);
	/* the child ends after its atomics; keep serving until it does */
	{
		double end = tap_now() + 300;

		while (tap_now() < end && waitpid(pid, &st, WNOHANG) == 0)
			fi_cq_read(cq, NULL, 0);
	}
	collect(rep);

	/* ---- concurrent initiators on one counter */
	{
		uint8_t *seen64 = calloc(NCONC * NADD, 1);
		uint8_t *seen32 = calloc(NCONC * NADD, 1);
		int dup = 0, left = NCONC;
		double end = tap_now() + 300;
		uint64_t v64;
		uint32_t v32;

		memset(region + COUNTER_OFF, 0, 16);
		for (k = 0; k < NCONC; k++)
			xfull(tos[k], &h, sizeof(h), true);
		while (left && tap_now() < end) {
			struct pollfd p[NCONC];

			for (k = 0; k < NCONC; k++)
				p[k] = (struct pollfd){ .fd = froms[k],
							.events = POLLIN };
			fi_cq_read(cq, NULL, 0);
			if (poll(p, NCONC, 0) <= 0)
				continue;
			for (k = 0; k < NCONC; k++) {
				if (!(p[k].revents & (POLLIN | POLLHUP)) ||
				    froms[k] < 0)
					continue;
				if (xfull(froms[k], &v64, 8, false) ||
				    xfull(froms[k], &v32, 4, false)) {
					close(froms[k]);
					froms[k] = -1;
					left--;
					continue;
				}
				if (v64 >= NCONC * NADD || seen64[v64]++)
					dup++;
				if (v32 >= NCONC * NADD || seen32[v32]++)
					dup++;
			}
		}
		for (k = 0; k < NCONC; k++) {
			while (tap_now() < end &&
			       waitpid(pids[k], &st, WNOHANG) == 0)
				fi_cq_read(cq, NULL, 0);
			collect(reps[k]);
			close(tos[k]);
		}
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
	fi_close(&mr->fid);
	fi_close(&mr_ro->fid);
	fi_close(&mr_wo->fid);
	close_all();
	free(region);
	free(ro);
	free(wo);
	return tap_done();
}
