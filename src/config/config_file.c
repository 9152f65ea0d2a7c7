/* SPDX-License-Identifier: MIT */
/*
 * Configuration files, applied with layer SC_LAYER_CONFIG (below the environment and the
 * command line, above presets). Two forms, told apart by the first character:
 *
 *   text   one setting per line, KEY = value; KEY is a setting's name with or without the
 *          SYSCOPE_ prefix, in any case; '#' starts a comment; `$NAME = value` defines a
 *          variable, and $NAME or ${NAME} in later values is replaced by it (or, failing
 *          that, by the environment variable NAME)
 *   JSON   an object of settings ({"SAMPLING_FREQ": 500, ...}), or a preset document
 *          ({"settings": {...}}, checked against the preset schema)
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/safe_output.h"
#include "../common/strutil.h"
#include "../common/vec.h"
#include "config.h"

#define MAX_LINE 8192
#define MAX_VARS 256
#define SC_CONFIG_MAX_SIZE (16 << 20) /* far above any real one; bounds a mistaken file */

struct variables {
	char *name[MAX_VARS];
	char *value[MAX_VARS];
	unsigned n;
};

/* The setting a key names ("SYSCOPE_SAMPLING_FREQ", "sampling_freq", "sampling-freq"). */
static int setting_of_key(const char *key)
{
	char up[160];
	size_t i;

	for (i = 0; key[i] && i + 1 < sizeof(up); i++)
		up[i] = key[i] == '-' ? '_' : (char)toupper((unsigned char)key[i]);
	up[i] = '\0';
	if (!strncmp(up, SC_SETTING_ENV_PREFIX, strlen(SC_SETTING_ENV_PREFIX)))
		memmove(up, up + strlen(SC_SETTING_ENV_PREFIX),
			strlen(up) - strlen(SC_SETTING_ENV_PREFIX) + 1);
	return sc_setting_by_name(up);
}

static void warn_unknown_key(const char *where, const char *key)
{
	const char *names[SC_SETTING_COUNT];
	size_t n = 0;
	const char *near;
	char up[160];
	size_t i;

	for (int id = 0; id < SC_SETTING_COUNT; id++)
		if (sc_setting_configurable(id))
			names[n++] = sc_setting_defs[id].name;
	for (i = 0; key[i] && i + 1 < sizeof(up); i++)
		up[i] = (char)toupper((unsigned char)key[i]);
	up[i] = '\0';
	near = sc_nearest(strncmp(up, "SYSCOPE_", 8) ? up : up + 8, names, n);
	pr_warn("%s: unknown setting '%s' ignored%s%s%s", where, key,
		near ? " (did you mean " SC_SETTING_ENV_PREFIX : "", near ? near : "",
		near ? "?)" : "");
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/* Replace $NAME and ${NAME} in `in`; returns 0 or the column of an unknown variable + 1. */
static size_t expand(const struct variables *vars, const char *in, char *out, size_t n)
{
	size_t used = 0;

	for (const char *p = in; *p && used + 1 < n;) {
		char name[128];
		const char *val = NULL;
		size_t len = 0;
		bool braced;

		if (*p != '$') {
			out[used++] = *p++;
			continue;
		}
		braced = p[1] == '{';
		for (const char *q = p + 1 + braced;
		     (isalnum((unsigned char)*q) || *q == '_') && len + 1 < sizeof(name); q++)
			name[len++] = *q;
		name[len] = '\0';
		if (!len || (braced && p[1 + braced + len] != '}')) {
			out[used++] = *p++;
			continue;
		}
		for (unsigned i = 0; i < vars->n && !val; i++)
			if (!strcmp(vars->name[i], name))
				val = vars->value[i];
		if (!val)
			val = getenv(name);
		if (!val)
			return (size_t)(p - in) + 1;
		used += (size_t)snprintf(out + used, n - used, "%s", val);
		p += 1 + braced + len + braced;
	}
	out[used < n ? used : n - 1] = '\0';
	return 0;
}

static int load_text(const char *path, FILE *f, struct sc_settings *s, char err[SC_CONFIG_ERR])
{
	struct variables vars = { .n = 0 };
	struct sc_migration theirs = { .n = 0 };
	char their_name[160];
	char line[MAX_LINE], value[MAX_LINE];
	int lineno = 0, rc = 0;

	while (!rc && fgets(line, sizeof(line), f)) {
		char *hash, *eq, *key, *raw;
		char where[600], e[SC_ERRMSG_MAX];
		size_t bad;
		int id;

		lineno++;
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		key = trim(line);
		if (!*key)
			continue;
		eq = strchr(key, '=');
		snprintf(where, sizeof(where), "%s:%d", path, lineno);
		if (!eq) {
			snprintf(err, SC_CONFIG_ERR, "%s:%d:%d: expected KEY = value", path, lineno,
				 (int)(key - line) + 1);
			rc = -1;
			break;
		}
		*eq = '\0';
		raw = trim(eq + 1);
		key = trim(key);
		bad = expand(&vars, raw, value, sizeof(value));
		if (bad) {
			snprintf(err, SC_CONFIG_ERR,
				 "%s:%d:%d: unknown variable (define it first: $NAME = value)",
				 path, lineno, (int)(raw - line + (long)bad));
			rc = -1;
			break;
		}
		if (key[0] == '$') {
			if (vars.n == MAX_VARS) {
				snprintf(err, SC_CONFIG_ERR, "%s: more than %d variables", where,
					 MAX_VARS);
				rc = -1;
				break;
			}
			vars.name[vars.n] = sc_xstrdup(key + 1);
			vars.value[vars.n++] = sc_xstrdup(value);
			continue;
		}
		if (sc_migration_key(key, their_name, sizeof(their_name))) {
			sc_migration_add(&theirs, their_name, value);
			continue;
		}
		id = setting_of_key(key);
		if (!sc_setting_configurable(id)) {
			warn_unknown_key(where, key);
			continue;
		}
		if (sc_settings_set(s, (enum sc_setting_id)id, value, SC_LAYER_CONFIG, e)) {
			snprintf(err, SC_CONFIG_ERR, "%s:%d:%d: %s", path, lineno,
				 (int)(raw - line) + 1, e);
			rc = -1;
		}
	}
	for (unsigned i = 0; i < vars.n; i++) {
		free(vars.name[i]);
		free(vars.value[i]);
	}
	if (!rc && theirs.n)
		rc = sc_migration_apply(&theirs, s, SC_LAYER_CONFIG, path, err);
	sc_migration_free(&theirs);
	return rc;
}

static int load_json(const char *path, FILE *f, struct sc_settings *s, char err[SC_CONFIG_ERR])
{
	json_error_t je;
	json_t *doc = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
	struct sc_migration theirs = { .n = 0 };
	json_t *settings;
	const char *key;
	json_t *v;
	int rc = 0;

	if (!doc) {
		snprintf(err, SC_CONFIG_ERR, "%s:%d:%d: %s", path, je.line, je.column, je.text);
		return -1;
	}
	if (!json_is_object(doc)) {
		snprintf(err, SC_CONFIG_ERR, "%s: expected an object of settings", path);
		json_decref(doc);
		return -1;
	}
	settings = json_object_get(doc, "settings");
	if (settings) { /* a preset document */
		json_t *schema = sc_preset_schema();

		if (!json_object_get(doc, "metadata"))
			json_object_set_new(doc, "metadata",
					    json_pack("{s:s, s:s}", "name", path, "description",
						      "configuration file"));
		rc = sc_schema_validate(schema, doc, path, err);
		json_decref(schema);
	} else {
		settings = doc;
	}
	json_object_foreach (rc ? NULL : settings, key, v) {
		int id = setting_of_key(key);
		char e[SC_ERRMSG_MAX], name[160];

		if (sc_migration_key(key, name, sizeof(name))) {
			char *text = json_is_string(v) ? sc_xstrdup(json_string_value(v))
						       : json_dumps(v, JSON_ENCODE_ANY);

			sc_migration_add(&theirs, name, text ? text : "");
			free(text);
			continue;
		}
		if (!sc_setting_configurable(id)) {
			if (settings == doc && strcmp(key, "$schema"))
				warn_unknown_key(path, key);
			continue;
		}
		if (sc_setting_from_json(s, id, v, SC_LAYER_CONFIG, e)) {
			snprintf(err, SC_CONFIG_ERR, "%s: %s", path, e);
			rc = -1;
			break;
		}
	}
	if (!rc && theirs.n)
		rc = sc_migration_apply(&theirs, s, SC_LAYER_CONFIG, path, err);
	sc_migration_free(&theirs);
	json_decref(doc);
	return rc;
}

/* The file opened for reading if it is a regular file, else NULL with `err` set. Opened
 * without blocking, and checked before any read: a FIFO or /dev/zero would hang or never
 * end. */
static FILE *open_regular(const char *path, char err[SC_CONFIG_ERR])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	FILE *f;

	if (fd < 0) {
		snprintf(err, SC_CONFIG_ERR, "cannot read configuration file %s: %s", path,
			 strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, SC_CONFIG_ERR,
			 "configuration file %s is %s; give a regular file (KEY = value lines, or "
			 "JSON)",
			 path, sc_file_kind(st.st_mode));
		close(fd);
		return NULL;
	}
	if (st.st_size > SC_CONFIG_MAX_SIZE) {
		snprintf(err, SC_CONFIG_ERR,
			 "configuration file %s is %lld bytes; a configuration file is at most %d",
			 path, (long long)st.st_size, SC_CONFIG_MAX_SIZE);
		close(fd);
		return NULL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		snprintf(err, SC_CONFIG_ERR, "cannot read configuration file %s: %s", path,
			 strerror(errno));
		close(fd);
	}
	return f;
}

int sc_config_file_load(const char *path, struct sc_settings *s, char err[SC_CONFIG_ERR])
{
	FILE *f = open_regular(path, err);
	int c, rc;

	if (!f)
		return -1;
	do
		c = fgetc(f);
	while (c != EOF && isspace(c));
	rewind(f);
	rc = c == '{' ? load_json(path, f, s, err) : load_text(path, f, s, err);
	fclose(f);
	return rc;
}
