/* SPDX-License-Identifier: MIT */
#ifndef SYSCOPE_CMD_WHY_IDLE_H
#define SYSCOPE_CMD_WHY_IDLE_H

#include <stdbool.h>
#include <stdint.h>

/* `syscope summary --why-idle INPUT...`: print why each GPU was idle, as text or JSON (`top`
 * stacks per cause). Returns the exit code. */
int sc_why_idle(char *const *inputs, int n, bool json, unsigned top, uint64_t threshold_ns);

#endif
