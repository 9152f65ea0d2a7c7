"""For test_python_cost.py: fib(22) (57 313 calls) is throttled deep inside its own outermost
call, so under sys.monitoring its calls in progress then end without their returns being
reported; then a 0.2 s sleep and a loop with no calls, which must not be in fib's time, and
fib(15) (1 973 calls), counted from its first call. Prints fib(22)'s own duration."""
import time


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def main():
    t0 = time.perf_counter()
    fib(22)
    t1 = time.perf_counter()
    time.sleep(0.2)
    x = 0
    while x < 200000:
        x += 1
    fib(15)
    print(f"fib-seconds={t1 - t0:.6f}", flush=True)


main()
