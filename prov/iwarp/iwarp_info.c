/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_getinfo: one fi_info per usable interface address. The fabric is the
 * IP subnet in CIDR form ("192.168.5.0/24"), the domain is the interface
 * ("eth0"), info->nic its hardware (iwarp_nic.c); the NICs nearest to
 * the caller's CPU binding come first and loopback last, so that
 * consumers which take the first entry (Open MPI) use a real network
 * close to them.
 *
 * Entries come per endpoint type (RDM, MSG, then DGRAM, so that a
 * consumer taking the first entry never gets an unreliable one), with
 * attributes iwarp_attr.c builds once per type from the hints; this file
 * picks the interfaces that fit
 * the names, address format and addresses asked for, and gives each
 * entry its names and addresses. The libfabric core does none of this
 * for external providers.
 */
#include "iwarp_attr.h"
#include "iwarp_nic.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True if `want` names host address `have`; a wildcard names them all. */
static bool iwarp_sa_same_host(const struct sockaddr *want,
			       const struct sockaddr *have)
{
	const struct sockaddr_in6 *w6 = (const void *)want;
	const struct sockaddr_in6 *h6 = (const void *)have;
	const uint8_t *w, *h;
	size_t wlen, hlen;

	if (want->sa_family != have->sa_family)
		return false;
	if (iwarp_addr_is_any(want))
		return true;
	w = iwarp_addr_octets(want, &wlen);
	h = iwarp_addr_octets(have, &hlen);
	if (memcmp(w, h, wlen))
		return false;
	/* fe80::1 exists once per link: the scope tells them apart. */
	return want->sa_family != AF_INET6 || !w6->sin6_scope_id ||
	       w6->sin6_scope_id == h6->sin6_scope_id;
}

static bool iwarp_addr_format_ok(uint32_t format)
{
	switch (format) {
	case FI_FORMAT_UNSPEC:
	case FI_SOCKADDR:
	case FI_SOCKADDR_IN:
	case FI_SOCKADDR_IN6:
		return true;
	default:
		return iwarp_reject("addr_format %u not supported\n", format);
	}
}

/* Addressing asked for through node/service/flags and hints. */
struct iwarp_req {
	struct addrinfo *src;		/* source candidates (FI_SOURCE) */
	const struct sockaddr *hint_src;
	union iwarp_sockaddr dest;
	bool has_dest;
	uint16_t port;			/* source port, network order */
};

static int iwarp_family(const struct fi_info *hints)
{
	if (!hints)
		return AF_UNSPEC;
	if (hints->addr_format == FI_SOCKADDR_IN)
		return AF_INET;
	if (hints->addr_format == FI_SOCKADDR_IN6)
		return AF_INET6;
	return AF_UNSPEC;
}

static int iwarp_resolve(const char *node, const char *service,
			 uint64_t flags, const struct fi_info *hints,
			 bool source, struct addrinfo **res)
{
	struct addrinfo ai = {
		.ai_family = iwarp_family(hints),
		.ai_socktype = SOCK_STREAM,
	};
	int ret;

	if (source)
		ai.ai_flags |= AI_PASSIVE;
	if (flags & FI_NUMERICHOST)
		ai.ai_flags |= AI_NUMERICHOST;
	ret = getaddrinfo(node, service, &ai, res);
	if (ret) {
		FI_INFO(&iwarp_prov, FI_LOG_CORE, "cannot resolve %s:%s: %s\n",
			node ? node : "", service ? service : "",
			gai_strerror(ret));
		return -FI_ENODATA;
	}
	return 0;
}

/*
 * Records node/service: the source with FI_SOURCE, or without a node
 * (a server naming only its port, as libfabric's providers read it);
 * otherwise the peer.
 */
static int iwarp_req_node(struct iwarp_req *req, const char *node,
			  const char *service, uint64_t flags,
			  const struct fi_info *hints)
{
	bool source = (flags & FI_SOURCE) || !node;
	struct addrinfo *res;
	int ret;

	ret = iwarp_resolve(node, service, flags, hints, source, &res);
	if (ret)
		return ret;
	if (!source) {
		memcpy(&req->dest, res->ai_addr, iwarp_sa_len(res->ai_addr));
		req->has_dest = true;
		freeaddrinfo(res);
		return 0;
	}
	req->port = iwarp_addr_port(res->ai_addr);
	if (node)
		req->src = res;
	else
		freeaddrinfo(res);
	return 0;
}

/*
 * fi_getinfo(3): hints->src_addr is ignored with FI_SOURCE (node and
 * service are the source then), hints->dest_addr unless FI_SOURCE is
 * set or node and service are both NULL.
 */
static int iwarp_req_hints(struct iwarp_req *req, const struct fi_info *hints,
			   bool source, bool named)
{
	if (hints->src_addr && !source) {
		if (!iwarp_addr_valid(hints->src_addr, hints->src_addrlen))
			return -FI_ENODATA;
		req->hint_src = hints->src_addr;
		if (!req->port)
			req->port = iwarp_addr_port(req->hint_src);
	}
	if (hints->dest_addr && (source || !named)) {
		if (!iwarp_addr_valid(hints->dest_addr, hints->dest_addrlen))
			return -FI_ENODATA;
		memcpy(&req->dest, hints->dest_addr,
		       iwarp_sa_len(hints->dest_addr));
		req->has_dest = true;
	}
	return 0;
}

static void iwarp_req_fini(struct iwarp_req *req)
{
	if (req->src)
		freeaddrinfo(req->src);
}

static int iwarp_req_init(struct iwarp_req *req, const char *node,
			  const char *service, uint64_t flags,
			  const struct fi_info *hints)
{
	bool named = node || service;
	int ret = 0;

	memset(req, 0, sizeof(*req));
	if (named)
		ret = iwarp_req_node(req, node, service, flags, hints);
	if (!ret && hints)
		ret = iwarp_req_hints(req, hints, named && (flags & FI_SOURCE),
				      named);
	if (ret)
		iwarp_req_fini(req);
	return ret;
}

static bool iwarp_src_fits(const struct iwarp_iface *ifc,
			   const struct iwarp_req *req)
{
	const struct addrinfo *ai;

	if (req->hint_src && !iwarp_sa_same_host(req->hint_src, &ifc->addr.sa))
		return false;
	if (!req->src)
		return true;
	for (ai = req->src; ai; ai = ai->ai_next)
		if (iwarp_sa_same_host(ai->ai_addr, &ifc->addr.sa))
			return true;
	return false;
}

/*
 * Loopback reaches only loopback and a peer on another host needs a real
 * interface; a scoped link-local peer is reachable on its link only.
 */
static bool iwarp_dest_fits(const struct iwarp_iface *ifc,
			    const union iwarp_sockaddr *dest)
{
	const struct sockaddr_in6 *d6 = &dest->sin6;

	if (dest->sa.sa_family != ifc->addr.sa.sa_family)
		return false;
	if (ifc->loopback != iwarp_addr_is_loopback(&dest->sa))
		return false;
	if (dest->sa.sa_family != AF_INET6 || !d6->sin6_scope_id ||
	    !IN6_IS_ADDR_LINKLOCAL(&d6->sin6_addr))
		return true;
	return d6->sin6_scope_id == iwarp_iface_index(ifc);
}

static bool iwarp_names_fit(const struct iwarp_iface *ifc,
			    const struct fi_info *hints)
{
	if (hints->fabric_attr && hints->fabric_attr->name &&
	    strcmp(hints->fabric_attr->name, ifc->fabric))
		return false;
	return !hints->domain_attr || !hints->domain_attr->name ||
	       !strcmp(hints->domain_attr->name, ifc->name);
}

static bool iwarp_iface_fits(const struct iwarp_iface *ifc,
			     const struct fi_info *hints,
			     const struct iwarp_req *req)
{
	int family = iwarp_family(hints);

	if (family != AF_UNSPEC && family != ifc->addr.sa.sa_family)
		return false;
	if (hints && !iwarp_names_fit(ifc, hints))
		return false;
	if (req->has_dest && !iwarp_dest_fits(ifc, &req->dest))
		return false;
	return iwarp_src_fits(ifc, req);
}

/*
 * Where an interface goes in the reply: 0 first, 1 after, -1 not at all.
 * With a peer address, the interfaces on the peer's subnet come first.
 */
static int iwarp_iface_rank(const struct iwarp_iface *ifc,
			    const struct fi_info *hints,
			    const struct iwarp_req *req)
{
	if (!iwarp_iface_fits(ifc, hints, req))
		return -1;
	if (!req->has_dest || iwarp_iface_has(ifc, &req->dest.sa))
		return 0;
	return 1;
}

static void *iwarp_sa_dup(const union iwarp_sockaddr *a, size_t *len)
{
	void *p;

	*len = iwarp_sa_len(&a->sa);
	p = malloc(*len);
	if (p)
		memcpy(p, a, *len);
	return p;
}

/* The interface address with the requested source port, and the peer. */
static int iwarp_info_addrs(struct fi_info *fi, const struct iwarp_iface *ifc,
			    const struct iwarp_req *req)
{
	union iwarp_sockaddr src = ifc->addr;

	fi->addr_format = src.sa.sa_family == AF_INET6 ? FI_SOCKADDR_IN6 :
							 FI_SOCKADDR_IN;
	iwarp_addr_set_port(&src, req->port);
	fi->src_addr = iwarp_sa_dup(&src, &fi->src_addrlen);
	if (!fi->src_addr)
		return -FI_ENOMEM;
	if (!req->has_dest)
		return 0;
	fi->dest_addr = iwarp_sa_dup(&req->dest, &fi->dest_addrlen);
	return fi->dest_addr ? 0 : -FI_ENOMEM;
}

static struct fi_info *iwarp_info_new(const struct fi_info *tmpl,
				      const struct iwarp_iface *ifc,
				      const struct iwarp_req *req)
{
	struct fi_info *fi = fi_dupinfo(tmpl);

	if (!fi)
		return NULL;
	fi->domain_attr->name = strdup(ifc->name);
	fi->fabric_attr->name = strdup(ifc->fabric);
	fi->nic = iwarp_nic_new(ifc->name);
	if (!fi->domain_attr->name || !fi->fabric_attr->name || !fi->nic ||
	    iwarp_info_addrs(fi, ifc, req)) {
		fi_freeinfo(fi);
		return NULL;
	}
	return fi;
}

/* Appends the entries of one rank; returns the new tail, NULL on ENOMEM. */
static struct fi_info **iwarp_info_pass(const struct iwarp_iface *ifs,
					size_t count, int rank,
					const struct fi_info *tmpl,
					const struct fi_info *hints,
					const struct iwarp_req *req,
					struct fi_info **tail)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (iwarp_iface_rank(&ifs[i], hints, req) != rank)
			continue;
		*tail = iwarp_info_new(tmpl, &ifs[i], req);
		if (!*tail)
			return NULL;
		tail = &(*tail)->next;
	}
	return tail;
}

static int iwarp_info_list(const struct iwarp_iface *ifs, size_t count,
			   const struct fi_info *tmpl,
			   const struct fi_info *hints,
			   const struct iwarp_req *req, struct fi_info **info)
{
	struct fi_info **tail = info;
	int rank;

	for (rank = 0; rank <= 1 && tail; rank++)
		tail = iwarp_info_pass(ifs, count, rank, tmpl, hints, req,
				       tail);
	if (!tail) {
		fi_freeinfo(*info);
		*info = NULL;
		return -FI_ENOMEM;
	}
	return *info ? 0 : -FI_ENODATA;
}

static int iwarp_info_ifaces(const struct fi_info *tmpl,
			     const struct fi_info *hints,
			     const struct iwarp_req *req,
			     struct fi_info **info)
{
	struct iwarp_iface *ifs;
	size_t count;
	int ret;

	ret = iwarp_iface_list(&ifs, &count);
	if (ret)
		return ret;
	ret = iwarp_info_list(ifs, count, tmpl, hints, req, info);
	free(ifs);
	return ret;
}

/* Stable partition: loopback entries of every type after all others, so
 * a consumer taking the first entry never picks loopback for a peer. */
static void iwarp_loopback_last(struct fi_info **info)
{
	struct fi_info *lo = NULL, **lo_tail = &lo, **pp = info;

	while (*pp) {
		struct fi_info *fi = *pp;

		if (fi->src_addr && iwarp_addr_is_loopback(fi->src_addr)) {
			*pp = fi->next;
			fi->next = NULL;
			*lo_tail = fi;
			lo_tail = &fi->next;
		} else {
			pp = &fi->next;
		}
	}
	*pp = lo;
}

/* The entries of one endpoint type, appended at *tail. */
static int iwarp_getinfo_type(uint32_t version, enum fi_ep_type type,
			      const struct fi_info *hints,
			      const struct iwarp_req *req,
			      struct fi_info ***tail)
{
	struct fi_info *tmpl, *list = NULL;
	int ret;

	ret = iwarp_attr_info(version, hints, type, &tmpl);
	if (ret)
		return ret;
	ret = iwarp_info_ifaces(tmpl, hints, req, &list);
	fi_freeinfo(tmpl);
	if (ret)
		return ret;
	**tail = list;
	while (**tail)
		*tail = &(**tail)->next;
	return 0;
}

/*
 * ofi_rxm sends a message of fewer entries than the core's tx iov_limit
 * straight from the caller's iov, with its header in front, through an
 * array of its own limit (4): more than 4 overflows its stack. Offer a
 * utility provider 4, as libfabric tcp does.
 */
#define IWARP_UTIL_IOV_LIMIT 4

static void iwarp_util_limits(struct fi_info *list)
{
	for (; list; list = list->next)
		if (list->tx_attr->iov_limit > IWARP_UTIL_IOV_LIMIT)
			list->tx_attr->iov_limit = IWARP_UTIL_IOV_LIMIT;
}

int iwarp_getinfo(uint32_t version, const char *node, const char *service,
		  uint64_t flags, const struct fi_info *hints,
		  struct fi_info **info)
{
	static const enum fi_ep_type types[] = { FI_EP_RDM, FI_EP_MSG,
						 FI_EP_DGRAM };
	struct fi_info **tail = info;
	struct iwarp_req req;
	size_t i;
	int ret;

	*info = NULL;
	if ((flags & IWARP_OFI_CORE_PROV_ONLY) && !iwarp_params.allow_rxm) {
		FI_INFO(&iwarp_prov, FI_LOG_CORE,
			"not offered to utility providers "
			"(FI_IWARP_ALLOW_RXM is off)\n");
		return -FI_ENODATA;
	}
	if (hints && !iwarp_addr_format_ok(hints->addr_format))
		return -FI_ENODATA;
	ret = iwarp_req_init(&req, node, service, flags, hints);
	if (ret)
		return ret;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		ret = iwarp_getinfo_type(version, types[i], hints, &req, &tail);
		if (ret && ret != -FI_ENODATA)
			break;
		ret = 0;
	}
	iwarp_req_fini(&req);
	if (ret) {
		fi_freeinfo(*info);
		*info = NULL;
		return ret;
	}
	iwarp_loopback_last(info);
	if (flags & IWARP_OFI_CORE_PROV_ONLY)
		iwarp_util_limits(*info);
	return *info ? 0 : -FI_ENODATA;
}
