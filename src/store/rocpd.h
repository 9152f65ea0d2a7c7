/* SPDX-License-Identifier: MIT */
/* The rocpd database format: its schema (rocpd_schema.c); the reader is rocpd_read.c and
 * the writer src/sinks/rocpd.c. */
#ifndef SYSCOPE_STORE_ROCPD_H
#define SYSCOPE_STORE_ROCPD_H

#define SC_ROCPD_SCHEMA_VERSION "3"

/* DDL templates with {{uuid}} and {{guid}}; each list ends with NULL. */
extern const char *const sc_rocpd_tables[];
extern const char *const sc_rocpd_base_names[]; /* "string" -> view rocpd_string */
extern const char *const sc_rocpd_views[];

#endif
