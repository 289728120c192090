/* What lz4.c (the format, the decoders, the codec table), lz4_block.c (frame headers and
 * blocks), lz4_walk.c (the walk of the headers) and lz4_scan.c (the indexing scan) share.  The
 * format and the checkpoints are described in lz4.c.  Nothing here is thread-safe: a walk, a
 * scan or a decoder is used by one thread at a time.
 */
#ifndef TARSEEK_LZ4_INT_H
#define TARSEEK_LZ4_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <lz4.h>

#include "common/source.h"
#include "codecs/codec.h"
#include "codecs/lzout.h"

#define LZ4_FRAME_MAGIC 0x184D2204u
#define LZ4_SKIP_MAGIC 0x184D2A50u /* ..5F */
#define LZ4_SKIP_MASK 0xFFFFFFF0u
#define LZ4_LEGACY_MAGIC 0x184C2102u
#define LZ4_LEGACY_BLOCK (8u << 20)			     /* decoded bytes per legacy block */
#define LZ4_LEGACY_BOUND LZ4_COMPRESSBOUND(LZ4_LEGACY_BLOCK) /* its largest compressed size */
#define LZ4_HDR_MAX 19	       /* magic, FLG, BD, content size, dictionary id, HC */
#define LZ4_HIST (64u << 10)   /* what a linked block may copy from */
#define LZ4_GROUP (128u << 10) /* decompressed bytes per checkpoint, about */
#define LZ4_STORED 0x80000000u /* high bit of a block size */
#define LZ4_MAX_THREADS 64
#define LZ4_DEC_AHEAD_MAX ((size_t)8 << 20) /* a decoder's read within its group */

/* FLG bits */
#define LZ4_F_VERSION 0xC0
#define LZ4_F_INDEP 0x20
#define LZ4_F_BSUM 0x10
#define LZ4_F_CSIZE 0x08
#define LZ4_F_CSUM 0x04
#define LZ4_F_RESERVED 0x02
#define LZ4_F_DICTID 0x01

/* Checkpoint kinds (flags >> 16). */
enum { LZ4_K_INDEP = 1, LZ4_K_LINKED = 2, LZ4_K_LEGACY = 3 };

_Static_assert(LZ4_LEGACY_BOUND < LZ4_STORED, "legacy sizes fit 31 bits");
_Static_assert((4u << 20) + LZ4_HIST < (unsigned)INT32_MAX, "block sizes fit liblz4's int");

/* ---- Frame headers and blocks (lz4_block.c) ---- */

/* An lz4 frame header, parsed. */
struct lz4_fhdr {
	uint8_t flg, bd;
	uint32_t bmax; /* maximum block size */
	uint64_t csize; /* content size, if FLG has C.Size */
	size_t hlen;	/* header bytes, magic included */
};

enum { LZ4_H_OK = 1, LZ4_H_SHORT = 2 };

/* A block header, parsed. */
struct lz4_blk {
	uint32_t size;	/* bytes of data */
	bool stored;	/* not compressed */
	bool end;	/* the EndMark */
	uint64_t total; /* header + data + checksum */
};

/* The maximum block size BD gives, or 0 if it gives none. */
uint32_t lz4_bd_max(uint8_t bd);

/* Checks FLG and BD (after the header checksum matched).  0, or -ENOTSUP with why set. */
int lz4_fhdr_check(uint8_t flg, uint8_t bd, const char **why);

/* Parses an lz4 frame header in the n bytes at p (the magic included).  LZ4_H_OK,
 * LZ4_H_SHORT (n is less than the header), or -EIO / -ENOTSUP with why set. */
int lz4_parse_fhdr(const uint8_t *p, size_t n, struct lz4_fhdr *h, const char **why);

/* Parses the 4-byte block size v of a frame with header h.  0, or -EIO with why set. */
int lz4_parse_blk(uint32_t v, const struct lz4_fhdr *h, struct lz4_blk *b, const char **why);

/* Decodes one block whose header is at p (b->total bytes there) into out[0..cap), with dict
 * (dictlen bytes, may be 0) as a linked block's history, after its checksum if flg has them.
 * The decoded size, or -EIO with m set (who, blockno and coff name the block). */
ssize_t lz4_decode_blk(const struct lz4_blk *b, const uint8_t *p, uint8_t flg, uint8_t *out,
		       size_t cap, const uint8_t *dict, size_t dictlen, uint64_t blockno,
		       uint64_t coff, const char *who, struct lzout_msg *m);

/* Keeps the last LZ4_HIST bytes of hist (*hlen of them) followed by the n bytes at p. */
void lz4_hist_add(uint8_t *hist, size_t *hlen, const uint8_t *p, size_t n);

/* Reads the 4 bytes at off into *v.  1, 0 if fewer than 4 remain (*n says how many), or
 * -errno. */
int lz4_read32(struct src *in, uint64_t off, uint32_t *v, size_t *n);

/* ---- Walking the headers (lz4_walk.c) ---- */

/* One job of the scan: a group of independent blocks, a linked frame, or a legacy block. */
struct lz4_job {
	int kind;
	struct lz4_fhdr fh;	 /* the frame's (not for legacy) */
	uint64_t coff, clen;	 /* the checkpoint's */
	uint64_t blocks_at;	 /* the first block header */
	uint64_t first_block;	 /* 1-based, in the whole file */
	uint32_t nblocks;
	uint64_t frame_no;	 /* 1-based, lz4 frames counted */
	uint64_t frame_coff;	 /* the frame's magic */
	bool frame_first;	 /* the job starts its frame */
	bool frame_last;	 /* ... ends it (its EndMark and content checksum were read) */
	uint32_t content_sum;	 /* stored, if frame_last and C.Checksum */
};

enum { LZ4_W_BETWEEN, LZ4_W_FRAME, LZ4_W_LEGACY };

/* The header hopper of the scan's dispatch turn. */
struct lz4_walk {
	struct src *in;
	uint64_t size;	  /* src_size() */
	uint64_t pos;	  /* the next magic, block header or EndMark */
	int state;	  /* LZ4_W_* */
	bool started;	  /* something was recognised */
	struct lz4_fhdr fh; /* the current frame's */
	uint64_t frame_no, frame_coff;
	bool frame_begun; /* a job of the current frame was made */
	uint64_t blockno; /* blocks walked */
	bool done;	  /* no more jobs: end_err is 0 at the end of the data, or -errno */
	int end_err;
	struct lzout_msg msg; /* what ended the walk (an error, or a notice of garbage) */
};

/* The next job: 1 with *j set, 0 at the end of the data, or -errno (w->msg says why).  What
 * ends the walk after a job is returned by the next call.  w starts zeroed but for in and
 * size. */
int lz4_walk_next(struct lz4_walk *w, struct lz4_job *j);

/* The checkpoint of job j (uoff and ulen are the scan's to set). */
void lz4_job_ckpt(const struct lz4_job *j, struct codec_ckpt *ck);

/* ---- The scan (lz4_scan.c): codec.h's scan_* of codec_lz4 ---- */

int lz4_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		 struct codec_scan **out);
ssize_t lz4_scan_read(struct codec_scan *s, void *buf, size_t len);
uint64_t lz4_scan_verified(struct codec_scan *s);
void lz4_scan_free(struct codec_scan *s);

#endif
