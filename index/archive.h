/* An opened archive: its validated index plus access to its data.  This is what the FUSE
 * daemon and the tools use; it knows nothing of FUSE.
 *
 * Inode numbers are the index's entry ids (1 is the root).  A hard link's name resolves to
 * the id of the entry holding the data, so every name of a file has the same inode.  Only
 * the latest version of a repeated path is visible.
 *
 * Thread-safe: every call may be made from any thread.  Each thread gets its own read-only
 * SQLite connection (opened on its first call), so lookups never wait for each other; reads
 * of a plain tar are a pread on the archive, with no lock; reads of a compressed archive go
 * through codecs/reader.c and the shared chunk cache.
 */
#ifndef TARSEEK_ARCHIVE_H
#define TARSEEK_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../codecs/cache.h"
#include "../codecs/reader.h"
#include "index.h"

struct arch;
struct arch_file;

struct arch_opts {
	struct idx_opts idx;
	struct cache *cache; /* shared chunk cache, borrowed; needed for compressed archives */
};

#define ARCH_A_NESTED 1 /* a member that is an archive, mounted as a folder (-r) */

struct arch_attr {
	uint64_t ino;
	uint32_t flags;	     /* ARCH_A_* */
	uint32_t mode; /* st_mode with type bits */
	uint32_t nlink;
	uint64_t uid, gid;
	uint64_t size;
	uint64_t rdev;
	int64_t mtime;	     /* seconds */
	uint32_t mtime_nsec;
	uint64_t blocks;     /* 512-byte blocks the data takes (less than size/512 if sparse) */
};

struct arch_info {
	const char *path;     /* the archive */
	const char *index;    /* the index file */
	const char *codec;    /* "none", "gzip", ... */
	bool single_file;     /* a compressed file that is not a tar */
	bool damaged;	      /* the index holds only what was readable */
	bool built;	      /* the index was built by this open */
	uint64_t members;     /* as counted by the indexer */
	uint64_t entries;     /* rows (inodes) in the index */
	uint64_t archive_size;
	uint64_t usize;	      /* decompressed size */
	struct idx_build_stats build; /* valid if built */
};

/* Opens archive: finds or builds its index (see index.h) and prepares reads.  0 or -errno
 * (-ENOENT, -EACCES, -EINVAL not an archive, -EIO damaged/unreadable, -ENOMEM); the reason
 * is logged.  *out = NULL on error. */
int arch_open(const char *archive, const struct arch_opts *o, struct arch **out);
void arch_close(struct arch *a); /* NULL does nothing; no call may be running */

const struct arch_info *arch_get_info(const struct arch *a);

/* The visible entry name (len bytes, no NUL needed) in directory parent.  -ENOENT,
 * -ENOTDIR, or -EIO (index error). */
int arch_lookup(struct arch *a, uint64_t parent, const char *name, size_t len,
		struct arch_attr *out);

int arch_getattr(struct arch *a, uint64_t ino, struct arch_attr *out); /* -ENOENT */

/* Calls fn for the entries of directory dir in name order, starting after the entry with
 * cookie 'after' (0: from the first).  fn gets each entry's cookie; it returns non-zero to
 * stop (e.g. a full reply buffer; that entry is then not consumed).  0 or -errno. */
typedef int (*arch_dirent_fn)(void *opaque, const char *name, size_t len,
			      const struct arch_attr *attr, uint64_t cookie);
int arch_readdir(struct arch *a, uint64_t dir, uint64_t after, arch_dirent_fn fn, void *opaque);

/* The symlink target of ino into buf (not NUL-terminated), its length in *len.  Fails with
 * -EINVAL if ino is not a symlink, -ERANGE if size is too small. */
int arch_readlink(struct arch *a, uint64_t ino, char *buf, size_t size, size_t *len);

/* Extended attributes stored in the archive.  listxattr writes NUL-terminated names
 * (size 0: returns the size needed); getxattr returns the value's length (-ENODATA if
 * absent, -ERANGE if size is too small and not 0). */
ssize_t arch_listxattr(struct arch *a, uint64_t ino, char *buf, size_t size);
ssize_t arch_getxattr(struct arch *a, uint64_t ino, const char *name, void *buf, size_t size);

/* Open files.  -EISDIR / -EINVAL if ino is not a regular file. */
int arch_file_open(struct arch *a, uint64_t ino, struct arch_file **out);

/* Up to len bytes at off (short only at the end of the file).  -EIO if the archive cannot
 * give the bytes the index promises (damaged, truncated or changed). */
ssize_t arch_file_read(struct arch_file *f, void *buf, size_t len, uint64_t off);

/* For zero-copy replies: if [off, off+len) of the file is a plain range of the archive file
 * (a plain tar, not sparse), sets *fd and *fd_off and returns the byte count (clamped to
 * the file size); else 0. */
size_t arch_file_direct(struct arch_file *f, uint64_t off, size_t len, int *fd, uint64_t *fd_off);

uint64_t arch_file_size(const struct arch_file *f);
void arch_file_close(struct arch_file *f); /* NULL does nothing */

/* Opens an archive whose index is already at hand (a file path or a "memdb:" name) and whose
 * bytes come from data (owned, also on error); name is for messages.  No validation: the
 * caller vouches for the index (the builder's nested pass, nested archives). */
int arch_open_index(const char *index, struct src *data, const char *name, struct cache *cache,
		    struct arch **out);

/* A regular member as a source (its bytes read through a), owned by the caller. */
int arch_file_src(struct arch *a, uint64_t ino, struct src **out);

/* Opens the archive stored as member ino (flagged ARCH_A_NESTED), its bytes read through a.
 * The result is independent of a's open files but must be closed before a. */
int arch_nested(struct arch *a, uint64_t ino, struct arch **out);

/* Every version of name in dir, oldest first (fn's type is tree_version_fn in tree.h). */
int arch_versions(struct arch *a, uint64_t dir, const char *name, size_t len,
		  int (*fn)(void *opaque, const struct arch_attr *attr), void *opaque);

/* "key=value" lines about ino (source, codec, index, version, offsets) into buf. */
int arch_describe(struct arch *a, uint64_t ino, char *buf, size_t size);

/* Decoding statistics of a compressed archive (zeros for a plain one). */
void arch_get_reader_stats(struct arch *a, struct creader_stats *out);

#endif
