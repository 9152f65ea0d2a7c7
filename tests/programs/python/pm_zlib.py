"""zlib.compress under a Python function, for test_python_profiles.py: the native zlib
frames must show under compress_loop."""
import os
import sys
import time
import zlib


def compress_loop(data, seconds):
    # CPU time of this thread: a loaded machine gives the same samples, only later.
    end = time.thread_time() + seconds
    n = 0
    while time.thread_time() < end:
        n += len(zlib.compress(data, 9))  # COMPRESS-CALL
    return n


compress_loop(os.urandom(1 << 20), float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
