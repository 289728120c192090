/* The inode table walked once, in order, before libsquashfs reads the tree (sqfs_inodes.h).
 *
 * Why: libsquashfs 1.2's inode reader allocates what an inode says before it reads a byte of
 * it -- a symbolic link's target of up to 4 GiB, an extended file's block list of size / block
 * size words (a 64-bit size) -- and a flipped byte is enough to ask for gigabytes (fuzz_squashfs,
 * regress/fuzz_squashfs/inode-4g-calloc).  Here every inode's variable part is read through
 * (libsquashfs's own metadata reader, over our compressor), so it is known to lie in the table:
 * what libsquashfs then allocates is what the table holds.  An inode that does not fit, or of
 * no known type, refuses the image.
 *
 * What this does not cover: a directory entry that points into the middle of an inode, where
 * a crafted image can make bytes of another inode read as a huge one.  That costs a transient
 * allocation (untouched pages: calloc'd, then freed when the read fails), never other bytes.
 */
#include "containers/squashfs/sqfs_inodes.h"

#include <errno.h>
#include <inttypes.h>

#include "common/byteio.h"
#include "common/log.h"

#define SQI_NOFRAG 0xFFFFFFFFu

/* Reads n bytes of the table past: 0 or -EIO. */
static int sqi_skip(sqfs_meta_reader_t *m, uint64_t n)
{
	uint8_t buf[4096];

	while (n) {
		size_t k = n < sizeof(buf) ? (size_t)n : sizeof(buf);
		if (sym_sqfs_meta_reader_read(m, buf, k))
			return -EIO;
		n -= k;
	}
	return 0;
}

/* The words of a file's block list, as libsquashfs counts them. */
static uint64_t sqi_blocks(uint64_t size, uint32_t bs, uint32_t frag)
{
	return size / bs + (size % bs && frag == SQI_NOFRAG);
}

/* The part of an inode of type t after its 16-byte header: 0 or -EIO. */
static int sqi_inode(sqfs_meta_reader_t *m, unsigned t, uint32_t bs)
{
	uint8_t b[40];
	uint64_t more;

	switch (t) {
	case SQFS_INODE_DIR:
		return sqi_skip(m, 16);
	case SQFS_INODE_FILE:
		if (sym_sqfs_meta_reader_read(m, b, 16))
			return -EIO;
		return sqi_skip(m, 4 * sqi_blocks(le32(b + 12), bs, le32(b + 4)));
	case SQFS_INODE_SLINK:
	case SQFS_INODE_EXT_SLINK:
		if (sym_sqfs_meta_reader_read(m, b, 8))
			return -EIO;
		return sqi_skip(m, (uint64_t)le32(b + 4) + (t == SQFS_INODE_EXT_SLINK ? 4 : 0));
	case SQFS_INODE_BDEV:
	case SQFS_INODE_CDEV:
		return sqi_skip(m, 8);
	case SQFS_INODE_FIFO:
	case SQFS_INODE_SOCKET:
		return sqi_skip(m, 4);
	case SQFS_INODE_EXT_DIR:
		if (sym_sqfs_meta_reader_read(m, b, 24))
			return -EIO;
		for (unsigned i = le16(b + 16); i; i--) /* the index: 12 bytes and a name each */
			if (sym_sqfs_meta_reader_read(m, b, 12) || sqi_skip(m, (uint64_t)le32(b + 8) + 1))
				return -EIO;
		return 0;
	case SQFS_INODE_EXT_FILE:
		if (sym_sqfs_meta_reader_read(m, b, 40))
			return -EIO;
		more = sqi_blocks(le64(b + 8), bs, le32(b + 28));
		if (more > UINT64_MAX / 4)
			return -EIO;
		return sqi_skip(m, 4 * more);
	case SQFS_INODE_EXT_BDEV:
	case SQFS_INODE_EXT_CDEV:
		return sqi_skip(m, 12);
	case SQFS_INODE_EXT_FIFO:
	case SQFS_INODE_EXT_SOCKET:
		return sqi_skip(m, 8);
	default:
		return -EIO;
	}
}

int sqfs_inodes_check(sqfs_file_t *file, sqfs_compressor_t *cmp, const sqfs_super_t *super,
		      const char *name)
{
	sqfs_meta_reader_t *m;
	uint8_t h[16];
	int err = 0;
	uint32_t i;

	if (super->inode_table_start >= super->directory_table_start)
		err = -EIO;
	m = err ? NULL
		: sym_sqfs_meta_reader_create(file, cmp, super->inode_table_start,
					      super->directory_table_start);
	if (!err && !m)
		return -ENOMEM;
	if (!err && sym_sqfs_meta_reader_seek(m, super->inode_table_start, 0))
		err = -EIO;
	/* every inode the table holds, those past inode_count too (a directory may name them):
	 * the walk ends where no header is left, after inode_count of them at least */
	for (i = 0; !err; i++) {
		if (sym_sqfs_meta_reader_read(m, h, sizeof(h))) {
			err = i < super->inode_count ? -EIO : 0;
			break;
		}
		if (sqi_inode(m, le16(h), super->block_size))
			err = -EIO;
	}
	if (err)
		tfs_log(TFS_LOG_ERR, "%s: SquashFS image damaged: inode %" PRIu32 " of %" PRIu32
			" does not fit in its table", name, i, super->inode_count);
	sqfs_destroy(m);
	return err;
}
