/* An opened archive: an index opened for reading plus access to the archive's data.  This is
 * what the FUSE daemon and the tools use; it knows nothing of FUSE.  Finding, checking and
 * building the index is open.h's (arch_open); this module only opens one.
 *
 * Inode numbers are the index's entry ids (1 is the root).  A hard link's name resolves to
 * the id of the entry holding the data, so every name of a file has the same inode.  Only
 * the latest version of a repeated path is visible.
 *
 * Thread-safe: every call may be made from any thread.  Each call takes a read-only SQLite
 * connection of its own from a pool, so lookups never wait for each other; reads of data stored
 * plainly in the archive are a pread, with no lock; reads of a compressed stream go through
 * seek/reader.c and the shared chunk cache.
 */
#ifndef TARSEEK_ARCHIVE_H
#define TARSEEK_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <sqlite3.h>

#include "cache/cache.h"
#include "seek/reader.h"
#include "index/build.h"
#include "mount/tree.h"

struct arch;
struct arch_file;
struct workers;
struct prefetch;

/* What the archives of a mount share: the chunk cache (needed for compressed archives) and the
 * threads that decode ahead (NULL: no decoding ahead).  Borrowed: they outlive every archive
 * opened with them. */
struct net_env;

struct arch_env {
	struct cache *cache;
	struct workers *workers;
	const struct net_env *net; /* remote archives (net.h), or NULL: none */
	/* whether reads use the shadow beside an index (shadow/shadow.h): SHADOW_NEVER (0):
	 * not even when there is one */
	enum shadow_mode shadow;
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

/* Opens the index at index (a file path or a "mem:" name; shown, if not NULL, is how
 * messages name it) of the archive whose bytes come from data (owned, also on error); name
 * is the archive's, for messages.  The index is not validated: the caller vouches for it
 * (arch_open after validating it, the nested pass, nested archives).  0 or -errno (logged);
 * *out = NULL on error. */
int arch_open_index(const char *index, const char *shown, struct src *data, const char *name,
		    const struct arch_env *env, struct arch **out);

/* Keeps keeper (the connection that holds the in-memory index that arch_open_index was given
 * alive) until arch_close; for an archive behind a codec, the outer archive keeps it. */
void arch_keep(struct arch *a, sqlite3 *keeper);

/* Records that this open built the index, and how (arch_get_info's built and build). */
void arch_set_built(struct arch *a, const struct idx_build_stats *stats);

void arch_close(struct arch *a); /* NULL does nothing; no call may be running */

const struct arch_info *arch_get_info(const struct arch *a);

/* The visible entry name (len bytes, no NUL needed) in directory parent.  -ENOENT,
 * -ENOTDIR, -ENOMEM, or -EIO (index error). */
int arch_lookup(struct arch *a, uint64_t parent, const char *name, size_t len,
		struct arch_attr *out);

int arch_getattr(struct arch *a, uint64_t ino, struct arch_attr *out); /* -ENOENT */

/* Calls fn for the entries of directory dir in name order, starting after the entry with
 * cookie 'after' (0: from the first); see tree.h's arch_dirent_fn.  0 or -errno (fn's own
 * error included). */
int arch_readdir(struct arch *a, uint64_t dir, uint64_t after, arch_dirent_fn fn, void *opaque);

/* The symlink target of ino into buf (not NUL-terminated), its length in *len.  Fails with
 * -EINVAL if ino is not a symlink, -ERANGE if size is too small.  A target that is the
 * entry's data (zip, 7z) and that the index does not hold (encrypted, or damaged) is read
 * from the archive now, and fails as the entry's reads would: -EIO (damaged), -EACCES
 * (encrypted, no password given opens it), logged -- never an empty target. */
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

/* A regular member as a source (its bytes read through a), owned by the caller. */
int arch_file_src(struct arch *a, uint64_t ino, struct src **out);

/* Opens the archive stored as member ino (flagged ARCH_A_NESTED), its bytes read through a.
 * The result is independent of a's open files but must be closed before a. */
int arch_nested(struct arch *a, uint64_t ino, struct arch **out);

/* Every version of name in dir, oldest first. */
int arch_versions(struct arch *a, uint64_t dir, const char *name, size_t len, tree_version_fn fn,
		  void *opaque);

/* "key=value" lines about ino (source, codec, index, version, offsets) into buf. */
int arch_describe(struct arch *a, uint64_t ino, char *buf, size_t size);

/* Queues every decoded stream of a for prefetch (their readers made now), if all of them
 * fit what pf's budget has left; else none (logged).  A plain archive's file is queued to be
 * read into the page cache, if it fits.  0 or -errno (making a reader). */
int arch_prefetch(struct arch *a, struct prefetch *pf);

/* Decoding statistics of the streams read so far (zeros for a plain archive). */
void arch_get_reader_stats(struct arch *a, struct creader_stats *out);

#endif
