/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_getinfo hint rules of the iwarp provider, through the public API: a
 * table of hints (as fi_pingpong, fabtests, fi_info, legacy applications
 * and hand-made ones send them) and the answer each must get. Every
 * successful reply is also checked for what holds whatever the hints
 * (an FI_EP_MSG endpoint, caps of the tx/rx sides within caps, no mode,
 * no mr_mode bit we do not need), and its first entry is fed back in as
 * hints, which must succeed: applications (MPI) do exactly that.
 *
 * Needs FI_PROVIDER_PATH pointing at the directory of libiwarp-fi.so.
 *	test_getinfo		the table, with FI_IWARP_IFACE=lo, then:
 *	test_getinfo all-ifaces	interface order for peer addresses, on
 *				every interface (TAP lines on stderr)
 * Parameters are read when libfabric loads the provider, so the second
 * part runs in a fresh process.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "tap.h"
#include "fi_api.h"

#define API		TEST_API
#define PORT		23900
#define PORT_S		"23900"
#define FAR_HOST	"198.51.100.7"	/* TEST-NET-2: never ours */
/* libfabric's internal getinfo flag for utility providers (ofi_rxm) */
#define OFI_CORE_PROV_ONLY	(1ULL << 59)

#define MSG_CAPS	(FI_MSG | FI_SEND | FI_RECV)
#define RMA_CAPS	(FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | \
			 FI_REMOTE_WRITE)
#define COMM_CAPS	(FI_LOCAL_COMM | FI_REMOTE_COMM)
/* FI_RMA_EVENT: remote access counters (test_rma_event) */
#define ALL_CAPS	(MSG_CAPS | RMA_CAPS | COMM_CAPS | FI_MULTI_RECV | \
			 FI_RMA_EVENT)
/* MSG mode bits, each only when the hints offer it, with what goes
 * with it: an 8-octet prefix; 4 octets of remote CQ data */
#define MSG_MODES	(FI_MSG_PREFIX | FI_RX_CQ_DATA)
#define BASIC_MAP	(FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)
/* what comes back for it: offsets, never virtual addresses */
#define BASIC_MAP_OFF	(FI_MR_ALLOCATED | FI_MR_PROV_KEY)
#define NEVER_MR	(FI_MR_LOCAL | FI_MR_RAW | FI_MR_MMU_NOTIFY | \
			 FI_MR_RMA_EVENT | FI_MR_ENDPOINT | FI_MR_HMEM | \
			 FI_MR_COLLECTIVE)
/* fi_endpoint(3) 2.x: comp_order is 0 unless the hints ask for one;
 * fi_av(3) 2.x deprecates FI_AV_MAP */
#if TEST_API_V2
#define COMP_ORDER	0
#define RDM_AV		FI_AV_TABLE
#else
#define COMP_ORDER	FI_ORDER_STRICT
#define RDM_AV		FI_AV_MAP
#endif
#define OUR_ORDER	(FI_ORDER_SAS | FI_ORDER_SAW | FI_ORDER_SAR | \
			 FI_ORDER_WAS | FI_ORDER_WAW | FI_ORDER_RAW | \
			 FI_ORDER_RAR | FI_ORDER_RAS)

extern char **environ;

/* Addresses on lo, counted at start: the expected entry counts. */
static size_t n_lo4, n_lo6;

/* Hint values; zero leaves fi_allocinfo()'s wildcard in place. */
struct hint_spec {
	uint64_t caps, mode, tx_caps, rx_caps, domain_caps;
	uint64_t tx_op_flags, rx_op_flags;
	uint64_t tx_order, rx_order, tx_comp_order, rx_comp_order;
	int mr_mode;
	enum fi_ep_type ep_type;
	uint32_t protocol, protocol_version, addr_format, prov_version;
	size_t max_msg_size, max_order_raw_size, ep_tx_ctx, ep_rx_ctx;
	size_t ep_auth_key_size;
	size_t tx_size, tx_iov, tx_inject, tx_rma_iov;
	size_t rx_size, rx_iov, rx_buffered;
	enum fi_threading threading;
	enum fi_progress ctrl_progress, data_progress;
	enum fi_resource_mgmt rm;
	enum fi_av_type av_type;
	size_t cq_data_size, cq_cnt, mr_iov_limit;
#if TEST_API_V2
	size_t max_ep_auth_key;
	uint32_t max_group_id;
#endif
	const char *fabric, *domain;
	const char *src_host, *src_port, *dest_host, *dest_port;
};

/* Returns NULL if the reply is right, else the failed condition. */
typedef const char *(*check_fn)(const struct fi_info *fi);

struct gi_case {
	const char *name;
	uint32_t api;			/* 0: API */
	bool no_hints;			/* pass hints == NULL */
	const char *node, *service;
	uint64_t flags;
	struct hint_spec h;
	int expect;			/* 0 or -FI_E... */
	check_fn check;			/* on the first iwarp entry */
	check_fn check_all;		/* on the whole reply */
};

#define EXPECT(cond)				\
	do {					\
		if (!(cond))			\
			return #cond;		\
	} while (0)

/* ---- building hints */

static struct sockaddr *sa_new(const char *host, const char *port,
			       size_t *len)
{
	struct addrinfo ai = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *res;
	struct sockaddr *sa;

	if (getaddrinfo(host, port, &ai, &res)) {
		tap_diag("cannot parse %s:%s", host, port);
		exit(2);
	}
	*len = res->ai_addrlen;
	sa = malloc(*len);
	if (!sa)
		exit(2);
	memcpy(sa, res->ai_addr, *len);
	freeaddrinfo(res);
	return sa;
}

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

static void spec_ep(struct fi_info *h, const struct hint_spec *s)
{
	h->ep_attr->type = s->ep_type;
	h->ep_attr->protocol = s->protocol;
	h->ep_attr->protocol_version = s->protocol_version;
	h->ep_attr->max_msg_size = s->max_msg_size;
	h->ep_attr->max_order_raw_size = s->max_order_raw_size;
	h->ep_attr->tx_ctx_cnt = s->ep_tx_ctx;
	h->ep_attr->rx_ctx_cnt = s->ep_rx_ctx;
	h->ep_attr->auth_key_size = s->ep_auth_key_size;
}

static void spec_tx_rx(struct fi_info *h, const struct hint_spec *s)
{
	h->tx_attr->caps = s->tx_caps;
	h->tx_attr->op_flags = s->tx_op_flags;
	h->tx_attr->msg_order = s->tx_order;
	h->tx_attr->comp_order = s->tx_comp_order;
	h->tx_attr->size = s->tx_size;
	h->tx_attr->iov_limit = s->tx_iov;
	h->tx_attr->inject_size = s->tx_inject;
	h->tx_attr->rma_iov_limit = s->tx_rma_iov;
	h->rx_attr->caps = s->rx_caps;
	h->rx_attr->op_flags = s->rx_op_flags;
	h->rx_attr->msg_order = s->rx_order;
	h->rx_attr->comp_order = s->rx_comp_order;
	h->rx_attr->size = s->rx_size;
	h->rx_attr->iov_limit = s->rx_iov;
	h->rx_attr->total_buffered_recv = s->rx_buffered;
}

static void spec_domain(struct fi_info *h, const struct hint_spec *s)
{
	struct fi_domain_attr *d = h->domain_attr;

	d->caps = s->domain_caps;
	d->mr_mode = s->mr_mode;
	d->threading = s->threading;
	d->control_progress = s->ctrl_progress;
	d->data_progress = s->data_progress;
	d->resource_mgmt = s->rm;
	d->av_type = s->av_type;
	d->cq_data_size = s->cq_data_size;
	d->cq_cnt = s->cq_cnt;
	d->mr_iov_limit = s->mr_iov_limit;
#if TEST_API_V2
	d->max_ep_auth_key = s->max_ep_auth_key;
	d->max_group_id = s->max_group_id;
#endif
	if (s->domain)
		d->name = strdup(s->domain);
}

static struct fi_info *hints_from(const struct hint_spec *s)
{
	struct fi_info *h = hints_new();

	h->caps = s->caps;
	h->mode = s->mode;
	h->addr_format = s->addr_format;
	h->fabric_attr->prov_version = s->prov_version;
	if (s->fabric)
		h->fabric_attr->name = strdup(s->fabric);
	if (s->src_host)
		h->src_addr = sa_new(s->src_host, s->src_port, &h->src_addrlen);
	if (s->dest_host)
		h->dest_addr = sa_new(s->dest_host, s->dest_port,
				      &h->dest_addrlen);
	spec_ep(h, s);
	spec_tx_rx(h, s);
	spec_domain(h, s);
	return h;
}

/* ---- address helpers */

static const uint8_t *sa_octets(const struct sockaddr *sa, size_t *len)
{
	if (sa->sa_family == AF_INET6) {
		*len = 16;
		return ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	}
	*len = 4;
	return (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
}

static unsigned int sa_port(const void *addr)
{
	const struct sockaddr *sa = addr;

	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return ntohs(((const struct sockaddr_in *)sa)->sin_port);
}

/* True if addr is the numeric host `host` (any port). */
static bool sa_is(const void *addr, const char *host)
{
	uint8_t want[16];
	const uint8_t *got;
	const struct sockaddr *sa = addr;
	size_t len;

	if (!sa || inet_pton(sa->sa_family, host, want) != 1)
		return false;
	got = sa_octets(sa, &len);
	return !memcmp(got, want, len);
}

static bool sa_is_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in *sin = (const void *)sa;
	const struct sockaddr_in6 *sin6 = (const void *)sa;

	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
	return (ntohl(sin->sin_addr.s_addr) >> 24) == IN_LOOPBACKNET;
}

/* Entries of the first one's endpoint type, from it on (types come in
 * runs: RDM, MSG, DGRAM). */
static size_t count_info(const struct fi_info *info)
{
	enum fi_ep_type type = info->ep_attr->type;
	size_t n = 0;

	for (; info; info = info->next)
		n += info->ep_attr->type == type;
	return n;
}

/* ---- what every reply must satisfy */

static bool is_iwarp(const struct fi_info *fi)
{
	return fi->fabric_attr->prov_name &&
	       !strcmp(fi->fabric_attr->prov_name, "iwarp");
}

static const char *entry_addr_ok(const struct fi_info *fi)
{
	const struct sockaddr *sa = fi->src_addr;

	EXPECT(sa);
	EXPECT(fi->addr_format == (sa->sa_family == AF_INET6 ?
				   FI_SOCKADDR_IN6 : FI_SOCKADDR_IN));
	EXPECT(fi->src_addrlen == (sa->sa_family == AF_INET6 ?
				   sizeof(struct sockaddr_in6) :
				   sizeof(struct sockaddr_in)));
	EXPECT(!fi->dest_addr || fi->dest_addrlen == fi->src_addrlen);
	return NULL;
}

static const char *entry_caps_ok(const struct fi_info *fi)
{
	/* FI_TAGGED only when asked (want_defaults has it not) */
	EXPECT(fi->caps && !(fi->caps & ~(ALL_CAPS | FI_TAGGED)));
	EXPECT(!(fi->tx_attr->caps & ~fi->caps));
	EXPECT(!(fi->rx_attr->caps & ~fi->caps));
	EXPECT(!(fi->tx_attr->caps & (FI_RECV | FI_REMOTE_READ |
				      FI_REMOTE_WRITE | COMM_CAPS)));
	EXPECT(!(fi->rx_attr->caps & (FI_SEND | FI_READ | FI_WRITE |
				      COMM_CAPS)));
	EXPECT(!(fi->domain_attr->caps & ~COMM_CAPS));
	return NULL;
}

static const char *entry_mr_ok(const struct fi_info *fi)
{
	int mr = fi->domain_attr->mr_mode;

	EXPECT(!(mr & NEVER_MR));
	EXPECT(!(mr & TEST_MR_SCALABLE));
	EXPECT(!(fi->caps & RMA_CAPS) || mr == TEST_MR_BASIC ||
	       (mr & FI_MR_PROV_KEY));
	EXPECT(fi->domain_attr->mr_key_size == 4);
	return NULL;
}

/* What every RDM entry must say (what Open MPI's mtl ofi asks for). */
/* Manual unless the hints asked for automatic progress. */
#define PROGRESS_OK(p) ((p) == FI_PROGRESS_MANUAL || (p) == FI_PROGRESS_AUTO)

static const char *rdm_entry_ok(const struct fi_info *fi)
{
	EXPECT(fi->ep_attr->type == FI_EP_RDM);
	EXPECT(fi->ep_attr->protocol == FI_PROTO_IWARP);
	EXPECT(fi->ep_attr->mem_tag_format & (1ULL << 63));
	/* only the prefix, and only to hints that offer it */
	EXPECT(fi->mode == 0 || (fi->mode == FI_MSG_PREFIX &&
				 fi->ep_attr->msg_prefix_size == 8));
	/* RMA and atomics need keys we choose */
	EXPECT(!(fi->caps & (FI_RMA | FI_ATOMIC)) ||
	       fi->domain_attr->mr_mode == TEST_MR_BASIC ||
	       (fi->domain_attr->mr_mode & FI_MR_PROV_KEY));
	EXPECT(fi->domain_attr->cq_data_size >= 4);
	EXPECT(fi->domain_attr->resource_mgmt != FI_RM_UNSPEC);
	EXPECT(PROGRESS_OK(fi->domain_attr->control_progress));
	return NULL;
}

/* Open MPI btl ofi (osc rdma): one-sided on RDM, keys we choose */
static const char *want_rdm_osc(const struct fi_info *fi)
{
	uint64_t dirs = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

	EXPECT(fi->ep_attr->type == FI_EP_RDM);
	EXPECT((fi->caps & (FI_RMA | FI_ATOMIC | dirs)) ==
	       (FI_RMA | FI_ATOMIC | dirs));
	EXPECT((fi->tx_attr->caps & (FI_RMA | FI_ATOMIC | FI_READ |
				     FI_WRITE)) ==
	       (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE));
	EXPECT(fi->domain_attr->mr_mode == BASIC_MAP_OFF);
	EXPECT(fi->tx_attr->op_flags == FI_DELIVERY_COMPLETE);
	EXPECT(fi->tx_attr->rma_iov_limit >= 1);
	EXPECT(fi->domain_attr->av_type == FI_AV_MAP);
	return NULL;
}

static const char *want_rdm(const struct fi_info *fi)
{
	EXPECT(fi->ep_attr->type == FI_EP_RDM);
	EXPECT((fi->caps & (FI_TAGGED | FI_MSG | FI_DIRECTED_RECV |
			    FI_SOURCE)) ==
	       (FI_TAGGED | FI_MSG | FI_DIRECTED_RECV | FI_SOURCE));
	EXPECT(fi->domain_attr->cq_data_size == 8);
	EXPECT(fi->domain_attr->resource_mgmt == FI_RM_ENABLED);
	EXPECT(fi->tx_attr->inject_size >= 64);
	EXPECT(fi->domain_attr->av_type == RDM_AV);
	return NULL;
}

/* What every DGRAM entry must say: one UDP datagram, no promises. */
static const char *dgram_entry_ok(const struct fi_info *fi)
{
	EXPECT(fi->ep_attr->type == FI_EP_DGRAM);
	EXPECT(fi->ep_attr->protocol == FI_PROTO_UDP);
	EXPECT(fi->ep_attr->max_msg_size == 65483);
	EXPECT(fi->mode == 0 ? fi->ep_attr->msg_prefix_size == 0 :
	       fi->mode == FI_MSG_PREFIX &&
	       fi->ep_attr->msg_prefix_size == 24);
	EXPECT(!(fi->caps & ~(MSG_CAPS | FI_TAGGED | FI_SOURCE | COMM_CAPS)));
	EXPECT(fi->tx_attr->msg_order == TEST_ORDER_NONE &&
	       fi->rx_attr->msg_order == TEST_ORDER_NONE);
	EXPECT(fi->tx_attr->comp_order == TEST_ORDER_NONE);
	EXPECT(fi->domain_attr->cq_data_size == 8);
	EXPECT(PROGRESS_OK(fi->domain_attr->data_progress));
	return entry_addr_ok(fi);
}

static const char *want_dgram(const struct fi_info *fi)
{
	EXPECT(fi->ep_attr->type == FI_EP_DGRAM);
	EXPECT((fi->caps & (FI_MSG | FI_TAGGED | FI_SOURCE)) ==
	       (FI_MSG | FI_TAGGED | FI_SOURCE));
	EXPECT(fi->tx_attr->inject_size == fi->ep_attr->max_msg_size);
	EXPECT(fi->domain_attr->av_type == FI_AV_MAP);
	EXPECT(count_info(fi) == n_lo4 + n_lo6);
	return NULL;
}

/* The whole reply is DGRAM: no MSG or RDM entry met the hints. */
static const char *want_dgram_only(const struct fi_info *info)
{
	EXPECT(info);
	for (; info; info = info->next)
		EXPECT(info->ep_attr->type == FI_EP_DGRAM);
	return NULL;
}

static const char *entry_attrs_ok(const struct fi_info *fi)
{
	EXPECT(fi->ep_attr->type == FI_EP_MSG);
	EXPECT(fi->ep_attr->protocol == FI_PROTO_IWARP);
	EXPECT(fi->ep_attr->protocol_version == 1);
	EXPECT(fi->ep_attr->max_msg_size == 0xffffffffULL);
	EXPECT(fi->ep_attr->msg_prefix_size ==
	       (fi->mode & FI_MSG_PREFIX ? 8 : 0));
	/* FI_SHARED_CONTEXT comes back when asked for */
	EXPECT((fi->ep_attr->tx_ctx_cnt == 1 ||
		fi->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT) &&
	       fi->ep_attr->rx_ctx_cnt == 1);
	EXPECT(!(fi->mode & ~MSG_MODES) && fi->domain_attr->mode == 0);
	EXPECT(fi->tx_attr->mode == (fi->mode & FI_MSG_PREFIX) &&
	       fi->rx_attr->mode == fi->mode);
	EXPECT(!(fi->tx_attr->msg_order & FI_ORDER_WAR));
	EXPECT((fi->tx_attr->msg_order & OUR_ORDER) == OUR_ORDER);
#if TEST_API_V2
	EXPECT(!(fi->tx_attr->comp_order & ~TEST_ORDER_STRICT));
#else
	EXPECT(fi->tx_attr->comp_order == FI_ORDER_STRICT);
#endif
	EXPECT(fi->domain_attr->threading != FI_THREAD_UNSPEC);
	EXPECT(PROGRESS_OK(fi->domain_attr->control_progress));
	EXPECT(PROGRESS_OK(fi->domain_attr->data_progress));
	EXPECT(fi->domain_attr->resource_mgmt != FI_RM_UNSPEC);
	EXPECT(fi->domain_attr->cq_data_size == 0 ||
	       fi->domain_attr->cq_data_size == 4);
	EXPECT(!(fi->mode & FI_RX_CQ_DATA) ||
	       fi->domain_attr->cq_data_size == 4);
	EXPECT(fi->domain_attr->name && fi->fabric_attr->name);
	return NULL;
}

static const char *entry_ok(const struct fi_info *fi)
{
	const char *why;

	if ((why = entry_attrs_ok(fi)) || (why = entry_caps_ok(fi)) ||
	    (why = entry_mr_ok(fi)) || (why = entry_addr_ok(fi)))
		return why;
	return NULL;
}

/* The first entry as hints again, as MPI libraries do: must succeed. */
static const char *round_trip_ok(uint32_t api, const struct fi_info *fi)
{
	struct fi_info *h = fi_dupinfo(fi), *again = NULL;
	int ret;

	if (!h)
		return "fi_dupinfo failed";
	h->next = NULL;
	ret = fi_getinfo(api, NULL, NULL, 0, h, &again);
	fi_freeinfo(h);
	fi_freeinfo(again);
	return ret ? "the reply, given back as hints, is refused" : NULL;
}

/* Every kind of entry (type and caps) of ours round trips. */
static const char *round_trips_ok(uint32_t api, const struct fi_info *info)
{
	const struct fi_info *fi, *g;
	const char *why;

	for (fi = info; fi; fi = fi->next) {
		if (strcmp(fi->fabric_attr->prov_name, "iwarp"))
			continue;
		for (g = info; g != fi; g = g->next)
			if (g->ep_attr->type == fi->ep_attr->type &&
			    g->caps == fi->caps &&
			    !strcmp(g->fabric_attr->prov_name, "iwarp"))
				break;
		if (g == fi && (why = round_trip_ok(api, fi)))
			return why;
	}
	return NULL;
}

/* Checks a successful reply; returns NULL or what is wrong. */
static const char *reply_ok(const struct gi_case *c, uint32_t api,
			    const struct fi_info *info)
{
	const struct fi_info *fi, *first = NULL, *first_dgram = NULL;
	const char *why;

	for (fi = info; fi; fi = fi->next) {
		if (!is_iwarp(fi)) {
			if (!c->no_hints)
				return "entry of another provider";
			continue;
		}
		if (fi->ep_attr->type == FI_EP_RDM) {
			if ((why = rdm_entry_ok(fi)))
				return why;
			if (c->h.ep_type != FI_EP_RDM)
				continue;	/* the MSG checks below */
		} else if (fi->ep_attr->type == FI_EP_DGRAM) {
			if ((why = dgram_entry_ok(fi)))
				return why;
			if (!first_dgram)
				first_dgram = fi;
			if (c->h.ep_type != FI_EP_DGRAM)
				continue;
		} else if ((why = entry_ok(fi))) {
			return why;
		}
		if (!first)
			first = fi;
	}
	if (c->check_all && (why = c->check_all(info)))
		return why;
	if (!first)	/* a reply of DGRAM entries only */
		first = first_dgram;
	if (!first)
		return "no iwarp entry";
	if (c->check && (why = c->check(first)))
		return why;
	return round_trips_ok(api, info);
}

static void run_case(const struct gi_case *c)
{
	uint32_t api = c->api ? c->api : API;
	struct fi_info *hints = NULL, *info = NULL;
	const char *why = NULL;
	char buf[128];
	int ret;

	if (!c->no_hints)
		hints = hints_from(&c->h);
	ret = fi_getinfo(api, c->node, c->service, c->flags, hints, &info);
	if (ret != c->expect) {
		snprintf(buf, sizeof(buf), "returned %d (%s), expected %d",
			 ret, fi_strerror(-ret), c->expect);
		why = buf;
	} else if (!ret) {
		why = reply_ok(c, api, info);
	}
	tap_ok(!why, "%s%s%s", c->name, why ? ": " : "", why ? why : "");
	if (!ret)
		fi_freeinfo(info);
	fi_freeinfo(hints);
}

/* ---- expectations of single cases */

static const char *want_defaults(const struct fi_info *fi)
{
	EXPECT(fi->caps == ALL_CAPS);
	EXPECT(fi->tx_attr->caps == (FI_MSG | FI_SEND | FI_RMA | FI_READ |
				     FI_WRITE));
	EXPECT(fi->rx_attr->caps == (FI_MSG | FI_RECV | FI_RMA |
				     FI_REMOTE_READ | FI_REMOTE_WRITE |
				     FI_MULTI_RECV | FI_RMA_EVENT));
	EXPECT(fi->domain_attr->cq_data_size == 0 && fi->mode == 0);
	EXPECT(fi->domain_attr->mr_mode == FI_MR_PROV_KEY);
	EXPECT(fi->domain_attr->threading == FI_THREAD_SAFE);
	EXPECT(fi->domain_attr->caps == COMM_CAPS);
	EXPECT(fi->tx_attr->op_flags == 0 && fi->rx_attr->op_flags == 0);
	EXPECT(fi->tx_attr->size == 256 && fi->tx_attr->inject_size == 256);
	EXPECT(fi->tx_attr->iov_limit == 8 && fi->tx_attr->rma_iov_limit == 1);
	EXPECT(fi->rx_attr->size == 256 && fi->rx_attr->iov_limit == 8);
	EXPECT(fi->rx_attr->total_buffered_recv == 0);
	EXPECT(fi->ep_attr->max_order_raw_size == 0xffffffffULL);
	EXPECT(fi->domain_attr->cq_cnt == 256);
	EXPECT(fi->domain_attr->ep_cnt == 65536);
	EXPECT(fi->domain_attr->mr_iov_limit == 1);
	EXPECT(fi->domain_attr->mr_cnt == 1 << 20);
	EXPECT(fi->domain_attr->max_ep_tx_ctx == 1);
	EXPECT(fi->domain_attr->max_ep_stx_ctx == 1);
	EXPECT(fi->domain_attr->max_ep_srx_ctx == 1);
	EXPECT(fi->domain_attr->av_type == FI_AV_UNSPEC);
	EXPECT(fi->tx_attr->comp_order == COMP_ORDER);
	EXPECT(fi->rx_attr->comp_order == COMP_ORDER);
	EXPECT(!strcmp(fi->domain_attr->name, "lo"));
	return NULL;
}

/* Every lo address, loopback last is trivially true here. */
static const char *want_all_lo(const struct fi_info *fi)
{
	const struct fi_info *e;

	EXPECT(count_info(fi) == n_lo4 + n_lo6);
	for (e = fi; e; e = e->next) {
		EXPECT(!strcmp(e->domain_attr->name, "lo"));
		EXPECT(sa_port(e->src_addr) == 0 && !e->dest_addr);
		EXPECT(e->fabric_attr->api_version == API);
	}
	return NULL;
}

static const char *want_no_rma(const struct fi_info *fi)
{
	EXPECT(fi->caps == (MSG_CAPS | COMM_CAPS | FI_MULTI_RECV));
	EXPECT(fi->domain_attr->mr_mode == 0);
	return want_all_lo(fi);
}

static const char *want_fi_info_view(const struct fi_info *fi)
{
	EXPECT(fi->caps == ALL_CAPS);
	/* FI_RX_CQ_DATA offered, but no cq_data_size asked: no CQ data */
	EXPECT(fi->mode == FI_MSG_PREFIX);
	EXPECT(fi->domain_attr->mr_mode == BASIC_MAP_OFF);
	return NULL;
}

static const char *want_msg(const struct fi_info *fi)
{
	EXPECT(fi->caps == MSG_CAPS);
	EXPECT(fi->tx_attr->caps == (FI_MSG | FI_SEND));
	EXPECT(fi->rx_attr->caps == (FI_MSG | FI_RECV));
	EXPECT(fi->domain_attr->mr_mode == 0);
	return NULL;
}

static const char *want_send_only(const struct fi_info *fi)
{
	EXPECT(fi->caps == (FI_MSG | FI_SEND));
	EXPECT(fi->tx_attr->caps == (FI_MSG | FI_SEND));
	EXPECT(fi->rx_attr->caps == 0);
	return NULL;
}

static const char *want_recv_only(const struct fi_info *fi)
{
	EXPECT(fi->caps == (FI_MSG | FI_RECV));
	EXPECT(fi->tx_attr->caps == 0);
	EXPECT(fi->rx_attr->caps == (FI_MSG | FI_RECV));
	return NULL;
}

static const char *want_msg_comm(const struct fi_info *fi)
{
	EXPECT(fi->caps == (MSG_CAPS | COMM_CAPS));
	return NULL;
}

static const char *want_rma(const struct fi_info *fi)
{
	EXPECT(fi->caps == RMA_CAPS);
	EXPECT(fi->tx_attr->caps == (FI_RMA | FI_READ | FI_WRITE));
	EXPECT(fi->rx_attr->caps == (FI_RMA | FI_REMOTE_READ |
				     FI_REMOTE_WRITE));
	EXPECT(fi->domain_attr->mr_mode == FI_MR_PROV_KEY);
	return NULL;
}

static const char *want_rma_read(const struct fi_info *fi)
{
	EXPECT(fi->caps == (FI_RMA | FI_READ));
	EXPECT(fi->tx_attr->caps == (FI_RMA | FI_READ));
	EXPECT(fi->rx_attr->caps == 0);
	EXPECT(fi->domain_attr->mr_mode == FI_MR_PROV_KEY);
	return NULL;
}

static const char *want_virt_no_rma(const struct fi_info *fi)
{
	EXPECT(!(fi->caps & RMA_CAPS));
	EXPECT(fi->domain_attr->mr_mode == 0);
	return NULL;
}

static const char *want_multi_recv(const struct fi_info *fi)
{
	EXPECT(fi->caps == (MSG_CAPS | FI_MULTI_RECV));
	EXPECT(fi->rx_attr->caps == (FI_MSG | FI_RECV | FI_MULTI_RECV));
	EXPECT(fi->tx_attr->caps == (FI_MSG | FI_SEND));
	EXPECT(fi->mode == 0);
	return NULL;
}

static const char *want_multi_recv_flags(const struct fi_info *fi)
{
	EXPECT(fi->rx_attr->op_flags == FI_MULTI_RECV);
	return want_multi_recv(fi);
}

static const char *want_msg_cq_data(const struct fi_info *fi)
{
	EXPECT(fi->domain_attr->cq_data_size == 4);
	EXPECT(fi->mode == FI_RX_CQ_DATA);
	EXPECT(fi->rx_attr->mode == FI_RX_CQ_DATA);
	EXPECT(fi->ep_attr->msg_prefix_size == 0);
	return NULL;
}

/* libfabric 2.x looks up addresses with these hints: a Write's CQ data
 * then completes without a receive */
static const char *want_msg_cq_data_norecv(const struct fi_info *fi)
{
	EXPECT(fi->domain_attr->cq_data_size == 4);
	EXPECT(!(fi->mode & FI_RX_CQ_DATA));
	EXPECT(!(fi->rx_attr->mode & FI_RX_CQ_DATA));
	return NULL;
}

static const char *want_prefix(const struct fi_info *fi)
{
	EXPECT(fi->mode == FI_MSG_PREFIX);
	EXPECT(fi->tx_attr->mode == FI_MSG_PREFIX &&
	       fi->rx_attr->mode == FI_MSG_PREFIX);
	EXPECT(fi->ep_attr->msg_prefix_size == 8);
	EXPECT(fi->domain_attr->cq_data_size == 0);
	return NULL;
}

static const char *want_pingpong(const struct fi_info *fi)
{
	/* it offers FI_MSG_PREFIX (and honours it): -k and plain alike */
	EXPECT(fi->mode == FI_MSG_PREFIX);
	EXPECT(fi->ep_attr->msg_prefix_size == 8);
	EXPECT(!(fi->domain_attr->mr_mode & FI_MR_LOCAL));
	EXPECT(fi->domain_attr->mr_mode == BASIC_MAP_OFF);
	EXPECT(fi->caps == MSG_CAPS);
	return NULL;
}

static const char *want_fabtests(const struct fi_info *fi)
{
	EXPECT(fi->caps == (MSG_CAPS | RMA_CAPS));
	EXPECT(fi->mode == 0);
	EXPECT(fi->domain_attr->mr_mode == BASIC_MAP_OFF);
	EXPECT(fi->fabric_attr->api_version == FI_VERSION(1, 9));
	return NULL;
}

static const char *want_basic_rma(const struct fi_info *fi)
{
	EXPECT(fi->domain_attr->mr_mode == TEST_MR_BASIC);
	EXPECT((fi->caps & RMA_CAPS) == RMA_CAPS);
	return NULL;
}

static const char *want_basic_all(const struct fi_info *fi)
{
	EXPECT(fi->caps == ALL_CAPS);
	return want_basic_rma(fi);
}

static const char *want_msg_tagged(const struct fi_info *fi)
{
	EXPECT(fi->ep_attr->type == FI_EP_MSG);
	EXPECT(fi->caps == (FI_TAGGED | FI_SEND | FI_RECV));
	EXPECT(fi->tx_attr->caps == (FI_TAGGED | FI_SEND));
	EXPECT(fi->rx_attr->caps == (FI_TAGGED | FI_RECV));
	EXPECT(fi->ep_attr->mem_tag_format == ~0ULL);
	EXPECT(fi->tx_attr->iov_limit == 7 && fi->rx_attr->iov_limit == 7);
	EXPECT(fi->domain_attr->cq_data_size == 0 && fi->mode == 0);
	return NULL;
}

static const char *want_rma_event(const struct fi_info *fi)
{
	EXPECT(fi->ep_attr->type != FI_EP_DGRAM);
	EXPECT(fi->caps == (RMA_CAPS | FI_RMA_EVENT));
	EXPECT(fi->rx_attr->caps & FI_RMA_EVENT);
	EXPECT(!(fi->tx_attr->caps & FI_RMA_EVENT));
	return NULL;
}

static const char *want_all_caps(const struct fi_info *fi)
{
	EXPECT(fi->caps == ALL_CAPS);
	return NULL;
}

#define WANT_THREADING(level)						\
static const char *want_##level(const struct fi_info *fi)		\
{									\
	EXPECT(fi->domain_attr->threading == level);			\
	return NULL;							\
}
WANT_THREADING(FI_THREAD_SAFE)
WANT_THREADING(FI_THREAD_DOMAIN)
WANT_THREADING(FI_THREAD_COMPLETION)
WANT_THREADING(FI_THREAD_ENDPOINT)
WANT_THREADING(FI_THREAD_FID)

/* FI_PROGRESS_AUTO asked for one of the two is echoed there only. */
static const char *want_data_auto(const struct fi_info *fi)
{
	EXPECT(fi->domain_attr->data_progress == FI_PROGRESS_AUTO &&
	       fi->domain_attr->control_progress == FI_PROGRESS_MANUAL);
	return NULL;
}

static const char *want_ctrl_auto(const struct fi_info *fi)
{
	EXPECT(fi->domain_attr->control_progress == FI_PROGRESS_AUTO &&
	       fi->domain_attr->data_progress == FI_PROGRESS_MANUAL);
	return NULL;
}

static const char *want_av_map(const struct fi_info *fi)
{
	EXPECT(fi->domain_attr->av_type == FI_AV_MAP);
	return NULL;
}

static const char *want_comp_strict(const struct fi_info *fi)
{
	EXPECT(fi->tx_attr->comp_order == TEST_ORDER_STRICT);
	return NULL;
}

static const char *want_tx_small(const struct fi_info *fi)
{
	EXPECT(fi->tx_attr->size == 64);
	EXPECT(fi->tx_attr->iov_limit == 2);
	EXPECT(fi->tx_attr->inject_size == 16);
	EXPECT(fi->rx_attr->size == 256);
	return NULL;
}

static const char *want_tx_max(const struct fi_info *fi)
{
	EXPECT(fi->tx_attr->size == 256 && fi->tx_attr->iov_limit == 8);
	EXPECT(fi->tx_attr->inject_size == 256);
	EXPECT(fi->tx_attr->rma_iov_limit == 1);
	return NULL;
}

static const char *want_rx_small(const struct fi_info *fi)
{
	EXPECT(fi->rx_attr->size == 32 && fi->rx_attr->iov_limit == 4);
	EXPECT(fi->rx_attr->total_buffered_recv == 0);
	return NULL;
}

static const char *want_tx_flags(const struct fi_info *fi)
{
	EXPECT(fi->tx_attr->op_flags == (FI_INJECT | FI_COMPLETION |
					 FI_FENCE));
	EXPECT(fi->rx_attr->op_flags == FI_COMPLETION);
	return NULL;
}

static const char *want_delivery(const struct fi_info *fi)
{
	EXPECT(fi->tx_attr->op_flags == FI_DELIVERY_COMPLETE);
	return NULL;
}

static const char *want_order(const struct fi_info *fi)
{
	EXPECT((fi->tx_attr->msg_order & (FI_ORDER_SAS | FI_ORDER_RAW)) ==
	       (FI_ORDER_SAS | FI_ORDER_RAW));
	EXPECT(fi->rx_attr->msg_order & FI_ORDER_SAS);
	return NULL;
}

static const char *want_raw_64(const struct fi_info *fi)
{
	EXPECT(fi->ep_attr->max_order_raw_size == 64);
	EXPECT(fi->ep_attr->max_order_waw_size == 0xffffffffULL);
	return NULL;
}

static const char *want_local_comm(const struct fi_info *fi)
{
	EXPECT(fi->domain_attr->caps == FI_LOCAL_COMM);
	return NULL;
}

/* Named AVs are shared by RDM endpoints (test_domfeat: not MSG). */
static const char *want_shared_av(const struct fi_info *fi)
{
	EXPECT(fi->ep_attr->type == FI_EP_RDM);
	EXPECT(fi->domain_attr->caps == FI_SHARED_AV);
	return NULL;
}

static const char *want_ipv4_only(const struct fi_info *fi)
{
	EXPECT(count_info(fi) == n_lo4);
	for (; fi; fi = fi->next)
		EXPECT(fi->addr_format == FI_SOCKADDR_IN);
	return NULL;
}

static const char *want_ipv6_only(const struct fi_info *fi)
{
	EXPECT(count_info(fi) == n_lo6);
	for (; fi; fi = fi->next)
		EXPECT(fi->addr_format == FI_SOCKADDR_IN6);
	return NULL;
}

/* FI_SOURCE 127.0.0.1:PORT: that address and port, nothing else. */
static const char *want_src_port(const struct fi_info *fi)
{
	EXPECT(count_info(fi) == 1);
	EXPECT(sa_is(fi->src_addr, "127.0.0.1"));
	EXPECT(sa_port(fi->src_addr) == PORT);
	EXPECT(!fi->dest_addr);
	EXPECT(!strcmp(fi->fabric_attr->name, "127.0.0.0/8"));
	return NULL;
}

/* Peer 127.0.0.1:PORT: IPv4 loopback only, source port 0. */
static const char *want_dest_port(const struct fi_info *fi)
{
	EXPECT(count_info(fi) == n_lo4);
	EXPECT(sa_is(fi->dest_addr, "127.0.0.1"));
	EXPECT(sa_port(fi->dest_addr) == PORT);
	EXPECT(sa_is(fi->src_addr, "127.0.0.1"));
	EXPECT(sa_port(fi->src_addr) == 0);
	return NULL;
}

static const char *want_dest6_port(const struct fi_info *fi)
{
	EXPECT(count_info(fi) == n_lo6);
	EXPECT(sa_is(fi->dest_addr, "::1"));
	EXPECT(sa_port(fi->dest_addr) == PORT);
	EXPECT(sa_is(fi->src_addr, "::1"));
	return NULL;
}

/* A port alone names our source port, on every entry. */
static const char *want_port_everywhere(const struct fi_info *fi)
{
	EXPECT(count_info(fi) == n_lo4 + n_lo6);
	for (; fi; fi = fi->next) {
		EXPECT(sa_port(fi->src_addr) == PORT);
		EXPECT(!fi->dest_addr);
	}
	return NULL;
}

static const char *want_any4(const struct fi_info *fi)
{
	EXPECT(count_info(fi) == n_lo4);
	EXPECT(sa_is(fi->src_addr, "127.0.0.1"));
	EXPECT(sa_port(fi->src_addr) == PORT);
	return NULL;
}

static const char *want_hint_dest(const struct fi_info *fi)
{
	EXPECT(count_info(fi) == n_lo4);
	EXPECT(sa_is(fi->dest_addr, "127.0.0.1"));
	EXPECT(sa_port(fi->dest_addr) == PORT + 1);
	EXPECT(sa_port(fi->src_addr) == 0);
	return NULL;
}

static const char *want_hint_src(const struct fi_info *fi)
{
	EXPECT(count_info(fi) == 1);
	EXPECT(sa_is(fi->src_addr, "127.0.0.1"));
	EXPECT(sa_port(fi->src_addr) == PORT + 2);
	EXPECT(!fi->dest_addr);
	return NULL;
}

static const char *want_lo4_entry(const struct fi_info *fi)
{
	EXPECT(count_info(fi) == 1);
	EXPECT(!strcmp(fi->fabric_attr->name, "127.0.0.0/8"));
	EXPECT(!strcmp(fi->domain_attr->name, "lo"));
	return NULL;
}

/* An application of the 1.x API on this build gets the 1.x answers. */
static const char *want_api1_msg(const struct fi_info *fi)
{
	EXPECT(fi->tx_attr->comp_order == TEST_ORDER_STRICT);
	EXPECT(fi->rx_attr->comp_order == TEST_ORDER_STRICT);
	EXPECT(fi->fabric_attr->api_version == FI_VERSION(1, 17));
	return NULL;
}

static const char *want_api1_rdm(const struct fi_info *fi)
{
	EXPECT(fi->domain_attr->av_type == FI_AV_MAP);
	return NULL;
}

/* ---- the table */

#define PINGPONG_HINTS							\
	.ep_type = FI_EP_MSG, .caps = FI_MSG,				\
	.mode = FI_CONTEXT | FI_CONTEXT2 | FI_MSG_PREFIX,		\
	.mr_mode = FI_MR_LOCAL | BASIC_MAP
#define FABTESTS_MR	(FI_MR_LOCAL | FI_MR_ENDPOINT | BASIC_MAP)

static const struct gi_case cases[] = {
	{ "no hints at all: everything we offer", .no_hints = true,
	  .check = want_defaults },
	{ "prov_name only (mr_mode 0): no RMA, mr_mode 0",
	  .check = want_no_rma },
	{ "fi_info's hints (mode ~0, mr_mode ~BASIC/SCALABLE)",
	  .h = { .mode = ~0ULL,
		 .mr_mode = ~(TEST_MR_BASIC | TEST_MR_SCALABLE) },
	  .check = want_fi_info_view },

	{ "FI_EP_MSG", .h = { .ep_type = FI_EP_MSG } },
	{ "FI_EP_RDM: tagged, directed, remote CQ data, RM enabled",
	  .h = { .ep_type = FI_EP_RDM }, .check = want_rdm },
	{ "FI_EP_DGRAM: UDP, unordered, one datagram, tagged, FI_SOURCE",
	  .h = { .ep_type = FI_EP_DGRAM }, .check = want_dgram },
	{ "FI_PROTO_IWARP", .h = { .protocol = FI_PROTO_IWARP } },
	{ "FI_PROTO_SOCK_TCP -> ENODATA",
	  .h = { .protocol = FI_PROTO_SOCK_TCP }, .expect = -FI_ENODATA },
	{ "protocol_version 2 -> ENODATA", .h = { .protocol_version = 2 },
	  .expect = -FI_ENODATA },

	{ "caps FI_MSG -> FI_MSG|FI_SEND|FI_RECV", .h = { .caps = FI_MSG },
	  .check = want_msg },
	{ "caps FI_MSG|FI_SEND stays send-only",
	  .h = { .caps = FI_MSG | FI_SEND }, .check = want_send_only },
	{ "caps FI_MSG|FI_RECV stays receive-only",
	  .h = { .caps = FI_MSG | FI_RECV }, .check = want_recv_only },
	{ "caps FI_MSG|FI_LOCAL_COMM|FI_REMOTE_COMM",
	  .h = { .caps = FI_MSG | COMM_CAPS }, .check = want_msg_comm },
	{ "caps FI_RMA + PROV_KEY|VIRT_ADDR -> every RMA direction",
	  .h = { .caps = FI_RMA,
		 .mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR },
	  .check = want_rma },
	{ "caps FI_RMA|FI_READ + PROV_KEY: read initiator only",
	  .h = { .caps = FI_RMA | FI_READ, .mr_mode = FI_MR_PROV_KEY },
	  .check = want_rma_read },
	{ "caps FI_RMA without FI_MR_PROV_KEY -> ENODATA",
	  .h = { .caps = FI_RMA, .mr_mode = FI_MR_VIRT_ADDR },
	  .expect = -FI_ENODATA },
	{ "no caps, mr_mode VIRT_ADDR only: RMA left out",
	  .h = { .mr_mode = FI_MR_VIRT_ADDR }, .check = want_virt_no_rma },
	{ "tx caps FI_RMA, mr_mode 0 -> ENODATA (RMA was asked)",
	  .h = { .tx_caps = FI_RMA }, .expect = -FI_ENODATA },
	{ "caps FI_MSG, tx caps FI_RMA -> ENODATA (not within caps)",
	  .h = { .caps = FI_MSG, .tx_caps = FI_RMA,
		 .mr_mode = FI_MR_PROV_KEY }, .expect = -FI_ENODATA },
	{ "caps FI_TAGGED on MSG: 64-bit tags, one iov for the header",
	  .h = { .ep_type = FI_EP_MSG, .caps = FI_TAGGED },
	  .check = want_msg_tagged },
	{ "caps FI_TAGGED|FI_MULTI_RECV on MSG -> ENODATA",
	  .h = { .ep_type = FI_EP_MSG, .caps = FI_TAGGED | FI_MULTI_RECV },
	  .expect = -FI_ENODATA },
	{ "caps FI_ATOMIC on MSG -> ENODATA",
	  .h = { .ep_type = FI_EP_MSG, .caps = FI_ATOMIC,
		 .mr_mode = FI_MR_PROV_KEY },
	  .expect = -FI_ENODATA },
	{ "caps FI_ATOMIC without PROV_KEY -> ENODATA",
	  .h = { .caps = FI_ATOMIC, .mr_mode = FI_MR_VIRT_ADDR },
	  .expect = -FI_ENODATA },
	{ "btl ofi's hints: RDM with RMA and atomics, delivery complete",
	  .h = { .ep_type = FI_EP_RDM, .caps = FI_RMA | FI_ATOMIC,
		 .mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
			    FI_MR_PROV_KEY,
		 .tx_op_flags = FI_DELIVERY_COMPLETE,
		 .av_type = FI_AV_MAP },
	  .check = want_rdm_osc },
	{ "caps FI_MSG|FI_MULTI_RECV on MSG: a receive-side cap",
	  .h = { .ep_type = FI_EP_MSG, .caps = FI_MSG | FI_MULTI_RECV },
	  .check = want_multi_recv },
	{ "caps FI_MSG|FI_DIRECTED_RECV -> ENODATA",
	  .h = { .ep_type = FI_EP_MSG, .caps = FI_MSG | FI_DIRECTED_RECV },
	  .expect = -FI_ENODATA },
	{ "caps FI_MSG|FI_SOURCE -> ENODATA",
	  .h = { .ep_type = FI_EP_MSG, .caps = FI_MSG | FI_SOURCE }, .expect = -FI_ENODATA },
	{ "caps FI_RMA|FI_RMA_EVENT: a target-side cap",
	  .h = { .caps = FI_RMA | FI_RMA_EVENT, .mr_mode = FI_MR_PROV_KEY },
	  .check = want_rma_event },
	{ "rx caps FI_MSG|FI_MULTI_RECV on MSG",
	  .h = { .ep_type = FI_EP_MSG, .caps = FI_MSG | FI_MULTI_RECV,
		 .rx_caps = FI_MSG | FI_MULTI_RECV },
	  .check = want_multi_recv },
	{ "rx caps FI_MULTI_RECV beyond caps FI_MSG -> ENODATA",
	  .h = { .ep_type = FI_EP_MSG, .caps = FI_MSG,
		 .rx_caps = FI_MSG | FI_MULTI_RECV },
	  .expect = -FI_ENODATA },

	{ "fi_pingpong -e msg hints: mode 0, no FI_MR_LOCAL",
	  .h = { PINGPONG_HINTS }, .check = want_pingpong },
	{ "fabtests defaults (API 1.9, FI_MSG|FI_RMA)",
	  .api = FI_VERSION(1, 9),
	  .h = { .ep_type = FI_EP_MSG, .caps = FI_MSG | FI_RMA,
		 .mode = FI_CONTEXT, .mr_mode = FABTESTS_MR },
	  .check = want_fabtests },
	{ "fabtests caps regression (all caps, FI_CONTEXT, old mr bits)",
	  .h = { .caps = ALL_CAPS, .mode = FI_CONTEXT,
		 .mr_mode = FI_MR_LOCAL | BASIC_MAP },
	  .check = want_all_caps },

	{ "API 1.4 FI_MR_BASIC + FI_RMA -> FI_MR_BASIC",
	  .api = FI_VERSION(1, 4),
	  .h = { .caps = FI_RMA, .mr_mode = TEST_MR_BASIC },
	  .check = want_basic_rma },
	{ "API 1.4 FI_MR_UNSPEC -> FI_MR_BASIC, all caps",
	  .api = FI_VERSION(1, 4), .check = want_basic_all },
	{ "API 1.4 FI_MR_SCALABLE -> ENODATA", .api = FI_VERSION(1, 4),
	  .h = { .mr_mode = TEST_MR_SCALABLE }, .expect = -FI_ENODATA },
	{ "API 1.4 with 1.5 mr_mode bits -> ENODATA",
	  .api = FI_VERSION(1, 4), .h = { .mr_mode = BASIC_MAP },
	  .expect = -FI_ENODATA },
	{ "this API: FI_MR_BASIC + FI_RMA -> FI_MR_BASIC",
	  .h = { .caps = FI_RMA, .mr_mode = TEST_MR_BASIC },
	  .check = want_basic_rma },
	{ "this API: FI_MR_SCALABLE -> ENODATA",
	  .h = { .mr_mode = TEST_MR_SCALABLE }, .expect = -FI_ENODATA },
	{ "this API: FI_MR_BASIC|FI_MR_LOCAL -> ENODATA",
	  .h = { .mr_mode = TEST_MR_BASIC | FI_MR_LOCAL },
	  .expect = -FI_ENODATA },

	{ "threading UNSPEC -> FI_THREAD_SAFE",
	  .check = want_FI_THREAD_SAFE },
	{ "threading FI_THREAD_DOMAIN echoed",
	  .h = { .threading = FI_THREAD_DOMAIN },
	  .check = want_FI_THREAD_DOMAIN },
	{ "threading FI_THREAD_COMPLETION echoed",
	  .h = { .threading = FI_THREAD_COMPLETION },
	  .check = want_FI_THREAD_COMPLETION },
	{ "threading FI_THREAD_ENDPOINT echoed",
	  .h = { .threading = FI_THREAD_ENDPOINT },
	  .check = want_FI_THREAD_ENDPOINT },
	{ "threading FI_THREAD_FID echoed",
	  .h = { .threading = FI_THREAD_FID }, .check = want_FI_THREAD_FID },
	{ "threading 42 -> ENODATA", .h = { .threading = 42 },
	  .expect = -FI_ENODATA },
	{ "data progress FI_PROGRESS_AUTO echoed",
	  .h = { .data_progress = FI_PROGRESS_AUTO }, .check = want_data_auto },
	{ "control progress FI_PROGRESS_AUTO echoed",
	  .h = { .ctrl_progress = FI_PROGRESS_AUTO },
	  .check = want_ctrl_auto },
	{ "data progress 42 -> ENODATA",
	  .h = { .data_progress = 42 }, .expect = -FI_ENODATA },
	{ "progress FI_PROGRESS_MANUAL",
	  .h = { .ctrl_progress = FI_PROGRESS_MANUAL,
		 .data_progress = FI_PROGRESS_MANUAL } },
	{ "resource_mgmt FI_RM_ENABLED on MSG (a Send waits for its receive)",
	  .h = { .ep_type = FI_EP_MSG, .rm = FI_RM_ENABLED } },
	{ "resource_mgmt FI_RM_DISABLED", .h = { .rm = FI_RM_DISABLED } },
	{ "av_type FI_AV_MAP echoed", .h = { .av_type = FI_AV_MAP },
	  .check = want_av_map },

	{ "tx size 64, iov_limit 2, inject_size 16 echoed",
	  .h = { .tx_size = 64, .tx_iov = 2, .tx_inject = 16 },
	  .check = want_tx_small },
	{ "tx limits exactly ours",
	  .h = { .tx_size = 256, .tx_iov = 8, .tx_inject = 256,
		 .tx_rma_iov = 1 }, .check = want_tx_max },
	{ "tx size 257 -> ENODATA", .h = { .tx_size = 257 },
	  .expect = -FI_ENODATA },
	{ "tx iov_limit 9 -> ENODATA", .h = { .tx_iov = 9 },
	  .expect = -FI_ENODATA },
	{ "tx inject_size 257: DGRAM entries only (MSG, RDM inject <= 256)",
	  .h = { .tx_inject = 257 }, .check_all = want_dgram_only },
	{ "tx rma_iov_limit 2 -> ENODATA", .h = { .tx_rma_iov = 2 },
	  .expect = -FI_ENODATA },
	{ "rx size 32, iov_limit 4, total_buffered_recv ignored",
	  .h = { .rx_size = 32, .rx_iov = 4, .rx_buffered = 4096 },
	  .check = want_rx_small },
	{ "rx size 512 -> ENODATA", .h = { .rx_size = 512 },
	  .expect = -FI_ENODATA },
	{ "rx iov_limit 9 -> ENODATA", .h = { .rx_iov = 9 },
	  .expect = -FI_ENODATA },
	{ "op_flags FI_INJECT|FI_COMPLETION|FI_FENCE, rx FI_COMPLETION",
	  .h = { .tx_op_flags = FI_INJECT | FI_COMPLETION | FI_FENCE,
		 .rx_op_flags = FI_COMPLETION }, .check = want_tx_flags },
	{ "tx op_flags FI_DELIVERY_COMPLETE echoed",
	  .h = { .tx_op_flags = FI_DELIVERY_COMPLETE },
	  .check = want_delivery },
	{ "tx op_flags FI_COMMIT_COMPLETE -> ENODATA",
	  .h = { .tx_op_flags = FI_COMMIT_COMPLETE }, .expect = -FI_ENODATA },
	{ "rx op_flags FI_MULTI_RECV echoed on MSG (fi_multi_recv's hints)",
	  .h = { .ep_type = FI_EP_MSG, .caps = FI_MSG | FI_MULTI_RECV,
		 .mode = FI_CONTEXT, .rx_op_flags = FI_MULTI_RECV },
	  .check = want_multi_recv_flags },
	{ "msg_order FI_ORDER_SAS|FI_ORDER_RAW",
	  .h = { .tx_order = FI_ORDER_SAS | FI_ORDER_RAW,
		 .rx_order = FI_ORDER_SAS }, .check = want_order },
	{ "tx msg_order FI_ORDER_WAR -> ENODATA",
	  .h = { .tx_order = FI_ORDER_WAR }, .expect = -FI_ENODATA },
	{ "rx msg_order FI_ORDER_WAR -> ENODATA",
	  .h = { .rx_order = FI_ORDER_WAR }, .expect = -FI_ENODATA },
	{ "tx comp_order FI_ORDER_STRICT",
	  .h = { .tx_comp_order = TEST_ORDER_STRICT },
	  .check = want_comp_strict },
	{ "rx comp_order FI_ORDER_DATA -> ENODATA",
	  .h = { .rx_comp_order = TEST_ORDER_DATA }, .expect = -FI_ENODATA },

	{ "max_msg_size 4096", .h = { .max_msg_size = 4096 } },
	{ "max_msg_size 2^32 -> ENODATA", .h = { .max_msg_size = 1ULL << 32 },
	  .expect = -FI_ENODATA },
	{ "max_order_raw_size 64 with RMA echoed",
	  .h = { .caps = FI_RMA, .mr_mode = FI_MR_PROV_KEY,
		 .max_order_raw_size = 64 }, .check = want_raw_64 },
	{ "max_order_raw_size 2^32 -> ENODATA",
	  .h = { .max_order_raw_size = 1ULL << 32 }, .expect = -FI_ENODATA },
	{ "ep tx_ctx_cnt 1", .h = { .ep_tx_ctx = 1, .ep_rx_ctx = 1 } },
	{ "ep tx_ctx_cnt FI_SHARED_CONTEXT",
	  .h = { .ep_tx_ctx = FI_SHARED_CONTEXT } },
	/* RDM's scalable endpoints have up to 32 contexts */
	{ "ep rx_ctx_cnt 33 -> ENODATA", .h = { .ep_rx_ctx = 33 },
	  .expect = -FI_ENODATA },
	{ "ep auth_key_size 8 -> ENODATA", .h = { .ep_auth_key_size = 8 },
	  .expect = -FI_ENODATA },
	{ "domain caps FI_LOCAL_COMM echoed",
	  .h = { .domain_caps = FI_LOCAL_COMM }, .check = want_local_comm },
	{ "domain caps FI_SHARED_AV on RDM echoed",
	  .h = { .ep_type = FI_EP_RDM, .domain_caps = FI_SHARED_AV },
	  .check = want_shared_av },
	{ "cq_data_size 4 without FI_RX_CQ_DATA on MSG: none required",
	  .h = { .ep_type = FI_EP_MSG, .cq_data_size = 4 },
	  .check = want_msg_cq_data_norecv },
	{ "cq_data_size 4 + FI_RX_CQ_DATA on MSG (fi_cq_data's hints)",
	  .h = { .ep_type = FI_EP_MSG, .caps = FI_MSG, .cq_data_size = 4,
		 .mode = FI_CONTEXT | FI_RX_CQ_DATA },
	  .check = want_msg_cq_data },
	{ "cq_data_size 8 -> ENODATA on MSG (4 at most)",
	  .h = { .ep_type = FI_EP_MSG, .cq_data_size = 8,
		 .mode = FI_RX_CQ_DATA }, .expect = -FI_ENODATA },
	{ "FI_MSG_PREFIX offered on MSG (fi_msg_pingpong -k)",
	  .h = { .ep_type = FI_EP_MSG, .caps = FI_MSG,
		 .mode = FI_CONTEXT | FI_MSG_PREFIX },
	  .check = want_prefix },
	{ "cq_cnt 1000 -> ENODATA", .h = { .cq_cnt = 1000 },
	  .expect = -FI_ENODATA },
	{ "mr_iov_limit 2 -> ENODATA", .h = { .mr_iov_limit = 2 },
	  .expect = -FI_ENODATA },
	{ "prov_version 255.0 -> ENODATA",
	  .h = { .prov_version = FI_VERSION(255, 0) },
	  .expect = -FI_ENODATA },

	{ "addr_format FI_SOCKADDR_IN", .h = { .addr_format = FI_SOCKADDR_IN },
	  .check = want_ipv4_only },
	{ "addr_format FI_SOCKADDR", .h = { .addr_format = FI_SOCKADDR },
	  .check = want_all_lo },
	{ "addr_format FI_ADDR_STR -> ENODATA",
	  .h = { .addr_format = FI_ADDR_STR }, .expect = -FI_ENODATA },
	{ "addr_format FI_SOCKADDR_IB -> ENODATA",
	  .h = { .addr_format = FI_SOCKADDR_IB }, .expect = -FI_ENODATA },

	{ "FI_SOURCE 127.0.0.1:" PORT_S, .node = "127.0.0.1",
	  .service = PORT_S, .flags = FI_SOURCE, .check = want_src_port },
	{ "peer 127.0.0.1:" PORT_S " (no FI_SOURCE)", .node = "127.0.0.1",
	  .service = PORT_S, .check = want_dest_port },
	{ "service " PORT_S " alone: our source port", .service = PORT_S,
	  .check = want_port_everywhere },
	{ "service " PORT_S " alone with FI_SOURCE", .service = PORT_S,
	  .flags = FI_SOURCE, .check = want_port_everywhere },
	{ "FI_SOURCE 0.0.0.0:" PORT_S ": every IPv4 interface",
	  .node = "0.0.0.0", .service = PORT_S, .flags = FI_SOURCE,
	  .check = want_any4 },
	{ "FI_SOURCE " FAR_HOST " (not ours) -> ENODATA", .node = FAR_HOST,
	  .flags = FI_SOURCE | FI_NUMERICHOST, .expect = -FI_ENODATA },
	{ "peer " FAR_HOST " from lo only -> ENODATA", .node = FAR_HOST,
	  .service = PORT_S, .expect = -FI_ENODATA },
	{ "hints->dest_addr 127.0.0.1:23901",
	  .h = { .dest_host = "127.0.0.1", .dest_port = "23901" },
	  .check = want_hint_dest },
	{ "hints->src_addr 127.0.0.1:23902",
	  .h = { .src_host = "127.0.0.1", .src_port = "23902" },
	  .check = want_hint_src },
	{ "hints->src_addr " FAR_HOST " -> ENODATA",
	  .h = { .src_host = FAR_HOST, .src_port = "0" },
	  .expect = -FI_ENODATA },
	{ "FI_SOURCE node wins over hints->src_addr", .node = "127.0.0.1",
	  .service = PORT_S, .flags = FI_SOURCE,
	  .h = { .src_host = FAR_HOST, .src_port = "1" },
	  .check = want_src_port },
	{ "service alone: hints->dest_addr ignored (fi_getinfo(3))",
	  .service = PORT_S,
	  .h = { .dest_host = "127.0.0.1", .dest_port = "23901" },
	  .check = want_port_everywhere },
	{ "peer node wins over hints->dest_addr", .node = "127.0.0.1",
	  .service = PORT_S, .h = { .dest_host = FAR_HOST, .dest_port = "1" },
	  .check = want_dest_port },

	{ "fabric 127.0.0.0/8 + domain lo",
	  .h = { .fabric = "127.0.0.0/8", .domain = "lo" },
	  .check = want_lo4_entry },
	{ "unknown fabric name -> ENODATA",
	  .h = { .fabric = "10.255.255.0/24" }, .expect = -FI_ENODATA },
	{ "unknown domain name -> ENODATA", .h = { .domain = "nosuchif0" },
	  .expect = -FI_ENODATA },
	{ "OFI_CORE_PROV_ONLY (ofi_rxm asking) -> ENODATA",
	  .flags = OFI_CORE_PROV_ONLY, .expect = -FI_ENODATA },

	{ "API 1.17: MSG comp_order FI_ORDER_STRICT",
	  .api = FI_VERSION(1, 17), .h = { .ep_type = FI_EP_MSG },
	  .check = want_api1_msg },
	{ "API 1.17: RDM av_type FI_AV_MAP", .api = FI_VERSION(1, 17),
	  .h = { .ep_type = FI_EP_RDM }, .check = want_api1_rdm },
};

/* What only 2.x headers can ask; skips on 1.x, so N_CASES_V2 there. */
#if TEST_API_V2
static const char *want_manual(const struct fi_info *fi)
{
	EXPECT(fi->domain_attr->progress == FI_PROGRESS_MANUAL);
	EXPECT(fi->domain_attr->control_progress == FI_PROGRESS_MANUAL);
	return NULL;
}

static const char *want_later_fields(const struct fi_info *fi)
{
#if TEST_API >= FI_VERSION(2, 5)
	EXPECT(fi->domain_attr->max_cntr_value == UINT64_MAX);
	EXPECT(fi->domain_attr->max_err_cntr_value == UINT64_MAX);
#endif
	EXPECT(fi->domain_attr->max_ep_auth_key == 1);
	EXPECT(fi->domain_attr->max_group_id == 0);
	return NULL;
}

static const struct gi_case cases_v2[] = {
	{ "2.x: progress FI_PROGRESS_CONTROL_UNIFIED met, manual",
	  .h = { .data_progress = FI_PROGRESS_CONTROL_UNIFIED },
	  .check = want_manual },
	{ "2.x: control progress FI_PROGRESS_CONTROL_UNIFIED met",
	  .h = { .ctrl_progress = FI_PROGRESS_CONTROL_UNIFIED },
	  .check = want_manual },
	{ "API 1.17: FI_PROGRESS_CONTROL_UNIFIED (2.x) -> ENODATA",
	  .api = FI_VERSION(1, 17),
	  .h = { .data_progress = FI_PROGRESS_CONTROL_UNIFIED },
	  .expect = -FI_ENODATA },
	{ "2.x: full counter range, one auth key per endpoint, no peer groups",
	  .check = want_later_fields },
	{ "2.x: max_ep_auth_key 2 -> ENODATA",
	  .h = { .max_ep_auth_key = 2 }, .expect = -FI_ENODATA },
	{ "2.x: max_group_id 1 -> ENODATA", .h = { .max_group_id = 1 },
	  .expect = -FI_ENODATA },
	{ "2.x: caps FI_TAGGED_DIRECTED_RECV -> ENODATA",
	  .h = { .ep_type = FI_EP_RDM,
		 .caps = FI_TAGGED | FI_TAGGED_DIRECTED_RECV },
	  .expect = -FI_ENODATA },
	{ "2.x: caps FI_TAGGED_MULTI_RECV -> ENODATA",
	  .h = { .ep_type = FI_EP_RDM,
		 .caps = FI_TAGGED | FI_TAGGED_MULTI_RECV },
	  .expect = -FI_ENODATA },
};
#define N_CASES_V2 (sizeof(cases_v2) / sizeof(cases_v2[0]))
#else
#define N_CASES_V2 8
#endif

/* Cases that depend on ::1 being configured. */
static const struct gi_case cases_ipv6[] = {
	{ "addr_format FI_SOCKADDR_IN6",
	  .h = { .addr_format = FI_SOCKADDR_IN6 }, .check = want_ipv6_only },
	{ "peer [::1]:" PORT_S, .node = "::1", .service = PORT_S,
	  .check = want_dest6_port },
};

static const struct gi_case case_no_ipv6 = {
	"addr_format FI_SOCKADDR_IN6 without ::1 -> ENODATA",
	.h = { .addr_format = FI_SOCKADDR_IN6 }, .expect = -FI_ENODATA,
};

/* ---- interface order on every interface (fresh process) */

static void count_lo(void)
{
	struct ifaddrs *list, *ifa;

	if (getifaddrs(&list))
		return;
	for (ifa = list; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || !(ifa->ifa_flags & IFF_UP) ||
		    strcmp(ifa->ifa_name, "lo"))
			continue;
		n_lo4 += ifa->ifa_addr->sa_family == AF_INET;
		n_lo6 += ifa->ifa_addr->sa_family == AF_INET6;
	}
	freeifaddrs(list);
}

/* A non-loopback IPv4 address of an interface that is up, or false. */
static bool find_ipv4(char *buf, size_t len)
{
	struct ifaddrs *list, *ifa;
	bool found = false;

	if (getifaddrs(&list))
		return false;
	for (ifa = list; ifa && !found; ifa = ifa->ifa_next) {
		const struct sockaddr_in *sin = (const void *)ifa->ifa_addr;

		if (!sin || !(ifa->ifa_flags & IFF_UP) ||
		    (ifa->ifa_flags & IFF_LOOPBACK) ||
		    sin->sin_family != AF_INET)
			continue;
		found = inet_ntop(AF_INET, &sin->sin_addr, buf, len) != NULL;
	}
	freeifaddrs(list);
	return found;
}

/* True if the CIDR fabric name holds host (IPv4). */
static bool fabric_holds(const char *fabric, const char *host)
{
	struct in_addr net, a;
	char buf[64];
	char *slash;
	long prefix;
	uint32_t mask;

	snprintf(buf, sizeof(buf), "%s", fabric);
	slash = strchr(buf, '/');
	if (!slash)
		return false;
	*slash = '\0';
	prefix = strtol(slash + 1, NULL, 10);
	if (inet_pton(AF_INET, buf, &net) != 1 ||
	    inet_pton(AF_INET, host, &a) != 1 || prefix < 0 || prefix > 32)
		return false;
	mask = prefix ? htonl(~0U << (32 - prefix)) : 0;
	return (a.s_addr & mask) == net.s_addr;
}

static int peer_getinfo(const char *node, struct fi_info **info)
{
	struct fi_info *h = hints_new();
	int ret;

	ret = fi_getinfo(API, node, PORT_S, FI_NUMERICHOST, h, info);
	fi_freeinfo(h);
	if (ret)
		*info = NULL;
	return ret;
}

static void check_loopback_last(void)
{
	struct fi_info *h = hints_new(), *info = NULL;
	const struct fi_info *fi;
	bool seen_lo = false, ok;

	ok = !fi_getinfo(API, NULL, NULL, 0, h, &info);
	for (fi = info; ok && fi; fi = fi->next) {
		bool lo = sa_is_loopback(fi->src_addr);

		ok = !(seen_lo && !lo);
		seen_lo |= lo;
	}
	tap_ok(ok && seen_lo, "all interfaces: loopback entries last");
	fi_freeinfo(info);
	fi_freeinfo(h);
}

static void check_peer_order(const char *local)
{
	struct fi_info *info;
	const struct fi_info *fi;
	bool ok;

	ok = !peer_getinfo(local, &info) && info &&
	     fabric_holds(info->fabric_attr->name, local) &&
	     sa_is(info->dest_addr, local);
	for (fi = info; ok && fi; fi = fi->next)
		ok = fi->addr_format == FI_SOCKADDR_IN &&
		     !sa_is_loopback(fi->src_addr);
	tap_ok(ok, "peer %s: its subnet first, IPv4 only, no loopback",
	       local);
	fi_freeinfo(info);

	ok = !peer_getinfo(FAR_HOST, &info) && info;
	for (fi = info; ok && fi; fi = fi->next)
		ok = fi->addr_format == FI_SOCKADDR_IN &&
		     !sa_is_loopback(fi->src_addr);
	tap_ok(ok, "peer %s off every subnet: non-loopback IPv4 entries",
	       FAR_HOST);
	fi_freeinfo(info);

	ok = !peer_getinfo("127.0.0.1", &info) && info;
	for (fi = info; ok && fi; fi = fi->next)
		ok = !strcmp(fi->domain_attr->name, "lo") &&
		     fi->addr_format == FI_SOCKADDR_IN;
	tap_ok(ok, "peer 127.0.0.1: IPv4 loopback entries only");
	fi_freeinfo(info);
}

/* The last non-loopback entry of `format`, copied; NULL if < 2 subnets. */
static struct fi_info *last_of_two(uint32_t format)
{
	struct fi_info *h = hints_new(), *info = NULL, *last = NULL;
	const struct fi_info *fi, *first = NULL;

	h->addr_format = format;
	if (fi_getinfo(API, NULL, NULL, 0, h, &info))
		info = NULL;
	for (fi = info; fi; fi = fi->next) {
		if (sa_is_loopback(fi->src_addr))
			continue;
		if (!first)
			first = fi;
		else if (strcmp(first->fabric_attr->name,
				fi->fabric_attr->name))
			last = (struct fi_info *)fi;
	}
	if (last) {
		last = fi_dupinfo(last);
		if (last)
			last->next = NULL;
	}
	fi_freeinfo(info);
	fi_freeinfo(h);
	return last;
}

/*
 * A peer on the subnet that comes last without a peer must come first
 * with it. Needs two subnets of one family (e.g. a global and a
 * link-local IPv6 one); the peer is given without scope.
 */
static void check_rank(int family, uint32_t format)
{
	struct fi_info *last = last_of_two(format), *info;
	const void *in;
	char host[INET6_ADDRSTRLEN];
	bool ok;

	if (!last) {
		tap_skip_n(1, "%s rank: fewer than two subnets here",
			   family == AF_INET6 ? "IPv6" : "IPv4");
		return;
	}
	in = family == AF_INET6 ?
	     (const void *)&((struct sockaddr_in6 *)last->src_addr)->sin6_addr :
	     (const void *)&((struct sockaddr_in *)last->src_addr)->sin_addr;
	inet_ntop(family, in, host, sizeof(host));
	ok = !peer_getinfo(host, &info) && info &&
	     !strcmp(info->fabric_attr->name, last->fabric_attr->name);
	tap_ok(ok, "peer %s: %s moves first (got %s)", host,
	       last->fabric_attr->name, info ? info->fabric_attr->name : "-");
	fi_freeinfo(info);
	fi_freeinfo(last);
}

static int main_all_ifaces(void)
{
	char local[INET_ADDRSTRLEN];

	unsetenv("FI_IWARP_IFACE");
	check_rank(AF_INET, FI_SOCKADDR_IN);
	check_rank(AF_INET6, FI_SOCKADDR_IN6);
	if (!find_ipv4(local, sizeof(local))) {
		/* the four checks below */
		tap_skip_n(4, "entry order: no non-loopback IPv4 interface");
		return tap_done();
	}
	check_loopback_last();
	check_peer_order(local);
	return tap_done();
}

/*
 * Runs this program in all-ifaces mode and reports each of its results as
 * one of ours (a skip stays a skip), then its exit status.
 */
static void run_all_ifaces(const char *self)
{
	char *const args[] = { "test_getinfo", "all-ifaces", NULL };
	posix_spawn_file_actions_t fa;
	char line[512];
	int pfd[2], ret, n = 0;
	FILE *f;
	pid_t pid;

	if (pipe(pfd)) {
		tap_ok(0, "all-ifaces: pipe: %s", strerror(errno));
		return;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, pfd[0]);
	fflush(stdout);
	if (!strchr(self, '/'))
		self = "/proc/self/exe";
	ret = posix_spawn(&pid, self, &fa, NULL, args, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	while (!ret && f && fgets(line, sizeof(line), f)) {
		char *text = strstr(line, " - ");

		line[strcspn(line, "\n")] = 0;
		if (!text)
			continue;
		n++;
		if (!strncmp(line, "not ok ", 7))
			tap_ok(0, "all-ifaces: %s", text + 3);
		else if (!strncmp(line, "ok ", 3))
			printf("ok %d - all-ifaces: %s\n", ++tap_n, text + 3);
	}
	if (f)
		fclose(f);
	else
		close(pfd[0]);
	if (ret) {
		tap_ok(0, "all-ifaces: posix_spawn: %s", strerror(ret));
		return;
	}
	tap_child(pid, 60, "all-ifaces");
	tap_diag("all-ifaces reported %d results", n);
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc > 1 && !strcmp(argv[1], "all-ifaces"))
		return main_all_ifaces();
	if (!getenv("FI_PROVIDER_PATH"))
		tap_diag("FI_PROVIDER_PATH is not set: iwarp may not load");
	/* before the first libfabric call: the provider reads it at load */
	setenv("FI_IWARP_IFACE", "lo", 1);
	count_lo();
	tap_diag("lo has %zu IPv4 and %zu IPv6 addresses", n_lo4, n_lo6);
	if (!tap_ok(n_lo4 == 1, "lo has 127.0.0.1"))
		return tap_done();

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
	if (n_lo6) {
		for (i = 0; i < sizeof(cases_ipv6) / sizeof(cases_ipv6[0]);
		     i++)
			run_case(&cases_ipv6[i]);
	} else {
		run_case(&case_no_ipv6);
		tap_skip_n((int)(sizeof(cases_ipv6) / sizeof(cases_ipv6[0])) - 1,
			   "an IPv6 case: lo has no ::1");
	}
#if TEST_API_V2
	for (i = 0; i < N_CASES_V2; i++)
		run_case(&cases_v2[i]);
#else
	tap_skip_n(N_CASES_V2, "a case of the 2.x API: 1.x headers");
#endif
	run_all_ifaces(argv[0]);
	return tap_done();
}
