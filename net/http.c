/* Ranged reads of one HTTP(S) or S3 object with libcurl (see http.h). */
#include "net/http.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "common/clock.h"
#include "common/log.h"
#include "net/curl_dl.h"
#include "net/http_parse.h"
#include "net/s3.h"

#define DEFAULT_TIMEOUT_MS 30000u
#define DEFAULT_CONNECTIONS 4u
#define MAX_IDLE 16u
#define CONNECT_TIMEOUT_MS 10000L
#define HEAD_BYTES ((size_t)64 << 10) /* what the probe asks for (served again from memory) */
#define STALL_SECONDS 10L /* a transfer receiving nothing this long is retried (at most) */
#define BACKOFF_FIRST_MS 100.0
#define BACKOFF_MAX_MS 2000.0
/* the payload hash of a request without a body, which S3 wants in x-amz-content-sha256 */
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct http_obj {
	char *url;  /* as used: may hold user info or a presigned query (never shown) */
	char *name; /* shown */
	struct s3_target s3;
	bool s3_url, sign;
	char *sigv4, *userpwd;
	struct curl_slist *hdrs; /* x-amz-content-sha256, x-amz-security-token */
	const char *ca_file;
	uint64_t size;
	char etag[256], lastmod[80];
	bool strong_etag;
	int64_t mtime;
	unsigned timeout_ms, max_idle;
	uint8_t head[HEAD_BYTES]; /* the object's first bytes, from the probe */
	size_t head_len;

	pthread_mutex_t lock;
	CURL *idle[MAX_IDLE];
	unsigned nidle;
	atomic_uint_fast64_t requests, bytes, retries;
	/* after a request gave up, for one more timeout: one try each (a dead server fails
	 * each read at once instead of after another timeout); a success ends it */
	_Atomic double broken_until;
};

/* ---- URLs ------------------------------------------------------------------------------- */

bool http_is_url(const char *s)
{
	return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0 ||
	       strncmp(s, "s3://", 5) == 0;
}

char *http_shown(const char *url)
{
	const char *p = strstr(url, "://"), *host, *at, *end;
	char *out;

	if (!p)
		return strdup(url);
	host = p + 3;
	end = host + strcspn(host, "/?#");
	at = memrchr(host, '@', (size_t)(end - host)); /* the last: a password may hold one */
	if (at)
		host = at + 1;
	size_t pathlen = strcspn(end, "?#");
	if (asprintf(&out, "%.*s%.*s%.*s", (int)(p + 3 - url), url, (int)(end - host), host,
		     (int)pathlen, end) < 0)
		return NULL;
	return out;
}

/* url with suffix appended to its path (before any query string). */
static char *url_beside(const char *url, const char *suffix)
{
	const char *q = url + strcspn(url, "?#");
	char *out;

	if (asprintf(&out, "%.*s%s%s", (int)(q - url), url, suffix, q) < 0)
		return NULL;
	return out;
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static int global_result = -EIO;

/* libcurl is loaded here, at the first remote source, not when the program starts */
static void global_init_once(void)
{
	global_result = http_load_curl();
	if (global_result == 0 && sym_curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		global_result = -EIO;
}

int http_global_init(void)
{
	pthread_once(&global_once, global_init_once);
	return global_result;
}

/* ---- one request -------------------------------------------------------------------------- */

struct req {
	struct http_obj *h;
	uint8_t *buf; /* the body goes here (ranged GET) ... */
	size_t want, got;
	FILE *file; /* ... or here (a whole download) */
	uint64_t file_bytes;
	/* ... or to sink, piece by piece (http_get_stream) */
	int (*sink)(void *op, const void *data, size_t n);
	void *sink_op;
	bool check_object; /* the answer must be of the object opened (its ETag and size) */
	bool checked;	   /* ... which this answer's first body bytes were */
	bool changed;	   /* ... and it was not */
	bool sink_failed;
	bool ranged;	   /* a Range was asked */
	bool not_ranged;   /* the server answered the whole object */
	bool too_long;	   /* more body than asked */
	struct http_answer a;
};

static size_t on_header(char *line, size_t size, size_t n, void *opaque)
{
	struct req *r = opaque;

	http_answer_line(&r->a, line, size * n);
	return size * n;
}

static size_t on_body(char *data, size_t size, size_t n, void *opaque)
{
	struct req *r = opaque;
	size_t len = size * n;

	if (r->a.status < 200 || r->a.status >= 300)
		return len; /* an error page: dropped */
	if (r->file) {
		if (fwrite(data, 1, len, r->file) != len)
			return 0;
		r->file_bytes += len;
		return len;
	}
	if (r->ranged && r->a.status == 200) {
		r->not_ranged = true;
		return 0; /* the whole object is coming: stop now */
	}
	if (len > r->want - r->got) {
		r->too_long = true;
		return 0;
	}
	if (r->check_object && !r->checked) { /* before any byte is used */
		const struct http_obj *h = r->h;
		r->checked = true;
		r->changed = (*h->etag && strcmp(r->a.etag, h->etag) != 0) ||
			     (r->a.have_crange && !r->a.total_unknown && r->a.crange_total != h->size);
		if (r->changed)
			return 0;
	}
	if (r->sink) {
		if (r->sink(r->sink_op, data, len) != 0) {
			r->sink_failed = true;
			return 0;
		}
	} else {
		memcpy(r->buf + r->got, data, len);
	}
	r->got += len;
	return len;
}

static CURL *take_handle(struct http_obj *h)
{
	CURL *c = NULL;

	pthread_mutex_lock(&h->lock);
	if (h->nidle)
		c = h->idle[--h->nidle];
	pthread_mutex_unlock(&h->lock);
	if (c)
		return c;
	c = sym_curl_easy_init();
	if (!c)
		return NULL;
	sym_curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	sym_curl_easy_setopt(c, CURLOPT_USERAGENT, "tarseek/" TARSEEK_VERSION);
	sym_curl_easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	sym_curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	sym_curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
	sym_curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	sym_curl_easy_setopt(c, CURLOPT_MAXREDIRS, 3L);
	sym_curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	sym_curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	sym_curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	sym_curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (h->ca_file)
		sym_curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
	sym_curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	sym_curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	/* a stalled transfer is cut early enough to be retried within the timeout */
	long stall = (long)h->timeout_ms / 3000 < STALL_SECONDS ? (long)h->timeout_ms / 3000
								  : STALL_SECONDS;
	sym_curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall < 1 ? 1L : stall);
	sym_curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	sym_curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	if (h->sign) {
		sym_curl_easy_setopt(c, CURLOPT_AWS_SIGV4, h->sigv4);
		sym_curl_easy_setopt(c, CURLOPT_USERPWD, h->userpwd);
	}
	return c;
}

static void give_handle(struct http_obj *h, CURL *c, bool healthy)
{
	if (!c)
		return;
	pthread_mutex_lock(&h->lock);
	if (healthy && h->nidle < h->max_idle) {
		h->idle[h->nidle++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&h->lock);
	if (c)
		sym_curl_easy_cleanup(c);
}

/* What one attempt came to. */
enum outcome { DONE, RETRY, FAIL };

static bool transient_curl(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

/* One GET of url (a range [off, off + r->want - r->got) when ranged); *err and why on FAIL,
 * why on RETRY. */
static enum outcome attempt(struct http_obj *h, CURL *c, const char *url, struct req *r,
			    uint64_t off, double deadline, const char *if_match, int *err,
			    char *why, size_t whylen)
{
	char range[64], errbuf[CURL_ERROR_SIZE] = "", ifm[300];
	struct curl_slist *hdrs = NULL;
	double left = deadline - mono_now();
	CURLcode rc;

	if (left < 0.001)
		left = 0.001;
	for (struct curl_slist *s = h->hdrs; s; s = s->next)
		if (!(hdrs = sym_curl_slist_append(hdrs, s->data)))
			goto nomem;
	if (if_match && *if_match) {
		snprintf(ifm, sizeof(ifm), "If-Match: %s", if_match);
		if (!(hdrs = sym_curl_slist_append(hdrs, ifm)))
			goto nomem;
	}
	if (r->file) { /* a whole download starts over */
		if (fflush(r->file) != 0 || ftruncate(fileno(r->file), 0) != 0)
			goto nomem;
		rewind(r->file);
		r->file_bytes = 0;
	}
	http_answer_reset(&r->a);
	r->checked = r->changed = r->sink_failed = false;
	r->not_ranged = r->too_long = false;
	sym_curl_easy_setopt(c, CURLOPT_URL, url);
	sym_curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	sym_curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	sym_curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	sym_curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	sym_curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(left * 1000) + 1);
	if (r->ranged) {
		snprintf(range, sizeof(range), "%" PRIu64 "-%" PRIu64, off,
			 off + (uint64_t)(r->want - r->got) - 1);
		sym_curl_easy_setopt(c, CURLOPT_RANGE, range);
	} else {
		sym_curl_easy_setopt(c, CURLOPT_RANGE, NULL);
	}
	atomic_fetch_add(&h->requests, 1);
	size_t before = r->got;
	uint64_t fbefore = r->file_bytes;
	rc = sym_curl_easy_perform(c);
	atomic_fetch_add(&h->bytes, (r->got - before) + (r->file_bytes - fbefore));
	sym_curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	sym_curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
	sym_curl_slist_free_all(hdrs);

	if (r->changed) {
		snprintf(why, whylen, "the object changed on the server (ETag %.64s, was %.64s; size %"
			 PRIu64 ", was %" PRIu64 ")", *r->a.etag ? r->a.etag : "none", h->etag,
			 r->a.have_crange ? r->a.crange_total : h->size, h->size);
		*err = -ESTALE;
		return FAIL;
	}
	if (r->sink_failed) {
		snprintf(why, whylen, "cannot keep what was received");
		*err = -ENOMEM;
		return FAIL;
	}
	if (r->not_ranged) {
		snprintf(why, whylen, "the server does not honour Range requests (it answered "
			 "the whole object)");
		*err = -ENOTSUP;
		return FAIL;
	}
	if (r->too_long) {
		snprintf(why, whylen, "the server sent more than the range asked for");
		*err = -EIO;
		return FAIL;
	}
	if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE) {
		snprintf(why, whylen, "TLS certificate not trusted: %s", *errbuf ? errbuf :
			 sym_curl_easy_strerror(rc));
		*err = -EACCES;
		return FAIL;
	}
	if (rc != CURLE_OK && rc != CURLE_WRITE_ERROR) {
		snprintf(why, whylen, "%s", *errbuf ? errbuf : sym_curl_easy_strerror(rc));
		if (transient_curl(rc))
			return RETRY;
		*err = -EIO;
		return FAIL;
	}
	if (rc == CURLE_WRITE_ERROR && r->a.status >= 200 && r->a.status < 300) {
		snprintf(why, whylen, "cannot store what was received");
		*err = -EIO;
		return FAIL;
	}
	switch (r->a.status) {
	case 200:
	case 206:
		break;
	case 304:
	case 412:
		snprintf(why, whylen, "the object changed on the server (If-Match failed)");
		*err = -ESTALE;
		return FAIL;
	case 401:
	case 403:
		snprintf(why, whylen, "access denied (HTTP %ld)", r->a.status);
		*err = -EACCES;
		return FAIL;
	case 404:
	case 410:
		snprintf(why, whylen, "not found (HTTP %ld)", r->a.status);
		*err = -ENOENT;
		return FAIL;
	case 416:
		if (r->ranged && r->a.have_crange && r->a.crange_total == 0)
			return DONE; /* an empty object (the probe) */
		snprintf(why, whylen, "range not satisfiable (HTTP 416)");
		*err = -EIO;
		return FAIL;
	case 408:
	case 425:
	case 429:
		snprintf(why, whylen, "HTTP %ld", r->a.status);
		return RETRY;
	default:
		snprintf(why, whylen, "HTTP %ld", r->a.status);
		if (r->a.status >= 500)
			return RETRY;
		*err = -EIO;
		return FAIL;
	}
	if (r->ranged && r->a.status == 206 && r->a.have_crange && r->a.crange_first != off) {
		snprintf(why, whylen, "the server sent another range than asked for");
		*err = -EIO;
		return FAIL;
	}
	if (r->ranged && r->a.status == 206 && !r->a.have_crange) {
		snprintf(why, whylen, "a partial answer without Content-Range");
		*err = -EIO;
		return FAIL;
	}
	return DONE;
nomem:
	sym_curl_slist_free_all(hdrs);
	snprintf(why, whylen, "out of memory");
	*err = -ENOMEM;
	return FAIL;
}

/* Runs a request to completion: retries with backoff until the deadline, resuming a ranged
 * body where a dropped connection left it.  0 or -errno (logged as "what: why"). */
static int perform(struct http_obj *h, const char *url, struct req *r, uint64_t off,
		   const char *if_match, const char *what)
{
	double start = mono_now(), deadline = start + h->timeout_ms / 1000.0;
	bool quick = start < atomic_load(&h->broken_until);
	double backoff = BACKOFF_FIRST_MS;
	char why[CURL_ERROR_SIZE + 128] = "";
	unsigned tries = 0;
	int err = -EIO;
	CURL *c = NULL;

	for (;;) {
		enum outcome out;
		c = c ? c : take_handle(h);
		if (!c) {
			tfs_log(TFS_LOG_ERR, "%s: %s: out of memory", h->name, what);
			return -ENOMEM;
		}
		tries++;
		size_t got = r->got;
		out = attempt(h, c, url, r, off + r->got, deadline, if_match, &err, why, sizeof(why));
		/* short is complete only where the object ends (the probe asks past it) */
		bool at_end = r->a.have_crange && !r->a.total_unknown &&
			      r->a.crange_last + 1 == r->a.crange_total &&
			      off + r->got == r->a.crange_total;
		if (out == DONE && r->ranged && r->got < r->want && r->a.status != 416 && !at_end) {
			snprintf(why, sizeof(why), "the answer ended %zu bytes early",
				 r->want - r->got);
			out = RETRY;
		}
		if (out == DONE) {
			give_handle(h, c, true);
			atomic_store(&h->broken_until, 0.0);
			if (tries > 1)
				tfs_log(TFS_LOG_NOTICE, "%s: %s: done after %u tries", h->name, what,
					tries);
			return 0;
		}
		/* a connection in doubt is not reused */
		give_handle(h, c, out == FAIL && r->a.status != 0);
		c = NULL;
		if (out == FAIL) {
			if (err == -ENOENT && r->file)
				return err; /* nothing published beside: not an error */
			tfs_log(TFS_LOG_ERR, "%s: %s: %s", h->name, what, why);
			return err;
		}
		double now = mono_now(), wait = backoff / 1000.0;
		if (r->a.retry_after >= 0 && r->a.retry_after < 60)
			wait = (double)r->a.retry_after > wait ? (double)r->a.retry_after : wait;
		if (r->got > got)
			backoff = BACKOFF_FIRST_MS; /* progress: start the backoff over */
		if (quick) {
			tfs_log(TFS_LOG_ERR, "%s: %s: %s (not retried: the server has been failing)",
				h->name, what, why);
			return -EIO;
		}
		if (now + wait >= deadline) {
			tfs_log(TFS_LOG_ERR, "%s: %s: gave up after %u tries in %.1f s (the limit is "
				"--remote-timeout): %s", h->name, what, tries, now - start, why);
			atomic_store(&h->broken_until, mono_now() + h->timeout_ms / 1000.0);
			return -EIO;
		}
		TFS_DEBUG("%s: %s: %s; retrying in %.2f s", h->name, what, why, wait);
		atomic_fetch_add(&h->retries, 1);
		struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
}

/* ---- the object ------------------------------------------------------------------------------ */

/* A ranged GET of the object into buf or a sink. */
static int get_range(struct http_obj *h, void *buf, int (*sink)(void *, const void *, size_t),
		     void *op, size_t len, uint64_t off)
{
	struct req r = {.h = h, .buf = buf, .sink = sink, .sink_op = op, .want = len,
			.ranged = true, .check_object = true, .a.retry_after = -1};
	char what[96];

	if (len == 0)
		return 0;
	if (off > h->size || len > h->size - off)
		return -EIO;
	if (off + len <= h->head_len) {
		if (sink)
			return sink(op, h->head + off, len);
		memcpy(buf, h->head + off, len);
		return 0;
	}
	snprintf(what, sizeof(what), "reading %zu bytes at %" PRIu64, len, off);
	return perform(h, h->url, &r, off, h->strong_etag ? h->etag : NULL, what);
}

int http_get(struct http_obj *h, void *buf, size_t len, uint64_t off)
{
	return get_range(h, buf, NULL, NULL, len, off);
}

int http_get_stream(struct http_obj *h, uint64_t off, uint64_t len,
		    int (*sink)(void *op, const void *data, size_t n), void *op)
{
	return get_range(h, NULL, sink, op, (size_t)len, off);
}

int http_download_beside(struct http_obj *h, const char *suffix, const char *path)
{
	struct req r = {.h = h, .a.retry_after = -1};
	char *url = url_beside(h->url, suffix), what[64];
	int err;

	if (!url)
		return -ENOMEM;
	r.file = fopen(path, "wb");
	if (!r.file) {
		err = -errno;
		goto out;
	}
	snprintf(what, sizeof(what), "fetching its %s", suffix);
	err = perform(h, url, &r, 0, NULL, what);
	if (fclose(r.file) != 0 && !err)
		err = -EIO;
	if (err)
		unlink(path);
out:
	free(url);
	return err;
}

static void set_last_modified(struct http_obj *h, const char *lm)
{
	snprintf(h->lastmod, sizeof(h->lastmod), "%s", lm);
	time_t t = *lm ? sym_curl_getdate(lm, NULL) : -1;
	h->mtime = t < 0 ? 0 : (int64_t)t;
}

/* The first request: size, ETag, Last-Modified, and proof that ranges work. */
static int probe(struct http_obj *h)
{
	struct req r = {.h = h, .buf = h->head, .want = HEAD_BYTES, .ranged = true,
			.a.retry_after = -1};
	int err = perform(h, h->url, &r, 0, NULL, "opening");

	if (err) {
		return err;
	} else if (r.a.status == 416) {
		h->size = 0; /* an empty object */
	} else if (r.a.status != 206 || !r.a.have_crange || r.a.total_unknown) {
		tfs_log(TFS_LOG_ERR, "%s: the server does not honour Range requests (HTTP %ld%s): "
			"tarseek needs them", h->name, r.a.status, r.a.have_crange ? "" :
			", no Content-Range");
		return -ENOTSUP;
	} else {
		h->size = r.a.crange_total;
		h->head_len = r.got;
	}
	snprintf(h->etag, sizeof(h->etag), "%s", r.a.etag);
	h->strong_etag = *h->etag == '"';
	set_last_modified(h, r.a.lastmod);
	return 0;
}

int http_open(const char *url, const struct http_opts *o, struct http_obj **out)
{
	struct http_obj *h = calloc(1, sizeof(*h));
	char err_s3[200];
	int err = -ENOMEM;

	*out = NULL;
	if (!h)
		return -ENOMEM;
	pthread_mutex_init(&h->lock, NULL);
	h->timeout_ms = o && o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	h->max_idle = o && o->connections ? o->connections : DEFAULT_CONNECTIONS;
	if (h->max_idle > MAX_IDLE)
		h->max_idle = MAX_IDLE;
	h->ca_file = getenv("CURL_CA_BUNDLE") && *getenv("CURL_CA_BUNDLE") ? getenv("CURL_CA_BUNDLE")
		     : getenv("SSL_CERT_FILE") && *getenv("SSL_CERT_FILE") ? getenv("SSL_CERT_FILE")
									    : NULL;
	h->name = http_shown(url);
	if (!h->name)
		goto fail;
	err = http_global_init();
	if (err)
		goto fail;
	err = -ENOMEM;
	if (strncmp(url, "s3://", 5) == 0) {
		h->s3_url = true;
		err = s3_resolve(url, o ? o->s3_endpoint : NULL, &h->s3, err_s3, sizeof(err_s3));
		if (err) {
			tfs_log(TFS_LOG_ERR, "%s: %s", h->name, err_s3);
			goto fail;
		}
		err = -ENOMEM;
		h->url = strdup(h->s3.url);
		if (!h->url)
			goto fail;
		if (!(h->hdrs = sym_curl_slist_append(NULL, "x-amz-content-sha256: " EMPTY_SHA256)))
			goto fail;
		if (h->s3.access_key) {
			char *tok = NULL;
			h->sign = true;
			if (asprintf(&h->sigv4, "aws:amz:%s:s3", h->s3.region) < 0) {
				h->sigv4 = NULL;
				goto fail;
			}
			if (asprintf(&h->userpwd, "%s:%s", h->s3.access_key, h->s3.secret_key) < 0) {
				h->userpwd = NULL;
				goto fail;
			}
			if (h->s3.session_token &&
			    (asprintf(&tok, "x-amz-security-token: %s", h->s3.session_token) < 0 ||
			     !sym_curl_slist_append(h->hdrs, tok))) {
				free(tok);
				goto fail;
			}
			free(tok);
		} else {
			tfs_log(TFS_LOG_NOTICE, "%s: no AWS credentials found: unsigned requests (a "
				"public bucket)", h->name);
		}
	} else {
		h->url = strdup(url);
		if (!h->url)
			goto fail;
	}
	err = probe(h);
	if (err)
		goto fail;
	*out = h;
	return 0;
fail:
	http_close(h);
	return err;
}

uint64_t http_size(const struct http_obj *h)
{
	return h->size;
}

const char *http_etag(const struct http_obj *h)
{
	return h->etag;
}

const char *http_last_modified(const struct http_obj *h)
{
	return h->lastmod;
}

int64_t http_mtime(const struct http_obj *h)
{
	return h->mtime;
}

const char *http_name(const struct http_obj *h)
{
	return h->name;
}

void http_get_stats(struct http_obj *h, struct http_stats *out)
{
	out->requests = atomic_load(&h->requests);
	out->bytes = atomic_load(&h->bytes);
	out->retries = atomic_load(&h->retries);
}

void http_close(struct http_obj *h)
{
	if (!h)
		return;
	for (unsigned i = 0; i < h->nidle; i++)
		sym_curl_easy_cleanup(h->idle[i]);
	/* the session token: freed, not wiped (libcurl's copy); no list if libcurl is not loaded */
	if (h->hdrs)
		sym_curl_slist_free_all(h->hdrs);
	s3_secret_free(h->userpwd);
	free(h->sigv4);
	s3_target_free(&h->s3);
	s3_secret_free(h->url);
	free(h->name);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
