/* The ISA-L engine of inflater.h: isal_inflate on raw deflate, with what zlib gives for free
 * built around it.
 *
 * - Entering a stream at a checkpoint: isal_inflate_set_dict before the first call, and the
 *   leftover bits of the byte before the checkpoint put into read_in / read_in_length (LSB
 *   first), exactly what zlib's inflatePrime takes.
 * - The end of the stream: after the last block, the bits ISA-L read ahead are still in
 *   read_in (ISA-L 2.30 does not give them back), so the first byte after the deflate data
 *   is read_in_length / 8 bytes before next_in (the rest of read_in_length is the padding of
 *   the last byte).
 * - Block boundaries: ISA-L has no "stop at the next block" call, and it does not stop
 *   between blocks on its own.  But when the input ends inside a block header, it restores
 *   read_in / read_in_length to the header's first bit, keeps the header's bytes so far in
 *   tmp_in_buffer and leaves block_state at ISAL_BLOCK_HDR (ISAL_BLOCK_NEW_HDR when the input
 *   ended right at the boundary).  So a hunt feeds the input INFL_HUNT_PIECE bytes at a time
 *   and stops as soon as a call ends in that state with all its output given out: the
 *   header starts at bit 8 * (end of the input fed) - 8 * tmp_in_size - read_in_length.
 *   A header of usual size (a dynamic one of real text or binaries: 60 bytes and more) is
 *   nearly always caught; a short one (small alphabets) or a fixed-Huffman one (3 bits) only
 *   when a piece happens to end in it, so a hunt can pass boundaries and take a later one.
 *   A stored block says how long it is: the hunt feeds it to its last byte and catches its
 *   end every time.  After INFL_HUNT_MAX bytes of input the hunt gives up (INFL_NOBLOCK).
 *   Every boundary it reports is a real one, one zlib's Z_BLOCK finds (the unit tests compare
 *   the two).  Small pieces cost calls, which is why a hunt starts only at the spacing mark.
 * - Held output: a call that gives out output ends by moving ISA-L's 32 KiB of history to the
 *   front of its buffer, which made a hunt's calls of 64 bytes each cost a 32 KiB memmove
 *   (most of the 0.7 s that 7,000 hunts added to indexing backup.tar.gz).  ISA-L decodes into
 *   its own buffer first, after the history, and moves it only when a call has given out more
 *   than 32 KiB from it.  So a hunt calls with no room (avail_out 0) while less than
 *   INFL_HUNT_HOLD bytes are held there, and gives them out with a call without input: when
 *   it finds a boundary (the header's bits stay where they are: ISA-L keeps them as it does
 *   at the end of any input), and whenever that much is held.
 * - The window: ISA-L keeps its history inside its state, in no documented form, so with
 *   track set the engine keeps a 32 KiB ring of the stream's last output itself.
 * - 32-bit counters: avail_in / avail_out / total_out are 32-bit; calls are capped and the
 *   64-bit offsets are the caller's.
 */
#include "codecs/gzip/inflater_int.h"

#include <isa-l/igzip_lib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define INFL_HUNT_PIECE 64u /* input per call while hunting: 256 and more miss boundaries */
#define INFL_HUNT_HOLD (16u << 10) /* output a hunt leaves in ISA-L's buffer (it has 32 KiB) */
#define INFL_CALL_MAX (1u << 30)

_Static_assert(ISAL_DEF_HIST_SIZE == INFL_WINSIZE, "deflate's window is 32 KiB");

struct isal_infl {
	struct inflate_state st;
	bool track;
	size_t rpos;	 /* ring: where the next byte of output goes */
	size_t rfill;	 /* ring: bytes of this stream in it (INFL_WINSIZE once full) */
	uint64_t hunt;	 /* input since the hunt started */
	const char *err; /* a failed call: its bytes still in the state go out first */
	uint8_t ring[];
};

struct isal_infl *isal_infl_new(bool track)
{
	/* zeroed: see isal_infl_restart */
	struct isal_infl *x = calloc(1, sizeof(*x) + (track ? INFL_WINSIZE : 0));

	if (!x)
		return NULL;
	isal_inflate_init(&x->st);
	x->st.crc_flag = ISAL_DEFLATE;
	x->track = track;
	x->rpos = x->rfill = 0;
	x->hunt = 0;
	return x;
}

void isal_infl_free(struct isal_infl *x)
{
	free(x);
}

/* ISA-L does not reject every distance that reaches before the stream's start (zlib's
 * "invalid distance too far back"): such a copy reads its history buffer.  So that damaged
 * data decodes to the same bytes however the stream was entered -- a scan from the start, a
 * decoder at a checkpoint, after another member -- that buffer starts zeroed every time.  The
 * bytes are wrong either way; the member's CRC-32 (gzip's trailer, zip's directory) and the
 * index's segment CRCs report the damage. */
int isal_infl_restart(struct isal_infl *x)
{
	memset(x->st.tmp_out_buffer, 0, sizeof(x->st.tmp_out_buffer));
	isal_inflate_reset(&x->st);
	x->st.crc_flag = ISAL_DEFLATE;
	x->rpos = x->rfill = 0;
	x->hunt = 0;
	x->err = NULL;
	return 0;
}

static void ring_put(struct isal_infl *x, const uint8_t *p, size_t n)
{
	size_t k;

	if (n >= INFL_WINSIZE) {
		memcpy(x->ring, p + n - INFL_WINSIZE, INFL_WINSIZE);
		x->rpos = 0;
		x->rfill = INFL_WINSIZE;
		return;
	}
	k = INFL_WINSIZE - x->rpos;
	if (k > n)
		k = n;
	memcpy(x->ring + x->rpos, p, k);
	memcpy(x->ring, p + k, n - k);
	x->rpos = (x->rpos + n) % INFL_WINSIZE;
	x->rfill = x->rfill + n < INFL_WINSIZE ? x->rfill + n : INFL_WINSIZE;
}

int isal_infl_resume(struct isal_infl *x, unsigned bits, unsigned value, const uint8_t *win,
		     size_t wlen)
{
	if (wlen && isal_inflate_set_dict(&x->st, (uint8_t *)win, (uint32_t)wlen) != COMP_OK)
		return -EINVAL;
	x->st.read_in = value & ((1u << bits) - 1);
	x->st.read_in_length = (int32_t)bits;
	if (x->track)
		ring_put(x, win, wlen);
	return 0;
}

/* The zlib wrapper is ISA-L's too (crc_flag ISAL_ZLIB: the header parsed, the Adler-32
 * checked); a stream that ends reaches ISAL_BLOCK_FINISH, one cut short or without room
 * stops before. */
int isal_infl_unpack(struct isal_infl *x, const void *src, size_t slen, uint8_t *dst,
		     size_t *dlen)
{
	struct inflate_state *s = &x->st;
	bool ok = false;
	size_t n = 0;

	if (slen <= UINT32_MAX && *dlen <= UINT32_MAX) {
		isal_inflate_reset(s);
		s->crc_flag = ISAL_ZLIB;
		s->next_in = (uint8_t *)src;
		s->avail_in = (uint32_t)slen;
		s->next_out = dst;
		s->avail_out = (uint32_t)*dlen;
		ok = isal_inflate(s) == ISAL_DECOMP_OK && s->block_state == ISAL_BLOCK_FINISH;
		n = s->total_out;
	}
	isal_infl_restart(x);
	if (!ok)
		return -EIO;
	*dlen = n;
	return 0;
}

size_t isal_infl_window(struct isal_infl *x, uint8_t *win)
{
	size_t head;

	if (!x->track)
		return 0;
	if (x->rfill < INFL_WINSIZE) { /* not wrapped yet */
		memcpy(win, x->ring, x->rfill);
		return x->rfill;
	}
	head = INFL_WINSIZE - x->rpos;
	memcpy(win, x->ring + x->rpos, head);
	memcpy(win + head, x->ring, x->rpos);
	return INFL_WINSIZE;
}

size_t isal_infl_memory(const struct isal_infl *x)
{
	return sizeof(*x) + (x->track ? INFL_WINSIZE : 0);
}

static const char *isal_msg(int ret)
{
	switch (ret) {
	case ISAL_INVALID_BLOCK:
		return "invalid block type or header";
	case ISAL_INVALID_SYMBOL:
		return "invalid code";
	case ISAL_INVALID_LOOKBACK:
		return "invalid distance too far back";
	default:
		return "invalid deflate data";
	}
}

/* Output ISA-L has decoded into its buffer and not given out yet. */
static size_t held(const struct inflate_state *s)
{
	return (size_t)(s->tmp_out_valid - s->tmp_out_processed);
}

/* Between blocks: a call's input ended in (or right before) a block header. */
static bool at_header(const struct inflate_state *s)
{
	return (s->block_state == ISAL_BLOCK_HDR || s->block_state == ISAL_BLOCK_NEW_HDR) &&
	       !s->write_overflow_len && !s->copy_overflow_length;
}

/* Between blocks, with all output given out. */
static bool at_boundary(const struct inflate_state *s)
{
	return at_header(s) && !held(s);
}

/* The bit offset of the block header the input ended in: its bytes so far are in
 * tmp_in_buffer, its first bits in read_in; in_off is the offset after the input fed. */
static uint64_t header_bit(const struct inflate_state *s, uint64_t in_off)
{
	return in_off * 8 - (uint64_t)s->tmp_in_size * 8 - (uint64_t)s->read_in_length;
}

/* Input for the next call of a hunt: INFL_HUNT_PIECE, or in a stored block exactly the rest
 * of it, so that the input ends at its end, and its boundary is caught every time. */
static size_t hunt_piece(const struct inflate_state *s)
{
	if (s->block_state == ISAL_BLOCK_TYPE0 && s->type0_block_len > s->read_in_length / 8)
		return (size_t)(s->type0_block_len - s->read_in_length / 8);
	return INFL_HUNT_PIECE;
}

int isal_infl_run(struct isal_infl *x, struct infl_io *io, enum infl_mode mode, const char **msg)
{
	struct inflate_state *s = &x->st;

	/* After an error, ISA-L drops what it decoded into its own buffer but had no room to
	 * give: those bytes are good (they precede the damage), and zlib gives them all, so they
	 * go out first, whatever the sizes of the calls. */
	if (x->err) {
		size_t k = (size_t)(s->tmp_out_valid - s->tmp_out_processed);
		if (!k) {
			*msg = x->err;
			return -EIO;
		}
		if (k > io->out_len)
			k = io->out_len;
		memcpy(io->out, s->tmp_out_buffer + s->tmp_out_processed, k);
		if (x->track)
			ring_put(x, io->out, k);
		s->tmp_out_processed += (int32_t)k;
		io->out += k;
		io->out_len -= k;
		return INFL_MORE;
	}
	/* the last call (a run) may have ended in a header already */
	if (mode == INFL_TO_BLOCK && at_boundary(s) && (s->read_in_length || s->tmp_in_size)) {
		io->at = header_bit(s, io->in_off);
		x->hunt = 0;
		return INFL_BLOCK;
	}
	for (;;) {
		size_t piece = io->in_len, room = io->out_len, used, made;
		bool give = false, hold = false;
		int ret;

		if (mode == INFL_TO_BLOCK) {
			/* found with output held: it goes out first, by a call without input */
			give = at_header(s) && held(s);
			if (give)
				piece = 0;
			else if (piece > hunt_piece(s))
				piece = hunt_piece(s);
			/* never without input (at the end of a file, what is held must come out),
			 * nor after the last block (ISA-L finishes once it has given all out) */
			hold = !give && piece && held(s) < INFL_HUNT_HOLD &&
			       s->block_state != ISAL_BLOCK_INPUT_DONE;
		}
		if (piece > INFL_CALL_MAX)
			piece = INFL_CALL_MAX;
		if (room > INFL_CALL_MAX)
			room = INFL_CALL_MAX;
		s->next_in = (uint8_t *)io->in;
		s->avail_in = (uint32_t)piece;
		s->next_out = io->out;
		s->avail_out = hold ? 0 : (uint32_t)room;
		ret = isal_inflate(s);
		/* after an error avail_in can be past zero (0xffffffff: ISA-L took the bits it
		 * had read ahead as input): the cursor then stops at the end of the piece; and
		 * avail_out too (0xffffff22 seen after an invalid code met while decoding into
		 * the caller's buffer), so the output is counted by next_out, which stays right */
		used = s->avail_in <= piece ? piece - s->avail_in : piece;
		made = (size_t)(s->next_out - io->out);
		if (made > room)
			made = room;
		if (x->track && made)
			ring_put(x, io->out, made);
		io->in += used;
		io->in_len -= used;
		io->in_off += used;
		io->out += made;
		io->out_len -= made;
		if (ret < 0) {
			x->err = isal_msg(ret);
			if (s->tmp_out_valid > s->tmp_out_processed)
				return INFL_MORE; /* with its bytes, the next call */
			*msg = x->err;
			return -EIO;
		}
		if (s->block_state == ISAL_BLOCK_FINISH) {
			io->at = (io->in_off - (uint64_t)s->read_in_length / 8) * 8;
			return INFL_END;
		}
		if (mode != INFL_TO_BLOCK)
			return INFL_MORE;
		x->hunt += used;
		if (at_boundary(s)) {
			io->at = header_bit(s, io->in_off);
			x->hunt = 0;
			return INFL_BLOCK;
		}
		if (give && held(s))
			return INFL_MORE; /* no room for all of it: the caller makes some */
		if (x->hunt >= INFL_HUNT_MAX) {
			x->hunt = 0;
			return INFL_NOBLOCK;
		}
		if (give)
			continue;
		if (!io->in_len || !io->out_len || (!used && !made))
			return INFL_MORE;
	}
}
