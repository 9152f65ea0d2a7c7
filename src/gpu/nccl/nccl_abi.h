/* SPDX-License-Identifier: MIT */
/*
 * The layouts of NCCL's profiler plugin interface, versions 3 to 5, as NCCL 2.23-2.28 pass
 * them (written from the interface's description: event types, descriptors, states and the
 * tables NCCL looks up by name). NCCL dlopens the library NCCL_PROFILER_PLUGIN names and
 * takes the first of ncclProfiler_v5, _v4, _v3 it finds.
 *
 * Version differences that matter here:
 *   v5: the descriptor's type is 64 bits; API events (group, collective, point-to-point
 *       calls as the user made them) and kernel launches; init gets the communicator's hash.
 *   v4: the type is 8 bits; no API events; init gets the communicator's name and hash.
 *   v3: as v4 but init gets only the mask; each collective and p2p names its communicator.
 */
#ifndef SYSCOPE_GPU_NCCL_ABI_H
#define SYSCOPE_GPU_NCCL_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int nccl_result_t; /* ncclResult_t: 0 is success */

/* Event types: the bits of the activation mask the plugin returns from init. */
enum {
	NCCL_EV_GROUP = 1 << 0,		/* a group of operations launched together */
	NCCL_EV_COLL = 1 << 1,		/* a collective as launched */
	NCCL_EV_P2P = 1 << 2,		/* a send or receive as launched */
	NCCL_EV_PROXY_OP = 1 << 3,	/* the proxy thread's work for one channel */
	NCCL_EV_PROXY_STEP = 1 << 4,	/* one network transfer of a proxy op */
	NCCL_EV_PROXY_CTRL = 1 << 5,	/* the proxy thread idle, sleeping, appending */
	NCCL_EV_KERNEL_CH = 1 << 6,	/* one channel of the kernel, GPU timer stamps */
	NCCL_EV_NET_PLUGIN = 1 << 7,	/* events of the network plugin */
	NCCL_EV_GROUP_API = 1 << 8,	/* v5: ncclGroupStart..End as the user called them */
	NCCL_EV_COLL_API = 1 << 9,	/* v5: a collective call (ncclAllReduce...) */
	NCCL_EV_P2P_API = 1 << 10,	/* v5: a ncclSend/ncclRecv call */
	NCCL_EV_KERNEL_LAUNCH = 1 << 11 /* v5: the CUDA launch of NCCL's kernel */
};

/* States recordEventState reports (the ones this plugin uses). */
enum {
	NCCL_STATE_PROXY_STEP_SEND_GPU_WAIT = 8,
	NCCL_STATE_PROXY_STEP_SEND_WAIT = 9,
	NCCL_STATE_PROXY_STEP_RECV_WAIT = 10,
	NCCL_STATE_PROXY_STEP_RECV_FLUSH_WAIT = 11,
	NCCL_STATE_PROXY_STEP_RECV_GPU_WAIT = 12,
	NCCL_STATE_PROXY_OP_IN_PROGRESS = 19,
	NCCL_STATE_PROXY_STEP_SEND_PEER_WAIT = 20,
	NCCL_STATE_KERNEL_CH_STOP = 22,
	NCCL_STATE_GROUP_START_API_STOP = 23,
	NCCL_STATE_GROUP_END_API_START = 24,
};

typedef void (*nccl_logger_t)(int level, unsigned long flags, const char *file, int line,
			      const char *fmt, ...);

/* The parts of the descriptor's union that are the same in v3, v4 and v5. */
struct nccl_proxy_op_descr {
	pid_t pid;
	uint8_t channel;
	int peer;
	int nsteps;
	int chunk_size;
	int is_send;
};

struct nccl_descr_v5 {
	uint64_t type;
	void *parent;
	int rank;
	union {
		struct {
			bool graph_captured; /* an int in 2.28: the low byte reads the same */
			int depth;
		} group_api;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			int root;
			void *stream;
			bool graph_captured;
		} coll_api;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			void *stream;
			bool graph_captured;
		} p2p_api;
		struct {
			void *stream;
		} kernel_launch;
		struct {
			uint64_t seq;
			const char *func;
			const void *send_buf;
			void *recv_buf;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nchannels;
			uint8_t nwarps;
			const char *algo;
			const char *proto;
			void *parent_group;
		} coll;
		struct {
			const char *func;
			void *buf;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nchannels;
			void *parent_group;
		} p2p;
		struct nccl_proxy_op_descr proxy_op;
		struct {
			int step;
		} proxy_step;
		struct {
			uint8_t channel;
			uint64_t gpu_start; /* the GPU's globaltimer, ns */
		} kernel_ch;
	};
};

/* v4: v5's task, proxy and kernel-channel parts without parent_group; 8-bit type. */
struct nccl_descr_v4 {
	uint8_t type;
	void *parent;
	int rank;
	union {
		struct {
			uint64_t seq;
			const char *func;
			const void *send_buf;
			void *recv_buf;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nchannels;
			uint8_t nwarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *func;
			void *buf;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nchannels;
		} p2p;
		struct nccl_proxy_op_descr proxy_op;
		struct {
			int step;
		} proxy_step;
		struct {
			uint8_t channel;
			uint64_t gpu_start;
		} kernel_ch;
	};
};

/* v3: each task names its communicator; kernel channels have no timer yet. */
struct nccl_descr_v3 {
	uint8_t type;
	void *parent;
	int rank;
	union {
		struct {
			const char *comm_name;
			uint64_t comm_hash;
			uint64_t seq;
			const char *func;
			const void *send_buf;
			void *recv_buf;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nchannels;
			uint8_t nwarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *comm_name;
			uint64_t comm_hash;
			const char *func;
			void *buf;
			const char *datatype;
			size_t count;
			int peer;
		} p2p;
		struct nccl_proxy_op_descr proxy_op;
		struct {
			int step;
		} proxy_step;
		struct {
			uint8_t channel;
		} kernel_ch;
	};
};

/* State arguments, v4 and v5 (v3's proxy-op member has a second int, unused here). */
union nccl_state_args {
	struct {
		size_t trans_size;
	} proxy_step;
	struct {
		int appended_ops;
	} proxy_ctrl;
	struct {
		void *data;
	} net;
	struct {
		uint64_t gpu_stop;
	} kernel_ch;
};

struct nccl_profiler_v5 {
	const char *name;
	nccl_result_t (*init)(void **ctx, uint64_t comm_hash, int *mask, const char *comm_name,
			      int nnodes, int nranks, int rank, nccl_logger_t log);
	nccl_result_t (*start_event)(void *ctx, void **handle, struct nccl_descr_v5 *d);
	nccl_result_t (*stop_event)(void *handle);
	nccl_result_t (*record_state)(void *handle, int state, union nccl_state_args *args);
	nccl_result_t (*finalize)(void *ctx);
};

struct nccl_profiler_v4 {
	const char *name;
	nccl_result_t (*init)(void **ctx, int *mask, const char *comm_name, uint64_t comm_hash,
			      int nnodes, int nranks, int rank, nccl_logger_t log);
	nccl_result_t (*start_event)(void *ctx, void **handle, struct nccl_descr_v4 *d);
	nccl_result_t (*stop_event)(void *handle);
	nccl_result_t (*record_state)(void *handle, int state, union nccl_state_args *args);
	nccl_result_t (*finalize)(void *ctx);
};

struct nccl_profiler_v3 {
	const char *name;
	nccl_result_t (*init)(void **ctx, int *mask);
	nccl_result_t (*start_event)(void *ctx, void **handle, struct nccl_descr_v3 *d);
	nccl_result_t (*stop_event)(void *handle);
	nccl_result_t (*record_state)(void *handle, int state, union nccl_state_args *args);
	nccl_result_t (*finalize)(void *ctx);
};

#endif /* SYSCOPE_GPU_NCCL_ABI_H */
