/* lzop encoder: one lzop file whose blocks are cut so that lzo.c's checkpoints (groups of
 * blocks) fall at the caller's block boundaries (see encoder.h).
 *
 * lzo.c groups a file's blocks: a group ends after the block that brings it to LZOP_GROUP
 * (1 MiB) decoded bytes, or at the end marker.  The caller's blocks (convert.c, with
 * `whole_blocks` set) all hold from 1 MiB to less than 1.25 MiB, but the last; each becomes
 * lzop blocks of at most lzop's 256 KiB (`lzop -d` refuses larger ones), cut as 256K, 256K,
 * 256K, what is left over 1 MiB (if anything), 256K, so that only the last one brings the
 * group to 1 MiB: one group, one checkpoint, per block, where a scan of the file puts it.  The
 * last block of the file is cut the same way when it reaches 1 MiB, else in 256K pieces (its
 * group ends at the end marker).  Blocks carry the Adler-32 checksums of their decoded and
 * of their compressed bytes (a stored block only the first), so damage is found before a
 * block is decoded.
 *
 * Levels as lzop's: 1-2 LZO1X-1(15), 3-6 LZO1X-1 (the default, 3), 7-9 LZO1X-999 at that
 * level; a block that does not shrink is stored as it is, as lzop does.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <lzo/lzo1x.h>
#include <lzo/lzoconf.h>

#include "common/byteio.h"
#include "common/log.h"
#include "convert/encoder.h"

#define EL_LEVEL 3			 /* lzop's own default */
#define EL_SUB ((size_t)256 << 10)	 /* lzop's block size */
#define EL_GROUP ((size_t)1 << 20)	 /* lzo.c's LZOP_GROUP */
#define EL_FLAGS 0x03000003u		 /* Unix; Adler-32 of decompressed and compressed data */
#define EL_HDR 38			 /* bytes of the file header written */

struct enc {
	int level;
	uint64_t blocks; /* lzop blocks written so far (a checkpoint names its first, 1-based) */
};

static const uint8_t el_magic[9] = {0x89, 0x4c, 0x5a, 0x4f, 0x00, 0x0d, 0x0a, 0x1a, 0x0a};

static int el_init(const struct enc_opts *o, struct enc **out)
{
	struct enc *e;

	*out = NULL;
	if (lzo_init() != LZO_E_OK) {
		tfs_log(TFS_LOG_ERR, "lzo: lzo_init() failed: liblzo2 does not match its headers");
		return -EINVAL;
	}
	if (o->block > EL_GROUP + EL_GROUP / 4) { /* convert.c gives at most that */
		tfs_log(TFS_LOG_ERR, "lzo: blocks of 1 MiB only (lzo's checkpoints are 1 MiB groups)");
		return -EINVAL;
	}
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->level = o->level == ENC_LEVEL_DEFAULT ? EL_LEVEL : o->level;
	if (e->level < 1 || e->level > 9) {
		tfs_log(TFS_LOG_ERR, "lzo: level %d is out of range (1..9)", e->level);
		free(e);
		return -EINVAL;
	}
	*out = e;
	return 0;
}

/* The length of the lzop block at done of a caller's block of len bytes (see the top). */
static size_t el_sub_len(size_t len, size_t done)
{
	size_t left = len - done, over = len >= EL_GROUP ? len - EL_GROUP : 0;

	if (len >= EL_GROUP && done == 3 * EL_SUB && over)
		return over; /* the piece over 1 MiB, before the last 256K */
	return left < EL_SUB ? left : EL_SUB;
}

static size_t el_sub_count(size_t len)
{
	size_t n = 0;

	for (size_t done = 0; done < len; done += el_sub_len(len, done))
		n++;
	return n;
}

static size_t el_bound(const struct enc *e, size_t len)
{
	size_t n = el_sub_count(len);

	(void)e;
	/* liblzo's worst case per block is len + len/16 + 64 + 3; 16 bytes of block header */
	return n * (16 + 64 + 3) + len + len / 16;
}

/* The file header (EL_HDR bytes at p): lzop 1.04's fields, no stored name. */
static size_t el_header(const struct enc *e, uint8_t *p)
{
	size_t i = 9;

	memcpy(p, el_magic, 9);
	unsigned lib = lzo_version() & 0xffff;
	p[i] = 0x10, p[i + 1] = 0x40;		     /* lzop 1.04 */
	p[i + 2] = (uint8_t)(lib >> 8), p[i + 3] = (uint8_t)lib;
	p[i + 4] = 0x09, p[i + 5] = 0x40;	     /* version needed to extract */
	i += 6;
	p[i++] = e->level <= 2 ? 2 : e->level <= 6 ? 1 : 3; /* LZO1X-1(15), -1, -999 */
	p[i++] = (uint8_t)e->level;
	put_be32(p + i, EL_FLAGS);
	put_be32(p + i + 4, 0100644); /* mode */
	put_be32(p + i + 8, 0);	      /* mtime, low and high */
	put_be32(p + i + 12, 0);
	i += 16;
	p[i++] = 0; /* no stored name */
	put_be32(p + i, (uint32_t)adler32(1, p + 9, (uInt)(i - 9)));
	return i + 4;
}

static int el_head(struct enc *e, uint8_t **out, size_t *len)
{
	*out = malloc(EL_HDR);
	if (!*out)
		return -ENOMEM;
	*len = el_header(e, *out);
	return 0;
}

/* Compresses one lzop block of n bytes at in into out (room: n + n/16 + 64 + 3).  Its
 * compressed length, or 0 (a library failure, logged). */
static size_t el_lzo(const struct enc *e, const uint8_t *in, size_t n, uint8_t *out, void *wrk)
{
	lzo_uint olen = 0;
	int r;

	if (e->level <= 2)
		r = lzo1x_1_15_compress(in, n, out, &olen, wrk);
	else if (e->level <= 6)
		r = lzo1x_1_compress(in, n, out, &olen, wrk);
	else
		r = lzo1x_999_compress_level(in, n, out, &olen, wrk, NULL, 0, NULL, e->level);
	if (r != LZO_E_OK) {
		tfs_log(TFS_LOG_ERR, "lzo: cannot compress a block (liblzo error %d)", r);
		return 0;
	}
	return olen;
}

static int el_compress(const struct enc *e, struct enc_block *b)
{
	size_t wlen = e->level <= 2   ? LZO1X_1_15_MEM_COMPRESS
		      : e->level <= 6 ? LZO1X_1_MEM_COMPRESS
				      : LZO1X_999_MEM_COMPRESS;
	void *wrk = malloc(wlen);
	uint8_t *p = b->out, *tmp = malloc(EL_SUB + EL_SUB / 16 + 67); /* a block's bound */
	size_t o = 0, done = 0, subs = 0;
	int err = 0;

	if (!wrk || !tmp) {
		err = -ENOMEM;
		goto out;
	}
	if (b->len >= EL_GROUP + EL_SUB) { /* its cut would need a block over 256 KiB */
		tfs_log(TFS_LOG_ERR, "lzo: a block of %zu bytes: 1.25 MiB is the most", b->len);
		err = -EINVAL;
		goto out;
	}
	while (done < b->len) {
		size_t n = el_sub_len(b->len, done), c = el_lzo(e, b->in + done, n, tmp, wrk);
		bool stored = c == 0 || c >= n;
		if (c == 0 && n) {
			err = -EIO;
			goto out;
		}
		put_be32(p + o, (uint32_t)n);
		put_be32(p + o + 4, (uint32_t)(stored ? n : c));
		put_be32(p + o + 8, (uint32_t)adler32(1, b->in + done, (uInt)n));
		o += 12;
		if (!stored) { /* a stored block carries no checksum of compressed data */
			put_be32(p + o, (uint32_t)adler32(1, tmp, (uInt)c));
			o += 4;
		}
		memcpy(p + o, stored ? b->in + done : tmp, stored ? n : c);
		o += stored ? n : c;
		done += n;
		subs++;
	}
	b->out_len = o;
	b->extra = subs;
out:
	free(wrk);
	free(tmp);
	return err;
}

static int el_commit(struct enc *e, const struct enc_block *b, uint64_t uoff, uint64_t coff,
		     struct codec_ckpt *ck, uint8_t **aux, size_t *auxlen)
{
	uint64_t first = e->blocks + 1;

	*aux = NULL;
	*auxlen = 0;
	e->blocks += b->extra;
	if (!b->len)
		return 0; /* nothing (an empty tar): no group */
	memset(ck, 0, sizeof(*ck));
	ck->uoff = uoff;
	ck->coff = coff;
	ck->clen = b->out_len;
	ck->extra = first;
	ck->bits = (uint32_t)b->extra;
	ck->flags = EL_FLAGS;
	return 1;
}

static int el_tail(struct enc *e, uint8_t **out, size_t *len)
{
	(void)e;
	*out = calloc(1, 4); /* the end marker */
	*len = 4;
	return *out ? 0 : -ENOMEM;
}

static void el_free(struct enc *e)
{
	free(e);
}

const struct encoder encoder_lzo = {
    .codec = "lzo",
    .whole_blocks = true,
    .ext = ".tar.lzo",
    .tool = "lzop -d",
    .init = el_init,
    .bound = el_bound,
    .head = el_head,
    .compress = el_compress,
    .commit = el_commit,
    .tail = el_tail,
    .free = el_free,
};
