/* The compression libraries' return codes as -errno: the one place each is mapped, for every
 * codec and encoder that uses the library (gzip/, enc_gzip.c and sevenzip_graph.c use zlib;
 * xz.c, lzma1.c, lzip.c, enc_xz.c and sevenzip_graph.c liblzma; bzip2/ and sevenzip_graph.c
 * libbz2; zstd_frame.c and enc_zstd.c libzstd; lzo/ liblzo).
 *
 * 0 for success and for the end of a stream; -ENOMEM when the library ran out of memory
 * (or a memory limit); -EIO for data that is not right (corrupt, truncated, not this format,
 * options the data states that the library cannot decode); -EINVAL for misuse (a
 * programming error, not bad data).
 */
#ifndef TARSEEK_LIBERR_H
#define TARSEEK_LIBERR_H

#include <lzma.h>
#include <stddef.h>

int liberr_zlib(int zret);
int liberr_lzma(lzma_ret ret);
int liberr_bz2(int bzret);

/* libzstd's: a size_t that ZSTD_isError calls an error, else 0.  Built with libzstd only. */
int liberr_zstd(size_t zret);

/* liblzo's LZO_E_* codes.  Built with liblzo only. */
int liberr_lzo(int lzoret);

#endif
