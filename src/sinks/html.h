/* SPDX-License-Identifier: MIT */
/*
 * `html`: one self-contained report.html per conversion (html.c), its data gathered as JSON
 * by html_profile.c (flame graph, top functions) and html_timeline.c (thread activity,
 * counters, GPU work, regions: one replay), its script and style embedded at build time
 * (html_page.js, html_page.css).
 */
#ifndef SYSCOPE_SINKS_HTML_H
#define SYSCOPE_SINKS_HTML_H

#include <jansson.h>

#include "sink.h"

extern const struct sc_sink sc_sink_html;

/* The file the sink writes, relative to the output folder ("report.html"); `syscope report
 * -o FILE` names another. */
extern const char *sc_html_file_name;

/* Bounds on what the page holds, whatever the size of the session. */
#define SC_HTML_FLAME_NODES 10000 /* kept call-tree nodes (plus one "[other]" per parent) */
#define SC_HTML_TOP_FUNCS 100	  /* functions by self and by total time, each */
#define SC_HTML_BUCKETS 200	  /* time buckets of thread activity and GPU busy strips */
#define SC_HTML_POINTS 1000	  /* points per counter track */
#define SC_HTML_THREADS 256	  /* thread rows; the rest in one row */
#define SC_HTML_TRACKS 256	  /* counter tracks */
#define SC_HTML_ROWS 2000	  /* distinct GPU ops and regions, each; the rest in "[other]" */

/* A recorded string as JSON (html.c): names need not be valid UTF-8 (a thread name cut at
 * 15 bytes, an NVTX range's bytes), and one bad string must not cost the whole report, so
 * each byte of an invalid one above 0x7f becomes '?'. */
json_t *sc_html_str(const char *s);

/* html_profile.c: {"kind", "metric", "samples", "seconds", "flame": {names, nodes},
 * "functions": [...]} of the sampled profiles, or NULL without samples. */
json_t *sc_html_profile_json(struct sc_output *out);
/* html_timeline.c: {"threads", "counters", "gpu", "regions"} from a replay of every image. */
json_t *sc_html_timeline_json(struct sc_output *out);

#endif
