/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_DGRAM, private to dgram/: one UDP socket per endpoint, bound to
 * the domain's interface. dgram_ep.c is the object (open, bind, enable,
 * names, options, close), dgram_data.c the data path (sends go straight
 * to sendmsg, posted receives are filled by progress), dgram_wire.c the
 * header every datagram starts with.
 */
#ifndef IWARP_DGRAM_H
#define IWARP_DGRAM_H

#include "../iwarp.h"
#include "../iwarp_av.h"

#include <sys/uio.h>

#include "dgram_wire.h"

/* A receive buffer that holds any UDP payload, IPv6's largest too. */
#define IWARP_DGRAM_BOUNCE	65536
/* datagrams taken per progress call: the other pollables get a turn */
#define IWARP_DGRAM_BUDGET	64
#define IWARP_DGRAM_RX_MAX	65536
#define IWARP_DGRAM_SOCKBUF	(4 << 20)

/*
 * Endpoint statistics, fi_getopt(FI_OPT_ENDPOINT,
 * IWARP_OPT_DGRAM_STATS): an array of IWARP_DGRAM_STAT_MAX uint64_t.
 * Slots 0..IWARP_DGRAM_NO_MATCH count by enum iwarp_dgram_drop (slot 0:
 * datagrams delivered), then the ones below. fi_iwarp(7) lists them.
 */
#define IWARP_OPT_DGRAM_STATS	(-(0x1e7 << 16))
enum {
	IWARP_DGRAM_STAT_UNKNOWN_SRC = IWARP_DGRAM_DROP_MAX, /* delivered */
	IWARP_DGRAM_STAT_TRUNC,		/* delivered cut: FI_ETRUNC */
	IWARP_DGRAM_STAT_KERNEL,	/* dropped by the kernel (full) */
	IWARP_DGRAM_STAT_SENT,
	IWARP_DGRAM_STAT_MAX,
};

/* A posted receive. */
struct iwarp_dgram_rx {
	struct iwarp_list link;		/* posted list or free list */
	void *context;
	uint64_t flags;			/* FI_RECV | FI_MSG or FI_TAGGED */
	uint64_t tag, ignore;
	bool cq;			/* report success in the CQ */
	size_t iov_count;
	struct iovec iov[IWARP_IOV_MAX];
};

struct iwarp_dgram_ep {
	struct iwarp_ep_base base;	/* first: fids convert through it */
	struct iwarp_pollable poll;
	struct iwarp_av *av;
	int fd;
	union iwarp_sockaddr name;	/* what the socket is bound to */
	size_t max_msg, inject;
	size_t prefix;			/* FI_MSG_PREFIX octets, or 0 */
	struct iwarp_list posted_msg, posted_tagged, free_rx;
	struct iwarp_dgram_rx *rx_pool;
	size_t nposted;
	uint8_t *bounce;		/* IWARP_DGRAM_BOUNCE octets */
	uint64_t stats[IWARP_DGRAM_STAT_MAX];
};

static inline struct iwarp_dgram_ep *iwarp_dgram_ep_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_dgram_ep,
				  base.ep_fid.fid);
}

/* One operation as the entry points describe it. */
struct iwarp_dgram_op {
	const struct iovec *iov;
	size_t count;
	fi_addr_t addr;
	uint64_t tag, ignore, data;
	void *context;
	uint64_t flags;			/* the caller's op flags */
	bool tagged;
};

/* Lock not held. 0 (the op will complete), -FI_EAGAIN, or an error. */
ssize_t iwarp_dgram_send(struct iwarp_dgram_ep *ep,
			 const struct iwarp_dgram_op *op);
ssize_t iwarp_dgram_recv(struct iwarp_dgram_ep *ep,
			 const struct iwarp_dgram_op *op);

/* dgram_data.c: the data ops and the pollable's progress (lock held). */
extern struct fi_ops_msg iwarp_dgram_msg_ops;
/* dgram_tagged.c */
extern struct fi_ops_tagged iwarp_dgram_tagged_ops;
void iwarp_dgram_progress(struct iwarp_pollable *p);
/* Lock held: posted receives leave with FI_ECANCELED (fi_cancel). */
int iwarp_dgram_cancel_rx(struct iwarp_dgram_ep *ep, void *context);
/* Shared receive context, lock held: iwarp_ep_type.srx_offer, and the
 * receives the endpoint may fill (its own and the context's). */
bool iwarp_dgram_srx_offer(struct iwarp_ep_base *b, struct iwarp_srx_rx *s);
size_t iwarp_dgram_rx_waiting(const struct iwarp_dgram_ep *ep);

#endif /* IWARP_DGRAM_H */
