/* A pool of background threads for work that may be refused: decoding ahead (reader.c).
 *
 * The mount makes one pool (workers_new) and hands it to every reader it opens; a task is
 * accepted only when a thread is idle or about to be (at most one task waits per thread), so
 * background work never piles up behind reads.  workers_free stops the threads and joins
 * them; by then every task must have ended (readers wait for their own tasks when freed).
 * The threads are jobs of the process's pool (common/pool.h), owned by the struct workers.
 * They run at nice 0, as the requests do: what they decode is what a sequential reader asks
 * for next.
 *
 * Thread-safe.  Lock: the struct's own mutex; only the process pool's lock is taken under it
 * (starting a thread), and a task runs without it.
 */
#ifndef TARSEEK_WORKERS_H
#define TARSEEK_WORKERS_H

#include <stdbool.h>

struct workers;

/* A pool of n threads (n >= 1; started on the first task).  NULL if out of memory. */
struct workers *workers_new(unsigned n);

/* Runs fn(arg) on a pool thread if one is free (true), else does nothing (false). */
bool workers_try_run(struct workers *w, void (*fn)(void *arg), void *arg);

/* Lets the threads run what was accepted, then joins them; the next task starts them again.
 * For a process about to fork (common/pool.h: no job may run across a fork).  NULL does
 * nothing. */
void workers_park(struct workers *w);

/* Stops and joins the threads.  No task may be queued or running.  NULL does nothing. */
void workers_free(struct workers *w);

#endif
