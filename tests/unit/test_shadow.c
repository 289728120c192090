/* Unit tests of the shadow (shadow/): frames cut where the index's segments allow, written in
 * zstd's seekable format (zstd -d reads it back), read through the reader with the index's
 * segment CRCs, and refused when damaged, cut short or another index's. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "cache/cache.h"
#include "codecs/zstd/zstd_seekable.h"
#include "common/log.h"
#include "seek/reader.h"
#include "seek/segment.h"
#include "shadow/shadow.h"
#include "testutil.h"

#include <zstd.h>

static char dir[] = "/tmp/test_shadow.XXXXXX";

/* A stream of the test: its bytes and its chunks (checkpoint offsets). */
struct tstream {
	uint64_t id;
	uint8_t *data;
	size_t len;
	uint64_t *chunks; /* starts, the first 0 */
	size_t nchunks;
	unsigned shift;
};

/* The index's segment CRCs of a stream: per chunk, per segment (segment.h's rule). */
static uint32_t *seg_crcs(const struct tstream *t, size_t *n)
{
	uint32_t *c = malloc(sizeof(*c) * (t->len / 1024 + 64));
	*n = 0;
	for (size_t i = 0; i < t->nchunks; i++) {
		uint64_t s = t->chunks[i], e = i + 1 < t->nchunks ? t->chunks[i + 1] : t->len;
		for (uint64_t k = 0; k < seg_count(e - s, t->shift); k++)
			c[(*n)++] = (uint32_t)crc32(0, t->data + s + (k << t->shift),
						    (uInt)seg_len(e - s, k, t->shift));
	}
	return c;
}

/* Feeds one stream's next piece (of varying size, cut at its chunks) to its handle; false
 * once it has ended. */
struct feed {
	struct tstream *t;
	struct shadow_stream *h;
	size_t pos, ci;
	uint32_t step;
};

static bool feed_one(struct feed *f)
{
	struct tstream *t = f->t;

	if (f->pos == t->len) {
		if (f->h)
			shadow_stream_end(f->h, t->len);
		f->h = NULL;
		return false;
	}
	if (f->ci < t->nchunks && t->chunks[f->ci] == f->pos) {
		shadow_chunk(f->h);
		f->ci++;
	}
	size_t m = (f->step = f->step * 1103515245u + 12345u) % 100000 + 1;
	if (f->ci < t->nchunks && t->chunks[f->ci] - f->pos < m)
		m = t->chunks[f->ci] - f->pos;
	if (m > t->len - f->pos)
		m = t->len - f->pos;
	shadow_write(f->h, t->data + f->pos, m);
	f->pos += m;
	return true;
}

/* Writes the streams in pieces of varying size, as the indexing pass hands them over: one
 * after the other, or all at once with their pieces interleaved (as a container's streams
 * decoded in parallel). */
static int write_shadow(const char *path, struct tstream *ts, size_t n, unsigned threads,
			size_t frame, uint64_t max_bytes, struct shadow_wstats *st, bool interleave)
{
	struct shadow_writer *w;
	struct shadow_wopts o = {.id = 42, .threads = threads,
				 .frame = frame, .max_bytes = max_bytes, .name = "test"};
	struct feed f[8] = {{0}};
	int err = shadow_writer_new(path, &o, &w);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++)
		f[i] = (struct feed){.t = &ts[i], .step = (uint32_t)i + 1};
	if (interleave) {
		for (size_t i = 0; i < n; i++)
			f[i].h = shadow_stream_begin(w, ts[i].id, ts[i].shift);
		for (bool more = true; more;) {
			more = false;
			for (size_t i = 0; i < n; i++)
				more |= feed_one(&f[i]);
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			f[i].h = shadow_stream_begin(w, ts[i].id, ts[i].shift);
			while (feed_one(&f[i]))
				;
		}
	}
	err = shadow_writer_finish(w, "fp-1");
	if (st) /* whole once finished: frames are stored or compressed until then */
		shadow_writer_stats(w, st);
	shadow_writer_free(w);
	return err;
}

/* Reads every stream back through a reader over the shadow, at random offsets. */
static void check_read(const char *path, struct tstream *ts, size_t n)
{
	struct shadow *sh = NULL;
	struct cache *cache = cache_new(64u << 20);

	CHECK_EQ(shadow_open(path, 42, "fp-1", &sh), 0);
	if (!sh)
		return;
	CHECK_EQ(shadow_nstreams(sh), n);
	for (size_t i = 0; i < n; i++) {
		struct tstream *t = &ts[i];
		struct codec_ckpt *ck = NULL;
		size_t nck = 0, ncrc = 0;
		CHECK_EQ(shadow_stream_ckpts(sh, t->id, t->len + 1, t->shift, &ck, &nck), -EIO);
		CHECK_EQ(shadow_stream_ckpts(sh, t->id, t->len, t->shift, &ck, &nck), 0);
		/* frames never span a chunk, and hold whole segments */
		for (size_t k = 0, c = 0; k < nck; k++) {
			while (c + 1 < t->nchunks && t->chunks[c + 1] <= ck[k].uoff)
				c++;
			uint64_t cend = c + 1 < t->nchunks ? t->chunks[c + 1] : t->len;
			CHECK(ck[k].uoff + ck[k].ulen <= cend);
			uint64_t rel = ck[k].uoff - t->chunks[c];
			CHECK(rel % ((uint64_t)1 << t->shift) == 0);
		}
		uint32_t *crcs = seg_crcs(t, &ncrc);
		struct creader_params p = {.codec = &codec_zstd, .in = shadow_src(sh), .ckpts = ck,
					   .nckpts = nck, .crcs = crcs, .seg_shift = t->shift,
					   .usize = t->len, .cache = cache};
		struct creader *r = NULL;
		CHECK_EQ(creader_new(&p, &r), 0);
		uint8_t *buf = malloc(300000);
		for (int k = 0; r && k < 200; k++) {
			uint64_t off = (uint64_t)rand() % t->len;
			size_t len = (size_t)rand() % 300000 + 1;
			if (len > t->len - off)
				len = t->len - off;
			ssize_t got = creader_read(r, buf, len, off);
			CHECK_EQ(got, (ssize_t)len);
			CHECK(got == (ssize_t)len && memcmp(buf, t->data + off, len) == 0);
		}
		free(buf);
		creader_free(r);
		free(crcs);
		free(ck);
	}
	shadow_close(sh);
	cache_free(cache);
}

static void make_stream(struct tstream *t, uint64_t id, size_t len, unsigned shift,
			uint64_t spacing, uint32_t seed)
{
	t->id = id;
	t->len = len;
	t->shift = shift;
	t->data = malloc(len);
	tu_fill(t->data, len, seed, 1);
	t->chunks = malloc(sizeof(*t->chunks) * (len / spacing + 2));
	t->nchunks = 0;
	for (uint64_t c = 0; c < len; c += spacing + (c % 7) * 1000)
		t->chunks[t->nchunks++] = c;
}

static void test_roundtrip(void)
{
	struct tstream ts[3];
	char path[256], cmd[512];
	struct shadow_wstats st;

	make_stream(&ts[0], 7, 5u << 20, SEG_SHIFT_FINE, 256u << 10, 1);   /* gzip-like chunks */
	make_stream(&ts[1], 3, 9u << 20, SEG_SHIFT, 4u << 20, 2);	       /* 1 MiB segments */
	make_stream(&ts[2], 11, 3u << 20, SEG_SHIFT_FINE, 3u << 20, 3); /* one chunk */
	snprintf(path, sizeof(path), "%s/a.shadow.zst", dir);
	CHECK_EQ(write_shadow(path, ts, 3, 2, 128u << 10, 0, &st, false), 0);
	CHECK_EQ(st.streams, 3);
	CHECK_EQ(st.decoded, (5u + 9 + 3) << 20);
	check_read(path, ts, 3);

	/* zstd -d gives the streams one after the other */
	if (tu_have("zstd")) {
		size_t n = 0;
		snprintf(cmd, sizeof(cmd), "zstd -q -d -c %s", path);
		uint8_t *out = tu_pipe(cmd, NULL, 0, &n);
		CHECK_EQ(n, (5u + 9 + 3) << 20);
		CHECK(out && memcmp(out, ts[0].data, ts[0].len) == 0 &&
		      memcmp(out + ts[0].len, ts[1].data, ts[1].len) == 0 &&
		      memcmp(out + ts[0].len + ts[1].len, ts[2].data, ts[2].len) == 0);
		free(out);
	}

	/* no job: every frame stored, read the same */
	CHECK_EQ(write_shadow(path, ts, 3, 0, 64u << 10, 0, &st, false), 0);
	CHECK_EQ(st.stored_frames, st.frames);
	check_read(path, ts, 3);

	/* streams written at once: their frames interleave, each stream's read back whole */
	CHECK_EQ(write_shadow(path, ts, 3, 2, 64u << 10, 0, &st, true), 0);
	CHECK_EQ(st.streams, 3);
	check_read(path, ts, 3);

	/* another index, another archive: refused as stale; none there: ENOENT */
	struct shadow *sh = NULL;
	CHECK_EQ(shadow_open(path, 43, "fp-1", &sh), -ESTALE);
	CHECK_EQ(shadow_open(path, 42, "fp-2", &sh), -ESTALE);
	snprintf(cmd, sizeof(cmd), "%s/none.shadow.zst", dir);
	CHECK_EQ(shadow_open(cmd, 42, "fp-1", &sh), -ENOENT);
	CHECK(sh == NULL);

	/* the size limit: no shadow, no file left */
	unlink(path);
	CHECK(write_shadow(path, ts, 3, 2, 128u << 10, 1u << 20, NULL, false) < 0);
	struct stat sb;
	CHECK(stat(path, &sb) < 0);
	for (int i = 0; i < 3; i++) {
		free(ts[i].data);
		free(ts[i].chunks);
	}
}

/* Damage: a shadow cut short is refused; a flipped byte in a frame fails the read (EIO, never
 * other bytes); a flipped byte in the map is refused. */
static void test_damage(void)
{
	struct tstream t;
	char path[256];
	struct shadow *sh = NULL;
	struct stat sb;

	make_stream(&t, 1, 2u << 20, SEG_SHIFT_FINE, 1u << 20, 9);
	snprintf(path, sizeof(path), "%s/d.shadow.zst", dir);
	CHECK_EQ(write_shadow(path, &t, 1, 1, 128u << 10, 0, NULL, false), 0);
	CHECK_EQ(stat(path, &sb), 0);
	size_t n = (size_t)sb.st_size;
	uint8_t *orig = tu_read_file(path, &n);
	for (size_t cut = 1; cut < n; cut += n / 13 + 1) {
		CHECK_EQ(truncate(path, (off_t)(n - cut)), 0);
		CHECK_EQ(shadow_open(path, 42, "fp-1", &sh), -EIO);
	}
	/* the map's bytes: the last frame before the table */
	int fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(write(fd, orig, n) == (ssize_t)n);
	close(fd);
	CHECK_EQ(shadow_open(path, 42, "fp-1", &sh), 0);
	shadow_close(sh);
	uint8_t *bad = malloc(n);
	int refused = 0;
	for (size_t at = n - 400; at < n - 40; at += 7) {
		memcpy(bad, orig, n);
		bad[at] ^= 0x20;
		fd = open(path, O_WRONLY | O_TRUNC);
		CHECK(write(fd, bad, n) == (ssize_t)n);
		close(fd);
		sh = NULL;
		int err = shadow_open(path, 42, "fp-1", &sh);
		CHECK(err == 0 || err == -EIO || err == -ESTALE);
		refused += err != 0;
		shadow_close(sh);
	}
	CHECK(refused > 0);
	/* a frame's byte: the reader fails, with the segment CRCs or the frame's checksum */
	memcpy(bad, orig, n);
	bad[100] ^= 0x01; /* inside the first frame, which a read at 0 decodes */
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(write(fd, bad, n) == (ssize_t)n);
	close(fd);
	CHECK_EQ(shadow_open(path, 42, "fp-1", &sh), 0);
	if (sh) {
		struct codec_ckpt *ck = NULL;
		size_t nck = 0, ncrc = 0;
		uint32_t *crcs = seg_crcs(&t, &ncrc);
		struct cache *cache = cache_new(16u << 20);
		CHECK_EQ(shadow_stream_ckpts(sh, 1, t.len, t.shift, &ck, &nck), 0);
		struct creader_params p = {.codec = &codec_zstd, .in = shadow_src(sh), .ckpts = ck,
					   .nckpts = nck, .crcs = crcs, .seg_shift = t.shift,
					   .usize = t.len, .cache = cache};
		struct creader *r = NULL;
		uint8_t buf[4096];
		CHECK_EQ(creader_new(&p, &r), 0);
		CHECK_EQ(creader_read(r, buf, sizeof(buf), 0), -EIO);
		creader_free(r);
		cache_free(cache);
		free(ck);
		free(crcs);
		shadow_close(sh);
	}
	free(bad);
	free(orig);
	free(t.data);
	free(t.chunks);
}

/* A stored frame is a zstd frame libzstd decodes, whatever its size. */
static void test_stored_frames(void)
{
	static const size_t sizes[] = {0, 1, 255, 256, 257, 65791, 65792, 131072, 131073, 400000};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		size_t len = sizes[i], got = 0;
		uint8_t *in = malloc(len + 1), *out = malloc(zsk_bound(len)), *back = malloc(len + 1);
		tu_fill(in, len, (uint32_t)i, 0);
		CHECK_EQ(zsk_frame(NULL, ZSK_STORE, in, len, out, zsk_bound(len), &got), 0);
		size_t r = ZSTD_decompress(back, len + 1, out, got);
		CHECK(!ZSTD_isError(r) && r == len && memcmp(back, in, len) == 0);
		CHECK_EQ(ZSTD_getFrameContentSize(out, got), len);
		free(in);
		free(out);
		free(back);
	}
}

static void test_policy(void)
{
	enum shadow_mode m;

	CHECK_EQ(shadow_mode_parse("auto", &m), 0);
	CHECK_EQ(m, SHADOW_AUTO);
	CHECK_EQ(shadow_mode_parse("always", &m), 0);
	CHECK_EQ(m, SHADOW_ALWAYS);
	CHECK_EQ(shadow_mode_parse("never", &m), 0);
	CHECK_EQ(m, SHADOW_NEVER);
	CHECK_EQ(shadow_mode_parse("sometimes", &m), -EINVAL);
	static const char *const costly[] = {"xz", "bzip2", "lzip", "lzma", "compress", "lz4",
					     "lzo", "7z", "libarchive"};
	for (size_t i = 0; i < sizeof(costly) / sizeof(*costly); i++) {
		CHECK(shadow_wanted(SHADOW_AUTO, costly[i], false));
		CHECK(!shadow_wanted(SHADOW_NEVER, costly[i], false));
	}
	CHECK(!shadow_wanted(SHADOW_AUTO, "gzip", false));
	CHECK(!shadow_wanted(SHADOW_AUTO, "deflate", false));
	CHECK(shadow_wanted(SHADOW_ALWAYS, "gzip", false));
	CHECK(shadow_wanted(SHADOW_AUTO, "zstd", false));
	CHECK(!shadow_wanted(SHADOW_AUTO, "zstd", true));
	CHECK(!shadow_wanted(SHADOW_ALWAYS, "stored", false));
	CHECK(!shadow_wanted(SHADOW_ALWAYS, "none", false));
	CHECK(shadow_budget("/tmp/x.shadow.zst", 1000) == 1000);
	CHECK(shadow_budget("/tmp/x.shadow.zst", 0) > 1000);
	CHECK(shadow_new_id() != 0 && shadow_new_id() != shadow_new_id());
	char *p = shadow_path("/a/b.tar.xz.index.sqlite");
	CHECK(p && strcmp(p, "/a/b.tar.xz.index.shadow.zst") == 0);
	free(p);
	p = shadow_path("/a/idx");
	CHECK(p && strcmp(p, "/a/idx.shadow.zst") == 0);
	free(p);
}

int main(void)
{
	tfs_log_level = TFS_LOG_ERR;
	srand(5);
	if (!mkdtemp(dir))
		return 1;
	test_policy();
	test_stored_frames();
	test_roundtrip();
	test_damage();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	return tu_exit();
}
