"""For test_python_cost.py: outer's code is watched twice for orphans. rec1(22) is throttled
inside its own calls first (outer watched at its instructions, which then turn off place by
place as outer runs them), then the same call site runs rec2(5) (15 calls, timed) and a spin,
and rec2(22) (57 313 calls), throttled inside its calls: its outermost call returns to a
place of outer already run, so outer's places must be turned on again, or rec2's call ends
after the second spin. Prints rec2's own time and the second spin's."""
import time


def rec1(n):
    return n if n < 2 else rec1(n - 1) + rec1(n - 2)


def rec2(n):
    return n if n < 2 else rec2(n - 1) + rec2(n - 2)


def outer():
    rec1(22)
    own = spun = 0.0
    for n in (5, 22):
        t0 = time.perf_counter()
        rec2(n)
        t1 = time.perf_counter()
        x = 0
        while x < 1000000:
            x += 1
        own += t1 - t0
        spun = time.perf_counter() - t1
    print(f"rec2-seconds={own:.6f} spin-seconds={spun:.6f}", flush=True)


outer()
