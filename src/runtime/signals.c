/* SPDX-License-Identifier: MIT */
/*
 * Signals the runtime uses, kept out of the program's way.
 *
 * Sampler signals (SIGSTKFLT and a real-time signal near SIGRTMAX by default, or any the
 * user chose) are claimed: syscope's handler stays installed, and the program's sigaction()/signal() calls on them are emulated: the
 * program sees and replaces only its own handler, which syscope's handler calls for any
 * signal that did not come from a syscope timer. sigprocmask()/pthread_sigmask() never block
 * them, so a program that blocks everything is still sampled (and its signal queue cannot
 * overflow: each sampler keeps at most one signal pending).
 *
 * Fatal-signal recorders (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) are installed only where
 * the program left the default action, and are invisible: sigaction() reports the default,
 * and the program's own handler simply replaces ours (until it puts the default back: then
 * ours returns). On a crash we record the crashing stack and the signal, restore the default
 * action and let the signal take its course.
 * SIGSEGV and SIGBUS are the exception: a fault in a Python walk must be recovered whatever
 * the program installed (pytest enables faulthandler), so there ours stays, with the
 * program's flags and mask, and passes every other fault on to the program's handler.
 */
#include "rt.h"

#include <errno.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "func_table.h"
#include "python/python.h"
#include "sources/source.h"

struct sig_state {
	rt_sig_handler ours;	  /* non-NULL: a sampler signal owned by syscope */
	bool fatal_hidden;	  /* our crash recorder is installed, the program sees SIG_DFL */
	bool fatal_kept;	  /* ... and stays when the program installs its own (forwarded) */
	bool program_set;	  /* `program` holds what the program installed */
	rt_sig_handler hidden;	  /* the hidden recorder: back when the program restores SIG_DFL */
	struct sigaction program; /* the program's view of this signal */
};

static struct sig_state sigs[_NSIG];
static sigset_t sampler_sigs;

atomic_int rt_guard_blocking;
RT_TLS volatile unsigned rt_sampler_interrupts, rt_program_interrupts;

void rt_signals_sampler_set(sigset_t *set)
{
	*set = sampler_sigs;
}

static bool valid_sig(int sig)
{
	return sig > 0 && sig < _NSIG;
}

/*
 * Install our handler of sampler signal `sig`. It blocks every signal but those a fault
 * raises, and runs on
 * the signal stack where the program's handler of that signal asked to: a runtime that does
 * (Go: all its handlers, on every signal) runs code on stacks too small for a signal handler
 * (a goroutine's few KiB, no guard page below), where a sample's unwind overran into the
 * memory below, and its handler, which ours calls for its own signals, throws when it finds
 * itself off its signal stack. Others keep their samples on the thread's stack: a signal
 * stack is often small (8 KiB in Rust programs), and an unwind needs a few KiB of it.
 * The program's signals wait the few microseconds of a sample: one arriving during it ran
 * its handler inside ours, with the sampler signals blocked, so none of that handler's work
 * was sampled (a SIGTERM handler's 0.2 s of cleanup, 60 samples, had 0 in 1 run of 3 on a
 * loaded machine). A program's handler ours calls gets the mask the kernel would give it
 * (call_program_handler).
 */
static int install_ours(int sig)
{
	/* SIGABRT stays blocked: mostly sent (kill -ABRT), and abort() unblocks it itself. */
	static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS };
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	act.sa_sigaction = sigs[sig].ours;
	act.sa_flags = SA_SIGINFO | SA_RESTART;
	if (sigs[sig].program_set && (sigs[sig].program.sa_flags & SA_ONSTACK))
		act.sa_flags |= SA_ONSTACK;
	sigfillset(&act.sa_mask);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&act.sa_mask, faults[i]); /* blocked, a fault would kill at once */
	return RT_REAL(sigaction)(sig, &act, NULL);
}

int rt_signal_claim(int sig, rt_sig_handler handler)
{
	struct sig_state was;
	struct sigaction prev;

	if (valid_sig(sig) && sigs[sig].ours == handler)
		return 0; /* already ours (a second attach) */
	if (!valid_sig(sig) || RT_REAL(sigaction)(sig, NULL, &prev))
		return valid_sig(sig) ? -errno : -EINVAL;
	was = sigs[sig];
	/* Set either way: a release (detach) leaves the last attach's view behind. */
	sigs[sig].program = prev;
	sigs[sig].program_set = prev.sa_handler != SIG_DFL;
	sigs[sig].ours = handler;
	sigaddset(&sampler_sigs, sig);
	if (install_ours(sig)) {
		int err = -errno;

		sigs[sig] = was;
		sigdelset(&sampler_sigs, sig);
		return err;
	}
	/* Keep sibling sampler handlers' masks up to date: each blocks all sampler signals. */
	for (int s = 1; s < _NSIG; s++)
		if (sigs[s].ours && s != sig)
			install_ours(s);
	return 0;
}

void rt_signals_release(void)
{
	for (int s = 1; s < _NSIG; s++) {
		struct sigaction dfl;

		if (!sigs[s].ours)
			continue;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		RT_REAL(sigaction)(s, sigs[s].program_set ? &sigs[s].program : &dfl, NULL);
		/* What the program installed stays: a handler of ours entered just before, for
		 * the program's own signal (raise), still forwards it there; cleared, it would
		 * take the default action and end the program (SIGSTKFLT at a detach). */
		sigs[s].ours = NULL;
		sigs[s].fatal_hidden = sigs[s].fatal_kept = false;
		sigs[s].hidden = NULL;
	}
	sigemptyset(&sampler_sigs);
}

/*
 * syscope attach's detach: the hidden recorders of signals the program left at their default
 * (lifecycle.c's ending signals, the crash recorders, and those the program gave the default
 * back to while attached) give the default back, so the process has the dispositions it
 * would have without us. A handler the program installed meanwhile (through sigaction() or
 * signal(), which attach_wrap.c puts this file's wrappers in front of) has replaced ours and
 * stays. A handler of ours the program saved and puts back after the detach is dormant: it
 * takes the default action, as if it were not there.
 */
void rt_signals_unhide(void)
{
	for (int s = 1; s < _NSIG; s++) {
		struct sigaction cur, dfl;

		if (!sigs[s].hidden || sigs[s].ours)
			continue;
		if (!RT_REAL(sigaction)(s, NULL, &cur) && (cur.sa_flags & SA_SIGINFO) &&
		    cur.sa_sigaction == sigs[s].hidden) {
			memset(&dfl, 0, sizeof(dfl));
			dfl.sa_handler = SIG_DFL;
			RT_REAL(sigaction)(s, &dfl, NULL);
		}
		sigs[s].hidden = NULL;
		sigs[s].fatal_hidden = sigs[s].fatal_kept = false;
	}
}

static void default_action(int sig)
{
	struct sigaction dfl;
	sigset_t unblock;

	/* Signals whose default is to do nothing. */
	if (sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH)
		return;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigs[sig].ours = NULL;
	RT_REAL(sigaction)(sig, &dfl, NULL);
	sigemptyset(&unblock);
	sigaddset(&unblock, sig);
	RT_REAL(pthread_sigmask)(SIG_UNBLOCK, &unblock, NULL);
	raise(sig);
}

bool rt_signal_program_handles(int sig)
{
	return valid_sig(sig) && sigs[sig].program_set && sigs[sig].program.sa_handler != SIG_DFL &&
	       sigs[sig].program.sa_handler != SIG_IGN;
}

/* The mask of the code a handler of ours interrupted, the sampler signals still blocked. */
static void interrupted_mask(void *uc, sigset_t *set)
{
	*set = ((ucontext_t *)uc)->uc_sigmask;
	sigorset(set, set, &sampler_sigs);
}

/*
 * The program's handler of a sampler signal, called from ours, with the mask the kernel
 * would give it: the interrupted code's and its sa_mask; the sampler signals (this one among
 * them, whatever SA_NODEFER says) stay blocked, as in ours, whose frame is below.
 */
static void call_program_handler(const struct sigaction *act, int sig, siginfo_t *si, void *uc)
{
	sigset_t old, set;
	bool masked;

	interrupted_mask(uc, &set);
	sigorset(&set, &set, &act->sa_mask);
	masked = !RT_REAL(pthread_sigmask)(SIG_SETMASK, &set, &old);
	if (act->sa_flags & SA_SIGINFO) {
		if (act->sa_sigaction)
			act->sa_sigaction(sig, si, uc);
	} else {
		act->sa_handler(sig);
	}
	if (masked)
		rt_real.pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void rt_signals_program_mask(void *uc, sigset_t *old)
{
	sigset_t set;

	interrupted_mask(uc, &set);
	RT_REAL(pthread_sigmask)(SIG_SETMASK, &set, old);
}

bool rt_signal_unused(int sig)
{
	struct sigaction cur;

	return valid_sig(sig) && !sigs[sig].ours && !RT_REAL(sigaction)(sig, NULL, &cur) &&
	       !(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL;
}

void rt_signal_forward(int sig, siginfo_t *si, void *uc)
{
	struct sig_state *st = &sigs[sig];
	struct sigaction act;

	rt_program_interrupts++;
	if (!st->program_set) {
		default_action(sig); /* the program never handled it: as if we were not there */
		return;
	}
	act = st->program;
	if (!(act.sa_flags & SA_SIGINFO) && act.sa_handler == SIG_DFL) {
		default_action(sig);
		return;
	}
	if (!(act.sa_flags & SA_SIGINFO) && act.sa_handler == SIG_IGN)
		return;
	if (act.sa_flags & SA_RESETHAND) { /* as the kernel would: one delivery, then default */
		memset(&st->program, 0, sizeof(st->program));
		st->program.sa_handler = SIG_DFL;
	}
	call_program_handler(&act, sig, si, uc);
}

static void on_fatal_signal(int sig, siginfo_t *si, void *uc);

/* The program installs `act` on SIGSEGV/SIGBUS: ours stays, delivered as the program's
 * would be (its mask, SA_ONSTACK, SA_NODEFER), and calls it (forward_fault). */
static int keep_fatal_recorder(int sig, const struct sigaction *act)
{
	struct sigaction ours;

	memset(&ours, 0, sizeof(ours));
	ours.sa_sigaction = on_fatal_signal;
	ours.sa_flags = SA_SIGINFO | (act->sa_flags & (SA_ONSTACK | SA_NODEFER | SA_RESTART));
	ours.sa_mask = act->sa_mask;
	if (RT_REAL(sigaction)(sig, &ours, NULL))
		return -1;
	sigs[sig].program = *act;
	sigs[sig].program_set = true;
	return 0;
}

static bool is_default(const struct sigaction *act)
{
	return !(act->sa_flags & SA_SIGINFO) && act->sa_handler == SIG_DFL;
}

static bool install_hidden(int sig, rt_sig_handler handler)
{
	struct sigaction act;

	memset(&act, 0, sizeof(act));
	act.sa_sigaction = handler;
	act.sa_flags = SA_SIGINFO;
	sigemptyset(&act.sa_mask);
	sigs[sig].program_set = false;
	sigs[sig].fatal_hidden = !rt_real.sigaction(sig, &act, NULL);
	return sigs[sig].fatal_hidden;
}

/*
 * A program that handled the signal gives the default back, often to raise it again and
 * die of it once it has cleaned up (xz, gzip, sort on Ctrl-C): the hidden recorder returns,
 * so that the end and the last records are kept as when the program never handled it.
 */
static int restore_default(int sig, struct sigaction *old)
{
	if (old && RT_REAL(sigaction)(sig, NULL, old))
		return -1;
	if (!install_hidden(sig, sigs[sig].hidden)) {
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		return RT_REAL(sigaction)(sig, &dfl, NULL);
	}
	return 0;
}

/* sigaction() as the program sees it; signal() reaches it by this name, not the exported
 * one, which a call from here would bind to the C library's when libsyscope.so was loaded
 * by syscope attach's dlopen (not first in the global scope). */
static int program_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (valid_sig(sig) && !sigs[sig].ours && !sigs[sig].fatal_hidden && sigs[sig].hidden &&
	    act && is_default(act))
		return restore_default(sig, old);
	if (valid_sig(sig) && (sigs[sig].ours || sigs[sig].fatal_hidden)) {
		struct sig_state *st = &sigs[sig];
		bool onstack = st->program_set && (st->program.sa_flags & SA_ONSTACK);

		if (old) {
			if (st->program_set)
				*old = st->program;
			else {
				memset(old, 0, sizeof(*old));
				old->sa_handler = SIG_DFL;
			}
		}
		if (!act)
			return 0;
		if (st->fatal_kept)
			return keep_fatal_recorder(sig, act);
		if (st->fatal_hidden) {
			/* The default it asks for (bash does, before raising the signal again) is
			 * what our hidden recorder ends with: it stays, put back in case a handler
			 * replaced it past this wrapper (attached: before the GOT was rewritten). */
			if (is_default(act))
				return st->hidden ? restore_default(sig, NULL) : 0;
			/* The program takes the signal over; our recorder steps aside. */
			st->fatal_hidden = false;
			st->program_set = false;
			return RT_REAL(sigaction)(sig, act, NULL);
		}
		st->program = *act;
		st->program_set = true;
		if (onstack != !!(act->sa_flags & SA_ONSTACK))
			install_ours(sig); /* where the program's handler asks to run */
		if (rt_signal_program_handles(sig))
			rt_sampling_signal_taken(sig);
		return 0;
	}
	return RT_REAL(sigaction)(sig, act, old);
}

RT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return program_sigaction(sig, act, old);
}

RT_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction act, old;

	if (!valid_sig(sig) || !(sigs[sig].ours || sigs[sig].fatal_hidden || sigs[sig].hidden))
		return RT_REAL(signal)(sig, handler);
	/* glibc's signal() has BSD semantics: restart system calls, keep the handler. */
	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	act.sa_flags = SA_RESTART;
	sigemptyset(&act.sa_mask);
	if (program_sigaction(sig, &act, &old))
		return SIG_ERR;
	return old.sa_handler;
}

/* The mask the program asked for, without our sampler signals in it. */
static const sigset_t *filter_mask(int how, const sigset_t *set, sigset_t *copy)
{
	if (!set || how == SIG_UNBLOCK || !rt_active())
		return set;
	*copy = *set;
	for (int s = 1; s < _NSIG; s++)
		if (sigs[s].ours)
			sigdelset(copy, s);
	return copy;
}

/*
 * Inside our sampling handler, mask changes are skipped. libunwind brackets every lookup of
 * unwind tables with a pair of sigprocmask calls that block all signals and restore them;
 * those two system calls per frame were most of a sample's cost. In the handler the
 * sampler signals are blocked already, and the pair is balanced within the unwind, so
 * skipping both is safe: `old` gets the empty set, which the matching restore ignores.
 */
static bool skip_in_handler(sigset_t *old)
{
	if (!rt_self.in_sampler)
		return false;
	if (old)
		sigemptyset(old);
	return true;
}

RT_EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;

	if (skip_in_handler(old))
		return 0;
	return RT_REAL(sigprocmask)(how, filter_mask(how, set, &copy), old);
}

RT_EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;

	if (skip_in_handler(old))
		return 0;
	return RT_REAL(pthread_sigmask)(how, filter_mask(how, set, &copy), old);
}

/* The fault being handled by the program's handler: where its crash happened if that
 * handler ends the program (faulthandler re-raises with the default restored). */
static RT_TLS void *forwarded_uc;

/* A fault that is the program's, on a signal it handles: to its handler as the kernel
 * would deliver it (the mask and flags are ours already, keep_fatal_recorder). True when
 * it was handled or ignored; false: the default action, which the caller takes. */
static bool forward_fault(int sig, siginfo_t *si, void *uc)
{
	struct sig_state *st = &sigs[sig];
	struct sigaction act = st->program;

	if (!st->fatal_kept || !st->program_set)
		return false;
	if (!(act.sa_flags & SA_SIGINFO) && act.sa_handler == SIG_DFL)
		return false;
	if (!(act.sa_flags & SA_SIGINFO) && act.sa_handler == SIG_IGN)
		return si->si_code <= 0;   /* a fault cannot be ignored: the kernel kills */
	if (act.sa_flags & SA_RESETHAND) { /* one delivery, then the default */
		memset(&st->program, 0, sizeof(st->program));
		st->program.sa_handler = SIG_DFL;
	}
	rt_program_interrupts++;
	forwarded_uc = uc;
	if (act.sa_flags & SA_SIGINFO)
		act.sa_sigaction(sig, si, uc);
	else
		act.sa_handler(sig);
	forwarded_uc = NULL;
	return true;
}

static void on_fatal_signal(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	struct sigaction dfl;

	rt_py_recover_fault(sig); /* returns unless a Python walk faulted */
	if (forward_fault(sig, si, uc)) {
		errno = saved_errno;
		return;
	}
	/* Attached, a thread registers at its first sample: one that crashes before it had
	 * one (it waited in a call until then) registers now, so that the crash is recorded. */
	if (rt_active() && rt_self.state == RT_THREAD_UNKNOWN && atomic_load(&rt_attach_on))
		rt_thread_self();
	if (rt_active() && rt_self.state == RT_THREAD_ACTIVE) {
		rt_sampling_record_crash(forwarded_uc ? forwarded_uc : uc);
		rt_func_end_image(); /* the calls it dies in */
		rt_set_end(SC_END_SIGNAL, sig);
	}
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigs[sig].fatal_hidden = false;
	sigs[sig].fatal_kept = false;
	sigs[sig].program_set = false;
	RT_REAL(sigaction)(sig, &dfl, NULL);
	/* A fault re-executes the instruction and dies of the default action; a signal sent
	 * by kill() or raise() must be sent again (it is blocked until we return). */
	if (si->si_code <= 0)
		raise(sig);
	errno = saved_errno;
}

void rt_signals_install_fatal(void)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		if (rt_signal_hide_on_default(fatal[i], on_fatal_signal))
			sigs[fatal[i]].fatal_kept = fatal[i] == SIGSEGV || fatal[i] == SIGBUS;
}

/*
 * Hook for lifecycle.c: put `handler` on `sig` where the program left the default action,
 * hidden exactly as the crash recorders above are (the program sees SIG_DFL, and its own
 * sigaction() replaces ours). Not for sampler signals. Where the program has a handler (or
 * ignores the signal) already, as a process syscope attach comes to often has, ours is only
 * kept ready: it is installed when the program gives the default back (restore_default), to
 * raise the signal again after its cleanup (xz, gzip). False when it was not installed now.
 */
bool rt_signal_hide_on_default(int sig, rt_sig_handler handler)
{
	struct sigaction cur;

	if (!valid_sig(sig) || sigs[sig].ours || RT_REAL(sigaction)(sig, NULL, &cur))
		return false;
	if (!is_default(&cur)) {
		sigs[sig].hidden = handler;
		return false;
	}
	if (!install_hidden(sig, handler))
		return false;
	sigs[sig].hidden = handler;
	return true;
}
