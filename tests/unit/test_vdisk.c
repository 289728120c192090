/* The virtual-disk containers (containers/vdisk/) on images qemu-img makes at test start from
 * a raw disk with data, holes and zero runs: qcow2 (v2 and v3), VHD fixed and dynamic, VHDX,
 * VMDK monolithicSparse.  Each must report one member, the disk, whose sparse map applied to
 * the image gives exactly what `qemu-img convert -O raw` gives; the extents in order, inside
 * the image and the virtual size.  Refusals (the member listed, unreadable, with a reason):
 * compressed qcow2 clusters and streamOptimized VMDK, a qcow2 over a backing file, encryption,
 * unknown features.  A dynamic VHD's sector bitmap with sectors absent: they read as zeros.
 * Damage -- a table entry past the end, two L1 entries naming one L2 table and two grain
 * entries one grain (the same bytes twice), a BAT entry outside the file, a truncated image,
 * bytes flipped anywhere -- must give an unreadable member or a refusal, never a crash or a
 * map outside the file. */
#include "containers/vdisk/vdisk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/byteio.h"
#include "common/log.h"
#include "testutil.h"

#define DISK (5u << 20) /* 5 MiB: several qcow2 L2 tables with 4 KiB clusters, VHD blocks */

struct got {
	char path[256];
	uint64_t size, stored;
	int unreadable, n;
	struct member_sparse *ext;
	size_t next;
	bool sparse;
};

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

static char dir[] = "/tmp/test_vdisk.XXXXXX";

static void quiet(int level, const char *msg, void *opaque)
{
	(void)level;
	(void)msg;
	(void)opaque;
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct got *g = opaque;

	g->n++;
	snprintf(g->path, sizeof(g->path), "%s", (const char *)m->path);
	g->size = m->size;
	g->stored = m->stored;
	g->unreadable = m->unreadable;
	g->sparse = m->sparse != NULL;
	free(g->ext);
	g->ext = NULL;
	g->next = m->nsparse;
	if (m->nsparse) {
		g->ext = malloc(m->nsparse * sizeof(*g->ext));
		memcpy(g->ext, m->sparse, m->nsparse * sizeof(*g->ext));
	}
	CHECK(m->stream == 0 && m->data_off == 0 && m->type == MEMBER_REG);
	CHECK(!m->unreadable || m->why);
	return 0;
}

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	(void)opaque;
	(void)s;
	(void)id;
	CHECK(!"no streams");
	return -EINVAL;
}

/* Parses img with whichever vdisk container probes it; the probe's answer in *ct. */
static int parse(const uint8_t *img, size_t len, const char *name, struct got *g,
		 const struct container **ct)
{
	struct src *s = src_from_mem(img, len);
	struct cont_sink sink = {.stream = on_stream, .member = on_member, .opaque = g,
				 .name = name};
	int err = -EINVAL;

	memset(g, 0, sizeof(*g));
	*ct = cont_probe_image(s, img, len < 512 ? len : 512);
	if (*ct)
		err = (*ct)->parse(s, &sink, NULL);
	src_free(s);
	return err;
}

/* The map's invariants, and the disk it gives compared with raw. */
static void check_map(const struct got *g, const uint8_t *img, size_t len, const uint8_t *raw,
		      size_t rawlen)
{
	uint8_t *disk;
	uint64_t end = 0;

	CHECK(g->sparse);
	CHECK_EQ(g->size, rawlen);
	if (g->size != rawlen)
		return;
	disk = calloc(1, rawlen + 1);
	for (size_t i = 0; i < g->next; i++) {
		const struct member_sparse *e = &g->ext[i];
		CHECK(e->len && e->off >= end && e->off + e->len <= g->size);
		CHECK(e->src + e->len <= len && e->src + e->len <= g->stored);
		end = e->off + e->len;
		if (e->off + e->len <= rawlen && e->src + e->len <= len)
			memcpy(disk + e->off, img + e->src, e->len);
	}
	CHECK(!memcmp(disk, raw, rawlen));
	free(disk);
}

static uint8_t *run_file(const char *cmd, const char *out, size_t *len)
{
	char full[1024], path[512];

	snprintf(full, sizeof(full), "cd %s && %s >/dev/null 2>&1", dir, cmd);
	if (system(full) != 0) {
		fprintf(stderr, "failed: %s\n", cmd);
		tu_failures++;
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, out);
	return tu_read_file(path, len);
}

/* Converts disk.raw to fmt with opts, and qemu's own view back to raw; checks the map. */
static void one(const char *fmt, const char *opts, const char *cname, size_t *blen,
		uint8_t **keep, size_t *rlen, uint8_t **rkeep)
{
	char cmd[512];
	size_t len, rawlen;
	uint8_t *img, *raw;
	struct got g;
	const struct container *ct;

	snprintf(cmd, sizeof(cmd), "rm -f img back.raw && qemu-img convert -f raw -O %s %s "
		 "disk.raw img && qemu-img convert -f %s -O raw img back.raw", fmt, opts, fmt);
	img = run_file(cmd, "img", &len);
	raw = run_file("true", "back.raw", &rawlen);
	if (!img || !raw)
		goto out;
	CHECK_EQ(parse(img, len, "dir/vm.qcow2.gz", &g, &ct), 0);
	CHECK(ct && !strcmp(ct->name, cname));
	CHECK_EQ(g.n, 1);
	CHECK(!strcmp(g.path, "vm.img"));
	CHECK_EQ(g.unreadable, 0);
	check_map(&g, img, len, raw, rawlen);
	if (tu_failures)
		fprintf(stderr, "format %s %s\n", fmt, opts);
	free(g.ext);
	if (keep) {
		*keep = img;
		*blen = len;
		img = NULL;
	}
	if (rkeep) {
		*rkeep = raw;
		*rlen = rawlen;
		raw = NULL;
	}
out:
	free(img);
	free(raw);
}

/* An image that must be listed unreadable with code want (or refused). */
static void expect_unreadable(const uint8_t *img, size_t len, int want, const char *what)
{
	struct got g;
	const struct container *ct;
	int err = parse(img, len, NULL, &g, &ct);

	if (err == 0) {
		CHECK_EQ(g.n, 1);
		if (g.unreadable != want)
			fprintf(stderr, "%s: unreadable %d, want %d\n", what, g.unreadable, want);
		CHECK_EQ(g.unreadable, want);
		CHECK(!strcmp(g.path, "disk.img"));
	} else {
		CHECK(err == -EINVAL || err == -EIO);
	}
	free(g.ext);
}

/* Damage that may or may not be noticed: whatever comes, a map inside the file. */
static void survive(const uint8_t *img, size_t len)
{
	struct got g;
	const struct container *ct;
	int err = parse(img, len, NULL, &g, &ct);

	if (!err && g.n == 1 && !g.unreadable) {
		uint64_t end = 0;
		for (size_t i = 0; i < g.next; i++) {
			CHECK(g.ext[i].len && g.ext[i].off >= end && g.ext[i].src + g.ext[i].len <= len);
			end = g.ext[i].off + g.ext[i].len;
		}
		CHECK(end <= g.size);
	}
	free(g.ext);
}

/* Flips bytes all over an image and truncates it at many lengths. */
static void batter(const uint8_t *img, size_t len)
{
	uint8_t *copy = malloc(len);
	uint32_t seed = 1;

	for (int round = 0; round < 200; round++) {
		memcpy(copy, img, len);
		for (int k = 0; k < 8; k++) {
			seed = seed * 1103515245 + 12345;
			size_t at = (seed >> 4) % (len < 1 << 20 ? len : 1 << 20);
			copy[at] ^= (uint8_t)(seed >> 24 | 1);
		}
		survive(copy, len);
	}
	for (size_t cut = 0; cut < len; cut += len / 97 + 1)
		survive(img, cut);
	free(copy);
}

static void qcow2_damage(const uint8_t *img, size_t len)
{
	uint8_t *c = malloc(len);
	uint64_t l1 = be64(img + 40), l2;

	/* an L1 entry past the end */
	memcpy(c, img, len);
	put_be64(c + l1, 0x8000000000000000ull | ((uint64_t)len + 65536 * 4));
	expect_unreadable(c, len, -EIO, "qcow2 L1 past the end");
	/* the L2 table at the header: garbage entries */
	memcpy(c, img, len);
	put_be64(c + l1, 0x8000000000000000ull);
	expect_unreadable(c, len, 0, "qcow2 L2 unallocated"); /* offset 0: unallocated */
	/* an L2 entry past the end, and one mapping the same cluster twice (allowed, bounded) */
	memcpy(c, img, len);
	l2 = be64(img + l1) & 0x00fffffffffffe00ull;
	put_be64(c + l2, 0x8000000000000000ull | ((uint64_t)len + (1 << 20)) >> 12 << 12);
	expect_unreadable(c, len, -EIO, "qcow2 L2 past the end");
	/* two L1 entries pointing to the same L2 table: the same clusters twice */
	memcpy(c, img, len);
	put_be64(c + l1 + 8, be64(img + l1));
	expect_unreadable(c, len, -EIO, "qcow2 L2 table twice");
	/* compressed cluster */
	memcpy(c, img, len);
	put_be64(c + l2, 0x4000000000000000ull | 4096);
	expect_unreadable(c, len, -EOPNOTSUPP, "qcow2 compressed");
	/* encrypted */
	memcpy(c, img, len);
	put_be32(c + 32, 1);
	expect_unreadable(c, len, -EACCES, "qcow2 encrypted");
	/* unknown incompatible feature, extended L2 */
	memcpy(c, img, len);
	put_be64(c + 72, 1ull << 40);
	expect_unreadable(c, len, -EOPNOTSUPP, "qcow2 unknown feature");
	memcpy(c, img, len);
	put_be64(c + 72, 16);
	expect_unreadable(c, len, -EOPNOTSUPP, "qcow2 extended L2");
	/* cluster bits */
	memcpy(c, img, len);
	put_be32(c + 20, 40);
	expect_unreadable(c, len, -EIO, "qcow2 cluster_bits");
	/* L1 size too small for the disk */
	memcpy(c, img, len);
	put_be32(c + 36, 0);
	expect_unreadable(c, len, -EIO, "qcow2 l1_size");
	/* truncated inside the data */
	expect_unreadable(img, len - 4096, -EIO, "qcow2 truncated");
	batter(img, len);
	free(c);
}

/* A dynamic VHD's sector bitmap says which sectors are there: the others read as zeros. */
static void vhd_bitmap(const uint8_t *img, size_t len, const uint8_t *raw, size_t rawlen)
{
	uint8_t *c = malloc(len), *want = malloc(rawlen);
	uint64_t dyn = be64(img + 16), bat = be64(img + dyn + 16);
	uint64_t block = (uint64_t)be32(img + bat) * 512;
	struct got g;
	const struct container *ct;

	CHECK(be32(img + bat) != 0xffffffffu); /* the disk has data at 0 */
	memcpy(c, img, len);
	memcpy(want, raw, rawlen);
	c[block] = 0x0f;     /* sectors 0-3 absent, 4-7 present */
	c[block + 1] = 0x80; /* 8 present, 9-15 absent */
	memset(want, 0, 4 * 512);
	memset(want + 9 * 512, 0, 7 * 512);
	CHECK_EQ(parse(c, len, "x.vhd", &g, &ct), 0);
	CHECK_EQ(g.unreadable, 0);
	CHECK(g.next >= 2 && g.ext[0].off == 4 * 512 && g.ext[0].len == 5 * 512 &&
	      g.ext[1].off == 16 * 512);
	check_map(&g, c, len, want, rawlen);
	free(g.ext);
	free(c);
	free(want);
}

static void vhd_damage(const uint8_t *img, size_t len)
{
	uint8_t *c = malloc(len);
	uint64_t dyn = be64(img + 16), bat = be64(img + dyn + 16);

	memcpy(c, img, len);
	put_be32(c + bat, (uint32_t)(len / 512 + 100));
	put_be32(c + len - 512 + 64, 0); /* the footer's checksum wrong: the copy at 0 is used */
	expect_unreadable(c, len, -EIO, "vhd BAT past the end");
	memcpy(c, img, len);
	put_be32(c + 60, 4);
	put_be32(c + len - 512 + 60, 4);
	expect_unreadable(c, len, -EOPNOTSUPP, "vhd differencing (checksums wrong)");
	batter(img, len);
	free(c);
}

static void vhdx_damage(const uint8_t *img, size_t len)
{
	uint8_t *c = malloc(len);

	memcpy(c, img, len);
	memset(c + 65536, 0, 4096);
	memset(c + 131072, 0, 4096);
	expect_unreadable(c, len, -EIO, "vhdx no header");
	expect_unreadable(img, len / 2, -EIO, "vhdx truncated");
	batter(img, len);
	free(c);
}

static void vmdk_damage(const uint8_t *img, size_t len)
{
	uint8_t *c = malloc(len);
	uint64_t gd = le64(img + 56) * 512;

	memcpy(c, img, len);
	put_le32(c + gd, (uint32_t)(len / 512 + 8));
	expect_unreadable(c, len, -EIO, "vmdk GT past the end");
	memcpy(c, img, len);
	uint64_t gt = le32(c + gd) * 512ull; /* two grains in the same bytes */
	put_le32(c + gt + 4 * 10, le32(c + gt));
	expect_unreadable(c, len, -EIO, "vmdk grain twice");
	memcpy(c, img, len);
	put_le64(c + 56, UINT64_MAX);
	expect_unreadable(c, len, -EOPNOTSUPP, "vmdk gd at end");
	expect_unreadable(img, len - 65536, -EIO, "vmdk truncated");
	batter(img, len);
	free(c);
}

int main(void)
{
	size_t len, rawlen;
	uint8_t *img = NULL, *seed, *raw = NULL;
	char cmd[512];

	if (!tu_have("qemu-img")) {
		fprintf(stderr, "qemu-img missing: skipped\n");
		return 77;
	}
	tfs_log_set_sink(quiet, NULL);
	CHECK(mkdtemp(dir) != NULL);
	/* data at 0, 1 MiB + 5 KiB (not cluster-aligned), a zero run written out, data at the end */
	seed = malloc(DISK);
	tu_fill(seed, DISK, 7, 0);
	FILE *f = fopen(strcat(strcpy(cmd, dir), "/disk.raw"), "wb");
	CHECK(f != NULL);
	CHECK(fwrite(seed, 1, 300000, f) == 300000);
	CHECK(fseek(f, (1 << 20) + 5120, SEEK_SET) == 0);
	CHECK(fwrite(seed + 300000, 1, 700000, f) == 700000);
	memset(seed, 0, 1 << 20);
	CHECK(fwrite(seed, 1, 1 << 20, f) == 1 << 20);
	CHECK(fseek(f, DISK - 70000, SEEK_SET) == 0);
	CHECK(fwrite(seed + 2000000, 1, 70000, f) == 70000);
	fclose(f);
	free(seed);

	one("qcow2", "-o compat=0.10,cluster_size=4096", "qcow2", NULL, NULL, NULL, NULL);
	one("qcow2", "-o compat=1.1", "qcow2", NULL, NULL, NULL, NULL);
	one("qcow2", "-o cluster_size=4096", "qcow2", &len, &img, NULL, NULL);
	if (img)
		qcow2_damage(img, len);
	free(img);
	img = NULL;
	one("vpc", "-o subformat=fixed", "vhd", NULL, NULL, NULL, NULL);
	one("vpc", "-o subformat=fixed,force_size=on", "vhd", NULL, NULL, NULL, NULL);
	one("vpc", "-o subformat=dynamic", "vhd", &len, &img, &rawlen, &raw);
	if (img && raw)
		vhd_bitmap(img, len, raw, rawlen);
	if (img)
		vhd_damage(img, len);
	free(raw);
	free(img);
	img = NULL;
	one("vhdx", "-o block_size=1M", "vhdx", &len, &img, NULL, NULL);
	if (img)
		vhdx_damage(img, len);
	free(img);
	img = NULL;
	one("vhdx", "-o subformat=fixed", "vhdx", NULL, NULL, NULL, NULL);
	one("vmdk", "-o subformat=monolithicSparse", "vmdk", &len, &img, NULL, NULL);
	if (img)
		vmdk_damage(img, len);
	free(img);
	img = NULL;

	/* refusals: compressed clusters and grains, a backing file */
	{
		struct got g;
		const struct container *ct;
		img = run_file("qemu-img convert -c -f raw -O qcow2 disk.raw c.qcow2", "c.qcow2", &len);
		if (img)
			expect_unreadable(img, len, -EOPNOTSUPP, "qcow2 compressed");
		free(img);
		img = run_file("qemu-img convert -f raw -O vmdk -o subformat=streamOptimized "
			       "disk.raw s.vmdk", "s.vmdk", &len);
		if (img)
			expect_unreadable(img, len, -EOPNOTSUPP, "vmdk streamOptimized");
		free(img);
		img = run_file("qemu-img create -f qcow2 -b disk.raw -F raw b.qcow2", "b.qcow2",
			       &len);
		if (img)
			expect_unreadable(img, len, -EOPNOTSUPP, "qcow2 backing");
		free(img);
		/* a name that says nothing: disk.img; an empty disk: no extents */
		img = run_file("qemu-img create -f qcow2 e.qcow2 1M", "e.qcow2", &len);
		if (img) {
			CHECK_EQ(parse(img, len, "e.qcow2", &g, &ct), 0);
			CHECK(!strcmp(g.path, "e.img") && g.size == 1 << 20 && g.next == 0 && g.sparse);
			free(g.ext);
		}
		free(img);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	return tu_exit();
}
