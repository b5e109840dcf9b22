/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The provider's ext block at the head of a MSG connection's MPA private
 * data (msg.h), shared by connection management and the passive
 * endpoint.
 */
#include "msg.h"

#include <string.h>

static const uint8_t iwarp_ext_magic[4] = { 'I', 'W', 'X', 'F' };

void iwarp_ext_put(uint8_t *p, uint8_t flags)
{
	memcpy(p, iwarp_ext_magic, sizeof(iwarp_ext_magic));
	p[4] = IWARP_EXT_VERSION;
	p[5] = flags;
	p[6] = p[7] = 0;
}

/* Later versions keep the layout: unknown flag bits are not ours. */
uint8_t iwarp_ext_get(const uint8_t **pd, uint16_t *len)
{
	const uint8_t *p = *pd;

	if (*len < IWARP_EXT_PD_LEN ||
	    memcmp(p, iwarp_ext_magic, sizeof(iwarp_ext_magic)) || !p[4])
		return 0;
	*pd += IWARP_EXT_PD_LEN;
	*len -= IWARP_EXT_PD_LEN;
	return p[5] & (IWARP_EXT_IMM | IWARP_EXT_TAG);
}
