/* lzip codec (.lz, liblzma 5.4's lzip decoder): checkpoints are groups of the file's members,
 * found from the member trailers without decoding.
 *
 * An .lz file is one or more members, each "LZIP", a version byte (1), a coded dictionary
 * size, an LZMA1 stream (lc 3, lp 0, pb 2, always with its end marker) and a 20-byte trailer:
 * the CRC-32 of the member's data, the data size (8 bytes) and the member size (8 bytes, header
 * and trailer included), all little-endian.  Members are independent, so every member start is
 * a perfect checkpoint; lzip writes one member per file by default, plzip and `lzip -b` many
 * (plzip: ~16 MiB of data each), tarlz one per tar member or group of members.
 *
 * The member list comes from the end of the file: the last 20 bytes are the last member's
 * trailer, whose member size gives its start, before which lies the previous member's trailer,
 * and so on to offset 0 -- preads of 26 bytes per member, no decoding, and every member's data
 * size with it.  The walk must reach offset 0 exactly, through headers that say "LZIP" and
 * version 1, and sizes that add up; otherwise (trailing data after the last member, a damaged
 * trailer, a truncated file, a source of unknown size) the scan decodes member after member
 * from the start instead ("walk mode"), with one worker, which finds the same members and
 * recovers what is readable.
 *
 * Consecutive members are grouped into checkpoints as lzop's blocks are (lzo.c): a group ends
 * after the member that brings it to LZIP_GROUP (1 MiB) of data, or after LZIP_GROUP_MEMBERS
 * members.  The rule needs only the data sizes, so the scan (in the trailer walk's mode) and
 * index_blocks cut the same groups.  In walk mode every member is a checkpoint of its own.
 *
 * The scan decodes the groups on opts->threads workers through the pipeline (pipeline.h): each
 * worker runs liblzma's lzip decoder member by member, which checks every member's CRC-32, data
 * size and member size against its trailer.  A member that fails is -EIO, logged with its
 * number and offset; the bytes it decoded before are trusted only when the file merely ends
 * inside it (lzip -d gives them too).  After the last member, zeros are ignored silently and
 * other bytes with a notice (trailing.h); "LZIP" followed by a bad header is damage.
 *
 * index_blocks emits the trailer walk's groups, with ulen set, without decoding: for
 * `tarseek vm.img.lz`.  It is always offered, because decoders hold back the last byte of
 * every member until liblzma has checked its trailer: no byte of a member that fails its check
 * is ever returned.  (Decoders check, as the scan does, that the members of their group end
 * where the checkpoint says.)
 *
 * A decoder starts at a group's first member and continues member after member past its
 * chunk; it returns 0 at the end of the members.  It holds one LZMA dictionary (the member's,
 * up to 512 MiB for lzip -9 files of large members; 8 MiB for the default level 6), 64 KiB of
 * input and 64 KiB of output.
 *
 * Checkpoint fields for lzip:
 *   uoff   decompressed offset of the group's first member;
 *   ulen   decompressed bytes of the group;
 *   coff   compressed offset of the group's first member;
 *   clen   compressed bytes of the group (its members' sizes added);
 *   extra  the number of the group's first member in the file, 1-based (for messages);
 *   bits   the number of members in the group (1..LZIP_GROUP_MEMBERS);
 *   flags  0.
 * No aux blob.
 */
#include "codecs/codec.h"

#include <errno.h>
#include <inttypes.h>
#include <lzma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"
#include "codecs/liberr.h"
#include "codecs/pipeline.h"
#include "codecs/trailing.h"

#define LZIP_HDR 6
#define LZIP_TRAILER 20
#define LZIP_MEMBER_MIN (LZIP_HDR + 5 + LZIP_TRAILER) /* an empty member is 36 bytes */
#define LZIP_DICT_MAX ((uint32_t)512 << 20)
#define LZIP_GROUP ((uint64_t)1 << 20)
#define LZIP_GROUP_MEMBERS 1024u
#define LZIP_INBUF ((size_t)64 << 10)
#define LZIP_OUTBUF ((size_t)64 << 10)
#define LZIP_MAX_THREADS 64
#define LZIP_BUDGET ((size_t)256 << 20) /* decoded bytes a scan queues, all jobs */
#define LZIP_JOB_CAP_MIN ((size_t)4 << 20)
#define LZIP_JOB_CAP_MAX ((size_t)32 << 20)
#define LZIP_MSG 320
#define LZIP_DATA_MAX ((uint64_t)1 << 56) /* data of a file, all members (64 PiB) */

static bool lzip_probe(const uint8_t *head, size_t len)
{
	return len >= 5 && memcmp(head, "LZIP", 4) == 0 && head[4] == 1;
}

/* The dictionary size a member header codes in its sixth byte (lzip's format: 2^n minus
 * 0..7 sixteenths of it), or 0 if out of lzip's range (4 KiB .. 512 MiB). */
static uint32_t lzip_dict_size(uint8_t b)
{
	unsigned n = b & 0x1f;
	uint32_t size;

	if (n < 12 || n > 29)
		return 0;
	size = (uint32_t)1 << n;
	size -= (size / 16) * (b >> 5);
	return size >= (4u << 10) && size <= LZIP_DICT_MAX ? size : 0;
}

/* ---- The member decoder: members one after another, from one offset -------------------- */

struct lzm {
	struct src *in;
	lzma_stream zs;
	bool zinit;
	uint64_t pos;	   /* next compressed byte to read into inbuf */
	uint64_t mstart;   /* compressed offset of the current member */
	uint64_t number;   /* the current member's number in the file, 1-based */
	uint64_t left;	   /* members still to decode (UINT64_MAX: all there are) */
	uint64_t end;	   /* where the group must end (UINT64_MAX: not checked) */
	bool in_member;	   /* a member decoder is running */
	bool verified;	   /* the current member's trailer has passed */
	bool done;	   /* no more members */
	bool truncated;	   /* the error: the file ended inside a member */
	int err;
	uint64_t dict;	   /* the largest dictionary seen, for dec_memory */
	uint8_t *obuf;	   /* decoded bytes not yet returned: obuf[ohead, ohead + olen) */
	size_t ohead, olen;
	uint8_t *inbuf;
	char msg[LZIP_MSG];
};

__attribute__((format(printf, 3, 4))) static int lzm_fail(struct lzm *z, int err, const char *fmt,
							  ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(z->msg, sizeof(z->msg), fmt, ap);
	va_end(ap);
	z->err = err;
	return err;
}

static void lzm_fini(struct lzm *z)
{
	if (z->zinit)
		lzma_end(&z->zs);
	z->zinit = false;
	free(z->obuf);
	free(z->inbuf);
	z->obuf = z->inbuf = NULL;
}

static int lzm_init(struct lzm *z, struct src *in)
{
	memset(z, 0, sizeof(*z));
	z->in = in;
	z->obuf = malloc(LZIP_OUTBUF);
	z->inbuf = malloc(LZIP_INBUF);
	return z->obuf && z->inbuf ? 0 : -ENOMEM;
}

/* Positions z at the member at coff (number nr), to decode up to `members` members that must
 * end at end (UINT64_MAX: as many as there are, unchecked). */
static void lzm_start(struct lzm *z, uint64_t coff, uint64_t nr, uint64_t members, uint64_t end)
{
	if (z->zinit)
		lzma_end(&z->zs);
	z->zinit = false;
	z->zs = (lzma_stream)LZMA_STREAM_INIT;
	z->pos = z->mstart = coff;
	z->number = nr;
	z->left = members;
	z->end = end;
	z->in_member = z->verified = z->done = z->truncated = false;
	z->err = 0;
	z->ohead = z->olen = 0;
	z->msg[0] = '\0';
}

/* Starts the member at z->mstart: 1, 0 if no member starts there (the end of the members),
 * or -errno (a bad header). */
static int lzm_member(struct lzm *z)
{
	uint8_t h[LZIP_HDR];
	ssize_t n = src_pread(z->in, h, sizeof(h), z->mstart);
	uint32_t dict;

	if (n < 0)
		return lzm_fail(z, (int)n, "lzip: read error at offset %" PRIu64, z->mstart);
	if (n < 4 || memcmp(h, "LZIP", 4) != 0)
		return 0;
	dict = n == LZIP_HDR && h[4] == 1 ? lzip_dict_size(h[5]) : 0;
	if (!dict)
		return lzm_fail(z, -EIO,
				"lzip: member %" PRIu64 " at offset %" PRIu64 ": %s", z->number,
				z->mstart,
				n < LZIP_HDR ? "the file ends inside its header (truncated)"
				: h[4] != 1  ? "unknown version"
					     : "invalid dictionary size");
	if (dict > z->dict)
		z->dict = dict;
	if (z->zinit)
		lzma_end(&z->zs);
	z->zs = (lzma_stream)LZMA_STREAM_INIT;
	lzma_ret r = lzma_lzip_decoder(&z->zs, UINT64_MAX, 0);
	if (r != LZMA_OK)
		return lzm_fail(z, liberr_lzma(r) ? liberr_lzma(r) : -ENOMEM,
				"lzip: cannot start a decoder");
	z->zinit = true;
	z->pos = z->mstart;
	z->in_member = true;
	z->verified = false;
	return 1;
}

/* Decodes more of the current member into obuf (after what is pending).  0 or -errno. */
static int lzm_decode(struct lzm *z)
{
	if (z->ohead) {
		memmove(z->obuf, z->obuf + z->ohead, z->olen);
		z->ohead = 0;
	}
	z->zs.next_out = z->obuf + z->olen;
	z->zs.avail_out = LZIP_OUTBUF - z->olen;
	while (z->zs.avail_out && !z->verified) {
		if (!z->zs.avail_in) {
			ssize_t n = src_pread(z->in, z->inbuf, LZIP_INBUF, z->pos);
			if (n < 0)
				return lzm_fail(z, (int)n, "lzip: read error at offset %" PRIu64,
						z->pos);
			z->pos += (uint64_t)n;
			z->zs.next_in = z->inbuf;
			z->zs.avail_in = (size_t)n;
		}
		lzma_action act = z->zs.avail_in ? LZMA_RUN : LZMA_FINISH;
		size_t before = z->zs.avail_out;
		lzma_ret r = lzma_code(&z->zs, act);
		if (r == LZMA_STREAM_END) {
			z->verified = true;
		} else if (r == LZMA_BUF_ERROR || (r == LZMA_OK && act == LZMA_FINISH &&
						   z->zs.avail_out == before)) {
			z->truncated = true;
			return lzm_fail(z, -EIO,
					"lzip: the file ends inside member %" PRIu64
					" at offset %" PRIu64 " (truncated)",
					z->number, z->mstart);
		} else if (r != LZMA_OK) {
			return lzm_fail(z, liberr_lzma(r) ? liberr_lzma(r) : -EIO,
					"lzip: member %" PRIu64 " at offset %" PRIu64
					" is corrupt (%s, near offset %" PRIu64 ")",
					z->number, z->mstart,
					r == LZMA_DATA_ERROR ? "bad data, or a trailer that does not "
							       "match its CRC-32 or sizes"
							     : "unsupported",
					z->pos - z->zs.avail_in);
		}
		if (!z->zs.avail_out)
			break;
		if (act == LZMA_FINISH && !z->verified)
			break;
	}
	z->olen = LZIP_OUTBUF - z->zs.avail_out;
	return 0;
}

/* Next decoded bytes: > 0, 0 at the end of the members (or of the group), or -errno.  The last
 * byte of a member is returned only once its trailer has passed; after an error the bytes
 * decoded before it go out first (the held-back byte too if the file merely ended). */
static ssize_t lzm_read(struct lzm *z, uint8_t *buf, size_t len)
{
	for (;;) {
		size_t keep = z->in_member && !z->verified && !(z->err && z->truncated) ? 1 : 0;

		if (z->olen > keep) {
			size_t n = z->olen - keep < len ? z->olen - keep : len;
			memcpy(buf, z->obuf + z->ohead, n);
			z->ohead += n;
			z->olen -= n;
			return (ssize_t)n;
		}
		if (z->err)
			return z->err;
		if (z->done)
			return 0;
		if (z->in_member && z->verified) { /* the member ended: on to the next */
			z->mstart += z->zs.total_in;
			z->in_member = false;
			z->number++;
			if (z->left != UINT64_MAX && --z->left == 0) {
				z->done = true;
				if (z->end != UINT64_MAX && z->mstart != z->end)
					return lzm_fail(z, -EIO,
							"lzip: the members before offset %" PRIu64
							" do not end where the index says (%" PRIu64
							"): the file has changed?",
							z->mstart, z->end);
				return 0;
			}
		}
		if (!z->in_member) {
			int r = lzm_member(z);
			if (r < 0)
				return r;
			if (r == 0) {
				z->done = true;
				if (z->left != UINT64_MAX)
					return lzm_fail(z, -EIO,
							"lzip: no member %" PRIu64 " at offset %" PRIu64
							" where the index has one",
							z->number, z->mstart);
				return 0;
			}
		}
		(void)lzm_decode(z); /* an error is returned once the bytes before it are */
	}
}

/* ---- The member list from the trailers ---------------------------------------------------- */

struct lzip_member {
	uint64_t coff, csize, dsize;
};

/* Walks the trailers back from the end.  0 with the members in order, -ENOENT if the file is
 * not a clean sequence of members (the caller decodes instead), or -errno. */
static int lzip_list(struct src *in, struct lzip_member **out, uint64_t *count)
{
	uint64_t pos = src_size(in), n = 0, cap = 0, total = 0;
	struct lzip_member *m = NULL;
	int err = -ENOENT;

	*out = NULL;
	*count = 0;
	if (pos == SRC_SIZE_UNKNOWN || pos < LZIP_MEMBER_MIN)
		return -ENOENT;
	while (pos > 0) {
		uint8_t t[LZIP_TRAILER], h[LZIP_HDR];
		uint64_t msize, dsize;

		if (pos < LZIP_MEMBER_MIN)
			goto fail;
		err = src_pread_full(in, t, sizeof(t), pos - LZIP_TRAILER);
		if (err)
			goto fail;
		dsize = le64(t + 4);
		msize = le64(t + 12);
		err = -ENOENT;
		total += dsize;
		if (msize < LZIP_MEMBER_MIN || msize > pos || dsize > LZIP_DATA_MAX ||
		    total > LZIP_DATA_MAX)
			goto fail;
		err = src_pread_full(in, h, sizeof(h), pos - msize);
		if (err)
			goto fail;
		err = -ENOENT;
		if (!lzip_probe(h, sizeof(h)) || !lzip_dict_size(h[5]))
			goto fail;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct lzip_member *p = realloc(m, cap * sizeof(*m));
			if (!p) {
				err = -ENOMEM;
				goto fail;
			}
			m = p;
		}
		pos -= msize;
		m[n++] = (struct lzip_member){pos, msize, dsize};
	}
	for (uint64_t i = 0; i < n / 2; i++) { /* into file order */
		struct lzip_member x = m[i];
		m[i] = m[n - 1 - i];
		m[n - 1 - i] = x;
	}
	*out = m;
	*count = n;
	return 0;
fail:
	free(m);
	return err;
}

/* The group starting at member i: its checkpoint, and the index of the next group. */
static uint64_t lzip_group(const struct lzip_member *m, uint64_t n, uint64_t i, uint64_t uoff,
			   struct codec_ckpt *ck)
{
	uint64_t j = i, data = 0, comp = 0;

	while (j < n && j - i < LZIP_GROUP_MEMBERS && data < LZIP_GROUP) {
		data += m[j].dsize;
		comp += m[j].csize;
		j++;
	}
	memset(ck, 0, sizeof(*ck));
	ck->uoff = uoff;
	ck->ulen = data;
	ck->coff = m[i].coff;
	ck->clen = comp;
	ck->extra = i + 1;
	ck->bits = (uint32_t)(j - i);
	return j;
}

/* ---- The scan ------------------------------------------------------------------------------ */

struct codec_scan {
	struct src *in;
	struct codec_sink sink;
	struct pipeline *pl;
	struct lzm *dec; /* one per worker */
	unsigned nworkers;
	/* list mode */
	struct lzip_member *m;
	uint64_t nm, next, uoff;
	/* walk mode: one worker, member after member */
	bool walk;
	uint64_t wpos, wnum, wuoff;
	bool wend;
};

static int lzip_next(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *end)
{
	struct codec_scan *s = ctx;

	if (!s->walk) {
		if (s->next >= s->nm)
			return 0;
		s->next = lzip_group(s->m, s->nm, s->next, s->uoff, &job->ck);
		s->uoff += job->ck.ulen;
		return 1;
	}
	if (s->wend)
		return 0;
	/* walk mode: is there a member at wpos?  (its decoder, in dec[0], tells) */
	struct lzm *z = &s->dec[0];
	lzm_start(z, s->wpos, s->wnum, 1, UINT64_MAX);
	int r = lzm_member(z);
	if (r < 0) {
		pl_end_note(end, TFS_LOG_ERR, "%s", z->msg);
		return r;
	}
	if (r == 0) {
		struct trailing t;
		char note[160];
		int err = trailing_scan(s->in, s->wpos, NULL, 0, &t);
		if (err) {
			pl_end_note(end, TFS_LOG_ERR, "lzip: read error after offset %" PRIu64,
				    s->wpos);
			return err;
		}
		if (s->wnum == 1) {
			pl_end_note(end, TFS_LOG_ERR, "lzip: no member at the start of the file");
			return -EIO;
		}
		if (t.first_nonzero != TRAILING_NONE) {
			trailing_note(note, sizeof(note), "lzip", s->in, s->wpos);
			pl_end_note(end, TFS_LOG_NOTICE, "%s", note);
		}
		return 0;
	}
	memset(&job->ck, 0, sizeof(job->ck));
	job->ck.uoff = s->wuoff;
	job->ck.coff = s->wpos;
	job->ck.extra = s->wnum;
	job->ck.bits = 1;
	return 1;
}

static ssize_t lzip_pump(void *z, uint8_t *buf, size_t len)
{
	return lzm_read(z, buf, len);
}

static int lzip_run(void *ctx, unsigned worker, struct pl_job *job, struct pl_note *fail)
{
	struct codec_scan *s = ctx;
	struct lzm *z = &s->dec[worker];
	uint64_t before = 0;
	int err;

	if (!s->walk)
		lzm_start(z, job->ck.coff, job->ck.extra, job->ck.bits, job->ck.coff + job->ck.clen);
	else
		before = z->mstart; /* started by lzip_next */
	err = pl_pump(job, lzip_pump, z);
	if (err && z->err)
		return pl_fail(fail, err, z->truncated, "%s", z->msg);
	if (err || !s->walk)
		return err;
	/* walk: the member passed; the next one starts after it */
	job->ck.clen = z->mstart - before;
	s->wpos = z->mstart;
	s->wnum++;
	s->wuoff += z->zs.total_out;
	return 0;
}

static const struct pl_ops lzip_pl_ops = {.next = lzip_next, .run = lzip_run};

static void lzip_scan_free(struct codec_scan *s)
{
	if (!s)
		return;
	pl_free(s->pl);
	for (unsigned i = 0; s->dec && i < s->nworkers; i++)
		lzm_fini(&s->dec[i]);
	free(s->dec);
	free(s->m);
	free(s);
}

static int lzip_scan_new(struct src *in, const struct codec_opts *opts,
			 const struct codec_sink *sink, struct codec_scan **out)
{
	struct codec_scan *s;
	unsigned threads;
	size_t depth;
	int err;

	*out = NULL;
	if (!in || !sink || !sink->checkpoint)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->in = in;
	s->sink = *sink;
	threads = pl_threads(opts, LZIP_MAX_THREADS);
	err = lzip_list(in, &s->m, &s->nm);
	if (err == -ENOENT) {
		TFS_DEBUG("lzip: no clean member list from the trailers; decoding member by member");
		s->walk = true;
		s->wnum = 1;
		err = 0;
	}
	if (err)
		goto fail;
	s->nworkers = s->walk || s->nm < 2 ? 1 : threads;
	s->dec = calloc(s->nworkers, sizeof(*s->dec));
	err = -ENOMEM;
	if (!s->dec)
		goto fail;
	for (unsigned i = 0; i < s->nworkers; i++) {
		err = lzm_init(&s->dec[i], in);
		if (err)
			goto fail;
	}
	depth = s->nworkers + 1;
	err = pl_start(&lzip_pl_ops, s, &s->sink, "lzip", s->nworkers, depth,
		       pl_job_cap(LZIP_BUDGET, depth, LZIP_JOB_CAP_MIN, LZIP_JOB_CAP_MAX), &s->pl);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	lzip_scan_free(s);
	return err;
}

static ssize_t lzip_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	return pl_read(s->pl, buf, len);
}

static uint64_t lzip_scan_verified(struct codec_scan *s)
{
	return pl_verified(s->pl);
}

static int lzip_index_blocks(struct src *in, const struct codec_opts *opts,
			     const struct codec_sink *sink, uint64_t *usize)
{
	struct lzip_member *m;
	uint64_t n, i = 0, uoff = 0;
	int err = lzip_list(in, &m, &n);

	*usize = 0;
	if (err == -ENOENT)
		return -ENOTSUP; /* not a clean member list: the caller scans */
	if (err)
		return err;
	while (i < n && !err) {
		struct codec_ckpt ck;
		i = lzip_group(m, n, i, uoff, &ck);
		uoff += ck.ulen;
		if (ck.ulen) /* as the scan: a group of empty members starts no chunk */
			err = sink->checkpoint(sink->opaque, &ck, NULL, 0);
	}
	free(m);
	if (!err)
		*usize = uoff;
	return err;
}

/* ---- Decoders ------------------------------------------------------------------------------ */

struct codec_dec {
	struct lzm z;
	bool logged;
};

static void lzip_dec_free(struct codec_dec *d)
{
	if (!d)
		return;
	lzm_fini(&d->z);
	free(d);
}

static int lzip_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux,
			size_t auxlen, struct codec_dec **out)
{
	struct codec_dec *d;
	int err;

	*out = NULL;
	if (!in || !ck || !ck->bits || ck->bits > LZIP_GROUP_MEMBERS)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	err = lzm_init(&d->z, in);
	if (err) {
		lzip_dec_free(d);
		return err;
	}
	/* the group's members are checked against the index; after them, any that follow */
	lzm_start(&d->z, ck->coff, ck->extra ? ck->extra : 1, ck->bits,
		  ck->clen ? ck->coff + ck->clen : UINT64_MAX);
	*out = d;
	return 0;
}

static ssize_t lzip_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	struct lzm *z = &d->z;
	ssize_t n = lzm_read(z, buf, len);

	if (n == 0 && z->done && z->left == 0 && !z->err) {
		/* the group ended where the index says: go on with the members after it */
		z->done = false;
		z->left = UINT64_MAX;
		z->end = UINT64_MAX;
		n = lzm_read(z, buf, len);
	}
	if (n < 0 && z->msg[0] && !d->logged) {
		tfs_log(TFS_LOG_ERR, "lzip: decoder: %s", z->msg + strlen("lzip: "));
		d->logged = true;
	}
	return n;
}

static size_t lzip_dec_memory(const struct codec_dec *d)
{
	return sizeof(*d) + LZIP_INBUF + LZIP_OUTBUF + (size_t)(d->z.dict ? d->z.dict : 8u << 20);
}

const struct codec codec_lzip = {
	.name = "lzip",
	.probe = lzip_probe,
	.scan_new = lzip_scan_new,
	.scan_read = lzip_scan_read,
	.scan_verified = lzip_scan_verified,
	.scan_free = lzip_scan_free,
	.index_blocks = lzip_index_blocks,
	.dec_new = lzip_dec_new,
	.dec_read = lzip_dec_read,
	.dec_memory = lzip_dec_memory,
	.dec_free = lzip_dec_free,
};
