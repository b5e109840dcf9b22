/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_TAGGED on FI_EP_MSG, between two ends that both offered it in their
 * MPA private data (IWARP_EXT_TAG, msg.h). The QP places every Send
 * itself (engine peek mode): the header says tagged or not, the length
 * and the tag; the oldest receive that matches takes the message (a
 * tagged one by tag and ignore bits, an untagged one in order), or it is
 * kept whole as unexpected, within a bound, until a receive matches.
 * Everything here runs under the fabric lock.
 */
#include "msg.h"

#include <stdlib.h>
#include <string.h>

#include "iwarp/wire.h"

/* A message that came before its receive. */
struct iwarp_unexp {
	struct iwarp_list link;		/* ep->unexp, in arrival order */
	bool tagged, done;
	uint64_t tag;
	uint32_t len;
	struct iwarp_op *claim;		/* a receive waits for the rest */
	uint8_t buf[];
};

struct iwarp_thdr {
	bool tagged;
	uint32_t len;
	uint64_t tag;
};

void iwarp_thdr_put(uint8_t *p, bool tagged, uint32_t len, uint64_t tag)
{
	p[0] = tagged ? IWARP_THDR_TAGGED : IWARP_THDR_MSG;
	p[1] = p[2] = p[3] = 0;
	iw_put32(p + 4, len);
	iw_put64(p + 8, tag);
}

static bool iwarp_tag_bad(struct iw_qp *qp, const char *why)
{
	FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
		"%s: tagged message header refused: %s\n", iw_qp_label(qp),
		why);
	return false;
}

/* The header of a Send, checked against what the engine saw of it. */
static bool iwarp_thdr_get(struct iw_qp *qp, const struct iw_place *p,
			   struct iwarp_thdr *h)
{
	const uint8_t *b = p->peek;
	uint64_t total;

	if (p->peek_len < IWARP_THDR_LEN)
		return iwarp_tag_bad(qp, "shorter than a header");
	if ((b[0] != IWARP_THDR_MSG && b[0] != IWARP_THDR_TAGGED) || b[1] ||
	    b[2] || b[3])
		return iwarp_tag_bad(qp, "unknown kind or reserved bits");
	h->tagged = b[0] == IWARP_THDR_TAGGED;
	h->len = iw_get32(b + 4);
	h->tag = iw_get64(b + 8);
	total = (uint64_t)IWARP_THDR_LEN + h->len;
	if (p->last ? p->seg_len != total : p->seg_len >= total)
		return iwarp_tag_bad(qp, "length not that of the message");
	return true;
}

static bool iwarp_tag_matches(const struct iwarp_op *op, bool tagged,
			      uint64_t tag)
{
	if (!(op->flags & FI_TAGGED) != !tagged)
		return false;
	return !tagged || !((op->tag ^ tag) & ~op->ignore);
}

/* The oldest waiting receive for a message, taken off its list. */
static struct iwarp_op *iwarp_tag_take_rx(struct iwarp_ep *ep, bool tagged,
					  uint64_t tag)
{
	struct iwarp_list *h = tagged ? &ep->rx_tag : &ep->rx_msg, *e;

	for (e = h->next; e != h; e = e->next) {
		struct iwarp_op *op = iwarp_container_of(e, struct iwarp_op,
							 link);

		if (iwarp_tag_matches(op, tagged, tag)) {
			iwarp_list_del(e);
			return op;
		}
	}
	return NULL;
}

/* Where a message of len goes in op's buffer: beyond it, discarded. */
static int iwarp_tag_dst(const struct iwarp_op *op, uint32_t len,
			 struct iw_sge *dst)
{
	int n = op->nsge;

	memcpy(dst, op->sgl, (size_t)n * sizeof(*dst));
	if (len > op->len)
		dst[n++] = (struct iw_sge){ NULL, (uint32_t)(len - op->len) };
	return n;
}

static void iwarp_tag_report(struct iwarp_ep *ep, struct iwarp_op *op,
			     int err)
{
	struct iwarp_ep_base *b = &ep->base;
	uint64_t tag = op->flags & FI_TAGGED ? op->rtag : 0;

	if (!err && op->rlen > op->len)
		err = FI_ETRUNC;
	if (!err) {
		if (op->cq)
			iwarp_cq_write(b->rx_cq, op->context, op->flags,
				       op->rlen, NULL, 0, tag,
				       FI_ADDR_NOTAVAIL);
		if (b->cntr_recv)
			iwarp_cntr_inc(b->cntr_recv);
	} else {
		iwarp_cq_write_err(b->rx_cq, op->context, op->flags,
				   err == FI_ETRUNC ? op->len : 0, NULL, 0, tag,
				   err, 0, NULL, 0,
				   err == FI_ETRUNC ? op->rlen - op->len : 0);
		if (b->cntr_recv)
			iwarp_cntr_inc_err(b->cntr_recv);
	}
	iwarp_op_put(ep, op);
}

static void iwarp_unexp_free(struct iwarp_ep *ep, struct iwarp_unexp *u)
{
	iwarp_list_del(&u->link);
	ep->unexp_n--;
	ep->unexp_bytes -= u->len;
	free(u);
}

/* A whole unexpected message into the receive that matched it. */
static void iwarp_unexp_deliver(struct iwarp_ep *ep, struct iwarp_unexp *u,
				struct iwarp_op *op)
{
	size_t off = 0, n;
	int i;

	for (i = 0; i < op->nsge && off < u->len; i++) {
		n = u->len - off < op->sgl[i].len ? u->len - off :
						    op->sgl[i].len;
		memcpy(op->sgl[i].addr, u->buf + off, n);
		off += n;
	}
	op->rlen = u->len;
	op->rtag = u->tag;
	iwarp_unexp_free(ep, u);
	iwarp_tag_report(ep, op, 0);
}

void iwarp_tag_post_rx(struct iwarp_ep *ep, struct iwarp_op *op)
{
	struct iwarp_list *e;

	for (e = ep->unexp.next; e != &ep->unexp; e = e->next) {
		struct iwarp_unexp *u = iwarp_container_of(
			e, struct iwarp_unexp, link);

		if (u->claim || !iwarp_tag_matches(op, u->tagged, u->tag))
			continue;
		if (u->done)
			iwarp_unexp_deliver(ep, u, op);
		else
			u->claim = op;	/* delivered when it is whole */
		return;
	}
	iwarp_list_add_tail(op->flags & FI_TAGGED ? &ep->rx_tag : &ep->rx_msg,
			    &op->link);
}

/* No receive for it yet: kept whole, within the bound. */
static int iwarp_unexp_new(struct iwarp_ep *ep, struct iw_qp *qp,
			   const struct iwarp_thdr *h, struct iw_sge *dst,
			   void **ctx)
{
	struct iwarp_unexp *u;

	if (ep->unexp_n >= IWARP_UNEXP_MAX ||
	    h->len > IWARP_UNEXP_BYTES - ep->unexp_bytes) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
			"%s: %zu messages (%zu octets) wait for receives: "
			"no room for %u more octets\n", iw_qp_label(qp),
			ep->unexp_n, ep->unexp_bytes, h->len);
		return -1;
	}
	u = calloc(1, sizeof(*u) + h->len);
	if (!u)
		return -1;
	u->tagged = h->tagged;
	u->tag = h->tag;
	u->len = h->len;
	iwarp_list_add_tail(&ep->unexp, &u->link);
	ep->unexp_n++;
	ep->unexp_bytes += h->len;
	dst[0] = (struct iw_sge){ u->buf, h->len };
	*ctx = u;
	return h->len ? 1 : 0;
}

int iwarp_tag_place(void *arg, struct iw_qp *qp, const struct iw_place *p,
		    struct iw_sge *dst, void **ctx)
{
	struct iwarp_ep *ep = arg;
	struct iwarp_thdr h = { 0 };
	struct iwarp_op *op;

	if (!iwarp_thdr_get(qp, p, &h))
		return -1;
	op = iwarp_tag_take_rx(ep, h.tagged, h.tag);
	if (!op)
		return iwarp_unexp_new(ep, qp, &h, dst, ctx);
	op->rlen = h.len;
	op->rtag = h.tag;
	*ctx = op;
	return iwarp_tag_dst(op, h.len, dst);
}

static bool iwarp_is_op(const struct iwarp_ep *ep, const void *ctx)
{
	return (const struct iwarp_op *)ctx >= ep->ops &&
	       (const struct iwarp_op *)ctx < ep->ops + ep->nops;
}

/* A Send shorter than its header said: garbage for the buffer. */
static bool iwarp_tag_short(struct iwarp_ep *ep, const struct iw_wc *wc,
			    uint32_t len)
{
	FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
		"%s: message of %u octets announced %u: dropped\n",
		iw_qp_label(ep->qp), wc->byte_len, IWARP_THDR_LEN + len);
	return false;
}

/* A placed Send ended: in a receive, or kept as unexpected. */
void iwarp_tag_recv_done(struct iwarp_ep *ep, const struct iw_wc *wc)
{
	bool ok = wc->status == IW_WC_SUCCESS;
	struct iwarp_unexp *u = wc->ctx;
	struct iwarp_op *op;

	if (!wc->ctx)
		return;
	if (iwarp_is_op(ep, wc->ctx)) {
		op = wc->ctx;
		if (ok && wc->byte_len != IWARP_THDR_LEN + (uint64_t)op->rlen)
			ok = iwarp_tag_short(ep, wc, op->rlen);
		iwarp_tag_report(ep, op, ok ? 0 : wc->status == IW_WC_SUCCESS ?
			FI_EIO : iwarp_errno_from_status(wc->status));
		return;
	}
	if (ok && wc->byte_len != IWARP_THDR_LEN + (uint64_t)u->len)
		ok = iwarp_tag_short(ep, wc, u->len);
	op = u->claim;
	if (!ok) {
		iwarp_unexp_free(ep, u);
		if (op)
			iwarp_tag_report(ep, op, FI_EIO);
		return;
	}
	u->done = true;
	if (op)
		iwarp_unexp_deliver(ep, u, op);
}

/* What waits ends: receives with FI_ECANCELED, unexpected messages
 * dropped (those still arriving complete through the engine). */
void iwarp_tag_flush(struct iwarp_ep *ep)
{
	struct iwarp_list *lists[] = { &ep->rx_msg, &ep->rx_tag };
	struct iwarp_list *e, *next;
	size_t i;

	for (i = 0; i < 2; i++)
		while (!iwarp_list_empty(lists[i])) {
			struct iwarp_op *op = iwarp_container_of(
				lists[i]->next, struct iwarp_op, link);

			iwarp_list_del(&op->link);
			iwarp_tag_report(ep, op, FI_ECANCELED);
		}
	for (e = ep->unexp.next; e != &ep->unexp; e = next) {
		struct iwarp_unexp *u = iwarp_container_of(
			e, struct iwarp_unexp, link);

		next = e->next;
		if (u->done)
			iwarp_unexp_free(ep, u);
	}
}

int iwarp_tag_cancel(struct iwarp_ep *ep, void *context)
{
	struct iwarp_list *lists[] = { &ep->rx_msg, &ep->rx_tag }, *e;
	size_t i;

	for (i = 0; i < 2; i++)
		for (e = lists[i]->next; e != lists[i]; e = e->next) {
			struct iwarp_op *op = iwarp_container_of(
				e, struct iwarp_op, link);

			if (op->context != context)
				continue;
			iwarp_list_del(e);
			iwarp_tag_report(ep, op, FI_ECANCELED);
			return 0;
		}
	return -FI_ENOENT;
}

/* ---- fi_ops_tagged */

static ssize_t iwarp_tsend_common(struct fid_ep *ep_fid,
				  const struct iovec *iov, size_t count,
				  uint64_t tag, void *context, uint64_t flags,
				  uint64_t data)
{
	struct iwarp_tx t = {
		.op = IW_WR_SEND,
		.iov = iov,
		.count = count,
		.context = context,
		.flags = flags,
		.cqflags = FI_SEND | FI_TAGGED,
		.data = data,
		.tag = tag,
	};

	return iwarp_tx(iwarp_ep_of(&ep_fid->fid), &t);
}

static uint64_t iwarp_tx_flags(struct fid_ep *ep_fid)
{
	return iwarp_ep_of(&ep_fid->fid)->base.tx_op_flags;
}

static ssize_t iwarp_tsend(struct fid_ep *ep_fid, const void *buf,
			   size_t len, void *desc, fi_addr_t dest_addr,
			   uint64_t tag, void *context)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_tsend_common(ep_fid, &iov, 1, tag, context,
				  iwarp_tx_flags(ep_fid), 0);
}

static ssize_t iwarp_tsendv(struct fid_ep *ep_fid, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t dest_addr,
			    uint64_t tag, void *context)
{
	return iwarp_tsend_common(ep_fid, iov, count, tag, context,
				  iwarp_tx_flags(ep_fid), 0);
}

static ssize_t iwarp_tsendmsg(struct fid_ep *ep_fid,
			      const struct fi_msg_tagged *msg, uint64_t flags)
{
	return iwarp_tsend_common(ep_fid, msg->msg_iov, msg->iov_count,
				  msg->tag, msg->context, flags, msg->data);
}

static ssize_t iwarp_tinject(struct fid_ep *ep_fid, const void *buf,
			     size_t len, fi_addr_t dest_addr, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_tsend_common(ep_fid, &iov, 1, tag, NULL,
				  FI_INJECT | IWARP_INJECT_CALL, 0);
}

/* remote CQ data is not offered with FI_TAGGED on MSG: refused there */
static ssize_t iwarp_tsenddata(struct fid_ep *ep_fid, const void *buf,
			       size_t len, void *desc, uint64_t data,
			       fi_addr_t dest_addr, uint64_t tag,
			       void *context)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_tsend_common(ep_fid, &iov, 1, tag, context,
				  iwarp_tx_flags(ep_fid) | FI_REMOTE_CQ_DATA,
				  data);
}

static ssize_t iwarp_tinjectdata(struct fid_ep *ep_fid, const void *buf,
				 size_t len, uint64_t data,
				 fi_addr_t dest_addr, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_tsend_common(ep_fid, &iov, 1, tag, NULL,
				  FI_INJECT | IWARP_INJECT_CALL |
				  FI_REMOTE_CQ_DATA, data);
}

static ssize_t iwarp_trecv(struct fid_ep *ep_fid, void *buf, size_t len,
			   void *desc, fi_addr_t src_addr, uint64_t tag,
			   uint64_t ignore, void *context)
{
	struct iwarp_ep *ep = iwarp_ep_of(&ep_fid->fid);
	struct iovec iov = { buf, len };

	return iwarp_rx(ep, &iov, 1, context,
			ep->base.rx_op_flags | FI_TAGGED, tag, ignore);
}

static ssize_t iwarp_trecvv(struct fid_ep *ep_fid, const struct iovec *iov,
			    void **desc, size_t count, fi_addr_t src_addr,
			    uint64_t tag, uint64_t ignore, void *context)
{
	struct iwarp_ep *ep = iwarp_ep_of(&ep_fid->fid);

	return iwarp_rx(ep, iov, count, context,
			ep->base.rx_op_flags | FI_TAGGED, tag, ignore);
}

/* no FI_PEEK/FI_CLAIM/FI_DISCARD on MSG (not offered) */
static ssize_t iwarp_trecvmsg(struct fid_ep *ep_fid,
			      const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (flags & (FI_PEEK | FI_CLAIM | FI_DISCARD))
		return -FI_EOPNOTSUPP;
	return iwarp_rx(iwarp_ep_of(&ep_fid->fid), msg->msg_iov,
			msg->iov_count, msg->context, flags | FI_TAGGED,
			msg->tag, msg->ignore);
}

struct fi_ops_tagged iwarp_msg_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = iwarp_trecv,
	.recvv = iwarp_trecvv,
	.recvmsg = iwarp_trecvmsg,
	.send = iwarp_tsend,
	.sendv = iwarp_tsendv,
	.sendmsg = iwarp_tsendmsg,
	.inject = iwarp_tinject,
	.senddata = iwarp_tsenddata,
	.injectdata = iwarp_tinjectdata,
};
