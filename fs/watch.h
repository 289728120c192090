/* The archive files under a mount, watched: a plain archive changed while mounted must not go
 * on being served from the kernel's page cache.
 *
 * A plain member's reads are checked against the archive file (index/archive_file.c: once it
 * is not the file opened, they fail with EIO and a log line naming the member), but only the
 * reads that reach the daemon: the pages the kernel keeps (keep_cache, and those the warm-up
 * stored) are answered without asking.  So each local archive source is watched (inotify):
 * when its file is written, truncated, replaced, moved or removed, or its modification time
 * changes, every inode of that source is invalidated in the kernel (notify_inval_inode), once,
 * and said in the log; the reads that follow come to the daemon and fail there.  A chmod or
 * chown alone changes nothing.
 *
 * One job (common/pool.h) polls the inotify descriptor; watch_start after the daemon has
 * forked, watch_stop (joins it) before the session goes.  Best effort: no inotify, no watch.
 */
#ifndef TARSEEK_FS_WATCH_H
#define TARSEEK_FS_WATCH_H

#include <stdint.h>

struct watch;
struct fuse_session;

/* NULL if inotify is not available (said at debug level) or out of memory. */
struct watch *watch_new(void);

/* Watches path, the archive of union source number src (0-based: its inodes are
 * un_source_ino(src, 1..entries), mount/union.h).  Before watch_start. */
void watch_add(struct watch *w, const char *path, unsigned src, uint64_t entries);

/* Starts the job, which invalidates through se.  NULL w: nothing. */
void watch_start(struct watch *w, struct fuse_session *se);

/* Ends the job (joined).  Safe without watch_start. */
void watch_stop(struct watch *w);

void watch_free(struct watch *w);

#endif
