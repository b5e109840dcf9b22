/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection setup: RFC 5044 §7 startup with the RFC 6581 enhancements
 * (IRD/ORD negotiation §9.1, peer-to-peer mode and RTR §9.2, interop
 * §10). Sockets are non-blocking; frames are read octet-exact so that
 * FPDUs following a frame stay in the socket for the receive stream.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1	/* accept4 */
#endif
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "iw_priv.h"

#define NO_NEG MPA_IRD_ORD_NO_NEG

void iw_cm_defaults(struct iw_conn_param *p)
{
	if (!p->rev)
		p->rev = 2;
	if (!p->rtr)
		p->rtr = IW_RTR_ALL;
	if (!p->max_ird)
		p->max_ird = IW_MAX_IRD;
	if (!p->max_rev)
		p->max_rev = 2;
	if (!p->timeout_ms)
		p->timeout_ms = IW_DEFAULT_TIMEOUT_MS;
}

static uint16_t u16min(uint16_t a, uint16_t b)
{
	return a < b ? a : b;
}

static uint16_t u16max(uint16_t a, uint16_t b)
{
	return a > b ? a : b;
}

/* RFC 6581 §9.1, responder side. A local 0x3FFF means "the ULP decides":
 * it is advertised as such and max_ird bounds the queue. */
int iw_negotiate_responder(struct iw_ird_ord local, uint16_t max_ird,
			   uint16_t ord_min, struct iw_ird_ord peer,
			   bool read_rtr, struct iw_ird_ord *reply,
			   struct iw_ird_ord *use, struct iw_err *err)
{
	if (!max_ird || max_ird >= NO_NEG)
		max_ird = IW_MAX_IRD;

	/* our IRD answers the initiator's ORD */
	if (peer.ord == NO_NEG || local.ird == NO_NEG) {
		use->ird = local.ird == NO_NEG ? max_ird : local.ird;
		reply->ird = NO_NEG;
	} else {
		uint16_t ird = u16max(local.ird, u16min(peer.ord, max_ird));

		if (read_rtr && !ird)
			ird = 1;	/* the zero-length Read RTR needs one */
		use->ird = reply->ird = ird;
	}
	/* our ORD is bounded by the initiator's IRD */
	if (peer.ird == NO_NEG || local.ord == NO_NEG) {
		use->ord = local.ord == NO_NEG ? max_ird : local.ord;
		reply->ord = NO_NEG;
		return 0;
	}
	if (ord_min && peer.ird < ord_min) {
		reply->ord = ord_min;	/* tells the initiator what we need */
		use->ord = 0;
		return iw_fail(err, IW_LAYER_LLP, MPA_ETYPE,
			       MPA_ECODE_INSUFFICIENT_IRD,
			       "initiator IRD below the ORD we need");
	}
	use->ord = reply->ord = u16min(local.ord, peer.ird);
	return 0;
}

/* RFC 6581 §9.1, initiator side. */
int iw_negotiate_initiator(struct iw_ird_ord local, uint16_t max_ird,
			   struct iw_ird_ord reply, struct iw_ird_ord *use,
			   struct iw_err *err)
{
	if (!max_ird || max_ird >= NO_NEG)
		max_ird = IW_MAX_IRD;
	use->ird = local.ird == NO_NEG ? max_ird : local.ird;
	use->ord = local.ord == NO_NEG ? max_ird : local.ord;

	if (reply.ird != NO_NEG && local.ord != NO_NEG)
		use->ord = u16min(use->ord, reply.ird);
	if (reply.ord != NO_NEG && local.ird != NO_NEG &&
	    reply.ord > use->ird) {
		if (reply.ord > max_ird)
			return iw_fail(err, IW_LAYER_LLP, MPA_ETYPE,
				       MPA_ECODE_INSUFFICIENT_IRD,
				       "responder ORD above our IRD limit");
		use->ird = reply.ord;
	}
	return 0;
}

/* Logs an MPA frame's octets after the key (flags, rev, PD_Length,
 * private data) at info level: interop logs show what was negotiated. */
static void iw_log_frame(struct iw_dev *dev, const char *who,
			 const char *what, const uint8_t *f, size_t len)
{
	char hex[3 * 32 + 8];
	size_t i, n = 0;

	for (i = MPA_KEY_LEN; i < len && i < MPA_KEY_LEN + 32; i++)
		n += (size_t)snprintf(hex + n, sizeof(hex) - n, " %02x", f[i]);
	if (i < len)
		snprintf(hex + n, sizeof(hex) - n, " ...");
	iw_log(dev, IW_LOG_INFO, "%s: MPA %s:%s", who, what, hex);
}

/* The key of a frame that failed, printable, against the one due. */
static void iw_log_bad_key(struct iw_dev *dev, int level, const char *who,
			   const uint8_t *f, size_t len, enum mpa_kind kind)
{
	const char *key = kind == MPA_REQUEST ? MPA_KEY_REQ : MPA_KEY_REP;
	char got[MPA_KEY_LEN + 1];
	size_t i;

	if (len > MPA_KEY_LEN)
		len = MPA_KEY_LEN;
	if (!memcmp(f, key, len))
		return;
	for (i = 0; i < len; i++)
		got[i] = f[i] >= 0x20 && f[i] < 0x7f ? (char)f[i] : '.';
	got[i] = 0;
	iw_log(dev, level, "%s: wrong MPA key: got \"%s\", expected "
	       "\"%s\"", who, got, key);
}

/* "req <local>-<peer>": a connection request in log lines. */
static const char *iw_req_label(const struct iw_conn_req *req, char *buf,
				size_t size)
{
	struct sockaddr_storage a = { 0 }, b = { 0 };
	socklen_t al = sizeof(a), bl = sizeof(b);
	char la[64] = "-", pa[64] = "-";

	if (req->fd >= 0 && !getsockname(req->fd, (struct sockaddr *)&a, &al))
		iw_sa_str(&a, la, sizeof(la));
	if (req->fd >= 0 && !getpeername(req->fd, (struct sockaddr *)&b, &bl))
		iw_sa_str(&b, pa, sizeof(pa));
	snprintf(buf, size, "req %s-%s", la, pa);
	return buf;
}

/* ---- sockets */

static int iw_sock_nodelay(int fd)
{
	int one = 1;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * Two ends on this host have no congestion to control, and a controller
 * that paces (BBR) lets a loopback stream out by timer: osu_bw of
 * 128 KiB after 64 KiB ran at 2.3-4.3 GB/s paced, 5.6-5.8 not. Reno
 * paces nothing and any process may choose it. It is set before the
 * handshake: a pacing controller, once started, leaves its socket paced.
 */
#define IW_LOCAL_CC "reno"

static int iw_sock_cc(int fd, const char *name)
{
	return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name,
			  (socklen_t)strlen(name));
}

static bool iw_sa_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			>> 24) == 127;
	if (sa->sa_family != AF_INET6)
		return false;
	return IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr) ||
	       (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) &&
		s6->sin6_addr.s6_addr[12] == 127);
}

/* Reads octets of an MPA frame without reading past it. Returns 1 when
 * complete, 0 need more, -EAGAIN/-errno, -ECONNRESET on EOF, -EPROTO. */
static int iw_read_frame(int fd, uint8_t *buf, size_t *have,
			 enum mpa_kind kind, struct mpa_frame *f,
			 struct iw_err *err)
{
	for (;;) {
		ssize_t want = mpa_frame_len(buf, *have), n;
		int ret;

		if (want == -EAGAIN)
			want = MPA_HDR_LEN;
		if (want > MPA_HDR_LEN + MPA_MAX_PD)
			want = MPA_HDR_LEN;	/* parse reports the error */
		if ((size_t)want > *have) {
			n = recv(fd, buf + *have, (size_t)want - *have, 0);
			if (n == 0)
				return -ECONNRESET;
			if (n < 0)
				return errno == EINTR ? 0 : -errno;
			*have += (size_t)n;
		}
		ret = mpa_frame_parse(buf, *have, kind, f, err);
		if (ret == 0)
			return 1;
		if (ret != -EAGAIN)
			return ret;
	}
}

static int iw_cm_check_param(const struct iw_conn_param *p)
{
	bool enh = p->rev == 2 && !p->no_enhanced;

	if (p->rev != 1 && p->rev != 2)
		return -EINVAL;
	if (p->pdata_len > MPA_MAX_PD - (enh ? MPA_ENH_LEN : 0) ||
	    (p->pdata_len && !p->pdata))
		return -EINVAL;
	if (p->ird > NO_NEG || p->ord > NO_NEG)
		return -EINVAL;
	return 0;
}

/* ---- initiator */

static int iw_cm_socket(int family)
{
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd >= 0)
		iw_sock_nodelay(fd);
	return fd;
}

int iw_qp_presock(struct iw_qp *qp, int family)
{
	if (qp->cm != CM_IDLE || qp->spare_fd >= 0)
		return 0;
	qp->spare_fd = iw_cm_socket(family);
	qp->spare_family = family;
	return qp->spare_fd < 0 ? -errno : 0;
}

/* To a peer on this host: IW_LOCAL_CC, said at info either way. */
static void iw_connect_cc(struct iw_qp *qp, int fd, const struct sockaddr *sa)
{
	bool local = iw_sa_loopback(sa) ||
		     (qp->src_len &&
		      iw_sa_same_ip((const struct sockaddr *)&qp->src, sa));
	char name[64];

	if (local && iw_sock_cc(fd, IW_LOCAL_CC))
		local = false;
	iw_sa_str((const struct sockaddr_storage *)sa, name, sizeof(name));
	iw_log(qp->pd->dev, IW_LOG_INFO, "TCP to %s: %s: %s congestion "
	       "control", name, local ? "on this host" : "on another host",
	       local ? IW_LOCAL_CC : "the system's");
}

static int iw_cm_tcp_connect(struct iw_qp *qp)
{
	const struct sockaddr *sa = (const struct sockaddr *)&qp->dst;
	int fd = qp->spare_fd;

	qp->spare_fd = -1;
	if (fd >= 0 && qp->spare_family != sa->sa_family) {
		iw_fd_close(fd);
		fd = -1;
	}
	if (fd < 0)
		fd = iw_cm_socket(sa->sa_family);
	if (fd < 0)
		return -errno;
	if (qp->src_len) {
		int one = 1;

		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (const struct sockaddr *)&qp->src, qp->src_len)) {
			int ret = -errno;

			iw_fd_close(fd);
			return ret;
		}
	}
	iw_connect_cc(qp, fd, sa);
	if (connect(fd, sa, qp->dst_len) && errno != EINPROGRESS) {
		int ret = -errno;

		iw_fd_close(fd);
		return ret;
	}
	qp->fd = fd;
	qp->cm = CM_TCP_CONNECT;
	qp->deadline = iw_now_ms() + qp->param.timeout_ms;
	return 0;
}

static int iw_cm_send_request(struct iw_qp *qp);

/* Whether a connect() in progress on fd is through (writable, no error);
 * on loopback it is by the time connect() returns. */
static bool iw_cm_established(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLOUT };

	return poll(&pf, 1, 0) == 1 && pf.revents == POLLOUT;
}

int iw_qp_connect(struct iw_qp *qp, const struct sockaddr *dst,
		  socklen_t len, const struct iw_conn_param *param)
{
	int ret;

	if (qp->cm != CM_IDLE || len > sizeof(qp->dst))
		return -EINVAL;
	qp->param = *param;
	iw_cm_defaults(&qp->param);
	ret = iw_cm_check_param(&qp->param);
	if (ret)
		return ret;
	if (param->pdata_len)
		memcpy(qp->pdata, param->pdata, param->pdata_len);
	qp->param.pdata = qp->pdata;
	memcpy(&qp->dst, dst, len);
	qp->dst_len = len;
	if (param->src && param->src_len <= sizeof(qp->src)) {
		memcpy(&qp->src, param->src, param->src_len);
		qp->src_len = param->src_len;
	}
	qp->param.src = NULL;
	qp->initiator = true;
	ret = iw_cm_tcp_connect(qp);
	/* the Request leaves now, not a progress turn later; a connect
	 * still under way, or failed, is progress's, and so is a send the
	 * peer refused (its reset ends the wait for the Reply): errors go
	 * up as events from there, never from inside this call */
	if (!ret && iw_cm_established(qp->fd) && !iw_cm_send_request(qp))
		(void)iw_tx_pump(qp);
	return ret;
}

static int iw_cm_send_request(struct iw_qp *qp)
{
	const struct iw_conn_param *p = &qp->param;
	struct mpa_frame f = {
		.kind = MPA_REQUEST,
		.rev = qp->retried ? 1 : p->rev,
		.crc = p->crc,
		.markers = p->markers,
	};
	uint8_t buf[IW_CTRL_MAX];
	ssize_t n;

	f.enhanced = f.rev == 2 && !p->no_enhanced;
	if (f.enhanced) {
		f.p2p = !p->client_server;
		f.rtr = f.p2p ? p->rtr : 0;
		f.ird = p->ird;
		f.ord = p->ord;
	}
	qp->rev = f.rev;
	qp->enhanced = f.enhanced;
	n = mpa_frame_build(buf, sizeof(buf), &f, p->pdata, p->pdata_len);
	if (n < 0)
		return (int)n;
	qp->rep_have = 0;
	qp->cm = CM_WAIT_REP;
	qp->deadline = iw_now_ms() + p->timeout_ms;
	if (iw_log_on(qp->pd->dev, IW_LOG_INFO))
		iw_log_frame(qp->pd->dev, iw_qp_label(qp), "Request sent", buf,
			     (size_t)n);
	return iw_qp_ctrl(qp, buf, (size_t)n);
}

static void iw_cm_unreachable(struct iw_qp *qp, int status,
			      const struct iw_err *err)
{
	struct iw_cm_event ev = {
		.type = IW_CM_UNREACHABLE,
		.status = status,
	};

	bool report = !qp->ev_final;
	char why[160];

	if (err)
		ev.err = *err;
	else
		iw_fail(&ev.err, IW_LAYER_LLP, MPA_ETYPE, MPA_ECODE_CLOSED,
			"connection closed during MPA startup");
	iw_qp_log(qp, IW_LOG_INFO, "connection setup failed: %s (%s)",
		  strerror(-status), iw_err_why(&ev.err, why, sizeof(why)));
	iw_qp_close_socket(qp, true);
	qp->ev_final = true;	/* this event, not a generic error */
	iw_qp_fatal(qp, &ev.err, NULL, false);
	if (report)
		iw_qp_event(qp, &ev);
}

/* The connection closed while we waited for the Reply: a rev-1 responder
 * does that to a rev-2 Request (RFC 6581 §10); retry once with rev 1. */
static int iw_cm_reply_eof(struct iw_qp *qp, int status)
{
	if (qp->param.retry_rev1 && !qp->retried && qp->rev == 2) {
		iw_qp_log(qp, IW_LOG_INFO, "MPA rev 2 refused, retrying rev 1");
		iw_qp_close_socket(qp, false);
		qp->retried = true;
		qp->ctrl_len = qp->ctrl_off = 0;
		if (!iw_cm_tcp_connect(qp))
			return 0;
	}
	iw_cm_unreachable(qp, status, NULL);
	return -ECONNRESET;
}

/* Picks the RTR to send from what the responder allows, preferring
 * Write, then Read, then Send (the order Linux siw uses). */
static uint8_t iw_cm_pick_rtr(uint8_t allowed)
{
	if (allowed & IW_RTR_WRITE)
		return IW_RTR_WRITE;
	if (allowed & IW_RTR_READ)
		return IW_RTR_READ;
	if (allowed & IW_RTR_SEND)
		return IW_RTR_SEND;
	return 0;
}

void iw_cm_fill_event(struct iw_qp *qp, const struct mpa_frame *f,
		      struct iw_cm_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->rev = f->rev;
	ev->enhanced = f->enhanced;
	ev->p2p = f->p2p;
	ev->rtr = f->rtr;
	ev->peer_ird = f->ird;
	ev->peer_ord = f->ord;
	memcpy(qp->peer_pdata, f->ulp_pd, f->ulp_pd_len);
	ev->pdata = qp->peer_pdata;
	ev->pdata_len = f->ulp_pd_len;
}

static void iw_cm_rejected(struct iw_qp *qp, const struct mpa_frame *f)
{
	struct iw_cm_event ev;

	bool report = !qp->ev_final;

	iw_cm_fill_event(qp, f, &ev);
	ev.type = IW_CM_REJECTED;
	ev.status = -ECONNREFUSED;
	iw_qp_close_socket(qp, false);
	qp->ev_final = true;	/* this event, not a generic error */
	iw_qp_fatal(qp, &ev.err, NULL, false);
	if (report)
		iw_qp_event(qp, &ev);
}

/* IRD and ORD from the Reply (RFC 6581 §9.1); a Reply without the
 * enhanced block negotiates nothing. */
static int iw_cm_reply_ird_ord(struct iw_qp *qp, const struct mpa_frame *f,
			       struct iw_err *err)
{
	const struct iw_conn_param *p = &qp->param;
	struct iw_ird_ord local = { p->ird, p->ord }, use = local;
	struct iw_ird_ord peer = { NO_NEG, NO_NEG };
	int ret;

	if (qp->enhanced && f->enhanced)
		peer = (struct iw_ird_ord){ f->ird, f->ord };
	ret = iw_negotiate_initiator(local, p->max_ird, peer, &use, err);
	qp->ird = use.ird;
	qp->ord = use.ord;
	return qp->enhanced && f->enhanced ? ret : 0;
}

/* Full operation begins for the initiator once the Reply is accepted. */
static int iw_cm_reply_accepted(struct iw_qp *qp, const struct mpa_frame *f)
{
	const struct iw_conn_param *p = &qp->param;
	struct iw_err err = { 0 };
	int ret;

	iw_cm_fill_event(qp, f, &qp->est);
	qp->crc = p->crc || f->crc;
	qp->markers_tx = f->markers;
	qp->markers_rx = p->markers;
	qp->p2p = qp->enhanced && f->enhanced && f->p2p && !p->client_server;
	ret = iw_cm_reply_ird_ord(qp, f, &err);
	if (iw_qp_setup_full_op(qp))
		iw_fail(&err, IW_LAYER_LLP, MPA_ETYPE,
			MPA_ECODE_LOCAL_CATASTROPHIC, "out of memory");
	else if (!ret && p->crc_strict && !f->crc)
		ret = iw_fail(&err, IW_LAYER_LLP, MPA_ETYPE,
			      MPA_ECODE_LOCAL_CATASTROPHIC,
			      "peer declined CRC");
	if (!ret && !err.why && qp->p2p) {
		qp->rtr_used = iw_cm_pick_rtr(f->rtr & p->rtr);
		if (!qp->rtr_used)
			ret = iw_fail(&err, IW_LAYER_LLP, MPA_ETYPE,
				      MPA_ECODE_NO_RTR,
				      "no RTR type in common");
	}
	if (ret || err.why) {
		char why[160];

		iw_qp_log(qp, IW_LOG_WARN, "MPA Reply refused: %s",
			  err.why ? iw_err_why(&err, why, sizeof(why)) : "?");
		iw_qp_fatal(qp, &err, NULL, true);
		return -EPROTO;
	}
	if (p->rtr_delay_ms)
		qp->tx_hold = iw_now_ms() + p->rtr_delay_ms;
	if (qp->p2p) {
		qp->rtr_pending = true;
		qp->cm = CM_SEND_RTR;
		return 0;
	}
	iw_qp_established(qp);
	return 0;
}

static int iw_cm_read_reply(struct iw_qp *qp)
{
	struct mpa_frame f;
	struct iw_err err = { 0 };
	int ret;

	ret = iw_read_frame(qp->fd, qp->rep, &qp->rep_have, MPA_REPLY, &f,
			    &err);
	if (ret == 0 || ret == -EAGAIN)
		return 0;
	if (ret == -ECONNRESET || ret == -EPIPE)
		return iw_cm_reply_eof(qp, ret);
	if (ret < 0) {
		char why[160];

		if (ret == -EPROTO)
			iw_qp_log(qp, IW_LOG_WARN, "bad MPA Reply: %s",
				  err.why ? iw_err_why(&err, why, sizeof(why)) :
					    "too long");
		if (ret == -EPROTO)
			iw_log_bad_key(qp->pd->dev, IW_LOG_WARN,
				       iw_qp_label(qp), qp->rep,
				       qp->rep_have, MPA_REPLY);
		if (ret == -EPROTO && !err.why)
			iw_fail(&err, IW_LAYER_LLP, MPA_ETYPE,
				MPA_ECODE_REQ_REP, "bad MPA Reply");
		iw_cm_unreachable(qp, ret, ret == -EPROTO ? &err : NULL);
		return ret;
	}
	if (iw_log_on(qp->pd->dev, IW_LOG_INFO))
		iw_log_frame(qp->pd->dev, iw_qp_label(qp), "Reply received",
			     qp->rep, qp->rep_have);
	if (f.reject) {
		iw_cm_rejected(qp, &f);
		return -ECONNREFUSED;
	}
	if (f.rev > qp->rev) {
		iw_fail_v(&err, IW_LAYER_LLP, MPA_ETYPE, MPA_ECODE_REQ_REP,
			  "Reply revision above the Request's", f.rev,
			  qp->rev);
		iw_qp_log(qp, IW_LOG_WARN, "MPA Reply revision %u, expected "
			  "at most %u", f.rev, qp->rev);
		iw_cm_unreachable(qp, -EPROTO, &err);
		return -EPROTO;
	}
	return iw_cm_reply_accepted(qp, &f);
}

static int iw_cm_connected(struct iw_qp *qp)
{
	int soerr = 0;
	socklen_t sl = sizeof(soerr);

	if (getsockopt(qp->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl))
		soerr = errno;
	if (soerr == EINPROGRESS || soerr == EALREADY)
		return 0;
	if (soerr) {
		iw_cm_unreachable(qp, -soerr, NULL);
		return -soerr;
	}
	return iw_cm_send_request(qp);
}

/* Drives the setup phases; called from iw_qp_progress. */
int iw_cm_progress(struct iw_qp *qp)
{
	struct iw_err err = { 0 };

	if (qp->deadline && iw_now_ms() >= qp->deadline) {
		switch (qp->cm) {
		case CM_TCP_CONNECT:
		case CM_WAIT_REP:
			iw_cm_unreachable(qp, -ETIMEDOUT, NULL);
			return -ETIMEDOUT;
		case CM_SEND_RTR:
		case CM_WAIT_RTR:
			iw_fail(&err, IW_LAYER_LLP, MPA_ETYPE,
				MPA_ECODE_LOCAL_CATASTROPHIC,
				"RTR phase timed out");
			iw_qp_fatal(qp, &err, NULL, true);
			return -ETIMEDOUT;
		default:
			break;
		}
	}
	switch (qp->cm) {
	case CM_TCP_CONNECT:
		return iw_cm_connected(qp);
	case CM_WAIT_REP:
		return iw_cm_read_reply(qp);
	default:
		return 0;
	}
}

/* ---- passive side */

/* an overflow burst is over (and logged) after this long without one */
#define IW_BURST_QUIET_MS 1000

/* ptr: the request the socket belongs to, NULL for the listening one */
static int iw_epoll_add(int efd, int fd, void *ptr)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ptr };

	return epoll_ctl(efd, EPOLL_CTL_ADD, fd, &ev);
}

static uint32_t iw_dflt_pending, iw_dflt_mpa_ms;

void iw_listen_set_defaults(uint32_t max_pending, uint32_t mpa_timeout_ms)
{
	iw_dflt_pending = max_pending;
	iw_dflt_mpa_ms = mpa_timeout_ms;
}

/* The listener's bounds: its param's, else the process-wide defaults,
 * else the built-in ones. A Request never gets longer than a phase. */
static void iw_listen_bounds(struct iw_listener *l)
{
	struct iw_conn_param *p = &l->param;

	if (!p->max_pending)
		p->max_pending = iw_dflt_pending ? iw_dflt_pending :
						   IW_DEFAULT_LISTEN_PENDING;
	if (!p->mpa_timeout_ms)
		p->mpa_timeout_ms = iw_dflt_mpa_ms ? iw_dflt_mpa_ms :
						     IW_DEFAULT_MPA_TIMEOUT_MS;
	if (p->mpa_timeout_ms > p->timeout_ms)
		p->mpa_timeout_ms = p->timeout_ms;
	l->st.max_pending = p->max_pending;
	l->st.mpa_timeout_ms = p->mpa_timeout_ms;
}

static void iw_listen_name(struct iw_listener *l)
{
	socklen_t al = sizeof(l->addr);

	if (getsockname(l->fd, (struct sockaddr *)&l->addr, &al)) {
		snprintf(l->name, sizeof(l->name), "fd %d", l->fd);
		return;
	}
	l->addr_len = al;
	iw_sa_str(&l->addr, l->name, sizeof(l->name));
}

/* Accepted sockets start with the listener's congestion control, chosen
 * before their handshake: IW_LOCAL_CC, and the system's given back to a
 * peer on another host once accepted. */
static void iw_listen_cc(struct iw_listener *l)
{
	socklen_t n = sizeof(l->cc) - 1;

	memset(l->cc, 0, sizeof(l->cc));
	if (getsockopt(l->fd, IPPROTO_TCP, TCP_CONGESTION, l->cc, &n) ||
	    !strcmp(l->cc, IW_LOCAL_CC) || iw_sock_cc(l->fd, IW_LOCAL_CC))
		l->cc[0] = 0;
}

int iw_listen(struct iw_dev *dev, const struct sockaddr *addr,
	      socklen_t len, int backlog, const struct iw_conn_param *param,
	      const struct iw_listener_ops *ops, void *arg,
	      struct iw_listener **lp)
{
	struct iw_listener *l = calloc(1, sizeof(*l));
	int one = 1, ret;

	if (!l)
		return -ENOMEM;
	l->dev = dev;
	if (param)
		l->param = *param;
	iw_cm_defaults(&l->param);
	iw_listen_bounds(l);
	l->ops = ops;
	l->arg = arg;
	l->fd = socket(addr->sa_family,
		       SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (l->fd < 0)
		goto err_free;
	setsockopt(l->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* accepted sockets inherit it: a QP that takes one sets nothing */
	iw_sock_nodelay(l->fd);
	iw_listen_cc(l);
	if (bind(l->fd, addr, len) || listen(l->fd, backlog > 0 ? backlog :
							     128))
		goto err_close;
	iw_listen_name(l);
	/* without it requests being read are only looked at when the
	 * caller polls again for another reason (iw_listener_busy) */
	l->efd = epoll_create1(EPOLL_CLOEXEC);
	if (l->efd >= 0 && iw_epoll_add(l->efd, l->fd, NULL)) {
		iw_fd_close(l->efd);
		l->efd = -1;
	}
	*lp = l;
	return 0;
err_close:
	ret = -errno;
	iw_fd_close(l->fd);
	free(l);
	return ret;
err_free:
	ret = -errno;
	free(l);
	return ret;
}

/* A request is off the listener's epoll set once offered or dropped. */
static void iw_req_unwatch(struct iw_conn_req *req)
{
	if (req->watched) {
		epoll_ctl(req->l->efd, EPOLL_CTL_DEL, req->fd, NULL);
		req->l->nwatched--;
	}
	req->watched = false;
}

static void iw_req_unlink(struct iw_conn_req *req)
{
	struct iw_conn_req **pp;

	for (pp = &req->l->reqs; *pp; pp = &(*pp)->next)
		if (*pp == req) {
			*pp = req->next;
			req->l->st.pending--;
			break;
		}
}

static void iw_req_drop(struct iw_conn_req *req, const char *why)
{
	struct iw_listener *l = req->l;

	char who[160];

	iw_log(l->dev, IW_LOG_INFO, "%s: dropping connection request: %s",
	       iw_req_label(req, who, sizeof(who)), why);
	iw_req_unlink(req);
	if (req->notified && l->ops && l->ops->conn_dropped)
		l->ops->conn_dropped(l->arg, req);
	if (req->fd >= 0) {
		iw_req_unwatch(req);
		iw_fd_close(req->fd);
	}
	free(req);
}

static void iw_burst_end(struct iw_listener *l, uint64_t now, bool force);

/*
 * Closes with a reset: a connection dropped unfinished (stalled, evicted,
 * garbage) leaves no TIME_WAIT behind, which a flood of them would pile
 * up in the kernel by the ten thousand.
 */
static void iw_sock_reset_on_close(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

static void iw_req_abort(struct iw_conn_req *req, const char *why)
{
	if (req->fd >= 0)
		iw_sock_reset_on_close(req->fd);
	iw_req_drop(req, why);
}

int iw_listener_close(struct iw_listener *l)
{
	iw_burst_end(l, iw_now_ms(), true);
	while (l->reqs)
		iw_req_drop(l->reqs, "listener closed");
	if (l->efd >= 0)
		iw_fd_close(l->efd);
	iw_fd_close(l->fd);
	free(l);
	return 0;
}

int iw_listener_fd(const struct iw_listener *l)
{
	return l->efd >= 0 ? l->efd : l->fd;
}

int iw_listener_getname(const struct iw_listener *l, struct sockaddr *sa,
			socklen_t *len)
{
	return getsockname(l->fd, sa, len) ? -errno : 0;
}

uint64_t iw_listener_deadline(const struct iw_listener *l)
{
	const struct iw_conn_req *r;
	uint64_t d = 0;

	for (r = l->reqs; r; r = r->next)
		if (!d || r->deadline < d)
			d = r->deadline;
	if (l->accept_after && (!d || l->accept_after < d))
		d = l->accept_after;
	if (l->burst_start && (!d || l->burst_last + IW_BURST_QUIET_MS < d))
		d = l->burst_last + IW_BURST_QUIET_MS;
	return d;
}

void iw_listener_stats(const struct iw_listener *l,
		       struct iw_listener_stats *st)
{
	*st = l->st;
}

bool iw_listener_accepting(const struct iw_listener *l)
{
	return !l->accept_after || iw_now_ms() >= l->accept_after;
}

bool iw_listener_busy(const struct iw_listener *l)
{
	const struct iw_conn_req *r;

	if (l->efd >= 0)
		return false;	/* their sockets are in the epoll set */
	for (r = l->reqs; r; r = r->next)
		if (!r->notified)
			return true;
	return false;
}

void iw_conn_req_set_ctx(struct iw_conn_req *req, void *ctx)
{
	req->ctx = ctx;
}

void *iw_conn_req_ctx(const struct iw_conn_req *req)
{
	return req->ctx;
}

/* An address as getsockname(2) gives it: cut to *len, *len the size. */
static void iw_sa_give(const struct sockaddr_storage *a, socklen_t alen,
		       struct sockaddr *sa, socklen_t *len)
{
	memcpy(sa, a, *len < alen ? *len : alen);
	*len = alen;
}

/* A connection's local address is the listener's unless it listens on
 * every address. */
static bool iw_listener_specific(const struct iw_listener *l)
{
	const struct sockaddr_in *in = (const void *)&l->addr;
	const struct sockaddr_in6 *in6 = (const void *)&l->addr;

	if (!l->addr_len)
		return false;
	if (l->addr.ss_family == AF_INET)
		return in->sin_addr.s_addr != htonl(INADDR_ANY);
	return l->addr.ss_family == AF_INET6 &&
	       !IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr) &&
	       !IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr);
}

int iw_conn_req_getname(const struct iw_conn_req *req, struct sockaddr *sa,
			socklen_t *len)
{
	if (req->fd >= 0 && iw_listener_specific(req->l)) {
		iw_sa_give(&req->l->addr, req->l->addr_len, sa, len);
		return 0;
	}
	return getsockname(req->fd, sa, len) ? -errno : 0;
}

int iw_conn_req_getpeer(const struct iw_conn_req *req, struct sockaddr *sa,
			socklen_t *len)
{
	if (req->fd >= 0 && req->peer_len) {
		iw_sa_give(&req->peer, req->peer_len, sa, len);
		return 0;
	}
	return getpeername(req->fd, sa, len) ? -errno : 0;
}

/*
 * Out of descriptors (or socket memory), accept() fails while the
 * connection stays queued and the listening socket readable: polling it
 * would spin. Stop polling it for a while instead (iw_listener_accepting)
 * and retry then; the queued peers wait, bounded by their own timeout.
 */
#define IW_ACCEPT_BACKOFF_MS 100

static bool iw_accept_starved(int err)
{
	return err == EMFILE || err == ENFILE || err == ENOBUFS ||
	       err == ENOMEM;
}

/* The connection did not fit: counted, and logged once per burst. */
static void iw_burst_note(struct iw_listener *l, bool evicted)
{
	uint64_t now = iw_now_ms();

	if (!l->burst_start) {
		l->burst_start = now;
		iw_log(l->dev, IW_LOG_WARN, "listener %s: %u connections "
		       "pending (the cap): %s", l->name, l->param.max_pending,
		       evicted ? "closing the oldest without a complete MPA "
				 "Request" :
				 "refusing new ones until the ULP decides");
	}
	l->burst_last = now;
	if (evicted)
		l->burst_evicted++;
	else
		l->burst_refused++;
}

/* A burst ends after IW_BURST_QUIET_MS without overflow. */
static void iw_burst_end(struct iw_listener *l, uint64_t now, bool force)
{
	if (!l->burst_start ||
	    (!force && now < l->burst_last + IW_BURST_QUIET_MS))
		return;
	iw_log(l->dev, IW_LOG_WARN, "listener %s: over its cap of %u for "
	       "%llu ms: closed %llu connections without a complete MPA "
	       "Request, refused %llu", l->name, l->param.max_pending,
	       (unsigned long long)(l->burst_last - l->burst_start),
	       (unsigned long long)l->burst_evicted,
	       (unsigned long long)l->burst_refused);
	l->burst_start = l->burst_last = 0;
	l->burst_evicted = l->burst_refused = 0;
}

enum { IW_ROOM, IW_ROOM_LATER, IW_ROOM_NONE };

/*
 * Makes room for one more connection under the cap. The oldest request
 * still without a complete MPA Request goes: a real peer sends its
 * Request as soon as it is connected, so the one holding a slot longest
 * without finishing is the likeliest to stall on purpose, and closing it
 * (rather than refusing newcomers) keeps a peer that holds many idle or
 * half-sent sockets from locking real peers out. Requests no read pass
 * has looked at yet are spared (IW_ROOM_LATER: look first); offered ones
 * are the ULP's (IW_ROOM_NONE when only those are left).
 */
static int iw_listener_room(struct iw_listener *l)
{
	struct iw_conn_req *r, *victim = NULL;
	bool unread = false;

	if (l->st.pending < l->param.max_pending)
		return IW_ROOM;
	for (r = l->reqs; r; r = r->next) {	/* newest first */
		if (r->notified)
			continue;
		if (r->pass)
			victim = r;
		else
			unread = true;	/* accepted since the last pass */
	}
	if (!victim)
		return unread ? IW_ROOM_LATER : IW_ROOM_NONE;
	l->st.evicted++;
	iw_burst_note(l, true);
	iw_req_abort(victim, "listener full: no complete MPA Request yet");
	return IW_ROOM;
}

/* accept(2), or -1; backs off while out of descriptors. */
static int iw_accept_fd(struct iw_listener *l, struct sockaddr_storage *peer,
			socklen_t *plen)
{
	int fd = accept4(l->fd, (struct sockaddr *)peer, plen,
			 SOCK_NONBLOCK | SOCK_CLOEXEC);

	if (fd >= 0) {
		l->starved = false;
		return fd;
	}
	if (!iw_accept_starved(errno))
		return -1;
	if (!l->starved)
		iw_log(l->dev, IW_LOG_INFO, "listener %s: accept: %s; "
		       "retrying every %d ms", l->name, strerror(errno),
		       IW_ACCEPT_BACKOFF_MS);
	l->starved = true;
	l->accept_after = iw_now_ms() + IW_ACCEPT_BACKOFF_MS;
	return -1;
}

/* An accepted connection's two ends are on this host. */
static bool iw_accepted_local(int fd, const struct sockaddr_storage *peer)
{
	struct sockaddr_storage me;
	socklen_t n = sizeof(me);

	if (iw_sa_loopback((const struct sockaddr *)peer))
		return true;
	return !getsockname(fd, (struct sockaddr *)&me, &n) &&
	       iw_sa_same_ip((const struct sockaddr *)&me,
			     (const struct sockaddr *)peer);
}

static void iw_req_add(struct iw_listener *l, int fd,
		       const struct sockaddr_storage *peer, socklen_t plen)
{
	struct iw_conn_req *req = calloc(1, sizeof(*req));

	if (!req) {
		iw_fd_close(fd);
		return;
	}
	if (l->cc[0] && !iw_accepted_local(fd, peer)) {
		char name[64];

		iw_sa_str(peer, name, sizeof(name));
		iw_log(l->dev, IW_LOG_INFO, "listener %s: TCP from %s: on "
		       "another host: congestion control %s%s", l->name, name,
		       l->cc, iw_sock_cc(fd, l->cc) ? " refused" : "");
	}
	req->l = l;
	req->fd = fd;
	if (plen <= sizeof(req->peer)) {
		memcpy(&req->peer, peer, plen);
		req->peer_len = plen;
	}
	req->deadline = iw_now_ms() + l->param.mpa_timeout_ms;
	req->next = l->reqs;
	l->reqs = req;
	req->fresh = true;	/* watched only if the first read is short */
	l->st.accepted++;
	if (++l->st.pending > l->st.pending_max)
		l->st.pending_max = l->st.pending;
}

static void iw_listener_accept_tcp(struct iw_listener *l)
{
	if (!iw_listener_accepting(l))
		return;
	l->accept_after = 0;
	for (;;) {
		int room = iw_listener_room(l), fd;
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);

		if (room == IW_ROOM_LATER)
			return;	/* the listening socket stays readable */
		/* poll() first: a failing accept4 makes and frees a socket,
		 * several microseconds on every EQ read */
		if (iw_sock_still(l->fd, &l->accept_dry, POLLIN))
			return;
		fd = iw_accept_fd(l, &peer, &plen);
		l->accept_dry = true;
		if (fd < 0)
			return;
		if (room == IW_ROOM) {
			iw_req_add(l, fd, &peer, plen);
			continue;
		}
		/* taken and closed at once: left queued, it would keep the
		 * listening socket readable and the caller spinning */
		iw_sock_reset_on_close(fd);
		iw_fd_close(fd);
		l->st.refused++;
		iw_burst_note(l, false);
	}
}

/* Reply with R set; best effort on a fresh socket, then close. */
static void iw_req_send_reject(struct iw_conn_req *req, const void *pdata,
			       uint16_t len, const struct iw_ird_ord *io)
{
	struct mpa_frame r = {
		.kind = MPA_REPLY,
		.rev = req->f.rev,
		.reject = true,
		.crc = req->f.crc,
		.enhanced = req->f.enhanced,
		.p2p = req->f.p2p,
	};
	uint8_t buf[IW_CTRL_MAX];
	char who[160] = "";
	ssize_t n;

	if (io) {
		r.ird = io->ird;
		r.ord = io->ord;
	}
	if (r.enhanced && len > MPA_MAX_PD - MPA_ENH_LEN)
		len = MPA_MAX_PD - MPA_ENH_LEN;
	n = mpa_frame_build(buf, sizeof(buf), &r, pdata, len);
	if (iw_log_on(req->l->dev, IW_LOG_INFO))
		iw_req_label(req, who, sizeof(who));
	if (n > 0 && iw_log_on(req->l->dev, IW_LOG_INFO))
		iw_log_frame(req->l->dev, who, "Reply (reject) sent", buf,
			     (size_t)n);
	if (n > 0 && send(req->fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
		iw_log(req->l->dev, IW_LOG_INFO, "%s: reject frame not fully "
		       "sent", who);
}

enum { IW_REQ_WAIT, IW_REQ_READY, IW_REQ_DROPPED };

/* Garbage can come by the thousand: warn once a second, the rest at
 * info (the listener's stats count them all). */
static int iw_bad_key_level(struct iw_listener *l)
{
	uint64_t now = iw_now_ms();

	if (l->bad_key_at && now < l->bad_key_at + IW_BURST_QUIET_MS)
		return IW_LOG_INFO;
	l->bad_key_at = now;
	return IW_LOG_WARN;
}

/* A Request that failed to parse, or a socket that failed: dropped. */
static int iw_req_bad(struct iw_conn_req *req, int ret,
		      const struct iw_err *err)
{
	char who[160], why[160];

	req->l->st.bad++;
	if (ret == -EPROTO)
		iw_log_bad_key(req->l->dev, iw_bad_key_level(req->l),
			       iw_req_label(req, who, sizeof(who)), req->buf,
			       req->have, MPA_REQUEST);
	iw_req_abort(req, ret != -EPROTO ? "connection closed during MPA "
					   "Request" :
			 err->why ? iw_err_why(err, why, sizeof(why)) :
				    "bad MPA Request");
	return IW_REQ_DROPPED;
}

/* Reads what has arrived of a Request; drops bad or refused ones. */
static int iw_req_read(struct iw_conn_req *req)
{
	struct iw_listener *l = req->l;
	struct iw_err err = { 0 };
	char who[160] = "";
	int ret;

	ret = iw_read_frame(req->fd, req->buf, &req->have, MPA_REQUEST,
			    &req->f, &err);
	if (ret == 0 || ret == -EAGAIN)
		return IW_REQ_WAIT;
	if (ret < 0)
		return iw_req_bad(req, ret, &err);
	if (iw_log_on(l->dev, IW_LOG_INFO))
		iw_log_frame(l->dev, iw_req_label(req, who, sizeof(who)),
			     "Request received", req->buf, req->have);
	/* a responder of a lower revision closes (RFC 6581 §10) */
	if (req->f.rev > l->param.max_rev) {
		iw_log(l->dev, IW_LOG_INFO, "%s: MPA revision %u, expected at "
		       "most %u", who, req->f.rev, l->param.max_rev);
		l->st.bad++;
		iw_req_drop(req, "MPA revision above what we accept");
		return IW_REQ_DROPPED;
	}
	if (req->f.markers && l->param.refuse_markers) {
		iw_req_send_reject(req, NULL, 0, NULL);
		l->st.bad++;
		iw_req_drop(req, "peer asks for markers");
		return IW_REQ_DROPPED;
	}
	return IW_REQ_READY;
}

static void iw_req_offer(struct iw_conn_req *req)
{
	struct iw_listener *l = req->l;
	struct iw_cm_event ev = {
		.type = IW_CM_CONNECT_REQUEST,
		.rev = req->f.rev,
		.enhanced = req->f.enhanced,
		.p2p = req->f.p2p,
		.rtr = req->f.rtr,
		.peer_ird = req->f.ird,
		.peer_ord = req->f.ord,
		.pdata = req->f.ulp_pd,
		.pdata_len = req->f.ulp_pd_len,
		.crc = req->f.crc,
		.markers_tx = req->f.markers,
	};

	req->notified = true;
	l->st.offered++;
	iw_req_unwatch(req);
	req->deadline = iw_now_ms() + l->param.timeout_ms;
	if (l->ops && l->ops->conn_request)
		l->ops->conn_request(l->arg, req, &ev);
}

/* Closes requests past their deadline: a Request still incomplete after
 * mpa_timeout_ms, or one the ULP left undecided for timeout_ms. */
static void iw_listener_expire(struct iw_listener *l, uint64_t now)
{
	struct iw_conn_req *req, *next;

	for (req = l->reqs; req; req = next) {
		next = req->next;
		if (!req->deadline || now < req->deadline)
			continue;
		l->st.timed_out++;
		iw_req_abort(req, req->notified ? "timed out: no decision" :
				 "timed out: no complete MPA Request");
	}
}

/*
 * Marks the requests whose sockets have octets (or an end) waiting, so
 * that a pass reads those alone: under a flood, reading every pending
 * socket on every call would cost the cap in syscalls each time. The
 * set is level-triggered: each call returns the ones the last did not.
 */
static void iw_listener_ready(struct iw_listener *l)
{
	struct epoll_event ev[64];
	uint32_t rounds = l->st.pending / 64 + 1;
	int n, i;

	while (rounds--) {
		n = epoll_wait(l->efd, ev, 64, 0);
		for (i = 0; i < n; i++)
			if (ev[i].data.ptr)
				((struct iw_conn_req *)ev[i].data.ptr)->ready =
					true;
		if (n < 64)
			break;
	}
}

/* Reads what has arrived of the request: IW_REQ_*. */
static int iw_req_step(struct iw_conn_req *req)
{
	struct iw_listener *l = req->l;
	int ret;

	if (req->fresh) {
		req->fresh = false;
		ret = iw_req_read(req);
		if (ret == IW_REQ_WAIT) {
			req->watched = l->efd >= 0 &&
				       !iw_epoll_add(l->efd, req->fd, req);
			l->nwatched += req->watched;
		}
		return ret;
	}
	if (req->watched && !req->ready)
		return IW_REQ_WAIT;
	req->ready = false;
	return iw_req_read(req);
}

/*
 * Reads the requests still being received, once per pass; every one the
 * pass has seen counts as looked at (iw_listener_room). A drop or a
 * callback may change the list (the ULP can accept or reject any
 * request): rescan after each, skipping those this pass has seen.
 */
static void iw_listener_read(struct iw_listener *l)
{
	struct iw_conn_req *req;
	uint32_t pass = ++l->pass;

	if (!pass)
		pass = ++l->pass;	/* 0 means "never looked at" */
	if (l->nwatched)
		iw_listener_ready(l);
restart:
	for (req = l->reqs; req; req = req->next) {
		if (req->notified || req->pass == pass)
			continue;
		req->pass = pass;
		switch (iw_req_step(req)) {
		case IW_REQ_READY:
			iw_req_offer(req);
			goto restart;
		case IW_REQ_DROPPED:
			goto restart;
		default:
			break;
		}
	}
}

int iw_listener_progress(struct iw_listener *l)
{
	uint64_t now = iw_now_ms();

	iw_listener_expire(l, now);
	iw_listener_accept_tcp(l);
	iw_listener_read(l);
	iw_burst_end(l, now, false);
	return 0;
}

int iw_reject(struct iw_conn_req *req, const void *pdata, uint16_t len)
{
	struct iw_ird_ord zero = { 0, 0 };

	iw_req_send_reject(req, pdata, len, &zero);
	req->notified = false;	/* decided: no conn_dropped */
	iw_req_drop(req, "rejected by the ULP");
	return 0;
}

/* Chooses the Reply's RTR set (RFC 6581 §9.2). */
static uint8_t iw_cm_reply_rtr(const struct iw_conn_param *p, uint8_t offered)
{
	uint8_t ok = offered & p->rtr;

	if (!ok)	/* "MUST set at least one ... it supports" */
		return iw_cm_pick_rtr(p->rtr);
	return p->rtr_reply_all ? ok : iw_cm_pick_rtr(ok);
}

/* Fills the Reply r to the Request and what our side will use;
 * -ECONNREFUSED after rejecting a peer whose IRD is too small. */
static int iw_accept_reply(struct iw_conn_req *req,
			   const struct iw_conn_param *param,
			   const struct iw_conn_param *qparam,
			   struct mpa_frame *r, struct iw_ird_ord *use)
{
	const struct mpa_frame *f = &req->f;
	struct iw_ird_ord reply = { NO_NEG, NO_NEG };
	struct iw_ird_ord local = { param->ird, param->ord };
	struct iw_err err = { 0 };

	r->enhanced = f->enhanced;
	r->crc = param->crc || f->crc;
	r->markers = param->markers;
	if (!f->enhanced) {
		iw_negotiate_responder(local, qparam->max_ird, 0,
				       (struct iw_ird_ord){ NO_NEG, NO_NEG },
				       false, &reply, use, &err);
		return 0;
	}
	r->p2p = f->p2p;
	r->rtr = r->p2p ? iw_cm_reply_rtr(qparam, f->rtr) : 0;
	if (iw_negotiate_responder(local, qparam->max_ird, param->ord_min,
				   (struct iw_ird_ord){ f->ird, f->ord },
				   r->rtr & IW_RTR_READ, &reply, use, &err)) {
		iw_req_send_reject(req, NULL, 0, &reply);
		req->notified = false;
		iw_req_drop(req, err.why);
		return -ECONNREFUSED;
	}
	r->ird = reply.ird;
	r->ord = reply.ord;
	return 0;
}

/* The QP takes over the request's socket and what was agreed. */
static void iw_accept_adopt(struct iw_qp *qp, struct iw_conn_req *req,
			    const struct mpa_frame *r,
			    const struct iw_ird_ord *use)
{
	const struct mpa_frame *f = &req->f;

	iw_cm_fill_event(qp, f, &qp->est);
	qp->initiator = false;
	qp->rev = f->rev;
	qp->enhanced = f->enhanced;
	qp->p2p = r->p2p;
	qp->rtr_set = r->rtr;
	qp->crc = r->crc;
	qp->markers_rx = r->markers;
	qp->markers_tx = f->markers;
	qp->ird = use->ird;
	qp->ord = use->ord;
	qp->fd = req->fd;	/* TCP_NODELAY from the listener */
	req->fd = -1;
	iw_req_unlink(req);
	free(req);
}

int iw_accept(struct iw_conn_req *req, struct iw_qp *qp,
	      const struct iw_conn_param *param)
{
	struct mpa_frame r = { .kind = MPA_REPLY, .rev = req->f.rev };
	struct iw_ird_ord use;
	uint8_t buf[IW_CTRL_MAX];
	ssize_t n;
	int ret;

	if (qp->cm != CM_IDLE)
		return -EINVAL;
	qp->param = *param;
	iw_cm_defaults(&qp->param);
	qp->param.rev = req->f.rev;
	/* the Reply mirrors the Request: no enhanced block, 512 octets */
	qp->param.no_enhanced = !req->f.enhanced;
	ret = iw_cm_check_param(&qp->param);
	if (ret)
		return ret;
	if (param->crc_strict && !req->f.crc) {
		iw_reject(req, NULL, 0);
		return -ECONNREFUSED;
	}
	ret = iw_accept_reply(req, param, &qp->param, &r, &use);
	if (ret)
		return ret;
	n = mpa_frame_build(buf, sizeof(buf), &r, param->pdata,
			    param->pdata_len);
	if (n < 0)
		return (int)n;
	iw_accept_adopt(qp, req, &r, &use);
	if (iw_qp_setup_full_op(qp))
		return -ENOMEM;
	qp->cm = CM_WAIT_RTR;
	qp->deadline = iw_now_ms() + qp->param.timeout_ms;
	if (iw_log_on(qp->pd->dev, IW_LOG_INFO))
		iw_log_frame(qp->pd->dev, iw_qp_label(qp), "Reply sent", buf,
			     (size_t)n);
	return iw_qp_ctrl(qp, buf, (size_t)n);
}
