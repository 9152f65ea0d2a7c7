/* SPDX-License-Identifier: MIT */
/*
 * `html`: report.html, one self-contained page (no network: its style, script and data are
 * inlined) of the run's summary, the sampled profile, activity over time, counters, GPU
 * work, regions and how to open the full trace in Perfetto. The data is one JSON object in
 * a <script type="application/json"> element, with <, > and & written as \u escapes, so
 * no name (C++ templates, quotes, "</script>") can end the element or become markup; the
 * script places every string with textContent, never as HTML.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "../common/strutil.h"
#include "html.h"
#include "summary_idle.h"

const char *sc_html_file_name = "report.html";

/* The page's script and style (cmake/embed_files.cmake, from html_page.js and .css). */
struct sc_embedded {
	const char *name;
	const unsigned char *data;
	size_t size;
};
extern const struct sc_embedded sc_html_assets[];

static const char *asset(const char *name)
{
	for (const struct sc_embedded *e = sc_html_assets; e->name; e++)
		if (!strcmp(e->name, name))
			return (const char *)e->data;
	return "";
}

json_t *sc_html_str(const char *s)
{
	json_t *j = json_string(s ? s : "");
	char *copy;

	if (j)
		return j;
	copy = sc_xstrdup(s);
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p > 0x7f)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

static json_t *process_json(const struct sc_process *p)
{
	const struct sc_image *img = p->images.v[0], *last = p->images.v[p->images.n - 1];
	json_t *argv = json_array();

	for (size_t i = 0; i < img->argv.n; i++)
		json_array_append_new(argv, sc_html_str(img->argv.v[i]));
	return json_pack(
		"{s:i, s:i, s:o, s:o, s:o, s:I, s:f, s:s, s:i}", "pid", (int)p->pid, "ppid",
		(int)p->ppid, "exe", sc_html_str(img->exe), "argv", argv, "host",
		sc_html_str(p->hostname), "threads", (json_int_t)p->threads.n, "seconds",
		last->end_ns > img->start_ns ? (double)(last->end_ns - img->start_ns) * 1e-9 : 0.0,
		"end", sc_end_reason_text(last->end_reason), "status", (int)last->end_status);
}

static json_t *summary_json(struct sc_output *out)
{
	const struct sc_model *m = out->model;
	uint64_t records = 0, bytes = 0, samples = 0, threads = 0, total_samples = 0;
	json_t *procs = json_array(), *notes = json_array();

	for (size_t i = 0; i < m->images.n; i++) {
		records += m->images.v[i]->lost_records;
		bytes += m->images.v[i]->lost_bytes;
		samples += m->images.v[i]->lost_samples;
	}
	for (size_t i = 0; i < m->processes.n; i++) {
		json_array_append_new(procs, process_json(m->processes.v[i]));
		threads += m->processes.v[i]->threads.n;
	}
	for (int k = 0; k < SC_KINDS; k++)
		total_samples += m->samples[k];
	for (size_t i = 0; i < m->notes.n && i < 100; i++)
		json_array_append_new(
			notes, json_pack("{s:i, s:s, s:o}", "pid", m->notes.v[i].pid, "level",
					 m->notes.v[i].level == SC_NOTE_WARN ? "warning" : "info",
					 "text", sc_html_str(m->notes.v[i].text)));
	return json_pack("{s:s, s:f, s:I, s:I, s:o, s:{s:I, s:I, s:I}, s:o, s:I}", "version",
			 SYSCOPE_VERSION, "seconds",
			 m->last_ts > m->first_ts ? (double)(m->last_ts - m->first_ts) * 1e-9 : 0.0,
			 "threads", (json_int_t)threads, "samples", (json_int_t)total_samples,
			 "processes", procs, "lost", "records", (json_int_t)records, "bytes",
			 (json_int_t)bytes, "samples", (json_int_t)samples, "notes", notes,
			 "notes_total", (json_int_t)m->notes.n);
}

static bool is_trace(const char *name)
{
	size_t n = strlen(name);

	return n > 8 && !strcmp(name + n - 8, ".pftrace");
}

/* The Perfetto trace beside the report, or the command that makes one. */
static json_t *perfetto_json(struct sc_output *out)
{
	const char *input = out->model->session ? out->model->session->dir : out->dir;
	json_t *files = json_array(), *doc;
	char *cmd = sc_xasprintf("syscope convert -f pftrace %s", input ? input : "SESSION");
	DIR *d;

	if (out->merged_trace)
		json_array_append_new(files, sc_html_str(sc_base_name(out->merged_trace)));
	else if ((d = opendir(out->dir))) {
		struct dirent *e;

		while ((e = readdir(d)))
			if (is_trace(e->d_name))
				json_array_append_new(files, sc_html_str(e->d_name));
		closedir(d);
	}
	doc = json_pack("{s:o, s:o}", "files", files, "command", sc_html_str(cmd));
	free(cmd);
	return doc;
}

/* Why the GPUs were idle, one headline per GPU, when the analysis applies. */
static json_t *idle_json(struct sc_output *out)
{
	const struct sc_idle_report *r = sc_output_idle(out);
	json_t *lines = json_array();
	char *text = NULL, *save = NULL;
	size_t len = 0;
	FILE *f;

	if (!r || !(f = open_memstream(&text, &len)))
		return lines;
	sc_idle_print(f, out->profiles, r, true);
	fclose(f);
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		json_array_append_new(lines, sc_html_str(!strncmp(l, "syscope: ", 9) ? l + 9 : l));
	free(text);
	return lines;
}

static json_t *report_json(struct sc_output *out)
{
	json_t *doc = json_pack("{s:o, s:o, s:o, s:o}", "summary", summary_json(out), "timeline",
				sc_html_timeline_json(out), "perfetto", perfetto_json(out),
				"gpu_idle", idle_json(out));
	json_t *profile = sc_html_profile_json(out);

	json_object_set_new(doc, "profile", profile ? profile : json_null());
	return doc;
}

/* JSON text into a script element: <, > and & as \u escapes (they occur only in strings). */
static void put_data(FILE *f, const char *text)
{
	for (const char *p = text; *p; p++)
		if (*p == '<')
			fputs("\\u003c", f);
		else if (*p == '>')
			fputs("\\u003e", f);
		else if (*p == '&')
			fputs("\\u0026", f);
		else
			fputc(*p, f);
}

static int write_html(struct sc_output *out)
{
	json_t *doc = report_json(out);
	char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(7)) : NULL;
	struct sc_outfile of;
	int rc;

	json_decref(doc);
	if (!text) {
		*VEC_PUSH(&out->errors) =
			sc_xstrdup("html: the report's data could not be encoded");
		return -1;
	}
	rc = sc_out_open(out, &of, "%s", sc_html_file_name);
	if (!rc) {
		fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
		      "<meta name=\"viewport\" content=\"width=device-width\">\n"
		      "<title>syscope report</title>\n<style>\n",
		      of.f);
		fputs(asset("html_page.css"), of.f);
		fputs("</style></head>\n<body>\n<div id=\"app\">Loading the report "
		      "(it needs JavaScript)...</div>\n"
		      "<script type=\"application/json\" id=\"syscope-data\">",
		      of.f);
		put_data(of.f, text);
		fputs("</script>\n<script>\n", of.f);
		fputs(asset("html_page.js"), of.f);
		fputs("</script>\n</body></html>\n", of.f);
		rc = sc_out_close(out, &of);
	}
	free(text);
	return rc;
}

const struct sc_sink sc_sink_html = {
	.token = "html",
	.description = "one self-contained page: summary, flame graph, activity, counters, GPU "
		       "work, regions (report.html)",
	.write = write_html,
	.replays = true,
};
