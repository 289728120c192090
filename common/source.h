/* The source interface: everything the parsers and codecs read comes through a pread-like
 * callback, so the same code reads a file, a buffer in memory (unit tests), or a member of
 * another archive (nested archives).
 *
 * Contract of a source:
 *  - src_pread() returns the number of bytes read, which is less than len only at the end of
 *    the source, or -errno (-EIO for a read error, -ESPIPE when a forward-only source is asked
 *    for data before its current position).  It never returns data past src_size().
 *  - A source made by src_open_file() or src_from_mem() is safe to read from several threads
 *    at once.  A source made from other ops is as thread-safe as its ops.
 *  - src_free(NULL) does nothing.  src_free() calls ops->close(opaque) once.
 *  - src_advise() is a hint, never needed for correctness: a source that reads by requests
 *    (a remote object, remote.h) fetches the span now, in one request; a file has the kernel
 *    read it now (POSIX_FADV_WILLNEED: large requests, not the decoder's small reads); others
 *    ignore it.
 */
#ifndef TARSEEK_SOURCE_H
#define TARSEEK_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct src;

#define SRC_SIZE_UNKNOWN UINT64_MAX

struct src_ops {
	/* Read up to len bytes at off; may return short counts anywhere (src_pread loops). */
	ssize_t (*pread)(void *opaque, void *buf, size_t len, uint64_t off);
	/* Release opaque; may be NULL. */
	void (*close)(void *opaque);
	/* The bytes [off, off + len) will be read soon: fetch them now.  May be NULL. */
	void (*advise)(void *opaque, uint64_t off, uint64_t len);
};

/* A source over custom ops; size may be SRC_SIZE_UNKNOWN.  NULL if out of memory (ops->close
 * is then not called). */
struct src *src_new(const struct src_ops *ops, void *opaque, uint64_t size);

/* Opens path read-only.  0, or -errno (-ENOENT, -EACCES, -EISDIR, ...). *out = NULL on error. */
int src_open_file(const char *path, struct src **out);

/* A source over a caller-owned buffer, which must outlive the source (it is not copied). */
struct src *src_from_mem(const void *buf, size_t len);

/* The len bytes of parent from off on, as a source of their own (offsets from 0): a zip
 * entry's or a stream's compressed bytes.  parent is borrowed and must outlive it; as
 * thread-safe as parent.  NULL if out of memory. */
struct src *src_window(struct src *parent, uint64_t off, uint64_t len);

/* Reads exactly len bytes unless the source ends first (see contract above). */
ssize_t src_pread(struct src *s, void *buf, size_t len, uint64_t off);

/* Reads exactly len bytes: 0, -EIO if the source ends before (a truncated input), or -errno. */
int src_pread_full(struct src *s, void *buf, size_t len, uint64_t off);

/* A hint that [off, off + len) will be read soon (clipped to the source; see above). */
void src_advise(struct src *s, uint64_t off, uint64_t len);

/* The opaque of s if it was made with ops, else NULL. */
void *src_opaque_if(const struct src *s, const struct src_ops *ops);

/* Total size in bytes, or SRC_SIZE_UNKNOWN. */
uint64_t src_size(const struct src *s);

/* The file descriptor of a file source, or -1.  Owned by the source. */
int src_fd(const struct src *s);

/* Highest offset + length ever requested (progress reports use it).  Thread-safe. */
uint64_t src_high_water(const struct src *s);

void src_free(struct src *s);

#endif
