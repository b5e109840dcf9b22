/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer: the FI_EP_DGRAM header parser. Whatever it accepts must
 * be exactly header plus length octets with known flags, and must
 * rebuild to the same header octets; whatever it refuses must say why
 * with a reason the parser may give.
 */
#include <stdlib.h>
#include <string.h>

#include "dgram_wire.h"

static void check_accepted(const uint8_t *p, size_t size,
			   const struct iwarp_dgram_hdr *h, size_t hlen)
{
	uint8_t out[IWARP_DGRAM_HDR_MAX];

	if (h->flags & ~IWARP_DGRAM_F_ALL || size > IWARP_DGRAM_UDP_MAX)
		abort();
	if (hlen != iwarp_dgram_hdr_len(h->flags) || hlen > size ||
	    (size_t)h->len != size - hlen)
		abort();
	if (iwarp_dgram_hdr_put(out, h) != hlen || memcmp(out, p, hlen))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct iwarp_dgram_hdr h;
	enum iwarp_dgram_drop why;
	uint8_t *copy = malloc(size ? size : 1);
	size_t hlen = 0;

	memcpy(copy, data, size);
	why = iwarp_dgram_hdr_get(copy, size, &h, &hlen);
	if (why == IWARP_DGRAM_OK)
		check_accepted(copy, size, &h, hlen);
	else if (why >= IWARP_DGRAM_NO_MATCH ||
		 !strcmp(iwarp_dgram_drop_str(why), "?"))
		abort();
	free(copy);
	return 0;
}
