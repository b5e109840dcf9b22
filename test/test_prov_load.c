/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The provider as libfabric's users see it, through the public API only:
 * it loads, lists one entry per interface address (fabric = subnet in
 * CIDR form, domain = interface, loopback last), offers FI_EP_RDM and
 * FI_EP_MSG, and opens and closes fabrics and domains.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so.
 *	test_prov_load			all checks, then the iface-lo run
 *	test_prov_load iface-lo		FI_IWARP_IFACE=lo: only lo is listed
 * Parameters are read when libfabric loads the provider, so the iface-lo
 * checks run in a fresh process (its TAP lines go to stderr).
 */
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

extern char **environ;

static struct fi_info *hints_new(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h) {
		tap_diag("fi_allocinfo failed");
		exit(2);
	}
	h->fabric_attr->prov_name = strdup("iwarp");
	return h;
}

static int getinfo(struct fi_info *hints, const char *node, uint64_t flags,
		   struct fi_info **info)
{
	int ret = fi_getinfo(API, node, NULL, flags, hints, info);

	fi_freeinfo(hints);
	if (ret)
		*info = NULL;
	return ret;
}

static size_t count_info(const struct fi_info *info)
{
	size_t n = 0;

	for (; info; info = info->next)
		n++;
	return n;
}

static bool sa_is_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in *sin = (const void *)sa;
	const struct sockaddr_in6 *sin6 = (const void *)sa;

	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
	return (ntohl(sin->sin_addr.s_addr) >> 24) == IN_LOOPBACKNET;
}

static const uint8_t *sa_octets(const struct sockaddr *sa, size_t *len)
{
	if (sa->sa_family == AF_INET6) {
		*len = 16;
		return ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	}
	*len = 4;
	return (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
}

/* "net/prefix" whose net is src masked by prefix, with no host bits. */
static bool fabric_is_subnet_of(const char *name, const struct sockaddr *src)
{
	uint8_t net[16];
	const uint8_t *a;
	char buf[64], *slash, *end;
	size_t len, i;
	long prefix;

	if (strlen(name) >= sizeof(buf))
		return false;
	strcpy(buf, name);
	slash = strchr(buf, '/');
	if (!slash)
		return false;
	*slash = '\0';
	prefix = strtol(slash + 1, &end, 10);
	if (*end || end == slash + 1 ||
	    inet_pton(src->sa_family, buf, net) != 1)
		return false;
	a = sa_octets(src, &len);
	if (prefix < 0 || prefix > (long)len * 8)
		return false;
	for (i = 0; i < len; i++) {
		long bits = prefix - (long)i * 8;
		uint8_t mask = bits >= 8 ? 0xff : bits <= 0 ? 0 :
			       (uint8_t)(0xff << (8 - bits));

		if ((a[i] & mask) != net[i])
			return false;
	}
	return true;
}

static bool entry_shape_ok(const struct fi_info *fi)
{
	const struct sockaddr *sa = fi->src_addr;
	uint32_t want = sa && sa->sa_family == AF_INET6 ? FI_SOCKADDR_IN6 :
							  FI_SOCKADDR_IN;

	if (fi->ep_attr->type == FI_EP_RDM)	/* tagged, for MPI */
		return sa && fi->addr_format == want &&
		       (fi->caps & FI_TAGGED) &&
		       (fi->ep_attr->mem_tag_format & (1ULL << 63));
	if (fi->ep_attr->type == FI_EP_DGRAM)	/* one UDP datagram */
		return sa && fi->addr_format == want &&
		       (fi->caps & FI_MSG) && !(fi->caps & FI_RMA) &&
		       fi->ep_attr->protocol == FI_PROTO_UDP &&
		       fi->ep_attr->max_msg_size == 65483 &&
		       fi->tx_attr->msg_order == TEST_ORDER_NONE;
	return sa && fi->addr_format == want &&
	       (fi->caps & FI_MSG) && !(fi->caps & (FI_TAGGED | FI_ATOMIC)) &&
	       /* RMA needs provider keys; hints with mr_mode 0 lose it */
	       (!(fi->caps & FI_RMA) ||
		(fi->domain_attr->mr_mode & FI_MR_PROV_KEY)) &&
	       fi->ep_attr->type == FI_EP_MSG &&
	       fi->fabric_attr->name && fi->domain_attr->name &&
	       fi->domain_attr->threading == FI_THREAD_SAFE &&
	       fi->domain_attr->data_progress == FI_PROGRESS_MANUAL;
}

static void check_entries(const struct fi_info *info)
{
	bool shape = true, cidr = true, ifname = true, prov = true;
	bool seen_lo = false, lo_last = true;
	const struct fi_info *fi;

	for (fi = info; fi; fi = fi->next) {
		bool lo = fi->src_addr && sa_is_loopback(fi->src_addr);

		if (!entry_shape_ok(fi)) {
			shape = false;
			continue;
		}
		tap_diag("%s %s", fi->fabric_attr->name, fi->domain_attr->name);
		cidr &= fabric_is_subnet_of(fi->fabric_attr->name,
					    fi->src_addr);
		ifname &= if_nametoindex(fi->domain_attr->name) != 0;
		prov &= fi->fabric_attr->prov_name &&
			!strcmp(fi->fabric_attr->prov_name, "iwarp");
		if (seen_lo && !lo)
			lo_last = false;
		seen_lo |= lo;
	}
	tap_ok(shape, "entries: FI_EP_RDM tagged (tag bit 63), FI_EP_MSG with "
	       "FI_MSG, RMA only with provider keys, safe/manual; FI_EP_DGRAM "
	       "over UDP, unordered");
	tap_ok(cidr, "fabric names are the CIDR subnets of the addresses");
	tap_ok(ifname, "domain names are interfaces");
	tap_ok(prov, "core filled prov_name \"iwarp\"");
	tap_ok(seen_lo && lo_last, "loopback entries are listed last");
}

static void check_ep_types(void)
{
	const struct fi_info *fi;
	struct fi_info *h, *info;
	bool only;
	int ret;

	h = hints_new();
	h->ep_attr->type = FI_EP_DGRAM;
	ret = getinfo(h, NULL, 0, &info);
	only = !ret && info;
	for (fi = ret ? NULL : info; fi; fi = fi->next)
		only &= fi->ep_attr->type == FI_EP_DGRAM;
	tap_ok(only, "FI_EP_DGRAM hints -> DGRAM entries only (got %d)", ret);
	fi_freeinfo(info);
	h = hints_new();
	h->ep_attr->type = FI_EP_MSG;
	ret = getinfo(h, NULL, 0, &info);
	tap_ok(!ret && info && info->ep_attr->type == FI_EP_MSG,
	       "FI_EP_MSG hints -> MSG entries (got %d)", ret);
	fi_freeinfo(info);
	h = hints_new();
	h->caps = FI_TAGGED;
	ret = getinfo(h, NULL, 0, &info);
	tap_ok(!ret && info && info->ep_attr->type == FI_EP_RDM,
	       "FI_TAGGED caps -> RDM entries (got %d)", ret);
	fi_freeinfo(info);
	h = hints_new();
	h->ep_attr->type = FI_EP_RDM;
	ret = getinfo(h, NULL, 0, &info);
	tap_ok(!ret && info && info->ep_attr->type == FI_EP_RDM,
	       "FI_EP_RDM hints -> RDM entries (got %d)", ret);
	fi_freeinfo(info);
}

/* Hints naming a fabric and domain, or a source address, narrow. */
static void check_narrowing(const struct fi_info *first)
{
	struct fi_info *h, *info;
	const struct fi_info *fi;
	bool ok;
	int ret;

	h = hints_new();
	h->fabric_attr->name = strdup(first->fabric_attr->name);
	h->domain_attr->name = strdup(first->domain_attr->name);
	ret = getinfo(h, NULL, 0, &info);
	ok = !ret && info;
	for (fi = info; ok && fi; fi = fi->next)
		ok = !strcmp(fi->fabric_attr->name, first->fabric_attr->name) &&
		     !strcmp(fi->domain_attr->name, first->domain_attr->name);
	tap_ok(ok, "fabric+domain hints narrow to %s %s",
	       first->fabric_attr->name, first->domain_attr->name);
	fi_freeinfo(info);

	h = hints_new();
	h->fabric_attr->name = strdup("iwarp-no-such-fabric");
	ret = getinfo(h, NULL, 0, &info);
	tap_ok(ret == -FI_ENODATA, "unknown fabric name -> -FI_ENODATA");
	fi_freeinfo(info);

	h = hints_new();
	ret = getinfo(h, "127.0.0.1", FI_SOURCE, &info);
	ok = !ret && count_info(info) == 3;	/* RDM, MSG, DGRAM */
	for (fi = info; ok && fi; fi = fi->next)
		ok = !strcmp(fi->fabric_attr->name, "127.0.0.0/8");
	tap_ok(ok, "FI_SOURCE 127.0.0.1 -> the 127.0.0.0/8 entries only");
	fi_freeinfo(info);
}

static void check_domain_ops(struct fid_fabric *fabric,
			     struct fid_domain *domain)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fid_cq *cq;
	struct fid_eq *eq;
	struct fid_av *av;
	struct fid_ep *ep;

	tap_ok(fi_cq_open(domain, &cq_attr, &cq, NULL) == 0 &&
	       fi_close(&cq->fid) == 0, "fi_cq_open and close");
	tap_ok(fi_av_open(domain, &av_attr, &av, NULL) == 0 &&
	       fi_close(&av->fid) == 0, "fi_av_open and close");
	tap_ok(fi_endpoint(domain, NULL, &ep, NULL) == -FI_EINVAL,
	       "fi_endpoint without info -> -FI_EINVAL");
	tap_ok(fi_eq_open(fabric, &eq_attr, &eq, NULL) == 0 &&
	       fi_close(&eq->fid) == 0, "fi_eq_open and close");
}

static void check_open_close(struct fi_info *first)
{
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	char *saved;
	int ret;

	ret = fi_fabric(first->fabric_attr, &fabric, NULL);
	if (!tap_ok(!ret, "fi_fabric(%s) (got %d)", first->fabric_attr->name,
		    ret))
		return;
	ret = fi_domain(fabric, first, &domain, NULL);
	if (tap_ok(!ret, "fi_domain(%s) (got %d)", first->domain_attr->name,
		   ret)) {
		check_domain_ops(fabric, domain);
		tap_ok(fi_close(&fabric->fid) == -FI_EBUSY,
		       "fabric close with an open domain -> -FI_EBUSY");
		tap_ok(!fi_close(&domain->fid), "domain closes");
	}
	saved = first->domain_attr->name;
	first->domain_attr->name = "iwarp-no-such-if";
	ret = fi_domain(fabric, first, &domain, NULL);
	first->domain_attr->name = saved;
	tap_ok(ret < 0, "fi_domain with an unknown interface fails (%d)", ret);
	tap_ok(!fi_close(&fabric->fid), "fabric closes");
}

static void check_bad_fabric(const struct fi_info *first)
{
	struct fi_fabric_attr attr = *first->fabric_attr;
	struct fid_fabric *fabric;
	int ret;

	attr.name = "iwarp-no-such-fabric";
	ret = fi_fabric(&attr, &fabric, NULL);
	tap_ok(ret < 0, "fi_fabric with an unknown name fails (%d)", ret);
	if (!ret)
		fi_close(&fabric->fid);
}

/*
 * Runs this program in iface-lo mode, its output on our stderr. argv[0]
 * rather than /proc/self/exe, which is the tool under valgrind.
 */
static int run_iface_lo(const char *self)
{
	char *const args[] = { "test_prov_load", "iface-lo", NULL };
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status, ret;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	fflush(stdout);
	if (!strchr(self, '/'))
		self = "/proc/self/exe";
	ret = posix_spawn(&pid, self, &fa, NULL, args, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (ret || waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int main_iface_lo(void)
{
	struct fi_info *info;
	const struct fi_info *fi;
	bool only_lo = true;
	int ret;

	setenv("FI_IWARP_IFACE", "lo", 1);
	ret = getinfo(hints_new(), NULL, 0, &info);
	tap_ok(!ret && info, "FI_IWARP_IFACE=lo: entries returned (%d)", ret);
	for (fi = info; fi; fi = fi->next)
		only_lo &= !strcmp(fi->domain_attr->name, "lo");
	tap_ok(only_lo, "FI_IWARP_IFACE=lo: only lo is listed");
	fi_freeinfo(info);
	return tap_done();
}

int main(int argc, char **argv)
{
	struct fi_info *info;
	int ret;

	if (argc > 1 && !strcmp(argv[1], "iface-lo"))
		return main_iface_lo();
	if (!getenv("FI_PROVIDER_PATH"))
		tap_diag("FI_PROVIDER_PATH is not set: iwarp may not load");
	unsetenv("FI_IWARP_IFACE");

	ret = getinfo(hints_new(), NULL, 0, &info);
	if (!tap_ok(!ret && info, "fi_getinfo lists iwarp entries (%d)", ret))
		return tap_done();
	tap_diag("%zu entries", count_info(info));
	check_entries(info);
	check_ep_types();
	check_narrowing(info);
	check_open_close(info);
	check_bad_fabric(info);
	fi_freeinfo(info);
	tap_ok(run_iface_lo(argv[0]) == 0,
	       "iface-lo run passed (its log on stderr)");
	return tap_done();
}
