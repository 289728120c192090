/* Unit test of the codec-independent layer: the indexing stream (checkpoints, segment CRCs,
 * salvage after damage), the reader (segment fills, decoder pool, chunk boundaries) and the
 * chunk cache, driven by a fake codec whose "compressed" data is the data itself.  Two
 * decoder kinds: one that continues across checkpoints (like gzip) and one that stops at
 * its chunk's end (like bzip2/xz blocks).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache/cache.h"
#include "seek/reader.h"
#include "seek/segment.h"
#include "seek/stream.h"
#include "seek/workers.h"
#include "testutil.h"

/* ---- the fake codec ---- */

struct codec_scan {
	struct src *in;
	const struct codec_sink *sink;
	uint64_t pos, spacing, next_ck, fail_at;
	int err;
};

struct codec_dec {
	struct src *in;
	uint64_t pos, end;
};

static bool stop_at_chunk_end;
static struct workers *ahead; /* the threads decoding ahead, as a mount has them */
static uint64_t scan_fail_at = UINT64_MAX;

/* A gate: a decoder about to produce the byte at gate.at waits until the test opens the gate, so a
 * test can hold a decoder in the middle of its work without depending on timing. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t at; /* UINT64_MAX: no gate */
	bool open;
	unsigned waiting; /* decoders waiting at the gate */
} gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, UINT64_MAX, true, 0};

static void gate_pass(uint64_t from, uint64_t to)
{
	pthread_mutex_lock(&gate.lock);
	if (from <= gate.at && to > gate.at) {
		gate.waiting++;
		pthread_cond_broadcast(&gate.cond);
		while (!gate.open)
			pthread_cond_wait(&gate.cond, &gate.lock);
		gate.waiting--;
	}
	pthread_mutex_unlock(&gate.lock);
}

static int fake_scan_new(struct src *in, const struct codec_opts *o, const struct codec_sink *sink,
			 struct codec_scan **out)
{
	struct codec_scan *s = calloc(1, sizeof(*s));

	s->in = in;
	s->sink = sink;
	s->spacing = o->spacing;
	s->fail_at = scan_fail_at;
	*out = s;
	return 0;
}

static ssize_t fake_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	uint64_t size = src_size(s->in);

	if (s->err)
		return s->err;
	/* emit every checkpoint this call's data will cross, before returning it */
	while (s->next_ck < s->pos + len && (s->next_ck < size || s->next_ck == 0)) {
		struct codec_ckpt ck = {.uoff = s->next_ck, .coff = s->next_ck};
		uint8_t aux[3] = {1, 2, 3};
		int err = s->sink->checkpoint(s->sink->opaque, &ck, aux, sizeof(aux));
		if (err)
			return s->err = err;
		s->next_ck += s->spacing;
	}
	if (s->pos >= s->fail_at)
		return s->err = -EIO;
	if (len > s->fail_at - s->pos)
		len = s->fail_at - s->pos;
	ssize_t n = src_pread(s->in, buf, len, s->pos);
	if (n > 0)
		s->pos += (uint64_t)n;
	return n;
}

static uint64_t fake_scan_verified(struct codec_scan *s)
{
	/* after damage, the last 300000 bytes delivered were not verified */
	return s->err && s->pos > 300000 ? s->pos - 300000 : s->pos;
}

static void fake_scan_free(struct codec_scan *s)
{
	free(s);
}

static int fake_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux,
			size_t auxlen, struct codec_dec **out)
{
	struct codec_dec *d;

	if (auxlen != 3 || memcmp(aux, "\1\2\3", 3) != 0)
		return -EINVAL; /* the aux blob must come back intact */
	d = calloc(1, sizeof(*d));
	d->in = in;
	d->pos = ck->coff;
	d->end = stop_at_chunk_end ? ck->coff + ck->ulen : src_size(in);
	*out = d;
	return 0;
}

static ssize_t fake_dec_read(struct codec_dec *d, void *buf, size_t len)
{
	if (len > d->end - d->pos)
		len = d->end - d->pos;
	gate_pass(d->pos, d->pos + len);
	ssize_t n = src_pread(d->in, buf, len, d->pos);
	if (n > 0)
		d->pos += (uint64_t)n;
	return n;
}

static size_t fake_dec_memory(const struct codec_dec *d)
{
	return sizeof(*d);
}

static void fake_dec_free(struct codec_dec *d)
{
	free(d);
}

static const struct codec fake = {
	.name = "fake",
	.scan_new = fake_scan_new,
	.scan_read = fake_scan_read,
	.scan_verified = fake_scan_verified,
	.scan_free = fake_scan_free,
	.dec_new = fake_dec_new,
	.dec_read = fake_dec_read,
	.dec_memory = fake_dec_memory,
	.dec_free = fake_dec_free,
};

/* the same, saying its decoders read nothing past their chunk (codec.h: exact_input) */
static const struct codec fake_exact = {
	.name = "fake-exact",
	.scan_new = fake_scan_new,
	.scan_read = fake_scan_read,
	.scan_verified = fake_scan_verified,
	.scan_free = fake_scan_free,
	.dec_new = fake_dec_new,
	.dec_read = fake_dec_read,
	.dec_memory = fake_dec_memory,
	.dec_free = fake_dec_free,
	.exact_input = true,
};

/* ---- what the index would store ---- */

static unsigned shift = SEG_SHIFT; /* the segments' size in the index being made and read */

struct stored {
	struct codec_ckpt ck[4096];
	size_t n;
	uint32_t crcs[1 << 16];
	size_t ncrcs;
};

static int store_ckpt(void *opaque, uint64_t idx, const struct codec_ckpt *ck, const void *aux,
		      size_t auxlen, const uint32_t *crcs, uint64_t ncrcs)
{
	struct stored *st = opaque;

	CHECK_EQ(idx, st->n);
	CHECK_EQ(ncrcs, seg_count(ck->ulen, shift));
	CHECK_EQ(auxlen, 3);
	st->ck[st->n++] = *ck;
	memcpy(st->crcs + st->ncrcs, crcs, ncrcs * 4);
	st->ncrcs += ncrcs;
	return 0;
}

static int load_aux(void *opaque, size_t idx, void **aux, size_t *len)
{
	*aux = malloc(3);
	memcpy(*aux, "\1\2\3", 3);
	*len = 3;
	return 0;
}

/* Indexes data through the stream, reading it like a parser would: small reads, skips. */
static int index_data(const uint8_t *data, size_t size, uint64_t spacing, struct stored *st,
		      uint64_t *usize, bool *salvaged)
{
	struct src *in = src_from_mem(data, size);
	struct cstream_sink sink = {.checkpoint = store_ckpt, .opaque = st, .seg_shift = shift};
	struct codec_opts o = {.spacing = spacing, .threads = 1};
	struct cstream *cs;
	uint8_t hdr[512];
	int err;

	memset(st, 0, sizeof(*st));
	*salvaged = false;
	err = cstream_new(&fake, in, &o, &sink, &cs);
	CHECK_EQ(err, 0);
	struct src *fwd = cstream_src(cs);
	/* read the head twice (probe, then parse), then headers with skips in between */
	CHECK_EQ(src_pread(fwd, hdr, sizeof(hdr), 0), size < 512 ? (ssize_t)size : 512);
	if (size >= 512)
		CHECK(memcmp(hdr, data, 512) == 0);
	CHECK_EQ(src_pread(fwd, hdr, 100, 0), size < 100 ? (ssize_t)size : 100);
	uint64_t off = 0;
	while (off + 512 <= size) {
		ssize_t n = src_pread(fwd, hdr, 512, off);
		if (n < 0)
			break;
		CHECK(memcmp(hdr, data + off, (size_t)n) == 0);
		off += 512 + (off * 7919 % 300000);
	}
	CHECK_EQ(src_pread(fwd, hdr, 1, 0) , size > (1u << 20) ? -ESPIPE : 1);
	err = cstream_finish(cs, usize);
	if (err == -EIO) {
		*salvaged = true;
		err = cstream_salvage(cs, cstream_verified(cs), usize);
	}
	cstream_free(cs);
	src_free(in);
	return err;
}

static void check_layout(const struct stored *st, uint64_t usize)
{
	uint64_t total = 0;

	for (size_t i = 0; i < st->n; i++) {
		CHECK_EQ(st->ck[i].uoff, total);
		CHECK(st->ck[i].ulen > 0 || usize == 0);
		total += st->ck[i].ulen;
	}
	CHECK_EQ(total, usize);
}

static struct creader *make_reader(const uint8_t *data, size_t size, struct stored *st,
				   uint64_t usize, struct cache *cache, struct src **in)
{
	struct creader *r;
	*in = src_from_mem(data, size);
	struct creader_params p = {
		.codec = &fake, .in = *in, .ckpts = st->ck, .nckpts = st->n, .crcs = st->crcs,
		.usize = usize, .load_aux = load_aux, .cache = cache, .workers = ahead,
		.seg_shift = shift,
	};
	CHECK_EQ(creader_new(&p, &r), 0);
	return r;
}

static void read_check(struct creader *r, const uint8_t *data, uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len + 1);
	ssize_t n = creader_read(r, buf, len, off);
	uint64_t usize = creader_size(r);
	size_t want = off >= usize ? 0 : (len < usize - off ? len : (size_t)(usize - off));

	CHECK_EQ(n, (ssize_t)want);
	if (n > 0 && memcmp(buf, data + off, (size_t)n) != 0) {
		fprintf(stderr, "wrong bytes at %llu+%zu\n", (unsigned long long)off, len);
		tu_failures++;
	}
	free(buf);
}

struct thread_arg {
	struct creader *r;
	const uint8_t *data;
	uint64_t size;
	uint32_t seed;
};

static void *reader_thread(void *p)
{
	struct thread_arg *a = p;
	uint32_t x = a->seed;

	for (int i = 0; i < 300; i++) {
		x = x * 1103515245 + 12345;
		uint64_t off = ((uint64_t)x << 7 ^ x) % a->size;
		x = x * 1103515245 + 12345;
		read_check(a->r, a->data, off, 1 + x % 200000);
	}
	return NULL;
}

static void run_case(const uint8_t *data, size_t size, uint64_t spacing, bool stop)
{
	struct stored *st = malloc(sizeof(*st));
	struct cache *cache = cache_new(4u << 20); /* small: forces evictions */
	struct creader *r;
	struct src *in;
	uint64_t usize;
	bool salvaged;

	stop_at_chunk_end = stop;
	CHECK_EQ(index_data(data, size, spacing, st, &usize, &salvaged), 0);
	CHECK(!salvaged);
	CHECK_EQ(usize, size);
	check_layout(st, usize);
	r = make_reader(data, size, st, usize, cache, &in);
	/* every checkpoint and segment boundary, both sides, first and last byte */
	for (size_t i = 0; i < st->n; i++) {
		for (uint64_t k = 0; k < seg_count(st->ck[i].ulen, shift); k++) {
			uint64_t b = st->ck[i].uoff + (k << shift);
			read_check(r, data, b, 4096);
			if (b >= 10)
				read_check(r, data, b - 10, 20);
		}
	}
	read_check(r, data, 0, 1);
	read_check(r, data, size - 1, 1);
	read_check(r, data, size - 1, 100);
	read_check(r, data, size, 100);
	/* a sequential read in 128 KiB requests continues one decoder */
	struct creader_stats before, after;
	creader_get_stats(r, &before);
	for (uint64_t off = 0; off < size; off += 128 * 1024)
		read_check(r, data, off, 128 * 1024);
	creader_get_stats(r, &after);
	if (!stop) /* with a continuing codec the whole pass needs at most a few decoders */
		CHECK(after.decoders_started - before.decoders_started <= 2);
	else
		CHECK(after.decoders_started - before.decoders_started <= st->n + 1);
	/* concurrent random reads */
	pthread_t th[6];
	struct thread_arg args[6];
	for (int i = 0; i < 6; i++) {
		args[i] = (struct thread_arg){r, data, size, (uint32_t)(i + 1) * 7777u};
		pthread_create(&th[i], NULL, reader_thread, &args[i]);
	}
	for (int i = 0; i < 6; i++)
		pthread_join(th[i], NULL);
	struct cache_stats cs;
	cache_get_stats(cache, &cs);
	CHECK(cs.bytes <= cs.budget);
	creader_free(r);
	src_free(in);
	cache_free(cache);
	free(st);
}

static void test_corruption(const uint8_t *orig, size_t size)
{
	uint8_t *data = malloc(size);
	struct stored *st = malloc(sizeof(*st));
	struct cache *cache = cache_new(64u << 20);
	struct creader *r;
	struct src *in;
	uint64_t usize;
	bool salvaged;
	uint8_t buf[4096];

	memcpy(data, orig, size);
	stop_at_chunk_end = false;
	CHECK_EQ(index_data(data, size, 3u << 20, st, &usize, &salvaged), 0);
	data[5u << 20] ^= 0x40; /* the archive changes after indexing */
	r = make_reader(data, size, st, usize, cache, &in);
	CHECK_EQ(creader_read(r, buf, sizeof(buf), (5u << 20) - 100), -EIO);
	CHECK_EQ(creader_read(r, buf, sizeof(buf), 5u << 20), -EIO); /* not cached as good */
	read_check(r, orig, 0, 4096);			     /* other regions still read */
	read_check(r, orig, (9u << 20) + 5, 4096);
	creader_free(r);
	src_free(in);
	cache_free(cache);
	free(st);
	free(data);
}

static void test_salvage(const uint8_t *data, size_t size)
{
	struct stored *st = malloc(sizeof(*st));
	struct cache *cache = cache_new(64u << 20);
	struct creader *r;
	struct src *in;
	uint64_t usize;
	bool salvaged;
	/* damage at 7.75 MiB, verified up to 7.46 MiB: the chunk at 6 MiB is cut at 7 MiB,
	 * the last segment boundary the stored CRCs cover */
	stop_at_chunk_end = true;
	scan_fail_at = (7u << 20) + (3u << 18);
	CHECK_EQ(index_data(data, size, 3u << 20, st, &usize, &salvaged), 0);
	scan_fail_at = UINT64_MAX;
	CHECK(salvaged);
	CHECK_EQ(usize, 7u << 20);
	check_layout(st, usize);
	r = make_reader(data, size, st, usize, cache, &in);
	read_check(r, data, 0, 4096);
	read_check(r, data, (7u << 20) - 10, 100); /* short at the salvaged end */
	creader_free(r);
	src_free(in);
	cache_free(cache);
	free(st);
}

static void test_cache(void)
{
	struct cache *c = cache_new(3u << 20);
	struct cache_key k1 = {1, 1}, k2 = {1, 2};
	struct cache_buf *b;

	CHECK_EQ(cache_get(c, &k1, &b), 1); /* miss: reserved */
	CHECK(!cache_try_reserve(c, &k1));  /* already reserved */
	struct cache_buf *nb = cache_buf_new(1u << 20);
	cache_publish(c, &k1, nb);
	CHECK_EQ(cache_get(c, &k1, &b), 0);
	CHECK(b == nb);
	cache_buf_put(b);
	cache_buf_put(nb);
	CHECK(cache_try_reserve(c, &k2));
	cache_abandon(c, &k2);
	CHECK_EQ(cache_get(c, &k2, &b), 1); /* abandoned: a miss again */
	cache_abandon(c, &k2);
	/* a buffer bigger than the budget is not kept */
	struct cache_key k3 = {1, 3};
	CHECK(cache_try_reserve(c, &k3));
	nb = cache_buf_new(4u << 20);
	cache_publish(c, &k3, nb);
	cache_buf_put(nb);
	CHECK(!cache_contains(c, &k3));
	/* eviction keeps the budget */
	for (uint64_t i = 10; i < 20; i++) {
		struct cache_key k = {2, i};
		CHECK(cache_try_reserve(c, &k));
		nb = cache_buf_new(1u << 20);
		cache_publish(c, &k, nb);
		cache_buf_put(nb);
	}
	struct cache_stats s;
	cache_get_stats(c, &s);
	CHECK(s.bytes <= s.budget);
	CHECK(s.evictions > 0);
	struct cache_key last = {2, 19};
	CHECK(cache_contains(c, &last));
	cache_drop_stream(c, 2);
	CHECK(!cache_contains(c, &last));
	cache_free(c);
}

/* A memory cache far smaller than the data, with a disk tier behind it: after one pass that
 * decodes each segment once, random reads are served by the disk tier, not by decoding
 * again; decoding ahead fills what the reads did not touch. */
static void test_disk_tier(const uint8_t *data, size_t size)
{
	struct stored *st = malloc(sizeof(*st));
	struct cache *cache = cache_new(2u << 20);
	struct creader *r;
	struct src *in;
	uint64_t usize;
	bool salvaged;
	struct creader_stats s1, s2;
	struct cache_stats cs;

	CHECK_EQ(cache_set_disk(cache, "/tmp", 64u << 20), 0);
	stop_at_chunk_end = true;
	CHECK_EQ(index_data(data, size, 4u << 20, st, &usize, &salvaged), 0);
	r = make_reader(data, size, st, usize, cache, &in);
	for (uint64_t off = 0; off < size; off += 1u << 20)
		read_check(r, data, off, 1);
	creader_get_stats(r, &s1);
	/* every segment decoded once: by the reads or by decoding ahead */
	CHECK(s1.decoded_bytes <= size + (4u << 20));
	uint32_t x = 7;
	for (int i = 0; i < 200; i++) {
		x = x * 1103515245 + 12345;
		read_check(r, data, x % size, 5000);
	}
	creader_get_stats(r, &s2);
	CHECK_EQ(s2.decoded_bytes, s1.decoded_bytes); /* nothing decoded again */
	cache_get_stats(cache, &cs);
	CHECK(cs.disk_hits > 0);
	CHECK(cs.bytes <= cs.budget);
	creader_free(r);
	src_free(in);
	cache_free(cache);
	free(st);
}

/* Waits until done(arg) is true, for at most a minute (then the check fails): progress of
 * other threads, never a guess at how long they take. */
static bool wait_until(bool (*done)(void *), void *arg)
{
	for (int i = 0; i < 60000; i++) {
		if (done(arg))
			return true;
		usleep(1000);
	}
	return false;
}

static bool one_at_gate(void *arg)
{
	unsigned n;

	pthread_mutex_lock(&gate.lock);
	n = gate.waiting;
	pthread_mutex_unlock(&gate.lock);
	return n >= 1;
}

/* The second read has either waited for the job (right) or started a decoder of its own,
 * which then stops at the gate too (wrong): either way, the test can go on. */
static bool second_read_placed(void *arg)
{
	struct creader_stats s;

	creader_get_stats(arg, &s);
	pthread_mutex_lock(&gate.lock);
	unsigned n = gate.waiting;
	pthread_mutex_unlock(&gate.lock);
	return s.ahead_waits >= 1 || n >= 2;
}

struct read_job {
	struct creader *r;
	const uint8_t *data;
	uint64_t off;
};

static void *read_thread(void *arg)
{
	struct read_job *j = arg;

	read_check(j->r, j->data, j->off, 10);
	return NULL;
}

/* One chunk far longer than the decoding ahead (single-frame zstd, single-block xz): a read
 * beyond what a background job is decoding waits for that job's decoder instead of starting
 * another at the checkpoint, so the chunk is decoded once, by one decoder.  The job is held
 * at a gate at 32 MiB while the second read comes, so the case is the same on any machine. */
static void test_wait_for_ahead(void)
{
	size_t size = 100u << 20;
	uint8_t *data = malloc(size);
	struct stored *st = malloc(sizeof(*st));
	struct cache *cache = cache_new(16u << 20);
	struct creader *r;
	struct src *in;
	uint64_t usize;
	bool salvaged;
	struct creader_stats s;
	pthread_t th;

	tu_fill(data, size, 9, 0);
	CHECK_EQ(cache_set_disk(cache, "/tmp", 512u << 20), 0); /* room for decoding ahead */
	stop_at_chunk_end = false;
	CHECK_EQ(index_data(data, size, 1ull << 30, st, &usize, &salvaged), 0);
	CHECK_EQ(st->n, 1);
	r = make_reader(data, size, st, usize, cache, &in);
	pthread_mutex_lock(&gate.lock);
	gate.at = 32u << 20;
	gate.open = false;
	pthread_mutex_unlock(&gate.lock);
	read_check(r, data, 1000, 10);		  /* the job ahead (1..65 MiB) starts ... */
	CHECK(wait_until(one_at_gate, NULL));	  /* ... and stops at the gate */
	struct read_job j = {r, data, 90u << 20}; /* past the job's end, while it runs */
	CHECK_EQ(pthread_create(&th, NULL, read_thread, &j), 0);
	CHECK(wait_until(second_read_placed, r));
	pthread_mutex_lock(&gate.lock);
	gate.open = true;
	gate.at = UINT64_MAX;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
	pthread_join(th, NULL);
	read_check(r, data, size - 10, 10); /* the last segment: nothing is left to decode */
	creader_get_stats(r, &s);
	CHECK_EQ(s.ahead_waits, 1);
	CHECK_EQ(s.decoders_started, 1);
	CHECK_EQ(s.decoded_bytes, size); /* every byte once */
	creader_free(r);
	src_free(in);
	cache_free(cache);
	free(st);
	free(data);
}

struct filled_arg {
	struct creader *r;
	uint64_t want;
};

static bool segments_filled(void *arg)
{
	struct filled_arg *a = arg;
	struct creader_stats s;

	creader_get_stats(a->r, &s);
	return s.segments_filled >= a->want;
}

/* Chunks of 700 kB (a gzip stream's are smaller still): a read that promises to read on
 * (creader_read_ahead, a large file read in order) has the decoding go on past its chunk's
 * end in the background, with the same decoder, up to the segment holding ahead_to - 1; the
 * reads that follow decode nothing.  A read without the promise decodes up to its segment
 * only (with 1 MiB segments its chunk is one; with 64 KiB ones it reads the last). */
static void test_read_ahead(const uint8_t *data, size_t size)
{
	struct stored *st = malloc(sizeof(*st));
	struct cache *cache = cache_new(64u << 20);
	struct creader *r;
	struct src *in;
	uint64_t usize;
	bool salvaged;
	struct creader_stats s0, s1, s2;
	uint8_t buf[100];

	stop_at_chunk_end = false;
	CHECK_EQ(index_data(data, size, 700 * 1000, st, &usize, &salvaged), 0);
	CHECK(st->n >= 12);
	r = make_reader(data, size, st, usize, cache, &in);
	/* chunk 2, reading on to the start of chunk 8: chunks 3..7 and the first segment of 8
	 * come in the background */
	uint64_t to = st->ck[8].uoff + 10, segs = 1;
	for (size_t i = 2; i < 8; i++)
		segs += seg_count(st->ck[i].ulen, shift);
	CHECK_EQ(creader_read_ahead(r, buf, sizeof(buf), st->ck[2].uoff, to), (ssize_t)sizeof(buf));
	CHECK(memcmp(buf, data + st->ck[2].uoff, sizeof(buf)) == 0);
	struct filled_arg fa = {r, segs};
	CHECK(wait_until(segments_filled, &fa));
	creader_get_stats(r, &s0);
	CHECK_EQ(s0.segments_filled, segs);
	CHECK_EQ(s0.decoders_started, 1);
	for (size_t i = 3; i < 8; i++)
		read_check(r, data, st->ck[i].uoff, (size_t)st->ck[i].ulen);
	read_check(r, data, st->ck[8].uoff, (size_t)seg_len(st->ck[8].ulen, 0, shift));
	creader_get_stats(r, &s1);
	CHECK_EQ(s1.decoded_bytes, s0.decoded_bytes); /* all there already */
	CHECK_EQ(s1.segments_filled, segs);
	CHECK_EQ(s1.ahead_jobs, 1);
	/* no promise: chunk 10 up to its last segment, and nothing after it: no job is handed
	 * to the workers (counted before the read returns), so what the read decoded is all */
	read_check(r, data, st->ck[10].uoff + st->ck[10].ulen - 50, 50);
	creader_get_stats(r, &s2);
	CHECK_EQ(s2.ahead_jobs, 1);
	CHECK_EQ(s2.segments_filled, segs + seg_count(st->ck[10].ulen, shift));
	creader_free(r);
	src_free(in);
	cache_free(cache);
	free(st);
}

/* Segments of 64 KiB (gzip's): a read decodes from its checkpoint to the end of the segment
 * it wants, and a rest of the chunk shorter than BG_REST_MIN (512 KiB) is not decoded ahead:
 * the decoder waits in the pool, and a later read further on continues it.  A longer rest is
 * decoded ahead.  Damage fails the reads of its segment only. */
static void test_fine_segments(const uint8_t *orig, size_t size)
{
	const uint64_t K = 1u << SEG_SHIFT_FINE;
	uint8_t *data = malloc(size);
	struct stored *st = malloc(sizeof(*st));
	struct cache *cache = cache_new(64u << 20);
	struct creader *r;
	struct src *in;
	uint64_t usize;
	bool salvaged;
	struct creader_stats s;
	uint8_t buf[100];

	memcpy(data, orig, size);
	shift = SEG_SHIFT_FINE;
	stop_at_chunk_end = false;
	CHECK_EQ(index_data(data, size, 4 * K, st, &usize, &salvaged), 0);
	CHECK(st->n > 8 && st->ck[3].ulen == 4 * K);
	r = make_reader(data, size, st, usize, cache, &in);
	uint64_t c3 = st->ck[3].uoff;
	read_check(r, data, c3 + K + 5, 100); /* segment 1 of chunk 3 */
	creader_get_stats(r, &s);
	CHECK_EQ(s.ahead_jobs, 0); /* no job ahead: what the read decoded is all there is */
	CHECK_EQ(s.decoders_started, 1);
	CHECK_EQ(s.segments_filled, 2);
	CHECK_EQ(s.decoded_bytes, 2 * K);
	read_check(r, data, c3 + 3 * K + 7, 100); /* segment 3: the same decoder goes on */
	read_check(r, data, c3 + 10, 100);	  /* segment 0: in the cache */
	creader_get_stats(r, &s);
	CHECK_EQ(s.decoders_started, 1);
	CHECK_EQ(s.segments_filled, 4);
	CHECK_EQ(s.decoded_bytes, 4 * K);
	/* damage in segment 2 of chunk 5: segments 0 and 1 still read, 2 does not */
	data[st->ck[5].uoff + 2 * K + 99] ^= 1;
	read_check(r, data, st->ck[5].uoff + K - 50, 100);
	CHECK_EQ(creader_read(r, buf, sizeof(buf), st->ck[5].uoff + 2 * K + 50), -EIO);
	CHECK_EQ(creader_read(r, buf, sizeof(buf), st->ck[5].uoff + 2 * K + 50), -EIO);
	creader_free(r);
	src_free(in);

	/* chunks of 2 MiB: a read of a chunk's first segment has the rest decoded ahead */
	CHECK_EQ(index_data(orig, size, 32 * K, st, &usize, &salvaged), 0);
	CHECK(st->n >= 4 && st->ck[1].ulen == 32 * K);
	r = make_reader(orig, size, st, usize, cache, &in);
	read_check(r, orig, st->ck[1].uoff + 5, 100);
	struct filled_arg fa = {r, 32};
	CHECK(wait_until(segments_filled, &fa));
	creader_get_stats(r, &s);
	CHECK_EQ(s.decoders_started, 1);
	CHECK_EQ(s.decoded_bytes, 32 * K);
	creader_free(r);
	src_free(in);
	shift = SEG_SHIFT;
	cache_free(cache);
	free(st);
	free(data);
}

/* A source over memory that records the last span advised to it. */
struct advised {
	const uint8_t *data;
	size_t size;
	uint64_t off, len;
	int n;
};

static ssize_t adv_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct advised *a = opaque;

	if (off >= a->size)
		return 0;
	if (len > a->size - off)
		len = (size_t)(a->size - off);
	memcpy(buf, a->data + off, len);
	return (ssize_t)len;
}

static void adv_advise(void *opaque, uint64_t off, uint64_t len)
{
	struct advised *a = opaque;

	a->off = off;
	a->len = len;
	a->n++;
}

/* Before a decoder starts at a checkpoint, the reader advises the chunk's compressed span:
 * from the byte before it to the next checkpoint, plus 64 KiB for a decoder that reads whole
 * input buffers, or 4 KiB (a header) for one that reads block by block. */
static void test_advised_span(const uint8_t *data, size_t size)
{
	static const struct src_ops ops = {.pread = adv_pread, .advise = adv_advise};
	const struct codec *codecs[] = {&fake, &fake_exact};
	const uint64_t slack[] = {64 << 10, 4 << 10};
	struct stored *st = malloc(sizeof(*st));
	uint64_t usize;
	bool salvaged;

	CHECK_EQ(index_data(data, size, 700 * 1000, st, &usize, &salvaged), 0);
	CHECK(st->n > 4);
	for (int k = 0; k < 2; k++) {
		struct advised a = {.data = data, .size = size};
		struct src *in = src_new(&ops, &a, size);
		struct cache *cache = cache_new(8u << 20);
		struct creader *r;
		struct creader_params p = {
		    .codec = codecs[k], .in = in, .ckpts = st->ck, .nckpts = st->n,
		    .crcs = st->crcs, .usize = usize, .load_aux = load_aux, .cache = cache,
		};
		uint8_t buf[100];

		CHECK_EQ(creader_new(&p, &r), 0);
		CHECK_EQ(creader_read(r, buf, sizeof(buf), st->ck[2].uoff + 5000), (ssize_t)sizeof(buf));
		CHECK(memcmp(buf, data + st->ck[2].uoff + 5000, sizeof(buf)) == 0);
		CHECK_EQ(a.n, 1);
		CHECK_EQ(a.off, st->ck[2].coff - 1);
		CHECK_EQ(a.len, st->ck[3].coff + slack[k] - (st->ck[2].coff - 1));
		creader_free(r);
		cache_free(cache);
		src_free(in);
	}
	free(st);
}

/* Segments of chunks whose size comes from the archive: rounding to the nearest as ever, and no
 * wrap near UINT64_MAX (a zstd frame header claiming ~2^64 bytes once made one segment of the
 * whole claim, and the reader asked the cache for it). */
static void test_seg_count_edges(void)
{
	const unsigned s = SEG_SHIFT;
	const uint64_t seg = (uint64_t)1 << s;

	CHECK_EQ(seg_count(0, s), 0);
	CHECK_EQ(seg_count(1, s), 1);
	CHECK_EQ(seg_count(seg + seg / 2 - 1, s), 1); /* a tail under half merged */
	CHECK_EQ(seg_count(seg + seg / 2, s), 2);
	CHECK_EQ(seg_count(5, 0), 5);
	for (uint64_t ulen = UINT64_MAX - 2 * seg; ulen != 0; ulen += seg / 4) {
		uint64_t n = seg_count(ulen, s);
		CHECK(n >= (ulen >> s));
		CHECK(seg_len(ulen, n - 1, s) < seg + seg / 2);
		CHECK_EQ(((n - 1) << s) + seg_len(ulen, n - 1, s), ulen);
		if (ulen > UINT64_MAX - seg / 4)
			break;
	}
}

int main(void)
{
	size_t size = (10u << 20) + 12345;
	uint8_t *data = malloc(size);

	tu_fill(data, size, 42, 0);
	ahead = workers_new(4);
	test_seg_count_edges();
	test_cache();
	run_case(data, size, 3u << 20, false);		/* 3 MiB chunks: 3 segments each */
	run_case(data, size, 3u << 20, true);
	run_case(data, size, 700 * 1000, true);		/* chunks below one segment */
	run_case(data, size, (1u << 20) + 300000, false); /* a tail merged into the segment */
	run_case(data, size, 64u << 20, false);		/* one chunk: like single-block xz */
	run_case(data, 5000, 1024, true);		/* tiny */
	test_corruption(data, size);
	test_salvage(data, size);
	test_disk_tier(data, size);
	test_wait_for_ahead();
	test_read_ahead(data, size);
	test_advised_span(data, size);
	test_fine_segments(data, size);
	shift = SEG_SHIFT_FINE; /* everything again with 64 KiB segments */
	run_case(data, size, 256u << 10, false);
	run_case(data, size, 256u << 10, true);
	run_case(data, size, (64u << 10) + 20000, true); /* a tail merged into the segment */
	run_case(data, size, 3u << 20, false);
	run_case(data, 5000, 1024, true);
	test_corruption(data, size);
	test_read_ahead(data, size);
	shift = SEG_SHIFT;
	free(data);
	workers_free(ahead);
	return tu_exit();
}
