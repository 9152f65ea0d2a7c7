/* SPDX-License-Identifier: MIT */
#include "install.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vec.h"

char *sc_self_exe(void)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return NULL;
	self[n] = '\0';
	return sc_xstrdup(self);
}

char *sc_install_path(const char *rel)
{
	char *self = sc_self_exe(), *slash = self ? strrchr(self, '/') : NULL, *path;

	if (!slash) {
		free(self);
		return NULL;
	}
	*slash = '\0';
	path = sc_xasprintf("%s/../%s", self, rel);
	free(self);
	return path;
}
