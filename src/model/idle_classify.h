/* SPDX-License-Identifier: MIT */
#ifndef SYSCOPE_MODEL_IDLE_CLASSIFY_H
#define SYSCOPE_MODEL_IDLE_CLASSIFY_H

#include "gpu_idle.h"

/* A sample's cause (enum sc_idle_cause) and the frame to name it by (interned). */
struct sc_idle_class {
	uint8_t cause;
	const char *name;
};

struct sc_idle_classifier {
	struct sc_profile_set *set;
	VEC(struct sc_idle_class) by_stack; /* per stack of the model; name NULL: not yet */
};

/* The class of the model's stack `stack` (its path is made once). */
struct sc_idle_class sc_idle_classify(struct sc_idle_classifier *k, uint32_t stack);
void sc_idle_classifier_free(struct sc_idle_classifier *k);

#endif
