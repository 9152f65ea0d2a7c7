/* SPDX-License-Identifier: MIT */
/*
 * syscope summary --why-idle SESSION|DB...: why each GPU was idle (model/gpu_idle.h). Unlike
 * the other sections of `summary`, this needs the model (samples with their stacks and GIL
 * state, regions, GPU ops), not SQL: a session folder with raw files is read directly, any
 * other input through its rocpd databases, imported together (a merged job's ranks).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../common/log.h"
#include "../common/vec.h"
#include "../model/import.h"
#include "../sinks/summary_idle.h"
#include "cmd.h"
#include "why_idle.h"

static bool is_raw_session(const char *path)
{
	char *raw = sc_xasprintf("%s/raw", path);
	struct stat st;
	bool yes = !stat(raw, &st) && S_ISDIR(st.st_mode);

	free(raw);
	return yes;
}

static int build_model(struct sc_model *m, struct sc_session *s, char *const *inputs, int n)
{
	VEC(char *) files = { 0 };
	char err[1024];
	int rc = 0;

	if (n == 1 && is_raw_session(inputs[0])) {
		if (sc_session_open(s, inputs[0], err, sizeof(err)))
			sc_die(SC_EXIT_FAILURE, "%s", err);
		if (!s->files.n)
			sc_die(SC_EXIT_FAILURE, "%s holds no recorded data", inputs[0]);
		return sc_model_build(m, s, true);
	}
	for (int i = 0; i < n; i++)
		sc_rocpd_inputs(inputs[i], &files);
	if (!files.n)
		sc_die(SC_EXIT_FAILURE, "no rocpd databases in %s", inputs[0]);
	s->dir = sc_xstrdup(".");
	if (sc_model_import_rocpd(m, s, files.v, files.n, true, 0, err, sizeof(err))) {
		pr_err("%s", err);
		rc = -1;
	}
	for (size_t i = 0; i < files.n; i++)
		free(files.v[i]);
	VEC_FREE(&files);
	return rc;
}

int sc_why_idle(char *const *inputs, int n, bool json, unsigned top, uint64_t threshold_ns)
{
	struct sc_session session = { 0 };
	struct sc_profile_set profiles;
	struct sc_idle_report report;
	struct sc_model model;
	int rc = build_model(&model, &session, inputs, n);

	if (rc) {
		sc_model_free(&model);
		sc_session_close(&session);
		return 1;
	}
	sc_profiles_build(&profiles, &model, false);
	sc_idle_analyze(&report, &profiles, threshold_ns);
	if (json) {
		sc_idle_write(stdout, &profiles, &report, top);
	} else {
		sc_idle_print(stdout, &profiles, &report, false);
	}
	sc_idle_free(&report);
	sc_profiles_free(&profiles);
	sc_model_free(&model);
	sc_session_close(&session);
	return 0;
}
