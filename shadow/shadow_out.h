/* The shadow's file, written in order past the page cache.
 *
 * A shadow is written once, while the index is built, and read at a later mount: keeping its
 * pages in the page cache meanwhile is of no use, and on the VMs measured here filling the
 * page cache is the dear part of writing (`dd bs=1M` of 700 MB: 3.5 s of system time through
 * the page cache, 0.17 s with O_DIRECT, 0.59 s in all).  So the bytes are gathered in an
 * aligned buffer of SO_STEP bytes and each full buffer is written with O_DIRECT; the tail
 * that does not fill one is written through the page cache at the end.  Where the file system
 * takes no O_DIRECT (tmpfs), or refuses a direct write, every write goes through the page
 * cache.
 *
 * Not thread-safe: one writer at a time (the caller serialises).
 */
#ifndef TARSEEK_SHADOW_OUT_H
#define TARSEEK_SHADOW_OUT_H

#include <stddef.h>
#include <stdint.h>

#define SO_STEP ((size_t)1 << 20)

struct shadow_out;

/* Creates (or truncates) path.  0 and *out, or -errno. */
int so_open(const char *path, struct shadow_out **out);

/* Appends p[0..len).  0 or -errno. */
int so_write(struct shadow_out *o, const void *p, size_t len);

/* Bytes appended so far. */
uint64_t so_size(const struct shadow_out *o);

/* Writes what is left and closes the file.  0 or -errno; o is freed either way. */
int so_close(struct shadow_out *o);

/* Closes without writing what is left (the caller removes the file).  NULL does nothing. */
void so_abort(struct shadow_out *o);

#endif
