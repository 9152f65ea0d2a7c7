/* SPDX-License-Identifier: MIT */
/*
 * JSON written as it goes (json_out.c), for outputs too large to build as a jansson tree
 * first: values are formatted as jansson's compact dump with JSON_REAL_PRECISION(9) formats
 * them, so a document written either way is the same bytes.
 */
#ifndef SYSCOPE_SINKS_JSON_OUT_H
#define SYSCOPE_SINKS_JSON_OUT_H

#include <jansson.h>
#include <stdio.h>

/* A string, quoted and escaped; bytes that are not UTF-8 become U+FFFD. */
void sc_json_put_str(FILE *f, const char *s);
/* A real as jansson writes it (%.9g, a ".0" when it would read as an integer, no '+' or
 * leading zeros in the exponent); null when it is not finite (jansson has no such real). */
void sc_json_put_real(FILE *f, double v);
/* The same with `precision` digits (jansson's default, without JSON_REAL_PRECISION: 17). */
void sc_json_put_real_precision(FILE *f, double v, int precision);
void sc_json_put_int(FILE *f, long long v);
/* `"key":` (the key is plain ASCII, written as is). */
void sc_json_put_key(FILE *f, const char *key);
/* A jansson value, compact, then released; "null" for NULL. */
void sc_json_put_value(FILE *f, json_t *v);

#endif /* SYSCOPE_SINKS_JSON_OUT_H */
