/* The process's threads: one pool that starts every thread tarseek runs.
 *
 * A job is a function run on a pool thread.  pool_start hands it to an idle thread of the
 * same niceness, or starts a new thread when none is idle, so a job never waits in a queue
 * behind another: jobs that wait for each other (a scan's reader and its decoding workers, a
 * build's parallel streams, each running a codec's pipeline) behave exactly as threads of
 * their own would, and cannot deadlock on the pool.  How many jobs run at once is their
 * owners' choice, as it was with their own threads (a scan's --threads, the decode-ahead
 * pool's size, ...): the pool only reuses threads, so a mount that indexes with two workers
 * and then decodes ahead with two runs on the same two threads, and no thread is made per
 * request.
 *
 * Ownership: every job is joined by the one that started it (pool_join), which also frees
 * its handle; nothing is detached.  A thread whose job ended waits idle for the next one;
 * pool_shutdown (called by each program's main before it returns) joins the idle threads.
 * The pool is the process's, as malloc's arena is: the only process-wide threads, and they
 * run nothing between jobs.
 *
 * Niceness: a job with nice > 0 runs at that niceness (setpriority on its thread id: Linux's
 * per-thread nice), so background work (decoding ahead, prefetch, warm-up) yields to the
 * requests being served.  A thread keeps the niceness it was given (an unprivileged process
 * cannot lower it again), and takes only jobs of that niceness.
 *
 * Signals are blocked in pool threads: they go to the program's main thread.
 *
 * fork: a child process inherits none of the threads; the pool forgets them in the child
 * (pthread_atfork).  No job may run across a fork whose handle the child would join.
 *
 * Thread-safe.  Lock: the pool's own mutex, a leaf (no other lock is taken under it; a job
 * runs without it).
 */
#ifndef TARSEEK_POOL_H
#define TARSEEK_POOL_H

struct pool_job;

/* Runs fn(arg) on a pool thread named name (at most 15 characters shown), at niceness nice
 * (0, or a positive value for background work).  0 and *out (to be joined), or -errno
 * (-ENOMEM, -EAGAIN when no thread can be made): fn does not run then.  *out = NULL on
 * error. */
int pool_start(void *(*fn)(void *arg), void *arg, const char *name, int nice,
	       struct pool_job **out);

/* As pool_start, on a new thread of its own that ends with the job: pool_join joins that
 * thread, so its thread-local storage has gone (its destructors run) when pool_join returns.
 * For the FUSE request loop's threads (fs/loop.c): libfuse keeps a pipe per thread under a key
 * that the session's end deletes, so a pool thread that outlived the session leaked it. */
int pool_start_own(void *(*fn)(void *arg), void *arg, const char *name, int nice,
		   struct pool_job **out);

/* Waits for the job to end, frees its handle and returns what fn returned.  Once per job;
 * NULL returns NULL. */
void *pool_join(struct pool_job *job);

/* Threads the pool holds (running jobs and idle), and how many it ever started (tests). */
void pool_counts(unsigned *threads, unsigned *idle, unsigned long *started);

/* Joins the idle threads.  Called by main before it returns; no job may be running.  The pool
 * may be used again afterwards (it starts new threads). */
void pool_shutdown(void);

#endif
