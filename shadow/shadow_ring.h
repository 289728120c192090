/* The shadow's frames on their way to its file: compressed by pool jobs, written in order by
 * a thread of their own (shadow_write.c cuts the frames and keeps the map; this holds them
 * from there to the file).
 *
 * Frames go into a ring of slots.  `jobs` pool jobs compress the queued ones (zstd at
 * `level`); the writer thread writes the slot at the ring's head as soon as it is compressed,
 * and, when the ring is nearly full, takes the head as it is -- stored, raw blocks, copied
 * straight into the file's buffer -- if no job has started on it.  So the caller waits only
 * when the writer cannot keep up with the disk, never for a compression.
 *
 * The jobs run at the decoder's priority: a decoder slower than zstd --fast (xz, bzip2) has
 * every frame compressed.  A fast one is better given no job at all (shadow_store_only).
 *
 * The file: shadow_out.h (direct writes).  The seek table is kept here as the frames are
 * written.  Errors: the first one is handed to fail() once; everything after is dropped.
 */
#ifndef TARSEEK_SHADOW_RING_H
#define TARSEEK_SHADOW_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ring_opts {
	unsigned jobs;	    /* compressing jobs (0: every frame stored) */
	int level;	    /* zstd level */
	size_t buf_cap;	    /* the size of every frame buffer */
	uint64_t max_bytes; /* the file may not grow past this (0: no limit): -EFBIG */
	void (*fail)(void *arg, int err, const char *what);
	void *arg;
};

struct shadow_ring;

/* Creates path and starts the threads.  0 and *out, or -errno (nothing logged). */
int ring_new(const char *path, const struct ring_opts *o, struct shadow_ring **out);

/* A buffer of buf_cap bytes for the caller to fill, or NULL if out of memory. */
uint8_t *ring_buf(struct shadow_ring *r);

/* Hands (*buf)[0..len) to the ring as the file's next frame (the caller serialises the puts);
 * *buf becomes another buffer of buf_cap bytes, beginning with the `keep` bytes that followed
 * the frame.  Waits while the ring is full. */
void ring_put(struct shadow_ring *r, uint8_t **buf, size_t len, size_t keep);

/* Waits until every frame is written, stops the threads, appends the skippable frame
 * skip[0..len) (listed in the seek table with no decoded bytes), then the seek table, and
 * closes the file.  0 or -errno (already handed to fail). */
int ring_finish(struct shadow_ring *r, const uint8_t *skip, size_t len);

struct ring_stats {
	uint64_t stored_frames, written;
};
void ring_stats(const struct shadow_ring *r, struct ring_stats *out);

/* Stops the threads and closes the file (unfinished: the caller removes it).  NULL does
 * nothing. */
void ring_free(struct shadow_ring *r);

#endif
