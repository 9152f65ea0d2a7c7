/* SPDX-License-Identifier: MIT */
/*
 * The Python lines of the end-of-run summary: which interpreter each process ran and what
 * syscope did with it, the share of samples each thread spent waiting for the GIL, and
 * samples whose Python frames did not line up with the native stack (python.h), and the GPU
 * time each Python line launched (gpu_python.h).
 */
#include "../common/strutil.h"
#include "../model/gpu_python.h"
#include "summary.h"

#include <stdlib.h>

static const char *runtime_state(unsigned state)
{
	switch (state) {
	case SC_PY_FRAMES:
		return "Python frames read in samples";
	case SC_PY_UNSUPPORTED:
		return "a version syscope has no layout for (3.10-3.13 are read): native frames "
		       "only";
	case SC_PY_FREE_THREADED:
		return "a free-threaded build, not supported: native frames only";
	case SC_PY_INVALID:
		return "its memory layout did not match this version's: native frames only";
	case SC_PY_OFF:
		return "left alone (--no-python)";
	default:
		return "in a state this syscope does not know";
	}
}

static bool image_sampled(const struct sc_image *img)
{
	for (unsigned k = 0; k < SC_KINDS; k++)
		if (sc_sample_kind_profiled(k) && img->proc->samples[k])
			return true;
	return false;
}

static void print_runtimes(FILE *f, struct sc_image *img)
{
	for (size_t i = 0; img->py && i < img->py->runtimes.n; i++) {
		const struct sc_py_runtime_info *r = &img->py->runtimes.v[i];
		struct sc_module *mod = sc_image_module_at(img, r->runtime, r->ts);
		bool traced = r->flags & SC_PY_TRACING;
		/* Frames are readable in a run that took no samples (syscope python traces
		 * calls and samples only with -S): say only what was done. */
		const char *what = r->state == SC_PY_FRAMES && !image_sampled(img) && traced
					   ? "calls traced"
					   : runtime_state(r->state);

		fprintf(f, "syscope: Python: CPython %u.%u.%u in process %d (%s): %s%s\n",
			r->version >> 24, (r->version >> 16) & 0xff, (r->version >> 8) & 0xff,
			(int)img->pid, mod ? sc_base_name(mod->path) : "?", what,
			traced && what == runtime_state(r->state) ? ", calls traced" : "");
	}
	if (img->py && img->py->bad_stacks)
		fprintf(f,
			"syscope: Python: %llu samples of process %d had a damaged Python part; "
			"they keep their native frames only\n",
			(unsigned long long)img->py->bad_stacks, (int)img->pid);
	if (img->py && img->py->bad_records)
		fprintf(f,
			"syscope: Python: %llu damaged code records in process %d were skipped\n",
			(unsigned long long)img->py->bad_records, (int)img->pid);
}

static const char *kind_text(unsigned kind)
{
	return kind == SC_SAMPLE_REALTIME ? "wall-clock" : "CPU-time";
}

/* Threads that waited for the GIL in some of their samples, and the splice's misses. */
static void print_profile(FILE *f, const struct sc_profile *p)
{
	for (size_t t = 0; t < p->threads.n; t++) {
		const struct sc_tree *tr = &p->threads.v[t];
		const struct sc_thread *th = &p->proc->threads.v[tr->thread_idx];
		uint64_t all = tr->nodes.v[0].incl.count;

		if (!tr->gil[SC_GIL_WAITING] || !all)
			continue;
		fprintf(f,
			"syscope: Python: thread %u (tid %d%s%s) waited for the GIL in %llu of its "
			"%llu %s samples (%.1f%%)\n",
			th->index, (int)th->tid, th->name[0] ? ", " : "", th->name,
			(unsigned long long)tr->gil[SC_GIL_WAITING], (unsigned long long)all,
			kind_text(p->kind), 100.0 * (double)tr->gil[SC_GIL_WAITING] / (double)all);
	}
	if (p->py_extra_groups)
		fprintf(f,
			"syscope: Python: %llu %s samples of process %d had more Python eval groups "
			"than native eval frames (the native stack was cut short); the outer ones are "
			"shown at the root\n",
			(unsigned long long)p->py_extra_groups, kind_text(p->kind),
			(int)p->proc->pid);
	if (p->py_truncated)
		fprintf(f,
			"syscope: Python: %llu %s samples of process %d had more than %u Python "
			"frames; their outermost ones are missing\n",
			(unsigned long long)p->py_truncated, kind_text(p->kind), (int)p->proc->pid,
			SC_PY_STACK_MAX);
	if (p->py_bad_code)
		fprintf(f,
			"syscope: Python: in %llu %s samples of process %d the walk of the Python "
			"frames stopped at a code object that did not check out; the frames outside "
			"it are missing\n",
			(unsigned long long)p->py_bad_code, kind_text(p->kind), (int)p->proc->pid);
	if (p->py_extra_evals)
		fprintf(f,
			"syscope: Python: %llu %s samples of process %d had native eval frames "
			"without Python frames (a call just starting); they are shown as native "
			"frames\n",
			(unsigned long long)p->py_extra_evals, kind_text(p->kind),
			(int)p->proc->pid);
}

/* The Python lines that launched the most GPU time: the innermost frame of each CUDA call's
 * stack, so a line's time is what it launched itself. */
static void print_gpu_lines(FILE *f, const struct sc_profile *p, unsigned top)
{
	const struct sc_profile_set *set = p->set;
	size_t n;
	uint32_t *ids = sc_profile_sorted_flat(p, true, &n);
	uint64_t busy_ns = 0, bad = 0;

	for (size_t i = 0; i < p->proc->images.n; i++) {
		busy_ns += p->proc->images.v[i]->gpu_busy_ns;
		if (p->proc->images.v[i]->py_callsites)
			bad += p->proc->images.v[i]->py_callsites->bad_records;
	}
	/* The rest of the GPU work came from threads without Python (autograd's) or from
	 * calls made before Python frames were read. */
	fprintf(f,
		"syscope: GPU time launched by Python line, process %d (%.6f s of device time "
		"from %llu CUDA calls, %.1f%% of its GPU work; gpu_time_by_python-%d.txt has the "
		"call tree):\n",
		(int)p->proc->pid, p->total.sum, (unsigned long long)p->total.count,
		busy_ns ? 100.0 * p->total.sum / ((double)busy_ns * 1e-9) : 0.0, (int)p->proc->pid);
	for (size_t i = 0; i < n && i < top; i++) {
		const struct sc_flat *fl = &p->lines.v[ids[i]];
		const struct sc_line *ln = &set->lines.v[ids[i]];

		if (!fl->excl.count)
			break;
		fprintf(f, "syscope: %12.6f s %5.1f%%  %s:%u  %s  (%llu calls)\n", fl->excl.sum,
			p->total.sum > 0 ? 100.0 * fl->excl.sum / p->total.sum : 0.0, ln->file,
			ln->line, sc_func_of(set, ln->func)->name,
			(unsigned long long)fl->excl.count);
	}
	free(ids);
	if (bad)
		fprintf(f,
			"syscope: Python: %llu damaged call-site records of process %d were "
			"skipped\n",
			(unsigned long long)bad, (int)p->proc->pid);
	if (p->py_truncated || p->py_bad_code)
		fprintf(f,
			"syscope: Python: %llu CUDA calls of process %d had Python stacks cut "
			"short (more than %u frames, or a code object that did not check out)\n",
			(unsigned long long)(p->py_truncated + p->py_bad_code), (int)p->proc->pid,
			SC_PY_STACK_MAX);
}

void sc_summary_python(FILE *f, struct sc_output *out, unsigned top)
{
	struct sc_model *m = out->model;

	for (size_t i = 0; i < m->images.n; i++)
		print_runtimes(f, m->images.v[i]);
	for (size_t i = 0; i < out->profiles->profiles.n; i++)
		if (out->profiles->profiles.v[i]->kind == SC_PROFILE_GPU_PYTHON)
			print_gpu_lines(f, out->profiles->profiles.v[i], top);
		else if (out->profiles->profiles.v[i]->kind != SC_PROFILE_REGIONS)
			print_profile(f, out->profiles->profiles.v[i]);
}
