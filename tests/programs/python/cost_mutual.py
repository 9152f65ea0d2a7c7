"""For test_python_cost.py: mutual recursion a <-> b (fib's tree, a and b taking turns by
depth), both throttled deep inside the one outermost call of a, which then spins in a's own
code (no call): under sys.monitoring each is watched at its instructions for the other's
orphans while its own orphans run it, so the outermost a must end at its return, not at its
own next instruction. a(24, spin) makes 75 025 calls of a (itself included) and 75 024 of b.
Prints the outermost call's own duration."""
import time


def a(n, spin=0):
    r = n if n < 2 else b(n - 1) + b(n - 2)
    x = 0
    while x < spin:
        x += 1
    return r


def b(n):
    return n if n < 2 else a(n - 1) + a(n - 2)


def main():
    t0 = time.perf_counter()
    r = a(24, 1000000)
    t1 = time.perf_counter()
    print(f"r={r} a-seconds={t1 - t0:.6f}", flush=True)


main()
