/* Opening an archive: finding its index, checking it, building it when it is missing or
 * stale, then opening it (archive.h).  The one way an index is opened for a mount or a tool.
 *
 * Where an index lives (first match):
 *   1. --index-file PATH;
 *   2. --index-folder DIR: DIR/NAME.HASH.index.sqlite;
 *   3. ARCHIVE.index.sqlite beside the archive, if it exists and is valid (a prebuilt index
 *      shared with the archive), or if that folder is writable -- not for an archive found
 *      in a folder source (-r: idx_opts.not_beside), whose folder is the user's to fill;
 *   4. $XDG_CACHE_HOME/tarseek/NAME.HASH.index.sqlite (default ~/.cache/tarseek/; with no
 *      $HOME, as from mount(8) or systemd: /var/cache/tarseek/ for root),
 * where HASH is taken from the archive's canonical path.  A location inside the mount point
 * is never used.  A stale or incomplete index is rebuilt with a message saying why
 * (validate.h); an index built here is written under a temporary name and renamed into place.
 *
 * Layering: open.c uses validate.c, build.c, nested.c and archive.c; none of them calls back.
 */
#ifndef TARSEEK_OPEN_H
#define TARSEEK_OPEN_H

#include <stdbool.h>
#include <stddef.h>

#include "cache/cache.h"
#include "index/archive.h"
#include "index/build.h"

struct idx_opts {
	const char *index_file;	  /* or NULL */
	const char *index_folder; /* or NULL */
	const char *mountpoint;	  /* or NULL */
	bool recreate;		  /* rebuild even if valid */
	bool check_only;	  /* never build: a missing or stale index is -ENOENT / -ESTALE */
	bool not_beside;	  /* never beside the archive (3. above) */
	struct idx_build_opts build;
};

/* Builds the whole index of in at index_path (members and streams, the nested pass when
 * o->recursion, the stamp, the seal), under a temporary name renamed into place; logs the
 * summary line.  0, or -errno as idx_build_base.  stats may be NULL. */
int idx_build_from(const struct idx_input *in, const char *index_path,
		   const struct idx_build_opts *o, struct idx_build_stats *stats);

/* As idx_build_from for the archive file at archive (a split archive's first part: its parts
 * joined, common/parts.h). */
int idx_build(const char *archive, const char *index_path, const struct idx_build_opts *o,
	      struct idx_build_stats *stats);

/* Returns (malloc'd, in *path) a valid index for archive, building it if needed; *built
 * tells whether it was built now (stats then filled if not NULL).  0 or -errno (logged):
 * -EEXIST when the chosen place holds a file that is not a tarseek index (never
 * overwritten; beside the archive such a file -- ratarmount's index has the same name -- is
 * passed over for the next place).  With check_only, where an index would be built, -ENOENT
 * or -ESTALE instead.  A build first removes the temporary files that killed builds left
 * beside the index (their process gone, unwritten for 10 minutes).  The first part of a split
 * archive (common/parts.h) stands for the whole: its parts are checked first (a part missing,
 * -ENOENT, or of the wrong length, -EIO, is logged by name), its index stamped with all of
 * them. */
int idx_prepare(const char *archive, const struct idx_opts *o, char **path, bool *built,
		struct idx_build_stats *stats);

struct http_obj;

/* As idx_prepare, for a remote object (net.h) whose bytes src reads.  Where its index lives
 * (first match): --index-file; --index-folder (NAME.HASH, HASH from the URL as shown); a
 * valid copy in the cache folder (4. above); the index published beside it on the server,
 * URL.index.sqlite, fetched into the cache folder if it is valid for the object; else one
 * built there.  Nothing is ever written beside a remote archive. */
int idx_prepare_remote(struct http_obj *obj, struct src *src, const struct idx_opts *o,
		       char **path, bool *built, struct idx_build_stats *stats);

struct arch_opts {
	struct idx_opts idx;
	struct arch_env env;
};

/* Opens archive (a path, or an http://, https:// or s3:// URL: env.net must be set): finds
 * or builds its index and opens it.  Indexes up to 4 MiB are copied into
 * memory (no descriptor per connection: a union of many small archives stays light).  0 or
 * -errno (-ENOENT, -EACCES, -EINVAL not an archive, -EIO damaged/unreadable, -EEXIST no place
 * for the index, -ENOMEM); the reason is logged.  *out = NULL on error. */
int arch_open(const char *archive, const struct arch_opts *o, struct arch **out);

#endif
