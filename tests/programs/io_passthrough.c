/* SPDX-License-Identifier: MIT */
/* Copies stdin to stdout in upper case, prints $FIXTURE_VAR on stderr, exits with argv[1];
 * with argv[2] = a signal number, kills itself with that signal instead. */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *var = getenv("FIXTURE_VAR");
	int c;

	while ((c = getchar()) != EOF)
		putchar(toupper(c));
	fprintf(stderr, "FIXTURE_VAR=%s\n", var ? var : "(unset)");
	fflush(NULL);
	if (argc > 2)
		kill(getpid(), atoi(argv[2]));
	return argc > 1 ? atoi(argv[1]) : 0;
}
