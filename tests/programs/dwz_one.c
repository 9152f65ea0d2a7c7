/* SPDX-License-Identifier: MIT */
/* `dwz_one SECONDS`: CPU in dwz_spin (dwz_hot.h), inlined into work_one. */
#include "dwz_hot.h"

NOINLINE double work_one(double x)
{
	return dwz_spin(x, 200000);
}

int main(int argc, char **argv)
{
	return dwz_main(work_one, fixture_seconds(argc, argv, 1, 1.0));
}
