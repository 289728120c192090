/* Spawning, waiting for and unmounting the mounts that tarseek-bench measures (see
 * bench_mount.h).
 *
 * The mount time is what a user waits for between typing the mount command and being able to
 * use the tree, so the clock starts just before fork() and stops when a stat() of the mount
 * point has been answered.  Polling /proc/self/mountinfo is the only test that also works for
 * bind mounts (st_dev does not change when a directory of the same filesystem is bound), and the
 * kernel makes mountinfo pollable: poll() reports POLLPRI when the mount table changes, so the
 * wait wakes as soon as the mount appears instead of sleeping out a whole polling interval.
 *
 * A mounter runs in its own process group so that a mount command's shell and everything it
 * started can be measured (VmHWM summed over the group) and stopped together.  Its output goes
 * to a file rather than a pipe: a daemon that logs a lot must never block on a pipe nobody
 * reads while we time it.
 */
#include "tools/bench/bench_mount.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/mountinfo.h"

volatile sig_atomic_t bench_interrupted;

struct bench_mount {
	struct bench_mount_spec spec; /* strings borrowed from the caller */
	pid_t pid;		      /* also the process group id */
	int exited;		      /* pid has been reaped; status is valid */
	int status;
};

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

int bench_drop_caches(void)
{
	int fd, ret = 0;

	sync();
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "3\n", 2) != 2)
		ret = errno ? -errno : -EIO;
	close(fd);
	return ret;
}

int bench_is_mountpoint(const char *path)
{
	int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = mountinfo_has(fd, path, NULL);
	close(fd);
	return ret;
}

void bench_log_tail(int level, const char *log_path)
{
	char buf[1400], *line, *save = NULL;
	int fd = open(log_path, O_RDONLY | O_CLOEXEC);
	off_t size;
	ssize_t n;

	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	if (size > (off_t)sizeof(buf) - 1)
		lseek(fd, size - (off_t)sizeof(buf) + 1, SEEK_SET);
	else
		lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0) {
		tfs_log(level, "  | (the mounter wrote nothing to %s)", log_path);
		return;
	}
	buf[n] = '\0';
	line = buf;
	/* Skip a partial first line when the file was longer than the buffer. */
	if (size > (off_t)sizeof(buf) - 1 && strchr(line, '\n'))
		line = strchr(line, '\n') + 1;
	for (line = strtok_r(line, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		tfs_log(level, "  | %s", line);
}

/* fork + exec with output appended to log_path; returns the child's pid or -errno. */
static pid_t spawn(char *const *argv, const char *log_path, int own_group, int truncate)
{
	int logfd, nullfd;
	pid_t pid;

	logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0),
		     0644);
	if (logfd < 0)
		return -errno;
	nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (nullfd < 0) {
		int err = -errno;

		close(logfd);
		return err;
	}
	pid = fork();
	if (pid == 0) {
		sigset_t none;

		/* Signals the bench blocks or catches are back to normal in the child. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		if (own_group)
			setpgid(0, 0);
		dup2(nullfd, STDIN_FILENO);
		dup2(logfd, STDOUT_FILENO);
		dup2(logfd, STDERR_FILENO);
		execvp(argv[0], argv);
		dprintf(STDERR_FILENO, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (pid > 0 && own_group)
		setpgid(pid, pid); /* also here, so the group exists before we signal it */
	close(nullfd);
	close(logfd);
	return pid < 0 ? -errno : pid;
}

/* Runs argv to completion with output appended to log_path; returns its exit status (0..255,
 * 128 + signal) or -errno if it could not run. */
static int run_wait(char *const *argv, const char *log_path)
{
	pid_t pid = spawn(argv, log_path, 0, 0);
	int status;

	if (pid < 0)
		return pid;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}

/* Reaps the mounter if it has exited; returns 1 if it has (now or before), 0 if it runs. */
static int reap(struct bench_mount *m, int block)
{
	pid_t r;

	if (m->exited)
		return 1;
	do
		r = waitpid(m->pid, &m->status, block ? 0 : WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == m->pid || (r < 0 && errno == ECHILD)) {
		m->exited = 1;
		return 1;
	}
	return 0;
}

int bench_mount_alive(struct bench_mount *m)
{
	return !reap(m, 0);
}

static int status_ok(int status)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "ended with wait status %#x", status);
}

/* Waits up to `seconds` for the mounter to exit; returns 1 if it did. */
static int wait_exit(struct bench_mount *m, double seconds)
{
	double until = mono_now() + seconds;

	while (!reap(m, 0)) {
		if (mono_now() > until)
			return 0;
		sleep_ms(5);
	}
	return 1;
}

static int wait_group(struct bench_mount *m, double seconds);

/* Ends whatever is left of the mounter's process group: SIGTERM, 5 s, SIGKILL. */
static void kill_group(struct bench_mount *m)
{
	if (kill(-m->pid, SIGTERM) == 0 && !wait_group(m, 5))
		kill(-m->pid, SIGKILL);
	if (!m->exited)
		reap(m, 1);
}

/* fusermount3 -u, then umount, then umount -l; returns 0 or -EBUSY. */
static int unmount(struct bench_mount *m)
{
	const char *mnt = m->spec.mountpoint;
	char *fuse_argv[] = {"fusermount3", "-u", (char *)mnt, NULL};
	char *umount_argv[] = {"umount", (char *)mnt, NULL};
	char *lazy_argv[] = {"umount", "-l", (char *)mnt, NULL};

	if (bench_is_mountpoint(mnt) == 0)
		return 0;
	if (run_wait(fuse_argv, m->spec.log_path) == 0 && bench_is_mountpoint(mnt) == 0)
		return 0;
	if (run_wait(umount_argv, m->spec.log_path) == 0 && bench_is_mountpoint(mnt) == 0)
		return 0;
	tfs_log(TFS_LOG_WARNING, "%s: %s is busy; detaching it lazily", m->spec.name, mnt);
	run_wait(lazy_argv, m->spec.log_path);
	return -EBUSY;
}

int bench_mount_start(const struct bench_mount_spec *spec, struct bench_mount **out,
		      double *seconds)
{
	struct bench_mount *m;
	struct pollfd pfd;
	struct stat st;
	double t0;
	int ret;
	char what[96];

	*out = NULL;
	*seconds = 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->spec = *spec;
	pfd.fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	pfd.events = POLLPRI;
	if (pfd.fd < 0) {
		ret = -errno;
		tfs_log(TFS_LOG_ERR, "cannot read /proc/self/mountinfo: %s", strerror(errno));
		goto fail_free;
	}
	ret = mountinfo_has(pfd.fd, spec->mountpoint, NULL);
	if (ret) {
		tfs_log(TFS_LOG_ERR, "%s: %s is already a mount point", spec->name,
			spec->mountpoint);
		ret = ret < 0 ? ret : -EBUSY;
		goto fail_close;
	}

	t0 = mono_now();
	m->pid = spawn(spec->argv, spec->log_path, 1, 1);
	if (m->pid < 0) {
		ret = m->pid;
		tfs_log(TFS_LOG_ERR, "%s: cannot start %s: %s", spec->name, spec->argv[0],
			strerror(-ret));
		goto fail_close;
	}
	for (;;) {
		if (bench_interrupted) {
			ret = -EINTR;
			goto fail_kill;
		}
		if (reap(m, 0) && (!spec->may_exit || !status_ok(m->status))) {
			describe_status(m->status, what, sizeof(what));
			tfs_log(TFS_LOG_ERR, "%s: the mounter %s before the mount came up",
				spec->name, what);
			ret = -ECHILD;
			goto fail_kill;
		}
		ret = mountinfo_has(pfd.fd, spec->mountpoint, NULL);
		if (ret < 0)
			goto fail_kill;
		if (ret)
			break;
		if (spec->progress)
			spec->progress(spec->opaque, mono_now() - t0);
		if (mono_now() - t0 > spec->timeout) {
			tfs_log(
			    TFS_LOG_ERR,
			    "%s: no mount on %s after %.0f s (raise --mount-timeout if building "
			    "the index takes longer)",
			    spec->name, spec->mountpoint, spec->timeout);
			ret = -ETIMEDOUT;
			goto fail_kill;
		}
		poll(&pfd, 1, 2);
	}
	/* The kernel has the mount; this stat() returns once the daemon serves requests. */
	if (stat(spec->mountpoint, &st) < 0) {
		ret = -errno;
		tfs_log(TFS_LOG_ERR, "%s: the mount on %s does not answer: %s", spec->name,
			spec->mountpoint, strerror(errno));
		goto fail_kill;
	}
	*seconds = mono_now() - t0;
	close(pfd.fd);
	*out = m;
	return 0;

fail_kill:
	kill_group(m);
	if (bench_is_mountpoint(spec->mountpoint) > 0)
		unmount(m);
	if (ret != -EINTR)
		bench_log_tail(TFS_LOG_ERR, spec->log_path);
fail_close:
	close(pfd.fd);
fail_free:
	free(m);
	return ret;
}

/* VmHWM of one process in KiB, or -1. */
static long process_hwm(const char *pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* State and process group of a process from /proc/PID/stat (after the parenthesized name,
 * which may itself hold spaces and parentheses); 0 or -1. */
static int process_stat(const char *pid, char *state, pid_t *pgrp)
{
	char path[64], buf[1024], *p;
	int fd, group;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %*d %d", state, &group) != 2)
		return -1;
	*pgrp = group;
	return 0;
}

/* Counts the live (not zombie) processes of a process group other than `skip` and, if hwm is
 * not NULL, sums their VmHWM; if pids is not NULL, stores the first `max` of them there.
 * Zombies are skipped: in a container whose init does not reap, an orphan's zombie would
 * otherwise look alive forever. */
static int scan_group(pid_t pgid, pid_t skip, long *hwm, pid_t *pids, size_t max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int live = 0;

	if (hwm)
		*hwm = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char state;
		pid_t group;
		long kib;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || atoi(e->d_name) == skip)
			continue;
		if (process_stat(e->d_name, &state, &group) < 0 || group != pgid || state == 'Z')
			continue;
		if (pids && (size_t)live < max)
			pids[live] = atoi(e->d_name);
		live++;
		if (hwm && (kib = process_hwm(e->d_name)) > 0)
			*hwm += kib;
	}
	closedir(d);
	return live;
}

/* Whether a process is (still) a shell, by its command name. */
static int is_shell(pid_t pid)
{
	static const char *const shells[] = {"sh", "dash", "bash", "zsh", "ksh", "mksh", "busybox"};
	char path[64], comm[32] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	comm[n] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
	for (size_t i = 0; i < sizeof(shells) / sizeof(shells[0]); i++)
		if (!strcmp(comm, shells[i]))
			return 1;
	return 0;
}

long bench_mount_peak_rss(struct bench_mount *m)
{
	long kib;
	int live;

	/* A command whose shell has finished did not stay in the foreground: whatever it left
	 * running is not ours to measure.  The shell itself is not the mounter either, unless
	 * it exec'd into it ("exec ratarmount -f ..."). */
	if (m->spec.may_exit && reap(m, 0))
		return -ESRCH;
	live = scan_group(m->pid, m->spec.may_exit && is_shell(m->pid) ? m->pid : 0, &kib, NULL, 0);
	if (live < 0)
		return live;
	return live && kib > 0 ? kib : -ESRCH;
}

/* 1 if the NUL-separated command line of process `pid` has an argument equal to path. */
static int cmdline_names(const char *pid, const char *path)
{
	char file[64], buf[8192];
	ssize_t n;
	int fd;

	snprintf(file, sizeof(file), "/proc/%s/cmdline", pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (char *p = buf; p < buf + n; p += strlen(p) + 1)
		if (!strcmp(p, path))
			return 1;
	return 0;
}

/* Adds to pids[0..*n) (room for max) the processes other than this one whose command line
 * names path and that are not there yet. */
static int scan_cmdlines(const char *path, pid_t *pids, size_t *n, size_t max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return -errno;
	while ((e = readdir(d)) && *n < max) {
		pid_t pid = atoi(e->d_name), group;
		size_t k;
		char state;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || pid == getpid())
			continue;
		if (process_stat(e->d_name, &state, &group) < 0 || state == 'Z')
			continue;
		for (k = 0; k < *n && pids[k] != pid; k++)
			;
		if (k == *n && cmdline_names(e->d_name, path))
			pids[(*n)++] = pid;
	}
	closedir(d);
	return 0;
}

int bench_mount_pids(struct bench_mount *m, pid_t *pids, size_t max)
{
	size_t n = 0;
	int live;

	if (!m->spec.may_exit)
		return reap(m, 0) ? 0 : (pids[0] = m->pid, 1);
	/* No waiting for a command that mounts and returns to have returned: this runs right
	 * before a timed pass, and every millisecond waited here is one the mounter spends
	 * unmeasured (it waited up to 200 ms, the whole 200 for a tool in the foreground: a
	 * cold md5 pass of telemetry.tar.xz through `tarseek -f` as a mount command took
	 * 0.067 s after that wait, 0.183 s as a tarseek configuration, which has none).  A
	 * launcher still exiting is found with the rest; it is dropped when its counters
	 * cannot be read after the pass, and reads nothing meanwhile. */
	if (!reap(m, 0)) {
		live = scan_group(m->pid, is_shell(m->pid) ? m->pid : 0, NULL, pids, max);
		if (live < 0)
			return live;
		n = (size_t)live < max ? (size_t)live : max;
	}
	/* and the processes naming the mount point on their command line: a tool that
	 * daemonized into a session of its own (its launcher may not have exited yet) */
	live = scan_cmdlines(m->spec.mountpoint, pids, &n, max);
	return live < 0 ? live : (int)n;
}

/* Waits up to `seconds` for the mounter's whole process group to end; 1 if it did. */
static int wait_group(struct bench_mount *m, double seconds)
{
	double until = mono_now() + seconds;

	for (;;) {
		reap(m, 0);
		if (scan_group(m->pid, 0, NULL, NULL, 0) <= 0)
			return 1;
		if (mono_now() > until)
			return 0;
		sleep_ms(10);
	}
}

int bench_mount_stop(struct bench_mount *m)
{
	char what[96];
	int ret;

	if (!m)
		return 0;
	ret = unmount(m);
	if (!wait_exit(m, 10)) {
		tfs_log(TFS_LOG_WARNING,
			"%s: the mounter is still running 10 s after the unmount; stopping it",
			m->spec.name);
		kill_group(m);
	} else if (!wait_group(m, 5)) {
		/* Something the mount command started outlives the unmount. */
		kill_group(m);
	}
	if (!status_ok(m->status)) {
		describe_status(m->status, what, sizeof(what));
		tfs_log(TFS_LOG_WARNING, "%s: the mounter %s", m->spec.name, what);
		bench_log_tail(TFS_LOG_WARNING, m->spec.log_path);
		if (!ret)
			ret = -ECHILD;
	}
	free(m);
	return ret;
}
