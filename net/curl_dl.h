/* libcurl, loaded when a remote source first needs it (common/dl.h says why it is not linked).
 *
 * net/http.c calls libcurl only through the pointers declared here, sym_curl_NAME, each typed
 * by curl.h's own declaration.  http_global_init() loads the library before its first call, so
 * a program that never opens a URL never maps libcurl nor the ~35 libraries it brings (TLS,
 * Kerberos, LDAP, ...).  The build needs curl.h only; the package depends on libcurl4.
 *
 * Note: curl_easy_setopt through its pointer skips curl.h's compile-time type checks (a macro
 * in typecheck-gcc.h); http.c passes long, pointer and callback arguments as curl.h wants.
 */
#ifndef TARSEEK_CURL_DL_H
#define TARSEEK_CURL_DL_H

#include <curl/curl.h>

#include "common/dl.h"

DL_DECLARE(curl_global_init);
DL_DECLARE(curl_easy_init);
DL_DECLARE(curl_easy_setopt);
DL_DECLARE(curl_easy_perform);
DL_DECLARE(curl_easy_cleanup);
DL_DECLARE(curl_easy_strerror);
DL_DECLARE(curl_slist_append);
DL_DECLARE(curl_slist_free_all);
DL_DECLARE(curl_getdate);

/* Loads libcurl and resolves every pointer above, once (thread-safe; later calls say the same).
 * 0, or -ENOTSUP with the reason logged once at level err ("remote archives need
 * libcurl.so.4, which cannot be loaded: ..."); the pointers are then NULL.  It does not call
 * curl_global_init: http_global_init does. */
int http_load_curl(void);

#endif
