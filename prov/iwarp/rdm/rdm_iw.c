/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The iWARP peer transport of RDM (rdm_xport.h): a listener per endpoint,
 * one engine QP per peer made on first use, always MPA rev 2 peer-to-peer
 * with an RTR so either side may send first. Collisions are resolved by
 * iwarp_rdm_pd_cmp(), connects retried a bounded number of times, claims
 * checked against the TCP source, and engine completions turned into
 * upcalls. Its guard, at the end of this file, handles job keys on every
 * connection and requests that claim a live peer restarted: it runs
 * inside engine callbacks, so QPs that end there are buried, never
 * destroyed. One file: the guard and the connection machinery call each
 * other. Knows nothing of the RDM protocol beyond its wire codecs.
 */
#include "rdm_iw.h"

#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

static const struct iw_qp_ops rdm_iw_qp_ops;

const char *rdm_iw_label(struct iw_qp *qp)
{
	return qp ? iw_qp_label(qp) : "none";
}

/* ---- QPs that end inside engine callbacks */

void rdm_iw_bury(struct iwarp_rdm_xep *xe, struct iw_qp *qp)
{
	if (!qp)
		return;
	if (xe->ndead == xe->deadcap) {
		size_t cap = xe->deadcap ? xe->deadcap * 2 : 8;
		struct iw_qp **d = realloc(xe->dead, cap * sizeof(*d));

		if (!d)
			return;	/* leak the QP rather than free it in use */
		xe->dead = d;
		xe->deadcap = cap;
	}
	xe->dead[xe->ndead++] = qp;
}

/* Destroys buried QPs; never from inside an engine callback. */
static void rdm_iw_reap(struct iwarp_rdm_xep *xe)
{
	while (xe->ndead)
		iw_qp_destroy(xe->dead[--xe->ndead]);
}

/* ---- progress */

static void rdm_iw_connect(struct iwarp_rdm_xconn *c);

/* how long a connection setup makes rare turns frequent: in an
 * all-to-all every peer is connecting to us too */
#define RDM_IW_HOT_MS 5

static void rdm_iw_hot(struct iwarp_rdm_xep *xe)
{
	if (xe->lpoll.fab)
		iwarp_progress_hot(xe->lpoll.fab, RDM_IW_HOT_MS);
}

static void rdm_iw_qp_progress(struct iwarp_pollable *p)
{
	struct iwarp_rdm_xconn *c =
		iwarp_container_of(p, struct iwarp_rdm_xconn, poll);

	if (c->qp)
		iw_qp_progress(c->qp);
	if (c->probe_until)
		rdm_iw_probe_tick(c);
	if (!c->up && !c->qp && iw_now_ms() >= c->retry_at &&
	    c->xe->up->queued(c->peer))
		rdm_iw_connect(c);
	rdm_iw_reap(c->xe);
}

static void rdm_iw_qp_poll_info(struct iwarp_pollable *p, int *fd,
				short *events, uint64_t *deadline)
{
	struct iwarp_rdm_xconn *c =
		iwarp_container_of(p, struct iwarp_rdm_xconn, poll);

	*fd = c->qp ? iw_qp_fd(c->qp) : -1;
	*events = c->qp ? iw_qp_poll_events(c->qp) : 0;
	*deadline = c->qp ? iw_qp_deadline(c->qp) :
		    c->xe->up->queued(c->peer) ? c->retry_at : 0;
	if (c->probe_until && (!*deadline || c->probe_until < *deadline))
		*deadline = c->probe_until;
}

static void rdm_iw_rxqp_progress(struct iwarp_pollable *p)
{
	struct iwarp_rdm_xconn *c =
		iwarp_container_of(p, struct iwarp_rdm_xconn, rx_poll);

	if (c->rx_qp)
		iw_qp_progress(c->rx_qp);
}

static void rdm_iw_rxqp_poll_info(struct iwarp_pollable *p, int *fd,
				  short *events, uint64_t *deadline)
{
	struct iwarp_rdm_xconn *c =
		iwarp_container_of(p, struct iwarp_rdm_xconn, rx_poll);

	*fd = c->rx_qp ? iw_qp_fd(c->rx_qp) : -1;
	*events = c->rx_qp ? iw_qp_poll_events(c->rx_qp) : 0;
	*deadline = c->rx_qp ? iw_qp_deadline(c->rx_qp) : 0;
}

/* ---- peers and their QPs */

static struct iwarp_rdm_xconn *
rdm_iw_peer_open(struct iwarp_rdm_xep *xe, struct iwarp_rdm_peer *peer,
		 const union iwarp_sockaddr *addr)
{
	struct iwarp_rdm_xconn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->xe = xe;
	c->peer = peer;
	c->addr = *addr;
	iwarp_addr_str(addr, c->name, sizeof(c->name));
	iwarp_list_init(&c->poll.link);
	iwarp_list_init(&c->rx_poll.link);
	c->poll.progress = rdm_iw_qp_progress;
	c->poll.poll_info = rdm_iw_qp_poll_info;
	c->rx_poll.progress = rdm_iw_rxqp_progress;
	c->rx_poll.poll_info = rdm_iw_rxqp_poll_info;
	xe->up->poll_add(xe->ep, &c->poll);
	return c;
}

static void rdm_iw_peer_close(struct iwarp_rdm_xconn *c)
{
	struct iwarp_rdm_xep *xe = c->xe;
	struct iw_qp *qp, *rx_qp;

	rdm_iw_claim_close(c);
	xe->up->poll_del(xe->ep, &c->poll);
	if (c->rx_polled)
		xe->up->poll_del(xe->ep, &c->rx_poll);
	/* detached first: a destroy may report the connection lost, which
	 * must not bury what is being destroyed */
	qp = c->qp;
	rx_qp = c->rx_qp;
	c->qp = c->rx_qp = NULL;
	if (rx_qp)
		iw_qp_destroy(rx_qp);
	if (qp)
		iw_qp_destroy(qp);
	rdm_iw_reap(xe);
	free(c);
}

/* RFC 7306 on a connection when both sides offer it. */
static bool rdm_iw_atomics_on(struct iw_qp *qp, bool peer_offers)
{
	bool on = iwarp_params.rfc7306 && peer_offers;

	if (on && !iw_qp_set_atomics(qp, true))
		FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
			"RDM connection %s carries RFC 7306 atomics\n",
			iw_qp_label(qp));
	return on;
}

static struct iw_qp *rdm_iw_qp_new(struct iwarp_rdm_xconn *c)
{
	/* The peer of an RDM connection is always this provider (its
	 * private data says so), which takes FPDUs of any legal length: no
	 * need to cut them to the TCP segment size (1442 octets on
	 * Ethernet) as a hardware RNIC would need. */
	struct iw_qp_attr attr = {
		.sq_size = 1024,
		.mulpdu = IWARP_RDM_MULPDU,
		.peek_len = IWARP_RDM_HDR_LEN,
		.ops = &rdm_iw_qp_ops,
		.arg = c,
	};
	struct iw_qp *qp;

	return iw_qp_create(c->xe->dom->pd, &attr, &qp) ? NULL : qp;
}

/* Our RDM connection data at buf (after the auth block, if any). */
static void rdm_iw_pdata(struct iwarp_rdm_xep *xe, uint8_t *buf,
			 uint8_t flags)
{
	struct iwarp_rdm_pdata d = {
		.version = IWARP_RDM_VERSION | flags | IWARP_RDM_WIDE |
			   (iwarp_params.rfc7306 ? IWARP_RDM_RFC7306 : 0) |
			   (xe->shm ? IWARP_RDM_SHM : 0),
		.addr = xe->name,
		.instance = xe->instance,
	};

	iwarp_rdm_pd_put(buf, &d);
}

/* pd holds the auth block first when the endpoint has a key: the
 * RDM data starts at off. */
static void rdm_iw_conn_param(struct iw_conn_param *p, const uint8_t *pd,
			      size_t off)
{
	memset(p, 0, sizeof(*p));
	p->ird = IWARP_RDMA_DEPTH;
	p->ord = IWARP_RDMA_DEPTH;
	p->crc = iwarp_params.crc;
	p->pdata = pd;
	p->pdata_len = (uint16_t)(off + IWARP_RDM_PD_LEN);
}

/* Where the RDM data starts in the Request (initiator) or the Reply:
 * after the auth block (rdm_iw_auth_begin), with a key. */
static size_t rdm_iw_rdm_off(struct iwarp_rdm_xep *xe, bool initiator)
{
	return rdm_iw_keyed(xe) ? iwarp_auth_pd_len(initiator) : 0;
}

/* Starts (or restarts) the connection to a peer that has work queued. */
static void rdm_iw_connect(struct iwarp_rdm_xconn *c)
{
	uint8_t pd[IWARP_RDM_PD_MAX];
	union iwarp_sockaddr src;
	struct iw_conn_param p;

	if (c->qp || c->up)
		return;
	c->qp = rdm_iw_qp_new(c);
	if (!c->qp)
		return;
	iwarp_pollable_reset(&c->poll);	/* its number may be the last's */
	rdm_iw_hot(c->xe);
	if (rdm_iw_keyed(c->xe) &&
	    rdm_iw_auth_begin(c, c->qp, true, NULL, pd)) {
		rdm_iw_bury(c->xe, c->qp);
		c->qp = NULL;
		c->retry_at = iw_now_ms() + 100;
		return;
	}
	rdm_iw_pdata(c->xe, pd + rdm_iw_rdm_off(c->xe, true), 0);
	rdm_iw_conn_param(&p, pd, rdm_iw_rdm_off(c->xe, true));
	/* from the address our connection data claims, so the peer can
	 * check the claim against the TCP source (rdm_iw_claim_ok) */
	src = c->xe->name;
	if (src.sa.sa_family == AF_INET6)
		src.sin6.sin6_port = 0;
	else
		src.sin.sin_port = 0;
	p.src = &src.sa;
	p.src_len = iwarp_sa_len(&src.sa);
	c->tries++;
	c->initiated = true;
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: connecting %s (try %d)\n", c->name,
		iw_qp_label(c->qp), c->tries);
	if (iw_qp_connect(c->qp, &c->addr.sa, iwarp_sa_len(&c->addr.sa),
			  &p)) {
		rdm_iw_auth_end(c, c->qp);
		rdm_iw_bury(c->xe, c->qp);
		c->qp = NULL;
		c->retry_at = iw_now_ms() + 100;
	}
}

/* ---- posting */

static int rdm_iw_post(struct iwarp_rdm_xconn *c, struct iw_send_wr *wr)
{
	int ret;

	if (!c->qp)
		return -ENOTCONN;	/* lost while posting */
	ret = iw_qp_post_send(c->qp, wr);
	iwarp_pollable_touch(&c->poll);
	return ret;
}

/*
 * A burst: posts to one peer with no progress call between them. The
 * first RDM_IW_BURST_FREE leave at once, as every post did before (an
 * application may post a few and then compute); later ones wait, up to
 * RDM_IW_HOLD octets, and leave together in one sendmsg (a loopback
 * sendmsg costs about as much as copying 16 KiB, and osu_bw posts 64
 * before it waits). The next progress call, or the post that fills the
 * hold, sends them.
 */
static void rdm_iw_burst(struct iwarp_rdm_xconn *c, struct iw_send_wr *wr,
			 size_t len)
{
	struct iwarp_fabric *fab = c->xe->lpoll.fab;
	unsigned int tick = fab->rare_tick;

	if (c->batch) {
		if (c->batch_held + len < RDM_IW_HOLD) {
			wr->flags |= IW_WR_MORE;
			c->batch_held += len;
		} else {
			c->batch_held = 0;	/* this one sends them all */
		}
		return;
	}
	if (fab->in_progress)
		return;		/* our own answers: the pass sends them */
	if (c->post_tick != tick) {
		c->post_tick = tick;
		c->post_run = 0;
		c->post_held = 0;
	}
	if (++c->post_run > RDM_IW_BURST_FREE &&
	    c->post_held + len < RDM_IW_HOLD) {
		wr->flags |= IW_WR_MORE;
		c->post_held += len;
	} else {
		c->post_held = 0;
	}
}

/* Appends iov to wr's gather list sge, leaving out empty entries if
 * asked; the octets appended. */
static size_t rdm_iw_sgl(struct iw_send_wr *wr, struct iw_sge *sge,
			 const struct iovec *iov, size_t count,
			 bool skip_empty)
{
	size_t i, n = 0;

	for (i = 0; i < count; i++) {
		if (skip_empty && !iov[i].iov_len)
			continue;
		sge[wr->num_sge].addr = iov[i].iov_base;
		sge[wr->num_sge++].len = (uint32_t)iov[i].iov_len;
		n += iov[i].iov_len;
	}
	return n;
}

static int rdm_iw_post_msg(struct iwarp_rdm_xconn *c, void *ctx,
			   const uint8_t *hdr, size_t hdr_len,
			   const struct iovec *iov, size_t count)
{
	struct iw_sge sge[IW_MAX_SGE];
	struct iw_send_wr wr = {
		.ctx = ctx,
		.op = IW_WR_SEND,
		.flags = IW_WR_SIGNALED,
		.sgl = sge,
		.num_sge = 1,
	};
	size_t len;

	sge[0].addr = (void *)hdr;
	sge[0].len = (uint32_t)hdr_len;
	len = hdr_len + rdm_iw_sgl(&wr, sge, iov, count, false);
	rdm_iw_burst(c, &wr, len);
	return rdm_iw_post(c, &wr);
}

/* A flush of messages that waited for credits, from inside a progress
 * pass where rdm_iw_burst holds nothing back: one sendmsg for them all,
 * not one each (osu_bibw -W 256 of 1 octet: 3.4x the rate). */
static void rdm_iw_batch(struct iwarp_rdm_xconn *c, bool on)
{
	if (on) {
		c->batch++;
		return;
	}
	if (!c->batch || --c->batch)
		return;
	if (c->batch_held && c->qp)
		iw_qp_push(c->qp);
	c->batch_held = 0;
}

static int rdm_iw_post_rdma(struct iwarp_rdm_xconn *c, void *ctx,
			    enum iwarp_rdm_xop op, const struct iovec *iov,
			    size_t count, uint32_t rkey, uint64_t raddr,
			    unsigned int flags)
{
	struct iw_sge sge[IW_MAX_SGE];
	struct iw_send_wr wr = {
		.ctx = ctx,
		.op = op == IWARP_RDM_X_WRITE ? IW_WR_WRITE : IW_WR_READ,
		.flags = IW_WR_SIGNALED,
		.sgl = sge,
		.rstag = rkey,
		.rto = raddr,
	};

	rdm_iw_sgl(&wr, sge, iov, count, true);
	if (flags & IWARP_RDM_X_FENCE)
		wr.flags |= IW_WR_FENCE;
	/* one sendmsg for a Write and what tells its delivery; if that
	 * post must wait, the next progress pass sends the Write */
	if (flags & IWARP_RDM_X_MORE)
		wr.flags |= IW_WR_MORE;
	return rdm_iw_post(c, &wr);
}

static int rdm_iw_post_atomic(struct iwarp_rdm_xconn *c, void *ctx,
			      const struct iwarp_rdm_xatomic *a)
{
	struct iw_sge sge = { a->old, sizeof(*a->old) };
	struct iw_send_wr wr = {
		.ctx = ctx,
		.op = a->cswap ? IW_WR_ATOMIC_CSWAP : IW_WR_ATOMIC_FADD,
		.flags = IW_WR_SIGNALED,
		.sgl = &sge,
		.num_sge = 1,
		.rstag = a->rkey,
		.rto = a->raddr,
		.add_swap = a->add_swap,
		.add_swap_mask = a->add_swap_mask,
		.compare = a->compare,
		.compare_mask = a->compare_mask,
	};

	return rdm_iw_post(c, &wr);
}

static bool rdm_iw_atomics(const struct iwarp_rdm_xconn *c)
{
	return c->rfc7306;
}

static unsigned int rdm_iw_window(const struct iwarp_rdm_xconn *c)
{
	return c->wide ? IWARP_RDM_CREDITS_WIDE : IWARP_RDM_CREDITS;
}

/* ---- engine callbacks */

static int rdm_iw_place(void *arg, struct iw_qp *qp, const struct iw_place *p,
			struct iw_sge *dst, void **ctx)
{
	struct iwarp_rdm_xconn *c = arg;

	/* with a key, the first Send of a connection is the peer's proof */
	if (c->gated && rdm_iw_gated(c, qp)) {
		*ctx = NULL;	/* nothing to complete */
		return rdm_iw_auth_proof_in(c, qp, p);
	}
	return c->xe->up->place(c->peer, p->peek, p->peek_len, dst, ctx);
}

static void rdm_iw_complete(void *arg, struct iw_qp *qp,
			    const struct iw_wc *wc)
{
	struct iwarp_rdm_xconn *c = arg;
	const struct iwarp_rdm_upcalls *up = c->xe->up;
	int err = 0, prov_errno = 0;

	if (wc->op == IW_WC_RECV) {
		if (wc->ctx)
			up->recv(c->peer, wc->ctx, wc->byte_len,
				 wc->status == IW_WC_SUCCESS);
		return;
	}
	/* our proofs and probes: contexts inside c */
	if ((uintptr_t)wc->ctx - (uintptr_t)c < sizeof(*c)) {
		if (wc->ctx == &c->probe_until && qp == c->qp)
			rdm_iw_probe_done(c, wc->status == IW_WC_SUCCESS);
		return;
	}
	if (wc->status != IW_WC_SUCCESS) {
		err = iwarp_errno_from_status(wc->status);
		if (wc->err.why)
			prov_errno = IWARP_PROV_ERRNO(wc->err.layer,
						      wc->err.etype,
						      wc->err.ecode);
	}
	up->done(c->peer, wc->ctx, err, prov_errno);
}

/* Connecting failed: retry later, or give up after a few tries. */
static void rdm_iw_retry(struct iwarp_rdm_xconn *c)
{
	if (c->tries >= IWARP_RDM_CONNECT_TRIES) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
			"RDM peer %s unreachable after %d attempts\n",
			c->name, c->tries);
		c->xe->up->unreachable(c->peer, FI_EHOSTUNREACH, 0);
		c->tries = 0;
		return;
	}
	c->retry_at = iw_now_ms() + (50u << c->tries);
}

/* The accepted half of a self connection, or the candidate, ended. */
static void rdm_iw_rx_lost(struct iwarp_rdm_xconn *c, struct iw_qp *qp)
{
	rdm_iw_auth_end(c, qp);
	rdm_iw_bury(c->xe, qp);
	c->rx_qp = NULL;
	if (c->candidate)
		rdm_iw_candidate_gone(c);
}

static bool rdm_iw_keyref(const struct iw_cm_event *ev)
{
	return ev->type == IW_CM_REJECTED &&
	       ev->pdata_len >= IWARP_RDM_PD_LEN &&
	       (ev->pdata[4] & IWARP_RDM_KEYREF);
}

static void rdm_iw_lost(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			const struct iw_cm_event *ev)
{
	bool was_up = c->up;

	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: connection %s lost (event %d, status %d, "
		"ours %s, up %d)\n", c->name, iw_qp_label(qp), ev->type,
		ev->status, rdm_iw_label(c->qp), c->up);
	if (qp == c->rx_qp) {
		rdm_iw_rx_lost(c, qp);
		return;
	}
	if (qp != c->qp)
		return;	/* a collision loser: already replaced */
	c->qp = NULL;
	c->up = false;
	rdm_iw_auth_end(c, qp);
	rdm_iw_bury(c->xe, qp);
	if (was_up) {
		c->tries = 0;
		c->xe->up->lost(c->peer, FI_EIO);
		rdm_iw_claim_lost(c);
		return;
	}
	if (rdm_iw_keyref(ev)) {
		rdm_iw_auth_refused(c, qp);
		return;
	}
	if (ev->type == IW_CM_REJECTED && ev->pdata_len >= IWARP_RDM_PD_LEN &&
	    (ev->pdata[4] & IWARP_RDM_COLLISION)) {
		/* the peer's own connection is on its way: not a failed
		 * try, and no asking again until it had time to arrive (a
		 * busy peer answers the listener only now and then) */
		if (c->tries)
			c->tries--;
		c->retry_at = iw_now_ms() + IWARP_RDM_COLLISION_WAIT_MS;
		return;
	}
	rdm_iw_retry(c);
}

/* The peer's RDM data in the Reply to our connect (after its auth
 * block, with a key). */
static void rdm_iw_reply_in(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			    const struct iw_cm_event *ev)
{
	size_t off = rdm_iw_rdm_off(c->xe, false);
	struct iwarp_rdm_pdata them;
	bool offers;

	if (ev->pdata_len < off ||
	    iwarp_rdm_pd_get(ev->pdata + off, ev->pdata_len - off, &them))
		memset(&them, 0, sizeof(them));
	offers = them.version & IWARP_RDM_RFC7306;
	c->rfc7306 = rdm_iw_atomics_on(qp, offers);
	c->shm = them.version & IWARP_RDM_SHM;
	c->wide = them.version & IWARP_RDM_WIDE;
	/* who answered: a later request claiming a restart is checked
	 * against it */
	if (them.instance)
		c->instance = them.instance;
}

/*
 * A rendezvous is read in Reads of 512 KiB, with a window of octets
 * asked and not yet in (four Reads fit whatever it is): over TCP what is
 * asked is what the peer pushes into its socket at once. Across hosts
 * the window covers the bandwidth-delay product of a LAN (2 MiB:
 * 100 Gb/s for 160 us). To a peer on this host there is no delay to
 * cover, and both copies of every octet go through this host's caches,
 * so more in flight is only misses: osu_bw of 128 KiB over loopback
 * (-i 100, medians of 5) made 2.7 GB/s with 16 Reads out, 5.5 with 4.
 */
#define RDM_IW_READ_WINDOW ((uint64_t)2 << 20)
#define RDM_IW_READ_WINDOW_HOST ((uint64_t)512 << 10)
#define RDM_IW_READ_CHUNK ((size_t)512 << 10)

static uint64_t rdm_iw_read_window(const struct iwarp_rdm_xconn *xc)
{
	if (iwarp_params.rdm_read_window)
		return iwarp_params.rdm_read_window;
	return xc->host ? RDM_IW_READ_WINDOW_HOST : RDM_IW_READ_WINDOW;
}

static size_t rdm_iw_read_chunk(const struct iwarp_rdm_xconn *xc)
{
	(void)xc;
	return RDM_IW_READ_CHUNK;
}

/* The peer is on this host: a loopback address, or the connection's two
 * ends share one. A peer in another namespace counts as remote. */
static bool rdm_iw_same_host(const struct iw_qp *qp)
{
	union iwarp_sockaddr a, b;
	socklen_t al = sizeof(a), bl = sizeof(b);

	if (iw_qp_getname(qp, &a.sa, &al) || iw_qp_getpeer(qp, &b.sa, &bl))
		return false;
	return iwarp_addr_is_loopback(&b.sa) || iwarp_addr_same_ip(&a, &b);
}

void rdm_iw_ready(struct iwarp_rdm_xconn *c, struct iw_qp *qp)
{
	struct rdm_iw_auth *s = rdm_iw_keyed(c->xe) ? rdm_iw_auth_of(c, qp) :
						      NULL;

	if (s && (!s->established || s->gated))
		return;	/* not proven yet */
	rdm_iw_auth_end(c, qp);
	if (qp == c->rx_qp && c->candidate)
		rdm_iw_promote(c);
	if (qp != c->qp)
		return;	/* self: the receiving half */
	c->host = rdm_iw_same_host(qp);
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: %s: rendezvous Reads of %zu KiB, %" PRIu64
		" KiB outstanding\n", c->name,
		c->host ? "on this host" : "on another host",
		rdm_iw_read_chunk(c) >> 10, rdm_iw_read_window(c) >> 10);
	c->up = true;
	c->tries = 0;
	c->xe->up->connected(c->peer);
}

static void rdm_iw_established(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			       const struct iw_cm_event *ev)
{
	iwarp_log_connected("RDM", qp, ev);
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: connection %s up (ours %s)\n", c->name,
		iw_qp_label(qp), rdm_iw_label(c->qp));
	if (rdm_iw_keyed(c->xe) && !rdm_iw_auth_established(c, qp, ev))
		return;
	if (qp == c->qp && c->initiated)	/* the Reply says it */
		rdm_iw_reply_in(c, qp, ev);
	rdm_iw_ready(c, qp);
}

static void rdm_iw_cm_event(void *arg, struct iw_qp *qp,
			    const struct iw_cm_event *ev)
{
	struct iwarp_rdm_xconn *c = arg;

	switch (ev->type) {
	case IW_CM_ESTABLISHED:
		rdm_iw_established(c, qp, ev);
		break;
	case IW_CM_REJECTED:
	case IW_CM_UNREACHABLE:
	case IW_CM_ERROR:
	case IW_CM_DISCONNECTED:
		rdm_iw_lost(c, qp, ev);
		break;
	default:
		break;
	}
}

static void rdm_iw_target(void *arg, struct iw_qp *qp, bool write,
			  void *mr_ctx)
{
	struct iwarp_rdm_xconn *c = arg;

	(void)qp;
	c->xe->up->target(c->xe->ep, write, mr_ctx);
}

static const struct iw_qp_ops rdm_iw_qp_ops = {
	.cm_event = rdm_iw_cm_event,
	.complete = rdm_iw_complete,
	.place = rdm_iw_place,
	.target = rdm_iw_target,
};

/* ---- the listener */

/* Where an accepted QP goes: c->qp, or rx_qp (self, candidate). */
static void rdm_iw_accepted(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			    bool rx)
{
	struct iwarp_rdm_xep *xe = c->xe;

	if (rx) {
		c->rx_qp = qp;
		iwarp_pollable_reset(&c->rx_poll);
		if (!c->rx_polled)
			xe->up->poll_add(xe->ep, &c->rx_poll);
		c->rx_polled = true;
		return;
	}
	if (c->qp) {	/* loser or stale */
		rdm_iw_auth_end(c, c->qp);
		rdm_iw_bury(xe, c->qp);
	}
	c->qp = qp;
	iwarp_pollable_reset(&c->poll);
	c->initiated = false;
	c->up = false;
}

int rdm_iw_accept_into(struct iwarp_rdm_xconn *c, struct iw_conn_req *req,
		       bool rx, bool rfc7306, const uint8_t *apd)
{
	struct iwarp_rdm_xep *xe = c->xe;
	uint8_t pd[IWARP_RDM_PD_MAX];
	struct iw_conn_param p;
	struct iw_qp *qp = rdm_iw_qp_new(c);

	if (!qp || (apd && rdm_iw_auth_begin(c, qp, false, apd, pd))) {
		if (qp)
			iw_qp_destroy(qp);
		iw_reject(req, NULL, 0);
		return -FI_ENOMEM;
	}
	rdm_iw_pdata(xe, pd + rdm_iw_rdm_off(xe, false), 0);
	rdm_iw_conn_param(&p, pd, rdm_iw_rdm_off(xe, false));
	if (iw_accept(req, qp, &p)) {
		rdm_iw_auth_end(c, qp);
		iw_qp_destroy(qp);
		return -FI_ECONNABORTED;
	}
	rfc7306 = rdm_iw_atomics_on(qp, rfc7306);
	if (!rx || !c->candidate)
		c->rfc7306 = rfc7306;
	rdm_iw_accepted(c, qp, rx);
	return 0;
}

void rdm_iw_reject(struct iwarp_rdm_xep *xe, struct iw_conn_req *req,
		   uint8_t flags)
{
	uint8_t pd[IWARP_RDM_PD_LEN];

	rdm_iw_pdata(xe, pd, flags);
	iw_reject(req, pd, sizeof(pd));
}

/*
 * A request speaks for the listening address its connection data claims
 * only when it comes from that address's IP: a process elsewhere cannot
 * pose as a peer (and take over its connection) by naming it.
 */
static bool rdm_iw_claim_ok(struct iw_conn_req *req,
			    const union iwarp_sockaddr *claim)
{
	union iwarp_sockaddr from;
	socklen_t len = sizeof(from);
	char c[64], f[64];

	memset(&from, 0, sizeof(from));
	if (!iw_conn_req_getpeer(req, &from.sa, &len) &&
	    iwarp_addr_same_ip(claim, &from))
		return true;
	iwarp_addr_str(claim, c, sizeof(c));
	iwarp_addr_str(&from, f, sizeof(f));
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL, "RDM connection request from %s "
		"claims to be %s: refused (the claimed IP must be the TCP "
		"peer's)\n", f, c);
	return false;
}

/* A request from ourselves: its accepted half receives what we send. */
static void rdm_iw_self_request(struct iwarp_rdm_xconn *c,
				struct iw_conn_req *req,
				const struct iwarp_rdm_pdata *them,
				const uint8_t *apd)
{
	if (!c->rx_qp)
		rdm_iw_accept_into(c, req, true,
				   them->version & IWARP_RDM_RFC7306, apd);
	else
		rdm_iw_reject(c->xe, req, IWARP_RDM_COLLISION);
}

/* A request from another endpoint; cmp orders it against us. */
static void rdm_iw_peer_request(struct iwarp_rdm_xconn *c,
				struct iw_conn_req *req,
				const struct iwarp_rdm_pdata *them, int cmp,
				const uint8_t *apd)
{
	bool refuse;

	/* a live connection is never replaced on a request's word */
	if (c->instance && c->instance != them->instance && c->up) {
		rdm_iw_claim(c, req, them, apd);
		return;
	}
	/* a restarted peer replaces a connection that is not up yet */
	if (c->instance && c->instance != them->instance && c->qp) {
		rdm_iw_auth_end(c, c->qp);
		rdm_iw_bury(c->xe, c->qp);
		c->qp = NULL;
		c->up = false;
		c->xe->up->lost(c->peer, FI_EIO);
	}
	c->instance = them->instance;
	/* the connection initiated by the smaller side wins a collision */
	refuse = c->qp && (c->up || cmp > 0);
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: request; ours %s up %d cmp %d -> %s\n",
		c->name, rdm_iw_label(c->qp), c->up, cmp,
		refuse ? "reject" : "accept");
	if (!refuse) {
		c->shm = them->version & IWARP_RDM_SHM;
		c->wide = them->version & IWARP_RDM_WIDE;
	}
	if (refuse)
		rdm_iw_reject(c->xe, req, IWARP_RDM_COLLISION);
	else
		rdm_iw_accept_into(c, req, false,
				   them->version & IWARP_RDM_RFC7306, apd);
}

static void rdm_iw_conn_request(void *arg, struct iw_conn_req *req,
				const struct iw_cm_event *ev)
{
	struct iwarp_rdm_xep *xe = arg;
	struct iwarp_rdm_pdata them, us = {
		.version = IWARP_RDM_VERSION,
		.addr = xe->name,
		.instance = xe->instance,
	};
	struct iwarp_rdm_xconn *c;
	const uint8_t *apd = rdm_iw_keyed(xe) ? ev->pdata : NULL;
	size_t off;
	int cmp;

	rdm_iw_hot(xe);
	if (!rdm_iw_auth_request(xe, req, ev->pdata, ev->pdata_len, &off))
		return;	/* refused for the job key */
	if (iwarp_rdm_pd_get(ev->pdata + off, ev->pdata_len - off, &them) ||
	    !rdm_iw_claim_ok(req, &them.addr)) {
		iw_reject(req, NULL, 0);
		return;
	}
	c = xe->up->peer(xe->ep, &them.addr);
	if (!c) {
		iw_reject(req, NULL, 0);
		return;
	}
	cmp = iwarp_rdm_pd_cmp(&them, &us);
	if (!cmp)
		rdm_iw_self_request(c, req, &them, apd);
	else
		rdm_iw_peer_request(c, req, &them, cmp, apd);
}

/* A held request went away undecided (its sender gave up). */
static void rdm_iw_conn_dropped(void *arg, struct iw_conn_req *req)
{
	struct iwarp_rdm_xconn *c = iw_conn_req_ctx(req);

	(void)arg;
	if (c)
		rdm_iw_claim_dropped(c, req);
}

static const struct iw_listener_ops rdm_iw_listener_ops = {
	.conn_request = rdm_iw_conn_request,
	.conn_dropped = rdm_iw_conn_dropped,
};

static void rdm_iw_l_progress(struct iwarp_pollable *p)
{
	struct iwarp_rdm_xep *xe =
		iwarp_container_of(p, struct iwarp_rdm_xep, lpoll);

	iw_listener_progress(xe->l);
	rdm_iw_reap(xe);
}

static void rdm_iw_l_poll_info(struct iwarp_pollable *p, int *fd,
			       short *events, uint64_t *deadline)
{
	struct iwarp_rdm_xep *xe =
		iwarp_container_of(p, struct iwarp_rdm_xep, lpoll);

	*fd = iw_listener_fd(xe->l);
	*events = iw_listener_accepting(xe->l) ? POLLIN : 0;
	/* requests still being read sit on sockets we do not poll */
	*deadline = iw_listener_busy(xe->l) ? 1 : iw_listener_deadline(xe->l);
}

/* Bound to a wildcard: peers reach us on the domain's address. */
static void rdm_iw_set_port(struct iwarp_rdm_xep *xe,
			    union iwarp_sockaddr *name)
{
	union iwarp_sockaddr a;
	socklen_t len = sizeof(a);
	uint16_t port;

	iw_listener_getname(xe->l, &a.sa, &len);
	port = a.sa.sa_family == AF_INET6 ? a.sin6.sin6_port : a.sin.sin_port;
	if (name->sa.sa_family == AF_INET6)
		name->sin6.sin6_port = port;
	else
		name->sin.sin_port = port;
}

/* Listens on the endpoint's address; its name is the address peers use. */
static int rdm_iw_listen(struct iwarp_rdm_ep *ep, struct iwarp_domain *dom,
			 union iwarp_sockaddr *name, uint64_t instance,
			 const struct iwarp_auth_key *key,
			 const struct iwarp_rdm_upcalls *up,
			 struct iwarp_rdm_xep **xep)
{
	struct iwarp_rdm_xep *xe = calloc(1, sizeof(*xe));
	int ret;

	if (!xe)
		return -FI_ENOMEM;
	xe->ep = ep;
	xe->up = up;
	xe->dom = dom;
	xe->instance = instance;
	xe->key = *key;
	ret = iw_listen(dom->dev, &name->sa, iwarp_sa_len(&name->sa), 1024,
			NULL, &rdm_iw_listener_ops, xe, &xe->l);
	if (ret) {
		free(xe);
		return ret;
	}
	rdm_iw_set_port(xe, name);
	xe->name = *name;
	iwarp_list_init(&xe->lpoll.link);
	xe->lpoll.progress = rdm_iw_l_progress;
	xe->lpoll.poll_info = rdm_iw_l_poll_info;
	xe->lpoll.rare = true;
	up->poll_add(ep, &xe->lpoll);
	*xep = xe;
	return 0;
}

static void rdm_iw_shutdown(struct iwarp_rdm_xep *xe)
{
	xe->up->poll_del(xe->ep, &xe->lpoll);
	iw_listener_close(xe->l);
	rdm_iw_reap(xe);
	free(xe->dead);
	OPENSSL_cleanse(&xe->key, sizeof(xe->key));
	free(xe);
}

void iwarp_rdm_iw_offer_shm(struct iwarp_rdm_xep *xe)
{
	xe->shm = true;
}

bool iwarp_rdm_iw_peer_shm(const struct iwarp_rdm_xconn *c)
{
	return c->shm;
}

void iwarp_rdm_iw_quiet(struct iwarp_rdm_xconn *c, bool quiet)
{
	iwarp_pollable_rare(&c->poll, quiet);
}

static bool rdm_iw_eager_idle(const struct iwarp_rdm_xconn *xc)
{
	(void)xc;
	return true;
}

static size_t rdm_iw_stream_eager(const struct iwarp_rdm_xconn *xc)
{
	(void)xc;
	return SIZE_MAX;
}

const struct iwarp_rdm_xport iwarp_rdm_iw_xport = {
	.name = "iwarp",
	.listen = rdm_iw_listen,
	.shutdown = rdm_iw_shutdown,
	.peer_open = rdm_iw_peer_open,
	.peer_close = rdm_iw_peer_close,
	.connect = rdm_iw_connect,
	.post_msg = rdm_iw_post_msg,
	.post_rdma = rdm_iw_post_rdma,
	.post_atomic = rdm_iw_post_atomic,
	.atomics = rdm_iw_atomics,
	.window = rdm_iw_window,
	.eager_idle = rdm_iw_eager_idle,
	.stream_eager = rdm_iw_stream_eager,
	.read_chunk = rdm_iw_read_chunk,
	.read_window = rdm_iw_read_window,
	.batch = rdm_iw_batch,
};

/* ==== the guard: job keys and restart claims */

/* ---- job keys */

struct rdm_iw_auth *rdm_iw_auth_of(struct iwarp_rdm_xconn *c,
				   struct iw_qp *qp)
{
	size_t i;

	for (i = 0; qp && i < RDM_IW_AUTH_SLOTS; i++)
		if (c->au[i].qp == qp)
			return &c->au[i];
	return NULL;
}

void rdm_iw_auth_end(struct iwarp_rdm_xconn *c, struct iw_qp *qp)
{
	struct rdm_iw_auth *s = rdm_iw_auth_of(c, qp);

	if (!s)
		return;
	if (s->gated)
		c->gated--;
	OPENSSL_cleanse(s, sizeof(*s));
	memset(s, 0, sizeof(*s));
}

int rdm_iw_auth_begin(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
		      bool initiator, const uint8_t *apd, uint8_t *pd)
{
	struct rdm_iw_auth *s = NULL;
	size_t i;

	for (i = 0; !s && i < RDM_IW_AUTH_SLOTS; i++)
		if (!c->au[i].qp)
			s = &c->au[i];
	if (!s || iwarp_auth_start(&s->a, initiator))
		return -FI_EIO;
	if (apd && iwarp_auth_pd_get(&s->a, NULL, apd, IWARP_AUTH_PD_LEN))
		return -FI_EINVAL;
	if (iwarp_auth_pd_put(pd, &c->xe->key, &s->a))
		return -FI_EIO;
	/* nothing but the proof and the RTR until it checked */
	iw_qp_gate(qp, true);
	iw_qp_rtr_more(qp, initiator);
	s->qp = qp;
	s->gated = true;
	c->gated++;
	return 0;
}

/* qp is no longer c's; true when it was the one we send on. */
static bool rdm_iw_auth_detach(struct iwarp_rdm_xconn *c, struct iw_qp *qp)
{
	rdm_iw_auth_end(c, qp);
	rdm_iw_bury(c->xe, qp);
	if (qp == c->rx_qp) {
		c->rx_qp = NULL;
		if (c->candidate)
			rdm_iw_candidate_gone(c);
		return false;
	}
	if (qp != c->qp)
		return false;
	c->qp = NULL;
	c->up = false;
	c->tries = 0;
	return true;
}

/*
 * Authentication failed on qp: it ends in a Terminate (RDMAP, local
 * catastrophic, as on MSG), and what waits for the peer fails with
 * FI_ECONNREFUSED / IWARP_PROV_ERRNO_AUTH. Not retried: a key does not
 * change by trying again.
 */
static void rdm_iw_auth_fail(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			     const char *why)
{
	bool ours;

	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: job key authentication failed on %s: %s; "
		"connection refused\n", c->name, iw_qp_label(qp), why);
	ours = rdm_iw_auth_detach(c, qp);
	/* detached first: its CM event finds it no longer c's */
	iw_qp_abort(qp);
	if (ours)
		c->xe->up->unreachable(c->peer, FI_ECONNREFUSED,
				       IWARP_PROV_ERRNO_AUTH);
}

/* Initiator: the Reply's proof; NULL or why the connection is refused. */
static const char *rdm_iw_auth_reply(struct iwarp_rdm_xconn *c,
				     struct rdm_iw_auth *s,
				     const struct iw_cm_event *ev)
{
	switch (iwarp_auth_pd_get(&s->a, &c->xe->key, ev->pdata,
				  ev->pdata_len)) {
	case 0:
		return NULL;
	case -FI_EACCES:
		return "wrong proof in its Reply (another key, or a replayed "
		       "handshake)";
	case -FI_EINVAL:
		return "its Reply carries no job key block of this version";
	default:
		return "its Reply's proof could not be checked";
	}
}

/* The peer's proof checked: the gate opens. */
static void rdm_iw_auth_open(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			     struct rdm_iw_auth *s)
{
	s->gated = false;
	c->gated--;
	iw_qp_gate(qp, false);
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: %s proved the job key\n", c->name,
		iw_qp_label(qp));
}

/* Initiator: the Reply's proof checked, ours goes as our first Send.
 * NULL, or why the connection is refused. */
static const char *rdm_iw_auth_active(struct iwarp_rdm_xconn *c,
				      struct iw_qp *qp, struct rdm_iw_auth *s,
				      const struct iw_cm_event *ev)
{
	struct iw_sge sge = { s->proof, IWARP_AUTH_MSG_LEN };
	struct iw_send_wr wr = {
		.ctx = s,	/* inside c: ours, not the protocol's */
		.op = IW_WR_SEND,
		.flags = IW_WR_INLINE,
		.sgl = &sge,
		.num_sge = 1,
	};
	const char *why = rdm_iw_auth_reply(c, s, ev);

	if (!why && (iwarp_auth_msg_put(s->proof, &c->xe->key, &s->a) ||
		     iw_qp_post_send(qp, &wr)))
		why = "our proof could not be sent";
	if (!why)
		rdm_iw_auth_open(c, qp, s);
	return why;
}

bool rdm_iw_auth_established(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			     const struct iw_cm_event *ev)
{
	struct rdm_iw_auth *s = rdm_iw_auth_of(c, qp);
	const char *why = "no handshake for this connection";

	if (s) {
		s->established = true;
		/* the responder's proof went in its Reply */
		why = s->a.initiator ? rdm_iw_auth_active(c, qp, s, ev) : NULL;
	}
	if (why)
		rdm_iw_auth_fail(c, qp, why);
	return !why;
}

int rdm_iw_auth_proof_in(struct iwarp_rdm_xconn *c, struct iw_qp *qp,
			 const struct iw_place *p)
{
	struct rdm_iw_auth *s = rdm_iw_auth_of(c, qp);
	int ret = -FI_EINVAL;

	if (p->last && p->seg_len == IWARP_AUTH_MSG_LEN)
		ret = iwarp_auth_msg_check(&s->a, &c->xe->key, p->peek,
					   p->peek_len);
	if (ret) {
		rdm_iw_auth_fail(c, qp, ret == -FI_EACCES ?
			"wrong proof (another key, or a replayed handshake)" :
			"its first message is no proof of the key");
		return 0;	/* discarded; the QP is buried */
	}
	rdm_iw_auth_open(c, qp, s);
	rdm_iw_ready(c, qp);
	return 0;
}

static void rdm_iw_req_from(struct iw_conn_req *req, char *buf, size_t len)
{
	union iwarp_sockaddr from;
	socklen_t alen = sizeof(from);

	memset(&from, 0, sizeof(from));
	iw_conn_req_getpeer(req, &from.sa, &alen);
	iwarp_addr_str(&from, buf, len);
}

bool rdm_iw_auth_request(struct iwarp_rdm_xep *xe, struct iw_conn_req *req,
			 const uint8_t *pd, size_t len, size_t *rdm_off)
{
	struct iwarp_auth scratch = { .initiator = false };
	bool has = !iwarp_auth_pd_get(&scratch, NULL, pd, len);
	char from[64];

	*rdm_off = has ? IWARP_AUTH_PD_LEN : 0;
	if (has == rdm_iw_keyed(xe))
		return true;
	rdm_iw_req_from(req, from, sizeof(from));
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL, "RDM connection request from "
		"%s %s: refused (job key)\n", from, has ?
		"offers a job key, but this endpoint has none" :
		"carries no job key, which this endpoint requires");
	rdm_iw_reject(xe, req, IWARP_RDM_KEYREF);
	return false;
}

void rdm_iw_auth_refused(struct iwarp_rdm_xconn *c, struct iw_qp *qp)
{
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s refused our connection %s for the job key (%s): "
		"not retried\n", c->name, rdm_iw_label(qp),
		rdm_iw_keyed(c->xe) ? "it has none" : "it requires one");
	c->tries = 0;
	c->xe->up->unreachable(c->peer, FI_ECONNREFUSED,
			       IWARP_PROV_ERRNO_AUTH);
}

/* ---- restart claims */

/* The newcomer takes the place of the live connection. */
static void rdm_iw_replace(struct iwarp_rdm_xconn *c, struct iw_conn_req *req)
{
	if (c->qp) {
		rdm_iw_auth_end(c, c->qp);
		rdm_iw_bury(c->xe, c->qp);
		c->qp = NULL;
	}
	if (c->up) {
		c->up = false;
		c->xe->up->lost(c->peer, FI_EIO);
	}
	c->instance = c->nc_instance;
	c->shm = c->nc_shm;
	c->wide = c->nc_wide;
	rdm_iw_accept_into(c, req, false, c->nc_rfc7306, NULL);
}

/* The probe ended: ok, the live connection answered. */
static void rdm_iw_probe_end(struct iwarp_rdm_xconn *c, bool ok,
			     const char *why)
{
	struct iw_conn_req *req = c->held;

	c->probe_until = 0;
	if (!req)
		return;
	c->held = NULL;
	iw_conn_req_set_ctx(req, NULL);
	if (ok) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
			"RDM peer %s: request from %s claiming a restart "
			"(instance %#" PRIx64 ") refused: the live connection "
			"%s answered a probe\n", c->name, c->nc_from,
			c->nc_instance, rdm_iw_label(c->qp));
		rdm_iw_reject(c->xe, req, 0);
		return;
	}
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: the live connection %s %s: the restarted peer "
		"at %s (instance %#" PRIx64 ") replaces it\n", c->name,
		rdm_iw_label(c->qp), why, c->nc_from, c->nc_instance);
	rdm_iw_replace(c, req);
}

void rdm_iw_probe_done(struct iwarp_rdm_xconn *c, bool ok)
{
	rdm_iw_probe_end(c, ok, "failed a probe");
}

void rdm_iw_probe_tick(struct iwarp_rdm_xconn *c)
{
	if (iw_now_ms() >= c->probe_until)
		rdm_iw_probe_end(c, false, "did not answer a probe in time");
}

void rdm_iw_claim_lost(struct iwarp_rdm_xconn *c)
{
	if (c->held)
		rdm_iw_probe_end(c, false, "was lost");
}

void rdm_iw_claim_dropped(struct iwarp_rdm_xconn *c, struct iw_conn_req *req)
{
	if (c->held != req)
		return;
	FI_INFO(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: the held request from %s went away\n", c->name,
		c->nc_from);
	c->held = NULL;
	c->probe_until = 0;
}

void rdm_iw_claim_close(struct iwarp_rdm_xconn *c)
{
	if (c->held)
		iw_reject(c->held, NULL, 0);
	c->held = NULL;
	c->probe_until = 0;
}

/* Without a key: hold the request, probe the live connection with a
 * zero-length Read that only a live peer answers. */
static void rdm_iw_hold(struct iwarp_rdm_xconn *c, struct iw_conn_req *req)
{
	struct iw_send_wr wr = {
		.ctx = &c->probe_until,	/* inside c: ours */
		.op = IW_WR_READ,
		.flags = IW_WR_SIGNALED,
	};

	c->held = req;
	iw_conn_req_set_ctx(req, c);
	c->probe_until = iw_now_ms() + (uint64_t)iwarp_params.rdm_probe_ms;
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: request from %s claims a restart (instance "
		"%#" PRIx64 ", live %#" PRIx64 "): held while the live "
		"connection %s is probed (up to %d ms)\n", c->name, c->nc_from,
		c->nc_instance, c->instance, rdm_iw_label(c->qp),
		iwarp_params.rdm_probe_ms);
	if (iw_qp_post_send(c->qp, &wr))
		rdm_iw_probe_end(c, false, "took no probe");
}

void rdm_iw_claim(struct iwarp_rdm_xconn *c, struct iw_conn_req *req,
		  const struct iwarp_rdm_pdata *them, const uint8_t *apd)
{
	char from[64];

	rdm_iw_req_from(req, from, sizeof(from));
	if (c->held || c->candidate || c->rx_qp) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
			"RDM peer %s: request from %s claiming a restart "
			"while another is pending: refused\n", c->name, from);
		rdm_iw_reject(c->xe, req, 0);
		return;
	}
	memcpy(c->nc_from, from, sizeof(from));
	c->nc_instance = them->instance;
	c->nc_rfc7306 = them->version & IWARP_RDM_RFC7306;
	c->nc_shm = them->version & IWARP_RDM_SHM;
	c->nc_wide = them->version & IWARP_RDM_WIDE;
	if (!apd) {
		rdm_iw_hold(c, req);
		return;
	}
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: request from %s claims a restart (instance "
		"%#" PRIx64 ", live %#" PRIx64 " on %s): it replaces the live "
		"connection only once it proves the job key\n", c->name, from,
		c->nc_instance, c->instance, rdm_iw_label(c->qp));
	c->candidate = true;
	if (rdm_iw_accept_into(c, req, true, c->nc_rfc7306, apd))
		c->candidate = false;
}

void rdm_iw_promote(struct iwarp_rdm_xconn *c)
{
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: %s proved the job key: the restarted peer "
		"(instance %#" PRIx64 ") replaces %s\n", c->name,
		iw_qp_label(c->rx_qp), c->nc_instance, rdm_iw_label(c->qp));
	if (c->qp) {
		rdm_iw_auth_end(c, c->qp);
		rdm_iw_bury(c->xe, c->qp);
	}
	c->qp = c->rx_qp;
	c->rx_qp = NULL;
	iwarp_pollable_reset(&c->poll);
	iwarp_pollable_reset(&c->rx_poll);
	c->candidate = false;
	c->initiated = false;
	c->instance = c->nc_instance;
	c->rfc7306 = iwarp_params.rfc7306 && c->nc_rfc7306;
	c->shm = c->nc_shm;
	c->wide = c->nc_wide;
	if (c->up) {
		c->up = false;
		c->xe->up->lost(c->peer, FI_EIO);
	}
}

void rdm_iw_candidate_gone(struct iwarp_rdm_xconn *c)
{
	c->candidate = false;
	FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
		"RDM peer %s: the request from %s claiming a restart did not "
		"prove the job key: refused; %s stays\n", c->name, c->nc_from,
		rdm_iw_label(c->qp));
}
