/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The native FI_EP_RDM endpoint as the rest of the provider sees it; its
 * protocol and transports live in rdm/ (rdm/rdm.h).
 */
#ifndef IWARP_RDM_PUBLIC_H
#define IWARP_RDM_PUBLIC_H

#include "iwarp.h"

#include <rdma/fi_collective.h>

/* An EAGER may carry up to IWARP_RDM_EAGER_MAX octets (what a receiver
 * accepts); a sender uses it up to FI_IWARP_RDM_EAGER (default below),
 * and up to FI_IWARP_RDM_EAGER_IDLE for a peer over TCP that has nothing
 * of ours outstanding. 1 MiB: skipping the Read's round trip saves a
 * ping-pong over TCP 15-20 % at 512 KiB, 7 % at 1 MiB, little beyond. */
#define IWARP_RDM_EAGER_MAX 1048576
#define IWARP_RDM_EAGER_DEFAULT 65536
/* FI_IWARP_RDM_READ_WINDOW's bounds */
#define IWARP_RDM_READ_WINDOW_MIN ((size_t)128 << 10)
#define IWARP_RDM_READ_WINDOW_MAX ((size_t)64 << 20)
#define IWARP_RDM_EAGER_IDLE_DEFAULT IWARP_RDM_EAGER_MAX

int iwarp_rdm_scalable_open(struct fid_domain *domain, struct fi_info *info,
			    struct fid_ep **sep, void *context);
int iwarp_rdm_open(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep, void *context);
/* fi_query_collective: what RDM endpoints with FI_COLLECTIVE run */
int iwarp_rdm_query_collective(struct fid_domain *domain,
			       enum fi_collective_op coll,
			       struct fi_collective_attr *attr,
			       uint64_t flags);

#endif /* IWARP_RDM_PUBLIC_H */
