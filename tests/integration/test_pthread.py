"""pthread tracing (--parallel=pthread): waits in mutexes, rwlocks, condition variables,
barriers and semaphores as regions of category "pthread" with the object's address, locks
that never block left out, thread creations and joins with the other thread, the threshold
--pthread-min-wait, and nothing of it without the flag. The fixture's waits are known: each
worker blocks for 50 ms on one object while the main thread holds it."""
import errno
import os
import re

import harness
from harness import check, check_eq, fixture, syscope

import pftrace

HOLD_NS = 40_000_000  # the fixture holds 50 ms; a loaded machine only makes waits longer
WORKERS = ["mutex", "rwlock", "cond", "barrier", "sem"]  # the fixture's phases, in order
WAITS = {"pthread_mutex_lock": "mutex", "pthread_rwlock_rdlock": "rwlock",
         "pthread_cond_wait": "cond", "pthread_barrier_wait": "barrier",
         "sem_wait": "semaphore"}


def run_fixture(*flags):
    r = syscope("sample", "--output-format", "pftrace", *flags, "--",
                fixture("pthread_waits"))
    check_eq(r.rc, 0, r.describe())
    addresses = {k: int(v, 16) for k, v in re.findall(r"^(\w+)=(0x[0-9a-f]+)$", r.out, re.M)}
    tids = [int(t) for t in re.findall(r"^worker tid=(\d+)$", r.out, re.M)]
    check_eq(len(tids), len(WORKERS), f"one worker per phase\n{r.out}")
    path = r.path(f"perfetto-trace-{r.main_pid()}.pftrace")
    check(os.path.exists(path), f"no trace in {r.files()}")
    with open(path, "rb") as f:
        t = pftrace.Trace(f.read())
    check_eq(t.errors, [], "trace problems")
    return r, addresses, dict(zip(WORKERS, tids)), t


def as_int(v):
    return int(v, 16) if isinstance(v, str) else v


def preloaded(r):
    """syscope's libraries in the program's LD_PRELOAD, in order."""
    value = r.metadata()["environment"].get("LD_PRELOAD", "")
    names = [os.path.basename(p) for p in value.split(":")]
    return [n for n in names if n.startswith("libsyscope")]


def pthread_slices(t):
    """(tid, name, start, end, args) of every slice of category pthread."""
    return [(t.thread_of(s[0]), s[1], s[3], s[4], s[5]) for s in t.slices if s[2] == "pthread"]


def waits_on(slices, name, address):
    arg = WAITS[name]
    return [s for s in slices if s[1] == name and as_int(s[4].get(arg)) == address]


def test_each_wait_is_one_region_on_its_waiter():
    r, addr, tids, t = run_fixture("--parallel=pthread")
    check_eq(preloaded(r), ["libsyscope.so", "libsyscope-pthread.so"], "the lock wrappers")
    slices = pthread_slices(t)
    for name, obj, phase in [("pthread_mutex_lock", "contended", "mutex"),
                             ("pthread_rwlock_rdlock", "rwlock", "rwlock"),
                             ("pthread_cond_wait", "cond", "cond"),
                             ("sem_wait", "sem", "sem")]:
        found = waits_on(slices, name, addr[obj])
        check_eq([s[0] for s in found], [tids[phase]], f"{name} on {obj}: one, on its waiter")
        check(found[0][3] - found[0][2] >= HOLD_NS, f"{name} waited {found[0][3] - found[0][2]} ns")
    barrier = waits_on(slices, "pthread_barrier_wait", addr["barrier"])
    long_ones = [s for s in barrier if s[3] - s[2] >= HOLD_NS]
    check_eq([s[0] for s in long_ones], [tids["barrier"]], "the worker waited at the barrier")
    check(len(barrier) <= 2, f"at most one wait per thread at the barrier: {barrier}")


def test_locks_that_do_not_block_are_not_recorded():
    # Threshold 0: any wait that was timed at all would be recorded; these never are.
    r, addr, tids, t = run_fixture("--parallel=pthread", "--pthread-min-wait=0")
    slices = pthread_slices(t)
    check_eq(waits_on(slices, "pthread_mutex_lock", addr["uncontended"]), [], "free mutex")
    check_eq(waits_on(slices, "pthread_mutex_lock", addr["recursive"]), [], "recursive relock")
    check_eq(waits_on(slices, "pthread_rwlock_rdlock", addr["free_rwlock"]), [], "free rwlock")
    check_eq(waits_on(slices, "sem_wait", addr["free_sem"]), [], "semaphore with a count")
    check_eq(len(waits_on(slices, "pthread_mutex_lock", addr["contended"])), 1, "contended")
    # Their results are the C library's: a recursive relock succeeds, an error-checking
    # one says EDEADLK.
    check("recursive relock: 0 0\n" in r.out, r.out)
    check("errorcheck relock: 0 EDEADLK\n" in r.out, r.out)
    check("robust after its owner ended: EOWNERDEAD\n" in r.out, r.out)
    check_eq(waits_on(slices, "pthread_mutex_lock", addr["robust"]), [], "robust: not a wait")


def test_a_wait_that_times_out_says_so():
    r, addr, tids, t = run_fixture("--parallel=pthread")
    check("timedlock of a held mutex: ETIMEDOUT\n" in r.out, r.out)
    found = [s for s in pthread_slices(t) if s[1] == "pthread_mutex_timedlock"]
    check_eq([(s[0], as_int(s[4]["mutex"]), s[4].get("error")) for s in found],
             [(r.main_pid(), addr["timed"], errno.ETIMEDOUT)], "one timed-out wait, on main")
    check(found[0][3] - found[0][2] >= 15_000_000, "it waited for its deadline (20 ms)")


def test_creations_and_joins_name_the_other_thread():
    r, addr, tids, t = run_fixture("--parallel=pthread")
    pid = r.main_pid()
    slices = pthread_slices(t)
    creates = sorted((s for s in slices if s[1] == "pthread_create"), key=lambda s: s[2])
    joins = sorted((s for s in slices if s[1] == "pthread_join"), key=lambda s: s[2])
    # The five phases' workers, then the robust mutex's owner.
    check_eq([s[0] for s in creates], [pid] * 6, "the main thread created 6")
    check_eq([s[0] for s in joins], [pid] * 6, "the main thread joined 6")
    check_eq([s[4]["thread"] for s in joins[:5]], [tids[p] for p in WORKERS],
             "each join names the thread it waited for")
    check_eq([s[4]["thread_index"] for s in joins], [s[4]["thread_index"] for s in creates],
             "joined in the order created")
    starts = {t.thread_of(i[0]): i[4] for i in t.instants
              if i[2] == "pthread" and i[1] == "thread start"}
    check_eq(len(starts), 6, "a start mark on each thread made")
    check(set(tids.values()) <= set(starts), "on each worker")
    by_index = {m["thread_index"]: tid for tid, m in starts.items()}
    check_eq([s[4]["thread"] for s in joins], [by_index[s[4]["thread_index"]] for s in joins],
             "each join's thread is the one of that creation index (handles are reused)")
    for phase, create, join in zip(WORKERS, creates, joins):
        start = starts[tids[phase]]
        check_eq(start["created_by"], pid, f"{phase} worker made by the main thread")
        check_eq(start["thread_index"], create[4]["thread_index"], f"{phase}: its creation")
        check(create[3] <= join[2], f"{phase}: joined after created")
    # In Perfetto, an arrow from each creation to the start of the thread it made.
    check_eq(sorted((src, dst) for _f, src, dst in t.flows),
             [("pthread_create", "thread start")] * 6, "a flow per thread made")
    check_eq(len({f for f, _src, _dst in t.flows}), 6, "flows of their own")
    # The phase's wait sits between its worker's creation and join.
    wait = waits_on(slices, "pthread_mutex_lock", addr["contended"])[0]
    check(creates[0][2] <= wait[2] and wait[3] <= joins[0][3], "mutex wait inside its phase")


def test_threshold_leaves_out_shorter_waits():
    r, addr, tids, t = run_fixture("--parallel=pthread", "--pthread-min-wait=1s")
    names = sorted({s[1] for s in pthread_slices(t)})
    check_eq(names, ["pthread_create", "pthread_join"], "no wait lasts 1 s")
    setting = [s for s in r.metadata()["settings"] if s["name"] == "PTHREAD_MIN_WAIT"]
    check_eq([(s["value"], s["source"]) for s in setting], [("1s", "command line")],
             "the threshold in the metadata")


def test_off_without_the_flag():
    r, addr, tids, t = run_fixture()
    # Not even wrapped: the lock wrappers' library is preloaded only with the flag.
    check_eq(preloaded(r), ["libsyscope.so"], "no lock wrappers without --parallel=pthread")
    check_eq(pthread_slices(t), [], "no pthread regions without --parallel=pthread")
    check_eq([i for i in t.instants if i[2] == "pthread"], [], "no pthread marks")
    check("recursive relock: 0 0\n" in r.out, r.out)


def test_bad_threshold_is_refused_with_what_is_valid():
    r = syscope("sample", "--parallel=pthread", "--pthread-min-wait=soon", "--",
                fixture("pthread_waits"))
    check(r.rc != 0, r.describe())
    check("pthread-min-wait" in r.err and "soon" in r.err, r.err)
    check("valid: a number from 0 to 3600 seconds" in r.err, f"says what is valid: {r.err}")


def test_a_forked_and_exec_child_keeps_the_wrappers():
    r = syscope("sample", "--parallel=pthread", "--", fixture("fork_exec"),
                fixture("exec_child"))
    check_eq(r.rc, 0, r.describe())
    check_eq(len(r.pids()), 2, "parent and child")
    for pid in r.pids():
        md = r.metadata(pid)
        libs = [os.path.basename(p) for p in md["environment"]["LD_PRELOAD"].split(":")]
        check_eq([n for n in libs if n.startswith("libsyscope")],
                 ["libsyscope.so", "libsyscope-pthread.so"], f"process {pid}")
        check_eq([s["value"] for s in md["settings"] if s["name"] == "USE_PTHREAD"], ["true"],
                 f"process {pid} traces")


def test_avail_says_the_wrappers_are_there():
    r = syscope("avail", "-C")
    check_eq(r.rc, 0, r.describe())
    row = [line for line in r.out.splitlines() if line.startswith("| pthread ")]
    check_eq(len(row), 1, r.out)
    check("| yes " in row[0] and "libsyscope-pthread.so" in row[0], row[0])


harness.main(globals())
