/* SPDX-License-Identifier: MIT */
#include "func_view.h"

#include <stdio.h>
#include <string.h>

static int compile_filter(regex_t *re, const char *text, const char *flag, char *err, size_t errlen)
{
	char why[256];
	int rc = regcomp(re, text, REG_EXTENDED | REG_NOSUB);

	if (!rc)
		return 0;
	regerror(rc, re, why, sizeof(why));
	snprintf(err, errlen, "--%s: '%s' is not a valid extended regular expression: %s", flag,
		 text, why);
	return -1;
}

int sc_func_view_init(struct sc_func_view *v, const char *include, const char *exclude, char *err,
		      size_t errlen)
{
	memset(v, 0, sizeof(*v));
	if (include && *include) {
		if (compile_filter(&v->inc, include, "function-include", err, errlen))
			return -1;
		v->include = true;
	}
	if (exclude && *exclude) {
		if (compile_filter(&v->exc, exclude, "function-exclude", err, errlen)) {
			sc_func_view_free(v);
			return -1;
		}
		v->exclude = true;
	}
	return 0;
}

void sc_func_view_free(struct sc_func_view *v)
{
	if (v->include)
		regfree(&v->inc);
	if (v->exclude)
		regfree(&v->exc);
	v->include = v->exclude = false;
}

bool sc_func_view_shown(struct sc_func_view *v, const char *name)
{
	bool shown;

	if (!v)
		return true;
	shown = (!v->include || !regexec(&v->inc, name, 0, NULL, 0)) &&
		(!v->exclude || regexec(&v->exc, name, 0, NULL, 0));
	v->seen++;
	v->matched += shown;
	return shown;
}
