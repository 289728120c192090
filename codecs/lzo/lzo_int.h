/* What lzo.c (the format, the decoders, the codec table), lzo_format.c (file headers, block
 * headers and blocks), lzo_walk.c (the walk of the block headers, index_blocks) and lzo_scan.c
 * (the indexing scan) share.  The format and the checkpoints are described in lzo.c.  Nothing
 * here is thread-safe but lzop_lib_init: a walk, a scan or a decoder is used by one thread at a
 * time.
 */
#ifndef TARSEEK_LZO_INT_H
#define TARSEEK_LZO_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <lzo/lzoconf.h>

#include "common/source.h"
#include "codecs/codec.h"
#include "codecs/lzout.h"

/* Header flags (lzop's conf.h). */
#define LZOP_F_ADLER32_D 0x00000001u
#define LZOP_F_ADLER32_C 0x00000002u
#define LZOP_F_H_EXTRA_FIELD 0x00000040u
#define LZOP_F_CRC32_D 0x00000100u
#define LZOP_F_CRC32_C 0x00000200u
#define LZOP_F_MULTIPART 0x00000400u
#define LZOP_F_H_FILTER 0x00000800u
#define LZOP_F_H_CRC32 0x00001000u
/* Reserved: neither in F_MASK (0x3fff), the OS byte (0xff << 24) nor the CS nibble (0xf << 20). */
#define LZOP_F_RESERVED 0x000fc000u
#define LZOP_F_D (LZOP_F_ADLER32_D | LZOP_F_CRC32_D)

/* Methods a stock lzop writes; all three decode with lzo1x_decompress_safe. */
#define LZOP_M_LZO1X_1 1
#define LZOP_M_LZO1X_1_15 2
#define LZOP_M_LZO1X_999 3

#define LZOP_MAGIC_LEN 9
#define LZOP_VERSION_MIN 0x0900		/* the first public lzop */
#define LZOP_VERSION_FIELDS 0x0940	/* from here: version needed, level, mtime high */
#define LZOP_NEEDED_MAX 0x1040		/* what lzop 1.04 extracts */
#define LZOP_HDR_READ 512		/* a file header without extra field is <= 297 bytes */
#define LZOP_BHDR_MAX 24		/* sizes + four checksums */
#define LZOP_BLOCK_MAX (64u << 20)	/* lzop's MAX_BLOCK_SIZE */
#define LZOP_BLOCK_DEFAULT (256u << 10) /* lzop's BLOCK_SIZE */
#define LZOP_GROUP ((uint64_t)1 << 20)	/* decompressed bytes per checkpoint */
#define LZOP_GROUP_BLOCKS 1024u		/* ... and at most this many blocks */
#define LZOP_DEC_AHEAD (LZOP_BLOCK_DEFAULT + LZOP_BHDR_MAX) /* past its group */
#define LZOP_DEC_AHEAD_MAX ((size_t)2 << 20)		    /* within its group */
#define LZOP_MAX_THREADS 64
#define LZOP_EXTRA_BUF ((size_t)64 << 10) /* bytes of an extra field read at once */

_Static_assert(LZOP_BLOCK_MAX <= UINT32_MAX / 2, "block sizes fit zlib's uInt with room");
_Static_assert(sizeof(lzo_uint) >= sizeof(uint32_t), "lzo_uint holds a block size");

/* The magic number that starts every part (LZOP_MAGIC_LEN bytes). */
extern const uint8_t lzop_magic[LZOP_MAGIC_LEN];

/* ---- Headers and blocks (lzo_format.c) ---- */

/* liblzo wants lzo_init() once before any other call.  0 or -EINVAL (logged).  Thread-safe. */
int lzop_lib_init(void);

/* A file header, parsed. */
struct lzop_hdr {
	unsigned version, lib_version, needed;
	unsigned method, level;
	uint32_t flags, filter, mode;
	uint64_t mtime;
	char name[256]; /* base name of the stored name, "" if none or unusable */
	uint64_t end;	/* compressed offset of the first block header */
};

/* Checks a part's flags: what tarseek refuses (-ENOTSUP) or what cannot be (-EIO), with why
 * set; else 0. */
int lzop_flags_check(uint32_t flags, const char **why);

/* Reads a file header at off.  first: the start of the file, where a header must be; else
 * after an end marker, where the file may end (or hold padding or garbage, noted unless quiet).
 * 1 with *h set, 0 if no part starts here, or -errno with m set: -EIO for a damaged or
 * truncated header, -ENOTSUP for one tarseek refuses. */
int lzop_read_header(struct src *in, uint64_t off, bool first, bool quiet, struct lzop_hdr *h,
		     struct lzout_msg *m);

/* A block header, parsed. */
struct lzop_bhdr {
	uint32_t ulen, clen;
	uint32_t d_adler, d_crc, c_adler, c_crc;
	size_t hlen; /* bytes of this header */
};

enum { LZOP_BH_END = 0, LZOP_BH_BLOCK = 1, LZOP_BH_SHORT = 2 };

/* Parses the block header in the n bytes at p.  LZOP_BH_BLOCK, LZOP_BH_END (an end marker,
 * 4 bytes), LZOP_BH_SHORT (n is less than the header), or -EIO with why set. */
int lzop_parse_bhdr(const uint8_t *p, size_t n, uint32_t flags, struct lzop_bhdr *b,
		    const char **why);

/* Decodes and verifies one block into exactly b->ulen bytes at out.  0, or -errno with m set
 * (who, blockno and coff name the block). */
int lzop_decode(const struct lzop_bhdr *b, const uint8_t *payload, uint32_t flags, uint8_t *out,
		uint64_t blockno, uint64_t coff, const char *who, struct lzout_msg *m);

/* ---- Walking the block headers (lzo_walk.c) ---- */

/* Consecutive blocks of one part: one checkpoint. */
struct lzop_group {
	uint64_t uoff, ulen;  /* decompressed */
	uint64_t coff, clen;  /* compressed: first block header .. end of the last payload */
	uint64_t first_block; /* 1-based, in the whole file */
	uint32_t nblocks;
	uint32_t flags; /* of the part */
};

/* The header hopper shared by the scan (one at a time, under walk_lock) and index_blocks. */
struct lzop_walk {
	struct src *in;
	uint64_t size;	  /* src_size() */
	uint64_t pos;	  /* next block header, or after an end marker the next file header */
	bool in_part;	  /* pos is a block header of the current part */
	uint32_t flags;	  /* the current part's */
	uint64_t parts;	  /* parts started */
	uint64_t blockno; /* blocks walked */
	uint64_t uoff;	  /* decompressed bytes walked */
	bool done;	  /* no more groups: end_err is 0 at the end of the data, or -errno */
	int end_err;
	struct lzout_msg msg; /* what ended the walk (an error, or a notice of garbage) */
	char name[256];	      /* the first part's stored base name */
};

/* Starts a walk at the file's first header.  An error is kept for the first lzop_walk_group(). */
void lzop_walk_start(struct lzop_walk *w, struct src *in);

/* The next group: 1 with *g set, 0 at the end of the data, or -errno (w->msg says why).  What
 * ends the walk after a group is returned by the next call. */
int lzop_walk_group(struct lzop_walk *w, struct lzop_group *g);

/* The checkpoint of group g. */
void lzop_group_ckpt(const struct lzop_group *g, struct codec_ckpt *ck);

/* codec.h's index_blocks of codec_lzo. */
int lzop_index_blocks(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		      uint64_t *usize);

/* ---- The scan (lzo_scan.c): codec.h's scan_* of codec_lzo ---- */

int lzop_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		  struct codec_scan **out);
ssize_t lzop_scan_read(struct codec_scan *s, void *buf, size_t len);
uint64_t lzop_scan_verified(struct codec_scan *s);
const char *lzop_scan_name(struct codec_scan *s);
void lzop_scan_free(struct codec_scan *s);

#endif
