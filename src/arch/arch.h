/* SPDX-License-Identifier: MIT */
#ifndef SYSCOPE_ARCH_H
#define SYSCOPE_ARCH_H
#if defined(__x86_64__)
#include "x86_64/arch.h"
#else
#include "generic/arch.h"
#endif
#endif
