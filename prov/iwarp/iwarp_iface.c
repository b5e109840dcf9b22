/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Interface enumeration for fi_getinfo, fi_fabric and fi_domain: each
 * call lists afresh, so interfaces that come and go are seen at once,
 * nearest to the calling thread's CPUs first (iwarp_topo.c).
 */
#include "iwarp.h"
#include "iwarp_nic.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes "network/prefix" of addr under mask (NULL: host route). */
static int iwarp_subnet_name(const struct sockaddr *addr,
			     const struct sockaddr *mask, char *buf,
			     size_t size)
{
	uint8_t net[sizeof(struct in6_addr)];
	const uint8_t *a, *m = NULL;
	unsigned int prefix = 0;
	size_t len, mlen, i, used;

	a = iwarp_addr_octets(addr, &len);
	if (mask && mask->sa_family == addr->sa_family)
		m = iwarp_addr_octets(mask, &mlen);
	for (i = 0; i < len; i++) {
		uint8_t mb = m ? m[i] : 0xff;

		net[i] = a[i] & mb;
		prefix += __builtin_popcount(mb);
	}
	if (!inet_ntop(addr->sa_family, net, buf, size))
		return -errno;
	used = strlen(buf);
	if ((size_t)snprintf(buf + used, size - used, "/%u", prefix) >=
	    size - used)
		return -FI_ETOOSMALL;
	return 0;
}

/* Interface name without an IPv4 label suffix ("eth0:1" -> "eth0"). */
static bool iwarp_ifname(const char *label, char *name)
{
	size_t len = strcspn(label, ":");

	if (!len || len >= IF_NAMESIZE)
		return false;
	memcpy(name, label, len);
	name[len] = '\0';
	return true;
}

static bool iwarp_ifa_usable(const struct ifaddrs *ifa)
{
	const struct sockaddr *sa = ifa->ifa_addr;

	if (!sa || !(ifa->ifa_flags & IFF_UP))
		return false;
	return sa->sa_family == AF_INET || sa->sa_family == AF_INET6;
}

/* Returns true if ifa became *ifc (and passes FI_IWARP_IFACE). */
static bool iwarp_iface_fill(struct iwarp_iface *ifc,
			     const struct ifaddrs *ifa)
{
	const struct sockaddr *sa = ifa->ifa_addr;

	memset(ifc, 0, sizeof(*ifc));
	if (!iwarp_ifa_usable(ifa) || !iwarp_ifname(ifa->ifa_name, ifc->name))
		return false;
	if (iwarp_params.iface && strcmp(ifc->name, iwarp_params.iface))
		return false;
	if (iwarp_subnet_name(sa, ifa->ifa_netmask, ifc->fabric,
			      sizeof(ifc->fabric)))
		return false;
	memcpy(&ifc->addr, sa, iwarp_sa_len(sa));
	iwarp_addr_set_port(&ifc->addr, 0);
	ifc->loopback = !!(ifa->ifa_flags & IFF_LOOPBACK);
	return true;
}

/* Appends the usable addresses with loopback == lo; returns the count. */
static size_t iwarp_iface_pass(const struct ifaddrs *list, bool lo,
			       struct iwarp_iface *ifs, size_t n)
{
	const struct ifaddrs *ifa;

	for (ifa = list; ifa; ifa = ifa->ifa_next) {
		if (!iwarp_iface_fill(&ifs[n], ifa))
			continue;
		if (ifs[n].loopback == lo)
			n++;
	}
	return n;
}

int iwarp_iface_list(struct iwarp_iface **ifs, size_t *count)
{
	struct ifaddrs *list, *ifa;
	size_t max = 1;

	if (getifaddrs(&list)) {
		FI_WARN(&iwarp_prov, FI_LOG_CORE, "getifaddrs: %s\n",
			strerror(errno));
		return -errno;
	}
	for (ifa = list; ifa; ifa = ifa->ifa_next)
		max += iwarp_ifa_usable(ifa);
	*ifs = calloc(max, sizeof(**ifs));
	if (!*ifs) {
		freeifaddrs(list);
		return -FI_ENOMEM;
	}
	*count = iwarp_iface_pass(list, false, *ifs, 0);
	iwarp_topo_sort(*ifs, *count);
	*count = iwarp_iface_pass(list, true, *ifs, *count);
	freeifaddrs(list);
	if (!*count && iwarp_params.iface)
		FI_WARN(&iwarp_prov, FI_LOG_CORE,
			"FI_IWARP_IFACE=%s: no such interface with an address "
			"that is up\n", iwarp_params.iface);
	return 0;
}

const struct iwarp_iface *iwarp_iface_find(const struct iwarp_iface *ifs,
					   size_t count, const char *fabric,
					   const char *domain)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (fabric && strcmp(fabric, ifs[i].fabric))
			continue;
		if (domain && strcmp(domain, ifs[i].name))
			continue;
		return &ifs[i];
	}
	return NULL;
}

/* True if the first `bits` bits of a and b agree. */
static bool iwarp_prefix_equal(const uint8_t *a, const uint8_t *b,
			       unsigned long bits)
{
	size_t whole = bits / 8;
	unsigned int rest = bits % 8;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));

	if (memcmp(a, b, whole))
		return false;
	return !rest || !((a[whole] ^ b[whole]) & mask);
}

/* The fabric name ("net/len") gives the subnet. */
bool iwarp_iface_has(const struct iwarp_iface *ifc,
		     const struct sockaddr *addr)
{
	const char *slash = strrchr(ifc->fabric, '/');
	const uint8_t *a, *mine;
	unsigned long prefix;
	size_t len;

	if (!slash || addr->sa_family != ifc->addr.sa.sa_family)
		return false;
	prefix = strtoul(slash + 1, NULL, 10);
	a = iwarp_addr_octets(addr, &len);
	mine = iwarp_addr_octets(&ifc->addr.sa, &len);
	return prefix <= len * 8 && iwarp_prefix_equal(a, mine, prefix);
}


int iwarp_iface_lookup(const char *fabric, const char *domain,
		       struct iwarp_iface *out)
{
	const struct iwarp_iface *found;
	struct iwarp_iface *ifs;
	size_t count;
	int ret;

	ret = iwarp_iface_list(&ifs, &count);
	if (ret)
		return ret;
	found = iwarp_iface_find(ifs, count, fabric, domain);
	if (found && out)
		*out = *found;
	free(ifs);
	return found ? 0 : -FI_ENODATA;
}

unsigned int iwarp_iface_index(const struct iwarp_iface *ifc)
{
	return if_nametoindex(ifc->name);
}
