"""For test_python_cost.py's throttle rule: down(199) 500 times (100 000 calls of down, a
chain 200 deep): each call's inclusive time holds the calls below it (about 100 calls' worth
on average), its own time is one call's, so down is throttled by its own time whatever the
load, and never by its mean inclusive time."""


def down(n):
    return 0 if n == 0 else 1 + down(n - 1)


def main():
    s = 0
    for _ in range(500):
        s += down(199)
    print(f"sum {s}", flush=True)


main()
