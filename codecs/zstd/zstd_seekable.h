/* Writing zstd's seekable format (contrib/seekable_format in zstd), and reading its seek table:
 * what tarseek-convert's .tar.zst output (convert/enc_zstd.c) and the shadow (shadow/) share.
 *
 * A seekable file is a run of independent frames followed by a seek table: a skippable frame
 * (magic 0x184D2A5E) holding, per frame, its compressed and decoded sizes (4 bytes each, here
 * without the optional checksums: every frame written here carries its own XXH64 checksum and
 * its content size), then a footer (frame count, a descriptor byte, magic 0x8F92EAB1).  `zstd
 * -d` reads such a file as any .zst; readers that know the format seek in it.
 *
 * Frames are made by zsk_frame: compressed at a level by libzstd, or stored (ZSK_STORE: raw
 * blocks, as fast as a copy), both with the content size and the checksum, so either kind is
 * verified the same way when it is read.  A skippable frame (zsk_skippable) may carry data of
 * the writer's own; listed in the seek table with a decoded size of 0, it is skipped by every
 * reader, and the table still adds up.
 *
 * Errors: -errno (-ENOMEM; -EIO for a library failure, logged; -EFBIG for a frame or table
 * beyond the format's 32-bit fields).  Thread-safe where it says so.
 */
#ifndef TARSEEK_ZSTD_SEEKABLE_H
#define TARSEEK_ZSTD_SEEKABLE_H

#include <stddef.h>
#include <stdint.h>

#include "common/source.h"

#define ZSK_STORE (-1000) /* zsk_frame's level for a stored (raw) frame */

/* The most a frame of len decoded bytes can take, at any level or stored. */
size_t zsk_bound(size_t len);

/* A compression context, for one thread at a time (NULL if out of memory). */
struct zsk_cctx;
struct zsk_cctx *zsk_cctx_new(void);
void zsk_cctx_free(struct zsk_cctx *c); /* NULL does nothing */

/* One frame holding in[0..len): compressed at level with c (a level libzstd accepts), or
 * stored (level ZSK_STORE; c may then be NULL), into out (cap >= zsk_bound(len)).  The frame's
 * size in *out_len.  0 or -errno. */
int zsk_frame(struct zsk_cctx *c, int level, const void *in, size_t len, void *out, size_t cap,
	      size_t *out_len);

/* The stored frame zsk_frame would make of in[0..len), handed to put piece by piece (its
 * header, each raw block's header and bytes, its checksum) instead of copied into one buffer:
 * a writer that gathers its output anyway copies each byte once.  Its size in *out_len.  0,
 * or put's first error (nothing is put after it). */
int zsk_store_to(const void *in, size_t len, int (*put)(void *arg, const void *p, size_t n),
		 void *arg, size_t *out_len);

/* A skippable frame (magic 0x184D2A50 | nibble) holding data[0..len) into a new buffer. */
int zsk_skippable(unsigned nibble, const void *data, size_t len, uint8_t **out, size_t *out_len);

/* The seek table being built: one entry per frame, in file order. */
struct zsk_table_w {
	uint8_t *ent; /* 8 bytes per frame */
	uint64_t n, cap;
};
int zsk_table_add(struct zsk_table_w *t, uint64_t csize, uint64_t dsize);
/* The table's skippable frame and footer, into a new buffer. */
int zsk_table_bytes(const struct zsk_table_w *t, uint8_t **out, size_t *len);
void zsk_table_w_free(struct zsk_table_w *t); /* empties it */

/* A seek table read from a file. */
struct zsk_table {
	uint64_t n;	  /* frames */
	uint64_t off;	  /* where the table's frame starts: the sum of the compressed sizes */
	uint32_t *csize;  /* per frame */
	uint32_t *dsize;
};
/* Reads the seek table at the end of in: 0 and *out, 0 and *out = NULL if the file has none
 * (or an invalid one, logged at debug level), or -errno for an I/O error. */
int zsk_table_read(struct src *in, struct zsk_table **out);
void zsk_table_free(struct zsk_table *t); /* NULL does nothing */

#endif
