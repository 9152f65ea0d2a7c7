/* SPDX-License-Identifier: MIT */
/*
 * The C stack under the PEP 523 tracer. CPython 3.11+ runs a Python call made by Python
 * code in the same C frame of its evaluator; with a frame evaluator installed every call
 * is a C call again (trace.c), so a recursion the plain interpreter allows (a raised
 * sys.setrecursionlimit, depth 50 000) overflows the thread's C stack and the program
 * crashes. Before each traced frame the tracer asks whether the stack is nearly used up;
 * then the frame starts with a RecursionError instead (the evaluator run with throwflag
 * unwinds it as it unwinds a generator's throw), and a note says so once.
 */
#include "capi.h"

#include "../sources/source.h"

/* Left for what runs after the error: except blocks, tracebacks, C code they call. */
#define STACK_RESERVE (256u * 1024u)

static atomic_int noted;

static void note_once(void)
{
	if (atomic_exchange(&noted, 1))
		return;
	rt_note(SC_NOTE_WARN,
		"Python tracing: a recursion nearly used up a thread's C stack (with the PEP "
		"523 tracer each Python call is a C call); RecursionError raised there instead "
		"of a crash");
}

bool rt_py_stack_exhausted(void)
{
	char here;
	uintptr_t sp = (uintptr_t)&here, lo = rt_self.stack_lo;

	if (!lo || sp < lo || sp >= rt_self.stack_hi || sp - lo >= STACK_RESERVE)
		return false; /* bounds unknown (or not this stack): no guard */
	if (!rt_capi.err_set_string || !rt_capi.exc_recursion_error)
		return false;
	rt_capi.err_set_string(*rt_capi.exc_recursion_error,
			       "maximum recursion depth exceeded (the C stack, under syscope "
			       "python's tracer)");
	note_once();
	return true;
}
