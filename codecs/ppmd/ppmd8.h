/* PPMd variant I, revision 1 (Dmitry Shkarin's PPMd var.I, 2002) with its carry-less range
 * coder: zip's method 98, as WinZip, 7-Zip and Info-ZIP write it.  Our own decoder, written
 * from the algorithm's description and the streams 7-Zip writes (ppmd7.h is its var.H
 * sibling; ppmd_common.h what the two share).
 *
 * Parameters: the model's order (2..16), its memory size (PPMD8_MEM_MIN..PPMD8_MEM_MAX) and
 * what the model does when that memory is full -- restart from scratch (PPMD8_RESTART) or cut
 * the model down to its shorter contexts and go on (PPMD8_CUT_OFF).  Var.I's third method,
 * freeze, is not allowed in zip and not decoded.  Zip states them in the 2 bytes that open
 * the entry's data (ppmd8_props).  The model lives in one block of the memory size, allocated
 * by ppmd8_new and never grown; the decoder's tables are about 25 KiB beside it.
 *
 * Push in, pull out, as ppmd7.h: the caller feeds compressed bytes (ppmd8_feed copies what
 * fits into the decoder's buffer) and takes decoded bytes (ppmd8_out).  A symbol is decoded
 * only while the decoder holds enough input for the worst case (PPMD8_SYM_IN bytes) or the
 * input has ended, so it never suspends inside a symbol.  The caller says how many bytes it
 * wants (zip's directory has the size) and, at that size, asks ppmd8_finished whether the
 * range coder ended cleanly there (7-Zip writes an end marker after the data; the format does
 * not require one).
 *
 * Errors: a range coder value out of its interval, input ending inside a symbol, an end marker
 * before the stated size, a model that broke (which valid input cannot do): PPMD8_BAD with
 * ppmd8_msg saying what.  Damaged data that still decodes gives other bytes; the container's
 * CRC catches it.  Not thread-safe; one decoder per stream.
 */
#ifndef TARSEEK_PPMD8_H
#define TARSEEK_PPMD8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PPMD8_ORDER_MIN 2
#define PPMD8_ORDER_MAX 16
#define PPMD8_MEM_MIN ((uint32_t)1 << 11)
#define PPMD8_MEM_MAX ((uint32_t)256 << 20) /* zip's 8-bit field: 256 MiB */
#define PPMD8_SYM_IN 256		    /* input a symbol may need, at most */

#define PPMD8_RESTART 0
#define PPMD8_CUT_OFF 1

#define PPMD8_MORE 0 /* needs input (or room): feed, or take, and call again */
#define PPMD8_END 1  /* an end marker was decoded (the stream ends here) */
#define PPMD8_BAD -5 /* damaged data (-EIO) */

struct ppmd8;

/* Parses zip's 2 parameter bytes (little-endian: bits 0-3 order - 1, 4-11 memory in MiB - 1,
 * 12-15 the restore method): 0, or -EINVAL (order below 2, a method other than restart or
 * cut-off; why says which). */
int ppmd8_props(const uint8_t props[2], unsigned *order, uint32_t *mem, unsigned *restore,
		const char **why);

/* A decoder for a model of that order, memory size and restore method (already checked by
 * ppmd8_props).  0 and *out, -EINVAL (out of bounds), -ENOMEM.  *out is NULL on failure. */
int ppmd8_new(unsigned order, uint32_t mem, unsigned restore, struct ppmd8 **out);
void ppmd8_free(struct ppmd8 *d); /* NULL does nothing */

/* Copies up to len bytes of input into the decoder; returns how many it took (0 when its
 * buffer is full: take output first). */
size_t ppmd8_feed(struct ppmd8 *d, const void *p, size_t len);

/* No more input will come: what is held must finish the stream. */
void ppmd8_input_end(struct ppmd8 *d);

/* Decodes up to len bytes into out, *got the bytes written.  PPMD8_MORE (call again after
 * feeding, or with room), PPMD8_END (an end marker; nothing more will come), PPMD8_BAD. */
int ppmd8_out(struct ppmd8 *d, uint8_t *out, size_t len, size_t *got);

/* At the stated size: true if the range coder ended cleanly there (its code is 0), or after
 * one end marker.  May decode that marker; call once, after the last byte was taken. */
bool ppmd8_finished(struct ppmd8 *d);

/* Input bytes fed but not consumed by the range coder. */
size_t ppmd8_unused(const struct ppmd8 *d);

const char *ppmd8_msg(const struct ppmd8 *d); /* why PPMD8_BAD */

size_t ppmd8_memory(uint32_t mem); /* what one decoder of that memory size holds */

#endif
