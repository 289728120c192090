/* "ppmd-zip": zip entries of method 98 (PPMd var.I rev. 1, ppmd8.h), a codec of container
 * streams only (its probe never says yes).
 *
 * The entry's data opens with 2 bytes of parameters (order, memory, restore method) and
 * goes on with the range coder's bytes.  The format does not require an end marker (7-Zip
 * writes one after the data; an encoder may not), so the size comes from the zip directory,
 * as the stream's params (8 bytes, little-endian, as for lzma-zip): the entry decodes to
 * exactly that many bytes, and there the range coder must end cleanly, after the end marker
 * if there is one (ppmd8_finished), with nothing left of the data but what remains of the
 * range coder's flush (the encoder writes 4 bytes, the decoder reads 1 to 4 of them) -- else
 * -EIO.  An end marker before the size is -EIO too.
 *
 * One checkpoint, at the stream's start (with the size as its aux): PPMd's model is all that
 * came before, up to 256 MiB of it, so a read decodes from the entry's start (the reader's
 * live decoders continue sequential reads; small entries, the common case, are decoded whole
 * once and cached).  What checks the bytes is the zip's CRC-32, as for deflate.
 *
 * Checkpoint fields: uoff 0, coff 0, nothing else; aux: the size, 8 bytes.
 */
#include "codecs/codec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "codecs/ppmd/ppmd8.h"
#include "common/byteio.h"
#include "common/log.h"

#define PZ_IN (64u << 10)
#define PZ_PROPS 2
#define PZ_FLUSH 4 /* the encoder flushes its 4 bytes of low; the decoder needs 1 to 4 */

/* A decoder over a window: the scan's and a reader's. */
struct pz {
	struct src *in;
	uint64_t cpos, upos, usize;
	uint32_t mem;
	struct ppmd8 *z;
	bool checked_end;
	int err;
	uint8_t buf[PZ_IN];
};

static struct pz *pz_free(struct pz *d)
{
	if (d)
		ppmd8_free(d->z);
	free(d);
	return NULL;
}

/* Reads the parameters and starts the decoder: 0 or -errno (logged). */
static int pz_new(struct src *in, const void *params, size_t params_len, struct pz **out)
{
	uint8_t props[PZ_PROPS];
	unsigned order, restore;
	const char *why = NULL;
	struct pz *d;
	int err;

	*out = NULL;
	if (!params || params_len != 8)
		return -EINVAL;
	if (src_pread_full(in, props, sizeof(props), 0)) {
		tfs_log(TFS_LOG_ERR, "ppmd-zip: the entry ends before its PPMd parameters");
		return -EIO;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->in = in;
	d->usize = le64(params);
	d->cpos = PZ_PROPS;
	if (ppmd8_props(props, &order, &d->mem, &restore, &why)) {
		tfs_log(TFS_LOG_ERR, "ppmd-zip: %s", why);
		pz_free(d);
		return -EIO;
	}
	err = ppmd8_new(order, d->mem, restore, &d->z);
	if (err) {
		pz_free(d);
		return err;
	}
	*out = d;
	return 0;
}

/* Feeds the decoder what fits of the rest of the entry; tells it when that is all.  0 or the
 * source's -errno. */
static int pz_fill(struct pz *d)
{
	uint64_t size = src_size(d->in);

	if (d->cpos >= size) {
		ppmd8_input_end(d->z);
		return 0;
	}
	size_t want = size - d->cpos < PZ_IN ? (size_t)(size - d->cpos) : PZ_IN;
	ssize_t n = src_pread(d->in, d->buf, want, d->cpos);
	if (n < 0)
		return (int)n;
	if (n == 0) {
		ppmd8_input_end(d->z);
		return 0;
	}
	d->cpos += ppmd8_feed(d->z, d->buf, (size_t)n);
	return 0;
}

static int pz_fail(struct pz *d, const char *what)
{
	tfs_log(TFS_LOG_ERR,
		"ppmd-zip: %s after %" PRIu64 " of %" PRIu64 " decoded bytes "
		"(compressed offset about %" PRIu64 ")",
		what, d->upos, d->usize, d->cpos - ppmd8_unused(d->z));
	return d->err = -EIO;
}

/* At the stated size: the range coder must end there, on the entry's last bytes. */
static int pz_check_end(struct pz *d)
{
	int err;

	d->checked_end = true;
	while (d->cpos < src_size(d->in)) {
		uint64_t before = d->cpos;

		err = pz_fill(d);
		if (err)
			return d->err = err;
		if (d->cpos == before)
			break; /* the decoder's buffer is full: more than a flush is left */
	}
	if (d->cpos >= src_size(d->in))
		ppmd8_input_end(d->z);
	if (!ppmd8_finished(d->z))
		return pz_fail(d, "the PPMd data does not end where the entry's size says");
	if (ppmd8_unused(d->z) + (src_size(d->in) - d->cpos) > PZ_FLUSH)
		return pz_fail(d, "bytes follow the end of the PPMd data");
	return 0;
}

static ssize_t pz_read(struct pz *d, uint8_t *out, size_t len)
{
	if (d->err)
		return d->err;
	if (d->upos == d->usize) {
		int err = d->checked_end ? 0 : pz_check_end(d);

		return err ? err : 0;
	}
	if (len > d->usize - d->upos)
		len = (size_t)(d->usize - d->upos);
	for (;;) {
		size_t got;
		int r = ppmd8_out(d->z, out, len, &got);

		if (got) {
			d->upos += got;
			return (ssize_t)got;
		}
		if (r == PPMD8_END)
			return pz_fail(d, "an end marker comes before the entry's size");
		if (r == PPMD8_BAD)
			return pz_fail(d, ppmd8_msg(d->z));
		int err = pz_fill(d);
		if (err)
			return d->err = err;
	}
}

/* ---- the scan: a decoder from the start, and its one checkpoint ---- */

struct codec_scan {
	struct pz *d;
	struct codec_sink sink;
	bool started;
};

static int pz_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		       struct codec_scan **out)
{
	struct codec_scan *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	err = pz_new(in, opts ? opts->params : NULL, opts ? opts->params_len : 0, &s->d);
	if (err) {
		free(s);
		return err;
	}
	s->sink = *sink;
	*out = s;
	return 0;
}

static ssize_t pz_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	if (!s->started) {
		struct codec_ckpt ck = {0};
		uint8_t size[8];
		int err;

		put_le64(size, s->d->usize);
		err = s->sink.checkpoint ? s->sink.checkpoint(s->sink.opaque, &ck, size, 8) : 0;
		if (err)
			return s->d->err = err;
		s->started = true;
	}
	return pz_read(s->d, buf, len);
}

static uint64_t pz_scan_verified(struct codec_scan *s)
{
	return s->d->upos; /* the entry's CRC-32 is the check */
}

static void pz_scan_free(struct codec_scan *s)
{
	if (s)
		pz_free(s->d);
	free(s);
}

struct codec_dec {
	struct pz *d;
};

static int pz_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		      struct codec_dec **out)
{
	struct codec_dec *d;
	int err;

	*out = NULL;
	if (ck->uoff || ck->coff)
		return -EINVAL; /* the start is the only checkpoint there is */
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = pz_new(in, aux, auxlen, &d->d);
	if (err) {
		free(d);
		return err;
	}
	*out = d;
	return 0;
}

static ssize_t pz_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	return pz_read(d->d, buf, len);
}

static size_t pz_dec_memory(const struct codec_dec *d)
{
	return sizeof(*d) + sizeof(*d->d) + ppmd8_memory(d->d->mem);
}

static void pz_dec_free(struct codec_dec *d)
{
	if (d)
		pz_free(d->d);
	free(d);
}

static bool pz_probe(const uint8_t *head, size_t len)
{
	(void)head;
	(void)len;
	return false; /* no magic: only a container names it */
}

const struct codec codec_ppmd_zip = {
	.name = "ppmd-zip",
	.probe = pz_probe,
	.scan_new = pz_scan_new,
	.scan_read = pz_scan_read,
	.scan_verified = pz_scan_verified,
	.scan_free = pz_scan_free,
	.dec_new = pz_dec_new,
	.dec_read = pz_dec_read,
	.dec_memory = pz_dec_memory,
	.dec_free = pz_dec_free,
};
