/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The interface list: the one place that asks the kernel which
 * interfaces and addresses exist (getifaddrs, if_nametoindex). A fabric
 * is the IP subnet an address lives in, a domain is the interface.
 */
#ifndef IWARP_IFACE_H
#define IWARP_IFACE_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>

#include "iwarp_addr.h"

/* "ffff:...:ffff/128" plus NUL fits. */
#define IWARP_FABRIC_NAME_MAX	(INET6_ADDRSTRLEN + 8)

/* One usable interface address. */
struct iwarp_iface {
	char name[IF_NAMESIZE];
	char fabric[IWARP_FABRIC_NAME_MAX];
	union iwarp_sockaddr addr;	/* port 0 */
	bool loopback;
};

/*
 * Lists the usable interface addresses, those of NICs nearest to the
 * calling thread's CPU binding first, loopback last, honouring
 * FI_IWARP_IFACE. Returns 0 (with *count possibly 0) or a negative
 * error; the caller frees *ifs.
 */
int iwarp_iface_list(struct iwarp_iface **ifs, size_t *count);
/* First address matching fabric and domain name (NULL matches any). */
const struct iwarp_iface *iwarp_iface_find(const struct iwarp_iface *ifs,
					   size_t count, const char *fabric,
					   const char *domain);
/* List and find in one: 0 and *out, -FI_ENODATA, or a list error. */
int iwarp_iface_lookup(const char *fabric, const char *domain,
		       struct iwarp_iface *out);
/* The kernel's index of the interface (for IPv6 scopes); 0 if gone. */
unsigned int iwarp_iface_index(const struct iwarp_iface *ifc);
/* True if addr lies in the subnet of the interface's fabric name. */
bool iwarp_iface_has(const struct iwarp_iface *ifc,
		     const struct sockaddr *addr);

#endif /* IWARP_IFACE_H */
