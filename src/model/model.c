/* SPDX-License-Identifier: MIT */
/*
 * Building the model in one pass over each raw file: the process, threads, modules, notes
 * and GPU metadata are kept; samples are folded into the stack table as they stream by
 * (their weights need only their thread's earlier records).
 */
#define PR_FMT "model: "
#include "model.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "gpu_python.h"
#include "nccl_links.h"
#include "perf_map.h"
#include "spill_sort.h"
#include "spill_table.h"
#include "../common/strutil.h"

#define FRAME_BLOCK (1u << 20) /* frames per arena block */

static const char *const kind_metrics[SC_KINDS] = {
	[SC_PROFILE_REGIONS] = "wall_clock",	      [SC_SAMPLE_CPUTIME] = "sampling_cpu_clock",
	[SC_SAMPLE_REALTIME] = "sampling_wall_clock", [SC_SAMPLE_CRASH] = "crash",
	[SC_SAMPLE_OVERFLOW] = "sampling_overflow",
};

const char *sc_kind_metric(unsigned kind)
{
	return kind < SC_KINDS && kind_metrics[kind] ? kind_metrics[kind] : "samples";
}

double sc_period_hz(uint64_t period_ns)
{
	return period_ns ? round(1e12 / (double)period_ns) / 1000.0 : 0.0;
}

double sc_thread_delivered_hz(const struct sc_thread *t, unsigned kind)
{
	return t->seconds[kind] > 0 ? (double)t->samples[kind] / t->seconds[kind] : 0.0;
}

const char *sc_end_reason_text(uint32_t reason)
{
	switch (reason) {
	case SC_END_EXIT:
		return "exit";
	case SC_END__EXIT:
		return "_exit";
	case SC_END_SIGNAL:
		return "signal";
	case SC_END_EXEC:
		return "exec";
	case SC_END_DETACH:
		return "detach";
	default:
		return "unknown";
	}
}

void sc_stats_add(struct sc_stats *s, double w)
{
	if (!s->count || w < s->min)
		s->min = w;
	if (!s->count || w > s->max)
		s->max = w;
	s->count++;
	s->sum += w;
	s->sumsq += w * w;
}

void sc_stats_merge(struct sc_stats *dst, const struct sc_stats *src)
{
	if (!src->count)
		return;
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (!dst->count || src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum += src->sum;
	dst->sumsq += src->sumsq;
}

double sc_stats_mean(const struct sc_stats *s)
{
	return s->count ? s->sum / (double)s->count : 0;
}

double sc_stats_var(const struct sc_stats *s)
{
	double n = (double)s->count, v;

	if (s->count < 2)
		return 0;
	v = (s->sumsq - s->sum * s->sum / n) / (n - 1);
	return v > 0 ? v : 0;
}

struct sc_thread *sc_process_thread(struct sc_process *p, int32_t tid)
{
	bool inserted;
	uint64_t *slot =
		sc_hashmap_upsert(&p->thread_index, (uint64_t)(uint32_t)tid + 1, 0, &inserted);
	struct sc_thread *t;

	if (!inserted)
		return &p->threads.v[*slot - 1];
	t = VEC_PUSH(&p->threads);
	t->tid = tid;
	t->index = UINT32_MAX;
	*slot = p->threads.n;
	return t;
}

const struct sc_gpu_agent *sc_image_agent(const struct sc_image *img, uint32_t id)
{
	for (size_t i = 0; i < img->agents.n; i++)
		if (img->agents.v[i].id == id)
			return &img->agents.v[i];
	return NULL;
}

const struct sc_gpu_stream *sc_image_stream(const struct sc_image *img, uint32_t agent,
					    uint64_t stream)
{
	for (size_t i = img->streams.n; i-- > 0;)
		if (img->streams.v[i].stream == stream && img->streams.v[i].agent == agent)
			return &img->streams.v[i];
	return NULL;
}

/* One note of a correlation id, and the slot its notes make (by arrival, as a map's would). */
struct corr_note {
	uint64_t corr, seq;
	int32_t tid;
	uint32_t who;
};

struct corr_slot {
	uint64_t corr, slot;
};

static int note_by_corr(const void *a, const void *b)
{
	const struct corr_note *x = a, *y = b;

	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* `tid`: the host call's thread (who = SC_CORR_HOST). */
void sc_image_note_corr(struct sc_image *img, uint64_t corr, unsigned who, int32_t tid)
{
	struct corr_note *n;

	if (!corr)
		return;
	if (!img->corr_notes) {
		img->corr_notes = sc_xcalloc(1, sizeof(*img->corr_notes));
		sc_spill_init(img->corr_notes, sizeof(struct corr_note), note_by_corr, 8u << 20);
	}
	n = sc_spill_push(img->corr_notes);
	*n = (struct corr_note){ corr, img->corr_notes->count, tid, who };
}

static void apply_note(uint64_t *slot, const struct corr_note *n)
{
	*slot |= n->who;
	if (n->who == SC_CORR_DEVICE && ((*slot >> SC_CORR_OP_SHIFT) & 0x3fffffff) != 0x3fffffff)
		*slot += 1ull << SC_CORR_OP_SHIFT;
	if (n->who == SC_CORR_HOST)
		*slot = (*slot & ((1ull << SC_CORR_TID_SHIFT) - 1)) | (uint64_t)(uint32_t)n->tid
									      << SC_CORR_TID_SHIFT;
}

void sc_image_corr_finish(struct sc_image *img)
{
	struct corr_slot *last = NULL;

	if (!img->corr_notes)
		return;
	if (!img->corr) {
		img->corr = sc_xcalloc(1, sizeof(*img->corr));
		sc_spill_table_init(img->corr, sizeof(struct corr_slot), 0);
	}
	sc_spill_finish(img->corr_notes);
	for (const struct corr_note *n; (n = sc_spill_next(img->corr_notes));) {
		if (!last || last->corr != n->corr) {
			last = sc_spill_table_push(img->corr);
			last->corr = n->corr;
		}
		apply_note(&last->slot, n);
	}
	sc_spill_table_seal(img->corr);
	sc_spill_free(img->corr_notes);
	free(img->corr_notes);
	img->corr_notes = NULL;
}

void sc_image_corr_free(struct sc_image *img)
{
	if (img->corr_notes)
		sc_spill_free(img->corr_notes);
	if (img->corr)
		sc_spill_table_free(img->corr);
	free(img->corr_notes);
	free(img->corr);
	img->corr_notes = NULL;
	img->corr = NULL;
}

static bool slot_before(const void *item, const void *key)
{
	return ((const struct corr_slot *)item)->corr < *(const uint64_t *)key;
}

/* The slot of `corr`, 0 when none was noted. */
static uint64_t corr_slot(const struct sc_image *img, uint64_t corr)
{
	uint64_t i;
	const struct corr_slot *e;

	if (!corr || !img->corr || !img->corr->count)
		return 0;
	i = sc_spill_table_lower_bound(img->corr, &corr, slot_before);
	if (i == img->corr->count)
		return 0;
	e = sc_spill_table_get(img->corr, i);
	return e->corr == corr ? e->slot : 0;
}

bool sc_image_corr_linked(const struct sc_image *img, uint64_t corr)
{
	uint64_t slot = corr_slot(img, corr);

	return (slot & (SC_CORR_HOST | SC_CORR_DEVICE)) == (SC_CORR_HOST | SC_CORR_DEVICE);
}

uint64_t sc_image_corr_ops(const struct sc_image *img, uint64_t corr)
{
	return (corr_slot(img, corr) >> SC_CORR_OP_SHIFT) & 0x3fffffff;
}

int32_t sc_image_corr_tid(const struct sc_image *img, uint64_t corr)
{
	return (int32_t)(uint32_t)(corr_slot(img, corr) >> SC_CORR_TID_SHIFT);
}

/* MPI_Init's record names the process's rank and the job's size. */
static void mpi_job(struct sc_image *img, const struct sc_rec_mpi_call *c)
{
	if ((c->fn == SC_MPI_INIT || c->fn == SC_MPI_INIT_THREAD) && c->peer >= 0) {
		img->mpi_rank = c->peer + 1;
		img->mpi_size = c->comm_size;
	}
}

/* The first of the launcher's variables `vars` ("NAME=") in the process's environment,
 * or -1. */
static int job_env_int(const struct sc_image *img, const char *const *vars, size_t nvars)
{
	for (size_t v = 0; v < nvars; v++)
		for (size_t i = 0; i < img->env.n; i++)
			if (!strncmp(img->env.v[i], vars[v], strlen(vars[v])))
				return atoi(img->env.v[i] + strlen(vars[v]));
	return -1;
}

/* MPI_Init's, else the launcher's (a process attached after its MPI_Init), else 0. */
int sc_image_mpi_size(const struct sc_image *img)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE=", "PMI_SIZE=",
					    "MV2_COMM_WORLD_SIZE=", "SLURM_NTASKS=" };
	int n;

	if (img->mpi_size)
		return img->mpi_size;
	n = img->mpi_rank ? -1 : job_env_int(img, vars, sizeof(vars) / sizeof(vars[0]));
	return n > 0 ? n : 0;
}

int sc_image_rank(const struct sc_image *img)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK=", "PMI_RANK=", "PMIX_RANK=",
					    "MV2_COMM_WORLD_RANK=", "SLURM_PROCID=" };

	if (img->mpi_rank)
		return img->mpi_rank - 1;
	return job_env_int(img, vars, sizeof(vars) / sizeof(vars[0]));
}

uint64_t sc_stream_key(uint32_t agent, uint64_t stream)
{
	return sc_hash_u64(stream ^ ((uint64_t)agent << 48)) | 1;
}

const char *sc_model_demangle(struct sc_model *m, const char *name)
{
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&m->demangled, (uint64_t)(uintptr_t)name, 0, &inserted);

	if (inserted)
		*slot = (uint64_t)(uintptr_t)sc_demangle(&m->strings, name);
	return (const char *)(uintptr_t)*slot;
}

const char *sc_image_name(const struct sc_image *img, uint32_t id)
{
	const uint64_t *slot = id ? sc_hashmap_get(&img->names, id) : NULL;

	return slot ? (const char *)(uintptr_t)*slot : NULL;
}

/* The agent `id` of an image, added with a made-up name if no record described it. */
static struct sc_gpu_agent *agent_for(struct sc_model *m, struct sc_image *img, uint32_t id)
{
	struct sc_gpu_agent *a = (struct sc_gpu_agent *)sc_image_agent(img, id);
	char name[32];

	if (a)
		return a;
	a = VEC_PUSH(&img->agents);
	a->id = id;
	a->type = SC_AGENT_GPU;
	snprintf(name, sizeof(name), "GPU %u", id);
	a->name = sc_strtab_intern(&m->strings, name);
	a->vendor = sc_strtab_intern(&m->strings, "");
	return a;
}

static struct sc_gpu_stream *stream_for(struct sc_model *m, struct sc_image *img, uint32_t agent,
					uint64_t stream)
{
	struct sc_gpu_stream *g = (struct sc_gpu_stream *)sc_image_stream(img, agent, stream);
	char name[40];

	if (g)
		return g;
	agent_for(m, img, agent);
	g = VEC_PUSH(&img->streams);
	g->stream = stream;
	g->agent = agent;
	snprintf(name, sizeof(name), "Stream %llu", (unsigned long long)stream);
	g->name = sc_strtab_intern(&m->strings, name);
	return g;
}

/* Module globals (__device__ variables) the driver allocated, apart from the program's
 * allocations in the figures (issue 17). */
static void count_static_allocation(struct sc_image *img, const struct sc_rec_gpu_op *r)
{
	if (r->kind == SC_GPU_ALLOC && r->copy_kind == SC_MEM_STATIC) {
		img->gpu_static_allocs++;
		img->gpu_static_bytes += r->bytes;
	}
}
static void gpu_record(struct sc_model *m, struct sc_image *img, const struct sc_record *rec)
{
	switch (rec->type) {
	case SC_REC_STRING: {
		const struct sc_rec_string *r = (const void *)rec;
		const char *text = sc_strtab_intern(&m->strings, (const char *)(r + 1));

		*sc_hashmap_upsert(&img->names, r->id, 0, NULL) = (uint64_t)(uintptr_t)text;
		break;
	}
	case SC_REC_GPU_AGENT: {
		const struct sc_rec_gpu_agent *r = (const void *)rec;
		const char *t = (const char *)(r + 1);
		struct sc_gpu_agent *a = agent_for(m, img, r->id);

		a->type = r->type;
		a->name = sc_strtab_intern(&m->strings, t);
		a->vendor = sc_strtab_intern(&m->strings, t + r->name_len);
		memcpy(a->uuid, r->uuid, sizeof(a->uuid));
		a->memory_bytes = r->memory_bytes;
		a->multiprocessors = r->multiprocessors;
		a->compute_major = r->compute_major;
		a->compute_minor = r->compute_minor;
		a->pci_domain = r->pci_domain;
		a->pci_bus = r->pci_bus;
		a->pci_device = r->pci_device;
		break;
	}
	case SC_REC_GPU_STREAM: {
		const struct sc_rec_gpu_stream *r = (const void *)rec;

		stream_for(m, img, r->agent, r->stream)->name =
			sc_strtab_intern(&m->strings, (const char *)(r + 1));
		break;
	}
	case SC_REC_GPU_OP: {
		const struct sc_rec_gpu_op *r = (const void *)rec;

		if (r->kind >= SC_GPU_OP_KINDS)
			break; /* a kind of a newer syscope */
		img->gpu_ops[r->kind]++;
		sc_image_note_corr(img, r->corr_id, SC_CORR_DEVICE, 0);
		sc_nccl_links_op(img, r);
		if (r->kind == SC_GPU_ALLOC || r->kind == SC_GPU_FREE) {
			count_static_allocation(img, r);
			agent_for(m, img, r->agent);
			break;
		}
		stream_for(m, img, r->agent, r->stream);
		img->gpu_busy_ns += r->end - r->start;
		if (r->kind == SC_GPU_COPY) {
			if (r->src_agent != SC_AGENT_HOST)
				agent_for(m, img, r->src_agent);
			if (r->dst_agent != SC_AGENT_HOST)
				agent_for(m, img, r->dst_agent);
		}
		break;
	}
	default:
		break;
	}
}

/* GPU_METRICS: the names once, then a kernel's values under its correlation id. */
static void gpu_metrics_record(struct sc_model *m, struct sc_image *img,
			       const struct sc_record *rec)
{
	const struct sc_rec_gpu_metrics *r = (const void *)rec;
	bool inserted;
	uint64_t *slot;

	if (rec->flags & SC_GPU_METRICS_NAMES) {
		const char *t = (const char *)(r + 1);

		for (img->gpu_metric_n = 0; img->gpu_metric_n < r->count; img->gpu_metric_n++) {
			img->gpu_metric_names[img->gpu_metric_n] = sc_strtab_intern(&m->strings, t);
			t += strlen(t) + 1;
		}
		return;
	}
	if (!r->corr_id)
		return;
	slot = sc_hashmap_upsert(&img->gpu_metric_index, r->corr_id, 0, &inserted);
	if (!inserted)
		return; /* the first values of a correlation id are its kernel's */
	*slot = img->gpu_metric_values.n + 1;
	for (uint32_t i = 0; i < SC_GPU_METRICS_MAX; i++) {
		double v = NAN;

		if (i < r->count)
			memcpy(&v, (const char *)(r + 1) + i * sizeof(double), sizeof(v));
		*VEC_PUSH(&img->gpu_metric_values) = v;
	}
}

const double *sc_image_gpu_metrics(const struct sc_image *img, uint64_t corr_id)
{
	const uint64_t *slot = img->gpu_metric_n && corr_id
				       ? sc_hashmap_get(&img->gpu_metric_index, corr_id)
				       : NULL;

	return slot ? &img->gpu_metric_values.v[*slot - 1] : NULL;
}

/* Processes are told apart by host and pid (a merged database holds several hosts). */
static struct sc_process *process_for(struct sc_model *m, int32_t pid, const char *host)
{
	for (size_t i = 0; i < m->processes.n; i++)
		if (m->processes.v[i]->pid == pid && m->processes.v[i]->hostname == host)
			return m->processes.v[i];

	struct sc_process *p = sc_xcalloc(1, sizeof(*p));

	p->pid = pid;
	p->hostname = host;
	sc_hashmap_init(&p->thread_index);
	*VEC_PUSH(&m->processes) = p;
	return p;
}

static void split_strings(struct sc_model *m, const char *p, size_t len, void *vec_)
{
	VEC(const char *) *vec = vec_;
	const char *end = p + len;

	while (p < end && *p) {
		size_t l = strnlen(p, (size_t)(end - p));

		if (p + l >= end)
			break; /* unterminated tail */
		*VEC_PUSH(vec) = sc_strtab_intern(&m->strings, p);
		p += l + 1;
	}
}

static bool is_system_path(const char *path)
{
	const char *base = sc_base_name(path);

	return !strncmp(base, "libc.so", 7) || !strncmp(base, "libc-", 5) ||
	       !strncmp(base, "ld-linux", 8) || !strncmp(base, "libpthread", 10) ||
	       !strncmp(base, "ld-musl", 7) || !strcmp(path, "[vdso]");
}

/* libsyscope.so and the libraries beside it that it or its flags load (libsyscope-mpi.so,
 * -pthread.so, -cuda.so, -nccl.so): their frames are syscope's own. */
static bool is_self_path(const char *path)
{
	const char *base = sc_base_name(path);
	size_t n = strlen(base);

	return !strncmp(base, "libsyscope", 10) && n >= 13 && !strcmp(base + n - 3, ".so") &&
	       (n == 13 || base[10] == '-');
}

static void add_module(struct sc_model *m, struct sc_image *img, const struct sc_rec_module *r)
{
	struct sc_module *mod = VEC_PUSH(&img->modules);

	mod->path = sc_strtab_intern(&m->strings, (const char *)(r + 1));
	mod->base = r->base;
	mod->load_ts = r->ts;
	mod->unload_ts = UINT64_MAX;
	mod->flags = r->hdr.flags;
	mod->build_id_len = r->build_id_len;
	memcpy(mod->build_id, r->build_id, r->build_id_len);
	mod->lo = UINT64_MAX;
	for (uint32_t i = 0; i < r->nsegments; i++) {
		uint64_t lo = r->base + r->seg[i].vaddr, hi = lo + r->seg[i].memsz;

		if (lo < mod->lo)
			mod->lo = lo;
		if (hi > mod->hi)
			mod->hi = hi;
	}
	if (!r->nsegments)
		mod->lo = mod->hi = 0;
	mod->is_self = is_self_path(mod->path);
	mod->is_system = is_system_path(mod->path);
}

static void unload_module(struct sc_image *img, const struct sc_rec_module *r)
{
	for (size_t i = img->modules.n; i-- > 0;) {
		struct sc_module *mod = &img->modules.v[i];

		if (mod->base == r->base && mod->unload_ts == UINT64_MAX) {
			mod->unload_ts = r->ts;
			return;
		}
	}
}

struct pass {
	struct sc_model *m;
	struct sc_image *img;
	struct sc_process *proc;
	struct sc_thread *last_thread; /* records come in runs of one thread */
	int32_t last_tid;
};

static struct sc_thread *thread_of(struct pass *ps, int32_t tid)
{
	if (!ps->last_thread || ps->last_tid != tid) {
		ps->last_thread = sc_process_thread(ps->proc, tid);
		ps->last_tid = tid;
	}
	return ps->last_thread;
}

static void note_ts(struct pass *ps, uint64_t ts)
{
	if (ts > ps->img->last_ts)
		ps->img->last_ts = ts;
}

static void counter_value(struct sc_image *img, const struct sc_rec_counter *r);

/* The image's counter track `id`, added (empty) if it has none; the first of an id stays. */
static struct sc_counter_track *counter_track_add(struct sc_image *img, uint32_t id)
{
	bool inserted;
	uint64_t *slot = sc_hashmap_upsert(&img->counter_index, (uint64_t)id + 1, 0, &inserted);

	if (inserted) {
		VEC_PUSH(&img->counter_tracks)->id = id;
		*slot = img->counter_tracks.n;
	}
	return &img->counter_tracks.v[*slot - 1];
}

const struct sc_counter_track *sc_image_counter_track(const struct sc_image *img, uint32_t id)
{
	uint64_t *slot = sc_hashmap_get(&img->counter_index, (uint64_t)id + 1);

	return slot ? &img->counter_tracks.v[*slot - 1] : NULL;
}

/* The track of CPU counter `event` of thread `tid`, created on its first value; named when
 * the image is complete (its event names may come later than another thread's reads). */
static void pmc_track(struct sc_image *img, int32_t tid, unsigned event)
{
	counter_track_add(img, SC_PMC_TRACK_ID(tid, event));
}

static void name_pmc_tracks(struct sc_model *m, struct sc_image *img)
{
	for (size_t i = 0; i < img->counter_tracks.n; i++) {
		struct sc_counter_track *c = &img->counter_tracks.v[i];
		unsigned event = c->id & 7;
		const char *name = event < img->pmc_n ? img->pmc_names[event] : NULL;
		char text[160];

		if (!(c->id & 0x80000000u))
			continue;
		if (name)
			snprintf(text, sizeof(text), "%s [%u]", name, (c->id >> 3) & 0xfffffffu);
		else
			snprintf(text, sizeof(text), "CPU event %u [%u]", event + 1,
				 (c->id >> 3) & 0xfffffffu);
		c->name = sc_strtab_intern(&m->strings, text);
		c->unit = sc_strtab_intern(&m->strings, name && (!strcmp(name, "task-clock") ||
								 !strcmp(name, "cpu-clock"))
								? "ns"
								: "events");
	}
}

/* What a thread's counters counted since its previous sample: to that sample's stack, and to
 * the thread's counter tracks. */
static void pmc_read(struct pass *ps, int32_t tid, const struct sc_rec_pmc_read *r)
{
	struct sc_model *m = ps->m;
	struct sc_thread *t = thread_of(ps, tid);

	/* Reads at region boundaries come between samples: what they counted belongs to the
	 * next sample, with what its own read counts. */
	for (unsigned i = 0; i < SC_PMC_MAX; i++)
		if (r->valid >> i & 1)
			t->pmc_pending[i] += (double)r->values[i];
	if (t->pmc_stack) {
		size_t need = (size_t)m->stacks.n * SC_PMC_MAX;

		VEC_RESERVE(&m->stack_pmc, need);
		while (m->stack_pmc.n < need)
			*VEC_PUSH(&m->stack_pmc) = 0;
		for (unsigned i = 0; i < SC_PMC_MAX; i++) {
			m->stack_pmc.v[(size_t)(t->pmc_stack - 1) * SC_PMC_MAX + i] +=
				t->pmc_pending[i];
			t->pmc_pending[i] = 0;
		}
		t->pmc_stack = 0;
	}
	for (unsigned i = 0; i < SC_PMC_MAX; i++) {
		struct sc_rec_counter c = { .ts = r->ts, .track = SC_PMC_TRACK_ID(tid, i) };

		if (!(r->valid >> i & 1))
			continue;
		pmc_track(ps->img, tid, i);
		c.value = (double)r->values[i];
		counter_value(ps->img, &c);
	}
}

static void counter_value(struct sc_image *img, const struct sc_rec_counter *r)
{
	struct sc_counter_track *c =
		(struct sc_counter_track *)sc_image_counter_track(img, r->track);

	if (!c)
		return;
	if (!c->values.count)
		c->first_ts = r->ts;
	else if (r->ts >= c->last_ts)
		c->area += c->last * (double)(r->ts - c->last_ts);
	else
		c->unordered = true; /* values of several threads on one track */
	sc_stats_add(&c->values, r->value);
	c->last = r->value;
	if (r->ts >= c->last_ts)
		c->last_ts = r->ts;
}

double sc_counter_mean(const struct sc_counter_track *c)
{
	if (!c->unordered && c->last_ts > c->first_ts)
		return c->area / (double)(c->last_ts - c->first_ts);
	return sc_stats_mean(&c->values);
}

static int metadata_record(void *ctx, int32_t tid, const struct sc_record *rec, uint64_t off)
{
	struct pass *ps = ctx;
	struct sc_model *m = ps->m;
	struct sc_image *img = ps->img;
	const char *tail;
	struct sc_thread *t;

	(void)off;
	note_ts(ps, sc_record_ts(rec));
	switch (rec->type) {
	case SC_REC_PROCESS: {
		const struct sc_rec_process *p = (const void *)rec;

		tail = (const char *)(p + 1);
		img->ppid = p->ppid;
		img->uid = p->uid;
		if (p->exe_len && tail[0])
			img->exe = sc_strtab_intern(&m->strings, tail);
		split_strings(m, tail + p->exe_len, p->cmdline_len, &img->argv);
		if (p->cwd_len)
			img->cwd =
				sc_strtab_intern(&m->strings, tail + p->exe_len + p->cmdline_len);
		break;
	}
	case SC_REC_ENVIRON:
		split_strings(m, (const char *)(rec + 1), rec->size - sizeof(*rec), &img->env);
		break;
	case SC_REC_SETTINGS:
		split_strings(m, (const char *)(rec + 1), rec->size - sizeof(*rec), &img->settings);
		break;
	case SC_REC_THREAD_BEGIN:
	case SC_REC_THREAD_END: {
		const struct sc_rec_thread *r = (const void *)rec;

		t = thread_of(ps, r->tid);
		if (rec->type == SC_REC_THREAD_BEGIN) {
			/* After an exec the main thread begins again: keep its first start. */
			if (!t->begin_ts) {
				t->begin_ts = r->ts;
				t->begin_cpu = r->cpu_ns;
			} else {
				t->exec_begin_ts = r->ts;
				t->exec_begin_cpu = r->cpu_ns;
				t->exec_fresh = (1u << SC_KINDS) - 1;
			}
			if (t->index == UINT32_MAX)
				t->index = r->index;
			t->creator = r->creator_tid;
		} else {
			t->end_ts = r->ts;
			t->end_cpu = r->cpu_ns;
		}
		break;
	}
	case SC_REC_THREAD_NAME: {
		const struct sc_rec_thread_name *r = (const void *)rec;

		t = thread_of(ps, tid);
		if (t->name_given && !(rec->flags & SC_THREAD_NAME_GIVEN))
			break;
		memcpy(t->name, r->name, sizeof(r->name));
		t->name[16] = '\0';
		t->name_given = rec->flags & SC_THREAD_NAME_GIVEN;
		break;
	}
	case SC_REC_MODULE_LOAD:
		add_module(m, img, (const void *)rec);
		break;
	case SC_REC_MODULE_UNLOAD:
		unload_module(img, (const void *)rec);
		break;
	case SC_REC_FORK:
		*VEC_PUSH(&img->children) = ((const struct sc_rec_fork *)rec)->child_pid;
		break;
	case SC_REC_EXEC:
		img->exec_path = sc_strtab_intern(
			&m->strings, (const char *)((const struct sc_rec_exec *)rec + 1));
		break;
	case SC_REC_NOTE: {
		const struct sc_rec_note *r = (const void *)rec;
		struct sc_note *n = VEC_PUSH(&m->notes);

		n->pid = img->pid;
		n->ts = r->ts;
		n->level = r->level;
		n->text = sc_strtab_intern(&m->strings, (const char *)(r + 1));
		break;
	}
	case SC_REC_COUNTER_TRACK: {
		const struct sc_rec_counter_track *r = (const void *)rec;
		struct sc_counter_track *c = counter_track_add(img, r->id);

		tail = (const char *)(r + 1);
		if (c->name)
			break; /* the id's first definition stays */
		c->name = sc_strtab_intern(&m->strings, tail);
		c->unit = sc_strtab_intern(&m->strings, tail + r->name_len);
		break;
	}
	case SC_REC_REGION_BEGIN:
		img->regions++;
		sc_image_note_corr(img, ((const struct sc_rec_region *)rec)->corr_id, SC_CORR_HOST,
				   tid);
		sc_nccl_links_region(img, tid, (const void *)rec, 0,
				     (const char *)((const struct sc_rec_region *)rec + 1));
		break;
	case SC_REC_REGION_SPAN: {
		const struct sc_rec_region_span *sp = (const void *)rec;

		img->regions++;
		sc_image_note_corr(img, sp->r.corr_id, SC_CORR_HOST, sp->tid);
		sc_nccl_links_region(img, sp->tid, &sp->r, sp->end, (const char *)(sp + 1));
		thread_of(ps, sp->tid); /* its thread gets a track even if it recorded nothing */
		break;
	}
	case SC_REC_MARK:
		img->marks++;
		break;
	case SC_REC_FUNC_ENTER:
	case SC_REC_FUNC_CALL:
		img->regions++;
		break;
	case SC_REC_MPI_SHORT:
	case SC_REC_CLOCK_SYNC:
	case SC_REC_OMP_BEGIN:
		img->regions++;
		break;
	case SC_REC_OMP_REGION: /* a parallel's may hold its thread's implicit task too */
		img->regions +=
			1 + (rec->size >= sizeof(struct sc_rec_omp_region) &&
			     SC_OMP_TEAM_OF(rec->flags,
					    ((const struct sc_rec_omp_region *)rec)->first));
		break;
	case SC_REC_FUNC_ID: {
		const struct sc_rec_func_id *f = (const void *)rec;

		*sc_hashmap_upsert(&img->func_ids, (uint64_t)f->id + 1, 0, NULL) = f->addr;
		break;
	}
	case SC_REC_MPI_CALL:
		img->regions++;
		mpi_job(img, (const struct sc_rec_mpi_call *)rec);
		break;
	case SC_REC_FUNC_COVERAGE: {
		const struct sc_rec_func_coverage *c = (const void *)rec;

		*VEC_PUSH(&img->coverage) =
			(struct sc_coverage){ .addr = c->addr, .calls = c->calls };
		break;
	}
	case SC_REC_COUNTER:
		img->counter_values++;
		counter_value(img, (const struct sc_rec_counter *)rec);
		break;
	case SC_REC_PMC_EVENTS: {
		const struct sc_rec_pmc_events *r = (const void *)rec;

		tail = (const char *)(r + 1);
		for (img->pmc_n = 0; img->pmc_n < r->count; img->pmc_n++) {
			img->pmc_names[img->pmc_n] = sc_strtab_intern(&m->strings, tail);
			tail += strlen(tail) + 1;
		}
		break;
	}
	case SC_REC_PMC_READ:
		pmc_read(ps, tid, (const struct sc_rec_pmc_read *)rec);
		break;
	case SC_REC_GPU_METRICS:
		gpu_metrics_record(m, img, rec);
		break;
	case SC_REC_PY_RUNTIME:
	case SC_REC_PY_CODE:
		sc_py_record(m, img, rec);
		break;
	case SC_REC_PY_CALLSITE:
		sc_py_callsite_record(img, tid, rec);
		break;
	case SC_REC_STRING:
	case SC_REC_GPU_AGENT:
	case SC_REC_GPU_STREAM:
	case SC_REC_GPU_OP:
		/* The issuing thread gets a track even if it recorded nothing itself. */
		if (rec->type == SC_REC_GPU_OP && ((const struct sc_rec_gpu_op *)rec)->tid)
			thread_of(ps, ((const struct sc_rec_gpu_op *)rec)->tid);
		gpu_record(m, img, rec);
		break;
	case SC_REC_SAMPLER: {
		const struct sc_rec_sampler *r = (const void *)rec;

		t = thread_of(ps, tid);
		if (r->kind >= SC_KINDS)
			break;
		if (rec->flags & SC_SAMPLER_THROTTLED) {
			t->throttled_period_ns[r->kind] = r->period_ns;
			break;
		}
		t->period_ns[r->kind] = r->period_ns;
		if (rec->flags & SC_SAMPLER_STARTS)
			t->sampling_start_ts[r->kind] = r->ts;
		t->mechanism[r->kind] = r->mechanism;
		t->sampler_error[r->kind] = r->error;
		break;
	}
	default:
		break;
	}
	return 0;
}

static uint64_t *frame_alloc(struct sc_model *m, uint32_t n)
{
	uint64_t *p;

	if (n > m->frame_left) {
		size_t sz = n > FRAME_BLOCK ? n : FRAME_BLOCK;

		m->frame_free = sc_xcalloc(sz, sizeof(uint64_t));
		m->frame_left = sz;
		*VEC_PUSH(&m->frame_blocks) = m->frame_free;
	}
	p = m->frame_free;
	m->frame_free += n;
	m->frame_left -= n;
	return p;
}

/* What tells a stack from another: its sample's kind, flags (with the Python walk's GIL
 * state and flags, SC_STACK_*), native frames and Python frames. */
struct stack_key {
	uint16_t kind, flags;
	const uint64_t *frames;
	uint32_t n;
	const struct sc_py_frame *py; /* 8 bytes each, stored as they are after the frames */
	uint32_t npy;
};

static void key_of(const struct sc_rec_sample *s, struct stack_key *k)
{
	const struct sc_py_frame *py;
	const struct sc_py_stack *ps = sc_py_sample_stack(s, &py);

	k->kind = s->kind;
	k->flags = s->hdr.flags & ~SC_SAMPLE_PYTHON;
	k->frames = s->frames;
	k->n = s->nframes;
	k->py = NULL;
	k->npy = 0;
	if (!ps)
		return;
	k->flags |= SC_SAMPLE_PYTHON | (uint16_t)((ps->gil & 3u) << SC_STACK_GIL_SHIFT);
	if (ps->flags & SC_PY_STACK_TRUNCATED)
		k->flags |= SC_STACK_PY_TRUNCATED;
	if (ps->flags & SC_PY_STACK_BAD_CODE)
		k->flags |= SC_STACK_PY_BAD_CODE;
	k->py = py;
	k->npy = ps->nframes;
}

static bool stack_is(const struct sc_stack *st, const struct sc_image *img, int32_t tid,
		     const struct stack_key *k)
{
	return st->img == img && st->tid == tid && st->kind == k->kind && st->flags == k->flags &&
	       st->nframes == k->n && st->py_nframes == k->npy &&
	       !memcmp(st->frames, k->frames, (size_t)k->n * 8) &&
	       (!k->npy || !memcmp(st->frames + k->n, k->py, (size_t)k->npy * 8));
}

static uint32_t stack_lookup(struct sc_model *m, struct sc_image *img, int32_t tid,
			     const struct stack_key *k, uint64_t ts)
{
	uint64_t h = sc_hash_bytes(k->frames, (size_t)k->n * 8,
				   (uint64_t)(uintptr_t)img ^ ((uint64_t)(uint32_t)tid << 20) ^
					   ((uint64_t)k->kind << 52) ^ ((uint64_t)k->flags << 56));
	bool inserted;
	uint64_t *slot;
	struct sc_stack *st;

	if (k->npy)
		h = sc_hash_bytes(k->py, (size_t)k->npy * 8, h);
	slot = sc_hashmap_upsert(&m->stack_index, h, 0, &inserted);
	if (!inserted) {
		for (uint32_t i = (uint32_t)(*slot - 1);; i = m->stacks.v[i].next_same_hash) {
			st = &m->stacks.v[i];
			if (stack_is(st, img, tid, k))
				return i;
			if (st->next_same_hash == UINT32_MAX)
				break;
		}
	}
	st = VEC_PUSH(&m->stacks);
	st->img = img;
	st->tid = tid;
	st->kind = k->kind;
	st->flags = k->flags;
	st->nframes = k->n;
	st->py_nframes = k->npy;
	st->frames = frame_alloc(m, k->n + k->npy);
	memcpy(st->frames, k->frames, (size_t)k->n * 8);
	if (k->npy)
		memcpy(st->frames + k->n, k->py, (size_t)k->npy * 8);
	st->first_ts = ts;
	st->hash = h;
	st->next_same_hash = inserted ? UINT32_MAX : (uint32_t)(*slot - 1);
	*slot = m->stacks.n;
	return (uint32_t)(m->stacks.n - 1);
}

uint32_t sc_model_stack_of(struct sc_model *m, struct sc_image *img, int32_t tid,
			   const struct sc_record *sample)
{
	const struct sc_rec_sample *s = (const void *)sample;
	const unsigned n = sizeof(m->recent_stacks) / sizeof(m->recent_stacks[0]);
	struct stack_key key;
	uint32_t found;

	key_of(s, &key);
	/* A thread sampled in a loop repeats a few stacks (a thread's samples come together):
	 * compare with the last ones found before hashing. */
	for (unsigned i = 0; i < n; i++) { /* the most recent first */
		uint32_t k = m->recent_stacks[(m->recent_next - 1 - i) % n];
		const struct sc_stack *st = k && k <= m->stacks.n ? &m->stacks.v[k - 1] : NULL;

		if (st && stack_is(st, img, tid, &key))
			return k - 1;
	}
	found = stack_lookup(m, img, tid, &key, s->ts);
	m->recent_stacks[m->recent_next++ % n] = found + 1;
	return found;
}

/*
 * A sample's weight is the time it stands for: the thread CPU time (CPU sampler) or wall
 * time (wall sampler) since the thread's previous sample of the same kind. The first sample
 * of a thread, or of its image after an exec, covers at most one period since the thread
 * (or the image) began, except a wall-clock one whose sampler said when it started: it
 * covers the time since then (a thread that blocks from its start takes its first sample
 * when the call returns).
 */
static double sample_weight(struct sc_thread *t, const struct sc_rec_sample *s)
{
	unsigned k = s->kind;
	uint64_t period = t->period_ns[k] ? t->period_ns[k] : 0, delta;
	bool exec_first = t->samples[k] && (t->exec_fresh >> k & 1);
	bool first = !t->samples[k] || exec_first;
	uint64_t begin_cpu = exec_first ? t->exec_begin_cpu : t->begin_cpu;
	uint64_t begin_ts = exec_first ? t->exec_begin_ts : t->begin_ts;

	if (k == SC_SAMPLE_OVERFLOW) /* each sample stands for `period` events */
		return (double)(period ? period : 1);
	if (k == SC_SAMPLE_CPUTIME) {
		if (!first)
			delta = s->cpu_ns > t->last_cpu[k] ? s->cpu_ns - t->last_cpu[k] : 0;
		else
			delta = s->cpu_ns > begin_cpu ? s->cpu_ns - begin_cpu : period;
	} else {
		if (!first)
			delta = s->ts > t->last_sample_ts[k] ? s->ts - t->last_sample_ts[k] : 0;
		else if (t->sampling_start_ts[k] && s->ts > t->sampling_start_ts[k] &&
			 (!exec_first || t->sampling_start_ts[k] >= begin_ts))
			return (double)(s->ts - t->sampling_start_ts[k]) * 1e-9;
		else
			delta = begin_ts && s->ts > begin_ts ? s->ts - begin_ts : period;
	}
	if (first && period && delta > period)
		delta = period;
	return (double)delta * 1e-9;
}

static int sample_record(void *ctx, int32_t tid, const struct sc_record *rec, uint64_t off)
{
	struct pass *ps = ctx;
	const struct sc_rec_sample *s = (const void *)rec;
	struct sc_thread *t;
	uint32_t idx;
	double w;

	(void)off;
	if (rec->type != SC_REC_SAMPLE || s->kind >= SC_KINDS || !s->nframes)
		return 0;
	t = thread_of(ps, tid);
	if (rec->flags & SC_SAMPLE_PYTHON) {
		const struct sc_py_frame *py;

		if (!sc_py_sample_stack(s, &py))
			sc_py_bad_stack(ps->img);
	}
	if (s->kind == SC_SAMPLE_CRASH) {
		struct stack_key key;

		key_of(s, &key);
		idx = stack_lookup(ps->m, ps->img, tid, &key, s->ts);
		ps->img->crash_stack = idx;
		sc_stats_add(&ps->m->stacks.v[idx].w, 0);
		return 0;
	}
	w = sample_weight(t, s);
	t->exec_fresh &= ~(1u << s->kind);
	if (!t->samples[s->kind])
		t->first_sample_ts[s->kind] = s->ts;
	t->samples[s->kind]++;
	t->seconds[s->kind] += w;
	t->last_sample_ts[s->kind] = s->ts;
	t->last_cpu[s->kind] = s->cpu_ns;
	ps->proc->samples[s->kind]++;
	ps->m->samples[s->kind]++;
	idx = sc_model_stack_of(ps->m, ps->img, tid, rec);
	sc_stats_add(&ps->m->stacks.v[idx].w, w);
	t->pmc_stack = idx + 1; /* its PMC_READ, if any, comes next */
	return 0;
}

/*
 * One pass: a thread's records come in the order it wrote them, and it writes its begin
 * and its sampler's period before its first sample, which is all a sample's weight needs.
 */
static int build_record(void *ctx, int32_t tid, const struct sc_record *rec, uint64_t off)
{
	if (rec->type != SC_REC_SAMPLE)
		return metadata_record(ctx, tid, rec, off);
	note_ts(ctx, sc_record_ts(rec));
	return sample_record(ctx, tid, rec, off);
}

static void diag_to_session(void *ctx, const char *msg)
{
	sc_session_problem(ctx, "%s", msg);
}

static int by_start(const void *a, const void *b)
{
	const struct sc_image *x = *(struct sc_image *const *)a, *y = *(struct sc_image *const *)b;

	return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static int proc_by_start(const void *a, const void *b)
{
	const struct sc_process *x = *(struct sc_process *const *)a;
	const struct sc_process *y = *(struct sc_process *const *)b;

	return by_start(&x->images.v[0], &y->images.v[0]);
}

void sc_model_init(struct sc_model *m, struct sc_session *s, bool inlines)
{
	memset(m, 0, sizeof(*m));
	m->session = s;
	sc_strtab_init(&m->strings);
	sc_symbolizer_init(&m->sym, &m->strings, inlines);
	sc_hashmap_init(&m->stack_index);
	sc_hashmap_init(&m->demangled);
	m->first_ts = UINT64_MAX;
}

struct sc_image *sc_model_add_image(struct sc_model *m, int32_t pid, const char *hostname)
{
	struct sc_image *img = sc_xcalloc(1, sizeof(*img));

	img->pid = pid;
	img->hostname = sc_strtab_intern(&m->strings, hostname ? hostname : "");
	img->crash_stack = -1;
	sc_hashmap_init(&img->names);
	sc_hashmap_init(&img->func_ids);
	sc_hashmap_init(&img->counter_index);
	sc_hashmap_init(&img->gpu_metric_index);
	img->proc = process_for(m, pid, img->hostname);
	*VEC_PUSH(&img->proc->images) = img;
	*VEC_PUSH(&m->images) = img;
	return img;
}

int sc_image_foreach(const struct sc_image *img, sc_raw_record_fn cb, void *ctx,
		     struct sc_raw_stats *stats, sc_raw_diag_fn diag, void *diag_ctx)
{
	struct sc_raw_stats ignored = { 0 };

	if (img->raw)
		return sc_raw_foreach(img->raw, cb, ctx, stats ? stats : &ignored, diag, diag_ctx);
	return img->feed.foreach(img->feed.src, img, cb, ctx);
}

void sc_model_finish(struct sc_model *m)
{
	/* A process's images in the order they ran (their files sort otherwise: 42.1.sraw
	 * before 42.sraw), since its threads go on across an exec: each image's samples are
	 * weighed from the previous sample, and the first start is the thread's. */
	for (size_t i = 0; i < m->processes.n; i++) {
		struct sc_process *p = m->processes.v[i];

		qsort(p->images.v, p->images.n, sizeof(*p->images.v), by_start);
		for (size_t k = 0; k < p->images.n; k++) {
			struct pass ps = { .m = m, .img = p->images.v[k], .proc = p };

			sc_image_foreach(ps.img, build_record, &ps, &m->stats, diag_to_session,
					 m->session);
			sc_image_corr_finish(ps.img);
			name_pmc_tracks(m, ps.img);
		}
	}
	for (size_t i = 0; i < m->processes.n; i++) {
		struct sc_process *p = m->processes.v[i];

		p->ppid = p->images.v[0]->ppid;
	}
	if (m->processes.n > 1)
		qsort(m->processes.v, m->processes.n, sizeof(*m->processes.v), proc_by_start);
	for (size_t i = 0; i < m->images.n; i++) {
		struct sc_image *img = m->images.v[i];
		uint64_t end = img->end_ns ? img->end_ns : img->last_ts;

		if (img->start_ns < m->first_ts)
			m->first_ts = img->start_ns;
		if (end > m->last_ts)
			m->last_ts = end;
	}
	if (m->first_ts == UINT64_MAX)
		m->first_ts = 0;
}

int sc_model_build(struct sc_model *m, struct sc_session *s, bool inlines)
{
	sc_model_init(m, s, inlines);
	for (size_t i = 0; i < s->files.n; i++) {
		struct sc_raw *raw = &s->files.v[i];
		struct sc_image *img = sc_model_add_image(m, raw->hdr.pid, raw->hdr.hostname);
		const struct sc_file_header *h = (const void *)raw->data;

		img->raw = raw;
		img->ppid = raw->hdr.ppid;
		img->start_ns = raw->hdr.start_ns;
		img->start_realtime_ns = raw->hdr.start_realtime_ns;
		/* Live counters: read from the file, the writer may have updated them last. */
		img->end_ns = h->end_ns;
		img->end_reason = h->end_reason;
		img->end_status = h->end_status;
		img->lost_records = h->lost_records;
		img->lost_bytes = h->lost_bytes;
		img->lost_samples = h->lost_samples;
	}
	sc_model_finish(m);
	/* A program killed where no handler runs (SIGKILL) recorded no end: its launcher knows. */
	for (size_t i = 0; s->launched_signal && i < m->processes.n; i++) {
		struct sc_process *p = m->processes.v[i];
		struct sc_image *last = p->images.v[p->images.n - 1];

		if (p->pid == s->launched_pid && last->end_reason == SC_END_RUNNING)
			last->killed_by = s->launched_signal;
	}
	return 0;
}

void sc_model_free(struct sc_model *m)
{
	for (size_t i = 0; i < m->images.n; i++) {
		struct sc_image *img = m->images.v[i];

		VEC_FREE(&img->argv);
		VEC_FREE(&img->env);
		VEC_FREE(&img->settings);
		VEC_FREE(&img->modules);
		VEC_FREE(&img->counter_tracks);
		sc_hashmap_free(&img->counter_index);
		VEC_FREE(&img->agents);
		VEC_FREE(&img->streams);
		sc_hashmap_free(&img->names);
		sc_hashmap_free(&img->func_ids);
		sc_image_corr_free(img);
		sc_hashmap_free(&img->gpu_metric_index);
		VEC_FREE(&img->gpu_metric_values);
		sc_nccl_links_free(img->nccl_links);
		sc_perf_map_free(img->perf_map);
		VEC_FREE(&img->children);
		VEC_FREE(&img->coverage);
		VEC_FREE(&img->wrapped_modules);
		sc_py_image_free(img->py);
		sc_py_callsites_free(img->py_callsites);
		free(img);
	}
	VEC_FREE(&m->images);
	for (size_t i = 0; i < m->processes.n; i++) {
		struct sc_process *p = m->processes.v[i];

		VEC_FREE(&p->images);
		VEC_FREE(&p->threads);
		sc_hashmap_free(&p->thread_index);
		free(p);
	}
	VEC_FREE(&m->processes);
	VEC_FREE(&m->stacks);
	VEC_FREE(&m->stack_pmc);
	sc_hashmap_free(&m->stack_index);
	sc_hashmap_free(&m->demangled);
	for (size_t i = 0; i < m->frame_blocks.n; i++)
		free(m->frame_blocks.v[i]);
	VEC_FREE(&m->frame_blocks);
	VEC_FREE(&m->notes);
	VEC_FREE(&m->symframes);
	if (m->importer_free)
		m->importer_free(m->importer);
	sc_symbolizer_free(&m->sym);
	sc_strtab_free(&m->strings);
}

struct sc_module *sc_image_module_at(struct sc_image *img, uint64_t addr, uint64_t ts)
{
	struct sc_module *any = NULL;

	for (size_t i = img->modules.n; i-- > 0;) {
		struct sc_module *mod = &img->modules.v[i];

		if (addr < mod->lo || addr >= mod->hi)
			continue;
		if (mod->load_ts <= ts && ts < mod->unload_ts)
			return mod;
		if (!any)
			any = mod; /* recorded a little after the sample: still the best guess */
	}
	return any;
}

uint64_t sc_image_func_addr(const struct sc_image *img, uint32_t id, uint16_t flags)
{
	const uint64_t *a;

	if (flags & SC_FUNC_PYTHON)
		return SC_PY_FUNC_ADDR(id);
	a = sc_hashmap_get(&img->func_ids, (uint64_t)id + 1);
	return a ? *a : 0;
}

const char *sc_model_function_at(struct sc_model *m, struct sc_image *img, struct sc_module *mod,
				 uint64_t addr, const struct sc_symframe **frame)
{
	const struct sc_symframe *chain;
	char buf[32];

	*frame = NULL;
	if (!mod && addr >> 63 && !(addr & 0xffffffffu)) { /* SC_PY_FUNC_ADDR: a Python call */
		const struct sc_py_code *code;
		const char *name = sc_py_func_name(m, img, addr, &code);

		if (code)
			return name;
	}
	if (mod &&
	    sc_symbolize(&m->sym, sc_model_module_elf(m, img, mod), addr - mod->base, &chain) &&
	    chain[0].func) {
		*frame = &chain[0];
		return chain[0].func;
	}
	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)addr);
	return sc_strtab_intern(&m->strings, buf);
}

struct sc_elf *sc_model_module_elf(struct sc_model *m, struct sc_image *img, struct sc_module *mod)
{
	char buf[4200];
	const char *open_path = mod->path;

	if (mod->elf)
		return mod->elf;
	if (mod->flags & SC_MODULE_VDSO) {
		char hex[2 * SC_MAX_BUILD_ID + 1] = "";

		for (uint32_t i = 0; i < mod->build_id_len; i++)
			snprintf(hex + 2 * i, 3, "%02x", mod->build_id[i]);
		snprintf(buf, sizeof(buf), "%s/" SC_SESSION_RAW_DIR "/vdso-%s.so", m->session->dir,
			 hex);
		open_path = access(buf, R_OK) ? NULL : buf;
	} else if (mod->path[0] != '/' && img->cwd) {
		snprintf(buf, sizeof(buf), "%s/%s", img->cwd, mod->path);
		open_path = buf;
	}
	mod->elf =
		sc_symbolizer_file(&m->sym, mod->path, open_path, mod->build_id, mod->build_id_len);
	return mod->elf;
}
