"""Outputs that cannot be written (issue: known defects, item 2): a run whose program
succeeds but whose outputs fail (here a file size limit, as a full disk would) names the
output and its error, exits 1, keeps the raw session and says how to retry; `syscope convert
SESSION` then builds the outputs once they fit. The limit (ulimit -f, SIGXFSZ ignored so a
write past it fails with EFBIG) is above the raw file of a short run and below its rocpd
database."""
import glob
import json
import os
import re
import subprocess
import tempfile

import harness
from harness import SYSCOPE, Profile, check, check_eq, fixture


def test_outputs_that_cannot_be_written_fail_the_run_and_keep_raw():
    work = tempfile.mkdtemp(prefix="syscope-it-")
    harness._workdirs.append(work)  # removed when the tests pass
    out = os.path.join(work, "out")
    script = (f"trap '' XFSZ; ulimit -f 120; exec {SYSCOPE} sample --output-format 'rocpd json'"
              f" -o {out} -- {fixture('hot')} 0.3")
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300)
    what = f"rc={r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    check_eq(r.returncode, 1, "the program succeeded, its outputs did not\n" + what)
    check("hot: done" in r.stdout, what)
    (session,) = glob.glob(os.path.join(out, "*"))
    check(f"error: cannot write {session}/rocpd-" in r.stderr, "the output named\n" + what)
    # The cause, not SQLite's "disk I/O error".
    check(re.search(r"cannot write \S+/rocpd-\d+\.db: the file size limit \(ulimit -f\) was "
                    r"reached", r.stderr), "the limit named as the cause\n" + what)
    check("disk I/O error" not in r.stderr, what)
    check(os.path.isdir(os.path.join(session, "raw")), "raw/ kept\n" + what)
    check(f"'syscope convert {session}' retries" in r.stderr, what)
    c = subprocess.run([SYSCOPE, "convert", session], capture_output=True, text=True,
                       timeout=300)
    check_eq(c.returncode, 0, c.stderr)
    check(glob.glob(os.path.join(session, "rocpd-*.db")), "the database, this time\n" + c.stderr)
    (path,) = glob.glob(os.path.join(session, "sampling_cpu_clock-*.json"))
    p = Profile(path)
    check(p.self_samples("hot_loop") > 0, f"the retry has the samples: {p.function_names()}")


def test_a_file_size_limit_never_kills_the_program():
    # Item 3: under ulimit -f (SIGXFSZ at its default, which kills) the recorder's own file
    # meets the limit; the program must run and end as it does alone, and the loss is said.
    work = tempfile.mkdtemp(prefix="syscope-it-")
    harness._workdirs.append(work)

    def under_limit(*cmd):
        script = "ulimit -f 40; exec " + " ".join(cmd)
        return subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                              timeout=300, cwd=work)
    alone = under_limit(fixture("hot"), "0.5")
    r = under_limit(SYSCOPE, "sample", "--output-format", "json", "-o", "out", "--",
                    fixture("hot"), "0.5")
    what = f"rc={r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    check_eq((r.returncode, r.stdout), (alone.returncode, alone.stdout),
             "status and output as without syscope\n" + what)
    check("killed by signal" not in r.stderr, what)
    m = re.search(r"LOST (\d+) records \(\d+ bytes\): (\d+) because the file size limit "
                  r"\(ulimit -f\) was reached\n", r.stderr)
    check(m, "the records past the limit counted, the limit named\n" + what)
    check_eq(m.group(1), m.group(2), "every loss is the limit's\n" + what)
    check("disk was full" not in r.stderr, what)
    (meta,) = glob.glob(os.path.join(work, "out", "*", "metadata-*.json"))
    (losses,) = [img["losses"] for img in json.load(open(meta))["images"]]
    check_eq(losses.get("disk_full_cause"), "the file size limit (ulimit -f) was reached",
             f"the metadata names the limit: {losses}")


if __name__ == "__main__":
    harness.main(globals())
