/* tarseek's options (see options.h). */
#include "fs/options.h"

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codecs/codec.h"
#include "codecs/bzip2/bzip2_block.h"
#include "codecs/gzip/inflater.h"
#include "index/build.h"
#include "containers/container.h"
#include "common/dl.h"
#include "common/log.h"
#include "common/size.h"
#include "crypto/keyring.h"
#include "config.h"
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

enum opt_id {
	O_FOREGROUND,
	O_DEBUG,
	O_SINGLE,
	O_NO_UNION,
	O_RECURSIVE,
	O_DEPTH,
	O_STRIP,
	O_IGNORE_ZEROS,
	O_OCI_RAW,
	O_OPTION,
	O_INDEX_FILE,
	O_INDEX_FOLDER,
	O_PASSWORD,
	O_PASSWORD_FILE,
	O_RECREATE,
	O_GZIP_SPACING,
	O_CACHE_SIZE,
	O_DISK_CACHE_SIZE,
	O_DISK_CACHE_DIR,
	O_THREADS,
	O_PARALLEL,
	O_PREFETCH_SIZE,
	O_NO_PREFETCH,
	O_SHADOW,
	O_SHADOW_MAX,
	O_S3_ENDPOINT,
	O_REMOTE_TIMEOUT,
	O_REMOTE_CACHE,
	O_REMOTE_DISK,
	O_UNMOUNT,
	O_QUIET,
	O_LOG_FILE,
	O_HELP,
	O_VERSION,
};

struct spec {
	enum opt_id id;
	const char *name; /* long option; as a mount option with '_' for '-' */
	char letter;	  /* short option, or 0 */
	const char *arg;  /* its argument in --help, NULL: none */
	const char *help; /* lines separated by '\n' */
	bool mount;	  /* also a mount option (-o) */
};

static const struct spec specs[] = {
    {O_FOREGROUND, "foreground", 'f', NULL, "stay in the foreground", true},
    {O_DEBUG, "debug", 'd', NULL, "log every request (implies -f)", true},
    {O_SINGLE, "single-thread", 's', NULL, "serve requests on one thread", true},
    {O_NO_UNION, "no-union", 0, NULL, "mount each SOURCE in its own folder, named after it", true},
    {O_RECURSIVE, "recursive", 'r', NULL,
     "archives inside archives (.tar, .tar.gz, .zip, .7z, .gz, ...)\n"
     "and in folder sources are mounted as folders in their place",
     true},
    {O_DEPTH, "recursion-depth", 0, "N", "at most N levels of archives inside archives (-r: 32)",
     true},
    {O_STRIP, "strip-extension", 0, NULL,
     "such a folder is named without the archive extension\n"
     "(a.tar.gz -> a), unless that name is taken",
     true},
    {O_IGNORE_ZEROS, "ignore-zeros", 'i', NULL,
     "read past zero blocks (the end-of-archive marker), as\n"
     "tar --ignore-zeros: archives joined with cat show whole",
     true},
    {O_OCI_RAW, "oci-raw", 0, NULL,
     "a container image (OCI layout, docker save) shows as\n"
     "the tar it is, its layers as files, not merged",
     true},
    {O_OPTION, NULL, 'o', "OPT[,OPT...]",
     "mount options: every long option as NAME[=VALUE],\n"
     "uid=, gid=, umask=, dmask=, fmask=, and FUSE's\n"
     "(allow_other, ...); allow_other turns on\n"
     "default_permissions; see tarseek(1)",
     false},
    {O_INDEX_FILE, "index-file", 0, "PATH", "keep the index at PATH", true},
    {O_INDEX_FOLDER, "index-folder", 0, "DIR", "keep indexes in DIR", true},
    {O_RECREATE, "recreate-index", 'c', NULL, "rebuild the index even if it is valid", true},
    {O_PASSWORD, "password", 0, "PW",
     "a password for encrypted zip entries (ZipCrypto,\n"
     "AES) and 7z archives (AES-256); repeat it for\n"
     "several, tried in order", true},
    {O_PASSWORD_FILE, "password-file", 0, "FILE",
     "the passwords in FILE, one a line, tried in order", true},
    {O_GZIP_SPACING, "gzip-spacing", 0, "SIZE",
     "decompressed bytes between checkpoints, e.g. 1M\n"
     "(default 256K in gzip streams, else 4M; a bare\n"
     "number means MiB)", true},
    {O_CACHE_SIZE, "cache-size", 0, "SIZE",
     "decoded-data cache in memory, e.g. 512M (default 256M)", true},
    {O_DISK_CACHE_SIZE, "disk-cache-size", 0, "SIZE",
     "decoded data kept in an unlinked temporary file\n"
     "behind the memory cache, so nothing is decoded twice\n"
     "(default 4G; 0: none)",
     true},
    {O_DISK_CACHE_DIR, "disk-cache-dir", 0, "DIR",
     "where that file lives (default $TMPDIR, else /var/tmp)", true},
    {O_THREADS, "threads", 0, "N",
     "decoder threads while indexing and prefetching\n"
     "(default: all cores)",
     true},
    {O_PARALLEL, "parallelization", 'P', "N",
     "ratarmount's name for --threads (0: all cores)", true},
    {O_PREFETCH_SIZE, "prefetch-size", 0, "SIZE",
     "after mounting, decode compressed archives whole\n"
     "into the cache in the background when they decode to\n"
     "at most SIZE together (default: the --cache-size)",
     true},
    {O_NO_PREFETCH, "no-prefetch", 0, NULL, "decode only what is read", true},
    {O_SHADOW, "shadow", 0, "MODE",
     "auto (default), always or never: keep what the first\n"
     "mount decodes beside the index (INDEX.shadow.zst), so\n"
     "later mounts read it instead of decoding again; auto:\n"
     "the streams slow to seek in (xz, bzip2, .Z, 7z, ...)",
     true},
    {O_SHADOW_MAX, "shadow-max", 0, "SIZE",
     "the most a shadow may take (default: no more than\n"
     "half the free space where it goes)",
     true},
    {O_S3_ENDPOINT, "s3-endpoint", 0, "URL",
     "an S3-compatible store for s3:// sources (path-style;\n"
     "default $AWS_ENDPOINT_URL, else AWS)",
     true},
    {O_REMOTE_TIMEOUT, "remote-timeout", 0, "SECONDS",
     "a request to a server, retries included, fails (EIO)\n"
     "after this long (default 30)",
     true},
    {O_REMOTE_CACHE, "remote-cache-size", 0, "SIZE",
     "bytes fetched from servers kept in memory (default 128M)", true},
    {O_REMOTE_DISK, "remote-disk-cache", 0, "SIZE",
     "... and behind it on disk, in the --disk-cache-dir\n"
     "(default 1G; 0: none)",
     true},
    {O_UNMOUNT, "unmount", 'u', NULL,
     "unmount the MOUNTPOINTs given and wait for their\n"
     "daemons to end (tarseek -u MOUNTPOINT...)",
     false},
    {O_QUIET, "quiet", 'q', NULL, "only errors and warnings", true},
    {O_LOG_FILE, "log-file", 0, "PATH",
     "also write messages to PATH (appended; once detached,\n"
     "there instead of syslog); the last ones are always\n"
     "on the root: getfattr -n user.tarseek.log MOUNTPOINT",
     true},
    {O_HELP, "help", 'h', NULL, "this help", false},
    {O_VERSION, "version", 'V', NULL, "version and compiled-in codecs", false},
};

#define NSPECS (sizeof(specs) / sizeof(specs[0]))

void opt_usage(FILE *f)
{
	fprintf(f,
		"Usage: tarseek [options] SOURCE... MOUNTPOINT\n"
		"       tarseek [options] SOURCE    (mounts at ./NAME: SOURCE's name without\n"
		"                                its extension, made, and removed at unmount)\n"
		"       tarseek -u MOUNTPOINT...\n"
		"\n"
		"Mounts tar archives (plain, or compressed with %s), zip and 7z\n"
		"archives, the archives libarchive reads (rar, iso9660, cpio, ar, ...),\n"
		"single compressed files and plain folders as one read-only\n"
		"filesystem; a SOURCE may also be an http://, https:// or s3://BUCKET/KEY\n"
		"URL, read by range requests.  The first mount builds an index of each archive\n"
		"(ARCHIVE.index.sqlite beside it, or in ~/.cache/tarseek/, /var/cache/tarseek/\n"
		"without HOME); later mounts reuse it.  Several SOURCEs are merged: the last\n"
		"one wins for a file, folders merge.  Every version of a repeated path is under\n"
		"PATH.versions/1..N.\n"
		"\n"
		"Options:\n",
		codec_list());
	for (size_t i = 0; i < NSPECS; i++) {
		const struct spec *s = &specs[i];
		char head[64];
		int n;
		if (s->letter && s->name)
			n = snprintf(head, sizeof(head), "  -%c, --%s%s%s", s->letter, s->name,
				     s->arg ? " " : "", s->arg ? s->arg : "");
		else if (s->letter)
			n = snprintf(head, sizeof(head), "  -%c %s", s->letter, s->arg ? s->arg : "");
		else
			n = snprintf(head, sizeof(head), "      --%s%s%s", s->name, s->arg ? " " : "",
				     s->arg ? s->arg : "");
		fputs(head, f);
		for (const char *h = s->help; *h;) {
			const char *nl = strchr(h, '\n');
			size_t len = nl ? (size_t)(nl - h) : strlen(h);
			if (n >= 26) {
				fputs("\n", f);
				n = 0;
			}
			fprintf(f, "%*s%.*s\n", 26 - n, "", (int)len, h);
			n = 0;
			h += len + (nl != NULL);
		}
	}
}

int opt_add_fuse(struct options *o, const char *opt)
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

bool opt_has(const char *opts, const char *name)
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

static bool parse_uint(const char *s, int base, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	unsigned long v = strtoul(s, &end, base);
	if (errno || end == s || *end || v > max || *s == '-')
		return false;
	*out = v;
	return true;
}

/* --password PW, -o password=PW: the password into the keyring (keyring.h), and val's bytes
 * wiped (argv's, or the -o copy's), so that /proc/PID/cmdline no longer shows it.  Messages
 * say why, never the password.  0 or -1. */
static int add_password(const char *val, const char *how)
{
	size_t len = strlen(val);
	int err = kr_add(val, len);

	explicit_bzero((char *)val, len);
	if (err == -E2BIG)
		tfs_log(TFS_LOG_ERR, "%s: too many passwords (at most %d) or one longer than %d "
			"bytes", how, KR_MAX, KR_PW_MAX);
	else if (err == -EINVAL)
		tfs_log(TFS_LOG_ERR, "%s: an empty password", how);
	else if (err)
		tfs_log(TFS_LOG_ERR, "%s: %s", how, strerror(-err));
	return err ? -1 : 0;
}

/* --password-file FILE: each of its lines a password (the file's name is no secret). */
static int add_password_file(const char *path, const char *how)
{
	int err = kr_add_file(path);

	if (err == -ENODATA)
		tfs_log(TFS_LOG_ERR, "%s %s: no password in it", how, path);
	else if (err == -E2BIG)
		tfs_log(TFS_LOG_ERR, "%s %s: too many passwords (at most %d) or one longer than "
			"%d bytes", how, path, KR_MAX, KR_PW_MAX);
	else if (err)
		tfs_log(TFS_LOG_ERR, "%s %s: %s", how, path, strerror(-err));
	return err ? -1 : 0;
}

/* Applies option s, one that takes a number, a size or a choice, with value val.  0 or -1
 * (said why). */
static int apply_value(struct options *o, const struct spec *s, const char *val, const char *how)
{
	unsigned long v;

	switch (s->id) {
	case O_DEPTH:
		if (!parse_uint(val, 10, OPT_MAX_RECURSION, &v)) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not a number from 0 to %d", how, val,
				OPT_MAX_RECURSION);
			return -1;
		}
		o->recursion = (unsigned)v;
		return 0;
	case O_GZIP_SPACING:
		if (!parse_size(val, &o->gzip_spacing) || o->gzip_spacing < 64 * 1024 ||
		    o->gzip_spacing > (1ull << 40)) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not a size between 64K and 1T (a bare "
				"number means MiB)", how, val);
			return -1;
		}
		o->gzip_spacing_set = true;
		return 0;
	case O_CACHE_SIZE:
		if (!parse_size(val, &o->cache_size) || o->cache_size < (4u << 20)) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not a size of at least 4M (e.g. 512M, "
				"2G)", how, val);
			return -1;
		}
		return 0;
	case O_DISK_CACHE_SIZE:
		if (!parse_size(val, &o->disk_cache_size) ||
		    (o->disk_cache_size && o->disk_cache_size < (16u << 20))) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not 0 or a size of at least 16M (e.g. "
				"2G)", how, val);
			return -1;
		}
		return 0;
	case O_THREADS:
		if (!parse_uint(val, 10, 256, &v) || v < 1) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not a number from 1 to 256", how, val);
			return -1;
		}
		o->threads = (unsigned)v;
		return 0;
	case O_PARALLEL: {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		if (!parse_uint(val, 10, 256, &v)) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not a number from 0 to 256", how, val);
			return -1;
		}
		o->threads = v ? (unsigned)v : ncpu > 0 ? (unsigned)ncpu : 1;
		return 0;
	}
	case O_PREFETCH_SIZE:
		if (!parse_size(val, &o->prefetch_size)) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not a size", how, val);
			return -1;
		}
		o->no_prefetch = o->prefetch_size == 0;
		return 0;
	case O_SHADOW:
		if (shadow_mode_parse(val, &o->shadow) < 0) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not auto, always or never", how, val);
			return -1;
		}
		return 0;
	case O_SHADOW_MAX:
		if (!parse_size(val, &o->shadow_max) || o->shadow_max < (1u << 20)) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not a size of at least 1M", how, val);
			return -1;
		}
		return 0;
	case O_S3_ENDPOINT:
		if (strncmp(val, "http://", 7) != 0 && strncmp(val, "https://", 8) != 0) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not an http:// or https:// URL", how,
				val);
			return -1;
		}
		o->s3_endpoint = val;
		return 0;
	case O_REMOTE_TIMEOUT:
		if (!parse_uint(val, 10, 86400, &v) || v < 1) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not a number of seconds from 1 to "
				"86400", how, val);
			return -1;
		}
		o->remote_timeout = (unsigned)v;
		return 0;
	case O_REMOTE_CACHE:
		if (!parse_size(val, &o->remote_cache_size) || o->remote_cache_size < (4u << 20)) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not a size of at least 4M", how, val);
			return -1;
		}
		return 0;
	case O_REMOTE_DISK:
		if (!parse_size(val, &o->remote_disk_size) ||
		    (o->remote_disk_size && o->remote_disk_size < (16u << 20))) {
			tfs_log(TFS_LOG_ERR, "%s: '%s' is not 0 or a size of at least 16M", how,
				val);
			return -1;
		}
		return 0;
	default:
		break;
	}
	return 0;
}

/* Applies option s with value val (NULL for a flag).  how: "--name" or "-o name", for
 * messages.  0 or -1 (said why). */
static int apply(struct options *o, const struct spec *s, const char *val, const char *how)
{
	switch (s->id) {
	case O_FOREGROUND:
		o->foreground = true;
		return 0;
	case O_DEBUG:
		o->debug = o->foreground = true;
		return 0;
	case O_SINGLE:
		o->single_thread = true;
		return 0;
	case O_NO_UNION:
		o->no_union = true;
		return 0;
	case O_RECURSIVE:
		o->recursion = OPT_MAX_RECURSION;
		return 0;
	case O_STRIP:
		o->strip_ext = true;
		return 0;
	case O_IGNORE_ZEROS:
		o->ignore_zeros = true;
		return 0;
	case O_OCI_RAW:
		o->oci_raw = true;
		return 0;
	case O_INDEX_FILE:
		o->index_file = val;
		return 0;
	case O_LOG_FILE:
		o->log_file = val;
		return 0;
	case O_INDEX_FOLDER:
		o->index_folder = val;
		return 0;
	case O_RECREATE:
		o->recreate = true;
		return 0;
	case O_PASSWORD:
		return add_password(val, how);
	case O_PASSWORD_FILE:
		return add_password_file(val, how);
	case O_DISK_CACHE_DIR:
		o->disk_cache_dir = val;
		return 0;
	case O_NO_PREFETCH:
		o->no_prefetch = true;
		return 0;
	case O_UNMOUNT:
		o->unmount = true;
		return 0;
	case O_QUIET:
		o->quiet = true;
		return 0;
	case O_HELP:
		opt_usage(stdout);
		exit(0);
	case O_VERSION:
		printf("tarseek %s\ncodecs: %s\ncontainers: %s\ninflate (gzip, zip): %s\n"
		       "bzip2 blocks: %s\nFUSE library %d\nloaded when needed: %s\n",
		       TARSEEK_VERSION, codec_list(), cont_list(), infl_kind_name(infl_default()),
		       bzb_use_libbz2() ? "libbz2" : "tarseek's own decoder (libbz2 for randomised)",
		       fuse_version(), dl_optional());
		exit(0);
	case O_OPTION:
		break;
	default:
		return apply_value(o, s, val, how);
	}
	return 0;
}

/* ---- mount options ----------------------------------------------------------------------- */

/* Mount flags libfuse 3 knows: passed on. */
static const char *const fuse_flags[] = {"suid",  "nosuid", "dev",     "nodev", "exec",
					 "noexec", "async", "sync",    "dirsync", "atime",
					 "noatime", "allow_other", "allow_root",
					 "default_permissions", "auto_unmount", "blkdev"};
/* FUSE's options with a value: passed on. */
static const char *const fuse_valued[] = {"max_read", "fsname", "subtype", "blksize"};
/* Meaningless for a read-only archive, or libfuse 2's: accepted, ignored. */
static const char *const ignored[] = {
    "rw",	    "ro",	   "relatime",	 "norelatime", "strictatime", "nostrictatime",
    "lazytime",	    "nolazytime",  "diratime",	 "nodiratime", "auto",	      "noauto",
    "user",	    "nouser",	   "users",	 "owner",      "group",	      "_netdev",
    "nofail",	    "defaults",	   "nonempty",	 "kernel_cache", "auto_cache", "big_writes",
    "large_read",   "hard_remove", "use_ino",	 "readdir_ino"};

static bool in_list(const char *const *list, size_t n, const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(list[i]) == len && strncmp(list[i], name, len) == 0)
			return true;
	return false;
}

#define IN(list, name, len) in_list(list, sizeof(list) / sizeof(list[0]), name, len)

/* The option spec NAME names (with '_' or '-'), for -o. */
static const struct spec *spec_named(const char *name, size_t len)
{
	for (size_t i = 0; i < NSPECS; i++) {
		const char *n = specs[i].name;
		if (!n || !specs[i].mount || strlen(n) != len)
			continue;
		size_t k = 0;
		while (k < len && (n[k] == name[k] || (n[k] == '-' && name[k] == '_')))
			k++;
		if (k == len)
			return &specs[i];
	}
	return NULL;
}

static int owner_option(struct options *o, const char *name, const char *val)
{
	unsigned long v;

	if (!strcmp(name, "uid") || !strcmp(name, "gid")) {
		bool uid = name[0] == 'u';
		if (!parse_uint(val, 10, UINT32_MAX - 1, &v)) {
			struct passwd *pw = uid ? getpwnam(val) : NULL;
			struct group *gr = uid ? NULL : getgrnam(val);
			if (!pw && !gr) {
				tfs_log(TFS_LOG_ERR, "-o %s=%s: no such %s", name, val,
					uid ? "user" : "group");
				return -1;
			}
			v = pw ? pw->pw_uid : gr->gr_gid;
		}
		if (uid) {
			o->set_uid = true;
			o->uid = (uint32_t)v;
		} else {
			o->set_gid = true;
			o->gid = (uint32_t)v;
		}
		return 0;
	}
	if (!parse_uint(val, 8, 07777, &v)) {
		tfs_log(TFS_LOG_ERR, "-o %s=%s: not an octal mode mask", name, val);
		return -1;
	}
	if (!strcmp(name, "umask") || !strcmp(name, "dmask"))
		o->dmask = (uint32_t)v;
	if (!strcmp(name, "umask") || !strcmp(name, "fmask"))
		o->fmask = (uint32_t)v;
	return 0;
}

static const char *const owner_opts[] = {"uid", "gid", "umask", "dmask", "fmask"};

/* One -o item "NAME[=VALUE]" (item is modified). */
static int mount_option(struct options *o, char *item)
{
	char *eq = strchr(item, '=');
	const char *val = eq ? eq + 1 : NULL;
	const struct spec *s;
	char how[96];
	size_t len;

	if (eq)
		*eq = '\0'; /* item is the name now */
	len = strlen(item);
	if (!len)
		return 0;
	snprintf(how, sizeof(how), "-o %s", item);
	if ((s = spec_named(item, len))) {
		if (!s->arg != !val) {
			tfs_log(TFS_LOG_ERR, "%s %s", how, s->arg ? "wants a value (NAME=VALUE)"
									: "takes no value");
			return -1;
		}
		return apply(o, s, val, how);
	}
	if (val && IN(owner_opts, item, len))
		return owner_option(o, item, val);
	if (eq)
		*eq = '='; /* passed on whole */
	if (val && len == 8 && !strncmp(item, "max_read", 8)) {
		unsigned long v;
		if (!parse_uint(val, 10, UINT32_MAX, &v) || v < 4096) {
			tfs_log(TFS_LOG_ERR, "-o max_read=%s: not a size of at least 4096", val);
			return -1;
		}
		o->max_read = (unsigned)v;
	}
	if ((!val && IN(fuse_flags, item, len)) || (val && IN(fuse_valued, item, len)))
		return opt_add_fuse(o, item);
	if (IN(ignored, item, len) || (len > 2 && !strncmp(item, "x-", 2)) ||
	    (len == 7 && !strncmp(item, "comment", 7)))
		return 0;
	tfs_log(TFS_LOG_ERR, "unknown mount option '%s' (see tarseek --help)", item);
	return -1;
}

/* Wipes the values of the password= items of opts, -o's argument in argv (its copy was
 * parsed, and each password wiped there by add_password). */
static void wipe_passwords(char *opts)
{
	for (char *p = opts, *c; p; p = c) {
		c = strchr(p, ',');
		if (c)
			c++;
		if (!strncmp(p, "password=", 9)) {
			char *v = p + 9;
			explicit_bzero(v, c ? (size_t)(c - 1 - v) : strlen(v));
		}
	}
}

/* -o OPTS: each comma-separated item, kept for the strings the options point into.  OPTS is
 * argv's: the passwords in it are wiped. */
static int mount_options(struct options *o, char *opts)
{
	char *copy = strdup(opts), **n;

	if (!copy)
		return -1;
	n = realloc(o->strings, (o->nstrings + 1) * sizeof(*n));
	if (!n) {
		free(copy);
		return -1;
	}
	o->strings = n;
	o->strings[o->nstrings++] = copy;
	wipe_passwords(opts);
	for (char *p = copy, *c; p; p = c) {
		c = strchr(p, ',');
		if (c)
			*c++ = '\0';
		if (mount_option(o, p) < 0)
			return -1;
	}
	return 0;
}

/* ---- the command line --------------------------------------------------------------------- */

int opt_parse(int argc, char **argv, struct options *o)
{
	struct option longopts[NSPECS + 1];
	char shorts[2 * NSPECS + 2];
	size_t nl = 0, ns = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int c, idx;

	o->cache_size = (uint64_t)OPT_DEFAULT_CACHE_MIB << 20;
	o->shadow = shadow_default();
	o->disk_cache_size = (uint64_t)OPT_DEFAULT_DISK_CACHE_GIB << 30;
	o->remote_timeout = OPT_DEFAULT_REMOTE_TIMEOUT;
	o->remote_cache_size = (uint64_t)OPT_DEFAULT_REMOTE_CACHE_MIB << 20;
	o->remote_disk_size = (uint64_t)OPT_DEFAULT_REMOTE_DISK_MIB << 20;
	o->gzip_spacing = IDX_SPACING_DEFAULT;
	o->threads = ncpu > 0 ? (unsigned)ncpu : 1;
	for (size_t i = 0; i < NSPECS; i++) {
		if (specs[i].name)
			longopts[nl++] = (struct option){specs[i].name,
							 specs[i].arg ? required_argument : no_argument,
							 NULL, 256 + (int)i};
		if (specs[i].letter) {
			shorts[ns++] = specs[i].letter;
			if (specs[i].arg)
				shorts[ns++] = ':';
		}
	}
	longopts[nl] = (struct option){0};
	shorts[ns] = '\0';
	while ((c = getopt_long(argc, argv, shorts, longopts, &idx)) != -1) {
		const struct spec *s = NULL;
		char how[64];
		if (c >= 256)
			s = &specs[c - 256];
		for (size_t i = 0; !s && i < NSPECS; i++)
			if (specs[i].letter == c)
				s = &specs[i];
		if (!s)
			return -1; /* getopt printed the message */
		if (s->id == O_OPTION) {
			if (mount_options(o, optarg) < 0)
				return -1;
			continue;
		}
		snprintf(how, sizeof(how), "--%s", s->name);
		if (apply(o, s, optarg, how) < 0)
			return -1;
	}
	if (o->unmount) {
		if (argc - optind < 1) {
			tfs_log(TFS_LOG_ERR, "-u: which mount point?");
			return -1;
		}
		o->sources = argv + optind;
		o->nsources = argc - optind;
		return 0;
	}
	if (argc - optind == 0) {
		tfs_log(TFS_LOG_ERR, "no archive and mount point given");
		return -1;
	}
	if (argc - optind == 1) { /* the mount point is made of its name (fs/mountpoint.h) */
		o->sources = argv + optind;
		o->nsources = 1;
		o->mountpoint = NULL;
		return 0;
	}
	o->sources = argv + optind;
	o->nsources = argc - optind - 1;
	o->mountpoint = argv[argc - 1];
	return 0;
}

void opt_free(struct options *o)
{
	for (size_t i = 0; i < o->nstrings; i++)
		free(o->strings[i]);
	free(o->strings);
	free(o->fuse_opts);
}
