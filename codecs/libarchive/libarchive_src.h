/* libarchive reading a source (source.h): for the formats tarseek reads through libarchive
 * (containers/libarchive.c lists them, libarchive_stream.c decodes their entries).
 *
 * la_open makes a libarchive reader over the source with read, skip and seek callbacks, and
 * only the formats given (never tar, zip or 7z: tarseek's own parsers read those), plus the
 * filters an rpm payload needs.  The read callback hands libarchive LA_BUF bytes at a time
 * from its own buffer and remembers where they came from, so that la_where can say where in
 * the file a data block libarchive returns lies, when libarchive hands out the bytes in place
 * (uncompressed formats: cpio, ar, iso9660) instead of from a buffer of its own.  Once it has
 * given the archive LA_REREADS times over, it fails (libarchive reports damage, its message
 * says why): a bound, cheap, on a loop that re-reads, here and when entries are decoded.
 */
#ifndef TARSEEK_LIBARCHIVE_SRC_H
#define TARSEEK_LIBARCHIVE_SRC_H

#include <stddef.h>
#include <stdint.h>

#include "common/source.h"

#define LA_BUF ((size_t)1 << 20)
#define LA_NOWHERE UINT64_MAX
/* A reader that has read the archive this many times over (and 4 LA_BUF more) is stopped: a
 * hostile archive that makes libarchive read the same bytes again and again */
#define LA_REREADS 64

struct archive;

struct la_src {
	struct archive *a;
	struct src *in;
	uint64_t pos;	  /* where the next read callback reads */
	uint8_t *buf;	  /* LA_BUF */
	uint64_t buf_off; /* the bytes the last read callback gave: [buf_off, + buf_len) */
	size_t buf_len;
	int io_err;	  /* a read of the source failed: -errno */
	uint64_t served;  /* bytes the read callback gave in all */
};

/* Once at program start, before any thread: libarchive converts names between the format's
 * charset and the locale's, and in the C locale it cannot give non-ASCII UTF-8 names (a
 * xar's, a rar's unicode ones) at all; tarseek takes names as bytes, so LC_CTYPE becomes
 * C.UTF-8 (always there in Debian 12's glibc).  Nothing else in tarseek depends on it.  It
 * does not load libarchive (la_dl.h): la_open does, at the first archive that needs it. */
void la_init(void);

/* Opens a reader over in, loading libarchive first if it is not yet (la_load).  0, or -errno
 * after logging why (-EINVAL: libarchive reads no header of a format it was given; -ENOMEM;
 * -ENOTSUP: libarchive cannot be loaded, said once by la_load).  la_close in any case. */
int la_open(struct la_src *l, struct src *in);
void la_close(struct la_src *l);

/* The file offset of the len bytes at p (a block libarchive returned) if they lie in the
 * bytes the read callback gave last, else LA_NOWHERE. */
uint64_t la_where(const struct la_src *l, const void *p, size_t len);

/* Why the last libarchive call failed (never NULL). */
const char *la_error(const struct la_src *l);

/* Names of the formats read through libarchive, for --version. */
const char *la_formats(void);

#endif
