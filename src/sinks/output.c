/* SPDX-License-Identifier: MIT */
/* File writing shared by the sinks: temporary name, then rename; and the sink table. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sink.h"

static const struct sc_sink *const sinks[] = {
	&sc_sink_rocpd, &sc_sink_pftrace, &sc_sink_text,
	&sc_sink_json,	&sc_sink_folded,  &sc_sink_csv,
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
		if (sc_list_has(out->settings, SC_SET_OUTPUT_FORMAT, sinks[i]->token) &&
		    sinks[i]->write(out))
			failed++;
	if (!out->from_database && sc_sink_metadata.write(out))
		failed++;
	return failed;
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

	memset(of, 0, sizeof(*of));
	va_start(ap, fmt);
	if (vasprintf(&of->name, fmt, ap) < 0)
		of->name = NULL;
	va_end(ap);
	if (!of->name)
		return -ENOMEM;
	of->path = sc_xasprintf("%s/%s", out->dir, of->name);
	of->tmp = sc_xasprintf("%s/.%s.tmp%d", out->dir, of->name, (int)getpid());
	of->f = fopen(of->tmp, "w");
	if (!of->f) {
		int e = errno;

		*VEC_PUSH(&out->errors) = sc_xasprintf("cannot write %s: %s", of->tmp, strerror(e));
		free(of->name);
		free(of->path);
		free(of->tmp);
		memset(of, 0, sizeof(*of));
		return -e;
	}
	return 0;
}

int sc_out_close(struct sc_output *out, struct sc_outfile *of)
{
	int rc = 0;

	if (!of->f)
		return -EINVAL;
	if (ferror(of->f) | fclose(of->f))
		rc = -(errno ? errno : EIO);
	else if (rename(of->tmp, of->path))
		rc = -errno;
	if (rc) {
		*VEC_PUSH(&out->errors) =
			sc_xasprintf("cannot write %s: %s", of->path, strerror(-rc));
		unlink(of->tmp);
		free(of->name);
	} else {
		*VEC_PUSH(&out->written) = of->name;
	}
	free(of->path);
	free(of->tmp);
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
