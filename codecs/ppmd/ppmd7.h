/* PPMd variant H (Dmitry Shkarin's PPMd var.H, 2001) with 7-Zip's range coder: the 7z coder
 * 030401.  Neither liblzma nor libarchive's public API decodes it for us; this is our own
 * decoder, written from the algorithm's description and the format 7-Zip writes.
 *
 * Properties (5 bytes, as the 7z coder states them): the model's order (2..64) and its memory
 * size, u32 little-endian, PPMD7_MEM_MIN..PPMD7_MEM_MAX.  The model lives entirely in one
 * block of that size (plus a few units of bookkeeping), allocated by ppmd7_new and never grown;
 * the decoder's own tables are about 20 KiB beside it.  We refuse more than 2 GiB: 7-Zip allows
 * up to 4 GiB - 36, but its own presets stop at 192 MiB (-mx=9) and a header claiming more is
 * far likelier to be damage than an archive worth a 4 GiB allocation.
 *
 * Push in, pull out, as inflate64.h: the caller feeds compressed bytes (ppmd7_feed copies what
 * fits into the decoder's buffer) and takes decoded bytes (ppmd7_out).  A symbol is decoded
 * only while the decoder holds enough input for the worst case (PPMD7_SYM_IN bytes) or the
 * input has ended, so it never suspends inside a symbol.  The stream has no end of its own
 * that the decoder could see (7-Zip writes no end marker unless asked): the caller says how
 * many bytes it wants and, at that size, asks ppmd7_finished whether the range coder ended
 * cleanly there.
 *
 * Errors: a first byte that is not 0, a range coder value out of its interval, input ending
 * inside a symbol, an end marker before the stated size: PPMD7_BAD with ppmd7_msg saying
 * what.  Damaged data that still decodes gives other bytes; the container's CRC catches it.
 * Not thread-safe; one decoder per stream.
 */
#ifndef TARSEEK_PPMD7_H
#define TARSEEK_PPMD7_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PPMD7_ORDER_MIN 2
#define PPMD7_ORDER_MAX 64
#define PPMD7_MEM_MIN ((uint32_t)1 << 11)
#define PPMD7_MEM_MAX ((uint32_t)1 << 31)
#define PPMD7_SYM_IN 256 /* input a symbol may need, at most */

#define PPMD7_MORE 0 /* needs input (or room): feed, or take, and call again */
#define PPMD7_END 1  /* an end marker was decoded (the stream ends here) */
#define PPMD7_BAD -5 /* damaged data (-EIO) */

struct ppmd7;

/* Parses 7z's 5 property bytes: 0, or -EINVAL (wrong length, order or memory size out of
 * bounds; why says which). */
int ppmd7_props(const uint8_t *props, size_t len, unsigned *order, uint32_t *mem, const char **why);

/* A decoder for a model of that order and memory size (already checked by ppmd7_props).
 * 0 and *out, -EINVAL (out of bounds), -ENOMEM.  *out is NULL on failure. */
int ppmd7_new(unsigned order, uint32_t mem, struct ppmd7 **out);
void ppmd7_free(struct ppmd7 *d); /* NULL does nothing */

/* Copies up to len bytes of input into the decoder; returns how many it took (0 when its
 * buffer is full: take output first). */
size_t ppmd7_feed(struct ppmd7 *d, const void *p, size_t len);

/* No more input will come: what is held must finish the stream. */
void ppmd7_input_end(struct ppmd7 *d);

/* Decodes up to len bytes into out, *got the bytes written.  PPMD7_MORE (call again after
 * feeding, or with room), PPMD7_END (an end marker; nothing more will come), PPMD7_BAD. */
int ppmd7_out(struct ppmd7 *d, uint8_t *out, size_t len, size_t *got);

/* At the stated size: true if the range coder ended cleanly there (its code is 0), or after
 * one end marker.  May decode that marker; call once, after the last byte was taken. */
bool ppmd7_finished(struct ppmd7 *d);

/* Input bytes fed but not consumed by the range coder. */
size_t ppmd7_unused(const struct ppmd7 *d);

const char *ppmd7_msg(const struct ppmd7 *d); /* why PPMD7_BAD */

size_t ppmd7_memory(uint32_t mem); /* what one decoder of that memory size holds */

#endif
