"""Calls of known counts for test_python_cost.py's counted (untimed) calls: each hot function
is throttled while calls of it may be in progress, and leaves by return, by an exception and
(a generator) by yield. tiny 30 000 calls, raiser 30 000 (every 1 000th raises, 30 caught),
rec 2 000 x 11 = 22 000 (recursive: throttled inside its own calls), gen resumed 30 000 times,
skipped 30 000 (the one test_python_cost.py filters out), then after once; all under main."""


def tiny(i):
    return i + 1


def raiser(i):
    if i % 1000 == 999:
        raise ValueError(i)
    return i


def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)


def gen(n):
    for i in range(n):
        yield i


def skipped(i):
    return i


def after():
    return 1


def main():
    s = 0
    for i in range(30000):
        s += tiny(i)
    caught = 0
    for i in range(30000):
        try:
            s += raiser(i)
        except ValueError:
            caught += 1
    for _ in range(2000):
        s += rec(10)
    s += sum(gen(30000))
    for i in range(30000):
        s += skipped(i)
    s += after()
    print("caught", caught, "sum", s, flush=True)


main()
