/* The squashfs container (containers/squashfs/) and codec (codecs/squashfs/) on images that
 * mksquashfs makes at test start, loaded into memory: every compressor it offers, with and
 * without fragments, with tables and data stored (-noI -noD -noF); the members (types, sizes,
 * links, hard links, devices, a fifo, owners) and every file's bytes through its stream, the
 * scan's and the decoders' at each checkpoint.  Damage: images cut at many lengths, a byte
 * flipped at many places (never a crash; a cut never gives other bytes), a byte flipped in a
 * compressed block (that file fails, the others read), a superblock whose inode count or
 * compressor lies.  Skipped (77) without mksquashfs or libsquashfs.
 */
#include "containers/container.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/byteio.h"
#include "common/log.h"
#include "image_fixtures.h"
#include "testutil.h"

#if HAVE_SQUASHFS

#define NFILES 6 /* regular files with bytes in the tree */

static char src[512];
static uint8_t *big; /* big.txt's bytes */
#define BIG_LEN 300001

static void make_tree(const char *dir)
{
	uint8_t *b = malloc(200000);

	snprintf(src, sizeof(src), "%s/src", dir);
	big = malloc(BIG_LEN);
	tu_fill(big, BIG_LEN, 1, 1);
	img_write(src, "big.txt", big, BIG_LEN);
	tu_fill(b, 200000, 2, 0);
	img_write(src, "rand.bin", b, 200000);
	tu_fill(b, 100, 3, 1);
	img_write(src, "d/small", b, 100);
	img_write(src, "d/tiny", "t", 1);
	img_write(src, "empty", "", 0);
	memset(b, 0, 200000);
	img_write(src, "zeros", b, 70000);
	tu_fill(b, 5000, 4, 0);
	tu_fill(b + 150000, 50, 5, 1);
	img_write(src, "sparse.bin", b, 150050);
	free(b);
	CHECK(img_sh("cd %s && ln -s big.txt link && ln big.txt d/hard && mkdir empty_dir", src) ==
	      0);
}

/* The image of the tree made with opts, loaded: its bytes, or NULL (the tool refused). */
static uint8_t *make_image(const char *dir, const char *opts, size_t *len)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/img", dir);
	unlink(path);
	if (img_sh("mksquashfs %s %s -noappend -quiet -no-progress %s -p 'null c 666 7 8 1 3' "
		   "-p 'fifo i 640 0 0 f' >/dev/null 2>&1", src, path, opts))
		return NULL;
	return tu_read_file(path, len);
}

static void check_image(const uint8_t *img, size_t len, const char *what)
{
	struct img_parse p;
	size_t ok, failed, wrong;
	const struct img_member *m;

	img_parse(&cont_squashfs, img, len, true, &p);
	CHECK_EQ(p.err, 0);
	CHECK(!p.st.damaged);
	img_check_files(&p, img, len, src, &ok, &failed, &wrong);
	if (ok != NFILES || failed || wrong)
		fprintf(stderr, "%s: %zu files read, %zu failed, %zu wrong\n", what, ok, failed,
			wrong);
	CHECK_EQ(ok, NFILES);
	CHECK_EQ(failed, 0);
	CHECK_EQ(wrong, 0);
	CHECK((m = img_find(&p, "link")) && m->type == MEMBER_SYMLINK &&
	      strcmp(m->link, "big.txt") == 0);
	CHECK((m = img_find(&p, "d/hard")) && m->type == MEMBER_HARDLINK &&
	      strcmp(m->link, "big.txt") == 0);
	CHECK((m = img_find(&p, "null")) && m->type == MEMBER_CHR && m->dev_major == 1 &&
	      m->dev_minor == 3 && m->uid == 7 && m->gid == 8 && m->mode == 0666);
	CHECK((m = img_find(&p, "fifo")) && m->type == MEMBER_FIFO && m->mode == 0640);
	CHECK((m = img_find(&p, "empty")) && m->type == MEMBER_REG && m->size == 0);
	CHECK((m = img_find(&p, "empty_dir")) && m->type == MEMBER_DIR);
	CHECK((m = img_find(&p, "zeros")) && m->size == 70000);
	img_parse_free(&p);
}

static void test_compressors(const char *dir)
{
	static const char *const comps[] = {"gzip", "lzo", "lz4", "xz", "zstd", "lzma"};
	static const char *const variants[] = {"-b 4K", "-b 4K -no-fragments", "-noI -noD -noF",
					       "-b 64K -always-use-fragments"};

	for (size_t i = 0; i < sizeof(comps) / sizeof(comps[0]); i++)
		for (size_t j = 0; j < sizeof(variants) / sizeof(variants[0]); j++) {
			char opts[128], what[160];
			size_t len;
			snprintf(opts, sizeof(opts), "-comp %s %s", comps[i], variants[j]);
			uint8_t *img = make_image(dir, opts, &len);
			if (!img) { /* lzma only where mksquashfs was built with it */
				fprintf(stderr, "mksquashfs %s: refused, skipped\n", opts);
				CHECK(strcmp(comps[i], "lzma") == 0);
				continue;
			}
			snprintf(what, sizeof(what), "mksquashfs %s", opts);
			check_image(img, len, what);
			free(img);
		}
}

/* Cut at many lengths: refused, or files that read whole or fail; never other bytes. */
static void test_truncated(const uint8_t *img, size_t len)
{
	for (size_t cut = 0; cut < len; cut += cut < 200 ? 7 : len / 97 + 1) {
		struct img_parse p;
		size_t ok, failed, wrong;
		img_parse(&cont_squashfs, img, cut, false, &p);
		if (p.err == 0) {
			img_check_files(&p, img, cut, src, &ok, &failed, &wrong);
			CHECK_EQ(wrong, 0);
		} else {
			CHECK(p.err == -EIO || p.err == -EINVAL || p.err == -ENOTSUP);
		}
		img_parse_free(&p);
	}
}

/* A byte flipped at many places: whatever the parse and the streams make of it, no crash
 * (ASan/UBSan builds say more).  SquashFS has no checksum of its tables or of stored data, so
 * other bytes cannot be ruled out here. */
static void test_flips(const uint8_t *img, size_t len)
{
	uint8_t *b = malloc(len);

	for (size_t at = 0; at < len; at += at < 120 ? 1 : len / 211 + 1) {
		struct img_parse p;
		size_t ok, failed, wrong;
		memcpy(b, img, len);
		b[at] ^= 0x5a;
		img_parse(&cont_squashfs, b, len, false, &p);
		if (p.err == 0)
			img_check_files(&p, b, len, src, &ok, &failed, &wrong);
		img_parse_free(&p);
	}
	free(b);
}

/* A byte flipped inside big.txt's second compressed block (found by compressing it as
 * mksquashfs's gzip does: zlib at level 9): big.txt fails, every other file reads whole. */
static void test_flipped_block(const char *dir)
{
	size_t len, ok, failed, wrong;
	uint8_t *img = make_image(dir, "-comp gzip -b 4K -no-fragments", &len);
	uLongf clen = compressBound(4096);
	uint8_t *z = malloc(clen);
	struct img_parse p;

	CHECK(img != NULL);
	if (!img)
		return;
	CHECK_EQ(compress2(z, &clen, big + 4096, 4096, 9), Z_OK);
	uint8_t *at = memmem(img, len, z, clen);
	CHECK(at != NULL);
	if (at) {
		at[clen / 2] ^= 0x55;
		img_parse(&cont_squashfs, img, len, true, &p);
		CHECK_EQ(p.err, 0);
		img_check_files(&p, img, len, src, &ok, &failed, &wrong);
		CHECK_EQ(ok, NFILES - 1);
		CHECK_EQ(failed, 1);
		CHECK_EQ(wrong, 0);
		img_parse_free(&p);
	}
	free(z);
	free(img);
}

/* A superblock that lies: an inode count far too large (refused: the inode table does not
 * hold them), too small (files past it unreadable, none wrong), a compressor not in the list. */
static void test_superblock(const uint8_t *img, size_t len)
{
	uint8_t *b = malloc(len);
	struct img_parse p;
	size_t ok, failed, wrong;

	memcpy(b, img, len);
	put_le32(b + 4, 0xfffffff0u); /* more inodes than the table holds: refused */
	img_parse(&cont_squashfs, b, len, true, &p);
	CHECK_EQ(p.err, -EIO);
	img_parse_free(&p);

	memcpy(b, img, len);
	put_le32(b + 4, 3);
	img_parse(&cont_squashfs, b, len, true, &p);
	if (p.err == 0) {
		img_check_files(&p, b, len, src, &ok, &failed, &wrong);
		CHECK_EQ(wrong, 0);
	}
	img_parse_free(&p);

	memcpy(b, img, len);
	put_le16(b + 20, 9);
	img_parse(&cont_squashfs, b, len, false, &p);
	CHECK(p.err != 0);
	img_parse_free(&p);
	free(b);
}

int main(void)
{
	const char *dir;
	uint8_t *img;
	size_t len;

	if (!tu_have("mksquashfs")) {
		fprintf(stderr, "mksquashfs not found: skipped\n");
		return 77;
	}
	tfs_log_level = getenv("TEST_VERBOSE") ? TFS_LOG_DEBUG : 0;
	dir = img_tmpdir();
	CHECK(dir != NULL);
	if (!dir)
		return tu_exit();
	make_tree(dir);
	test_compressors(dir);
	img = make_image(dir, "-comp gzip -b 4K", &len);
	CHECK(img != NULL);
	if (img) {
		img_damaged = true;
		test_truncated(img, len);
		test_flips(img, len);
		test_superblock(img, len);
		free(img);
	}
	test_flipped_block(dir);
	img_damaged = false;
	if (!getenv("TEST_KEEP"))
		img_sh("rm -rf %s", dir);
	free(big);
	return tu_exit();
}

#else
int main(void)
{
	return 77;
}
#endif
