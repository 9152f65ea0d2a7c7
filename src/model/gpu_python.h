/* SPDX-License-Identifier: MIT */
/*
 * GPU time by Python call site (issue 15): the Python stacks the CUDA tracer recorded at each
 * launch, copy and set (PY_CALLSITE), kept per process image and joined by correlation id to
 * the GPU ops that call caused. The profile of kind SC_PROFILE_GPU_PYTHON (metric
 * "gpu_time_by_python") has one entry per such call whose ops took device time: its path is
 * the Python stack, root to leaf, its weight the device time of its kernels, copies and sets
 * in seconds; so a function's inclusive time is the GPU time launched under it and a line's
 * exclusive time the GPU time launched by that very line.
 */
#ifndef SYSCOPE_MODEL_GPU_PYTHON_H
#define SYSCOPE_MODEL_GPU_PYTHON_H

#include <stdint.h>

#include "../common/hashmap.h"
#include "../common/vec.h"
#include "../store/format.h"

struct sc_model;
struct sc_image;
struct sc_profile_set;

struct sc_py_callsite {
	uint64_t corr_id;
	int32_t tid;
	uint32_t frames_at; /* first frame in sc_py_callsites.frames, innermost first */
	uint16_t nframes;
	uint8_t flags; /* SC_PY_STACK_* */
};

struct sc_py_callsites {
	VEC(struct sc_py_callsite) v;
	VEC(struct sc_py_frame) frames;
	struct sc_hashmap by_corr; /* correlation id -> index in v + 1 (the first record) */
	uint64_t bad_records;	   /* PY_CALLSITE records whose frames did not fit */
};

/* Keep a PY_CALLSITE record of thread `tid` (the model's metadata pass). */
void sc_py_callsite_record(struct sc_image *img, int32_t tid, const struct sc_record *rec);
void sc_py_callsites_free(struct sc_py_callsites *cs);
/* The call site of correlation id `corr` in an image, or NULL; `*frames` its frames. */
const struct sc_py_callsite *sc_py_callsite_of(const struct sc_image *img, uint64_t corr,
					       const struct sc_py_frame **frames);
/* "qualname (file:line) <- caller (file:line) <- ...", innermost first, in `buf`. */
const char *sc_py_callsite_text(const struct sc_image *img, const struct sc_py_callsite *cs,
				const struct sc_py_frame *frames, char *buf, size_t size);
/* The SC_PROFILE_GPU_PYTHON profiles of every process with call sites. */
void sc_gpu_python_profiles_build(struct sc_profile_set *set, struct sc_model *m);

#endif /* SYSCOPE_MODEL_GPU_PYTHON_H */
