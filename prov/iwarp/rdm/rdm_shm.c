/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The same-host peer transport of RDM (rdm_xport.h). It wraps the iWARP
 * transport: every peer connects over iWARP as before (job keys, restart
 * claims and identity checks stay), and when both connection data offer
 * shared memory each side sends a HELLO (boot id, network and pid
 * namespaces, pid, a cookie's address, the name of a segment it made)
 * and then a RESULT (whether it mapped the peer's segment, whether it
 * read the peer's cookie with process_vm_readv). With both RESULTs ok
 * the peer moves to shared memory; otherwise it stays on iWARP. Either
 * way the protocol hears `connected` only then, so nothing of it travels
 * before the choice. The iWARP connection stays open, idle: its end is
 * how a dead peer is noticed.
 *
 * Each side consumes a ring in its own segment (made O_EXCL, 0600, in
 * /dev/shm, unlinked once the peer mapped it) that only this peer
 * produces into: fixed slots, one producer, one consumer. A slot is
 * published by its sequence number (slot counter + 1), stored last with
 * release, so the consumer's poll and its read of the slot are one cache
 * line; the consumer's counter is published the same way and read by
 * the producer only when its last copy says the ring is full. A message
 * is a first slot (RDM header, total length, payload) and continuation
 * slots. RMA
 * requests name the requester's buffers; the target checks the STag
 * (iw_mr_translate) and copies with one process_vm_readv/writev, or,
 * when the kernel refused that at the handshake, through the ring.
 * Answers (ACK, RDATA) come back in request order. Atomics go as the
 * protocol's AREQ messages (atomics() is false).
 *
 * A side about to sleep in a wait sets asleep in its own segment; the
 * other side, having produced into its ring or freed room in it, clears
 * the flag and writes the sleeper's eventfd, a copy of which it took
 * with pidfd_getfd at the handshake (its number travels in the HELLO;
 * the same permission as process_vm_readv). Without one, a sleeper looks
 * again every millisecond. That check needs a full fence after each
 * counter store, which costs a busy-polling pair (MPI) as much as the
 * rest of a small message: a side that sleeps at all first raises
 * sleeper (read-mostly, next to the segment's constants), and only then
 * does the other side fence and look at asleep. The first sleep after
 * raising it does not sleep (our own bell rings), so a store the peer
 * made before it could see the flag is seen by the next look; a side
 * that has not slept for SHM_SLEEPER_IDLE progress calls lowers it.
 *
 * The peer is untrusted: counters and lengths read from its segment are
 * checked against our own copies and the slot size; a violation ends
 * the connection (the iWARP one too) with every operation failed.
 */
#include "rdm_xport.h"
#include "rdm_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "iwarp/wire.h"

#define SHM_SLOTS 48
#define SHM_SLOT 8192
#define SHM_SLOT_DATA (SHM_SLOT - 16)
#define SHM_HDR 256
#define SHM_SEG_SIZE (SHM_HDR + (size_t)SHM_SLOTS * SHM_SLOT)
#define SHM_MAGIC 0x4957534d48524e47ull	/* "IWSMHRNG" */
#define SHM_VERSION 5
/* progress calls without a sleep before sleeper goes down again */
#define SHM_SLEEPER_IDLE 100000u
/* ops with at most this many iovecs are kept for reuse, this many */
#define SHM_OP_SMALL_IOV 4
#define SHM_OP_SPARES 64
/* RMA of at least this many octets goes by process_vm_readv/writev */
#define SHM_CMA_MIN 16384
/* slots one progress call consumes at most */
#define SHM_RX_BUDGET 256
#define SHM_NAME_MAX 48
/* the handshake messages' first octet: no RDM op */
#define SHM_HS_OP 0xe5

enum { SHM_HELLO = 1, SHM_RESULT = 2 };

/* why a sleeper wants its doorbell rung */
enum { SHM_WAKE_DATA = 1, SHM_WAKE_ROOM = 2 };

enum shm_type {
	SHM_T_MSG = 1,		/* shm_msg, payload */
	SHM_T_CONT,		/* payload */
	SHM_T_WRITE,		/* shm_rma, payload unless by CMA */
	SHM_T_READ,		/* shm_rma */
	SHM_T_ACK,		/* shm_ack */
	SHM_T_RDATA,		/* uint64_t id, payload */
	SHM_T_SMALL,		/* n, header's first n octets, payload */
};

struct shm_seg {
	uint64_t magic;
	uint32_t version, nslots, slot;
	uint32_t sleeper;	/* we may sleep: fence and look at asleep */
	uint8_t pad0[40];
	uint8_t pad1[64];
	uint64_t tail;		/* slots consumed: we write it */
	uint32_t asleep;	/* we sleep: SHM_WAKE_* bits (either side) */
	uint8_t pad2[52];
};

struct shm_slot {
	uint32_t type;
	uint32_t len;		/* payload octets in this slot */
	uint64_t seq;		/* slot counter + 1: published */
	uint8_t data[SHM_SLOT_DATA];
};

struct shm_msg {
	uint32_t hdr_len;
	uint32_t pad;
	uint64_t total;		/* payload octets of the whole message */
	uint8_t hdr[IWARP_RDM_HDR_LEN];
};

struct shm_iov {
	uint64_t base, len;
};

struct shm_rma {
	uint64_t id, raddr, len;
	uint32_t rkey;
	uint32_t niov;		/* requester's buffers, for CMA */
	uint32_t cma;		/* WRITE: the payload is not in the ring */
	uint32_t pad;
	struct shm_iov iov[IW_MAX_SGE];
};

struct shm_ack {
	uint64_t id;
	int32_t err;
	int32_t prov_errno;
	uint32_t cma;		/* READ: placed by process_vm_writev */
	uint32_t pad;
};

struct shm_hello {
	char boot[40];
	uint64_t netns, pidns;
	uint64_t cookie_addr;
	uint8_t cookie[16];
	uint32_t pid;
	uint32_t bell;		/* our eventfd's number + 1; 0: none */
	char seg[SHM_NAME_MAX];	/* empty: no segment */
};

struct shm_result {
	uint8_t ok;		/* mapped the peer's segment */
	uint8_t cma;		/* read the peer's cookie */
	uint8_t bell;		/* took the peer's eventfd */
	uint8_t pad[5];
};

enum shm_mode {
	SHM_NONE,		/* not connected yet */
	SHM_HANDSHAKE,
	SHM_TCP,		/* the iWARP connection carries it */
	SHM_ON,
	SHM_BROKEN,		/* a violation: torn down at next progress */
};

/* One operation or answer on its way into the peer's ring. */
struct shm_op {
	struct iwarp_list link;
	void *ctx;		/* the protocol's; NULL for our answers */
	uint8_t type;
	bool started;
	bool cma;
	uint64_t id;
	uint8_t hdr[IWARP_RDM_HDR_LEN];
	uint32_t hdr_len;
	uint32_t rkey;
	uint64_t raddr;
	uint64_t total, sent, got;
	int err, prov_errno;	/* an ACK's verdict */
	size_t count, ci, coff;	/* iov and where the copy stands */
	struct iovec iov[];
};

struct shm_rx {
	uint8_t type;		/* the message in progress, 0: none */
	void *ctx;
	struct iw_sge dst[IW_MAX_SGE];
	int n, di;
	uint32_t doff;
	uint64_t total, got, id, raddr;
	uint32_t rkey;
	int err, prov_errno;
};

struct shm_ep {
	struct iwarp_rdm_ep *ep;	/* the protocol's */
	const struct iwarp_rdm_upcalls *up;
	struct iwarp_rdm_xep *iw;
	struct iwarp_domain *dom;
	union iwarp_sockaddr name;
	struct shm_hello me;		/* without seg */
	uint8_t cookie[16];		/* what process_vm_readv must find */
};

struct shm_conn {
	struct shm_ep *se;
	struct iwarp_rdm_peer *peer;	/* the protocol's */
	struct iwarp_rdm_xconn *iw;
	union iwarp_sockaddr addr;
	char name[64];
	bool self;
	bool fwd_up;			/* the protocol heard connected */
	enum shm_mode mode;
	const char *why;		/* SHM_BROKEN: what the peer did */
	/* handshake */
	int my_ok, peer_ok;		/* -1 unknown */
	bool cma_out, cma_in;		/* we can CMA the peer; it can us */
	int bell_in, bell_out;		/* our eventfd; the peer's, or -1 */
	bool bell_taken;		/* the peer took bell_in */
	bool armed;			/* asleep set by shm_sleep_fd */
	struct iwarp_list spares;	/* freed small ops, for reuse */
	unsigned int nspare;
	bool sleeper;			/* our segment's sleeper is up */
	uint32_t awake_calls;		/* progress calls since the last sleep */
	uint32_t pid;
	char my_seg[SHM_NAME_MAX];	/* still linked when non-empty */
	uint8_t hs_hdr[2][IWARP_RDM_HDR_LEN];
	struct shm_hello hs_hello;
	struct shm_result hs_result;
	uint8_t hs_in[IWARP_RDM_HDR_LEN];
	union {
		struct shm_hello hello;
		struct shm_result result;
	} hs_buf;
	uint8_t hs_kind;
	bool hs_early;			/* the peer's HELLO came first */
	uint64_t hs_early_len;
	bool hs_early_ok;
	/* rings */
	struct shm_seg *rx_seg, *tx_seg;
	uint64_t rx_tail, tx_head;	/* our own copies */
	/* rx_tail's slot and the sequence number it keeps until the peer
	 * publishes it (the last lap's; 0 in the first): a busy poll's
	 * whole look (shm_rx_at) */
	struct shm_slot *rx_slot;
	uint64_t rx_lap;
	uint64_t tx_tail;		/* the peer's consumer counter, last read */
	struct shm_rx rx;
	uint64_t next_id;
	struct iwarp_list txq;		/* not yet all in the ring */
	struct iwarp_list waitq;	/* READ/WRITE waiting for ACK */
	struct iwarp_list doneq;	/* sent messages to complete */
	struct iwarp_pollable poll;
	bool polled;
	uint8_t *bounce;		/* a slot's fixed fields, copied out */
};

static const struct iwarp_rdm_xport *const iw = &iwarp_rdm_iw_xport;

/* The iWARP transport names our structs where it names the protocol's. */
static struct shm_conn *shm_conn_of(struct iwarp_rdm_peer *p)
{
	return (struct shm_conn *)(void *)p;
}

static struct shm_ep *shm_ep_of(struct iwarp_rdm_ep *ep)
{
	return (struct shm_ep *)(void *)ep;
}

static bool shm_ours(const struct shm_conn *c, const void *ctx)
{
	return (uintptr_t)ctx - (uintptr_t)c < sizeof(*c);
}

/* ---- segments */

static void shm_unlink_mine(struct shm_conn *c)
{
	if (!c->my_seg[0])
		return;
	shm_unlink(c->my_seg);
	c->my_seg[0] = 0;
}

static void shm_bells_close(struct shm_conn *c)
{
	if (c->bell_in >= 0)
		iw_fd_close(c->bell_in);
	if (c->bell_out >= 0)
		iw_fd_close(c->bell_out);
	c->bell_in = c->bell_out = -1;
	c->bell_taken = c->armed = false;
}

static void shm_unmap(struct shm_conn *c)
{
	shm_bells_close(c);
	if (c->rx_seg)
		munmap(c->rx_seg, SHM_SEG_SIZE);
	if (c->tx_seg)
		munmap(c->tx_seg, SHM_SEG_SIZE);
	c->rx_seg = c->tx_seg = NULL;
	shm_unlink_mine(c);
}

/*
 * Both sides map a segment whole at once: a ring only goes as deep as
 * the backlog, so its pages were first touched one by one over the
 * first thousands of messages, a page fault each in a message's path
 * (in a VM tens of us; a 4-rank allreduce ran 2x slower for its first
 * 400 calls, which is all of a short benchmark's first size).
 */
#define SHM_MAP (MAP_SHARED | MAP_POPULATE)

/* Our receive segment, name in c->my_seg; false (logged) when none. */
static bool shm_seg_create(struct shm_conn *c)
{
	uint8_t rnd[8];
	void *m;
	int fd, ret;

	if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
		return false;
	snprintf(c->my_seg, sizeof(c->my_seg),
		 "/iwarp-shm-%u-%02x%02x%02x%02x%02x%02x%02x%02x",
		 (unsigned)getpid(), rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
		 rnd[5], rnd[6], rnd[7]);
	fd = shm_open(c->my_seg, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = errno;
		goto fail;
	}
	/* the pages now: a full /dev/shm fails here, not as SIGBUS later;
	 * mapped now too (SHM_MAP) */
	ret = posix_fallocate(fd, 0, SHM_SEG_SIZE);
	m = ret ? MAP_FAILED : mmap(NULL, SHM_SEG_SIZE, PROT_READ | PROT_WRITE,
				    SHM_MAP, fd, 0);
	if (!ret && m == MAP_FAILED)
		ret = errno;
	iw_fd_close(fd);
	if (ret) {
		shm_unlink(c->my_seg);
		goto fail;
	}
	c->rx_seg = m;
	c->rx_seg->magic = SHM_MAGIC;
	c->rx_seg->version = SHM_VERSION;
	c->rx_seg->nslots = SHM_SLOTS;
	c->rx_seg->slot = SHM_SLOT;
	return true;
fail:
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: no shared memory segment %s of %zu octets "
		"(%s): the peer stays on TCP\n", c->name, c->my_seg,
		SHM_SEG_SIZE, strerror(ret));
	c->my_seg[0] = 0;
	return false;
}

static bool shm_name_ok(const char *s, uint32_t pid)
{
	char want[32];
	size_t i, n;

	snprintf(want, sizeof(want), "/iwarp-shm-%u-", (unsigned)pid);
	n = strlen(want);
	if (strncmp(s, want, n) || strlen(s) != n + 16)
		return false;
	for (i = n; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Maps the peer's segment (and unlinks it: both sides hold it now). */
static bool shm_seg_open(struct shm_conn *c, const char *name)
{
	struct stat st;
	struct shm_seg *s;
	int fd;

	fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) || st.st_uid != geteuid() ||
	    (size_t)st.st_size != SHM_SEG_SIZE) {
		iw_fd_close(fd);
		return false;
	}
	s = mmap(NULL, SHM_SEG_SIZE, PROT_READ | PROT_WRITE, SHM_MAP, fd, 0);
	iw_fd_close(fd);
	shm_unlink(name);
	if (s == MAP_FAILED)
		return false;
	if (s->magic != SHM_MAGIC || s->version != SHM_VERSION ||
	    s->nslots != SHM_SLOTS || s->slot != SHM_SLOT) {
		munmap(s, SHM_SEG_SIZE);
		return false;
	}
	c->tx_seg = s;
	return true;
}

static struct shm_slot *shm_slot(struct shm_seg *s, uint64_t i)
{
	return (struct shm_slot *)((uint8_t *)s + SHM_HDR +
				   (size_t)(i % SHM_SLOTS) * SHM_SLOT);
}

/* ---- the identity of this process */

static void shm_identity(struct shm_ep *se)
{
	struct stat st;
	ssize_t n;
	int fd;

	memset(&se->me, 0, sizeof(se->me));
	fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, se->me.boot, sizeof(se->me.boot) - 1);
		if (n < 0)
			se->me.boot[0] = 0;
		iw_fd_close(fd);
	}
	if (!stat("/proc/self/ns/net", &st))
		se->me.netns = st.st_ino;
	if (!stat("/proc/self/ns/pid", &st))
		se->me.pidns = st.st_ino;
	se->me.pid = (uint32_t)getpid();
	if (getrandom(se->cookie, sizeof(se->cookie), 0) != sizeof(se->cookie))
		memset(se->cookie, 0, sizeof(se->cookie));
	memcpy(se->me.cookie, se->cookie, sizeof(se->cookie));
	se->me.cookie_addr = (uintptr_t)se->cookie;
}

/* ---- failing and tearing down */

/* Small ops go back to the connection's spares: a message costs no
 * malloc and free. */
static void shm_op_free(struct shm_conn *c, struct shm_op *op)
{
	if (op->count > SHM_OP_SMALL_IOV || c->nspare >= SHM_OP_SPARES) {
		free(op);
		return;
	}
	iwarp_list_add_head(&c->spares, &op->link);
	c->nspare++;
}

/* A freed small op for reuse, not cleared, or NULL. */
static struct shm_op *shm_spare_take(struct shm_conn *c)
{
	struct shm_op *op;

	if (iwarp_list_empty(&c->spares))
		return NULL;
	op = iwarp_container_of(c->spares.next, struct shm_op, link);
	iwarp_list_del(&op->link);
	c->nspare--;
	return op;
}

static void shm_spares_free(struct shm_conn *c)
{
	while (!iwarp_list_empty(&c->spares)) {
		struct shm_op *op = iwarp_container_of(c->spares.next,
						       struct shm_op, link);

		iwarp_list_del(&op->link);
		free(op);
	}
	c->nspare = 0;
}

static void shm_free_list(struct iwarp_list *l, struct shm_conn *c, int err,
			  bool up)
{
	while (!iwarp_list_empty(l)) {
		struct shm_op *op = iwarp_container_of(l->next, struct shm_op,
						       link);

		iwarp_list_del(&op->link);
		if (up && op->ctx)
			c->se->up->done(c->peer, op->ctx, err, 0);
		shm_op_free(c, op);
	}
}

static void shm_poll_off(struct shm_conn *c)
{
	if (c->polled)
		c->se->up->poll_del(c->se->ep, &c->poll);
	c->polled = false;
}

/* Ends shared memory with the peer; with up, each operation's context
 * comes back (sent messages ok, the rest with err). */
static void shm_down(struct shm_conn *c, int err, bool up)
{
	void *rctx = c->rx.type == SHM_T_MSG ? c->rx.ctx : NULL;
	uint64_t got = c->rx.got;

	shm_poll_off(c);
	shm_unmap(c);
	c->hs_early = false;
	if (c->iw)
		iwarp_rdm_iw_quiet(c->iw, false);
	memset(&c->rx, 0, sizeof(c->rx));
	c->mode = SHM_NONE;
	c->my_ok = c->peer_ok = -1;
	shm_free_list(&c->doneq, c, 0, up);
	shm_free_list(&c->waitq, c, err, up);
	shm_free_list(&c->txq, c, err, up);
	if (up && rctx)
		c->se->up->recv(c->peer, rctx, IWARP_RDM_HDR_LEN + got, false);
}

static void shm_broken(struct shm_conn *c, const char *why)
{
	if (c->mode != SHM_ON)
		return;
	c->mode = SHM_BROKEN;
	c->why = why;
}

/* A violation seen earlier: everything fails, the iWARP connection is
 * closed so the peer hears of it, a fresh one waits for new work. */
static void shm_teardown(struct shm_conn *c)
{
	struct iwarp_rdm_xconn *fresh;

	FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
		"RDM peer %s: shared memory violated (%s): connection "
		"closed, its operations fail\n", c->name, c->why);
	shm_down(c, FI_EIO, true);
	if (c->fwd_up)
		c->se->up->lost(c->peer, FI_EIO);
	c->fwd_up = false;
	fresh = iw->peer_open(c->se->iw, (struct iwarp_rdm_peer *)(void *)c,
			      &c->addr);
	if (!fresh)
		return;	/* no memory: the old connection stays, on TCP */
	iw->peer_close(c->iw);
	c->iw = fresh;
}

/* ---- producing into the peer's ring */

static struct shm_slot *shm_tx_slot(struct shm_conn *c)
{
	uint64_t tail;

	if (c->tx_head - c->tx_tail == SHM_SLOTS) {
		tail = __atomic_load_n(&c->tx_seg->tail, __ATOMIC_ACQUIRE);
		if (tail - c->tx_tail > SHM_SLOTS) {
			shm_broken(c, "its consumer counter is out of range");
			return NULL;
		}
		c->tx_tail = tail;
	}
	return c->tx_head - c->tx_tail == SHM_SLOTS ? NULL :
	       shm_slot(c->tx_seg, c->tx_head);
}

static void shm_tx_push(struct shm_conn *c, struct shm_slot *s, uint32_t type,
			uint32_t len)
{
	s->type = type;
	s->len = len;
	__atomic_store_n(&s->seq, ++c->tx_head, __ATOMIC_RELEASE);
}

/*
 * We produced into the peer's ring or freed room in ours: a peer asleep
 * (flag in its segment, read after our counter store) is woken once.
 */
static void shm_kick(struct shm_conn *c, uint32_t why)
{
	struct pollfd pf = { .fd = c->bell_out, .events = POLLOUT };
	uint64_t one = 1;

	if (c->bell_out < 0 || !c->tx_seg ||
	    !__atomic_load_n(&c->tx_seg->sleeper, __ATOMIC_RELAXED))
		return;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!(__atomic_load_n(&c->tx_seg->asleep, __ATOMIC_RELAXED) & why) ||
	    !__atomic_exchange_n(&c->tx_seg->asleep, 0, __ATOMIC_SEQ_CST))
		return;
	/* the peer owns the eventfd and could make a write block: only
	 * when it has room, whatever its flags */
	if (poll(&pf, 1, 0) == 1 && (pf.revents & POLLOUT) &&
	    write(c->bell_out, &one, sizeof(one)) < 0 && errno != EAGAIN)
		FI_INFO(&iwarp_prov, FI_LOG_EP_DATA,
			"RDM peer %s: doorbell: %s\n", c->name,
			strerror(errno));
}

/* Copies up to room octets of op's iov (from its cursor) to p. */
static uint32_t shm_gather(struct shm_op *op, uint8_t *p, uint32_t room)
{
	uint32_t n = 0;

	while (n < room && op->ci < op->count) {
		const struct iovec *v = &op->iov[op->ci];
		size_t k = v->iov_len - op->coff;

		if (k > room - n)
			k = room - n;
		if (k)	/* an empty entry may have no base */
			memcpy(p + n, (uint8_t *)v->iov_base + op->coff, k);
		n += (uint32_t)k;
		op->coff += k;
		if (op->coff == v->iov_len) {
			op->ci++;
			op->coff = 0;
		}
	}
	op->sent += n;
	return n;
}

static uint32_t shm_put_msg(struct shm_op *op, struct shm_slot *s)
{
	struct shm_msg m = { .hdr_len = op->hdr_len, .total = op->total };

	memcpy(m.hdr, op->hdr, sizeof(m.hdr));
	memcpy(s->data, &m, sizeof(m));
	return shm_gather(op, s->data + sizeof(m), SHM_SLOT_DATA - sizeof(m));
}

static uint32_t shm_put_rma(struct shm_op *op, struct shm_slot *s)
{
	struct shm_rma r = {
		.id = op->id, .raddr = op->raddr, .len = op->total,
		.rkey = op->rkey, .cma = op->cma,
	};
	size_t i;

	for (i = 0; i < op->count && i < IW_MAX_SGE; i++) {
		r.iov[i].base = (uintptr_t)op->iov[i].iov_base;
		r.iov[i].len = op->iov[i].iov_len;
	}
	r.niov = (uint32_t)i;
	memcpy(s->data, &r, sizeof(r));
	if (op->type == SHM_T_READ || op->cma)
		return 0;
	return shm_gather(op, s->data + sizeof(r), SHM_SLOT_DATA - sizeof(r));
}

/* An RDATA chunk of our memory, checked again: it may be gone. */
static bool shm_put_rdata(struct shm_conn *c, struct shm_op *op,
			  struct shm_slot *s, uint32_t *len)
{
	uint64_t k = op->total - op->sent;
	uint8_t ecode;
	void *src;

	if (k > SHM_SLOT_DATA - 8)
		k = SHM_SLOT_DATA - 8;
	src = iw_mr_translate(c->se->dom->pd, op->rkey, op->raddr + op->sent,
			      k, IW_ACC_REMOTE_READ, &ecode);
	if (!src) {
		op->err = FI_EREMOTEIO;
		op->prov_errno = IWARP_PROV_ERRNO(IW_LAYER_RDMAP,
			RDMAP_ETYPE_REMOTE_PROT, ecode);
		return false;
	}
	memcpy(s->data, &op->id, 8);
	memcpy(s->data + 8, src, k);
	op->sent += k;
	*len = (uint32_t)k;
	return true;
}

static uint32_t shm_put_ack(struct shm_op *op, struct shm_slot *s)
{
	struct shm_ack a = {
		.id = op->id, .err = op->err, .prov_errno = op->prov_errno,
		.cma = op->cma,
	};

	op->type = SHM_T_ACK;
	memcpy(s->data, &a, sizeof(a));
	return SHM_T_ACK;
}

/* One slot of op; true when op has nothing more to write. */
static bool shm_tx_step(struct shm_conn *c, struct shm_op *op,
			struct shm_slot *s)
{
	uint32_t len = 0, type = op->started ? SHM_T_CONT : op->type;
	bool whole = false;

	switch (op->type) {
	case SHM_T_MSG:
		len = op->started ? shm_gather(op, s->data, SHM_SLOT_DATA) :
				    shm_put_msg(op, s);
		whole = op->sent == op->total;
		break;
	case SHM_T_WRITE:
	case SHM_T_READ:
		len = op->started ? shm_gather(op, s->data, SHM_SLOT_DATA) :
				    shm_put_rma(op, s);
		whole = op->type == SHM_T_READ || op->cma ||
			op->sent == op->total;
		break;
	case SHM_T_RDATA:
		type = SHM_T_RDATA;
		if (op->sent < op->total && shm_put_rdata(c, op, s, &len))
			break;
		/* all sent, or the region went: the verdict */
		type = shm_put_ack(op, s);
		whole = true;
		break;
	default:
		type = shm_put_ack(op, s);
		whole = true;
		break;
	}
	op->started = true;
	shm_tx_push(c, s, type, len);
	return whole;
}

/* Where an op goes once all in the ring. */
static void shm_tx_sent(struct shm_conn *c, struct shm_op *op)
{
	iwarp_list_del(&op->link);
	if (!op->ctx)
		shm_op_free(c, op);
	else if (op->type == SHM_T_MSG)
		iwarp_list_add_tail(&c->doneq, &op->link);
	else
		iwarp_list_add_tail(&c->waitq, &op->link);
}

static void shm_tx_flush(struct shm_conn *c)
{
	uint64_t from = c->tx_head;

	while (c->mode == SHM_ON && !iwarp_list_empty(&c->txq)) {
		struct shm_op *op = iwarp_container_of(c->txq.next,
						       struct shm_op, link);
		struct shm_slot *s = shm_tx_slot(c);

		if (!s)
			break;
		if (shm_tx_step(c, op, s))
			shm_tx_sent(c, op);
	}
	if (c->tx_head != from)
		shm_kick(c, SHM_WAKE_DATA);
}

static struct shm_op *shm_op_new(struct shm_conn *c, void *ctx, uint8_t type,
				 const struct iovec *iov, size_t count)
{
	struct shm_op *op = count <= SHM_OP_SMALL_IOV ? shm_spare_take(c) : NULL;
	size_t i;

	if (op)
		memset(op, 0, sizeof(*op));
	else
		op = calloc(1, sizeof(*op) + (count > SHM_OP_SMALL_IOV ? count :
					      SHM_OP_SMALL_IOV) * sizeof(*iov));
	if (!op)
		return NULL;
	op->ctx = ctx;
	op->type = type;
	op->id = ++c->next_id;
	op->count = count;
	for (i = 0; i < count; i++) {
		op->iov[i] = iov[i];
		op->total += iov[i].iov_len;
	}
	return op;
}

static void shm_tx_queue(struct shm_conn *c, struct shm_op *op)
{
	iwarp_list_add_tail(&c->txq, &op->link);
	shm_tx_flush(c);
}

/* An answer to the peer's request id. */
static void shm_answer(struct shm_conn *c, uint64_t id, int err,
		       int prov_errno, bool cma)
{
	struct shm_op *op = shm_op_new(c, NULL, SHM_T_ACK, NULL, 0);

	if (!op) {
		shm_broken(c, "no memory for an answer");
		return;
	}
	op->id = id;
	op->err = err;
	op->prov_errno = prov_errno;
	op->cma = cma;
	shm_tx_queue(c, op);
}

/* ---- consuming our ring */

/* Scatters len octets at p into the message's buffers. */
static bool shm_rx_scatter(struct shm_conn *c, const uint8_t *p, uint32_t len)
{
	struct shm_rx *r = &c->rx;

	if (len > r->total - r->got) {
		shm_broken(c, "a message longer than it announced");
		return false;
	}
	r->got += len;
	while (len) {
		uint32_t k;

		if (r->di >= r->n) {
			shm_broken(c, "a message longer than its buffers");
			return false;
		}
		k = r->dst[r->di].len - r->doff;
		if (k > len)
			k = len;
		if (r->dst[r->di].addr)	/* NULL: discarded (truncation) */
			memcpy((uint8_t *)r->dst[r->di].addr + r->doff, p, k);
		p += k;
		len -= k;
		r->doff += k;
		if (r->doff == r->dst[r->di].len) {
			r->di++;
			r->doff = 0;
		}
	}
	return true;
}

static void shm_rx_msg_end(struct shm_conn *c)
{
	void *ctx = c->rx.ctx;
	uint64_t len = IWARP_RDM_HDR_LEN + c->rx.got;

	c->rx.type = 0;
	c->rx.ctx = NULL;
	if (ctx)
		c->se->up->recv(c->peer, ctx, len, true);
}

/* A message's first slot, its header checked and copied out of the
 * segment: len octets of its total are in this slot. */
static void shm_rx_msg_start(struct shm_conn *c, const uint8_t *hdr,
			     uint32_t hdr_len, uint64_t total,
			     const uint8_t *payload, uint32_t len)
{
	struct shm_rx *r = &c->rx;
	int n;

	/* whole in this slot: straight into a posted receive if one waits */
	if (total == len &&
	    c->se->up->recv_whole(c->peer, hdr, hdr_len, payload, len))
		return;
	/* the fields a message uses (dst up to n is place's) */
	r->ctx = NULL;
	r->di = 0;
	r->doff = 0;
	r->got = 0;
	n = c->se->up->place(c->peer, hdr, hdr_len, r->dst, &r->ctx);
	if (n < 0 || n > IW_MAX_SGE) {
		r->ctx = NULL;
		shm_broken(c, "a message the protocol refused");
		return;
	}
	r->type = SHM_T_MSG;
	r->n = n;
	r->total = total;
	if (c->mode == SHM_ON && shm_rx_scatter(c, payload, len) &&
	    r->got == r->total)
		shm_rx_msg_end(c);
}

static void shm_rx_msg(struct shm_conn *c, const uint8_t *d,
		       const uint8_t *payload, uint32_t len)
{
	struct shm_msg m;

	memcpy(&m, d, sizeof(m));
	if (m.hdr_len > IWARP_RDM_HDR_LEN ||
	    len > SHM_SLOT_DATA - sizeof(m) || m.total > UINT32_MAX) {
		shm_broken(c, "a message header out of range");
		return;
	}
	shm_rx_msg_start(c, m.hdr, m.hdr_len, m.total, payload, len);
}

/*
 * A small message's header travels without its trailing zero octets,
 * found and restored a word at a time: a byte loop was a tenth of what
 * the provider spent on an 8-octet MPI message.
 */
#define SHM_HDR_WORDS (IWARP_RDM_HDR_LEN / 8)
_Static_assert(IWARP_RDM_HDR_LEN % 8 == 0, "the header is whole words");

/* Of a word's octets in memory order: the trailing zero ones; the first
 * k (1..7) kept, the others cleared. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SHM_TRAILING_ZEROS(v) ((unsigned int)__builtin_clzll(v) / 8)
#define SHM_FIRST_OCTETS(v, k) ((v) & ((1ull << (8 * (k))) - 1))
#else
#define SHM_TRAILING_ZEROS(v) ((unsigned int)__builtin_ctzll(v) / 8)
#define SHM_FIRST_OCTETS(v, k) ((v) & ~0ull << (8 * (8 - (k))))
#endif

/* hdr's length without its trailing zero octets */
static size_t shm_hdr_used(const uint8_t *hdr)
{
	size_t w = SHM_HDR_WORDS;
	uint64_t v;

	while (w--) {
		memcpy(&v, hdr + 8 * w, 8);
		if (v)
			return 8 * w + 8 - SHM_TRAILING_ZEROS(v);
	}
	return 0;
}

/* hdr = the n octets at d (in a slot, with room for a whole header
 * after them, read once), then zeros */
static void shm_hdr_fill(uint8_t *hdr, const uint8_t *d, unsigned int n)
{
	unsigned int w;

	for (w = 0; w < SHM_HDR_WORDS; w++) {
		uint64_t v = 0;

		if (8 * w < n) {
			memcpy(&v, d + 8 * w, 8);
			if (n - 8 * w < 8)
				v = SHM_FIRST_OCTETS(v, n - 8 * w);
		}
		memcpy(hdr + 8 * w, &v, 8);
	}
}

/* A whole message in one slot, its header without its trailing zero
 * octets (d[0] of them kept): a small one's slot is one cache line. */
static void shm_rx_small(struct shm_conn *c, const uint8_t *d, uint32_t len)
{
	uint8_t hdr[IWARP_RDM_HDR_LEN];
	uint8_t n = __atomic_load_n(d, __ATOMIC_RELAXED);

	if (n > IWARP_RDM_HDR_LEN || len < 1u + n) {
		shm_broken(c, "a message header out of range");
		return;
	}
	shm_hdr_fill(hdr, d + 1, n);
	shm_rx_msg_start(c, hdr, IWARP_RDM_HDR_LEN, len - 1u - n,
			 d + 1 + n, len - 1u - n);
}

/* The requester's buffers of a request, as iovecs; their count. */
static size_t shm_peer_iov(const struct shm_rma *r, struct iovec *v)
{
	size_t i;

	for (i = 0; i < r->niov && i < IW_MAX_SGE; i++) {
		v[i].iov_base = (void *)(uintptr_t)r->iov[i].base;
		v[i].iov_len = r->iov[i].len;
	}
	return i;
}

static bool shm_iov_sum(const struct shm_rma *r, uint64_t want)
{
	uint64_t sum = 0;
	uint32_t i;

	if (r->niov > IW_MAX_SGE)
		return false;
	for (i = 0; i < r->niov; i++) {
		if (r->iov[i].len > UINT32_MAX)
			return false;
		sum += r->iov[i].len;
	}
	return sum == want;
}

/* The target side: our memory under rkey for the request, or NULL with
 * *perr set the way an RDMA operation would have been refused. */
static void *shm_target(struct shm_conn *c, const struct shm_rma *r,
			unsigned int acc, int *perr)
{
	uint8_t ecode = 0;
	void *p = iw_mr_translate(c->se->dom->pd, r->rkey, r->raddr, r->len,
				  acc, &ecode);

	if (!p)
		*perr = IWARP_PROV_ERRNO(IW_LAYER_RDMAP,
					 RDMAP_ETYPE_REMOTE_PROT, ecode);
	return p;
}

/* process_vm_readv/writev of the whole request; 0 or FI_EIO */
static int shm_cma(struct shm_conn *c, const struct shm_rma *r, void *mine,
		   bool write_peer)
{
	struct iovec local = { mine, r->len }, remote[IW_MAX_SGE];
	size_t n = shm_peer_iov(r, remote);
	ssize_t got;

	got = write_peer ?
	      process_vm_writev((pid_t)c->pid, &local, 1, remote, n, 0) :
	      process_vm_readv((pid_t)c->pid, &local, 1, remote, n, 0);
	return got == (ssize_t)r->len ? 0 : FI_EIO;
}

static void shm_rx_read(struct shm_conn *c, const struct shm_rma *r)
{
	struct shm_op *op;
	int perr = 0;
	void *p = r->len ? shm_target(c, r, IW_ACC_REMOTE_READ, &perr) : NULL;

	if (r->len && !p) {
		shm_answer(c, r->id, FI_EREMOTEIO, perr, false);
		return;
	}
	if (!r->len) {
		shm_answer(c, r->id, 0, 0, false);
		return;
	}
	/* one copy when the kernel lets us; else through the ring */
	if (c->cma_out && r->len >= SHM_CMA_MIN && !shm_cma(c, r, p, true)) {
		shm_answer(c, r->id, 0, 0, true);
		return;
	}
	op = shm_op_new(c, NULL, SHM_T_RDATA, NULL, 0);
	if (!op) {
		shm_broken(c, "no memory for an answer");
		return;
	}
	op->id = r->id;
	op->rkey = r->rkey;
	op->raddr = r->raddr;
	op->total = r->len;
	shm_tx_queue(c, op);
}

static void shm_rx_write(struct shm_conn *c, const struct shm_rma *r,
			 const uint8_t *payload, uint32_t len)
{
	struct shm_rx *x = &c->rx;
	int perr = 0, err = 0;
	void *p = r->len ? shm_target(c, r, IW_ACC_REMOTE_WRITE, &perr) : NULL;

	if (r->len && !p)
		err = FI_EREMOTEIO;
	if (r->cma) {
		if (!err && r->len)
			err = c->cma_out ? shm_cma(c, r, p, false) : FI_EIO;
		shm_answer(c, r->id, err, perr, false);
		return;
	}
	memset(x, 0, sizeof(*x));
	x->type = SHM_T_WRITE;
	x->id = r->id;
	x->total = r->len;
	x->err = err;
	x->prov_errno = perr;
	if (p) {
		x->dst[0].addr = p;
		x->dst[0].len = (uint32_t)r->len;
		x->n = 1;
	}
	if (!err && !shm_rx_scatter(c, payload, len))
		return;
	if (err)
		x->got += len;
	if (x->got == x->total) {
		memset(x, 0, sizeof(*x));
		shm_answer(c, r->id, err, perr, false);
	}
}

static void shm_rx_rma(struct shm_conn *c, uint32_t type, const uint8_t *d,
		       const uint8_t *payload, uint32_t len)
{
	struct shm_rma r;

	memcpy(&r, d, sizeof(r));
	if (len > SHM_SLOT_DATA - sizeof(r) || !shm_iov_sum(&r, r.len) ||
	    r.len > UINT32_MAX || (type == SHM_T_WRITE && !r.cma &&
				   len > r.len)) {
		shm_broken(c, "an RMA request out of range");
		return;
	}
	if (type == SHM_T_READ)
		shm_rx_read(c, &r);
	else
		shm_rx_write(c, &r, payload, len);
}

/* The oldest request we wait for must be the one answered. */
static struct shm_op *shm_waited(struct shm_conn *c, uint64_t id)
{
	struct shm_op *op;

	if (iwarp_list_empty(&c->waitq)) {
		shm_broken(c, "an answer to nothing");
		return NULL;
	}
	op = iwarp_container_of(c->waitq.next, struct shm_op, link);
	if (op->id != id) {
		shm_broken(c, "an answer out of order");
		return NULL;
	}
	return op;
}

static void shm_rx_ack(struct shm_conn *c, const uint8_t *d)
{
	struct shm_ack a;
	struct shm_op *op;
	int err;

	memcpy(&a, d, sizeof(a));
	op = shm_waited(c, a.id);
	if (!op)
		return;
	err = a.err == 0 || a.err == FI_EREMOTEIO || a.err == FI_EIO ?
	      a.err : FI_EIO;
	if (!err && op->type == SHM_T_READ && !a.cma && op->got != op->total)
		err = FI_EIO;	/* fewer RDATA octets than asked */
	iwarp_list_del(&op->link);
	c->se->up->done(c->peer, op->ctx, err, err ? a.prov_errno : 0);
	shm_op_free(c, op);
}

static void shm_rx_rdata(struct shm_conn *c, const uint8_t *d,
			 const uint8_t *p, uint32_t len)
{
	struct shm_op *op;
	uint64_t id;

	memcpy(&id, d, 8);
	op = shm_waited(c, id);
	if (!op)
		return;
	if (op->type != SHM_T_READ || len > SHM_SLOT_DATA - 8 ||
	    len > op->total - op->got) {
		shm_broken(c, "read data beyond the request");
		return;
	}
	op->got += len;
	while (len) {
		const struct iovec *v = &op->iov[op->ci];
		size_t k = v->iov_len - op->coff;

		if (k > len)
			k = len;
		memcpy((uint8_t *)v->iov_base + op->coff, p, k);
		p += k;
		len -= (uint32_t)k;
		op->coff += k;
		if (op->coff == v->iov_len) {
			op->ci++;
			op->coff = 0;
		}
	}
}

static void shm_rx_cont(struct shm_conn *c, const uint8_t *d, uint32_t len)
{
	struct shm_rx *x = &c->rx;

	if (x->type == SHM_T_MSG) {
		if (shm_rx_scatter(c, d, len) && x->got == x->total)
			shm_rx_msg_end(c);
		return;
	}
	if (x->type != SHM_T_WRITE) {
		shm_broken(c, "a continuation of nothing");
		return;
	}
	if (!x->err && !shm_rx_scatter(c, d, len))
		return;
	if (x->err) {
		if (len > x->total - x->got) {
			shm_broken(c, "a write longer than it announced");
			return;
		}
		x->got += len;
	}
	if (x->got == x->total) {
		uint64_t id = x->id;
		int err = x->err, perr = x->prov_errno;

		memset(x, 0, sizeof(*x));
		shm_answer(c, id, err, perr, false);
	}
}

/* One slot: its fixed fields are copied out once before they are
 * checked; payload is copied straight to where it goes. */
static void shm_rx_slot(struct shm_conn *c, const struct shm_slot *s)
{
	uint32_t type = __atomic_load_n(&s->type, __ATOMIC_RELAXED);
	uint32_t len = __atomic_load_n(&s->len, __ATOMIC_RELAXED);
	uint8_t *d = c->bounce;

	if (len > SHM_SLOT_DATA) {
		shm_broken(c, "a slot length beyond the slot");
		return;
	}
	if (type != SHM_T_CONT && c->rx.type) {
		shm_broken(c, "a new message inside another");
		return;
	}
	switch (type) {
	case SHM_T_MSG:
		memcpy(d, s->data, sizeof(struct shm_msg));
		shm_rx_msg(c, d, s->data + sizeof(struct shm_msg), len);
		break;
	case SHM_T_SMALL:
		shm_rx_small(c, s->data, len);
		break;
	case SHM_T_CONT:
		shm_rx_cont(c, s->data, len);
		break;
	case SHM_T_WRITE:
	case SHM_T_READ:
		memcpy(d, s->data, sizeof(struct shm_rma));
		shm_rx_rma(c, type, d, s->data + sizeof(struct shm_rma), len);
		break;
	case SHM_T_ACK:
		memcpy(d, s->data, sizeof(struct shm_ack));
		shm_rx_ack(c, d);
		break;
	case SHM_T_RDATA:
		memcpy(d, s->data, 8);
		shm_rx_rdata(c, d, s->data + 8, len);
		break;
	default:
		shm_broken(c, "a slot of unknown type");
		break;
	}
}

/* Sets rx_tail and what follows from it. */
static void shm_rx_at(struct shm_conn *c, uint64_t tail)
{
	c->rx_tail = tail;
	c->rx_slot = shm_slot(c->rx_seg, tail);
	c->rx_lap = tail < SHM_SLOTS ? 0 : tail + 1 - SHM_SLOTS;
}

/* The next slot if the peer published it: its sequence number is ours
 * + 1, or still the last lap's; any other is a lie. */
static struct shm_slot *shm_rx_next(struct shm_conn *c, int order)
{
	struct shm_slot *s = c->rx_slot;
	uint64_t seq = __atomic_load_n(&s->seq, order);

	if (seq == c->rx_tail + 1)
		return s;
	if (seq != c->rx_lap)
		shm_broken(c, "a slot's sequence number out of range");
	return NULL;
}

/*
 * What we queued goes out between the slots we consume: a slot consumed
 * may be a rendezvous offer we copy out of the peer's memory at once, and
 * a ring full of them holds us for a long time, while the peer, done
 * with its own, waits for the offers still in our queue.
 */
static void shm_rx_consume(struct shm_conn *c)
{
	unsigned int budget = SHM_RX_BUDGET;
	struct shm_slot *s;

	while (c->mode == SHM_ON && budget--) {
		s = shm_rx_next(c, __ATOMIC_ACQUIRE);
		if (!s)
			return;
		shm_rx_slot(c, s);
		if (c->mode != SHM_ON)
			return;
		shm_rx_at(c, c->rx_tail + 1);
		__atomic_store_n(&c->rx_seg->tail, c->rx_tail,
				 __ATOMIC_RELEASE);
		if (!iwarp_list_empty(&c->txq))
			shm_tx_flush(c);
	}
}

/* Consumes what is there; a producer asleep on a full ring is woken. */
static void shm_rx_run(struct shm_conn *c)
{
	uint64_t from = c->rx_tail;

	shm_rx_consume(c);
	if (c->rx_tail != from && c->mode == SHM_ON)
		shm_kick(c, SHM_WAKE_ROOM);
}

static void shm_done_run(struct shm_conn *c)
{
	while (c->mode == SHM_ON && !iwarp_list_empty(&c->doneq)) {
		struct shm_op *op = iwarp_container_of(c->doneq.next,
						       struct shm_op, link);

		iwarp_list_del(&op->link);
		c->se->up->done(c->peer, op->ctx, 0, 0);
		shm_op_free(c, op);
	}
}

/* A busy poll mostly finds nothing: the ring is on and its next slot
 * still has its last lap's number. */
static bool shm_rx_quiet(const struct shm_conn *c)
{
	return c->mode == SHM_ON &&
	       __atomic_load_n(&c->rx_slot->seq, __ATOMIC_RELAXED) ==
		       c->rx_lap;
}

static void shm_progress(struct iwarp_pollable *p)
{
	struct shm_conn *c = iwarp_container_of(p, struct shm_conn, poll);
	uint64_t v;

	if (c->armed) {
		c->armed = false;
		c->awake_calls = 0;
		__atomic_store_n(&c->rx_seg->asleep, 0, __ATOMIC_RELAXED);
		if (read(c->bell_in, &v, sizeof(v)) < 0 && errno != EAGAIN)
			FI_INFO(&iwarp_prov, FI_LOG_EP_DATA,
				"RDM peer %s: doorbell: %s\n", c->name,
				strerror(errno));
	} else if (c->sleeper && ++c->awake_calls > SHM_SLEEPER_IDLE) {
		c->sleeper = false;
		__atomic_store_n(&c->rx_seg->sleeper, 0, __ATOMIC_RELAXED);
	}
	if (!shm_rx_quiet(c))
		shm_rx_run(c);
	if (!iwarp_list_empty(&c->txq))
		shm_tx_flush(c);
	if (!iwarp_list_empty(&c->doneq))
		shm_done_run(c);
	if (c->mode == SHM_BROKEN)
		shm_teardown(c);
}

/* What shm_progress would do nothing about: no doorbell armed, no
 * sleeper flag to count down, the next slot still unpublished, nothing
 * queued either way. */
static bool shm_idle(struct iwarp_pollable *p)
{
	struct shm_conn *c = iwarp_container_of(p, struct shm_conn, poll);

	return !c->armed && !c->sleeper && shm_rx_quiet(c) &&
	       iwarp_list_empty(&c->txq) && iwarp_list_empty(&c->doneq);
}

/* No descriptor to poll: progress calls come every turn anyway, and
 * without a doorbell blocking waits look again every millisecond (a
 * deadline already past backs them off by 1 ms; no clock read here, as
 * every progress call with several peers asks). */
static void shm_poll_info(struct iwarp_pollable *p, int *fd, short *events,
			  uint64_t *deadline)
{
	(void)p;
	*fd = -1;
	*events = 0;
	*deadline = 1;
}

/* A wait is about to sleep: asleep set, then a last look at both rings
 * (the peer checks the flag after its counter store); work already
 * there rings our own bell so the wait does not sleep. */
static int shm_sleep_fd(struct iwarp_pollable *p)
{
	struct shm_conn *c = iwarp_container_of(p, struct shm_conn, poll);
	uint64_t one = 1, tail;
	bool work, first;

	if (c->mode != SHM_ON || c->bell_in < 0 || !c->bell_taken)
		return -1;
	/* the peer may have stored before it saw sleeper: look once more */
	first = !c->sleeper;
	if (first) {
		c->sleeper = true;
		__atomic_store_n(&c->rx_seg->sleeper, 1, __ATOMIC_SEQ_CST);
	}
	__atomic_store_n(&c->rx_seg->asleep, SHM_WAKE_DATA |
			 (iwarp_list_empty(&c->txq) ? 0 : SHM_WAKE_ROOM),
			 __ATOMIC_SEQ_CST);
	c->armed = true;
	tail = __atomic_load_n(&c->tx_seg->tail, __ATOMIC_SEQ_CST);
	work = first || shm_rx_next(c, __ATOMIC_SEQ_CST) ||
	       c->mode != SHM_ON ||
	       (!iwarp_list_empty(&c->txq) && c->tx_head - tail < SHM_SLOTS);
	if (work && write(c->bell_in, &one, sizeof(one)) < 0 &&
	    errno != EAGAIN)
		return -1;
	return c->bell_in;
}

/* ---- the handshake over the iWARP connection */

static void shm_hs_send(struct shm_conn *c, uint8_t kind, const void *body,
			size_t len)
{
	uint8_t *h = c->hs_hdr[kind - 1];
	struct iovec v = { (void *)body, len };

	memset(h, 0, IWARP_RDM_HDR_LEN);
	h[0] = SHM_HS_OP;
	h[1] = kind;
	if (iw->post_msg(c->iw, h, h, IWARP_RDM_HDR_LEN, &v, 1))
		c->my_ok = 0;
}

static void shm_forward_up(struct shm_conn *c)
{
	c->fwd_up = true;
	c->se->up->connected(c->peer);
}

/* Both verdicts known: shared memory or TCP, for both sides alike. */
static void shm_decide(struct shm_conn *c)
{
	bool on = c->my_ok == 1 && c->peer_ok == 1;

	if (c->my_ok < 0 || c->peer_ok < 0)
		return;
	shm_unlink_mine(c);
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: %s\n", c->name, on ? (c->cma_out && c->cma_in ?
		"shared memory (same host and network namespace; RMA by "
		"process_vm_readv/writev)" : "shared memory (same host and "
		"network namespace; RMA through the rings)") :
		"TCP (not the same host and network namespace, or shared "
		"memory refused)");
	if (!on) {
		shm_unmap(c);
		c->mode = SHM_TCP;
		shm_forward_up(c);
		return;
	}
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL, "RDM peer %s: sleeping waits "
		"%s\n", c->name, c->bell_out >= 0 && c->bell_taken ?
		"woken by the peer (eventfd doorbells both ways)" :
		"look again every millisecond (no doorbell)");
	c->mode = SHM_ON;
	c->tx_head = c->tx_tail = 0;
	shm_rx_at(c, 0);
	iwarp_rdm_iw_quiet(c->iw, true);
	if (!c->polled)
		c->se->up->poll_add(c->se->ep, &c->poll);
	c->polled = true;
	shm_forward_up(c);
}

static bool shm_cma_probe(const struct shm_hello *h, uint32_t pid)
{
	uint8_t got[16];
	struct iovec l = { got, sizeof(got) };
	struct iovec r = { (void *)(uintptr_t)h->cookie_addr, sizeof(got) };

	return process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0) ==
	       (ssize_t)sizeof(got) && !memcmp(got, h->cookie, sizeof(got));
}

/*
 * The peer's eventfd number fd, copied into this process: an fd of the
 * peer's that is not an eventfd (a peer lying) is refused, -1.
 */
static int shm_bell_take(struct shm_conn *c, uint32_t pid, uint32_t fd)
{
	char path[40], what[32];
	int pfd, bell;
	ssize_t n;

	if (fd > INT32_MAX)
		return -1;
	pfd = pidfd_open((pid_t)pid, 0);
	if (pfd < 0)
		return -1;
	bell = pidfd_getfd(pfd, (int)fd, 0);
	iw_fd_close(pfd);
	if (bell < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", bell);
	n = readlink(path, what, sizeof(what) - 1);
	if (n < 0 || (what[n] = 0, strcmp(what, "anon_inode:[eventfd]"))) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
			"RDM peer %s: its doorbell is no eventfd: none\n",
			c->name);
		iw_fd_close(bell);
		return -1;
	}
	return bell;
}

static void shm_hello_in(struct shm_conn *c, const struct shm_hello *h)
{
	const struct shm_hello *me = &c->se->me;
	struct shm_result res = { 0 };
	struct shm_hello t = *h;

	t.boot[sizeof(t.boot) - 1] = 0;
	t.seg[sizeof(t.seg) - 1] = 0;
	if (c->my_ok != 0 && t.boot[0] && !strcmp(t.boot, me->boot) &&
	    t.netns == me->netns && t.seg[0] && shm_name_ok(t.seg, t.pid) &&
	    shm_seg_open(c, t.seg)) {
		res.ok = 1;
		c->pid = t.pid;
		c->cma_out = t.pidns == me->pidns && shm_cma_probe(&t, t.pid);
		res.cma = c->cma_out;
		if (c->cma_out && t.bell)
			c->bell_out = shm_bell_take(c, t.pid, t.bell - 1);
		res.bell = c->bell_out >= 0;
	}
	c->my_ok = res.ok;
	c->hs_result = res;
	shm_hs_send(c, SHM_RESULT, &c->hs_result, sizeof(c->hs_result));
	shm_decide(c);
}

static void shm_hs_recv(struct shm_conn *c, uint64_t len, bool ok)
{
	size_t want = c->hs_kind == SHM_HELLO ? sizeof(struct shm_hello) :
						sizeof(struct shm_result);

	if (c->mode == SHM_NONE && c->hs_kind == SHM_HELLO) {
		c->hs_early = true;	/* answered once we are connected */
		c->hs_early_len = len;
		c->hs_early_ok = ok;
		return;
	}
	if (c->mode != SHM_HANDSHAKE)
		return;
	if (!ok || len != IWARP_RDM_HDR_LEN + want) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
			"RDM peer %s: malformed shared memory handshake: "
			"TCP\n", c->name);
		if (c->hs_kind == SHM_HELLO) {
			c->my_ok = 0;
			memset(&c->hs_result, 0, sizeof(c->hs_result));
			shm_hs_send(c, SHM_RESULT, &c->hs_result,
				    sizeof(c->hs_result));
		} else {
			c->peer_ok = 0;
		}
		shm_decide(c);
		return;
	}
	if (c->hs_kind == SHM_HELLO) {
		shm_hello_in(c, &c->hs_buf.hello);
		return;
	}
	c->peer_ok = c->hs_buf.result.ok == 1;
	c->cma_in = c->hs_buf.result.cma == 1;
	c->bell_taken = c->hs_buf.result.bell == 1;
	shm_decide(c);
}

/* ---- upcalls from the iWARP transport */

static struct iwarp_rdm_xconn *shm_up_peer(struct iwarp_rdm_ep *ep,
					   const union iwarp_sockaddr *addr)
{
	struct shm_ep *se = shm_ep_of(ep);
	struct shm_conn *c = (struct shm_conn *)(void *)
			     se->up->peer(se->ep, addr);

	return c ? c->iw : NULL;
}

static bool shm_up_queued(struct iwarp_rdm_peer *peer)
{
	struct shm_conn *c = shm_conn_of(peer);

	return c->se->up->queued(c->peer);
}

static int shm_up_place(struct iwarp_rdm_peer *peer, const uint8_t *hdr,
			size_t hdr_len, struct iw_sge *dst, void **ctx)
{
	struct shm_conn *c = shm_conn_of(peer);

	if (hdr_len < 2 || hdr[0] != SHM_HS_OP)
		return c->se->up->place(c->peer, hdr, hdr_len, dst, ctx);
	if ((c->mode != SHM_HANDSHAKE &&
	     (c->mode != SHM_NONE || hdr[1] != SHM_HELLO)) ||
	    (hdr[1] != SHM_HELLO && hdr[1] != SHM_RESULT))
		return -1;	/* not in a handshake: the connection ends */
	c->hs_kind = hdr[1];
	dst[0].addr = &c->hs_buf;
	dst[0].len = hdr[1] == SHM_HELLO ? sizeof(struct shm_hello) :
					   sizeof(struct shm_result);
	*ctx = c->hs_in;
	return 1;
}

static void shm_up_recv(struct iwarp_rdm_peer *peer, void *ctx, uint64_t len,
			bool ok)
{
	struct shm_conn *c = shm_conn_of(peer);

	if (shm_ours(c, ctx))
		shm_hs_recv(c, len, ok);
	else
		c->se->up->recv(c->peer, ctx, len, ok);
}

static void shm_up_done(struct iwarp_rdm_peer *peer, void *ctx, int err,
			int prov_errno)
{
	struct shm_conn *c = shm_conn_of(peer);

	if (!shm_ours(c, ctx))
		c->se->up->done(c->peer, ctx, err, prov_errno);
}

static void shm_up_connected(struct iwarp_rdm_peer *peer)
{
	struct shm_conn *c = shm_conn_of(peer);
	struct shm_ep *se = c->se;

	if (c->self || !iwarp_rdm_iw_peer_shm(c->iw)) {
		FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL, "RDM peer %s: TCP (%s)\n",
			c->name, c->self ? "this endpoint itself" :
			"the peer offers no shared memory");
		c->mode = SHM_TCP;
		shm_forward_up(c);
		return;
	}
	c->mode = SHM_HANDSHAKE;
	c->my_ok = c->peer_ok = -1;
	c->cma_in = c->cma_out = false;
	c->hs_hello = se->me;
	if (shm_seg_create(c))
		memcpy(c->hs_hello.seg, c->my_seg, sizeof(c->hs_hello.seg));
	else
		c->my_ok = 0;	/* the peer then refuses too */
	c->bell_in = c->my_ok ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1;
	c->hs_hello.bell = c->bell_in >= 0 ? (uint32_t)c->bell_in + 1 : 0;
	shm_hs_send(c, SHM_HELLO, &c->hs_hello, sizeof(c->hs_hello));
	if (c->hs_early) {
		c->hs_early = false;
		c->hs_kind = SHM_HELLO;
		shm_hs_recv(c, c->hs_early_len, c->hs_early_ok);
	}
}

static void shm_up_lost(struct iwarp_rdm_peer *peer, int err)
{
	struct shm_conn *c = shm_conn_of(peer);
	bool up = c->fwd_up;

	/* what the peer put in the ring before it went still counts */
	if (c->mode == SHM_ON)
		shm_rx_run(c);
	if (c->mode == SHM_ON || c->mode == SHM_BROKEN)
		FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
			"RDM peer %s: connection gone: shared memory "
			"ends\n", c->name);
	shm_down(c, err, true);
	c->fwd_up = false;
	if (up)
		c->se->up->lost(c->peer, err);
}

static void shm_up_unreachable(struct iwarp_rdm_peer *peer, int err,
			       int prov_errno)
{
	struct shm_conn *c = shm_conn_of(peer);

	c->se->up->unreachable(c->peer, err, prov_errno);
}

static void shm_up_poll_add(struct iwarp_rdm_ep *ep, struct iwarp_pollable *p)
{
	struct shm_ep *se = shm_ep_of(ep);

	se->up->poll_add(se->ep, p);
}

/* Only TCP peers get here: endpoints that count remote access
 * (FI_RMA_EVENT) never move to shared memory (rdm_ep.c). */
static void shm_up_target(struct iwarp_rdm_ep *ep, bool write, void *mr_ctx)
{
	struct shm_ep *se = shm_ep_of(ep);

	se->up->target(se->ep, write, mr_ctx);
}

static void shm_up_poll_del(struct iwarp_rdm_ep *ep, struct iwarp_pollable *p)
{
	struct shm_ep *se = shm_ep_of(ep);

	se->up->poll_del(se->ep, p);
}

static const struct iwarp_rdm_upcalls shm_upcalls = {
	.peer = shm_up_peer,
	.queued = shm_up_queued,
	.place = shm_up_place,
	.recv = shm_up_recv,
	.done = shm_up_done,
	.connected = shm_up_connected,
	.lost = shm_up_lost,
	.unreachable = shm_up_unreachable,
	.target = shm_up_target,
	.poll_add = shm_up_poll_add,
	.poll_del = shm_up_poll_del,
};

/* ---- the transport */

static int shm_listen(struct iwarp_rdm_ep *ep, struct iwarp_domain *dom,
		      union iwarp_sockaddr *name, uint64_t instance,
		      const struct iwarp_auth_key *key,
		      const struct iwarp_rdm_upcalls *up,
		      struct iwarp_rdm_xep **xe)
{
	struct shm_ep *se = calloc(1, sizeof(*se));
	int ret;

	if (!se)
		return -FI_ENOMEM;
	se->ep = ep;
	se->up = up;
	se->dom = dom;
	shm_identity(se);
	ret = iw->listen((struct iwarp_rdm_ep *)(void *)se, dom, name,
			 instance, key, &shm_upcalls, &se->iw);
	if (ret) {
		free(se);
		return ret;
	}
	se->name = *name;
	iwarp_rdm_iw_offer_shm(se->iw);
	*xe = (struct iwarp_rdm_xep *)(void *)se;
	return 0;
}

static void shm_shutdown(struct iwarp_rdm_xep *xe)
{
	struct shm_ep *se = (struct shm_ep *)(void *)xe;

	iw->shutdown(se->iw);
	free(se);
}

static bool shm_same_addr(const union iwarp_sockaddr *a,
			  const union iwarp_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET6)
		return a->sin6.sin6_port == b->sin6.sin6_port &&
		       !memcmp(&a->sin6.sin6_addr, &b->sin6.sin6_addr, 16);
	return a->sin.sin_port == b->sin.sin_port &&
	       a->sin.sin_addr.s_addr == b->sin.sin_addr.s_addr;
}

static struct iwarp_rdm_xconn *shm_peer_open(struct iwarp_rdm_xep *xe,
					     struct iwarp_rdm_peer *peer,
					     const union iwarp_sockaddr *addr)
{
	struct shm_ep *se = (struct shm_ep *)(void *)xe;
	struct shm_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->bounce = malloc(SHM_SLOT_DATA);
	if (!c->bounce) {
		free(c);
		return NULL;
	}
	c->se = se;
	c->peer = peer;
	c->addr = *addr;
	c->self = shm_same_addr(addr, &se->name);
	c->my_ok = c->peer_ok = -1;
	iwarp_addr_str(addr, c->name, sizeof(c->name));
	iwarp_list_init(&c->txq);
	iwarp_list_init(&c->waitq);
	iwarp_list_init(&c->doneq);
	iwarp_list_init(&c->spares);
	iwarp_list_init(&c->poll.link);
	c->poll.progress = shm_progress;
	c->poll.poll_info = shm_poll_info;
	c->poll.sleep_fd = shm_sleep_fd;
	c->poll.idle = shm_idle;
	c->poll.busy = true;
	c->bell_in = c->bell_out = -1;
	c->iw = iw->peer_open(se->iw, (struct iwarp_rdm_peer *)(void *)c,
			      addr);
	if (!c->iw) {
		free(c->bounce);
		free(c);
		return NULL;
	}
	return (struct iwarp_rdm_xconn *)(void *)c;
}

static struct shm_conn *shm_of(struct iwarp_rdm_xconn *xc)
{
	return (struct shm_conn *)(void *)xc;
}

static void shm_peer_close(struct iwarp_rdm_xconn *xc)
{
	struct shm_conn *c = shm_of(xc);

	shm_down(c, FI_ECANCELED, false);
	iw->peer_close(c->iw);
	shm_spares_free(c);
	free(c->bounce);
	free(c);
}

static void shm_connect(struct iwarp_rdm_xconn *xc)
{
	iw->connect(shm_of(xc)->iw);
}

static bool shm_on(const struct shm_conn *c)
{
	return c->mode == SHM_ON || c->mode == SHM_BROKEN;
}

/*
 * A message that fits one slot, with nothing queued before it and room
 * in the ring, is written straight into the slot: no op to fill and no
 * queue to walk on a small message's path. An op (a spare, not cleared)
 * only carries ctx to the completion. false: go the long way.
 */
static bool shm_post_small(struct shm_conn *c, void *ctx, const uint8_t *hdr,
			   size_t hdr_len, const struct iovec *iov,
			   size_t count)
{
	uint32_t len, type;
	struct shm_msg *m;
	struct shm_slot *s;
	struct shm_op *op;
	size_t i, total = 0;
	uint8_t *p;

	for (i = 0; i < count; i++)
		total += iov[i].iov_len;
	if (c->mode != SHM_ON || total > SHM_SLOT_DATA - sizeof(*m) ||
	    !iwarp_list_empty(&c->txq) ||
	    (ctx && iwarp_list_empty(&c->spares)))
		return false;
	s = shm_tx_slot(c);
	if (!s)
		return false;
	if (ctx) {
		op = shm_spare_take(c);
		op->ctx = ctx;
		op->type = SHM_T_MSG;
		op->count = 0;
		iwarp_list_add_tail(&c->doneq, &op->link);
	}
	if (hdr_len == IWARP_RDM_HDR_LEN) {
		/* the header's trailing zeros (an eager message has no
		 * address) stay home: with CQ data and 8 octets of payload
		 * the slot is one cache line, which the consumer's core
		 * fetches once */
		size_t n = shm_hdr_used(hdr);

		s->data[0] = (uint8_t)n;
		/* all of it, a fixed-size copy: the payload overwrites the
		 * zeros past n */
		memcpy(s->data + 1, hdr, IWARP_RDM_HDR_LEN);
		p = s->data + 1 + n;
		len = (uint32_t)(1 + n + total);
		type = SHM_T_SMALL;
	} else {
		m = (struct shm_msg *)(void *)s->data;
		m->hdr_len = (uint32_t)hdr_len;
		m->pad = 0;
		m->total = total;
		memcpy(m->hdr, hdr, hdr_len);
		memset(m->hdr + hdr_len, 0, sizeof(m->hdr) - hdr_len);
		p = s->data + sizeof(*m);
		len = (uint32_t)total;
		type = SHM_T_MSG;
	}
	for (i = 0; i < count; i++) {
		if (iov[i].iov_len)	/* an empty entry may have no base */
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	shm_tx_push(c, s, type, len);
	shm_kick(c, SHM_WAKE_DATA);
	return true;
}

static int shm_post_msg(struct iwarp_rdm_xconn *xc, void *ctx,
			const uint8_t *hdr, size_t hdr_len,
			const struct iovec *iov, size_t count)
{
	struct shm_conn *c = shm_of(xc);
	struct shm_op *op;

	if (!shm_on(c))
		return iw->post_msg(c->iw, ctx, hdr, hdr_len, iov, count);
	if (hdr_len > IWARP_RDM_HDR_LEN)
		return -EINVAL;
	if (shm_post_small(c, ctx, hdr, hdr_len, iov, count))
		return 0;
	op = shm_op_new(c, ctx, SHM_T_MSG, iov, count);
	if (!op)
		return -ENOMEM;
	memcpy(op->hdr, hdr, hdr_len);
	op->hdr_len = (uint32_t)hdr_len;
	shm_tx_queue(c, op);
	return 0;
}

/*
 * A rendezvous Read copied by us, from the message the sender offered at
 * raddr in its own memory, in one process_vm_readv: the sender takes no
 * part until our FIN (and we may read nothing the kernel's ptrace check
 * did not already let us read). false: it goes as a request after all.
 */
static bool shm_read_peer_va(struct shm_conn *c, struct shm_op *op,
			     uint64_t raddr)
{
	struct iovec remote = { (void *)(uintptr_t)raddr, op->total };

	if (!c->cma_out || op->total < SHM_CMA_MIN)
		return false;
	return process_vm_readv((pid_t)c->pid, op->iov, op->count, &remote,
				1, 0) == (ssize_t)op->total;
}

static int shm_post_rdma(struct iwarp_rdm_xconn *xc, void *ctx,
			 enum iwarp_rdm_xop xop, const struct iovec *iov,
			 size_t count, uint32_t rkey, uint64_t raddr,
			 unsigned int flags)
{
	struct shm_conn *c = shm_of(xc);
	struct shm_op *op;

	if (!shm_on(c))
		return iw->post_rdma(c->iw, ctx, xop, iov, count, rkey, raddr,
				     flags);
	/* the target serves requests in order: Reads before are done */
	if (count > IW_MAX_SGE)
		return -EINVAL;
	op = shm_op_new(c, ctx, xop == IWARP_RDM_X_READ ? SHM_T_READ :
			SHM_T_WRITE, iov, count);
	if (!op)
		return -ENOMEM;
	if ((flags & IWARP_RDM_X_PEER_VA) && shm_read_peer_va(c, op, raddr)) {
		iwarp_list_add_tail(&c->doneq, &op->link);
		return 0;
	}
	op->rkey = rkey;
	op->raddr = raddr;
	op->cma = op->type == SHM_T_WRITE && c->cma_in &&
		  op->total >= SHM_CMA_MIN;
	shm_tx_queue(c, op);
	return 0;
}

static int shm_post_atomic(struct iwarp_rdm_xconn *xc, void *ctx,
			   const struct iwarp_rdm_xatomic *a)
{
	struct shm_conn *c = shm_of(xc);

	if (shm_on(c))
		return -ENOSYS;	/* atomics() said no: AREQ instead */
	return iw->post_atomic(c->iw, ctx, a);
}

static bool shm_atomics(const struct iwarp_rdm_xconn *xc)
{
	const struct shm_conn *c = (const struct shm_conn *)(const void *)xc;

	return !shm_on(c) && iw->atomics(c->iw);
}

static unsigned int shm_window(const struct iwarp_rdm_xconn *xc)
{
	const struct shm_conn *c = (const struct shm_conn *)(const void *)xc;

	return iw->window(c->iw);
}

static bool shm_eager_idle(const struct iwarp_rdm_xconn *xc)
{
	const struct shm_conn *c = (const struct shm_conn *)(const void *)xc;

	return c->mode == SHM_TCP && iw->eager_idle(c->iw);
}

/* Above two slots' worth the two copies cost more than a rendezvous's
 * round trip (osu_bibw: 32 KiB 4.5 GB/s eager, 8 by rendezvous). */
#define SHM_STREAM_EAGER 16384

static size_t shm_stream_eager(const struct iwarp_rdm_xconn *xc)
{
	const struct shm_conn *c = (const struct shm_conn *)(const void *)xc;

	return c->mode == SHM_ON && c->cma_in ? SHM_STREAM_EAGER :
	       iw->stream_eager(c->iw);
}

static size_t shm_read_chunk(const struct iwarp_rdm_xconn *xc)
{
	const struct shm_conn *c = (const struct shm_conn *)(const void *)xc;

	return c->mode == SHM_ON ? 0 : iw->read_chunk(c->iw);
}

static uint64_t shm_read_window(const struct iwarp_rdm_xconn *xc)
{
	const struct shm_conn *c = (const struct shm_conn *)(const void *)xc;

	return iw->read_window(c->iw);
}

/* A ring's messages go as posted; over TCP the iWARP batch holds. */
static void shm_batch(struct iwarp_rdm_xconn *xc, bool on)
{
	struct shm_conn *c = shm_of(xc);

	iw->batch(c->iw, on);
}

/* Straight into the ring, nothing to complete: the peer has the
 * message once it is in its ring. */
static bool shm_post_inline(struct iwarp_rdm_xconn *xc, const uint8_t *hdr,
			    size_t hdr_len, const struct iovec *iov,
			    size_t count)
{
	return shm_post_small(shm_of(xc), NULL, hdr, hdr_len, iov, count);
}

const struct iwarp_rdm_xport iwarp_rdm_shm_xport = {
	.name = "shm",
	.listen = shm_listen,
	.shutdown = shm_shutdown,
	.peer_open = shm_peer_open,
	.peer_close = shm_peer_close,
	.connect = shm_connect,
	.post_msg = shm_post_msg,
	.post_rdma = shm_post_rdma,
	.post_atomic = shm_post_atomic,
	.atomics = shm_atomics,
	.window = shm_window,
	.eager_idle = shm_eager_idle,
	.stream_eager = shm_stream_eager,
	.read_chunk = shm_read_chunk,
	.read_window = shm_read_window,
	.batch = shm_batch,
	.post_inline = shm_post_inline,
};
