/* SPDX-License-Identifier: MIT */
/*
 * NCCL calls against the stand-in libnccl.so.2 (fake_nccl.c), for the call wrappers, made
 * by libnccl_user.so (this file with -DNCCL_USER): 3 x ncclAllReduce of 1000 float32 (sum,
 * sum, max), 1 x ncclBcast of 256 int8 from root 0, 1 x ncclSend of 10 int64 to peer 1,
 * 1 x ncclRecv from peer -1 (an error NCCL returns). nccl_calls links that library;
 * nccl_calls_local dlopens it RTLD_LOCAL, as Python loads PyTorch's libraries, so its
 * libnccl is in a scope of its own.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

int ncclAllReduce(const void *s, void *r, size_t n, int t, int op, void *c, void *st);
int ncclBcast(void *b, size_t n, int t, int root, void *c, void *st);
int ncclSend(const void *s, size_t n, int t, int peer, void *c, void *st);
int ncclRecv(void *r, size_t n, int t, int peer, void *c, void *st);

int nccl_user_calls(void);

#ifdef NCCL_USER
int nccl_user_calls(void)
{
	static char buf[8192];
	void *comm = (void *)0x1000, *stream = (void *)0x2000;
	int rc = 0;

	rc |= ncclAllReduce(buf, buf, 1000, 7, 0, comm, stream);
	rc |= ncclAllReduce(buf, buf, 1000, 7, 0, comm, stream);
	rc |= ncclAllReduce(buf, buf, 1000, 7, 2, comm, stream);
	rc |= ncclBcast(buf, 256, 0, 0, comm, stream);
	rc |= ncclSend(buf, 10, 4, 1, comm, stream);
	printf("recv=%d\n", ncclRecv(buf, 10, 4, -1, comm, stream));
	printf("rc=%d\n", rc);
	return rc;
}
#else
int main(int argc, char **argv)
{
	int (*calls)(void) = nccl_user_calls;

	if (argc > 1) { /* the library's path: load it as Python loads extensions */
		void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);

		calls = lib ? (int (*)(void))dlsym(lib, "nccl_user_calls") : NULL;
		if (!calls) {
			fprintf(stderr, "nccl_calls: %s\n", dlerror());
			return 2;
		}
	}
	return calls();
}
#endif
