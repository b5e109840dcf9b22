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
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* fi_log.h compiles FI_DBG in only when ENABLE_DEBUG is set. */
#if defined(IW_DEBUG) && IW_DEBUG && !defined(ENABLE_DEBUG)
#define ENABLE_DEBUG 1
#endif

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#define IWARP_PROV_NAME		"iwarp"
#define IWARP_FI_VERSION	FI_VERSION(1, 17)

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
};

extern struct iwarp_params iwarp_params;

int iwarp_params_init(void);
void iwarp_params_fini(void);

union iwarp_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
};

static inline socklen_t iwarp_sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					   sizeof(struct sockaddr_in);
}

/* "ffff:...:ffff/128" plus NUL fits. */
#define IWARP_FABRIC_NAME_MAX	(INET6_ADDRSTRLEN + 8)

/*
 * One usable interface address: a fabric is the IP subnet it lives in,
 * a domain is the interface.
 */
struct iwarp_iface {
	char name[IF_NAMESIZE];
	char fabric[IWARP_FABRIC_NAME_MAX];
	union iwarp_sockaddr addr;	/* port 0 */
	bool loopback;
};

int iwarp_iface_list(struct iwarp_iface **ifs, size_t *count);
const struct iwarp_iface *iwarp_iface_find(const struct iwarp_iface *ifs,
					   size_t count, const char *fabric,
					   const char *domain);

int iwarp_getinfo(uint32_t version, const char *node, const char *service,
		  uint64_t flags, const struct fi_info *hints,
		  struct fi_info **info);

struct iwarp_fabric {
	struct fid_fabric fabric_fid;
	char *name;
	atomic_int ref;			/* open domains */
};

int iwarp_fabric_open(struct fi_fabric_attr *attr,
		      struct fid_fabric **fabric, void *context);

struct iwarp_domain {
	struct fid_domain domain_fid;
	struct iwarp_fabric *fabric;
	struct iwarp_iface iface;
};

int iwarp_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain, void *context);

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

/*
 * Stubs for operations that do not exist yet: libfabric keeps its
 * fi_no_* helpers internal, so external providers bring their own.
 */
int iwarp_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int iwarp_no_control(struct fid *fid, int command, void *arg);
int iwarp_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context);
int iwarp_no_tostr(const struct fid *fid, char *buf, size_t len);
int iwarp_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		     void *ops, void *context);

#endif /* IWARP_PROV_H */
