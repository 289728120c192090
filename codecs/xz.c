/* xz codec (liblzma): checkpoints are the file's own blocks.
 *
 * An .xz file is one or more streams, each a header, independent blocks, an index listing every
 * block's unpadded and uncompressed size, and a footer; streams may be separated by stream
 * padding (zero bytes in groups of four).  Every block starts with a fresh dictionary, so a block
 * boundary is a perfect checkpoint: nothing from before it is needed, no window is stored, and
 * one checkpoint per block is all the format offers -- `xz -T` makes blocks of 3 x dictionary
 * (24 MiB at -6), pixz of 2 x dictionary (16 MiB, plus its own tar index as the last block),
 * plain single-threaded `xz` one block for the whole file, which can only be read sequentially.
 *
 * The scan reads the indexes first (lzma_file_info_decoder: it seeks to each stream's footer
 * and walks backwards through multi-stream files and their padding), then decodes the blocks the
 * index lists on opts->threads worker threads.  Each block is a job; jobs are handed out in
 * order, at most `depth` (workers + 1) ahead of the one the caller is reading, and each job's
 * decoded bytes queue in 1 MiB chunks, at most job_cap bytes per job.  So memory stays near
 * depth x min(block size, job_cap) plus one decoder per worker (9 MiB at -6) whatever the block
 * size: a 24 MiB block is decoded whole while the caller reads the one before it, a 1.9 GB
 * single block streams through one worker.  The caller's thread only copies bytes and calls the
 * sink, which keeps the sink's rules trivially: a job's checkpoint is emitted just before its
 * first byte is returned (never for a block that decodes to nothing, so uoffs strictly increase).
 *
 * When the index cannot be read -- a truncated file has no footer, a damaged index fails its
 * CRC, a source of unknown size cannot be read from the end -- one walker thread reads the file
 * front to back instead: stream header, block header, block decoder until the block's end (which
 * verifies the block's check and, when the header states them, its sizes), the next header, and
 * at the end of each stream the index is checked against the blocks seen (lzma_index_hash) and
 * the footer against the header.  It emits a checkpoint per block it found and stops at the first
 * damage with -EIO.  Trailing garbage after the last stream is noticed and ignored: the last
 * valid footer is searched for in the last MiB and the index read up to it; if the garbage is
 * larger, the walk notices it after the last complete stream.  Bytes after the last footer that
 * start another stream header are not garbage but a damaged stream, and are walked.
 *
 * Every block is decoded by lzma_block_header_decode + lzma_block_decoder with the check type of
 * its stream and, from the index, its compressed and uncompressed sizes, so liblzma verifies the
 * sizes, the block padding and the check (none, CRC32, CRC64, SHA-256).  The decoded bytes of a
 * block that fails are still returned up to the failure (they are what the data says, unverified)
 * and scan_verified() stays at the end of the last block that passed -- unless the block failed
 * only because the file ends inside it (a half-finished copy, no sign of damage): then what
 * was decoded counts as verified, as xz -dc would have written it out.  A block whose filters
 * would need more than XZ_MEMLIMIT of memory (a dictionary above 1.5 GiB, which no xz preset
 * makes) is refused rather than allocated.
 *
 * Checkpoint fields for xz (all from the file's index, or from the block header in the walk):
 *   uoff   uncompressed offset of the block in the whole file (all streams before it included)
 *   coff   compressed offset of the block header
 *   clen   the block's unpadded size (header + compressed data + check, without block padding),
 *          or 0 if unknown (a walked block whose header does not state its compressed size)
 *   extra  the block's uncompressed size, or 0 if unknown (same condition)
 *   bits   the check type of the block's stream (LZMA_CHECK_NONE/CRC32/CRC64/SHA256; 0..15)
 *   flags  the block's number in the file, 1-based (for messages; UINT32_MAX if larger)
 * No aux blob.  A decoder decodes exactly one block: dec_read returns 0 at its end.
 */
#include "codecs/codec.h"

#include <errno.h>
#include <inttypes.h>
#include <lzma.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "codecs/pipeline.h"
#include "codecs/trailing.h"
#include "codecs/liberr.h"

#define XZ_MEMLIMIT ((uint64_t)1537 << 20)	/* decoder memory: 1.5 GiB dictionary + margin */
#define XZ_INDEX_MEMLIMIT ((uint64_t)512 << 20) /* lzma_index of all streams (~30 M blocks) */
#define XZ_CHUNK ((size_t)1 << 20)		/* decoded bytes per queued chunk */
#define XZ_BUDGET ((size_t)256 << 20)		/* decoded bytes a scan queues, all jobs */
#define XZ_JOB_CAP_MIN ((size_t)4 << 20)	/* ... and per job, within these bounds */
#define XZ_JOB_CAP_MAX ((size_t)32 << 20)
#define XZ_MAX_THREADS 64
#define XZ_SCAN_INBUF ((size_t)256 << 10)    /* compressed bytes read at once by a scan worker */
#define XZ_DEC_INBUF ((size_t)64 << 10)	     /* ... by a decoder (random reads stay small) */
#define XZ_INFO_BUF ((size_t)64 << 10)	     /* ... by the index reader */
#define XZ_FOOTER_WINDOW ((uint64_t)1 << 20) /* trailing garbage searched for a footer */
#define XZ_MSG 256

_Static_assert(XZ_CHUNK <= XZ_JOB_CAP_MIN, "a job must be able to queue one chunk");
_Static_assert(XZ_BUDGET / (XZ_MAX_THREADS + 1) >= XZ_CHUNK, "budget too small");

static const uint8_t xz_magic[6] = {0xFD, '7', 'z', 'X', 'Z', 0x00};

static const char *xz_strerror(lzma_ret ret)
{
	switch (ret) {
	case LZMA_DATA_ERROR:
		return "corrupt data or integrity check mismatch";
	case LZMA_FORMAT_ERROR:
		return "not in xz format";
	case LZMA_OPTIONS_ERROR:
		return "unsupported options (corrupt, or made by a newer xz)";
	case LZMA_BUF_ERROR:
		return "unexpected end of input";
	case LZMA_MEM_ERROR:
		return "out of memory";
	case LZMA_MEMLIMIT_ERROR:
		return "memory limit reached";
	case LZMA_UNSUPPORTED_CHECK:
		return "unsupported integrity check type";
	case LZMA_PROG_ERROR:
		return "invalid arguments to liblzma";
	default:
		return "unexpected liblzma error";
	}
}

static bool xz_probe(const uint8_t *head, size_t len)
{
	return len >= sizeof(xz_magic) && memcmp(head, xz_magic, sizeof(xz_magic)) == 0;
}

/* ---- Decoding one block: shared by the scan's workers and by decoders ---------------------- */

struct xz_blk {
	struct src *in;
	lzma_stream strm; /* reused from block to block: liblzma keeps its allocations */
	lzma_block block; /* must outlive the block decoder, which writes sizes and check here */
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	uint64_t number; /* block number in the file (messages) */
	uint64_t coff;	 /* compressed offset of the block header */
	uint64_t in_off; /* next compressed byte to read */
	uint64_t in_end; /* end of the block (with padding and check), or UINT64_MAX */
	uint64_t out;	 /* bytes decoded so far */
	uint64_t mem;	 /* memory the block's filters need (dictionary and state) */
	uint8_t *inbuf;
	size_t inbuf_size;
	bool in_eof;	/* no more input: in_end reached or the source ended */
	bool src_short; /* ... because the source ended */
	bool truncated; /* failed only because the file ends inside it: no sign of damage */
	bool end;	/* the block is complete and verified */
	int err;	/* sticky -errno, described by msg */
	char msg[XZ_MSG];
};

static int xz_blk_init(struct xz_blk *b, struct src *in, size_t inbuf_size)
{
	memset(b, 0, sizeof(*b));
	b->strm = (lzma_stream)LZMA_STREAM_INIT;
	b->filters[0].id = LZMA_VLI_UNKNOWN;
	b->in = in;
	b->inbuf_size = inbuf_size;
	b->inbuf = malloc(inbuf_size);
	return b->inbuf ? 0 : -ENOMEM;
}

static void xz_blk_fini(struct xz_blk *b)
{
	lzma_end(&b->strm);
	free(b->inbuf);
	b->inbuf = NULL;
}

__attribute__((format(printf, 3, 4))) static int xz_blk_fail(struct xz_blk *b, int err,
							     const char *fmt, ...);

/* Records err (sticky) and a message naming the block, for the caller to log. */
static int xz_blk_fail(struct xz_blk *b, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(b->msg, sizeof(b->msg),
		     "xz: block %" PRIu64 " at compressed offset %" PRIu64 ": ", b->number,
		     b->coff);
	if (n < 0 || (size_t)n >= sizeof(b->msg))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(b->msg + n, sizeof(b->msg) - (size_t)n, fmt, ap);
	va_end(ap);
	b->err = err;
	return err;
}

static void xz_free_filter_options(lzma_filter *filters)
{
	for (size_t i = 0; i < LZMA_FILTERS_MAX && filters[i].id != LZMA_VLI_UNKNOWN; i++) {
		free(filters[i].options);
		filters[i].options = NULL;
	}
}

/* Reads and decodes the block header at ck->coff and starts the block decoder.  ck->clen and
 * ck->extra, when not 0, are checked against the header and handed to liblzma to verify. */
static int xz_blk_start(struct xz_blk *b, const struct codec_ckpt *ck)
{
	uint8_t hdr[LZMA_BLOCK_HEADER_SIZE_MAX];
	uint64_t mem;
	lzma_ret ret;
	ssize_t n;
	int err;

	b->number = ck->flags;
	b->coff = ck->coff;
	b->out = 0;
	b->in_eof = b->src_short = b->end = b->truncated = false;
	b->err = 0;
	b->msg[0] = '\0';
	b->strm.next_in = NULL;
	b->strm.avail_in = 0;
	if (ck->bits > LZMA_CHECK_ID_MAX)
		return xz_blk_fail(b, -EINVAL, "invalid check type %" PRIu32 " in checkpoint",
				   ck->bits);

	n = src_pread(b->in, hdr, 1, ck->coff);
	if (n < 0)
		return xz_blk_fail(b, (int)n, "read error");
	if (n == 0)
		return xz_blk_fail(b, -EIO, "the file ends before the block header (truncated)");
	if (hdr[0] == 0)
		return xz_blk_fail(b, -EIO, "no block header here (an index starts here)");
	memset(&b->block, 0, sizeof(b->block));
	b->block.version = 1;
	b->block.check = (lzma_check)ck->bits;
	b->block.filters = b->filters;
	b->block.header_size = lzma_block_header_size_decode(hdr[0]);
	n = src_pread(b->in, hdr + 1, b->block.header_size - 1, ck->coff + 1);
	if (n < 0)
		return xz_blk_fail(b, (int)n, "read error");
	if ((size_t)n < b->block.header_size - 1)
		return xz_blk_fail(b, -EIO, "the file ends inside the block header (truncated)");
	ret = lzma_block_header_decode(&b->block, NULL, hdr);
	if (ret != LZMA_OK)
		return xz_blk_fail(b, liberr_lzma(ret), "bad block header: %s", xz_strerror(ret));

	/* From here the filters hold allocated options: leave through out. */
	if (ck->clen && lzma_block_compressed_size(&b->block, ck->clen) != LZMA_OK) {
		err =
		    xz_blk_fail(b, -EIO, "block header does not match the index (compressed size)");
		goto out;
	}
	if (ck->extra) {
		if (b->block.uncompressed_size != LZMA_VLI_UNKNOWN &&
		    b->block.uncompressed_size != ck->extra) {
			err = xz_blk_fail(
			    b, -EIO, "block header does not match the index (uncompressed size)");
			goto out;
		}
		b->block.uncompressed_size = ck->extra;
	}
	mem = lzma_raw_decoder_memusage(b->filters);
	if (mem == UINT64_MAX) {
		err = xz_blk_fail(b, -EIO, "unsupported filter chain");
		goto out;
	}
	b->mem = mem;
	if (mem > XZ_MEMLIMIT) {
		err = xz_blk_fail(b, -EIO,
				  "decoding needs %" PRIu64
				  " MiB of memory (its dictionary), more than "
				  "the %" PRIu64 " MiB allowed; refusing (hostile or unusual file)",
				  mem >> 20, XZ_MEMLIMIT >> 20);
		goto out;
	}
	ret = lzma_block_decoder(&b->strm, &b->block);
	if (ret != LZMA_OK) {
		err = xz_blk_fail(b, liberr_lzma(ret), "cannot start the block decoder: %s",
				  xz_strerror(ret));
		goto out;
	}
	b->in_off = ck->coff + b->block.header_size;
	b->in_end = UINT64_MAX;
	if (b->block.compressed_size != LZMA_VLI_UNKNOWN) {
		uint64_t total = lzma_block_total_size(&b->block);
		if (total)
			b->in_end = ck->coff + total;
	}
	if (!lzma_check_is_supported(b->block.check))
		TFS_DEBUG("xz: block %" PRIu64 ": check type %d not supported, not verified",
			  b->number, (int)b->block.check);
	err = 0;
out:
	/* The decoder has copied what it needs from the filter options. */
	xz_free_filter_options(b->filters);
	return err;
}

/* Decodes up to len bytes of the block: > 0, 0 at the verified end of the block, or -errno
 * (b->msg says what went wrong).  Bytes decoded before an error are returned first. */
static ssize_t xz_blk_read(struct xz_blk *b, uint8_t *out, size_t len)
{
	size_t got;

	if (b->err)
		return b->err;
	if (b->end || len == 0)
		return 0;
	b->strm.next_out = out;
	b->strm.avail_out = len;
	while (b->strm.avail_out > 0) {
		size_t in_before, out_before;
		lzma_ret ret;

		if (b->strm.avail_in == 0 && !b->in_eof) {
			size_t want = b->inbuf_size;
			ssize_t n;

			if (b->in_end != UINT64_MAX && b->in_end - b->in_off < want)
				want = (size_t)(b->in_end - b->in_off);
			n = want ? src_pread(b->in, b->inbuf, want, b->in_off) : 0;
			if (n < 0) {
				xz_blk_fail(b, (int)n, "read error at compressed offset %" PRIu64,
					    b->in_off);
				break;
			}
			if ((size_t)n < want || want == 0) {
				b->in_eof = true;
				b->src_short = (size_t)n < want || b->in_end == UINT64_MAX;
			}
			b->in_off += (uint64_t)n;
			b->strm.next_in = b->inbuf;
			b->strm.avail_in = (size_t)n;
		}
		in_before = b->strm.avail_in;
		out_before = b->strm.avail_out;
		ret = lzma_code(&b->strm, LZMA_RUN);
		if (ret == LZMA_STREAM_END) {
			b->end = true;
			break;
		}
		if (ret != LZMA_OK) {
			xz_blk_fail(b, liberr_lzma(ret), "%s, after %" PRIu64 " decoded bytes",
				    xz_strerror(ret), b->out + (len - b->strm.avail_out));
			break;
		}
		if (in_before == 0 && b->in_eof && b->strm.avail_out == out_before) {
			b->truncated = b->src_short;
			xz_blk_fail(b, -EIO, "%s, after %" PRIu64 " decoded bytes",
				    b->src_short ? "the file ends inside the block (truncated)"
						 : "the compressed data runs past the block's end",
				    b->out + (len - b->strm.avail_out));
			break;
		}
	}
	got = len - b->strm.avail_out;
	b->strm.next_out = NULL;
	b->strm.avail_out = 0;
	b->out += got;
	return got ? (ssize_t)got : b->err;
}

/* ---- Reading the index -------------------------------------------------------------------- */

/* Reads the indexes of a file of fsize bytes (lzma_file_info_decoder).  0 and *idx set, -ENOMEM,
 * or another -errno with why saying what is wrong. */
static int xz_file_info(struct src *in, uint64_t fsize, lzma_index **idx, char *why, size_t wlen)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	uint64_t pos = 0, fed = 0;
	unsigned stalls = 0;
	uint8_t *buf;
	lzma_ret ret;
	int err;

	*idx = NULL;
	buf = malloc(XZ_INFO_BUF);
	if (!buf)
		return -ENOMEM;
	ret = lzma_file_info_decoder(&strm, idx, XZ_INDEX_MEMLIMIT, fsize);
	if (ret != LZMA_OK) {
		snprintf(why, wlen, "%s", xz_strerror(ret));
		err = liberr_lzma(ret);
		goto out;
	}
	for (;;) {
		if (strm.avail_in == 0 && pos < fsize) {
			size_t want =
			    fsize - pos < XZ_INFO_BUF ? (size_t)(fsize - pos) : XZ_INFO_BUF;
			ssize_t n = src_pread(in, buf, want, pos);

			if (n < 0) {
				snprintf(why, wlen, "read error at offset %" PRIu64, pos);
				err = (int)n;
				goto out;
			}
			strm.next_in = buf;
			strm.avail_in = (size_t)n;
			fed += (uint64_t)n;
			pos = (size_t)n < want ? fsize : pos + (uint64_t)n;
		}
		if (strm.avail_in == 0 && ++stalls > 4) {
			snprintf(why, wlen, "unexpected end of input");
			err = -EIO;
			goto out;
		}
		ret = lzma_code(&strm, pos >= fsize ? LZMA_FINISH : LZMA_RUN);
		if (ret == LZMA_STREAM_END)
			break;
		if (ret == LZMA_SEEK_NEEDED && strm.seek_pos <= fsize) {
			pos = strm.seek_pos;
			strm.avail_in = 0;
			stalls = 0;
		} else if (ret != LZMA_OK) {
			snprintf(why, wlen, "%s",
				 ret == LZMA_MEMLIMIT_ERROR ? "the index is unreasonably large"
							    : xz_strerror(ret));
			/* An index too big for the limit is a bad index, not a lack of memory. */
			err = ret == LZMA_MEMLIMIT_ERROR ? -EIO : liberr_lzma(ret);
			goto out;
		}
		/* liblzma reads each part once or twice; this only guards against a loop. */
		if (fed > 4 * fsize + ((uint64_t)64 << 20)) {
			snprintf(why, wlen, "the index reader does not progress");
			err = -EIO;
			goto out;
		}
	}
	err = 0;
out:
	lzma_end(&strm);
	free(buf);
	if (err) {
		lzma_index_end(*idx, NULL);
		*idx = NULL;
	}
	return err;
}

/* Skips stream padding (zero bytes in groups of four) from *pos. */
static int xz_skip_padding(struct src *in, uint8_t *buf, size_t bufsize, uint64_t *pos)
{
	for (;;) {
		ssize_t n = src_pread(in, buf, bufsize, *pos);
		size_t i = 0;

		if (n < 0)
			return (int)n;
		while (i + 4 <= (size_t)n && !(buf[i] | buf[i + 1] | buf[i + 2] | buf[i + 3]))
			i += 4;
		*pos += i;
		if (i < (size_t)n || (size_t)n < bufsize)
			return 0;
	}
}

/* The end of the last stream footer (with a valid CRC) in the file's last XZ_FOOTER_WINDOW
 * bytes, or 0.  Streams start at multiples of four, so footers do too. */
static uint64_t xz_find_footer(struct src *in, uint64_t size)
{
	uint64_t start = size > XZ_FOOTER_WINDOW ? (size - XZ_FOOTER_WINDOW) & ~(uint64_t)3 : 0;
	uint64_t found = 0;
	lzma_stream_flags flags;
	uint8_t *buf;
	ssize_t n;

	if (size < 2 * LZMA_STREAM_HEADER_SIZE)
		return 0;
	buf = malloc((size_t)(size - start));
	if (!buf)
		return 0;
	n = src_pread(in, buf, (size_t)(size - start), start);
	if (n == (ssize_t)(size - start)) {
		uint64_t f = (size - LZMA_STREAM_HEADER_SIZE) & ~(uint64_t)3;

		for (; f >= start && f >= LZMA_STREAM_HEADER_SIZE; f -= 4) {
			const uint8_t *p = buf + (f - start);

			if (p[10] == 'Y' && p[11] == 'Z' &&
			    lzma_stream_footer_decode(&flags, p) == LZMA_OK) {
				found = f + LZMA_STREAM_HEADER_SIZE;
				break;
			}
		}
	}
	free(buf);
	return found;
}

/* True if p starts a stream header (its magic: six bytes are rare enough by chance) or a valid
 * stream footer ("YZ" and its CRC32).  Data after the last stream that holds one is a damaged
 * stream, not garbage: ignoring it would silently drop a stream. */
static bool xz_stream_part(const uint8_t *p, size_t n)
{
	lzma_stream_flags flags;

	if (n < sizeof(xz_magic))
		return false;
	return (p[0] == xz_magic[0] && memcmp(p, xz_magic, sizeof(xz_magic)) == 0) ||
	       (n >= LZMA_STREAM_HEADER_SIZE && p[10] == 'Y' && p[11] == 'Z' &&
		lzma_stream_footer_decode(&flags, p) == LZMA_OK);
}

/* The first offset at or after off where xz_stream_part says a stream part starts, or
 * UINT64_MAX if none does (or the file cannot be read). */
static uint64_t xz_find_stream_part(struct src *in, uint64_t off)
{
	struct trailing t;

	if (trailing_scan(in, off, xz_stream_part, LZMA_STREAM_HEADER_SIZE, &t))
		return UINT64_MAX;
	return t.data_at == TRAILING_NONE ? UINT64_MAX : t.data_at;
}

/* ---- The scan ------------------------------------------------------------------------------ */

struct xz_walk {
	uint64_t pos;	  /* compressed offset reached */
	uint64_t uoff;	  /* uncompressed offset reached */
	uint64_t nblocks; /* blocks seen, all streams */
	uint64_t nstreams;
	lzma_index_hash *hash; /* the current stream's blocks, to check its index against */
	lzma_stream_flags flags;
	int level; /* of msg */
	char msg[XZ_MSG];
};

/* The jobs run on the decode pipeline (pipeline.h); here are the two ways of finding them. */
struct codec_scan {
	struct src *in;
	struct codec_sink sink;
	bool walk;	      /* no usable index: one worker walks the file front to back */
	lzma_index *idx;      /* index mode: every stream's index */
	lzma_index_iter iter; /* ... the block of the last job found (the dispatch turn's) */
	uint64_t nblocks;     /* ... and their number */
	struct xz_blk *blk;   /* one per worker */
	unsigned nworkers;
	struct xz_walk wk; /* walk mode: the walker's position (its one worker's) */
	bool in_stream;	   /* ... inside a stream: blocks or its index come next */
	int walk_err;	   /* ... what ended the walk after a block that decoded */
	struct pipeline *pl;
};

__attribute__((format(printf, 3, 4))) static int xz_walk_fail(struct xz_walk *wk, int err,
							      const char *fmt, ...);

static int xz_walk_fail(struct xz_walk *wk, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(wk->msg, sizeof(wk->msg), fmt, ap);
	va_end(ap);
	wk->level = TFS_LOG_ERR;
	return err;
}

/* At wk->pos after a stream (or at 0): finds the next stream header past the padding.  1 if a
 * stream starts (wk->flags set, wk->pos after its header), 0 at the end of the file (trailing
 * garbage noted in wk->msg as a warning), or -errno. */
static int xz_walk_stream_header(struct xz_blk *b, struct xz_walk *wk)
{
	struct src *in = b->in;
	uint8_t hdr[LZMA_STREAM_HEADER_SIZE];
	uint64_t part;
	lzma_ret ret;
	ssize_t n;
	int err;

	if (wk->nstreams) {
		err = xz_skip_padding(in, b->inbuf, b->inbuf_size, &wk->pos);
		if (err)
			return xz_walk_fail(wk, err, "xz: read error at offset %" PRIu64, wk->pos);
	}
	n = src_pread(in, hdr, sizeof(hdr), wk->pos);
	if (n < 0)
		return xz_walk_fail(wk, (int)n, "xz: read error at offset %" PRIu64, wk->pos);
	if (wk->nstreams == 0 && n == 0)
		return xz_walk_fail(wk, -EIO, "xz: the file is empty");
	if (n == 0)
		return 0;
	if ((size_t)n < sizeof(xz_magic) || memcmp(hdr, xz_magic, sizeof(xz_magic)) != 0) {
		if (wk->nstreams == 0)
			return xz_walk_fail(wk, -EIO, "xz: no xz stream header at offset 0");
		part = xz_find_stream_part(in, wk->pos);
		if (part != UINT64_MAX)
			return xz_walk_fail(wk, -EIO,
					    "xz: unexpected data at offset %" PRIu64
					    " after stream %" PRIu64
					    ", before more xz data at offset %" PRIu64
					    " (damaged); the rest of the file is not read",
					    wk->pos, wk->nstreams, part);
		trailing_note(wk->msg, sizeof(wk->msg), "xz", in, wk->pos);
		wk->level = TFS_LOG_WARNING;
		return 0;
	}
	if ((size_t)n < sizeof(hdr))
		return xz_walk_fail(wk, -EIO,
				    "xz: the file ends inside the stream header at offset %" PRIu64
				    " (truncated)",
				    wk->pos);
	ret = lzma_stream_header_decode(&wk->flags, hdr);
	if (ret != LZMA_OK)
		return xz_walk_fail(wk, -EIO, "xz: stream header at offset %" PRIu64 ": %s",
				    wk->pos,
				    ret == LZMA_FORMAT_ERROR ? "corrupt" : xz_strerror(ret));
	if (!lzma_check_is_supported(wk->flags.check))
		tfs_log(TFS_LOG_WARNING,
			"xz: stream at offset %" PRIu64 " uses check type %d, which this liblzma "
			"cannot verify",
			wk->pos, (int)wk->flags.check);
	wk->hash = lzma_index_hash_init(wk->hash, NULL);
	if (!wk->hash)
		return xz_walk_fail(wk, -ENOMEM, "xz: out of memory");
	wk->pos += sizeof(hdr);
	return 1;
}

/* At wk->pos, the index of the current stream: checks it against the blocks seen, then the
 * footer against the header.  0 with wk->pos after the footer, or -errno. */
static int xz_walk_stream_tail(struct xz_blk *b, struct xz_walk *wk)
{
	struct src *in = b->in;
	uint8_t ftr[LZMA_STREAM_HEADER_SIZE];
	lzma_stream_flags fflags;
	uint64_t stream = wk->nstreams + 1, start = wk->pos;
	lzma_ret ret;
	ssize_t n;

	for (;;) {
		size_t used = 0;

		n = src_pread(in, b->inbuf, b->inbuf_size, wk->pos);
		if (n < 0)
			return xz_walk_fail(wk, (int)n, "xz: read error at offset %" PRIu64,
					    wk->pos);
		if (n == 0)
			return xz_walk_fail(wk, -EIO,
					    "xz: the file ends inside the index of stream %" PRIu64
					    " (offset %" PRIu64 "; truncated)",
					    stream, start);
		ret = lzma_index_hash_decode(wk->hash, b->inbuf, &used, (size_t)n);
		wk->pos += used;
		if (ret == LZMA_STREAM_END)
			break;
		if (ret != LZMA_OK)
			return xz_walk_fail(wk, -EIO,
					    "xz: the index of stream %" PRIu64 " at offset %" PRIu64
					    " is corrupt or does not match its blocks",
					    stream, start);
	}
	n = src_pread(in, ftr, sizeof(ftr), wk->pos);
	if (n < 0)
		return xz_walk_fail(wk, (int)n, "xz: read error at offset %" PRIu64, wk->pos);
	if ((size_t)n < sizeof(ftr))
		return xz_walk_fail(wk, -EIO,
				    "xz: the file ends inside the footer of stream %" PRIu64
				    " (truncated)",
				    stream);
	if (lzma_stream_footer_decode(&fflags, ftr) != LZMA_OK ||
	    lzma_stream_flags_compare(&wk->flags, &fflags) != LZMA_OK ||
	    fflags.backward_size != lzma_index_hash_size(wk->hash))
		return xz_walk_fail(wk, -EIO,
				    "xz: the footer of stream %" PRIu64 " at offset %" PRIu64
				    " is corrupt or does not match its header and index",
				    stream, wk->pos);
	wk->pos += sizeof(ftr);
	wk->nstreams++;
	return 0;
}

/* Index mode: the next block the index lists. */
static int xz_index_next(struct codec_scan *s, struct pl_job *job, struct pl_note *end)
{
	if (job->seq >= s->nblocks)
		return 0;
	if (lzma_index_iter_next(&s->iter, LZMA_INDEX_ITER_BLOCK)) {
		pl_end_note(end, TFS_LOG_ERR, "xz: the index has fewer blocks than it says");
		return -EIO;
	}
	job->ck.uoff = s->iter.block.uncompressed_file_offset;
	job->ck.coff = s->iter.block.compressed_file_offset;
	job->ck.clen = s->iter.block.unpadded_size;
	job->ck.extra = s->iter.block.uncompressed_size;
	job->ck.bits = s->iter.stream.flags ? (uint32_t)s->iter.stream.flags->check : 0;
	job->ck.flags = s->iter.block.number_in_file < UINT32_MAX
			    ? (uint32_t)s->iter.block.number_in_file
			    : UINT32_MAX;
	return 1;
}

/* Walk mode: the next block header at wk->pos, past stream indexes, footers, headers and
 * padding; its decoder is started in the (one) worker's xz_blk for run(). */
static int xz_walk_next(struct codec_scan *s, struct pl_job *job, struct pl_note *end)
{
	struct xz_walk *wk = &s->wk;
	struct xz_blk *b = &s->blk[0];
	int err = s->walk_err;

	while (!err) {
		uint8_t b0;
		ssize_t n;

		if (!s->in_stream) {
			err = xz_walk_stream_header(b, wk);
			if (err <= 0)
				break;
			s->in_stream = true;
		}
		n = src_pread(s->in, &b0, 1, wk->pos);
		if (n < 0) {
			err =
			    xz_walk_fail(wk, (int)n, "xz: read error at offset %" PRIu64, wk->pos);
			break;
		}
		if (n == 0) {
			err = xz_walk_fail(wk, -EIO,
					   "xz: the file ends at offset %" PRIu64 ", after %" PRIu64
					   " blocks, without the stream's index (truncated)",
					   wk->pos, wk->nblocks);
			break;
		}
		if (b0 == 0) { /* the stream's index */
			err = xz_walk_stream_tail(b, wk);
			s->in_stream = false;
			continue;
		}
		wk->nblocks++;
		job->ck.uoff = wk->uoff;
		job->ck.coff = wk->pos;
		job->ck.bits = (uint32_t)wk->flags.check;
		job->ck.flags = wk->nblocks < UINT32_MAX ? (uint32_t)wk->nblocks : UINT32_MAX;
		/* a header that does not decode is the job's failure, reported in its turn */
		if (!xz_blk_start(b, &job->ck)) {
			if (b->block.compressed_size != LZMA_VLI_UNKNOWN)
				job->ck.clen = lzma_block_unpadded_size(&b->block);
			if (b->block.uncompressed_size != LZMA_VLI_UNKNOWN)
				job->ck.extra = b->block.uncompressed_size;
		}
		return 1;
	}
	/* An error inside a block is reported with its job, which the consumer reaches first;
	 * anything else (index, footer, truncation between blocks) ends the jobs. */
	if (wk->msg[0])
		pl_end_note(end, wk->level, "%s", wk->msg);
	return err < 0 ? err : 0;
}

static int xz_next(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *end)
{
	struct codec_scan *s = ctx;

	return s->walk ? xz_walk_next(s, job, end) : xz_index_next(s, job, end);
}

static ssize_t xz_blk_pump(void *b, uint8_t *buf, size_t len)
{
	return xz_blk_read(b, buf, len);
}

static int xz_run(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *fail)
{
	struct codec_scan *s = ctx;
	struct xz_blk *b = &s->blk[worker];
	struct xz_walk *wk = &s->wk;
	lzma_vli unpadded, total;
	int err;

	if (!s->walk)
		err = xz_blk_start(b, &job->ck);
	else
		err = b->err; /* started by xz_walk_next */
	if (err)
		return pl_fail(fail, err, false, "%s", b->msg);
	err = pl_pump(job, xz_blk_pump, b);
	if (err && b->err)
		return pl_fail(fail, err, b->truncated, "%s", b->msg);
	if (err || !s->walk)
		return err;
	/* walk: the block passed; add it to the stream's index hash and move past it */
	unpadded = lzma_block_unpadded_size(&b->block);
	total = lzma_block_total_size(&b->block);
	if (!unpadded || !total ||
	    lzma_index_hash_append(wk->hash, unpadded, b->block.uncompressed_size) != LZMA_OK) {
		s->walk_err = xz_walk_fail(wk, -EIO,
					   "xz: block %" PRIu64 " at offset %" PRIu64
					   ": sizes out of range for an xz stream",
					   wk->nblocks, wk->pos);
		return 0;
	}
	wk->uoff += b->block.uncompressed_size;
	wk->pos += total;
	return 0;
}

static const struct pl_ops xz_pl_ops = {.next = xz_next, .run = xz_run};

/* Decides between index mode (s->idx) and walk mode.  0, or -ENOMEM. */
static int xz_open_index(struct codec_scan *s)
{
	uint64_t size = src_size(s->in), end;
	char why[XZ_MSG] = "", why2[XZ_MSG];
	int err;

	if (size == SRC_SIZE_UNKNOWN || size == 0) {
		TFS_DEBUG("xz: source size %s; decoding block by block", size ? "unknown" : "zero");
		s->walk = true;
		return 0;
	}
	err = xz_file_info(s->in, size, &s->idx, why, sizeof(why));
	if (err == 0 || err == -ENOMEM)
		return err;

	/* Trailing garbage?  Look for the last footer and read the indexes up to it. */
	end = xz_find_footer(s->in, size);
	if (end && end < size && xz_find_stream_part(s->in, end) == UINT64_MAX) {
		err = xz_file_info(s->in, end, &s->idx, why2, sizeof(why2));
		if (err == -ENOMEM)
			return err;
		if (err == 0) {
			char note[XZ_MSG];

			trailing_note(note, sizeof(note), "xz", s->in, end);
			tfs_log(TFS_LOG_WARNING, "%s", note);
			return 0;
		}
	}
	tfs_log(TFS_LOG_WARNING,
		"xz: cannot read the file's index (%s); decoding block by block to recover what is "
		"readable",
		why);
	s->walk = true;
	return 0;
}

static void xz_scan_free(struct codec_scan *s)
{
	if (!s)
		return;
	pl_free(s->pl);
	for (unsigned i = 0; s->blk && i < s->nworkers; i++)
		xz_blk_fini(&s->blk[i]);
	free(s->blk);
	lzma_index_hash_end(s->wk.hash, NULL);
	lzma_index_end(s->idx, NULL);
	free(s);
}

static int xz_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		       struct codec_scan **out)
{
	struct codec_scan *s;
	unsigned threads;
	size_t depth, job_cap;
	int err;

	*out = NULL;
	if (!in || !sink || !sink->checkpoint)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->in = in;
	s->sink = *sink;
	s->wk.level = TFS_LOG_ERR;
	threads = pl_threads(opts, XZ_MAX_THREADS);

	err = xz_open_index(s);
	if (err)
		goto fail;
	if (s->walk) {
		s->nworkers = 1;
	} else {
		uint32_t checks = lzma_index_checks(s->idx);

		s->nblocks = lzma_index_block_count(s->idx);
		for (unsigned c = 0; c <= LZMA_CHECK_ID_MAX; c++)
			if ((checks & (1u << c)) && !lzma_check_is_supported((lzma_check)c))
				tfs_log(
				    TFS_LOG_WARNING,
				    "xz: the file uses check type %u, which this liblzma cannot "
				    "verify",
				    c);
		s->nworkers = s->nblocks < threads ? (unsigned)s->nblocks : threads;
		if (!s->nworkers)
			s->nworkers = 1;
		lzma_index_iter_init(&s->iter, s->idx);
		TFS_DEBUG("xz: %" PRIu64 " blocks in %" PRIu64 " streams, %u workers", s->nblocks,
			  (uint64_t)lzma_index_stream_count(s->idx), s->nworkers);
	}
	s->blk = calloc(s->nworkers, sizeof(*s->blk));
	if (!s->blk) {
		err = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < s->nworkers; i++) {
		err = xz_blk_init(&s->blk[i], in, XZ_SCAN_INBUF);
		if (err)
			goto fail;
	}
	depth = s->nworkers + 1;
	job_cap = pl_job_cap(XZ_BUDGET, depth, XZ_JOB_CAP_MIN, XZ_JOB_CAP_MAX);
	err = pl_start(&xz_pl_ops, s, &s->sink, "xz", s->nworkers, depth, job_cap, &s->pl);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	xz_scan_free(s);
	return err;
}

static ssize_t xz_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	return pl_read(s->pl, buf, len);
}

static uint64_t xz_scan_verified(struct codec_scan *s)
{
	return pl_verified(s->pl);
}

/* ---- Decoders ------------------------------------------------------------------------------ */

struct codec_dec {
	struct xz_blk blk;
	bool logged;
};

static void xz_dec_free(struct codec_dec *d)
{
	if (!d)
		return;
	xz_blk_fini(&d->blk);
	free(d);
}

static int xz_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		      struct codec_dec **out)
{
	struct codec_dec *d;
	int err;

	*out = NULL;
	if (!in || !ck)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = xz_blk_init(&d->blk, in, XZ_DEC_INBUF);
	if (err)
		goto fail;
	err = xz_blk_start(&d->blk, ck);
	if (err) {
		tfs_log(TFS_LOG_ERR, "%s", d->blk.msg);
		goto fail;
	}
	*out = d;
	return 0;
fail:
	xz_dec_free(d);
	return err;
}

static ssize_t xz_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	ssize_t n = xz_blk_read(&d->blk, buf, len);

	if (d->blk.err && !d->logged) {
		tfs_log(TFS_LOG_ERR, "%s", d->blk.msg);
		d->logged = true;
	}
	return n;
}

static size_t xz_dec_memory(const struct codec_dec *d)
{
	/* lzma_memusage() knows nothing of block decoders; the filters' need is the figure. */
	return sizeof(*d) + d->blk.inbuf_size + (size_t)d->blk.mem;
}

const struct codec codec_xz = {
	.name = "xz",
	.probe = xz_probe,
	.scan_new = xz_scan_new,
	.scan_read = xz_scan_read,
	.scan_verified = xz_scan_verified,
	.scan_name = NULL,
	.scan_free = xz_scan_free,
	.dec_new = xz_dec_new,
	.dec_read = xz_dec_read,
	.dec_memory = xz_dec_memory,
	.dec_free = xz_dec_free,
	.exact_input = true,
};
