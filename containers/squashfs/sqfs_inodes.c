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
 * Then every directory's listing is walked the same way (the directory table, headers and
 * entries), and each entry, like the superblock's root reference, must name the start of an
 * inode the walk met: an entry pointing into the middle of an inode would make bytes of
 * another inode read as a huge one (fuzz_squashfs, regress/fuzz_squashfs/calloc-265t-mid-inode).
 */
#include "containers/squashfs/sqfs_inodes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "common/byteio.h"
#include "common/log.h"

#define SQI_NOFRAG 0xFFFFFFFFu
#define SQI_BLOCK 8192 /* a metadata block's decoded bytes (SQFS_META_BLOCK_SIZE) */

/* What the walk of the inode table found. */
struct sqi {
	uint64_t *refs; /* the inodes' references (block << 16 | offset), in table order */
	size_t nrefs, cap;
	struct sqi_dir {
		uint32_t block; /* its listing: directory table block, offset, bytes */
		uint16_t offset;
		uint32_t size;
	} *dirs;
	size_t ndirs, dcap;
};

static int sqi_grow(void **p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 256;
	void *q = realloc(*p, c * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

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

/* A directory's listing, for sqi_dirs_check: 0 or -ENOMEM. */
static int sqi_dir(struct sqi *q, uint32_t block, uint16_t offset, uint32_t size)
{
	if (sqi_grow((void **)&q->dirs, &q->dcap, q->ndirs, sizeof(*q->dirs)))
		return -ENOMEM;
	q->dirs[q->ndirs++] = (struct sqi_dir){block, offset, size};
	return 0;
}

/* The part of an inode of type t after its 16-byte header: 0, -EIO or -ENOMEM. */
static int sqi_inode(struct sqi *q, sqfs_meta_reader_t *m, unsigned t, uint32_t bs)
{
	uint8_t b[40];
	uint64_t more;

	switch (t) {
	case SQFS_INODE_DIR: /* start block, links, size (16 bits), offset, parent */
		if (sym_sqfs_meta_reader_read(m, b, 16))
			return -EIO;
		return sqi_dir(q, le32(b), le16(b + 10), le16(b + 8));
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
	case SQFS_INODE_EXT_DIR: /* links, size, start block, parent, index count, offset, xattr */
		if (sym_sqfs_meta_reader_read(m, b, 24))
			return -EIO;
		if (sqi_dir(q, le32(b + 8), le16(b + 18), le32(b + 4)))
			return -ENOMEM;
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

/* The reference of the inode whose header the reader is at: where it was before the header
 * (p0, o0), or, when that was the very end of a block, where the header ended less its 16
 * bytes (the next block's start is known only once it is read). */
static uint64_t sqi_ref(uint64_t table, uint64_t p0, size_t o0, uint64_t p1, size_t o1)
{
	if (o0 < SQI_BLOCK)
		return (p0 - table) << 16 | o0;
	return (p1 - table) << 16 | (o1 - 16);
}

static bool sqi_known(const struct sqi *q, uint64_t ref)
{
	size_t lo = 0, hi = q->nrefs;

	while (lo < hi) { /* the walk met them in increasing order */
		size_t mid = (lo + hi) / 2;
		if (q->refs[mid] < ref)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < q->nrefs && q->refs[lo] == ref;
}

/* The end of the directory table: the next table's start, or the image's used bytes. */
static uint64_t sqi_dir_end(const sqfs_super_t *sb)
{
	uint64_t end = sb->bytes_used, t[] = {sb->fragment_table_start, sb->export_table_start,
					      sb->id_table_start, sb->xattr_id_table_start};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i] > sb->directory_table_start && t[i] < end)
			end = t[i];
	return end;
}

/* Every directory's entries: each must name an inode the walk met.  0, -EIO, -ENOMEM. */
static int sqi_dirs_check(const struct sqi *q, sqfs_file_t *file, sqfs_compressor_t *cmp,
			  const sqfs_super_t *sb, uint32_t *bad)
{
	uint64_t end = sqi_dir_end(sb);
	/* all listings together fit in the table's decoded bytes (a block decodes to at most
	 * 8 KiB and takes at least 3 bytes): a listing claiming more is damage */
	uint64_t budget = (end - sb->directory_table_start) / 3 * SQI_BLOCK + SQI_BLOCK;
	sqfs_meta_reader_t *m = sym_sqfs_meta_reader_create(file, cmp, sb->directory_table_start,
							    end);
	int err = 0;

	if (!m)
		return -ENOMEM;
	for (size_t d = 0; !err && d < q->ndirs; d++) {
		const struct sqi_dir *dir = &q->dirs[d];
		uint64_t left = dir->size > 3 ? dir->size - 3 : 0; /* "." and ".." are not stored */
		uint8_t h[12], e[8], name[257];

		*bad = (uint32_t)d;
		if (left > budget) {
			err = -EIO;
			break;
		}
		budget -= left;
		if (left && sym_sqfs_meta_reader_seek(m, sb->directory_table_start + dir->block,
						      dir->offset))
			err = -EIO;
		while (!err && left) {
			if (left < sizeof(h) || sym_sqfs_meta_reader_read(m, h, sizeof(h)) ||
			    le32(h) >= 256) {
				err = -EIO;
				break;
			}
			left -= sizeof(h);
			for (uint32_t n = le32(h) + 1; !err && n; n--) {
				if (left < sizeof(e) || sym_sqfs_meta_reader_read(m, e, sizeof(e))) {
					err = -EIO;
					break;
				}
				size_t nl = (size_t)le16(e + 6) + 1; /* a name is 1..256 bytes */
				if (nl > sizeof(name) - 1 || left < sizeof(e) + nl ||
				    sym_sqfs_meta_reader_read(m, name, nl) ||
				    !sqi_known(q, (uint64_t)le32(h + 4) << 16 | le16(e)))
					err = -EIO;
				left -= sizeof(e) + nl;
			}
		}
	}
	sqfs_destroy(m);
	return err;
}

int sqfs_inodes_check(sqfs_file_t *file, sqfs_compressor_t *cmp, const sqfs_super_t *super,
		      const char *name)
{
	struct sqi q = {0};
	sqfs_meta_reader_t *m;
	uint8_t h[16];
	int err = 0;
	uint32_t i, bad = 0;

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
		uint64_t p0, p1;
		size_t o0, o1;
		sym_sqfs_meta_reader_get_position(m, &p0, &o0);
		if (sym_sqfs_meta_reader_read(m, h, sizeof(h))) {
			err = i < super->inode_count ? -EIO : 0;
			break;
		}
		sym_sqfs_meta_reader_get_position(m, &p1, &o1);
		if (sqi_grow((void **)&q.refs, &q.cap, q.nrefs, sizeof(*q.refs))) {
			err = -ENOMEM;
			break;
		}
		q.refs[q.nrefs++] = sqi_ref(super->inode_table_start, p0, o0, p1, o1);
		err = sqi_inode(&q, m, le16(h), super->block_size);
	}
	if (err == -EIO)
		tfs_log(TFS_LOG_ERR, "%s: SquashFS image damaged: inode %" PRIu32 " of %" PRIu32
			" does not fit in its table", name, i, super->inode_count);
	sqfs_destroy(m);
	if (!err && !sqi_known(&q, super->root_inode_ref)) {
		tfs_log(TFS_LOG_ERR, "%s: SquashFS image damaged: its root names no inode", name);
		err = -EIO;
	}
	if (!err) {
		err = sqi_dirs_check(&q, file, cmp, super, &bad);
		if (err == -EIO)
			tfs_log(TFS_LOG_ERR, "%s: SquashFS image damaged: the listing of directory %"
				PRIu32 " does not fit in its table, or names no inode", name, bad + 1);
	}
	free(q.refs);
	free(q.dirs);
	return err;
}
