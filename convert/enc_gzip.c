/* gzip encoder (zlib's deflate; see encoder.h).
 *
 * One member (the default): a 10-byte header, then each block as raw deflate compressed with
 * the 32 KiB before it as its preset dictionary and ended by a sync flush (an empty stored
 * block), so the next block starts on a byte boundary; the last block ends the stream; the
 * trailer's CRC-32 is the blocks' CRCs combined.  A block's checkpoint is then a plain one at
 * its first byte (bits 0) whose window is that dictionary, stored as gzip.c stores windows (a
 * zlib stream of level 1); the first block's is the member checkpoint at offset 0.
 *
 * With opts->members each block is a member of its own (header, deflate, trailer), readable
 * by every gzip as one file (cat a.gz b.gz); its checkpoints need no window.  Compression is a
 * little worse (each block starts with an empty window).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/byteio.h"
#include "common/crc32.h"
#include "common/log.h"
#include "convert/encoder.h"
#include "codecs/gzip/gzip_ckpt.h"
#include "codecs/liberr.h"

#define EG_LEVEL 6 /* gzip's own default */
#define EG_HEADER 10
#define EG_TRAILER 8

struct enc {
	int level;
	bool members;
	uint64_t blocks;
	uint32_t crc; /* of the member so far */
	uint64_t isize;
};

static int eg_init(const struct enc_opts *o, struct enc **out)
{
	struct enc *e = calloc(1, sizeof(*e));

	*out = e;
	if (!e)
		return -ENOMEM;
	e->level = o->level == ENC_LEVEL_DEFAULT ? EG_LEVEL : o->level;
	e->members = o->members;
	if (e->level < 1 || e->level > 9) {
		tfs_log(TFS_LOG_ERR, "gzip: level %d is out of range (1..9)", e->level);
		free(e);
		*out = NULL;
		return -EINVAL;
	}
	return 0;
}

static size_t eg_bound(const struct enc *e, size_t len)
{
	(void)e;
	/* compressBound's worst case plus a sync flush's 5 bytes, a header and a trailer */
	return compressBound((uLong)len) + 16 + EG_HEADER + EG_TRAILER;
}

static void eg_header(uint8_t *p, int level)
{
	static const uint8_t h[EG_HEADER] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};

	memcpy(p, h, EG_HEADER);
	p[8] = level == 9 ? 2 : level == 1 ? 4 : 0; /* XFL, as gzip sets it */
}

static int eg_head(struct enc *e, uint8_t **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (e->members)
		return 0;
	*out = malloc(EG_HEADER);
	if (!*out)
		return -ENOMEM;
	eg_header(*out, e->level);
	*len = EG_HEADER;
	return 0;
}

static int eg_compress(const struct enc *e, struct enc_block *b)
{
	size_t at = e->members ? EG_HEADER : 0;
	z_stream zs = {0};
	int ret;

	if (b->len > UINT32_MAX || b->out_cap > UINT32_MAX)
		return -EFBIG;
	ret = deflateInit2(&zs, e->level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
	if (ret != Z_OK)
		return liberr_zlib(ret);
	if (!e->members && b->dict_len)
		ret = deflateSetDictionary(&zs, b->dict, (uInt)b->dict_len);
	zs.next_in = (Bytef *)b->in;
	zs.avail_in = (uInt)b->len;
	zs.next_out = b->out + at;
	zs.avail_out = (uInt)(b->out_cap - at - EG_TRAILER);
	if (ret == Z_OK)
		ret = deflate(&zs, b->last || e->members ? Z_FINISH : Z_SYNC_FLUSH);
	if (ret == Z_OK || ret == Z_STREAM_END) {
		bool done = ret == Z_STREAM_END ||
			    (!(b->last || e->members) && zs.avail_in == 0 && zs.avail_out > 0);
		ret = done ? Z_OK : Z_BUF_ERROR;
	}
	b->out_len = at + (size_t)(zs.next_out - (b->out + at));
	deflateEnd(&zs);
	if (ret != Z_OK) {
		tfs_log(TFS_LOG_ERR, "gzip: cannot compress a block (zlib error %d)", ret);
		return liberr_zlib(ret);
	}
	b->crc = tfs_crc32(0, b->in, b->len);
	if (e->members) {
		eg_header(b->out, e->level);
		put_le32(b->out + b->out_len, b->crc);
		put_le32(b->out + b->out_len + 4, (uint32_t)b->len);
		b->out_len += EG_TRAILER;
	}
	return 0;
}

static int eg_commit(struct enc *e, const struct enc_block *b, uint64_t uoff, uint64_t coff,
		     struct codec_ckpt *ck, uint8_t **aux, size_t *auxlen)
{
	bool first = e->blocks++ == 0;

	*aux = NULL;
	*auxlen = 0;
	e->crc = first ? b->crc : (uint32_t)crc32_combine(e->crc, b->crc, (z_off_t)b->len);
	e->isize += b->len;
	if (!b->len)
		return 0;
	memset(ck, 0, sizeof(*ck));
	ck->uoff = uoff;
	if (e->members || first) {
		ck->coff = first && !e->members ? 0 : coff;
		ck->flags = GZ_CK_MEMBER;
		return 1;
	}
	ck->coff = coff;
	ck->extra = b->dict_len;
	if (b->dict_len) {
		uLongf n = compressBound((uLong)b->dict_len);
		uint8_t *p = malloc(n);
		int ret;
		if (!p)
			return -ENOMEM;
		ret = compress2(p, &n, b->dict, (uLong)b->dict_len, 1);
		if (ret != Z_OK) {
			free(p);
			return liberr_zlib(ret);
		}
		*aux = p;
		*auxlen = n;
	}
	return 1;
}

static int eg_tail(struct enc *e, uint8_t **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (e->members)
		return 0;
	*out = malloc(EG_TRAILER);
	if (!*out)
		return -ENOMEM;
	put_le32(*out, e->crc);
	put_le32(*out + 4, (uint32_t)e->isize);
	*len = EG_TRAILER;
	return 0;
}

static void eg_free(struct enc *e)
{
	free(e);
}

const struct encoder encoder_gzip = {
    .codec = "gzip",
    .ext = ".tar.gz",
    .tool = "gzip -d",
    .init = eg_init,
    .bound = eg_bound,
    .head = eg_head,
    .compress = eg_compress,
    .commit = eg_commit,
    .tail = eg_tail,
    .free = eg_free,
};
