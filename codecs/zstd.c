/* zstd codec (libzstd): checkpoints are the file's own frames.
 *
 * A .zst file is a sequence of frames, each independent of the others: a zstd frame (magic,
 * header, blocks, an optional XXH64 checksum of its content) or a skippable frame (magic
 * 0x184D2A5?, a length, bytes nobody decodes).  A frame start is therefore a perfect
 * checkpoint -- no window to store, nothing from before it needed -- and the only one the
 * format offers: inside a frame, blocks refer back up to a window of up to 2 GiB.  What a file
 * looks like depends on the tool: plain `zstd`, `zstd -T0` and `zstd --rsyncable` write one frame
 * for the whole input, which can only be read sequentially (the reader decodes it once and
 * caches what it passes, as for single-block xz); `cat a.zst b.zst`, pzstd (a skippable frame
 * with the next frame's size before each frame) and the seekable format write many.  The
 * seekable format (zstd's contrib/seekable_format) ends with a skippable frame holding a seek
 * table: per frame its compressed size, decoded size and optionally the low 32 bits of the XXH64
 * of its content, and a footer whose last four bytes are the magic 0x8F92EAB1.
 *
 * Checkpoints.  One per frame would make 10,000 rows for 10,000 tiny frames, so consecutive
 * frames are merged into one chunk until it holds ZS_CHUNK_MIN (1 MiB) of decoded data: a new
 * chunk opens at the first zstd frame that starts at least 1 MiB after the previous checkpoint,
 * and its checkpoint is emitted with its first decoded byte (so empty frames never make an empty
 * chunk, and uoffs strictly increase).  The rule depends on decoded sizes only, so the scan,
 * index_blocks, one thread and many threads all place the same checkpoints.
 *
 * The scan.  With opts->threads >= 2, worker threads decode whole frames in parallel, each job
 * one frame, handed out in order and at most `depth` (workers + 1) ahead of the one the caller
 * reads; each job's bytes queue in 1 MiB chunks, at most job_cap per job, so memory stays bounded
 * whatever the frame sizes.  A worker can take frame k+1 only once frame k's end is known: from
 * the seek table when there is a valid one (read directly, without decoding anything), else by
 * hopping the frame's block headers with pread (each 3-byte header gives the block's compressed
 * size, so finding the end of a 1.9 GB frame costs ~15,000 tiny reads, not a decode).  Whoever
 * takes the next job walks to its end and then decodes it, so a single frame streams through one
 * worker while the caller's thread -- which only copies bytes and calls the sink, as the sink's
 * contract wants -- runs the tar parser: decoding and parsing overlap.  With one thread the
 * caller's thread decodes frame after frame itself, straight into the caller's buffer.
 *
 * Integrity.  libzstd checks each frame's content checksum when there is one and its content
 * size when the header states it.  A seek table's sizes and offsets are checked against the
 * frames, and its checksums are verified (XXH64, libxxhash) for frames that carry none of
 * their own, as a seekable compressor may write them.  A checksum mismatch, corrupt data, a frame
 * that does not match the seek table or a file that ends inside a frame is logged (TFS_LOG_ERR,
 * with the frame's number and compressed offset) and fails the scan with -EIO; the bytes decoded
 * before are still returned (up to the block in hand: ZSTD_decompressStream reports no progress
 * when it fails, so it is asked for 128 KiB per call), and scan_verified() stays at the end of
 * the last frame that passed (for a frame without checksum: the last frame that decoded
 * completely).  After the last frame, zeros are ignored silently and anything else with a notice
 * -- unless it holds what looks like another frame header, or starts with a frame magic number
 * one byte off: that is a damaged frame, not garbage (ignoring it would silently drop that frame
 * and those after it).  A frame whose window exceeds 2 GiB (ZSTD_d_windowLogMax 31, what libzstd
 * allows at most) is refused with a message rather than allocated; one that needs a dictionary
 * is refused too.  Each decoder holds the last byte it decoded until it knows whether the frame
 * ends there, so the call that returns a frame's last byte is the one that verified the frame:
 * that is what index_blocks needs (codec.h).
 *
 * index_blocks: the checkpoints from a seek table, when it has checksums or every frame has its
 * own, else from the frame headers and block walks when every frame states its content size and
 * has a checksum (what `zstd --stream-size` or zstd on a regular file writes; from a pipe the
 * size is unknown); otherwise -ENOTSUP and the caller scans.  452 frames of 4 MiB (1.9 GB): 3 ms
 * from the seek table, 35 ms hopping ~15,000 block headers.
 *
 * Speed and memory (2 cores, 1.9 GB tar in one frame, zstd -dc 1.7-2.2 s): the scan with one
 * thread decodes straight into the caller's buffer and costs no more CPU than zstd -dc; with two,
 * the worker is the bottleneck (libzstd and its copy out of the window) and the caller's
 * CRC-32, copying and tar parsing overlap with it.  A scan queues at most ZS_BUDGET (64 MiB) of
 * decoded data (4-16 MiB per job); each worker holds a DCtx with the frame's window (2 MiB at
 * -3) and a 256 KiB input buffer.  A decoder starts in ~0.02 ms and holds its window plus a
 * 64 KiB input buffer; its first MiB takes ~1 ms.
 *
 * Checkpoint fields for zstd:
 *   uoff   decoded offset of the chunk (all frames before it counted);
 *   coff   compressed offset of the chunk's first zstd frame (its magic number);
 *   clen   0 (unused);
 *   extra  0 (unused);
 *   bits   ZS_CK_TABLE (1) if aux holds the chunk's seek table entries, else 0;
 *   flags  the 1-based number of the chunk's first zstd frame in the file (UINT32_MAX if larger;
 *          for messages);
 *   aux    with ZS_CK_TABLE: the seek table entries (12 bytes each, as in the file: compressed
 *          size, decoded size, checksum, little-endian) of the frames from the chunk's first
 *          one to its last one with data, skippable frames included; else none.
 * A decoder starts at coff and decodes frame after frame (skipping skippable frames, checking
 * each frame against its aux entry) until it has returned ulen bytes, then checks that a frame
 * ends there and returns 0: it does not continue into the next chunk.
 */
#include "codec.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH64_state_t by value, inside the frame decoder */
#include <xxhash.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "../common/byteio.h"
#include "../common/log.h"
#include "incur.h"
#include "pipeline.h"
#include "trailing.h"

#define ZS_MAGIC 0xFD2FB528u	  /* a zstd frame */
#define ZS_SKIP_MAGIC 0x184D2A50u /* a skippable frame: 0x184D2A50 .. 0x184D2A5F */
#define ZS_SKIP_MASK 0xFFFFFFF0u
#define ZS_SEEK_MAGIC 0x8F92EAB1u	   /* seekable format: the file's last four bytes */
#define ZS_SEEK_SKIP_MAGIC 0x184D2A5Eu	   /* ... and the magic of the seek table's frame */
#define ZS_SEEK_FOOTER 9		   /* frame count, descriptor, magic */
#define ZS_SEEK_ENTRY 12		   /* an entry with its checksum */
#define ZS_SEEK_MAX_FRAMES (1u << 22)	   /* larger seek tables (> 48 MiB) are not loaded */
#define ZS_HDR_MAX 18			   /* magic + the largest frame header */
#define ZS_BLOCK_MAX ((uint32_t)128 << 10) /* a block's size, by the format */
#define ZS_WINDOW_LOG_MAX 31		   /* 2 GiB; larger windows are refused */
#define ZS_CHUNK_MIN ((uint64_t)1 << 20)   /* decoded bytes a checkpoint's frames hold at least */
#define ZS_BUDGET ((size_t)64 << 20)	   /* decoded bytes a scan queues, all jobs */
#define ZS_JOB_CAP_MIN ((size_t)4 << 20)   /* ... and per job, within these bounds */
#define ZS_JOB_CAP_MAX ((size_t)16 << 20)
#define ZS_MAX_THREADS 64	    /* the budget holds up to 15 workers; beyond, 4 MiB per job */
#define ZS_STEP ((size_t)128 << 10) /* decoded bytes asked of libzstd per call (see below) */
#define ZS_SCAN_INBUF ((size_t)256 << 10) /* compressed bytes read at once by a scan */
#define ZS_DEC_INBUF ((size_t)64 << 10)	  /* ... by a decoder (random reads stay small) */
#define ZS_MSG 256
#define ZS_UNKNOWN UINT64_MAX

#define ZS_CK_TABLE 0x1u /* checkpoint bits: aux holds the chunk's seek table entries */

_Static_assert(PL_CHUNK <= ZS_JOB_CAP_MIN, "a job must be able to queue one chunk");
_Static_assert(ZS_JOB_CAP_MIN <= ZS_JOB_CAP_MAX, "job queue bounds");

/* The one place libzstd's error codes become -errno. */
static int zs_errno(size_t ret)
{
	if (!ZSTD_isError(ret))
		return 0;
	switch (ZSTD_getErrorCode(ret)) {
	case ZSTD_error_memory_allocation:
		return -ENOMEM;
	case ZSTD_error_parameter_unsupported:
	case ZSTD_error_parameter_combination_unsupported:
	case ZSTD_error_parameter_outOfBound:
	case ZSTD_error_stage_wrong:
	case ZSTD_error_init_missing:
	case ZSTD_error_dstBuffer_null:
		return -EINVAL; /* misuse, not bad data */
	default: /* corruption, checksum, window too large, truncated, ...: the file is not right */
		return -EIO;
	}
}

/* ---- Frame headers ------------------------------------------------------------------------- */

/* A frame header, parsed here rather than with ZSTD_getFrameHeader (not in libzstd's stable
 * API) -- the format is small and fixed (RFC 8878, 3.1.1). */
struct zs_hdr {
	bool skippable;
	uint32_t skip_size; /* skippable: bytes after its 8-byte header */
	size_t size;	    /* zstd frame: header bytes, magic included */
	uint64_t window;    /* bytes of history the frame may refer to */
	uint64_t content;   /* decoded size, or ZS_UNKNOWN */
	uint32_t dict_id;   /* 0: none */
	bool checksum;	    /* an XXH64 of the content ends the frame */
};

enum { ZS_HDR_OK, ZS_HDR_SHORT, ZS_HDR_NOT_ZSTD, ZS_HDR_BAD };

/* Parses the frame header at p[0..n).  ZS_HDR_SHORT if n is too small to hold it, ZS_HDR_NOT_ZSTD
 * if no magic number starts p, ZS_HDR_BAD (*why set) if the header is invalid. */
static int zs_hdr_parse(const uint8_t *p, size_t n, struct zs_hdr *h, const char **why)
{
	static const uint8_t did_size[4] = {0, 1, 2, 4};
	static const uint8_t fcs_size[4] = {0, 2, 4, 8};
	uint32_t magic;
	uint8_t fhd;
	bool single;
	size_t at, ds, fs;

	memset(h, 0, sizeof(*h));
	h->content = ZS_UNKNOWN;
	if (n < 4)
		return ZS_HDR_SHORT;
	magic = le32(p);
	if ((magic & ZS_SKIP_MASK) == ZS_SKIP_MAGIC) {
		if (n < 8)
			return ZS_HDR_SHORT;
		h->skippable = true;
		h->skip_size = le32(p + 4);
		h->size = 8;
		return ZS_HDR_OK;
	}
	if (magic != ZS_MAGIC)
		return ZS_HDR_NOT_ZSTD;
	if (n < 5)
		return ZS_HDR_SHORT;
	fhd = p[4];
	single = fhd & 0x20;
	ds = did_size[fhd & 3];
	fs = fcs_size[fhd >> 6];
	if (single && fs == 0)
		fs = 1;
	h->size = 5 + !single + ds + fs;
	if (fhd & 0x08) {
		*why = "reserved bit set in the frame header descriptor";
		return ZS_HDR_BAD;
	}
	if (n < h->size)
		return ZS_HDR_SHORT;
	h->checksum = fhd & 0x04;
	at = 5;
	if (!single) {
		unsigned wlog = 10 + (p[at] >> 3);
		uint64_t base = (uint64_t)1 << wlog;

		h->window = base + (base >> 3) * (p[at] & 7);
		at++;
	}
	for (size_t i = 0; i < ds; i++)
		h->dict_id |= (uint32_t)p[at + i] << (8 * i);
	at += ds;
	if (fs) {
		uint64_t v = 0;

		for (size_t i = 0; i < fs; i++)
			v |= (uint64_t)p[at + i] << (8 * i);
		h->content = fs == 2 ? v + 256 : v;
	}
	if (single)
		h->window = h->content;
	return ZS_HDR_OK;
}

static bool zs_probe(const uint8_t *head, size_t len)
{
	uint64_t off = 0;
	bool skipped = false;

	/* Skippable frames may come first (pzstd writes one before each frame); a file that is
	 * only skippable frames is not zstd data.  When the head ends before the next frame can
	 * be seen, a full head (the file goes on) is taken as zstd, a short one (the whole file)
	 * is not. */
	while (off + 4 <= len) {
		uint32_t magic = le32(head + off);

		if (magic == ZS_MAGIC)
			return true;
		if ((magic & ZS_SKIP_MASK) != ZS_SKIP_MAGIC || off + 8 > len)
			return skipped && len >= 512 && (magic & ZS_SKIP_MASK) == ZS_SKIP_MAGIC;
		off += 8 + (uint64_t)le32(head + off + 4);
		skipped = true;
	}
	return skipped && len >= 512;
}

/* 1 if the byte at off exists, 0 if the source ends before it, or -errno. */
static int zs_exists(struct src *in, uint64_t off)
{
	uint8_t b;
	ssize_t n = src_pread(in, &b, 1, off);

	return n < 0 ? (int)n : n == 1;
}

/* ---- The seek table ------------------------------------------------------------------------ */

struct zs_table {
	uint8_t *ent; /* n entries of esz bytes, as in the file */
	uint64_t n;
	unsigned esz; /* 8, or 12 with checksums */
	bool sums;
	uint64_t off; /* offset of the seek table's frame: the sum of the compressed sizes */
};

static uint32_t zs_tab_csize(const struct zs_table *t, uint64_t i)
{
	return le32(t->ent + i * t->esz);
}

static uint32_t zs_tab_dsize(const struct zs_table *t, uint64_t i)
{
	return le32(t->ent + i * t->esz + 4);
}

static uint32_t zs_tab_sum(const struct zs_table *t, uint64_t i)
{
	return t->sums ? le32(t->ent + i * t->esz + 8) : 0;
}

static void zs_table_free(struct zs_table *t)
{
	if (!t)
		return;
	free(t->ent);
	free(t);
}

/* Reads the seek table at the end of the file, if there is a valid one.  0 with *out set or
 * NULL (none, or an invalid one: noted, the frames are then found by walking), or -ENOMEM /
 * a read error. */
static int zs_table_read(struct src *in, struct zs_table **out)
{
	uint64_t size = src_size(in), tsize, toff, sum = 0;
	uint8_t f[ZS_SEEK_FOOTER], sh[8];
	const char *why = NULL;
	struct zs_table *t;
	uint32_t n;
	unsigned esz;
	ssize_t r;
	int err;

	*out = NULL;
	if (size == SRC_SIZE_UNKNOWN || size < 8 + ZS_SEEK_FOOTER)
		return 0;
	r = src_pread(in, f, sizeof(f), size - sizeof(f));
	if (r < 0)
		return (int)r;
	if ((size_t)r < sizeof(f) || le32(f + 5) != ZS_SEEK_MAGIC)
		return 0;
	n = le32(f);
	esz = f[4] & 0x80 ? 12 : 8;
	tsize = (uint64_t)n * esz + ZS_SEEK_FOOTER;
	toff = tsize + 8 <= size ? size - tsize - 8 : 0;
	if (f[4] & 0x7c)
		why = "reserved bits set in its descriptor";
	else if (n > ZS_SEEK_MAX_FRAMES)
		why = "too many frames for this reader";
	else if (tsize + 8 > size)
		why = "it is larger than the file";
	if (why)
		goto invalid;
	r = src_pread(in, sh, sizeof(sh), toff);
	if (r < 0)
		return (int)r;
	if ((size_t)r < sizeof(sh) || le32(sh) != ZS_SEEK_SKIP_MAGIC || le32(sh + 4) != tsize) {
		why = "its skippable frame header does not match";
		goto invalid;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->n = n;
	t->esz = esz;
	t->sums = esz == 12;
	t->off = toff;
	t->ent = malloc(n ? (size_t)n * esz : 1);
	if (!t->ent) {
		err = -ENOMEM;
		goto fail;
	}
	err = src_pread_full(in, t->ent, (size_t)n * esz, toff + 8);
	if (err)
		goto fail;
	for (uint64_t i = 0; i < n; i++)
		sum += zs_tab_csize(t, i);
	if (sum != toff) {
		why = "its frame sizes do not add up to its offset";
		zs_table_free(t);
		goto invalid;
	}
	TFS_DEBUG("zstd: seek table of %" PRIu32 " frames%s", n, t->sums ? " with checksums" : "");
	*out = t;
	return 0;
fail:
	zs_table_free(t);
	return err;
invalid:
	tfs_log(
	    TFS_LOG_WARNING,
	    "zstd: ignoring the seek table at the end of the file (its footer at offset %" PRIu64
	    "): %s; finding the frames by their headers instead",
	    size - ZS_SEEK_FOOTER, why);
	return 0;
}

/* The entries aux carries for a chunk whose first frame is entry `first`: up to its last frame
 * with data, by the chunk rule (see the top of the file).  They are contiguous in the table. */
static void zs_tab_aux(const struct zs_table *t, uint64_t first, const void **aux, size_t *auxlen)
{
	uint64_t u = 0, last = first;

	for (uint64_t j = first; j < t->n; j++) {
		uint32_t d = zs_tab_dsize(t, j);

		if (d && u >= ZS_CHUNK_MIN)
			break;
		if (d) {
			last = j;
			u += d;
		}
	}
	*aux = t->ent + first * t->esz;
	*auxlen = (size_t)(last - first + 1) * t->esz;
}

/* ---- Finding frames ------------------------------------------------------------------------ */

/* A zstd frame to decode. */
struct zs_fdesc {
	uint64_t number; /* 1-based, among the zstd frames of the file */
	uint64_t coff;	 /* its magic number */
	uint64_t end;	 /* where it ends, or ZS_UNKNOWN */
	uint64_t dsize;	 /* its decoded size (seek table), or ZS_UNKNOWN */
	uint64_t tix;	 /* its seek table entry, or ZS_UNKNOWN */
	bool from_table; /* end and dsize come from a seek table (else from block headers) */
	bool has_sum;	 /* the seek table has its checksum: */
	uint32_t sum;
};

/* Walks a file's frames in order: from a seek table, or header by header. */
struct zs_loc {
	struct src *in;
	const struct zs_table *tab; /* NULL: walk the headers */
	uint64_t pos;		    /* what comes next; for a frame without a known end, its start
				       until the caller moves pos past it */
	uint64_t tix;		    /* with tab: the entry at pos */
	uint64_t nframes;	    /* zstd frames found so far */
	bool seen;		    /* a skippable frame was seen */
	bool dec;	  /* a decoder's: no trailing-data analysis, no "no frame" errors */
	int broken;	  /* the last block walk failed: the next call returns this */
	int level;	  /* of msg */
	char msg[ZS_MSG]; /* why the walk ended: an error, or a notice */
};

__attribute__((format(printf, 3, 4))) static int zs_loc_fail(struct zs_loc *l, int err,
							     const char *fmt, ...);

static int zs_loc_fail(struct zs_loc *l, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->msg, sizeof(l->msg), fmt, ap);
	va_end(ap);
	l->level = TFS_LOG_ERR;
	return err;
}

/* A zstd frame (not a skippable one) starts at p: data after the last frame is damage. */
static bool zs_frame_starts(const uint8_t *p, size_t n)
{
	struct zs_hdr h;
	const char *why;

	return p[0] == 0x28 && zs_hdr_parse(p, n, &h, &why) == ZS_HDR_OK && !h.skippable;
}

/* After the last frame at l->pos: zero padding (silent), garbage (a notice in l->msg), or
 * more frames after something that is not one (damage: -EIO).  0 or -errno. */
static int zs_trailing(struct zs_loc *l)
{
	struct trailing t;
	int err = trailing_scan(l->in, l->pos, zs_frame_starts, ZS_HDR_MAX, &t);

	if (err)
		return zs_loc_fail(l, err, "zstd: read error after offset %" PRIu64, l->pos);
	if (t.data_at != TRAILING_NONE)
		return zs_loc_fail(l, -EIO,
				   "zstd: unexpected data at compressed offset %" PRIu64
				   " after frame %" PRIu64
				   ", before more zstd data at offset %" PRIu64
				   " (damaged); the rest of the file is not read",
				   l->pos, l->nframes, t.data_at);
	if (t.first_nonzero == TRAILING_NONE) {
		TFS_DEBUG("zstd: zero padding after the last frame at offset %" PRIu64, l->pos);
		return 0;
	}
	trailing_note(l->msg, sizeof(l->msg), "zstd", l->in, l->pos);
	l->level = TFS_LOG_NOTICE;
	return 0;
}

/* Hops the block headers of the frame at fd->coff to find its end, without decoding.  Sets
 * fd->end, or on damage leaves it unknown and makes the next zs_loc_next() fail: the frame's
 * decoder usually tells first what is wrong, and better. */
static void zs_loc_blocks(struct zs_loc *l, struct zs_fdesc *fd)
{
	uint8_t b[ZS_HDR_MAX];
	struct zs_hdr h;
	const char *why = "";
	uint64_t pos;
	ssize_t n;
	int r;

	n = src_pread(l->in, b, sizeof(b), fd->coff);
	if (n < 0) {
		l->broken = zs_loc_fail(l, (int)n, "zstd: read error at offset %" PRIu64, fd->coff);
		return;
	}
	r = zs_hdr_parse(b, (size_t)n, &h, &why);
	if (r != ZS_HDR_OK) {
		l->broken = zs_loc_fail(
		    l, -EIO, "zstd: frame %" PRIu64 " at compressed offset %" PRIu64 ": %s",
		    fd->number, fd->coff,
		    r == ZS_HDR_SHORT ? "the file ends in its header (truncated)" : why);
		return;
	}
	for (pos = fd->coff + h.size;;) {
		uint32_t bh, bsize, type;

		n = src_pread(l->in, b, 3, pos);
		if (n < 0) {
			l->broken =
			    zs_loc_fail(l, (int)n, "zstd: read error at offset %" PRIu64, pos);
			return;
		}
		if (n < 3)
			goto truncated;
		bh = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16;
		type = (bh >> 1) & 3;
		bsize = bh >> 3;
		if (type == 3 || bsize > ZS_BLOCK_MAX) {
			l->broken =
			    zs_loc_fail(l, -EIO,
					"zstd: frame %" PRIu64 " at compressed offset %" PRIu64
					": invalid block header at offset %" PRIu64 " (corrupt)",
					fd->number, fd->coff, pos);
			return;
		}
		pos += 3 + (type == 1 ? 1 : bsize);
		if (bh & 1)
			break;
	}
	if (h.checksum)
		pos += 4;
	r = zs_exists(l->in, pos - 1);
	if (r < 0) {
		l->broken = zs_loc_fail(l, r, "zstd: read error at offset %" PRIu64, pos - 1);
		return;
	}
	if (r == 0)
		goto truncated;
	fd->end = pos;
	l->pos = pos;
	return;
truncated:
	l->broken = zs_loc_fail(l, -EIO,
				"zstd: frame %" PRIu64 " at compressed offset %" PRIu64
				": the file ends inside it (truncated)",
				fd->number, fd->coff);
}

/* The next frame from the seek table. */
static int zs_loc_table(struct zs_loc *l, struct zs_fdesc *fd)
{
	const struct zs_table *t = l->tab;

	while (l->tix < t->n) {
		uint32_t csize = zs_tab_csize(t, l->tix), dsize = zs_tab_dsize(t, l->tix);
		uint8_t b[8];
		ssize_t n = src_pread(l->in, b, sizeof(b), l->pos);

		if (n < 0)
			return zs_loc_fail(l, (int)n, "zstd: read error at offset %" PRIu64,
					   l->pos);
		if (n >= 4 && le32(b) == ZS_MAGIC) {
			fd->number = ++l->nframes;
			fd->coff = l->pos;
			fd->end = l->pos + csize;
			fd->dsize = dsize;
			fd->tix = l->tix;
			fd->from_table = true;
			fd->has_sum = t->sums;
			fd->sum = zs_tab_sum(t, l->tix);
			l->pos += csize;
			l->tix++;
			return 1;
		}
		if (n == 8 && (le32(b) & ZS_SKIP_MASK) == ZS_SKIP_MAGIC) {
			if ((uint64_t)le32(b + 4) + 8 != csize || dsize)
				return zs_loc_fail(l, -EIO,
						   "zstd: the skippable frame at offset %" PRIu64
						   " does not match seek table entry %" PRIu64,
						   l->pos, l->tix + 1);
			l->pos += csize;
			l->tix++;
			continue;
		}
		if (l->dec)
			return zs_loc_fail(l, -EIO,
					   "zstd: decoder: no frame at compressed offset %" PRIu64
					   " (damaged, or the index does not match the file)",
					   l->pos);
		return zs_loc_fail(l, -EIO,
				   n < 8 ? "zstd: the file ends at offset %" PRIu64
					   ", where seek table entry %" PRIu64 " starts (truncated)"
					 : "zstd: no frame at offset %" PRIu64
					   ", where seek table entry %" PRIu64 " starts (damaged)",
				   l->pos, l->tix + 1);
	}
	if (!l->nframes && !l->dec)
		return zs_loc_fail(l, -EIO, "zstd: the seek table lists no zstd frame");
	return 0;
}

/* True if p[0..n) (0 < n < 4) starts a frame's or a skippable frame's magic number. */
static bool zs_magic_prefix(const uint8_t *p, size_t n)
{
	static const uint8_t zm[4] = {0x28, 0xB5, 0x2F, 0xFD}, sm[4] = {0x50, 0x2A, 0x4D, 0x18};

	return memcmp(p, zm, n) == 0 ||
	       ((p[0] & 0xF0) == 0x50 && memcmp(p + 1, sm + 1, n - 1) == 0);
}

/* True if p[0..4) is a frame's magic number with one byte changed: after the last frame, that is
 * a damaged frame, not garbage (it would hide the frame). */
static bool zs_near_magic(const uint8_t *p)
{
	static const uint8_t zm[4] = {0x28, 0xB5, 0x2F, 0xFD};
	int diff = 0;

	for (int i = 0; i < 4; i++)
		diff += p[i] != zm[i];
	return diff == 1;
}

/* The next zstd frame: 1 with *fd set, 0 at the end of the frames (msg may hold a notice), or
 * -errno (msg says what is wrong).  blocks: find the frame's end by walking its blocks (else
 * fd->end is known only from a seek table, and the caller moves l->pos past the frame). */
static int zs_loc_next(struct zs_loc *l, bool blocks, struct zs_fdesc *fd)
{
	memset(fd, 0, sizeof(*fd));
	fd->end = fd->dsize = fd->tix = ZS_UNKNOWN;
	if (l->broken)
		return l->broken;
	l->msg[0] = '\0';
	if (l->tab)
		return zs_loc_table(l, fd);
	for (;;) {
		uint8_t b[8];
		ssize_t n = src_pread(l->in, b, sizeof(b), l->pos);

		if (n < 0)
			return zs_loc_fail(l, (int)n, "zstd: read error at offset %" PRIu64,
					   l->pos);
		if (n >= 4 && le32(b) == ZS_MAGIC) {
			fd->number = ++l->nframes;
			fd->coff = l->pos;
			if (blocks)
				zs_loc_blocks(l, fd);
			return 1;
		}
		if (n >= 4 && (le32(b) & ZS_SKIP_MASK) == ZS_SKIP_MAGIC) {
			uint64_t next = l->pos + 8 + (n == 8 ? le32(b + 4) : 0);
			int r = n == 8 ? zs_exists(l->in, next - 1) : 0;

			if (r < 0)
				return zs_loc_fail(l, r, "zstd: read error at offset %" PRIu64,
						   next - 1);
			if (r == 0)
				return zs_loc_fail(
				    l, -EIO,
				    "zstd: the file ends inside the skippable frame at "
				    "offset %" PRIu64 " (truncated)",
				    l->pos);
			l->pos = next;
			l->seen = true;
			continue;
		}
		if (l->dec)
			return n == 0 ? 0
				      : zs_loc_fail(
					    l, -EIO,
					    "zstd: decoder: no frame at compressed offset %" PRIu64
					    " (damaged, or the index does not match the file)",
					    l->pos);
		if (n >= (l->nframes ? 2 : 1) && n < 4 && zs_magic_prefix(b, (size_t)n))
			return zs_loc_fail(
			    l, -EIO,
			    "zstd: the file ends inside the magic number at compressed "
			    "offset %" PRIu64 " (truncated)",
			    l->pos);
		if (l->nframes == 0) {
			if (n == 0)
				return zs_loc_fail(l, -EIO,
						   l->pos ? "zstd: no zstd frame in the file, only "
							    "skippable frames"
							  : "zstd: the file is empty");
			return zs_loc_fail(l, -EIO,
					   l->seen
					       ? "zstd: no zstd frame after the skippable frames "
						 "(offset %" PRIu64 ")"
					       : "zstd: not zstd data at offset %" PRIu64,
					   l->pos);
		}
		if (n == 0)
			return 0;
		if (n >= 4 && zs_near_magic(b))
			return zs_loc_fail(l, -EIO,
					   "zstd: the data at compressed offset %" PRIu64
					   " after frame %" PRIu64
					   " looks like a frame with a damaged "
					   "magic number; the rest of the file is not read",
					   l->pos, l->nframes);
		return zs_trailing(l);
	}
}

/* ---- Decoding frames: shared by the scan and by decoders ----------------------------------- */

struct zs_fr {
	ZSTD_DCtx *dctx;
	struct incur in;
	const char *who; /* "" (the scan) or "decoder: ", for messages */
	/* the frame being decoded */
	struct zs_fdesc fd;
	struct zs_hdr hdr;
	bool check_sum; /* verify fd.sum here: the frame has no checksum of its own */
	XXH64_state_t xxh;
	uint64_t out; /* bytes decoded, the held byte included */
	uint64_t est; /* memory the frame's window needs */
	bool held;    /* hold: decoded, not returned, maybe the frame's last byte */
	uint8_t hold;
	bool done; /* the frame ended and passed its checks */
	unsigned stalls;
	int err; /* sticky, described by msg */
	bool truncated; /* failed only because the file ends inside the frame */
	char msg[ZS_MSG];
};

static int zs_fr_init(struct zs_fr *fr, struct src *in, size_t inbuf_size, const char *who)
{
	ZSTD_bounds wb = ZSTD_dParam_getBounds(ZSTD_d_windowLogMax);
	int wlog = ZS_WINDOW_LOG_MAX;
	size_t ret;

	memset(fr, 0, sizeof(*fr));
	fr->who = who;
	incur_init(&fr->in, in, malloc(inbuf_size), inbuf_size, 0);
	fr->dctx = ZSTD_createDCtx();
	if (!fr->in.buf || !fr->dctx)
		return -ENOMEM;
	if (!ZSTD_isError(wb.error) && wb.upperBound < wlog)
		wlog = wb.upperBound;
	ret = ZSTD_DCtx_setParameter(fr->dctx, ZSTD_d_windowLogMax, wlog);
	return zs_errno(ret);
}

static void zs_fr_fini(struct zs_fr *fr)
{
	ZSTD_freeDCtx(fr->dctx);
	fr->dctx = NULL;
	free(fr->in.buf);
	fr->in.buf = NULL;
}

__attribute__((format(printf, 3, 4))) static int zs_fr_fail(struct zs_fr *fr, int err,
							    const char *fmt, ...);

/* Records err (sticky) and a message naming the frame, for the caller to log. */
static int zs_fr_fail(struct zs_fr *fr, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(fr->msg, sizeof(fr->msg),
		     "zstd: %sframe %" PRIu64 " at compressed offset %" PRIu64 ": ", fr->who,
		     fr->fd.number, fr->fd.coff);
	if (n < 0 || (size_t)n >= sizeof(fr->msg))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(fr->msg + n, sizeof(fr->msg) - (size_t)n, fmt, ap);
	va_end(ap);
	fr->err = err;
	return err;
}

/* Starts decoding the zstd frame fd: checks its header (window, dictionary, sizes).  0 or
 * -errno (msg set). */
static int zs_fr_start(struct zs_fr *fr, const struct zs_fdesc *fd)
{
	uint8_t b[ZS_HDR_MAX];
	const char *why = "";
	size_t ret;
	ssize_t n;
	int r;

	fr->fd = *fd;
	fr->out = 0;
	fr->held = fr->done = false;
	fr->stalls = 0;
	fr->err = 0;
	fr->msg[0] = '\0';
	n = src_pread(fr->in.src, b, sizeof(b), fd->coff);
	if (n < 0)
		return zs_fr_fail(fr, (int)n, "read error");
	r = zs_hdr_parse(b, (size_t)n, &fr->hdr, &why);
	if (r == ZS_HDR_SHORT)
		return zs_fr_fail(fr, -EIO, "the file ends in its header (truncated)");
	if (r == ZS_HDR_NOT_ZSTD || fr->hdr.skippable)
		return zs_fr_fail(fr, -EIO,
				  "no zstd frame here (damaged, or the index does not "
				  "match the file)");
	if (r == ZS_HDR_BAD)
		return zs_fr_fail(fr, -EIO, "%s", why);
	if (fr->hdr.window > (uint64_t)1 << ZS_WINDOW_LOG_MAX)
		return zs_fr_fail(
		    fr, -EIO,
		    "decoding needs a window of %" PRIu64
		    " MiB, more than the %u MiB allowed; refusing (hostile or unusual "
		    "file)",
		    fr->hdr.window >> 20, 1u << (ZS_WINDOW_LOG_MAX - 20));
	if (fr->hdr.dict_id)
		return zs_fr_fail(fr, -EIO,
				  "needs dictionary %" PRIu32 ", which tarseek does not have",
				  fr->hdr.dict_id);
	if (fd->dsize != ZS_UNKNOWN && fr->hdr.content != ZS_UNKNOWN &&
	    fd->dsize != fr->hdr.content)
		return zs_fr_fail(
		    fr, -EIO, "its header says %" PRIu64 " decoded bytes, the seek table %" PRIu64,
		    fr->hdr.content, fd->dsize);
	if (fd->end != ZS_UNKNOWN && fd->end < fd->coff + fr->hdr.size)
		return zs_fr_fail(fr, -EIO, "shorter than its header (%s)",
				  fd->from_table ? "seek table" : "block headers");
	fr->est = fr->hdr.window;
	if (fr->hdr.content < fr->est)
		fr->est = fr->hdr.content;
	fr->est += 2 * ZS_BLOCK_MAX;
	fr->check_sum = fd->has_sum && !fr->hdr.checksum;
	if (fr->check_sum)
		XXH64_reset(&fr->xxh, 0);
	ret = ZSTD_DCtx_reset(fr->dctx, ZSTD_reset_session_only);
	if (ZSTD_isError(ret))
		return zs_fr_fail(fr, zs_errno(ret), "%s", ZSTD_getErrorName(ret));
	incur_seek(&fr->in, fd->coff, fd->end);
	return 0;
}

/* libzstd says the frame is complete (and checked its own checksum): the checks of ours. */
static int zs_fr_end(struct zs_fr *fr)
{
	uint64_t at = incur_pos(&fr->in);

	if (fr->fd.end != ZS_UNKNOWN && at != fr->fd.end)
		return zs_fr_fail(fr, -EIO,
				  "it ends at offset %" PRIu64 ", not at %" PRIu64 " (%s)", at,
				  fr->fd.end, fr->fd.from_table ? "seek table" : "block headers");
	if (fr->fd.dsize != ZS_UNKNOWN && fr->out != fr->fd.dsize)
		return zs_fr_fail(fr, -EIO,
				  "it decodes to %" PRIu64 " bytes, the seek table says %" PRIu64,
				  fr->out, fr->fd.dsize);
	if (fr->check_sum) {
		uint32_t sum = (uint32_t)XXH64_digest(&fr->xxh);

		if (sum != fr->fd.sum)
			return zs_fr_fail(fr, -EIO,
					  "checksum mismatch: the seek table says %08" PRIx32
					  ", the data gives %08" PRIx32,
					  fr->fd.sum, sum);
	}
	fr->done = true;
	return 0;
}

/* Decodes up to len bytes of the frame into out: > 0, 0 once the frame has ended and passed
 * every check, or -errno (msg set).  The last byte decoded is held back until the frame is
 * known to go on, so the call that returns a frame's last byte is the one that verified it.
 * Bytes decoded before an error are returned first, except the last one.  ZSTD_decompressStream
 * reports no progress at all when it fails (it returns before writing the positions back), so
 * each call is asked for one block's worth (ZS_STEP): a failure then loses at most the block in
 * hand, and the offset in the message is that of its input. */
static ssize_t zs_fr_read(struct zs_fr *fr, uint8_t *out, size_t len)
{
	size_t pos = 0;

	if (fr->err)
		return fr->err;
	if (!len)
		return 0;
	if (fr->done) {
		if (!fr->held)
			return 0;
		out[0] = fr->hold; /* verified: the frame ended after it */
		fr->held = false;
		return 1;
	}
	for (;;) {
		ZSTD_outBuffer o;
		ZSTD_inBuffer i;
		uint8_t scratch;
		size_t ret, got, used;
		ssize_t avail;
		bool ahead;

		if (fr->held && pos == 0) {
			out[0] = fr->hold;
			fr->held = false;
			pos = 1;
		}
		/* With only the held byte in out, decode one byte ahead to learn its fate. */
		ahead = pos == len;
		o = ahead ? (ZSTD_outBuffer){&scratch, 1, 0}
			  : (ZSTD_outBuffer){out, len - pos > ZS_STEP ? pos + ZS_STEP : len, pos};
		avail = incur_fill(&fr->in);
		if (avail < 0) {
			zs_fr_fail(fr, (int)avail, "read error at compressed offset %" PRIu64,
				   incur_pos(&fr->in));
			break;
		}
		i = (ZSTD_inBuffer){fr->in.buf, fr->in.len, fr->in.pos};
		ret = ZSTD_decompressStream(fr->dctx, &o, &i);
		used = i.pos - fr->in.pos;
		fr->in.pos = i.pos;
		got = ahead ? o.pos : o.pos - pos;
		if (got && fr->check_sum)
			XXH64_update(&fr->xxh, ahead ? &scratch : out + pos, got);
		fr->out += got;
		if (ZSTD_isError(ret)) {
			zs_fr_fail(fr, zs_errno(ret),
				   "%s, near compressed offset %" PRIu64 ", after %" PRIu64
				   " decoded bytes",
				   ZSTD_getErrorName(ret), incur_pos(&fr->in), fr->out);
			if (!ahead)
				pos = o.pos;
			break;
		}
		if (!ahead)
			pos = o.pos;
		if (ret == 0) {
			if (zs_fr_end(fr))
				break;
			if (ahead && got) { /* the frame's last byte, verified: the next call's */
				fr->hold = scratch;
				fr->held = true;
			}
			return (ssize_t)pos;
		}
		if (ahead && got) {
			fr->hold = scratch;
			fr->held = true;
			return (ssize_t)pos;
		}
		if (pos == len && !ahead) {
			fr->hold = out[len - 1];
			fr->held = true;
			if (--pos)
				return (ssize_t)pos;
			continue;
		}
		if (used || got) {
			fr->stalls = 0;
			continue;
		}
		if (avail == 0) {
			if (fr->in.src_short || fr->fd.end == ZS_UNKNOWN) {
				fr->truncated = fr->in.src_short;
				zs_fr_fail(fr, -EIO,
					   "the file ends inside it (truncated), after %" PRIu64
					   " decoded bytes",
					   fr->out);
			}
			else
				zs_fr_fail(fr, -EIO,
					   "its data runs past offset %" PRIu64
					   ", where the %s says it ends",
					   fr->fd.end,
					   fr->fd.from_table ? "seek table" : "block walk");
			break;
		}
		if (++fr->stalls > 4) {
			zs_fr_fail(fr, -EIO, "the decoder does not progress");
			break;
		}
	}
	/* failed: the last byte decoded may be the frame's last, unverified; keep it back --
	 * unless the file merely ends here (no sign of damage: all of it is returned, trusted,
	 * as zstd -dc writes it out) */
	fr->held = false;
	if (fr->truncated && pos > 0)
		return (ssize_t)pos;
	if (pos > 1)
		return (ssize_t)(pos - 1);
	return fr->err;
}

/* ---- Where checkpoints go ------------------------------------------------------------------ */

/* The chunk rule (see the top of the file), fed with the frames in order. */
struct zs_chunker {
	uint64_t last; /* uoff of the last checkpoint */
	bool have;     /* there is one */
	bool pending;  /* a chunk opened at pend and has no byte yet */
	struct zs_fdesc pend;
};

/* The zstd frame f starts at decoded offset uoff. */
static void zs_chunk_frame(struct zs_chunker *c, const struct zs_fdesc *f, uint64_t uoff)
{
	if (!c->pending && (!c->have || uoff - c->last >= ZS_CHUNK_MIN)) {
		c->pending = true;
		c->pend = *f;
	}
}

/* A frame's first decoded byte, at uoff: true with *ck (and the aux blob, if any) if it starts
 * a chunk. */
static bool zs_chunk_data(struct zs_chunker *c, const struct zs_table *tab, uint64_t uoff,
			  struct codec_ckpt *ck, const void **aux, size_t *auxlen)
{
	*aux = NULL;
	*auxlen = 0;
	if (!c->pending)
		return false;
	memset(ck, 0, sizeof(*ck));
	ck->uoff = uoff;
	ck->coff = c->pend.coff;
	ck->flags = c->pend.number < UINT32_MAX ? (uint32_t)c->pend.number : UINT32_MAX;
	if (tab && tab->sums && c->pend.tix != ZS_UNKNOWN) {
		ck->bits = ZS_CK_TABLE;
		zs_tab_aux(tab, c->pend.tix, aux, auxlen);
	}
	c->pending = false;
	c->have = true;
	c->last = uoff;
	return true;
}

/* ---- The scan ------------------------------------------------------------------------------ */

/* With several threads the frames are the jobs of a decode pipeline (pipeline.h): the dispatch
 * turn walks the next frame's block headers to find its end, a worker decodes it; with one
 * thread the caller's thread decodes frame after frame (zs_inline_read). */
struct codec_scan {
	struct src *in;
	struct codec_sink sink;
	struct zs_table *tab; /* a valid seek table, or NULL */
	struct zs_loc loc;    /* inline: the caller's; threaded: the dispatch turn's */
	struct zs_chunker ch; /* the caller's */

	/* inline (one thread): the caller's thread decodes */
	struct zs_fr seq;
	bool in_frame;	 /* seq is inside a frame */
	bool frame_data; /* ... which has returned bytes */
	uint64_t pos;	 /* bytes returned so far */
	uint64_t verified;
	int err; /* sticky */
	bool eof;

	/* threaded */
	struct pipeline *pl;
	struct zs_fr *fr; /* one per worker */
	unsigned nworkers;
};

/* Calls the sink for a chunk starting at the frame's first byte, at decoded offset uoff. */
static int zs_emit(struct codec_scan *s, uint64_t uoff)
{
	struct codec_ckpt ck;
	const void *aux;
	size_t auxlen;

	if (!zs_chunk_data(&s->ch, s->tab, uoff, &ck, &aux, &auxlen))
		return 0;
	return s->sink.checkpoint(s->sink.opaque, &ck, aux, auxlen);
}

static int zs_pl_next(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *end)
{
	struct codec_scan *s = ctx;
	int r = zs_loc_next(&s->loc, true, job->own);

	if (r <= 0 && s->loc.msg[0])
		pl_end_note(end, s->loc.level, "%s", s->loc.msg);
	return r;
}

static ssize_t zs_fr_pump(void *fr, uint8_t *buf, size_t len)
{
	return zs_fr_read(fr, buf, len);
}

static int zs_pl_run(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *fail)
{
	struct codec_scan *s = ctx;
	struct zs_fr *fr = &s->fr[worker];
	int err;

	if (zs_fr_start(fr, job->own))
		return pl_fail(fail, fr->err, false, "%s", fr->msg);
	err = pl_pump(job, zs_fr_pump, fr);
	if (err && fr->err)
		return pl_fail(fail, err, fr->truncated, "%s", fr->msg);
	return err;
}

static void zs_pl_begin(void *ctx, const struct pl_job *job, uint64_t uoff)
{
	struct codec_scan *s = ctx;

	zs_chunk_frame(&s->ch, job->own, uoff);
}

static int zs_pl_first(void *ctx, const struct pl_job *job, uint64_t uoff)
{
	return zs_emit(ctx, uoff);
}

static const struct pl_ops zs_pl_ops = {
	.job_size = sizeof(struct zs_fdesc),
	.next = zs_pl_next,
	.run = zs_pl_run,
	.begin = zs_pl_begin,
	.first = zs_pl_first,
};

/* One thread: frame after frame, decoded straight into the caller's buffer. */
static ssize_t zs_inline_read(struct codec_scan *s, uint8_t *out, size_t len)
{
	size_t done = 0;

	while (done < len && !s->err && !s->eof) {
		ssize_t n;

		if (!s->in_frame) {
			struct zs_fdesc fd;
			int r = zs_loc_next(&s->loc, false, &fd);

			if (r <= 0) {
				if (s->loc.msg[0])
					tfs_log(s->loc.level, "%s", s->loc.msg);
				if (r < 0)
					s->err = r;
				else
					s->eof = true;
				break;
			}
			zs_chunk_frame(&s->ch, &fd, s->pos + done);
			if (zs_fr_start(&s->seq, &fd)) {
				tfs_log(TFS_LOG_ERR, "%s", s->seq.msg);
				s->err = s->seq.err;
				break;
			}
			s->in_frame = true;
			s->frame_data = false;
		}
		n = zs_fr_read(&s->seq, out + done, len - done);
		if (n > 0) {
			if (!s->frame_data) {
				int err = zs_emit(s, s->pos + done);

				s->frame_data = true;
				if (err) {
					s->err = err;
					break;
				}
			}
			done += (size_t)n;
		} else if (n == 0) {
			s->in_frame = false;
			s->loc.pos = incur_pos(&s->seq.in);
			s->verified = s->pos + done;
		} else {
			tfs_log(TFS_LOG_ERR, "%s", s->seq.msg);
			s->err = (int)n;
			if (s->seq.truncated) /* the file merely ends early: what came is trusted */
				s->verified = s->pos + done;
		}
	}
	s->pos += done;
	if (s->eof)
		s->verified = s->pos;
	return done ? (ssize_t)done : s->err;
}

static ssize_t zs_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	if (s->pl)
		return pl_read(s->pl, buf, len);
	if (s->err)
		return s->err;
	if (s->eof || !len)
		return 0;
	return zs_inline_read(s, buf, len);
}

static uint64_t zs_scan_verified(struct codec_scan *s)
{
	return s->pl ? pl_verified(s->pl) : s->verified;
}

static void zs_scan_free(struct codec_scan *s)
{
	if (!s)
		return;
	pl_free(s->pl);
	for (unsigned i = 0; s->fr && i < s->nworkers; i++)
		zs_fr_fini(&s->fr[i]);
	free(s->fr);
	zs_fr_fini(&s->seq);
	zs_table_free(s->tab);
	free(s);
}

static int zs_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
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
	threads = opts && opts->threads ? opts->threads : 1;
	if (threads > ZS_MAX_THREADS)
		threads = ZS_MAX_THREADS;
	err = zs_table_read(in, &s->tab);
	if (err)
		goto fail;
	s->loc.in = in;
	s->loc.tab = s->tab;

	if (threads == 1) {
		err = zs_fr_init(&s->seq, in, ZS_SCAN_INBUF, "");
		if (err)
			goto fail;
		*out = s;
		return 0;
	}

	s->nworkers = threads;
	if (s->tab && s->tab->n < threads)
		s->nworkers = s->tab->n ? (unsigned)s->tab->n : 1;
	s->fr = calloc(s->nworkers, sizeof(*s->fr));
	if (!s->fr) {
		err = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < s->nworkers; i++) {
		err = zs_fr_init(&s->fr[i], in, ZS_SCAN_INBUF, "");
		if (err)
			goto fail;
	}
	depth = s->nworkers + 1;
	job_cap = ZS_BUDGET / depth / PL_CHUNK * PL_CHUNK;
	if (job_cap < ZS_JOB_CAP_MIN)
		job_cap = ZS_JOB_CAP_MIN;
	if (job_cap > ZS_JOB_CAP_MAX)
		job_cap = ZS_JOB_CAP_MAX;
	struct pl_params prm = {.ops = &zs_pl_ops,
				.ctx = s,
				.name = "zstd",
				.workers = s->nworkers,
				.depth = depth,
				.job_cap = job_cap};
	err = pl_new(&prm, &s->pl);
	if (err)
		goto fail;
	TFS_DEBUG("zstd: %s, %u workers", s->tab ? "seek table" : "walking frame headers",
		  s->nworkers);
	*out = s;
	return 0;
fail:
	zs_scan_free(s);
	return err;
}

/* ---- index_blocks -------------------------------------------------------------------------- */

/* Checkpoints from the seek table (with checksums), or from frame headers and block walks when
 * every frame states its size and has a checksum.  See codec.h. */
static int zs_index_blocks(struct src *in, const struct codec_opts *opts,
			   const struct codec_sink *sink, uint64_t *usize)
{
	struct zs_loc loc = {.in = in};
	struct zs_chunker ch = {0};
	struct zs_table *tab = NULL;
	struct codec_ckpt prev = {0}, ck;
	const void *prev_aux = NULL, *aux;
	size_t prev_auxlen = 0, auxlen;
	bool have_prev = false;
	uint64_t uoff = 0;
	int err;

	(void)opts;
	*usize = 0;
	if (!in || !sink || !sink->checkpoint)
		return -EINVAL;
	err = zs_table_read(in, &tab);
	if (err)
		return err;
	loc.tab = tab;
	for (;;) {
		uint8_t b[ZS_HDR_MAX];
		struct zs_fdesc fd;
		struct zs_hdr h;
		const char *why = "";
		uint64_t dsize;
		ssize_t n;
		int r = zs_loc_next(&loc, false, &fd);

		if (r < 0) {
			tfs_log(TFS_LOG_ERR, "%s", loc.msg);
			err = r;
			goto out;
		}
		if (r == 0) {
			if (loc.msg[0])
				tfs_log(loc.level, "%s", loc.msg);
			break;
		}
		n = src_pread(in, b, sizeof(b), fd.coff);
		if (n < 0) {
			err = (int)n;
			goto out;
		}
		r = zs_hdr_parse(b, (size_t)n, &h, &why);
		if (r != ZS_HDR_OK || h.window > (uint64_t)1 << ZS_WINDOW_LOG_MAX || h.dict_id) {
			/* the scan's decoders say what exactly; here it is just damage */
			tfs_log(TFS_LOG_ERR,
				"zstd: frame %" PRIu64 " at compressed offset %" PRIu64
				": unusable frame header",
				fd.number, fd.coff);
			err = -EIO;
			goto out;
		}
		if (!h.checksum && !(tab && tab->sums)) {
			TFS_DEBUG("zstd: frame %" PRIu64 " has no checksum: no index from headers",
				  fd.number);
			err = -ENOTSUP;
			goto out;
		}
		dsize = tab ? fd.dsize : h.content;
		if (dsize == ZS_UNKNOWN) {
			TFS_DEBUG("zstd: frame %" PRIu64 " does not state its size: no index from "
				  "headers",
				  fd.number);
			err = -ENOTSUP;
			goto out;
		}
		if (!tab) {
			zs_loc_blocks(&loc, &fd); /* its end: where the next frame starts */
			if (loc.broken) {
				tfs_log(TFS_LOG_ERR, "%s", loc.msg);
				err = loc.broken;
				goto out;
			}
		}
		if (h.content != ZS_UNKNOWN && h.content != dsize) {
			tfs_log(TFS_LOG_ERR,
				"zstd: frame %" PRIu64 " at compressed offset %" PRIu64
				": its header says %" PRIu64
				" decoded bytes, the seek table %" PRIu64,
				fd.number, fd.coff, h.content, dsize);
			err = -EIO;
			goto out;
		}
		zs_chunk_frame(&ch, &fd, uoff);
		if (dsize && zs_chunk_data(&ch, tab, uoff, &ck, &aux, &auxlen)) {
			if (have_prev) {
				prev.ulen = ck.uoff - prev.uoff;
				err = sink->checkpoint(sink->opaque, &prev, prev_aux, prev_auxlen);
				if (err)
					goto out;
			}
			prev = ck;
			prev_aux = aux;
			prev_auxlen = auxlen;
			have_prev = true;
		}
		if (uoff + dsize < uoff) {
			tfs_log(TFS_LOG_ERR, "zstd: decoded size out of range at frame %" PRIu64,
				fd.number);
			err = -EIO;
			goto out;
		}
		uoff += dsize;
	}
	if (have_prev) {
		prev.ulen = uoff - prev.uoff;
		err = sink->checkpoint(sink->opaque, &prev, prev_aux, prev_auxlen);
		if (err)
			goto out;
	}
	*usize = uoff;
	err = 0;
out:
	zs_table_free(tab);
	return err;
}

/* ---- Decoders ------------------------------------------------------------------------------ */

struct codec_dec {
	struct zs_fr fr;
	struct zs_loc loc;
	struct zs_table tab; /* a view of the aux entries, if any */
	uint64_t ulen;	     /* the chunk's decoded length */
	uint64_t out;	     /* bytes returned */
	bool in_frame;
	int err; /* sticky */
};

static void zs_dec_free(struct codec_dec *d)
{
	if (!d)
		return;
	zs_fr_fini(&d->fr);
	free(d->tab.ent);
	free(d);
}

/* Logs and records a decoder error. */
static int zs_dec_fail(struct codec_dec *d, int err, const char *msg)
{
	tfs_log(TFS_LOG_ERR, "%s", msg);
	d->err = err;
	return err;
}

/* The next frame of the chunk.  0 or -errno (logged). */
static int zs_dec_next_frame(struct codec_dec *d)
{
	struct zs_fdesc fd;
	int r = zs_loc_next(&d->loc, false, &fd);

	if (r < 0)
		return zs_dec_fail(d, r, d->loc.msg);
	if (r == 0) {
		char msg[ZS_MSG];

		snprintf(msg, sizeof(msg),
			 "zstd: decoder: the data ends at compressed offset %" PRIu64
			 " after %" PRIu64 " of the chunk's %" PRIu64
			 " bytes (damaged, or the index does not match the file)",
			 d->loc.pos, d->out, d->ulen);
		return zs_dec_fail(d, -EIO, msg);
	}
	if (zs_fr_start(&d->fr, &fd))
		return zs_dec_fail(d, d->fr.err, d->fr.msg);
	d->in_frame = true;
	return 0;
}

static int zs_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		      struct codec_dec **out)
{
	struct codec_dec *d;
	int err;

	*out = NULL;
	if (!in || !ck || ck->clen || ck->extra || (ck->bits & ~ZS_CK_TABLE) || !ck->flags)
		return -EINVAL;
	if ((ck->bits & ZS_CK_TABLE) ? !aux || !auxlen || auxlen % ZS_SEEK_ENTRY : auxlen != 0)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = zs_fr_init(&d->fr, in, ZS_DEC_INBUF, "decoder: ");
	if (err)
		goto fail;
	d->loc.in = in;
	d->loc.pos = ck->coff;
	d->loc.nframes = ck->flags - 1;
	d->loc.dec = true;
	if (ck->bits & ZS_CK_TABLE) {
		d->tab.ent = malloc(auxlen);
		if (!d->tab.ent) {
			err = -ENOMEM;
			goto fail;
		}
		memcpy(d->tab.ent, aux, auxlen);
		d->tab.n = auxlen / ZS_SEEK_ENTRY;
		d->tab.esz = ZS_SEEK_ENTRY;
		d->tab.sums = true;
		d->loc.tab = &d->tab;
	}
	d->ulen = ck->ulen;
	err = zs_dec_next_frame(d);
	if (err)
		goto fail;
	*out = d;
	return 0;
fail:
	zs_dec_free(d);
	return err;
}

static ssize_t zs_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	if (!d->ulen)
		return 0; /* an empty chunk: nothing to check either */
	while (len) {
		uint64_t left = d->ulen - d->out;
		ssize_t n;

		if (d->err)
			return d->err;
		if (!d->in_frame) {
			if (!left)
				return 0;
			if (zs_dec_next_frame(d))
				continue;
		}
		if (left) {
			n = zs_fr_read(&d->fr, buf, len < left ? len : (size_t)left);
		} else {
			/* all the chunk's bytes are out: a frame must end here */
			uint8_t b;

			n = zs_fr_read(&d->fr, &b, 1);
			if (n > 0) {
				char msg[ZS_MSG];

				snprintf(msg, sizeof(msg),
					 "zstd: decoder: frame %" PRIu64
					 " at compressed offset %" PRIu64
					 " goes on past the end of its chunk (%" PRIu64
					 " bytes; the index does not match the file)",
					 d->fr.fd.number, d->fr.fd.coff, d->ulen);
				return zs_dec_fail(d, -EIO, msg);
			}
		}
		if (n > 0) {
			d->out += (uint64_t)n;
			return n;
		}
		if (n < 0)
			return zs_dec_fail(d, (int)n, d->fr.msg);
		d->in_frame = false;
		d->loc.pos = incur_pos(&d->fr.in);
	}
	return 0;
}

static size_t zs_dec_memory(const struct codec_dec *d)
{
	size_t lib = ZSTD_sizeof_DCtx(d->fr.dctx);

	/* libzstd allocates the window at the first byte decoded; count it from the start */
	if (lib < d->fr.est)
		lib = (size_t)d->fr.est;
	return sizeof(*d) + d->fr.in.cap + (size_t)d->tab.n * ZS_SEEK_ENTRY + lib;
}

const struct codec codec_zstd = {
	.name = "zstd",
	.probe = zs_probe,
	.scan_new = zs_scan_new,
	.scan_read = zs_scan_read,
	.scan_verified = zs_scan_verified,
	.scan_name = NULL,
	.scan_free = zs_scan_free,
	.index_blocks = zs_index_blocks,
	.dec_new = zs_dec_new,
	.dec_read = zs_dec_read,
	.dec_memory = zs_dec_memory,
	.dec_free = zs_dec_free,
};
