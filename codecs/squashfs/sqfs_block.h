/* One SquashFS block (data, fragment or metadata) decompressed, with the compressor its
 * superblock names: 1 gzip (a zlib stream), 2 lzma (LZMA_alone), 3 lzo (lzo1x), 4 xz (an xz
 * stream), 5 lz4 (a raw block), 6 zstd (a frame).  Used by the codec "squashfs" for the data
 * and by the container (containers/squashfs/) for libsquashfs's metadata reads.
 *
 * Thread-safe (no state).
 */
#ifndef TARSEEK_SQFS_BLOCK_H
#define TARSEEK_SQFS_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* True if this build decompresses compressor id. */
bool sqfs_block_supported(unsigned id);

/* The name of compressor id ("gzip", ...; "unknown"). */
const char *sqfs_block_name(unsigned id);

/* Decompresses in[0, len) into out (at most cap bytes).  The decoded size, or -EIO (damaged,
 * or more than cap bytes), -ENOTSUP (a compressor this build lacks), -ENOMEM.  Nothing is
 * logged: the caller says where the block is. */
ssize_t sqfs_block_decode(unsigned id, const void *in, size_t len, void *out, size_t cap);

#endif
