/* The NTFS container (containers/ntfs/) on images made at test time by ntfs-3g's tools
 * without mounting (mkntfs, then ntfscp for each file; ntfscp cannot make folders, so every
 * file is at the root -- folders, hard links and symbolic links are in tests/mount/
 * test_ntfs.py, on an image that ntfs-3g mounts): a resident file, a resident one that
 * crosses a 512-byte stride of its MFT record (its map takes two bytes from the update
 * sequence array), a non-resident one of many clusters, an empty one, a Unicode name; every
 * byte read through the maps reported is compared with the file copied in.  Then damage:
 * the image cut short at many points, bytes of the MFT overwritten, the boot sector zeroed
 * or wrong -- the parse returns 0 or -EIO / -EINVAL, never crashes, and every map it reports
 * stays inside the image and, for a file it says is readable and whose record is intact,
 * reads the right bytes.  Exit 77 when mkntfs or ntfscp is missing. */
#include "containers/container.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "testutil.h"

#if HAVE_LIBFSNTFS

#define MAXM 32

struct file {
	const char *name; /* as copied in (UTF-8) */
	uint8_t *data;
	size_t len;
};

static struct file files[] = {
	{ "small.txt", NULL, 6 },
	{ "stride.txt", NULL, 600 }, /* resident: ntfscp keeps up to about 600 bytes */
	{ "big.bin", NULL, 200000 },
	{ "empty", NULL, 0 },
	{ "h\xc3\xa9llo w\xc3\xb6rld \xe2\x98\x83.txt", NULL, 40 },
};
#define NFILES (sizeof(files) / sizeof(files[0]))

struct got {
	const uint8_t *img;
	size_t len;
	char path[MAXM][256];
	uint8_t *data[MAXM]; /* what the map reads; NULL when unreadable */
	uint64_t size[MAXM];
	size_t nsparse[MAXM];
	int type[MAXM], unreadable[MAXM];
	bool touched[MAXM];    /* an extent reads the damaged bytes */
	uint64_t dmg, dmg_len; /* the damaged bytes of the image */
	size_t n;
};

static int on_member(void *opaque, const struct arc_member *m)
{
	struct got *g = opaque;
	uint64_t end = 0;
	size_t i = g->n;

	CHECK(m->path[m->path_len] == '\0' && strlen((const char *)m->path) == m->path_len);
	CHECK(m->stream == 0 && m->data_off == 0);
	if (i >= MAXM)
		return 0;
	snprintf(g->path[i], sizeof(g->path[0]), "%s", (const char *)m->path);
	g->type[i] = m->type;
	g->size[i] = m->size;
	g->unreadable[i] = m->unreadable;
	g->nsparse[i] = m->nsparse;
	g->data[i] = NULL;
	if (m->type == MEMBER_REG && !m->unreadable) {
		g->data[i] = calloc(1, m->size + 1);
		for (size_t k = 0; k < m->nsparse; k++) {
			const struct member_sparse *x = &m->sparse[k];

			CHECK(x->len > 0 && x->off >= end && x->off + x->len <= m->size);
			CHECK(x->src <= g->len && x->len <= g->len - x->src);
			CHECK(x->src + x->len <= m->stored);
			end = x->off + x->len;
			if (x->src < g->dmg + g->dmg_len && g->dmg < x->src + x->len)
				g->touched[i] = true;
			if (x->off + x->len <= m->size && x->src <= g->len && x->len <= g->len - x->src)
				memcpy(g->data[i] + x->off, g->img + x->src, x->len);
		}
		CHECK(m->size == 0 || m->sparse != NULL);
	}
	g->n++;
	return 0;
}

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->n && i < MAXM; i++)
		free(g->data[i]);
	memset(g, 0, sizeof(*g));
}

static int parse(const uint8_t *img, size_t len, struct got *g, struct cont_stats *st)
{
	struct src *in = src_from_mem(img, len);
	struct cont_sink sink = { .member = on_member, .opaque = g, .name = "t.img" };
	int err;

	uint64_t dmg = g->dmg, dmg_len = g->dmg_len;

	memset(g, 0, sizeof(*g));
	g->dmg = dmg;
	g->dmg_len = dmg_len;
	g->img = img;
	g->len = len;
	err = cont_ntfs.parse(in, &sink, st);
	src_free(in);
	return err;
}

static int find(const struct got *g, const char *path)
{
	for (size_t i = 0; i < g->n && i < MAXM; i++)
		if (!strcmp(g->path[i], path))
			return (int)i;
	return -1;
}

/* The image: mkntfs, then each file copied in by ntfscp.  NULL when a tool fails. */
static uint8_t *make_image(const char *dir, size_t *len)
{
	char cmd[4096], path[512];
	uint8_t *img;

	snprintf(cmd, sizeof(cmd), "cd %s && truncate -s 4M t.img && mkntfs -F -f -q t.img "
		 ">/dev/null 2>&1", dir);
	if (system(cmd))
		return NULL;
	for (size_t i = 0; i < NFILES; i++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/f%zu", dir, i);
		f = fopen(path, "wb");
		if (!f || fwrite(files[i].data, 1, files[i].len, f) != files[i].len) {
			if (f)
				fclose(f);
			return NULL;
		}
		fclose(f);
		snprintf(cmd, sizeof(cmd), "ntfscp -f %s/t.img %s '/%s' >/dev/null 2>&1", dir, path,
			 files[i].name);
		if (system(cmd))
			return NULL;
	}
	snprintf(path, sizeof(path), "%s/t.img", dir);
	img = tu_read_file(path, len);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
	return img;
}

static void whole(const uint8_t *img, size_t len)
{
	struct cont_stats st = { 0 };
	struct got g;
	int i;

	struct src *in = src_from_mem(img, len);

	CHECK(cont_ntfs.probe(in, img, 512));
	CHECK(cont_probe_image(in, img, 512) == &cont_ntfs);
	CHECK(cont_probe(in, img, 512) == NULL); /* an image is an archive only with -r */
	src_free(in);
	CHECK_EQ(parse(img, len, &g, &st), 0);
	CHECK_EQ(g.n, NFILES); /* no $MFT, $Bitmap, ..., no "." */
	CHECK(!st.damaged);
	for (size_t k = 0; k < NFILES; k++) {
		i = find(&g, files[k].name);
		CHECK(i >= 0);
		if (i < 0)
			continue;
		CHECK_EQ(g.type[i], MEMBER_REG);
		CHECK_EQ(g.unreadable[i], 0);
		CHECK_EQ(g.size[i], files[k].len);
		CHECK(g.data[i] && !memcmp(g.data[i], files[k].data, files[k].len));
	}
	/* the resident value that crosses a stride: its two bytes come from the array */
	i = find(&g, "stride.txt");
	CHECK(i >= 0 && g.nsparse[i] >= 3);
	got_free(&g);
}

/* Every damaged variant: 0 or -EIO / -EINVAL, maps inside the image (on_member checks). */
static void damaged(const uint8_t *img, size_t len)
{
	uint8_t *c = malloc(len);
	struct got g = { 0 };
	int err;

	/* cut short */
	for (size_t cut = 512; cut < len; cut += cut < 65536 ? 4096 : 131072) {
		err = parse(img, cut, &g, NULL);
		CHECK(err == 0 || err == -EIO || err == -EINVAL);
		got_free(&g);
	}
	/* the boot sector zeroed: not NTFS; wrong: refused */
	memcpy(c, img, len);
	memset(c, 0, 512);
	CHECK(!cont_ntfs.probe(NULL, c, 512));
	memcpy(c, img, len);
	c[0x0b] = 0x33; /* bytes per sector */
	c[0x0d] = 0x07; /* sectors per cluster */
	err = parse(c, len, &g, NULL);
	CHECK(err == -EIO || err == -EINVAL);
	CHECK_EQ(g.n, 0);
	got_free(&g);
	/* bytes of the MFT overwritten, 8 at a time: each file is listed with its own bytes,
	 * or with the damaged ones where its map reads them, or unreadable, or left out --
	 * never other bytes */
	memcpy(c, img, len);
	for (size_t rec = 0; rec < 80; rec++) { /* users' files from 64 on */
		/* mft lcn * sectors per cluster * 512 (mkntfs's small images: 512-byte sectors) */
		uint64_t mft = (uint64_t)(img[0x30] | img[0x31] << 8) * img[0x0d] * 512;

		for (size_t at = 0; at < 1024; at += 61) {
			uint64_t off = mft + rec * 1024 + at;

			if (off + 8 > len)
				continue;
			memset(c + off, 0xa5, 8);
			g.dmg = off;
			g.dmg_len = 8;
			err = parse(c, len, &g, NULL);
			CHECK(err == 0 || err == -EIO || err == -EINVAL);
			for (size_t k = 0; k < NFILES; k++) {
				int i = find(&g, files[k].name);

				if (i >= 0 && g.data[i] && !g.touched[i])
					CHECK(g.size[i] == files[k].len &&
					      !memcmp(g.data[i], files[k].data, files[k].len));
			}
			got_free(&g);
			memcpy(c + off, img + off, 8);
		}
	}
	free(c);
}

static void log_quiet(int level, const char *msg, void *opaque)
{
	(void)level, (void)msg, (void)opaque;
}

int main(void)
{
	char dir[] = "/tmp/tarseek-ntfs-XXXXXX";
	uint8_t *img;
	size_t len = 0;

	if (!tu_have("mkntfs") || !tu_have("ntfscp")) {
		fprintf(stderr, "mkntfs or ntfscp missing (ntfs-3g): skipped\n");
		return 77;
	}
	tfs_log_set_sink(log_quiet, NULL);
	for (size_t i = 0; i < NFILES; i++) {
		files[i].data = malloc(files[i].len + 1);
		tu_fill(files[i].data, files[i].len, (uint32_t)i + 7, i != 2);
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	img = make_image(dir, &len);
	if (!img) {
		fprintf(stderr, "mkntfs or ntfscp failed\n");
		return 1;
	}
	whole(img, len);
	damaged(img, len);
	free(img);
	for (size_t i = 0; i < NFILES; i++)
		free(files[i].data);
	return tu_exit();
}

#else
int main(void)
{
	fprintf(stderr, "built without libfsntfs: skipped\n");
	return 77;
}
#endif
