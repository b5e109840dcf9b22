/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job keys on FI_EP_MSG, through the public API and real sockets: keyed
 * connections carry data and CM data, wrong, missing and one-sided keys
 * are refused with FI_ECONNREFUSED on the EQ and a warning, the order
 * ep_attr > domain_attr > FI_IWARP_AUTH_KEY holds, a recorded handshake
 * replayed to the listener is refused, and raw-socket peers that break
 * the handshake (short auth block, long private data, bad MAC, a proof
 * too long, a Write or a second Send before the proof) end in a precise
 * reject. Raw-socket responders: a Reply carrying the right proof, and
 * nothing sent after it, connects the initiator (its proof, then its
 * first Send follow); a wrong or version 1 proof ends in a Terminate. Each case runs in a process of its own (the provider reads
 * FI_IWARP_AUTH_KEY once) that logs warnings to a file the checks read.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iwarp/wire.h"
#include "msg_util.h"
#include "tap.h"
#include "tcp_info.h"

#define PORT_BASE	24120
#define KEY_A		"job key A 0123456789abcdef"
#define KEY_B		"job key B fedcba9876543210"
#define PD_AUTH		24	/* the Request's auth block */
#define PD_AUTH_REPLY	56	/* the Reply's: with the responder's proof */
#define MSG_AUTH	40	/* the auth message */
#define CM_KEYED	(CM_MAX - PD_AUTH)
#define DATA_LEN	1000

static char log_path[64];

/* ---- reporting from a case's process to the TAP printer */

struct rec {
	char kind;		/* 'y', 'n', 'd' */
	char text[255];
};

static int rec_fd = -1;

static void rec_put(char kind, const char *text)
{
	struct rec r = { .kind = kind };

	snprintf(r.text, sizeof(r.text), "%s", text);
	if (write(rec_fd, &r, sizeof(r)) != sizeof(r))
		_exit(3);
}

static void rec_report(bool ok, const char *text)
{
	rec_put(ok ? 'y' : 'n', text);
}

static void rec_diag(const char *text)
{
	rec_put('d', text);
}

/* ---- the provider's warnings, from both processes of a case */

/* A warning of process pid that contains frag. */
static bool log_has(pid_t pid, const char *frag)
{
	FILE *f = fopen(log_path, "r");
	char line[1024];
	bool found = false;
	int who;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "libfabric:%d:", &who) == 1 &&
			who == pid && strstr(line, "<warn>") &&
			strstr(line, frag);
	fclose(f);
	return found;
}

static bool log_check(pid_t pid, const char *who, const char *frag)
{
	return check(log_has(pid, frag), "the %s logged a warning: \"%s\"",
		     who, frag);
}

/* ---- patterns */

static void fill(uint8_t *p, size_t len, uint64_t seed)
{
	pat_fill(p, len, seed, 0);
}

static bool same(const uint8_t *p, size_t len, uint64_t seed)
{
	return pat_diff(p, len, seed, 0) == SIZE_MAX;
}

/* ---- EQ outcomes */

/* The next event of eq: FI_CONNECTED (1), FI_ECONNREFUSED entry (0). */
static int outcome(struct fid_eq *eq, int ms, struct eq_ev *e)
{
	eq_wait(eq, e, ms);
	if (e->ret > 0 && e->event == FI_CONNECTED)
		return 1;
	if (e->ret == -FI_EAVAIL && e->err.err == FI_ECONNREFUSED)
		return 0;
	return -1;
}

static bool expect_refused(struct fid_eq *eq, const char *what)
{
	struct eq_ev e = { 0 };
	int got = outcome(eq, WAIT_MS, &e);

	return check(got == 0,
		     "%s: an error entry with FI_ECONNREFUSED (%s)", what,
		     eq_ev_str(&e));
}

static int cli_connect_to(struct node *n, const void *addr, const void *data,
			  size_t len)
{
	int ret = n->ep ? 0 : cli_endpoint(n);

	return ret ? ret : fi_connect(n->ep, addr, data, len);
}

static void done_and_wait(struct proc *p)
{
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
	ctl_expect(p, CTL_DONE, NULL, 10000);
}

/* Server: accepts the next request and tells its outcome. */
static int srv_next(struct node *n, const void *data, size_t len)
{
	struct eq_ev req, e = { 0 };
	int ret = srv_connreq(n, &req, WAIT_MS);

	if (!ret)
		ret = srv_endpoint(n, &req);
	if (!ret)
		ret = fi_accept(n->ep, data, len);
	if (ret)
		return -1;
	return outcome(n->ep_eq, WAIT_MS, &e);
}


/* ---- same key: CM data of 228 octets, Sends both ways, an RMA Write */

/* Sends DATA_LEN octets of seed and waits for the completion. */
static bool send_pattern(struct node *n, uint64_t seed)
{
	static uint8_t buf[DATA_LEN];
	struct comp c;
	ssize_t ret;

	fill(buf, sizeof(buf), seed);
	ret = POST_RETRY(n, WAIT_MS, fi_send(n->ep, buf, sizeof(buf), NULL, 0,
					     buf));
	return !ret && cq_take(n, buf, &c, WAIT_MS) && !c.err;
}

/* The receive posted before connecting got the peer's DATA_LEN octets,
 * not its auth message. */
static void recv_pattern(struct node *n, uint8_t *buf, uint64_t seed)
{
	struct comp c = { 0 };
	bool got = cq_take(n, buf, &c, WAIT_MS);

	check(got && !c.err && c.len == DATA_LEN && same(buf, DATA_LEN, seed),
	      "the receive posted before the connection holds the peer's "
	      "first user message (%zu octets, err %d), not its proof",
	      c.len, c.err);
}

static void post_early_recv(struct node *n, uint8_t *buf, size_t len)
{
	memset(buf, 0xee, len);
	check(!fi_recv(n->ep, buf, len, NULL, 0, buf),
	      "a receive posted before the connection");
}

static void cm_size_checks(struct node *n)
{
	size_t v = 0, len = sizeof(v);
	uint8_t big[CM_MAX];
	int ret;

	ret = fi_getopt(&n->ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &v,
			&len);

	check(!ret && v == CM_KEYED,
	      "FI_OPT_CM_DATA_SIZE with a key is %d (got %zu)", CM_KEYED, v);
	memset(big, 0, sizeof(big));
	check(fi_connect(n->ep, n->info->dest_addr, big, CM_KEYED + 1) ==
		      -FI_EINVAL,
	      "fi_connect with %d octets of CM data and a key: -FI_EINVAL",
	      CM_KEYED + 1);
}

/* Client: 512 octets into the server's region, delivered. */
static bool write_region(struct node *n, struct proc *p)
{
	static uint8_t buf[512];
	struct iovec iov = { buf, sizeof(buf) };
	struct fi_rma_iov rma = { 0 };
	struct fi_msg_rma msg = {
		.msg_iov = &iov, .iov_count = 1,
		.rma_iov = &rma, .rma_iov_count = 1, .context = buf,
	};
	struct comp c = { 0 };
	struct ctl m;
	ssize_t ret;

	if (!ctl_expect(p, CTL_KEYS, &m, WAIT_MS))
		return false;
	fill(buf, sizeof(buf), p->seed + 6);
	rma.addr = rma_addr(n, m.v[1], 0);
	rma.len = sizeof(buf);
	rma.key = m.v[0];
	ret = POST_RETRY(n, WAIT_MS, fi_writemsg(n->ep, &msg,
						 FI_DELIVERY_COMPLETE |
						 FI_COMPLETION));
	ret = ret ? ret : !cq_take(n, buf, &c, WAIT_MS) || c.err;
	ctl_send(p, CTL_CHECK_REGION, 0, 0, 0, 0, 0);
	return !ret;
}

/* The server's region for the client's Write, checked after it. */
static void keyed_write_check(struct node *n, struct proc *p)
{
	static uint8_t region[4096];
	struct fid_mr *mr;
	struct ctl m;

	fill(region, sizeof(region), p->seed + 5);
	mr = mr_reg(n, region, sizeof(region), FI_REMOTE_WRITE);
	ctl_send(p, CTL_KEYS, mr ? fi_mr_key(mr) : 0, (uintptr_t)region,
		 sizeof(region), 0, 0);
	check(ctl_wait_serving(n, &m, WAIT_MS) && m.op == CTL_CHECK_REGION &&
	      same(region, 512, p->seed + 6) &&
	      pat_diff(region + 512, sizeof(region) - 512, p->seed + 5,
		       512) == SIZE_MAX,
	      "the client's RMA Write landed once the proofs checked, and "
	      "only where it was aimed");
	if (mr)
		fi_close(&mr->fid);
}

static void keyed_client(struct proc *p)
{
	int got;
	static uint8_t rbuf[4096], cm[CM_KEYED];
	struct node n;
	struct eq_ev e = { 0 };

	setenv("FI_IWARP_AUTH_KEY", KEY_A, 1);
	if (!check(!node_open(&n, p, NULL) && !cli_endpoint(&n) &&
		   ctl_expect(p, CTL_READY, NULL, 10000), "client ready"))
		goto out;
	cm_size_checks(&n);
	post_early_recv(&n, rbuf, sizeof(rbuf));
	fill(cm, sizeof(cm), p->seed + 1);
	got = fi_connect(n.ep, n.info->dest_addr, cm, sizeof(cm));
	got = got ? got : outcome(n.ep_eq, WAIT_MS, &e);
	check(got == 1,
	      "the same FI_IWARP_AUTH_KEY on both sides connects (%s)",
	      eq_ev_str(&e));
	check(e.data_len == CM_KEYED && same(e.u.cm.data, CM_KEYED,
						   p->seed + 2),
	      "FI_CONNECTED carries the server's %d octets of CM data intact "
	      "(got %zu)", CM_KEYED, e.data_len);
	check(send_pattern(&n, p->seed + 3), "a Send to the server completes");
	recv_pattern(&n, rbuf, p->seed + 4);
	check(write_region(&n, p), "an RMA Write to the server completes");
	done_and_wait(p);
	fi_shutdown(n.ep, 0);
out:
	node_close(&n);
}

static void keyed_server(struct proc *p)
{
	int got;
	static uint8_t rbuf[4096], cm[CM_KEYED];
	struct eq_ev req, e = { 0 };
	struct node n;

	setenv("FI_IWARP_AUTH_KEY", KEY_A, 1);
	if (!check(!node_open(&n, p, NULL) &&
		   ctl_send(p, CTL_READY, 0, 0, 0, 0, 0) &&
		   !srv_connreq(&n, &req, 10000), "server got FI_CONNREQ"))
		goto out;
	check(req.data_len == CM_KEYED &&
	      same(req.u.cm.data, CM_KEYED, p->seed + 1),
	      "FI_CONNREQ carries the client's %d octets of CM data, the "
	      "auth block stripped (got %zu)", CM_KEYED, req.data_len);
	if (srv_endpoint(&n, &req))
		goto out;
	post_early_recv(&n, rbuf, sizeof(rbuf));
	fill(cm, sizeof(cm), p->seed + 2);
	got = fi_accept(n.ep, cm, sizeof(cm));
	got = got ? got : outcome(n.ep_eq, WAIT_MS, &e);
	check(got == 1,
	      "the accepted connection reports FI_CONNECTED (%s)",
	      eq_ev_str(&e));
	recv_pattern(&n, rbuf, p->seed + 3);
	check(send_pattern(&n, p->seed + 4), "a Send to the client completes");
	keyed_write_check(&n, p);
	ctl_expect(p, CTL_DONE, NULL, 10000);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
}

/* ---- wrong, missing and one-sided keys */

/* Client of the refusal cases: connects, expects FI_ECONNREFUSED. */
static void refused_client(struct proc *p, const char *what,
			   const char *cli_log, const char *srv_log)
{
	struct node n;

	if (!check(!node_open(&n, p, NULL) &&
		   ctl_expect(p, CTL_READY, NULL, 10000) &&
		   !cli_connect_to(&n, n.info->dest_addr, NULL, 0),
		   "client connecting (%s)", what))
		goto out;
	expect_refused(n.ep_eq, what);
	done_and_wait(p);
	if (cli_log)
		log_check(getpid(), "client", cli_log);
	if (srv_log)
		log_check(p->peer, "server", srv_log);
out:
	node_close(&n);
}

/* Server that accepts and expects FI_ECONNREFUSED (connected: the
 * server has no key and cannot tell, its connection just ends). */
static void refused_server(struct proc *p, bool connects)
{
	struct node n;
	struct eq_ev e = { 0 };
	int got;

	if (!check(!node_open(&n, p, NULL) &&
		   ctl_send(p, CTL_READY, 0, 0, 0, 0, 0),
		   "server listening"))
		goto out;
	got = srv_next(&n, NULL, 0);
	if (!connects) {
		check(got == 0, "fi_accept, then an error entry with "
		      "FI_ECONNREFUSED (%d)", got);
	} else {
		check(got == 1, "without a key: FI_CONNECTED (%d)", got);
		eq_wait(n.ep_eq, &e, WAIT_MS);
		check(e.ret == -FI_EAVAIL ||
		      (e.ret > 0 && e.event == FI_SHUTDOWN),
		      "... and the keyed client ends it (%s)", eq_ev_str(&e));
	}
	ctl_expect(p, CTL_DONE, NULL, 10000);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
}

static void wrong_client(struct proc *p)
{
	p->dom_key = KEY_A;
	refused_client(p, "domain_attr keys differ", "authentication failed",
		       "authentication failed");
}

static void wrong_server(struct proc *p)
{
	p->dom_key = KEY_B;
	refused_server(p, false);
}

static void cli_only_client(struct proc *p)
{
	p->ep_key = KEY_A;
	refused_client(p, "key on the client only",
		       "the Reply carries no auth block", NULL);
}

static void cli_only_server(struct proc *p)
{
	refused_server(p, true);
}

static void srv_only_client(struct proc *p)
{
	refused_client(p, "key on the server only", NULL,
		       "no auth block in its private data");
}

/* A request without an auth block never reaches the user. */
static void srv_only_server(struct proc *p)
{
	struct node n;
	struct eq_ev e = { 0 };

	p->dom_key = KEY_A;
	if (!check(!node_open(&n, p, NULL) &&
		   ctl_send(p, CTL_READY, 0, 0, 0, 0, 0), "server listening"))
		goto out;
	eq_wait(n.eq, &e, 1500);
	check(e.ret == -FI_EAGAIN, "no FI_CONNREQ for a request without an "
	      "auth block (%s)", eq_ev_str(&e));
	ctl_expect(p, CTL_DONE, NULL, 10000);
	ctl_send(p, CTL_DONE, 0, 0, 0, 0, 0);
out:
	node_close(&n);
}

/* ---- ep_attr over domain_attr over FI_IWARP_AUTH_KEY */

#define KEY_EP	"the endpoint's key"
#define KEY_DOM	"the domain's key"
#define KEY_ENV	"the environment's key"

/* The client's keys for each connection; the server's pep has all
 * three (its ep_attr one wins). */
static const struct {
	const char *dom, *ep;
	bool ok;
	const char *what;
} prec[] = {
	{ KEY_DOM, KEY_EP, true, "ep_attr key over domain_attr key" },
	{ KEY_EP, NULL, true, "domain_attr key over FI_IWARP_AUTH_KEY" },
	{ KEY_EP, KEY_DOM, false, "ep_attr key wins over a matching "
				  "domain_attr key" },
	{ NULL, NULL, false, "FI_IWARP_AUTH_KEY alone, the server's "
			     "ep_attr key differs" },
};

static void prec_client(struct proc *p)
{
	int got;
	struct node n;
	struct eq_ev e = { 0 };
	size_t i;

	setenv("FI_IWARP_AUTH_KEY", KEY_ENV, 1);
	if (!check(!node_open(&n, p, NULL) &&
		   ctl_expect(p, CTL_READY, NULL, 10000), "client ready"))
		goto out;
	for (i = 0; i < ARRAY_SIZE(prec); i++) {
		info_keys(n.info, prec[i].dom, prec[i].ep);
		got = cli_connect_to(&n, n.info->dest_addr, NULL, 0);
		got = got ? got : outcome(n.ep_eq, WAIT_MS, &e);
		check(got == (prec[i].ok ? 1 : 0),
		      "%s: %s (%s)", prec[i].what,
		      prec[i].ok ? "connected" : "refused", eq_ev_str(&e));
		ctl_send(p, CTL_NEXT, 0, 0, 0, 0, 0);
		ctl_expect(p, CTL_ACK, NULL, 10000);
		node_close_ep(&n);
	}
out:
	node_close(&n);
}

static void prec_server(struct proc *p)
{
	struct node n;
	size_t i;

	setenv("FI_IWARP_AUTH_KEY", KEY_ENV, 1);
	p->dom_key = KEY_DOM;
	p->ep_key = KEY_EP;
	if (!check(!node_open(&n, p, NULL) &&
		   ctl_send(p, CTL_READY, 0, 0, 0, 0, 0), "server listening"))
		goto out;
	for (i = 0; i < ARRAY_SIZE(prec); i++) {
		check(srv_next(&n, NULL, 0) == (prec[i].ok ? 1 : 0),
		      "%s: %s", prec[i].what,
		      prec[i].ok ? "connected" : "refused");
		ctl_wait_serving(&n, &(struct ctl){ 0 }, 10000);
		node_close_ep(&n);
		ctl_send(p, CTL_ACK, 1, 0, 0, 0, 0);
	}
out:
	node_close(&n);
}

/* ---- raw-socket peers: an initiator written from the wire format */

struct raw {
	int fd;
	bool crc;
	uint8_t rtr;		/* the RTR the Reply chose */
	uint32_t msn;		/* of our next Send */
	struct mpa_frame reply;
	uint8_t rbuf[MPA_HDR_LEN + MPA_MAX_PD];
	uint8_t nonce_i[16];
};

static bool io_full(int fd, void *buf, size_t len, bool rd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = rd ? POLLIN : POLLOUT };
	uint64_t end = now_ms() + (uint64_t)ms;
	size_t done = 0;
	ssize_t n;

	while (done < len && now_ms() < end) {
		if (poll(&pfd, 1, 50) <= 0)
			continue;
		n = rd ? recv(fd, (char *)buf + done, len - done, 0) :
			 send(fd, (const char *)buf + done, len - done,
			      MSG_NOSIGNAL);
		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return done == len;
}

static int raw_dial(int port)
{
	struct sockaddr_in a = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(0x7f000001),
	};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* Reads one MPA frame (Reply) into buf; its length or -1. */
static ssize_t read_frame(int fd, uint8_t *buf, size_t cap)
{
	ssize_t len;

	if (!io_full(fd, buf, MPA_HDR_LEN, true, WAIT_MS))
		return -1;
	len = mpa_frame_len(buf, MPA_HDR_LEN);
	if (len < MPA_HDR_LEN || (size_t)len > cap ||
	    !io_full(fd, buf + MPA_HDR_LEN, (size_t)len - MPA_HDR_LEN, true,
		     WAIT_MS))
		return -1;
	return len;
}

/* A Request with pd, then the Reply. false if no Reply came. */
static bool raw_request(struct raw *r, int port, const void *pd, size_t len)
{
	struct mpa_frame f = {
		.kind = MPA_REQUEST, .rev = 2, .crc = true, .enhanced = true,
		.p2p = true, .rtr = MPA_RTR_WRITE | MPA_RTR_SEND,
		.ird = 8, .ord = 8,
	};
	uint8_t buf[MPA_HDR_LEN + MPA_MAX_PD];
	struct iw_err err;
	ssize_t n;

	r->msn = 1;
	r->fd = raw_dial(port);
	n = mpa_frame_build(buf, sizeof(buf), &f, pd, len);
	if (r->fd < 0 || n < 0 || !io_full(r->fd, buf, (size_t)n, false,
					    WAIT_MS))
		return false;
	n = read_frame(r->fd, r->rbuf, sizeof(r->rbuf));
	if (n < 0 || mpa_frame_parse(r->rbuf, (size_t)n, MPA_REPLY, &r->reply,
				     &err))
		return false;
	r->crc = true;
	r->rtr = r->reply.rtr;
	return true;
}

/* Starts a raw initiator: an auth block with a fresh nonce. */
static void auth_block(struct raw *r, uint8_t *pd)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	memset(pd, 0, PD_AUTH);
	memcpy(pd, "IWAK", 4);
	pd[4] = 2;
	fill(r->nonce_i, sizeof(r->nonce_i), now_ms() ^ (uint64_t)getpid());
	memcpy(pd + 8, r->nonce_i, sizeof(r->nonce_i));
}

static bool raw_fpdu(struct raw *r, const uint8_t *ulpdu, size_t len)
{
	uint8_t buf[4096];
	ssize_t n = mpa_fpdu_build(buf, sizeof(buf), ulpdu, len, r->crc,
				   false, NULL);

	return n > 0 && io_full(r->fd, buf, (size_t)n, false, WAIT_MS);
}

static bool raw_ddp(struct raw *r, struct ddp_hdr *h, const void *data,
		    size_t len)
{
	uint8_t u[2048];
	ssize_t n;

	h->last = true;
	h->ddp_ver = DDP_VERSION;
	h->rdmap_ver = RDMAP_VERSION;
	n = ddp_hdr_build(u, sizeof(u), h);
	if (n < 0 || len > sizeof(u) - (size_t)n)
		return false;
	if (len)
		memcpy(u + n, data, len);
	return raw_fpdu(r, u, (size_t)n + len);
}

static bool raw_send(struct raw *r, const void *data, size_t len)
{
	struct ddp_hdr h = { .opcode = RDMAP_SEND, .qn = DDP_QN_SEND,
			     .msn = r->msn++ };

	return raw_ddp(r, &h, data, len);
}

static bool raw_write(struct raw *r, uint32_t stag, uint64_t to,
		      const void *data, size_t len)
{
	struct ddp_hdr h = { .tagged = true, .opcode = RDMAP_WRITE,
			     .stag = stag, .to = to };

	return raw_ddp(r, &h, data, len);
}

/* The RTR the responder asked for (RFC 6581 §9.2). */
static bool raw_rtr(struct raw *r)
{
	return r->rtr & MPA_RTR_WRITE ? raw_write(r, 0, 0, NULL, 0) :
					raw_send(r, NULL, 0);
}

/* Reads one FPDU: its DDP header and payload. */
static bool raw_next(struct raw *r, struct ddp_hdr *h, uint8_t *pay,
		     size_t cap, size_t *pay_len)
{
	static uint8_t buf[70000];
	struct iw_err err;
	size_t len, hl;

	if (!io_full(r->fd, buf, 2, true, WAIT_MS))
		return false;
	len = iw_get16(buf);
	if (!io_full(r->fd, buf + 2, mpa_fpdu_len(len) - 2, true, WAIT_MS) ||
	    ddp_hdr_parse(buf + 2, len, h, &err))
		return false;
	hl = ddp_hdr_size(buf[2]);
	*pay_len = len - hl < cap ? len - hl : cap;
	memcpy(pay, buf + 2 + hl, *pay_len);
	return true;
}

/* Reads FPDUs until a Terminate (true, *t filled) or the end. */
static bool raw_until_term(struct raw *r, struct rdmap_term *t)
{
	uint8_t pay[256];
	struct ddp_hdr h;
	struct iw_err err;
	size_t len;

	while (raw_next(r, &h, pay, sizeof(pay), &len))
		if (h.opcode == RDMAP_TERMINATE)
			return !rdmap_term_parse(pay, len, t, &err);
	return false;
}

static void raw_close(struct raw *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

/* HMAC-SHA256(key, "iwarp auth 2" | role | nonce_I | nonce_R), as
 * iwarp_auth.h describes it, written here from that text. */
static void hmac(uint8_t *mac, const char *key, char role,
		 const uint8_t *ni, const uint8_t *nr)
{
	uint8_t in[12 + 1 + 32];
	unsigned int len = 32;

	memcpy(in, "iwarp auth 2", 12);
	in[12] = (uint8_t)role;
	memcpy(in + 13, ni, 16);
	memcpy(in + 29, nr, 16);
	HMAC(EVP_sha256(), key, (int)strlen(key), in, sizeof(in), mac, &len);
}

/* The initiator's auth message. */
static void proof(uint8_t *msg, const char *key, char role,
		  const uint8_t *ni, const uint8_t *nr)
{
	memset(msg, 0, MSG_AUTH);
	memcpy(msg, "IWAM", 4);
	msg[4] = 2;
	msg[5] = (uint8_t)role;
	hmac(msg + 8, key, role, ni, nr);
}

/* ---- hostile initiators against a keyed listener */

enum hk { H_GOOD, H_SHORT, H_LONG_PD, H_BAD_MAC, H_LONG_PROOF, H_WRITE,
	  H_TWO_SENDS };

static const struct {
	const char *what;
	bool connreq;		/* the server's user sees the request */
	int result;		/* 1 FI_CONNECTED, 0 FI_ECONNREFUSED */
	const char *log;	/* the server's warning */
} hk[] = {
	[H_GOOD] = { "a raw initiator with the right key", true, 1, NULL },
	[H_SHORT] = { "a short auth block (14 octets)", false, 0,
		      "no auth block in its private data" },
	[H_LONG_PD] = { "private data of 24 + 300 octets", false, 0,
			"private data longer than" },
	[H_BAD_MAC] = { "a proof under another key (bad MAC)", true, 0,
			"wrong proof" },
	[H_LONG_PROOF] = { "a proof of 60 octets", true, 0,
			   "before the peer proved the key" },
	[H_WRITE] = { "an RMA Write to a valid STag before the proof", true,
		      0, "before the peer proved the key" },
	[H_TWO_SENDS] = { "two Sends before the proof", true, 0,
			  "no auth message" },
};

/* Request with an auth block, RTR: true once the Reply came. */
static bool raw_open(struct raw *r, int port)
{
	uint8_t pd[PD_AUTH];

	auth_block(r, pd);
	return raw_request(r, port, pd, sizeof(pd)) && !r->reply.reject &&
	       raw_rtr(r);
}

static const uint8_t *reply_nonce(const struct raw *r)
{
	const struct mpa_frame *f = &r->reply;

	return f->ulp_pd_len >= PD_AUTH_REPLY &&
	       !memcmp(f->ulp_pd, "IWAK", 4) && f->ulp_pd[4] == 2 ?
		       f->ulp_pd + 8 : NULL;
}

/* The right key: the server's proof in its Reply, checked with our own
 * HMAC; ours after the RTR connects. */
static void raw_good(struct raw *r, int port)
{
	uint8_t mine[MSG_AUTH], want[32];
	const uint8_t *nr;

	if (!check(raw_open(r, port) && (nr = reply_nonce(r)),
		   "%s: a Reply with a %d-octet auth block", hk[H_GOOD].what,
		   PD_AUTH_REPLY))
		return;
	hmac(want, KEY_A, 'R', r->nonce_i, nr);
	check(!memcmp(r->reply.ulp_pd + PD_AUTH, want, sizeof(want)),
	      "%s: the Reply carries the server's proof, as iwarp_auth.h "
	      "describes it", hk[H_GOOD].what);
	proof(mine, KEY_A, 'I', r->nonce_i, nr);
	check(raw_send(r, mine, sizeof(mine)), "%s: our proof sent",
	      hk[H_GOOD].what);
}

/* A request the listener must answer with the Reject bit. */
static void raw_rejected(struct raw *r, int port, enum hk k)
{
	uint8_t pd[PD_AUTH + 300];
	size_t len = k == H_SHORT ? 14 : sizeof(pd);

	auth_block(r, pd);
	memset(pd + PD_AUTH, 0x5a, sizeof(pd) - PD_AUTH);
	check(raw_request(r, port, pd, len) && r->reply.reject,
	      "%s: the listener answers with the Reject bit", hk[k].what);
}

static void raw_violate(struct raw *r, int port, enum hk k, uint32_t stag,
			uint64_t to)
{
	uint8_t msg[MSG_AUTH + 60];
	const uint8_t *nr = NULL;
	struct rdmap_term t = { 0 };
	bool sent = raw_open(r, port) && (nr = reply_nonce(r));

	memset(msg, 0x55, sizeof(msg));
	if (sent && k == H_BAD_MAC) {
		proof(msg, KEY_B, 'I', r->nonce_i, nr);
		sent = raw_send(r, msg, MSG_AUTH);
	} else if (sent && k == H_LONG_PROOF) {
		proof(msg, KEY_A, 'I', r->nonce_i, nr);
		sent = raw_send(r, msg, 60);
	} else if (sent && k == H_WRITE) {
		sent = raw_write(r, stag, to, msg, 64);
	} else if (sent) {
		sent = raw_send(r, msg, MSG_AUTH);
		/* the listener may already have ended the stream over the
		 * first: what counts is the Terminate it sent */
		if (sent)
			raw_send(r, msg, 100);
	}
	sent = sent && raw_until_term(r, &t);
	check(sent &&
	      (k != H_WRITE || (t.layer == IW_LAYER_DDP &&
				t.etype == DDP_ETYPE_TAGGED &&
				t.ecode == DDP_ECODE_T_INVALID_STAG)) &&
	      (k != H_LONG_PROOF || (t.layer == IW_LAYER_DDP &&
				     t.etype == DDP_ETYPE_UNTAGGED &&
				     t.ecode == DDP_ECODE_UT_TOO_LONG)) &&
	      (k != H_BAD_MAC || (t.layer == IW_LAYER_RDMAP &&
				  t.etype == RDMAP_ETYPE_CATASTROPHIC &&
				  t.ecode == 0)),
	      "%s: the stream ends in a Terminate (%u/%u/%u)", hk[k].what,
	      t.layer, t.etype, t.ecode);
}

static void hostile_client(struct proc *p)
{
	struct ctl keys, ack;
	struct raw r = { .fd = -1 };
	enum hk k;

	if (!ctl_expect(p, CTL_READY, NULL, 10000) ||
	    !ctl_expect(p, CTL_KEYS, &keys, 10000))
		return;
	for (k = H_GOOD; k <= H_TWO_SENDS; k++) {
		ctl_send(p, CTL_NEXT, k, 0, 0, 0, 0);
		if (k == H_GOOD)
			raw_good(&r, p->port);
		else if (!hk[k].connreq)
			raw_rejected(&r, p->port, k);
		else
			raw_violate(&r, p->port, k, (uint32_t)keys.v[0],
				    keys.v[1]);
		raw_close(&r);
		if (!ctl_expect(p, CTL_ACK, &ack, 15000))
			break;
		if (hk[k].log)
			log_check(p->peer, "server", hk[k].log);
	}
	ctl_send(p, CTL_NEXT, 99, 0, 0, 0, 0);	/* the end */
}

/* Server side of one hostile initiator. */
static void hostile_one(struct node *n, struct proc *p, enum hk k,
			const uint8_t *region)
{
	int got;
	static uint8_t ubuf[256];
	struct eq_ev req, e = { 0 };
	struct comp c = { 0 };
	bool ok;

	if (!hk[k].connreq) {
		eq_wait(n->eq, &e, 1500);
		check(e.ret == -FI_EAGAIN, "%s: no FI_CONNREQ (%s)",
		      hk[k].what, eq_ev_str(&e));
		return;
	}
	ok = !srv_connreq(n, &req, WAIT_MS) && !srv_endpoint(n, &req);
	fill(ubuf, sizeof(ubuf), p->seed + 7);
	ok = ok && !fi_recv(n->ep, ubuf, sizeof(ubuf), NULL, 0, ubuf) &&
	     !fi_accept(n->ep, NULL, 0);
	got = ok ? outcome(n->ep_eq, WAIT_MS, &e) : -1;
	check(got == hk[k].result,
	      "%s: %s (%s)", hk[k].what, hk[k].result ? "FI_CONNECTED" :
	      "an error entry with FI_ECONNREFUSED", eq_ev_str(&e));
	if (!hk[k].result)
		check(same(ubuf, sizeof(ubuf), p->seed + 7) &&
		      !(cq_take(n, ubuf, &c, 200) && !c.err) &&
		      pat_diff(region, 4096, p->seed + 5, 0) == SIZE_MAX,
		      "%s: the user's receive buffer and registered region "
		      "are untouched", hk[k].what);
	node_close_ep(n);
}

static void hostile_server(struct proc *p)
{
	static uint8_t region[4096];
	struct fid_mr *mr = NULL;
	struct node n;
	struct ctl m;

	p->dom_key = KEY_A;
	if (!check(!node_open(&n, p, NULL) &&
		   ctl_send(p, CTL_READY, 0, 0, 0, 0, 0), "server listening"))
		goto out;
	fill(region, sizeof(region), p->seed + 5);
	mr = mr_reg(&n, region, sizeof(region), FI_REMOTE_WRITE);
	ctl_send(p, CTL_KEYS, mr ? fi_mr_key(mr) : 0,
		 rma_addr(&n, (uintptr_t)region, 0), 0, 0, 0);
	while (ctl_expect(p, CTL_NEXT, &m, 15000) && m.v[0] <= H_TWO_SENDS) {
		hostile_one(&n, p, (enum hk)m.v[0], region);
		ctl_send(p, CTL_ACK, 1, 0, 0, 0, 0);
	}
out:
	if (mr)
		fi_close(&mr->fid);
	node_close(&n);
}

/* ---- raw responders against a keyed initiator */

enum rk { R_GOOD, R_BAD_PROOF, R_V1 };

#define R_CM "CM data after the responder's proof"

static const struct {
	const char *what;
	int result;		/* 1 FI_CONNECTED, 0 FI_ECONNREFUSED */
	const char *log;	/* the client's warning */
} rk[] = {
	[R_GOOD] = { "a raw responder that sends nothing after its Reply "
		     "with the right proof", 1, NULL },
	[R_BAD_PROOF] = { "a Reply with a proof under another key", 0,
			  "wrong proof in the Reply" },
	[R_V1] = { "a Reply with a version 1 auth block (no proof)", 0,
		   "no auth block of this version" },
};

static int raw_listen(int port)
{
	struct sockaddr_in a = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(0x7f000001),
	};
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The Reply's private data for case k: its length. */
static size_t raw_reply_pd(uint8_t *pd, enum rk k, const struct raw *r,
			   const uint8_t *nr)
{
	size_t off = k == R_V1 ? PD_AUTH : PD_AUTH_REPLY;

	memset(pd, 0, PD_AUTH_REPLY);
	memcpy(pd, "IWAK", 4);
	pd[4] = k == R_V1 ? 1 : 2;
	memcpy(pd + 8, nr, 16);
	if (k != R_V1)
		hmac(pd + PD_AUTH, k == R_BAD_PROOF ? KEY_B : KEY_A, 'R',
		     r->nonce_i, nr);
	memcpy(pd + off, R_CM, sizeof(R_CM));
	return off + sizeof(R_CM);
}

/* Takes the next connection on lfd and answers its keyed Request. */
static bool raw_reply(struct raw *r, int lfd, enum rk k, uint8_t *nr)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	struct mpa_frame f, rep = {
		.kind = MPA_REPLY, .rev = 2, .crc = true, .enhanced = true,
		.p2p = true, .ird = 8, .ord = 8,
	};
	uint8_t req[MPA_HDR_LEN + MPA_MAX_PD], pd[PD_AUTH_REPLY + 64];
	uint8_t buf[MPA_HDR_LEN + MPA_MAX_PD];
	struct iw_err err;
	ssize_t n;

	memset(r, 0, sizeof(*r));
	r->fd = poll(&pfd, 1, WAIT_MS) == 1 ? accept(lfd, NULL, NULL) : -1;
	n = r->fd < 0 ? -1 : read_frame(r->fd, req, sizeof(req));
	if (n < 0 || mpa_frame_parse(req, (size_t)n, MPA_REQUEST, &f, &err) ||
	    f.ulp_pd_len < PD_AUTH || memcmp(f.ulp_pd, "IWAK", 4) ||
	    f.ulp_pd[4] != 2)
		return false;
	memcpy(r->nonce_i, f.ulp_pd + 8, 16);
	fill(nr, 16, now_ms() ^ 0xa5a5);
	rep.rtr = f.rtr & MPA_RTR_WRITE ? MPA_RTR_WRITE : MPA_RTR_SEND;
	n = mpa_frame_build(buf, sizeof(buf), &rep, pd,
			    raw_reply_pd(pd, k, r, nr));
	return n > 0 && io_full(r->fd, buf, (size_t)n, false, WAIT_MS);
}

/* After the RTR: the initiator's proof, in the RTR's segment (the
 * Request took one before), then its first user Send, which the client
 * posts only once we counted. */
static void raw_after_good(struct proc *p, struct raw *r, const uint8_t *nr,
			   uint64_t seed)
{
	static uint8_t pay[DATA_LEN];
	uint8_t want[MSG_AUTH];
	struct ddp_hdr h;
	unsigned int segs;
	size_t len = 0;

	proof(want, KEY_A, 'I', r->nonce_i, nr);
	check(raw_next(r, &h, pay, sizeof(pay), &len) &&
	      raw_next(r, &h, pay, sizeof(pay), &len) &&
	      h.opcode == RDMAP_SEND && len == MSG_AUTH &&
	      !memcmp(pay, want, MSG_AUTH),
	      "%s: after the RTR comes the initiator's proof, as "
	      "iwarp_auth.h describes it", rk[R_GOOD].what);
	segs = tcp_info_of(r->fd).tcpi_data_segs_in;
	check(segs == 2, "%s: the RTR and the proof came in one TCP segment "
	      "(%u with data so far, Request included)", rk[R_GOOD].what,
	      segs);
	ctl_send(p, CTL_READY, 0, 0, 0, 0, 0);
	check(raw_next(r, &h, pay, sizeof(pay), &len) &&
	      h.opcode == RDMAP_SEND && len == DATA_LEN &&
	      same(pay, DATA_LEN, seed),
	      "%s: then the initiator's first user Send, intact",
	      rk[R_GOOD].what);
}

static void rr_server(struct proc *p)
{
	struct rdmap_term t = { 0 };
	struct raw r = { .fd = -1 };
	uint8_t nr[16];
	int lfd = raw_listen(p->port);
	struct ctl m;

	if (!check(lfd >= 0 && ctl_send(p, CTL_READY, 0, 0, 0, 0, 0),
		   "raw responder listening"))
		return;
	while (ctl_expect(p, CTL_NEXT, &m, 15000) && m.v[0] <= R_V1) {
		enum rk k = (enum rk)m.v[0];
		bool ok = check(raw_reply(&r, lfd, k, nr),
				"%s: the keyed Request answered", rk[k].what);

		if (ok && k == R_GOOD)
			raw_after_good(p, &r, nr, p->seed + 9);
		else if (ok)
			check(raw_until_term(&r, &t) &&
			      t.layer == IW_LAYER_RDMAP &&
			      t.etype == RDMAP_ETYPE_CATASTROPHIC && !t.ecode,
			      "%s: the initiator ends the stream in a "
			      "Terminate (%u/%u/%u)", rk[k].what, t.layer,
			      t.etype, t.ecode);
		ctl_expect(p, CTL_ACK, NULL, 15000);
		raw_close(&r);
		ctl_send(p, CTL_ACK, 0, 0, 0, 0, 0);
	}
	close(lfd);
}

static void rr_client(struct proc *p)
{
	struct eq_ev e;
	struct node n;
	enum rk k;
	int got;

	p->dom_key = KEY_A;
	if (!check(!node_open(&n, p, NULL) &&
		   ctl_expect(p, CTL_READY, NULL, 10000), "client ready"))
		goto out;
	for (k = R_GOOD; k <= R_V1; k++) {
		memset(&e, 0, sizeof(e));
		ctl_send(p, CTL_NEXT, k, 0, 0, 0, 0);
		got = cli_connect_to(&n, n.info->dest_addr, NULL, 0);
		got = got ? -1 : outcome(n.ep_eq, WAIT_MS, &e);
		check(got == rk[k].result, "%s: %s (%s)", rk[k].what,
		      rk[k].result ? "FI_CONNECTED" :
		      "an error entry with FI_ECONNREFUSED", eq_ev_str(&e));
		if (k == R_GOOD) {
			check(got == 1 && e.data_len == sizeof(R_CM) &&
			      !memcmp(e.u.cm.data, R_CM, sizeof(R_CM)),
			      "%s: FI_CONNECTED carries the CM data after "
			      "the proof (%zu octets)", rk[k].what, e.data_len);
			/* the responder counts segments before this Send */
			ctl_expect(p, CTL_READY, NULL, 15000);
			check(got == 1 && send_pattern(&n, p->seed + 9),
			      "%s: a Send right after FI_CONNECTED completes",
			      rk[k].what);
		}
		ctl_send(p, CTL_ACK, 0, 0, 0, 0, 0);
		ctl_expect(p, CTL_ACK, NULL, 15000);
		node_close_ep(&n);
		if (rk[k].log)
			log_check(getpid(), "client", rk[k].log);
	}
	ctl_send(p, CTL_NEXT, 99, 0, 0, 0, 0);	/* the end */
out:
	node_close(&n);
}

/* ---- a recorded handshake, replayed */

/* Forwards one connection both ways and records what the initiator
 * sent, until told to stop. */
struct proxy {
	int lfd, to_port;
	uint8_t rec[16384];
	size_t rec_len;
	volatile bool stop;
	pthread_t th;
};

static bool proxy_move(int from, int to, struct proxy *px, bool record)
{
	uint8_t buf[4096];
	ssize_t n = recv(from, buf, sizeof(buf), 0);

	if (n <= 0)
		return false;
	if (record && px->rec_len + (size_t)n <= sizeof(px->rec)) {
		memcpy(px->rec + px->rec_len, buf, (size_t)n);
		px->rec_len += (size_t)n;
	}
	return io_full(to, buf, (size_t)n, false, WAIT_MS);
}

static void *proxy_main(void *arg)
{
	struct proxy *px = arg;
	struct pollfd pfd[2] = { { .fd = -1 }, { .fd = -1 } };
	bool up = true;

	pfd[0].fd = accept(px->lfd, NULL, NULL);
	pfd[1].fd = raw_dial(px->to_port);
	pfd[0].events = pfd[1].events = POLLIN;
	while (up && pfd[0].fd >= 0 && pfd[1].fd >= 0 && !px->stop) {
		if (poll(pfd, 2, 50) <= 0)
			continue;
		if (pfd[0].revents)
			up = proxy_move(pfd[0].fd, pfd[1].fd, px, true);
		if (up && pfd[1].revents)
			up = proxy_move(pfd[1].fd, pfd[0].fd, px, false);
	}
	close(pfd[0].fd);
	close(pfd[1].fd);
	return NULL;
}

static int proxy_start(struct proxy *px, int port, int to_port)
{
	struct sockaddr_in a = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)port),
		.sin_addr.s_addr = htonl(0x7f000001),
	};
	int one = 1;

	memset(px, 0, sizeof(*px));
	px->to_port = to_port;
	px->lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(px->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(px->lfd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(px->lfd, 1) || pthread_create(&px->th, NULL, proxy_main, px))
		return -1;
	return 0;
}

/* The recorded Request and the two FPDUs after it (RTR, proof). */
static size_t recorded_handshake(const struct proxy *px, size_t *req_len)
{
	ssize_t n = mpa_frame_len(px->rec, px->rec_len);
	size_t off, i;

	if (n < MPA_HDR_LEN || (size_t)n > px->rec_len)
		return 0;
	*req_len = off = (size_t)n;
	for (i = 0; i < 2 && off + 2 <= px->rec_len; i++)
		off += mpa_fpdu_len(iw_get16(px->rec + off));
	return i == 2 && off <= px->rec_len ? off : 0;
}

/* A real keyed connection through the proxy, recorded; kept until the
 * server connected too (the initiator is connected on the Reply, its
 * proof may still be on its way). */
static bool replay_record(struct node *n, struct proxy *px, struct proc *p)
{
	int port = p->port;
	struct sockaddr_in a = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)(port + 10)),
		.sin_addr.s_addr = htonl(0x7f000001),
	};
	struct eq_ev e = { 0 };
	bool ok;

	if (proxy_start(px, port + 10, port))
		return false;
	ok = !cli_connect_to(n, &a, NULL, 0) &&
	     outcome(n->ep_eq, WAIT_MS, &e) == 1;
	ok = ctl_expect(p, CTL_ACK, NULL, 10000) && ok;
	fi_shutdown(n->ep, 0);
	px->stop = true;
	pthread_join(px->th, NULL);
	close(px->lfd);
	return ok;
}

static void replay_client(struct proc *p)
{
	static struct proxy px;
	struct rdmap_term t = { 0 };
	struct raw r = { .fd = -1 };
	size_t req_len = 0, len;
	uint8_t rep[MPA_HDR_LEN + MPA_MAX_PD];
	struct node n;

	p->dom_key = KEY_A;
	if (!check(!node_open(&n, p, NULL) &&
		   ctl_expect(p, CTL_READY, NULL, 10000), "client ready"))
		goto out;
	check(replay_record(&n, &px, p),
	      "a keyed connection through a recording proxy connects");
	len = recorded_handshake(&px, &req_len);
	check(len > req_len, "recorded the Request, the RTR and the proof "
	      "(%zu octets)", len);
	r.fd = raw_dial(p->port);
	check(len && io_full(r.fd, px.rec, req_len, false, WAIT_MS) &&
	      read_frame(r.fd, rep, sizeof(rep)) > 0 && !(rep[16] & 0x20) &&
	      io_full(r.fd, px.rec + req_len, len - req_len, false, WAIT_MS) &&
	      raw_until_term(&r, &t),
	      "the replayed handshake gets a Reply, then a Terminate");
	raw_close(&r);
	ctl_expect(p, CTL_ACK, NULL, 10000);
	log_check(p->peer, "server", "replayed handshake");
out:
	node_close(&n);
}

static void replay_server(struct proc *p)
{
	struct node n;

	p->dom_key = KEY_A;
	if (!check(!node_open(&n, p, NULL) &&
		   ctl_send(p, CTL_READY, 0, 0, 0, 0, 0), "server listening"))
		goto out;
	check(srv_next(&n, NULL, 0) == 1, "the recorded connection: "
	      "FI_CONNECTED");
	node_close_ep(&n);
	ctl_send(p, CTL_ACK, 0, 0, 0, 0, 0);
	check(srv_next(&n, NULL, 0) == 0, "the replayed one: an error entry "
	      "with FI_ECONNREFUSED (the MAC does not fit the fresh nonce)");
	node_close_ep(&n);
	ctl_send(p, CTL_ACK, 0, 0, 0, 0, 0);
out:
	node_close(&n);
}

/* ---- the cases, each in a process of its own */

static const struct msg_case cases[] = {
	{ "same key: CM data and data both ways", keyed_client, keyed_server,
	  .timeout_s = 30 },
	{ "wrong key", wrong_client, wrong_server, .timeout_s = 30 },
	{ "key on the client only", cli_only_client, cli_only_server,
	  .timeout_s = 30 },
	{ "key on the server only", srv_only_client, srv_only_server,
	  .timeout_s = 30 },
	{ "key precedence", prec_client, prec_server, .timeout_s = 60 },
	{ "replayed handshake", replay_client, replay_server,
	  .timeout_s = 30 },
	{ "hostile initiators", hostile_client, hostile_server,
	  .timeout_s = 90 },
	{ "raw responders", rr_client, rr_server, .timeout_s = 60 },
};

/* The case's process: reports go to fd, warnings to a log file. */
static void case_main(const struct msg_case *c, int port, uint64_t seed,
		      int fd)
{
	int log;

	rec_fd = fd;
	snprintf(log_path, sizeof(log_path), "/tmp/test_auth.%d.log",
		 (int)getpid());
	log = open(log_path, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0600);
	if (log < 0 || dup2(log, STDERR_FILENO) < 0)
		_exit(4);
	setenv("FI_LOG_LEVEL", "warn", 1);
	setenv("FI_LOG_PROV", "iwarp", 1);
	unsetenv("FI_IWARP_AUTH_KEY");
	msg_set_reporter(rec_report, rec_diag);
	msg_run(c, port, seed);
	if (!getenv("TEST_AUTH_KEEP_LOG"))
		unlink(log_path);
	_exit(0);
}

static void run_case(const struct msg_case *c, int port, uint64_t seed)
{
	struct rec r;
	int fd[2];
	pid_t pid;

	if (pipe(fd))
		return;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(fd[0]);
		case_main(c, port, seed, fd[1]);
	}
	close(fd[1]);
	while (read(fd[0], &r, sizeof(r)) == sizeof(r)) {
		r.text[sizeof(r.text) - 1] = '\0';
		if (r.kind == 'd')
			tap_diag("%s", r.text);
		else
			tap_ok(r.kind == 'y', "%s", r.text);
	}
	close(fd[0]);
	tap_child(pid, (double)c->timeout_s + 40, c->name);
}

/* Keys given in fi_getinfo hints come back in every entry. */
static void hints_keys(void)
{
	static const uint8_t dkey[] = "domain-key", ekey[] = "ep-key";
	static uint8_t big[300];
	struct fi_info *hints = fi_allocinfo(), *info = NULL, *fi;
	bool all = true;
	int ret, n = 0;

	if (!hints)
		return;
	hints->ep_attr->type = FI_EP_MSG;
	hints->domain_attr->auth_key = (uint8_t *)dkey;
	hints->domain_attr->auth_key_size = sizeof(dkey);
	hints->ep_attr->auth_key = (uint8_t *)ekey;
	hints->ep_attr->auth_key_size = sizeof(ekey);
	ret = fi_getinfo(MSG_API, NULL, NULL, 0, hints, &info);
	for (fi = ret ? NULL : info; fi; fi = fi->next, n++)
		all &= fi->domain_attr->auth_key_size == sizeof(dkey) &&
		       !memcmp(fi->domain_attr->auth_key, dkey, sizeof(dkey)) &&
		       fi->ep_attr->auth_key_size == sizeof(ekey) &&
		       !memcmp(fi->ep_attr->auth_key, ekey, sizeof(ekey));
	tap_ok(!ret && n > 0, "hints with domain and ep auth_key: %d entries (%d)",
	       n, ret);
	tap_ok(!ret && n > 0 && all, "every entry carries both keys back");
	fi_freeinfo(info);
	info = NULL;
	hints->domain_attr->auth_key = big;
	hints->domain_attr->auth_key_size = sizeof(big);
	ret = fi_getinfo(MSG_API, NULL, NULL, 0, hints, &info);
	tap_ok(ret == -FI_ENODATA, "a 300-octet auth_key in hints: -FI_ENODATA (%d)",
	       ret);
	fi_freeinfo(info);
	hints->domain_attr->auth_key = NULL;
	hints->domain_attr->auth_key_size = 0;
	hints->ep_attr->auth_key = NULL;
	hints->ep_attr->auth_key_size = 0;
	fi_freeinfo(hints);
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	const char *env = getenv("TEST_AUTH_SEED");
	uint64_t seed;
	size_t i;

	setenv("FI_IWARP_IFACE", "lo", 1);
	seed = env ? strtoull(env, NULL, 0) :
		     (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
	tap_diag("seed %llu (TEST_AUTH_SEED=%llu replays it)",
		 (unsigned long long)seed, (unsigned long long)seed);
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		if (!only || strstr(cases[i].name, only))
			run_case(&cases[i], PORT_BASE + (int)i * 2, seed);
	/* last: the cases' children must load the provider themselves */
	if (!only)
		hints_keys();
	return tap_done();
}
