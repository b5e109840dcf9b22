/* SPDX-License-Identifier: BSD-2-Clause */
/* Names of the RFC error triples, for logs and fi_cq_strerror. */
#include <errno.h>
#include <stdio.h>

#include "iwarp/wire.h"

int iw_fail(struct iw_err *err, uint8_t layer, uint8_t etype, uint8_t ecode,
	    const char *why)
{
	if (err) {
		err->layer = layer;
		err->etype = etype;
		err->ecode = ecode;
		err->why = why;
		err->vals = false;
	}
	return -EPROTO;
}

int iw_fail_v(struct iw_err *err, uint8_t layer, uint8_t etype,
	      uint8_t ecode, const char *why, uint64_t got, uint64_t want)
{
	iw_fail(err, layer, etype, ecode, why);
	if (err) {
		err->vals = true;
		err->got = got;
		err->want = want;
	}
	return -EPROTO;
}

const char *iw_err_why(const struct iw_err *err, char *buf, size_t size)
{
	const char *why = err->why ? err->why : "-";

	if (err->vals)
		snprintf(buf, size, "%s: got %llu, expected %llu", why,
			 (unsigned long long)err->got,
			 (unsigned long long)err->want);
	else
		snprintf(buf, size, "%s", why);
	return buf;
}

struct iw_err_name {
	uint8_t layer, etype;
	int ecode;		/* -1: any code */
	const char *name;
};

/* RFC 5040 figure 9, RFC 5041 §7.2, RFC 5044 §8, RFC 6581 §8 */
static const struct iw_err_name iw_err_names[] = {
	{ 0, 0, -1, "RDMAP local catastrophic error" },
	{ 0, 1, 0x00, "RDMAP remote protection: invalid STag" },
	{ 0, 1, 0x01, "RDMAP remote protection: base or bounds violation" },
	{ 0, 1, 0x02, "RDMAP remote protection: access rights violation" },
	{ 0, 1, 0x03, "RDMAP remote protection: STag not associated with RDMAP stream" },
	{ 0, 1, 0x04, "RDMAP remote protection: TO wrap" },
	{ 0, 1, 0x09, "RDMAP remote protection: STag cannot be invalidated" },
	{ 0, 1, 0xff, "RDMAP remote protection: unspecified error" },
	{ 0, 2, 0x05, "RDMAP remote operation: invalid RDMAP version" },
	{ 0, 2, 0x06, "RDMAP remote operation: unexpected opcode" },
	{ 0, 2, 0x07, "RDMAP remote operation: catastrophic error, localized to RDMAP stream" },
	{ 0, 2, 0x08, "RDMAP remote operation: catastrophic error, global" },
	{ 0, 2, 0x09, "RDMAP remote operation: STag cannot be invalidated" },
	{ 0, 2, 0xff, "RDMAP remote operation: unspecified error" },
	{ 1, 0, -1, "DDP local catastrophic error" },
	{ 1, 1, 0, "DDP tagged buffer: invalid STag" },
	{ 1, 1, 1, "DDP tagged buffer: base or bounds violation" },
	{ 1, 1, 2, "DDP tagged buffer: STag not associated with DDP stream" },
	{ 1, 1, 3, "DDP tagged buffer: TO wrap" },
	{ 1, 1, 4, "DDP tagged buffer: invalid DDP version" },
	{ 1, 2, 1, "DDP untagged buffer: invalid QN" },
	{ 1, 2, 2, "DDP untagged buffer: invalid MSN (no buffer available)" },
	{ 1, 2, 3, "DDP untagged buffer: invalid MSN (MSN range is not valid)" },
	{ 1, 2, 4, "DDP untagged buffer: invalid MO" },
	{ 1, 2, 5, "DDP untagged buffer: message too long for available buffer" },
	{ 1, 2, 6, "DDP untagged buffer: invalid DDP version" },
	{ 2, 0, 1, "MPA: TCP connection closed, terminated or lost" },
	{ 2, 0, 2, "MPA: received MPA CRC does not match" },
	{ 2, 0, 3, "MPA: received marker does not point to FPDU start" },
	{ 2, 0, 4, "MPA: invalid MPA request/reply frame" },
	{ 2, 0, 5, "MPA: local catastrophic error" },
	{ 2, 0, 6, "MPA: insufficient IRD resources" },
	{ 2, 0, 7, "MPA: no matching RTR model" },
};

static const char iw_err_unknown[] = "unknown iWARP error";

bool iw_err_known(uint8_t layer, uint8_t etype, uint8_t ecode)
{
	return iw_err_str(layer, etype, ecode) != iw_err_unknown;
}

const char *iw_err_str(uint8_t layer, uint8_t etype, uint8_t ecode)
{
	size_t i;

	for (i = 0; i < sizeof(iw_err_names) / sizeof(iw_err_names[0]); i++) {
		const struct iw_err_name *n = &iw_err_names[i];

		if (n->layer == layer && n->etype == etype &&
		    (n->ecode < 0 || n->ecode == ecode))
			return n->name;
	}
	return iw_err_unknown;
}
