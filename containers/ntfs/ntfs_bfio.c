/* A libbfio custom handle over a tarseek source (see ntfs_bfio.h).
 *
 * libbfio's model is a file: open, seek, read from the current offset, close, and a clone
 * (libbfio_handle_clone, which libyal's libraries may use) that opens the same file anew.
 * Ours keeps only an offset over the stateless pread of the source; a clone is a new offset
 * over the same source, and shares the record of the last error with the handle it came from.
 * Writes are refused: the image is read-only.
 */
#include "containers/ntfs/ntfs_bfio.h"
#include "containers/ntfs/ntfs_dl.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

struct ntfs_bfio_io {
	struct src *in;
	uint64_t size;
	uint64_t off;
	bool open;
	int *err; /* the shared record of the last failed read: &ntfs_bfio.err */
};

struct ntfs_bfio {
	libbfio_handle_t *h;
	int err;
};

static int bf_free(intptr_t **io, libbfio_error_t **e)
{
	(void)e;
	if (io && *io) {
		free(*io);
		*io = NULL;
	}
	return 1;
}

static int bf_clone(intptr_t **dst, intptr_t *srcio, libbfio_error_t **e)
{
	struct ntfs_bfio_io *c;

	(void)e;
	if (!dst || !srcio)
		return -1;
	c = malloc(sizeof(*c));
	if (!c)
		return -1;
	*c = *(struct ntfs_bfio_io *)srcio;
	c->off = 0;
	c->open = false;
	*dst = (intptr_t *)c;
	return 1;
}

static int bf_open(intptr_t *io, int flags, libbfio_error_t **e)
{
	struct ntfs_bfio_io *b = (struct ntfs_bfio_io *)io;

	(void)e;
	if (!b || (flags & (LIBBFIO_ACCESS_FLAG_WRITE | LIBBFIO_ACCESS_FLAG_TRUNCATE)))
		return -1;
	b->open = true;
	b->off = 0;
	return 1;
}

static int bf_close(intptr_t *io, libbfio_error_t **e)
{
	struct ntfs_bfio_io *b = (struct ntfs_bfio_io *)io;

	(void)e;
	if (!b)
		return -1;
	b->open = false;
	return 0;
}

static ssize_t bf_read(intptr_t *io, uint8_t *buf, size_t len, libbfio_error_t **e)
{
	struct ntfs_bfio_io *b = (struct ntfs_bfio_io *)io;
	ssize_t n;

	(void)e;
	if (!b || !buf || !b->open || len > SSIZE_MAX)
		return -1;
	if (b->off >= b->size)
		return 0;
	if (len > b->size - b->off)
		len = (size_t)(b->size - b->off);
	n = src_pread(b->in, buf, len, b->off);
	if (n < 0) {
		*b->err = (int)n;
		return -1;
	}
	b->off += (uint64_t)n;
	return n;
}

static ssize_t bf_write(intptr_t *io, const uint8_t *buf, size_t len, libbfio_error_t **e)
{
	(void)io, (void)buf, (void)len, (void)e;
	return -1;
}

static off64_t bf_seek(intptr_t *io, off64_t off, int whence, libbfio_error_t **e)
{
	struct ntfs_bfio_io *b = (struct ntfs_bfio_io *)io;
	int64_t base;

	(void)e;
	if (!b)
		return -1;
	switch (whence) {
	case SEEK_SET: base = 0; break;
	case SEEK_CUR: base = (int64_t)b->off; break;
	case SEEK_END: base = (int64_t)b->size; break;
	default: return -1;
	}
	if ((off < 0 && base + off < 0) || (off > 0 && off > INT64_MAX - base))
		return -1;
	b->off = (uint64_t)(base + off);
	return (off64_t)b->off;
}

static int bf_exists(intptr_t *io, libbfio_error_t **e)
{
	(void)e;
	return io ? 1 : -1;
}

static int bf_is_open(intptr_t *io, libbfio_error_t **e)
{
	(void)e;
	return io ? ((struct ntfs_bfio_io *)io)->open : -1;
}

static int bf_size(intptr_t *io, size64_t *size, libbfio_error_t **e)
{
	(void)e;
	if (!io || !size)
		return -1;
	*size = ((struct ntfs_bfio_io *)io)->size;
	return 1;
}

int ntfs_bfio_new(struct src *in, struct ntfs_bfio **out, libbfio_handle_t **h)
{
	struct ntfs_bfio_io *io = NULL;
	struct ntfs_bfio *b = NULL;
	libbfio_error_t *e = NULL;

	*out = NULL;
	*h = NULL;
	if (src_size(in) == SRC_SIZE_UNKNOWN || src_size(in) > INT64_MAX)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	io = calloc(1, sizeof(*io));
	if (!b || !io)
		goto nomem;
	io->in = in;
	io->size = src_size(in);
	io->err = &b->err;
	/* managed: libbfio frees io with the handle (bf_free) */
	if (sym_libbfio_handle_initialize(&b->h, (intptr_t *)io, bf_free, bf_clone, bf_open, bf_close,
				      bf_read, bf_write, bf_seek, bf_exists, bf_is_open, bf_size,
				      LIBBFIO_FLAG_IO_HANDLE_MANAGED |
					      LIBBFIO_FLAG_IO_HANDLE_CLONE_BY_FUNCTION,
				      &e) != 1) {
		sym_libbfio_error_free(&e);
		goto nomem;
	}
	*out = b;
	*h = b->h;
	return 0;
nomem:
	free(io);
	free(b);
	return -ENOMEM;
}

int ntfs_bfio_error(const struct ntfs_bfio *b)
{
	return b ? b->err : 0;
}

void ntfs_bfio_free(struct ntfs_bfio *b)
{
	if (!b)
		return;
	sym_libbfio_handle_free(&b->h, NULL);
	free(b);
}
