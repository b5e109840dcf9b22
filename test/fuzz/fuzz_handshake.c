/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer: a keyed handshake as the peer sends it. Octet 0 bit 0: we
 * are the initiator (the input is a Reply) or the responder (a Request);
 * then the MPA frame, whose private data must start with an auth block.
 * A Reply's block is accepted only if its proof is octet for octet the
 * one iwarp_auth_pd_put makes for the responder. After a Request comes
 * the initiator's first FPDU, whose Send must be its auth message,
 * accepted only if it is octet for octet the one iwarp_auth_msg_put
 * makes for the initiator. The key and our nonce are fixed.
 */
#include <stdlib.h>
#include <string.h>

#include "iwarp.h"
#include "iwarp_auth.h"
#include "iwarp/wire.h"

/* what iwarp_auth.c's warnings refer to; no warning runs here */
struct fi_provider iwarp_prov;
struct iwarp_params iwarp_params;

static const struct iwarp_auth_key key = {
	.len = 16,
	.key = "fuzzing job key!",
};

/* The peer's first Send in an FPDU at p: its payload, or NULL. */
static const uint8_t *first_send(const uint8_t *p, size_t len, size_t *plen)
{
	struct ddp_hdr h;
	struct iw_err err;
	size_t ulpdu, hl;

	if (len < MPA_FPDU_HDR)
		return NULL;
	ulpdu = iw_get16(p);
	if (mpa_fpdu_len(ulpdu) > len || ulpdu < 1 ||
	    ddp_hdr_parse(p + MPA_FPDU_HDR, ulpdu, &h, &err) || h.tagged ||
	    h.opcode != RDMAP_SEND)
		return NULL;
	hl = ddp_hdr_size(p[MPA_FPDU_HDR]);
	*plen = ulpdu - hl;
	return p + MPA_FPDU_HDR + hl;
}

/* Accepted only if it is the peer's message (reserved octets aside). */
static void check_msg(struct iwarp_auth *a, const uint8_t *m, size_t len)
{
	struct iwarp_auth peer = *a;
	uint8_t want[IWARP_AUTH_MSG_LEN];
	uint8_t *copy = malloc(len ? len : 1);
	int ret;

	peer.initiator = !a->initiator;
	if (iwarp_auth_msg_put(want, &key, &peer) ||
	    iwarp_auth_msg_check(a, &key, want, sizeof(want)))
		abort();	/* the round trip always checks */
	a->verified = false;
	memcpy(copy, m, len);	/* exact size: ASan sees over-reads */
	ret = iwarp_auth_msg_check(a, &key, copy, len);
	if (!ret && (len != sizeof(want) || memcmp(copy, want, 6) ||
		     memcmp(copy + 8, want + 8, sizeof(want) - 8)))
		abort();
	if (ret && ret != -FI_EINVAL && ret != -FI_EACCES)
		abort();
	if (ret == -FI_EACCES && !memcmp(copy + 8, want + 8, 32))
		abort();
	free(copy);
}

/* The Reply's block pd (ret: what iwarp_auth_pd_get said of it). */
static void check_reply(struct iwarp_auth *a, const uint8_t *pd, size_t len,
			int ret)
{
	struct iwarp_auth peer = *a, again = *a;
	uint8_t want[IWARP_AUTH_REPLY_LEN];

	if (ret && ret != -FI_EINVAL && ret != -FI_EACCES)
		abort();
	if (ret == -FI_EINVAL)
		return;
	if (len < IWARP_AUTH_REPLY_LEN || memcmp(pd, "IWAK\2", 5) ||
	    a->verified != !ret)
		abort();	/* a proof taken from something else */
	peer.initiator = false;
	if (iwarp_auth_pd_put(want, &key, &peer) ||
	    iwarp_auth_pd_get(&again, &key, want, sizeof(want)))
		abort();	/* the round trip always checks */
	if (!ret != !memcmp(pd + IWARP_AUTH_PD_LEN, want + IWARP_AUTH_PD_LEN,
			    IWARP_AUTH_MAC_LEN))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct iwarp_auth a = { 0 };
	enum mpa_kind kind;
	struct mpa_frame f;
	struct iw_err err;
	const uint8_t *m;
	uint8_t *copy;
	size_t flen, mlen = 0;
	int ret;

	if (size < 1)
		return 0;
	kind = data[0] & 1 ? MPA_REPLY : MPA_REQUEST;
	a.initiator = kind == MPA_REPLY;
	memset(a.initiator ? a.nonce_i : a.nonce_r, 0xa5,
	       IWARP_AUTH_NONCE_LEN);
	copy = malloc(size - 1 ? size - 1 : 1);
	memcpy(copy, data + 1, size - 1);
	if (mpa_frame_parse(copy, size - 1, kind, &f, &err))
		goto out;
	ret = iwarp_auth_pd_get(&a, &key, f.ulp_pd, f.ulp_pd_len);
	if (a.initiator)
		check_reply(&a, f.ulp_pd, f.ulp_pd_len, ret);
	if (a.initiator || ret)
		goto out;
	if (f.ulp_pd_len < IWARP_AUTH_PD_LEN || memcmp(f.ulp_pd, "IWAK", 4))
		abort();	/* a block was taken from something else */
	flen = MPA_HDR_LEN + f.pd_len;
	m = first_send(copy + flen, size - 1 - flen, &mlen);
	if (m)
		check_msg(&a, m, mlen);
out:
	free(copy);
	return 0;
}
