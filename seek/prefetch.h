/* Whole-archive prefetch: decoding every chunk of the archives of a mount into the cache in
 * the background, right after the mount is up, so that the reads that follow find their
 * segments decoded.  Meant for archives that fit the cache whole (a sosreport bundle): the
 * budget is the most decoded bytes one prefetch takes on, and a stream that would go past it
 * is not taken at all (decoding what the cache cannot hold would only evict it again).
 *
 * A plain archive has nothing to decode: its bytes are read into the page cache instead, in
 * PF_FILE_STEP steps (each read as PF_FILE_PIECE says), so that its members are served at
 * memory speed.
 *
 * Work is a list of (reader, chunk) items in archive order, taken by `threads` threads, so a
 * block codec's blocks (xz, pxz, bzip2, zstd frames, lzop, gzip checkpoints) decode on all of
 * them at once, and a stream with a single chunk (single-block xz) on one; a prefetch that only
 * decodes shadow frames (pf_add's fast) or reads files on one thread.  The threads run at
 * a lower priority (nice PF_NICE) than the daemon's request threads, and reserve a chunk's
 * segments before decoding it: a read that wants one of them waits for that decode instead of
 * starting its own, and a read that wants a segment of a chunk not reached yet decodes it
 * itself (then prefetch passes over what is already there).  Damage met on the way is logged
 * and costs only the reads of the damaged chunk: they fail as they would without prefetch.
 *
 * pf_free stops the threads within one segment's decode and joins them; it must run before
 * the readers are freed.  Thread-safe; the lock is taken alone.
 */
#ifndef TARSEEK_PREFETCH_H
#define TARSEEK_PREFETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "seek/reader.h"

#define PF_NICE 10
#define PF_FILE_STEP ((uint64_t)8 << 20)
/* A plain file's step is read PF_FILE_PIECE at a time, each waited for before the next is
 * queued, so that a request's read of a page not reached yet waits behind one piece, not
 * behind whole steps: readahead() queues all it is given at once, and a virtio disk takes it
 * all into its queue.  A cold md5 pass of 1000 files (11 MB) of telemetry.tar (65 MB) right
 * after the mount, 3 x 5 runs: medians 0.127-0.141 s with 8 MiB steps queued on two threads,
 * 0.110-0.120 s with 256 KiB pieces on one (128 KiB: 0.113-0.128; two threads: 0.113-0.129;
 * 128 KiB pieces with 1 MiB queued: 0.132-0.141; the extracted tree: 0.135-0.140).  A file
 * is still read at ~1.3 GB/s. */
#define PF_FILE_PIECE ((uint64_t)256 << 10)

struct prefetch;

/* A prefetch of at most budget decoded bytes on `threads` threads (>= 1).  NULL if out of
 * memory.  Nothing runs before pf_start. */
struct prefetch *pf_new(unsigned threads, uint64_t budget);

/* Queues every chunk of r if its decoded size fits what is left of the budget: true if
 * queued.  Before pf_start only.  fast: r decodes faster than any reader reads (a shadow's
 * zstd frames); a prefetch whose decoding is all fast runs on one thread, leaving the other
 * cores to the reads it is there to serve (a cold md5 pass of 1000 files of a shadowed
 * telemetry.tar.bz2, 9 runs: 0.07-0.41 s on two threads, 0.08-0.15 s on one). */
bool pf_add(struct prefetch *pf, struct creader *r, bool fast);

/* Queues reading the first size bytes of the file open at fd into the page cache (a plain
 * archive: its members are then served without waiting for the disk), if size fits what is
 * left of the budget: true if queued.  fd must stay open until pf_free.  Before pf_start. */
bool pf_add_file(struct prefetch *pf, int fd, uint64_t size);

/* Records that an archive of the mount was not taken (it did not fit). */
void pf_note_skipped(struct prefetch *pf);

/* The budget, and what it has left. */
uint64_t pf_budget(struct prefetch *pf);
uint64_t pf_room(struct prefetch *pf);

/* Starts the threads (after the daemon has forked).  0 or -errno. */
int pf_start(struct prefetch *pf);

struct pf_stats {
	uint64_t queued_bytes; /* decoded bytes of the streams taken */
	uint64_t chunks, chunks_done, chunks_failed;
	uint64_t skipped; /* archives not taken */
	bool started;  /* pf_start ran its threads */
	bool finished; /* every item taken and done */
};
void pf_get_stats(struct prefetch *pf, struct pf_stats *out);

/* True while its threads decode (started, not all done).  For the request loop, which asks
 * before every request it waits for and spins less while cores are busy (fs/loop.h): one
 * atomic load, no lock.  NULL: false. */
bool pf_running(struct prefetch *pf);

/* Stops the threads and joins them.  NULL does nothing. */
void pf_free(struct prefetch *pf);

#endif
