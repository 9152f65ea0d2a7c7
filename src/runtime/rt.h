/* SPDX-License-Identifier: MIT */
/*
 * Internal interface of libsyscope.so, the runtime preloaded into profiled programs.
 *
 * The runtime only records (docs/architecture.md, principle 1). Its state is one struct
 * rt_process per process image and one struct rt_thread per thread, the latter in
 * initial-exec TLS so signal handlers reach it without calling into the dynamic loader.
 *
 * Rules for every entry point (wrappers, handlers, hooks):
 *   - check rt_active() first; when the runtime is passive, behave exactly like libc;
 *   - never exit, abort or print to the program's stdout/stderr; record a note instead;
 *   - code reachable from a signal handler uses only async-signal-safe calls and no locks.
 */
#ifndef SYSCOPE_RUNTIME_RT_H
#define SYSCOPE_RUNTIME_RT_H

#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "../arch/arch.h"
#include "../common/settings.h"
#include "../store/format.h"
#include "real.h"

/* Symbols the program may see; everything else in the library is hidden. */
#define RT_EXPORT __attribute__((visibility("default")))

/* TLS reachable from signal handlers without __tls_get_addr, which may allocate. Valid for a
 * preloaded library; glibc reserves static TLS surplus for libraries dlopen'ed later. */
#define RT_TLS __thread __attribute__((tls_model("initial-exec")))

enum rt_thread_state {
	RT_THREAD_UNKNOWN = 0, /* never seen: registered lazily on first record */
	RT_THREAD_ACTIVE = 1,
	RT_THREAD_EXITED = 2,
};

/*
 * Per-thread recording state. `word` packs the current chunk's generation (high 32 bits) and
 * the next free offset in it (low 32 bits); reservations advance it with one instruction
 * that a signal handler cannot split (arch_local_fetch_add), so a handler interrupting a
 * record in progress reserves space after it. Generation g's chunk base is slot[g & 1]; the
 * previous chunk stays mapped until the next exchange so that an interrupted writer can
 * finish its record in it.
 */
struct rt_slot {
	char *base; /* the chunk being written or last closed here: `buf`, or NULL */
	uint32_t gen;
	uint32_t index; /* its place in the file */
	char *buf;	/* this slot's own memory, reused for every chunk (mmap'd once) */
	/* Bytes of the chunk already in the file (low half) and a count of changes (high
	 * half): recorder.c, flush_slot. */
	uint64_t flushed;
	uint32_t handoff; /* its closed chunk's entry for the writer thread + 1; 0: none */
	/* Bytes of the chunk below which nothing is this slot's to count as lost: its first
	 * record, then the end of what a failed write counted (recorder.c, count_unwritten). */
	uint32_t counted;
};

struct rt_thread {
	uint64_t word;		/* gen << 32 | offset; 0 = no chunk */
	struct rt_slot slot[2]; /* by generation parity */
	/* Flushes of its slots by another thread in progress (the image's end): it does not
	 * reuse a slot's memory under them (recorder.c, retire_slot). */
	uint32_t foreign_flushes;
	uint32_t gen;		       /* generation of the current chunk */
	volatile int exchanging;       /* a chunk exchange is in progress on this thread */
	volatile int forking;	       /* between fork's prepare and parent/child hooks */
	uint64_t pending_lost_records; /* not yet reported in-band */
	uint64_t pending_lost_bytes;
	uint32_t flush_countdown; /* reservations until the next look at the flush clock */
	uint32_t writing;	  /* records reserved and not yet committed */
	uint64_t last_flush_ns;
	uint32_t writer_slot; /* its place in the recorder's table of writers + 1; 0: none */

	pid_t tid;
	uint32_t index; /* creation order in the process, main thread = 0 */
	int state;	/* enum rt_thread_state */
	pid_t creator_tid;
	uintptr_t stack_lo, stack_hi; /* 0 when unknown */

	/* Sampling (sources/sampling.c). */
	int perf_fd;	   /* task-clock event, -1 if none */
	int overflow_fd;   /* --sample-overflow event, -1 if none */
	timer_t cpu_timer; /* POSIX CPU-time timer when perf is unavailable */
	timer_t wall_timer;
	bool has_cpu_timer, has_wall_timer;
	bool sampled; /* passes the thread filter */
	volatile int in_sampler;
	uintptr_t sample_pc;	 /* where the sampler's signal interrupted the thread */
	volatile int in_library; /* syscope is calling a library: see fdguard.c */
	uint64_t period_ns[2];	 /* current CPU (0) and wall (1) periods; throttling raises them */
	uint32_t throttled;	 /* times the period was changed on this thread */
	uint64_t sample_cost_ns[2]; /* moving average of what a sample costs */
	uint32_t cost_probe;	    /* counts samples; every eighth is timed */

	/* CPU counters (sources/counters.c): one perf group per thread. */
	int pmc_fd[SC_PMC_MAX];	       /* -1: not open; [0] is the group leader */
	uint8_t pmc_event[SC_PMC_MAX]; /* the event (its index in --cpu-events) of each fd */
	uint8_t pmc_n;		       /* fds open */
	uint64_t pmc_last[SC_PMC_MAX]; /* scaled totals at the previous read */
	volatile int pmc_reading;      /* a read in progress (a sample's waits for the next) */
};

/* Per-process-image state. */
struct rt_process {
	atomic_int active;   /* recording; 0 when passive or stopped */
	atomic_int stopping; /* finalization started: handlers record nothing more */
	atomic_int paused;   /* syscope_pause() calls not yet resumed: no samples, no new
			      * regions, no GPU activity (identity records go on) */
	pid_t pid;
	uint32_t image_seq;
	struct sc_settings settings;
	char session_dir[4096];
	char self_path[4096]; /* absolute path of libsyscope.so */
	bool attached;	      /* started by syscope attach (never reset: the library stays) */
	uint64_t start_ns;
	atomic_uint next_thread_index;
	atomic_uint threads_alive;
};

extern struct rt_process rt_proc;
extern RT_TLS struct rt_thread rt_self;

static inline bool rt_active(void)
{
	return atomic_load_explicit(&rt_proc.active, memory_order_relaxed) &&
	       !atomic_load_explicit(&rt_proc.stopping, memory_order_relaxed);
}

/* Recording what the program does: active and not paused by the program. */
static inline bool rt_recording(void)
{
	return rt_active() && atomic_load_explicit(&rt_proc.paused, memory_order_relaxed) <= 0;
}

/* ---- clock.c ---- */
/* The clock's state (clock.c explains it); here so that a timestamp is inline. */
#define RT_CLOCK_RING 8
struct rt_clock_segment {
	uint64_t tsc, ns;
	uint64_t mult;	  /* ns per tick, 32.32 fixed point */
	uint64_t end_tsc; /* steer from here */
};
struct rt_clock {
	struct rt_clock_segment ring[RT_CLOCK_RING];
	atomic_uint gen;     /* current segment: ring[gen % RT_CLOCK_RING]; 0: none yet */
	atomic_int steering; /* taken by the caller that starts the next segment */
	bool on;	     /* the TSC is in use */
	uint64_t anchor_tsc; /* the last reading of both clocks */
	uint64_t anchor_ns;
};
extern struct rt_clock rt_clk;

/* 128-bit product (a GCC/Clang extension): tick counts times a 32.32 factor overflow 64
 * bits after a few seconds. */
static inline uint64_t rt_clock_map(uint64_t seg_tsc, uint64_t seg_ns, uint64_t mult, uint64_t t)
{
	return seg_ns + (uint64_t)(((unsigned __int128)(t - seg_tsc) * mult) >> 32);
}

uint64_t rt_now_ns_slow(void);

/* CLOCK_MONOTONIC nanoseconds (from the TSC when it is invariant); async-signal-safe. The
 * common case: inside the current segment, which no steering rewrote meanwhile. */
static inline uint64_t rt_now_ns(void)
{
	unsigned gen = atomic_load_explicit(&rt_clk.gen, memory_order_acquire);

	if (__builtin_expect(gen != 0, 1)) {
		const struct rt_clock_segment *s = &rt_clk.ring[gen % RT_CLOCK_RING];
		uint64_t seg_tsc = __atomic_load_n(&s->tsc, __ATOMIC_RELAXED);
		uint64_t seg_ns = __atomic_load_n(&s->ns, __ATOMIC_RELAXED);
		uint64_t mult = __atomic_load_n(&s->mult, __ATOMIC_RELAXED);
		uint64_t span = __atomic_load_n(&s->end_tsc, __ATOMIC_RELAXED) - seg_tsc;
		uint64_t t = arch_cycles();

		atomic_thread_fence(memory_order_acquire);
		if (__builtin_expect(
			    t - seg_tsc < span &&
				    atomic_load_explicit(&rt_clk.gen, memory_order_relaxed) - gen <
					    RT_CLOCK_RING - 2,
			    1))
			return rt_clock_map(seg_tsc, seg_ns, mult, t);
	}
	return rt_now_ns_slow();
}
void rt_clock_init(const struct sc_settings *s); /* after the settings are read */
void rt_clock_fork_child(void);
bool rt_clock_uses_tsc(void);	 /* false: clock_gettime */
uint64_t rt_thread_cpu_ns(void); /* CLOCK_THREAD_CPUTIME_ID, async-signal-safe */
pid_t rt_gettid(void);

/* ---- recorder.c ---- */
/* Create this image's raw file in the session. Returns 0 or a negative errno. */
int rt_recorder_open(const char *session_dir, uint32_t image_seq, int fd_hint);
/* Forget the parent's file in a fork child (does not touch the parent's data). */
void rt_recorder_forget(void);
/* Every thread's buffered records into the file (the process ends, execs or dies). */
void rt_recorder_flush_all(void);
/* The calling thread's buffered records into the file (attach's thread, which an exec of the
 * program would end without a word). */
void rt_recorder_flush_self(void);
/* The first `used` bytes of chunk `index`, from `base`, into the file, which holds its whole
 * records up to `known` already; false if it failed. */
bool rt_recorder_write_chunk(const char *base, uint32_t index, uint32_t used, uint32_t known);

/* ---- chunk_writer.c: the thread that writes closed chunks for their threads ---- */
void rt_writer_start(void);
void rt_writer_stop(void);
void rt_writer_forget(void); /* in a fork child */
/* Post a closed chunk; returns its handle, 0 if not taken (the owner writes it itself). */
uint32_t rt_writer_post(const char *base, uint32_t index, uint32_t known, uint32_t used);
/* Take the chunk back before reusing its buffer (waits for a write in progress); true if
 * the writer wrote it. */
bool rt_writer_take_back(uint32_t handle);
/*
 * Reserve `size` bytes (a multiple of 8, header included) in the calling thread's stream.
 * Returns the record's address, or NULL when nothing can be recorded (the loss is counted).
 * Async-signal-safe. Pair with rt_commit().
 */
void *rt_reserve(uint32_t size);
/* Make a reserved record visible: stores its header last (inline: one store). */
static inline void rt_commit(void *rec, uint16_t type, uint16_t flags, uint32_t size)
{
	uint64_t word = (uint64_t)size | (uint64_t)type << 32 | (uint64_t)flags << 48;

	__atomic_store_n((uint64_t *)rec, word, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rt_self.writing--;
}
/* Return the unused tail of the last reservation, only when nothing was reserved since (a
 * signal handler may have recorded meanwhile). Returns the size to commit the record with:
 * `used`, or all of `reserved` when it could not shrink (a record whose size left a gap
 * would end its chunk for the reader, and take every later record with it). */
uint32_t rt_shrink_last(void *rec, uint32_t reserved, uint32_t used);
/* Store `value` into `field` of record `rec`, which the calling thread committed earlier with
 * timestamp `ts` (its first u64), if that record is still in the thread's current chunk (the
 * file then gets the change with the chunk's next write). False, and nothing stored, when
 * it is not. Async-signal-safe. */
bool rt_amend_u32(void *rec, uint64_t ts, uint32_t *field, uint32_t value);
/* Give the thread's chunk back at thread exit, for a later thread to continue. */
void rt_release_thread_chunk(void);
/* Reserve, copy `body` (the record after its header) and `tail`, commit. Returns 0 or
 * -ENOSPC (counted as lost). */
int rt_record(uint16_t type, uint16_t flags, const void *body, uint32_t body_size, const void *tail,
	      uint32_t tail_size);
struct sc_file_header *rt_header(void);
void rt_count_lost_sample(void);
/* A record that could not even be reserved (a call on a thread past its end, whose call
 * stack is gone): counted as lost with its cause, as a refused reservation is. */
void rt_count_lost_record(uint32_t size, enum sc_lost_cause why);
void rt_set_end(enum sc_end_reason reason, int status);
/* syscope attach, at detach: forget another (quiet) thread's chunks, then close the file. */
void rt_recorder_detach_thread(struct rt_thread *t);
void rt_recorder_close(void);

/* ---- threads.c ---- */
/* Register the calling thread if it is not yet; async-signal-safe. Returns rt_self. */
struct rt_thread *rt_thread_self(void);
#define RT_INDEX_NEXT UINT32_MAX /* take the next free thread index */
void rt_thread_begin(struct rt_thread *t, pid_t creator, uint32_t index);
/* Normal-context part of a thread's start (stack bounds, exit hook, sources). */
void rt_thread_setup(struct rt_thread *t);
void rt_thread_end(void);
void rt_threads_init(void);
void rt_threads_fork_child(void);
/* syscope attach: the thread registry for a process already running (no thread known), and
 * a thread registering itself in its first sample's handler (async-signal-safe). */
void rt_threads_attach_init(void);
void rt_thread_adopt(struct rt_thread *t, uint32_t index);

/* ---- modules.c ---- */
/* Record every loaded module (process start, fork child). */
void rt_modules_init(bool fork_child);
/* Record modules loaded or unloaded since the last look; cheap when nothing changed.
 * Async-signal-safe: from a sample it reads loader.c's copy of the list. */
void rt_modules_check(void);

/* ---- loader.c: the loader's list of loaded objects, also for signal handlers ---- */
struct dl_phdr_info;
typedef int (*rt_phdr_callback)(struct dl_phdr_info *, size_t, void *);
void rt_loader_init(void);	   /* the copy, and the loader event hook (before any source) */
void rt_loader_process_stop(void); /* notes on what samples could not see */
/* Every namespace's list is consistent (no dlopen or dlclose between its two events). */
bool rt_loader_settled(void);
/* `cb` on each loaded object, as dl_iterate_phdr; from a sample without the loader's lock.
 * Returns false when only part of the list was walked (a library being unloaded), with
 * the last callback's value in *rc (when rc is not NULL). */
bool rt_loader_walk(rt_phdr_callback cb, void *data, int *rc);
void rt_loader_fork_child_done(void); /* the child's setup is over: walks ask the loader */
void rt_loader_event(void);	      /* the loader changed its list: called by the hook */
bool rt_loader_hook_install(void);    /* loader_hook_<arch>.c; false: no hook here */
void *rt_map_near(uint64_t lo, uint64_t hi, size_t len); /* within +-2 GiB of [lo, hi) */

/* ---- user_api.c: counter tracks of the process, shared with the runtime's sources ---- */
/* The id of the track (name, unit), defined on first use; -1 when the table is full. */
int rt_counter_track(const char *name, const char *unit);
void rt_counter_value(int track, uint64_t ts, double value);
void rt_counters_fork_child(void);

/* ---- notes.c ---- */
__attribute__((format(printf, 2, 3))) void rt_note(enum sc_note_level level, const char *fmt, ...);

/* ---- fdguard.c: descriptors the runtime owns, protected from the program's close loops ---- */
int rt_fd_adopt(int fd);    /* move fd to a high number, mark ours; returns the new fd or -1 */
void rt_fd_release(int fd); /* close one of ours */
bool rt_fd_is_ours(int fd);
void rt_fd_close_all_inherited(int keep); /* fork child: drop the parent's, but `keep` */
bool rt_fd_was_clobbered(int fd);	  /* the program replaced it (dup2 onto it) */
void rt_fd_forget(int fd); /* closed behind our back: no longer ours, never to be closed */
/* Around calls into a library (libunwind): the pipes it makes become ours, its close() never
 * reaches the program's descriptors. Returns what rt_fd_leave_library restores. */
int rt_fd_enter_library(void);
void rt_fd_leave_library(int saved);

/* ---- signals.c: sampler signal ownership and the program's view of it ---- */
typedef void (*rt_sig_handler)(int, siginfo_t *, void *);
/* Install `handler` for `sig` as syscope's; the program's sigaction calls are then emulated. */
int rt_signal_claim(int sig, rt_sig_handler handler);
/* True when the program installed a handler of its own for `sig` (one syscope claimed). */
bool rt_signal_program_handles(int sig);
/* True when neither syscope nor the program has a handler on `sig`. */
bool rt_signal_unused(int sig);
/* Forward a sampler signal that is not syscope's to the handler the program installed, from
 * our handler, with the kernel's `uc`. */
void rt_signal_forward(int sig, siginfo_t *si, void *uc);
void rt_signals_install_fatal(void);
bool rt_signal_hide_on_default(int sig, rt_sig_handler handler); /* lifecycle.c's recorders */
void rt_signals_sampler_set(sigset_t *set);			 /* the sampler signals in use */
/* The mask of the code a handler interrupted (its ucontext), sampler signals still blocked: for
 * work a sampler does that may take long (causal pauses); the mask before in `old`. */
void rt_signals_program_mask(void *uc, sigset_t *old);
void rt_signals_release(void);		/* syscope attach's detach: the program's handlers back */
void rt_signals_unhide(void);		/* ... and the defaults the hidden recorders stood for */
void rt_install_ending_recorders(void); /* lifecycle.c: SIGTERM, SIGINT... where left default */
extern atomic_int rt_guard_blocking;	/* wrap_block.c guards blocking calls */
/* Per thread: sampler signals taken, and signals handed to the program's handlers (a call
 * that failed with EINTR while only the first count grew was cut short by a sample). */
extern RT_TLS volatile unsigned rt_sampler_interrupts, rt_program_interrupts;

/* ---- real libc entry points: real.h; resolved once (interpose.c) ---- */
void *rt_real_lookup(const char *name); /* the next definition of `name` after ours */
/* Where rt_real_find keeps what it found for one name: the global scope's definition, and
 * for a few callers outside it (libraries loaded RTLD_LOCAL), the one their scope reaches. */
#define RT_REAL_SCOPES 8
struct rt_real_cache {
	void *global;
	struct rt_real_scope {
		const void *_Atomic caller; /* the caller's object (link map); NULL: free */
		const void *caller_start;   /* its mapping, and the definition's object */
		void *fn;
		const void *fn_object, *fn_start;
	} scope[RT_REAL_SCOPES];
};
/* The definition of `name` that `caller` would reach without us, wherever it is (RTLD_NEXT
 * first); NULL when no loaded object defines it. Only for hooks whose real function depends
 * on the caller's scope (the unwinding hooks, makecontext: a library loaded RTLD_LOCAL may
 * bring its own libgcc_s or libstdc++); every other wrapper uses RT_REAL (real.h). */
void *rt_real_find(const char *name, struct rt_real_cache *cache, const void *caller);

void rt_real_missing(const char *name) __attribute__((noreturn)); /* notes, then aborts */

/* ---- stacks.c: the machine stacks calls run on (for the call tracers) ---- */
/* The thread's signal stack, asked of the kernel only where frames on two stacks meet. */
struct rt_alt_stack {
	bool asked;
	uint64_t lo, hi;
};
/* Whether a call whose frame is at `frame` is over, seen from later code at `here`: both on
 * the thread's stack, or the frame on a signal stack that was left. Frames on stacks
 * syscope does not know (coroutines) are never taken for over. */
bool rt_frame_left(uint64_t frame, uint64_t here, struct rt_alt_stack *alt);
/* On the thread's stack or its signal stack. */
bool rt_on_known_stack(uint64_t a, struct rt_alt_stack *alt);
/* The context (SC_FUNC_CONTEXT) of a call whose frame is at `frame`: 0 on the thread's stack
 * or any stack not made by makecontext, else the made one's number. Async-signal-safe. */
uint16_t rt_stack_context(uint64_t frame);

/* ---- exec.c ---- */
void rt_exec_env_init(void);
/* Note the children --follow-exclude kept out that this process counted (at its end). */
void rt_exec_report(void);

/* ---- lifecycle.c ---- */
void rt_finalize(enum sc_end_reason reason, int status);
/* fork's hooks (lifecycle.c); attach.c's call them too, with `attached`: the child's thread
 * is then armed as an attached one (rt_sampling_arm_forked). */
void rt_fork_prepare(void);
void rt_fork_parent(void);
void rt_fork_child(bool attached);
void rt_record_identity(void); /* PROCESS, ENVIRON and SETTINGS records (attach.c) */
void rt_finalize_reset(void);  /* a later attach may finalize again */

/* ---- attach.c: threads armed by syscope attach ---- */
/* In a sample's handler on a thread not yet registered: whether `fd` is the sampler attach
 * armed for the calling thread (then `t` is remembered and *index is its thread index). */
bool rt_attach_claim(int fd, struct rt_thread *t, uint32_t *index);
/* While attached (attach_threads.c): a thread that records before its first sample
 * registers itself here; rt_thread_adopt_key (threads.c) gives it its end. */
extern atomic_bool rt_attach_on;
void rt_attach_register_self(struct rt_thread *t, pid_t creator, uint32_t index);
void rt_thread_adopt_key(struct rt_thread *t);
/* An exec of an attached process (exec.c, on the calling thread, before the image's end):
 * waits until syscope attach's thread is between two of its rounds of work and holds it
 * there, so that no chunk of it is claimed and left unwritten when the exec ends it;
 * rt_attach_exec_failed lets it go on. No-ops in a process not attached. */
void rt_attach_before_exec(void);
void rt_attach_exec_failed(void);

/* ---- plugin.c: run the stop hooks plugins registered (plugin.h) ---- */
void rt_plugins_stop(void);

/* ---- sources: see sources/source.h ---- */

#endif /* SYSCOPE_RUNTIME_RT_H */
