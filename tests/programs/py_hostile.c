/* Not Python, but exports what syscope takes for CPython 3.11, as py_fake does, with a
 * thread state that leads each sample's walk into trouble of one kind
 * (tests/integration/test_python_frames.py). Usage: py_hostile MODE, where MODE is
 *   own-handler  the top frame is unreadable, and the program has its own SIGSEGV handler:
 *                the walk's faults must not reach it, its own fault (after) must, once;
 *   own-resethand  the same with SA_RESETHAND: after its fault the action is SIG_DFL;
 *   bad-tid      the thread state names another thread: syscope's check must refuse it;
 *   bad-linetable  a valid frame whose code object's line table runs into unreadable
 *                memory: the fault comes while its PY_CODE record is being written.
 * The offsets are CPython 3.11's (docs/design/python-frames.md). */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

static _Alignas(64) unsigned char tstate[512], cframe[64], interp[64], frame[128], code[256];
static char *own_page;
static volatile sig_atomic_t own_faults;

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

static void put(unsigned char *at, uintptr_t value)
{
	memcpy(at, &value, sizeof(value));
}

/* The program's own SIGSEGV handler: its own page made readable; any other fault is not
 * the program's, and ends it with status 3. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if ((char *)si->si_addr != own_page) {
		static const char msg[] = "py_hostile: a fault that was not the program's\n";

		write(2, msg, sizeof(msg) - 1);
		_exit(3);
	}
	own_faults++;
	mprotect(own_page, 4096, PROT_READ | PROT_WRITE);
}

/* Two pages, the second unreadable: a bytes object ends the first, its data runs on. */
static uintptr_t bytes_into_unreadable(void)
{
	unsigned char *p =
		mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *b;

	if (p == MAP_FAILED || mprotect(p + 4096, 4096, PROT_NONE))
		return 0;
	b = p + 4096 - 64;
	put(b, 1);			      /* ob_refcnt */
	put(b + 8, (uintptr_t)&PyBytes_Type); /* ob_type */
	put(b + 16, 4000);		      /* ob_size: far into the unreadable page */
	return (uintptr_t)b;
}

int main(int argc, char **argv)
{
	void *unreadable = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const char *mode = argc == 2 ? argv[1] : "";
	uintptr_t tid = (uintptr_t)syscall(SYS_gettid);
	pthread_key_t key;
	int32_t tss[2];

	if (unreadable == MAP_FAILED || pthread_key_create(&key, NULL))
		return 2;
	put(tstate + 16, (uintptr_t)interp);	 /* tstate->interp */
	put(_PyRuntime + 48, (uintptr_t)interp); /* _PyRuntime.interpreters.main */
	put(tstate + 56, (uintptr_t)cframe);	 /* tstate->cframe */
	put(tstate + 160, tid);			 /* tstate->native_thread_id */
	put(cframe + 8, (uintptr_t)unreadable);	 /* cframe->current_frame */
	if (!strcmp(mode, "own-handler") || !strcmp(mode, "own-resethand")) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_segv;
		sa.sa_flags = SA_SIGINFO | (!strcmp(mode, "own-resethand") ? SA_RESETHAND : 0);
		own_page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (own_page == MAP_FAILED || sigaction(SIGSEGV, &sa, NULL))
			return 2;
	} else if (!strcmp(mode, "bad-tid")) {
		put(tstate + 160, tid + 1);
	} else if (!strcmp(mode, "bad-linetable")) {
		uintptr_t lt = bytes_into_unreadable();

		if (!lt)
			return 2;
		put(cframe + 8, (uintptr_t)frame);
		put(frame + 32, (uintptr_t)code); /* f_code; previous (48) stays NULL */
		frame[68] = 1;			  /* is_entry */
		put(code + 8, (uintptr_t)&PyCode_Type);
		put(code + 16, 1);   /* code units */
		put(code + 72, 7);   /* co_firstlineno */
		put(code + 136, lt); /* co_linetable */
	} else {
		fprintf(stderr,
			"usage: py_hostile own-handler|own-resethand|bad-tid|bad-linetable\n");
		return 2;
	}
	pthread_setspecific(key, tstate);
	tss[0] = 1;
	tss[1] = (int32_t)key;
	memcpy(_PyRuntime + 592, tss, 8); /* _PyRuntime.gilstate.autoTSSkey */
	printf("py_hostile: %.0f\n", spin(0.4) > 0 ? 1.0 : 0.0);
	if (own_page) {
		own_page[0] = 1; /* the program's own fault: its handler makes the page readable */
		struct sigaction now;

		printf("py_hostile: own faults %d\n", (int)own_faults);
		if (!sigaction(SIGSEGV, NULL, &now))
			printf("py_hostile: then %s\n",
			       now.sa_handler == SIG_DFL ? "SIG_DFL" : "the handler");
	}
	return 0;
}
