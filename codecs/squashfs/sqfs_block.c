/* SquashFS blocks decompressed (see sqfs_block.h), each compressor through the library the
 * codecs already use: zlib, liblzma (lzma and xz), liblzo2, liblz4, libzstd.  A block is
 * decoded whole into a buffer of the block size, so every decoder is told the room it has
 * and fails rather than write past it.
 */
#include "codecs/squashfs/sqfs_block.h"

#include "config.h"

#include <errno.h>
#include <lzma.h>
#include <stdint.h>
#include <zlib.h>
#if HAVE_LZO
#include <lzo/lzo1x.h>
#endif
#if HAVE_LZ4
#include <lz4.h>
#endif
#if HAVE_ZSTD
#include <zstd.h>
#endif

#define SQB_MEMLIMIT ((uint64_t)64 << 20)

enum { SQB_GZIP = 1, SQB_LZMA, SQB_LZO, SQB_XZ, SQB_LZ4, SQB_ZSTD };

bool sqfs_block_supported(unsigned id)
{
	switch (id) {
	case SQB_GZIP:
	case SQB_LZMA:
	case SQB_XZ:
		return true;
	case SQB_LZO:
		return HAVE_LZO;
	case SQB_LZ4:
		return HAVE_LZ4;
	case SQB_ZSTD:
		return HAVE_ZSTD;
	default:
		return false;
	}
}

const char *sqfs_block_name(unsigned id)
{
	static const char *const names[] = {"unknown", "gzip", "lzma", "lzo", "xz", "lz4", "zstd"};

	return id < sizeof(names) / sizeof(names[0]) ? names[id] : names[0];
}

static ssize_t sqb_zlib(const void *in, size_t len, void *out, size_t cap)
{
	z_stream z = {0};
	ssize_t ret;
	int zr;

	if (len > UINT32_MAX || cap > UINT32_MAX)
		return -EIO;
	if (inflateInit(&z) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	zr = inflate(&z, Z_FINISH);
	ret = zr == Z_STREAM_END ? (ssize_t)(cap - z.avail_out) : zr == Z_MEM_ERROR ? -ENOMEM : -EIO;
	inflateEnd(&z);
	return ret;
}

static ssize_t sqb_lzma(bool xz, const void *in, size_t len, void *out, size_t cap)
{
	lzma_stream s = LZMA_STREAM_INIT;
	/* a block is at most 1 MiB: a dictionary the header makes larger than SQB_MEMLIMIT
	 * allows is a hostile header, not an allocation to make */
	lzma_ret r = xz ? lzma_stream_decoder(&s, SQB_MEMLIMIT, LZMA_CONCATENATED)
			: lzma_alone_decoder(&s, SQB_MEMLIMIT);
	ssize_t ret;

	if (r != LZMA_OK)
		return r == LZMA_MEM_ERROR ? -ENOMEM : -EIO;
	s.next_in = in;
	s.avail_in = len;
	s.next_out = out;
	s.avail_out = cap;
	r = lzma_code(&s, LZMA_FINISH);
	/* LZMA_alone without an end marker stops at its stated size, or with the input */
	if (r == LZMA_STREAM_END || (!xz && r == LZMA_OK && s.avail_in == 0 && s.avail_out))
		ret = (ssize_t)(cap - s.avail_out);
	else
		ret = r == LZMA_MEM_ERROR ? -ENOMEM : -EIO;
	lzma_end(&s);
	return ret;
}

ssize_t sqfs_block_decode(unsigned id, const void *in, size_t len, void *out, size_t cap)
{
	switch (id) {
	case SQB_GZIP:
		return sqb_zlib(in, len, out, cap);
	case SQB_LZMA:
		return sqb_lzma(false, in, len, out, cap);
	case SQB_XZ:
		return sqb_lzma(true, in, len, out, cap);
#if HAVE_LZO
	case SQB_LZO: {
		lzo_uint n = cap;
		if (lzo1x_decompress_safe(in, len, out, &n, NULL) != LZO_E_OK)
			return -EIO;
		return (ssize_t)n;
	}
#endif
#if HAVE_LZ4
	case SQB_LZ4: {
		if (len > INT32_MAX || cap > INT32_MAX)
			return -EIO;
		int n = LZ4_decompress_safe(in, out, (int)len, (int)cap);
		return n < 0 ? -EIO : n;
	}
#endif
#if HAVE_ZSTD
	case SQB_ZSTD: {
		size_t n = ZSTD_decompress(out, cap, in, len);
		return ZSTD_isError(n) ? -EIO : (ssize_t)n;
	}
#endif
	default:
		return -ENOTSUP;
	}
}
