/* SPDX-License-Identifier: MIT */
/*
 * syscope attach, the command line's half: checks of the target process (attach_target.c),
 * its maps and symbols (attach_elf.c), the ptrace remote call (attach_inject.c) and the verb
 * (attach.c).
 */
#ifndef SYSCOPE_CMD_ATTACH_H
#define SYSCOPE_CMD_ATTACH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SC_ATTACH_ERR 512

/* attach_target.c, attach_elf.c */
/* Whether `pid` may be attached to by this user; false with `err` naming the cause and what
 * would allow it (no such process, Yama's ptrace_scope, another user, already traced). */
bool sc_attach_permitted(pid_t pid, char err[SC_ATTACH_ERR]);
/* The absolute address of `symbol` in the target's first mapped object whose path ends with
 * `path_suffix` (its dynamic symbols, read with libelf); 0 when not found, `err` says why. */
uint64_t sc_attach_symbol(pid_t pid, const char *path_suffix, const char *symbol,
			  char err[SC_ATTACH_ERR]);
/* The offset of `symbol` from the load address of shared library `path` (0: absent). */
uint64_t sc_attach_file_symbol(const char *path, const char *symbol, char err[SC_ATTACH_ERR]);
/* The executable mappings of the target's objects whose path ends with `suffix`, into
 * out[max]; returns how many. */
struct sc_code_range {
	uint64_t lo, hi;
};
int sc_attach_code_ranges(pid_t pid, const char *suffix, struct sc_code_range *out, int max);
/* Whether the target maps an object whose path contains `needle`. */
bool sc_attach_maps_has(pid_t pid, const char *needle);
/* The process is gone, or a zombie: it ended. */
bool sc_attach_target_ended(pid_t pid);
/* The target's real user and group ids; false when unreadable. */
bool sc_attach_owner(pid_t pid, uid_t *uid, gid_t *gid);

/* attach_end.c */
/* The process executed another program (our library is no longer mapped in it). */
bool sc_attach_executed(pid_t pid);
/* End reason exec, now, into raw file `path` (when it has no end). */
void sc_attach_mark_exec(const char *path);
/* The children of the target seen while attached: before[] at the attach (`first`), seen[]
 * those that came later, gathered by calls every poll. */
#define SC_ATTACH_MAX_CHILDREN 1024
struct sc_attach_children {
	pid_t before[SC_ATTACH_MAX_CHILDREN], seen[SC_ATTACH_MAX_CHILDREN];
	unsigned nbefore, nseen;
};
void sc_attach_children_watch(pid_t pid, struct sc_attach_children *c, bool first);
/* After the detach: the fork children's files waited for (an exec'd child's end written),
 * and the children not followed counted and said. */
void sc_attach_finish_children(const char *session, pid_t target,
			       const struct sc_attach_children *kids);

/* attach_inject.c */
struct sc_remote {
	pid_t tid;	    /* the thread borrowed */
	double held_ms;	    /* how long it was stopped */
	bool in_syscall;    /* it was stopped inside a system call (restarted after) */
	long syscall_nr;    /* which */
	long restart_how;   /* how it was restarted: the kernel's -ERESTART* code, or -EINTR */
	int retries;	    /* stops let go: the thread was in C library or loader code */
	double cpu_ms;	    /* of the hold: the thread's time on a CPU (the calls' work) */
	double wait_cpu_ms; /* ... and waiting for a CPU (a busy machine), -1 unknown */
};
/*
 * Stop thread `tid` of `pid` alone, call dlopen(lib, RTLD_NOW) and then `entry`(arg) of the
 * loaded library in it, put it back as it was and let it go. *result is entry's return.
 * Returns 0, or -1 with `err` set.
 */
int sc_attach_call(pid_t pid, pid_t tid, const char *lib, const char *entry, const char *arg,
		   long *result, struct sc_remote *info, char err[SC_ATTACH_ERR]);

#endif /* SYSCOPE_CMD_ATTACH_H */
