/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * bench_tcp: the floor under every transport here, plain TCP sockets.
 *
 *	bench_tcp -m lat|bw|conn [-s SIZES] [-t BUDGET_MS] -B PORT      (server)
 *	bench_tcp -m lat|bw|conn [-s SIZES] [-t BUDGET_MS] -P PORT HOST (client)
 *
 * lat: ping-pong on non-blocking sockets with TCP_NODELAY, both sides
 * busy-polling read/write. bw: the client writes windows of 64 messages,
 * the server answers each window with one octet (busy-polling too). conn: time from socket()
 * to connect() returning, then close. After each size one more exchange
 * carries a pattern that the receiver checks. The client prints RESULT
 * lines (bench_common.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench_common.h"

static const char *mode = "lat";
static size_t sizes[BENCH_MAX_SIZES];
static int nsizes;
static double budget_ms = 300;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void xfer(int fd, void *buf, size_t n, int out)
{
	unsigned char *p = buf;

	while (n) {
		ssize_t r = out ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);

		if (r > 0) {
			p += r;
			n -= (size_t)r;
		} else if (r == 0) {
			fprintf(stderr, "bench_tcp: peer closed\n");
			exit(1);
		} else if (errno != EAGAIN && errno != EINTR) {
			die(out ? "send" : "recv");
		}
	}
}

static void set_opts(int fd, int nonblock)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (nonblock)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int listen_on(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons((uint16_t)port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(fd, 128))
		die("bind/listen");
	return fd;
}

static int dial(const char *host, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons((uint16_t)port) };
	int fd, tries;

	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
		fprintf(stderr, "bench_tcp: %s is not an IPv4 address\n", host);
		exit(2);
	}
	for (tries = 0; tries < 100; tries++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
		if (!connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
			return fd;
		close(fd);
		usleep(20000);
	}
	die("connect");
	return -1;
}

/* The server's CPU time goes to the client at the end of each size. */
static void sync_cpu(int fd, int server, double cpu0, double *peer)
{
	double mine = bench_cpu() - cpu0;

	if (server) {
		xfer(fd, &mine, sizeof(mine), 1);
	} else {
		xfer(fd, peer, sizeof(*peer), 0);
	}
}

/* One untimed message with a pattern the server checks. */
static void verify(int fd, int server, unsigned char *buf, size_t n)
{
	if (!server) {
		bench_fill(buf, n, (unsigned)n);
		xfer(fd, buf, n, 1);
		return;
	}
	memset(buf, 0, n);
	xfer(fd, buf, n, 0);
	if (bench_check(buf, n, (unsigned)n)) {
		fprintf(stderr, "bench_tcp: size %zu corrupted\n", n);
		exit(1);
	}
}

static void lat_size(int fd, int server, size_t n, unsigned char *buf)
{
	long it = bench_iters(n, 100, 60000, budget_ms * 1000), i;
	long warm = it / 10 + 1;
	double t0 = 0, c0 = 0, peer = 0, cpu;

	for (i = -warm; i < it; i++) {
		if (i == 0) {
			t0 = bench_now();
			c0 = bench_cpu();
		}
		if (server) {
			xfer(fd, buf, n, 0);
			xfer(fd, buf, n, 1);
		} else {
			xfer(fd, buf, n, 1);
			xfer(fd, buf, n, 0);
		}
	}
	double t = bench_now() - t0;

	sync_cpu(fd, server, c0, &peer);
	cpu = bench_cpu() - c0 + peer;
	verify(fd, server, buf, n);
	if (!server)
		printf("RESULT lat %zu %.3f %.3f\n", n, t / it / 2,
		       cpu / (2.0 * (double)it));
}

static void bw_size(int fd, int server, size_t n, unsigned char *buf)
{
	long it = bench_iters(n * BENCH_WINDOW, 3, 2000, budget_ms * 1000);
	long warm = it / 10 + 1, i;
	double t0 = 0, c0 = 0, peer = 0, cpu, msgs = (double)it * BENCH_WINDOW;
	unsigned char ack = 0;
	int w;

	for (i = -warm; i < it; i++) {
		if (i == 0) {
			t0 = bench_now();
			c0 = bench_cpu();
		}
		for (w = 0; w < BENCH_WINDOW; w++)
			xfer(fd, buf, n, !server);
		xfer(fd, &ack, 1, server);
	}
	double t = bench_now() - t0;

	sync_cpu(fd, server, c0, &peer);
	cpu = bench_cpu() - c0 + peer;
	verify(fd, server, buf, n);
	if (!server)
		printf("RESULT bw %zu %.3f %.3f\n", n, (double)n * msgs / t,
		       cpu / msgs);
}

/* conn: the client opens and closes `count` connections and reports the
 * median time to connect(); the server accepts and closes. */
#define CONN_COUNT 200
static void conn_client(const char *host, int port)
{
	static double t[CONN_COUNT];
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons((uint16_t)port) };
	double c0 = bench_cpu();
	int i, fd;
	char c;

	inet_pton(AF_INET, host, &sin.sin_addr);
	close(dial(host, port));	/* the server is up */
	for (i = 0; i < CONN_COUNT; i++) {
		double t0 = bench_now();

		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
			die("connect");
		t[i] = bench_now() - t0;
		/* the server's one octet proves the accept happened */
		if (recv(fd, &c, 1, 0) != 1)
			die("recv");
		close(fd);
	}
	bench_report_conn(t, CONN_COUNT, 0, bench_cpu() - c0);
}

static void conn_server(int lfd)
{
	int i;

	for (i = 0; i < CONN_COUNT + 1; i++) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			die("accept");
		if (send(fd, "x", 1, MSG_NOSIGNAL) != 1 && i)
			die("send");
		close(fd);
	}
}

int main(int argc, char **argv)
{
	int port = 0, server = 0, opt, fd, i;
	unsigned char *buf;
	size_t max = 1;

	nsizes = bench_parse_sizes("1,64,1k,16k,64k,256k,1m,4m", sizes);
	while ((opt = getopt(argc, argv, "m:s:t:B:P:")) != -1) {
		switch (opt) {
		case 'm': mode = optarg; break;
		case 's': nsizes = bench_parse_sizes(optarg, sizes); break;
		case 't': budget_ms = atof(optarg); break;
		case 'B': server = 1; port = atoi(optarg); break;
		case 'P': port = atoi(optarg); break;
		default: return 2;
		}
	}
	if (nsizes <= 0 || !port || (!server && optind >= argc)) {
		fprintf(stderr, "usage: bench_tcp -m lat|bw|conn [-s SIZES] "
			"[-t MS] -B PORT | -P PORT HOST\n");
		return 2;
	}
	if (!strcmp(mode, "conn")) {
		if (server) {
			fd = listen_on(port);
			conn_server(fd);
		} else {
			conn_client(argv[optind], port);
		}
		return 0;
	}
	for (i = 0; i < nsizes; i++)
		if (sizes[i] > max)
			max = sizes[i];
	buf = malloc(max);
	if (!buf)
		die("malloc");
	memset(buf, 0, max);
	if (server) {
		int lfd = listen_on(port);

		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			die("accept");
		close(lfd);
	} else {
		fd = dial(argv[optind], port);
	}
	/* both busy-poll non-blocking sockets, as the transports measured
	 * against this floor do: the best plain TCP can do here */
	set_opts(fd, 1);
	for (i = 0; i < nsizes; i++) {
		if (!strcmp(mode, "lat"))
			lat_size(fd, server, sizes[i], buf);
		else
			bw_size(fd, server, sizes[i], buf);
		fflush(stdout);
	}
	close(fd);
	free(buf);
	return 0;
}
