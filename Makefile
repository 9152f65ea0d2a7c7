# syscope: the two commands of the README, and a few more for developers.
#
#   make demo    build syscope and profile the bundled demo application
#   make test    build with warnings as errors and run the whole test suite, then again
#                with ASan and UBSan
#   make install [PREFIX=/usr/local]   install syscope, its syscope-<verb> commands,
#                libraries, man page and bash completion (DESTDIR is honoured)
#   make deb     a Debian package in $(BUILD)/ (cpack -G DEB)
#
# Both install the Debian packages they need when run as root.

BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX     ?= /usr/local

BUILD_PACKAGES := build-essential g++ cmake pkg-config libdw-dev libelf-dev libunwind-dev \
                  libjansson-dev libsqlite3-dev libpfm4-dev libcapstone-dev
TEST_PACKAGES  := $(BUILD_PACKAGES) python3 binutils clang-format sqlite3
TEST_PACKAGES  += clang libomp-dev
TEST_PACKAGES  += openmpi-bin libopenmpi-dev gfortran
TEST_PACKAGES  += mpich libmpich-dev # test_mpi.py: MPICH's ABI (libsyscope-mpi-mpich.so); Open MPI stays the default mpicc
TEST_PACKAGES  += libpython3.11 # test_python_frames.py: a libpython to dlopen and dlclose
TEST_PACKAGES  += coz-profiler # test_causal.py: Coz's coz.h macros; bench/causal-bench compares with coz run
TEST_PACKAGES  += chromium # test_html_report.py: the report loaded headless
TEST_PACKAGES  += uftrace # bench/convert-later-bench: uftrace record + report on the same binary
TEST_PACKAGES  += dwz # test_counted_calls.py: debug information split by dwz -m
TEST_PACKAGES  += xz-utils # test_real_programs.py: a stripped liblzma named by function starts

.PHONY: all build demo test test-fast asan deps deps-test format bench bundle clean install deb

all: build

deps:
	@scripts/install-deps $(BUILD_PACKAGES)

deps-test:
	@scripts/install-deps $(TEST_PACKAGES)

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j$(JOBS)

demo: build
	$(BUILD)/bin/syscope sample -f 1000 -- $(BUILD)/bin/demo 4 900

test: deps-test
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSYSCOPE_WERROR=ON
	cmake --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest -j$(JOBS) --output-on-failure
	$(MAKE) --no-print-directory asan

# The CLI, reader and sinks under AddressSanitizer and UndefinedBehaviorSanitizer, with
# every test that drives them.
asan: deps-test
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DSYSCOPE_WERROR=ON -DSYSCOPE_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest -j$(JOBS) -L asan --output-on-failure

test-fast: build
	cd $(BUILD) && ctest -j$(JOBS) --output-on-failure

format:
	find src tests demo bench \( -name '*.[ch]' -o -name '*.cpp' \) -print0 | xargs -0 clang-format -i

bench: build
	bench/run-all

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) dist

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

deb: build
	cd $(BUILD) && cpack -G DEB

# A relocatable tree and tarball in dist/ (bin/, lib/syscope/ with the libraries it needs).
bundle: build
	scripts/make-bundle $(BUILD)
