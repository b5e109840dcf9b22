/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Manual progress and the wait objects of CQs, EQs and counters.
 *
 * Everything that owns a socket registers as a pollable of its fabric;
 * iwarp_progress() drives them all once. A wait object is an eventfd
 * (written when entries arrive) inside an epoll set that also holds the
 * sockets of the pollables bound to the object, so the fd that
 * FI_GETWAIT hands out becomes readable whenever a read would find work.
 * Blocking calls (sread, fi_cntr_wait) do not use the epoll set: they
 * poll() the eventfd and the sockets of every pollable of the fabric,
 * because progress on any connection may be what completes their wait.
 */
#include "iwarp.h"
#include "iwarp_nic.h"

#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "iwarp/engine.h"
#include "iwarp/wire.h"

/*
 * Longest single poll() of a blocking call. Pollables added by other
 * threads while we sleep join the poll set only at the next slice; a
 * wait object without an eventfd (FI_WAIT_NONE) is only re-checked then.
 */
#define IWARP_WAIT_SLICE_MS		100
#define IWARP_WAIT_SLICE_NOFD_MS	10
#define IWARP_WAIT_STACK_FDS		16

/* Lock held, as for del. Listeners go last: a pass that finds both an
 * endpoint's connection completing (its RTR) and a request that came
 * after it queues the endpoint's FI_CONNECTED first, as applications
 * connecting endpoints one after another on one EQ expect. */
void iwarp_pollable_add(struct iwarp_fabric *fab, struct iwarp_pollable *p)
{
	p->fab = fab;
	p->reg_fd = -1;
	p->reg_events = 0;
	p->queued = false;
	p->parked = false;
	/* the epoll set learns of it at once (iwarp_ready.c) */
	if (fab->ready_on)
		fab->rare_due = true;
	if (p->busy) {
		iwarp_list_add_tail(&fab->busy, &p->link);
	} else if (p->rare) {
		iwarp_list_add_tail(&fab->pollables, &p->link);
	} else {
		iwarp_list_add_head(&fab->pollables, &p->link);
		fab->nactive++;
	}
}

/* Safe on a pollable that was never added (zeroed or empty link) or
 * deleted. */
void iwarp_pollable_del(struct iwarp_pollable *p)
{
	if (!iwarp_pollable_linked(p))
		return;
	if (!p->busy && !p->rare && !p->parked)
		p->fab->nactive--;
	p->parked = false;
	iwarp_ready_drop(p->fab, p);
	iwarp_list_del(&p->link);
}

/*
 * An endpoint with no socket, no deadline and nothing queued (closed by
 * its peer, or not connected yet) leaves the walk: a server that keeps
 * thousands of them paid a poll_info each on every turn. Only an
 * application call gives it work again, and those touch it.
 */
static void iwarp_pollable_park(struct iwarp_pollable *p)
{
	struct iwarp_fabric *fab = p->fab;

	iwarp_ready_drop(fab, p);
	iwarp_list_del(&p->link);
	iwarp_list_add_tail(&fab->parked, &p->link);
	p->parked = true;
	p->run = false;
	fab->nactive--;
}

void iwarp_pollable_unpark(struct iwarp_pollable *p)
{
	struct iwarp_fabric *fab = p->fab;

	iwarp_list_del(&p->link);
	iwarp_list_add_head(&fab->pollables, &p->link);
	p->parked = false;
	fab->nactive++;
}

void iwarp_pollable_rare(struct iwarp_pollable *p, bool rare)
{
	if (p->rare == rare)
		return;
	p->rare = rare;
	if (!iwarp_pollable_linked(p) || p->busy || p->parked)
		return;
	if (rare)
		p->fab->nactive--;
	else
		p->fab->nactive++;
}

/* Every pollable of fab, the busy ones first (waits and the thread). */
#define iwarp_for_each_pollable(fab, l, e)                                   \
	for ((l) = &(fab)->busy; (l);                                        \
	     (l) = (l) == &(fab)->busy ? &(fab)->pollables : NULL)           \
		for ((e) = (l)->next; (e) != (l); (e) = (e)->next)

/*
 * A callback may delete any pollable, itself included, or add new ones.
 * A marker linked in after the current entry keeps our place: only we
 * unlink it, so it is still in the list whatever the callback removed.
 */
/*
 * Marks the pollables worth driving: a socket that is ready (one poll()
 * with no timeout for all of them), a deadline that passed, or no socket
 * at all (cheap, and may have work such as a retry). Returns false if
 * the scratch arrays could not grow: then everything is driven.
 * Listeners join only on rare turns. A single candidate
 * is returned in *single, to be driven: its own non-blocking reads cost
 * what poll() would, and its progress checks its own deadlines, so an
 * endpoint busy-polling one peer neither asks poll_info nor reads the
 * clock.
 */
/* The one pollable this turn asks, or NULL when there are several;
 * *none when there is none. */
static struct iwarp_pollable *iwarp_progress_single(struct iwarp_fabric *fab,
						    bool rare_turn, bool *none)
{
	struct iwarp_pollable *p, *only = NULL;
	struct iwarp_list *e;

	/* every run flag is down between calls: none to clear (while hot,
	 * the listeners wait for the next rare turn, at most
	 * IWARP_RARE_HOT_US away: iwarp_progress_select) */
	if (!rare_turn && !fab->nactive) {
		*none = true;
		return NULL;
	}
	for (e = fab->pollables.next; e != &fab->pollables; e = e->next) {
		p = iwarp_container_of(e, struct iwarp_pollable, link);
		p->run = false;
		if (p->rare && !rare_turn)
			continue;	/* not even asked: saves a busy loop */
		if (only)
			return NULL;
		only = p;
	}
	*none = !only;
	return only;
}

/* Room for one more pollfd; false when out of memory. */
static bool iwarp_progress_room(struct iwarp_fabric *fab, size_t n)
{
	size_t cap = fab->pcap ? fab->pcap * 2 : 16;
	struct iwarp_pollable **q;
	struct pollfd *f;

	if (n < fab->pcap)
		return true;
	f = realloc(fab->pfds, cap * sizeof(*f));
	if (!f)
		return false;
	fab->pfds = f;
	q = realloc(fab->pptr, cap * sizeof(*q));
	if (!q)
		return false;
	fab->pptr = q;
	fab->pcap = cap;
	return true;
}

/* Marks what is due by its deadline and gathers the descriptors to poll;
 * their count, or -1 when out of memory. */
static ssize_t iwarp_progress_gather(struct iwarp_fabric *fab, bool rare_turn)
{
	uint64_t now = 0, deadline;
	struct iwarp_pollable *p;
	struct iwarp_list *e, *next;
	size_t n = 0, nsock = 0;
	bool due_ok = true;
	short events;
	int fd;

	fab->dueq_n = 0;
	for (e = fab->pollables.next; e != &fab->pollables; e = next) {
		next = e->next;
		p = iwarp_container_of(e, struct iwarp_pollable, link);
		if (p->rare && !rare_turn) {
			p->run = false;
			continue;
		}
		p->poll_info(p, &fd, &events, &deadline);
		if (fd < 0 && !deadline && p->nofd_idle && !p->rare) {
			iwarp_pollable_park(p);
			continue;
		}
		/* the clock only for a socket's real deadline (1 is "due
		 * now", as shared memory and busy listeners say) */
		if (fd >= 0 && deadline > 1 && !now)
			now = iw_now_ms();
		p->run = (fd < 0 && !(p->nofd_idle && !deadline)) ||
			 deadline == 1;
		if (p->run && !p->rare && due_ok)
			due_ok = iwarp_ready_due(fab, p);
		p->run = p->run || (deadline > 1 && deadline <= now);
		if (fd < 0 || !events)
			continue;
		if (!iwarp_progress_room(fab, n))
			return -1;
		fab->pfds[n] = (struct pollfd){ .fd = fd, .events = events };
		fab->pptr[n++] = p;
		nsock += !p->rare;
	}
	iwarp_ready_scan(fab, n, due_ok ? nsock : 0);
	return (ssize_t)n;
}

/* The rare turns' clock: the coarse one is a plain read of the kernel's
 * tick (a few ms of resolution), the precise one costs a VM tens of ns,
 * which a busy poll paid every IWARP_RARE_CLOCK calls. */
static uint64_t iwarp_coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t iwarp_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void iwarp_progress_hot(struct iwarp_fabric *fab, unsigned int ms)
{
	fab->hot_until_us = iwarp_now_us() + (uint64_t)ms * 1000;
}

static bool iwarp_progress_select(struct iwarp_fabric *fab,
				  struct iwarp_pollable **single, bool *none,
				  bool *fast)
{
	unsigned int tick = ++fab->rare_tick;
	bool rare_turn = fab->rare_due;
	uint64_t us = 0;
	ssize_t n, i;

	/*
	 * While hot, the clock on every call: a poll() of the listeners on
	 * every call cost a busy pair of shared-memory ranks a syscall per
	 * message for the 5 ms after each connection (OSU's first size
	 * 1.5x its second); ranks that share a core call us once per yield,
	 * so they still ask the listeners on nearly every call.
	 */
	if (!rare_turn && fab->hot_until_us) {
		us = iwarp_now_us();
		if (us >= fab->hot_until_us)
			fab->hot_until_us = 0;
		rare_turn = us - fab->rare_us >= IWARP_RARE_HOT_US;
	} else if (!rare_turn && !(tick % IWARP_RARE_EVERY)) {
		us = iwarp_now_us();
		rare_turn = us - fab->rare_us >= IWARP_RARE_US;
	}
	if (rare_turn || !(tick % IWARP_RARE_CLOCK)) {
		uint64_t now = iwarp_coarse_ms();

		rare_turn = rare_turn || now - fab->rare_ms >= IWARP_RARE_MS;
		if (rare_turn) {
			fab->rare_ms = now;
			fab->rare_us = us ? us : iwarp_now_us();
		}
	}

	fab->rare_due = false;
	*none = false;
	*single = iwarp_progress_single(fab, rare_turn, none);
	if (*single || *none)
		return true;
	/* while hot, a poll() of several sockets takes the listeners along */
	rare_turn = rare_turn || fab->hot_until_us;
	if (fab->ready_on && !rare_turn) {
		*fast = true;
		return true;
	}
	n = iwarp_progress_gather(fab, rare_turn);
	if (n < 0)
		return false;
	if (n == 1) {
		fab->pptr[0]->run = true;
		return true;
	}
	if (n && poll(fab->pfds, (nfds_t)n, 0) < 0)
		return false;
	for (i = 0; i < n; i++)
		if (fab->pfds[i].revents)
			fab->pptr[i]->run = true;
	return true;
}

/* Drives the pollables of list that are marked to run, or all. */
static void iwarp_progress_list(struct iwarp_fabric *fab,
				struct iwarp_list *list, bool all)
{
	struct iwarp_list mark, *cur = list->next;
	struct iwarp_pollable *p;

	while (cur != list) {
		p = iwarp_container_of(cur, struct iwarp_pollable, link);
		if (!all && !p->run) {
			cur = cur->next;
			continue;
		}
		p->run = false;
		/* a marker keeps our place if p removes itself */
		mark.prev = cur;
		mark.next = cur->next;
		cur->next->prev = &mark;
		cur->next = &mark;
		p->progress(p);
		/* still there: what it waits for may have changed */
		if (fab->ready_on && mark.prev == cur)
			iwarp_ready_sync(fab, p);
		cur = mark.next;
		iwarp_list_del(&mark);
	}
}

/* Whether every busy pollable says it has nothing to do: a busy poll's
 * usual call then skips the walk with a marker and each one's progress
 * (with three same-host peers, about a third of an empty fi_cq_read). */
static bool iwarp_progress_busy_idle(struct iwarp_fabric *fab)
{
	struct iwarp_list *e;

	for (e = fab->busy.next; e != &fab->busy; e = e->next) {
		struct iwarp_pollable *p =
			iwarp_container_of(e, struct iwarp_pollable, link);

		if (!p->idle || !p->idle(p))
			return false;
	}
	return true;
}

void iwarp_progress(struct iwarp_fabric *fab)
{
	struct iwarp_pollable *p = NULL;
	bool all, none, fast = false;

	if (fab->in_progress)
		return;
	/* only the asynchronous thread asks when the application last came */
	if (fab->async_users && !fab->in_async)
		fab->app_ms = iw_now_ms();
	fab->in_progress = true;
	if (!iwarp_progress_busy_idle(fab))
		iwarp_progress_list(fab, &fab->busy, true);
	all = !iwarp_progress_select(fab, &p, &none, &fast);
	if (fast) {
		iwarp_ready_run(fab);
		fab->in_progress = false;
		return;
	}
	if (!all && (p || none)) {
		if (p) {
			p->progress(p);
			/* the set is not kept while one pollable is driven
			 * alone: the next call's gather turns it off, or
			 * brings it up to date if more came meanwhile */
			if (fab->ready_on)
				fab->rare_due = true;
		}
		fab->in_progress = false;
		return;
	}
	iwarp_progress_list(fab, &fab->pollables, all);
	fab->in_progress = false;
}

void iwarp_progress_cm(struct iwarp_fabric *fab)
{
	fab->rare_due = true;
	iwarp_progress(fab);
}

/* What a wait that is about to sleep polls p for (sleep_fd, iwarp.h). */
static void iwarp_sleep_info(struct iwarp_pollable *p, int *fd,
			     short *events, uint64_t *deadline)
{
	int sfd;

	p->poll_info(p, fd, events, deadline);
	if (!p->sleep_fd)
		return;
	sfd = p->sleep_fd(p);
	if (sfd < 0)
		return;
	*fd = sfd;
	*events = POLLIN;
	*deadline = 0;
}

/* ---- asynchronous progress */

/*
 * The thread steps in only after the application left the fabric alone
 * for IWARP_ASYNC_IDLE_MS, so busy-polling applications keep the lock and
 * the wakeups to themselves; then it sleeps in poll() on the sockets.
 */
#define IWARP_ASYNC_IDLE_MS	1
#define IWARP_ASYNC_FDS		256

static void *iwarp_async_main(void *arg)
{
	struct iwarp_fabric *fab = arg;
	struct pollfd pf[IWARP_ASYNC_FDS];
	bool woke = false;

	for (;;) {
		struct timespec nap = { 0, IWARP_ASYNC_IDLE_MS * 1000000L };
		struct iwarp_list *l, *e;
		bool idle;
		nfds_t n = 0;

		iwarp_lock(fab);
		if (fab->async_stop) {
			iwarp_unlock(fab);
			return NULL;
		}
		idle = iw_now_ms() - fab->app_ms >= IWARP_ASYNC_IDLE_MS;
		if (idle) {
			fab->rare_due = fab->rare_due || woke;
			fab->in_async = true;
			iwarp_progress(fab);
			fab->in_async = false;
			if (iwarp_trig_due(fab)) {
				iwarp_unlock(fab);
				iwarp_trig_kick(fab);
				iwarp_lock(fab);
			}
			iwarp_for_each_pollable(fab, l, e) {
				struct iwarp_pollable *p = iwarp_container_of(
					e, struct iwarp_pollable, link);
				uint64_t deadline;
				short events;
				int fd;

				if (n == IWARP_ASYNC_FDS)
					break;
				iwarp_sleep_info(p, &fd, &events, &deadline);
				if (fd >= 0 && events)
					pf[n++] = (struct pollfd){
						.fd = fd, .events = events };
			}
		}
		iwarp_unlock(fab);
		/* a socket closed meanwhile only makes us look again */
		woke = n && poll(pf, n, IWARP_ASYNC_IDLE_MS * 10) > 0;
		if (!n)
			nanosleep(&nap, NULL);
	}
}

/*
 * Attributes that place the thread on the CPUs of the NUMA node of
 * interface nic's NIC; false to leave it where its creator runs.
 */
static bool iwarp_async_attr(pthread_attr_t *attr, const char *nic,
			     char *cpus, size_t size)
{
	cpu_set_t set;

	if (!iwarp_params.bind_progress) {
		FI_INFO(&iwarp_prov, FI_LOG_CORE, "progress thread for %s not "
			"placed: FI_IWARP_BIND_PROGRESS is off\n", nic);
		return false;
	}
	if (!iwarp_topo_nic_cpus(nic, &set, cpus, size) ||
	    pthread_attr_init(attr))
		return false;
	if (pthread_attr_setaffinity_np(attr, sizeof(set), &set)) {
		pthread_attr_destroy(attr);
		return false;
	}
	return true;
}

/* Lock held. A placement the kernel refuses (no such CPU online) leaves
 * the thread unplaced. */
static int iwarp_async_start(struct iwarp_fabric *fab, const char *nic)
{
	pthread_attr_t attr;
	char cpus[256];
	int ret;

	if (!iwarp_async_attr(&attr, nic, cpus, sizeof(cpus)))
		return -pthread_create(&fab->async, NULL, iwarp_async_main,
				       fab);
	ret = pthread_create(&fab->async, &attr, iwarp_async_main, fab);
	pthread_attr_destroy(&attr);
	if (!ret) {
		FI_INFO(&iwarp_prov, FI_LOG_CORE, "progress thread of fabric "
			"%s placed on CPUs %s, the NUMA node of %s's NIC\n",
			fab->name, cpus, nic);
		return 0;
	}
	FI_INFO(&iwarp_prov, FI_LOG_CORE, "progress thread for %s: CPUs %s "
		"refused (%s), not placed\n", nic, cpus, strerror(ret));
	return -pthread_create(&fab->async, NULL, iwarp_async_main, fab);
}

int iwarp_async_get(struct iwarp_fabric *fab, const char *nic)
{
	int ret = 0;

	iwarp_lock(fab);
	if (!fab->async_users) {
		fab->async_stop = false;
		ret = iwarp_async_start(fab, nic);
	}
	if (!ret)
		fab->async_users++;
	iwarp_unlock(fab);
	return ret;
}

void iwarp_async_put(struct iwarp_fabric *fab)
{
	bool last;

	iwarp_lock(fab);
	last = !--fab->async_users;
	if (last)
		fab->async_stop = true;
	iwarp_unlock(fab);
	if (last)
		pthread_join(fab->async, NULL);
}

/* ---- wait objects */

int iwarp_wait_init(struct iwarp_wait *w, enum fi_wait_obj type)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int ret;

	memset(w, 0, sizeof(*w));
	w->epfd = w->efd = -1;
	switch (type) {
	case FI_WAIT_NONE:
		w->type = FI_WAIT_NONE;
		return 0;
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		break;
	case FI_WAIT_SET:
	case FI_WAIT_MUTEX_COND:
	case FI_WAIT_YIELD:
	case FI_WAIT_POLLFD:
		return -FI_ENOSYS;
	default:
		return -FI_EINVAL;
	}
	w->type = FI_WAIT_FD;
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->epfd < 0)
		return -errno;
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd < 0) {
		ret = -errno;
		goto err_close_ep;
	}
	ev.data.fd = w->efd;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->efd, &ev)) {
		ret = -errno;
		goto err_close_efd;
	}
	return 0;

err_close_efd:
	iw_fd_close(w->efd);
err_close_ep:
	iw_fd_close(w->epfd);
	w->epfd = w->efd = -1;
	return ret;
}

void iwarp_wait_fini(struct iwarp_wait *w)
{
	if (w->efd >= 0)
		iw_fd_close(w->efd);
	if (w->epfd >= 0)
		iw_fd_close(w->epfd);
	free(w->bound);
	free(w->regs);
	w->bound = NULL;
	w->regs = NULL;
	w->nbound = w->nregs = 0;
	w->epfd = w->efd = -1;
}

/*
 * Lock held. A pollable may be bound more than once (e.g. TX and RX).
 * Only -FI_ENOMEM fails; a registration that fails is retried by the
 * next sync.
 */
int iwarp_wait_bind(struct iwarp_wait *w, struct iwarp_pollable *p)
{
	struct iwarp_pollable **nb;

	if (w->set)
		w = w->set;
	if (w->type == FI_WAIT_NONE)
		return 0;
	if (w->nbound == w->cap) {
		nb = realloc(w->bound, sizeof(*nb) * (w->cap ? w->cap * 2 : 4));
		if (!nb)
			return -FI_ENOMEM;
		w->bound = nb;
		w->cap = w->cap ? w->cap * 2 : 4;
	}
	w->bound[w->nbound++] = p;
	if (w->handed)
		iwarp_wait_sync(w);
	return 0;
}

/* Lock held. Removes one binding of p; p must still be valid. */
void iwarp_wait_unbind(struct iwarp_wait *w, struct iwarp_pollable *p)
{
	int i;

	if (w->set)
		w = w->set;
	for (i = 0; i < w->nbound; i++) {
		if (w->bound[i] != p)
			continue;
		w->bound[i] = w->bound[--w->nbound];
		if (w->handed)
			iwarp_wait_sync(w);
		return;
	}
}

/* Lock held (writers and drainers serialize on the fabric lock). */
void iwarp_wait_signal(struct iwarp_wait *w)
{
	uint64_t one = 1;

	if (w->set)
		w = w->set;
	if (w->efd < 0 || w->pending || (!w->handed && !w->sleepers))
		return;
	if (write(w->efd, &one, sizeof(one)) == sizeof(one))
		w->pending = true;
}

/* Lock held. */
void iwarp_wait_drain(struct iwarp_wait *w)
{
	uint64_t v;

	if (w->set)
		w = w->set;
	if (w->efd < 0 || !w->pending)
		return;
	if (read(w->efd, &v, sizeof(v)) == sizeof(v) || errno == EAGAIN)
		w->pending = false;
}

uint32_t iwarp_poll_to_epoll(short events)
{
	return (events & POLLIN ? EPOLLIN : 0) |
	       (events & POLLOUT ? EPOLLOUT : 0) |
	       (events & POLLPRI ? EPOLLPRI : 0);
}

/*
 * Registers fd for events, whatever the set believes: an fd that was
 * closed has left the set on its own, and its number may now belong to
 * a new socket. Returns false if the fd cannot be registered (closed).
 */
static bool iwarp_wait_register(struct iwarp_wait *w, int fd, short events)
{
	struct epoll_event ev = {
		.events = iwarp_poll_to_epoll(events),
		.data.fd = fd,
	};

	if (!epoll_ctl(w->epfd, EPOLL_CTL_MOD, fd, &ev))
		return true;
	if (errno != ENOENT)
		return false;
	return !epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int iwarp_pollfd_cmp(const void *a, const void *b)
{
	const struct pollfd *x = a, *y = b;

	return (x->fd > y->fd) - (x->fd < y->fd);
}

/* Collects what the bound pollables wait for now: one entry per fd,
 * events merged, sorted by fd. */
static int iwarp_wait_wanted(struct iwarp_wait *w, struct pollfd *want)
{
	uint64_t deadline;
	int i, n = 0, m = 0;
	short events;
	int fd;

	for (i = 0; i < w->nbound; i++) {
		iwarp_sleep_info(w->bound[i], &fd, &events, &deadline);
		if (fd >= 0 && events)
			want[n++] = (struct pollfd){ .fd = fd, .events = events };
	}
	qsort(want, (size_t)n, sizeof(*want), iwarp_pollfd_cmp);
	for (i = 0; i < n; i++) {
		if (m && want[m - 1].fd == want[i].fd)
			want[m - 1].events |= want[i].events;
		else
			want[m++] = want[i];
	}
	return m;
}

/*
 * Lock held. Makes the epoll set hold exactly the eventfd plus the fds
 * and events the bound pollables report now. Both lists are sorted by
 * fd, so one pass finds what left, what came and what changed. An fd
 * kept with the same events costs no syscall, unless a descriptor was
 * closed since the last sync: then its number may name a new file that
 * the set does not hold, and every fd is registered again.
 * Returns 0 or -FI_ENOMEM.
 */
int iwarp_wait_sync(struct iwarp_wait *w)
{
	uint64_t closes = iw_fd_close_count();
	struct pollfd *want;
	int i = 0, j = 0, k = 0, n;
	bool same, fresh;

	if (w->set)
		w = w->set;
	if (w->type != FI_WAIT_FD)
		return 0;
	fresh = closes == w->closes;
	want = calloc(w->nbound ? w->nbound : 1, sizeof(*want));
	if (!want)
		return -FI_ENOMEM;
	n = iwarp_wait_wanted(w, want);
	if (n > w->regcap) {
		void *nr = realloc(w->regs, sizeof(*w->regs) * n);

		if (!nr) {
			free(want);
			return -FI_ENOMEM;
		}
		w->regs = nr;
		w->regcap = n;
	}
	/* the kept entries are compacted into want (k <= j) */
	while (i < w->nregs || j < n) {
		if (j == n || (i < w->nregs && w->regs[i].fd < want[j].fd)) {
			/* ENOENT/EBADF: it left with its close() */
			epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->regs[i++].fd,
				  NULL);
			continue;
		}
		same = false;
		if (i < w->nregs && w->regs[i].fd == want[j].fd) {
			same = fresh && w->regs[i].events == want[j].events;
			i++;
		}
		if (same || iwarp_wait_register(w, want[j].fd, want[j].events))
			want[k++] = want[j];
		j++;
	}
	for (i = 0; i < k; i++) {
		w->regs[i].fd = want[i].fd;
		w->regs[i].events = want[i].events;
	}
	w->nregs = k;
	w->closes = closes;
	free(want);
	return 0;
}

int iwarp_wait_control(struct iwarp_fabric *fab, struct iwarp_wait *w,
		       int command, void *arg)
{
	int ret;

	if (!arg)
		return -FI_EINVAL;
	switch (command) {
	case FI_GETWAIT:
		if (w->set)
			w = w->set;
		if (w->type != FI_WAIT_FD)
			return -FI_ENODATA;
		iwarp_lock(fab);
		ret = iwarp_wait_sync(w);
		if (!w->handed) {
			/* signals were skipped until now: one wakeup makes
			 * the application look */
			w->handed = true;
			iwarp_wait_signal(w);
		}
		iwarp_unlock(fab);
		*(int *)arg = w->epfd;
		return ret;
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = w->type;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

/* ---- blocking */

struct iwarp_pollset {
	struct pollfd stack[IWARP_WAIT_STACK_FDS];
	struct pollfd *fds;
	int n, cap;
	uint64_t deadline;		/* the earliest, 0: none */
};

static int iwarp_pollset_grow(struct iwarp_pollset *ps, int need)
{
	struct pollfd *nf;

	if (need <= ps->cap)
		return 0;
	nf = malloc(sizeof(*nf) * need);
	if (!nf)
		return -FI_ENOMEM;
	if (ps->fds != ps->stack)
		free(ps->fds);
	ps->fds = nf;
	ps->cap = need;
	return 0;
}

/* Lock held. The eventfd, if any, is entry 0. */
static int iwarp_pollset_fill(struct iwarp_pollset *ps,
			      struct iwarp_fabric *fab, struct iwarp_wait *w)
{
	struct iwarp_list *l, *cur;
	struct iwarp_pollable *p;
	uint64_t deadline;
	short events;
	int fd, n = 1;

	iwarp_for_each_pollable(fab, l, cur)
		n++;
	if (iwarp_pollset_grow(ps, n))
		return -FI_ENOMEM;
	ps->n = 0;
	ps->deadline = 0;
	if (w && w->efd >= 0)
		ps->fds[ps->n++] = (struct pollfd){ .fd = w->efd,
						    .events = POLLIN };
	iwarp_for_each_pollable(fab, l, cur) {
		p = iwarp_container_of(cur, struct iwarp_pollable, link);
		iwarp_sleep_info(p, &fd, &events, &deadline);
		if (deadline && (!ps->deadline || deadline < ps->deadline))
			ps->deadline = deadline;
		if (fd >= 0 && events)
			ps->fds[ps->n++] = (struct pollfd){ .fd = fd,
							    .events = events };
	}
	return 0;
}

/* poll() timeout: the caller's end, the next pollable deadline, a slice. */
static int iwarp_slice_ms(const struct iwarp_pollset *ps, bool has_efd,
			  uint64_t now, uint64_t end)
{
	uint64_t ms = has_efd ? IWARP_WAIT_SLICE_MS : IWARP_WAIT_SLICE_NOFD_MS;

	if (end && end - now < ms)
		ms = end - now;
	if (ps->deadline) {
		/* a deadline that progress left in the past: back off 1 ms */
		uint64_t left = ps->deadline > now ? ps->deadline - now : 1;

		if (left < ms)
			ms = left;
	}
	return (int)ms;
}

/* One sleep of iwarp_wait_block: 1 to go on, else its result (-FI_EINTR
 * when a signal cut the poll short). */
static int iwarp_wait_sleep(struct iwarp_fabric *fab, struct iwarp_wait *w,
			    struct iwarp_pollset *ps, uint64_t now,
			    uint64_t end, bool *kicked)
{
	bool has_efd = w && w->efd >= 0;
	int ret, err;

	ret = iwarp_pollset_fill(ps, fab, w);
	if (ret)
		return ret;
	/* writers signal under the lock: nothing is lost by this */
	if (has_efd) {
		iwarp_wait_drain(w);
		w->sleepers++;
	}
	iwarp_unlock(fab);
	ret = poll(ps->fds, ps->n, iwarp_slice_ms(ps, has_efd, now, end));
	err = errno;
	iwarp_lock(fab);
	if (has_efd)
		w->sleepers--;
	if (ret < 0)
		return err == EINTR ? -FI_EINTR : -err;
	*kicked = has_efd && (ps->fds[0].revents & POLLIN);
	/* a listener that woke us must not wait its rare turn */
	fab->rare_due = ret > (*kicked ? 1 : 0);
	return 1;
}

/* Drepper's futex mutex ("Futexes Are Tricky", mutex 3), after a short
 * spin: a holder on another core usually lets go within it. */
void iwarp_lock_slow(struct iwarp_fabric *fab)
{
	uint32_t free_;
	int i;

	for (i = 0; i < 100; i++) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
		free_ = 0;
		if (__atomic_load_n(&fab->lock, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&fab->lock, &free_, 1, false,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
	}
	while (__atomic_exchange_n(&fab->lock, 2, __ATOMIC_ACQUIRE) != 0)
		syscall(SYS_futex, &fab->lock, FUTEX_WAIT_PRIVATE, 2, NULL,
			NULL, 0);
}

void iwarp_unlock_wake(struct iwarp_fabric *fab)
{
	syscall(SYS_futex, &fab->lock, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/*
 * Lock held. Polls for up to FI_IWARP_SPIN_US before the first sleep: a
 * peer's answer that comes within it needs no wakeup on either side (on
 * a VM a wakeup costs the sender 10-15 us in its sendmsg). The lock is
 * let go between turns for the application's other threads; every
 * fourth turn asks the listeners too, for connection events, and an
 * EQ's wait every turn (a connection request waits on them). Each turn
 * yields the processor: a peer woken on our core (the scheduler puts a
 * wakee beside its waker) would otherwise wait the whole spin to answer
 * (a connection's setup: 100 us more on each side).
 */
static bool iwarp_wait_spin(struct iwarp_fabric *fab,
			    bool (*ready)(void *arg), void *arg, bool cm)
{
	uint64_t end = iwarp_now_us() + (uint64_t)iwarp_params.spin_us;
	unsigned int turn = 0;

	do {
		if (cm || !(++turn & 3))
			iwarp_progress_cm(fab);
		else
			iwarp_progress(fab);
		if (ready(arg))
			return true;
		iwarp_unlock(fab);
		sched_yield();
		iwarp_lock(fab);
	} while (iwarp_now_us() < end);
	return false;
}

int iwarp_wait_block(struct iwarp_fabric *fab, struct iwarp_wait *w,
		     bool (*ready)(void *arg), void *arg, int timeout_ms,
		     bool signal_breaks)
{
	bool spun = timeout_ms == 0 || iwarp_params.spin_us <= 0;
	struct iwarp_pollset ps = { .cap = IWARP_WAIT_STACK_FDS };
	bool cm = w && w->cm;
	uint64_t now, end = 0;
	bool kicked = false;
	int ret;

	ps.fds = ps.stack;
	if (w && w->set)
		w = w->set;
	if (timeout_ms >= 0)
		end = iw_now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		iwarp_progress(fab);
		if (iwarp_trig_due(fab)) {
			/* issuing takes the lock: our caller's ops may be due */
			iwarp_unlock(fab);
			iwarp_trig_kick(fab);
			iwarp_lock(fab);
		}
		if (ready(arg)) {
			ret = 0;
			break;
		}
		if (kicked && signal_breaks) {
			ret = -FI_EINTR;
			break;
		}
		now = iw_now_ms();
		if (end && now >= end) {
			ret = -FI_EAGAIN;
			break;
		}
		if (!spun && !kicked) {
			spun = true;
			if (iwarp_wait_spin(fab, ready, arg, cm)) {
				ret = 0;
				break;
			}
			continue;	/* the deadline and triggers again */
		}
		ret = iwarp_wait_sleep(fab, w, &ps, now, end, &kicked);
		if (ret == -FI_EINTR) {
			iwarp_progress(fab);
			ret = ready(arg) ? 0 : -FI_EINTR;
		}
		if (ret != 1)
			break;
	}
	if (ps.fds != ps.stack)
		free(ps.fds);
	return ret;
}

/* ---- error text */

const char *iwarp_prov_errno_str(int prov_errno)
{
	if (prov_errno == IWARP_PROV_ERRNO_AUTH)
		return "job key authentication failed (the peer's key "
		       "differs or is missing, or its proof was replayed)";
	if (prov_errno < 0 || (prov_errno & ~0x1ffff) ||
	    !(prov_errno & 0x10000))
		return NULL;
	return iw_err_str((prov_errno >> 12) & 0xf, (prov_errno >> 8) & 0xf,
			  prov_errno & 0xff);
}

const char *iwarp_strerror(int prov_errno, char *buf, size_t len)
{
	const char *s = iwarp_prov_errno_str(prov_errno);

	if (!s)
		s = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (!buf || !len)
		return s;
	snprintf(buf, len, "%s", s);
	return buf;
}

/* ---- fi_trywait */

static struct iwarp_wait *iwarp_fid_wait(struct fid *fid,
					 struct iwarp_fabric **fab)
{
	switch (fid->fclass) {
	case FI_CLASS_CQ:
		*fab = iwarp_cq_of(fid)->fab;
		return &iwarp_cq_of(fid)->wait;
	case FI_CLASS_EQ:
		*fab = iwarp_eq_of(fid)->fab;
		return &iwarp_eq_of(fid)->wait;
	case FI_CLASS_CNTR:
		*fab = iwarp_cntr_of(fid)->fab;
		return &iwarp_cntr_of(fid)->wait;
	default:
		return NULL;
	}
}

/*
 * Lock held. Would a read find something? A counter counts as busy once
 * per change, the way a libfabric pollset reports counters.
 */
static bool iwarp_fid_busy(struct fid *fid)
{
	struct iwarp_cntr *cntr;
	struct iwarp_cq *cq;
	bool busy;

	switch (fid->fclass) {
	case FI_CLASS_CQ:
		cq = iwarp_cq_of(fid);
		return cq->count || cq->ecount || cq->signaled;
	case FI_CLASS_EQ:
		return iwarp_eq_of(fid)->count;
	default:
		cntr = iwarp_cntr_of(fid);
		busy = cntr->value != cntr->chk_value ||
		       cntr->err != cntr->chk_err;
		cntr->chk_value = cntr->value;
		cntr->chk_err = cntr->err;
		return busy;
	}
}

/*
 * 0: every object is empty, its eventfd has been reset and its epoll set
 * is current, so the caller may sleep on the fds; -FI_EAGAIN: read
 * first. -FI_EINVAL for objects without an fd or of another fabric.
 */
int iwarp_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	struct iwarp_fabric *fab = iwarp_fabric_of(&fabric->fid), *of;
	struct iwarp_wait *w;
	int i, ret = 0;

	for (i = 0; i < count; i++) {
		w = fids[i] ? iwarp_fid_wait(fids[i], &of) : NULL;
		if (!w || of != fab || w->type != FI_WAIT_FD)
			return -FI_EINVAL;
	}
	iwarp_lock(fab);
	iwarp_progress(fab);
	for (i = 0; i < count; i++) {
		if (iwarp_fid_busy(fids[i])) {
			ret = -FI_EAGAIN;
			goto unlock;
		}
	}
	for (i = 0; i < count && !ret; i++) {
		w = iwarp_fid_wait(fids[i], &of);
		iwarp_wait_drain(w);
		ret = iwarp_wait_sync(w);
	}
unlock:
	iwarp_unlock(fab);
	return ret;
}
