/* SPDX-License-Identifier: MIT */
/*
 * Settings table and value parsing. Shared by the CLI and libsyscope.so, so it never exits,
 * prints or keeps global state besides the constant table.
 */
#include "settings.h"
#include "strutil.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

const struct sc_setting_def sc_setting_defs[SC_SETTING_COUNT] = {
#define SC_SETTING(nm, ty, def, ch, mn, mx, fl, cat, vb, lf, sf, hl) \
	[SC_SET_##nm] = { .name = #nm,                               \
			  .type = SC_T_##ty,                         \
			  .defval = def,                             \
			  .choices = ch,                             \
			  .min = mn,                                 \
			  .max = mx,                                 \
			  .flags = fl,                               \
			  .categories = cat,                         \
			  .verbs = vb,                               \
			  .long_flag = lf,                           \
			  .short_flag = sf,                          \
			  .help = hl },
#include "settings.def"
#undef SC_SETTING
};

static const char *const type_names[] = {
	[SC_T_BOOL] = "bool",	  [SC_T_INT] = "int",	[SC_T_DOUBLE] = "double",
	[SC_T_STRING] = "string", [SC_T_ENUM] = "enum", [SC_T_LIST] = "list",
};

static const char *const layer_names[] = {
	[SC_LAYER_DEFAULT] = "default",	 [SC_LAYER_PRESET] = "preset",
	[SC_LAYER_CONFIG] = "config",	 [SC_LAYER_ENV] = "environment",
	[SC_LAYER_CLI] = "command line",
};

static const char *const category_names[] = {
	"general", "output", "sampling", "buffer", "process", "debug", "gpu", "counters",
};

const char *sc_setting_type_name(enum sc_setting_type type)
{
	return type_names[type];
}

const char *sc_setting_layer_name(enum sc_setting_layer layer)
{
	return layer_names[layer];
}

const char *sc_setting_categories(unsigned categories, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < sizeof(category_names) / sizeof(category_names[0]); i++) {
		if (!(categories & (1u << i)))
			continue;
		int w = snprintf(buf + len, n - len, "%s%s", len ? "," : "", category_names[i]);
		if (w < 0 || (size_t)w >= n - len)
			break;
		len += (size_t)w;
	}
	return buf;
}

int sc_parse_bool(const char *text, bool *out)
{
	static const char *const yes[] = { "1", "on", "yes", "true", "y", "t" };
	static const char *const no[] = { "0", "off", "no", "false", "n", "f" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(text, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(text, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

/* Copy the next token of a space/comma separated list into tok; returns the rest or NULL. */
static const char *next_token(const char *p, char *tok, size_t n)
{
	size_t len = 0;

	while (*p == ' ' || *p == ',' || *p == '\t')
		p++;
	if (!*p)
		return NULL;
	while (*p && *p != ' ' && *p != ',' && *p != '\t') {
		if (len + 1 < n)
			tok[len++] = *p;
		p++;
	}
	tok[len] = '\0';
	return p;
}

static bool choice_valid(const char *choices, const char *word)
{
	char tok[64];
	const char *p = choices;

	while ((p = next_token(p, tok, sizeof(tok))))
		if (!strcasecmp(tok, word))
			return true;
	return false;
}

bool sc_list_has(const struct sc_settings *s, enum sc_setting_id id, const char *token)
{
	return choice_valid(s->v[id].text, token);
}

int sc_parse_id_list(const char *text, unsigned long *bitmap, unsigned nbits)
{
	const unsigned wbits = 8 * sizeof(unsigned long);
	char tok[64];
	const char *p = text;

	memset(bitmap, 0, (nbits + wbits - 1) / wbits * sizeof(unsigned long));
	while ((p = next_token(p, tok, sizeof(tok)))) {
		char *end;
		unsigned long lo, hi;

		if (!isdigit((unsigned char)tok[0]))
			return -EINVAL;
		lo = strtoul(tok, &end, 10);
		hi = lo;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				return -EINVAL;
			hi = strtoul(end + 1, &end, 10);
		}
		if (*end || hi < lo || hi >= nbits)
			return -EINVAL;
		for (unsigned long i = lo; i <= hi; i++)
			bitmap[i / wbits] |= 1ul << (i % wbits);
	}
	return 0;
}

/* Parse a double with an optional unit suffix; the multiplier converts to the base unit. */
static int parse_scaled(const char *text, unsigned flags, double *out)
{
	static const struct {
		const char *suffix;
		double scale;
	} seconds[] = { { "ns", 1e-9 }, { "us", 1e-6 }, { "ms", 1e-3 }, { "s", 1 },
			{ "sec", 1 },	{ "m", 60 },	{ "min", 60 },	{ "h", 3600 } },
	  hertz[] = { { "hz", 1 }, { "k", 1e3 }, { "khz", 1e3 } };
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (end == text || errno == ERANGE || isnan(v) || isinf(v))
		return -EINVAL;
	while (*end == ' ')
		end++;
	if (*end) {
		bool matched = false;

		if (flags & SC_SF_SECONDS) {
			for (size_t i = 0; i < sizeof(seconds) / sizeof(seconds[0]); i++)
				if (!strcasecmp(end, seconds[i].suffix)) {
					v *= seconds[i].scale;
					matched = true;
				}
		} else if (flags & SC_SF_HZ) {
			for (size_t i = 0; i < sizeof(hertz) / sizeof(hertz[0]); i++)
				if (!strcasecmp(end, hertz[i].suffix)) {
					v *= hertz[i].scale;
					matched = true;
				}
		}
		if (!matched)
			return -EINVAL;
	}
	*out = v;
	return 0;
}

/* "a,b,c" as "a, b, c", for messages. */
static const char *list_choices(const char *choices, char *buf, size_t n)
{
	char tok[64];
	const char *p = choices;
	size_t len = 0;

	buf[0] = '\0';
	while ((p = next_token(p, tok, sizeof(tok))) && len + strlen(tok) + 3 < n)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", tok);
	return buf;
}

static void describe_range(const struct sc_setting_def *d, char *buf, size_t n)
{
	const char *unit = (d->flags & SC_SF_SECONDS) ? " seconds"
			   : (d->flags & SC_SF_HZ)    ? " Hz"
						      : "";

	if (d->flags & SC_SF_GT_MIN)
		snprintf(buf, n, "a number > %g and <= %g%s", d->min, d->max, unit);
	else
		snprintf(buf, n, "a number from %g to %g%s", d->min, d->max, unit);
}

static int invalid(char errmsg[SC_ERRMSG_MAX], const struct sc_setting_def *d, const char *text,
		   const char *valid)
{
	if (errmsg)
		snprintf(errmsg, SC_ERRMSG_MAX, "%.48s '%.120s' is not valid (valid: %.300s)",
			 d->name, text, valid);
	return -EINVAL;
}

/*
 * Signals a sampler must not use: the synchronous ones (a fault re-executes the instruction,
 * so our handler would be called forever, or a program's own would see our samples as
 * crashes), those that cannot be caught, and the two glibc keeps for thread cancellation
 * and set*id.
 */
static bool sampler_signal_refused(long sig)
{
	static const long refused[] = { 4, 5, 6, 7, 8, 9, 11, 19, 31, 32, 33 };

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (sig == refused[i])
			return true;
	return false;
}

#define SAMPLER_SIGNALS_VALID                                                                   \
	"1..64 or -29..0 (SIGRTMAX-N), except the synchronous, uncatchable and glibc-internal " \
	"signals 4 (SIGILL), 5 (SIGTRAP), 6 (SIGABRT), 7 (SIGBUS), 8 (SIGFPE), 9 (SIGKILL), "   \
	"11 (SIGSEGV), 19 (SIGSTOP), 31 (SIGSYS), 32 and 33"

/* One token of an SC_SF_IDS list: N or LO-HI, with LO <= HI <= max. */
static bool id_token_valid(const char *tok, unsigned long max)
{
	char *end;
	unsigned long lo, hi;

	if (!isdigit((unsigned char)tok[0]))
		return false;
	errno = 0;
	lo = hi = strtoul(tok, &end, 10);
	if (*end == '-') {
		if (!isdigit((unsigned char)end[1]))
			return false;
		hi = strtoul(end + 1, &end, 10);
	}
	return !*end && errno != ERANGE && lo <= hi && hi <= max;
}

/* An empty number is "unset" only where the default is unset too; elsewhere it would run
 * with a value nobody chose (0, or the runtime's clamp), so it is refused. */
static bool empty_number_refused(const struct sc_setting_def *d, const char *text)
{
	return !*text && d->defval[0] && (d->type == SC_T_INT || d->type == SC_T_DOUBLE);
}

/* Validate and canonicalize a LIST value: tokens joined by single spaces. */
static int canonical_list(const struct sc_setting_def *d, const char *text, char **out,
			  char errmsg[SC_ERRMSG_MAX])
{
	size_t cap = strlen(text) + 2, len = 0;
	char *buf = malloc(cap);
	char tok[256];
	const char *p = text;

	if (!buf)
		return -ENOMEM;
	buf[0] = '\0';
	while ((p = next_token(p, tok, sizeof(tok)))) {
		if ((d->flags & SC_SF_IDS) && !id_token_valid(tok, (unsigned long)d->max)) {
			char valid[128];

			free(buf);
			snprintf(valid, sizeof(valid),
				 "numbers from 0 to %g and ranges such as 0,2-4", d->max);
			return invalid(errmsg, d, tok, valid);
		}
		if (d->choices && !choice_valid(d->choices, tok)) {
			char valid[256];

			free(buf);
			return invalid(errmsg, d, tok,
				       list_choices(d->choices, valid, sizeof(valid)));
		}
		if (d->choices) /* canonical case is the table's */
			for (char *c = tok; *c; c++)
				*c = (char)tolower((unsigned char)*c);
		if (choice_valid(buf, tok))
			continue; /* duplicates collapse */
		size_t tl = strlen(tok);

		if (len + tl + 2 > cap)
			break; /* cannot happen: canonical form is never longer than the input */
		if (len)
			buf[len++] = ' ';
		memcpy(buf + len, tok, tl + 1);
		len += tl;
	}
	*out = buf;
	return 0;
}

int sc_settings_set(struct sc_settings *s, enum sc_setting_id id, const char *text,
		    enum sc_setting_layer layer, char errmsg[SC_ERRMSG_MAX])
{
	const struct sc_setting_def *d = &sc_setting_defs[id];
	struct sc_setting_value nv = { .layer = layer };
	char valid[160];
	int rc;

	if (layer < s->v[id].layer)
		return 0; /* a higher-precedence value is already in place */

	while (*text == ' ' || *text == '\t')
		text++;
	nv.set = *text != '\0';
	if (empty_number_refused(d, text)) {
		describe_range(d, valid, sizeof(valid));
		return invalid(errmsg, d, text, valid);
	}

	switch (d->type) {
	case SC_T_BOOL:
		if (nv.set && sc_parse_bool(text, &nv.b))
			return invalid(errmsg, d, text, "on, off, yes, no, true, false, 1, 0");
		nv.text = strdup(nv.set ? (nv.b ? "true" : "false") : "");
		break;
	case SC_T_INT: {
		char *end;
		long v = 0;

		if (nv.set) {
			errno = 0;
			v = strtol(text, &end, 0);
			describe_range(d, valid, sizeof(valid));
			if (end == text || *end || errno == ERANGE)
				return invalid(errmsg, d, text, valid);
			if (v < d->min || v > d->max || ((d->flags & SC_SF_GT_MIN) && v <= d->min))
				return invalid(errmsg, d, text, valid);
			if ((d->flags & SC_SF_SIGNAL) && sampler_signal_refused(v))
				return invalid(errmsg, d, text, SAMPLER_SIGNALS_VALID);
		}
		nv.i = v;
		nv.text = strdup(text);
		break;
	}
	case SC_T_DOUBLE: {
		double v = 0;

		if (nv.set) {
			describe_range(d, valid, sizeof(valid));
			if (parse_scaled(text, d->flags, &v))
				return invalid(errmsg, d, text, valid);
			if (v < d->min || v > d->max || ((d->flags & SC_SF_GT_MIN) && v <= d->min))
				return invalid(errmsg, d, text, valid);
		}
		nv.d = v;
		nv.text = strdup(text);
		break;
	}
	case SC_T_ENUM:
		if (nv.set && !choice_valid(d->choices, text))
			return invalid(errmsg, d, text,
				       list_choices(d->choices, valid, sizeof(valid)));
		nv.text = strdup(text);
		if (nv.text)
			for (char *c = nv.text; *c; c++)
				*c = (char)tolower((unsigned char)*c);
		break;
	case SC_T_LIST:
		rc = canonical_list(d, text, &nv.text, errmsg);
		if (rc)
			return rc;
		nv.set = nv.text[0] != '\0';
		break;
	case SC_T_STRING:
		nv.text = strdup(text);
		break;
	}
	if (!nv.text)
		return -ENOMEM;
	free(s->v[id].text);
	s->v[id] = nv;
	return 0;
}

int sc_settings_init(struct sc_settings *s)
{
	memset(s, 0, sizeof(*s));
	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		char err[SC_ERRMSG_MAX];
		int rc = sc_settings_set(s, id, sc_setting_defs[id].defval, SC_LAYER_DEFAULT, err);

		/* Defaults are checked by the unit tests; a bad one is a bug in settings.def. */
		if (rc) {
			sc_settings_free(s);
			return rc;
		}
	}
	return 0;
}

void sc_settings_free(struct sc_settings *s)
{
	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		free(s->v[id].text);
		s->v[id].text = NULL;
	}
}

int sc_setting_by_name(const char *name)
{
	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		const struct sc_setting_def *d = &sc_setting_defs[id];

		if (!strcasecmp(d->name, name) || (d->long_flag && !strcmp(d->long_flag, name)))
			return id;
	}
	return -1;
}

const char *sc_setting_misspelled(const char *name)
{
	const char *names[SC_SETTING_COUNT];

	if (sc_setting_by_name(name) >= 0)
		return NULL;
	for (int id = 0; id < SC_SETTING_COUNT; id++)
		names[id] = sc_setting_defs[id].name;
	return sc_nearest(name, names, SC_SETTING_COUNT);
}

int sc_setting_by_flag(const char *long_flag, unsigned verb)
{
	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		const struct sc_setting_def *d = &sc_setting_defs[id];

		if ((d->verbs & verb) && d->long_flag && !strcmp(d->long_flag, long_flag))
			return id;
	}
	return -1;
}

int sc_setting_by_short(char short_flag, unsigned verb)
{
	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		const struct sc_setting_def *d = &sc_setting_defs[id];

		if ((d->verbs & verb) && d->short_flag == short_flag)
			return id;
	}
	return -1;
}

int sc_settings_load_env(struct sc_settings *s, char *const *env, char errmsg[SC_ERRMSG_MAX])
{
	const size_t plen = strlen(SC_SETTING_ENV_PREFIX);
	int first_rc = 0;

	if (!env)
		env = environ;
	for (; *env; env++) {
		const char *eq = strchr(*env, '=');
		char name[128];
		int id, rc;

		if (strncmp(*env, SC_SETTING_ENV_PREFIX, plen) || !eq)
			continue;
		if ((size_t)(eq - *env) - plen >= sizeof(name))
			continue;
		memcpy(name, *env + plen, (size_t)(eq - *env) - plen);
		name[eq - *env - plen] = '\0';
		id = sc_setting_by_name(name);
		if (id < 0)
			continue; /* unknown SYSCOPE_ variables belong to other tools or versions */
		rc = sc_settings_set(s, id, eq + 1, SC_LAYER_ENV, first_rc ? NULL : errmsg);
		if (rc && !first_rc)
			first_rc = rc;
	}
	return first_rc;
}
