"""A thread inside zlib.compress (which releases the GIL) beside a CPU-bound pure-Python main
thread that holds it (tests/integration/test_python_frames.py). Both do a fixed amount of
work; the main thread spins until the compressor is done, so the two overlap."""
import os
import sys
import threading
import zlib

done = threading.Event()


def compress_loop(rounds):
    data = os.urandom(1 << 18) * 8
    for _ in range(rounds):
        zlib.compress(data, 6)  # COMPRESS_CALL
    done.set()


def spin():
    n = 0
    while not done.is_set():
        for i in range(2000):  # SPIN_LOOP
            n += i
    return n


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    t = threading.Thread(target=compress_loop, args=(rounds,), name="compressor")
    t.start()
    spin()
    t.join()
    print("gil_threads: done")
