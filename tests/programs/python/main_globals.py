"""What a script sees of how it was started: printed as JSON to compare with python's."""
import inspect
import json
import os
import sys

here = os.path.dirname(__file__)
os.chdir("/")
print(json.dumps({
    "__file__": __file__,
    "co_filename": sys._getframe().f_code.co_filename,
    "loader": [type(__loader__).__name__, __loader__.name, __loader__.path],
    "cached": __cached__,
    "spec": repr(__spec__),
    "stack": len(inspect.stack()),
    "path_head": sys.path[:2],
    "found_beside_after_chdir": os.path.exists(os.path.join(here, "main_globals.py")),
}))
