/* Unit test of the remote source's request planning (net/remote.c) against a fake transport
 * that records every request: which ranges a read, an advice (src_advise) and a scan ask for,
 * that a page is fetched once also when threads race for it, that a failed request leaves
 * nothing behind and the next read succeeds, that evicted pages are fetched again, that reads
 * through a window (src_window) advise the parent, and that every byte read is the object's.
 * Also the S3 resolution of net/s3.c (URLs, region, credentials from the environment and
 * from files) and http_shown's redaction.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache.h"
#include "net/http.h"
#include "net/remote.h"
#include "net/s3.h"
#include "testutil.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define MAX_LOG 4096

struct fake {
	const uint8_t *data;
	size_t size;
	pthread_mutex_t lock;
	struct {
		uint64_t off, len;
	} log[MAX_LOG];
	size_t nlog;
	atomic_int fail; /* requests that fail from now on (-1: all) */
	atomic_uint gets;
	atomic_uint_fast64_t bytes;
};

static int fake_get(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct fake *f = opaque;
	int fail = atomic_load(&f->fail);

	pthread_mutex_lock(&f->lock);
	if (f->nlog < MAX_LOG)
		f->log[f->nlog++] = (typeof(f->log[0])){off, len};
	pthread_mutex_unlock(&f->lock);
	atomic_fetch_add(&f->gets, 1);
	if (fail) {
		if (fail > 0)
			atomic_fetch_sub(&f->fail, 1);
		return -EIO;
	}
	if (off > f->size || len > f->size - off)
		return -EINVAL; /* the planner asked past the end */
	memcpy(buf, f->data + off, len);
	atomic_fetch_add(&f->bytes, len);
	usleep(200); /* a round trip: lets racing threads meet */
	return 0;
}

/* The streaming transport: the bytes in pieces of 7 KiB, a round trip between them; with
 * fail_after set, the request fails once after that many bytes. */
static atomic_long fail_after = -1;

static int fake_stream(void *opaque, uint64_t off, uint64_t len,
		       int (*sink)(void *op, const void *data, size_t n), void *op)
{
	struct fake *f = opaque;
	long limit = atomic_exchange(&fail_after, -1);

	pthread_mutex_lock(&f->lock);
	if (f->nlog < MAX_LOG)
		f->log[f->nlog++] = (typeof(f->log[0])){off, len};
	pthread_mutex_unlock(&f->lock);
	atomic_fetch_add(&f->gets, 1);
	if (off > f->size || len > f->size - off)
		return -EINVAL;
	for (uint64_t done = 0; done < len;) {
		size_t n = len - done < 7 * KIB ? (size_t)(len - done) : 7 * KIB;
		if (limit >= 0 && done + n > (uint64_t)limit)
			return -EIO;
		if (sink(op, f->data + off + done, n) != 0)
			return -ENOMEM;
		done += n;
		usleep(50);
	}
	atomic_fetch_add(&f->bytes, len);
	return 0;
}

static uint8_t *object;
static const size_t object_size = 40 * MIB + 12345; /* not a whole number of pages */

static struct src *make(struct fake *f, struct cache *c, const struct rmt_opts *o)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
	f->data = object;
	f->size = object_size;
	struct rmt_xfer x = {.get = fake_get, .stream = o && o->background ? fake_stream : NULL,
			     .opaque = f};
	return rmt_src_new(&x, object_size, c, o);
}

static bool read_ok(struct src *s, uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len);
	ssize_t n = src_pread(s, buf, len, off);
	size_t want = off >= object_size ? 0 : (object_size - off < len ? object_size - off : len);
	bool ok = n == (ssize_t)want && memcmp(buf, object + off, want) == 0;

	free(buf);
	return ok;
}

/* A read of several pages is one request of whole pages, and a re-read is none. */
static void test_one_request_per_run(void)
{
	struct cache *c = cache_new(256 * MIB);
	struct fake f;
	struct src *s = make(&f, c, NULL);

	CHECK(read_ok(s, 10 * MIB + 100, 200 * KIB));
	CHECK_EQ(f.nlog, 1);
	CHECK_EQ(f.log[0].off, 10 * MIB);	   /* page-aligned */
	CHECK_EQ(f.log[0].len, 256 * KIB); /* 100 + 200 KiB: 4 pages of 64 KiB */
	CHECK(read_ok(s, 10 * MIB + 5000, 100 * KIB));
	CHECK_EQ(f.nlog, 1);
	/* a read overlapping held pages fetches only the missing ones */
	CHECK(read_ok(s, 10 * MIB + 200 * KIB, 200 * KIB));
	CHECK_EQ(f.nlog, 2);
	CHECK_EQ(f.log[1].off, 10 * MIB + 256 * KIB);
	/* the object's last, short page */
	CHECK(read_ok(s, object_size - 10, 100));
	CHECK_EQ(f.log[f.nlog - 1].off + f.log[f.nlog - 1].len, object_size);
	src_free(s);
	cache_free(c);
}

/* An advice fetches the span in one request; the codec's small reads inside it then cost
 * nothing; a span larger than max_request is fetched in pieces of it, never more than
 * advise_max. */
static void test_advise(void)
{
	struct cache *c = cache_new(256 * MIB);
	struct fake f;
	struct rmt_opts o = {.max_request = 4 * MIB, .advise_max = 10 * MIB};
	struct src *s = make(&f, c, &o);

	src_advise(s, 3 * MIB + 7, 1536 * KIB);
	CHECK_EQ(f.nlog, 1);
	CHECK_EQ(f.log[0].off, 3 * MIB);
	CHECK_EQ(f.log[0].len, 1536 * KIB + 64 * KIB); /* the partial pages at both ends */
	for (uint64_t off = 3 * MIB + 7; off < 4 * MIB + 512 * KIB; off += 64 * KIB)
		CHECK(read_ok(s, off, 64 * KIB));
	CHECK_EQ(f.nlog, 1);
	/* large: pieces of max_request, at most advise_max */
	src_advise(s, 20 * MIB, 30 * MIB);
	CHECK_EQ(f.nlog, 1 + 3);
	uint64_t total = 0;
	for (size_t i = 1; i < f.nlog; i++) {
		CHECK(f.log[i].len <= 4 * MIB);
		total += f.log[i].len;
	}
	CHECK_EQ(total, 10 * MIB);
	/* past the end: clipped, nothing asked beyond it */
	src_advise(s, object_size - 1000, 1 * MIB);
	CHECK_EQ(f.log[f.nlog - 1].off + f.log[f.nlog - 1].len, object_size);
	struct rmt_stats st;
	rmt_get_stats(s, &st);
	CHECK_EQ(st.advised, 3);
	CHECK_EQ(st.requests, f.nlog);
	src_free(s);
	cache_free(c);
}

/* A scan reading 256 KiB at a time fetches ahead in growing runs: few requests, no byte
 * twice, and nothing asked for past the end. */
static void test_sequential_scan(void)
{
	struct cache *c = cache_new(64 * MIB); /* smaller than the object: pages are evicted */
	struct fake f;
	struct src *s = make(&f, c, NULL);
	bool ok = true;

	for (uint64_t off = 0; off < object_size; off += 256 * KIB)
		ok = ok && read_ok(s, off, 256 * KIB);
	CHECK(ok);
	/* 256 KiB, then 1, 2, 4, 8, 16, 16 MiB ... : about 7 requests for 40 MiB */
	CHECK(f.nlog <= 9);
	CHECK_EQ(atomic_load(&f.bytes), object_size);
	for (size_t i = 1; i < f.nlog; i++)
		CHECK(f.log[i].len >= f.log[i - 1].len || f.log[i].off + f.log[i].len == object_size);
	src_free(s);
	cache_free(c);
}

/* Random reads fetch what they touch and nothing ahead. */
static void test_random_reads_no_ahead(void)
{
	struct cache *c = cache_new(256 * MIB);
	struct fake f;
	struct src *s = make(&f, c, NULL);
	uint64_t offs[] = {30 * MIB, 2 * MIB, 17 * MIB + 3, 9 * MIB, 33 * MIB};

	for (size_t i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		CHECK(read_ok(s, offs[i], 10 * KIB));
	CHECK_EQ(f.nlog, 5);
	for (size_t i = 0; i < f.nlog; i++)
		CHECK_EQ(f.log[i].len, 64 * KIB);
	src_free(s);
	cache_free(c);
}

/* A failed request fails the read, leaves no page behind, and the next read fetches again
 * and gets the right bytes. */
static void test_failure_leaves_nothing(void)
{
	struct cache *c = cache_new(256 * MIB);
	struct fake f;
	struct src *s = make(&f, c, NULL);
	uint8_t buf[1000];

	atomic_store(&f.fail, 1);
	CHECK_EQ(src_pread(s, buf, sizeof(buf), 5 * MIB), -EIO);
	CHECK(read_ok(s, 5 * MIB, 1000));
	CHECK_EQ(f.nlog, 2);
	/* an advice that fails is only a hint: the read after it fetches */
	atomic_store(&f.fail, 1);
	src_advise(s, 12 * MIB, 1 * MIB);
	CHECK(read_ok(s, 12 * MIB + 10, 1000));
	src_free(s);
	cache_free(c);
}

struct racer {
	struct src *s;
	uint64_t off;
	size_t len;
	bool ok;
};

static void *race(void *opaque)
{
	struct racer *r = opaque;

	r->ok = read_ok(r->s, r->off, r->len);
	return NULL;
}

/* Threads reading overlapping ranges at once: every page is fetched exactly once. */
static void test_concurrent_once(void)
{
	struct cache *c = cache_new(256 * MIB);
	struct fake f;
	struct src *s = make(&f, c, NULL);
	pthread_t t[8];
	struct racer r[8];

	for (int i = 0; i < 8; i++) {
		r[i] = (struct racer){.s = s, .off = 20 * MIB + (uint64_t)i * 100 * KIB, .len = 700 * KIB};
		pthread_create(&t[i], NULL, race, &r[i]);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		CHECK(r[i].ok);
	}
	/* the union is [20 MiB, 20 MiB + 1400 KiB): 22 pages, each fetched once (a read that
	 * looks like a scan may fetch ahead too, never a page twice) */
	uint64_t total = 0;
	for (size_t i = 0; i < f.nlog; i++) {
		total += f.log[i].len;
		for (size_t j = 0; j < i; j++)
			CHECK(f.log[i].off + f.log[i].len <= f.log[j].off ||
			      f.log[j].off + f.log[j].len <= f.log[i].off);
	}
	CHECK(total >= 22 * 64 * KIB);
	src_free(s);
	cache_free(c);
}

/* A window over the source (a zip entry's bytes) passes advice on, shifted. */
static void test_window_advise(void)
{
	struct cache *c = cache_new(256 * MIB);
	struct fake f;
	struct src *s = make(&f, c, NULL);
	struct src *w = src_window(s, 8 * MIB, 2 * MIB);

	src_advise(w, 1 * MIB, 5 * MIB); /* clipped to the window's end */
	CHECK_EQ(f.nlog, 1);
	CHECK_EQ(f.log[0].off, 9 * MIB);
	CHECK_EQ(f.log[0].len, 1 * MIB);
	src_free(w);
	src_free(s);
	cache_free(c);
}

/* Background advice: one streamed request for the span, pages readable as they arrive; a
 * stream that breaks leaves the rest to the readers, who fetch it; closing the source waits
 * for its fetches. */
static void test_background(void)
{
	struct cache *c = cache_new(256 * MIB);
	struct fake f;
	struct rmt_fetch *fetch = rmt_fetch_new(RMT_FETCHERS);
	struct rmt_opts o = {.background = fetch};
	struct src *s = make(&f, c, &o);

	src_advise(s, 6 * MIB, 2 * MIB);
	for (uint64_t off = 6 * MIB; off < 8 * MIB; off += 100 * KIB)
		CHECK(read_ok(s, off, 8 * MIB - off < 100 * KIB ? 8 * MIB - off : 100 * KIB));
	CHECK_EQ(f.nlog, 1);
	CHECK_EQ(f.log[0].len, 2 * MIB);
	/* broken after 300 KiB: the pages after it are fetched by the reads */
	atomic_store(&fail_after, 300 * KIB);
	src_advise(s, 20 * MIB, 1 * MIB);
	bool ok = true;
	for (uint64_t off = 20 * MIB; off < 21 * MIB; off += 64 * KIB)
		ok = ok && read_ok(s, off, 64 * KIB);
	CHECK(ok);
	CHECK(f.nlog >= 2);
	/* freed while fetching: waits (ASan would see a use after free) */
	src_advise(s, 30 * MIB, 4 * MIB);
	src_free(s);
	rmt_fetch_free(fetch);
	cache_free(c);
}

static void set(const char *k, const char *v)
{
	if (v)
		setenv(k, v, 1);
	else
		unsetenv(k);
}

static void test_s3(void)
{
	struct s3_target t;
	char err[200], dir[] = "/tmp/test_remote.XXXXXX", path[300];
	const char *vars[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
			      "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ENDPOINT_URL",
			      "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "HOME"};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	/* AWS, no credentials: virtual-hosted, unsigned, us-east-1 */
	CHECK_EQ(s3_resolve("s3://bucket/dir/a b+c.tar.gz", NULL, &t, err, sizeof(err)), 0);
	CHECK(strcmp(t.url, "https://bucket.s3.us-east-1.amazonaws.com/dir/a%20b%2Bc.tar.gz") == 0);
	CHECK(t.access_key == NULL);
	s3_target_free(&t);
	/* an endpoint: path-style; credentials and region from the environment */
	set("AWS_ACCESS_KEY_ID", "AKID");
	set("AWS_SECRET_ACCESS_KEY", "SECRET");
	set("AWS_SESSION_TOKEN", "TOKEN");
	set("AWS_REGION", "eu-west-3");
	CHECK_EQ(s3_resolve("s3://b/k", "http://127.0.0.1:9000/", &t, err, sizeof(err)), 0);
	CHECK(strcmp(t.url, "http://127.0.0.1:9000/b/k") == 0);
	CHECK(strcmp(t.region, "eu-west-3") == 0);
	CHECK(t.access_key && strcmp(t.access_key, "AKID") == 0);
	CHECK(t.session_token && strcmp(t.session_token, "TOKEN") == 0);
	s3_target_free(&t);
	/* files: a profile's credentials and region */
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/.aws", dir);
	CHECK_EQ(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.aws/credentials", dir);
	FILE *fc = fopen(path, "w");
	fprintf(fc, "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n\n"
		    "[other]\n aws_access_key_id=O \naws_secret_access_key= OS\n");
	fclose(fc);
	snprintf(path, sizeof(path), "%s/.aws/config", dir);
	fc = fopen(path, "w");
	fprintf(fc, "[default]\nregion = us-west-2\n[profile other]\nregion=ap-south-1\n");
	fclose(fc);
	set("HOME", dir);
	set("AWS_ENDPOINT_URL", "https://s3.example.test");
	CHECK_EQ(s3_resolve("s3://b/k", NULL, &t, err, sizeof(err)), 0);
	CHECK(strcmp(t.url, "https://s3.example.test/b/k") == 0);
	CHECK(t.access_key && strcmp(t.access_key, "D") == 0 && strcmp(t.secret_key, "DS") == 0);
	CHECK(strcmp(t.region, "us-west-2") == 0);
	s3_target_free(&t);
	set("AWS_PROFILE", "other");
	CHECK_EQ(s3_resolve("s3://b/k", NULL, &t, err, sizeof(err)), 0);
	CHECK(t.access_key && strcmp(t.access_key, "O") == 0 && strcmp(t.secret_key, "OS") == 0);
	CHECK(strcmp(t.region, "ap-south-1") == 0);
	s3_target_free(&t);
	/* bad ones */
	CHECK_EQ(s3_resolve("s3://bucket", NULL, &t, err, sizeof(err)), -EINVAL);
	CHECK_EQ(s3_resolve("s3:///key", NULL, &t, err, sizeof(err)), -EINVAL);
	CHECK_EQ(s3_resolve("s3://b/k", "ftp://x", &t, err, sizeof(err)), -EINVAL);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	CHECK_EQ(system(path), 0);
}

static void test_shown(void)
{
	char *s = http_shown("https://user:pw@host:8443/a/b.tar.gz?X-Amz-Signature=abc#frag");

	CHECK(s && strcmp(s, "https://host:8443/a/b.tar.gz") == 0);
	free(s);
	s = http_shown("s3://bucket/key");
	CHECK(s && strcmp(s, "s3://bucket/key") == 0);
	free(s);
	CHECK(http_is_url("http://x/y") && http_is_url("s3://b/k") && !http_is_url("/tmp/x"));
}

int main(void)
{
	object = malloc(object_size);
	tu_fill(object, object_size, 7, 0);
	test_one_request_per_run();
	test_advise();
	test_sequential_scan();
	test_random_reads_no_ahead();
	test_failure_leaves_nothing();
	test_concurrent_once();
	test_window_advise();
	test_background();
	test_s3();
	test_shown();
	free(object);
	return tu_exit();
}
