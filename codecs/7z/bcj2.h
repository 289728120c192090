/* BCJ2: 7-Zip's x86 branch converter with four inputs, decoder only (bcj2.c).
 *
 * The encoder splits x86 code into a main stream (the code with the targets of converted
 * CALL (E8), JMP (E9) and Jcc (0F 8x) instructions taken out), a call stream and a jump stream
 * (those targets, absolute, 4 bytes big-endian each) and a range-coded stream of one bit per
 * branch opcode: converted or not.  The decoder copies the main stream, and after each branch
 * opcode decodes its bit; for a 1 it writes the next target of the call stream (E8) or the jump
 * stream (the others) as a relative little-endian displacement.
 *
 * The state is a plain struct with no pointers and no allocation: bcj2_init, then bcj2_run as
 * often as needed with whatever input the caller has.  Not thread-safe per state; states are
 * independent.
 */
#ifndef TARSEEK_BCJ2_H
#define TARSEEK_BCJ2_H

#include <stddef.h>
#include <stdint.h>

enum bcj2_stream { BCJ2_MAIN, BCJ2_CALL, BCJ2_JUMP, BCJ2_RC, BCJ2_NSTREAMS };

struct bcj2_in {
	const uint8_t *p;
	size_t n;
};

struct bcj2_dec {
	uint64_t size;	 /* bytes to produce in all */
	uint64_t pos;	 /* bytes produced so far */
	uint32_t range, code;
	uint8_t rc_init; /* range-coder bytes read so far, up to 5 */
	uint8_t prev;	 /* the byte before the current one, for the E8 model and Jcc */
	uint8_t op;	 /* the branch opcode whose bit is pending (when state says so) */
	uint8_t state;	 /* internal */
	uint8_t addr[4]; /* a target being read */
	uint8_t naddr;
	uint8_t pend[4]; /* displacement bytes not yet written */
	uint8_t npend;
	uint16_t probs[258];
};

/* Starts a decoder that produces size bytes. */
void bcj2_init(struct bcj2_dec *d, uint64_t size);

/* Decodes from in[] (each advanced past what it used) into out (at most *outlen bytes; *outlen
 * is set to the bytes written).  Returns:
 *   0                  out is full, or the decoder has produced its size (d->pos == d->size);
 *   1 + BCJ2_MAIN..RC  it needs more of that input (in[k].n is 0): give more, or if that input
 *                      has ended, the data is damaged (or, for BCJ2_MAIN, short);
 * It stops at d->size exactly: no bit is decoded for a branch opcode that is the last byte. */
int bcj2_run(struct bcj2_dec *d, struct bcj2_in in[BCJ2_NSTREAMS], uint8_t *out, size_t *outlen);

#endif
