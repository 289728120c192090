/* A stream made of pieces: what the codecs of file-system images and database archives share
 * (codecs/sqlar/sqlar_codec.c, codecs/squashfs/sqfs_codec.c).  Their containers list, for one
 * stream, pieces whose decoded bytes follow one another -- a SQLite archive's blobs, a
 * SquashFS image's data blocks and fragment tails -- and each piece is read on its own (a blob
 * found by its row, a block decoded where it lies): no piece needs the bytes of another.
 *
 * Params (and each checkpoint's aux): le32 hlen, hlen bytes of a header the codec defines (its
 * compressor, its block size), then records of ops->rec_len bytes, one per piece, whose first 8
 * bytes are the piece's decoded size (le64); the rest is the codec's.
 *
 * Checkpoints are piece starts: the scan cuts the records into chunks of at least
 * opts->spacing bytes (a piece is never split; a container makes pieces small enough), and a
 * checkpoint's aux is the header and its chunk's records, so a decoder needs nothing else.  A
 * decoder returns 0 at the end of its chunk.  Checkpoint fields: uoff, ulen as always; extra
 * the number of the chunk's first piece; bits the number of pieces in it; coff 0.
 *
 * Checks: a piece that gives fewer or more bytes than its size is -EIO, logged with its
 * number; the codec checks what its format lets it (zlib's Adler-32, a block's decoded size).
 */
#ifndef TARSEEK_PIECES_H
#define TARSEEK_PIECES_H

#include "codecs/codec.h"

struct pcs_ops {
	const char *name; /* the codec's, for messages */
	size_t rec_len;	  /* bytes of a record, >= 8 */
	size_t memory;	  /* what a reader of pieces holds, about (dec_memory) */
	uint64_t spacing; /* the most bytes between checkpoints (0: opts->spacing) */
	/* A reader of the pieces of in (the stream's window) described by hdr: *ctx.  0 or
	 * -errno (-EINVAL: a header it cannot use). */
	int (*open)(struct src *in, const uint8_t *hdr, size_t hlen, void **ctx);
	/* Up to len bytes of piece rec from offset off in it; off starts at 0 for each piece and
	 * grows by what was returned.  > 0, 0 at the piece's end, or -errno (-EIO logged). */
	ssize_t (*read)(void *ctx, const uint8_t *rec, uint64_t off, void *buf, size_t len);
	void (*close)(void *ctx); /* NULL does nothing */
};

/* The codec table's functions over ops: the scan's and a decoder's (codec.h's contracts). */
int pcs_scan_new(const struct pcs_ops *ops, struct src *in, const struct codec_opts *opts,
		 const struct codec_sink *sink, struct codec_scan **out);
ssize_t pcs_scan_read(struct codec_scan *s, void *buf, size_t len);
uint64_t pcs_scan_verified(struct codec_scan *s);
void pcs_scan_free(struct codec_scan *s);
int pcs_dec_new(const struct pcs_ops *ops, struct src *in, const struct codec_ckpt *ck,
		const void *aux, size_t auxlen, struct codec_dec **out);
ssize_t pcs_dec_read(struct codec_dec *d, void *buf, size_t len);
size_t pcs_dec_memory(const struct codec_dec *d);
void pcs_dec_free(struct codec_dec *d);

/* Appends a record to a params blob being built (*blob of *len bytes, *cap allocated; the
 * header first, with pcs_params_start).  0 or -ENOMEM. */
int pcs_params_start(uint8_t **blob, size_t *len, size_t *cap, const void *hdr, size_t hlen);
int pcs_params_add(uint8_t **blob, size_t *len, size_t *cap, const void *rec, size_t rec_len);

#endif
