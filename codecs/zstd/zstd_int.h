/* The zstd codec's parts (zstd.c the codec, zstd_frame.c frame headers, finding frames and
 * decoding them, zstd_table.c the seekable format's seek table and where checkpoints go):
 * the constants, the structures they share and the functions one part calls in another.
 * Private to codecs/zstd/; the format and the design are described in zstd.c.
 */
#ifndef TARSEEK_ZSTD_INT_H
#define TARSEEK_ZSTD_INT_H

#include "codecs/codec.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#define XXH_STATIC_LINKING_ONLY /* XXH64_state_t by value, inside the frame decoder */
#include <xxhash.h>
#include <zstd.h>

#include "common/byteio.h"
#include "codecs/incur.h"
#include "codecs/pipeline.h"

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
#define ZS_CHUNK_MIN ((uint64_t)64 << 10)  /* decoded bytes a checkpoint's frames hold at least */
/* A decoder of a chunk of at most this many decoded bytes hops each frame's block headers
 * (one 3-byte read per block, in the span the reader advised) before decoding it, so that it
 * reads the frame's compressed bytes and nothing past them: without a seek table the frame's
 * end is not known, and libzstd's input would be read in whole 64 KiB buffers past it.  A
 * longer chunk (a single-frame file: one frame of gigabytes) is read as it is decoded. */
#define ZS_HOP_MAX ((uint64_t)8 << 20)
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

/* ---- Frame headers (zstd_frame.c) ---- */

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

/* Parses the frame header at p[0..n).  ZS_HDR_SHORT if n is too small to hold it,
 * ZS_HDR_NOT_ZSTD if no magic number starts p, ZS_HDR_BAD (*why set) if it is invalid. */
int zs_hdr_parse(const uint8_t *p, size_t n, struct zs_hdr *h, const char **why);

/* ---- The seek table (zstd_table.c) ---- */

struct zs_table {
	uint8_t *ent; /* n entries of esz bytes, as in the file */
	uint64_t n;
	unsigned esz; /* 8, or 12 with checksums */
	bool sums;
	uint64_t off; /* offset of the seek table's frame: the sum of the compressed sizes */
};

static inline uint32_t zs_tab_csize(const struct zs_table *t, uint64_t i)
{
	return le32(t->ent + i * t->esz);
}

static inline uint32_t zs_tab_dsize(const struct zs_table *t, uint64_t i)
{
	return le32(t->ent + i * t->esz + 4);
}

static inline uint32_t zs_tab_sum(const struct zs_table *t, uint64_t i)
{
	return t->sums ? le32(t->ent + i * t->esz + 8) : 0;
}

/* Reads a valid seek table at the end of the file into *out (NULL if there is none, or it is
 * not valid: a notice says why).  0 or -errno (-ENOMEM, a read error). */
int zs_table_read(struct src *in, struct zs_table **out);
void zs_table_free(struct zs_table *t);

/* ---- Finding frames (zstd_frame.c) ---- */

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

/* The next frame at l->pos (from the seek table, or by its header; with blocks, its end by
 * hopping its block headers): 1 with *fd set, 0 at the end of the frames (l->msg may hold a
 * notice), or -errno (l->msg says why). */
int zs_loc_next(struct zs_loc *l, bool blocks, struct zs_fdesc *fd);
/* Finds fd's end by hopping its block headers (see zstd_frame.c). */
void zs_loc_blocks(struct zs_loc *l, struct zs_fdesc *fd);

/* ---- Decoding frames (zstd_frame.c) ---- */

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
	int err;	/* sticky, described by msg */
	bool truncated; /* failed only because the file ends inside the frame */
	char msg[ZS_MSG];
};

int zs_fr_init(struct zs_fr *fr, struct src *in, size_t inbuf_size, const char *who);
void zs_fr_fini(struct zs_fr *fr);
/* Starts decoding frame fd.  0, or -errno (fr->msg says why). */
int zs_fr_start(struct zs_fr *fr, const struct zs_fdesc *fd);
/* Decoded bytes of the frame: > 0, 0 at its verified end, or -errno (fr->msg; sticky). */
ssize_t zs_fr_read(struct zs_fr *fr, uint8_t *out, size_t len);

/* ---- Where checkpoints go (zstd_table.c) ---- */

/* The chunk rule (see the top of the file), fed with the frames in order. */
struct zs_chunker {
	uint64_t last; /* uoff of the last checkpoint */
	bool have;     /* there is one */
	bool pending;  /* a chunk opened at pend and has no byte yet */
	struct zs_fdesc pend;
};

void zs_chunk_frame(struct zs_chunker *c, const struct zs_fdesc *f, uint64_t uoff);
bool zs_chunk_data(struct zs_chunker *c, const struct zs_table *tab, uint64_t uoff,
		   struct codec_ckpt *ck, const void **aux, size_t *auxlen);

#endif
