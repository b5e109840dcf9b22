/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_DGRAM endpoint object: a UDP socket bound to the domain's
 * interface (the port of info->src_addr, else one the kernel picks) when
 * the endpoint is opened, so fi_getname answers at once. The endpoint
 * base binds CQs and counters; this file adds the AV, the pollable that
 * progress drives and the receive pool. Unreliable and unordered as the
 * type promises: UDP may drop, duplicate or reorder datagrams.
 */
#include "dgram.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "iwarp/engine.h"

/* ---- the socket */

static int iwarp_dgram_errno(int err)
{
	switch (err) {
	case EADDRINUSE:
		return -FI_EADDRINUSE;
	case EADDRNOTAVAIL:
		return -FI_EADDRNOTAVAIL;
	case EACCES:
		return -FI_EACCES;
	case ENOMEM:
	case ENOBUFS:
		return -FI_ENOMEM;
	default:
		return -FI_EINVAL;
	}
}

/*
 * A socket bound to *name; *name learns the port. SO_RXQ_OVFL makes the
 * kernel tell us, with each datagram, how many it dropped for want of
 * room; a larger receive buffer holds bursts (capped by rmem_max).
 */
static int iwarp_dgram_socket(union iwarp_sockaddr *name)
{
	int one = 1, size = IWARP_DGRAM_SOCKBUF, fd, ret;
	socklen_t len = iwarp_sa_len(&name->sa);

	fd = socket(name->sa.sa_family, SOCK_DGRAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0);
	if (fd < 0)
		return iwarp_dgram_errno(errno);
	setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (bind(fd, &name->sa, len) || getsockname(fd, &name->sa, &len)) {
		ret = iwarp_dgram_errno(errno);
		iw_fd_close(fd);
		return ret;
	}
	return fd;
}

/* ---- progress */

static void iwarp_dgram_poll_info(struct iwarp_pollable *p, int *fd,
				  short *events, uint64_t *deadline)
{
	struct iwarp_dgram_ep *ep = iwarp_container_of(p, struct iwarp_dgram_ep,
						       poll);

	/* unread datagrams wait in the kernel until a receive is posted */
	*fd = ep->fd;
	*events = iwarp_dgram_rx_waiting(ep) ? POLLIN : 0;
	*deadline = 0;
}

/* ---- bind, enable */

static int iwarp_dgram_bind_other(struct iwarp_ep_base *b, struct fid *bfid,
				  uint64_t flags)
{
	struct iwarp_dgram_ep *ep = iwarp_container_of(b, struct iwarp_dgram_ep,
						       base);
	struct iwarp_av *av;

	if (bfid->fclass == FI_CLASS_EQ)
		return 0;	/* no CM events on a connectionless endpoint */
	if (bfid->fclass != FI_CLASS_AV || ep->av)
		return -FI_EINVAL;
	av = iwarp_av_of(bfid);
	if (av->family != ep->name.sa.sa_family)
		return -FI_EINVAL;
	ep->av = av;
	atomic_fetch_add(&av->ref, 1);
	return 0;
}

/* A direction the endpoint has must report somewhere. */
static int iwarp_dgram_check_binds(struct iwarp_dgram_ep *ep)
{
	struct iwarp_ep_base *b = &ep->base;
	uint64_t caps = b->info->caps;

	if (!ep->av)
		return -FI_ENOAV;
	if ((caps & FI_SEND) && !b->tx_cq && !b->cntr_send)
		return -FI_ENOCQ;
	if ((caps & FI_RECV) && !b->rx_cq && !b->cntr_recv)
		return -FI_ENOCQ;
	return 0;
}

/* Lock held: the socket wakes the receive side's waiters. */
static void iwarp_dgram_wait_bind(struct iwarp_dgram_ep *ep, bool bind)
{
	struct iwarp_ep_base *b = &ep->base;

	if (bind)
		iwarp_pollable_add(b->fab, &ep->poll);
	if (b->rx_cq && bind)
		iwarp_wait_bind(&b->rx_cq->wait, &ep->poll);
	else if (b->rx_cq)
		iwarp_wait_unbind(&b->rx_cq->wait, &ep->poll);
	if (b->cntr_recv && bind)
		iwarp_wait_bind(&b->cntr_recv->wait, &ep->poll);
	else if (b->cntr_recv)
		iwarp_wait_unbind(&b->cntr_recv->wait, &ep->poll);
	if (!bind)
		iwarp_pollable_del(&ep->poll);
}

static int iwarp_dgram_enable(struct iwarp_ep_base *b)
{
	struct iwarp_dgram_ep *ep = iwarp_container_of(b, struct iwarp_dgram_ep,
						       base);
	int ret;

	if (b->enabled)
		return 0;
	ret = iwarp_dgram_check_binds(ep);
	if (ret)
		return ret;
	iwarp_lock(b->fab);
	iwarp_dgram_wait_bind(ep, true);
	b->enabled = true;
	iwarp_unlock(b->fab);
	return 0;
}

static const struct iwarp_ep_type iwarp_dgram_type = {
	.name = "DGRAM",
	.bind = iwarp_dgram_bind_other,
	.enable = iwarp_dgram_enable,
	.srx_offer = iwarp_dgram_srx_offer,
};

/* ---- names */

static int iwarp_dgram_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct iwarp_dgram_ep *ep = iwarp_dgram_ep_of(fid);

	return iwarp_addr_copy_out(&ep->name, addr, addrlen);
}

/* Before enable only: a socket bound to the new name replaces ours. */
static int iwarp_dgram_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct iwarp_dgram_ep *ep = iwarp_dgram_ep_of(fid);
	union iwarp_sockaddr name;
	int fd;

	if (!addr || !iwarp_addr_valid(addr, addrlen) ||
	    addrlen > sizeof(name))
		return -FI_EINVAL;
	memset(&name, 0, sizeof(name));
	memcpy(&name, addr, addrlen);
	if (name.sa.sa_family != ep->name.sa.sa_family)
		return -FI_EINVAL;
	iwarp_lock(ep->base.fab);
	fd = ep->base.enabled ? -FI_EBUSY : iwarp_dgram_socket(&name);
	if (fd >= 0) {
		iw_fd_close(ep->fd);
		ep->fd = fd;
		ep->name = name;
	}
	iwarp_unlock(ep->base.fab);
	return fd < 0 ? fd : 0;
}

static struct fi_ops_cm iwarp_dgram_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = iwarp_dgram_setname,
	.getname = iwarp_dgram_getname,
	.getpeer = iwarp_no_getpeer,
	.connect = iwarp_no_connect,
	.listen = iwarp_no_listen,
	.accept = iwarp_no_accept,
	.reject = iwarp_no_reject,
	.shutdown = iwarp_no_shutdown,
	.join = iwarp_no_join,
};

/* ---- options, cancel */

static int iwarp_dgram_getopt(fid_t fid, int level, int optname,
			      void *optval, size_t *optlen)
{
	struct iwarp_dgram_ep *ep = iwarp_dgram_ep_of(fid);
	size_t need = sizeof(ep->stats);

	if (level != FI_OPT_ENDPOINT || optname != IWARP_OPT_DGRAM_STATS)
		return iwarp_ep_base_getopt(fid, level, optname, optval,
					    optlen);
	if (!optlen)
		return -FI_EINVAL;
	if (!optval || *optlen < need) {
		*optlen = need;
		return -FI_ETOOSMALL;
	}
	iwarp_lock(ep->base.fab);
	memcpy(optval, ep->stats, need);
	iwarp_unlock(ep->base.fab);
	*optlen = need;
	return 0;
}

static ssize_t iwarp_dgram_cancel(fid_t fid, void *context)
{
	struct iwarp_dgram_ep *ep = iwarp_dgram_ep_of(fid);
	int ret;

	iwarp_lock(ep->base.fab);
	ret = iwarp_dgram_cancel_rx(ep, context);
	iwarp_unlock(ep->base.fab);
	return ret;
}

static struct fi_ops_ep iwarp_dgram_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = iwarp_dgram_cancel,
	.getopt = iwarp_dgram_getopt,
	.setopt = iwarp_ep_base_setopt,
	.tx_ctx = NULL,
	.rx_ctx = NULL,
	.rx_size_left = iwarp_ep_base_size_left,
	.tx_size_left = iwarp_ep_base_size_left,
};

/* ---- close */

/* One line per endpoint: what arrived and what was dropped, and why. */
static void iwarp_dgram_log_stats(const struct iwarp_dgram_ep *ep)
{
	const uint64_t *s = ep->stats;
	char host[IWARP_ADDR_STRLEN];

	FI_INFO(&iwarp_prov, FI_LOG_EP_DATA,
		"DGRAM %s: sent %llu, delivered %llu (%llu from unknown "
		"sources, %llu truncated); dropped: short %llu, bad magic "
		"%llu, bad version %llu, bad flags %llu, bad length %llu, "
		"oversize %llu, no receive %llu, by the kernel %llu\n",
		iwarp_addr_str(&ep->name, host, sizeof(host)),
		(unsigned long long)s[IWARP_DGRAM_STAT_SENT],
		(unsigned long long)s[IWARP_DGRAM_OK],
		(unsigned long long)s[IWARP_DGRAM_STAT_UNKNOWN_SRC],
		(unsigned long long)s[IWARP_DGRAM_STAT_TRUNC],
		(unsigned long long)s[IWARP_DGRAM_SHORT],
		(unsigned long long)s[IWARP_DGRAM_BAD_MAGIC],
		(unsigned long long)s[IWARP_DGRAM_BAD_VERSION],
		(unsigned long long)s[IWARP_DGRAM_BAD_FLAGS],
		(unsigned long long)s[IWARP_DGRAM_BAD_LENGTH],
		(unsigned long long)s[IWARP_DGRAM_OVERSIZE],
		(unsigned long long)s[IWARP_DGRAM_NO_MATCH],
		(unsigned long long)s[IWARP_DGRAM_STAT_KERNEL]);
}

static void iwarp_dgram_free(struct iwarp_dgram_ep *ep)
{
	if (ep->fd >= 0)
		iw_fd_close(ep->fd);
	free(ep->rx_pool);
	free(ep->bounce);
	free(ep);
}

/* Posted receives go without completions, like the endpoint. */
static int iwarp_dgram_close(struct fid *fid)
{
	struct iwarp_dgram_ep *ep = iwarp_dgram_ep_of(fid);
	struct iwarp_fabric *fab = ep->base.fab;

	iwarp_lock(fab);
	if (ep->base.enabled)
		iwarp_dgram_wait_bind(ep, false);
	if (ep->av)
		atomic_fetch_sub(&ep->av->ref, 1);
	iwarp_dgram_log_stats(ep);
	iwarp_ep_base_fini(&ep->base);
	iwarp_unlock(fab);
	iwarp_dgram_free(ep);
	return 0;
}

static struct fi_ops iwarp_dgram_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_dgram_close,
	.bind = iwarp_ep_base_bind,
	.control = iwarp_ep_base_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

/* ---- open */

static int iwarp_dgram_rx_pool(struct iwarp_dgram_ep *ep)
{
	const struct fi_info *info = ep->base.info;
	size_t n = info->rx_attr && info->rx_attr->size ?
		   info->rx_attr->size : IWARP_QUEUE_SIZE, i;

	if (n > IWARP_DGRAM_RX_MAX)
		n = IWARP_DGRAM_RX_MAX;
	ep->rx_pool = calloc(n, sizeof(*ep->rx_pool));
	ep->bounce = malloc(IWARP_DGRAM_BOUNCE);
	if (!ep->rx_pool || !ep->bounce)
		return -FI_ENOMEM;
	for (i = 0; i < n; i++)
		iwarp_list_add_tail(&ep->free_rx, &ep->rx_pool[i].link);
	return 0;
}

/* The name to bind: info's source (its port too), else the domain's. */
static int iwarp_dgram_name(struct iwarp_dgram_ep *ep,
			    const struct fi_info *info)
{
	ep->name = ep->base.dom->iface.addr;
	iwarp_addr_set_port(&ep->name, 0);
	if (!info->src_addr)
		return 0;
	if (!iwarp_addr_valid(info->src_addr, info->src_addrlen) ||
	    info->src_addrlen > sizeof(ep->name))
		return -FI_EINVAL;
	memset(&ep->name, 0, sizeof(ep->name));
	memcpy(&ep->name, info->src_addr, info->src_addrlen);
	return 0;
}

static void iwarp_dgram_limits(struct iwarp_dgram_ep *ep,
			       const struct fi_info *info)
{
	ep->max_msg = IWARP_DGRAM_MSG_MAX;
	if (info->ep_attr && info->ep_attr->max_msg_size &&
	    info->ep_attr->max_msg_size < ep->max_msg)
		ep->max_msg = info->ep_attr->max_msg_size;
	ep->inject = ep->max_msg;
	if (info->tx_attr && info->tx_attr->inject_size < ep->inject)
		ep->inject = info->tx_attr->inject_size;
	if ((info->mode & FI_MSG_PREFIX) && info->ep_attr)
		ep->prefix = info->ep_attr->msg_prefix_size;
}

static int iwarp_dgram_setup(struct iwarp_dgram_ep *ep,
			     const struct fi_info *info)
{
	int ret;

	iwarp_list_init(&ep->posted_msg);
	iwarp_list_init(&ep->posted_tagged);
	iwarp_list_init(&ep->free_rx);
	iwarp_list_init(&ep->poll.link);
	ep->poll.progress = iwarp_dgram_progress;
	ep->poll.poll_info = iwarp_dgram_poll_info;
	iwarp_dgram_limits(ep, info);
	ret = iwarp_dgram_rx_pool(ep);
	if (!ret)
		ret = iwarp_dgram_name(ep, info);
	if (!ret)
		ret = iwarp_dgram_socket(&ep->name);
	if (ret < 0)
		return ret;
	ep->fd = ret;
	return 0;
}

int iwarp_dgram_open(struct fid_domain *domain, struct fi_info *info,
		     struct fid_ep **epp, void *context)
{
	struct iwarp_domain *dom = iwarp_domain_of(&domain->fid);
	struct iwarp_dgram_ep *ep;
	int ret;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_DGRAM)
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->fd = -1;
	if (iwarp_ep_base_init(&ep->base, &iwarp_dgram_type, dom, info,
			       context)) {
		free(ep);
		return -FI_ENOMEM;
	}
	ret = iwarp_dgram_setup(ep, info);
	if (ret) {
		iwarp_lock(ep->base.fab);
		iwarp_ep_base_fini(&ep->base);
		iwarp_unlock(ep->base.fab);
		iwarp_dgram_free(ep);
		return ret;
	}
	ep->base.ep_fid.fid.ops = &iwarp_dgram_fi_ops;
	ep->base.ep_fid.ops = &iwarp_dgram_ep_ops;
	ep->base.ep_fid.cm = &iwarp_dgram_cm_ops;
	ep->base.ep_fid.msg = &iwarp_dgram_msg_ops;
	ep->base.ep_fid.tagged = &iwarp_dgram_tagged_ops;
	*epp = &ep->base.ep_fid;
	return 0;
}
