"""A multiprocessing pool (fork start method) of CPU-bound pure-Python work
(tests/integration/test_python_frames.py): each child runs square_sum()."""
import multiprocessing
import sys


def square_sum(n):
    total = 0
    for i in range(n):  # SQUARE_LOOP
        total += i * i
    return total


if __name__ == "__main__":
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    with multiprocessing.get_context("fork").Pool(2) as pool:
        print("pool:", sum(pool.map(square_sum, [400000] * jobs)) % 1000)
