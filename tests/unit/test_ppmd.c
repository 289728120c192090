/* PPMd var.H (codecs/ppmd/ppmd7.c): streams 7zz writes at test time (`7zz a -m0=PPMd:o=N:mem=M
 * -mhc=off`, one file, so the packed stream is the archive's bytes 32 .. 32 + the next
 * header's offset) decode to the file's bytes, in one call and in small feed/take pieces;
 * orders 2, 6, 16 and 32 (7zz writes none higher; the format allows 64), memory sizes from 64 KiB
 * (the model restarts many times) to 16 MiB, text and noise.  Damaged copies: every truncation of a
 * small stream gives PPMD7_BAD; a flipped byte anywhere gives PPMD7_BAD or other bytes (which the
 * 7z CRC catches) or the range coder not ending cleanly, and every call returns (a bounded loop).
 * Properties out of bounds are refused.  Skips (77) without 7zz.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/ppmd/ppmd7.h"
#include "testutil.h"

struct stream {
	uint8_t *arc; /* the archive (owns) */
	const uint8_t *p;
	size_t len;
	unsigned order;
	uint32_t mem;
};

/* 7zz's archive of data; false if 7zz failed. */
static bool make_stream(const uint8_t *data, size_t len, unsigned order, const char *mem,
			struct stream *s)
{
	char cmd[512];
	size_t alen;
	uint64_t next = 0;
	const char *why;

	memset(s, 0, sizeof(*s));
	snprintf(cmd, sizeof(cmd),
		 "d=$(mktemp -d) && cat > $d/f && 7zz a -m0=PPMd:o=%u:mem=%s -mhc=off $d/a.7z $d/f "
		 ">/dev/null && cat $d/a.7z; r=$?; rm -rf $d; exit $r",
		 order, mem);
	s->arc = tu_pipe(cmd, data, len, &alen);
	if (!s->arc || alen < 32)
		return false;
	for (int i = 7; i >= 0; i--)
		next = next << 8 | s->arc[12 + i];
	if (next > alen - 32)
		return false;
	s->p = s->arc + 32;
	s->len = (size_t)next;
	/* the properties: the coder record's 5 bytes after the id 03 04 01 and their size 05 */
	for (size_t i = 32 + s->len; i + 9 <= alen; i++)
		if (memcmp(s->arc + i, "\x03\x04\x01\x05", 4) == 0) {
			CHECK_EQ(ppmd7_props(s->arc + i + 4, 5, &s->order, &s->mem, &why), 0);
			CHECK_EQ(s->order, order);
			return true;
		}
	return false;
}

/* Decodes s into out (want bytes) feeding at most feed and taking at most take bytes a call.
 * Returns PPMD7_MORE when want bytes came and the coder finished cleanly, else PPMD7_BAD or
 * PPMD7_END; *got the bytes decoded. */
static int decode(const struct stream *s, const uint8_t *in, size_t inlen, uint8_t *out,
		  size_t want, size_t feed, size_t take, size_t *got)
{
	struct ppmd7 *d;
	size_t pos = 0, n = 0;
	int ret = PPMD7_MORE, guard = 0;

	*got = 0;
	if (ppmd7_new(s->order, s->mem, &d))
		return PPMD7_BAD;
	while (n < want) {
		size_t g, f = inlen - pos < feed ? inlen - pos : feed;
		size_t t = want - n < take ? want - n : take;

		pos += ppmd7_feed(d, in + pos, f);
		if (pos == inlen)
			ppmd7_input_end(d);
		ret = ppmd7_out(d, out + n, t, &g);
		n += g;
		if (ret != PPMD7_MORE)
			break;
		if (g == 0 && pos == inlen && ++guard > 4) /* all fed, nothing comes: a hang */
			break;
	}
	*got = n;
	if (ret == PPMD7_MORE && n == want &&
	    !(ppmd7_finished(d) && pos == inlen && ppmd7_unused(d) == 0))
		ret = PPMD7_BAD;
	if (ret == PPMD7_MORE && n < want)
		ret = PPMD7_BAD;
	ppmd7_free(d);
	return ret;
}

static void check_roundtrip(const uint8_t *data, size_t len, unsigned order, const char *mem)
{
	struct stream s;
	uint8_t *out = malloc(len + 1);
	size_t got;
	int ret;

	if (!make_stream(data, len, order, mem, &s)) {
		fprintf(stderr, "7zz failed (order %u, mem %s)\n", order, mem);
		CHECK(0);
		goto out;
	}
	ret = decode(&s, s.p, s.len, out, len, (size_t)1 << 20, (size_t)1 << 20, &got);
	CHECK_EQ(ret, PPMD7_MORE);
	CHECK_EQ(got, len);
	CHECK(memcmp(out, data, len) == 0);
	if (len <= 300000) { /* small pieces: 1..7 bytes fed, 1..13 taken */
		memset(out, 0, len);
		ret = decode(&s, s.p, s.len, out, len, 7, 13, &got);
		CHECK_EQ(ret, PPMD7_MORE);
		CHECK(got == len && memcmp(out, data, len) == 0);
	}
	if (tu_failures)
		fprintf(stderr, "  (order %u, mem %s, %zu bytes, stream %zu)\n", order, mem, len,
			s.len);
out:
	free(out);
	free(s.arc);
}

/* Every truncation fails; flipped bytes fail or differ; nothing hangs. */
static void check_damage(const uint8_t *data, size_t len)
{
	struct stream s;
	uint8_t *out = malloc(len + 1), *bad;
	size_t got;

	if (!make_stream(data, len, 6, "1m", &s)) {
		CHECK(0);
		free(out);
		return;
	}
	bad = malloc(s.len);
	for (size_t cut = 0; cut < s.len; cut += 1 + cut / 64) {
		int ret = decode(&s, s.p, cut, out, len, 4096, 4096, &got);

		CHECK(ret == PPMD7_BAD || ret == PPMD7_END);
	}
	for (size_t i = 0; i < s.len; i += 1 + i / 32) {
		int ret;

		memcpy(bad, s.p, s.len);
		bad[i] ^= (uint8_t)(1u << (i % 8));
		ret = decode(&s, bad, s.len, out, len, 4096, 4096, &got);
		CHECK(ret != PPMD7_MORE || memcmp(out, data, len) != 0);
	}
	free(bad);
	free(out);
	free(s.arc);
}

static void check_props(void)
{
	const uint8_t ok[5] = {6, 0, 0, 0, 1}, small[5] = {6, 0, 1, 0, 0}, o1[5] = {1, 0, 0, 0, 1},
		      o65[5] = {65, 0, 0, 0, 1}, big[5] = {6, 1, 0, 0, 0x80};
	unsigned order;
	uint32_t mem;
	const char *why;
	struct ppmd7 *d = (struct ppmd7 *)&order;

	CHECK_EQ(ppmd7_props(ok, 5, &order, &mem, &why), 0);
	CHECK(order == 6 && mem == 16u << 20);
	CHECK_EQ(ppmd7_props(ok, 4, &order, &mem, &why), -EINVAL);
	CHECK_EQ(ppmd7_props(small, 5, &order, &mem, &why), -EINVAL);
	CHECK_EQ(ppmd7_props(o1, 5, &order, &mem, &why), -EINVAL);
	CHECK_EQ(ppmd7_props(o65, 5, &order, &mem, &why), -EINVAL);
	CHECK_EQ(ppmd7_props(big, 5, &order, &mem, &why), -EINVAL);
	CHECK_EQ(ppmd7_new(6, PPMD7_MEM_MAX + 1u, &d), -EINVAL);
	CHECK(d == NULL);
	ppmd7_free(NULL);
}

int main(void)
{
	size_t big = (size_t)3 << 20;
	uint8_t *text = malloc(big), *noise = malloc(200000);

	check_props();
	if (!tu_have("7zz")) {
		free(text);
		free(noise);
		return 77;
	}
	tu_fill(text, big, 38, 1);
	tu_fill(noise, 200000, 39, 0);
	check_roundtrip(text, 1, 6, "16m");
	check_roundtrip(text, 100000, 2, "1m");
	check_roundtrip(text, 200000, 6, "16m");
	check_roundtrip(text, 200000, 16, "64k");
	check_roundtrip(text, 200000, 32, "2m"); /* 7zz writes no order above 32 */
	check_roundtrip(noise, 200000, 6, "1m");
	check_roundtrip(noise, 200000, 32, "64k");
	check_roundtrip(text, big, 6, "16m");
	check_roundtrip(text, big, 8, "256k"); /* restarts, glue, units from the text area */
	check_damage(text, 50000);
	free(text);
	free(noise);
	return tu_exit();
}
