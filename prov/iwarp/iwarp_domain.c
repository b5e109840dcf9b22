/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Domain object: one interface address inside the fabric's subnet, with
 * the engine device and protection domain its endpoints, CQs, counters,
 * AVs and memory registrations share.
 */
#include "iwarp.h"
#include "iwarp_av.h"

#include <stdlib.h>
#include <string.h>

#include "iwarp/engine.h"
#include "iwarp_rdm.h"

static int iwarp_domain_close(struct fid *fid)
{
	struct iwarp_domain *dom = iwarp_domain_of(fid);

	if (atomic_load(&dom->ref))
		return -FI_EBUSY;
	if (dom->async)
		iwarp_async_put(dom->fabric);
	iw_pd_free(dom->pd);
	iw_dev_close(dom->dev);
	atomic_fetch_sub(&dom->fabric->ref, 1);
	free(dom);
	return 0;
}

/* Scalable endpoints: RDM only (rdm/rdm_sep.c). */
static int iwarp_scalable_open(struct fid_domain *domain, struct fi_info *info,
			       struct fid_ep **sep, void *context)
{
	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_RDM)
		return -FI_ENOSYS;
	return iwarp_rdm_scalable_open(domain, info, sep, context);
}

static int iwarp_no_endpoint2(struct fid_domain *domain, struct fi_info *info,
			      struct fid_ep **ep, uint64_t flags,
			      void *context)
{
	return -FI_ENOSYS;
}

static bool iwarp_wants_trigger(const struct fi_info *info)
{
	return info && ((info->caps & FI_TRIGGER) ||
			(info->tx_attr && (info->tx_attr->caps & FI_TRIGGER)));
}

/*
 * FI_EP_MSG rides one engine QP; FI_EP_RDM manages a QP per peer;
 * FI_EP_DGRAM is a UDP socket. An RDM endpoint asked with FI_TRIGGER
 * gets the triggered-op wrappers.
 */
static int iwarp_endpoint_open(struct fid_domain *domain, struct fi_info *info,
			       struct fid_ep **ep, void *context)
{
	struct iwarp_domain *dom = iwarp_domain_of(&domain->fid);
	enum fi_ep_type type = info && info->ep_attr ? info->ep_attr->type :
						       FI_EP_MSG;
	int ret;

	if (type == FI_EP_DGRAM)
		return iwarp_dgram_open(domain, info, ep, context);
	if (type != FI_EP_RDM)
		return iwarp_msg_open(domain, info, ep, context);
	ret = iwarp_rdm_open(domain, info, ep, context);
	if (ret || !iwarp_wants_trigger(info))
		return ret;
	ret = iwarp_trig_wrap(*ep, dom->fabric);
	if (ret)
		fi_close(&(*ep)->fid);
	return ret;
}

static struct fi_ops iwarp_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_domain_close,
	.bind = iwarp_no_bind,
	.control = iwarp_no_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

static struct fi_ops_domain iwarp_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = iwarp_av_open,
	.cq_open = iwarp_cq_open,
	.endpoint = iwarp_endpoint_open,
	.scalable_ep = iwarp_scalable_open,
	.cntr_open = iwarp_cntr_open,
	.poll_open = iwarp_poll_open,
	.stx_ctx = iwarp_stx_open,
	.srx_ctx = iwarp_srx_open,
	.query_atomic = iwarp_query_atomic,
	.query_collective = iwarp_rdm_query_collective,
	.endpoint2 = iwarp_no_endpoint2,
};

static struct fi_ops_mr iwarp_domain_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = iwarp_mr_reg,
	.regv = iwarp_mr_regv,
	.regattr = iwarp_mr_regattr,
};

/*
 * Finds the interface named by info in the fabric's subnet (the first
 * one if info names none). Returns 0 or -FI_ENODATA.
 */
static int iwarp_domain_iface(const struct iwarp_fabric *fab,
			      const struct fi_info *info,
			      struct iwarp_iface *out)
{
	const char *name = info->domain_attr ? info->domain_attr->name : NULL;
	int ret;

	ret = iwarp_iface_lookup(fab->name, name, out);
	if (ret == -FI_ENODATA)
		FI_INFO(&iwarp_prov, FI_LOG_DOMAIN,
			"no domain %s in fabric %s\n", name ? name : "(any)",
			fab->name);
	return ret;
}

int iwarp_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain, void *context)
{
	struct iwarp_fabric *fab = iwarp_fabric_of(&fabric->fid);
	struct iwarp_domain *dom;
	int ret;

	if (!info)
		return -FI_EINVAL;
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	ret = iwarp_domain_iface(fab, info, &dom->iface);
	if (ret)
		goto free_dom;
	ret = -FI_ENOMEM;
	if (iw_dev_open(&dom->dev))
		goto free_dom;
	iw_dev_set_log(dom->dev, iwarp_engine_log, NULL);
	iw_dev_set_log_max(dom->dev, iwarp_engine_log_max());
	if (iw_pd_alloc(dom->dev, &dom->pd))
		goto close_dev;
	dom->fabric = fab;
	dom->mr_mode = info->domain_attr ? info->domain_attr->mr_mode : 0;
	dom->threading = info->domain_attr ? info->domain_attr->threading :
					     FI_THREAD_SAFE;
	atomic_init(&dom->ref, 0);
	/* automatic progress: the fabric's thread drives what the
	 * application leaves alone (iwarp_async_main) */
	if (info->domain_attr &&
	    (info->domain_attr->data_progress == FI_PROGRESS_AUTO ||
	     info->domain_attr->control_progress == FI_PROGRESS_AUTO)) {
		ret = iwarp_async_get(fab, dom->iface.name);
		if (ret)
			goto free_pd;
		dom->async = true;
	}
	atomic_fetch_add(&fab->ref, 1);
	dom->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain_fid.fid.context = context;
	dom->domain_fid.fid.ops = &iwarp_domain_fi_ops;
	dom->domain_fid.ops = &iwarp_domain_ops;
	dom->domain_fid.mr = &iwarp_domain_mr_ops;
	*domain = &dom->domain_fid;
	FI_INFO(&iwarp_prov, FI_LOG_DOMAIN, "opened domain %s in fabric %s\n",
		dom->iface.name, fab->name);
	return 0;

free_pd:
	iw_pd_free(dom->pd);
close_dev:
	iw_dev_close(dom->dev);
free_dom:
	free(dom);
	return ret;
}
