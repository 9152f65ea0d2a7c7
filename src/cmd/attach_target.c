/* SPDX-License-Identifier: MIT */
/*
 * syscope attach: whether ptrace may be used on the target, checked before touching it; each
 * refusal names its cause and what would allow it. Where things are in it: attach_elf.c.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"

static bool read_text(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, cap - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n >= 0;
}

/* The number after `key` in /proc/PID/status ("Uid:\t1000\t1000..." gives 1000). */
static long status_field(pid_t pid, const char *key)
{
	char path[64], buf[4096], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!read_text(path, buf, sizeof(buf)) || !(p = strstr(buf, key)))
		return -1;
	return strtol(p + strlen(key), NULL, 10);
}

bool sc_attach_owner(pid_t pid, uid_t *uid, gid_t *gid)
{
	long u = status_field(pid, "\nUid:"), g = status_field(pid, "\nGid:");

	if (u < 0 || g < 0)
		return false;
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return true;
}

bool sc_attach_target_ended(pid_t pid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!read_text(path, buf, sizeof(buf)) || !(p = strrchr(buf, ')')))
		return true;
	return p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

/* CAP_SYS_PTRACE (19) in our effective set: what root has, and what lifts Yama's scope 1-2. */
static bool may_trace_anyone(void)
{
	char buf[4096], *p;

	if (!read_text("/proc/self/status", buf, sizeof(buf)) || !(p = strstr(buf, "CapEff:")))
		return geteuid() == 0;
	return (strtoull(p + 7, NULL, 16) >> 19) & 1;
}

static void name_of(pid_t pid, char *out, size_t cap)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (!read_text(path, out, cap))
		snprintf(out, cap, "?");
	out[strcspn(out, "\n")] = '\0';
}

/* The target's executable is an ELF of our class and machine (a 32-bit process would get
 * 64-bit registers in its remote calls). Unreadable: left to ptrace to decide. */
static bool same_machine(pid_t pid)
{
	char path[64];
	unsigned char e[20];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, e, sizeof(e));
	close(fd);
	if (n != (ssize_t)sizeof(e) || memcmp(e, ELFMAG, SELFMAG))
		return true;
#if defined(__x86_64__)
	return e[EI_CLASS] == ELFCLASS64 && (e[18] | e[19] << 8) == EM_X86_64;
#else
	return e[EI_CLASS] == ELFCLASS64;
#endif
}

bool sc_attach_permitted(pid_t pid, char err[SC_ATTACH_ERR])
{
	char buf[64], tracer_name[64];
	long scope = -1, tracer, uid;
	bool privileged = may_trace_anyone();

	if (pid <= 0 || (kill(pid, 0) && errno == ESRCH) || sc_attach_target_ended(pid)) {
		snprintf(err, SC_ATTACH_ERR, "no process with id %d is running", (int)pid);
		return false;
	}
	if (pid == getpid()) {
		snprintf(err, SC_ATTACH_ERR, "process %d is syscope itself", (int)pid);
		return false;
	}
	if (read_text("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)))
		scope = strtol(buf, NULL, 10);
	if (scope == 3) {
		snprintf(err, SC_ATTACH_ERR,
			 "ptrace is disabled on this machine (kernel.yama.ptrace_scope is 3, which "
			 "only a reboot lowers); attach needs 0, 1 with CAP_SYS_PTRACE or as root, "
			 "or 2 as root");
		return false;
	}
	if (scope == 2 && !privileged) {
		snprintf(
			err, SC_ATTACH_ERR,
			"kernel.yama.ptrace_scope is 2: only root (CAP_SYS_PTRACE) may attach; run "
			"syscope as root, or lower it with 'sysctl kernel.yama.ptrace_scope=1'");
		return false;
	}
	uid = status_field(pid, "\nUid:");
	if (uid >= 0 && (uid_t)uid != getuid() && !privileged) {
		struct passwd *pw = getpwuid((uid_t)uid);

		snprintf(err, SC_ATTACH_ERR,
			 "process %d belongs to user %s (uid %ld), not to you; attach as that user "
			 "or as root",
			 (int)pid, pw ? pw->pw_name : "?", uid);
		return false;
	}
	tracer = status_field(pid, "\nTracerPid:");
	if (tracer > 0) {
		name_of((pid_t)tracer, tracer_name, sizeof(tracer_name));
		snprintf(
			err, SC_ATTACH_ERR,
			"process %d is already traced by process %ld (%s); a process has one tracer "
			"at a time: detach that one (quit the debugger or strace) first",
			(int)pid, tracer, tracer_name);
		return false;
	}
	if (!same_machine(pid)) {
		snprintf(
			err, SC_ATTACH_ERR,
			"process %d is not a 64-bit x86-64 program like this syscope; attach needs "
			"the same machine type",
			(int)pid);
		return false;
	}
	if (!sc_attach_maps_has(pid, "/libc.so.6")) {
		snprintf(err, SC_ATTACH_ERR,
			 "process %d has no glibc loaded (statically linked, or another C library "
			 "such as musl); attach needs a dynamically linked glibc 2.34 or later",
			 (int)pid);
		return false;
	}
	if (!sc_attach_symbol(pid, "/libc.so.6", "dlopen", err)) {
		snprintf(err, SC_ATTACH_ERR,
			 "process %d's glibc has no dlopen in libc.so.6: it is older than 2.34, "
			 "which attach needs",
			 (int)pid);
		return false;
	}
	return true;
}
