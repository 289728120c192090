/* What the lz4 and lzop codecs share on their output side.  Both decode whole blocks found by
 * hopping from header to header: a scan's worker decodes a group of blocks into one pipeline
 * buffer, a decoder one block at a time into a buffer of its own, each block verified before a
 * byte of it goes out.  Both report a problem with a message made where it is found and logged
 * by whoever reports it, and both check, once a decoder has passed its checkpoint's blocks,
 * that they ended where the checkpoint says.
 *
 * Not thread-safe: a message, a decoder's output belong to one thread at a time.
 */
#ifndef TARSEEK_LZOUT_H
#define TARSEEK_LZOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "codecs/codec.h"
#include "codecs/pipeline.h"

#define LZOUT_MSG 320

/* A message made where a problem is found, logged by whoever reports it (a scan logs the first
 * problem in stream order only). */
struct lzout_msg {
	int level;	      /* TFS_LOG_* */
	char text[LZOUT_MSG]; /* "" if nothing to say */
};

/* Records an error message (level TFS_LOG_ERR); returns err. */
__attribute__((format(printf, 3, 4))) int lzout_fail(struct lzout_msg *m, int err, const char *fmt,
						     ...);

/* Logs m at its level, if it says something. */
void lzout_log(const struct lzout_msg *m);

/* For a pipeline's next(): m, what ended a walk of the headers, becomes the note logged at the
 * end of the jobs (nothing if m says nothing). */
void lzout_end_note(const struct lzout_msg *m, struct pl_note *end);

/* For a pipeline's run() that decoded a group of blocks into one buffer: the checkpoint covers
 * the good blocks that decoded to len bytes from clen compressed ones, which are handed over;
 * every one of them passed its checks.  Returns 0, or err described by msg (pl_fail). */
int lzout_group_done(struct pl_job *job, size_t len, uint64_t clen, uint32_t good, int err,
		     const struct lzout_msg *msg, struct pl_note *fail);

/* A decoder's output: its last decoded block, returned in as many reads as the caller likes.
 * Zeroed to start; lzout_free releases it. */
struct lzout {
	uint8_t *buf; /* the last decoded block: len bytes (cap allocated), pos of them returned */
	size_t cap, len, pos;
	bool end; /* no block follows */
	int err;  /* sticky */
};

/* dec_read: the block's next bytes (at most len); once they are all out, next(d) decodes the
 * following block into o (1, 0 at the end of the data, or -errno, which sticks).  > 0 bytes, 0
 * at the end, or -errno. */
ssize_t lzout_read(struct lzout *o, void *buf, size_t len, int (*next)(struct codec_dec *d),
		   struct codec_dec *d);

void lzout_free(struct lzout *o);

/* A decoder that has decoded the blocks of its checkpoint ck (left of them remain: 0 if it
 * has) checks that they ended where ck says (pos, its next header, is ck->coff + ck->clen) and
 * decoded to ck->ulen bytes (decoded) when ck states it.  0, or -EIO logged ("<codec>: decoder:
 * the blocks at compressed offset ... do not match the index"). */
int lzout_chunk_end(const char *codec, const struct codec_ckpt *ck, uint32_t left, uint64_t pos,
		    uint64_t decoded);

#endif
