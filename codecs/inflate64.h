/* Deflate64 ("enhanced deflate", PKWARE's zip method 9, 7-Zip's coder 040109): raw deflate
 * with a 64 KiB window, length code 285 meaning 3 + 16 extra bits (not 258), and distance
 * codes 30 and 31 (32769 and 49153, 14 extra bits).  Neither zlib nor libarchive decodes it;
 * 7-Zip and Info-ZIP's unzip do.  This is our own decoder, written from the format's
 * description (APPNOTE 4.4.5, RFC 1951 for the rest): a canonical Huffman decode a bit at a
 * time -- simple and checked rather than fast.
 *
 * Push in, pull out: the caller feeds compressed bytes (inf64_feed copies what fits into the
 * decoder's own buffer) and takes decoded bytes (inf64_out).  The decoder suspends only where
 * its state is small -- before a block header, before a symbol, inside a stored block or a
 * match -- and waits for input while what it holds could end in the middle of one (a header
 * needs at most 1 KiB, a symbol 60 bits), unless the caller said the input has ended.
 *
 * Errors: every malformed code, a distance before the first byte, a block type 3, a stored
 * length whose complement fails, input ending inside the stream: INF64_BAD, with inf64_msg
 * saying what.  Not thread-safe; one decoder per stream.
 */
#ifndef TARSEEK_INFLATE64_H
#define TARSEEK_INFLATE64_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define INF64_MORE 0 /* needs input (or room): feed, or take, and call again */
#define INF64_END 1  /* the last block ended */
#define INF64_BAD -5 /* damaged data (-EIO) */

struct inf64;

struct inf64 *inf64_new(void); /* NULL if out of memory */
void inf64_free(struct inf64 *s); /* NULL does nothing */

/* Copies up to len bytes of input into the decoder; returns how many it took (0 when its
 * buffer is full: take output first). */
size_t inf64_feed(struct inf64 *s, const void *p, size_t len);

/* No more input will come: what is held must finish the stream. */
void inf64_input_end(struct inf64 *s);

/* Decodes into out (up to len bytes), *got the bytes written.  INF64_END once the last block
 * has ended (and every byte of it was taken), INF64_MORE, or INF64_BAD. */
int inf64_out(struct inf64 *s, uint8_t *out, size_t len, size_t *got);

/* Input bytes fed but not consumed by the stream (after INF64_END: what follows it). */
size_t inf64_unused(const struct inf64 *s);

const char *inf64_msg(const struct inf64 *s); /* why INF64_BAD */

size_t inf64_memory(void); /* what one decoder holds */

#endif
