/* The project's logger.  A message is formatted once into a stack buffer and handed to the
 * sink in one call, so lines from concurrent threads never interleave.  The default sink
 * writes to stderr; the daemon may replace it (e.g. with syslog once it has detached).
 *
 * The ring (log.h) is an array of TFS_LOG_RING_MAX line pointers used circularly, each line
 * malloc'd with its time and level; adding one frees the oldest until both bounds hold.  A
 * line that cannot be allocated is simply not kept.  Locks: ring_lock guards the ring; a leaf
 * (nothing is taken under it, no sink is called under it).
 */
#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int tfs_log_level = TFS_LOG_INFO;

static const char *prog = "tarseek";
static tfs_log_sink_fn sink_fn;
static void *sink_opaque;
static atomic_ulong counts[8];

static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
/* ring_lock: */
static char *ring[TFS_LOG_RING_MAX]; /* ring[(ring_first + i) % MAX], i < ring_n */
static size_t ring_first, ring_n, ring_bytes;

const char *tfs_log_level_name(int level)
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

static void ring_add(int level, const char *msg)
{
	char stamp[32] = "";
	struct tm tm;
	time_t now = time(NULL);
	char *line;

	if (localtime_r(&now, &tm))
		strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
	if (asprintf(&line, "%s %s: %s\n", stamp, tfs_log_level_name(level), msg) < 0)
		return;
	size_t len = strlen(line);
	if (len > TFS_LOG_RING_BYTES) { /* cannot happen with 2 KiB messages; kept bounded */
		free(line);
		return;
	}
	pthread_mutex_lock(&ring_lock);
	while (ring_n && (ring_n == TFS_LOG_RING_MAX || ring_bytes + len > TFS_LOG_RING_BYTES)) {
		char *old = ring[ring_first];
		ring_bytes -= strlen(old);
		free(old);
		ring_first = (ring_first + 1) % TFS_LOG_RING_MAX;
		ring_n--;
	}
	ring[(ring_first + ring_n) % TFS_LOG_RING_MAX] = line;
	ring_n++;
	ring_bytes += len;
	pthread_mutex_unlock(&ring_lock);
}

size_t tfs_log_ring_read(char *buf, size_t size)
{
	size_t from, got = 0;

	pthread_mutex_lock(&ring_lock);
	if (size == 0) {
		got = ring_bytes;
		goto out;
	}
	/* the most recent lines that fit, then copied oldest first */
	for (from = ring_n; from > 0; from--) {
		size_t len = strlen(ring[(ring_first + from - 1) % TFS_LOG_RING_MAX]);
		if (got + len > size)
			break;
		got += len;
	}
	got = 0;
	for (size_t i = from; i < ring_n; i++) {
		const char *line = ring[(ring_first + i) % TFS_LOG_RING_MAX];
		size_t len = strlen(line);
		memcpy(buf + got, line, len);
		got += len;
	}
out:
	pthread_mutex_unlock(&ring_lock);
	return got;
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
	if (level > tfs_log_level && level > TFS_LOG_INFO)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (level <= TFS_LOG_INFO)
		ring_add(level, msg);
	if (level > tfs_log_level)
		return; /* quiet: kept in the ring only */
	if (sink_fn) {
		sink_fn(level, msg, sink_opaque);
		return;
	}
	char line[2200];
	int n = snprintf(line, sizeof(line), "%s: %s: %s\n", prog, tfs_log_level_name(level), msg);
	if (n > (int)sizeof(line) - 1)
		n = sizeof(line) - 1;
	if (n > 0 && write(STDERR_FILENO, line, n) < 0) {
		/* nothing sensible to do when stderr is gone */
	}
}
