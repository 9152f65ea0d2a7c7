/* SPDX-License-Identifier: MIT */
/* The rocpd database format: its schema (rocpd_schema.c); the reader is rocpd_read.c and
 * the writer src/sinks/rocpd.c. */
#ifndef SYSCOPE_STORE_ROCPD_H
#define SYSCOPE_STORE_ROCPD_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define SC_ROCPD_SCHEMA_VERSION "3"

/* DDL templates with {{uuid}} and {{guid}}; each list ends with NULL. */
extern const char *const sc_rocpd_tables[];
extern const char *const sc_rocpd_base_names[]; /* "string" -> view rocpd_string */
extern const char *const sc_rocpd_views[];

/* A UUIDv7-shaped guid: milliseconds of wall-clock time first, then bits of `hash`. */
void sc_rocpd_make_guid(uint64_t realtime_ns, uint64_t hash, char *guid, size_t n);
/* The table suffix of a guid: "_" and the guid with '-' as '_'. */
void sc_rocpd_uuid(const char *guid, char *uuid, size_t n);
/* A template with {{uuid}} and {{guid}} replaced. Caller frees. */
char *sc_rocpd_substitute(const char *tmpl, const char *uuid, const char *guid);
/* Create the schema in an empty database: tables, the metadata rows, base, data and summary
 * views. Returns 0, or -1 with `err` set. */
int sc_rocpd_create(sqlite3 *db, const char *guid, char *err, size_t errlen);

/* rocpd_category.c: a category as written to rocpd (PREFIX_... names, which `rocpd summary`
 * keeps), `buf` holding it where it is made; and the category of a file back as syscope
 * names it. */
const char *sc_rocpd_category(const char *category, char *buf, size_t n);
const char *sc_rocpd_category_of_file(const char *category);

/* rocpd_merge.c: merge databases `inputs` into a new database `out` (written under a temporary
 * name, then renamed), whose views show every process. Returns 0, or -1 with `err` naming
 * the input and the problem. */
int sc_rocpd_merge(char *const *inputs, size_t n, const char *out, char *err, size_t errlen);

#endif
