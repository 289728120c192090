/* libfsntfs and libbfio (libyal) functions, resolved when an NTFS image is first opened
 * (common/dl.h): the container walks the volume with libfsntfs over a libbfio handle of ours. */
#ifndef TARSEEK_NTFS_DL_H
#define TARSEEK_NTFS_DL_H

#include <libbfio.h>
#include <libfsntfs.h>

#include "common/dl.h"

/* Exported by Debian 12's libfsntfs (20200921) but not declared in its header: the valid
 * data length (initialized size) of a non-resident attribute. */
int libfsntfs_attribute_get_valid_data_size(libfsntfs_attribute_t *attribute,
					    size64_t *valid_data_size, libfsntfs_error_t **error);

DL_DECLARE(libbfio_error_free);
DL_DECLARE(libbfio_handle_free);
DL_DECLARE(libbfio_handle_initialize);
DL_DECLARE(libfsntfs_attribute_free);
DL_DECLARE(libfsntfs_attribute_get_data_flags);
DL_DECLARE(libfsntfs_attribute_get_data_vcn_range);
DL_DECLARE(libfsntfs_attribute_get_type);
DL_DECLARE(libfsntfs_attribute_get_utf8_name_size);
DL_DECLARE(libfsntfs_attribute_get_valid_data_size);
DL_DECLARE(libfsntfs_error_free);
DL_DECLARE(libfsntfs_error_sprint);
DL_DECLARE(libfsntfs_file_entry_free);
DL_DECLARE(libfsntfs_file_entry_get_attribute_by_index);
DL_DECLARE(libfsntfs_file_entry_get_base_record_file_reference);
DL_DECLARE(libfsntfs_file_entry_get_extent_by_index);
DL_DECLARE(libfsntfs_file_entry_get_file_attribute_flags);
DL_DECLARE(libfsntfs_file_entry_get_file_reference);
DL_DECLARE(libfsntfs_file_entry_get_modification_time);
DL_DECLARE(libfsntfs_file_entry_get_number_of_attributes);
DL_DECLARE(libfsntfs_file_entry_get_number_of_extents);
DL_DECLARE(libfsntfs_file_entry_get_number_of_sub_file_entries);
DL_DECLARE(libfsntfs_file_entry_get_size);
DL_DECLARE(libfsntfs_file_entry_get_sub_file_entry_by_index);
DL_DECLARE(libfsntfs_file_entry_get_utf8_name);
DL_DECLARE(libfsntfs_file_entry_get_utf8_name_size);
DL_DECLARE(libfsntfs_file_entry_get_utf8_symbolic_link_target);
DL_DECLARE(libfsntfs_file_entry_get_utf8_symbolic_link_target_size);
DL_DECLARE(libfsntfs_file_entry_has_directory_entries_index);
DL_DECLARE(libfsntfs_file_entry_is_allocated);
DL_DECLARE(libfsntfs_file_entry_is_corrupted);
DL_DECLARE(libfsntfs_file_entry_is_empty);
DL_DECLARE(libfsntfs_file_entry_is_symbolic_link);
DL_DECLARE(libfsntfs_file_entry_read_buffer_at_offset);
DL_DECLARE(libfsntfs_file_name_attribute_get_name_space);
DL_DECLARE(libfsntfs_file_name_attribute_get_parent_file_reference);
DL_DECLARE(libfsntfs_file_name_attribute_get_utf8_name);
DL_DECLARE(libfsntfs_file_name_attribute_get_utf8_name_size);
DL_DECLARE(libfsntfs_volume_close);
DL_DECLARE(libfsntfs_volume_free);
DL_DECLARE(libfsntfs_volume_get_file_entry_by_index);
DL_DECLARE(libfsntfs_volume_get_mft_entry_size);
DL_DECLARE(libfsntfs_volume_get_number_of_file_entries);
DL_DECLARE(libfsntfs_volume_get_root_directory);
DL_DECLARE(libfsntfs_volume_initialize);
DL_DECLARE(libfsntfs_volume_open_file_io_handle);

/* Loads the libraries once: 0, or -ENOTSUP (logged once). */
int ntfs_dl_load(void);

#endif
