/* What fuzz_squashfs.c and fuzz_sqlar.c share (header-only, one binary each): a container
 * whose files' data are streams of one codec of pieces (codecs/pieces.h), fed the input.
 *
 *  1. probe and parse over the input in memory, with a sink that checks what container.h and
 *     member.h promise: streams of that codec only, over the whole input (coff 0, clen its
 *     size), with params; NUL-terminated paths and link targets read whole (ASan), a known
 *     type, permission bits only, a hard link's target not empty, xattr names and values read
 *     whole, a member's bytes inside its stream, a reason for every unreadable member and no
 *     stream for it; the count in the stats; parse returns 0, -EIO, -EINVAL, -ENOTSUP or
 *     -ENOMEM;
 *  2. each stream (up to FZ_STREAMS of them, FZ_MAX_OUT decoded bytes each: a sparse file of a
 *     TiB makes executions slow rather than finds bugs) scanned with the codec in reads of
 *     varying size: never more than its size, exactly its size when the scan ends cleanly;
 *  3. decoders started at (some of) the checkpoints the scan emitted: they start (or run out
 *     of memory), and every byte they return below where the scan got is the scan's.
 */
#ifndef TARSEEK_FUZZ_IMAGE_H
#define TARSEEK_FUZZ_IMAGE_H

#include "containers/container.h"
#include "fuzz_common.h"

#define FZ_STREAMS 8
#define FZ_MAX_OUT (4u << 20)
#define FZ_PARAMS_MAX (1u << 20) /* params kept for step 2 */
#define FZ_DECODERS 4
#define FZ_MAX_CKPTS 64

struct fzi_stream {
	uint64_t usize;
	uint8_t *params;
	size_t params_len;
};

struct fzi_walk {
	const char *codec;
	uint64_t size; /* of the input */
	struct fzi_stream st[FZ_STREAMS];
	uint64_t usize[1024]; /* of the first 1024 streams */
	uint64_t nstreams, members, sum;
};

static int fzi_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	struct fzi_walk *w = opaque;

	FZ_ASSERT(s->codec && strcmp(s->codec, w->codec) == 0);
	FZ_ASSERT(s->coff == 0 && s->clen == w->size && s->usize > 0);
	FZ_ASSERT(s->params && s->params_len >= 4 && !s->zip_local && !s->crypt);
	if (w->nstreams < FZ_STREAMS && s->params_len <= FZ_PARAMS_MAX) {
		struct fzi_stream *k = &w->st[w->nstreams];
		k->params = malloc(s->params_len);
		if (k->params) {
			memcpy(k->params, s->params, s->params_len);
			k->params_len = s->params_len;
			k->usize = s->usize;
		}
	}
	if (w->nstreams < 1024)
		w->usize[w->nstreams] = s->usize;
	*id = ++w->nstreams;
	return 0;
}

static int fzi_member(void *opaque, const struct arc_member *m)
{
	struct fzi_walk *w = opaque;

	FZ_ASSERT(m->path && m->path[m->path_len] == '\0');
	for (size_t i = 0; i < m->path_len; i++)
		w->sum += m->path[i];
	FZ_ASSERT(m->link && m->link[m->link_len] == '\0' && m->uname && m->gname);
	for (size_t i = 0; i < m->link_len; i++)
		w->sum += m->link[i];
	FZ_ASSERT(m->type == MEMBER_REG || m->type == MEMBER_DIR || m->type == MEMBER_SYMLINK ||
		  m->type == MEMBER_HARDLINK || m->type == MEMBER_CHR || m->type == MEMBER_BLK ||
		  m->type == MEMBER_FIFO);
	FZ_ASSERT((m->mode & ~07777u) == 0);
	FZ_ASSERT(m->type != MEMBER_HARDLINK || m->link_len > 0);
	FZ_ASSERT(m->stream <= w->nstreams);
	FZ_ASSERT(!m->unreadable || (m->why && m->stream == 0 && m->unreadable == -EIO));
	if (m->type != MEMBER_REG)
		FZ_ASSERT(m->size == 0 && m->stream == 0);
	if (m->stream && m->stream <= 1024)
		FZ_ASSERT(m->data_off <= w->usize[m->stream - 1] &&
			  m->size <= w->usize[m->stream - 1] - m->data_off);
	if (m->type == MEMBER_REG && m->size && !m->unreadable)
		FZ_ASSERT(m->stream != 0);
	for (size_t i = 0; i < m->nxattrs; i++) {
		FZ_ASSERT(m->xattrs[i].name && strlen(m->xattrs[i].name) > 0);
		for (size_t j = 0; j < m->xattrs[i].len; j++)
			w->sum += m->xattrs[i].value[j];
	}
	w->members++;
	return 0;
}

struct fzi_cks {
	struct codec_ckpt c[FZ_MAX_CKPTS];
	void *aux[FZ_MAX_CKPTS];
	size_t auxlen[FZ_MAX_CKPTS];
	size_t n;
};

static int fzi_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	struct fzi_cks *k = opaque;

	FZ_ASSERT(k->n == 0 ? ck->uoff == 0 : ck->uoff > k->c[k->n - 1].uoff || k->n == FZ_MAX_CKPTS);
	if (k->n == FZ_MAX_CKPTS)
		return 0;
	k->aux[k->n] = malloc(auxlen ? auxlen : 1);
	if (!k->aux[k->n])
		return -ENOMEM;
	memcpy(k->aux[k->n], aux, auxlen);
	k->auxlen[k->n] = auxlen;
	k->c[k->n++] = *ck;
	return 0;
}

/* Step 2 and 3 for one stream. */
static void fzi_decode(const struct codec *c, struct src *in, const struct fzi_stream *s,
		       struct fz_rng *rng)
{
	static uint8_t *out;
	struct fzi_cks *k = calloc(1, sizeof(*k));
	struct codec_opts opts = {.spacing = 64 << 10, .threads = 1, .params = s->params,
				  .params_len = s->params_len};
	struct codec_sink sink = {.checkpoint = fzi_ckpt, .opaque = k};
	struct codec_scan *sc = NULL;
	uint64_t got = 0, cap = s->usize < FZ_MAX_OUT ? s->usize : FZ_MAX_OUT;
	ssize_t n = 0;

	if (!out)
		out = malloc(FZ_MAX_OUT + 1);
	if (!k || !out) {
		free(k);
		return;
	}
	if (c->scan_new(in, &opts, &sink, &sc) == 0) {
		while (got < cap) {
			size_t step = 1 + (size_t)fz_rng_below(rng, 300000);
			if (step > cap - got)
				step = (size_t)(cap - got);
			n = c->scan_read(sc, out + got, step);
			if (n <= 0)
				break;
			FZ_ASSERT((size_t)n <= step);
			got += (uint64_t)n;
		}
		if (got == s->usize) /* the end: nothing more */
			FZ_ASSERT(c->scan_read(sc, out + got, 1) <= 0);
		else if (n == 0)
			FZ_ASSERT(got == cap); /* 0 before the size only where we stopped */
		c->scan_free(sc);
	}
	for (size_t i = 0; i < k->n && i < FZ_DECODERS; i++) {
		size_t j = (size_t)fz_rng_below(rng, k->n);
		struct codec_ckpt ck = k->c[j];
		struct codec_dec *d = NULL;
		uint64_t end = j + 1 < k->n ? k->c[j + 1].uoff : got;
		if (ck.uoff >= got || end <= ck.uoff)
			continue;
		ck.ulen = end - ck.uoff;
		int err = c->dec_new(in, &ck, k->aux[j], k->auxlen[j], &d);
		FZ_ASSERT(err == 0 || err == -ENOMEM || err == -EIO);
		if (err)
			continue;
		uint8_t buf[65536];
		uint64_t at = ck.uoff;
		while (at < end) {
			size_t want = end - at < sizeof(buf) ? (size_t)(end - at) : sizeof(buf);
			ssize_t r = c->dec_read(d, buf, want);
			if (r <= 0)
				break;
			FZ_ASSERT((size_t)r <= want && memcmp(buf, out + at, (size_t)r) == 0);
			at += (uint64_t)r;
		}
		c->dec_free(d);
	}
	for (size_t i = 0; i < k->n; i++)
		free(k->aux[i]);
	free(k);
}

static void fzi_one(const struct container *cont, const char *codec, const uint8_t *data,
		    size_t size)
{
	struct fzi_walk *w = calloc(1, sizeof(*w));
	struct cont_sink sink = {.stream = fzi_stream, .member = fzi_member, .name = "fuzz"};
	struct cont_stats st = {0};
	struct fz_rng rng;
	struct src *in;

	fz_init_log();
	in = src_from_mem(data, size);
	if (!in || !w)
		goto out;
	w->codec = codec;
	w->size = size;
	sink.opaque = w;
	fz_rng_init(&rng, data, size);
	if (cont->probe(in, data, size < 512 ? size : 512)) {
		int err = cont->parse(in, &sink, &st);
		FZ_ASSERT(err == 0 || err == -EIO || err == -EINVAL || err == -ENOTSUP ||
			  err == -ENOMEM);
		if (err == 0)
			FZ_ASSERT(st.members == w->members);
		const struct codec *c = codec_by_name(codec);
		FZ_ASSERT(c);
		for (size_t i = 0; err == 0 && i < FZ_STREAMS && i < w->nstreams; i++)
			if (w->st[i].params)
				fzi_decode(c, in, &w->st[i], &rng);
	}
out:
	for (size_t i = 0; w && i < FZ_STREAMS; i++)
		free(w->st[i].params);
	free(w);
	src_free(in);
}

#endif
