/* The project's logger.  A message is formatted once into a stack buffer and handed to the
 * sink in one call, so lines from concurrent threads never interleave.  The default sink
 * writes to stderr; the daemon may replace it (e.g. with syslog once it has detached).
 */
#include "common/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int tfs_log_level = TFS_LOG_INFO;

static const char *prog = "tarseek";
static tfs_log_sink_fn sink_fn;
static void *sink_opaque;
static atomic_ulong counts[8];

static const char *level_name(int level)
{
	switch (level) {
	case TFS_LOG_ERR:
		return "error";
	case TFS_LOG_WARNING:
		return "warning";
	case TFS_LOG_NOTICE:
		return "notice";
	case TFS_LOG_INFO:
		return "info";
	default:
		return "debug";
	}
}

void tfs_log_set_prog(const char *name)
{
	prog = name;
}

void tfs_log_set_sink(tfs_log_sink_fn sink, void *opaque)
{
	sink_fn = sink;
	sink_opaque = opaque;
}

unsigned long tfs_log_count(int level)
{
	if (level < 0 || level > 7)
		return 0;
	return atomic_load(&counts[level]);
}

void tfs_log(int level, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	if (level >= 0 && level <= 7)
		atomic_fetch_add(&counts[level], 1);
	if (level > tfs_log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sink_fn) {
		sink_fn(level, msg, sink_opaque);
		return;
	}
	char line[2200];
	int n = snprintf(line, sizeof(line), "%s: %s: %s\n", prog, level_name(level), msg);
	if (n > (int)sizeof(line) - 1)
		n = sizeof(line) - 1;
	if (n > 0 && write(STDERR_FILENO, line, n) < 0) {
		/* nothing sensible to do when stderr is gone */
	}
}
