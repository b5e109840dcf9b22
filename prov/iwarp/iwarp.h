/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Private header of the iwarp libfabric provider (the glue in prov/iwarp).
 * Everything here has hidden visibility: the shared object exports only
 * fi_prov_ini().
 */
#ifndef IWARP_PROV_H
#define IWARP_PROV_H

#include "config.h"

#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* fi_log.h compiles FI_DBG in only when ENABLE_DEBUG is set. */
#if defined(IW_DEBUG) && IW_DEBUG && !defined(ENABLE_DEBUG)
#define ENABLE_DEBUG 1
#endif

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "iwarp/ring.h"
#include "iwarp/wire.h"

#define IWARP_PROV_NAME		"iwarp"
/*
 * The API of the headers we are built against: a 2.x core skips a
 * provider older than the version an application asks for.
 */
#define IWARP_FI_VERSION	FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

/*
 * 1.x values that 2.x headers deprecate with a warning at every use
 * (fabric.h); the ABI keeps them and 1.x applications still send them.
 */
#define IWARP_MR_UNSPEC		0
#define IWARP_MR_BASIC		(1 << 0)
#define IWARP_MR_SCALABLE	(1 << 1)
#define IWARP_ORDER_NONE	0ULL
#define IWARP_ORDER_STRICT	0x1ffULL
/* FI_VARIABLE_MSG in 1.x, FI_EXACT_DIRECTED_RECV in 2.x: receive side */
#define IWARP_CAP_BIT48		(1ULL << 48)

#define IWARP_MSG_DIR	(FI_SEND | FI_RECV)
#define IWARP_RMA_DIR	(FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

/* A bare FI_MSG or FI_RMA means every direction we have for it. */
static inline uint64_t iwarp_caps_expand(uint64_t caps, uint64_t avail)
{
	if ((caps & (FI_MSG | FI_TAGGED)) && !(caps & IWARP_MSG_DIR))
		caps |= avail & IWARP_MSG_DIR;
	if ((caps & (FI_RMA | FI_ATOMIC)) && !(caps & IWARP_RMA_DIR))
		caps |= avail & IWARP_RMA_DIR;
	return caps;
}

/* Whether an endpoint with these caps takes remote Writes. */
static inline bool iwarp_caps_rwrite(uint64_t caps)
{
	return (caps & FI_RMA) &&
	       (iwarp_caps_expand(caps, IWARP_RMA_DIR) & FI_REMOTE_WRITE);
}

/* fi_getinfo's version: the application wants the 2.x behaviour. */
static inline bool iwarp_api_v2(uint32_t version)
{
	return FI_VERSION_GE(version, FI_VERSION(2, 0));
}

/*
 * Internal getinfo flag of libfabric (include/ofi.h, not installed):
 * ofi_rxm asks core providers with it when it wants to layer over them.
 */
#define IWARP_OFI_CORE_PROV_ONLY	(1ULL << 59)

extern struct fi_provider iwarp_prov;

/* Runtime parameters (FI_IWARP_*), read once in fi_prov_ini(). */
struct iwarp_params {
	char *iface;		/* NULL: every interface */
	int allow_rxm;		/* let ofi_rxm layer over us */
	size_t rdm_unexp_max;	/* unexpected RDM octets before credits wait */
	int crc;		/* ask every peer for the MPA CRC */
	int rfc7306;		/* offer RFC 7306 atomics to RDM peers */
	size_t rdm_eager;	/* RDM messages up to this go eagerly */
	size_t rdm_eager_idle;	/* ... and to an idle TCP peer, up to this */
	size_t rdm_read_window;	/* rendezvous octets asked per peer; 0: auto */
	/* MSG endpoints (interop knobs, e.g. against Linux siw) */
	int mpa_rev;		/* 1 or 2: the revision we ask for */
	unsigned int rtr;	/* IW_RTR_* offered/accepted; 0: all */
	int rtr_delay_ms;	/* first FPDU this long after the Reply */
	char *auth_key;		/* FI_IWARP_AUTH_KEY: the job's key */
	/* every listener (0: the engine's default) */
	size_t listen_pending;	/* connections held before a decision */
	int mpa_timeout_ms;	/* time to send the whole MPA Request */
	int rdm_probe_ms;	/* bound of a live connection's probe */
	int mr_app_keys;	/* prefer application keys and offsets */
	/* NIC locality (iwarp_nic.c, iwarp_topo.c) */
	int bind_progress;	/* progress thread on its NIC's NUMA node */
	char *sysfs_root;	/* NULL: /sys */
	char *hwloc_xml;	/* NULL: the live topology */
	int shm;		/* same-host RDM peers over shared memory */
	int spin_us;		/* a blocking wait polls this long first */
	int idle_yield;		/* empty CQ reads in a row before yielding */
	int ready_min;		/* sockets from which epoll finds the ready */
};

#define IWARP_SPIN_US_DEFAULT 100
#define IWARP_IDLE_YIELD_DEFAULT 256
#define IWARP_READY_MIN_DEFAULT 8
#define IWARP_IDLE_YIELD_EVERY 16	/* then one empty read in so many */
/* while yields keep handing the core to another task, the first comes
 * after this many empty reads instead (iwarp_cq_yield) */
#define IWARP_IDLE_YIELD_SHARED 16

#define IWARP_RDM_PROBE_MS_DEFAULT 2000

#define IWARP_RDM_UNEXP_MAX_DEFAULT ((size_t)256 << 20)

extern struct iwarp_params iwarp_params;

struct iw_cm_event;
struct iw_qp;
/* One info line per established connection: what was negotiated, on
 * qp's connection (NULL: none named). */
void iwarp_log_connected(const char *what, struct iw_qp *qp,
			 const struct iw_cm_event *ev);
void iwarp_log_established(const char *what, const struct iw_cm_event *ev);
/* The engine's log hook (iw_dev_set_log): FI_WARN/FI_INFO/FI_DBG; the
 * highest level libfabric's log lets through (iw_dev_set_log_max). */
int iwarp_engine_log_max(void);
void iwarp_engine_log(void *arg, int level, const char *msg);

int iwarp_params_init(void);
void iwarp_params_fini(void);

#include "iwarp_iface.h"

int iwarp_getinfo(uint32_t version, const char *node, const char *service,
		  uint64_t flags, const struct fi_info *hints,
		  struct fi_info **info);

/*
 * Zeroed memory for objects made and freed per message: glibc's calloc
 * does not take from the per-thread cache that free fills, malloc does.
 * The empty asm keeps the compiler from fusing the two back into calloc.
 */
static inline void *iwarp_zalloc(size_t size)
{
	void *p = malloc(size);

	__asm__ volatile("" : "+r"(p));
	if (p)
		memset(p, 0, size);
	return p;
}

/* ---- a minimal circular doubly linked list (libfabric's is internal) */

struct iwarp_list {
	struct iwarp_list *prev, *next;
};

static inline void iwarp_list_init(struct iwarp_list *h)
{
	h->prev = h->next = h;
}

static inline bool iwarp_list_empty(const struct iwarp_list *h)
{
	return h->next == h;
}

static inline void iwarp_list_add_tail(struct iwarp_list *h,
				       struct iwarp_list *e)
{
	e->prev = h->prev;
	e->next = h;
	h->prev->next = e;
	h->prev = e;
}

static inline void iwarp_list_add_head(struct iwarp_list *h,
				       struct iwarp_list *e)
{
	e->next = h->next;
	e->prev = h;
	h->next->prev = e;
	h->next = e;
}

static inline void iwarp_list_del(struct iwarp_list *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = e;
}

#define iwarp_container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))

/*
 * Locking and progress. One mutex per fabric serializes the engine and
 * every provider object of that fabric (the engine is single-threaded by
 * contract); API entry points take it. Progress is manual: reading a CQ,
 * EQ or counter, or waiting on one, drives every pollable of the fabric.
 */
struct iwarp_cntr;
struct iwarp_wait;

struct iwarp_fabric {
	struct fid_fabric fabric_fid;
	char *name;
	atomic_int ref;			/* open domains, EQs, passive eps */
	uint32_t lock;			/* iwarp_lock: 0 free, 1 held, 2 held
					 * with sleepers */
	struct iwarp_list pollables;
	struct iwarp_list busy;		/* pollables with busy set */
	struct iwarp_list parked;	/* nofd_idle ones found idle: not
					 * walked until touched */
	unsigned int nactive;		/* in pollables, not rare */
	bool in_progress;		/* guards against re-entry */
	struct pollfd *pfds;		/* iwarp_progress scratch */
	struct iwarp_pollable **pptr;
	size_t pcap;
	unsigned int rare_tick;		/* progress calls, for rare ones */
	uint64_t rare_ms;		/* the last rare turn, coarse */
	uint64_t rare_us;		/* and precise */
	uint64_t hot_until_us;		/* iwarp_progress_hot, 0: none */
	bool rare_due;			/* a sleep woke on a socket: the next
					 * progress asks the rare ones too */
	/*
	 * With many sockets (iwarp_params.ready_min), the calls between
	 * rare turns ask an epoll set which are ready instead of polling
	 * them all (iwarp_ready.c); the rare turns still do, and bring the
	 * set up to date.
	 */
	bool ready_on;
	int ready_fd;			/* the epoll set, -1 until needed */
	struct iwarp_pollable **ready_map;	/* fd -> registered owner */
	int ready_cap;
	struct iwarp_pollable **runq;	/* the ones a fast turn drives */
	size_t runq_n, runq_cap;
	struct iwarp_pollable **dueq;	/* no socket but work to do, as the
					 * last rare turn found */
	size_t dueq_n, dueq_cap;
	/* target-side progress for RMA when the application is away */
	uint64_t app_ms;		/* last progress the application made */
	bool in_async;
	bool async_stop;
	int async_users;
	pthread_t async;
	/* triggered operations waiting for their counters (iwarp_trigger.c) */
	struct iwarp_list trig_ops;	/* sorted by threshold, then age */
	atomic_int trig_count;		/* read without the lock */
	uint64_t trig_seq;
	/*
	 * Set by the layers above CQs and counters once they are in use
	 * (iwarp_trigger.c, iwarp_poll.c), so that CQs, counters and
	 * progress reach them without depending on them.
	 */
	void (*trig_run)(struct iwarp_fabric *fab);
	void (*trig_cntr_gone)(struct iwarp_cntr *c);
	int (*wait_join)(struct iwarp_wait *w, struct iwarp_fabric *fab,
			 struct fid_wait *set, struct fid *member);
	void (*wait_leave)(struct iwarp_wait *w, struct fid *member);
};

/*
 * The fabric lock, taken by every call and every progress pass: a futex
 * lock inline (one compare-and-swap, one exchange), as a busy poll takes
 * it tens of millions of times a second and pthread_mutex's calls and
 * type checks were a quarter of an MPI shared-memory ping-pong's time.
 * Contended, it spins briefly, then sleeps (iwarp_progress.c).
 */
void iwarp_lock_slow(struct iwarp_fabric *fab);
void iwarp_unlock_wake(struct iwarp_fabric *fab);

static inline void iwarp_lock(struct iwarp_fabric *fab)
{
	uint32_t free_ = 0;

	if (!__atomic_compare_exchange_n(&fab->lock, &free_, 1, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		iwarp_lock_slow(fab);
}

static inline void iwarp_unlock(struct iwarp_fabric *fab)
{
	if (__atomic_exchange_n(&fab->lock, 0, __ATOMIC_RELEASE) == 2)
		iwarp_unlock_wake(fab);
}

/*
 * Something with a socket that needs driving: an endpoint's engine QP or
 * a passive endpoint's listener. Both callbacks run with the fabric lock
 * held. poll_info reports the fd (-1: none now), the poll events and the
 * absolute iw_now_ms() deadline (0: none) it currently waits for.
 */
struct iwarp_pollable {
	struct iwarp_list link;		/* in fabric->pollables */
	struct iwarp_fabric *fab;
	void (*progress)(struct iwarp_pollable *p);
	void (*poll_info)(struct iwarp_pollable *p, int *fd, short *events,
			  uint64_t *deadline);
	/*
	 * Optional, for a pollable whose work comes without a socket (shared
	 * memory): a wait is about to sleep. Returns an fd that turns
	 * readable (POLLIN) once there is work, armed until the next
	 * progress call, in place of poll_info's fd and deadline; or -1 to
	 * keep those.
	 */
	int (*sleep_fd)(struct iwarp_pollable *p);
	/* Optional, busy pollables: true when progress would find nothing
	 * to do (most calls of a busy poll); lock held. */
	bool (*idle)(struct iwarp_pollable *p);
	bool run;			/* iwarp_progress: ready or due */
	bool nofd_idle;			/* with no socket and no deadline
					 * there is nothing to drive (an
					 * endpoint not connected, or closed:
					 * a server keeps many) */
	bool rare;			/* a listener: polled only on
					 * rare turns (IWARP_RARE_US) */
	bool busy;			/* no socket, work may come at any
					 * time (shared memory): driven on
					 * every call without asking
					 * poll_info; set before adding */
	bool queued;			/* in the fabric's runq */
	bool parked;			/* in fabric->parked */
	int reg_fd;			/* in the fabric's epoll set, or -1 */
	short reg_events;
};

/* one poll() of the rare ones per IWARP_RARE_US, asked every so many
 * calls (with shared memory a busy loop's calls come every few tens of
 * nanoseconds, and that poll() was 8% of a ping-pong's CPU time), and
 * at least every IWARP_RARE_MS for callers that come seldom (the coarse
 * clock, read every IWARP_RARE_CLOCK calls) */
#define IWARP_RARE_EVERY 128
#define IWARP_RARE_US 50
/* while connections are being set up (iwarp_progress_hot): a rare turn
 * every IWARP_RARE_HOT_US, the clock looked at on every call */
#define IWARP_RARE_HOT_US 10
#define IWARP_RARE_CLOCK 8
#define IWARP_RARE_MS 2

void iwarp_pollable_add(struct iwarp_fabric *fab, struct iwarp_pollable *p);
/* Lock held: for ms from now, listeners are asked every few us. */
void iwarp_progress_hot(struct iwarp_fabric *fab, unsigned int ms);
void iwarp_pollable_del(struct iwarp_pollable *p);
/* Lock held: p polled only on rare turns, or on every call again. */
void iwarp_pollable_rare(struct iwarp_pollable *p, bool rare);
/* Lock held. p's socket may be closed and its number reused: its
 * registration in the fabric's epoll set goes (iwarp_ready.c). */
void iwarp_pollable_reset(struct iwarp_pollable *p);
/* iwarp_ready.c, for iwarp_progress.c and the fabric */
void iwarp_ready_drop(struct iwarp_fabric *fab, struct iwarp_pollable *p);
void iwarp_ready_sync(struct iwarp_fabric *fab, struct iwarp_pollable *p);

/* In its fabric's list (added, not deleted since). */
static inline bool iwarp_pollable_linked(const struct iwarp_pollable *p)
{
	return p->link.next && p->link.next != &p->link;
}

/* Lock held. p may have work or wait for other events now (work was
 * posted, or a connection begun, outside progress): a parked one is
 * walked again, and the epoll set learns its events at once. Inline, as
 * every send calls it and the set is off for a few peers. A deleted
 * pollable must not register again: nothing would take it out of the
 * map. */
void iwarp_pollable_unpark(struct iwarp_pollable *p);
static inline void iwarp_pollable_touch(struct iwarp_pollable *p)
{
	if (p->parked)
		iwarp_pollable_unpark(p);
	if (p->fab && p->fab->ready_on && iwarp_pollable_linked(p))
		iwarp_ready_sync(p->fab, p);
}
bool iwarp_ready_due(struct iwarp_fabric *fab, struct iwarp_pollable *p);
void iwarp_ready_scan(struct iwarp_fabric *fab, size_t n, size_t nsock);
void iwarp_ready_run(struct iwarp_fabric *fab);
void iwarp_ready_fini(struct iwarp_fabric *fab);
uint32_t iwarp_poll_to_epoll(short events);	/* iwarp_progress.c */
/* Drives every pollable of the fabric once (lock held; not re-entrant:
 * a nested call returns at once). */
void iwarp_progress(struct iwarp_fabric *fab);
/* EQ reads: the listeners are asked on every call, not every rare turn */
void iwarp_progress_cm(struct iwarp_fabric *fab);
/* Start and stop (lock not held) the thread that progresses a fabric
 * while its application makes no calls: RDMA Reads, Writes and atomics
 * aimed at us must be served even then. The first start places it on
 * the NUMA node of interface nic's NIC (FI_IWARP_BIND_PROGRESS). */
int iwarp_async_get(struct iwarp_fabric *fab, const char *nic);
void iwarp_async_put(struct iwarp_fabric *fab);

/*
 * Wait object of a CQ, EQ or counter. FI_WAIT_FD hands out epfd: an epoll
 * set holding an eventfd (signalled when entries arrive or on
 * fi_cq_signal) and the sockets of the pollables bound to the object, so
 * it turns readable whenever fi_cq_read & co. have work to do.
 * Registrations are refreshed by iwarp_wait_sync(), which fi_trywait and
 * FI_GETWAIT call (fds change while connections are set up). Until
 * FI_GETWAIT, only our own blocking calls can wait on the object: binds
 * leave the set alone, and a signal with no sleeper writes nothing (a
 * waiter checks for entries under the lock before it sleeps).
 */
struct iwarp_wait {
	enum fi_wait_obj type;		/* FI_WAIT_NONE, FI_WAIT_FD */
	int epfd;
	int efd;
	struct iwarp_pollable **bound;
	int nbound, cap;
	struct { int fd; short events; } *regs;	/* sorted by fd */
	int nregs, regcap;
	uint64_t closes;		/* iw_fd_close_count() at the last sync */
	bool pending;			/* efd holds an unread signal */
	bool handed;			/* FI_GETWAIT gave epfd out */
	int sleepers;			/* threads in poll() on efd */
	struct iwarp_wait *set;		/* FI_WAIT_SET: the set's, used instead */
	bool cm;			/* an EQ's: its spin asks the listeners
					 * every turn */
};

/* FI_WAIT_UNSPEC becomes FI_WAIT_FD. -FI_ENOSYS for other wait objects. */
int iwarp_wait_init(struct iwarp_wait *w, enum fi_wait_obj type);
/*
 * FI_WAIT_SET member (iwarp_poll.c): signals, bindings and syncs go to
 * the set's wait object; the set learns the member's fid so fi_wait can
 * tell when it has something. 0 or -FI_EINVAL (not one of our sets, of
 * another fabric). Lock not held. leave undoes it (lock not held).
 */
int iwarp_wait_join(struct iwarp_wait *w, struct iwarp_fabric *fab,
		    struct fid_wait *set, struct fid *member);
void iwarp_wait_leave(struct iwarp_wait *w, struct fid *member);
/* The same through the fabric's hooks, for CQs and counters. */
static inline int iwarp_wait_enter(struct iwarp_wait *w,
				   struct iwarp_fabric *fab,
				   struct fid_wait *set, struct fid *member)
{
	return fab->wait_join ? fab->wait_join(w, fab, set, member) :
				-FI_EINVAL;
}

static inline void iwarp_wait_quit(struct iwarp_fabric *fab,
				   struct iwarp_wait *w, struct fid *member)
{
	if (w->set && fab->wait_leave)
		fab->wait_leave(w, member);
}
/* fi_wait_open (iwarp_poll.c): FI_WAIT_UNSPEC or FI_WAIT_FD sets. */
int iwarp_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		    struct fid_wait **waitset);
void iwarp_wait_fini(struct iwarp_wait *w);
int iwarp_wait_bind(struct iwarp_wait *w, struct iwarp_pollable *p);
void iwarp_wait_unbind(struct iwarp_wait *w, struct iwarp_pollable *p);
void iwarp_wait_signal(struct iwarp_wait *w);
void iwarp_wait_drain(struct iwarp_wait *w);
int iwarp_wait_sync(struct iwarp_wait *w);
/* Lock not held. FI_GETWAIT (the epoll fd, synced first), FI_GETWAITOBJ;
 * -FI_ENOSYS for other commands. */
int iwarp_wait_control(struct iwarp_fabric *fab, struct iwarp_wait *w,
		       int command, void *arg);
/*
 * Blocks until ready(arg) is true, driving progress; the fabric lock is
 * held on entry and exit and dropped around poll(). timeout_ms < 0 waits
 * forever. Returns 0, -FI_EAGAIN on timeout, -FI_EINTR if interrupted
 * (eventfd signal with ready() still false counts as interrupted when
 * `signal_breaks` is set).
 */
int iwarp_wait_block(struct iwarp_fabric *fab, struct iwarp_wait *w,
		     bool (*ready)(void *arg), void *arg, int timeout_ms,
		     bool signal_breaks);

/* prov_errno of an iWARP error triple: nonzero, decodable back. */
#define IWARP_PROV_ERRNO(l, t, c) \
	(0x10000 | ((l) & 0xf) << 12 | ((t) & 0xf) << 8 | ((c) & 0xff))
/* prov_errno of a connection refused for its job key (iwarp_auth.h):
 * wrong or missing key, or a replayed handshake. */
#define IWARP_PROV_ERRNO_AUTH 0x20001
/* Text for fi_cq_strerror / fi_eq_strerror; NULL if not ours. */
const char *iwarp_prov_errno_str(int prov_errno);
/* The strerror op of CQs and EQs: ours decoded, else fi_strerror(). */
const char *iwarp_strerror(int prov_errno, char *buf, size_t len);

/* ---- completion queues (iwarp_cq.c) */

struct iwarp_cq_err {
	struct fi_cq_err_entry e;
	char *err_data_buf;		/* owned copy of err_data */
	uint64_t after;			/* successes written before it */
};

struct iwarp_cq {
	struct fid_cq cq_fid;
	struct iwarp_domain *dom;
	struct iwarp_fabric *fab;
	enum fi_cq_format format;
	size_t entry_size;
	/* a growable ring: completions are never dropped */
	struct fi_cq_tagged_entry *ring;
	fi_addr_t *src;			/* for fi_cq_readfrom */
	size_t head, count, cap;
	size_t first_cap;		/* of the first allocation */
	struct iwarp_cq_err *errs;
	size_t ehead, ecount, ecap;
	uint64_t written, taken;	/* successes ever written / read */
	char *last_err_data;		/* valid until the next readerr */
	struct iwarp_wait wait;
	bool signaled;
	bool threshold;			/* FI_CQ_COND_THRESHOLD */
	atomic_bool just_emptied;	/* see iwarp_cq_readfrom */
	unsigned int idle_reads;	/* empty reads in a row (lock held) */
	atomic_uint shared;		/* see iwarp_cq_yield */
	atomic_int ref;			/* bound endpoints */
};

/* Lock held. Queue a completion / an error completion. */
int iwarp_cq_write(struct iwarp_cq *cq, void *context, uint64_t flags,
		   size_t len, void *buf, uint64_t data, uint64_t tag,
		   fi_addr_t src);
int iwarp_cq_write_err(struct iwarp_cq *cq, void *context, uint64_t flags,
		       size_t len, void *buf, uint64_t data, uint64_t tag,
		       int err, int prov_errno, const void *err_data,
		       size_t err_data_size, size_t olen);
int iwarp_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		  struct fid_cq **cq, void *context);
/* Lock held: completions not yet read. */
static inline size_t iwarp_cq_pending(const struct iwarp_cq *cq)
{
	return cq->count;
}

static inline struct iwarp_cq *iwarp_cq_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_cq, cq_fid.fid);
}

/* ---- event queues (iwarp_eq.c) */

struct iwarp_eq_event {
	uint32_t event;
	bool is_err;
	bool owns_info;			/* ours: the info of an FI_CONNREQ */
	size_t len;			/* octets of buf */
	/* fi_eq_cm_entry ends in a flexible array, so it cannot be a union
	 * member: CM entries live in raw (aligned for it) */
	union {
		struct fi_eq_entry entry;
		struct fi_eq_err_entry err;
		uint8_t raw[sizeof(struct fi_eq_cm_entry) + 512]
			__attribute__((aligned(8)));
	} u;
	uint8_t err_data[512];
};

struct iwarp_eq {
	struct fid_eq eq_fid;
	struct iwarp_fabric *fab;
	struct iwarp_eq_event *q;	/* growable ring */
	size_t head, count, cap;
	uint8_t last_err_data[512];	/* valid until the next readerr */
	struct iwarp_wait wait;
	atomic_int ref;			/* bound endpoints */
};

/*
 * Lock held. buf/len is the entry as fi_eq_read returns it (a struct
 * fi_eq_cm_entry followed by at most 512 octets of CM data, or a struct
 * fi_eq_entry). The EQ owns the fi_info of an FI_CONNREQ until it is
 * read (fi_close frees unread ones). err_data beyond 512 octets is cut.
 * Return 0 or a negative fabric errno.
 */
int iwarp_eq_write_locked(struct iwarp_eq *eq, uint32_t event,
			  const void *buf, size_t len);
int iwarp_eq_write_err(struct iwarp_eq *eq, fid_t fid, void *context,
		       uint64_t data, int err, int prov_errno,
		       const void *err_data, size_t err_data_size);
int iwarp_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		  struct fid_eq **eq, void *context);

static inline struct iwarp_eq *iwarp_eq_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_eq, eq_fid.fid);
}

/* ---- counters (iwarp_cntr.c) */

struct iwarp_cntr {
	struct fid_cntr cntr_fid;
	struct iwarp_domain *dom;
	struct iwarp_fabric *fab;
	uint64_t value, err;
	uint64_t chk_value, chk_err;	/* as fi_trywait last saw them */
	struct iwarp_wait wait;
	atomic_int ref;
};

void iwarp_cntr_inc(struct iwarp_cntr *c);	/* lock held */
bool iwarp_cntr_is_ours(const struct fid *fid);
void iwarp_cntr_inc_err(struct iwarp_cntr *c);	/* lock held */
int iwarp_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		    struct fid_cntr **cntr, void *context);

static inline struct iwarp_cntr *iwarp_cntr_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_cntr, cntr_fid.fid);
}

/* fi_trywait for the fabric (iwarp_progress.c) */
int iwarp_trywait(struct fid_fabric *fabric, struct fid **fids, int count);

int iwarp_fabric_open(struct fi_fabric_attr *attr,
		      struct fid_fabric **fabric, void *context);

struct iw_dev;
struct iw_pd;

struct iwarp_domain {
	struct fid_domain domain_fid;
	struct iwarp_fabric *fabric;
	struct iwarp_iface iface;
	struct iw_dev *dev;		/* engine device and protection domain */
	struct iw_pd *pd;
	uint64_t mr_mode;		/* as negotiated in fi_getinfo */
	enum fi_threading threading;
	bool async;			/* FI_PROGRESS_AUTO: holds the thread */
	atomic_int ref;			/* CQs, counters, endpoints, MRs */
};

int iwarp_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain, void *context);
/* fi_poll_open (iwarp_poll.c): poll sets of CQs and counters. */
int iwarp_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		    struct fid_poll **pollset);

/*
 * ---- triggered operations (iwarp_trigger.c), for any endpoint type:
 * iwarp_trig_wrap puts wrappers into a new endpoint's ops that queue
 * FI_TRIGGER calls on their counter; iwarp_trig_run (lock not held)
 * issues those whose counter reached the threshold through the
 * endpoint's own ops. Entry points that drive progress call it.
 */
int iwarp_trig_wrap(struct fid_ep *ep, struct iwarp_fabric *fab);
void iwarp_trig_run(struct iwarp_fabric *fab);
/* Lock held: the counter is going away; drops what waits on it. */
void iwarp_trig_cntr_gone(struct iwarp_cntr *c);
/* Through the fabric's hooks: nothing to do before anyone used them. */
static inline void iwarp_trig_kick(struct iwarp_fabric *fab)
{
	if (fab->trig_run)
		fab->trig_run(fab);
}

static inline void iwarp_trig_forget(struct iwarp_fabric *fab,
				     struct iwarp_cntr *c)
{
	if (fab->trig_cntr_gone)
		fab->trig_cntr_gone(c);
}

static inline bool iwarp_trig_due(struct iwarp_fabric *fab)
{
	return atomic_load_explicit(&fab->trig_count, memory_order_relaxed);
}

static inline struct iwarp_fabric *iwarp_fabric_of(struct fid *fid)
{
	return (struct iwarp_fabric *)((char *)fid -
		offsetof(struct iwarp_fabric, fabric_fid.fid));
}

static inline struct iwarp_domain *iwarp_domain_of(struct fid *fid)
{
	return (struct iwarp_domain *)((char *)fid -
		offsetof(struct iwarp_domain, domain_fid.fid));
}

/* ---- memory regions (iwarp_mr.c) */

struct iw_mr;
struct iw_qp;
struct iw_listener;
struct iw_conn_req;

/* FI_IWARP_MR_APP_KEYS took the application's keys (iwarp_attr.c) */
static inline bool iwarp_mr_app_keys(int mr_mode)
{
	return iwarp_params.mr_app_keys &&
	       !(mr_mode & (FI_MR_PROV_KEY | IWARP_MR_BASIC));
}

/*
 * FI_MR_PROV_KEY: the provider picks, but a nonzero 32-bit key the
 * application asks for becomes the STag while it is free (fabtests'
 * fi_multi_mr writes to keys it never exchanged). Key 0 asks for one
 * of ours, random.
 */
static inline bool iwarp_mr_key_wanted(int mr_mode, uint64_t key)
{
	return !(mr_mode & IWARP_MR_BASIC) && key && key <= UINT32_MAX;
}

struct iwarp_mr {
	struct fid_mr mr_fid;
	struct iwarp_domain *dom;
	struct iw_mr *imr;
	/* fi_mr_bind(FI_REMOTE_WRITE / FI_REMOTE_READ): FI_RMA_EVENT */
	struct iwarp_cntr *cntr_rwrite, *cntr_rread;
};

struct iwarp_ep_base;
/* The engine's iw_qp_ops.target for an endpoint (lock held): the peer
 * wrote or read memory of ours; mr_ctx is an iwarp_mr or NULL. */
void iwarp_rma_target(struct iwarp_ep_base *b, bool write, void *mr_ctx);

int iwarp_mr_reg(struct fid *fid, const void *buf, size_t len,
		 uint64_t access, uint64_t offset, uint64_t requested_key,
		 uint64_t flags, struct fid_mr **mr, void *context);
int iwarp_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr, void *context);
int iwarp_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		     uint64_t flags, struct fid_mr **mr);

/* ---- endpoints: the shared base, then the entry points of each type */

/* hardware iWARP (Chelsio iw_cxgb4) rejects more than 256 octets of MPA
 * private data, RFC 6581's 4 enhanced octets included */
#define IWARP_CM_DATA_MAX 252
#define IWARP_INJECT_MAX 256
#define IWARP_IOV_MAX 8
#define IWARP_QUEUE_SIZE 256
#define IWARP_RDMA_DEPTH 16	/* IRD and ORD asked for */

#include "iwarp_ep_base.h"
#include "iwarp_ctx.h"

/* FI_EP_MSG (msg/): active and passive endpoints. */
int iwarp_msg_open(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep, void *context);
int iwarp_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_pep **pep, void *context);
/* FI_EP_DGRAM (dgram/): one UDP socket per endpoint. */
int iwarp_dgram_open(struct fid_domain *domain, struct fi_info *info,
		     struct fid_ep **ep, void *context);
/* fi_query_atomic: what RDM endpoints of the domain run (iwarp_rdm_rma.c) */
int iwarp_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		       enum fi_op op, struct fi_atomic_attr *attr,
		       uint64_t flags);

/*
 * ---- stubs (iwarp_stubs.c): libfabric keeps its fi_no_* helpers
 * internal, so external providers bring their own. All return
 * -FI_ENOSYS.
 */
int iwarp_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int iwarp_no_control(struct fid *fid, int command, void *arg);
int iwarp_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context);
int iwarp_no_tostr(const struct fid *fid, char *buf, size_t len);
int iwarp_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		     void *ops, void *context);
/* fi_ops_cm */
int iwarp_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen);
int iwarp_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		     size_t paramlen);
int iwarp_no_listen(struct fid_pep *pep);
int iwarp_no_accept(struct fid_ep *ep, const void *param, size_t paramlen);
int iwarp_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		    size_t paramlen);
int iwarp_no_shutdown(struct fid_ep *ep, uint64_t flags);
int iwarp_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		  struct fid_mc **mc, void *context);
/* fi_ops_msg / fi_ops_rma calls with remote CQ data */
ssize_t iwarp_no_senddata(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest_addr,
			  void *context);
ssize_t iwarp_no_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest_addr);
ssize_t iwarp_no_writedata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest_addr,
			   uint64_t addr, uint64_t key, void *context);
ssize_t iwarp_no_inject_writedata(struct fid_ep *ep, const void *buf,
				  size_t len, uint64_t data,
				  fi_addr_t dest_addr, uint64_t addr,
				  uint64_t key);

#endif /* IWARP_PROV_H */
