/* Raw deflate inflaters: the choice of engine, and the zlib engine (see inflater.h).
 *
 * zlib's inflate stops at block boundaries on request (Z_BLOCK: data_type says how many bits
 * of the last byte are unused and whether the boundary is after the last block) and keeps
 * the window itself (inflateGetDictionary), so this engine is a thin wrapper.  The ISA-L
 * engine is in inflater_isal.c, reached through inflater_int.h.
 */
#include "codecs/gzip/inflater.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "config.h"
#include "codecs/gzip/inflater_int.h"
#include "codecs/liberr.h"

struct inflater {
	enum infl_kind kind;
	const char *msg;
	struct isal_infl *isal; /* INFL_ISAL */
	z_stream zs;		/* INFL_ZLIB */
	size_t zmem;		/* bytes zlib allocated */
};

static enum infl_kind default_kind = INFL_ZLIB;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void infl_pick_default(void)
{
	const char *e = getenv("TARSEEK_INFLATE");

	default_kind = infl_have_isal() ? INFL_ISAL : INFL_ZLIB;
	if (e && strcmp(e, "zlib") == 0)
		default_kind = INFL_ZLIB;
}

enum infl_kind infl_default(void)
{
	pthread_once(&default_once, infl_pick_default);
	return default_kind;
}

void infl_set_default(enum infl_kind kind)
{
	pthread_once(&default_once, infl_pick_default);
	default_kind = kind == INFL_ISAL && HAVE_ISAL ? INFL_ISAL : INFL_ZLIB;
}

bool infl_have_isal(void)
{
	return HAVE_ISAL;
}

const char *infl_kind_name(enum infl_kind kind)
{
	return kind == INFL_ISAL ? "ISA-L" : "zlib";
}

/* zlib allocators that count, for infl_memory. */
static voidpf infl_zalloc(voidpf opaque, uInt items, uInt size)
{
	size_t *total = opaque;
	size_t n = (size_t)items * size;
	size_t *p = malloc(n + sizeof(size_t) * 2); /* keep 16-byte alignment */

	if (!p)
		return NULL;
	p[0] = n;
	*total += n;
	return p + 2;
}

static void infl_zfree(voidpf opaque, voidpf ptr)
{
	size_t *total = opaque, *p = (size_t *)ptr - 2;

	*total -= p[0];
	free(p);
}

struct inflater *infl_new(enum infl_kind kind, bool track)
{
	struct inflater *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	if (kind == INFL_ISAL && !HAVE_ISAL)
		kind = INFL_ZLIB;
	f->kind = kind;
	if (kind == INFL_ISAL) {
		f->isal = isal_infl_new(track);
		if (!f->isal)
			goto fail;
		return f;
	}
	f->zs.zalloc = infl_zalloc;
	f->zs.zfree = infl_zfree;
	f->zs.opaque = &f->zmem;
	if (inflateInit2(&f->zs, -15) != Z_OK)
		goto fail;
	return f;
fail:
	free(f);
	return NULL;
}

void infl_free(struct inflater *f)
{
	if (!f)
		return;
	if (f->kind == INFL_ISAL)
		isal_infl_free(f->isal);
	else
		inflateEnd(&f->zs);
	free(f);
}

int infl_restart(struct inflater *f)
{
	if (f->kind == INFL_ISAL)
		return isal_infl_restart(f->isal);
	return liberr_zlib(inflateReset(&f->zs));
}

int infl_resume(struct inflater *f, unsigned bits, unsigned value, const uint8_t *win, size_t wlen)
{
	int r;

	if (bits > 7 || wlen > INFL_WINSIZE)
		return -EINVAL;
	if (f->kind == INFL_ISAL)
		return isal_infl_resume(f->isal, bits, value, win, wlen);
	if (bits) {
		r = inflatePrime(&f->zs, (int)bits, (int)value);
		if (r != Z_OK)
			return liberr_zlib(r);
	}
	if (wlen) {
		r = inflateSetDictionary(&f->zs, win, (uInt)wlen);
		if (r != Z_OK)
			return liberr_zlib(r);
	}
	return 0;
}

static int zlib_run(struct inflater *f, struct infl_io *io, enum infl_mode mode)
{
	z_stream *zs = &f->zs;
	uInt inl = io->in_len < UINT_MAX ? (uInt)io->in_len : UINT_MAX;
	uInt outl = io->out_len < UINT_MAX ? (uInt)io->out_len : UINT_MAX;
	size_t used;
	int ret;

	zs->next_in = (Bytef *)io->in;
	zs->avail_in = inl;
	zs->next_out = io->out;
	zs->avail_out = outl;
	ret = inflate(zs, mode == INFL_TO_BLOCK ? Z_BLOCK : Z_NO_FLUSH);
	used = inl - zs->avail_in;
	io->in += used;
	io->in_len -= used;
	io->in_off += used;
	io->out += outl - zs->avail_out;
	io->out_len -= outl - zs->avail_out;
	if (ret == Z_STREAM_END) {
		io->at = io->in_off * 8;
		return INFL_END;
	}
	if (ret == Z_BUF_ERROR) /* no progress possible: the caller knows why */
		return INFL_MORE;
	if (ret != Z_OK) {
		f->msg = zs->msg ? zs->msg : zError(ret);
		return liberr_zlib(ret); /* never 0: Z_OK and Z_STREAM_END are handled above */
	}
	/* at a boundary (0x80) that is not after the last block (0x40) */
	if (mode == INFL_TO_BLOCK && (zs->data_type & 0xc0) == 0x80) {
		io->at = io->in_off * 8 - ((unsigned)zs->data_type & 7);
		return INFL_BLOCK;
	}
	return INFL_MORE;
}

int infl_run(struct inflater *f, struct infl_io *io, enum infl_mode mode)
{
	if (f->kind == INFL_ISAL)
		return isal_infl_run(f->isal, io, mode, &f->msg);
	return zlib_run(f, io, mode);
}

int infl_unpack(struct inflater *f, const void *src, size_t slen, uint8_t *dst, size_t *dlen)
{
	uLongf n = *dlen;
	int r;

	if (f->kind == INFL_ISAL)
		return isal_infl_unpack(f->isal, src, slen, dst, dlen);
	r = uncompress(dst, &n, src, (uLong)slen);
	if (r != Z_OK) /* uncompress() reports a stream that does not fit dst as Z_BUF_ERROR */
		return liberr_zlib(r);
	*dlen = n;
	return 0;
}

size_t infl_window(struct inflater *f, uint8_t *win)
{
	uInt wl = INFL_WINSIZE;

	if (f->kind == INFL_ISAL)
		return isal_infl_window(f->isal, win);
	if (inflateGetDictionary(&f->zs, win, &wl) != Z_OK)
		return 0; /* cannot happen with a live stream */
	return wl;
}

const char *infl_msg(const struct inflater *f)
{
	return f->msg ? f->msg : "invalid deflate data";
}

size_t infl_memory(const struct inflater *f)
{
	if (f->kind == INFL_ISAL)
		return sizeof(*f) + isal_infl_memory(f->isal);
	return sizeof(*f) + f->zmem;
}
