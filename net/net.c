/* A URL as a source: the HTTP transport under the page cache (see net.h). */
#include "net/net.h"

#include <errno.h>
#include <string.h>

/* Under a mount every failed fetch is EIO (the reason is logged): a changed object, a
 * denied or vanished one, a server gone. */
static int read_error(int err)
{
	return err && err != -ENOMEM ? -EIO : err;
}

static int xfer_get(void *opaque, void *buf, size_t len, uint64_t off)
{
	return read_error(http_get(opaque, buf, len, off));
}

static int xfer_stream(void *opaque, uint64_t off, uint64_t len,
		       int (*sink)(void *op, const void *data, size_t n), void *op)
{
	return read_error(http_get_stream(opaque, off, len, sink, op));
}

static void xfer_close(void *opaque)
{
	http_close(opaque);
}

int net_open(const char *url, const struct net_env *e, struct src **src, struct http_obj **obj)
{
	struct http_obj *h;
	int err;

	*src = NULL;
	*obj = NULL;
	if (!e || !e->pages)
		return -ENOTSUP;
	err = http_open(url, &e->http, &h);
	if (err)
		return err;
	struct rmt_xfer x = {.get = xfer_get, .stream = xfer_stream, .close = xfer_close, .opaque = h};
	*src = rmt_src_new(&x, http_size(h), e->pages, &e->plan);
	if (!*src)
		return -ENOMEM; /* h closed by rmt_src_new */
	*obj = h;
	return 0;
}
