/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job keys: both ends of a connection prove they hold the same key
 * without sending it. Each side puts a fresh 16-octet nonce in its MPA
 * private data (the initiator in the Request, the responder in the
 * Reply), in an auth block before the endpoint type's own data:
 *
 *	0 magic "IWAK"  4 version(8)  5 flags(8)  6 reserved(16)  8 nonce[16]
 *
 * Once the connection is up, each side's first message is an auth
 * message, an iWARP Send of 40 octets:
 *
 *	0 magic "IWAM"  4 version(8)  5 role(8) 'I' or 'R'  6 reserved(16)
 *	8 HMAC-SHA256(key, "iwarp auth 1" | role | nonce_I | nonce_R)
 *
 * The role keeps one side's proof from being reflected back as the
 * other's; the nonces of both sides keep a recorded handshake from
 * being replayed. Nothing else is accepted from the peer until its auth
 * message checks (the engine's gate, iw_qp_gate). Without a key nothing
 * of this goes on the wire.
 */
#ifndef IWARP_AUTH_H
#define IWARP_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fi_info;

#define IWARP_AUTH_NONCE_LEN 16
#define IWARP_AUTH_PD_LEN 24
#define IWARP_AUTH_MAC_LEN 32
#define IWARP_AUTH_MSG_LEN 40
#define IWARP_AUTH_KEY_MAX 256
#define IWARP_AUTH_VERSION 1

struct iwarp_auth_key {
	size_t len;			/* 0: no key */
	uint8_t key[IWARP_AUTH_KEY_MAX];
};

/* One connection's handshake. */
struct iwarp_auth {
	bool initiator;
	bool verified;			/* the peer's auth message checked */
	uint8_t nonce_i[IWARP_AUTH_NONCE_LEN];
	uint8_t nonce_r[IWARP_AUTH_NONCE_LEN];
};

/*
 * The key an endpoint uses: ep_attr->auth_key, else
 * domain_attr->auth_key, else FI_IWARP_AUTH_KEY. 0, or -FI_EINVAL for a
 * key longer than IWARP_AUTH_KEY_MAX.
 */
int iwarp_auth_key_pick(struct iwarp_auth_key *k, const struct fi_info *info);
/* Wipes the key (secret material) before its memory is reused. */
void iwarp_auth_key_clear(struct iwarp_auth_key *k);
static inline bool iwarp_auth_on(const struct iwarp_auth_key *k)
{
	return k->len != 0;
}

/* Starts a handshake: draws this side's nonce. 0 or -FI_EIO. */
int iwarp_auth_start(struct iwarp_auth *a, bool initiator);
/* This side's auth block (IWARP_AUTH_PD_LEN octets). */
void iwarp_auth_pd_put(uint8_t *p, const struct iwarp_auth *a);
/* Takes the peer's nonce from its private data: 0, or -FI_EINVAL when
 * pd does not start with an auth block. */
int iwarp_auth_pd_get(struct iwarp_auth *a, const uint8_t *pd, size_t len);
/* This side's auth message (IWARP_AUTH_MSG_LEN octets). 0 or -FI_EIO. */
int iwarp_auth_msg_put(uint8_t *p, const struct iwarp_auth_key *k,
		       const struct iwarp_auth *a);
/* Checks the peer's auth message: 0 (a->verified is set), -FI_EINVAL
 * for a malformed one, -FI_EACCES for a wrong proof. */
int iwarp_auth_msg_check(struct iwarp_auth *a, const struct iwarp_auth_key *k,
			 const uint8_t *p, size_t len);

#endif /* IWARP_AUTH_H */
