"""Python starting Python (tests/integration/test_python_frames.py): cpu_caller.py run by a
child interpreter through subprocess (fork and exec), then a little work of its own."""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
subprocess.run([sys.executable, os.path.join(here, "cpu_caller.py"), "20"], check=True)
print("spawn: done")
