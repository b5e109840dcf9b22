/* SPDX-License-Identifier: BSD-2-Clause */
/* A socket's TCP_INFO, for tests that count segments instead of timing. */
#ifndef TEST_TCP_INFO_H
#define TEST_TCP_INFO_H

#include <linux/tcp.h>	/* tcpi_segs_out, tcpi_data_segs_in */
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

/* fd's TCP_INFO; all zero when fd < 0 or the kernel refused. */
static inline struct tcp_info tcp_info_of(int fd)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (fd >= 0)	/* a refused call leaves it as it was */
		getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len);
	return ti;
}

#endif /* TEST_TCP_INFO_H */
