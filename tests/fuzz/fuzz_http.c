/* libFuzzer harness: what a server or a user's AWS files feed the remote source (net/).
 *
 *  1. The input as a server's header block, split at line feeds, into http_answer_line
 *     (net/http_parse.h): every field stays NUL-terminated and bounded, a status is 0..999,
 *     a Content-Range it keeps has FIRST <= LAST (and LAST < TOTAL when TOTAL is known).
 *  2. The input as ~/.aws/credentials and ~/.aws/config (through a memfd): s3_resolve returns
 *     0 with a URL, a region and both keys or neither, or -EINVAL / -ENOMEM; never a key
 *     holding a line feed.
 *  3. The input's first line as a URL for http_shown: no '@' before the host, no '?' or '#'.
 *
 *   build-fuzz/tests/fuzz/fuzz_http CORPUS_DIR
 */
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "net/http.h"
#include "net/http_parse.h"
#include "net/s3.h"

static void check_answer(const struct http_answer *a)
{
	FZ_ASSERT(a->status >= 0 && a->status < 1000);
	FZ_ASSERT(memchr(a->etag, 0, sizeof(a->etag)) != NULL);
	FZ_ASSERT(memchr(a->lastmod, 0, sizeof(a->lastmod)) != NULL);
	FZ_ASSERT(a->retry_after >= -1 && a->retry_after < 86400);
	if (a->have_crange) {
		FZ_ASSERT(a->crange_first <= a->crange_last);
		FZ_ASSERT(a->total_unknown || a->crange_total == 0 || a->crange_last < a->crange_total);
	}
}

static int aws_files(const uint8_t *data, size_t size, char *path, size_t plen)
{
	int fd = memfd_create("aws", 0);

	if (fd < 0)
		return -1;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	snprintf(path, plen, "/proc/self/fd/%d", fd);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_answer a;
	const char *p = (const char *)data, *end = p + size;
	static bool init;

	if (!init) {
		fz_init_log();
		init = true;
	}
	http_answer_reset(&a);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		http_answer_line(&a, p, n);
		check_answer(&a);
		p += n;
	}

	char path[64];
	int fd = aws_files(data, size, path, sizeof(path));
	if (fd >= 0) {
		struct s3_target t;
		char err[200];
		setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
		setenv("AWS_CONFIG_FILE", path, 1);
		unsetenv("AWS_ACCESS_KEY_ID");
		unsetenv("AWS_REGION");
		unsetenv("AWS_DEFAULT_REGION");
		setenv("AWS_PROFILE", size && data[0] & 1 ? "default" : "x", 1);
		int r = s3_resolve("s3://bucket/some/key", size > 1 && data[1] & 1 ? "http://h:1" : NULL,
				   &t, err, sizeof(err));
		FZ_ASSERT(r == 0 || r == -EINVAL || r == -ENOMEM);
		if (r == 0) {
			FZ_ASSERT(t.url && t.region);
			FZ_ASSERT(!t.access_key == !t.secret_key);
			FZ_ASSERT(!t.access_key || !strchr(t.access_key, '\n'));
			FZ_ASSERT(!t.secret_key || !strchr(t.secret_key, '\n'));
			FZ_ASSERT(!strchr(t.region, '\n'));
		}
		s3_target_free(&t);
		close(fd);
	}

	const char *nl = memchr(data, '\n', size);
	char *url = strndup((const char *)data, nl ? (size_t)(nl - (const char *)data) : size);
	char *shown = url ? http_shown(url) : NULL;
	if (shown) {
		const char *host = strstr(shown, "://");
		if (host)
			FZ_ASSERT(!strpbrk(host, "?#") && !memchr(host, '@', strcspn(host + 3, "/") + 3));
	}
	free(shown);
	free(url);
	return 0;
}
