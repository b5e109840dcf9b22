/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rping's ping-pong (rdma-core librdmacm/examples/rping.c) through the
 * iwarp provider's MSG endpoint, against Linux siw in the siw-peer guest.
 *
 *   siw_rping client HOST PORT SIZE COUNT
 *	we play `rping -c`: per iteration Send the source descriptor (siw
 *	RDMA-Reads it), wait for the go-ahead, Send the sink descriptor
 *	(siw RDMA-Writes the ping back), wait for the go-ahead, compare.
 *   siw_rping server PORT SIZE COUNT
 *	we play `rping -s` for a guest `rping -c`: receive the source
 *	descriptor, RDMA-Read it, check rping's pattern, go-ahead, receive
 *	the sink descriptor, RDMA-Write the ping back, go-ahead.
 *   siw_rping handshake HOST PORT
 *	connect and leave (MPA and RTR only).
 *   siw_rping sendrecv HOST PORT
 *	one Send each way with the guest's rdma_server.
 *   siw_rping term HOST PORT
 *	one good ping, then an RDMA Write to an STag siw never issued:
 *	expects siw's Terminate as an error completion, and the shutdown.
 *
 * Descriptors are 16 octets: address u64, STag u32, length u32, all
 * big-endian. Negotiation knobs are the provider's FI_IWARP_* variables.
 * Prints one line per finding; exit 0 when every check held.
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define WAIT_MS 15000		/* one step; TCG guests are slow */
#define MAX_SIZE 65535		/* rping's RPING_BUFSIZE - 1 */
#define BOGUS_KEY 0x5eed0b0bULL	/* an STag siw never issues: index 0x5eed0b */

struct desc {
	uint64_t addr;
	uint32_t key;
	uint32_t len;
} __attribute__((packed));
_Static_assert(sizeof(struct desc) == 16, "rping's rdma info");

struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_cq *cq;
	bool shutdown;		/* FI_SHUTDOWN seen */
	int eq_err;		/* an EQ error entry's err, 0 if none */
};

/* registered buffers: the descriptors we send and receive, the ping */
struct bufs {
	struct desc tx, rx;
	struct desc got;	/* the last one received */
	char *src, *sink;
	struct fid_mr *tx_mr, *rx_mr, *src_mr, *sink_mr;
};

static int failures;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static bool check(bool ok, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static bool check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", ok ? "ok" : "not ok");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	if (!ok)
		failures++;
	return ok;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- opening */

static int open_side(struct side *s, const char *node, const char *port,
		     bool passive)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_eq_attr eqa = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cqa = {
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_UNSPEC,
		.size = 64,
	};
	int ret;

	if (!hints)
		return -FI_ENOMEM;
	hints->fabric_attr->prov_name = strdup("iwarp");
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY |
				      FI_MR_VIRT_ADDR;
	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
			 node, port, passive ? FI_SOURCE : 0, hints, &s->info);
	fi_freeinfo(hints);
	if (ret) {
		say("fi_getinfo: %s", fi_strerror(-ret));
		return ret;
	}
	ret = fi_fabric(s->info->fabric_attr, &s->fabric, NULL);
	if (!ret)
		ret = fi_eq_open(s->fabric, &eqa, &s->eq, NULL);
	if (!ret)
		ret = fi_domain(s->fabric, s->info, &s->domain, NULL);
	if (!ret)
		ret = fi_cq_open(s->domain, &cqa, &s->cq, NULL);
	if (!ret && passive) {
		ret = fi_passive_ep(s->fabric, s->info, &s->pep, NULL);
		if (!ret)
			ret = fi_pep_bind(s->pep, &s->eq->fid, 0);
		if (!ret)
			ret = fi_listen(s->pep);
	}
	if (ret)
		say("opening the fabric: %s", fi_strerror(-ret));
	return ret;
}

static int open_ep(struct side *s, struct fi_info *info)
{
	int ret = fi_endpoint(s->domain, info, &s->ep, NULL);

	if (!ret)
		ret = fi_ep_bind(s->ep, &s->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(s->ep);
	if (ret)
		say("endpoint: %s", fi_strerror(-ret));
	return ret;
}

static void close_fid(void *f)
{
	if (f)
		fi_close(&((struct fid_ep *)f)->fid);
}

static void close_side(struct side *s)
{
	close_fid(s->ep);
	close_fid(s->pep);
	close_fid(s->cq);
	close_fid(s->eq);
	close_fid(s->domain);
	close_fid(s->fabric);
	if (s->info)
		fi_freeinfo(s->info);
}

static struct fid_mr *reg(struct side *s, void *buf, size_t len,
			  uint64_t access)
{
	struct fid_mr *mr = NULL;
	int ret = fi_mr_reg(s->domain, buf, len, access, 0, 0, 0, &mr, NULL);

	if (ret)
		say("fi_mr_reg: %s", fi_strerror(-ret));
	return ret ? NULL : mr;
}

static int bufs_open(struct side *s, struct bufs *b, size_t size)
{
	uint64_t rma = FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE;

	memset(b, 0, sizeof(*b));
	b->src = calloc(1, size);
	b->sink = calloc(1, size);
	if (!b->src || !b->sink)
		return -FI_ENOMEM;
	b->tx_mr = reg(s, &b->tx, sizeof(b->tx), FI_SEND);
	b->rx_mr = reg(s, &b->rx, sizeof(b->rx), FI_RECV);
	b->src_mr = reg(s, b->src, size, rma);
	b->sink_mr = reg(s, b->sink, size, rma);
	return b->tx_mr && b->rx_mr && b->src_mr && b->sink_mr ? 0 :
								 -FI_EIO;
}

static void bufs_close(struct bufs *b)
{
	close_fid(b->tx_mr);
	close_fid(b->rx_mr);
	close_fid(b->src_mr);
	close_fid(b->sink_mr);
	free(b->src);
	free(b->sink);
}

/* ---- events and completions */

static void eq_note(struct side *s, uint32_t event, ssize_t ret)
{
	struct fi_eq_err_entry err = { 0 };

	if (ret == -FI_EAVAIL) {
		fi_eq_readerr(s->eq, &err, 0);
		s->eq_err = err.err ? err.err : FI_EOTHER;
		say("EQ error: %s (prov_errno %#x)", fi_strerror(err.err),
		    err.prov_errno);
	} else if (ret >= 0 && event == FI_SHUTDOWN) {
		s->shutdown = true;
		say("EQ: FI_SHUTDOWN");
	}
}

/* Waits for an EQ event of type want: 0, or a negative error. */
static int eq_wait(struct side *s, uint32_t want, struct fi_eq_cm_entry *e,
		   int ms)
{
	uint8_t buf[sizeof(struct fi_eq_cm_entry) + 512];
	struct fi_eq_cm_entry *entry = e ? e : (void *)buf;
	uint64_t end = now_ms() + (uint64_t)ms;
	uint32_t event;
	ssize_t ret;

	while (now_ms() < end) {
		ret = fi_eq_sread(s->eq, &event, entry, sizeof(buf), 100, 0);
		if (ret == -FI_EAGAIN || ret == -FI_ETIMEDOUT)
			continue;
		eq_note(s, event, ret);
		if (ret < 0)
			return (int)ret;
		if (event == want)
			return 0;
		say("EQ: event %u while waiting for %u", event, want);
		return -FI_EOTHER;
	}
	return -FI_ETIMEDOUT;
}

/*
 * Waits for the completion of ctx. Error completions print their text;
 * ret 1 then, with *err the FI_E* code and *prov the provider's errno.
 */
static int cq_wait(struct side *s, void *ctx, size_t *len, int *err,
		   int *prov)
{
	uint64_t end = now_ms() + WAIT_MS;
	struct fi_cq_msg_entry c;
	uint32_t event;
	ssize_t ret;

	while (now_ms() < end) {
		ret = fi_cq_sread(s->cq, &c, 1, NULL, 50);
		if (ret == 1) {
			if (c.op_context != ctx) {
				say("completion of %p while waiting for %p",
				    c.op_context, ctx);
				continue;
			}
			if (len)
				*len = c.len;
			return 0;
		}
		if (ret == -FI_EAVAIL) {
			struct fi_cq_err_entry e = { 0 };
			char text[160];

			fi_cq_readerr(s->cq, &e, 0);
			say("error completion of %p: %s (prov_errno %#x: %s)",
			    e.op_context, fi_strerror(e.err), e.prov_errno,
			    fi_cq_strerror(s->cq, e.prov_errno, e.err_data,
					   text, sizeof(text)));
			if (err)
				*err = e.err;
			if (prov)
				*prov = e.prov_errno;
			if (e.op_context == ctx || !ctx)
				return 1;
			continue;
		}
		if (ret != -FI_EAGAIN && ret != -FI_ETIMEDOUT)
			return (int)ret;
		ret = fi_eq_read(s->eq, &event, NULL, 0, 0);
		if (ret != -FI_EAGAIN)
			eq_note(s, event, ret);
	}
	return -FI_ETIMEDOUT;
}

/* ---- rping's protocol */

/* The ping of iteration i as rping -c fills it: "rdma-ping-<i>: " then
 * letters from 'A' + i (mod 58) counting up through 'z', ending in NUL. */
static void rping_fill(char *buf, size_t size, int i)
{
	int start = 65 + i % 58;
	size_t k = (size_t)snprintf(buf, size, "rdma-ping-%d: ", i);
	unsigned char c = (unsigned char)start;

	for (; k < size; k++) {
		buf[k] = (char)c;
		if (++c > 122)
			c = 65;
	}
	buf[size - 1] = 0;
}

static size_t first_diff(const char *a, const char *b, size_t len)
{
	size_t i;

	for (i = 0; i < len && a[i] == b[i]; i++)
		;
	return i;
}

static int post_recv(struct side *s, struct bufs *b)
{
	memset(&b->rx, 0, sizeof(b->rx));
	return (int)fi_recv(s->ep, &b->rx, sizeof(b->rx),
			    fi_mr_desc(b->rx_mr), 0, &b->rx);
}

static int send_desc(struct side *s, struct bufs *b, void *buf,
		     struct fid_mr *mr, size_t size)
{
	int ret;

	/* the tagged offset rping's peer will use: ours are offsets */
	b->tx.addr = htobe64(s->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR ?
			     (uint64_t)(uintptr_t)buf : 0);
	b->tx.key = htobe32((uint32_t)fi_mr_key(mr));
	b->tx.len = htobe32((uint32_t)size);
	ret = (int)fi_send(s->ep, &b->tx, sizeof(b->tx), fi_mr_desc(b->tx_mr),
			   0, &b->tx);
	return ret ? ret : cq_wait(s, &b->tx, NULL, NULL, NULL);
}

/* The peer's 16-octet Send, then a fresh receive unless it is the last. */
static int recv_one(struct side *s, struct bufs *b, const char *what,
		    bool last)
{
	size_t len = 0;
	int ret = cq_wait(s, &b->rx, &len, NULL, NULL);

	if (ret) {
		check(false, "%s arrives (%d)", what, ret);
		return ret ? ret : -FI_EIO;
	}
	if (!check(len == sizeof(b->rx), "%s is 16 octets (%zu)", what, len))
		return -FI_EIO;
	b->got = b->rx;
	if (last)
		return 0;
	ret = post_recv(s, b);
	if (ret)
		check(false, "receive posted again (%d)", ret);
	return ret;
}

static int recv_msg(struct side *s, struct bufs *b, const char *what)
{
	return recv_one(s, b, what, false);
}

/* One ping of rping -c; 0 when siw echoed it intact. */
static int ping(struct side *s, struct bufs *b, size_t size, int i)
{
	size_t d;
	int ret;

	rping_fill(b->src, size, i);
	memset(b->sink, 0xa5, size);	/* stale data cannot pass */
	ret = send_desc(s, b, b->src, b->src_mr, size);
	if (!ret)
		ret = recv_msg(s, b, "go-ahead after the Read");
	if (!ret)
		ret = send_desc(s, b, b->sink, b->sink_mr, size);
	if (!ret)
		ret = recv_msg(s, b, "go-ahead after the Write");
	if (ret) {
		check(false, "ping %d of %zu octets: step failed (%s)", i,
		      size, fi_strerror(ret < 0 ? -ret : ret));
		return ret;
	}
	d = first_diff(b->src, b->sink, size);
	return check(d == size, "ping %d: %zu octets read by siw and written "
		     "back intact (first difference at %zu)", i, size, d) ?
		       0 : -FI_EIO;
}

/* Endpoint, buffers, a posted receive (the go-ahead may come before we
 * look), then the connection. */
static int client_open(struct side *s, struct bufs *b, const char *host,
		       const char *port, size_t size)
{
	struct fi_eq_cm_entry e;
	int ret;

	ret = open_side(s, host, port, false);
	if (!ret)
		ret = open_ep(s, s->info);
	if (!ret)
		ret = bufs_open(s, b, size);
	if (!ret)
		ret = post_recv(s, b);
	if (ret)
		return ret;
	ret = fi_connect(s->ep, s->info->dest_addr, NULL, 0);
	if (!ret)
		ret = eq_wait(s, FI_CONNECTED, &e, WAIT_MS);
	check(!ret, "connected to %s:%s (%s)", host, port,
	      fi_strerror(ret < 0 ? -ret : ret));
	return ret;
}

static int run_client(const char *host, const char *port, size_t size,
		      int count)
{
	struct side s = { 0 };
	struct bufs b = { 0 };
	int i, ret;

	ret = client_open(&s, &b, host, port, size);
	for (i = 0; !ret && i < count; i++)
		ret = ping(&s, &b, size, i);
	if (!ret)
		say("ping data: %.*s", (int)(size < 60 ? size : 60), b.src);
	if (s.ep) {
		fi_shutdown(s.ep, 0);
		eq_wait(&s, FI_SHUTDOWN, NULL, 2000);
	}
	bufs_close(&b);
	close_side(&s);
	return ret;
}

/*
 * rdma_server (librdmacm example): one 16-octet Send each way, then it
 * disconnects. Its reply is a static buffer it never fills: zeros.
 */
static int run_sendrecv(const char *host, const char *port)
{
	static const char zero[16];
	struct side s = { 0 };
	struct bufs b = { 0 };
	int ret;

	ret = client_open(&s, &b, host, port, 64);
	if (!ret) {
		ret = send_desc(&s, &b, b.src, b.src_mr, 64);
		check(!ret, "our Send completes (%d)", ret);
	}
	/* rdma_server disconnects right after its reply: a receive
	 * posted after it may find the connection closing */
	if (!ret)
		ret = recv_one(&s, &b, "rdma_server's reply", true);
	if (!ret && !check(!memcmp(&b.got, zero, 16), "the reply is zeros"))
		ret = -FI_EIO;
	if (!ret) {
		ret = s.shutdown ? 0 : eq_wait(&s, FI_SHUTDOWN, NULL, WAIT_MS);
		check(!ret, "rdma_server disconnected");
	}
	bufs_close(&b);
	close_side(&s);
	return ret;
}

/* rping -s for one connection; the client's count is ours too. */
static int run_server(const char *port, size_t size, int count)
{
	struct side s = { 0 };
	struct fi_eq_cm_entry req;
	struct bufs b = { 0 };
	char *want = calloc(1, MAX_SIZE + 1);
	uint8_t buf[sizeof(req) + 512];
	int i, ret;

	ret = want ? open_side(&s, "127.0.0.1", port, true) : -FI_ENOMEM;
	if (!ret)
		ret = bufs_open(&s, &b, size);
	if (!ret) {
		say("listening on 127.0.0.1:%s", port);
		ret = eq_wait(&s, FI_CONNREQ, (void *)buf, 60000);
		check(!ret, "connection request from the guest");
		memcpy(&req, buf, sizeof(req));
	}
	if (!ret)
		ret = open_ep(&s, req.info);
	if (!ret) {
		fi_freeinfo(req.info);
		/* siw's first Send follows our Reply at once (A=0) */
		ret = post_recv(&s, &b);
	}
	if (!ret) {
		ret = fi_accept(s.ep, NULL, 0);
		if (!ret)
			ret = eq_wait(&s, FI_CONNECTED, NULL, WAIT_MS);
		check(!ret, "accepted (%s)", fi_strerror(ret < 0 ? -ret : ret));
	}
	for (i = 0; !ret && i < count; i++) {
		uint64_t addr;
		uint32_t key, len;
		size_t d, n;

		ret = recv_msg(&s, &b, "source descriptor");
		if (ret)
			break;
		addr = be64toh(b.got.addr);
		key = be32toh(b.got.key);
		len = be32toh(b.got.len);
		if (!check(len >= 2 && len <= size, "ping %d: source %u octets "
			   "(at most %zu)", i, len, size)) {
			ret = -FI_EIO;
			break;
		}
		memset(b.src, 0, size);
		ret = (int)fi_read(s.ep, b.src, len, fi_mr_desc(b.src_mr), 0,
				   addr, key, b.src);
		if (!ret)
			ret = cq_wait(&s, b.src, NULL, NULL, NULL);
		if (ret) {
			check(false, "ping %d: RDMA Read from siw", i);
			break;
		}
		rping_fill(want, len, i);
		d = first_diff(want, b.src, len);
		if (!check(d == len, "ping %d: RDMA Read got rping's %u "
			   "octets (first difference at %zu)", i, len, d)) {
			ret = -FI_EIO;
			break;
		}
		ret = send_desc(&s, &b, b.sink, b.sink_mr, 0);
		if (!ret)
			ret = recv_msg(&s, &b, "sink descriptor");
		if (ret)
			break;
		n = strlen(b.src) + 1;	/* what rping -s writes back */
		if (!check(be32toh(b.got.len) >= n, "ping %d: sink %u octets",
			   i, be32toh(b.got.len))) {
			ret = -FI_EIO;
			break;
		}
		ret = (int)fi_write(s.ep, b.src, n, fi_mr_desc(b.src_mr), 0,
				    be64toh(b.got.addr), be32toh(b.got.key),
				    b.sink);
		if (!ret)
			ret = cq_wait(&s, b.sink, NULL, NULL, NULL);
		if (!ret)
			ret = send_desc(&s, &b, b.sink, b.sink_mr, 0);
		check(!ret, "ping %d: RDMA Write back and go-ahead", i);
	}
	if (!ret) {
		/* rping -c disconnects after its count */
		ret = s.shutdown ? 0 : eq_wait(&s, FI_SHUTDOWN, NULL, WAIT_MS);
		check(!ret, "the guest disconnected after %d pings", count);
	}
	bufs_close(&b);
	close_side(&s);
	free(want);
	return ret;
}

/* MPA and RTR only, e.g. with ib_write_bw -R, whose own protocol of
 * perftest structs we do not speak: connect, then leave. */
static int run_handshake(const char *host, const char *port)
{
	struct side s = { 0 };
	struct bufs b = { 0 };
	int ret = client_open(&s, &b, host, port, 64);

	if (s.ep && !ret) {
		fi_shutdown(s.ep, 0);
		ret = eq_wait(&s, FI_SHUTDOWN, NULL, 2000);
		check(!ret, "shut down");
	}
	bufs_close(&b);
	close_side(&s);
	return ret;
}

/*
 * RDMA Write to an STag siw never issued, behind a posted receive: siw
 * answers with a Terminate (DDP tagged buffer, invalid STag) and closes.
 */
static int run_term(const char *host, const char *port)
{
	struct side s = { 0 };
	struct bufs b = { 0 };
	int err = 0, prov = 0, ret;

	/* a full ping first: siw has reported the connection up by then
	 * (a failing first FPDU in peer-to-peer mode crashes its iw_cm) */
	ret = client_open(&s, &b, host, port, 64);
	if (!ret)
		ret = ping(&s, &b, 64, 0);
	if (!ret)
		ret = (int)fi_write(s.ep, b.src, 64, fi_mr_desc(b.src_mr), 0,
				    0x10000, BOGUS_KEY, b.src);
	if (ret) {
		check(false, "posting (%s)", fi_strerror(-ret));
		goto out;
	}
	/* the Write itself may complete before the Terminate arrives */
	ret = cq_wait(&s, b.src, NULL, &err, &prov);
	if (ret == 0)
		ret = cq_wait(&s, &b.rx, NULL, &err, &prov);
	check(ret == 1 && err, "an error completion after siw's Terminate "
	      "(%s, prov_errno %#x)", fi_strerror(err), prov);
	if (!s.shutdown && !s.eq_err)
		eq_wait(&s, FI_SHUTDOWN, NULL, WAIT_MS);
	check(s.shutdown || s.eq_err, "the EQ reports the end (%s)",
	      s.shutdown ? "FI_SHUTDOWN" : fi_strerror(s.eq_err));
	ret = ret == 1 ? 0 : -FI_EIO;
out:
	bufs_close(&b);
	close_side(&s);
	return ret;
}

int main(int argc, char **argv)
{
	size_t size = argc > 4 ? strtoul(argv[4], NULL, 0) : 64;
	int count = argc > 5 ? atoi(argv[5]) : 3, ret = -FI_EINVAL;

	if (argc >= 4 && !strcmp(argv[1], "server")) {
		size = strtoul(argv[3], NULL, 0);
		count = argc > 4 ? atoi(argv[4]) : 3;
	}
	if (size < 26 || size > MAX_SIZE || count < 1) {
		fprintf(stderr, "size 26..%d, count >= 1\n", MAX_SIZE);
		return 2;
	}
	if (argc >= 4 && !strcmp(argv[1], "client"))
		ret = run_client(argv[2], argv[3], size, count);
	else if (argc >= 4 && !strcmp(argv[1], "server"))
		ret = run_server(argv[2], size, count);
	else if (argc >= 4 && !strcmp(argv[1], "handshake"))
		ret = run_handshake(argv[2], argv[3]);
	else if (argc >= 4 && !strcmp(argv[1], "sendrecv"))
		ret = run_sendrecv(argv[2], argv[3]);
	else if (argc >= 4 && !strcmp(argv[1], "term"))
		ret = run_term(argv[2], argv[3]);
	else
		fprintf(stderr, "usage: %s client HOST PORT SIZE COUNT | "
			"server PORT SIZE COUNT | handshake|sendrecv HOST PORT | "
			"term HOST PORT\n", argv[0]);
	return ret || failures ? 1 : 0;
}
