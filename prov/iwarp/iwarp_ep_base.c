/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The endpoint base (iwarp_ep_base.h): what MSG, RDM and DGRAM endpoints
 * do alike, so that they cannot drift apart.
 */
#include "iwarp.h"

#include <stdlib.h>

#include "iwarp/engine.h"

int iwarp_ep_base_init(struct iwarp_ep_base *b,
		       const struct iwarp_ep_type *type,
		       struct iwarp_domain *dom, const struct fi_info *info,
		       void *context)
{
	b->info = fi_dupinfo(info);
	if (!b->info)
		return -FI_ENOMEM;
	b->type = type;
	b->dom = dom;
	b->fab = dom->fabric;
	b->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	b->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	b->min_multi_recv = 64;	/* fi_endpoint(3): provider's choice */
	iwarp_list_init(&b->srx_link);
	b->ep_fid.fid.fclass = FI_CLASS_EP;
	b->ep_fid.fid.context = context;
	atomic_fetch_add(&dom->ref, 1);
	return 0;
}

static void iwarp_ep_base_put_cntr(struct iwarp_cntr **slot)
{
	if (*slot)
		atomic_fetch_sub(&(*slot)->ref, 1);
	*slot = NULL;
}

void iwarp_ep_base_fini(struct iwarp_ep_base *b)
{
	if (b->tx_cq)
		atomic_fetch_sub(&b->tx_cq->ref, 1);
	if (b->rx_cq)
		atomic_fetch_sub(&b->rx_cq->ref, 1);
	b->tx_cq = b->rx_cq = NULL;
	iwarp_ep_base_put_cntr(&b->cntr_send);
	iwarp_ep_base_put_cntr(&b->cntr_recv);
	iwarp_ep_base_put_cntr(&b->cntr_write);
	iwarp_ep_base_put_cntr(&b->cntr_read);
	iwarp_ep_base_put_cntr(&b->cntr_rwrite);
	iwarp_ep_base_put_cntr(&b->cntr_rread);
	iwarp_ctx_unbind(b);
	atomic_fetch_sub(&b->dom->ref, 1);
	fi_freeinfo(b->info);
	b->info = NULL;
}

/* ---- bind */

/* One CQ per direction: a second bind of a direction is refused. */
static int iwarp_ep_base_bind_cq(struct iwarp_ep_base *b, struct iwarp_cq *cq,
				 uint64_t flags)
{
	bool sel = flags & FI_SELECTIVE_COMPLETION;

	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EINVAL;
	if (((flags & FI_TRANSMIT) && b->tx_cq) ||
	    ((flags & FI_RECV) && b->rx_cq))
		return -FI_EINVAL;
	if (flags & FI_TRANSMIT) {
		b->tx_cq = cq;
		b->tx_selective = sel;
		atomic_fetch_add(&cq->ref, 1);
	}
	if (flags & FI_RECV) {
		b->rx_cq = cq;
		b->rx_selective = sel;
		atomic_fetch_add(&cq->ref, 1);
	}
	return 0;
}

/* A counter replaces the one bound before for the same events; each
 * slot holds its own reference. */
static int iwarp_ep_base_bind_cntr(struct iwarp_ep_base *b,
				   struct iwarp_cntr *c, uint64_t flags)
{
	struct iwarp_cntr **slot[] = { &b->cntr_send, &b->cntr_recv,
				       &b->cntr_write, &b->cntr_read,
				       &b->cntr_rwrite, &b->cntr_rread };
	static const uint64_t bit[] = { FI_SEND, FI_RECV, FI_WRITE, FI_READ,
					FI_REMOTE_WRITE, FI_REMOTE_READ };
	size_t i;

	/* remote accesses are counted for endpoints asked FI_RMA_EVENT */
	if ((flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) &&
	    !(b->info->caps & FI_RMA_EVENT))
		return -FI_ENOSYS;
	if (!(flags & (FI_SEND | FI_RECV | FI_WRITE | FI_READ |
		       FI_REMOTE_WRITE | FI_REMOTE_READ)))
		return -FI_EINVAL;
	for (i = 0; i < 6; i++) {
		if (!(flags & bit[i]))
			continue;
		iwarp_ep_base_put_cntr(slot[i]);
		*slot[i] = c;
		atomic_fetch_add(&c->ref, 1);
	}
	return 0;
}

int iwarp_ep_base_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct iwarp_ep_base *b = iwarp_ep_base_of(fid);

	if (b->enabled)
		return -FI_EBUSY;
	switch (bfid->fclass) {
	case FI_CLASS_CQ:
		return iwarp_ep_base_bind_cq(b, iwarp_cq_of(bfid), flags);
	case FI_CLASS_CNTR:
		return iwarp_ep_base_bind_cntr(b, iwarp_cntr_of(bfid), flags);
	case FI_CLASS_SRX_CTX:
	case FI_CLASS_STX_CTX:
		return iwarp_ctx_bind(b, bfid);
	default:
		return b->type->bind ? b->type->bind(b, bfid, flags) :
				       -FI_EINVAL;
	}
}

/* ---- control, options, size_left */

static int iwarp_ep_base_opsflag(struct iwarp_ep_base *b, bool set,
				 uint64_t *arg)
{
	if (!arg)
		return -FI_EINVAL;
	if (!set)
		*arg = *arg & FI_TRANSMIT ? b->tx_op_flags : b->rx_op_flags;
	else if (*arg & FI_TRANSMIT)
		b->tx_op_flags = *arg & ~FI_TRANSMIT;
	else
		b->rx_op_flags = *arg & ~FI_RECV;
	return 0;
}

int iwarp_ep_base_control(struct fid *fid, int command, void *arg)
{
	struct iwarp_ep_base *b = iwarp_ep_base_of(fid);

	switch (command) {
	case FI_ENABLE:
		return b->type->enable(b);
	case FI_GETOPSFLAG:
		return iwarp_ep_base_opsflag(b, false, arg);
	case FI_SETOPSFLAG:
		return iwarp_ep_base_opsflag(b, true, arg);
	default:
		return -FI_ENOSYS;
	}
}

int iwarp_opt_size_out(size_t v, void *optval, size_t *optlen)
{
	if (!optval || *optlen < sizeof(size_t)) {
		*optlen = sizeof(size_t);
		return -FI_ETOOSMALL;
	}
	*(size_t *)optval = v;
	*optlen = sizeof(size_t);
	return 0;
}

int iwarp_ep_base_getopt(fid_t fid, int level, int optname, void *optval,
			 size_t *optlen)
{
	struct iwarp_ep_base *b = iwarp_ep_base_of(fid);
	unsigned int opts = b->type->opts;

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_CM_DATA_SIZE && (opts & IWARP_OPT_CM_DATA_SIZE))
		return iwarp_opt_size_out(b->type->cm_data_max, optval, optlen);
	if (optname == FI_OPT_MIN_MULTI_RECV &&
	    (opts & IWARP_OPT_MIN_MULTI_RECV))
		return iwarp_opt_size_out(b->min_multi_recv, optval, optlen);
	return -FI_ENOPROTOOPT;
}

int iwarp_ep_base_setopt(fid_t fid, int level, int optname,
			 const void *optval, size_t optlen)
{
	struct iwarp_ep_base *b = iwarp_ep_base_of(fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV ||
	    !(b->type->opts & IWARP_OPT_MIN_MULTI_RECV))
		return -FI_ENOPROTOOPT;
	if (optlen != sizeof(size_t) || !optval)
		return -FI_EINVAL;
	b->min_multi_recv = *(const size_t *)optval;
	return 0;
}

ssize_t iwarp_ep_base_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

/* ---- errno mapping */

int iwarp_errno_from_status(int status)
{
	switch (status) {
	case IW_WC_FLUSHED:
		return FI_ECANCELED;
	case IW_WC_LOC_LEN:
		return FI_ETRUNC;
	case IW_WC_REM_ERROR:
		return FI_EREMOTEIO;
	default:
		return FI_EIO;
	}
}

int iwarp_prov_errno_of(const struct iw_err *err)
{
	if (!err->why)
		return 0;
	return IWARP_PROV_ERRNO(err->layer, err->etype, err->ecode);
}
