/* Mounting for tarseek-bench: spawn a mounter, wait until its mount answers, measure its
 * memory, unmount it; plus the two system chores around a run (the clock, dropping the page
 * cache).
 *
 * A mounter is any command: the tarseek daemon in the foreground, or `sh -c CMD` for another
 * tool.  It runs in its own process group with stdin from /dev/null and stdout and stderr
 * appended to a log file, which is shown when something goes wrong.  "Ready" means the mount
 * point is listed in /proc/self/mountinfo and a stat() of it has been answered (so the daemon
 * serves requests, not just holds the kernel mount); the wait wakes on every mount-table change
 * and at least every 2 ms to notice a mounter that died.
 *
 * Errors are logged with tfs_log() (what failed, the mount point, the log's last lines) and
 * returned as -errno.  Not thread-safe; one bench process drives all mounts.
 */
#ifndef TARSEEK_BENCH_MOUNT_H
#define TARSEEK_BENCH_MOUNT_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

/* Set by the caller's SIGINT/SIGTERM handler: waits give up with -EINTR. */
extern volatile sig_atomic_t bench_interrupted;

struct bench_mount_spec {
	const char *name;	/* for messages */
	char *const *argv;	/* argv[0] is looked up on PATH */
	const char *mountpoint; /* absolute and canonical (as mountinfo shows it), a directory */
	const char *log_path;	/* truncated, then receives the mounter's stdout and stderr */
	double timeout;		/* seconds until the mount must answer */
	/* 0: the process is the daemon and must stay until unmounted (tarseek -f); exiting
	 * before the mount is up is a failure.  1: the process may finish with status 0 and
	 * leave the mount behind (mount --bind, a tool that daemonizes). */
	int may_exit;
	/* Called about every 2 ms while waiting (may be NULL), with the seconds waited. */
	void (*progress)(void *opaque, double waited);
	void *opaque;
};

struct bench_mount;

/* Spawns spec->argv and waits for the mount.  On success returns 0, *m owns the running
 * mount and *seconds is the time from spawn to the first answered stat().  On failure *m is
 * NULL, nothing is left mounted or running, and the return is -ETIMEDOUT (not up in time),
 * -ECHILD (the mounter exited or failed), -EINTR (bench_interrupted) or another -errno.
 * The spec's strings must outlive *m. */
int bench_mount_start(const struct bench_mount_spec *spec, struct bench_mount **m, double *seconds);

/* Peak resident set size in KiB (VmHWM) summed over the processes still running in the
 * mounter's process group: the daemon itself for tarseek; for a mount command (may_exit) the
 * processes its shell started (or the process the shell exec'd into), as long as the shell
 * still runs (the tool stayed in the foreground).  -ESRCH if there is nothing to measure (the
 * command daemonized or just mounted and returned). */
long bench_mount_peak_rss(struct bench_mount *m);

/* The processes that may serve the mount, for their I/O counters, into pids[0..max): the
 * mounter itself (may_exit 0); for a mount command, the processes of its group but the shell
 * while the shell runs (a tool in the foreground, or the launcher of one that daemonizes),
 * and the processes whose command line names the mount point (a tool that daemonized; not
 * always found).  Returns how many, 0 if none was found, or -errno.  One may exit before the
 * caller reads its counters (a launcher). */
int bench_mount_pids(struct bench_mount *m, pid_t *pids, size_t max);

/* 1 while the mounter process is alive (not exited), else 0. */
int bench_mount_alive(struct bench_mount *m);

/* Unmounts (fusermount3 -u, then umount; umount -l as a last resort, with a warning), waits
 * for the mounter to exit (SIGTERM to its group after 10 s, SIGKILL 5 s later) and frees m.
 * Returns 0; -EBUSY if the mount could only be detached lazily or not at all; -ECHILD if the
 * mounter ended with a failure status or a signal (logged with the log's tail).  NULL: 0. */
int bench_mount_stop(struct bench_mount *m);

/* 1 if path (absolute, canonical) is a mount point, 0 if not, -errno if mountinfo fails. */
int bench_is_mountpoint(const char *path);

/* Logs the last lines of a mounter's log file at the given level, each prefixed "  | ". */
void bench_log_tail(int level, const char *log_path);

/* Monotonic clock in seconds. */

/* sync(), then writes 3 to /proc/sys/vm/drop_caches (page cache, dentries and inodes).
 * Returns 0 or -errno (-EACCES, -EPERM, -EROFS when not permitted: not root, or a container
 * whose /proc/sys is read-only). */
int bench_drop_caches(void);

#endif
