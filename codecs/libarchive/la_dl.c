/* libarchive's functions, resolved when an archive of its formats is first opened (la_dl.h). */
#include "codecs/libarchive/la_dl.h"

#include <pthread.h>

DL_DEFINE(archive_read_new);
DL_DEFINE(archive_read_free);
DL_DEFINE(archive_read_support_format_rar);
DL_DEFINE(archive_read_support_format_rar5);
DL_DEFINE(archive_read_support_format_iso9660);
DL_DEFINE(archive_read_support_format_cpio);
DL_DEFINE(archive_read_support_format_ar);
DL_DEFINE(archive_read_support_format_cab);
DL_DEFINE(archive_read_support_format_lha);
DL_DEFINE(archive_read_support_format_xar);
DL_DEFINE(archive_read_support_format_warc);
DL_DEFINE(archive_read_support_filter_rpm);
DL_DEFINE(archive_read_support_filter_gzip);
DL_DEFINE(archive_read_support_filter_bzip2);
DL_DEFINE(archive_read_support_filter_xz);
DL_DEFINE(archive_read_support_filter_lzma);
DL_DEFINE(archive_read_support_filter_zstd);
DL_DEFINE(archive_read_set_read_callback);
DL_DEFINE(archive_read_set_skip_callback);
DL_DEFINE(archive_read_set_seek_callback);
DL_DEFINE(archive_read_set_callback_data);
DL_DEFINE(archive_read_open1);
DL_DEFINE(archive_read_next_header);
DL_DEFINE(archive_read_data_block);
DL_DEFINE(archive_read_data_skip);
DL_DEFINE(archive_read_header_position);
DL_DEFINE(archive_format);
DL_DEFINE(archive_error_string);
DL_DEFINE(archive_set_error);
DL_DEFINE(archive_entry_filetype);
DL_DEFINE(archive_entry_perm);
DL_DEFINE(archive_entry_size);
DL_DEFINE(archive_entry_size_is_set);
DL_DEFINE(archive_entry_is_data_encrypted);
DL_DEFINE(archive_entry_sparse_count);
DL_DEFINE(archive_entry_pathname);
DL_DEFINE(archive_entry_pathname_utf8);
DL_DEFINE(archive_entry_hardlink);
DL_DEFINE(archive_entry_symlink);
DL_DEFINE(archive_entry_symlink_utf8);
DL_DEFINE(archive_entry_uid);
DL_DEFINE(archive_entry_gid);
DL_DEFINE(archive_entry_uname);
DL_DEFINE(archive_entry_gname);
DL_DEFINE(archive_entry_mtime);
DL_DEFINE(archive_entry_mtime_nsec);
DL_DEFINE(archive_entry_mtime_is_set);
DL_DEFINE(archive_entry_rdevmajor);
DL_DEFINE(archive_entry_rdevminor);
DL_DEFINE(archive_entry_xattr_reset);
DL_DEFINE(archive_entry_xattr_next);

static const struct dl_sym la_syms[] = {
	DL_SYM(archive_read_new),
	DL_SYM(archive_read_free),
	DL_SYM(archive_read_support_format_rar),
	DL_SYM(archive_read_support_format_rar5),
	DL_SYM(archive_read_support_format_iso9660),
	DL_SYM(archive_read_support_format_cpio),
	DL_SYM(archive_read_support_format_ar),
	DL_SYM(archive_read_support_format_cab),
	DL_SYM(archive_read_support_format_lha),
	DL_SYM(archive_read_support_format_xar),
	DL_SYM(archive_read_support_format_warc),
	DL_SYM(archive_read_support_filter_rpm),
	DL_SYM(archive_read_support_filter_gzip),
	DL_SYM(archive_read_support_filter_bzip2),
	DL_SYM(archive_read_support_filter_xz),
	DL_SYM(archive_read_support_filter_lzma),
	DL_SYM(archive_read_support_filter_zstd),
	DL_SYM(archive_read_set_read_callback),
	DL_SYM(archive_read_set_skip_callback),
	DL_SYM(archive_read_set_seek_callback),
	DL_SYM(archive_read_set_callback_data),
	DL_SYM(archive_read_open1),
	DL_SYM(archive_read_next_header),
	DL_SYM(archive_read_data_block),
	DL_SYM(archive_read_data_skip),
	DL_SYM(archive_read_header_position),
	DL_SYM(archive_format),
	DL_SYM(archive_error_string),
	DL_SYM(archive_set_error),
	DL_SYM(archive_entry_filetype),
	DL_SYM(archive_entry_perm),
	DL_SYM(archive_entry_size),
	DL_SYM(archive_entry_size_is_set),
	DL_SYM(archive_entry_is_data_encrypted),
	DL_SYM(archive_entry_sparse_count),
	DL_SYM(archive_entry_pathname),
	DL_SYM(archive_entry_pathname_utf8),
	DL_SYM(archive_entry_hardlink),
	DL_SYM(archive_entry_symlink),
	DL_SYM(archive_entry_symlink_utf8),
	DL_SYM(archive_entry_uid),
	DL_SYM(archive_entry_gid),
	DL_SYM(archive_entry_uname),
	DL_SYM(archive_entry_gname),
	DL_SYM(archive_entry_mtime),
	DL_SYM(archive_entry_mtime_nsec),
	DL_SYM(archive_entry_mtime_is_set),
	DL_SYM(archive_entry_rdevmajor),
	DL_SYM(archive_entry_rdevminor),
	DL_SYM(archive_entry_xattr_reset),
	DL_SYM(archive_entry_xattr_next),
};

static pthread_once_t la_once = PTHREAD_ONCE_INIT;
static int la_loaded; /* written once, under la_once */

static void la_load_once(void)
{
	la_loaded = dl_load(DL_ARCHIVE, "archives read through libarchive (rar, iso9660, cpio, "
			    "ar, cab, lha, xar, warc, rpm)",
			    la_syms, sizeof(la_syms) / sizeof(la_syms[0]));
}

int la_load(void)
{
	pthread_once(&la_once, la_load_once);
	return la_loaded;
}
