/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iwproxy: a TCP impairment proxy for the fault tests. It listens on a
 * port, connects each accepted client to a target and forwards both
 * directions through a bounded buffer per direction, impairing the path
 * on the way:
 *
 *   -d MS        delay before every chunk written (per direction)
 *   -c N         re-chunk: every write is a random 1..N octets, with
 *                TCP_NODELAY on both sockets so the pieces reach the wire
 *   -p PERMILLE  "loss": before a chunk, with this probability, hold the
 *   -P MS        direction for 1..MS (TCP never loses octets towards the
 *                application; a lost segment shows up as a stall until
 *                the retransmission, which is what this emulates)
 *   -r BYTES     reset: once a pair has forwarded BYTES (both ways), close
 *                both sockets with SO_LINGER 0 so both ends get an RST
 *   -k N         reset at most N pairs (-r and SIGUSR1); later pairs pass
 *   -b BYTES     corrupt: flip one bit of the octet at client->target
 *                offset BYTES of the first pair (a negative control: the
 *                tests must notice)
 *   -s DIR       stall mode: on SIGUSR2 stop reading from DIR ("c": the
 *                client side, "t": the target side, "b": both), again on
 *                SIGUSR2 resume; -S MS:LEN stalls from MS after the first
 *                pair for LEN ms without a signal
 *   -D           dynamic target: each client first sends 10 octets
 *                "IWPX" + port (2, network order) + IPv4 address (4,
 *                network order); the proxy connects there (see
 *                iwpx_shim.c)
 *   -T SECS      lifetime (default 120): the proxy exits after it
 *   -n N         most pairs at once (default 64); more are refused
 *   -F FILE      written (with the port) once the proxy listens
 *   -x SEED      random seed (default: the pid)
 *
 * SIGUSR1 resets every open pair; SIGTERM/SIGINT end the proxy. On exit
 * it prints one line of figures to stderr: pairs, octets each way,
 * chunks, pauses, resets, stalls. Only 127.0.0.0/8 targets are accepted.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BUF_LEN		65536
#define MAX_PAIRS	1024
#define HDR_LEN		10

struct dir {
	int from, to;		/* descriptors (owned by the pair) */
	uint8_t buf[BUF_LEN];
	size_t head, tail;	/* octets [head, tail) wait to be written */
	bool eof;		/* the reader hit EOF: shut down `to` after */
	bool shut;
	uint64_t next_at;	/* no write before this (delay, pause) */
	uint64_t octets;
};

struct pair {
	int cli, tgt;		/* tgt is -1 until connected */
	uint8_t hdr[HDR_LEN];
	size_t hdr_len;
	struct dir d[2];	/* 0: client -> target, 1: target -> client */
};

static struct {
	int delay_ms, chunk, loss_pm, loss_ms;
	uint64_t rst_after, flip_at;
	int rst_max;
	int stall_dir;		/* bit 0: client side, bit 1: target side */
	int stall_at_ms, stall_len_ms;
	bool dynamic;
	int lifetime_s, max_pairs;
	const char *ready_file;
	struct sockaddr_in target;
} opt = { .lifetime_s = 120, .max_pairs = 64, .rst_max = -1 };

static struct {
	uint64_t pairs, refused, chunks, pauses, rsts, stalls, flips, octets[2];
} st;

static struct pair *pairs[MAX_PAIRS];
static volatile sig_atomic_t sig_rst, sig_stall, sig_end;
static bool stalled;
static uint64_t rng_state;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t rnd(void)
{
	uint64_t x = (rng_state += 0x9e3779b97f4a7c15ULL);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		sig_rst = 1;
	else if (sig == SIGUSR2)
		sig_stall = 1;
	else
		sig_end = 1;
}

static void set_nonblock(int fd)
{
	int one = 1;

	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (opt.chunk)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static bool loopback(const struct sockaddr_in *a)
{
	return a->sin_family == AF_INET &&
	       (ntohl(a->sin_addr.s_addr) >> 24) == 127;
}

/* Connects to a loopback target; on loopback this does not block long. */
static int connect_target(const struct sockaddr_in *a)
{
	int fd;

	if (!loopback(a))
		return -1;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)a, sizeof(*a))) {
		close(fd);
		return -1;
	}
	set_nonblock(fd);
	return fd;
}

static void pair_wire(struct pair *p)
{
	p->d[0].from = p->cli;
	p->d[0].to = p->tgt;
	p->d[1].from = p->tgt;
	p->d[1].to = p->cli;
}

static void close_rst(int fd)
{
	struct linger l = { .l_onoff = 1, .l_linger = 0 };

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
	close(fd);
}

/* how: 0 a plain close, 1 an injected reset, 2 a reset passed on (one
 * side failed, so the other learns it the same way) */
static void pair_free(int i, int how)
{
	struct pair *p = pairs[i];

	if (how) {
		close_rst(p->cli);
		close_rst(p->tgt);
		st.rsts += how == 1;
		if (how == 1)
			fprintf(stderr, "iwproxy: RST %llu\n",
				(unsigned long long)now_ms());
	} else {
		close(p->cli);
		if (p->tgt >= 0)
			close(p->tgt);
	}
	free(p);
	pairs[i] = NULL;
}

static void accept_one(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), i, n = 0;
	struct pair *p;

	if (fd < 0)
		return;
	for (i = 0; i < MAX_PAIRS; i++)
		n += pairs[i] != NULL;
	for (i = 0; i < MAX_PAIRS && pairs[i]; i++)
		;
	p = i < MAX_PAIRS && n < opt.max_pairs ? calloc(1, sizeof(*p)) : NULL;
	if (!p) {
		st.refused++;
		close_rst(fd);
		return;
	}
	set_nonblock(fd);
	p->cli = fd;
	p->tgt = -1;
	if (!opt.dynamic) {
		p->tgt = connect_target(&opt.target);
		if (p->tgt < 0) {
			st.refused++;
			close_rst(fd);
			free(p);
			return;
		}
	}
	pair_wire(p);
	pairs[i] = p;
	st.pairs++;
}

/* Dynamic mode: reads the 10-octet header, then connects. false: drop. */
static bool read_header(struct pair *p)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	ssize_t n = read(p->cli, p->hdr + p->hdr_len, HDR_LEN - p->hdr_len);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return false;
	if (n < 0)
		return true;
	p->hdr_len += (size_t)n;
	if (p->hdr_len < HDR_LEN)
		return true;
	if (memcmp(p->hdr, "IWPX", 4))
		return false;
	memcpy(&a.sin_port, p->hdr + 4, 2);
	memcpy(&a.sin_addr, p->hdr + 6, 4);
	p->tgt = connect_target(&a);
	if (p->tgt < 0)
		return false;
	pair_wire(p);
	return true;
}

static bool dir_stalled(int k)
{
	/* d[0] reads the client side, d[1] the target side */
	return stalled && (opt.stall_dir & (1 << k));
}

/* Moves what it can in one direction. false: the pair is finished. */
static bool dir_pump(struct dir *d, int k, uint64_t now)
{
	ssize_t n;

	if (!d->eof && !dir_stalled(k) && d->tail < BUF_LEN) {
		n = read(d->from, d->buf + d->tail, BUF_LEN - d->tail);
		if (n > 0)
			d->tail += (size_t)n;
		else if (n == 0)
			d->eof = true;
		else if (errno != EAGAIN && errno != EINTR)
			return false;
	}
	while (d->head < d->tail && now >= d->next_at) {
		size_t len = d->tail - d->head;

		if (opt.loss_pm && (int)(rnd() % 1000) < opt.loss_pm) {
			d->next_at = now + 1 + rnd() % (uint64_t)opt.loss_ms;
			st.pauses++;
			break;
		}
		if (opt.chunk && len > (size_t)opt.chunk)
			len = (size_t)opt.chunk;
		if (opt.chunk)
			len = 1 + rnd() % len;
		if (k == 0 && opt.flip_at && !st.flips &&
		    d->octets <= opt.flip_at - 1 &&
		    opt.flip_at - 1 < d->octets + len) {
			d->buf[d->head + (opt.flip_at - 1 - d->octets)] ^= 0x10;
			st.flips++;
		}
		n = send(d->to, d->buf + d->head, len, MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		d->head += (size_t)n;
		d->octets += (uint64_t)n;
		st.octets[k] += (uint64_t)n;
		st.chunks++;
		if (opt.delay_ms)
			d->next_at = now + (uint64_t)opt.delay_ms;
	}
	if (d->head == d->tail)
		d->head = d->tail = 0;
	if (d->eof && d->head == d->tail && !d->shut) {
		shutdown(d->to, SHUT_WR);
		d->shut = true;
	}
	return true;
}

static bool rst_allowed(void)
{
	return opt.rst_max < 0 || st.rsts < (uint64_t)opt.rst_max;
}

/* One round over a pair. false: free it the way *how says (pair_free). */
static bool pair_pump(struct pair *p, uint64_t now, int *how)
{
	int k;

	*how = 0;
	if (p->tgt < 0)
		return read_header(p);
	for (k = 0; k < 2; k++)
		if (!dir_pump(&p->d[k], k, now)) {
			*how = 2;
			return false;
		}
	if (opt.rst_after && rst_allowed() &&
	    p->d[0].octets + p->d[1].octets >= opt.rst_after) {
		*how = 1;
		return false;
	}
	return !(p->d[0].shut && p->d[1].shut);
}

/* The poll entries of a pair; returns how many it added. */
static int pair_events(struct pair *p, struct pollfd *pf, uint64_t now,
		       uint64_t *wake)
{
	int k;

	if (p->tgt < 0) {
		pf[0] = (struct pollfd){ .fd = p->cli, .events = POLLIN };
		return 1;
	}
	pf[0] = (struct pollfd){ .fd = p->cli };
	pf[1] = (struct pollfd){ .fd = p->tgt };
	for (k = 0; k < 2; k++) {
		struct dir *d = &p->d[k];
		struct pollfd *rd = &pf[k], *wr = &pf[1 - k];

		if (!d->eof && !dir_stalled(k) && d->tail < BUF_LEN)
			rd->events |= POLLIN;
		if (d->head < d->tail) {
			if (now >= d->next_at)
				wr->events |= POLLOUT;
			else if (d->next_at < *wake)
				*wake = d->next_at;
		}
	}
	return 2;
}

static void stall_toggle(void)
{
	stalled = !stalled;
	if (stalled)
		st.stalls++;
	fprintf(stderr, "iwproxy: %s\n", stalled ? "stalled" : "resumed");
}

static void handle_signals(void)
{
	int i;

	if (sig_stall) {
		sig_stall = 0;
		stall_toggle();
	}
	if (sig_rst) {
		sig_rst = 0;
		for (i = 0; i < MAX_PAIRS; i++)
			if (pairs[i] && rst_allowed())
				pair_free(i, 1);
	}
}

static int listen_on(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 1024)) {
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

static int parse_target(const char *s)
{
	char host[64];
	const char *colon = strrchr(s, ':');

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	opt.target.sin_family = AF_INET;
	opt.target.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &opt.target.sin_addr) != 1)
		return -1;
	return loopback(&opt.target) ? 0 : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: iwproxy -l PORT (-t 127.x.x.x:PORT | -D) "
		"[-d MS] [-c N] [-p PERMILLE -P MS] [-r BYTES] [-k N] [-b BYTES] "
		"[-s c|t|b] [-S MS:LEN] [-T SECS] [-n N] [-F FILE] "
		"[-x SEED]\n");
	exit(2);
}

static void parse(int argc, char **argv, int *port)
{
	int c;

	while ((c = getopt(argc, argv, "l:t:d:c:p:P:r:k:b:s:S:DT:n:F:x:")) != -1)
		switch (c) {
		case 'l': *port = atoi(optarg); break;
		case 't': if (parse_target(optarg)) usage(); break;
		case 'd': opt.delay_ms = atoi(optarg); break;
		case 'c': opt.chunk = atoi(optarg); break;
		case 'p': opt.loss_pm = atoi(optarg); break;
		case 'P': opt.loss_ms = atoi(optarg); break;
		case 'r': opt.rst_after = strtoull(optarg, NULL, 0); break;
		case 'k': opt.rst_max = atoi(optarg); break;
		case 'b': opt.flip_at = strtoull(optarg, NULL, 0) + 1; break;
		case 's':
			opt.stall_dir = strchr(optarg, 'c') ? 1 : 0;
			opt.stall_dir |= strchr(optarg, 't') ? 2 : 0;
			opt.stall_dir |= strchr(optarg, 'b') ? 3 : 0;
			break;
		case 'S':
			if (sscanf(optarg, "%d:%d", &opt.stall_at_ms,
				   &opt.stall_len_ms) != 2)
				usage();
			break;
		case 'D': opt.dynamic = true; break;
		case 'T': opt.lifetime_s = atoi(optarg); break;
		case 'n': opt.max_pairs = atoi(optarg); break;
		case 'F': opt.ready_file = optarg; break;
		case 'x': rng_state = strtoull(optarg, NULL, 0); break;
		default: usage();
		}
	if (*port <= 0 || (!opt.dynamic && !opt.target.sin_port) ||
	    opt.chunk < 0 || opt.delay_ms < 0 ||
	    (opt.loss_pm && opt.loss_ms <= 0) || opt.max_pairs < 1 ||
	    opt.max_pairs > MAX_PAIRS || opt.lifetime_s < 1 ||
	    (opt.stall_len_ms && !opt.stall_dir))
		usage();
}

static void ready(int port)
{
	FILE *f;

	if (!opt.ready_file)
		return;
	f = fopen(opt.ready_file, "w");
	if (f) {
		fprintf(f, "%d\n", port);
		fclose(f);
	}
}

/* The timed stall of -S: starts and ends relative to the first pair. */
static void timed_stall(uint64_t now, uint64_t first, uint64_t *wake)
{
	uint64_t on, off;

	if (!opt.stall_len_ms || !first)
		return;
	on = first + (uint64_t)opt.stall_at_ms;
	off = on + (uint64_t)opt.stall_len_ms;
	if (now < on) {
		if (on < *wake)
			*wake = on;
	} else if (now < off) {
		if (!stalled)
			stall_toggle();
		if (off < *wake)
			*wake = off;
	} else if (stalled && st.stalls == 1) {
		stall_toggle();
		opt.stall_len_ms = 0;	/* once */
	}
}

static void run(int lfd)
{
	static struct pollfd pf[1 + 2 * MAX_PAIRS];
	static int owner[1 + 2 * MAX_PAIRS];
	uint64_t end = now_ms() + (uint64_t)opt.lifetime_s * 1000, first = 0;

	while (!sig_end) {
		uint64_t now = now_ms(), wake = end;
		int i, n = 1, timeout;
		int how;

		if (now >= end)
			break;
		handle_signals();
		if (!first && st.pairs)
			first = now;
		timed_stall(now, first, &wake);
		pf[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (i = 0; i < MAX_PAIRS; i++) {
			int m;

			if (!pairs[i])
				continue;
			m = pair_events(pairs[i], &pf[n], now, &wake);
			owner[n] = owner[n + 1] = i;
			n += m;
		}
		timeout = wake > now ? (int)(wake - now) : 0;
		if (poll(pf, (nfds_t)n, timeout) < 0 && errno != EINTR)
			break;
		if (pf[0].revents & POLLIN)
			accept_one(lfd);
		now = now_ms();
		for (i = 0; i < MAX_PAIRS; i++)
			if (pairs[i] && !pair_pump(pairs[i], now, &how))
				pair_free(i, how);
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	int port = 0, lfd, i;

	rng_state = (uint64_t)getpid();
	parse(argc, argv, &port);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	lfd = listen_on(port);
	if (lfd < 0) {
		perror("iwproxy: listen");
		return 1;
	}
	ready(port);
	run(lfd);
	for (i = 0; i < MAX_PAIRS; i++)
		if (pairs[i])
			pair_free(i, 0);
	close(lfd);
	fprintf(stderr, "iwproxy: pairs %llu refused %llu octets c2t %llu "
		"t2c %llu chunks %llu pauses %llu rsts %llu stalls %llu "
		"flips %llu\n",
		(unsigned long long)st.pairs, (unsigned long long)st.refused,
		(unsigned long long)st.octets[0],
		(unsigned long long)st.octets[1],
		(unsigned long long)st.chunks, (unsigned long long)st.pauses,
		(unsigned long long)st.rsts, (unsigned long long)st.stalls,
		(unsigned long long)st.flips);
	return 0;
}
