/* The mount point (see mountpoint.h). */
#include "fs/mountpoint.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "codecs/codec.h"
#include "common/log.h"

extern char **environ;

/* name without its extension (see mp_default), malloc'd, or NULL if nothing is left. */
static char *strip_name(const char *name)
{
	size_t len = strlen(name), d = len;
	char *out;

	while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
		d--;
	if (d > 1 && d < len && len - d >= 2 && name[d - 1] == '.') /* NAME.001 */
		len = d - 1;
	out = codec_strip_archive_ext(name, len);
	if (out)
		return out;
	const char *dot = memrchr(name, '.', len);
	if (dot && dot > name) /* no dot files: ".config" is a name */
		len = (size_t)(dot - name);
	else if (len == strlen(name))
		return NULL;
	return strndup(name, len);
}

static bool dir_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool empty = true;

	if (!d)
		return false;
	while (empty && (e = readdir(d)))
		empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
	closedir(d);
	return empty;
}

char *mp_default(const char *name, bool *made)
{
	char cwd[PATH_MAX], *base = strip_name(name), *out = NULL;
	struct stat st;

	*made = false;
	if (!base || !*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
		tfs_log(TFS_LOG_ERR, "no mount point given, and %s's name has no extension to "
			"make one of: tarseek %s MOUNTPOINT", name, name);
		goto out;
	}
	if (!getcwd(cwd, sizeof(cwd)) || asprintf(&out, "%s%s%s", cwd,
						    strcmp(cwd, "/") ? "/" : "", base) < 0) {
		tfs_log(TFS_LOG_ERR, "no mount point given, and no current folder to make one in");
		out = NULL;
		goto out;
	}
	if (mkdir(out, 0755) == 0) {
		*made = true;
		tfs_log(TFS_LOG_INFO, "mounting at %s (made; removed at unmount)", out);
	} else if (errno == EEXIST && stat(out, &st) == 0 && S_ISDIR(st.st_mode) &&
		   dir_empty(out)) {
		tfs_log(TFS_LOG_INFO, "mounting at %s", out);
	} else {
		tfs_log(TFS_LOG_ERR, "no mount point given, and ./%s %s: tarseek %s MOUNTPOINT",
			base, errno == EEXIST ? "exists (not an empty folder)" : strerror(errno),
			name);
		free(out);
		out = NULL;
	}
out:
	free(base);
	return out;
}

bool mp_is_fd(const char *mnt)
{
	const char *p = mnt;

	if (strncmp(p, "/dev/fd/", 8) != 0 || !p[8])
		return false;
	for (p += 8; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* The type of what is mounted at path ("fuse.tarseek", "autofs", ...) into type, or false if
 * nothing is (from /proc/self/mountinfo: the mount point is field 5, the type follows the
 * " - " separator; octal escapes in the path). */
static bool mounted_type(const char *path, char *type, size_t size)
{
	char real[PATH_MAX], line[8192];
	FILE *f;
	bool found = false;

	if (!realpath(path, real) || !(f = fopen("/proc/self/mountinfo", "r")))
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		for (int i = 0; i < 4 && p; i++) {
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		if (!p)
			continue;
		char mnt[PATH_MAX];
		size_t n = 0;
		for (; *p && *p != ' ' && n + 1 < sizeof(mnt); p++) {
			if (p[0] == '\\' && p[1] >= '0' && p[1] <= '7' && p[2] && p[3]) {
				mnt[n++] = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
				p += 3;
			} else {
				mnt[n++] = *p;
			}
		}
		mnt[n] = '\0';
		if (strcmp(mnt, real) != 0)
			continue;
		/* the last mount on that path is the one on top: keep reading */
		found = true;
		const char *sep = strstr(p, " - ");
		snprintf(type, size, "%.*s", sep ? (int)strcspn(sep + 3, " ") : 0, sep ? sep + 3 : "");
	}
	fclose(f);
	return found;
}

bool mp_inside(const char *path, const char *mnt)
{
	char rp[PATH_MAX], rm[PATH_MAX];
	size_t n;

	if (!realpath(path, rp) || !realpath(mnt, rm))
		return false;
	n = strlen(rm);
	return strncmp(rp, rm, n) == 0 && (rp[n] == '/' || rp[n] == '\0' || n == 1);
}

int mp_check(const char *mnt)
{
	struct stat st;
	char type[64];

	if (mp_is_fd(mnt)) /* a mount helper mounted already: the descriptor is ours */
		return 0;
	if (stat(mnt, &st) < 0) {
		if (errno == ENOTCONN)
			tfs_log(TFS_LOG_ERR, "mount point %s is a dead FUSE mount: unmount it "
				"first (fusermount3 -u %s)", mnt, mnt);
		else
			tfs_log(TFS_LOG_ERR, "mount point %s: %s", mnt, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		tfs_log(TFS_LOG_ERR, "mount point %s is not a directory", mnt);
		return -1;
	}
	if (mounted_type(mnt, type, sizeof(type)) && strcmp(type, "autofs") != 0) {
		tfs_log(TFS_LOG_ERR, "mount point %s is busy: something is already mounted there",
			mnt);
		return -1;
	}
	return 0;
}

static int run_fusermount(const char *mnt)
{
	char *argv[] = {"fusermount3", "-u", (char *)mnt, NULL};
	pid_t pid;
	int status;

	if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ) != 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int mp_unmount(const char *mnt)
{
	char type[64], pidbuf[32];
	long pid = 0;
	ssize_t n;

	if (!mounted_type(mnt, type, sizeof(type)) || strcmp(type, "fuse.tarseek") != 0) {
		tfs_log(TFS_LOG_ERR, "%s is not a tarseek mount", mnt);
		return -1;
	}
	n = getxattr(mnt, "user.tarseek.pid", pidbuf, sizeof(pidbuf) - 1);
	if (n > 0) {
		pidbuf[n] = '\0';
		pid = strtol(pidbuf, NULL, 10);
	}
	if (geteuid() == 0 ? umount2(mnt, 0) != 0 : run_fusermount(mnt) != 0) {
		tfs_log(TFS_LOG_ERR, "cannot unmount %s: %s", mnt,
			geteuid() == 0 ? strerror(errno) : "fusermount3 failed");
		return -1;
	}
	for (int i = 0; pid > 0 && i < 6000; i++) { /* a minute, then say so */
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			return 0;
		struct timespec tick = {0, 10 * 1000 * 1000};
		nanosleep(&tick, NULL);
	}
	if (pid > 0) {
		tfs_log(TFS_LOG_ERR, "%s is unmounted, but its daemon (pid %ld) has not ended "
			"after a minute", mnt, pid);
		return -1;
	}
	return 0;
}
