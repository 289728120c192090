/* One object on an HTTP(S) server or in S3, read by range with libcurl.
 *
 * http_open() probes the object with one ranged GET: its size (Content-Range), ETag and
 * Last-Modified; a server that answers a Range request with the whole object (200) is refused
 * (-ENOTSUP).  http_get() then reads any range, on kept-alive connections (a small pool of
 * easy handles, one per concurrent request; HTTP/2 where TLS offers it), and checks that the
 * object did not change: every answer must carry the ETag seen at open (and a strong ETag is
 * sent as If-Match), else -ESTALE.
 *
 * Faults: a refused or reset connection, a timeout or stall, 429 and 5xx answers are retried
 * with exponential backoff (what arrived before a drop is kept), until timeout_ms has passed
 * since the request began: then -EIO (-ETIMEDOUT inside the log line).  403 is -EACCES, 404
 * -ENOENT, a bad TLS certificate -EACCES (certificates are always verified; $CURL_CA_BUNDLE
 * or $SSL_CERT_FILE name another CA file).  Each final failure is logged once, with the
 * object's shown name: the URL without user info or query string, so that neither a password
 * nor a presigned URL's signature ever reaches a log, an error message or the mount table.
 *
 * s3:// URLs are signed with AWS Signature Version 4 (s3.h says where the credentials come
 * from); a presigned https:// URL is plain HTTP.
 *
 * Thread-safe: any number of threads may call http_get on one object at once.  Lock: the
 * object's own, around its idle easy handles only (taken alone; no request runs under it).
 */
#ifndef TARSEEK_HTTP_H
#define TARSEEK_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_opts {
	const char *s3_endpoint; /* --s3-endpoint, or NULL ($AWS_ENDPOINT_URL) */
	unsigned timeout_ms;	 /* bound on one request, retries included (0: 30 s) */
	unsigned connections;	 /* idle connections kept per object (0: 4) */
};

struct http_obj;

struct http_stats {
	uint64_t requests; /* requests sent (retries included) */
	uint64_t bytes;	   /* body bytes received */
	uint64_t retries;
};

/* True if s is an http://, https:// or s3:// URL. */
bool http_is_url(const char *s);

/* The URL as it may be shown: scheme://host[:port]/path, no user info, no query (malloc'd). */
char *http_shown(const char *url);

/* Loads libcurl (net/curl_dl.h) and calls curl_global_init, once; call early in main (before
 * threads), and only when a URL is to be opened: a program that calls neither this nor
 * http_open never loads libcurl.  0, -ENOTSUP (libcurl cannot be loaded: logged) or -EIO
 * (curl_global_init failed); later calls say the same. */
int http_global_init(void);

/* Opens url (see above).  0, or -errno with the reason logged: -EINVAL bad URL, -ENOENT,
 * -EACCES, -ENOTSUP (no Range support, or libcurl cannot be loaded), -EIO (unreachable after
 * retries).  *out = NULL on error. */
int http_open(const char *url, const struct http_opts *o, struct http_obj **out);

/* The same server and signing for another object: url's path with suffix appended (the
 * index published beside an archive: suffix ".index.sqlite").  Downloads it whole into the
 * file path (created or truncated).  0, -ENOENT (404 or 403: nothing published), -errno. */
int http_download_beside(struct http_obj *h, const char *suffix, const char *path);

uint64_t http_size(const struct http_obj *h);
const char *http_etag(const struct http_obj *h);	  /* "" if the server sent none */
const char *http_last_modified(const struct http_obj *h); /* "" if none */
int64_t http_mtime(const struct http_obj *h);		  /* Last-Modified, or 0 */
const char *http_name(const struct http_obj *h);	  /* the shown URL */

/* Reads exactly len bytes at off into buf.  0, or -errno (above). */
int http_get(struct http_obj *h, void *buf, size_t len, uint64_t off);

/* As http_get, handing the bytes to sink in order as they arrive (consecutive pieces: after a
 * dropped connection the next piece continues where the last stopped).  The answer's ETag
 * and size are checked before the first byte goes to sink.  sink returns 0, or non-zero to
 * stop (then -ENOMEM).  0, or -errno as http_get. */
int http_get_stream(struct http_obj *h, uint64_t off, uint64_t len,
		    int (*sink)(void *op, const void *data, size_t n), void *op);

void http_get_stats(struct http_obj *h, struct http_stats *out);

void http_close(struct http_obj *h); /* NULL does nothing */

#endif
