"""Refusals name what the user typed: the flag as spelled (-d, --duration), the environment
variable, and for --interfaces the network interfaces this machine has."""
import harness
from harness import check, check_eq, fixture, syscope


def machine_interfaces():
    with open("/proc/net/dev") as f:
        return [line.split(":")[0].strip() for line in f if ":" in line]


def test_unknown_interface_is_named_with_the_valid_ones_before_the_run():
    # A warning, not a refusal: under mpirun or srun the program may run on hosts whose
    # interfaces this one lacks. The interfaces that exist are still recorded.
    have = machine_interfaces()
    r = syscope("run", "--host", "--interfaces", f"{have[0]},nosuch9", "--output-format",
                "json", "--", fixture("hot"), "0.2")
    check_eq(r.rc, 0, r.describe())
    check(f"--interfaces '{have[0]},nosuch9': this machine has no network interface "
          f"'nosuch9', so no track for it (valid: {', '.join(have)}, comma-separated; unset "
          f"for all of them)" in r.err, r.err)
    check(r.err.index("nosuch9") < r.err.index("process"), "said before the summary")
    counters = {c["name"] for c in r.metadata()["counters"]}
    check(f"net {have[0]} bytes in" in counters, sorted(counters))
    check(not any("nosuch9" in c for c in counters), sorted(counters))
    r = syscope("sample", "--", "/bin/true",
                env={"SYSCOPE_PROCESS_INTERFACES": "nosuch9,nosuch8"})
    check("SYSCOPE_PROCESS_INTERFACES 'nosuch9,nosuch8': this machine has no network "
          "interfaces 'nosuch9', 'nosuch8', so no track for them" in r.err, r.err)


def test_shorthand_flags_are_named_as_typed():
    cases = [
        (["-d", "-3"], "-d '-3' is not valid (valid: a number > 0 and <= 3.1536e+07 seconds)"),
        (["--duration=0"], "--duration '0' is not valid (valid: a number > 0"),
        (["-w", "soon"], "-w 'soon' is not valid (valid: a number from 0 to"),
        (["--wait", "soon"], "--wait 'soon' is not valid (valid: a number from 0 to"),
        (["--cpu=0"], "--cpu '0' is not valid (valid: a number > 0 and <= 100000 Hz)"),
        (["-f", "0"], "-f '0' is not valid (valid: a number > 0 and <= 100000 Hz)"),
        (["--sampling-freq", "0"], "--sampling-freq '0' is not valid"),
    ]
    for args, expected in cases:
        r = syscope("run", *args, "--", fixture("hot"), "0.1")
        check_eq(r.rc, 2, f"{args}: " + r.describe())
        check(expected in r.err, f"{args}: {r.err}")
        for setting in ("SAMPLING_DURATION", "SAMPLING_DELAY", "SAMPLING_FREQ"):
            check(setting not in r.err, f"{args}: names the setting, not the flag: {r.err}")
        check("hot: done" not in r.out, "program not started")


def test_lists_from_the_environment_name_the_variable():
    r = syscope("run", "--", fixture("hot"), "0.1", env={"SYSCOPE_PROCESS_CPUS": "zero"})
    check_eq(r.rc, 2, r.describe())
    check("SYSCOPE_PROCESS_CPUS 'zero' is not valid (valid: CPU ids and ranges of them from 0 "
          "to 1023, e.g. 0,2-5, or 'all')" in r.err, r.err)
    r = syscope("run", "-t", "x", "--", fixture("hot"), "0.1")
    check_eq(r.rc, 2, r.describe())
    check("-t 'x' is not valid" in r.err, r.err)


def test_rocprof_sys_variables_are_named_as_set():
    cases = [
        ({"ROCPROFSYS_SAMPLING_FREQ": "abc"},
         "environment: ROCPROFSYS_SAMPLING_FREQ 'abc' is not valid (valid: a number > 0 and "
         "<= 100000 Hz) (read as SYSCOPE_SAMPLING_FREQ)"),
        ({"ROCPROFSYS_SAMPLING_DURATION": "-1"},  # was ignored: only their 0 means "unset"
         "environment: ROCPROFSYS_SAMPLING_DURATION '-1' is not valid (valid: a number > 0"),
        ({"ROCPROFSYS_TRACE": "maybe"},  # was taken as false
         "environment: ROCPROFSYS_TRACE 'maybe' is not valid (valid: true or false; also "
         "1/0, on/off, yes/no)"),
    ]
    for env, expected in cases:
        r = syscope("run", "--", fixture("hot"), "0.1", env=env)
        check_eq(r.rc, 2, f"{env}: " + r.describe())
        check(expected in r.err, f"{env}: {r.err}")
        check("hot: done" not in r.out, "program not started")
    r = syscope("run", "--output-format", "json", "--", fixture("hot"), "0.1",
                env={"ROCPROFSYS_SAMPLING_DURATION": "0"})
    check_eq(r.rc, 0, "their 0 is 'until the end'\n" + r.describe())


def test_program_arguments_are_not_taken_for_the_flag():
    # "-d" after the program is the program's; the refusal names the --duration typed.
    r = syscope("run", "--duration=0", "/bin/ls", "-d")
    check_eq(r.rc, 2, r.describe())
    check("--duration '0' is not valid" in r.err, r.err)


harness.main(globals())
