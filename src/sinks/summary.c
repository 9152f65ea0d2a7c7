/* SPDX-License-Identifier: MIT */
/*
 * The end-of-run summary on stderr: how the program ended, what was sampled and at what
 * rate, the top functions with their hottest line, anything lost or damaged, the notes the
 * runtime left (features that could not work), and the files written.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "../common/strutil.h"
#include "summary.h"
#include "summary_idle.h"

static void print_ending(FILE *f, const struct sc_model *m)
{
	for (size_t i = 0; i < m->processes.n; i++) {
		const struct sc_process *p = m->processes.v[i];
		const struct sc_image *img = p->images.v[p->images.n - 1];
		const char *exe = img->exe ? sc_base_name(img->exe) : "?";

		if (img->end_reason == SC_END_SIGNAL)
			fprintf(f, "syscope: process %d (%s) was killed by signal %d (%s)\n",
				(int)p->pid, exe, img->end_status, strsignal(img->end_status));
		else if (img->end_reason == SC_END_RUNNING && img->killed_by)
			fprintf(f,
				"syscope: process %d (%s) was killed by signal %d (%s), which no "
				"handler can see: its threads' last records (about their last 20 ms) "
				"may be missing\n",
				(int)p->pid, exe, img->killed_by, strsignal(img->killed_by));
		else if (img->end_reason == SC_END_RUNNING)
			fprintf(f,
				"syscope: process %d (%s) stopped recording without exiting normally "
				"(killed, a raw exit_group or execve system call, or still running): its "
				"threads' last records (about their last 20 ms) may be missing\n",
				(int)p->pid, exe);
	}
}

static void print_crashes(FILE *f, struct sc_output *out)
{
	struct sc_model *m = out->model;

	for (size_t i = 0; i < m->images.n; i++) {
		const struct sc_image *img = m->images.v[i];
		uint32_t *funcs, *lines;
		size_t n;

		if (img->crash_stack < 0)
			continue;
		n = sc_stack_path(out->profiles, &m->stacks.v[img->crash_stack], &funcs, &lines);
		if (!n)
			continue;
		const struct sc_line *ln = &out->profiles->lines.v[lines[n - 1]];

		fprintf(f, "syscope: process %d crashed (signal %d) in %s", (int)img->pid,
			img->end_status, sc_func_of(out->profiles, funcs[n - 1])->name);
		if (ln->line)
			fprintf(f, " at %s:%u", sc_base_name(ln->file), ln->line);
		fputc('\n', f);
	}
}

/* Samples, threads and the rate delivered per second of sampled time, for one kind. */
static void print_sampling(FILE *f, const struct sc_model *m, unsigned kind)
{
	uint64_t threads = 0, samples = 0;
	double seconds = 0, requested = 0;

	for (size_t i = 0; i < m->processes.n; i++) {
		const struct sc_process *p = m->processes.v[i];

		for (size_t t = 0; t < p->threads.n; t++) {
			const struct sc_thread *th = &p->threads.v[t];

			if (!th->samples[kind])
				continue;
			threads++;
			samples += th->samples[kind];
			seconds += th->seconds[kind];
			if (th->period_ns[kind])
				requested = sc_period_hz(th->period_ns[kind]);
		}
	}
	fprintf(f, "syscope: %llu %s samples from %llu thread%s",
		(unsigned long long)m->samples[kind],
		kind == SC_SAMPLE_REALTIME   ? "wall-clock"
		: kind == SC_SAMPLE_OVERFLOW ? "event-overflow"
					     : "CPU-time",
		(unsigned long long)threads, threads == 1 ? "" : "s");
	if (requested > 0 && seconds > 0 && kind != SC_SAMPLE_OVERFLOW)
		fprintf(f, " (%.0f Hz asked, %.0f Hz delivered per %s second)", requested,
			(double)samples / seconds, kind == SC_SAMPLE_REALTIME ? "wall" : "CPU");
	fputc('\n', f);
}

struct top_entry {
	const char *name, *file;
	uint32_t line;
	double self, total;
	uint64_t samples, total_samples;
};

static int by_self_desc(const void *a, const void *b)
{
	const struct top_entry *x = a, *y = b;

	return x->self > y->self ? -1 : x->self < y->self;
}

static int by_total_desc(const void *a, const void *b)
{
	const struct top_entry *x = a, *y = b;

	return x->total > y->total ? -1 : x->total < y->total;
}

static const char *ranked_what(unsigned kind)
{
	return kind == SC_PROFILE_REGIONS   ? "time inside them, with their calls"
	       : kind == SC_SAMPLE_REALTIME ? "wall time"
	       : kind == SC_SAMPLE_OVERFLOW ? "counted events"
					    : "CPU time";
}

static void print_entry(FILE *f, const struct top_entry *e, const char *share, uint64_t n)
{
	fprintf(f, "syscope: %s %8llu  %-40s", share, (unsigned long long)n, e->name);
	if (e->line)
		fprintf(f, " %s:%u", sc_base_name(e->file), e->line);
	fputc('\n', f);
}

/* The same functions by inclusive time (the function and everything it called), self
 * beside it: a function whose time is spent in its callees shows here only. */
static void print_top_total(FILE *f, struct top_entry *e, size_t n, unsigned kind, double total,
			    unsigned top)
{
	if (!n || !top || total <= 0)
		return;
	qsort(e, n, sizeof(*e), by_total_desc);
	fprintf(f, "syscope: top %s by %s (total, with self):\n",
		kind == SC_PROFILE_REGIONS ? "regions" : "functions", ranked_what(kind));
	for (size_t i = 0; i < n && i < top; i++) {
		char share[48];

		snprintf(share, sizeof(share), "%6.1f%% (self %5.1f%%)", 100 * e[i].total / total,
			 100 * e[i].self / total);
		print_entry(f, &e[i], share, e[i].total_samples);
	}
}

/* Functions by exclusive time over every process's profile of `kind`. */
static int by_value_desc(const void *a, const void *b)
{
	const struct top_entry *x = a, *y = b;

	return x->self < y->self ? 1 : x->self > y->self ? -1 : 0;
}

/* The regions that launched the most GPU work (device time of the ops whose launching call
 * lies inside them), when there was any. */
static void print_gpu_launched(FILE *f, struct sc_output *out, unsigned top)
{
	struct sc_profile_set *set = out->profiles;
	struct top_entry *e = sc_xcalloc(set->funcs.n + 1, sizeof(*e));
	size_t n = 0;

	for (size_t i = 0; i < set->profiles.n; i++) {
		const struct sc_profile *p = set->profiles.v[i];

		for (size_t fid = 0; p->kind == SC_PROFILE_REGIONS && fid < p->funcs.n; fid++) {
			e[fid].name = sc_func_of(set, (uint32_t)fid)->name;
			e[fid].self += p->funcs.v[fid].gpu_launched;
		}
	}
	for (size_t i = 0; i < set->funcs.n; i++)
		if (e[i].self > 0)
			e[n++] = e[i];
	qsort(e, n, sizeof(*e), by_value_desc);
	if (n)
		fprintf(f, "syscope: GPU time launched inside regions (the call and every region "
			   "around it):\n");
	for (size_t i = 0; i < n && i < top; i++)
		fprintf(f, "syscope: %12.6f s  %s\n", e[i].self, e[i].name);
	free(e);
}

static void print_top(FILE *f, struct sc_output *out, unsigned kind, unsigned top)
{
	struct sc_profile_set *set = out->profiles;
	struct top_entry *e = sc_xcalloc(set->funcs.n + 1, sizeof(*e));
	double total = 0;
	size_t n = 0;

	for (size_t i = 0; i < set->profiles.n; i++) {
		const struct sc_profile *p = set->profiles.v[i];
		uint32_t *hot;

		if (p->kind != kind)
			continue;
		hot = sc_profile_hot_lines(p);
		total += p->total.sum;
		for (size_t fid = 0; fid < p->funcs.n; fid++) {
			const struct sc_flat *fl = &p->funcs.v[fid];

			if (!fl->excl.count && !fl->incl.count)
				continue;
			e[fid].name = sc_func_of(set, (uint32_t)fid)->name;
			e[fid].self += fl->excl.sum;
			e[fid].total += fl->incl.sum;
			e[fid].samples += fl->excl.count;
			e[fid].total_samples += fl->incl.count;
			if (hot[fid] != UINT32_MAX && !e[fid].line) {
				e[fid].file = set->lines.v[hot[fid]].file;
				e[fid].line = set->lines.v[hot[fid]].line;
			}
		}
		free(hot);
	}
	for (size_t i = 0; i < set->funcs.n; i++)
		if (e[i].samples || e[i].total_samples)
			e[n++] = e[i];
	qsort(e, n, sizeof(*e), by_self_desc);
	if (n && top)
		fprintf(f, "syscope: top %s by %s (self):\n",
			kind == SC_PROFILE_REGIONS ? "regions" : "functions", ranked_what(kind));
	for (size_t i = 0; i < n && i < top && e[i].samples; i++) {
		char share[16];

		snprintf(share, sizeof(share), "%6.1f%%", total > 0 ? 100 * e[i].self / total : 0);
		print_entry(f, &e[i], share, e[i].samples);
	}
	print_top_total(f, e, n, kind, total, top);
	free(e);
}

/* The driver's allocations for loaded modules' __device__ variables: not the program's. */
static void print_module_globals(FILE *f, uint64_t n, uint64_t bytes)
{
	if (n)
		fprintf(f,
			"syscope: GPU: besides, %llu module globals (%llu bytes of __device__ "
			"variables the driver allocated when it loaded modules; not counted above)\n",
			(unsigned long long)n, (unsigned long long)bytes);
}

static void print_gpu(FILE *f, const struct sc_model *m)
{
	uint64_t ops[SC_GPU_OP_KINDS] = { 0 }, busy = 0, agents = 0, globals = 0, global_bytes = 0;

	for (size_t i = 0; i < m->images.n; i++) {
		for (int k = 0; k < SC_GPU_OP_KINDS; k++)
			ops[k] += m->images.v[i]->gpu_ops[k];
		busy += m->images.v[i]->gpu_busy_ns;
		agents += m->images.v[i]->agents.n;
		globals += m->images.v[i]->gpu_static_allocs;
		global_bytes += m->images.v[i]->gpu_static_bytes;
	}
	if (!agents)
		return;
	fprintf(f, "syscope: GPU: %llu kernels, ", (unsigned long long)ops[SC_GPU_KERNEL]);
	if (ops[SC_GPU_GRAPH])
		fprintf(f, "%llu graph launches, ", (unsigned long long)ops[SC_GPU_GRAPH]);
	fprintf(f, "%llu copies, %llu sets, %llu allocations, %llu frees; %.3f ms of device work\n",
		(unsigned long long)ops[SC_GPU_COPY], (unsigned long long)ops[SC_GPU_SET],
		(unsigned long long)(ops[SC_GPU_ALLOC] - globals),
		(unsigned long long)ops[SC_GPU_FREE], (double)busy * 1e-6);
	print_module_globals(f, globals, global_bytes);
}

/* What the files' headers count as lost, over every image, by cause. */
struct losses {
	uint64_t records, bytes, samples, write_failed, reopened;
	uint64_t by_cause[SC_LOST_CAUSES];
	int disk_errno;	  /* what the file system said of a disk loss (format.h), if it did */
	bool any_unended; /* an image with no recorded end: its last moments may be missing */
};

static void gather_losses(const struct sc_model *m, struct losses *l)
{
	memset(l, 0, sizeof(*l));
	for (size_t i = 0; i < m->images.n; i++) {
		const struct sc_image *img = m->images.v[i];

		l->records += img->lost_records;
		l->bytes += img->lost_bytes;
		l->samples += img->lost_samples;
		l->any_unended |= img->end_reason == SC_END_RUNNING;
		if (!img->raw)
			continue;
		const struct sc_file_header *h = sc_raw_live_header(img->raw);

		for (unsigned c = 0; c < SC_LOST_CAUSES; c++)
			l->by_cause[c] += sc_lost_by_cause(h, c);
		if (h->disk_errno && sc_lost_by_cause(h, SC_LOST_DISK))
			l->disk_errno = h->disk_errno;
		if (!h->lost_write_records) /* an older writer's count of failed attempts */
			l->write_failed += h->write_failed_bytes;
		l->reopened += h->file_reopened;
	}
}

/* "LOST n records (b bytes): k because ...; j because ..." with every cause counted. */
static void print_lost_records(FILE *f, const struct losses *l)
{
	uint64_t explained = 0;
	const char *sep = "";

	fprintf(f, "syscope: LOST %llu records (%llu bytes): ", (unsigned long long)l->records,
		(unsigned long long)l->bytes);
	for (unsigned c = 0; c < SC_LOST_CAUSES; c++) {
		if (!l->by_cause[c])
			continue;
		fprintf(f, "%s%llu because %s", sep, (unsigned long long)l->by_cause[c],
			c == SC_LOST_DISK ? sc_lost_disk_text(l->disk_errno)
					  : sc_lost_cause_text(c));
		explained += l->by_cause[c];
		sep = "; ";
	}
	if (explained < l->records)
		fprintf(f, "%s%llu for a cause not recorded (a raw file of an older syscope)", sep,
			(unsigned long long)(l->records - explained));
	fputc('\n', f);
}

static void print_losses(FILE *f, const struct sc_model *m)
{
	const struct sc_raw_stats *st = &m->stats;
	uint64_t truncated = 0;
	struct losses l;

	gather_losses(m, &l);
	for (size_t i = 0; i < m->stacks.n; i++)
		if (m->stacks.v[i].flags & SC_SAMPLE_TRUNCATED)
			truncated += m->stacks.v[i].w.count;
	/* "Nothing lost" only when no counter, no damage and no unknown end says otherwise. */
	if (!l.records && !l.samples && !l.write_failed && !st->unwritten_chunks &&
	    !st->damaged_chunks && !st->malformed && !st->truncated_chunks &&
	    !m->session->problems.n && !l.any_unended)
		fprintf(f, "syscope: nothing lost\n");
	if (l.records)
		print_lost_records(f, &l);
	if (l.samples)
		fprintf(f, "syscope: LOST %llu samples taken while a record was being written\n",
			(unsigned long long)l.samples);
	if (l.write_failed)
		fprintf(f,
			"syscope: LOST %llu bytes of records whose write into the raw file failed\n",
			(unsigned long long)l.write_failed);
	if (st->unwritten_chunks)
		fprintf(f,
			"syscope: LOST the records of %llu chunk%s claimed but never written (the "
			"damaged-data lines below say how much and why)\n",
			(unsigned long long)st->unwritten_chunks,
			st->unwritten_chunks == 1 ? "" : "s");
	if (st->damaged_chunks || st->malformed || st->truncated_chunks)
		fprintf(f,
			"syscope: LOST the rest of %llu damaged or cut-short chunk%s and %llu malformed "
			"records (the damaged-data lines below say where)\n",
			(unsigned long long)(st->damaged_chunks + st->truncated_chunks),
			st->damaged_chunks + st->truncated_chunks == 1 ? "" : "s",
			(unsigned long long)st->malformed);
	if (l.reopened)
		fprintf(f,
			"syscope: the program closed syscope's raw file behind its back %llu time%s (a "
			"raw close or close_range system call); syscope opened it again and lost "
			"nothing by it\n",
			(unsigned long long)l.reopened, l.reopened == 1 ? "" : "s");
	if (truncated)
		fprintf(f,
			"syscope: %llu samples had stacks deeper than --sampling-max-depth; their "
			"outermost frames are missing\n",
			(unsigned long long)truncated);
}

/* Each distinct note once (many processes often say the same), with how many said it. */
static void print_notes(FILE *f, const struct sc_model *m)
{
	for (size_t i = 0; i < m->notes.n; i++) {
		const struct sc_note *n = &m->notes.v[i];
		unsigned same = 0;
		bool first = true;

		for (size_t j = 0; j < m->notes.n; j++) {
			if (m->notes.v[j].text != n->text) /* interned: pointers compare texts */
				continue;
			first = first && j >= i;
			same++;
		}
		if (!first)
			continue;
		if (same > 1)
			fprintf(f, "syscope: %s (%u processes, process %d first): %s\n",
				n->level == SC_NOTE_WARN ? "warning" : "note", same, (int)n->pid,
				n->text);
		else
			fprintf(f, "syscope: %s (process %d): %s\n",
				n->level == SC_NOTE_WARN ? "warning" : "note", (int)n->pid,
				n->text);
	}
}

/* More files than this (of several processes) are listed by kind, not one a line. */
#define MAX_LISTED_FILES 12
#define DAMAGED_LINES 10 /* damaged-data lines printed without -v */

/* A file name with its pid as "<pid>" ("rocpd-<pid>.db"), into `kind`; false when the name
 * has no "-<digits>." part. */
static bool file_kind(const char *name, char *kind, size_t n)
{
	const char *dash = strrchr(name, '-'), *d = dash ? dash + 1 : NULL;

	if (!d || !*d)
		return false;
	while (*d >= '0' && *d <= '9')
		d++;
	if (d == dash + 1 || *d != '.')
		return false;
	snprintf(kind, n, "%.*s<pid>%s", (int)(dash + 1 - name), name, d);
	return true;
}

/* The files of many processes (a make -j2 writes hundreds): one line per kind of file, with
 * how many there are and one of them; names without a pid one a line. */
static void print_files_grouped(FILE *f, const struct sc_output *out, size_t nproc)
{
	size_t n = out->written.n, *count = sc_xcalloc(n, sizeof(*count));
	char(*kinds)[128] = sc_xcalloc(n, sizeof(*kinds));
	const char **example = sc_xcalloc(n, sizeof(*example));
	size_t nkinds = 0;

	for (size_t i = 0; i < n; i++) {
		const char *name = out->written.v[i];
		char kind[128];
		size_t k = 0;

		if (!file_kind(name, kind, sizeof(kind)))
			snprintf(kind, sizeof(kind), "%s", name);
		while (k < nkinds && strcmp(kinds[k], kind))
			k++;
		if (k == nkinds) {
			memcpy(kinds[nkinds], kind, sizeof(kind));
			example[nkinds++] = name;
		}
		count[k]++;
	}
	fprintf(f, "syscope: wrote %zu files to %s/ for %zu processes, by kind:\n", n, out->dir,
		nproc);
	for (size_t k = 0; k < nkinds; k++)
		if (count[k] > 1)
			fprintf(f, "syscope:   %-36s %5zu files (such as %s)\n", kinds[k], count[k],
				example[k]);
		else
			fprintf(f, "syscope:   %s\n", example[k]);
	free(count);
	free(kinds);
	free(example);
}

/* Whether any process was asked to sample (the settings its runtime resolved), so that a
 * preset without sampling is not told that its samples are missing. */
static bool sampling_asked(const struct sc_model *m)
{
	for (size_t i = 0; i < m->images.n; i++) {
		const struct sc_image *img = m->images.v[i];

		if (!img->settings.n)
			return true; /* not known: assume it was */
		for (size_t k = 0; k < img->settings.n; k++) {
			const char *v = img->settings.v[k];

			if (!strcmp(v, "USE_SAMPLING=true") ||
			    !strcmp(v, "SAMPLING_REALTIME=true") ||
			    (!strncmp(v, "SAMPLING_OVERFLOW=", 18) && v[18]))
				return true;
		}
	}
	return false;
}

void sc_summary_print(FILE *f, struct sc_output *out, unsigned top)
{
	struct sc_model *m = out->model;
	struct sc_session *s = m->session;
	unsigned nthreads = 0, own = 0;
	bool any = false;

	/* syscope's own threads in the program (host telemetry, the chunk writer, attach's,
	 * causal's controller) are named "syscope-..." and counted apart. */
	for (size_t i = 0; i < m->processes.n; i++)
		for (size_t t = 0; t < m->processes.v[i]->threads.n; t++) {
			if (!strncmp(m->processes.v[i]->threads.v[t].name, "syscope-", 8))
				own++;
			else
				nthreads++;
		}
	print_ending(f, m);
	print_crashes(f, out);
	fprintf(f, "syscope: %zu process%s, %u thread%s recorded", m->processes.n,
		m->processes.n == 1 ? "" : "es", nthreads, nthreads == 1 ? "" : "s");
	if (own)
		fprintf(f, " (and %u of syscope's own)", own);
	fputc('\n', f);
	for (unsigned k = 0; k < SC_KINDS; k++) {
		if (!sc_sample_kind_profiled(k) || !m->samples[k])
			continue;
		print_sampling(f, m, k);
		print_top(f, out, k, top);
		any = true;
	}
	sc_summary_python(f, out, top);
	sc_summary_nccl(f, out);
	for (size_t i = 0; i < out->profiles->profiles.n; i++)
		if (out->profiles->profiles.v[i]->kind == SC_PROFILE_REGIONS) {
			/* Instrumented functions, API calls, user regions: their own time. */
			print_top(f, out, SC_PROFILE_REGIONS, top);
			print_gpu_launched(f, out, top);
			any = true;
			break;
		}
	{
		size_t total, run;

		if (sc_coverage_totals(m, &total, &run)) {
			fprintf(f,
				"syscope: coverage: %zu of %zu instrumented functions ran (%.1f%%); "
				"coverage-<pid>.txt lists them\n",
				run, total, 100.0 * (double)run / (double)total);
			any = true;
		}
	}
	if (!any && m->processes.n && sampling_asked(m))
		fprintf(f, "syscope: no samples were recorded (the program ran too briefly, or "
			   "sampling could not start: see the notes)\n");
	else if (!any && m->processes.n)
		fprintf(f, "syscope: call-stack sampling was off, so there is no profile of "
			   "functions (--cpu turns it on)\n");
	print_gpu(f, m);
	sc_summary_idle(f, out);
	print_losses(f, m);
	print_notes(f, m);
	if (s->empty_files)
		fprintf(f,
			"syscope: %u process%s started but recorded nothing (it ended or replaced "
			"itself before syscope's runtime could start in it)\n",
			s->empty_files, s->empty_files == 1 ? "" : "es");
	for (size_t i = 0; i < m->sym.warnings.n; i++)
		fprintf(f, "syscope: note: %s\n", m->sym.warnings.v[i]);
	/* Where the damage is, a few lines of it: a session damaged throughout would fill the
	 * terminal with lines alike (-v lists them all). */
	for (size_t i = 0; i < s->problems.n; i++) {
		if (i == DAMAGED_LINES && sc_log_verbosity < 1) {
			fprintf(f,
				"syscope: damaged data: %zu more places like these (-v lists them)\n",
				s->problems.n - i);
			break;
		}
		fprintf(f, "syscope: damaged data: %s\n", s->problems.v[i]);
	}
	if (m->stats.unknown_types)
		fprintf(f,
			"syscope: %llu records of types this syscope does not know were skipped "
			"(written by a newer version?)\n",
			(unsigned long long)m->stats.unknown_types);
	for (size_t i = 0; i < out->errors.n; i++)
		fprintf(f, "syscope: error: %s\n", out->errors.v[i]);
	if (out->written.n > MAX_LISTED_FILES && m->processes.n > 1)
		print_files_grouped(f, out, m->processes.n);
	else if (out->written.n) {
		fprintf(f, "syscope: wrote %zu file%s to %s/\n", out->written.n,
			out->written.n == 1 ? "" : "s", out->dir);
		for (size_t i = 0; i < out->written.n; i++)
			fprintf(f, "syscope:   %s\n", out->written.v[i]);
	}
}
