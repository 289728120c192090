/* The output side the lz4 and lzop codecs share (see lzout.h): messages, the end of a scan
 * worker's group, a decoder's block handed out read after read, the check that a checkpoint's
 * blocks end where it says.  A leaf: it calls neither codec.
 */
#include "codecs/lzout.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

int lzout_fail(struct lzout_msg *m, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->text, sizeof(m->text), fmt, ap);
	va_end(ap);
	m->level = TFS_LOG_ERR;
	return err;
}

void lzout_log(const struct lzout_msg *m)
{
	if (m->text[0])
		tfs_log(m->level, "%s", m->text);
}

void lzout_end_note(const struct lzout_msg *m, struct pl_note *end)
{
	if (!m->text[0])
		return;
	end->level = m->level;
	snprintf(end->text, sizeof(end->text), "%s", m->text);
}

int lzout_group_done(struct pl_job *job, size_t len, uint64_t clen, uint32_t good, int err,
		     const struct lzout_msg *msg, struct pl_note *fail)
{
	job->ck.ulen = len;
	job->ck.clen = clen;
	job->ck.bits = good;
	pl_commit(job, len);
	/* every byte handed over passed its block's checks */
	return err ? pl_fail(fail, err, true, "%s", msg->text) : 0;
}

ssize_t lzout_read(struct lzout *o, void *buf, size_t len, int (*next)(struct codec_dec *d),
		   struct codec_dec *d)
{
	while (len) {
		if (o->pos < o->len) {
			size_t n = o->len - o->pos < len ? o->len - o->pos : len;

			memcpy(buf, o->buf + o->pos, n);
			o->pos += n;
			return (ssize_t)n;
		}
		if (o->err || o->end)
			return o->err;
		int r = next(d);
		if (r < 0)
			o->err = r;
		else if (r == 0)
			o->end = true;
	}
	return 0;
}

void lzout_free(struct lzout *o)
{
	free(o->buf);
	o->buf = NULL;
	o->cap = o->len = o->pos = 0;
}

int lzout_chunk_end(const char *codec, const struct codec_ckpt *ck, uint32_t left, uint64_t pos,
		    uint64_t decoded)
{
	if (left == 0 && pos - ck->coff == ck->clen && (!ck->ulen || decoded == ck->ulen))
		return 0;
	tfs_log(TFS_LOG_ERR,
		"%s: decoder: the blocks at compressed offset %" PRIu64
		" do not match the index (the file changed?)",
		codec, ck->coff);
	return -EIO;
}
