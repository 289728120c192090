/* libcurl's functions, resolved at the first remote source (see curl_dl.h). */
#include "net/curl_dl.h"

#include <pthread.h>

DL_DEFINE(curl_global_init);
DL_DEFINE(curl_easy_init);
DL_DEFINE(curl_easy_setopt);
DL_DEFINE(curl_easy_perform);
DL_DEFINE(curl_easy_cleanup);
DL_DEFINE(curl_easy_strerror);
DL_DEFINE(curl_slist_append);
DL_DEFINE(curl_slist_free_all);
DL_DEFINE(curl_getdate);

static const struct dl_sym curl_syms[] = {
	DL_SYM(curl_global_init),   DL_SYM(curl_easy_init),	 DL_SYM(curl_easy_setopt),
	DL_SYM(curl_easy_perform),  DL_SYM(curl_easy_cleanup), DL_SYM(curl_easy_strerror),
	DL_SYM(curl_slist_append),  DL_SYM(curl_slist_free_all), DL_SYM(curl_getdate),
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static int curl_loaded; /* written once, under curl_once */

static void curl_load_once(void)
{
	curl_loaded = dl_load(DL_CURL, "remote archives (http://, https://, s3://)",
			      curl_syms, sizeof(curl_syms) / sizeof(curl_syms[0]));
}

int http_load_curl(void)
{
	pthread_once(&curl_once, curl_load_once);
	return curl_loaded;
}
