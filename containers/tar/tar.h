/* The tar parser: reads member headers through the source interface and reports one
 * struct arc_member per member, in archive order.
 *
 * Formats: v7, ustar (prefix field), GNU (L/K long names, base-256 numbers, old sparse 'S',
 * 'D' dumpdirs as directories), PAX ('x' and 'g': path, linkpath, size, uid, gid, uname,
 * gname, mtime with fractions, SCHILY.xattr.*, LIBARCHIVE.xattr.*, GNU sparse 0.0/0.1/1.0).
 *
 * Reading: the parser reads the source strictly forward (every src_pread is at or after the
 * end of the previous one), so it works on a forward-only decompressed stream; on a plain
 * file it reads only headers (and sparse maps / PAX records), never member data it skips.
 *
 * Conformance: a member that GNU tar or bsdtar extracts is reported, with the metadata GNU
 * tar extracts (where the two differ GNU tar is followed, and the code says so): numeric
 * fields are read as GNU tar reads them; only regular files (and 'D' dumpdirs) have data, so
 * a size in a directory, hard-link, symlink, device or FIFO header is ignored; odd sparse
 * maps (out of order, overlapping, past the size, not adding up to the stored data, '#'
 * comments in a 1.0 map) are read as bsdtar reads them.
 *
 * The end: the archive ends at its first zero block, as for GNU tar and bsdtar; what
 * follows (another archive after `cat a.tar b.tar`, garbage) is not read, and a notice says
 * so.  With ignore_zeros (tar --ignore-zeros) zero blocks are skipped, so concatenated
 * archives are read whole; then a block that is not a header after zero blocks is trailing
 * garbage (parsing stops, with a notice).
 *
 * Damage: every header checksum is verified.  A block that is not a valid header is
 * reported (warning, with its offset) and the parser resynchronises on the next valid
 * header, like GNU tar.  A member whose data runs past the end of the source is a truncated
 * archive: it is not reported, a warning says where, and parsing stops.  Absurd values
 * (sizes past the end, a name without NUL, a PAX record with a bad length) never cause a
 * read outside a buffer.  Memory is bounded: GNU long names and PAX payloads over 64 MiB,
 * sparse maps over 2^20 extents, or a sparse map with a malformed number make the member
 * "damaged": a warning, and the member is skipped by its stored size (not reported).  A
 * malformed PAX record ends its header (the records before it apply) but not the member.
 * Volume labels ('V') are skipped with a notice, 'N' and 'M' headers with a warning; an
 * unknown type flag is read as a regular file (as POSIX says), with a warning.
 *
 * On a source of unknown size (a stream), the parser reads the last byte of each member it
 * reports, to be sure the member is complete.
 */
#ifndef TARSEEK_TAR_H
#define TARSEEK_TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/source.h"
#include "containers/member.h"

#define TAR_BLOCK 512

/* A growable byte buffer, the parser's (names, PAX payloads) and the writer's (tar_write.h:
 * headers): zero it to start; tar_buf_free releases it and zeroes it again.  tar_buf_reserve
 * makes room for want bytes in all, tar_buf_put appends len bytes, tar_buf_setz sets it to
 * data up to its first NUL (at most len bytes), NUL-terminated, the NUL not in b->len.  0 or
 * -ENOMEM (b then unchanged but for its capacity). */
struct tbuf {
	uint8_t *p;
	size_t len, cap;
};

int tar_buf_reserve(struct tbuf *b, size_t want);
int tar_buf_put(struct tbuf *b, const void *data, size_t len);
int tar_buf_setz(struct tbuf *b, const void *data, size_t len);
void tar_buf_free(struct tbuf *b);

struct tar_callbacks {
	/* Called per member (its stream is 0: data_off is an offset in the source; it has no
	 * CRC and is readable).  Return 0 to go on, or -errno to stop (tar_parse returns it). */
	int (*entry)(void *opaque, const struct arc_member *e);
	/* Optional: called every 256 members and at the end with the current offset. */
	void (*progress)(void *opaque, uint64_t off);
	void *opaque;
	/* How to parse: read past zero blocks (tar --ignore-zeros) instead of stopping at the
	 * first one. */
	bool ignore_zeros;
};

struct tar_stats {
	uint64_t members;  /* members reported */
	uint64_t end_off;  /* offset after the last block parsed (at a truncation: where the
			      incomplete member starts; with garbage: where the garbage starts) */
	unsigned bad_headers; /* invalid headers skipped by resynchronising */
	bool truncated;	   /* the source ended inside a member or its headers */
	bool garbage;	   /* data after the end-of-archive marker, not read */
};

/* True if block (512 bytes) is a tar header with a valid checksum. */
bool tar_header_valid(const uint8_t *block);

/* True if the source starts like a tar archive: a valid header in the first block, or an
 * archive of zero blocks only (an empty tar, at least 1024 bytes of zeros), or zero blocks
 * followed by a valid header.  Reads forward only, at most 256 KiB (the compressed-stream
 * source keeps its first 512 KiB re-readable so tar_parse can start again from 0). */
bool tar_probe(struct src *s);

/* Parses the whole source.  Returns 0 (warnings logged for damage, see above), -EINVAL if the
 * source does not start with a valid tar header ("not a tar archive"; zero blocks followed
 * by a valid header are an archive that ends at once unless ignore_zeros, and at least 1024
 * bytes of zeros alone are an empty archive), -EIO on a read error
 * from the source, or the callback's error.  stats may be NULL; it is filled whatever the
 * result.  Thread-safe: all state is local to the call (several parses may run at once). */
int tar_parse(struct src *s, const struct tar_callbacks *cb, struct tar_stats *stats);

#endif
