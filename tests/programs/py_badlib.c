/* Not Python: a library named libpython3.11.so.1.0 that exports what syscope looks for
 * (tests/integration/test_python_frames.py, py_dlopen_fails.c), whose PyCode_Type needs a
 * relocation, and which refers to a symbol nobody defines: dlopen maps it (syscope sees an
 * interpreter not relocated yet) and then fails, unmapping it again. */
struct fake_type {
	long refcnt;
	const void *ob_type;
	long size;
	const char *tp_name;
	long tp_basicsize;
};

extern int py_badlib_nowhere; /* undefined: the relocation that fails */

const unsigned Py_Version = 0x030b02f0;
struct fake_type PyType_Type = { 1, &PyType_Type, 0, "type", 416 };
struct fake_type PyCode_Type = { 1, &PyType_Type, 0, "code", 184 };
struct fake_type PyUnicode_Type = { 1, &PyType_Type, 0, "str", 64 };
struct fake_type PyBytes_Type = { 1, &PyType_Type, 0, "bytes", 33 };
_Alignas(64) unsigned char _PyRuntime[4096];
int *py_badlib_ref = &py_badlib_nowhere;
