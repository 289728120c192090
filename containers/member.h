/* One member of an archive, as every container reports it to the index builder: tar/tar.h
 * (the parse loop), zip.h, the 7z container (7z/sza_files.c) and libarchive.c.  The types are
 * named after tar's, which has them all.  Nothing here says which container a member came
 * from: the index, the union, versions and -r treat them all alike.
 */
#ifndef TARSEEK_MEMBER_H
#define TARSEEK_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum member_type {
	MEMBER_REG = 'f',
	MEMBER_HARDLINK = 'h',
	MEMBER_SYMLINK = 'l',
	MEMBER_CHR = 'c',
	MEMBER_BLK = 'b',
	MEMBER_DIR = 'd',
	MEMBER_FIFO = 'p',
};

/* One extent of a sparse file: len bytes of data at logical offset off, stored at src bytes
 * from the member's data offset.  Everything outside the extents reads as 0. */
struct member_sparse {
	uint64_t off;
	uint64_t len;
	uint64_t src;
};

struct member_xattr {
	const char *name; /* NUL-terminated, e.g. "user.comment" */
	const uint8_t *value;
	size_t len;
};

/* A member.  All pointers are owned by the container and valid only during the callback. */
struct arc_member {
	const uint8_t *path; /* raw bytes as stored (not normalised), NUL-terminated */
	size_t path_len;
	const uint8_t *link; /* hard/symbolic link target, NUL-terminated; "" when none */
	size_t link_len;
	enum member_type type;
	uint64_t hdr_off;  /* where the member's headers start (tar: its first header block,
			      incl. L/K/x headers; zip: its local header; 7z: 0) */
	uint64_t stream;   /* where its data is: 0, the container's own data (the archive file,
			      or a compressed tar's decoded stream); else a stream the container
			      declared (container.h) */
	uint64_t data_off; /* offset of the member's data in it (tar: after any sparse 1.0 map) */
	uint64_t size;	   /* logical size (the real size for sparse files); 0 unless MEMBER_REG */
	uint64_t stored;   /* bytes of data stored in the archive from data_off (may be > 0 for
			      a hard link or a dumpdir 'D' even though size is 0) */
	uint32_t mode;	   /* permission bits only (07777) */
	uint64_t uid, gid;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint32_t dev_major, dev_minor;
	const char *uname, *gname; /* "" when absent */
	const struct member_sparse *sparse; /* NULL unless a sparse file; in offset order, not
					    overlapping, inside size, no empty extents (an
					    all-hole file has nsparse 0) */
	size_t nsparse;
	const struct member_xattr *xattrs; /* from SCHILY.xattr.* / LIBARCHIVE.xattr.*, one per name */
	size_t nxattrs;
	bool has_crc;	   /* crc is the CRC-32 of the member's bytes, as the archive stores it */
	uint32_t crc;
	bool link_in_data; /* a symlink whose target is its data (zip, 7z): link is unset */
	bool dos_time;	   /* mtime_sec is a zip DOS time, which has no zone, read as UTC (the
			      mount shows it as local time, as unzip extracts it) */
	bool no_owner;	   /* the archive says nothing of uid/gid: the archive file's owner */
	bool no_mtime;	   /* the archive says nothing of the time: the archive file's mtime */
	int unreadable;	   /* 0, or why its bytes cannot be read: -EOPNOTSUPP (a method or filter
			      tarseek lacks), -EACCES (encrypted); it is listed, its reads fail */
	const char *why;   /* for unreadable: what, e.g. "compression method 6 (implode)" */
};

#endif
