/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address vectors of the provider through the public libfabric API:
 * opening (types, refused attributes), synchronous bulk inserts into
 * FI_AV_MAP and FI_AV_TABLE, lookups and their truncation, fi_av_straddr,
 * removal and re-insertion, invalid names, insertsvc and insertsym,
 * concurrent inserts, and closing. The reverse lookup is internal and is
 * covered with the RDM endpoint.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so.
 * IPv6 checks run when lo has ::1.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include "tap.h"
#include "fi_api.h"

#define API TEST_API
/* fi_av(3) 2.x deprecates FI_AV_MAP */
#if TEST_API_V2
#define AV_DEFAULT	FI_AV_TABLE
#define AV_DEFAULT_NAME	"FI_AV_TABLE"
#else
#define AV_DEFAULT	FI_AV_MAP
#define AV_DEFAULT_NAME	"FI_AV_MAP"
#endif
#define NADDR 1000
#define NTHREADS 4

union sa {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
};

/* One fabric and domain of lo: the IPv4 or the IPv6 one. */
struct dom {
	const char *tag;
	int family;
	size_t len;			/* sockaddr size: the insert stride */
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
};

static int dom_open(struct dom *d, uint32_t format)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->fabric_attr->prov_name = strdup("iwarp");
	hints->addr_format = format;
	ret = fi_getinfo(API, NULL, NULL, 0, hints, &d->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ret = fi_fabric(d->info->fabric_attr, &d->fabric, NULL);
	if (ret)
		return ret;
	return fi_domain(d->fabric, d->info, &d->domain, NULL);
}

static void dom_close(struct dom *d)
{
	int ret;

	if (d->domain) {
		ret = fi_close(&d->domain->fid);
		tap_ok(!ret, "%s: domain closes after its AVs (%d)", d->tag,
		       ret);
	}
	if (d->fabric)
		fi_close(&d->fabric->fid);
	if (d->info)
		fi_freeinfo(d->info);
}

/* Name number i: 10.x.y.z (IPv4) or 2001:db8::i (IPv6), a port from i. */
static void name_of(int family, unsigned int i, union sa *a)
{
	memset(a, 0, sizeof(*a));
	if (family == AF_INET) {
		a->sin.sin_family = AF_INET;
		a->sin.sin_addr.s_addr = htonl(0x0a000000u + i + 1);
		a->sin.sin_port = htons(1024 + i % 50000);
		return;
	}
	a->sin6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "2001:db8::", &a->sin6.sin6_addr);
	a->sin6.sin6_addr.s6_addr[12] = (uint8_t)(i >> 24);
	a->sin6.sin6_addr.s6_addr[13] = (uint8_t)(i >> 16);
	a->sin6.sin6_addr.s6_addr[14] = (uint8_t)(i >> 8);
	a->sin6.sin6_addr.s6_addr[15] = (uint8_t)(i + 1);
	a->sin6.sin6_port = htons(1024 + i % 50000);
}

/* count names packed at the domain's stride */
static char *names(const struct dom *d, unsigned int first, size_t count)
{
	char *buf = calloc(count ? count : 1, d->len);
	union sa a;
	size_t i;

	for (i = 0; buf && i < count; i++) {
		name_of(d->family, first + (unsigned int)i, &a);
		memcpy(buf + i * d->len, &a, d->len);
	}
	return buf;
}

static int av_open(const struct dom *d, enum fi_av_type type, size_t count,
		   struct fid_av **av)
{
	struct fi_av_attr attr = { .type = type, .count = count };

	return fi_av_open(d->domain, &attr, av, NULL);
}

static int av_close(struct fid_av *av)
{
	return av ? fi_close(&av->fid) : 0;
}

/* The name stored at fa equals a (and has its size). */
static bool lookup_is(struct fid_av *av, fi_addr_t fa, const union sa *a,
		      size_t len)
{
	union sa got;
	size_t n = sizeof(got);

	memset(&got, 0, sizeof(got));
	return !fi_av_lookup(av, fa, &got, &n) && n == len &&
	       !memcmp(&got, a, len);
}

static bool lookup_fails(struct fid_av *av, fi_addr_t fa)
{
	union sa got;
	size_t n = sizeof(got);

	return fi_av_lookup(av, fa, &got, &n) == -FI_EINVAL;
}

/* ---- opening */

static void test_open(const struct dom *d)
{
	struct fi_av_attr attr = { .type = FI_AV_UNSPEC };
	struct fid_av *av = NULL;
	char name[64];
	int ret;

	ret = fi_av_open(d->domain, &attr, &av, NULL);
	tap_ok(!ret && attr.type == AV_DEFAULT,
	       "FI_AV_UNSPEC opens as %s (%d, type %d)", AV_DEFAULT_NAME, ret,
	       attr.type);
	tap_ok(!av_close(av), "AV closes without endpoints");

	attr = (struct fi_av_attr){ .type = FI_AV_TABLE,
				    .flags = FI_EVENT };
	ret = fi_av_open(d->domain, &attr, &av, NULL);
	tap_ok(ret == -FI_ENOSYS, "FI_EVENT (async inserts): -FI_ENOSYS (%d)",
	       ret);
	snprintf(name, sizeof(name), "test_av.%d", (int)getpid());
	attr = (struct fi_av_attr){ .type = FI_AV_MAP, .flags = FI_READ,
				    .name = name };
	ret = fi_av_open(d->domain, &attr, &av, NULL);
	tap_ok(ret == -FI_ENOENT, "FI_READ of an AV never made: -FI_ENOENT "
	       "(%d)", ret);
	if (!ret)
		fi_close(&av->fid);
	attr = (struct fi_av_attr){ .type = FI_AV_MAP, .name = name };
	ret = fi_av_open(d->domain, &attr, &av, NULL);
	tap_ok(!ret && attr.map_addr && !fi_close(&av->fid),
	       "named (shared) AV: opens with a map_addr, closes (%d)", ret);
	/* scalable endpoints name up to 32 rx contexts: 5 bits */
	attr = (struct fi_av_attr){ .type = FI_AV_MAP, .rx_ctx_bits = 5 };
	ret = fi_av_open(d->domain, &attr, &av, NULL);
	if (!ret)
		ret = fi_close(&av->fid);
	attr = (struct fi_av_attr){ .type = FI_AV_MAP, .rx_ctx_bits = 6 };
	tap_ok(!ret && fi_av_open(d->domain, &attr, &av, NULL) == -FI_EINVAL,
	       "rx_ctx_bits: 5 opens, 6 is -FI_EINVAL (%d)", ret);
	attr = (struct fi_av_attr){ .type = (enum fi_av_type)7 };
	ret = fi_av_open(d->domain, &attr, &av, NULL);
	tap_ok(ret == -FI_EINVAL, "unknown type: -FI_EINVAL (%d)", ret);
	attr = (struct fi_av_attr){ .type = FI_AV_MAP, .flags = FI_SYNC_ERR };
	ret = fi_av_open(d->domain, &attr, &av, NULL);
	tap_ok(ret == -FI_EBADFLAGS, "unknown open flag: -FI_EBADFLAGS (%d)",
	       ret);
	ret = fi_av_open(d->domain, NULL, &av, NULL);
	tap_ok(ret == -FI_EINVAL, "no attributes: -FI_EINVAL (%d)", ret);

	av = NULL;
	attr = (struct fi_av_attr){ .type = FI_AV_TABLE,
				    .flags = FI_SYMMETRIC,
				    .map_addr = (void *)0x1000 };
	ret = fi_av_open(d->domain, &attr, &av, NULL);
	tap_ok(!ret && attr.type == FI_AV_TABLE,
	       "FI_SYMMETRIC hint and map_addr without name accepted (%d)",
	       ret);
	tap_ok(!av_close(av), "and it closes");
}

/* ---- bulk inserts and lookups */

static void test_bulk(const struct dom *d, enum fi_av_type type)
{
	const char *t = type == FI_AV_TABLE ? "TABLE" : "MAP";
	fi_addr_t fa[NADDR + 10];
	char *buf = names(d, 0, NADDR + 10);
	struct fid_av *av = NULL;
	bool ok = true;
	union sa a;
	size_t i, j;
	int ret;

	ret = buf ? av_open(d, type, 1, &av) : -FI_ENOMEM;
	if (!tap_ok(!ret, "%s %s: open with count 1 (%d)", d->tag, t, ret)) {
		free(buf);
		return;
	}
	for (i = 0; i < NADDR + 10; i++)
		fa[i] = FI_ADDR_UNSPEC;
	ret = fi_av_insert(av, buf, NADDR, fa, 0, NULL);
	tap_ok(ret == NADDR, "%s %s: one insert of %d names returns %d",
	       d->tag, t, NADDR, ret);
	ret = fi_av_insert(av, buf + NADDR * d->len, 10, fa + NADDR, FI_MORE,
			   NULL);
	tap_ok(ret == 10, "%s %s: a second insert (FI_MORE) returns %d",
	       d->tag, t, ret);
	for (i = 0; i < NADDR + 10; i++) {
		if (type == FI_AV_TABLE)
			ok = ok && fa[i] == i;
		ok = ok && fa[i] != FI_ADDR_NOTAVAIL &&
		     fa[i] != FI_ADDR_UNSPEC;
		for (j = 0; ok && type == FI_AV_MAP && j < i; j++)
			ok = fa[j] != fa[i];
	}
	tap_ok(ok, type == FI_AV_TABLE ?
	       "%s %s: fi_addrs are 0..%d in order across calls" :
	       "%s %s: %d distinct fi_addrs", d->tag, t, NADDR + 10);
	for (i = 0, ok = true; i < NADDR + 10 && ok; i++) {
		name_of(d->family, (unsigned int)i, &a);
		ok = lookup_is(av, fa[i], &a, d->len);
	}
	tap_ok(ok, "%s %s: every lookup returns the name inserted (%zu)",
	       d->tag, t, i);
	ret = fi_av_insert(av, buf, 0, NULL, 0, NULL);
	tap_ok(ret == 0, "%s %s: insert of nothing returns 0 (%d)", d->tag, t,
	       ret);
	ret = av_close(av);
	tap_ok(!ret, "%s %s: close with %d entries (%d)", d->tag, t,
	       NADDR + 10, ret);
	free(buf);
}

static void test_lookup_small(const struct dom *d)
{
	struct fid_av *av = NULL;
	uint8_t out[sizeof(union sa)];
	fi_addr_t fa = FI_ADDR_NOTAVAIL;
	size_t n, i;
	bool same;
	union sa a;
	int ret;

	name_of(d->family, 77, &a);
	ret = av_open(d, FI_AV_TABLE, 0, &av);
	ret = ret ? ret : fi_av_insert(av, &a, 1, &fa, 0, NULL);
	if (!tap_ok(ret == 1, "%s: one name inserted (%d)", d->tag, ret))
		goto out;
	memset(out, 0xa5, sizeof(out));
	n = 4;
	ret = fi_av_lookup(av, fa, out, &n);
	same = !memcmp(out, &a, 4);
	for (i = 4; i < sizeof(out); i++)
		same = same && out[i] == 0xa5;
	tap_ok(!ret && n == d->len && same,
	       "%s: lookup into 4 octets returns 0, copies 4, says %zu (%d, "
	       "%zu)", d->tag, d->len, ret, n);
	n = 0;
	ret = fi_av_lookup(av, fa, NULL, &n);
	tap_ok(!ret && n == d->len, "%s: size query with no buffer (%d, %zu)",
	       d->tag, ret, n);
	tap_ok(lookup_fails(av, fa + 1), "%s: fi_addr never handed out: "
	       "-FI_EINVAL", d->tag);
	tap_ok(lookup_fails(av, FI_ADDR_NOTAVAIL),
	       "%s: FI_ADDR_NOTAVAIL: -FI_EINVAL", d->tag);
	ret = fi_av_lookup(av, fa, out, NULL);
	tap_ok(ret == -FI_EINVAL, "%s: no addrlen: -FI_EINVAL (%d)", d->tag,
	       ret);
out:
	tap_ok(!av_close(av), "%s: AV closes", d->tag);
}

/* ---- fi_av_straddr */

static bool straddr_is(struct fid_av *av, const union sa *a, const char *want)
{
	char buf[128];
	size_t len = sizeof(buf);
	const char *s = fi_av_straddr(av, a, buf, &len);

	if (!s || strcmp(s, want) || len != strlen(want) + 1) {
		tap_diag("straddr: %s (len %zu), want %s", s ? s : "(null)",
			 len, want);
		return false;
	}
	return true;
}

static void test_straddr(const struct dom *d)
{
	const char *want = "fi_sockaddr_in://1.2.3.4:5678";
	struct fid_av *av = NULL;
	union sa a = { 0 };
	char buf[8];
	size_t len;
	const char *s;
	int ret;

	ret = av_open(d, FI_AV_MAP, 0, &av);
	if (!tap_ok(!ret, "straddr: AV open (%d)", ret))
		return;
	a.sin.sin_family = AF_INET;
	a.sin.sin_port = htons(5678);
	inet_pton(AF_INET, "1.2.3.4", &a.sin.sin_addr);
	tap_ok(straddr_is(av, &a, want), "straddr %s", want);
	memset(buf, 'x', sizeof(buf));
	len = sizeof(buf);
	s = fi_av_straddr(av, &a, buf, &len);
	tap_ok(s == buf && !strcmp(buf, "fi_sock") && len == strlen(want) + 1,
	       "straddr truncates to 8 (\"%.8s\") and wants %zu", buf, len);
	len = 0;
	fi_av_straddr(av, &a, NULL, &len);
	tap_ok(len == strlen(want) + 1, "straddr size query: %zu", len);

	memset(&a, 0, sizeof(a));
	a.sin6.sin6_family = AF_INET6;
	a.sin6.sin6_port = htons(5678);
	a.sin6.sin6_addr = in6addr_loopback;
	tap_ok(straddr_is(av, &a, "fi_sockaddr_in6://[::1]:5678"),
	       "straddr fi_sockaddr_in6://[::1]:5678");
	inet_pton(AF_INET6, "2001:db8::1:2", &a.sin6.sin6_addr);
	a.sin6.sin6_port = htons(65535);
	tap_ok(straddr_is(av, &a, "fi_sockaddr_in6://[2001:db8::1:2]:65535"),
	       "straddr fi_sockaddr_in6://[2001:db8::1:2]:65535");
	memset(&a, 0, sizeof(a));
	a.sa.sa_family = AF_UNIX;
	len = sizeof(buf);
	tap_ok(!fi_av_straddr(av, &a, buf, &len), "straddr of AF_UNIX: NULL");
	tap_ok(!av_close(av), "straddr: AV closes");
}

/* ---- removal */

static void test_remove(const struct dom *d, enum fi_av_type type)
{
	const char *t = type == FI_AV_TABLE ? "TABLE" : "MAP";
	char *buf = names(d, 0, 100);
	char tt[32];
	fi_addr_t fa[100], rm[2], again;
	struct fid_av *av = NULL;
	union sa a10, a20, a30, fresh;
	bool ok = true;
	int ret, i;

	snprintf(tt, sizeof(tt), "%s %s", d->tag, t);
	t = tt;
	ret = buf ? av_open(d, type, 0, &av) : -FI_ENOMEM;
	ret = ret ? ret : fi_av_insert(av, buf, 100, fa, 0, NULL);
	if (!tap_ok(ret == 100, "%s remove: 100 names (%d)", t, ret))
		goto out;
	name_of(d->family, 10, &a10);
	name_of(d->family, 20, &a20);
	name_of(d->family, 30, &a30);
	rm[0] = fa[10];
	rm[1] = fa[20];
	ret = fi_av_remove(av, rm, 2, 0);
	tap_ok(!ret, "%s remove: two removed (%d)", t, ret);
	tap_ok(lookup_fails(av, fa[10]) && lookup_fails(av, fa[20]),
	       "%s remove: lookups of removed fi_addrs fail", t);
	for (i = 0; i < 100; i++)
		if (i != 10 && i != 20) {
			name_of(d->family, (unsigned int)i, &fresh);
			ok = ok && lookup_is(av, fa[i], &fresh, d->len);
		}
	tap_ok(ok, "%s remove: the other 98 are intact", t);
	ret = fi_av_remove(av, rm, 1, 0);
	tap_ok(ret == -FI_EINVAL, "%s remove: removing twice: -FI_EINVAL (%d)",
	       t, ret);
	rm[0] = fa[30];
	rm[1] = fa[10];
	ret = fi_av_remove(av, rm, 2, 0);
	tap_ok(ret == -FI_EINVAL && lookup_is(av, fa[30], &a30, d->len),
	       "%s remove: a list with a dead fi_addr removes nothing (%d)",
	       t, ret);
	ret = fi_av_remove(av, rm, 1, FI_MORE);
	tap_ok(ret == -FI_EBADFLAGS && lookup_is(av, fa[30], &a30, d->len),
	       "%s remove: flags: -FI_EBADFLAGS (%d)", t, ret);

	again = FI_ADDR_NOTAVAIL;
	ret = fi_av_insert(av, &a10, 1, &again, 0, NULL);
	tap_ok(ret == 1 && lookup_is(av, again, &a10, d->len),
	       "%s remove: re-insert after remove (%d)", t, ret);
	if (type == FI_AV_TABLE)
		tap_ok(again == 10, "%s: re-insert takes the lowest free "
		       "index (%llu)", t, (unsigned long long)again);
	name_of(d->family, 500, &fresh);
	ret = fi_av_insert(av, &fresh, 1, &again, 0, NULL);
	tap_ok(ret == 1 && lookup_is(av, again, &fresh, d->len) &&
	       (type != FI_AV_TABLE || again == 20),
	       "%s remove: next insert reuses the other hole (%d, %llu)", t,
	       ret, (unsigned long long)again);
	name_of(d->family, 501, &fresh);
	ret = fi_av_insert(av, &fresh, 1, &again, 0, NULL);
	tap_ok(ret == 1 && lookup_is(av, again, &fresh, d->len) &&
	       (type != FI_AV_TABLE || again == 100),
	       "%s remove: then the table grows at its end (%d, %llu)", t,
	       ret, (unsigned long long)again);
	tap_ok(!lookup_is(av, fa[20], &a20, d->len),
	       "%s remove: the removed name is gone from its fi_addr", t);
out:
	tap_ok(!av_close(av), "%s remove: AV closes", t);
	free(buf);
}

/* ---- invalid names */

static void test_invalid4(const struct dom *d)
{
	fi_addr_t fa[6];
	int err[6];
	char buf[6 * sizeof(struct sockaddr_in)];
	struct fid_av *av = NULL;
	union sa a[6];
	bool ok;
	int ret, i;

	for (i = 0; i < 6; i++)
		name_of(AF_INET, (unsigned int)i, &a[i]);
	a[1].sa.sa_family = AF_INET6;	/* an IPv6 name needs 28 octets */
	a[2].sa.sa_family = AF_UNIX;
	a[3].sin.sin_port = 0;
	a[4].sin.sin_addr.s_addr = htonl(INADDR_ANY);
	for (i = 0; i < 6; i++)
		memcpy(buf + i * sizeof(a[i].sin), &a[i], sizeof(a[i].sin));
	ret = av_open(d, FI_AV_TABLE, 0, &av);
	if (!tap_ok(!ret, "invalid: AV open (%d)", ret))
		return;
	memset(err, 0x55, sizeof(err));
	ret = fi_av_insert(av, buf, 6, fa, FI_SYNC_ERR, err);
	tap_ok(ret == 2, "invalid: 2 of 6 inserted (%d)", ret);
	ok = fa[0] == 0 && fa[5] == 1;
	for (i = 1; i < 5; i++)
		ok = ok && fa[i] == FI_ADDR_NOTAVAIL;
	tap_ok(ok, "invalid: rejected names get FI_ADDR_NOTAVAIL, the good "
	       "ones 0 and 1");
	tap_ok(!err[0] && !err[5] && err[1] == FI_EINVAL &&
	       err[2] == FI_EINVAL && err[3] == FI_EADDRNOTAVAIL &&
	       err[4] == FI_EADDRNOTAVAIL,
	       "invalid: FI_SYNC_ERR: 0 0 / EINVAL (family) x2, "
	       "EADDRNOTAVAIL (port 0, any) x2: %d %d / %d %d %d %d", err[0],
	       err[5], err[1], err[2], err[3], err[4]);
	tap_ok(lookup_is(av, 0, &a[0], sizeof(a[0].sin)) &&
	       lookup_is(av, 1, &a[5], sizeof(a[5].sin)) && lookup_fails(av, 2),
	       "invalid: nothing else was stored");
	ret = fi_av_insert(av, buf, 6, NULL, 0, NULL);
	tap_ok(ret == 2, "invalid: without fi_addr array still 2 (%d)", ret);
	ret = fi_av_insert(av, buf, 1, fa, FI_AV_USER_ID, NULL);
	tap_ok(ret == -FI_EBADFLAGS, "invalid: FI_AV_USER_ID: -FI_EBADFLAGS "
	       "(%d)", ret);
	ret = fi_av_insert(av, buf, 1, fa, FI_SYNC_ERR, NULL);
	tap_ok(ret == -FI_EINVAL, "invalid: FI_SYNC_ERR without array: "
	       "-FI_EINVAL (%d)", ret);
	ret = fi_av_insert(av, NULL, 1, fa, 0, NULL);
	tap_ok(ret == -FI_EINVAL, "invalid: no names: -FI_EINVAL (%d)", ret);
	tap_ok(!av_close(av), "invalid: AV closes");
}

/* An IPv6 domain reads 28-octet names: a sockaddr_in is too short. */
static void test_invalid6(const struct dom *d)
{
	char buf[2 * sizeof(struct sockaddr_in6)];
	struct fid_av *av = NULL;
	fi_addr_t fa[2];
	union sa a4, a6;
	int err[2];
	int ret;

	name_of(AF_INET, 1, &a4);
	name_of(AF_INET6, 1, &a6);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &a4, sizeof(a4.sin));
	memcpy(buf + sizeof(a6.sin6), &a6, sizeof(a6.sin6));
	ret = av_open(d, FI_AV_MAP, 0, &av);
	ret = ret ? ret : fi_av_insert(av, buf, 2, fa, FI_SYNC_ERR, err);
	tap_ok(ret == 1 && fa[0] == FI_ADDR_NOTAVAIL && err[0] == FI_EINVAL &&
	       fa[1] != FI_ADDR_NOTAVAIL && !err[1] &&
	       lookup_is(av, fa[1], &a6, sizeof(a6.sin6)),
	       "IPv6: a 16-octet sockaddr_in is refused, the sockaddr_in6 "
	       "after it inserted (%d)", ret);
	tap_ok(!av_close(av), "IPv6 invalid: AV closes");
}

/* ---- insertsvc / insertsym */

static bool lookup_str(struct fid_av *av, fi_addr_t fa, const char *want)
{
	char s[128];
	union sa got;
	size_t n = sizeof(got), len = sizeof(s);

	if (fi_av_lookup(av, fa, &got, &n))
		return false;
	if (!fi_av_straddr(av, &got, s, &len) || strcmp(s, want)) {
		tap_diag("fi_addr %llu is %s, want %s", (unsigned long long)fa,
			 s, want);
		return false;
	}
	return true;
}

static void test_svc4(const struct dom *d)
{
	struct fid_av *av = NULL;
	fi_addr_t fa[4];
	int err[4], ret;

	ret = av_open(d, FI_AV_TABLE, 0, &av);
	if (!tap_ok(!ret, "insertsvc: AV open (%d)", ret))
		return;
	ret = fi_av_insertsvc(av, "127.0.0.1", "5678", fa, 0, NULL);
	tap_ok(ret == 1 && fa[0] == 0 &&
	       lookup_str(av, fa[0], "fi_sockaddr_in://127.0.0.1:5678"),
	       "insertsvc 127.0.0.1 5678 (%d)", ret);
	ret = fi_av_insertsvc(av, "::1", "5678", fa, FI_SYNC_ERR, err);
	tap_ok(ret == 0 && fa[0] == FI_ADDR_NOTAVAIL && err[0] == FI_EINVAL,
	       "insertsvc ::1 into an IPv4 AV: not inserted (%d)", ret);
	ret = fi_av_insertsvc(av, "127.0.0.1", "http", fa, 0, NULL);
	tap_ok(ret == 0 && fa[0] == FI_ADDR_NOTAVAIL,
	       "insertsvc service name: not inserted (%d)", ret);
	ret = fi_av_insertsvc(av, "127.0.0.1", "70000", fa, 0, NULL);
	tap_ok(ret == 0 && fa[0] == FI_ADDR_NOTAVAIL,
	       "insertsvc port 70000: not inserted (%d)", ret);
	ret = fi_av_insertsvc(av, "127.0.0.1", "0", fa, 0, NULL);
	tap_ok(ret == 0 && fa[0] == FI_ADDR_NOTAVAIL,
	       "insertsvc port 0: not inserted (%d)", ret);
	ret = fi_av_insertsvc(av, NULL, "5678", fa, 0, NULL);
	tap_ok(ret == 0 && fa[0] == FI_ADDR_NOTAVAIL,
	       "insertsvc without node: not inserted (%d)", ret);

	ret = fi_av_insertsym(av, "10.1.1.1", 2, "5000", 2, fa, 0, NULL);
	tap_ok(ret == 4 && fa[0] == 1 && fa[3] == 4 &&
	       lookup_str(av, fa[0], "fi_sockaddr_in://10.1.1.1:5000") &&
	       lookup_str(av, fa[1], "fi_sockaddr_in://10.1.1.1:5001") &&
	       lookup_str(av, fa[2], "fi_sockaddr_in://10.1.1.2:5000") &&
	       lookup_str(av, fa[3], "fi_sockaddr_in://10.1.1.2:5001"),
	       "insertsym 10.1.1.1 x2, 5000 x2: four names in order (%d)",
	       ret);
	ret = fi_av_insertsym(av, "10.0.0.255", 2, "1", 1, fa, 0, NULL);
	tap_ok(ret == 2 && lookup_str(av, fa[1], "fi_sockaddr_in://10.0.1.0:1"),
	       "insertsym carries into the next octet (%d)", ret);
	ret = fi_av_insertsym(av, "10.0.0.1", 1, "65535", 2, fa, FI_SYNC_ERR,
			      err);
	tap_ok(ret == 1 && fa[1] == FI_ADDR_NOTAVAIL && !err[0] &&
	       err[1] == FI_EINVAL,
	       "insertsym past port 65535: the rest not inserted (%d)", ret);
	ret = fi_av_insertsym(av, "255.255.255.255", 2, "1", 1, fa, 0, NULL);
	tap_ok(ret == 1 && fa[0] != FI_ADDR_NOTAVAIL &&
	       fa[1] == FI_ADDR_NOTAVAIL,
	       "insertsym past 255.255.255.255: not inserted (%d)", ret);
	ret = fi_av_insertsym(av, "10.9.9.9", 0, "1", 5, fa, 0, NULL);
	tap_ok(ret == 0, "insertsym of 0 nodes: 0 (%d)", ret);
	ret = fi_av_insertsym(av, "10.9.9.9", 1, "1", 1, fa, 1ULL << 50, NULL);
	tap_ok(ret == -FI_EBADFLAGS, "insertsym bad flags: -FI_EBADFLAGS (%d)",
	       ret);
	tap_ok(!av_close(av), "insertsvc: AV closes");
}

static void test_svc6(const struct dom *d)
{
	struct fid_av *av = NULL;
	fi_addr_t fa[2];
	int ret;

	ret = av_open(d, FI_AV_MAP, 0, &av);
	ret = ret ? ret : fi_av_insertsvc(av, "::1", "9", fa, 0, NULL);
	tap_ok(ret == 1 && lookup_str(av, fa[0], "fi_sockaddr_in6://[::1]:9"),
	       "IPv6 insertsvc ::1 9 (%d)", ret);
	ret = fi_av_insertsvc(av, "127.0.0.1", "9", fa, 0, NULL);
	tap_ok(ret == 0 && fa[0] == FI_ADDR_NOTAVAIL,
	       "IPv6 insertsvc 127.0.0.1: not inserted (%d)", ret);
	ret = fi_av_insertsym(av, "2001:db8::ffff", 2, "7000", 1, fa, 0, NULL);
	tap_ok(ret == 2 &&
	       lookup_str(av, fa[0],
			  "fi_sockaddr_in6://[2001:db8::ffff]:7000") &&
	       lookup_str(av, fa[1],
			  "fi_sockaddr_in6://[2001:db8::1:0]:7000"),
	       "IPv6 insertsym carries across groups (%d)", ret);
	tap_ok(!av_close(av), "IPv6 insertsvc: AV closes");
}

/* ---- own address, duplicates */

static void test_own(const struct dom *d)
{
	struct fid_av *av = NULL;
	fi_addr_t fa[2] = { FI_ADDR_NOTAVAIL, FI_ADDR_NOTAVAIL };
	union sa a;
	int ret, ret2;

	memset(&a, 0, sizeof(a));
	if (!d->info->src_addr || d->info->src_addrlen != d->len) {
		tap_ok(0, "%s: info has a source address of %zu octets",
		       d->tag, d->len);
		return;
	}
	memcpy(&a, d->info->src_addr, d->len);
	if (d->family == AF_INET)
		a.sin.sin_port = htons(23899);
	else
		a.sin6.sin6_port = htons(23899);
	ret = av_open(d, FI_AV_MAP, 0, &av);
	ret = ret ? ret : fi_av_insert(av, &a, 1, &fa[0], 0, NULL);
	tap_ok(ret == 1 && lookup_is(av, fa[0], &a, d->len),
	       "%s: our own interface address inserts (%d)", d->tag, ret);
	ret2 = fi_av_insert(av, &a, 1, &fa[1], 0, NULL);
	tap_ok(ret2 == 1 && fa[1] != fa[0] && lookup_is(av, fa[1], &a, d->len),
	       "%s: a duplicate gets its own fi_addr (%d)", d->tag, ret2);
	tap_ok(!av_close(av), "%s: own-address AV closes", d->tag);
}

/* ---- concurrency */

struct worker {
	struct fid_av *av;
	const struct dom *d;
	unsigned int first;
	fi_addr_t fa[NADDR / NTHREADS];
	int bad;
};

static void *insert_one_by_one(void *arg)
{
	struct worker *w = arg;
	unsigned int i;
	union sa a;

	for (i = 0; i < NADDR / NTHREADS; i++) {
		name_of(w->d->family, w->first + i, &a);
		if (fi_av_insert(w->av, &a, 1, &w->fa[i], 0, NULL) != 1)
			w->bad++;
	}
	return NULL;
}

static void test_threads(const struct dom *d)
{
	static struct worker w[NTHREADS];
	static bool seen[NADDR];
	pthread_t th[NTHREADS];
	struct fid_av *av = NULL;
	bool ok = true;
	fi_addr_t f;
	union sa a;
	int ret, i, j, started = 0;

	ret = av_open(d, FI_AV_TABLE, 0, &av);
	if (!tap_ok(!ret, "threads: AV open (%d)", ret))
		return;
	for (i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .av = av, .d = d,
					.first = (unsigned int)i * 10000 };
		if (!pthread_create(&th[i], NULL, insert_one_by_one, &w[i]))
			started++;
	}
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < NTHREADS; i++) {
		ok = ok && !w[i].bad;
		for (j = 0; ok && j < NADDR / NTHREADS; j++) {
			f = w[i].fa[j];
			name_of(d->family, w[i].first + (unsigned int)j, &a);
			ok = f < NADDR && !seen[f] &&
			     lookup_is(av, f, &a, d->len);
			if (ok)
				seen[f] = true;
		}
	}
	tap_ok(started == NTHREADS && ok,
	       "threads: %d threads x %d inserts: fi_addrs 0..%d, each once, "
	       "each with its name", NTHREADS, NADDR / NTHREADS, NADDR - 1);
	tap_ok(!av_close(av), "threads: AV closes");
}

/* ---- closing */

static void test_close(const struct dom *d)
{
	struct fid_av *av = NULL;
	int ret;

	ret = av_open(d, FI_AV_MAP, 0, &av);
	if (!tap_ok(!ret, "close: AV open (%d)", ret))
		return;
	ret = fi_close(&d->domain->fid);
	tap_ok(ret == -FI_EBUSY, "close: the domain is busy while an AV is "
	       "open (%d)", ret);
	ret = fi_close(&av->fid);
	tap_ok(!ret, "close: an AV without endpoints closes (%d)", ret);
}

static void run_family(struct dom *d)
{
	test_bulk(d, FI_AV_TABLE);
	test_bulk(d, FI_AV_MAP);
	test_lookup_small(d);
	test_own(d);
}

/* the IPv6 block's checks, its domain's included */
enum { V6_CHECKS = 44 };

int main(void)
{
	struct dom d4 = { .tag = "IPv4", .family = AF_INET,
			  .len = sizeof(struct sockaddr_in) };
	struct dom d6 = { .tag = "IPv6", .family = AF_INET6,
			  .len = sizeof(struct sockaddr_in6) };
	int ret, v6_start;

	setenv("FI_IWARP_IFACE", "lo", 1);
	ret = dom_open(&d4, FI_SOCKADDR_IN);
	if (!tap_ok(!ret, "IPv4 domain on lo (%d)", ret))
		return tap_done();
	test_open(&d4);
	run_family(&d4);
	test_straddr(&d4);
	test_remove(&d4, FI_AV_TABLE);
	test_remove(&d4, FI_AV_MAP);
	test_invalid4(&d4);
	test_svc4(&d4);
	test_threads(&d4);
	test_close(&d4);

	v6_start = tap_n;
	ret = dom_open(&d6, FI_SOCKADDR_IN6);
	if (ret == -FI_ENODATA) {
		/* the block, this check and dom_close's */
		tap_skip_n(V6_CHECKS + 2, "IPv6: lo has no ::1");
	} else {
		if (tap_ok(!ret, "IPv6 domain on lo (%d)", ret)) {
			run_family(&d6);
			test_remove(&d6, FI_AV_TABLE);
			test_invalid6(&d6);
			test_svc6(&d6);
		}
		/* keeps the skip path above owing the same count */
		tap_ok(tap_n - v6_start == V6_CHECKS, "IPv6: %d checks ran, "
		       "%d owed", tap_n - v6_start, V6_CHECKS);
	}
	dom_close(&d6);
	dom_close(&d4);
	return tap_done();
}
