/* SPDX-License-Identifier: MIT */
/*
 * A stand-in libnccl.so.2 for the tests of the call wrappers (test_nccl.py): every call
 * succeeds and does nothing; communicators have FAKE_NCCL_RANKS ranks (default 1), and this
 * is rank 0. Its ncclBcast calls its ncclBroadcast, as NCCL's does.
 */
#include <stddef.h>
#include <stdlib.h>

typedef void *comm_t;
typedef void *stream_t;

int ncclCommCount(comm_t comm, int *count)
{
	const char *v = getenv("FAKE_NCCL_RANKS");

	(void)comm;
	*count = v ? atoi(v) : 1;
	return 0;
}

int ncclCommUserRank(comm_t comm, int *rank)
{
	(void)comm;
	*rank = 0;
	return 0;
}

int ncclAllReduce(const void *s, void *r, size_t n, int t, int op, comm_t c, stream_t st)
{
	(void)s, (void)r, (void)n, (void)t, (void)op, (void)c, (void)st;
	return 0;
}

int ncclBroadcast(const void *s, void *r, size_t n, int t, int root, comm_t c, stream_t st)
{
	(void)s, (void)r, (void)n, (void)t, (void)root, (void)c, (void)st;
	return 0;
}

int ncclBcast(void *b, size_t n, int t, int root, comm_t c, stream_t st)
{
	return ncclBroadcast(b, b, n, t, root, c, st);
}

int ncclSend(const void *s, size_t n, int t, int peer, comm_t c, stream_t st)
{
	(void)s, (void)n, (void)t, (void)peer, (void)c, (void)st;
	return 0;
}

int ncclRecv(void *r, size_t n, int t, int peer, comm_t c, stream_t st)
{
	(void)r, (void)n, (void)t, (void)peer, (void)c, (void)st;
	return peer < 0 ? 4 : 0; /* ncclInvalidArgument */
}
