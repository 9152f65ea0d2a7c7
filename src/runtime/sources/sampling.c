/* SPDX-License-Identifier: MIT */
/*
 * Call-stack sampling: per-thread timers that interrupt the thread, whose signal handler
 * unwinds the interrupted stack into a SAMPLE record.
 *
 * CPU time: a perf_event task-clock counter per thread that signals its own thread on
 * overflow (F_SETSIG + F_SETOWN_EX). It delivers the requested rate; POSIX CPU-time timers
 * (the fallback when perf_event_open is refused) fire only on scheduler ticks, 250 Hz on our
 * machines whatever is asked. Overflow signals must never pile up: when the kernel cannot
 * queue another one it sends SIGIO instead, which kills the program. With a standard signal
 * (the default, SIGSTKFLT) overflows coalesce into one pending signal, so the counter runs
 * freely; with a real-time signal (which would queue) the counter is re-armed for one
 * overflow at a time (PERF_EVENT_IOC_REFRESH), one more system call per sample.
 *
 * Wall time: a POSIX CLOCK_MONOTONIC timer per thread (SIGEV_THREAD_ID). It interrupts
 * blocked threads too, so wrap_block.c keeps the sampler signals blocked inside sleeping
 * calls, which then return as they would have without us; the pending sample lands when the
 * call returns, weighted by the time it covered.
 *
 * Event overflow (--sample-overflow EVENT PERIOD): another perf event per thread, counting
 * EVENT with that sample period, on the CPU-time sampler's signal; the handler tells the two
 * apart by the descriptor. Each of its samples stands for PERIOD events.
 *
 * Each sample's weight is computed by the reader from consecutive timestamps (wall) or
 * thread CPU times (CPU), so a slower delivered rate does not skew the profile.
 */
#include "source.h"

#include "../causal/causal.h"
#include "../python/python.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#define COOKIE_CPU 0x5c0001
#define COOKIE_WALL 0x5c0002
#define MAX_TID_FILTER SC_ID_LIST_MAX_TIDS

static struct {
	bool cpu_on, wall_on, overflow_on;
	struct perf_event_attr overflow_attr; /* with its sample period */
	int cpu_sig, wall_sig;
	int cpu_timer_choice; /* 0 auto, 1 perf, 2 posix */
	uint64_t period_ns;
	uint64_t start_ns, end_ns; /* sampling window; end 0 = open-ended */
	int max_depth;
	bool tid_filter;
	unsigned long tids[MAX_TID_FILTER / (8 * sizeof(unsigned long))];
	atomic_int perf_failed_noted, posix_used;
	atomic_int perf_user_only; /* kernel-mode counting was refused: don't ask again */
	atomic_int user_only_noted;
	atomic_int moved_sig; /* 0, or the real-time signal the CPU samplers moved to */
} sampler;

/* The signal this thread's CPU samplers were armed with (0: none yet). */
static RT_TLS int thread_cpu_sig;

/* The signal a CPU sampler armed now uses, and whether that signal queues (then perf events
 * are re-armed one overflow at a time, so that they cannot fill the signal queue). */
static int cpu_signal(void)
{
	int moved = atomic_load_explicit(&sampler.moved_sig, memory_order_relaxed);

	return moved ? moved : sampler.cpu_sig;
}

static bool thread_refresh(void)
{
	return (thread_cpu_sig ? thread_cpu_sig : cpu_signal()) >= SIGRTMIN;
}

static int resolve_signal(long spec)
{
	return spec <= 0 ? SIGRTMAX + (int)spec : (int)spec;
}

static bool thread_selected(const struct rt_thread *t)
{
	const unsigned bits = 8 * sizeof(unsigned long);

	if (!sampler.tid_filter)
		return true;
	if (t->index >= MAX_TID_FILTER)
		return false;
	return sampler.tids[t->index / bits] & (1ul << (t->index % bits));
}

/* A thread's sampler of `kind`, armed (error 0) or not; its time starts after any delay. */
static void record_sampler(uint16_t kind, uint16_t mechanism, int error)
{
	uint64_t now = rt_now_ns();
	struct sc_rec_sampler r = {
		.ts = now > sampler.start_ns ? now : sampler.start_ns,
		.period_ns = kind == SC_SAMPLE_OVERFLOW ? sampler.overflow_attr.sample_period
							: sampler.period_ns,
		.kind = kind,
		.mechanism = mechanism,
		.error = error,
	};

	rt_record(SC_REC_SAMPLER, error ? 0 : SC_SAMPLER_STARTS, &r.ts, sizeof(r) - sizeof(r.hdr),
		  NULL, 0);
}

/* Write one SAMPLE record: the native stack from `uc`, then `py_size` bytes of Python part
 * from `py` (none when 0). */
static bool write_sample(struct rt_thread *t, uint16_t kind, void *uc, uint64_t now, uint64_t cpu,
			 const struct rt_py_sample *py, uint32_t py_size)
{
	uint32_t max = (uint32_t)(sizeof(struct sc_rec_sample) + (size_t)sampler.max_depth * 8);
	struct sc_rec_sample *r = rt_reserve(max + py_size);
	uint16_t flags = 0;
	uint32_t size;
	int n;

	if (!r)
		return false;
	n = rt_unwind(uc, t, r->frames, sampler.max_depth, &flags);
	if (atomic_load_explicit(&rt_causal.on, memory_order_relaxed))
		rt_causal_stack(r->frames, n); /* which unit of the causal scope it is in */
	r->ts = now;
	r->cpu_ns = cpu;
	r->kind = kind;
	r->nframes = (uint16_t)n;
	r->reserved = 0;
	if (py_size) {
		arch_copy(&r->frames[n], py, py_size);
		flags |= SC_SAMPLE_PYTHON;
	}
	size = sc_record_align((uint32_t)(sizeof(*r) + (size_t)n * 8 + py_size));
	size = rt_shrink_last(r, max + py_size, size);
	rt_commit(r, SC_REC_SAMPLE, flags, size);
	return true;
}

/* The sample of a thread that may run Python. Its frames are read before the record is
 * reserved (their code objects' first PY_CODE records are written then), into a 2 KiB
 * buffer on the stack: kept out of record_sample so that the handler of a program that is
 * not Python (a coroutine on a small stack) does not carry it. */
static __attribute__((noinline)) bool write_python_sample(struct rt_thread *t, uint16_t kind,
							  void *uc, uint64_t now, uint64_t cpu)
{
	struct rt_py_sample py;
	uint32_t py_size = rt_py_sample(&py);

	return write_sample(t, kind, uc, now, cpu, &py, py_size);
}

/* Record one sample; returns the thread CPU time at its start (0 when nothing recorded). */
static uint64_t record_sample(struct rt_thread *t, uint16_t kind, void *uc, uint64_t now)
{
	uint64_t cpu = rt_thread_cpu_ns();
	bool done;

	t->sample_pc = arch_uc_pc(uc); /* modules.c: is the loader's lock changing hands? */
	rt_modules_check();	       /* a sample in a new library needs its load record first */
	if (__builtin_expect(rt_py_sampling_on(), 0) && kind != SC_SAMPLE_CRASH)
		done = write_python_sample(t, kind, uc, now, cpu);
	else
		done = write_sample(t, kind, uc, now, cpu, NULL, 0);
	return done ? cpu : 0;
}

void rt_sampling_record_crash(void *uc)
{
	struct rt_thread *t = rt_thread_self();

	if (t && sampler.max_depth) {
		t->in_sampler = 1;
		record_sample(t, SC_SAMPLE_CRASH, uc, rt_now_ns());
		t->in_sampler = 0;
	}
}

static void disarm_posix(timer_t timer)
{
	struct itimerspec off = { 0 };

	timer_settime(timer, 0, &off, NULL);
}

static struct itimerspec interval(uint64_t ns)
{
	struct itimerspec its;

	its.it_interval.tv_sec = (time_t)(ns / 1000000000ull);
	its.it_interval.tv_nsec = (long)(ns % 1000000000ull);
	its.it_value = its.it_interval;
	return its;
}

/* With a user-only task clock (arm_kernel_time_timer), a perf sample restarts the
 * kernel-time timer's period. */
static void push_kernel_time_timer(struct rt_thread *t)
{
	struct itimerspec its = interval(t->period_ns[0]);

	timer_settime(t->cpu_timer, 0, &its, NULL);
}

/*
 * A sampler must never starve the program: when taking a sample costs more than a quarter
 * of the period (very high rates, slow unwinds, virtual machines where signals are costly),
 * the period grows until it does not, and shrinks back towards the requested one when
 * samples get cheaper. The cost is a moving average, so one slow sample (a cold unwind
 * cache, a page fault on a fresh chunk) changes nothing. The reader sees the rate actually
 * delivered; the thread's last SAMPLER record says what period it ended with.
 */
#define THROTTLE_SHARE 4
#define THROTTLE_MAX_PERIOD 1000000000ull

static void throttle(struct rt_thread *t, uint16_t kind, bool perf, uint64_t cost)
{
	int slot = kind == SC_SAMPLE_REALTIME;
	uint64_t p = t->period_ns[slot], want;

	t->sample_cost_ns[slot] =
		t->sample_cost_ns[slot] ? (t->sample_cost_ns[slot] * 7 + cost) / 8 : cost;
	want = t->sample_cost_ns[slot] * THROTTLE_SHARE;
	if (want < sampler.period_ns)
		want = sampler.period_ns;
	if (want > THROTTLE_MAX_PERIOD)
		want = THROTTLE_MAX_PERIOD;
	if (!p || (want <= 2 * p && 2 * want >= p))
		return; /* within a factor of two of where it should be */
	if (perf) {
		if (ioctl(t->perf_fd, PERF_EVENT_IOC_PERIOD, &want))
			return;
	} else {
		struct itimerspec its = interval(want);
		timer_t timer = slot ? t->wall_timer : t->cpu_timer;

		if ((slot ? !t->has_wall_timer : !t->has_cpu_timer) ||
		    timer_settime(timer, 0, &its, NULL))
			return;
	}
	t->period_ns[slot] = want;
	t->throttled++;
}

/* The thread's last closed perf event, whose overflow may still be pending. */
static RT_TLS int retired_perf_fd = -1;

static void move_cpu_samplers(struct rt_thread *t);
static void adopt_attached(struct rt_thread *t, int sig, int fd);

/*
 * Sample handlers past their check that recording goes on, on any thread: the end of an
 * image (an exec, the process's end) stops new ones (rt_proc.paused or stopping), then waits
 * for these (rt_sampling_quiesce) before its last flush. A sample committed after that flush
 * never reaches the file and was counted lost as a failed write (an attached process that
 * execs itself, its exec thread preempted between the flush and the count). A counter and a
 * full fence each side (Dekker): a handler sees the pause, or the end sees the handler.
 */
static atomic_uint samples_in_progress;
static RT_TLS bool in_counted_sample;

/* The flag is set first and cleared last: an end reached from a handler interrupting these
 * on this thread (an ending signal) never waits for this thread's own sample. */
static void sample_begin(void)
{
	in_counted_sample = true;
	atomic_fetch_add(&samples_in_progress, 1);
	atomic_thread_fence(memory_order_seq_cst);
}

static void sample_end(void)
{
	atomic_fetch_sub(&samples_in_progress, 1);
	in_counted_sample = false;
}

#define QUIESCE_WAIT_NS 100000 /* 0.1 ms, up to QUIESCE_TRIES times: 100 ms */
#define QUIESCE_TRIES 1000

void rt_sampling_quiesce(void)
{
	const struct timespec wait = { 0, QUIESCE_WAIT_NS };
	unsigned self = in_counted_sample; /* the end reached from a handler's thread */

	atomic_thread_fence(memory_order_seq_cst);
	for (int i = 0; i < QUIESCE_TRIES && atomic_load(&samples_in_progress) > self; i++)
		nanosleep(&wait, NULL);
}

static void on_sample(int sig, siginfo_t *si, void *uc)
{
	struct rt_thread *t = &rt_self;
	int saved_errno = errno;
	uint16_t kind = 0;
	bool perf = false, stop = false;
	int fd = -1; /* the perf event that overflowed */

	/* Attached: a thread's first sample hands it its sampler (it may have registered itself
	 * before, in a wrapper: attach_threads.c). */
	if (__builtin_expect(t->state == RT_THREAD_UNKNOWN ||
				     (t->perf_fd < 0 &&
				      atomic_load_explicit(&rt_attach_on, memory_order_relaxed)),
			     0) &&
	    si->si_code >= POLL_IN && si->si_code <= POLL_HUP)
		adopt_attached(t, sig, si->si_fd);
	if ((sig == sampler.cpu_sig || sig == thread_cpu_sig) && si->si_code >= POLL_IN &&
	    si->si_code <= POLL_HUP) {
		/* An overflow of one of our perf events is told apart by its descriptor; the
		 * program may use the same signal on descriptors of its own (F_SETSIG), or send
		 * it with kill(), and then gets it. One that comes after the thread closed its
		 * event (it was pending then) is dropped. */
		if (t->perf_fd >= 0 && si->si_fd == t->perf_fd)
			kind = SC_SAMPLE_CPUTIME;
		else if (t->overflow_fd >= 0 && si->si_fd == t->overflow_fd)
			kind = SC_SAMPLE_OVERFLOW;
		else if (si->si_fd == retired_perf_fd || !rt_signal_program_handles(sig))
			goto out;
		if (kind) {
			fd = si->si_fd;
			perf = true;
		}
	} else if (si->si_code == SI_TIMER && si->si_value.sival_int == COOKIE_CPU) {
		kind = SC_SAMPLE_CPUTIME;
	} else if (si->si_code == SI_TIMER && si->si_value.sival_int == COOKIE_WALL) {
		kind = SC_SAMPLE_REALTIME;
	}
	if (!kind) {
		rt_signal_forward(sig, si, uc); /* the program's own use of this signal */
		goto out;
	}
	rt_sampler_interrupts++;
	if (!rt_active() || t->state != RT_THREAD_ACTIVE) {
		stop = true;
		goto out;
	}
	if (!t->in_sampler) {
		uint64_t now = rt_now_ns();

		t->in_sampler = 1;
		sample_begin();
		if (sampler.end_ns && now >= sampler.end_ns) {
			stop = true;
			if (t->has_cpu_timer)
				disarm_posix(t->cpu_timer);
			if (t->has_wall_timer)
				disarm_posix(t->wall_timer);
		} else if (now >= sampler.start_ns && rt_recording()) {
			uint64_t cpu = record_sample(t, kind, uc, now);

			/* CPU counters go with the CPU-time samples, or with the wall-clock ones
			 * when the thread has no CPU-time sampler. */
			if (cpu &&
			    (kind == SC_SAMPLE_CPUTIME || (!t->has_cpu_timer && t->perf_fd < 0)))
				rt_counters_read(t, now);

			/* What a sample costs, in this thread's CPU time (wall time would count
			 * preemption as cost on a busy machine): measured on one sample in
			 * eight, which is enough for the moving average. */
			if (cpu && kind != SC_SAMPLE_OVERFLOW && (perf || t->perf_fd < 0) &&
			    !(++t->cost_probe & 7))
				throttle(t, kind, perf, rt_thread_cpu_ns() - cpu);
			if (kind == SC_SAMPLE_CPUTIME && perf && t->has_cpu_timer)
				push_kernel_time_timer(t);
			/* Causal profiling: virtual-speedup delays (causal/engine.c), paused with
			 * the program's signals deliverable, as they are outside this handler. */
			if (cpu && kind == SC_SAMPLE_CPUTIME &&
			    atomic_load_explicit(&rt_causal.on, memory_order_relaxed)) {
				sigset_t old;

				rt_signals_program_mask(uc, &old);
				rt_causal_sample(cpu);
				rt_real.pthread_sigmask(SIG_SETMASK, &old, NULL);
			}
		}
		sample_end();
		t->in_sampler = 0;
	} else {
		rt_count_lost_sample();
	}
out:
	if (perf) {
		if (stop)
			ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		else if (thread_refresh())
			ioctl(fd, PERF_EVENT_IOC_REFRESH, 1);
	}
	if (kind && kind != SC_SAMPLE_REALTIME && thread_cpu_sig != cpu_signal() && !stop)
		move_cpu_samplers(t);
	errno = saved_errno;
}

/* A perf event of this thread that signals it at each overflow; into *out. User space only
 * unless `kernel` (which needs CAP_PERFMON or perf_event_paranoid <= 1). */
static int open_perf_for(pid_t tid, pid_t event_pid, struct perf_event_attr *a, bool kernel,
			 int *out)
{
	struct f_owner_ex owner = { .type = F_OWNER_TID, .pid = tid };
	int fd;

	a->disabled = 1;
	a->exclude_kernel = !kernel;
	a->exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, a, event_pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	fd = rt_fd_adopt(fd);
	if (fcntl(fd, F_SETFL, O_ASYNC) || fcntl(fd, F_SETSIG, cpu_signal()) ||
	    fcntl(fd, F_SETOWN_EX, &owner) || ioctl(fd, PERF_EVENT_IOC_RESET, 0)) {
		int err = -errno;

		rt_fd_release(fd);
		return err;
	}
	*out = fd;
	if (cpu_signal() >= SIGRTMIN ? ioctl(fd, PERF_EVENT_IOC_REFRESH, 1)
				     : ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
		int err = -errno;

		*out = -1;
		rt_fd_release(fd);
		return err;
	}
	return 0;
}

static int open_perf_sampler(struct rt_thread *t, struct perf_event_attr *a, bool kernel, int *out)
{
	thread_cpu_sig = cpu_signal();
	return open_perf_for(t->tid, 0, a, kernel, out);
}

/*
 * syscope attach (attach.c): a CPU-time sampler on thread `tid` of this process, armed from
 * another thread. User time only, so that no overflow is ever signalled inside a system
 * call (an interrupted epoll_wait would return EINTR: there is no wrapper to guard it).
 */
int rt_sampling_arm_tid(pid_t tid, int *fd)
{
	struct perf_event_attr a;

	if (!sampler.cpu_on)
		return -EOPNOTSUPP;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = sampler.period_ns;
	return open_perf_for(tid, tid, &a, false, fd);
}

/* The first overflow on a thread attach armed: the thread registers itself, in its handler
 * (async-signal-safe), and owns the descriptor from now on. */
static void adopt_attached(struct rt_thread *t, int sig, int fd)
{
	uint32_t index;

	if (!rt_attach_claim(fd, t, &index))
		return;
	rt_thread_adopt(t, index);
	t->perf_fd = fd;
	t->sampled = true;
	t->period_ns[0] = t->period_ns[1] = sampler.period_ns;
	thread_cpu_sig = sig;
	record_sampler(SC_SAMPLE_CPUTIME, SC_SAMPLER_PERF_TASK_CLOCK, 0);
}

/* A fork child of an attached process (its sampler signals blocked until fork returns): the
 * forking thread, thread 0 there, armed as attach arms a thread, and owning its descriptor. */
void rt_sampling_arm_forked(struct rt_thread *t)
{
	int fd = -1, err = rt_sampling_arm_tid(t->tid, &fd);

	if (!err) {
		t->perf_fd = fd;
		t->sampled = true;
		t->period_ns[0] = t->period_ns[1] = sampler.period_ns;
		thread_cpu_sig = cpu_signal();
	}
	record_sampler(SC_SAMPLE_CPUTIME, SC_SAMPLER_PERF_TASK_CLOCK, -err);
}

/* attach.c, at detach: the descriptor of an adopted thread, disabled (its samples stop). */
void rt_sampling_disarm_adopted(struct rt_thread *t)
{
	if (t->perf_fd >= 0)
		ioctl(t->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
}

static int arm_posix(struct rt_thread *t, clockid_t clock, int sig, int cookie, timer_t *out);
static int arm_cpu_timer(struct rt_thread *t);

/*
 * The thread's task clock, counting user and kernel time where allowed: an overflow in the
 * kernel (a page fault, a system call) is signalled on the way back to user space, so the
 * sample lands on the user stack that entered the kernel. Where only user time may be
 * counted (perf_event_paranoid 2 without privileges), *user_only says so.
 */
static int open_perf_clock(struct rt_thread *t, bool *user_only)
{
	struct perf_event_attr a;
	int err = -EACCES;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = sampler.period_ns;
	if (!atomic_load(&sampler.perf_user_only)) {
		err = open_perf_sampler(t, &a, true, &t->perf_fd);
		if (err != -EACCES && err != -EPERM)
			return err;
		atomic_store(&sampler.perf_user_only, 1);
	}
	*user_only = true;
	return open_perf_sampler(t, &a, false, &t->perf_fd);
}

/*
 * A task clock that counts user time only never fires in the kernel, so page faults and
 * system calls would go unsampled. A POSIX CPU-time timer counts both; each perf sample
 * pushes it one period further, so it fires only after a period of CPU time without a perf
 * sample: time spent in the kernel. Weights stay honest (the reader weighs every sample by
 * the thread CPU time since the previous one).
 */
static void arm_kernel_time_timer(struct rt_thread *t)
{
	int err = arm_cpu_timer(t);

	t->has_cpu_timer = !err;
	if (!err)
		atomic_store(&rt_guard_blocking, 1); /* it can interrupt sleeping calls */
	if (!atomic_exchange(&sampler.user_only_noted, 1))
		rt_note(SC_NOTE_INFO,
			"CPU-time sampling: perf may count user time only here "
			"(perf_event_paranoid > 1 without CAP_PERFMON); time in the kernel is "
			"sampled by a POSIX CPU-time timer%s",
			err ? ", which could not be armed: kernel time goes to the next sample"
			    : " (at most at the scheduler tick rate)");
}

static int arm_posix(struct rt_thread *t, clockid_t clock, int sig, int cookie, timer_t *out)
{
	struct sigevent sev;
	struct itimerspec its;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = sig;
	sev.sigev_value.sival_int = cookie;
	sev.sigev_notify_thread_id = t->tid;
	if (timer_create(clock, &sev, out))
		return -errno;
	its = interval(sampler.period_ns);
	if (clock == CLOCK_MONOTONIC && sampler.start_ns > rt_now_ns() + sampler.period_ns) {
		uint64_t wait = sampler.start_ns - rt_now_ns();

		its.it_value.tv_sec = (time_t)(wait / 1000000000ull);
		its.it_value.tv_nsec = (long)(wait % 1000000000ull);
	}
	if (timer_settime(*out, 0, &its, NULL)) {
		int err = -errno;

		timer_delete(*out);
		return err;
	}
	return 0;
}

static int arm_cpu_timer(struct rt_thread *t)
{
	thread_cpu_sig = cpu_signal();
	return arm_posix(t, CLOCK_THREAD_CPUTIME_ID, thread_cpu_sig, COOKIE_CPU, &t->cpu_timer);
}

/*
 * The program installed a handler on the CPU samplers' standard signal: a standard signal
 * does not queue, so one of the program's arriving while a sample is pending would be lost.
 * The samplers move to a free real-time signal (signals.c emulates the program's use of it
 * too); each thread moves its own at its next sample, in its handler.
 */
static void move_cpu_samplers(struct rt_thread *t)
{
	int sig = cpu_signal();

	for (int *p = &t->perf_fd; p; p = p == &t->perf_fd ? &t->overflow_fd : NULL)
		if (*p >= 0 && !fcntl(*p, F_SETSIG, sig))
			ioctl(*p, PERF_EVENT_IOC_REFRESH, 1); /* one overflow at a time from now */
	if (t->has_cpu_timer) {
		timer_delete(t->cpu_timer);
		t->has_cpu_timer =
			!arm_posix(t, CLOCK_THREAD_CPUTIME_ID, sig, COOKIE_CPU, &t->cpu_timer);
	}
	thread_cpu_sig = sig;
}

void rt_sampling_signal_taken(int sig)
{
	int alt = 0;

	if (sig != sampler.cpu_sig || sig >= SIGRTMIN || atomic_load(&sampler.moved_sig) ||
	    (!sampler.cpu_on && !sampler.overflow_on))
		return;
	for (int s = SIGRTMAX - 3; s >= SIGRTMIN + 2 && !alt; s--)
		if (rt_signal_unused(s) && !rt_signal_claim(s, on_sample))
			alt = s;
	if (!alt)
		return;
	atomic_store(&sampler.moved_sig, alt);
	rt_note(SC_NOTE_INFO,
		"sampling: the program handles signal %d, the CPU-time sampler's; the sampler "
		"moved to signal %d, which queues, so that none of the program's is lost",
		sig, alt);
}

static void arm_cpu(struct rt_thread *t)
{
	int err = -EOPNOTSUPP;

	if (sampler.cpu_timer_choice != 2) {
		bool user_only = false;

		err = open_perf_clock(t, &user_only);
		if (!err) {
			record_sampler(SC_SAMPLE_CPUTIME, SC_SAMPLER_PERF_TASK_CLOCK, 0);
			if (user_only)
				arm_kernel_time_timer(t);
			return;
		}
		if (!atomic_exchange(&sampler.perf_failed_noted, 1))
			rt_note(SC_NOTE_WARN,
				"CPU-time sampling: perf_event_open(task-clock) failed (%s)%s",
				strerror(-err),
				sampler.cpu_timer_choice == 1
					? "; no CPU-time samples on this thread"
					: "; using POSIX CPU-time timers, limited to the scheduler tick rate");
		if (sampler.cpu_timer_choice == 1) {
			record_sampler(SC_SAMPLE_CPUTIME, SC_SAMPLER_PERF_TASK_CLOCK, -err);
			return;
		}
	}
	err = arm_cpu_timer(t);
	t->has_cpu_timer = !err;
	if (!err) {
		atomic_store(&sampler.posix_used, 1);
		atomic_store(&rt_guard_blocking, 1); /* it can interrupt sleeping calls */
	}
	record_sampler(SC_SAMPLE_CPUTIME, SC_SAMPLER_POSIX_CPU, -err);
}

static void thread_start(struct rt_thread *t)
{
	t->period_ns[0] = t->period_ns[1] = sampler.period_ns;
	t->sample_cost_ns[0] = t->sample_cost_ns[1] = 0;
	t->throttled = 0;
	t->sampled = thread_selected(t);
	if (!t->sampled || (sampler.end_ns && rt_now_ns() >= sampler.end_ns))
		return;
	if (sampler.cpu_on)
		arm_cpu(t);
	if (sampler.wall_on) {
		int err = arm_posix(t, CLOCK_MONOTONIC, sampler.wall_sig, COOKIE_WALL,
				    &t->wall_timer);

		t->has_wall_timer = !err;
		record_sampler(SC_SAMPLE_REALTIME, SC_SAMPLER_POSIX_MONO, -err);
	}
	if (sampler.overflow_on) {
		struct perf_event_attr a = sampler.overflow_attr;

		record_sampler(SC_SAMPLE_OVERFLOW, SC_SAMPLER_PERF_OVERFLOW,
			       -open_perf_sampler(t, &a, false, &t->overflow_fd));
	}
}

static atomic_int throttle_noted, closed_noted;

/*
 * Whether `fd` is still the perf event we opened. A raw close_range or close system call of
 * the program (no libc wrapper sees it) closes it behind us: its samples stop, and the number
 * may be the program's file by now, which must be neither disabled nor closed.
 */
static bool still_perf_event(int fd)
{
	struct stat st;
	uint64_t id;

	/* A perf event is an anonymous inode (no file type bits), and only a perf event
	 * answers PERF_EVENT_IOC_ID: two cheap calls, where reading the /proc/self/fd link
	 * walked a path at every thread's end (~10 us). */
	if (fstat(fd, &st))
		return errno != EBADF;
	return !(st.st_mode & S_IFMT) && ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0;
}

static void thread_stop(struct rt_thread *t)
{
	if (t->throttled) {
		/* The periods the thread ended with, for the reader's rate accounting. */
		for (int slot = 0; slot < 2; slot++)
			if (t->period_ns[slot] != sampler.period_ns) {
				struct sc_rec_sampler r = {
					.ts = rt_now_ns(),
					.period_ns = t->period_ns[slot],
					.kind = slot ? SC_SAMPLE_REALTIME : SC_SAMPLE_CPUTIME,
					.mechanism = slot	       ? SC_SAMPLER_POSIX_MONO
						     : t->perf_fd >= 0 ? SC_SAMPLER_PERF_TASK_CLOCK
								       : SC_SAMPLER_POSIX_CPU,
				};

				rt_record(SC_REC_SAMPLER, SC_SAMPLER_THROTTLED, &r.ts,
					  sizeof(r) - sizeof(r.hdr), NULL, 0);
			}
		if (!atomic_exchange(&throttle_noted, 1))
			rt_note(SC_NOTE_WARN,
				"sampling: taking a sample cost more than 1/%d of the period, so the "
				"period was raised (to %.0f us on thread %u) to keep the program's "
				"speed; ask for a lower --sampling-freq",
				THROTTLE_SHARE, (double)t->period_ns[0] / 1000.0, t->index);
		t->throttled = 0;
	}

	for (int *p = &t->perf_fd; p; p = p == &t->perf_fd ? &t->overflow_fd : NULL) {
		int fd = *p;

		if (fd < 0)
			continue;
		*p = -1;
		retired_perf_fd = fd;
		if (!rt_fd_was_clobbered(fd) && !still_perf_event(fd)) {
			rt_fd_forget(fd);
			if (!atomic_exchange(&closed_noted, 1))
				rt_note(SC_NOTE_WARN,
					"sampling: the program closed syscope's sampling descriptor "
					"of thread %u with a raw close system call (close_range or "
					"close through syscall()); its samples stopped there",
					t->index);
			continue;
		}
		if (!rt_fd_was_clobbered(fd))
			ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		rt_fd_release(fd);
	}
	if (t->has_cpu_timer) {
		t->has_cpu_timer = false;
		timer_delete(t->cpu_timer);
	}
	if (t->has_wall_timer) {
		t->has_wall_timer = false;
		timer_delete(t->wall_timer);
	}
}

/*
 * exec keeps a thread's pending signals but resets its handlers: a sample signal pending
 * then (a task clock counting kernel time overflows inside execve itself) would kill the
 * new program. So before exec the thread's samplers pause, and what they left pending is
 * taken; if exec fails they go on.
 */
static void pause_samplers(struct rt_thread *t, bool resume)
{
	for (int *p = &t->perf_fd; p; p = p == &t->perf_fd ? &t->overflow_fd : NULL) {
		if (*p < 0)
			continue;
		if (!resume)
			ioctl(*p, PERF_EVENT_IOC_DISABLE, 0);
		else if (thread_refresh())
			ioctl(*p, PERF_EVENT_IOC_REFRESH, 1);
		else
			ioctl(*p, PERF_EVENT_IOC_ENABLE, 0);
	}
	for (int slot = 0; slot < 2; slot++) {
		struct itimerspec its = interval(t->period_ns[slot]);

		if (!resume)
			its = (struct itimerspec){ 0 };
		if (slot ? t->has_wall_timer : t->has_cpu_timer)
			timer_settime(slot ? t->wall_timer : t->cpu_timer, 0, &its, NULL);
	}
}

static void take_pending_samples(void)
{
	static const struct timespec now = { 0, 0 };
	sigset_t set, old;

	rt_signals_sampler_set(&set);
	if (RT_REAL(pthread_sigmask)(SIG_BLOCK, &set, &old))
		return;
	while (syscall(SYS_rt_sigtimedwait, &set, NULL, &now, _NSIG / 8) > 0)
		;
	rt_real.pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void rt_sampling_before_exec(void)
{
	int saved_errno = errno;

	if (!rt_self.sampled)
		return;
	pause_samplers(&rt_self, false);
	take_pending_samples();
	errno = saved_errno;
}

void rt_sampling_exec_failed(void)
{
	int saved_errno = errno;

	if (rt_self.sampled)
		pause_samplers(&rt_self, true);
	errno = saved_errno;
}

/* "type:config:config1:config2:period" from the launcher; false if empty or malformed. */
static bool parse_overflow(const char *text)
{
	unsigned long long type, config, config1, config2, period;
	struct perf_event_attr *a = &sampler.overflow_attr;

	if (sscanf(text, "%llx:%llx:%llx:%llx:%llx", &type, &config, &config1, &config2, &period) !=
		    5 ||
	    !period)
		return false;
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = (uint32_t)type;
	a->config = config;
	a->config1 = config1;
	a->config2 = config2;
	a->sample_period = period;
	return true;
}

static bool enabled(const struct sc_settings *s)
{
	return sc_bool(s, SC_SET_USE_SAMPLING);
}

static int process_start(void)
{
	const struct sc_settings *s = &rt_proc.settings;
	const char *timer = sc_str(s, SC_SET_SAMPLING_CPUTIME_TIMER);
	int rc;

	sampler.wall_on = sc_bool(s, SC_SET_SAMPLING_REALTIME);
	sampler.overflow_on = parse_overflow(sc_str(s, SC_SET_SAMPLING_OVERFLOW_RESOLVED));
	sampler.cpu_on =
		sc_bool(s, SC_SET_SAMPLING_CPUTIME) || (!sampler.wall_on && !sampler.overflow_on);
	sampler.cpu_sig = resolve_signal(sc_int(s, SC_SET_SAMPLING_CPUTIME_SIGNAL));
	/* A second attach: the signal the last one moved to was given back at its detach (the
	 * default action again); claimed anew below if the program still handles cpu_sig. */
	atomic_store(&sampler.moved_sig, 0);
	sampler.wall_sig = resolve_signal(sc_int(s, SC_SET_SAMPLING_REALTIME_SIGNAL));
	sampler.cpu_timer_choice = !strcmp(timer, "perf") ? 1 : !strcmp(timer, "posix") ? 2 : 0;
	sampler.period_ns = (uint64_t)(1e9 / sc_double(s, SC_SET_SAMPLING_FREQ));
	if (sampler.period_ns < 10000)
		sampler.period_ns = 10000;
	sampler.max_depth = (int)sc_int(s, SC_SET_SAMPLING_MAX_DEPTH);
	sampler.start_ns = rt_proc.start_ns + (uint64_t)(sc_double(s, SC_SET_SAMPLING_DELAY) * 1e9);
	sampler.end_ns = sc_is_set(s, SC_SET_SAMPLING_DURATION)
				 ? sampler.start_ns +
					   (uint64_t)(sc_double(s, SC_SET_SAMPLING_DURATION) * 1e9)
				 : 0;
	sampler.tid_filter = sc_is_set(s, SC_SET_SAMPLING_TIDS);
	if (sampler.tid_filter &&
	    sc_parse_id_list(sc_str(s, SC_SET_SAMPLING_TIDS), sampler.tids, MAX_TID_FILTER))
		sampler.tid_filter = false;

	if (sampler.cpu_on && sampler.wall_on && sampler.cpu_sig == sampler.wall_sig) {
		rt_note(SC_NOTE_WARN,
			"sampling: CPU-time and wall-clock samplers share signal %d; "
			"wall-clock sampling is off",
			sampler.wall_sig);
		sampler.wall_on = false;
	}
	rt_unwind_init();
	if ((sampler.cpu_on || sampler.overflow_on) &&
	    (rc = rt_signal_claim(sampler.cpu_sig, on_sample))) {
		rt_note(SC_NOTE_WARN, "sampling: cannot use signal %d: %s", sampler.cpu_sig,
			strerror(-rc));
		sampler.cpu_on = sampler.overflow_on = false;
	}
	if (sampler.wall_on && (rc = rt_signal_claim(sampler.wall_sig, on_sample))) {
		rt_note(SC_NOTE_WARN, "sampling: cannot use signal %d: %s", sampler.wall_sig,
			strerror(-rc));
		sampler.wall_on = false;
	}
	if (sampler.wall_on)
		atomic_store(&rt_guard_blocking, 1);
	if (rt_signal_program_handles(sampler.cpu_sig)) /* installed before we started */
		rt_sampling_signal_taken(sampler.cpu_sig);
	return sampler.cpu_on || sampler.wall_on || sampler.overflow_on ? 0 : -EINVAL;
}

static void fork_child(void)
{
	atomic_store(&samples_in_progress, 0); /* those of the parent's other threads */
	atomic_store(&throttle_noted, 0);
	/* Timers are not inherited and the parent's perf descriptors were closed; the child's
	 * thread is armed by its thread_start like any new thread. */
	atomic_store(&sampler.perf_failed_noted, 0);
	atomic_store(&sampler.user_only_noted, 0);
}

static void process_stop(void)
{
	thread_stop(&rt_self);
}

const struct rt_source rt_source_sampling = {
	.name = "sampling",
	.enabled = enabled,
	.process_start = process_start,
	.thread_start = thread_start,
	.thread_stop = thread_stop,
	.fork_child = fork_child,
	.process_stop = process_stop,
};
