/* libsquashfs (squashfs-tools-ng) functions, resolved when a SquashFS image is first opened
 * (common/dl.h): the container reads an image's tables and directories with it. */
#ifndef TARSEEK_SQFS_DL_H
#define TARSEEK_SQFS_DL_H

#include <sqfs/block.h>
#include <sqfs/compressor.h>
#include <sqfs/error.h>
#include <sqfs/dir_reader.h>
#include <sqfs/frag_table.h>
#include <sqfs/id_table.h>
#include <sqfs/inode.h>
#include <sqfs/io.h>
#include <sqfs/meta_reader.h>
#include <sqfs/super.h>
#include <sqfs/xattr.h>
#include <sqfs/xattr_reader.h>

#include "common/dl.h"

DL_DECLARE(sqfs_super_read);
DL_DECLARE(sqfs_id_table_create);
DL_DECLARE(sqfs_id_table_read);
DL_DECLARE(sqfs_frag_table_create);
DL_DECLARE(sqfs_frag_table_read);
DL_DECLARE(sqfs_frag_table_lookup);
DL_DECLARE(sqfs_dir_reader_create);
DL_DECLARE(sqfs_dir_reader_get_full_hierarchy);
DL_DECLARE(sqfs_dir_tree_destroy);
DL_DECLARE(sqfs_inode_get_file_size);
DL_DECLARE(sqfs_inode_get_frag_location);
DL_DECLARE(sqfs_inode_get_file_block_start);
DL_DECLARE(sqfs_inode_get_xattr_index);
DL_DECLARE(sqfs_xattr_reader_create);
DL_DECLARE(sqfs_xattr_reader_load);
DL_DECLARE(sqfs_xattr_reader_get_desc);
DL_DECLARE(sqfs_xattr_reader_seek_kv);
DL_DECLARE(sqfs_xattr_reader_read_key);
DL_DECLARE(sqfs_xattr_reader_read_value);
DL_DECLARE(sqfs_get_xattr_prefix);
DL_DECLARE(sqfs_free);
DL_DECLARE(sqfs_meta_reader_create);
DL_DECLARE(sqfs_meta_reader_seek);
DL_DECLARE(sqfs_meta_reader_read);
DL_DECLARE(sqfs_meta_reader_get_position);

/* Loads libsquashfs once: 0, or -ENOTSUP (logged once). */
int sqfs_dl_load(void);

#endif
