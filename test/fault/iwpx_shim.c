/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwpx_shim.so: an LD_PRELOAD library that sends a process's TCP
 * connections to 127.0.0.0/8 through an iwproxy running with -D, so MPI
 * ranks (whose peer addresses come from Open MPI's modex, not from us)
 * talk through the impairment proxy without any change to the provider.
 *
 *   IWPX_PROXY=127.0.0.1:PORT   the proxy; unset: the shim does nothing
 *   IWPX_ONLY=NAME              redirect only connect() calls made from a
 *                               library whose path contains NAME
 *                               (default: libiwarp-fi)
 *
 * connect() to a loopback IPv4 address other than the proxy's becomes a
 * connect() to the proxy followed by the 10-octet header "IWPX" + port +
 * address of the real destination (iwproxy.c); the proxy connects there
 * and forwards. The socket is made blocking for those two steps (a
 * loopback connect and 10 octets), so a non-blocking caller sees an
 * immediate success, which connect(2) allows. Test-only.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

static int proxy_addr(struct sockaddr_in *px)
{
	const char *s = getenv("IWPX_PROXY"), *colon;
	char host[32];

	if (!s || !(colon = strrchr(s, ':')) ||
	    (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	memset(px, 0, sizeof(*px));
	px->sin_family = AF_INET;
	px->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, host, &px->sin_addr) == 1 ? 0 : -1;
}

static int send_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Only the provider's own connections: the caller must sit in a library
 * whose file name contains IWPX_ONLY (default "libiwarp-fi"), so that
 * e.g. Open MPI's out-of-band connections go direct. */
static bool from_provider(const void *caller)
{
	const char *only = getenv("IWPX_ONLY");
	Dl_info di;

	if (!only)
		only = "libiwarp-fi";
	return dladdr(caller, &di) && di.dli_fname &&
	       strstr(di.dli_fname, only);
}

__attribute__((visibility("default")))
int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	static connect_fn real;
	const struct sockaddr_in *dst = (const struct sockaddr_in *)sa;
	struct sockaddr_in px;
	uint8_t hdr[10];
	int type = 0, flags, ret, saved;
	socklen_t tl = sizeof(type);

	if (!real)
		real = (connect_fn)dlsym(RTLD_NEXT, "connect");
	if (!sa || sa->sa_family != AF_INET || len < sizeof(*dst) ||
	    (ntohl(dst->sin_addr.s_addr) >> 24) != 127 || proxy_addr(&px) ||
	    (dst->sin_port == px.sin_port &&
	     dst->sin_addr.s_addr == px.sin_addr.s_addr) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
	    type != SOCK_STREAM ||
	    !from_provider(__builtin_return_address(0)))
		return real(fd, sa, len);
	flags = fcntl(fd, F_GETFL);
	if (flags < 0)
		return -1;
	fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	ret = real(fd, (const struct sockaddr *)&px, sizeof(px));
	if (!ret) {
		memcpy(hdr, "IWPX", 4);
		memcpy(hdr + 4, &dst->sin_port, 2);
		memcpy(hdr + 6, &dst->sin_addr, 4);
		ret = send_all(fd, hdr, sizeof(hdr));
	}
	saved = errno;
	fcntl(fd, F_SETFL, flags);
	errno = saved;
	return ret;
}
