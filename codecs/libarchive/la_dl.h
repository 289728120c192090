/* libarchive, loaded when an archive of one of its formats is first opened (common/dl.h says
 * why it is not linked).
 *
 * codecs/libarchive/libarchive_src.c, libarchive_stream.c and containers/libarchive.c call
 * libarchive only through the pointers declared here, sym_archive_NAME, each typed by
 * archive.h's or archive_entry.h's own declaration.  la_open() loads the library before its
 * first call; the container's probe is our own magic-byte test, so a tar, a zip, a 7z or a
 * compressed tar never loads libarchive nor what it brings (libxml2, ICU, ...), and neither does
 * la_init() at startup.  The build needs the headers only; the package depends on libarchive13.
 */
#ifndef TARSEEK_LA_DL_H
#define TARSEEK_LA_DL_H

#include <archive.h>
#include <archive_entry.h>

#include "common/dl.h"

DL_DECLARE(archive_read_new);
DL_DECLARE(archive_read_free);
DL_DECLARE(archive_read_support_format_rar);
DL_DECLARE(archive_read_support_format_rar5);
DL_DECLARE(archive_read_support_format_iso9660);
DL_DECLARE(archive_read_support_format_cpio);
DL_DECLARE(archive_read_support_format_ar);
DL_DECLARE(archive_read_support_format_cab);
DL_DECLARE(archive_read_support_format_lha);
DL_DECLARE(archive_read_support_format_xar);
DL_DECLARE(archive_read_support_format_warc);
DL_DECLARE(archive_read_support_filter_rpm);
DL_DECLARE(archive_read_support_filter_gzip);
DL_DECLARE(archive_read_support_filter_bzip2);
DL_DECLARE(archive_read_support_filter_xz);
DL_DECLARE(archive_read_support_filter_lzma);
DL_DECLARE(archive_read_support_filter_zstd);
DL_DECLARE(archive_read_set_read_callback);
DL_DECLARE(archive_read_set_skip_callback);
DL_DECLARE(archive_read_set_seek_callback);
DL_DECLARE(archive_read_set_callback_data);
DL_DECLARE(archive_read_open1);
DL_DECLARE(archive_read_next_header);
DL_DECLARE(archive_read_data_block);
DL_DECLARE(archive_read_data_skip);
DL_DECLARE(archive_read_header_position);
DL_DECLARE(archive_format);
DL_DECLARE(archive_error_string);
DL_DECLARE(archive_set_error);
DL_DECLARE(archive_entry_filetype);
DL_DECLARE(archive_entry_perm);
DL_DECLARE(archive_entry_size);
DL_DECLARE(archive_entry_size_is_set);
DL_DECLARE(archive_entry_is_data_encrypted);
DL_DECLARE(archive_entry_sparse_count);
DL_DECLARE(archive_entry_pathname);
DL_DECLARE(archive_entry_pathname_utf8);
DL_DECLARE(archive_entry_hardlink);
DL_DECLARE(archive_entry_symlink);
DL_DECLARE(archive_entry_symlink_utf8);
DL_DECLARE(archive_entry_uid);
DL_DECLARE(archive_entry_gid);
DL_DECLARE(archive_entry_uname);
DL_DECLARE(archive_entry_gname);
DL_DECLARE(archive_entry_mtime);
DL_DECLARE(archive_entry_mtime_nsec);
DL_DECLARE(archive_entry_mtime_is_set);
DL_DECLARE(archive_entry_rdevmajor);
DL_DECLARE(archive_entry_rdevminor);
DL_DECLARE(archive_entry_xattr_reset);
DL_DECLARE(archive_entry_xattr_next);

/* Loads libarchive and resolves every pointer above, once (thread-safe; later calls say the
 * same).  0, or -ENOTSUP with the reason logged once at level err ("archives read through
 * libarchive (...) need libarchive.so.13, which cannot be loaded: ..."); the pointers are then
 * NULL.  la_open calls it; nothing else needs to. */
int la_load(void);

#endif
