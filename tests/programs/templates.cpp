// SPDX-License-Identifier: MIT
// C++ with templates, a namespace and exceptions: profiles must show demangled names.
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "fixture.h"

namespace fixture
{

template <typename T> class Accumulator
{
      public:
	NOINLINE T spin(T x, int n)
	{
		for (int i = 0; i < n; i++)
			x = x * static_cast<T>(1.0000001) + static_cast<T>(0.5);
		return x;
	}
};

NOINLINE static int thrower(int i)
{
	if (i % 2)
		throw std::runtime_error("odd");
	return i;
}

NOINLINE int catch_many(int n)
{
	int caught = 0;

	for (int i = 0; i < n; i++) {
		try {
			thrower(i);
		} catch (const std::exception &) {
			caught++;
		}
	}
	return caught;
}

} // namespace fixture

int main(int argc, char **argv)
{
	double end = fixture_cpu_now() + fixture_seconds(argc, argv, 1, 1.0);
	fixture::Accumulator<double> acc;
	double x = 1;
	int caught = 0;

	while (fixture_cpu_left(end)) {
		x = acc.spin(x, 100000);
		caught += fixture::catch_many(200);
	}
	fixture_sink = x;
	std::printf("templates: caught %d\n", caught);
	return caught > 0 ? 0 : 1;
}
