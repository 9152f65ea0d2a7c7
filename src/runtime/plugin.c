/* SPDX-License-Identifier: MIT */
/* The plugin interface of plugin.h: a table of the runtime's recording entry points. */
#include "plugin.h"

#include <pthread.h>

#include "python/python.h"
#include "rt.h"

static void (*stop_hooks[SC_PLUGIN_MAX_STOP_HOOKS])(void);
static unsigned nstop_hooks;
static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;

static bool plugin_active(void)
{
	return rt_recording();
}

static void plugin_note(enum sc_note_level level, const char *text)
{
	rt_note(level, "%s", text);
}

static int plugin_at_stop(void (*fn)(void))
{
	int rc = -1;

	pthread_mutex_lock(&stop_lock);
	if (nstop_hooks < SC_PLUGIN_MAX_STOP_HOOKS) {
		stop_hooks[nstop_hooks++] = fn;
		rc = 0;
	}
	pthread_mutex_unlock(&stop_lock);
	return rc;
}

void rt_plugins_stop(void)
{
	void (*hooks[SC_PLUGIN_MAX_STOP_HOOKS])(void);
	unsigned n;

	pthread_mutex_lock(&stop_lock);
	n = nstop_hooks;
	for (unsigned i = 0; i < n; i++)
		hooks[i] = stop_hooks[i];
	nstop_hooks = 0;
	pthread_mutex_unlock(&stop_lock);
	for (unsigned i = n; i-- > 0;)
		hooks[i]();
}

static const struct sc_plugin_api api = {
	.abi = SC_PLUGIN_ABI,
	.size = sizeof(struct sc_plugin_api),
	.active = plugin_active,
	.now_ns = rt_now_ns,
	.record = rt_record,
	.note = plugin_note,
	.at_stop = plugin_at_stop,
	.counter_track = rt_counter_track,
	.counter_value = rt_counter_value,
	.py_callsites_on = rt_py_callsites_on,
	.py_callsite = rt_py_callsite,
	.reserve = rt_reserve,
	.commit = rt_commit,
};

RT_EXPORT const struct sc_plugin_api *syscope_plugin_api(uint32_t abi);
RT_EXPORT const struct sc_plugin_api *syscope_plugin_api(uint32_t abi)
{
	if (abi != SC_PLUGIN_ABI || !atomic_load(&rt_proc.active))
		return NULL;
	return &api;
}
