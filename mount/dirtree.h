/* A plain directory as a tree (tree.h), for union mounts that put an extracted folder, or
 * files changed since the backup, beside archives.
 *
 * Local inodes are numbers handed out as entries are looked up (1 is the root); each
 * remembers its path relative to the root.  Entries are examined with fstatat() relative to
 * the root's descriptor, without following symlinks, so the tree shows symlinks as they
 * are and never leaves its root through them (a folder replaced by a symlink while mounted
 * is not followed either: files are opened with O_NOFOLLOW below the root).
 */
#ifndef TARSEEK_DIRTREE_H
#define TARSEEK_DIRTREE_H

#include <stdbool.h>
#include <stdint.h>

#include "mount/tree.h"

struct dirtree;

/* 0 or -errno (-ENOENT, -ENOTDIR, -EACCES).  hide: a path relative to the folder that the
 * tree does not show (the mount point, when it lies inside the folder: looking into it would
 * make the mount read itself), or NULL.  recursive (-r): files that are archives (named
 * like one, and their content says so; probed once) are shown as folders flagged
 * ARCH_A_NESTED, for the union to open (dirtree_path) and mount in their place. */
int dirtree_open(const char *path, const char *hide, bool recursive, struct dirtree **out);

/* The absolute path of local inode ino (malloc'd), or NULL. */
char *dirtree_path(struct dirtree *d, uint64_t ino);

extern const struct tree_ops tree_dir_ops; /* t is a struct dirtree * */

#endif
