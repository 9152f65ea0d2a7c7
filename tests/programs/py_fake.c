/* Not Python, but exports what syscope takes for CPython 3.11 (tests/integration/
 * test_python_frames.py): a code type that checks out, a GIL-state TSS key, and a thread state
 * whose top frame lies in memory that cannot be read. Each sample's Python walk faults there;
 * syscope must recover, keep the native frames, and turn Python frames off with a note. The
 * offsets are CPython 3.11's (docs/design/python-frames.md). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>

struct fake_type {
	intptr_t refcnt;
	const void *ob_type;
	intptr_t size;
	const char *tp_name;
	intptr_t tp_basicsize;
};

const unsigned Py_Version = 0x030b02f0;
struct fake_type PyType_Type = { 1, &PyType_Type, 0, "type", 416 };
struct fake_type PyCode_Type = { 1, &PyType_Type, 0, "code", 184 };
struct fake_type PyUnicode_Type = { 1, &PyType_Type, 0, "str", 64 };
struct fake_type PyBytes_Type = { 1, &PyType_Type, 0, "bytes", 33 };
_Alignas(64) unsigned char _PyRuntime[4096];

static _Alignas(64) unsigned char tstate[512], cframe[64], interp[64];

static double spin(double seconds)
{
	struct timespec a, b;
	double x = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 10000; i++)
			x += i * 0.5;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9 < seconds);
	return x;
}

int main(void)
{
	void *unreadable = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pthread_key_t key;
	int32_t tss[2];
	uintptr_t p;

	if (unreadable == MAP_FAILED || pthread_key_create(&key, NULL))
		return 2;
	p = (uintptr_t)cframe;
	memcpy(tstate + 56, &p, 8); /* tstate->cframe */
	p = (uintptr_t)unreadable;
	memcpy(cframe + 8, &p, 8); /* cframe->current_frame */
	p = (uintptr_t)&interp;
	memcpy(tstate + 16, &p, 8);	/* tstate->interp */
	memcpy(_PyRuntime + 48, &p, 8); /* _PyRuntime.interpreters.main */
	p = (uintptr_t)syscall(SYS_gettid);
	memcpy(tstate + 160, &p, 8); /* tstate->native_thread_id */
	pthread_setspecific(key, tstate);
	tss[0] = 1;
	tss[1] = (int32_t)key;
	memcpy(_PyRuntime + 592, tss, 8); /* _PyRuntime.gilstate.autoTSSkey */
	printf("py_fake: %.0f\n", spin(0.4) > 0 ? 1.0 : 0.0);
	return 0;
}
