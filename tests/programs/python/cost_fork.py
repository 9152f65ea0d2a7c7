"""A fork child after a throttled function's returns were turned off in the parent, for
test_python_cost.py: tiny is called 30 000 times in the parent (counted, its returns off on
3.12+), then the child calls tiny 30 000 times and leaf 200 times under child_main; the
parent waits for it. Exact counts in the child's profile show its exits paired right."""
import os


def tiny(i):
    return i + 1


def leaf(i):
    return i * 2


def child_main():
    s = 0
    for i in range(30000):
        s += tiny(i)
    for i in range(200):
        s += leaf(i)
    print("child", s, flush=True)


def main():
    s = 0
    for i in range(30000):
        s += tiny(i)
    pid = os.fork()
    if pid == 0:
        child_main()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("parent", s, "child status", status, flush=True)


main()
