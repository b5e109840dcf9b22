/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive side of MPA full operation: turns a TCP byte stream into DDP
 * segments. It strips and checks markers, checks CRCs, validates the
 * DDP/RDMAP headers and asks the layer above where each segment's payload
 * goes, so payload is received straight into its final place.
 *
 * Two ways to drive it:
 *	iw_rx_want(rx, &buf, &len);	recv(fd, buf, len) -> n;
 *	iw_rx_advance(rx, n);
 * or iw_rx_feed(rx, bytes, len), which copies.
 *
 * Errors: the first one wins; afterwards want() offers 0 octets and every
 * call returns -EPROTO with rx->err holding the RFC triple.
 */
#ifndef IWARP_RX_H
#define IWARP_RX_H

#include "iwarp/wire.h"

struct iw_rx_seg {
	struct ddp_hdr hdr;
	uint16_t ulpdu_len;
	uint32_t payload_len;	/* ULPDU minus DDP and RDMAP headers */
	struct rdmap_rreq rreq;	/* RDMAP_READ_REQ */
	struct rdmap_term term;	/* RDMAP_TERMINATE */
	struct rdmap_areq areq;	/* RDMAP_ATOMIC_REQ */
	struct rdmap_aresp aresp;	/* RDMAP_ATOMIC_RESP */
	uint64_t imm;		/* RDMAP_IMM, RDMAP_IMM_SE */
	const uint8_t *raw;	/* DDP header onwards, as received */
	size_t raw_len;
};

/* Where payload octets go next; buf NULL with len 0 discards the rest. */
struct iw_rx_dst {
	uint8_t *buf;
	size_t len;
};

struct iw_rx_ops {
	/*
	 * A segment's headers are valid. Set *dst to room for its payload
	 * (it may be smaller than seg->payload_len: seg_more is then asked
	 * for the next piece) and return 0, or return -EPROTO with *err set.
	 * Payload is placed before the CRC is checked; seg_done tells when
	 * the FPDU proved good. Returning -EAGAIN stalls the stream before
	 * the payload (no destination yet): iw_rx_resume() asks again.
	 */
	int (*seg_start)(void *arg, const struct iw_rx_seg *seg,
			 struct iw_rx_dst *dst, struct iw_err *err);
	/* The previous piece is full after `off` payload octets. */
	int (*seg_more)(void *arg, const struct iw_rx_seg *seg, uint32_t off,
			struct iw_rx_dst *dst, struct iw_err *err);
	/* The FPDU is complete and its CRC (if used) matched. */
	int (*seg_done)(void *arg, const struct iw_rx_seg *seg,
			struct iw_err *err);
};

enum iw_rx_state {
	IW_RX_HDR,
	IW_RX_PAYLOAD,
	IW_RX_TRAILER,
	IW_RX_STALLED,		/* seg_start had no destination yet */
	IW_RX_ERROR,
};

#define IW_RX_HDR_MAX (MPA_FPDU_HDR + RDMAP_TERM_MAX + DDP_UNTAGGED_HDR)

struct iw_rx {
	enum iw_rx_state state;
	bool crc;
	bool markers;
	uint64_t pos;		/* stream octets since the marker origin */
	uint64_t fpdu_start;
	bool in_fpdu;
	uint32_t crc_acc;
	uint8_t hdr[IW_RX_HDR_MAX];
	size_t hdr_have;
	size_t hdr_need;
	uint8_t marker[MPA_MARKER_LEN];
	uint8_t trailer[3 + MPA_CRC_LEN];
	size_t trailer_have;
	size_t trailer_need;
	struct iw_rx_dst dst;
	bool discard;
	size_t payload_left;
	struct iw_rx_seg seg;
	const struct iw_rx_ops *ops;
	void *arg;
	struct iw_err err;
	uint64_t segs;		/* FPDUs completed */
	uint8_t scratch[512];
};

/* Starts at the first octet of full operation (the marker origin). */
void iw_rx_init(struct iw_rx *rx, bool crc, bool markers,
		const struct iw_rx_ops *ops, void *arg);
void iw_rx_want(struct iw_rx *rx, uint8_t **buf, size_t *len);
int iw_rx_advance(struct iw_rx *rx, size_t n);
int iw_rx_feed(struct iw_rx *rx, const uint8_t *p, size_t len);
size_t iw_rx_whole_len(const struct iw_rx *rx, const uint8_t *p,
		       size_t avail);
int iw_rx_whole(struct iw_rx *rx, const uint8_t *p, size_t fpdu,
		size_t *used);
/* Retries a stalled segment's seg_start: 0 (moving again or still
 * stalled, see rx->state) or -EPROTO. */
int iw_rx_resume(struct iw_rx *rx);
/* True between FPDUs: a stream may end here cleanly. */
bool iw_rx_at_boundary(const struct iw_rx *rx);
const char *iw_rx_state_str(enum iw_rx_state s);

#endif /* IWARP_RX_H */
