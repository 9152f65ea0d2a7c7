/* SPDX-License-Identifier: MIT */
/*
 * The dynamic loader's _dl_debug_state jumps here (loader_hook_x86_64.c): the loader may
 * keep values in any register across that call (it knows the function is a bare ret), so
 * all are kept.
 */
	.text

#include "../arch/x86_64/save_clobbered.inc"

	.globl	rt_loader_stub
	.hidden	rt_loader_stub
	.type	rt_loader_stub, @function
	.p2align 4
rt_loader_stub:
	.cfi_startproc
	FRAME_SAVING
	call	rt_loader_event
	FRAME_RESTORING
	ret
	.cfi_endproc
	.size	rt_loader_stub, .-rt_loader_stub

	.section .note.GNU-stack,"",@progbits
