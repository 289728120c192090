/* Archives on servers: what a process needs to read them (the options of the transport, the
 * planning of requests, the cache of fetched pages all remote sources share), and the one
 * call that turns a URL into a source (source.h) the parsers and codecs read like a file.
 *
 * Layering: net.c joins http.c (the transport) and remote.c (the page cache and request
 * planning); the index layer (index/open.c) calls net_open for http://, https:// and s3://
 * sources and knows nothing of libcurl.
 */
#ifndef TARSEEK_NET_H
#define TARSEEK_NET_H

#include "common/source.h"
#include "net/http.h"
#include "net/remote.h"

struct cache;

struct net_env {
	struct http_opts http;
	struct rmt_opts plan;
	struct cache *pages; /* fetched bytes of every remote source; borrowed */
};

/* Opens url (http.h says what is checked and logged) as a source of its bytes through
 * e->pages.  *obj is the source's transport, valid until src_free(*src).  0 or -errno as
 * http_open; *src = *obj = NULL on error. */
int net_open(const char *url, const struct net_env *e, struct src **src, struct http_obj **obj);

#endif
