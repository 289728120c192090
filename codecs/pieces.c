/* A stream made of pieces (see pieces.h): the records parsed once, a cursor over them, the
 * scan's chunks and checkpoints, and the decoders, for every codec whose container lists
 * pieces.  The codec reads a piece; this file says which piece and where its bytes go.
 */
#include "codecs/pieces.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"

#define PCS_SPACING ((uint64_t)4 << 20)

/* A cursor over the pieces of a records blob. */
struct pcs {
	const struct pcs_ops *ops;
	void *ctx;
	uint8_t *blob;	   /* hlen, header, records (a copy) */
	size_t hlen;
	const uint8_t *rec; /* the records */
	size_t nrec, next;  /* pieces; the one being read */
	size_t stop;	    /* pcs_read returns 0 here (a chunk's end) */
	uint64_t pos;	    /* bytes of rec[next] returned */
	uint64_t done;	    /* bytes of the pieces read whole */
	int err;
};

static uint64_t rec_size(const struct pcs *p, size_t i)
{
	return le64(p->rec + i * p->ops->rec_len);
}

static int pcs_start(struct pcs *p, const struct pcs_ops *ops, struct src *in, const void *blob,
		     size_t len)
{
	memset(p, 0, sizeof(*p));
	p->ops = ops;
	if (!blob || len < 4 || le32(blob) > len - 4 || (len - 4 - le32(blob)) % ops->rec_len)
		return -EINVAL;
	p->blob = malloc(len);
	if (!p->blob)
		return -ENOMEM;
	memcpy(p->blob, blob, len);
	p->hlen = le32(p->blob);
	p->rec = p->blob + 4 + p->hlen;
	p->nrec = (len - 4 - p->hlen) / ops->rec_len;
	p->stop = p->nrec;
	return ops->open(in, p->blob + 4, p->hlen, &p->ctx);
}

static void pcs_end(struct pcs *p)
{
	if (p->ops && p->ops->close)
		p->ops->close(p->ctx);
	free(p->blob);
	p->blob = NULL;
	p->ctx = NULL;
}

/* Piece p->next gave fewer bytes than its size (more when more is set): -EIO, logged. */
static ssize_t pcs_fail(struct pcs *p, bool more)
{
	tfs_log(TFS_LOG_ERR, "%s: piece %zu gives %s bytes than its %" PRIu64, p->ops->name,
		p->next, more ? "more" : "fewer", rec_size(p, p->next));
	return p->err = -EIO;
}

/* The next bytes of the pieces up to p->stop: > 0, 0 there, or -errno. */
static ssize_t pcs_read(struct pcs *p, uint8_t *buf, size_t len)
{
	if (p->err)
		return p->err;
	while (p->next < p->stop) {
		uint64_t size = rec_size(p, p->next);
		if (p->pos == size) { /* the piece is done */
			p->done += size;
			p->next++;
			p->pos = 0;
			continue;
		}
		size_t want = size - p->pos < len ? (size_t)(size - p->pos) : len;
		ssize_t n = p->ops->read(p->ctx, p->rec + p->next * p->ops->rec_len, p->pos, buf,
					 want);
		if (n < 0)
			return p->err = (int)n;
		if (n == 0 || (size_t)n > want)
			return pcs_fail(p, n != 0);
		p->pos += (uint64_t)n;
		return n;
	}
	return 0;
}

/* ---- the scan ---- */

struct codec_scan {
	struct pcs p;
	struct codec_sink sink;
	uint64_t spacing, out;
};

int pcs_scan_new(const struct pcs_ops *ops, struct src *in, const struct codec_opts *opts,
		 const struct codec_sink *sink, struct codec_scan **out)
{
	struct codec_scan *s;
	int err;

	*out = NULL;
	if (!opts || !sink)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	err = pcs_start(&s->p, ops, in, opts->params, opts->params_len);
	if (err) {
		pcs_end(&s->p);
		free(s);
		return err;
	}
	s->p.stop = 0; /* the first chunk, and its checkpoint, start with the first read */
	s->sink = *sink;
	s->spacing = opts->spacing ? opts->spacing : PCS_SPACING;
	if (ops->spacing && ops->spacing < s->spacing)
		s->spacing = ops->spacing;
	*out = s;
	return 0;
}

/* At a chunk's first piece: its checkpoint, with the header and the chunk's records. */
static int pcs_emit(struct codec_scan *s)
{
	struct pcs *p = &s->p;
	size_t rl = p->ops->rec_len, j = p->next;
	uint64_t bytes = 0;

	while (j < p->nrec && (bytes < s->spacing || j == p->next))
		bytes += rec_size(p, j++);
	p->stop = j;
	size_t alen = 4 + p->hlen + (j - p->next) * rl;
	uint8_t *aux = malloc(alen);
	if (!aux)
		return -ENOMEM;
	memcpy(aux, p->blob, 4 + p->hlen);
	memcpy(aux + 4 + p->hlen, p->rec + p->next * rl, (j - p->next) * rl);
	struct codec_ckpt ck = {.uoff = s->out, .extra = p->next, .bits = (uint32_t)(j - p->next)};
	int err = s->sink.checkpoint ? s->sink.checkpoint(s->sink.opaque, &ck, aux, alen) : 0;
	free(aux);
	return err;
}

ssize_t pcs_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	struct pcs *p = &s->p;

	for (;;) {
		if (p->err)
			return p->err;
		if (p->next >= p->stop && p->next < p->nrec) {
			/* pieces of no bytes are passed over, as pcs_read would */
			if (rec_size(p, p->next) == 0) {
				p->next++;
				continue;
			}
			int err = pcs_emit(s);
			if (err)
				return p->err = err;
		}
		ssize_t n = pcs_read(p, buf, len);
		if (n > 0)
			s->out += (uint64_t)n;
		if (n != 0 || p->next >= p->nrec)
			return n;
	}
}

uint64_t pcs_scan_verified(struct codec_scan *s)
{
	return s->p.done;
}

void pcs_scan_free(struct codec_scan *s)
{
	if (!s)
		return;
	pcs_end(&s->p);
	free(s);
}

/* ---- decoders ---- */

struct codec_dec {
	struct pcs p;
};

int pcs_dec_new(const struct pcs_ops *ops, struct src *in, const struct codec_ckpt *ck,
		const void *aux, size_t auxlen, struct codec_dec **out)
{
	struct codec_dec *d;
	int err;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = pcs_start(&d->p, ops, in, aux, auxlen);
	if (err) {
		pcs_end(&d->p);
		free(d);
		return err;
	}
	*out = d;
	return 0;
}

ssize_t pcs_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	return pcs_read(&d->p, buf, len);
}

size_t pcs_dec_memory(const struct codec_dec *d)
{
	return sizeof(*d) + d->p.ops->memory;
}

void pcs_dec_free(struct codec_dec *d)
{
	if (!d)
		return;
	pcs_end(&d->p);
	free(d);
}

/* ---- building params ---- */

static int blob_put(uint8_t **blob, size_t *len, size_t *cap, const void *p, size_t n)
{
	if (*len + n > *cap) {
		size_t c = *cap ? *cap : 256;
		while (c < *len + n)
			c *= 2;
		uint8_t *b = realloc(*blob, c);
		if (!b)
			return -ENOMEM;
		*blob = b;
		*cap = c;
	}
	if (n) /* p may be NULL then (a codec without a header) */
		memcpy(*blob + *len, p, n);
	*len += n;
	return 0;
}

int pcs_params_start(uint8_t **blob, size_t *len, size_t *cap, const void *hdr, size_t hlen)
{
	uint8_t h[4];

	*len = 0;
	put_le32(h, (uint32_t)hlen);
	int err = blob_put(blob, len, cap, h, 4);
	return err ? err : blob_put(blob, len, cap, hdr, hlen);
}

int pcs_params_add(uint8_t **blob, size_t *len, size_t *cap, const void *rec, size_t rec_len)
{
	return blob_put(blob, len, cap, rec, rec_len);
}
