/* libFuzzer harness: the 7z container (containers/7z/) and the 7z folder codec (codecs/7z/)
 * on arbitrary bytes.
 *
 *  1. cont_7z.probe and cont_7z.parse over the input in memory, with a sink that checks what
 *     container.h and member.h promise (NUL-terminated paths, streams declared before the
 *     members that use them, a member's bytes inside its stream, a reason for every unreadable
 *     member, the count in the stats) and keeps a copy of every stream;
 *  2. each stream (up to FZ_STREAMS of them, FZ_MAX_OUT decoded bytes each; larger ones are
 *     dropped, as a compression bomb makes executions slow rather than finds bugs) scanned
 *     with codec_7z from its params, in reads of varying size: it may fail, but never return
 *     more than the stream's size, and a scan that ends cleanly returns exactly that size;
 *  3. decoders started at (some of) the checkpoints the scan emitted: they must start (or
 *     run out of memory), and every byte they return below the scan's verified offset must be
 *     the scan's; after a clean scan they must read to the end without an error.
 *
 * The keyring holds one password, FZ_PASSWORD, the one make-seeds.sh's encrypted seeds were
 * made with (7zz -psecret): encrypted folders and encoded headers are decrypted and decoded as
 * any other, so the AES coder's properties, its key derivation (cached by salt and cycles: a
 * mutated salt derives again, 2^19 rounds, ~0.2 s), the password trial and the CBC node are
 * reached; a folder it does not open fails scan_new with -EACCES, a header -EACCES from the
 * parse.
 *
 *   build-fuzz/tests/fuzz/fuzz_7z -max_len=131072 CORPUS_DIR
 */
#include "containers/container.h"
#include "crypto/keyring.h"
#include "fuzz_common.h"

#include <stdbool.h>

#define FZ_STREAMS 8
#define FZ_MAX_OUT (4u << 20)
#define FZ_DECODERS 4
#define FZ_MAX_CKPTS 64
#define FZ_PASSWORD "secret"

struct fz_stream {
	struct cont_stream s;
	uint8_t *params;
};

struct fz_walk {
	struct fz_stream st[FZ_STREAMS];
	uint64_t usize[1024]; /* of every stream declared (the first 1024) */
	uint64_t nstreams;
	uint64_t members;
	uint64_t size; /* of the archive */
};

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	struct fz_walk *w = opaque;

	FZ_ASSERT(s->codec && strcmp(s->codec, "7z") == 0);
	FZ_ASSERT(s->params && s->params_len > 0);
	FZ_ASSERT(s->coff <= w->size && s->clen <= w->size - s->coff);
	if (w->nstreams < FZ_STREAMS) {
		struct fz_stream *k = &w->st[w->nstreams];
		k->s = *s;
		k->params = malloc(s->params_len);
		if (!k->params)
			return -ENOMEM;
		memcpy(k->params, s->params, s->params_len);
		k->s.params = k->params;
	}
	if (w->nstreams < 1024)
		w->usize[w->nstreams] = s->usize;
	*id = ++w->nstreams;
	return 0;
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct fz_walk *w = opaque;
	size_t sum = 0;

	FZ_ASSERT(m->path && m->path[m->path_len] == '\0');
	for (size_t i = 0; i < m->path_len; i++)
		sum += m->path[i];
	FZ_ASSERT(sum <= 255 * m->path_len); /* every byte of the name is read (ASan) */
	FZ_ASSERT(m->link && m->uname && m->gname);
	FZ_ASSERT(m->stream <= w->nstreams);
	FZ_ASSERT(!m->unreadable || m->why);
	FZ_ASSERT(m->unreadable == 0 || m->unreadable == -EOPNOTSUPP || m->unreadable == -EACCES ||
		  m->unreadable == -EIO);
	if (m->stream && m->stream <= 1024)
		FZ_ASSERT(m->data_off <= w->usize[m->stream - 1] &&
			  m->stored <= w->usize[m->stream - 1] - m->data_off);
	if (m->type != MEMBER_REG && m->type != MEMBER_SYMLINK)
		FZ_ASSERT(m->size == 0);
	w->members++;
	return 0;
}

struct fz_cks {
	struct codec_ckpt c[FZ_MAX_CKPTS];
	void *aux[FZ_MAX_CKPTS];
	size_t auxlen[FZ_MAX_CKPTS];
	size_t n;
	uint64_t returned;
};

static int on_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	struct fz_cks *k = opaque;

	FZ_ASSERT(k->n == 0 ? ck->uoff == 0 : ck->uoff > k->c[k->n - 1].uoff || k->n == FZ_MAX_CKPTS);
	FZ_ASSERT(ck->uoff >= k->returned);
	FZ_ASSERT(aux && auxlen);
	if (k->n == FZ_MAX_CKPTS)
		return 0;
	k->c[k->n] = *ck;
	k->aux[k->n] = malloc(auxlen);
	if (!k->aux[k->n])
		return -ENOMEM;
	memcpy(k->aux[k->n], aux, auxlen);
	k->auxlen[k->n] = auxlen;
	k->n++;
	return 0;
}

static uint8_t *out_buf;

static void fz_decode(const uint8_t *data, size_t size, const struct cont_stream *cs,
		      struct fz_rng *rng)
{
	struct fz_cks k = {0};
	struct codec_sink sink = {.checkpoint = on_ckpt, .opaque = &k};
	struct codec_opts opts = {.spacing = 1 + fz_rng_below(rng, 256 << 10), .threads = 1,
				  .params = cs->params, .params_len = cs->params_len};
	struct src *file = src_from_mem(data, size);
	struct src *win = file ? src_window(file, cs->coff, cs->clen) : NULL;
	struct codec_scan *s = NULL;
	uint64_t pos = 0, verified;
	ssize_t n = 0;
	static uint8_t buf[64 << 10];

	if (!win || cs->usize > FZ_MAX_OUT)
		goto out;
	if (codec_7z.scan_new(win, &opts, &sink, &s))
		goto out;
	for (;;) {
		size_t step = 1 + (size_t)fz_rng_below(rng, fz_rng_next(rng) & 1 ? 512 : 200000);
		if (pos + step > FZ_MAX_OUT)
			step = FZ_MAX_OUT - pos;
		if (step == 0)
			break;
		n = codec_7z.scan_read(s, out_buf + pos, step);
		if (n <= 0)
			break;
		FZ_ASSERT((size_t)n <= step);
		pos += (uint64_t)n;
		k.returned = pos;
		FZ_ASSERT(pos <= cs->usize);
	}
	FZ_ASSERT(n == 0 || n == -EIO || n == -ENOMEM || n == -ENOTSUP || n == -EINVAL);
	FZ_ASSERT(codec_7z.scan_read(s, buf, 1) == n);
	if (n == 0)
		FZ_ASSERT(pos == cs->usize);
	verified = codec_7z.scan_verified(s);
	FZ_ASSERT(verified <= pos);
	if (n == 0)
		FZ_ASSERT(verified == pos);
	codec_7z.scan_free(s);
	s = NULL;

	for (size_t j = 0; j < FZ_DECODERS && j < k.n; j++) {
		size_t i = k.n <= FZ_DECODERS ? j : (size_t)fz_rng_below(rng, k.n);
		struct codec_dec *d = NULL;
		uint64_t at = k.c[i].uoff;
		int err;

		k.c[i].ulen = (i + 1 < k.n ? k.c[i + 1].uoff : pos) - k.c[i].uoff;
		err = codec_7z.dec_new(win, &k.c[i], k.aux[i], k.auxlen[i], &d);
		FZ_ASSERT(err == 0 || err == -ENOMEM);
		if (err)
			continue;
		(void)codec_7z.dec_memory(d);
		while (at < pos) {
			size_t step = 1 + (size_t)fz_rng_below(rng, sizeof(buf));
			ssize_t r = codec_7z.dec_read(d, buf, step);
			FZ_ASSERT(r <= (ssize_t)step);
			if (r <= 0) {
				/* after a clean scan nothing may fail */
				FZ_ASSERT(n != 0 || r == -ENOMEM);
				break;
			}
			if (at < verified) {
				uint64_t m = verified - at < (uint64_t)r ? verified - at : (uint64_t)r;
				FZ_ASSERT(memcmp(buf, out_buf + at, (size_t)m) == 0);
			}
			at += (uint64_t)r;
		}
		codec_7z.dec_free(d);
	}
out:
	for (size_t i = 0; i < k.n; i++)
		free(k.aux[i]);
	codec_7z.scan_free(s);
	src_free(win);
	src_free(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_walk w = {.size = size};
	struct cont_sink sink = {.stream = on_stream, .member = on_member, .opaque = &w};
	struct cont_stats st;
	struct fz_rng rng;
	struct src *in;
	int err;

	fz_init_log();
	fz_rng_init(&rng, data, size);
	if (!out_buf) {
		out_buf = malloc(FZ_MAX_OUT);
		if (kr_add(FZ_PASSWORD, strlen(FZ_PASSWORD)))
			abort();
	}
	in = src_from_mem(data, size);
	if (!in || !out_buf)
		goto out;
	(void)cont_7z.probe(in, data, size < 512 ? size : 512);
	err = cont_7z.parse(in, &sink, &st);
	FZ_ASSERT(err == 0 || err == -EINVAL || err == -EIO || err == -ENOTSUP || err == -ENOMEM ||
		  err == -EACCES);
	FZ_ASSERT(st.members == w.members);
	for (uint64_t i = 0; i < w.nstreams && i < FZ_STREAMS; i++)
		fz_decode(data, size, &w.st[i].s, &rng);
out:
	for (uint64_t i = 0; i < w.nstreams && i < FZ_STREAMS; i++)
		free(w.st[i].params);
	src_free(in);
	return 0;
}
