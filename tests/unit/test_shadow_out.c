/* Unit tests of the shadow's file writer (shadow/shadow_out.h) and of which shadows are stored
 * uncompressed (shadow_store_only): every byte appended, in pieces of every size around the
 * direct-write step, reads back the same, on a file system that takes O_DIRECT (/var/tmp)
 * and on one that does not (/dev/shm, tmpfs); a file that cannot be made is an error. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shadow/shadow.h"
#include "shadow/shadow_out.h"
#include "testutil.h"

/* Appends len bytes of data in pieces (sizes from sizes[], cycled) and checks the file. */
static void roundtrip(const char *path, const uint8_t *data, size_t len, const size_t *sizes,
		      size_t nsizes)
{
	struct shadow_out *o = NULL;
	size_t at = 0, k = 0;

	CHECK_EQ(so_open(path, &o), 0);
	if (!o)
		return;
	while (at < len) {
		size_t n = sizes[k++ % nsizes];
		if (n > len - at)
			n = len - at;
		CHECK_EQ(so_write(o, data + at, n), 0);
		at += n;
		CHECK_EQ(so_size(o), at);
	}
	CHECK_EQ(so_close(o), 0);
	size_t got = 0;
	uint8_t *back = tu_read_file(path, &got);
	CHECK_EQ(got, len);
	CHECK(len == 0 || (back && memcmp(back, data, len) == 0));
	free(back);
	unlink(path);
}

static void test_pieces(const char *dir)
{
	static const size_t lens[] = {0,
				      1,
				      4095,
				      4096,
				      SO_STEP - 1,
				      SO_STEP,
				      SO_STEP + 1,
				      3 * SO_STEP + 4096,
				      5 * SO_STEP + 12345};
	static const size_t one[] = {1 << 20}, odd[] = {1, 3, 131075, 4096, 700001, 13},
			    big[] = {3 * SO_STEP + 7};
	size_t max = 5 * SO_STEP + 12345;
	uint8_t *data = malloc(max);
	char path[256];

	if (!data)
		return;
	tu_fill(data, max, 7, 0);
	snprintf(path, sizeof(path), "%s/test_shadow_out.%d", dir, (int)getpid());
	for (size_t i = 0; i < sizeof(lens) / sizeof(*lens); i++) {
		roundtrip(path, data, lens[i], one, 1);
		roundtrip(path, data, lens[i], odd, sizeof(odd) / sizeof(*odd));
		roundtrip(path, data, lens[i], big, 1);
	}
	/* closed without what is left: the file has only whole steps, and is the caller's */
	struct shadow_out *o = NULL;
	CHECK_EQ(so_open(path, &o), 0);
	if (o) {
		CHECK_EQ(so_write(o, data, SO_STEP + 10), 0);
		so_abort(o);
		struct stat st;
		CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size <= SO_STEP);
	}
	unlink(path);
	free(data);
}

static void test_errors(void)
{
	struct shadow_out *o = (struct shadow_out *)1;

	CHECK_EQ(so_open("/nonexistent-dir/x.shadow.zst", &o), -ENOENT);
	CHECK(o == NULL);
	so_abort(NULL);
}

static void test_store_only(void)
{
	uint64_t big = SHADOW_STORE_MIN, small = SHADOW_STORE_MIN - 1;

	/* decoders faster than the shadow's compression, on large streams */
	CHECK(shadow_store_only("gzip", big, SHADOW_STORE_MIN));
	CHECK(shadow_store_only("deflate", big, SHADOW_STORE_MIN));
	CHECK(shadow_store_only("zstd", big, SHADOW_STORE_MIN));
	CHECK(shadow_store_only("lz4", big, SHADOW_STORE_MIN));
	CHECK(shadow_store_only("lzo", big, SHADOW_STORE_MIN));
	/* small streams, and slow decoders, have their shadow compressed */
	CHECK(!shadow_store_only("gzip", small, SHADOW_STORE_MIN));
	CHECK(!shadow_store_only("xz", big, SHADOW_STORE_MIN));
	CHECK(!shadow_store_only("bzip2", big, SHADOW_STORE_MIN));
	CHECK(!shadow_store_only("lzip", big, SHADOW_STORE_MIN));
	CHECK(!shadow_store_only(NULL, big, SHADOW_STORE_MIN));
}

int main(void)
{
	test_pieces("/var/tmp"); /* O_DIRECT */
	if (access("/dev/shm", W_OK) == 0)
		test_pieces("/dev/shm"); /* tmpfs: no O_DIRECT, all through the page cache */
	test_errors();
	test_store_only();
	return tu_exit();
}
