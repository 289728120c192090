/* The mounter's I/O counters and the throttling cgroup of tarseek-bench (see bench_io.h).
 *
 * Both are thin layers over files the kernel offers: /proc/PID/io is parsed by name (its
 * fields have moved between kernel versions), and a cgroup is a folder whose files take
 * one line each.  The bench moves itself, not each mounter, into the cgroup: the mounters
 * and the readers it starts inherit it at fork(), including a FUSE daemon, which reads the
 * archive itself and so is the process the limits must slow down.  Leaving means moving
 * back to the cgroup the bench came from, since a cgroup with a process in it cannot be
 * removed.
 */
#include "tools/bench/bench_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "tools/bench/bench_ui.h"
#include "tools/bench/bench_util.h"
#include "common/size.h"

/* ---- /proc/PID/io ---- */

int bench_io_read(pid_t pid, struct bench_io *io)
{
	char path[64], line[128];
	int found = 0;
	uint64_t v;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/io");
	*io = (struct bench_io){0};
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "rchar: %" SCNu64, &v) == 1)
			io->rchar += v, found |= 1;
		else if (sscanf(line, "syscr: %" SCNu64, &v) == 1)
			io->syscr += v, found |= 2;
		else if (sscanf(line, "read_bytes: %" SCNu64, &v) == 1)
			io->read_bytes += v, found |= 4;
	}
	/* a process we may not trace opens, then fails to read (EACCES) */
	if (ferror(f) && !found) {
		int err = errno ? -errno : -EIO;

		fclose(f);
		return err;
	}
	fclose(f);
	return found == 7 ? 0 : -EIO;
}

/* ---- --throttle ---- */

int bench_throttle_parse(const char *arg, struct bench_throttle *t)
{
	char *copy = bench_xstrdup(arg), *save = NULL;
	int ret = -EINVAL;

	*t = (struct bench_throttle){0};
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '='), *end;

		if (!eq || eq[1] == '\0') {
			fprintf(stderr, "tarseek-bench: --throttle: '%s' is not KEY=VALUE\n", item);
			goto out;
		}
		*eq = '\0';
		if (!strcmp(item, "riops")) {
			errno = 0;
			t->riops = strtoull(eq + 1, &end, 10);
			if (errno || *end || eq[1] == '-' || !t->riops) {
				fprintf(stderr,
					"tarseek-bench: --throttle: riops wants a whole number of "
					"reads per second, not '%s'\n",
					eq + 1);
				goto out;
			}
		} else if (!strcmp(item, "rbps")) {
			if (!parse_size(eq + 1, &t->rbps) || !t->rbps) {
				fprintf(stderr,
					"tarseek-bench: --throttle: rbps wants bytes per second "
					"(150M, 2G, 512K), not '%s'\n",
					eq + 1);
				goto out;
			}
		} else if (!strcmp(item, "device")) {
			if (strlen(eq + 1) >= sizeof(t->device)) {
				fprintf(stderr,
					"tarseek-bench: --throttle: device name too long\n");
				goto out;
			}
			strcpy(t->device, eq + 1);
		} else {
			fprintf(stderr,
				"tarseek-bench: --throttle: unknown key '%s' (riops, rbps, "
				"device)\n",
				item);
			goto out;
		}
	}
	if (!t->riops && !t->rbps) {
		fprintf(stderr, "tarseek-bench: --throttle wants riops=N and/or rbps=SIZE\n");
		goto out;
	}
	ret = 0;
out:
	free(copy);
	return ret;
}

/* ---- the cgroup ---- */

#define CG_ROOT "/sys/fs/cgroup"
#define CG_V1 CG_ROOT "/blkio"

struct bench_cgroup {
	int v2;
	char *path;   /* the cgroup made for the bench */
	char *parent; /* the one the bench was in (moved back there at the end) */
};

/* Writes one line to a cgroup file.  0 or -errno. */
static int put_line(const char *dir, const char *file, const char *text)
{
	char *path = bench_xasprintf("%s/%s", dir, file);
	size_t len = strlen(text);
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0) {
		ret = -errno;
	} else {
		if (write(fd, text, len) != (ssize_t)len)
			ret = errno ? -errno : -EIO;
		close(fd);
	}
	free(path);
	return ret;
}

/* The first line of a small file, newline removed, into buf.  0 or -errno. */
static int get_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)size, f))
		ret = -EIO;
	else
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
	return ret;
}

/* 1 if the cgroup v2 root offers the io controller. */
static int have_v2_io(void)
{
	char line[512];

	if (get_line(CG_ROOT "/cgroup.controllers", line, sizeof(line)))
		return 0;
	for (char *save = NULL, *w = strtok_r(line, " ", &save); w; w = strtok_r(NULL, " ", &save))
		if (!strcmp(w, "io"))
			return 1;
	return 0;
}

/* This process's cgroup in the hierarchy (v2: "0::PATH", v1: the line listing blkio), as a
 * folder under root; root itself if the line is missing or its folder is not visible (a
 * container that sees only part of the tree).  malloc'd. */
static char *own_cgroup(int v2, const char *root)
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	char line[1024], *found = NULL;

	while (f && !found && fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *path = ctl ? strchr(ctl + 1, ':') : NULL;
		int match = 0;

		if (!path)
			continue;
		*path++ = '\0';
		*ctl++ = '\0'; /* line: the hierarchy's number, ctl: its controllers */
		path[strcspn(path, "\n")] = '\0';
		if (v2) {
			match = !strcmp(line, "0") && !*ctl;
		} else {
			for (char *save = NULL, *w = strtok_r(ctl, ",", &save); w && !match;
			     w = strtok_r(NULL, ",", &save))
				match = !strcmp(w, "blkio");
		}
		if (match && strcmp(path, "/")) {
			struct stat st;
			char *dir = bench_xasprintf("%s%s", root, path);

			if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
				found = dir;
			else
				free(dir);
		}
	}
	if (f)
		fclose(f);
	return found ? found : bench_xstrdup(root);
}

/* The whole disk of a partition (its folder in sysfs is the disk's child); others as they
 * are.  0, or -ENODEV if the kernel knows no block device by that number. */
static int whole_disk(dev_t *dev)
{
	char link[64], *real, *part, num[32];
	unsigned ma, mi;
	struct stat st;
	int ret = 0;

	snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(*dev), minor(*dev));
	real = realpath(link, NULL);
	if (!real)
		return -ENODEV;
	part = bench_xasprintf("%s/partition", real);
	if (stat(part, &st) == 0) {
		char *parent = bench_xasprintf("%s/../dev", real);

		if (get_line(parent, num, sizeof(num)) || sscanf(num, "%u:%u", &ma, &mi) != 2)
			ret = -ENODEV;
		else
			*dev = makedev(ma, mi);
		free(parent);
	}
	free(part);
	free(real);
	return ret;
}

/* The device to throttle: DEV (MAJ:MIN or a block device's path), else the one holding
 * archive_path; a partition's disk.  0 or -ENODEV (message logged). */
static int find_device(const char *dev, const char *archive_path, dev_t *out)
{
	unsigned ma, mi;
	struct stat st;
	char extra;

	if (*dev && sscanf(dev, "%u:%u%c", &ma, &mi, &extra) == 2) {
		*out = makedev(ma, mi);
	} else if (*dev) {
		if (stat(dev, &st) < 0) {
			bench_err("--throttle: device=%s: %s", dev, strerror(errno));
			return -ENODEV;
		}
		if (!S_ISBLK(st.st_mode)) {
			bench_err("--throttle: device=%s is not a block device", dev);
			return -ENODEV;
		}
		*out = st.st_rdev;
	} else {
		if (!archive_path || stat(archive_path, &st) < 0) {
			bench_err("--throttle: no local archive to find the device of; give "
				  "device=DEV");
			return -ENODEV;
		}
		*out = st.st_dev;
	}
	if (whole_disk(out)) {
		bench_err("--throttle: %u:%u (%s) is not a block device the kernel lists in "
			  "/sys/dev/block (a tmpfs, overlay or network file system?); give "
			  "device=DEV",
			  major(*out), minor(*out), *dev ? dev : archive_path);
		return -ENODEV;
	}
	return 0;
}

static int set_limits(const struct bench_cgroup *cg, const struct bench_throttle *t, dev_t dev)
{
	unsigned ma = major(dev), mi = minor(dev);
	char line[128];
	int ret = 0;

	if (cg->v2) {
		int n = snprintf(line, sizeof(line), "%u:%u", ma, mi);

		if (t->riops)
			n += snprintf(line + n, sizeof(line) - (size_t)n, " riops=%" PRIu64,
				      t->riops);
		if (t->rbps)
			snprintf(line + n, sizeof(line) - (size_t)n, " rbps=%" PRIu64, t->rbps);
		ret = put_line(cg->path, "io.max", line);
		if (ret)
			bench_err("--throttle: cannot write '%s' to %s/io.max: %s", line, cg->path,
				  strerror(-ret));
		return ret;
	}
	if (t->riops) {
		snprintf(line, sizeof(line), "%u:%u %" PRIu64, ma, mi, t->riops);
		ret = put_line(cg->path, "blkio.throttle.read_iops_device", line);
		if (ret) {
			bench_err("--throttle: cannot write '%s' to "
				  "%s/blkio.throttle.read_iops_device: %s",
				  line, cg->path, strerror(-ret));
			return ret;
		}
	}
	if (t->rbps) {
		snprintf(line, sizeof(line), "%u:%u %" PRIu64, ma, mi, t->rbps);
		ret = put_line(cg->path, "blkio.throttle.read_bps_device", line);
		if (ret)
			bench_err("--throttle: cannot write '%s' to "
				  "%s/blkio.throttle.read_bps_device: %s",
				  line, cg->path, strerror(-ret));
	}
	return ret;
}

/* rmdir, retried while the cgroup still counts processes that are on their way out. */
static int remove_cgroup(const char *path)
{
	struct timespec ts = {0, 20 * 1000 * 1000};

	for (int i = 0; i < 100; i++) {
		if (rmdir(path) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			break;
		nanosleep(&ts, NULL);
	}
	return -errno;
}

/* Removes the empty tarseek-bench-PID folders under parent whose bench is gone (killed, so it
 * could not remove its own). */
static void sweep_stale(const char *parent)
{
	DIR *d = opendir(parent);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		int pid;
		char end;
		if (sscanf(e->d_name, "tarseek-bench-%d%c", &pid, &end) != 1 || pid <= 0 ||
		    pid == (int)getpid() || kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		char *path = bench_xasprintf("%s/%s", parent, e->d_name);
		if (rmdir(path) == 0) /* a cgroup with processes in it stays (EBUSY) */
			bench_info("--throttle: removed %s, left by a bench that was killed", path);
		free(path);
	}
	if (d)
		closedir(d);
}

static void cgroup_free(struct bench_cgroup *cg)
{
	free(cg->path);
	free(cg->parent);
	free(cg);
}

int bench_cgroup_enter(const struct bench_throttle *t, const char *archive_path,
		       struct bench_cgroup **out)
{
	struct bench_cgroup *cg;
	char pid[32];
	struct stat st;
	dev_t dev;
	int ret;

	*out = NULL;
	if (geteuid() != 0) {
		bench_err("--throttle needs root: it makes a block-I/O cgroup (in %s)", CG_ROOT);
		return -EPERM;
	}
	cg = bench_xcalloc(1, sizeof(*cg));
	cg->v2 = have_v2_io();
	if (!cg->v2 && stat(CG_V1 "/blkio.throttle.read_iops_device", &st) < 0) {
		bench_err("--throttle: no block-I/O controller: neither cgroup v2 with io (%s/"
			  "cgroup.controllers) nor cgroup v1's blkio (%s)",
			  CG_ROOT, CG_V1);
		ret = -ENOTSUP;
		goto fail;
	}
	ret = find_device(t->device, archive_path, &dev);
	if (ret)
		goto fail;
	cg->parent = own_cgroup(cg->v2, cg->v2 ? CG_ROOT : CG_V1);
	sweep_stale(cg->parent);
	cg->path = bench_xasprintf("%s/tarseek-bench-%d", cg->parent, (int)getpid());
	if (mkdir(cg->path, 0755) < 0) {
		ret = -errno;
		bench_err("--throttle: cannot make the cgroup %s: %s", cg->path, strerror(errno));
		goto fail;
	}
	if (cg->v2) {
		/* The parent hands the io controller to its children (already done, or refused
		 * because processes live in it: then io.max is missing, said below). */
		put_line(cg->parent, "cgroup.subtree_control", "+io");
		char *max = bench_xasprintf("%s/io.max", cg->path);

		ret = stat(max, &st) < 0 ? -ENOTSUP : 0;
		free(max);
		if (ret) {
			bench_err("--throttle: %s does not hand the io controller to its children "
				  "(a cgroup v2 folder with processes in it cannot): run the bench "
				  "in a cgroup of its own, e.g. systemd-run --scope",
				  cg->parent);
			goto fail_rmdir;
		}
	}
	ret = set_limits(cg, t, dev);
	if (ret)
		goto fail_rmdir;
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	ret = put_line(cg->path, "cgroup.procs", pid);
	if (ret) {
		bench_err("--throttle: cannot move into %s: %s", cg->path, strerror(-ret));
		goto fail_rmdir;
	}
	char what[96];
	int n = 0;

	if (t->riops)
		n = snprintf(what, sizeof(what), "%" PRIu64 " reads/s", t->riops);
	if (t->rbps)
		snprintf(what + n, sizeof(what) - (size_t)n, "%s%.1f MiB/s", n ? " and " : "",
			 (double)t->rbps / (1 << 20));
	bench_info("--throttle: reads from device %u:%u limited to %s (cgroup %s %s)", major(dev),
		   minor(dev), what, cg->v2 ? "v2" : "v1 blkio", cg->path);
	*out = cg;
	return 0;

fail_rmdir:
	remove_cgroup(cg->path);
fail:
	cgroup_free(cg);
	return ret;
}

void bench_cgroup_leave(struct bench_cgroup *cg)
{
	char pid[32];
	int ret;

	if (!cg)
		return;
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	ret = put_line(cg->parent, "cgroup.procs", pid);
	if (ret)
		bench_warn("--throttle: cannot move back to %s: %s", cg->parent, strerror(-ret));
	ret = remove_cgroup(cg->path);
	if (ret)
		bench_warn("--throttle: cannot remove the cgroup %s: %s", cg->path, strerror(-ret));
	cgroup_free(cg);
}
