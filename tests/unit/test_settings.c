/* SPDX-License-Identifier: MIT */
/* The settings table and value parsing: types, ranges, units, lists, precedence, errors. */
#include <errno.h>
#include <stdlib.h>

#include "check.h"
#include "common/settings.h"

static void test_defaults_valid(void)
{
	struct sc_settings s;

	/* Every default in settings.def parses: a bad one would fail here, not in the field. */
	CHECK(sc_settings_init(&s) == 0);
	CHECK(sc_double(&s, SC_SET_SAMPLING_FREQ) == 300);
	CHECK(sc_bool(&s, SC_SET_FOLLOW_CHILDREN));
	CHECK(!sc_is_set(&s, SC_SET_SAMPLING_DURATION));
	CHECK(sc_list_has(&s, SC_SET_OUTPUT_FORMAT, "json"));
	CHECK(s.v[SC_SET_SAMPLING_FREQ].layer == SC_LAYER_DEFAULT);
	sc_settings_free(&s);
}

static void test_table_is_consistent(void)
{
	for (int i = 0; i < SC_SETTING_COUNT; i++) {
		const struct sc_setting_def *d = &sc_setting_defs[i];

		CHECK(d->name && d->help && d->help[0]);
		CHECK(d->categories != 0);
		/* Long flags are unique per verb. */
		for (int j = i + 1; j < SC_SETTING_COUNT; j++) {
			const struct sc_setting_def *e = &sc_setting_defs[j];

			CHECK(strcmp(d->name, e->name) != 0);
			if (d->long_flag && e->long_flag && (d->verbs & e->verbs))
				CHECK(strcmp(d->long_flag, e->long_flag) != 0);
			if (d->short_flag && d->short_flag == e->short_flag)
				CHECK(!(d->verbs & e->verbs));
		}
		if (d->type == SC_T_ENUM)
			CHECK(d->choices != NULL);
	}
}

static void test_values(void)
{
	struct sc_settings s;
	char err[SC_ERRMSG_MAX];

	sc_settings_init(&s);
	CHECK(sc_settings_set(&s, SC_SET_SAMPLING_FREQ, "1k", SC_LAYER_CLI, err) == 0);
	CHECK(sc_double(&s, SC_SET_SAMPLING_FREQ) == 1000);
	CHECK(sc_settings_set(&s, SC_SET_SAMPLING_DELAY, "250ms", SC_LAYER_CLI, err) == 0);
	CHECK(sc_double(&s, SC_SET_SAMPLING_DELAY) == 0.25);
	CHECK(sc_settings_set(&s, SC_SET_SAMPLING_DURATION, "2m", SC_LAYER_CLI, err) == 0);
	CHECK(sc_double(&s, SC_SET_SAMPLING_DURATION) == 120);
	CHECK(sc_settings_set(&s, SC_SET_TIME_OUTPUT, "OFF", SC_LAYER_CLI, err) == 0);
	CHECK(!sc_bool(&s, SC_SET_TIME_OUTPUT));
	CHECK(sc_settings_set(&s, SC_SET_TIME_OUTPUT, "Yes", SC_LAYER_CLI, err) == 0);
	CHECK(sc_bool(&s, SC_SET_TIME_OUTPUT));
	CHECK(sc_settings_set(&s, SC_SET_OUTPUT_FORMAT, "folded,JSON json", SC_LAYER_CLI, err) ==
	      0);
	CHECK_STR(sc_str(&s, SC_SET_OUTPUT_FORMAT), "folded json");
	CHECK(!sc_list_has(&s, SC_SET_OUTPUT_FORMAT, "text"));
	/* One-character and spaced lists keep every token. */
	CHECK(sc_settings_set(&s, SC_SET_SAMPLING_TIDS, "2", SC_LAYER_CLI, err) == 0);
	CHECK_STR(sc_str(&s, SC_SET_SAMPLING_TIDS), "2");
	CHECK(sc_settings_set(&s, SC_SET_SAMPLING_TIDS, " 0 , 1-3 ", SC_LAYER_CLI, err) == 0);
	CHECK_STR(sc_str(&s, SC_SET_SAMPLING_TIDS), "0 1-3");
	CHECK(sc_settings_set(&s, SC_SET_SAMPLING_UNWINDER, "FP", SC_LAYER_CLI, err) == 0);
	CHECK_STR(sc_str(&s, SC_SET_SAMPLING_UNWINDER), "fp");
	sc_settings_free(&s);
}

static void test_bad_values(void)
{
	static const char *const bad_freq[] = { "-5",  "0",	"abc",	   "200000",
						"nan", "1e999", "10 hz x", "" };
	struct sc_settings s;
	char err[SC_ERRMSG_MAX];

	sc_settings_init(&s);
	for (size_t i = 0; i < sizeof(bad_freq) / sizeof(bad_freq[0]); i++) {
		int rc = sc_settings_set(&s, SC_SET_SAMPLING_FREQ, bad_freq[i], SC_LAYER_CLI, err);

		/* "" means unset, which a frequency with a default may not be... it is allowed
		 * for the parser; the CLI treats it as the default. Everything else is refused. */
		if (bad_freq[i][0]) {
			CHECK(rc == -EINVAL);
			CHECK_CONTAINS(err, "SAMPLING_FREQ");
			CHECK_CONTAINS(err, "> 0 and <= 100000 Hz");
		}
	}
	CHECK(sc_double(&s, SC_SET_SAMPLING_FREQ) == 300 || !sc_is_set(&s, SC_SET_SAMPLING_FREQ));
	CHECK(sc_settings_set(&s, SC_SET_SAMPLING_DELAY, "-1", SC_LAYER_CLI, err) == -EINVAL);
	CHECK_CONTAINS(err, "seconds");
	CHECK(sc_settings_set(&s, SC_SET_SAMPLING_DURATION, "0", SC_LAYER_CLI, err) == -EINVAL);
	CHECK(sc_settings_set(&s, SC_SET_TIME_OUTPUT, "maybe", SC_LAYER_CLI, err) == -EINVAL);
	CHECK_CONTAINS(err, "on, off");
	CHECK(sc_settings_set(&s, SC_SET_OUTPUT_FORMAT, "json pftace", SC_LAYER_CLI, err) ==
	      -EINVAL);
	CHECK_CONTAINS(err, "'pftace'");
	CHECK_CONTAINS(err, "(valid: rocpd, pftrace, text, json, folded, csv, html)");
	CHECK(sc_settings_set(&s, SC_SET_SAMPLING_UNWINDER, "dwarf", SC_LAYER_CLI, err) == -EINVAL);
	CHECK(sc_settings_set(&s, SC_SET_SAMPLING_MAX_DEPTH, "12x", SC_LAYER_CLI, err) == -EINVAL);
	CHECK(sc_settings_set(&s, SC_SET_SAMPLING_MAX_DEPTH, "5000", SC_LAYER_CLI, err) == -EINVAL);
	sc_settings_free(&s);
}

static void test_precedence(void)
{
	char *env[] = { "SYSCOPE_SAMPLING_FREQ=500", "SYSCOPE_UNKNOWN_THING=1", "PATH=/bin",
			"SYSCOPE_SAMPLING_REALTIME=on", NULL };
	char *bad_env[] = { "SYSCOPE_SAMPLING_FREQ=fast", "SYSCOPE_SUMMARY=off", NULL };
	struct sc_settings s;
	char err[SC_ERRMSG_MAX];

	sc_settings_init(&s);
	CHECK(sc_settings_load_env(&s, env, err) == 0);
	CHECK(sc_double(&s, SC_SET_SAMPLING_FREQ) == 500);
	CHECK(s.v[SC_SET_SAMPLING_FREQ].layer == SC_LAYER_ENV);
	CHECK(sc_bool(&s, SC_SET_SAMPLING_REALTIME));
	/* The command line wins over the environment... */
	CHECK(sc_settings_set(&s, SC_SET_SAMPLING_FREQ, "2000", SC_LAYER_CLI, err) == 0);
	CHECK(sc_double(&s, SC_SET_SAMPLING_FREQ) == 2000);
	/* ...and a later, lower-precedence source does not undo it. */
	CHECK(sc_settings_load_env(&s, env, err) == 0);
	CHECK(sc_double(&s, SC_SET_SAMPLING_FREQ) == 2000);
	CHECK(s.v[SC_SET_SAMPLING_FREQ].layer == SC_LAYER_CLI);
	sc_settings_free(&s);

	/* A bad variable is reported by name; the good ones still apply. */
	sc_settings_init(&s);
	CHECK(sc_settings_load_env(&s, bad_env, err) == -EINVAL);
	CHECK_CONTAINS(err, "SAMPLING_FREQ 'fast'");
	CHECK(!sc_bool(&s, SC_SET_SUMMARY));
	sc_settings_free(&s);
}

static void test_id_lists(void)
{
	unsigned long bits[2];

	CHECK(sc_parse_id_list("0,2-4,7", bits, 128) == 0);
	CHECK(bits[0] == (1ul | 4ul | 8ul | 16ul | 128ul));
	CHECK(sc_parse_id_list("3-1", bits, 128) == -EINVAL);
	CHECK(sc_parse_id_list("a", bits, 128) == -EINVAL);
	CHECK(sc_parse_id_list("200", bits, 128) == -EINVAL);
	CHECK(sc_parse_id_list("", bits, 128) == 0 && bits[0] == 0);
}

int main(void)
{
	test_defaults_valid();
	test_table_is_consistent();
	test_values();
	test_bad_values();
	test_precedence();
	test_id_lists();
	return check_report("test_settings");
}
