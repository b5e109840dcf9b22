/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Runtime parameters. All of them are defined in iwarp_params_define() so
 * that `fi_info -e` lists every FI_IWARP_* variable with its default;
 * their values are read once when the provider is loaded.
 */
#include "iwarp.h"
#include "iwarp/engine.h"

#include <stdlib.h>
#include <string.h>

struct iwarp_params iwarp_params = {
	.iface = NULL,
	.allow_rxm = 0,
	.rdm_unexp_max = IWARP_RDM_UNEXP_MAX_DEFAULT,
	.rfc7306 = 1,
};

static void iwarp_params_define(void)
{
	fi_param_define(&iwarp_prov, "iface", FI_PARAM_STRING,
			"Network interface to use, e.g. eth0 or lo "
			"(default: every interface that is up and has an "
			"IPv4 or IPv6 address)");
	fi_param_define(&iwarp_prov, "allow_rxm", FI_PARAM_BOOL,
			"Let the ofi_rxm utility provider layer over iwarp, "
			"e.g. for comparison runs; otherwise iwarp;ofi_rxm "
			"would be listed before the native RDM endpoint "
			"(default: false)");
	fi_param_define(&iwarp_prov, "rdm_unexp_max", FI_PARAM_SIZE_T,
			"Octets of unexpected RDM messages an endpoint stores "
			"before it stops returning credits for more; they "
			"come back as the stored messages are received "
			"(default: 268435456)");
	fi_param_define(&iwarp_prov, "crc", FI_PARAM_BOOL,
			"Ask every peer for the MPA CRC32c (RFC 5044); "
			"otherwise it is used only when the peer asks "
			"(default: false)");
	fi_param_define(&iwarp_prov, "rfc7306", FI_PARAM_BOOL,
			"Carry 64-bit fetch-add and compare-swap style RDM "
			"atomics as RFC 7306 Atomic Requests with peers that "
			"offer them too; otherwise the peer's provider runs "
			"every atomic from an RDM message (default: true)");
}

/* Returns 0, or -FI_ENOMEM. */
static int iwarp_params_read(void)
{
	char *iface = NULL;
	int allow;

	if (!fi_param_get_str(&iwarp_prov, "iface", &iface) && iface &&
	    *iface) {
		iwarp_params.iface = strdup(iface);
		if (!iwarp_params.iface)
			return -FI_ENOMEM;
	}
	if (!fi_param_get_bool(&iwarp_prov, "allow_rxm", &allow))
		iwarp_params.allow_rxm = allow;
	fi_param_get_size_t(&iwarp_prov, "rdm_unexp_max",
			    &iwarp_params.rdm_unexp_max);
	if (!fi_param_get_bool(&iwarp_prov, "crc", &allow))
		iwarp_params.crc = allow;
	if (!fi_param_get_bool(&iwarp_prov, "rfc7306", &allow))
		iwarp_params.rfc7306 = allow;
	return 0;
}

int iwarp_params_init(void)
{
	int ret;

	iwarp_params_define();
	ret = iwarp_params_read();
	if (ret) {
		FI_WARN(&iwarp_prov, FI_LOG_CORE,
			"cannot read parameters: %s\n", fi_strerror(-ret));
		return ret;
	}
	if (iwarp_params.iface)
		FI_INFO(&iwarp_prov, FI_LOG_CORE,
			"restricted to interface %s\n", iwarp_params.iface);
	return 0;
}

void iwarp_params_fini(void)
{
	free(iwarp_params.iface);
	iwarp_params.iface = NULL;
	iwarp_params.allow_rxm = 0;
	iwarp_params.rdm_unexp_max = IWARP_RDM_UNEXP_MAX_DEFAULT;
	iwarp_params.crc = 0;
	iwarp_params.rfc7306 = 1;
}

void iwarp_log_established(const char *what, const struct iw_cm_event *ev)
{
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
		"%s connected: MPA rev %u%s, CRC %s, markers rx %s tx %s, "
		"MULPDU %u, IRD %u ORD %u, RTR %#x\n", what, ev->rev,
		ev->enhanced ? " enhanced" : "", ev->crc ? "on" : "off",
		ev->markers_rx ? "on" : "off", ev->markers_tx ? "on" : "off",
		ev->mulpdu, ev->ird, ev->ord, ev->rtr_used);
}
