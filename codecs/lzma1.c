/* LZMA1 streams: zip's LZMA (method 14, "lzma-zip", a codec of container streams only) and
 * .lzma files ("lzma", LZMA_alone, what `xz --format=lzma` and the old lzma tools write).
 *
 * zip's entry data starts with a small header of its own -- the LZMA SDK version (2 bytes),
 * the size of the properties (2 bytes, little-endian, 5 in practice) and the properties
 * (lc/lp/pb in one byte, the dictionary size in four) -- followed by raw LZMA1 data, ended
 * either by an end-of-payload marker or by the uncompressed size.  The size comes from the
 * zip directory, as the stream's params (8 bytes, little-endian); liblzma's LZMA1EXT decoder
 * is given it, and accepts the marker too, so both kinds of entry decode to exactly their
 * size and a stream that decodes to more or less is an error.
 *
 * A .lzma file is the properties (5 bytes), the uncompressed size (8 bytes, little-endian;
 * all ones: unknown, the data then ends with the marker) and the LZMA1 data; liblzma's
 * lzma_alone_decoder reads all of it.  The format has no magic: the probe takes a file whose
 * properties are valid (lc + lp <= 4 is not required by the format, only lc <= 8, lp <= 4,
 * pb <= 4), whose dictionary size is 2^n or 2^n + 2^(n-1) (what every encoder writes), whose
 * size is unknown or below 2^48, and whose first byte of LZMA data is 0 (the range coder
 * always starts with it).  It is tried after every codec with a magic.  Bytes after the end
 * of the data: zeros silently, anything else with a notice (trailing.h).
 *
 * LZMA1 cannot be entered in the middle (one dictionary, one range coder for the whole
 * stream): the only checkpoint is the start, and a decoder started there is the scan itself;
 * random reads are served from the decoded-data cache and its disk tier.  Nothing in either
 * format checks the data (zip's CRC-32 does, for zip): scan_verified is what was decoded, and
 * the index's segment CRCs check every later read.
 */
#include "codecs/codec.h"

#include <errno.h>
#include <lzma.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"
#include "codecs/liberr.h"
#include "codecs/trailing.h"

#define LZ_INBUF (64u << 10)
#define LZ_HEAD_MAX 64 /* version, size and properties: 4 + 5 in practice */
#define LZ_DICT_MAX ((uint64_t)1536 << 20)
#define LZ_ALONE_HEAD 13 /* .lzma: properties, dictionary size, uncompressed size */

struct lz_state {
	const char *name; /* the codec's, for messages */
	bool alone;	  /* a .lzma file (else a zip entry) */
	struct src *in;
	uint64_t pos; /* next compressed byte to read */
	uint64_t usize, out; /* zip: the size to decode to; decoded so far */
	lzma_stream zs;
	bool zinit, ended;
	int err;
	size_t mem;
	uint8_t buf[LZ_INBUF];
};

static void lz_free(struct lz_state *z)
{
	if (!z)
		return;
	if (z->zinit)
		lzma_end(&z->zs);
	free(z);
}

/* Reads a zip entry's header and starts the decoder.  0 or -errno (logged). */
static int lz_start_zip(struct src *in, const void *params, size_t params_len,
			struct lz_state **out)
{
	struct lz_state *z;
	uint8_t head[LZ_HEAD_MAX];
	lzma_options_lzma opt;
	lzma_filter f[2] = {{.id = LZMA_FILTER_LZMA1EXT, .options = &opt},
			    {.id = LZMA_VLI_UNKNOWN}};
	ssize_t n;
	int err;

	*out = NULL;
	if (!params || params_len != 8)
		return -EINVAL;
	z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	z->name = "lzma-zip";
	z->in = in;
	z->usize = le64(params);
	n = src_pread(in, head, 4, 0);
	unsigned plen = n == 4 ? le16(head + 2) : 0;
	if (n != 4 || plen != 5 || src_pread(in, head + 4, plen, 4) != (ssize_t)plen) {
		tfs_log(TFS_LOG_ERR, "lzma-zip: no LZMA properties at the start of the entry");
		err = -EIO;
		goto fail;
	}
	memset(&opt, 0, sizeof(opt));
	/* lzma_lzma_props_decode reads lc/lp/pb and the dictionary size */
	lzma_filter tmp = {.id = LZMA_FILTER_LZMA1};
	lzma_ret r = lzma_properties_decode(&tmp, NULL, head + 4, plen);
	if (r != LZMA_OK) {
		tfs_log(TFS_LOG_ERR, "lzma-zip: invalid LZMA properties");
		err = liberr_lzma(r) ? liberr_lzma(r) : -EIO;
		goto fail;
	}
	opt = *(lzma_options_lzma *)tmp.options;
	free(tmp.options);
	if (opt.dict_size > LZ_DICT_MAX) {
		tfs_log(TFS_LOG_ERR, "lzma-zip: a dictionary of %u MiB is more than allowed",
			opt.dict_size >> 20);
		err = -ENOMEM;
		goto fail;
	}
	opt.ext_flags = LZMA_LZMA1EXT_ALLOW_EOPM;
	opt.ext_size_low = (uint32_t)z->usize;
	opt.ext_size_high = (uint32_t)(z->usize >> 32);
	z->zs = (lzma_stream)LZMA_STREAM_INIT;
	r = lzma_raw_decoder(&z->zs, f);
	if (r != LZMA_OK) {
		err = liberr_lzma(r);
		goto fail;
	}
	z->zinit = true;
	z->mem = sizeof(*z) + opt.dict_size;
	z->pos = 4 + plen;
	*out = z;
	return 0;
fail:
	lz_free(z);
	return err;
}

/* A dictionary size an encoder writes: 2^n or 2^n + 2^(n-1). */
static bool lz_dict_plausible(uint32_t d)
{
	for (unsigned b = 12; b < 32; b++)
		if (d == (uint32_t)1 << b || d == ((uint32_t)1 << b | (uint32_t)1 << (b - 1)))
			return true;
	return false;
}

/* Starts the decoder of a .lzma file at its start.  0 or -errno (logged). */
static int lz_start_alone(struct src *in, struct lz_state **out)
{
	struct lz_state *z;
	uint8_t head[LZ_ALONE_HEAD];
	int err;

	*out = NULL;
	if (src_pread_full(in, head, sizeof(head), 0)) {
		tfs_log(TFS_LOG_ERR, "lzma: the file ends inside its header");
		return -EIO;
	}
	if (le32(head + 1) > LZ_DICT_MAX) {
		tfs_log(TFS_LOG_ERR, "lzma: a dictionary of %u MiB is more than allowed",
			le32(head + 1) >> 20);
		return -ENOMEM;
	}
	z = calloc(1, sizeof(*z));
	if (!z)
		return -ENOMEM;
	z->name = "lzma";
	z->alone = true;
	z->in = in;
	z->zs = (lzma_stream)LZMA_STREAM_INIT;
	lzma_ret r = lzma_alone_decoder(&z->zs, UINT64_MAX);
	if (r != LZMA_OK) {
		err = liberr_lzma(r);
		lz_free(z);
		return err;
	}
	z->zinit = true;
	z->mem = sizeof(*z) + le32(head + 1);
	*out = z;
	return 0;
}

static ssize_t lz_read(struct lz_state *z, void *buf, size_t len)
{
	z->zs.next_out = buf;
	z->zs.avail_out = len;
	while (z->zs.avail_out == len && !z->err && !z->ended) {
		if (!z->zs.avail_in) {
			ssize_t n = src_pread(z->in, z->buf, sizeof(z->buf), z->pos);
			if (n < 0) {
				z->err = (int)n;
				break;
			}
			z->pos += (uint64_t)n;
			z->zs.next_in = z->buf;
			z->zs.avail_in = (size_t)n;
		}
		lzma_action act = z->zs.avail_in ? LZMA_RUN : LZMA_FINISH;
		lzma_ret r = lzma_code(&z->zs, act);
		if (r == LZMA_STREAM_END) {
			z->ended = true;
		} else if (r != LZMA_OK) {
			tfs_log(TFS_LOG_ERR, "%s: corrupt data near compressed offset %llu", z->name,
				(unsigned long long)(z->pos - z->zs.avail_in));
			z->err = liberr_lzma(r) ? liberr_lzma(r) : -EIO;
		} else if (act == LZMA_FINISH && z->zs.avail_out == len) {
			tfs_log(TFS_LOG_ERR, "%s: the %s ends before its data (truncated)", z->name,
				z->alone ? "file" : "entry");
			z->err = -EIO;
		}
	}
	size_t got = len - z->zs.avail_out;
	z->out += got;
	if (got)
		return (ssize_t)got;
	return z->err;
}

/* ---- the scan: a decoder from the start, and its one checkpoint ---- */

struct codec_scan {
	struct lz_state *z;
	struct codec_sink sink;
	bool emitted, checked_end;
};

static int lz_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		       bool alone, struct codec_scan **out)
{
	struct codec_scan *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	err = alone ? lz_start_alone(in, &s->z)
		    : lz_start_zip(in, opts ? opts->params : NULL, opts ? opts->params_len : 0,
				   &s->z);
	if (err) {
		free(s);
		return err;
	}
	s->sink = *sink;
	*out = s;
	return 0;
}

static int lzz_scan_new(struct src *in, const struct codec_opts *opts,
			const struct codec_sink *sink, struct codec_scan **out)
{
	return lz_scan_new(in, opts, sink, false, out);
}

static int lza_scan_new(struct src *in, const struct codec_opts *opts,
			const struct codec_sink *sink, struct codec_scan **out)
{
	return lz_scan_new(in, opts, sink, true, out);
}

/* After a .lzma file's data: zeros are padding, anything else is noted. */
static int lz_check_end(struct lz_state *z)
{
	uint64_t at = z->pos - z->zs.avail_in;
	struct trailing t;
	char note[160];
	int err = trailing_scan(z->in, at, NULL, 0, &t);

	if (err) {
		tfs_log(TFS_LOG_ERR, "lzma: read error after compressed offset %llu: %s",
			(unsigned long long)at, strerror(-err));
		return err;
	}
	if (t.first_nonzero != TRAILING_NONE) {
		trailing_note(note, sizeof(note), "lzma", z->in, at);
		tfs_log(TFS_LOG_NOTICE, "%s", note);
	}
	return 0;
}

static ssize_t lz_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	if (!s->emitted) { /* the start (zip: with the size a decoder needs) */
		uint8_t p[8];
		struct codec_ckpt ck = {0};
		put_le64(p, s->z->usize);
		s->emitted = true;
		int err = s->sink.checkpoint ? s->sink.checkpoint(s->sink.opaque, &ck,
								  s->z->alone ? NULL : p,
								  s->z->alone ? 0 : 8)
					     : 0;
		if (err)
			return s->z->err = err;
	}
	ssize_t n = lz_read(s->z, buf, len);
	if (n == 0 && s->z->alone && s->z->ended && !s->checked_end) {
		s->checked_end = true;
		int err = lz_check_end(s->z);
		if (err)
			return s->z->err = err;
	}
	return n;
}

static uint64_t lz_scan_verified(struct codec_scan *s)
{
	return s->z->out; /* nothing checks LZMA1: the zip's CRC-32 and the segment CRCs do */
}

static void lz_scan_free(struct codec_scan *s)
{
	if (!s)
		return;
	lz_free(s->z);
	free(s);
}

struct codec_dec {
	struct lz_state *z;
};

static int lz_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		      bool alone, struct codec_dec **out)
{
	struct codec_dec *d;
	int err;

	*out = NULL;
	if (ck->uoff || ck->coff)
		return -EINVAL; /* the start is the only checkpoint there is */
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = alone ? lz_start_alone(in, &d->z) : lz_start_zip(in, aux, auxlen, &d->z);
	if (err) {
		free(d);
		return err;
	}
	*out = d;
	return 0;
}

static int lzz_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux,
		       size_t auxlen, struct codec_dec **out)
{
	return lz_dec_new(in, ck, aux, auxlen, false, out);
}

static int lza_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux,
		       size_t auxlen, struct codec_dec **out)
{
	return lz_dec_new(in, ck, aux, auxlen, true, out);
}

static ssize_t lz_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	return lz_read(d->z, buf, len);
}

static size_t lz_dec_memory(const struct codec_dec *d)
{
	return d->z->mem;
}

static void lz_dec_free(struct codec_dec *d)
{
	if (!d)
		return;
	lz_free(d->z);
	free(d);
}

static bool lzz_probe(const uint8_t *head, size_t len)
{
	return false; /* no magic: only zip names it */
}

/* See the header comment: no magic, so every field must look like an encoder wrote it. */
static bool lza_probe(const uint8_t *head, size_t len)
{
	unsigned props = head[0];
	uint64_t size;

	if (len < LZ_ALONE_HEAD + 1 || props >= 9 * 5 * 5)
		return false;
	size = le64(head + 5);
	return lz_dict_plausible(le32(head + 1)) && (size == UINT64_MAX || size < (1ull << 48)) &&
	       head[LZ_ALONE_HEAD] == 0;
}

const struct codec codec_lzma_zip = {
	.name = "lzma-zip",
	.probe = lzz_probe,
	.scan_new = lzz_scan_new,
	.scan_read = lz_scan_read,
	.scan_verified = lz_scan_verified,
	.scan_free = lz_scan_free,
	.dec_new = lzz_dec_new,
	.dec_read = lz_dec_read,
	.dec_memory = lz_dec_memory,
	.dec_free = lz_dec_free,
};

const struct codec codec_lzma = {
	.name = "lzma",
	.probe = lza_probe,
	.scan_new = lza_scan_new,
	.scan_read = lz_scan_read,
	.scan_verified = lz_scan_verified,
	.scan_free = lz_scan_free,
	.dec_new = lza_dec_new,
	.dec_read = lz_dec_read,
	.dec_memory = lz_dec_memory,
	.dec_free = lz_dec_free,
};
