/* SPDX-License-Identifier: MIT */
/* Output folder templates (-o): the placeholders every verb that writes a folder expands. */
#ifndef SYSCOPE_CMD_OUTPUT_PATH_H
#define SYSCOPE_CMD_OUTPUT_PATH_H

#include <stddef.h>
#include <sys/types.h>

#include "../common/settings.h"

#define SC_OUTPUT_PLACEHOLDERS "%tag%, %pid%, %host%, %launch_time%, %rank%, %size%, %env{NAME}%"

/* `tmpl` with its placeholders replaced (%tag% by `tag`, %launch_time% by `launch_time`);
 * a %word% that is none of them is a usage error. Freed by the caller. */
char *sc_output_path_expand(const char *tmpl, const char *tag, const char *launch_time);

/* %rank% and %size% from here on name the job of process `pid` (syscope attach), from its
 * environment (/proc/PID/environ; unreadable: outside a job). */
void sc_output_path_job_of(pid_t pid);

/* The size of the MPI or Slurm job this process (or the attached one) is a rank of; 1
 * outside one. */
int sc_output_path_job_size(void);

/* The current time in the TIME_FORMAT setting's format (seconds since the epoch if that
 * format gives nothing). */
void sc_output_path_stamp(const struct sc_settings *s, char *buf, size_t len);

/* `path` without the slashes at its end ("/" stays). */
void sc_output_path_trim(char *path);

/* The -o template `tmpl` of a verb that reads `input` (convert, merge): %tag% is the
 * input's last name, %launch_time% now. */
char *sc_output_path_for_input(const struct sc_settings *s, const char *tmpl, const char *input);

#endif
