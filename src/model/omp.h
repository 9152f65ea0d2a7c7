/* SPDX-License-Identifier: MIT */
/* OpenMP constructs written compactly (SC_REC_OMP_BEGIN, SC_REC_OMP_REGION) as the regions they
 * stand for (omp.c). */
#ifndef SYSCOPE_MODEL_OMP_H
#define SYSCOPE_MODEL_OMP_H

#include <stdint.h>

#include "../common/hashmap.h"
#include "../common/vec.h"
#include "../store/format.h"
#include "timeline.h"

/* The argument texts made for one replay, shared by the regions that have the same (a
 * region's text must live while it is open; few distinct values repeat many times). */
struct sc_omp_texts {
	struct sc_hashmap by_hash; /* hash of the text -> index in `texts` + 1 */
	VEC(char *) texts;	   /* each: u32 length, then the text */
};

void sc_omp_texts_init(struct sc_omp_texts *t);
void sc_omp_texts_free(struct sc_omp_texts *t);

/* `ev` as the region of `rec` (`size` bytes): name, category "openmp", arguments. False when
 * the record's arguments do not fit its size. */
bool sc_omp_region(struct sc_region_ev *ev, const struct sc_rec_omp_begin *rec, uint32_t size,
		   struct sc_omp_texts *texts);
/* The same for an OMP_REGION record; `ev->end` is its end, 0 when it has none yet. */
bool sc_omp_whole_region(struct sc_region_ev *ev, const struct sc_rec_omp_region *rec,
			 uint32_t size, struct sc_omp_texts *texts);
/* The implicit task an OMP_REGION of SC_OMP_PARALLEL_TEAM holds (format.h) into `task`, with
 * the begin and end of `region` (the record's, from sc_omp_whole_region); false when it holds
 * none. */
bool sc_omp_held_task(struct sc_region_ev *task, const struct sc_region_ev *region,
		      const struct sc_rec_omp_region *rec, uint32_t size,
		      struct sc_omp_texts *texts);

#endif /* SYSCOPE_MODEL_OMP_H */
