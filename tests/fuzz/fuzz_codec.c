/* libFuzzer harness: one codec (compiled once per codec with -DFUZZ_CODEC=gzip|bzip2|xz|zstd|lzo|lz4|lzip|lzma|compress)
 * on arbitrary bytes, through everything the index builder and the reader do with it.
 *
 *  1. probe the head;
 *  2. the indexing pass: the codec's scan through a cstream (seek/stream.c), read the way the
 *     builder reads it (the head, then again from 0, forward in pieces of varying size), up to
 *     FZ_MAX_OUT decoded bytes (a stream that decodes to more is dropped: a compression bomb
 *     would make executions slow, not find bugs); then cstream_finish at the end, or
 *     cstream_salvage at the codec's verified offset after a decode error, as idx_build does;
 *  3. the checkpoints the stream hands out, checked as the reader will use them: contiguous,
 *     their segment CRCs matching the bytes the scan returned;
 *  4. decoders started at (some of) those checkpoints, reading their chunk and a little past;
 *  5. a creader over the same checkpoints and CRCs reading random ranges;
 *  6. index_blocks, where the codec has it, and a creader over its checkpoints (no CRCs).
 * Whatever any path returns for a verified byte must be the byte the scan returned (the
 * codec's promise never to return bytes it knows to be wrong, and the reader's to fail rather
 * than return wrong data); a path reading data that the scan accepted whole must not fail.
 *
 *   build-fuzz/tests/fuzz/fuzz_codec_gzip -max_len=65536 CORPUS_DIR
 */
#include "cache/cache.h"
#include "fuzz_common.h"
#include "seek/reader.h"
#include "seek/segment.h"
#include "seek/stream.h"

#include <stdbool.h>
#include <zlib.h>

#ifndef FUZZ_CODEC
#error "compile with -DFUZZ_CODEC=gzip (or bzip2, xz, zstd, lzo, lz4, lzip, lzma, compress)"
#endif
#define FZ_CAT(a, b) a##b
#define FZ_XCAT(a, b) FZ_CAT(a, b)
#define THE_CODEC FZ_XCAT(codec_, FUZZ_CODEC)

#define FZ_MAX_OUT (2u << 20)	 /* decoded bytes followed (> 1.5 MiB: two segments) */
#define FZ_MAX_CKPTS 4096	 /* checkpoints kept (more: steps 4-6 skipped) */
#define FZ_DECODERS 6		 /* checkpoints whose decoder is tried */
#define FZ_READS 8		 /* random reads per creader */
#define FZ_DEC_MAX (256u << 10)	 /* a decoder reads at most this much of a chunk not the last */
#define FZ_MAX_READ (256u << 10) /* longest random read */
#define FZ_SPACING (32u << 10)	 /* gzip: a checkpoint every 32 KiB */

struct fz_ck {
	struct codec_ckpt c;
	void *aux;
	size_t auxlen;
	uint64_t crc0; /* index of its first segment CRC in run.crcs */
};

struct run {
	struct fz_ck *cks;
	size_t n, cap;
	uint32_t *crcs;
	size_t ncrcs, crc_cap;
	bool overflow; /* too many checkpoints to keep */
	unsigned shift; /* segment size, as an index of the codec's stream gets (build.c) */
};

static void run_free(struct run *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->cks[i].aux);
	free(r->cks);
	free(r->crcs);
	memset(r, 0, sizeof(*r));
}

static int keep_ckpt(struct run *r, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		     const uint32_t *crcs, uint64_t ncrcs)
{
	if (r->overflow || r->n == FZ_MAX_CKPTS) {
		r->overflow = true;
		return 0;
	}
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		void *p = realloc(r->cks, cap * sizeof(*r->cks));
		if (!p)
			return -ENOMEM;
		r->cks = p;
		r->cap = cap;
	}
	if (r->ncrcs + ncrcs > r->crc_cap) {
		size_t cap = (r->ncrcs + ncrcs) * 2 + 16;
		void *p = realloc(r->crcs, cap * sizeof(*r->crcs));
		if (!p)
			return -ENOMEM;
		r->crcs = p;
		r->crc_cap = cap;
	}
	struct fz_ck *k = &r->cks[r->n];
	k->c = *ck;
	k->aux = NULL;
	k->auxlen = auxlen;
	k->crc0 = r->ncrcs;
	if (auxlen) {
		FZ_ASSERT(aux);
		k->aux = malloc(auxlen);
		if (!k->aux)
			return -ENOMEM;
		memcpy(k->aux, aux, auxlen);
	}
	if (ncrcs)
		memcpy(r->crcs + r->ncrcs, crcs, ncrcs * sizeof(*crcs));
	r->ncrcs += ncrcs;
	r->n++;
	return 0;
}

/* The stream's sink: stream.h's promises, then keep a copy. */
static int on_stream_ckpt(void *opaque, uint64_t idx, const struct codec_ckpt *ck, const void *aux,
			  size_t auxlen, const uint32_t *crcs, uint64_t ncrcs)
{
	struct run *r = opaque;

	FZ_ASSERT(idx == r->n || r->overflow);
	FZ_ASSERT(ncrcs == seg_count(ck->ulen, r->shift));
	if (!r->overflow) {
		uint64_t want = r->n ? r->cks[r->n - 1].c.uoff + r->cks[r->n - 1].c.ulen : 0;
		FZ_ASSERT(ck->uoff == want);
	}
	return keep_ckpt(r, ck, aux, auxlen, crcs, ncrcs);
}

/* index_blocks' sink: codec.h's promises (increasing uoff, the first at 0, ulen set). */
static int on_block_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	struct run *r = opaque;

	if (!r->overflow) {
		uint64_t want = r->n ? r->cks[r->n - 1].c.uoff + r->cks[r->n - 1].c.ulen : 0;
		FZ_ASSERT(ck->uoff == want);
	}
	return keep_ckpt(r, ck, aux, auxlen, NULL, 0);
}

static int load_aux(void *opaque, size_t idx, void **aux, size_t *len)
{
	struct run *r = opaque;

	*aux = NULL;
	*len = 0;
	FZ_ASSERT(idx < r->n);
	if (!r->cks[idx].auxlen)
		return 0;
	*aux = malloc(r->cks[idx].auxlen);
	if (!*aux)
		return -ENOMEM;
	memcpy(*aux, r->cks[idx].aux, r->cks[idx].auxlen);
	*len = r->cks[idx].auxlen;
	return 0;
}

/* What the scan established: [0, usize) is the index's decompressed data; out[0, trusted) holds
 * its first bytes as the scan returned them; 'clean' if the scan ended without error. */
struct truth {
	const uint8_t *out;
	uint64_t usize;
	uint64_t trusted;
	bool clean;
};

/* The segment CRCs of the stream's checkpoints against the bytes themselves (those we have). */
static void check_crcs(const struct run *r, const struct truth *t)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct codec_ckpt *c = &r->cks[i].c;
		uint64_t ns = seg_count(c->ulen, r->shift);
		for (uint64_t k = 0; k < ns; k++) {
			uint64_t off = c->uoff + (k << r->shift), len = seg_len(c->ulen, k, r->shift);
			FZ_ASSERT(off + len <= t->usize);
			if (off + len > t->trusted)
				return;
			uint32_t crc = (uint32_t)crc32(0, t->out + off, (uInt)len);
			FZ_ASSERT(crc == r->crcs[r->cks[i].crc0 + k]);
		}
	}
}

/* Decoders started at up to FZ_DECODERS of the checkpoints: their chunk and a bit more. */
static void try_decoders(const uint8_t *data, size_t size, const struct run *r,
			 const struct truth *t, struct fz_rng *rng)
{
	static uint8_t buf[64 << 10];

	for (size_t j = 0; j < FZ_DECODERS && j < r->n; j++) {
		/* the last chunk always (where a truncated stream ends), others at random */
		size_t i = r->n <= FZ_DECODERS ? j : j == 0 ? r->n - 1 : (size_t)fz_rng_below(rng, r->n);
		const struct codec_ckpt *c = &r->cks[i].c;
		struct src *in = src_from_mem(data, size);
		struct codec_dec *d = NULL;
		uint64_t pos = c->uoff, want = c->ulen + fz_rng_below(rng, 8192);
		int err;

		if (i + 1 < r->n && c->ulen > FZ_DEC_MAX) /* a long chunk: its start only */
			want = FZ_DEC_MAX;

		if (!in)
			return;
		err = THE_CODEC.dec_new(in, c, r->cks[i].aux, r->cks[i].auxlen, &d);
		/* a checkpoint the index stores must be a place to start */
		FZ_ASSERT(err == 0 || err == -ENOMEM);
		if (err == 0) {
			(void)THE_CODEC.dec_memory(d);
			while (pos < c->uoff + want) {
				size_t step = 1 + (size_t)fz_rng_below(rng, sizeof(buf));
				ssize_t n = THE_CODEC.dec_read(d, buf, step);
				FZ_ASSERT(n <= (ssize_t)step);
				if (n <= 0) {
					if (getenv("FUZZ_VERBOSE"))
						fprintf(stderr, "decoder %zu of %zu (uoff %llu ulen %llu coff "
							"%llu): %zd at %llu; usize %llu\n", i, r->n,
							(unsigned long long)c->uoff,
							(unsigned long long)c->ulen,
							(unsigned long long)c->coff, n,
							(unsigned long long)pos,
							(unsigned long long)t->usize);
					/* inside a chunk the index keeps, nothing may fail */
					FZ_ASSERT(pos >= c->uoff + c->ulen || n == -ENOMEM);
					break;
				}
				if (pos < t->trusted) {
					uint64_t k = t->trusted - pos < (uint64_t)n ? t->trusted - pos : (uint64_t)n;
					FZ_ASSERT(memcmp(buf, t->out + pos, (size_t)k) == 0);
				}
				pos += (uint64_t)n;
			}
		}
		THE_CODEC.dec_free(d);
		src_free(in);
	}
}

/* A creader over checkpoints r (with the stream's CRCs, or none) reading random ranges; every
 * byte it returns below 'trusted' must match; with must_read, every read must succeed. */
static void try_reader(const uint8_t *data, size_t size, struct run *r, bool with_crcs,
		       uint64_t usize, const struct truth *t, bool must_read, struct fz_rng *rng)
{
	static const uint32_t none[1];
	static uint8_t *buf; /* once: large blocks cost ASan an mmap each */
	struct cache *cache = cache_new(2u << 20);
	struct src *in = src_from_mem(data, size);
	struct creader *rd = NULL;
	int err;

	if (!buf)
		buf = malloc(FZ_MAX_READ);

	if (!cache || !in || !buf)
		goto out;
	struct creader_params p = {
		.codec = &THE_CODEC, .in = in, .ckpts = NULL, .nckpts = r->n,
		.crcs = with_crcs ? (r->crcs ? r->crcs : none) : NULL, .usize = usize,
		.load_aux = load_aux, .aux_opaque = r, .cache = cache, .workers = fz_workers(),
		.max_decoders = 1 + (unsigned)fz_rng_below(rng, 3), .seg_shift = r->shift,
	};
	struct codec_ckpt *cks = malloc((r->n ? r->n : 1) * sizeof(*cks));
	if (!cks)
		goto out;
	for (size_t i = 0; i < r->n; i++)
		cks[i] = r->cks[i].c;
	p.ckpts = cks;
	err = creader_new(&p, &rd);
	free(cks);
	FZ_ASSERT(err == 0 || err == -ENOMEM); /* the checkpoints were checked contiguous */
	if (err)
		goto out;
	FZ_ASSERT(creader_size(rd) == usize);
	uint64_t span = usize < FZ_MAX_OUT ? usize : FZ_MAX_OUT;
	for (int k = 0; k < FZ_READS; k++) {
		uint64_t off = fz_rng_below(rng, span + 1);
		size_t len = (size_t)fz_rng_below(rng, FZ_MAX_READ) + 1;
		if (k & 1) /* half of them sequential, as a file is read */
			off = (off & ~(uint64_t)0xffff) + ((uint64_t)k << 16);
		ssize_t n = creader_read(rd, buf, len, off);
		FZ_ASSERT(n <= (ssize_t)len);
		if (n < 0) {
			FZ_ASSERT(!must_read || n == -ENOMEM);
			continue;
		}
		/* short only at the end of the data */
		FZ_ASSERT((uint64_t)n == (off >= usize ? 0 : (usize - off < len ? usize - off : len)));
		if (off < t->trusted) {
			uint64_t m = t->trusted - off < (uint64_t)n ? t->trusted - off : (uint64_t)n;
			FZ_ASSERT(memcmp(buf, t->out + off, (size_t)m) == 0);
		}
	}
out:
	creader_free(rd);
	src_free(in);
	cache_free(cache);
}

static void try_index_blocks(const uint8_t *data, size_t size, const struct truth *t,
			     struct fz_rng *rng)
{
	struct codec_opts opts = {.spacing = FZ_SPACING, .threads = 1};
	struct run r = {.shift = SEG_SHIFT};
	struct codec_sink sink = {.checkpoint = on_block_ckpt, .opaque = &r};
	struct src *in = src_from_mem(data, size);
	uint64_t usize = 0;
	int err;

	if (!THE_CODEC.index_blocks || !in)
		goto out;
	err = THE_CODEC.index_blocks(in, &opts, &sink, &usize);
	if (err || r.overflow || r.n == 0)
		goto out;
	uint64_t total = r.cks[r.n - 1].c.uoff + r.cks[r.n - 1].c.ulen;
	FZ_ASSERT(total == usize);
	try_reader(data, size, &r, false, usize, t, t->clean && usize == t->usize, rng);
out:
	run_free(&r);
	src_free(in);
}

static uint8_t *out_buf;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_rng rng;
	struct run r = {.shift = strcmp(THE_CODEC.name, "gzip") == 0 ? SEG_SHIFT_FINE : SEG_SHIFT};
	struct cstream_sink sink = {.checkpoint = on_stream_ckpt, .opaque = &r, .seg_shift = r.shift};
	struct src *in = NULL;
	struct cstream *cs = NULL;
	uint8_t *out = NULL;
	uint64_t pos = 0, usize = 0;
	ssize_t n = 0;
	int err, ret = 0;

	fz_init_log();
	fz_rng_init(&rng, data, size);
	(void)THE_CODEC.probe(data, size < 512 ? size : 512);

	struct codec_opts opts = {.spacing = FZ_SPACING, .threads = 1 + (unsigned)(rng.s & 1)};
	in = src_from_mem(data, size);
	if (!out_buf)
		out_buf = malloc(FZ_MAX_OUT); /* once: a fresh 2 MiB per input costs ASan time */
	out = out_buf;
	if (!in || !out)
		goto out;
	err = cstream_new(&THE_CODEC, in, &opts, &sink, &cs);
	if (err)
		goto out;
	struct src *ds = cstream_src(cs);
	FZ_ASSERT(src_size(ds) == SRC_SIZE_UNKNOWN);

	/* the builder's pattern: the head, then the parse from 0 */
	n = src_pread(ds, out, 512, 0);
	if (n >= 0) {
		for (;;) {
			size_t step = 1 + (size_t)fz_rng_below(&rng, 1 + (fz_rng_next(&rng) & 1 ? 512 : 200000));
			if (pos + step > FZ_MAX_OUT) {
				ret = -1; /* too big to follow: not worth keeping */
				goto out;
			}
			n = src_pread(ds, out + pos, step, pos);
			if (n <= 0)
				break;
			FZ_ASSERT((size_t)n <= step);
			pos += (uint64_t)n;
			FZ_ASSERT(cstream_pos(cs) >= pos);
		}
	}
	FZ_ASSERT(n == 0 || n == -EIO || n == -ENOMEM || n == -ENOTSUP);

	struct truth t = {.out = out};
	if (n == 0) {
		err = cstream_finish(cs, &usize);
		FZ_ASSERT(err == 0 || err == -ENOMEM);
		if (err)
			goto out;
		FZ_ASSERT(usize == pos);
		FZ_ASSERT(cstream_verified(cs) == pos);
		t.clean = true;
		t.trusted = usize;
	} else if (n == -EIO) {
		/* the stream may have decoded (and verified) more than the failed read handed out */
		uint64_t limit = cstream_verified(cs);
		uint64_t sent = r.n ? r.cks[r.n - 1].c.uoff + r.cks[r.n - 1].c.ulen : 0;
		FZ_ASSERT(limit <= cstream_pos(cs));
		err = cstream_salvage(cs, limit, &usize);
		FZ_ASSERT(err == 0 || err == -ENOMEM || err == -EIO);
		if (err)
			goto out;
		/* at or before limit, unless checkpoints past it had already been handed out (the
		 * builder then keeps no member past limit) */
		FZ_ASSERT(usize <= limit || usize == sent || r.overflow);
		t.trusted = usize < limit ? usize : limit;
		if (t.trusted > pos)
			t.trusted = pos; /* the bytes we have to compare with */
	} else {
		goto out; /* refused features, out of memory: the index gives up */
	}
	t.usize = usize;
	(void)cstream_name(cs);
	cstream_free(cs);
	cs = NULL;

	if (r.overflow)
		goto out;
	/* contiguous from 0 to usize (each step checked by the sink) */
	FZ_ASSERT(r.n == 0 ? usize == 0 : r.cks[r.n - 1].c.uoff + r.cks[r.n - 1].c.ulen == usize);
	check_crcs(&r, &t);
	try_decoders(data, size, &r, &t, &rng);
	if (r.n)
		try_reader(data, size, &r, true, usize, &t, true, &rng);
	try_index_blocks(data, size, &t, &rng);
out:
	cstream_free(cs);
	run_free(&r);
	src_free(in);
	return ret;
}
