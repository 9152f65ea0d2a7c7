"""Fixture of test_python_trace: Python calls whose counts are known exactly.

fib(N) makes 2*fib(N+1)-1 calls (1973 for N=15); catches(7) calls fails 7 times, each
raising; deep(9) raises through 10 frames; consume(5) resumes the generator countdown 6
times (5 values, then its end)."""
import sys


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Boom(Exception):
    pass


def fails(i):
    raise Boom(i)


def catches(k):
    caught = 0
    for i in range(k):
        try:
            fails(i)
        except Boom:
            caught += 1
    return caught


def deep(n):
    if n == 0:
        raise Boom("bottom")
    deep(n - 1)


def countdown(n):
    while n:
        yield n
        n -= 1


def consume(n):
    total = 0
    for v in countdown(n):
        total += v
    return total


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    print("argv", sys.argv)
    print("path0", sys.path[0])
    print("dev", sys.flags.dev_mode)
    print("name", __name__, "file", __file__ if "__file__" in globals() else None)
    print("fib", fib(n))
    print("caught", catches(7))
    try:
        deep(9)
    except Boom:
        print("deep raised")
    print("consumed", consume(5))


if __name__ == "__main__":
    main()
