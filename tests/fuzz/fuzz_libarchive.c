/* libFuzzer harness: the libarchive container (containers/libarchive.c) and its stream codec
 * (codecs/libarchive/libarchive_stream.c) on arbitrary bytes.
 *
 *  1. cont_libarchive.probe and .parse over the input in memory, with a sink that checks what
 *     container.h and member.h promise: at most one stream, of codec "libarchive", over the
 *     whole file, declared before the members that use it; NUL-terminated paths and links of
 *     the stated lengths; a known type and permission bits only; a member read in place lies
 *     inside the file, one in the stream inside its decoded size; a reason for every
 *     unreadable member; the count in the stats;
 *  2. the stream scanned as the builder does (its params, random read sizes): never more than
 *     its size, exactly its size when it ends cleanly, verified <= what it returned;
 *  3. decoders at (some of) the checkpoints: they start (or run out of memory), and every byte
 *     they return below the scan's verified offset is the scan's.
 *
 *   build-fuzz/tests/fuzz/fuzz_libarchive -max_len=131072 CORPUS_DIR
 */
#include "containers/container.h"
#include "fuzz_common.h"

#include <stdbool.h>

#define FZ_MAX_OUT (4u << 20)
#define FZ_DECODERS 3
#define FZ_MAX_CKPTS 64

struct fz_walk {
	uint64_t size, members, sid, usize;
	bool have_stream;
	void *params;
	size_t params_len;
};

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	struct fz_walk *w = opaque;

	FZ_ASSERT(!w->have_stream && w->members == 0);
	FZ_ASSERT(strcmp(s->codec, "libarchive") == 0 && codec_by_name(s->codec));
	FZ_ASSERT(s->coff == 0 && s->clen == w->size && !s->zip_local);
	FZ_ASSERT(s->params && s->params_len && s->params_len % 12 == 0);
	w->params = malloc(s->params_len);
	if (!w->params)
		return -ENOMEM;
	memcpy(w->params, s->params, s->params_len);
	w->params_len = s->params_len;
	w->have_stream = true;
	w->usize = s->usize;
	*id = w->sid = 1;
	return 0;
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct fz_walk *w = opaque;

	FZ_ASSERT(m->path && m->path[m->path_len] == '\0' && strlen((const char *)m->path) ==
								     m->path_len);
	FZ_ASSERT(m->link && m->link[m->link_len] == '\0');
	FZ_ASSERT(strchr("fhlcbdp", (int)m->type));
	FZ_ASSERT((m->mode & ~07777u) == 0);
	FZ_ASSERT(!m->unreadable || m->why);
	FZ_ASSERT(m->nxattrs == 0 || m->xattrs);
	if (m->type == MEMBER_REG && !m->unreadable && m->stored) {
		if (m->stream == 0)
			FZ_ASSERT(m->data_off <= w->size && m->stored <= w->size - m->data_off);
		else
			FZ_ASSERT(m->stream == w->sid && m->data_off <= w->usize &&
				  m->stored <= w->usize - m->data_off);
	}
	w->members++;
	return 0;
}

struct fz_cks {
	struct codec_ckpt c[FZ_MAX_CKPTS];
	void *aux[FZ_MAX_CKPTS];
	size_t auxlen[FZ_MAX_CKPTS];
	size_t n;
};

static int on_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	struct fz_cks *k = opaque;

	FZ_ASSERT(k->n == 0 ? ck->uoff == 0 : ck->uoff >= k->c[k->n - 1].uoff);
	if (k->n == FZ_MAX_CKPTS)
		return 0;
	k->c[k->n] = *ck;
	k->aux[k->n] = malloc(auxlen ? auxlen : 1);
	if (!k->aux[k->n])
		return -ENOMEM;
	memcpy(k->aux[k->n], aux, auxlen);
	k->auxlen[k->n++] = auxlen;
	return 0;
}

static uint8_t *out_buf;

static void fz_stream(const uint8_t *data, size_t size, const struct fz_walk *w,
		      struct fz_rng *rng)
{
	const struct codec *c = codec_by_name("libarchive");
	struct fz_cks k = {0};
	struct codec_sink sink = {.checkpoint = on_ckpt, .opaque = &k};
	struct codec_opts opts = {.spacing = 1 + fz_rng_below(rng, 64 << 10), .threads = 1,
				  .params = w->params, .params_len = w->params_len};
	struct src *file = src_from_mem(data, size);
	struct codec_scan *s = NULL;
	uint64_t pos = 0, verified;
	ssize_t n = 0;
	static uint8_t buf[64 << 10];

	if (!file || w->usize > FZ_MAX_OUT || c->scan_new(file, &opts, &sink, &s))
		goto out;
	for (;;) {
		size_t step = 1 + (size_t)fz_rng_below(rng, 100000);
		if (pos + step > w->usize + 1)
			step = (size_t)(w->usize + 1 - pos);
		n = c->scan_read(s, out_buf + pos, step);
		if (n <= 0)
			break;
		FZ_ASSERT((size_t)n <= step);
		pos += (uint64_t)n;
		FZ_ASSERT(pos <= w->usize);
	}
	FZ_ASSERT(n == 0 || n == -EIO || n == -ENOMEM);
	FZ_ASSERT(n != 0 || pos == w->usize);
	verified = c->scan_verified(s);
	FZ_ASSERT(verified <= pos);
	c->scan_free(s);
	s = NULL;

	for (size_t j = 0; j < FZ_DECODERS && j < k.n; j++) {
		size_t i = k.n <= FZ_DECODERS ? j : (size_t)fz_rng_below(rng, k.n);
		struct codec_dec *d = NULL;
		uint64_t at = k.c[i].uoff;
		int err = c->dec_new(file, &k.c[i], k.aux[i], k.auxlen[i], &d);

		FZ_ASSERT(err == 0 || err == -ENOMEM || err == -EIO);
		while (!err && at < pos) {
			ssize_t m = c->dec_read(d, buf, 1 + (size_t)fz_rng_below(rng, sizeof(buf)));
			if (m <= 0)
				break;
			if (at < verified) {
				uint64_t cmp = verified - at < (uint64_t)m ? verified - at : (uint64_t)m;
				FZ_ASSERT(memcmp(buf, out_buf + at, (size_t)cmp) == 0);
			}
			at += (uint64_t)m;
		}
		c->dec_free(d);
	}
out:
	c->scan_free(s);
	for (size_t i = 0; i < k.n; i++)
		free(k.aux[i]);
	src_free(file);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_walk w = {.size = size};
	struct cont_sink sink = {.stream = on_stream, .member = on_member, .opaque = &w,
				 .name = "fuzz"};
	struct cont_stats st = {0};
	struct fz_rng rng;
	struct src *in;
	int err;

	/* no guard (codecs/libarchive/la_guard.h): a crash or a loop of libarchive shows here,
	 * in the fuzzer's own process */
	setenv("TARSEEK_LA_GUARD", "0", 1);
	fz_init_log();
	fz_rng_init(&rng, data, size);
	if (!out_buf)
		out_buf = malloc(FZ_MAX_OUT + 1);
	in = src_from_mem(data, size);
	if (!in || !out_buf)
		goto out;
	(void)cont_libarchive.probe(in, data, size < 512 ? size : 512);
	err = cont_libarchive.parse(in, &sink, &st);
	FZ_ASSERT(err == 0 || err == -EINVAL || err == -EIO || err == -ENOMEM);
	FZ_ASSERT(err || st.members == w.members);
	if (!err && w.have_stream)
		fz_stream(data, size, &w, &rng);
out:
	free(w.params);
	src_free(in);
	return 0;
}
