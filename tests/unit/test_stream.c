/* Unit test of the indexing pass (seek/stream.c) against seek/stream.h: the forward-only
 * source over a codec's scan (the first 512 KiB re-readable, -ESPIPE behind, skipped bytes
 * still decoded and checksummed, large refills), the checkpoints handed to the sink (idx 0, 1,
 * 2, ... in order, the codec's record with ulen set, its aux blob, the CRC32 of each segment
 * as segment.h cuts the chunk), cstream_finish, cstream_salvage after a decode error, and
 * errors: the codec's, the sink's (which stop the stream), checkpoints out of order.
 *
 * The codec is a fake whose "compressed" data is the data itself, so every output of the
 * stream can be computed here from the data: the test knows where each checkpoint is, where
 * each scan_read call ended, and checks the sink's records against crc32() of the bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "common/log.h"
#include "seek/segment.h"
#include "seek/stream.h"
#include "testutil.h"

/* ---- the fake codec, set up by each test through cfg ---- */

static struct {
	const uint64_t *ckpts; /* decoded offsets of the checkpoints it emits, in this order */
	size_t nckpts;
	uint64_t ahead;	 /* emits a checkpoint this many bytes before the call that needs it */
	bool late;	 /* emits checkpoints after 0 only once their bytes were returned (a bug) */
	size_t piece;	 /* at most this many bytes per scan_read (0: what is asked) */
	uint64_t member; /* no scan_read crosses a multiple of it; the verified offset is the last
			    multiple reached (like gzip members) -- 0: everything is verified */
	uint64_t fail_at; /* the data is damaged here: scan_read fails with -EIO */
	int new_err;	  /* scan_new fails with it */
} cfg;

/* What the fake saw, for the checks. */
static struct {
	unsigned reads;	 /* scan_read calls */
	size_t min_ask;	 /* the smallest len asked for */
	uint64_t *ends;	 /* decoded offset after each scan_read that returned bytes */
	size_t nends;
	int live;	 /* scans not freed */
} seen;

struct codec_scan {
	struct src *in;
	const struct codec_sink *sink;
	uint64_t pos;
	size_t next; /* next checkpoint to emit */
	int err;
	uint8_t aux[4];
};

static void fake_config(const uint64_t *ckpts, size_t n)
{
	cfg = (typeof(cfg)){.ckpts = ckpts, .nckpts = n, .fail_at = UINT64_MAX};
}

static int fake_scan_new(struct src *in, const struct codec_opts *o, const struct codec_sink *sink,
			 struct codec_scan **out)
{
	struct codec_scan *s;

	*out = NULL;
	if (cfg.new_err)
		return cfg.new_err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->in = in;
	s->sink = sink;
	*out = s;
	seen.live++;
	return 0;
}

/* The record the fake emits as checkpoint i: every field distinct, ulen left 0. */
static struct codec_ckpt fake_ckpt(size_t i)
{
	return (struct codec_ckpt){.uoff = cfg.ckpts[i], .coff = cfg.ckpts[i] + 1000, .clen = i,
				   .extra = 3 * i, .bits = (uint32_t)(i % 8),
				   .flags = 0x100 + (uint32_t)i};
}

/* Checkpoint i's aux blob: none for every third, else 4 bytes of its own. */
static size_t fake_aux(size_t i, uint8_t aux[4])
{
	if (i % 3 == 2)
		return 0;
	aux[0] = (uint8_t)i;
	aux[1] = (uint8_t)(i >> 8);
	aux[2] = 0xA5;
	aux[3] = (uint8_t)cfg.ckpts[i];
	return 4;
}

static int emit(struct codec_scan *s)
{
	size_t i = s->next++;
	struct codec_ckpt ck = fake_ckpt(i);
	size_t auxlen = fake_aux(i, s->aux);
	int err = s->sink->checkpoint(s->sink->opaque, &ck, auxlen ? s->aux : NULL, auxlen);

	memset(s->aux, 0xEE, sizeof(s->aux)); /* valid only during the call */
	memset(&ck, 0xEE, sizeof(ck));
	return err;
}

static ssize_t fake_scan_read(struct codec_scan *s, void *buf, size_t len)
{
	uint64_t size = src_size(s->in);
	size_t n = len;

	seen.reads++;
	if (len < seen.min_ask)
		seen.min_ask = len;
	if (s->err)
		return s->err;
	if (cfg.piece && n > cfg.piece)
		n = cfg.piece;
	if (cfg.member && n > cfg.member - s->pos % cfg.member)
		n = (size_t)(cfg.member - s->pos % cfg.member);
	if (n > size - s->pos)
		n = (size_t)(size - s->pos);
	if (cfg.fail_at < size && n > cfg.fail_at - s->pos)
		n = (size_t)(cfg.fail_at - s->pos);
	/* every checkpoint before the bytes at or after it (at the end: all that are left) */
	while (s->next < cfg.nckpts) {
		uint64_t horizon = cfg.late && s->next > 0 ? s->pos : s->pos + n + cfg.ahead;
		if (cfg.ckpts[s->next] >= horizon && !(n == 0 && s->pos == size))
			break;
		int err = emit(s);
		if (err)
			return s->err = err;
	}
	if (n == 0)
		return s->pos == size ? 0 : (s->err = -EIO);
	ssize_t got = src_pread(s->in, buf, n, s->pos);
	if (got > 0) {
		s->pos += (uint64_t)got;
		seen.ends = realloc(seen.ends, (seen.nends + 1) * sizeof(*seen.ends));
		seen.ends[seen.nends++] = s->pos;
	}
	return got;
}

static uint64_t fake_scan_verified(struct codec_scan *s)
{
	if (!cfg.member || s->pos == src_size(s->in))
		return s->pos;
	return s->pos - s->pos % cfg.member;
}

static const char *fake_scan_name(struct codec_scan *s)
{
	return "fake-name";
}

static void fake_scan_free(struct codec_scan *s)
{
	if (s)
		seen.live--;
	free(s);
}

static const struct codec fake = {
	.name = "fake",
	.scan_new = fake_scan_new,
	.scan_read = fake_scan_read,
	.scan_verified = fake_scan_verified,
	.scan_name = fake_scan_name,
	.scan_free = fake_scan_free,
};

/* The same without the optional slots. */
static const struct codec bare = {
	.name = "bare",
	.scan_new = fake_scan_new,
	.scan_read = fake_scan_read,
	.scan_free = fake_scan_free,
};

/* ---- the sink: what the index would store ---- */

struct stored {
	uint64_t idx;
	struct codec_ckpt ck;
	uint8_t aux[4];
	size_t auxlen;
	bool aux_null;
	uint32_t *crcs;
	uint64_t ncrcs;
};

static struct {
	struct stored *e;
	size_t n;
	uint64_t fail_idx; /* the call with this idx fails with fail_err */
	int fail_err;
} sunk;

static int sink_ckpt(void *opaque, uint64_t idx, const struct codec_ckpt *ck, const void *aux,
		     size_t auxlen, const uint32_t *crcs, uint64_t ncrcs)
{
	struct stored *e;

	sunk.e = realloc(sunk.e, (sunk.n + 1) * sizeof(*sunk.e));
	e = &sunk.e[sunk.n++];
	*e = (struct stored){.idx = idx, .ck = *ck, .auxlen = auxlen, .aux_null = !aux,
			     .ncrcs = ncrcs};
	if (auxlen && auxlen <= sizeof(e->aux))
		memcpy(e->aux, aux, auxlen);
	e->crcs = malloc((ncrcs + 1) * sizeof(*crcs));
	if (ncrcs) /* an empty chunk may come with crcs NULL */
		memcpy(e->crcs, crcs, ncrcs * sizeof(*crcs));
	return idx == sunk.fail_idx ? sunk.fail_err : 0;
}

/* seg_shift: the test running sets it, 0 (SEG_SHIFT) or SEG_SHIFT_FINE */
static struct cstream_sink sink = {.checkpoint = sink_ckpt};

static unsigned seg_shift(void)
{
	return sink.seg_shift ? sink.seg_shift : SEG_SHIFT;
}

static void reset(void)
{
	for (size_t i = 0; i < sunk.n; i++)
		free(sunk.e[i].crcs);
	free(sunk.e);
	free(seen.ends);
	sunk.e = NULL;
	sunk.n = 0;
	sunk.fail_idx = UINT64_MAX;
	seen = (typeof(seen)){.min_ask = SIZE_MAX};
}

/* Stored entry j is emitted checkpoint i, its chunk ends at end: the codec's record with ulen
 * set, its aux blob, one CRC32 per segment of the data as segment.h cuts it. */
static void check_entry(size_t j, size_t i, uint64_t end, const uint8_t *data)
{
	const struct stored *e = &sunk.e[j];
	struct codec_ckpt want = fake_ckpt(i);
	uint8_t aux[4];
	size_t auxlen = fake_aux(i, aux);
	uint64_t ulen = end - want.uoff, total = 0;
	unsigned sh = seg_shift();
	uint64_t seg = (uint64_t)1 << sh;

	want.ulen = ulen;
	CHECK_EQ(e->idx, j);
	CHECK(memcmp(&e->ck, &want, sizeof(want)) == 0);
	CHECK_EQ(e->ck.uoff, want.uoff);
	CHECK_EQ(e->ck.ulen, ulen);
	CHECK_EQ(e->auxlen, auxlen);
	CHECK(auxlen ? !e->aux_null && memcmp(e->aux, aux, auxlen) == 0 : true);
	CHECK_EQ(e->ncrcs, seg_count(ulen, sh));
	for (uint64_t k = 0; k < e->ncrcs && k < seg_count(ulen, sh); k++) {
		uint64_t len = seg_len(ulen, k, sh);
		uint32_t crc = (uint32_t)crc32(0, data + want.uoff + (k << sh), (uInt)len);
		if (e->crcs[k] != crc) {
			fprintf(stderr, "entry %zu (at %llu), segment %llu: crc %08x, expected %08x\n",
				j, (unsigned long long)want.uoff, (unsigned long long)k, e->crcs[k],
				crc);
			tu_failures++;
		}
		/* segment.h's rule: whole segments, a short tail merged into the one before */
		if (k + 1 < seg_count(ulen, sh))
			CHECK_EQ(len, seg);
		else
			CHECK(ulen < seg / 2 || (len >= seg / 2 && len < seg * 3 / 2));
		total += len;
	}
	CHECK_EQ(total, ulen);
}

/* The stored entries are the emitted checkpoints which[0..n), the last one ending at usize. */
static void check_index(const uint8_t *data, uint64_t usize, const size_t *which, size_t n)
{
	CHECK_EQ(sunk.n, n);
	for (size_t j = 0; j < n && j < sunk.n; j++)
		check_entry(j, which[j], j + 1 < n ? cfg.ckpts[which[j + 1]] : usize, data);
}

/* Checkpoints 0 .. n-1, each stored. */
static void check_all(const uint8_t *data, uint64_t usize)
{
	size_t *which = malloc((cfg.nckpts + 1) * sizeof(*which));

	for (size_t i = 0; i < cfg.nckpts; i++)
		which[i] = i;
	check_index(data, usize, which, cfg.nckpts);
	free(which);
}

/* ---- the parser's reads ---- */

enum read_how {
	READ_NONE,    /* no reads: cstream_finish decodes it all */
	READ_HEADERS, /* 512-byte reads, back to back */
	READ_SKIPS,   /* the head twice, then 512-byte reads far apart (a tar parser skipping data) */
	READ_LARGE,   /* 200 KiB reads */
};

/* Reads like a parser, checking every byte; returns 0 at the end, or the first error. */
static int parse(struct src *fwd, const uint8_t *data, size_t size, enum read_how how)
{
	uint8_t *buf = malloc(200u << 10);
	uint64_t off = 0;
	int err = 0;

	if (how == READ_SKIPS && size >= 1024) { /* probe the head, then parse from 0 */
		CHECK_EQ(src_pread(fwd, buf, 1024, 0), 1024);
		CHECK(memcmp(buf, data, 1024) == 0);
	}
	while (how != READ_NONE) {
		size_t len = how == READ_LARGE ? 200u << 10 : 512;
		ssize_t n = src_pread(fwd, buf, len, off);
		if (n < 0) {
			err = (int)n;
			break;
		}
		size_t want = off >= size ? 0 : (size - off < len ? (size_t)(size - off) : len);
		CHECK_EQ(n, (ssize_t)want);
		if (n > 0 && memcmp(buf, data + off, (size_t)n) != 0) {
			fprintf(stderr, "wrong bytes read at %llu\n", (unsigned long long)off);
			tu_failures++;
		}
		if (n < (ssize_t)len)
			break;
		off += (uint64_t)n;
		if (how == READ_SKIPS)
			off += ((off >> 9) * 2654435761u) % (700u << 10);
	}
	free(buf);
	return err;
}

static const struct codec_opts opts = {.spacing = 1u << 20, .threads = 1};

/* A stream over data[0, size) with codec c, the fake set up as cfg says; the sink's records and
 * the fake's log are cleared first.  The test ends if the stream cannot start. */
static struct cstream *open_stream(const struct codec *c, const uint8_t *data, size_t size,
				   struct src **in)
{
	struct cstream *cs;
	int err;

	reset();
	*in = src_from_mem(data, size);
	err = *in ? cstream_new(c, *in, &opts, &sink, &cs) : -ENOMEM;
	if (err) {
		fprintf(stderr, "cstream_new: %s\n", strerror(-err));
		exit(1);
	}
	return cs;
}

static void close_stream(struct cstream *cs, struct src *in)
{
	cstream_free(cs);
	src_free(in);
	CHECK_EQ(seen.live, 0); /* the scan was freed */
}

/* Indexes data with the fake codec as cfg says: the parser's reads, then cstream_finish. */
static int index_data(const struct codec *c, const uint8_t *data, size_t size, enum read_how how,
		      uint64_t *usize)
{
	struct src *in;
	struct cstream *cs = open_stream(c, data, size, &in);
	int err, perr;

	CHECK_EQ(src_size(cstream_src(cs)), SRC_SIZE_UNKNOWN);
	perr = parse(cstream_src(cs), data, size, how);
	*usize = 12345;
	err = cstream_finish(cs, usize);
	if (perr)
		CHECK_EQ(err, perr); /* the first error is sticky */
	if (err)
		CHECK_EQ(*usize, 0);
	else
		CHECK_EQ(cstream_pos(cs), *usize);
	close_stream(cs, in);
	return err;
}

/* ---- the tests ---- */

static uint8_t *test_data; /* 13 MiB of noise */
#define SIZE ((8u << 20) + 12345)

/* Chunks of every length around segment.h's rules, with refills of many sizes, checkpoints
 * emitted early or just in time, and reads that take every byte, skip, or none; with the
 * segments of sink.seg_shift. */
static void test_layouts(void)
{
	/* 7.5 segments of chunks, then the rest */
	const uint64_t S = (uint64_t)1 << seg_shift();
	const uint64_t lens[] = {S / 2 - 1, S / 2, S / 2 + 1, S, 1, S + S / 2 - 1, S + S / 2, 100,
				 2 * S + 1};
	static uint64_t around[16], small[2048], odd[8], one[1] = {0};
	struct {
		const uint64_t *ck;
		size_t n;
	} layouts[4] = {{one, 1}, {around, 0}, {small, 0}, {odd, 0}};
	static const size_t pieces[] = {0, 4096, 100000, 777777};
	uint64_t usize;

	for (uint64_t off = 0, i = 0;; off += lens[i++]) {
		around[layouts[1].n++] = off;
		if (i == sizeof(lens) / sizeof(lens[0]))
			break; /* the last one: the rest of the data */
	}
	for (uint64_t off = 0; off < SIZE && layouts[2].n < 2048; off += 4099 + off % 1000)
		small[layouts[2].n++] = off;
	for (uint64_t off = 0; off < SIZE; off += (1u << 20) + (1u << 20) * 3 / 10)
		odd[layouts[3].n++] = off;
	for (int l = 0; l < 4; l++)
		for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++)
			for (int how = READ_NONE; how <= READ_LARGE; how++) {
				/* under the sanitizers half the combinations (each layout still
				 * meets every piece size, each read kind two of them): 13 MiB
				 * indexed 128 times is most of the test's time there */
				if (TU_SANITIZED && (l + (int)p + how) % 2)
					continue;
				fake_config(layouts[l].ck, layouts[l].n);
				cfg.piece = pieces[p];
				cfg.ahead = (p + how) % 2 ? 3u << 20 : 0;
				CHECK_EQ(index_data(&fake, test_data, SIZE, how, &usize), 0);
				CHECK_EQ(usize, SIZE);
				check_all(test_data, usize);
				/* refills are large: each asks for at least half the buffer */
				CHECK(seen.min_ask >= 512u << 10);
			}
}

/* A segment size outside 64 KiB .. 1 MiB is refused. */
static void test_bad_seg_shift(void)
{
	static const uint64_t ck[] = {0};
	static const unsigned bad[] = {SEG_SHIFT_FINE - 1, SEG_SHIFT + 1, 40};
	struct src *in = src_from_mem(test_data, SIZE);
	struct cstream *cs = (struct cstream *)1;

	fake_config(ck, 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cstream_sink s = {.checkpoint = sink_ckpt, .seg_shift = bad[i]};
		CHECK_EQ(cstream_new(&fake, in, &opts, &s, &cs), -EINVAL);
		CHECK(cs == NULL);
	}
	src_free(in);
}

/* Back to back 512-byte reads cost a memcpy each: scan_read is called once per half buffer
 * at most, however small the reads. */
static void test_large_refills(void)
{
	static const uint64_t ck[] = {0};
	uint64_t usize;

	fake_config(ck, 1);
	CHECK_EQ(index_data(&fake, test_data, SIZE, READ_HEADERS, &usize), 0);
	CHECK(seen.reads <= SIZE / (512u << 10) + 2);
}

static ssize_t rd(struct src *s, uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len ? len : 1);
	ssize_t n = src_pread(s, buf, len, off);

	if (n > 0 && memcmp(buf, test_data + off, (size_t)n) != 0) {
		fprintf(stderr, "wrong bytes read at %llu\n", (unsigned long long)off);
		tu_failures++;
	}
	free(buf);
	return n;
}

/* The forward-only source: the first 512 KiB can be read again as long as no read went past
 * them; a read far behind is -ESPIPE (and the stream goes on); a read ahead skips, the bytes
 * in between still checksummed; the end reads short, then 0. */
static void test_forward(void)
{
	static const uint64_t ck[] = {0, 2u << 20, 4u << 20};
	static const size_t pieces[] = {0, 4096, 300000};

	for (size_t p = 0; p < 3; p++) {
		struct src *in;
		uint64_t usize;

		fake_config(ck, 3);
		cfg.piece = pieces[p];
		struct cstream *cs = open_stream(&fake, test_data, SIZE, &in);
		struct src *fwd = cstream_src(cs);
		CHECK_EQ(rd(fwd, 0, 512), 512);
		CHECK_EQ(rd(fwd, 0, 100), 100);
		for (uint64_t off = 512; off < 512u << 10; off += 512)
			CHECK_EQ(rd(fwd, off, 512), 512);
		CHECK_EQ(rd(fwd, 0, 512), 512); /* the head again: still there */
		CHECK_EQ(rd(fwd, 300000, (512u << 10) - 300000), (512u << 10) - 300000);
		CHECK_EQ(rd(fwd, 3u << 20, 4096), 4096); /* ahead: 0.5 .. 3 MiB skipped */
		CHECK_EQ(rd(fwd, 0, 512), -ESPIPE);
		CHECK_EQ(rd(fwd, (2u << 20) - 1, 2), -ESPIPE); /* behind by more than the buffer */
		CHECK_EQ(rd(fwd, (3u << 20) + 4096, 512), 512); /* not sticky */
		CHECK_EQ(cstream_pos(cs) >= (3u << 20) + 4096 + 512, 1);
		CHECK_EQ(rd(fwd, SIZE - 100, 512), 100); /* the end: short */
		CHECK_EQ(rd(fwd, SIZE, 512), 0);
		CHECK_EQ(rd(fwd, SIZE + 5000, 512), 0);
		CHECK_EQ(cstream_pos(cs), SIZE);
		CHECK_EQ(cstream_finish(cs, &usize), 0);
		CHECK_EQ(usize, SIZE);
		check_all(test_data, usize); /* skipped bytes were checksummed too */
		CHECK_EQ(cstream_verified(cs), SIZE);
		CHECK(cstream_name(cs) && strcmp(cstream_name(cs), "fake-name") == 0);
		close_stream(cs, in);
	}
}

/* cstream_finish's cases: empty streams, checkpoints at the very end (dropped), checkpoints
 * at one offset (the later one replaces the earlier: no empty chunk is stored). */
static void test_finish(void)
{
	static const uint64_t zero[] = {0}, at_end[] = {0, 1u << 20, SIZE, SIZE};
	static const uint64_t dup[] = {0, 0, 2u << 20, 2u << 20, 2u << 20, 5u << 20};
	static const size_t dup_which[] = {1, 4, 5};
	uint64_t usize;

	fake_config(zero, 1); /* no test_data, one checkpoint: stored, empty */
	CHECK_EQ(index_data(&fake, test_data, 0, READ_HEADERS, &usize), 0);
	CHECK_EQ(usize, 0);
	check_all(test_data, 0);
	CHECK_EQ(sunk.n ? sunk.e[0].ncrcs : 99, 0);

	fake_config(NULL, 0); /* no test_data, no checkpoint: nothing stored */
	CHECK_EQ(index_data(&fake, test_data, 0, READ_NONE, &usize), 0);
	CHECK_EQ(usize, 0);
	CHECK_EQ(sunk.n, 0);

	fake_config(at_end, 4);
	CHECK_EQ(index_data(&fake, test_data, SIZE, READ_SKIPS, &usize), 0);
	CHECK_EQ(usize, SIZE);
	check_index(test_data, SIZE, (const size_t[]){0, 1}, 2);

	for (int ahead = 0; ahead < 2; ahead++) {
		fake_config(dup, 6);
		cfg.ahead = ahead ? 8u << 20 : 0;
		CHECK_EQ(index_data(&fake, test_data, SIZE, READ_LARGE, &usize), 0);
		check_index(test_data, SIZE, dup_which, 3);
	}

	/* one byte */
	fake_config(zero, 1);
	CHECK_EQ(index_data(&fake, test_data, 1, READ_HEADERS, &usize), 0);
	CHECK_EQ(usize, 1);
	check_all(test_data, 1);
}

/* A sink error stops the stream: the read that needed the failing checkpoint stored returns
 * it, so do all later reads and cstream_finish; the sink is not called again and nothing more
 * is decoded. */
static void test_sink_error(void)
{
	static const uint64_t ck[] = {0, 1000000, 2000000, 3000000, 4000000, 5000000};
	uint64_t usize;

	for (int how = READ_NONE; how <= READ_LARGE; how++) {
		struct src *in;
		uint8_t buf[512];

		fake_config(ck, 6);
		cfg.piece = 100000;
		struct cstream *cs = open_stream(&fake, test_data, SIZE, &in);
		sunk.fail_idx = 2;
		sunk.fail_err = -ENOSPC;
		CHECK_EQ(parse(cstream_src(cs), test_data, SIZE, how), how == READ_NONE ? 0 : -ENOSPC);
		/* a skip to the end decodes through checkpoint 3 as well */
		CHECK_EQ(src_pread(cstream_src(cs), buf, sizeof(buf), SIZE - 512), -ENOSPC);
		unsigned reads = seen.reads;
		CHECK_EQ(src_pread(cstream_src(cs), buf, sizeof(buf), SIZE - 512), -ENOSPC);
		usize = 777;
		CHECK_EQ(cstream_finish(cs, &usize), -ENOSPC);
		CHECK_EQ(usize, 0);
		CHECK_EQ(cstream_finish(cs, &usize), -ENOSPC);
		CHECK_EQ(sunk.n, 3);	      /* 0, 1 and the failing 2 */
		CHECK_EQ(seen.reads, reads); /* nothing decoded after the error */
		/* what was decoded stopped at the refill that reached checkpoint 3 */
		CHECK(cstream_pos(cs) >= ck[3] && cstream_pos(cs) <= ck[3] + 100000);
		check_index(test_data, ck[3], (const size_t[]){0, 1, 2}, 3);
		close_stream(cs, in);
	}

	/* the last checkpoint is stored by cstream_finish: its error is finish's */
	struct src *in;
	fake_config(ck, 2);
	struct cstream *cs = open_stream(&fake, test_data, 1500000, &in);
	sunk.fail_idx = 1;
	sunk.fail_err = -EIO;
	CHECK_EQ(parse(cstream_src(cs), test_data, 1500000, READ_HEADERS), 0);
	CHECK_EQ(cstream_finish(cs, &usize), -EIO);
	CHECK_EQ(usize, 0);
	CHECK_EQ(sunk.n, 2);
	close_stream(cs, in);
}

/* A codec's errors: scan_new failing, data before the first checkpoint, checkpoints out of
 * order or after their data (internal errors, logged): -EIO, never a wrong index. */
static void test_codec_errors(void)
{
	static const uint64_t late[] = {100};
	static const uint64_t back[] = {0, 2u << 20, 1u << 20};
	static const uint64_t ck[] = {0, 1u << 20, 3u << 20};
	struct src *in = src_from_mem(test_data, SIZE);
	struct cstream *cs = (struct cstream *)in; /* must be cleared */
	int level = tfs_log_level;
	unsigned long logged;
	uint64_t usize;

	fake_config(ck, 3);
	cfg.new_err = -ENOMEM;
	CHECK_EQ(cstream_new(&fake, in, &opts, &sink, &cs), -ENOMEM);
	CHECK(cs == NULL);
	cstream_free(NULL);
	src_free(in);

	tfs_log_level = TFS_LOG_ERR - 1; /* expected errors: counted, not shown */
	logged = tfs_log_count(TFS_LOG_ERR);
	fake_config(late, 1);
	CHECK_EQ(index_data(&fake, test_data, SIZE, READ_HEADERS, &usize), -EIO);
	CHECK_EQ(sunk.n, 0);
	CHECK_EQ(tfs_log_count(TFS_LOG_ERR), logged + 1);

	fake_config(back, 3);
	cfg.ahead = 4u << 20;
	CHECK_EQ(index_data(&fake, test_data, SIZE, READ_LARGE, &usize), -EIO);
	CHECK_EQ(sunk.n, 0); /* refused before chunk 0 was done */
	CHECK_EQ(tfs_log_count(TFS_LOG_ERR), logged + 2);

	fake_config(ck, 3);
	cfg.late = true;
	cfg.piece = 4096;
	CHECK_EQ(index_data(&fake, test_data, SIZE, READ_NONE, &usize), -EIO);
	CHECK_EQ(sunk.n, 0);
	CHECK_EQ(tfs_log_count(TFS_LOG_ERR), logged + 3);
	tfs_log_level = level;

	/* a codec without scan_name and scan_verified */
	fake_config(ck, 3);
	cs = open_stream(&bare, test_data, SIZE, &in);
	CHECK(cstream_name(cs) == NULL);
	CHECK_EQ(cstream_verified(cs), 0);
	CHECK_EQ(cstream_finish(cs, &usize), 0);
	CHECK_EQ(usize, SIZE);
	check_all(test_data, SIZE);
	close_stream(cs, in);
}

/* Where a salvage may cut the chunk at U that the error fell in: at a whole segment or at the
 * end of a scan_read call after U (the stream keeps the CRC state there), the last such point
 * at or before limit (held within U .. what was decoded). */
static uint64_t expected_cut(uint64_t U, uint64_t decoded, uint64_t limit)
{
	uint64_t cut;

	if (limit > decoded)
		limit = decoded;
	if (limit < U)
		limit = U;
	cut = U + (((limit - U) >> seg_shift()) << seg_shift());
	for (size_t i = 0; i < seen.nends; i++)
		if (seen.ends[i] > U && seen.ends[i] <= limit && seen.ends[i] > cut)
			cut = seen.ends[i];
	return cut;
}

/* Decodes until the damage at fail_at (the parser's reads, then finish: -EIO), salvages at
 * limit (UINT64_MAX: the codec's verified offset) and checks what the index keeps. */
static void salvage_case(uint64_t fail_at, uint64_t limit, enum read_how how)
{
	static const uint64_t ck[] = {0, 4u << 20, 8u << 20};
	size_t size = (12u << 20) + 777;
	struct src *in;
	uint64_t usize = 1;

	fake_config(ck, 3);
	cfg.piece = 100000;
	cfg.member = 2411724; /* 2.3 MiB: verified at 2.3, 4.6, 6.9, 9.2 MiB */
	cfg.fail_at = fail_at;
	struct cstream *cs = open_stream(&fake, test_data, size, &in);
	int err = parse(cstream_src(cs), test_data, size, how);
	CHECK_EQ(err, how == READ_NONE ? 0 : -EIO);
	CHECK_EQ(cstream_finish(cs, &usize), -EIO);
	uint8_t byte;
	CHECK_EQ(src_pread(cstream_src(cs), &byte, 1, fail_at), -EIO); /* sticky */
	uint64_t decoded = cstream_pos(cs), verified = cstream_verified(cs);
	CHECK_EQ(decoded, fail_at);
	CHECK_EQ(verified, fail_at - fail_at % cfg.member);
	if (limit == UINT64_MAX)
		limit = verified;
	size_t before = sunk.n; /* the chunks finished before the damage */
	size_t cur = 0;
	while (cur + 1 < 3 && ck[cur + 1] < decoded)
		cur++;
	CHECK_EQ(before, cur);
	uint64_t U = ck[cur], cut = expected_cut(U, decoded, limit);
	CHECK_EQ(cstream_salvage(cs, limit, &usize), 0);
	CHECK_EQ(usize, cut);
	if (cut > U) { /* the chunk at U is kept up to cut: its CRCs describe exactly that */
		size_t which[] = {0, 1, 2};
		check_index(test_data, cut, which, cur + 1);
	} else {
		CHECK_EQ(sunk.n, before);
	}
	if (limit >= U && limit <= decoded)
		CHECK(usize <= limit); /* at or before limit ... */
	else if (limit < U)
		CHECK_EQ(usize, U); /* ... unless checkpoints past it were stored already */
	close_stream(cs, in);
}

static void test_salvage(void)
{
	const uint64_t U = 8u << 20, fail = 11744051; /* 11.2 MiB, in the chunk at 8 MiB */

	/* at the verified offset (a member's end, 9.2 MiB): exactly there */
	salvage_case(fail, UINT64_MAX, READ_HEADERS);
	CHECK_EQ(sunk.n, 3);
	CHECK_EQ(sunk.n == 3 ? sunk.e[2].ck.ulen : 0, 4 * 2411724 - U);
	salvage_case(fail, UINT64_MAX, READ_NONE);
	salvage_case(fail, UINT64_MAX, READ_SKIPS);
	/* every kind of limit: the chunk's start, segment boundaries, refill ends, past them */
	const int64_t S = (int64_t)1 << seg_shift();
	const int64_t limits[] = {0, -1, 1, S - 1, S, S + 1, S + 50000, 2 * S + 99999,
				  2 * S + 100000};
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		salvage_case(fail, (uint64_t)((int64_t)U + limits[i]), READ_LARGE);
	salvage_case(fail, fail - 1, READ_HEADERS);
	salvage_case(fail, fail, READ_HEADERS);
	salvage_case(fail, fail + 5000, READ_HEADERS); /* beyond what was decoded */
	salvage_case(fail, 0, READ_HEADERS);	       /* before the chunk: it goes */
	/* verified (6.9 MiB) before the chunk the error is in (8 MiB): that chunk goes, the
	 * ones stored stay */
	salvage_case((8u << 20) + 300000, UINT64_MAX, READ_HEADERS);
	CHECK_EQ(sunk.n, 2);
	/* in the first chunk, before any member ended: nothing is kept */
	salvage_case(50000, UINT64_MAX, READ_HEADERS);
	CHECK_EQ(sunk.n, 0);
	/* at the very start */
	salvage_case(0, UINT64_MAX, READ_HEADERS);
	CHECK_EQ(sunk.n, 0);
}

/* After the sink failed (index/build.c cannot tell its -EIO from a decode error, and salvages
 * on -EIO), cstream_salvage refuses with the sink's error: the index would otherwise cover a
 * chunk whose checkpoint was never stored. */
static void test_salvage_after_sink_error(void)
{
	static const uint64_t ck[] = {0, 1000000, 2000000, 3000000, 4000000, 5000000};
	struct src *in;
	uint64_t usize;

	fake_config(ck, 6);
	cfg.piece = 100000;
	struct cstream *cs = open_stream(&fake, test_data, SIZE, &in);
	sunk.fail_idx = 2;
	sunk.fail_err = -EIO; /* the store of checkpoint 2 failed */
	CHECK_EQ(parse(cstream_src(cs), test_data, SIZE, READ_HEADERS), -EIO);
	CHECK_EQ(cstream_finish(cs, &usize), -EIO); /* as index/build.c sees it: damage */
	int err = cstream_salvage(cs, cstream_verified(cs), &usize);
	CHECK_EQ(err, -EIO);
	CHECK_EQ(usize, 0);
	close_stream(cs, in);
}

int main(void)
{
	test_data = malloc(13u << 20);
	tu_watchdog(120);
	tu_fill(test_data, 13u << 20, 7, 0);
	test_layouts();
	sink.seg_shift = SEG_SHIFT_FINE;
	test_layouts();
	test_salvage();
	sink.seg_shift = 0;
	test_bad_seg_shift();
	test_large_refills();
	test_forward();
	test_finish();
	test_sink_error();
	test_codec_errors();
	test_salvage();
	test_salvage_after_sink_error();
	reset();
	free(test_data);
	return tu_exit();
}
