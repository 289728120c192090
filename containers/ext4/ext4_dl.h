/* libext2fs and libcom_err (e2fsprogs) functions, resolved when an ext2/3/4 image is first
 * opened (common/dl.h): the container reads its inodes, extents and folders with them. */
#ifndef TARSEEK_EXT4_DL_H
#define TARSEEK_EXT4_DL_H

#include <ext2fs/ext2fs.h>
#include <et/com_err.h>

#include "common/dl.h"

DL_DECLARE(ext2fs_block_iterate3);
DL_DECLARE(ext2fs_check_desc);
DL_DECLARE(ext2fs_close_free);
DL_DECLARE(ext2fs_dir_iterate2);
DL_DECLARE(ext2fs_extent_free);
DL_DECLARE(ext2fs_extent_get);
DL_DECLARE(ext2fs_extent_open2);
DL_DECLARE(ext2fs_file_acl_block);
DL_DECLARE(ext2fs_get_rec_len);
DL_DECLARE(ext2fs_inode_table_loc);
DL_DECLARE(ext2fs_is_fast_symlink);
DL_DECLARE(ext2fs_open2);
DL_DECLARE(ext2fs_read_dir_block4);
DL_DECLARE(ext2fs_read_inode_full);
DL_DECLARE(error_message);
DL_DECLARE(initialize_ext2_error_table);

/* Loads the libraries once: 0, or -ENOTSUP (logged once). */
int ext4_dl_load(void);

#endif
