/* SPDX-License-Identifier: BSD-2-Clause */
/* libFuzzer: MPA Request/Reply parser; what parses must rebuild the same. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum mpa_kind kind;
	struct mpa_frame f;
	struct iw_err err;
	uint8_t *copy, out[MPA_HDR_LEN + MPA_MAX_PD];
	ssize_t n;
	int ret;

	if (size < 1)
		return 0;
	kind = data[0] & 1 ? MPA_REPLY : MPA_REQUEST;
	/* an exact-size heap copy lets ASan catch any over-read */
	copy = malloc(size - 1 ? size - 1 : 1);
	memcpy(copy, data + 1, size - 1);
	ret = mpa_frame_parse(copy, size - 1, kind, &f, &err);
	if (ret == -EPROTO && err.layer != IW_LAYER_LLP)
		abort();
	if (ret == 0) {
		if (f.ulp_pd_len + (f.enhanced ? MPA_ENH_LEN : 0) != f.pd_len ||
		    (size_t)(MPA_HDR_LEN + f.pd_len) > size - 1)
			abort();
		n = mpa_frame_build(out, sizeof(out), &f, f.ulp_pd,
				    f.ulp_pd_len);
		if (n != MPA_HDR_LEN + f.pd_len)
			abort();
		/* reserved bits are not echoed; everything else must be */
		if (memcmp(out, copy, 16) || out[17] != copy[17] ||
		    memcmp(out + 18, copy + 18, (size_t)n - 18) ||
		    (out[16] & 0xf0) != (copy[16] & (f.rev == 2 ? 0xf0 : 0xe0) &
					 (kind == MPA_REPLY ? 0xf0 : 0xd0)))
			abort();
	}
	free(copy);
	return 0;
}
