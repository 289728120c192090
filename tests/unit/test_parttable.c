/* The partition-table container (containers/image/parttable.c) on disks built in memory:
 * an MBR with primaries, an empty slot and an extended partition of two logical ones
 * (numbered 5, 6); an EBR chain that loops (it ends, what came before is kept); entries that
 * overlap or a FAT boot sector (not an MBR: the probe says no); a partition cut by the end of
 * the image (clipped) or past it (unreadable).  GPT built byte by byte with 512- and
 * 4096-byte sectors (names in UTF-16, '/' made '_'); the primary header's CRC or the entry
 * array's broken (the backup used), both copies broken (-EIO); and a GPT sfdisk makes, when
 * sfdisk is installed, whose partitions must sit where sfdisk -d says. */
#include "containers/container.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/crc32.h"
#include "common/log.h"
#include "testutil.h"

#define MAXM 16

struct got {
	char path[MAXM][256];
	uint64_t off[MAXM], size[MAXM];
	int unreadable[MAXM];
	size_t n;
};

static char last_log[4096]; /* every message since the last parse */

static void log_sink(int level, const char *msg, void *opaque)
{
	size_t n = strlen(last_log);

	(void)level;
	(void)opaque;
	snprintf(last_log + n, sizeof(last_log) - n, "%s\n", msg);
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct got *g = opaque;

	CHECK(g->n < MAXM);
	if (g->n >= MAXM)
		return -EINVAL;
	CHECK(m->path[m->path_len] == '\0' && m->stream == 0 && m->type == MEMBER_REG);
	CHECK(!m->sparse && m->mode == 0644);
	snprintf(g->path[g->n], sizeof(g->path[0]), "%s", (const char *)m->path);
	g->off[g->n] = m->data_off;
	g->size[g->n] = m->size;
	g->unreadable[g->n] = m->unreadable;
	if (!m->unreadable)
		CHECK(m->stored == m->size);
	g->n++;
	return 0;
}

/* Probes (cont_probe_image must choose the partition table) and parses. */
static int parse(const uint8_t *img, size_t len, struct got *g, struct cont_stats *st)
{
	struct src *in = src_from_mem(img, len);
	struct cont_sink sink = {.member = on_member, .opaque = g, .name = "disk.img"};
	int err;

	memset(g, 0, sizeof(*g));
	last_log[0] = '\0';
	CHECK(cont_probe_image(in, img, len < 512 ? len : 512) == &cont_parttable);
	err = cont_parttable.parse(in, &sink, st);
	src_free(in);
	return err;
}

static bool probed(const uint8_t *img, size_t len)
{
	struct src *in = src_from_mem(img, len);
	bool yes = cont_parttable.probe(in, img, len < 512 ? len : 512);

	src_free(in);
	return yes;
}

static void mbr_entry(uint8_t *s, int slot, uint8_t type, uint32_t start, uint32_t count)
{
	uint8_t *e = s + 446 + 16 * slot;

	memset(e, 0, 16);
	e[4] = type;
	put_le32(e + 8, start);
	put_le32(e + 12, count);
	s[510] = 0x55;
	s[511] = 0xAA;
}

static void mbr(void)
{
	size_t len = 4 << 20; /* 8192 sectors */
	uint8_t *d = calloc(1, len);
	struct got g;
	struct cont_stats st;

	mbr_entry(d, 0, 0x83, 64, 1000);
	mbr_entry(d, 2, 0x0F, 2048, 4096);   /* extended: EBRs at 2048 and 4096 */
	mbr_entry(d + 2048 * 512, 0, 0x83, 32, 100); /* p5 at 2080 */
	mbr_entry(d + 2048 * 512, 1, 0x05, 2048, 2048);
	mbr_entry(d + 4096 * 512, 0, 0x07, 8, 200); /* p6 at 4104 */
	mbr_entry(d, 3, 0x0C, 7000, 2000);   /* p4: runs past the end (8192 sectors) */
	CHECK_EQ(parse(d, len, &g, &st), 0);
	CHECK_EQ(g.n, 4);
	CHECK(!strcmp(g.path[0], "p1.img") && g.off[0] == 64 * 512 && g.size[0] == 1000 * 512);
	CHECK(!strcmp(g.path[1], "p5.img") && g.off[1] == 2080 * 512 && g.size[1] == 100 * 512);
	CHECK(!strcmp(g.path[2], "p6.img") && g.off[2] == 4104 * 512 && g.size[2] == 200 * 512);
	CHECK(!strcmp(g.path[3], "p4.img") && g.off[3] == 7000 * 512);
	CHECK_EQ(g.size[3], (8192 - 7000) * 512); /* clipped */
	CHECK(st.damaged && strstr(last_log, "clipped"));

	/* the second EBR links back to the first: the chain ends there, p5 and p6 kept */
	mbr_entry(d + 4096 * 512, 1, 0x05, 0, 2048);
	CHECK_EQ(parse(d, len, &g, &st), 0);
	CHECK_EQ(g.n, 4);
	CHECK(!strcmp(g.path[2], "p6.img") && st.damaged && strstr(last_log, "loop"));
	/* ... and to itself */
	mbr_entry(d + 4096 * 512, 1, 0x05, 2048, 2048);
	CHECK_EQ(parse(d, len, &g, &st), 0);
	CHECK_EQ(g.n, 4);

	/* overlapping primaries: not an MBR */
	mbr_entry(d, 1, 0x83, 500, 100);
	CHECK(!probed(d, len));
	mbr_entry(d, 1, 0, 0, 0);
	CHECK(probed(d, len));
	/* a status byte other than 0x00/0x80: not an MBR */
	d[446] = 0x12;
	CHECK(!probed(d, len));
	d[446] = 0x80;
	CHECK(probed(d, len));
	/* a FAT boot sector (its BPB) with the same bytes: not an MBR */
	d[0] = 0xEB;
	d[1] = 0x3C;
	d[2] = 0x90;
	put_le16(d + 11, 512);
	d[13] = 4;
	put_le16(d + 14, 1);
	d[16] = 2;
	CHECK(!probed(d, len));
	free(d);
}

/* A GPT of sector size ss on a disk of len bytes: entries (start, count, name) in slots 0,
 * 2, ...; both copies. */
static void gpt_build(uint8_t *d, size_t len, unsigned ss, int n, const uint64_t (*parts)[2],
		      const char *const *names)
{
	uint64_t last = len / ss - 1;
	uint8_t *arr = calloc(128, 128);

	memset(d, 0, len);
	mbr_entry(d, 0, 0xEE, 1, (uint32_t)(last < 0xFFFFFFFF ? last : 0xFFFFFFFF));
	for (int i = 0; i < n; i++) {
		uint8_t *e = arr + 128 * (size_t)(2 * i);
		memset(e, 0x11 + i, 16);
		put_le64(e + 32, parts[i][0]);
		put_le64(e + 40, parts[i][0] + parts[i][1] - 1);
		for (size_t k = 0; names[i] && names[i][k]; k++)
			put_le16(e + 56 + 2 * k, (uint8_t)names[i][k]);
	}
	for (int copy = 0; copy < 2; copy++) {
		uint64_t at = copy ? last : 1, arr_lba = copy ? last - 16384 / ss : 2;
		uint8_t *h = d + at * ss;
		memcpy(d + arr_lba * ss, arr, 16384);
		memcpy(h, "EFI PART", 8);
		put_le32(h + 8, 0x10000);
		put_le32(h + 12, 92);
		put_le64(h + 24, at);
		put_le64(h + 32, copy ? 1 : last);
		put_le64(h + 72, arr_lba);
		put_le32(h + 80, 128);
		put_le32(h + 84, 128);
		put_le32(h + 88, tfs_crc32(0, arr, 16384));
		put_le32(h + 16, tfs_crc32(0, h, 92));
	}
	free(arr);
}

static void gpt(unsigned ss)
{
	static const uint64_t parts[][2] = {{40, 100}, {200, 50}};
	static const char *const names[] = {"EFI/boot", NULL};
	size_t len = (size_t)ss * 1024;
	uint8_t *d = malloc(len);
	struct got g;
	struct cont_stats st;

	gpt_build(d, len, ss, 2, parts, names);
	CHECK_EQ(parse(d, len, &g, &st), 0);
	CHECK_EQ(g.n, 2);
	CHECK(!strcmp(g.path[0], "p1-EFI_boot.img") && g.off[0] == 40 * ss &&
	      g.size[0] == 100 * ss);
	CHECK(!strcmp(g.path[1], "p3.img") && g.off[1] == 200 * ss && g.size[1] == 50 * ss);
	CHECK(!st.damaged);

	/* the primary header's CRC broken: the backup */
	d[ss + 40] ^= 1;
	CHECK_EQ(parse(d, len, &g, &st), 0);
	CHECK(g.n == 2 && g.off[1] == 200 * ss && st.damaged && strstr(last_log, "backup"));
	/* the primary array's CRC broken: the backup */
	d[ss + 40] ^= 1;
	d[2 * ss + 128 * 2 + 33] ^= 1;
	CHECK_EQ(parse(d, len, &g, &st), 0);
	CHECK(g.n == 2 && g.off[1] == 200 * ss && st.damaged && strstr(last_log, "backup"));
	/* and the backup header too: refused */
	d[len - ss + 30] ^= 1;
	CHECK_EQ(parse(d, len, &g, &st), -EIO);
	CHECK_EQ(g.n, 0);
	CHECK(strstr(last_log, "damaged"));
	/* no protective MBR, no signature at all: no partition table */
	memset(d, 0, len);
	CHECK(!probed(d, len));
	free(d);
}

static void sfdisk_gpt(void)
{
	char dir[] = "/tmp/tarseek-pt-XXXXXX", cmd[1024], path[300];
	uint8_t *d;
	size_t len;
	struct got g;
	struct cont_stats st;

	if (!tu_have("sfdisk") || !mkdtemp(dir))
		return;
	snprintf(cmd, sizeof(cmd),
		 "cd %s && truncate -s 8M d.img && printf 'label: gpt\\nstart=2048, size=4096, "
		 "name=\"données\"\\nstart=8192, size=2048\\n' | sfdisk -q d.img && "
		 "sfdisk -d d.img | grep -c start=", dir);
	uint8_t *out = tu_pipe(cmd, "", 0, &len);
	CHECK(out != NULL);
	free(out);
	snprintf(path, sizeof(path), "%s/d.img", dir);
	d = tu_read_file(path, &len);
	CHECK(d != NULL);
	if (d) {
		CHECK_EQ(parse(d, len, &g, &st), 0);
		CHECK_EQ(g.n, 2);
		CHECK(!strcmp(g.path[0], "p1-données.img") && g.off[0] == 2048 * 512 &&
		      g.size[0] == 4096 * 512);
		CHECK(!strcmp(g.path[1], "p2.img") && g.off[1] == 8192 * 512);
	}
	free(d);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
}

int main(void)
{
	tfs_log_set_sink(log_sink, NULL);
	mbr();
	gpt(512);
	gpt(4096);
	sfdisk_gpt();
	return tu_exit();
}
