/* SPDX-License-Identifier: MIT */
/*
 * Programs that drop root (daemons, servers) go on creating processes as another user, who
 * could not create raw files in a session folder made by root. Before the first switch away
 * from root, the session's raw/ folder is opened to all users (sticky, like /tmp: nobody can
 * remove another's files), and a note says so.
 */
#include "rt.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_int opened;

static void before_uid_change(uid_t target)
{
	char path[4200];

	if (!rt_active() || geteuid() != 0 || target == 0 || target == (uid_t)-1 ||
	    atomic_exchange(&opened, 1))
		return;
	snprintf(path, sizeof(path), "%s/raw", rt_proc.session_dir);
	if (!chmod(path, 01777))
		rt_note(SC_NOTE_INFO,
			"the program switched from root to uid %u: %s is now writable by all users "
			"so that its later processes can record",
			(unsigned)target, path);
	else
		rt_note(SC_NOTE_WARN,
			"the program switched from root to uid %u and %s could not be opened to it "
			"(%s): processes it starts later are not recorded",
			(unsigned)target, path, strerror(errno));
}

#define WRAP_ID_CALL(name, proto, args, target) \
	RT_EXPORT int name proto                \
	{                                       \
		before_uid_change(target);      \
		return RT_REAL(name) args;      \
	}

WRAP_ID_CALL(setuid, (uid_t uid), (uid), uid)
WRAP_ID_CALL(seteuid, (uid_t uid), (uid), uid)
WRAP_ID_CALL(setreuid, (uid_t r, uid_t e), (r, e), e != (uid_t)-1 ? e : r)
WRAP_ID_CALL(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s), e != (uid_t)-1 ? e : r)
