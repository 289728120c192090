/* The indexing pass over a compressed file: runs a codec's scan and presents the decoded
 * bytes as a forward-only source, so the tar parser reads a .tar.gz exactly as it reads a
 * .tar.  On the way it cuts the decoded stream into segments (segment.h), computes each
 * segment's CRC32, and hands every finished checkpoint -- with its decoded length, its aux
 * blob and its segment CRCs -- to a sink (the index builder, which stores it).
 *
 * The forward-only source: a read after the current position decodes and discards the bytes
 * in between (they are still checksummed); a read before what the internal buffer holds
 * returns -ESPIPE.  The first 512 KiB stay readable until more is read (so the builder can
 * probe the head and then parse from offset 0); past that, what is behind the position is
 * readable only while it is still buffered, which callers must not count on.  Reads are
 * served from that buffer, refilled with large scan_read calls, so the parser's 512-byte
 * header reads cost a memcpy each.
 *
 * Not thread-safe: one thread drives the stream (the codec may run its own workers).
 */
#ifndef TARSEEK_STREAM_H
#define TARSEEK_STREAM_H

#include "codecs/codec.h"

struct cstream;

struct cstream_sink {
	/* A finished checkpoint, idx = 0, 1, 2, ... in order.  ck->ulen is set; crcs holds
	 * seg_count(ck->ulen, seg_shift) CRC32s.  All pointers are valid only during the call.  Returns
	 * 0 or -errno (stops the stream). */
	int (*checkpoint)(void *opaque, uint64_t idx, const struct codec_ckpt *ck, const void *aux,
			  size_t auxlen, const uint32_t *crcs, uint64_t ncrcs);
	void *opaque;
	unsigned seg_shift; /* the segments' size (segment.h); 0: SEG_SHIFT */
	/* Optional (NULL: none): a tap on the decoded bytes, as they are checksummed -- every
	 * byte once, in order, with tap_chunk called at the first byte of each chunk (before
	 * that byte is tapped).  The shadow's writer (shadow/) is one. */
	void (*tap_chunk)(void *tap);
	void (*tap_bytes)(void *tap, const void *p, size_t len);
	void *tap;
};

/* Starts codec c's scan of in.  0 or -errno; *out = NULL on error. */
int cstream_new(const struct codec *c, struct src *in, const struct codec_opts *opts,
		const struct cstream_sink *sink, struct cstream **out);

/* The forward-only source over the decoded bytes; owned by the stream.  Its size is
 * unknown.  A decode error is returned by its reads (-EIO, logged by the codec). */
struct src *cstream_src(struct cstream *s);

/* Decodes (and discards) the rest of the stream, then emits the last checkpoint.
 * *usize = total decoded bytes.  Returns 0, or the first error of the scan or the sink. */
int cstream_finish(struct cstream *s, uint64_t *usize);

/* After a decode error: ends the checkpoint list at the last point at or before limit (the
 * codec's verified offset) that the stored segment CRCs can cover, emits that last
 * checkpoint, and sets *usize to the decoded bytes the index keeps.  When limit lies before
 * the current chunk, that chunk cannot be cut and *usize is where it starts, which may be past
 * limit (the caller trusts only min(*usize, limit)).  After the sink failed, nothing the
 * index holds can be trusted: returns the sink's error.  0 or -errno. */
int cstream_salvage(struct cstream *s, uint64_t limit, uint64_t *usize);

/* Decoded bytes so far. */
uint64_t cstream_pos(const struct cstream *s);

/* The codec's verified position (see codec.h scan_verified). */
uint64_t cstream_verified(struct cstream *s);

/* The original name stored in the compressed file (gzip FNAME), or NULL. */
const char *cstream_name(struct cstream *s);

void cstream_free(struct cstream *s); /* NULL does nothing */

#endif
