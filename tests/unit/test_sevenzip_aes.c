/* Unit tests of 7z archives encrypted with AES-256 (codecs/7z/sevenzip_aes.c, the AES node of
 * sevenzip_graph.c, the password choice of sevenzip_folder.c, the encoded header of
 * containers/7z/sza_coders.c), on archives made at test time by the real 7-Zip (7zz -p).
 *
 * Each archive is parsed with cont_7z.parse from memory; every stream it declares is decoded
 * whole with codec_7z's scan and again with a decoder from checkpoint 0, and every member's
 * bytes are compared with the file it was made from.  Passwords go into the keyring with
 * kr_add, as the options do: none (the folders refuse with -EACCES and log nothing: the reader
 * names the file), a wrong one, then the right one after a wrong one (tried in order; the
 * verdict is remembered).  Archives: LZMA2 (7-Zip's default), LZMA, Copy (no coder to fail:
 * the CRC decides), solid with several files and an empty one, encrypted headers (-mhe=on:
 * refused with a message naming --password without the password, read with it), a password
 * with non-ASCII letters (UTF-8 to UTF-16LE); decoders restarted at every checkpoint of an
 * encrypted LZMA2 folder of several blocks (with and without BCJ) and of a Copy folder.
 * Damage: flipped bytes in the encrypted data give an error, never other bytes.
 */
#include "codecs/codec.h"
#include "codecs/7z/sevenzip_aes.h"
#include "codecs/7z/sevenzip_chain.h"
#include "common/log.h"
#include "containers/container.h"
#include "crypto/keyring.h"
#include "sevenzip_fixtures.h"
#include "testutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long nlog[8];
static char last_err[512];

static void log_sink(int level, const char *msg, void *opaque)
{
	if (level >= 0 && level < 8)
		nlog[level]++;
	if (level <= TFS_LOG_ERR)
		snprintf(last_err, sizeof(last_err), "%s", msg);
	fprintf(stderr, "  [log %d] %s\n", level, msg);
}

/* ---- what the parser reports ---- */

#define MAXS 16
#define MAXM 32

struct rec {
	struct {
		uint64_t coff, clen, usize;
		uint8_t *params;
		size_t params_len;
		bool encrypted;
	} s[MAXS];
	size_t ns;
	struct {
		char path[128];
		uint64_t stream, off, size;
		int unreadable;
	} m[MAXM];
	size_t nm;
};

static int rec_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	struct rec *r = opaque;

	if (r->ns == MAXS)
		return -ENOSPC;
	r->s[r->ns].coff = s->coff;
	r->s[r->ns].clen = s->clen;
	r->s[r->ns].usize = s->usize;
	r->s[r->ns].params = malloc(s->params_len);
	memcpy(r->s[r->ns].params, s->params, s->params_len);
	r->s[r->ns].params_len = s->params_len;
	r->s[r->ns].encrypted = s->encrypted;
	*id = ++r->ns;
	return 0;
}

static int rec_member(void *opaque, const struct arc_member *m)
{
	struct rec *r = opaque;

	if (r->nm == MAXM)
		return -ENOSPC;
	snprintf(r->m[r->nm].path, sizeof(r->m[r->nm].path), "%.*s", (int)m->path_len,
		 (const char *)m->path);
	r->m[r->nm].stream = m->stream;
	r->m[r->nm].off = m->data_off;
	r->m[r->nm].size = m->size;
	r->m[r->nm].unreadable = m->unreadable;
	r->nm++;
	return 0;
}

static void rec_free(struct rec *r)
{
	for (size_t i = 0; i < r->ns; i++)
		free(r->s[i].params);
	memset(r, 0, sizeof(*r));
}

static int parse(const uint8_t *a, size_t len, struct rec *r)
{
	struct cont_sink sink = {.stream = rec_stream, .member = rec_member, .opaque = r};

	memset(r, 0, sizeof(*r));
	return sz7_parse(a, len, &sink);
}

/* ---- decoding ---- */

static int ck_sink(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	return 0;
}

/* Stream i of r decoded whole: with the scan (dec false) or a decoder from checkpoint 0 (the
 * coder part of the params is its aux).  0 and *out (usize bytes), or the -errno it failed
 * with. */
static int decode(const uint8_t *a, size_t alen, const struct rec *r, size_t i, bool dec,
		  uint8_t **out)
{
	struct src *file = src_from_mem(a, alen);
	struct src *win = src_window(file, r->s[i].coff, r->s[i].clen);
	struct codec_opts opts = {.spacing = 1 << 16, .threads = 1, .params = r->s[i].params,
				  .params_len = r->s[i].params_len};
	struct codec_sink sink = {.checkpoint = ck_sink};
	struct codec_scan *sc = NULL;
	struct codec_dec *d = NULL;
	uint8_t *buf = malloc(r->s[i].usize + 1);
	uint64_t got = 0;
	int err;

	*out = NULL;
	if (dec) {
		struct codec_ckpt ck = {0};
		struct szc_folder f;
		size_t clen;
		const char *why;

		CHECK_EQ(szc_parse(r->s[i].params, r->s[i].params_len, &f, &clen, &why), 0);
		uint8_t *aux = malloc(clen);
		memcpy(aux, r->s[i].params, clen);
		aux[24] &= (uint8_t)~SZC_F_SUBS;
		err = codec_7z.dec_new(win, &ck, aux, clen, &d);
		free(aux);
	} else {
		err = codec_7z.scan_new(win, &opts, &sink, &sc);
	}
	while (!err) {
		ssize_t n = dec ? codec_7z.dec_read(d, buf + got, r->s[i].usize + 1 - got)
				: codec_7z.scan_read(sc, buf + got, r->s[i].usize + 1 - got);
		if (n < 0)
			err = (int)n;
		else if (n == 0)
			break;
		else
			got += (uint64_t)n;
		if (got > r->s[i].usize)
			err = -E2BIG;
	}
	if (!err && got != r->s[i].usize)
		err = -EPIPE;
	if (sc)
		codec_7z.scan_free(sc);
	if (d)
		codec_7z.dec_free(d);
	src_free(win);
	src_free(file);
	if (err)
		free(buf);
	else
		*out = buf;
	return err;
}

/* The checkpoints a scan emits, and decoders started at each. */
struct cks {
	struct codec_ckpt c[64];
	uint8_t *aux[64];
	size_t auxlen[64], n;
};

static int ck_keep(void *opaque, const struct codec_ckpt *c, const void *aux, size_t auxlen)
{
	struct cks *k = opaque;

	if (k->n == 64)
		return 0;
	k->c[k->n] = *c;
	k->aux[k->n] = malloc(auxlen);
	memcpy(k->aux[k->n], aux, auxlen);
	k->auxlen[k->n++] = auxlen;
	return 0;
}

/* Stream 0 of archive a scanned with checkpoints every 64 KiB; a decoder started at each
 * gives the scan's bytes to the end.  The number of checkpoints. */
static size_t check_restarts(const char *what, const uint8_t *a, size_t alen)
{
	struct rec r;
	struct cks k = {0};
	struct src *file = src_from_mem(a, alen);
	struct src *win;
	struct codec_scan *sc = NULL;
	uint8_t *out, *buf;
	uint64_t got = 0;
	ssize_t n;

	CHECK_EQ(parse(a, alen, &r), 0);
	CHECK(r.ns > 0 && r.s[0].encrypted);
	win = src_window(file, r.s[0].coff, r.s[0].clen);
	out = malloc(r.s[0].usize + 1);
	buf = malloc(r.s[0].usize + 1);
	struct codec_opts opts = {.spacing = 1 << 16, .threads = 1, .params = r.s[0].params,
				  .params_len = r.s[0].params_len};
	struct codec_sink sink = {.checkpoint = ck_keep, .opaque = &k};
	CHECK_EQ(codec_7z.scan_new(win, &opts, &sink, &sc), 0);
	while (sc && (n = codec_7z.scan_read(sc, out + got, r.s[0].usize + 1 - got)) > 0)
		got += (uint64_t)n;
	CHECK_EQ(got, r.s[0].usize);
	for (size_t i = 0; i < k.n; i++) {
		struct codec_dec *d = NULL;
		uint64_t at = k.c[i].uoff, start = at;

		CHECK_EQ(codec_7z.dec_new(win, &k.c[i], k.aux[i], k.auxlen[i], &d), 0);
		while (d && (n = codec_7z.dec_read(d, buf + at, r.s[0].usize + 1 - at)) > 0)
			at += (uint64_t)n;
		if (at != r.s[0].usize || memcmp(buf + start, out + start, at - start) != 0)
			fprintf(stderr, "%s: checkpoint %zu at %llu (coff %llu): %llu bytes\n",
				what, i, (unsigned long long)start,
				(unsigned long long)k.c[i].coff, (unsigned long long)(at - start));
		CHECK_EQ(at, r.s[0].usize);
		CHECK(memcmp(buf + start, out + start, at - start) == 0);
		if (d)
			codec_7z.dec_free(d);
		free(k.aux[i]);
	}
	if (sc)
		codec_7z.scan_free(sc);
	free(out);
	free(buf);
	src_free(win);
	src_free(file);
	rec_free(&r);
	return k.n;
}

/* Every member of archive a has its file's bytes, by the scan and by a decoder; how many
 * streams were encrypted. */
static size_t check_archive(const char *what, const uint8_t *a, size_t alen)
{
	struct rec r;
	size_t enc = 0;

	CHECK_EQ(parse(a, alen, &r), 0);
	CHECK(r.nm > 0);
	for (size_t i = 0; i < r.ns; i++) {
		enc += r.s[i].encrypted;
		for (int dec = 0; dec < 2; dec++) {
			uint8_t *out;
			int err = decode(a, alen, &r, i, dec, &out);

			if (err)
				fprintf(stderr, "%s: stream %zu (%s): %d\n", what, i,
					dec ? "decoder" : "scan", err);
			CHECK_EQ(err, 0);
			for (size_t k = 0; !err && k < r.nm; k++) {
				char path[512];
				size_t flen;
				uint8_t *want;

				if (r.m[k].stream != i + 1)
					continue;
				snprintf(path, sizeof(path), "%s/src/%s", sz7_tmp, r.m[k].path);
				want = tu_read_file(path, &flen);
				CHECK(want && flen == r.m[k].size &&
				      memcmp(out + r.m[k].off, want, flen) == 0);
				free(want);
			}
			free(out);
		}
	}
	for (size_t k = 0; k < r.nm; k++)
		CHECK_EQ(r.m[k].unreadable, 0);
	rec_free(&r);
	return enc;
}

/* Every encrypted stream of a refuses with err (the scan; a decoder too when dec: one from a
 * checkpoint knows no file's CRC, and a folder of Copy has no coder to fail -- the index's
 * CRCs stop its bytes); nothing is logged. */
static void check_refused(const uint8_t *a, size_t alen, int err, bool dec)
{
	struct rec r;
	unsigned long logged = nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING];

	CHECK_EQ(parse(a, alen, &r), 0);
	CHECK(r.ns > 0);
	for (size_t i = 0; i < r.ns; i++) {
		uint8_t *out = NULL;

		CHECK(r.s[i].encrypted);
		CHECK_EQ(decode(a, alen, &r, i, false, &out), err);
		if (dec)
			CHECK_EQ(decode(a, alen, &r, i, true, &out), err);
		CHECK(out == NULL);
	}
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING], logged);
	rec_free(&r);
}

/* ---- the tests ---- */

static void make_tree(void)
{
	size_t n = 300000;
	uint8_t *b = malloc(n);

	sz7_sh("mkdir -p %s/src/d", sz7_tmp);
	tu_fill(b, n, 1, 1);
	sz7_write("d/text.txt", b, n);
	tu_fill(b, 90000, 2, 0);
	sz7_write("d/noise.bin", b, 90000);
	sz7_write("hello.txt", (const uint8_t *)"hello, world\n", 13);
	sz7_write("d/empty", b, 0);
	free(b);
}

static void test_props(void)
{
	struct sz_aes_props p;
	uint8_t id[SZ_AES_ID_MAX], u16[16];
	const uint8_t full[] = {0xD3, 0x1F, 1,	2,  3,	4,  5,	6,  7,	8,
				9,    10,   11, 12, 13, 14, 15, 16, 17, 18};

	/* 19 cycles, salt 1 + 1 bytes, IV 1 + 15 bytes */
	CHECK_EQ(sz_aes_props(full, sizeof(full), &p), 0);
	CHECK(p.cycles == 19 && p.saltlen == 2 && p.ivlen == 16 && p.salt[1] == 2 &&
	      p.iv[15] == 18);
	CHECK_EQ(sz_aes_id(&p, true, id), 1 + 2 + 16);
	CHECK_EQ(sz_aes_id(&p, false, id), 1 + 2);
	CHECK_EQ(sz_aes_props(full, sizeof(full) - 1, &p), -EIO);
	CHECK_EQ(sz_aes_props((const uint8_t *)"\x13", 1, &p), 0); /* no salt, no IV */
	CHECK_EQ(sz_aes_props((const uint8_t *)"\x13\x00", 2, &p), -EIO);
	CHECK_EQ(sz_aes_props((const uint8_t *)"\x19", 1, &p), -ENOTSUP); /* 2^25 */
	CHECK_EQ(sz_aes_props((const uint8_t *)"\x3F", 1, &p), 0);
	CHECK_EQ(sz_aes_props(NULL, 0, &p), -EIO);
	/* UTF-8 to UTF-16LE: é (2 bytes), € (3), 😀 (4: a surrogate pair), a stray byte */
	CHECK_EQ(sz_aes_utf16((const uint8_t *)"a\xC3\xA9", 3, u16, sizeof(u16)), 4);
	CHECK(memcmp(u16, "a\0\xE9\0", 4) == 0);
	CHECK_EQ(sz_aes_utf16((const uint8_t *)"\xE2\x82\xAC", 3, u16, sizeof(u16)), 2);
	CHECK(memcmp(u16, "\xAC\x20", 2) == 0);
	CHECK_EQ(sz_aes_utf16((const uint8_t *)"\xF0\x9F\x98\x80", 4, u16, sizeof(u16)), 4);
	CHECK(memcmp(u16, "\x3D\xD8\x00\xDE", 4) == 0);
	CHECK_EQ(sz_aes_utf16((const uint8_t *)"\xFF", 1, u16, sizeof(u16)), 2);
	CHECK(memcmp(u16, "\xFF\0", 2) == 0);
}

static void test_no_password(void)
{
	size_t len;
	uint8_t *a = sz7_make("lzma2.7z", "-psecret", "hello.txt d", &len);
	struct rec r;

	CHECK_EQ(kr_count(), 0);
	check_refused(a, len, -EACCES, true);
	free(a);
	/* an encrypted header: refused, with a message saying what to do */
	a = sz7_make("hdr.7z", "-psecret -mhe=on", "hello.txt d", &len);
	unsigned long err = nlog[TFS_LOG_ERR];
	CHECK_EQ(parse(a, len, &r), -EACCES);
	CHECK_EQ(r.nm, 0);
	CHECK_EQ(nlog[TFS_LOG_ERR], err + 1);
	CHECK(strstr(last_err, "the archive's header is encrypted: give its password with "
			       "--password"));
	CHECK(!strstr(last_err, "none of those"));
	rec_free(&r);
	free(a);
}

static void test_wrong_password(void)
{
	size_t len;
	uint8_t *a;
	struct rec r;

	CHECK_EQ(kr_add("wrong", 5), 0);
	a = sz7_make("lzma2.7z", "-psecret", "hello.txt d", &len);
	check_refused(a, len, -EACCES, true);
	free(a);
	a = sz7_make("lzma.7z", "-psecret -m0=LZMA", "hello.txt d", &len);
	check_refused(a, len, -EACCES, true);
	free(a);
	a = sz7_make("hdr.7z", "-psecret -mhe=on", "hello.txt d", &len);
	CHECK_EQ(parse(a, len, &r), -EACCES);
	CHECK(strstr(last_err, "(none of those given opens it)"));
	CHECK(!strstr(last_err, "secret") && !strstr(last_err, "wrong"));
	rec_free(&r);
	free(a);
	/* Copy: no coder fails, the files' CRCs say the password is wrong */
	a = sz7_make("copy1.7z", "-psecret -m0=Copy", "hello.txt d", &len);
	check_refused(a, len, -EACCES, false);
	free(a);
}

static void test_right_password(void)
{
	static const struct {
		const char *name, *sw, *files;
	} cases[] = {
	    {"lzma2.7z", "-psecret", "hello.txt d"},
	    {"lzma.7z", "-psecret -m0=LZMA", "hello.txt d"},
	    {"solid.7z", "-psecret -ms=on -mx=1", "hello.txt d/text.txt d/noise.bin d/empty"},
	    {"files.7z", "-psecret -ms=off", "hello.txt d"},
	    {"copy.7z", "-psecret -m0=Copy", "hello.txt d"},
	    {"bcj.7z", "-psecret -mf=BCJ", "d/noise.bin"},
	    {"hdr.7z", "-psecret -mhe=on", "hello.txt d"},
	    {"hdrcopy.7z", "-psecret -mhe=on -m0=Copy", "hello.txt d"},
	};

	CHECK_EQ(kr_add("secret", 6), 0); /* after "wrong": tried second */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;
		uint8_t *a = sz7_make(cases[i].name, cases[i].sw, cases[i].files, &len);
		unsigned long err = nlog[TFS_LOG_ERR];

		CHECK(check_archive(cases[i].name, a, len) > 0);
		CHECK_EQ(nlog[TFS_LOG_ERR], err);
		free(a);
	}
}

/* Random access inside encrypted folders: LZMA2 restarts at its dictionary resets (the chunk
 * headers read through the decryption), Copy anywhere; a restart reads from the AES block
 * holding it, the block before as its IV. */
static void test_restarts(void)
{
	size_t len;
	uint8_t *a = sz7_make("blocks.7z", "-psecret -m0=LZMA2:c=64k -mmt2 -mx1", "d/text.txt",
			     &len);

	CHECK(check_restarts("blocks.7z", a, len) >= 4);
	free(a);
	a = sz7_make("copyck.7z", "-psecret -m0=Copy", "d/text.txt", &len);
	CHECK(check_restarts("copyck.7z", a, len) >= 4);
	free(a);
	a = sz7_make("bcjck.7z", "-psecret -mf=BCJ -m0=LZMA2:c=64k -mmt2 -mx1", "d/text.txt", &len);
	CHECK(check_restarts("bcjck.7z", a, len) >= 2);
	free(a);
}

/* A password that is not ASCII: 7-Zip hashes its UTF-16LE. */
static void test_unicode_password(void)
{
	const char *pw = "p\xC3\xA4ss\xE2\x82\xACw\xC3\xB6rd";
	size_t len;
	uint8_t *a = sz7_make("uni.7z", "'-pp\xC3\xA4ss\xE2\x82\xACw\xC3\xB6rd'", "hello.txt d",
			     &len);

	CHECK_EQ(kr_add(pw, strlen(pw)), 0);
	CHECK(check_archive("uni.7z", a, len) > 0);
	free(a);
}

/* Flipped bytes in the encrypted data: an error, never other bytes. */
static void test_damage(void)
{
	size_t len;
	uint8_t *a = sz7_make("dmg.7z", "-psecret", "hello.txt d", &len);
	struct rec r;
	unsigned fails = 0, runs = 0;

	CHECK_EQ(parse(a, len, &r), 0);
	for (uint64_t off = 0; off < r.s[0].clen; off += r.s[0].clen / 23 + 1) {
		uint8_t *b = malloc(len), *out = NULL;

		memcpy(b, a, len);
		b[r.s[0].coff + off] ^= 0x20;
		for (int dec = 0; dec < 2; dec++) {
			int err = decode(b, len, &r, 0, dec, &out);
			runs++;
			if (err) {
				fails++;
				CHECK(err == -EIO || err == -EACCES);
				continue;
			}
			/* decoded whole: only possible if the CRCs were not checked (a decoder) --
			 * then the bytes must still be what they were, or the index's CRCs catch
			 * them; the scan checks every file */
			CHECK(dec);
			free(out);
		}
		free(b);
	}
	CHECK(fails >= runs / 2);
	rec_free(&r);
	free(a);
}

int main(void)
{
	if (!tu_have("7zz")) {
		fprintf(stderr, "7zz missing: skipped\n");
		return 77;
	}
	tfs_log_set_sink(log_sink, NULL);
	sz7_begin("test_7zaes");
	make_tree();
	test_props();
	test_no_password();
	test_wrong_password();
	test_right_password();
	test_restarts();
	test_unicode_password();
	test_damage();
	sz7_end();
	kr_wipe();
	return tu_exit();
}
