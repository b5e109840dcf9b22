/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The -FI_ENOSYS stubs every object's ops tables point at for what it
 * does not do, defined once (libfabric's fi_no_* are internal).
 */
#include "iwarp.h"

int iwarp_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	return -FI_ENOSYS;
}

int iwarp_no_control(struct fid *fid, int command, void *arg)
{
	return -FI_ENOSYS;
}

int iwarp_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context)
{
	return -FI_ENOSYS;
}

int iwarp_no_tostr(const struct fid *fid, char *buf, size_t len)
{
	return -FI_ENOSYS;
}

int iwarp_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		     void *ops, void *context)
{
	return -FI_ENOSYS;
}

int iwarp_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

int iwarp_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		     size_t paramlen)
{
	return -FI_ENOSYS;
}

int iwarp_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

int iwarp_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

int iwarp_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		    size_t paramlen)
{
	return -FI_ENOSYS;
}

int iwarp_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

int iwarp_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		  struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

ssize_t iwarp_no_senddata(struct fid_ep *ep, const void *buf, size_t len,
			  void *desc, uint64_t data, fi_addr_t dest_addr,
			  void *context)
{
	return -FI_ENOSYS;
}

ssize_t iwarp_no_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			    uint64_t data, fi_addr_t dest_addr)
{
	return -FI_ENOSYS;
}

ssize_t iwarp_no_writedata(struct fid_ep *ep, const void *buf, size_t len,
			   void *desc, uint64_t data, fi_addr_t dest_addr,
			   uint64_t addr, uint64_t key, void *context)
{
	return -FI_ENOSYS;
}

ssize_t iwarp_no_inject_writedata(struct fid_ep *ep, const void *buf,
				  size_t len, uint64_t data,
				  fi_addr_t dest_addr, uint64_t addr,
				  uint64_t key)
{
	return -FI_ENOSYS;
}
