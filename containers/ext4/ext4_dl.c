/* The functions of ext4_dl.h, resolved at the first image opened. */
#include "containers/ext4/ext4_dl.h"

#include <pthread.h>

DL_DEFINE(ext2fs_block_iterate3);
DL_DEFINE(ext2fs_check_desc);
DL_DEFINE(ext2fs_close_free);
DL_DEFINE(ext2fs_dir_iterate2);
DL_DEFINE(ext2fs_extent_free);
DL_DEFINE(ext2fs_extent_get);
DL_DEFINE(ext2fs_extent_open2);
DL_DEFINE(ext2fs_file_acl_block);
DL_DEFINE(ext2fs_get_rec_len);
DL_DEFINE(ext2fs_inode_table_loc);
DL_DEFINE(ext2fs_is_fast_symlink);
DL_DEFINE(ext2fs_open2);
DL_DEFINE(ext2fs_read_dir_block4);
DL_DEFINE(ext2fs_read_inode_full);
DL_DEFINE(error_message);
DL_DEFINE(initialize_ext2_error_table);

static const struct dl_sym syms0[] = {
    DL_SYM(initialize_ext2_error_table),
    DL_SYM(ext2fs_block_iterate3),
    DL_SYM(ext2fs_check_desc),
    DL_SYM(ext2fs_close_free),
    DL_SYM(ext2fs_dir_iterate2),
    DL_SYM(ext2fs_extent_free),
    DL_SYM(ext2fs_extent_get),
    DL_SYM(ext2fs_extent_open2),
    DL_SYM(ext2fs_file_acl_block),
    DL_SYM(ext2fs_get_rec_len),
    DL_SYM(ext2fs_inode_table_loc),
    DL_SYM(ext2fs_is_fast_symlink),
    DL_SYM(ext2fs_open2),
    DL_SYM(ext2fs_read_dir_block4),
    DL_SYM(ext2fs_read_inode_full),
};

static const struct dl_sym syms1[] = {
    DL_SYM(error_message),
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;

static void load(void)
{
	loaded =
	    dl_load(DL_EXT2FS, "ext2/3/4 file systems", syms0, sizeof(syms0) / sizeof(syms0[0]));
	if (!loaded)
		loaded = dl_load(DL_COM_ERR, "ext2/3/4 file systems", syms1,
				 sizeof(syms1) / sizeof(syms1[0]));
}

int ext4_dl_load(void)
{
	pthread_once(&once, load);
	return loaded;
}
