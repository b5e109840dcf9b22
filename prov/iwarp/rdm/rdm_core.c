/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The core of the RDM protocol (rdm.h): peers, an operation from its call
 * to its completion, posting its work requests through the peer's
 * transport in order, the credit windows, and control messages.
 */
#include "rdm.h"

#include <stdlib.h>
#include <string.h>

/* ---- operations */

struct iwarp_rdm_tx *iwarp_rdm_tx_new(void)
{
	struct iwarp_rdm_tx *tx = iwarp_zalloc(sizeof(*tx));

	if (tx)
		tx->owner = IWARP_RDM_OWN_TX;
	return tx;
}

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

void iwarp_rdm_tx_done(struct iwarp_rdm_ep *ep, struct iwarp_rdm_tx *tx,
		       int err)
{
	struct iwarp_ep_base *b = tx->base ? tx->base : &ep->base;
	struct iwarp_cntr *cntr;
	uint64_t tag = tx->cq_flags & FI_TAGGED ? tx->hdr.tag : 0;

	if (tx->mr)
		iw_mr_dereg(tx->mr);
	free(tx->copy);
	if (tx->coll)
		iwarp_rdm_coll_done(ep, tx->coll, err);
	else if (!tx->ctrl) {
		if (err)
			iwarp_cq_write_err(b->tx_cq, tx->context, tx->cq_flags,
					   tx->len, NULL, 0, tag, err,
					   tx->prov_errno, NULL, 0, 0);
		else if (tx->cq)
			iwarp_cq_write(b->tx_cq, tx->context, tx->cq_flags,
				       tx->len, NULL, 0, tag,
				       FI_ADDR_NOTAVAIL);
		cntr = iwarp_ep_base_cntr(b, tx->cq_flags);
		if (cntr)
			(err ? iwarp_cntr_inc_err : iwarp_cntr_inc)(cntr);
	}
	iwarp_stash_put(&ep->tx_stash, tx);
}

/* Waits for an answer from the peer (FIN, ARESP) after its Send. */
static bool iwarp_rdm_awaits(const struct iwarp_rdm_tx *tx)
{
	return (tx->kind == IWARP_RDM_K_MSG && tx->hdr.op == IWARP_RDM_RTS) ||
	       tx->kind == IWARP_RDM_K_ATOMIC;
}

/*
 * An operation ends once all its work requests are posted and completed
 * and, for RTS and AREQ, the peer answered (or something failed).
 */
void iwarp_rdm_settle(struct iwarp_rdm_ep *ep, struct iwarp_rdm_tx *tx)
{
	if (!tx->posted || tx->pending)
		return;
	if (!tx->status && iwarp_rdm_awaits(tx) && !tx->answered)
		return;
	if (tx->listed) {
		iwarp_list_del(&tx->link);
		tx->listed = false;
	}
	if (!tx->status && tx->kind == IWARP_RDM_K_ATOMIC7306 &&
	    tx->res_count)	/* host order, as the transport wrote it */
		memcpy(tx->res[0].iov_base, &tx->a7306_old,
		       sizeof(tx->a7306_old));
	iwarp_rdm_tx_done(ep, tx, tx->status);
}

void iwarp_rdm_tx_wr_done(struct iwarp_rdm_ep *ep, struct iwarp_rdm_tx *tx,
			  int err, int prov_errno)
{
	if (err && !tx->status) {
		tx->status = tx->kind == IWARP_RDM_K_MSG ? FI_EIO : err;
		tx->prov_errno = prov_errno;
	}
	tx->pending--;
	iwarp_rdm_settle(ep, tx);
}

/* ---- peers */

static struct iwarp_rdm_peer *iwarp_rdm_peer_find(struct iwarp_rdm_ep *ep,
						  const union iwarp_sockaddr *a)
{
	struct iwarp_list *e;

	for (e = ep->peers.next; e != &ep->peers; e = e->next) {
		struct iwarp_rdm_peer *p =
			iwarp_container_of(e, struct iwarp_rdm_peer, link);

		if (iwarp_addr_equal(&p->addr, a))
			return p;
	}
	return NULL;
}

/* A new connection starts with full windows both ways. */
static void iwarp_rdm_window_reset(struct iwarp_rdm_peer *peer)
{
	peer->epoch++;
	peer->window = IWARP_RDM_CREDITS;
	peer->credits = IWARP_RDM_CREDITS;
	peer->granted = IWARP_RDM_CREDITS;
	peer->owed = 0;
}

struct iwarp_rdm_peer *iwarp_rdm_peer_get(struct iwarp_rdm_ep *ep,
					  const union iwarp_sockaddr *a)
{
	struct iwarp_rdm_peer *p = iwarp_rdm_peer_find(ep, a);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->ep = ep;
	p->addr = *a;
	iwarp_addr_str(a, p->name, sizeof(p->name));
	iwarp_rdm_window_reset(p);
	iwarp_list_init(&p->pending);
	iwarp_list_init(&p->inflight);
	iwarp_list_init(&p->read_wait);
	p->xp = ep->xp;
	p->xc = p->xp->peer_open(ep->xe, p, a);
	if (!p->xc) {
		free(p);
		return NULL;
	}
	iwarp_list_add_tail(&ep->peers, &p->link);
	return p;
}

struct iwarp_rdm_peer *iwarp_rdm_dest(struct iwarp_rdm_ep *ep,
				      fi_addr_t dest)
{
	const union iwarp_sockaddr *addr;
	struct iwarp_rdm_peer *peer;
	unsigned int i;

	if (!ep->base.enabled || !ep->av)
		return NULL;
	/* fi_rx_addr: the rx context index is in the top rx_ctx_bits */
	if (ep->av->rx_ctx_bits && dest != FI_ADDR_UNSPEC)
		dest &= ~0ULL >> ep->av->rx_ctx_bits;
	i = (unsigned int)(dest % IWARP_RDM_DEST_CACHE);
	if (ep->dest_cache[i].gen == ep->av->gen + 1 &&
	    ep->dest_cache[i].dest == dest)
		return ep->dest_cache[i].peer;
	addr = iwarp_av_addr(ep->av, dest);
	peer = addr ? iwarp_rdm_peer_get(ep, addr) : NULL;
	if (peer) {
		ep->dest_cache[i].dest = dest;
		ep->dest_cache[i].gen = ep->av->gen + 1;
		ep->dest_cache[i].peer = peer;
	}
	return peer;
}

/* Every message asks: the answer is kept until the AV changes. */
fi_addr_t iwarp_rdm_from(struct iwarp_rdm_peer *peer)
{
	struct iwarp_av *av = peer->ep->av;

	if (!av)
		return FI_ADDR_NOTAVAIL;
	if (peer->from_gen != av->gen + 1) {
		peer->from = iwarp_av_reverse(av, &peer->addr.sa);
		peer->from_gen = av->gen + 1;
	}
	return peer->from;
}

/* Everything queued for a peer that cannot be reached fails; what still
 * has work requests in the transport ends when their flush completes. */
static void iwarp_rdm_peer_fail(struct iwarp_rdm_peer *peer, int err,
				int prov_errno)
{
	struct iwarp_list *heads[] = { &peer->pending, &peer->inflight };
	size_t i;

	for (i = 0; i < 2; i++)
		while (!iwarp_list_empty(heads[i])) {
			struct iwarp_rdm_tx *tx = iwarp_container_of(
				heads[i]->next, struct iwarp_rdm_tx, link);

			iwarp_list_del(&tx->link);
			tx->listed = false;
			if (!tx->status) {
				tx->status = err;
				tx->prov_errno = prov_errno;
			}
			tx->posted = true;
			iwarp_rdm_settle(peer->ep, tx);
		}
}

void iwarp_rdm_peers_close(struct iwarp_rdm_ep *ep)
{
	memset(ep->dest_cache, 0, sizeof(ep->dest_cache));
	while (!iwarp_list_empty(&ep->peers)) {
		struct iwarp_rdm_peer *peer = iwarp_container_of(
			ep->peers.next, struct iwarp_rdm_peer, link);

		iwarp_list_del(&peer->link);
		peer->xp->peer_close(peer->xc);
		peer->xc = NULL;
		peer->up = false;
		iwarp_rdm_reads_lost(peer);
		iwarp_rdm_peer_fail(peer, FI_ECANCELED, 0);
		free(peer);
	}
}

/* ---- what the transport says about a peer */

struct iwarp_rdm_xconn *iwarp_rdm_peer_xconn(struct iwarp_rdm_ep *ep,
					     const union iwarp_sockaddr *a)
{
	struct iwarp_rdm_peer *peer = iwarp_rdm_peer_get(ep, a);

	return peer ? peer->xc : NULL;
}

bool iwarp_rdm_queued(struct iwarp_rdm_peer *peer)
{
	return !iwarp_list_empty(&peer->pending);
}

void iwarp_rdm_connected(struct iwarp_rdm_peer *peer)
{
	unsigned int w = peer->xp->window(peer->xc);

	/* both sides widen at their connected, before either sends */
	if (w > peer->window) {
		peer->credits += w - peer->window;
		peer->granted += w - peer->window;
		peer->window = (uint16_t)w;
	}
	peer->up = true;
	iwarp_rdm_flush(peer);
}

void iwarp_rdm_lost(struct iwarp_rdm_peer *peer, int err)
{
	peer->up = false;
	iwarp_rdm_reads_lost(peer);
	iwarp_rdm_peer_fail(peer, err, 0);
	iwarp_rdm_window_reset(peer);
}

void iwarp_rdm_unreachable(struct iwarp_rdm_peer *peer, int err,
			   int prov_errno)
{
	peer->up = false;
	iwarp_rdm_peer_fail(peer, err, prov_errno);
}

void iwarp_rdm_poll_add(struct iwarp_rdm_ep *ep, struct iwarp_pollable *p)
{
	iwarp_pollable_add(ep->base.fab, p);
	if (ep->sep)	/* no CQ of its own: its contexts' are polled */
		return;
	iwarp_wait_bind(&ep->base.tx_cq->wait, p);
	if (ep->base.rx_cq != ep->base.tx_cq)
		iwarp_wait_bind(&ep->base.rx_cq->wait, p);
}

void iwarp_rdm_poll_del(struct iwarp_rdm_ep *ep, struct iwarp_pollable *p)
{
	if (!ep->sep) {
		iwarp_wait_unbind(&ep->base.tx_cq->wait, p);
		if (ep->base.rx_cq != ep->base.tx_cq)
			iwarp_wait_unbind(&ep->base.rx_cq->wait, p);
	}
	iwarp_pollable_del(p);
}

/* ---- posting through the transport */

/*
 * One count for the work request, one held across the call: a post may
 * pump the connection, and one that fails inside it flushes this request
 * and fails the peer's queued operations (iwarp_rdm_lost), which would
 * end tx under our feet. iwarp_rdm_post settles it after we return.
 */
static int iwarp_rdm_wr_begin(struct iwarp_rdm_peer *peer,
			      struct iwarp_rdm_tx *tx)
{
	if (!peer->up)
		return -ENOTCONN;	/* lost while posting */
	tx->pending += 2;
	return 0;
}

static int iwarp_rdm_wr_end(struct iwarp_rdm_tx *tx, int ret)
{
	tx->pending -= ret ? 2 : 1;
	if (!ret)
		tx->step++;
	return ret;
}

/* A header that gave back `given` credits went out. */
static void iwarp_rdm_hdr_sent(struct iwarp_rdm_peer *peer, uint16_t given,
			       bool counted)
{
	peer->owed = 0;
	peer->granted += given;
	if (counted)
		peer->credits--;
}

bool iwarp_rdm_eager_now(struct iwarp_rdm_peer *peer,
			 struct iwarp_rdm_hdr *h, const struct iovec *iov,
			 size_t count)
{
	uint8_t hbuf[IWARP_RDM_HDR_LEN];

	if (!peer->up || !peer->credits || !iwarp_list_empty(&peer->pending))
		return false;
	h->op = IWARP_RDM_EAGER;
	h->credits = peer->owed;
	iwarp_rdm_hdr_put(hbuf, h);
	if (!peer->xp->post_inline(peer->xc, hbuf, sizeof(hbuf), iov, count))
		return false;
	iwarp_rdm_hdr_sent(peer, h->credits, true);
	return true;
}

/* The RDM header, and the payload of EAGER, AREQ and ARESP. */
static int iwarp_rdm_post_hdr(struct iwarp_rdm_peer *peer,
			      struct iwarp_rdm_tx *tx, uint8_t op)
{
	bool counted = iwarp_rdm_counted(op);
	bool payload = op == IWARP_RDM_EAGER || op == IWARP_RDM_AREQ ||
		       op == IWARP_RDM_ARESP;
	uint16_t given;
	int ret;

	if (counted && !peer->credits)
		return -EAGAIN;
	given = peer->owed;
	tx->hdr.op = op;
	tx->hdr.credits = given;
	iwarp_rdm_hdr_put(tx->hbuf, &tx->hdr);
	ret = iwarp_rdm_wr_begin(peer, tx);
	if (ret)
		return ret;
	ret = iwarp_rdm_wr_end(tx, peer->xp->post_msg(peer->xc, tx, tx->hbuf,
						      IWARP_RDM_HDR_LEN,
						      tx->iov,
						      payload ? tx->count : 0));
	if (ret)
		return ret;
	if (!peer->up)
		return 0;	/* lost inside the post: windows were reset */
	iwarp_rdm_hdr_sent(peer, given, counted);
	return 0;
}

/* RDMA Write or Read of the user's buffers, or the zero-length Read that
 * fences a Write (fence_only). */
static int iwarp_rdm_post_rdma(struct iwarp_rdm_peer *peer,
			       struct iwarp_rdm_tx *tx, enum iwarp_rdm_xop op,
			       bool fence_only)
{
	unsigned int flags = 0;
	int ret;

	if (!tx->step && (tx->op_flags & FI_FENCE))
		flags |= IWARP_RDM_X_FENCE;
	if (op == IWARP_RDM_X_WRITE && (tx->wdata || tx->fence))
		flags |= IWARP_RDM_X_MORE;
	ret = iwarp_rdm_wr_begin(peer, tx);
	if (ret)
		return ret;
	return iwarp_rdm_wr_end(tx, peer->xp->post_rdma(peer->xc, tx, op,
							tx->iov,
							fence_only ? 0 :
								tx->count,
							tx->rkey, tx->raddr,
							flags));
}

/* One RFC 7306 Atomic Request; the old value lands in a7306_old. */
static int iwarp_rdm_post_7306(struct iwarp_rdm_peer *peer,
			       struct iwarp_rdm_tx *tx)
{
	struct iwarp_rdm_xatomic a = {
		.cswap = tx->a7306_op == IWARP_RDM_7306_CSWAP,
		.add_swap = tx->a7306[0],
		.add_swap_mask = tx->a7306[1],
		.compare = tx->a7306[2],
		.compare_mask = tx->a7306[3],
		.rkey = tx->rkey,
		.raddr = tx->raddr,
		.old = &tx->a7306_old,
	};
	int ret = iwarp_rdm_wr_begin(peer, tx);

	if (ret)
		return ret;
	return iwarp_rdm_wr_end(tx, peer->xp->post_atomic(peer->xc, tx, &a));
}

/* A Write, then WDATA, then the fence Read; 1 when all are posted. */
static int iwarp_rdm_post_write(struct iwarp_rdm_peer *peer,
				struct iwarp_rdm_tx *tx)
{
	uint8_t n = tx->step;

	if (n == 0)
		return iwarp_rdm_post_rdma(peer, tx, IWARP_RDM_X_WRITE, false);
	if (n == 1 && tx->wdata)
		return iwarp_rdm_post_hdr(peer, tx, IWARP_RDM_WDATA);
	if (n == 1 + tx->wdata && tx->fence)
		return iwarp_rdm_post_rdma(peer, tx, IWARP_RDM_X_READ, true);
	return 1;
}

/* The one Send of a message or AREQ; answered by FIN/ARESP, maybe
 * before our completion, so it waits on inflight from now on. */
static int iwarp_rdm_post_send(struct iwarp_rdm_peer *peer,
			       struct iwarp_rdm_tx *tx)
{
	int ret;

	if (iwarp_rdm_awaits(tx)) {
		iwarp_list_add_tail(&peer->inflight, &tx->link);
		tx->listed = true;
	}
	ret = iwarp_rdm_post_hdr(peer, tx, tx->hdr.op);
	if (ret && tx->listed) {
		iwarp_list_del(&tx->link);
		tx->listed = false;
	}
	return ret;
}

/* Posts tx's next work request: 0 posted, 1 none left, else an error. */
static int iwarp_rdm_post_next(struct iwarp_rdm_peer *peer,
			       struct iwarp_rdm_tx *tx)
{
	if (tx->kind == IWARP_RDM_K_WRITE)
		return iwarp_rdm_post_write(peer, tx);
	if (tx->step)
		return 1;
	if (tx->kind == IWARP_RDM_K_READ)
		return iwarp_rdm_post_rdma(peer, tx, IWARP_RDM_X_READ, false);
	if (tx->kind == IWARP_RDM_K_ATOMIC && tx->a7306_op &&
	    peer->xp->atomics(peer->xc))
		tx->kind = IWARP_RDM_K_ATOMIC7306;
	if (tx->kind == IWARP_RDM_K_ATOMIC7306)
		return iwarp_rdm_post_7306(peer, tx);
	return iwarp_rdm_post_send(peer, tx);
}

/*
 * Posts the work requests of an operation not yet posted, in order:
 * MSG and AREQ one Send; Write the Write, then WDATA, then the fence
 * Read; Read one Read. 0 when all are posted (tx may be gone), -EAGAIN
 * to come back later, other errors when nothing was posted.
 */
static int iwarp_rdm_post(struct iwarp_rdm_peer *peer,
			  struct iwarp_rdm_tx *tx)
{
	int ret;

	while (!(ret = iwarp_rdm_post_next(peer, tx)))
		;
	if (ret < 0 && (ret == -EAGAIN || !tx->step))
		return ret;
	if (ret < 0)	/* half posted: the rest cannot follow */
		tx->status = FI_EIO;
	tx->posted = true;
	iwarp_rdm_settle(peer->ep, tx);
	return 0;
}

/* The first FIN or CREDIT queued for peer, or NULL. */
static struct iwarp_rdm_tx *iwarp_rdm_ctrl_queued(struct iwarp_rdm_peer *peer)
{
	struct iwarp_list *e;

	for (e = peer->pending.next; e != &peer->pending; e = e->next) {
		struct iwarp_rdm_tx *tx =
			iwarp_container_of(e, struct iwarp_rdm_tx, link);

		if (tx->ctrl)
			return tx;
	}
	return NULL;
}

/* Posts a queued tx; one that cannot go yet goes back at the head, the
 * order of messages kept. */
static bool iwarp_rdm_post_queued(struct iwarp_rdm_peer *peer,
				  struct iwarp_rdm_tx *tx)
{
	iwarp_list_del(&tx->link);
	tx->listed = false;
	if (!iwarp_rdm_post(peer, tx))
		return true;
	iwarp_list_add_head(&peer->pending, &tx->link);
	tx->listed = true;
	return false;
}

void iwarp_rdm_flush(struct iwarp_rdm_peer *peer)
{
	struct iwarp_rdm_xconn *xc = peer->xc;
	struct iwarp_rdm_tx *tx;
	bool batch;

	if (!peer->up || iwarp_list_empty(&peer->pending))
		return;
	/* more than one to post: they leave together */
	batch = peer->pending.next->next != &peer->pending && peer->xp->batch;
	if (batch)
		peer->xp->batch(xc, true);
	while (!iwarp_list_empty(&peer->pending) &&
	       iwarp_rdm_post_queued(peer, iwarp_container_of(
			peer->pending.next, struct iwarp_rdm_tx, link)))
		;
	/*
	 * Messages wait for credits; a FIN or CREDIT takes none and goes
	 * ahead of them. Behind them it would deadlock two peers that both
	 * have more messages out than credits: each holds the credits the
	 * other waits for (osu_bibw -W 256).
	 */
	while (peer->up && !peer->credits &&
	       (tx = iwarp_rdm_ctrl_queued(peer)) &&
	       iwarp_rdm_post_queued(peer, tx))
		;
	if (batch && peer->xc == xc)
		peer->xp->batch(xc, false);
}

void iwarp_rdm_queue(struct iwarp_rdm_peer *peer, struct iwarp_rdm_tx *tx)
{
	tx->peer = peer;
	/* nothing ahead of it: post at once, queue only what must wait */
	if (peer->up && iwarp_list_empty(&peer->pending) &&
	    !iwarp_rdm_post(peer, tx))
		return;
	iwarp_list_add_tail(&peer->pending, &tx->link);
	tx->listed = true;
	if (peer->up)
		iwarp_rdm_flush(peer);
	else if (!peer->ep->closing)
		peer->xp->connect(peer->xc);
}

ssize_t iwarp_rdm_submit(struct iwarp_rdm_ep *ep, struct iwarp_rdm_tx *tx,
			 fi_addr_t dest)
{
	struct iwarp_rdm_peer *peer;

	iwarp_lock(ep->base.fab);
	peer = iwarp_rdm_dest(ep, dest);
	if (!peer) {
		bool enabled = ep->base.enabled;

		iwarp_unlock(ep->base.fab);
		free(tx->copy);
		free(tx);
		return enabled ? -FI_EINVAL : -FI_EOPBADSTATE;
	}
	if (tx->wdata || tx->kind == IWARP_RDM_K_ATOMIC)
		tx->hdr.msg_id = ++ep->next_msg_id;
	iwarp_rdm_queue(peer, tx);
	iwarp_unlock(ep->base.fab);
	return 0;
}

void iwarp_rdm_send_ctrl(struct iwarp_rdm_peer *peer, uint8_t op,
			 uint32_t msg_id, uint8_t flags)
{
	struct iwarp_rdm_tx *tx;

	if (peer->ep->closing)
		return;
	tx = iwarp_rdm_tx_new();
	if (!tx)
		return;
	tx->ctrl = true;
	tx->hdr.op = op;
	tx->hdr.flags = flags;
	tx->hdr.msg_id = msg_id;
	iwarp_rdm_queue(peer, tx);
}

/* Gives back a credit for a consumed EAGER/RTS, explicitly when many
 * are owed and no traffic carries them. */
void iwarp_rdm_owe(struct iwarp_rdm_peer *peer)
{
	if (++peer->owed >= peer->window / 2)
		iwarp_rdm_send_ctrl(peer, IWARP_RDM_CREDIT, 0, 0);
}
