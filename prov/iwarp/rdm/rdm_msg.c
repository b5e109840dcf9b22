/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_RDM messages (rdm.h): sends (eager, inject, rendezvous for large
 * messages or delivery completion), receives with tag matching in
 * posting order, multi-receive buffers, the unexpected queue,
 * FI_PEEK/FI_CLAIM/FI_DISCARD, and what arrives for them (EAGER, RTS,
 * FIN). Completions always carry the caller's context.
 */
#include "rdm.h"

#include <stdlib.h>
#include <string.h>

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(a, n) ((void)(a), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(a, n) ((void)(a), (void)(n))
#endif

/* ---- completions */

/* A receive is done: msglen octets were sent to it (truncation if more
 * than it holds). */
static void iwarp_rdm_rx_done(struct iwarp_rdm_ep *ep, struct iwarp_rdm_rx *rx,
		       size_t msglen, int err)
{
	struct iwarp_ep_base *b = rx->base ? rx->base : &ep->base;
	uint64_t flags = rx->flags;
	size_t len = msglen < rx->len ? msglen : rx->len;
	void *buf = NULL;

	if (rx->coll) {	/* exactly the size it expects */
		if (!err && msglen != rx->len)
			err = FI_EIO;
		iwarp_rdm_coll_done(ep, rx->coll, err);
		iwarp_stash_put(&ep->rx_stash, rx);
		return;
	}
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
	if (!(rx->flags & FI_MULTI_RECV))
		len += ep->prefix;	/* the prefix counts, as on MSG */
	if (err)
		iwarp_cq_write_err(b->rx_cq, rx->context, flags, len, buf,
				   rx->hdr.data, rx->hdr.tag, err, 0, NULL, 0,
				   msglen > len ? msglen - len : 0);
	else if (rx->cq)
		iwarp_cq_write(b->rx_cq, rx->context, flags, len, buf,
			       rx->hdr.data, rx->hdr.tag, rx->from);
	if (b->cntr_recv)
		(err ? iwarp_cntr_inc_err : iwarp_cntr_inc)(b->cntr_recv);
	iwarp_stash_put(&ep->rx_stash, rx);
}

/* ---- matching */

static bool iwarp_rdm_matches(const struct iwarp_rdm_rx *rx,
			      const struct iwarp_rdm_hdr *h, fi_addr_t from)
{
	if (!(rx->flags & FI_TAGGED) != !(h->flags & IWARP_RDM_F_TAGGED) ||
	    IWARP_RDM_RXC(h->flags) != rx->rxc)
		return false;
	if ((rx->flags & FI_TAGGED) && (((h->tag ^ rx->tag) & ~rx->ignore) ||
					((h->tag ^ rx->tag) & rx->resv)))
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
	if (mrx->len - mrx->used < ep->base.min_multi_recv ||
	    mrx->used == mrx->len) {
		iwarp_list_del(&mrx->link);
		mrx->retired = true;
	}
	return rx;
}

/* ---- shared receive context (iwarp_ctx.h) */

struct iwarp_rdm_srx_want {
	const struct iwarp_rdm_hdr *h;
	fi_addr_t from;
	bool directed;
	bool coll;		/* FI_COLLECTIVE: bit 63 tags are not theirs */
};

static bool iwarp_rdm_srx_match(const struct iwarp_srx_rx *rx,
				const void *arg)
{
	const struct iwarp_rdm_srx_want *w = arg;
	bool tagged = w->h->flags & IWARP_RDM_F_TAGGED;

	if (rx->tagged != tagged)
		return false;
	if (tagged && (((w->h->tag ^ rx->tag) & ~rx->ignore) ||
		       (w->coll && (w->h->tag & IWARP_COLL_TAG_BIT))))
		return false;
	return !w->directed || rx->src == FI_ADDR_UNSPEC ||
	       rx->src == w->from;
}

static void iwarp_rdm_rx_fill(struct iwarp_rdm_ep *ep, struct iwarp_rdm_rx *rx,
			      const struct iovec *iov, size_t count,
			      uint64_t flags, bool tagged);

/* The endpoint's own receive record for one of the shared context (or
 * of rx context c, when not NULL). */
static struct iwarp_rdm_rx *iwarp_rdm_srx_rx(struct iwarp_rdm_ep *ep,
					     const struct iwarp_srx_rx *s,
					     struct iwarp_rdm_ctx *c)
{
	struct iwarp_rdm_rx *rx = iwarp_rdm_rx_get(&ep->rx_stash);

	if (!rx)
		return NULL;
	if (c) {
		rx->base = &c->base;
		rx->rxc = (uint8_t)c->index;
	}
	rx->context = s->context;
	rx->src = ep->directed ? s->src : FI_ADDR_UNSPEC;
	rx->tag = s->tag;
	rx->ignore = s->ignore;
	iwarp_rdm_rx_fill(ep, rx, s->iov, s->count, s->flags, s->tagged);
	return rx;
}

/* The first receive of the shared context the message matches. */
static struct iwarp_rdm_rx *iwarp_rdm_srx_take(struct iwarp_rdm_ep *ep,
					       const struct iwarp_rdm_hdr *h,
					       fi_addr_t from)
{
	struct iwarp_rdm_srx_want w = { h, from, ep->directed, ep->coll };
	/* the receiver checked the index (rdm_recv.c) */
	struct iwarp_rdm_ctx *c =
		ep->sep ? ep->sep->rx[IWARP_RDM_RXC(h->flags)] : NULL;
	struct iwarp_srx *q = c ? &c->q : ep->base.srx;
	struct iwarp_srx_rx *s;
	struct iwarp_rdm_rx *rx;

	s = iwarp_srx_take(q, iwarp_rdm_srx_match, &w);
	if (!s)
		return NULL;
	rx = iwarp_rdm_srx_rx(ep, s, c);
	if (!rx) {
		iwarp_srx_untake(q, s);
		return NULL;
	}
	free(s);
	return rx;
}

/* The first receive of the endpoint's own queue the message matches,
 * left where it is; NULL when none does. */
static struct iwarp_rdm_rx *iwarp_rdm_posted_first(struct iwarp_rdm_ep *ep,
					   const struct iwarp_rdm_hdr *h,
					   fi_addr_t from)
{
	struct iwarp_list *head = h->flags & IWARP_RDM_F_TAGGED ?
					  &ep->posted_tagged : &ep->posted_msg;
	struct iwarp_list *e;

	for (e = head->next; e != head; e = e->next) {
		struct iwarp_rdm_rx *rx =
			iwarp_container_of(e, struct iwarp_rdm_rx, link);

		if (iwarp_rdm_matches(rx, h, from))
			return rx;
	}
	return NULL;
}

static struct iwarp_rdm_rx *iwarp_rdm_match_posted(struct iwarp_rdm_ep *ep,
					    const struct iwarp_rdm_hdr *h,
					    fi_addr_t from)
{
	struct iwarp_rdm_rx *rx = iwarp_rdm_posted_first(ep, h, from);

	if (!rx)
		return ep->base.srx || ep->sep ?
			       iwarp_rdm_srx_take(ep, h, from) : NULL;
	if (rx->multi)
		return iwarp_rdm_multi_piece(ep, rx, h->len);
	iwarp_list_del(&rx->link);
	return rx;
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

/* The whole message is in (or failed): FIN to the sender, and done. */
static void iwarp_rdm_read_end(struct iwarp_rdm_rx *rx, int err)
{
	iwarp_rdm_send_ctrl(rx->peer, IWARP_RDM_FIN, rx->hdr.msg_id,
			    err ? IWARP_RDM_F_ERROR : 0);
	if (rx->owes)
		iwarp_rdm_owe(rx->peer);
	iwarp_rdm_rx_done(rx->peer->ep, rx, rx->hdr.len, err ? FI_EIO : 0);
}

/* One Read of len octets at off of the message into rx's buffers. */
static int iwarp_rdm_read_post(struct iwarp_rdm_rx *rx, uint64_t off,
			       uint64_t len)
{
	struct iwarp_rdm_peer *peer = rx->peer;
	uint64_t raddr = rx->hdr.addr + off;
	struct iovec iov[IW_MAX_SGE];
	size_t i, n = 0;

	for (i = 0; i < rx->count && len && n < IW_MAX_SGE; i++) {
		size_t have = rx->iov[i].iov_len, take;

		if (off >= have) {
			off -= have;
			continue;
		}
		take = have - off < len ? have - off : len;
		iov[n].iov_base = (uint8_t *)rx->iov[i].iov_base + off;
		iov[n++].iov_len = take;
		len -= take;
		off = 0;
	}
	return peer->xp->post_rdma(peer->xc, rx, IWARP_RDM_X_READ, iov, n,
				   rx->hdr.stag, raddr, IWARP_RDM_X_PEER_VA);
}

/* The chunk of rx's Read that starts at octet at. */
static uint64_t iwarp_rdm_read_piece(const struct iwarp_rdm_rx *rx,
				     uint64_t at)
{
	uint64_t k = rx->rd_len - at;

	return k < rx->rd_chunk ? k : rx->rd_chunk;
}

static void iwarp_rdm_read_bytes_sub(struct iwarp_rdm_peer *peer,
				     uint64_t k)
{
	peer->read_bytes -= k < peer->read_bytes ? k : peer->read_bytes;
}

/*
 * Asks for the chunks of the waiting receives, in order, while the
 * peer's outstanding Reads stay within the transport's window, or within
 * four Reads of the next one's size (some on the wire while others
 * complete). A post may fail the connection and complete Reads inside it,
 * this receive's among them: while read_cur is set, those calls only
 * count, and the receive is ended here.
 */
static void iwarp_rdm_read_pump(struct iwarp_rdm_peer *peer)
{
	uint64_t window;

	if (peer->read_cur || iwarp_list_empty(&peer->read_wait))
		return;
	window = peer->xp->read_window(peer->xc);
	while (!iwarp_list_empty(&peer->read_wait)) {
		struct iwarp_rdm_rx *rx = iwarp_container_of(
			peer->read_wait.next, struct iwarp_rdm_rx, link);

		peer->read_cur = rx;
		while (rx->rd_off < rx->rd_len && !rx->rd_err) {
			uint64_t k = iwarp_rdm_read_piece(rx, rx->rd_off);

			if (peer->read_bytes + k > window &&
			    peer->read_bytes + k > 4 * k) {
				peer->read_cur = NULL;
				return;
			}
			if (!peer->up || peer->ep->closing) {
				rx->rd_err = FI_EIO;
				break;
			}
			rx->rd_off += k;
			rx->rd_out++;
			peer->read_bytes += k;
			if (iwarp_rdm_read_post(rx, rx->rd_off - k, k)) {
				rx->rd_off -= k;
				rx->rd_out--;
				iwarp_rdm_read_bytes_sub(peer, k);
				if (!rx->rd_err)
					rx->rd_err = FI_EIO;
			}
		}
		/* all asked, or nothing more will be: the Reads out end it */
		peer->read_cur = NULL;
		rx->rd_off = rx->rd_len;
		iwarp_list_del(&rx->link);
		if (!rx->rd_out)
			iwarp_rdm_read_end(rx, rx->rd_err);
	}
}

/* A Read of rx completed: Reads complete in the order they were posted,
 * so it is the chunk at rd_in. */
void iwarp_rdm_read_done(struct iwarp_rdm_rx *rx, int err)
{
	struct iwarp_rdm_peer *peer = rx->peer;
	uint64_t k;

	if (!rx->rd_chunk) {
		iwarp_rdm_read_end(rx, err);
		return;
	}
	k = iwarp_rdm_read_piece(rx, rx->rd_in);
	rx->rd_in += k;
	iwarp_rdm_read_bytes_sub(peer, k);
	if (err && !rx->rd_err)
		rx->rd_err = err;
	rx->rd_out--;
	if (rx == peer->read_cur)
		return;
	if (!rx->rd_out && rx->rd_off == rx->rd_len)
		iwarp_rdm_read_end(rx, rx->rd_err);
	iwarp_rdm_read_pump(peer);
}

/* The connection is gone: nothing more is asked; each waiting receive
 * ends with an error once its Reads out have come back. */
void iwarp_rdm_reads_lost(struct iwarp_rdm_peer *peer)
{
	struct iwarp_list *e = peer->read_wait.next, *next;

	peer->read_bytes = 0;	/* the next connection starts afresh */
	for (; e != &peer->read_wait; e = next) {
		struct iwarp_rdm_rx *rx =
			iwarp_container_of(e, struct iwarp_rdm_rx, link);

		next = e->next;
		if (!rx->rd_err)
			rx->rd_err = FI_EIO;
		if (rx == peer->read_cur)
			continue;	/* the pump ends it */
		iwarp_list_del(&rx->link);
		rx->rd_off = rx->rd_len;
		if (!rx->rd_out)
			iwarp_rdm_read_end(rx, rx->rd_err);
	}
}

/* RDMA Reads straight into the matched receive (rendezvous): one for
 * the whole message, or chunks the pump asks for in turn. */
static void iwarp_rdm_start_read(struct iwarp_rdm_rx *rx)
{
	struct iwarp_rdm_peer *peer = rx->peer;

	rx->rd_chunk = peer->xp->read_chunk(peer->xc);
	/* what the buffers hold of it: the rest is truncated */
	rx->rd_len = rx->hdr.len < rx->len ? rx->hdr.len : rx->len;
	rx->rd_off = 0;
	rx->rd_in = 0;
	rx->rd_out = 0;
	rx->rd_err = 0;
	if (rx->rd_chunk && rx->rd_len) {
		iwarp_list_add_tail(&peer->read_wait, &rx->link);
		iwarp_rdm_read_pump(peer);
		return;
	}
	rx->rd_chunk = 0;
	if (iwarp_rdm_read_post(rx, 0, rx->hdr.len))
		iwarp_rdm_read_done(rx, FI_EIO);
}

/* The size class of len, or IWARP_RDM_BUF_CLASSES when it has none. */
static unsigned int iwarp_rdm_buf_class(size_t len)
{
	unsigned int c = 0;

	while (c < IWARP_RDM_BUF_CLASSES &&
	       ((size_t)1 << (IWARP_RDM_BUF_MIN_SHIFT + c)) < len)
		c++;
	return c;
}

void *iwarp_rdm_buf_get(struct iwarp_rdm_bufs *b, size_t len)
{
	unsigned int c = iwarp_rdm_buf_class(len);
	size_t size = (size_t)1 << (IWARP_RDM_BUF_MIN_SHIFT + c);
	void *p;

	if (c == IWARP_RDM_BUF_CLASSES)
		return malloc(len);
	p = b->free[c];
	if (!p)
		return malloc(size);
	ASAN_UNPOISON_MEMORY_REGION(p, size);
	b->free[c] = *(void **)p;
	b->kept -= size;
	return p;
}

/* buf came from iwarp_rdm_buf_get(b, len); NULL is ignored. */
void iwarp_rdm_buf_put(struct iwarp_rdm_bufs *b, void *buf, size_t len)
{
	unsigned int c = iwarp_rdm_buf_class(len);
	size_t size = (size_t)1 << (IWARP_RDM_BUF_MIN_SHIFT + c);

	if (!buf)
		return;
	if (c == IWARP_RDM_BUF_CLASSES || b->kept + size > IWARP_RDM_BUF_KEEP) {
		free(buf);
		return;
	}
	*(void **)buf = b->free[c];
	b->free[c] = buf;
	b->kept += size;
	/* a kept buffer read or written is a use after free */
	ASAN_POISON_MEMORY_REGION(buf, size);
}

void iwarp_rdm_bufs_fini(struct iwarp_rdm_bufs *b)
{
	unsigned int c;

	for (c = 0; c < IWARP_RDM_BUF_CLASSES; c++)
		while (b->free[c]) {
			void *p = b->free[c];

			ASAN_UNPOISON_MEMORY_REGION(p, sizeof(void *));
			b->free[c] = *(void **)p;
			free(p);
		}
	b->kept = 0;
}

static void iwarp_rdm_ux_free(struct iwarp_rdm_ep *ep,
			      struct iwarp_rdm_unexp *ux)
{
	ep->unexp_bytes -= ux->cost;
	if (ux->buf != ux->small)
		iwarp_rdm_buf_put(&ep->ux_bufs, ux->buf, ux->hdr.len);
	iwarp_stash_put(&ep->ux_stash, ux);
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
	if (ux->withheld && ux->epoch == ux->peer->epoch) {
		/* stored over the limit: its credit goes back now, not at
		 * half a window, as the sender may have none left (not to a
		 * connection that came after: it started with a full one) */
		ux->withheld = false;
		ux->peer->owed++;
		iwarp_rdm_send_ctrl(ux->peer, IWARP_RDM_CREDIT, 0, 0);
	}
	if (ux->hdr.op == IWARP_RDM_RTS && !discard) {
		iwarp_rdm_ux_free(ep, ux);
		iwarp_rdm_start_read(rx);
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

static void iwarp_rdm_unexp_arrived(struct iwarp_rdm_ep *ep,
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

/* ---- what arrives for messages (dispatched by rdm_recv.c) */

/*
 * A message stored as unexpected gives its credit back at once, so MPI may
 * receive in any order; past rdm_unexp_max stored octets the credit waits
 * until the message is taken, which bounds what peers can make us hold.
 */
static void iwarp_rdm_stored(struct iwarp_rdm_ep *ep,
			     struct iwarp_rdm_unexp *ux, bool queued)
{
	if (queued && ep->unexp_bytes > iwarp_params.rdm_unexp_max) {
		ux->withheld = true;
		ux->epoch = ux->peer->epoch;
	} else
		iwarp_rdm_owe(ux->peer);
}

/* Queues ux, a message from peer, as unexpected; cost counts it. */
static void iwarp_rdm_unexp_add(struct iwarp_rdm_peer *peer,
				struct iwarp_rdm_unexp *ux,
				const struct iwarp_rdm_hdr *h, size_t cost)
{
	struct iwarp_rdm_ep *ep = peer->ep;

	ux->hdr = *h;
	ux->cost = cost;
	ep->unexp_bytes += cost;
	ux->peer = peer;
	ux->from = iwarp_rdm_from(peer);
	iwarp_list_add_tail(h->flags & IWARP_RDM_F_TAGGED ? &ep->unexp_tagged :
							    &ep->unexp_msg,
			    &ux->link);
}

/* An EAGER no receive waits for: its payload lands in a buffer of ours. */
static int iwarp_rdm_eager_unexp(struct iwarp_rdm_peer *peer,
				 struct iwarp_rdm_in *in, struct iw_sge *dst)
{
	struct iwarp_rdm_unexp *ux = iwarp_rdm_ux_get(&peer->ep->ux_stash);

	if (ux)
		ux->buf = in->hdr.len <= sizeof(ux->small) ? ux->small :
			  iwarp_rdm_buf_get(&peer->ep->ux_bufs, in->hdr.len);
	if (!ux || !ux->buf) {
		iwarp_stash_put(&peer->ep->ux_stash, ux);
		return -1;
	}
	iwarp_rdm_unexp_add(peer, ux, &in->hdr, IWARP_RDM_UX_COST + in->hdr.len);
	in->ux = ux;
	dst[0].addr = ux->buf;
	dst[0].len = in->hdr.len;
	return in->hdr.len ? 1 : 0;
}

/* An EAGER into the receive it matched; what does not fit is dropped.
 * -1 when that takes more than IW_MAX_SGE entries: a receive of as many
 * buffers, all filled, and a discard for the rest. */
static int iwarp_rdm_eager_direct(const struct iwarp_rdm_rx *rx, size_t len,
				  struct iw_sge *dst)
{
	size_t i, n = 0, left = len;

	for (i = 0; i < rx->count && left; i++) {
		size_t take = rx->iov[i].iov_len < left ? rx->iov[i].iov_len :
							  left;

		if (!take)
			continue;
		if (n == IW_MAX_SGE)
			return -1;
		dst[n].addr = rx->iov[i].iov_base;
		dst[n++].len = (uint32_t)take;
		left -= take;
	}
	if (left) {	/* truncated: the rest is discarded */
		if (n == IW_MAX_SGE)
			return -1;
		dst[n].addr = NULL;
		dst[n++].len = (uint32_t)left;
	}
	return (int)n;
}

int iwarp_rdm_eager_place(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in,
			  struct iw_sge *dst)
{
	if (in->hdr.len > IWARP_RDM_EAGER_MAX) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
			"RDM peer %s: EAGER of %u octets, at most %u\n",
			peer->name, in->hdr.len, IWARP_RDM_EAGER_MAX);
		return -1;
	}
	struct iwarp_rdm_rx *rx;
	int n;

	in->rx = iwarp_rdm_match_posted(peer->ep, &in->hdr,
					iwarp_rdm_from(peer));
	if (!in->rx)
		return iwarp_rdm_eager_unexp(peer, in, dst);
	n = iwarp_rdm_eager_direct(in->rx, in->hdr.len, dst);
	if (n >= 0)
		return n;
	/* too many pieces to place: it lands in a buffer of ours, and is
	 * copied into the receive (cut short) once in */
	rx = in->rx;
	in->rx = NULL;
	n = iwarp_rdm_eager_unexp(peer, in, dst);
	if (n < 0) {
		iwarp_rdm_rx_done(peer->ep, rx, 0, FI_ENOMEM);
		return n;
	}
	iwarp_rdm_take_unexp(peer->ep, in->ux, rx, false);
	return n;
}

/* An EAGER whose payload is in rx, which it matched: the credit owed,
 * the receive completed. */
static void iwarp_rdm_eager_end(struct iwarp_rdm_peer *peer,
				struct iwarp_rdm_rx *rx,
				const struct iwarp_rdm_hdr *h)
{
	iwarp_rdm_owe(peer);
	rx->hdr = *h;
	rx->from = iwarp_rdm_from(peer);
	iwarp_rdm_rx_done(peer->ep, rx, h->len, 0);
}

bool iwarp_rdm_eager_whole(struct iwarp_rdm_peer *peer,
			   const struct iwarp_rdm_hdr *h, const uint8_t *payload)
{
	struct iwarp_rdm_ep *ep = peer->ep;
	struct iwarp_rdm_rx *rx;
	struct iwarp_rdm_unexp *ux;

	rx = iwarp_rdm_posted_first(ep, h, iwarp_rdm_from(peer));
	if (rx) {
		if (rx->multi)
			return false;
		iwarp_list_del(&rx->link);
		peer->granted--;
		iwarp_rdm_credits_in(peer, h->credits);
		iwarp_rdm_copy_out(rx, payload,
				   h->len < rx->len ? h->len : rx->len);
		iwarp_rdm_eager_end(peer, rx, h);
		return true;
	}
	/* most unexpected messages, when ranks outnumber cores: what
	 * eager_unexp, eager_in and unexp_arrived do, in one step */
	if (ep->base.srx || ep->sep || h->len > IWARP_RDM_UX_SMALL)
		return false;
	ux = iwarp_rdm_ux_get(&ep->ux_stash);
	if (!ux)
		return false;
	peer->granted--;
	iwarp_rdm_credits_in(peer, h->credits);
	ux->buf = ux->small;
	memcpy(ux->small, payload, h->len);
	iwarp_rdm_unexp_add(peer, ux, h, IWARP_RDM_UX_COST + h->len);
	ux->arrived = true;
	iwarp_rdm_stored(ep, ux, true);
	return true;
}

void iwarp_rdm_eager_in(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in)
{
	struct iwarp_rdm_ep *ep = peer->ep;
	struct iwarp_rdm_unexp *ux = in->ux;

	if (in->rx) {
		iwarp_rdm_eager_end(peer, in->rx, &in->hdr);
		return;
	}
	iwarp_rdm_stored(ep, ux, !ux->waiter &&
			 !(ux->claimed && ux->claim_ctx == ux));
	iwarp_rdm_unexp_arrived(ep, ux);
}

void iwarp_rdm_eager_drop(struct iwarp_rdm_peer *peer,
			  struct iwarp_rdm_in *in)
{
	if (in->rx)
		iwarp_rdm_rx_done(peer->ep, in->rx, 0, FI_EIO);
	if (in->ux) {
		/* a receive took it while it arrived: it fails too */
		if (in->ux->waiter)
			iwarp_rdm_rx_done(peer->ep, in->ux->waiter, 0, FI_EIO);
		iwarp_list_del(&in->ux->link);
		iwarp_rdm_ux_free(peer->ep, in->ux);
	}
}

/* A large message to Read: into the matched receive, else stored. */
void iwarp_rdm_rts_in(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in)
{
	struct iwarp_rdm_ep *ep = peer->ep;
	struct iwarp_rdm_unexp *ux;
	struct iwarp_rdm_rx *rx;

	rx = iwarp_rdm_match_posted(ep, &in->hdr, iwarp_rdm_from(peer));
	if (rx) {
		rx->hdr = in->hdr;
		rx->peer = peer;
		rx->from = iwarp_rdm_from(peer);
		rx->owes = true;	/* given back when the Read ends */
		iwarp_rdm_start_read(rx);
		return;
	}
	ux = iwarp_rdm_ux_get(&ep->ux_stash);
	if (!ux) {
		iwarp_rdm_owe(peer);
		return;
	}
	iwarp_rdm_unexp_add(peer, ux, &in->hdr, IWARP_RDM_UX_COST);
	ux->arrived = true;
	iwarp_rdm_stored(ep, ux, true);
}

/* The receiver has read our RTS's payload: the send is done. */
void iwarp_rdm_fin_in(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in)
{
	struct iwarp_list *e;

	for (e = peer->inflight.next; e != &peer->inflight; e = e->next) {
		struct iwarp_rdm_tx *tx =
			iwarp_container_of(e, struct iwarp_rdm_tx, link);

		if (tx->hdr.op != IWARP_RDM_RTS ||
		    tx->hdr.msg_id != in->hdr.msg_id)
			continue;
		iwarp_list_del(&tx->link);
		tx->listed = false;
		tx->answered = true;
		if ((in->hdr.flags & IWARP_RDM_F_ERROR) && !tx->status)
			tx->status = FI_EIO;
		iwarp_rdm_settle(peer->ep, tx);
		return;
	}
}

/* ---- receives */

/*
 * FI_MSG_PREFIX: the first iov starts with room we neither send from nor
 * receive into (fi_getinfo(3)); v gets the caller's iov without it.
 */
static int iwarp_rdm_unprefix(const struct iwarp_rdm_ep *ep,
			      const struct iovec **iov, size_t count,
			      struct iovec *v)
{
	if (!ep->prefix)
		return 0;
	if (!count || (*iov)[0].iov_len < ep->prefix)
		return -FI_EINVAL;
	memcpy(v, *iov, count * sizeof(*v));
	v[0].iov_base = (char *)v[0].iov_base + ep->prefix;
	v[0].iov_len -= ep->prefix;
	*iov = v;
	return 0;
}

static ssize_t iwarp_rdm_peek(struct iwarp_rdm_ep *ep,
			      struct iwarp_rdm_rx *rx, uint64_t flags)
{
	struct iwarp_rdm_unexp *ux = iwarp_rdm_match_unexp(ep, rx, NULL);

	if (!ux || !ux->arrived) {
		iwarp_cq_write_err(ep->base.rx_cq, rx->context, rx->flags, 0, NULL,
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
	iwarp_cq_write(ep->base.rx_cq, rx->context,
		       rx->flags | (ux->hdr.flags & IWARP_RDM_F_DATA ?
				    FI_REMOTE_CQ_DATA : 0),
		       ux->hdr.len + ep->prefix, NULL, ux->hdr.data, ux->hdr.tag,
		       ux->from);
	free(rx);
	return 0;
}

/* Fills a receive record in from the call (lock held). */
static void iwarp_rdm_rx_fill(struct iwarp_rdm_ep *ep, struct iwarp_rdm_rx *rx,
			      const struct iovec *iov, size_t count,
			      uint64_t flags, bool tagged)
{
	size_t i;

	rx->flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	rx->resv = ep->coll ? IWARP_COLL_TAG_BIT : 0;
	rx->count = count;
	for (i = 0; i < count; i++) {
		rx->iov[i] = iov[i];
		rx->len += iov[i].iov_len;
	}
	rx->cq = !ep->base.rx_selective || (flags & FI_COMPLETION);
	if (flags & FI_MULTI_RECV) {
		rx->multi = true;
		rx->flags |= FI_MULTI_RECV;
	}
}

/* A multi-receive buffer is posted at once (a piece that retires it
 * unlinks it), then takes every waiting message it can hold. */
static void iwarp_rdm_multi_post(struct iwarp_rdm_ep *ep,
				 struct iwarp_rdm_rx *rx)
{
	struct iwarp_rdm_unexp *ux;

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
}

/* Peeks with rx, hands it what waits for it, or posts it; -FI_EINVAL
 * (rx freed) when FI_CLAIM finds nothing claimed with its context. */
static ssize_t iwarp_rdm_recv_take(struct iwarp_rdm_ep *ep,
				   struct iwarp_rdm_rx *rx, uint64_t flags,
				   bool tagged)
{
	struct iwarp_rdm_unexp *ux;

	if (flags & FI_PEEK) {
		iwarp_progress(ep->base.fab);
		iwarp_rdm_peek(ep, rx, flags);
	} else if (rx->multi) {
		iwarp_rdm_multi_post(ep, rx);
	} else if ((ux = iwarp_rdm_match_unexp(ep, rx, (flags & FI_CLAIM) ?
						       rx->context : NULL))) {
		iwarp_rdm_take_unexp(ep, ux, rx, flags & FI_DISCARD);
	} else if (flags & FI_CLAIM) {
		iwarp_stash_put(&ep->rx_stash, rx);
		return -FI_EINVAL;	/* nothing was claimed with it */
	} else {
		iwarp_list_add_tail(tagged ? &ep->posted_tagged :
					     &ep->posted_msg, &rx->link);
	}
	return 0;
}

static ssize_t iwarp_rdm_recv_common(struct iwarp_rdm_ep *ep,
				     const struct iovec *iov, size_t count,
				     fi_addr_t src, uint64_t tag,
				     uint64_t ignore, void *context,
				     uint64_t flags, bool tagged)
{
	struct iovec v[IWARP_IOV_MAX];
	struct iwarp_rdm_rx *rx;
	ssize_t ret;

	if (count > IWARP_IOV_MAX || (count && !iov))
		return -FI_EINVAL;
	if ((flags & FI_MULTI_RECV) &&
	    (tagged || count != 1 || (flags & (FI_PEEK | FI_CLAIM))))
		return -FI_EINVAL;
	if (ep->base.srx)	/* receives go to the shared context */
		return -FI_EINVAL;
	if (tagged && ep->coll && (tag & IWARP_COLL_TAG_BIT))
		return -FI_EINVAL;	/* the collectives' tags */
	/* a multi-receive buffer takes messages, not prefixed ones; a
	 * peek may come without a buffer */
	if (!(flags & FI_MULTI_RECV) && (count || !(flags & FI_PEEK)) &&
	    iwarp_rdm_unprefix(ep, &iov, count, v))
		return -FI_EINVAL;
	iwarp_lock(ep->base.fab);
	if (!ep->base.enabled) {
		iwarp_unlock(ep->base.fab);
		return -FI_EOPBADSTATE;
	}
	rx = iwarp_rdm_rx_get(&ep->rx_stash);
	if (!rx) {
		iwarp_unlock(ep->base.fab);
		return -FI_ENOMEM;
	}
	rx->context = context;
	/* fi_tagged(3): the source filters only with FI_DIRECTED_RECV */
	rx->src = ep->directed ? src : FI_ADDR_UNSPEC;
	rx->tag = tag;
	rx->ignore = ignore;
	iwarp_rdm_rx_fill(ep, rx, iov, count, flags, tagged);
	ret = iwarp_rdm_recv_take(ep, rx, flags, tagged);
	iwarp_unlock(ep->base.fab);
	return ret;
}

/* A receive posted to the shared context takes a matching unexpected
 * message of this endpoint, if there is one. */
static bool iwarp_rdm_offer(struct iwarp_rdm_ep *ep, struct iwarp_srx_rx *s,
			    struct iwarp_rdm_ctx *c)
{
	struct iwarp_rdm_unexp *ux;
	struct iwarp_rdm_rx *rx = iwarp_rdm_srx_rx(ep, s, c);

	if (!rx)
		return false;
	ux = iwarp_rdm_match_unexp(ep, rx, NULL);
	if (!ux) {
		iwarp_stash_put(&ep->rx_stash, rx);
		return false;
	}
	iwarp_rdm_take_unexp(ep, ux, rx, false);
	return true;
}

bool iwarp_rdm_srx_offer(struct iwarp_ep_base *b, struct iwarp_srx_rx *s)
{
	return iwarp_rdm_offer(iwarp_container_of(b, struct iwarp_rdm_ep, base),
			       s, NULL);
}

void iwarp_rdm_ctx_post(struct iwarp_rdm_ctx *c, struct iwarp_srx_rx *s)
{
	if (iwarp_rdm_offer(c->core, s, c)) {
		free(s);
		return;
	}
	iwarp_list_add_tail(&c->q.posted, &s->link);
	c->q.nposted++;
}

/* ---- sends */

static int iwarp_rdm_rndv(struct iwarp_rdm_ep *ep, struct iwarp_rdm_tx *tx)
{
	void *buf = tx->iov[0].iov_base;

	if (tx->count > 1) {	/* register one contiguous copy */
		if (iwarp_rdm_tx_flatten(tx))
			return -FI_ENOMEM;
		buf = tx->iov[0].iov_base;
	}
	if (iw_mr_reg(ep->base.dom->pd, tx->len ? buf : tx, tx->len,
		      (uintptr_t)buf, IW_ACC_REMOTE_READ, &tx->mr))
		return -FI_ENOMEM;
	tx->hdr.op = IWARP_RDM_RTS;
	tx->hdr.stag = iw_mr_stag(tx->mr);
	tx->hdr.addr = (uintptr_t)buf;
	return 0;
}

/* A send's header flags (but the rx context's) and completion flags. */
static uint8_t iwarp_rdm_send_hflags(uint64_t flags, bool tagged)
{
	return (uint8_t)((tagged ? IWARP_RDM_F_TAGGED : 0) |
			 (flags & FI_REMOTE_CQ_DATA ? IWARP_RDM_F_DATA : 0));
}

static uint64_t iwarp_rdm_send_cq_flags(bool tagged)
{
	return FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
}

/* Fills a send record in from the call (lock held): an EAGER so far. */
static void iwarp_rdm_tx_fill(struct iwarp_rdm_ep *ep, struct iwarp_rdm_tx *tx,
			      const struct iovec *iov, size_t count,
			      uint64_t flags, bool tagged)
{
	const struct iwarp_ep_base *b = tx->base ? tx->base : &ep->base;

	size_t i;

	tx->owner = IWARP_RDM_OWN_TX;
	tx->op_flags = flags;
	tx->cq_flags = iwarp_rdm_send_cq_flags(tagged);
	tx->count = count;
	for (i = 0; i < count; i++) {
		tx->iov[i] = iov[i];
		tx->len += iov[i].iov_len;
	}
	tx->hdr.op = IWARP_RDM_EAGER;
	tx->hdr.flags = iwarp_rdm_send_hflags(flags, tagged);
	tx->hdr.len = (uint32_t)tx->len;
	tx->cq = iwarp_rdm_wants_cq(b, flags);
}

/* The rx context fi_rx_addr put in dest's top bits, for the header. */
static uint8_t iwarp_rdm_rxc_flags(const struct iwarp_rdm_ep *ep,
				   fi_addr_t dest)
{
	unsigned int bits = ep->av ? ep->av->rx_ctx_bits : 0;

	if (!bits || dest == FI_ADDR_UNSPEC)
		return 0;
	return (uint8_t)((dest >> (64 - bits)) << IWARP_RDM_RXC_SHIFT);
}

/*
 * A large message goes eagerly all the same to a peer that has nothing
 * of ours outstanding: every credit back (every message matched or
 * stored), nothing queued, no rendezvous waiting for its FIN. That is a
 * ping-pong, where the Read's round trip is the cost; a stream (osu_bw's
 * window) sees credits out from its second message on and keeps the
 * rendezvous, which lets the receiver pace it.
 */
static bool iwarp_rdm_eager_idle(const struct iwarp_rdm_peer *peer,
				 size_t len, uint64_t flags)
{
	return len <= iwarp_params.rdm_eager_idle &&
	       !(flags & IWARP_RDM_DELIVERY) && peer->up &&
	       peer->credits == peer->window &&
	       iwarp_list_empty(&peer->pending) &&
	       iwarp_list_empty(&peer->inflight) &&
	       peer->xp->eager_idle(peer->xc);
}

/*
 * Both sides streaming large messages (osu_bibw): a transport that
 * copies an eager message twice goes by rendezvous above stream_eager
 * while the peer's large messages keep coming (one within our last
 * IWARP_RDM_STREAM_SPAN large sends) and at least IWARP_RDM_STREAM_DEPTH
 * of ours are out. A ping-pong, a one-way stream and the exchanges of a
 * collective (a message or two each way, where a rendezvous would wait
 * for a peer that may not be on a processor) keep the eager path.
 */
#define IWARP_RDM_STREAM_SPAN 256
#define IWARP_RDM_STREAM_DEPTH 4

static bool iwarp_rdm_stream_rndv(struct iwarp_rdm_peer *peer, size_t len)
{
	if (!peer->big_rx || len <= peer->xp->stream_eager(peer->xc))
		return false;
	if (++peer->big_tx - peer->big_rx_at > IWARP_RDM_STREAM_SPAN) {
		peer->big_rx = false;	/* the peer stopped */
		return false;
	}
	return peer->window - peer->credits >= IWARP_RDM_STREAM_DEPTH;
}

/* Inject copies the payload; large or delivery-complete messages go
 * rendezvous: done when the receiver has them. */
static int iwarp_rdm_send_prep(struct iwarp_rdm_ep *ep,
			       struct iwarp_rdm_peer *peer,
			       struct iwarp_rdm_tx *tx, uint64_t flags)
{
	if (flags & FI_INJECT)
		return iwarp_rdm_tx_flatten(tx);
	if (tx->len > iwarp_params.rdm_eager || (flags & IWARP_RDM_DELIVERY))
		return iwarp_rdm_eager_idle(peer, tx->len, flags) ?
			       0 : iwarp_rdm_rndv(ep, tx);
	return iwarp_rdm_stream_rndv(peer, tx->len) ?
		       iwarp_rdm_rndv(ep, tx) : 0;
}

/*
 * A small send handed straight to a transport that takes it whole at
 * once (shared memory): no send record to fill, queue and retire, which
 * on a same-host ping-pong is most of what a send costs. In the peer's
 * ring the message is as good as delivered, so its completion (none for
 * an inject) is written at once. Fenced and delivery-complete sends keep
 * the ordinary way. Lock held.
 */
static bool iwarp_rdm_send_fast(struct iwarp_rdm_ep *ep,
				struct iwarp_ep_base *owner,
				struct iwarp_rdm_peer *peer,
				const struct iovec *iov, size_t count,
				size_t len, fi_addr_t dest, uint64_t tag,
				uint64_t data, void *context, uint64_t flags,
				bool tagged)
{
	struct iwarp_ep_base *b = owner ? owner : &ep->base;
	uint64_t cq_flags = iwarp_rdm_send_cq_flags(tagged);
	struct iwarp_rdm_hdr h;
	struct iwarp_cntr *cntr;

	if (!peer->xp->post_inline || flags & (IWARP_RDM_DELIVERY | FI_FENCE) ||
	    (!(flags & FI_INJECT) && len > iwarp_params.rdm_eager))
		return false;
	h = (struct iwarp_rdm_hdr){
		.flags = (uint8_t)(iwarp_rdm_send_hflags(flags, tagged) |
				   iwarp_rdm_rxc_flags(ep, dest)),
		.len = (uint32_t)len,
		.msg_id = ep->next_msg_id + 1,
		.tag = tag,
		.data = data,
	};
	if (!iwarp_rdm_eager_now(peer, &h, iov, count))
		return false;
	ep->next_msg_id++;
	if (iwarp_rdm_wants_cq(b, flags))
		iwarp_cq_write(b->tx_cq, context, cq_flags, len, NULL, 0,
			       tagged ? tag : 0, FI_ADDR_NOTAVAIL);
	cntr = iwarp_ep_base_cntr(b, cq_flags);
	if (cntr)
		iwarp_cntr_inc(cntr);
	return true;
}

ssize_t iwarp_rdm_send_common(struct iwarp_rdm_ep *ep,
			      struct iwarp_ep_base *owner,
			      const struct iovec *iov, size_t count,
			      fi_addr_t dest, uint64_t tag, uint64_t data,
			      void *context, uint64_t flags, bool tagged)
{
	struct iovec v[IWARP_IOV_MAX];
	struct iwarp_rdm_peer *peer;
	struct iwarp_rdm_tx *tx;
	size_t i, len = 0;
	int ret;

	if (count > IWARP_IOV_MAX - 1 || (count && !iov))
		return -FI_EINVAL;
	if (tagged && ep->coll && (tag & IWARP_COLL_TAG_BIT))
		return -FI_EINVAL;	/* the collectives' tags */
	if (iwarp_rdm_unprefix(ep, &iov, count, v))
		return -FI_EINVAL;
	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	if (len > UINT32_MAX || ((flags & FI_INJECT) &&
				 len > IWARP_RDM_INJECT_MAX))
		return -FI_EINVAL;
	iwarp_lock(ep->base.fab);
	peer = iwarp_rdm_dest(ep, dest);
	if (!peer) {
		iwarp_unlock(ep->base.fab);
		return ep->base.enabled ? -FI_EINVAL : -FI_EOPBADSTATE;
	}
	if (iwarp_rdm_send_fast(ep, owner, peer, iov, count, len, dest, tag,
				data, context, flags, tagged)) {
		iwarp_unlock(ep->base.fab);
		return 0;
	}
	tx = iwarp_stash_get_part(&ep->tx_stash, sizeof(*tx),
				  IWARP_RDM_TX_CLEAR);
	if (!tx) {
		iwarp_unlock(ep->base.fab);
		return -FI_ENOMEM;
	}
	tx->context = context;
	tx->base = owner;
	iwarp_rdm_tx_fill(ep, tx, iov, count, flags, tagged);
	tx->hdr.flags |= iwarp_rdm_rxc_flags(ep, dest);
	tx->hdr.tag = tag;
	tx->hdr.data = data;
	tx->hdr.msg_id = ++ep->next_msg_id;
	ret = iwarp_rdm_send_prep(ep, peer, tx, flags & ~IWARP_INJECT_CALL);
	if (ret) {
		free(tx->copy);
		iwarp_stash_put(&ep->tx_stash, tx);
	} else {
		iwarp_rdm_queue(peer, tx);
	}
	iwarp_unlock(ep->base.fab);
	return ret;
}

/* ---- internal messages of collectives (rdm_coll.c), lock held */

int iwarp_rdm_isend(struct iwarp_rdm_ep *ep, fi_addr_t dest, const void *buf,
		    size_t len, uint64_t tag, struct iwarp_rdm_cop *op)
{
	struct iovec iov = { (void *)buf, len };
	struct iwarp_rdm_peer *peer = iwarp_rdm_dest(ep, dest);
	struct iwarp_rdm_tx *tx;
	int ret;

	if (!peer)
		return -FI_EINVAL;
	tx = iwarp_stash_get_part(&ep->tx_stash, sizeof(*tx),
				  IWARP_RDM_TX_CLEAR);
	if (!tx)
		return -FI_ENOMEM;
	iwarp_rdm_tx_fill(ep, tx, &iov, 1, 0, true);
	tx->cq = false;
	tx->coll = op;
	tx->hdr.tag = tag;
	tx->hdr.msg_id = ++ep->next_msg_id;
	ret = iwarp_rdm_send_prep(ep, peer, tx, 0);
	if (ret) {
		free(tx->copy);
		iwarp_stash_put(&ep->tx_stash, tx);
		return ret;
	}
	iwarp_rdm_queue(peer, tx);
	return 0;
}

int iwarp_rdm_irecv(struct iwarp_rdm_ep *ep, fi_addr_t src, void *buf,
		    size_t len, uint64_t tag, struct iwarp_rdm_cop *op)
{
	struct iovec iov = { buf, len };
	struct iwarp_rdm_rx *rx = iwarp_rdm_rx_get(&ep->rx_stash);

	if (!rx)
		return -FI_ENOMEM;
	iwarp_rdm_rx_fill(ep, rx, &iov, 1, 0, true);
	rx->cq = false;
	rx->coll = op;
	rx->src = src;
	rx->tag = tag;
	return (int)iwarp_rdm_recv_take(ep, rx, 0, true);
}

size_t iwarp_rdm_irecv_cancel(struct iwarp_rdm_ep *ep,
			      struct iwarp_rdm_cop *op)
{
	struct iwarp_list *e = ep->posted_tagged.next, *next;
	size_t n = 0;

	for (; e != &ep->posted_tagged; e = next) {
		struct iwarp_rdm_rx *rx =
			iwarp_container_of(e, struct iwarp_rdm_rx, link);

		next = e->next;
		if (rx->coll != op)
			continue;
		iwarp_list_del(&rx->link);
		iwarp_stash_put(&ep->rx_stash, rx);
		n++;
	}
	return n;
}

/* ---- fi_ops_msg and fi_ops_tagged */

#define RDM(ep_) iwarp_rdm_ep_of(&(ep_)->fid)

static ssize_t iwarp_rdm_recv(struct fid_ep *e, void *buf, size_t len,
			      void *desc, fi_addr_t src, void *ctx)
{
	struct iovec iov = { buf, len };

	return iwarp_rdm_recv_common(RDM(e), &iov, 1, src, 0, 0, ctx,
				     RDM(e)->base.rx_op_flags, false);
}

static ssize_t iwarp_rdm_recvv(struct fid_ep *e, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t src,
			       void *ctx)
{
	return iwarp_rdm_recv_common(RDM(e), iov, count, src, 0, 0, ctx,
				     RDM(e)->base.rx_op_flags, false);
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

	return iwarp_rdm_send_common(RDM(e), NULL, &iov, 1, dest, 0, 0, ctx,
				     RDM(e)->base.tx_op_flags, false);
}

static ssize_t iwarp_rdm_sendv(struct fid_ep *e, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t dest,
			       void *ctx)
{
	return iwarp_rdm_send_common(RDM(e), NULL, iov, count, dest, 0, 0, ctx,
				     RDM(e)->base.tx_op_flags, false);
}

static ssize_t iwarp_rdm_sendmsg(struct fid_ep *e, const struct fi_msg *m,
				 uint64_t flags)
{
	return iwarp_rdm_send_common(RDM(e), NULL, m->msg_iov, m->iov_count,
				     m->addr, 0, m->data, m->context, flags,
				     false);
}

static ssize_t iwarp_rdm_inject(struct fid_ep *e, const void *buf,
				size_t len, fi_addr_t dest)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), NULL, &iov, 1, dest, 0, 0, NULL,
				     FI_INJECT | IWARP_INJECT_CALL, false);
}

static ssize_t iwarp_rdm_senddata(struct fid_ep *e, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t dest, void *ctx)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), NULL, &iov, 1, dest, 0, data, ctx,
				     RDM(e)->base.tx_op_flags | FI_REMOTE_CQ_DATA,
				     false);
}

static ssize_t iwarp_rdm_injectdata(struct fid_ep *e, const void *buf,
				    size_t len, uint64_t data, fi_addr_t dest)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), NULL, &iov, 1, dest, 0, data, NULL,
				     FI_INJECT | IWARP_INJECT_CALL |
					     FI_REMOTE_CQ_DATA, false);
}

struct fi_ops_msg iwarp_rdm_msg_ops = {
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
				     RDM(e)->base.rx_op_flags, true);
}

static ssize_t iwarp_rdm_trecvv(struct fid_ep *e, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t src,
				uint64_t tag, uint64_t ignore, void *ctx)
{
	return iwarp_rdm_recv_common(RDM(e), iov, count, src, tag, ignore,
				     ctx, RDM(e)->base.rx_op_flags, true);
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

	return iwarp_rdm_send_common(RDM(e), NULL, &iov, 1, dest, tag, 0, ctx,
				     RDM(e)->base.tx_op_flags, true);
}

static ssize_t iwarp_rdm_tsendv(struct fid_ep *e, const struct iovec *iov,
				void **desc, size_t count, fi_addr_t dest,
				uint64_t tag, void *ctx)
{
	return iwarp_rdm_send_common(RDM(e), NULL,
				     iov, count, dest, tag, 0, ctx,
				     RDM(e)->base.tx_op_flags, true);
}

static ssize_t iwarp_rdm_tsendmsg(struct fid_ep *e,
				  const struct fi_msg_tagged *m,
				  uint64_t flags)
{
	return iwarp_rdm_send_common(RDM(e), NULL, m->msg_iov, m->iov_count,
				     m->addr, m->tag, m->data, m->context,
				     flags, true);
}

static ssize_t iwarp_rdm_tinject(struct fid_ep *e, const void *buf,
				 size_t len, fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), NULL, &iov, 1, dest, tag, 0, NULL,
				     FI_INJECT | IWARP_INJECT_CALL, true);
}

static ssize_t iwarp_rdm_tsenddata(struct fid_ep *e, const void *buf,
				   size_t len, void *desc, uint64_t data,
				   fi_addr_t dest, uint64_t tag, void *ctx)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), NULL,
				     &iov, 1, dest, tag, data, ctx,
				     RDM(e)->base.tx_op_flags | FI_REMOTE_CQ_DATA,
				     true);
}

static ssize_t iwarp_rdm_tinjectdata(struct fid_ep *e, const void *buf,
				     size_t len, uint64_t data,
				     fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return iwarp_rdm_send_common(RDM(e), NULL,
				     &iov, 1, dest, tag, data, NULL,
				     FI_INJECT | IWARP_INJECT_CALL |
					     FI_REMOTE_CQ_DATA, true);
}

struct fi_ops_tagged iwarp_rdm_tagged_ops = {
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

void iwarp_rdm_free_queues(struct iwarp_rdm_ep *ep)
{
	struct iwarp_list *heads[] = { &ep->posted_tagged, &ep->posted_msg };
	struct iwarp_list *uheads[] = { &ep->unexp_tagged, &ep->unexp_msg };
	size_t i;

	for (i = 0; i < 2; i++) {
		while (!iwarp_list_empty(heads[i])) {
			struct iwarp_rdm_rx *rx = iwarp_container_of(
				heads[i]->next, struct iwarp_rdm_rx, link);

			iwarp_list_del(&rx->link);
			if (rx->coll)
				iwarp_rdm_coll_done(ep, rx->coll,
						    FI_ECANCELED);
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
