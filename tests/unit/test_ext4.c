/* The ext2/3/4 container (containers/ext4/) on images made at test time by mkfs.ext4/ext3/ext2
 * -d from a tree in a temporary folder, then edited with debugfs -w (no root needed): an mtime
 * with nanoseconds and a uid above 65535, devices, a fragmented file (written after files
 * around it were removed), a folder linked twice, fscrypt's flag on a file and a folder,
 * needs_recovery, unwritten extents inside the size; bigalloc; inline data (in i_block and in
 * system.data); user.* xattrs.  Each image is loaded into memory and parsed with a sink that
 * checks what container.h and member.h promise (paths NUL-terminated, maps in order and
 * inside the image) and reads every file's bytes through its map, compared with the source
 * tree.  Then damage: a zeroed superblock (not ext4), a truncated image and nonsense in the
 * superblock or a group descriptor (refused, -EIO), a wrong descriptor checksum (read), an
 * ext2 file whose triple-indirect block names itself (the walk's budget), a few hundred
 * images with bytes of their metadata flipped (never a crash, a clear result, maps inside the
 * image), and what fuzz_ext4 once broke (tests/fuzz/regress/fuzz_ext4).
 */
#include "containers/container.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "common/log.h"
#include "testutil.h"

#if HAVE_EXT2FS

#define MAXM 64

struct mem {
	char path[512];
	char link[512];
	enum member_type type;
	uint64_t size, uid, gid;
	uint32_t mode, nsec, major, minor;
	int64_t mtime;
	int unreadable;
	uint8_t *data; /* the bytes the map gives (regular files) */
	size_t nxattrs;
	char xname[64], xvalue[64]; /* the first xattr */
	size_t nsparse;
};

struct got {
	const uint8_t *img;
	size_t img_len;
	struct mem m[MAXM];
	size_t n;
	bool strict; /* fail on more than MAXM members (damaged images may report fewer) */
};

static char tmp[] = "/tmp/tarseek-ext4-XXXXXX";
static int nlogs;

static void log_sink(int level, const char *msg, void *opaque)
{
	(void)level;
	(void)msg;
	(void)opaque;
	nlogs++;
}

static int on_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	(void)opaque;
	(void)s;
	(void)id;
	CHECK(!"ext4 declares no stream");
	return -EINVAL;
}

/* The member's bytes read through its map, as arch_file_read would; NULL if a check fails. */
static uint8_t *read_map(struct got *g, const struct arc_member *m)
{
	uint8_t *d = calloc(1, m->size + 1);
	uint64_t last = 0;

	if (!d)
		return NULL;
	if (!m->sparse) {
		CHECK(m->stored == m->size);
		CHECK(m->data_off <= g->img_len && m->size <= g->img_len - m->data_off);
		if (m->data_off <= g->img_len && m->size <= g->img_len - m->data_off)
			memcpy(d, g->img + m->data_off, m->size);
		return d;
	}
	CHECK(m->data_off == 0);
	for (size_t i = 0; i < m->nsparse; i++) {
		const struct member_sparse *s = &m->sparse[i];

		CHECK(s->len > 0 && s->off >= last && s->off + s->len <= m->size);
		CHECK(s->src + s->len <= m->stored && m->stored <= g->img_len);
		if (s->len == 0 || s->off < last || s->off + s->len > m->size ||
		    s->src + s->len > g->img_len) {
			free(d);
			return NULL;
		}
		memcpy(d + s->off, g->img + s->src, s->len);
		last = s->off + s->len;
	}
	return d;
}

static int on_member(void *opaque, const struct arc_member *m)
{
	struct got *g = opaque;
	struct mem *x;

	CHECK(m->path && m->path[m->path_len] == '\0' && strlen((const char *)m->path) == m->path_len);
	CHECK(m->link && m->link[m->link_len] == '\0' && m->stream == 0);
	CHECK((m->mode & ~07777u) == 0);
	if (g->n == MAXM) {
		CHECK(!g->strict);
		return 0;
	}
	x = &g->m[g->n++];
	memset(x, 0, sizeof(*x));
	snprintf(x->path, sizeof(x->path), "%s", (const char *)m->path);
	snprintf(x->link, sizeof(x->link), "%s", (const char *)m->link);
	x->type = m->type;
	x->size = m->size;
	x->uid = m->uid;
	x->gid = m->gid;
	x->mode = m->mode;
	x->mtime = m->mtime_sec;
	x->nsec = m->mtime_nsec;
	x->major = m->dev_major;
	x->minor = m->dev_minor;
	x->unreadable = m->unreadable;
	x->nsparse = m->nsparse;
	x->nxattrs = m->nxattrs;
	for (size_t i = 0; i < m->nxattrs; i++)
		CHECK(!strncmp(m->xattrs[i].name, "user.", 5));
	if (m->nxattrs) {
		snprintf(x->xname, sizeof(x->xname), "%s", m->xattrs[0].name);
		snprintf(x->xvalue, sizeof(x->xvalue), "%.*s",
			 (int)(m->xattrs[0].len < 63 ? m->xattrs[0].len : 63),
			 (const char *)m->xattrs[0].value);
	}
	if (m->type == MEMBER_REG && !m->unreadable)
		x->data = read_map(g, m);
	if (m->unreadable)
		CHECK(m->why && *m->why);
	return 0;
}

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->m[i].data);
	g->n = 0;
}

/* Parses img[0..len): the parse's return (probe must say yes unless want_probe is false). */
static int parse(struct got *g, const uint8_t *img, size_t len, bool want_probe,
		 struct cont_stats *st)
{
	struct cont_sink sink = {.stream = on_stream, .member = on_member, .opaque = g,
				 .name = "test.img"};
	struct src *in = src_from_mem(img, len);
	int err = -EINVAL;

	g->img = img;
	g->img_len = len;
	CHECK(in);
	if (!in)
		return -ENOMEM;
	if (cont_ext4.probe(in, img, len < 512 ? len : 512))
		err = cont_ext4.parse(in, &sink, st);
	else
		CHECK(!want_probe);
	src_free(in);
	return err;
}

static const struct mem *find(const struct got *g, const char *path)
{
	for (size_t i = 0; i < g->n; i++)
		if (!strcmp(g->m[i].path, path))
			return &g->m[i];
	return NULL;
}

/* Runs the command fmt, in which every %1$s is the temporary folder. */
static int sh(const char *fmt)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), fmt, tmp);
	return system(cmd);
}

/* The tree every image is made from (tmp/src), and its files' bytes. */
static void make_tree(void)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd),
		 "set -e; cd %s; mkdir -p src/d/e src/deep/1/2/3; cd src;"
		 "printf 'hello\\n' > a.txt; head -c 10000 /dev/urandom > d/big;"
		 "head -c 300000 /dev/urandom > d/e/three;"
		 "ln -s a.txt short; ln -s $(printf 'y%%.0s' $(seq 1 300)) long;"
		 "ln d/big d/hard; mkfifo fifo; truncate -s 2M sparse;"
		 "printf abc | dd of=sparse bs=1 seek=700000 conv=notrunc 2>/dev/null;"
		 "printf 'uni' > $(printf '\\303\\274n\\303\\257'); chmod 4751 a.txt;"
		 "printf x > deep/1/2/3/leaf; : > empty; truncate -s 1M all-hole; head -c 200 /dev/urandom > mid;"
		 "(setfattr -n user.comment -v 'a small file' a.txt || true) 2>/dev/null;"
		 "cd ..; for i in 1 2 3 4 5 6; do head -c 8192 /dev/urandom > f$i; done;"
		 "head -c 40000 /dev/urandom > frag",
		 tmp);
	CHECK(system(cmd) == 0);
}

/* Edits made with debugfs -w on every image: times, owners, devices, fragmentation. */
static void edit(const char *img)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd),
		 "cd %s && cat > cmds <<'EOF'\n"
		 "set_inode_field /a.txt mtime_extra 0x75BCD15C\n"
		 "set_inode_field /a.txt uid 100000\n"
		 "set_inode_field /a.txt gid 70001\n"
		 "mknod cdev c 4 7\n"
		 "mknod bdev b 259 300\n"
		 "write f1 f1\nwrite f2 f2\nwrite f3 f3\nwrite f4 f4\nwrite f5 f5\nwrite f6 f6\n"
		 "rm f2\nrm f4\n"
		 "write frag frag\n"
		 "EOF\n"
		 "debugfs -w -f cmds %s >/dev/null 2>&1",
		 tmp, img);
	CHECK(system(cmd) == 0);
}

static void check_file(const struct got *g, const char *path, const char *src)
{
	char full[1024];
	size_t len = 0;
	uint8_t *want;
	const struct mem *x = find(g, path);

	snprintf(full, sizeof(full), "%s/%s", tmp, src);
	want = tu_read_file(full, &len);
	CHECK(want);
	CHECK(x);
	if (!x || !want) {
		fprintf(stderr, "  missing %s\n", path);
		free(want);
		return;
	}
	CHECK(x->type == MEMBER_REG && x->size == len && !x->unreadable);
	CHECK(x->data && (len == 0 || !memcmp(x->data, want, len)));
	free(want);
}

/* One image made by mkfs (args), edited, parsed and compared. */
static void test_image(const char *mkfs, const char *opts, bool edited)
{
	char cmd[4096], img[1024];
	struct got g = {.strict = true};
	struct cont_stats st;
	const struct mem *x;
	uint8_t *buf;
	size_t len;
	int err;

	fprintf(stderr, "%s %s\n", mkfs, opts);
	snprintf(img, sizeof(img), "%s/img", tmp);
	snprintf(cmd, sizeof(cmd), "%s -q -F %s -d %s/src %s 16M >/dev/null 2>&1", mkfs, opts,
		 tmp, img);
	CHECK(system(cmd) == 0);
	if (edited)
		edit(img);
	buf = tu_read_file(img, &len);
	CHECK(buf);
	if (!buf)
		return;
	err = parse(&g, buf, len, true, &st);
	CHECK_EQ(err, 0);
	CHECK_EQ(st.members, g.n);
	CHECK(!st.damaged);
	check_file(&g, "a.txt", "src/a.txt");
	check_file(&g, "d/big", "src/d/big");
	check_file(&g, "d/e/three", "src/d/e/three");
	if (!strstr(opts, "inline_data")) /* mkfs.ext4 -d 1.47.0 cuts it there (its size) */
		check_file(&g, "sparse", "src/sparse");
	check_file(&g, "\303\274n\303\257", "src/\303\274n\303\257");
	check_file(&g, "deep/1/2/3/leaf", "src/deep/1/2/3/leaf");
	check_file(&g, "empty", "src/empty");
	check_file(&g, "mid", "src/mid");
	check_file(&g, "all-hole", "src/all-hole");
	x = find(&g, "mid");
	if (strstr(opts, "inline_data")) /* 60 bytes in i_block, 140 in system.data */
		CHECK(x && x->nsparse == 2);
	x = find(&g, "a.txt");
	CHECK(x && x->mode == 04751);
	snprintf(cmd, sizeof(cmd), "%s/src/a.txt", tmp);
	if (getxattr(cmd, "user.comment", img, sizeof(img)) == 12)
		CHECK(x && x->nxattrs == 1 && !strcmp(x->xname, "user.comment") &&
		      !strcmp(x->xvalue, "a small file"));
	x = find(&g, "d/hard");
	if (find(&g, "d/big") < x)
		CHECK(x && x->type == MEMBER_HARDLINK && !strcmp(x->link, "d/big"));
	else
		CHECK(x && find(&g, "d/big")->type == MEMBER_HARDLINK);
	x = find(&g, "short");
	CHECK(x && x->type == MEMBER_SYMLINK && !strcmp(x->link, "a.txt"));
	x = find(&g, "long");
	CHECK(x && x->type == MEMBER_SYMLINK && strlen(x->link) == 300 && x->link[299] == 'y');
	x = find(&g, "fifo");
	CHECK(x && x->type == MEMBER_FIFO);
	x = find(&g, "d/e");
	CHECK(x && x->type == MEMBER_DIR && x->mode == 0755);
	x = find(&g, "lost+found");
	CHECK(x && x->type == MEMBER_DIR);
	x = find(&g, "sparse");
	CHECK(x && (strstr(opts, "inline_data") || (x->nsparse >= 1 && x->nsparse < 4)));
	if (edited) {
		x = find(&g, "a.txt");
		CHECK(x && x->uid == 100000 && x->gid == 70001);
		if (!strstr(opts, "-I 128"))
			CHECK(x && x->nsec == 0x75BCD15Cu >> 2);
		x = find(&g, "cdev");
		CHECK(x && x->type == MEMBER_CHR && x->major == 4 && x->minor == 7);
		x = find(&g, "bdev");
		CHECK(x && x->type == MEMBER_BLK && x->major == 259 && x->minor == 300);
		check_file(&g, "frag", "frag");
		check_file(&g, "f5", "f5");
		CHECK(!find(&g, "f2"));
		x = find(&g, "frag");
		CHECK(x && x->nsparse >= 2); /* in the holes f2 and f4 left */
	}
	got_free(&g);
	free(buf);
}

/* A folder linked a second time (debugfs ln): listed once, the second left out. */
static void test_dir_twice(void)
{
	char img[1024];
	struct got g = {0};
	struct cont_stats st;
	uint8_t *buf;
	size_t len;

	snprintf(img, sizeof(img), "%s/img", tmp);
	CHECK(sh("mkfs.ext4 -q -F -d %1$s/src %1$s/img 16M >/dev/null 2>&1 && "
		 "debugfs -w -R 'ln /d /d/e/loop' %1$s/img >/dev/null 2>&1") == 0);
	buf = tu_read_file(img, &len);
	CHECK(buf);
	if (!buf)
		return;
	CHECK_EQ(parse(&g, buf, len, true, &st), 0);
	CHECK(st.damaged);
	CHECK(find(&g, "d/e/three") && !find(&g, "d/e/loop") && !find(&g, "d/e/loop/big"));
	got_free(&g);
	free(buf);
}

/* fscrypt's flag on a file (listed, -EACCES) and on a folder (its entries not listed); the
 * journal's needs_recovery flag (read as it is). */
static void test_flags(void)
{
	struct got g = {0};
	struct cont_stats st;
	const struct mem *x;
	uint8_t *buf;
	size_t len;
	char img[1024];

	snprintf(img, sizeof(img), "%s/img", tmp);
	CHECK(sh("mkfs.ext4 -q -F -d %1$s/src %1$s/img 16M >/dev/null 2>&1 && "
		 "debugfs -w -R 'set_inode_field /d/e/three flags 0x80800' %1$s/img >/dev/null 2>&1 && "
		 "debugfs -w -R 'set_inode_field /deep/1 flags 0x80800' %1$s/img >/dev/null 2>&1 && "
		 "debugfs -w -R 'feature needs_recovery' %1$s/img >/dev/null 2>&1") == 0);
	buf = tu_read_file(img, &len);
	CHECK(buf);
	if (!buf)
		return;
	CHECK_EQ(parse(&g, buf, len, true, &st), 0);
	x = find(&g, "d/e/three");
	CHECK(x && x->type == MEMBER_REG && x->unreadable == -EACCES && x->size == 300000);
	x = find(&g, "deep/1");
	CHECK(x && x->type == MEMBER_DIR && !find(&g, "deep/1/2"));
	check_file(&g, "d/big", "src/d/big");
	got_free(&g);
	free(buf);
}

/* metadata_csum: a group descriptor's checksum wrong is read (all of it); its inode table at
 * block 0 is refused. */
static void test_descriptors(void)
{
	struct got g = {0};
	struct cont_stats st;
	uint8_t *buf;
	size_t len;
	char img[1024];

	snprintf(img, sizeof(img), "%s/img-csum", tmp);
	CHECK(sh("mkfs.ext4 -q -F -b 4096 -O 64bit,metadata_csum -d %1$s/src %1$s/img-csum 16M "
		 ">/dev/null 2>&1") == 0);
	buf = tu_read_file(img, &len);
	CHECK(buf && len > 8192);
	if (!buf)
		return;
	buf[4096 + 0x1e] ^= 0x5a; /* bg_checksum */
	CHECK_EQ(parse(&g, buf, len, true, &st), 0);
	check_file(&g, "d/e/three", "src/d/e/three");
	got_free(&g);
	memset(buf + 4096 + 8, 0, 4); /* bg_inode_table_lo */
	CHECK_EQ(parse(&g, buf, len, true, &st), -EIO);
	CHECK_EQ(g.n, 0);
	free(buf);
}

/* ext2: a file whose triple-indirect block names itself in every slot (16 M data blocks
 * through one block) and whose size says 1 TiB: the walk's budget ends it, promptly. */
static void test_indirect_loop(void)
{
	struct got g = {0};
	struct cont_stats st;
	uint8_t *buf, *out;
	size_t len, olen;
	char img[256], cmd[4096];
	unsigned long blk = 0;

	snprintf(img, sizeof(img), "%s/img-loop", tmp);
	snprintf(cmd, sizeof(cmd),
		 "mkfs.ext2 -q -F -d %s/src %s 16M >/dev/null 2>&1 && debugfs -R 'bmap /d/big 0' %s "
		 "2>/dev/null", tmp, img, img);
	out = tu_pipe(cmd, NULL, 0, &olen);
	CHECK(out && olen > 0);
	if (out)
		blk = strtoul((const char *)out, NULL, 10);
	free(out);
	CHECK(blk > 0);
	snprintf(cmd, sizeof(cmd),
		 "debugfs -w -R 'set_inode_field /d/e/three block[TIND] %lu' %s >/dev/null 2>&1 && "
		 "debugfs -w -R 'set_inode_field /d/e/three size 0x10000000000' %s >/dev/null 2>&1",
		 blk, img, img);
	CHECK(system(cmd) == 0);
	buf = tu_read_file(img, &len);
	CHECK(buf && blk * 1024 + 1024 <= len);
	if (!buf || blk * 1024 + 1024 > len) {
		free(buf);
		return;
	}
	for (size_t i = 0; i < 256; i++) {
		uint32_t v = (uint32_t)blk;

		memcpy(buf + blk * 1024 + 4 * i, &v, 4); /* little-endian host (x86, arm) */
	}
	CHECK_EQ(parse(&g, buf, len, true, &st), 0);
	CHECK(st.damaged);
	got_free(&g);
	free(buf);
}

/* Unwritten extents (debugfs fallocate) inside the size: zeros, whatever their blocks hold. */
static void test_unwritten(void)
{
	struct got g = {0};
	struct cont_stats st;
	const struct mem *x;
	uint8_t *buf, *out;
	size_t len, olen;
	char img[256], cmd[4096];
	unsigned long blk = 0;

	snprintf(img, sizeof(img), "%s/img-unwritten", tmp);
	snprintf(cmd, sizeof(cmd),
		 "mkfs.ext4 -q -F -d %s/src %s 16M >/dev/null 2>&1 && "
		 "debugfs -w -R 'write %s/f1 fa' %s >/dev/null 2>&1 && "
		 "debugfs -w -R 'fallocate /fa 8 30' %s >/dev/null 2>&1 && "
		 "debugfs -w -R 'set_inode_field /fa size 30000' %s >/dev/null 2>&1 && "
		 "debugfs -R 'bmap /fa 10' %s 2>/dev/null", tmp, img, tmp, img, img, img, img);
	out = tu_pipe(cmd, NULL, 0, &olen);
	CHECK(out && olen > 0);
	if (out)
		blk = strtoul((const char *)out, NULL, 10);
	free(out);
	buf = tu_read_file(img, &len);
	CHECK(buf && blk > 0 && blk * 1024 + 4096 <= len);
	if (!buf || !blk || blk * 1024 + 4096 > len) {
		free(buf);
		return;
	}
	memset(buf + blk * 1024, 0xee, 4096); /* unwritten: never read */
	CHECK_EQ(parse(&g, buf, len, true, &st), 0);
	x = find(&g, "fa");
	CHECK(x && x->size == 30000 && x->data);
	if (x && x->data) {
		size_t i;

		for (i = 8192; i < 30000 && !x->data[i]; i++)
			;
		CHECK_EQ(i, 30000);
		snprintf(cmd, sizeof(cmd), "%s/f1", tmp);
		out = tu_read_file(cmd, &olen);
		CHECK(out && olen == 8192 && !memcmp(x->data, out, 8192));
		free(out);
	}
	got_free(&g);
	free(buf);
}

/* bigalloc: blocks allocated by clusters of 16 */
static void test_bigalloc(void)
{
	struct got g = {0};
	struct cont_stats st;
	uint8_t *buf;
	size_t len;
	char img[1024];

	snprintf(img, sizeof(img), "%s/img-bigalloc", tmp);
	if (sh("mkfs.ext4 -q -F -O bigalloc -C 16384 -d %1$s/src %1$s/img-bigalloc 32M "
	       ">/dev/null 2>&1")) {
		fprintf(stderr, "mkfs.ext4 -O bigalloc failed: not tested\n");
		return;
	}
	buf = tu_read_file(img, &len);
	CHECK(buf);
	if (!buf)
		return;
	CHECK_EQ(parse(&g, buf, len, true, &st), 0);
	check_file(&g, "d/big", "src/d/big");
	check_file(&g, "d/e/three", "src/d/e/three");
	check_file(&g, "sparse", "src/sparse");
	check_file(&g, "a.txt", "src/a.txt");
	got_free(&g);
	free(buf);
}

static uint32_t rnd(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* Damage: refusals, and bytes flipped in the metadata. */
static void test_damage(void)
{
	char img[1024];
	struct got g = {0};
	struct cont_stats st;
	uint8_t *buf, *copy;
	size_t len;
	uint32_t seed = 7;
	int err;

	snprintf(img, sizeof(img), "%s/img", tmp);
	CHECK(sh("rm -f %1$s/img && mkfs.ext4 -q -F -d %1$s/src %1$s/img 16M >/dev/null 2>&1") == 0);
	buf = tu_read_file(img, &len);
	CHECK(buf && len == 16 << 20);
	if (!buf)
		return;
	copy = malloc(len);
	CHECK(copy);
	if (!copy) {
		free(buf);
		return;
	}
	/* the superblock zeroed: not an ext4 image */
	memcpy(copy, buf, len);
	memset(copy + 1024, 0, 1024);
	CHECK_EQ(parse(&g, copy, len, false, &st), -EINVAL);
	CHECK_EQ(g.n, 0);
	/* truncated: refused */
	nlogs = 0;
	CHECK_EQ(parse(&g, buf, len / 2, true, &st), -EIO);
	CHECK(g.n == 0 && nlogs > 0);
	CHECK_EQ(parse(&g, buf, 4096, true, &st), -EIO);
	/* nonsense in the superblock: inodes per group, inode size, block size */
	memcpy(copy, buf, len);
	copy[1024 + 40 + 3] = 0x7f;
	CHECK_EQ(parse(&g, copy, len, true, &st), -EIO);
	memcpy(copy, buf, len);
	copy[1024 + 88] = 100;
	CHECK_EQ(parse(&g, copy, len, true, &st), -EIO);
	memcpy(copy, buf, len);
	copy[1024 + 24] = 9;
	CHECK_EQ(parse(&g, copy, len, false, &st), -EINVAL);
	CHECK(g.n == 0);
	/* bytes flipped where the metadata is (the first 600 KiB): a result, maps inside */
	for (int i = 0; i < 300; i++) {
		memcpy(copy, buf, len);
		for (int k = 0; k < 1 + i % 40; k++) {
			uint32_t at = 1024 + rnd(&seed) % (600 << 10);

			copy[at] ^= (uint8_t)(1 + rnd(&seed) % 255);
		}
		err = parse(&g, copy, len, false, &st);
		CHECK(err == 0 || err == -EIO || err == -EINVAL || err == -ENOTSUP);
		got_free(&g);
	}
	free(copy);
	free(buf);
}

/* What fuzz_ext4 once broke (tests/fuzz/regress/fuzz_ext4): a result, and a checked sink. */
static void test_regress(void)
{
	const char *dir = getenv("TARSEEK_FUZZ_REGRESS");
	char path[4096];
	struct dirent *de;
	int n = 0;
	DIR *d;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/fuzz_ext4", dir);
	d = opendir(path);
	CHECK(d);
	while (d && (de = readdir(d))) {
		struct got g = {0};
		struct cont_stats st;
		uint8_t *buf;
		size_t len;
		int err;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/fuzz_ext4/%s", dir, de->d_name);
		buf = tu_read_file(path, &len);
		CHECK(buf);
		if (!buf)
			continue;
		err = parse(&g, buf, len, false, &st);
		CHECK(err == 0 || err == -EIO || err == -EINVAL || err == -ENOTSUP);
		got_free(&g);
		free(buf);
		n++;
	}
	if (d)
		closedir(d);
	CHECK(n > 0);
}

int main(void)
{
	tfs_log_set_sink(log_sink, NULL);
	if (!tu_have("mkfs.ext4") || !tu_have("debugfs")) {
		fprintf(stderr, "mkfs.ext4 or debugfs missing: skipped\n");
		return 77;
	}
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	make_tree();
	test_image("mkfs.ext4", "", true);
	test_image("mkfs.ext4", "-b 4096 -O 64bit,metadata_csum", true);
	test_image("mkfs.ext4", "-O inline_data -I 512", true);
	test_image("mkfs.ext3", "", true);
	test_image("mkfs.ext2", "", true);
	test_image("mkfs.ext2", "-I 128", true);
	test_dir_twice();
	test_flags();
	test_bigalloc();
	test_descriptors();
	test_indirect_loop();
	test_unwritten();
	test_damage();
	test_regress();
	sh("rm -rf %1$s");
	return tu_exit();
}

#else
int main(void)
{
	return 77;
}
#endif
