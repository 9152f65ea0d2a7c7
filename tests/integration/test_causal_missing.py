"""syscope causal says what is missing when it cannot predict: a stripped program (no
function symbols, no line table) is refused before it runs, naming how to get symbols; a
program with no progress point gets a profile with no prediction and the line saying so."""
import os
import shutil
import subprocess

import harness
from harness import check, check_eq, fixture, syscope


def stripped_copy(name):
    if not shutil.which("strip"):
        raise harness.Skip("no strip(1)")
    path = os.path.join(harness.tempfile.mkdtemp(), name + "-stripped")
    subprocess.run(["strip", "-o", path, fixture(name)], check=True)
    return path


def test_stripped_program_is_refused_naming_the_remedy():
    program = stripped_copy("hot")
    for args, flag, what in (
            ([], "nothing to speed up", "has no function symbols (it is stripped): rebuild "
             "it without stripping (no -s, no strip; -g also gives the lines for -l), install "
             "its debug symbols (found by build id in /usr/lib/debug), or name a library "
             "that has them with --binary REGEX"),
            (["-l", "hot.c:12"], "--line", "has no line table (it was built without -g, or "
             "stripped): rebuild it with -g"),
            (["--progress", "main"], "--progress", "has no function symbols (it is stripped)")):
        r = syscope("causal", *args, "--", program, "0.1")
        check_eq(r.rc, 2, f"{args}: " + r.describe())
        check(f"causal: {flag}: {program} {what}" in r.err, f"{args}: {r.err}")
        check("hot: done" not in r.out, "refused before the program ran")


def test_program_without_progress_points_says_how_to_name_one():
    r = syscope("causal", "--", fixture("hot"), "0.4")
    check("hot: done" in r.out, r.describe())
    check("no prediction: the program passed no progress point (it has none in its source, "
          "such as COZ_PROGRESS, and --progress named none): name one with --progress "
          "FUNCTION or FILE:LINE (code run once per unit of work), or make each run one "
          "experiment with -e -n RUNS" in r.err, r.err)


harness.main(globals())
