/* Sparse checkpoint windows for deflate (gzip_scan.c's scan).
 *
 * A checkpoint stores the 32 KiB of output before it, because the blocks after it may copy
 * from there.  Most of those bytes are never copied: only the matches of the next 32 KiB of
 * output can reach back before the checkpoint, and they touch a small part of the window
 * (often a tenth or less on text, a third on binaries).  gz_sparse_window finds the bytes that
 * are referenced and zeroes the others, so the stored window compresses to a fraction of its
 * size and checkpoints can be denser for the same index size.  A decoder resumes with the
 * sparse window exactly as with the full one: the bytes it would have needed are all there.
 *
 *   gz_sparse_new()       a worker for one thread (about 320 KiB); NULL: no memory.
 *   gz_sparse_free(z)     NULL does nothing.
 *   gz_sparse_window(z, in, coff, bits, win, wlen, next, nlen, ends)
 *       win[0..wlen): the window of the checkpoint at compressed offset coff with `bits`
 *       leftover bits (the checkpoint fields of gzip.c; not a member start); next[0..nlen):
 *       the output after it, as the scan decoded it; ends: the deflate stream (the member)
 *       ends after next[nlen - 1].  Reads the compressed bytes after the checkpoint from in.
 *       Returns the number of window bytes kept (the others are now 0), or -errno with win
 *       untouched: -EAGAIN when there is too little output or input to decide (nlen < 32 KiB
 *       and !ends; a stream that needs more than GZ_SPARSE_IN bytes for 32 KiB), -ESPIPE or
 *       another read error from in, -EIO when the data is not what next[] says, -ENOMEM.
 *       Every failure leaves the full window, which is always right.
 */
#ifndef TARSEEK_GZIP_SPARSE_H
#define TARSEEK_GZIP_SPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/source.h"

#define GZ_SPARSE_IN (128u << 10) /* compressed bytes read after a checkpoint */

struct gz_sparse;

struct gz_sparse *gz_sparse_new(void);
void gz_sparse_free(struct gz_sparse *z);
int gz_sparse_window(struct gz_sparse *z, struct src *in, uint64_t coff, unsigned bits,
		     uint8_t *win, size_t wlen, const uint8_t *next, size_t nlen, bool ends);

#endif
