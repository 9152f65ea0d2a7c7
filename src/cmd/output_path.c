/* SPDX-License-Identifier: MIT */
/* Output folder templates: placeholders, the launch time stamp (output_path.h). */
#include "output_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/strutil.h"
#include "../common/vec.h"
#include "cmd.h"

/* The environment of an attached process (NUL-separated, as /proc/PID/environ), whose
 * job the placeholders then name, or NULL: syscope's own. */
static char *job_env;
static size_t job_env_len;

/* `name`'s value in the attached process's environment, or NULL. */
static const char *job_env_get(const char *name)
{
	size_t n = strlen(name);

	for (size_t at = 0; at < job_env_len; at += strlen(job_env + at) + 1)
		if (!strncmp(job_env + at, name, n) && job_env[at + n] == '=')
			return job_env + at + n + 1;
	return NULL;
}

/* The first of the launchers' variables that is set (Open MPI, PMIx, MPICH's Hydra, Slurm),
 * or `none` outside a parallel job. */
static const char *job_var(const char *const *vars, const char *none)
{
	for (; *vars; vars++) {
		const char *v = job_env ? job_env_get(*vars) : getenv(*vars);

		if (v && *v)
			return v;
	}
	return none;
}

void sc_output_path_job_of(pid_t pid)
{
	char path[64];
	FILE *f;
	size_t got;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	f = fopen(path, "re");
	free(job_env);
	job_env = sc_xcalloc(1, 1 << 20);
	got = f ? fread(job_env, 1, (1 << 20) - 1, f) : 0;
	job_env[got] = '\0';
	job_env_len = got;
	if (f)
		fclose(f);
}

static const char *const rank_vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
					 "SLURM_PROCID", NULL };
static const char *const size_vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL };

int sc_output_path_job_size(void)
{
	return atoi(job_var(size_vars, "1"));
}

/* A misspelt placeholder (%rnak%) would silently become part of the folder's name, and put
 * every rank of a job in the same folder: refuse a %word% that is none of ours. */
static void refuse_unknown_placeholder(const char *tmpl, const char *p)
{
	size_t n = strspn(p + 1, "abcdefghijklmnopqrstuvwxyz_");

	if (n && p[1 + n] == '%')
		sc_die(SC_EXIT_USAGE, "-o %s: unknown placeholder '%.*s' (valid: %s)", tmpl,
		       (int)n + 2, p, SC_OUTPUT_PLACEHOLDERS);
}

/* The length of the variable's name after "%env{", which must be one (letters, digits,
 * underscores, not a digit first) closed by "}%": anything else is refused, as a misspelt
 * placeholder is, rather than kept in the folder's name. */
static size_t env_name_length(const char *tmpl, const char *name)
{
	size_t n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");

	if (!n || (name[0] >= '0' && name[0] <= '9') || strncmp(name + n, "}%", 2) || n > 200)
		sc_die(SC_EXIT_USAGE,
		       "-o %s: '%%env{%.*s' is not a variable's placeholder (valid: %%env{NAME}%%, "
		       "NAME made of letters, digits and '_')",
		       tmpl, (int)(n + (name[n] && name[n] != '%' ? 1 : 0)), name);
	return n;
}

/* Expand the placeholders of an output path. */
char *sc_output_path_expand(const char *tmpl, const char *tag, const char *launch_time)
{
	VEC(char) out = { 0 };
	char host[256] = "";

	gethostname(host, sizeof(host) - 1);
	for (const char *p = tmpl; *p;) {
		const char *val = NULL;
		char num[32], name[256];
		size_t skip = 0;

		if (!strncmp(p, "%tag%", 5)) {
			val = tag;
			skip = 5;
		} else if (!strncmp(p, "%pid%", 5)) {
			snprintf(num, sizeof(num), "%d", (int)getpid());
			val = num;
			skip = 5;
		} else if (!strncmp(p, "%rank%", 6)) {
			val = job_var(rank_vars, "0");
			skip = 6;
		} else if (!strncmp(p, "%size%", 6)) {
			val = job_var(size_vars, "1");
			skip = 6;
		} else if (!strncmp(p, "%host%", 6)) {
			val = host;
			skip = 6;
		} else if (!strncmp(p, "%launch_time%", 13)) {
			val = launch_time;
			skip = 13;
		} else if (!strncmp(p, "%env{", 5)) {
			size_t len = env_name_length(tmpl, p + 5);

			snprintf(name, sizeof(name), "%.*s", (int)len, p + 5);
			val = getenv(name);
			if (!val) {
				pr_warn("-o %s: %%env{%s}%%: %s is not set, so it expands to nothing",
					tmpl, name, name);
				val = "";
			}
			skip = len + 7;
		}
		if (!skip) {
			if (*p == '%')
				refuse_unknown_placeholder(tmpl, p);
			*VEC_PUSH(&out) = *p++;
			continue;
		}
		for (const char *v = val; *v; v++)
			*VEC_PUSH(&out) = *v;
		p += skip;
	}
	*VEC_PUSH(&out) = '\0';
	return out.v;
}

void sc_output_path_stamp(const struct sc_settings *s, char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;
	size_t n;

	localtime_r(&now, &tm);
	/* The format is the user's TIME_FORMAT setting; GCC cannot check a runtime format. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	n = strftime(buf, len, sc_str(s, SC_SET_TIME_FORMAT), &tm);
#pragma GCC diagnostic pop
	if (!n)
		snprintf(buf, len, "%ld", (long)now);
}

void sc_output_path_trim(char *path)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
}

char *sc_output_path_for_input(const struct sc_settings *s, const char *tmpl, const char *input)
{
	char stamp[128], *copy = sc_xstrdup(input), *path;
	const char *base;

	sc_output_path_trim(copy);
	base = strrchr(copy, '/');
	sc_output_path_stamp(s, stamp, sizeof(stamp));
	path = sc_output_path_expand(tmpl, base && base[1] ? base + 1 : copy, stamp);
	free(copy);
	return path;
}
