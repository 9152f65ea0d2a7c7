/* SPDX-License-Identifier: MIT */
/*
 * metadata-<pid>.json, always written: who ran what, where, when, how it ended, every
 * setting with its value and where the value came from, the environment, the threads and
 * how they were sampled, anything lost, notes from the runtime, and the files of the output.
 * Launcher-side facts (settings' sources, host, CPU, syscope's own command line) come from
 * session.json; process-side facts from the raw records.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../store/session.h"
#include "sink.h"

static json_t *iso_time(uint64_t realtime_ns)
{
	time_t secs = (time_t)(realtime_ns / 1000000000ull);
	struct tm tm;
	char buf[64];

	if (!realtime_ns || !gmtime_r(&secs, &tm))
		return json_null();
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), ".%06uZ",
		 (unsigned)(realtime_ns % 1000000000ull / 1000));
	return json_string(buf);
}

static json_t *string_array(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *environment(const struct sc_image *img)
{
	json_t *o = json_object();

	for (size_t i = 0; i < img->env.n; i++) {
		const char *eq = strchr(img->env.v[i], '=');
		char *key;

		if (!eq)
			continue;
		key = sc_xstrndup(img->env.v[i], (size_t)(eq - img->env.v[i]));
		json_object_set_new(o, key, json_string(eq + 1));
		free(key);
	}
	return o;
}

/* Settings as the launcher resolved them (with sources), else as the runtime saw them. */
static json_t *settings_json(const struct sc_image *img, json_t *session)
{
	json_t *launcher = session ? json_object_get(session, "settings") : NULL;
	json_t *arr;

	if (json_is_array(launcher))
		return json_incref(launcher);
	arr = json_array();
	for (size_t i = 0; i < img->settings.n; i++) {
		const char *eq = strchr(img->settings.v[i], '=');
		char name[128];
		int id;

		if (!eq || (size_t)(eq - img->settings.v[i]) >= sizeof(name))
			continue;
		memcpy(name, img->settings.v[i], (size_t)(eq - img->settings.v[i]));
		name[eq - img->settings.v[i]] = '\0';
		id = sc_setting_by_name(name);
		if (id < 0)
			continue;
		json_array_append_new(
			arr, json_pack("{s:s, s:s+, s:s, s:s, s:s}", "name", name, "env",
				       SC_SETTING_ENV_PREFIX, name, "value", eq + 1, "default",
				       sc_setting_defs[id].defval, "source",
				       strcmp(eq + 1, sc_setting_defs[id].defval) ? "environment"
										  : "default"));
	}
	return arr;
}

static json_t *threads_json(const struct sc_process *p)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < p->threads.n; i++) {
		const struct sc_thread *t = &p->threads.v[i];
		json_t *o = json_pack(
			"{s:I, s:I, s:s, s:I, s:I, s:I, s:I}", "tid", (json_int_t)t->tid, "index",
			(t->index == UINT32_MAX ? (json_int_t)-1 : (json_int_t)t->index), "name",
			t->name, "creator_tid", (json_int_t)t->creator, "begin_ns",
			(json_int_t)t->begin_ts, "end_ns", (json_int_t)t->end_ts, "cpu_ns",
			(json_int_t)(t->end_cpu > t->begin_cpu ? t->end_cpu - t->begin_cpu : 0));
		json_t *samplers = json_array();

		for (unsigned k = 0; k < SC_KINDS; k++) {
			static const char *const mech[] = { "none", "perf task-clock",
							    "POSIX CPU-time timer",
							    "POSIX monotonic timer",
							    "perf event overflow" };

			if (!sc_sample_kind_profiled(k))
				continue;
			if (!t->mechanism[k] && !t->samples[k])
				continue;
			json_array_append_new(
				samplers,
				json_pack("{s:s, s:s, s:f, s:f, s:f, s:I, s:f, s:i}", "metric",
					  sc_kind_metric(k), "mechanism",
					  t->mechanism[k] < 4 ? mech[t->mechanism[k]] : "?",
					  "requested_hz", sc_period_hz(t->period_ns[k]),
					  "throttled_to_hz",
					  sc_period_hz(t->throttled_period_ns[k]), "delivered_hz",
					  sc_thread_delivered_hz(t, k), "samples",
					  (json_int_t)t->samples[k], "seconds", t->seconds[k],
					  "error", t->sampler_error[k]));
		}
		json_object_set_new(o, "samplers", samplers);
		json_array_append_new(arr, o);
	}
	return arr;
}

/* Lost records by cause, and the raw file's other accounts of trouble (format.h). */
static json_t *losses_json(const struct sc_image *img)
{
	json_t *o = json_object(), *causes = json_object();
	const struct sc_file_header *h;

	json_object_set_new(o, "by_cause", causes);
	if (!img->raw)
		return o;
	h = sc_raw_live_header(img->raw);
	for (unsigned c = 0; c < SC_LOST_CAUSES; c++)
		if (sc_lost_by_cause(h, c))
			json_object_set_new(causes, sc_lost_cause_name(c),
					    json_integer((json_int_t)sc_lost_by_cause(h, c)));
	if (h->disk_errno && sc_lost_by_cause(h, SC_LOST_DISK))
		json_object_set_new(o, "disk_full_cause",
				    json_string(sc_lost_disk_text(h->disk_errno)));
	json_object_set_new(o, "write_failed_bytes",
			    json_integer((json_int_t)h->write_failed_bytes));
	json_object_set_new(o, "raw_file_reopened", json_integer((json_int_t)h->file_reopened));
	return o;
}

static json_t *images_json(const struct sc_process *p)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < p->images.n; i++) {
		const struct sc_image *img = p->images.v[i];
		json_t *children = json_array();

		for (size_t c = 0; c < img->children.n; c++)
			json_array_append_new(children, json_integer(img->children.v[c]));
		json_array_append_new(
			arr,
			json_pack(
				"{s:s?, s:o, s:s?, s:o, s:I, s:I, s:s, s:i, s:s?, s:o, s:I, s:I, s:I, s:o, "
				"s:s}",
				"executable", img->exe, "argv",
				string_array(img->argv.v, img->argv.n), "cwd", img->cwd,
				"start_time", iso_time(img->start_realtime_ns), "start_ns",
				(json_int_t)img->start_ns, "end_ns",
				(json_int_t)(img->end_ns ? img->end_ns : img->last_ts),
				"end_reason", sc_end_reason_text(img->end_reason), "end_status",
				img->end_status, "exec", img->exec_path, "children", children,
				"lost_records", (json_int_t)img->lost_records, "lost_bytes",
				(json_int_t)img->lost_bytes, "lost_samples",
				(json_int_t)img->lost_samples, "losses", losses_json(img),
				"raw_file", img->raw ? img->raw->path : ""));
	}
	return arr;
}

json_t *sc_counters_json(const struct sc_process *p)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < p->images.n; i++)
		for (size_t k = 0; k < p->images.v[i]->counter_tracks.n; k++) {
			const struct sc_counter_track *c = &p->images.v[i]->counter_tracks.v[k];

			if (!c->values.count)
				continue;
			json_array_append_new(
				arr, json_pack("{s:s, s:s, s:I, s:f, s:f, s:f, s:f, s:b}", "name",
					       c->name, "unit", c->unit, "values",
					       (json_int_t)c->values.count, "min", c->values.min,
					       "mean", sc_counter_mean(c), "max", c->values.max,
					       "last", c->last, "time_weighted", !c->unordered));
		}
	return arr;
}

static json_t *gpu_json(const struct sc_process *p)
{
	json_t *agents = json_array();
	uint64_t ops[SC_GPU_OP_KINDS] = { 0 }, busy = 0, streams = 0;

	for (size_t i = 0; i < p->images.n; i++) {
		const struct sc_image *img = p->images.v[i];

		for (size_t a = 0; a < img->agents.n; a++) {
			const struct sc_gpu_agent *g = &img->agents.v[a];
			char uuid[33], cc[24], pci[32];

			for (int b = 0; b < 16; b++)
				snprintf(uuid + 2 * b, 3, "%02x", g->uuid[b]);
			snprintf(cc, sizeof(cc), "%u.%u", g->compute_major, g->compute_minor);
			snprintf(pci, sizeof(pci), "%04x:%02x:%02x.0", g->pci_domain, g->pci_bus,
				 g->pci_device);
			json_array_append_new(
				agents,
				json_pack("{s:i, s:s, s:s, s:s, s:I, s:i, s:s, s:s}", "id",
					  (int)g->id, "name", g->name, "vendor", g->vendor, "uuid",
					  uuid, "memory_bytes", (json_int_t)g->memory_bytes,
					  "multiprocessors", (int)g->multiprocessors,
					  "compute_capability", cc, "pci_bus_id", pci));
		}
		for (int k = 0; k < SC_GPU_OP_KINDS; k++)
			ops[k] += img->gpu_ops[k];
		busy += img->gpu_busy_ns;
		streams += img->streams.n;
	}
	return json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "agents", agents,
			 "streams", (json_int_t)streams, "kernels", (json_int_t)ops[SC_GPU_KERNEL],
			 "graph_launches", (json_int_t)ops[SC_GPU_GRAPH], "copies",
			 (json_int_t)ops[SC_GPU_COPY], "sets", (json_int_t)ops[SC_GPU_SET],
			 "allocations", (json_int_t)ops[SC_GPU_ALLOC], "frees",
			 (json_int_t)ops[SC_GPU_FREE], "busy_s", (double)busy * 1e-9);
}

static json_t *notes_json(const struct sc_model *m, int32_t pid)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < m->notes.n; i++)
		if (m->notes.v[i].pid == pid)
			json_array_append_new(
				arr,
				json_pack("{s:s, s:s}", "level",
					  m->notes.v[i].level == SC_NOTE_WARN ? "warning" : "info",
					  "text", m->notes.v[i].text));
	return arr;
}

static json_t *load_session_info(const char *dir)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/" SC_SESSION_INFO, dir);
	return json_load_file(path, 0, NULL);
}

/* An attach of several processes lists them all in session.json: each process's metadata
 * keeps its own entry (a fork child, not in the list, keeps the list). */
static void own_attach(json_t *launcher, int32_t pid)
{
	json_t *all = json_object_get(launcher, "attach"), *d;
	size_t i;

	if (!json_is_array(all))
		return;
	json_array_foreach (all, i, d)
		if (json_integer_value(json_object_get(d, "pid")) == pid) {
			json_object_set(launcher, "attach", d);
			return;
		}
}

/* The process's place in an MPI job: its rank (from MPI_Init, else the launcher), the job's
 * size (0 when MPI_Init was not seen) and the host. */
static json_t *mpi_json(const struct sc_image *img)
{
	return json_pack("{s:i, s:i, s:s?}", "rank", sc_image_rank(img), "size",
			 sc_image_mpi_size(img), "host", img->hostname);
}

static int write_metadata(struct sc_output *out)
{
	json_t *session = load_session_info(out->model->session->dir);
	int rc = 0;

	for (size_t i = 0; i < out->model->processes.n; i++) {
		const struct sc_process *p = out->model->processes.v[i];
		const struct sc_image *first = p->images.v[0], *last = p->images.v[p->images.n - 1];
		uint64_t end = last->end_ns ? last->end_ns : last->last_ts;
		json_t *files = json_array(), *doc;
		struct sc_outfile of;

		for (size_t f = 0; f < out->written.n; f++) {
			char suffix[32];

			snprintf(suffix, sizeof(suffix), "-%d.", (int)p->pid);
			if (strstr(out->written.v[f], suffix))
				json_array_append_new(files, json_string(out->written.v[f]));
		}
		if (sc_out_open(out, &of, "metadata-%d.json", (int)p->pid)) {
			json_decref(files);
			rc = -1;
			continue;
		}
		json_array_append_new(files, json_string(of.name));
		doc = json_pack(
			"{s:s, s:I, s:I, s:s?, s:s?, s:o, s:s?, s:o, s:f, s:{s:s, s:i}, s:o, "
			"s:o, s:o, s:o, s:o, s:o, s:o}",
			"syscope_version", SYSCOPE_VERSION, "pid", (json_int_t)p->pid, "ppid",
			(json_int_t)p->ppid, "hostname", first->hostname, "executable", first->exe,
			"command", string_array(first->argv.v, first->argv.n), "cwd", first->cwd,
			"start_time", iso_time(first->start_realtime_ns), "duration_s",
			end > first->start_ns ? (double)(end - first->start_ns) * 1e-9 : 0.0,
			"exit", "reason", sc_end_reason_text(last->end_reason), "status",
			last->end_status, "settings", settings_json(first, session), "environment",
			environment(first), "images", images_json(p), "threads", threads_json(p),
			"notes", notes_json(out->model, p->pid), "gpu", gpu_json(p), "files",
			files);
		if (last->killed_by) /* no end recorded: the launcher saw the signal */
			json_object_set_new(doc, "exit",
					    json_pack("{s:s, s:i}", "reason", "signal", "status",
						      last->killed_by));
		json_object_set_new(doc, "counters", sc_counters_json(p));
		if (sc_image_rank(first) >= 0 || sc_image_mpi_size(first))
			json_object_set_new(doc, "mpi", mpi_json(first));
		if (session) {
			json_t *launcher = json_deep_copy(session);

			json_object_del(launcher, "settings");
			own_attach(launcher, p->pid);
			json_object_set_new(doc, "launcher", launcher);
		}
		json_dumpf(doc, of.f, JSON_INDENT(1) | JSON_REAL_PRECISION(9));
		fputc('\n', of.f);
		json_decref(doc);
		if (sc_out_close(out, &of))
			rc = -1;
	}
	json_decref(session);
	return rc;
}

const struct sc_sink sc_sink_metadata = {
	.token = "metadata",
	.description =
		"settings, command, environment, host, times and files (metadata-<pid>.json)",
	.write = write_metadata,
};
