/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Which sockets are ready, when a fabric has many (a rank connected to
 * many peers, a server holding many endpoints). A progress call used to
 * ask every pollable for its socket and poll() them all: with 64 peers
 * that was half the CPU time of a message. From iwarp_params.ready_min
 * sockets on, the sockets sit in an epoll set and the calls between rare
 * turns drive only what epoll_wait reports, plus the few pollables that
 * had work without a socket at the last rare turn. The rare turns still
 * ask and poll() every pollable (deadlines, listeners, anything missed)
 * and bring the set up to date; a pollable is also brought up to date
 * after each time it is driven, and when work is posted to it
 * (iwarp_pollable_touch). So what the set lacks is found by the next
 * rare turn at the latest (IWARP_RARE_US while busy, IWARP_RARE_MS
 * otherwise), and waits that sleep poll() everything as before.
 *
 * The set is keyed by fd, and ready_map says which pollable registered
 * each fd: a socket closed and its number reused by another pollable's
 * is taken over by the newer registration, and a pollable deleted
 * (iwarp_pollable_del) leaves neither the map nor the queues of a turn.
 */
#include "iwarp.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "iwarp/engine.h"

/* events taken from the set per fast turn; the rest stay ready */
#define IWARP_READY_BATCH 64

static void iwarp_ready_forget(struct iwarp_fabric *fab,
			       struct iwarp_pollable *p)
{
	int fd = p->reg_fd;

	p->reg_fd = -1;
	p->reg_events = 0;
	if (fd < 0 || fd >= fab->ready_cap || fab->ready_map[fd] != p)
		return;
	fab->ready_map[fd] = NULL;
	/* fails harmlessly when the socket is already closed */
	epoll_ctl(fab->ready_fd, EPOLL_CTL_DEL, fd, NULL);
}

static bool iwarp_ready_grow(struct iwarp_fabric *fab, int fd)
{
	struct iwarp_pollable **m;
	int cap = fab->ready_cap ? fab->ready_cap : 64;
	int i;

	while (cap <= fd)
		cap *= 2;
	if (cap == fab->ready_cap)
		return true;
	m = realloc(fab->ready_map, sizeof(*m) * (size_t)cap);
	if (!m)
		return false;
	for (i = fab->ready_cap; i < cap; i++)
		m[i] = NULL;
	fab->ready_map = m;
	fab->ready_cap = cap;
	return true;
}

/* Registers p's socket for events (none: out of the set). A failure
 * leaves p out: the rare turns still poll it. */
static void iwarp_ready_set(struct iwarp_fabric *fab,
			    struct iwarp_pollable *p, int fd, short events)
{
	struct epoll_event ev = { .events = iwarp_poll_to_epoll(events) };
	struct iwarp_pollable *old;

	if (p->rare || fd < 0 || !ev.events) {
		iwarp_ready_forget(fab, p);
		return;
	}
	if (fd == p->reg_fd && events == p->reg_events &&
	    fab->ready_map[fd] == p)
		return;
	if (p->reg_fd != fd)
		iwarp_ready_forget(fab, p);
	if (!iwarp_ready_grow(fab, fd))
		return;
	old = fab->ready_map[fd];
	if (old && old != p) {
		/* its socket was closed and the number is p's now */
		old->reg_fd = -1;
		old->reg_events = 0;
	}
	fab->ready_map[fd] = NULL;
	ev.data.fd = fd;
	/* whatever the set believes: a closed socket left it on its own */
	if (epoll_ctl(fab->ready_fd, EPOLL_CTL_MOD, fd, &ev) &&
	    (errno != ENOENT ||
	     epoll_ctl(fab->ready_fd, EPOLL_CTL_ADD, fd, &ev))) {
		p->reg_fd = -1;
		p->reg_events = 0;
		return;
	}
	fab->ready_map[fd] = p;
	p->reg_fd = fd;
	p->reg_events = events;
}

void iwarp_ready_sync(struct iwarp_fabric *fab, struct iwarp_pollable *p)
{
	uint64_t deadline;
	short events;
	int fd;

	if (!fab->ready_on || p->busy)
		return;
	p->poll_info(p, &fd, &events, &deadline);
	iwarp_ready_set(fab, p, fd, events);
}

void iwarp_pollable_reset(struct iwarp_pollable *p)
{
	if (p->fab)
		iwarp_ready_forget(p->fab, p);
}

void iwarp_ready_drop(struct iwarp_fabric *fab, struct iwarp_pollable *p)
{
	size_t i;

	iwarp_ready_forget(fab, p);
	for (i = 0; i < fab->runq_n; i++)
		if (fab->runq[i] == p)
			fab->runq[i] = NULL;
	for (i = 0; i < fab->dueq_n; i++)
		if (fab->dueq[i] == p)
			fab->dueq[i] = NULL;
	p->queued = false;
}

static bool iwarp_ready_push(struct iwarp_pollable ***q, size_t *n,
			     size_t *cap, struct iwarp_pollable *p)
{
	struct iwarp_pollable **nq;
	size_t c;

	if (*n == *cap) {
		c = *cap ? *cap * 2 : 16;
		nq = realloc(*q, sizeof(*nq) * c);
		if (!nq)
			return false;
		*q = nq;
		*cap = c;
	}
	(*q)[(*n)++] = p;
	return true;
}

/*
 * A rare turn's gather: p has work without a socket (or says it is due
 * at once) and is to be driven by every fast turn until the next rare
 * one. The queue starts empty at each gather (iwarp_ready_scan ends
 * it). false: out of memory, the fast turns stay off.
 */
bool iwarp_ready_due(struct iwarp_fabric *fab, struct iwarp_pollable *p)
{
	return iwarp_ready_push(&fab->dueq, &fab->dueq_n, &fab->dueq_cap, p);
}

/*
 * After a rare turn's gather of n descriptors (fab->pfds, fab->pptr),
 * nsock of them sockets of non-rare pollables: the fast turns go on or
 * off, and the set learns what each socket waits for now.
 */
void iwarp_ready_scan(struct iwarp_fabric *fab, size_t n, size_t nsock)
{
	bool on = iwarp_params.ready_min > 0 &&
		  nsock >= (size_t)iwarp_params.ready_min;
	size_t i;

	if (on && fab->ready_fd < 0) {
		fab->ready_fd = epoll_create1(EPOLL_CLOEXEC);
		if (fab->ready_fd < 0)
			on = false;
	}
	if (on && !fab->ready_on)
		FI_INFO(&iwarp_prov, FI_LOG_CORE, "fabric %s: %zu sockets, "
			"progress asks epoll which are ready\n", fab->name,
			nsock);
	fab->ready_on = on;
	if (!on)
		return;
	for (i = 0; i < n; i++)
		iwarp_ready_set(fab, fab->pptr[i], fab->pfds[i].fd,
				fab->pfds[i].events);
}

/* Lock held, not re-entered (iwarp_progress). A turn between rare ones. */
void iwarp_ready_run(struct iwarp_fabric *fab)
{
	struct epoll_event ev[IWARP_READY_BATCH];
	struct iwarp_pollable *p;
	int n, i, fd;
	size_t k;

	n = epoll_wait(fab->ready_fd, ev, IWARP_READY_BATCH, 0);
	fab->runq_n = 0;
	for (i = 0; i < n; i++) {
		fd = ev[i].data.fd;
		p = fd < fab->ready_cap ? fab->ready_map[fd] : NULL;
		if (!p || p->reg_fd != fd || p->queued)
			continue;
		if (!iwarp_ready_push(&fab->runq, &fab->runq_n,
				      &fab->runq_cap, p))
			break;	/* the rest at the next turn */
		p->queued = true;
	}
	for (k = 0; k < fab->dueq_n; k++) {
		p = fab->dueq[k];
		if (!p || p->queued)
			continue;
		if (!iwarp_ready_push(&fab->runq, &fab->runq_n,
				      &fab->runq_cap, p))
			break;
		p->queued = true;
	}
	/* a callback may delete any of them: iwarp_ready_drop clears it */
	for (k = 0; k < fab->runq_n; k++) {
		p = fab->runq[k];
		if (!p)
			continue;
		p->queued = false;
		p->run = false;
		p->progress(p);
		if (fab->runq[k])
			iwarp_ready_sync(fab, p);
	}
	fab->runq_n = 0;
}

void iwarp_ready_fini(struct iwarp_fabric *fab)
{
	if (fab->ready_fd >= 0)
		iw_fd_close(fab->ready_fd);
	fab->ready_fd = -1;
	free(fab->ready_map);
	free(fab->runq);
	free(fab->dueq);
	fab->ready_map = fab->runq = fab->dueq = NULL;
	fab->ready_cap = 0;
	fab->runq_n = fab->runq_cap = fab->dueq_n = fab->dueq_cap = 0;
}
