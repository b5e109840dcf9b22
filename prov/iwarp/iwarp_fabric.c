/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fabric object: one IP subnet, named in CIDR form as fi_getinfo reports
 * it. It opens domains (interfaces in that subnet), event queues and
 * passive endpoints, and owns the lock and the pollable list of manual
 * progress. Wait sets are not offered.
 */
#include "iwarp.h"

#include <stdlib.h>
#include <string.h>

static int iwarp_fabric_close(struct fid *fid)
{
	struct iwarp_fabric *fab = iwarp_fabric_of(fid);

	if (atomic_load(&fab->ref)) {
		FI_WARN(&iwarp_prov, FI_LOG_FABRIC,
			"fabric %s still has open domains or EQs\n",
			fab->name);
		return -FI_EBUSY;
	}
	free(fab->name);
	iwarp_ready_fini(fab);
	free(fab->pfds);
	free(fab->pptr);
	free(fab);
	return 0;
}

/* fi_domain2() calls this only with flags (FI_PEER): not supported. */
static int iwarp_no_domain2(struct fid_fabric *fabric, struct fi_info *info,
			    struct fid_domain **domain, uint64_t flags,
			    void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops iwarp_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_fabric_close,
	.bind = iwarp_no_bind,
	.control = iwarp_no_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

static struct fi_ops_fabric iwarp_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = iwarp_domain_open,
	.passive_ep = iwarp_passive_ep,
	.eq_open = iwarp_eq_open,
	.wait_open = iwarp_wait_open,
	.trywait = iwarp_trywait,
	.domain2 = iwarp_no_domain2,
};

int iwarp_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context)
{
	struct iwarp_fabric *fab;
	int ret;

	if (!attr || !attr->name)
		return -FI_EINVAL;
	/* one of the fabrics fi_getinfo reports now */
	ret = iwarp_iface_lookup(attr->name, NULL, NULL);
	if (ret) {
		FI_INFO(&iwarp_prov, FI_LOG_FABRIC, "unknown fabric %s\n",
			attr->name);
		return ret;
	}
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	fab->name = strdup(attr->name);
	if (!fab->name) {
		free(fab);
		return -FI_ENOMEM;
	}
	fab->lock = 0;
	iwarp_list_init(&fab->pollables);
	iwarp_list_init(&fab->busy);
	iwarp_list_init(&fab->parked);
	fab->ready_fd = -1;
	atomic_init(&fab->ref, 0);
	fab->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric_fid.fid.context = context;
	fab->fabric_fid.fid.ops = &iwarp_fabric_fi_ops;
	fab->fabric_fid.ops = &iwarp_fabric_ops;
	*fabric = &fab->fabric_fid;
	FI_INFO(&iwarp_prov, FI_LOG_FABRIC, "opened fabric %s\n", fab->name);
	return 0;
}
