/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * FI_COLLECTIVE on the RDM endpoint (fi_collective(3)): groups joined
 * from AV sets, and barrier, broadcast, allreduce, allgather and scatter
 * as internal tagged messages on the endpoint itself. Their tags have
 * bit 63 set (the application's may not, rdm_msg.c refuses them), so
 * they never match an application receive; their sends and receives
 * report to iwarp_rdm_coll_done, never to a CQ or counter.
 *
 *	tag = 1(1) | group id(23) | sequence(16) | step(8) | rank(16)
 *
 * Members agree on the group id without traffic: a hash of the members'
 * addresses, in set order, mixed with how many times this endpoint
 * joined that same list (fi_collective(3): members join the same groups
 * in the same order). Each group numbers its operations (all members
 * call them in the same order), so one member's messages for different
 * operations differ in the sequence, and the rank names the member a
 * message comes from (step UP) or goes to (step DOWN).
 *
 * Every operation is root based: members send their contribution UP to
 * the root (rank 0, or the given root), which combines them and sends
 * the result DOWN to each. A join is a barrier whose completion is
 * FI_JOIN_COMPLETE on the endpoint's EQ. A receive takes exactly the
 * size the operation expects (rdm_msg.c fails it otherwise), and only
 * from the member it names; messages for groups or operations not there
 * yet wait as unexpected messages.
 */
#include "rdm.h"

#include <stdlib.h>
#include <string.h>

/* fi_mc_addr: never an AV index */
#define IWARP_COLL_MC_ADDR (0xc011ULL << 48)
#define IWARP_COLL_MAX (16u << 20)	/* octets a root gathers */
#define IWARP_COLL_JOIN (-1)		/* kind: the join's barrier */

enum { IWARP_COLL_UP = 0, IWARP_COLL_DOWN = 1 };

/* How many times this endpoint joined a member list (by its hash). */
struct iwarp_rdm_joins {
	uint32_t hash;
	uint32_t count;
};

struct iwarp_rdm_mc {
	struct fid_mc mc_fid;
	struct iwarp_rdm_ep *ep;	/* NULL once the endpoint closed */
	struct iwarp_fabric *fab;
	struct iwarp_list link;		/* ep->mcs */
	struct iwarp_list ops;		/* iwarp_rdm_cop in progress */
	fi_addr_t *member;
	size_t n, self;
	uint32_t id;
	uint16_t seq;
};

/* One collective operation, from the call until its completion. */
struct iwarp_rdm_cop {
	struct iwarp_list link;		/* mc->ops */
	struct iwarp_rdm_mc *mc;	/* NULL: orphaned, freed when idle */
	int kind;			/* enum fi_collective_op or JOIN */
	void *context;
	uint16_t seq;
	size_t root;			/* a rank */
	unsigned int pend;		/* internal sends/receives not done */
	bool down;			/* the root sends results */
	int err;			/* first failure: positive FI errno */
	enum fi_op op;
	enum fi_datatype dt;
	size_t count;			/* elements per member */
	size_t len;			/* their octets */
	const void *buf;
	void *result;
	uint8_t *tmp;			/* root: contributions */
};

static inline struct iwarp_rdm_mc *iwarp_rdm_mc_of(struct fid *fid)
{
	return iwarp_container_of(fid, struct iwarp_rdm_mc, mc_fid.fid);
}

static uint64_t iwarp_coll_tag(const struct iwarp_rdm_cop *op, unsigned step,
			       size_t rank)
{
	return IWARP_COLL_TAG_BIT | (uint64_t)(op->mc->id & 0x7fffff) << 40 |
	       (uint64_t)op->seq << 24 | (uint64_t)step << 16 |
	       (uint64_t)(rank & 0xffff);
}

/* ---- completion */

static void iwarp_coll_free(struct iwarp_rdm_cop *op)
{
	free(op->tmp);
	free(op);
}

static void iwarp_coll_complete(struct iwarp_rdm_ep *ep,
				struct iwarp_rdm_cop *op)
{
	struct iwarp_rdm_mc *mc = op->mc;

	iwarp_list_del(&op->link);
	if (op->kind == IWARP_COLL_JOIN) {
		struct fi_eq_entry e = {
			.fid = &mc->mc_fid.fid,
			.context = op->context,
		};

		if (op->err)
			iwarp_eq_write_err(ep->eq, &mc->mc_fid.fid, op->context,
					   0, op->err, 0, NULL, 0);
		else
			iwarp_eq_write_locked(ep->eq, FI_JOIN_COMPLETE, &e,
					      sizeof(e));
	} else if (op->err) {
		iwarp_cq_write_err(ep->base.tx_cq, op->context, FI_COLLECTIVE,
				   0, NULL, 0, 0, op->err, 0, NULL, 0, 0);
	} else {
		iwarp_cq_write(ep->base.tx_cq, op->context, FI_COLLECTIVE, 0,
			       NULL, 0, 0, FI_ADDR_NOTAVAIL);
	}
	iwarp_coll_free(op);
}

/* ---- the two phases */

static bool iwarp_coll_gathers(int kind)
{
	return kind == IWARP_COLL_JOIN || kind == FI_BARRIER ||
	       kind == FI_ALLREDUCE || kind == FI_ALLGATHER;
}

/* Where the root receives rank r's contribution. */
static uint8_t *iwarp_coll_slot(struct iwarp_rdm_cop *op, size_t r)
{
	uint8_t *base = op->kind == FI_ALLGATHER ? op->result : op->tmp;

	return base ? base + r * op->len : NULL;
}

/* What the root sends rank r, and how much. */
static const void *iwarp_coll_down_buf(struct iwarp_rdm_cop *op, size_t r,
				       size_t *len)
{
	*len = op->len;
	switch (op->kind) {
	case FI_ALLGATHER:
		*len = op->len * op->mc->n;
		return op->result;
	case FI_BROADCAST:
		return op->buf;
	case FI_SCATTER:
		return (const uint8_t *)op->buf + r * op->len;
	case FI_ALLREDUCE:
		return op->result;
	default:
		*len = 0;
		return op->result;
	}
}

/* One internal send or receive of op, counted before it is posted (a
 * receive may end inside the call); 0 or a negative errno, kept in op. */
static int iwarp_coll_post(struct iwarp_rdm_ep *ep, struct iwarp_rdm_cop *op,
			   bool send, fi_addr_t peer, void *buf, size_t len,
			   unsigned int step, size_t rank)
{
	uint64_t tag = iwarp_coll_tag(op, step, rank);
	int ret;

	if (!len)	/* no NULL base for the copies below, even empty */
		buf = op;
	op->pend++;
	ret = send ? iwarp_rdm_isend(ep, peer, buf, len, tag, op) :
		     iwarp_rdm_irecv(ep, peer, buf, len, tag, op);
	if (ret) {
		op->pend--;
		if (!op->err)
			op->err = -ret;
	}
	return ret;
}

/* The root: combine what arrived, keep its own share, send the rest. */
static void iwarp_coll_down(struct iwarp_rdm_ep *ep, struct iwarp_rdm_cop *op)
{
	struct iwarp_rdm_mc *mc = op->mc;
	size_t r, len;

	op->down = true;
	op->pend++;		/* held while posting */
	if (op->kind == FI_ALLREDUCE) {
		uint8_t *acc = iwarp_coll_slot(op, op->root);

		for (r = 0; r < mc->n; r++)
			if (r != op->root)
				iwarp_rdm_reduce(op->op, op->dt, acc,
						 iwarp_coll_slot(op, r),
						 op->count);
		memcpy(op->result, acc, op->len);
	} else if (op->kind == FI_SCATTER && op->len) {
		memcpy(op->result, (const uint8_t *)op->buf +
				   op->root * op->len, op->len);
	}
	for (r = 0; r < mc->n && !op->err; r++) {
		const void *b;

		if (r == op->root)
			continue;
		b = iwarp_coll_down_buf(op, r, &len);
		iwarp_coll_post(ep, op, true, mc->member[r], (void *)b, len,
				IWARP_COLL_DOWN, r);
	}
	op->pend--;		/* the caller ends op if that was all */
}

/* Posts what the operation starts with (op->pend held by the caller);
 * the rest follows from iwarp_rdm_coll_done. */
static void iwarp_coll_start(struct iwarp_rdm_ep *ep, struct iwarp_rdm_cop *op)
{
	struct iwarp_rdm_mc *mc = op->mc;
	size_t r, me = mc->self, len;
	int ret = 0;

	if (me != op->root) {
		void *dst = op->kind == FI_BROADCAST ? (void *)op->buf :
						       op->result;

		fi_addr_t root = mc->member[op->root];

		op->down = true;
		if (iwarp_coll_gathers(op->kind))
			ret = iwarp_coll_post(ep, op, true, root,
					      (void *)op->buf, op->len,
					      IWARP_COLL_UP, me);
		iwarp_coll_down_buf(op, me, &len);
		if (!ret)
			iwarp_coll_post(ep, op, false, root, dst, len,
					IWARP_COLL_DOWN, me);
		return;
	}
	if (!iwarp_coll_gathers(op->kind))
		return iwarp_coll_down(ep, op);
	if (op->len)
		memcpy(iwarp_coll_slot(op, me), op->buf, op->len);
	for (r = 0; r < mc->n && !ret; r++)
		if (r != me)
			ret = iwarp_coll_post(ep, op, false, mc->member[r],
					      iwarp_coll_slot(op, r), op->len,
					      IWARP_COLL_UP, r);
}

void iwarp_rdm_coll_done(struct iwarp_rdm_ep *ep, struct iwarp_rdm_cop *op,
			 int err)
{
	if (err && !op->err)
		op->err = err;
	if (--op->pend)
		return;
	if (!op->mc) {
		iwarp_coll_free(op);
		return;
	}
	if (!op->down && !op->err) {
		iwarp_coll_down(ep, op);
		if (op->pend)
			return;
	}
	iwarp_coll_complete(ep, op);
}

/* ---- operations */

static struct iwarp_rdm_mc *iwarp_coll_mc(struct iwarp_rdm_ep *ep,
					  fi_addr_t coll_addr)
{
	struct iwarp_list *e;

	for (e = ep->mcs.next; e != &ep->mcs; e = e->next) {
		struct iwarp_rdm_mc *mc =
			iwarp_container_of(e, struct iwarp_rdm_mc, link);

		if (mc->mc_fid.fi_addr == coll_addr)
			return mc;
	}
	return NULL;
}

/* The rank of an AV address in the group, or n. */
static size_t iwarp_coll_rank(const struct iwarp_rdm_mc *mc, fi_addr_t a)
{
	size_t r;

	for (r = 0; r < mc->n; r++)
		if (mc->member[r] == a)
			break;
	return r;
}

/* Root gathers n contributions: bounded, and space for them. */
static int iwarp_coll_size(struct iwarp_rdm_cop *op)
{
	size_t size = 0, n = op->mc->n;

	if (op->kind != FI_BARRIER && op->kind != IWARP_COLL_JOIN) {
		size = iwarp_rdm_dt_size(op->dt);
		if (!size || !op->count || op->count > IWARP_COLL_MAX / size)
			return -FI_EINVAL;
	}
	op->len = op->count * size;
	if (op->len > IWARP_COLL_MAX / n)
		return -FI_EINVAL;
	if (op->mc->self == op->root && op->len &&
	    (op->kind == FI_ALLREDUCE)) {
		op->tmp = malloc(op->len * n);
		if (!op->tmp)
			return -FI_ENOMEM;
	}
	return 0;
}

/* Sets op up in its group and starts it (lock held). */
static int iwarp_coll_run(struct iwarp_rdm_ep *ep, struct iwarp_rdm_mc *mc,
			  struct iwarp_rdm_cop *op)
{
	int ret;

	op->mc = mc;
	ret = iwarp_coll_size(op);
	if (ret) {
		iwarp_coll_free(op);
		return ret;
	}
	op->seq = mc->seq++;
	iwarp_list_add_tail(&mc->ops, &op->link);
	/* held while posting: a receive that finds its message waiting
	 * ends inside the call */
	op->pend = 1;
	iwarp_coll_start(ep, op);
	iwarp_rdm_coll_done(ep, op, 0);
	return 0;
}

struct iwarp_coll_call {
	int kind;
	const void *buf;
	void *result;
	size_t count;
	fi_addr_t coll_addr, root_addr;
	enum fi_datatype dt;
	enum fi_op op;
	void *context;
};

static ssize_t iwarp_coll_call(struct fid_ep *e,
			       const struct iwarp_coll_call *c)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(&e->fid);
	struct iwarp_rdm_mc *mc;
	struct iwarp_rdm_cop *op;
	int ret;

	if (c->kind == FI_ALLREDUCE && !iwarp_rdm_reduce_ok(c->op, c->dt))
		return -FI_EOPNOTSUPP;
	if ((c->count && !c->buf && c->kind != FI_SCATTER) ||
	    (c->count && !c->result && c->kind != FI_BROADCAST))
		return -FI_EINVAL;
	op = calloc(1, sizeof(*op));
	if (!op)
		return -FI_ENOMEM;
	op->kind = c->kind;
	op->buf = c->buf;
	op->result = c->result;
	op->count = c->count;
	op->dt = c->dt;
	op->op = c->op;
	op->context = c->context;
	iwarp_lock(ep->base.fab);
	mc = ep->base.enabled ? iwarp_coll_mc(ep, c->coll_addr) : NULL;
	ret = ep->base.enabled ? -FI_EINVAL : -FI_EOPBADSTATE;
	if (mc) {
		op->root = c->kind == FI_BROADCAST || c->kind == FI_SCATTER ?
			   iwarp_coll_rank(mc, c->root_addr) : 0;
		/* the root's data: scatter's buffer is read there only */
		if (op->root >= mc->n || (c->kind == FI_SCATTER &&
					  op->root == mc->self && !c->buf)) {
			ret = -FI_EINVAL;
		} else {
			ret = iwarp_coll_run(ep, mc, op);
			op = NULL;	/* freed or running */
		}
	}
	iwarp_unlock(ep->base.fab);
	free(op);
	return ret;
}

static ssize_t iwarp_coll_barrier(struct fid_ep *ep, fi_addr_t coll_addr,
				  void *context)
{
	struct iwarp_coll_call c = {
		.kind = FI_BARRIER, .coll_addr = coll_addr, .context = context,
	};

	return iwarp_coll_call(ep, &c);
}

static ssize_t iwarp_coll_barrier2(struct fid_ep *ep, fi_addr_t coll_addr,
				   uint64_t flags, void *context)
{
	return iwarp_coll_barrier(ep, coll_addr, context);
}

static ssize_t iwarp_coll_broadcast(struct fid_ep *ep, void *buf,
				    size_t count, void *desc,
				    fi_addr_t coll_addr, fi_addr_t root_addr,
				    enum fi_datatype dt, uint64_t flags,
				    void *context)
{
	struct iwarp_coll_call c = {
		.kind = FI_BROADCAST, .buf = buf, .count = count,
		.coll_addr = coll_addr, .root_addr = root_addr, .dt = dt,
		.context = context,
	};

	return iwarp_coll_call(ep, &c);
}

static ssize_t iwarp_coll_allreduce(struct fid_ep *ep, const void *buf,
				    size_t count, void *desc, void *result,
				    void *result_desc, fi_addr_t coll_addr,
				    enum fi_datatype dt, enum fi_op op,
				    uint64_t flags, void *context)
{
	struct iwarp_coll_call c = {
		.kind = FI_ALLREDUCE, .buf = buf, .result = result,
		.count = count, .coll_addr = coll_addr, .dt = dt, .op = op,
		.context = context,
	};

	return iwarp_coll_call(ep, &c);
}

static ssize_t iwarp_coll_allgather(struct fid_ep *ep, const void *buf,
				    size_t count, void *desc, void *result,
				    void *result_desc, fi_addr_t coll_addr,
				    enum fi_datatype dt, uint64_t flags,
				    void *context)
{
	struct iwarp_coll_call c = {
		.kind = FI_ALLGATHER, .buf = buf, .result = result,
		.count = count, .coll_addr = coll_addr, .dt = dt,
		.context = context,
	};

	return iwarp_coll_call(ep, &c);
}

static ssize_t iwarp_coll_scatter(struct fid_ep *ep, const void *buf,
				  size_t count, void *desc, void *result,
				  void *result_desc, fi_addr_t coll_addr,
				  fi_addr_t root_addr, enum fi_datatype dt,
				  uint64_t flags, void *context)
{
	struct iwarp_coll_call c = {
		.kind = FI_SCATTER, .buf = buf, .result = result,
		.count = count, .coll_addr = coll_addr, .root_addr = root_addr,
		.dt = dt, .context = context,
	};

	return iwarp_coll_call(ep, &c);
}

static ssize_t iwarp_coll_no_xfer(struct fid_ep *ep, const void *buf,
				  size_t count, void *desc, void *result,
				  void *result_desc, fi_addr_t coll_addr,
				  enum fi_datatype dt, uint64_t flags,
				  void *context)
{
	return -FI_ENOSYS;
}

static ssize_t iwarp_coll_no_reduce(struct fid_ep *ep, const void *buf,
				    size_t count, void *desc, void *result,
				    void *result_desc, fi_addr_t coll_addr,
				    enum fi_datatype dt, enum fi_op op,
				    uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t iwarp_coll_no_root_reduce(struct fid_ep *ep, const void *buf,
					 size_t count, void *desc,
					 void *result, void *result_desc,
					 fi_addr_t coll_addr,
					 fi_addr_t root_addr,
					 enum fi_datatype dt, enum fi_op op,
					 uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t iwarp_coll_no_gather(struct fid_ep *ep, const void *buf,
				    size_t count, void *desc, void *result,
				    void *result_desc, fi_addr_t coll_addr,
				    fi_addr_t root_addr, enum fi_datatype dt,
				    uint64_t flags, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t iwarp_coll_no_msg(struct fid_ep *ep,
				 const struct fi_msg_collective *msg,
				 struct fi_ioc *resultv, void **result_desc,
				 size_t result_count, uint64_t flags)
{
	return -FI_ENOSYS;
}

struct fi_ops_collective iwarp_rdm_coll_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = iwarp_coll_barrier,
	.broadcast = iwarp_coll_broadcast,
	.alltoall = iwarp_coll_no_xfer,
	.allreduce = iwarp_coll_allreduce,
	.allgather = iwarp_coll_allgather,
	.reduce_scatter = iwarp_coll_no_reduce,
	.reduce = iwarp_coll_no_root_reduce,
	.scatter = iwarp_coll_scatter,
	.gather = iwarp_coll_no_gather,
	.msg = iwarp_coll_no_msg,
	.barrier2 = iwarp_coll_barrier2,
};

int iwarp_rdm_query_collective(struct fid_domain *domain,
			       enum fi_collective_op coll,
			       struct fi_collective_attr *attr,
			       uint64_t flags)
{
	size_t size;

	if (!attr)
		return -FI_EINVAL;
	if (flags)		/* FI_SCATTER: reduce-scatter */
		return -FI_EOPNOTSUPP;
	size = iwarp_rdm_dt_size(attr->datatype);
	switch (coll) {
	case FI_BARRIER:
		if (attr->op != FI_NOOP)
			return -FI_EOPNOTSUPP;
		size = 0;
		break;
	case FI_BROADCAST:
	case FI_ALLGATHER:
	case FI_SCATTER:
		if (attr->op != FI_NOOP || !size)
			return -FI_EOPNOTSUPP;
		break;
	case FI_ALLREDUCE:
		if (!iwarp_rdm_reduce_ok(attr->op, attr->datatype))
			return -FI_EOPNOTSUPP;
		break;
	default:
		return -FI_EOPNOTSUPP;
	}
	attr->datatype_attr.size = size;
	attr->datatype_attr.count = size ? IWARP_COLL_MAX / size : 0;
	attr->max_members = IWARP_AV_SET_MAX;
	attr->mode = 0;
	return 0;
}

/* ---- groups */

/* FNV-1a over the members' family, port and address, in set order. */
static int iwarp_coll_hash(struct iwarp_rdm_ep *ep,
			   const struct iwarp_av_set *s,
			   uint32_t *hash, size_t *self)
{
	uint32_t h = 2166136261u;
	size_t i, j;

	*self = s->n;
	for (i = 0; i < s->n; i++) {
		const union iwarp_sockaddr *a = iwarp_av_addr(ep->av,
							      s->member[i]);
		const uint8_t *p;
		size_t len;

		if (!a)
			return -FI_EINVAL;
		if (iwarp_addr_equal(a, &ep->name))
			*self = i;
		if (a->sa.sa_family == AF_INET) {
			p = (const uint8_t *)&a->sin.sin_addr;
			len = sizeof(a->sin.sin_addr);
		} else {
			p = (const uint8_t *)&a->sin6.sin6_addr;
			len = sizeof(a->sin6.sin6_addr);
		}
		for (j = 0; j < len; j++)
			h = (h ^ p[j]) * 16777619u;
		h = (h ^ (a->sin.sin_port & 0xff)) * 16777619u;
		h = (h ^ (a->sin.sin_port >> 8)) * 16777619u;
	}
	*hash = h;
	return *self < s->n ? 0 : -FI_EINVAL;	/* we must be a member */
}

/* The join count of that member list, one more. */
static int iwarp_coll_count(struct iwarp_rdm_ep *ep, uint32_t hash,
			    uint32_t *count)
{
	struct iwarp_rdm_joins *j;
	size_t i;

	for (i = 0; i < ep->njoins; i++)
		if (ep->joins[i].hash == hash) {
			*count = ++ep->joins[i].count;
			return 0;
		}
	j = realloc(ep->joins, (ep->njoins + 1) * sizeof(*j));
	if (!j)
		return -FI_ENOMEM;
	ep->joins = j;
	j[ep->njoins++] = (struct iwarp_rdm_joins){ hash, 1 };
	*count = 1;
	return 0;
}

/* Drops op's receives; op goes when its sends end (lock held). */
static void iwarp_coll_orphan(struct iwarp_rdm_ep *ep, struct iwarp_rdm_cop *op)
{
	iwarp_list_del(&op->link);
	op->mc = NULL;
	op->pend -= (unsigned int)iwarp_rdm_irecv_cancel(ep, op);
	if (!op->pend)
		iwarp_coll_free(op);
}

static void iwarp_coll_detach(struct iwarp_rdm_mc *mc)
{
	while (!iwarp_list_empty(&mc->ops))
		iwarp_coll_orphan(mc->ep, iwarp_container_of(
				  mc->ops.next, struct iwarp_rdm_cop, link));
	iwarp_list_del(&mc->link);
	mc->ep = NULL;
}

void iwarp_rdm_coll_fini(struct iwarp_rdm_ep *ep)
{
	while (!iwarp_list_empty(&ep->mcs))
		iwarp_coll_detach(iwarp_container_of(
			ep->mcs.next, struct iwarp_rdm_mc, link));
}

/* fi_close of a group: operations still running end without completion. */
static int iwarp_coll_mc_close(struct fid *fid)
{
	struct iwarp_rdm_mc *mc = iwarp_rdm_mc_of(fid);

	iwarp_lock(mc->fab);
	if (mc->ep)
		iwarp_coll_detach(mc);
	iwarp_unlock(mc->fab);
	atomic_fetch_sub(&mc->fab->ref, 1);
	free(mc->member);
	free(mc);
	return 0;
}

static struct fi_ops iwarp_coll_mc_ops = {
	.size = sizeof(struct fi_ops),
	.close = iwarp_coll_mc_close,
	.bind = iwarp_no_bind,
	.control = iwarp_no_control,
	.ops_open = iwarp_no_ops_open,
	.tostr = iwarp_no_tostr,
	.ops_set = iwarp_no_ops_set,
};

/* The group's members, rank and id (lock held). */
static int iwarp_coll_mc_init(struct iwarp_rdm_ep *ep, struct iwarp_rdm_mc *mc,
			      const struct iwarp_av_set *s)
{
	uint32_t hash, count;
	int ret;

	if (!s->n)
		return -FI_EINVAL;
	ret = iwarp_coll_hash(ep, s, &hash, &mc->self);
	if (ret)
		return ret;
	mc->member = malloc(s->n * sizeof(*mc->member));
	if (!mc->member)
		return -FI_ENOMEM;
	memcpy(mc->member, s->member, s->n * sizeof(*mc->member));
	mc->n = s->n;
	ret = iwarp_coll_count(ep, hash, &count);
	if (ret)
		return ret;
	mc->id = (hash ^ (count * 0x9e3779b9u)) & 0x7fffff;
	mc->mc_fid.fi_addr = IWARP_COLL_MC_ADDR | ++ep->next_mc;
	return 0;
}

/* The endpoint can run collectives: it has an EQ, a plain receive path. */
static int iwarp_coll_usable(const struct iwarp_rdm_ep *ep, uint64_t flags,
			     const struct fi_collective_addr *ca)
{
	if (!(flags & FI_COLLECTIVE) || !ep->coll)
		return -FI_ENOSYS;	/* no multicast */
	if (!ca || !ca->set || ca->set->fid.fclass != FI_CLASS_AV_SET)
		return -FI_EINVAL;
	if (!ep->base.enabled)
		return -FI_EOPBADSTATE;
	if (!ep->eq)
		return -FI_ENOEQ;
	if (ep->sep || ep->base.srx || ep->prefix)
		return -FI_EOPNOTSUPP;
	if (iwarp_av_set_of(ca->set)->av != ep->av ||
	    (ca->coll_addr != FI_ADDR_NOTAVAIL &&
	     ca->coll_addr != iwarp_av_set_of(ca->set)->addr))
		return -FI_EINVAL;
	return 0;
}

int iwarp_rdm_join(struct fid_ep *e, const void *addr, uint64_t flags,
		   struct fid_mc **mcp, void *context)
{
	struct iwarp_rdm_ep *ep = iwarp_rdm_ep_of(&e->fid);
	const struct fi_collective_addr *ca = addr;
	struct iwarp_rdm_mc *mc;
	struct iwarp_rdm_cop *op;
	int ret;

	if (!mcp)
		return -FI_EINVAL;
	mc = calloc(1, sizeof(*mc));
	op = calloc(1, sizeof(*op));
	iwarp_lock(ep->base.fab);
	ret = iwarp_coll_usable(ep, flags, ca);
	if (!ret)
		ret = mc && op ? iwarp_coll_mc_init(ep, mc, iwarp_av_set_of(
							   ca->set)) :
				 -FI_ENOMEM;
	if (ret) {
		iwarp_unlock(ep->base.fab);
		free(op);
		if (mc)
			free(mc->member);
		free(mc);
		return ret;
	}
	mc->ep = ep;
	mc->fab = ep->base.fab;
	/* the fabric, whose lock mc_close takes, outlives the group */
	atomic_fetch_add(&mc->fab->ref, 1);
	iwarp_list_init(&mc->ops);
	iwarp_list_add_tail(&ep->mcs, &mc->link);
	mc->mc_fid.fid.fclass = FI_CLASS_MC;
	mc->mc_fid.fid.context = context;
	mc->mc_fid.fid.ops = &iwarp_coll_mc_ops;
	*mcp = &mc->mc_fid;
	op->kind = IWARP_COLL_JOIN;
	op->context = context;
	ret = iwarp_coll_run(ep, mc, op);
	iwarp_unlock(ep->base.fab);
	return ret;
}
