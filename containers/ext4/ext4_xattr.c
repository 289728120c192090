/* The user.* extended attributes of an inode (ext4_int.h): those in the inode's body (after
 * i_extra_isize, behind the magic 0xEA020000) and those in its attribute block (i_file_acl: a
 * 32-byte header with the same magic, then the entries).  Parsed here rather than with
 * libext2fs's ext2fs_xattrs_read, which reads values kept in other inodes (ea_inode) whole,
 * of whatever size the entry says: tarseek shows only values stored beside their entry.
 *
 * An entry: name_len, name_index, value_offs (from the first entry in the body, from the
 * block's start in a block), value_inum, value_size, hash, then the name, padded to 4 bytes; a
 * zero word ends the list.  Every offset and length is checked against the region it lies in;
 * an entry that does not fit ends the list (what came before is kept).
 */
#include "containers/ext4/ext4_int.h"
#include "containers/ext4/ext4_dl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"

#define XATTR_MAGIC 0xEA020000u
#define XATTR_USER 1	 /* name_index of "user." */
#define XATTR_MAX 256	 /* attributes kept per inode */
#define XATTR_NAMES 8192 /* bytes of names kept per inode ("user." + name + NUL each) */

/* Adds the user.* entries of the list at list (values from base), inside region [0, len). */
static void xattr_list(struct ext4 *e, const uint8_t *region, size_t len, size_t list,
		       size_t base)
{
	size_t p = list;

	while (p + 16 <= len && le32(region + p)) {
		const uint8_t *q = region + p, *name = q + 16;
		size_t nlen = q[0], voff = le16(q + 2), vsize = le32(q + 8);
		bool keep = true;
		char *n;

		if (nlen > len - p - 16)
			break;
		p += (16 + nlen + 3) & ~(size_t)3;
		if (q[1] != XATTR_USER || le32(q + 4) /* in another inode */ || base > len ||
		    voff > len - base || vsize > len - base - voff || memchr(name, '\0', nlen) ||
		    e->nxattrs == XATTR_MAX || e->xnames_len + 6 + nlen > XATTR_NAMES)
			continue;
		for (size_t i = 0; i < e->nxattrs && keep; i++)
			keep = strlen(e->xattrs[i].name) != 5 + nlen ||
			       memcmp(e->xattrs[i].name + 5, name, nlen);
		if (!keep)
			continue;
		n = e->xnames + e->xnames_len;
		memcpy(n, "user.", 5);
		memcpy(n + 5, name, nlen);
		n[5 + nlen] = '\0';
		e->xnames_len += 6 + nlen;
		e->xattrs[e->nxattrs++] = (struct member_xattr){
			.name = n, .value = region + base + voff, .len = vsize};
	}
}

int ext4_xattrs(struct ext4 *e, const uint8_t *raw, size_t isz, const struct ext2_inode *inode)
{
	blk64_t blk;
	size_t extra, start;
	int err;

	e->nxattrs = 0;
	e->xnames_len = 0;
	if (!e->xattrs) {
		e->xattrs = malloc(XATTR_MAX * sizeof(*e->xattrs));
		e->xnames = malloc(XATTR_NAMES);
		if (!e->xattrs || !e->xnames)
			return -ENOMEM;
	}
	if (isz > EXT2_GOOD_OLD_INODE_SIZE + 4) {
		extra = le16(raw + EXT2_GOOD_OLD_INODE_SIZE);
		start = EXT2_GOOD_OLD_INODE_SIZE + extra;
		if (!(extra & 3) && start + 4 <= isz && le32(raw + start) == XATTR_MAGIC)
			xattr_list(e, raw, isz, start + 4, start + 4);
	}
	blk = sym_ext2fs_file_acl_block(e->fs, (struct ext2_inode *)inode);
	if (!blk || blk >= e->blocks)
		return 0;
	err = src_pread_full(e->in, e->xblock, (size_t)e->bs, blk * e->bs);
	if (err)
		return err;
	if (le32(e->xblock) == XATTR_MAGIC && le32(e->xblock + 8) == 1)
		xattr_list(e, e->xblock, (size_t)e->bs, 32, 0);
	return 0;
}
