/* SPDX-License-Identifier: BSD-2-Clause */
/* The RDM header and connection private data on the wire (rdm_wire.h). */
#include "rdm_wire.h"

#include <string.h>

void iwarp_rdm_hdr_put(uint8_t *p, const struct iwarp_rdm_hdr *h)
{
	p[0] = h->op;
	p[1] = h->flags;
	iw_put16(p + 2, h->credits);
	iw_put32(p + 4, h->len);
	iw_put32(p + 8, h->msg_id);
	iw_put32(p + 12, h->stag);
	iw_put64(p + 16, h->tag);
	iw_put64(p + 24, h->data);
	iw_put64(p + 32, h->addr);
}

int iwarp_rdm_hdr_get(const uint8_t *p, size_t len, struct iwarp_rdm_hdr *h)
{
	if (len < IWARP_RDM_HDR_LEN)
		return -FI_EINVAL;
	h->op = p[0];
	h->flags = p[1];
	h->credits = iw_get16(p + 2);
	h->len = iw_get32(p + 4);
	h->msg_id = iw_get32(p + 8);
	h->stag = iw_get32(p + 12);
	h->tag = iw_get64(p + 16);
	h->data = iw_get64(p + 24);
	h->addr = iw_get64(p + 32);
	if (h->op < IWARP_RDM_EAGER || h->op > IWARP_RDM_ARESP)
		return -FI_EINVAL;
	if (h->credits > IWARP_RDM_CREDITS_WIDE)
		return -FI_EINVAL;	/* a peer cannot return more than it got */
	return 0;
}

void iwarp_rdm_pd_put(uint8_t *p, const struct iwarp_rdm_pdata *d)
{
	memset(p, 0, IWARP_RDM_PD_LEN);
	iw_put32(p, IWARP_RDM_MAGIC);
	p[4] = d->version;
	if (d->addr.sa.sa_family == AF_INET6) {
		p[5] = 6;
		memcpy(p + 6, &d->addr.sin6.sin6_port, 2);
		memcpy(p + 8, &d->addr.sin6.sin6_addr, 16);
	} else {
		p[5] = 4;
		memcpy(p + 6, &d->addr.sin.sin_port, 2);
		memcpy(p + 8, &d->addr.sin.sin_addr, 4);
	}
	iw_put64(p + 24, d->instance);
}

int iwarp_rdm_pd_get(const uint8_t *p, size_t len, struct iwarp_rdm_pdata *d)
{
	memset(d, 0, sizeof(*d));
	if (len < IWARP_RDM_PD_LEN || iw_get32(p) != IWARP_RDM_MAGIC ||
	    (p[4] & ~(IWARP_RDM_COLLISION | IWARP_RDM_RFC7306 |
		      IWARP_RDM_KEYREF | IWARP_RDM_SHM | IWARP_RDM_WIDE)) !=
		    IWARP_RDM_VERSION)
		return -FI_EINVAL;
	d->version = p[4];
	if (p[5] == 6) {
		d->addr.sin6.sin6_family = AF_INET6;
		memcpy(&d->addr.sin6.sin6_port, p + 6, 2);
		memcpy(&d->addr.sin6.sin6_addr, p + 8, 16);
	} else if (p[5] == 4) {
		d->addr.sin.sin_family = AF_INET;
		memcpy(&d->addr.sin.sin_port, p + 6, 2);
		memcpy(&d->addr.sin.sin_addr, p + 8, 4);
	} else {
		return -FI_EINVAL;
	}
	d->instance = iw_get64(p + 24);
	return 0;
}

int iwarp_rdm_pd_cmp(const struct iwarp_rdm_pdata *a,
		     const struct iwarp_rdm_pdata *b)
{
	uint8_t pa[IWARP_RDM_PD_LEN], pb[IWARP_RDM_PD_LEN];
	int c;

	/* family, port, address, instance: compare the wire images */
	iwarp_rdm_pd_put(pa, a);
	iwarp_rdm_pd_put(pb, b);
	c = memcmp(pa + 5, pb + 5, IWARP_RDM_PD_LEN - 5);
	return c < 0 ? -1 : c > 0;
}
