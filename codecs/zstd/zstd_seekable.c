/* Writing zstd's seekable format and reading its seek table (see zstd_seekable.h).
 *
 * A stored frame is written by hand, as RFC 8878 lays it out: the magic, a frame header with
 * the single-segment flag (no window descriptor: the window is the content), the checksum flag
 * and the content size in the smallest field that holds it; then raw blocks of at most 128 KiB
 * (the format's block maximum), the last one flagged; then the low 32 bits of the content's
 * XXH64.  libzstd writes the compressed frames, with the same two flags set.
 */
#include "codecs/zstd/zstd_seekable.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#include "codecs/liberr.h"
#include "codecs/zstd/zstd_int.h"
#include "common/byteio.h"
#include "common/log.h"

struct zsk_cctx {
	ZSTD_CCtx *cc;
	int level; /* the level cc is set to, or 0: not set yet */
};

size_t zsk_bound(size_t len)
{
	size_t raw = ZS_HDR_MAX + 4 + len + 3 * (len / ZS_BLOCK_MAX + 1);
	size_t z = ZSTD_compressBound(len);

	return (z > raw ? z : raw) + 4;
}

struct zsk_cctx *zsk_cctx_new(void)
{
	struct zsk_cctx *c = calloc(1, sizeof(*c));

	if (c && !(c->cc = ZSTD_createCCtx())) {
		free(c);
		c = NULL;
	}
	return c;
}

void zsk_cctx_free(struct zsk_cctx *c)
{
	if (!c)
		return;
	ZSTD_freeCCtx(c->cc);
	free(c);
}

/* A stored frame's header (see the top of the file) into h (at most 13 bytes): its length. */
static size_t stored_head(size_t len, uint8_t *h)
{
	uint8_t *p = h;
	unsigned fcs;

	put_le32(p, ZS_MAGIC);
	p += 4;
	/* descriptor: FCS field size flag (bits 7-6), single segment (5), checksum (2) */
	if (len < 256)
		fcs = 0;
	else if (len < 65536 + 256)
		fcs = 1;
	else if (len <= UINT32_MAX)
		fcs = 2;
	else
		fcs = 3;
	*p++ = (uint8_t)(fcs << 6 | 1u << 5 | 1u << 2);
	switch (fcs) {
	case 0:
		*p++ = (uint8_t)len;
		break;
	case 1:
		p[0] = (uint8_t)(len - 256);
		p[1] = (uint8_t)((len - 256) >> 8);
		p += 2;
		break;
	case 2:
		put_le32(p, (uint32_t)len);
		p += 4;
		break;
	default:
		put_le32(p, (uint32_t)len);
		put_le32(p + 4, (uint32_t)((uint64_t)len >> 32));
		p += 8;
	}
	return (size_t)(p - h);
}

int zsk_store_to(const void *in, size_t len, int (*put)(void *arg, const void *p, size_t n),
		 void *arg, size_t *out_len)
{
	const uint8_t *b = in;
	uint8_t h[16];
	size_t n = stored_head(len, h), done = 0, total = n;
	int err = put(arg, h, n);

	do {
		size_t k = len - done < ZS_BLOCK_MAX ? len - done : ZS_BLOCK_MAX;
		uint32_t bh = (uint32_t)k << 3 | (done + k == len ? 1u : 0u); /* type 0: raw */
		h[0] = (uint8_t)bh;
		h[1] = (uint8_t)(bh >> 8);
		h[2] = (uint8_t)(bh >> 16);
		if (!err)
			err = put(arg, h, 3);
		if (!err && k)
			err = put(arg, b + done, k);
		total += 3 + k;
		done += k;
	} while (!err && done < len);
	put_le32(h, (uint32_t)XXH64(in, len, 0));
	if (!err)
		err = put(arg, h, 4);
	*out_len = total + 4;
	return err;
}

static int put_mem(void *arg, const void *p, size_t n)
{
	uint8_t **at = arg;

	memcpy(*at, p, n);
	*at += n;
	return 0;
}

/* A stored frame (see the top of the file) into out. */
static size_t stored_frame(const uint8_t *in, size_t len, uint8_t *out)
{
	uint8_t *at = out;
	size_t n;

	zsk_store_to(in, len, put_mem, &at, &n);
	return n;
}

int zsk_frame(struct zsk_cctx *c, int level, const void *in, size_t len, void *out, size_t cap,
	      size_t *out_len)
{
	size_t n;
	int err;

	*out_len = 0;
	if (cap < zsk_bound(len))
		return -EINVAL;
	if (level == ZSK_STORE) {
		*out_len = stored_frame(in, len, out);
		return 0;
	}
	if (c->level != level || level == 0) {
		ZSTD_CCtx_reset(c->cc, ZSTD_reset_parameters);
		if ((err = liberr_zstd(ZSTD_CCtx_setParameter(c->cc, ZSTD_c_compressionLevel, level))) ||
		    (err = liberr_zstd(ZSTD_CCtx_setParameter(c->cc, ZSTD_c_checksumFlag, 1))) ||
		    (err = liberr_zstd(ZSTD_CCtx_setParameter(c->cc, ZSTD_c_contentSizeFlag, 1)))) {
			tfs_log(TFS_LOG_ERR, "zstd: cannot set level %d", level);
			return err;
		}
		c->level = level;
	}
	n = ZSTD_compress2(c->cc, out, cap, in, len);
	if (ZSTD_isError(n)) {
		tfs_log(TFS_LOG_ERR, "zstd: cannot compress a frame: %s", ZSTD_getErrorName(n));
		c->level = 0; /* set again next time */
		return liberr_zstd(n);
	}
	*out_len = n;
	return 0;
}

int zsk_skippable(unsigned nibble, const void *data, size_t len, uint8_t **out, size_t *out_len)
{
	uint8_t *p;

	*out = NULL;
	*out_len = 0;
	if (len > UINT32_MAX - 8)
		return -EFBIG;
	p = malloc(8 + len);
	if (!p)
		return -ENOMEM;
	put_le32(p, ZS_SKIP_MAGIC | (nibble & 0xf));
	put_le32(p + 4, (uint32_t)len);
	if (len)
		memcpy(p + 8, data, len);
	*out = p;
	*out_len = 8 + len;
	return 0;
}

int zsk_table_add(struct zsk_table_w *t, uint64_t csize, uint64_t dsize)
{
	if (csize > UINT32_MAX || dsize > UINT32_MAX || t->n >= UINT32_MAX)
		return -EFBIG;
	if (t->n == t->cap) {
		uint64_t cap = t->cap ? t->cap * 2 : 512;
		uint8_t *e = realloc(t->ent, (size_t)cap * 8);
		if (!e)
			return -ENOMEM;
		t->ent = e;
		t->cap = cap;
	}
	put_le32(t->ent + t->n * 8, (uint32_t)csize);
	put_le32(t->ent + t->n * 8 + 4, (uint32_t)dsize);
	t->n++;
	return 0;
}

int zsk_table_bytes(const struct zsk_table_w *t, uint8_t **out, size_t *len)
{
	size_t body = (size_t)t->n * 8 + ZS_SEEK_FOOTER;
	uint8_t *p;

	*out = NULL;
	*len = 0;
	if (t->n > UINT32_MAX || body > UINT32_MAX)
		return -EFBIG;
	p = malloc(8 + body);
	if (!p)
		return -ENOMEM;
	put_le32(p, ZS_SEEK_SKIP_MAGIC);
	put_le32(p + 4, (uint32_t)body);
	if (t->n)
		memcpy(p + 8, t->ent, (size_t)t->n * 8);
	put_le32(p + 8 + t->n * 8, (uint32_t)t->n);
	p[8 + t->n * 8 + 4] = 0; /* descriptor: no checksums (the frames carry theirs) */
	put_le32(p + 8 + t->n * 8 + 5, ZS_SEEK_MAGIC);
	*out = p;
	*len = 8 + body;
	return 0;
}

void zsk_table_w_free(struct zsk_table_w *t)
{
	free(t->ent);
	*t = (struct zsk_table_w){0};
}

int zsk_table_read(struct src *in, struct zsk_table **out)
{
	struct zs_table *zt = NULL;
	struct zsk_table *t;
	int err;

	*out = NULL;
	err = zs_table_read(in, &zt);
	if (err || !zt)
		return err;
	t = calloc(1, sizeof(*t));
	if (!t) {
		zs_table_free(zt);
		return -ENOMEM;
	}
	t->n = zt->n;
	t->off = zt->off;
	t->csize = malloc((zt->n ? zt->n : 1) * sizeof(*t->csize));
	t->dsize = malloc((zt->n ? zt->n : 1) * sizeof(*t->dsize));
	if (!t->csize || !t->dsize) {
		zs_table_free(zt);
		zsk_table_free(t);
		return -ENOMEM;
	}
	for (uint64_t i = 0; i < zt->n; i++) {
		t->csize[i] = zs_tab_csize(zt, i);
		t->dsize[i] = zs_tab_dsize(zt, i);
	}
	zs_table_free(zt);
	*out = t;
	return 0;
}

void zsk_table_free(struct zsk_table *t)
{
	if (!t)
		return;
	free(t->csize);
	free(t->dsize);
	free(t);
}
