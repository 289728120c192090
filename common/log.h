/* One logger for the whole project: syslog-like levels, printf format, replaceable sink.
 *
 * Thread-safe: a message is formatted into one buffer and written with a single call.
 * The default sink writes "tarseek: <level>: <message>\n" to stderr.  Per-request traces
 * use TFS_DEBUG(), which costs one branch when debugging is off.
 *
 * The ring: every message up to info level (whatever the output threshold; never debug) is
 * also kept, with its time, in a ring of the last TFS_LOG_RING_MAX messages and at most
 * TFS_LOG_RING_BYTES bytes, so that a detached daemon can say what happened even where its
 * sink loses messages (no syslog socket): the mount's root answers it as user.tarseek.log.
 */
#ifndef TARSEEK_LOG_H
#define TARSEEK_LOG_H

#include <stddef.h>

enum tfs_log_level {
	TFS_LOG_ERR = 3,
	TFS_LOG_WARNING = 4,
	TFS_LOG_NOTICE = 5,
	TFS_LOG_INFO = 6,
	TFS_LOG_DEBUG = 7,
};

/* Messages above this level are dropped.  Default: TFS_LOG_INFO. */
extern int tfs_log_level;

typedef void (*tfs_log_sink_fn)(int level, const char *msg, void *opaque);

void tfs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tfs_log_set_sink(tfs_log_sink_fn sink, void *opaque);

/* "error", "warning", "notice", "info" or "debug". */
const char *tfs_log_level_name(int level);

/* Program name in messages of the default sink ("tarseek"). */
void tfs_log_set_prog(const char *name);

#define TFS_LOG_RING_MAX 400	     /* messages kept, at most */
#define TFS_LOG_RING_BYTES (60 * 1024) /* and their bytes (an xattr holds at most 64 KiB) */

/* The ring's messages, oldest first, one "YYYY-MM-DD HH:MM:SS level: message\n" line each,
 * into buf: as many of the most recent ones as fit in size bytes (no NUL).  Returns the bytes
 * written; with size 0, the length of the whole ring (what a buffer needs now).  Thread-safe. */
size_t tfs_log_ring_read(char *buf, size_t size);

/* Number of messages of this level logged so far, including those below the output
 * threshold (tests use it). */
unsigned long tfs_log_count(int level);

#define TFS_DEBUG(...)                                                                             \
	do {                                                                                       \
		if (tfs_log_level >= TFS_LOG_DEBUG)                                                \
			tfs_log(TFS_LOG_DEBUG, __VA_ARGS__);                                       \
	} while (0)

#endif
