"""Three Python threads, each running its own function for a fixed amount of work
(tests/integration/test_python_frames.py)."""
import threading


def work_a(n):
    s = 0
    for i in range(n):
        s += i
    return s


def work_b(n):
    s = 0
    for i in range(n):
        s += i * 2
    return s


def work_c(n):
    s = 0
    for i in range(n):
        s += i * 3
    return s


if __name__ == "__main__":
    threads = [threading.Thread(target=f, args=(1500000,), name=f.__name__)
               for f in (work_a, work_b, work_c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("threads: done")
