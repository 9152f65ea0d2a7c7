/* SPDX-License-Identifier: MIT */
/*
 * The man page and the bash completion, generated from what syscope itself knows: the verb
 * table, each verb's --help (itself made from the settings table and the verb's options)
 * and the settings table. `make` writes both into the build tree and installs them, so they
 * never disagree with the program.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../common/install.h"
#include "../common/log.h"
#include "../common/vec.h"
#include "../config/config.h"
#include "cmd.h"

typedef VEC(char *) lines_t;

/* The lines `syscope VERB --help` prints (run as a child of this very executable). */
static void verb_help(const char *verb, lines_t *out)
{
	char line[4096], *self = sc_self_exe(), *cmd;
	FILE *p;

	if (!self)
		sc_die(SC_EXIT_FAILURE, "cannot find this executable");
	cmd = sc_xasprintf("'%s' %s --help", self, verb);
	free(self);
	p = popen(cmd, "r");
	if (!p)
		sc_die(SC_EXIT_FAILURE, "cannot run %s", cmd);
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		*VEC_PUSH(out) = sc_xstrdup(line);
	}
	pclose(p);
	free(cmd);
}

static void free_lines(lines_t *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	VEC_FREE(l);
}

/* roff text: backslashes and minus signs escaped, a leading dot or quote protected. */
static void roff(FILE *f, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", f);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
	}
}

void sc_write_man_page(FILE *f)
{
	char date[32], cats[128];
	time_t now = time(NULL);

	strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
	fprintf(f, ".TH SYSCOPE 1 \"%s\" \"syscope %s\" \"User Commands\"\n", date,
		SYSCOPE_VERSION);
	fputs(".SH NAME\nsyscope \\- system\\-level profiler for Linux programs on CPU and GPU\n"
	      ".SH SYNOPSIS\n",
	      f);
	for (unsigned i = 0; i < sc_nverbs; i++) {
		fputs(".B ", f);
		roff(f, sc_verbs[i].usage);
		fputs("\n.br\n", f);
	}
	fputs(".SH DESCRIPTION\nsyscope records what every thread and process of a program did "
	      "\\(em call\\-stack samples, CUDA API calls, kernels, copies and NVTX ranges, user "
	      "regions \\(em and writes a rocpd SQLite database, a Perfetto trace and profiles. "
	      "The program runs unchanged; its exit status is passed through.\n"
	      ".SH VERBS\n",
	      f);
	for (unsigned i = 0; i < sc_nverbs; i++) {
		lines_t help = { 0 };

		fprintf(f, ".SS %s\n", sc_verbs[i].name);
		verb_help(sc_verbs[i].name, &help);
		fputs(".nf\n", f);
		for (size_t k = 0; k < help.n; k++) {
			roff(f, help.v[k]);
			fputc('\n', f);
		}
		fputs(".fi\n", f);
		free_lines(&help);
	}
	fputs(".SH ENVIRONMENT\nEvery setting is an environment variable; the command line wins "
	      "over it, and it wins over configuration files and presets.\n",
	      f);
	for (int id = 0; id < SC_SETTING_COUNT; id++) {
		const struct sc_setting_def *d = &sc_setting_defs[id];

		if (d->flags & SC_SF_HIDDEN)
			continue;
		fprintf(f, ".TP\n.B %s%s\n", SC_SETTING_ENV_PREFIX, d->name);
		roff(f, d->help);
		fprintf(f, " (%s%s%s; default: ", sc_setting_type_name(d->type),
			d->choices ? ": " : "", d->choices ? d->choices : "");
		roff(f, *d->defval ? d->defval : "unset");
		fputs("; ", f);
		roff(f, sc_setting_categories(d->categories, cats, sizeof(cats)));
		fputs(")\n", f);
	}
	fputs(".SH FILES\n.TP\n.I ~/.syscope.cfg\nConfiguration read when SYSCOPE_CONFIG_FILE "
	      "and \\-\\-config are unset.\n.TP\n.I ~/.config/syscope/presets/\nYour presets "
	      "(also SYSCOPE_PRESET_DIR).\n.TP\n.I <prefix>/share/syscope/presets/\nThe "
	      "installed presets and schema.json.\n"
	      ".SH EXIT STATUS\nThe profiled program's status (128+N when a signal N ended it); "
	      "2 for a bad command line, 126 and 127 as a shell for a program that cannot run "
	      "or is not found.\n.SH SEE ALSO\n"
	      "The user guide, docs/user\\-guide.md; ui.perfetto.dev; sqlite3(1).\n",
	      f);
}

/* "  -f, --sampling-freq=HZ   ..." -> "--sampling-freq" and "-f" (and --no-NAME). */
static void flags_of(const lines_t *help, lines_t *flags)
{
	for (size_t i = 0; i < help->n; i++) {
		const char *p = help->v[i] + strspn(help->v[i], " ");

		if (p - help->v[i] < 2 || *p != '-')
			continue;
		while (*p) {
			char word[128];
			size_t n;

			p += strspn(p, " ,");
			if (*p != '-')
				break;
			n = strcspn(p, " ,=[");
			snprintf(word, sizeof(word), "%.*s", (int)n, p);
			*VEC_PUSH(flags) = sc_xstrdup(word);
			if (strstr(help->v[i], "--no-") && n > 2 && word[1] == '-') {
				const char *no = strstr(help->v[i], "--no-");

				snprintf(word, sizeof(word), "%.*s", (int)strcspn(no, "):, "), no);
				*VEC_PUSH(flags) = sc_xstrdup(word);
			}
			p += n;
			if (*p == '=' || *p == '[')
				p += strcspn(p, " ");
		}
	}
}

void sc_write_bash_completion(FILE *f)
{
	fputs("# bash completion for syscope, generated by 'syscope avail "
	      "--completion=bash'.\n# Install: copy to "
	      "/usr/share/bash-completion/completions/syscope, or source it.\n"
	      "_syscope() {\n"
	      "\tlocal cur=${COMP_WORDS[COMP_CWORD]} verb=${COMP_WORDS[1]} opts i\n"
	      "\tfor ((i = 2; i < COMP_CWORD; i++)); do\n"
	      "\t\tif [[ ${COMP_WORDS[i]} == -- ]]; then\n"
	      "\t\t\tCOMPREPLY=($(compgen -c -- \"$cur\"))\n\t\t\treturn\n\t\tfi\n\tdone\n"
	      "\tif ((COMP_CWORD == 1)); then\n\t\tCOMPREPLY=($(compgen -W \"",
	      f);
	for (unsigned i = 0; i < sc_nverbs; i++)
		fprintf(f, "%s ", sc_verbs[i].name);
	fputs("--help --version\" -- \"$cur\"))\n\t\treturn\n\tfi\n"
	      "\tcase $cur in\n"
	      "\t--preset=* | --explain=*)\n"
	      "\t\tCOMPREPLY=($(compgen -P \"${cur%%=*}=\" -W \"$(syscope run --list-presets "
	      "2>/dev/null | awk '/^  [a-z]/ { print $1 }')\" -- \"${cur#*=}\"))\n\t\treturn ;;\n",
	      f);
	for (int id = 0; id < SC_SETTING_COUNT; id++) { /* values of choice settings */
		const struct sc_setting_def *d = &sc_setting_defs[id];
		char choices[512];

		if (!d->long_flag || !d->choices || d->type == SC_T_LIST)
			continue;
		snprintf(choices, sizeof(choices), "%s", d->choices);
		for (char *c = choices; *c; c++)
			if (*c == ',')
				*c = ' ';
		fprintf(f,
			"\t--%s=*)\n\t\tCOMPREPLY=($(compgen -P \"--%s=\" -W \"%s\" -- "
			"\"${cur#*=}\"))\n\t\treturn ;;\n",
			d->long_flag, d->long_flag, choices);
	}
	fputs("\tesac\n\tcase $verb in\n", f);
	for (unsigned i = 0; i < sc_nverbs; i++) {
		lines_t help = { 0 }, flags = { 0 };

		verb_help(sc_verbs[i].name, &help);
		flags_of(&help, &flags);
		fprintf(f, "\t%s) opts=\"", sc_verbs[i].name);
		for (size_t k = 0; k < flags.n; k++)
			fprintf(f, "%s%s", k ? " " : "", flags.v[k]);
		fputs("\" ;;\n", f);
		free_lines(&help);
		free_lines(&flags);
	}
	fputs("\t*) return ;;\n\tesac\n"
	      "\tif [[ $cur == -* ]]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
	      "\telse\n\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n\tfi\n}\n"
	      "complete -F _syscope syscope\n",
	      f);
}
