/* Stored bytes: "stored", a codec of container streams only (a zip entry of method 0).
 *
 * The bytes are their own decoded form.  Stored entries still go through a codec so that
 * they are checked as compressed ones are: a small one is read whole on its first read and
 * checked against its CRC-32 before any byte is returned, a large one is read once while
 * indexing and given segment CRCs (reader.c checks them on every read).  Nothing in the
 * format checks the bytes itself: the zip's CRC-32 does (the index checks it).
 *
 * Checkpoints every opts->spacing bytes, at coff == uoff; a decoder is a cursor that reads
 * from there to the end of the window.
 */
#include "codecs/codec.h"

#include <errno.h>
#include <stdlib.h>

#define ST_SPACING_DEFAULT (4u << 20)

struct codec_scan {
	struct src *in;
	struct codec_sink sink;
	uint64_t pos, next_ckpt, spacing;
	int err;
};

static int st_scan_new(struct src *in, const struct codec_opts *opts,
		       const struct codec_sink *sink, struct codec_scan **out)
{
	struct codec_scan *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->in = in;
	s->sink = *sink;
	s->spacing = opts && opts->spacing ? opts->spacing : ST_SPACING_DEFAULT;
	*out = s;
	return 0;
}

static ssize_t st_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	if (s->err)
		return s->err;
	if (s->pos == s->next_ckpt && s->pos < src_size(s->in)) {
		struct codec_ckpt ck = {.uoff = s->pos, .coff = s->pos};
		int err = s->sink.checkpoint ? s->sink.checkpoint(s->sink.opaque, &ck, NULL, 0) : 0;
		if (err)
			return s->err = err;
		s->next_ckpt += s->spacing;
	}
	if (len > s->next_ckpt - s->pos)
		len = (size_t)(s->next_ckpt - s->pos);
	ssize_t n = src_pread(s->in, buf, len, s->pos);
	if (n < 0)
		return s->err = (int)n;
	s->pos += (uint64_t)n;
	return n;
}

static uint64_t st_scan_verified(struct codec_scan *s)
{
	return s->pos; /* nothing to check here: the CRC-32 of the entry is the check */
}

static void st_scan_free(struct codec_scan *s)
{
	free(s);
}

struct codec_dec {
	struct src *in;
	uint64_t pos;
};

static int st_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux,
		      size_t auxlen, struct codec_dec **out)
{
	struct codec_dec *d;

	*out = NULL;
	if (ck->coff != ck->uoff || ck->coff > src_size(in))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->in = in;
	d->pos = ck->coff;
	*out = d;
	return 0;
}

static ssize_t st_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	ssize_t n = src_pread(d->in, buf, len, d->pos);

	if (n > 0)
		d->pos += (uint64_t)n;
	return n;
}

static size_t st_dec_memory(const struct codec_dec *d)
{
	return sizeof(*d);
}

static void st_dec_free(struct codec_dec *d)
{
	free(d);
}

static bool st_probe(const uint8_t *head, size_t len)
{
	return false; /* no magic: only a container names it */
}

const struct codec codec_stored = {
	.name = "stored",
	.probe = st_probe,
	.scan_new = st_scan_new,
	.scan_read = st_scan_read,
	.scan_verified = st_scan_verified,
	.scan_free = st_scan_free,
	.dec_new = st_dec_new,
	.dec_read = st_dec_read,
	.dec_memory = st_dec_memory,
	.dec_free = st_dec_free,
};
