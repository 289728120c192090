/* ext2, ext3 and ext4 file systems: the container "ext4" (container.h), one of cont_images, so
 * an image is shown as a folder only with -r.  libext2fs (e2fsprogs) reads the file system
 * through an io_manager over the source (ext4_io.c), so an image inside a .gz decodes only
 * the blocks the parse asks for; every file is reported with its blocks as a sparse map of
 * physical offsets in the image (ext4_map.c, ext4_walk.c), read in place at mount time.
 *
 * Before libext2fs sees it, the superblock is checked here against what the image can hold:
 * a block size of 1 to 64 KiB, groups, inodes and descriptors that fit in the image, and a
 * file system no larger than the image (a truncated image is refused: its last files would
 * read past its end).  What libext2fs then refuses (features it lacks, descriptors that make
 * no sense) is a refusal too, with its message.  Checksums are not a refusal: a block whose
 * checksum is wrong is read as it is (EXT2_FLAG_IGNORE_CSUM_ERRORS), as its content decides
 * whether it is usable.  The journal is not replayed: a file system that needs recovery is
 * read as it is, and the log says so once.
 *
 * Errors (container.h): -EIO for a refused file system (logged), -ENOTSUP for features
 * libext2fs cannot read, -ENOMEM, a source error as it came; damage inside (a folder, a map)
 * is logged, marks the parse damaged and leaves out or makes unreadable only what it touches.
 */
#include "containers/container.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "containers/ext4/ext4_int.h"
#include "containers/ext4/ext4_dl.h"
#include "containers/ext4/ext4_io.h"

#define SB_OFF 1024
#define SB_LEN 1024

/* The superblock at 1024 (false if it cannot be read). */
static bool sb_read(struct src *in, struct ext2_super_block *sb)
{
	if (src_pread_full(in, sb, sizeof(*sb), SB_OFF))
		return false;
#ifdef WORDS_BIGENDIAN
	ext2fs_swap_super(sb);
#endif
	return true;
}

static bool e4_probe(struct src *in, const uint8_t *head, size_t len)
{
	struct ext2_super_block sb;

	(void)head;
	(void)len;
	_Static_assert(sizeof(sb) == SB_LEN, "the superblock is 1024 bytes");
	return sb_read(in, &sb) && sb.s_magic == EXT2_SUPER_MAGIC && sb.s_log_block_size <= 6 &&
	       sb.s_rev_level <= EXT2_DYNAMIC_REV && sb.s_inodes_count && sb.s_blocks_count &&
	       !(sb.s_feature_incompat & EXT3_FEATURE_INCOMPAT_JOURNAL_DEV);
}

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* Checks the superblock against the image (see the top); fills e's sizes.  0 or -EIO (logged). */
static int sb_check(struct ext4 *e, const struct ext2_super_block *sb)
{
	uint64_t bs = (uint64_t)1024 << sb->s_log_block_size, blocks = sb->s_blocks_count;
	uint64_t bpg = sb->s_blocks_per_group, ipg = sb->s_inodes_per_group, groups, desc, isz;
	bool is64 = sb->s_feature_incompat & EXT4_FEATURE_INCOMPAT_64BIT;
	const char *why = NULL;

	if (is64)
		blocks |= (uint64_t)sb->s_blocks_count_hi << 32;
	isz = sb->s_rev_level == EXT2_GOOD_OLD_REV ? EXT2_GOOD_OLD_INODE_SIZE : sb->s_inode_size;
	desc = is64 ? sb->s_desc_size : EXT2_MIN_DESC_SIZE;
	if (sb->s_log_block_size > 6)
		why = "its block size is not 1 to 64 KiB";
	else if (!blocks || blocks > e->image_size / bs)
		why = NULL; /* below: truncated */
	else if (sb->s_first_data_block >= blocks || bpg < 8 || ipg < 1 ||
		 sb->s_clusters_per_group > 8 * bs || ipg > 8 * bs)
		why = "its group sizes make no sense";
	else if (!pow2(isz) || isz < EXT2_GOOD_OLD_INODE_SIZE || isz > bs)
		why = "its inode size makes no sense";
	else if (!pow2(desc) || desc < EXT2_MIN_DESC_SIZE || desc > EXT2_MAX_DESC_SIZE)
		why = "its group descriptor size makes no sense";
	if (why) {
		tfs_log(TFS_LOG_ERR, "%s: an ext2/3/4 superblock, but %s: not read", e->name, why);
		return -EIO;
	}
	if (!blocks || blocks > e->image_size / bs) {
		tfs_log(TFS_LOG_ERR, "%s: an ext2/3/4 file system of %" PRIu64 " bytes in an image "
			"of %" PRIu64 ": the image is truncated; not read", e->name,
			blocks * bs, e->image_size);
		return -EIO;
	}
	groups = (blocks - sb->s_first_data_block + bpg - 1) / bpg;
	if (ipg * isz > e->image_size / groups || sb->s_inodes_count > groups * ipg ||
	    desc > e->image_size / groups) {
		tfs_log(TFS_LOG_ERR, "%s: an ext2/3/4 superblock whose groups (%" PRIu64 " of %"
			PRIu64 " inodes) do not fit in the image: not read", e->name, groups, ipg);
		return -EIO;
	}
	e->bs = bs;
	e->blocks = blocks;
	e->inodes = sb->s_inodes_count;
	e->budget = 2 * blocks + e->inodes + e->image_size / 12 + 65536;
	e->members_max = 64 * e->inodes + 65536;
	return 0;
}

/* Opens the file system with libext2fs.  0, -ENOTSUP, -EIO (logged), -ENOMEM, a source error. */
static int e4_open(struct ext4 *e)
{
	char name[EXT4_IO_NAME_MAX];
	errcode_t rc;
	int err;

	e->io.src = e->in;
	ext4_io_name(name, &e->io);
	rc = sym_ext2fs_open2(name, NULL,
			  EXT2_FLAG_64BITS | EXT2_FLAG_IGNORE_CSUM_ERRORS | EXT2_FLAG_SKIP_MMP, 0, 0,
			  ext4_io_manager, &e->fs);
	if (!rc) {
		/* e2fsck's first check: bitmaps and inode tables inside their groups (flex_bg: the
		 * file system), not overlapping the superblock and descriptors */
		rc = sym_ext2fs_check_desc(e->fs);
		if (!rc)
			return 0;
		err = ext4_err(e, rc);
		if (err == -EIO)
			tfs_log(TFS_LOG_ERR, "%s: an ext2/3/4 file system whose group descriptors make "
				"no sense (%s): not read", e->name, sym_error_message(rc));
		sym_ext2fs_close_free(&e->fs);
		return err;
	}
	e->fs = NULL;
	err = ext4_err(e, rc);
	if (err != -EIO)
		return err; /* -ENOMEM, or the source's error */
	if (rc == EXT2_ET_UNSUPP_FEATURE || rc == EXT2_ET_RO_UNSUPP_FEATURE) {
		tfs_log(TFS_LOG_ERR, "%s: an ext2/3/4 file system with features libext2fs cannot "
			"read: not read", e->name);
		return -ENOTSUP;
	}
	tfs_log(TFS_LOG_ERR, "%s: an ext2/3/4 file system that libext2fs refuses (%s): not read",
		e->name, sym_error_message(rc));
	return -EIO;
}

/* libext2fs's messages (error_message) once its table is known to com_err */
static void e4_init(void)
{
	sym_initialize_ext2_error_table();
}

static int e4_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *stats)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	struct ext4 *e = calloc(1, sizeof(*e));
	struct ext2_super_block sb;
	int err;

	if (ext4_dl_load()) { /* said once */
		free(e);
		return -ENOTSUP;
	}
	pthread_once(&once, e4_init);
	if (stats)
		*stats = (struct cont_stats){0};
	if (!e)
		return -ENOMEM;
	e->in = in;
	e->sink = sink;
	e->name = sink->name ? sink->name : "image";
	e->image_size = src_size(in);
	if (e->image_size == SRC_SIZE_UNKNOWN || !sb_read(in, &sb)) {
		tfs_log(TFS_LOG_ERR, "%s: the ext2/3/4 superblock cannot be read", e->name);
		err = -EIO;
		goto out;
	}
	err = sb_check(e, &sb);
	if (!err)
		err = e4_open(e);
	if (err)
		goto out;
	if (e->fs->super->s_feature_incompat & EXT3_FEATURE_INCOMPAT_RECOVER)
		tfs_log(TFS_LOG_NOTICE, "%s: the file system needs journal recovery (it was not "
			"unmounted cleanly); it is read as it is, without the journal", e->name);
	e->dirs_seen = calloc(e->inodes / 8 + 1, 1);
	e->block = malloc(e->bs + 1);
	e->xblock = malloc(e->bs);
	e->inode_len = EXT2_INODE_SIZE(e->fs->super);
	if (e->inode_len < sizeof(struct ext2_inode_large))
		e->inode_len = sizeof(struct ext2_inode_large);
	e->inode = malloc(e->inode_len);
	if (!e->dirs_seen || !e->block || !e->xblock || !e->inode) {
		err = -ENOMEM;
		goto out;
	}
	err = ext4_walk(e);
out:
	if (e->fs)
		sym_ext2fs_close_free(&e->fs);
	if (stats) {
		stats->members = e->st.members;
		stats->damaged = e->damaged;
	}
	free(e->dirs_seen);
	free(e->block);
	free(e->xblock);
	free(e->inode);
	free(e->xattrs);
	free(e->xnames);
	free(e->runs);
	free(e->sparse);
	free(e);
	return err;
}

const struct container cont_ext4 = {
	.name = "ext4",
	.probe = e4_probe,
	.parse = e4_parse,
};
