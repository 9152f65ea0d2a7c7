/* SPDX-License-Identifier: MIT */
#include "raw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/progress.h"
#include "../common/vec.h"

static const char *const type_names[SC_REC_TYPE_COUNT] = {
#define SC_RECORD(name, id, text, type, size, what) [SC_REC_##name] = text,
#include "records.def"
#undef SC_RECORD
};

/* Smallest size of each known record type (its fixed part). */
static const uint32_t min_size[SC_REC_TYPE_COUNT] = {
#define SC_RECORD(name, id, text, type, size, what) [SC_REC_##name] = size,
#include "records.def"
#undef SC_RECORD
};

static const struct {
	const char *name, *text;
} lost_causes[SC_LOST_CAUSES] = {
	[SC_LOST_LIMIT] = { "buffer-limit",
			    "the recording buffer limit was reached (--buffer-limit-mb)" },
	[SC_LOST_DISK] = { "disk-full", "the disk was full or below its reserve "
					"(--buffer-disk-reserve-mb)" },
	[SC_LOST_REENTRY] = { "handler-during-exchange",
			      "a signal handler recorded while its thread was changing chunks" },
	[SC_LOST_NO_THREAD] = { "thread-ended", "the thread had already ended, or was forking" },
	[SC_LOST_TOO_LARGE] = { "too-large", "the record was larger than half a chunk "
					     "(--buffer-chunk-kb)" },
	[SC_LOST_NO_FILE] = { "raw-file-closed", "the program closed syscope's raw file and it "
						 "could not be opened again" },
	[SC_LOST_NO_MEMORY] = { "no-memory", "a thread's buffer could not be mapped" },
	[SC_LOST_FAULT] = { "fault", "memory being copied into it could not be read" },
	[SC_LOST_WRITE] = { "write-failed", "their write into the raw file failed" },
};

const char *sc_lost_cause_name(unsigned cause)
{
	return cause < SC_LOST_CAUSES && lost_causes[cause].name ? lost_causes[cause].name
								 : "unknown";
}

const char *sc_lost_cause_text(unsigned cause)
{
	return cause < SC_LOST_CAUSES && lost_causes[cause].text ? lost_causes[cause].text
								 : "an unknown cause";
}

const char *sc_disk_errno_text(int e)
{
	switch (e) {
	case EFBIG:
		return "the file size limit (ulimit -f) was reached";
	case ENOSPC:
		return "the disk was full";
	case EDQUOT:
		return "the disk quota was exceeded";
	default:
		return NULL;
	}
}

const char *sc_lost_disk_text(int disk_errno)
{
	const char *text = sc_disk_errno_text(disk_errno);

	return text ? text : lost_causes[SC_LOST_DISK].text;
}

const struct sc_file_header *sc_raw_live_header(const struct sc_raw *r)
{
	return (const struct sc_file_header *)r->data;
}

const char *sc_record_type_name(unsigned type)
{
	return type < SC_REC_TYPE_COUNT && type_names[type] ? type_names[type] : "unknown";
}

uint64_t sc_record_ts(const struct sc_record *rec)
{
	switch (rec->type) {
	case SC_REC_OWNER:
	case SC_REC_ENVIRON:
	case SC_REC_SETTINGS:
		return 0;
	default:
		if (rec->type >= SC_REC_TYPE_COUNT || rec->size < 16)
			return 0;
		return *(const uint64_t *)(rec + 1);
	}
}

/* `len` bytes (at least one, at most `room`) of text ending in its only required NUL. */
static bool text_ok(const char *t, uint32_t len, uint64_t room)
{
	return len >= 1 && len <= room && t[len - 1] == '\0';
}

/* Name, category and arguments of a region record whose fixed part is `fixed` bytes. */
static bool region_tail_valid(const struct sc_rec_region *g, size_t fixed, uint32_t size)
{
	const char *t = (const char *)g + fixed;
	uint64_t tail = (uint64_t)g->name_len + g->cat_len + g->args_len;

	if (!g->name_len || !g->cat_len || tail > size - fixed || t[g->name_len - 1] ||
	    t[g->name_len + g->cat_len - 1])
		return false;
	return sc_region_args_valid(t + g->name_len + g->cat_len, g->args_len, g->nargs);
}

bool sc_record_well_formed(const struct sc_record *rec)
{
	uint32_t size = rec->size, body = size - (uint32_t)sizeof(*rec);

	if (rec->type >= SC_REC_TYPE_COUNT || size < min_size[rec->type])
		return false;
	switch (rec->type) {
	case SC_REC_PROCESS: {
		const struct sc_rec_process *p = (const void *)rec;
		uint64_t tail = (uint64_t)p->exe_len + p->cmdline_len + p->cwd_len;

		return tail <= size - sizeof(*p);
	}
	case SC_REC_MODULE_LOAD:
	case SC_REC_MODULE_UNLOAD: {
		const struct sc_rec_module *m = (const void *)rec;

		return m->nsegments <= SC_MAX_SEGMENTS && m->build_id_len <= SC_MAX_BUILD_ID &&
		       m->path_len >= 1 && m->path_len <= size - sizeof(*m) &&
		       ((const char *)(m + 1))[m->path_len - 1] == '\0';
	}
	case SC_REC_SAMPLE: {
		const struct sc_rec_sample *s = (const void *)rec;

		return sizeof(*s) + (uint64_t)s->nframes * 8 <= size;
	}
	case SC_REC_EXEC: {
		const struct sc_rec_exec *e = (const void *)rec;

		return e->path_len >= 1 && e->path_len <= size - sizeof(*e) &&
		       ((const char *)(e + 1))[e->path_len - 1] == '\0';
	}
	case SC_REC_NOTE: {
		const struct sc_rec_note *n = (const void *)rec;

		return n->text_len >= 1 && n->text_len <= size - sizeof(*n) &&
		       ((const char *)(n + 1))[n->text_len - 1] == '\0';
	}
	case SC_REC_REGION_BEGIN:
	case SC_REC_MARK:
		return region_tail_valid((const void *)rec, sizeof(struct sc_rec_region), size);
	case SC_REC_MPI_CALL: {
		const struct sc_rec_mpi_call *c = (const void *)rec;

		return c->end >= c->ts &&
		       sizeof(*c) + (uint64_t)c->ndone * sizeof(struct sc_mpi_done) <= size;
	}
	case SC_REC_OMP_BEGIN:
		return sizeof(struct sc_rec_omp_begin) + 8 * (uint64_t)SC_OMP_NARGS(rec->flags) <=
		       size;
	case SC_REC_OMP_REGION:
		return size >= sizeof(struct sc_rec_omp_region) &&
		       SC_OMP_REGION_WIDE(size) + 1 + !SC_OMP_REGION_WIDE(size) >=
			       SC_OMP_NARGS(rec->flags); /* none after it: two in `first` */
	case SC_REC_CLOCK_SYNC: {
		const struct sc_rec_clock_sync *c = (const void *)rec;

		return c->end >= c->ts && c->when >= c->ts && c->when <= c->end;
	}
	case SC_REC_REGION_SPAN: {
		const struct sc_rec_region_span *sp = (const void *)rec;

		return sp->tid && sp->end >= sp->r.ts &&
		       region_tail_valid(&sp->r, sizeof(*sp), size);
	}
	case SC_REC_COUNTER_TRACK: {
		const struct sc_rec_counter_track *c = (const void *)rec;
		const char *t = (const char *)(c + 1);

		return c->name_len && c->unit_len &&
		       (uint64_t)c->name_len + c->unit_len <= size - sizeof(*c) &&
		       !t[c->name_len - 1] && !t[c->name_len + c->unit_len - 1];
	}
	case SC_REC_STRING: {
		const struct sc_rec_string *r = (const void *)rec;

		return r->id && text_ok((const char *)(r + 1), r->len, size - sizeof(*r));
	}
	case SC_REC_GPU_AGENT: {
		const struct sc_rec_gpu_agent *a = (const void *)rec;
		const char *t = (const char *)(a + 1);

		return (uint64_t)a->name_len + a->vendor_len <= size - sizeof(*a) &&
		       text_ok(t, a->name_len, a->name_len) &&
		       text_ok(t + a->name_len, a->vendor_len, a->vendor_len);
	}
	case SC_REC_GPU_STREAM: {
		const struct sc_rec_gpu_stream *g = (const void *)rec;

		return text_ok((const char *)(g + 1), g->name_len, size - sizeof(*g));
	}
	case SC_REC_GPU_OP: {
		const struct sc_rec_gpu_op *o = (const void *)rec;

		return o->kind && o->kind < SC_GPU_OP_KINDS && o->end >= o->start;
	}
	case SC_REC_PMC_EVENTS: {
		const struct sc_rec_pmc_events *e = (const void *)rec;
		const char *t = (const char *)(e + 1);
		uint32_t nuls = 0;

		if (!e->count || e->count > SC_PMC_MAX || !e->names_len ||
		    e->names_len > size - sizeof(*e) || t[e->names_len - 1])
			return false;
		for (uint32_t i = 0; i < e->names_len; i++)
			nuls += !t[i];
		return nuls == e->count;
	}
	case SC_REC_PMC_READ:
		return ((const struct sc_rec_pmc_read *)rec)->valid < (1u << SC_PMC_MAX);
	case SC_REC_GPU_METRICS: {
		const struct sc_rec_gpu_metrics *g = (const void *)rec;
		const char *t = (const char *)(g + 1);
		uint64_t room = size - sizeof(*g), nuls = 0;

		if (!g->count || g->count > SC_GPU_METRICS_MAX)
			return false;
		if (!(rec->flags & SC_GPU_METRICS_NAMES))
			return (uint64_t)g->count * sizeof(double) <= room;
		for (uint64_t i = 0; i < room && nuls < g->count; i++)
			nuls += !t[i];
		return nuls == g->count;
	}

	default:
		(void)body;
		return true;
	}
}

static bool valid_arg_type(char c)
{
	switch (c) {
	case SC_ARG_INT:
	case SC_ARG_UINT:
	case SC_ARG_DOUBLE:
	case SC_ARG_STRING:
	case SC_ARG_POINTER:
		return true;
	default:
		return false;
	}
}

bool sc_region_args_valid(const char *args, uint32_t len, uint32_t nargs)
{
	const char *p = args, *end = args + len;

	/* nargs triples of NUL-terminated strings, filling the space exactly, known types. */
	for (uint32_t i = 0; i < 3 * nargs; i++) {
		const char *nul = p;

		/* Short strings, every region's: a loop, not memchr's call. */
		while (nul < end && *nul)
			nul++;
		if (nul == end)
			return false;
		if (i % 3 == 0 && (nul - p != 1 || !valid_arg_type(*p)))
			return false;
		p = nul + 1;
	}
	return p == end;
}

int sc_raw_open(struct sc_raw *r, const char *path, char *err, size_t errlen)
{
	struct stat st;
	void *map;
	int fd;

	memset(r, 0, sizeof(*r));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;

		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e));
		return -e;
	}
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	if (st.st_size == 0) {
		close(fd);
		snprintf(err, errlen, "%s: empty (the process never started recording)", path);
		return -ENODATA;
	}
	if ((size_t)st.st_size < sizeof(struct sc_file_header)) {
		close(fd);
		snprintf(err, errlen, "%s: %lld bytes, shorter than the %zu-byte header: truncated",
			 path, (long long)st.st_size, sizeof(struct sc_file_header));
		return -EINVAL;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		int e = errno;

		snprintf(err, errlen, "%s: cannot map: %s", path, strerror(e));
		return -e;
	}
	r->path = strdup(path);
	r->data = map;
	r->size = (size_t)st.st_size;
	memcpy(&r->hdr, map, sizeof(r->hdr));

	if (memcmp(r->hdr.magic, SC_FILE_MAGIC, sizeof(r->hdr.magic))) {
		snprintf(err, errlen,
			 "%s: not a syscope raw file (or its header was never finished)", path);
		goto invalid;
	}
	if (r->hdr.byte_order != SC_BYTE_ORDER_MARK) {
		snprintf(err, errlen, "%s: written on a machine of the other byte order", path);
		goto invalid;
	}
	if (r->hdr.version < SC_FORMAT_MIN_VERSION || r->hdr.version > SC_FORMAT_VERSION) {
		snprintf(err, errlen,
			 "%s: record format version %u; this syscope reads versions %u to %u", path,
			 r->hdr.version, SC_FORMAT_MIN_VERSION, SC_FORMAT_VERSION);
		goto invalid;
	}
	if (r->hdr.header_size < sizeof(struct sc_file_header) || r->hdr.chunk_size < 4096 ||
	    r->hdr.chunk_size % 8 || r->hdr.chunk_size > (1u << 30)) {
		snprintf(err, errlen, "%s: header damaged (header size %u, chunk size %u)", path,
			 r->hdr.header_size, r->hdr.chunk_size);
		goto invalid;
	}
	r->nchunks = r->size > r->hdr.header_size
			     ? (uint32_t)((r->size - r->hdr.header_size + r->hdr.chunk_size - 1) /
					  r->hdr.chunk_size)
			     : 0;
	r->checked = sc_xcalloc(r->nchunks ? r->nchunks : 1, sizeof(*r->checked));
	return 0;

invalid:
	sc_raw_close(r);
	return -EINVAL;
}

void sc_raw_close(struct sc_raw *r)
{
	if (r->data)
		munmap((void *)r->data, r->size);
	free(r->path);
	free(r->checked);
	memset(r, 0, sizeof(*r));
}

__attribute__((format(printf, 3, 4))) static void diag(sc_raw_diag_fn fn, void *ctx,
						       const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fn(ctx, msg);
}

/* The offset of the first 8-byte word in [pos, end) that is not zero; `end` if none. */
static uint64_t next_nonzero(const unsigned char *data, uint64_t pos, uint64_t end)
{
	for (; pos + sizeof(uint64_t) <= end; pos += sizeof(uint64_t)) {
		uint64_t w;

		memcpy(&w, data + pos, sizeof(w));
		if (w)
			return pos;
	}
	return end;
}

static int walk_chunk(const struct sc_raw *r, uint32_t i, uint64_t start, uint64_t end,
		      uint64_t pos, int32_t tid, sc_raw_record_fn cb, void *ctx,
		      struct sc_raw_stats *stats, sc_raw_diag_fn diag_fn, void *diag_ctx)
{
	const uint64_t cs = r->hdr.chunk_size;
	const uint64_t checked = start + r->checked[i];
	bool clean = true;

	while (pos + sizeof(struct sc_record) <= end) {
		const struct sc_record *rec = (const void *)(r->data + pos);
		int rc;

		if (rec->size == 0 && rec->type == 0) {
			/* The end of the chunk's data, unless records follow a gap: a record that
			 * never got its header (its writer killed while a signal handler recorded
			 * after it), whose followers no reader can find. */
			uint64_t more = next_nonzero(r->data, pos + sizeof(*rec), end);

			if (more < end) {
				clean = false;
				stats->damaged_chunks++;
				diag(diag_fn, diag_ctx,
				     "%s: offset %llu: records after %llu bytes of zeros cannot be "
				     "read; rest of chunk %u skipped",
				     r->path, (unsigned long long)pos,
				     (unsigned long long)(more - pos), i);
			}
			break;
		}
		if (pos + rec->size > end && end < start + cs && rec->size <= cs && rec->type != 0)
			break; /* the record the file's end cut: already reported */
		if (rec->size < sizeof(*rec) || rec->size % SC_RECORD_ALIGN ||
		    pos + rec->size > end || rec->type == 0) {
			clean = false;
			stats->damaged_chunks++;
			diag(diag_fn, diag_ctx,
			     "%s: offset %llu: damaged record (type %u, size %u); rest of chunk "
			     "%u skipped",
			     r->path, (unsigned long long)pos, rec->type, rec->size, i);
			break;
		}
		if (rec->type >= SC_REC_TYPE_COUNT) {
			stats->unknown_types++;
		} else if (pos + rec->size > checked && !sc_record_well_formed(rec)) {
			clean = false;
			stats->malformed++;
			diag(diag_fn, diag_ctx,
			     "%s: offset %llu: %s record of %u bytes is malformed; skipped",
			     r->path, (unsigned long long)pos, sc_record_type_name(rec->type),
			     rec->size);
		} else {
			if (rec->type == SC_REC_OWNER)
				tid = ((const struct sc_rec_owner *)rec)->tid;
			stats->records++;
			rc = cb(ctx, tid, rec, pos);
			if (rc)
				return rc;
		}
		pos += rec->size;
	}
	if (clean && pos - start > r->checked[i])
		r->checked[i] = (uint32_t)(pos - start);
	return 0;
}

/* Why chunks were claimed and never written, from what the header says of the end. */
static const char *unwritten_cause(const struct sc_raw *r)
{
	const struct sc_file_header *h = sc_raw_live_header(r);

	if (h->write_failed_bytes)
		return "writing them into the file failed";
	if (h->end_reason == SC_END_RUNNING)
		return "the process ended without running syscope's exit code (SIGKILL, or a "
		       "raw exit_group or execve system call) before its threads' buffers reached "
		       "the file";
	return "the process ended before its threads' buffers reached the file";
}

int sc_raw_foreach(const struct sc_raw *r, sc_raw_record_fn cb, void *ctx,
		   struct sc_raw_stats *stats, sc_raw_diag_fn diag_fn, void *diag_ctx)
{
	const uint64_t cs = r->hdr.chunk_size;

	uint32_t unwritten = 0;
	int result = 0;

	for (uint32_t i = 0; i < r->nchunks; i++) {
		uint64_t start = r->hdr.header_size + (uint64_t)i * cs;
		uint64_t end = start + cs, pos = start + sizeof(struct sc_chunk_header);
		const struct sc_chunk_header *ch = (const void *)(r->data + start);
		uint64_t page = start & ~(uint64_t)4095;
		int rc;

		if (start + sizeof(*ch) > r->size) {
			stats->truncated_chunks++;
			diag(diag_fn, diag_ctx,
			     "%s: chunk %u at offset %llu: cut short by end of file", r->path, i,
			     (unsigned long long)start);
			break;
		}
		if (ch->magic == 0) {
			/* Not claimed; or claimed and never written: the process was killed while
			 * the chunk was in its thread's buffer (runtime/recorder.c). */
			if (i < r->hdr.chunks_claimed)
				unwritten++;
			continue;
		}
		if (ch->magic != SC_CHUNK_MAGIC || ch->index != i) {
			stats->damaged_chunks++;
			diag(diag_fn, diag_ctx,
			     "%s: chunk %u at offset %llu: bad chunk header; skipped", r->path, i,
			     (unsigned long long)start);
			continue;
		}
		if (end > r->size) {
			stats->truncated_chunks++;
			diag(diag_fn, diag_ctx,
			     "%s: chunk %u at offset %llu: file ends at %zu, inside the chunk; reading what "
			     "is there",
			     r->path, i, (unsigned long long)start, r->size);
			end = r->size;
		}
		rc = walk_chunk(r, i, start, end, pos, ch->tid, cb, ctx, stats, diag_fn, diag_ctx);
		sc_progress_add(end - start);
		/* Done with this chunk: let its pages go, so reading a session of any size
		 * takes memory for the model only. */
		madvise((void *)(r->data + page), end - page, MADV_DONTNEED);
		if (rc) {
			result = rc;
			break;
		}
	}
	if (unwritten && sc_raw_live_header(r)->lost_write_records) {
		/* The writer counted what its failed writes lost, record by record. */
		diag(diag_fn, diag_ctx,
		     "%s: %u chunk%s claimed but never written: writing them into the file "
		     "failed; their records are among the %llu lost records counted for it",
		     r->path, unwritten, unwritten == 1 ? " was" : "s were",
		     (unsigned long long)sc_raw_live_header(r)->lost_write_records);
	} else if (unwritten) {
		stats->unwritten_chunks += unwritten;
		diag(diag_fn, diag_ctx,
		     "%s: %u chunk%s claimed but never written: %s; their records (up to %u KiB) "
		     "are lost",
		     r->path, unwritten, unwritten == 1 ? " was" : "s were", unwritten_cause(r),
		     unwritten * (uint32_t)(cs >> 10));
	}
	return result;
}
