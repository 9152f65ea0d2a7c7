"""C extensions under syscope, for test_python_extensions.py: numpy's sort (its C code in
_multiarray_umath) under sort_rows, then a YAML and an XML round trip through libyaml's and
libxml2's bindings. The output is one line the test compares with the plain run's, and the
exit status is 3 so that the test sees it passed through."""
import sys
import time

import numpy as np
import yaml
from lxml import etree


def sort_rows(seconds):
    # CPU time of this thread: a loaded machine gives the same samples, only later.
    a = np.arange(300 * 300, dtype=np.float64)[::-1].reshape(300, 300).copy()
    end = time.thread_time() + seconds
    total = 0
    while time.thread_time() < end:
        total += int(np.sort(a, axis=1)[:, 0].sum() > 0)  # SORT-CALL
    return total > 0


def yaml_round_trip():
    doc = {f"k{i}": [i, str(i), {"x": i}] for i in range(300)}
    return len(yaml.safe_load(yaml.safe_dump(doc)))


def xml_round_trip():
    root = etree.Element("root")
    for i in range(2000):
        etree.SubElement(root, "item", n=str(i)).text = f"v{i}"
    return len(etree.fromstring(etree.tostring(root)).findall("item"))


ok = sort_rows(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
print(f"sorted={ok} yaml={yaml_round_trip()} xml={xml_round_trip()} "
      f"sum={int(np.arange(1000).sum())}")
sys.exit(3)
