/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The documented connection-setup knobs and address families, between two
 * real processes through the public libfabric API:
 * - FI_IWARP_MPA_REV (1, 2, mismatched, invalid), FI_IWARP_RTR (every
 *   type, lists, a responder's choice, no type in common, invalid) and
 *   FI_IWARP_RTR_DELAY_MS (0 against 500 ms, on rev 2 and on rev 1, out of
 *   range) on MSG endpoints: each combination connects twice (the
 *   responder sending first where peer-to-peer allows, then the
 *   initiator) and carries verified data both ways; the negotiated setting
 *   is read back from each side's "MSG connected: MPA rev ..." log line
 *   (FI_LOG_LEVEL=info), the delay from the time the connection takes;
 * - the same knobs on RDM endpoints, which the man page scopes to MSG:
 *   RDM connections stay rev 2 peer-to-peer with a Write RTR and are not
 *   delayed, with both peers sending first at once;
 * - IPv6: MSG and RDM on ::1 (several sizes up to 1 MiB, RMA Write and
 *   Read on MSG, fi_getname / fi_getpeer, FI_SOURCE + fi_av_lookup);
 * - fi_sendv / fi_recvv / fi_writev / fi_readv with several iovecs of odd
 *   lengths (and the 8-iovec limit) on MSG;
 * - FI_IWARP_SPIN_US: blocking fi_cq_sread round trips against a
 *   busy-polling echo sleep (voluntary context switches) almost never with
 *   a long spin and almost always with none.
 *
 * Every case forks two processes before anything opens libfabric: each
 * sets its environment and then loads the provider (the parameters are
 * read at load) with its stderr in a memfd that the parent reads back.
 * The children record their checks in a fixed number of slots in shared
 * memory; the parent prints every slot (one never reached is a failure),
 * the log checks and each child's end, so the number of TAP lines is the
 * same in every run. Without ::1 the IPv6 cases print as many SKIP lines.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so.
 */
#define _GNU_SOURCE	/* memfd_create */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "pattern.h"
#include "tap.h"
#include "fi_api.h"

#define API		TEST_API
#define WAIT_S		5.0	/* one wait of a child */
#define CASE_S		20.0	/* one child, from the start of its case */
#define MAXCHK		12	/* check slots of one side */
#define CHK_TEXT	232
#define MAXMSG		4
#define MIB		(1024 * 1024)
#define SPIN_ROUNDS	200	/* K_SPIN round trips */

/* RTR types as the provider logs them (the MPA_RTR_* bits) */
#define RTR_SEND	0x1
#define RTR_WRITE	0x2
#define RTR_READ	0x4

enum kind {
	K_MSG,		/* two connections, data both ways, log + timing */
	K_REFUSED,	/* a connection that must not come up */
	K_RDM,		/* both peers send first at once */
	K_V6_MSG,	/* ::1: addresses, sizes, RMA */
	K_V6_RDM,	/* ::1: sizes, FI_SOURCE, fi_av_lookup */
	K_SG,		/* vectored send / recv / write / read */
	K_SPIN,		/* blocking waits against a busy-polling echo */
};

struct kcase {
	const char *name;
	enum kind kind;
	const char *env[2][4];	/* side 0 (server, peer A), side 1 */
	/* what each side's log must show for every connection */
	unsigned int rev;
	bool enh;
	unsigned int rtr;
	int first[2];		/* K_MSG: who sends first, per connection */
	int min_ms[2];		/* K_MSG: connection time bounds per side; */
	int max_ms[2];		/* K_RDM: max_ms[0] bounds the exchange */
	const char *warn[2];	/* a text each side's log must contain */
	int min_sleeps, max_sleeps; /* K_SPIN: the client's sleeps */
};

static const struct kcase cases[] = {
	{ "msg default", K_MSG, .rev = 2, .enh = true, .rtr = RTR_WRITE,
	  .first = { 0, 1 } },
	{ "msg rev 2", K_MSG,
	  .env = { { "FI_IWARP_MPA_REV=2" }, { "FI_IWARP_MPA_REV=2" } },
	  .rev = 2, .enh = true, .rtr = RTR_WRITE, .first = { 0, 1 } },
	{ "msg rev 1", K_MSG,
	  .env = { { "FI_IWARP_MPA_REV=1" }, { "FI_IWARP_MPA_REV=1" } },
	  .rev = 1, .enh = false, .rtr = 0, .first = { 1, 1 } },
	{ "msg rtr write", K_MSG,
	  .env = { { "FI_IWARP_RTR=write" }, { "FI_IWARP_RTR=write" } },
	  .rev = 2, .enh = true, .rtr = RTR_WRITE, .first = { 0, 1 } },
	{ "msg rtr read", K_MSG,
	  .env = { { "FI_IWARP_RTR=read" }, { "FI_IWARP_RTR=read" } },
	  .rev = 2, .enh = true, .rtr = RTR_READ, .first = { 0, 1 } },
	{ "msg rtr send", K_MSG,
	  .env = { { "FI_IWARP_RTR=send" }, { "FI_IWARP_RTR=send" } },
	  .rev = 2, .enh = true, .rtr = RTR_SEND, .first = { 0, 1 } },
	/* lists: Read is preferred to Send whatever the order written */
	{ "msg rtr lists", K_MSG,
	  .env = { { "FI_IWARP_RTR=read,send" }, { "FI_IWARP_RTR=send,read" } },
	  .rev = 2, .enh = true, .rtr = RTR_READ, .first = { 0, 1 } },
	/* the initiator offers all three, the responder accepts only Send */
	{ "msg rtr responder picks", K_MSG,
	  .env = { { "FI_IWARP_RTR=send" }, { NULL } },
	  .rev = 2, .enh = true, .rtr = RTR_SEND, .first = { 0, 1 } },
	/* 0 against 500 ms: a connection without the delay takes well
	 * under 400 ms even on a loaded machine, one with it at least 490 */
	{ "msg rtr_delay 0", K_MSG,
	  .env = { { "FI_IWARP_RTR_DELAY_MS=0" },
		   { "FI_IWARP_RTR_DELAY_MS=0" } },
	  .rev = 2, .enh = true, .rtr = RTR_WRITE, .first = { 0, 1 },
	  .max_ms = { 400, 400 } },
	/* the initiator's delay holds its RTR: both sides wait for it */
	{ "msg rtr_delay 500", K_MSG,
	  .env = { { NULL }, { "FI_IWARP_RTR_DELAY_MS=500" } },
	  .rev = 2, .enh = true, .rtr = RTR_WRITE, .first = { 0, 1 },
	  .min_ms = { 490, 490 } },
	/* rev 1 has no RTR: the delay holds the initiator's first message,
	 * which is what completes the responder's connection; the
	 * initiator's own completes at the Reply */
	{ "msg rev 1 rtr_delay 500", K_MSG,
	  .env = { { "FI_IWARP_MPA_REV=1" },
		   { "FI_IWARP_MPA_REV=1", "FI_IWARP_RTR_DELAY_MS=500" } },
	  .rev = 1, .enh = false, .rtr = 0, .first = { 1, 1 },
	  .min_ms = { 490, 0 }, .max_ms = { 0, 400 } },
	/* the responder answers with the Request's revision (RFC 6581 §10:
	 * a lower Request is answered in kind) */
	{ "msg rev 1 to rev 2", K_MSG,
	  .env = { { "FI_IWARP_MPA_REV=2" }, { "FI_IWARP_MPA_REV=1" } },
	  .rev = 1, .enh = false, .rtr = 0, .first = { 1, 1 } },
	/* FI_IWARP_MPA_REV is what an endpoint asks for when it connects:
	 * a rev-1 responder still accepts a rev-2 Request */
	{ "msg rev 2 to rev 1", K_MSG,
	  .env = { { "FI_IWARP_MPA_REV=1" }, { "FI_IWARP_MPA_REV=2" } },
	  .rev = 2, .enh = true, .rtr = RTR_WRITE, .first = { 0, 1 } },
	/* out of range or unknown: ignored with a warning; a
	 * delay of 70000 taken (60000 at most, or 4464 as a uint16) would
	 * fail max_ms */
	{ "msg invalid values", K_MSG,
	  .env = { { "FI_IWARP_MPA_REV=3", "FI_IWARP_RTR=read,bogus",
		     "FI_IWARP_RTR_DELAY_MS=-5" },
		   { "FI_IWARP_MPA_REV=0", "FI_IWARP_RTR=bogus",
		     "FI_IWARP_RTR_DELAY_MS=70000" } },
	  .rev = 2, .enh = true, .rtr = RTR_WRITE, .first = { 0, 1 },
	  .max_ms = { 2000, 2000 },
	  .warn = { "FI_IWARP_MPA_REV=3 ignored",
		    "FI_IWARP_RTR_DELAY_MS=70000 ignored" } },
	/* no RTR type in common: the initiator refuses the Reply */
	{ "msg rtr mismatch", K_REFUSED,
	  .env = { { "FI_IWARP_RTR=read" }, { "FI_IWARP_RTR=write" } },
	  .warn = { NULL, "no RTR type in common" } },
	/* RDM: the knobs are MSG-only; RDM stays rev 2 peer-to-peer */
	{ "rdm default", K_RDM, .rev = 2, .enh = true, .rtr = RTR_WRITE },
	{ "rdm rev 1", K_RDM,
	  .env = { { "FI_IWARP_MPA_REV=1" }, { "FI_IWARP_MPA_REV=1" } },
	  .rev = 2, .enh = true, .rtr = RTR_WRITE },
	{ "rdm rtr read vs send", K_RDM,
	  .env = { { "FI_IWARP_RTR=read" }, { "FI_IWARP_RTR=send" } },
	  .rev = 2, .enh = true, .rtr = RTR_WRITE },
	{ "rdm rtr_delay 1500", K_RDM,
	  .env = { { "FI_IWARP_RTR_DELAY_MS=1500" },
		   { "FI_IWARP_RTR_DELAY_MS=1500" } },
	  .rev = 2, .enh = true, .rtr = RTR_WRITE, .max_ms = { 1500 } },
	{ "rdm invalid values", K_RDM,
	  .env = { { "FI_IWARP_MPA_REV=7", "FI_IWARP_RTR=write,,read" },
		   { "FI_IWARP_RTR=write;read" } },
	  .rev = 2, .enh = true, .rtr = RTR_WRITE,
	  .warn = { "FI_IWARP_RTR=write,,read ignored",
		    "FI_IWARP_RTR=write;read ignored" } },
	{ .name = "ipv6 msg", .kind = K_V6_MSG },
	{ .name = "ipv6 rdm", .kind = K_V6_RDM },
	{ .name = "msg iovecs", .kind = K_SG },
	/* FI_IWARP_SPIN_US: an answer within the spin costs no sleep; the
	 * echo comes after 300 us (SPIN_ECHO_DELAY_S), so 10 ms covers it
	 * even on a loaded machine, and with 0 every wait sleeps */
	{ "spin 10000", K_SPIN,
	  .env = { { NULL }, { "FI_IWARP_SPIN_US=10000" } },
	  .max_sleeps = SPIN_ROUNDS / 4 },
	{ "spin 0", K_SPIN, .env = { { NULL }, { "FI_IWARP_SPIN_US=0" } },
	  .min_sleeps = SPIN_ROUNDS / 2 },
};

#define NCASES (sizeof(cases) / sizeof(cases[0]))

/* ---- what the children share with the parent */

struct chk {
	int st;			/* 0 not reached, 1 ok, 2 not ok */
	char text[CHK_TEXT];
};

struct shm {
	int stage[2];		/* each side's progress marker */
	int named[2];		/* name[] is valid */
	struct sockaddr_storage name[2];
	uint64_t key, raddr;	/* the server's region */
	int nchk[2];
	struct chk chk[2][MAXCHK];
};

static struct shm *sh;
static int me;			/* in a child: 0 server / peer A, 1 */

static const char *side_name(const struct kcase *kc, int side)
{
	if (kc->kind == K_RDM || kc->kind == K_V6_RDM)
		return side ? "peer B" : "peer A";
	return side ? "client" : "server";
}

static int side_checks(const struct kcase *kc, int side)
{
	switch (kc->kind) {
	case K_MSG:
		return 7;
	case K_REFUSED:
		return side ? 2 : 3;
	case K_RDM:
	case K_V6_RDM:
		return 6;
	case K_V6_MSG:
		return 8;
	case K_SG:
		return side ? 6 : 5;
	case K_SPIN:
		return 3;
	}
	return 0;
}

static int log_checks(const struct kcase *kc, int side)
{
	if (kc->kind != K_MSG && kc->kind != K_REFUSED && kc->kind != K_RDM)
		return 0;
	return 1 + (kc->warn[side] != NULL);
}

static int case_lines(const struct kcase *kc)
{
	return side_checks(kc, 0) + side_checks(kc, 1) + log_checks(kc, 0) +
	       log_checks(kc, 1) + 2;
}

/* A check of this child, in its next slot. */
static bool check(bool cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static bool check(bool cond, const char *fmt, ...)
{
	int n = sh->nchk[me];
	va_list ap;

	if (n < MAXCHK) {
		va_start(ap, fmt);
		vsnprintf(sh->chk[me][n].text, CHK_TEXT, fmt, ap);
		va_end(ap);
		__atomic_store_n(&sh->chk[me][n].st, cond ? 1 : 2,
				 __ATOMIC_SEQ_CST);
	}
	sh->nchk[me] = n + 1;
	return cond;
}

/* ---- patterns: pattern.h */

/* Pieces of a message at offsets of a larger buffer (an arena); every
 * octet outside the pieces carries the guard pattern. */
struct span {
	size_t off, len;
	uint64_t seed;
	size_t pos;		/* message position of the first octet */
};

/* First octet of buf that is not what the spans and guard say. */
static size_t arena_diff(const uint8_t *buf, size_t len, uint64_t gseed,
			 const struct span *sp, int nsp)
{
	size_t o;
	int k;

	for (o = 0; o < len; o++) {
		uint8_t want = pat_byte(gseed, o);

		for (k = 0; k < nsp; k++)
			if (o >= sp[k].off && o - sp[k].off < sp[k].len) {
				want = pat_byte(sp[k].seed, sp[k].pos + o -
						       sp[k].off);
				break;
			}
		if (buf[o] != want)
			return o;
	}
	return SIZE_MAX;
}

/* Lays n pieces of lens[] into an arena with odd gaps; returns its size. */
static size_t arena_layout(const size_t *lens, int n, size_t *offs)
{
	size_t o = 67;
	int i;

	for (i = 0; i < n; i++) {
		offs[i] = o;
		o += lens[i] + 61 + 2 * (size_t)i;
	}
	return o + 67;
}

/* The spans a message of m octets fills in pieces offs/lens. */
static int arena_spans(const size_t *lens, const size_t *offs, int n,
		       size_t m, uint64_t seed, struct span *sp)
{
	size_t pos = 0;
	int i, k = 0;

	for (i = 0; i < n && pos < m; i++) {
		size_t take = lens[i] < m - pos ? lens[i] : m - pos;

		sp[k++] = (struct span){ offs[i], take, seed, pos };
		pos += take;
	}
	return k;
}

/* ---- addresses */

static const char *sa_str(const void *addr)
{
	static char bufs[4][INET6_ADDRSTRLEN + 16];
	static int next;
	const struct sockaddr *sa = addr;
	char *b = bufs[next++ % 4], ip[INET6_ADDRSTRLEN];

	if (!sa) {
		snprintf(b, sizeof(bufs[0]), "(none)");
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = addr;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(b, sizeof(bufs[0]), "[%s]:%u", ip,
			 ntohs(s6->sin6_port));
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = addr;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(b, sizeof(bufs[0]), "%s:%u", ip, ntohs(s4->sin_port));
	} else {
		snprintf(b, sizeof(bufs[0]), "(family %d)", sa->sa_family);
	}
	return b;
}

static int sa_port(const void *addr)
{
	const struct sockaddr *sa = addr;

	if (sa && sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)addr)->sin6_port);
	if (sa && sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)addr)->sin_port);
	return -1;
}

/* A loopback address of the family asked for, with port (-1: any but 0),
 * of exactly that family's length. */
static bool sa_is_loop(const void *addr, size_t len, bool v6, int port)
{
	const struct sockaddr *sa = addr;
	int p = sa_port(addr);

	if (!sa || (port < 0 ? p <= 0 : p != port))
		return false;
	if (v6)
		return len == sizeof(struct sockaddr_in6) &&
		       sa->sa_family == AF_INET6 &&
		       IN6_IS_ADDR_LOOPBACK(
			       &((const struct sockaddr_in6 *)addr)->sin6_addr);
	return len == sizeof(struct sockaddr_in) && sa->sa_family == AF_INET &&
	       ((const struct sockaddr_in *)addr)->sin_addr.s_addr ==
		       htonl(INADDR_LOOPBACK);
}

/* ---- the child's libfabric objects and its waits */

static struct fi_info *g_info;
static struct fid_fabric *g_fab;
static struct fid_domain *g_dom;
static struct fid_cq *g_cq;
static struct fid_av *g_av;
static struct fid_pep *g_pep;
static struct fid_eq *g_peq;	/* the passive endpoint's */
static struct fid_ep *g_ep;
static struct fid_eq *g_eq;	/* the connection's */
static bool g_rdm;
static bool g_cq_fd;		/* the CQ has a wait object (K_SPIN) */
static int g_close_bad;		/* fi_close failures */
static char g_err[160];		/* the last setup failure */

static int fail(const char *what, int ret)
{
	snprintf(g_err, sizeof(g_err), "%s: %d (%s)", what, ret,
		 fi_strerror(ret < 0 ? -ret : ret));
	return ret < 0 ? ret : -FI_EOTHER;
}

/* Completions read while waiting for something else. */
struct ent {
	void *ctx;
	uint64_t flags;
	size_t len;
	fi_addr_t src;
	int err;
};

static struct ent stash[128];
static int nstash;

static void stash_put(const struct ent *e)
{
	if (nstash < (int)(sizeof(stash) / sizeof(stash[0])))
		stash[nstash++] = *e;
}

/* One progress pass: every available completion goes to the stash. */
static void progress(void)
{
	struct fi_cq_msg_entry ce[8];
	fi_addr_t src[8];
	ssize_t n, i;

	if (!g_cq)
		return;
	for (;;) {
		n = g_rdm ? fi_cq_readfrom(g_cq, ce, 8, src) :
			    fi_cq_read(g_cq, ce, 8);
		if (n > 0) {
			for (i = 0; i < n; i++) {
				struct ent e = { ce[i].op_context, ce[i].flags,
						 ce[i].len,
						 g_rdm ? src[i] :
							 FI_ADDR_NOTAVAIL, 0 };

				stash_put(&e);
			}
			continue;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry ee = { 0 };
			struct ent e = { 0 };

			if (fi_cq_readerr(g_cq, &ee, 0) != 1)
				break;
			e.ctx = ee.op_context;
			e.flags = ee.flags;
			e.len = ee.len;
			e.src = FI_ADDR_NOTAVAIL;
			e.err = ee.err ? ee.err : FI_EOTHER;
			stash_put(&e);
			continue;
		}
		break;
	}
}

/* Takes the completion of ctx; false after secs without it. */
static bool wait_ctx(void *ctx, double secs, struct ent *out)
{
	double end = tap_now() + secs;
	int i;

	for (;;) {
		progress();
		for (i = 0; i < nstash; i++)
			if (stash[i].ctx == ctx) {
				*out = stash[i];
				stash[i] = stash[--nstash];
				return true;
			}
		if (tap_now() > end)
			return false;
		usleep(100);
	}
}

static void stage_set(int v)
{
	__atomic_store_n(&sh->stage[me], v, __ATOMIC_SEQ_CST);
}

/* Waits (driving progress) until the other side reached stage v. */
static bool stage_wait(int v, double secs)
{
	double end = tap_now() + secs;

	while (__atomic_load_n(&sh->stage[!me], __ATOMIC_SEQ_CST) < v) {
		if (tap_now() > end)
			return false;
		progress();
		usleep(200);
	}
	return true;
}

static void publish_name(const void *addr, size_t len)
{
	memcpy(&sh->name[me], addr, len < sizeof(sh->name[me]) ? len :
			sizeof(sh->name[me]));
	__atomic_store_n(&sh->named[me], 1, __ATOMIC_SEQ_CST);
}

static bool peer_name(double secs)
{
	double end = tap_now() + secs;

	while (!__atomic_load_n(&sh->named[!me], __ATOMIC_SEQ_CST)) {
		if (tap_now() > end)
			return false;
		progress();
		usleep(200);
	}
	return true;
}

/* An EQ event: 1 (event), -1 (error entry, err set), 0 (timeout). */
struct eqev {
	uint32_t event;
	int err, prov_errno;
	char text[96];		/* fi_eq_strerror of an error entry */
	union {
		struct fi_eq_cm_entry cm;
		uint8_t raw[sizeof(struct fi_eq_cm_entry) + 512];
	} u;
};

static int eq_wait(struct fid_eq *eq, double secs, struct eqev *e)
{
	double end = tap_now() + secs;
	ssize_t n;

	memset(e, 0, sizeof(*e));
	for (;;) {
		progress();
		n = fi_eq_read(eq, &e->event, &e->u, sizeof(e->u), 0);
		if (n >= 0)
			return 1;
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry ee = { 0 };
			uint8_t data[512];

			ee.err_data = data;
			ee.err_data_size = sizeof(data);
			if (fi_eq_readerr(eq, &ee, 0) < 0) {
				e->err = FI_EOTHER;
				return -1;
			}
			e->err = ee.err ? ee.err : FI_EOTHER;
			e->prov_errno = ee.prov_errno;
			snprintf(e->text, sizeof(e->text), "%s",
				 fi_eq_strerror(eq, ee.prov_errno, ee.err_data,
						NULL, 0));
			return -1;
		}
		if (tap_now() > end)
			return 0;
		usleep(200);
	}
}

static const char *eq_str(int r, const struct eqev *e)
{
	static char b[160];

	if (r == 0)
		snprintf(b, sizeof(b), "nothing in %.0f s", WAIT_S);
	else if (r < 0)
		snprintf(b, sizeof(b), "error entry %d, prov_errno %#x \"%s\"",
			 e->err, (unsigned)e->prov_errno, e->text);
	else
		snprintf(b, sizeof(b), "%s", e->event == FI_CONNECTED ?
			 "FI_CONNECTED" : e->event == FI_SHUTDOWN ?
			 "FI_SHUTDOWN" : e->event == FI_CONNREQ ?
			 "FI_CONNREQ" : "another event");
	return b;
}

static void close_fid(struct fid *f)
{
	if (f && fi_close(f))
		g_close_bad++;
}

static struct fi_info *hints_new(enum fi_ep_type type, bool v6)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->fabric_attr->prov_name = strdup("iwarp");
	h->ep_attr->type = type;
	h->addr_format = v6 ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
	if (type == FI_EP_MSG) {
		h->caps = FI_MSG | FI_RMA;
		h->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY |
					  FI_MR_VIRT_ADDR;
		/* a Send after an RMA Write reports it placed */
		h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_SAW;
		h->rx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_SAW;
	} else {
		h->caps = FI_MSG | FI_SOURCE;
	}
	return h;
}

/* fi_getinfo, fabric, domain, CQ. 0 or a negative error (g_err). */
static int open_base(enum fi_ep_type type, bool v6, const char *service,
		     uint64_t flags)
{
	struct fi_cq_attr cqa = { .format = FI_CQ_FORMAT_MSG,
				  .wait_obj = g_cq_fd ? FI_WAIT_UNSPEC :
							FI_WAIT_NONE };
	struct fi_info *h = hints_new(type, v6);
	int ret;

	if (!h)
		return fail("fi_allocinfo", -FI_ENOMEM);
	g_rdm = type == FI_EP_RDM;
	ret = fi_getinfo(API, v6 ? "::1" : "127.0.0.1", service, flags, h,
			 &g_info);
	fi_freeinfo(h);
	if (ret)
		return fail("fi_getinfo", ret);
	ret = fi_fabric(g_info->fabric_attr, &g_fab, NULL);
	if (ret)
		return fail("fi_fabric", ret);
	ret = fi_domain(g_fab, g_info, &g_dom, NULL);
	if (ret)
		return fail("fi_domain", ret);
	ret = fi_cq_open(g_dom, &cqa, &g_cq, NULL);
	return ret ? fail("fi_cq_open", ret) : 0;
}

static void close_all(void)
{
	close_fid(g_ep ? &g_ep->fid : NULL);
	close_fid(g_eq ? &g_eq->fid : NULL);
	close_fid(g_pep ? &g_pep->fid : NULL);
	close_fid(g_peq ? &g_peq->fid : NULL);
	close_fid(g_av ? &g_av->fid : NULL);
	close_fid(g_cq ? &g_cq->fid : NULL);
	close_fid(g_dom ? &g_dom->fid : NULL);
	close_fid(g_fab ? &g_fab->fid : NULL);
	g_ep = NULL;
	g_eq = g_peq = NULL;
	g_pep = NULL;
	g_av = NULL;
	g_cq = NULL;
	g_dom = NULL;
	g_fab = NULL;
	if (g_info)
		fi_freeinfo(g_info);
	g_info = NULL;
}

/* ---- MSG connections */

/* Server: open, listen on an ephemeral port of the loopback address and
 * publish it. 0 or a negative error. */
static int srv_listen(bool v6, struct sockaddr_storage *name, size_t *len)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	int ret = open_base(FI_EP_MSG, v6, NULL, FI_SOURCE);

	if (ret)
		return ret;
	ret = fi_eq_open(g_fab, &eqa, &g_peq, NULL);
	if (ret)
		return fail("fi_eq_open", ret);
	ret = fi_passive_ep(g_fab, g_info, &g_pep, NULL);
	if (ret)
		return fail("fi_passive_ep", ret);
	ret = fi_pep_bind(g_pep, &g_peq->fid, 0);
	if (ret)
		return fail("fi_pep_bind", ret);
	ret = fi_listen(g_pep);
	if (ret)
		return fail("fi_listen", ret);
	*len = sizeof(*name);
	ret = fi_getname(&g_pep->fid, name, len);
	if (ret)
		return fail("fi_getname(pep)", ret);
	publish_name(name, *len);
	return 0;
}

/* An endpoint for info with its own EQ, bound to the CQ, enabled. */
static int ep_prepare(struct fi_info *info)
{
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	int ret;

	nstash = 0;
	ret = fi_eq_open(g_fab, &eqa, &g_eq, NULL);
	if (ret)
		return fail("fi_eq_open", ret);
	ret = fi_endpoint(g_dom, info, &g_ep, NULL);
	if (ret)
		return fail("fi_endpoint", ret);
	ret = fi_ep_bind(g_ep, &g_eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(g_ep, &g_cq->fid, FI_TRANSMIT | FI_RECV);
	if (ret)
		return fail("fi_ep_bind", ret);
	ret = fi_enable(g_ep);
	return ret ? fail("fi_enable", ret) : 0;
}

/* What ended the last wait for FI_CONNECTED (eq_wait's result). */
static struct eqev g_ev;
static int g_ev_r;

/* Server: take a request, accept it, wait for FI_CONNECTED; *ms from
 * fi_accept to the event. */
static int srv_accept(double *ms)
{
	struct eqev e;
	double t0;
	int r, ret;

	r = eq_wait(g_peq, WAIT_S, &e);
	if (r != 1 || e.event != FI_CONNREQ) {
		if (r == 1 && e.u.cm.info)
			fi_freeinfo(e.u.cm.info);
		snprintf(g_err, sizeof(g_err), "no FI_CONNREQ: %s",
			 eq_str(r, &e));
		return -FI_EOTHER;
	}
	ret = ep_prepare(e.u.cm.info);
	fi_freeinfo(e.u.cm.info);
	if (ret)
		return ret;
	t0 = tap_now();
	ret = fi_accept(g_ep, NULL, 0);
	if (ret)
		return fail("fi_accept", ret);
	r = eq_wait(g_eq, WAIT_S, &e);
	*ms = (tap_now() - t0) * 1000;
	g_ev = e;
	g_ev_r = r;
	if (r != 1 || e.event != FI_CONNECTED) {
		snprintf(g_err, sizeof(g_err), "no FI_CONNECTED: %s",
			 eq_str(r, &e));
		return -FI_EOTHER;
	}
	return 0;
}

/* Client: fi_getinfo for the server's published port. */
static int cli_open(bool v6)
{
	char port[16];

	if (!peer_name(WAIT_S)) {
		snprintf(g_err, sizeof(g_err), "the server never listened");
		return -FI_EOTHER;
	}
	snprintf(port, sizeof(port), "%d", sa_port(&sh->name[0]));
	return open_base(FI_EP_MSG, v6, port, 0);
}

/* Client: endpoint, fi_connect, FI_CONNECTED; *ms from fi_connect. */
static int cli_connect(double *ms)
{
	struct eqev e;
	double t0;
	int r, ret = ep_prepare(g_info);

	if (ret)
		return ret;
	t0 = tap_now();
	ret = fi_connect(g_ep, g_info->dest_addr, NULL, 0);
	if (ret)
		return fail("fi_connect", ret);
	r = eq_wait(g_eq, WAIT_S, &e);
	*ms = (tap_now() - t0) * 1000;
	if (r != 1 || e.event != FI_CONNECTED) {
		snprintf(g_err, sizeof(g_err), "no FI_CONNECTED: %s",
			 eq_str(r, &e));
		return -FI_EOTHER;
	}
	return 0;
}

static void ep_close(void)
{
	close_fid(g_ep ? &g_ep->fid : NULL);
	close_fid(g_eq ? &g_eq->fid : NULL);
	g_ep = NULL;
	g_eq = NULL;
	nstash = 0;
}

/* ---- messages of several sizes, on MSG or RDM */

struct msgs {
	const size_t *sizes;
	int n;
	size_t cap;		/* of each receive buffer */
	uint8_t *rbuf[MAXMSG], *sbuf[MAXMSG];
	int rctx[MAXMSG], sctx[MAXMSG];
	fi_addr_t to;		/* RDM: the peer */
	fi_addr_t src[MAXMSG];	/* RDM: FI_SOURCE of each arrival */
	int got;		/* messages received */
	char rx_why[128], tx_why[128];
	bool rx_ok, tx_ok;
	double tx_ms;		/* from the first send to the last done */
};

/* Seed of message i sent by side `from` on connection `conn`. */
static uint64_t mseed(int conn, int from, int i)
{
	return 7000 + (uint64_t)conn * 100 + (uint64_t)from * 10 +
	       (uint64_t)i;
}

static bool msgs_alloc(struct msgs *m, const size_t *sizes, int n)
{
	int i;

	memset(m, 0, sizeof(*m));
	m->sizes = sizes;
	m->n = n;
	for (i = 0; i < n; i++)
		if (sizes[i] > m->cap)
			m->cap = sizes[i];
	m->cap += 64;
	for (i = 0; i < n; i++) {
		m->rbuf[i] = malloc(m->cap);
		m->sbuf[i] = malloc(m->cap);
		if (!m->rbuf[i] || !m->sbuf[i])
			return false;
	}
	return true;
}

static void msgs_free(struct msgs *m)
{
	int i;

	for (i = 0; i < m->n; i++) {
		free(m->rbuf[i]);
		free(m->sbuf[i]);
	}
}

/* Posts with -FI_EAGAIN retried for a bounded time. */
#define POST(call) ({							\
	double end_ = tap_now() + WAIT_S;				\
	ssize_t r_;							\
	while ((r_ = (call)) == -FI_EAGAIN && tap_now() < end_)	\
		progress();						\
	r_;								\
})

static bool msgs_post_recvs(struct msgs *m)
{
	int i;

	for (i = 0; i < m->n; i++) {
		ssize_t r;

		memset(m->rbuf[i], 0xa5, m->cap);
		r = POST(fi_recv(g_ep, m->rbuf[i], m->cap, NULL,
				 FI_ADDR_UNSPEC, &m->rctx[i]));
		if (r) {
			snprintf(m->rx_why, sizeof(m->rx_why),
				 "fi_recv %d: %zd", i, r);
			return false;
		}
	}
	return true;
}

/* Sends every message (seeds of conn/me), waits for their completions. */
static bool msgs_send(struct msgs *m, int conn)
{
	double t0 = tap_now();
	struct ent e;
	int i;

	for (i = 0; i < m->n; i++) {
		ssize_t r;

		pat_fill(m->sbuf[i], m->sizes[i], mseed(conn, me, i), 0);
		r = POST(fi_send(g_ep, m->sbuf[i], m->sizes[i], NULL, m->to,
				 &m->sctx[i]));
		if (r) {
			snprintf(m->tx_why, sizeof(m->tx_why),
				 "fi_send of %zu: %zd (%s)", m->sizes[i], r,
				 fi_strerror((int)-r));
			return m->tx_ok = false;
		}
	}
	for (i = 0; i < m->n; i++) {
		if (!wait_ctx(&m->sctx[i], WAIT_S, &e)) {
			snprintf(m->tx_why, sizeof(m->tx_why),
				 "no completion of the send of %zu octets",
				 m->sizes[i]);
			return m->tx_ok = false;
		}
		if (e.err) {
			snprintf(m->tx_why, sizeof(m->tx_why),
				 "send of %zu octets: error %d (%s)",
				 m->sizes[i], e.err, fi_strerror(e.err));
			return m->tx_ok = false;
		}
	}
	m->tx_ms = (tap_now() - t0) * 1000;
	return m->tx_ok = true;
}

/* Waits for every receive; each message is identified by its length
 * (the sizes differ) and must carry the peer's pattern for it. */
static bool msgs_recv(struct msgs *m, int conn)
{
	unsigned int seen = 0;
	struct ent e;
	size_t d;
	int i, j;

	m->got = 0;
	for (i = 0; i < m->n; i++) {
		if (!wait_ctx(&m->rctx[i], WAIT_S, &e)) {
			snprintf(m->rx_why, sizeof(m->rx_why),
				 "receive %d never completed", i);
			return m->rx_ok = false;
		}
		if (e.err) {
			snprintf(m->rx_why, sizeof(m->rx_why),
				 "receive %d: error %d (%s)", i, e.err,
				 fi_strerror(e.err));
			return m->rx_ok = false;
		}
		for (j = 0; j < m->n; j++)
			if (m->sizes[j] == e.len && !(seen & (1u << j)))
				break;
		/* MSG delivers in order (FI_ORDER_SAS): receive i takes
		 * message i; RDM may complete them in any order */
		if (j == m->n || (!g_rdm && j != i)) {
			snprintf(m->rx_why, sizeof(m->rx_why),
				 "receive %d: unexpected length %zu", i,
				 e.len);
			return m->rx_ok = false;
		}
		seen |= 1u << j;
		m->src[m->got++] = e.src;
		d = pat_diff(m->rbuf[i], e.len, mseed(conn, !me, j), 0);
		if (d != SIZE_MAX) {
			snprintf(m->rx_why, sizeof(m->rx_why),
				 "message of %zu octets differs at %zu",
				 e.len, d);
			return m->rx_ok = false;
		}
		for (d = e.len; d < e.len + 64 && d < m->cap; d++)
			if (m->rbuf[i][d] != 0xa5)
				break;
		if (d < e.len + 64 && d < m->cap) {
			snprintf(m->rx_why, sizeof(m->rx_why),
				 "message of %zu octets wrote past its end",
				 e.len);
			return m->rx_ok = false;
		}
	}
	return m->rx_ok = true;
}

/* One connection's exchange: `first` sends all, the other receives all
 * and then answers with its own. */
static void msgs_exchange(struct msgs *m, int conn, int first)
{
	m->rx_ok = m->tx_ok = false;
	snprintf(m->rx_why, sizeof(m->rx_why), "not run");
	snprintf(m->tx_why, sizeof(m->tx_why), "not run");
	if (!msgs_post_recvs(m))
		return;
	if (first == me) {
		if (msgs_send(m, conn))
			msgs_recv(m, conn);
		else
			snprintf(m->rx_why, sizeof(m->rx_why),
				 "not run: our sends failed");
	} else if (msgs_recv(m, conn)) {
		msgs_send(m, conn);
	} else {
		snprintf(m->tx_why, sizeof(m->tx_why),
			 "not run: the peer's messages did not arrive");
	}
}

/* ---- K_MSG: two connections per case */

static const size_t knob_sizes[] = { 1, 4093, 70001 };

static bool in_bounds(double ms, int min_ms, int max_ms)
{
	return ms >= min_ms && (!max_ms || ms < max_ms);
}

static const char *bounds_str(int min_ms, int max_ms)
{
	static char b[64];

	if (min_ms && max_ms)
		snprintf(b, sizeof(b), " (expected %d..%d ms)", min_ms,
			 max_ms);
	else if (min_ms)
		snprintf(b, sizeof(b), " (expected >= %d ms)", min_ms);
	else if (max_ms)
		snprintf(b, sizeof(b), " (expected < %d ms)", max_ms);
	else
		b[0] = 0;
	return b;
}

static void run_msg(const struct kcase *kc)
{
	struct sockaddr_storage name;
	struct msgs m = { 0 };
	size_t len;
	double ms = 0;
	bool go;
	int c;

	go = msgs_alloc(&m, knob_sizes, 3);
	if (!me) {
		go = go && !srv_listen(false, &name, &len);
		check(go, "listening on %s%s%s", go ? sa_str(&name) : "",
		      go ? "" : "failed: ", go ? "" : g_err);
	} else {
		go = go && !cli_open(false);
		check(go, "fi_getinfo for the server: %s",
		      go ? sa_str(g_info->dest_addr) : g_err);
	}
	for (c = 0; c < 2; c++) {
		bool up = go;

		if (up)
			up = !(me ? cli_connect(&ms) : srv_accept(&ms));
		check(up && in_bounds(ms, kc->min_ms[me], kc->max_ms[me]),
		      "connection %d: %s in %.0f ms%s%s%s", c + 1,
		      me ? "fi_connect -> FI_CONNECTED" :
			   "fi_accept -> FI_CONNECTED", ms,
		      bounds_str(kc->min_ms[me], kc->max_ms[me]),
		      up ? "" : ": ", up ? "" : go ? g_err : "not run");
		if (up) {
			msgs_exchange(&m, c, kc->first[c]);
		} else {
			m.rx_ok = m.tx_ok = false;
			snprintf(m.rx_why, sizeof(m.rx_why), "not run");
			snprintf(m.tx_why, sizeof(m.tx_why), "not run");
		}
		check(m.rx_ok, "connection %d (%s sends first): the peer's "
		      "1, 4093, 70001 octets arrive intact%s%s", c + 1,
		      kc->first[c] ? "client" : "server",
		      m.rx_ok ? "" : ": ", m.rx_ok ? "" : m.rx_why);
		check(m.tx_ok, "connection %d: our 3 sends complete%s%s",
		      c + 1, m.tx_ok ? "" : ": ", m.tx_ok ? "" : m.tx_why);
		/* both done before either closes */
		stage_set(10 + c);
		stage_wait(10 + c, WAIT_S);
		ep_close();
	}
	msgs_free(&m);
}

/* ---- K_REFUSED: no RTR type in common */

/* The error triple both ends must report: layer LLP (2), error type MPA
 * (0), code 7 "No Matching RTR Model" (RFC 6581 §8), in the provider's
 * prov_errno encoding (0x10000 | layer << 12 | type << 8 | code). */
#define PROV_NO_RTR	(0x10000 | 2 << 12 | 0 << 8 | 7)

static void run_refused(void)
{
	struct sockaddr_storage name;
	struct eqev e;
	size_t len;
	double ms = 0;
	bool go;
	int r;

	if (!me) {
		bool refused;

		go = !srv_listen(false, &name, &len);
		check(go, "listening%s%s", go ? "" : ": ", go ? "" : g_err);
		/* the Reply goes out; the connection must not come up */
		r = go ? srv_accept(&ms) : 0;
		refused = go && r && !strncmp(g_err, "no FI_CONNECTED", 15);
		check(refused, "the request arrives and fi_accept succeeds, "
		      "but no FI_CONNECTED comes (%s)", !go ? "not run" :
		      r ? g_err : "FI_CONNECTED");
		/* and the endpoint says so: an error entry or FI_SHUTDOWN,
		 * rather than waiting for an RTR that never comes */
		check(refused && g_ev_r == -1 &&
		      g_ev.prov_errno == PROV_NO_RTR,
		      "the responder's endpoint reports the initiator's "
		      "verdict: an error entry, prov_errno %#x expected (%s)",
		      PROV_NO_RTR, refused ? g_err : "not run");
	} else {
		go = !cli_open(false);
		check(go, "fi_getinfo for the server%s%s", go ? "" : ": ",
		      go ? "" : g_err);
		r = -3;
		if (go) {
			r = ep_prepare(g_info);
			if (!r && (r = fi_connect(g_ep, g_info->dest_addr,
						  NULL, 0)))
				fail("fi_connect", r);
			r = r ? -2 : eq_wait(g_eq, WAIT_S, &e);
		}
		check(r == -1 && e.prov_errno == PROV_NO_RTR,
		      "fi_connect ends in an error entry with prov_errno %#x, "
		      "not FI_CONNECTED (%s)", PROV_NO_RTR,
		      r == -2 ? g_err : r == -3 ? "not run" : eq_str(r, &e));
	}
	stage_set(1);
	stage_wait(1, WAIT_S);
	ep_close();
}

/* ---- K_RDM, K_V6_RDM */

static const size_t v6_sizes[] = { 1, 4093, 65543, MIB };

static void run_rdm(const struct kcase *kc, bool v6)
{
	struct fi_av_attr ava = { .type = FI_AV_TABLE };
	struct sockaddr_storage name, peer, look;
	size_t len = sizeof(name), llen = sizeof(look);
	fi_addr_t fa = FI_ADDR_NOTAVAIL;
	struct msgs m = { 0 };
	bool go, ok;
	int ret = 0, i;
	char why[96] = "";

	go = msgs_alloc(&m, v6 ? v6_sizes : knob_sizes, v6 ? 4 : 3);
	ret = go ? open_base(FI_EP_RDM, v6, NULL, FI_SOURCE) : -FI_ENOMEM;
	if (!ret && (ret = fi_av_open(g_dom, &ava, &g_av, NULL)))
		fail("fi_av_open", ret);
	if (!ret && (ret = fi_endpoint(g_dom, g_info, &g_ep, NULL)))
		fail("fi_endpoint", ret);
	if (!ret && (ret = fi_ep_bind(g_ep, &g_cq->fid, FI_TRANSMIT |
				      FI_RECV)))
		fail("fi_ep_bind(cq)", ret);
	if (!ret && (ret = fi_ep_bind(g_ep, &g_av->fid, 0)))
		fail("fi_ep_bind(av)", ret);
	if (!ret && (ret = fi_enable(g_ep)))
		fail("fi_enable", ret);
	if (!ret && (ret = fi_getname(&g_ep->fid, &name, &len)))
		fail("fi_getname", ret);
	go = !ret;
	if (go)
		publish_name(&name, len);
	ok = go && sa_is_loop(&name, len, v6, -1);
	check(ok, "endpoint open; fi_getname: %s, %zu octets (expected %s "
	      "loopback, %zu)%s%s", go ? sa_str(&name) : "-", go ? len : 0,
	      v6 ? "IPv6" : "IPv4", v6 ? sizeof(struct sockaddr_in6) :
	      sizeof(struct sockaddr_in), go ? "" : ": ", go ? "" : g_err);
	if (go && peer_name(WAIT_S)) {
		memcpy(&peer, &sh->name[!me], sizeof(peer));
		go = fi_av_insert(g_av, &peer, 1, &fa, 0, NULL) == 1 &&
		     fa != FI_ADDR_NOTAVAIL;
		check(go, "the peer's %s inserted: fi_addr %llu",
		      sa_str(&peer), (unsigned long long)fa);
	} else {
		check(false, "the peer's name never came%s",
		      go ? "" : " (not run)");
		go = false;
	}
	m.to = fa;
	snprintf(m.rx_why, sizeof(m.rx_why), "not run");
	snprintf(m.tx_why, sizeof(m.tx_why), "not run");
	go = go && msgs_post_recvs(&m);
	stage_set(1);
	go = go && stage_wait(1, WAIT_S);
	/* both send first, at once: simultaneous connects, one survives */
	if (go && msgs_send(&m, 0))
		msgs_recv(&m, 0);
	check(m.tx_ok && (!kc->max_ms[0] || m.tx_ms < kc->max_ms[0]),
	      "both send first at once: our %d sends complete in %.0f ms%s"
	      "%s%s", m.n, m.tx_ms, bounds_str(0, kc->max_ms[0]),
	      m.tx_ok ? "" : ": ", m.tx_ok ? "" : m.tx_why);
	check(m.rx_ok, "the peer's %d messages (%s octets) arrive intact%s%s",
	      m.n, v6 ? "1, 4093, 65543, 1 MiB" : "1, 4093, 70001",
	      m.rx_ok ? "" : ": ", m.rx_ok ? "" : m.rx_why);
	ok = m.rx_ok && m.got == m.n;
	for (i = 0; ok && i < m.got; i++)
		ok = m.src[i] == fa;
	if (!m.rx_ok)
		snprintf(why, sizeof(why), " (not run)");
	else if (!ok)
		snprintf(why, sizeof(why), " (one was %llu)",
			 (unsigned long long)m.src[i - 1]);
	check(ok, "FI_SOURCE of every message is the peer's fi_addr %llu%s",
	      (unsigned long long)fa, why);
	ok = false;
	if (m.rx_ok) {
		memset(&look, 0, sizeof(look));
		ret = fi_av_lookup(g_av, m.src[0], &look, &llen);
		ok = !ret && sa_is_loop(&look, llen, v6, sa_port(&peer));
		snprintf(why, sizeof(why), "%s, %zu octets", ret ? "failed" :
			 sa_str(&look), llen);
	}
	check(ok, "fi_av_lookup of the source: %s (expected %s)",
	      m.rx_ok ? why : "not run", go ? sa_str(&peer) : "-");
	stage_set(2);
	stage_wait(2, WAIT_S);
	close_all();
	msgs_free(&m);
}

/* ---- K_V6_MSG */

#define W_OFF	1001
#define W_LEN	MIB
#define R_OFF	(W_OFF + W_LEN + 999)
#define R_LEN	(MIB - 13)
#define REG_LEN	(R_OFF + R_LEN + 1003)
#define GSEED	0x6a4d
#define WSEED	0x77
#define RSEED	0x88

static uint64_t rma_base(const void *buf)
{
	return (g_info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
	       (uint64_t)(uintptr_t)buf : 0;
}

/*
 * The server's side of an RMA round: reg[0..len) holds guard pattern
 * gseed with the Read's source (sp[1]) in place, registered, its key and
 * address published (stage 2); then the client's notice that its Write
 * and Read are done. Returns the first octet that is not what gseed and
 * sp say, or SIZE_MAX; *ran is false (and 0 returned) when the round did
 * not run or no notice came.
 */
static size_t rma_region_serve(uint8_t *reg, size_t len, uint64_t gseed,
			       const struct span sp[2], bool go,
			       struct fid_mr **mr, bool *ran)
{
	static uint8_t note[8];	/* posted until the endpoint closes */
	static int nctx;
	struct ent e;
	bool ok = false;

	if (go) {
		pat_fill(reg, len, gseed, 0);
		pat_fill(reg + sp[1].off, sp[1].len, sp[1].seed, sp[1].pos);
		ok = !fi_mr_reg(g_dom, reg, len, FI_REMOTE_READ |
				FI_REMOTE_WRITE, 0, 0, 0, mr, NULL) &&
		     !POST(fi_recv(g_ep, note, sizeof(note), NULL, 0, &nctx));
		if (ok) {
			sh->key = fi_mr_key(*mr);
			sh->raddr = rma_base(reg);
		}
	}
	stage_set(ok ? 2 : 99);
	*ran = ok && wait_ctx(&nctx, WAIT_S + 5, &e) && !e.err;
	return *ran ? arena_diff(reg, len, gseed, sp, 2) : 0;
}

static void v6_server(void)
{
	struct sockaddr_storage pname, name, peer;
	struct span sp[2] = {
		{ W_OFF, W_LEN, WSEED, 0 }, { R_OFF, R_LEN, RSEED, 0 },
	};
	size_t plen = 0, len = sizeof(name);
	uint8_t *reg = malloc(REG_LEN);
	struct fid_mr *mr = NULL;
	struct msgs m = { 0 };
	double ms;
	bool go, ok;
	int ret;
	size_t d;

	go = reg && msgs_alloc(&m, v6_sizes, 4);
	ret = go ? open_base(FI_EP_MSG, true, NULL, FI_SOURCE) : -FI_ENOMEM;
	ok = !ret && g_info->addr_format == FI_SOCKADDR_IN6 &&
	     g_info->src_addr && sa_is_loop(g_info->src_addr,
					    g_info->src_addrlen, true, 0);
	check(ok, "fi_getinfo(\"::1\", FI_SOURCE): addr_format %s, src_addr "
	      "%s (expected FI_SOCKADDR_IN6, [::1]:0)%s%s",
	      ret ? "-" : g_info->addr_format == FI_SOCKADDR_IN6 ?
	      "FI_SOCKADDR_IN6" : "other", ret ? "-" :
	      sa_str(g_info->src_addr), ret ? ": " : "", ret ? g_err : "");
	close_all();	/* srv_listen opens again */
	go = go && !ret && !srv_listen(true, &pname, &plen);
	check(go && sa_is_loop(&pname, plen, true, -1),
	      "passive endpoint's fi_getname: %s, %zu octets%s%s",
	      go ? sa_str(&pname) : "-", go ? plen : 0, go ? "" : ": ",
	      go ? "" : g_err);
	go = go && !srv_accept(&ms);
	check(go, "accepted over IPv6%s%s", go ? "" : ": ", go ? "" : g_err);
	ret = go ? fi_getname(&g_ep->fid, &name, &len) : -1;
	check(!ret && sa_is_loop(&name, len, true, sa_port(&pname)),
	      "endpoint's fi_getname: %s (expected the listening address "
	      "%s)", ret ? "failed" : sa_str(&name), go ? sa_str(&pname) :
	      "-");
	len = sizeof(peer);
	ret = go && stage_wait(1, WAIT_S) ?
	      fi_getpeer(g_ep, &peer, &len) : -1;
	check(!ret && sa_is_loop(&peer, len, true, sa_port(&sh->name[1])),
	      "fi_getpeer: %s (expected the client's fi_getname %s)",
	      ret ? "failed" : sa_str(&peer), ret ? "-" :
	      sa_str(&sh->name[1]));
	if (go) {
		msgs_exchange(&m, 0, 1);
	} else {
		snprintf(m.rx_why, sizeof(m.rx_why), "not run");
		snprintf(m.tx_why, sizeof(m.tx_why), "not run");
	}
	check(m.rx_ok, "the client's 1, 4093, 65543, 1 MiB octets arrive "
	      "intact over IPv6%s%s", m.rx_ok ? "" : ": ",
	      m.rx_ok ? "" : m.rx_why);
	check(m.tx_ok, "our answers complete%s%s", m.tx_ok ? "" : ": ",
	      m.tx_ok ? "" : m.tx_why);
	/* the region: guard everywhere, the Read's source pattern */
	d = rma_region_serve(reg, REG_LEN, GSEED, sp, go, &mr, &ok);
	if (!ok)
		snprintf(g_err, sizeof(g_err), ": not run, or no notice");
	else if (d != SIZE_MAX)
		snprintf(g_err, sizeof(g_err), ": first difference at %zu", d);
	else
		g_err[0] = 0;
	check(ok && d == SIZE_MAX, "the client's 1 MiB RMA Write landed at "
	      "offset %d, nothing else changed%s", W_OFF, g_err);
	stage_wait(3, WAIT_S + 5);	/* serves the client's Read */
	ep_close();
	close_fid(mr ? &mr->fid : NULL);
	close_all();
	msgs_free(&m);
	free(reg);
}

static void v6_client(void)
{
	struct sockaddr_storage name, peer;
	struct span sp = { 64, R_LEN, RSEED, 0 };
	size_t len = sizeof(name);
	uint8_t *wbuf = malloc(W_LEN), *lbuf = malloc(R_LEN + 128);
	char note[8] = "written";
	struct msgs m = { 0 };
	struct ent e;
	double ms;
	bool go, ok;
	int ret, wctx, nctx, rctx;
	size_t d;

	go = wbuf && lbuf && msgs_alloc(&m, v6_sizes, 4);
	ret = go ? cli_open(true) : -FI_ENOMEM;
	ok = !ret && g_info->addr_format == FI_SOCKADDR_IN6 &&
	     g_info->dest_addr && sa_is_loop(g_info->dest_addr,
					     g_info->dest_addrlen, true,
					     sa_port(&sh->name[0]));
	check(ok, "fi_getinfo(\"::1\", port): addr_format %s, dest_addr %s "
	      "(expected the server's %s)%s%s",
	      ret ? "-" : g_info->addr_format == FI_SOCKADDR_IN6 ?
	      "FI_SOCKADDR_IN6" : "other",
	      ret ? "-" : sa_str(g_info->dest_addr), sa_str(&sh->name[0]),
	      ret ? ": " : "", ret ? g_err : "");
	go = !ret && !cli_connect(&ms);
	check(go, "connected over IPv6%s%s", go ? "" : ": ",
	      go ? "" : ret ? "not run" : g_err);
	ret = go ? fi_getname(&g_ep->fid, &name, &len) : -1;
	if (!ret)
		publish_name(&name, len);
	stage_set(1);
	/* our own port: any but the server's (one host, one port each) */
	check(!ret && sa_is_loop(&name, len, true, -1) &&
	      sa_port(&name) != sa_port(&sh->name[0]),
	      "endpoint's fi_getname: %s, %zu octets (expected [::1], a "
	      "port other than the server's)", ret ? "failed" :
	      sa_str(&name), ret ? 0 : len);
	len = sizeof(peer);
	ret = go ? fi_getpeer(g_ep, &peer, &len) : -1;
	check(!ret && sa_is_loop(&peer, len, true, sa_port(&sh->name[0])),
	      "fi_getpeer: %s (expected the server's %s)",
	      ret ? "failed" : sa_str(&peer), sa_str(&sh->name[0]));
	if (go) {
		msgs_exchange(&m, 0, 1);
	} else {
		snprintf(m.rx_why, sizeof(m.rx_why), "not run");
		snprintf(m.tx_why, sizeof(m.tx_why), "not run");
	}
	check(m.rx_ok, "the server's answers arrive intact over IPv6%s%s",
	      m.rx_ok ? "" : ": ", m.rx_ok ? "" : m.rx_why);
	check(m.tx_ok, "our 1, 4093, 65543, 1 MiB octet sends complete%s%s",
	      m.tx_ok ? "" : ": ", m.tx_ok ? "" : m.tx_why);
	/* RMA Write, then a Send behind it (placed after it) */
	go = go && stage_wait(2, WAIT_S) && sh->stage[0] == 2;
	ok = false;
	if (go) {
		pat_fill(wbuf, W_LEN, WSEED, 0);
		ok = !POST(fi_write(g_ep, wbuf, W_LEN, NULL, 0,
				    sh->raddr + W_OFF, sh->key, &wctx)) &&
		     wait_ctx(&wctx, WAIT_S, &e) && !e.err;
		ok = ok && !POST(fi_send(g_ep, note, sizeof(note), NULL, 0,
					 &nctx)) &&
		     wait_ctx(&nctx, WAIT_S, &e) && !e.err;
	}
	check(ok, "fi_write of 1 MiB and the notice behind it complete%s",
	      go ? "" : " (not run)");
	ok = false;
	d = 0;
	if (go) {
		pat_fill(lbuf, R_LEN + 128, GSEED, 0);
		ok = !POST(fi_read(g_ep, lbuf + 64, R_LEN, NULL, 0,
				   sh->raddr + R_OFF, sh->key, &rctx)) &&
		     wait_ctx(&rctx, WAIT_S, &e) && !e.err;
		d = ok ? arena_diff(lbuf, R_LEN + 128, GSEED, &sp, 1) : 0;
	}
	check(ok && d == SIZE_MAX, "fi_read of 1 MiB - 13 octets brings the "
	      "server's pattern, nothing around it%s%s",
	      !go ? " (not run)" : !ok ? ": the Read failed" : "",
	      ok && d != SIZE_MAX ? ": differs" : "");
	stage_set(3);
	ep_close();
	close_all();
	msgs_free(&m);
	free(wbuf);
	free(lbuf);
}

/* ---- K_SG: scatter-gather */

static const size_t sg_c2s_send[] = { 1, 333, 70001, 7, 4099 };
static const size_t sg_c2s_recv[] = { 11, 50001, 3, 30000 };
static const size_t sg_s2c_send[] = { 65537, 2, 999 };
static const size_t sg_s2c_recv[] = { 5, 1, 40000, 17, 30001, 9 };
static const size_t sg_write[] = { 7, 65536, 3, 1025, 49999, 13 };
static const size_t sg_read[] = { 1, 8191, 33, 70000, 21778 };

#define SG_REG		300000
#define SG_WOFF		101
#define SG_ROFF		150001
#define SG_RLEN		100003
#define SG_GSEED	0x5151
#define SG_MSEED(k)	(0x3000 + (k))

#define NIOV(a)	((int)(sizeof(a) / sizeof((a)[0])))

static size_t sum(const size_t *a, int n)
{
	size_t s = 0;

	while (n--)
		s += a[n];
	return s;
}

/* An arena holding pieces of lens[]: guard everywhere, then (if seed is
 * not 0) the message pattern in the pieces; iov[] points at them. */
static uint8_t *sg_arena(const size_t *lens, int n, size_t *offs,
			 struct iovec *iov, size_t *alen, uint64_t seed)
{
	uint8_t *a;
	size_t pos = 0;
	int i;

	*alen = arena_layout(lens, n, offs);
	a = malloc(*alen);
	if (!a)
		return NULL;
	pat_fill(a, *alen, SG_GSEED, 0);
	for (i = 0; i < n; i++) {
		iov[i].iov_base = a + offs[i];
		iov[i].iov_len = lens[i];
		if (seed)
			pat_fill(a + offs[i], lens[i], seed, pos);
		pos += lens[i];
	}
	return a;
}

/* Verifies an arena that received m octets of seed into its pieces. */
static size_t sg_verify(const uint8_t *a, size_t alen, const size_t *lens,
			const size_t *offs, int n, size_t m, uint64_t seed)
{
	struct span sp[8];
	int k = arena_spans(lens, offs, n, m, seed, sp);

	return arena_diff(a, alen, SG_GSEED, sp, k);
}

static void sg_server(void)
{
	struct sockaddr_storage name;
	struct iovec riov[8], siov[8];
	size_t roff[8], soff[8], ralen = 0, salen = 0, len, d = 0;
	size_t m1 = sum(sg_c2s_send, NIOV(sg_c2s_send));
	struct span sp[2] = {
		{ SG_WOFF, sum(sg_write, NIOV(sg_write)), SG_MSEED(3), 0 },
		{ SG_ROFF, SG_RLEN, SG_MSEED(4), 0 },
	};
	uint8_t *ra = sg_arena(sg_c2s_recv, NIOV(sg_c2s_recv), roff, riov,
			       &ralen, 0);
	uint8_t *sa = sg_arena(sg_s2c_send, NIOV(sg_s2c_send), soff, siov,
			       &salen, SG_MSEED(2));
	uint8_t *reg = malloc(SG_REG);
	struct fid_mr *mr = NULL;
	struct ent e;
	double ms;
	bool go, ok;
	int rctx, sctx;

	go = ra && sa && reg && !srv_listen(false, &name, &len);
	check(go, "listening%s%s", go ? "" : ": ", go ? "" : g_err);
	go = go && !srv_accept(&ms);
	check(go, "accepted%s%s", go ? "" : ": ", go ? "" : g_err);
	ok = go && !POST(fi_recvv(g_ep, riov, NULL, NIOV(sg_c2s_recv), 0,
				  &rctx)) &&
	     wait_ctx(&rctx, WAIT_S, &e) && !e.err;
	if (ok)
		d = sg_verify(ra, ralen, sg_c2s_recv, roff,
			      NIOV(sg_c2s_recv), m1, SG_MSEED(1));
	check(ok && e.len == m1 && d == SIZE_MAX,
	      "fi_recvv into 11+50001+3+30000 takes the client's "
	      "5-iovec %zu-octet message, placed across the pieces, guards "
	      "intact (len %zu%s)", m1, ok ? e.len : 0,
	      !ok ? ", not received" : d == SIZE_MAX ? "" : ", differs");
	ok = go && !POST(fi_sendv(g_ep, siov, NULL, NIOV(sg_s2c_send), 0,
				  &sctx)) &&
	     wait_ctx(&sctx, WAIT_S, &e) && !e.err;
	check(ok, "fi_sendv of 65537+2+999 octets completes");
	/* the region for the client's writev and readv */
	d = rma_region_serve(reg, SG_REG, SG_GSEED, sp, go, &mr, &ok);
	check(ok && d == SIZE_MAX, "the client's 6-iovec fi_writev landed "
	      "as one contiguous %zu octets at offset %d, nothing else "
	      "changed%s", sp[0].len, SG_WOFF, !ok ? " (not run or no "
	      "notice)" : d == SIZE_MAX ? "" : " (differs)");
	stage_wait(3, WAIT_S + 5);	/* serves the client's readv */
	ep_close();
	close_fid(mr ? &mr->fid : NULL);
	close_all();
	free(ra);
	free(sa);
	free(reg);
}

static void sg_client(void)
{
	struct iovec riov[8], siov[8], wiov[8], diov[8], many[9];
	size_t roff[8], soff[8], woff[8], doff[8];
	size_t ralen = 0, salen = 0, walen = 0, dalen = 0, d = 0;
	size_t m2 = sum(sg_s2c_send, NIOV(sg_s2c_send));
	uint8_t *sa = sg_arena(sg_c2s_send, NIOV(sg_c2s_send), soff, siov,
			       &salen, SG_MSEED(1));
	uint8_t *ra = sg_arena(sg_s2c_recv, NIOV(sg_s2c_recv), roff, riov,
			       &ralen, 0);
	uint8_t *wa = sg_arena(sg_write, NIOV(sg_write), woff, wiov, &walen,
			       SG_MSEED(3));
	uint8_t *da = sg_arena(sg_read, NIOV(sg_read), doff, diov, &dalen, 0);
	char note[8] = "written", one[9];
	struct ent e;
	double ms;
	bool go, ok;
	int sctx, rctx, wctx, nctx, dctx, i;
	ssize_t r;

	go = sa && ra && wa && da && !cli_open(false) && !cli_connect(&ms);
	check(go, "connected%s%s", go ? "" : ": ", go ? "" : g_err);
	ok = go && !POST(fi_recvv(g_ep, riov, NULL, NIOV(sg_s2c_recv), 0,
				  &rctx));
	ok = ok && !POST(fi_sendv(g_ep, siov, NULL, NIOV(sg_c2s_send), 0,
				  &sctx)) &&
	     wait_ctx(&sctx, WAIT_S, &e) && !e.err;
	check(ok, "fi_sendv of 1+333+70001+7+4099 octets completes");
	ok = ok && wait_ctx(&rctx, WAIT_S, &e) && !e.err;
	if (ok)
		d = sg_verify(ra, ralen, sg_s2c_recv, roff,
			      NIOV(sg_s2c_recv), m2, SG_MSEED(2));
	check(ok && e.len == m2 && d == SIZE_MAX,
	      "fi_recvv into 5+1+40000+17+30001+9 takes the server's "
	      "3-iovec %zu-octet message, the last piece untouched (len "
	      "%zu%s)", m2, ok ? e.len : 0, !ok ? ", not received" :
	      d == SIZE_MAX ? "" : ", differs");
	go = go && stage_wait(2, WAIT_S) && sh->stage[0] == 2;
	ok = go && !POST(fi_writev(g_ep, wiov, NULL, NIOV(sg_write), 0,
				   sh->raddr + SG_WOFF, sh->key, &wctx)) &&
	     wait_ctx(&wctx, WAIT_S, &e) && !e.err;
	ok = ok && !POST(fi_send(g_ep, note, sizeof(note), NULL, 0,
				 &nctx)) &&
	     wait_ctx(&nctx, WAIT_S, &e) && !e.err;
	check(ok, "fi_writev of 7+65536+3+1025+49999+13 octets and the "
	      "notice behind it complete%s", go ? "" : " (not run)");
	ok = go && !POST(fi_readv(g_ep, diov, NULL, NIOV(sg_read), 0,
				  sh->raddr + SG_ROFF, sh->key, &dctx)) &&
	     wait_ctx(&dctx, WAIT_S, &e) && !e.err;
	d = ok ? sg_verify(da, dalen, sg_read, doff, NIOV(sg_read), SG_RLEN,
			   SG_MSEED(4)) : 0;
	check(ok && d == SIZE_MAX, "fi_readv of %d contiguous remote octets "
	      "into 1+8191+33+70000+21778 scatters them in order, guards "
	      "intact%s", SG_RLEN, !ok ? " (not run or failed)" :
	      d == SIZE_MAX ? "" : " (differs)");
	for (i = 0; i < 9; i++) {
		many[i].iov_base = &one[i];
		many[i].iov_len = 1;
	}
	r = go ? fi_sendv(g_ep, many, NULL, 9, 0, &sctx) : 1;
	check(r == -FI_EINVAL, "fi_sendv with 9 iovecs (iov_limit %zu) is "
	      "refused with -FI_EINVAL (%zd)",
	      g_info ? g_info->tx_attr->iov_limit : 0, r);
	stage_set(3);
	ep_close();
	close_all();
	free(sa);
	free(ra);
	free(wa);
	free(da);
}

/* ---- a child */

static void setenv_pair(const char *pair)
{
	char name[64];
	const char *eq = strchr(pair, '=');
	size_t n = eq ? (size_t)(eq - pair) : 0;

	if (!eq || n >= sizeof(name))
		return;
	memcpy(name, pair, n);
	name[n] = 0;
	setenv(name, eq + 1, 1);
}

/* ---- K_SPIN: FI_IWARP_SPIN_US */

/* The echo's delay: with nothing there for this long, a wait without
 * a spin sleeps every time (a faster echo could be there at the wait's
 * first look), and 10 ms of spin still cover it. */
#define SPIN_ECHO_DELAY_S 300e-6

/* Server: echoes SPIN_ROUNDS 8-octet messages, busy-polling its CQ. */
static void spin_server(void)
{
	struct sockaddr_storage name;
	struct fi_cq_msg_entry ce;
	uint64_t buf = 0;
	double ms, end, until;
	size_t len;
	int i = 0, ret = 0;
	bool go;

	go = !srv_listen(false, &name, &len);
	check(go, "listening%s%s", go ? "" : ": ", go ? "" : g_err);
	go = go && !srv_accept(&ms);
	check(go, "connected%s%s", go ? "" : ": ", go ? "" : g_err);
	end = tap_now() + CASE_S - 5;
	for (i = 0; go && i < SPIN_ROUNDS; i++) {
		ret = (int)fi_recv(g_ep, &buf, sizeof(buf), NULL, 0, &buf);
		while (!ret && (ret = (int)fi_cq_read(g_cq, &ce, 1)) ==
			       -FI_EAGAIN && tap_now() < end)
			ret = 0;
		if (ret != 1)
			break;
		for (until = tap_now() + SPIN_ECHO_DELAY_S; tap_now() < until;)
			;
		do
			ret = (int)fi_inject(g_ep, &buf, sizeof(buf), 0);
		while (ret == -FI_EAGAIN && tap_now() < end);
		if (ret)
			break;
	}
	check(go && i == SPIN_ROUNDS, "echoed %d of %d messages (last: %d)",
	      i, SPIN_ROUNDS, ret);
	stage_set(20);
	stage_wait(20, WAIT_S);
}

/* Client: SPIN_ROUNDS round trips, each waited for with fi_cq_sread;
 * the thread's voluntary context switches count its sleeps. */
static void spin_client(const struct kcase *kc)
{
	struct fi_cq_msg_entry ce;
	struct rusage r0, r1;
	uint64_t out, in = 0;
	long sleeps = -1;
	int i = 0, ret = 0;
	double ms;
	bool go, bound;

	go = !cli_open(false);
	check(go, "fi_getinfo for the server%s%s", go ? "" : ": ",
	      go ? "" : g_err);
	go = go && !cli_connect(&ms);
	check(go, "connected%s%s", go ? "" : ": ", go ? "" : g_err);
	getrusage(RUSAGE_THREAD, &r0);
	for (i = 0; go && i < SPIN_ROUNDS; i++) {
		out = 0x5350494e00000000ull | (uint64_t)i;
		ret = (int)fi_recv(g_ep, &in, sizeof(in), NULL, 0, &in);
		if (!ret)
			ret = (int)fi_inject(g_ep, &out, sizeof(out), 0);
		if (!ret)
			ret = (int)fi_cq_sread(g_cq, &ce, 1, NULL,
					       (int)(WAIT_S * 1000));
		if (ret != 1 || ce.op_context != &in || in != out)
			break;
	}
	getrusage(RUSAGE_THREAD, &r1);
	if (i == SPIN_ROUNDS)
		sleeps = r1.ru_nvcsw - r0.ru_nvcsw;
	bound = sleeps >= 0 && sleeps >= kc->min_sleeps &&
		(!kc->max_sleeps || sleeps <= kc->max_sleeps);
	check(bound, "%d of %d echoes by fi_cq_sread (last: %d); the waits "
	      "slept %ld times (expected %s %d)", i, SPIN_ROUNDS, ret, sleeps,
	      kc->max_sleeps ? "at most" : "at least",
	      kc->max_sleeps ? kc->max_sleeps : kc->min_sleeps);
	stage_set(20);
	stage_wait(20, WAIT_S);
}

static void child(const struct kcase *kc, int side, int logfd)
{
	static const char *const knobs[] = {
		"FI_IWARP_MPA_REV", "FI_IWARP_RTR", "FI_IWARP_RTR_DELAY_MS",
		"FI_IWARP_CRC", "FI_IWARP_RDM_EAGER", "FI_LOG_SUBSYS",
		"FI_IWARP_SPIN_US",
	};
	int i;

	me = side;
	alarm((unsigned int)CASE_S + 5);
	if (dup2(logfd, 2) < 0)
		_exit(3);
	for (i = 3; i < 1024; i++)	/* other cases' logs */
		close(i);
	for (i = 0; i < (int)(sizeof(knobs) / sizeof(knobs[0])); i++)
		unsetenv(knobs[i]);
	setenv("FI_IWARP_IFACE", "lo", 1);
	setenv("FI_LOG_LEVEL", "info", 1);
	setenv("FI_LOG_PROV", "iwarp", 1);
	for (i = 0; i < 4 && kc->env[side][i]; i++)
		setenv_pair(kc->env[side][i]);
	switch (kc->kind) {
	case K_MSG:
		run_msg(kc);
		break;
	case K_REFUSED:
		run_refused();
		break;
	case K_RDM:
		run_rdm(kc, false);
		break;
	case K_V6_RDM:
		run_rdm(kc, true);
		break;
	case K_V6_MSG:
		if (side)
			v6_client();
		else
			v6_server();
		break;
	case K_SG:
		if (side)
			sg_client();
		else
			sg_server();
		break;
	case K_SPIN:
		g_cq_fd = true;
		if (side)
			spin_client(kc);
		else
			spin_server();
		break;
	}
	close_all();
	exit(g_close_bad ? 1 : 0);
}

/* ---- the parent */

static char *log_read(int fd)
{
	off_t len = lseek(fd, 0, SEEK_END);
	char *b;

	if (len < 0)
		len = 0;
	b = malloc((size_t)len + 1);
	if (!b)
		return NULL;
	if (pread(fd, b, (size_t)len, 0) != len)
		len = 0;
	b[len] = 0;
	return b;
}

/*
 * Every "<ep> connected: MPA rev R[ enhanced], ..., RTR 0xT" line of a
 * log: how many, and whether each shows rev/enh/rtr. *bad gets the first
 * line that does not.
 */
static int log_connections(const char *log, const char *tag,
			   unsigned int rev, bool enh, unsigned int rtr,
			   char *bad, size_t badlen, int *nbad)
{
	const char *p = log;
	int n = 0;

	*nbad = 0;
	bad[0] = 0;
	while ((p = strstr(p, tag))) {
		const char *eol = strchr(p, '\n'), *r;
		unsigned int lrev = 0, lrtr = ~0u;
		bool lenh;
		size_t ll = eol ? (size_t)(eol - p) : strlen(p);
		char line[256];

		snprintf(line, sizeof(line), "%.*s", (int)ll, p);
		sscanf(line + strlen(tag), "%u", &lrev);
		lenh = strstr(line, " enhanced,") != NULL;
		r = strstr(line, ", RTR ");
		if (r)
			lrtr = (unsigned int)strtoul(r + 6, NULL, 16);
		if (lrev != rev || lenh != enh || lrtr != rtr) {
			if (!(*nbad)++)
				snprintf(bad, badlen, "%s", line);
		}
		n++;
		p += ll;
	}
	return n;
}

static void log_tail(const char *what, const char *log)
{
	const char *p = log + strlen(log);
	int lines = 0;

	while (p > log && lines < 12)
		if (*--p == '\n' && p[1])
			lines++;
	tap_diag("%s stderr (last lines):", what);
	while (*p) {
		const char *eol = strchr(p, '\n');
		int ll = eol ? (int)(eol - p) : (int)strlen(p);

		if (ll)
			printf("#   %.*s\n", ll > 200 ? 200 : ll, p);
		p += ll + (eol != NULL);
	}
}

static void log_check(const struct kcase *kc, int side, const char *log)
{
	const char *who = side_name(kc, side);
	char bad[256];
	int n, nbad;

	if (kc->kind == K_REFUSED) {
		n = log_connections(log, "MSG connected: MPA rev ", 0, false,
				    0, bad, sizeof(bad), &nbad);
		tap_ok(n == 0, "[%s] %s log: no 'MSG connected' line (%d)",
		       kc->name, who, n);
	} else if (kc->kind == K_MSG) {
		n = log_connections(log, "MSG connected: MPA rev ", kc->rev,
				    kc->enh, kc->rtr, bad, sizeof(bad), &nbad);
		tap_ok(n == 2 && !nbad, "[%s] %s log: 2 connections with MPA "
		       "rev %u%s, RTR %#x (%d lines, %d other%s%s)", kc->name,
		       who, kc->rev, kc->enh ? " enhanced" : "", kc->rtr, n,
		       nbad, nbad ? ": " : "", bad);
	} else {
		n = log_connections(log, "RDM connected: MPA rev ", kc->rev,
				    kc->enh, kc->rtr, bad, sizeof(bad), &nbad);
		tap_ok(n >= 1 && !nbad, "[%s] %s log: RDM connections with "
		       "MPA rev %u%s, RTR %#x, unaffected by the MSG knobs "
		       "(%d lines, %d other%s%s)", kc->name, who, kc->rev,
		       kc->enh ? " enhanced" : "", kc->rtr, n, nbad,
		       nbad ? ": " : "", bad);
	}
	if (kc->warn[side])
		tap_ok(strstr(log, kc->warn[side]) != NULL,
		       "[%s] %s log has \"%s\"", kc->name, who,
		       kc->warn[side]);
}

static bool have_ipv6(char *why, size_t len)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int fd = socket(AF_INET6, SOCK_STREAM, 0);

	if (fd < 0) {
		snprintf(why, len, "no IPv6 sockets (%s)", strerror(errno));
		return false;
	}
	if (bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		snprintf(why, len, "no ::1 on lo (%s)", strerror(errno));
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

/* A case that measures time runs alone; the others share the machine. */
static bool case_alone(const struct kcase *kc)
{
	return kc->min_ms[0] || kc->min_ms[1] || kc->max_ms[0] ||
	       kc->max_ms[1] || kc->kind == K_SPIN;
}

static bool case_skipped(const struct kcase *kc, bool v6ok)
{
	return (kc->kind == K_V6_MSG || kc->kind == K_V6_RDM) && !v6ok;
}

struct run {
	pid_t pid[2];
	int logfd[2];
	double t0;
};

static struct shm *shms;	/* one per case */
static struct run runs[NCASES];

static void case_start(size_t i, bool v6ok)
{
	struct run *r = &runs[i];
	int s;

	r->t0 = tap_now();
	r->pid[0] = r->pid[1] = -1;
	r->logfd[0] = r->logfd[1] = -1;
	if (case_skipped(&cases[i], v6ok))
		return;
	sh = &shms[i];
	memset(sh, 0, sizeof(*sh));
	for (s = 0; s < 2; s++)
		r->logfd[s] = memfd_create(s ? "knobs-1" : "knobs-0", 0);
	for (s = 0; s < 2; s++) {
		fflush(stdout);
		fflush(stderr);
		r->pid[s] = r->logfd[s] >= 0 ? fork() : -1;
		if (r->pid[s] == 0)
			child(&cases[i], s, r->logfd[s]);
	}
}

static void case_finish(size_t i, bool v6ok, const char *why)
{
	const struct kcase *kc = &cases[i];
	struct run *r = &runs[i];
	int s, k, before = tap_failed;
	char *log[2], what[96];

	if (case_skipped(kc, v6ok)) {
		for (k = case_lines(kc); k > 0; k--)
			tap_ok(1, "# SKIP [%s] %s", kc->name, why);
		return;
	}
	sh = &shms[i];
	for (s = 0; s < 2; s++) {
		double left = CASE_S - (tap_now() - r->t0);

		snprintf(what, sizeof(what), "[%s] %s", kc->name,
			 side_name(kc, s));
		tap_child(r->pid[s], left > 1 ? left : 1, what);
	}
	for (s = 0; s < 2; s++) {
		int want = side_checks(kc, s), got = sh->nchk[s];

		for (k = 0; k < want; k++) {
			struct chk *c = &sh->chk[s][k];
			bool last_bad = k == want - 1 && got > want;

			if (!c->st)
				tap_ok(0, "[%s] %s: check %d of %d never "
				       "reached (the process ended early)",
				       kc->name, side_name(kc, s), k + 1,
				       want);
			else
				tap_ok(c->st == 1 && !last_bad, "[%s] %s: %s%s",
				       kc->name, side_name(kc, s), c->text,
				       last_bad ? " (and more checks than "
				       "counted: test bug)" : "");
		}
	}
	for (s = 0; s < 2; s++) {
		log[s] = r->logfd[s] >= 0 ? log_read(r->logfd[s]) : NULL;
		if (!log[s])
			log[s] = strdup("");
		if (log_checks(kc, s))
			log_check(kc, s, log[s] ? log[s] : "");
	}
	if (tap_failed != before)
		for (s = 0; s < 2; s++)
			log_tail(side_name(kc, s), log[s] ? log[s] : "");
	for (s = 0; s < 2; s++) {
		free(log[s]);
		if (r->logfd[s] >= 0)
			close(r->logfd[s]);
	}
	tap_diag("[%s] %.2f s", kc->name, tap_now() - r->t0);
}

#define WINDOW 4	/* cases at a time */

int main(void)
{
	char why[96] = "";
	bool v6ok = have_ipv6(why, sizeof(why));
	size_t started = 0, finished = 0;

	shms = mmap(NULL, sizeof(*shms) * NCASES, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shms == MAP_FAILED) {
		tap_ok(0, "mmap of the shared check slots: %s",
		       strerror(errno));
		return tap_done();
	}
	/* cases finish (and print) in order; one that measures time starts
	 * only when nothing runs, and nothing starts beside it */
	while (finished < NCASES) {
		while (started < NCASES && started - finished < WINDOW) {
			if (started > finished &&
			    (case_alone(&cases[started]) ||
			     case_alone(&cases[started - 1])))
				break;
			case_start(started++, v6ok);
		}
		case_finish(finished++, v6ok, why);
	}
	return tap_done();
}
