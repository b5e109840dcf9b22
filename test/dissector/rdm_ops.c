/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdm_ops: one process, two FI_EP_RDM endpoints A and B over loopback,
 * that puts each kind of RDM message on the wire once, for the Wireshark
 * Lua dissector's test (test/dissector/run-dissector) to judge:
 *
 *	rdm_ops
 *
 * A to B: a tagged Send of SMALL octets (EAGER, tagged), an untagged Send
 * of BIG octets (RTS, B's RDMA Read, FIN), an fi_writedata (RDMA Write,
 * WDATA), a 64-bit FetchAdd and CmpSwap (RFC 7306 Atomic Requests when
 * both sides announce RFC 7306, AREQ/ARESP otherwise) and a 32-bit fetching
 * sum (always AREQ/ARESP). Data and fetched values are checked; exit 0
 * when everything arrived intact. What the decoder must find goes to
 * stdout, one line of name=value pairs:
 *
 *	rdm_ops a_port=N b_port=N tag=0x.. small=N big=N cqdata=0x..
 *	        key=0x.. addr=0x.. add=0x.. fadd_orig=0x.. compare=0x..
 *	        swap=0x.. cswap_orig=0x.. add32=0x.. add32_orig=0x..
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#define SMALL 100
#define BIG 1100000	/* above what an EAGER may carry */
#define TAG 0x1234abcd5678ef01ULL
#define CQDATA 0xfeedfaceULL
#define INIT 0x1122334455667788ULL
#define ADD 0x0101010101010101ULL
#define SWAP 0xcafef00ddeadbeefULL
#define INIT32 0x10203040u
#define ADD32 0x01010101u

struct side {
	const char *name;
	struct fid_ep *ep;
	struct fid_cq *cq;
	struct fid_av *av;
	fi_addr_t peer;
	struct sockaddr_in addr;
};

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct side a = { "A" }, b = { "B" };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const char *what, long ret)
{
	fprintf(stderr, "rdm_ops: %s: %ld (%s)\n", what, ret,
		fi_strerror((int)(ret < 0 ? -ret : ret)));
	return 1;
}

/* Drives both endpoints (manual progress) until s has a completion. */
static int wait_one(struct side *s, struct fi_cq_data_entry *e)
{
	struct fi_cq_data_entry dummy;
	struct fi_cq_err_entry err;
	double end = now() + 20;
	struct side *o = s == &a ? &b : &a;

	while (now() < end) {
		ssize_t n = fi_cq_read(s->cq, e ? e : &dummy, 1);

		if (n == 1)
			return 0;
		if (n == -FI_EAVAIL) {
			memset(&err, 0, sizeof(err));
			fi_cq_readerr(s->cq, &err, 0);
			fprintf(stderr, "rdm_ops: %s: error completion %d\n",
				s->name, err.err);
			return 1;
		}
		fi_cq_read(o->cq, NULL, 0);
	}
	fprintf(stderr, "rdm_ops: %s: no completion in time\n", s->name);
	return 1;
}

/* Posts until accepted, driving both sides. */
#define POST(call)							\
	({								\
		ssize_t r_;						\
		double e_ = now() + 10;					\
		while ((r_ = (call)) == -FI_EAGAIN && now() < e_) {	\
			fi_cq_read(a.cq, NULL, 0);			\
			fi_cq_read(b.cq, NULL, 0);			\
		}							\
		r_;							\
	})

static int open_side(struct side *s)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	size_t len = sizeof(s->addr);
	int ret;

	ret = fi_endpoint(domain, info, &s->ep, NULL);
	if (!ret)
		ret = fi_cq_open(domain, &cq_attr, &s->cq, NULL);
	if (!ret)
		ret = fi_av_open(domain, &av_attr, &s->av, NULL);
	if (!ret)
		ret = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(s->ep, &s->av->fid, 0);
	if (!ret)
		ret = fi_enable(s->ep);
	if (!ret)
		ret = fi_getname(&s->ep->fid, &s->addr, &len);
	return ret;
}

int main(void)
{
	static uint8_t small_tx[SMALL], small_rx[SMALL], big_tx[BIG],
		big_rx[BIG], wd_tx[64], wd_rx[64];
	static uint64_t words[2] = { INIT, INIT32 };
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_data_entry e;
	struct fid_mr *mr;
	uint64_t key, base, got, cmp, got32r = 0, add64 = ADD;
	uint32_t add32 = ADD32, got32 = 0, *w32 = (uint32_t *)&words[1];
	size_t i;
	int ret, bad = 0;

	setenv("FI_IWARP_IFACE", "lo", 0);
	hints->fabric_attr->prov_name = strdup("iwarp");
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SOURCE;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION),
			 NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (ret)
		return fail("fi_getinfo", ret);
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (!ret)
		ret = fi_domain(fabric, info, &domain, NULL);
	if (ret)
		return fail("fi_fabric/fi_domain", ret);
	if ((ret = open_side(&a)) || (ret = open_side(&b)))
		return fail("endpoint", ret);
	if (fi_av_insert(a.av, &b.addr, 1, &a.peer, 0, NULL) != 1 ||
	    fi_av_insert(b.av, &a.addr, 1, &b.peer, 0, NULL) != 1)
		return fail("fi_av_insert", 0);
	ret = fi_mr_reg(domain, words, sizeof(words),
			FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL);
	if (ret)
		return fail("fi_mr_reg", ret);
	/* the Write lands in wd_rx: a second region */
	struct fid_mr *mr_wd;

	ret = fi_mr_reg(domain, wd_rx, sizeof(wd_rx), FI_REMOTE_WRITE, 0, 0, 0,
			&mr_wd, NULL);
	if (ret)
		return fail("fi_mr_reg", ret);
	key = fi_mr_key(mr);
	base = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
		       (uint64_t)(uintptr_t)words : 0;

	for (i = 0; i < SMALL; i++)
		small_tx[i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i < BIG; i++)
		big_tx[i] = (uint8_t)(i * 13 + 5);
	for (i = 0; i < sizeof(wd_tx); i++)
		wd_tx[i] = (uint8_t)(0xa0 + i);

	/* 1. tagged EAGER */
	ret = (int)POST(fi_trecv(b.ep, small_rx, SMALL, NULL, b.peer, TAG, 0,
				 NULL));
	if (!ret)
		ret = (int)POST(fi_tsend(a.ep, small_tx, SMALL, NULL, a.peer,
					 TAG, NULL));
	if (ret)
		return fail("tagged send", ret);
	bad |= wait_one(&a, NULL) | wait_one(&b, NULL);
	bad |= memcmp(small_tx, small_rx, SMALL) != 0;

	/* 2. untagged rendezvous: RTS, RDMA Read, FIN */
	ret = (int)POST(fi_recv(b.ep, big_rx, BIG, NULL, b.peer, NULL));
	if (!ret)
		ret = (int)POST(fi_send(a.ep, big_tx, BIG, NULL, a.peer, NULL));
	if (ret)
		return fail("big send", ret);
	bad |= wait_one(&b, NULL) | wait_one(&a, NULL);
	bad |= memcmp(big_tx, big_rx, BIG) != 0;

	/* 3. RDMA Write with remote CQ data (WDATA) */
	ret = (int)POST(fi_recv(b.ep, small_rx, SMALL, NULL, b.peer, NULL));
	if (!ret)
		ret = (int)POST(fi_writedata(a.ep, wd_tx, sizeof(wd_tx), NULL,
					     CQDATA, a.peer,
					     (info->domain_attr->mr_mode &
					      FI_MR_VIRT_ADDR) ?
						     (uint64_t)(uintptr_t)wd_rx : 0,
					     fi_mr_key(mr_wd), NULL));
	if (ret)
		return fail("fi_writedata", ret);
	bad |= wait_one(&a, NULL) | wait_one(&b, &e);
	if (!(e.flags & FI_REMOTE_CQ_DATA) || e.data != CQDATA ||
	    memcmp(wd_tx, wd_rx, sizeof(wd_tx))) {
		fprintf(stderr, "rdm_ops: writedata: flags 0x%" PRIx64
			" data 0x%" PRIx64 "\n", (uint64_t)e.flags,
			(uint64_t)e.data);
		bad = 1;
	}

	/* 4. 64-bit FetchAdd and CmpSwap */
	ret = (int)POST(fi_fetch_atomic(a.ep, &add64, 1, NULL, &got, NULL,
					a.peer, base, key, FI_UINT64, FI_SUM,
					NULL));
	if (ret)
		return fail("fi_fetch_atomic", ret);
	bad |= wait_one(&a, NULL);
	bad |= got != INIT || words[0] != INIT + ADD;
	cmp = INIT + ADD;
	{
		uint64_t swap = SWAP, old = 0;

		ret = (int)POST(fi_compare_atomic(a.ep, &swap, 1, NULL, &cmp,
						  NULL, &old, NULL, a.peer,
						  base, key, FI_UINT64,
						  FI_CSWAP, NULL));
		if (ret)
			return fail("fi_compare_atomic", ret);
		bad |= wait_one(&a, NULL);
		bad |= old != cmp || words[0] != SWAP;
		got32r = old;
	}

	/* 5. 32-bit fetching sum: the provider's own AREQ/ARESP */
	ret = (int)POST(fi_fetch_atomic(a.ep, &add32, 1, NULL, &got32, NULL,
					a.peer, base + 8, key, FI_UINT32,
					FI_SUM, NULL));
	if (ret)
		return fail("fi_fetch_atomic 32", ret);
	bad |= wait_one(&a, NULL);
	bad |= got32 != INIT32 || *w32 != INIT32 + ADD32;

	printf("rdm_ops a_port=%u b_port=%u tag=0x%" PRIx64 " small=%u"
	       " big=%u cqdata=0x%" PRIx64 " key=0x%" PRIx64
	       " addr=0x%" PRIx64 " add=0x%" PRIx64 " fadd_orig=0x%" PRIx64
	       " compare=0x%" PRIx64 " swap=0x%" PRIx64
	       " cswap_orig=0x%" PRIx64 " add32=0x%x add32_orig=0x%x\n",
	       ntohs(a.addr.sin_port), ntohs(b.addr.sin_port), (uint64_t)TAG,
	       SMALL, BIG, (uint64_t)CQDATA, key, base, (uint64_t)ADD,
	       (uint64_t)INIT, cmp, (uint64_t)SWAP, got32r,
	       ADD32, got32);
	fflush(stdout);

	fi_close(&a.ep->fid);
	fi_close(&b.ep->fid);
	fi_close(&mr->fid);
	fi_close(&mr_wd->fid);
	fi_close(&a.av->fid);
	fi_close(&b.av->fid);
	fi_close(&a.cq->fid);
	fi_close(&b.cq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	if (bad)
		fprintf(stderr, "rdm_ops: data or fetched values wrong\n");
	return bad;
}
