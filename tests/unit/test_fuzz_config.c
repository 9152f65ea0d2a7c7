/* SPDX-License-Identifier: MIT */
/*
 * Deterministic fuzzing of the configuration parsers: text configuration files, JSON
 * configuration files, preset documents and SYSCOPE_* environment values, each seeded with
 * valid input and mutated (bytes flipped, inserted, deleted, spliced with tokens that matter
 * to the parser) for a bounded number of rounds and at most a few seconds. Every input must
 * either load or fail with a message; under the ASan/UBSan build any out-of-bounds access
 * fails the test. The seeds themselves must load.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "common/log.h"
#include "common/settings.h"
#include "config/config.h"

#define ROUNDS 4000
#define SECONDS_PER_KIND 3
#define MAX_INPUT 4096

static uint64_t rng = 0xc0f16;
static char path[64];

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static const char *const tokens[] = {
	"=",
	"$",
	"${",
	"}",
	"#",
	"\n",
	"\"",
	"{",
	"[",
	"]",
	",",
	":",
	"true",
	"null",
	"-1",
	"1e309",
	"0x10",
	"SYSCOPE_",
	"SAMPLING_FREQ",
	"CUDA_DOMAINS",
	"settings",
	"metadata",
	"\\u0000",
	"99999999999999999999",
	"kernel",
	"\xff\xfe",
	"  ",
};

/* One random change to `buf` (length *n), keeping it under MAX_INPUT. */
static void mutate(char *buf, size_t *n)
{
	size_t at = *n ? next_random() % *n : 0;

	switch (next_random() % 5) {
	case 0: /* flip a bit */
		if (*n)
			buf[at] ^= (char)(1u << (next_random() % 8));
		break;
	case 1: /* delete a run */
		if (*n) {
			size_t len = 1 + next_random() % 8;

			if (at + len > *n)
				len = *n - at;
			memmove(buf + at, buf + at + len, *n - at - len);
			*n -= len;
		}
		break;
	case 2: { /* insert a token */
		const char *t = tokens[next_random() % (sizeof(tokens) / sizeof(tokens[0]))];
		size_t len = strlen(t);

		if (*n + len < MAX_INPUT) {
			memmove(buf + at + len, buf + at, *n - at);
			memcpy(buf + at, t, len);
			*n += len;
		}
		break;
	}
	case 3: /* overwrite with a random byte */
		if (*n)
			buf[at] = (char)(next_random() & 0xff);
		break;
	default: /* truncate */
		*n = at;
	}
}

static void write_input(const char *data, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(data, 1, n, f) != n || fclose(f)) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(2);
	}
}

/* A failure must say something; a success must leave every value parsable. */
static void check_result(int rc, const char *err, const struct sc_settings *s)
{
	CHECK(rc == 0 || rc == -1);
	if (rc)
		CHECK(err[0] != '\0');
	for (int id = 0; !rc && id < SC_SETTING_COUNT; id++) {
		struct sc_settings probe;
		char e[SC_ERRMSG_MAX];

		if (sc_settings_init(&probe))
			continue;
		CHECK(sc_settings_set(&probe, (enum sc_setting_id)id, s->v[id].text, SC_LAYER_CLI,
				      e) == 0);
		sc_settings_free(&probe);
	}
}

typedef int (*loader)(const char *input, size_t n, char err[SC_CONFIG_ERR], struct sc_settings *s);

static int load_config(const char *input, size_t n, char err[SC_CONFIG_ERR], struct sc_settings *s)
{
	write_input(input, n);
	return sc_config_file_load(path, s, err);
}

static int load_preset(const char *input, size_t n, char err[SC_CONFIG_ERR], struct sc_settings *s)
{
	struct sc_preset p;
	int rc;

	write_input(input, n);
	rc = sc_preset_load(path, "", &p, err);
	if (!rc) {
		rc = sc_preset_apply(&p, s, err);
		sc_preset_free(&p);
	}
	return rc;
}

static int load_env(const char *input, size_t n, char err[SC_CONFIG_ERR], struct sc_settings *s)
{
	char var[MAX_INPUT + 64];
	char *env[2] = { var, NULL };

	snprintf(var, sizeof(var), "%.*s", (int)n, input);
	if (memchr(input, '\0', n))
		return 0; /* an environment string cannot hold a NUL */
	return sc_settings_load_env(s, env, err) ? -1 : 0;
}

static void fuzz(const char *kind, const char *seed, loader load)
{
	char buf[MAX_INPUT], err[SC_CONFIG_ERR];
	size_t n = strlen(seed);
	time_t until = time(NULL) + SECONDS_PER_KIND;
	struct sc_settings s;
	int rounds = 0;

	if (sc_settings_init(&s))
		exit(2);
	err[0] = '\0';
	if (load(seed, n, err, &s))
		fprintf(stdout, "%s seed failed: %s\n", kind, err);
	CHECK(err[0] == '\0');
	sc_settings_free(&s);
	for (; rounds < ROUNDS && time(NULL) < until; rounds++) {
		int rc;

		n = strlen(seed);
		memcpy(buf, seed, n);
		for (unsigned k = 1 + next_random() % 4; k; k--)
			mutate(buf, &n);
		if (sc_settings_init(&s))
			exit(2);
		err[0] = '\0';
		rc = load(buf, n, err, &s);
		check_result(rc, err, &s);
		sc_settings_free(&s);
	}
	printf("%s: %d inputs\n", kind, rounds);
}

int main(void)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/syscope-fuzz-config-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return 2;
	close(fd);
	sc_log_verbosity = -1; /* the parsers' warnings; a sanitizer's report still shows */
	fuzz("text configuration",
	     "# comment\n$RATE = 250\nSYSCOPE_SAMPLING_FREQ = $RATE\ncuda_domains = kernel "
	     "memory\noutput-format = rocpd text\nSAMPLING_DELAY = 0.5\n",
	     load_config);
	fuzz("JSON configuration",
	     "{\"SAMPLING_FREQ\": 250, \"CUDA_DOMAINS\": [\"kernel\", \"nvtx\"], "
	     "\"USE_CUDA\": true, \"OUTPUT_PATH\": \"out\"}",
	     load_config);
	fuzz("preset",
	     "{\"$schema\": \"schema.json\", \"metadata\": {\"name\": \"f\", \"category\": "
	     "\"custom\", \"description\": \"d\", \"not_yet_available\": [\"x\"]}, \"settings\": "
	     "{\"SAMPLING_FREQ\": 50, \"CUDA_DOMAINS\": [\"runtime\"], \"BUFFER_CHUNK_KB\": 64, "
	     "\"SAMPLING_REALTIME\": false}}",
	     load_preset);
	fuzz("environment", "SYSCOPE_CUDA_DOMAINS=runtime kernel", load_env);
	unlink(path);
	return check_report("test_fuzz_config");
}
