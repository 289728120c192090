/* What the files of the ext2/3/4 container share (ext4.c: probe, checks, open; ext4_walk.c:
 * the directory walk and the members; ext4_map.c: where an inode's bytes are).  One struct ext4
 * per parse, owned by ext4.c's parse; not thread-safe (one parse is one thread).
 */
#ifndef TARSEEK_EXT4_INT_H
#define TARSEEK_EXT4_INT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ext2fs/ext2fs.h>

#include "common/htable.h"
#include "containers/container.h"
#include "containers/ext4/ext4_io.h"

#define EXT4_DEPTH_MAX 256   /* folders deeper than this are not entered */
#define EXT4_PATH_MAX 16384  /* a longer path is left out */
#define EXT4_LINK_MAX 65536  /* a longer symlink target is left out (ext4 allows a block) */
#define EXT4_DIR_MAX (1u << 22) /* entries listed per folder: the rest are left out */

/* The walk stops here (a bound was met, logged): not an error of the parse.  Not -ENOSPC, which
 * the sink may return (a full disk). */
#define EXT4_STOP (-ECANCELED)

/* One run of an inode's blocks: len blocks at logical block lblk, on disk at pblk. */
struct ext4_run {
	uint64_t lblk;
	uint64_t pblk;
	uint64_t len;
};

struct ext4 {
	ext2_filsys fs;
	struct ext4_io_src io; /* what fs reads: in, and its last error */
	struct src *in;
	const struct cont_sink *sink;
	const char *name;     /* the image's, for messages */
	uint64_t image_size;  /* bytes */
	uint64_t bs;	      /* block size */
	uint64_t blocks;      /* blocks in the file system (all inside the image) */
	uint64_t inodes;      /* inodes in the file system */
	uint64_t budget;      /* blocks, extents and entries the walk may still visit */
	bool out_of_budget;   /* the budget ran out: the walk stops */
	uint64_t members_max; /* members reported at most: 64 a file system inode (hard links) */
	uint8_t *dirs_seen;   /* a bit per inode: a folder already walked */
	struct htable links;  /* struct ext4_link: the first path of an inode with links */
	char path[EXT4_PATH_MAX + 1];
	size_t plen;
	struct ext4_run *runs; /* ext4_map's, reused */
	size_t nruns, runs_cap;
	struct member_sparse *sparse; /* the member's map, reused */
	size_t sparse_cap;
	uint8_t *block; /* one block */
	uint8_t *xblock; /* one block: the attribute block of the member being reported */
	uint8_t *inode;  /* one whole inode as stored (the larger of its size and struct
			    ext2_inode_large), zeroed past its size */
	size_t inode_len;
	struct member_xattr *xattrs; /* the member's user.* attributes (ext4_xattrs) */
	size_t nxattrs;
	char *xnames;
	size_t xnames_len;
	struct cont_stats st;
	bool damaged;
};

/* A message about the image's damage (warning level), which marks the parse damaged. */
void ext4_damage(struct ext4 *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* -errno for a libext2fs code: the source's own error if it had one, -ENOMEM, else -EIO. */
int ext4_err(struct ext4 *e, errcode_t code);

/* Did the source itself fail (not the image's content)?  Then the parse stops with its error. */
bool ext4_io_err_fatal(const struct ext4 *e);

/* Spends n of the walk's budget: false (and the walk stops, logged once) when it is spent. */
bool ext4_spend(struct ext4 *e, uint64_t n);

/* The runs of inode ino's data blocks below lblk_end, in logical order, into e->runs/nruns
 * (unwritten extents left out: they read as zeros).  0; -EIO (logged: a map out of order or
 * outside the file system, a tree libext2fs cannot read) with *why set; -ENOMEM; EXT4_STOP when
 * the budget ran out.  Not for inline-data inodes. */
int ext4_map(struct ext4 *e, ext2_ino_t ino, struct ext2_inode *inode, uint64_t lblk_end,
	     const char **why);

/* Where the bytes of an inline-data inode are in the image: into e->sparse (1 or 2 extents,
 * physical offsets), *n their number.  0, or -EOPNOTSUPP/-EIO with *why set. */
int ext4_map_inline(struct ext4 *e, ext2_ino_t ino, uint64_t size, size_t *n, const char **why);

/* The user.* attributes of an inode (raw: its isz bytes as stored; inode: the same, as a
 * struct) into e->xattrs/nxattrs, pointing into raw and e->xblock: valid until the next call.
 * 0, -ENOMEM, a source error; damage leaves attributes out. */
int ext4_xattrs(struct ext4 *e, const uint8_t *raw, size_t isz, const struct ext2_inode *inode);

/* Walks the tree from the root, reporting every member.  0 or -errno (a sink's error, -ENOMEM,
 * a source error). */
int ext4_walk(struct ext4 *e);

#endif
