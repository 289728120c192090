/* BCJ2 decoder (bcj2.h): written from the format's description (7-Zip's 7zFormat.txt and
 * Methods.txt name it; the algorithm is the x86 branch split described in bcj2.h).
 *
 * The range coder is LZMA's binary one: 11-bit probabilities starting at one half, moved by
 * a shift of 5, a 32-bit range renormalised by one byte when it drops below 2^24, five bytes
 * to start (the first is always 0 and shifts out).  Bits are decoded with three kinds of
 * model: one per preceding byte for E8, one for E9, one for the Jcc opcodes.  Normalisation
 * runs before a bit rather than after the previous one: the bytes read and the bits decoded
 * are the same, and a stream is never asked for a byte past its last bit.
 *
 * The decoder is a small state machine so that any input may run dry at any byte: bcj2_run
 * returns which input it needs, and the caller (the 7z codec) refills that one.
 */
#include "codecs/7z/bcj2.h"

#include <string.h>

enum { BCJ2_S_COPY, BCJ2_S_BIT, BCJ2_S_ADDR };

#define BCJ2_TOP (1u << 24)
#define BCJ2_PROB_BITS 11
#define BCJ2_MOVE 5

static int bcj2_is_branch(uint8_t prev, uint8_t b)
{
	return (b & 0xFE) == 0xE8 || (prev == 0x0F && (b & 0xF0) == 0x80);
}

void bcj2_init(struct bcj2_dec *d, uint64_t size)
{
	memset(d, 0, sizeof(*d));
	d->size = size;
	d->range = 0xFFFFFFFFu;
	for (size_t i = 0; i < sizeof(d->probs) / sizeof(d->probs[0]); i++)
		d->probs[i] = 1u << (BCJ2_PROB_BITS - 1);
	d->state = BCJ2_S_COPY;
}

int bcj2_run(struct bcj2_dec *d, struct bcj2_in in[BCJ2_NSTREAMS], uint8_t *out, size_t *outlen)
{
	size_t cap = *outlen, o = 0;
	int ret = 0;

	for (;;) {
		if (d->pos == d->size)
			break;
		if (d->npend) {
			if (o == cap)
				break;
			out[o++] = d->pend[4 - d->npend];
			d->npend--;
			d->pos++;
			continue;
		}
		if (d->state == BCJ2_S_COPY) {
			struct bcj2_in *m = &in[BCJ2_MAIN];
			uint64_t left = d->size - d->pos;
			size_t n = cap - o, i = 0;

			if (n == 0)
				break;
			if (m->n == 0) {
				ret = 1 + BCJ2_MAIN;
				break;
			}
			if (n > m->n)
				n = m->n;
			if (n > left)
				n = (size_t)left;
			/* copy up to and including the first branch opcode */
			while (i < n) {
				uint8_t b = m->p[i++];

				out[o++] = b;
				if (bcj2_is_branch(d->prev, b)) {
					d->op = b;
					d->state = BCJ2_S_BIT;
					break;
				}
				d->prev = b;
			}
			m->p += i;
			m->n -= i;
			d->pos += i;
			continue;
		}
		if (d->state == BCJ2_S_BIT) {
			struct bcj2_in *rc = &in[BCJ2_RC];
			uint16_t *p;
			uint32_t bound;

			while (d->rc_init < 5) {
				if (rc->n == 0)
					return *outlen = o, 1 + BCJ2_RC;
				d->code = d->code << 8 | *rc->p++;
				rc->n--;
				d->rc_init++;
			}
			if (d->range < BCJ2_TOP) {
				if (rc->n == 0) {
					ret = 1 + BCJ2_RC;
					break;
				}
				d->range <<= 8;
				d->code = d->code << 8 | *rc->p++;
				rc->n--;
			}
			p = d->op == 0xE8 ? &d->probs[d->prev] : d->op == 0xE9 ? &d->probs[256]
									       : &d->probs[257];
			bound = (d->range >> BCJ2_PROB_BITS) * *p;
			if (d->code < bound) {
				d->range = bound;
				*p = (uint16_t)(*p + (((1u << BCJ2_PROB_BITS) - *p) >> BCJ2_MOVE));
				d->prev = d->op;
				d->state = BCJ2_S_COPY;
			} else {
				d->range -= bound;
				d->code -= bound;
				*p = (uint16_t)(*p - (*p >> BCJ2_MOVE));
				d->naddr = 0;
				d->state = BCJ2_S_ADDR;
			}
			continue;
		}
		/* BCJ2_S_ADDR: the target from the call (E8) or the jump stream */
		{
			enum bcj2_stream k = d->op == 0xE8 ? BCJ2_CALL : BCJ2_JUMP;
			uint32_t dest;

			while (d->naddr < 4) {
				if (in[k].n == 0)
					return *outlen = o, 1 + (int)k;
				d->addr[d->naddr++] = *in[k].p++;
				in[k].n--;
			}
			dest = ((uint32_t)d->addr[0] << 24 | (uint32_t)d->addr[1] << 16 |
				(uint32_t)d->addr[2] << 8 | d->addr[3]) -
			       (uint32_t)(d->pos + 4);
			for (int i = 0; i < 4; i++)
				d->pend[i] = (uint8_t)(dest >> (8 * i));
			d->npend = 4;
			d->prev = (uint8_t)(dest >> 24);
			d->state = BCJ2_S_COPY;
		}
	}
	*outlen = o;
	return ret;
}
