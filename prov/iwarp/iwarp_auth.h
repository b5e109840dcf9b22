/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Job keys: both ends of a connection prove they hold the same key
 * without sending it. Each side puts a fresh 16-octet nonce in its MPA
 * private data (the initiator in the Request, the responder in the
 * Reply), in an auth block before the endpoint type's own data; the
 * responder, which knows both nonces by then, adds its proof:
 *
 *	0 magic "IWAK"  4 version(8)  5 flags(8)  6 reserved(16)  8 nonce[16]
 *	24 proof[32], the Reply's only: HMAC-SHA256(key, L | 'R' | nonce_I | nonce_R)
 *
 * with L = "iwarp auth 2". The initiator checks it on the Reply and,
 * once connected, sends its own proof as its first message, an iWARP
 * Send of 40 octets:
 *
 *	0 magic "IWAM"  4 version(8)  5 role(8) 'I'  6 reserved(16)
 *	8 HMAC-SHA256(key, L | 'I' | nonce_I | nonce_R)
 *
 * The role keeps one side's proof from being reflected back as the
 * other's; the nonces of both sides keep a recorded handshake from
 * being replayed. The initiator is connected as soon as the Reply's
 * proof checks; the responder accepts nothing from the peer until the
 * initiator's proof checks (the engine's gate, iw_qp_gate). Version 1
 * (both proofs as Sends) is refused as no auth block. Without a key
 * nothing of this goes on the wire.
 */
#ifndef IWARP_AUTH_H
#define IWARP_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fi_info;

#define IWARP_AUTH_NONCE_LEN 16
#define IWARP_AUTH_PD_LEN 24		/* the Request's auth block */
#define IWARP_AUTH_MAC_LEN 32
#define IWARP_AUTH_REPLY_LEN 56		/* the Reply's, with the proof */
#define IWARP_AUTH_MSG_LEN 40
#define IWARP_AUTH_KEY_MAX 256
#define IWARP_AUTH_VERSION 2

struct iwarp_auth_key {
	size_t len;			/* 0: no key */
	uint8_t key[IWARP_AUTH_KEY_MAX];
};

/* One connection's handshake. */
struct iwarp_auth {
	bool initiator;
	bool verified;			/* the peer's proof checked */
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
/* The auth block the initiator (Request) or the responder (Reply) sends. */
static inline size_t iwarp_auth_pd_len(bool initiator)
{
	return initiator ? IWARP_AUTH_PD_LEN : IWARP_AUTH_REPLY_LEN;
}
/* This side's auth block (iwarp_auth_pd_len octets); the responder's
 * carries its proof. 0 or -FI_EIO. */
int iwarp_auth_pd_put(uint8_t *p, const struct iwarp_auth_key *k,
		      const struct iwarp_auth *a);
/* Takes the peer's nonce from its private data; the initiator also
 * checks the Reply's proof (a->verified is set). 0, -FI_EINVAL when pd
 * does not start with an auth block of this version, -FI_EACCES for a
 * wrong proof, -FI_EIO. k is not used on the responder. */
int iwarp_auth_pd_get(struct iwarp_auth *a, const struct iwarp_auth_key *k,
		      const uint8_t *pd, size_t len);
/* This side's auth message (IWARP_AUTH_MSG_LEN octets). 0 or -FI_EIO. */
int iwarp_auth_msg_put(uint8_t *p, const struct iwarp_auth_key *k,
		       const struct iwarp_auth *a);
/* Checks the peer's auth message: 0 (a->verified is set), -FI_EINVAL
 * for a malformed one, -FI_EACCES for a wrong proof. */
int iwarp_auth_msg_check(struct iwarp_auth *a, const struct iwarp_auth_key *k,
			 const uint8_t *p, size_t len);

/* Releases what the HMACs keep per process (provider cleanup). */
void iwarp_auth_fini(void);

#endif /* IWARP_AUTH_H */
