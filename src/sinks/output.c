/* SPDX-License-Identifier: MIT */
/* File writing shared by the sinks (through safe_output.h: a temporary beside the file,
 * renamed over it when complete); and the sink table. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/safe_output.h"
#include "../model/gpu_idle.h"
#include "html.h"
#include "sink.h"
#include "sink_apart.h"

static const struct sc_sink *const sinks[] = {
	&sc_sink_rocpd,	 &sc_sink_pftrace, &sc_sink_text, &sc_sink_json,
	&sc_sink_folded, &sc_sink_csv,	   &sc_sink_html,
};

const struct sc_sink *sc_sink_find(const char *token)
{
	for (size_t i = 0; i < sizeof(sinks) / sizeof(sinks[0]); i++)
		if (!strcmp(sinks[i]->token, token))
			return sinks[i];
	return NULL;
}

const char *sc_sink_tokens(void)
{
	static char buf[256];

	if (!buf[0])
		for (size_t i = 0; i < sizeof(sinks) / sizeof(sinks[0]); i++)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
				 i ? ", " : "", sinks[i]->token);
	return buf;
}

unsigned sc_sinks_replaying(const struct sc_settings *s)
{
	unsigned n = 0;

	for (size_t i = 0; i < sizeof(sinks) / sizeof(sinks[0]); i++)
		n += sinks[i]->replays && sc_list_has(s, SC_SET_OUTPUT_FORMAT, sinks[i]->token);
	return n;
}

int sc_sinks_write_all(struct sc_output *out)
{
	int failed = 0;

	for (size_t i = 0; i < sizeof(sinks) / sizeof(sinks[0]); i++)
		if (!(out->apart && sinks[i] == out->apart->sink) &&
		    sc_list_has(out->settings, SC_SET_OUTPUT_FORMAT, sinks[i]->token) &&
		    sinks[i]->write(out))
			failed++;
	if (out->apart) /* its files are listed in the metadata */
		failed += sc_sink_apart_finish(out->apart, out);
	if (!out->from_database && sc_sink_metadata.write(out))
		failed++;
	return failed;
}

void sc_output_free(struct sc_output *out)
{
	for (size_t i = 0; i < out->written.n; i++)
		free(out->written.v[i]);
	for (size_t i = 0; i < out->errors.n; i++)
		free(out->errors.v[i]);
	VEC_FREE(&out->written);
	VEC_FREE(&out->errors);
	if (out->idle)
		sc_idle_free(out->idle);
	free(out->idle);
	out->idle = NULL;
}

unsigned sc_output_threads(const struct sc_output *out)
{
	long n = sc_int(out->settings, SC_SET_CONVERT_THREADS);

	if (!n)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

int sc_output_each_profile(struct sc_output *out,
			   int (*fn)(struct sc_output *out, const struct sc_profile *p))
{
	int rc = 0;

	for (size_t i = 0; i < out->profiles->profiles.n; i++)
		if (fn(out, out->profiles->profiles.v[i]))
			rc = -1;
	return rc;
}

int sc_out_open(struct sc_output *out, struct sc_outfile *of, const char *fmt, ...)
{
	va_list ap;
	char err[512];

	memset(of, 0, sizeof(*of));
	va_start(ap, fmt);
	if (vasprintf(&of->name, fmt, ap) < 0)
		of->name = NULL;
	va_end(ap);
	if (!of->name)
		return -ENOMEM;
	of->path = sc_xasprintf("%s/%s", out->dir, of->name);
	if (sc_out_begin(&of->tmp, of->path, 0644, 0, err, sizeof(err)) ||
	    !(of->f = fdopen(of->tmp.fd, "w"))) {
		int e = errno ? errno : EIO;

		if (of->tmp.dest) {
			snprintf(err, sizeof(err), "cannot write %s: %s", of->path, strerror(e));
			sc_out_abort(&of->tmp, NULL);
		}
		*VEC_PUSH(&out->errors) = sc_xstrdup(err);
		free(of->name);
		free(of->path);
		memset(of, 0, sizeof(*of));
		return -e;
	}
	return 0;
}

int sc_out_close(struct sc_output *out, struct sc_outfile *of)
{
	char err[512];
	int rc = 0;

	if (!of->f)
		return -EINVAL;
	if (sc_out_commit(&of->tmp, of->f, err, sizeof(err))) {
		rc = -(errno ? errno : EIO);
		*VEC_PUSH(&out->errors) = sc_xstrdup(err);
		free(of->name);
	} else {
		*VEC_PUSH(&out->written) = of->name;
	}
	free(of->path);
	memset(of, 0, sizeof(*of));
	return rc;
}

const char *sc_thread_label(const struct sc_process *p, const struct sc_thread *t, char *buf,
			    size_t n)
{
	if (t->index != UINT32_MAX)
		snprintf(buf, n, "thread %u (tid %d%s%s)", t->index, (int)t->tid,
			 t->name[0] ? ", " : "", t->name);
	else
		snprintf(buf, n, "thread (tid %d%s%s)", (int)t->tid, t->name[0] ? ", " : "",
			 t->name);
	(void)p;
	return buf;
}
