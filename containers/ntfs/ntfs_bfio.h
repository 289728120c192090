/* A libbfio handle over a tarseek source (common/source.h), read-only: how libfsntfs reads an
 * image through tarseek's own reader -- a file, a member of an archive, a decoded .img.gz --
 * while the container (ntfs.c) parses it.  The handle is used by the parse alone, on one
 * thread; reads of a member's data never come here (they go through its sparse map).
 *
 * The handle's reads are the source's: a short read only at the end of the source, a failed
 * one returns -1 to libbfio and keeps the source's -errno for ntfs_bfio_error(), so a remote
 * source's -ESTALE or a damaged stream's -EIO is what the parse returns, not a generic EIO.
 */
#ifndef TARSEEK_NTFS_BFIO_H
#define TARSEEK_NTFS_BFIO_H

#include <libbfio.h>

#include "common/source.h"

struct ntfs_bfio;

/* A handle over in (borrowed; it must outlive the handle).  *h: the libbfio handle to give
 * libfsntfs, owned by *out.  0, -ENOMEM, or -EINVAL when the source's size is unknown.  *out
 * and *h are NULL on error. */
int ntfs_bfio_new(struct src *in, struct ntfs_bfio **out, libbfio_handle_t **h);

/* The -errno of the last failed read of the source, or 0. */
int ntfs_bfio_error(const struct ntfs_bfio *b);

/* Frees the handle; NULL does nothing. */
void ntfs_bfio_free(struct ntfs_bfio *b);

#endif
