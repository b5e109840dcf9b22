/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Indexes into a ring of cap entries (head < cap, off <= cap) without a
 * division: the queues of the completion and receive paths grow to any
 * size, and a 64-bit div costs tens of cycles on every message.
 */
#ifndef IWARP_RING_H
#define IWARP_RING_H

#include <stddef.h>

static inline size_t iw_ring_at(size_t head, size_t off, size_t cap)
{
	size_t i = head + off;

	return i >= cap ? i - cap : i;
}

/* head one entry on */
static inline size_t iw_ring_next(size_t head, size_t cap)
{
	return head + 1 == cap ? 0 : head + 1;
}

#endif /* IWARP_RING_H */
