/* One logger for the whole project: syslog-like levels, printf format, replaceable sink.
 *
 * Thread-safe: a message is formatted into one buffer and written with a single call.
 * The default sink writes "tarseek: <level>: <message>\n" to stderr.  Per-request traces
 * use TFS_DEBUG(), which costs one branch when debugging is off.
 */
#ifndef TARSEEK_LOG_H
#define TARSEEK_LOG_H

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

/* Program name in messages of the default sink ("tarseek"). */
void tfs_log_set_prog(const char *name);

/* Number of messages of this level logged so far, including those below the output
 * threshold (tests use it). */
unsigned long tfs_log_count(int level);

#define TFS_DEBUG(...)                                                                             \
	do {                                                                                       \
		if (tfs_log_level >= TFS_LOG_DEBUG)                                                \
			tfs_log(TFS_LOG_DEBUG, __VA_ARGS__);                                       \
	} while (0)

#endif
