/* Where the daemon's messages go (see daemon_log.h). */
#include "fs/daemon_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

static int log_fd = -1;	      /* --log-file, or -1 */
static int also_stderr = 1;   /* not detached yet */

static void write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* nowhere left to say it */
		s += w;
		n -= (size_t)w;
	}
}

static void file_sink(int level, const char *msg, void *opaque)
{
	char stamp[32] = "", line[2300];
	time_t now = time(NULL);
	struct tm tm;
	int n;

	(void)opaque;
	if (also_stderr) {
		n = snprintf(line, sizeof(line), "tarseek: %s: %s\n", tfs_log_level_name(level), msg);
		write_all(STDERR_FILENO, line, n < (int)sizeof(line) ? (size_t)n : sizeof(line) - 1);
	}
	if (localtime_r(&now, &tm))
		strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "%s tarseek[%ld]: %s: %s\n", stamp, (long)getpid(),
		     tfs_log_level_name(level), msg);
	write_all(log_fd, line, n < (int)sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

static void syslog_sink(int level, const char *msg, void *opaque)
{
	(void)opaque;
	syslog(level, "%s", msg);
}

int dlog_open_file(const char *path)
{
	log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
	if (log_fd < 0) {
		tfs_log(TFS_LOG_ERR, "--log-file %s: %s", path, strerror(errno));
		return -1;
	}
	tfs_log_set_sink(file_sink, NULL);
	return 0;
}

void dlog_detached(void)
{
	also_stderr = 0;
	if (log_fd >= 0)
		return;
	openlog("tarseek", LOG_PID, LOG_DAEMON);
	tfs_log_set_sink(syslog_sink, NULL);
}

void dlog_close(void)
{
	tfs_log_set_sink(NULL, NULL);
	if (log_fd >= 0)
		close(log_fd);
	log_fd = -1;
}
