/* SPDX-License-Identifier: MIT */
/*
 * NCCL's calls where its profiler says nothing: a communicator of one rank (NCCL 2.28 does
 * such a call as a copy before any profiler event), and an NCCL that never initialized our
 * plugin (one older than the interface, or a profiler plugin of the user's). With
 * --parallel=nccl the launcher also preloads this library, so the program's calls of the
 * functions below reach these wrappers, which call NCCL's own (the next definition) and
 * write one region per call. Elsewhere the plugin's regions are the calls, and the wrappers
 * only pass through.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "nccl_events.h"

#define EXPORT __attribute__((visibility("default")))

typedef int nccl_result;
typedef void *nccl_comm;
typedef void *cuda_stream;

enum {
	NCCL_INTERNAL_ERROR = 3
};

static _Thread_local int inside; /* NCCL calling its own entry points (ncclBcast) */

static const char *type_name(int t)
{
	static const char *const names[] = {
		"ncclInt8",    "ncclUint8",    "ncclInt32",	 "ncclUint32",
		"ncclInt64",   "ncclUint64",   "ncclFloat16",	 "ncclFloat32",
		"ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2",
	};

	return t >= 0 && t < (int)(sizeof(names) / sizeof(names[0])) ? names[t] : "Unknown";
}

static const char *op_name(int op)
{
	static const char *const names[] = { "Sum", "Prod", "Max", "Min", "Avg" };

	return op >= 0 && op < 5 ? names[op] : "PreMulSum"; /* ncclRedOpCreatePreMulSum's */
}

static int find_nccl(struct dl_phdr_info *info, size_t size, void *out)
{
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if (!base || strncmp(base, "libnccl.so", 10))
		return 0;
	*(void **)out = dlopen(info->dlpi_name, RTLD_NOLOAD | RTLD_LAZY);
	return *(void **)out != NULL;
}

/* The loaded NCCL library, or NULL. */
static void *nccl_library(void)
{
	static void *lib;

	if (!lib)
		lib = dlopen("libnccl.so.2", RTLD_NOLOAD | RTLD_LAZY);
	if (!lib)
		dl_iterate_phdr(find_nccl, &lib);
	return lib;
}

/*
 * NCCL's own `name`: the next definition, or, when NCCL was loaded into a local scope that
 * RTLD_NEXT does not search (Python loads PyTorch's libraries RTLD_LOCAL, and their libnccl
 * with them, while the program's calls still bind to this preloaded library), the loaded
 * libnccl's.
 */
static void *next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name), *lib;

	if (!f && (lib = nccl_library()))
		f = dlsym(lib, name);
	if (!f)
		nccl_missing(name);
	return f;
}

/* A communicator's rank and size, asked of NCCL once per communicator (each ask is an NCCL
 * call of its own, an NVTX range in the trace): a small table, lock-free. */
#define COMM_SLOTS 256
static struct {
	_Atomic(void *) comm;
	_Atomic int size; /* 0 until known */
	int rank;
} comm_slots[COMM_SLOTS];

static void comm_lookup(struct nccl_call *c)
{
	static int (*count_fn)(nccl_comm, int *);
	static int (*rank_fn)(nccl_comm, int *);
	unsigned h = (unsigned)(((uintptr_t)c->comm >> 4) * 2654435761u) % COMM_SLOTS;

	for (unsigned i = 0; i < 8; i++) {
		unsigned at = (h + i) % COMM_SLOTS;
		void *seen = atomic_load(&comm_slots[at].comm);

		if (seen == c->comm && atomic_load(&comm_slots[at].size)) {
			c->nranks = atomic_load(&comm_slots[at].size);
			c->rank = comm_slots[at].rank;
			return;
		}
		if (seen == c->comm || (!seen && atomic_compare_exchange_strong(
							 &comm_slots[at].comm, &seen, c->comm))) {
			if (!count_fn)
				count_fn = (int (*)(nccl_comm, int *))next("ncclCommCount");
			if (!rank_fn)
				rank_fn = (int (*)(nccl_comm, int *))next("ncclCommUserRank");
			if (!count_fn || !rank_fn || count_fn(c->comm, &c->nranks) ||
			    rank_fn(c->comm, &c->rank)) {
				c->nranks = 0;
				return;
			}
			comm_slots[at].rank = c->rank;
			atomic_store(&comm_slots[at].size, c->nranks);
			return;
		}
	}
	c->nranks = 0; /* the table is full around it: unknown, recorded as such */
}

/* Whether this call is ours to record; fills the communicator's rank and size. */
static bool record_it(struct nccl_call *c)
{
	if (inside || !nccl_events_setup())
		return false;
	comm_lookup(c);
	return c->nranks == 1 || !atomic_load(&nccl_profiler_seen);
}

/* Call `expr` (NCCL's function) as NCCL itself, recording call `c` around it when ours. */
#define WRAP(c, expr)                                            \
	do {                                                     \
		bool rec_ = record_it(&(c));                     \
		uint64_t t0_ = rec_ ? nccl_now() : 0;            \
		inside++;                                        \
		(c).result = (expr);                             \
		inside--;                                        \
		if (rec_)                                        \
			nccl_call_region(&(c), t0_, nccl_now()); \
		return (c).result;                               \
	} while (0)

/* NCCL's function `name` of type `type` as `var` (found once), or an error return. */
#define NEXT(var, type, name)             \
	static type *var;                 \
	if (!var)                         \
		var = (type *)next(name); \
	if (!var)                         \
	return NCCL_INTERNAL_ERROR

#define CALL(fn, dtype, opname, cnt, root_)                                           \
	{                                                                             \
		.func = fn, .datatype = type_name(dtype), .op = opname, .count = cnt, \
		.root = root_, .comm = comm, .stream = stream                         \
	}

typedef nccl_result reduce_fn(const void *, void *, size_t, int, int, nccl_comm, cuda_stream);
typedef nccl_result root_fn(const void *, void *, size_t, int, int, nccl_comm, cuda_stream);
typedef nccl_result bcast_fn(void *, size_t, int, int, nccl_comm, cuda_stream);
typedef nccl_result reduce_root_fn(const void *, void *, size_t, int, int, int, nccl_comm,
				   cuda_stream);
typedef nccl_result gather_fn(const void *, void *, size_t, int, nccl_comm, cuda_stream);
typedef nccl_result send_fn(const void *, size_t, int, int, nccl_comm, cuda_stream);
typedef nccl_result recv_fn(void *, size_t, int, int, nccl_comm, cuda_stream);

/* NCCL's prototypes (nccl.h), with its handles as plain pointers and its enums as int. */
EXPORT reduce_fn ncclAllReduce, ncclReduceScatter;
EXPORT root_fn ncclBroadcast;
EXPORT bcast_fn ncclBcast;
EXPORT reduce_root_fn ncclReduce;
EXPORT gather_fn ncclAllGather, ncclAlltoAll;
EXPORT send_fn ncclSend;
EXPORT recv_fn ncclRecv;

nccl_result ncclAllReduce(const void *send, void *recv, size_t count, int type, int op,
			  nccl_comm comm, cuda_stream stream)
{
	NEXT(real, reduce_fn, "ncclAllReduce");
	struct nccl_call c = CALL("AllReduce", type, op_name(op), count, -1);
	WRAP(c, real(send, recv, count, type, op, comm, stream));
}

nccl_result ncclReduceScatter(const void *send, void *recv, size_t count, int type, int op,
			      nccl_comm comm, cuda_stream stream)
{
	NEXT(real, reduce_fn, "ncclReduceScatter");
	struct nccl_call c = CALL("ReduceScatter", type, op_name(op), count, -1);
	WRAP(c, real(send, recv, count, type, op, comm, stream));
}

nccl_result ncclBroadcast(const void *send, void *recv, size_t count, int type, int root,
			  nccl_comm comm, cuda_stream stream)
{
	NEXT(real, root_fn, "ncclBroadcast");
	struct nccl_call c = CALL("Broadcast", type, NULL, count, root);
	WRAP(c, real(send, recv, count, type, root, comm, stream));
}

nccl_result ncclBcast(void *buf, size_t count, int type, int root, nccl_comm comm,
		      cuda_stream stream)
{
	NEXT(real, bcast_fn, "ncclBcast");
	struct nccl_call c = CALL("Broadcast", type, NULL, count, root);
	WRAP(c, real(buf, count, type, root, comm, stream));
}

nccl_result ncclReduce(const void *send, void *recv, size_t count, int type, int op, int root,
		       nccl_comm comm, cuda_stream stream)
{
	NEXT(real, reduce_root_fn, "ncclReduce");
	struct nccl_call c = CALL("Reduce", type, op_name(op), count, root);
	WRAP(c, real(send, recv, count, type, op, root, comm, stream));
}

nccl_result ncclAllGather(const void *send, void *recv, size_t count, int type, nccl_comm comm,
			  cuda_stream stream)
{
	NEXT(real, gather_fn, "ncclAllGather");
	struct nccl_call c = CALL("AllGather", type, NULL, count, -1);
	WRAP(c, real(send, recv, count, type, comm, stream));
}

nccl_result ncclAlltoAll(const void *send, void *recv, size_t count, int type, nccl_comm comm,
			 cuda_stream stream)
{
	NEXT(real, gather_fn, "ncclAlltoAll");
	struct nccl_call c = CALL("AlltoAll", type, NULL, count, -1);
	WRAP(c, real(send, recv, count, type, comm, stream));
}

nccl_result ncclSend(const void *send, size_t count, int type, int peer, nccl_comm comm,
		     cuda_stream stream)
{
	NEXT(real, send_fn, "ncclSend");
	struct nccl_call c = CALL("Send", type, NULL, count, peer);
	WRAP(c, real(send, count, type, peer, comm, stream));
}

nccl_result ncclRecv(void *recv, size_t count, int type, int peer, nccl_comm comm,
		     cuda_stream stream)
{
	NEXT(real, recv_fn, "ncclRecv");
	struct nccl_call c = CALL("Recv", type, NULL, count, peer);
	WRAP(c, real(recv, count, type, peer, comm, stream));
}
