/* Random reads from a compressed archive, the same for every codec.
 *
 * A read at decompressed offset off finds the chunk (checkpoint) and the segment holding
 * off, takes the segment from the shared cache, or decodes it: with a live decoder already
 * positioned at or before it in the same chunk when there is one (a sequential read of a
 * member continues where the previous request stopped, instead of restarting from the
 * checkpoint), else with a new decoder started at the checkpoint.  Every segment decoded on
 * the way is checked against the CRC32 stored in the index and put in the cache; a mismatch
 * or a decode error fails the read with -EIO (logged), never returns wrong bytes.
 *
 * Whole mode, for the small streams of containers (a compressed zip entry, a small 7z folder)
 * whose bytes were not decoded while indexing: no checkpoint but the start, no segment CRCs,
 * but CRC-32s of byte ranges (its members).  The first read decodes the stream whole, with the
 * codec's scan, checks every range before any byte is published, and puts all its segments
 * in the cache; a mismatch fails the read with -EIO (logged).
 *
 * Thread-safe: any number of threads may read at once.  Memory: the cache's budget, plus
 * at most max_decoders idle decoders, plus one segment of scratch per reading thread.
 */
#ifndef TARSEEK_READER_H
#define TARSEEK_READER_H

#include <stdatomic.h>

#include "cache/cache.h"
#include "codecs/codec.h"

struct creader;

/* A run of the decoded stream whose CRC-32 the container stored (whole mode). */
struct creader_range {
	uint64_t off, len;
	uint32_t crc;
};

struct creader_params {
	const struct codec *codec;
	struct src *in;			  /* the compressed file; borrowed, must be thread-safe */
	const struct codec_ckpt *ckpts;	  /* copied; ulen set; in uoff order, the first at 0 */
	size_t nckpts;
	bool adopt_ckpts; /* ckpts is malloc'd and the reader takes it instead of a copy (on
			     success only): a shadow's 28,770 checkpoints are 1.6 MB, and fresh
			     memory costs ~2.5 ms a MB to fault in on the VMs measured here */
	const uint32_t *crcs;		  /* copied; seg_count(ulen, seg_shift) CRCs per
					     checkpoint, in order; NULL: none (the codec checks
					     every block itself) */
	unsigned seg_shift;		  /* segment size (segment.h); 0: SEG_SHIFT */
	uint64_t usize;			  /* total decompressed size */
	/* Loads checkpoint idx's aux blob into a malloc'd buffer (*aux = NULL, *len = 0 if it
	 * has none).  0 or -errno.  Called from any thread. */
	int (*load_aux)(void *opaque, size_t idx, void **aux, size_t *len);
	void *aux_opaque;
	struct cache *cache;		  /* shared; borrowed */
	struct workers *workers;	  /* threads for decoding ahead (borrowed), or NULL: none */
	unsigned max_decoders;		  /* idle decoders kept (0: a default) */
	/* Whole mode (see above): crcs NULL, one checkpoint at 0 covering usize, ranges inside
	 * usize (copied), the codec's scan given params (copied).  nranges 0: not whole mode. */
	const struct creader_range *ranges;
	size_t nranges;
	const void *params;
	size_t params_len;
	bool secret; /* decrypted bytes: the segments are cache.h's secret buffers (kept off the
			cache's disk tier) */
};

/* 0 or -errno (-EINVAL if the checkpoints or CRCs are inconsistent). *out = NULL on error. */
int creader_new(const struct creader_params *p, struct creader **out);

/* Reads up to len bytes at off: the count (short only at the end of the data), or -EIO /
 * -ENOMEM if any part of the range cannot be read (never a partial count then). */
ssize_t creader_read(struct creader *r, void *buf, size_t len, uint64_t off);
/* The same, from a reader that will go on reading up to ahead_to (a decoded offset; 0 or
 * anything below off + len: no such promise): a read that has to decode has a background
 * thread decode on to there, past chunk ends, besides the rest of its chunk. */
ssize_t creader_read_ahead(struct creader *r, void *buf, size_t len, uint64_t off,
			   uint64_t ahead_to);

uint64_t creader_size(const struct creader *r);

/* Chunks (checkpoints) of the stream. */
size_t creader_nchunks(const struct creader *r);

/* Decodes chunk i whole into the cache: the segments nobody has are reserved, decoded,
 * checked and published (prefetch.h).  Stops between segments when *stop becomes true
 * (-ECANCELED).  0, or -errno (-EIO damaged, logged; what was not decoded is given back). */
int creader_fill_chunk(struct creader *r, size_t i, const atomic_bool *stop);

struct creader_stats {
	uint64_t decoders_started; /* dec_new calls */
	uint64_t decoded_bytes;	   /* bytes produced by decoders */
	uint64_t segments_filled;  /* segments decoded and checked */
	uint64_t ahead_waits;	   /* reads that waited for a background job's decoder */
	uint64_t ahead_jobs;	   /* background jobs handed to the workers (counted before the
				    * read that submitted one returns) */
};
void creader_get_stats(struct creader *r, struct creader_stats *out);

void creader_free(struct creader *r); /* NULL does nothing */

#endif
