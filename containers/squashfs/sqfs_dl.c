/* libsquashfs's functions, resolved when a SquashFS image is first opened (sqfs_dl.h). */
#include "containers/squashfs/sqfs_dl.h"

#include <pthread.h>

DL_DEFINE(sqfs_super_read);
DL_DEFINE(sqfs_id_table_create);
DL_DEFINE(sqfs_id_table_read);
DL_DEFINE(sqfs_frag_table_create);
DL_DEFINE(sqfs_frag_table_read);
DL_DEFINE(sqfs_frag_table_lookup);
DL_DEFINE(sqfs_dir_reader_create);
DL_DEFINE(sqfs_dir_reader_get_full_hierarchy);
DL_DEFINE(sqfs_dir_tree_destroy);
DL_DEFINE(sqfs_inode_get_file_size);
DL_DEFINE(sqfs_inode_get_frag_location);
DL_DEFINE(sqfs_inode_get_file_block_start);
DL_DEFINE(sqfs_inode_get_xattr_index);
DL_DEFINE(sqfs_xattr_reader_create);
DL_DEFINE(sqfs_xattr_reader_load);
DL_DEFINE(sqfs_xattr_reader_get_desc);
DL_DEFINE(sqfs_xattr_reader_seek_kv);
DL_DEFINE(sqfs_xattr_reader_read_key);
DL_DEFINE(sqfs_xattr_reader_read_value);
DL_DEFINE(sqfs_get_xattr_prefix);
DL_DEFINE(sqfs_free);
DL_DEFINE(sqfs_meta_reader_create);
DL_DEFINE(sqfs_meta_reader_seek);
DL_DEFINE(sqfs_meta_reader_read);
DL_DEFINE(sqfs_meta_reader_get_position);

static const struct dl_sym sqfs_syms[] = {
	DL_SYM(sqfs_super_read),
	DL_SYM(sqfs_id_table_create),
	DL_SYM(sqfs_id_table_read),
	DL_SYM(sqfs_frag_table_create),
	DL_SYM(sqfs_frag_table_read),
	DL_SYM(sqfs_frag_table_lookup),
	DL_SYM(sqfs_dir_reader_create),
	DL_SYM(sqfs_dir_reader_get_full_hierarchy),
	DL_SYM(sqfs_dir_tree_destroy),
	DL_SYM(sqfs_inode_get_file_size),
	DL_SYM(sqfs_inode_get_frag_location),
	DL_SYM(sqfs_inode_get_file_block_start),
	DL_SYM(sqfs_inode_get_xattr_index),
	DL_SYM(sqfs_xattr_reader_create),
	DL_SYM(sqfs_xattr_reader_load),
	DL_SYM(sqfs_xattr_reader_get_desc),
	DL_SYM(sqfs_xattr_reader_seek_kv),
	DL_SYM(sqfs_xattr_reader_read_key),
	DL_SYM(sqfs_xattr_reader_read_value),
	DL_SYM(sqfs_get_xattr_prefix),
	DL_SYM(sqfs_free),
	DL_SYM(sqfs_meta_reader_create),
	DL_SYM(sqfs_meta_reader_seek),
	DL_SYM(sqfs_meta_reader_read),
	DL_SYM(sqfs_meta_reader_get_position),
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;

static void load(void)
{
	loaded = dl_load(DL_SQUASHFS, "SquashFS images", sqfs_syms,
			 sizeof(sqfs_syms) / sizeof(sqfs_syms[0]));
}

int sqfs_dl_load(void)
{
	pthread_once(&once, load);
	return loaded;
}
