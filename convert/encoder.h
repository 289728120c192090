/* Encoders: the compressed forms tarseek-convert writes, one file per form (enc_zstd.c,
 * enc_xz.c, enc_gzip.c), each exporting one const struct encoder.
 *
 * The caller (convert.c) cuts the decoded stream into blocks where it wants them (at
 * tar member boundaries, within the limits of whole_blocks) and has each block compressed on any thread: compress() depends on
 * nothing but the block, its bytes and the 32 KiB before them, so blocks are compressed in
 * parallel.  The caller then writes head(), the blocks in order, and tail(), and, in that
 * order, tells the encoder where each block landed (commit).  commit answers with the
 * checkpoint the codec's own scan would place there -- the fields codec.h and the codec's
 * file (zstd.c, xz.c, gzip.c) define for that codec's decoders -- so the index is written
 * with the file, without decoding it, and agrees with an index built later by scanning it.
 *
 * What each form is:
 *   zstd  one frame per block (content size, XXH64 checksum), then a seek table (zstd's
 *         seekable format, without checksums: the frames carry their own), so `zstd -d`
 *         and `tar --zstd` read it as any .zst;
 *   xz    one stream, one block per block (sizes in every block header and in the index,
 *         CRC64 checks), readable by `xz -d`;
 *   gzip  one member whose deflate stream is cut at block boundaries (byte-aligned by a sync
 *         flush; each block is compressed with the 32 KiB before it as its dictionary, as
 *         pigz does, so the ratio stays gzip's), or with members set one member per block;
 *   lzo   one lzop file whose 256 KiB blocks are cut so that each block is one of lzo.c's
 *         1 MiB groups (enc_lzo.c), readable by `lzop -d`.
 *
 * Errors: 0 / counts, or -errno (-ENOMEM; -EIO for a library failure, logged).
 */
#ifndef TARSEEK_ENCODER_H
#define TARSEEK_ENCODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codecs/codec.h"

#define ENC_DICT_MAX 32768 /* bytes before a block that compress() may use (deflate's window) */

struct enc_opts {
	int level;	  /* the library's level; ENC_LEVEL_DEFAULT: the tool's own default */
	bool members;	  /* gzip: one member per block */
	uint64_t block;	  /* the largest block the caller will give (xz: the dictionary need
			     not be larger) */
};
#define ENC_LEVEL_DEFAULT (-1000)

/* One block.  The caller sets in/len, dict/dict_len (the up to ENC_DICT_MAX decoded bytes
 * just before the block, 0 for the first), last, and out with out_cap >= bound(len);
 * compress() sets out_len and the encoder-defined results. */
struct enc_block {
	const uint8_t *in;
	size_t len;
	const uint8_t *dict;
	size_t dict_len;
	bool last;
	uint8_t *out;
	size_t out_cap, out_len;
	uint32_t crc;	/* CRC-32 of in (gzip) */
	uint64_t extra; /* encoder-defined (xz: the block's unpadded size) */
};

struct enc;

struct encoder {
	const char *codec; /* the codec that decodes it, by codec.h's name: "zstd", "xz", "gzip" */
	/* Every block but the last must hold from `block` to less than 5/4 block decoded bytes
	 * (the caller cuts inside a member rather than short): lzo, whose checkpoints are set by
	 * size.  The block size is then the form's default only. */
	bool whole_blocks;
	const char *ext;   /* the extension of a tar in this form: ".tar.zst" */
	const char *tool;  /* what else reads it, for messages: "zstd -d", ... */
	int (*init)(const struct enc_opts *o, struct enc **out);
	size_t (*bound)(const struct enc *e, size_t len);
	/* The bytes before the first block (malloc'd in *out, maybe none). */
	int (*head)(struct enc *e, uint8_t **out, size_t *len);
	/* Compresses b; thread-safe (reads e only). */
	int (*compress)(const struct enc *e, struct enc_block *b);
	/* Block b was written at compressed offset coff and starts at decoded offset uoff.
	 * 1 with *ck (ulen left 0) and *aux (malloc'd, maybe NULL) if a checkpoint starts
	 * there, 0 if none does, -errno. */
	int (*commit)(struct enc *e, const struct enc_block *b, uint64_t uoff, uint64_t coff,
		      struct codec_ckpt *ck, uint8_t **aux, size_t *auxlen);
	/* The bytes after the last block (malloc'd in *out). */
	int (*tail)(struct enc *e, uint8_t **out, size_t *len);
	void (*free)(struct enc *e); /* NULL does nothing */
};

/* The encoder whose extension ends path (".tar.zst", ".tzst", ".zst", ...), or NULL. */
const struct encoder *enc_for_path(const char *path);
/* The extensions known, for messages ("tar.zst, tar.xz, tar.gz"). */
const char *enc_list(void);

#endif
