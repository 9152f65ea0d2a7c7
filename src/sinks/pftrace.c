/* SPDX-License-Identifier: MIT */
/*
 * `pftrace`: perfetto-trace-<pid>.pftrace, the timeline of one process for ui.perfetto.dev and
 * trace_processor, written as a stream of TracePackets (field numbers and conventions in
 * docs/output-formats.md, Perfetto):
 *
 *   ClockSnapshot (MONOTONIC, the clock of every timestamp, and REALTIME)
 *   TrackDescriptors: the process, each thread, each counter track; per GPU its track, a
 *     counter of memory allocated and the lanes of each stream
 *   TrackEvents: regions as SLICE_BEGIN/SLICE_END on their thread, marks as INSTANT, counter
 *     values as COUNTER, GPU ops as slices on a lane of their stream (allocations as
 *     INSTANT and COUNTER), flows from host calls to GPU ops; PerfSamples for call-stack
 *     samples, with interned callstacks
 *
 * A process is one packet sequence (a merged trace has one per process), with interning: a
 * name, category, argument name, frame or callstack is defined in the packet that first uses
 * it. Load: one packet per event, a few dozen bytes each; the interning tables grow with
 * distinct names and stacks only.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../common/strutil.h"
#include "../model/mpi.h"
#include "../model/nccl_links.h"
#include "../model/gpu_python.h"
#include "../model/timeline.h"
#include "protobuf.h"
#include "sink.h"
#include "summary_idle.h"

/* TracePacket and friends: field numbers. */
enum {
	PKT_TIMESTAMP = 8,
	PKT_CLOCK_ID = 58,
	PKT_SEQUENCE_ID = 10,
	PKT_INTERNED = 12,
	PKT_FLAGS = 13,
	PKT_DEFAULTS = 59,
	PKT_FIRST_ON_SEQUENCE = 87,
	PKT_TRACK_EVENT = 11,
	PKT_TRACK_DESCRIPTOR = 60,
	PKT_CLOCK_SNAPSHOT = 6,
	PKT_PERF_SAMPLE = 66,
	SEQ_CLEARED = 1,
	SEQ_NEEDS_STATE = 2,
	CLOCK_REALTIME_ID = 1,
	CLOCK_MONOTONIC_ID = 3,
	EV_SLICE_BEGIN = 1,
	EV_SLICE_END = 2,
	EV_INSTANT = 3,
	EV_COUNTER = 4,
	CPU_MODE_USER = 2,
};

/* Sequence ids fit the 24 bits flow ids keep for them (Linux pids are below 2^22). */
#define SEQ_MASK ((1u << 24) - 1)
#define UUID_PROCESS (1ull << 60)
#define UUID_THREAD (2ull << 60)
#define UUID_COUNTER (3ull << 60)
#define UUID_GPU (4ull << 60)
#define UUID_LANE (5ull << 60)
#define UUID_GPU_MEMORY (6ull << 60)
#define UUID_CONTEXT (7ull << 60)
#define UUID_GIL (8ull << 60)
#define FLOW_GPU (1ull << 60)
#define FLOW_GPU_FAN (2ull << 60) /* the second and later GPU ops of one host call */
#define FLOW_THREAD (3ull << 60)  /* pthread_create -> the new thread's start */
#define FLOW_MPI (4ull << 60)	  /* a point-to-point MPI message, send -> receive */
#define FLOW_NCCL (5ull << 60)	  /* an NCCL call -> the GPU ops that carried it */
#define FLOW_IDLE (6ull << 60)	  /* a GPU idle interval -> the launch its host activity delayed */
#define UUID_GPU_IDLE (10ull << 60)
#define UUID_MASK ((1ull << 60) - 1)

/* The slice tracks of one stream: work that overlaps goes to the next free lane. */
struct lane_set {
	uint32_t agent;
	uint64_t stream;
	const char *name;
	VEC(uint64_t) ends; /* end of the last op of each lane */
};

#define RECENT 8

struct recent {
	const struct sc_hashmap *map;
	const char *text; /* interned */
	uint64_t iid;
};

struct pf {
	struct sc_output *out;
	struct sc_profile_set *set;
	FILE *f;
	struct pb_buf file; /* packets not written yet */
	struct pb_buf pkt, ev, interned;
	size_t interned_token; /* open InternedData message in `interned`, 0 = none */
	int32_t pid; /* as written: the real one, unless a merged trace had to tell two apart */
	uint64_t *next_uuid;	 /* the last track uuid handed out in the file */
	struct sc_hashmap uuids; /* what a track is -> its uuid */
	int32_t last_tid;
	uint64_t last_thread_uuid;
	uint32_t seq;	   /* packet sequence of this process */
	int64_t shift;	   /* added to every timestamp (merged traces of several hosts) */
	const char *label; /* process name */
	uint64_t iids;	   /* last iid handed out (shared by all kinds) */
	struct recent recent[RECENT];
	unsigned recent_next;
	const struct sc_counter_track *last_counter;
	uint64_t last_counter_uuid;
	struct sc_hashmap names, categories, arg_names; /* interned string -> iid */
	struct sc_hashmap func_names, mapping_paths, source_paths, mappings, frames, callstacks;
	struct sc_hashmap lanes; /* (agent, stream) -> index in lane_ends + 1 */
	VEC(struct lane_set) lane_sets;
	struct sc_hashmap gpu_memory; /* agent + 1 -> bytes allocated now */
	/* Host calls that caused several GPU ops: corr -> first fan flow << 16 | ops seen */
	struct sc_hashmap fans;
	uint64_t fan_next;
	/* Merged traces: MPI message ends seen per (direction, src, dst, tag, comm) */
	struct sc_hashmap mpi_ends;
	bool mpi_flows;
	bool mpi_counted; /* the process's MPI_Init was seen: its message counts are whole */
	const struct sc_image *img;	   /* being replayed */
	const struct sc_idle_report *idle; /* why the GPUs were idle, or NULL */
	uint64_t idle_flows;
	/* The NCCL links the region being begun starts (nccl_links.h), set just before */
	const uint32_t *nccl_ids;
	size_t nccl_n;
};

/* Track uuids are small numbers handed out in order (a varint of a byte or two per
 * event), looked up by what the track is: kind in the top bits, then its identity. */
static uint64_t uuid_of(struct pf *pf, uint64_t kind, uint64_t what)
{
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&pf->uuids, kind | (what & UUID_MASK), 0, &inserted);

	if (inserted)
		*slot = ++*pf->next_uuid;
	return *slot;
}

static uint64_t process_uuid(struct pf *pf)
{
	return uuid_of(pf, UUID_PROCESS, 0);
}

static uint64_t thread_uuid(struct pf *pf, int32_t tid)
{
	if (pf->last_tid != tid || !pf->last_thread_uuid) {
		pf->last_tid = tid;
		pf->last_thread_uuid = uuid_of(pf, UUID_THREAD, (uint32_t)tid);
	}
	return pf->last_thread_uuid;
}

static uint64_t shifted(const struct pf *pf, uint64_t ts)
{
	int64_t t = (int64_t)ts + pf->shift;

	return t > 0 ? (uint64_t)t : 0;
}

/* Write what is buffered. */
static void flush(struct pf *pf)
{
	fwrite(pf->file.data, 1, pf->file.len, pf->f); /* a failure shows in sc_out_close */
	pb_reset(&pf->file);
}

/* A packet, the concatenation of `n` encoded parts, as one `packet` field of the Trace
 * message, buffered. Its length is known: written ahead, the parts copied once. */
static void emit_parts(struct pf *pf, const struct pb_buf *const *parts, unsigned n)
{
	size_t len = 0;

	for (unsigned i = 0; i < n; i++)
		len += parts[i]->len;
	pb_length(&pf->file, 1, len);
	for (unsigned i = 0; i < n; i++)
		pb_raw(&pf->file, parts[i]->data, parts[i]->len);
	if (pf->file.len >= 1u << 20)
		flush(pf);
}

static void emit(struct pf *pf, const struct pb_buf *packet)
{
	emit_parts(pf, &packet, 1);
}

/* The InternedData message of the packet being built, opened on first use. */
static struct pb_buf *interned(struct pf *pf)
{
	if (!pf->interned_token)
		pf->interned_token = pb_begin(&pf->interned, PKT_INTERNED);
	return &pf->interned;
}

/* iid of an interned string entry of InternedData field `field` (EventName and friends:
 * {iid 1, name 2}; InternedString: {iid 1, str 2}). */
static uint64_t intern_string(struct pf *pf, struct sc_hashmap *map, uint32_t field, const char *s)
{
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(map, (uint64_t)(uintptr_t)s, 0, &inserted);
	size_t t;

	if (!inserted)
		return *slot;
	*slot = ++pf->iids;
	t = pb_begin(interned(pf), field);
	pb_varint(&pf->interned, 1, *slot);
	pb_string(&pf->interned, 2, s);
	pb_end(&pf->interned, t);
	return *slot;
}

/* Send the packet assembled from the event payload in `ev` (already a complete field). */
static void send_event(struct pf *pf, uint64_t ts)
{
	const struct pb_buf *parts[3] = { &pf->pkt, &pf->ev, &pf->interned };

	pb_reset(&pf->pkt);
	pb_varint(&pf->pkt, PKT_TIMESTAMP, shifted(pf, ts));
	pb_varint(&pf->pkt, PKT_SEQUENCE_ID, pf->seq);
	pb_varint(&pf->pkt, PKT_FLAGS, SEQ_NEEDS_STATE);
	if (pf->interned_token) {
		pb_end(&pf->interned, pf->interned_token);
		parts[1] = &pf->interned; /* before the event that uses it, as before */
		parts[2] = &pf->ev;
	}
	emit_parts(pf, parts, pf->interned_token ? 3 : 2);
	if (pf->interned_token) {
		pb_reset(&pf->interned);
		pf->interned_token = 0;
	}
	pb_reset(&pf->ev);
}

/* The trace's clocks: MONOTONIC, the clock of every timestamp, and REALTIME with it. */
static void clock_snapshot(struct pf *pf, const struct sc_image *img)
{
	size_t snap, c;

	pb_reset(&pf->pkt);
	snap = pb_begin(&pf->pkt, PKT_CLOCK_SNAPSHOT);
	c = pb_begin(&pf->pkt, 1);
	pb_varint(&pf->pkt, 1, CLOCK_MONOTONIC_ID);
	pb_varint(&pf->pkt, 2, img->start_ns);
	pb_end(&pf->pkt, c);
	c = pb_begin(&pf->pkt, 1);
	pb_varint(&pf->pkt, 1, CLOCK_REALTIME_ID);
	pb_varint(&pf->pkt, 2, img->start_realtime_ns);
	pb_end(&pf->pkt, c);
	pb_varint(&pf->pkt, 2, CLOCK_MONOTONIC_ID); /* primary_trace_clock */
	pb_end(&pf->pkt, snap);
	emit(pf, &pf->pkt);
}

/* A process's sequence starts: incremental state cleared, timestamps in MONOTONIC. */
static void start_sequence(struct pf *pf, uint64_t ts)
{
	size_t d;

	pb_reset(&pf->pkt);
	pb_varint(&pf->pkt, PKT_TIMESTAMP, shifted(pf, ts));
	pb_varint(&pf->pkt, PKT_CLOCK_ID, CLOCK_MONOTONIC_ID);
	pb_varint(&pf->pkt, PKT_SEQUENCE_ID, pf->seq);
	pb_varint(&pf->pkt, PKT_FLAGS, SEQ_CLEARED | SEQ_NEEDS_STATE);
	pb_varint(&pf->pkt, PKT_FIRST_ON_SEQUENCE, 1);
	d = pb_begin(&pf->pkt, PKT_DEFAULTS);
	pb_varint(&pf->pkt, 58, CLOCK_MONOTONIC_ID);
	pb_end(&pf->pkt, d);
	emit(pf, &pf->pkt);
}

static void descriptor_packet(struct pf *pf, uint64_t ts)
{
	pb_reset(&pf->pkt);
	pb_varint(&pf->pkt, PKT_TIMESTAMP, shifted(pf, ts));
	pb_varint(&pf->pkt, PKT_SEQUENCE_ID, pf->seq);
	pb_varint(&pf->pkt, PKT_FLAGS, SEQ_NEEDS_STATE);
	pb_raw(&pf->pkt, pf->ev.data, pf->ev.len);
	pb_reset(&pf->ev);
	emit(pf, &pf->pkt);
}

static void describe_process(struct pf *pf, const struct sc_process *p)
{
	const struct sc_image *img = p->images.v[p->images.n - 1];
	const char *exe = sc_base_name(img->exe ? img->exe : "?");
	size_t d = pb_begin(&pf->ev, PKT_TRACK_DESCRIPTOR), pd;

	pb_varint(&pf->ev, 1, process_uuid(pf));
	pd = pb_begin(&pf->ev, 3);
	pb_int(&pf->ev, 1, pf->pid);
	for (size_t i = 0; i < img->argv.n; i++)
		pb_string(&pf->ev, 2, img->argv.v[i]);
	pb_string(&pf->ev, 6, pf->label ? pf->label : exe);
	pb_end(&pf->ev, pd);
	pb_end(&pf->ev, d);
	descriptor_packet(pf, p->images.v[0]->start_ns);

	for (size_t i = 0; i < p->threads.n; i++) {
		const struct sc_thread *t = &p->threads.v[i];
		char name[64];

		if (t->name[0])
			snprintf(name, sizeof(name), "%s", t->name);
		else
			snprintf(name, sizeof(name), "thread %d", (int)t->tid);
		d = pb_begin(&pf->ev, PKT_TRACK_DESCRIPTOR);
		pb_varint(&pf->ev, 1, thread_uuid(pf, t->tid));
		pb_varint(&pf->ev, 5, process_uuid(pf));
		pd = pb_begin(&pf->ev, 4);
		pb_int(&pf->ev, 1, pf->pid);
		pb_int(&pf->ev, 2, t->tid);
		pb_string(&pf->ev, 5, name);
		pb_end(&pf->ev, pd);
		pb_end(&pf->ev, d);
		descriptor_packet(pf, t->begin_ts ? t->begin_ts : p->images.v[0]->start_ns);
	}
}

static uint64_t counter_uuid(struct pf *pf, const struct sc_counter_track *c)
{
	/* By name and unit, so the same counter in two images of a process is one track. */
	return uuid_of(pf, UUID_COUNTER,
		       sc_hash_bytes(c->name, strlen(c->name),
				     sc_hash_bytes(c->unit, strlen(c->unit), 0)));
}

static void describe_counters(struct pf *pf, const struct sc_process *p)
{
	struct sc_hashmap seen;

	sc_hashmap_init(&seen);
	for (size_t i = 0; i < p->images.n; i++) {
		const struct sc_image *img = p->images.v[i];

		for (size_t c = 0; c < img->counter_tracks.n; c++) {
			const struct sc_counter_track *ct = &img->counter_tracks.v[c];
			uint64_t uuid = counter_uuid(pf, ct);
			bool inserted;
			size_t d, cd;

			sc_hashmap_upsert(&seen, uuid, 1, &inserted);
			if (!inserted)
				continue;
			d = pb_begin(&pf->ev, PKT_TRACK_DESCRIPTOR);
			pb_varint(&pf->ev, 1, uuid);
			pb_varint(&pf->ev, 5, process_uuid(pf));
			pb_string(&pf->ev, 2, ct->name);
			cd = pb_begin(&pf->ev, 8);
			if (ct->unit[0])
				pb_string(&pf->ev, 6, ct->unit);
			pb_end(&pf->ev, cd);
			pb_end(&pf->ev, d);
			descriptor_packet(pf, img->start_ns);
		}
	}
	sc_hashmap_free(&seen);
}

/* A DebugAnnotation of the event being built: its interned name, then the value. */
static uint64_t recent_iid(struct pf *pf, struct sc_hashmap *map, uint32_t field, const char *s);

static size_t annotation(struct pf *pf, const char *name)
{
	size_t a = pb_begin(&pf->ev, 4);

	pb_varint(&pf->ev, 1, recent_iid(pf, &pf->arg_names, 3, name));
	return a;
}

static void annotate_uint(struct pf *pf, const char *name, uint64_t v)
{
	size_t a = annotation(pf, name);

	pb_varint(&pf->ev, 3, v);
	pb_end(&pf->ev, a);
}

static void annotate_double(struct pf *pf, const char *name, double v)
{
	size_t a = annotation(pf, name);

	pb_double(&pf->ev, 5, v);
	pb_end(&pf->ev, a);
}

static void annotate_string(struct pf *pf, const char *name, const char *v)
{
	size_t a = annotation(pf, name);

	pb_string(&pf->ev, 6, v);
	pb_end(&pf->ev, a);
}

static void debug_annotations(struct pf *pf, const struct sc_region_ev *r)
{
	const char *p = r->args, *end = r->args + r->args_len, *name, *value;
	char type;

	while ((p = sc_region_arg_next(p, end, &type, &name, &value))) {
		size_t a = annotation(pf, name);

		switch (type) {
		case SC_ARG_INT:
			pb_int(&pf->ev, 4, strtoll(value, NULL, 10));
			break;
		case SC_ARG_UINT:
			pb_varint(&pf->ev, 3, strtoull(value, NULL, 10));
			break;
		case SC_ARG_DOUBLE:
			pb_double(&pf->ev, 5, strtod(value, NULL));
			break;
		case SC_ARG_POINTER:
			pb_varint(&pf->ev, 7, strtoull(value, NULL, 16));
			break;
		default:
			pb_string(&pf->ev, 6, value);
			break;
		}
		pb_end(&pf->ev, a);
	}
}

/*
 * The iid of an event name or category given as text that is not interned (it points into
 * the record): the few most recent ones are compared first, which spares hashing for the
 * names a program uses over and over.
 */
static uint64_t recent_iid(struct pf *pf, struct sc_hashmap *map, uint32_t field, const char *s)
{
	struct recent *c = pf->recent;
	unsigned slot;

	for (unsigned i = 0; i < RECENT; i++)
		if (c[i].map == map && !strcmp(c[i].text, s))
			return c[i].iid;
	slot = pf->recent_next++ % RECENT;
	c[slot].map = map;
	c[slot].text = sc_strtab_intern(&pf->set->model->strings, s);
	c[slot].iid = intern_string(pf, map, field, c[slot].text);
	return c[slot].iid;
}

/* Open a TrackEvent of `type` on `track`, named (when `name`) in `category`; the caller
 * adds fields and closes it with pb_end. */
static size_t begin_track_event(struct pf *pf, int type, uint64_t track, const char *category,
				const char *name)
{
	size_t e = pb_begin(&pf->ev, PKT_TRACK_EVENT);

	pb_varint(&pf->ev, 9, (uint64_t)type);
	pb_varint(&pf->ev, 11, track);
	if (name) {
		pb_varint(&pf->ev, 3, recent_iid(pf, &pf->categories, 1, category));
		pb_varint(&pf->ev, 10, recent_iid(pf, &pf->names, 2, name));
	}
	return e;
}

/*
 * The flows from a host call to the device work with correlation id `corr`, unique in the
 * trace (one sequence per process, fewer than 2^24 of them). A call that caused several ops
 * (a graph launch) starts one flow per op: the first is named by `corr`, the others take
 * consecutive numbers of the sequence.
 */
static uint64_t flow_id(const struct pf *pf, uint64_t corr)
{
	return FLOW_GPU | (uint64_t)pf->seq << 36 | (corr & ((1ull << 36) - 1));
}

static uint64_t fan_flow_id(const struct pf *pf, uint64_t n)
{
	return FLOW_GPU_FAN | (uint64_t)pf->seq << 36 | (n & ((1ull << 36) - 1));
}

/*
 * The fan flows of `corr` (a call with `ops` > 1 GPU ops): their first number, handed out by
 * whichever comes first in the replay, the call or one of its ops (CUPTI may deliver the
 * ops before the call), and how many ops took theirs. Slot: first << 16 | ops seen.
 */
static uint64_t *fan_slot(struct pf *pf, uint64_t corr, uint64_t ops)
{
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&pf->fans, corr, 0, &inserted);

	if (inserted) {
		*slot = pf->fan_next << 16;
		pf->fan_next += ops - 1;
	}
	return slot;
}

/* The flow the next op of `corr` ends. */
static uint64_t op_flow_id(struct pf *pf, uint64_t corr)
{
	uint64_t ops = sc_image_corr_ops(pf->img, corr), *slot, seen;

	if (ops < 2 || ops > 0xffff)
		return flow_id(pf, corr);
	slot = fan_slot(pf, corr, ops);
	seen = (*slot)++ & 0xffff;
	return seen ? fan_flow_id(pf, (*slot >> 16) + seen - 1) : flow_id(pf, corr);
}

/*
 * --parallel=pthread: a flow from a pthread_create region to the "thread start" mark that
 * begins the thread it made (both carry its creation index), named by that index. Other
 * regions and marks: 0.
 */
static uint64_t thread_flow_id(const struct pf *pf, const struct sc_region_ev *r, const char *name)
{
	const char *a = r->args, *end = r->args + r->args_len;

	if (!r->category || strcmp(r->category, "pthread") || strcmp(r->name, name))
		return 0;
	for (uint32_t i = 0; i < r->nargs && a < end; i++) {
		const char *arg = a + strlen(a) + 1, *value = arg + strlen(arg) + 1;

		if (!strcmp(arg, "thread_index"))
			return FLOW_THREAD | (uint64_t)pf->seq << 36 |
			       (strtoull(value, NULL, 10) & ((1ull << 36) - 1));
		a = value + strlen(value) + 1;
	}
	return 0;
}

/*
 * MPI messages as flows from the send to the matching receive, in a merged trace: both ends
 * name a message by (source, destination, tag, communicator) and how many messages of that
 * kind the rank sent, or received, before it; MPI's non-overtaking rule makes the n-th send
 * match the n-th receive. Each rank computes its ends alone. A rank recorded from after its
 * MPI_Init (syscope attach, a paused start) has no flows: its counts miss the messages
 * before, so its n-th message is not the job's.
 */
static unsigned mpi_flow_ids(struct pf *pf, const struct sc_region_ev *r, bool sends)
{
	struct sc_mpi_message msg[64];
	unsigned n, done = 0;

	if (!pf->mpi_counted) {
		pf->mpi_counted =
			sends && r->category && !strcmp(r->category, SC_MPI_CATEGORY) &&
			(!strcmp(r->name, "MPI_Init") || !strcmp(r->name, "MPI_Init_thread"));
		return 0;
	}
	n = sc_mpi_messages(r, sc_image_rank(pf->img), msg, 64);

	for (unsigned i = 0; i < n; i++) {
		if (msg[i].send != sends)
			continue;
		done++;
		uint64_t key = sc_hash_bytes(&msg[i].src, 3 * sizeof(int32_t), msg[i].comm);
		bool inserted;
		uint64_t *seen = sc_hashmap_upsert(&pf->mpi_ends, key ^ msg[i].send, 0, &inserted);
		uint64_t id = sc_hash_u64(key + (*seen)++) & ((1ull << 60) - 1);

		pb_fixed64(&pf->ev, msg[i].send ? 47 : 48, FLOW_MPI | id);
	}
	return done;
}

/* A receive's flows end at an instant where the call returns, not where it began: a
 * receive usually starts waiting before its send, and a flow must not run back in time. */
static void mpi_receive_instant(struct pf *pf, uint64_t track, const struct sc_region_ev *r)
{
	struct sc_mpi_message msg[64];
	unsigned n = sc_mpi_messages(r, sc_image_rank(pf->img), msg, 64), recvs = 0;
	size_t e;

	for (unsigned i = 0; i < n; i++)
		recvs += !msg[i].send;
	if (!recvs)
		return;
	e = begin_track_event(pf, EV_INSTANT, track, SC_MPI_CATEGORY, "MPI message received");
	mpi_flow_ids(pf, r, false);
	pb_end(&pf->ev, e);
	send_event(pf, r->end);
}

/* The Python stack that made the CUDA call of `corr` (gpu_python.h), as an argument. */
static void annotate_python(struct pf *pf, uint64_t corr)
{
	const struct sc_py_frame *frames;
	const struct sc_py_callsite *cs = sc_py_callsite_of(pf->img, corr, &frames);
	char text[4096];

	if (cs && cs->nframes)
		annotate_string(pf, "python",
				sc_py_callsite_text(pf->img, cs, frames, text, sizeof(text)));
}

/* Flows from an NCCL call to the GPU ops that carried it (link numbers of nccl_links.h). */
static uint64_t nccl_flow_id(const struct pf *pf, uint32_t n)
{
	return FLOW_NCCL | (uint64_t)pf->seq << 36 | n;
}

static void nccl_flows_of_call(struct pf *pf, struct sc_image *img, int32_t tid,
			       const struct sc_region_ev *r)
{
	pf->nccl_n = r->category && !strcmp(r->category, "nccl")
			     ? sc_nccl_call_links(img, tid, r->start, &pf->nccl_ids)
			     : 0;
}

static void nccl_flows_of_op(struct pf *pf, struct sc_image *img, uint64_t corr)
{
	const uint32_t *ids;
	size_t n = sc_nccl_op_links(img, corr, &ids);

	for (size_t i = 0; i < n; i++)
		pb_fixed64(&pf->ev, 48, nccl_flow_id(pf, ids[i]));
}

static void track_event(struct pf *pf, int type, uint64_t track, const struct sc_region_ev *r,
			uint64_t flow)
{
	size_t e = begin_track_event(pf, type, track, r ? r->category : NULL, r ? r->name : NULL);

	if (r)
		debug_annotations(pf, r);
	if (r && pf->mpi_flows && type == EV_SLICE_BEGIN)
		mpi_flow_ids(pf, r, true);
	if (r && r->corr_id)
		annotate_python(pf, r->corr_id);
	for (size_t i = 0; r && i < pf->nccl_n; i++)
		pb_fixed64(&pf->ev, 47, nccl_flow_id(pf, pf->nccl_ids[i]));
	pf->nccl_n = 0;
	if (flow) {
		uint64_t ops = sc_image_corr_ops(pf->img, r->corr_id);

		pb_fixed64(&pf->ev, 47, flow);
		if (ops > 1 && ops <= 0xffff) {
			uint64_t first = *fan_slot(pf, r->corr_id, ops) >> 16;

			for (uint64_t i = 0; i + 1 < ops; i++)
				pb_fixed64(&pf->ev, 47, fan_flow_id(pf, first + i));
		}
	}
	pb_end(&pf->ev, e);
}

static void describe_named_track(struct pf *pf, uint64_t uuid, uint64_t parent, const char *name,
				 const char *counter_unit, uint64_t ts);

/*
 * The track of a region: its thread's, or for calls that ran on another stack of the thread
 * (a coroutine's, SC_FUNC_CONTEXT) a track of their own under the thread's, described at its
 * first use, so that interleaved coroutine calls keep their own bounds.
 */
static uint64_t region_track(struct pf *pf, const struct sc_thread *t, const struct sc_region_ev *r)
{
	uint64_t key, *slot;
	bool inserted;
	char name[64];

	if (!r->context)
		return thread_uuid(pf, t->tid);
	key = UUID_CONTEXT | (((uint64_t)r->context << 32 | (uint32_t)t->tid) & UUID_MASK);
	slot = sc_hashmap_upsert(&pf->uuids, key, 0, &inserted);
	if (inserted) {
		*slot = ++*pf->next_uuid;
		snprintf(name, sizeof(name), "thread %d: stack %u", (int)t->tid,
			 (unsigned)r->context);
		describe_named_track(pf, *slot, thread_uuid(pf, t->tid), name, NULL, r->start);
	}
	return *slot;
}

static void on_region_begin(void *ctx, struct sc_image *img, struct sc_thread *t,
			    const struct sc_region_ev *r)
{
	struct pf *pf = ctx;

	uint64_t flow = sc_image_corr_linked(img, r->corr_id)
				? flow_id(pf, r->corr_id)
				: thread_flow_id(pf, r, "pthread_create");

	nccl_flows_of_call(pf, img, t->tid, r);
	track_event(pf, EV_SLICE_BEGIN, region_track(pf, t, r), r, flow);
	send_event(pf, r->start);
}

static void on_region_end(void *ctx, struct sc_image *img, struct sc_thread *t,
			  const struct sc_region_ev *r)
{
	struct pf *pf = ctx;

	(void)img;
	if (pf->mpi_flows)
		mpi_receive_instant(pf, region_track(pf, t, r), r);
	track_event(pf, EV_SLICE_END, region_track(pf, t, r), NULL, 0);
	send_event(pf, r->end);
}

static void on_mark(void *ctx, struct sc_image *img, struct sc_thread *t,
		    const struct sc_region_ev *r)
{
	struct pf *pf = ctx;
	uint64_t ends = thread_flow_id(pf, r, "thread start");
	size_t e;

	(void)img;
	if (!ends) {
		track_event(pf, EV_INSTANT, thread_uuid(pf, t->tid), r, 0);
	} else {
		e = begin_track_event(pf, EV_INSTANT, thread_uuid(pf, t->tid), r->category,
				      r->name);
		debug_annotations(pf, r);
		pb_fixed64(&pf->ev, 48, ends); /* terminating_flow_ids */
		pb_end(&pf->ev, e);
	}
	send_event(pf, r->start);
}

static void on_counter(void *ctx, struct sc_image *img, struct sc_thread *t,
		       const struct sc_counter_track *track, uint64_t ts, double value)
{
	struct pf *pf = ctx;
	size_t e = pb_begin(&pf->ev, PKT_TRACK_EVENT);

	(void)img;
	(void)t;
	pb_varint(&pf->ev, 9, EV_COUNTER);
	if (track != pf->last_counter) {
		pf->last_counter = track;
		pf->last_counter_uuid = counter_uuid(pf, track);
	}
	pb_varint(&pf->ev, 11, pf->last_counter_uuid);
	pb_double(&pf->ev, 44, value);
	pb_end(&pf->ev, e);
	send_event(pf, ts);
}

/* A mapping per module name for frames without an address (Python code, unknown frames):
 * trace_processor before v53 needs every frame to have one. */
static uint64_t named_mapping_iid(struct pf *pf, const char *module)
{
	bool inserted;
	uint64_t *slot =
		sc_hashmap_upsert(&pf->mappings, (uint64_t)(uintptr_t)module, 0, &inserted);
	uint64_t path;
	size_t t;

	if (!inserted)
		return *slot;
	path = intern_string(pf, &pf->mapping_paths, 17,
			     module[0] ? module
				       : sc_strtab_intern(&pf->set->model->strings, "[unknown]"));
	*slot = ++pf->iids;
	t = pb_begin(interned(pf), 19);
	pb_varint(&pf->interned, 1, *slot);
	pb_varint(&pf->interned, 7, path);
	pb_end(&pf->interned, t);
	return *slot;
}

/* The mapping of a loaded module: its full path, build id and address range, so that a
 * frame's rel_pc (its address less the mapping's start) can be symbolized again. */
static uint64_t module_mapping_iid(struct pf *pf, const struct sc_module *mod)
{
	bool inserted;
	uint64_t *slot =
		sc_hashmap_upsert(&pf->mappings, (uint64_t)(uintptr_t)mod | 1, 0, &inserted);
	uint64_t path, build_id = 0;
	size_t t;

	if (!inserted)
		return *slot;
	path = intern_string(pf, &pf->mapping_paths, 17, mod->path);
	if (mod->build_id_len) {
		build_id = ++pf->iids;
		t = pb_begin(interned(pf), 16);
		pb_varint(&pf->interned, 1, build_id);
		pb_bytes(&pf->interned, 2, mod->build_id, mod->build_id_len);
		pb_end(&pf->interned, t);
	}
	*slot = ++pf->iids;
	t = pb_begin(interned(pf), 19);
	pb_varint(&pf->interned, 1, *slot);
	if (build_id)
		pb_varint(&pf->interned, 2, build_id);
	pb_varint(&pf->interned, 4, mod->lo);
	pb_varint(&pf->interned, 5, mod->hi);
	pb_varint(&pf->interned, 7, path);
	pb_end(&pf->interned, t);
	return *slot;
}

/* A frame: function, source line, and where its code is (a module and the address relative
 * to the mapping's start, when it has one). */
static uint64_t frame_iid(struct pf *pf, uint32_t func, uint32_t line, const struct sc_module *mod,
			  uint64_t addr)
{
	const struct sc_profile_set *set = pf->set;
	uint64_t rel_pc = mod && addr >= mod->lo ? addr - mod->lo : 0;
	uint64_t key = sc_hash_u64(((uint64_t)func << 32 | line) ^
				   sc_hash_u64((uint64_t)(uintptr_t)mod ^ rel_pc << 1)) |
		       1;
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&pf->frames, key, 0, &inserted);
	const struct sc_func *f = sc_func_of(set, func);
	const struct sc_line *ln = &set->lines.v[line];
	uint64_t name, mapping, source = 0;
	size_t t;

	if (!inserted)
		return *slot;
	name = intern_string(pf, &pf->func_names, 5, f->name);
	mapping = mod ? module_mapping_iid(pf, mod) : named_mapping_iid(pf, f->module);
	if (ln->file[0])
		source = intern_string(pf, &pf->source_paths, 18, ln->file);
	*slot = ++pf->iids;
	t = pb_begin(interned(pf), 6);
	pb_varint(&pf->interned, 1, *slot);
	pb_varint(&pf->interned, 2, name);
	pb_varint(&pf->interned, 3, mapping);
	pb_varint(&pf->interned, 4, rel_pc);
	if (source) {
		pb_varint(&pf->interned, 5, source);
		pb_varint(&pf->interned, 6, ln->line);
	}
	pb_end(&pf->interned, t);
	return *slot;
}

static uint64_t callstack_iid(struct pf *pf, uint32_t stack)
{
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&pf->callstacks, (uint64_t)stack + 1, 0, &inserted);
	uint32_t *funcs, *lines;
	const struct sc_module *const *mods;
	const uint64_t *addrs;
	uint64_t *frames;
	size_t n, t;

	if (!inserted)
		return *slot;
	n = sc_stack_path(pf->set, &pf->set->model->stacks.v[stack], &funcs, &lines);
	sc_stack_path_addresses(&mods, &addrs);
	frames = sc_xcalloc(n ? n : 1, sizeof(*frames));
	for (size_t i = 0; i < n; i++)
		frames[i] = frame_iid(pf, funcs[i], lines[i], mods[i], addrs[i]);
	*slot = ++pf->iids;
	t = pb_begin(interned(pf), 7);
	pb_varint(&pf->interned, 1, *slot);
	for (size_t i = 0; i < n; i++) /* outermost first */
		pb_varint(&pf->interned, 2, frames[i]);
	pb_end(&pf->interned, t);
	free(frames);
	return *slot;
}

/* A Python thread's GIL state at each sample, on a counter track under the thread (described
 * at its first sample): 0 no thread state, 1 holds the GIL, 2 runs without it, 3 waits. */
static void gil_sample(struct pf *pf, const struct sc_thread *t, uint64_t ts, unsigned state)
{
	uint64_t key = UUID_GIL | ((uint32_t)t->tid & UUID_MASK), *slot;
	bool inserted;
	size_t e;

	slot = sc_hashmap_upsert(&pf->uuids, key, 0, &inserted);
	if (inserted) {
		char name[96];

		*slot = ++*pf->next_uuid;
		snprintf(name, sizeof(name), "GIL %d (1 holds, 2 released, 3 waiting)",
			 (int)t->tid);
		describe_named_track(pf, *slot, thread_uuid(pf, t->tid), name, "state", ts);
	}
	e = pb_begin(&pf->ev, PKT_TRACK_EVENT);
	pb_varint(&pf->ev, 9, EV_COUNTER);
	pb_varint(&pf->ev, 11, *slot);
	pb_double(&pf->ev, 44, (double)state);
	pb_end(&pf->ev, e);
	send_event(pf, ts);
}

static void on_sample(void *ctx, struct sc_image *img, struct sc_thread *t, uint64_t ts,
		      uint64_t cpu_ns, uint32_t stack)
{
	struct pf *pf = ctx;
	uint64_t cs = callstack_iid(pf, stack);
	size_t s = pb_begin(&pf->ev, PKT_PERF_SAMPLE);

	(void)img;
	(void)cpu_ns;
	pb_varint(&pf->ev, 2, (uint32_t)pf->pid);
	pb_varint(&pf->ev, 3, (uint32_t)t->tid);
	pb_varint(&pf->ev, 4, cs);
	pb_varint(&pf->ev, 5, CPU_MODE_USER);
	pb_end(&pf->ev, s);
	send_event(pf, ts);
	if (pf->set->model->stacks.v[stack].flags & SC_SAMPLE_PYTHON)
		gil_sample(pf, t, ts, sc_stack_gil(pf->set, stack));
}

static uint64_t gpu_uuid(struct pf *pf, uint32_t agent)
{
	return uuid_of(pf, UUID_GPU, agent);
}

static uint64_t gpu_memory_uuid(struct pf *pf, uint32_t agent)
{
	return uuid_of(pf, UUID_GPU_MEMORY, agent);
}

static uint64_t lane_uuid(struct pf *pf, const struct lane_set *ls, size_t lane)
{
	return uuid_of(pf, UUID_LANE,
		       sc_hash_bytes(&ls->stream, sizeof(ls->stream),
				     (uint64_t)ls->agent << 32 ^ (uint64_t)lane));
}

static void describe_lane(struct pf *pf, struct lane_set *ls, size_t lane, uint64_t ts)
{
	size_t d = pb_begin(&pf->ev, PKT_TRACK_DESCRIPTOR);
	char name[128];

	if (lane)
		snprintf(name, sizeof(name), "%s (overlap %zu)", ls->name, lane);
	else
		snprintf(name, sizeof(name), "%s", ls->name);
	pb_varint(&pf->ev, 1, lane_uuid(pf, ls, lane));
	pb_varint(&pf->ev, 5, gpu_uuid(pf, ls->agent));
	pb_string(&pf->ev, 2, name);
	pb_end(&pf->ev, d);
	descriptor_packet(pf, ts);
}

static void describe_named_track(struct pf *pf, uint64_t uuid, uint64_t parent, const char *name,
				 const char *counter_unit, uint64_t ts)
{
	size_t d = pb_begin(&pf->ev, PKT_TRACK_DESCRIPTOR);

	pb_varint(&pf->ev, 1, uuid);
	pb_varint(&pf->ev, 5, parent);
	pb_string(&pf->ev, 2, name);
	if (counter_unit) {
		size_t cd = pb_begin(&pf->ev, 8);

		pb_string(&pf->ev, 6, counter_unit);
		pb_end(&pf->ev, cd);
	}
	pb_end(&pf->ev, d);
	descriptor_packet(pf, ts);
}

/* Per device: a track "GPU n: name" in the process, a track per stream under it, and a
 * counter of the memory allocated through the profiled runtime when there were allocations. */
static void describe_gpus(struct pf *pf, const struct sc_process *p)
{
	for (size_t i = 0; i < p->images.n; i++) {
		const struct sc_image *img = p->images.v[i];
		bool allocs = img->gpu_ops[SC_GPU_ALLOC] || img->gpu_ops[SC_GPU_FREE];

		for (size_t a = 0; a < img->agents.n; a++) {
			const struct sc_gpu_agent *ag = &img->agents.v[a];
			bool inserted;
			char name[160];

			if (ag->type != SC_AGENT_GPU)
				continue;
			sc_hashmap_upsert(&pf->gpu_memory, (uint64_t)ag->id + 1, 0, &inserted);
			if (!inserted)
				continue;
			snprintf(name, sizeof(name), "GPU %u: %s", ag->id, ag->name);
			describe_named_track(pf, gpu_uuid(pf, ag->id), process_uuid(pf), name, NULL,
					     img->start_ns);
			if (!allocs)
				continue;
			snprintf(name, sizeof(name), "GPU %u memory allocated", ag->id);
			describe_named_track(pf, gpu_memory_uuid(pf, ag->id), gpu_uuid(pf, ag->id),
					     name, "bytes", img->start_ns);
		}
		for (size_t g = 0; g < img->streams.n; g++) {
			const struct sc_gpu_stream *st = &img->streams.v[g];
			bool inserted;
			uint64_t *slot = sc_hashmap_upsert(
				&pf->lanes, sc_stream_key(st->agent, st->stream), 0, &inserted);
			struct lane_set *ls;

			if (!inserted)
				continue;
			ls = VEC_PUSH(&pf->lane_sets);
			memset(ls, 0, sizeof(*ls));
			ls->agent = st->agent;
			ls->stream = st->stream;
			ls->name = st->name;
			*VEC_PUSH(&ls->ends) = 0;
			*slot = pf->lane_sets.n;
			describe_lane(pf, ls, 0, img->start_ns);
		}
	}
}

/* The lane of `stream` free at `start` (a new one when all are busy), now busy until `end`. */
static uint64_t lane_for(struct pf *pf, const struct sc_rec_gpu_op *o)
{
	const uint64_t *slot = sc_hashmap_get(&pf->lanes, sc_stream_key(o->agent, o->stream));
	struct lane_set *ls;
	size_t lane = 0;

	if (!slot)
		return 0;
	ls = &pf->lane_sets.v[*slot - 1];
	while (lane < ls->ends.n && ls->ends.v[lane] > o->start)
		lane++;
	if (lane == ls->ends.n) {
		*VEC_PUSH(&ls->ends) = 0;
		describe_lane(pf, ls, lane, o->start);
	}
	ls->ends.v[lane] = o->end;
	return lane_uuid(pf, ls, lane);
}

static void gpu_allocation(struct pf *pf, struct sc_image *img, const struct sc_gpu_op_ev *op)
{
	const struct sc_rec_gpu_op *o = op->rec;
	uint64_t *now = sc_hashmap_upsert(&pf->gpu_memory, (uint64_t)o->agent + 1, 0, NULL);
	size_t e = begin_track_event(pf, EV_INSTANT, gpu_uuid(pf, o->agent),
				     sc_gpu_op_category(o->kind), op->name);
	char addr[32];

	annotate_uint(pf, "bytes", o->bytes);
	snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)o->address);
	annotate_string(pf, "address", addr);
	if (sc_image_corr_linked(img, o->corr_id))
		pb_fixed64(&pf->ev, 48, op_flow_id(pf, o->corr_id));
	pb_end(&pf->ev, e);
	send_event(pf, o->start);

	if (o->kind == SC_GPU_ALLOC)
		*now += o->bytes;
	else
		*now = *now > o->bytes ? *now - o->bytes : 0;
	e = begin_track_event(pf, EV_COUNTER, gpu_memory_uuid(pf, o->agent), NULL, NULL);
	pb_double(&pf->ev, 44, (double)*now);
	pb_end(&pf->ev, e);
	send_event(pf, o->start);
}

static void on_gpu_op(void *ctx, struct sc_image *img, struct sc_thread *t,
		      const struct sc_gpu_op_ev *op)
{
	struct pf *pf = ctx;
	const struct sc_rec_gpu_op *o = op->rec;
	uint64_t lane;
	size_t e;
	char text[64];

	(void)t;
	if (o->kind == SC_GPU_ALLOC || o->kind == SC_GPU_FREE) {
		gpu_allocation(pf, img, op);
		return;
	}
	lane = lane_for(pf, o);
	if (!lane)
		return;
	e = begin_track_event(pf, EV_SLICE_BEGIN, lane, sc_gpu_op_category(o->kind), op->name);
	if (o->kind == SC_GPU_KERNEL) {
		snprintf(text, sizeof(text), "%u x %u x %u", o->grid[0], o->grid[1], o->grid[2]);
		annotate_string(pf, "grid", text);
		snprintf(text, sizeof(text), "%u x %u x %u", o->block[0], o->block[1], o->block[2]);
		annotate_string(pf, "block", text);
		annotate_uint(pf, "registers per thread", o->registers);
		annotate_uint(pf, "shared memory static", o->shared_static);
		annotate_uint(pf, "shared memory dynamic", o->shared_dynamic);
		annotate_uint(pf, "local memory per thread", o->local_per_thread);
		for (uint32_t i = 0; op->metrics && i < img->gpu_metric_n; i++)
			if (!isnan(op->metrics[i])) /* GPU hardware counters (--gpu-events) */
				annotate_double(pf, img->gpu_metric_names[i], op->metrics[i]);
	} else if (o->kind == SC_GPU_GRAPH) {
		annotate_string(pf, "nodes", "not traced one by one (--cuda-domains graph)");
	} else {
		double s = (double)(o->end - o->start) * 1e-9;

		annotate_uint(pf, "bytes", o->bytes);
		if (o->kind == SC_GPU_COPY)
			annotate_string(pf, "direction", sc_copy_kind_short(o->copy_kind));
		if (s > 0) {
			snprintf(text, sizeof(text), "%.2f GB/s", (double)o->bytes / s * 1e-9);
			annotate_string(pf, "bandwidth", text);
		}
	}
	if (o->corr_id) {
		annotate_uint(pf, "correlation id", o->corr_id);
		annotate_python(pf, o->corr_id);
	}
	if (sc_image_corr_linked(img, o->corr_id))
		pb_fixed64(&pf->ev, 48, op_flow_id(pf, o->corr_id));
	nccl_flows_of_op(pf, img, o->corr_id);
	pb_end(&pf->ev, e);
	send_event(pf, o->start);
	e = begin_track_event(pf, EV_SLICE_END, lane, NULL, NULL);
	pb_end(&pf->ev, e);
	send_event(pf, o->end);
}

/* An explained idle interval's flow ends where its launching thread began the launch: the
 * host activity before that instant is what kept the GPU waiting. */
static bool idle_host_cause(unsigned cause)
{
	return cause != SC_IDLE_LAUNCH && cause != SC_IDLE_UNSAMPLED && cause != SC_IDLE_NO_LAUNCH;
}

static void idle_gap(struct pf *pf, uint64_t track, const struct sc_idle_gap *g)
{
	const char *key = sc_idle_cause_key(g->cause);
	bool flow = g->tid && idle_host_cause(g->cause);
	uint64_t id = FLOW_IDLE | (uint64_t)pf->seq << 36 | (++pf->idle_flows & ((1ull << 36) - 1));
	size_t e = begin_track_event(pf, EV_SLICE_BEGIN, track, "gpu_idle", key);

	annotate_string(pf, "cause", sc_idle_cause_text(g->cause));
	if (g->tid)
		annotate_uint(pf, "launching thread", (uint64_t)g->tid);
	if (g->corr)
		annotate_uint(pf, "correlation id", g->corr);
	if (flow)
		pb_fixed64(&pf->ev, 47, id);
	pb_end(&pf->ev, e);
	send_event(pf, g->start);
	e = begin_track_event(pf, EV_SLICE_END, track, NULL, NULL);
	pb_end(&pf->ev, e);
	send_event(pf, g->end);
	if (!flow)
		return;
	e = begin_track_event(pf, EV_INSTANT, thread_uuid(pf, g->tid), "gpu_idle",
			      "launch after GPU idle");
	annotate_string(pf, "cause", key);
	pb_fixed64(&pf->ev, 48, id);
	pb_end(&pf->ev, e);
	send_event(pf, g->call_start && g->call_start < g->end ? g->call_start : g->end);
}

/* A track "GPU n idle: why" per GPU of the process (gpu_idle.h): a slice per idle interval
 * longer than the threshold, named by its main cause. */
static void idle_tracks(struct pf *pf, const struct sc_process *p)
{
	for (size_t i = 0; pf->idle && i < pf->idle->gpus.n; i++) {
		const struct sc_idle_gpu *g = &pf->idle->gpus.v[i];
		uint64_t track;
		char name[64];

		if (g->img->proc != p || !g->gaps || !g->gaps->count)
			continue;
		track = uuid_of(pf, UUID_GPU_IDLE, g->agent);
		snprintf(name, sizeof(name), "GPU %u idle: why", g->agent);
		describe_named_track(pf, track, process_uuid(pf), name, NULL, g->first);
		for (uint64_t k = 0; k < g->gaps->count; k++)
			idle_gap(pf, track, sc_spill_table_get(g->gaps, k));
	}
}

static const struct sc_timeline_ops pf_ops = {
	.region_begin = on_region_begin,
	.region_end = on_region_end,
	.mark = on_mark,
	.counter = on_counter,
	.sample = on_sample,
	.gpu_op = on_gpu_op,
};

/* One process as one packet sequence of the trace being written to `pf->f`. */
static void write_sequence(struct pf *pf, struct sc_process *p)
{
	struct sc_timeline_stats stats = { 0 };
	struct sc_hashmap *maps[] = { &pf->names,      &pf->categories,	   &pf->arg_names,
				      &pf->func_names, &pf->mapping_paths, &pf->source_paths,
				      &pf->mappings,   &pf->frames,	   &pf->callstacks,
				      &pf->lanes,      &pf->gpu_memory,	   &pf->uuids,
				      &pf->fans,       &pf->mpi_ends };

	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		sc_hashmap_init(maps[i]);
	pf->mpi_counted = false;
	start_sequence(pf, p->images.v[0]->start_ns);
	describe_process(pf, p);
	describe_counters(pf, p);
	describe_gpus(pf, p);
	for (size_t i = 0; i < p->images.n; i++) {
		pf->img = p->images.v[i];
		sc_timeline_replay(pf->out->model, p->images.v[i], &pf_ops, pf, &stats);
	}
	idle_tracks(pf, p);
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		sc_hashmap_free(maps[i]);
	for (size_t i = 0; i < pf->lane_sets.n; i++)
		VEC_FREE(&pf->lane_sets.v[i].ends);
	VEC_FREE(&pf->lane_sets);
	pb_free(&pf->pkt);
	pb_free(&pf->ev);
	pb_free(&pf->interned);
	flush(pf);
	pb_free(&pf->file);
}

/* "rank 3: app", or "app", with the host when the trace holds several. */
static char *process_label(const struct sc_process *p, bool with_host)
{
	const struct sc_image *img = p->images.v[p->images.n - 1];
	const char *exe = sc_base_name(img->exe ? img->exe : "?");
	int rank = sc_image_rank(p->images.v[0]);
	char r[32] = "";

	if (rank >= 0)
		snprintf(r, sizeof(r), "rank %d: ", rank);
	return sc_xasprintf("%s%s%s%s%s", r, exe, with_host ? " (" : "",
			    with_host ? p->hostname : "", with_host ? ")" : "");
}

/* Each process in its own file. */
static int write_per_process(struct sc_output *out, const struct sc_idle_report *idle)
{
	int rc = 0;

	for (size_t i = 0; i < out->model->processes.n; i++) {
		struct sc_process *p = out->model->processes.v[i];
		/* Track uuids and the sequence from the pid: traces of several processes put
		 * together with `cat` (which Perfetto reads as one) keep their tracks apart. */
		struct pf pf = { .out = out,
				 .set = out->profiles,
				 .pid = p->pid,
				 .seq = (uint32_t)p->pid & SEQ_MASK,
				 .idle = idle };
		uint64_t uuids = (uint64_t)((uint32_t)p->pid & SEQ_MASK) << 24;
		struct sc_outfile of;

		if (sc_out_open(out, &of, "perfetto-trace-%d.pftrace", (int)p->pid)) {
			rc = -1;
			continue;
		}
		pf.f = of.f;
		pf.next_uuid = &uuids;
		pf.label = process_label(p, false);
		clock_snapshot(&pf, p->images.v[0]);
		write_sequence(&pf, p);
		free((char *)pf.label);
		if (sc_out_close(out, &of))
			rc = -1;
	}
	return rc;
}

/*
 * Every process in one file (syscope merge): a sequence each, named with its rank. The
 * timestamps of each host are moved onto the first process's clock through the wall-clock
 * time both recorded at their start; a pid seen before (another host) is written moved past
 * Linux's pid range, so that trace_processor keeps the two processes apart.
 */
static int write_merged(struct sc_output *out, const struct sc_idle_report *idle)
{
	struct sc_model *m = out->model;
	const struct sc_image *first = m->processes.v[0]->images.v[0];
	bool hosts = false;
	struct sc_outfile of;
	struct pf pf0 = { .out = out, .set = out->profiles, .seq = 1 };
	uint64_t uuids = 0;

	for (size_t i = 1; i < m->processes.n; i++)
		hosts |= m->processes.v[i]->hostname != m->processes.v[0]->hostname;
	if (sc_out_open(out, &of, "%s", out->merged_trace))
		return -1;
	pf0.f = of.f;
	clock_snapshot(&pf0, first);
	flush(&pf0);
	pb_free(&pf0.pkt);
	pb_free(&pf0.file);
	for (size_t i = 0; i < m->processes.n; i++) {
		struct sc_process *p = m->processes.v[i];
		const struct sc_image *img = p->images.v[0];
		struct pf pf = {
			.out = out, .set = out->profiles, .f = of.f, .pid = p->pid, .idle = idle
		};
		unsigned same_pid = 0;

		for (size_t j = 0; j < i; j++)
			same_pid += m->processes.v[j]->pid == p->pid;
		pf.pid = p->pid + (int32_t)(same_pid << 22);
		pf.seq = (uint32_t)i + 1;
		pf.next_uuid = &uuids;
		/* Processes of other hosts onto the first's clock by the wall clock, unless a
		 * merge put both on one clock already (more closely, with MPI's offsets). */
		if (p->hostname != first->hostname && img->start_realtime_ns &&
		    first->start_realtime_ns && !(img->on_merged_clock && first->on_merged_clock))
			pf.shift = ((int64_t)img->start_realtime_ns - (int64_t)img->start_ns) -
				   ((int64_t)first->start_realtime_ns - (int64_t)first->start_ns);
		pf.label = process_label(p, hosts);
		pf.mpi_flows = true;
		write_sequence(&pf, p);
		free((char *)pf.label);
	}
	return sc_out_close(out, &of);
}

static int write_pftrace(struct sc_output *out)
{
	const struct sc_idle_report *idle;

	if (!out->model->processes.n)
		return 0;
	idle = sc_output_idle(out);
	return out->merged_trace ? write_merged(out, idle) : write_per_process(out, idle);
}

const struct sc_sink sc_sink_pftrace = {
	.token = "pftrace",
	.description = "Perfetto timeline for ui.perfetto.dev (perfetto-trace-<pid>.pftrace)",
	.write = write_pftrace,
	.replays = true,
};
