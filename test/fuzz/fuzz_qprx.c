/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer: the engine's receive placement (iw_qprx.c) and what it
 * answers, behind the stream decoder. A QP in RTS over a socketpair (MPA
 * without CRC or markers), IRD and ORD 4, regions with every remote right,
 * with some, and in another PD, two posted receives, and a FetchAdd and a
 * Read of its own outstanding; the input is the peer's byte stream.
 * Octet 0 bit 0 turns RFC 7306 atomics on. The regions' STags get key 1
 * (0x00100001..3) so that inputs can name them. Whatever arrives, every
 * work request must complete exactly once by the time the QP is
 * destroyed.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iw_priv.h"

#define N_WR 4
#define REGION 4096

static uint8_t mem[3][REGION] __attribute__((aligned(8)));
static uint8_t rbuf[2][256], rdst[64];
static uint64_t res;
static int done[N_WR];

static void on_wc(void *arg, struct iw_qp *qp, const struct iw_wc *wc)
{
	uintptr_t i = (uintptr_t)wc->ctx;

	if (i >= N_WR || done[i]++)
		abort();	/* unknown, or completed twice */
}

static const struct iw_qp_ops ops = { .complete = on_wc };

static void nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* Reads and drops what the engine sent. */
static void drain(int fd)
{
	uint8_t buf[4096];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

static void run(struct iw_pd *pd, int sv[2], const uint8_t *data,
		size_t size)
{
	struct iw_qp_attr attr = { .ops = &ops };
	struct iw_sge sge;
	struct iw_recv_wr rwr = { .sgl = &sge, .num_sge = 1 };
	struct iw_send_wr fadd = {
		.ctx = (void *)2, .op = IW_WR_ATOMIC_FADD,
		.flags = IW_WR_SIGNALED, .sgl = &sge, .num_sge = 1,
		.rstag = 0x1234, .rto = 8, .add_swap = 1,
	};
	struct iw_send_wr read = {
		.ctx = (void *)3, .op = IW_WR_READ, .flags = IW_WR_SIGNALED,
		.sgl = &sge, .num_sge = 1, .rstag = 0x4321, .rto = 0,
	};
	struct iw_qp *qp;
	size_t off = 0;
	int i, after = 0;

	if (iw_qp_create(pd, &attr, &qp))
		abort();
	/* as iw_accept leaves it, minus the MPA Reply */
	qp->fd = sv[0];
	qp->ird = qp->ord = 4;
	if (iw_qp_setup_full_op(qp))
		abort();
	qp->cm = CM_RTS;
	iw_qp_set_atomics(qp, data[0] & 1);
	for (i = 0; i < 2; i++) {
		sge = (struct iw_sge){ rbuf[i], sizeof(rbuf[i]) };
		rwr.ctx = (void *)(uintptr_t)i;
		iw_qp_post_recv(qp, &rwr);
	}
	sge = (struct iw_sge){ &res, 8 };
	if (data[0] & 1)
		iw_qp_post_send(qp, &fadd);
	else
		done[2] = 1;	/* refused while atomics are off */
	sge = (struct iw_sge){ rdst, sizeof(rdst) };
	iw_qp_post_send(qp, &read);
	data++;
	size--;
	/* all of the input, then the peer's FIN and a few more rounds */
	for (i = 0; i < 1024 && after < 4; i++) {
		if (off < size) {
			ssize_t n = write(sv[1], data + off, size - off);

			if (n > 0)
				off += (size_t)n;
		} else if (off == size) {
			shutdown(sv[1], SHUT_WR);
			off++;
		} else {
			after++;
		}
		drain(sv[1]);
		if (iw_qp_progress(qp) < 0)
			break;
	}
	iw_qp_destroy(qp);	/* flushes what is left */
	for (i = 0; i < N_WR; i++)
		if (done[i] != 1)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct iw_mr *mr[3];
	struct iw_dev *dev;
	struct iw_pd *pd, *pd2;
	int sv[2], i;

	if (size < 1 || size > 65536)
		return 0;
	memset(mem, 0xa5, sizeof(mem));
	memset(done, 0, sizeof(done));
	if (iw_dev_open(&dev) || iw_pd_alloc(dev, &pd) ||
	    iw_pd_alloc(dev, &pd2))
		abort();
	dev->rng = 0x5eed;	/* the same sink STags for every run */
	iw_mr_reg(pd, mem[0], REGION, 0,
		  IW_ACC_LOCAL_WRITE | IW_ACC_REMOTE_READ |
		  IW_ACC_REMOTE_WRITE | IW_ACC_REMOTE_ATOMIC |
		  IW_ACC_REMOTE_INVALIDATE, &mr[0]);
	iw_mr_reg(pd, mem[1], REGION, 0x10000, IW_ACC_REMOTE_WRITE, &mr[1]);
	iw_mr_reg(pd2, mem[2], REGION, 0,
		  IW_ACC_REMOTE_READ | IW_ACC_REMOTE_WRITE |
		  IW_ACC_REMOTE_ATOMIC, &mr[2]);
	/* guessable keys: the fuzzer need not find 12 random bits */
	for (i = 0; i < 3; i++)
		mr[i]->stag = (mr[i]->stag & ~IW_STAG_KEY_MASK) | 1u;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		abort();
	nonblock(sv[0]);
	nonblock(sv[1]);
	run(pd, sv, data, size);
	close(sv[1]);
	iw_mr_dereg(mr[0]);
	iw_mr_dereg(mr[1]);
	iw_mr_dereg(mr[2]);
	iw_pd_free(pd2);
	iw_pd_free(pd);
	iw_dev_close(dev);
	return 0;
}
