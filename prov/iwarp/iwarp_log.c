/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The provider object every FI_WARN/FI_INFO/FI_DBG line names. It holds
 * no entry points (fi_prov_ini sets them), so the files that log do not
 * depend on the ones that open fabrics.
 */
#include "iwarp.h"

struct fi_provider iwarp_prov = {
	.name = IWARP_PROV_NAME,
	.version = FI_VERSION(0, 1),	/* set from PACKAGE_VERSION at init */
	.fi_version = IWARP_FI_VERSION,
};
