/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What RDM puts on the wire (rdm_wire.c): the 40-octet header every RDM
 * message starts with, and the 32-octet connection private data. Pure
 * codecs, shared by the protocol and the transports; rdm.h says what the
 * fields mean.
 */
#ifndef IWARP_RDM_WIRE_H
#define IWARP_RDM_WIRE_H

#include "../iwarp.h"

#define IWARP_RDM_HDR_LEN 40
#define IWARP_RDM_PD_LEN 32
#define IWARP_RDM_MAGIC 0x49575244u	/* "IWRD" */
#define IWARP_RDM_VERSION 1
#define IWARP_RDM_COLLISION 0x80
#define IWARP_RDM_RFC7306 0x40		/* executes RFC 7306 atomics */
#define IWARP_RDM_KEYREF 0x20		/* Reject: refused for the job key */
#define IWARP_RDM_SHM 0x10		/* offers shared memory on one host */
#define IWARP_RDM_WIDE 0x08		/* takes the wide eager window */
#define IWARP_RDM_CREDITS 64		/* eager window per peer */
/* ... when both sides take it: 64 messages in flight each way throttled
 * osu_bibw's window of 64 to 0.89x of ob1 at 16-32 KiB */
#define IWARP_RDM_CREDITS_WIDE 128

enum iwarp_rdm_op {
	IWARP_RDM_EAGER = 1,
	IWARP_RDM_RTS = 2,
	IWARP_RDM_FIN = 3,
	IWARP_RDM_CREDIT = 4,
	IWARP_RDM_WDATA = 5,
	IWARP_RDM_AREQ = 6,
	IWARP_RDM_ARESP = 7,
	IWARP_RDM_OP_MAX = IWARP_RDM_ARESP,
};

enum {
	IWARP_RDM_F_TAGGED = 1 << 0,
	IWARP_RDM_F_DATA = 1 << 1,	/* remote CQ data present */
	IWARP_RDM_F_ERROR = 1 << 2,	/* FIN, ARESP: the receiver failed */
};
/* EAGER, RTS: the receiver's rx context (fi_rx_addr) in flags bits 3-7,
 * 0 for an endpoint that is not scalable */
#define IWARP_RDM_RXC_SHIFT	3
#define IWARP_RDM_RXC_MAX	32
#define IWARP_RDM_RXC(flags)	((unsigned int)(flags) >> IWARP_RDM_RXC_SHIFT)

struct iwarp_rdm_hdr {
	uint8_t op;
	uint8_t flags;
	uint16_t credits;
	uint32_t len;
	uint32_t msg_id;
	uint32_t stag;
	uint64_t tag;
	uint64_t data;
	uint64_t addr;
};

void iwarp_rdm_hdr_put(uint8_t *p, const struct iwarp_rdm_hdr *h);
/* 0, or -FI_EINVAL for an unknown op or impossible fields */
int iwarp_rdm_hdr_get(const uint8_t *p, size_t len, struct iwarp_rdm_hdr *h);

struct iwarp_rdm_pdata {
	uint8_t version;		/* IWARP_RDM_VERSION, | COLLISION */
	union iwarp_sockaddr addr;	/* the sender's listening address */
	uint64_t instance;
};

void iwarp_rdm_pd_put(uint8_t *p, const struct iwarp_rdm_pdata *d);
int iwarp_rdm_pd_get(const uint8_t *p, size_t len, struct iwarp_rdm_pdata *d);
/* Total order on (address, port, instance): who keeps a collision. */
int iwarp_rdm_pd_cmp(const struct iwarp_rdm_pdata *a,
		     const struct iwarp_rdm_pdata *b);

#endif /* IWARP_RDM_WIRE_H */
