/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer: Terminate, Read Request and atomic payload parsers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdmap_term t;
	struct rdmap_rreq r;
	struct rdmap_areq a;
	struct rdmap_aresp ar;
	struct iw_err err;
	uint8_t *copy = malloc(size ? size : 1), out[RDMAP_TERM_MAX];
	ssize_t n;

	memcpy(copy, data, size);
	if (rdmap_term_parse(copy, size, &t, &err) == 0) {
		/* rebuilt in RFC 5040 layout: what siw's layout says, moved
		 * to where the RFC puts it (nibbles swapped, M/D/R up) */
		uint8_t c0 = copy[0], c2 = copy[2] & 0xe0;

		if (t.siw_layout) {
			c0 = (uint8_t)(copy[0] << 4 | copy[0] >> 4);
			c2 = (uint8_t)((copy[2] & 1) << 7 | (copy[2] & 2) << 5 |
				       (copy[2] & 4) << 3);
		}
		n = rdmap_term_build(out, sizeof(out), &t);
		if (n < RDMAP_TERM_CTRL_LEN || (size_t)n > size ||
		    memcmp(out + 4, copy + 4, (size_t)n - 4) ||
		    out[0] != c0 || out[1] != copy[1] ||
		    (out[2] & 0xe0) != c2)
			abort();
	} else if (err.layer != IW_LAYER_RDMAP) {
		abort();
	}
	if (rdmap_rreq_parse(copy, size, &r, &err) == 0 &&
	    (rdmap_rreq_build(out, sizeof(out), &r) != RDMAP_RREQ_LEN ||
	     memcmp(out, copy, RDMAP_RREQ_LEN)))
		abort();
	/* reserved bits are not echoed: only the opcode nibble of word 0 */
	if (rdmap_areq_parse(copy, size, &a, &err) == 0 &&
	    (rdmap_areq_build(out, sizeof(out), &a) != RDMAP_AREQ_LEN ||
	     out[0] || out[1] || out[2] || out[3] != (copy[3] & 0x0f) ||
	     memcmp(out + 4, copy + 4, RDMAP_AREQ_LEN - 4)))
		abort();
	if (rdmap_aresp_parse(copy, size, &ar, &err) == 0 &&
	    (rdmap_aresp_build(out, sizeof(out), &ar) != RDMAP_ARESP_LEN ||
	     memcmp(out, copy, RDMAP_ARESP_LEN)))
		abort();
	free(copy);
	return 0;
}
