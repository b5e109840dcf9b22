/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address vectors of the iwarp provider (iwarp_av.c), for the RDM
 * endpoint. Needs the definitions of iwarp.h before it (union
 * iwarp_sockaddr, iwarp_container_of): include it after them.
 */
#ifndef IWARP_AV_H
#define IWARP_AV_H

#include "iwarp.h"

#include <rdma/fi_collective.h>

/* An RDM endpoint's name is its listening address: a sockaddr_in or
 * sockaddr_in6 (at most 28 octets, well under Open MPI's 64). */
struct iwarp_av_entry {
	union iwarp_sockaddr addr;	/* port in network order */
	bool used;
};

/*
 * Both types hand out the table index as fi_addr_t. Insertion takes the
 * lowest unused index (fi_av(3) for FI_AV_TABLE), so indices are
 * consecutive until something is removed. Only names of the domain's
 * address family are accepted; fi_av_insert reads them packed at a
 * stride of that family's sockaddr size (what fi_getname returns).
 */
#define IWARP_AV_RX_CTX_BITS_MAX 5	/* RDM's 32 rx contexts */

struct iwarp_av {
	struct fid_av av_fid;
	struct iwarp_domain *dom;
	struct iwarp_fabric *fab;
	enum fi_av_type type;		/* FI_AV_MAP or FI_AV_TABLE */
	struct iwarp_av_entry *tab;	/* fi_addr_t is the index, both types */
	size_t count, cap;
	/* reverse lookup address -> fi_addr (open hash on address+port) */
	size_t *hash;			/* index + 1 of a used entry, 0: free */
	size_t hcap;			/* power of two, >= 2 * cap */
	size_t free_hint;		/* no unused index below it */
	uint64_t gen;			/* changes with every entry */
	/* fi_rx_addr: top bits of an fi_addr_t naming a scalable
	 * endpoint's rx context (up to IWARP_AV_RX_CTX_BITS_MAX) */
	int rx_ctx_bits;
	sa_family_t family;		/* the domain's, AF_INET or AF_INET6 */
	socklen_t addrlen;		/* its sockaddr size: insert stride */
	atomic_int ref;			/* bound endpoints */
	/* called (lock held) when an entry is removed, so an endpoint can
	 * drop its connection state for that address; may be NULL */
	void (*on_remove)(void *arg, fi_addr_t addr);
	void *on_remove_arg;
	/*
	 * Named AVs (fi_av_attr.name): the creator mirrors every entry into
	 * a POSIX shared memory segment; an FI_READ opener keeps a copy of
	 * the segment, read with pread() and validated, refreshed when a
	 * lookup misses. The fi_addr_t (the index) is the same in both.
	 */
	int shm_fd;			/* -1: not named */
	bool shm_owner;			/* created it: writes, unlinks it */
	bool read_only;			/* FI_READ: inserts are refused */
	char *shm_name;
	uint64_t shm_gen;		/* segment generation we copied */
	size_t max_cap;			/* fixed size when named; 0: grows */
	fi_addr_t *map;			/* map_addr: map[i] = i if in use */
};

int iwarp_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av, void *context);
/* lock held: the address of fi_addr, or NULL if not in use */
const union iwarp_sockaddr *iwarp_av_addr(struct iwarp_av *av, fi_addr_t a);
/*
 * lock held: fi_addr of an address, FI_ADDR_NOTAVAIL if unknown. Family,
 * port and address are compared (not flowinfo or scope id); with
 * duplicates the lowest live fi_addr wins.
 */
fi_addr_t iwarp_av_reverse(struct iwarp_av *av, const struct sockaddr *sa);

/*
 * fi_av_set(3) (iwarp_avset.c): an ordered list of distinct fi_addr_t of
 * one AV; a member's index is its rank in collectives (rdm_coll.c).
 */
#define IWARP_AV_SET_MAX 65535	/* ranks travel in 16 tag bits */
/* fi_av_set_addr: never an index of the AV */
#define IWARP_AV_SET_ADDR (0x5e7ULL << 48)

struct iwarp_av_set {
	struct fid_av_set set_fid;
	struct iwarp_av *av;
	fi_addr_t *member;
	size_t n, cap;
	fi_addr_t addr;
};

int iwarp_av_set_open(struct fid_av *av, struct fi_av_set_attr *attr,
		      struct fid_av_set **set, void *context);

static inline struct iwarp_av_set *iwarp_av_set_of(const struct fid_av_set *s)
{
	return (struct iwarp_av_set *)((uintptr_t)s -
				       offsetof(struct iwarp_av_set, set_fid));
}

/* Shared segments (iwarp_av.c). The name a named AV gets in /dev/shm:
 * "/iwarp-av.<network namespace inode>.<name>"; -FI_EINVAL for names
 * outside [A-Za-z0-9._-]{1,200}. */
int iwarp_av_shm_path(const char *name, char *out, size_t len);

static inline struct iwarp_av *iwarp_av_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_av, av_fid.fid);
}

#endif /* IWARP_AV_H */
