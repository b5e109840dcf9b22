/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Provider entry point: fi_prov_ini fills in the struct fi_provider
 * (iwarp_log.c) that libfabric's core registers after dlopen()ing
 * libiwarp-fi.so.
 */
#include "iwarp.h"
#include "iwarp_auth.h"
#include "iwarp_nic.h"

#include <stdio.h>

#include "iwarp/engine.h"

static void iwarp_cleanup(void)
{
	iwarp_topo_fini();
	iwarp_params_fini();
	iwarp_auth_fini();
	/* libfabric unloads us: what only our globals pointed to goes too */
	iw_mem_spares_free();
}

/* "major.minor[.patch]" of the package becomes the provider version. */
static uint32_t iwarp_prov_version(void)
{
	unsigned int major, minor;

	if (sscanf(PACKAGE_VERSION, "%u.%u", &major, &minor) != 2)
		return FI_VERSION(0, 1);
	return FI_VERSION(major, minor);
}

/*
 * Called once by the core right after dlopen(). Returning NULL makes the
 * core skip the provider, which is what we want if parameters cannot be
 * set up.
 */
FI_EXT_INI
{
	iwarp_prov.version = iwarp_prov_version();
	iwarp_prov.getinfo = iwarp_getinfo;
	iwarp_prov.fabric = iwarp_fabric_open;
	iwarp_prov.cleanup = iwarp_cleanup;
	if (iwarp_params_init())
		return NULL;
	FI_INFO(&iwarp_prov, FI_LOG_CORE, "iwarp provider %s loaded\n",
		PACKAGE_VERSION);
	return &iwarp_prov;
}
