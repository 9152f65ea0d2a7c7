/* SPDX-License-Identifier: MIT */
/*
 * Presets: JSON files of presets/ (see presets/README.md), compiled into syscope and
 * installed in <prefix>/share/syscope/presets. A name is looked up in SYSCOPE_PRESET_DIR,
 * ~/.config/syscope/presets, the installed folder, then among the built-ins: the first hit
 * wins, so a user's file can replace a built-in of the same name.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/install.h"
#include "../common/log.h"
#include "../common/strutil.h"
#include "../common/vec.h"
#include "config.h"

struct sc_embedded {
	const char *name;
	const unsigned char *data;
	size_t size;
};
extern const struct sc_embedded sc_builtin_presets[]; /* generated: presets_embedded.c */

#define MAX_DIRS 3
#define SUFFIX ".json"

bool sc_setting_configurable(int id)
{
	return id >= 0 && id < SC_SETTING_COUNT && !(sc_setting_defs[id].flags & SC_SF_HIDDEN) &&
	       id != SC_SET_PRESET && id != SC_SET_CONFIG_FILE && id != SC_SET_PRESET_DIR;
}

int sc_setting_from_json(struct sc_settings *s, int id, json_t *v, enum sc_setting_layer layer,
			 char err[SC_ERRMSG_MAX])
{
	char buf[4096];
	size_t used = 0, i;
	json_t *e;

	switch (json_typeof(v)) {
	case JSON_TRUE:
	case JSON_FALSE:
		snprintf(buf, sizeof(buf), "%s", json_is_true(v) ? "true" : "false");
		break;
	case JSON_INTEGER:
		snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
		break;
	case JSON_REAL:
		snprintf(buf, sizeof(buf), "%.17g", json_real_value(v));
		break;
	case JSON_STRING:
		snprintf(buf, sizeof(buf), "%s", json_string_value(v));
		break;
	case JSON_ARRAY:
		buf[0] = '\0';
		json_array_foreach (v, i, e) {
			if (!json_is_string(e)) {
				snprintf(err, SC_ERRMSG_MAX, "%s: list items must be strings",
					 sc_setting_defs[id].name);
				return -EINVAL;
			}
			if (used < sizeof(buf))
				used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s",
							 i ? " " : "", json_string_value(e));
		}
		break;
	default:
		snprintf(err, SC_ERRMSG_MAX,
			 "%s: a value must be a boolean, number, string or list",
			 sc_setting_defs[id].name);
		return -EINVAL;
	}
	return sc_settings_set(s, (enum sc_setting_id)id, buf, layer, err);
}

/* ---- finding presets ---- */

static unsigned preset_dirs(const char *preset_dir, char dirs[MAX_DIRS][PATH_MAX])
{
	const char *home = getenv("HOME");
	char *installed = sc_install_path("share/syscope/presets");
	unsigned k = 0;

	if (preset_dir && *preset_dir)
		snprintf(dirs[k++], PATH_MAX, "%s", preset_dir);
	if (home && *home)
		snprintf(dirs[k++], PATH_MAX, "%s/.config/syscope/presets", home);
	if (installed && strlen(installed) < PATH_MAX)
		snprintf(dirs[k++], PATH_MAX, "%s", installed);
	free(installed);
	return k;
}

static const struct sc_embedded *builtin(const char *name)
{
	for (const struct sc_embedded *b = sc_builtin_presets; b->name; b++)
		if (!strncmp(b->name, name, strlen(name)) &&
		    !strcmp(b->name + strlen(name), SUFFIX))
			return b;
	return NULL;
}

/* Every preset name, first occurrence first (caller frees the VEC and its strings). */
typedef VEC(char *) name_vec;

static void add_name(name_vec *names, const char *name)
{
	for (size_t i = 0; i < names->n; i++)
		if (!strcmp(names->v[i], name))
			return;
	*VEC_PUSH(names) = sc_xstrdup(name);
}

static void all_names(const char *preset_dir, name_vec *names)
{
	char dirs[MAX_DIRS][PATH_MAX];
	unsigned nd = preset_dirs(preset_dir, dirs);

	for (unsigned d = 0; d < nd; d++) {
		struct dirent **list = NULL;
		int n = scandir(dirs[d], &list, NULL, alphasort);

		for (int i = 0; i < n; i++) {
			const char *f = list[i]->d_name;

			if (sc_ends_with(f, SUFFIX) && strcmp(f, "schema.json")) {
				char name[256];

				snprintf(name, sizeof(name), "%.*s",
					 (int)(strlen(f) - strlen(SUFFIX)), f);
				add_name(names, name);
			}
			free(list[i]);
		}
		free(list);
	}
	for (const struct sc_embedded *b = sc_builtin_presets; b->name; b++) {
		char name[256];

		snprintf(name, sizeof(name), "%.*s", (int)(strlen(b->name) - strlen(SUFFIX)),
			 b->name);
		add_name(names, name);
	}
}

static void free_names(name_vec *names)
{
	for (size_t i = 0; i < names->n; i++)
		free(names->v[i]);
	VEC_FREE(names);
}

/* ---- loading ---- */

static char *dup_string(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return sc_xstrdup(s ? s : "");
}

/* A rocprof-sys preset as one of ours: its metadata, and the settings that have an
 * equivalent (the others named in a warning). */
static int convert_theirs(json_t *doc, const char *origin, char err[SC_CONFIG_ERR])
{
	struct sc_migration m = { .n = 0 };
	json_t *theirs = json_object_get(doc, "metadata"), *meta = json_object(), *settings;
	static const char *const keys[] = { "name", "description", "use_case", "category" };
	char where[PATH_MAX + 40];
	struct sc_settings s;
	int rc;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *v = json_object_get(theirs, keys[i]);

		if (json_is_string(v))
			json_object_set(meta, keys[i], v);
	}
	if (!json_object_get(meta, "name"))
		json_object_set_new(meta, "name", json_string(origin));
	if (!json_object_get(meta, "description"))
		json_object_set_new(meta, "description", json_string("a rocprof-sys preset"));
	if (sc_settings_init(&s)) {
		json_decref(meta);
		return -1;
	}
	snprintf(where, sizeof(where), "rocprof-sys preset %s", origin);
	sc_migration_from_preset(&m, doc);
	rc = sc_migration_apply(&m, &s, SC_LAYER_PRESET, where, err);
	settings = json_object();
	for (int id = 0; !rc && id < SC_SETTING_COUNT; id++)
		if (s.v[id].layer == SC_LAYER_PRESET && sc_setting_configurable(id))
			json_object_set_new(settings, sc_setting_defs[id].name,
					    sc_setting_json(&s, id));
	json_object_clear(doc);
	json_object_set_new(doc, "metadata", meta);
	json_object_set_new(doc, "settings", settings);
	sc_migration_free(&m);
	sc_settings_free(&s);
	return rc;
}

static int parse(json_t *doc, const char *origin, struct sc_preset *p, char err[SC_CONFIG_ERR])
{
	json_t *schema, *meta;
	int rc;

	if (sc_migration_is_their_preset(doc) && convert_theirs(doc, origin, err)) {
		json_decref(doc);
		return -1;
	}
	schema = sc_preset_schema();
	rc = sc_schema_validate(schema, doc, origin, err);

	json_decref(schema);
	if (rc) {
		json_decref(doc);
		return -1;
	}
	meta = json_object_get(doc, "metadata");
	p->name = dup_string(meta, "name");
	p->category = dup_string(meta, "category");
	if (!p->category[0]) {
		free(p->category);
		p->category = sc_xstrdup("custom");
	}
	p->description = dup_string(meta, "description");
	p->use_case = dup_string(meta, "use_case");
	p->origin = sc_xstrdup(origin);
	p->not_yet = json_incref(json_object_get(meta, "not_yet_available"));
	p->settings = json_incref(json_object_get(doc, "settings"));
	json_decref(doc);
	return 0;
}

static int load_file(const char *path, struct sc_preset *p, char err[SC_CONFIG_ERR])
{
	json_error_t je;
	json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);

	if (!doc) {
		if (je.line < 0)
			snprintf(err, SC_CONFIG_ERR, "cannot read preset %s: %s", path, je.text);
		else
			snprintf(err, SC_CONFIG_ERR, "%s:%d:%d: %s", path, je.line, je.column,
				 je.text);
		return -1;
	}
	return parse(doc, path, p, err);
}

int sc_preset_load(const char *name_or_path, const char *preset_dir, struct sc_preset *p,
		   char err[SC_CONFIG_ERR])
{
	char dirs[MAX_DIRS][PATH_MAX], path[PATH_MAX + 300];
	const struct sc_embedded *b;
	unsigned nd;

	memset(p, 0, sizeof(*p));
	if (strchr(name_or_path, '/') || sc_ends_with(name_or_path, SUFFIX)) {
		if (strstr(name_or_path, "..") && !strchr(name_or_path, '/')) {
			snprintf(err, SC_CONFIG_ERR, "preset '%s' is not a valid name or path",
				 name_or_path);
			return -1;
		}
		return load_file(name_or_path, p, err);
	}
	nd = preset_dirs(preset_dir, dirs);
	for (unsigned d = 0; d < nd; d++) {
		if (snprintf(path, sizeof(path), "%s/%s%s", dirs[d], name_or_path, SUFFIX) <
			    (int)sizeof(path) &&
		    !access(path, R_OK))
			return load_file(path, p, err);
	}
	b = builtin(name_or_path);
	if (b) {
		json_error_t je;
		json_t *doc = json_loadb((const char *)b->data, b->size, 0, &je);

		if (!doc) { /* a build defect: the tests load every built-in */
			snprintf(err, SC_CONFIG_ERR, "built-in preset %s:%d:%d: %s", b->name,
				 je.line, je.column, je.text);
			return -1;
		}
		return parse(doc, "built-in", p, err);
	}
	{
		name_vec names = { 0 };
		size_t used;
		const char *near;

		all_names(preset_dir, &names);
		near = sc_nearest(name_or_path, (const char *const *)names.v, names.n);
		used = (size_t)snprintf(
			err, SC_CONFIG_ERR, "unknown preset '%s'%s%s%s; valid: ", name_or_path,
			near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
		for (size_t i = 0; i < names.n && used < SC_CONFIG_ERR; i++)
			used += (size_t)snprintf(err + used, SC_CONFIG_ERR - used, "%s%s",
						 i ? ", " : "", names.v[i]);
		free_names(&names);
	}
	return -1;
}

void sc_preset_free(struct sc_preset *p)
{
	free(p->name);
	free(p->category);
	free(p->description);
	free(p->use_case);
	free(p->origin);
	json_decref(p->not_yet);
	json_decref(p->settings);
	memset(p, 0, sizeof(*p));
}

int sc_preset_apply(const struct sc_preset *p, struct sc_settings *s, char err[SC_CONFIG_ERR])
{
	const char *key;
	json_t *v;

	json_object_foreach (p->settings, key, v) {
		int id = sc_setting_by_name(key);
		char e[SC_ERRMSG_MAX];

		if (!sc_setting_configurable(id))
			continue; /* unknown: warned about when the preset was validated */
		if (sc_setting_from_json(s, id, v, SC_LAYER_PRESET, e)) {
			snprintf(err, SC_CONFIG_ERR, "preset %s (%s): %s", p->name, p->origin, e);
			return -1;
		}
	}
	return 0;
}

/* ---- listing, explaining, exporting ---- */

/* A preset of the installed folder (shipped with syscope, like the built-ins). */
static bool installed(const char *origin, const char *preset_dir)
{
	char dirs[MAX_DIRS][PATH_MAX];
	unsigned n = preset_dirs(preset_dir, dirs);
	size_t len = n ? strlen(dirs[n - 1]) : 0;

	return n && !strncmp(origin, dirs[n - 1], len) && origin[len] == '/' &&
	       strstr(dirs[n - 1], "/share/syscope/presets");
}

void sc_preset_list(FILE *f, const char *preset_dir)
{
	static const char *const order[] = { "general", "gpu", "hpc", "tracing", "custom" };
	name_vec names = { 0 };
	struct sc_preset *ps;

	all_names(preset_dir, &names);
	ps = sc_xcalloc(names.n + 1, sizeof(*ps));
	for (size_t i = 0; i < names.n; i++) {
		char err[SC_CONFIG_ERR];

		if (sc_preset_load(names.v[i], preset_dir, &ps[i], err))
			pr_warn("%s", err);
	}
	for (size_t c = 0; c < sizeof(order) / sizeof(order[0]); c++) {
		bool header = false;

		for (size_t i = 0; i < names.n; i++) {
			bool other = c + 1 == sizeof(order) / sizeof(order[0]);

			if (!ps[i].name)
				continue;
			for (size_t k = 0; other && k + 1 < sizeof(order) / sizeof(order[0]); k++)
				other = strcmp(ps[i].category, order[k]) != 0;
			if (strcmp(ps[i].category, order[c]) && !other)
				continue;
			if (!header)
				fprintf(f, "%s%s:\n", c ? "\n" : "", order[c]);
			header = true;
			fprintf(f, "  %-22s %s\n", names.v[i], ps[i].description);
			if (strcmp(ps[i].origin, "built-in") &&
			    !installed(ps[i].origin, preset_dir))
				fprintf(f, "  %-22s (%s)\n", "", ps[i].origin);
		}
	}
	fprintf(f, "\n'--explain=NAME' shows what a preset sets; '--preset=NAME' uses it.\n");
	for (size_t i = 0; i < names.n; i++)
		sc_preset_free(&ps[i]);
	free(ps);
	free_names(&names);
}

void sc_preset_explain(FILE *f, const struct sc_preset *p)
{
	struct sc_settings s;
	const char *key;
	size_t i;
	json_t *v;

	fprintf(f, "%s (%s; %s)\n  %s\n", p->name, p->category, p->origin, p->description);
	if (p->use_case[0])
		fprintf(f, "  Use it for: %s\n", p->use_case);
	if (json_array_size(p->not_yet)) {
		fprintf(f, "  Not available in this version yet:");
		json_array_foreach (p->not_yet, i, v)
			fprintf(f, "%s %s", i ? "," : "", json_string_value(v));
		fputc('\n', f);
	}
	fprintf(f,
		"  Settings (command line, environment and configuration files override them):\n");
	if (sc_settings_init(&s))
		return;
	json_object_foreach (p->settings, key, v) {
		int id = sc_setting_by_name(key);
		char err[SC_ERRMSG_MAX];

		if (!sc_setting_configurable(id) ||
		    sc_setting_from_json(&s, id, v, SC_LAYER_PRESET, err))
			continue;
		fprintf(f, "    %s%-24s = %-28s (default: %s)\n", SC_SETTING_ENV_PREFIX,
			sc_setting_defs[id].name, s.v[id].text,
			*sc_setting_defs[id].defval ? sc_setting_defs[id].defval : "unset");
	}
	sc_settings_free(&s);
}

json_t *sc_setting_json(const struct sc_settings *s, int id)
{
	const struct sc_setting_value *v = &s->v[id];

	switch (sc_setting_defs[id].type) {
	case SC_T_BOOL:
		return json_boolean(v->b);
	case SC_T_INT:
		return json_integer(v->i);
	case SC_T_DOUBLE:
		return json_real(v->d);
	case SC_T_LIST: {
		json_t *a = json_array();
		const char *p = v->text;

		while (*p) {
			size_t n = strcspn(p, " ");

			if (n)
				json_array_append_new(a, json_stringn(p, n));
			p += n + (p[n] == ' ');
		}
		return a;
	}
	default:
		return json_string(v->text);
	}
}

json_t *sc_config_export(const struct sc_settings *s)
{
	json_t *settings = json_object();
	char when[64], desc[200];
	time_t now = time(NULL);

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&now));
	snprintf(desc, sizeof(desc), "The configuration syscope %s resolved on %s", SYSCOPE_VERSION,
		 when);
	for (int id = 0; id < SC_SETTING_COUNT; id++)
		if (sc_setting_configurable(id) && s->v[id].layer != SC_LAYER_DEFAULT &&
		    s->v[id].set)
			json_object_set_new(settings, sc_setting_defs[id].name,
					    sc_setting_json(s, id));
	return json_pack("{s:s, s:{s:s, s:s, s:s, s:s}, s:o}", "$schema", "schema.json", "metadata",
			 "name", "exported", "category", "custom", "description", desc, "use_case",
			 "Repeating a run's configuration: --preset=FILE", "settings", settings);
}
