/* SPDX-License-Identifier: MIT */
/*
 * The JSON Schema of preset files, made from the settings table (so it can never disagree
 * with it), and a validator for the part of JSON Schema it uses. `make` installs the schema
 * beside the presets, for editors; syscope checks every preset it loads against it.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../common/log.h"
#include "../common/strutil.h"
#include "config.h"

static const char *const categories[] = { "general", "gpu", "hpc", "tracing", "custom" };

static json_t *string_enum(const char *choices)
{
	json_t *e = json_array();
	const char *p = choices;

	while (p && *p) {
		size_t n = strcspn(p, ",");

		json_array_append_new(e, json_stringn(p, n));
		p += n + (p[n] == ',');
	}
	return e;
}

static json_t *setting_schema(const struct sc_setting_def *d)
{
	json_t *o = json_object();

	json_object_set_new(o, "description", json_string(d->help));
	switch (d->type) {
	case SC_T_BOOL:
		json_object_set_new(o, "type", json_string("boolean"));
		break;
	case SC_T_INT:
		json_object_set_new(o, "type", json_string("integer"));
		json_object_set_new(o, "minimum", json_integer((json_int_t)d->min));
		json_object_set_new(o, "maximum", json_integer((json_int_t)d->max));
		break;
	case SC_T_DOUBLE:
		json_object_set_new(o, "type", json_string("number"));
		json_object_set_new(o, (d->flags & SC_SF_GT_MIN) ? "exclusiveMinimum" : "minimum",
				    json_real(d->min));
		json_object_set_new(o, "maximum", json_real(d->max));
		break;
	case SC_T_STRING:
		json_object_set_new(o, "type", json_string("string"));
		break;
	case SC_T_ENUM:
		json_object_set_new(o, "type", json_string("string"));
		json_object_set_new(o, "enum", string_enum(d->choices));
		break;
	case SC_T_LIST: {
		json_t *items = json_object();

		/* An array of tokens, or the tokens in one string ("rocpd text"). */
		json_object_set_new(o, "type", json_pack("[ss]", "array", "string"));
		json_object_set_new(items, "type", json_string("string"));
		if (d->choices)
			json_object_set_new(items, "enum", string_enum(d->choices));
		json_object_set_new(o, "items", items);
		break;
	}
	}
	return o;
}

json_t *sc_preset_schema(void)
{
	json_t *settings = json_object(), *cats = json_array();

	for (int id = 0; id < SC_SETTING_COUNT; id++)
		if (sc_setting_configurable(id))
			json_object_set_new(settings, sc_setting_defs[id].name,
					    setting_schema(&sc_setting_defs[id]));
	for (size_t i = 0; i < sizeof(categories) / sizeof(categories[0]); i++)
		json_array_append_new(cats, json_string(categories[i]));
	return json_pack(
		"{s:s, s:s, s:s, s:s, s:[ss], s:{s:{s:s}, s:{s:s, s:[ss], s:o, s:b}, "
		"s:{s:s, s:o, s:b}}, s:b}",
		"$schema", "https://json-schema.org/draft/2020-12/schema", "title",
		"syscope preset", "description",
		"A syscope preset: what it is for, and the settings it gives (SYSCOPE_<NAME> "
		"without the prefix). Command-line flags, the environment and configuration files "
		"override it.",
		"type", "object", "required", "metadata", "settings", "properties", "$schema",
		"type", "string", "metadata", "type", "object", "required", "name", "description",
		"properties",
		json_pack("{s:{s:s}, s:{s:s, s:o}, s:{s:s}, s:{s:s}, s:{s:s, s:{s:s}}}", "name",
			  "type", "string", "category", "type", "string", "enum", cats,
			  "description", "type", "string", "use_case", "type", "string",
			  "not_yet_available", "type", "array", "items", "type", "string"),
		"additionalProperties", 0, "settings", "type", "object", "properties", settings,
		"additionalProperties", 0, "additionalProperties", 0);
}

/* ---- validation ---- */

struct validation {
	const char *origin;
	char *err;
	bool failed;
};

static const char *type_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

static bool is_type(const json_t *v, const char *type)
{
	if (!strcmp(type, "object"))
		return json_is_object(v);
	if (!strcmp(type, "array"))
		return json_is_array(v);
	if (!strcmp(type, "string"))
		return json_is_string(v);
	if (!strcmp(type, "integer"))
		return json_is_integer(v) ||
		       (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)));
	if (!strcmp(type, "number"))
		return json_is_number(v);
	if (!strcmp(type, "boolean"))
		return json_is_boolean(v);
	return false;
}

/* "an integer from 1 to 1000", "one of: a, b", ...: what the schema accepts. */
static void expected(const json_t *schema, char *buf, size_t n)
{
	const json_t *type = json_object_get(schema, "type"), *en = json_object_get(schema, "enum");
	const json_t *lo = json_object_get(schema, "minimum");
	const json_t *xlo = json_object_get(schema, "exclusiveMinimum");
	const json_t *hi = json_object_get(schema, "maximum");
	size_t used = 0;

	buf[0] = '\0';
	if (en) {
		size_t i;
		json_t *e;

		used += (size_t)snprintf(buf, n, "one of:");
		json_array_foreach (en, i, e)
			if (used < n)
				used += (size_t)snprintf(buf + used, n - used, "%s %s",
							 i ? "," : "", json_string_value(e));
		return;
	}
	if (json_is_array(type)) {
		snprintf(buf, n, "%s or %s", json_string_value(json_array_get(type, 0)),
			 json_string_value(json_array_get(type, 1)));
		return;
	}
	used += (size_t)snprintf(buf, n, "%s %s",
				 strchr("aeiou", json_string_value(type)[0]) ? "an" : "a",
				 json_string_value(type));
	if ((lo || xlo) && hi && used < n)
		snprintf(buf + used, n - used, " %s %g to %g", xlo ? "above" : "from",
			 json_number_value(xlo ? xlo : lo), json_number_value(hi));
}

/* "ORIGIN: PATH: WHAT PROBLEM: expected ..." */
static void fail(struct validation *v, const char *path, const char *what, const char *problem,
		 const json_t *schema)
{
	char exp[400];

	if (v->failed)
		return; /* the first error is the one reported */
	v->failed = true;
	expected(schema, exp, sizeof(exp));
	snprintf(v->err, SC_CONFIG_ERR, "%s: %s: %s %s: expected %s", v->origin,
		 *path ? path : "the document", what, problem, exp);
}

static void check(struct validation *v, const json_t *schema, const json_t *doc, const char *path);

static void check_object(struct validation *v, const json_t *schema, const json_t *doc,
			 const char *path)
{
	const json_t *props = json_object_get(schema, "properties");
	const json_t *req = json_object_get(schema, "required");
	const json_t *extra = json_object_get(schema, "additionalProperties");
	const char *key;
	json_t *val;
	size_t i;

	json_array_foreach (req, i, val)
		if (!json_object_get(doc, json_string_value(val)) && !v->failed) {
			v->failed = true;
			snprintf(v->err, SC_CONFIG_ERR, "%s: %s%s'%s' is missing", v->origin, path,
				 *path ? ": " : "", json_string_value(val));
		}
	json_object_foreach ((json_t *)doc, key, val) {
		const json_t *sub = json_object_get(props, key);
		char child[256];

		snprintf(child, sizeof(child), "%s%s%s", path, *path ? "." : "", key);
		if (sub) {
			check(v, sub, val, child);
		} else if (json_is_false(extra)) {
			const char *names[1024];
			size_t n = 0;
			const char *k2;
			json_t *unused;
			const char *near;

			json_object_foreach ((json_t *)props, k2, unused)
				if (n < 1024)
					names[n++] = k2;
			near = sc_nearest(key, names, n);
			pr_warn("%s: unknown key '%s' ignored%s%s%s", v->origin, child,
				near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
		}
	}
}

static void check(struct validation *v, const json_t *schema, const json_t *doc, const char *path)
{
	const json_t *type = json_object_get(schema, "type"), *en = json_object_get(schema, "enum");
	bool ok = !type;

	if (json_is_string(type))
		ok = is_type(doc, json_string_value(type));
	for (size_t i = 0; json_is_array(type) && i < json_array_size(type); i++)
		ok = ok || is_type(doc, json_string_value(json_array_get(type, i)));
	if (!ok) {
		fail(v, path, type_of(doc), "is not valid here", schema);
		return;
	}
	if (en) {
		size_t i;
		json_t *e;
		bool found = false;

		json_array_foreach (en, i, e)
			found = found || json_equal(e, (json_t *)doc);
		if (!found) {
			char what[200];

			snprintf(what, sizeof(what), "'%s'",
				 json_is_string(doc) ? json_string_value(doc) : "value");
			fail(v, path, what, "is not valid", schema);
			return;
		}
	}
	if (json_is_number(doc)) {
		const json_t *lo = json_object_get(schema, "minimum");
		const json_t *xlo = json_object_get(schema, "exclusiveMinimum");
		const json_t *hi = json_object_get(schema, "maximum");
		double x = json_number_value(doc);
		char what[64];

		snprintf(what, sizeof(what), "%g", x);
		if ((lo && x < json_number_value(lo)) || (xlo && x <= json_number_value(xlo)) ||
		    (hi && x > json_number_value(hi)))
			fail(v, path, what, "is out of range", schema);
	}
	if (json_is_object(doc))
		check_object(v, schema, doc, path);
	if (json_is_array(doc) && json_object_get(schema, "items")) {
		size_t i;
		json_t *e;

		json_array_foreach (doc, i, e) {
			char child[256];

			snprintf(child, sizeof(child), "%s[%zu]", path, i);
			check(v, json_object_get(schema, "items"), e, child);
		}
	}
}

int sc_schema_validate(const json_t *schema, const json_t *doc, const char *origin,
		       char err[SC_CONFIG_ERR])
{
	struct validation v = { .origin = origin, .err = err };

	err[0] = '\0';
	check(&v, schema, doc, "");
	return v.failed ? -1 : 0;
}
