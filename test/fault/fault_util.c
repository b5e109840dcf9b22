/* SPDX-License-Identifier: BSD-2-Clause */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fault_util.h"

static const char *log_name = "fault";

uint64_t fault_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The run-queue delay so far in ns, or -1. */
static long long run_delay(int fd)
{
	unsigned long long run, delay;
	char buf[128];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = 0;
	return sscanf(buf, "%llu %llu", &run, &delay) == 2 ?
		(long long)delay : -1;
}

uint64_t fault_own_ns(uint64_t *wall, bool *exact)
{
	static int fd = -2;
	long long d0 = -1, d1 = -1;
	struct timespec ts;
	uint64_t now = 0;
	int i;

	if (fd == -2)
		fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	/* the clock between two equal delays: a preemption in between
	 * would count a wait that came after the clock was read */
	for (i = 0; i < 8; i++) {
		d0 = fd >= 0 ? run_delay(fd) : -1;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
		d1 = d0 >= 0 ? run_delay(fd) : -1;
		if (d0 < 0 || d0 == d1)
			break;
	}
	/* after 8 tries (never seen) the delay read before the clock: off
	 * by at most the one wait that fell between the readings */
	if (wall)
		*wall = now;
	if (exact)
		*exact = d0 >= 0;
	return d0 >= 0 ? now - (uint64_t)d0 : now;
}

void fault_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts))
		;
}

void fault_set_name(const char *name)
{
	log_name = name;
}

void fault_log(const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s[%d] %llu: %s\n", log_name, (int)getpid(),
		(unsigned long long)fault_now_ms(), text);
}

void fault_fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why[0])
		return;		/* the first failure is the reason */
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	fault_log("FAIL: %s", why);
}

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t pat_key(uint64_t seed, uint64_t stream, uint64_t seq)
{
	return mix(seed ^ mix(stream ^ mix(seq)));
}

/* Word w of a message is mix(key + w), stored little-endian. */
static void pat_words(uint8_t *buf, size_t len, uint64_t key, size_t from)
{
	size_t w = from / 8, j = 0;

	while (j < len) {
		uint64_t v = mix(key + w++);
		size_t k;

		for (k = 0; k < 8 && j < len; k++, j++)
			buf[j] = (uint8_t)(v >> (8 * k));
	}
}

void pat_fill(uint8_t *buf, size_t len, uint64_t seed, uint64_t stream,
	      uint64_t seq)
{
	pat_words(buf, len, pat_key(seed, stream, seq), 0);
}

size_t pat_check(const uint8_t *buf, size_t len, uint64_t seed,
		 uint64_t stream, uint64_t seq)
{
	uint64_t key = pat_key(seed, stream, seq);
	uint8_t ref[4096];
	size_t off, n, j;

	for (off = 0; off < len; off += n) {
		n = len - off < sizeof(ref) ? len - off : sizeof(ref);
		pat_words(ref, n, key, off);	/* off is a multiple of 8 */
		if (memcmp(ref, buf + off, n))
			for (j = 0; j < n; j++)
				if (ref[j] != buf[off + j])
					return off + j;
	}
	return SIZE_MAX;
}

size_t pat_size(size_t max, uint64_t seed, uint64_t stream, uint64_t seq)
{
	uint64_t r = mix(pat_key(seed, stream, seq) ^ 0x512e);

	switch (r % 8) {
	case 0:
		return 1;
	case 1:
		return max;
	case 2:
		return 1 + (r >> 8) % 64;
	default:
		return 1 + (r >> 8) % max;
	}
}

/* The status file stays open (pread from 0 each time), so the figure is
 * still there when descriptors have run out on purpose. */
long fault_rss_kb(void)
{
	static int fd = -1;
	char buf[4096], *p;
	ssize_t n;
	long kb = 0;

	if (fd < 0)
		fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strstr(buf, "VmRSS:");
	if (p)
		sscanf(p, "VmRSS: %ld", &kb);
	return kb;
}

int fault_fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3;	/* ".", ".." and the directory's own descriptor */
}

long fault_nofile(long want)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r))
		return -1;
	if (want < 0 || (rlim_t)want > r.rlim_max)
		r.rlim_cur = r.rlim_max;
	else
		r.rlim_cur = (rlim_t)want;
	setrlimit(RLIMIT_NOFILE, &r);
	getrlimit(RLIMIT_NOFILE, &r);
	return (long)r.rlim_cur;
}

int fault_parse_addr(const char *s, struct sockaddr_in *out)
{
	char host[64];
	const char *colon = strrchr(s, ':');

	if (!colon || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = htons((uint16_t)atoi(colon + 1));
	return inet_pton(AF_INET, host, &out->sin_addr) == 1 ? 0 : -1;
}

struct fi_info *fault_hints(enum fi_ep_type type)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->fabric_attr->prov_name = strdup("iwarp");
	h->ep_attr->type = type;
	h->addr_format = FI_SOCKADDR_IN;
	if (type == FI_EP_MSG) {
		h->caps = FI_MSG;
		h->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY |
					  FI_MR_VIRT_ADDR;
	} else {
		h->caps = FI_TAGGED | FI_MSG | FI_SOURCE;
	}
	return h;
}

int fault_fab_open(struct fault_fab *f, struct fi_info *hints,
		   const char *node, const char *service, uint64_t flags)
{
	int ret;

	memset(f, 0, sizeof(*f));
	ret = fi_getinfo(FAULT_API, node, service, flags, hints, &f->info);
	fi_freeinfo(hints);
	if (ret) {
		fault_log("fi_getinfo: %s", fi_strerror(-ret));
		return ret;
	}
	ret = fi_fabric(f->info->fabric_attr, &f->fabric, NULL);
	if (!ret)
		ret = fi_domain(f->fabric, f->info, &f->domain, NULL);
	if (ret)
		fault_log("fi_fabric/fi_domain: %s", fi_strerror(-ret));
	return ret;
}

void fault_fab_close(struct fault_fab *f)
{
	int ret;

	if (f->domain && (ret = fi_close(&f->domain->fid)))
		fault_log("fi_close(domain): %d", ret);
	if (f->fabric && (ret = fi_close(&f->fabric->fid)))
		fault_log("fi_close(fabric): %d", ret);
	fi_freeinfo(f->info);
	memset(f, 0, sizeof(*f));
}

int track_init(struct op_track *t, size_t n)
{
	memset(t, 0, sizeof(*t));
	t->state = calloc(n, 1);
	t->n = n;
	return t->state ? 0 : -1;
}

void track_free(struct op_track *t)
{
	free(t->state);
	t->state = NULL;
}

void track_post(struct op_track *t, size_t i)
{
	if (t->state[i])
		t->doubles++;	/* reposted before it completed */
	t->state[i] = 1;
	t->posted++;
}

bool track_done(struct op_track *t, size_t i, bool error)
{
	if (i >= t->n) {
		t->strays++;
		return false;
	}
	if (!t->state[i]) {
		t->doubles++;
		return false;
	}
	t->state[i] = 0;
	t->done++;
	t->errors += error;
	return true;
}

uint64_t track_outstanding(const struct op_track *t)
{
	return t->posted - t->done;
}
