/* SPDX-License-Identifier: MIT */
/* Linked with -static: no dynamic loader runs, so no LD_PRELOAD reaches it (bad input for
 * syscope instrument, which must say so). */
#include <stdio.h>

int main(void)
{
	puts("static hello");
	return 0;
}
