/* Helpers shared by the libFuzzer harnesses (header-only: each harness is one binary).
 *
 * Every harness silences the logger (FUZZ_VERBOSE=1 in the environment brings it back, for
 * looking at one input), derives its incidental choices (read sizes, offsets, thread counts)
 * from a hash of the input so that each input is replayed identically, and aborts through
 * FZ_ASSERT when a contract written in a header is broken -- libFuzzer then keeps the input as
 * a crash, like any memory error that ASan or UBSan reports.
 */
#ifndef TARSEEK_FUZZ_COMMON_H
#define TARSEEK_FUZZ_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/codec.h"
#include "common/log.h"
#include "common/source.h"
#include "seek/workers.h"

#define FZ_ASSERT(cond)                                                                            \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: contract broken: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* Logging off unless FUZZ_VERBOSE is set (messages cost time and flood the fuzzer's output). */
/* The threads that decode ahead, as a mount has them: made once, kept for the process. */
static inline struct workers *fz_workers(void)
{
	static struct workers *w;

	if (!w)
		w = workers_new(2);
	return w;
}

static inline void fz_init_log(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	tfs_log_level = getenv("FUZZ_VERBOSE") ? TFS_LOG_DEBUG : 0;
}

/* splitmix64 seeded by FNV-1a of the input. */
struct fz_rng {
	uint64_t s;
};

static inline void fz_rng_init(struct fz_rng *r, const uint8_t *data, size_t size)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 0x100000001b3ull;
	r->s = h;
}

static inline uint64_t fz_rng_next(struct fz_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform-ish in [0, n) (0 when n is 0). */
static inline uint64_t fz_rng_below(struct fz_rng *r, uint64_t n)
{
	return n ? fz_rng_next(r) % n : 0;
}

/* A source of unknown size over a buffer that also checks the forward-only rule: with strict
 * set, a read that starts before the end of the previous one aborts (the caller promised to
 * read strictly forward, as on a decompressed stream). */
struct fz_fwd {
	const uint8_t *buf;
	size_t len;
	uint64_t end; /* end of the previous read */
	int strict;
};

static inline ssize_t fz_fwd_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct fz_fwd *f = opaque;

	if (f->strict && off < f->end) {
		fprintf(stderr, "read of %zu bytes at %llu, behind the previous read's end %llu\n",
			len, (unsigned long long)off, (unsigned long long)f->end);
		FZ_ASSERT(off >= f->end);
	}
	if (off >= f->len)
		return 0;
	if (len > f->len - off)
		len = f->len - off;
	memcpy(buf, f->buf + off, len);
	if (off + len > f->end) /* what was returned (src_pread asks again after a short count) */
		f->end = off + len;
	return (ssize_t)len;
}

static const struct src_ops fz_fwd_ops = {.pread = fz_fwd_pread};

static inline struct src *fz_fwd_src(struct fz_fwd *f, const uint8_t *buf, size_t len, int strict)
{
	memset(f, 0, sizeof(*f));
	f->buf = buf;
	f->len = len;
	f->strict = strict;
	return src_new(&fz_fwd_ops, f, SRC_SIZE_UNKNOWN);
}

static inline int fz_null_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux,
			       size_t auxlen)
{
	return 0;
}

/* Decodes buf with codec c (one thread) into buffer number slot (0 or 1) of cap + 1 bytes, kept
 * from call to call (large blocks cost ASan an mmap each).  Returns 1 if the stream ended (well or not) within
 * cap bytes, 0 if it decodes to more (a compression bomb: the caller gives up on this input to
 * keep executions fast), -ENOMEM.  *out (valid until the next call) and *outlen: the decoded
 * bytes. */
static inline int fz_prescan(const struct codec *c, const uint8_t *buf, size_t len, size_t cap,
			     int slot, const uint8_t **out, size_t *outlen)
{
	static uint8_t *dsts[2];
	static size_t caps[2];
	uint8_t *dst;
	struct codec_opts opts = {.spacing = 1 << 20, .threads = 1};
	struct codec_sink sink = {.checkpoint = fz_null_ckpt};
	struct src *in = src_from_mem(buf, len);
	struct codec_scan *s = NULL;
	size_t got = 0;
	int ret = 1;

	if (out)
		*out = NULL;
	*outlen = 0;
	if (caps[slot] < cap + 1) {
		free(dsts[slot]);
		dsts[slot] = malloc(cap + 1);
		caps[slot] = dsts[slot] ? cap + 1 : 0;
	}
	dst = dsts[slot];
	if (!in || !dst) {
		src_free(in);
		return -ENOMEM;
	}
	if (c->scan_new(in, &opts, &sink, &s) == 0) {
		for (;;) {
			ssize_t n = c->scan_read(s, dst + got, cap + 1 - got);
			if (n <= 0)
				break;
			got += (size_t)n;
			if (got > cap) {
				ret = 0;
				break;
			}
		}
	}
	c->scan_free(s);
	src_free(in);
	if (ret == 1) {
		if (out)
			*out = dst;
		*outlen = got;
	}
	return ret;
}

#endif
