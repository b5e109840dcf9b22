/* SPDX-License-Identifier: BSD-2-Clause */
/* Job keys (see iwarp_auth.h): nonces, proofs and their checks. */
#include "iwarp.h"
#include "iwarp_auth.h"
#include "iwarp/wire.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define IWARP_AUTH_PD_MAGIC 0x4957414bu	/* "IWAK" */
#define IWARP_AUTH_MSG_MAGIC 0x4957414du	/* "IWAM" */
#define IWARP_AUTH_LABEL "iwarp auth 2"

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

/*
 * OpenSSL 3 looks an algorithm up by name at every one-shot HMAC():
 * HMAC-SHA256 is fetched once per process instead. A job has one key:
 * the context keyed with the last key used is kept, and each HMAC
 * starts it again, under the lock, without a key: neither the key's
 * pads hashed again nor a copy of the context (1.3 us an HMAC instead
 * of 3.4 here). Released at provider cleanup (iwarp_auth_fini), as the
 * provider may be unloaded before exit.
 */
static EVP_MAC *iwarp_auth_hmac;
static pthread_mutex_t iwarp_auth_lock = PTHREAD_MUTEX_INITIALIZER;

static EVP_MAC_CTX *iwarp_auth_keyed;
static struct iwarp_auth_key iwarp_auth_keyed_key;

/*
 * Nonces come from OpenSSL's generator in batches: one RAND_bytes costs
 * a few us whatever its length, and a connection's setup takes one on
 * each side. Octets handed out are wiped from the batch; a child of
 * fork() (another pid) draws a batch of its own.
 */
#define IWARP_AUTH_NONCE_BATCH 64
static uint8_t iwarp_auth_nonces[IWARP_AUTH_NONCE_BATCH *
				 IWARP_AUTH_NONCE_LEN];
static unsigned int iwarp_auth_nonces_left;
static pid_t iwarp_auth_nonces_pid;

static int iwarp_auth_nonce(uint8_t *n)
{
	pid_t pid = getpid();
	uint8_t *p;
	int ret = 0;

	pthread_mutex_lock(&iwarp_auth_lock);
	if (pid != iwarp_auth_nonces_pid || !iwarp_auth_nonces_left) {
		iwarp_auth_nonces_left = 0;
		if (RAND_bytes(iwarp_auth_nonces,
			       sizeof(iwarp_auth_nonces)) == 1) {
			iwarp_auth_nonces_left = IWARP_AUTH_NONCE_BATCH;
			iwarp_auth_nonces_pid = pid;
		} else {
			ret = -FI_EIO;
		}
	}
	if (!ret) {
		p = iwarp_auth_nonces +
		    --iwarp_auth_nonces_left * IWARP_AUTH_NONCE_LEN;
		memcpy(n, p, IWARP_AUTH_NONCE_LEN);
		OPENSSL_cleanse(p, IWARP_AUTH_NONCE_LEN);
	}
	pthread_mutex_unlock(&iwarp_auth_lock);
	return ret;
}

int iwarp_auth_start(struct iwarp_auth *a, bool initiator)
{
	uint8_t *mine = initiator ? a->nonce_i : a->nonce_r;

	memset(a, 0, sizeof(*a));
	a->initiator = initiator;
	if (iwarp_auth_nonce(mine)) {
		FI_WARN(&iwarp_prov, FI_LOG_EP_CTRL,
			"no random octets for an auth nonce\n");
		return -FI_EIO;
	}
	return 0;
}

/* An HMAC-SHA256 context without a key, or NULL; lock held. */
static EVP_MAC_CTX *iwarp_auth_ctx_new(void)
{
	OSSL_PARAM par[] = {
		OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
						 (char *)"SHA256", 0),
		OSSL_PARAM_construct_end(),
	};
	EVP_MAC_CTX *t;

	if (!iwarp_auth_hmac)
		iwarp_auth_hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	t = iwarp_auth_hmac ? EVP_MAC_CTX_new(iwarp_auth_hmac) : NULL;
	if (t && !EVP_MAC_CTX_set_params(t, par)) {
		EVP_MAC_CTX_free(t);
		t = NULL;
	}
	return t;
}

/* The keyed context for k, made when k is not the last key; lock held. */
static EVP_MAC_CTX *iwarp_auth_keyed_get(const struct iwarp_auth_key *k)
{
	EVP_MAC_CTX *c;

	if (iwarp_auth_keyed && iwarp_auth_keyed_key.len == k->len &&
	    !CRYPTO_memcmp(iwarp_auth_keyed_key.key, k->key, k->len))
		return iwarp_auth_keyed;
	c = iwarp_auth_ctx_new();
	if (c && !EVP_MAC_init(c, k->key, k->len, NULL)) {
		EVP_MAC_CTX_free(c);
		c = NULL;
	}
	if (!c)
		return NULL;
	EVP_MAC_CTX_free(iwarp_auth_keyed);
	iwarp_auth_keyed = c;
	memcpy(iwarp_auth_keyed_key.key, k->key, k->len);
	iwarp_auth_keyed_key.len = k->len;
	return c;
}

void iwarp_auth_fini(void)
{
	pthread_mutex_lock(&iwarp_auth_lock);
	EVP_MAC_CTX_free(iwarp_auth_keyed);
	EVP_MAC_free(iwarp_auth_hmac);
	iwarp_auth_keyed = NULL;
	iwarp_auth_hmac = NULL;
	OPENSSL_cleanse(&iwarp_auth_keyed_key, sizeof(iwarp_auth_keyed_key));
	OPENSSL_cleanse(iwarp_auth_nonces, sizeof(iwarp_auth_nonces));
	iwarp_auth_nonces_left = 0;
	pthread_mutex_unlock(&iwarp_auth_lock);
}

/* HMAC-SHA256(key, label | role | nonce_I | nonce_R) */
static int iwarp_auth_mac(uint8_t *mac, const struct iwarp_auth_key *k,
			  const struct iwarp_auth *a, uint8_t role)
{
	uint8_t in[sizeof(IWARP_AUTH_LABEL) + 2 * IWARP_AUTH_NONCE_LEN];
	size_t n = sizeof(IWARP_AUTH_LABEL) - 1, len = 0;
	EVP_MAC_CTX *c;
	int ok;

	memcpy(in, IWARP_AUTH_LABEL, n);
	in[n++] = role;
	memcpy(in + n, a->nonce_i, IWARP_AUTH_NONCE_LEN);
	memcpy(in + n + IWARP_AUTH_NONCE_LEN, a->nonce_r,
	       IWARP_AUTH_NONCE_LEN);
	n += 2 * IWARP_AUTH_NONCE_LEN;
	pthread_mutex_lock(&iwarp_auth_lock);
	c = iwarp_auth_keyed_get(k);
	ok = c && EVP_MAC_init(c, NULL, 0, NULL) &&
	     EVP_MAC_update(c, in, n) &&
	     EVP_MAC_final(c, mac, &len, IWARP_AUTH_MAC_LEN) &&
	     len == IWARP_AUTH_MAC_LEN;
	pthread_mutex_unlock(&iwarp_auth_lock);
	return ok ? 0 : -FI_EIO;
}

/* The peer's proof `got` for role: 0 (a->verified set), -FI_EACCES. */
static int iwarp_auth_verify(struct iwarp_auth *a,
			     const struct iwarp_auth_key *k, uint8_t role,
			     const uint8_t *got)
{
	uint8_t mac[IWARP_AUTH_MAC_LEN];

	if (iwarp_auth_mac(mac, k, a, role))
		return -FI_EIO;
	if (CRYPTO_memcmp(mac, got, IWARP_AUTH_MAC_LEN))
		return -FI_EACCES;
	a->verified = true;
	return 0;
}

static void iwarp_auth_head(uint8_t *p, uint32_t magic, size_t len)
{
	memset(p, 0, len);
	iw_put32(p, magic);
	p[4] = IWARP_AUTH_VERSION;
}

int iwarp_auth_pd_put(uint8_t *p, const struct iwarp_auth_key *k,
		      const struct iwarp_auth *a)
{
	iwarp_auth_head(p, IWARP_AUTH_PD_MAGIC,
			iwarp_auth_pd_len(a->initiator));
	memcpy(p + 8, a->initiator ? a->nonce_i : a->nonce_r,
	       IWARP_AUTH_NONCE_LEN);
	return a->initiator ? 0 : iwarp_auth_mac(p + IWARP_AUTH_PD_LEN, k, a,
						 'R');
}

int iwarp_auth_pd_get(struct iwarp_auth *a, const struct iwarp_auth_key *k,
		      const uint8_t *pd, size_t len)
{
	if (len < iwarp_auth_pd_len(!a->initiator) ||
	    iw_get32(pd) != IWARP_AUTH_PD_MAGIC ||
	    pd[4] != IWARP_AUTH_VERSION)
		return -FI_EINVAL;
	memcpy(a->initiator ? a->nonce_r : a->nonce_i, pd + 8,
	       IWARP_AUTH_NONCE_LEN);
	return a->initiator ? iwarp_auth_verify(a, k, 'R',
						pd + IWARP_AUTH_PD_LEN) : 0;
}

int iwarp_auth_msg_put(uint8_t *p, const struct iwarp_auth_key *k,
		       const struct iwarp_auth *a)
{
	uint8_t role = a->initiator ? 'I' : 'R';

	iwarp_auth_head(p, IWARP_AUTH_MSG_MAGIC, IWARP_AUTH_MSG_LEN);
	p[5] = role;
	return iwarp_auth_mac(p + 8, k, a, role);
}

int iwarp_auth_msg_check(struct iwarp_auth *a, const struct iwarp_auth_key *k,
			 const uint8_t *p, size_t len)
{
	uint8_t role = a->initiator ? 'R' : 'I';

	if (len != IWARP_AUTH_MSG_LEN ||
	    iw_get32(p) != IWARP_AUTH_MSG_MAGIC ||
	    p[4] != IWARP_AUTH_VERSION || p[5] != role)
		return -FI_EINVAL;
	return iwarp_auth_verify(a, k, role, p + 8);
}
