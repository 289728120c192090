/* The FAT container (containers/fat/) on volumes mkfs.vfat and mcopy make at test time (in a
 * temporary folder, then read into memory): FAT12 with long names, an 8.3 lower-case name
 * (the NT flags), a folder tree, an empty file, a file of many clusters, a fragmented one
 * (mdel'ed gap), a read-only one, a volume label; FAT16 and FAT32.  Every file's bytes are
 * rebuilt from its member (the sparse map over the image) and compared with the source.
 * Damage made by hand: a chain that loops, one that meets a free cluster or points past the
 * volume (those files -EIO, the others intact), a folder whose entry points at its parent
 * (listed empty, the walk ends), a long name whose LFN checksum no longer matches (an orphan:
 * the 8.3 alias shows), a truncated image (what is read equals the source, the rest -EIO).  Skipped (77) without mkfs.vfat and mcopy. */
#include "containers/container.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"
#include "testutil.h"

#define MAXM 64

struct got {
	char path[MAXM][300];
	enum member_type type[MAXM];
	uint32_t mode[MAXM];
	uint64_t size[MAXM];
	size_t nsparse[MAXM];
	uint64_t first[MAXM]; /* the byte offset of its first data in the image */
	uint64_t hdr_off[MAXM];
	int unreadable[MAXM];
	uint8_t *data[MAXM];
	size_t n;
	const uint8_t *img;
	size_t len;
};

static char dir[] = "/tmp/tarseek-fat-XXXXXX";
static char logbuf[8192];

static void log_sink(int level, const char *msg, void *opaque)
{
	size_t n = strlen(logbuf);

	(void)level;
	(void)opaque;
	snprintf(logbuf + n, sizeof(logbuf) - n, "%s\n", msg);
}

/* The member's bytes as the mount reads them, checking member.h's promises on the map. */
static int on_member(void *opaque, const struct arc_member *m)
{
	struct got *g = opaque;
	size_t i = g->n;

	CHECK(i < MAXM);
	if (i >= MAXM)
		return -EINVAL;
	CHECK(m->path[m->path_len] == '\0' && m->stream == 0 && m->dos_time);
	snprintf(g->path[i], sizeof(g->path[0]), "%s", (const char *)m->path);
	g->type[i] = m->type;
	g->mode[i] = m->mode;
	g->size[i] = m->size;
	g->nsparse[i] = m->nsparse;
	g->unreadable[i] = m->unreadable;
	g->hdr_off[i] = m->hdr_off;
	g->data[i] = NULL;
	if (m->type == MEMBER_REG && !m->unreadable) {
		uint8_t *d = calloc(1, m->size + 1);
		uint64_t end = 0;
		CHECK(m->data_off <= g->len && m->stored <= g->len - m->data_off);
		if (!m->sparse) {
			CHECK(m->stored == m->size);
			memcpy(d, g->img + m->data_off, m->size);
			g->first[i] = m->data_off;
		} else {
			CHECK(m->nsparse >= 2);
			g->first[i] = m->data_off + m->sparse[0].src;
			for (size_t k = 0; k < m->nsparse; k++) {
				const struct member_sparse *e = &m->sparse[k];
				CHECK(e->off == end && e->len > 0); /* no holes in a FAT file */
				CHECK(e->src + e->len <= m->stored);
				memcpy(d + e->off, g->img + m->data_off + e->src, e->len);
				end = e->off + e->len;
			}
			CHECK_EQ(end, m->size);
		}
		g->data[i] = d;
	} else if (m->unreadable) {
		CHECK(m->unreadable == -EIO && m->why);
	}
	g->n++;
	return 0;
}

static int parse(const uint8_t *img, size_t len, struct got *g, struct cont_stats *st)
{
	struct src *in = src_from_mem(img, len);
	struct cont_sink sink = {.member = on_member, .opaque = g, .name = "fat.img"};
	int err;

	for (size_t i = 0; i < g->n; i++)
		free(g->data[i]);
	memset(g, 0, sizeof(*g));
	g->img = img;
	g->len = len;
	logbuf[0] = '\0';
	CHECK(cont_probe_image(in, img, len < 512 ? len : 512) == &cont_fat);
	err = cont_fat.parse(in, &sink, st);
	src_free(in);
	return err;
}

static int find(const struct got *g, const char *path)
{
	for (size_t i = 0; i < g->n; i++)
		if (!strcmp(g->path[i], path))
			return (int)i;
	return -1;
}

/* Member path has the bytes of the source file src (in the temporary folder). */
static void same(const struct got *g, const char *path, const char *src)
{
	char p[512];
	size_t len;
	int i = find(g, path);
	uint8_t *want;

	snprintf(p, sizeof(p), "%s/src/%s", dir, src);
	want = tu_read_file(p, &len);
	CHECK(i >= 0 && want);
	if (i < 0 || !want) {
		fprintf(stderr, "missing: %s\n", path);
		free(want);
		return;
	}
	CHECK(!g->unreadable[i] && g->type[i] == MEMBER_REG);
	CHECK_EQ(g->size[i], len);
	CHECK(g->data[i] && !memcmp(g->data[i], want, len));
	free(want);
}

static uint8_t *make(const char *name, const char *mkfs, const char *kib, size_t *len)
{
	char cmd[2048], p[300];
	size_t n;

	snprintf(cmd, sizeof(cmd),
		 "set -e; cd %s; export MTOOLS_SKIP_CHECK=1; rm -f %s; "
		 "mkfs.vfat %s -n MYLABEL -C %s %s >/dev/null; cd src; "
		 "mcopy -s -i ../%s 'A Long File Name.txt' lower.txt MiXed.Txt empty big.bin d1 "
		 "ro.txt ::; mcopy -i ../%s gap keep ::; mdel -i ../%s ::gap; %s"
		 "mcopy -i ../%s frag.bin ::; mattrib -i ../%s +r ::ro.txt",
		 dir, name, mkfs, name, kib, name, name, name,
		 /* FAT32: FSInfo's next-free hint made unknown, so that mtools fills the gap */
		 strstr(mkfs, "32") ? "printf '\\377\\377\\377\\377' | dd of=../f32.img bs=1 "
				      "seek=1004 conv=notrunc status=none; " : "",
		 name, name);
	uint8_t *out = tu_pipe(cmd, "", 0, &n);
	CHECK(out != NULL);
	free(out);
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return tu_read_file(p, len);
}

static void check_tree(const struct got *g)
{
	int i;

	same(g, "A Long File Name.txt", "A Long File Name.txt");
	same(g, "lower.txt", "lower.txt");
	same(g, "MiXed.Txt", "MiXed.Txt");
	same(g, "big.bin", "big.bin");
	same(g, "frag.bin", "frag.bin");
	same(g, "keep", "keep");
	same(g, "empty", "empty");
	same(g, "d1/d2/nested.txt", "d1/d2/nested.txt");
	same(g, "ro.txt", "ro.txt");
	CHECK(find(g, "gap") < 0 && find(g, "MYLABEL") < 0);
	i = find(g, "d1/d2");
	CHECK(i >= 0 && g->type[i] == MEMBER_DIR && g->mode[i] == 0755);
	i = find(g, "ro.txt");
	CHECK(i >= 0 && g->mode[i] == 0444);
	i = find(g, "keep");
	CHECK(i >= 0 && g->mode[i] == 0644);
	CHECK(i >= 0 && !memcmp(g->img + g->hdr_off[i], "KEEP       ", 11)); /* its entry */
	i = find(g, "d1/d2/nested.txt");
	CHECK(i >= 0 && !memcmp(g->img + g->hdr_off[i], "NESTED  TXT", 11));
	i = find(g, "frag.bin");
	if (i >= 0 && g->nsparse[i] < 2)
		fprintf(stderr, "frag.bin in %zu extents\n", g->nsparse[i]);
	CHECK(i >= 0 && g->nsparse[i] >= 2); /* in the gap, then after keep */
}

/* FAT12's entry of cluster c set to v. */
static void fat12_set(uint8_t *fat, uint32_t c, uint32_t v)
{
	uint8_t *p = fat + c + c / 2;
	uint16_t w = le16(p);

	w = (c & 1) ? (uint16_t)((w & 0x000F) | v << 4) : (uint16_t)((w & 0xF000) | v);
	put_le16(p, w);
}

static void fat12_damage(const uint8_t *img0, size_t len)
{
	uint8_t *img = malloc(len);
	uint32_t bps = le16(img0 + 11), csize = bps * img0[13], fat = le16(img0 + 14) * bps;
	uint64_t data = fat + (uint64_t)img0[16] * le16(img0 + 22) * bps + le16(img0 + 17) * 32u;
	struct got g = {0};
	struct cont_stats st;
	uint32_t c0;
	int i;

	CHECK_EQ(parse(img0, len, &g, &st), 0);
	i = find(&g, "big.bin");
	CHECK(i >= 0);
	if (i < 0)
		goto out;
	c0 = (uint32_t)((g.first[i] - data) / csize + 2);

	/* a loop: the 4th cluster back to the first */
	memcpy(img, img0, len);
	fat12_set(img + fat, c0 + 3, c0);
	CHECK_EQ(parse(img, len, &g, &st), 0);
	i = find(&g, "big.bin");
	CHECK(i >= 0 && g.unreadable[i] == -EIO && st.damaged && strstr(logbuf, "loops"));
	same(&g, "keep", "keep");
	same(&g, "frag.bin", "frag.bin");
	/* past the volume, then a free cluster */
	fat12_set(img + fat, c0 + 3, 0xFF0);
	CHECK_EQ(parse(img, len, &g, &st), 0);
	i = find(&g, "big.bin");
	CHECK(i >= 0 && g.unreadable[i] == -EIO && strstr(logbuf, "outside"));
	fat12_set(img + fat, c0 + 3, 0);
	CHECK_EQ(parse(img, len, &g, &st), 0);
	i = find(&g, "big.bin");
	CHECK(i >= 0 && g.unreadable[i] == -EIO && strstr(logbuf, "free"));
	same(&g, "A Long File Name.txt", "A Long File Name.txt");
	/* the chain ends early */
	fat12_set(img + fat, c0 + 3, 0xFFF);
	CHECK_EQ(parse(img, len, &g, &st), 0);
	i = find(&g, "big.bin");
	CHECK(i >= 0 && g.unreadable[i] == -EIO && strstr(logbuf, "shorter"));

	/* d1/d2's entry pointing at d1: d2 listed empty, the walk ends */
	memcpy(img, img0, len);
	uint8_t *d1 = memmem(img, len, "D1         \x10", 12);
	uint8_t *d2 = memmem(img, len, "D2         \x10", 12);
	CHECK(d1 && d2);
	if (d1 && d2) {
		memcpy(d2 + 26, d1 + 26, 2);
		CHECK_EQ(parse(img, len, &g, &st), 0);
		CHECK(find(&g, "d1/d2") >= 0 && find(&g, "d1/d2/nested.txt") < 0 && st.damaged);
		same(&g, "big.bin", "big.bin");
	}

	/* the long name's last LFN entry (just before its short entry) with another checksum:
	 * an orphan, ignored; the 8.3 alias shows */
	memcpy(img, img0, len);
	uint8_t *alias = memmem(img, len, "ALONGF~1TXT", 11);
	CHECK(alias && alias[-32 + 11] == 0x0F);
	if (alias) {
		alias[-32 + 13] ^= 0x55;
		CHECK_EQ(parse(img, len, &g, &st), 0);
		CHECK(find(&g, "A Long File Name.txt") < 0);
		CHECK(find(&g, "ALONGF~1.TXT") >= 0);
		same(&g, "ALONGF~1.TXT", "A Long File Name.txt");
	}

	/* truncated: what is read is the source's, the rest EIO */
	for (size_t cut = len / 8; cut < len; cut += len / 8) {
		struct src *in = src_from_mem(img0, cut);
		CHECK(cont_fat.probe(in, img0, 512));
		src_free(in);
		CHECK_EQ(parse(img0, cut, &g, &st), 0);
		for (size_t k = 0; k < g.n; k++)
			if (g.type[k] == MEMBER_REG && !g.unreadable[k])
				same(&g, g.path[k], g.path[k]);
	}
out:
	for (size_t k = 0; k < g.n; k++)
		free(g.data[k]);
	free(img);
}

static void volume(const char *name, const char *mkfs, const char *kib, bool damage)
{
	size_t len;
	uint8_t *img = make(name, mkfs, kib, &len);
	struct got g = {0};
	struct cont_stats st;
	struct src *in;

	CHECK(img != NULL);
	if (!img)
		return;
	in = src_from_mem(img, len);
	CHECK(!cont_parttable.probe(in, img, 512)); /* a FAT boot sector is not an MBR */
	src_free(in);
	CHECK_EQ(parse(img, len, &g, &st), 0);
	CHECK(!st.damaged);
	check_tree(&g);
	/* cut after the boot sector: the root folder (FAT32: its cluster) lies past the end
	 * (fuzz_fat's regress/fat32-root-past-end-memcpy-null: a memcpy from NULL) */
	CHECK_EQ(parse(img, 4096, &g, &st), 0);
	CHECK(st.damaged);
	for (size_t k = 0; k < g.n; k++)
		free(g.data[k]);
	if (damage)
		fat12_damage(img, len);
	free(img);
}

int main(void)
{
	char cmd[2048];
	size_t n;

	if (!tu_have("mkfs.vfat") || !tu_have("mcopy") || !tu_have("mdel") || !tu_have("mattrib"))
		return 77;
	tfs_log_set_sink(log_sink, NULL);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(cmd, sizeof(cmd),
		 "set -e; cd %s; mkdir -p src/d1/d2; cd src; seq 1 800 > 'A Long File Name.txt'; "
		 "echo lower > lower.txt; echo mixed > MiXed.Txt; : > empty; "
		 "head -c 40000 /dev/urandom > big.bin; echo nested > d1/d2/nested.txt; "
		 "echo ro > ro.txt; head -c 3000 /dev/urandom > gap; head -c 700 /dev/urandom > keep; "
		 "head -c 9000 /dev/urandom > frag.bin", dir);
	uint8_t *out = tu_pipe(cmd, "", 0, &n);
	CHECK(out != NULL);
	free(out);
	volume("f12.img", "-F 12 -s 1", "1024", true);
	volume("f16.img", "-F 16 -s 1", "8192", false);
	volume("f32.img", "-F 32 -s 1", "34000", false);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	return tu_exit();
}
