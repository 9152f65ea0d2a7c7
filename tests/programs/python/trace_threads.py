"""Fixture of test_python_trace: threads named by Python, each calling work() 3 times."""
import threading


def work(k):
    return sum(range(k))


def run():
    for _ in range(3):
        work(1000)


threads = [threading.Thread(target=run, name=name) for name in ("alpha", "beta-worker")]
threads.append(threading.Thread(target=run))  # Python's default name, "Thread-1 (run)"
for t in threads:
    t.start()
for t in threads:
    t.join()
print("names", [t.name for t in threads])
