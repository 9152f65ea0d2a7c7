/* SPDX-License-Identifier: MIT */
/*
 * syscope avail: what this syscope can do on this machine. Settings (-S), data sources and
 * whether each works here (-C), CPU events perf_event_open accepts here (-H), the domain
 * flags (--list-domains), the presets (--list-presets); filtered by -r REGEX, as tables,
 * CSV, Markdown or JSON; -G writes a configuration file of every setting. The model is
 * rocprof-sys-avail.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifdef SYSCOPE_HAVE_LIBPFM
#include <perfmon/pfmlib_perf_event.h>
#endif

#include "../common/hostinfo.h"
#include "../common/install.h"
#include "../common/log.h"
#include "../common/safe_output.h"
#include "../common/strutil.h"
#include "../arch/arch.h"
#include "../config/config.h"
#include "cmd.h"
#include "components.h"
#include "cpu_events.h"
#include "gpu_metrics.h"
#include "report.h"

struct avail {
	struct sc_cli cli;
	enum sc_report_format fmt;
	regex_t re;
	bool filtered, descriptions;
	json_t *doc; /* --format json: every report under its key */
};

static bool wanted(struct avail *a, const char *name, const char *description)
{
	return !a->filtered || !regexec(&a->re, name, 0, NULL, 0) ||
	       (a->descriptions && description && !regexec(&a->re, description, 0, NULL, 0));
}

static void emit(struct avail *a, struct sc_report *r, const char *key, const char *title)
{
	if (a->doc)
		json_object_set_new(a->doc, key, sc_report_json(r));
	else
		sc_report_print(r, a->fmt, key, title, a->descriptions ? 100 : 60);
	sc_report_free(r);
}

/* ---- settings ---- */

static void settings(struct avail *a)
{
	struct sc_report r = { 0 };
	char cats[128];

	sc_report_column(&r, "environment");
	sc_report_column(&r, "value");
	sc_report_column(&r, "source");
	sc_report_column(&r, "default");
	sc_report_column(&r, "type");
	sc_report_column(&r, "category");
	if (a->descriptions)
		sc_report_column(&r, "description");
	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		const struct sc_setting_def *d = &sc_setting_defs[id];
		char env[160], type[300];

		if ((d->flags & SC_SF_HIDDEN) || !wanted(a, d->name, d->help))
			continue;
		snprintf(env, sizeof(env), SC_SETTING_ENV_PREFIX "%s", d->name);
		snprintf(type, sizeof(type), "%s%s%s%s", sc_setting_type_name(d->type),
			 d->choices ? " (" : "", d->choices ? d->choices : "",
			 d->choices ? ")" : "");
		sc_report_cell(&r, env, false);
		sc_report_cell(&r, a->cli.settings.v[id].text, false);
		sc_report_cell(&r, sc_setting_layer_name(a->cli.settings.v[id].layer), false);
		sc_report_cell(&r, d->defval, false);
		sc_report_cell(&r, type, false);
		sc_report_cell(&r, sc_setting_categories(d->categories, cats, sizeof(cats)), false);
		if (a->descriptions)
			sc_report_cell(&r, d->help, false);
	}
	emit(a, &r, "settings", "SETTINGS");
}

/* ---- data sources ---- */

static int open_event(uint32_t type, uint64_t config)
{
	struct perf_event_attr pa = { .type = type, .config = config };

	return sc_cpu_event_try(&pa);
}

static char *libdir(void)
{
	char *dir = sc_install_path("lib/syscope");

	return dir ? dir : sc_xstrdup(".");
}

static void component(struct avail *a, struct sc_report *r, const char *name, bool ok,
		      const char *state, const char *description)
{
	if (!wanted(a, name, description))
		return;
	sc_report_cell(r, name, false);
	sc_report_cell(r, ok ? "yes" : "no", false);
	sc_report_cell(r, state, false);
	if (a->descriptions)
		sc_report_cell(r, description, false);
}

static void components(struct avail *a)
{
	struct sc_report r = { 0 };
	char buf[512], *dir = libdir(), *path;
	void *h;

	sc_report_column(&r, "source");
	sc_report_column(&r, "available");
	sc_report_column(&r, "state");
	if (a->descriptions)
		sc_report_column(&r, "description");
	for (size_t i = 0; i < sc_ncomponents; i++) {
		const struct sc_component *c = &sc_components[i];
		struct sc_probe p = { .ok = !c->pending };

		snprintf(p.state, sizeof(p.state), "%s", c->pending ? c->pending : "");
		if (c->probe && !c->pending)
			c->probe(&p);
		component(a, &r, c->name, p.ok, p.state, c->description);
	}
	/* What every source relies on: the unwinder, the clock, the outputs. */
	h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	path = sc_xasprintf("%s/libunwind.so.8", dir);
	if (!h)
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	component(a, &r, "unwinder-libunwind", h != NULL,
		  h ? "libunwind found" : "libunwind.so.8 not found: frame pointers only",
		  "DWARF unwinding of sampled stacks (--sampling-unwinder)");
	if (h)
		dlclose(h);
	free(path);
	component(a, &r, "clock", true,
		  arch_cycles_invariant()
			  ? "invariant TSC: rdtsc steered onto CLOCK_MONOTONIC (--clock auto)"
			  : "clock_gettime(CLOCK_MONOTONIC): no invariant TSC here",
		  "Timestamps of every record, in CLOCK_MONOTONIC nanoseconds (--clock)");
	snprintf(buf, sizeof(buf), "%s", sc_setting_defs[SC_SET_OUTPUT_FORMAT].choices);
	for (char *q = buf; *q; q++)
		if (*q == ',')
			*q = ' ';
	component(a, &r, "outputs", true, buf, "Output formats (--output-format)");
	emit(a, &r, "components", "DATA SOURCES");
	free(dir);
}

/* ---- hardware counters ---- */

#ifdef SYSCOPE_HAVE_LIBPFM
/* Every event libpfm4 knows for the PMUs present here, tried with perf_event_open. */
static bool pfm_events(struct avail *a, struct sc_report *r)
{
	pfm_pmu_t pmu;

	if (pfm_initialize() != PFM_SUCCESS)
		return false;
	pfm_for_all_pmus(pmu)
	{
		pfm_pmu_info_t pinfo = { .size = sizeof(pinfo) };

		if (pfm_get_pmu_info(pmu, &pinfo) != PFM_SUCCESS || !pinfo.is_present)
			continue;
		for (int i = pinfo.first_event; i != -1; i = pfm_get_event_next(i)) {
			pfm_event_info_t info = { .size = sizeof(info) };
			struct perf_event_attr pa = { 0 };
			pfm_perf_encode_arg_t arg = { .attr = &pa, .size = sizeof(arg) };
			char name[256], why[256];
			int err;

			if (pfm_get_event_info(i, PFM_OS_PERF_EVENT, &info) != PFM_SUCCESS)
				continue;
			snprintf(name, sizeof(name), "%s::%s", pinfo.name, info.name);
			if (!wanted(a, name, info.desc))
				continue;
			err = pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT, &arg) ==
					      PFM_SUCCESS
				      ? sc_cpu_event_try(&pa)
				      : -EINVAL;
			sc_report_cell(r, name, false);
			sc_report_cell(r, pinfo.desc ? pinfo.desc : pinfo.name, false);
			sc_report_cell(r, err ? "no" : "yes", false);
			sc_report_cell(r,
				       err == -EINVAL ? "libpfm4 cannot encode it for perf"
						      : sc_cpu_event_error(err, why, sizeof(why)),
				       false);
			if (a->descriptions)
				sc_report_cell(r, info.desc ? info.desc : "", false);
		}
	}
	pfm_terminate();
	return true;
}
#endif

static void cpu_events(struct avail *a)
{
	struct sc_report r = { 0 };

	sc_report_column(&r, "event");
	sc_report_column(&r, "kind");
	sc_report_column(&r, "available");
	sc_report_column(&r, "why not");
	if (a->descriptions)
		sc_report_column(&r, "description");
#ifdef SYSCOPE_HAVE_LIBPFM
	if (pfm_events(a, &r)) {
		emit(a, &r, "cpu_events", "CPU EVENTS (libpfm4, tried with perf_event_open here)");
		return;
	}
#endif
	for (size_t i = 0; i < sc_cpu_events_generic_count; i++) {
		const struct sc_cpu_event *e = &sc_cpu_events_generic[i];
		char why[256];
		int err;

		if (!wanted(a, e->name, e->description))
			continue;
		err = open_event(e->type, e->config);
		sc_report_cell(&r, e->name, false);
		sc_report_cell(&r, e->type == PERF_TYPE_SOFTWARE ? "software" : "hardware", false);
		sc_report_cell(&r, err ? "no" : "yes", false);
		sc_report_cell(&r, sc_cpu_event_error(err, why, sizeof(why)), false);
		if (a->descriptions)
			sc_report_cell(&r, e->description, false);
	}
	emit(a, &r, "cpu_events", "CPU EVENTS (perf_event_open on this machine)");
}

/* ---- domains ---- */

/* ---- GPU metrics (CUPTI, through libsyscope-cuda.so) ---- */

struct gpu_rows {
	struct avail *a;
	struct sc_report r;
	unsigned rows;
};

static void gpu_metric_row(void *ctx, unsigned device, const char *chip, const char *metric,
			   const char *type, const char *unit, const char *description)
{
	struct gpu_rows *g = ctx;
	char dev[32];

	if (!wanted(g->a, metric, description))
		return;
	snprintf(dev, sizeof(dev), "%u", device);
	sc_report_cell(&g->r, dev, true);
	sc_report_cell(&g->r, chip, false);
	sc_report_cell(&g->r, metric, false);
	sc_report_cell(&g->r, type, false);
	sc_report_cell(&g->r, unit, false);
	if (g->a->descriptions)
		sc_report_cell(&g->r, description, false);
	g->rows++;
}

static void gpu_metrics(struct avail *a)
{
	struct gpu_rows g = { .a = a };
	char err[1024];

	sc_report_column(&g.r, "gpu");
	sc_report_column(&g.r, "chip");
	sc_report_column(&g.r, "metric");
	sc_report_column(&g.r, "type");
	sc_report_column(&g.r, "unit");
	if (a->descriptions)
		sc_report_column(&g.r, "description");
	if (!sc_gpu_metrics_list(gpu_metric_row, &g, err, sizeof(err))) {
		sc_report_free(&g.r);
		sc_die(SC_EXIT_FAILURE, "avail: no GPU metrics: %s", err);
	}
	emit(a, &g.r, "gpu_metrics",
	     "GPU METRICS (CUPTI base names: add .sum, .avg, .min, .max, or e.g. "
	     ".avg.pct_of_peak_sustained_elapsed, for --gpu-events)");
}

static void domains(struct avail *a)
{
	struct sc_report r = { 0 };

	sc_report_column(&r, "flag");
	sc_report_column(&r, "values");
	sc_report_column(&r, "state");
	if (a->descriptions)
		sc_report_column(&r, "description");
	for (size_t i = 0; i < sc_ncomponents; i++) {
		const struct sc_component *c = &sc_components[i];
		char flag[64], values[512], state[256] = "";
		bool first = true;

		if (!c->flag)
			continue;
		for (size_t k = 0; k < i; k++)
			first = first &&
				!(sc_components[k].flag && !strcmp(sc_components[k].flag, c->flag));
		if (!first)
			continue;
		/* A shared flag's state names the rows that are not in this version yet. */
		for (size_t k = i; k < sc_ncomponents; k++)
			if (sc_components[k].flag && !strcmp(sc_components[k].flag, c->flag) &&
			    sc_components[k].pending)
				snprintf(state + strlen(state), sizeof(state) - strlen(state),
					 "%s%s", state[0] ? ", " : "",
					 sc_components[k].token ? sc_components[k].token
								: sc_components[k].name);
		if (state[0])
			snprintf(state + strlen(state), sizeof(state) - strlen(state),
				 ": not in this version yet");
		snprintf(flag, sizeof(flag), "--%s", c->flag);
		if (!wanted(a, flag, c->flag_help))
			continue;
		sc_report_cell(&r, flag, false);
		sc_report_cell(&r, sc_domain_flag_values(c->flag, values, sizeof(values)), false);
		sc_report_cell(&r, state, false);
		if (a->descriptions)
			sc_report_cell(&r, c->flag_help, false);
	}
	emit(a, &r, "domains", "DOMAIN FLAGS (run, sample)");
}

/* ---- -G: a configuration file of every setting ---- */

static void generate_config(struct avail *a, const char *path)
{
	bool as_json = sc_ends_with(path, ".json");
	char *text = NULL, err[512];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	json_t *doc = json_object();
	bool at_default;

	if (!f)
		sc_die(SC_EXIT_FAILURE, "cannot write %s: %s", path, strerror(errno));
	if (!as_json)
		fprintf(f,
			"# syscope %s configuration: KEY = value; read with --config=%s\n"
			"# or SYSCOPE_CONFIG_FILE. '#' starts a comment; settings at their default\n"
			"# are commented out, so that presets still apply to them.\n",
			SYSCOPE_VERSION, path);
	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		const struct sc_setting_def *d = &sc_setting_defs[id];

		if (!sc_setting_configurable(id) || !wanted(a, d->name, d->help))
			continue;
		/* Values at their default stay commented out: active, they would override any
		 * preset (configuration files rank above presets). */
		at_default = a->cli.settings.v[id].layer == SC_LAYER_DEFAULT;
		if (as_json) {
			if (a->cli.settings.v[id].set && !at_default)
				json_object_set_new(doc, d->name,
						    sc_setting_json(&a->cli.settings, id));
			continue;
		}
		fprintf(f, "\n# %s\n# %s%s%s%s\n%s%s = %s\n", d->help,
			sc_setting_type_name(d->type), d->choices ? ": " : "",
			d->choices ? d->choices : "", d->defval[0] ? "" : " (unset by default)",
			a->cli.settings.v[id].text[0] && !at_default ? "" : "# ", d->name,
			a->cli.settings.v[id].text);
	}
	if (as_json)
		json_dumpf(doc, f, JSON_INDENT(2));
	json_decref(doc);
	if (fclose(f))
		sc_die(SC_EXIT_FAILURE, "cannot write %s: %s", path, strerror(errno));
	if (sc_out_write_file(path, text, len, 0644, 0, err, sizeof(err)))
		sc_die(SC_EXIT_FAILURE, "%s", err);
	free(text);
	fprintf(stderr, "syscope: wrote %s\n", path);
}

int cmd_avail(int argc, char **argv)
{
	const struct sc_verb *verb = sc_verb_find("avail");
	const char *s = NULL, *c = NULL, *hw = NULL, *dev = NULL, *dom = NULL, *pre = NULL;
	const char *regex = NULL, *desc = NULL, *format = NULL, *gen = NULL;
	const char *md = NULL, *csv = NULL, *json = NULL, *man = NULL, *completion = NULL;
	const char *force = NULL;
	struct sc_extra_opt extras[] = {
		{ "settings", 'S', false, "", "Settings: variable, value, source, default, type",
		  &s },
		{ "components", 'C', false, "", "Data sources and whether each works here", &c },
		{ "hardware-counters", 'H', false, "", "CPU events perf_event_open accepts here",
		  &hw },
		{ "device", 'c', true, "CPU|GPU",
		  "With -H: the device (GPU: the CUPTI metrics of the GPUs here, for --gpu-events)",
		  &dev },
		{ "list-domains", 0, false, "", "The domain flags of run and sample", &dom },
		{ "list-presets", 0, false, "", "The presets, by category", &pre },
		{ "filter", 'r', true, "REGEX",
		  "Only rows whose name matches (with -d: or "
		  "description)",
		  &regex },
		{ "description", 'd', false, "", "Show descriptions", &desc },
		{ "format", 0, true, "table|csv|json|md", "Output format (default: table)",
		  &format },
		{ "markdown", 0, false, "", "Same as --format md", &md },
		{ "csv", 0, false, "", "Same as --format csv", &csv },
		{ "json", 0, false, "", "Same as --format json", &json },
		{ "generate-config", 'G', true, "FILE",
		  "Write a configuration file of every setting (JSON if FILE ends in .json)",
		  &gen },
		{ "force", 0, false, "", "With -G: replace FILE even if syscope did not write it",
		  &force },
		{ "man", 0, false, "", "Print syscope's man page (roff)", &man },
		{ "completion", 0, true, "bash", "Print the bash completion script", &completion },
		{ NULL, 0, false, NULL, NULL, NULL },
	};
	struct avail a = { .fmt = SC_REPORT_TABLE };
	bool any;

	sc_cli_parse(&a.cli, verb, argc, argv, extras, false);
	if (sc_cli_answered(&a.cli, extras))
		return 0;
	if (a.cli.nrest)
		sc_die(SC_EXIT_USAGE, "avail: unexpected argument '%s' (usage: %s)", a.cli.rest[0],
		       verb->usage);
	format = md ? "md" : csv ? "csv" : json ? "json" : format;
	if (format && sc_report_format_parse(format, &a.fmt))
		sc_die(SC_EXIT_USAGE, "avail: --format '%s' unknown (valid: table, csv, json, md)",
		       format);
	if (regex) {
		int rc = regcomp(&a.re, regex, REG_EXTENDED | REG_NOSUB | REG_ICASE);
		char err[256];

		if (rc) {
			regerror(rc, &a.re, err, sizeof(err));
			sc_die(SC_EXIT_USAGE,
			       "avail: -r '%s' is not a valid regular expression: %s", regex, err);
		}
		a.filtered = true;
	}
	if (dev && strcasecmp(dev, "cpu") && strcasecmp(dev, "gpu"))
		sc_die(SC_EXIT_USAGE, "avail: -c '%s' is not a device (valid: CPU, GPU)", dev);
	a.descriptions = desc != NULL;
	if (man) {
		sc_write_man_page(stdout);
		goto out;
	}
	if (completion) {
		if (strcmp(completion, "bash"))
			sc_die(SC_EXIT_USAGE, "avail: --completion='%s': only bash is supported",
			       completion);
		sc_write_bash_completion(stdout);
		goto out;
	}
	if (gen) {
		sc_out_force = force != NULL;
		generate_config(&a, gen);
		goto out;
	}
	if (a.fmt == SC_REPORT_JSON)
		a.doc = json_object();
	any = s || c || hw || dom || pre;
	if (!any || c)
		components(&a);
	if (!any || s)
		settings(&a);
	if (hw) {
		if (dev && !strcasecmp(dev, "gpu"))
			gpu_metrics(&a);
		else
			cpu_events(&a);
	}
	if (dom)
		domains(&a);
	if (pre)
		sc_preset_list(stdout, sc_str(&a.cli.settings, SC_SET_PRESET_DIR));
	if (a.doc) {
		json_dumpf(a.doc, stdout, JSON_INDENT(1));
		putchar('\n');
		json_decref(a.doc);
	}
out:
	if (a.filtered)
		regfree(&a.re);
	sc_cli_free(&a.cli);
	return 0;
}
