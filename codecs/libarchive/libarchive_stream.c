/* "libarchive": the decoded data of the entries of an archive that libarchive reads (rar,
 * cab, lha, xar, ...; see containers/libarchive.c), one after the other, as one stream.  A codec of
 * container streams only (its probe never says yes).
 *
 * The container lists the entries whose bytes must be decoded, in archive order, as the
 * stream's params: records of 12 bytes, the entry's number in the archive (0-based, counting
 * every header libarchive reads; 4 bytes) and its size (8 bytes), little-endian.  The stream
 * is their data, each entry's `size` bytes (holes of sparse entries read as zeros) -- so a
 * member's data_off in it is the sizes of the entries before it.  The stream's window is the
 * whole archive file: libarchive parses it from its start.
 *
 * Checkpoints are entry starts: the scan cuts the records into chunks of at least
 * opts->spacing bytes (an entry is never split), and each checkpoint's aux is its chunk's
 * records.  A decoder opens the archive again, reads headers up to its first entry (libarchive
 * skips the data of the entries before it: by seeking where the format allows, by decoding
 * where it does not -- a solid rar), and decodes its chunk's entries; it returns 0 at the end
 * of its chunk.  A random read thus costs the entries of one chunk, and what libarchive needs
 * to reach them.
 *
 * Checks: what libarchive checks (rar's CRCs, cab's checksums, xar's digests); an entry that
 * decodes to more or fewer bytes than its size, a header that is missing or has another size
 * than the index says, and every libarchive error are -EIO, logged with the entry's number.
 * Data that ends before its size is damage too, except where the gap is a hole: a sparse
 * entry's, and a zisofs entry's tail (iso9660), which libarchive leaves out (all zeros).
 *
 * Checkpoint fields: uoff, ulen as always; coff 0; extra the number of the chunk's first
 * entry; bits the number of entries in the chunk; aux their records.
 */
#include "codecs/codec.h"

#include <stdio.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"
#include "codecs/libarchive/la_dl.h"
#include "codecs/libarchive/libarchive_src.h"

#define LAS_REC 12
#define LAS_SPACING ((uint64_t)4 << 20)
#define LAS_MEMORY ((size_t)16 << 20) /* a guess at libarchive's own buffers and dictionaries */

struct las_rec {
	uint32_t nr;
	uint64_t size;
};

/* Decodes the data of a list of entries, in order. */
struct las {
	struct la_src l;
	bool open;
	struct las_rec *rec;
	size_t nrec, next; /* records; the one being decoded (or next) */
	size_t stop;	   /* las_read returns 0 at this record (the scan: its chunk's end) */
	uint64_t headers;  /* headers read so far */
	bool active;	   /* rec[next]'s header has been read */
	uint64_t epos;	   /* bytes of the entry returned */
	const uint8_t *blk; /* a data block not yet returned whole */
	size_t blen;
	uint64_t boff;	    /* its offset in the entry */
	bool have_blk, eof;
	bool sparse; /* the entry has holes: blocks may skip ahead, the tail may be one */
	uint64_t done; /* bytes of the entries that ended, libarchive's checks passed */
	int err;
};

static int las_records(const uint8_t *p, size_t len, struct las *s)
{
	if (len % LAS_REC)
		return -EINVAL;
	s->nrec = len / LAS_REC;
	s->rec = calloc(s->nrec ? s->nrec : 1, sizeof(*s->rec));
	if (!s->rec)
		return -ENOMEM;
	for (size_t i = 0; i < s->nrec; i++) {
		s->rec[i].nr = le32(p + i * LAS_REC);
		s->rec[i].size = le64(p + i * LAS_REC + 4);
		if (i && s->rec[i].nr <= s->rec[i - 1].nr)
			return -EINVAL;
	}
	return 0;
}

static int las_start(struct las *s, struct src *in, const void *recs, size_t len)
{
	int err;

	memset(s, 0, sizeof(*s));
	err = las_records(recs, len, s);
	if (err)
		return err;
	s->stop = s->nrec;
	err = la_open(&s->l, in);
	s->open = true;
	if (err == -EINVAL) {
		tfs_log(TFS_LOG_ERR, "libarchive: cannot read the archive: %s", la_error(&s->l));
		err = -EIO;
	}
	return err;
}

static void las_end(struct las *s)
{
	if (s->open)
		la_close(&s->l);
	free(s->rec);
	memset(s, 0, sizeof(*s));
}

static ssize_t las_fail(struct las *s, int err, const char *what)
{
	tfs_log(TFS_LOG_ERR, "libarchive: entry %" PRIu32 ": %s", s->rec[s->next].nr, what);
	s->err = err;
	return err;
}

/* Reads headers up to rec[next]'s.  0 or -errno. */
static int las_seek_entry(struct las *s)
{
	const struct las_rec *r = &s->rec[s->next];
	struct archive_entry *e;

	for (;;) {
		int ret = sym_archive_read_next_header(s->l.a, &e);
		if (ret == ARCHIVE_EOF)
			return (int)las_fail(s, -EIO, "not in the archive (has it changed?)");
		if (ret < ARCHIVE_WARN) {
			char msg[300];
			snprintf(msg, sizeof(msg), "cannot read the headers before it: %s",
				 la_error(&s->l));
			return (int)las_fail(s, s->l.io_err ? s->l.io_err : -EIO, msg);
		}
		if (s->headers++ == r->nr)
			break;
		if (s->headers > r->nr)
			return (int)las_fail(s, -EIO, "not in the archive (has it changed?)");
	}
	if (sym_archive_entry_size_is_set(e) && (uint64_t)sym_archive_entry_size(e) != r->size)
		return (int)las_fail(s, -EIO, "its size is not the one indexed (has it changed?)");
	s->active = true;
	s->epos = 0;
	s->have_blk = s->eof = false;
	/* iso9660's entries that reach this stream are zisofs-compressed: libarchive stops
	 * at the end of the compressed bytes, and the blocks past them, all zeros (their
	 * pointers equal), it does not give at all; bsdtar's extraction extends the file to
	 * its size.  So their tail reads as zeros, like a sparse entry's. */
	s->sparse = sym_archive_entry_sparse_count(e) > 0 ||
		    (sym_archive_format(s->l.a) & ARCHIVE_FORMAT_BASE_MASK) == ARCHIVE_FORMAT_ISO9660;
	return 0;
}

static ssize_t las_read(struct las *s, uint8_t *buf, size_t len)
{
	while (!s->err) {
		if (!s->active) {
			if (s->next >= s->stop)
				return 0;
			int err = las_seek_entry(s);
			if (err)
				return err;
		}
		const struct las_rec *r = &s->rec[s->next];
		if (s->epos == r->size && s->eof) {
			s->active = false;
			s->next++;
			s->done += r->size;
			continue;
		}
		if (!s->have_blk && !s->eof) {
			const void *p;
			size_t n;
			la_int64_t off;
			int ret = sym_archive_read_data_block(s->l.a, &p, &n, &off);
			if (ret == ARCHIVE_EOF) {
				s->eof = true;
				continue;
			}
			if (ret < ARCHIVE_WARN || off < 0) {
				char msg[300];
				snprintf(msg, sizeof(msg), "cannot decode it: %s", la_error(&s->l));
				return las_fail(s, s->l.io_err ? s->l.io_err : -EIO, msg);
			}
			if ((uint64_t)off < s->epos || (uint64_t)off > r->size ||
			    n > r->size - (uint64_t)off)
				return las_fail(s, -EIO, "it decodes to more bytes than its size");
			if (!n)
				continue; /* (libarchive gives empty blocks, even with NULL) */
			s->blk = p;
			s->blen = n;
			s->boff = (uint64_t)off;
			s->have_blk = true;
		}
		/* zeros up to the next block (a hole), or after the last up to the size (a sparse
		 * entry's tail); any other gap is data missing */
		uint64_t upto = s->have_blk ? s->boff : r->size;
		if (s->epos < upto && !s->sparse)
			return las_fail(s, -EIO, "its data ends before its size");
		if (s->epos < upto) {
			size_t n = upto - s->epos < len ? (size_t)(upto - s->epos) : len;
			memset(buf, 0, n);
			s->epos += n;
			return (ssize_t)n;
		}
		if (s->have_blk) {
			size_t done = (size_t)(s->epos - s->boff), n = s->blen - done;
			if (n > len)
				n = len;
			memcpy(buf, s->blk + done, n);
			s->epos += n;
			if (done + n == s->blen)
				s->have_blk = false;
			if (n)
				return (ssize_t)n;
		}
	}
	return s->err;
}

/* ---- the scan ---- */

struct codec_scan {
	struct las d;
	struct codec_sink sink;
	uint64_t spacing;
	uint64_t out;
};

static int las_scan_new(struct src *in, const struct codec_opts *opts,
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
	err = las_start(&s->d, in, opts->params, opts->params_len);
	if (err) {
		las_end(&s->d);
		free(s);
		return err;
	}
	s->d.stop = 0; /* the first chunk, and its checkpoint, start with the first read */
	s->sink = *sink;
	s->spacing = opts->spacing ? opts->spacing : LAS_SPACING;
	*out = s;
	return 0;
}

/* At a chunk's first entry: its checkpoint, with the chunk's records. */
static int las_emit(struct codec_scan *s)
{
	struct las *d = &s->d;
	uint64_t bytes = 0;
	size_t j = d->next;

	while (j < d->nrec && (bytes < s->spacing || j == d->next))
		bytes += d->rec[j++].size;
	d->stop = j; /* las_read ends the chunk there */
	uint8_t *aux = malloc((j - d->next) * LAS_REC);
	if (!aux)
		return -ENOMEM;
	for (size_t i = d->next; i < j; i++) {
		put_le32(aux + (i - d->next) * LAS_REC, d->rec[i].nr);
		put_le64(aux + (i - d->next) * LAS_REC + 4, d->rec[i].size);
	}
	struct codec_ckpt ck = {.uoff = s->out, .extra = d->rec[d->next].nr,
				.bits = (uint32_t)(j - d->next)};
	int err = s->sink.checkpoint ? s->sink.checkpoint(s->sink.opaque, &ck, aux,
							  (j - d->next) * LAS_REC)
				     : 0;
	free(aux);
	return err;
}

static ssize_t las_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	struct las *d = &s->d;

	for (;;) {
		if (d->err)
			return d->err;
		/* at a chunk's end (the records are never empty): the next chunk's checkpoint */
		if (!d->active && d->next < d->nrec && d->next >= d->stop) {
			int err = las_emit(s);
			if (err)
				return d->err = err;
		}
		ssize_t n = las_read(d, buf, len);
		if (n > 0)
			s->out += (uint64_t)n;
		if (n != 0 || d->next >= d->nrec)
			return n;
	}
}

static uint64_t las_scan_verified(struct codec_scan *s)
{
	/* the entries libarchive read to their end (rar's CRC is checked there) */
	return s->d.done < s->out ? s->d.done : s->out;
}

static void las_scan_free(struct codec_scan *s)
{
	if (!s)
		return;
	las_end(&s->d);
	free(s);
}

/* ---- decoders ---- */

struct codec_dec {
	struct las d;
};

static int las_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux,
		       size_t auxlen, struct codec_dec **out)
{
	struct codec_dec *d;
	int err;

	*out = NULL;
	if (!aux || !auxlen)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = las_start(&d->d, in, aux, auxlen);
	if (err) {
		las_end(&d->d);
		free(d);
		return err;
	}
	*out = d;
	return 0;
}

static ssize_t las_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	return las_read(&d->d, buf, len);
}

static size_t las_dec_memory(const struct codec_dec *d)
{
	return sizeof(*d) + LA_BUF + LAS_MEMORY;
}

static void las_dec_free(struct codec_dec *d)
{
	if (!d)
		return;
	las_end(&d->d);
	free(d);
}

static bool las_probe(const uint8_t *head, size_t len)
{
	return false; /* only the container names it */
}

const struct codec codec_libarchive = {
	.name = "libarchive",
	.probe = las_probe,
	.scan_new = las_scan_new,
	.scan_read = las_scan_read,
	.scan_verified = las_scan_verified,
	.scan_free = las_scan_free,
	.dec_new = las_dec_new,
	.dec_read = las_dec_read,
	.dec_memory = las_dec_memory,
	.dec_free = las_dec_free,
};
