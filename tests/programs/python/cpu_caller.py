"""CPU-bound pure Python under a caller (tests/integration/test_python_frames.py): nearly all
the time is in leaf()'s loop, called from caller(). ROUNDS (argv[1]) sets the work."""
import sys


def leaf(n):
    total = 0
    for i in range(n):  # LEAF_FOR
        total += i * i  # LEAF_BODY
    return total


def caller(rounds):
    result = 0
    for _ in range(rounds):
        result += leaf(100000)  # CALLER_CALL
    return result


if __name__ == "__main__":
    print("cpu_caller:", caller(int(sys.argv[1]) if len(sys.argv) > 1 else 60) % 1000)
