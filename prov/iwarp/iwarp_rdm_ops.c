/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_RDM object and data operations: sends (eager, inject, rendezvous
 * for large messages or delivery completion), receives with tag matching
 * in posting order, the unexpected queue, FI_PEEK/FI_CLAIM/FI_DISCARD,
 * cancel. Completions always carry the caller's context.
 */
#include "iwarp_rdm.h"

#include <stdlib.h>
#include <string.h>

#include "iwarp/engine.h"

void iwarp_rdm_send_ctrl(struct iwarp_rdm_peer *peer, uint8_t op,
			 uint32_t msg_id, uint8_t flags);
int iwarp_rdm_listen(struct iwarp_rdm_ep *ep);
void iwarp_rdm_shutdown(struct iwarp_rdm_ep *ep);

/* ---- completions */

struct iwarp_rdm_tx *iwarp_rdm_tx_new(void)
{
	struct iwarp_rdm_tx *tx = iwarp_zalloc(sizeof(*tx));

	if (tx)
		tx->owner = IWARP_RDM_OWN_TX;
	return tx;
}

static struct iwarp_cntr *iwarp_rdm_tx_cntr(struct iwarp_rdm_ep *ep,
					    uint64_t flags)
{
	if (flags & FI_READ)
		return ep->cntr_read;
	if (flags & FI_WRITE)
		return ep->cntr_write;
	return ep->cntr_send;
}

void iwarp_rdm_tx_done(struct iwarp_rdm_ep *ep, struct iwarp_rdm_tx *tx,
		       int err)
{
	struct iwarp_cntr *cntr;
	uint64_t tag = tx->cq_flags & FI_TAGGED ? tx->hdr.tag : 0;

	if (tx->mr)
		iw_mr_dereg(tx->mr);
	free(tx->copy);
	if (!tx->ctrl) {
		if (err)
			iwarp_cq_write_err(ep->tx_cq, tx->context, tx->cq_flags,
					   tx->len, NULL, 0, tag, err,
					   tx->prov_errno, NULL, 0, 0);
		else if (tx->cq)
			iwarp_cq_write(ep->tx_cq, tx->context, tx->cq_flags,
				       tx->len, NULL, 0, tag,
				       FI_ADDR_NOTAVAIL);
		cntr = iwarp_rdm_tx_cntr(ep, tx->cq_flags);
		if (cntr)
			(err ? iwarp_cntr_inc_err : iwarp_cntr_inc)(cntr);
	}
	iwarp_stash_put(&ep->tx_stash, tx);
}

/* A receive is done: msglen octets were sent to it (truncation if more
 * than it holds). */
void iwarp_rdm_rx_done(struct iwarp_rdm_ep *ep, struct iwarp_rdm_rx *rx,
		       size_t msglen, int err)
{
	uint64_t flags = rx->flags;
	size_t len = msglen < rx->len ? msglen : rx->len;

	void *buf = NULL;

	if (rx->hdr.flags & IWARP_RDM_F_DATA)
		flags |= FI_REMOTE_CQ_DATA;
	/* a multi-receive piece: where it landed; FI_MULTI_RECV when the
	 * buffer goes back to the application (fi_msg(3)): it is retired
	 * and no other piece still lands in it (a rendezvous piece's Read
	 * may end after later eager pieces) */
	if (rx->flags & FI_MULTI_RECV) {
		struct iwarp_rdm_rx *mrx = rx->parent;

		flags &= ~FI_MULTI_RECV;
		if (mrx && !--mrx->pieces && mrx->retired) {
			flags |= FI_MULTI_RECV;
			iwarp_stash_put(&ep->rx_stash, mrx);
		}
		buf = rx->count ? rx->iov[0].iov_base : NULL;
	}
	if (!err && msglen > rx->len)
		err = FI_ETRUNC;
	if (err)
		iwarp_cq_write_err(ep->rx_cq, rx->context, flags, len, buf,
				   rx->hdr.data, rx->hdr.tag, err, 0, NULL, 0,
				   msglen > len ? msglen - len : 0);
	else if (rx->cq)
		iwarp_cq_write(ep->rx_cq, rx->context, flags, len, buf,
			       rx->hdr.data, rx->hdr.tag, rx->from);
	if (ep->cntr_recv)
		(err ? iwarp_cntr_inc_err : iwarp_cntr_inc)(ep->cntr_recv);
	iwarp_stash_put(&ep->rx_stash, rx);
}

/* ---- matching */

static bool iwarp_rdm_matches(const struct iwarp_rdm_rx *rx,
			      const struct iwarp_rdm_hdr *h, fi_addr_t from)
{
	if (!(rx->flags & FI_TAGGED) != !(h->flags & IWARP_RDM_F_TAGGED))
		return false;
	if ((rx->flags & FI_TAGGED) && ((h->tag ^ rx->tag) & ~rx->ignore))
		return false;
	return rx->src == FI_ADDR_UNSPEC || rx->src == from;
}

/*
 * A piece of a multi-receive buffer for one message of `len` octets: the
 * buffer stays posted until less than min_multi_recv is left; the last
 * of its pieces to complete after that carries FI_MULTI_RECV.
 */
static struct iwarp_rdm_rx *iwarp_rdm_multi_piece(struct iwarp_rdm_ep *ep,
						  struct iwarp_rdm_rx *mrx,
						  size_t len)
{
	struct iwarp_rdm_rx *rx = iwarp_zalloc(sizeof(*rx));
	size_t left = mrx->len - mrx->used;

	if (!rx)
		return NULL;
	rx->context = mrx->context;
	rx->flags = mrx->flags;
	rx->src = mrx->src;
	rx->cq = mrx->cq;
	rx->count = 1;
	rx->iov[0].iov_base = (uint8_t *)mrx->iov[0].iov_base + mrx->used;
	rx->iov[0].iov_len = len < left ? len : left;
	rx->len = rx->iov[0].iov_len;
	rx->parent = mrx;
	mrx->pieces++;
	mrx->used += rx->len;
	if (mrx->len - mrx->used < ep->min_multi_recv ||
	    mrx->used == mrx->len) {
		iwarp_list_del(&mrx->link);
		mrx->retired = true;
	}
	return rx;
}

struct iwarp_rdm_rx *iwarp_rdm_match_posted(struct iwarp_rdm_ep *ep,
					    const struct iwarp_rdm_hdr *h,
					    fi_addr_t from)
{
	struct iwarp_list *head = h->flags & IWARP_RDM_F_TAGGED ?
					  &ep->posted_tagged : &ep->posted_msg;
	struct iwarp_list *e;

	for (e = head->next; e != head; e = e->next) {
		struct iwarp_rdm_rx *rx =
			iwarp_container_of(e, struct iwarp_rdm_rx, link);

		if (!iwarp_rdm_matches(rx, h, from))
			continue;
		if (rx->multi)
			return iwarp_rdm_multi_piece(ep, rx, h->len);
		iwarp_list_del(&rx->link);
		return rx;
	}
	return NULL;
}

static struct iwarp_rdm_unexp *iwarp_rdm_match_unexp(struct iwarp_rdm_ep *ep,
						     const struct iwarp_rdm_rx *rx,
						     void *claim_ctx)
{
	struct iwarp_list *head = rx->flags & FI_TAGGED ? &ep->unexp_tagged :
							  &ep->unexp_msg;
	struct iwarp_list *e;

	for (e = head->next; e != head; e = e->next) {
		struct iwarp_rdm_unexp *ux =
			iwarp_container_of(e, struct iwarp_rdm_unexp, link);

		/* a message may arrive before its sender is in our AV (an MPI
		 * peer that got our address first): look again now */
		if (ux->from == FI_ADDR_NOTAVAIL && ux->peer)
			ux->from = iwarp_rdm_from(ux->peer);
		if (claim_ctx ? ux->claimed && ux->claim_ctx == claim_ctx :
				!ux->claimed &&
				iwarp_rdm_matches(rx, &ux->hdr, ux->from))
			return ux;
	}
	return NULL;
}

static void iwarp_rdm_copy_out(struct iwarp_rdm_rx *rx, const uint8_t *src,
			       size_t len)
{
	size_t i;

	for (i = 0; i < rx->count && len; i++) {
		size_t n = rx->iov[i].iov_len < len ? rx->iov[i].iov_len : len;

		memcpy(rx->iov[i].iov_base, src, n);
		src += n;
		len -= n;
	}
}

/* An RDMA Read straight into the matched receive (rendezvous). */
void iwarp_rdm_start_read(struct iwarp_rdm_ep *ep, struct iwarp_rdm_rx *rx)
{
	struct iw_sge sge[IW_MAX_SGE];
	struct iw_send_wr wr = {
		.ctx = rx,
		.op = IW_WR_READ,
		.flags = IW_WR_SIGNALED,
		.sgl = sge,
		.rstag = rx->hdr.stag,
		.rto = rx->hdr.addr,
	};
	size_t left = rx->hdr.len, i;

	for (i = 0; i < rx->count && left && wr.num_sge < IW_MAX_SGE; i++) {
		size_t n = rx->iov[i].iov_len < left ? rx->iov[i].iov_len :
						       left;

		if (!n)
			continue;
		sge[wr.num_sge].addr = rx->iov[i].iov_base;
		sge[wr.num_sge++].len = (uint32_t)n;
		left -= n;
	}
	if (!rx->peer->qp || iw_qp_post_send(rx->peer->qp, &wr)) {
		iwarp_rdm_send_ctrl(rx->peer, IWARP_RDM_FIN, rx->hdr.msg_id,
				    IWARP_RDM_F_ERROR);
		if (rx->owes)
			iwarp_rdm_owe(rx->peer);
		iwarp_rdm_rx_done(ep, rx, rx->hdr.len, FI_EIO);
	}
}

void iwarp_rdm_ux_free(struct iwarp_rdm_ep *ep, struct iwarp_rdm_unexp *ux)
{
	ep->unexp_bytes -= ux->cost;
	free(ux->buf);
	free(ux);
}

/* Hands an unexpected message to a receive; frees it. */
static void iwarp_rdm_take_unexp(struct iwarp_rdm_ep *ep,
				 struct iwarp_rdm_unexp *ux,
				 struct iwarp_rdm_rx *rx, bool discard)
{
	rx->hdr = ux->hdr;
	rx->peer = ux->peer;
	rx->from = ux->from;
	iwarp_list_del(&ux->link);
	if (ux->withheld) {
		/* stored over the limit: its credit goes back now, not at
		 * half a window, as the sender may have none left */
		ux->withheld = false;
		ux->peer->owed++;
		iwarp_rdm_send_ctrl(ux->peer, IWARP_RDM_CREDIT, 0, 0);
	}
	if (ux->hdr.op == IWARP_RDM_RTS && !discard) {
		iwarp_rdm_ux_free(ep, ux);
		iwarp_rdm_start_read(ep, rx);
		return;
	}
	if (ux->hdr.op == IWARP_RDM_RTS)	/* the sender may go on */
		iwarp_rdm_send_ctrl(ux->peer, IWARP_RDM_FIN, ux->hdr.msg_id, 0);
	if (!ux->arrived && !discard) {
		ux->waiter = rx;	/* completes when the rest is in */
		return;
	}
	if (!discard)
		iwarp_rdm_copy_out(rx, ux->buf,
				   ux->hdr.len < rx->len ? ux->hdr.len : rx->len);
	iwarp_rdm_rx_done(ep, rx, discard ? 0 : ux->hdr.len, 0);
	if (!ux->arrived) {	/* discarded mid-way: drop it on arrival */
		ux->waiter = NULL;
		ux->claimed = true;
		ux->claim_ctx = ux;
		return;
	}
	iwarp_rdm_ux_free(ep, ux);
}

void iwarp_rdm_unexp_arrived(struct iwarp_rdm_ep *ep,
			     struct iwarp_rdm_unexp *ux)
{
	struct iwarp_rdm_rx *rx = ux->waiter;

	ux->arrived = true;
	if (rx) {
		iwarp_rdm_copy_out(rx, ux->buf,
				   ux->hdr.len < rx->len ? ux->hdr.len : rx->len);
		iwarp_rdm_rx_done(ep, rx, ux->hdr.len, 0);
	} else if (!(ux->claimed && ux->claim_ctx == ux)) {
		return;		/* stays in the unexpected queue */
	}
	iwarp_rdm_ux_free(ep, ux);
}

/* ---- receives */

static ssize_t iwarp_rdm_peek(struct iwarp_rdm_ep *ep,
			      struct iwarp_rdm_rx *rx, uint64_t flags)
{
	struct iwarp_rdm_unexp *ux = iwarp_rdm_match_unexp(ep, rx, NULL);

	if (!ux || !ux->arrived) {
		iwarp_cq_write_err(ep->rx_cq, rx->context, rx->flags, 0, NULL,
				   0, rx->tag, FI_ENOMSG, 0, NULL, 0, 0);
		free(rx);
		return 0;
	}
	rx->hdr = ux->hdr;
	rx->from = ux->from;
	if (flags & FI_DISCARD) {
		iwarp_rdm_take_unexp(ep, ux, rx, true);
		return 0;
	}
	if (flags & FI_CLAIM) {
		ux->claimed = true;
		ux->claim_ctx = rx->context;
	}
	iwarp_cq_write(ep->rx_cq, rx->context,
		       rx->flags | (ux->hdr.flags & IWARP_RDM_F_DATA ?
				    FI_REMOTE_CQ_DATA : 0),
		       ux->hdr.len, NULL, ux->hdr.data, ux->hdr.tag, ux->from);
	free(rx);
	return 0;
}

static ssize_t iwarp_rdm_recv_common(struct iwarp_rdm_ep *ep,
				     const struct iovec *iov, size_t count,
				     fi_addr_t src, uint64_t tag,
				     uint64_t ignore, void *context,
				     uint64_t flags, bool tagged)
{
	struct iwarp_rdm_rx *rx;
	struct iwarp_rdm_unexp *ux;
	size_t i;

	if (count > IWARP_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	if ((flags & FI_MULTI_RECV) &&
	    (tagged || count != 1 || (flags & (FI_PEEK | FI_CLAIM))))
		return -FI_EINVAL;
	iwarp_lock(ep->fab);
	if (!ep->enabled) {
		iwarp_unlock(ep->fab);
		return -FI_EOPBADSTATE;
	}
	rx = iwarp_stash_get(&ep->rx_stash, sizeof(*rx));
	if (!rx) {
		iwarp_unlock(ep->fab);
		return -FI_ENOMEM;
	}
	rx->context = context;
	rx->flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	/* fi_tagged(3): the source filters only with FI_DIRECTED_RECV */
	rx->src = ep->directed ? src : FI_ADDR_UNSPEC;
	rx->tag = tag;
	rx->ignore = ignore;
	rx->count = count;
	for (i = 0; i < count; i++) {
		rx->iov[i] = iov[i];
		rx->len += iov[i].iov_len;
	}
	rx->cq = !ep->rx_selective || (flags & FI_COMPLETION);
	if (flags & FI_MULTI_RECV) {
		rx->multi = true;
		rx->flags |= FI_MULTI_RECV;
	}
	if (flags & FI_PEEK) {
		iwarp_progress(ep->fab);
		iwarp_rdm_peek(ep, rx, flags);
	} else if (rx->multi) {
		/* posted at once (a piece that retires it unlinks it), then
		 * takes every waiting message it can hold */
		iwarp_list_add_tail(&ep->posted_msg, &rx->link);
		while ((ux = iwarp_rdm_match_unexp(ep, rx, NULL))) {
			bool gone = false;
			struct iwarp_rdm_rx *piece;

			piece = iwarp_rdm_multi_piece(ep, rx, ux->hdr.len);
			if (!piece)
				break;
			/* once retired, the piece's completion may free rx */
			gone = rx->retired;
			iwarp_rdm_take_unexp(ep, ux, piece, false);
			if (gone)
				break;
		}
	} else if ((ux = iwarp_rdm_match_unexp(ep, rx, (flags & FI_CLAIM) ?
						       context : NULL))) {
		iwarp_rdm_take_unexp(ep, ux, rx, flags & FI_DISCARD);
	} else if (flags & FI_CLAIM) {
		iwarp_stash_put(&ep->rx_stash, rx);
		iwarp_unlock(ep->fab);
		return -FI_EINVAL;	/* nothing was claimed with it */
	} else {
		iwarp_list_add_tail(tagged ? &ep->posted_tagged :
					     &ep->posted_msg, &rx->link);
	}
	iwarp_unlock(ep->fab);
	return 0;
}

/* ---- sends */

int iwarp_rdm_tx_flatten(struct iwarp_rdm_tx *tx)
{
	size_t i, off = 0;
	uint8_t *dst = tx->small;

	/* the small messages MPI injects need no allocation */
	if (tx->len > sizeof(tx->small)) {
		dst = tx->copy = malloc(tx->len);
		if (!dst)
			return -FI_ENOMEM;
	}
	for (i = 0; i < tx->count; i++) {
		memcpy(dst + off, tx->iov[i].iov_base, tx->iov[i].iov_len);
		off += tx->iov[i].iov_len;
	}
	tx->iov[0].iov_base = dst;
	tx->iov[0].iov_len = tx->len;
	tx->count = tx->len ? 1 : 0;
	return 0;
}

static int iwarp_rdm_rndv(struct iwarp_rdm_ep *ep, struct iwarp_rdm_tx *tx)
{
	void *buf = tx->iov[0].iov_base;

	if (tx->count > 1) {	/* register one contiguous copy */
		if (iwarp_rdm_tx_flatten(tx))
			return -FI_ENOMEM;
		buf = tx->iov[0].iov_base;
	}
	if (iw_mr_reg(ep->dom->pd, tx->len ? buf : tx, tx->len,
		      (uintptr_t)buf, IW_ACC_REMOTE_READ, &tx->mr))
		return -FI_ENOMEM;
	tx->hdr.op = IWARP_RDM_RTS;
	tx->hdr.stag = iw_mr_stag(tx->mr);
	tx->hdr.addr = (uintptr_t)buf;
	return 0;
}

static ssize_t iwarp_rdm_send_common(struct iwarp_rdm_ep *ep,
				     const struct iovec *iov, size_t count,
				     fi_addr_t dest, uint64_t tag,
				     uint64_t data, void *context,
				     uint64_t flags, bool tagged)
{
	const union iwarp_sockaddr *addr;
	struct iwarp_rdm_peer *peer;
	struct iwarp_rdm_tx *tx;
	size_t i, len = 0;
	int ret = 0;

	if (count > IWARP_IOV_MAX - 1 || (count && !iov))
		return -FI_EINVAL;
	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	if (len > UINT32_MAX || ((flags & FI_INJECT) &&
				 len > IWARP_RDM_INJECT_MAX))
		return -FI_EINVAL;
	iwarp_lock(ep->fab);
	tx = iwarp_stash_get(&ep->tx_stash, sizeof(*tx));
	if (!tx) {
		iwarp_unlock(ep->fab);
		return -FI_ENOMEM;
	}
	tx->owner = IWARP_RDM_OWN_TX;
	tx->context = context;
	tx->op_flags = flags;
	tx->cq_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	tx->count = count;
	for (i = 0; i < count; i++)
		tx->iov[i] = iov[i];
	tx->len = len;
	tx->hdr.op = IWARP_RDM_EAGER;
	tx->hdr.flags = (tagged ? IWARP_RDM_F_TAGGED : 0) |
			(flags & FI_REMOTE_CQ_DATA ? IWARP_RDM_F_DATA : 0);
	tx->hdr.len = (uint32_t)tx->len;
	tx->hdr.tag = tag;
	tx->hdr.data = data;
	tx->cq = !(flags & IWARP_INJECT_CALL) &&
		 (!ep->tx_selective || (flags & FI_COMPLETION));
	flags &= ~IWARP_INJECT_CALL;
	addr = ep->enabled && ep->av ? iwarp_av_addr(ep->av, dest) : NULL;
	peer = addr ? iwarp_rdm_peer_get(ep, addr) : NULL;
	if (!peer) {
		iwarp_stash_put(&ep->tx_stash, tx);
		iwarp_unlock(ep->fab);
		return ep->enabled ? -FI_EINVAL : -FI_EOPBADSTATE;
	}
	tx->hdr.msg_id = ++ep->next_msg_id;
	if (flags & FI_INJECT) {
		ret = iwarp_rdm_tx_flatten(tx);
	} else if (tx->len > iwarp_params.rdm_eager ||
		   (flags & IWARP_RDM_DELIVERY)) {
		/* done when the receiver has it: delivery complete */
		ret = iwarp_rdm_rndv(ep, tx);
	}
	if (ret) {
		free(tx->copy);
		iwarp_stash_put(&ep->tx_stash, tx);
	} else {
		iwarp_rdm_queue(peer, tx);
	}
	iwarp_unlock(ep->fab);
	return ret;
}

/* ---- fi_ops_msg and fi_ops_tagged */

#define RDM(ep_) iwarp_rdm_ep_of(&(ep_)->fid)

static ssize_t iwarp_rdm_recv(struct fid_ep *e, void *buf, size_t len,
			      void *desc, fi_addr_t src, void *ctx)
{
	struct iovec iov = { buf, len };

	return iwarp_rdm_recv_common(RDM(e), &iov, 1, src, 0, 0, ctx,
				     RDM(e)->rx_op_flags, false);
}

static ssize_t iwarp_rdm_recvv(struct fid_ep *e, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t src,
			       void *ctx)
{
	return iwarp_rdm_recv_common(RDM(e), iov, count, src, 0, 0, ctx,
				     RDM(e)->rx_op_flags, false);
}

static ssize_t iwarp_rdm_recvmsg(struct fid_ep *e, const struct fi_msg *m,
				 uint64_t flags)
{
	return iwarp_rdm_recv_common(RDM(e), m->msg_iov, m->iov_count,
				     m->addr, 0, 0, m->context, flags, false);
}

static ssize_t iwarp_rdm_send(struct fid_ep *e, const void *buf, size_t len,
			      void *desc, fi_addr_t dest, void *ctx)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), &iov, 1, dest, 0, 0, ctx,
				     RDM(e)->tx_op_flags, false);
}

static ssize_t iwarp_rdm_sendv(struct fid_ep *e, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t dest,
			       void *ctx)
{
	return iwarp_rdm_send_common(RDM(e), iov, count, dest, 0, 0, ctx,
				     RDM(e)->tx_op_flags, false);
}

static ssize_t iwarp_rdm_sendmsg(struct fid_ep *e, const struct fi_msg *m,
				 uint64_t flags)
{
	return iwarp_rdm_send_common(RDM(e), m->msg_iov, m->iov_count,
				     m->addr, 0, m->data, m->context, flags,
				     false);
}

static ssize_t iwarp_rdm_inject(struct fid_ep *e, const void *buf,
				size_t len, fi_addr_t dest)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), &iov, 1, dest, 0, 0, NULL,
				     FI_INJECT | IWARP_INJECT_CALL, false);
}

static ssize_t iwarp_rdm_senddata(struct fid_ep *e, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t dest, void *ctx)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), &iov, 1, dest, 0, data, ctx,
				     RDM(e)->tx_op_flags | FI_REMOTE_CQ_DATA,
				     false);
}

static ssize_t iwarp_rdm_injectdata(struct fid_ep *e, const void *buf,
				    size_t len, uint64_t data, fi_addr_t dest)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), &iov, 1, dest, 0, data, NULL,
				     FI_INJECT | IWARP_INJECT_CALL |
					     FI_REMOTE_CQ_DATA, false);
}

static struct fi_ops_msg iwarp_rdm_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = iwarp_rdm_recv,
	.recvv = iwarp_rdm_recvv,
	.recvmsg = iwarp_rdm_recvmsg,
	.send = iwarp_rdm_send,
	.sendv = iwarp_rdm_sendv,
	.sendmsg = iwarp_rdm_sendmsg,
	.inject = iwarp_rdm_inject,
	.senddata = iwarp_rdm_senddata,
	.injectdata = iwarp_rdm_injectdata,
};

static ssize_t iwarp_rdm_trecv(struct fid_ep *e, void *buf, size_t len,
			       void *desc, fi_addr_t src, uint64_t tag,
			       uint64_t ignore, void *ctx)
{
	struct iovec iov = { buf, len };

	return iwarp_rdm_recv_common(RDM(e), &iov, 1, src, tag, ignore, ctx,
				     RDM(e)->rx_op_flags, true);
}

static ssize_t iwarp_rdm_trecvv(struct fid_ep *e, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t src,
				uint64_t tag, uint64_t ignore, void *ctx)
{
	return iwarp_rdm_recv_common(RDM(e), iov, count, src, tag, ignore,
				     ctx, RDM(e)->rx_op_flags, true);
}

static ssize_t iwarp_rdm_trecvmsg(struct fid_ep *e,
				  const struct fi_msg_tagged *m,
				  uint64_t flags)
{
	return iwarp_rdm_recv_common(RDM(e), m->msg_iov, m->iov_count,
				     m->addr, m->tag, m->ignore, m->context,
				     flags, true);
}

static ssize_t iwarp_rdm_tsend(struct fid_ep *e, const void *buf,
			       size_t len, void *desc, fi_addr_t dest,
			       uint64_t tag, void *ctx)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), &iov, 1, dest, tag, 0, ctx,
				     RDM(e)->tx_op_flags, true);
}

static ssize_t iwarp_rdm_tsendv(struct fid_ep *e, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t dest,
				uint64_t tag, void *ctx)
{
	return iwarp_rdm_send_common(RDM(e), iov, count, dest, tag, 0, ctx,
				     RDM(e)->tx_op_flags, true);
}

static ssize_t iwarp_rdm_tsendmsg(struct fid_ep *e,
				  const struct fi_msg_tagged *m,
				  uint64_t flags)
{
	return iwarp_rdm_send_common(RDM(e), m->msg_iov, m->iov_count,
				     m->addr, m->tag, m->data, m->context,
				     flags, true);
}

static ssize_t iwarp_rdm_tinject(struct fid_ep *e, const void *buf,
				 size_t len, fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), &iov, 1, dest, tag, 0, NULL,
				     FI_INJECT | IWARP_INJECT_CALL, true);
}

static ssize_t iwarp_rdm_tsenddata(struct fid_ep *e, const void *buf,
				   size_t len, void *desc, uint64_t data,
				   fi_addr_t dest, uint64_t tag, void *ctx)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), &iov, 1, dest, tag, data, ctx,
				     RDM(e)->tx_op_flags | FI_REMOTE_CQ_DATA,
				     true);
}

static ssize_t iwarp_rdm_tinjectdata(struct fid_ep *e, const void *buf,
				     size_t len, uint64_t data,
				     fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), &iov, 1, dest, tag, data, NULL,
				     FI_INJECT | IWARP_INJECT_CALL |
					     FI_REMOTE_CQ_DATA, true);
}

static struct fi_ops_tagged iwarp_rdm_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = iwarp_rdm_trecv,
	.recvv = iwarp_rdm_trecvv,
	.recvmsg = iwarp_rdm_trecvmsg,
	.send = iwarp_rdm_tsend,
	.sendv = iwarp_rdm_tsendv,
	.sendmsg = iwarp_rdm_tsendmsg,
	.inject = iwarp_rdm_tinject,
	.senddata = iwarp_rdm_tsenddata,
	.injectdata = iwarp_rdm_tinjectdata,
};

/* ---- the endpoint object */

static ssize_t iwarp_rdm_cancel(fid_t fid, void *context)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);
	struct iwarp_list *heads[] = { &ep->posted_tagged, &ep->posted_msg };
	size_t i;

	iwarp_lock(ep->fab);
	for (i = 0; i < 2; i++) {
		struct iwarp_list *e;

		for (e = heads[i]->next; e != heads[i]; e = e->next) {
			struct iwarp_rdm_rx *rx = iwarp_container_of(
				e, struct iwarp_rdm_rx, link);

			if (rx->context != context)
				continue;
			iwarp_list_del(&rx->link);
			iwarp_cq_write_err(ep->rx_cq, context, rx->flags, 0,
					   NULL, 0, rx->tag, FI_ECANCELED, 0,
					   NULL, 0, 0);
			if (rx->pieces)	/* the last piece frees it */
				rx->retired = true;
			else
				free(rx);
			iwarp_unlock(ep->fab);
			return 0;
		}
	}
	iwarp_unlock(ep->fab);
	return -FI_ENOENT;
}

static int iwarp_rdm_getopt(fid_t fid, int level, int optname,
			    void *optval, size_t *optlen)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);

	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname == FI_OPT_MIN_MULTI_RECV) {
		if (*optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*(size_t *)optval = ep->min_multi_recv;
		*optlen = sizeof(size_t);
		return 0;
	}
	return -FI_ENOPROTOOPT;
}

static int iwarp_rdm_setopt(fid_t fid, int level, int optname,
			    const void *optval, size_t optlen)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (optlen != sizeof(size_t) || !optval)
		return -FI_EINVAL;
	ep->min_multi_recv = *(const size_t *)optval;
	return 0;
}

static ssize_t iwarp_rdm_size_left(struct fid_ep *ep)
{
	return IWARP_QUEUE_SIZE;
}

static struct fi_ops_ep iwarp_rdm_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = iwarp_rdm_cancel,
	.getopt = iwarp_rdm_getopt,
	.setopt = iwarp_rdm_setopt,
	.rx_size_left = iwarp_rdm_size_left,
	.tx_size_left = iwarp_rdm_size_left,
};

static int iwarp_rdm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);
	size_t need = iwarp_sa_len(&ep->name.sa);

	if (!addr || *addrlen < need) {
		*addrlen = need;
		return -FI_ETOOSMALL;
	}
	memcpy(addr, &ep->name, need);
	*addrlen = need;
	return 0;
}

static int iwarp_rdm_no_getpeer(struct fid_ep *ep, void *addr,
				size_t *addrlen)
{
	return -FI_ENOSYS;
}

static int iwarp_rdm_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);

	if (ep->enabled)
		return -FI_EBUSY;	/* the listener has its address */
	if (!addr || addrlen > sizeof(ep->name) ||
	    addrlen < sizeof(struct sockaddr_in))
		return -FI_EINVAL;
	memcpy(&ep->name, addr, addrlen);
	return 0;
}

static int iwarp_rdm_no_connect(struct fid_ep *ep, const void *addr,
				const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int iwarp_rdm_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

static int iwarp_rdm_no_accept(struct fid_ep *ep, const void *param,
			       size_t paramlen)
{
	return -FI_ENOSYS;
}

static int iwarp_rdm_no_reject(struct fid_pep *pep, fid_t handle,
			       const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

/* Connectionless to the user: connections come and go per peer. */
static int iwarp_rdm_shutdown_op(struct fid_ep *ep, uint64_t flags)
{
	return 0;
}

static int iwarp_rdm_no_join(struct fid_ep *ep, const void *addr,
			     uint64_t flags, struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cm iwarp_rdm_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = iwarp_rdm_setname,
	.getname = iwarp_rdm_getname,
	.getpeer = iwarp_rdm_no_getpeer,
	.connect = iwarp_rdm_no_connect,
	.listen = iwarp_rdm_no_listen,
	.accept = iwarp_rdm_no_accept,
	.reject = iwarp_rdm_no_reject,
	.shutdown = iwarp_rdm_shutdown_op,
	.join = iwarp_rdm_no_join,
};

static void iwarp_rdm_free_queues(struct iwarp_rdm_ep *ep)
{
	struct iwarp_list *heads[] = { &ep->posted_tagged, &ep->posted_msg };
	struct iwarp_list *uheads[] = { &ep->unexp_tagged, &ep->unexp_msg };
	size_t i;

	for (i = 0; i < 2; i++) {
		while (!iwarp_list_empty(heads[i])) {
			struct iwarp_rdm_rx *rx = iwarp_container_of(
				heads[i]->next, struct iwarp_rdm_rx, link);

			iwarp_list_del(&rx->link);
			free(rx);
		}
		while (!iwarp_list_empty(uheads[i])) {
			struct iwarp_rdm_unexp *ux = iwarp_container_of(
				uheads[i]->next, struct iwarp_rdm_unexp, link);

			iwarp_list_del(&ux->link);
			iwarp_rdm_ux_free(ep, ux);
		}
	}
}

static int iwarp_rdm_close(struct fid *fid)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);
	struct iwarp_fabric *fab = ep->fab;

	if (ep->async)
		iwarp_async_put(fab);
	iwarp_lock(fab);
	ep->enabled = false;
	ep->closing = true;
	iwarp_rdm_shutdown(ep);
	iwarp_rdm_free_queues(ep);
	if (ep->tx_cq)
		atomic_fetch_sub(&ep->tx_cq->ref, 1);
	if (ep->rx_cq)
		atomic_fetch_sub(&ep->rx_cq->ref, 1);
	if (ep->av)
		atomic_fetch_sub(&ep->av->ref, 1);
	if (ep->cntr_send)
		atomic_fetch_sub(&ep->cntr_send->ref, 1);
	if (ep->cntr_recv)
		atomic_fetch_sub(&ep->cntr_recv->ref, 1);
	if (ep->cntr_write)
		atomic_fetch_sub(&ep->cntr_write->ref, 1);
	if (ep->cntr_read)
		atomic_fetch_sub(&ep->cntr_read->ref, 1);
	atomic_fetch_sub(&ep->dom->ref, 1);
	iwarp_stash_fini(&ep->tx_stash);
	iwarp_stash_fini(&ep->rx_stash);
	iwarp_stash_fini(&ep->in_stash);
	iwarp_unlock(fab);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static int iwarp_rdm_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);

	if (ep->enabled)
		return -FI_EBUSY;
	switch (bfid->fclass) {
	case FI_CLASS_CQ:
		if (flags & FI_TRANSMIT) {
			ep->tx_cq = iwarp_cq_of(bfid);
			ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
			atomic_fetch_add(&ep->tx_cq->ref, 1);
		}
		if (flags & FI_RECV) {
			ep->rx_cq = iwarp_cq_of(bfid);
			ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
			atomic_fetch_add(&ep->rx_cq->ref, 1);
		}
		return flags & (FI_TRANSMIT | FI_RECV) ? 0 : -FI_EINVAL;
	case FI_CLASS_AV:
		if (ep->av)
			return -FI_EINVAL;
		ep->av = iwarp_av_of(bfid);
		atomic_fetch_add(&ep->av->ref, 1);
		return 0;
	case FI_CLASS_CNTR: {
		struct iwarp_cntr **slot[] = { &ep->cntr_send, &ep->cntr_recv,
					       &ep->cntr_write,
					       &ep->cntr_read };
		const uint64_t bit[] = { FI_SEND, FI_RECV, FI_WRITE, FI_READ };
		size_t i;

		/* no FI_RMA_EVENT: nothing counts remote accesses */
		if (flags & ~(FI_SEND | FI_RECV | FI_WRITE | FI_READ))
			return -FI_ENOSYS;
		for (i = 0; i < 4; i++) {
			if (!(flags & bit[i]))
				continue;
			if (*slot[i])
				atomic_fetch_sub(&(*slot[i])->ref, 1);
			*slot[i] = iwarp_cntr_of(bfid);
			atomic_fetch_add(&(*slot[i])->ref, 1);
		}
		return 0;
	}
	case FI_CLASS_EQ:
		return 0;	/* RDM reports no CM events */
	default:
		return -FI_EINVAL;
	}
}

static int iwarp_rdm_control(struct fid *fid, int command, void *arg)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(fid);
	int ret;

	switch (command) {
	case FI_ENABLE:
		if (ep->enabled)
			return 0;
		if (!ep->tx_cq || !ep->rx_cq)
			return -FI_ENOCQ;
		if (!ep->av)
			return -FI_ENOAV;
		iwarp_lock(ep->fab);
		ret = iwarp_rdm_listen(ep);
		if (!ret)
			ep->enabled = true;
		iwarp_unlock(ep->fab);
		/* a target of RMA must answer while its application computes */
		if (!ret && (ep->info->caps & (FI_RMA | FI_ATOMIC)) &&
		    !iwarp_async_get(ep->fab))
			ep->async = true;
		return ret;
	case FI_GETOPSFLAG:
		*(uint64_t *)arg = *(uint64_t *)arg & FI_TRANSMIT ?
					   ep->tx_op_flags : ep->rx_op_flags;
		return 0;
	case FI_SETOPSFLAG:
		if (*(uint64_t *)arg & FI_TRANSMIT)
			ep->tx_op_flags = *(uint64_t *)arg & ~FI_TRANSMIT;
		else
			ep->rx_op_flags = *(uint64_t *)arg & ~FI_RECV;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops iwarp_rdm_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_rdm_close,
	.bind = iwarp_rdm_bind,
	.control = iwarp_rdm_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

int iwarp_rdm_open(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **epp, void *context)
{
	struct iwarp_domain *dom = iwarp_domain_of(&domain->fid);
	struct iwarp_rdm_ep *ep = calloc(1, sizeof(*ep));

	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->dom = dom;
	ep->fab = dom->fabric;
	ep->name = dom->iface.addr;
	if (info->src_addr && info->src_addrlen <= sizeof(ep->name))
		memcpy(&ep->name, info->src_addr, info->src_addrlen);
	iwarp_lock(ep->fab);
	/* a restarted process gets a new instance: peers replace it */
	ep->instance = iw_dev_random(dom->dev) | 1;
	iwarp_unlock(ep->fab);
	iwarp_list_init(&ep->peers);
	iwarp_list_init(&ep->posted_tagged);
	iwarp_list_init(&ep->posted_msg);
	iwarp_list_init(&ep->unexp_tagged);
	iwarp_list_init(&ep->unexp_msg);
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->min_multi_recv = 64;	/* fi_endpoint(3): provider's choice */
	ep->directed = (info->caps & FI_DIRECTED_RECV) ||
		       (info->rx_attr && (info->rx_attr->caps & FI_DIRECTED_RECV));
	atomic_fetch_add(&dom->ref, 1);
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &iwarp_rdm_fi_ops;
	ep->ep_fid.ops = &iwarp_rdm_ep_ops;
	ep->ep_fid.cm = &iwarp_rdm_cm_ops;
	ep->ep_fid.msg = &iwarp_rdm_msg_ops;
	ep->ep_fid.tagged = &iwarp_rdm_tagged_ops;
	ep->ep_fid.rma = &iwarp_rdm_rma_ops;
	ep->ep_fid.atomic = &iwarp_rdm_atomic_ops;
	*epp = &ep->ep_fid;
	return 0;
}
