"""A CPU-bound script with known lines, for test_python_profiles.py: main calls outer,
outer calls leaf, leaf spins on its loop line (marked)."""
import sys


def leaf(n):
    total = 0
    for i in range(n):
        total += i * i  # LEAF-LOOP
    return total


def outer(rounds):
    s = 0
    for _ in range(rounds):
        s += leaf(20000)  # OUTER-CALL
    return s


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    import time
    # CPU time of this thread: a loaded machine gives the same samples, only later.
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        outer(10)


main()
