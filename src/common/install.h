/* SPDX-License-Identifier: MIT */
/* Where the running syscope is installed: <prefix>/bin/syscope, the rest under <prefix>. */
#ifndef SYSCOPE_COMMON_INSTALL_H
#define SYSCOPE_COMMON_INSTALL_H

/* The absolute path of the running executable (malloc'ed), or NULL. */
char *sc_self_exe(void);
/* "<folder of the executable>/../REL" (malloc'ed), or NULL. */
char *sc_install_path(const char *rel);

#endif
