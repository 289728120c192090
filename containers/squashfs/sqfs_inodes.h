/* The inode table of a SquashFS image checked before libsquashfs reads the tree: every inode,
 * in order, read through with its variable part (block list, link target, directory index),
 * so that what libsquashfs allocates for one is what the table holds (sqfs_inodes.c says why
 * and what is left uncovered).
 */
#ifndef TARSEEK_SQFS_INODES_H
#define TARSEEK_SQFS_INODES_H

#include "containers/squashfs/sqfs_dl.h"

/* 0 if every inode of the table (inode_count of them at least) lies in it, one after the
 * other; -EIO (logged, naming the image name) if one does not, or has no known type; -ENOMEM. */
int sqfs_inodes_check(sqfs_file_t *file, sqfs_compressor_t *cmp, const sqfs_super_t *super,
		      const char *name);

#endif
