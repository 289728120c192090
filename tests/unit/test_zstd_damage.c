/* Unit tests of the zstd codec (codecs/zstd/) on damaged files: flipped bytes in data,
 * checksums, headers and the seek table; truncations; trailing garbage; hostile headers; a
 * frame that decodes past its stated size; a failing sink.  Each must give the original
 * bytes up to scan_verified(), -EIO and one logged error where the damage matters -- never
 * anything else, never a crash or a hang.  (The files are built as in test_zstd.c, with
 * zstd_fixtures.h.)
 */
#include "zstd_fixtures.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

static void check_flip(const char *what, const struct zfile *f, size_t bad, uint64_t off,
		       const uint8_t *data, size_t len, const char *msg)
{
	uint8_t *z = dup_buf(f->p, f->len, 0);
	struct scan_res good, r;
	uint64_t bad_uoff = 0;

	for (size_t i = 0; i < bad; i++)
		bad_uoff += f->fr[i].dsize;
	fprintf(stderr, "damage: %s (frame %zu, offset %llu)\n", what, bad + 1,
		(unsigned long long)off);
	CHECK_EQ(scan(f->p, f->len, 2, 1 << 20, &good), 0);
	z[off] ^= 0x55;
	for (unsigned threads = 1; threads <= 3; threads += 2) {
		log_reset();
		CHECK_EQ(scan(z, f->len, threads, 1 << 20, &r), -EIO);
		CHECK_EQ(r.verified, bad_uoff);
		CHECK(r.len >= r.verified && memcmp(r.out, data, r.verified) == 0);
		for (size_t i = 0; i < r.ncks && i < good.ncks; i++)
			CHECK(same_ck(&r.cks[i], &good.cks[i]));
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "compressed offset") != NULL);
		if (msg)
			CHECK(strstr(last_err, msg) != NULL);
		res_free(&r);
	}
	for (size_t i = 0; i < good.ncks; i++) {
		uint64_t end = i + 1 < good.ncks ? good.cks[i + 1].c.uoff : len;
		bool holds = bad_uoff >= good.cks[i].c.uoff && bad_uoff < end;
		ssize_t n =
		    decode_chunk(z, f->len, good.cks, good.ncks, i, len, holds ? NULL : data);

		if (holds)
			CHECK_EQ(n, -EIO);
		else
			CHECK_EQ(n, 0);
	}
	res_free(&good);
	free(z);
}

static void test_damage(const uint8_t *data, size_t len)
{
	struct zfile f = {0};
	size_t per = 300000, wlen = 5 * per;
	uint8_t *want = malloc(wlen);

	/* 5 frames of 300000 bytes: frames 1-4 make the first chunk, frame 5 the second */
	for (size_t i = 0; i < 5; i++) {
		memcpy(want + i * per, data + (i * per) % (len - per), per);
		zf_frame(&f, want + i * per, per, true, true);
	}
	const struct tframe *t = &f.fr[2];

	check_flip("data", &f, 2, t->coff + t->clen / 2, want, wlen, "frame 3");
	check_flip("checksum", &f, 2, t->coff + t->clen - 2, want, wlen, "frame 3");
	check_flip("content size", &f, 2, t->coff + 6, want, wlen, "frame 3");
	check_flip("first block header", &f, 2, t->coff + 10, want, wlen, "frame 3");
	check_flip("magic", &f, 2, t->coff + 1, want, wlen, NULL);
	check_flip("first frame", &f, 0, f.fr[0].coff + 100, want, wlen, "frame 1");
	check_flip("last frame", &f, 4, f.fr[4].coff + f.fr[4].clen / 3, want, wlen, "frame 5");
	check_flip("last frame's magic", &f, 4, f.fr[4].coff, want, wlen, NULL);
	free(f.p);
	free(want);

	/* a single frame with a flipped byte: nothing verified */
	uint8_t *z, *bad;
	size_t zlen;
	struct scan_res r;

	z = run("zstd -q -c -3", data, len, &zlen);
	bad = dup_buf(z, zlen, 0);
	bad[zlen / 2] ^= 0x10;
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(bad, zlen, threads, 1 << 20, &r), -EIO);
		CHECK_EQ(r.verified, 0);
		CHECK_EQ(r.ncks, 1);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "frame 1 at compressed offset 0") != NULL);
		res_free(&r);
	}
	free(bad);
	free(z);
}

static void test_seek_table_damage(const uint8_t *data, size_t len)
{
	static const size_t sizes[] = {150000, 200000}; /* a chunk per frame */
	struct zfile f;
	struct scan_res good, r;
	struct ib_res ib;
	uint8_t *bad;
	size_t entries;

	make_seekable(&f, data, len, sizes, 2, false, true, 0);
	entries = f.len - 9 - f.nfr * 12; /* offset of the first entry */
	CHECK_EQ(scan(f.p, f.len, 2, 1 << 20, &good), 0);
	CHECK_EQ(good.ncks, f.nfr);

	/* a compressed size: the table does not add up, ignored with a warning, frames walked */
	bad = dup_buf(f.p, f.len, 0);
	bad[entries + 12 * 2] ^= 0x01;
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(bad, f.len, threads, 1 << 20, &r), 0);
		CHECK(r.len == len && memcmp(r.out, data, len) == 0);
		CHECK_EQ(nlog[TFS_LOG_WARNING], 1);
		CHECK_EQ(nlog[TFS_LOG_ERR], 0);
		res_free(&r);
	}
	CHECK_EQ(index_blocks(bad, f.len, &ib), -ENOTSUP); /* frames without checksums */
	free_cks(ib.cks, ib.ncks);
	free(bad);

	/* a decoded size: frame 3 does not match */
	bad = dup_buf(f.p, f.len, 0);
	bad[entries + 12 * 2 + 4] ^= 0x01;
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(bad, f.len, threads, 1 << 20, &r), -EIO);
		CHECK_EQ(r.verified, sizes[0] + sizes[1]);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "frame 3") != NULL);
		res_free(&r);
	}
	free(bad);

	/* a checksum: frame 2 fails in the scan and in its decoder (frames have none of their
	 * own) */
	bad = dup_buf(f.p, f.len, 0);
	bad[entries + 12 * 1 + 8] ^= 0x01;
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(bad, f.len, threads, 1 << 20, &r), -EIO);
		CHECK_EQ(r.verified, sizes[0]);
		CHECK(memcmp(r.out, data, r.verified) == 0);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "checksum mismatch") != NULL);
		res_free(&r);
	}
	/* the good checkpoints' aux is the good table; with the damaged table's entries the
	 * chunk holding frame 2 (the second) fails */
	{
		struct ib_res bib;

		CHECK_EQ(index_blocks(bad, f.len, &bib), 0);
		CHECK_EQ(bib.ncks, good.ncks);
		log_reset();
		CHECK_EQ(decode_chunk(bad, f.len, bib.cks, bib.ncks, 1, len, NULL), -EIO);
		CHECK(strstr(last_err, "checksum mismatch") != NULL);
		for (size_t i = 0; i < bib.ncks; i++)
			if (i != 1)
				CHECK_EQ(decode_chunk(bad, f.len, bib.cks, bib.ncks, i, len, data), 0);
		free_cks(bib.cks, bib.ncks);
	}
	free(bad);

	/* the seekable magic: no table, the frames are walked, silently */
	bad = dup_buf(f.p, f.len, 0);
	bad[f.len - 1] ^= 0x01;
	log_reset();
	CHECK_EQ(scan(bad, f.len, 2, 1 << 20, &r), 0);
	CHECK(r.len == len && memcmp(r.out, data, len) == 0);
	CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING] + nlog[TFS_LOG_NOTICE], 0);
	res_free(&r);
	free(bad);

	/* a hostile frame count: ignored */
	bad = dup_buf(f.p, f.len, 0);
	put_le32(bad + f.len - 9, 0xFFFFFFFF);
	log_reset();
	CHECK_EQ(scan(bad, f.len, 2, 1 << 20, &r), 0);
	CHECK(r.len == len && memcmp(r.out, data, len) == 0);
	CHECK_EQ(nlog[TFS_LOG_WARNING], 1);
	res_free(&r);
	free(bad);

	/* reserved bits in the descriptor: ignored */
	bad = dup_buf(f.p, f.len, 0);
	bad[f.len - 5] |= 0x04;
	log_reset();
	CHECK_EQ(scan(bad, f.len, 1, 1 << 20, &r), 0);
	CHECK_EQ(nlog[TFS_LOG_WARNING], 1);
	res_free(&r);
	free(bad);

	/* a frame that is not where the table says (its magic) */
	bad = dup_buf(f.p, f.len, 0);
	bad[f.fr[3].coff] ^= 0x40;
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(bad, f.len, threads, 1 << 20, &r), -EIO);
		CHECK_EQ(r.verified, sizes[0] + sizes[1] + sizes[0]);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "seek table entry 4") != NULL);
		res_free(&r);
	}
	free(bad);
	res_free(&good);
	free(f.p);
}

/* Cuts the file at `cut`: the frames wholly before it are delivered, and what decodes of the
 * cut frame (trusted: a truncation is no sign of damage), then -EIO ("truncated"). */
static void check_cut(const struct zfile *f, size_t cut, const uint8_t *data, size_t len)
{
	struct scan_res r;
	uint64_t want_verified = 0;
	bool at_boundary = false;

	for (size_t i = 0; i < f->nfr; i++) {
		if (f->fr[i].coff + f->fr[i].clen <= cut)
			want_verified += f->fr[i].dsize;
		if (f->fr[i].coff + f->fr[i].clen == cut)
			at_boundary = true;
	}
	fprintf(stderr, "truncated at %zu of %zu\n", cut, f->len);
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		if (at_boundary) {
			CHECK_EQ(scan(f->p, cut, threads, 65536, &r), 0);
			CHECK_EQ(r.len, want_verified);
		} else {
			CHECK_EQ(scan(f->p, cut, threads, 65536, &r), -EIO);
			/* a cut is no sign of damage: what decoded before it is trusted too */
			CHECK(r.verified >= want_verified);
			CHECK_EQ(r.verified, r.len);
			CHECK_EQ(nlog[TFS_LOG_ERR], 1);
			CHECK(strstr(last_err, "truncated") != NULL);
		}
		CHECK(r.len <= len && memcmp(r.out, data, r.len) == 0); /* a prefix */
		res_free(&r);
	}
}

static void test_truncation(const uint8_t *data, size_t len)
{
	struct zfile f = {0};
	size_t per = len / 3;

	zf_frame(&f, data, per, true, true);
	zf_skippable(&f, 2, 100);
	zf_frame(&f, data + per, per, false, true);
	zf_frame(&f, data + 2 * per, len - 2 * per, true, false);
	const struct tframe *m = &f.fr[2], *l = &f.fr[3];
	size_t cuts[] = {1,
			 4,
			 5,
			 8,
			 f.fr[0].clen / 2,
			 f.fr[0].clen - 1,
			 f.fr[0].clen,
			 f.fr[1].coff + 3,
			 f.fr[1].coff + 50,
			 m->coff + 2,
			 m->coff + 6,
			 m->coff + m->clen / 2,
			 m->coff + m->clen - 4,
			 m->coff + m->clen - 1,
			 l->coff + l->clen - 1,
			 l->coff + l->clen / 2};

	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		check_cut(&f, cuts[i], data, len);
	free(f.p);

	/* a single frame cut in its data, in its checksum */
	size_t zlen;
	uint8_t *z = run("zstd -q -c -3", data, len, &zlen);
	struct zfile g = {0};

	g.fr[g.nfr++] = (struct tframe){0, zlen, len, true, 0};
	g.p = z;
	g.len = zlen;
	check_cut(&g, zlen / 2, data, len);
	check_cut(&g, zlen - 3, data, len);
	free(z);
}

static void test_zero_length(void)
{
	static const uint8_t nothing[1];
	struct scan_res r;
	struct src *in = src_from_mem(nothing, 0);
	struct ib_res ib;

	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan_src(in, threads, 4096, 0, &r), -EIO);
		CHECK_EQ(r.len, 0);
		CHECK_EQ(r.ncks, 0);
		CHECK_EQ(r.verified, 0);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "empty") != NULL);
		res_free(&r);
	}
	src_free(in);
	CHECK_EQ(index_blocks(nothing, 0, &ib), -EIO);
	free_cks(ib.cks, ib.ncks);

	/* not zstd at all, only the magic, only skippable frames */
	log_reset();
	CHECK_EQ(scan((const uint8_t *)"hello, world, this is not zstd", 30, 2, 4096, &r), -EIO);
	CHECK_EQ(r.len, 0);
	res_free(&r);
	CHECK_EQ(scan((const uint8_t *)"\x28\xb5\x2f\xfd", 4, 1, 4096, &r), -EIO);
	CHECK_EQ(r.len, 0);
	res_free(&r);
	CHECK_EQ(scan((const uint8_t *)"\x50\x2a\x4d\x18\x02\0\0\0ab", 10, 2, 4096, &r), -EIO);
	CHECK(strstr(last_err, "only skippable") != NULL);
	res_free(&r);
	CHECK_EQ(nlog[TFS_LOG_ERR], 3);
}

static void test_garbage(const uint8_t *data, size_t len)
{
	static const size_t sizes[] = {1, 3, 4, 7, 100000, 1536u << 10};
	struct zfile f = {0};
	struct scan_res good, r;
	uint8_t *bad;

	zf_frame(&f, data, len / 2, true, true);
	zf_frame(&f, data + len / 2, len - len / 2, true, true);
	CHECK_EQ(scan(f.p, f.len, 2, 1 << 20, &good), 0);
	for (size_t g = 0; g < sizeof(sizes) / sizeof(sizes[0]); g++) {
		for (int zeros = 0; zeros < 2; zeros++) {
			size_t n = sizes[g];

			fprintf(stderr, "garbage: %zu %s bytes\n", n, zeros ? "zero" : "random");
			bad = dup_buf(f.p, f.len, n);
			if (zeros)
				memset(bad + f.len, 0, n);
			else
				tu_fill(bad + f.len, n, (uint32_t)n, 0);
			for (unsigned threads = 1; threads <= 2; threads++) {
				log_reset();
				CHECK_EQ(scan(bad, f.len + n, threads, 1 << 20, &r), 0);
				CHECK(r.len == len && memcmp(r.out, data, len) == 0);
				check_same_cks(r.cks, r.ncks, good.cks, good.ncks);
				CHECK_EQ(nlog[TFS_LOG_ERR] + nlog[TFS_LOG_WARNING], 0);
				CHECK_EQ(nlog[TFS_LOG_NOTICE], zeros ? 0 : 1);
				res_free(&r);
			}
			struct ib_res ib;
			log_reset();
			CHECK_EQ(index_blocks(bad, f.len + n, &ib), 0);
			CHECK_EQ(ib.usize, len);
			free_cks(ib.cks, ib.ncks);
			free(bad);
		}
	}

	/* what follows holds another frame header: a damaged frame, not garbage */
	bad = dup_buf(f.p, f.len, 300);
	tu_fill(bad + f.len, 300, 99, 0);
	memcpy(bad + f.len + 100, f.p + f.fr[1].coff, 30);
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(bad, f.len + 300, threads, 1 << 20, &r), -EIO);
		CHECK(r.len == len && memcmp(r.out, data, len) == 0);
		CHECK_EQ(r.verified, len);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		CHECK(strstr(last_err, "damaged") != NULL);
		res_free(&r);
	}
	free(bad);
	res_free(&good);
	free(f.p);
}

/* Random damage to a file of several frames with checksums: the scan returns the original
 * bytes as far as it says they are verified, and -EIO or the end; an end short of the data
 * comes with a notice (a frame that became trailing garbage).  Decoders return the original
 * bytes or -EIO.  Never a crash or a hang. */
static void test_random_damage(const uint8_t *data, size_t len)
{
	struct zfile f = {0};
	struct scan_res good, r;
	uint8_t *bad, *buf = malloc(len);
	uint32_t x = 4242;

	for (size_t off = 0, k = 0; off < len; k++) {
		size_t n = 20000 + (k * 7919) % 30000;

		if (n > len - off)
			n = len - off;
		zf_frame(&f, data + off, n, k % 3 != 1, true);
		off += n;
	}
	bad = malloc(f.len);
	CHECK_EQ(scan(f.p, f.len, 2, 1 << 20, &good), 0);
	CHECK(good.len == len && memcmp(good.out, data, len) == 0);
	quiet = true;
	for (int i = 0; i < 300; i++) {
		memcpy(bad, f.p, f.len);
		x = x * 1103515245 + 12345;
		if (i % 5 == 4) { /* a run of junk */
			size_t at = (x >> 8) % (f.len - 16);
			tu_fill(bad + at, 16, x, 0);
		} else {
			for (int k = 0; k <= i % 3; k++) {
				x = x * 1103515245 + 12345;
				bad[(x >> 8) % f.len] ^= (uint8_t)(1u << (x % 8));
			}
		}
		log_reset();
		ssize_t rc = scan(bad, f.len, 1 + (unsigned)(i % 3), i % 2 ? 65536 : 1 << 20, &r);
		CHECK(rc == 0 || rc == -EIO);
		if (rc == 0) {
			CHECK(r.len <= len && memcmp(r.out, data, r.len) == 0);
			if (r.len < len)
				CHECK(nlog[TFS_LOG_NOTICE] >= 1);
		} else {
			CHECK(r.verified <= len && memcmp(r.out, data, r.verified) == 0);
		}
		res_free(&r);

		struct src *in = src_from_mem(bad, f.len);
		for (size_t k = (size_t)i % 2; k < good.ncks; k += 2) {
			struct codec_ckpt ck = good.cks[k].c;
			struct codec_dec *d;
			uint64_t got = 0;
			ssize_t n = 0;

			ck.ulen = (k + 1 < good.ncks ? good.cks[k + 1].c.uoff : len) - ck.uoff;
			if (codec_zstd.dec_new(in, &ck, NULL, 0, &d))
				continue;
			while (got < len && (n = codec_zstd.dec_read(d, buf + got, len - got)) > 0)
				got += (uint64_t)n;
			CHECK(n == 0 || n == -EIO);
			if (n == 0)
				CHECK(got == ck.ulen && memcmp(buf, data + ck.uoff, got) == 0);
			codec_zstd.dec_free(d);
		}
		src_free(in);
	}
	quiet = false;
	res_free(&good);
	free(buf);
	free(bad);
	free(f.p);
}

/* A frame with a raw last block of 5 bytes and the header given. */
static size_t hostile_frame(uint8_t *out, const uint8_t *hdr, size_t hlen)
{
	static const uint8_t block[] = {0x29, 0, 0, 'h', 'e', 'l', 'l', 'o'}; /* raw, last, 5 */

	put_le32(out, 0xFD2FB528);
	memcpy(out + 4, hdr, hlen);
	memcpy(out + 4 + hlen, block, sizeof(block));
	return 4 + hlen + sizeof(block);
}

static void test_hostile(const uint8_t *data, size_t len)
{
	uint8_t z[64];
	size_t zlen;
	struct scan_res r, good;
	struct codec_dec *d;
	struct src *in;

	/* a 4 GiB window (window log 32): refused with a clear message, not allocated */
	zlen = hostile_frame(z, (const uint8_t[]){0x00, 22 << 3}, 2);
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(z, zlen, threads, 4096, &r), -EIO);
		CHECK_EQ(r.len, 0);
		CHECK(strstr(last_err, "refusing") != NULL);
		CHECK_EQ(nlog[TFS_LOG_ERR], 1);
		res_free(&r);
	}
	/* the largest window log there is (41) */
	zlen = hostile_frame(z, (const uint8_t[]){0x00, 0xff}, 2);
	CHECK_EQ(scan(z, zlen, 1, 4096, &r), -EIO);
	CHECK(strstr(last_err, "refusing") != NULL);
	res_free(&r);
	/* 2 GiB (log 31) is allowed: with a small content size nothing big is allocated */
	zlen = hostile_frame(z, (const uint8_t[]){0x80, 21 << 3, 5, 0, 0, 0}, 6);
	log_reset();
	CHECK_EQ(scan(z, zlen, 1, 4096, &r), 0);
	CHECK(r.len == 5 && memcmp(r.out, "hello", 5) == 0);
	res_free(&r);
	/* a dictionary */
	zlen = hostile_frame(z, (const uint8_t[]){0x01, 0x50, 0x07}, 3);
	log_reset();
	CHECK_EQ(scan(z, zlen, 2, 4096, &r), -EIO);
	CHECK(strstr(last_err, "dictionary") != NULL);
	res_free(&r);
	/* the reserved bit */
	zlen = hostile_frame(z, (const uint8_t[]){0x08, 0x50}, 2);
	CHECK_EQ(scan(z, zlen, 1, 4096, &r), -EIO);
	CHECK(strstr(last_err, "reserved") != NULL);
	res_free(&r);
	/* a reserved block type */
	zlen = hostile_frame(z, (const uint8_t[]){0x00, 0x50}, 2);
	z[6] = 0x2f; /* type 3, last */
	CHECK_EQ(scan(z, zlen, 2, 4096, &r), -EIO);
	res_free(&r);
	CHECK_EQ(scan(z, zlen, 1, 4096, &r), -EIO);
	res_free(&r);
	/* a block size over 128 KiB */
	zlen = hostile_frame(z, (const uint8_t[]){0x00, 0x50}, 2);
	z[6] = 0x01;
	z[7] = 0x00;
	z[8] = 0x20; /* raw, last, 262144 bytes */
	CHECK_EQ(scan(z, zlen, 2, 4096, &r), -EIO);
	res_free(&r);

	/* checkpoints that do not point at a frame, or do not match it */
	struct zfile f = {0};
	zf_frame(&f, data, len / 2, true, true);
	zf_frame(&f, data + len / 2, len - len / 2, true, true);
	CHECK_EQ(scan(f.p, f.len, 2, 1 << 20, &good), 0);
	CHECK_EQ(good.ncks, 2);
	in = src_from_mem(f.p, f.len); /* the checkpoints below are the first, made to hold both */
	struct codec_ckpt ck = good.cks[0].c;
	ck.ulen = len;
	log_reset();
	ck.coff = 5; /* inside a header */
	CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), -EIO);
	CHECK(d == NULL);
	ck.coff = f.len + 1000; /* past the end */
	CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), -EIO);
	ck = good.cks[0].c;
	ck.ulen = len;
	ck.bits = 2;
	CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
	ck.bits = CK_TABLE; /* without aux */
	CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
	ck.bits = 0;
	CHECK_EQ(codec_zstd.dec_new(in, &ck, "abcd", 4, &d), -EINVAL);
	ck.flags = 0;
	CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), -EINVAL);
	ck = good.cks[0].c;
	ck.clen = 1;
	ck.bits = CK_TABLE; /* a frame's length is not given with the table's entries */
	CHECK_EQ(codec_zstd.dec_new(in, &ck, "abcdefghijkl", 12, &d), -EINVAL);
	/* a chunk said to be one frame of clen compressed bytes (a shadow's checkpoints): read
	 * whole when clen is right; when it is not, -EIO and never other bytes */
	const uint64_t flen = good.cks[1].c.coff, clens[] = {flen, flen - 1, flen + 1, 1, 17};
	for (size_t i = 0; i < sizeof(clens) / sizeof(clens[0]); i++) {
		uint8_t *buf = malloc(len);
		uint64_t got = 0;
		ssize_t n = 0;
		int rc;

		ck = good.cks[0].c;
		ck.ulen = len / 2;
		ck.clen = clens[i];
		rc = codec_zstd.dec_new(in, &ck, NULL, 0, &d);
		if (rc == 0) {
			while ((n = codec_zstd.dec_read(d, buf + got, len - got)) > 0)
				got += (uint64_t)n;
			codec_zstd.dec_free(d);
		}
		if (i == 0) {
			CHECK_EQ(rc, 0);
			CHECK_EQ(n, 0);
			CHECK_EQ(got, ck.ulen);
		} else {
			CHECK(rc == -EIO || (rc == 0 && n == -EIO));
			CHECK(got < ck.ulen);
		}
		CHECK(memcmp(buf, data, got) == 0);
		free(buf);
	}
	/* a chunk said to end inside a frame, or after the data */
	const uint64_t ulens[] = {len / 2 - 1, len / 2 + 1, len - 1, len + 1, 1};
	for (size_t i = 0; i < sizeof(ulens) / sizeof(ulens[0]); i++) {
		uint8_t *buf = malloc(len + 2);
		uint64_t got = 0;
		ssize_t n;

		ck = good.cks[0].c;
		ck.ulen = ulens[i];
		CHECK_EQ(codec_zstd.dec_new(in, &ck, NULL, 0, &d), 0);
		while ((n = codec_zstd.dec_read(d, buf + got, len + 2 - got)) > 0)
			got += (uint64_t)n;
		CHECK_EQ(n, -EIO);
		CHECK(got <= ulens[i] && memcmp(buf, data, got) == 0);
		codec_zstd.dec_free(d);
		free(buf);
	}
	CHECK(nlog[TFS_LOG_ERR] >= 11);
	src_free(in);
	res_free(&good);
	free(f.p);
}

/* A frame whose data runs past the content size its header states, cut short in its data,
 * after a larger frame: libzstd checks the size only at a frame's end, and a DCtx whose buffer
 * the larger frame sized copies the cut raw block on where a fresh decoder (at a checkpoint)
 * fails.  The scan
 * must not keep those bytes as if the cut were the only fault (fuzz_codec_zstd's finding). */
static void test_content_overrun(void)
{
	static const uint8_t rle[] = {0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x79, /* no size, 36 MiB window */
				      0x03, 0x00, 0x08, 'z'};	/* last, RLE, 65536 */
	static const uint8_t hdr[] = {0x28, 0xb5, 0x2f, 0xfd, 0x40, 0x50, 0, 0}; /* says 256 */
	static const uint8_t raw4k[] = {0x00, 0x80, 0x00}; /* a raw block of 4096, not the last */
	static uint8_t want[65536];
	struct zfile f = {0};
	struct scan_res r;

	memset(want, 'z', sizeof(want));
	zf_put(&f, rle, sizeof(rle)); /* its window sizes the DCtx's buffer */
	zf_put(&f, hdr, sizeof(hdr));
	zf_put(&f, raw4k, sizeof(raw4k));
	zf_put(&f, want, 300); /* cut: libzstd streams a raw block as it comes */
	for (unsigned threads = 1; threads <= 2; threads++) {
		log_reset();
		CHECK_EQ(scan(f.p, f.len, threads, 65536, &r), -EIO);
		/* damage, not a cut (with two threads a worker's fresh DCtx may fail first) */
		CHECK(strstr(last_err, "truncated") == NULL);
		if (threads == 1) /* one DCtx, sized by the first frame: only our check stops it */
			CHECK(strstr(last_err, "decodes past the 256 bytes") != NULL);
		CHECK_EQ(r.verified, 65536); /* the first frame, not the overrun */
		CHECK(r.len <= 65536 && memcmp(r.out, want, r.len) == 0);
		res_free(&r);
	}
	free(f.p);
}

static void test_sink_error_and_free(const uint8_t *data, size_t len)
{
	struct zfile f = {0};
	struct scan_res r;
	struct src *in;
	size_t per = 600000, off = 0;

	while (off < 4 * len) {
		size_t n = per < 4 * len - off ? per : 4 * len - off;
		size_t at = off % len;

		if (n > len - at)
			n = len - at;
		zf_frame(&f, data + at, n, true, true);
		off += n;
	}
	in = src_from_mem(f.p, f.len);
	for (unsigned threads = 1; threads <= 3; threads += 2) {
		CHECK_EQ(scan_src(in, threads, 1 << 20, 2, &r), -ENOSPC);
		CHECK_EQ(r.ncks, 1);
		res_free(&r);
	}

	/* freeing a scan early, with workers waiting or busy */
	for (unsigned threads = 1; threads <= 8; threads *= 2) {
		struct codec_opts opts = {.threads = threads};
		struct codec_sink sink = {.checkpoint = sink_fn, .opaque = &r};
		struct codec_scan *s;
		uint8_t buf[1000];

		memset(&r, 0, sizeof(r));
		r.reader = pthread_self();
		CHECK_EQ(codec_zstd.scan_new(in, &opts, &sink, &s), 0);
		codec_zstd.scan_free(s);
		CHECK_EQ(codec_zstd.scan_new(in, &opts, &sink, &s), 0);
		CHECK_EQ(codec_zstd.scan_read(s, buf, sizeof(buf)), sizeof(buf));
		CHECK(memcmp(buf, data, sizeof(buf)) == 0);
		usleep(20000);
		codec_zstd.scan_free(s);
		res_free(&r);
	}
	codec_zstd.scan_free(NULL);
	codec_zstd.dec_free(NULL);
	src_free(in);
	free(f.p);
}

static int test(void)
{
	size_t len = 1200000;
	uint8_t *data;

	if (!tu_have("zstd")) {
		fprintf(stderr, "zstd not installed\n");
		return 77;
	}
	tfs_log_set_sink(log_sink, NULL);
	data = make_data(len, 1);
	test_damage(data, len);
	test_seek_table_damage(data, len);
	test_truncation(data, len);
	test_zero_length();
	test_garbage(data, len);
	test_random_damage(data, len / 4);
	test_hostile(data, len);
	test_content_overrun();
	test_sink_error_and_free(data, len);
	free(data);
	return tu_exit();
}

int main(void)
{
	return test();
}
