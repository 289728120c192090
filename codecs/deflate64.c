/* "deflate64": zip entries of method 9 (Deflate64, inflate64.h), a codec of container streams
 * only (its probe never says yes).
 *
 * One checkpoint, at the stream's start: a Deflate64 block can reach 64 KiB back across any
 * number of blocks, and our decoder keeps no state worth storing, so a read decodes from the
 * entry's start (the reader's live decoders continue sequential reads; small entries, the
 * common case, are decoded whole once and cached).  What checks the bytes is the zip's
 * CRC-32, as for deflate; the decoder checks the stream's structure.
 *
 * Checkpoint fields: uoff 0, coff 0, nothing else.
 */
#include "codecs/codec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "codecs/inflate64.h"
#include "common/log.h"

#define D64_IN (64u << 10)

/* A decoder over a window: the scan's and a reader's. */
struct d64 {
	struct src *in;
	uint64_t cpos, upos;
	struct inf64 *z;
	uint8_t buf[D64_IN];
	int err;
};

static int d64_init(struct d64 *d, struct src *in)
{
	d->in = in;
	d->z = inf64_new();
	return d->z ? 0 : -ENOMEM;
}

static ssize_t d64_read(struct d64 *d, uint8_t *out, size_t len)
{
	if (d->err)
		return d->err;
	for (;;) {
		size_t got;
		int r = inf64_out(d->z, out, len, &got);

		if (got) {
			d->upos += got;
			return (ssize_t)got;
		}
		if (r == INF64_END)
			return 0;
		if (r == INF64_BAD) {
			tfs_log(TFS_LOG_ERR,
				"deflate64: %s after %" PRIu64 " decoded bytes "
				"(compressed offset about %" PRIu64 ")",
				inf64_msg(d->z), d->upos, d->cpos);
			return d->err = -EIO;
		}
		uint64_t size = src_size(d->in);
		if (d->cpos >= size) {
			inf64_input_end(d->z);
			continue;
		}
		size_t want = size - d->cpos < D64_IN ? (size_t)(size - d->cpos) : D64_IN;
		ssize_t n = src_pread(d->in, d->buf, want, d->cpos);
		if (n < 0)
			return d->err = (int)n;
		if (n == 0) {
			inf64_input_end(d->z);
			continue;
		}
		d->cpos += inf64_feed(d->z, d->buf, (size_t)n);
	}
}

struct codec_scan {
	struct d64 d;
	struct codec_sink sink;
	bool started;
};

static int d64_scan_new(struct src *in, const struct codec_opts *opts,
			const struct codec_sink *sink, struct codec_scan **out)
{
	struct codec_scan *s = calloc(1, sizeof(*s));
	int err;

	(void)opts;
	*out = NULL;
	if (!s)
		return -ENOMEM;
	err = d64_init(&s->d, in);
	if (err) {
		free(s);
		return err;
	}
	s->sink = *sink;
	*out = s;
	return 0;
}

static ssize_t d64_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	if (!s->started) {
		struct codec_ckpt ck = {0};
		int err = s->sink.checkpoint ? s->sink.checkpoint(s->sink.opaque, &ck, NULL, 0) : 0;
		if (err)
			return s->d.err = err;
		s->started = true;
	}
	return d64_read(&s->d, buf, len);
}

static uint64_t d64_scan_verified(struct codec_scan *s)
{
	return s->d.upos; /* the entry's CRC-32 is the check */
}

static void d64_scan_free(struct codec_scan *s)
{
	if (s)
		inf64_free(s->d.z);
	free(s);
}

struct codec_dec {
	struct d64 d;
};

static int d64_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		       struct codec_dec **out)
{
	struct codec_dec *d;
	int err;

	(void)aux;
	(void)auxlen;
	*out = NULL;
	if (ck->uoff || ck->coff)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = d64_init(&d->d, in);
	if (err) {
		free(d);
		return err;
	}
	*out = d;
	return 0;
}

static ssize_t d64_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	return d64_read(&d->d, buf, len);
}

static size_t d64_dec_memory(const struct codec_dec *d)
{
	(void)d;
	return sizeof(*d) + inf64_memory();
}

static void d64_dec_free(struct codec_dec *d)
{
	if (d)
		inf64_free(d->d.z);
	free(d);
}

static bool d64_probe(const uint8_t *head, size_t len)
{
	(void)head;
	(void)len;
	return false; /* no magic: only a container names it */
}

const struct codec codec_deflate64 = {
	.name = "deflate64",
	.probe = d64_probe,
	.scan_new = d64_scan_new,
	.scan_read = d64_scan_read,
	.scan_verified = d64_scan_verified,
	.scan_free = d64_scan_free,
	.dec_new = d64_dec_new,
	.dec_read = d64_dec_read,
	.dec_memory = d64_dec_memory,
	.dec_free = d64_dec_free,
};
