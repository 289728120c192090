/* The tar parser against archives written by the real tools: GNU tar (gnu, oldgnu, posix,
 * ustar, v7; sparse files in every sparse format; xattrs; tar -r) and bsdtar (restricted pax,
 * pax, gnutar, ustar, v7).  The test builds a small tree in a temporary directory, archives
 * parts of it, parses the archives and compares every entry with the file on disk: path,
 * type, size, mode, owner, mtime, link target, device numbers, xattrs, and the data bytes
 * (through data_off, and through the sparse map for sparse files, holes included).
 *
 * Exit 77 (skipped) if GNU tar is missing; the bsdtar and xattr parts are skipped alone when
 * bsdtar or user xattrs are not available.
 */
#include "containers/tar/tar.h"
#include "common/log.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static char tmpdir[256];
static char tree[300];
static bool have_xattr, have_dev, have_big_sparse;
static unsigned narchives, nentries;

/* ---- building the tree ------------------------------------------------------------------ */

static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "command failed (%d): %s\n", st, cmd);
		return -1;
	}
	return 0;
}

static void tpath(char *out, size_t outsz, const char *rel)
{
	if (snprintf(out, outsz, "%s/%s", tree, rel) >= (int)outsz)
		abort();
}

static void mkdirs(const char *rel)
{
	char p[1024], *s;

	tpath(p, sizeof(p), rel);
	for (s = p + strlen(tree) + 1; (s = strchr(s, '/')); s++) {
		*s = 0;
		mkdir(p, 0755);
		*s = '/';
	}
	mkdir(p, 0755);
}

static void set_time(const char *rel, int64_t sec, long nsec)
{
	char p[1024];
	struct timespec ts[2] = {{.tv_sec = sec, .tv_nsec = nsec},
				 {.tv_sec = sec, .tv_nsec = nsec}};

	tpath(p, sizeof(p), rel);
	CHECK(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) == 0);
}

static void write_file(const char *rel, const void *data, size_t len, mode_t mode)
{
	char p[1024];
	int fd;

	tpath(p, sizeof(p), rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(write(fd, data, len) == (ssize_t)len);
	close(fd);
	CHECK(chmod(p, mode) == 0);
}

static void write_random(const char *rel, size_t len, uint32_t seed, int text)
{
	uint8_t *buf = malloc(len ? len : 1);

	tu_fill(buf, len, seed, text);
	write_file(rel, buf, len, 0644);
	free(buf);
}

static void write_at(int fd, uint64_t off, size_t len, uint32_t seed)
{
	uint8_t buf[16384];

	tu_fill(buf, len, seed, 0);
	buf[0] |= 1; /* never a zero block that tar could take for a hole */
	CHECK(pwrite(fd, buf, len, (off_t)off) == (ssize_t)len);
}

static void make_sparse(const char *rel, uint64_t size, const uint64_t *offs, size_t n)
{
	char p[1024];
	int fd;

	tpath(p, sizeof(p), rel);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	for (size_t i = 0; i < n; i++)
		write_at(fd, offs[i], 8192, (uint32_t)i + 77);
	CHECK(ftruncate(fd, (off_t)size) == 0);
	close(fd);
}

static bool is_sparse_on_disk(const char *rel)
{
	char p[1024];
	struct stat st;

	tpath(p, sizeof(p), rel);
	return lstat(p, &st) == 0 && (uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size;
}

static char *repeat(char c, size_t n)
{
	char *s = malloc(n + 1);

	memset(s, c, n);
	s[n] = 0;
	return s;
}

static char long_path[400], long_target[300], mid_path[300];

static void build_tree(void)
{
	char p[1024], q[1024];
	static const uint8_t binval[] = {0, '\n', '=', 0xff, 'x', 0};
	char *a = repeat('a', 100), *b = repeat('b', 100), *c = repeat('c', 86);
	char *d = repeat('d', 90), *d2 = repeat('D', 60), *e = repeat('e', 90);
	char *t = repeat('t', 240);

	/* basic: everything every format stores */
	mkdirs("basic/sub/deeper");
	mkdirs("basic/emptydir");
	write_file("basic/empty", "", 0, 0644);
	write_file("basic/small", "hello\n", 6, 0600);
	write_random("basic/b511", 511, 1, 0);
	write_random("basic/b512", 512, 2, 0);
	write_random("basic/b513", 513, 3, 1);
	write_random("basic/big", 200000, 4, 0);
	write_random("basic/exe", 1000, 5, 1);
	tpath(p, sizeof(p), "basic/exe");
	CHECK(chmod(p, 04755) == 0);
	write_random("basic/sub/deeper/file", 3000, 6, 1);
	write_file("basic/bad\xff\xfe name", "non-UTF-8 name\n", 15, 0644);
	tpath(p, sizeof(p), "basic/sym");
	CHECK(symlink("small", p) == 0);
	tpath(p, sizeof(p), "basic/big");
	tpath(q, sizeof(q), "basic/hard");
	CHECK(link(p, q) == 0);
	tpath(p, sizeof(p), "basic/b511");
	if (chown(p, 1234, 5678)) {
		/* not root: keep our own ids */
	}
	set_time("basic/small", 1600000000, 123456789);
	set_time("basic/b512", 1000000000, 0);
	set_time("basic/sym", 1500000000, 999999999);
	set_time("basic/sub/deeper", 1234567890, 500000000);

	/* mid: ustar and later (FIFOs, names that need the ustar prefix) */
	/* the file needs the whole 155-byte prefix, its directories fit in name or prefix */
	snprintf(mid_path, sizeof(mid_path), "mid/%s/%s/%s", d, d2, e);
	CHECK_EQ(strlen(mid_path), 246);
	snprintf(p, sizeof(p), "mid/%s/%s", d, d2);
	mkdirs(p);
	write_random(mid_path, 700, 7, 1);
	tpath(p, sizeof(p), "mid/fifo");
	CHECK(mkfifo(p, 0640) == 0);
	tpath(p, sizeof(p), "mid/dangling");
	CHECK(symlink("does/not/exist", p) == 0);

	/* ext: GNU and PAX only (long names and link targets, times before 1970, devices) */
	snprintf(long_path, sizeof(long_path), "ext/%s/%s/%s", a, b, c);
	CHECK_EQ(strlen(long_path), 292);
	snprintf(p, sizeof(p), "ext/%s/%s", a, b);
	mkdirs(p);
	write_random(long_path, 5000, 8, 1);
	snprintf(long_target, sizeof(long_target), "../%s/target", t);
	tpath(p, sizeof(p), "ext/longlink");
	CHECK(symlink(long_target, p) == 0);
	tpath(p, sizeof(p), long_path);
	tpath(q, sizeof(q), "ext/hardlong");
	CHECK(link(p, q) == 0);
	write_file("ext/old", "from 1969\n", 10, 0644);
	set_time("ext/old", -100000, 0);
	tpath(p, sizeof(p), "ext/null");
	have_dev = mknod(p, S_IFCHR | 0644, makedev(1, 3)) == 0;
	if (have_dev) {
		tpath(p, sizeof(p), "ext/blk");
		CHECK(mknod(p, S_IFBLK | 0600, makedev(7, 42)) == 0);
	}

	/* sparse */
	mkdirs("sparse");
	{
		uint64_t offs[] = {0, 1 << 20, (2 << 20) + 5};
		make_sparse("sparse/small", 3 << 20, offs, 3);
		make_sparse("sparse/allhole", 1 << 20, NULL, 0);
		/* only where holes are real: elsewhere this would write 9 GiB of zeros */
		if (is_sparse_on_disk("sparse/small")) {
			uint64_t boffs[] = {4096, 9ull << 30};

			make_sparse("sparse/big", (9ull << 30) + (1 << 20), boffs, 2);
			have_big_sparse = is_sparse_on_disk("sparse/big");
			if (!have_big_sparse) {
				tpath(p, sizeof(p), "sparse/big");
				unlink(p);
			}
		}
	}

	/* xattrs */
	mkdirs("xattr");
	write_file("xattr/f", "with xattrs\n", 12, 0644);
	tpath(p, sizeof(p), "xattr/f");
	have_xattr = setxattr(p, "user.comment", "hello", 5, 0) == 0 &&
		     setxattr(p, "user.bin", binval, sizeof(binval), 0) == 0;

	/* for tar -r */
	mkdirs("append");
	write_file("append/f", "first version\n", 14, 0644);

	free(a);
	free(b);
	free(c);
	free(d);
	free(d2);
	free(e);
	free(t);
}

/* ---- parsing ---------------------------------------------------------------------------- */

struct got {
	char *path, *link, *uname;
	enum member_type type;
	uint64_t hdr_off, data_off, size, stored, uid, gid;
	uint32_t mode, mtime_nsec, dev_major, dev_minor;
	int64_t mtime_sec;
	bool sparse;
	struct member_sparse *sp;
	size_t nsp;
	size_t nx;
	char **xname;
	uint8_t **xval;
	size_t *xlen;
};

struct list {
	struct got *e;
	size_t n, cap;
	int ret;
	struct tar_stats st;
	unsigned long warnings;
};

static char *dupn(const void *p, size_t n)
{
	char *s = malloc(n + 1);

	memcpy(s, p, n);
	s[n] = 0;
	return s;
}

static int on_entry(void *opaque, const struct arc_member *e)
{
	struct list *l = opaque;
	struct got *g;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->e = realloc(l->e, l->cap * sizeof(*l->e));
	}
	g = &l->e[l->n++];
	memset(g, 0, sizeof(*g));
	g->path = dupn(e->path, e->path_len);
	g->link = dupn(e->link, e->link_len);
	g->uname = strdup(e->uname);
	g->type = e->type;
	g->hdr_off = e->hdr_off;
	g->data_off = e->data_off;
	g->size = e->size;
	g->stored = e->stored;
	g->uid = e->uid;
	g->gid = e->gid;
	g->mode = e->mode;
	g->mtime_sec = e->mtime_sec;
	g->mtime_nsec = e->mtime_nsec;
	g->dev_major = e->dev_major;
	g->dev_minor = e->dev_minor;
	g->sparse = e->sparse != NULL;
	g->nsp = e->nsparse;
	g->sp = malloc((e->nsparse + 1) * sizeof(*g->sp));
	if (e->nsparse)
		memcpy(g->sp, e->sparse, e->nsparse * sizeof(*g->sp));
	g->nx = e->nxattrs;
	g->xname = calloc(e->nxattrs + 1, sizeof(char *));
	g->xval = calloc(e->nxattrs + 1, sizeof(uint8_t *));
	g->xlen = calloc(e->nxattrs + 1, sizeof(size_t));
	for (size_t i = 0; i < e->nxattrs; i++) {
		g->xname[i] = strdup(e->xattrs[i].name);
		g->xval[i] = (uint8_t *)dupn(e->xattrs[i].value, e->xattrs[i].len);
		g->xlen[i] = e->xattrs[i].len;
	}
	return 0;
}

static void list_free(struct list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		struct got *g = &l->e[i];

		free(g->path);
		free(g->link);
		free(g->uname);
		free(g->sp);
		for (size_t k = 0; k < g->nx; k++) {
			free(g->xname[k]);
			free(g->xval[k]);
		}
		free(g->xname);
		free(g->xval);
		free(g->xlen);
	}
	free(l->e);
	memset(l, 0, sizeof(*l));
}

static bool opt_ignore_zeros; /* parse_src: tar --ignore-zeros */

static void parse_src(struct src *s, struct list *l)
{
	struct tar_callbacks cb = {
	    .entry = on_entry, .opaque = l, .ignore_zeros = opt_ignore_zeros};
	unsigned long w = tfs_log_count(TFS_LOG_WARNING);

	l->ret = tar_parse(s, &cb, &l->st);
	l->warnings = tfs_log_count(TFS_LOG_WARNING) - w;
}

/* A forward-only source of unknown size over a buffer, like a decompressed stream. */
struct fwd {
	const uint8_t *buf;
	size_t len;
	uint64_t pos;
};

static ssize_t fwd_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct fwd *f = opaque;

	if (off < f->pos)
		return -ESPIPE;
	f->pos = off + len;
	if (off >= f->len)
		return 0;
	if (len > f->len - off)
		len = f->len - off;
	memcpy(buf, f->buf + off, len);
	return (ssize_t)len;
}

static const struct src_ops fwd_ops = {.pread = fwd_pread};

/* ---- comparing with the disk ------------------------------------------------------------ */

/* The path as on disk: without "./" in front and without a trailing slash. */
static const char *norm(const char *path, char *out, size_t outsz)
{
	size_t n;

	while (path[0] == '.' && path[1] == '/')
		path += 2;
	snprintf(out, outsz, "%s", path);
	n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = 0;
	return out;
}

static bool all_zero_on_disk(int fd, uint64_t off, uint64_t len)
{
	uint8_t buf[65536];

	while (len) {
		size_t n = len < sizeof(buf) ? (size_t)len : sizeof(buf);
		ssize_t r = pread(fd, buf, n, (off_t)off);

		if (r != (ssize_t)n)
			return false;
		for (size_t i = 0; i < n; i++)
			if (buf[i])
				return false;
		off += n;
		len -= n;
	}
	return true;
}

/* Holes: small ones are checked whole, big ones at their start, middle and end. */
static bool hole_ok(int fd, uint64_t off, uint64_t len)
{
	if (len <= (4 << 20))
		return all_zero_on_disk(fd, off, len);
	return all_zero_on_disk(fd, off, 65536) &&
	       all_zero_on_disk(fd, off + len / 2 - 32768, 65536) &&
	       all_zero_on_disk(fd, off + len - 65536, 65536);
}

static bool same_bytes(int fd, uint64_t off, const uint8_t *want, uint64_t len)
{
	uint8_t buf[65536];

	while (len) {
		size_t n = len < sizeof(buf) ? (size_t)len : sizeof(buf);

		if (pread(fd, buf, n, (off_t)off) != (ssize_t)n || memcmp(buf, want, n))
			return false;
		off += n;
		want += n;
		len -= n;
	}
	return true;
}

static void check_data(const char *label, const uint8_t *arch, size_t alen, const struct got *g,
		       const char *disk, const struct stat *st)
{
	int fd = open(disk, O_RDONLY);
	uint64_t pos = g->data_off, end = 0, sum = 0;

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK(g->data_off + g->stored <= alen);
	if (g->data_off + g->stored > alen)
		goto out;
	if (!g->sparse) {
		CHECK_EQ(g->stored, g->size);
		if (!same_bytes(fd, 0, arch + g->data_off, g->stored)) {
			fprintf(stderr, "%s: data of %s differs\n", label, g->path);
			tu_failures++;
		}
		goto out;
	}
	for (size_t i = 0; i < g->nsp; i++) {
		const struct member_sparse *e = &g->sp[i];

		CHECK(e->off >= end);
		CHECK(e->len > 0);
		if (e->off > end && !hole_ok(fd, end, e->off - end)) {
			fprintf(stderr, "%s: %s: hole at %" PRIu64 " is not a hole on disk\n",
				label, g->path, end);
			tu_failures++;
		}
		if (!same_bytes(fd, e->off, arch + pos, e->len)) {
			fprintf(stderr, "%s: %s: extent at %" PRIu64 " differs\n", label, g->path,
				e->off);
			tu_failures++;
		}
		pos += e->len;
		end = e->off + e->len;
		sum += e->len;
	}
	CHECK(end <= g->size);
	if (end < g->size)
		CHECK(hole_ok(fd, end, g->size - end));
	CHECK_EQ(sum, g->stored);
	/* a file with real holes must be stored as sparse */
	if ((uint64_t)st->st_blocks * 512 < (uint64_t)st->st_size)
		CHECK(sum < g->size);
out:
	close(fd);
}

struct opts {
	bool ns;       /* mtimes have nanoseconds */
	bool names;    /* user names stored */
	bool xattrs;   /* the archive has xattrs */
	bool sym_mode; /* symlink modes match lstat */
	bool no_neg;   /* times before 1970 are stored as 0 (libarchive's gnutar writer) */
};

static void check_entry(const char *label, const uint8_t *arch, size_t alen, const struct list *l,
			size_t idx, const struct opts *o)
{
	const struct got *g = &l->e[idx];
	char rel[1024], disk[1200], lnk[1200], tgt[1024];
	struct stat st, lst;
	enum member_type want;

	norm(g->path, rel, sizeof(rel));
	tpath(disk, sizeof(disk), rel);
	if (lstat(disk, &st)) {
		fprintf(stderr, "%s: entry %s is not on disk\n", label, g->path);
		tu_failures++;
		return;
	}
	if (S_ISREG(st.st_mode))
		want = g->type == MEMBER_HARDLINK ? MEMBER_HARDLINK : MEMBER_REG;
	else if (S_ISDIR(st.st_mode))
		want = MEMBER_DIR;
	else if (S_ISLNK(st.st_mode))
		want = MEMBER_SYMLINK;
	else if (S_ISCHR(st.st_mode))
		want = MEMBER_CHR;
	else if (S_ISBLK(st.st_mode))
		want = MEMBER_BLK;
	else
		want = MEMBER_FIFO;
	if (g->type != want) {
		fprintf(stderr, "%s: %s: type %c, expected %c\n", label, g->path, g->type, want);
		tu_failures++;
		return;
	}
	if (want != MEMBER_SYMLINK || o->sym_mode)
		CHECK_EQ(g->mode, st.st_mode & 07777);
	CHECK_EQ(g->uid, st.st_uid);
	CHECK_EQ(g->gid, st.st_gid);
	if (g->type != MEMBER_HARDLINK && o->no_neg && st.st_mtim.tv_sec < 0) {
		CHECK_EQ(g->mtime_sec, 0);
	} else if (g->type != MEMBER_HARDLINK) {
		CHECK_EQ(g->mtime_sec, st.st_mtim.tv_sec);
		if (o->ns)
			CHECK_EQ(g->mtime_nsec, st.st_mtim.tv_nsec);
		else
			CHECK(g->mtime_nsec == 0 || g->mtime_nsec == st.st_mtim.tv_nsec);
		if (g->mtime_sec != st.st_mtim.tv_sec)
			fprintf(stderr, "  (%s: %s)\n", label, g->path);
	}
	if (o->names && g->uname[0]) {
		struct passwd *pw = getpwuid(st.st_uid);

		CHECK(pw && !strcmp(pw->pw_name, g->uname));
	}
	switch (g->type) {
	case MEMBER_REG:
		CHECK_EQ(g->size, st.st_size);
		CHECK_EQ(g->link[0], 0);
		check_data(label, arch, alen, g, disk, &st);
		break;
	case MEMBER_HARDLINK:
		CHECK_EQ(g->size, 0);
		norm(g->link, tgt, sizeof(tgt));
		tpath(lnk, sizeof(lnk), tgt);
		CHECK(lstat(lnk, &lst) == 0 && lst.st_ino == st.st_ino);
		{
			bool earlier = false;

			for (size_t i = 0; i < idx; i++)
				earlier |= !strcmp(l->e[i].path, g->link);
			CHECK(earlier);
		}
		break;
	case MEMBER_SYMLINK: {
		ssize_t n = readlink(disk, tgt, sizeof(tgt) - 1);

		CHECK(n >= 0);
		if (n >= 0) {
			tgt[n] = 0;
			CHECK(!strcmp(tgt, g->link));
		}
		CHECK_EQ(g->size, 0);
		break;
	}
	case MEMBER_CHR:
	case MEMBER_BLK:
		CHECK_EQ(g->dev_major, major(st.st_rdev));
		CHECK_EQ(g->dev_minor, minor(st.st_rdev));
		CHECK_EQ(g->size, 0);
		break;
	default:
		CHECK_EQ(g->size, 0);
		CHECK_EQ(g->link[0], 0);
	}
	for (size_t i = 0; i < g->nx; i++) {
		uint8_t val[256];
		ssize_t n = lgetxattr(disk, g->xname[i], val, sizeof(val));

		CHECK_EQ(n, g->xlen[i]);
		CHECK(n >= 0 && !memcmp(val, g->xval[i], (size_t)n));
	}
	if (o->xattrs && S_ISREG(st.st_mode) && g->type == MEMBER_REG) {
		/* every user xattr on disk is in the archive */
		char names[1024];
		ssize_t n = llistxattr(disk, names, sizeof(names));

		for (ssize_t k = 0; k < n; k += (ssize_t)strlen(names + k) + 1) {
			bool found = false;

			if (strncmp(names + k, "user.", 5))
				continue;
			for (size_t i = 0; i < g->nx; i++)
				found |= !strcmp(g->xname[i], names + k);
			if (!found)
				fprintf(stderr, "%s: %s: xattr %s missing\n", label, g->path,
					names + k);
			CHECK(found);
		}
	}
}

/* Every path under the groups, as the archive should name them (normalised). */
struct names {
	char **v;
	size_t n, cap;
};

static void names_add(struct names *ns, const char *s)
{
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? ns->cap * 2 : 64;
		ns->v = realloc(ns->v, ns->cap * sizeof(char *));
	}
	ns->v[ns->n++] = strdup(s);
}

static void walk(struct names *ns, const char *rel)
{
	char p[1200], sub[1200];
	struct stat st;
	DIR *d;
	struct dirent *de;

	names_add(ns, rel);
	tpath(p, sizeof(p), rel);
	if (lstat(p, &st) || !S_ISDIR(st.st_mode))
		return;
	d = opendir(p);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name);
		walk(ns, sub);
	}
	closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
}

/* Parses archive file name (in tmpdir), compares with the tree under groups (space
 * separated, NULL for no comparison of the name list).  Returns the parsed list. */
static void check_archive(const char *name, const char *groups, const struct opts *o,
			  struct list *out)
{
	char path[1024], rel[1024], buf[256], *tok, *save;
	struct list l = {0}, lf = {0};
	struct src *s;
	uint8_t *arch;
	size_t alen;
	struct names want = {0}, have = {0};
	struct fwd f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	arch = tu_read_file(path, &alen);
	CHECK(arch != NULL);
	if (!arch)
		return;
	CHECK(src_open_file(path, &s) == 0);
	if (!s) {
		free(arch);
		return;
	}
	parse_src(s, &l);
	src_free(s);
	CHECK_EQ(l.ret, 0);
	CHECK_EQ(l.warnings, 0);
	CHECK(!l.st.truncated && !l.st.garbage && !l.st.bad_headers);
	CHECK_EQ(l.st.members, l.n);
	if (l.ret || l.warnings)
		fprintf(stderr, "  in %s\n", name);

	/* the same through a forward-only stream of unknown size */
	f = (struct fwd){.buf = arch, .len = alen};
	s = src_new(&fwd_ops, &f, SRC_SIZE_UNKNOWN);
	parse_src(s, &lf);
	src_free(s);
	CHECK_EQ(lf.ret, 0);
	CHECK_EQ(lf.n, l.n);
	for (size_t i = 0; i < l.n && i < lf.n; i++) {
		CHECK(!strcmp(l.e[i].path, lf.e[i].path));
		CHECK_EQ(l.e[i].data_off, lf.e[i].data_off);
		CHECK_EQ(l.e[i].stored, lf.e[i].stored);
		CHECK_EQ(l.e[i].size, lf.e[i].size);
		CHECK_EQ(l.e[i].nsp, lf.e[i].nsp);
	}
	list_free(&lf);

	for (size_t i = 0; i < l.n; i++)
		check_entry(name, arch, alen, &l, i, o);
	narchives++;
	nentries += (unsigned)l.n;

	if (groups) {
		snprintf(buf, sizeof(buf), "%s", groups);
		for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
			walk(&want, tok);
		for (size_t i = 0; i < l.n; i++)
			names_add(&have, norm(l.e[i].path, rel, sizeof(rel)));
		qsort(want.v, want.n, sizeof(char *), cmp_str);
		qsort(have.v, have.n, sizeof(char *), cmp_str);
		CHECK_EQ(have.n, want.n);
		for (size_t i = 0; i < want.n && i < have.n; i++) {
			if (strcmp(want.v[i], have.v[i])) {
				fprintf(stderr, "%s: member %zu is %s, expected %s\n", name, i,
					have.v[i], want.v[i]);
				tu_failures++;
				break;
			}
		}
		names_free(&want);
		names_free(&have);
	}
	free(arch);
	if (out)
		*out = l;
	else
		list_free(&l);
}

static const struct got *find(const struct list *l, const char *path)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->e[i].path, path))
			return &l->e[i];
	fprintf(stderr, "entry %s not found\n", path);
	tu_failures++;
	return NULL;
}

/* ---- the archives ----------------------------------------------------------------------- */

static void test_gnu_tar(void)
{
	static const struct {
		const char *fmt, *groups;
		struct opts o;
	} fmts[] = {
	    {"gnu", "basic mid ext", {.names = true, .sym_mode = true}},
	    {"oldgnu", "basic mid ext", {.names = true, .sym_mode = true}},
	    {"posix", "basic mid ext", {.ns = true, .names = true, .sym_mode = true}},
	    {"ustar", "basic mid", {.names = true, .sym_mode = true}},
	    {"v7", "basic", {.sym_mode = true}},
	};
	struct list l;

	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		char name[64];

		snprintf(name, sizeof(name), "gnu-%s.tar", fmts[i].fmt);
		if (run("cd '%s' && tar --format=%s -cf '%s/%s' %s", tree, fmts[i].fmt, tmpdir,
			name, fmts[i].groups)) {
			tu_failures++;
			continue;
		}
		check_archive(name, fmts[i].groups, &fmts[i].o, &l);
		if (strstr(fmts[i].groups, "ext")) {
			const struct got *g = find(&l, long_path);

			if (g && g->type == MEMBER_REG)
				CHECK_EQ(g->size, 5000);
			g = find(&l, "ext/longlink");
			if (g)
				CHECK(!strcmp(g->link, long_target));
			g = find(&l, "ext/old");
			if (g)
				CHECK_EQ(g->mtime_sec, -100000);
		}
		if (strstr(fmts[i].groups, "mid"))
			find(&l, mid_path);
		list_free(&l);
	}
}

static void test_sparse(void)
{
	static const char *const opts[] = {
	    "--format=gnu",
	    "--format=oldgnu",
	    "--format=posix --sparse-version=0.0",
	    "--format=posix --sparse-version=0.1",
	    "--format=posix --sparse-version=1.0",
	};
	struct opts o = {.names = true};
	struct list l;

	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		char name[64];
		const struct got *g;

		snprintf(name, sizeof(name), "sparse%zu.tar", i);
		o.ns = strstr(opts[i], "posix") != NULL;
		if (run("cd '%s' && tar %s --sparse -cf '%s/%s' sparse", tree, opts[i], tmpdir,
			name)) {
			tu_failures++;
			continue;
		}
		check_archive(name, "sparse", &o, &l);
		g = find(&l, "sparse/small");
		if (g && is_sparse_on_disk("sparse/small")) {
			CHECK(g->sparse);
			CHECK_EQ(g->size, 3 << 20);
			CHECK(g->nsp >= 3);
		}
		g = find(&l, "sparse/allhole");
		if (g && is_sparse_on_disk("sparse/allhole")) {
			CHECK(g->sparse);
			CHECK_EQ(g->size, 1 << 20);
			CHECK_EQ(g->stored, 0);
		}
		if (have_big_sparse) {
			g = find(&l, "sparse/big");
			if (g) {
				CHECK(g->sparse);
				CHECK_EQ(g->size, (9ull << 30) + (1 << 20));
			}
		}
		list_free(&l);
	}
}

static void test_xattrs(void)
{
	struct opts o = {.ns = true, .names = true, .xattrs = true, .sym_mode = true};
	struct list l;
	const struct got *g;

	if (!have_xattr) {
		fprintf(stderr, "user xattrs not supported here: xattr part skipped\n");
		return;
	}
	if (run("cd '%s' && tar --format=posix --xattrs -cf '%s/xattr.tar' xattr", tree, tmpdir)) {
		tu_failures++;
		return;
	}
	check_archive("xattr.tar", "xattr", &o, &l);
	g = find(&l, "xattr/f");
	if (g)
		CHECK(g->nx >= 2);
	list_free(&l);
	if (!tu_have("bsdtar"))
		return;
	if (run("cd '%s' && bsdtar --format=pax -cf '%s/bsd-xattr.tar' xattr", tree, tmpdir)) {
		tu_failures++;
		return;
	}
	check_archive("bsd-xattr.tar", "xattr", &o, &l);
	g = find(&l, "xattr/f");
	if (g)
		CHECK(g->nx >= 2);
	list_free(&l);
}

static void test_bsdtar(void)
{
	static const struct {
		const char *fmt, *groups;
		struct opts o;
	} fmts[] = {
	    {NULL, "basic mid ext", {.names = true}},
	    {"pax", "basic mid ext", {.names = true}},
	    {"gnutar", "basic mid ext", {.names = true, .no_neg = true}},
	    {"ustar", "basic mid", {.names = true}},
	    {"v7", "basic", {0}},
	    {"pax", "sparse", {.names = true}},
	};
	struct list l;

	if (!tu_have("bsdtar")) {
		fprintf(stderr, "bsdtar not found: bsdtar part skipped\n");
		return;
	}
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		char name[64], fmt[64] = "";

		snprintf(name, sizeof(name), "bsd%zu.tar", i);
		if (fmts[i].fmt)
			snprintf(fmt, sizeof(fmt), "--format=%s", fmts[i].fmt);
		/* bsdtar complains about the non-UTF-8 name (and stores it anyway) */
		if (run("cd '%s' && bsdtar %s -cf '%s/%s' %s 2>>'%s/bsdtar.log'", tree, fmt, tmpdir,
			name, fmts[i].groups, tmpdir)) {
			tu_failures++;
			continue;
		}
		check_archive(name, fmts[i].groups, &fmts[i].o, &l);
		if (strstr(fmts[i].groups, "ext")) {
			const struct got *g = find(&l, long_path);

			if (g && g->type == MEMBER_REG)
				CHECK_EQ(g->size, 5000);
			g = find(&l, "ext/longlink");
			if (g)
				CHECK(!strcmp(g->link, long_target));
		}
		if (!strcmp(fmts[i].groups, "sparse") && is_sparse_on_disk("sparse/small")) {
			const struct got *g = find(&l, "sparse/small");

			if (g)
				CHECK(g->sparse && g->nsp >= 3);
		}
		list_free(&l);
	}
}

/* tar -r: the same path twice, each with its own data; and two archives concatenated. */
static void test_append_concat(void)
{
	struct opts o = {.names = true, .sym_mode = true};
	struct list l = {0};
	struct src *s;
	char path[1024];
	uint8_t *arch;
	size_t alen;

	if (run("cd '%s' && tar -cf '%s/append.tar' append", tree, tmpdir)) {
		tu_failures++;
		return;
	}
	write_file("append/f", "second, longer version of the file\n", 35, 0644);
	if (run("cd '%s' && tar -rf '%s/append.tar' append/f", tree, tmpdir)) {
		tu_failures++;
		return;
	}
	snprintf(path, sizeof(path), "%s/append.tar", tmpdir);
	arch = tu_read_file(path, &alen);
	CHECK(arch && src_open_file(path, &s) == 0);
	if (!arch || !s)
		return;
	parse_src(s, &l);
	src_free(s);
	CHECK_EQ(l.ret, 0);
	CHECK_EQ(l.warnings, 0);
	CHECK_EQ(l.n, 3);
	if (l.n == 3) {
		CHECK(!strcmp(l.e[0].path, "append/"));
		CHECK(!strcmp(l.e[1].path, "append/f"));
		CHECK(!strcmp(l.e[2].path, "append/f"));
		CHECK_EQ(l.e[1].size, 14);
		CHECK(!memcmp(arch + l.e[1].data_off, "first version\n", 14));
		CHECK_EQ(l.e[2].size, 35);
		CHECK(!memcmp(arch + l.e[2].data_off, "second, longer version of the file\n", 35));
	}
	list_free(&l);
	free(arch);

	/* cat a.tar b.tar: the second archive after the first's zero blocks */
	if (run("cat '%s/gnu-ustar.tar' '%s/gnu-posix.tar' > '%s/cat.tar'", tmpdir, tmpdir,
		tmpdir)) {
		tu_failures++;
		return;
	}
	opt_ignore_zeros = true; /* read like tar --ignore-zeros */
	check_archive("cat.tar", NULL, &o, &l);
	opt_ignore_zeros = false;
	{
		struct list a = {0}, b = {0}, first = {0};

		check_archive("gnu-ustar.tar", NULL, &o, &a);
		o.ns = true;
		check_archive("gnu-posix.tar", NULL, &o, &b);
		CHECK_EQ(l.n, a.n + b.n);
		/* without it, what tar shows: the first archive, with a notice of the second */
		snprintf(path, sizeof(path), "%s/cat.tar", tmpdir);
		CHECK(src_open_file(path, &s) == 0);
		if (s) {
			parse_src(s, &first);
			src_free(s);
			CHECK_EQ(first.ret, 0);
			CHECK_EQ(first.n, a.n);
			CHECK(first.st.garbage);
		}
		list_free(&first);
		list_free(&a);
		list_free(&b);
	}
	list_free(&l);
}

int main(void)
{
	const char *base = getenv("TMPDIR");

	if (!tu_have("tar") || run("tar --version | grep -q 'GNU tar'")) {
		fprintf(stderr, "GNU tar not found: skipped\n");
		return 77;
	}
	snprintf(tmpdir, sizeof(tmpdir), "%s/tarseek-tar-real-XXXXXX", base ? base : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(tree, sizeof(tree), "%s/tree", tmpdir);
	mkdir(tree, 0755);
	umask(022);
	build_tree();

	test_gnu_tar();
	test_sparse();
	test_xattrs();
	test_bsdtar();
	test_append_concat();
	fprintf(stderr,
		"%u archives, %u entries checked; devices %s, user xattrs %s, 9 GiB sparse %s\n",
		narchives, nentries, have_dev ? "yes" : "no", have_xattr ? "yes" : "no",
		have_big_sparse ? "yes" : "no");

	if (!tu_failures || !getenv("TARSEEK_KEEP_TMP"))
		run("rm -rf '%s'", tmpdir);
	else
		fprintf(stderr, "kept %s\n", tmpdir);
	return tu_exit();
}
