/* SPDX-License-Identifier: MIT */
/* activity.c: CUPTI activity records into syscope records. */
#ifndef SYSCOPE_GPU_CUDA_ACTIVITY_H
#define SYSCOPE_GPU_CUDA_ACTIVITY_H

#include "cuda_common.h"

/* Register the buffer callbacks and enable the activity kinds of `domains`. Returns 0 or the
 * CUPTI error of the first kind that could not be enabled (the others stay on). */
CUptiResult cuda_activity_start(unsigned domains, size_t buffer_bytes);
/* A CUDA context was created (kinds that need an initialized driver are enabled then). */
void cuda_activity_context_created(void);
/* Translate one activity record into syscope records (exposed for the unit test). */
void cuda_activity_translate(const CUpti_Activity *rec);
/* Process a completed buffer of `valid` bytes (exposed for the unit test). */
void cuda_activity_buffer(uint8_t *buffer, size_t valid);
/* The kernel names written so far forgotten (attach's detach: the next file needs them). */
void cuda_activity_forget_names(void);
/* The name and category of a region record into `buf` (`cap` bytes, a long name cut so
 * that both fit); sets r->name_len and r->cat_len, returns the bytes used. */
#define CUDA_REGION_TEXT_MAX 2048
uint32_t cuda_region_text(char *buf, size_t cap, const char *name, const char *category,
			  struct sc_rec_region *r);
/* The same with arguments after the category (sets r->nargs and r->args_len); arguments
 * that do not fit are left out. */
struct cuda_arg {
	char type; /* enum sc_arg_type */
	const char *name, *value;
};
uint32_t cuda_region_text_args(char *buf, size_t cap, const char *name, const char *category,
			       const struct cuda_arg *args, unsigned nargs,
			       struct sc_rec_region *r);
/* Driver calls made inside runtime calls are left out (driver_calls.c); set at start. */
void cuda_activity_driver_own(bool on);
/* The end of tracing: driver calls still held (driver_calls.c) are written. */
void cuda_activity_finish(void);
/* Allocations that carried the id of a call that had ended (not linked), and module globals. */
uint64_t cuda_activity_stale_links(void);
uint64_t cuda_activity_static_allocations(void);
/* Records CUPTI dropped, and records it could not time (left out). */
uint64_t cuda_activity_dropped(void);
uint64_t cuda_activity_untimed(void);
/* Records of a host thread CUPTI did not name (no API call seen for them): left out. */
uint64_t cuda_activity_unplaced(void);

/* Set by counters_range.c: the host-side time of a kernel CUPTI gives no timestamps (the
 * range profiler's kernel replay), from its launch; false if unknown. */
extern bool (*cuda_untimed_kernel_time)(uint32_t corr, uint64_t *start, uint64_t *end);

/* The host thread that made the call with this correlation id, 0 if unknown. */
int32_t cuda_corr_thread(uint32_t corr);
void cuda_corr_note_thread(uint32_t corr, int32_t tid);

#endif /* SYSCOPE_GPU_CUDA_ACTIVITY_H */
