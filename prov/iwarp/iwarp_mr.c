/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory registration: an engine STag per region. The key is the STag
 * (random, provider chosen, or the one asked for: iwarp_mr_key_wanted);
 * remote addresses are offsets into the region (virtual addresses only
 * with FI_MR_BASIC). Local buffers
 * need no registration (we are software): descriptors are accepted and
 * ignored.
 */
#include "iwarp.h"

#include <stdlib.h>

#include "iwarp/engine.h"

static void iwarp_mr_put_cntr(struct iwarp_cntr **slot)
{
	if (*slot)
		atomic_fetch_sub(&(*slot)->ref, 1);
	*slot = NULL;
}

static int iwarp_mr_close(struct fid *fid)
{
	struct iwarp_mr *mr = iwarp_container_of(fid, struct iwarp_mr,
						 mr_fid.fid);
	struct iwarp_fabric *fab = mr->dom->fabric;

	iwarp_lock(fab);
	iw_mr_dereg(mr->imr);
	iwarp_mr_put_cntr(&mr->cntr_rwrite);
	iwarp_mr_put_cntr(&mr->cntr_rread);
	atomic_fetch_sub(&mr->dom->ref, 1);
	iwarp_unlock(fab);
	free(mr);
	return 0;
}

static void iwarp_mr_set_cntr(struct iwarp_cntr **slot, struct iwarp_cntr *c)
{
	iwarp_mr_put_cntr(slot);
	atomic_fetch_add(&c->ref, 1);
	*slot = c;
}

/*
 * fi_mr_bind of a counter (FI_RMA_EVENT): it counts the peers' Writes
 * into (FI_REMOTE_WRITE) or Reads from (FI_REMOTE_READ) this region.
 */
static int iwarp_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct iwarp_mr *mr = iwarp_container_of(fid, struct iwarp_mr,
						 mr_fid.fid);
	struct iwarp_cntr *c;

	if (!iwarp_cntr_is_ours(bfid))
		return -FI_EINVAL;
	c = iwarp_cntr_of(bfid);
	if (c->dom != mr->dom || !flags ||
	    (flags & ~(FI_REMOTE_WRITE | FI_REMOTE_READ)))
		return -FI_EINVAL;
	iwarp_lock(mr->dom->fabric);
	if (flags & FI_REMOTE_WRITE)
		iwarp_mr_set_cntr(&mr->cntr_rwrite, c);
	if (flags & FI_REMOTE_READ)
		iwarp_mr_set_cntr(&mr->cntr_rread, c);
	iwarp_unlock(mr->dom->fabric);
	return 0;
}

void iwarp_rma_target(struct iwarp_ep_base *b, bool write, void *mr_ctx)
{
	struct iwarp_mr *mr = mr_ctx;
	struct iwarp_cntr *c = write ? b->cntr_rwrite : b->cntr_rread;

	if (!mr)
		return;		/* an empty Write touched nothing */
	if (c)
		iwarp_cntr_inc(c);
	c = write ? mr->cntr_rwrite : mr->cntr_rread;
	if (c)
		iwarp_cntr_inc(c);
}

static struct fi_ops iwarp_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_mr_close,
	.bind = iwarp_mr_bind,
	.control = iwarp_no_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

/* Only remote rights matter to the engine; local ones need no check. */
static unsigned int iwarp_mr_access(uint64_t access)
{
	unsigned int a = IW_ACC_LOCAL_WRITE;

	if (access & FI_REMOTE_READ)
		a |= IW_ACC_REMOTE_READ;
	if (access & FI_REMOTE_WRITE)	/* atomics write; no bit of their own */
		a |= IW_ACC_REMOTE_WRITE | IW_ACC_REMOTE_ATOMIC;
	return a;
}

int iwarp_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		     uint64_t flags, struct fid_mr **mrp)
{
	struct iwarp_domain *dom = iwarp_domain_of(fid);
	const struct iovec *iov = attr->mr_iov;
	struct iwarp_mr *mr;
	uint64_t base;
	int ret;

	if (fid->fclass != FI_CLASS_DOMAIN || attr->iov_count != 1 || !iov ||
	    flags)
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	base = dom->mr_mode & (FI_MR_VIRT_ADDR | IWARP_MR_BASIC) ?
		       (uint64_t)(uintptr_t)iov->iov_base : 0;
	if (iwarp_mr_app_keys(dom->mr_mode) &&
	    attr->requested_key > UINT32_MAX) {
		free(mr);
		return -FI_EKEYREJECTED;
	}
	iwarp_lock(dom->fabric);
	ret = -EEXIST;
	if (iwarp_mr_app_keys(dom->mr_mode) ||
	    iwarp_mr_key_wanted(dom->mr_mode, attr->requested_key))
		ret = iw_mr_reg_stag(dom->pd, iov->iov_base, iov->iov_len,
				     base, iwarp_mr_access(attr->access),
				     (uint32_t)attr->requested_key, &mr->imr);
	/* FI_MR_PROV_KEY: a key asked for and taken gets one of ours */
	if (ret == -EEXIST && !iwarp_mr_app_keys(dom->mr_mode))
		ret = iw_mr_reg(dom->pd, iov->iov_base, iov->iov_len, base,
				iwarp_mr_access(attr->access), &mr->imr);
	if (!ret)
		atomic_fetch_add(&dom->ref, 1);
	iwarp_unlock(dom->fabric);
	if (ret) {
		free(mr);
		return ret == -ENOMEM ? -FI_ENOMEM : ret == -EEXIST ?
		       -FI_ENOKEY : -FI_EINVAL;
	}
	iw_mr_set_ctx(mr->imr, mr);
	mr->dom = dom;
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = &iwarp_mr_fi_ops;
	mr->mr_fid.mem_desc = mr;
	mr->mr_fid.key = iw_mr_stag(mr->imr);
	*mrp = &mr->mr_fid;
	return 0;
}

int iwarp_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return iwarp_mr_regattr(fid, &attr, flags, mr);
}

int iwarp_mr_reg(struct fid *fid, const void *buf, size_t len,
		 uint64_t access, uint64_t offset, uint64_t requested_key,
		 uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_mr_regv(fid, &iov, 1, access, offset, requested_key,
			     flags, mr, context);
}
