/* The compression libraries' return codes as -errno: the one place each is mapped, for every
 * codec that uses the library (gzip.c and sevenzip_graph.c use zlib, xz.c, lzma1.c and
 * sevenzip_graph.c liblzma, bzip2.c and sevenzip_graph.c libbz2).
 *
 * 0 for success and for the end of a stream; -ENOMEM when the library ran out of memory
 * (or a memory limit); -EIO for data that is not right (corrupt, truncated, not this format,
 * options the data states that the library cannot decode); -EINVAL for misuse (a
 * programming error, not bad data).
 */
#ifndef TARSEEK_LIBERR_H
#define TARSEEK_LIBERR_H

#include <lzma.h>

int liberr_zlib(int zret);
int liberr_lzma(lzma_ret ret);
int liberr_bz2(int bzret);

#endif
