/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event queues, completion queues and counters of the provider, through
 * the public libfabric API only: reading, peeking, error entries, the
 * blocking calls and their timeouts, the fd wait objects with epoll and
 * fi_trywait, and the order in which objects may be closed.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so.
 * Error entries need a connection: that part runs once the provider
 * offers FI_EP_MSG (a connection rejected with private data).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "tap.h"
#include "fi_api.h"

#define API TEST_API
/* timeouts of the blocking calls, and what counts as having slept */
#define SHORT_MS	50
#define SLEPT_MS	40
#define PROMPT_MS	1000

/* The provider's prov_errno of an RFC error triple (iwarp.h), MPA CRC. */
#define PROV_ERRNO_MPA_CRC	(0x10000 | 2 << 12 | 0 << 8 | 2)

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fi_info *info;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static bool fd_readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

/* epoll_wait(0) on a fresh epoll set holding fd: what an app would see */
static int epoll_ready(int fd)
{
	struct epoll_event ev = { .events = EPOLLIN }, out;
	int ep = epoll_create1(0), n;

	if (ep < 0)
		return -1;
	ev.data.fd = fd;
	n = epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ? -1 :
	    epoll_wait(ep, &out, 1, 0);
	close(ep);
	return n;
}

/* fi_tostr has no FI_TYPE for wait objects */
static const char *wait_name(enum fi_wait_obj w)
{
	static const char *const names[] = {
		[FI_WAIT_NONE] = "FI_WAIT_NONE",
		[FI_WAIT_UNSPEC] = "FI_WAIT_UNSPEC",
		[FI_WAIT_SET] = "FI_WAIT_SET",
		[FI_WAIT_FD] = "FI_WAIT_FD",
		[FI_WAIT_MUTEX_COND] = "FI_WAIT_MUTEX_COND",
		[FI_WAIT_YIELD] = "FI_WAIT_YIELD",
		[FI_WAIT_POLLFD] = "FI_WAIT_POLLFD",
	};

	return (size_t)w < sizeof(names) / sizeof(names[0]) ? names[w] : "?";
}

static int trywait1(struct fid *fid)
{
	return fi_trywait(fabric, &fid, 1);
}

static int setup(void)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->fabric_attr->prov_name = strdup("iwarp");
	ret = fi_getinfo(API, NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (!tap_ok(!ret, "fi_getinfo finds iwarp on lo (%d)", ret))
		return ret;
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (!tap_ok(!ret, "fi_fabric %s (%d)", info->fabric_attr->name, ret))
		return ret;
	ret = fi_domain(fabric, info, &domain, NULL);
	tap_ok(!ret, "fi_domain %s (%d)", info->domain_attr->name, ret);
	return ret;
}

/* ---- event queues */

static int eq_open(enum fi_wait_obj wait, size_t size, struct fid_eq **eq)
{
	struct fi_eq_attr attr = {
		.size = size,
		.flags = FI_WRITE,
		.wait_obj = wait,
	};

	return fi_eq_open(fabric, &attr, eq, NULL);
}

static ssize_t eq_put(struct fid_eq *eq, uintptr_t ctx)
{
	struct fi_eq_entry e = {
		.fid = &eq->fid,
		.context = (void *)ctx,
		.data = 1000 + ctx,
	};

	return fi_eq_write(eq, FI_NOTIFY, &e, sizeof(e), 0);
}

/* Reads one entry; returns its context, or -1 if it is not as written. */
static long eq_get(struct fid_eq *eq, uint64_t flags)
{
	struct fi_eq_entry e;
	uint32_t event = ~0u;
	ssize_t ret;

	memset(&e, 0, sizeof(e));
	ret = fi_eq_read(eq, &event, &e, sizeof(e), flags);
	if (ret != (ssize_t)sizeof(e) || event != FI_NOTIFY ||
	    e.fid != &eq->fid || e.data != 1000 + (uintptr_t)e.context) {
		tap_diag("fi_eq_read: %zd event %u", ret, event);
		return -1;
	}
	return (long)(uintptr_t)e.context;
}

static void test_eq_read_peek(void)
{
	struct fi_eq_err_entry err;
	struct fi_eq_entry e;
	struct fid_eq *eq;
	uint32_t event;
	bool ok = true;
	long i;

	if (!tap_ok(!eq_open(FI_WAIT_NONE, 8, &eq), "EQ open, FI_WAIT_NONE"))
		return;
	for (i = 0; i < 3; i++)
		ok &= eq_put(eq, i) == (ssize_t)sizeof(struct fi_eq_entry);
	tap_ok(ok, "fi_eq_write returns the length written");
	tap_ok(eq_get(eq, FI_PEEK) == 0 && eq_get(eq, FI_PEEK) == 0,
	       "FI_PEEK returns the head twice without consuming it");
	tap_ok(fi_eq_read(eq, &event, &e, sizeof(e) - 1, 0) == -FI_ETOOSMALL,
	       "a buffer smaller than the entry -> -FI_ETOOSMALL");
	tap_ok(eq_get(eq, 0) == 0 && eq_get(eq, 0) == 1 && eq_get(eq, 0) == 2,
	       "entries come back in order, the too-small read lost none");
	tap_ok(fi_eq_read(eq, &event, &e, sizeof(e), 0) == -FI_EAGAIN,
	       "empty EQ -> -FI_EAGAIN");
	memset(&err, 0, sizeof(err));
	tap_ok(fi_eq_readerr(eq, &err, 0) == -FI_EAGAIN,
	       "fi_eq_readerr without an error -> -FI_EAGAIN");
	for (i = 0, ok = true; i < 100; i++)
		ok &= eq_put(eq, i) == (ssize_t)sizeof(struct fi_eq_entry);
	for (i = 0; i < 100; i++)
		ok &= eq_get(eq, 0) == i;
	tap_ok(ok, "an EQ of size 8 takes and returns 100 events in order");
	tap_ok(!fi_close(&eq->fid), "EQ close");
}

/* A CM-shaped user event: fi_eq_cm_entry followed by data. */
static void test_eq_cm_data(void)
{
	uint8_t in[sizeof(struct fi_eq_cm_entry) + 16];
	uint8_t out[sizeof(in) + 8];
	struct fi_eq_cm_entry *cm = (void *)in;
	const size_t hdr = sizeof(*cm);
	struct fid_eq *eq;
	uint32_t event;
	ssize_t ret;
	int i;

	if (eq_open(FI_WAIT_NONE, 0, &eq))
		return;
	memset(in, 0, sizeof(in));
	cm->fid = &eq->fid;
	for (i = 0; i < 16; i++)
		cm->data[i] = (uint8_t)(0xa0 + i);
	fi_eq_write(eq, FI_CONNECTED, in, sizeof(in), 0);
	fi_eq_write(eq, FI_CONNECTED, in, sizeof(in), 0);
	ret = fi_eq_read(eq, &event, out, sizeof(out), 0);
	tap_ok(ret == (ssize_t)sizeof(in) && event == FI_CONNECTED &&
	       !memcmp(out, in, sizeof(in)),
	       "CM entry + 16 octets of data read whole (%zd)", ret);
	ret = fi_eq_read(eq, &event, out, hdr - 1, 0);
	tap_ok(ret == -FI_ETOOSMALL,
	       "CM entry into a buffer below fi_eq_cm_entry -> -FI_ETOOSMALL");
	ret = fi_eq_read(eq, &event, out, hdr + 4, 0);
	tap_ok(ret == (ssize_t)(hdr + 4) && !memcmp(out, in, hdr + 4),
	       "CM data is cut to the buffer given (%zd)", ret);
	fi_close(&eq->fid);
}

static void test_eq_strerror(struct fid_eq *eq)
{
	char buf[128];
	const char *s;

	s = fi_eq_strerror(eq, FI_ETIMEDOUT, NULL, NULL, 0);
	tap_ok(s && !strcmp(s, fi_strerror(FI_ETIMEDOUT)),
	       "fi_eq_strerror of a plain errno is fi_strerror's text");
	s = fi_eq_strerror(eq, PROV_ERRNO_MPA_CRC, NULL, buf, sizeof(buf));
	tap_ok(s == buf && strstr(buf, "MPA") && strstr(buf, "CRC"),
	       "fi_eq_strerror decodes an iWARP triple: \"%s\"", buf);
}

struct delayed {
	pthread_t thread;
	int ms;
	void (*fn)(void *obj);
	void *obj;
};

static void *delayed_main(void *arg)
{
	struct delayed *d = arg;

	sleep_ms(d->ms);
	d->fn(d->obj);
	return NULL;
}

static bool delayed_start(struct delayed *d, int ms, void (*fn)(void *),
			  void *obj)
{
	d->ms = ms;
	d->fn = fn;
	d->obj = obj;
	return !pthread_create(&d->thread, NULL, delayed_main, d);
}

static void eq_put_7(void *eq)
{
	eq_put(eq, 7);
}

static void test_eq_sread(void)
{
	struct fi_eq_entry e;
	struct delayed d;
	struct fid_eq *eq;
	uint32_t event;
	uint64_t t;
	ssize_t ret;

	if (!tap_ok(!eq_open(FI_WAIT_UNSPEC, 0, &eq),
		    "EQ open, FI_WAIT_UNSPEC"))
		return;
	t = now_ms();
	ret = fi_eq_sread(eq, &event, &e, sizeof(e), SHORT_MS, 0);
	t = now_ms() - t;
	tap_ok(ret == -FI_EAGAIN && t >= SLEPT_MS && t < PROMPT_MS,
	       "fi_eq_sread on empty EQ: -FI_EAGAIN after %d ms (%zd, %llu ms)",
	       SHORT_MS, ret, (unsigned long long)t);
	eq_put(eq, 3);
	t = now_ms();
	ret = fi_eq_sread(eq, &event, &e, sizeof(e), 2000, FI_PEEK);
	tap_ok(ret == (ssize_t)sizeof(e) && e.context == (void *)3 &&
	       now_ms() - t < PROMPT_MS,
	       "fi_eq_sread with an event pending returns it (FI_PEEK)");
	tap_ok(eq_get(eq, 0) == 3, "the peeked event is still there");
	if (!delayed_start(&d, SHORT_MS, eq_put_7, eq))
		return;
	t = now_ms();
	ret = fi_eq_sread(eq, &event, &e, sizeof(e), 5000, 0);
	t = now_ms() - t;
	pthread_join(d.thread, NULL);
	tap_ok(ret == (ssize_t)sizeof(e) && e.context == (void *)7 &&
	       t < PROMPT_MS,
	       "fi_eq_write from another thread wakes fi_eq_sread (%llu ms)",
	       (unsigned long long)t);
	test_eq_strerror(eq);
	fi_close(&eq->fid);
}

static void test_eq_fd(void)
{
	enum fi_wait_obj obj = FI_WAIT_NONE;
	struct fid_eq *eq;
	int fd = -1, ret;

	if (!tap_ok(!eq_open(FI_WAIT_FD, 0, &eq), "EQ open, FI_WAIT_FD"))
		return;
	ret = fi_control(&eq->fid, FI_GETWAITOBJ, &obj);
	tap_ok(!ret && obj == FI_WAIT_FD, "FI_GETWAITOBJ -> FI_WAIT_FD");
	ret = fi_control(&eq->fid, FI_GETWAIT, &fd);
	if (!tap_ok(!ret && fd >= 0, "FI_GETWAIT gives an fd (%d)", fd))
		goto out;
	tap_ok(trywait1(&eq->fid) == 0 && !fd_readable(fd) &&
	       epoll_ready(fd) == 0,
	       "empty EQ: fi_trywait 0, fd not readable, epoll sees nothing");
	eq_put(eq, 1);
	tap_ok(fd_readable(fd) && epoll_ready(fd) == 1,
	       "fi_eq_write makes the fd readable, in epoll too");
	tap_ok(trywait1(&eq->fid) == -FI_EAGAIN,
	       "fi_trywait with an event queued -> -FI_EAGAIN");
	tap_ok(eq_get(eq, 0) == 1 && trywait1(&eq->fid) == 0 &&
	       !fd_readable(fd),
	       "after the read, fi_trywait 0 resets the fd");
out:
	fi_close(&eq->fid);
}

/* Before FI_GETWAIT nobody can wait on the fd, so events queued then do
 * not signal it; handing the fd out must still show them. */
static void test_eq_fd_late(void)
{
	struct fid_eq *eq;
	int fd = -1, ret;

	if (!tap_ok(!eq_open(FI_WAIT_FD, 0, &eq), "EQ open, FI_WAIT_FD"))
		return;
	eq_put(eq, 5);
	ret = fi_control(&eq->fid, FI_GETWAIT, &fd);
	if (!tap_ok(!ret && fd >= 0, "FI_GETWAIT after an event (%d)", fd))
		goto out;
	tap_ok(fd_readable(fd) && epoll_ready(fd) == 1,
	       "an event queued before FI_GETWAIT: the fd it gives is "
	       "readable, in epoll too");
	tap_ok(eq_get(eq, 0) == 5 && trywait1(&eq->fid) == 0 &&
	       !fd_readable(fd),
	       "after the read, fi_trywait 0 resets the fd");
out:
	fi_close(&eq->fid);
}

static void test_eq_wait_objs(void)
{
	static const enum fi_wait_obj no[] = {
		FI_WAIT_SET, FI_WAIT_MUTEX_COND, FI_WAIT_YIELD,
	};
	struct fid_eq *eq;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		ret = eq_open(no[i], 0, &eq);
		tap_ok(ret == -FI_ENOSYS,
		       "EQ wait object %s -> -FI_ENOSYS (%d)",
		       wait_name(no[i]), ret);
		if (!ret)
			fi_close(&eq->fid);
	}
}

/* ---- completion queues */

static int cq_open(enum fi_cq_format format, enum fi_wait_obj wait,
		   struct fid_cq **cq)
{
	struct fi_cq_attr attr = {
		.size = 16,
		.format = format,
		.wait_obj = wait,
	};

	return fi_cq_open(domain, &attr, cq, NULL);
}

static void test_cq_open(void)
{
	static const enum fi_cq_format fmts[] = {
		FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
		FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED,
	};
	static const enum fi_wait_obj waits[] = {
		FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_FD,
	};
	static const enum fi_wait_obj no[] = {
		FI_WAIT_MUTEX_COND, FI_WAIT_YIELD,
	};
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	struct fid_cq *cq;
	size_t f, w;
	int ret;
	bool ok;

	for (f = 0; f < sizeof(fmts) / sizeof(fmts[0]); f++) {
		for (w = 0; w < sizeof(waits) / sizeof(waits[0]); w++) {
			ret = cq_open(fmts[f], waits[w], &cq);
			ok = !ret;
			if (!ret) {
				memset(&err, 0, sizeof(err));
				ok = fi_cq_read(cq, &e, 1) == -FI_EAGAIN &&
				     fi_cq_readfrom(cq, &e, 1, &src) ==
					     -FI_EAGAIN &&
				     fi_cq_readerr(cq, &err, 0) == -FI_EAGAIN;
				ok &= !fi_close(&cq->fid);
			}
			tap_ok(ok, "CQ %s/%s: open, empty reads -FI_EAGAIN, "
			       "close (%d)",
			       fi_tostr(&fmts[f], FI_TYPE_CQ_FORMAT),
			       wait_name(waits[w]), ret);
		}
	}
	for (w = 0; w < sizeof(no) / sizeof(no[0]); w++) {
		ret = cq_open(FI_CQ_FORMAT_CONTEXT, no[w], &cq);
		tap_ok(ret == -FI_ENOSYS,
		       "CQ wait object %s -> -FI_ENOSYS (%d)",
		       wait_name(no[w]), ret);
		if (!ret)
			fi_close(&cq->fid);
	}
	/* FI_WAIT_SET names its set in wait_set: none is no wait object */
	ret = cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_SET, &cq);
	tap_ok(ret == -FI_EINVAL,
	       "CQ wait object FI_WAIT_SET without a set -> -FI_EINVAL (%d)",
	       ret);
	if (!ret)
		fi_close(&cq->fid);
	ret = cq_open((enum fi_cq_format)99, FI_WAIT_NONE, &cq);
	tap_ok(ret == -FI_EINVAL, "CQ format 99 -> -FI_EINVAL (%d)", ret);
	if (!ret)
		fi_close(&cq->fid);
}

static void cq_signal(void *cq)
{
	fi_cq_signal(cq);
}

static void test_cq_sread(void)
{
	struct fi_cq_entry e;
	struct delayed d;
	struct fid_cq *cq;
	uint64_t t;
	ssize_t ret;

	if (cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, &cq))
		return;
	t = now_ms();
	ret = fi_cq_sread(cq, &e, 1, NULL, SHORT_MS);
	t = now_ms() - t;
	tap_ok(ret == -FI_EAGAIN && t >= SLEPT_MS && t < PROMPT_MS,
	       "fi_cq_sread on empty CQ: -FI_EAGAIN after %d ms (%zd, %llu ms)",
	       SHORT_MS, ret, (unsigned long long)t);
	tap_ok(!fi_cq_signal(cq), "fi_cq_signal");
	t = now_ms();
	ret = fi_cq_sread(cq, &e, 1, NULL, 5000);
	t = now_ms() - t;
	tap_ok(ret == -FI_EAGAIN && t < PROMPT_MS,
	       "a pending fi_cq_signal ends the next fi_cq_sread: -FI_EAGAIN");
	t = now_ms();
	ret = fi_cq_sread(cq, &e, 1, NULL, SHORT_MS);
	t = now_ms() - t;
	tap_ok(ret == -FI_EAGAIN && t >= SLEPT_MS,
	       "the signal was consumed: the next sread waits again");
	if (!delayed_start(&d, SHORT_MS, cq_signal, cq))
		goto out;
	t = now_ms();
	ret = fi_cq_sread(cq, &e, 1, NULL, 5000);
	t = now_ms() - t;
	pthread_join(d.thread, NULL);
	tap_ok(ret == -FI_EAGAIN && t >= SLEPT_MS && t < PROMPT_MS,
	       "fi_cq_signal from another thread wakes a blocked fi_cq_sread "
	       "(%zd after %llu ms)", ret, (unsigned long long)t);
out:
	fi_close(&cq->fid);
}

static void test_cq_fd(void)
{
	struct fi_cq_entry e;
	struct fid_cq *cq, *none;
	int fd = -1, ret;

	if (cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, &cq))
		return;
	ret = fi_control(&cq->fid, FI_GETWAIT, &fd);
	if (!tap_ok(!ret && fd >= 0, "CQ FI_GETWAIT gives an fd (%d)", fd))
		goto out;
	tap_ok(trywait1(&cq->fid) == 0 && epoll_ready(fd) == 0,
	       "empty CQ: fi_trywait 0, epoll sees nothing");
	fi_cq_signal(cq);
	tap_ok(epoll_ready(fd) == 1 && trywait1(&cq->fid) == -FI_EAGAIN,
	       "fi_cq_signal: fd readable in epoll, fi_trywait -FI_EAGAIN");
	tap_ok(fi_cq_sread(cq, &e, 1, NULL, 0) == -FI_EAGAIN &&
	       trywait1(&cq->fid) == 0 && epoll_ready(fd) == 0,
	       "sread took the signal: fi_trywait 0, fd quiet again");
	if (!cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, &none)) {
		struct fid *two[2] = { &cq->fid, &none->fid };

		tap_ok(fi_trywait(fabric, two, 2) == -FI_EINVAL,
		       "fi_trywait on a CQ without wait object -> -FI_EINVAL");
		fi_close(&none->fid);
	}
out:
	fi_close(&cq->fid);
}

static void test_cq_strerror(void)
{
	struct fid_cq *cq;
	char buf[128];
	const char *s;

	if (cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, &cq))
		return;
	s = fi_cq_strerror(cq, FI_ECANCELED, NULL, NULL, 0);
	tap_ok(s && !strcmp(s, fi_strerror(FI_ECANCELED)),
	       "fi_cq_strerror of a plain errno is fi_strerror's text");
	s = fi_cq_strerror(cq, PROV_ERRNO_MPA_CRC, NULL, buf, 8);
	tap_ok(s == buf && strlen(buf) == 7 && !strncmp(buf, "MPA", 3),
	       "fi_cq_strerror into a short buffer is cut and terminated");
	fi_close(&cq->fid);
}

/* ---- counters */

static int cntr_open(enum fi_wait_obj wait, struct fid_cntr **c)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = wait,
	};

	return fi_cntr_open(domain, &attr, c, NULL);
}

static void cntr_add_1(void *c)
{
	fi_cntr_add(c, 1);
}

static void cntr_adderr_1(void *c)
{
	fi_cntr_adderr(c, 1);
}

static void test_cntr_values(struct fid_cntr *c)
{
	bool ok;

	ok = fi_cntr_read(c) == 0 && fi_cntr_readerr(c) == 0;
	ok &= !fi_cntr_add(c, 5) && fi_cntr_read(c) == 5;
	ok &= !fi_cntr_set(c, 10) && fi_cntr_read(c) == 10;
	tap_ok(ok, "counter starts at 0; add 5 -> 5; set 10 -> 10");
	ok = !fi_cntr_adderr(c, 2) && fi_cntr_readerr(c) == 2;
	ok &= !fi_cntr_seterr(c, 7) && fi_cntr_readerr(c) == 7;
	tap_ok(ok && fi_cntr_read(c) == 10,
	       "error count: adderr 2 -> 2; seterr 7 -> 7; value untouched");
}

static void test_cntr_wait(struct fid_cntr *c)
{
	struct delayed d;
	uint64_t t;
	int ret;

	t = now_ms();
	ret = fi_cntr_wait(c, 10, 2000);
	tap_ok(!ret && now_ms() - t < PROMPT_MS,
	       "fi_cntr_wait for a reached threshold returns 0 at once");
	t = now_ms();
	ret = fi_cntr_wait(c, 11, SHORT_MS);
	t = now_ms() - t;
	tap_ok(ret == -FI_ETIMEDOUT && t >= SLEPT_MS && t < PROMPT_MS,
	       "fi_cntr_wait below threshold: -FI_ETIMEDOUT after %d ms "
	       "(%d, %llu ms)", SHORT_MS, ret, (unsigned long long)t);
	if (delayed_start(&d, SHORT_MS, cntr_add_1, c)) {
		t = now_ms();
		ret = fi_cntr_wait(c, 11, 5000);
		t = now_ms() - t;
		pthread_join(d.thread, NULL);
		tap_ok(!ret && t >= SLEPT_MS && t < PROMPT_MS,
		       "fi_cntr_add from another thread ends fi_cntr_wait "
		       "(%d after %llu ms)", ret, (unsigned long long)t);
	}
	if (delayed_start(&d, SHORT_MS, cntr_adderr_1, c)) {
		t = now_ms();
		ret = fi_cntr_wait(c, 100, 5000);
		t = now_ms() - t;
		pthread_join(d.thread, NULL);
		tap_ok(ret == -FI_EAVAIL && t < PROMPT_MS,
		       "an error count change ends fi_cntr_wait: -FI_EAVAIL "
		       "(%d)", ret);
	}
}

static void test_cntr_fd(struct fid_cntr *c)
{
	int fd = -1, ret;

	ret = fi_control(&c->fid, FI_GETWAIT, &fd);
	if (!tap_ok(!ret && fd >= 0, "counter FI_GETWAIT gives an fd (%d)", fd))
		return;
	tap_ok(trywait1(&c->fid) == -FI_EAGAIN && trywait1(&c->fid) == 0 &&
	       epoll_ready(fd) == 0,
	       "fi_trywait: -FI_EAGAIN once for a change, then 0, fd quiet");
	fi_cntr_add(c, 1);
	tap_ok(epoll_ready(fd) == 1 && trywait1(&c->fid) == -FI_EAGAIN &&
	       trywait1(&c->fid) == 0 && epoll_ready(fd) == 0,
	       "fi_cntr_add: fd readable, fi_trywait -FI_EAGAIN, then 0");
}

static void test_cntr(void)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *c;
	int ret;

	if (!tap_ok(!cntr_open(FI_WAIT_UNSPEC, &c), "counter open"))
		return;
	test_cntr_values(c);
	test_cntr_wait(c);
	test_cntr_fd(c);
	fi_close(&c->fid);
	ret = cntr_open(FI_WAIT_YIELD, &c);
	tap_ok(ret == -FI_ENOSYS, "counter FI_WAIT_YIELD -> -FI_ENOSYS (%d)",
	       ret);
	if (!ret)
		fi_close(&c->fid);
	attr.flags = 1;
	ret = fi_cntr_open(domain, &attr, &c, NULL);
	tap_ok(ret == -FI_EINVAL, "counter flags -> -FI_EINVAL (%d)", ret);
	if (!ret)
		fi_close(&c->fid);
	if (!tap_ok(!cntr_open(FI_WAIT_NONE, &c), "counter open, FI_WAIT_NONE"))
		return;
	fi_cntr_add(c, 3);
	tap_ok(fi_cntr_read(c) == 3 && !fi_cntr_wait(c, 3, 0),
	       "FI_WAIT_NONE counter counts");
	fi_close(&c->fid);
}

/* ---- error entries from a real connection */

struct cm {
	struct fi_info *sinfo, *cinfo;
	struct fid_fabric *fab;
	struct fid_domain *dom;
	struct fid_pep *pep;
	struct fid_eq *peq, *ceq;
	struct fid_cq *cq;
};

static struct fi_info *cm_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->fabric_attr->prov_name = strdup("iwarp");
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG;
	h->addr_format = FI_SOCKADDR_IN;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
				  FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	return h;
}

static int cm_getinfo(const char *service, uint64_t flags,
		      struct fi_info **out)
{
	struct fi_info *h = cm_hints();
	int ret;

	if (!h)
		return -FI_ENOMEM;
	ret = fi_getinfo(API, "127.0.0.1", service, flags, h, out);
	fi_freeinfo(h);
	return ret;
}

/* A listener on an ephemeral port, and a client side in one fabric. */
static int cm_setup(struct cm *c)
{
	struct sockaddr_in sin;
	size_t len = sizeof(sin);
	char port[16];
	int ret;

	ret = cm_getinfo("0", FI_SOURCE, &c->sinfo);
	if (ret)
		return ret;
	ret = fi_fabric(c->sinfo->fabric_attr, &c->fab, NULL);
	ret = ret ? ret : fi_passive_ep(c->fab, c->sinfo, &c->pep, NULL);
	ret = ret ? ret : fi_eq_open(c->fab, &(struct fi_eq_attr){
			.wait_obj = FI_WAIT_UNSPEC }, &c->peq, NULL);
	ret = ret ? ret : fi_pep_bind(c->pep, &c->peq->fid, 0);
	ret = ret ? ret : fi_listen(c->pep);
	ret = ret ? ret : fi_getname(&c->pep->fid, &sin, &len);
	if (ret)
		return ret;
	snprintf(port, sizeof(port), "%u", ntohs(sin.sin_port));
	ret = cm_getinfo(port, 0, &c->cinfo);
	ret = ret ? ret : fi_domain(c->fab, c->cinfo, &c->dom, NULL);
	ret = ret ? ret : fi_eq_open(c->fab, &(struct fi_eq_attr){
			.wait_obj = FI_WAIT_UNSPEC }, &c->ceq, NULL);
	ret = ret ? ret : fi_cq_open(c->dom, &(struct fi_cq_attr){
			.format = FI_CQ_FORMAT_CONTEXT,
			.wait_obj = FI_WAIT_UNSPEC }, &c->cq, NULL);
	return ret;
}

static void cm_teardown(struct cm *c)
{
	struct fid *fids[] = {
		c->cq ? &c->cq->fid : NULL, c->ceq ? &c->ceq->fid : NULL,
		c->dom ? &c->dom->fid : NULL, c->pep ? &c->pep->fid : NULL,
		c->peq ? &c->peq->fid : NULL, c->fab ? &c->fab->fid : NULL,
	};
	size_t i;
	bool ok = true;

	for (i = 0; i < sizeof(fids) / sizeof(fids[0]); i++)
		if (fids[i])
			ok &= !fi_close(fids[i]);
	tap_ok(ok, "connection objects close in order");
	fi_freeinfo(c->sinfo);
	fi_freeinfo(c->cinfo);
}

static int cm_ep_info(struct cm *c, struct fi_info *info, struct fid_ep **ep)
{
	int ret = fi_endpoint(c->dom, info, ep, NULL);

	ret = ret ? ret : fi_ep_bind(*ep, &c->ceq->fid, 0);
	ret = ret ? ret : fi_ep_bind(*ep, &c->cq->fid, FI_TRANSMIT | FI_RECV);
	ret = ret ? ret : fi_enable(*ep);
	return ret;
}

static int cm_ep(struct cm *c, struct fid_ep **ep)
{
	return cm_ep_info(c, c->cinfo, ep);
}

/*
 * The listener's EQ gets FI_CONNREQ with the client's private data; a
 * too-small buffer leaves it queued. Rejects it with "no-thanks".
 */
static bool cm_reject_next(struct cm *c, bool check)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 64];
	struct fi_eq_cm_entry *e = (void *)buf;
	const size_t hdr = sizeof(*e);
	uint32_t event = ~0u;
	ssize_t ret;
	bool ok;

	ret = fi_eq_sread(c->peq, &event, buf, hdr - 1, 2000, FI_PEEK);
	if (check)
		tap_ok(ret == -FI_ETOOSMALL,
		       "FI_CONNREQ into a short buffer -> -FI_ETOOSMALL (%zd)",
		       ret);
	ret = fi_eq_sread(c->peq, &event, buf, sizeof(buf), 2000, 0);
	ok = ret >= (ssize_t)(hdr + 5) && event == FI_CONNREQ &&
	     e->fid == &c->pep->fid && e->info && e->info->handle &&
	     !memcmp(e->data, "hello", 5);
	if (check)
		tap_ok(ok, "FI_CONNREQ with the private data (%zd)", ret);
	if (!ok)
		return false;
	ret = fi_reject(c->pep, e->info->handle, "no-thanks", 9);
	fi_freeinfo(e->info);
	return !ret;
}

/* Connects a fresh endpoint, has it rejected, reads the error entry. */
static ssize_t cm_refused(struct cm *c, struct fi_eq_err_entry *err,
			  struct fid_ep **ep, bool check)
{
	struct fi_eq_cm_entry e;
	uint32_t event;
	ssize_t ret;

	if (cm_ep(c, ep) || fi_connect(*ep, c->cinfo->dest_addr, "hello", 5))
		return -FI_EOTHER;
	if (!cm_reject_next(c, check))
		return -FI_EOTHER;
	ret = fi_eq_sread(c->ceq, &event, &e, sizeof(e), 2000, 0);
	if (check)
		tap_ok(ret == -FI_EAVAIL,
		       "the rejected side's EQ answers -FI_EAVAIL (%zd)", ret);
	return fi_eq_readerr(c->ceq, err, 0);
}

static void test_cm_errors(struct cm *c)
{
	struct fi_eq_err_entry err;
	struct fid_ep *ep = NULL;
	char mine[4];
	ssize_t ret;

	memset(&err, 0, sizeof(err));
	ret = cm_refused(c, &err, &ep, true);
	tap_ok(ret == sizeof(err) && err.err == FI_ECONNREFUSED &&
	       err.fid == &ep->fid,
	       "fi_eq_readerr: FI_ECONNREFUSED for the endpoint (%zd)", ret);
	tap_ok(err.err_data_size == 9 && err.err_data &&
	       !memcmp(err.err_data, "no-thanks", 9),
	       "err_data_size 0 in: err_data is the provider's copy of the "
	       "reject data");
	tap_ok(fi_close(&c->ceq->fid) == -FI_EBUSY &&
	       fi_close(&c->cq->fid) == -FI_EBUSY,
	       "EQ and CQ close with an endpoint bound -> -FI_EBUSY");
	tap_ok(fi_close(&c->peq->fid) == -FI_EBUSY,
	       "EQ close with a passive endpoint bound -> -FI_EBUSY");
	if (ep)
		fi_close(&ep->fid);
	ep = NULL;
	memset(&err, 0, sizeof(err));
	err.err_data = mine;
	err.err_data_size = sizeof(mine);
	ret = cm_refused(c, &err, &ep, false);
	tap_ok(ret == sizeof(err) && err.err_data == mine &&
	       err.err_data_size == sizeof(mine) &&
	       !memcmp(mine, "no-t", sizeof(mine)),
	       "err_data_size 4 in: 4 octets copied into the caller's buffer");
	if (ep)
		fi_close(&ep->fid);
}

/* fi_cancel of a posted receive: an error completion through the CQ. */
static void test_cq_cancel(struct cm *c)
{
	struct fi_cq_err_entry err;
	struct fi_cq_entry e;
	struct fid_ep *ep = NULL;
	char ctx[64], buf[16];
	ssize_t ret;

	if (cm_ep(c, &ep)) {
		tap_ok(0, "endpoint for fi_cancel");
		return;
	}
	ret = fi_recv(ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, ctx);
	ret = ret ? ret : fi_cancel(&ep->fid, ctx);
	tap_ok(!ret, "fi_recv, then fi_cancel of it (%zd)", ret);
	ret = fi_cq_sread(c->cq, &e, 1, NULL, 2000);
	tap_ok(ret == -FI_EAVAIL, "CQ with an error entry -> -FI_EAVAIL (%zd)",
	       ret);
	memset(&err, 0, sizeof(err));
	ret = fi_cq_readerr(c->cq, &err, 0);
	tap_ok(ret == 1 && err.err == FI_ECANCELED && err.op_context == ctx &&
	       (err.flags & FI_RECV),
	       "fi_cq_readerr: FI_ECANCELED with the receive's context");
	tap_ok(fi_cq_read(c->cq, &e, 1) == -FI_EAGAIN &&
	       fi_cq_readerr(c->cq, &err, 0) == -FI_EAGAIN,
	       "then the CQ is empty");
	fi_close(&ep->fid);
}

/*
 * fi_accept sends the MPA Reply before it returns: a server that goes on
 * preparing (or accepting) without a progress call must not hold it. A
 * raw initiator's Request, the Reply looked for with no wait at all.
 */
static void test_cm_accept_sends(struct cm *c)
{
	static const uint8_t req[24] = {
		'M', 'P', 'A', ' ', 'I', 'D', ' ', 'R', 'e', 'q', ' ',
		'F', 'r', 'a', 'm', 'e', 0x10, 2, 0, 4, 0xc0, 0x10, 0xc0, 0x10,
	};
	struct sockaddr_in sin;
	size_t len = sizeof(sin);
	struct fi_eq_cm_entry e;
	struct fid_ep *ep = NULL;
	uint8_t rep[64];
	uint32_t event = 0;
	ssize_t ret, n = -1;
	bool got = false;
	int fd = -1;

	ret = fi_getname(&c->pep->fid, &sin, &len);
	if (!ret) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sin,
				      sizeof(sin)) ||
		    write(fd, req, sizeof(req)) != (ssize_t)sizeof(req))
			ret = -1;
	}
	if (!ret)
		ret = fi_eq_sread(c->peq, &event, &e, sizeof(e), 2000, 0);
	got = ret == (ssize_t)sizeof(e) && event == FI_CONNREQ;
	if (!tap_ok(got, "raw Request: FI_CONNREQ (%zd)", ret))
		goto out;
	ret = cm_ep_info(c, e.info, &ep);
	ret = ret ? ret : fi_accept(ep, NULL, 0);
	if (!ret)
		n = recv(fd, rep, sizeof(rep), MSG_DONTWAIT);
	tap_ok(!ret && n >= 20 && !memcmp(rep, "MPA ID Rep Frame", 16),
	       "fi_accept returns with the Reply already sent (%zd, %zd "
	       "octets there at once)", ret, n);
out:
	if (got)
		fi_freeinfo(e.info);
	if (fd >= 0)
		close(fd);
	if (ep)
		fi_close(&ep->fid);
}

static void test_cm(void)
{
	struct cm c = { 0 };
	int ret;

	ret = cm_getinfo("0", FI_SOURCE, &c.sinfo);
	fi_freeinfo(c.sinfo);
	c.sinfo = NULL;
	if (ret == -FI_ENODATA) {
		tap_diag("no FI_EP_MSG: error entries not exercised");
		return;
	}
	ret = cm_setup(&c);
	if (tap_ok(!ret, "listener and client objects (%d)", ret)) {
		test_cm_errors(&c);
		test_cq_cancel(&c);
		test_cm_accept_sends(&c);
	}
	cm_teardown(&c);
}

/* ---- close order */

static void test_close_order(void)
{
	struct fid_cntr *c = NULL;
	struct fid_cq *cq = NULL;
	struct fid_eq *eq = NULL;

	if (eq_open(FI_WAIT_UNSPEC, 0, &eq) ||
	    cq_open(FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, &cq) ||
	    cntr_open(FI_WAIT_UNSPEC, &c)) {
		tap_ok(0, "opening an EQ, a CQ and a counter");
		goto out;
	}
	tap_ok(fi_close(&domain->fid) == -FI_EBUSY,
	       "domain close with a CQ and a counter open -> -FI_EBUSY");
	fi_close(&cq->fid);
	cq = NULL;
	tap_ok(fi_close(&domain->fid) == -FI_EBUSY,
	       "domain close with a counter open -> -FI_EBUSY");
	fi_close(&c->fid);
	c = NULL;
	tap_ok(fi_close(&fabric->fid) == -FI_EBUSY,
	       "fabric close with a domain and an EQ open -> -FI_EBUSY");
	tap_ok(!fi_close(&domain->fid), "domain close");
	domain = NULL;
	tap_ok(fi_close(&fabric->fid) == -FI_EBUSY,
	       "fabric close with an EQ open -> -FI_EBUSY");
out:
	if (c)
		fi_close(&c->fid);
	if (cq)
		fi_close(&cq->fid);
	if (eq)
		tap_ok(!fi_close(&eq->fid), "EQ close");
}

int main(void)
{
	/* parameters are read when libfabric loads the provider */
	setenv("FI_IWARP_IFACE", "lo", 1);
	if (setup())
		return tap_done();
	test_eq_read_peek();
	test_eq_cm_data();
	test_eq_sread();
	test_eq_fd();
	test_eq_fd_late();
	test_eq_wait_objs();
	test_cq_open();
	test_cq_sread();
	test_cq_fd();
	test_cq_strerror();
	test_cntr();
	test_cm();
	test_close_order();
	tap_ok(!fi_close(&fabric->fid), "fabric close once everything is");
	fi_freeinfo(info);
	return tap_done();
}
