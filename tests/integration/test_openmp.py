"""OpenMP tracing (--parallel=openmp): tests/programs/omp_team.c built with gcc (libgomp, whose
entry points syscope wraps) and with clang (libomp, through OMPT) gives the same regions,
counted exactly from the raw records: parallel regions, each member's implicit task with its
team id, explicit barriers, the dynamic loop with its iterations, 8 explicit tasks, taskwait,
critical sections; and the wall_clock profile sums their time."""
import os
import struct

import harness
from harness import Skip, calls_of, check, check_eq, children, count, fixture, syscope

import rawdump
import records

TEAM, ROUNDS, ITERATIONS, TASKS = 4, 3, 1000, 8
ANSWER = (f"members {TEAM * ROUNDS} iterations {ITERATIONS} tasks {TASKS} critical {TEAM} "
          f"locked {TEAM}")
REGIONS = ROUNDS + 3  # parallel regions in the fixture
QUIET = {"OMP_WAIT_POLICY": "passive"}  # 4 threads on 2 loaded cores: do not spin


def program(compiler):
    path = fixture(f"omp_team_{compiler}")
    if not os.path.exists(path):
        why = f"{path} not built (clang -fopenmp needs clang and libomp-dev)"
        if os.environ.get("CI") == "true":
            raise AssertionError(why)
        raise Skip(why)
    return path


def region_fields(payload):
    """(name, category, {arg: value}) of a REGION_BEGIN payload (struct sc_rec_region)."""
    _ts, name_len, cat_len, args_len, nargs, _corr = struct.unpack_from("<QIIIIQ", payload, 0)
    text = payload[32:32 + name_len + cat_len + args_len]
    name = text[:name_len - 1].decode()
    cat = text[name_len:name_len + cat_len - 1].decode()
    parts = text[name_len + cat_len:].split(b"\0")
    args = {parts[3 * i + 1].decode(): parts[3 * i + 2].decode() for i in range(nargs)}
    return name, cat, args


def openmp_regions(r):
    """Every region of category openmp: (tid, name, args, parent name or None). An OMP_REGION
    record may carry its end and then comes before what it contains: parents are found by
    time, the innermost region of the thread around each one."""
    found = []
    for path in r.raw_files():
        with open(path, "rb") as f:
            data = f.read()
        spans, stacks = [], {}
        for tid, rtype, _flags, payload in rawdump.records(data):
            stack = stacks.setdefault(tid, [])
            if rtype == records.REGION_BEGIN:
                name, cat, args = region_fields(payload)
                ts, = struct.unpack_from("<Q", payload, 0)
                stack.append([tid, ts, None, name, args, cat == "openmp"])
                spans.append(stack[-1])
            elif rtype == records.OMP_BEGIN:  # the compact begin: numeric arguments only
                ts, name, args = records.decode_omp_begin(_flags, payload)
                stack.append([tid, ts, None, name, args, True])
                spans.append(stack[-1])
            elif rtype == records.OMP_REGION:  # compact, its end in it unless 0
                for ts, end, name, args in records.decode_omp_regions(_flags, payload):
                    spans.append([tid, ts, end or None, name, args, True])
                    if not end:
                        stack.append(spans[-1])  # ended by a REGION_END
            elif rtype == records.REGION_END and stack:
                stack.pop()[2], = struct.unpack_from("<Q", payload, 0)
        for i, (tid, start, end, name, args, omp) in enumerate(spans):
            if omp:
                found.append((tid, name, args, parent_of(spans, i)))
    return found


def parent_of(spans, i):
    """The name of the innermost span of spans[i]'s thread around it (an earlier one when
    both have the same times), or None."""
    tid, start, end = spans[i][:3]
    end = end if end is not None else float("inf")
    best = None
    for j, (t, s, e, name, _args, _omp) in enumerate(spans):
        e = e if e is not None else float("inf")
        if j == i or t != tid or not (s <= start and end <= e):
            continue
        if (s, e) == (start, end) and j > i:
            continue  # the same times: the later one is inside
        if best is None or (s, -e, j) > (best[0], -best[1], best[2]):
            best = (s, e, j, name)
    return best[3] if best else None


def named(regions, name):
    return [x for x in regions if x[1] == name]


def check_program(compiler):
    r = syscope("sample", "--parallel=openmp", "--output-format", "json", "--",
                program(compiler), env=QUIET)
    check_eq(r.rc, 0, r.describe())
    check(ANSWER in r.out, f"the program's answers unchanged: {r.describe()}")
    check_eq("openmp: OMPT tool started" in r.err, compiler == "clang",
             f"{compiler}: OMPT only with libomp: {r.err}")
    regions = openmp_regions(r)
    par = named(regions, "omp parallel")
    check_eq(len(par), REGIONS, f"{compiler}: parallel regions")
    check_eq({x[2]["requested"] for x in par}, {str(TEAM)}, "requested team size")
    tasks = named(regions, "omp implicit task")
    check_eq(len(tasks), REGIONS * TEAM, f"{compiler}: an implicit task per member")
    check_eq(sorted(int(x[2]["thread"]) for x in tasks),
             sorted(list(range(TEAM)) * REGIONS), "team member ids 0..3 in each region")
    check_eq({x[2]["team"] for x in tasks}, {str(TEAM)}, "team size on each member")
    masters = [x for x in tasks if x[2]["thread"] == "0"]
    check_eq({x[3] for x in masters}, {"omp parallel"},
             "the master's implicit task nests in its parallel region")
    check_eq(len({x[0] for x in tasks}), TEAM, "the team is 4 threads")
    barriers = named(regions, "omp barrier")
    check_eq(len(barriers), ROUNDS * TEAM, f"{compiler}: explicit barriers, one per member")
    check_eq({x[3] for x in barriers}, {"omp implicit task"}, "barriers inside the tasks")
    loops = named(regions, "omp loop")
    check_eq(len(loops), TEAM, f"{compiler}: the loop on each member")
    check_eq({x[2]["iterations"] for x in loops}, {str(ITERATIONS)}, "its iterations")
    explicit = named(regions, "omp task")
    check_eq(len(explicit), TASKS, f"{compiler}: explicit tasks run")
    check_eq(len(named(regions, "omp taskwait")), 1, f"{compiler}: one taskwait")
    critical = named(regions, "omp critical")
    check_eq(len(critical), TEAM, f"{compiler}: a critical section per member")
    waits = named(regions, "omp critical wait")
    check_eq((len(waits), {x[3] for x in waits}), (TEAM, {"omp critical"}),
             "each critical section's wait inside it")
    locks, waits = named(regions, "omp lock"), named(regions, "omp lock wait")
    check_eq((len(locks), len(waits), {x[3] for x in waits}), (TEAM, TEAM, {"omp lock"}),
             f"{compiler}: a lock taken per member, its wait inside")
    implicit = named(regions, "omp implicit barrier")
    check_eq((len(implicit), {x[3] for x in implicit}), (REGIONS * TEAM, {"omp implicit task"}),
             f"{compiler}: each member's implicit barrier at the end of its task")
    return r


def test_gcc_libgomp_regions():
    check_program("gcc")


def test_clang_libomp_ompt_regions():
    check_program("clang")


def pragma_lines():
    """Lines of omp_team.c's parallel constructs, in order: rounds, loop, tasks, critical."""
    path = os.path.join(harness.SOURCE, "tests", "programs", "omp_team.c")
    with open(path) as f:
        return [n for n, line in enumerate(f, 1) if line.startswith("#pragma omp parallel")]


def test_profile_sums_parallel_regions_and_barriers():
    # Each parallel construct is named after its code, so the profile sums them apart.
    r = check_program("gcc")
    funcs = {f["name"]: f for f in r.profile("wall_clock").meta["functions"]}
    constructs = {}
    for name, f in funcs.items():
        if name.startswith("omp parallel @ main"):
            line = int(name.rsplit("[omp_team.c:", 1)[1].rstrip("]"))
            constructs[line] = f["calls"]
    rounds, loop, tasks, critical = pragma_lines()
    check_eq(constructs, {rounds: ROUNDS, loop: 1, tasks: 1, critical: 1},
             f"calls per parallel construct, by its line: {sorted(funcs)}")
    for name, calls in (("omp barrier", ROUNDS * TEAM), ("omp implicit task", REGIONS * TEAM),
                        ("omp implicit barrier", REGIONS * TEAM)):
        check(name in funcs, f"{name} in the wall_clock profile: {sorted(funcs)}")
        check_eq(funcs[name]["calls"], calls, f"{name}: calls summed")
        check(funcs[name]["inclusive"] > 0, f"{name}: its time summed: {funcs[name]}")
    check(funcs["omp implicit task"]["inclusive"] >= funcs["omp barrier"]["inclusive"],
          "barriers are inside the implicit tasks: their time is part of the tasks'")


def test_clang_parallel_regions_named_by_their_caller():
    r = check_program("clang")
    funcs = calls_of(r.profile("wall_clock"))
    named_par = {n: c for n, c in funcs.items() if n.startswith("omp parallel")}
    check_eq(sum(named_par.values()), REGIONS, f"parallel regions: {named_par}")
    check(all(n.startswith("omp parallel @ main") for n in named_par),
          f"named after the function that starts them: {named_par}")


def test_regions_nest_under_instrumented_functions():
    # Built with -finstrument-functions: main's parallel regions are inside main, each
    # explicit task's call of work() inside the task, on whichever thread ran it.
    r = syscope("sample", "--parallel=openmp", "--output-format", "json", "--",
                fixture("omp_team_hooks"), env=QUIET)
    check_eq(r.rc, 0, r.describe())
    check(ANSWER in r.out, r.describe())
    trees = r.profile("wall_clock").thread_trees()
    main = children(children(trees[0])["main"])
    parallel = {n: c for n, c in main.items() if n.startswith("omp parallel @ main._omp_fn")}
    check_eq(sum(count(c) for c in parallel.values()), REGIONS, "parallel regions under main")
    rounds = [c for n, c in parallel.items() if n.endswith(f":{pragma_lines()[0]}]")]
    check_eq(len(rounds), 1, f"the rounds' construct: {sorted(parallel)}")
    task = children(rounds[0])["omp implicit task"]
    check_eq(count(task), ROUNDS, "the master's implicit tasks in them")
    check_eq(count(children(task)["work"]), ROUNDS, "work() of the rounds in the tasks")
    in_tasks = 0
    for root in trees.values():
        def walk(node):
            nonlocal in_tasks
            kids = children(node)
            if node["node"]["name"] == "omp task" and "work" in kids:
                in_tasks += count(kids["work"])
            for kid in kids.values():
                walk(kid)
        walk(root)
    check_eq(in_tasks, TASKS, "each explicit task's work() inside it")


def test_nested_teams():
    for compiler in ("gcc", "clang"):
        path = program(compiler).replace("omp_team_", "omp_nested_")
        r = syscope("sample", "--parallel=openmp", "--output-format", "json", "--", path,
                    env=QUIET)
        check_eq(r.rc, 0, r.describe())
        check("inner members 4" in r.out, r.describe())
        regions = openmp_regions(r)
        par = named(regions, "omp parallel")
        check_eq(sorted(str(x[3]) for x in par), ["None", "omp implicit task",
                                                  "omp implicit task"],
                 f"{compiler}: each outer member's inner region inside its implicit task")
        tasks = named(regions, "omp implicit task")
        check_eq(sorted(x[2]["thread"] for x in tasks), ["0", "0", "0", "1", "1", "1"],
                 f"{compiler}: team ids in the outer team and both inner ones")
        check_eq(len(named(regions, "omp barrier")), 4, f"{compiler}: inner barriers")


def test_libgomp_loaded_rtld_local():
    # As Python loads PyTorch: libgomp in no global scope, its callers still reach the
    # wrappers, which must find it in the caller's scope (this crashed before), traced or not.
    lib = fixture("libomp_lib.so")
    for flags in ((), ("--parallel=openmp",)):
        r = syscope("sample", *flags, "--output-format", "json", "--", fixture("omp_dlopen"),
                    lib, env=QUIET)
        check_eq(r.rc, 0, r.describe())
        check("members 2 2" in r.out, r.describe())
        regions = openmp_regions(r)
        check_eq((len(named(regions, "omp parallel")), len(named(regions, "omp implicit task"))),
                 (2, 4) if flags else (0, 0), f"{flags}: regions of the library's teams")


def test_sections():
    for compiler in ("gcc", "clang"):
        path = program(compiler).replace("omp_team_", "omp_sections_")
        r = syscope("sample", "--parallel=openmp", "--output-format", "json", "--", path,
                    env=QUIET)
        check_eq(r.rc, 0, r.describe())
        check("sections 1 2 3 4" in r.out, r.describe())
        regions = openmp_regions(r)
        counts = [len(named(regions, n)) for n in ("omp parallel", "omp implicit task",
                                                    "omp sections")]
        check_eq(counts, [2, 4, 4], f"{compiler}: parallel regions, tasks, sections")
        check_eq({x[3] for x in named(regions, "omp sections")}, {"omp implicit task"},
                 f"{compiler}: each member's sections inside its task")


def test_ordered_loop():
    for compiler in ("gcc", "clang"):
        path = program(compiler).replace("omp_team_", "omp_ordered_")
        r = syscope("sample", "--parallel=openmp", "--output-format", "json", "--", path,
                    env=QUIET)
        check_eq(r.rc, 0, r.describe())
        check("ordered 16" in r.out, r.describe())
        regions = openmp_regions(r)
        counts = [len(named(regions, n)) for n in ("omp parallel", "omp loop", "omp ordered",
                                                    "omp ordered wait")]
        check_eq(counts, [1, 2, 16, 16], f"{compiler}: parallel, loops, ordered blocks, waits")
        check_eq({x[3] for x in named(regions, "omp ordered")}, {"omp loop"},
                 f"{compiler}: ordered blocks inside the loop")


def test_taskloop():
    for compiler in ("gcc", "clang"):
        path = program(compiler).replace("omp_team_", "omp_taskloop_")
        r = syscope("sample", "--parallel=openmp", "--output-format", "json", "--", path,
                    env=QUIET)
        check_eq(r.rc, 0, r.describe())
        check("taskloop 4950" in r.out, r.describe())
        loops = named(openmp_regions(r), "omp taskloop")
        check_eq([x[2]["iterations"] for x in loops], ["100"],
                 f"{compiler}: one taskloop of 100 iterations")


def test_off_by_default_and_without_openmp():
    r = syscope("sample", "--output-format", "json", "--", program("gcc"), env=QUIET)
    check_eq(r.rc, 0, r.describe())
    check(ANSWER in r.out, r.describe())
    check_eq(openmp_regions(r), [], "no OpenMP regions unless asked for")
    check(b"/libgomp.so" in raw_bytes(r), "the modules recorded include the program's libgomp")
    r = syscope("sample", "--parallel=openmp", "--output-format", "json", "--",
                fixture("hot"), "0.2", env=QUIET)
    check_eq(r.rc, 0, r.describe())
    check_eq(openmp_regions(r), [], "a program without OpenMP: nothing")
    raw = raw_bytes(r)
    check(b"/libgomp.so" not in raw and b"/libomp.so" not in raw,
          "syscope loads no OpenMP runtime into a program without OpenMP")


def raw_bytes(r):
    data = b""
    for path in r.raw_files():
        with open(path, "rb") as f:
            data += f.read()
    return data


if __name__ == "__main__":
    harness.main(globals())
