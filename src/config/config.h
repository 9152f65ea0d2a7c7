/* SPDX-License-Identifier: MIT */
/*
 * The configuration layers below the command line, used by the profiling verbs:
 *
 *   default < preset < configuration file < SYSCOPE_* environment < command line
 *
 * Each layer (enum sc_setting_layer) writes its own values, and a value never replaces
 * one from a higher layer, so layers may be applied in any order.
 *
 *   preset.c       presets: built-in (compiled in from the JSON files of presets/), a preset folder
 *                  (SYSCOPE_PRESET_DIR, ~/.config/syscope/presets, the installed ones) or a
 *                  file; listing, explaining, exporting the resolved configuration
 *   config_file.c  KEY = value text files and JSON files
 *   schema.c       the JSON Schema of presets, generated from the settings table, and the
 *                  validator presets and JSON files go through
 *
 * Errors are returned as one line naming the file, where in it, and what would be valid;
 * warnings (unknown keys, with the nearest known one) are printed and do not stop a run.
 */
#ifndef SYSCOPE_CONFIG_CONFIG_H
#define SYSCOPE_CONFIG_CONFIG_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "../common/settings.h"

#define SC_CONFIG_ERR 1024

struct sc_preset {
	char *name;
	char *category; /* general, gpu, hpc, tracing, custom */
	char *description;
	char *use_case;
	char *origin;	  /* "built-in" or the file it came from */
	json_t *not_yet;  /* array of what the preset will turn on once syscope has it */
	json_t *settings; /* object: setting name -> value (validated) */
};

/* ---- preset.c ---- */
/* Load a preset by name (built-in or in a preset folder) or path (has a '/' or ends in
 * .json). `preset_dir` is SYSCOPE_PRESET_DIR's value ("" if unset). Returns 0 or -1 with
 * `err` set (an unknown name lists the valid ones and the closest). */
int sc_preset_load(const char *name_or_path, const char *preset_dir, struct sc_preset *p,
		   char err[SC_CONFIG_ERR]);
void sc_preset_free(struct sc_preset *p);
/* Apply a preset's settings with layer SC_LAYER_PRESET. Returns 0 or -1 with `err` set. */
int sc_preset_apply(const struct sc_preset *p, struct sc_settings *s, char err[SC_CONFIG_ERR]);
/* Every preset that can be named, grouped by category, with its description. */
void sc_preset_list(FILE *f, const char *preset_dir);
/* A preset's description, use case and every setting it changes (value, default). */
void sc_preset_explain(FILE *f, const struct sc_preset *p);
/* The resolved configuration as a preset document (settings not at their default). */
json_t *sc_config_export(const struct sc_settings *s);

/* Parse JSON `v` as the value of setting `id` and store it with `layer`. */
int sc_setting_from_json(struct sc_settings *s, int id, json_t *v, enum sc_setting_layer layer,
			 char err[SC_ERRMSG_MAX]);

/* A setting's value as typed JSON (lists as arrays of tokens). */
json_t *sc_setting_json(const struct sc_settings *s, int id);

/* Settings a preset or configuration file may set: every one but the command line's own
 * plumbing (which preset, which files) and hidden ones. */
bool sc_setting_configurable(int id);

/* ---- config_file.c ---- */
/* Read one configuration file, text or JSON (by content), with layer SC_LAYER_CONFIG.
 * Returns 0 or -1 with `err` set ("file:line:column: what"). */
int sc_config_file_load(const char *path, struct sc_settings *s, char err[SC_CONFIG_ERR]);

/* ---- migrate.c: rocprof-sys's settings and presets ---- */
#define SC_MIGRATION_MAX 256

/* Their settings (names without ROCPROFSYS_) and values, collected from one source. */
struct sc_migration {
	char *name[SC_MIGRATION_MAX];
	char *value[SC_MIGRATION_MAX];
	size_t n;
};

void sc_migration_add(struct sc_migration *m, const char *name, const char *value);
void sc_migration_free(struct sc_migration *m);
/* Apply what has an equivalent with `layer` (never over a value of that layer or above);
 * one warning from `origin` names the rest. Returns 0 or -1 with `err` set. */
int sc_migration_apply(const struct sc_migration *m, struct sc_settings *s,
		       enum sc_setting_layer layer, const char *origin, char err[SC_CONFIG_ERR]);
/* "ROCPROFSYS_SAMPLING_FREQ" (any case) -> "SAMPLING_FREQ"; false for other keys. */
bool sc_migration_key(const char *key, char *name, size_t n);
void sc_migration_from_environment(struct sc_migration *m, char *const *env);
/* A rocprof-sys preset document (its nested format), and its settings. */
bool sc_migration_is_their_preset(const json_t *doc);
void sc_migration_from_preset(struct sc_migration *m, const json_t *doc);

/* ---- schema.c ---- */
/* The JSON Schema (draft 2020-12) of preset files. Caller owns the reference. */
json_t *sc_preset_schema(void);
/*
 * Check `doc` against `schema` (the subset of JSON Schema that sc_preset_schema uses: type,
 * properties, required, additionalProperties, enum, items, minimum, maximum,
 * exclusiveMinimum). Unknown properties are warnings (printed, with the nearest known name);
 * anything else is an error: returns -1 with `err` = "ORIGIN: PATH: what, and what is valid".
 */
int sc_schema_validate(const json_t *schema, const json_t *doc, const char *origin,
		       char err[SC_CONFIG_ERR]);

#endif /* SYSCOPE_CONFIG_CONFIG_H */
