/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_DGRAM data path. A send is one sendmsg() of [header | payload]
 * and completes as soon as the kernel took it (FI_INJECT too: the kernel
 * copied it). A receive waits in the posted list; progress reads a
 * datagram into the bounce buffer only while receives are posted (the
 * others wait in the kernel's socket buffer, which drops what does not
 * fit), validates its header, matches it (FI_MSG: the oldest untagged
 * receive; FI_TAGGED: the oldest whose tag matches) and copies it out.
 * Whatever fails a check is dropped and counted, never completed.
 */
#include "dgram.h"

#include <stdlib.h>
#include <string.h>

/* What fi_send & co. accept in flags; FI_DELIVERY_COMPLETE and FI_FENCE
 * promise what an unreliable endpoint cannot keep. */
#define IWARP_DGRAM_TX_FLAGS (FI_INJECT | FI_COMPLETION | FI_INJECT_COMPLETE | \
			      FI_TRANSMIT_COMPLETE | FI_REMOTE_CQ_DATA | \
			      FI_MORE)
#define IWARP_DGRAM_RX_FLAGS (FI_COMPLETION | FI_MORE)

static size_t iwarp_dgram_iov_len(const struct iovec *iov, size_t count)
{
	size_t i, len = 0;

	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}

/*
 * FI_MSG_PREFIX: the first ep->prefix octets of every buffer are ours
 * and carry nothing (fi_getinfo(3)); the first iov must hold them. The
 * op then points at a copy of its iov without them. 0 or -FI_EINVAL.
 */
static int iwarp_dgram_unprefix(const struct iwarp_dgram_ep *ep,
				struct iwarp_dgram_op *op, struct iovec *v)
{
	if (!ep->prefix)
		return 0;
	if (!op->count || op->count > IWARP_IOV_MAX || !op->iov ||
	    op->iov[0].iov_len < ep->prefix)
		return -FI_EINVAL;
	memcpy(v, op->iov, op->count * sizeof(*v));
	v[0].iov_base = (char *)v[0].iov_base + ep->prefix;
	v[0].iov_len -= ep->prefix;
	op->iov = v;
	return 0;
}

/* ---- send */

static int iwarp_dgram_tx_check(struct iwarp_dgram_ep *ep,
				const struct iwarp_dgram_op *op, size_t len)
{
	if (!ep->base.enabled)
		return -FI_EOPBADSTATE;
	if (op->flags & ~(uint64_t)IWARP_DGRAM_TX_FLAGS)
		return -FI_EBADFLAGS;
	if (op->count > IWARP_IOV_MAX || (op->count && !op->iov))
		return -FI_EINVAL;
	if (len > ep->max_msg || ((op->flags & FI_INJECT) && len > ep->inject))
		return -FI_EMSGSIZE;
	return 0;
}

/* Lock held. The completion of a send the kernel took or refused. */
static void iwarp_dgram_tx_done(struct iwarp_dgram_ep *ep,
				const struct iwarp_dgram_op *op, size_t len,
				int err)
{
	struct iwarp_ep_base *b = &ep->base;
	uint64_t flags = FI_SEND | (op->tagged ? FI_TAGGED : FI_MSG);
	bool cq = !(op->flags & FI_INJECT) &&
		  (!b->tx_selective || (op->flags & FI_COMPLETION));

	if (err) {
		if (b->tx_cq)
			iwarp_cq_write_err(b->tx_cq, op->context, flags, len,
					   NULL, 0, op->tag, err, 0, NULL, 0,
					   0);
		if (b->cntr_send)
			iwarp_cntr_inc_err(b->cntr_send);
		return;
	}
	ep->stats[IWARP_DGRAM_STAT_SENT]++;
	if (cq && b->tx_cq)
		iwarp_cq_write(b->tx_cq, op->context, flags, len, NULL, 0,
			       op->tag, FI_ADDR_NOTAVAIL);
	if (b->cntr_send)
		iwarp_cntr_inc(b->cntr_send);
}

/* Lock held. sendmsg of header and payload to dest. */
static ssize_t iwarp_dgram_sendmsg(struct iwarp_dgram_ep *ep,
				   const struct iwarp_dgram_op *op,
				   const union iwarp_sockaddr *dest,
				   size_t len)
{
	struct iovec v[IWARP_IOV_MAX + 1];
	uint8_t hdr[IWARP_DGRAM_HDR_MAX];
	struct iwarp_dgram_hdr h = {
		.len = (uint32_t)len,
		.tag = op->tag,
		.data = op->data,
	};
	struct msghdr mh = {
		.msg_name = (void *)&dest->sa,
		.msg_namelen = iwarp_sa_len(&dest->sa),
		.msg_iov = v,
		.msg_iovlen = op->count + 1,
	};

	if (op->tagged)
		h.flags |= IWARP_DGRAM_F_TAG;
	if (op->flags & FI_REMOTE_CQ_DATA)
		h.flags |= IWARP_DGRAM_F_DATA;
	v[0].iov_base = hdr;
	v[0].iov_len = iwarp_dgram_hdr_put(hdr, &h);
	if (op->count)
		memcpy(v + 1, op->iov, op->count * sizeof(*v));
	return sendmsg(ep->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

ssize_t iwarp_dgram_send(struct iwarp_dgram_ep *ep,
			 const struct iwarp_dgram_op *in)
{
	struct iwarp_dgram_op o = *in, *op = &o;
	const union iwarp_sockaddr *dest;
	struct iovec v[IWARP_IOV_MAX];
	ssize_t ret;
	size_t len;
	int err;

	ret = iwarp_dgram_unprefix(ep, op, v);
	len = iwarp_dgram_iov_len(op->iov, op->count);
	if (!ret)
		ret = iwarp_dgram_tx_check(ep, op, len);
	if (ret)
		return ret;
	iwarp_lock(ep->base.fab);
	dest = iwarp_av_addr(ep->av, op->addr);
	if (!dest) {
		iwarp_unlock(ep->base.fab);
		return -FI_EINVAL;
	}
	ret = iwarp_dgram_sendmsg(ep, op, dest, len);
	err = ret < 0 ? errno : 0;
	if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) {
		/* the socket buffer is full: the caller progresses, retries */
		iwarp_progress(ep->base.fab);
		iwarp_unlock(ep->base.fab);
		return -FI_EAGAIN;
	}
	/* taken, or refused for good (no route): the op completes */
	iwarp_dgram_tx_done(ep, op, len, err);
	iwarp_unlock(ep->base.fab);
	return 0;
}

/* ---- receive: posting, cancel */

/* Lock held. Waiters on FD learn that the socket now counts. */
static void iwarp_dgram_rx_armed(struct iwarp_dgram_ep *ep)
{
	struct iwarp_ep_base *b = &ep->base;

	if (b->rx_cq && b->rx_cq->wait.type == FI_WAIT_FD)
		iwarp_wait_sync(&b->rx_cq->wait);
	if (b->cntr_recv && b->cntr_recv->wait.type == FI_WAIT_FD)
		iwarp_wait_sync(&b->cntr_recv->wait);
}

static void iwarp_dgram_rx_fill(struct iwarp_dgram_ep *ep,
				struct iwarp_dgram_rx *rx,
				const struct iwarp_dgram_op *op)
{
	rx->context = op->context;
	rx->flags = FI_RECV | (op->tagged ? FI_TAGGED : FI_MSG);
	rx->tag = op->tag;
	rx->ignore = op->ignore;
	rx->cq = !ep->base.rx_selective || (op->flags & FI_COMPLETION);
	rx->iov_count = op->count;
	if (op->count)
		memcpy(rx->iov, op->iov, op->count * sizeof(*op->iov));
}

ssize_t iwarp_dgram_recv(struct iwarp_dgram_ep *ep,
			 const struct iwarp_dgram_op *in)
{
	struct iwarp_dgram_op o = *in, *op = &o;
	struct iovec v[IWARP_IOV_MAX];
	struct iwarp_dgram_rx *rx;

	if (iwarp_dgram_unprefix(ep, op, v) || ep->base.srx)
		return -FI_EINVAL;	/* srx: receives go to it */
	if (!ep->base.enabled)
		return -FI_EOPBADSTATE;
	if (op->flags & ~(uint64_t)IWARP_DGRAM_RX_FLAGS)
		return -FI_EBADFLAGS;
	if (op->count > IWARP_IOV_MAX || (op->count && !op->iov))
		return -FI_EINVAL;
	iwarp_lock(ep->base.fab);
	if (iwarp_list_empty(&ep->free_rx)) {
		iwarp_progress(ep->base.fab);
		iwarp_unlock(ep->base.fab);
		return -FI_EAGAIN;
	}
	rx = iwarp_container_of(ep->free_rx.next, struct iwarp_dgram_rx, link);
	iwarp_list_del(&rx->link);
	iwarp_dgram_rx_fill(ep, rx, op);
	iwarp_list_add_tail(op->tagged ? &ep->posted_tagged : &ep->posted_msg,
			    &rx->link);
	if (!ep->nposted++)
		iwarp_dgram_rx_armed(ep);
	iwarp_unlock(ep->base.fab);
	return 0;
}

static void iwarp_dgram_rx_put(struct iwarp_dgram_ep *ep,
			       struct iwarp_dgram_rx *rx)
{
	iwarp_list_del(&rx->link);
	iwarp_list_add_tail(&ep->free_rx, &rx->link);
	ep->nposted--;
}

static struct iwarp_dgram_rx *iwarp_dgram_find_ctx(struct iwarp_list *head,
						   void *context)
{
	struct iwarp_list *e;

	for (e = head->next; e != head; e = e->next) {
		struct iwarp_dgram_rx *rx = iwarp_container_of(
			e, struct iwarp_dgram_rx, link);

		if (rx->context == context)
			return rx;
	}
	return NULL;
}

int iwarp_dgram_cancel_rx(struct iwarp_dgram_ep *ep, void *context)
{
	struct iwarp_dgram_rx *rx;

	rx = iwarp_dgram_find_ctx(&ep->posted_msg, context);
	if (!rx)
		rx = iwarp_dgram_find_ctx(&ep->posted_tagged, context);
	if (!rx)
		return -FI_ENOENT;
	if (ep->base.rx_cq)
		iwarp_cq_write_err(ep->base.rx_cq, context, rx->flags, 0, NULL,
				   0, rx->tag, FI_ECANCELED, 0, NULL, 0, 0);
	if (ep->base.cntr_recv)
		iwarp_cntr_inc_err(ep->base.cntr_recv);
	iwarp_dgram_rx_put(ep, rx);
	return 0;
}

/* ---- receive: progress */

/* ---- shared receive context (iwarp_ctx.h), lock held */

/* Posts s, taken from the shared context, as the endpoint's own; false
 * when the endpoint has no room left (s stays the caller's). */
static bool iwarp_dgram_srx_post(struct iwarp_dgram_ep *ep,
				 const struct iwarp_srx_rx *s)
{
	struct iwarp_dgram_op op = {
		.iov = s->iov, .count = s->count, .tag = s->tag,
		.ignore = s->ignore, .context = s->context,
		.flags = s->flags, .tagged = s->tagged,
	};
	struct iovec v[IWARP_IOV_MAX];
	struct iwarp_dgram_rx *rx;

	if (iwarp_list_empty(&ep->free_rx))
		return false;
	if (iwarp_dgram_unprefix(ep, &op, v)) {
		if (ep->base.rx_cq)
			iwarp_cq_write_err(ep->base.rx_cq, s->context,
					   FI_RECV | FI_MSG, 0, NULL, 0, 0,
					   FI_EINVAL, 0, NULL, 0, 0);
		return true;
	}
	rx = iwarp_container_of(ep->free_rx.next, struct iwarp_dgram_rx, link);
	iwarp_list_del(&rx->link);
	iwarp_dgram_rx_fill(ep, rx, &op);
	iwarp_list_add_tail(op.tagged ? &ep->posted_tagged : &ep->posted_msg,
			    &rx->link);
	ep->nposted++;
	return true;
}

/* A datagram with no receive of the endpoint's own takes the first
 * matching one of the shared context. */
static bool iwarp_dgram_srx_pull(struct iwarp_dgram_ep *ep,
				 const struct iwarp_dgram_hdr *h)
{
	struct iwarp_srx_rx *s;

	if (h->flags & IWARP_DGRAM_F_TAG)
		s = iwarp_srx_take(ep->base.srx, iwarp_srx_match_tag, &h->tag);
	else
		s = iwarp_srx_take(ep->base.srx, iwarp_srx_match_msg, NULL);
	if (!s)
		return false;
	if (!iwarp_dgram_srx_post(ep, s)) {
		iwarp_srx_untake(ep->base.srx, s);
		return false;
	}
	free(s);
	return true;
}

/* Datagrams match nothing that is not posted yet: a receive of the
 * shared context waits for the next one; fd waiters learn it counts. */
bool iwarp_dgram_srx_offer(struct iwarp_ep_base *b, struct iwarp_srx_rx *s)
{
	struct iwarp_dgram_ep *ep = iwarp_container_of(b, struct iwarp_dgram_ep,
						       base);

	if (!ep->nposted)
		iwarp_dgram_rx_armed(ep);
	return false;
}

/* Receives waiting for this endpoint, its own or shared. */
size_t iwarp_dgram_rx_waiting(const struct iwarp_dgram_ep *ep)
{
	return ep->nposted + (ep->base.srx ? ep->base.srx->nposted : 0);
}

/* The receive a datagram goes to, or NULL. */
static struct iwarp_dgram_rx *
iwarp_dgram_match_own(struct iwarp_dgram_ep *ep,
		      const struct iwarp_dgram_hdr *h)
{
	struct iwarp_list *e;

	if (!(h->flags & IWARP_DGRAM_F_TAG))
		return iwarp_list_empty(&ep->posted_msg) ? NULL :
		       iwarp_container_of(ep->posted_msg.next,
					  struct iwarp_dgram_rx, link);
	for (e = ep->posted_tagged.next; e != &ep->posted_tagged; e = e->next) {
		struct iwarp_dgram_rx *rx = iwarp_container_of(
			e, struct iwarp_dgram_rx, link);

		if (!((rx->tag ^ h->tag) & ~rx->ignore))
			return rx;
	}
	return NULL;
}

static struct iwarp_dgram_rx *iwarp_dgram_match(struct iwarp_dgram_ep *ep,
						const struct iwarp_dgram_hdr *h)
{
	struct iwarp_dgram_rx *rx = iwarp_dgram_match_own(ep, h);

	if (rx || !ep->base.srx || !iwarp_dgram_srx_pull(ep, h))
		return rx;
	return iwarp_dgram_match_own(ep, h);
}

static size_t iwarp_dgram_copy_out(const struct iwarp_dgram_rx *rx,
				   const uint8_t *p, size_t len)
{
	size_t i, n, done = 0;

	for (i = 0; i < rx->iov_count && done < len; i++) {
		n = rx->iov[i].iov_len < len - done ? rx->iov[i].iov_len :
						      len - done;
		memcpy(rx->iov[i].iov_base, p + done, n);
		done += n;
	}
	return done;
}

/* Lock held. Completes rx with the datagram's payload. */
static void iwarp_dgram_deliver(struct iwarp_dgram_ep *ep,
				struct iwarp_dgram_rx *rx,
				const struct iwarp_dgram_hdr *h,
				const uint8_t *payload, fi_addr_t src)
{
	struct iwarp_ep_base *b = &ep->base;
	uint64_t flags = rx->flags;
	size_t got = iwarp_dgram_copy_out(rx, payload, h->len);
	void *buf = rx->iov_count ? rx->iov[0].iov_base : NULL;

	if (h->flags & IWARP_DGRAM_F_DATA)
		flags |= FI_REMOTE_CQ_DATA;
	ep->stats[IWARP_DGRAM_OK]++;
	if (got < h->len) {
		ep->stats[IWARP_DGRAM_STAT_TRUNC]++;
		if (b->rx_cq)
			iwarp_cq_write_err(b->rx_cq, rx->context, flags,
					   got + ep->prefix, buf, h->data,
					   h->tag, FI_ETRUNC, 0, NULL, 0,
					   h->len - got);
		if (b->cntr_recv)
			iwarp_cntr_inc_err(b->cntr_recv);
	} else {
		/* the prefix counts in the length (fi_getinfo(3)) */
		if (rx->cq && b->rx_cq)
			iwarp_cq_write(b->rx_cq, rx->context, flags,
				       got + ep->prefix, buf, h->data, h->tag,
				       src);
		if (b->cntr_recv)
			iwarp_cntr_inc(b->cntr_recv);
	}
	iwarp_dgram_rx_put(ep, rx);
}

/* The kernel's count of datagrams it dropped (SO_RXQ_OVFL), if sent. */
static void iwarp_dgram_kernel_drops(struct iwarp_dgram_ep *ep,
				     struct msghdr *mh)
{
	struct cmsghdr *c;
	uint32_t n;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_RXQ_OVFL)
			continue;
		memcpy(&n, CMSG_DATA(c), sizeof(n));
		ep->stats[IWARP_DGRAM_STAT_KERNEL] = n;
	}
}

/* Lock held. One datagram of n octets from `from`, whatever it holds. */
static void iwarp_dgram_one(struct iwarp_dgram_ep *ep, size_t n,
			    const union iwarp_sockaddr *from)
{
	enum iwarp_dgram_drop why = IWARP_DGRAM_OVERSIZE;
	struct iwarp_dgram_hdr h;
	struct iwarp_dgram_rx *rx = NULL;
	size_t hlen = 0;
	fi_addr_t src;

	if (n <= IWARP_DGRAM_BOUNCE)
		why = iwarp_dgram_hdr_get(ep->bounce, n, &h, &hlen);
	if (why == IWARP_DGRAM_OK && h.len > ep->max_msg)
		why = IWARP_DGRAM_OVERSIZE;
	if (why == IWARP_DGRAM_OK && !(rx = iwarp_dgram_match(ep, &h)))
		why = IWARP_DGRAM_NO_MATCH;
	if (why != IWARP_DGRAM_OK) {
		ep->stats[why]++;
		FI_DBG(&iwarp_prov, FI_LOG_EP_DATA,
		       "DGRAM: %zu octets dropped: %s\n", n,
		       iwarp_dgram_drop_str(why));
		return;
	}
	src = iwarp_av_reverse(ep->av, &from->sa);
	if (src == FI_ADDR_NOTAVAIL)
		ep->stats[IWARP_DGRAM_STAT_UNKNOWN_SRC]++;
	if (!(ep->base.info->caps & FI_SOURCE))
		src = FI_ADDR_NOTAVAIL;
	iwarp_dgram_deliver(ep, rx, &h, ep->bounce + hlen, src);
}

/* Lock held. 1: a datagram was handled; 0: none left. */
static int iwarp_dgram_recv_one(struct iwarp_dgram_ep *ep)
{
	union {
		char buf[CMSG_SPACE(sizeof(uint32_t))];
		struct cmsghdr align;
	} ctl;
	union iwarp_sockaddr from;
	struct iovec v = { ep->bounce, IWARP_DGRAM_BOUNCE };
	struct msghdr mh = {
		.msg_name = &from,
		.msg_namelen = sizeof(from),
		.msg_iov = &v,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	ssize_t n;

	memset(&from, 0, sizeof(from));
	/* MSG_TRUNC: the datagram's real size, even beyond the buffer */
	n = recvmsg(ep->fd, &mh, MSG_DONTWAIT | MSG_TRUNC);
	if (n < 0)
		return errno == EINTR ? 1 : 0;
	iwarp_dgram_kernel_drops(ep, &mh);
	iwarp_dgram_one(ep, (size_t)n, &from);
	return 1;
}

void iwarp_dgram_progress(struct iwarp_pollable *p)
{
	struct iwarp_dgram_ep *ep = iwarp_container_of(p, struct iwarp_dgram_ep,
						       poll);
	int budget = IWARP_DGRAM_BUDGET;

	while (iwarp_dgram_rx_waiting(ep) && budget-- &&
	       iwarp_dgram_recv_one(ep))
		;
}

/* ---- fi_ops_msg */

static ssize_t iwarp_dgram_recvmsg(struct fid_ep *fid,
				   const struct fi_msg *msg, uint64_t flags)
{
	struct iwarp_dgram_op op = {
		.iov = msg->msg_iov, .count = msg->iov_count,
		.context = msg->context, .flags = flags,
	};

	return iwarp_dgram_recv(iwarp_dgram_ep_of(&fid->fid), &op);
}

static ssize_t iwarp_dgram_recvv(struct fid_ep *fid, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t src_addr,
				 void *context)
{
	struct iwarp_dgram_ep *ep = iwarp_dgram_ep_of(&fid->fid);
	struct iwarp_dgram_op op = {
		.iov = iov, .count = count, .context = context,
		.flags = ep->base.rx_op_flags,
	};

	return iwarp_dgram_recv(ep, &op);
}

static ssize_t iwarp_dgram_recv1(struct fid_ep *fid, void *buf, size_t len,
				 void *desc, fi_addr_t src_addr, void *context)
{
	struct iovec v = { buf, len };

	return iwarp_dgram_recvv(fid, &v, &desc, 1, src_addr, context);
}

static ssize_t iwarp_dgram_sendmsg_op(struct fid_ep *fid,
				      const struct fi_msg *msg, uint64_t flags)
{
	struct iwarp_dgram_op op = {
		.iov = msg->msg_iov, .count = msg->iov_count,
		.addr = msg->addr, .data = msg->data,
		.context = msg->context, .flags = flags,
	};

	return iwarp_dgram_send(iwarp_dgram_ep_of(&fid->fid), &op);
}

/* Every fi_send flavour: extra flags over the endpoint's op flags. */
static ssize_t iwarp_dgram_send_any(struct fid_ep *fid,
				    const struct iovec *iov, size_t count,
				    fi_addr_t dest, uint64_t data,
				    uint64_t more, void *context)
{
	struct iwarp_dgram_ep *ep = iwarp_dgram_ep_of(&fid->fid);
	struct iwarp_dgram_op op = {
		.iov = iov, .count = count, .addr = dest, .data = data,
		.context = context, .flags = ep->base.tx_op_flags | more,
	};

	return iwarp_dgram_send(ep, &op);
}

static ssize_t iwarp_dgram_sendv(struct fid_ep *fid, const struct iovec *iov,
				 void **desc, size_t count, fi_addr_t dest,
				 void *context)
{
	return iwarp_dgram_send_any(fid, iov, count, dest, 0, 0, context);
}

static ssize_t iwarp_dgram_send1(struct fid_ep *fid, const void *buf,
				 size_t len, void *desc, fi_addr_t dest,
				 void *context)
{
	struct iovec v = { (void *)buf, len };

	return iwarp_dgram_send_any(fid, &v, 1, dest, 0, 0, context);
}

static ssize_t iwarp_dgram_inject(struct fid_ep *fid, const void *buf,
				  size_t len, fi_addr_t dest)
{
	struct iovec v = { (void *)buf, len };

	return iwarp_dgram_send_any(fid, &v, 1, dest, 0, FI_INJECT, NULL);
}

static ssize_t iwarp_dgram_senddata(struct fid_ep *fid, const void *buf,
				    size_t len, void *desc, uint64_t data,
				    fi_addr_t dest, void *context)
{
	struct iovec v = { (void *)buf, len };

	return iwarp_dgram_send_any(fid, &v, 1, dest, data,
				    FI_REMOTE_CQ_DATA, context);
}

static ssize_t iwarp_dgram_injectdata(struct fid_ep *fid, const void *buf,
				      size_t len, uint64_t data,
				      fi_addr_t dest)
{
	struct iovec v = { (void *)buf, len };

	return iwarp_dgram_send_any(fid, &v, 1, dest, data,
				    FI_INJECT | FI_REMOTE_CQ_DATA, NULL);
}

struct fi_ops_msg iwarp_dgram_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = iwarp_dgram_recv1,
	.recvv = iwarp_dgram_recvv,
	.recvmsg = iwarp_dgram_recvmsg,
	.send = iwarp_dgram_send1,
	.sendv = iwarp_dgram_sendv,
	.sendmsg = iwarp_dgram_sendmsg_op,
	.inject = iwarp_dgram_inject,
	.senddata = iwarp_dgram_senddata,
	.injectdata = iwarp_dgram_injectdata,
};
