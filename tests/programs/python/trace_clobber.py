"""Fixture of test_python_trace: the program puts CPython's own frame evaluator back in
place of syscope's (as a debugger or JIT might) between two calls of f."""
import ctypes

api = ctypes.PyDLL(None)
api.PyInterpreterState_Get.restype = ctypes.c_void_p
api._PyInterpreterState_SetEvalFrameFunc.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
default = ctypes.cast(api._PyEval_EvalFrameDefault, ctypes.c_void_p).value


def f():
    pass


f()
api._PyInterpreterState_SetEvalFrameFunc(api.PyInterpreterState_Get(), default)
f()
