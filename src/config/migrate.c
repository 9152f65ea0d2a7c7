/* SPDX-License-Identifier: MIT */
/*
 * Migration from rocprof-sys: its ROCPROFSYS_* environment variables and configuration-file
 * keys, and its preset JSON files, mapped onto syscope's settings. What has no equivalent
 * (yet) is named in one warning per source, never silently dropped.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../common/log.h"
#include "../common/strutil.h"
#include "../common/vec.h"
#include "config.h"

#define THEIR_PREFIX "ROCPROFSYS_"

/* Settings with the same meaning (and value syntax) in both. */
static const struct {
	const char *theirs, *ours;
} same[] = {
	{ "ENABLED", "ENABLED" },
	{ "VERBOSE", "VERBOSE" },
	{ "OUTPUT_PATH", "OUTPUT_PATH" },
	{ "TIME_OUTPUT", "TIME_OUTPUT" },
	{ "TIME_FORMAT", "TIME_FORMAT" },
	{ "USE_SAMPLING", "USE_SAMPLING" },
	{ "SAMPLING_FREQ", "SAMPLING_FREQ" },
	{ "SAMPLING_DELAY", "SAMPLING_DELAY" },
	{ "SAMPLING_CPUTIME", "SAMPLING_CPUTIME" },
	{ "SAMPLING_REALTIME", "SAMPLING_REALTIME" },
	{ "SAMPLING_TIDS", "SAMPLING_TIDS" },
	{ "SAMPLING_INCLUDE_INLINES", "INCLUDE_INLINES" },
	{ "USE_ROCM", "USE_CUDA" },
	{ "USE_PROCESS_SAMPLING", "USE_PROCESS_SAMPLING" },
	{ "PROCESS_SAMPLING_FREQ", "PROCESS_FREQ" },
	{ "USE_AMD_SMI", "USE_NVML" },
	{ "SAMPLING_GPUS", "SAMPLING_GPUS" },
	{ "CONFIG_FILE", "CONFIG_FILE" },
	{ "PRESET_DIR", "PRESET_DIR" },
};

/* A word of one of their lists and ours for the same thing (NULL: no equivalent). */
struct word_map {
	const char *theirs, *ours;
};

/* ROCm tracing domains and the CUDA domain that records the same kind of thing. */
static const struct word_map domains[] = {
	{ "hip_runtime_api", "runtime" },
	{ "hip_api", "runtime" },
	{ "hip_compiler_api", "runtime" },
	{ "hsa_api", "driver" },
	{ "hsa_core_api", "driver" },
	{ "kernel_dispatch", "kernel" },
	{ "memory_copy", "memory" },
	{ "memory_allocation", "memory" },
	{ "marker_api", "nvtx" },
	{ "roctx", "nvtx" },
	{ "kfd_events", "uvm" },
	{ "scratch_memory", NULL },
	{ "rccl_api", NULL },
	{ "rocdecode_api", NULL },
	{ "rocjpeg_api", NULL },
	{ NULL, NULL },
};

/* PAPI presets and the kernel event that counts the same; libpfm4 names ("pmu::EVENT") are
 * kept as they are (libpfm4 resolves them). */
static const struct word_map papi_events[] = {
	{ "PAPI_TOT_INS", "instructions" },	    { "PAPI_TOT_CYC", "cycles" },
	{ "PAPI_REF_CYC", "ref-cycles" },	    { "PAPI_BR_INS", "branches" },
	{ "PAPI_BR_MSP", "branch-misses" },	    { "PAPI_L1_DCM", "L1-dcache-load-misses" },
	{ "PAPI_L1_ICM", "L1-icache-load-misses" }, { "PAPI_L3_TCM", "cache-misses" },
	{ "PAPI_L3_TCA", "cache-references" },	    { "PAPI_TLB_DM", "dTLB-load-misses" },
	{ "PAPI_TLB_IM", "iTLB-load-misses" },	    { NULL, NULL },
};

/* AMD SMI metrics and the NVML metric that measures the same. */
static const struct word_map smi_metrics[] = {
	{ "busy", "busy" },
	{ "temp", "temp" },
	{ "power", "power" },
	{ "mem_usage", "mem_usage" },
	{ "vcn_activity", "encoder" },
	{ "vcn_activity", "decoder" },
	{ "gfx_clock", "clocks" },
	{ "mem_clock", "clocks" },
	{ "pcie", "pcie" },
	{ "xgmi", "nvlink" },
	{ "jpeg_activity", NULL },
	{ "sdma_usage", NULL },
	{ NULL, NULL },
};

void sc_migration_add(struct sc_migration *m, const char *name, const char *value)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->name[i], name)) {
			free(m->value[i]);
			m->value[i] = sc_xstrdup(value);
			return;
		}
	if (m->n == SC_MIGRATION_MAX)
		return;
	m->name[m->n] = sc_xstrdup(name);
	m->value[m->n++] = sc_xstrdup(value);
}

void sc_migration_free(struct sc_migration *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->name[i]);
		free(m->value[i]);
	}
	m->n = 0;
}

static const char *lookup(const struct sc_migration *m, const char *name)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->name[i], name))
			return m->value[i];
	return NULL;
}

static bool truthy(const char *v)
{
	bool b = false;

	return v && !sc_parse_bool(v, &b) && b;
}

static void append(char *buf, size_t n, const char *word)
{
	if (!sc_has_word(buf, word, " "))
		snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", *buf ? " " : "", word);
}

/* Each word of their list `value` as ours, into `out`; words we have no equivalent for
 * into `unmapped`. */
static void translate_words(const char *value, const struct word_map *map, char *out, size_t out_n,
			    char *unmapped, size_t unmapped_n)
{
	char *copy = sc_xstrdup(value), *save = NULL;

	for (char *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
		bool found = false;

		for (size_t k = 0; map[k].theirs; k++) {
			if (strcmp(w, map[k].theirs))
				continue;
			found = true;
			append(map[k].ours ? out : unmapped, map[k].ours ? out_n : unmapped_n,
			       map[k].ours ? map[k].ours : w);
		}
		if (!found)
			append(unmapped, unmapped_n, w);
	}
	free(copy);
}

/* Set `ours` unless a value of `layer` or above is there already. */
static int set_ours(struct sc_settings *s, const char *ours, const char *value,
		    enum sc_setting_layer layer, const char *origin, const char *theirs,
		    char err[SC_CONFIG_ERR])
{
	int id = sc_setting_by_name(ours);
	char e[SC_ERRMSG_MAX];

	if (id < 0 || s->v[id].layer >= layer)
		return 0;
	if (sc_settings_set(s, (enum sc_setting_id)id, value, layer, e)) {
		size_t n = strlen(ours);

		/* "SAMPLING_FREQ 'x' is not valid (...)" as the variable the user set. */
		if (!strncmp(e, ours, n) && e[n] == ' ' && !strchr(theirs, '/'))
			snprintf(err, SC_CONFIG_ERR, "%s: %s%s%s (read as %s%s)", origin,
				 THEIR_PREFIX, theirs, e + n, SC_SETTING_ENV_PREFIX, ours);
		else
			snprintf(err, SC_CONFIG_ERR, "%s: %s%s (as %s%s): %s", origin, THEIR_PREFIX,
				 theirs, SC_SETTING_ENV_PREFIX, ours, e);
		return -1;
	}
	return 0;
}

int sc_migration_apply(const struct sc_migration *m, struct sc_settings *s,
		       enum sc_setting_layer layer, const char *origin, char err[SC_CONFIG_ERR])
{
	char unmapped[1024] = "", formats[64] = "", cuda[128] = "", metrics[128] = "";
	bool output_given = false;

	for (size_t i = 0; i < m->n; i++) {
		const char *name = m->name[i], *value = m->value[i];
		bool known = false;

		for (size_t k = 0; k < sizeof(same) / sizeof(same[0]) && !known; k++)
			if (!strcmp(name, same[k].theirs)) {
				known = true;
				if (set_ours(s, same[k].ours, value, layer, origin, name, err))
					return -1;
			}
		if (!strcmp(name, "SAMPLING_DURATION")) { /* theirs: 0 = until the end */
			char *end;
			double v = strtod(value, &end);

			known = true;
			/* Only their 0 means "unset"; anything else is checked as ours is. */
			if ((end == value || *end || v != 0) &&
			    set_ours(s, "SAMPLING_DURATION", value, layer, origin, name, err))
				return -1;
		}
		if (!strcmp(name, "ROCM_DOMAINS")) {
			known = true;
			translate_words(value, domains, cuda, sizeof(cuda), unmapped,
					sizeof(unmapped));
			if (*cuda && set_ours(s, "CUDA_DOMAINS", cuda, layer, origin, name, err))
				return -1;
		}
		if (!strcmp(name, "PAPI_EVENTS")) {
			char events[512] = "", *copy = sc_xstrdup(value), *save = NULL;

			known = true;
			for (char *w = strtok_r(copy, ", ", &save); w;
			     w = strtok_r(NULL, ", ", &save))
				if (strstr(w, "::"))
					append(events, sizeof(events), w);
				else
					translate_words(w, papi_events, events, sizeof(events),
							unmapped, sizeof(unmapped));
			free(copy);
			if (*events && set_ours(s, "CPU_EVENTS", events, layer, origin, name, err))
				return -1;
		}
		if (!strcmp(name, "SAMPLING_OVERFLOW") ||
		    !strcmp(name, "SAMPLING_OVERFLOW_EVENT") ||
		    !strcmp(name, "SAMPLING_OVERFLOW_FREQ")) {
			/* Theirs: a switch, an event and its threshold; ours: "EVENT PERIOD". */
			const char *event = lookup(m, "SAMPLING_OVERFLOW_EVENT");
			const char *freq = lookup(m, "SAMPLING_OVERFLOW_FREQ");
			char pair[320];

			known = true;
			if (!strcmp(name, "SAMPLING_OVERFLOW") && truthy(value)) {
				snprintf(pair, sizeof(pair), "%s %s",
					 event ? event : "perf::PERF_COUNT_HW_CACHE_REFERENCES",
					 freq && strtod(freq, NULL) > 0 ? freq : "1000000");
				if (set_ours(s, "SAMPLING_OVERFLOW", pair, layer, origin, name,
					     err))
					return -1;
			}
		}
		if (!strcmp(name, "AMD_SMI_METRICS")) {
			known = true;
			translate_words(value, smi_metrics, metrics, sizeof(metrics), unmapped,
					sizeof(unmapped));
			if (*metrics &&
			    set_ours(s, "NVML_METRICS", metrics, layer, origin, name, err))
				return -1;
		}
		if (!strcmp(name, "TRACE") || !strcmp(name, "PROFILE") ||
		    !strcmp(name, "USE_ROCPD") || !strcmp(name, "TEXT_OUTPUT") ||
		    !strcmp(name, "JSON_OUTPUT")) {
			bool b;

			known = output_given = true;
			if (sc_parse_bool(value, &b)) { /* a switch nobody could read as one */
				snprintf(err, SC_CONFIG_ERR,
					 "%s: %s%s '%s' is not valid (valid: true or false; also "
					 "1/0, on/off, yes/no)",
					 origin, THEIR_PREFIX, name, value);
				return -1;
			}
		}
		if (!known)
			append(unmapped, sizeof(unmapped), name);
	}
	if (output_given) { /* their output switches, as one list of formats */
		const char *profile = lookup(m, "PROFILE");

		if (truthy(lookup(m, "USE_ROCPD")))
			append(formats, sizeof(formats), "rocpd");
		if (truthy(lookup(m, "TRACE")))
			append(formats, sizeof(formats), "pftrace");
		if (truthy(profile) &&
		    (!lookup(m, "TEXT_OUTPUT") || truthy(lookup(m, "TEXT_OUTPUT"))))
			append(formats, sizeof(formats), "text");
		if (truthy(profile) &&
		    (!lookup(m, "JSON_OUTPUT") || truthy(lookup(m, "JSON_OUTPUT"))))
			append(formats, sizeof(formats), "json");
		if (*formats &&
		    set_ours(s, "OUTPUT_FORMAT", formats, layer, origin, "TRACE/PROFILE", err))
			return -1;
	}
	if (*unmapped)
		pr_warn("%s: rocprof-sys settings without a syscope equivalent (ignored): %s",
			origin, unmapped);
	return 0;
}

bool sc_migration_key(const char *key, char *name, size_t n)
{
	size_t p = strlen(THEIR_PREFIX), i;

	if (strncasecmp(key, THEIR_PREFIX, p))
		return false;
	for (i = 0; key[p + i] && i + 1 < n; i++)
		name[i] = (char)toupper((unsigned char)key[p + i]);
	name[i] = '\0';
	return true;
}

void sc_migration_from_environment(struct sc_migration *m, char *const *env)
{
	for (; env && *env; env++) {
		const char *eq = strchr(*env, '=');
		char key[256], name[256];

		if (!eq || (size_t)(eq - *env) >= sizeof(key))
			continue;
		snprintf(key, sizeof(key), "%.*s", (int)(eq - *env), *env);
		if (sc_migration_key(key, name, sizeof(name)))
			sc_migration_add(m, name, eq + 1);
	}
}

/* ---- rocprof-sys preset files ---- */

bool sc_migration_is_their_preset(const json_t *doc)
{
	static const char *const sections[] = { "tracing", "profiling", "sampling",
						"domains", "output",	"hardware_counters",
						"causal",  "advanced" };

	if (!json_is_object(doc) || json_object_get(doc, "settings"))
		return false;
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++)
		if (json_object_get(doc, sections[i]))
			return true;
	return false;
}

/* A leaf of their format: {"enabled": bool} or {"value": x}, as text. */
static bool leaf(const json_t *o, char *buf, size_t n)
{
	const json_t *v = json_object_get(o, "enabled");

	if (!v)
		v = json_object_get(o, "value");
	if (json_is_boolean(v))
		snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
	else if (json_is_integer(v))
		snprintf(buf, n, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, n, "%g", json_real_value(v));
	else if (json_is_string(v))
		snprintf(buf, n, "%s", json_string_value(v));
	else
		return false;
	return true;
}

static const json_t *at(const json_t *doc, const char *path)
{
	char key[64];
	const char *dot;

	while (doc && (dot = strchr(path, '.'))) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		doc = json_object_get(doc, key);
		path = dot + 1;
	}
	return doc ? json_object_get(doc, path) : NULL;
}

void sc_migration_from_preset(struct sc_migration *m, const json_t *doc)
{
	/* Their preset schema's leaves and the ROCPROFSYS_ setting each stands for. */
	static const struct {
		const char *path, *setting;
	} leaves[] = {
		{ "tracing", "TRACE" },
		{ "profiling", "PROFILE" },
		{ "profiling.flat_profile", "FLAT_PROFILE" },
		{ "sampling", "USE_SAMPLING" },
		{ "sampling.frequency_hz", "SAMPLING_FREQ" },
		{ "sampling.delay_sec", "SAMPLING_DELAY" },
		{ "sampling.duration_sec", "SAMPLING_DURATION" },
		{ "sampling.cpus", "SAMPLING_CPUS" },
		{ "sampling.gpus", "SAMPLING_GPUS" },
		{ "domains.gpu", "USE_AMD_SMI" },
		{ "domains.rocm", "USE_ROCM" },
		{ "domains.cpu", "CPU_FREQ_ENABLED" },
		{ "output.path", "OUTPUT_PATH" },
		{ "output.time_output", "TIME_OUTPUT" },
		{ "output.rocpd_output", "USE_ROCPD" },
		{ "hardware_counters", "HARDWARE_COUNTERS" },
		{ "causal", "USE_CAUSAL" },
	};
	const json_t *api = at(doc, "domains.rocm.api_domains");
	const json_t *par = at(doc, "domains.parallel.runtimes");
	const char *key;
	json_t *v;
	char buf[512], list[512] = "";

	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		const json_t *o = at(doc, leaves[i].path);

		if (o && leaf(o, buf, sizeof(buf)))
			sc_migration_add(m, leaves[i].setting, buf);
	}
	json_object_foreach ((json_t *)api, key, v)
		if (leaf(v, buf, sizeof(buf)) && !strcmp(buf, "true"))
			append(list, sizeof(list), key);
	if (*list) {
		for (char *c = list; *c; c++)
			if (*c == ' ')
				*c = ',';
		sc_migration_add(m, "ROCM_DOMAINS", list);
	}
	json_object_foreach ((json_t *)par, key, v)
		if (leaf(v, buf, sizeof(buf)) && !strcmp(buf, "true")) {
			char name[64];

			snprintf(name, sizeof(name), "USE_%s", key);
			for (char *c = name; *c; c++)
				*c = (char)toupper((unsigned char)*c);
			sc_migration_add(m, name, "true");
		}
}
