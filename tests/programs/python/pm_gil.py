"""A thread starved by the GIL, for test_python_profiles.py: `spinner` runs pure Python and
holds the GIL; `ticker` sleeps briefly in a loop and must take the GIL back after each
sleep, so that it spends most of its time waiting for it."""
import sys
import threading
import time

stop = False


def spinner():
    x = 0
    while not stop:
        x += 1  # SPIN


def ticker():
    while not stop:
        time.sleep(0.0001)  # TICK


seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
threads = [threading.Thread(target=spinner, name="spinner"),
           threading.Thread(target=ticker, name="ticker")]
for t in threads:
    t.start()
time.sleep(seconds)
stop = True
for t in threads:
    t.join()
