"""For test_attach_wrap.py: a Python program started without syscope whose threads contend
for one threading.Lock (a semaphore of the C library in CPython on Linux). Prints "pid=N";
"contend N" makes two threads take the lock N times each, holding it 3 ms each time, and
answers "contend tids=A,B"; "quit" ends it."""
import os
import sys
import threading
import time

lock = threading.Lock()


def contender(n, tids, i):
    tids[i] = threading.get_native_id()
    for _ in range(n):
        with lock:
            time.sleep(0.003)


print(f"pid={os.getpid()}", flush=True)
for line in sys.stdin:
    if line.startswith("contend "):
        tids = [0, 0]
        threads = [threading.Thread(target=contender, args=(int(line.split()[1]), tids, i))
                   for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(f"contend tids={tids[0]},{tids[1]}", flush=True)
    elif line.startswith("quit"):
        break
