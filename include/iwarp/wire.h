/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iWARP wire formats: MPA (RFC 5044, RFC 6581), DDP (RFC 5041) and
 * RDMAP (RFC 5040, RFC 7306 atomics). All fields on the wire are
 * big-endian; nothing here uses C bitfields. Parsers take bytes and
 * return a validated host-order struct or the exact protocol error
 * (layer, type, code).
 *
 * Return contract of every parser: 0 success, -EAGAIN the input is too
 * short to decide (feed more bytes), -EPROTO the input is invalid and
 * *err holds the RFC error triple. Builders return the number of octets
 * written, or a negative errno (-EINVAL bad argument, -ENOSPC buffer).
 */
#ifndef IWARP_WIRE_H
#define IWARP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- error triples (RFC 5040 §4.8 figure 9, RFC 5041 §7.2, RFC 5044 §8) */

enum iw_layer {
	IW_LAYER_RDMAP = 0,
	IW_LAYER_DDP = 1,
	IW_LAYER_LLP = 2,
};

/* RDMAP error types and codes */
enum {
	RDMAP_ETYPE_CATASTROPHIC = 0,
	RDMAP_ETYPE_REMOTE_PROT = 1,
	RDMAP_ETYPE_REMOTE_OP = 2,
};
enum {
	RDMAP_ECODE_INVALID_STAG = 0x00,
	RDMAP_ECODE_BASE_BOUNDS = 0x01,
	RDMAP_ECODE_ACCESS = 0x02,
	RDMAP_ECODE_STAG_NOT_ASSOC = 0x03,
	RDMAP_ECODE_TO_WRAP = 0x04,
	RDMAP_ECODE_VERSION = 0x05,
	RDMAP_ECODE_OPCODE = 0x06,
	RDMAP_ECODE_CATASTROPHIC_STREAM = 0x07,
	RDMAP_ECODE_CATASTROPHIC_GLOBAL = 0x08,
	RDMAP_ECODE_CANNOT_INVALIDATE = 0x09,
	RDMAP_ECODE_UNSPECIFIED = 0xff,
};

/* DDP error types and codes */
enum {
	DDP_ETYPE_CATASTROPHIC = 0,
	DDP_ETYPE_TAGGED = 1,
	DDP_ETYPE_UNTAGGED = 2,
};
enum {
	DDP_ECODE_T_INVALID_STAG = 0,
	DDP_ECODE_T_BASE_BOUNDS = 1,
	DDP_ECODE_T_STAG_NOT_ASSOC = 2,
	DDP_ECODE_T_TO_WRAP = 3,
	DDP_ECODE_T_VERSION = 4,
	DDP_ECODE_UT_INVALID_QN = 1,
	DDP_ECODE_UT_NO_BUFFER = 2,
	DDP_ECODE_UT_MSN_RANGE = 3,
	DDP_ECODE_UT_INVALID_MO = 4,
	DDP_ECODE_UT_TOO_LONG = 5,
	DDP_ECODE_UT_VERSION = 6,
};

/* LLP (MPA) error type 0 and its codes (RFC 5044 §8, RFC 6581 §8) */
enum {
	MPA_ETYPE = 0,
};
enum {
	MPA_ECODE_CLOSED = 1,
	MPA_ECODE_CRC = 2,
	MPA_ECODE_MARKER = 3,
	MPA_ECODE_REQ_REP = 4,
	MPA_ECODE_LOCAL_CATASTROPHIC = 5,
	MPA_ECODE_INSUFFICIENT_IRD = 6,
	MPA_ECODE_NO_RTR = 7,
};

struct iw_err {
	uint8_t layer;
	uint8_t etype;
	uint8_t ecode;
	bool vals;		/* got and want below say what differed */
	const char *why;	/* static text for the log, may be NULL */
	uint64_t got, want;	/* the value received and the one expected */
};

/* Fills *err and returns -EPROTO, so parsers can `return iw_fail(...)`. */
int iw_fail(struct iw_err *err, uint8_t layer, uint8_t etype, uint8_t ecode,
	    const char *why);
/* iw_fail, and the value received against the one expected. */
int iw_fail_v(struct iw_err *err, uint8_t layer, uint8_t etype,
	      uint8_t ecode, const char *why, uint64_t got, uint64_t want);
/* err->why with the values, e.g. "Send MSN out of range: got 7, expected
 * 5"; "-" without a reason. Returns buf. */
const char *iw_err_why(const struct iw_err *err, char *buf, size_t size);
/* Human-readable name of a triple, e.g. "DDP untagged buffer: invalid MSN
 * (range)". Never NULL. */
const char *iw_err_str(uint8_t layer, uint8_t etype, uint8_t ecode);
/* The triple is one RFC 5040/5041/5044/6581 defines. */
bool iw_err_known(uint8_t layer, uint8_t etype, uint8_t ecode);

/* ---- big-endian helpers */

static inline uint16_t iw_get16(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t iw_get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t iw_get64(const uint8_t *p)
{
	return (uint64_t)iw_get32(p) << 32 | iw_get32(p + 4);
}

static inline void iw_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void iw_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void iw_put64(uint8_t *p, uint64_t v)
{
	iw_put32(p, (uint32_t)(v >> 32));
	iw_put32(p + 4, (uint32_t)v);
}

/* ---- MPA Request/Reply frames (RFC 5044 §7.1, RFC 6581 §9) */

#define MPA_KEY_LEN 16
#define MPA_KEY_REQ "MPA ID Req Frame"
#define MPA_KEY_REP "MPA ID Rep Frame"
#define MPA_HDR_LEN 20
#define MPA_MAX_PD 512		/* RFC 5044 §7.1 */
#define MPA_ENH_LEN 4		/* RFC 6581 §9 enhanced data */
#define MPA_INTEROP_MAX_PD 256	/* what iw_cxgb4/siw accept in total */

#define MPA_FLAG_M 0x80
#define MPA_FLAG_C 0x40
#define MPA_FLAG_R 0x20
#define MPA_FLAG_S 0x10		/* rev 2 only; reserved in rev 1 */

#define MPA_ENH_A 0x8000	/* IRD word: peer-to-peer model */
#define MPA_ENH_B 0x4000	/* IRD word: zero-length Send RTR */
#define MPA_ENH_C 0x8000	/* ORD word: zero-length RDMA Write RTR */
#define MPA_ENH_D 0x4000	/* ORD word: zero-length RDMA Read RTR */
#define MPA_ENH_DEPTH 0x3fff
#define MPA_IRD_ORD_NO_NEG 0x3fff /* "no automatic negotiation", §9.1 */

enum mpa_kind {
	MPA_REQUEST,
	MPA_REPLY,
};

enum {
	MPA_RTR_SEND = 1 << 0,
	MPA_RTR_WRITE = 1 << 1,
	MPA_RTR_READ = 1 << 2,
};

struct mpa_frame {
	enum mpa_kind kind;
	uint8_t rev;		/* 1 or 2 */
	bool markers;		/* M: wants markers towards the sender */
	bool crc;		/* C */
	bool reject;		/* R (reply only) */
	bool enhanced;		/* S: RFC 6581 block present (rev 2) */
	uint8_t reserved;	/* reserved flag bits as received */
	uint16_t pd_len;	/* total private data, enhanced block included */
	/* enhanced block, valid when enhanced */
	bool p2p;		/* A */
	uint8_t rtr;		/* MPA_RTR_* from B, C, D */
	uint16_t ird;
	uint16_t ord;
	/* ULP private data: points into the parsed buffer */
	const uint8_t *ulp_pd;
	uint16_t ulp_pd_len;
};

/* Octets of a frame whose first MPA_HDR_LEN octets are at p, or -EAGAIN. */
ssize_t mpa_frame_len(const uint8_t *p, size_t len);
int mpa_frame_parse(const uint8_t *p, size_t len, enum mpa_kind kind,
		    struct mpa_frame *f, struct iw_err *err);
/* Builds header (+ enhanced block when f->enhanced) + ulp_pd. f->pd_len
 * and f->ulp_pd* are ignored; the lengths come from ulp_len. */
ssize_t mpa_frame_build(uint8_t *buf, size_t cap, const struct mpa_frame *f,
			const void *ulp_pd, size_t ulp_len);

/* ---- FPDU framing (RFC 5044 §4) */

#define MPA_FPDU_HDR 2
#define MPA_CRC_LEN 4
#define MPA_MARKER_LEN 4
#define MPA_MARKER_INTERVAL 512
#define MPA_MAX_ULPDU 0xffff

static inline unsigned int mpa_pad(size_t ulpdu_len)
{
	return (unsigned int)(-(MPA_FPDU_HDR + ulpdu_len) & 3);
}

/* Octets of an FPDU without markers: length field, ULPDU, pad, CRC. */
static inline size_t mpa_fpdu_len(size_t ulpdu_len)
{
	return MPA_FPDU_HDR + ulpdu_len + mpa_pad(ulpdu_len) + MPA_CRC_LEN;
}

/* Largest ULPDU so that an FPDU fits an EMSS-sized TCP segment. */
uint32_t mpa_mulpdu(uint32_t emss, bool markers);

/* Writes the trailer (pad zeros + CRC, little-endian octet order as on the
 * wire, zero when !crc) of one marker-free FPDU. The CRC covers hdr[0..1]
 * and the ULPDU given as iov. Returns the trailer octets (pad + 4). */
struct iovec;
size_t mpa_fpdu_trailer(uint8_t *out, const uint8_t hdr[MPA_FPDU_HDR],
			const struct iovec *iov, int iovcnt, bool crc);

/* The same for an FPDU built in one buffer: its first len octets hold
 * the length field and the ULPDU; pad and CRC are written after them.
 * Returns the whole FPDU's length. */
size_t mpa_fpdu_close(uint8_t *fpdu, size_t len, bool crc);

/*
 * Markers (RFC 5044 §5). Stream positions count octets of the TCP stream
 * from the first octet of full operation (the marker origin); a marker
 * sits at every multiple of 512. FPDUPTR is the distance from the first
 * octet of the FPDU the marker lies in to the marker. A marker at the very
 * start of an FPDU belongs to that FPDU (FPDUPTR 0, covered by its CRC).
 */

/*
 * Frames one ULPDU into buf. With markers, *pos is the stream position of
 * the FPDU's first octet; markers are inserted and covered by the CRC, and
 * *pos advances by the octets written (pos may be NULL without markers).
 * Returns octets written, -EINVAL (ULPDU too long) or -ENOSPC.
 */
ssize_t mpa_fpdu_build(uint8_t *buf, size_t cap, const uint8_t *ulpdu,
		       size_t ulpdu_len, bool crc, bool markers,
		       uint64_t *pos);

/* Octets that `len` octets of FPDU data starting at stream position `pos`
 * occupy once markers are inserted. */
size_t mpa_marked_len(size_t len, uint64_t pos);

/*
 * Removes the markers from a marked stream of whole FPDUs that starts at an
 * FPDU boundary at stream position `pos`, checking every FPDUPTR. CRCs are
 * left as they are (they cover the markers). Returns octets written,
 * -ENOSPC, -EAGAIN (stream ends inside an FPDU), or -EPROTO with LLP/MPA/3.
 */
ssize_t mpa_marker_strip(uint8_t *out, size_t cap, const uint8_t *in,
			 size_t len, uint64_t pos, struct iw_err *err);

/* ---- DDP and RDMAP headers (RFC 5041 §4, RFC 5040 §4, App. A,
 * RFC 7306 atomics and Immediate Data) */

#define DDP_CTRL_T 0x8000
#define DDP_CTRL_L 0x4000
#define DDP_CTRL_DV 0x0300
#define DDP_CTRL_RV 0x00c0
#define DDP_CTRL_OP 0x000f
#define DDP_VERSION 1
#define RDMAP_VERSION 1

#define DDP_TAGGED_HDR 14
#define DDP_UNTAGGED_HDR 18

/* The DDP header size that a segment's first control octet (T bit) gives. */
static inline size_t ddp_hdr_size(uint8_t ctrl)
{
	return ctrl & (DDP_CTRL_T >> 8) ? DDP_TAGGED_HDR : DDP_UNTAGGED_HDR;
}

#define RDMAP_RREQ_LEN 28
#define RDMAP_AREQ_LEN 52	/* RFC 7306 Atomic Request header */
#define RDMAP_ARESP_LEN 12	/* RFC 7306 Atomic Response header */
#define RDMAP_IMM_LEN 8		/* RFC 7306 Immediate Data */
#define RDMAP_TERM_CTRL_LEN 4
#define RDMAP_TERM_MAX (RDMAP_TERM_CTRL_LEN + 2 + DDP_UNTAGGED_HDR + \
			RDMAP_RREQ_LEN)

enum rdmap_opcode {
	RDMAP_WRITE = 0,
	RDMAP_READ_REQ = 1,
	RDMAP_READ_RESP = 2,
	RDMAP_SEND = 3,
	RDMAP_SEND_INV = 4,
	RDMAP_SEND_SE = 5,
	RDMAP_SEND_SE_INV = 6,
	RDMAP_TERMINATE = 7,
	/* RFC 7306 */
	RDMAP_IMM = 0x8,
	RDMAP_IMM_SE = 0x9,
	RDMAP_ATOMIC_REQ = 0xa,
	RDMAP_ATOMIC_RESP = 0xb,
	RDMAP_OPCODE_MAX = 0xb,
};

enum ddp_qn {
	DDP_QN_SEND = 0,
	DDP_QN_RREQ = 1,
	DDP_QN_TERM = 2,
	DDP_QN_ARESP = 3,	/* RFC 7306: the requester's Atomic Responses */
	DDP_QN_AREQ = 4,	/* the responder's Atomic Requests */
	DDP_QN_COUNT = 5,
};

const char *rdmap_opcode_str(unsigned int op);
/* Header octets (DDP + RDMAP fixed part) an opcode carries; 0 for a
 * reserved opcode. */
size_t rdmap_hdr_len(unsigned int op);

struct ddp_hdr {
	bool tagged;
	bool last;
	uint8_t ddp_ver;
	uint8_t rdmap_ver;
	uint8_t opcode;
	/* tagged */
	uint32_t stag;
	uint64_t to;
	/* untagged */
	uint32_t inv_stag;	/* Send with Invalidate (and SE) */
	uint32_t qn;
	uint32_t msn;
	uint32_t mo;
};

/* Parses the DDP header (+ RDMAP control) of one ULPDU of `len` octets
 * (the whole ULPDU, so length rules can be checked). */
int ddp_hdr_parse(const uint8_t *p, size_t len, struct ddp_hdr *h,
		  struct iw_err *err);
/* Builds the DDP/RDMAP header; returns 14 or 18 octets written. */
ssize_t ddp_hdr_build(uint8_t *buf, size_t cap, const struct ddp_hdr *h);

struct rdmap_rreq {
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint32_t src_stag;
	uint64_t src_to;
};

int rdmap_rreq_parse(const uint8_t *p, size_t len, struct rdmap_rreq *r,
		     struct iw_err *err);
ssize_t rdmap_rreq_build(uint8_t *buf, size_t cap, const struct rdmap_rreq *r);

/* RFC 7306 Atomic Operation codes (low nibble of the first word) */
enum {
	RDMAP_ATOMIC_FETCH_ADD = 0,
	RDMAP_ATOMIC_CMP_SWAP = 2,
};

struct rdmap_areq {
	uint8_t op;		/* RDMAP_ATOMIC_* */
	uint32_t req_id;
	uint32_t stag;		/* the responder's 8-octet target */
	uint64_t to;
	uint64_t add_swap;	/* Add Data or Swap Data */
	uint64_t add_swap_mask;	/* Add Mask or Swap Mask */
	uint64_t compare;	/* CmpSwap only; zero for FetchAdd */
	uint64_t compare_mask;
};

struct rdmap_aresp {
	uint32_t req_id;	/* of the request answered */
	uint64_t orig;		/* the target's value before the operation */
};

/* `len` is the whole payload after the untagged DDP header: a wrong
 * length or an unknown operation is RDMAP/2/6. Reserved bits are
 * ignored. */
int rdmap_areq_parse(const uint8_t *p, size_t len, struct rdmap_areq *a,
		     struct iw_err *err);
ssize_t rdmap_areq_build(uint8_t *buf, size_t cap, const struct rdmap_areq *a);
int rdmap_aresp_parse(const uint8_t *p, size_t len, struct rdmap_aresp *r,
		      struct iw_err *err);
ssize_t rdmap_aresp_build(uint8_t *buf, size_t cap,
			  const struct rdmap_aresp *r);

/* RFC 7306 Immediate Data (with or without SE): an untagged message on
 * queue 0 whose whole payload is 8 octets of ULP data. A wrong length
 * is RDMAP/2/6. */
int rdmap_imm_parse(const uint8_t *p, size_t len, uint64_t *data,
		    struct iw_err *err);
ssize_t rdmap_imm_build(uint8_t *buf, size_t cap, uint64_t data);

#define RDMAP_TERM_M 0x4
#define RDMAP_TERM_D 0x2
#define RDMAP_TERM_R 0x1

struct rdmap_term {
	uint8_t layer;
	uint8_t etype;
	uint8_t ecode;
	uint8_t hdrct;		/* RDMAP_TERM_M/D/R */
	uint16_t seg_len;	/* valid when M */
	uint8_t ddp_hdr_len;	/* 0, 14 or 18 */
	uint8_t ddp_hdr[DDP_UNTAGGED_HDR];
	bool has_rreq;
	uint8_t rreq[RDMAP_RREQ_LEN];
	bool siw_layout;	/* parsed from siw's swapped layout */
};

/* Parses the Terminate payload (after the untagged DDP header). Lenient:
 * reserved bits and trailing octets are ignored; copies that do not fit
 * are an error. Linux siw's layout on x86 (C bitfields: etype << 4 |
 * layer, M/D/R in the low bits of octet 2) is read as such when its
 * flag bits show it, or when only the swapped triple is defined. */
int rdmap_term_parse(const uint8_t *p, size_t len, struct rdmap_term *t,
		     struct iw_err *err);
ssize_t rdmap_term_build(uint8_t *buf, size_t cap, const struct rdmap_term *t);

#endif /* IWARP_WIRE_H */
