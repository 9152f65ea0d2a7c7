/* SPDX-License-Identifier: MIT */
/*
 * Entry and exit stubs of patched functions (x86-64 System V). See patch.h.
 *
 * Both save every register a call may clobber (rax, rcx, rdx, rsi, rdi, r8-r11, xmm0-15),
 * not only the argument and return registers: compilers that see a callee's code keep
 * values in caller-saved registers across calls to it (GCC's -fipa-ra, on at -O2), so the
 * probe must leave the function exactly as a call to it left things.
 *
 * Entry: a trampoline did `push $id; call *entry_stub`, so the stack holds
 *   [rsp] return into the trampoline, [rsp+8] id, [rsp+16] the function's return address;
 * `ret $8` drops the id on the way back to the trampoline. A throttled function's calls
 * stop at the stub's first tests (the thread's table of counts, rt_patch_counted), are
 * counted there, and never reach the exit stub.
 *
 * Exit: the function's `ret` popped our address; rsp is one past the slot that held it.
 * rt_patch_exit gives the original return address, which goes back into that slot, and an
 * indirect jump through it goes back, so no register is used for the jump.
 * x87, the upper halves of ymm/zmm registers, zmm16-31 and the mask registers are not
 * saved: the C code of the handlers uses none of them (built without AVX, and legacy SSE
 * instructions keep the upper halves), and the recorder paths they reach zero and copy
 * without the C library's vectorized memset/memcpy (arch_zero/arch_copy in arch.h).
 * tests/programs/patch_vector_regs.c checks all of them across 600 000 patched calls.
 */
	.text

#include "../../arch/x86_64/save_clobbered.inc"

	.globl	rt_patch_entry_stub
	.hidden	rt_patch_entry_stub
	.type	rt_patch_entry_stub, @function
	.p2align 4
rt_patch_entry_stub:
	.cfi_startproc
	/* A throttled function is only counted: no shadow-stack frame, no clock (flags are dead
	 * at a function's entry; rax and rdx are saved). Its slot in this thread's table of
	 * counts (counted_calls.h; patch ids start 65536 slots, 524288 bytes, into it) is not 0
	 * once this thread has seen it throttled: one unlocked add there, the one line of data
	 * touched (no other CPU writes it). Otherwise rt_patch_counted[id] says whether it is
	 * throttled: rt_patch_count_slow then sets this thread's slot (or counts in that word
	 * when the thread can have no table); if not, the call is recorded. */
	pushq	%rax
	.cfi_adjust_cfa_offset 8
.Les_a:
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
.Les_b:
	movl	24(%rsp), %eax		/* id: above rdx, rax and the return into the trampoline */
	movq	rt_counted_here@gottpoff(%rip), %rdx
	movq	%fs:(%rdx), %rdx
	testq	%rdx, %rdx
	jz	1f
	cmpq	$0, 524288(%rdx,%rax,8)
	je	1f
	incq	524288(%rdx,%rax,8)
	.cfi_remember_state
	popq	%rdx
	.cfi_adjust_cfa_offset -8
.Les_c:
	popq	%rax
	.cfi_adjust_cfa_offset -8
.Les_d:
	ret	$8
1:	.cfi_restore_state
.Les_e:
	movq	rt_patch_counted(%rip), %rdx
	cmpq	$0, (%rdx,%rax,8)
	popq	%rdx
	.cfi_adjust_cfa_offset -8
.Les_f:
	popq	%rax
	.cfi_adjust_cfa_offset -8
.Les_g:
	jne	2f
.Les_h:
	FRAME_SAVING
	movl	16(%rbp), %edi		/* id */
	leaq	24(%rbp), %rsi		/* slot of the function's return address */
	call	rt_patch_enter
	FRAME_RESTORING
.Les_m1:
	ret	$8
2:
.Les_l2:
	FRAME_SAVING
	movl	16(%rbp), %edi		/* id */
	call	rt_patch_count_slow
	FRAME_RESTORING
.Les_m2:
	ret	$8
	.cfi_endproc
	.size	rt_patch_entry_stub, .-rt_patch_entry_stub
	/* Where the entry stub's code ends, for the sampler's unwinders (patch.h). */
	.globl	rt_patch_entry_stub_end
	.hidden	rt_patch_entry_stub_end
rt_patch_entry_stub_end:

	/* For the frame-pointer unwinder (patch.h, rt_patch_entry_stub_slot): where the return
	 * into the trampoline is at each point of the entry stub, as pairs (end of a stretch of
	 * code, offset from the stub; where the return is: that many bytes above rsp, or -1:
	 * above rbp, in the stub's own frame). FRAME_SAVING begins with push %rbp (1 byte) and
	 * mov %rsp, %rbp (3 bytes). Kept beside the code it describes. */
	.section .rodata
	.p2align 2
	.globl	rt_patch_entry_stub_slots
	.hidden	rt_patch_entry_stub_slots
rt_patch_entry_stub_slots:
	.short	.Les_a - rt_patch_entry_stub, 0
	.short	.Les_b - rt_patch_entry_stub, 8
	.short	.Les_c - rt_patch_entry_stub, 16
	.short	.Les_d - rt_patch_entry_stub, 8
	.short	.Les_e - rt_patch_entry_stub, 0
	.short	.Les_f - rt_patch_entry_stub, 16
	.short	.Les_g - rt_patch_entry_stub, 8
	.short	.Les_h + 1 - rt_patch_entry_stub, 0
	.short	.Les_h + 4 - rt_patch_entry_stub, 8
	.short	.Les_m1 - rt_patch_entry_stub, -1
	.short	.Les_l2 + 1 - rt_patch_entry_stub, 0
	.short	.Les_l2 + 4 - rt_patch_entry_stub, 8
	.short	.Les_m2 - rt_patch_entry_stub, -1
	.short	rt_patch_entry_stub_end - rt_patch_entry_stub, 0
	.short	0, 0
	.text

	.globl	rt_patch_exit_stub
	.hidden	rt_patch_exit_stub
	.type	rt_patch_exit_stub, @function
	.p2align 4
rt_patch_exit_stub:
	.cfi_startproc
	/* The caller's address is on the shadow stack only: unwinders stop here. */
	.cfi_undefined rip
	subq	$8, %rsp		/* back over the slot: the real address goes there */
	pushq	%rbp
	movq	%rsp, %rbp
	subq	$336, %rsp
	andq	$-16, %rsp
	SAVE_CLOBBERED
	leaq	16(%rbp), %rdi		/* rsp when the function returned */
	call	rt_patch_exit
	movq	%rax, 8(%rbp)
	RESTORE_CLOBBERED
	movq	%rbp, %rsp
	popq	%rbp
	/* Not `ret`: the return-stack predictor is one entry off here (the function's own ret
	 * came to us), so an indirect jump, which the branch predictor learns per call site,
	 * goes back. lea leaves the flags alone; the kernel never writes a signal frame into
	 * the 128 bytes below rsp, so the address just popped is still there to jump through. */
	leaq	8(%rsp), %rsp
	jmp	*-8(%rsp)
	.cfi_endproc
	.size	rt_patch_exit_stub, .-rt_patch_exit_stub

/* Coverage mode: the trampoline's call lands here instead of the entry stub; one locked
 * increment of the function's counter, nothing else (flags are dead at a function's entry,
 * rax and rdx are saved). */
	.globl	rt_patch_coverage_stub
	.hidden	rt_patch_coverage_stub
	.type	rt_patch_coverage_stub, @function
	.p2align 4
rt_patch_coverage_stub:
	.cfi_startproc
	pushq	%rax
	.cfi_adjust_cfa_offset 8
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	movl	24(%rsp), %eax		/* id: above rdx, rax and the return into the trampoline */
	movq	rt_patch_calls(%rip), %rdx
	lock incq (%rdx,%rax,8)
	popq	%rdx
	.cfi_adjust_cfa_offset -8
	popq	%rax
	.cfi_adjust_cfa_offset -8
	ret	$8
	.cfi_endproc
	.size	rt_patch_coverage_stub, .-rt_patch_coverage_stub

/* Loop probes (-l) sit inside functions, where every register and the flags may be live:
 * the trampoline stepped over the red zone and pushed the probe's id; all is saved, the
 * direction flag cleared for the C code, and restored. */
	.globl	rt_patch_loop_stub
	.hidden	rt_patch_loop_stub
	.type	rt_patch_loop_stub, @function
	.p2align 4
rt_patch_loop_stub:
	.cfi_startproc
	pushfq
	.cfi_adjust_cfa_offset 8
	cld
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -24
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	subq	$336, %rsp
	andq	$-16, %rsp
	SAVE_CLOBBERED
	movl	24(%rbp), %edi		/* id: above rbp, the flags and the return */
	call	rt_patch_loop
	RESTORE_CLOBBERED
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 16
	popfq
	.cfi_adjust_cfa_offset -8
	ret	$8
	.cfi_endproc
	.size	rt_patch_loop_stub, .-rt_patch_loop_stub

	.section .note.GNU-stack,"",@progbits
