/* The .lzma codec (codecs/lzma1.c, LZMA_alone) on files made by `xz --format=lzma`: the probe
 * (no magic: what it takes and what it refuses), the scan's bytes against `xz -dc`, its one
 * checkpoint, a decoder from it in pieces of random sizes, trailing data, and damaged copies
 * (truncated, flipped bytes): never a wrong byte, -EIO at the end.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/codec.h"
#include "common/log.h"
#include "common/source.h"
#include "testutil.h"

static unsigned nckpt;

static int sink_fn(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	CHECK(c->uoff == 0 && c->coff == 0 && auxlen == 0);
	nckpt++;
	return 0;
}

static void quiet_log(int level, const char *msg, void *opaque)
{
	if (getenv("TEST_VERBOSE"))
		fprintf(stderr, "log %d: %s\n", level, msg);
}

/* Scans f; what it returns must be a prefix of data.  Returns the last result, *got the bytes. */
static ssize_t scan(const uint8_t *f, size_t flen, const uint8_t *data, size_t len, size_t *got)
{
	struct src *in = src_from_mem(f, flen);
	struct codec_sink sink = {.checkpoint = sink_fn};
	struct codec_opts o = {.threads = 1};
	struct codec_scan *s = NULL;
	static uint8_t buf[100000];
	ssize_t n = codec_lzma.scan_new(in, &o, &sink, &s);

	*got = 0;
	nckpt = 0;
	while (n == 0 || n > 0) {
		n = codec_lzma.scan_read(s, buf, 1 + (*got * 7) % sizeof(buf));
		if (n <= 0)
			break;
		CHECK(*got + (size_t)n <= len && memcmp(buf, data + *got, (size_t)n) == 0);
		*got += (size_t)n;
	}
	if (s)
		CHECK(codec_lzma.scan_verified(s) == *got);
	codec_lzma.scan_free(s);
	src_free(in);
	return n;
}

static ssize_t decode(const uint8_t *f, size_t flen, const uint8_t *data, size_t len, size_t *got)
{
	struct src *in = src_from_mem(f, flen);
	struct codec_ckpt ck = {0};
	struct codec_dec *d = NULL;
	static uint8_t buf[70000];
	ssize_t n = codec_lzma.dec_new(in, &ck, NULL, 0, &d);

	*got = 0;
	while (n == 0 || n > 0) {
		n = codec_lzma.dec_read(d, buf, 1 + (*got * 13) % sizeof(buf));
		if (n <= 0)
			break;
		CHECK(*got + (size_t)n <= len && memcmp(buf, data + *got, (size_t)n) == 0);
		*got += (size_t)n;
	}
	codec_lzma.dec_free(d);
	src_free(in);
	return n;
}

int main(void)
{
	size_t len = 2u << 20, flen, got;
	uint8_t *data = malloc(len), *f;

	if (!tu_have("xz"))
		return 77;
	tfs_log_set_sink(quiet_log, NULL);
	tu_fill(data, len / 2, 3, 1);
	tu_fill(data + len / 2, len - len / 2, 4, 0);

	/* the probe: files of every preset, and what is not .lzma */
	for (int level = 0; level <= 9; level += 3) {
		char cmd[64];
		snprintf(cmd, sizeof(cmd), "xz --format=lzma -%d -c", level);
		f = tu_pipe(cmd, data, 1000, &flen);
		CHECK(f && codec_probe(f, flen < 512 ? flen : 512) == &codec_lzma);
		free(f);
	}
	static const uint8_t not_lzma[][14] = {
	    {0x5d, 0, 0, 0x80, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}, /* byte 13 */
	    {0x5d, 0, 0, 0x81, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0}, /* dict */
	    {0xe1, 0, 0, 0x80, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0}, /* props */
	    {0x5d, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0},			     /* size */
	};
	for (size_t i = 0; i < sizeof(not_lzma) / sizeof(not_lzma[0]); i++)
		CHECK(!codec_lzma.probe(not_lzma[i], 14));
	CHECK(codec_lzma.probe((const uint8_t[]){0x5d, 0, 0, 0x80, 0, 0xff, 0xff, 0xff, 0xff, 0xff,
						 0xff, 0xff, 0xff, 0},
			       14));

	/* known size and unknown size (what xz writes from a pipe: the end marker ends the data) */
	f = tu_pipe("xz --format=lzma -6 -c", data, len, &flen);
	CHECK(f != NULL);
	CHECK_EQ(scan(f, flen, data, len, &got), 0);
	CHECK_EQ(got, len);
	CHECK_EQ(nckpt, 1);
	CHECK_EQ(decode(f, flen, data, len, &got), 0);
	CHECK_EQ(got, len);
	size_t glen;
	uint8_t *g = tu_pipe("cat | xz --format=lzma -1 -c", data, len, &glen);
	CHECK(g != NULL);
	CHECK_EQ(scan(g, glen, data, len, &got), 0);
	CHECK_EQ(got, len);

	/* trailing zeros and garbage: ignored (the notice is logged) */
	uint8_t *t = malloc(flen + 100);
	memcpy(t, f, flen);
	memset(t + flen, 0, 100);
	CHECK_EQ(scan(t, flen + 100, data, len, &got), 0);
	CHECK_EQ(got, len);
	memcpy(t + flen, "garbage", 7);
	CHECK_EQ(scan(t, flen + 100, data, len, &got), 0);
	CHECK_EQ(got, len);

	/* truncated: a prefix, then -EIO; flipped bytes: never a wrong byte (.lzma has no check:
	 * bytes after the damage may differ, which the index's segment CRCs catch, but the
	 * decoder must not crash or loop) */
	for (size_t cut = 0; cut < flen; cut += flen / 17 + 1) {
		ssize_t r = scan(f, cut, data, len, &got);
		CHECK(r == -EIO || (cut < 14 && r < 0));
		r = decode(f, cut, data, len, &got);
		CHECK(r == -EIO || (cut < 14 && r < 0));
	}
	for (size_t k = 1; k < 12; k++) {
		memcpy(t, f, flen);
		t[flen * k / 12] ^= 0x40;
		struct src *in = src_from_mem(t, flen);
		struct codec_sink sink = {.checkpoint = sink_fn};
		struct codec_scan *s = NULL;
		static uint8_t buf[65536];
		if (codec_lzma.scan_new(in, NULL, &sink, &s) == 0) {
			ssize_t n;
			size_t total = 0;
			while ((n = codec_lzma.scan_read(s, buf, sizeof(buf))) > 0)
				total += (size_t)n;
			CHECK(n == 0 || n == -EIO);
			CHECK(total <= len + (1u << 20) || n == -EIO);
		}
		codec_lzma.scan_free(s);
		src_free(in);
	}
	free(t);
	free(g);
	free(f);
	free(data);
	return tu_exit();
}
