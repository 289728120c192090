/* bzip2's indexing scan (codec_bzip2's scan_*): it finds the blocks by their magics, decodes
 * them (in parallel with opts->threads), checks them and the streams' CRCs, and delivers the
 * bytes in order with a checkpoint per block.  The format, the bounds and the checkpoints are
 * described in bzip2.c.
 *
 * Finding blocks.  The scan reads the file in order and searches the magics at every bit
 * offset.  Testing all 8 shifts at every byte would cost ~8 compares a byte; instead a 64 Kbit
 * table marks the 16-bit values that two consecutive whole bytes of either magic can take at
 * any shift (64 of 65 536), and the scan looks them up at every second byte: any occurrence
 * has at least five whole bytes, so one of its pairs starts at an even offset.  Only a hit
 * (about one in 1000 pairs on compressed data) is checked exactly, with a 64-bit window at
 * the 8 shifts of the bytes around it.  Each magic found starts a candidate block that ends at
 * the next magic found.
 *
 * Chance magics.  The magic can occur inside compressed data (about once in 2^47 bit offsets
 * for the two magics, so once in 16 TiB of data; and any file can be crafted to hold it).  A
 * candidate is accepted only if it decodes with a matching CRC, starting where the previous
 * block ended.  When the candidate [start, next magic) fails, either the block is damaged or a
 * chance magic cut it short, and retrying with every later magic as the end could be
 * quadratic on a crafted file.  Instead we feed the block to one decoder a candidate at a time:
 * the inverse BWT needs the whole block, so libbz2 writes no output until it has read the
 * block's last code, and it reads no bit past that code before its output is done.  We feed
 * the file's bits up to the end of the byte holding candidate c_k's first bit, then c_{k+1}'s,
 * and so on.  If output first appears after c_k's byte, the block's last code ended after
 * c_{k-1} and before c_k + 8, and since magics are at least 45 bits apart the block ends at
 * c_k: that one end is tried, and if it does not decode (or c_k was the candidate that just
 * failed) the block is damaged.  A decode error while feeding means damage too, since every
 * bit fed was the file's own.  So a block costs one extra pass over its Huffman codes and one
 * extra decode, and nothing is logged for the false candidates.
 *
 * Parallelism.  The thread calling scan_read reads the file, finds the magics, and hands each
 * candidate block (a copy of its bytes) to opts->threads workers (jobs of the pool,
 * common/pool.h, joined by scan_free); it delivers the blocks in file order, each only after
 * its CRC matched.  At most 2 x threads decoded blocks wait, each as a list of 1 MiB chunks: a
 * block can decode to far more than its 900 kB (the first RLE stage turns 5 bytes into up to
 * 259), and we never assume a maximum.  Workers decode every candidate speculatively with the
 * level of the last stream header seen; a candidate that turns out not to be a block is
 * discarded, and one decoded with the wrong level (a stream header the search mispredicted) is
 * decoded again.  With threads = 1 there are no workers: the calling thread decodes each block
 * when it needs it.
 */
#include "codecs/bzip2/bzip2_int.h"

#include <bzlib.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/pool.h"
#include "codecs/liberr.h"
#include "codecs/pipeline.h"
#include "codecs/trailing.h"

enum { JOB_IDLE, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

/* A magic found in the file, and the candidate block from it to the next magic.  Owned by the
 * scan's item list; the fields marked (lock) are shared with the workers under bz_scan.lock,
 * the others belong to the scan_read thread, except that a worker owns in, out and crc while
 * state == JOB_RUNNING. */
struct bz_item {
	struct bz_item *next;
	uint64_t bit;  /* where the magic starts (bit offset in the file) */
	uint64_t end;  /* where the next magic starts, when closed && !at_eof && !overlong */
	bool eos;      /* an end-of-stream magic, else a block magic */
	bool closed;   /* the next magic, the end of the file or the size bound was reached */
	bool at_eof;   /* closed by the end of the file: no magic follows */
	bool overlong; /* no magic follows within bz_max_block_bits(9) */
	bool dispatched;
	/* the speculative decode of [bit, end) */
	struct bz_item *qnext; /* (lock) in the workers' queue */
	int state;	       /* (lock) JOB_* */
	int rc;		       /* 0 or -errno, when JOB_DONE */
	unsigned level;	       /* level it was decoded with */
	unsigned shift;
	uint64_t nbits;
	uint8_t *in; /* raw bytes of the candidate, then its one-block stream */
	struct bz_out out;
	uint32_t crc;
};

struct bz_scan {
	struct src *in; /* not owned */
	struct codec_sink sink;
	unsigned threads; /* workers running; 1 = none, decode in the calling thread */
	bool lib;	  /* TARSEEK_BZIP2=libbz2: every block through libbz2 */
	struct bzb *bzb;  /* our block decoder for the calling thread, made on first use */
	unsigned maxq;	  /* most candidates handed to workers and not yet delivered */

	/* The finder (scan_read thread only): file bytes [off, off + len) are in win. */
	uint8_t *win;
	size_t cap, len;
	uint64_t off;
	uint64_t srch;	 /* next (even) byte offset whose pair is looked up */
	uint64_t nub;	 /* first byte offset not yet checked exactly */
	bool eof;	 /* the file ends at off + len */
	bool fdone;	 /* no more magics will be found (end of file, bound, read error) */
	unsigned flevel; /* level of the last stream header seen by the finder */
	struct bz_item *head, *tail;
	uint64_t nitems;   /* magics found so far */
	unsigned inflight; /* dispatched items in the list */
	uint8_t pairs[65536 / 8];

	/* The stream walk (scan_read thread only). */
	bool started, done;
	int err;	   /* sticky error of scan_read */
	uint64_t pos;	   /* bit where the next magic must start */
	unsigned level;	   /* current stream's level */
	uint32_t combined; /* combined CRC of the current stream so far */
	uint64_t uoff;	   /* decoded bytes accepted so far */
	uint64_t cstart;   /* byte offset of the current stream (messages) */
	struct bz_out cur; /* the accepted block being delivered; chunks freed as read */
	size_t rpos;	   /* read position in cur.head */

	/* Workers.  Lock order: lock is a leaf (nothing else is taken while holding it). */
	pthread_mutex_t lock;
	pthread_cond_t work_cv;	       /* a job was queued, or stop */
	pthread_cond_t done_cv;	       /* a job finished */
	struct bz_item *qhead, *qtail; /* (lock) jobs waiting for a worker */
	bool stop;		       /* (lock) */
	struct pool_job **thr;	       /* the workers: jobs of the pool */
	unsigned nthr;
};

static struct bz_scan *bz_to_scan(struct codec_scan *cs)
{
	return (struct bz_scan *)cs;
}

static void bz_pairs_init(uint8_t *bm)
{
	static const uint64_t magics[2] = {BZ_MAGIC_BLOCK, BZ_MAGIC_EOS};

	for (int m = 0; m < 2; m++) {
		for (unsigned sh = 0; sh < 8; sh++) {
			/* the 8 bytes from the one holding the magic's first bit */
			uint64_t w = magics[m] << (16 - sh);
			/* whole bytes: 0..5 at shift 0, else 1..5; pairs start at 0..4 */
			for (unsigned k = sh ? 1 : 0; k <= 4; k++) {
				uint8_t pr[2] = {(uint8_t)(w >> (56 - 8 * k)),
						 (uint8_t)(w >> (48 - 8 * k))};
				uint16_t v;
				memcpy(&v, pr, 2);
				bm[v >> 3] |= (uint8_t)(1u << (v & 7));
			}
		}
	}
}

static uint8_t *bz_win_at(struct bz_scan *s, uint64_t byte)
{
	return s->win + (byte - s->off);
}

/* Decodes a dispatched candidate with b (NULL: libbz2). */
static void bz_job_run(struct bz_item *it, struct bzb *b)
{
	it->rc = bz_decode_raw(b, it->in + 4, it->shift, it->nbits, it->level, &it->out, &it->crc);
	free(it->in);
	it->in = NULL;
}

static void *bz_worker(void *arg)
{
	struct bz_scan *s = arg;
	struct bzb *b = s->lib ? NULL : bzb_new(); /* out of memory: libbz2 */

	pthread_mutex_lock(&s->lock);
	for (;;) {
		while (!s->stop && !s->qhead)
			pthread_cond_wait(&s->work_cv, &s->lock);
		if (s->stop)
			break;
		struct bz_item *it = s->qhead;
		s->qhead = it->qnext;
		if (!s->qhead)
			s->qtail = NULL;
		it->state = JOB_RUNNING;
		pthread_mutex_unlock(&s->lock);
		bz_job_run(it, b);
		pthread_mutex_lock(&s->lock);
		it->state = JOB_DONE;
		pthread_cond_broadcast(&s->done_cv);
	}
	pthread_mutex_unlock(&s->lock);
	bzb_free(b);
	return NULL;
}

/* Hands a closed candidate block to the workers with a copy of its bytes. */
static void bz_dispatch(struct bz_scan *s, struct bz_item *it)
{
	uint64_t first = it->bit / 8;
	size_t nraw = (size_t)((it->end + 7) / 8 - first);

	it->dispatched = true;
	s->inflight++;
	it->shift = (unsigned)(it->bit % 8);
	it->nbits = it->end - it->bit;
	it->level = s->flevel;
	it->in = malloc(4 + nraw + BZ_SLACK);
	if (!it->in) {
		it->rc = -ENOMEM;
		it->state = JOB_DONE;
		return;
	}
	memcpy(it->in + 4, bz_win_at(s, first), nraw);
	memset(it->in + 4 + nraw, 0, BZ_SLACK);
	pthread_mutex_lock(&s->lock);
	it->state = JOB_QUEUED;
	it->qnext = NULL;
	if (s->qtail)
		s->qtail->qnext = it;
	else
		s->qhead = it;
	s->qtail = it;
	pthread_cond_signal(&s->work_cv);
	pthread_mutex_unlock(&s->lock);
}

static void bz_close_item(struct bz_scan *s, struct bz_item *it, uint64_t end)
{
	it->closed = true;
	if (end - it->bit > bz_max_block_bits(9)) {
		it->overlong = true;
		return;
	}
	it->end = end;
	if (!it->eos && s->threads > 1)
		bz_dispatch(s, it);
}

/* Records a magic found at bit (in increasing order). */
static int bz_add_item(struct bz_scan *s, uint64_t bit, bool eos)
{
	struct bz_item *it = calloc(1, sizeof(*it));

	if (!it)
		return -ENOMEM;
	it->bit = bit;
	it->eos = eos;
	s->nitems++;
	/* a block magic right after "BZh" + level: a stream header, for speculative decodes */
	if (!eos && bit % 8 == 0 && bit / 8 >= s->off + 4) {
		const uint8_t *h = bz_win_at(s, bit / 8 - 4);
		if (memcmp(h, "BZh", 3) == 0 && h[3] >= '1' && h[3] <= '9')
			s->flevel = h[3] - '0';
	}
	if (s->tail) {
		bz_close_item(s, s->tail, bit);
		s->tail->next = it;
	} else {
		s->head = it;
	}
	s->tail = it;
	return 0;
}

/* Exact check of the magics starting in byte b. */
static int bz_check_at(struct bz_scan *s, uint64_t b)
{
	uint64_t w = be64(bz_win_at(s, b));

	for (unsigned sh = 0; sh < 8; sh++) {
		uint64_t v = (w << sh) >> 16;
		if (v != BZ_MAGIC_BLOCK && v != BZ_MAGIC_EOS)
			continue;
		uint64_t bit = b * 8 + sh;
		if (bit + 48 > (s->off + s->len) * 8) /* matched the zero padding at the end */
			return 0;
		return bz_add_item(s, bit, v == BZ_MAGIC_EOS); /* magics are >= 45 bits apart */
	}
	return 0;
}

/* Looks up the pairs at even offsets below limit, checking exactly around each hit; stops
 * early once BZ_STEP_ITEMS magics were found, so that a file full of magics is paced like any
 * other. */
static int bz_search(struct bz_scan *s, uint64_t limit)
{
	const uint8_t *bm = s->pairs;
	uint64_t i = s->srch, nitems = s->nitems;
	int rc = 0;

	for (; i < limit; i += 2) {
		uint16_t v;
		memcpy(&v, bz_win_at(s, i), 2);
		if (!(bm[v >> 3] & (1u << (v & 7))))
			continue;
		/* a pair at i is whole bytes 0..4 of a magic starting in bytes i-4..i */
		uint64_t b = i >= 4 ? i - 4 : 0;
		if (b < s->nub)
			b = s->nub;
		for (; b <= i && !rc; b++)
			rc = bz_check_at(s, b);
		if (rc)
			break;
		s->nub = i + 1;
		if (s->nitems - nitems >= BZ_STEP_ITEMS) {
			i += 2;
			break;
		}
	}
	s->srch = i;
	return rc;
}

/* Appends the next piece of the file to the window, first dropping what nobody needs any
 * more: bytes before the first item, the walk's position and the search. */
static int bz_read_more(struct bz_scan *s)
{
	uint64_t keep;
	ssize_t n;

	keep = s->pos / 8;
	if (s->head && s->head->bit / 8 < keep)
		keep = s->head->bit / 8;
	if (s->srch < 8)
		keep = 0;
	else if (s->srch - 8 < keep)
		keep = s->srch - 8;
	if (keep > s->off && keep - s->off >= s->len / 2) {
		size_t drop = (size_t)(keep - s->off);
		memmove(s->win, s->win + drop, s->len - drop);
		s->off += drop;
		s->len -= drop;
	}
	if (s->cap < s->len + BZ_READ + BZ_PAD) {
		size_t cap = s->len + BZ_READ + BZ_PAD;
		cap += cap / 2;
		uint8_t *w = realloc(s->win, cap);
		if (!w)
			return -ENOMEM;
		s->win = w;
		s->cap = cap;
	}
	n = src_pread(s->in, s->win + s->len, BZ_READ, s->off + s->len);
	if (n < 0) {
		tfs_log(TFS_LOG_ERR, "bzip2: read error at byte %" PRIu64 ": %s", s->off + s->len,
			strerror((int)-n));
		return (int)n;
	}
	s->len += (size_t)n;
	memset(s->win + s->len, 0, BZ_PAD);
	s->eof = (size_t)n < BZ_READ;
	return 0;
}

/* Advances the search: over the unsearched part of the window, or else over the next piece of
 * the file.  0 or -errno (a read error, logged, or -ENOMEM; then fdone).  Does nothing once
 * fdone; when it sets fdone, the last item is closed. */
static int bz_finder_step(struct bz_scan *s)
{
	uint64_t end, limit;
	int rc;

	if (s->fdone)
		return 0;
	for (int pass = 0;; pass++) {
		end = s->off + s->len;
		/* a magic starting in byte b is checked once bytes b..b+7 are in */
		limit = s->eof ? end : end >= 7 ? end - 7 : 0;
		if (s->srch < limit || s->eof || pass)
			break;
		rc = bz_read_more(s);
		if (rc) {
			s->fdone = true;
			return rc;
		}
	}
	rc = bz_search(s, limit);
	if (rc) {
		s->fdone = true;
		return rc;
	}
	if (s->eof && s->srch >= limit) {
		s->fdone = true;
		if (s->tail && !s->tail->closed) {
			s->tail->closed = true;
			s->tail->at_eof = true;
			s->tail->end = end * 8;
		}
	} else if (s->tail && !s->tail->closed && s->srch >= 8 &&
		   (s->srch - 8) * 8 > s->tail->bit + bz_max_block_bits(9)) {
		/* all magics before srch - 8 are found: nothing within the bound */
		s->fdone = true;
		s->tail->closed = true;
		s->tail->overlong = true;
	}
	return 0;
}

/* Makes the window hold the file up to byte upto, unless the file ends first. */
static int bz_need_bytes(struct bz_scan *s, uint64_t upto)
{
	while (s->off + s->len < upto && !s->fdone) {
		int rc = bz_finder_step(s);
		if (rc)
			return rc;
	}
	return 0;
}

static void bz_item_free(struct bz_item *it)
{
	free(it->in);
	bz_out_free(&it->out);
	free(it);
}

/* Removes the first item; waits for its decode if a worker is running it. */
static void bz_item_drop(struct bz_scan *s)
{
	struct bz_item *it = s->head;

	s->head = it->next;
	if (!s->head)
		s->tail = NULL;
	if (it->dispatched) {
		s->inflight--;
		pthread_mutex_lock(&s->lock);
		if (it->state == JOB_QUEUED) {
			struct bz_item **pp = &s->qhead, *prev = NULL;
			while (*pp != it) {
				prev = *pp;
				pp = &(*pp)->qnext;
			}
			*pp = it->qnext;
			if (s->qtail == it)
				s->qtail = prev;
		}
		while (it->state == JOB_RUNNING)
			pthread_cond_wait(&s->done_cv, &s->lock);
		pthread_mutex_unlock(&s->lock);
	}
	bz_item_free(it);
}

/* Keeps the workers busy: finds candidates until maxq are in flight. */
static int bz_fill(struct bz_scan *s)
{
	while (s->threads > 1 && s->inflight < s->maxq && !s->fdone) {
		int rc = bz_finder_step(s);
		if (rc)
			return rc;
	}
	return 0;
}

/* Decodes [start, end) of the file (in the window) as a block of the current stream. */
static int bz_decode_inline(struct bz_scan *s, uint64_t start, uint64_t end, struct bz_out *out,
			 uint32_t *crc)
{
	if (!s->lib && !s->bzb)
		s->bzb = bzb_new(); /* out of memory: libbz2 */
	return bz_decode_raw(s->bzb, bz_win_at(s, start / 8), (unsigned)(start % 8), end - start,
			     s->level, out, crc);
}

/* The decode of the candidate it, made by a worker or now. */
static int bz_item_result(struct bz_scan *s, struct bz_item *it)
{
	int rc;

	if (!it->dispatched)
		return bz_decode_inline(s, it->bit, it->end, &it->out, &it->crc);
	pthread_mutex_lock(&s->lock);
	while (it->state != JOB_DONE) {
		if (s->inflight < s->maxq && !s->fdone) {
			pthread_mutex_unlock(&s->lock);
			rc = bz_finder_step(s);
			if (rc)
				return rc;
			pthread_mutex_lock(&s->lock);
			continue;
		}
		pthread_cond_wait(&s->done_cv, &s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	if (it->level != s->level) { /* decoded with a mispredicted level: redo */
		bz_out_free(&it->out);
		return bz_decode_inline(s, it->bit, it->end, &it->out, &it->crc);
	}
	return it->rc;
}

/* The block at the head item is good and ends at end: emits its checkpoint and makes its bytes
 * the next to deliver.  Takes out. */
static int bz_accept(struct bz_scan *s, uint64_t end, struct bz_out *out, uint32_t crc)
{
	struct bz_item *it = s->head;
	struct codec_ckpt ck = {
	    .uoff = s->uoff,
	    .ulen = out->len,
	    .coff = it->bit / 8,
	    .bits = (uint32_t)(it->bit % 8),
	    .clen = end - it->bit,
	    .extra = s->level,
	    .flags = 0,
	};
	int rc;

	if (s->sink.checkpoint) {
		rc = s->sink.checkpoint(s->sink.opaque, &ck, NULL, 0);
		if (rc) {
			bz_out_free(out);
			return rc < 0 ? rc : -EIO;
		}
	}
	s->combined = (s->combined << 1 | s->combined >> 31) ^ crc;
	s->cur = *out;
	memset(out, 0, sizeof(*out));
	s->rpos = 0;
	s->uoff += s->cur.len;
	s->pos = end;
	bz_item_drop(s);
	return 0;
}

/* Feeds the block starting at bit start to z, from its byte *fed up to byte upto (bytes of the
 * block's bits realigned to start at bit 0).  1 as soon as output appears (the decoder has
 * read the block's last code), 0 if none yet, -EIO if the data do not decode, -ENOMEM. */
static int bz_feed(struct bz_scan *s, bz_stream *z, uint64_t start, uint64_t *fed, uint64_t upto)
{
	uint8_t buf[4096], out[4096];
	unsigned sh = (unsigned)(start % 8);

	while (*fed < upto) {
		size_t n = upto - *fed < sizeof(buf) ? (size_t)(upto - *fed) : sizeof(buf);
		const uint8_t *p = bz_win_at(s, start / 8 + *fed);
		for (size_t i = 0; i < n; i++)
			buf[i] = sh ? (uint8_t)(p[i] << sh | p[i + 1] >> (8 - sh)) : p[i];
		z->next_in = (char *)buf;
		z->avail_in = (unsigned)n;
		z->next_out = (char *)out;
		z->avail_out = sizeof(out);
		int rc = BZ2_bzDecompress(z);
		if (z->avail_out < sizeof(out))
			return 1;
		if (rc == BZ_STREAM_END) /* it ended, and no output: not a block */
			return -EIO;
		if (rc != BZ_OK)
			return liberr_bz2(rc);
		if (z->avail_in)
			return -EIO; /* no progress: cannot happen with libbz2 */
		*fed += n;
	}
	return 0;
}

/* Tries [start, end) as the head block; 1 if accepted, 0 if it does not decode, -errno. */
static int bz_try_end(struct bz_scan *s, uint64_t start, uint64_t end)
{
	struct bz_out out = {0};
	uint32_t crc;
	int rc = bz_decode_inline(s, start, end, &out, &crc);

	if (rc == -EIO)
		return 0;
	if (rc)
		return rc;
	rc = bz_accept(s, end, &out, crc);
	return rc ? rc : 1;
}

/* The candidate at the head did not decode: find where its block really ends (see the
 * opening comment), or report the damage. */
static int bz_resolve(struct bz_scan *s)
{
	struct bz_item *it = s->head, *c = it;
	uint64_t start = it->bit, first_end = it->end, fed = 0;
	uint64_t maxb = bz_max_block_bits(s->level);
	char hdr[4] = {'B', 'Z', 'h', (char)('0' + s->level)};
	char sink[64];
	bz_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	rc = BZ2_bzDecompressInit(&z, 0, 0);
	if (rc != BZ_OK)
		return liberr_bz2(rc);
	z.next_in = hdr;
	z.avail_in = 4;
	z.next_out = sink;
	z.avail_out = sizeof(sink);
	rc = BZ2_bzDecompress(&z);
	if (rc != BZ_OK) {
		rc = liberr_bz2(rc);
		goto out;
	}
	for (;;) {
		while (!c->closed) {
			rc = bz_finder_step(s);
			if (rc)
				goto out;
		}
		if (c->at_eof) {
			bz_log_block("truncated file: no end-of-stream marker after the block", start);
			rc = -EIO;
			goto out;
		}
		if (c->overlong || c->end - start > maxb) {
			bz_log_block("corrupt block (no end within the largest block size)", start);
			rc = -EIO;
			goto out;
		}
		/* through the byte holding the candidate's first bit */
		rc = bz_feed(s, &z, start, &fed, (c->end - start + 7) / 8);
		if (rc < 0)
			break;
		if (rc > 0) { /* the block ends at c->end, and nowhere else */
			rc = c->end == first_end ? 0 : bz_try_end(s, start, c->end);
			if (rc == 0)
				rc = -EIO;
			break;
		}
		c = c->next; /* no output yet: the block goes on */
	}
	if (rc == -EIO)
		bz_log_block("corrupt block (data error or CRC mismatch)", start);
	if (rc > 0)
		rc = 0;
out:
	BZ2_bzDecompressEnd(&z);
	return rc;
}

static int bz_take_block(struct bz_scan *s)
{
	struct bz_item *it = s->head;
	int rc;

	while (!it->closed) {
		rc = bz_finder_step(s);
		if (rc)
			return rc;
	}
	if (it->at_eof) {
		bz_log_block("truncated file: it ends inside the block", it->bit);
		return -EIO;
	}
	if (it->overlong || it->end - it->bit > bz_max_block_bits(s->level)) {
		bz_log_block("corrupt block (no end within the largest block size)", it->bit);
		return -EIO;
	}
	rc = bz_fill(s);
	if (rc)
		return rc;
	rc = bz_item_result(s, it);
	if (rc == 0) {
		struct bz_out out = it->out;
		memset(&it->out, 0, sizeof(it->out));
		return bz_accept(s, it->end, &out, it->crc);
	}
	if (rc != -EIO)
		return rc;
	return bz_resolve(s);
}

static int bz_take_eos(struct bz_scan *s)
{
	uint64_t m = s->head->bit, p = (m + 80 + 7) / 8, have;
	uint32_t stored;
	int rc;

	rc = bz_need_bytes(s, p + 4);
	if (rc)
		return rc;
	have = s->off + s->len;
	if (have < p) {
		bz_log_block("truncated file: it ends inside the end-of-stream marker", m);
		return -EIO;
	}
	stored = (uint32_t)bz_get_bits(bz_win_at(s, m / 8), m % 8 + 48, 32);
	if (stored != s->combined) {
		tfs_log(TFS_LOG_ERR,
			"bzip2: stream CRC mismatch in the stream at byte %" PRIu64
			" (stored %08" PRIx32 ", computed %08" PRIx32
			", end marker at byte %" PRIu64 ")",
			s->cstart, stored, s->combined, m / 8);
		return -EIO;
	}
	if (have >= p + 4) {
		const uint8_t *h = bz_win_at(s, p);
		if (memcmp(h, "BZh", 3) == 0 && h[3] >= '1' && h[3] <= '9') {
			s->level = h[3] - '0';
			s->combined = 0;
			s->cstart = p;
			s->pos = (p + 4) * 8;
			bz_item_drop(s);
			return 0;
		}
	}
	if (have > p || !s->eof) {
		char note[160];

		trailing_note(note, sizeof(note), "bzip2", s->in, p);
		tfs_log(TFS_LOG_NOTICE, "%s", note);
	}
	s->pos = p * 8;
	bz_item_drop(s);
	s->done = true;
	return 0;
}

static int bz_take_header(struct bz_scan *s)
{
	const uint8_t *h;
	int rc = bz_need_bytes(s, 4);

	if (rc)
		return rc;
	if (s->len == 0) {
		tfs_log(TFS_LOG_ERR, "bzip2: empty file");
		return -EIO;
	}
	h = bz_win_at(s, 0);
	if (s->len < 4 || memcmp(h, "BZh", 3) != 0 || h[3] < '1' || h[3] > '9') {
		tfs_log(TFS_LOG_ERR, "bzip2: no bzip2 stream header at byte 0");
		return -EIO;
	}
	s->level = h[3] - '0';
	s->pos = 32;
	s->started = true;
	return 0;
}

/* Processes the next magic: accepts a block into s->cur, or ends a stream. */
static int bz_advance(struct bz_scan *s)
{
	int rc;

	if (!s->started) {
		rc = bz_take_header(s);
		if (rc)
			return rc;
	}
	for (;;) {
		while (s->head && s->head->bit < s->pos)
			bz_item_drop(s); /* chance magics inside a block or a stream trailer */
		if (s->head || s->fdone)
			break;
		rc = bz_finder_step(s);
		if (rc)
			return rc;
	}
	if (!s->head || s->head->bit != s->pos) {
		if (!s->head && s->eof && s->off + s->len <= s->pos / 8 + 6)
			bz_log_block("truncated file: no block or end-of-stream marker", s->pos);
		else
			bz_log_block("corrupt stream: no block or end-of-stream marker", s->pos);
		return -EIO;
	}
	return s->head->eos ? bz_take_eos(s) : bz_take_block(s);
}

static size_t bz_deliver(struct bz_scan *s, uint8_t *buf, size_t len)
{
	size_t n = 0;

	while (n < len && s->cur.head) {
		struct bz_chunk *c = s->cur.head;
		size_t k = c->len - s->rpos;
		if (k > len - n)
			k = len - n;
		memcpy(buf + n, c->data + s->rpos, k);
		n += k;
		s->rpos += k;
		if (s->rpos == c->len) {
			s->cur.head = c->next;
			if (!s->cur.head)
				s->cur.tail = NULL;
			free(c);
			s->rpos = 0;
		}
	}
	return n;
}

void bz_scan_free(struct codec_scan *cs)
{
	struct bz_scan *s = bz_to_scan(cs);

	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->work_cv);
	pthread_mutex_unlock(&s->lock);
	for (unsigned i = 0; i < s->nthr; i++)
		pool_join(s->thr[i]);
	while (s->head) {
		struct bz_item *it = s->head;
		s->head = it->next;
		bz_item_free(it);
	}
	bz_out_free(&s->cur);
	bzb_free(s->bzb);
	free(s->thr);
	free(s->win);
	pthread_cond_destroy(&s->done_cv);
	pthread_cond_destroy(&s->work_cv);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

int bz_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		struct codec_scan **out)
{
	struct bz_scan *s;
	unsigned threads = opts && opts->threads ? opts->threads : 1;

	*out = NULL;
	if (threads > BZ_MAX_THREADS)
		threads = BZ_MAX_THREADS;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->in = in;
	if (sink)
		s->sink = *sink;
	s->flevel = 9;
	s->lib = bzb_use_libbz2();
	bz_pairs_init(s->pairs);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->work_cv, NULL);
	pthread_cond_init(&s->done_cv, NULL);
	if (threads > 1) {
		s->thr = calloc(threads, sizeof(*s->thr));
		if (!s->thr) {
			bz_scan_free((struct codec_scan *)s);
			return -ENOMEM;
		}
		int nice = pl_nice();

		for (unsigned i = 0; i < threads; i++) {
			if (pool_start(bz_worker, s, "tarseek-bzip2", nice, &s->thr[i]) != 0)
				break;
			s->nthr++;
		}
	}
	/* with fewer than 2 workers started, decode in the calling thread */
	s->threads = s->nthr > 1 ? s->nthr : 1;
	if (s->nthr == 1) {
		pthread_mutex_lock(&s->lock);
		s->stop = true;
		pthread_cond_broadcast(&s->work_cv);
		pthread_mutex_unlock(&s->lock);
		pool_join(s->thr[0]);
		s->nthr = 0;
	}
	s->maxq = 2 * s->threads;
	*out = (struct codec_scan *)s;
	return 0;
}

ssize_t bz_scan_read(struct codec_scan *cs, void *buf, size_t len)
{
	struct bz_scan *s = bz_to_scan(cs);

	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	for (;;) {
		if (s->err)
			return s->err;
		if (len == 0)
			return 0;
		size_t n = bz_deliver(s, buf, len);
		if (n)
			return (ssize_t)n;
		if (s->done)
			return 0;
		int rc = bz_advance(s);
		if (rc) {
			s->err = rc < 0 ? rc : -EIO;
			return s->err;
		}
	}
}

uint64_t bz_scan_verified(struct codec_scan *cs)
{
	return bz_to_scan(cs)->uoff;
}
