/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * DDP (RFC 5041 §4) and RDMAP (RFC 5040 §4, Appendix A; RFC 7306 atomics
 * and Immediate Data) header codecs. The DDP control octet and the RDMAP control octet are
 * read together as one 16-bit word (masks in wire.h).
 */
#include <errno.h>
#include <string.h>

#include "iwarp/wire.h"

struct rdmap_op_info {
	const char *name;	/* NULL: reserved */
	bool tagged;
	uint8_t qn;		/* untagged queue */
	uint8_t extra;		/* fixed RDMAP header octets after DDP */
	bool atomic;		/* RFC 7306 */
};

/* RFC 5040 §4.1 figure 4, RFC 7306 */
static const struct rdmap_op_info rdmap_ops[RDMAP_OPCODE_MAX + 1] = {
	[RDMAP_WRITE] = { "RDMA Write", true, 0, 0 },
	[RDMAP_READ_REQ] = { "RDMA Read Request", false, DDP_QN_RREQ,
			     RDMAP_RREQ_LEN },
	[RDMAP_READ_RESP] = { "RDMA Read Response", true, 0, 0 },
	[RDMAP_SEND] = { "Send", false, DDP_QN_SEND, 0 },
	[RDMAP_SEND_INV] = { "Send with Invalidate", false, DDP_QN_SEND, 0 },
	[RDMAP_SEND_SE] = { "Send with SE", false, DDP_QN_SEND, 0 },
	[RDMAP_SEND_SE_INV] = { "Send with SE and Invalidate", false,
				DDP_QN_SEND, 0 },
	[RDMAP_TERMINATE] = { "Terminate", false, DDP_QN_TERM,
			      RDMAP_TERM_CTRL_LEN },
	/* RFC 7306: Immediate Data shares the Send queue and its MSNs */
	[RDMAP_IMM] = { "Immediate Data", false, DDP_QN_SEND, RDMAP_IMM_LEN },
	[RDMAP_IMM_SE] = { "Immediate Data with SE", false, DDP_QN_SEND,
			   RDMAP_IMM_LEN },
	[RDMAP_ATOMIC_REQ] = { "Atomic Request", false, DDP_QN_AREQ,
			       RDMAP_AREQ_LEN, true },
	[RDMAP_ATOMIC_RESP] = { "Atomic Response", false, DDP_QN_ARESP,
				RDMAP_ARESP_LEN, true },
};

static const struct rdmap_op_info *rdmap_op(unsigned int op)
{
	return op <= RDMAP_OPCODE_MAX && rdmap_ops[op].name ? &rdmap_ops[op] :
							      NULL;
}

const char *rdmap_opcode_str(unsigned int op)
{
	return rdmap_op(op) ? rdmap_ops[op].name : "reserved";
}

size_t rdmap_hdr_len(unsigned int op)
{
	if (!rdmap_op(op))
		return 0;
	return (rdmap_ops[op].tagged ? DDP_TAGGED_HDR : DDP_UNTAGGED_HDR) +
	       rdmap_ops[op].extra;
}

/* The control octets: versions, opcode, and that T matches the opcode. */
static int ddp_ctrl_parse(uint16_t ctrl, struct ddp_hdr *h,
			  const struct rdmap_op_info **infop,
			  struct iw_err *err)
{
	const struct rdmap_op_info *info;

	h->tagged = ctrl & DDP_CTRL_T;
	h->last = ctrl & DDP_CTRL_L;
	h->ddp_ver = (ctrl & DDP_CTRL_DV) >> 8;
	h->rdmap_ver = (ctrl & DDP_CTRL_RV) >> 6;
	h->opcode = ctrl & DDP_CTRL_OP;
	if (h->ddp_ver != DDP_VERSION)
		return iw_fail_v(err, IW_LAYER_DDP, h->tagged ?
				 DDP_ETYPE_TAGGED : DDP_ETYPE_UNTAGGED,
				 h->tagged ? DDP_ECODE_T_VERSION :
					     DDP_ECODE_UT_VERSION,
				 "bad DDP version", h->ddp_ver, DDP_VERSION);
	/* RFC 5040 §4.1: 1, and 0 (RDMA Consortium) are both valid */
	if (h->rdmap_ver > RDMAP_VERSION)
		return iw_fail_v(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
				 RDMAP_ECODE_VERSION, "RDMAP version not 0 or 1",
				 h->rdmap_ver, RDMAP_VERSION);
	info = rdmap_op(h->opcode);
	if (!info)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_OPCODE, "reserved RDMAP opcode");
	if (info->tagged != h->tagged)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_OPCODE,
			       "tagged flag does not match opcode");
	*infop = info;
	return 0;
}

/* Queue number, and the rules of single-segment messages. */
static int ddp_untagged_check(const struct ddp_hdr *h,
			      const struct rdmap_op_info *info,
			      struct iw_err *err)
{
	/* queues 3 and 4 exist for the RFC 7306 messages only; to the
	 * others they are as unknown as any higher number */
	if (h->qn > (info->atomic ? DDP_QN_AREQ : DDP_QN_TERM))
		return iw_fail_v(err, IW_LAYER_DDP, DDP_ETYPE_UNTAGGED,
				 DDP_ECODE_UT_INVALID_QN,
				 "queue number out of range", h->qn, info->qn);
	if (h->qn != info->qn)
		return iw_fail_v(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
				 RDMAP_ECODE_OPCODE,
				 "opcode on the wrong DDP queue", h->qn, info->qn);
	/* atomics are single-segment too; a split one is not an atomic */
	if (info->atomic && (h->mo != 0 || !h->last))
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_OPCODE,
			       "Atomic message in more than one segment");
	/* Read Requests and Terminates are single-segment messages. */
	if (info->extra && h->mo != 0)
		return iw_fail(err, IW_LAYER_DDP, DDP_ETYPE_UNTAGGED,
			       DDP_ECODE_UT_INVALID_MO,
			       "Read Request/Terminate with MO != 0");
	if (info->extra && !h->last)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_CATASTROPHIC_STREAM,
			       "Read Request/Terminate without L bit");
	return 0;
}

/*
 * Checks in the order a receiver learns things (as Linux siw does): DDP
 * version, RDMAP version, opcode, then the fields that depend on them.
 */
int ddp_hdr_parse(const uint8_t *p, size_t len, struct ddp_hdr *h,
		  struct iw_err *err)
{
	const struct rdmap_op_info *info = NULL;

	if (len < 2)
		return -EAGAIN;
	memset(h, 0, sizeof(*h));
	if (ddp_ctrl_parse(iw_get16(p), h, &info, err))
		return -EPROTO;
	if (h->tagged) {
		if (len < DDP_TAGGED_HDR)
			return -EAGAIN;
		h->stag = iw_get32(p + 2);
		h->to = iw_get64(p + 6);
		return 0;
	}
	if (len < DDP_UNTAGGED_HDR)
		return -EAGAIN;
	h->inv_stag = iw_get32(p + 2);
	h->qn = iw_get32(p + 6);
	h->msn = iw_get32(p + 10);
	h->mo = iw_get32(p + 14);
	if (h->opcode != RDMAP_SEND_INV && h->opcode != RDMAP_SEND_SE_INV)
		h->inv_stag = 0;	/* ignored by the receiver (§4.1) */
	return ddp_untagged_check(h, info, err);
}

ssize_t ddp_hdr_build(uint8_t *buf, size_t cap, const struct ddp_hdr *h)
{
	size_t n = h->tagged ? DDP_TAGGED_HDR : DDP_UNTAGGED_HDR;
	uint16_t ctrl;

	if (!rdmap_op(h->opcode) || h->ddp_ver > 3 || h->rdmap_ver > 3)
		return -EINVAL;
	if (cap < n)
		return -ENOSPC;
	ctrl = (uint16_t)((h->tagged ? DDP_CTRL_T : 0) |
			  (h->last ? DDP_CTRL_L : 0) |
			  h->ddp_ver << 8 | h->rdmap_ver << 6 | h->opcode);
	iw_put16(buf, ctrl);
	if (h->tagged) {
		iw_put32(buf + 2, h->stag);
		iw_put64(buf + 6, h->to);
	} else {
		iw_put32(buf + 2, h->inv_stag);
		iw_put32(buf + 6, h->qn);
		iw_put32(buf + 10, h->msn);
		iw_put32(buf + 14, h->mo);
	}
	return (ssize_t)n;
}

/* RFC 5040 §4.4. `len` is the whole Read Request payload. */
int rdmap_rreq_parse(const uint8_t *p, size_t len, struct rdmap_rreq *r,
		     struct iw_err *err)
{
	if (len != RDMAP_RREQ_LEN)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_CATASTROPHIC_STREAM,
			       "Read Request payload is not 28 octets");
	r->sink_stag = iw_get32(p);
	r->sink_to = iw_get64(p + 4);
	r->size = iw_get32(p + 12);
	r->src_stag = iw_get32(p + 16);
	r->src_to = iw_get64(p + 20);
	return 0;
}

ssize_t rdmap_rreq_build(uint8_t *buf, size_t cap, const struct rdmap_rreq *r)
{
	if (cap < RDMAP_RREQ_LEN)
		return -ENOSPC;
	iw_put32(buf, r->sink_stag);
	iw_put64(buf + 4, r->sink_to);
	iw_put32(buf + 12, r->size);
	iw_put32(buf + 16, r->src_stag);
	iw_put64(buf + 20, r->src_to);
	return RDMAP_RREQ_LEN;
}

/*
 * RFC 7306 Atomic Request: reserved(28) | opcode(4) | Request Identifier |
 * Remote STag | Remote Tagged Offset | Add or Swap Data | Add or Swap Mask
 * | Compare Data | Compare Mask. `len` is the whole payload.
 */
int rdmap_areq_parse(const uint8_t *p, size_t len, struct rdmap_areq *a,
		     struct iw_err *err)
{
	if (len != RDMAP_AREQ_LEN)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_OPCODE,
			       "Atomic Request payload is not 52 octets");
	a->op = p[3] & 0x0f;
	if (a->op != RDMAP_ATOMIC_FETCH_ADD && a->op != RDMAP_ATOMIC_CMP_SWAP)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_OPCODE, "unknown atomic operation");
	a->req_id = iw_get32(p + 4);
	a->stag = iw_get32(p + 8);
	a->to = iw_get64(p + 12);
	a->add_swap = iw_get64(p + 20);
	a->add_swap_mask = iw_get64(p + 28);
	a->compare = iw_get64(p + 36);
	a->compare_mask = iw_get64(p + 44);
	return 0;
}

ssize_t rdmap_areq_build(uint8_t *buf, size_t cap, const struct rdmap_areq *a)
{
	if (a->op != RDMAP_ATOMIC_FETCH_ADD && a->op != RDMAP_ATOMIC_CMP_SWAP)
		return -EINVAL;
	if (cap < RDMAP_AREQ_LEN)
		return -ENOSPC;
	iw_put32(buf, a->op);
	iw_put32(buf + 4, a->req_id);
	iw_put32(buf + 8, a->stag);
	iw_put64(buf + 12, a->to);
	iw_put64(buf + 20, a->add_swap);
	iw_put64(buf + 28, a->add_swap_mask);
	iw_put64(buf + 36, a->compare);
	iw_put64(buf + 44, a->compare_mask);
	return RDMAP_AREQ_LEN;
}

/* RFC 7306 Atomic Response: Original Request Identifier | Original
 * Remote Data Value. */
int rdmap_aresp_parse(const uint8_t *p, size_t len, struct rdmap_aresp *r,
		      struct iw_err *err)
{
	if (len != RDMAP_ARESP_LEN)
		return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
			       RDMAP_ECODE_OPCODE,
			       "Atomic Response payload is not 12 octets");
	r->req_id = iw_get32(p);
	r->orig = iw_get64(p + 4);
	return 0;
}

ssize_t rdmap_aresp_build(uint8_t *buf, size_t cap,
			  const struct rdmap_aresp *r)
{
	if (cap < RDMAP_ARESP_LEN)
		return -ENOSPC;
	iw_put32(buf, r->req_id);
	iw_put64(buf + 4, r->orig);
	return RDMAP_ARESP_LEN;
}

int rdmap_imm_parse(const uint8_t *p, size_t len, uint64_t *data,
		    struct iw_err *err)
{
	if (len != RDMAP_IMM_LEN)
		return iw_fail_v(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
				 RDMAP_ECODE_OPCODE,
				 "Immediate Data payload: octets", len,
				 RDMAP_IMM_LEN);
	*data = iw_get64(p);
	return 0;
}

ssize_t rdmap_imm_build(uint8_t *buf, size_t cap, uint64_t data)
{
	if (cap < RDMAP_IMM_LEN)
		return -ENOSPC;
	iw_put64(buf, data);
	return RDMAP_IMM_LEN;
}

/*
 * RFC 5040 §4.8: control word | DDP Segment Length (present with D or M) |
 * terminated DDP header (D; 14 or 18 octets by its own T bit) | terminated
 * Read Request header (R; 28 octets).
 */
int rdmap_term_parse(const uint8_t *p, size_t len, struct rdmap_term *t,
		     struct iw_err *err)
{
	size_t off = RDMAP_TERM_CTRL_LEN;

	memset(t, 0, sizeof(*t));
	if (len < RDMAP_TERM_CTRL_LEN)
		goto bad;
	t->layer = p[0] >> 4;
	t->etype = p[0] & 0x0f;
	t->ecode = p[1];
	t->hdrct = p[2] >> 5;
	if ((!t->hdrct && (p[2] & 7)) ||
	    (!t->hdrct && !iw_err_known(t->layer, t->etype, t->ecode) &&
	     iw_err_known(t->etype, t->layer, t->ecode))) {
		/* siw: M 0x01, D 0x02, R 0x04 -> ours M 4, D 2, R 1 */
		t->layer = p[0] & 0x0f;
		t->etype = p[0] >> 4;
		t->hdrct = (uint8_t)((p[2] & 1) << 2 | (p[2] & 2) |
				     (p[2] & 4) >> 2);
		t->siw_layout = true;
	}
	if (t->hdrct & (RDMAP_TERM_M | RDMAP_TERM_D)) {
		if (len < off + 2)
			goto bad;
		t->seg_len = iw_get16(p + off);
		off += 2;
	}
	if (t->hdrct & RDMAP_TERM_D) {
		if (len < off + 1)
			goto bad;
		t->ddp_hdr_len = ddp_hdr_size(p[off]);
		if (len < off + t->ddp_hdr_len)
			goto bad;
		memcpy(t->ddp_hdr, p + off, t->ddp_hdr_len);
		off += t->ddp_hdr_len;
	}
	if (t->hdrct & RDMAP_TERM_R) {
		if (len < off + RDMAP_RREQ_LEN)
			goto bad;
		memcpy(t->rreq, p + off, RDMAP_RREQ_LEN);
		t->has_rreq = true;
	}
	return 0;
bad:
	return iw_fail(err, IW_LAYER_RDMAP, RDMAP_ETYPE_REMOTE_OP,
		       RDMAP_ECODE_CATASTROPHIC_STREAM,
		       "Terminate header copies do not fit its payload");
}

ssize_t rdmap_term_build(uint8_t *buf, size_t cap, const struct rdmap_term *t)
{
	size_t n = RDMAP_TERM_CTRL_LEN;
	bool seg = t->hdrct & (RDMAP_TERM_M | RDMAP_TERM_D);
	bool d = t->hdrct & RDMAP_TERM_D;
	bool r = t->hdrct & RDMAP_TERM_R;

	if (t->layer > 0xf || t->etype > 0xf || t->hdrct > 7 ||
	    (d && t->ddp_hdr_len != DDP_TAGGED_HDR &&
	     t->ddp_hdr_len != DDP_UNTAGGED_HDR))
		return -EINVAL;
	n += (seg ? 2 : 0) + (d ? t->ddp_hdr_len : 0) +
	     (r ? RDMAP_RREQ_LEN : 0);
	if (cap < n)
		return -ENOSPC;
	buf[0] = (uint8_t)(t->layer << 4 | t->etype);
	buf[1] = t->ecode;
	buf[2] = (uint8_t)(t->hdrct << 5);
	buf[3] = 0;
	n = RDMAP_TERM_CTRL_LEN;
	if (seg) {
		iw_put16(buf + n, t->seg_len);
		n += 2;
	}
	if (d) {
		memcpy(buf + n, t->ddp_hdr, t->ddp_hdr_len);
		n += t->ddp_hdr_len;
	}
	if (r) {
		memcpy(buf + n, t->rreq, RDMAP_RREQ_LEN);
		n += RDMAP_RREQ_LEN;
	}
	return (ssize_t)n;
}
