/* SPDX-License-Identifier: MIT */
#ifndef SYSCOPE_CMD_DLOPEN_LIBS_H
#define SYSCOPE_CMD_DLOPEN_LIBS_H

#include "../instrument/instrument.h"

/* Shared objects that -MI/-MR (`sel`) choose and `skip` (real paths: the libraries loaded at
 * start) does not list, from the program's arguments (`args`, those that are files) and
 * their folders, the program's folder, LD_LIBRARY_PATH and the loader's default folders:
 * real paths appended to `out` (caller frees). */
void sc_dlopen_libraries(struct sc_selection *sel, const char *program, char *const *args,
			 int nargs, const sc_path_vec *skip, sc_path_vec *out);

#endif
