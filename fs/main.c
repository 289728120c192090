/* tarseek: mount an archive as a read-only filesystem.
 *
 * main() parses the options, checks the mount point, opens every source -- archives (finding
 * or building their indexes: this is where a first mount spends its time, with progress on
 * the terminal) and plain directories -- into one union (index/union.h), then mounts, detaches unless -f, and serves requests on several threads until
 * unmounted (fusermount3 -u) or signalled (SIGTERM, SIGINT, SIGHUP).  Cleanup runs in
 * reverse order of acquisition.
 *
 * Exit status: 0 after a clean unmount, 1 on an error (archive missing or unreadable, not
 * an archive, mount point problems, mount failure), 2 on a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "../codecs/codec.h"
#include "../common/log.h"
#include "../common/size.h"
#include "config.h"
#include "dirtree.h"
#include "open.h"
#include "workers.h"
#include "handles.h"
#include "prefetch.h"
#include "tfs.h"
#include "warmup.h"

#define DEFAULT_CACHE_MIB 256
#define DEFAULT_DISK_CACHE_GIB 4
#define DEFAULT_GZIP_SPACING_MIB 4
#define MAX_RECURSION 32
#define AHEAD_THREADS 4 /* threads decoding ahead, at most (and at most one per core) */
#define TFS_HANDLES 4096 /* idle files and folders kept open by inode (no open mode) */

struct options {
	bool foreground, debug, single_thread, quiet, recreate, no_union, strip_ext, ignore_zeros;
	bool no_prefetch;
	uint64_t prefetch_size; /* 0: the memory cache's size */
	unsigned recursion;
	char *fuse_opts; /* comma-separated -o options */
	const char *index_file, *index_folder;
	uint64_t cache_size, gzip_spacing, disk_cache_size;
	const char *disk_cache_dir;
	unsigned threads;
	char **sources; /* archives and folders, in order: the last one wins */
	int nsources;
	const char *mountpoint;
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: tarseek [options] SOURCE... MOUNTPOINT\n"
		"\n"
		"Mounts tar archives (plain, or compressed with %s), single compressed\n"
		"files and plain folders as one read-only filesystem.  The first mount builds an\n"
		"index of each archive (ARCHIVE.index.sqlite beside it, or in ~/.cache/tarseek/);\n"
		"later mounts reuse it.  Several SOURCEs are merged: the last one wins for a file,\n"
		"folders merge.  Every version of a repeated path is under PATH.versions/1..N.\n"
		"\n"
		"Options:\n"
		"  -f, --foreground        stay in the foreground\n"
		"  -d, --debug             log every request (implies -f)\n"
		"  -s, --single-thread     serve requests on one thread\n"
		"      --no-union          mount each SOURCE in its own folder, named after it\n"
		"  -r, --recursive         archives inside archives (.tar, .tar.gz, .gz, ...) are\n"
		"                          mounted as folders in their place\n"
		"      --recursion-depth N at most N levels of archives inside archives (-r: %d)\n"
		"      --strip-extension   such a folder is named without the archive extension\n"
		"                          (a.tar.gz -> a), unless that name is taken\n"
		"  -i, --ignore-zeros      read past zero blocks (the end-of-archive marker), as\n"
		"                          tar --ignore-zeros: archives joined with cat show whole\n"
		"  -o OPT[,OPT...]         mount options, passed to FUSE (allow_other, ...);\n"
		"                          allow_other turns on default_permissions\n"
		"      --index-file PATH   keep the index at PATH\n"
		"      --index-folder DIR  keep indexes in DIR\n"
		"      --recreate-index    rebuild the index even if it is valid\n"
		"      --gzip-spacing MIB  decompressed MiB between gzip checkpoints (default %d)\n"
		"      --cache-size SIZE   decoded-data cache in memory, e.g. 512M (default %dM)\n"
		"      --disk-cache-size SIZE  decoded data kept in an unlinked temporary file\n"
		"                          behind the memory cache, so nothing is decoded twice\n"
		"                          (default %dG; 0: none)\n"
		"      --disk-cache-dir DIR  where that file lives (default $TMPDIR, else /var/tmp)\n"
		"      --threads N         decoder threads while indexing and prefetching\n"
		"                          (default: all cores)\n"
		"      --prefetch-size SIZE  after mounting, decode compressed archives whole\n"
		"                          into the cache in the background when they decode to\n"
		"                          at most SIZE together (default: the --cache-size)\n"
		"      --no-prefetch       decode only what is read\n"
		"  -q, --quiet             only errors and warnings\n"
		"  -h, --help              this help\n"
		"  -V, --version           version and compiled-in codecs\n",
		codec_list(), MAX_RECURSION, DEFAULT_GZIP_SPACING_MIB, DEFAULT_CACHE_MIB,
		DEFAULT_DISK_CACHE_GIB);
}

static int add_fuse_opt(struct options *o, const char *opt)
{
	size_t n = o->fuse_opts ? strlen(o->fuse_opts) : 0;
	char *p = realloc(o->fuse_opts, n + strlen(opt) + 2);

	if (!p)
		return -1;
	if (n)
		p[n++] = ',';
	strcpy(p + n, opt);
	o->fuse_opts = p;
	return 0;
}

static bool has_opt(const char *opts, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = opts; p && *p;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (len == n && strncmp(p, name, n) == 0)
			return true;
		p = c ? c + 1 : NULL;
	}
	return false;
}

enum {
	OPT_INDEX_FILE = 256,
	OPT_INDEX_FOLDER,
	OPT_RECREATE,
	OPT_GZIP_SPACING,
	OPT_CACHE_SIZE,
	OPT_THREADS,
	OPT_NO_UNION,
	OPT_RECURSION_DEPTH,
	OPT_STRIP_EXT,
	OPT_DISK_CACHE_SIZE,
	OPT_DISK_CACHE_DIR,
	OPT_PREFETCH_SIZE,
	OPT_NO_PREFETCH,
};

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{"foreground", no_argument, NULL, 'f'},
		{"debug", no_argument, NULL, 'd'},
		{"single-thread", no_argument, NULL, 's'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{"index-file", required_argument, NULL, OPT_INDEX_FILE},
		{"index-folder", required_argument, NULL, OPT_INDEX_FOLDER},
		{"recreate-index", no_argument, NULL, OPT_RECREATE},
		{"gzip-spacing", required_argument, NULL, OPT_GZIP_SPACING},
		{"cache-size", required_argument, NULL, OPT_CACHE_SIZE},
		{"threads", required_argument, NULL, OPT_THREADS},
		{"no-union", no_argument, NULL, OPT_NO_UNION},
		{"recursive", no_argument, NULL, 'r'},
		{"recursion-depth", required_argument, NULL, OPT_RECURSION_DEPTH},
		{"strip-extension", no_argument, NULL, OPT_STRIP_EXT},
		{"ignore-zeros", no_argument, NULL, 'i'},
		{"disk-cache-size", required_argument, NULL, OPT_DISK_CACHE_SIZE},
		{"disk-cache-dir", required_argument, NULL, OPT_DISK_CACHE_DIR},
		{"prefetch-size", required_argument, NULL, OPT_PREFETCH_SIZE},
		{"no-prefetch", no_argument, NULL, OPT_NO_PREFETCH},
		{0},
	};
	int c;
	long n;
	char *end;

	o->cache_size = (uint64_t)DEFAULT_CACHE_MIB << 20;
	o->disk_cache_size = (uint64_t)DEFAULT_DISK_CACHE_GIB << 30;
	o->gzip_spacing = (uint64_t)DEFAULT_GZIP_SPACING_MIB << 20;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	o->threads = n > 0 ? (unsigned)n : 1;
	while ((c = getopt_long(argc, argv, "fdsqhVrio:", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			o->foreground = true;
			break;
		case 'd':
			o->debug = o->foreground = true;
			break;
		case 's':
			o->single_thread = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("tarseek %s\ncodecs: %s\nFUSE library %d\n", TARSEEK_VERSION, codec_list(),
			       fuse_version());
			exit(0);
		case 'o':
			if (add_fuse_opt(o, optarg) < 0)
				return -1;
			break;
		case OPT_INDEX_FILE:
			o->index_file = optarg;
			break;
		case OPT_INDEX_FOLDER:
			o->index_folder = optarg;
			break;
		case OPT_RECREATE:
			o->recreate = true;
			break;
		case OPT_GZIP_SPACING:
			if (!parse_size(optarg, &o->gzip_spacing) || o->gzip_spacing < 64 * 1024 ||
			    o->gzip_spacing > (1ull << 40)) {
				fprintf(stderr, "tarseek: --gzip-spacing: '%s' is not a size between "
					"64K and 1T (a bare number means MiB)\n", optarg);
				return -1;
			}
			break;
		case OPT_CACHE_SIZE:
			if (!parse_size(optarg, &o->cache_size) || o->cache_size < (4u << 20)) {
				fprintf(stderr, "tarseek: --cache-size: '%s' is not a size of at least "
					"4M (e.g. 512M, 2G)\n", optarg);
				return -1;
			}
			break;
		case 'r':
			o->recursion = MAX_RECURSION;
			break;
		case 'i':
			o->ignore_zeros = true;
			break;
		case OPT_RECURSION_DEPTH:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || n < 0 || n > MAX_RECURSION) {
				fprintf(stderr, "tarseek: --recursion-depth: '%s' is not a number from 0 "
					"to %d\n", optarg, MAX_RECURSION);
				return -1;
			}
			o->recursion = (unsigned)n;
			break;
		case OPT_DISK_CACHE_SIZE:
			if (!parse_size(optarg, &o->disk_cache_size) ||
			    (o->disk_cache_size && o->disk_cache_size < (16u << 20))) {
				fprintf(stderr, "tarseek: --disk-cache-size: '%s' is not 0 or a size of at "
					"least 16M (e.g. 2G)\n", optarg);
				return -1;
			}
			break;
		case OPT_PREFETCH_SIZE:
			if (!parse_size(optarg, &o->prefetch_size)) {
				fprintf(stderr, "tarseek: --prefetch-size: '%s' is not a size\n", optarg);
				return -1;
			}
			o->no_prefetch = o->prefetch_size == 0;
			break;
		case OPT_NO_PREFETCH:
			o->no_prefetch = true;
			break;
		case OPT_DISK_CACHE_DIR:
			o->disk_cache_dir = optarg;
			break;
		case OPT_STRIP_EXT:
			o->strip_ext = true;
			break;
		case OPT_NO_UNION:
			o->no_union = true;
			break;
		case OPT_THREADS:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || *end || n < 1 || n > 256) {
				fprintf(stderr, "tarseek: --threads: '%s' is not a number from 1 to 256\n",
					optarg);
				return -1;
			}
			o->threads = (unsigned)n;
			break;
		default:
			return -1; /* getopt printed the message */
		}
	}
	if (argc - optind < 2) {
		fprintf(stderr, "tarseek: %s\n", argc - optind == 0 ? "no archive and mount point given"
								    : "no mount point given");
		return -1;
	}
	o->sources = argv + optind;
	o->nsources = argc - optind - 1;
	o->mountpoint = argv[argc - 1];
	return 0;
}

/* True if path is already a mount point (listed in /proc/self/mountinfo). */
static bool is_mounted(const char *path)
{
	char real[PATH_MAX], line[8192];
	FILE *f;
	bool found = false;

	if (!realpath(path, real) || !(f = fopen("/proc/self/mountinfo", "r")))
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		/* id parent major:minor root MOUNTPOINT ... with \ooo escapes */
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
		found = strcmp(mnt, real) == 0;
	}
	fclose(f);
	return found;
}

/* True if path is mnt or lies below it. */
static bool path_inside(const char *path, const char *mnt)
{
	char rp[PATH_MAX], rm[PATH_MAX];
	size_t n;

	if (!realpath(path, rp) || !realpath(mnt, rm))
		return false;
	n = strlen(rm);
	return strncmp(rp, rm, n) == 0 && (rp[n] == '/' || rp[n] == '\0' || n == 1);
}

static int check_mountpoint(const char *mnt)
{
	struct stat st;

	if (stat(mnt, &st) < 0) {
		if (errno == ENOTCONN)
			fprintf(stderr, "tarseek: mount point %s is a dead FUSE mount: unmount it first "
				"(fusermount3 -u %s)\n", mnt, mnt);
		else
			fprintf(stderr, "tarseek: mount point %s: %s\n", mnt, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "tarseek: mount point %s is not a directory\n", mnt);
		return -1;
	}
	if (is_mounted(mnt)) {
		fprintf(stderr, "tarseek: mount point %s is busy: something is already mounted there\n",
			mnt);
		return -1;
	}
	return 0;
}

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
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		n--;
	const char *b = path + n;
	while (b > path && b[-1] != '/')
		b--;
	snprintf(buf, size, "%.*s", (int)(path + n - b), b);
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

static int add_source(struct un *un, const char *path, const struct arch_opts *ao,
		      struct prefetch *pf)
{
	char name[256];
	struct stat st;
	int err;

	base_name(path, name, sizeof(name));
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		struct dirtree *d;
		char *hide = inside_rel(path, ao->idx.mountpoint);
		err = dirtree_open(path, hide, &d);
		free(hide);
		if (err) {
			fprintf(stderr, "tarseek: folder %s: %s\n", path, strerror(-err));
			return err;
		}
		return un_add(un, &tree_dir_ops, d, name);
	}
	struct arch *a;
	err = arch_open(path, ao, &a);
	if (err)
		return err;
	if (pf) {
		err = arch_prefetch(a, pf);
		if (err)
			tfs_log(TFS_LOG_WARNING, "%s: no prefetch: %s", path, strerror(-err));
	}
	return un_add(un, &tree_archive_ops, a, name);
}

static void syslog_sink(int level, const char *msg, void *opaque)
{
	syslog(level, "%s", msg);
}

/* SIGTERM, SIGINT, SIGHUP: a clean unmount.  Like libfuse's handler this ends the session;
 * unlike it, a signal taken by a thread other than the main one is passed on to the main
 * thread, which waits in sem_wait() inside fuse_session_loop_mt() and wakes only for a
 * signal of its own (a worker that took it between its exit check and its read() of
 * /dev/fuse would otherwise leave the daemon waiting for the next request). */
static struct fuse_session *sig_session;
static pthread_t sig_main_thread;
static volatile sig_atomic_t sig_caught;

static void on_exit_signal(int sig)
{
	sig_caught = sig;
	if (sig_session)
		fuse_session_exit(sig_session);
	if (!pthread_equal(pthread_self(), sig_main_thread))
		pthread_kill(sig_main_thread, sig);
}

static int set_exit_signals(struct fuse_session *se, bool on)
{
	struct sigaction sa = {.sa_handler = on ? on_exit_signal : SIG_DFL};
	const int sigs[] = {SIGTERM, SIGINT, SIGHUP};

	sig_session = on ? se : NULL;
	sig_main_thread = pthread_self();
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
		if (stat(o->sources[i], &st) < 0) {
			fprintf(stderr, "tarseek: archive %s: %s\n", o->sources[i], strerror(errno));
			return -1;
		}
		if (S_ISDIR(st.st_mode) && o->nsources == 1 && !o->no_union) {
			fprintf(stderr, "tarseek: %s is a directory, not an archive (a folder can join "
				"archives in a union mount)\n", o->sources[i]);
			return -1;
		}
	}
	if (check_mountpoint(o->mountpoint) < 0)
		return -1;
	/* an absolute mount point: libfuse unmounts by this path at exit, after the daemon has
	 * changed to / (fuse_daemonize does, in the foreground too) */
	*mnt_abs = realpath(o->mountpoint, NULL);
	if (!*mnt_abs) {
		fprintf(stderr, "tarseek: %s: %s\n", o->mountpoint, strerror(errno));
		return -1;
	}
	o->mountpoint = *mnt_abs;
	for (int i = 0; i < o->nsources; i++) {
		if (path_inside(o->sources[i], o->mountpoint)) {
			fprintf(stderr, "tarseek: %s is inside the mount point %s: the mount would hide "
				"it (and read itself)\n", o->sources[i], o->mountpoint);
			return -1;
		}
	}
	return 0;
}

/* The chunk cache (with its disk tier) and the decoding-ahead threads the sources share. */
static int make_env(const struct options *o, struct arch_env *env)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int err;

	env->cache = cache_new(o->cache_size);
	env->workers = workers_new(ncpu < 1 ? 1 : ncpu > AHEAD_THREADS ? AHEAD_THREADS : (unsigned)ncpu);
	if (!env->cache || !env->workers) {
		fprintf(stderr, "tarseek: out of memory\n");
		return -1;
	}
	if (o->disk_cache_size) {
		const char *dir = o->disk_cache_dir;
		if (!dir)
			dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/var/tmp";
		err = cache_set_disk(env->cache, dir, o->disk_cache_size);
		if (err && o->disk_cache_dir) {
			fprintf(stderr, "tarseek: --disk-cache-dir %s: %s\n", dir, strerror(-err));
			return -1;
		}
		if (err)
			tfs_log(TFS_LOG_WARNING, "no disk cache in %s (%s): decoded data is kept in "
				"memory only", dir, strerror(-err));
	}
	return 0;
}

/* The FUSE arguments: read-only, named after the (last) source, plus the user's -o options.
 * 0 or -ENOMEM. */
static int fuse_args_for(struct options *o, const char *argv0, struct fuse_args *args)
{
	const char *base = strrchr(o->sources[o->nsources - 1], '/');
	char *esc = NULL, *fsname = NULL;
	int n;

	if (fuse_opt_add_arg(args, argv0) < 0 || fuse_opt_add_arg(args, "-o") < 0 ||
	    fuse_opt_add_arg(args, "ro,subtype=tarseek") < 0)
		return -ENOMEM;
	if (o->debug && fuse_opt_add_arg(args, "-d") < 0)
		return -ENOMEM;
	base = base ? base + 1 : o->sources[o->nsources - 1];
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
	if (has_opt(o->fuse_opts, "allow_other") && !has_opt(o->fuse_opts, "default_permissions") &&
	    add_fuse_opt(o, "default_permissions") < 0)
		return -ENOMEM;
	if (o->fuse_opts &&
	    (fuse_opt_add_arg(args, "-o") < 0 || fuse_opt_add_arg(args, o->fuse_opts) < 0))
		return -ENOMEM;
	return 0;
}

/* Mounts, detaches unless -f, and serves until unmounted or signalled.  The exit status. */
static int serve(const struct options *o, struct fuse_args *args, struct tfs *t,
		 struct prefetch *pf)
{
	struct fuse_session *se = fuse_session_new(args, &tfs_ops, sizeof(tfs_ops), t);
	struct fuse_loop_config *loop = NULL;
	struct warmup *warm = NULL;
	int ret = 1;

	if (!se) {
		fprintf(stderr, "tarseek: cannot start FUSE (bad -o option?)\n");
		return 1;
	}
	if (set_exit_signals(se, true) != 0)
		goto out_session;
	if (fuse_session_mount(se, o->mountpoint) != 0) {
		fprintf(stderr, "tarseek: cannot mount on %s (is /dev/fuse usable? is fusermount3 "
			"installed?)\n", o->mountpoint);
		goto out_signals;
	}
	if (fuse_daemonize(o->foreground) != 0)
		goto out_unmount;
	sig_main_thread = pthread_self(); /* the thread that runs the loop, after the fork */
	if (!o->foreground) {
		openlog("tarseek", LOG_PID, LOG_DAEMON);
		tfs_log_set_sink(syslog_sink, NULL);
	}
	if (pf && pf_start(pf) < 0)
		tfs_log(TFS_LOG_WARNING, "no prefetch: cannot start its threads");
	uint64_t entries, bytes;
	un_totals(t->un, &entries, &bytes);
	if (!o->no_prefetch && !o->recursion && entries <= WARMUP_MAX) {
		struct warmup_params wp = {.mountpoint = o->mountpoint, .se = se, .un = t->un,
					   .handles = t->handles, .pf = pf,
					   .budget = pf ? pf_budget(pf) : 0};
		t->warm = warm = warmup_start(&wp); /* best effort */
	}
	if (o->single_thread) {
		ret = fuse_session_loop(se);
	} else {
		loop = fuse_loop_cfg_create();
		if (!loop)
			goto out_unmount;
		fuse_loop_cfg_set_clone_fd(loop, 0);
		fuse_loop_cfg_set_idle_threads(loop, 10);
		ret = fuse_session_loop_mt(se, loop);
	}
	/* the loop returns the signal that ended it: that is a clean unmount too */
	ret = (ret == 0 || sig_caught || ret == SIGTERM || ret == SIGINT || ret == SIGHUP) ? 0 : 1;
out_unmount:
	fuse_session_unmount(se);
out_signals:
	set_exit_signals(se, false);
out_session:
	warmup_end_session(warm);
	fuse_session_destroy(se);
	t->warm = NULL;
	warmup_stop(warm); /* the connection is closed: a listing it waits for fails now */
	fuse_loop_cfg_destroy(loop);
	return ret;
}

int main(int argc, char **argv)
{
	struct options o = {0};
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct arch_env env = {0};
	struct tfs t = {.timeout = 86400};
	struct prefetch *pf = NULL;
	char *mnt_abs = NULL;
	int ret = 1;

	tfs_log_set_prog("tarseek");
	/* Decoded segments are 1 MiB buffers made by one thread and freed by another (eviction):
	 * one malloc arena, so a freed buffer is reused by whichever thread decodes next.  With
	 * two arenas each one grew to about the cache budget (backup.tar.zst, 256 MiB cache:
	 * 550 MiB peak RSS, 280 MiB with one arena, and faster); a fixed mmap threshold instead
	 * keeps RSS down too but made the md5 workload 2.5x slower. */
	mallopt(M_ARENA_MAX, 1);
	if (parse_args(argc, argv, &o) < 0) {
		fprintf(stderr, "Try 'tarseek --help'.\n");
		free(o.fuse_opts);
		return 2;
	}
	if (o.debug)
		tfs_log_level = TFS_LOG_DEBUG;
	else if (o.quiet)
		tfs_log_level = TFS_LOG_WARNING;
	t.debug = o.debug;
	if (check_paths(&o, &mnt_abs) < 0)
		goto out;
	raise_fd_limit();
	if (make_env(&o, &env) < 0)
		goto out;
	struct arch_opts ao = {
		.idx = {.index_file = o.index_file, .index_folder = o.index_folder,
			.mountpoint = o.mountpoint, .recreate = o.recreate,
			.build = {.gzip_spacing = o.gzip_spacing, .threads = o.threads,
				  .progress = !o.quiet, .recursion = o.recursion,
				  .strip_ext = o.strip_ext, .ignore_zeros = o.ignore_zeros}},
		.env = env,
	};
	if (un_new(o.no_union, &t.un) < 0 || !(t.handles = th_new(t.un, TFS_HANDLES)))
		goto nomem;
	t.kernel_opens = getenv("TARSEEK_KERNEL_OPENS") && *getenv("TARSEEK_KERNEL_OPENS") == '1';
	if (!o.no_prefetch) {
		uint64_t room = cache_room(env.cache), budget = o.prefetch_size ? o.prefetch_size
									      : o.cache_size;
		pf = pf_new(o.threads, budget < room ? budget : room);
		if (!pf)
			goto nomem;
	}
	for (int i = 0; i < o.nsources; i++)
		if (add_source(t.un, o.sources[i], &ao, pf))
			goto out; /* the reason was logged */
	if (fuse_args_for(&o, argv[0], &args) < 0)
		goto nomem;
	t.pf = pf;
	ret = serve(&o, &args, &t, pf);
out:
	fuse_opt_free_args(&args);
	pf_free(pf); /* before the readers it decodes for */
	/* the handles and sources first: their readers end their decoding ahead before the
	 * threads go */
	th_free(t.handles);
	un_free(t.un);
	workers_free(env.workers);
	cache_free(env.cache);
	free(mnt_abs);
	free(o.fuse_opts);
	return ret;
nomem:
	fprintf(stderr, "tarseek: out of memory\n");
	goto out;
}
