/* SPDX-License-Identifier: MIT */
/* The component table (see components.h) and the launcher hooks that walk it. */
#include <dlfcn.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/install.h"
#include "../common/log.h"
#include "../common/strutil.h"
#include "../common/vec.h"
#include "cmd.h"
#include "components.h"
#include "cpu_events.h"
#include "gpu_metrics.h"
#include "mpi_abi.h"

/* ---- domain tokens ---- */

static const struct sc_alias cuda_aliases[] = {
	{ "runtime", "runtime" },      { "api", "runtime" },	{ "cudart", "runtime" },
	{ "rt", "runtime" },	       { "driver", "driver" },	{ "drv", "driver" },
	{ "kernel", "kernel" },	       { "kernels", "kernel" }, { "kernel_dispatch", "kernel" },
	{ "memory", "memory" },	       { "mem", "memory" },	{ "memcpy", "memory" },
	{ "memory_copy", "memory" },   { "copies", "memory" },	{ "nvtx", "nvtx" },
	{ "marker", "nvtx" },	       { "markers", "nvtx" },	{ "sync", "sync" },
	{ "synchronization", "sync" }, { "uvm", "uvm" },	{ "unified_memory", "uvm" },
	{ "managed", "uvm" },	       { "graph", "graph" },	{ "graphs", "graph" },
	{ "overhead", "overhead" },    { NULL, NULL },
};

static const struct sc_alias gpu_aliases[] = {
	{ "temp", "temp" },
	{ "temperature", "temp" },
	{ "power", "power" },
	{ "busy", "busy" },
	{ "usage", "busy" },
	{ "utilization", "busy" },
	{ "util", "busy" },
	{ "mem_usage", "mem_usage" },
	{ "memory", "mem_usage" },
	{ "mem", "mem_usage" },
	{ "clocks", "clocks" },
	{ "clock", "clocks" },
	{ "pcie", "pcie" },
	{ "nvlink", "nvlink" },
	{ "encoder", "encoder" },
	{ "decoder", "decoder" },
	{ NULL, NULL },
};

static const struct sc_alias mpi_aliases[] = { { "mpi", "mpi" }, { "mpip", "mpi" }, { 0 } };
static const struct sc_alias openmp_aliases[] = {
	{ "openmp", "openmp" }, { "omp", "openmp" }, { "ompt", "openmp" }, { 0 }
};
static const struct sc_alias nccl_aliases[] = { { "nccl", "nccl" }, { "rccl", "nccl" }, { 0 } };
static const struct sc_alias pthread_aliases[] = { { "pthread", "pthread" },
						   { "pthreads", "pthread" },
						   { 0 } };

#define PARALLEL_HELP "Parallel runtimes: mpi, openmp, pthread, nccl"

/* ---- probes (avail -C) ---- */

static int try_event(uint32_t type, uint64_t config)
{
	struct perf_event_attr pa = { .type = type, .config = config };

	return sc_cpu_event_try(&pa);
}

static bool can_load(const char *lib)
{
	void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);

	if (h)
		dlclose(h);
	return h != NULL;
}

static void probe_cputime(struct sc_probe *p)
{
	p->ok = true;
	snprintf(p->state, sizeof(p->state), "%s",
		 try_event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK)
			 ? "POSIX CPU-time timers (perf task-clock unavailable)"
			 : "perf task-clock");
}

static void probe_realtime(struct sc_probe *p)
{
	p->ok = true;
	snprintf(p->state, sizeof(p->state), "POSIX monotonic timers");
}

static char *plugin_path(const char *libdir, const char *name)
{
	return sc_xasprintf("%s/%s", libdir ? libdir : ".", name);
}

static char *installed_libdir(void)
{
	char *dir = sc_install_path("lib/syscope");

	return dir ? dir : sc_xstrdup(".");
}

static void probe_cuda(struct sc_probe *p)
{
	char *dir = installed_libdir(), *path = plugin_path(dir, "libsyscope-cuda.so");
	bool built = !access(path, R_OK), driver = can_load("libcuda.so.1");

	p->ok = built && driver;
	snprintf(p->state, sizeof(p->state), "%s",
		 !built	  ? "not built (no CUPTI at build time)"
		 : driver ? "CUPTI tracing ready; starts when a program initializes CUDA"
			  : "built; no NVIDIA driver (libcuda.so.1) on this machine");
	free(path);
	free(dir);
}

static void probe_nvml(struct sc_probe *p)
{
	p->ok = can_load("libnvidia-ml.so.1");
	snprintf(p->state, sizeof(p->state), "%s",
		 p->ok ? "NVML found; GPUs are enumerated when telemetry starts"
		       : "no NVIDIA driver (libnvidia-ml.so.1) on this machine");
}

static void probe_cpu_counters(struct sc_probe *p)
{
	int err = try_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS);
	char why[200];

	p->ok = !try_event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	snprintf(p->state, sizeof(p->state), "%s%s",
		 err ? "software events only: hardware ones: " : "hardware and software events",
		 err ? sc_cpu_event_error(err, why, sizeof(why)) : "");
}

static void probe_host(struct sc_probe *p)
{
	p->ok = true;
	snprintf(p->state, sizeof(p->state), "/proc and getrusage");
}

/* What is read is decided in the program, by the interpreter found there; here only what
 * this machine's python3 is, for orientation. */
static void probe_python(struct sc_probe *p)
{
	char target[64];
	ssize_t n = readlink("/usr/bin/python3", target, sizeof(target) - 1);

	target[n > 0 ? n : 0] = '\0';
	p->ok = true;
	snprintf(p->state, sizeof(p->state),
		 "CPython 3.10-3.13 (GIL builds), found in the program when it runs%s%s",
		 target[0] ? "; /usr/bin/python3 is " : "", target);
}

/* A component that is a library of its own beside libsyscope.so: there or not. */
static void probe_plugin(struct sc_probe *p, const char *lib, const char *present,
			 const char *absent)
{
	char *dir = installed_libdir(), *path = plugin_path(dir, lib);

	p->ok = !access(path, R_OK);
	snprintf(p->state, sizeof(p->state), "%s", p->ok ? present : absent);
	free(path);
	free(dir);
}

static void probe_pthread(struct sc_probe *p)
{
	probe_plugin(p, "libsyscope-pthread.so",
		     "lock wrappers (libsyscope-pthread.so) preloaded with the flag",
		     "libsyscope-pthread.so missing beside libsyscope.so");
}

/* OMPT is found in the program's runtime when it starts; libgomp's entry points are wrapped. */
static void probe_openmp(struct sc_probe *p)
{
	p->ok = true;
	snprintf(p->state, sizeof(p->state),
		 "OMPT (LLVM libomp and runtimes built on it) or libgomp's entry points (GCC), "
		 "found in the program when it runs");
}

/* ---- launcher hooks ---- */

/*
 * pthread tracing: its lock wrappers are a library of their own, put in LD_PRELOAD (before
 * libsyscope.so, which the launcher adds after this) only when asked for, so that other runs
 * do not pass every lock of the program through syscope.
 */
static void pthread_environment(const struct sc_settings *s, const struct sc_launch_env *e)
{
	char *lib = plugin_path(e->libdir, "libsyscope-pthread.so");
	const char *old = getenv("LD_PRELOAD");

	(void)s;
	if (access(lib, R_OK)) {
		pr_warn("--parallel=pthread: %s is missing; only semaphore waits, thread creations "
			"and joins are recorded",
			lib);
	} else {
		char *v = old && *old ? sc_xasprintf("%s:%s", lib, old) : sc_xstrdup(lib);

		setenv("LD_PRELOAD", v, 1);
		free(v);
	}
	free(lib);
}

/* A preset turns GPU telemetry on everywhere; where there is no NVIDIA driver it goes off here,
 * quietly. Asked for by the user, it stays on, and the run's notes say why it records nothing. */
static void check_nvml(struct sc_settings *s)
{
	char err[SC_ERRMSG_MAX];

	if (s->v[SC_SET_USE_NVML].layer > SC_LAYER_PRESET || can_load("libnvidia-ml.so.1"))
		return;
	pr_dbg("GPU telemetry off: no libnvidia-ml.so.1 here");
	sc_settings_set(s, SC_SET_USE_NVML, "false", s->v[SC_SET_USE_NVML].layer, err);
}

static const char *const cuda_env[] = { "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", NULL };

/*
 * CUDA tracing: the CUDA driver loads libsyscope-cuda.so during cuInit when
 * CUDA_INJECTION64_PATH names it, and NVTX hands its calls to the same library (which passes
 * them to CUPTI) when NVTX_INJECTION64_PATH names it. It lives beside libsyscope.so.
 */
static void cuda_environment(const struct sc_settings *s, const struct sc_launch_env *e)
{
	char *plugin = plugin_path(e->libdir, "libsyscope-cuda.so");
	const char *theirs = getenv("CUDA_INJECTION64_PATH");

	if (access(plugin, R_OK)) {
		pr_info("CUDA tracing not available: this syscope was built without CUPTI");
	} else if (theirs && *theirs && strcmp(theirs, plugin)) {
		pr_warn("CUDA tracing off: CUDA_INJECTION64_PATH is already set (to %s), and the "
			"CUDA driver loads only one injection library",
			theirs);
	} else {
		setenv("CUDA_INJECTION64_PATH", plugin, 1);
		if (sc_list_has(s, SC_SET_CUDA_DOMAINS, "nvtx") && !getenv("NVTX_INJECTION64_PATH"))
			setenv("NVTX_INJECTION64_PATH", plugin, 1);
	}
	free(plugin);
}

/*
 * MPI tracing: libsyscope-mpi.so defines the MPI functions and calls PMPI_*, so it must come
 * before the MPI library in the lookup order: in LD_PRELOAD, after libsyscope.so. It is
 * built for one MPI ABI, and for MPICH's as libsyscope-mpi-mpich.so where its headers were
 * there too (mpi_abi.h): the one of the program's MPI, never the other.
 */
static void mpi_environment(const struct sc_settings *s, const struct sc_launch_env *e)
{
	char found[256] = "";
	const char *why, *name = "libsyscope-mpi.so", *old = getenv("LD_PRELOAD");
	enum sc_mpi_abi abi = sc_mpi_abi_of(e->program, found, sizeof(found), &why);
	bool other = abi != SC_MPI_ABI_UNKNOWN && abi != sc_mpi_abi_built();
	char *plugin;

	(void)s;
	/* Beside the default build only MPICH's is ever built (CMakeLists.txt): an Open MPI
	 * program meeting an MPICH-default syscope has no tracer. */
	if (other)
		name = abi == SC_MPI_ABI_MPICH ? "libsyscope-mpi-mpich.so" : NULL;
	plugin = name ? plugin_path(e->libdir, name) : NULL;
	if (other && (!plugin || access(plugin, R_OK))) {
		pr_warn("MPI tracing off: the program uses %s (%s), and this syscope was built "
			"with %s's headers only (build it with %s's development files installed, "
			"e.g. %s)",
			sc_mpi_abi_name(abi), why, sc_mpi_abi_name(sc_mpi_abi_built()),
			sc_mpi_abi_name(abi),
			abi == SC_MPI_ABI_MPICH ? "libmpich-dev" : "libopenmpi-dev");
	} else if (access(plugin, R_OK)) {
		pr_warn("MPI tracing not available: this syscope was built without MPI headers");
	} else {
		if (other)
			pr_dbg("MPI tracing: %s (%s)", name, why);
		char *v = old && *old ? sc_xasprintf("%s:%s", plugin, old) : sc_xstrdup(plugin);

		setenv("LD_PRELOAD", v, 1);
		free(v);
	}
	free(plugin);
}

static void probe_mpi(struct sc_probe *p)
{
	char *dir = installed_libdir(), *plugin = plugin_path(dir, "libsyscope-mpi-mpich.so");
	char *what = sc_xasprintf("C and Fortran bindings, through PMPI; on with --parallel=mpi; "
				  "for %s%s",
				  sc_mpi_abi_name(sc_mpi_abi_built()),
				  access(plugin, R_OK) ? "" : " and MPICH");

	probe_plugin(p, "libsyscope-mpi.so", what, "not built (no MPI headers at build time)");
	free(what);
	free(plugin);
	free(dir);
}

/* --gpu-events: metric names checked against the GPU here, before the run. */
static void check_gpu_events(struct sc_settings *s)
{
	sc_gpu_events_check(s);
}

static const char *const nccl_env[] = { "NCCL_PROFILER_PLUGIN", NULL };

/*
 * NCCL tracing: NCCL dlopens the profiler plugin NCCL_PROFILER_PLUGIN names (a path is taken
 * as it is) when a communicator is made; libsyscope-nccl.so lives beside libsyscope.so. A
 * plugin the user chose is kept: NCCL loads only one (ours, preloaded, then records the
 * calls themselves).
 */
static void nccl_environment(const struct sc_settings *s, const struct sc_launch_env *e)
{
	char *plugin = plugin_path(e->libdir, "libsyscope-nccl.so");
	const char *theirs = getenv("NCCL_PROFILER_PLUGIN");

	(void)s;
	if (access(plugin, R_OK))
		pr_warn("NCCL tracing not available: %s is missing", plugin);
	else if (theirs && *theirs && strcmp(theirs, plugin))
		pr_warn("NCCL tracing off: NCCL_PROFILER_PLUGIN is already set (to %s) and NCCL "
			"loads only one profiler plugin; yours is kept",
			theirs);
	else
		setenv("NCCL_PROFILER_PLUGIN", plugin, 1);
	/* Preloaded too, for the calls NCCL's profiler does not report (nccl_api.c). */
	if (!access(plugin, R_OK)) {
		const char *old = getenv("LD_PRELOAD");
		char *v = old && *old ? sc_xasprintf("%s:%s", plugin, old) : sc_xstrdup(plugin);

		setenv("LD_PRELOAD", v, 1);
		free(v);
	}
	free(plugin);
}

static void probe_nccl(struct sc_probe *p)
{
	probe_plugin(p, "libsyscope-nccl.so",
		     "NCCL profiler plugin (interface v5, v4, v3); on with --parallel=nccl",
		     "libsyscope-nccl.so is missing from this installation");
}

/* --cpu-events and --sample-overflow: event names resolved and tried here, before the run. */
static void check_cpu_events(struct sc_settings *s)
{
	sc_cpu_events_prepare(s);
	sc_overflow_prepare(s);
}

/* ---- the table ---- */

const struct sc_component sc_components[] = {
	{
		.name = "sampling-cputime",
		.description = "Call-stack sampling on each thread's CPU time (--sampling-cputime)",
		.enable = SC_SET_USE_SAMPLING,
		.flag = "cpu",
		.flag_metavar = "HZ",
		.flag_help = "CPU call-stack sampling on; =HZ sets its rate",
		.value = SC_SET_SAMPLING_FREQ,
		.probe = probe_cputime,
	},
	{
		.name = "sampling-realtime",
		.description = "Call-stack sampling on wall-clock time (--sampling-realtime)",
		.enable = SC_SET_SAMPLING_REALTIME,
		.value = -1,
		.probe = probe_realtime,
	},
	{
		.name = "cuda",
		.description = "CUDA API, kernels, copies, allocations, NVTX, synchronization, "
			       "unified memory, graphs (--cuda, --cuda-domains)",
		.enable = SC_SET_USE_CUDA,
		.flag = "cuda",
		.flag_metavar = "DOMAINS",
		.flag_help = "CUDA tracing on; =LIST chooses what: runtime, driver, kernel, "
			     "memory, nvtx, sync, uvm, graph, overhead, or all (--no-cuda: off)",
		.aliases = cuda_aliases,
		.value = SC_SET_CUDA_DOMAINS,
		.program_env = cuda_env,
		.probe = probe_cuda,
		.check = check_gpu_events,
		.environment = cuda_environment,
	},
	{
		.name = "gpu-telemetry",
		.description = "GPU utilization, temperature, power, memory, clocks, PCIe, NVLink "
			       "(--gpu)",
		.enable = SC_SET_USE_NVML,
		.flag = "gpu",
		.flag_metavar = "METRICS",
		.flag_help = "GPU telemetry through NVML on; =LIST chooses the metrics: busy, "
			     "temp, power, mem_usage, clocks, pcie, nvlink, encoder, decoder, or "
			     "all (--no-gpu: off)",
		.aliases = gpu_aliases,
		.value = SC_SET_NVML_METRICS,
		.probe = probe_nvml,
		.check = check_nvml,
	},
	{
		.name = "cpu-counters",
		.description = "CPU counters per thread and function (--cpu-events; -H lists them)",
		.enable = -1,
		.value = -1,
		.probe = probe_cpu_counters,
		.check = check_cpu_events,
	},
	{
		.name = "host-telemetry",
		.description = "CPU use, memory, faults, switches, I/O, network and disks (--host)",
		.enable = SC_SET_USE_PROCESS_SAMPLING,
		.value = -1,
		.probe = probe_host,
	},
	{
		.name = "python",
		.description = "Python frames (file, function, line) and the GIL state in the "
			       "samples of CPython programs (--python, on by default)",
		.enable = SC_SET_PYTHON,
		.value = -1,
		.probe = probe_python,
	},
	{
		.name = "mpi",
		.description = "MPI calls, with bytes and peers (--parallel=mpi)",
		.enable = SC_SET_USE_MPI,
		.flag = "parallel",
		.flag_metavar = "RUNTIMES",
		.flag_help = PARALLEL_HELP,
		.token = "mpi",
		.aliases = mpi_aliases,
		.value = -1,
		.probe = probe_mpi,
		.environment = mpi_environment,
	},
	{
		.name = "openmp",
		.description = "OpenMP parallel regions, tasks, loops, barriers, critical sections "
			       "and locks (--parallel=openmp)",
		.enable = SC_SET_USE_OPENMP,
		.flag = "parallel",
		.flag_metavar = "RUNTIMES",
		.flag_help = PARALLEL_HELP,
		.token = "openmp",
		.aliases = openmp_aliases,
		.value = -1,
		.probe = probe_openmp,
	},
	{
		.name = "nccl",
		.description = "NCCL collectives and point-to-point calls with bytes, kinds and "
			       "communicators, their kernels' GPU time (--parallel=nccl)",
		.enable = SC_SET_USE_NCCL,
		.flag = "parallel",
		.flag_metavar = "RUNTIMES",
		.flag_help = PARALLEL_HELP,
		.token = "nccl",
		.aliases = nccl_aliases,
		.value = -1,
		.program_env = nccl_env,
		.probe = probe_nccl,
		.environment = nccl_environment,
	},
	{
		.name = "pthread",
		.description = "pthread lock, condition, barrier and semaphore waits, thread "
			       "creations and joins (--parallel=pthread)",
		.enable = SC_SET_USE_PTHREAD,
		.flag = "parallel",
		.flag_metavar = "RUNTIMES",
		.flag_help = PARALLEL_HELP,
		.token = "pthread",
		.aliases = pthread_aliases,
		.value = -1,
		.probe = probe_pthread,
		.environment = pthread_environment,
	},
};

const size_t sc_ncomponents = sizeof(sc_components) / sizeof(sc_components[0]);

const struct sc_component *sc_component_find(const char *name)
{
	for (size_t i = 0; i < sc_ncomponents; i++)
		if (!strcmp(sc_components[i].name, name))
			return &sc_components[i];
	return NULL;
}

/* ---- domain flags ---- */

const char *sc_domain_flag_values(const char *flag, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sc_ncomponents; i++) {
		const struct sc_component *c = &sc_components[i];

		if (!c->flag || strcmp(c->flag, flag))
			continue;
		if (c->token) {
			len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s",
						len ? " " : "", c->token);
		} else if (c->aliases) {
			for (const struct sc_alias *a = c->aliases; a->spelling; a++)
				if (!strcmp(a->spelling, a->token))
					len += (size_t)snprintf(buf + len, len < n ? n - len : 0,
								"%s%s", len ? " " : "", a->token);
		} else {
			len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s",
						len ? " " : "",
						c->flag_metavar ? c->flag_metavar : "");
		}
		if (len >= n)
			break;
	}
	return buf;
}

static void unknown_token(const char *flag, const char *w, const struct sc_alias *al)
{
	const char *names[64];
	size_t n = 0;
	char valid[512] = "";
	const char *near;

	for (size_t i = 0; al[i].spelling && n < 64; i++)
		names[n++] = al[i].spelling;
	near = sc_nearest(w, names, n);
	for (size_t i = 0; al[i].spelling; i++)
		if (!strcmp(al[i].spelling, al[i].token))
			snprintf(valid + strlen(valid), sizeof(valid) - strlen(valid), "%s%s",
				 valid[0] ? ", " : "", al[i].token);
	sc_die(SC_EXIT_USAGE, "--%s: unknown domain '%s'%s%s%s; valid: %s, all", flag, w,
	       near ? " (did you mean " : "", near ? near : "", near ? "?)" : "", valid);
}

char *sc_domain_tokens(const char *flag, const char *value, const struct sc_alias *al)
{
	char *out = sc_xstrdup(""), *copy = sc_xstrdup(value), *save = NULL;

	if (!*value || !strcmp(value, "all")) {
		for (size_t i = 0; al[i].spelling; i++)
			if (!strcmp(al[i].spelling, al[i].token))
				out = sc_xwith_word(out, al[i].token);
		free(copy);
		return out;
	}
	for (char *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
		const char *tok = NULL;

		for (size_t i = 0; al[i].spelling && !tok; i++)
			if (!strcmp(al[i].spelling, w))
				tok = al[i].token;
		if (!tok)
			unknown_token(flag, w, al);
		out = sc_xwith_word(out, tok);
	}
	free(copy);
	return out;
}

/* ---- launcher hooks ---- */

static bool enabled(const struct sc_component *c, const struct sc_settings *s)
{
	return !c->pending && (c->enable < 0 || sc_bool(s, (enum sc_setting_id)c->enable));
}

void sc_components_check(struct sc_settings *s)
{
	for (size_t i = 0; i < sc_ncomponents; i++)
		if (sc_components[i].check && enabled(&sc_components[i], s))
			sc_components[i].check(s);
}

/* Causal profiling credits the waits of blocked locks, which pass through the lock wrappers
 * (causal/block.c): a causal run preloads them even without pthread tracing. */
static bool causal_needs(const struct sc_component *c, const struct sc_settings *s)
{
	return c->enable == SC_SET_USE_PTHREAD && sc_bool(s, SC_SET_CAUSAL);
}

void sc_components_environment(const struct sc_settings *s, const struct sc_launch_env *e)
{
	char carried[1024] = "";
	size_t len = 0;

	for (size_t i = 0; i < sc_ncomponents; i++) {
		const struct sc_component *c = &sc_components[i];
		char *before[8] = { NULL };
		size_t nv = 0;

		if (!c->environment || (!enabled(c, s) && !causal_needs(c, s)))
			continue;
		for (; c->program_env && c->program_env[nv] && nv < 8; nv++)
			before[nv] = getenv(c->program_env[nv])
					     ? sc_xstrdup(getenv(c->program_env[nv]))
					     : NULL;
		c->environment(s, e);
		/* Only what the component set: a variable the user had stays theirs. */
		for (size_t k = 0; k < nv; k++) {
			const char *now = getenv(c->program_env[k]);

			if (now && (!before[k] || strcmp(now, before[k])) &&
			    len + strlen(c->program_env[k]) + 2 < sizeof(carried))
				len += (size_t)snprintf(carried + len, sizeof(carried) - len,
							"%s%s", len ? ":" : "", c->program_env[k]);
			free(before[k]);
		}
	}
	if (len)
		setenv(SC_SETTING_ENV_PREFIX "CARRIED_ENV", carried, 1);
	else
		unsetenv(SC_SETTING_ENV_PREFIX "CARRIED_ENV");
}
