/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_getinfo attributes, shared by iwarp_info.c (interfaces and
 * addresses) and iwarp_attr.c (what an endpoint offers, checked against
 * the hints and narrowed to them).
 */
#ifndef IWARP_ATTR_H
#define IWARP_ATTR_H

#include "iwarp.h"

/* Logs why hints were rejected; used as `return iwarp_reject("...")`. */
#define iwarp_reject(...) \
	({ FI_INFO(&iwarp_prov, FI_LOG_CORE, __VA_ARGS__); false; })

/*
 * Builds the attributes every entry shares (caps, mode, ep/tx/rx/domain
 * attributes, mr_mode) for API `version` and `hints` (may be NULL), with
 * no names and no addresses. Returns 0 and a template to fi_dupinfo()
 * per interface, -FI_ENODATA if no entry can satisfy the hints, or
 * -FI_ENOMEM.
 */
int iwarp_attr_info(uint32_t version, const struct fi_info *hints,
		    enum fi_ep_type type, struct fi_info **tmpl);

#endif /* IWARP_ATTR_H */
