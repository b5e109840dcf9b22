/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Passive endpoint: an engine listener. A complete MPA Request becomes an
 * FI_CONNREQ event whose info->handle is an iwarp_connreq; fi_endpoint()
 * with that info and fi_accept() turn it into a connection, fi_reject()
 * answers it with the R bit and private data.
 */
#include "msg.h"

#include <stdlib.h>
#include <string.h>

static struct iwarp_pep *iwarp_pep_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_pep, pep_fid.fid);
}

static void iwarp_pep_progress(struct iwarp_pollable *p)
{
	struct iwarp_pep *pep = iwarp_container_of(p, struct iwarp_pep, poll);

	iw_listener_progress(pep->l);
}

static void iwarp_pep_poll_info(struct iwarp_pollable *p, int *fd,
				short *events, uint64_t *deadline)
{
	struct iwarp_pep *pep = iwarp_container_of(p, struct iwarp_pep, poll);

	*fd = iw_listener_fd(pep->l);
	*events = iw_listener_accepting(pep->l) ? POLLIN : 0;
	/* requests still being read sit on sockets we do not poll */
	*deadline = iw_listener_busy(pep->l) ? 1 :
					      iw_listener_deadline(pep->l);
}

void iwarp_connreq_release(struct iwarp_connreq *cr)
{
	iwarp_list_del(&cr->link);
	if (cr->req)
		iw_conn_req_set_ctx(cr->req, NULL);
	free(cr);
}

static int iwarp_connreq_close(struct fid *fid)
{
	return -FI_ENOSYS;	/* released by accept, reject or the pep */
}

static struct fi_ops iwarp_connreq_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_connreq_close,
	.bind = iwarp_no_bind,
	.control = iwarp_no_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

void iwarp_pep_info_ahead(struct iwarp_pep *pep)
{
	if (!pep->info_next)
		pep->info_next = fi_dupinfo(pep->info);
}

/* The FI_CONNREQ info: the pep's, with both addresses of the request. */
static struct fi_info *iwarp_connreq_info(struct iwarp_pep *pep,
					  struct iwarp_connreq *cr)
{
	struct fi_info *info = pep->info_next;
	union iwarp_sockaddr a;
	socklen_t len = sizeof(a);

	pep->info_next = NULL;
	if (!info)
		info = fi_dupinfo(pep->info);
	if (!info)
		return NULL;
	info->handle = &cr->fid;
	if (!iw_conn_req_getpeer(cr->req, &a.sa, &len)) {
		free(info->dest_addr);
		info->dest_addr = malloc(len);
		if (info->dest_addr) {
			memcpy(info->dest_addr, &a, len);
			info->dest_addrlen = len;
		}
	}
	len = sizeof(a);
	if (!iw_conn_req_getname(cr->req, &a.sa, &len)) {
		free(info->src_addr);
		info->src_addr = malloc(len);
		if (info->src_addr) {
			memcpy(info->src_addr, &a, len);
			info->src_addrlen = len;
		}
	}
	return info;
}

static void iwarp_pep_refuse(struct iw_conn_req *req, const char *why)
{
	union iwarp_sockaddr a = { 0 };
	socklen_t len = sizeof(a);
	char name[IWARP_ADDR_STRLEN] = "?";

	if (!iw_conn_req_getpeer(req, &a.sa, &len))
		iwarp_addr_str(&a, name, sizeof(name));
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"connection request from %s refused: %s\n", name, why);
}

/* With a job key: the request's auth block, checked and stripped
 * from what the user sees. NULL, or why the request is refused. */
static const char *iwarp_pep_auth(struct iwarp_pep *pep,
				  struct iwarp_connreq *cr,
				  const uint8_t **pd, uint16_t *len)
{
	struct iwarp_auth hs = { .initiator = false };

	if (!iwarp_auth_on(&pep->key))
		return NULL;
	if (*len > IWARP_CM_DATA_MAX)
		return "private data longer than an auth block and 228 "
		       "octets of CM data";
	if (iwarp_auth_pd_get(&hs, NULL, *pd, *len))
		return "no auth block in its private data (no job key there?)";
	memcpy(cr->nonce_i, hs.nonce_i, IWARP_AUTH_NONCE_LEN);
	cr->authed = true;
	*pd += IWARP_AUTH_PD_LEN;
	*len -= IWARP_AUTH_PD_LEN;
	return NULL;
}

static void iwarp_pep_conn_request(void *arg, struct iw_conn_req *req,
				   const struct iw_cm_event *ev)
{
	struct iwarp_pep *pep = arg;
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 512];
	struct fi_eq_cm_entry *entry = (void *)buf;
	const uint8_t *pd = ev->pdata;
	uint16_t len = ev->pdata_len;
	struct iwarp_connreq *cr;
	const char *why;

	cr = calloc(1, sizeof(*cr));
	if (cr)		/* ours comes first, before any auth block */
		cr->ext = iwarp_ext_get(&pd, &len);
	why = !cr ? "out of memory" : !pep->eq ? "no EQ" :
					       iwarp_pep_auth(pep, cr, &pd, &len);
	if (why) {
		iwarp_pep_refuse(req, why);
		free(cr);
		iw_reject(req, NULL, 0);
		return;
	}
	cr->fid.fclass = FI_CLASS_CONNREQ;
	cr->fid.ops = &iwarp_connreq_ops;
	cr->pep = pep;
	cr->req = req;
	iw_conn_req_set_ctx(req, cr);
	iwarp_list_add_tail(&pep->reqs, &cr->link);
	memset(entry, 0, sizeof(*entry));
	entry->fid = &pep->pep_fid.fid;
	entry->info = iwarp_connreq_info(pep, cr);
	memcpy(entry->data, pd, len);
	iwarp_eq_write_locked(pep->eq, FI_CONNREQ, entry,
			      sizeof(*entry) + len);
}

static void iwarp_pep_conn_dropped(void *arg, struct iw_conn_req *req)
{
	struct iwarp_connreq *cr = iw_conn_req_ctx(req);

	if (cr)
		cr->req = NULL;	/* fi_accept on it now fails cleanly */
}

static const struct iw_listener_ops iwarp_pep_listener_ops = {
	.conn_request = iwarp_pep_conn_request,
	.conn_dropped = iwarp_pep_conn_dropped,
};

static int iwarp_pep_listen(struct fid_pep *pep_fid)
{
	struct iwarp_pep *pep = iwarp_pep_of(&pep_fid->fid);
	struct iw_conn_param param = { 0 };
	char name[IWARP_ADDR_STRLEN];
	int ret;

	if (!pep->eq)
		return -FI_ENOEQ;
	if (pep->l)
		return 0;
	iwarp_lock(pep->fab);
	ret = iw_listen(pep->dev, &pep->addr.sa, iwarp_sa_len(&pep->addr.sa),
			1024, &param, &iwarp_pep_listener_ops, pep, &pep->l);
	if (!ret) {
		pep->poll.progress = iwarp_pep_progress;
		pep->poll.poll_info = iwarp_pep_poll_info;
		pep->poll.rare = true;
		iwarp_pollable_add(pep->fab, &pep->poll);
		if (pep->eq)
			iwarp_wait_bind(&pep->eq->wait, &pep->poll);
	}
	iwarp_unlock(pep->fab);
	if (ret)
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL, "listen on %s failed: %s\n",
			iwarp_addr_str(&pep->addr, name, sizeof(name)),
			strerror(-ret));
	return ret;
}

static int iwarp_pep_reject(struct fid_pep *pep_fid, fid_t handle,
			    const void *param, size_t paramlen)
{
	struct iwarp_pep *pep = iwarp_pep_of(&pep_fid->fid);
	struct iwarp_connreq *cr;
	int ret = 0;

	if (!handle || handle->fclass != FI_CLASS_CONNREQ ||
	    paramlen > IWARP_CM_DATA_MAX || (paramlen && !param))
		return -FI_EINVAL;
	cr = iwarp_container_of(handle, struct iwarp_connreq, fid);
	iwarp_lock(pep->fab);
	if (cr->req)
		iw_reject(cr->req, param, (uint16_t)paramlen);
	else
		ret = -FI_ECONNABORTED;
	cr->req = NULL;
	iwarp_connreq_release(cr);
	iwarp_unlock(pep->fab);
	return ret;
}

static int iwarp_pep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct iwarp_pep *pep = iwarp_pep_of(fid);
	union iwarp_sockaddr a = pep->addr;
	socklen_t len = sizeof(a);

	if (pep->l)
		iw_listener_getname(pep->l, &a.sa, &len);
	return iwarp_addr_copy_out(&a, addr, addrlen);
}

static int iwarp_pep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct iwarp_pep *pep = iwarp_pep_of(fid);
	const struct sockaddr *sa = addr;

	if (pep->l)
		return -FI_EBUSY;
	if (!addr || addrlen < sizeof(struct sockaddr_in) ||
	    addrlen > sizeof(pep->addr) ||
	    (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return -FI_EINVAL;
	memset(&pep->addr, 0, sizeof(pep->addr));
	memcpy(&pep->addr, addr, addrlen);
	return 0;
}

static int iwarp_pep_close(struct fid *fid)
{
	struct iwarp_pep *pep = iwarp_pep_of(fid);
	struct iwarp_fabric *fab = pep->fab;

	iwarp_lock(fab);
	if (pep->l) {
		if (pep->eq)
			iwarp_wait_unbind(&pep->eq->wait, &pep->poll);
		iwarp_pollable_del(&pep->poll);
		iw_listener_close(pep->l);
	}
	while (!iwarp_list_empty(&pep->reqs)) {
		struct iwarp_connreq *cr = iwarp_container_of(
			pep->reqs.next, struct iwarp_connreq, link);

		cr->req = NULL;
		iwarp_connreq_release(cr);
	}
	if (pep->eq)
		atomic_fetch_sub(&pep->eq->ref, 1);
	iwarp_unlock(fab);
	iwarp_auth_key_clear(&pep->key);
	iw_dev_close(pep->dev);
	fi_freeinfo(pep->info_next);
	fi_freeinfo(pep->info);
	atomic_fetch_sub(&fab->ref, 1);
	free(pep);
	return 0;
}

static int iwarp_pep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct iwarp_pep *pep = iwarp_pep_of(fid);

	if (bfid->fclass != FI_CLASS_EQ || pep->eq)
		return -FI_EINVAL;
	pep->eq = iwarp_eq_of(bfid);
	atomic_fetch_add(&pep->eq->ref, 1);
	return 0;
}

static int iwarp_pep_getopt(fid_t fid, int level, int optname, void *optval,
			    size_t *optlen)
{
	struct iwarp_pep *pep = iwarp_pep_of(fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	return iwarp_opt_size_out(IWARP_CM_DATA_MAX -
				  (iwarp_auth_on(&pep->key) ?
				   IWARP_AUTH_PD_LEN : 0), optval, optlen);
}

static int iwarp_pep_setopt(fid_t fid, int level, int optname,
			    const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static struct fi_ops iwarp_pep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_pep_close,
	.bind = iwarp_pep_bind,
	.control = iwarp_no_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

static struct fi_ops_cm iwarp_pep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = iwarp_pep_setname,
	.getname = iwarp_pep_getname,
	.getpeer = iwarp_no_getpeer,
	.connect = iwarp_no_connect,
	.listen = iwarp_pep_listen,
	.accept = iwarp_no_accept,
	.reject = iwarp_pep_reject,
	.shutdown = iwarp_no_shutdown,
	.join = iwarp_no_join,
};

static struct fi_ops_ep iwarp_pep_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.getopt = iwarp_pep_getopt,
	.setopt = iwarp_pep_setopt,
};

int iwarp_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_pep **pepp, void *context)
{
	struct iwarp_fabric *fab = iwarp_fabric_of(&fabric->fid);
	struct iwarp_pep *pep;

	if (!info || (info->ep_attr && info->ep_attr->type != FI_EP_MSG))
		return -FI_EINVAL;
	pep = calloc(1, sizeof(*pep));
	if (!pep)
		return -FI_ENOMEM;
	if (iwarp_auth_key_pick(&pep->key, info)) {
		free(pep);
		return -FI_EINVAL;
	}
	pep->info = fi_dupinfo(info);
	if (!pep->info || iw_dev_open(&pep->dev)) {
		fi_freeinfo(pep->info);
		iwarp_auth_key_clear(&pep->key);
		free(pep);
		return -FI_ENOMEM;
	}
	iw_dev_set_log(pep->dev, iwarp_engine_log, NULL);
	iw_dev_set_log_max(pep->dev, iwarp_engine_log_max());
	pep->fab = fab;
	iwarp_list_init(&pep->reqs);
	iwarp_list_init(&pep->poll.link);
	if (info->src_addr && info->src_addrlen <= sizeof(pep->addr))
		memcpy(&pep->addr, info->src_addr, info->src_addrlen);
	else
		pep->addr.sin.sin_family =
			info->addr_format == FI_SOCKADDR_IN6 ? AF_INET6 :
							       AF_INET;
	atomic_fetch_add(&fab->ref, 1);
	pep->pep_fid.fid.fclass = FI_CLASS_PEP;
	pep->pep_fid.fid.context = context;
	pep->pep_fid.fid.ops = &iwarp_pep_fi_ops;
	pep->pep_fid.cm = &iwarp_pep_cm_ops;
	pep->pep_fid.ops = &iwarp_pep_ep_ops;
	*pepp = &pep->pep_fid;
	return 0;
}
