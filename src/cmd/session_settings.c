/* SPDX-License-Identifier: MIT */
/*
 * The settings a session was recorded with, read back from its session.json, so that
 * `syscope convert SESSION` builds the outputs the run would have built (formats, filters,
 * labels, summary): what the convert command's own flags and environment do not set comes
 * from the session.
 */
#define PR_FMT "convert: "
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "../store/session.h"
#include "cmd.h"

static void apply_one(struct sc_settings *s, json_t *row, const char *path)
{
	const char *name = json_string_value(json_object_get(row, "name"));
	const char *value = json_string_value(json_object_get(row, "value"));
	const char *source = json_string_value(json_object_get(row, "source"));
	char err[SC_ERRMSG_MAX];
	int id;

	if (!name || !value || !source || !strcmp(source, "default"))
		return;
	id = sc_setting_by_name(name);
	if (id < 0 || s->v[id].layer >= SC_LAYER_ENV)
		return; /* unknown to this version, or given again to convert */
	if (sc_settings_set(s, (enum sc_setting_id)id, value, SC_LAYER_CONFIG, err))
		pr_warn("%s: setting %s of the run ignored: %s", path, name, err);
}

void sc_apply_session_settings(struct sc_settings *s, const char *dir)
{
	char *path = sc_xasprintf("%s/" SC_SESSION_INFO, dir);
	json_error_t jerr;
	json_t *doc = json_load_file(path, 0, &jerr), *rows, *row;
	size_t i;

	/* No session.json: a rewritten binary's session, converted with convert's settings. */
	if (!doc && access(path, F_OK) == 0)
		pr_warn("%s cannot be read (%s, line %d): the run's settings (output formats, "
			"filters, labels) are not known, so the outputs follow convert's own options "
			"and the defaults",
			path, jerr.text, jerr.line);
	rows = doc ? json_object_get(doc, "settings") : NULL;
	json_array_foreach (rows, i, row)
		apply_one(s, row, path);
	json_decref(doc);
	free(path);
}
