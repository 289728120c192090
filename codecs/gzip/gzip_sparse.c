/* Sparse checkpoint windows (see gzip_sparse.h): which window bytes does the data after a
 * checkpoint copy?
 *
 * The question is about the matches of the deflate stream, and rapidgzip answers it with a
 * Huffman pass of its own that lists them.  Here the inflaters we already trust answer it,
 * with tagged windows: the 32 KiB after the checkpoint are decoded twice more, once from a
 * window whose byte w holds the low 8 bits of w, once from one whose byte w holds 0x80 | the
 * high 7 bits.  A byte of output that is a literal comes out the same in both decodes and the
 * same as the real output; a byte copied from window byte w -- directly, or through a chain of
 * copies inside the new output -- comes out as w's two tags, and the two tags of w always
 * differ from the real byte in at least one of the decodes -- except for a window byte
 * whose two tags are equal (low byte v == 0x80 | high bits, 128 positions) and whose value is
 * v too.  So a byte of output whose decodes differ from the real one names the window byte it
 * came from; and a byte v >= 0x80 whose decodes do not differ might be a copy of the one
 * position whose tags are both v, which is kept as well.  Nothing is missed, if the inflaters
 * decode as deflate says (both engines are tested to): the unit tests decode from every
 * sparse checkpoint, and a mistake would be a segment CRC failure (EIO), never wrong bytes.
 *
 * Only the first 32 KiB of output can reach the window (a distance is at most 32 KiB), and
 * none after the stream ends (a gzip member after it starts with an empty window).
 *
 * Cost: two inflates of 32 KiB and a read of the compressed bytes, about 0.1 ms with ISA-L;
 * the scan's consumer thread pays it, not the inflating one.  What it saves: a sparse window
 * keeps a tenth (text) to a third (binaries) of the bytes and packs to a quarter to a tenth.
 */
#include "codecs/gzip/gzip_sparse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/gzip/inflater.h"

#define SP_WIN INFL_WINSIZE

struct gz_sparse {
	struct inflater *inf;
	uint8_t in[GZ_SPARSE_IN];
	uint8_t lo[SP_WIN], hi[SP_WIN]; /* the tagged windows */
	uint8_t o1[SP_WIN + 1], o2[SP_WIN + 1]; /* their decodes */
	uint8_t keep[SP_WIN];		/* 0xff: a window byte the output copies, else 0 */
};

struct gz_sparse *gz_sparse_new(void)
{
	struct gz_sparse *z = malloc(sizeof(*z));

	if (!z)
		return NULL;
	z->inf = infl_new(infl_default(), false);
	if (!z->inf) {
		free(z);
		return NULL;
	}
	for (size_t w = 0; w < SP_WIN; w++) {
		z->lo[w] = (uint8_t)w;
		z->hi[w] = (uint8_t)(0x80 | w >> 8);
	}
	return z;
}

void gz_sparse_free(struct gz_sparse *z)
{
	if (!z)
		return;
	infl_free(z->inf);
	free(z);
}

/* Decodes n bytes into out (which has room for one more), starting at the checkpoint with
 * window win[0..wlen); with ends, the stream must end right after them.  0, -EAGAIN (the
 * input ran out), -EIO (the stream is not as long as that), or -errno. */
static int sp_decode(struct gz_sparse *z, const uint8_t *in, size_t inlen, unsigned bits,
		     unsigned value, const uint8_t *win, size_t wlen, uint8_t *out, size_t n,
		     bool ends)
{
	size_t room = ends ? n + 1 : n;
	struct infl_io io = {.in = in, .in_len = inlen, .out = out, .out_len = room};
	int ret = infl_restart(z->inf);

	if (!ret)
		ret = infl_resume(z->inf, bits, value, win, wlen);
	while (!ret && io.out_len) {
		const uint8_t *was_in = io.in;
		size_t was_out = io.out_len;

		ret = infl_run(z->inf, &io, INFL_RUN);
		if (ret == INFL_END)
			return room - io.out_len == n ? 0 : -EIO;
		if (ret < 0)
			return ret;
		if (io.out_len && io.in == was_in && io.out_len == was_out)
			return io.in_len ? -EIO : -EAGAIN;
		ret = 0;
	}
	return ret ? ret : (ends ? -EIO : 0);
}

int gz_sparse_window(struct gz_sparse *z, struct src *in, uint64_t coff, unsigned bits,
		     uint8_t *win, size_t wlen, const uint8_t *next, size_t nlen, bool ends)
{
	size_t n = nlen < SP_WIN ? nlen : SP_WIN, kept = 0, inlen, lead = bits ? 1 : 0;
	unsigned value = 0;
	ssize_t got;
	int err;

	if (wlen > SP_WIN || bits > 7 || (bits && !coff))
		return -EINVAL;
	if (!wlen)
		return 0;
	if (n < SP_WIN && !ends)
		return -EAGAIN;
	if (n == SP_WIN)
		ends = false; /* what comes after the 32 KiB does not matter */
	/* the compressed bytes, with the one whose top bits come first when bits is set */
	got = src_pread(in, z->in, sizeof(z->in), coff - lead);
	if (got < 0)
		return (int)got;
	if ((size_t)got < lead)
		return -EIO;
	inlen = (size_t)got - lead;
	if (bits)
		value = z->in[0] >> (8 - bits);

	/* the window bytes the output copies, by their tags */
	err = sp_decode(z, z->in + lead, inlen, bits, value, z->lo, wlen, z->o1, n, ends);
	if (!err)
		err = sp_decode(z, z->in + lead, inlen, bits, value, z->hi, wlen, z->o2, n, ends);
	if (err)
		return err;
	memset(z->keep, 0, wlen);
	for (size_t p = 0; p < n; p++) {
		/* most of the output is literals: skip them 8 at a time */
		if (p % 8 == 0 && p + 8 <= n) {
			uint64_t a, b, r;
			memcpy(&a, z->o1 + p, 8);
			memcpy(&b, z->o2 + p, 8);
			memcpy(&r, next + p, 8);
			if (!((a ^ r) | (b ^ r))) {
				p += 7;
				continue;
			}
		}
		size_t w = (size_t)(z->o2[p] & 0x7f) << 8 | z->o1[p];
		if (z->o1[p] == next[p] && z->o2[p] == next[p]) {
			/* a literal; or a copy of the window byte whose two tags are both this
			 * byte (v == 0x80 | v >> 8 ... see above): keep that one, to be sure */
			if ((next[p] & 0x80) && w < wlen)
				z->keep[w] = 0xff;
			continue;
		}
		/* a copy of window byte w, which must then hold this byte */
		if (!(z->o2[p] & 0x80) || w >= wlen || win[w] != next[p])
			return -EIO; /* neither a literal nor a copy: next[] is not the stream's */
		z->keep[w] = 0xff;
	}
	for (size_t w = 0; w < wlen; w++) { /* branch-free: the compiler vectorizes it */
		win[w] &= z->keep[w];
		kept += z->keep[w] & 1;
	}
	return (int)kept;
}
