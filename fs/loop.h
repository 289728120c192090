/* The request loop: the threads that read requests from /dev/fuse and answer them.
 *
 * One thread at a time reads the device (the receiver), and the thread that has just answered
 * a request reads the next one itself, so a reader that asks one thing after another (an md5
 * pass, a cat, a find) is served by the same thread each time.  libfuse's multi-threaded loop
 * has every idle thread wait in read(), and the kernel hands each request to the one that has
 * waited longest: consecutive requests went to ten threads in turn.  On the 2-core VMs this is
 * measured on (no guest halt polling: waking a halted virtual CPU is an exit to the host),
 * that costs: a cold md5 pass of 1000 files of telemetry.tar, 3 x 7 runs, job 1.05-1.17 x
 * the extracted tree with libfuse's loop, 0.86-0.97 x with one thread (and 0.71 x with the
 * reader and the daemon pinned to one CPU, which no daemon can do for its users).
 *
 * Requests still run side by side when they must.  A request about to decode, or to wait for
 * a decode, says so (hint_slow, common/hint.h): if a request waits unread at that moment,
 * the standby -- the thread that parked last -- reads it at once (a new thread is started
 * when none is parked, up to max_threads).  Else, while the receiver works on a request and
 * nobody reads, the standby looks every LOOP_TAKEOVER_NS whether another request waits
 * (poll), and if one has waited that long it reads it.  So a request that blocks (a decode,
 * the disk, the network) holds up the others for at most about LOOP_TAKEOVER_NS, and a
 * request that waits for another one's answer always gets a thread for it.  When nothing has
 * been asked for LOOP_IDLE_NS, the standby stops looking and sleeps until the next request.
 * Four readers of telemetry.tar.gz decoding on demand (--no-prefetch), cold: 0.13-0.15 s,
 * against 0.12-0.14 s with libfuse's loop; with the prefetch on, 0.10-0.11 s against
 * 0.11-0.12 s.
 *
 * tfs_loop returns when the session ends (unmounted, or fuse_session_exit from a signal
 * handler: the calling thread waits in sem_wait, which the signal interrupts; the workers
 * block the exit signals), like fuse_session_loop_mt: 0, or the session's error.
 */
#ifndef TARSEEK_LOOP_H
#define TARSEEK_LOOP_H

#include "fs/tfs.h" /* FUSE_USE_VERSION, fuse_lowlevel.h */

#define LOOP_TAKEOVER_NS 1000000u /* 1 ms */
#define LOOP_IDLE_NS 200000000u	  /* 200 ms */
#define LOOP_MAX_THREADS 16

int tfs_loop(struct fuse_session *se, unsigned max_threads);

#endif
