/* The functions of oci_dl.h, resolved at the first image opened. */
#include "containers/oci/oci_dl.h"

#include <pthread.h>

DL_DEFINE(json_object_array_get_idx);
DL_DEFINE(json_object_array_length);
DL_DEFINE(json_object_get_int64);
DL_DEFINE(json_object_get_string);
DL_DEFINE(json_object_get_string_len);
DL_DEFINE(json_object_is_type);
DL_DEFINE(json_object_object_get_ex);
DL_DEFINE(json_object_put);
DL_DEFINE(json_tokener_error_desc);
DL_DEFINE(json_tokener_free);
DL_DEFINE(json_tokener_get_error);
DL_DEFINE(json_tokener_get_parse_end);
DL_DEFINE(json_tokener_new_ex);
DL_DEFINE(json_tokener_parse_ex);
DL_DEFINE(json_tokener_set_flags);

static const struct dl_sym syms0[] = {
    DL_SYM(json_object_array_get_idx),	DL_SYM(json_object_array_length),
    DL_SYM(json_object_get_int64),	DL_SYM(json_object_get_string),
    DL_SYM(json_object_get_string_len), DL_SYM(json_object_is_type),
    DL_SYM(json_object_object_get_ex),	DL_SYM(json_object_put),
    DL_SYM(json_tokener_error_desc),	DL_SYM(json_tokener_free),
    DL_SYM(json_tokener_get_error),	DL_SYM(json_tokener_get_parse_end),
    DL_SYM(json_tokener_new_ex),	DL_SYM(json_tokener_parse_ex),
    DL_SYM(json_tokener_set_flags),
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;

static void load(void)
{
	loaded =
	    dl_load(DL_JSONC, "OCI and docker images", syms0, sizeof(syms0) / sizeof(syms0[0]));
}

int oci_dl_load(void)
{
	pthread_once(&once, load);
	return loaded;
}
