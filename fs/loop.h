/* The FUSE session loop: threads that take turns reading /dev/fuse, the one reading spinning
 * a little before it sleeps.
 *
 * Why not libfuse's loop: there every idle thread sleeps in read(2) on the device, so each
 * request wakes one up, and on the VMs this project is measured on (Firecracker with PVM)
 * a wake-up and the switch it brings cost as much as the rest of the request: a cold `find`
 * over 100,000 folders spends about 30 us per request.  A process reading files one after
 * the other (md5 of a list, find, grep -r, tar -c) sends its next request a few microseconds
 * after our reply, so the thread that replied keeps reading the device without sleeping
 * (O_NONBLOCK) for spin_us before it waits in poll(2): the request is then picked up with
 * no wake-up at all.  Less while the daemon decodes in the background (busy_spin_us): the
 * spin takes a core from the decoders then (cold md5 of telemetry.tar.xz's 1000 listed files
 * right after mounting, 9 interleaved runs: 0.127 s without spinning, 0.126 s with 20 us,
 * 0.136 s with 50 us, 0.151 s with 200 us; a cold `find` over 100k folders, nothing to
 * decode: 9.8 s with 20 us, 8.4-9.0 s with 50 us).
 *
 * Leader and followers: one thread at a time reads the device (the leader); the others wait
 * on a condition variable, not on the device, so that a request never wakes a sleeper while
 * the leader spins.  The leader answers the kinds of request that are answered from memory
 * most of the time itself -- lookup, getattr, listings, the attributes, forget, statfs, and
 * read (of a cached chunk, of a plain archive's page-cache pages) -- and then reads the
 * device again: one thread, no switch.  Where such a request turns out to wait after all (a
 * cache miss: a decode or a wait for another thread's; a page of a plain archive not in the
 * page cache; a server; a folder source on the disk; an archive inside an archive opened on
 * its first lookup), the code below calls may_block() (common/may_block.h) first, and the
 * leader hands the lead to a follower (waking one, or starting a thread while fewer than
 * max_threads exist), so that other requests are read meanwhile.  Other kinds of request
 * (the init, ...) hand the lead over before they are answered.  Threads stay until the end.
 *
 * The end: unmounting makes the leader's read fail (ENODEV), libfuse marks the session
 * exited, and every thread ends after the request it is answering; a signal handler that
 * calls fuse_session_exit() also calls loop_wake(), which wakes the leader from poll() and
 * loop_run through an eventfd.
 */
#ifndef TARSEEK_FS_LOOP_H
#define TARSEEK_FS_LOOP_H

#include <stdbool.h>

struct fuse_session;

struct loop_params {
	unsigned max_threads; /* threads answering requests at most (1..64) */
	unsigned spin_us;     /* the leader reads this long before it sleeps (0: sleeps at once) */
	unsigned busy_spin_us; /* ... while busy(busy_arg) says the cores have other work */
	bool (*busy)(void *busy_arg); /* NULL: never */
	void *busy_arg;
};

/* Runs the session until it ends: 0 when it was unmounted or exited (a signal), else
 * -errno (the device failed, or no thread or eventfd could be made).  The calling thread
 * only waits. */
int loop_run(struct fuse_session *se, const struct loop_params *p);

/* For a signal handler that has exited the session (async-signal-safe): the running loop
 * ends now, its leader woken from poll().  Nothing if no loop runs. */
void loop_wake(void);

#endif
