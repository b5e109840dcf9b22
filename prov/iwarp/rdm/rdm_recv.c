/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the transport reports to the RDM protocol (rdm_xport.h upcalls):
 * incoming messages, checked against the credits and lengths they must
 * keep and dispatched by op to the feature that handles them, completions
 * of posted work, and connection events.
 */
#include "rdm.h"

#include <inttypes.h>
#include <stdlib.h>

/* How each op arrives: where its payload goes (none without place), what
 * it does once whole, and how a message cut short is undone. */
struct iwarp_rdm_rx_op {
	int (*place)(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in,
		     struct iw_sge *dst);
	void (*in)(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in);
	void (*drop)(struct iwarp_rdm_peer *peer, struct iwarp_rdm_in *in);
};

/* AREQ and ARESP: the payload into a buffer of ours. */
static int iwarp_rdm_place_buf(struct iwarp_rdm_peer *peer,
			       struct iwarp_rdm_in *in, struct iw_sge *dst)
{
	if (in->hdr.len > IWARP_RDM_ATOMIC_PAYLOAD_MAX) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
			"RDM peer %s: op %u with %u octets, at most %u\n",
			peer->name, in->hdr.op, in->hdr.len,
			IWARP_RDM_ATOMIC_PAYLOAD_MAX);
		return -1;
	}
	if (!in->hdr.len)
		return 0;
	in->abuf = malloc(in->hdr.len);
	if (!in->abuf)
		return -1;
	dst[0].addr = in->abuf;
	dst[0].len = in->hdr.len;
	return 1;
}

static const struct iwarp_rdm_rx_op iwarp_rdm_rx_ops[IWARP_RDM_OP_MAX + 1] = {
	[IWARP_RDM_EAGER] = { .place = iwarp_rdm_eager_place,
			      .in = iwarp_rdm_eager_in,
			      .drop = iwarp_rdm_eager_drop },
	[IWARP_RDM_RTS] = { .in = iwarp_rdm_rts_in },
	[IWARP_RDM_FIN] = { .in = iwarp_rdm_fin_in },
	/* CREDIT: the credits every header carries are all */
	[IWARP_RDM_CREDIT] = { 0 },
	[IWARP_RDM_WDATA] = { .in = iwarp_rdm_wdata_in },
	[IWARP_RDM_AREQ] = { .place = iwarp_rdm_place_buf,
			     .in = iwarp_rdm_areq_in },
	[IWARP_RDM_ARESP] = { .place = iwarp_rdm_place_buf,
			      .in = iwarp_rdm_aresp_in },
};

static void iwarp_rdm_bad_hdr(struct iwarp_rdm_peer *peer, const uint8_t *p,
			      size_t len)
{
	if (len < IWARP_RDM_HDR_LEN)
		FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
			"RDM peer %s: header of %zu octets, not %u: refused\n",
			peer->name, len, IWARP_RDM_HDR_LEN);
	else
		FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
			"RDM peer %s: header with op %u (1-%u), credits %u "
			"(at most %u): refused\n", peer->name, p[0],
			IWARP_RDM_OP_MAX, iw_get16(p + 2), peer->window);
}

/* Credits are what bound our memory: none left, no message. */
static bool iwarp_rdm_take_credit(struct iwarp_rdm_peer *peer, uint8_t op)
{
	if (!peer->granted) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
			"RDM peer %s: op %u beyond its credits (0 of %u "
			"left)\n", peer->name, op, peer->window);
		return false;
	}
	peer->granted--;
	return true;
}

/*
 * A WDATA reports a Write with CQ data as a completion with no context of
 * ours: only an endpoint that takes remote Writes expects one. Elsewhere
 * (Open MPI's mtl ofi asks FI_TAGGED alone) it is a peer forging one.
 */
static bool iwarp_rdm_wdata_ok(struct iwarp_rdm_peer *peer)
{
	if (iwarp_caps_rwrite(peer->ep->base.info->caps))
		return true;
	FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
		"RDM peer %s: Write data for an endpoint without "
		"FI_RMA and FI_REMOTE_WRITE: refused\n", peer->name);
	return false;
}

/* Placement of an incoming message: its header decides where it goes. */
static int iwarp_rdm_place(struct iwarp_rdm_peer *peer, const uint8_t *hdr,
			   size_t hdr_len, struct iw_sge *dst, void **ctx)
{
	struct iwarp_rdm_in *in;
	const struct iwarp_rdm_rx_op *o;
	int n = 0;

	in = iwarp_stash_get(&peer->ep->in_stash, sizeof(*in));
	if (!in)
		return -1;
	if (iwarp_rdm_hdr_get(hdr, hdr_len, &in->hdr) ||
	    in->hdr.credits > peer->window) {
		iwarp_rdm_bad_hdr(peer, hdr, hdr_len);
		free(in);
		return -1;	/* not our protocol: terminate */
	}
	if (IWARP_RDM_RXC(in->hdr.flags) >= iwarp_rdm_nrx(peer->ep)) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
			"RDM peer %s: op %u for rx context %u of %zu: "
			"refused\n", peer->name, in->hdr.op,
			IWARP_RDM_RXC(in->hdr.flags), iwarp_rdm_nrx(peer->ep));
		free(in);
		return -1;
	}
	if (in->hdr.op == IWARP_RDM_WDATA && !iwarp_rdm_wdata_ok(peer)) {
		free(in);
		return -1;
	}
	o = &iwarp_rdm_rx_ops[in->hdr.op];
	if ((in->hdr.op == IWARP_RDM_EAGER || in->hdr.op == IWARP_RDM_RTS) &&
	    in->hdr.len > peer->xp->stream_eager(peer->xc)) {
		peer->big_rx = true;
		peer->big_rx_at = peer->big_tx;
	}
	if (iwarp_rdm_counted(in->hdr.op) &&
	    !iwarp_rdm_take_credit(peer, in->hdr.op))
		n = -1;
	else if (o->place)
		n = o->place(peer, in, dst);
	if (n < 0) {
		free(in);
		*ctx = NULL;
		return -1;
	}
	*ctx = in;
	return n;
}

/* Takes the credits a message returns; false if it came short. */
static bool iwarp_rdm_whole(struct iwarp_rdm_peer *peer,
			    struct iwarp_rdm_in *in, uint64_t len)
{
	iwarp_rdm_credits_in(peer, in->hdr.credits);
	if ((in->hdr.op != IWARP_RDM_EAGER && !in->abuf) ||
	    len == (uint64_t)IWARP_RDM_HDR_LEN + in->hdr.len)
		return true;
	/* shorter than its header says: garbage in the buffer */
	FI_WARN(&iwarp_prov, FI_LOG_EP_DATA,
		"RDM peer %s: message of %" PRIu64 " octets announced %u: "
		"dropped\n", peer->name, len, IWARP_RDM_HDR_LEN + in->hdr.len);
	if (iwarp_rdm_counted(in->hdr.op))
		iwarp_rdm_owe(peer);
	return false;
}

static void iwarp_rdm_recv(struct iwarp_rdm_peer *peer, void *ctx,
			   uint64_t len, bool ok)
{
	struct iwarp_rdm_in *in = ctx;
	const struct iwarp_rdm_rx_op *o = &iwarp_rdm_rx_ops[in->hdr.op];
	struct iwarp_rdm_ep *ep = peer->ep;

	if (ok && iwarp_rdm_whole(peer, in, len)) {
		if (o->in)
			o->in(peer, in);
		iwarp_rdm_flush(peer);
	} else if (o->drop) {	/* half a message is worth nothing */
		o->drop(peer, in);
	}
	if (in->abuf)
		free(in->abuf);
	iwarp_stash_put(&ep->in_stash, in);
}

/*
 * What place, the payload's copy and recv do for an EAGER that arrived
 * whole, in one step: the way of a shared-memory slot's small message.
 * Anything else (another op, a header to refuse, no credit, a receive
 * that is not a plain one) is left to place, which reports it.
 */
static bool iwarp_rdm_recv_whole(struct iwarp_rdm_peer *peer,
				 const uint8_t *hdr, size_t hdr_len,
				 const uint8_t *payload, uint32_t len)
{
	struct iwarp_rdm_ep *ep = peer->ep;
	struct iwarp_rdm_hdr h;

	if (hdr_len < IWARP_RDM_HDR_LEN || hdr[0] != IWARP_RDM_EAGER ||
	    iwarp_rdm_hdr_get(hdr, hdr_len, &h) || h.len != len ||
	    h.len > IWARP_RDM_EAGER_MAX || h.credits > peer->window ||
	    !peer->granted || IWARP_RDM_RXC(h.flags) >= iwarp_rdm_nrx(ep) ||
	    h.len > peer->xp->stream_eager(peer->xc) ||
	    !iwarp_rdm_eager_whole(peer, &h, payload))
		return false;
	iwarp_rdm_flush(peer);
	return true;
}

/* A work request completed: a rendezvous Read of ours, or part of a tx. */
static void iwarp_rdm_done(struct iwarp_rdm_peer *peer, void *ctx, int err,
			   int prov_errno)
{
	/* both records start with their owner */
	if (*(const uint8_t *)ctx == IWARP_RDM_OWN_RX)
		iwarp_rdm_read_done(ctx, err);
	else
		iwarp_rdm_tx_wr_done(peer->ep, ctx, err, prov_errno);
}

/* FI_RMA_EVENT: rendezvous sources have no mr_ctx, so they do not
 * count */
static void iwarp_rdm_target(struct iwarp_rdm_ep *ep, bool write,
			     void *mr_ctx)
{
	iwarp_rma_target(&ep->base, write, mr_ctx);
}

const struct iwarp_rdm_upcalls iwarp_rdm_upcalls = {
	.peer = iwarp_rdm_peer_xconn,
	.queued = iwarp_rdm_queued,
	.place = iwarp_rdm_place,
	.recv = iwarp_rdm_recv,
	.recv_whole = iwarp_rdm_recv_whole,
	.done = iwarp_rdm_done,
	.connected = iwarp_rdm_connected,
	.lost = iwarp_rdm_lost,
	.unreachable = iwarp_rdm_unreachable,
	.target = iwarp_rdm_target,
	.poll_add = iwarp_rdm_poll_add,
	.poll_del = iwarp_rdm_poll_del,
};
