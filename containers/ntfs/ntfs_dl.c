/* The functions of ntfs_dl.h, resolved at the first image opened. */
#include "containers/ntfs/ntfs_dl.h"

#include <pthread.h>

DL_DEFINE(libbfio_error_free);
DL_DEFINE(libbfio_handle_free);
DL_DEFINE(libbfio_handle_initialize);
DL_DEFINE(libfsntfs_attribute_free);
DL_DEFINE(libfsntfs_attribute_get_data_flags);
DL_DEFINE(libfsntfs_attribute_get_data_vcn_range);
DL_DEFINE(libfsntfs_attribute_get_type);
DL_DEFINE(libfsntfs_attribute_get_utf8_name_size);
DL_DEFINE(libfsntfs_attribute_get_valid_data_size);
DL_DEFINE(libfsntfs_error_free);
DL_DEFINE(libfsntfs_error_sprint);
DL_DEFINE(libfsntfs_file_entry_free);
DL_DEFINE(libfsntfs_file_entry_get_attribute_by_index);
DL_DEFINE(libfsntfs_file_entry_get_base_record_file_reference);
DL_DEFINE(libfsntfs_file_entry_get_extent_by_index);
DL_DEFINE(libfsntfs_file_entry_get_file_attribute_flags);
DL_DEFINE(libfsntfs_file_entry_get_file_reference);
DL_DEFINE(libfsntfs_file_entry_get_modification_time);
DL_DEFINE(libfsntfs_file_entry_get_number_of_attributes);
DL_DEFINE(libfsntfs_file_entry_get_number_of_extents);
DL_DEFINE(libfsntfs_file_entry_get_number_of_sub_file_entries);
DL_DEFINE(libfsntfs_file_entry_get_size);
DL_DEFINE(libfsntfs_file_entry_get_sub_file_entry_by_index);
DL_DEFINE(libfsntfs_file_entry_get_utf8_name);
DL_DEFINE(libfsntfs_file_entry_get_utf8_name_size);
DL_DEFINE(libfsntfs_file_entry_get_utf8_symbolic_link_target);
DL_DEFINE(libfsntfs_file_entry_get_utf8_symbolic_link_target_size);
DL_DEFINE(libfsntfs_file_entry_has_directory_entries_index);
DL_DEFINE(libfsntfs_file_entry_is_allocated);
DL_DEFINE(libfsntfs_file_entry_is_corrupted);
DL_DEFINE(libfsntfs_file_entry_is_empty);
DL_DEFINE(libfsntfs_file_entry_is_symbolic_link);
DL_DEFINE(libfsntfs_file_entry_read_buffer_at_offset);
DL_DEFINE(libfsntfs_file_name_attribute_get_name_space);
DL_DEFINE(libfsntfs_file_name_attribute_get_parent_file_reference);
DL_DEFINE(libfsntfs_file_name_attribute_get_utf8_name);
DL_DEFINE(libfsntfs_file_name_attribute_get_utf8_name_size);
DL_DEFINE(libfsntfs_volume_close);
DL_DEFINE(libfsntfs_volume_free);
DL_DEFINE(libfsntfs_volume_get_file_entry_by_index);
DL_DEFINE(libfsntfs_volume_get_mft_entry_size);
DL_DEFINE(libfsntfs_volume_get_number_of_file_entries);
DL_DEFINE(libfsntfs_volume_get_root_directory);
DL_DEFINE(libfsntfs_volume_initialize);
DL_DEFINE(libfsntfs_volume_open_file_io_handle);

static const struct dl_sym syms0[] = {
    DL_SYM(libbfio_error_free),
    DL_SYM(libbfio_handle_free),
    DL_SYM(libbfio_handle_initialize),
};

static const struct dl_sym syms1[] = {
    DL_SYM(libfsntfs_attribute_free),
    DL_SYM(libfsntfs_attribute_get_data_flags),
    DL_SYM(libfsntfs_attribute_get_data_vcn_range),
    DL_SYM(libfsntfs_attribute_get_type),
    DL_SYM(libfsntfs_attribute_get_utf8_name_size),
    DL_SYM(libfsntfs_attribute_get_valid_data_size),
    DL_SYM(libfsntfs_error_free),
    DL_SYM(libfsntfs_error_sprint),
    DL_SYM(libfsntfs_file_entry_free),
    DL_SYM(libfsntfs_file_entry_get_attribute_by_index),
    DL_SYM(libfsntfs_file_entry_get_base_record_file_reference),
    DL_SYM(libfsntfs_file_entry_get_extent_by_index),
    DL_SYM(libfsntfs_file_entry_get_file_attribute_flags),
    DL_SYM(libfsntfs_file_entry_get_file_reference),
    DL_SYM(libfsntfs_file_entry_get_modification_time),
    DL_SYM(libfsntfs_file_entry_get_number_of_attributes),
    DL_SYM(libfsntfs_file_entry_get_number_of_extents),
    DL_SYM(libfsntfs_file_entry_get_number_of_sub_file_entries),
    DL_SYM(libfsntfs_file_entry_get_size),
    DL_SYM(libfsntfs_file_entry_get_sub_file_entry_by_index),
    DL_SYM(libfsntfs_file_entry_get_utf8_name),
    DL_SYM(libfsntfs_file_entry_get_utf8_name_size),
    DL_SYM(libfsntfs_file_entry_get_utf8_symbolic_link_target),
    DL_SYM(libfsntfs_file_entry_get_utf8_symbolic_link_target_size),
    DL_SYM(libfsntfs_file_entry_has_directory_entries_index),
    DL_SYM(libfsntfs_file_entry_is_allocated),
    DL_SYM(libfsntfs_file_entry_is_corrupted),
    DL_SYM(libfsntfs_file_entry_is_empty),
    DL_SYM(libfsntfs_file_entry_is_symbolic_link),
    DL_SYM(libfsntfs_file_entry_read_buffer_at_offset),
    DL_SYM(libfsntfs_file_name_attribute_get_name_space),
    DL_SYM(libfsntfs_file_name_attribute_get_parent_file_reference),
    DL_SYM(libfsntfs_file_name_attribute_get_utf8_name),
    DL_SYM(libfsntfs_file_name_attribute_get_utf8_name_size),
    DL_SYM(libfsntfs_volume_close),
    DL_SYM(libfsntfs_volume_free),
    DL_SYM(libfsntfs_volume_get_file_entry_by_index),
    DL_SYM(libfsntfs_volume_get_mft_entry_size),
    DL_SYM(libfsntfs_volume_get_number_of_file_entries),
    DL_SYM(libfsntfs_volume_get_root_directory),
    DL_SYM(libfsntfs_volume_initialize),
    DL_SYM(libfsntfs_volume_open_file_io_handle),
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;

static void load(void)
{
	loaded = dl_load(DL_BFIO, "NTFS file systems", syms0, sizeof(syms0) / sizeof(syms0[0]));
	if (!loaded)
		loaded = dl_load(DL_FSNTFS, "NTFS file systems", syms1,
				 sizeof(syms1) / sizeof(syms1[0]));
}

int ntfs_dl_load(void)
{
	pthread_once(&once, load);
	return loaded;
}
