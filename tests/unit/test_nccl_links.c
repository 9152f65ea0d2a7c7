/* SPDX-License-Identifier: MIT */
/*
 * Which GPU operations carried each NCCL call (src/model/nccl_links.c), fed the records a
 * one-rank run makes, without a GPU: a copy launched inside its call; a group's kernel
 * whose driver launch was not traced, matched to the group's ncclKernelLaunch region and
 * so to both of its calls; kernels that belong to no call stay unlinked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/model.h"
#include "model/nccl_links.h"

#define TID 100

/* A region record with its text (name, category, args as "name=value" pairs, numbers). */
static void region(struct sc_image *img, int32_t tid, const char *name, const char *cat,
		   uint64_t start, uint64_t end, uint64_t corr, const char *const *args)
{
	char buf[512];
	struct sc_rec_region *r = (struct sc_rec_region *)buf;
	char *t = (char *)(r + 1);
	size_t n = 0;

	memset(buf, 0, sizeof(buf));
	r->ts = start;
	r->corr_id = corr;
	r->name_len = (uint32_t)strlen(name) + 1;
	r->cat_len = (uint32_t)strlen(cat) + 1;
	memcpy(t, name, r->name_len);
	memcpy(t + r->name_len, cat, r->cat_len);
	n = r->name_len + r->cat_len;
	for (; args && *args; args += 2) {
		size_t an = strlen(args[0]) + 1, av = strlen(args[1]) + 1;

		t[n] = SC_ARG_UINT;
		t[n + 1] = '\0';
		memcpy(t + n + 2, args[0], an);
		memcpy(t + n + 2 + an, args[1], av);
		n += 2 + an + av;
		r->args_len += (uint32_t)(2 + an + av);
		r->nargs++;
	}
	if (corr) /* as the model notes a host call's correlation id */
		sc_image_note_corr(img, corr, SC_CORR_HOST, tid);
	sc_nccl_links_region(img, tid, r, end, t);
}

static void op(struct sc_image *img, uint16_t kind, uint64_t corr, uint64_t start, uint32_t name_id)
{
	struct sc_rec_gpu_op o = {
		.kind = kind, .corr_id = corr, .start = start, .end = start + 50, .name_id = name_id
	};

	sc_nccl_links_op(img, &o);
}

static uint32_t one_link(struct sc_image *img, int32_t tid, uint64_t start)
{
	const uint32_t *ids = NULL;
	size_t n = sc_nccl_call_links(img, tid, start, &ids);

	CHECK(n == 1);
	return n == 1 ? ids[0] : UINT32_MAX;
}

int main(void)
{
	struct sc_image img;
	const uint32_t *ids = NULL;
	const char *const all_reduce[] = { "id", "5", "parent", "4", NULL };
	const char *const gather[] = { "id", "8", "parent", "7", NULL };
	const char *const broadcast[] = { "id", "9", "parent", "7", NULL };
	const char *const launch[] = { "id", "10", "parent", "7", NULL };
	uint32_t a, g, b;

	memset(&img, 0, sizeof(img));
	sc_hashmap_init(&img.names);
	*sc_hashmap_upsert(&img.names, 1, 0, NULL) =
		(uintptr_t) "_Z29ncclDevKernel_AllGather_RING_LLP24ncclDevKernelArgsStorage";
	*sc_hashmap_upsert(&img.names, 2, 0, NULL) = (uintptr_t) "_Z6stencilPf";

	/* One rank: ncclAllReduce copies inside the call (cudaMemcpyAsync, traced). */
	region(&img, TID, "ncclAllReduce", "nccl", 1000, 2000, 0, all_reduce);
	region(&img, TID, "cudaMemcpyAsync", "CUDA_RUNTIME_API", 1500, 0, 11, NULL);
	op(&img, SC_GPU_COPY, 11, 2500, 0);
	/* A group of two calls, launched at its end by a driver call not traced. */
	region(&img, TID, "ncclAllGather", "nccl", 3000, 3100, 0, gather);
	region(&img, TID, "ncclBroadcast", "nccl", 3200, 3300, 0, broadcast);
	region(&img, TID, "ncclKernelLaunch", "nccl_task", 3400, 3500, 0, launch);
	op(&img, SC_GPU_KERNEL, 20, 3600, 1);
	/* The program's own kernels: launched by a traced call outside NCCL's, or untraced. */
	region(&img, TID, "cudaLaunchKernel", "CUDA_RUNTIME_API", 5000, 0, 30, NULL);
	op(&img, SC_GPU_KERNEL, 30, 5100, 2);
	op(&img, SC_GPU_KERNEL, 31, 5200, 2);

	sc_image_corr_finish(&img); /* as sc_model_finish does after reading an image */
	a = one_link(&img, TID, 1000);
	CHECK(sc_nccl_op_links(&img, 11, &ids) == 1 && ids[0] == a);
	g = one_link(&img, TID, 3000);
	b = one_link(&img, TID, 3200);
	CHECK(g != b && a != g && a != b);
	CHECK(sc_nccl_op_links(&img, 20, &ids) == 2);
	CHECK((ids[0] == g && ids[1] == b) || (ids[0] == b && ids[1] == g));
	CHECK(sc_nccl_op_links(&img, 30, &ids) == 0);
	CHECK(sc_nccl_op_links(&img, 31, &ids) == 0);
	CHECK(sc_nccl_call_links(&img, TID, 1001, &ids) == 0); /* no call began there */
	CHECK(sc_nccl_call_links(&img, TID + 1, 1000, &ids) == 0);

	sc_nccl_links_free(img.nccl_links);
	sc_image_corr_free(&img);
	sc_hashmap_free(&img.names);
	return check_report("test_nccl_links");
}
