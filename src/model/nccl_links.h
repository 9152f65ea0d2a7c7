/* SPDX-License-Identifier: MIT */
/*
 * nccl_links.c: which GPU operations carried each NCCL call (the profiler plugin's regions,
 * category nccl), for the flows of the trace. Fed while an image's records are read, worked
 * out at the first question.
 */
#ifndef SYSCOPE_MODEL_NCCL_LINKS_H
#define SYSCOPE_MODEL_NCCL_LINKS_H

#include <stddef.h>
#include <stdint.h>

#include "../store/format.h"

struct sc_image;
struct sc_nccl_links;

/* While reading: a region (begin or span) of thread `tid` with its text (name, category,
 * args), and a GPU operation. */
void sc_nccl_links_region(struct sc_image *img, int32_t tid, const struct sc_rec_region *r,
			  uint64_t end, const char *text);
void sc_nccl_links_op(struct sc_image *img, const struct sc_rec_gpu_op *op);
void sc_nccl_links_free(struct sc_nccl_links *l);

/* The links (numbers unique in the image, from 0) that start at the NCCL call region that
 * began at `start` on `tid`, and those that end at the GPU operations of correlation id
 * `corr`: how many, *ids set to them. */
size_t sc_nccl_call_links(struct sc_image *img, int32_t tid, uint64_t start, const uint32_t **ids);
size_t sc_nccl_op_links(struct sc_image *img, uint64_t corr, const uint32_t **ids);

#endif /* SYSCOPE_MODEL_NCCL_LINKS_H */
