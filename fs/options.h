/* tarseek's options: the command line, and the same options given as mount options.
 *
 * One table lists every option once (its long name, short letter, argument and help line):
 * getopt's table, --help and the -o forms all come from it.  Every long option is also a
 * mount option, -o NAME[=VALUE] with '-' written '_' or '-' (`-o recursive,index_folder=/x`),
 * so that an fstab line or a systemd .mount unit can say everything the command line can.
 *
 * Mount options (-o, comma-separated, any number of -o) are, in order of precedence:
 *   - tarseek's own (the table, and uid=, gid=, umask=, dmask=, fmask=, which map the
 *     owner and the permission bits every entry shows, as squashfuse and fuse-archive do);
 *   - FUSE's (allow_other, allow_root, default_permissions, max_read=, auto_unmount, blkdev,
 *     blksize=, fsname=, subtype=) and the mount flags libfuse knows (suid, nosuid, dev,
 *     nodev, exec, noexec, async, sync, dirsync, atime, noatime), passed on;
 *   - options mount(8), fstab and systemd carry that mean nothing for a read-only archive
 *     (rw, the atime family, auto/noauto, user/users/owner/group, _netdev, nofail, defaults,
 *     x-*, comment=, and libfuse 2's nonempty, kernel_cache, auto_cache, big_writes):
 *     accepted and ignored.  The mount is always read-only: `ro` shows in /proc/mounts
 *     whatever was asked.
 * Anything else is an error naming the option.
 *
 * opt_parse logs why it refuses (tfs_log, at error level; getopt's own messages aside); it
 * returns 0, or -1 for a usage error.  --help and --version print to stdout and exit(0).
 */
#ifndef TARSEEK_OPTIONS_H
#define TARSEEK_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "shadow/shadow.h"

#define OPT_DEFAULT_CACHE_MIB 256
#define OPT_DEFAULT_DISK_CACHE_GIB 4
#define OPT_MAX_RECURSION 32
#define OPT_DEFAULT_REMOTE_TIMEOUT 30 /* seconds */
#define OPT_DEFAULT_REMOTE_CACHE_MIB 128
#define OPT_DEFAULT_REMOTE_DISK_MIB 1024

struct options {
	bool foreground, debug, single_thread, quiet, recreate, no_union, strip_ext, ignore_zeros;
	bool no_prefetch;
	bool oci_raw; /* --oci-raw: container images as plain tars */
	bool gzip_spacing_set;	/* --gzip-spacing given (else any index's spacing will do) */
	bool unmount;		/* -u: unmount the MOUNTPOINTs given */
	unsigned recursion;
	char *fuse_opts; /* comma-separated options for FUSE (malloc'd) */
	const char *index_file, *index_folder;
	const char *log_file; /* --log-file, or NULL */
	uint64_t cache_size, gzip_spacing, disk_cache_size;
	uint64_t prefetch_size; /* 0: the memory cache's size */
	enum shadow_mode shadow; /* --shadow (default auto) */
	uint64_t shadow_max;	 /* --shadow-max, 0: half the free space */
	const char *disk_cache_dir;
	unsigned threads;
	const char *s3_endpoint;	     /* or NULL */
	unsigned remote_timeout;	     /* seconds */
	uint64_t remote_cache_size, remote_disk_size;
	/* uid=, gid=, umask=, dmask=, fmask= */
	bool set_uid, set_gid;
	uint32_t uid, gid;
	uint32_t dmask, fmask; /* bits cleared from folders' and others' modes */
	unsigned max_read;     /* -o max_read= (passed to FUSE, and to its init) */
	char **sources; /* archives and folders, in order: the last one wins */
	int nsources;
	const char *mountpoint; /* NULL: one SOURCE given alone (mp_default makes one) */
	char **strings; /* values of -o options, owned (freed by opt_free) */
	size_t nstrings;
};

/* Parses argv into o (defaults first). */
int opt_parse(int argc, char **argv, struct options *o);

void opt_free(struct options *o);

/* The help text. */
void opt_usage(FILE *f);

/* Appends opt to o->fuse_opts.  0 or -1 (out of memory). */
int opt_add_fuse(struct options *o, const char *opt);

/* True if opts (comma-separated) holds name. */
bool opt_has(const char *opts, const char *name);

#endif
