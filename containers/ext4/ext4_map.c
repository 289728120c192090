/* Where an inode's bytes are (ext4_int.h): its runs of blocks, from the extent tree (ext4) or
 * the indirect blocks (ext2/3), both read through libext2fs; and, for inline data, where the
 * bytes sit inside the inode itself.
 *
 * A hostile image can make either tree huge or circular (an indirect block that names itself,
 * an index node that points back up), so every block or extent libext2fs hands us is paid for
 * from the walk's budget (ext4_spend), and the runs must come in logical order, without
 * overlap, inside the file system: anything else makes the file unreadable (-EIO) rather than
 * read other bytes.  Unwritten extents are left out: they read as zeros, as the kernel reads
 * them.
 */
#include "containers/ext4/ext4_int.h"
#include "containers/ext4/ext4_dl.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"

struct map_ctx {
	struct ext4 *e;
	uint64_t lblk_end;
	uint64_t next; /* the first logical block a run may start at */
	const char *why;
	int err;
};

/* Appends a run (merged with the last when both sides follow on).  0, -EIO (why set), -ENOMEM. */
static int map_add(struct map_ctx *c, uint64_t lblk, uint64_t pblk, uint64_t len, bool hole)
{
	struct ext4 *e = c->e;
	struct ext4_run *r;

	if (!len)
		return 0;
	if (lblk < c->next) {
		c->why = "its block map is out of order or overlaps itself";
		return -EIO;
	}
	if (lblk > UINT32_MAX || len > (uint64_t)UINT32_MAX + 1 - lblk) {
		c->why = "its block map reaches past 2^32 blocks";
		return -EIO;
	}
	c->next = lblk + len;
	if (lblk >= c->lblk_end || hole)
		return 0; /* past the end of the file (preallocated), or unwritten */
	if (len > c->lblk_end - lblk)
		len = c->lblk_end - lblk;
	if (pblk >= e->blocks || len > e->blocks - pblk) {
		c->why = "its block map points outside the file system";
		return -EIO;
	}
	r = e->nruns ? &e->runs[e->nruns - 1] : NULL;
	if (r && r->lblk + r->len == lblk && r->pblk + r->len == pblk) {
		r->len += len;
		return 0;
	}
	if (e->nruns == e->runs_cap) {
		size_t cap = e->runs_cap ? e->runs_cap * 2 : 64;
		struct ext4_run *n = realloc(e->runs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		e->runs = n;
		e->runs_cap = cap;
	}
	e->runs[e->nruns++] = (struct ext4_run){.lblk = lblk, .pblk = pblk, .len = len};
	return 0;
}

static int map_extents(struct map_ctx *c, ext2_ino_t ino, struct ext2_inode *inode)
{
	struct ext4 *e = c->e;
	ext2_extent_handle_t h = NULL;
	struct ext2fs_extent ext;
	errcode_t rc;
	int op = EXT2_EXTENT_ROOT, err = 0;

	rc = sym_ext2fs_extent_open2(e->fs, ino, inode, &h);
	if (rc) {
		c->why = "its extent tree cannot be read";
		return ext4_err(e, rc);
	}
	for (;;) {
		rc = sym_ext2fs_extent_get(h, op, &ext);
		op = EXT2_EXTENT_NEXT;
		if (rc == EXT2_ET_EXTENT_NO_NEXT)
			break;
		if (rc) {
			c->why = "its extent tree cannot be read";
			err = ext4_err(e, rc);
			break;
		}
		if (!ext4_spend(e, 1)) {
			err = EXT4_STOP;
			break;
		}
		if (!(ext.e_flags & EXT2_EXTENT_FLAGS_LEAF) ||
		    (ext.e_flags & EXT2_EXTENT_FLAGS_SECOND_VISIT))
			continue;
		err = map_add(c, ext.e_lblk, ext.e_pblk, ext.e_len,
			      ext.e_flags & EXT2_EXTENT_FLAGS_UNINIT);
		if (err)
			break;
	}
	sym_ext2fs_extent_free(h);
	return err;
}

static int map_block(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt, blk64_t ref_blk,
		     int ref_offset, void *priv)
{
	struct map_ctx *c = priv;

	if (!ext4_spend(c->e, 1)) {
		c->err = EXT4_STOP;
		return BLOCK_ABORT;
	}
	if (blockcnt < 0)
		return 0; /* an indirect block */
	if ((uint64_t)blockcnt >= c->lblk_end)
		return 0; /* past the end of the file */
	c->err = map_add(c, (uint64_t)blockcnt, *blocknr, 1, false);
	return c->err ? BLOCK_ABORT : 0;
}

int ext4_map(struct ext4 *e, ext2_ino_t ino, struct ext2_inode *inode, uint64_t lblk_end,
	     const char **why)
{
	struct map_ctx c = {.e = e, .lblk_end = lblk_end};
	errcode_t rc;
	int err;

	e->nruns = 0;
	*why = NULL;
	if (inode->i_flags & EXT4_EXTENTS_FL) {
		err = map_extents(&c, ino, inode);
	} else {
		rc = sym_ext2fs_block_iterate3(e->fs, ino, BLOCK_FLAG_READ_ONLY, NULL, map_block, &c);
		err = c.err;
		if (!err && rc) {
			c.why = "its indirect blocks cannot be read";
			err = ext4_err(e, rc);
		}
	}
	if (err && err != -ENOMEM && err != EXT4_STOP && !c.why)
		c.why = "its block map cannot be read";
	*why = c.why;
	return err;
}

#define INLINE_IBLOCK 40      /* i_block's offset in the inode */
#define INLINE_MIN 60	      /* bytes of inline data in i_block */
#define INLINE_XATTR_MAGIC 0xEA020000u

/* The system.data attribute in the inode's body (raw: its isz bytes): the value's offset in
 * the inode and its length, or false. */
static bool inline_xattr(const uint8_t *raw, size_t isz, uint64_t *off, uint64_t *len)
{
	size_t extra, start, p;

	if (isz <= EXT2_GOOD_OLD_INODE_SIZE + 4)
		return false;
	extra = le16(raw + EXT2_GOOD_OLD_INODE_SIZE);
	start = EXT2_GOOD_OLD_INODE_SIZE + extra;
	if (extra & 3 || start + 4 > isz || le32(raw + start) != INLINE_XATTR_MAGIC)
		return false;
	start += 4;
	for (p = start; p + 16 <= isz && le32(raw + p);) {
		size_t nlen = raw[p], voff = le16(raw + p + 2), vsize = le32(raw + p + 8);

		if (p + 16 + nlen > isz)
			return false;
		if (raw[p + 1] == 7 && nlen == 4 && !memcmp(raw + p + 16, "data", 4)) {
			if (le32(raw + p + 4) || voff > isz - start || vsize > isz - start - voff)
				return false; /* in another inode, or not inside this one */
			*off = start + voff;
			*len = vsize;
			return true;
		}
		p += (16 + nlen + 3) & ~(size_t)3;
	}
	return false;
}

int ext4_map_inline(struct ext4 *e, ext2_ino_t ino, uint64_t size, size_t *n, const char **why)
{
	struct ext2_super_block *sb = e->fs->super;
	uint64_t ipg = sb->s_inodes_per_group, isz = EXT2_INODE_SIZE(sb), tbl, at, voff, vlen;
	dgrp_t group = (dgrp_t)((ino - 1) / ipg);
	int err;

	*n = 0;
	*why = "its inline data cannot be found";
	tbl = sym_ext2fs_inode_table_loc(e->fs, group);
	at = ((ino - 1) % ipg) * isz;
	if (tbl >= e->blocks || at / e->bs >= e->blocks - tbl)
		return -EIO;
	at += tbl * e->bs;
	if (isz > e->bs || at + isz > e->image_size)
		return -EIO;
	err = src_pread_full(e->in, e->block, (size_t)isz, at);
	if (err)
		return err;
	if (e->sparse_cap < 2) {
		struct member_sparse *s = realloc(e->sparse, 2 * sizeof(*s));

		if (!s)
			return -ENOMEM;
		e->sparse = s;
		e->sparse_cap = 2;
	}
	if (size == 0) {
		*why = NULL;
		return 0;
	}
	e->sparse[0] = (struct member_sparse){.off = 0, .len = size < INLINE_MIN ? size : INLINE_MIN,
					      .src = at + INLINE_IBLOCK};
	*n = 1;
	/* what the inode holds past i_block is in system.data; a size larger than both (mkfs.ext4
	 * -d makes such files of sparse ones) reads as zeros past them, as a hole */
	if (size > INLINE_MIN && inline_xattr(e->block, (size_t)isz, &voff, &vlen) && vlen) {
		e->sparse[1] = (struct member_sparse){
			.off = INLINE_MIN, .len = vlen < size - INLINE_MIN ? vlen : size - INLINE_MIN,
			.src = at + voff};
		*n = 2;
	}
	*why = NULL;
	return 0;
}
