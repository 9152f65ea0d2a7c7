/* SPDX-License-Identifier: MIT */
/*
 * SQLite on a thread of its own while a rocpd database is written: the writer's thread
 * reads the records and gathers rows, this one binds and inserts them. Batches of rows and
 * SQL text go through a ring of RP_QUEUE jobs, run strictly in the order queued, so the file
 * is the one the writer alone would make, byte for byte. Each job keeps the buffers of its
 * last use: handing rows over swaps buffers, and allocates nothing once the ring is warm.
 * The thread blocks every signal, so a SIGINT reaches the converter's own handlers (which
 * remove the temporary file) as without it.
 */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../common/log.h"
#include "rocpd_writer.h"

#define RP_QUEUE 32
#define RP_WAKE 8

struct rp_job {
	int which; /* INS_*, or -1 for sql */
	unsigned rows;
	VEC(struct rp_value) values;
	VEC(char) text;
	char *sql;
};

struct rp_queue {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t ready; /* a job was queued, or the queue closed */
	pthread_cond_t room;  /* a job was done */
	size_t head, tail;    /* jobs done, jobs queued */
	bool closing;
	/* Who sleeps: each side wakes the other only when a few jobs (RP_WAKE) are queued or
	 * free, not for every one: a wake-up per 64 rows cost more system time than it saved. */
	bool sqlite_waits, writer_waits;
	struct rp_job jobs[RP_QUEUE];
};

static void run_job(struct rp *rp, struct rp_job *j)
{
	if (j->which < 0) {
		rp_exec_now(rp, j->sql);
		free(j->sql);
		j->sql = NULL;
	} else if (!rp->error) {
		rp_insert_rows(rp, j->which, j->values.v, j->values.n, j->text.v, j->rows);
	}
}

static void *sqlite_thread(void *arg)
{
	struct rp *rp = arg;
	struct rp_queue *q = rp->queue;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (q->head == q->tail && !q->closing) {
			q->sqlite_waits = true;
			pthread_cond_wait(&q->ready, &q->lock);
			q->sqlite_waits = false;
		}
		if (q->head == q->tail)
			break;
		pthread_mutex_unlock(&q->lock);
		/* The writer touches this job again only after head has passed it. */
		run_job(rp, &q->jobs[q->head % RP_QUEUE]);
		pthread_mutex_lock(&q->lock);
		q->head++;
		if (q->writer_waits && q->tail - q->head <= RP_QUEUE - RP_WAKE)
			pthread_cond_signal(&q->room);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* The next free job, waiting for SQLite's thread to finish one when the ring is full. */
static struct rp_job *free_job(struct rp_queue *q)
{
	struct rp_job *j;

	pthread_mutex_lock(&q->lock);
	while (q->tail - q->head == RP_QUEUE) {
		q->writer_waits = true;
		pthread_cond_wait(&q->room, &q->lock);
		q->writer_waits = false;
	}
	j = &q->jobs[q->tail % RP_QUEUE];
	pthread_mutex_unlock(&q->lock);
	return j;
}

static void publish(struct rp_queue *q)
{
	pthread_mutex_lock(&q->lock);
	q->tail++;
	if (q->sqlite_waits && q->tail - q->head >= RP_WAKE)
		pthread_cond_signal(&q->ready);
	pthread_mutex_unlock(&q->lock);
}

#define SWAP(a, b)                         \
	do {                               \
		__typeof__(a) swap_ = (a); \
		(a) = (b);                 \
		(b) = swap_;               \
	} while (0)

void rp_queue_rows(struct rp *rp, int which)
{
	struct rp_batch *b = &rp->ins[which];
	struct rp_job *j = free_job(rp->queue);

	j->which = which;
	j->rows = b->rows;
	/* VEC()s of one type are distinct anonymous structs: swapped member by member. */
	SWAP(j->values.v, b->values.v);
	SWAP(j->values.n, b->values.n);
	SWAP(j->values.cap, b->values.cap);
	SWAP(j->text.v, b->text.v);
	SWAP(j->text.n, b->text.n);
	SWAP(j->text.cap, b->text.cap);
	publish(rp->queue);
	b->values.n = 0; /* the job's buffers of its last use, reused */
	b->text.n = 0;
}

void rp_queue_sql(struct rp *rp, const char *sql)
{
	struct rp_job *j;

	if (rp->error)
		return;
	j = free_job(rp->queue);
	j->which = -1;
	j->sql = sc_xstrdup(sql);
	publish(rp->queue);
}

bool rp_queue_start(struct rp *rp)
{
	struct rp_queue *q;
	sigset_t all, old;
	int rc;

	/* A SQLite built without its mutexes cannot share its allocator with our thread. */
	if (!sqlite3_threadsafe())
		return false;
	q = sc_xcalloc(1, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->ready, NULL);
	pthread_cond_init(&q->room, NULL);
	rp->queue = q;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&q->thread, NULL, sqlite_thread, rp);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pr_dbg("rocpd: no thread for SQLite (%s); it runs on the writer's", strerror(rc));
		rp->queue = NULL;
		pthread_mutex_destroy(&q->lock);
		pthread_cond_destroy(&q->ready);
		pthread_cond_destroy(&q->room);
		free(q);
		return false;
	}
	return true;
}

void rp_queue_finish(struct rp *rp)
{
	struct rp_queue *q = rp->queue;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->closing = true;
	pthread_cond_signal(&q->ready);
	pthread_mutex_unlock(&q->lock);
	pthread_join(q->thread, NULL);
	rp->queue = NULL;
	for (size_t i = 0; i < RP_QUEUE; i++) {
		VEC_FREE(&q->jobs[i].values);
		VEC_FREE(&q->jobs[i].text);
		free(q->jobs[i].sql);
	}
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->ready);
	pthread_cond_destroy(&q->room);
	free(q);
}
