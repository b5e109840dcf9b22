/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Atomics on FI_EP_RDM (rdm.h): executed by the target's provider from
 * an AREQ message and answered by ARESP, or, between peers whose
 * transport carries them, as RFC 7306 Atomic Requests for the 64-bit
 * operations it defines.
 */
#include "rdm.h"

#include <stdlib.h>
#include <string.h>

#include <rdma/fi_atomic.h>

#define RDM(ep_) iwarp_rdm_ep_of(&(ep_)->fid)

/* ---- atomics: what is supported */

enum { IWARP_AT_WRITE, IWARP_AT_FETCH, IWARP_AT_COMPARE };

static size_t iwarp_dt_size(unsigned int dt)
{
	switch (dt) {
	case FI_INT8:
	case FI_UINT8:
		return 1;
	case FI_INT16:
	case FI_UINT16:
		return 2;
	case FI_INT32:
	case FI_UINT32:
	case FI_FLOAT:
		return 4;
	case FI_INT64:
	case FI_UINT64:
	case FI_DOUBLE:
		return 8;
	default:
		return 0;	/* complex and long double: not offered */
	}
}

static bool iwarp_dt_float(unsigned int dt)
{
	return dt == FI_FLOAT || dt == FI_DOUBLE;
}

/* Which class an op belongs to, and whether it works on dt. */
static bool iwarp_at_valid(unsigned int op, unsigned int dt, int class)
{
	if (!iwarp_dt_size(dt))
		return false;
	switch (op) {
	case FI_MIN:
	case FI_MAX:
	case FI_SUM:
	case FI_PROD:
	case FI_ATOMIC_WRITE:
		return class != IWARP_AT_COMPARE;
	case FI_LOR:
	case FI_LAND:
	case FI_LXOR:
	case FI_BOR:
	case FI_BAND:
	case FI_BXOR:
		return class != IWARP_AT_COMPARE && !iwarp_dt_float(dt);
	case FI_ATOMIC_READ:
		return class == IWARP_AT_FETCH;
	case FI_CSWAP:
	case FI_CSWAP_NE:
	case FI_CSWAP_LE:
	case FI_CSWAP_LT:
	case FI_CSWAP_GE:
	case FI_CSWAP_GT:
		return class == IWARP_AT_COMPARE;
	case FI_MSWAP:
		return class == IWARP_AT_COMPARE && !iwarp_dt_float(dt);
	default:
		return false;
	}
}

static bool iwarp_at_compare_op(unsigned int op)
{
	return op >= FI_CSWAP && op <= FI_MSWAP;
}

/* Operand arrays an op carries: none for a read, two with compares. */
static size_t iwarp_at_arrays(unsigned int op)
{
	if (op == FI_ATOMIC_READ)
		return 0;
	return iwarp_at_compare_op(op) ? 2 : 1;
}

/* ---- atomics: executing them (the target) */

/*
 * new = op(old, operand, compare) for one element; false when a compare
 * failed and nothing is written. Integer arithmetic wraps (done in the
 * unsigned type U).
 */
#define IWARP_AT_CALC_COMMON(T, U)					\
	switch (op) {							\
	case FI_MIN: *n = a < o ? a : o; return true;			\
	case FI_MAX: *n = a > o ? a : o; return true;			\
	case FI_SUM: *n = (T)((U)o + (U)a); return true;		\
	case FI_PROD: *n = (T)((U)o * (U)a); return true;		\
	case FI_LOR: *n = (T)(o || a); return true;			\
	case FI_LAND: *n = (T)(o && a); return true;			\
	case FI_LXOR: *n = (T)(!o != !a); return true;			\
	case FI_ATOMIC_WRITE: *n = a; return true;			\
	case FI_ATOMIC_READ: return false;				\
	case FI_CSWAP: *n = a; return c == o;				\
	case FI_CSWAP_NE: *n = a; return c != o;			\
	case FI_CSWAP_LE: *n = a; return c <= o;			\
	case FI_CSWAP_LT: *n = a; return c < o;				\
	case FI_CSWAP_GE: *n = a; return c >= o;			\
	case FI_CSWAP_GT: *n = a; return c > o;				\
	default: break;							\
	}

/* Each ends in a declaration, so that a use takes a semicolon. */
#define IWARP_AT_CALC_INT(name, T, U)					\
static bool name(unsigned int op, T o, T a, T c, T *n)			\
{									\
	IWARP_AT_CALC_COMMON(T, U)					\
	switch (op) {							\
	case FI_BOR: *n = o | a; return true;				\
	case FI_BAND: *n = o & a; return true;				\
	case FI_BXOR: *n = o ^ a; return true;				\
	case FI_MSWAP: *n = (T)((a & c) | (o & ~c)); return true;	\
	default: return false;						\
	}								\
}									\
static bool name(unsigned int op, T o, T a, T c, T *n)

#define IWARP_AT_CALC_FLT(name, T)					\
static bool name(unsigned int op, T o, T a, T c, T *n)			\
{									\
	IWARP_AT_CALC_COMMON(T, T)					\
	return false;							\
}									\
static bool name(unsigned int op, T o, T a, T c, T *n)

IWARP_AT_CALC_INT(iwarp_at_i8, int8_t, uint8_t);
IWARP_AT_CALC_INT(iwarp_at_u8, uint8_t, uint8_t);
IWARP_AT_CALC_INT(iwarp_at_i16, int16_t, uint16_t);
IWARP_AT_CALC_INT(iwarp_at_u16, uint16_t, uint16_t);
IWARP_AT_CALC_INT(iwarp_at_i32, int32_t, uint32_t);
IWARP_AT_CALC_INT(iwarp_at_u32, uint32_t, uint32_t);
IWARP_AT_CALC_INT(iwarp_at_i64, int64_t, uint64_t);
IWARP_AT_CALC_INT(iwarp_at_u64, uint64_t, uint64_t);
IWARP_AT_CALC_FLT(iwarp_at_flt, float);
IWARP_AT_CALC_FLT(iwarp_at_dbl, double);

/*
 * One element, atomically against every other access through atomics
 * (a compare-and-swap loop on the storage type S; values of type T are
 * moved in and out with memcpy so floats work too).
 */
#define IWARP_AT_APPLY(S, T, calc)					\
	do {								\
		S *p = target, cur, nxt;				\
		T o, a = 0, c = 0, n;					\
									\
		if (operand)						\
			memcpy(&a, operand, sizeof(T));			\
		if (compare)						\
			memcpy(&c, compare, sizeof(T));			\
		cur = __atomic_load_n(p, __ATOMIC_ACQUIRE);		\
		for (;;) {						\
			memcpy(&o, &cur, sizeof(T));			\
			if (!calc(op, o, a, c, &n))			\
				break;					\
			memcpy(&nxt, &n, sizeof(T));			\
			if (__atomic_compare_exchange_n(p, &cur, nxt,	\
					false, __ATOMIC_ACQ_REL,	\
					__ATOMIC_ACQUIRE))		\
				break;					\
		}							\
		memcpy(old, &cur, sizeof(T));				\
	} while (0)

static void iwarp_at_apply(unsigned int op, unsigned int dt, void *target,
			   const void *operand, const void *compare, void *old)
{
	switch (dt) {
	case FI_INT8: IWARP_AT_APPLY(uint8_t, int8_t, iwarp_at_i8); break;
	case FI_UINT8: IWARP_AT_APPLY(uint8_t, uint8_t, iwarp_at_u8); break;
	case FI_INT16: IWARP_AT_APPLY(uint16_t, int16_t, iwarp_at_i16); break;
	case FI_UINT16: IWARP_AT_APPLY(uint16_t, uint16_t, iwarp_at_u16); break;
	case FI_INT32: IWARP_AT_APPLY(uint32_t, int32_t, iwarp_at_i32); break;
	case FI_UINT32: IWARP_AT_APPLY(uint32_t, uint32_t, iwarp_at_u32); break;
	case FI_INT64: IWARP_AT_APPLY(uint64_t, int64_t, iwarp_at_i64); break;
	case FI_UINT64: IWARP_AT_APPLY(uint64_t, uint64_t, iwarp_at_u64); break;
	case FI_FLOAT: IWARP_AT_APPLY(uint32_t, float, iwarp_at_flt); break;
	case FI_DOUBLE: IWARP_AT_APPLY(uint64_t, double, iwarp_at_dbl); break;
	default: break;
	}
}

static int iwarp_at_errno(uint8_t ecode)
{
	return ecode == RDMAP_ECODE_BASE_BOUNDS ||
	       ecode == RDMAP_ECODE_TO_WRAP ? FI_EINVAL : FI_EACCES;
}

/* Checks an AREQ and runs it; 0 or a positive FI errno. */
static int iwarp_at_run(struct iwarp_rdm_peer *peer,
			const struct iwarp_rdm_hdr *h, const uint8_t *payload,
			uint8_t *out)
{
	unsigned int op = IWARP_RDM_AT_OP(h->tag);
	unsigned int dt = IWARP_RDM_AT_DT(h->tag);
	bool fetch = h->tag & IWARP_RDM_AT_FETCH;
	int class = iwarp_at_compare_op(op) ? IWARP_AT_COMPARE :
		    fetch ? IWARP_AT_FETCH : IWARP_AT_WRITE;
	size_t size = iwarp_dt_size(dt), n = h->data, i;
	unsigned int access = (op != FI_ATOMIC_READ ? IW_ACC_REMOTE_WRITE : 0) |
			      (fetch ? IW_ACC_REMOTE_READ : 0);
	const uint8_t *cmp;
	uint8_t ecode;
	uint8_t *t;

	if (!iwarp_at_valid(op, dt, class) || !n ||
	    n > IWARP_RDM_ATOMIC_MAX / size ||
	    h->len != n * size * iwarp_at_arrays(op))
		return FI_EINVAL;
	t = iw_mr_translate(peer->ep->base.dom->pd, h->stag, h->addr, n * size,
			    access, &ecode);
	if (!t) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
			"RDM peer %s: atomic refused: RDMAP code %#x for key "
			"%#x\n", peer->name, ecode, h->stag);
		return iwarp_at_errno(ecode);
	}
	if ((uintptr_t)t % size)
		return FI_EINVAL;	/* no atomicity across a boundary */
	cmp = iwarp_at_arrays(op) == 2 ? payload + n * size : NULL;
	for (i = 0; i < n; i++) {
		uint8_t scratch[8];

		iwarp_at_apply(op, dt, t + i * size,
			       iwarp_at_arrays(op) ? payload + i * size : NULL,
			       cmp ? cmp + i * size : NULL,
			       out ? out + i * size : scratch);
	}
	return 0;
}

void iwarp_rdm_areq_in(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in)
{
	const struct iwarp_rdm_hdr *h = &in->hdr;
	bool fetch = h->tag & IWARP_RDM_AT_FETCH;
	size_t size = iwarp_dt_size(IWARP_RDM_AT_DT(h->tag));
	struct iwarp_rdm_tx *tx = iwarp_rdm_tx_new();
	uint8_t *out = NULL;
	int err;

	if (tx && fetch && size && h->data &&
	    h->data <= IWARP_RDM_ATOMIC_MAX / size) {
		out = malloc(h->data * size);
		if (!out) {
			free(tx);
			tx = NULL;
		}
	}
	err = tx ? iwarp_at_run(peer, h, in->abuf, out) : FI_ENOMEM;
	iwarp_rdm_owe(peer);
	if (!tx) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
			"RDM peer %s: no memory to answer atomic %u\n",
			peer->name, h->msg_id);
		return;		/* the initiator waits; memory is gone */
	}
	tx->ctrl = true;
	tx->hdr.op = IWARP_RDM_ARESP;
	tx->hdr.msg_id = h->msg_id;
	if (err) {
		tx->hdr.flags = IWARP_RDM_F_ERROR;
		tx->hdr.data = (uint64_t)err;
		free(out);
	} else if (out) {
		tx->copy = out;
		tx->iov[0].iov_base = out;
		tx->iov[0].iov_len = h->data * size;
		tx->count = 1;
		tx->hdr.len = (uint32_t)tx->iov[0].iov_len;
	}
	iwarp_rdm_queue(peer, tx);
}

/* ---- atomics: the initiator */

static void iwarp_rdm_scatter(struct iwarp_rdm_tx *tx, const uint8_t *src,
			      size_t len)
{
	size_t i;

	for (i = 0; i < tx->res_count && len; i++) {
		size_t take = tx->res[i].iov_len < len ? tx->res[i].iov_len :
							len;

		memcpy(tx->res[i].iov_base, src, take);
		src += take;
		len -= take;
	}
}

/* Ends the AREQ tx with the ARESP h (fetched values in payload). */
static void iwarp_rdm_answered(struct iwarp_rdm_peer *peer,
			       struct iwarp_rdm_tx *tx,
			       const struct iwarp_rdm_hdr *h,
			       const uint8_t *payload)
{
	iwarp_list_del(&tx->link);
	tx->listed = false;
	tx->answered = true;
	if (h->flags & IWARP_RDM_F_ERROR) {
		if (!tx->status)
			tx->status = h->data && h->data < 256 ? (int)h->data :
								FI_EIO;
	} else if (h->len != tx->res_len) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
			"RDM peer %s: atomic %u answered with %u octets, not "
			"%zu\n", peer->name, h->msg_id, h->len, tx->res_len);
		if (!tx->status)
			tx->status = FI_EIO;
	} else {
		iwarp_rdm_scatter(tx, payload, h->len);
	}
	iwarp_rdm_settle(peer->ep, tx);
}

void iwarp_rdm_aresp_in(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in)
{
	const struct iwarp_rdm_hdr *h = &in->hdr;
	struct iwarp_list *e;

	for (e = peer->inflight.next; e != &peer->inflight; e = e->next) {
		struct iwarp_rdm_tx *tx =
			iwarp_container_of(e, struct iwarp_rdm_tx, link);

		if (tx->kind != IWARP_RDM_K_ATOMIC ||
		    tx->hdr.msg_id != h->msg_id)
			continue;
		iwarp_rdm_answered(peer, tx, h, in->abuf);
		return;
	}
	FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
		"RDM peer %s: answer to no atomic (id %u) ignored\n",
		peer->name, h->msg_id);
}

static size_t iwarp_ioc_count(const struct fi_ioc *ioc, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		c += ioc[i].count;
	return c;
}

static void iwarp_ioc_gather(uint8_t *dst, const struct fi_ioc *ioc,
			     size_t n, size_t size)
{
	size_t i;

	for (i = 0; i < n; i++) {
		memcpy(dst, ioc[i].addr, ioc[i].count * size);
		dst += ioc[i].count * size;
	}
}

/* Can this go as one RFC 7306 Atomic Request? Fills tx->a7306 and
 * returns its op, or 0. */
static uint8_t iwarp_rdm_as_7306(struct iwarp_rdm_tx *tx, unsigned int op,
			      unsigned int dt, size_t n, const uint64_t *a,
			      const uint64_t *c)
{
	if ((dt != FI_INT64 && dt != FI_UINT64) || n != 1 || tx->raddr % 8)
		return 0;
	switch (op) {
	case FI_SUM:		/* FetchAdd, no field boundaries */
		tx->a7306[0] = *a;
		return IWARP_RDM_7306_FADD;
	case FI_ATOMIC_READ:	/* FetchAdd of 0 */
		return IWARP_RDM_7306_FADD;
	case FI_ATOMIC_WRITE:	/* CmpSwap that always matches */
		tx->a7306[0] = *a;
		tx->a7306[1] = ~0ULL;
		return IWARP_RDM_7306_CSWAP;
	case FI_CSWAP:
		tx->a7306[0] = *a;
		tx->a7306[1] = ~0ULL;
		tx->a7306[2] = *c;
		tx->a7306[3] = ~0ULL;
		return IWARP_RDM_7306_CSWAP;
	case FI_MSWAP:		/* swap the bits the compare value names */
		tx->a7306[0] = *a;
		tx->a7306[1] = *c;
		return IWARP_RDM_7306_CSWAP;
	default:
		return 0;
	}
}

/* The element count of a well-formed call, or 0. */
static size_t iwarp_rdm_atomic_count(int class, const struct fi_msg_atomic *m,
				     const struct fi_ioc *cmp, size_t ccount,
				     const struct fi_ioc *res, size_t rcount)
{
	unsigned int op = m->op, dt = m->datatype;
	size_t n;

	if (!iwarp_at_valid(op, dt, class) || m->rma_iov_count != 1 ||
	    !m->rma_iov || m->rma_iov[0].key > UINT32_MAX ||
	    m->iov_count > IWARP_IOV_MAX || rcount > IWARP_IOV_MAX ||
	    (m->iov_count && !m->msg_iov))
		return 0;
	n = iwarp_ioc_count(m->msg_iov, m->iov_count);
	if (!n || n > IWARP_RDM_ATOMIC_MAX / iwarp_dt_size(dt) ||
	    (class != IWARP_AT_WRITE && iwarp_ioc_count(res, rcount) != n) ||
	    (iwarp_at_arrays(op) == 2 && iwarp_ioc_count(cmp, ccount) != n))
		return 0;
	return n;
}

/* The AREQ payload: operands, then compare values; the first of each
 * also in *a and *c for RFC 7306. 0 or -FI_ENOMEM. */
static int iwarp_rdm_atomic_operands(struct iwarp_rdm_tx *tx,
				     const struct fi_msg_atomic *m,
				     const struct fi_ioc *cmp, size_t ccount,
				     uint64_t *a, uint64_t *c)
{
	size_t size = iwarp_dt_size(m->datatype), n = tx->hdr.data;
	size_t arrays = iwarp_at_arrays(m->op);

	if (!arrays)
		return 0;
	tx->copy = malloc(tx->hdr.len);
	if (!tx->copy)
		return -FI_ENOMEM;
	iwarp_ioc_gather(tx->copy, m->msg_iov, m->iov_count, size);
	if (arrays == 2)
		iwarp_ioc_gather(tx->copy + n * size, cmp, ccount, size);
	tx->iov[0].iov_base = tx->copy;
	tx->iov[0].iov_len = tx->hdr.len;
	tx->count = 1;
	memcpy(a, tx->copy, size < 8 ? size : 8);
	if (arrays == 2)
		memcpy(c, tx->copy + n * size, size < 8 ? size : 8);
	return 0;
}

/* Where fetched values go. */
static void iwarp_rdm_atomic_results(struct iwarp_rdm_tx *tx,
				     struct fi_ioc *res, size_t rcount,
				     size_t size)
{
	size_t i;

	for (i = 0; i < rcount; i++) {
		tx->res[i].iov_base = res[i].addr;
		tx->res[i].iov_len = res[i].count * size;
	}
	tx->res_count = rcount;
	tx->res_len = tx->len;
}

static ssize_t iwarp_rdm_atomic(struct iwarp_rdm_ep *ep, int class,
				const struct fi_msg_atomic *m,
				const struct fi_ioc *cmp, size_t ccount,
				struct fi_ioc *res, size_t rcount,
				uint64_t flags)
{
	unsigned int op = m->op, dt = m->datatype;
	size_t size = iwarp_dt_size(dt);
	size_t n = iwarp_rdm_atomic_count(class, m, cmp, ccount, res, rcount);
	struct iwarp_rdm_tx *tx;
	uint64_t a = 0, c = 0;

	if (!n)
		return -FI_EINVAL;
	tx = iwarp_rdm_tx_new();
	if (!tx)
		return -FI_ENOMEM;
	tx->kind = IWARP_RDM_K_ATOMIC;
	tx->context = m->context;
	tx->cq_flags = FI_ATOMIC | (class == IWARP_AT_WRITE ? FI_WRITE :
							      FI_READ);
	tx->len = n * size;
	tx->cq = iwarp_rdm_wants_cq(&ep->base, flags);
	tx->op_flags = flags & ~IWARP_INJECT_CALL;
	tx->rkey = (uint32_t)m->rma_iov[0].key;
	tx->raddr = m->rma_iov[0].addr;
	tx->hdr.op = IWARP_RDM_AREQ;
	tx->hdr.tag = op | (uint64_t)dt << 8 |
		      (class != IWARP_AT_WRITE ? IWARP_RDM_AT_FETCH : 0);
	tx->hdr.data = n;
	tx->hdr.stag = tx->rkey;
	tx->hdr.addr = tx->raddr;
	tx->hdr.len = (uint32_t)(n * size * iwarp_at_arrays(op));
	if (iwarp_rdm_atomic_operands(tx, m, cmp, ccount, &a, &c)) {
		free(tx);
		return -FI_ENOMEM;
	}
	if (class != IWARP_AT_WRITE)
		iwarp_rdm_atomic_results(tx, res, rcount, size);
	tx->a7306_op = iwarp_rdm_as_7306(tx, op, dt, n, &a, &c);
	return iwarp_rdm_submit(ep, tx, m->addr);
}

/* fi_atomic and friends all become an fi_msg_atomic */
static ssize_t iwarp_rdm_atomic_call(struct fid_ep *e, int class,
				     const struct fi_ioc *iov, size_t count,
				     const struct fi_ioc *cmp, size_t ccount,
				     struct fi_ioc *res, size_t rcount,
				     fi_addr_t dest, uint64_t addr,
				     uint64_t key, enum fi_datatype dt,
				     enum fi_op op, void *context,
				     uint64_t flags)
{
	struct fi_rma_ioc rma = { .addr = addr, .count = 0, .key = key };
	struct fi_msg_atomic m = {
		.msg_iov = iov,
		.iov_count = count,
		.addr = dest,
		.rma_iov = &rma,
		.rma_iov_count = 1,
		.datatype = dt,
		.op = op,
		.context = context,
	};

	rma.count = iwarp_ioc_count(iov, count);
	return iwarp_rdm_atomic(RDM(e), class, &m, cmp, ccount, res, rcount,
				flags);
}

static ssize_t iwarp_rdm_atomic_write(struct fid_ep *e, const void *buf,
				      size_t count, void *desc, fi_addr_t dest,
				      uint64_t addr, uint64_t key,
				      enum fi_datatype dt, enum fi_op op,
				      void *context)
{
	struct fi_ioc ioc = { (void *)buf, count };

	(void)desc;
	return iwarp_rdm_atomic_call(e, IWARP_AT_WRITE, &ioc, 1, NULL, 0, NULL,
				     0, dest, addr, key, dt, op, context,
				     RDM(e)->base.tx_op_flags);
}

static ssize_t iwarp_rdm_atomic_writev(struct fid_ep *e,
				       const struct fi_ioc *iov, void **desc,
				       size_t count, fi_addr_t dest,
				       uint64_t addr, uint64_t key,
				       enum fi_datatype dt, enum fi_op op,
				       void *context)
{
	(void)desc;
	return iwarp_rdm_atomic_call(e, IWARP_AT_WRITE, iov, count, NULL, 0,
				     NULL, 0, dest, addr, key, dt, op, context,
				     RDM(e)->base.tx_op_flags);
}

static ssize_t iwarp_rdm_atomic_writemsg(struct fid_ep *e,
					 const struct fi_msg_atomic *m,
					 uint64_t flags)
{
	if (!m)
		return -FI_EINVAL;
	return iwarp_rdm_atomic(RDM(e), IWARP_AT_WRITE, m, NULL, 0, NULL, 0,
				flags);
}

static ssize_t iwarp_rdm_atomic_inject(struct fid_ep *e, const void *buf,
				       size_t count, fi_addr_t dest,
				       uint64_t addr, uint64_t key,
				       enum fi_datatype dt, enum fi_op op)
{
	struct fi_ioc ioc = { (void *)buf, count };

	return iwarp_rdm_atomic_call(e, IWARP_AT_WRITE, &ioc, 1, NULL, 0, NULL,
				     0, dest, addr, key, dt, op, NULL,
				     RDM(e)->base.tx_op_flags | FI_INJECT |
					     IWARP_INJECT_CALL);
}

static ssize_t iwarp_rdm_atomic_readwrite(struct fid_ep *e, const void *buf,
					  size_t count, void *desc,
					  void *result, void *result_desc,
					  fi_addr_t dest, uint64_t addr,
					  uint64_t key, enum fi_datatype dt,
					  enum fi_op op, void *context)
{
	struct fi_ioc ioc = { (void *)buf, count }, res = { result, count };

	(void)desc;
	(void)result_desc;
	return iwarp_rdm_atomic_call(e, IWARP_AT_FETCH, &ioc, 1, NULL, 0, &res,
				     1, dest, addr, key, dt, op, context,
				     RDM(e)->base.tx_op_flags);
}

static ssize_t iwarp_rdm_atomic_readwritev(struct fid_ep *e,
					   const struct fi_ioc *iov,
					   void **desc, size_t count,
					   struct fi_ioc *resultv,
					   void **result_desc,
					   size_t result_count, fi_addr_t dest,
					   uint64_t addr, uint64_t key,
					   enum fi_datatype dt, enum fi_op op,
					   void *context)
{
	(void)desc;
	(void)result_desc;
	return iwarp_rdm_atomic_call(e, IWARP_AT_FETCH, iov, count, NULL, 0,
				     resultv, result_count, dest, addr, key,
				     dt, op, context, RDM(e)->base.tx_op_flags);
}

static ssize_t iwarp_rdm_atomic_readwritemsg(struct fid_ep *e,
					     const struct fi_msg_atomic *m,
					     struct fi_ioc *resultv,
					     void **result_desc,
					     size_t result_count,
					     uint64_t flags)
{
	(void)result_desc;
	if (!m)
		return -FI_EINVAL;
	return iwarp_rdm_atomic(RDM(e), IWARP_AT_FETCH, m, NULL, 0, resultv,
				result_count, flags);
}

static ssize_t iwarp_rdm_atomic_compwrite(struct fid_ep *e, const void *buf,
					  size_t count, void *desc,
					  const void *compare,
					  void *compare_desc, void *result,
					  void *result_desc, fi_addr_t dest,
					  uint64_t addr, uint64_t key,
					  enum fi_datatype dt, enum fi_op op,
					  void *context)
{
	struct fi_ioc ioc = { (void *)buf, count };
	struct fi_ioc cmp = { (void *)compare, count }, res = { result, count };

	(void)desc;
	(void)compare_desc;
	(void)result_desc;
	return iwarp_rdm_atomic_call(e, IWARP_AT_COMPARE, &ioc, 1, &cmp, 1,
				     &res, 1, dest, addr, key, dt, op, context,
				     RDM(e)->base.tx_op_flags);
}

static ssize_t iwarp_rdm_atomic_compwritev(
	struct fid_ep *e, const struct fi_ioc *iov, void **desc, size_t count,
	const struct fi_ioc *comparev, void **compare_desc,
	size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
	enum fi_datatype dt, enum fi_op op, void *context)
{
	(void)desc;
	(void)compare_desc;
	(void)result_desc;
	return iwarp_rdm_atomic_call(e, IWARP_AT_COMPARE, iov, count, comparev,
				     compare_count, resultv, result_count,
				     dest, addr, key, dt, op, context,
				     RDM(e)->base.tx_op_flags);
}

static ssize_t iwarp_rdm_atomic_compwritemsg(
	struct fid_ep *e, const struct fi_msg_atomic *m,
	const struct fi_ioc *comparev, void **compare_desc,
	size_t compare_count, struct fi_ioc *resultv, void **result_desc,
	size_t result_count, uint64_t flags)
{
	(void)compare_desc;
	(void)result_desc;
	if (!m)
		return -FI_EINVAL;
	return iwarp_rdm_atomic(RDM(e), IWARP_AT_COMPARE, m, comparev,
				compare_count, resultv, result_count, flags);
}

static int iwarp_rdm_atomic_valid(int class, enum fi_datatype dt,
				  enum fi_op op, size_t *count)
{
	if (!iwarp_at_valid(op, dt, class))
		return -FI_EOPNOTSUPP;
	if (count)
		*count = IWARP_RDM_ATOMIC_MAX / iwarp_dt_size(dt);
	return 0;
}

int iwarp_query_atomic(struct fid_domain *domain, enum fi_datatype dt,
		       enum fi_op op, struct fi_atomic_attr *attr,
		       uint64_t flags)
{
	int class = flags & FI_COMPARE_ATOMIC ? IWARP_AT_COMPARE :
		    flags & FI_FETCH_ATOMIC ? IWARP_AT_FETCH : IWARP_AT_WRITE;
	int ret;

	(void)domain;
	if (!attr || (flags & ~(FI_COMPARE_ATOMIC | FI_FETCH_ATOMIC)) ||
	    (flags & FI_COMPARE_ATOMIC && flags & FI_FETCH_ATOMIC))
		return -FI_EINVAL;
	ret = iwarp_rdm_atomic_valid(class, dt, op, &attr->count);
	if (!ret)
		attr->size = iwarp_dt_size(dt);
	return ret;
}

static int iwarp_rdm_writevalid(struct fid_ep *e, enum fi_datatype dt,
				enum fi_op op, size_t *count)
{
	(void)e;
	return iwarp_rdm_atomic_valid(IWARP_AT_WRITE, dt, op, count);
}

static int iwarp_rdm_readwritevalid(struct fid_ep *e, enum fi_datatype dt,
				    enum fi_op op, size_t *count)
{
	(void)e;
	return iwarp_rdm_atomic_valid(IWARP_AT_FETCH, dt, op, count);
}

static int iwarp_rdm_compwritevalid(struct fid_ep *e, enum fi_datatype dt,
				    enum fi_op op, size_t *count)
{
	(void)e;
	return iwarp_rdm_atomic_valid(IWARP_AT_COMPARE, dt, op, count);
}

struct fi_ops_atomic iwarp_rdm_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = iwarp_rdm_atomic_write,
	.writev = iwarp_rdm_atomic_writev,
	.writemsg = iwarp_rdm_atomic_writemsg,
	.inject = iwarp_rdm_atomic_inject,
	.readwrite = iwarp_rdm_atomic_readwrite,
	.readwritev = iwarp_rdm_atomic_readwritev,
	.readwritemsg = iwarp_rdm_atomic_readwritemsg,
	.compwrite = iwarp_rdm_atomic_compwrite,
	.compwritev = iwarp_rdm_atomic_compwritev,
	.compwritemsg = iwarp_rdm_atomic_compwritemsg,
	.writevalid = iwarp_rdm_writevalid,
	.readwritevalid = iwarp_rdm_readwritevalid,
	.compwritevalid = iwarp_rdm_compwritevalid,
};

/* ---- reductions for collectives (rdm_coll.c) */

size_t iwarp_rdm_dt_size(unsigned int dt)
{
	return iwarp_dt_size(dt);
}

/* The ops fi_collective(3) reduces with: the basic atomics but writes. */
bool iwarp_rdm_reduce_ok(unsigned int op, unsigned int dt)
{
	return op != FI_ATOMIC_WRITE && iwarp_at_valid(op, dt, IWARP_AT_WRITE);
}

void iwarp_rdm_reduce(unsigned int op, unsigned int dt, void *acc,
		      const void *v, size_t count)
{
	size_t size = iwarp_dt_size(dt), i;
	uint8_t *a = acc;
	const uint8_t *b = v;

	for (i = 0; i < count; i++) {
		uint8_t old[8];

		iwarp_at_apply(op, dt, a + i * size, b + i * size, NULL, old);
	}
}
