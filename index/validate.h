/* Whether an index still fits its archive.
 *
 * An index is valid for an archive when it is a tarseek index (another program's SQLite file
 * is never ours to replace), complete, of this format, sealed with a matching checksum (up to
 * 64 MiB), trusted (ours, root's or the archive owner's, and not writable by others), and
 * records the archive's size, mtime, format, fingerprint and the options that shape the index
 * (stamp.h).  Nothing about the host is recorded, so an index built elsewhere for the same
 * file is valid here.
 */
#ifndef TARSEEK_VALIDATE_H
#define TARSEEK_VALIDATE_H

#include <stddef.h>

#include "build.h"

/* 0 if index_path is a valid index of archive.  Else (why, of whylen bytes, says why):
 * -ESTALE (not valid: rebuild it), -ENOENT (no such file), -ENOTSUP (not a tarseek index at
 * all: never overwrite it), -EPERM (not trusted). */
int idx_validate(const char *index_path, const char *archive, const struct idx_build_opts *o,
		 char *why, size_t whylen);

#endif
