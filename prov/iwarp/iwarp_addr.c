/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Socket address helpers shared by the endpoint types, the AV, the
 * interface list and fi_getinfo.
 */
#include "iwarp.h"
#include "iwarp/engine.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

bool iwarp_addr_equal(const union iwarp_sockaddr *a,
		      const union iwarp_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->sin.sin_port == b->sin.sin_port &&
		       a->sin.sin_addr.s_addr == b->sin.sin_addr.s_addr;
	return a->sin6.sin6_port == b->sin6.sin6_port &&
	       !memcmp(&a->sin6.sin6_addr, &b->sin6.sin6_addr,
		       sizeof(a->sin6.sin6_addr));
}

bool iwarp_addr_same_ip(const union iwarp_sockaddr *a,
			const union iwarp_sockaddr *b)
{
	return iw_sa_same_ip(&a->sa, &b->sa);
}

const char *iwarp_addr_str(const union iwarp_sockaddr *a, char *buf,
			   size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (a->sa.sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &a->sin6.sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(a->sin6.sin6_port));
	} else {
		inet_ntop(AF_INET, &a->sin.sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(a->sin.sin_port));
	}
	return buf;
}

const uint8_t *iwarp_addr_octets(const struct sockaddr *sa, size_t *len)
{
	const union iwarp_sockaddr *u = (const void *)sa;

	if (sa->sa_family == AF_INET6) {
		*len = sizeof(u->sin6.sin6_addr);
		return u->sin6.sin6_addr.s6_addr;
	}
	*len = sizeof(u->sin.sin_addr);
	return (const uint8_t *)&u->sin.sin_addr;
}

bool iwarp_addr_is_any(const struct sockaddr *sa)
{
	const uint8_t *p;
	size_t len, i;

	p = iwarp_addr_octets(sa, &len);
	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

bool iwarp_addr_is_loopback(const struct sockaddr *sa)
{
	const union iwarp_sockaddr *a = (const void *)sa;

	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&a->sin6.sin6_addr);
	return (ntohl(a->sin.sin_addr.s_addr) >> 24) == IN_LOOPBACKNET;
}

uint16_t iwarp_addr_port(const struct sockaddr *sa)
{
	const union iwarp_sockaddr *u = (const void *)sa;

	return sa->sa_family == AF_INET6 ? u->sin6.sin6_port :
					   u->sin.sin_port;
}

void iwarp_addr_set_port(union iwarp_sockaddr *a, uint16_t port_be)
{
	if (a->sa.sa_family == AF_INET6)
		a->sin6.sin6_port = port_be;
	else
		a->sin.sin_port = port_be;
}

bool iwarp_addr_valid(const void *addr, size_t len)
{
	const struct sockaddr *sa = addr;

	if (!addr || len < sizeof(sa->sa_family))
		return false;
	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		return false;
	return len >= iwarp_sa_len(sa);
}

int iwarp_addr_copy_out(const union iwarp_sockaddr *a, void *addr,
			size_t *addrlen)
{
	size_t need = iwarp_sa_len(&a->sa);

	if (!addr || *addrlen < need) {
		*addrlen = need;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, a, need);
	*addrlen = need;
	return 0;
}
