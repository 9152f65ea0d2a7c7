/* SPDX-License-Identifier: MIT */
/* JSON written as it goes (sinks/json_out.h) against jansson's compact dump, which the
 * outputs written either way must match byte for byte: reals of every magnitude and sign,
 * integers at their limits, strings with escapes, control bytes, UTF-8 and bytes that are
 * not UTF-8. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "sinks/json_out.h"

/* What `put` writes, as a string (caller frees). */
#define CAPTURE(buf, size, put)                             \
	do {                                                \
		FILE *f_ = open_memstream(&(buf), &(size)); \
		put;                                        \
		fclose(f_);                                 \
	} while (0)

static char *jansson_real(double v, int precision)
{
	json_t *j = json_real(v);
	char *s = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(precision));

	json_decref(j);
	return s;
}

static void check_real(double v)
{
	for (int precision = 9; precision <= 17; precision += 8) {
		char *ours, *theirs = jansson_real(v, precision);
		size_t n;

		CAPTURE(ours, n, sc_json_put_real_precision(f_, v, precision));
		CHECK_STR(ours, theirs);
		free(ours);
		free(theirs);
	}
}

static void check_int(long long v)
{
	json_t *j = json_integer(v);
	char *theirs = json_dumps(j, JSON_ENCODE_ANY), *ours;
	size_t n;

	CAPTURE(ours, n, sc_json_put_int(f_, v));
	CHECK_STR(ours, theirs);
	free(ours);
	free(theirs);
	json_decref(j);
}

static void check_str(const char *s, const char *expected)
{
	char *ours;
	size_t n;

	CAPTURE(ours, n, sc_json_put_str(f_, s));
	if (!expected) { /* valid UTF-8: as jansson writes it */
		json_t *j = json_string(s);
		char *theirs = json_dumps(j, JSON_ENCODE_ANY);

		CHECK(j != NULL);
		CHECK_STR(ours, theirs);
		free(theirs);
		json_decref(j);
	} else {
		CHECK_STR(ours, expected);
	}
	free(ours);
}

int main(void)
{
	const double reals[] = { 0.0,	  -0.0,	   1.0,	   -1.0,   0.5,	     2.31953576e9, 1e9,
				 1e-7,	  3.91e-7, 6.5e-8, 1e100,  -1e-100,  123456789.0,  1e15,
				 1e16,	  1e17,	   1e21,   1e22,   0.1,	     1.0 / 3.0,	   DBL_MAX,
				 DBL_MIN, 5e-324,  1e-5,   0.0001, 12345.678 };

	for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++)
		check_real(reals[i]);
	for (int i = 0; i < 2000; i++) /* pseudo-random magnitudes and digits */
		check_real(ldexp((double)(i * 2654435761u % 1000003) / 7.0, i % 200 - 100));
	check_int(0);
	check_int(-1);
	check_int(9223372036854775807ll);
	check_int(-9223372036854775807ll - 1);
	check_int(8579645326535652823ll);
	check_str("plain", NULL);
	check_str("quote \" backslash \\ slash /", NULL);
	check_str("\b\f\n\r\t \x01\x1f\x7f", NULL);
	check_str("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", NULL);
	check_str("", NULL);
	check_str("bad \xff byte", "\"bad \xef\xbf\xbd byte\"");
	check_str("cut \xe2\x82", "\"cut \xef\xbf\xbd\xef\xbf\xbd\"");
	check_str("overlong \xc0\xaf", "\"overlong \xef\xbf\xbd\xef\xbf\xbd\"");
	check_str("surrogate \xed\xa0\x80", "\"surrogate \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
	{
		char *ours;
		size_t n;

		CAPTURE(ours, n, sc_json_put_real(f_, NAN));
		CHECK_STR(ours, "null");
		free(ours);
		CAPTURE(ours, n, sc_json_put_key(f_, "laps"));
		CHECK_STR(ours, "\"laps\":");
		free(ours);
	}
	return check_report("test_json_out");
}
