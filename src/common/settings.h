/* SPDX-License-Identifier: MIT */
/*
 * Settings: the table in settings.def, typed values, and where each value came from.
 *
 * Both the CLI and libsyscope.so use this code. Nothing here exits or prints: parsers return
 * a negative errno and fill an error message the caller shows (CLI) or records (runtime).
 */
#ifndef SYSCOPE_COMMON_SETTINGS_H
#define SYSCOPE_COMMON_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

enum sc_setting_type {
	SC_T_BOOL,
	SC_T_INT,
	SC_T_DOUBLE,
	SC_T_STRING,
	SC_T_ENUM,
	SC_T_LIST,
};

/* Setting flags (FLAGS column). */
#define SC_SF_GT_MIN 0x1u  /* numeric value must be strictly greater than MIN */
#define SC_SF_RUNTIME 0x2u /* read by libsyscope.so: exported to the profiled program */
#define SC_SF_SECONDS 0x4u /* a duration in seconds; accepts ns/us/ms/s/m/h suffixes */
#define SC_SF_HZ 0x8u	   /* a frequency in Hz; accepts k/kHz suffixes */
#define SC_SF_HIDDEN 0x10u /* plumbing between launcher and runtime; not a user knob */
#define SC_SF_PAIR 0x20u   /* a LIST whose flag takes exactly two words (EVENT PERIOD) */
#define SC_SF_SIGNAL 0x40u /* an INT naming a sampler signal: N, or -N for SIGRTMAX-N */
#define SC_SF_IDS 0x80u	   /* a LIST of numbers and ranges (0,2-4), each at most MAX */

/* Categories (CATEGORIES column). */
#define SC_CAT_GENERAL 0x1u
#define SC_CAT_OUTPUT 0x2u
#define SC_CAT_SAMPLING 0x4u
#define SC_CAT_BUFFER 0x8u
#define SC_CAT_PROCESS 0x10u
#define SC_CAT_DEBUG 0x20u
#define SC_CAT_GPU 0x40u
#define SC_CAT_HWCOUNTERS 0x80u

/* Verbs whose command line carries a setting's flag (VERBS column). */
#define SC_VERB_SAMPLE 0x1u
#define SC_VERB_RUN 0x2u
#define SC_VERB_CONVERT 0x4u
#define SC_VERB_SUMMARY 0x8u
#define SC_VERB_MERGE 0x10u
#define SC_VERB_AVAIL 0x20u
#define SC_VERB_INSTRUMENT 0x40u
#define SC_VERB_PYTHON 0x80u
#define SC_VERB_CAUSAL 0x200u
#define SC_VERB_PROFILING \
	(SC_VERB_SAMPLE | SC_VERB_RUN | SC_VERB_INSTRUMENT | SC_VERB_PYTHON | SC_VERB_CAUSAL)
#define SC_VERB_READERS (SC_VERB_CONVERT | SC_VERB_SUMMARY | SC_VERB_MERGE | SC_VERB_AVAIL)

enum sc_setting_id {
#define SC_SETTING(name, ...) SC_SET_##name,
#include "settings.def"
#undef SC_SETTING
	SC_SETTING_COUNT
};

/* Where a value came from, lowest precedence first. */
enum sc_setting_layer {
	SC_LAYER_DEFAULT,
	SC_LAYER_PRESET,
	SC_LAYER_CONFIG,
	SC_LAYER_ENV,
	SC_LAYER_CLI,
};

struct sc_setting_def {
	const char *name; /* "SAMPLING_FREQ" */
	enum sc_setting_type type;
	const char *defval;
	const char *choices; /* comma-separated, or NULL */
	double min, max;
	unsigned flags;
	unsigned categories;
	unsigned verbs;
	const char *long_flag; /* without the leading "--" */
	char short_flag;
	const char *help;
};

struct sc_setting_value {
	char *text; /* canonical text of the value, never NULL ("" = unset) */
	bool set;   /* false when text is "" */
	bool b;
	long i;
	double d;
	enum sc_setting_layer layer;
};

struct sc_settings {
	struct sc_setting_value v[SC_SETTING_COUNT];
};

extern const struct sc_setting_def sc_setting_defs[SC_SETTING_COUNT];

#define SC_SETTING_ENV_PREFIX "SYSCOPE_"
#define SC_ERRMSG_MAX 512

/* Fill `s` with every default. Returns 0 or -ENOMEM. */
int sc_settings_init(struct sc_settings *s);
void sc_settings_free(struct sc_settings *s);

/*
 * Parse `text` as the value of setting `id`, and store it with `layer` if it is valid and
 * `layer` is not below the current value's layer. Returns 0, -EINVAL with `errmsg` set to
 * one line naming the value and what would be valid, or -ENOMEM.
 */
int sc_settings_set(struct sc_settings *s, enum sc_setting_id id, const char *text,
		    enum sc_setting_layer layer, char errmsg[SC_ERRMSG_MAX]);

/*
 * Read every SYSCOPE_<NAME> variable of `environ`-style array `env` (NULL = the process
 * environment). Bad values are skipped; the first error is described in `errmsg` and
 * -EINVAL is returned after all others were applied.
 */
int sc_settings_load_env(struct sc_settings *s, char *const *env, char errmsg[SC_ERRMSG_MAX]);

/* Lookups. Return -1 / NULL when nothing matches. */
int sc_setting_by_name(const char *name); /* "SAMPLING_FREQ" or "sampling-freq" */
/* For a SYSCOPE_ variable of the environment that names no setting (`name` without the
 * prefix): the setting it was likely meant to be (a misspelling), else NULL. */
const char *sc_setting_misspelled(const char *name);
int sc_setting_by_flag(const char *long_flag, unsigned verb);
int sc_setting_by_short(char short_flag, unsigned verb);

static inline bool sc_bool(const struct sc_settings *s, enum sc_setting_id id)
{
	return s->v[id].b;
}
static inline long sc_int(const struct sc_settings *s, enum sc_setting_id id)
{
	return s->v[id].i;
}
static inline double sc_double(const struct sc_settings *s, enum sc_setting_id id)
{
	return s->v[id].d;
}
static inline const char *sc_str(const struct sc_settings *s, enum sc_setting_id id)
{
	return s->v[id].text;
}
static inline bool sc_is_set(const struct sc_settings *s, enum sc_setting_id id)
{
	return s->v[id].set;
}

/* True when `token` is one of the space/comma-separated tokens of a LIST or ENUM value. */
bool sc_list_has(const struct sc_settings *s, enum sc_setting_id id, const char *token);

/* Parse a boolean word (on/off/yes/no/true/false/1/0, any case). Returns 0 or -EINVAL. */
int sc_parse_bool(const char *text, bool *out);

/*
 * Parse an id list such as "0,2-4,7" into a bitmap of `nbits` bits (bit i = id i).
 * Returns 0 or -EINVAL.
 */
int sc_parse_id_list(const char *text, unsigned long *bitmap, unsigned nbits);
/* How many ids each id-list setting can name (the runtime's tables): --cpus, --gpus,
 * --sampling-tids. The launcher refuses a list beyond them before the program starts. */
#define SC_ID_LIST_MAX_CPUS 1024u
#define SC_ID_LIST_MAX_GPUS 64u
#define SC_ID_LIST_MAX_TIDS 4096u

const char *sc_setting_type_name(enum sc_setting_type type);
const char *sc_setting_layer_name(enum sc_setting_layer layer);
/* "general,output" for a category mask; writes into buf of size n. */
const char *sc_setting_categories(unsigned categories, char *buf, size_t n);

#endif /* SYSCOPE_COMMON_SETTINGS_H */
