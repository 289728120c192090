/* CRC-32 (IEEE 802.3, reflected: gzip's, zip's, zlib's crc32) for the hot paths: the gzip
 * members' CRCs, the 1 MiB segment CRCs written while indexing and checked on every read.
 * ISA-L's crc32_gzip_refl (carry-less multiplication) where it is built in, several times as
 * fast as zlib's crc32; the same values (seed 0 starts a CRC; pass the last result on to
 * continue one).  zlib's otherwise.  Any length; thread-safe. */
#ifndef TARSEEK_CRC32_H
#define TARSEEK_CRC32_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "config.h"

#if HAVE_ISAL
#include <isa-l/crc.h>
#endif

static inline uint32_t tfs_crc32(uint32_t crc, const void *buf, size_t len)
{
#if HAVE_ISAL
	return crc32_gzip_refl(crc, buf, (uint64_t)len);
#else
	const uint8_t *p = buf;

	while (len > UINT_MAX) {
		crc = (uint32_t)crc32(crc, p, UINT_MAX);
		p += UINT_MAX;
		len -= UINT_MAX;
	}
	return (uint32_t)crc32(crc, p, (uInt)len);
#endif
}

#endif
