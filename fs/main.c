/* tarseek: mount an archive as a read-only filesystem.
 *
 * main() parses the options, checks the mount point, opens every source -- archives (finding
 * or building their indexes: this is where a first mount spends its time, with progress on
 * the terminal, drawn by tools/tprog.c) and plain directories -- into one union
 * (mount/union.h), then mounts, detaches unless -f, and serves requests on several threads
 * until unmounted (fusermount3 -u) or signalled (SIGTERM, SIGINT, SIGHUP).  Cleanup runs in
 * reverse order of acquisition.
 *
 * Exit status: 0 after a clean unmount, 1 on an error (archive missing or unreadable, not
 * an archive, mount point problems, mount failure), 2 on a usage error.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codecs/codec.h"
#include "common/env.h"
#include "common/log.h"
#include "common/pool.h"
#include "common/size.h"
#include "net/net.h"
#include "cache/cache.h"
#include "config.h"
#include "mount/dirtree.h"
#include "index/open.h"
#include "seek/workers.h"
#include "fs/handles.h"
#include "fs/loop.h"
#include "fs/mountpoint.h"
#include "fs/options.h"
#include "seek/prefetch.h"
#include "fs/tfs.h"
#include "fs/shadow_later.h"
#include "fs/warmup.h"
#include "fs/daemon_log.h"
#include "fs/dirplus.h"
#include "fs/mem_index.h"
#include "fs/watch.h"
#include "tools/tprog.h"
#if HAVE_LIBARCHIVE
#include "codecs/libarchive/libarchive_src.h"
#endif

#define AHEAD_THREADS 4 /* threads decoding ahead, at most (and at most one per core) */
#define LOOP_THREADS 10 /* threads answering requests, at most (libfuse's default) */
#define LOOP_SPIN_US 50 /* the request loop's leader reads that long before it sleeps, */
#define LOOP_BUSY_SPIN_US 20 /* ... or that long while the prefetch decodes (fs/loop.h) */
#define TFS_HANDLES 4096 /* idle files and folders kept open by inode (no open mode) */

/* Many archives in one mount each hold a descriptor or more: allow as many as we may. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* The name a source shows as (its folder with --no-union): its base name. */
static const char *base_name(const char *path, char *buf, size_t size)
{
	char *shown = http_is_url(path) ? http_shown(path) : NULL; /* no query, no password */

	if (shown)
		path = shown;
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		n--;
	const char *b = path + n;
	while (b > path && b[-1] != '/')
		b--;
	snprintf(buf, size, "%.*s", (int)(path + n - b), b);
	free(shown);
	return buf;
}

/* The mount point relative to folder dir if it lies inside it, else NULL (malloc'd). */
static char *inside_rel(const char *dir, const char *mnt)
{
	char rd[PATH_MAX], rm[PATH_MAX];
	size_t n;

	if (!realpath(dir, rd) || !realpath(mnt, rm))
		return NULL;
	n = strlen(rd);
	if (n == 1) /* the folder is / */
		return strdup(rm + 1);
	if (strncmp(rm, rd, n) == 0 && rm[n] == '/')
		return strdup(rm + n + 1);
	return NULL;
}

/* An archive found in a folder source (-r): opened as the top-level ones are. */
static int open_found(void *opaque, const char *path, struct arch **out)
{
	return arch_open(path, opaque, out);
}

static int add_source(struct un *un, const char *path, const struct arch_opts *ao,
		      struct prefetch *pf, struct shadow_later *later, struct watch *watch,
		      unsigned nth)
{
	char name[256];
	struct stat st;
	int err;

	base_name(path, name, sizeof(name));
	if (!http_is_url(path) && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		struct dirtree *d;
		char *hide = inside_rel(path, ao->idx.mountpoint);
		err = dirtree_open(path, hide, ao->idx.build.recursion > 0, &d);
		free(hide);
		if (err) {
			tfs_log(TFS_LOG_ERR, "folder %s: %s", path, strerror(-err));
			return err;
		}
		return un_add(un, &tree_dir_ops, d, name);
	}
	struct arch *a;
	err = arch_open(path, ao, &a);
	if (err)
		return err;
	/* an index without a shadow gets one once mounted: one there already, or one this open
	 * built with its shadow left for later (idx_build_opts' shadow_later) */
	const struct arch_info *ai = arch_get_info(a);
	if (!http_is_url(path) && (!ai->built || ai->build.shadow_later))
		sl_add(later, path, ai->index);
	if (!http_is_url(path)) /* a change under the mount drops the kernel's pages of it */
		watch_add(watch, path, nth, arch_get_info(a)->entries);
	if (pf && http_is_url(path)) { /* a remote archive fetches only what is read */
		pf_note_skipped(pf);
	} else if (pf) {
		err = arch_prefetch(a, pf);
		if (err)
			tfs_log(TFS_LOG_WARNING, "%s: no prefetch: %s", path, strerror(-err));
	}
	return un_add(un, &tree_archive_ops, a, name);
}

/* SIGTERM, SIGINT, SIGHUP: a clean unmount.  Like libfuse's handler this ends the session;
 * and it wakes the request loop (loop_wake: its threads wait on an eventfd beside /dev/fuse),
 * whichever thread took the signal. */
static struct fuse_session *sig_session;
static volatile sig_atomic_t sig_caught;

static void on_exit_signal(int sig)
{
	sig_caught = sig;
	if (sig_session)
		fuse_session_exit(sig_session);
	loop_wake();
}

static int set_exit_signals(struct fuse_session *se, bool on)
{
	struct sigaction sa = {.sa_handler = on ? on_exit_signal : SIG_DFL};
	const int sigs[] = {SIGTERM, SIGINT, SIGHUP};

	sig_session = on ? se : NULL;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], &sa, NULL) != 0)
			return -1;
	sa.sa_handler = on ? SIG_IGN : SIG_DFL; /* a reader gone: EPIPE, not death */
	return sigaction(SIGPIPE, &sa, NULL);
}

/* The sources exist and make sense, the mount point is usable (o->mountpoint becomes its
 * absolute path, *mnt_abs to free) and holds none of them.  0, or -1 (said why). */
static int check_paths(struct options *o, char **mnt_abs)
{
	for (int i = 0; i < o->nsources; i++) {
		struct stat st;
		if (http_is_url(o->sources[i]))
			continue; /* checked when opened */
		if (stat(o->sources[i], &st) < 0) {
			tfs_log(TFS_LOG_ERR, "archive %s: %s", o->sources[i], strerror(errno));
			return -1;
		}
		if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode)) {
			tfs_log(TFS_LOG_ERR, "%s is not seekable (a pipe, a socket or a terminal): "
				"tarseek reads archives at random offsets; save it to a file first",
				o->sources[i]);
			return -1;
		}
	}
	if (mp_check(o->mountpoint) < 0)
		return -1;
	if (mp_is_fd(o->mountpoint)) /* mounted by the helper: nothing to resolve */
		return 0;
	/* an absolute mount point: libfuse unmounts by this path at exit, after the daemon has
	 * changed to / (detach does, in the foreground too) */
	*mnt_abs = realpath(o->mountpoint, NULL);
	if (!*mnt_abs) {
		tfs_log(TFS_LOG_ERR, "%s: %s", o->mountpoint, strerror(errno));
		return -1;
	}
	o->mountpoint = *mnt_abs;
	for (int i = 0; i < o->nsources; i++) {
		if (!http_is_url(o->sources[i]) && mp_inside(o->sources[i], o->mountpoint)) {
			tfs_log(TFS_LOG_ERR, "%s is inside the mount point %s: the mount would "
				"hide it (and read itself)", o->sources[i], o->mountpoint);
			return -1;
		}
	}
	return 0;
}

/* Remote sources: the cache of fetched pages they share (its disk tier is added once the
 * daemon has forked), and the threads that fetch for them in the background (plan.background,
 * parked before the fork with the rest: park_threads). */
static struct net_env net_env;

static const char *disk_dir(const struct options *o)
{
	if (o->disk_cache_dir)
		return o->disk_cache_dir;
	return getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
}

static int make_net_env(const struct options *o, struct arch_env *env)
{
	bool any = false;

	for (int i = 0; i < o->nsources; i++)
		any = any || http_is_url(o->sources[i]);
	if (!any)
		return 0;
	if (http_global_init() < 0) {
		tfs_log(TFS_LOG_ERR, "cannot initialise libcurl");
		return -1;
	}
	net_env.http = (struct http_opts){.s3_endpoint = o->s3_endpoint,
					  .timeout_ms = o->remote_timeout * 1000u};
	/* decode while the span arrives */
	net_env.plan = (struct rmt_opts){.background = rmt_fetch_new(RMT_FETCHERS)};
	net_env.pages = cache_new(o->remote_cache_size);
	if (!net_env.pages || !net_env.plan.background) {
		tfs_log(TFS_LOG_ERR, "out of memory");
		return -1;
	}
	env->net = &net_env;
	return 0;
}

static void add_net_disk(const struct options *o)
{
	int err;

	if (!net_env.pages || !o->remote_disk_size)
		return;
	err = cache_set_disk(net_env.pages, disk_dir(o), o->remote_disk_size);
	if (err)
		tfs_log(TFS_LOG_WARNING, "no disk cache for fetched data in %s (%s): it is kept in "
			"memory only", disk_dir(o), strerror(-err));
}

/* The chunk cache (with its disk tier) and the decoding-ahead threads the sources share. */
static int make_env(const struct options *o, struct arch_env *env)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int err;

	env->shadow = o->shadow; /* read where there is one (never: not even then) */
	env->cache = cache_new(o->cache_size);
	env->workers = workers_new(ncpu < 1 ? 1 : ncpu > AHEAD_THREADS ? AHEAD_THREADS : (unsigned)ncpu);
	if (!env->cache || !env->workers) {
		tfs_log(TFS_LOG_ERR, "out of memory");
		return -1;
	}
	if (o->disk_cache_size) {
		const char *dir = disk_dir(o);
		err = cache_set_disk(env->cache, dir, o->disk_cache_size);
		if (err && o->disk_cache_dir) {
			tfs_log(TFS_LOG_ERR, "--disk-cache-dir %s: %s", dir, strerror(-err));
			return -1;
		}
		if (err)
			tfs_log(TFS_LOG_WARNING, "no disk cache in %s (%s): decoded data is kept in "
				"memory only", dir, strerror(-err));
	}
	return make_net_env(o, env);
}

/* The FUSE arguments: read-only, named after the (last) source, plus the user's -o options.
 * 0 or -ENOMEM. */
static int fuse_args_for(struct options *o, const char *argv0, struct fuse_args *args)
{
	char base[256], *esc = NULL, *fsname = NULL;
	int n;

	if (fuse_opt_add_arg(args, argv0) < 0 || fuse_opt_add_arg(args, "-o") < 0 ||
	    fuse_opt_add_arg(args, "ro,subtype=tarseek") < 0)
		return -ENOMEM;
	if (o->debug && fuse_opt_add_arg(args, "-d") < 0)
		return -ENOMEM;
	base_name(o->sources[o->nsources - 1], base, sizeof(base));
	if (fuse_opt_add_opt_escaped(&esc, base) < 0)
		return -ENOMEM;
	n = asprintf(&fsname, "fsname=tarseek:%s", esc);
	free(esc);
	if (n < 0)
		return -ENOMEM;
	n = fuse_opt_add_arg(args, "-o") < 0 || fuse_opt_add_arg(args, fsname) < 0;
	free(fsname);
	if (n)
		return -ENOMEM;
	if (opt_has(o->fuse_opts, "allow_other") && !opt_has(o->fuse_opts, "default_permissions") &&
	    opt_add_fuse(o, "default_permissions") < 0)
		return -ENOMEM;
	if (o->fuse_opts &&
	    (fuse_opt_add_arg(args, "-o") < 0 || fuse_opt_add_arg(args, o->fuse_opts) < 0))
		return -ENOMEM;
	return 0;
}

/* Detaches from the terminal unless foreground: forks, and the parent waits until the child
 * says the mount is ready (tfs_init writes a byte to *ready, see tfs.h) or ends without
 * saying so; it exits 0 or 1 accordingly, so that mount(8) and systemd learn whether the
 * mount came up.  The child goes on (0), with *gone a second descriptor of the pipe's write
 * end, which polls POLLERR once the parent has exited (-1 if foreground, or no descriptor is
 * left).  -1 if it cannot fork.  No pool job may be running (park_threads). */
static int detach(bool foreground, const char *mnt, int *ready, int *gone)
{
	int fds[2];
	pid_t pid;

	*ready = *gone = -1;
	if (foreground)
		return chdir("/") == 0 ? 0 : -1;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid > 0) { /* the command: its status is the mount's */
		char c = 0;
		ssize_t n;
		close(fds[1]);
		while ((n = read(fds[0], &c, 1)) < 0 && errno == EINTR)
			;
		/* FUSE's own checks come after the init callback that said yes: a root that
		 * answers is the proof (a daemon that died leaves ENOTCONN) */
		struct stat st;
		if (n == 1 && c == 'y' && (mp_is_fd(mnt) || stat(mnt, &st) == 0))
			_exit(0);
		tfs_log(TFS_LOG_ERR, "the daemon ended before the mount was ready (see the "
			"system log)");
		_exit(1);
	}
	close(fds[0]);
	setsid();
	if (chdir("/") < 0)
		return -1;
	*ready = fds[1];
	*gone = fcntl(fds[1], F_DUPFD_CLOEXEC, 0);
	return 0;
}

/* The daemon is about to fork (detach): the pool's threads stay in the parent (common/pool.h),
 * so every job that might run now -- decoding ahead, background fetches, the caches' disk
 * writers and fault-ahead thread, all possibly started while the sources were opened -- ends
 * here and is joined by its owner; each starts again in the child when next needed. */
static void park_threads(const struct arch_env *env)
{
	workers_park(env->workers); /* it publishes into the cache: first */
	rmt_fetch_park(net_env.plan.background);
	cache_park(env->cache);
	cache_park(net_env.pages);
}

/* What the daemon does beside the requests once mounted: the prefetch and the warm-up.
 *
 * Detached, they wait until the command that started the daemon has exited.  Until then it is
 * checking that the mount answers (detach: the INIT, then a stat of the mount point), and
 * their first work -- the prefetch's readahead of a plain archive, the warm-up's bind mount
 * and first listings -- stood in its way, on the cores and in the FUSE queue: a cold second
 * mount of telemetry.tar waited 7 ms (median) for that stat, 1-3 ms with --no-prefetch.  The
 * starting job (a job of common/pool.h, joined by bg_stop) polls the ready pipe's write end
 * (detach's *gone), which reports POLLERR when the command's read end closes, and an eventfd
 * that bg_stop writes when the session ends first.  In the foreground nobody waits: they
 * start at once, as they did. */
struct bg {
	const struct options *o;
	struct tfs *t;
	struct prefetch *pf;
	int gone_fd;	       /* detach's *gone, or -1 */
	int stop_fd;	       /* eventfd: the session ended before the command exited */
	struct pool_job *job;  /* the job that waits, or NULL */
	struct warmup *warm;   /* what it started (read after bg_stop) */
};

static void bg_start_now(struct bg *b)
{
	const struct options *o = b->o;
	struct tfs *t = b->t;
	uint64_t entries, bytes;

	if (b->pf && pf_start(b->pf) < 0)
		tfs_log(TFS_LOG_WARNING, "no prefetch: cannot start its threads");
	sl_start(t->later);
	un_totals(t->un, &entries, &bytes);
	if (!o->no_prefetch && !o->recursion && entries <= WARMUP_MAX && !mp_is_fd(o->mountpoint)) {
		struct warmup_params wp = {.mountpoint = o->mountpoint, .se = t->se, .un = t->un,
					   .handles = t->handles, .dp = t->dp, .pf = b->pf,
					   .budget = b->pf ? pf_budget(b->pf) : 0,
					   /* the tests make it long, to watch the walk wait */
					   .quiet_ms = (unsigned)env_number(
						   "TARSEEK_WARMUP_QUIET_MS", WARMUP_QUIET_MS, 0, 600000)};
		t->warm = b->warm = warmup_start(&wp); /* best effort */
	}
}

static void *bg_main(void *arg)
{
	struct bg *b = arg;
	struct pollfd p[2] = {{.fd = b->gone_fd, .events = 0}, {.fd = b->stop_fd, .events = POLLIN}};

	while (poll(p, 2, -1) < 0 && errno == EINTR)
		;
	if (!(p[1].revents & POLLIN))
		bg_start_now(b);
	return NULL;
}

static void bg_start(struct bg *b)
{
	if (b->gone_fd >= 0 && (b->stop_fd = eventfd(0, EFD_CLOEXEC)) >= 0 &&
	    pool_start(bg_main, b, "tarseek-start", 0, &b->job) == 0)
		return;
	bg_start_now(b); /* foreground, or cannot wait */
}

/* Before the session goes: the waiting job ends (having started nothing, or everything). */
static void bg_stop(struct bg *b)
{
	if (b->job) {
		uint64_t one = 1;
		ssize_t ignored = write(b->stop_fd, &one, sizeof(one));
		(void)ignored;
		pool_join(b->job);
		b->job = NULL;
	}
	if (b->stop_fd >= 0)
		close(b->stop_fd);
	if (b->gone_fd >= 0)
		close(b->gone_fd);
	b->stop_fd = b->gone_fd = -1;
}

/* The request loop's busy(): the prefetch decodes (fs/loop.h). */
static bool prefetching(void *pf)
{
	return pf_running(pf);
}

/* Mounts, detaches unless -f, and serves until unmounted or signalled.  The exit status. */
static int serve(const struct options *o, struct fuse_args *args, struct tfs *t,
		 struct prefetch *pf, const struct arch_env *env)
{
	struct fuse_session *se = fuse_session_new(args, &tfs_ops, sizeof(tfs_ops), t);
	struct bg bg = {.o = o, .t = t, .pf = pf, .gone_fd = -1, .stop_fd = -1};
	int ret = 1;

	if (!se) {
		tfs_log(TFS_LOG_ERR, "cannot start FUSE (bad -o option?)");
		return 1;
	}
	t->se = se; /* the handlers run only while it exists */
	if (set_exit_signals(se, true) != 0)
		goto out_session;
	if (fuse_session_mount(se, o->mountpoint) != 0) {
		tfs_log(TFS_LOG_ERR, "cannot mount on %s (is /dev/fuse usable? is fusermount3 "
			"installed?)", o->mountpoint);
		goto out_signals;
	}
	if (!o->foreground)
		park_threads(env);
	if (detach(o->foreground, o->mountpoint, &t->ready_fd, &bg.gone_fd) != 0)
		goto out_unmount;
	if (!o->foreground)
		dlog_detached(); /* the --log-file, else syslog */
	add_net_disk(o);
	watch_start(t->watch, se);
	bg_start(&bg);
	{
		unsigned spin = (unsigned)env_number("TARSEEK_SPIN_US", LOOP_SPIN_US, 0, 100000);
		struct loop_params lp = {.max_threads = o->single_thread ? 1 : LOOP_THREADS,
					 .spin_us = spin,
					 .busy_spin_us = spin < LOOP_BUSY_SPIN_US ? spin
										  : LOOP_BUSY_SPIN_US,
					 .busy = prefetching, .busy_arg = pf};
		ret = loop_run(se, &lp);
	}
	/* the loop returns the signal that ended it: that is a clean unmount too */
	ret = (ret == 0 || sig_caught || ret == SIGTERM || ret == SIGINT || ret == SIGHUP) ? 0 : 1;
out_unmount:
	watch_stop(t->watch);
	bg_stop(&bg); /* bg.warm is what it started */
	fuse_session_unmount(se);
out_signals:
	set_exit_signals(se, false);
out_session:
	warmup_end_session(bg.warm);
	fuse_session_destroy(se);
	t->warm = NULL;
	warmup_stop(bg.warm); /* the connection is closed: a listing it waits for fails now */
	return ret;
}

int main(int argc, char **argv)
{
	struct options o = {0};
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct arch_env env = {0};
	struct tfs t = {.timeout = 86400};
	struct prefetch *pf = NULL;
	char *mnt_abs = NULL, *mnt_made = NULL; /* the mount point made for `tarseek SOURCE` */
	char *mem_dir = NULL; /* --index-file :memory: */
	bool made = false;
	int ret = 1;

	tfs_log_set_prog("tarseek");
#if HAVE_LIBARCHIVE
	la_init();
#endif
	t.ready_fd = -1;
	/* Decoded segments are 1 MiB buffers made by one thread and freed by another (eviction):
	 * one malloc arena, so a freed buffer is reused by whichever thread decodes next.  With
	 * two arenas each one grew to about the cache budget (backup.tar.zst, 256 MiB cache:
	 * 550 MiB peak RSS, 280 MiB with one arena, and faster); a fixed mmap threshold instead
	 * keeps RSS down too but made the md5 workload 2.5x slower. */
	mallopt(M_ARENA_MAX, 1);
	if (opt_parse(argc, argv, &o) < 0) {
		tfs_log(TFS_LOG_INFO, "Try 'tarseek --help'.");
		ret = 2;
		goto out;
	}
	if (o.unmount) { /* tarseek -u MOUNTPOINT... */
		ret = 0;
		for (int i = 0; i < o.nsources; i++)
			if (mp_unmount(o.sources[i]) < 0)
				ret = 1;
		goto out;
	}
	if (o.debug)
		tfs_log_level = TFS_LOG_DEBUG;
	else if (o.quiet)
		tfs_log_level = TFS_LOG_WARNING;
	t.debug = o.debug;
	t.set_uid = o.set_uid;
	t.set_gid = o.set_gid;
	t.uid = o.uid;
	t.gid = o.gid;
	t.dmask = o.dmask;
	t.fmask = o.fmask;
	t.max_read = o.max_read;
	if (o.log_file && dlog_open_file(o.log_file) < 0)
		goto out;
	if (!o.mountpoint) { /* tarseek SOURCE: ./NAME, as ratarmount mounts */
		char name[256];
		mnt_made = mp_default(base_name(o.sources[0], name, sizeof(name)), &made);
		if (!mnt_made)
			goto out;
		o.mountpoint = mnt_made;
	}
	if (check_paths(&o, &mnt_abs) < 0)
		goto out;
	if (mi_wanted(o.index_file)) { /* the indexes in a private folder in memory */
		if (!(mem_dir = mi_make()))
			goto out;
		o.index_file = NULL;
		o.index_folder = mem_dir;
		o.shadow = SHADOW_NEVER;
	}
	raise_fd_limit();
	if (make_env(&o, &env) < 0)
		goto out;
	struct arch_opts ao = {
		.idx = {.index_file = o.index_file, .index_folder = o.index_folder,
			.mountpoint = o.mountpoint, .recreate = o.recreate,
			.build = {.gzip_spacing = o.gzip_spacing,
				  .spacing_any = !o.gzip_spacing_set, .threads = o.threads,
				  .progress = o.quiet ? NULL : tprog_index, .recursion = o.recursion,
				  .strip_ext = o.strip_ext, .ignore_zeros = o.ignore_zeros,
				  .oci_raw = o.oci_raw,
				  .shadow = o.shadow, .shadow_max = o.shadow_max,
				  /* the tests make it small, to see a small archive take
				   * that path */
				  .shadow_later = env_number("TARSEEK_SHADOW_LATER_MIN",
								   IDX_SHADOW_LATER_MIN, 0, UINT64_MAX)}},
		.env = env,
	};
	if (un_new(o.no_union, &t.un) < 0 || !(t.handles = th_new(t.un, TFS_HANDLES)) ||
	    !(t.dp = dp_new()))
		goto nomem;
	t.kernel_opens = getenv("TARSEEK_KERNEL_OPENS") && *getenv("TARSEEK_KERNEL_OPENS") == '1';
	if (!o.no_prefetch) {
		uint64_t room = cache_room(env.cache), budget = o.prefetch_size ? o.prefetch_size
									      : o.cache_size;
		pf = pf_new(o.threads, budget < room ? budget : room);
		if (!pf)
			goto nomem;
	}
	t.later = sl_new(o.shadow, o.shadow_max, o.threads);
	t.watch = watch_new(); /* NULL: no inotify, nothing watched */
	struct arch_opts ao_found = ao; /* archives found in folder sources (-r): their */
	ao_found.idx.not_beside = true; /* indexes go where the folder is not touched */
	if (o.recursion)
		un_set_opener(t.un, open_found, &ao_found);
	for (int i = 0; i < o.nsources; i++)
		if (add_source(t.un, o.sources[i], &ao, pf, t.later, t.watch, (unsigned)i))
			goto out; /* the reason was logged */
	if (fuse_args_for(&o, argv[0], &args) < 0)
		goto nomem;
	t.pf = pf;
	ret = serve(&o, &args, &t, pf, &env);
out:
	fuse_opt_free_args(&args);
	watch_free(t.watch);
	sl_free(t.later); /* stopped between two reads of an archive, and joined */
	pf_free(pf); /* before the readers it decodes for */
	/* the handles and sources first: their readers end their decoding ahead before the
	 * threads go */
	th_free(t.handles);
	dp_free(t.dp);
	un_free(t.un);
	workers_free(env.workers);
	rmt_fetch_free(net_env.plan.background); /* after the remote sources */
	cache_free(env.cache);
	cache_free(net_env.pages); /* after the remote sources */
	if (made && rmdir(mnt_made) < 0 && errno != ENOENT)
		tfs_log(TFS_LOG_WARNING, "cannot remove the mount point %s: %s", mnt_made,
			strerror(errno));
	free(mnt_made);
	mi_remove(mem_dir); /* after the sources: nothing holds the indexes now */
	free(mnt_abs);
	dlog_close();
	opt_free(&o);
	pool_shutdown(); /* every job was joined by its owner above: the idle threads go */
	return ret;
nomem:
	tfs_log(TFS_LOG_ERR, "out of memory");
	goto out;
}
