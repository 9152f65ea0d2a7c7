"""Calls of known counts for test_python_cost.py: fib(N) (fib(20): 21 891 calls), tiny
30 000 times, sometimes_slow 20 000 times of which one (the 15 000th) sleeps 20 ms, all
under main. Usage: cost_calls.py [N]"""
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


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    print("fib", fib(n))
    s = 0
    for i in range(30000):
        s += tiny(i)
    for i in range(20000):
        s += sometimes_slow(i)
    print("sum", s)


main()
