/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What iwarp FI_EP_MSG, FI_EP_RDM and FI_EP_DGRAM endpoints offer, as
 * fi_getinfo reports it.
 *
 * The libfabric core hands the hints of an external provider through
 * untouched and exports none of the util helpers that built-in providers
 * use, so this file applies the same rules itself: a non-zero hint must
 * be met or there is no entry (-FI_ENODATA), and the reply is narrowed to
 * the hints (the requested caps and the direction bits they imply,
 * smaller sizes and op_flags echoed) so that applications get what they
 * asked for and can feed a reply back in as hints.
 */
#include "iwarp_attr.h"
#include "iwarp_auth.h"

#include <stdlib.h>
#include <string.h>

#include "dgram/dgram_wire.h"
#include "rdm/rdm_wire.h"

/*
 * Limits of the engine; queue depth, iov and inject limits come from
 * iwarp.h (IWARP_QUEUE_SIZE, IWARP_IOV_MAX, IWARP_INJECT_MAX), which the
 * endpoint code sizes itself by.
 */
#define IWARP_MAX_MSG_SIZE	0xffffffffULL	/* DDP lengths are 32 bits */
#define IWARP_RMA_IOV_LIMIT	1
#define IWARP_MR_KEY_SIZE	4		/* an STag */
#define IWARP_CQ_CNT		256
#define IWARP_CNTR_CNT		256
#define IWARP_EP_CNT		65536
#define IWARP_MR_CNT		(1 << 20)
#define IWARP_PROTO_VERSION	1

/* FI_RMA_EVENT: targets count the peers' Writes and Reads (counters) */
#define IWARP_RMA_CAPS	(FI_RMA | IWARP_RMA_DIR | FI_RMA_EVENT)
#define IWARP_COMM_CAPS	(FI_LOCAL_COMM | FI_REMOTE_COMM)
/* MSG: FI_TAGGED only when asked (iwarp_narrow_tagged) */
#define IWARP_CAPS	(FI_MSG | FI_TAGGED | IWARP_MSG_DIR | IWARP_RMA_CAPS | \
			 FI_MULTI_RECV | IWARP_COMM_CAPS)
#define IWARP_TX_CAPS	(FI_MSG | FI_TAGGED | FI_SEND | FI_RMA | FI_READ | \
			 FI_WRITE)
#define IWARP_RX_CAPS	(FI_MSG | FI_TAGGED | FI_RECV | FI_RMA | \
			 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV | \
			 FI_RMA_EVENT)
/* MSG: remote CQ data as RFC 7306 Immediate Data (msg/msg.h), offered
 * only to hints that ask for it; the prefix an FI_MSG_PREFIX app gives */
#define IWARP_MSG_CQ_DATA 4
#define IWARP_MSG_PREFIX_SIZE 8

/* RDM: tagged and untagged messages, matched by source if asked, RMA
 * and atomics, named AVs shared between processes, triggered ops */
#define IWARP_RDM_CAPS	(FI_MSG | FI_TAGGED | IWARP_MSG_DIR | \
			 FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV | \
			 IWARP_RMA_CAPS | FI_ATOMIC | IWARP_COMM_CAPS | \
			 FI_SHARED_AV | FI_TRIGGER | FI_NAMED_RX_CTX | \
			 FI_COLLECTIVE)
#define IWARP_RDM_TX_CAPS (FI_MSG | FI_TAGGED | FI_SEND | FI_RMA | \
			   FI_ATOMIC | FI_READ | FI_WRITE | FI_TRIGGER | \
			   FI_NAMED_RX_CTX | FI_COLLECTIVE)
#define IWARP_RDM_RX_CAPS (FI_MSG | FI_TAGGED | FI_RECV | FI_DIRECTED_RECV | \
			   FI_SOURCE | FI_MULTI_RECV | FI_RMA | FI_ATOMIC | \
			   FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_EVENT | \
			   FI_COLLECTIVE)
/* DGRAM (dgram/): untagged and tagged datagrams over UDP, the sender's
 * fi_addr if asked; no ordering, no delivery promise */
#define IWARP_DGRAM_CAPS (FI_MSG | FI_TAGGED | IWARP_MSG_DIR | FI_SOURCE | \
			  IWARP_COMM_CAPS)
#define IWARP_DGRAM_TX_CAPS (FI_MSG | FI_TAGGED | FI_SEND)
#define IWARP_DGRAM_RX_CAPS (FI_MSG | FI_TAGGED | FI_RECV | FI_SOURCE)
#define IWARP_DGRAM_MAX_MSG IWARP_DGRAM_MSG_MAX	/* one UDP datagram */
#define IWARP_DGRAM_CQ_DATA 8
/* what needs keys we choose (targets of RMA and atomics) */
#define IWARP_KEYED_CAPS (IWARP_RMA_CAPS | FI_ATOMIC)
#define IWARP_RDM_IOV_LIMIT 4
#define IWARP_RDM_CQ_DATA 8
/* Open MPI keeps communicator bits in the top of the tag */
#define IWARP_RDM_TAG_FORMAT 0xffffffffffffffffULL
/* with FI_COLLECTIVE, bit 63 tags the collectives' messages (rdm/rdm_coll.c) */
#define IWARP_RDM_COLL_TAG_FORMAT 0x7fffffffffffffffULL

/*
 * Applications often copy info->caps into tx_attr/rx_attr->caps, so bits
 * that only make sense on the other side, and the communication scope,
 * are ignored there rather than refused (libfabric does the same).
 */
#define IWARP_TX_IGNORED (FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE | \
			  FI_DIRECTED_RECV | IWARP_CAP_BIT48 | \
			  FI_MULTI_RECV | FI_SOURCE | FI_RMA_EVENT | \
			  FI_SOURCE_ERR | IWARP_COMM_CAPS)
#define IWARP_RX_IGNORED (FI_SEND | FI_READ | FI_WRITE | FI_FENCE | \
			  FI_MULTICAST | FI_NAMED_RX_CTX | IWARP_COMM_CAPS)

#define IWARP_TX_OP_FLAGS (FI_INJECT | FI_COMPLETION | FI_INJECT_COMPLETE | \
			   FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
			   FI_FENCE)
#define IWARP_RX_OP_FLAGS FI_COMPLETION
/* a datagram completes when the kernel took it: nothing is delivered
 * or fenced for sure */
#define IWARP_DGRAM_TX_OP_FLAGS (FI_INJECT | FI_COMPLETION | \
				 FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE)

/*
 * One TCP stream per queue pair keeps every operation in order, except
 * that the responder may serve an RDMA Read after placing a Write sent
 * later (Read Requests queue, Writes are placed at once): no WAR. The
 * RMA-only bits of 1.17 are subsets of the classic ones we keep.
 */
#define IWARP_MSG_ORDER (FI_ORDER_SAS | FI_ORDER_SAW | FI_ORDER_SAR | \
			 FI_ORDER_WAS | FI_ORDER_WAW | FI_ORDER_RAW | \
			 FI_ORDER_RAR | FI_ORDER_RAS | FI_ORDER_RMA_RAR | \
			 FI_ORDER_RMA_RAW | FI_ORDER_RMA_WAW)
#define IWARP_COMP_ORDER IWARP_ORDER_STRICT

/* mr_mode bits that change what we do; every other bit is never needed. */
#define IWARP_MR_HONOURED (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

/* ---- generic checks */

/* A size_t field that hints may lower but not raise. */
struct iwarp_limit {
	const char *name;
	size_t offset;
};

/* The array size turns negative, a compile error, unless it is a size_t. */
#define IWARP_LIMIT(type, field) {					\
	#field, offsetof(type, field) + 0 * sizeof(char[		\
		__builtin_types_compatible_p(				\
			__typeof__(((type *)0)->field), size_t) ? 1 : -1]) }

#define IWARP_NLIMITS(a) (sizeof(a) / sizeof((a)[0]))

static size_t iwarp_field(const void *attr, const struct iwarp_limit *l)
{
	return *(const size_t *)((const char *)attr + l->offset);
}

static bool iwarp_limits_ok(const char *what, const void *hint,
			    const void *ours, const struct iwarp_limit *l,
			    size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		size_t h = iwarp_field(hint, &l[i]);
		size_t o = iwarp_field(ours, &l[i]);

		if (h > o)
			return iwarp_reject("%s %s %zu exceeds %zu\n", what,
					    l[i].name, h, o);
	}
	return true;
}

/* Replaces our value by the (smaller, checked) hint where one is given. */
static void iwarp_limits_echo(void *ours, const void *hint,
			      const struct iwarp_limit *l, size_t n)
{
	size_t i, h;

	for (i = 0; i < n; i++) {
		h = iwarp_field(hint, &l[i]);
		if (h)
			*(size_t *)((char *)ours + l[i].offset) = h;
	}
}

/* Hint bits outside `ours` fail; they are logged by name. */
static bool iwarp_bits_ok(const char *what, uint64_t hint, uint64_t ours,
			  enum fi_type type)
{
	uint64_t extra = hint & ~ours;
	char buf[512];

	if (!extra)
		return true;
	return iwarp_reject("%s not supported: %s\n", what,
			    fi_tostr_r(buf, sizeof(buf), &extra, type));
}

/* ---- what we offer with no hints */

static void iwarp_defaults_ep(struct fi_ep_attr *ep)
{
	ep->type = FI_EP_MSG;
	ep->protocol = FI_PROTO_IWARP;
	ep->protocol_version = IWARP_PROTO_VERSION;
	ep->max_msg_size = IWARP_MAX_MSG_SIZE;
	ep->msg_prefix_size = 0;
	ep->max_order_raw_size = IWARP_MAX_MSG_SIZE;
	ep->max_order_war_size = IWARP_MAX_MSG_SIZE;
	ep->max_order_waw_size = IWARP_MAX_MSG_SIZE;
	ep->mem_tag_format = 0;
	ep->tx_ctx_cnt = 1;
	ep->rx_ctx_cnt = 1;
}

static void iwarp_defaults_tx_rx(struct fi_tx_attr *tx, struct fi_rx_attr *rx)
{
	tx->caps = IWARP_TX_CAPS;
	tx->msg_order = IWARP_MSG_ORDER;
	tx->comp_order = IWARP_COMP_ORDER;
	tx->inject_size = IWARP_INJECT_MAX;
	tx->size = IWARP_QUEUE_SIZE;
	tx->iov_limit = IWARP_IOV_MAX;
	tx->rma_iov_limit = IWARP_RMA_IOV_LIMIT;

	rx->caps = IWARP_RX_CAPS;
	rx->msg_order = IWARP_MSG_ORDER;
	rx->comp_order = IWARP_COMP_ORDER;
	rx->total_buffered_recv = 0;
	rx->size = IWARP_QUEUE_SIZE;
	rx->iov_limit = IWARP_IOV_MAX;
}

static void iwarp_defaults_domain(struct fi_domain_attr *d)
{
	/* One fabric lock serializes everything: any level is met. */
	d->threading = FI_THREAD_SAFE;
	/* No progress thread yet: reading a CQ/EQ/counter drives it. */
	d->control_progress = FI_PROGRESS_MANUAL;
	d->data_progress = FI_PROGRESS_MANUAL;
	/* a Send ahead of its receive is held back (TCP flow control), not
	 * terminated, so the target's queue is never overrun */
	d->resource_mgmt = FI_RM_ENABLED;
	d->av_type = FI_AV_UNSPEC;
	d->mr_key_size = IWARP_MR_KEY_SIZE;
	d->cq_data_size = 0;	/* MSG: only when asked (iwarp_narrow) */
	d->cq_cnt = IWARP_CQ_CNT;
	d->ep_cnt = IWARP_EP_CNT;
	d->tx_ctx_cnt = IWARP_EP_CNT;
	d->rx_ctx_cnt = IWARP_EP_CNT;
	d->max_ep_tx_ctx = 1;	/* RDM: iwarp_defaults */
	d->max_ep_rx_ctx = 1;
	/* fi_stx_context, fi_srx_context (iwarp_ctx.h) */
	d->max_ep_stx_ctx = 1;
	d->max_ep_srx_ctx = 1;
	d->cntr_cnt = IWARP_CNTR_CNT;
	d->mr_iov_limit = 1;
	d->mr_cnt = IWARP_MR_CNT;
	d->caps = IWARP_COMM_CAPS;
	d->mode = 0;
}

/*
 * Without hints an application learns what we need: provider keys for
 * RMA targets; remote addresses are offsets into the region.
 */
static int iwarp_default_mr_mode(uint32_t version)
{
	if (FI_VERSION_LT(version, FI_VERSION(1, 5)))
		return IWARP_MR_BASIC;
	return FI_MR_PROV_KEY;
}

/*
 * Domain fields of later APIs, set only for an application asking for
 * such an API: older cores allocate structures without them.
 */
static void iwarp_defaults_later(struct fi_domain_attr *d, uint32_t version)
{
#if IWARP_FI_VERSION >= FI_VERSION(1, 20)
	/* one job key per endpoint (iwarp_auth.h) */
	if (FI_VERSION_GE(version, FI_VERSION(1, 20)))
		d->max_ep_auth_key = 1;
#endif
#if IWARP_FI_VERSION >= FI_VERSION(2, 5)
	/* fi_domain(3): counters have the full 64-bit range */
	if (FI_VERSION_GE(version, FI_VERSION(2, 5))) {
		d->max_cntr_value = UINT64_MAX;
		d->max_err_cntr_value = UINT64_MAX;
	}
#endif
}

/* RDM: one TCP stream per peer keeps sends in order; rendezvous and
 * eager messages complete in any order. */
static void iwarp_defaults_rdm(struct fi_info *fi, uint32_t version)
{
	/* the ceiling hints are checked against (iwarp_narrow_sep) */
	fi->domain_attr->max_ep_tx_ctx = IWARP_RDM_RXC_MAX;
	fi->domain_attr->max_ep_rx_ctx = IWARP_RDM_RXC_MAX;
	fi->caps = IWARP_RDM_CAPS;
	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->mem_tag_format = IWARP_RDM_TAG_FORMAT;
	fi->ep_attr->max_order_raw_size = 0;
	fi->ep_attr->max_order_war_size = 0;
	fi->ep_attr->max_order_waw_size = 0;
	fi->tx_attr->caps = IWARP_RDM_TX_CAPS;
	fi->rx_attr->caps = IWARP_RDM_RX_CAPS;
	fi->tx_attr->msg_order = FI_ORDER_SAS;
	fi->rx_attr->msg_order = FI_ORDER_SAS;
	fi->tx_attr->comp_order = IWARP_ORDER_NONE;
	fi->rx_attr->comp_order = IWARP_ORDER_NONE;
	fi->tx_attr->iov_limit = IWARP_RDM_IOV_LIMIT;
	fi->rx_attr->iov_limit = IWARP_RDM_IOV_LIMIT;
	fi->tx_attr->rma_iov_limit = IWARP_RMA_IOV_LIMIT;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->cq_data_size = IWARP_RDM_CQ_DATA;
	/* fi_av(3) 2.x deprecates FI_AV_MAP; ours behaves as a table */
	fi->domain_attr->av_type = iwarp_api_v2(version) ? FI_AV_TABLE :
							  FI_AV_MAP;
	fi->domain_attr->caps |= FI_SHARED_AV;
}

/* DGRAM: one datagram per message, sent at once (so any size is
 * injected), unordered, with 64-bit remote CQ data and tags. */
static void iwarp_defaults_dgram(struct fi_info *fi)
{
	fi->caps = IWARP_DGRAM_CAPS;
	fi->ep_attr->type = FI_EP_DGRAM;
	fi->ep_attr->protocol = FI_PROTO_UDP;
	fi->ep_attr->max_msg_size = IWARP_DGRAM_MAX_MSG;
	fi->ep_attr->mem_tag_format = IWARP_RDM_TAG_FORMAT;
	fi->ep_attr->max_order_raw_size = 0;
	fi->ep_attr->max_order_war_size = 0;
	fi->ep_attr->max_order_waw_size = 0;
	fi->tx_attr->caps = IWARP_DGRAM_TX_CAPS;
	fi->rx_attr->caps = IWARP_DGRAM_RX_CAPS;
	fi->tx_attr->msg_order = IWARP_ORDER_NONE;
	fi->rx_attr->msg_order = IWARP_ORDER_NONE;
	fi->tx_attr->comp_order = IWARP_ORDER_NONE;
	fi->rx_attr->comp_order = IWARP_ORDER_NONE;
	fi->tx_attr->inject_size = IWARP_DGRAM_MAX_MSG;
	fi->tx_attr->rma_iov_limit = 0;
	fi->domain_attr->cq_data_size = IWARP_DGRAM_CQ_DATA;
	fi->domain_attr->av_type = FI_AV_MAP;
}

/* What each endpoint type may offer: info, tx and rx caps. */
struct iwarp_type_caps {
	uint64_t caps, tx, rx, tx_op_flags;
};

static const struct iwarp_type_caps *iwarp_type_caps(enum fi_ep_type type)
{
	static const struct iwarp_type_caps msg = {
		IWARP_CAPS, IWARP_TX_CAPS, IWARP_RX_CAPS, IWARP_TX_OP_FLAGS
	}, rdm = {
		IWARP_RDM_CAPS, IWARP_RDM_TX_CAPS, IWARP_RDM_RX_CAPS,
		IWARP_TX_OP_FLAGS
	}, dgram = {
		IWARP_DGRAM_CAPS, IWARP_DGRAM_TX_CAPS, IWARP_DGRAM_RX_CAPS,
		IWARP_DGRAM_TX_OP_FLAGS
	};

	if (type == FI_EP_RDM)
		return &rdm;
	return type == FI_EP_DGRAM ? &dgram : &msg;
}

static void iwarp_defaults(struct fi_info *fi, uint32_t version,
			   enum fi_ep_type type)
{
	fi->caps = IWARP_CAPS;
	fi->mode = 0;		/* no FI_CONTEXT, FI_CONTEXT2, FI_MSG_PREFIX */
	iwarp_defaults_ep(fi->ep_attr);
	iwarp_defaults_tx_rx(fi->tx_attr, fi->rx_attr);
	iwarp_defaults_domain(fi->domain_attr);
	fi->domain_attr->mr_mode = iwarp_default_mr_mode(version);
	iwarp_defaults_later(fi->domain_attr, version);
	fi->fabric_attr->prov_version = iwarp_prov.version;
	fi->fabric_attr->api_version = version;
	if (type == FI_EP_RDM)
		iwarp_defaults_rdm(fi, version);
	if (type == FI_EP_DGRAM)
		iwarp_defaults_dgram(fi);
}

/* ---- hints that no narrowing can satisfy */

static const struct iwarp_limit iwarp_ep_limits[] = {
	IWARP_LIMIT(struct fi_ep_attr, max_msg_size),
	IWARP_LIMIT(struct fi_ep_attr, max_order_raw_size),
	IWARP_LIMIT(struct fi_ep_attr, max_order_war_size),
	IWARP_LIMIT(struct fi_ep_attr, max_order_waw_size),
};

/* Contexts of the endpoint's own up to ours, or FI_SHARED_CONTEXT. */
static bool iwarp_ctx_cnt_ok(const char *what, size_t h, size_t ours)
{
	if (h == FI_SHARED_CONTEXT || h <= ours)
		return true;
	return iwarp_reject("ep_attr %s %zu exceeds %zu\n", what, h, ours);
}

/* A job key in hints: both the octets and their count, at most
 * IWARP_AUTH_KEY_MAX of them (iwarp_auth.h). */
static bool iwarp_key_hint_ok(const char *what, const uint8_t *key,
			      size_t size)
{
	if (!key != !size)
		return iwarp_reject("%s auth_key %s without its %s\n", what,
				    key ? "octets" : "size",
				    key ? "size" : "octets");
	if (size > IWARP_AUTH_KEY_MAX)
		return iwarp_reject("%s auth_key of %zu octets: at most %d\n",
				    what, size, IWARP_AUTH_KEY_MAX);
	return true;
}

static bool iwarp_ep_hints_ok(const struct fi_ep_attr *h,
			      const struct fi_ep_attr *ours)
{
	/* scalable endpoints: RDM only */
	size_t nctx = ours->type == FI_EP_RDM ? IWARP_RDM_RXC_MAX : 1;

	if (h->type != FI_EP_UNSPEC && h->type != ours->type)
		return iwarp_reject("ep_type %d: not this entry's %d\n",
				    h->type, ours->type);
	if (h->protocol != FI_PROTO_UNSPEC && h->protocol != ours->protocol)
		return iwarp_reject("protocol %u: only FI_PROTO_IWARP\n",
				    h->protocol);
	if (h->protocol_version > ours->protocol_version)
		return iwarp_reject("protocol_version %u: only up to %u\n",
				    h->protocol_version,
				    ours->protocol_version);
	if (!iwarp_key_hint_ok("ep", h->auth_key, h->auth_key_size) ||
	    !iwarp_ctx_cnt_ok("tx_ctx_cnt", h->tx_ctx_cnt, nctx) ||
	    !iwarp_ctx_cnt_ok("rx_ctx_cnt", h->rx_ctx_cnt, nctx))
		return false;
	return iwarp_limits_ok("ep_attr", h, ours, iwarp_ep_limits,
			       IWARP_NLIMITS(iwarp_ep_limits));
}

static const struct iwarp_limit iwarp_tx_limits[] = {
	IWARP_LIMIT(struct fi_tx_attr, inject_size),
	IWARP_LIMIT(struct fi_tx_attr, size),
	IWARP_LIMIT(struct fi_tx_attr, iov_limit),
	IWARP_LIMIT(struct fi_tx_attr, rma_iov_limit),
};

static bool iwarp_tx_hints_ok(const struct fi_tx_attr *h,
			      const struct fi_tx_attr *ours, uint64_t op_flags)
{
	return iwarp_bits_ok("tx caps", h->caps & ~IWARP_TX_IGNORED,
			     ours->caps, FI_TYPE_CAPS) &&
	       iwarp_bits_ok("tx op_flags", h->op_flags, op_flags,
			     FI_TYPE_OP_FLAGS) &&
	       iwarp_bits_ok("tx msg_order", h->msg_order, ours->msg_order,
			     FI_TYPE_MSG_ORDER) &&
	       iwarp_bits_ok("tx comp_order", h->comp_order, ours->comp_order,
			     FI_TYPE_MSG_ORDER) &&
	       iwarp_limits_ok("tx_attr", h, ours, iwarp_tx_limits,
			       IWARP_NLIMITS(iwarp_tx_limits));
}

static const struct iwarp_limit iwarp_rx_limits[] = {
	IWARP_LIMIT(struct fi_rx_attr, size),
	IWARP_LIMIT(struct fi_rx_attr, iov_limit),
};

/*
 * total_buffered_recv is not checked: fi_endpoint(3) lets providers
 * ignore it, and we never buffer unexpected messages (RM disabled).
 */
static bool iwarp_rx_hints_ok(const struct fi_rx_attr *h,
			      const struct fi_rx_attr *ours)
{
	return iwarp_bits_ok("rx caps", h->caps & ~IWARP_RX_IGNORED,
			     ours->caps, FI_TYPE_CAPS) &&
	       iwarp_bits_ok("rx op_flags", h->op_flags, IWARP_RX_OP_FLAGS |
			     (ours->caps & FI_MULTI_RECV),
			     FI_TYPE_OP_FLAGS) &&
	       iwarp_bits_ok("rx msg_order", h->msg_order, ours->msg_order,
			     FI_TYPE_MSG_ORDER) &&
	       iwarp_bits_ok("rx comp_order", h->comp_order, ours->comp_order,
			     FI_TYPE_MSG_ORDER) &&
	       iwarp_limits_ok("rx_attr", h, ours, iwarp_rx_limits,
			       IWARP_NLIMITS(iwarp_rx_limits));
}

static const struct iwarp_limit iwarp_domain_limits[] = {
	/* MSG: up to IWARP_MSG_CQ_DATA (iwarp_narrow_msg) */
	IWARP_LIMIT(struct fi_domain_attr, cq_data_size),
	IWARP_LIMIT(struct fi_domain_attr, cq_cnt),
	IWARP_LIMIT(struct fi_domain_attr, ep_cnt),
	IWARP_LIMIT(struct fi_domain_attr, tx_ctx_cnt),
	IWARP_LIMIT(struct fi_domain_attr, rx_ctx_cnt),
	IWARP_LIMIT(struct fi_domain_attr, max_ep_tx_ctx),
	IWARP_LIMIT(struct fi_domain_attr, max_ep_rx_ctx),
	IWARP_LIMIT(struct fi_domain_attr, max_ep_stx_ctx),
	IWARP_LIMIT(struct fi_domain_attr, max_ep_srx_ctx),
	IWARP_LIMIT(struct fi_domain_attr, cntr_cnt),
	IWARP_LIMIT(struct fi_domain_attr, mr_iov_limit),
	IWARP_LIMIT(struct fi_domain_attr, mr_cnt),
};

/*
 * 2.x adds FI_PROGRESS_CONTROL_UNIFIED: manual progress, with the
 * application serializing control and data calls. We lock anyway, so
 * it is met and the reply keeps FI_PROGRESS_MANUAL. FI_PROGRESS_AUTO is
 * the fabric's progress thread, taken by a domain opened with it.
 */
static bool iwarp_progress_ok(enum fi_progress progress, uint32_t version)
{
#if IWARP_FI_VERSION >= FI_VERSION(2, 0)
	if (iwarp_api_v2(version) && progress == FI_PROGRESS_CONTROL_UNIFIED)
		return true;
#endif
	return progress == FI_PROGRESS_UNSPEC ||
	       progress == FI_PROGRESS_MANUAL || progress == FI_PROGRESS_AUTO;
}

static bool iwarp_domain_modes_ok(const struct fi_domain_attr *h,
				  uint32_t version)
{
	if ((unsigned int)h->threading > FI_THREAD_ENDPOINT)
		return iwarp_reject("unknown threading %d\n", h->threading);
	if (!iwarp_progress_ok(h->control_progress, version) ||
	    !iwarp_progress_ok(h->data_progress, version))
		return iwarp_reject("unknown progress %d/%d\n",
				    h->control_progress, h->data_progress);
	/* both are met: we never overrun a peer, and a caller asking
	 * for less is not hurt by it */
	if (h->resource_mgmt > FI_RM_ENABLED)
		return iwarp_reject("unknown resource_mgmt %d\n",
				    h->resource_mgmt);
	if ((unsigned int)h->av_type > FI_AV_TABLE)
		return iwarp_reject("unknown av_type %d\n", h->av_type);
	return true;
}

/* Hint fields of later APIs, read only when the application's has them. */
static bool iwarp_domain_later_ok(const struct fi_domain_attr *h,
				  uint32_t version)
{
#if IWARP_FI_VERSION >= FI_VERSION(1, 20)
	if (FI_VERSION_GE(version, FI_VERSION(1, 20)) && h->max_ep_auth_key > 1)
		return iwarp_reject("max_ep_auth_key %zu: one per endpoint\n",
				    h->max_ep_auth_key);
#endif
#if IWARP_FI_VERSION >= FI_VERSION(2, 0)
	if (iwarp_api_v2(version) && h->max_group_id)
		return iwarp_reject("max_group_id %u: no peer groups\n",
				    h->max_group_id);
#endif
	return true;
}

static bool iwarp_domain_hints_ok(const struct fi_domain_attr *h,
				  const struct fi_domain_attr *ours,
				  uint32_t version)
{
	if (!iwarp_domain_modes_ok(h, version) ||
	    !iwarp_domain_later_ok(h, version))
		return false;
	if (!iwarp_key_hint_ok("domain", h->auth_key, h->auth_key_size))
		return false;
	return iwarp_bits_ok("domain caps", h->caps, ours->caps,
			     FI_TYPE_CAPS) &&
	       iwarp_limits_ok("domain_attr", h, ours, iwarp_domain_limits,
			       IWARP_NLIMITS(iwarp_domain_limits));
}

static bool iwarp_hints_ok(const struct fi_info *hints,
			   const struct fi_info *ours)
{
	if (!iwarp_bits_ok("caps", hints->caps, ours->caps, FI_TYPE_CAPS))
		return false;
	if (hints->fabric_attr && hints->fabric_attr->prov_version >
				  ours->fabric_attr->prov_version)
		return iwarp_reject("prov_version %#x is newer than ours\n",
				    hints->fabric_attr->prov_version);
	if (hints->ep_attr && !iwarp_ep_hints_ok(hints->ep_attr,
						 ours->ep_attr))
		return false;
	if (hints->domain_attr &&
	    !iwarp_domain_hints_ok(hints->domain_attr, ours->domain_attr,
				   ours->fabric_attr->api_version))
		return false;
	if (hints->tx_attr && !iwarp_tx_hints_ok(hints->tx_attr, ours->tx_attr,
			iwarp_type_caps(ours->ep_attr->type)->tx_op_flags))
		return false;
	return !hints->rx_attr || iwarp_rx_hints_ok(hints->rx_attr,
						    ours->rx_attr);
}

/* ---- capabilities */

/*
 * The transmit and receive halves of expanded info caps: a class is on
 * a side only if one of its directions is (FI_MSG|FI_RECV sends nothing).
 */
static uint64_t iwarp_tx_half(uint64_t caps)
{
	uint64_t tx = caps & (FI_SEND | FI_READ | FI_WRITE | FI_NAMED_RX_CTX);

	if (caps & FI_SEND)
		tx |= caps & (FI_MSG | FI_TAGGED);
	if (caps & (FI_READ | FI_WRITE))
		tx |= caps & (FI_RMA | FI_ATOMIC);
	return tx;
}

static uint64_t iwarp_rx_half(uint64_t caps)
{
	uint64_t rx = caps & (FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE);

	if (caps & FI_RECV)
		rx |= caps & (FI_MSG | FI_TAGGED);
	/* receive-only by nature, whatever else was asked */
	rx |= caps & (FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV);
	if (caps & (FI_REMOTE_READ | FI_REMOTE_WRITE))
		rx |= caps & (FI_RMA | FI_ATOMIC | FI_RMA_EVENT);
	return rx;
}

/* tx/rx caps from their own hint if any, else from the info caps. */
static bool iwarp_side_caps(uint64_t *side, uint64_t hint, uint64_t avail,
			    uint64_t info_caps, const char *what)
{
	if (!hint)
		return true;
	*side = iwarp_caps_expand(hint, avail);
	if (*side & ~info_caps)
		return iwarp_reject("%s caps %#llx are not within caps %#llx\n",
				    what, (unsigned long long)*side,
				    (unsigned long long)info_caps);
	return true;
}

static bool iwarp_narrow_caps(struct fi_info *fi, const struct fi_info *hints)
{
	const struct iwarp_type_caps *tc = iwarp_type_caps(fi->ep_attr->type);
	uint64_t tx_hint = 0, rx_hint = 0;

	if (hints->caps)
		fi->caps = iwarp_caps_expand(hints->caps, tc->caps);
	if (hints->tx_attr)
		tx_hint = hints->tx_attr->caps & ~IWARP_TX_IGNORED;
	if (hints->rx_attr)
		rx_hint = hints->rx_attr->caps & ~IWARP_RX_IGNORED;
	fi->tx_attr->caps = iwarp_tx_half(fi->caps);
	fi->rx_attr->caps = iwarp_rx_half(fi->caps);
	return iwarp_side_caps(&fi->tx_attr->caps, tx_hint, tc->tx, fi->caps,
			       "tx") &&
	       iwarp_side_caps(&fi->rx_attr->caps, rx_hint, tc->rx, fi->caps,
			       "rx");
}

/* ---- memory registration */

/* Did the application name any RMA capability, anywhere? */
static bool iwarp_rma_asked(const struct fi_info *hints)
{
	uint64_t caps = hints->caps;

	if (hints->tx_attr)
		caps |= hints->tx_attr->caps & ~IWARP_TX_IGNORED;
	if (hints->rx_attr)
		caps |= hints->rx_attr->caps & ~IWARP_RX_IGNORED;
	return caps & IWARP_KEYED_CAPS;
}

/*
 * The reply's mr_mode for the application's, or -1. *prov_keys tells
 * whether the application accepts keys we choose: our STags are random,
 * so RMA targets need that. FI_MR_BASIC means VIRT_ADDR | ALLOCATED |
 * PROV_KEY; FI_MR_SCALABLE (application-chosen keys, any address) is
 * what we cannot do.
 */
static int iwarp_mr_mode(uint32_t version, int user, bool *prov_keys)
{
	*prov_keys = true;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5))) {
		if (user == IWARP_MR_UNSPEC || user == IWARP_MR_BASIC)
			return IWARP_MR_BASIC;
		iwarp_reject("API < 1.5: mr_mode %#x, only FI_MR_BASIC\n",
			     user);
		return -1;
	}
	/* fi_mr(3) 2.x still takes FI_MR_BASIC "for backwards compatibility" */
	if (user == IWARP_MR_BASIC)
		return IWARP_MR_BASIC;
	if (user & (IWARP_MR_BASIC | IWARP_MR_SCALABLE)) {
		iwarp_reject("mr_mode %#x: FI_MR_SCALABLE is not supported and "
			     "FI_MR_BASIC does not combine\n", user);
		return -1;
	}
	*prov_keys = user & FI_MR_PROV_KEY;
	return user & IWARP_MR_HONOURED;
}

static void iwarp_drop_rma(struct fi_info *fi)
{
	fi->caps &= ~IWARP_KEYED_CAPS;
	fi->tx_attr->caps &= ~IWARP_KEYED_CAPS;
	fi->rx_attr->caps &= ~IWARP_KEYED_CAPS;
}

/*
 * Hints with mr_mode 0 (FI_MR_UNSPEC) at API >= 1.5 offer no bit at all;
 * RMA then goes away unless it was asked for, which fails the entry.
 */
static bool iwarp_narrow_mr(struct fi_info *fi, uint32_t version,
			    const struct fi_info *hints)
{
	int user = hints->domain_attr ? hints->domain_attr->mr_mode : 0;
	bool prov_keys;
	int mode;

	mode = iwarp_mr_mode(version, user, &prov_keys);
	if (mode < 0)
		return false;
	/* Offsets, never virtual addresses, unless FI_MR_BASIC: an
	 * application may write to a region whose address it never got */
	if (mode != IWARP_MR_BASIC)
		mode &= ~FI_MR_VIRT_ADDR;
	/* FI_IWARP_MR_APP_KEYS: keys of the application's */
	if (iwarp_params.mr_app_keys && mode != IWARP_MR_BASIC) {
		mode &= ~FI_MR_PROV_KEY;
		prov_keys = true;
	}
	fi->domain_attr->mr_mode = mode;
	if (prov_keys || !(fi->caps & IWARP_KEYED_CAPS))
		return true;
	if (iwarp_rma_asked(hints))
		return iwarp_reject("RMA needs FI_MR_PROV_KEY in mr_mode\n");
	FI_INFO(&iwarp_prov, FI_LOG_CORE,
		"no FI_MR_PROV_KEY in mr_mode: RMA left out\n");
	iwarp_drop_rma(fi);
	return true;
}

/* ---- echoing what the hints chose */

static void iwarp_narrow_domain(struct fi_domain_attr *d,
				const struct fi_domain_attr *h)
{
	if (h->threading != FI_THREAD_UNSPEC)
		d->threading = h->threading;
	if (h->resource_mgmt != FI_RM_UNSPEC)
		d->resource_mgmt = h->resource_mgmt;
	if (h->control_progress == FI_PROGRESS_AUTO)
		d->control_progress = FI_PROGRESS_AUTO;
	if (h->data_progress == FI_PROGRESS_AUTO)
		d->data_progress = FI_PROGRESS_AUTO;
	/* MSG endpoints use no AV, but echo the type the app will open */
	if (h->av_type != FI_AV_UNSPEC)
		d->av_type = h->av_type;
	if (h->caps)
		d->caps = h->caps;
}

static void iwarp_narrow_ep(struct fi_ep_attr *ep, const struct fi_ep_attr *h,
			    uint64_t caps)
{
	if (!(caps & IWARP_RMA_CAPS))
		return;
	if (h->max_order_raw_size)
		ep->max_order_raw_size = h->max_order_raw_size;
	if (h->max_order_war_size)
		ep->max_order_war_size = h->max_order_war_size;
	if (h->max_order_waw_size)
		ep->max_order_waw_size = h->max_order_waw_size;
}

/* FI_SHARED_CONTEXT, or fewer contexts, come back as asked. */
static void iwarp_narrow_ctx_cnt(struct fi_ep_attr *ep,
				 const struct fi_ep_attr *h)
{
	if (h->tx_ctx_cnt)
		ep->tx_ctx_cnt = h->tx_ctx_cnt;
	if (h->rx_ctx_cnt)
		ep->rx_ctx_cnt = h->rx_ctx_cnt;
}

static void iwarp_narrow_attrs(struct fi_info *fi, const struct fi_info *hints)
{
	if (hints->domain_attr)
		iwarp_narrow_domain(fi->domain_attr, hints->domain_attr);
	if (hints->ep_attr) {
		iwarp_narrow_ep(fi->ep_attr, hints->ep_attr, fi->caps);
		iwarp_narrow_ctx_cnt(fi->ep_attr, hints->ep_attr);
	}
	if (hints->tx_attr) {
		fi->tx_attr->op_flags = hints->tx_attr->op_flags;
		iwarp_limits_echo(fi->tx_attr, hints->tx_attr, iwarp_tx_limits,
				  IWARP_NLIMITS(iwarp_tx_limits));
	}
	if (hints->rx_attr) {
		fi->rx_attr->op_flags = hints->rx_attr->op_flags;
		iwarp_limits_echo(fi->rx_attr, hints->rx_attr, iwarp_rx_limits,
				  IWARP_NLIMITS(iwarp_rx_limits));
	}
	/* fi_getinfo(3): a passive endpoint given as handle comes back */
	if (hints->handle && hints->handle->fclass == FI_CLASS_PEP)
		fi->handle = hints->handle;
}

/* The job key of the hints comes back in the entries (fi_dupinfo copies
 * it on), so fi_domain and fi_endpoint find it. 0 or -FI_ENOMEM. */
static int iwarp_key_copy(uint8_t **key, size_t *size, const uint8_t *from,
			  size_t from_size)
{
	if (!from_size)
		return 0;
	*key = malloc(from_size);
	if (!*key)
		return -FI_ENOMEM;
	memcpy(*key, from, from_size);
	*size = from_size;
	return 0;
}

static int iwarp_narrow_keys(struct fi_info *fi, const struct fi_info *hints)
{
	int ret = 0;

	if (hints->domain_attr)
		ret = iwarp_key_copy(&fi->domain_attr->auth_key,
				     &fi->domain_attr->auth_key_size,
				     hints->domain_attr->auth_key,
				     hints->domain_attr->auth_key_size);
	if (!ret && hints->ep_attr)
		ret = iwarp_key_copy(&fi->ep_attr->auth_key,
				     &fi->ep_attr->auth_key_size,
				     hints->ep_attr->auth_key,
				     hints->ep_attr->auth_key_size);
	return ret;
}

/*
 * MSG remote CQ data, only for hints that ask; an endpoint offering it
 * puts an ext block in its MPA private data. A Write's CQ data takes a
 * receive at the target when the hints offer FI_RX_CQ_DATA (as RFC 7306
 * has it), else it completes on its own.
 */
static bool iwarp_narrow_cq_data(struct fi_info *fi,
				 const struct fi_info *hints)
{
	size_t want = hints->domain_attr ? hints->domain_attr->cq_data_size :
					   0;

	fi->domain_attr->cq_data_size = want ? IWARP_MSG_CQ_DATA : 0;
	if (!want)
		return true;
	if (!(hints->mode & FI_RX_CQ_DATA))
		return true;
	fi->mode |= FI_RX_CQ_DATA;
	fi->rx_attr->mode |= FI_RX_CQ_DATA;
	return true;
}

/* FI_MSG_PREFIX offered in the mode bits, on every side that has some */
static bool iwarp_prefix_offered(const struct fi_info *h)
{
	if (!(h->mode & FI_MSG_PREFIX))
		return false;
	if (h->tx_attr && h->tx_attr->mode &&
	    !(h->tx_attr->mode & FI_MSG_PREFIX))
		return false;
	return !h->rx_attr || !h->rx_attr->mode ||
	       (h->rx_attr->mode & FI_MSG_PREFIX);
}

/*
 * Every endpoint type takes the prefix whenever the application offers it:
 * buffers then start with octets that carry nothing, which costs the
 * application nothing it did not agree to, and fabtests' -k insists on
 * getting the mode it offered.
 */
static void iwarp_narrow_prefix(struct fi_info *fi,
				const struct fi_info *hints)
{
	enum fi_ep_type type = fi->ep_attr->type;

	if (!iwarp_prefix_offered(hints))
		return;
	fi->mode |= FI_MSG_PREFIX;
	fi->tx_attr->mode |= FI_MSG_PREFIX;
	fi->rx_attr->mode |= FI_MSG_PREFIX;
	fi->ep_attr->msg_prefix_size = type == FI_EP_DGRAM ?
				       IWARP_DGRAM_HDR_MAX :
				       IWARP_MSG_PREFIX_SIZE;
}

static int iwarp_narrow(struct fi_info *fi, uint32_t version,
			const struct fi_info *hints)
{
	bool msg = fi->ep_attr->type == FI_EP_MSG;

	if (msg)	/* the ceiling hints are checked against */
		fi->domain_attr->cq_data_size = IWARP_MSG_CQ_DATA;
	if (!iwarp_hints_ok(hints, fi) || !iwarp_narrow_caps(fi, hints) ||
	    !iwarp_narrow_mr(fi, version, hints) ||
	    (msg && !iwarp_narrow_cq_data(fi, hints)))
		return -FI_ENODATA;
	iwarp_narrow_attrs(fi, hints);
	iwarp_narrow_prefix(fi, hints);
	return iwarp_narrow_keys(fi, hints);
}

/*
 * Scalable RDM endpoints (rdm/rdm_sep.c; the header names one of
 * IWARP_RDM_RXC_MAX rx contexts), offered only to an entry whose caps
 * their contexts carry: Open MPI's btl ofi opens a scalable endpoint
 * for RMA and atomics whenever max_ep_tx_ctx is above 1.
 */
#define IWARP_RDM_SEP_NOT (IWARP_KEYED_CAPS | FI_MULTI_RECV | FI_TRIGGER)

static int iwarp_narrow_sep(struct fi_info *fi, const struct fi_info *hints)
{
	const struct fi_domain_attr *hd = hints ? hints->domain_attr : NULL;
	struct fi_ep_attr *ep = fi->ep_attr;
	bool sep = !(fi->caps & IWARP_RDM_SEP_NOT);
	size_t n = sep ? IWARP_RDM_RXC_MAX : 1;

	/* an entry given back as hints asks what it said */
	fi->domain_attr->max_ep_tx_ctx = hd && hd->max_ep_tx_ctx ?
					 hd->max_ep_tx_ctx : n;
	fi->domain_attr->max_ep_rx_ctx = hd && hd->max_ep_rx_ctx ?
					 hd->max_ep_rx_ctx : n;
	if (fi->domain_attr->max_ep_tx_ctx <= n &&
	    fi->domain_attr->max_ep_rx_ctx <= n &&
	    (ep->tx_ctx_cnt == FI_SHARED_CONTEXT || ep->tx_ctx_cnt <= n) &&
	    (ep->rx_ctx_cnt == FI_SHARED_CONTEXT || ep->rx_ctx_cnt <= n))
		return 0;
	iwarp_reject("contexts of a scalable endpoint carry no RMA, atomics, "
		     "multi-receive or triggered operations\n");
	return -FI_ENODATA;
}

/*
 * fi_endpoint(3) 2.x: comp_order is kept for 1.x and should be 0. The
 * hints were checked against what we do, so an order still asked for
 * is echoed.
 */
static void iwarp_comp_order_v2(struct fi_info *fi, const struct fi_info *hints)
{
	fi->tx_attr->comp_order = hints && hints->tx_attr ?
				  hints->tx_attr->comp_order : 0;
	fi->rx_attr->comp_order = hints && hints->rx_attr ?
				  hints->rx_attr->comp_order : 0;
}

/*
 * FI_TAGGED on MSG, only when asked: such an endpoint connects only to
 * peers that offered it too (msg/msg_tagged.c), and takes no
 * multi-receive buffer, prefix or remote CQ data.
 */
static int iwarp_narrow_tagged(struct fi_info *fi, const struct fi_info *hints)
{
	bool asked = hints && (hints->caps & FI_TAGGED);

	if (!asked) {
		fi->caps &= ~FI_TAGGED;
		fi->tx_attr->caps &= ~FI_TAGGED;
		fi->rx_attr->caps &= ~FI_TAGGED;
		return 0;
	}
	if ((fi->caps & FI_MULTI_RECV) || fi->domain_attr->cq_data_size) {
		iwarp_reject("FI_TAGGED on MSG: no FI_MULTI_RECV or CQ data\n");
		return -FI_ENODATA;
	}
	fi->mode &= ~FI_MSG_PREFIX;
	fi->tx_attr->mode &= ~FI_MSG_PREFIX;
	fi->rx_attr->mode &= ~FI_MSG_PREFIX;
	fi->ep_attr->msg_prefix_size = 0;
	fi->ep_attr->mem_tag_format = IWARP_RDM_TAG_FORMAT;
	/* one scatter entry carries the header */
	fi->tx_attr->iov_limit = IWARP_IOV_MAX - 1;
	fi->rx_attr->iov_limit = IWARP_IOV_MAX - 1;
	return 0;
}

/*
 * FI_COLLECTIVE on RDM, only when asked: it takes the top tag bit from
 * the application.
 */
static void iwarp_narrow_coll(struct fi_info *fi, const struct fi_info *hints)
{
	if (!hints || !(hints->caps & FI_COLLECTIVE)) {
		fi->caps &= ~FI_COLLECTIVE;
		fi->tx_attr->caps &= ~FI_COLLECTIVE;
		fi->rx_attr->caps &= ~FI_COLLECTIVE;
		return;
	}
	fi->tx_attr->caps |= FI_COLLECTIVE;
	fi->rx_attr->caps |= FI_COLLECTIVE;
	fi->ep_attr->mem_tag_format = IWARP_RDM_COLL_TAG_FORMAT;
}

int iwarp_attr_info(uint32_t version, const struct fi_info *hints,
		    enum fi_ep_type type, struct fi_info **tmpl)
{
	struct fi_info *fi;
	int ret;

	*tmpl = NULL;
	fi = fi_allocinfo();
	if (!fi)
		return -FI_ENOMEM;
	iwarp_defaults(fi, version, type);
	ret = hints ? iwarp_narrow(fi, version, hints) : 0;
	if (!ret && type == FI_EP_MSG)
		ret = iwarp_narrow_tagged(fi, hints);
	if (!ret && type == FI_EP_RDM)
		ret = iwarp_narrow_sep(fi, hints);
	if (!ret && type == FI_EP_RDM)
		iwarp_narrow_coll(fi, hints);
	if (ret) {
		fi_freeinfo(fi);
		return ret;
	}
	if (iwarp_api_v2(version))
		iwarp_comp_order_v2(fi, hints);
	*tmpl = fi;
	return 0;
}
