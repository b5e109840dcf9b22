/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_EP_RDM connections: a listener per endpoint, one engine QP per peer
 * made on first send, collisions resolved by iwarp_rdm_pd_cmp(), bounded
 * retries, and the engine callbacks that turn iWARP Sends, Reads and
 * their completions into RDM protocol steps (iwarp_rdm.h).
 */
#include "iwarp_rdm.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iwarp/engine.h"

void iwarp_rdm_rx_done(struct iwarp_rdm_ep *ep, struct iwarp_rdm_rx *rx,
		       size_t len, int err);
struct iwarp_rdm_rx *iwarp_rdm_match_posted(struct iwarp_rdm_ep *ep,
					    const struct iwarp_rdm_hdr *h,
					    fi_addr_t from);
void iwarp_rdm_unexp_arrived(struct iwarp_rdm_ep *ep,
			     struct iwarp_rdm_unexp *ux);
void iwarp_rdm_ux_free(struct iwarp_rdm_ep *ep, struct iwarp_rdm_unexp *ux);
void iwarp_rdm_start_read(struct iwarp_rdm_ep *ep, struct iwarp_rdm_rx *rx);
void iwarp_rdm_peer_kick(struct iwarp_rdm_peer *peer);

static const struct iw_qp_ops iwarp_rdm_qp_ops;

static unsigned iwarp_rdm_port(const struct iwarp_rdm_peer *peer)
{
	return ntohs(peer->addr.sa.sa_family == AF_INET6 ?
		     peer->addr.sin6.sin6_port : peer->addr.sin.sin_port);
}

/* ---- peers and their QPs */

static void iwarp_rdm_bury(struct iwarp_rdm_ep *ep, struct iw_qp *qp)
{
	if (!qp)
		return;
	if (ep->ndead == ep->deadcap) {
		size_t cap = ep->deadcap ? ep->deadcap * 2 : 8;
		struct iw_qp **d = realloc(ep->dead, cap * sizeof(*d));

		if (!d)
			return;	/* leak the QP rather than free it in use */
		ep->dead = d;
		ep->deadcap = cap;
	}
	ep->dead[ep->ndead++] = qp;
}

/* Destroys buried QPs; never from inside an engine callback. */
static void iwarp_rdm_reap(struct iwarp_rdm_ep *ep)
{
	while (ep->ndead)
		iw_qp_destroy(ep->dead[--ep->ndead]);
}

static void iwarp_rdm_qp_progress(struct iwarp_pollable *p)
{
	struct iwarp_rdm_peer *peer =
		iwarp_container_of(p, struct iwarp_rdm_peer, poll);

	if (peer->qp)
		iw_qp_progress(peer->qp);
	if (!peer->up && !peer->qp && !iwarp_list_empty(&peer->pending) &&
	    iw_now_ms() >= peer->retry_at)
		iwarp_rdm_peer_kick(peer);
	iwarp_rdm_reap(peer->ep);
}

static void iwarp_rdm_qp_poll_info(struct iwarp_pollable *p, int *fd,
				   short *events, uint64_t *deadline)
{
	struct iwarp_rdm_peer *peer =
		iwarp_container_of(p, struct iwarp_rdm_peer, poll);

	*fd = peer->qp ? iw_qp_fd(peer->qp) : -1;
	*events = peer->qp ? iw_qp_poll_events(peer->qp) : 0;
	*deadline = peer->qp ? iw_qp_deadline(peer->qp) :
		    !iwarp_list_empty(&peer->pending) ? peer->retry_at : 0;
}

static void iwarp_rdm_rxqp_progress(struct iwarp_pollable *p)
{
	struct iwarp_rdm_peer *peer =
		iwarp_container_of(p, struct iwarp_rdm_peer, rx_poll);

	if (peer->rx_qp)
		iw_qp_progress(peer->rx_qp);
}

static void iwarp_rdm_rxqp_poll_info(struct iwarp_pollable *p, int *fd,
				     short *events, uint64_t *deadline)
{
	struct iwarp_rdm_peer *peer =
		iwarp_container_of(p, struct iwarp_rdm_peer, rx_poll);

	*fd = peer->rx_qp ? iw_qp_fd(peer->rx_qp) : -1;
	*events = peer->rx_qp ? iw_qp_poll_events(peer->rx_qp) : 0;
	*deadline = peer->rx_qp ? iw_qp_deadline(peer->rx_qp) : 0;
}

static void iwarp_rdm_bind_poll(struct iwarp_rdm_ep *ep,
				struct iwarp_pollable *p)
{
	iwarp_pollable_add(ep->fab, p);
	iwarp_wait_bind(&ep->tx_cq->wait, p);
	if (ep->rx_cq != ep->tx_cq)
		iwarp_wait_bind(&ep->rx_cq->wait, p);
}

static void iwarp_rdm_unbind_poll(struct iwarp_rdm_ep *ep,
				  struct iwarp_pollable *p)
{
	iwarp_wait_unbind(&ep->tx_cq->wait, p);
	if (ep->rx_cq != ep->tx_cq)
		iwarp_wait_unbind(&ep->rx_cq->wait, p);
	iwarp_pollable_del(p);
}

static bool iwarp_sa_equal(const union iwarp_sockaddr *a,
			   const union iwarp_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET6)
		return a->sin6.sin6_port == b->sin6.sin6_port &&
		       !memcmp(&a->sin6.sin6_addr, &b->sin6.sin6_addr, 16);
	return a->sin.sin_port == b->sin.sin_port &&
	       a->sin.sin_addr.s_addr == b->sin.sin_addr.s_addr;
}

static struct iwarp_rdm_peer *iwarp_rdm_peer_find(struct iwarp_rdm_ep *ep,
						  const union iwarp_sockaddr *a)
{
	struct iwarp_list *e;

	for (e = ep->peers.next; e != &ep->peers; e = e->next) {
		struct iwarp_rdm_peer *p =
			iwarp_container_of(e, struct iwarp_rdm_peer, link);

		if (iwarp_sa_equal(&p->addr, a))
			return p;
	}
	return NULL;
}

/* A new connection starts with full windows both ways. */
static void iwarp_rdm_window_reset(struct iwarp_rdm_peer *peer)
{
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
	iwarp_rdm_window_reset(p);
	iwarp_list_init(&p->pending);
	iwarp_list_init(&p->inflight);
	iwarp_list_init(&p->poll.link);
	iwarp_list_init(&p->rx_poll.link);
	p->poll.progress = iwarp_rdm_qp_progress;
	p->poll.poll_info = iwarp_rdm_qp_poll_info;
	p->rx_poll.progress = iwarp_rdm_rxqp_progress;
	p->rx_poll.poll_info = iwarp_rdm_rxqp_poll_info;
	iwarp_list_add_tail(&ep->peers, &p->link);
	iwarp_rdm_bind_poll(ep, &p->poll);
	return p;
}

/* RFC 7306 on a connection when both sides offer it. */
static void iwarp_rdm_atomics_on(struct iwarp_rdm_peer *peer, struct iw_qp *qp)
{
	bool on = iwarp_params.rfc7306 && peer->rfc7306;

	peer->rfc7306 = on;
	if (on && !iw_qp_set_atomics(qp, true))
		FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
			"RDM connection carries RFC 7306 atomics\n");
}

static struct iw_qp *iwarp_rdm_qp_new(struct iwarp_rdm_peer *peer)
{
	/* The peer of an RDM connection is always this provider (its
	 * private data says so), which takes FPDUs of any legal length: no
	 * need to cut them to the TCP segment size (1442 octets on
	 * Ethernet) as a hardware RNIC would need. */
	struct iw_qp_attr attr = {
		.sq_size = 1024,
		.mulpdu = IWARP_RDM_MULPDU,
		.peek_len = IWARP_RDM_HDR_LEN,
		.ops = &iwarp_rdm_qp_ops,
		.arg = peer,
	};
	struct iw_qp *qp;

	return iw_qp_create(peer->ep->dom->pd, &attr, &qp) ? NULL : qp;
}

static void iwarp_rdm_pdata(struct iwarp_rdm_ep *ep, uint8_t *buf,
			    uint8_t flags)
{
	struct iwarp_rdm_pdata d = {
		.version = IWARP_RDM_VERSION | flags |
			   (iwarp_params.rfc7306 ? IWARP_RDM_RFC7306 : 0),
		.addr = ep->name,
		.instance = ep->instance,
	};

	iwarp_rdm_pd_put(buf, &d);
}

static void iwarp_rdm_conn_param(struct iw_conn_param *p, const uint8_t *pd)
{
	memset(p, 0, sizeof(*p));
	p->ird = IWARP_RDMA_DEPTH;
	p->ord = IWARP_RDMA_DEPTH;
	p->crc = iwarp_params.crc;
	p->pdata = pd;
	p->pdata_len = IWARP_RDM_PD_LEN;
}

/* Starts (or restarts) the connection to a peer that has work queued. */
void iwarp_rdm_peer_kick(struct iwarp_rdm_peer *peer)
{
	uint8_t pd[IWARP_RDM_PD_LEN];
	union iwarp_sockaddr src;
	struct iw_conn_param p;

	if (peer->qp || peer->up || peer->ep->closing)
		return;
	peer->qp = iwarp_rdm_qp_new(peer);
	if (!peer->qp)
		return;
	iwarp_rdm_pdata(peer->ep, pd, 0);
	iwarp_rdm_conn_param(&p, pd);
	/* from the address our connection data claims, so the peer can
	 * check the claim against the TCP source (iwarp_rdm_claim_ok) */
	src = peer->ep->name;
	if (src.sa.sa_family == AF_INET6)
		src.sin6.sin6_port = 0;
	else
		src.sin.sin_port = 0;
	p.src = &src.sa;
	p.src_len = iwarp_sa_len(&src.sa);
	peer->tries++;
	peer->qp_initiated = true;
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL, "RDM peer :%u: connecting %p "
		"(try %d)\n", iwarp_rdm_port(peer), (void *)peer->qp,
		peer->tries);
	if (iw_qp_connect(peer->qp, &peer->addr.sa,
			  iwarp_sa_len(&peer->addr.sa), &p)) {
		iwarp_rdm_bury(peer->ep, peer->qp);
		peer->qp = NULL;
		peer->retry_at = iw_now_ms() + 100;
	}
}

/* Everything queued for a peer that cannot be reached fails; what still
 * has work requests in the engine ends when their flush completes. */
static void iwarp_rdm_peer_fail(struct iwarp_rdm_peer *peer, int err)
{
	struct iwarp_list *heads[] = { &peer->pending, &peer->inflight };
	size_t i;

	for (i = 0; i < 2; i++)
		while (!iwarp_list_empty(heads[i])) {
			struct iwarp_rdm_tx *tx = iwarp_container_of(
				heads[i]->next, struct iwarp_rdm_tx, link);

			iwarp_list_del(&tx->link);
			tx->listed = false;
			if (!tx->status)
				tx->status = err;
			tx->posted = true;
			iwarp_rdm_settle(peer->ep, tx);
		}
}

/* ---- posting on the wire */

static bool iwarp_rdm_counted(uint8_t op)
{
	return op == IWARP_RDM_EAGER || op == IWARP_RDM_RTS ||
	       op == IWARP_RDM_WDATA || op == IWARP_RDM_AREQ;
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
	    tx->res_count)	/* host order, as the engine wrote it */
		memcpy(tx->res[0].iov_base, &tx->a7306_old,
		       sizeof(tx->a7306_old));
	iwarp_rdm_tx_done(ep, tx, tx->status);
}

static int iwarp_rdm_post_wr(struct iwarp_rdm_peer *peer,
			     struct iwarp_rdm_tx *tx, struct iw_send_wr *wr)
{
	int ret;

	if (!peer->qp || !peer->up)
		return -ENOTCONN;	/* lost while posting */
	/*
	 * One count for the work request, one held across the call: the
	 * post pumps the socket, and a connection that fails inside it
	 * flushes this request and fails the peer's queued operations
	 * (iwarp_rdm_peer_fail), which would end tx under our feet. The
	 * caller settles it after we return (iwarp_rdm_post).
	 */
	tx->pending += 2;
	ret = iw_qp_post_send(peer->qp, wr);
	tx->pending -= ret ? 2 : 1;
	if (!ret)
		tx->step++;
	return ret;
}

/* The RDM header, and the payload of EAGER, AREQ and ARESP. */
static int iwarp_rdm_post_hdr(struct iwarp_rdm_peer *peer,
			      struct iwarp_rdm_tx *tx, uint8_t op)
{
	struct iw_sge sge[IW_MAX_SGE];
	struct iw_send_wr wr = {
		.ctx = tx,
		.op = IW_WR_SEND,
		.flags = IW_WR_SIGNALED,
		.sgl = sge,
	};
	bool counted = iwarp_rdm_counted(op);
	struct iw_qp *qp;
	uint16_t given;
	size_t i;
	int ret;

	if (counted && !peer->credits)
		return -EAGAIN;
	given = peer->owed;
	tx->hdr.op = op;
	tx->hdr.credits = given;
	iwarp_rdm_hdr_put(tx->hbuf, &tx->hdr);
	sge[0].addr = tx->hbuf;
	sge[0].len = IWARP_RDM_HDR_LEN;
	wr.num_sge = 1;
	if (op == IWARP_RDM_EAGER || op == IWARP_RDM_AREQ ||
	    op == IWARP_RDM_ARESP)
		for (i = 0; i < tx->count; i++) {
			sge[wr.num_sge].addr = tx->iov[i].iov_base;
			sge[wr.num_sge++].len = (uint32_t)tx->iov[i].iov_len;
		}
	qp = peer->qp;
	ret = iwarp_rdm_post_wr(peer, tx, &wr);
	if (ret)
		return ret;
	if (peer->qp != qp)
		return 0;	/* lost inside the post: windows were reset */
	peer->owed = 0;
	peer->granted += given;
	if (counted)
		peer->credits--;
	return 0;
}

/* RDMA Write or Read of the user's buffers; a zero-length Read when
 * tx->count is 0 and op is a Read (the delivery fence). */
static int iwarp_rdm_post_rdma(struct iwarp_rdm_peer *peer,
			       struct iwarp_rdm_tx *tx, enum iw_wr_opcode op,
			       bool fence_only)
{
	struct iw_sge sge[IW_MAX_SGE];
	struct iw_send_wr wr = {
		.ctx = tx,
		.op = op,
		.flags = IW_WR_SIGNALED,
		.sgl = sge,
		.rstag = tx->rkey,
		.rto = tx->raddr,
	};
	size_t i;

	if (!fence_only)
		for (i = 0; i < tx->count; i++) {
			if (!tx->iov[i].iov_len)
				continue;
			sge[wr.num_sge].addr = tx->iov[i].iov_base;
			sge[wr.num_sge++].len = (uint32_t)tx->iov[i].iov_len;
		}
	if (!tx->step && (tx->op_flags & FI_FENCE))
		wr.flags |= IW_WR_FENCE;
	return iwarp_rdm_post_wr(peer, tx, &wr);
}

/* One RFC 7306 Atomic Request; the old value lands in a7306_old. */
static int iwarp_rdm_post_7306(struct iwarp_rdm_peer *peer,
			       struct iwarp_rdm_tx *tx)
{
	struct iw_sge sge = { &tx->a7306_old, sizeof(tx->a7306_old) };
	struct iw_send_wr wr = {
		.ctx = tx,
		.op = tx->a7306_op == IWARP_RDM_7306_FADD ? IW_WR_ATOMIC_FADD :
							    IW_WR_ATOMIC_CSWAP,
		.flags = IW_WR_SIGNALED,
		.sgl = &sge,
		.num_sge = 1,
		.rstag = tx->rkey,
		.rto = tx->raddr,
		.add_swap = tx->a7306[0],
		.add_swap_mask = tx->a7306[1],
		.compare = tx->a7306[2],
		.compare_mask = tx->a7306[3],
	};

	return iwarp_rdm_post_wr(peer, tx, &wr);
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
	struct iwarp_rdm_ep *ep = peer->ep;
	int ret = 0;

	for (;;) {
		uint8_t n = tx->step;

		switch (tx->kind) {
		case IWARP_RDM_K_WRITE:
			if (n == 0)
				ret = iwarp_rdm_post_rdma(peer, tx, IW_WR_WRITE,
							  false);
			else if (n == 1 && tx->wdata)
				ret = iwarp_rdm_post_hdr(peer, tx,
							 IWARP_RDM_WDATA);
			else if (n == 1 + tx->wdata && tx->fence)
				ret = iwarp_rdm_post_rdma(peer, tx, IW_WR_READ,
							  true);
			else
				goto posted;
			break;
		case IWARP_RDM_K_READ:
			if (n)
				goto posted;
			ret = iwarp_rdm_post_rdma(peer, tx, IW_WR_READ, false);
			break;
		case IWARP_RDM_K_ATOMIC7306:
			if (n)
				goto posted;
			ret = iwarp_rdm_post_7306(peer, tx);
			break;
		default:
			if (n)
				goto posted;
			if (tx->kind == IWARP_RDM_K_ATOMIC && tx->a7306_op &&
			    peer->rfc7306) {
				tx->kind = IWARP_RDM_K_ATOMIC7306;
				continue;
			}
			/* answered by FIN/ARESP, maybe before our completion */
			if (iwarp_rdm_awaits(tx)) {
				iwarp_list_add_tail(&peer->inflight, &tx->link);
				tx->listed = true;
			}
			ret = iwarp_rdm_post_hdr(peer, tx, tx->hdr.op);
			if (ret && tx->listed) {
				iwarp_list_del(&tx->link);
				tx->listed = false;
			}
			break;
		}
		if (ret == -EAGAIN || (ret && !tx->step))
			return ret;
		if (ret) {	/* half posted: the rest cannot follow */
			tx->status = FI_EIO;
			break;
		}
	}
posted:
	tx->posted = true;
	iwarp_rdm_settle(ep, tx);
	return 0;
}

/* Posts what is queued for a peer, in order, as far as it can. */
static void iwarp_rdm_flush(struct iwarp_rdm_peer *peer)
{
	if (!peer->up || !peer->qp)
		return;
	while (!iwarp_list_empty(&peer->pending)) {
		struct iwarp_rdm_tx *tx = iwarp_container_of(
			peer->pending.next, struct iwarp_rdm_tx, link);

		iwarp_list_del(&tx->link);
		tx->listed = false;
		if (iwarp_rdm_post(peer, tx)) {
			/* back at the head: order is kept */
			iwarp_list_add_head(&peer->pending, &tx->link);
			tx->listed = true;
			break;
		}
	}
}

void iwarp_rdm_queue(struct iwarp_rdm_peer *peer, struct iwarp_rdm_tx *tx)
{
	tx->peer = peer;
	/* nothing ahead of it: post at once, queue only what must wait */
	if (peer->up && peer->qp && iwarp_list_empty(&peer->pending) &&
	    !iwarp_rdm_post(peer, tx))
		return;
	iwarp_list_add_tail(&peer->pending, &tx->link);
	tx->listed = true;
	if (peer->up)
		iwarp_rdm_flush(peer);
	else
		iwarp_rdm_peer_kick(peer);
}

/* A control message (FIN, CREDIT): never blocked by credits. */
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
	if (++peer->owed >= IWARP_RDM_CREDITS / 2)
		iwarp_rdm_send_ctrl(peer, IWARP_RDM_CREDIT, 0, 0);
}

/* ---- engine callbacks */

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

/* Placement of an incoming Send: the header decides where it goes. */
static int iwarp_rdm_place(void *arg, struct iw_qp *qp,
			   const struct iw_place *p, struct iw_sge *dst,
			   void **ctx)
{
	struct iwarp_rdm_peer *peer = arg;
	struct iwarp_rdm_ep *ep = peer->ep;
	struct iwarp_rdm_in *in;
	size_t i, n = 0, left;

	in = iwarp_stash_get(&ep->in_stash, sizeof(*in));
	if (!in || iwarp_rdm_hdr_get(p->peek, p->peek_len, &in->hdr)) {
		free(in);
		return -1;	/* not our protocol: terminate */
	}
	*ctx = in;
	if (iwarp_rdm_counted(in->hdr.op)) {
		if (!peer->granted) {	/* credits are what bound our memory */
			FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
				"peer sent beyond its credits\n");
			free(in);
			*ctx = NULL;
			return -1;
		}
		peer->granted--;
	}
	if (in->hdr.op == IWARP_RDM_AREQ || in->hdr.op == IWARP_RDM_ARESP) {
		if (in->hdr.len > iwarp_rdm_atomic_payload_max()) {
			free(in);
			*ctx = NULL;
			return -1;
		}
		if (!in->hdr.len)
			return 0;
		in->abuf = malloc(in->hdr.len);
		if (!in->abuf) {
			free(in);
			*ctx = NULL;
			return -1;
		}
		dst[0].addr = in->abuf;
		dst[0].len = in->hdr.len;
		return 1;
	}
	if (in->hdr.op != IWARP_RDM_EAGER)
		return 0;
	if (in->hdr.len > IWARP_RDM_EAGER_MAX) {
		free(in);
		*ctx = NULL;
		return -1;
	}
	in->rx = iwarp_rdm_match_posted(ep, &in->hdr, iwarp_rdm_from(peer));
	if (!in->rx) {
		in->ux = iwarp_zalloc(sizeof(*in->ux));
		if (in->ux)
			in->ux->buf = malloc(in->hdr.len ? in->hdr.len : 1);
		if (!in->ux || !in->ux->buf) {
			free(in->ux);
			free(in);
			*ctx = NULL;
			return -1;
		}
		in->ux->hdr = in->hdr;
		in->ux->cost = sizeof(*in->ux) + in->hdr.len;
		ep->unexp_bytes += in->ux->cost;
		in->ux->peer = peer;
		in->ux->from = iwarp_rdm_from(peer);
		iwarp_list_add_tail(in->hdr.flags & IWARP_RDM_F_TAGGED ?
					    &ep->unexp_tagged : &ep->unexp_msg,
				    &in->ux->link);
		dst[0].addr = in->ux->buf;
		dst[0].len = in->hdr.len;
		return in->hdr.len ? 1 : 0;
	}
	left = in->hdr.len;
	for (i = 0; i < in->rx->count && left && n < IW_MAX_SGE - 1; i++) {
		size_t take = in->rx->iov[i].iov_len < left ?
				      in->rx->iov[i].iov_len : left;

		if (!take)
			continue;
		dst[n].addr = in->rx->iov[i].iov_base;
		dst[n++].len = (uint32_t)take;
		left -= take;
	}
	if (left) {	/* truncated: the rest is discarded */
		dst[n].addr = NULL;
		dst[n++].len = (uint32_t)left;
	}
	return (int)n;
}

static void iwarp_rdm_fin(struct iwarp_rdm_peer *peer,
			  const struct iwarp_rdm_hdr *h)
{
	struct iwarp_list *e;

	for (e = peer->inflight.next; e != &peer->inflight; e = e->next) {
		struct iwarp_rdm_tx *tx =
			iwarp_container_of(e, struct iwarp_rdm_tx, link);

		if (tx->hdr.op != IWARP_RDM_RTS || tx->hdr.msg_id != h->msg_id)
			continue;
		iwarp_list_del(&tx->link);
		tx->listed = false;
		tx->answered = true;
		if ((h->flags & IWARP_RDM_F_ERROR) && !tx->status)
			tx->status = FI_EIO;
		iwarp_rdm_settle(peer->ep, tx);
		return;
	}
}

/*
 * A message stored as unexpected gives its credit back at once, so MPI may
 * receive in any order; past rdm_unexp_max stored octets the credit waits
 * until the message is taken, which bounds what peers can make us hold.
 */
static void iwarp_rdm_stored(struct iwarp_rdm_ep *ep,
			     struct iwarp_rdm_unexp *ux, bool queued)
{
	if (queued && ep->unexp_bytes > iwarp_params.rdm_unexp_max)
		ux->withheld = true;
	else
		iwarp_rdm_owe(ux->peer);
}

static void iwarp_rdm_recv_done(struct iwarp_rdm_peer *peer,
				struct iwarp_rdm_in *in, const struct iw_wc *wc)
{
	struct iwarp_rdm_ep *ep = peer->ep;
	struct iwarp_rdm_rx *rx;

	bool whole = wc->status == IW_WC_SUCCESS;

	if (whole) {
		/* never more than the window, whatever a peer claims */
		peer->credits =
			peer->credits + in->hdr.credits > IWARP_RDM_CREDITS ?
				IWARP_RDM_CREDITS :
				peer->credits + in->hdr.credits;
		if ((in->hdr.op == IWARP_RDM_EAGER || in->abuf) &&
		    wc->byte_len != (uint64_t)IWARP_RDM_HDR_LEN + in->hdr.len) {
			/* shorter than its header says: garbage in the buffer */
			FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
				"RDM message of %u octets announced %u: "
				"dropped\n", wc->byte_len,
				IWARP_RDM_HDR_LEN + in->hdr.len);
			if (iwarp_rdm_counted(in->hdr.op))
				iwarp_rdm_owe(peer);
			whole = false;
		}
	}
	if (!whole) {	/* half a message is worth nothing */
		if (in->rx)
			iwarp_rdm_rx_done(ep, in->rx, 0, FI_EIO);
		if (in->ux) {
			iwarp_list_del(&in->ux->link);
			iwarp_rdm_ux_free(ep, in->ux);
		}
		return;
	}
	switch (in->hdr.op) {
	case IWARP_RDM_EAGER:
		if (in->rx) {
			iwarp_rdm_owe(peer);
			in->rx->hdr = in->hdr;
			in->rx->from = iwarp_rdm_from(peer);
			iwarp_rdm_rx_done(ep, in->rx, in->hdr.len, 0);
		} else {
			iwarp_rdm_stored(ep, in->ux, !in->ux->waiter &&
					 !(in->ux->claimed &&
					   in->ux->claim_ctx == in->ux));
			iwarp_rdm_unexp_arrived(ep, in->ux);
		}
		break;
	case IWARP_RDM_RTS:
		rx = iwarp_rdm_match_posted(ep, &in->hdr,
					    iwarp_rdm_from(peer));
		if (rx) {
			rx->hdr = in->hdr;
			rx->peer = peer;
			rx->from = iwarp_rdm_from(peer);
			rx->owes = true;	/* given back when the Read ends */
			iwarp_rdm_start_read(ep, rx);
		} else {
			struct iwarp_rdm_unexp *ux = calloc(1, sizeof(*ux));

			if (!ux) {
				iwarp_rdm_owe(peer);
				break;
			}
			ux->cost = sizeof(*ux);
			ep->unexp_bytes += ux->cost;
			ux->hdr = in->hdr;
			ux->peer = peer;
			ux->from = iwarp_rdm_from(peer);
			ux->arrived = true;
			iwarp_list_add_tail(in->hdr.flags & IWARP_RDM_F_TAGGED ?
						    &ep->unexp_tagged :
						    &ep->unexp_msg,
					    &ux->link);
			iwarp_rdm_stored(ep, ux, true);
		}
		break;
	case IWARP_RDM_FIN:
		iwarp_rdm_fin(peer, &in->hdr);
		break;
	case IWARP_RDM_WDATA:
		/* the Write before it on this stream is placed */
		iwarp_cq_write(ep->rx_cq, NULL,
			       FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
			       in->hdr.len, NULL, in->hdr.data, 0,
			       iwarp_rdm_from(peer));
		iwarp_rdm_owe(peer);
		break;
	case IWARP_RDM_AREQ:
		iwarp_rdm_atomic_serve(peer, &in->hdr, in->abuf);
		break;
	case IWARP_RDM_ARESP:
		iwarp_rdm_atomic_done(peer, &in->hdr, in->abuf);
		break;
	default:
		break;	/* CREDIT: the credits above were all */
	}
	iwarp_rdm_flush(peer);
}

static void iwarp_rdm_complete(void *arg, struct iw_qp *qp,
			       const struct iw_wc *wc)
{
	struct iwarp_rdm_peer *peer = arg;
	struct iwarp_rdm_ep *ep = peer->ep;

	switch (wc->op) {
	case IW_WC_RECV:
		if (wc->ctx) {
			struct iwarp_rdm_in *in = wc->ctx;

			iwarp_rdm_recv_done(peer, in, wc);
			free(in->abuf);
			iwarp_stash_put(&ep->in_stash, in);
		}
		break;
	case IW_WC_READ: {
		struct iwarp_rdm_rx *rx = wc->ctx;
		bool ok = wc->status == IW_WC_SUCCESS;

		if (rx->owner == IWARP_RDM_OWN_TX)
			goto tx_wr;

		iwarp_rdm_send_ctrl(rx->peer, IWARP_RDM_FIN, rx->hdr.msg_id,
				    ok ? 0 : IWARP_RDM_F_ERROR);
		if (rx->owes)
			iwarp_rdm_owe(rx->peer);
		iwarp_rdm_rx_done(ep, rx, rx->hdr.len, ok ? 0 : FI_EIO);
		break;
	}
	default:
tx_wr: {
		struct iwarp_rdm_tx *tx = wc->ctx;

		if (wc->status != IW_WC_SUCCESS && !tx->status) {
			tx->status = tx->kind == IWARP_RDM_K_MSG ?
				FI_EIO : iwarp_errno_from_status(wc->status);
			if (wc->err.why)
				tx->prov_errno = IWARP_PROV_ERRNO(
					wc->err.layer, wc->err.etype,
					wc->err.ecode);
		}
		tx->pending--;
		iwarp_rdm_settle(ep, tx);
		break;
	}
	}
}

static void iwarp_rdm_lost(struct iwarp_rdm_peer *peer, struct iw_qp *qp,
			   const struct iw_cm_event *ev)
{
	bool was_up = peer->up;

	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL, "RDM peer :%u: connection %p "
		"lost (event %d, status %d, ours %p, up %d)\n",
		iwarp_rdm_port(peer), (void *)qp, ev->type, ev->status,
		(void *)peer->qp, peer->up);
	if (qp == peer->rx_qp) {
		iwarp_rdm_bury(peer->ep, qp);
		peer->rx_qp = NULL;
		return;
	}
	if (qp != peer->qp)
		return;	/* a collision loser: already replaced */
	peer->qp = NULL;
	peer->up = false;
	iwarp_rdm_bury(peer->ep, qp);
	if (ev->type == IW_CM_REJECTED && ev->pdata_len >= IWARP_RDM_PD_LEN &&
	    (ev->pdata[4] & IWARP_RDM_COLLISION))
		return;	/* the peer's own connection is on its way */
	if (was_up) {
		iwarp_rdm_peer_fail(peer, FI_EIO);
		peer->tries = 0;
		iwarp_rdm_window_reset(peer);
		return;
	}
	if (peer->tries >= IWARP_RDM_CONNECT_TRIES) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
			"peer unreachable after %d attempts\n", peer->tries);
		iwarp_rdm_peer_fail(peer, FI_EHOSTUNREACH);
		peer->tries = 0;
		return;
	}
	peer->retry_at = iw_now_ms() + (50u << peer->tries);
}

static void iwarp_rdm_cm_event(void *arg, struct iw_qp *qp,
			       const struct iw_cm_event *ev)
{
	struct iwarp_rdm_peer *peer = arg;

	switch (ev->type) {
	case IW_CM_ESTABLISHED:
		iwarp_log_established("RDM", ev);
		FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL, "RDM peer :%u: "
			"connection %p up (ours %p)\n", iwarp_rdm_port(peer),
			(void *)qp, (void *)peer->qp);
		if (qp != peer->qp)
			break;	/* self: the receiving half */
		if (peer->qp_initiated) {	/* the Reply says it */
			struct iwarp_rdm_pdata them;

			peer->rfc7306 =
				!iwarp_rdm_pd_get(ev->pdata, ev->pdata_len,
						  &them) &&
				(them.version & IWARP_RDM_RFC7306);
			iwarp_rdm_atomics_on(peer, qp);
		}
		peer->up = true;
		peer->tries = 0;
		iwarp_rdm_flush(peer);
		break;
	case IW_CM_REJECTED:
	case IW_CM_UNREACHABLE:
	case IW_CM_ERROR:
	case IW_CM_DISCONNECTED:
		iwarp_rdm_lost(peer, qp, ev);
		break;
	default:
		break;
	}
}

static const struct iw_qp_ops iwarp_rdm_qp_ops = {
	.cm_event = iwarp_rdm_cm_event,
	.complete = iwarp_rdm_complete,
	.place = iwarp_rdm_place,
};

/* ---- the listener */

static int iwarp_rdm_accept_into(struct iwarp_rdm_ep *ep,
				 struct iw_conn_req *req,
				 struct iwarp_rdm_peer *peer, bool self)
{
	uint8_t pd[IWARP_RDM_PD_LEN];
	struct iw_conn_param p;
	struct iw_qp *qp = iwarp_rdm_qp_new(peer);

	if (!qp) {
		iw_reject(req, NULL, 0);
		return -FI_ENOMEM;
	}
	iwarp_rdm_pdata(ep, pd, 0);
	iwarp_rdm_conn_param(&p, pd);
	if (iw_accept(req, qp, &p)) {
		iw_qp_destroy(qp);
		return -FI_ECONNABORTED;
	}
	iwarp_rdm_atomics_on(peer, qp);
	if (self) {
		peer->rx_qp = qp;
		iwarp_rdm_bind_poll(ep, &peer->rx_poll);
		return 0;
	}
	if (peer->qp)
		iwarp_rdm_bury(ep, peer->qp);	/* loser or stale */
	peer->qp = qp;
	peer->qp_initiated = false;
	peer->up = false;
	return 0;
}

static void iwarp_rdm_reject(struct iwarp_rdm_ep *ep,
			     struct iw_conn_req *req, uint8_t flags)
{
	uint8_t pd[IWARP_RDM_PD_LEN];

	iwarp_rdm_pdata(ep, pd, flags);
	iw_reject(req, pd, sizeof(pd));
}

/* The IP of a socket address as text, with its port. */
static void iwarp_rdm_addr_str(const union iwarp_sockaddr *a, char *buf,
			       size_t len)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (a->sa.sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &a->sin6.sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(a->sin6.sin6_port));
	} else {
		inet_ntop(AF_INET, &a->sin.sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(a->sin.sin_port));
	}
}

/* Whether a and b hold the same IP (IPv4 also as ::ffff:a.b.c.d). */
static bool iwarp_rdm_same_ip(const union iwarp_sockaddr *a,
			      const union iwarp_sockaddr *b)
{
	const struct in6_addr *v6;
	const struct in_addr *v4;

	if (a->sa.sa_family == b->sa.sa_family)
		return a->sa.sa_family == AF_INET6 ?
			       !memcmp(&a->sin6.sin6_addr, &b->sin6.sin6_addr,
				       sizeof(struct in6_addr)) :
			       a->sin.sin_addr.s_addr == b->sin.sin_addr.s_addr;
	v6 = a->sa.sa_family == AF_INET6 ? &a->sin6.sin6_addr :
					   &b->sin6.sin6_addr;
	v4 = a->sa.sa_family == AF_INET ? &a->sin.sin_addr : &b->sin.sin_addr;
	return IN6_IS_ADDR_V4MAPPED(v6) && !memcmp(&v6->s6_addr[12], v4, 4);
}

/*
 * A request speaks for the listening address its connection data claims
 * only when it comes from that address's IP: a process elsewhere cannot
 * pose as a peer (and take over its connection) by naming it.
 */
static bool iwarp_rdm_claim_ok(struct iw_conn_req *req,
			       const union iwarp_sockaddr *claim)
{
	union iwarp_sockaddr from;
	socklen_t len = sizeof(from);
	char c[64], f[64];

	memset(&from, 0, sizeof(from));
	if (!iw_conn_req_getpeer(req, &from.sa, &len) &&
	    iwarp_rdm_same_ip(claim, &from))
		return true;
	iwarp_rdm_addr_str(claim, c, sizeof(c));
	iwarp_rdm_addr_str(&from, f, sizeof(f));
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL, "RDM connection request from %s "
		"claims to be %s: refused (the claimed IP must be the TCP "
		"peer's)\n", f, c);
	return false;
}

static void iwarp_rdm_conn_request(void *arg, struct iw_conn_req *req,
				   const struct iw_cm_event *ev)
{
	struct iwarp_rdm_ep *ep = arg;
	struct iwarp_rdm_pdata them, us = {
		.version = IWARP_RDM_VERSION,
		.addr = ep->name,
		.instance = ep->instance,
	};
	struct iwarp_rdm_peer *peer;
	int cmp;

	if (iwarp_rdm_pd_get(ev->pdata, ev->pdata_len, &them)) {
		iw_reject(req, NULL, 0);
		return;
	}
	if (!iwarp_rdm_claim_ok(req, &them.addr)) {
		iw_reject(req, NULL, 0);
		return;
	}
	peer = iwarp_rdm_peer_get(ep, &them.addr);
	if (!peer) {
		iw_reject(req, NULL, 0);
		return;
	}
	cmp = iwarp_rdm_pd_cmp(&them, &us);
	if (!cmp) {		/* ourselves: the receiving half */
		peer->rfc7306 = them.version & IWARP_RDM_RFC7306;
		if (!peer->rx_qp)
			iwarp_rdm_accept_into(ep, req, peer, true);
		else
			iwarp_rdm_reject(ep, req, IWARP_RDM_COLLISION);
		return;
	}
	/* a restarted peer replaces its old connection */
	if (peer->instance && peer->instance != them.instance && peer->qp) {
		iwarp_rdm_bury(ep, peer->qp);
		peer->qp = NULL;
		peer->up = false;
		iwarp_rdm_peer_fail(peer, FI_EIO);
		iwarp_rdm_window_reset(peer);
	}
	peer->instance = them.instance;
	peer->rfc7306 = them.version & IWARP_RDM_RFC7306;
	/* the connection initiated by the smaller side wins a collision */
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL, "RDM peer :%u: request; ours "
		"%p up %d cmp %d -> %s\n", iwarp_rdm_port(peer),
		(void *)peer->qp, peer->up, cmp,
		peer->qp && (peer->up || cmp > 0) ? "reject" : "accept");
	if (peer->qp && (peer->up || cmp > 0)) {
		iwarp_rdm_reject(ep, req, IWARP_RDM_COLLISION);
		return;
	}
	iwarp_rdm_accept_into(ep, req, peer, false);
}

static const struct iw_listener_ops iwarp_rdm_listener_ops = {
	.conn_request = iwarp_rdm_conn_request,
};

static void iwarp_rdm_l_progress(struct iwarp_pollable *p)
{
	struct iwarp_rdm_ep *ep =
		iwarp_container_of(p, struct iwarp_rdm_ep, lpoll);

	iw_listener_progress(ep->l);
	iwarp_rdm_reap(ep);
}

static void iwarp_rdm_l_poll_info(struct iwarp_pollable *p, int *fd,
				  short *events, uint64_t *deadline)
{
	struct iwarp_rdm_ep *ep =
		iwarp_container_of(p, struct iwarp_rdm_ep, lpoll);

	*fd = iw_listener_fd(ep->l);
	*events = iw_listener_accepting(ep->l) ? POLLIN : 0;
	/* requests still being read sit on sockets we do not poll */
	*deadline = iw_listener_busy(ep->l) ? 1 :
					     iw_listener_deadline(ep->l);
}

/* Listens on the endpoint's address; its name is the address peers use. */
int iwarp_rdm_listen(struct iwarp_rdm_ep *ep)
{
	union iwarp_sockaddr a = ep->name;
	socklen_t len = sizeof(a);
	uint16_t port;
	int ret;

	ret = iw_listen(ep->dom->dev, &a.sa, iwarp_sa_len(&a.sa), 1024, NULL,
			&iwarp_rdm_listener_ops, ep, &ep->l);
	if (ret)
		return ret;
	iw_listener_getname(ep->l, &a.sa, &len);
	port = a.sa.sa_family == AF_INET6 ? a.sin6.sin6_port : a.sin.sin_port;
	/* bound to a wildcard: peers reach us on the domain's address */
	if (ep->name.sa.sa_family == AF_INET6)
		ep->name.sin6.sin6_port = port;
	else
		ep->name.sin.sin_port = port;
	iwarp_list_init(&ep->lpoll.link);
	ep->lpoll.progress = iwarp_rdm_l_progress;
	ep->lpoll.poll_info = iwarp_rdm_l_poll_info;
	ep->lpoll.rare = true;
	iwarp_rdm_bind_poll(ep, &ep->lpoll);
	return 0;
}

void iwarp_rdm_shutdown(struct iwarp_rdm_ep *ep)
{
	while (!iwarp_list_empty(&ep->peers)) {
		struct iwarp_rdm_peer *peer = iwarp_container_of(
			ep->peers.next, struct iwarp_rdm_peer, link);

		iwarp_list_del(&peer->link);
		iwarp_rdm_unbind_poll(ep, &peer->poll);
		if (peer->rx_qp) {
			iwarp_rdm_unbind_poll(ep, &peer->rx_poll);
			iw_qp_destroy(peer->rx_qp);
		}
		if (peer->qp)
			iw_qp_destroy(peer->qp);
		peer->qp = peer->rx_qp = NULL;
		iwarp_rdm_reap(ep);
		iwarp_rdm_peer_fail(peer, FI_ECANCELED);
		free(peer);
	}
	if (ep->l) {
		iwarp_rdm_unbind_poll(ep, &ep->lpoll);
		iw_listener_close(ep->l);
		ep->l = NULL;
	}
	iwarp_rdm_reap(ep);
	free(ep->dead);
	ep->dead = NULL;
}
