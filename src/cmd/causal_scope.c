/* SPDX-License-Identifier: MIT */
/*
 * The scope of syscope causal, resolved before the run: functions (-F regexes on the symbol
 * tables) or source lines (-l FILE:LINE words on the DWARF line tables, read with elfutils)
 * of the modules in scope (--binary, else the program itself), and the sampled progress
 * points of --progress. Each unit becomes address ranges of its file; the runtime adds the
 * load address (src/runtime/causal/engine.c reads the file written here).
 */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/log.h"
#include "../common/vec.h"
#include "../instrument/instrument.h"
#include "causal.h"

struct line_entry {
	char *file;
	int line;
	uint64_t lo, hi;
};

struct module_info {
	char *path;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	VEC(struct line_entry) lines; /* read once, on first need */
	bool lines_read;
};

static const Dwfl_Callbacks offline = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static bool open_module(struct module_info *m, const char *path)
{
	m->path = sc_xstrdup(path);
	m->dwfl = dwfl_begin(&offline);
	if (!m->dwfl)
		return false;
	m->mod = dwfl_report_elf(m->dwfl, path, path, -1, 0, false); /* file addresses */
	dwfl_report_end(m->dwfl, NULL, NULL);
	return m->mod != NULL;
}

static void close_module(struct module_info *m)
{
	for (size_t i = 0; i < m->lines.n; i++)
		free(m->lines.v[i].file);
	VEC_FREE(&m->lines);
	if (m->dwfl)
		dwfl_end(m->dwfl);
	free(m->path);
}

/* Startup and teardown code of every program: never what a user means to speed up. */
static bool runtime_glue(const char *name)
{
	static const char *const glue[] = { "_start",
					    "_init",
					    "_fini",
					    "frame_dummy",
					    "register_tm_clones",
					    "deregister_tm_clones",
					    "__do_global_dtors_aux",
					    "__libc_csu_init",
					    "__libc_csu_fini",
					    NULL };

	for (const char *const *g = glue; *g; g++)
		if (!strcmp(name, *g))
			return true;
	return false;
}

extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

/* A C++ name as users write it (the symbol's own name when it is not mangled). */
static char *demangled(const char *name)
{
	int status = -1;
	char *d = !strncmp(name, "_Z", 2) ? __cxa_demangle(name, NULL, NULL, &status) : NULL;

	return d && !status ? d : sc_xstrdup(name);
}

static uint32_t add_unit(struct causal_scope *s, char kind, const char *name)
{
	struct causal_unit *u = VEC_PUSH(&s->units);

	u->kind = kind;
	u->name = sc_xstrdup(name);
	return (uint32_t)(s->units.n - 1);
}

static void add_range(struct causal_scope *s, const char *what, uint32_t id, size_t module,
		      uint64_t lo, uint64_t hi)
{
	struct causal_range *r = VEC_PUSH(&s->ranges);

	r->what = what;
	r->id = id;
	r->module = module;
	r->lo = lo;
	r->hi = hi;
}

/* Functions of module `mi` whose names match `re` (NULL: all), as units or into point `pt`. */
static size_t match_functions(struct causal_scope *s, struct module_info *m, size_t mi, regex_t *re,
			      int64_t point)
{
	int n = dwfl_module_getsymtab(m->mod);
	size_t found = 0;

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *raw = dwfl_module_getsym_info(m->mod, i, &sym, &addr, NULL, NULL, NULL);
		char *name;

		if (!raw || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size ||
		    sym.st_shndx == SHN_UNDEF || runtime_glue(raw))
			continue;
		name = demangled(raw);
		if (re && regexec(re, name, 0, NULL, 0)) {
			free(name);
			continue;
		}
		if (point >= 0) {
			add_range(s, "prange", (uint32_t)point, mi, sym.st_value,
				  sym.st_value + sym.st_size);
		} else {
			bool seen = false; /* aliases of one function: one unit */

			for (size_t r = 0; r < s->ranges.n && !seen; r++)
				seen = s->ranges.v[r].module == mi &&
				       s->ranges.v[r].lo == sym.st_value;
			if (!seen)
				add_range(s, "range", add_unit(s, 'f', name), mi, sym.st_value,
					  sym.st_value + sym.st_size);
		}
		free(name);
		found++;
	}
	return found;
}

/* Whether the module has code to name: a defined function symbol (functions), or a line
 * table (lines). */
static bool has_function_symbols(struct module_info *m)
{
	int n = dwfl_module_getsymtab(m->mod);

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *raw = dwfl_module_getsym_info(m->mod, i, &sym, &addr, NULL, NULL, NULL);

		if (raw && GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_size &&
		    sym.st_shndx != SHN_UNDEF && !runtime_glue(raw))
			return true;
	}
	return false;
}

static void read_lines(struct module_info *m)
{
	Dwarf_Die *cu = NULL;
	Dwarf_Addr bias;

	m->lines_read = true;
	while ((cu = dwfl_module_nextcu(m->mod, cu, &bias))) {
		Dwarf_Lines *lines;
		size_t n;

		if (dwarf_getsrclines(cu, &lines, &n))
			continue;
		for (size_t i = 0; i + 1 < n; i++) {
			Dwarf_Line *l = dwarf_onesrcline(lines, i),
				   *next = dwarf_onesrcline(lines, i + 1);
			Dwarf_Addr a, b;
			bool end;
			int line;
			const char *file;

			if (dwarf_lineendsequence(l, &end) || end || dwarf_lineaddr(l, &a) ||
			    dwarf_lineaddr(next, &b) || b <= a || dwarf_lineno(l, &line) || !line ||
			    !(file = dwarf_linesrc(l, NULL, NULL)))
				continue;
			*VEC_PUSH(&m->lines) =
				(struct line_entry){ sc_xstrdup(file), line, a + bias, b + bias };
		}
	}
}

/* FILE matches `path` when it is the whole path or a tail of it after a '/'. */
static bool file_matches(const char *want, const char *path)
{
	size_t lw = strlen(want), lp = strlen(path);

	return lw <= lp && !strcmp(path + lp - lw, want) && (lw == lp || path[lp - lw - 1] == '/');
}

struct line_pattern {
	char file[1024];
	int from, to; /* 0, 0: every line of the file */
};

/* "FILE:LINE", "FILE:A-B" or "FILE": false when the word is none of these. */
static bool parse_line_word(const char *word, struct line_pattern *p)
{
	const char *colon = strrchr(word, ':');
	char *end;

	memset(p, 0, sizeof(*p));
	if (!colon) {
		snprintf(p->file, sizeof(p->file), "%s", word);
		return *word != '\0';
	}
	if (colon == word || (size_t)(colon - word) >= sizeof(p->file))
		return false;
	memcpy(p->file, word, (size_t)(colon - word));
	p->from = (int)strtol(colon + 1, &end, 10);
	p->to = p->from;
	if (*end == '-')
		p->to = (int)strtol(end + 1, &end, 10);
	return *end == '\0' && p->from > 0 && p->to >= p->from;
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* Lines matching `p` (NULL: every line) as units "file:line", or into point `pt`. */
static size_t match_lines(struct causal_scope *s, struct module_info *m, size_t mi,
			  const struct line_pattern *p, int64_t point)
{
	size_t found = 0;

	if (!m->lines_read)
		read_lines(m);
	for (size_t i = 0; i < m->lines.n; i++) {
		struct line_entry *l = &m->lines.v[i];
		char name[1200];
		uint32_t id = UINT32_MAX;

		if (p && (!file_matches(p->file, l->file) ||
			  (p->from && (l->line < p->from || l->line > p->to))))
			continue;
		found++;
		if (point >= 0) {
			add_range(s, "prange", (uint32_t)point, mi, l->lo, l->hi);
			continue;
		}
		snprintf(name, sizeof(name), "%s:%d", basename_of(l->file), l->line);
		for (size_t u = 0; u < s->units.n && id == UINT32_MAX; u++)
			if (s->units.v[u].kind == 'l' && !strcmp(s->units.v[u].name, name))
				id = (uint32_t)u;
		if (id == UINT32_MAX)
			id = add_unit(s, 'l', name);
		add_range(s, "range", id, mi, l->lo, l->hi);
	}
	return found;
}

static void compile_or_die(regex_t *re, const char *pattern, const char *flag)
{
	int rc = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
	char why[256];

	if (rc) {
		regerror(rc, re, why, sizeof(why));
		sc_die(SC_EXIT_USAGE,
		       "causal: %s '%s' is not a valid extended regular expression: %s", flag,
		       pattern, why);
	}
}

/* The program's loader (PT_INTERP), for the list of its libraries. */
static char *interpreter_of(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	size_t n;
	char *interp = NULL;

	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n && !interp; i++) {
			GElf_Phdr ph;
			size_t len;
			char *raw = elf_rawfile(elf, &len);

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_INTERP && raw &&
			    ph.p_offset + ph.p_filesz <= len)
				interp = strndup(raw + ph.p_offset, ph.p_filesz);
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return interp;
}

/* The modules in scope: the program, or those of it and its libraries --binary matches. */
static void choose_modules(struct causal_scope *s, const char *program, const char *binary)
{
	char *real = realpath(program, NULL);
	regex_t re;
	sc_path_vec libs = { 0 };
	char err[512];
	char *interp;

	if (!real)
		sc_die(SC_EXIT_FAILURE, "causal: cannot resolve '%s': %s", program,
		       strerror(errno));
	if (!binary || !*binary) {
		*VEC_PUSH(&s->modules) = real;
		return;
	}
	compile_or_die(&re, binary, "--binary");
	if (!regexec(&re, real, 0, NULL, 0))
		*VEC_PUSH(&s->modules) = sc_xstrdup(real);
	interp = interpreter_of(real);
	if (interp && !sc_program_libraries(real, interp, &libs, err, sizeof(err))) {
		for (size_t i = 0; i < libs.n; i++) {
			if (!regexec(&re, libs.v[i], 0, NULL, 0))
				*VEC_PUSH(&s->modules) = libs.v[i];
			else
				free(libs.v[i]);
		}
	}
	VEC_FREE(&libs);
	free(interp);
	regfree(&re);
	free(real);
	if (!s->modules.n)
		sc_die(SC_EXIT_USAGE,
		       "causal: --binary '%s' matches neither the program nor any library it loads "
		       "at start (give a regular expression on a module's path, e.g. 'libfoo')",
		       binary);
}

static bool has_lines(struct module_info *m)
{
	Dwarf_Addr bias;

	return dwfl_module_nextcu(m->mod, NULL, &bias) != NULL;
}

/* Nothing matched because the modules in scope have nothing to match (a stripped program, or
 * one built without -g for lines): exit saying so, and what would give them symbols. */
static void die_if_bare(const struct causal_scope *s, struct module_info *mods, bool lines,
			const char *what)
{
	for (size_t m = 0; m < s->modules.n; m++)
		if (lines ? has_lines(&mods[m]) : has_function_symbols(&mods[m]))
			return;
	if (lines)
		sc_die(SC_EXIT_USAGE,
		       "causal: %s: %s has no line table (it was built without -g, or stripped): "
		       "rebuild it with -g, install its debug symbols (found by build id in "
		       "/usr/lib/debug), or speed up whole functions (drop -l and --mode=line)",
		       what, s->modules.v[0]);
	sc_die(SC_EXIT_USAGE,
	       "causal: %s: %s has no function symbols (it is stripped): rebuild it without "
	       "stripping (no -s, no strip; -g also gives the lines for -l), install its debug "
	       "symbols (found by build id in /usr/lib/debug), or name a library that has them "
	       "with --binary REGEX",
	       what, s->modules.v[0]);
}

/* Progress points named on the command line: each word a function regex or FILE:LINE. */
static void add_progress_points(struct causal_scope *s, struct module_info *mods, const char *list)
{
	char *copy = sc_xstrdup(list), *save = NULL;

	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		struct line_pattern p;
		int64_t id = (int64_t)s->points.n;
		size_t found = 0;
		bool is_line = strchr(w, ':') && parse_line_word(w, &p);
		regex_t re;

		*VEC_PUSH(&s->points) = sc_xstrdup(w);
		if (!is_line)
			compile_or_die(&re, w, "--progress");
		for (size_t m = 0; m < s->modules.n; m++)
			found += is_line ? match_lines(s, &mods[m], m, &p, id)
					 : match_functions(s, &mods[m], m, &re, id);
		if (!is_line)
			regfree(&re);
		if (!found)
			die_if_bare(s, mods, is_line, "--progress");
		if (!found)
			sc_die(SC_EXIT_USAGE,
			       "causal: --progress '%s' matches no %s in %s (give a function regex "
			       "or FILE:LINE of code compiled with -g)",
			       w, is_line ? "line" : "function", s->modules.v[0]);
	}
	free(copy);
}

static void resolve_lines(struct causal_scope *s, struct module_info *mods, const char *list)
{
	char *copy = sc_xstrdup(list ? list : ""), *save = NULL;

	if (!list || !*list) {
		for (size_t m = 0; m < s->modules.n; m++)
			match_lines(s, &mods[m], m, NULL, -1);
		free(copy);
		return;
	}
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		struct line_pattern p;
		size_t found = 0;

		if (!parse_line_word(w, &p))
			sc_die(SC_EXIT_USAGE,
			       "causal: --line '%s' is not FILE:LINE (e.g. main.c:42, main.c:40-50 or "
			       "main.c)",
			       w);
		for (size_t m = 0; m < s->modules.n; m++)
			found += match_lines(s, &mods[m], m, &p, -1);
		if (!found)
			die_if_bare(s, mods, true, "--line");
		if (!found)
			sc_die(SC_EXIT_USAGE,
			       "causal: --line '%s' matches no line with code in %s (is it compiled "
			       "with -g? is the line one with statements?)",
			       w, s->modules.v[0]);
	}
	free(copy);
}

void sc_causal_resolve(struct causal_scope *s, const char *program, const char *mode,
		       const char *functions, const char *lines, const char *binary,
		       const char *progress)
{
	struct module_info *mods;
	bool line_mode = (lines && *lines) || !strcmp(mode, "line");

	memset(s, 0, sizeof(*s));
	choose_modules(s, program, binary);
	mods = sc_xcalloc(s->modules.n, sizeof(*mods));
	for (size_t m = 0; m < s->modules.n; m++)
		if (!open_module(&mods[m], s->modules.v[m]))
			sc_die(SC_EXIT_FAILURE, "causal: cannot read the symbols of %s: %s",
			       s->modules.v[m], dwfl_errmsg(-1));
	if (progress && *progress)
		add_progress_points(s, mods, progress);
	if (line_mode) {
		resolve_lines(s, mods, lines);
	} else {
		regex_t re;

		if (functions && *functions)
			compile_or_die(&re, functions, "--function");
		for (size_t m = 0; m < s->modules.n; m++)
			match_functions(s, &mods[m], m, functions && *functions ? &re : NULL, -1);
		if (functions && *functions)
			regfree(&re);
	}
	if (!s->units.n)
		die_if_bare(s, mods, line_mode, "nothing to speed up");
	for (size_t m = 0; m < s->modules.n; m++)
		close_module(&mods[m]);
	free(mods);
	if (!s->units.n)
		sc_die(SC_EXIT_USAGE,
		       "causal: nothing to speed up: %s%s%s matches no %s in %s (functions: an "
		       "extended regex on names, e.g. -F 'compute|update'; lines: -l FILE:LINE of "
		       "code compiled with -g)",
		       line_mode ? "--line " : "--function ",
		       line_mode ? (lines && *lines ? lines : "(every line)")
				 : (functions && *functions ? functions : "(every function)"),
		       "", line_mode ? "line with code" : "function", s->modules.v[0]);
}

int sc_causal_write_scope(const struct causal_scope *s, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -errno;
	fprintf(f, "# syscope causal scope: units, progress points, address ranges\n");
	for (size_t u = 0; u < s->units.n; u++)
		fprintf(f, "unit %zu %c %s\n", u, s->units.v[u].kind, s->units.v[u].name);
	for (size_t p = 0; p < s->points.n; p++)
		fprintf(f, "point %zu %s\n", p, s->points.v[p]);
	for (size_t m = 0; m < s->modules.n; m++) {
		fprintf(f, "module %s\n", s->modules.v[m]);
		for (size_t r = 0; r < s->ranges.n; r++)
			if (s->ranges.v[r].module == m)
				fprintf(f, "%s %u %" PRIx64 " %" PRIx64 "\n", s->ranges.v[r].what,
					s->ranges.v[r].id, s->ranges.v[r].lo, s->ranges.v[r].hi);
	}
	return fclose(f) ? -errno : 0;
}

void sc_causal_scope_free(struct causal_scope *s)
{
	for (size_t i = 0; i < s->units.n; i++)
		free(s->units.v[i].name);
	for (size_t i = 0; i < s->points.n; i++)
		free(s->points.v[i]);
	for (size_t i = 0; i < s->modules.n; i++)
		free(s->modules.v[i]);
	VEC_FREE(&s->units);
	VEC_FREE(&s->points);
	VEC_FREE(&s->modules);
	VEC_FREE(&s->ranges);
}
