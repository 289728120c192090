/* Index images held in memory, read-only, shared by every connection of the process.
 *
 * An SQLite VFS ("tarseek-mem") that serves a database file's bytes from one buffer.  A
 * connection opens an image by the name memvfs_add gave it; SQLite reads pages by pointer
 * (xFetch: give those connections a PRAGMA mmap_size), so connections keep no copy of their
 * own.  This replaces SQLite's memdb for small indexes: memdb shares a database between
 * connections only when it is filled through the backup API, page by page (sqlite3_deserialize
 * makes a private one), and that copy cost ~55 us a page here, 12 ms for the 0.9 MB index of
 * a sosreport, at every mount.
 *
 * Lifetime: an image lives while its owner holds it (until memvfs_release) or a connection
 * has it open: open a first connection, release, and the image goes with the last connection
 * closed (SQLite's memdb has the same rule).
 * Thread-safe: the registry is locked; the bytes never change once added.
 */
#ifndef TARSEEK_COMMON_MEMVFS_H
#define TARSEEK_COMMON_MEMVFS_H

#include <stddef.h>

struct memvfs_img;

/* The prefix of the names memvfs_name returns; db_open_ro opens such names through this VFS. */
#define MEMVFS_PREFIX "mem:"

/* Reads the file at path (at most max bytes; larger: -EFBIG) into a new image.  It must be an
 * SQLite file in rollback-journal mode (else -ENOTSUP).  0 or -errno; *out = NULL on error. */
int memvfs_load_file(const char *path, size_t max, struct memvfs_img **out);

/* A new image with a copy of the len bytes at data (an SQLite file, as above). */
int memvfs_copy(const void *data, size_t len, struct memvfs_img **out);

/* The image's name ("mem:tarseek-PID-N"), valid until the image is freed. */
const char *memvfs_name(const struct memvfs_img *img);

/* The image's size in bytes. */
size_t memvfs_size(const struct memvfs_img *img);

/* The bytes of the image called name (as memvfs_name gives it), for a caller that keeps the
 * image alive meanwhile (a connection to it is open): 0, or -ENOENT if there is no such image. */
int memvfs_bytes(const char *name, const void **data, size_t *len);

/* Gives up the caller's reference (NULL: nothing); see Lifetime above. */
void memvfs_release(struct memvfs_img *img);

/* The URI that opens the image called name (MEMVFS_PREFIX...), malloc'd; NULL if no memory. */
char *memvfs_uri(const char *name);

#endif
