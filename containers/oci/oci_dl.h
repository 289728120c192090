/* json-c functions, resolved when a container image's index is first parsed (common/dl.h). */
#ifndef TARSEEK_OCI_DL_H
#define TARSEEK_OCI_DL_H

#include <json-c/json.h>

#include "common/dl.h"

DL_DECLARE(json_object_array_get_idx);
DL_DECLARE(json_object_array_length);
DL_DECLARE(json_object_get_int64);
DL_DECLARE(json_object_get_string);
DL_DECLARE(json_object_get_string_len);
DL_DECLARE(json_object_is_type);
DL_DECLARE(json_object_object_get_ex);
DL_DECLARE(json_object_put);
DL_DECLARE(json_tokener_error_desc);
DL_DECLARE(json_tokener_free);
DL_DECLARE(json_tokener_get_error);
DL_DECLARE(json_tokener_get_parse_end);
DL_DECLARE(json_tokener_new_ex);
DL_DECLARE(json_tokener_parse_ex);
DL_DECLARE(json_tokener_set_flags);

/* Loads the libraries once: 0, or -ENOTSUP (logged once). */
int oci_dl_load(void);

#endif
