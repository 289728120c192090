/* The 7z folder decoding graph (see sevenzip_graph.h): its nodes' read functions.  The graph
 * is built by sevenzip_build.c. */
#include "codecs/7z/sevenzip_graph.h"

#include "codecs/7z/bcj_riscv.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"
#include "codecs/liberr.h"

/* ---- nodes --------------------------------------------------------------------------------- */

/* Makes input k of n hold bytes: > 0 bytes available, 0 at the end of that input, or -errno. */
static ssize_t sz_fill(struct sz_node *n, unsigned k)
{
	struct sz_ibuf *ib = &n->ib[k];
	ssize_t r;

	if (ib->pos < ib->len)
		return (ssize_t)(ib->len - ib->pos);
	if (ib->eof)
		return 0;
	r = sz_read(n->child[k], ib->buf, ib->cap);
	if (r < 0)
		return r;
	ib->pos = 0;
	ib->len = (size_t)r;
	if (r == 0)
		ib->eof = true;
	return r;
}

/* At n's end: input k must be used up. */
static int sz_drained(struct sz_node *n, unsigned k)
{
	ssize_t r = sz_fill(n, k);

	if (r < 0)
		return (int)r;
	if (r > 0)
		return sz_fail(n, -EIO, "data follows the end of the coded stream (input %u)", k);
	return 0;
}

static ssize_t sz_pack_read(struct sz_node *n, uint8_t *buf, size_t len)
{
	uint64_t off = n->u.pack.off + n->done;
	ssize_t r;

	if (len > n->size - n->done)
		len = (size_t)(n->size - n->done);
	if (len == 0)
		return 0;
	r = src_pread(n->ch->in, buf, len, off);
	n->ch->last_pack = off;
	if (r < 0)
		return sz_fail(n, (int)r, "read error");
	if ((size_t)r < len)
		return sz_fail(n, -EIO, "the archive ends inside the packed data (truncated)");
	n->ch->last_pack = off + (uint64_t)r;
	return r;
}

static ssize_t sz_copy_read(struct sz_node *n, uint8_t *buf, size_t len)
{
	ssize_t r;

	if (len > n->size - n->done)
		len = (size_t)(n->size - n->done);
	if (len == 0)
		return 0;
	if (n->ib[0].pos < n->ib[0].len) { /* never: Copy reads straight through */
		return sz_fail(n, -EINVAL, "internal: buffered input");
	}
	r = sz_read(n->child[0], buf, len);
	if (r == 0)
		return sz_fail(n, -EIO, "its input ends after %" PRIu64 " of %" PRIu64 " bytes",
			       n->done, n->size);
	return r;
}

/* The input of a liblzma chain.  liblzma applies BCJ filters only in front of LZMA or LZMA2;
 * over another coder (BCJ over Deflate, say) the bytes of that coder are handed over as
 * LZMA2 uncompressed chunks (control 1 then 2, the size - 1 in two bytes, up to 64 KiB of data)
 * and an end marker, which LZMA2 copies through unchanged. */
static ssize_t sz_xz_fill(struct sz_node *n)
{
	struct sz_ibuf *ib = &n->ib[0];
	ssize_t r;

	if (!n->u.xz.wrap)
		return sz_fill(n, 0);
	if (ib->pos < ib->len)
		return (ssize_t)(ib->len - ib->pos);
	if (ib->eof)
		return 0;
	if (n->u.xz.wrap_end) {
		ib->eof = true;
		return 0;
	}
	r = sz_read(n->child[0], ib->buf + 3, ib->cap - 3);
	if (r < 0)
		return r;
	ib->pos = 0;
	if (r == 0) {
		ib->buf[0] = 0x00;
		ib->len = 1;
		n->u.xz.wrap_end = true;
		return 1;
	}
	ib->buf[0] = n->u.xz.wrap_sent ? 0x02 : 0x01;
	n->u.xz.wrap_sent = true;
	ib->buf[1] = (uint8_t)((r - 1) >> 8);
	ib->buf[2] = (uint8_t)(r - 1);
	ib->len = 3 + (size_t)r;
	return (ssize_t)ib->len;
}

/* The decoder ended (or must end) at n->size: check that it says so and its input is used. */
static int sz_xz_end(struct sz_node *n)
{
	lzma_stream *s = &n->u.xz.strm;
	uint8_t x;

	while (!n->u.xz.ended) {
		lzma_ret ret;
		size_t before;
		ssize_t r = sz_xz_fill(n);

		if (r < 0)
			return (int)r;
		if (r == 0)
			n->u.xz.finish = true;
		s->next_in = n->ib[0].buf + n->ib[0].pos;
		s->avail_in = n->ib[0].len - n->ib[0].pos;
		before = s->avail_in;
		s->next_out = &x;
		s->avail_out = 1;
		ret = lzma_code(s, n->u.xz.finish ? LZMA_FINISH : LZMA_RUN);
		n->ib[0].pos += before - s->avail_in;
		if (s->avail_out == 0)
			return sz_fail(n, -EIO, "decodes to more than the %" PRIu64
						" bytes the header states",
				       n->size);
		if (ret == LZMA_STREAM_END) {
			n->u.xz.ended = true;
			break;
		}
		if (ret != LZMA_OK)
			return sz_fail(n, liberr_lzma(ret), "corrupt data at the end of the stream");
		if (n->u.xz.finish && before == s->avail_in)
			return sz_fail(n, -EIO, "the stream has no end (truncated)");
	}
	return sz_drained(n, 0);
}

static ssize_t sz_xz_read(struct sz_node *n, uint8_t *buf, size_t len)
{
	lzma_stream *s = &n->u.xz.strm;
	size_t got;

	if (len > n->size - n->done)
		len = (size_t)(n->size - n->done);
	s->next_out = buf;
	s->avail_out = len;
	while (s->avail_out == len && len > 0) {
		lzma_ret ret;
		size_t before;
		ssize_t r = sz_xz_fill(n);

		if (r < 0)
			return r;
		if (r == 0)
			n->u.xz.finish = true;
		s->next_in = n->ib[0].buf + n->ib[0].pos;
		s->avail_in = n->ib[0].len - n->ib[0].pos;
		before = s->avail_in;
		ret = lzma_code(s, n->u.xz.finish ? LZMA_FINISH : LZMA_RUN);
		n->ib[0].pos += before - s->avail_in;
		if (ret == LZMA_STREAM_END) {
			n->u.xz.ended = true;
			if (n->done + (len - s->avail_out) < n->size)
				return sz_fail(n, -EIO,
					       "the stream ends after %" PRIu64 " of the %" PRIu64
					       " bytes the header states",
					       n->done + (len - s->avail_out), n->size);
			break;
		}
		if (ret != LZMA_OK) {
			return sz_fail(n, liberr_lzma(ret), "%s after %" PRIu64 " decoded bytes",
				       ret == LZMA_DATA_ERROR ? "corrupt data"
				       : ret == LZMA_BUF_ERROR ? "unexpected end of input"
							       : "decoder error",
				       n->done + (len - s->avail_out));
		}
		if (n->u.xz.finish && before == s->avail_in && s->avail_out == len)
			return sz_fail(n, -EIO,
				       "the packed data ends after %" PRIu64 " of %" PRIu64
				       " decoded bytes (truncated)",
				       n->done, n->size);
	}
	got = len - s->avail_out;
	s->next_out = NULL;
	s->avail_out = 0;
	return (ssize_t)got;
}

static ssize_t sz_delta_read(struct sz_node *n, uint8_t *buf, size_t len)
{
	unsigned dist = n->u.delta.dist;
	uint64_t pos = n->u.delta.pos;
	ssize_t r;

	if (len > n->size - n->done)
		len = (size_t)(n->size - n->done);
	if (len == 0)
		return 0;
	r = sz_read(n->child[0], buf, len);
	if (r < 0)
		return r;
	if (r == 0)
		return sz_fail(n, -EIO, "its input ends after %" PRIu64 " of %" PRIu64 " bytes",
			       n->done, n->size);
	for (ssize_t i = 0; i < r; i++, pos++) {
		uint8_t v = (uint8_t)(buf[i] + n->u.delta.hist[(pos - dist) & 255]);

		n->u.delta.hist[pos & 255] = v;
		buf[i] = v;
	}
	n->u.delta.pos = pos;
	return r;
}

static ssize_t sz_deflate_read(struct sz_node *n, uint8_t *buf, size_t len)
{
	struct inflater *f = n->u.zl.inf;
	uint8_t x;
	bool check_end = false;
	size_t got = 0;

	if (len > n->size - n->done)
		len = (size_t)(n->size - n->done);
	if (len == 0) { /* at the size: inflate must be at its last block's end */
		buf = &x;
		len = 1;
		check_end = true;
	}
	for (;;) {
		ssize_t r = sz_fill(n, 0);
		struct sz_ibuf *ib = &n->ib[0];
		struct infl_io io;
		int ret;

		if (r < 0)
			return r;
		/* offsets counted within ib->buf */
		io = (struct infl_io){.in = ib->buf + ib->pos, .in_len = ib->len - ib->pos,
				      .in_off = ib->pos, .out = buf + got, .out_len = len - got};
		size_t had = io.in_len;
		ret = infl_run(f, &io, INFL_RUN);
		ib->pos = (size_t)io.in_off;
		got = (size_t)(io.out - buf);
		if (check_end && got)
			return sz_fail(n, -EIO, "decodes to more than the %" PRIu64
						" bytes the header states",
				       n->size);
		if (ret == INFL_END) {
			/* the bytes the inflater read past its last block are not its own (ISA-L
			 * reads ahead; those of an earlier buffer are gone: all of this one
			 * follows the stream) */
			ib->pos = io.at / 8 <= io.in_off ? (size_t)(io.at / 8) : 0;
			if (check_end) {
				int err = sz_drained(n, 0);
				return err ? err : 0;
			}
			if (n->done + got < n->size)
				return sz_fail(n, -EIO,
					       "the stream ends after %" PRIu64 " of the %" PRIu64
					       " bytes the header states",
					       n->done + got, n->size);
			break;
		}
		if (ret < 0)
			return sz_fail(n, ret, "%s after %" PRIu64 " decoded bytes", infl_msg(f),
				       n->done + got);
		if (got)
			break;
		if (r == 0)
			return sz_fail(n, -EIO,
				       "the packed data ends after %" PRIu64 " of %" PRIu64
				       " decoded bytes (truncated)",
				       n->done, n->size);
		if (had && io.in_len == had) /* input and room, nothing taken: never good data */
			return sz_fail(n, -EIO, "invalid deflate data after %" PRIu64
						" decoded bytes",
				       n->done);
	}
	return (ssize_t)got;
}

/* Deflate64 (inflate64.h), fed from input 0.  Never past the stated size; at it (len 0), the
 * last block must end there and the input with it. */
static ssize_t sz_deflate64_read(struct sz_node *n, uint8_t *buf, size_t len)
{
	struct inf64 *z = n->u.d64;
	struct sz_ibuf *ib = &n->ib[0];
	bool check_end = false;
	uint8_t x;

	if (len > n->size - n->done)
		len = (size_t)(n->size - n->done);
	if (len == 0) { /* one byte more must not come */
		buf = &x;
		len = 1;
		check_end = true;
	}
	for (;;) {
		size_t got;
		int ret = inf64_out(z, buf, len, &got);
		ssize_t r;

		if (ret == INF64_BAD)
			return sz_fail(n, -EIO, "%s after %" PRIu64 " decoded bytes", inf64_msg(z),
				       n->done + got);
		if (check_end && got)
			return sz_fail(n, -EIO, "decodes to more than the %" PRIu64
						" bytes the header states", n->size);
		if (got)
			return (ssize_t)got;
		if (ret == INF64_END && !check_end)
			return sz_fail(n, -EIO, "the stream ends after %" PRIu64 " of the %" PRIu64
						" bytes the header states", n->done, n->size);
		if (ret == INF64_END && inf64_unused(z))
			return sz_fail(n, -EIO, "data follows the end of the coded stream");
		if (ret == INF64_END)
			return sz_drained(n, 0);
		r = sz_fill(n, 0);
		if (r < 0)
			return r;
		if (r == 0)
			inf64_input_end(z);
		else
			ib->pos += inf64_feed(z, ib->buf + ib->pos, ib->len - ib->pos);
	}
}

/* PPMd (ppmd7.h), fed from input 0.  The stream has no end of its own: at the stated size
 * (len 0) the range coder must end cleanly (or with an end marker) and the input with it. */
static ssize_t sz_ppmd_read(struct sz_node *n, uint8_t *buf, size_t len)
{
	struct ppmd7 *z = n->u.ppmd;
	struct sz_ibuf *ib = &n->ib[0];

	if (len > n->size - n->done)
		len = (size_t)(n->size - n->done);
	if (len == 0) {
		if (!ppmd7_finished(z))
			return sz_fail(n, -EIO, "the range coder does not end at the %" PRIu64
						" bytes the header states", n->size);
		if (ppmd7_unused(z))
			return sz_fail(n, -EIO, "data follows the end of the coded stream");
		return sz_drained(n, 0);
	}
	for (;;) {
		size_t got;
		int ret = ppmd7_out(z, buf, len, &got);
		ssize_t r;

		if (ret == PPMD7_BAD)
			return sz_fail(n, -EIO, "%s after %" PRIu64 " decoded bytes", ppmd7_msg(z),
				       n->done + got);
		if (got)
			return (ssize_t)got;
		if (ret == PPMD7_END)
			return sz_fail(n, -EIO, "an end marker after %" PRIu64 " of the %" PRIu64
						" bytes the header states", n->done, n->size);
		r = sz_fill(n, 0);
		if (r < 0)
			return r;
		if (r == 0)
			ppmd7_input_end(z);
		else
			ib->pos += ppmd7_feed(z, ib->buf + ib->pos, ib->len - ib->pos);
	}
}

static ssize_t sz_bzip2_read(struct sz_node *n, uint8_t *buf, size_t len)
{
	bz_stream *b = &n->u.bz.bz;
	uint8_t x;
	bool check_end = false;

	if (len > n->size - n->done)
		len = (size_t)(n->size - n->done);
	if (len == 0) {
		if (!n->u.bz.init) /* ended at a stream end: nothing may follow */
			return sz_drained(n, 0);
		buf = &x;
		len = 1;
		check_end = true;
	}
	if (len > UINT32_MAX)
		len = UINT32_MAX;
	b->next_out = (char *)buf;
	b->avail_out = (unsigned)len;
	for (;;) {
		ssize_t r = sz_fill(n, 0);
		size_t before;
		int ret;

		if (r < 0)
			return r;
		if (!n->u.bz.init) { /* another stream follows the last one */
			if (r == 0)
				return sz_fail(n, -EIO,
					       "the packed data ends after %" PRIu64 " of %" PRIu64
					       " decoded bytes",
					       n->done, n->size);
			ret = BZ2_bzDecompressInit(b, 0, 0);
			if (ret != BZ_OK)
				return sz_fail(n, liberr_bz2(ret), "cannot start the decoder");
			n->u.bz.init = true;
			b->next_out = (char *)buf;
			b->avail_out = (unsigned)len;
		}
		b->next_in = (char *)n->ib[0].buf + n->ib[0].pos;
		b->avail_in = (unsigned)(n->ib[0].len - n->ib[0].pos);
		before = b->avail_in;
		ret = BZ2_bzDecompress(b);
		n->ib[0].pos += before - b->avail_in;
		if (check_end && b->avail_out == 0)
			return sz_fail(n, -EIO, "decodes to more than the %" PRIu64
						" bytes the header states",
				       n->size);
		if (ret == BZ_STREAM_END) {
			BZ2_bzDecompressEnd(b);
			n->u.bz.init = false;
			if (check_end)
				return sz_drained(n, 0);
			if (b->avail_out < len)
				break;
			continue;
		}
		if (ret != BZ_OK)
			return sz_fail(n, liberr_bz2(ret), "%s after %" PRIu64 " decoded bytes",
				       ret == BZ_DATA_ERROR ? "corrupt data or CRC mismatch"
							    : "bad data",
				       n->done + (len - b->avail_out));
		if (b->avail_out < len)
			break;
		if (r == 0)
			return sz_fail(n, -EIO,
				       "the packed data ends after %" PRIu64 " of %" PRIu64
				       " decoded bytes (truncated)",
				       n->done, n->size);
	}
	return (ssize_t)(len - b->avail_out);
}

static ssize_t sz_bcj2_read(struct sz_node *n, uint8_t *buf, size_t len)
{
	static const char *const names[] = {"main", "call", "jump", "range coder"};
	struct bcj2_in in[BCJ2_NSTREAMS];

	if (len > n->size - n->done)
		len = (size_t)(n->size - n->done);
	for (;;) {
		size_t out = len;
		int need;

		for (unsigned k = 0; k < BCJ2_NSTREAMS; k++) {
			in[k].p = n->ib[k].buf + n->ib[k].pos;
			in[k].n = n->ib[k].len - n->ib[k].pos;
		}
		need = bcj2_run(&n->u.bcj2, in, buf, &out);
		for (unsigned k = 0; k < BCJ2_NSTREAMS; k++)
			n->ib[k].pos = (size_t)(in[k].p - n->ib[k].buf);
		if (out > 0 || len == 0)
			return (ssize_t)out;
		if (need == 0)
			return 0;
		ssize_t r = sz_fill(n, (unsigned)(need - 1));
		if (r < 0)
			return r;
		if (r == 0)
			return sz_fail(n, -EIO, "its %s stream ends early, after %" PRIu64
						" of %" PRIu64 " bytes",
				       names[need - 1], n->done, n->size);
	}
}

static ssize_t sz_pull_child(void *opaque, uint8_t *buf, size_t len)
{
	return sz_read(opaque, buf, len);
}

/* AES over its packed stream (child 0), by sevenzip_aes.c's decryptor. */
static ssize_t sz_aes_read(struct sz_node *n, uint8_t *buf, size_t len)
{
	ssize_t r;

	if (len > n->size - n->done)
		len = (size_t)(n->size - n->done);
	r = sz_aes_dec_read(&n->u.aes.dec, buf, len, &n->u.aes.skip, sz_pull_child,
			    n->child[0]);
	if (r < 0 && !n->ch->err)
		return sz_fail(n, (int)r, "cannot decrypt (its packed stream ends early?)");
	return r;
}

/* At the end of a coder without an end mark of its own: its inputs must be used up. */
static int sz_end_plain(struct sz_node *n)
{
	for (unsigned k = 0; k < n->nin; k++) {
		int err;

		if (n->kind == SZN_BCJ2 && k == BCJ2_RC)
			continue; /* the range coder's last bytes are flush, not all read */
		if (n->kind == SZN_COPY || n->kind == SZN_DELTA || n->kind == SZN_AES) {
			uint8_t x;
			ssize_t r = sz_read(n->child[k], &x, 1);
			if (r < 0)
				return (int)r;
			if (r > 0)
				return sz_fail(n, -EIO, "its input is longer than its output");
			continue;
		}
		err = sz_drained(n, k);
		if (err)
			return err;
	}
	return 0;
}

/* The RISCV filter (bcj_riscv.h) over any coder.  ib[0] holds the input: [pos, u.rv.ready) converted and not yet returned, [ready, len) still to
 * convert (fewer than 8 bytes, or the input's end); u.rv.at is the stream position of ib->buf[0]
 * (the filter's start offset from the coder's properties, plus the bytes before). */

static ssize_t sz_riscv_read(struct sz_node *n, uint8_t *buf, size_t len)
{
	struct sz_ibuf *ib = &n->ib[0];

	if (len > n->size - n->done)
		len = (size_t)(n->size - n->done);
	if (len == 0)
		return 0;
	while (n->u.rv.ready == ib->pos) {
		size_t keep = ib->len - ib->pos;
		ssize_t r;

		if (ib->eof) /* the input has ended: the last bytes are final as they are */
			return sz_fail(n, -EIO, "its input ends after %" PRIu64 " of %" PRIu64
				       " bytes", n->done, n->size);
		memmove(ib->buf, ib->buf + ib->pos, keep);
		n->u.rv.at += (uint32_t)ib->pos;
		ib->pos = 0;
		ib->len = keep;
		n->u.rv.ready = 0;
		r = sz_read(n->child[0], ib->buf + keep, ib->cap - keep);
		if (r < 0)
			return r;
		if (r == 0) {
			ib->eof = true;
			n->u.rv.ready = ib->len;
			if (keep == 0)
				continue; /* nothing left: the error above */
			break;
		}
		ib->len += (size_t)r;
		n->u.rv.ready = bcj_riscv_decode(ib->buf, ib->len, n->u.rv.at);
	}
	if (len > n->u.rv.ready - ib->pos)
		len = n->u.rv.ready - ib->pos;
	memcpy(buf, ib->buf + ib->pos, len);
	ib->pos += len;
	return (ssize_t)len;
}

/* Next bytes of n: > 0, 0 at its (checked) end, or -errno (recorded in the chain). */
ssize_t sz_read(struct sz_node *n, uint8_t *buf, size_t len)
{
	ssize_t r;

	if (n->ch->err)
		return n->ch->err;
	if (n->done == n->size) {
		int err = 0;

		if (n->end)
			return 0;
		switch (n->kind) {
		case SZN_PACK:
			break;
		case SZN_XZ:
			err = sz_xz_end(n);
			break;
		case SZN_DEFLATE:
			err = (int)sz_deflate_read(n, buf, 0);
			break;
		case SZN_BZIP2:
			err = (int)sz_bzip2_read(n, buf, 0);
			break;
		case SZN_DEFLATE64:
			err = (int)sz_deflate64_read(n, buf, 0);
			break;
		case SZN_PPMD:
			err = (int)sz_ppmd_read(n, buf, 0);
			break;
		default:
			err = sz_end_plain(n);
			break;
		}
		if (err)
			return err;
		n->end = true;
		return 0;
	}
	if (len == 0)
		return 0;
	switch (n->kind) {
	case SZN_PACK:
		r = sz_pack_read(n, buf, len);
		break;
	case SZN_COPY:
		r = sz_copy_read(n, buf, len);
		break;
	case SZN_XZ:
		r = sz_xz_read(n, buf, len);
		break;
	case SZN_DELTA:
		r = sz_delta_read(n, buf, len);
		break;
	case SZN_DEFLATE:
		r = sz_deflate_read(n, buf, len);
		break;
	case SZN_BZIP2:
		r = sz_bzip2_read(n, buf, len);
		break;
	case SZN_DEFLATE64:
		r = sz_deflate64_read(n, buf, len);
		break;
	case SZN_PPMD:
		r = sz_ppmd_read(n, buf, len);
		break;
	case SZN_BCJ2:
		r = sz_bcj2_read(n, buf, len);
		break;
	case SZN_AES:
		r = sz_aes_read(n, buf, len);
		break;
	case SZN_RISCV:
		r = sz_riscv_read(n, buf, len);
		break;
	default:
		r = -EINVAL;
		break;
	}
	if (r > 0)
		n->done += (uint64_t)r;
	if (r == 0 && n->done < n->size)
		return sz_fail(n, -EIO, "ends after %" PRIu64 " of %" PRIu64 " bytes", n->done,
			       n->size);
	return r;
}
