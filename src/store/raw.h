/* SPDX-License-Identifier: MIT */
/*
 * Reading raw files (format.h): open and validate one file, walk its records in chunk order
 * with every record checked for shape, and say precisely what was wrong where a file is
 * truncated or damaged. A damaged chunk costs the rest of that chunk, never the file.
 */
#ifndef SYSCOPE_STORE_RAW_H
#define SYSCOPE_STORE_RAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format.h"

struct sc_raw {
	char *path;
	const uint8_t *data; /* read-only mapping of the whole file */
	size_t size;
	struct sc_file_header hdr; /* a copy, validated */
	uint32_t nchunks;	   /* chunks that start inside the file */
	uint32_t *checked;	   /* per chunk: bytes whose records a walk found well formed, which
			    * later walks need not check again */
};

/* Problems found while reading, for the end-of-conversion report. */
struct sc_raw_stats {
	uint64_t records;
	uint64_t unknown_types;	   /* from a newer writer, probably */
	uint64_t malformed;	   /* records whose size does not fit their type */
	uint64_t damaged_chunks;   /* bad chunk header or record framing */
	uint64_t truncated_chunks; /* chunk cut short by the end of the file */
	uint64_t unwritten_chunks; /* claimed, never written: the process was killed */
};

/* Called once per problem with a one-line message naming the file and offset. */
typedef void (*sc_raw_diag_fn)(void *ctx, const char *message);

/*
 * Open `path`. Returns 0; -ENODATA for an empty file (a process that never started
 * recording); or a negative errno with `err` explaining (not a raw file, unsupported
 * version, wrong byte order...).
 */
int sc_raw_open(struct sc_raw *r, const char *path, char *err, size_t errlen);
void sc_raw_close(struct sc_raw *r);

/*
 * Call `cb` for every well-formed record, in chunk order, with the thread it belongs to and
 * its file offset. A non-zero return from `cb` stops the walk and is returned.
 */
typedef int (*sc_raw_record_fn)(void *ctx, int32_t tid, const struct sc_record *rec,
				uint64_t offset);
int sc_raw_foreach(const struct sc_raw *r, sc_raw_record_fn cb, void *ctx,
		   struct sc_raw_stats *stats, sc_raw_diag_fn diag, void *diag_ctx);

/* True when a record of a known type has the size its type needs. */
bool sc_record_well_formed(const struct sc_record *rec);
/* True when `len` bytes hold exactly `nargs` (type, name, value) string triples. */
bool sc_region_args_valid(const char *args, uint32_t len, uint32_t nargs);
/* The record's timestamp, or 0 for types without one. */
uint64_t sc_record_ts(const struct sc_record *rec);
const char *sc_record_type_name(unsigned type);
/* enum sc_lost_cause as a short token ("buffer-limit") and as words for the summary. */
const char *sc_lost_cause_name(unsigned cause);
const char *sc_lost_cause_text(unsigned cause);
/* A write refused by the file system, in words: EFBIG ("the file size limit (ulimit -f) was
 * reached"), ENOSPC, EDQUOT; NULL for any other errno. */
const char *sc_disk_errno_text(int e);
/* SC_LOST_DISK's words for the header's disk_errno: "the file size limit (ulimit -f) was
 * reached" for EFBIG, the full disk, a quota; the reserve or a full disk for 0. */
const char *sc_lost_disk_text(int disk_errno);
/* The header's live counters of an open file (the writer may have updated them last). */
const struct sc_file_header *sc_raw_live_header(const struct sc_raw *r);

#endif /* SYSCOPE_STORE_RAW_H */
