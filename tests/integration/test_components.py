"""The component table: the domain flags, `avail` and the settings agree on every token, and
the variables a data source sets in the program follow it across exec with a fresh
environment."""
import json
import os
import sys

import harness
from harness import Skip, check, check_eq, syscope


def avail_json(*args):
    r = syscope("avail", "--json", *args)
    check_eq(r.rc, 0, r.describe())
    return json.loads(r.out)


def setting_choices(name):
    rows = {row["environment"]: row for row in avail_json("-S")["settings"]}
    kind = rows["SYSCOPE_" + name]["type"]  # "list (a,b,c)"
    # "all" is a keyword of the flags and of some settings, not a domain.
    return set(kind[kind.index("(") + 1:kind.rindex(")")].split(",")) - {"all"}


def test_domain_tokens_are_the_settings_choices():
    flags = {row["flag"]: row for row in avail_json("--list-domains")["domains"]}
    check_eq(set(flags["--cuda"]["values"].split()), setting_choices("CUDA_DOMAINS"),
             "--cuda's tokens are CUDA_DOMAINS's choices, both ways")
    check_eq(set(flags["--gpu"]["values"].split()), setting_choices("NVML_METRICS"),
             "--gpu's tokens are NVML_METRICS's choices, both ways")
    for flag in ("--cuda", "--gpu", "--cpu"):
        check_eq(flags[flag]["state"], "", f"{flag} works in this version")
    check_eq(flags["--parallel"]["state"], "", "--parallel works in this version (nccl too)")


def test_every_token_is_accepted_and_lands_in_its_setting():
    flags = {row["flag"]: row for row in avail_json("--list-domains")["domains"]}
    for flag, setting in (("--cuda", "CUDA_DOMAINS"), ("--gpu", "NVML_METRICS")):
        for token in flags[flag]["values"].split():
            r = syscope("run", f"{flag}={token}", "--export-config")
            check_eq(r.rc, 0, r.describe())
            check_eq(json.loads(r.out)["settings"][setting], [token], f"{flag}={token}")
    r = syscope("run", "--cuda=kernels,bogus", "--", "true")
    check_eq(r.rc, 2, r.describe())
    check("unknown domain 'bogus'" in r.err and "valid: runtime" in r.err, r.err)


def test_components_listed_once_each():
    rows = [row["source"] for row in avail_json("-C")["components"]]
    check_eq(len(rows), len(set(rows)), f"no duplicates: {rows}")
    for name in ("mpi", "openmp", "nccl", "pthread"):
        check(name in rows, f"{name} in {rows}")


# A program that replaces its whole environment (Python's subprocess with env=..., a job
# launcher) and execs: the child must still have what CUDA tracing needs.
EXEC_FRESH = ("import os, sys; os.execve(sys.argv[1], [sys.argv[1]], {'ONLY': 'this'})")


def child_environment(*flags):
    env_prog = "/usr/bin/env"
    r = syscope("sample", *flags, "--", sys.executable, "-c", EXEC_FRESH, env_prog)
    check_eq(r.rc, 0, r.describe())
    return dict(line.split("=", 1) for line in r.out.splitlines() if "=" in line)


def test_cuda_environment_carried_across_exec():
    lib = os.path.join(harness.BUILD, "lib", "syscope", "libsyscope-cuda.so")
    if not os.path.exists(lib):
        raise Skip("this build has no CUPTI (libsyscope-cuda.so)")
    child = child_environment()
    check_eq(child.get("ONLY"), "this", "the program's own environment")
    check_eq(child.get("CUDA_INJECTION64_PATH"), lib, "the CUDA driver's injection path")
    check_eq(child.get("NVTX_INJECTION64_PATH"), lib, "NVTX's injection path")
    check(child.get("LD_PRELOAD", "").endswith("libsyscope.so"), child)
    child = child_environment("--no-cuda")
    check("CUDA_INJECTION64_PATH" not in child, "--no-cuda: nothing to carry")
    child = child_environment("--cuda=kernel")
    check("NVTX_INJECTION64_PATH" not in child and "CUDA_INJECTION64_PATH" in child,
          "without nvtx, only the CUDA path")


def test_not_following_children_carries_nothing():
    lib = os.path.join(harness.BUILD, "lib", "syscope", "libsyscope-cuda.so")
    if not os.path.exists(lib):
        raise Skip("this build has no CUPTI (libsyscope-cuda.so)")
    r = syscope("sample", "--no-follow-children", "--", sys.executable, "-c",
                "import os; os.execve('/usr/bin/env', ['env'], dict(os.environ))")
    check_eq(r.rc, 0, r.describe())
    child = dict(line.split("=", 1) for line in r.out.splitlines() if "=" in line)
    check("CUDA_INJECTION64_PATH" not in child and "LD_PRELOAD" not in child,
          f"a child that is not followed is not traced: {sorted(child)}")


if __name__ == "__main__":
    harness.main(globals())
