/* A container's members as a tar stream: what tarseek-convert's engine (convert.c) reads when
 * its source is a zip, a 7z or one of libarchive's formats, which hold no tar to copy.
 *
 * The tar is made of the tree a mount of the source shows -- the last version of each path
 * (no PATH.versions), the folders the source lists, hard links where the source knows them --
 * written by tar_write.h.  Its layout is planned when it is opened, so that the engine knows
 * every member's start (it cuts blocks there) and the length before a byte is read; the
 * bytes are then made as they are read, the members' data read through the source's index in
 * the reader's pieces: memory stays bounded by the tree's names, never a member's size.
 *
 * Private to convert/convert*.c.  One thread at a time per handle.
 */
#ifndef TARSEEK_CONVERT_TAR_H
#define TARSEEK_CONVERT_TAR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/source.h"

struct cv_tar;

/* Opens the container whose index is the file index (valid: found or built by idx_prepare)
 * and whose bytes file reads (borrowed: it, and name, must outlive the handle), as a mount
 * opens it, and plans its tar: *cuts (malloc'd, the caller's) the *ncuts member starts in
 * increasing order, *usize the tar's length.  0 or -errno, logged: -EIO (an index that cannot
 * be read, a header that cannot be made), -EINVAL (a name or an extended attribute a tar
 * cannot hold), -EACCES or -EOPNOTSUPP (a member the source cannot give: encrypted, a method
 * tarseek lacks), -ENOMEM.  *out = NULL and *cuts = NULL on error. */
int cv_tar_open(const char *index, struct src *file, const char *name, struct cv_tar **out,
		uint64_t **cuts, size_t *ncuts, uint64_t *usize);

/* The next bytes of the tar into buf: len, fewer only at its end (0 there), or -errno after
 * logging which member and why: -EIO (a member that cannot be read -- damaged -- or ends
 * early, a read not at off == where the previous one ended), -ENOMEM. */
ssize_t cv_tar_read(struct cv_tar *t, uint8_t *buf, size_t len, uint64_t off);

void cv_tar_free(struct cv_tar *t); /* NULL does nothing */

#endif
