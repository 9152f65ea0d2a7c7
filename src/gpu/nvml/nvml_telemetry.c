/* SPDX-License-Identifier: MIT */
/*
 * GPU telemetry through NVML, the NVIDIA driver's management library, loaded with dlopen
 * (no headers, no link-time dependency: syscope runs the same where there is no driver).
 *
 * Each metric the user selects (--gpu=busy,temp,...) is one "reading": one or two NVML
 * calls giving one or two values, each a counter track "GPU <index> <name>". At begin every
 * reading is tried once per GPU: one that fails is dropped for that GPU (named in a note),
 * and one whose call took longer than SLOW_CALL_NS is read only on the slow ticks, so that
 * a slow query never delays the fast cadence. Counters that only grow (PCIe, NVLink bytes)
 * are recorded as totals since begin, as the host's network counters are.
 *
 * GPUs are NVML indexes (the order of nvidia-smi). By default the ones the program can see
 * (CUDA_VISIBLE_DEVICES, by index or UUID), else all.
 */
#include "../../runtime/sources/gpu_telemetry.h"

#include "nvml_api.h"

#include "../../common/strutil.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GPUS SC_ID_LIST_MAX_GPUS
/* A reading slower than this is kept off the fast cadence (an H200 measured 1.5-30 us for
 * most, 650 us for the PCIe counters). */
#define SLOW_CALL_NS 100000
#define ALL_LINKS 0xffffffffu

struct gpu;

struct reading {
	const char *metric; /* the --gpu token that selects it */
	unsigned nvalues;
	const char *name[2]; /* track names, after "GPU <index> " */
	const char *unit[2];
	bool cumulative; /* totals: record the growth since begin */
	nvmlReturn_t (*read)(struct gpu *g, double v[2]);
};

enum reading_state {
	READ_OFF,
	READ_FAST,
	READ_SLOW
};

struct gpu {
	nvmlDevice_t dev;
	unsigned index;
	char name[96];
	bool power_by_field; /* instantaneous power field works (else the 1 s average) */
	unsigned char state[16];
	int track[16][2];
	double base[16][2];
};

struct nvml_state {
	void *lib;
	nvmlReturn_t (*init)(void);
	nvmlReturn_t (*shutdown)(void);
	const char *(*error_string)(nvmlReturn_t);
	nvmlReturn_t (*driver_version)(char *, unsigned);
	nvmlReturn_t (*count)(unsigned *);
	nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *);
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*power)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*fields)(nvmlDevice_t, int, nvmlFieldValue_t *);
	nvmlReturn_t (*encoder)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*decoder)(nvmlDevice_t, unsigned *, unsigned *);

	struct gpu gpus[MAX_GPUS];
	unsigned ngpus;
	uint64_t init_ns, read_ns; /* time spent in NVML */
	uint64_t reading_ns[16];   /* ... per reading, over all GPUs */
	unsigned reading_count[16];
	unsigned ticks;
};

static struct nvml_state nv;

/* ---- readings ---- */

static double field_value(const nvmlFieldValue_t *f)
{
	switch (f->valueType) {
	case NVML_VALUE_TYPE_DOUBLE:
		return f->value.dVal;
	case NVML_VALUE_TYPE_UNSIGNED_INT:
		return f->value.uiVal;
	case NVML_VALUE_TYPE_UNSIGNED_LONG:
		return (double)f->value.ulVal;
	case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
		return (double)f->value.ullVal;
	case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
		return (double)f->value.sllVal;
	case NVML_VALUE_TYPE_SIGNED_INT:
		return f->value.siVal;
	case NVML_VALUE_TYPE_UNSIGNED_SHORT:
		return f->value.usVal;
	}
	return 0;
}

/* Two field values in one call; each entry has its own result. */
static nvmlReturn_t read_fields(struct gpu *g, unsigned id0, unsigned id1, unsigned scope,
				double scale, double v[2])
{
	nvmlFieldValue_t f[2] = { { .fieldId = id0, .scopeId = scope },
				  { .fieldId = id1, .scopeId = scope } };
	nvmlReturn_t r = nv.fields(g->dev, 2, f);

	if (r)
		return r;
	for (int i = 0; i < 2; i++) {
		if (f[i].nvmlReturn)
			return f[i].nvmlReturn;
		v[i] = field_value(&f[i]) * scale;
	}
	return NVML_SUCCESS;
}

static nvmlReturn_t read_busy(struct gpu *g, double v[2])
{
	nvmlUtilization_t u;
	nvmlReturn_t r = nv.utilization(g->dev, &u);

	v[0] = u.gpu;
	v[1] = u.memory;
	return r;
}

static nvmlReturn_t read_temp(struct gpu *g, double v[2])
{
	unsigned t = 0;
	nvmlReturn_t r = nv.temperature(g->dev, NVML_TEMPERATURE_GPU, &t);

	v[0] = t;
	return r;
}

/* Instantaneous power where the driver has it; nvmlDeviceGetPowerUsage is a 1 s average on
 * Ampere and newer GPUs. */
static nvmlReturn_t read_power(struct gpu *g, double v[2])
{
	unsigned mw = 0;
	nvmlReturn_t r;

	if (g->power_by_field) {
		nvmlFieldValue_t f = { .fieldId = NVML_FI_DEV_POWER_INSTANT };

		if (!nv.fields(g->dev, 1, &f) && !f.nvmlReturn) {
			v[0] = field_value(&f) * 1e-3;
			return NVML_SUCCESS;
		}
		g->power_by_field = false;
	}
	r = nv.power(g->dev, &mw);
	v[0] = mw * 1e-3;
	return r;
}

static nvmlReturn_t read_memory(struct gpu *g, double v[2])
{
	nvmlMemory_t m;
	nvmlReturn_t r = nv.memory(g->dev, &m);

	v[0] = (double)m.used;
	return r;
}

static nvmlReturn_t read_clocks(struct gpu *g, double v[2])
{
	unsigned sm = 0, mem = 0;
	nvmlReturn_t r = nv.clock(g->dev, NVML_CLOCK_SM, &sm);

	if (!r)
		r = nv.clock(g->dev, NVML_CLOCK_MEM, &mem);
	v[0] = sm;
	v[1] = mem;
	return r;
}

static nvmlReturn_t read_pcie(struct gpu *g, double v[2])
{
	return read_fields(g, NVML_FI_DEV_PCIE_COUNT_TX_BYTES, NVML_FI_DEV_PCIE_COUNT_RX_BYTES, 0,
			   1, v);
}

static nvmlReturn_t read_nvlink(struct gpu *g, double v[2])
{
	return read_fields(g, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX,
			   NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ALL_LINKS, 1024, v);
}

static nvmlReturn_t read_encoder(struct gpu *g, double v[2])
{
	unsigned pct = 0, period;
	nvmlReturn_t r = nv.encoder(g->dev, &pct, &period);

	v[0] = pct;
	return r;
}

static nvmlReturn_t read_decoder(struct gpu *g, double v[2])
{
	unsigned pct = 0, period;
	nvmlReturn_t r = nv.decoder(g->dev, &pct, &period);

	v[0] = pct;
	return r;
}

static const struct reading readings[] = {
	{ "busy", 2, { "utilization", "memory utilization" }, { "%", "%" }, false, read_busy },
	{ "temp", 1, { "temperature" }, { "C" }, false, read_temp },
	{ "power", 1, { "power" }, { "W" }, false, read_power },
	{ "mem_usage", 1, { "memory used" }, { "bytes" }, false, read_memory },
	{ "clocks", 2, { "SM clock", "memory clock" }, { "MHz", "MHz" }, false, read_clocks },
	{ "pcie", 2, { "PCIe bytes out", "PCIe bytes in" }, { "bytes", "bytes" }, true, read_pcie },
	{ "nvlink",
	  2,
	  { "NVLink bytes out", "NVLink bytes in" },
	  { "bytes", "bytes" },
	  true,
	  read_nvlink },
	{ "encoder", 1, { "encoder utilization" }, { "%" }, false, read_encoder },
	{ "decoder", 1, { "decoder utilization" }, { "%" }, false, read_decoder },
};

#define NREADINGS (sizeof(readings) / sizeof(readings[0]))

/* ---- loading ---- */

static const char *error_text(nvmlReturn_t r)
{
	const char *s = nv.error_string ? nv.error_string(r) : NULL;

	return s ? s : "unknown error";
}

static bool load(void)
{
	static const struct {
		const char *name;
		size_t offset;
	} syms[] = {
#define SYM(field, name) { name, offsetof(struct nvml_state, field) }
		SYM(init, "nvmlInit_v2"),
		SYM(shutdown, "nvmlShutdown"),
		SYM(error_string, "nvmlErrorString"),
		SYM(driver_version, "nvmlSystemGetDriverVersion"),
		SYM(count, "nvmlDeviceGetCount_v2"),
		SYM(handle, "nvmlDeviceGetHandleByIndex_v2"),
		SYM(name, "nvmlDeviceGetName"),
		SYM(uuid, "nvmlDeviceGetUUID"),
		SYM(utilization, "nvmlDeviceGetUtilizationRates"),
		SYM(temperature, "nvmlDeviceGetTemperature"),
		SYM(power, "nvmlDeviceGetPowerUsage"),
		SYM(memory, "nvmlDeviceGetMemoryInfo"),
		SYM(clock, "nvmlDeviceGetClockInfo"),
		SYM(fields, "nvmlDeviceGetFieldValues"),
		SYM(encoder, "nvmlDeviceGetEncoderUtilization"),
		SYM(decoder, "nvmlDeviceGetDecoderUtilization"),
#undef SYM
	};

	nv.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!nv.lib) {
		rt_note(SC_NOTE_INFO,
			"GPU telemetry: no NVIDIA driver here (%s); carrying on without it",
			dlerror());
		return false;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		void *fn = dlsym(nv.lib, syms[i].name);

		if (!fn) {
			rt_note(SC_NOTE_WARN,
				"GPU telemetry: this driver's NVML has no %s (too old); carrying "
				"on without GPU telemetry",
				syms[i].name);
			return false;
		}
		memcpy((char *)&nv + syms[i].offset, &fn, sizeof(fn));
	}
	return true;
}

/* ---- choosing GPUs ---- */

static int index_of_uuid(const char *prefix, unsigned count)
{
	for (unsigned i = 0; i < count; i++) {
		nvmlDevice_t d;
		char uuid[96];

		if (!nv.handle(i, &d) && !nv.uuid(d, uuid, sizeof(uuid)) &&
		    !strncmp(uuid, prefix, strlen(prefix)))
			return (int)i;
	}
	return -1;
}

/*
 * The GPUs a CUDA program sees with this CUDA_VISIBLE_DEVICES: indexes or UUIDs (prefixes
 * allowed), up to the first that is not valid, as CUDA reads it. Assumes CUDA's order is
 * the bus order NVML uses (true unless CUDA_DEVICE_ORDER=FASTEST_FIRST picks otherwise).
 */
static void visible_gpus(const char *list, unsigned count, bool *want)
{
	char *copy = strdup(list), *tok, *save = NULL;

	for (tok = copy ? strtok_r(copy, ", ", &save) : NULL; tok;
	     tok = strtok_r(NULL, ", ", &save)) {
		char *end;
		unsigned long i = strtoul(tok, &end, 10);
		int u;

		if (!strncmp(tok, "GPU-", 4) && (u = index_of_uuid(tok, count)) >= 0)
			want[u] = true;
		else if (*end || end == tok || i >= count)
			break;
		else
			want[i] = true;
	}
	free(copy);
}

static bool choose_gpus(const char *setting, unsigned count, bool *want)
{
	unsigned long bitmap[MAX_GPUS / (8 * sizeof(unsigned long))];
	const char *visible = getenv("CUDA_VISIBLE_DEVICES");

	if (!strcmp(setting, "all") || (!*setting && !visible)) {
		for (unsigned i = 0; i < count; i++)
			want[i] = true;
		return true;
	}
	if (!*setting) {
		visible_gpus(visible, count, want);
		return true;
	}
	if (sc_parse_id_list(setting, bitmap, MAX_GPUS)) {
		rt_note(SC_NOTE_WARN,
			"GPU telemetry: --gpus '%s' is not a list of GPU indexes or ranges "
			"(e.g. 0,2-3) or 'all'; no GPU telemetry",
			setting);
		return false;
	}
	for (unsigned i = 0; i < MAX_GPUS; i++) {
		if (!((bitmap[i / (8 * sizeof(unsigned long))] >>
		       (i % (8 * sizeof(unsigned long)))) &
		      1))
			continue;
		if (i >= count) {
			rt_note(SC_NOTE_WARN,
				"GPU telemetry: --gpus names GPU %u, but this machine has %u GPU%s "
				"(valid: 0-%u); it is left out",
				i, count, count == 1 ? "" : "s", count - 1);
			continue;
		}
		want[i] = true;
	}
	return true;
}

/* ---- begin, tick, end ---- */

static uint64_t elapsed(uint64_t since)
{
	return rt_now_ns() - since;
}

/* Try each selected reading once: keep it on the fast or slow cadence, or drop it. */
static void try_readings(struct gpu *g, const char *metrics, char *dropped, size_t dlen)
{
	size_t used = 0;

	g->power_by_field = true;
	for (unsigned r = 0; r < NREADINGS; r++) {
		const struct reading *rd = &readings[r];
		double v[2] = { 0, 0 };
		uint64_t t0 = rt_now_ns(), took;
		nvmlReturn_t ret;

		if (!sc_has_word(metrics, rd->metric, ", ") && !sc_has_word(metrics, "all", ", "))
			continue;
		/* Timed on a second call: the first one of a kind can be slow once. */
		ret = rd->read(g, v);
		if (!ret) {
			t0 = rt_now_ns();
			ret = rd->read(g, v);
		}
		took = elapsed(t0);
		if (ret) {
			used += (size_t)snprintf(dropped + used, used < dlen ? dlen - used : 0,
						 "%s%s (%s)", used ? ", " : "", rd->metric,
						 error_text(ret));
			continue;
		}
		g->state[r] = took > SLOW_CALL_NS ? READ_SLOW : READ_FAST;
		for (unsigned k = 0; k < rd->nvalues; k++) {
			char track[64];

			snprintf(track, sizeof(track), "GPU %u %s", g->index, rd->name[k]);
			g->track[r][k] = rt_counter_track(track, rd->unit[k]);
			g->base[r][k] = rd->cumulative ? v[k] : 0;
		}
	}
}

bool rt_gpu_telemetry_begin(const struct sc_settings *s)
{
	const char *metrics = sc_str(s, SC_SET_NVML_METRICS);
	bool want[MAX_GPUS] = { false };
	uint64_t t0 = rt_now_ns();
	char driver[80] = "?";
	unsigned count = 0;
	nvmlReturn_t r;

	if (!nv.lib && !load())
		return false;
	r = nv.init();
	if (r) {
		rt_note(SC_NOTE_WARN,
			"GPU telemetry: NVML could not start (%s); carrying on "
			"without it",
			error_text(r));
		return false;
	}
	nv.driver_version(driver, sizeof(driver));
	r = nv.count(&count);
	if (r || !count) {
		rt_note(SC_NOTE_INFO, "GPU telemetry: NVML sees no GPU (%s)",
			r ? error_text(r) : "0 devices");
		nv.shutdown();
		return false;
	}
	if (count > MAX_GPUS)
		count = MAX_GPUS;
	if (!choose_gpus(sc_str(s, SC_SET_SAMPLING_GPUS), count, want)) {
		nv.shutdown();
		return false;
	}
	for (unsigned i = 0; i < count; i++) {
		struct gpu *g = &nv.gpus[nv.ngpus];
		char dropped[512] = "", slow[256] = "";
		size_t slen = 0;

		if (!want[i] || nv.handle(i, &g->dev))
			continue;
		memset(g->track, 0xff, sizeof(g->track));
		g->index = i;
		if (nv.name(g->dev, g->name, sizeof(g->name)))
			snprintf(g->name, sizeof(g->name), "GPU");
		try_readings(g, metrics, dropped, sizeof(dropped));
		for (unsigned k = 0; k < NREADINGS; k++)
			if (g->state[k] == READ_SLOW)
				slen += (size_t)snprintf(
					slow + slen, slen < sizeof(slow) ? sizeof(slow) - slen : 0,
					" %s", readings[k].metric);
		if (*dropped)
			rt_note(SC_NOTE_WARN, "GPU telemetry: GPU %u (%s) does not give %s", i,
				g->name, dropped);
		if (*slow)
			rt_note(SC_NOTE_INFO,
				"GPU telemetry: GPU %u: slow to read, so read on every tenth tick:%s",
				i, slow);
		nv.ngpus++;
	}
	nv.init_ns = elapsed(t0);
	rt_note(SC_NOTE_INFO, "GPU telemetry through NVML (driver %s): %u of %u GPU%s, %s", driver,
		nv.ngpus, count, count == 1 ? "" : "s", metrics);
	if (!nv.ngpus)
		nv.shutdown();
	return nv.ngpus > 0;
}

void rt_gpu_telemetry_tick(uint64_t now, bool slow)
{
	uint64_t t0 = rt_now_ns();

	for (unsigned i = 0; i < nv.ngpus; i++) {
		struct gpu *g = &nv.gpus[i];

		for (unsigned r = 0; r < NREADINGS; r++) {
			const struct reading *rd = &readings[r];
			double v[2];

			uint64_t r0 = rt_now_ns();
			nvmlReturn_t ret;

			if (g->state[r] == READ_OFF || (g->state[r] == READ_SLOW && !slow))
				continue;
			ret = rd->read(g, v);
			nv.reading_ns[r] += elapsed(r0);
			nv.reading_count[r]++;
			if (ret)
				continue;
			for (unsigned k = 0; k < rd->nvalues; k++)
				rt_telemetry_put(g->track[r][k], now, v[k] - g->base[r][k]);
		}
	}
	nv.read_ns += elapsed(t0);
	nv.ticks++;
}

void rt_gpu_telemetry_end(void)
{
	char costs[256] = "";
	size_t len = 0;

	if (!nv.ngpus)
		return;
	for (unsigned r = 0; r < NREADINGS; r++)
		if (nv.reading_count[r])
			len += (size_t)snprintf(
				costs + len, len < sizeof(costs) ? sizeof(costs) - len : 0,
				"%s%s %.1f", len ? ", " : "", readings[r].metric,
				(double)nv.reading_ns[r] * 1e-3 / nv.reading_count[r]);
	if (*costs)
		rt_note(SC_NOTE_INFO, "GPU telemetry: microseconds per reading: %s", costs);
	rt_note(SC_NOTE_INFO,
		"GPU telemetry: %u ticks over %u GPU%s, %.2f ms in NVML (%.1f us per tick; "
		"start-up %.1f ms)",
		nv.ticks, nv.ngpus, nv.ngpus == 1 ? "" : "s", (double)nv.read_ns * 1e-6,
		nv.ticks ? (double)nv.read_ns * 1e-3 / nv.ticks : 0, (double)nv.init_ns * 1e-6);
	nv.shutdown();
	nv.ngpus = 0;
}
