/* SPDX-License-Identifier: MIT */
/* The symbolizer's search for separate debug information (debuginfo.c). */
#ifndef SYSCOPE_MODEL_DEBUGINFO_H
#define SYSCOPE_MODEL_DEBUGINFO_H

#include <elfutils/libdwfl.h>

/* A Dwfl_Callbacks.find_debuginfo: libdwfl's standard search when DEBUGINFOD_URLS names a
 * server, else the same local places (build-id folders, the debug link beside the file, in
 * .debug/ and under /usr/lib/debug) without loading the debuginfod client. */
int sc_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, GElf_Addr base,
		      const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
		      char **debuginfo_file_name);

#endif /* SYSCOPE_MODEL_DEBUGINFO_H */
