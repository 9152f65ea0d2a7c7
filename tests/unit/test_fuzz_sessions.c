/* SPDX-License-Identifier: MIT */
/*
 * Deterministic fuzzing of real inputs through everything `syscope convert` runs: each seed
 * (a session folder, whose first raw file is mutated, or a rocpd database) is damaged
 * ROUNDS times (bit flips, bytes, words and extreme values, record flags, truncation,
 * zeroed or repeated stretches) and each result goes through the reader (raw files, or the
 * rocpd import), the model, the profiles, every sink and the summary, in this process.
 * Under the ASan/UBSan build any read past a buffer or an index is reported.
 *
 *   test_fuzz_sessions ROUNDS SEED INPUT...
 *
 * tests/integration/test_guarantees_input.py makes the seeds (a sampling session, an
 * instrumented one, a synthetic one with GPU records, their rocpd databases) and runs this
 * with a fixed seed; scripts/fuzz-reader runs it longer with other seeds. Exit status: 0
 * when every unmutated seed reads back with data and nothing crashed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "common/strutil.h"
#include "model/import.h"
#include "model/model.h"
#include "model/profile.h"
#include "sinks/sink.h"
#include "sinks/summary.h"
#include "store/format.h"
#include "store/session.h"

static uint64_t rng;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint8_t *slurp(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *buf;

	if (fd < 0 || fstat(fd, &st))
		return NULL;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		close(fd);
		return NULL;
	}
	close(fd);
	*size = (size_t)st.st_size;
	return buf;
}

static void spill(const char *path, const uint8_t *data, size_t size)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
}

/* Where the data ends: raw files are preallocated in chunks, mostly zeros at the end. */
static size_t used_size(const uint8_t *f, size_t size)
{
	while (size > 8 && !f[size - 1])
		size--;
	return size;
}

static void put32(uint8_t *f, size_t size, size_t at, uint32_t v)
{
	at &= ~(size_t)3;
	if (at + 4 <= size)
		memcpy(f + at, &v, 4);
}

static void mutate(uint8_t *f, size_t *size, size_t used, bool raw)
{
	static const uint32_t extreme[] = { 0, 1, 7, 8, 0xffff, 0xffffffffu, 0x7fffffffu, 4096 };
	unsigned n = 1 + (unsigned)(next_random() % 4);
	/* Past the header of a raw file, where the records are, most of the time. */
	size_t from = raw && used > SC_FILE_HEADER_SIZE + 64 && next_random() % 4
			      ? SC_FILE_HEADER_SIZE
			      : 0;

	for (unsigned k = 0; k < n; k++) {
		size_t at = from + (size_t)(next_random() % (used - from));

		switch (next_random() % 8) {
		case 0:
			f[at] ^= (uint8_t)(1u << (next_random() % 8));
			break;
		case 1:
			f[at] = (uint8_t)next_random();
			break;
		case 2:
			put32(f, *size, at, (uint32_t)next_random());
			break;
		case 3:
			put32(f, *size, at, extreme[next_random() % 8]);
			break;
		case 4: /* a record header's flags (bytes 6-7 of an 8-aligned word) */
			at = (at & ~(size_t)7) + 6 + next_random() % 2;
			if (at < *size)
				f[at] ^= (uint8_t)(1u << (next_random() % 8));
			break;
		case 5:
			if (next_random() % 3 == 0)
				*size = at;
			break;
		case 6: { /* a stretch repeated from elsewhere (records seen twice) */
			size_t src = (size_t)(next_random() % used), len = 8 + next_random() % 120;

			if (src + len <= *size && at + len <= *size)
				memmove(f + at, f + src, len);
			break;
		}
		default:
			for (size_t i = at; i < *size && i < at + 16; i++)
				f[i] = 0;
			break;
		}
		if (*size < 8)
			*size = 8;
	}
}

static struct sc_settings settings;
static FILE *devnull;

/* What convert does with a built model: profiles, every sink, the summary. */
static void write_everything(struct sc_model *m, const char *out_dir, bool from_database)
{
	struct sc_profile_set profiles;
	struct sc_output out = { .settings = &settings,
				 .dir = out_dir,
				 .from_database = from_database };

	sc_profiles_build(&profiles, m, true);
	out.model = m;
	out.profiles = &profiles;
	sc_sinks_write_all(&out);
	sc_summary_print(devnull, &out, 5);
	sc_output_free(&out);
	sc_profiles_free(&profiles);
}

/* Read a session folder through everything; returns the samples and function entries the
 * model holds (0 when nothing was read). */
static uint64_t convert_session(const char *dir)
{
	struct sc_session s;
	struct sc_model m;
	char err[512];
	uint64_t got;

	if (sc_session_open(&s, dir, err, sizeof(err)))
		return 0;
	sc_model_build(&m, &s, true);
	got = m.samples[SC_SAMPLE_CPUTIME] + m.samples[SC_SAMPLE_REALTIME] + m.processes.n;
	write_everything(&m, dir, false);
	sc_model_free(&m);
	sc_session_close(&s);
	return got;
}

static uint64_t convert_database(const char *db, const char *out_dir)
{
	struct sc_session s = { .dir = sc_xstrdup(out_dir) };
	struct sc_model m;
	char *paths[] = { (char *)db };
	char err[1024];
	uint64_t got = 0;

	if (!sc_model_import_rocpd(&m, &s, paths, 1, true, 0, err, sizeof(err))) {
		got = m.processes.n;
		write_everything(&m, out_dir, true);
	}
	sc_model_free(&m);
	sc_session_close(&s);
	return got;
}

/* The first raw file of a session folder (malloc'd path), or NULL. */
static char *first_raw(const char *dir)
{
	char *raw = sc_xasprintf("%s/raw", dir), *found = NULL;
	DIR *d = opendir(raw);
	struct dirent *de;

	while (d && !found && (de = readdir(d)))
		if (sc_ends_with(de->d_name, SC_RAW_SUFFIX))
			found = sc_xasprintf("%s/%s", raw, de->d_name);
	if (d)
		closedir(d);
	free(raw);
	return found;
}

static char work[] = "/tmp/syscope-fuzz-sessions-XXXXXX";

/* A copy of the session folder's raw/ in the work folder, the raw file left out; returns the
 * path the mutated raw file goes to. */
static char *work_session(const char *dir, const char *raw_path, unsigned index)
{
	char *sess = sc_xasprintf("%s/s%u", work, index), *rawdir = sc_xasprintf("%s/raw", sess);
	char *src = sc_xasprintf("%s/raw", dir);
	DIR *d = opendir(src);
	struct dirent *de;
	const char *base = strrchr(raw_path, '/') + 1;

	mkdir(sess, 0755);
	mkdir(rawdir, 0755);
	while (d && (de = readdir(d))) {
		char *from, *to;
		uint8_t *data;
		size_t size;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, base))
			continue;
		from = sc_xasprintf("%s/%s", src, de->d_name);
		to = sc_xasprintf("%s/%s", rawdir, de->d_name);
		data = slurp(from, &size);
		if (data)
			spill(to, data, size);
		free(data);
		free(from);
		free(to);
	}
	if (d)
		closedir(d);
	free(src);
	free(sess);
	src = sc_xasprintf("%s/%s", rawdir, base);
	free(rawdir);
	return src;
}

static void fuzz_input(const char *input, unsigned index, unsigned rounds)
{
	struct stat st;
	bool is_dir = !stat(input, &st) && S_ISDIR(st.st_mode);
	char *raw = is_dir ? first_raw(input) : NULL;
	char *target, *sess = sc_xasprintf("%s/s%u", work, index);
	uint8_t *seed, *buf;
	size_t size, used;

	if (is_dir && !raw) {
		fprintf(stderr, "%s: no raw file\n", input);
		CHECK(raw != NULL);
		free(sess);
		return;
	}
	seed = slurp(is_dir ? raw : input, &size);
	CHECK(seed != NULL);
	if (!seed) {
		free(raw);
		free(sess);
		return;
	}
	if (is_dir) {
		target = work_session(input, raw, index);
	} else {
		mkdir(sess, 0755);
		target = sc_xasprintf("%s/input.db", sess);
	}
	used = used_size(seed, size);
	buf = malloc(size + 1);
	/* The seed itself reads back. */
	spill(target, seed, size);
	CHECK((is_dir ? convert_session(sess) : convert_database(target, sess)) > 0);
	for (unsigned r = 0; r < rounds; r++) {
		size_t n = size;

		memcpy(buf, seed, size);
		mutate(buf, &n, used, is_dir);
		spill(target, buf, n);
		if (is_dir)
			convert_session(sess); /* any result but a crash or a sanitizer report */
		else
			convert_database(target, sess);
	}
	printf("%s: %u rounds\n", input, rounds);
	free(buf);
	free(seed);
	free(target);
	free(raw);
	free(sess);
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

int main(int argc, char **argv)
{
	char err[SC_ERRMSG_MAX];

	if (argc < 4) {
		fprintf(stderr, "usage: test_fuzz_sessions ROUNDS SEED INPUT...\n");
		return 2;
	}
	rng = strtoull(argv[2], NULL, 0) | 1;
	devnull = fopen("/dev/null", "w");
	if (!devnull || !mkdtemp(work) || sc_settings_init(&settings) ||
	    sc_settings_set(&settings, SC_SET_OUTPUT_FORMAT, "rocpd pftrace text json folded csv",
			    SC_LAYER_CLI, err))
		return 2;
	for (int i = 3; i < argc; i++)
		fuzz_input(argv[i], (unsigned)i, (unsigned)atoi(argv[1]));
	nftw(work, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	sc_settings_free(&settings);
	fclose(devnull);
	return check_report("test_fuzz_sessions");
}
