/* The tar writer: the header blocks of one member at a time, in the POSIX pax format as GNU
 * tar --format=posix writes it, so that GNU tar, bsdtar and tar.h's parser read every member
 * back alike.  It writes headers only: the caller writes a regular member's size bytes of
 * data after them, then tw_pad(size) zero bytes, and after the last member TW_END_LEN zero
 * bytes (two zero blocks: the end-of-archive marker).  No FUSE, no I/O, no state between
 * members: tarseek-convert makes a tar of a container's members with it (convert.c).
 *
 * A member is one ustar header when every field fits it; else a pax extended header ('x')
 * comes first, holding a record for each field that does not fit:
 *   path      the name (a folder's with its trailing '/') is over 100 bytes.  As GNU tar, the
 *             ustar prefix field is not used -- except for a name that is not valid UTF-8 and
 *             that the prefix split fits: bsdtar reads pax strings as UTF-8 and fails on
 *             others, GNU tar 1.34 warns of the hdrcharset record that tells it not to;
 *   linkpath  a symlink target or a hard link's path over 100 bytes;
 *   size      8 GiB or more (the 11 octal digits hold up to 8 GiB - 1);
 *   uid, gid  over 07777777 (2,097,151);
 *   uname, gname  32 bytes or more;
 *   mtime     a fraction of a second, a time before 1970 or after 2242 ("-1.5": 1.5 s
 *             before the epoch, as POSIX writes it; trailing zeros of the fraction dropped);
 *   SCHILY.devmajor, SCHILY.devminor  a device number over 07777777;
 *   SCHILY.xattr.NAME  every extended attribute (values are bytes: any byte may be in them);
 *   hdrcharset=BINARY  first, when a path, linkpath, uname or gname record is not UTF-8.
 * Non-ASCII bytes are fine in the ustar fields (both tools take them as they are).  A field a
 * record replaces holds what fits of the value (the name's first 100 bytes), or 0.  The 'x'
 * header is named DIR/PaxHeaders/BASE as GNU tar names it (./PaxHeaders/BASE at the top), with
 * mode 0644, owner 0 and the member's mtime.
 *
 * Numeric fields are zero-padded octal ended by a NUL; the checksum is six octal digits, a NUL
 * and a space.  A hard link carries no data (size 0); a folder's name ends with '/'.
 */
#ifndef TARSEEK_TAR_WRITE_H
#define TARSEEK_TAR_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "containers/member.h"
#include "containers/tar/tar.h"

#define TW_BLOCK 512
#define TW_END_LEN (2 * TW_BLOCK) /* the end-of-archive marker */

/* One member.  Pointers are borrowed for the call. */
struct tw_member {
	const uint8_t *path; /* raw bytes, relative ("." for the top folder); no NUL in them; a
				folder's trailing '/' is added if missing */
	size_t path_len;
	enum member_type type;
	uint32_t mode; /* permission bits (07777) */
	uint64_t uid, gid;
	const char *uname, *gname; /* NULL or "": none */
	int64_t mtime_sec;
	uint32_t mtime_nsec; /* < 1e9 */
	uint64_t size;	     /* MEMBER_REG: the data bytes that follow; ignored for other types */
	const uint8_t *link; /* MEMBER_SYMLINK: the target; MEMBER_HARDLINK: the path of an
				earlier member, as written there; else unused; no NUL in it */
	size_t link_len;
	uint32_t dev_major, dev_minor;	   /* MEMBER_CHR, MEMBER_BLK */
	const struct member_xattr *xattrs; /* names without '='; values any bytes */
	size_t nxattrs;
};

/* Writes the headers of m into out, replacing what it held: out->len is then a multiple of
 * 512 (512 with no pax header).  0, -EINVAL (an empty path, a NUL in the path or the link, an
 * empty link of a link, an xattr name that is empty or holds '=', mtime_nsec >= 1e9, a type
 * tar has no flag for), -ENOMEM.  Thread-safe (no shared state). */
int tw_header(const struct tw_member *m, struct tbuf *out);

/* The zero bytes that follow size bytes of data, up to the next block. */
static inline size_t tw_pad(uint64_t size)
{
	return (size_t)(-size & (TW_BLOCK - 1));
}

#endif
