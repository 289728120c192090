/* Each configuration's working files and mounts: the temporary folder, a mount point, a log
 * and an index path per mounted configuration, the mounter's command line, and mounting and
 * unmounting with the time and peak RSS recorded.
 *
 * bench_cfg_setup() creates the temporary folder ($TMPDIR or /tmp, "tarseek-bench.XXXXXX")
 * with mnt-N and mounter-N.log for configuration N; index files go to --index-dir or the same
 * folder, named after the configuration (characters other than [A-Za-z0-9._-] become '_', a
 * clash adds -N).  A tarseek configuration runs `tarseek -f --index-file INDEX [--tarseek-opt
 * ...] ARCHIVE MNT`; a --mount-cmd one runs `sh -c CMD` with {archive}, {mnt} and {index}
 * replaced by shell-quoted paths.  bench_cfg_cleanup() unmounts what is still mounted and
 * removes all of it but an --index-dir's indexes; it is safe after a failed or partial setup.
 *
 * Errors are logged (bench_err) and returned as -errno.  The paths and argv belong to the
 * configuration (freed by free_bench()); the mount is owned by c->mount while it is up.
 */
#ifndef TARSEEK_BENCH_CFG_H
#define TARSEEK_BENCH_CFG_H

#include <stddef.h>
#include <sys/types.h>

struct bench;
struct bench_cfg;
struct bench_samples;

/* The temporary folder (b->tmpdir) and each mounted configuration's mountpoint, log_path,
 * index_path and argv.  0 or -errno. */
int bench_cfg_setup(struct bench *b);

/* Unmounts every configuration still mounted, removes mount points, logs, the index files
 * unless --index-dir, and the temporary folder (a warning for what cannot be removed). */
void bench_cfg_cleanup(struct bench *b);

/* Removes an index, the journal files SQLite may leave beside it (-journal, -wal, -shm) and
 * the shadow tarseek keeps beside it (shadow.h's shadow_path: a decoded copy as large as a
 * third of the archive's decoded bytes, which a benchmark must not leave behind); a missing
 * file is not an error, another failure is a warning. */
void bench_cfg_remove_index(const char *path);

/* Mounts c (the progress line shows `what` and the seconds waited) and adds the mount time
 * to m if m is not NULL.  0 or the -errno of bench_mount_start() (logged there). */
int bench_cfg_mount(struct bench *b, struct bench_cfg *c, struct bench_samples *m,
		    const char *what);

/* Adds the mounter's peak RSS in MiB to rss (if rss is not NULL and there is a mounter left
 * to measure), then unmounts c. */
void bench_cfg_unmount(struct bench *b, struct bench_cfg *c, struct bench_samples *rss);

/* Where c's files are read: its directory, or its mount point. */
const char *bench_cfg_root(const struct bench_cfg *c);

/* Each configuration's size (an archive's st_size; a folder's: its regular files' summed),
 * NaN when it cannot be known (a URL); b->plain_size and b->plain_from: the first archive
 * whose name ends in ".tar", else the first --dir tree, else NaN and NULL; each size_ratio.
 * A tree with unreadable entries gets a warning and the size of the rest. */
void bench_cfg_sizes(struct bench *b);

/* The processes whose /proc/PID/io counts c's reads, into pids[0..max): for a folder this
 * process (pid 0: the reader, there is no mounter); for tarseek the daemon (its root's
 * user.tarseek.pid); for a mount command see bench_mount_pids().  How many, 0 if unknown
 * (not mounted, or a command that left no process to find), or -errno. */
int bench_cfg_io_pids(struct bench_cfg *c, pid_t *pids, size_t max);

#endif
