/* The mounter's I/O and a throttled disk for tarseek-bench.
 *
 * I/O: the kernel counts, per process, what it read with read-like calls (/proc/PID/io:
 * `rchar` bytes in `syscr` calls, whatever the file) and what it made the block layer fetch
 * (`read_bytes`: the disk's share, 0 for what the page cache held).  The bench takes these
 * of the mounter just before and just after each timed pass; the difference is that pass's
 * reads.  For a FUSE daemon they include the requests it reads from /dev/fuse and the reads
 * of its index, not only the archive's.  The counts of a process cover all its threads and
 * the children it has reaped.
 *
 * Throttle (--throttle riops=N,rbps=SIZE[,device=DEV]): the bench puts itself into a new
 * block-I/O cgroup that limits read IOPS and read bandwidth on one block device, before it
 * starts any mount, so every mounter and every reader (its children) inherits it.  cgroup v2
 * (io.max) when /sys/fs/cgroup/cgroup.controllers offers "io", else cgroup v1's blkio
 * controller (/sys/fs/cgroup/blkio: blkio.throttle.read_iops_device and read_bps_device).
 * The device is DEV (a block device's path or MAJ:MIN), else the one holding the archive
 * given to bench_cgroup_enter(); a partition is replaced by its disk, which is where the
 * limits apply.  The model is a disk's IOPS and bandwidth limits; seek distance and
 * rotational position are not modelled, and only reads that reach the device are slowed
 * (a warm page cache hides the limits: use --cold).
 *
 * Errors are -errno; bench_cgroup_enter() and bench_throttle_parse() say why on stderr.
 * Single-threaded, like the rest of the bench.
 */
#ifndef TARSEEK_BENCH_IO_H
#define TARSEEK_BENCH_IO_H

#include <stdint.h>
#include <sys/types.h>

struct bench_io {
	uint64_t rchar;	     /* bytes read by read(2), pread(2), readv(2), ... (any file) */
	uint64_t syscr;	     /* read calls */
	uint64_t read_bytes; /* bytes the block layer read for the process (the disk's) */
};

/* /proc/PID/io of one process (0: this one) into *io.  0 or -errno (-ENOENT: it is gone;
 * -EACCES: not ours to read; -EIO: a field is missing). */
int bench_io_read(pid_t pid, struct bench_io *io);

/* --throttle's value. */
struct bench_throttle {
	uint64_t riops;	  /* read IOs per second, 0: no limit */
	uint64_t rbps;	  /* read bytes per second, 0: no limit */
	char device[256]; /* DEV as given, "" for the archive's */
};

/* Parses "riops=N,rbps=SIZE[,device=DEV]" (either limit may be left out, not both; SIZE as
 * tarseek's sizes: 150M, 2G, 512K, a bare number is MiB).  0 or -EINVAL (message printed). */
int bench_throttle_parse(const char *arg, struct bench_throttle *t);

struct bench_cgroup;

/* Makes the cgroup (named tarseek-bench-PID, beside the bench's own), sets the limits on the
 * device (t->device, else the one archive_path lies on) and moves this process into it.  On
 * success *cg owns it; on failure *cg is NULL and nothing is left behind.  -EPERM (not root),
 * -ENOTSUP (no blkio or io controller), -ENODEV (no block device found), or another -errno. */
int bench_cgroup_enter(const struct bench_throttle *t, const char *archive_path,
		       struct bench_cgroup **cg);

/* Moves this process back where it was and removes the cgroup (waiting up to 2 s for the
 * processes that were in it to go; a warning if it cannot).  Its children must have exited.
 * NULL does nothing. */
void bench_cgroup_leave(struct bench_cgroup *cg);

#endif
