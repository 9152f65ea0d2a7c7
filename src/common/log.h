/* SPDX-License-Identifier: MIT */
/*
 * Messages of the syscope CLI: one line each on stderr, "syscope: " first, levelled by -v.
 * Each file may define PR_FMT before including this header to prefix its debug messages
 * with a domain ("symbols: ", "reader: ").
 *
 * libsyscope.so does not print here: the profiled program's stderr is not ours. The runtime
 * records notes into the session instead (runtime/notes.c).
 */
#ifndef SYSCOPE_COMMON_LOG_H
#define SYSCOPE_COMMON_LOG_H

#include <stdnoreturn.h>

#ifndef PR_FMT
#define PR_FMT ""
#endif

enum sc_log_level {
	SC_LOG_ERROR = 0,
	SC_LOG_WARN = 1,
	SC_LOG_INFO = 2,  /* -v */
	SC_LOG_DEBUG = 3, /* -vv */
	SC_LOG_TRACE = 4, /* -vvv */
};

extern int sc_log_verbosity; /* 0 = errors, warnings and the summary only; < 0: errors */

__attribute__((format(printf, 2, 3))) void sc_log(enum sc_log_level level, const char *fmt, ...);
/* Print "syscope: error: ..." and exit with `status`. CLI only. */
__attribute__((format(printf, 2, 3))) noreturn void sc_die(int status, const char *fmt, ...);

#define pr_err(fmt, ...) sc_log(SC_LOG_ERROR, PR_FMT fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...) sc_log(SC_LOG_WARN, PR_FMT fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...) sc_log(SC_LOG_INFO, PR_FMT fmt, ##__VA_ARGS__)
#define pr_dbg(fmt, ...) sc_log(SC_LOG_DEBUG, PR_FMT fmt, ##__VA_ARGS__)
#define pr_trace(fmt, ...) sc_log(SC_LOG_TRACE, PR_FMT fmt, ##__VA_ARGS__)

#endif /* SYSCOPE_COMMON_LOG_H */
