/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The same-host transport of FI_EP_RDM (rdm_shm.c) between real
 * processes, through the public libfabric API. Each case forks two
 * endpoint processes A and B; they meet through a shared page of the
 * parent, which also holds their verdicts, so a child that crashes or
 * hangs leaves failures, never missing lines:
 * - tagged messages of 8 B, 64 KiB (eager) and 4 MiB (rendezvous) arrive
 *   intact both ways, and the peer is in shared memory: a segment in
 *   /dev/shm is mapped and already unlinked; after the first 8 B, every
 *   page of both segments is already in the page tables
 *   (/proc/self/pagemap), so no message waits on a page fault;
 * - FI_IWARP_SHM=0 on one side keeps both on TCP (nothing mapped);
 * - B killed (SIGKILL) while A's 4 MiB send waits for it: that send ends
 *   with an error completion carrying its context, no hang;
 * - B writes random bytes over A's ring, or publishes slots of random
 *   bytes with the transport's types and random lengths: A names the
 *   violation in a warning, fails its pending send, survives (an ASan
 *   build checks nothing is read or written out of bounds), and the two
 *   talk again on a new connection;
 * - 500 fetching atomics back to back, each waited for, against a target
 *   that never calls libfabric (its progress thread alone answers them):
 *   every one completes, in order, with the value before it;
 * - both processes on one core under SCHED_FIFO, each spinning on
 *   fi_cq_read for 256 KiB rendezvous messages that only the other's
 *   progress completes, over shared memory and over TCP: all 20 complete
 *   (the provider yields after a run of empty reads; needs the right to
 *   SCHED_FIFO, else skipped), and once its yields have handed the core
 *   over, each yields after fewer empty reads than on a core of its own;
 * - right after connecting, while connection setup keeps progress hot
 *   for a few ms, a caller spinning on fi_cq_read makes at most one
 *   poll() per 10 us (IWARP_RARE_HOT_US), not one per call (poll() is
 *   counted by a definition here that the provider binds to);
 * - /dev/shm too small for a segment (a private tmpfs of 64 KiB; needs
 *   CAP_SYS_ADMIN, else skipped): a warning, and both stay on TCP;
 * - no segment of any of these processes is left in /dev/shm.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/mount.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "tap.h"
#include "fi_api.h"

#define BIG (4u << 20)
#define MAXV 16

/* late sends in the sleep case */
#define SLEEP_LATE 7

/* What the parent and both children share. */
struct board {
	struct sockaddr_in name[2];	/* A's and B's, once open */
	volatile int ready[2];
	volatile int step[2];		/* how far each side got */
	volatile int v[MAXV];		/* 0 not reported, 1 ok, 2 failed */
	uint64_t key, addr;		/* B's region for atomics */
	double sent[SLEEP_LATE];	/* when B sent (the sleep case) */
	char msg[MAXV][160];
};

static struct board *bd;
static int vbase;			/* this case's first verdict */
static uint64_t caps = FI_TAGGED;	/* FI_ATOMIC in the atomics case */
static enum fi_wait_obj cq_wait = FI_WAIT_NONE;	/* FD: the sleep case */
static double reap_secs = 30;		/* how long exchange() waits */
static unsigned long empty_reads;	/* fi_cq_read -FI_EAGAIN in reap() */

struct ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t peer;
	char log[64];
};

static void verdict(int i, bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(bd->msg[vbase + i], sizeof(bd->msg[0]), fmt, ap);
	va_end(ap);
	bd->v[vbase + i] = ok ? 1 : 2;
}

/* Waits (bounded) until the other side reached step s. */
static bool wait_step(int other, int s, double secs)
{
	double end = tap_now() + secs;

	while (bd->step[other] < s && tap_now() < end)
		usleep(1000);
	return bd->step[other] >= s;
}

/* Opens an endpoint, logs to a file of its own, meets the peer. */
static int ep_open(struct ep *e, int me)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED,
				      .wait_obj = cq_wait };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_info *hints = fi_allocinfo();
	size_t len = sizeof(bd->name[0]);
	double end;
	int fd, ret;

	snprintf(e->log, sizeof(e->log), "/tmp/iwshm-test-%d.log", getpid());
	fd = open(e->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd >= 0) {
		dup2(fd, 2);
		close(fd);
	}
	setenv("FI_IWARP_IFACE", "lo", 1);
	setenv("FI_LOG_LEVEL", "info", 1);
	hints->fabric_attr->prov_name = strdup("iwarp");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = caps;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	ret = fi_getinfo(TEST_API, NULL, NULL, 0, hints, &e->info);
	fi_freeinfo(hints);
	if (!ret)
		ret = fi_fabric(e->info->fabric_attr, &e->fabric, NULL);
	if (!ret)
		ret = fi_domain(e->fabric, e->info, &e->domain, NULL);
	if (!ret)
		ret = fi_endpoint(e->domain, e->info, &e->ep, NULL);
	if (!ret)
		ret = fi_cq_open(e->domain, &cq_attr, &e->cq, NULL);
	if (!ret)
		ret = fi_av_open(e->domain, &av_attr, &e->av, NULL);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->av->fid, 0);
	if (!ret)
		ret = fi_enable(e->ep);
	if (!ret)
		ret = fi_getname(&e->ep->fid, &bd->name[me], &len);
	if (ret)
		return ret;
	bd->ready[me] = 1;
	end = tap_now() + 20;
	while (!bd->ready[!me] && tap_now() < end)
		usleep(1000);
	if (!bd->ready[!me])
		return -FI_ETIMEDOUT;
	return fi_av_insert(e->av, &bd->name[!me], 1, &e->peer, 0, NULL) == 1 ?
	       0 : -FI_EINVAL;
}

/* One completion (1), an error (-1, *err filled) or nothing (0). */
static int reap(struct ep *e, double secs, struct fi_cq_err_entry *err,
		void **ctx)
{
	struct fi_cq_tagged_entry c;
	double end = tap_now() + secs;

	while (tap_now() < end) {
		ssize_t n = fi_cq_read(e->cq, &c, 1);

		if (n == 1) {
			*ctx = c.op_context;
			return 1;
		}
		if (n == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			fi_cq_readerr(e->cq, err, 0);
			*ctx = err->op_context;
			return -1;
		}
		empty_reads += n == -FI_EAGAIN;
	}
	return 0;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 9));
}

/* Sends len octets tagged tag and receives as many; true when both
 * completed and the data is what the peer's fill() made. */
static bool exchange(struct ep *e, size_t len, uint64_t tag, int me)
{
	uint8_t *out = malloc(len ? len : 1), *in = calloc(1, len ? len : 1);
	struct fi_cq_err_entry err;
	uint8_t *want = malloc(len ? len : 1);
	int got = 0, i, r;
	void *ctx;
	bool ok = out && in && want;

	if (ok) {
		fill(out, len, (unsigned)me + (unsigned)tag);
		fill(want, len, (unsigned)!me + (unsigned)tag);
		ok = !fi_trecv(e->ep, in, len, NULL, e->peer, tag, 0, in) &&
		     !fi_tsend(e->ep, out, len, NULL, e->peer, tag, out);
	}
	for (i = 0; ok && i < 2; i++) {
		r = reap(e, reap_secs, &err, &ctx);
		ok = r == 1 && (ctx == in || ctx == out);
		got += ok;
	}
	ok = ok && got == 2 && !memcmp(in, want, len);
	free(out);
	free(in);
	free(want);
	return ok;
}

/* Whether this process maps a segment of the transport, unlinked. */
static int shm_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/dev/shm/iwarp-shm-") &&
		    strstr(line, "(deleted)"))
			n++;
	fclose(f);
	return n;
}

/* Pages of this process's segments that are not in its page tables
 * (/proc/self/pagemap, bit 63); -1 when unreadable or none mapped. */
static long shm_pages_absent(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int pm = open("/proc/self/pagemap", O_RDONLY);
	long psz = sysconf(_SC_PAGESIZE), absent = 0, seen = 0;
	unsigned long lo, hi, a;
	char line[512];
	uint64_t e;

	while (f && pm >= 0 && fgets(line, sizeof(line), f)) {
		if (!strstr(line, "/dev/shm/iwarp-shm-") ||
		    sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		for (a = lo; a < hi; a += (unsigned long)psz, seen++)
			if (pread(pm, &e, sizeof(e), (off_t)(a / psz * 8)) !=
				    sizeof(e) || !(e >> 63 & 1))
				absent++;
	}
	if (f)
		fclose(f);
	if (pm >= 0)
		close(pm);
	return seen ? absent : -1;
}

static bool log_has(const struct ep *e, const char *what)
{
	char line[1024];
	bool found = false;
	FILE *f;

	fflush(stderr);
	f = fopen(e->log, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, what) != NULL;
	fclose(f);
	return found;
}

static void ep_close(struct ep *e)
{
	if (e->ep)
		fi_close(&e->ep->fid);
	if (e->av)
		fi_close(&e->av->fid);
	if (e->cq)
		fi_close(&e->cq->fid);
	if (e->domain)
		fi_close(&e->domain->fid);
	if (e->fabric)
		fi_close(&e->fabric->fid);
	fi_freeinfo(e->info);
	unlink(e->log);
}

/* ---- the cases, as each child runs them */

/* 0: data both ways; 1: in shared memory; 2: segments mapped whole */
static void case_data(struct ep *e, int me)
{
	bool ok = exchange(e, 8, 1, me);
	long absent = shm_pages_absent();
	int m;

	ok = ok && exchange(e, 65536, 2, me) && exchange(e, BIG, 3, me);
	m = shm_mapped();
	if (me)
		return;
	verdict(2, absent == 0, "shm: after one 8 B message each way, every "
		"page of both segments is mapped (%ld absent)", absent);
	verdict(0, ok, "shm: 8 B, 64 KiB and 4 MiB tagged messages arrive "
		"intact both ways");
	verdict(1, ok && m == 2 && log_has(e, ": shared memory ("),
		"shm: the peer is in shared memory (%d segments mapped and "
		"unlinked, the choice logged)", m);
}

/*
 * A small message's header leaves its trailing zero octets home (slot
 * type 7). Tag and CQ data are the header's octets 16-31 (fi_iwarp.7):
 * each of them in turn is its last non-zero one, then tags and data with
 * random zero octets, each with 0-8 payload octets; B checks each as it
 * completes. 0: the verdict (B).
 */
#define NHDR 64

static void hdr_case(int i, uint64_t *tag, uint64_t *data)
{
	static uint64_t x = 0x9e3779b97f4a7c15ull;
	uint64_t z;
	int k;

	if (i < 16) {
		*tag = i < 8 ? 0xa5ull << (8 * (7 - i)) : 0;
		*data = i < 8 ? 0 : 0x5aull << (8 * (15 - i));
		return;
	}
	x = x * 6364136223846793005ull + 1442695040888963407ull;
	z = x ^ x >> 29;
	*tag = z;
	*data = z * 31 + (uint64_t)i;
	for (k = 0; k < 8; k++) {	/* octets cleared at random */
		if (z >> (32 + k) & 1)
			*tag &= ~(0xffull << (8 * k));
		if (z >> (40 + k) & 1)
			*data &= ~(0xffull << (8 * k));
	}
}

static void case_hdrs(struct ep *e, int me)
{
	struct fi_cq_tagged_entry c;
	struct fi_cq_err_entry err;
	uint8_t out[8], in[8];
	uint64_t tag, data;
	char why[160] = "";
	double end;
	void *ctx;
	int i, k;
	size_t len;

	for (i = 0; i < NHDR && !why[0]; i++) {
		hdr_case(i, &tag, &data);
		len = (size_t)i % 9;
		for (k = 0; k < 8; k++)
			out[k] = (uint8_t)(i * 8 + k + 1);
		if (!me) {
			if (fi_tsenddata(e->ep, out, len, NULL, data, e->peer,
					 tag, out) ||
			    reap(e, 10, &err, &ctx) != 1 || ctx != out)
				snprintf(why, sizeof(why), "send %d failed", i);
			continue;
		}
		memset(in, 0, sizeof(in));
		if (fi_trecv(e->ep, in, sizeof(in), NULL, e->peer, 0, ~0ull,
			     in)) {
			snprintf(why, sizeof(why), "receive %d not posted", i);
			break;
		}
		end = tap_now() + 10;
		while (fi_cq_read(e->cq, &c, 1) != 1 && tap_now() < end)
			;
		if (c.op_context != in || c.tag != tag || c.len != len ||
		    !(c.flags & FI_REMOTE_CQ_DATA) || c.data != data ||
		    memcmp(in, out, len))
			snprintf(why, sizeof(why), "message %d: tag %#" PRIx64
				 " data %#" PRIx64 " len %zu, sent %#" PRIx64
				 " %#" PRIx64 " %zu", i, c.tag, c.data, c.len,
				 tag, data, len);
	}
	if (!me)
		return;
	verdict(0, !why[0] && log_has(e, ": shared memory ("),
		"shm: %d small messages, each octet of tag and CQ data in "
		"turn the header's last non-zero one, arrive as sent%s%s",
		NHDR, why[0] ? ": " : "", why);
}

/* B off: 0 data, 1 nothing mapped on either side */
static void case_off(struct ep *e, int me)
{
	bool ok = exchange(e, 8, 1, me) && exchange(e, BIG, 3, me);
	int m = shm_mapped();

	verdict(me * 2, ok, "FI_IWARP_SHM=0 on B: messages flow (%s)",
		me ? "B" : "A");
	/* B runs the iWARP transport alone: no choice to log */
	verdict(me * 2 + 1, m == 0 && (me || log_has(e, ": TCP (")),
		"FI_IWARP_SHM=0 on B: %s maps no segment (%d)%s",
		me ? "B" : "A", m, me ? "" : ", logs TCP");
}

/* B is killed while A's rendezvous send waits for its FIN. */
static void case_kill(struct ep *e, int me)
{
	static uint8_t big[BIG];
	struct fi_cq_err_entry err;
	double t0;
	void *ctx = NULL;
	int r;

	if (!exchange(e, 8, 1, me) || me) {
		if (me)
			pause();	/* until killed */
		return;
	}
	r = fi_tsend(e->ep, big, BIG, NULL, e->peer, 9, big);
	bd->step[0] = 1;	/* the parent kills B now */
	t0 = tap_now();
	r = r ? 0 : reap(e, 30, &err, &ctx);
	verdict(0, r == -1 && ctx == big && err.err,
		"kill: the 4 MiB send to the killed peer ends in an error "
		"(%d, %s) with its context after %.1f s", err.err,
		fi_strerror(err.err), tap_now() - t0);
}

/* Drives progress for secs, whatever completes. */
static void drive(struct ep *e, double secs)
{
	struct fi_cq_tagged_entry c;
	struct fi_cq_err_entry err;
	double end = tap_now() + secs;

	while (tap_now() < end)
		if (fi_cq_read(e->cq, &c, 1) == -FI_EAVAIL)
			fi_cq_readerr(e->cq, &err, 0);
}

/* The segment layout (fi_iwarp.7): the consumer counter at 128, slots of
 * 8 KiB from 256, each a type, a length and a sequence number first. */
#define SEG_TAIL 128
#define SEG_SLOTS 256
#define SLOT 8192
#define NSLOT 48

/* Where B's producer stands in A's ring: A consumed all before, so at
 * A's counter. */
static uint64_t ring_head(const uint8_t *seg)
{
	return __atomic_load_n((const uint64_t *)(seg + SEG_TAIL),
			       __ATOMIC_ACQUIRE);
}

/* B publishes slot number k as its producer would: type, length and n
 * octets of data, its sequence number (k + 1) last. */
static void publish(uint8_t *seg, uint64_t k, uint32_t type, uint32_t len,
		    const uint8_t *data, size_t n)
{
	uint8_t *s = seg + SEG_SLOTS + (k % NSLOT) * SLOT;

	memcpy(s, &type, 4);
	memcpy(s + 4, &len, 4);
	memcpy(s + 16, data, n);
	__atomic_store_n((uint64_t *)(s + 8), k + 1, __ATOMIC_RELEASE);
}

/* A single-slot message (type 7) whose header length octet says 41, one
 * more than an RDM header has: A must refuse it, not read past it. */
static void forge_small(uint8_t *seg)
{
	uint8_t d[64] = { 41 };

	publish(seg, ring_head(seg), 7, sizeof(d), d, sizeof(d));
}

/* B publishes n slots of random bytes, with types of the transport and
 * random lengths. */
static void forge(uint8_t *seg, int n)
{
	static uint8_t data[SLOT - 16];
	uint64_t head = ring_head(seg);
	int i, k;

	srand(12345);
	for (i = 0; i < n; i++) {
		uint32_t type = 1 + (uint32_t)rand() % 7;
		uint32_t len = (uint32_t)rand() % (SLOT + 64);

		for (k = 0; k < 16; k++)
			(void)rand();	/* the header's: publish writes it */
		for (k = 0; k < (int)sizeof(data); k++)
			data[k] = (uint8_t)rand();
		publish(seg, head + (uint64_t)i, type, len, data,
			sizeof(data));
	}
}

enum { SCRIBBLE, FRAMES, SMALL };

/* B scribbles over A's ring: random bytes everywhere, forged slots, or
 * one forged small message. */
static void scribble(pid_t owner, int how)
{
	char line[512], want[64];
	unsigned long lo, hi;
	FILE *f = fopen("/proc/self/maps", "r");
	uint8_t *p;

	snprintf(want, sizeof(want), "/dev/shm/iwarp-shm-%d-", (int)owner);
	while (f && fgets(line, sizeof(line), f)) {
		if (!strstr(line, want) ||
		    sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		if (how == FRAMES) {
			forge((uint8_t *)lo, NSLOT / 2);
			continue;
		}
		if (how == SMALL) {
			forge_small((uint8_t *)lo);
			continue;
		}
		srand((unsigned)getpid());
		for (p = (uint8_t *)lo; p < (uint8_t *)hi; p++)
			*p = (uint8_t)rand();
	}
	if (f)
		fclose(f);
}

static void case_scribble(struct ep *e, int me, pid_t a, int how)
{
	const char *what = how == FRAMES ? "forged slots" :
			   how == SMALL ? "forged small message" : "scribble";
	static uint8_t big[BIG];
	struct fi_cq_err_entry err;
	void *ctx = NULL;
	int r;

	if (!exchange(e, 8, 1, me))
		return;
	if (me) {
		wait_step(0, 1, 20);
		scribble(a, how);
		bd->step[1] = 1;
	} else {
		r = fi_tsend(e->ep, big, BIG, NULL, e->peer, 9, big);
		bd->step[0] = 1;
		wait_step(1, 1, 20);
		r = r ? 0 : reap(e, 30, &err, &ctx);
		verdict(0, r == -1 && ctx == big,
			"%s: A's pending send fails (%d) with its context",
			what, err.err);
		verdict(1, log_has(e, "shared memory violated ("),
			"%s: A logs the violation", what);
		if (how == SMALL)
			verdict(3, log_has(e, "a message header out of range"),
				"%s: A names it (a message header out of "
				"range)", what);
		bd->step[0] = 2;
	}
	/* B hears A closed the connection before it sends again */
	if (me && wait_step(0, 2, 40))
		drive(e, 1);
	/* both survived; a new connection carries data again */
	r = exchange(e, 65536, 5, me);
	if (!me)
		verdict(2, r, "%s: afterwards A and B exchange 64 KiB "
			"messages again", what);
}

static void case_full(struct ep *e, int me)
{
	bool ok = exchange(e, 8, 1, me) && exchange(e, BIG, 3, me);

	if (me)
		return;
	verdict(0, ok && shm_mapped() == 0 &&
		log_has(e, "no shared memory segment"),
		"/dev/shm full: a warning, both on TCP, messages flow");
}

/*
 * A busy-polls, then sleeps in poll() on its CQ's wait fd (fi_trywait
 * first, as fi_trywait(3) has it) with nothing else to wake it; B sends over
 * shared memory once A is asleep. Only B ringing A's doorbell can end
 * that sleep before its 10 s. Then a blocking fi_cq_sread ping-pong.
 */
static void case_sleep(struct ep *e, int me)
{
	static uint8_t in[64], out[64];
	struct fi_cq_tagged_entry c;
	struct pollfd pf = { .events = POLLIN };
	struct fid *f = &e->cq->fid;
	int i, wakes = 0, fd = -1, rounds = 0;
	double t0 = 0, left;
	ssize_t n = -FI_EAGAIN;
	bool ok = exchange(e, 8, 1, me);

	if (me) {
		ok = ok && wait_step(0, 1, 30);
		usleep(300000);		/* A is asleep by now */
		ok = ok && !fi_tsend(e->ep, out, 8, NULL, e->peer, 5, out) &&
		     fi_cq_sread(e->cq, &c, 1, NULL, 10000) == 1;
		for (i = 0; ok && i < 100; i++) {
			ok = !fi_trecv(e->ep, in, 8, NULL, e->peer, 6, 0, in) &&
			     fi_cq_sread(e->cq, &c, 1, NULL, 10000) == 1 &&
			     c.op_context == in &&
			     !fi_tsend(e->ep, out, 8, NULL, e->peer, 7, out) &&
			     fi_cq_sread(e->cq, &c, 1, NULL, 10000) == 1 &&
			     c.op_context == out;
		}
		for (i = 0; ok && i < SLEEP_LATE; i++) {
			ok = wait_step(0, 2 + i, 30);
			usleep(150000);	/* A sleeps in fi_cq_sread by now */
			bd->sent[i] = tap_now();
			ok = ok &&
			     !fi_tsend(e->ep, out, 8, NULL, e->peer, 8, out) &&
			     fi_cq_sread(e->cq, &c, 1, NULL, 10000) == 1 &&
			     c.op_context == out;
		}
		return;
	}
	ok = ok && !fi_trecv(e->ep, in, 8, NULL, e->peer, 5, 0, in) &&
	     !fi_control(f, FI_GETWAIT, &fd);
	pf.fd = fd;
	/* long enough a busy poll that A stops announcing it may sleep
	 * (the peer then skips its fence): the sleep below raises it again */
	for (i = 0; ok && i < 150000; i++)
		if (fi_cq_read(e->cq, &c, 1) != -FI_EAGAIN)
			ok = false;
	bd->step[0] = 1;
	t0 = tap_now();
	/* the fi_trywait(3) loop; a wakeup may find nothing yet */
	while (ok && n == -FI_EAGAIN && (left = t0 + 10 - tap_now()) > 0) {
		if (fi_trywait(e->fabric, &f, 1) == 0) {
			if (poll(&pf, 1, (int)(left * 1000) + 1) != 1)
				break;
			wakes++;
		}
		n = fi_cq_read(e->cq, &c, 1);
	}
	verdict(0, ok && n == 1 && c.op_context == in,
		"sleep: asleep on the CQ's wait fd, woken by the peer's send "
		"over shared memory after %.2f s (%d wakeups, read %zd)",
		tap_now() - t0, wakes, n);
	for (i = 0; ok && i < 100; i++) {
		if (fi_trecv(e->ep, in, 8, NULL, e->peer, 7, 0, in) ||
		    fi_tsend(e->ep, out, 8, NULL, e->peer, 6, out) ||
		    fi_cq_sread(e->cq, &c, 1, NULL, 10000) != 1 ||
		    fi_cq_sread(e->cq, &c, 1, NULL, 10000) != 1)
			break;
		rounds++;
	}
	verdict(1, ok && rounds == 100 && log_has(e, "woken by the peer"),
		"sleep: 100 round trips of blocking fi_cq_sread, %d done; "
		"the doorbell logged", rounds);
	/* a sleep in fi_cq_sread ends on the doorbell, not on its slice of
	 * IWARP_WAIT_SLICE_MS: each late send is seen within 20 ms (one
	 * late wakeup allowed, for a busy machine) */
	wakes = 0;
	for (i = 0; ok && rounds == 100 && i < SLEEP_LATE; i++) {
		if (fi_trecv(e->ep, in, 8, NULL, e->peer, 8, 0, in))
			break;
		bd->step[0] = 2 + i;
		if (fi_cq_sread(e->cq, &c, 1, NULL, 10000) != 1 ||
		    c.op_context != in)
			break;
		left = tap_now() - bd->sent[i];
		wakes += left < 0.02;
	}
	verdict(2, i == SLEEP_LATE && wakes >= SLEEP_LATE - 1,
		"sleep: %d of %d fi_cq_sread woken within 20 ms of the peer's "
		"send 150 ms later (the last after %.1f ms)", wakes, i,
		i ? left * 1000 : 0.0);
}

/*
 * Both processes on one processor under SCHED_FIFO, where a process
 * gives the processor up only by blocking or yielding: each spins on
 * fi_cq_read for rendezvous messages that only the other's progress can
 * complete (Open MPI's blocking send spins on its CQ alone like this).
 * Without the provider yielding after a run of empty reads, the first
 * to spin keeps the processor and both time out. Every yield here hands
 * the core over, so after the first few the provider yields after
 * IWARP_IDLE_YIELD_SHARED (16) empty reads, not 256: in each of the last
 * exchanges each side spins through far fewer than 256.
 */
#define CORE_MSGS 20
#define CORE_LEN (256u << 10)
#define CORE_LAST 10
#define CORE_SPIN_MAX 128	/* mean empty reads per exchange */

static int core_pin(void)
{
	struct sched_param sp = { .sched_priority = 1 };
	cpu_set_t set;
	int cpu = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	while (cpu < CPU_SETSIZE - 1 && !CPU_ISSET(cpu, &set))
		cpu++;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) ||
	    sched_setscheduler(0, SCHED_FIFO, &sp))
		return -errno;
	return 0;
}

static void case_core(struct ep *e, int me, bool tcp)
{
	int ret = core_pin(), i = 0;
	unsigned long from = 0, spin;
	bool ok = !ret;

	/* both pinned before either spins (the wait sleeps) */
	bd->step[me] = 1;
	ok = wait_step(!me, 1, 20) && ok;
	reap_secs = 10;
	while (ok && i < CORE_MSGS) {
		if (i == CORE_MSGS - CORE_LAST)
			from = empty_reads;
		if (!exchange(e, CORE_LEN, 20 + i, me))
			break;
		i++;
	}
	spin = (empty_reads - from) / CORE_LAST;
	verdict(me, ok && i == CORE_MSGS && (tcp || shm_mapped() == 2) &&
		spin < CORE_SPIN_MAX,
		"one core, SCHED_FIFO, %s: %s: %d of %d exchanges of 256 KiB "
		"spinning on fi_cq_read, %lu empty reads each in the last %d "
		"(< %d; pin: %s)",
		tcp ? "TCP" : "shared memory", me ? "B" : "A", i, CORE_MSGS,
		spin, CORE_LAST, CORE_SPIN_MAX, strerror(-ret));
}

/*
 * Many fetching atomics back to back, one at a time: A waits for each;
 * B never calls into libfabric, so only its progress thread serves them.
 */
#define NATOMIC 500

static void case_atomic(struct ep *e, int me)
{
	static uint32_t mem[2];
	struct fi_cq_err_entry err;
	struct fid_mr *mr = NULL;
	uint32_t opnd, old = 0;
	void *ctx = NULL;
	int i, r = 1;

	if (me) {
		if (fi_mr_reg(e->domain, mem, sizeof(mem), FI_REMOTE_READ |
			      FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL))
			return;
		mem[0] = UINT32_MAX;
		bd->key = fi_mr_key(mr);
		bd->addr = e->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
				   (uintptr_t)mem : 0;
		bd->step[1] = 1;
		wait_step(0, 1, 600);
		fi_close(&mr->fid);
		return;
	}
	wait_step(1, 1, 30);
	for (i = 0; i < NATOMIC && r == 1; i++) {
		opnd = UINT32_MAX - 1 - (uint32_t)i;
		r = fi_fetch_atomic(e->ep, &opnd, 1, NULL, &old, NULL, e->peer,
				    bd->addr, bd->key, FI_UINT32, FI_MIN,
				    &old) ? 0 : reap(e, 10, &err, &ctx);
		if (r == 1 && (ctx != &old || old != opnd + 1))
			r = 0;
	}
	bd->step[0] = 1;
	verdict(0, r == 1 && i == NATOMIC, "atomics: %d fetching FI_MIN of "
		"%d completed in order, the target served only by its "
		"progress thread (at %d: %s)", i - (r != 1), NATOMIC, i,
		r == 1 ? "none failed" : r ? fi_strerror(err.err) :
		"no completion within 10 s or a wrong value");
	verdict(1, log_has(e, ": shared memory ("),
		"atomics: the peer is in shared memory");
}

/* ---- the parent */

/*
 * A's first 6 ms from its first send (which starts the connection and
 * makes progress hot for 5 ms), spinning on fi_cq_read: its poll()
 * calls, counted below. 0: at most one per 10 us (A); 1: B received.
 */
#define HOT_WINDOW 0.006
#define HOT_RARE_US 10
#define HOT_SLACK 50

static volatile bool count_polls;
static unsigned long polls;

/* ahead of libc's in the lookup, so the provider's calls come here
 * (the program exports it: test/Makefile.include) */
__attribute__((visibility("default"))) int poll(struct pollfd *fds, nfds_t n,
					  int timeout)
{
	static int (*real)(struct pollfd *, nfds_t, int);

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "poll");
	polls += count_polls;
	return real ? real(fds, n, timeout) : -1;
}

static void case_hot(struct ep *e, int me)
{
	uint8_t buf[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, in[8] = { 0 };
	struct fi_cq_tagged_entry c;
	struct fi_cq_err_entry err;
	unsigned long calls = 0, most;
	double t0, el = 0;
	int sent = 0;
	void *ctx;

	if (me) {
		bool ok = !fi_trecv(e->ep, in, sizeof(in), NULL, e->peer, 5,
				    0, in) &&
			  reap(e, 10, &err, &ctx) == 1 && ctx == in &&
			  !memcmp(in, buf, sizeof(in));

		verdict(1, ok, "hot: B received A's 8 B");
		return;
	}
	polls = 0;
	count_polls = true;
	t0 = tap_now();
	if (!fi_tsend(e->ep, buf, sizeof(buf), NULL, e->peer, 5, buf))
		while ((el = tap_now() - t0) < HOT_WINDOW) {
			sent += fi_cq_read(e->cq, &c, 1) == 1;
			calls++;
		}
	count_polls = false;
	most = (unsigned long)(el * 1e6 / HOT_RARE_US) + HOT_SLACK;
	while (!sent && reap(e, 10, &err, &ctx) == 1)
		sent += ctx == buf;
	verdict(0, sent == 1 && polls <= most, "hot: spinning for %.1f ms "
		"from connecting: %lu poll() in %lu fi_cq_read (at most %lu), "
		"the send completed (%d)", el * 1e3, polls, calls, most, sent);
}

enum { C_DATA, C_OFF, C_KILL, C_SCRIBBLE, C_FRAMES, C_FULL, C_ATOMIC,
       C_SLEEP, C_CORE, C_CORE_TCP, C_SMALL, C_HDRS,
       C_HOT };

static void child(int which, int me, pid_t a)
{
	struct ep e;
	int ret;

	memset(&e, 0, sizeof(e));
	if ((which == C_OFF && me) || which == C_CORE_TCP)
		setenv("FI_IWARP_SHM", "0", 1);
	if (which == C_ATOMIC)
		caps = FI_TAGGED | FI_ATOMIC;
	if (which == C_SLEEP)
		cq_wait = FI_WAIT_FD;
	ret = ep_open(&e, me);
	if (ret) {
		fprintf(stderr, "endpoint: %d\n", ret);
		_exit(3);
	}
	switch (which) {
	case C_DATA: case_data(&e, me); break;
	case C_OFF: case_off(&e, me); break;
	case C_KILL: case_kill(&e, me); break;
	case C_SCRIBBLE: case_scribble(&e, me, a, SCRIBBLE); break;
	case C_FRAMES: case_scribble(&e, me, a, FRAMES); break;
	case C_SMALL: case_scribble(&e, me, a, SMALL); break;
	case C_HDRS: case_hdrs(&e, me); break;
	case C_HOT: case_hot(&e, me); break;
	case C_FULL: case_full(&e, me); break;
	case C_ATOMIC: case_atomic(&e, me); break;
	case C_SLEEP: case_sleep(&e, me); break;
	case C_CORE: case_core(&e, me, false); break;
	case C_CORE_TCP: case_core(&e, me, true); break;
	}
	bd->step[me] = 100;
	wait_step(!me, 100, 30);	/* the peer may still need us */
	ep_close(&e);
	_exit(0);
}

static pid_t pids[64];
static int npids;

static pid_t spawn(int which, int me, pid_t a)
{
	pid_t p;

	fflush(stdout);
	p = fork();
	if (p == 0)
		child(which, me, a);
	if (p > 0 && npids < 64)
		pids[npids++] = p;
	return p;
}

/* Runs a case with n verdicts; B killed once A reached step 1 (kill). */
static void run_case(int which, int n, const char *what)
{
	char log[64];
	pid_t a, b;
	int i;

	memset(bd, 0, sizeof(*bd));
	vbase = 0;
	a = spawn(which, 0, 0);
	b = spawn(which, 1, a);
	if (which == C_KILL) {
		if (wait_step(0, 1, 30) && b > 0)
			kill(b, SIGKILL);
		waitpid(b, NULL, 0);
		bd->step[1] = 100;
		snprintf(log, sizeof(log), "/tmp/iwshm-test-%d.log", (int)b);
		unlink(log);	/* B could not */
	}
	tap_child(a, 120, what);
	if (which != C_KILL)
		tap_child(b, 120, what);
	for (i = 0; i < n; i++)
		tap_ok(bd->v[i] == 1, "%s", bd->v[i] ? bd->msg[i] :
		       "(a verdict never reported)");
}

static int left_in_dev_shm(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *de;
	char want[64];
	int i, n = 0;

	while (d && (de = readdir(d)))
		for (i = 0; i < npids; i++) {
			snprintf(want, sizeof(want), "iwarp-shm-%d-",
				 (int)pids[i]);
			n += !strncmp(de->d_name, want, strlen(want));
		}
	if (d)
		closedir(d);
	return n;
}

/* Needs the right to SCHED_FIFO (root, CAP_SYS_NICE). */
static void run_cores(void)
{
	struct sched_param fifo = { .sched_priority = 1 }, other = { 0 };

	if (sched_setscheduler(0, SCHED_FIFO, &fifo)) {
		tap_skip_n(8, "one core, SCHED_FIFO: not permitted (%s)",
			   strerror(errno));
		return;
	}
	sched_setscheduler(0, SCHED_OTHER, &other);
	run_case(C_CORE, 2, "one core, shared memory");
	run_case(C_CORE_TCP, 2, "one core, TCP");
}

/* Last: this process moves to a mount namespace of its own with a
 * 64 KiB /dev/shm, too small for a segment. */
static void run_full(void)
{
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", "/dev/shm", "tmpfs", 0, "size=64k")) {
		tap_skip_n(3, "/dev/shm full: no private /dev/shm (%s)",
			   strerror(errno));
		return;
	}
	run_case(C_FULL, 1, "/dev/shm full");
}

int main(void)
{
	bd = mmap(NULL, sizeof(*bd), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (bd == MAP_FAILED)
		return 1;
	run_case(C_DATA, 3, "shm data");
	run_case(C_HDRS, 1, "small headers");
	run_case(C_HOT, 2, "hot progress");
	run_case(C_OFF, 4, "FI_IWARP_SHM=0 on one side");
	run_case(C_KILL, 1, "kill");
	run_case(C_SCRIBBLE, 3, "scribble");
	run_case(C_FRAMES, 3, "forged slots");
	run_case(C_SMALL, 4, "forged small message");
	run_case(C_ATOMIC, 2, "atomics");
	run_case(C_SLEEP, 3, "sleep");
	run_cores();
	tap_ok(left_in_dev_shm() == 0, "nothing of these %d processes is "
	       "left in /dev/shm", npids);
	run_full();
	return tap_done();
}
