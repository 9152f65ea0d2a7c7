"""Recursion deeper than the C stack allows when every Python call is a C call (stack_guard.c)."""
import sys
sys.setrecursionlimit(100000)
def down(n):
    return 0 if n == 0 else 1 + down(n - 1)
try:
    print("depth", down(50000))
except RecursionError as e:
    print("RecursionError:", e)
print("after", down(100))
