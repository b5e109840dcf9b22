/* SPDX-License-Identifier: BSD-2-Clause */
/* Job keys (see iwarp_auth.h): nonces, proofs and their checks. */
#include "iwarp.h"
#include "iwarp_auth.h"
#include "iwarp/wire.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <string.h>

#define IWARP_AUTH_PD_MAGIC 0x4957414bu	/* "IWAK" */
#define IWARP_AUTH_MSG_MAGIC 0x4957414du	/* "IWAM" */
#define IWARP_AUTH_LABEL "iwarp auth 1"

static int iwarp_auth_key_set(struct iwarp_auth_key *k, const void *key,
			      size_t len)
{
	if (len > IWARP_AUTH_KEY_MAX) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
			"auth key of %zu octets, at most %d\n", len,
			IWARP_AUTH_KEY_MAX);
		return -FI_EINVAL;
	}
	memcpy(k->key, key, len);
	k->len = len;
	return 0;
}

int iwarp_auth_key_pick(struct iwarp_auth_key *k, const struct fi_info *info)
{
	const struct fi_ep_attr *ep = info ? info->ep_attr : NULL;
	const struct fi_domain_attr *dom = info ? info->domain_attr : NULL;
	const char *env = iwarp_params.auth_key;

	k->len = 0;
	if (ep && ep->auth_key && ep->auth_key_size)
		return iwarp_auth_key_set(k, ep->auth_key, ep->auth_key_size);
	if (dom && dom->auth_key && dom->auth_key_size)
		return iwarp_auth_key_set(k, dom->auth_key,
					  dom->auth_key_size);
	if (env && *env)
		return iwarp_auth_key_set(k, env, strlen(env));
	return 0;
}

void iwarp_auth_key_clear(struct iwarp_auth_key *k)
{
	OPENSSL_cleanse(k, sizeof(*k));
}

int iwarp_auth_start(struct iwarp_auth *a, bool initiator)
{
	uint8_t *mine = initiator ? a->nonce_i : a->nonce_r;

	memset(a, 0, sizeof(*a));
	a->initiator = initiator;
	if (RAND_bytes(mine, IWARP_AUTH_NONCE_LEN) != 1) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
			"no random octets for an auth nonce\n");
		return -FI_EIO;
	}
	return 0;
}

void iwarp_auth_pd_put(uint8_t *p, const struct iwarp_auth *a)
{
	memset(p, 0, IWARP_AUTH_PD_LEN);
	iw_put32(p, IWARP_AUTH_PD_MAGIC);
	p[4] = IWARP_AUTH_VERSION;
	memcpy(p + 8, a->initiator ? a->nonce_i : a->nonce_r,
	       IWARP_AUTH_NONCE_LEN);
}

int iwarp_auth_pd_get(struct iwarp_auth *a, const uint8_t *pd, size_t len)
{
	if (len < IWARP_AUTH_PD_LEN || iw_get32(pd) != IWARP_AUTH_PD_MAGIC ||
	    pd[4] != IWARP_AUTH_VERSION)
		return -FI_EINVAL;
	memcpy(a->initiator ? a->nonce_r : a->nonce_i, pd + 8,
	       IWARP_AUTH_NONCE_LEN);
	return 0;
}

/* HMAC-SHA256(key, label | role | nonce_I | nonce_R) */
static int iwarp_auth_mac(uint8_t *mac, const struct iwarp_auth_key *k,
			  const struct iwarp_auth *a, uint8_t role)
{
	uint8_t in[sizeof(IWARP_AUTH_LABEL) + 2 * IWARP_AUTH_NONCE_LEN];
	unsigned int len = IWARP_AUTH_MAC_LEN;
	size_t n = sizeof(IWARP_AUTH_LABEL) - 1;

	memcpy(in, IWARP_AUTH_LABEL, n);
	in[n++] = role;
	memcpy(in + n, a->nonce_i, IWARP_AUTH_NONCE_LEN);
	memcpy(in + n + IWARP_AUTH_NONCE_LEN, a->nonce_r,
	       IWARP_AUTH_NONCE_LEN);
	n += 2 * IWARP_AUTH_NONCE_LEN;
	if (!HMAC(EVP_sha256(), k->key, (int)k->len, in, n, mac, &len) ||
	    len != IWARP_AUTH_MAC_LEN)
		return -FI_EIO;
	return 0;
}

int iwarp_auth_msg_put(uint8_t *p, const struct iwarp_auth_key *k,
		       const struct iwarp_auth *a)
{
	uint8_t role = a->initiator ? 'I' : 'R';

	memset(p, 0, IWARP_AUTH_MSG_LEN);
	iw_put32(p, IWARP_AUTH_MSG_MAGIC);
	p[4] = IWARP_AUTH_VERSION;
	p[5] = role;
	return iwarp_auth_mac(p + 8, k, a, role);
}

int iwarp_auth_msg_check(struct iwarp_auth *a, const struct iwarp_auth_key *k,
			 const uint8_t *p, size_t len)
{
	uint8_t role = a->initiator ? 'R' : 'I';
	uint8_t mac[IWARP_AUTH_MAC_LEN];

	if (len != IWARP_AUTH_MSG_LEN ||
	    iw_get32(p) != IWARP_AUTH_MSG_MAGIC ||
	    p[4] != IWARP_AUTH_VERSION || p[5] != role)
		return -FI_EINVAL;
	if (iwarp_auth_mac(mac, k, a, role))
		return -FI_EIO;
	if (CRYPTO_memcmp(mac, p + 8, IWARP_AUTH_MAC_LEN))
		return -FI_EACCES;
	a->verified = true;
	return 0;
}
