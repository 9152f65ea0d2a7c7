/* SPDX-License-Identifier: MIT */
/* `dwz_two SECONDS`: CPU in dwz_spin (dwz_hot.h), inlined into work_two. */
#include "dwz_hot.h"

NOINLINE double work_two(double x)
{
	return dwz_spin(x, 200000);
}

int main(int argc, char **argv)
{
	return dwz_main(work_two, fixture_seconds(argc, argv, 1, 1.0));
}
