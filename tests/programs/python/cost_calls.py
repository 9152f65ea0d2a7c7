"""Calls of known counts for test_python_cost.py: fib(N) (fib(20): 21 891 calls), tiny
30 000 times, sometimes_slow 20 000 times of which one (the 15 000th) sleeps 20 ms, all
under main. With `kill`: then a 1.2 s pause, 50 naps of 2 ms and SIGKILL, so that the
aggregated calls are only in what the process wrote while it ran.
Usage: cost_calls.py [N [kill]]"""
import sys
import time

SLOW_AT = 15000


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def tiny(i):
    return i + 1


def sometimes_slow(i):
    if i == SLOW_AT:
        time.sleep(0.02)
    return i


def pause():
    time.sleep(1.2)


def nap():
    time.sleep(0.002)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    print("fib", fib(n))
    s = 0
    for i in range(30000):
        s += tiny(i)
    for i in range(20000):
        s += sometimes_slow(i)
    print("sum", s, flush=True)
    if sys.argv[2:] == ["kill"]:
        import os  # here: importing signal runs <module> code of its own
        import signal
        pause()
        for _ in range(50):
            nap()
        os.kill(os.getpid(), signal.SIGKILL)


main()
