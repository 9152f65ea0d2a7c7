"""For test_attach.py: a Python program started without syscope, spinning in py_hot() on its
main thread until a line "quit" (or the end) on stdin."""
import os
import sys
import threading

quit_now = threading.Event()


def py_hot(n):
    s = 0
    for i in range(n):
        s += i * i  # py_hot loop
    return s


def commands():
    for line in sys.stdin:
        if line.strip() == "quit":
            break
        print("ok " + line.strip(), flush=True)
    quit_now.set()


threading.Thread(target=commands, daemon=True).start()
print(f"pid={os.getpid()}", flush=True)
while not quit_now.is_set():
    py_hot(20000)
print("done", flush=True)
