/* PPMd var.I (codecs/ppmd/ppmd8.c) and the ppmd-zip codec: zip entries 7zz writes at test time
 * (`7zz a -tzip -mm=PPMd -mx=L -mo=N -mmem=M`, one file; the entry's data cut out through
 * the central directory) decode to the file's bytes, in one call and in pieces of varying
 * sizes.  7-Zip's zip encoder chooses the restore method from the level: restart below -mx=7,
 * cut-off from 7 up (checked in the parameters); 1 MiB of memory and a few MiB of input make
 * the model run out many times (restarts, cut-offs, glue, units from the text area).  It also
 * shrinks the memory to fit a small input, so only big inputs keep a small -mmem, and stores
 * an entry that PPMd would not shrink (the noise here has 200 symbols).  It ends the data
 * with an end marker (checked: one symbol past the size is PPMD8_END).
 *
 * Damaged copies: every truncation gives PPMD8_BAD; a flipped byte gives PPMD8_BAD, other
 * bytes (the zip's CRC catches them) or a range coder that does not end cleanly, and every
 * call returns.  The codec: the entry's bytes, then 0; -EIO for a truncated entry, a size
 * one more or one less than the stream's, damaged parameters.  Skips (77) without 7zz.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/codec.h"
#include "codecs/ppmd/ppmd8.h"
#include "common/byteio.h"
#include "testutil.h"

struct entry {
	uint8_t *arc;	  /* the zip (owns) */
	const uint8_t *p; /* the entry's data: 2 parameter bytes, then the stream */
	size_t len;
	unsigned order, restore;
	uint32_t mem;
};

/* 7zz's zip of data; false if 7zz failed or wrote no PPMd entry. */
static bool make_entry(const uint8_t *data, size_t len, unsigned level, unsigned order,
		       const char *mem, struct entry *e)
{
	char cmd[512];
	size_t alen, cd, lho;
	const char *why;

	memset(e, 0, sizeof(*e));
	snprintf(cmd, sizeof(cmd),
		 "d=$(mktemp -d) && cat > $d/f && (cd $d && 7zz a -tzip -mm=PPMd -mx=%u -mo=%u "
		 "-mmem=%s a.zip f >/dev/null) && cat $d/a.zip; r=$?; rm -rf $d; exit $r",
		 level, order, mem);
	e->arc = tu_pipe(cmd, data, len, &alen);
	if (!e->arc || alen < 22 + 46 + 30 || le32(e->arc + alen - 22) != 0x06054b50)
		return false;
	cd = le32(e->arc + alen - 22 + 16);
	if (cd + 46 > alen || le32(e->arc + cd) != 0x02014b50 || le16(e->arc + cd + 10) != 98)
		return false;
	e->len = le32(e->arc + cd + 20);
	lho = le32(e->arc + cd + 42);
	if (lho + 30 > alen)
		return false;
	lho += 30 + le16(e->arc + lho + 26) + le16(e->arc + lho + 28);
	if (lho + e->len > alen || e->len < 2 || le32(e->arc + cd + 24) != len)
		return false;
	e->p = e->arc + lho;
	CHECK_EQ(ppmd8_props(e->p, &e->order, &e->mem, &e->restore, &why), 0);
	CHECK_EQ(e->order, order);
	CHECK_EQ(e->restore, level >= 7 ? (unsigned)PPMD8_CUT_OFF : (unsigned)PPMD8_RESTART);
	return true;
}

/* Decodes stream in (after the parameters) into out, want bytes, feeding and taking bytes in
 * pieces that vary with the call: feed[k % nfeed], take[k % ntake].  PPMD8_MORE when want
 * bytes came and the coder finished cleanly with at most its 4 flush bytes left, else
 * PPMD8_BAD or PPMD8_END; *got the bytes decoded. */
static int decode(const struct entry *e, const uint8_t *in, size_t inlen, uint8_t *out, size_t want,
		  const size_t *feed, size_t nfeed, const size_t *take, size_t ntake, size_t *got)
{
	struct ppmd8 *d;
	size_t pos = 0, n = 0, k = 0;
	int ret = PPMD8_MORE, guard = 0;

	*got = 0;
	if (ppmd8_new(e->order, e->mem, e->restore, &d))
		return PPMD8_BAD;
	while (n < want) {
		size_t g, f = feed[k % nfeed], t = take[k % ntake];

		k++;
		f = inlen - pos < f ? inlen - pos : f;
		t = want - n < t ? want - n : t;
		pos += ppmd8_feed(d, in + pos, f);
		if (pos == inlen)
			ppmd8_input_end(d);
		ret = ppmd8_out(d, out + n, t, &g);
		n += g;
		if (ret != PPMD8_MORE)
			break;
		if (g == 0 && pos == inlen && ++guard > 4) /* all fed, nothing comes: a hang */
			break;
	}
	*got = n;
	if (ret == PPMD8_MORE && n == want &&
	    !(ppmd8_finished(d) && pos == inlen && ppmd8_unused(d) <= 4))
		ret = PPMD8_BAD;
	if (ret == PPMD8_MORE && n < want)
		ret = PPMD8_BAD;
	ppmd8_free(d);
	return ret;
}

static const size_t whole[] = {(size_t)1 << 20};
static const size_t small_feed[] = {7, 1, 300, 2, 4096, 13};
static const size_t small_take[] = {13, 1, 5000, 3, 64, 777, 2};

/* The codec over the entry, its size usize: the data's bytes then 0, or the first error. */
static ssize_t codec_read(const uint8_t *p, size_t len, uint64_t usize, uint8_t *out, size_t cap,
			  size_t *got)
{
	uint8_t size[8];
	struct codec_opts o = {.threads = 1, .params = size, .params_len = sizeof(size)};
	struct codec_sink sink = {.checkpoint = NULL};
	struct src *in = src_from_mem(p, len);
	struct codec_scan *s = NULL;
	ssize_t n;

	*got = 0;
	put_le64(size, usize);
	n = in ? codec_ppmd_zip.scan_new(in, &o, &sink, &s) : -ENOMEM;
	while (n == 0) {
		n = codec_ppmd_zip.scan_read(s, out + *got,
					     cap - *got > 70000 ? 70000 : cap - *got);
		if (n > 0) {
			*got += (size_t)n;
			n = *got < cap ? 0 : -ENOSPC;
		} else {
			break;
		}
	}
	codec_ppmd_zip.scan_free(s);
	src_free(in);
	return n;
}

static void check_roundtrip(const uint8_t *data, size_t len, unsigned level, unsigned order,
			    const char *mem)
{
	struct entry e;
	uint8_t *out = malloc(len + 2);
	size_t got;
	int ret;

	if (!make_entry(data, len, level, order, mem, &e)) {
		fprintf(stderr, "7zz failed (-mx=%u order %u, mem %s)\n", level, order, mem);
		CHECK(0);
		goto out;
	}
	ret = decode(&e, e.p + 2, e.len - 2, out, len, whole, 1, whole, 1, &got);
	CHECK_EQ(ret, PPMD8_MORE);
	CHECK_EQ(got, len);
	CHECK(memcmp(out, data, len) == 0);
	if (len <= 400000) { /* pieces of 1 byte to 5000 */
		memset(out, 0, len);
		ret = decode(&e, e.p + 2, e.len - 2, out, len, small_feed, 6, small_take, 7, &got);
		CHECK_EQ(ret, PPMD8_MORE);
		CHECK(got == len && memcmp(out, data, len) == 0);
	}
	/* Under the sanitizers a stream of megabytes is decoded once (seconds there, each): its
	 * restarts and cut-offs are the point; the end marker and codec_read are checked on the
	 * smaller ones. */
	if (TU_SANITIZED && len > 400000)
		goto out;
	/* 7-Zip ends the data with an end marker: one symbol more is PPMD8_END */
	ret = decode(&e, e.p + 2, e.len - 2, out, len + 1, whole, 1, whole, 1, &got);
	CHECK_EQ(ret, PPMD8_END);
	CHECK_EQ(got, len);
	memset(out, 0, len);
	CHECK_EQ(codec_read(e.p, e.len, len, out, len + 2, &got), 0);
	CHECK(got == len && memcmp(out, data, len) == 0);
	if (tu_failures)
		fprintf(stderr, "  (-mx=%u, order %u, mem %s, %zu bytes, stream %zu)\n", level,
			order, mem, len, e.len);
out:
	free(out);
	free(e.arc);
}

/* Every truncation fails; flipped bytes fail or differ; nothing hangs; the codec says EIO. */
static void check_damage(const uint8_t *data, size_t len, unsigned level)
{
	struct entry e;
	uint8_t *out = malloc(len + 2), *bad;
	size_t got;

	if (!make_entry(data, len, level, 6, "1m", &e)) {
		CHECK(0);
		free(out);
		return;
	}
	bad = malloc(e.len);
	for (size_t cut = 2; cut < e.len; cut += 1 + cut / 64) {
		int ret = decode(&e, e.p + 2, cut - 2, out, len, whole, 1, whole, 1, &got);

		CHECK(ret == PPMD8_BAD || ret == PPMD8_END);
		CHECK_EQ(codec_read(e.p, cut, len, out, len + 2, &got), -EIO);
	}
	for (size_t i = 2; i < e.len; i += 1 + i / 32) {
		int ret;

		memcpy(bad, e.p, e.len);
		bad[i] ^= (uint8_t)(1u << (i % 8));
		ret = decode(&e, bad + 2, e.len - 2, out, len, small_feed, 6, whole, 1, &got);
		CHECK(ret != PPMD8_MORE || memcmp(out, data, len) != 0);
	}
	/* the size: one more, one less than the stream's */
	CHECK_EQ(codec_read(e.p, e.len, len + 1, out, len + 2, &got), -EIO);
	CHECK_EQ(got, len);
	CHECK_EQ(codec_read(e.p, e.len, len - 1, out, len + 2, &got), -EIO);
	/* bytes after the flush */
	memcpy(bad, e.p, e.len);
	{
		uint8_t *more = malloc(e.len + 8);

		memcpy(more, e.p, e.len);
		memset(more + e.len, 0x5A, 8);
		CHECK_EQ(codec_read(more, e.len + 8, len, out, len + 2, &got), -EIO);
		free(more);
	}
	/* damaged parameters: order 1, the freeze method, no parameters at all */
	bad[0] = 0x00;
	CHECK_EQ(codec_read(bad, e.len, len, out, len + 2, &got), -EIO);
	bad[0] = e.p[0];
	bad[1] = (uint8_t)(e.p[1] | 0x20);
	CHECK_EQ(codec_read(bad, e.len, len, out, len + 2, &got), -EIO);
	CHECK_EQ(codec_read(bad, 1, len, out, len + 2, &got), -EIO);
	free(bad);
	free(out);
	free(e.arc);
}

static void check_props(void)
{
	const uint8_t o6m16[2] = {0x05 | 0xF0, 0x00}, o16m256cut[2] = {0xFF, 0x1F},
		      o1[2] = {0x00, 0x00}, freeze[2] = {0x05, 0x20}, m15[2] = {0x05, 0xF0};
	unsigned order, restore;
	uint32_t mem;
	const char *why;
	struct ppmd8 *d = (struct ppmd8 *)&order;

	CHECK_EQ(ppmd8_props(o6m16, &order, &mem, &restore, &why), 0);
	CHECK(order == 6 && mem == 16u << 20 && restore == PPMD8_RESTART);
	CHECK_EQ(ppmd8_props(o16m256cut, &order, &mem, &restore, &why), 0);
	CHECK(order == 16 && mem == 256u << 20 && restore == PPMD8_CUT_OFF);
	CHECK_EQ(ppmd8_props(o1, &order, &mem, &restore, &why), -EINVAL);
	CHECK_EQ(ppmd8_props(freeze, &order, &mem, &restore, &why), -EINVAL);
	CHECK_EQ(ppmd8_props(m15, &order, &mem, &restore, &why), -EINVAL);
	CHECK_EQ(ppmd8_new(6, PPMD8_MEM_MAX + 1u, 0, &d), -EINVAL);
	CHECK(d == NULL);
	CHECK_EQ(ppmd8_new(17, 1u << 20, 0, &d), -EINVAL);
	CHECK_EQ(ppmd8_new(6, 1u << 20, 2, &d), -EINVAL);
	ppmd8_free(NULL);
}

int main(void)
{
	size_t big = (size_t)3 << 20;
	uint8_t *text = malloc(big), *noise = malloc(200000), *mixed = malloc(big);

	check_props();
	if (!tu_have("7zz")) {
		free(text);
		free(noise);
		free(mixed);
		return 77;
	}
	tu_fill(text, big, 48, 1);
	tu_fill(noise, 200000, 49, 0);
	for (size_t i = 0; i < 200000; i++) /* 200 symbols: PPMd gains a little, 7zz keeps it */
		noise[i] %= 200;
	for (size_t i = 0; i < big; i++) /* text with a noisy byte in 7 */
		mixed[i] = i % 7 ? text[(i * 31) % big] : (uint8_t)(i * 2654435761u >> 13);
	check_roundtrip(text, 300, 5, 6, "16m"); /* 7zz stores what PPMd would not shrink */
	check_roundtrip(text, 100000, 5, 2, "1m");
	check_roundtrip(text, 200000, 5, 6, "16m");
	check_roundtrip(text, 200000, 9, 16, "1m");
	check_roundtrip(noise, 200000, 5, 6, "1m");
	check_roundtrip(mixed, 300000, 9, 12, "1m");
	check_roundtrip(text, big, 5, 8, "1m");	  /* restarts */
	check_roundtrip(text, big, 9, 12, "1m");  /* cut-offs */
	check_roundtrip(mixed, big, 7, 16, "2m"); /* cut-offs, or restarts when half is free */
	check_roundtrip(mixed, big, 3, 4, "1m");
	/* 20000 bytes under the sanitizers: the same cuts and flips over a shorter stream (each
	 * decodes up to its cut, hundreds of them, slow there) */
	check_damage(text, TU_SANITIZED ? 20000 : 60000, 5);
	check_damage(mixed, TU_SANITIZED ? 20000 : 60000, 9);
	free(text);
	free(noise);
	free(mixed);
	return tu_exit();
}
