/* libFuzzer harness: a shadow file (shadow/) as a mount opens and reads it.
 *
 * The input as a shadow file (any id, any fingerprint): shadow_open_src returns 0, -EIO,
 * -ESTALE or -ENOMEM, nothing else.  For each stream its map lists: asked with another size it
 * is -EIO; with its own, its frames as codec_zstd checkpoints start at 0, follow each other
 * and add up to the size, each inside the file; a reader over them (no segment CRCs: the
 * frames' own checksums and sizes, as index_blocks trusts them) reads a few ranges and returns
 * the count asked for or -EIO/-ENOMEM -- never more, never a short count inside the stream.
 *
 *   build-fuzz/tests/fuzz/fuzz_shadow CORPUS_DIR
 */
#include "cache/cache.h"
#include "fuzz_common.h"
#include "seek/reader.h"
#include "shadow/shadow.h"

#define READ_MAX (256u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cache *cache;
	static uint8_t buf[READ_MAX];
	struct shadow *sh = NULL;
	struct fz_rng rng;
	int err;

	fz_init_log();
	if (!cache)
		cache = cache_new(8u << 20);
	fz_rng_init(&rng, data, size);
	err = shadow_open_src(src_from_mem(data, size), 0, NULL, &sh);
	FZ_ASSERT(err == 0 || err == -EIO || err == -ESTALE || err == -ENOMEM);
	if (err) {
		FZ_ASSERT(!sh);
		return 0;
	}
	for (size_t i = 0; i < shadow_nstreams(sh) && i < 16; i++) {
		struct codec_ckpt *ck = NULL;
		struct creader *r = NULL;
		uint64_t id, usize, u = 0;
		unsigned shift;
		size_t n = 0;

		shadow_stream_info(sh, i, &id, &usize, &shift);
		FZ_ASSERT(shadow_stream_ckpts(sh, id, usize + 1, shift, &ck, &n) == -EIO);
		err = shadow_stream_ckpts(sh, id, usize, shift, &ck, &n);
		FZ_ASSERT(err == 0 || err == -ENOMEM);
		if (err)
			continue;
		for (size_t k = 0; k < n; k++) {
			FZ_ASSERT(ck[k].uoff == u);
			FZ_ASSERT(ck[k].coff < shadow_size(sh));
			u += ck[k].ulen;
		}
		FZ_ASSERT(u == usize);
		if (!n || usize > (64u << 20)) {
			free(ck);
			continue;
		}
		struct creader_params p = {.codec = &codec_zstd, .in = shadow_src(sh), .ckpts = ck,
					   .nckpts = n, .usize = usize, .cache = cache};
		err = creader_new(&p, &r);
		FZ_ASSERT(err == 0 || err == -EINVAL || err == -ENOMEM);
		for (int k = 0; r && k < 4; k++) {
			uint64_t off = fz_rng_next(&rng) % usize;
			size_t len = (size_t)(fz_rng_next(&rng) % READ_MAX) + 1;
			ssize_t got = creader_read(r, buf, len, off);
			uint64_t want = usize - off < len ? usize - off : len;
			FZ_ASSERT(got == (ssize_t)want || got == -EIO || got == -ENOMEM);
		}
		creader_free(r);
		free(ck);
	}
	shadow_close(sh);
	return 0;
}
