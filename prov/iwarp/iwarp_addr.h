/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Socket addresses: the names of endpoints and peers (sockaddr_in or
 * sockaddr_in6). One place compares, formats and copies them, so that
 * every log line and every lookup means the same thing by "this peer".
 */
#ifndef IWARP_ADDR_H
#define IWARP_ADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

union iwarp_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
};

static inline socklen_t iwarp_sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

/* "255.255.255.255:65535" or "[v6]:65535", NUL included. */
#define IWARP_ADDR_STRLEN (INET6_ADDRSTRLEN + 8)

/* Same family, port and address (the scope is not compared). */
bool iwarp_addr_equal(const union iwarp_sockaddr *a,
		      const union iwarp_sockaddr *b);
/* Same IP, whatever the port; IPv4 also as ::ffff:a.b.c.d. */
bool iwarp_addr_same_ip(const union iwarp_sockaddr *a,
			const union iwarp_sockaddr *b);
/* "ip:port" or "[ip6]:port" into buf; returns buf (for log lines). */
const char *iwarp_addr_str(const union iwarp_sockaddr *a, char *buf,
			   size_t len);
/* Address octets and their count (4 or 16). */
const uint8_t *iwarp_addr_octets(const struct sockaddr *sa, size_t *len);
bool iwarp_addr_is_any(const struct sockaddr *sa);
bool iwarp_addr_is_loopback(const struct sockaddr *sa);
uint16_t iwarp_addr_port(const struct sockaddr *sa);	/* network order */
void iwarp_addr_set_port(union iwarp_sockaddr *a, uint16_t port_be);
/* An AF_INET/AF_INET6 name of at least its family's size. */
bool iwarp_addr_valid(const void *addr, size_t len);
/*
 * fi_getname's contract: copies a out if *addrlen holds it; *addrlen
 * becomes the size needed either way. 0 or -FI_ETOOSMALL.
 */
int iwarp_addr_copy_out(const union iwarp_sockaddr *a, void *addr,
			size_t *addrlen);

#endif /* IWARP_ADDR_H */
