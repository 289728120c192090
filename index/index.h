/* Finding, checking and (re)building the index of an archive.
 *
 * Where an index lives (first match):
 *   1. --index-file PATH;
 *   2. --index-folder DIR: DIR/NAME.HASH.index.sqlite;
 *   3. ARCHIVE.index.sqlite beside the archive, if it exists and is valid (a prebuilt index
 *      shared with the archive), or if that folder is writable;
 *   4. $XDG_CACHE_HOME/tarseek/NAME.HASH.index.sqlite (default ~/.cache/tarseek/),
 * where HASH is taken from the archive's canonical path.  A location inside the mount point
 * is never used.
 *
 * An index is valid for an archive when it is complete, of this format, and records the
 * archive's size, mtime, fingerprint (CRC32s of its first and last MiB) and the options that
 * shape the index.  Nothing about the host is recorded, so an index built elsewhere for the
 * same file is valid here.  A stale or incomplete index is rebuilt with a message saying why.
 */
#ifndef TARSEEK_INDEX_H
#define TARSEEK_INDEX_H

#include <stdbool.h>
#include <stddef.h>

#include "../common/source.h"
#include "build.h"

struct idx_opts {
	const char *index_file;	  /* or NULL */
	const char *index_folder; /* or NULL */
	const char *mountpoint;	  /* or NULL */
	bool recreate;		  /* rebuild even if valid */
	bool check_only;	  /* never build: a missing or stale index is -ENOENT / -ESTALE */
	struct idx_build_opts build;
};

/* The archive's fingerprint as text ("size:crc-head:crc-tail") into out. 0 or -errno. */
int idx_fingerprint(struct src *file, char *out, size_t size);

/* 0 if index_path is a valid index of archive; else -ESTALE (*why says why, a static
 * string), -ENOENT (no such file), or -ENOTSUP (the file is not a tarseek index at all). */
int idx_validate(const char *index_path, const char *archive, const struct idx_build_opts *o,
		 const char **why);

/* Returns (malloc'd, in *path) a valid index for archive, building it if needed; *built
 * tells whether it was built now (stats then filled if not NULL).  0 or -errno.  With
 * check_only, where an index would be built, -ENOENT or -ESTALE instead (logged). */
int idx_prepare(const char *archive, const struct idx_opts *o, char **path, bool *built,
		struct idx_build_stats *stats);

#endif
