/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sends the golden frames over a real loopback TCP connection so that an
 * independent decoder (tshark) can judge them: MPA Request and Reply
 * (rev 1, CRC on), then every golden FPDU, one per TCP segment. The
 * receiving side decodes them with the engine's receive stream.
 *
 *	wire_replay PORT plain|markers
 *
 * With `markers` the Reply asks the initiator for markers and the FPDUs
 * are re-framed with markers from the first octet of full operation.
 * Exit 0 when the receiver decoded every FPDU.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iwarp/rx.h"
#include "iwarp/wire.h"
#include "golden/golden.h"

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void send_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("send");
		p += n;
		len -= (size_t)n;
	}
}

static void recv_frame(int fd, enum mpa_kind kind, struct mpa_frame *f,
		       uint8_t *buf, size_t cap)
{
	struct iw_err err;
	size_t have = 0;
	int ret;

	for (;;) {
		ssize_t n = recv(fd, buf + have, 1, 0);

		if (n <= 0)
			die("recv MPA frame");
		have++;
		ret = mpa_frame_parse(buf, have, kind, f, &err);
		if (ret == 0)
			return;
		if (ret != -EAGAIN || have == cap) {
			fprintf(stderr, "bad MPA frame: %s\n",
				iw_err_str(err.layer, err.etype, err.ecode));
			exit(1);
		}
	}
}

static int listen_on(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1))
		die("listen");
	return fd;
}

static int connect_to(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int main(int argc, char **argv)
{
	struct mpa_frame req = { .kind = MPA_REQUEST, .rev = 1, .crc = true };
	struct mpa_frame rep = { .kind = MPA_REPLY, .rev = 1, .crc = true };
	struct mpa_frame got;
	uint8_t buf[4096], *rxbuf;
	uint64_t pos = 0;
	size_t i, sent = 0, total = 0;
	struct iw_rx rx;
	int lfd, cfd, sfd;
	bool markers;
	ssize_t n;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PORT plain|markers\n", argv[0]);
		return 2;
	}
	markers = !strcmp(argv[2], "markers");
	lfd = listen_on(atoi(argv[1]));
	cfd = connect_to(atoi(argv[1]));
	sfd = accept(lfd, NULL, NULL);
	if (sfd < 0)
		die("accept");

	n = mpa_frame_build(buf, sizeof(buf), &req, "replay", 6);
	send_all(cfd, buf, (size_t)n);
	recv_frame(sfd, MPA_REQUEST, &got, buf, sizeof(buf));
	rep.markers = markers;	/* M: the initiator shall send markers */
	n = mpa_frame_build(buf, sizeof(buf), &rep, NULL, 0);
	send_all(sfd, buf, (size_t)n);
	recv_frame(cfd, MPA_REPLY, &got, buf, sizeof(buf));

	for (i = 0; i < N_GOLDEN; i++) {
		const struct golden *g = &goldens[i];

		if (g->kind != 2)
			continue;
		if (markers) {
			n = mpa_fpdu_build(buf, sizeof(buf), g->bytes + 2,
					   iw_get16(g->bytes), true, true,
					   &pos);
			send_all(cfd, buf, (size_t)n);
			total += (size_t)n;
		} else {
			send_all(cfd, g->bytes, g->len);
			total += g->len;
		}
		sent++;
		usleep(3000);	/* one FPDU per TCP segment */
	}
	shutdown(cfd, SHUT_WR);

	iw_rx_init(&rx, true, markers, NULL, NULL);
	rxbuf = malloc(total + 1);
	n = 0;
	for (i = 0; i < total; i += (size_t)n) {
		n = recv(sfd, rxbuf + i, total - i, 0);
		if (n <= 0)
			die("recv FPDUs");
	}
	if (iw_rx_feed(&rx, rxbuf, total) || rx.segs != sent) {
		fprintf(stderr, "receiver: %s after %llu of %zu FPDUs\n",
			iw_err_str(rx.err.layer, rx.err.etype, rx.err.ecode),
			(unsigned long long)rx.segs, sent);
		return 1;
	}
	printf("sent and decoded %zu FPDUs (%zu octets, markers %s)\n", sent,
	       total, markers ? "on" : "off");
	free(rxbuf);
	close(cfd);
	close(sfd);
	close(lfd);
	return 0;
}
