/* xz encoder: one stream of independent blocks (see encoder.h).
 *
 * Each block is compressed by lzma_block_buffer_encode with LZMA2 at the level's preset and
 * a CRC64 check, its compressed and uncompressed sizes in its header (what `xz -T` writes, and
 * what lets a reader find every block without decoding).  commit appends the block to an
 * lzma_index; tail encodes that index and the stream footer.  Checkpoint fields are xz.c's:
 * coff the block header, clen its unpadded size, extra its uncompressed size, bits the check,
 * flags the block number (1-based).
 */
#include <errno.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "convert/encoder.h"
#include "codecs/liberr.h"

#define EX_LEVEL 6 /* xz's own default */
#define EX_CHECK LZMA_CHECK_CRC64

struct enc {
	lzma_options_lzma lz;
	lzma_index *index;
	uint64_t blocks;
};

static int ex_init(const struct enc_opts *o, struct enc **out)
{
	struct enc *e = calloc(1, sizeof(*e));
	int level = o->level == ENC_LEVEL_DEFAULT ? EX_LEVEL : o->level;

	*out = NULL;
	if (!e)
		return -ENOMEM;
	if (level < 0 || level > 9 || lzma_lzma_preset(&e->lz, (uint32_t)level)) {
		tfs_log(TFS_LOG_ERR, "xz: level %d is out of range (0..9)", level);
		free(e);
		return -EINVAL;
	}
	/* a dictionary larger than a block is never used: it would only cost memory, here
	 * and in every decoder */
	while (o->block && e->lz.dict_size / 2 >= o->block &&
	       e->lz.dict_size / 2 >= LZMA_DICT_SIZE_MIN)
		e->lz.dict_size /= 2;
	e->index = lzma_index_init(NULL);
	if (!e->index) {
		free(e);
		return -ENOMEM;
	}
	*out = e;
	return 0;
}

static size_t ex_bound(const struct enc *e, size_t len)
{
	(void)e;
	return lzma_block_buffer_bound(len);
}

static int ex_head(struct enc *e, uint8_t **out, size_t *len)
{
	lzma_stream_flags f = {.version = 0, .check = EX_CHECK};
	lzma_ret r;

	(void)e;
	*out = malloc(LZMA_STREAM_HEADER_SIZE);
	*len = 0;
	if (!*out)
		return -ENOMEM;
	r = lzma_stream_header_encode(&f, *out);
	if (r != LZMA_OK) {
		free(*out);
		*out = NULL;
		return liberr_lzma(r);
	}
	*len = LZMA_STREAM_HEADER_SIZE;
	return 0;
}

static int ex_compress(const struct enc *e, struct enc_block *b)
{
	lzma_options_lzma lz = e->lz;
	lzma_filter filters[] = {{.id = LZMA_FILTER_LZMA2, .options = &lz},
				 {.id = LZMA_VLI_UNKNOWN}};
	lzma_block blk = {.version = 0, .check = EX_CHECK, .filters = filters};
	size_t pos = 0;
	lzma_ret r;

	r = lzma_block_buffer_encode(&blk, NULL, b->in, b->len, b->out, &pos, b->out_cap);
	if (r != LZMA_OK) {
		tfs_log(TFS_LOG_ERR, "xz: cannot compress a block (liblzma error %d)", (int)r);
		return liberr_lzma(r);
	}
	b->out_len = pos;
	b->extra = lzma_block_unpadded_size(&blk);
	return b->extra ? 0 : -EIO;
}

static int ex_commit(struct enc *e, const struct enc_block *b, uint64_t uoff, uint64_t coff,
		     struct codec_ckpt *ck, uint8_t **aux, size_t *auxlen)
{
	lzma_ret r = lzma_index_append(e->index, NULL, b->extra, b->len);

	*aux = NULL;
	*auxlen = 0;
	if (r != LZMA_OK)
		return liberr_lzma(r);
	e->blocks++;
	if (!b->len)
		return 0;
	memset(ck, 0, sizeof(*ck));
	ck->uoff = uoff;
	ck->coff = coff;
	ck->clen = b->extra;
	ck->extra = b->len;
	ck->bits = EX_CHECK;
	ck->flags = e->blocks < UINT32_MAX ? (uint32_t)e->blocks : UINT32_MAX;
	return 1;
}

static int ex_tail(struct enc *e, uint8_t **out, size_t *len)
{
	lzma_stream_flags f = {.version = 0, .check = EX_CHECK};
	lzma_vli isize = lzma_index_size(e->index);
	size_t pos = 0, cap = (size_t)isize + LZMA_STREAM_HEADER_SIZE;
	uint8_t *p = malloc(cap);
	lzma_ret r;

	*out = NULL;
	*len = 0;
	if (!p)
		return -ENOMEM;
	r = lzma_index_buffer_encode(e->index, p, &pos, cap);
	f.backward_size = isize;
	if (r == LZMA_OK)
		r = lzma_stream_footer_encode(&f, p + pos);
	if (r != LZMA_OK) {
		free(p);
		return liberr_lzma(r);
	}
	*out = p;
	*len = pos + LZMA_STREAM_HEADER_SIZE;
	return 0;
}

static void ex_free(struct enc *e)
{
	if (e)
		lzma_index_end(e->index, NULL);
	free(e);
}

const struct encoder encoder_xz = {
    .codec = "xz",
    .ext = ".tar.xz",
    .tool = "xz -d",
    .init = ex_init,
    .bound = ex_bound,
    .head = ex_head,
    .compress = ex_compress,
    .commit = ex_commit,
    .tail = ex_tail,
    .free = ex_free,
};
