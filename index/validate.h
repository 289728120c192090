/* Whether an index still fits its archive.
 *
 * An index is valid for an archive when it is a tarseek index (another program's SQLite file
 * is never ours to replace), complete, of this format, sealed with a matching checksum (up to
 * 64 MiB), trusted (ours, root's or the archive owner's, and not writable by others), and
 * records the archive's size, mtime, format, fingerprint and the options that shape the index
 * (stamp.h); one made without the password an encrypted entry needed (meta 'locked') is stale
 * when passwords are given now.  Nothing about the host is recorded, so an index built
 * elsewhere for the same file is valid here.  For a remote archive, see idx_subject.
 */
#ifndef TARSEEK_VALIDATE_H
#define TARSEEK_VALIDATE_H

#include <sqlite3.h>
#include <stddef.h>

#include "index/build.h"

/* 0 if index_path is a valid index of archive.  Else (why, of whylen bytes, says why):
 * -ESTALE (not valid: rebuild it), -ENOENT (no such file), -ENOTSUP (not a tarseek index at
 * all: never overwrite it), -EPERM (not trusted). */
int idx_validate(const char *index_path, const char *archive, const struct idx_build_opts *o,
		 char *why, size_t whylen);

/* An index validated in memory (idx_validate_keep). */
struct idx_kept {
	size_t max;	 /* in: the largest index read into memory */
	char *name;	 /* out: its name for db_open_ro ("mem:...", malloc'd), or NULL */
	sqlite3 *keeper; /* out: the connection that keeps it (close it when done), or NULL */
};

/* As idx_validate, and an index of at most keep->max bytes is read into memory first
 * (db_file_to_mem) and checked there, so that it is read from the disk once: if it is valid,
 * keep->name and keep->keeper are set (else NULL: a larger index, one in WAL mode, or no memory
 * for it, was checked on its file). */
int idx_validate_keep(const char *index_path, const char *archive,
		      const struct idx_build_opts *o, struct idx_kept *keep, char *why,
		      size_t whylen);

/* The archive as validation sees it, for one that is not a local file (or is read through
 * another source).  A remote object has no mtime to trust and no owner: its size, format and
 * fingerprint are compared, and when the index was built from the URL (it records the ETag)
 * a differing ETag is stale at once, and a matching one spares fetching the fingerprint.  An
 * index built from a local copy records no ETag, so it validates against the uploaded object
 * by size, format and fingerprint. */
struct idx_subject {
	struct src *src;	/* the archive's bytes */
	const char *etag;	/* the remote object's ETag now ("" if none) */
};

/* As idx_validate, for a remote archive. */
int idx_validate_remote(const char *index_path, const struct idx_subject *a,
			const struct idx_build_opts *o, char *why, size_t whylen);

#endif
