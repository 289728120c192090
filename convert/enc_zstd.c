/* zstd encoder: zstd's seekable format (see encoder.h).
 *
 * Each block is one frame with its content size and XXH64 checksum.  The file ends with a
 * seek table: a skippable frame (magic ZS_SEEK_SKIP_MAGIC) holding, per frame, its compressed
 * and decoded sizes (4 bytes each, no checksum: the frames carry their own), then a footer of
 * the frame count, a descriptor byte (0: no checksums) and ZS_SEEK_MAGIC.  Checkpoints follow
 * zstd.c's chunk rule (zs_chunk_frame / zs_chunk_data, shared with the scan), so they land
 * where a scan of the file would put them.  Frames and their sizes are limited to 4 GiB by the
 * table's fields; the caller's blocks are far smaller.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "common/byteio.h"
#include "common/log.h"
#include "codecs/liberr.h"
#include "convert/encoder.h"
#include "codecs/zstd/zstd_int.h"

#define EZ_LEVEL 3 /* zstd's own default */

struct enc {
	int level;
	struct zs_chunker chunker;
	uint64_t frames;
	uint8_t *table; /* 8 bytes per frame */
	size_t table_cap;
};

static int ez_init(const struct enc_opts *o, struct enc **out)
{
	struct enc *e = calloc(1, sizeof(*e));

	*out = e;
	if (!e)
		return -ENOMEM;
	e->level = o->level == ENC_LEVEL_DEFAULT ? EZ_LEVEL : o->level;
	if (e->level < ZSTD_minCLevel() || e->level > ZSTD_maxCLevel()) {
		tfs_log(TFS_LOG_ERR, "zstd: level %d is out of range (%d..%d)", e->level,
			ZSTD_minCLevel(), ZSTD_maxCLevel());
		free(e);
		*out = NULL;
		return -EINVAL;
	}
	return 0;
}

static size_t ez_bound(const struct enc *e, size_t len)
{
	(void)e;
	return ZSTD_compressBound(len);
}

static int ez_head(struct enc *e, uint8_t **out, size_t *len)
{
	(void)e;
	*out = NULL;
	*len = 0;
	return 0;
}

static int ez_compress(const struct enc *e, struct enc_block *b)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t n;

	if (!cc)
		return -ENOMEM;
	n = ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, e->level);
	if (!ZSTD_isError(n))
		n = ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	if (!ZSTD_isError(n))
		n = ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 1);
	if (!ZSTD_isError(n))
		n = ZSTD_compress2(cc, b->out, b->out_cap, b->in, b->len);
	ZSTD_freeCCtx(cc);
	if (ZSTD_isError(n)) {
		tfs_log(TFS_LOG_ERR, "zstd: cannot compress a block: %s", ZSTD_getErrorName(n));
		return liberr_zstd(n);
	}
	b->out_len = n;
	return 0;
}

static int ez_commit(struct enc *e, const struct enc_block *b, uint64_t uoff, uint64_t coff,
		     struct codec_ckpt *ck, uint8_t **aux, size_t *auxlen)
{
	struct zs_fdesc fd = {.number = ++e->frames,
			      .coff = coff,
			      .end = coff + b->out_len,
			      .dsize = b->len,
			      .tix = ZS_UNKNOWN};
	const void *a;

	*aux = NULL;
	*auxlen = 0;
	if (b->out_len > UINT32_MAX || b->len > UINT32_MAX)
		return -EFBIG;
	if (e->frames * 8 > e->table_cap) {
		size_t cap = e->table_cap ? e->table_cap * 2 : 4096;
		uint8_t *t = realloc(e->table, cap);
		if (!t)
			return -ENOMEM;
		e->table = t;
		e->table_cap = cap;
	}
	put_le32(e->table + (e->frames - 1) * 8, (uint32_t)b->out_len);
	put_le32(e->table + (e->frames - 1) * 8 + 4, (uint32_t)b->len);
	zs_chunk_frame(&e->chunker, &fd, uoff);
	if (!b->len)
		return 0;
	return zs_chunk_data(&e->chunker, NULL, uoff, ck, &a, auxlen) ? 1 : 0;
}

static int ez_tail(struct enc *e, uint8_t **out, size_t *len)
{
	size_t body = (size_t)e->frames * 8 + ZS_SEEK_FOOTER;
	uint8_t *p;

	if (e->frames > UINT32_MAX)
		return -EFBIG;
	p = malloc(8 + body);
	if (!p)
		return -ENOMEM;
	put_le32(p, ZS_SEEK_SKIP_MAGIC);
	put_le32(p + 4, (uint32_t)body);
	if (e->frames)
		memcpy(p + 8, e->table, (size_t)e->frames * 8);
	put_le32(p + 8 + e->frames * 8, (uint32_t)e->frames);
	p[8 + e->frames * 8 + 4] = 0; /* descriptor: no checksums */
	put_le32(p + 8 + e->frames * 8 + 5, ZS_SEEK_MAGIC);
	*out = p;
	*len = 8 + body;
	return 0;
}

static void ez_free(struct enc *e)
{
	if (e)
		free(e->table);
	free(e);
}

const struct encoder encoder_zstd = {
    .codec = "zstd",
    .ext = ".tar.zst",
    .tool = "zstd -d",
    .init = ez_init,
    .bound = ez_bound,
    .head = ez_head,
    .compress = ez_compress,
    .commit = ez_commit,
    .tail = ez_tail,
    .free = ez_free,
};
