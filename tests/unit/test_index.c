/* Unit test of the index module's one way of opening an archive (index/open.h) and of what it
 * stands on: building (idx_build, idx_build_from), finding (idx_prepare: the four locations in
 * their order, the mount point excluded, *built, recreate, check_only), checking (validate.h:
 * every reason an index is rebuilt, and every reason it is refused), the temporary name, the
 * stamp (stamp.h: the fingerprint and the options string) and the nested pass (nested.h).
 *
 * The archives are written here by a small ustar writer (no tar program needed); gzip'd ones
 * with zlib.  Every index is opened the way the daemon opens it (arch_open) and walked through
 * the tree interface (tree.h), so a check of "the index is good" is a check of what a mount
 * would show: names in order, modes, sizes, owners, mtimes, bytes.
 *
 * Nothing here sleeps and hopes.  A build held in the middle waits at a gate in its source
 * (TU_WAIT for the builder to be there); the interrupted build is a child killed while it is
 * held, and the parent learns it is held from a pipe, with a timeout.  The checks that need
 * an unprivileged user (an unreadable archive, a folder that is not writable) run in a child
 * that drops to uid 65534 when the test runs as root; those that need other owners (the trust
 * rules) run only as root.
 *
 * test_fixed_issues() at the end keeps the bugs this test found fixed (validate.c's options
 * buffer, arch_lookup in a file, the error-level line for a damaged nested archive).
 */
#include "archive.h"
#include "cache.h"
#include "db.h"
#include "log.h"
#include "nested.h"
#include "open.h"
#include "stamp.h"
#include "tree.h"
#include "validate.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define MIB (1u << 20)
#define M0 1600000000 /* the members' mtimes */
#define NOBODY 65534  /* the unprivileged user of the checks that need one */

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *_x = (a), *_y = (b);                                                   \
		if (!_x || !_y || strcmp(_x, _y) != 0) {                                           \
			fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__,        \
				__LINE__, #a, _x ? _x : "(null)", _y ? _y : "(null)");             \
			tu_failures++;                                                             \
		}                                                                                  \
	} while (0)

static char top[PATH_MAX]; /* every file of the test lives under it */
static struct cache *cache;

/* ---- paths and files -------------------------------------------------------------------- */

/* A path built printf-like, allocated and kept until the end of the test (paths_free). */
static char **paths;
static size_t npaths, paths_cap;

__attribute__((format(printf, 1, 2))) static const char *pth(const char *fmt, ...)
{
	char *p;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		abort();
	va_end(ap);
	if (npaths == paths_cap) {
		paths_cap = paths_cap ? paths_cap * 2 : 256;
		paths = realloc(paths, paths_cap * sizeof(*paths));
		if (!paths)
			abort();
	}
	paths[npaths++] = p;
	return p;
}

static void paths_free(void)
{
	for (size_t i = 0; i < npaths; i++)
		free(paths[i]);
	free(paths);
}

static void mkdir_ok(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "mkdir %s: %s\n", path, strerror(errno));
		tu_failures++;
	}
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ(fwrite(data, 1, len, f), len);
	CHECK_EQ(fclose(f), 0);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Entries of dir whose names contain part (NULL: all), or -1 if dir cannot be read. */
static int dir_count(const char *dir, const char *part)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    (!part || strstr(e->d_name, part)))
			n++;
	closedir(d);
	return n;
}

/* The first entry of dir (other than . and ..) whose name starts with prefix and is not
 * exactly prefix, as a path in a rotating buffer; NULL if none. */
static const char *dir_find(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	const char *out = NULL;

	if (!d)
		return NULL;
	while (!out && (e = readdir(d)))
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0 && strcmp(e->d_name, prefix))
			out = pth("%s/%s", dir, e->d_name);
	closedir(d);
	return out;
}

/* What tells that a file was left alone: same inode, times, size and bytes. */
struct snap {
	bool ok;
	dev_t dev;
	ino_t ino;
	struct timespec mtim, ctim;
	off_t size;
	uLong crc;
};

static struct snap snap_of(const char *path)
{
	struct snap s = {0};
	struct stat st;
	size_t len = 0;
	uint8_t *data;

	if (stat(path, &st) < 0)
		return s;
	data = tu_read_file(path, &len);
	s = (struct snap){.ok = data != NULL,
			  .dev = st.st_dev,
			  .ino = st.st_ino,
			  .mtim = st.st_mtim,
			  .ctim = st.st_ctim,
			  .size = st.st_size,
			  .crc = crc32(0, data, (uInt)len)};
	free(data);
	return s;
}

static bool snap_same(const struct snap *a, const struct snap *b)
{
	return a->ok && b->ok && a->dev == b->dev && a->ino == b->ino &&
	       a->mtim.tv_sec == b->mtim.tv_sec && a->mtim.tv_nsec == b->mtim.tv_nsec &&
	       a->ctim.tv_sec == b->ctim.tv_sec && a->ctim.tv_nsec == b->ctim.tv_nsec &&
	       a->size == b->size && a->crc == b->crc;
}

static struct timespec mtime_of(const char *path)
{
	struct stat st;

	CHECK_EQ(stat(path, &st), 0);
	return st.st_mtim;
}

static void set_mtime(const char *path, struct timespec t)
{
	struct timespec ts[2] = {t, t};

	CHECK_EQ(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* XORs the byte at off of path with x; keeps the file's mtime if keep_mtime. */
static void poke(const char *path, off_t off, uint8_t x, bool keep_mtime)
{
	struct timespec t = mtime_of(path);
	int fd = open(path, O_RDWR);
	uint8_t b = 0;

	CHECK(fd >= 0);
	if (fd < 0)
		return;
	CHECK_EQ(pread(fd, &b, 1, off), 1);
	b ^= x;
	CHECK_EQ(pwrite(fd, &b, 1, off), 1);
	close(fd);
	if (keep_mtime)
		set_mtime(path, t);
}

static void copy_file(const char *from, const char *to)
{
	size_t len = 0;
	uint8_t *d = tu_read_file(from, &len);

	CHECK(d != NULL);
	if (d)
		write_file(to, d, len);
	free(d);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* ---- the log ---------------------------------------------------------------------------- */

/* Every message goes to stderr (the test's log) and into a buffer the checks search. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 16];
static size_t log_len;

static void log_sink(int level, const char *msg, void *opaque)
{
	(void)opaque;
	pthread_mutex_lock(&log_lock);
	int n = snprintf(log_text + log_len, sizeof(log_text) - log_len, "%d %s\n", level, msg);
	if (n > 0)
		log_len = log_len + (size_t)n < sizeof(log_text) ? log_len + (size_t)n
								 : sizeof(log_text) - 1;
	pthread_mutex_unlock(&log_lock);
	fprintf(stderr, "    log %d: %s\n", level, msg);
}

static void log_clear(void)
{
	pthread_mutex_lock(&log_lock);
	log_len = 0;
	log_text[0] = '\0';
	pthread_mutex_unlock(&log_lock);
}

/* True if a message of this level since log_clear contains a and b (b may be NULL). */
static bool logged(int level, const char *a, const char *b)
{
	bool found = false;

	pthread_mutex_lock(&log_lock);
	for (char *line = log_text; !found && *line;) {
		char *end = strchr(line, '\n');
		char *msg;
		long lv = strtol(line, &msg, 10);
		if (end)
			*end = '\0';
		found = lv == level && strstr(msg, a) && (!b || strstr(msg, b));
		if (!end)
			break;
		*end = '\n';
		line = end + 1;
	}
	pthread_mutex_unlock(&log_lock);
	return found;
}

/* ---- archives --------------------------------------------------------------------------- */

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void b_put(struct buf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	if (d)
		memcpy(b->p + b->len, d, n);
	else
		memset(b->p + b->len, 0, n);
	b->len += n;
}

struct member {
	const char *name;
	char type; /* '0' a file, '5' a directory, '2' a symlink */
	unsigned mode, uid, gid;
	int64_t mtime;
	const char *link;
	const uint8_t *data;
	size_t size;
};

/* Appends a ustar member (names under 100 bytes). */
static void tar_add(struct buf *b, const struct member *m)
{
	size_t size = m->type == '0' ? m->size : 0;
	uint8_t h[512] = {0};
	unsigned sum = 0;

	snprintf((char *)h, 100, "%s", m->name);
	snprintf((char *)h + 100, 8, "%07o", m->mode);
	snprintf((char *)h + 108, 8, "%07o", m->uid);
	snprintf((char *)h + 116, 8, "%07o", m->gid);
	snprintf((char *)h + 124, 12, "%011zo", size);
	snprintf((char *)h + 136, 12, "%011llo", (unsigned long long)m->mtime);
	h[156] = (uint8_t)m->type;
	if (m->link)
		snprintf((char *)h + 157, 100, "%s", m->link);
	memcpy(h + 257, "ustar\00000", 8); /* magic "ustar\0", version "00" */
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	b_put(b, h, 512);
	if (size) {
		b_put(b, m->data, size);
		if (size % 512)
			b_put(b, NULL, 512 - size % 512);
	}
}

static struct buf tar_of(const struct member *m, size_t n)
{
	struct buf b = {0};

	for (size_t i = 0; i < n; i++)
		tar_add(&b, &m[i]);
	b_put(&b, NULL, 1024); /* the end-of-archive marker */
	return b;
}

/* One gzip member of d (in memory). */
static struct buf gzip_of(const uint8_t *d, size_t n)
{
	z_stream z = {0};
	struct buf out = {0};

	CHECK_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	out.cap = deflateBound(&z, (uLong)n) + 64;
	out.p = malloc(out.cap);
	if (!out.p)
		abort();
	z.next_in = (Bytef *)d;
	z.avail_in = (uInt)n;
	z.next_out = out.p;
	z.avail_out = (uInt)out.cap;
	CHECK_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
	out.len = out.cap - z.avail_out;
	deflateEnd(&z);
	return out;
}

/* A .gz file of d, written with gzopen/gzwrite. */
static void write_gz(const char *path, const uint8_t *d, size_t n)
{
	gzFile g = gzopen(path, "wb6");

	CHECK(g != NULL);
	if (!g)
		return;
	CHECK_EQ(gzwrite(g, d, (unsigned)n), n);
	CHECK_EQ(gzclose(g), Z_OK);
}

/* The standard archive: a directory, files of 0, 513, 1000 and 70000 bytes (one in an
 * implicit directory), a symlink; and the tree a mount of it shows. */
static uint8_t d_a[1000], d_deep[513], d_big[70000];

static const struct member std_members[] = {
    {.name = "dir/", .type = '5', .mode = 0750, .uid = 1001, .gid = 1002, .mtime = M0},
    {.name = "dir/a.txt",
     .type = '0',
     .mode = 0640,
     .uid = 1001,
     .gid = 1002,
     .mtime = M0 + 1,
     .data = d_a,
     .size = sizeof(d_a)},
    {.name = "dir/sub/deep.bin",
     .type = '0',
     .mode = 0600,
     .uid = 7,
     .gid = 8,
     .mtime = M0 + 2,
     .data = d_deep,
     .size = sizeof(d_deep)},
    {.name = "empty", .type = '0', .mode = 0444, .mtime = M0 + 3},
    {.name = "link", .type = '2', .mode = 0777, .mtime = M0 + 4, .link = "dir/a.txt"},
    {.name = "big.bin",
     .type = '0',
     .mode = 0644,
     .uid = 1,
     .gid = 1,
     .mtime = M0 + 5,
     .data = d_big,
     .size = sizeof(d_big)},
};
#define STD_MEMBERS 6
#define STD_ENTRIES 8 /* the root, 6 members, the implicit dir/sub */

struct want {
	const char *path; /* in lexical order, so each folder's children come in name order */
	uint32_t mode;
	uint64_t size; /* not checked for folders */
	int64_t mtime;
	unsigned uid, gid;
	const uint8_t *data; /* regular files */
	const char *link;    /* symlinks */
};

static const struct want std_tree[] = {
    {"big.bin", S_IFREG | 0644, sizeof(d_big), M0 + 5, 1, 1, d_big, NULL},
    {"dir", S_IFDIR | 0750, 0, M0, 1001, 1002, NULL, NULL},
    {"dir/a.txt", S_IFREG | 0640, sizeof(d_a), M0 + 1, 1001, 1002, d_a, NULL},
    /* made for deep.bin's missing parent, with its owner and mtime */
    {"dir/sub", S_IFDIR | 0555, 0, M0 + 2, 7, 8, NULL, NULL},
    {"dir/sub/deep.bin", S_IFREG | 0600, sizeof(d_deep), M0 + 2, 7, 8, d_deep, NULL},
    {"empty", S_IFREG | 0444, 0, M0 + 3, 0, 0, d_a, NULL},
    {"link", S_IFLNK | 0777, 9, M0 + 4, 0, 0, NULL, "dir/a.txt"},
};
#define NWANT(w) (sizeof(w) / sizeof((w)[0]))

static struct buf std_tar(void)
{
	return tar_of(std_members, STD_MEMBERS);
}

static void write_std_tar(const char *path)
{
	struct buf t = std_tar();

	write_file(path, t.p, t.len);
	free(t.p);
}

/* A different small archive: one file. */
static void write_other_tar(const char *path, const char *name)
{
	struct member m = {
	    .name = name, .type = '0', .mode = 0644, .mtime = M0, .data = d_deep, .size = 100};
	struct buf t = tar_of(&m, 1);

	write_file(path, t.p, t.len);
	free(t.p);
}

/* Appends a member to a tar file: its last 1024 bytes (the end marker) are replaced. */
static void append_member(const char *path)
{
	struct member m = {
	    .name = "added", .type = '0', .mode = 0644, .mtime = M0, .data = d_a, .size = 10};
	size_t len = 0;
	uint8_t *d = tu_read_file(path, &len);
	struct buf b = {0};

	CHECK(d != NULL && len >= 1024);
	if (!d || len < 1024) {
		free(d);
		return;
	}
	b_put(&b, d, len - 1024);
	tar_add(&b, &m);
	b_put(&b, NULL, 1024);
	write_file(path, b.p, b.len);
	free(b.p);
	free(d);
}

/* ---- walking a tree (tree.h) ------------------------------------------------------------ */

static const struct tree_ops *ops = &tree_archive_ops;

/* The attributes of path ("" the root), looked up component by component. */
static int resolve(void *t, const char *path, struct arch_attr *out)
{
	uint64_t dir = ops->root;
	const char *p = path;
	int err = ops->getattr(t, dir, out);

	while (!err && *p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		err = ops->lookup(t, dir, p, len, out);
		dir = out->ino;
		p += len + (slash ? 1 : 0);
	}
	return err;
}

#define LIST_MAX 16

struct listing {
	int n, stop_at; /* stop_at: return 1 ("full") at that entry (0: never) */
	char name[LIST_MAX][64];
	struct arch_attr at[LIST_MAX];
	uint64_t cookie[LIST_MAX];
};

static int collect(void *opaque, const char *name, size_t len, const struct arch_attr *attr,
		   uint64_t cookie)
{
	struct listing *l = opaque;

	if (l->stop_at && l->n == l->stop_at)
		return 1;
	if (l->n == LIST_MAX || len >= sizeof(l->name[0]))
		return -E2BIG;
	memcpy(l->name[l->n], name, len);
	l->name[l->n][len] = '\0';
	l->at[l->n] = *attr;
	l->cookie[l->n] = cookie;
	l->n++;
	return 0;
}

/* True if path is a direct child of dir ("" the root); *base gets its last component. */
static bool child_of(const char *dir, const char *path, const char **base)
{
	size_t n = strlen(dir);

	if (n && (strncmp(path, dir, n) != 0 || path[n] != '/'))
		return false;
	*base = path + (n ? n + 1 : 0);
	return strchr(*base, '/') == NULL;
}

static void check_attr(const struct arch_attr *at, const struct want *w)
{
	if (at->mode != w->mode || at->mtime != w->mtime || at->uid != w->uid ||
	    at->gid != w->gid || (!S_ISDIR(w->mode) && at->size != w->size)) {
		fprintf(stderr,
			"%s:%d: %s: mode %o size %" PRIu64 " mtime %" PRId64 " owner %" PRIu64
			":%" PRIu64 ", expected %o %" PRIu64 " %" PRId64 " %u:%u\n",
			__FILE__, __LINE__, w->path, at->mode, at->size, at->mtime, at->uid,
			at->gid, w->mode, w->size, w->mtime, w->uid, w->gid);
		tu_failures++;
	}
}

/* The bytes of a regular file, read in pieces (full pieces but at the end), at its end, past
 * its end, and whole. */
static void check_bytes(void *t, uint64_t ino, const uint8_t *want, size_t size)
{
	uint8_t *got = malloc(size + 100);
	void *fh = NULL;
	size_t done = 0;

	CHECK_EQ(ops->open(t, ino, &fh), 0);
	if (!fh || !got) {
		free(got);
		return;
	}
	while (done < size) {
		size_t ask = 777 < size - done ? 777 : size - done;
		ssize_t r = ops->read(fh, got + done, 777, done);
		CHECK_EQ(r, ask);
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	CHECK_EQ(done, size);
	CHECK(memcmp(got, want, done) == 0);
	CHECK_EQ(ops->read(fh, got, 100, size), 0);
	CHECK_EQ(ops->read(fh, got, 100, size + 4096), 0);
	if (size >= 10) {
		CHECK_EQ(ops->read(fh, got, 100, size - 10), 10);
		CHECK(memcmp(got, want + size - 10, 10) == 0);
	}
	memset(got, 0, size);
	CHECK_EQ(ops->read(fh, got, size + 100, 0), size);
	CHECK(memcmp(got, want, size) == 0);
	ops->close(fh);
	free(got);
}

/* Asserts that the tree t shows exactly the entries of w (and nothing else): each folder's
 * listing in name order, resumable at every cookie; each entry's attributes by lookup, by
 * getattr and in its folder's listing; each file's bytes, each symlink's target. */
static void check_tree(void *t, const struct want *w, size_t n)
{
	struct arch_attr root, at, at2;
	int before = tu_failures;

	CHECK_EQ(ops->getattr(t, ops->root, &root), 0);
	CHECK(S_ISDIR(root.mode));
	CHECK_EQ(root.ino, ops->root);
	for (size_t d = 0; d <= n; d++) { /* the folders: the root (d == n), then w's */
		const char *dpath = d == n ? "" : w[d].path;
		struct listing l = {0}, r = {0}, s = {.stop_at = 1};
		int k = 0;

		if (d < n && !S_ISDIR(w[d].mode))
			continue;
		if (resolve(t, dpath, &at)) {
			fprintf(stderr, "%s:%d: folder '%s' not found\n", __FILE__, __LINE__,
				dpath);
			tu_failures++;
			continue;
		}
		CHECK_EQ(ops->readdir(t, at.ino, 0, collect, &l), 0);
		for (size_t i = 0; i < n; i++) {
			const char *base;
			if (!child_of(dpath, w[i].path, &base))
				continue;
			if (k < l.n) {
				CHECK_STR(l.name[k], base);
				check_attr(&l.at[k], &w[i]);
			}
			k++;
		}
		if (l.n != k) {
			fprintf(stderr, "%s:%d: folder '%s' lists %d entries, expected %d\n",
				__FILE__, __LINE__, dpath, l.n, k);
			tu_failures++;
		}
		if (l.n < 2)
			continue;
		/* from a cookie on; and a full buffer leaves its entry for the next call */
		CHECK_EQ(ops->readdir(t, at.ino, l.cookie[0], collect, &r), 0);
		CHECK_EQ(r.n, l.n - 1);
		CHECK_STR(r.name[0], l.name[1]);
		CHECK_EQ(ops->readdir(t, at.ino, l.cookie[l.n - 1], collect, &r), 0);
		CHECK_EQ(r.n, l.n - 1);
		CHECK_EQ(ops->readdir(t, at.ino, 0, collect, &s), 0);
		CHECK_EQ(s.n, 1);
		s.stop_at = 0;
		CHECK_EQ(ops->readdir(t, at.ino, s.cookie[0], collect, &s), 0);
		CHECK_EQ(s.n, l.n);
		CHECK_STR(s.name[1], l.name[1]);
	}
	for (size_t i = 0; i < n; i++) {
		if (resolve(t, w[i].path, &at)) {
			fprintf(stderr, "%s:%d: '%s' not found\n", __FILE__, __LINE__, w[i].path);
			tu_failures++;
			continue;
		}
		check_attr(&at, &w[i]);
		CHECK_EQ(ops->getattr(t, at.ino, &at2), 0);
		CHECK_EQ(at2.ino, at.ino);
		check_attr(&at2, &w[i]);
		if (S_ISREG(w[i].mode)) {
			check_bytes(t, at.ino, w[i].data, w[i].size);
			CHECK(ops->lookup(t, at.ino, "x", 1, &at2) < 0);
		} else if (S_ISLNK(w[i].mode)) {
			char target[256];
			size_t len = 0;
			CHECK_EQ(ops->readlink(t, at.ino, target, sizeof(target), &len), 0);
			CHECK_EQ(len, strlen(w[i].link));
			CHECK(len <= sizeof(target) && memcmp(target, w[i].link, len) == 0);
		} else if (S_ISDIR(w[i].mode)) {
			void *fh = NULL;
			CHECK_EQ(ops->open(t, at.ino, &fh), -EISDIR);
			CHECK_EQ(ops->lookup(t, at.ino, "no such name", 12, &at2), -ENOENT);
		}
	}
	CHECK_EQ(ops->lookup(t, ops->root, "nothing", 7, &at), -ENOENT);
	if (tu_failures != before)
		fprintf(stderr, "    (the tree above differs from what was archived)\n");
}

/* ---- options, inputs -------------------------------------------------------------------- */

static struct idx_opts dflt(void)
{
	return (struct idx_opts){.build = {.gzip_spacing = MIB, .threads = 1}};
}

static struct arch_opts aopts(const struct idx_opts *o)
{
	return (struct arch_opts){.idx = *o, .env = {.cache = cache}};
}

/* idx_prepare, checking what holds after every call: on success a path and *built set; on an
 * error *path NULL and *built false. */
static int prep(const char *archive, const struct idx_opts *o, char **path, bool *built,
		struct idx_build_stats *st)
{
	int err;

	*path = (char *)"not cleared";
	*built = true;
	err = idx_prepare(archive, o, path, built, st);
	if (err) {
		CHECK(*path == NULL);
		CHECK(!*built);
		*path = NULL;
	} else {
		CHECK(*path != NULL);
	}
	return err;
}

/* The input idx_build makes of a file (its source to be freed by the caller). */
static struct idx_input input_of(const char *path)
{
	struct idx_input in = {.name = path};
	struct stat st;

	CHECK_EQ(src_open_file(path, &in.src), 0);
	CHECK_EQ(stat(path, &st), 0);
	in.mode = st.st_mode;
	in.uid = st.st_uid;
	in.gid = st.st_gid;
	in.mtime = st.st_mtim.tv_sec;
	in.mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
	return in;
}

/* Checks that name has the form DIR/NAME.HASH.index.sqlite, HASH 16 hex digits. */
static void check_hashed_name(const char *path, const char *dir, const char *name)
{
	const char *p = path;
	size_t dl = strlen(dir), nl = strlen(name);
	bool ok = strncmp(p, dir, dl) == 0 && p[dl] == '/' && strncmp(p + dl + 1, name, nl) == 0 &&
		  p[dl + 1 + nl] == '.';

	if (ok) {
		p += dl + 1 + nl + 1;
		for (int i = 0; i < 16; i++)
			ok = ok && strchr("0123456789abcdef", p[i]) && p[i];
		ok = ok && strcmp(p + 16, ".index.sqlite") == 0;
	}
	if (!ok) {
		fprintf(stderr, "%s:%d: %s is not %s/%s.HASH.index.sqlite\n", __FILE__, __LINE__,
			path, dir, name);
		tu_failures++;
	}
}

static const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* ---- building and opening --------------------------------------------------------------- */

static void check_std_stats(const struct idx_build_stats *st, uint64_t archive_size, uint64_t usize)
{
	CHECK_EQ(st->members, STD_MEMBERS);
	CHECK_EQ(st->archive_size, archive_size);
	CHECK_EQ(st->usize, usize);
	CHECK(!st->single_file);
	CHECK(!st->damaged);
	CHECK(st->seconds >= 0 && st->seconds < 30);
}

/* idx_build of a plain tar file: the stats, the summary line, no temporary file left, a valid
 * index that arch_open uses as it is and whose tree is the archive's. */
static void test_build_plain(void)
{
	const char *dir = pth("%s/build", top);
	const char *ar = pth("%s/a.tar", dir), *ix = pth("%s/a.idx", dir);
	struct idx_opts o = dflt();
	struct idx_build_stats st;
	struct buf t = std_tar();
	struct arch *a = (struct arch *)&o;
	char why[256];

	mkdir_ok(dir);
	write_file(ar, t.p, t.len);
	log_clear();
	memset(&st, 0xff, sizeof(st));
	CHECK_EQ(idx_build(ar, ix, &o.build, &st), 0);
	check_std_stats(&st, t.len, t.len);
	CHECK_EQ(st.checkpoints, 0);
	CHECK(logged(TFS_LOG_INFO, "indexed a.tar", "6 members"));
	CHECK_EQ(dir_count(dir, NULL), 2); /* the archive and its index: no temporary file */
	CHECK_EQ(idx_validate(ix, ar, &o.build, why, sizeof(why)), 0);
	CHECK_STR(why, "");

	o.index_file = ix;
	struct arch_opts ao = aopts(&o);
	struct snap s = snap_of(ix);
	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	CHECK(a != NULL);
	if (a) {
		const struct arch_info *i = arch_get_info(a);
		char *real_ar = realpath(ar, NULL), *real_ix = realpath(ix, NULL);
		CHECK(!i->built);
		CHECK_STR(i->path, real_ar);
		CHECK_STR(i->index, real_ix);
		CHECK_STR(i->codec, "none");
		CHECK(!i->single_file);
		CHECK(!i->damaged);
		CHECK_EQ(i->members, STD_MEMBERS);
		CHECK_EQ(i->entries, STD_ENTRIES);
		CHECK_EQ(i->archive_size, t.len);
		CHECK_EQ(i->usize, t.len);
		check_tree(a, std_tree, NWANT(std_tree));
		arch_close(a);
		free(real_ar);
		free(real_ix);
	}
	struct snap s2 = snap_of(ix);
	CHECK(snap_same(&s, &s2)); /* opened as it was */

	/* stats may be NULL; a file at the index path is replaced */
	write_file(ix, "junk", 4);
	CHECK_EQ(idx_build(ar, ix, &o.build, NULL), 0);
	CHECK_EQ(idx_validate(ix, ar, &o.build, why, sizeof(why)), 0);
	CHECK_EQ(dir_count(dir, NULL), 2);

	/* arch_open builds what is missing and says so */
	unlink(ix);
	a = NULL;
	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	if (a) {
		const struct arch_info *i = arch_get_info(a);
		CHECK(i->built);
		CHECK_EQ(i->build.members, STD_MEMBERS);
		CHECK_EQ(i->build.archive_size, t.len);
		check_tree(a, std_tree, NWANT(std_tree));
		arch_close(a);
	}
	free(t.p);
}

/* idx_build_from over memory: the root takes the input's owner and mtime; quiet keeps the
 * summary line out of the info level.  A .tar.gz (gzwrite): the same tree through the codec,
 * the decompressed size, checkpoints. */
static void test_build_from(void)
{
	const char *dir = pth("%s/from", top);
	const char *ix = pth("%s/mem.idx", dir), *gz = pth("%s/a.tar.gz", dir);
	const char *gix = pth("%s/gz.idx", dir);
	struct idx_build_opts b = {.gzip_spacing = 64 * 1024, .threads = 1};
	struct idx_build_stats st;
	struct buf t = std_tar();
	struct arch *a = NULL;
	struct arch_attr root;
	char why[256];

	mkdir_ok(dir);
	struct idx_input in = {.src = src_from_mem(t.p, t.len),
			       .name = "some/where/mem.tar",
			       .mode = 0100640,
			       .uid = 55,
			       .gid = 66,
			       .mtime = M0 + 100,
			       .mtime_nsec = 7};
	log_clear();
	CHECK_EQ(idx_build_from(&in, ix, &b, &st), 0);
	check_std_stats(&st, t.len, t.len);
	CHECK(logged(TFS_LOG_INFO, "indexed mem.tar", NULL));
	CHECK_EQ(dir_count(dir, NULL), 1);
	CHECK_EQ(arch_open_index(ix, NULL, src_from_mem(t.p, t.len), "mem.tar",
				 &(struct arch_env){.cache = cache}, &a),
		 0);
	if (a) {
		check_tree(a, std_tree, NWANT(std_tree));
		CHECK_EQ(ops->getattr(a, ops->root, &root), 0);
		CHECK_EQ(root.uid, 55);
		CHECK_EQ(root.gid, 66);
		CHECK_EQ(root.mtime, M0 + 100);
		CHECK_EQ(root.mtime_nsec, 7);
		arch_close(a);
	}
	in.quiet = true;
	log_clear();
	CHECK_EQ(idx_build_from(&in, ix, &b, NULL), 0);
	CHECK(!logged(TFS_LOG_INFO, "indexed", NULL));
	src_free(in.src);

	/* gzip */
	write_gz(gz, t.p, t.len);
	struct stat gst;
	CHECK_EQ(stat(gz, &gst), 0);
	log_clear();
	CHECK_EQ(idx_build(gz, gix, &b, &st), 0);
	check_std_stats(&st, (uint64_t)gst.st_size, t.len);
	CHECK(st.checkpoints >= 2); /* 75 KiB decompressed, a checkpoint every 64 KiB */
	CHECK(logged(TFS_LOG_INFO, "indexed a.tar.gz", "decompressed"));
	CHECK_EQ(idx_validate(gix, gz, &b, why, sizeof(why)), 0);
	struct idx_opts o = {.index_file = gix, .build = b};
	struct arch_opts ao = aopts(&o);
	a = NULL;
	CHECK_EQ(arch_open(gz, &ao, &a), 0);
	if (a) {
		const struct arch_info *i = arch_get_info(a);
		CHECK(!i->built);
		CHECK_STR(i->codec, "gzip");
		CHECK_EQ(i->usize, t.len);
		CHECK_EQ(i->archive_size, (uint64_t)gst.st_size);
		check_tree(a, std_tree, NWANT(std_tree));
		arch_close(a);
	}
	free(t.p);
}

/* ---- where the index lives -------------------------------------------------------------- */

static void test_locations(void)
{
	const char *base = pth("%s/loc", top);
	const char *ar = pth("%s/arch/a.tar", base),
		   *beside = pth("%s/arch/a.tar.index.sqlite", base);
	const char *xdg = pth("%s/xdg", base), *home = pth("%s/home", base);
	struct idx_opts o = dflt();
	struct idx_build_stats st;
	char *p, *p2, folder_name[256] = "";
	bool built;

	mkdir_ok(base);
	mkdir_ok(pth("%s/arch", base));
	mkdir_ok(pth("%s/arch2", base));
	mkdir_ok(pth("%s/ar", base));
	mkdir_ok(pth("%s/if", base));
	CHECK_EQ(symlink("arch", pth("%s/archlink", base)), 0);
	write_std_tar(ar);
	write_other_tar(pth("%s/arch2/a.tar", base), "other");
	setenv("XDG_CACHE_HOME", xdg, 1);
	setenv("HOME", home, 1);

	/* 3. beside the archive, its folder being writable; built once, then reused */
	CHECK_EQ(prep(ar, &o, &p, &built, &st), 0);
	CHECK_STR(p, beside);
	CHECK(built);
	CHECK_EQ(st.members, STD_MEMBERS);
	free(p);
	struct snap sb = snap_of(beside);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, beside);
	CHECK(!built);
	free(p);
	struct snap sb2 = snap_of(beside);
	CHECK(snap_same(&sb, &sb2));
	CHECK(!exists(xdg));

	/* 1. --index-file before everything, --index-folder included */
	o.index_file = pth("%s/if/x.sqlite", base);
	o.index_folder = pth("%s/folder", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, o.index_file);
	CHECK(built);
	free(p);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(!built);
	free(p);
	CHECK(!exists(o.index_folder));
	CHECK_EQ(dir_count(pth("%s/if", base), NULL), 1);

	/* 2. --index-folder (made, with its parents) before a valid index beside the archive */
	o.index_file = NULL;
	o.index_folder = pth("%s/folder/deeper", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	if (p) {
		check_hashed_name(p, o.index_folder, "a.tar");
		snprintf(folder_name, sizeof(folder_name), "%s", base_of(p));
		CHECK(exists(p));
	}
	/* the HASH is of the canonical path: the same archive by other paths, the same index */
	CHECK_EQ(prep(pth("%s/arch/../arch/a.tar", base), &o, &p2, &built, NULL), 0);
	CHECK_STR(p2, p);
	CHECK(!built);
	free(p2);
	CHECK_EQ(prep(pth("%s/archlink/a.tar", base), &o, &p2, &built, NULL), 0);
	CHECK_STR(p2, p);
	CHECK(!built);
	free(p2);
	/* another archive of the same name: another index */
	CHECK_EQ(prep(pth("%s/arch2/a.tar", base), &o, &p2, &built, NULL), 0);
	CHECK(built);
	if (p && p2) {
		check_hashed_name(p2, o.index_folder, "a.tar");
		CHECK(strcmp(p, p2) != 0);
	}
	free(p2);
	free(p);
	CHECK_EQ(dir_count(o.index_folder, NULL), 2);
	sb2 = snap_of(beside);
	CHECK(snap_same(&sb, &sb2));

	/* 4. the cache, when beside the archive is inside the mount point: NAME.HASH as above */
	o.index_folder = NULL;
	o.mountpoint = pth("%s/arch", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, pth("%s/tarseek/%s", xdg, folder_name));
	CHECK(built);
	free(p);
	sb2 = snap_of(beside);
	CHECK(snap_same(&sb, &sb2));
	/* the mount point by a symlink, or with a trailing slash, is the same folder */
	o.mountpoint = pth("%s/archlink", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, pth("%s/tarseek/%s", xdg, folder_name));
	CHECK(!built);
	free(p);
	o.mountpoint = pth("%s/arch/", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, pth("%s/tarseek/%s", xdg, folder_name));
	free(p);
	/* a folder whose name only starts like the mount point's is not inside it */
	o.mountpoint = pth("%s/ar", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, beside);
	CHECK(!built);
	free(p);

	/* $XDG_CACHE_HOME unset, or not absolute: ~/.cache/tarseek */
	o.mountpoint = pth("%s/arch", base);
	setenv("XDG_CACHE_HOME", "tarseek-test-relative", 1); /* would be in the working folder */
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, pth("%s/.cache/tarseek/%s", home, folder_name));
	CHECK(built);
	free(p);
	CHECK(!exists("tarseek-test-relative"));
	if (exists("tarseek-test-relative"))
		nftw("tarseek-test-relative", rm_one, 16, FTW_DEPTH | FTW_PHYS);
	unsetenv("XDG_CACHE_HOME");
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, pth("%s/.cache/tarseek/%s", home, folder_name));
	CHECK(!built);
	free(p);
	setenv("XDG_CACHE_HOME", xdg, 1);

	/* never inside the mount point */
	log_clear();
	o.index_file = pth("%s/if/inside.sqlite", base);
	o.mountpoint = pth("%s/if", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EINVAL);
	CHECK(!exists(o.index_file));
	CHECK(logged(TFS_LOG_ERR, "inside the mount point", NULL));
	o.index_file = NULL;
	o.index_folder = pth("%s/if/folder", base);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EINVAL);
	CHECK(dir_count(o.index_folder, NULL) <= 0);
	o.index_folder = pth("%s/if", base); /* the mount point itself */
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EINVAL);
	CHECK_EQ(dir_count(o.index_folder, ".sqlite"), 1); /* x.sqlite of above, nothing new */
	o.index_folder = NULL;
	setenv("XDG_CACHE_HOME", pth("%s/arch/cache", base), 1);
	o.mountpoint = pth("%s/arch", base);
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EINVAL);
	CHECK(dir_count(pth("%s/arch/cache/tarseek", base), NULL) <= 0);
	CHECK(logged(TFS_LOG_ERR, "outside the mount point", NULL));
	setenv("XDG_CACHE_HOME", xdg, 1);
	sb2 = snap_of(beside);
	CHECK(snap_same(&sb, &sb2));
}

/* *built, recreate, check_only. */
static void test_prepare_flags(void)
{
	const char *dir = pth("%s/flags", top);
	const char *ar = pth("%s/a.tar", dir), *ix = pth("%s/i.sqlite", dir);
	struct idx_opts o = dflt();
	char *p;
	bool built;

	mkdir_ok(dir);
	write_std_tar(ar);
	o.index_file = ix;

	/* check_only, nothing there: -ENOENT, logged, nothing made */
	o.check_only = true;
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -ENOENT);
	CHECK(!exists(ix));
	CHECK_EQ(dir_count(dir, NULL), 1);
	CHECK(logged(TFS_LOG_NOTICE, "no index", ix));

	o.check_only = false;
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	free(p);
	struct snap s = snap_of(ix);

	/* check_only, valid: used */
	o.check_only = true;
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK_STR(p, ix);
	CHECK(!built);
	free(p);

	/* recreate: built again, under a new name renamed into place (a new inode) */
	o.check_only = false;
	o.recreate = true;
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	free(p);
	struct snap s2 = snap_of(ix);
	CHECK(s2.ok && s2.ino != s.ino);
	CHECK(logged(TFS_LOG_INFO, "rebuilding", "recreate"));
	char why[256];
	CHECK_EQ(idx_validate(ix, ar, &o.build, why, sizeof(why)), 0);
	CHECK_EQ(dir_count(dir, NULL), 2);

	/* check_only wins over recreate: nothing is built */
	o.check_only = true;
	CHECK(prep(ar, &o, &p, &built, NULL) < 0);
	struct snap s3 = snap_of(ix);
	CHECK(snap_same(&s2, &s3));

	/* check_only, stale: -ESTALE with the reason, the index left as it is */
	o.recreate = false;
	append_member(ar);
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -ESTALE);
	s3 = snap_of(ix);
	CHECK(snap_same(&s2, &s3));
	CHECK(logged(TFS_LOG_NOTICE, "stale", "size"));
	CHECK_EQ(dir_count(dir, NULL), 2);

	/* and without check_only it is rebuilt */
	o.check_only = false;
	struct idx_build_stats st = {0};
	CHECK_EQ(prep(ar, &o, &p, &built, &st), 0);
	CHECK(built);
	CHECK_EQ(st.members, STD_MEMBERS + 1);
	free(p);
}

/* ---- validation ------------------------------------------------------------------------- */

/* The index ix of ar is stale, for a reason that contains reason; idx_prepare rebuilds it,
 * logging that reason, and the new index is valid. */
static void expect_rebuilt_at(int line, const char *ar, const char *ix,
			      const struct idx_build_opts *b, const char *reason)
{
	struct idx_opts o = {.index_file = ix, .build = *b};
	int before = tu_failures;
	char why[256] = "unset", *p;
	bool built;

	CHECK_EQ(idx_validate(ix, ar, b, why, sizeof(why)), -ESTALE);
	if (!strstr(why, reason)) {
		fprintf(stderr, "%s:%d: why == \"%s\", expected it to say \"%s\"\n", __FILE__,
			__LINE__, why, reason);
		tu_failures++;
	}
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	CHECK(logged(TFS_LOG_NOTICE, "rebuilding", why));
	free(p);
	CHECK_EQ(idx_validate(ix, ar, b, why, sizeof(why)), 0);
	if (tu_failures != before)
		fprintf(stderr, "    (in the case at line %d)\n", line);
}
#define expect_rebuilt(...) expect_rebuilt_at(__LINE__, __VA_ARGS__)

/* Runs sql on the index at ix (read-write), then seals it again if reseal, so that only
 * what sql changed differs from a good index. */
static void edit_index(const char *ix, const char *sql, bool reseal)
{
	sqlite3 *db = NULL;

	CHECK_EQ(sqlite3_open_v2(ix, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	CHECK_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	CHECK_EQ(sqlite3_close(db), SQLITE_OK);
	if (reseal)
		CHECK_EQ(db_seal(ix), 0);
}

static void build_ok(const char *ar, const char *ix, const struct idx_build_opts *b)
{
	char why[256];

	CHECK_EQ(idx_build(ar, ix, b, NULL), 0);
	CHECK_EQ(idx_validate(ix, ar, b, why, sizeof(why)), 0);
}

/* A file that validation calls not ours (-ENOTSUP, why says so): idx_prepare leaves it as it
 * is; at --index-file it refuses (-EEXIST), beside the archive (where ratarmount writes an
 * index of the same name) it says so and builds in the cache folder instead. */
static void expect_refused_at(int line, const char *ar, const char *ix, const char *reason)
{
	struct idx_opts o = dflt();
	int before = tu_failures;
	char why[256] = "unset", *p;
	bool built;

	CHECK_EQ(idx_validate(ix, ar, &o.build, why, sizeof(why)), -ENOTSUP);
	CHECK(strstr(why, reason) != NULL);
	struct snap s = snap_of(ix);
	o.index_file = ix;
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EEXIST);
	CHECK(logged(TFS_LOG_ERR, "not a tarseek index", ix));
	struct snap s2 = snap_of(ix);
	CHECK(snap_same(&s, &s2));
	CHECK_EQ(dir_count(top, ".tmp"), 0);
	/* beside the archive */
	const char *beside = pth("%s.index.sqlite", ar);
	copy_file(ix, beside);
	s = snap_of(beside);
	o.index_file = NULL;
	log_clear();
	p = NULL;
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(logged(TFS_LOG_NOTICE, "not a tarseek index", beside));
	CHECK(p && strstr(p, "/xdg/tarseek/") != NULL);
	if (p)
		unlink(p);
	free(p);
	s2 = snap_of(beside);
	CHECK(snap_same(&s, &s2));
	unlink(beside);
	if (tu_failures != before)
		fprintf(stderr, "    (in the case at line %d)\n", line);
}
#define expect_refused(...) expect_refused_at(__LINE__, __VA_ARGS__)

static void test_validate(void)
{
	const char *dir = pth("%s/val", top);
	const char *ar = pth("%s/a.tar", dir), *ix = pth("%s/i.sqlite", dir);
	const char *cut = pth("%s/cut.sqlite", dir);
	struct idx_opts o = dflt();
	struct idx_build_opts b = o.build, b2;
	struct stat st;
	char why[256], *p;
	bool built;

	mkdir_ok(dir);
	write_std_tar(ar);
	o.index_file = ix;

	/* a valid index is used untouched */
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	free(p);
	struct snap s = snap_of(ix);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(!built);
	free(p);
	struct snap s2 = snap_of(ix);
	CHECK(snap_same(&s, &s2));
	strcpy(why, "unset");
	CHECK_EQ(idx_validate(ix, ar, &b, why, sizeof(why)), 0);
	CHECK_STR(why, "");
	CHECK_EQ(idx_validate(pth("%s/none.sqlite", dir), ar, &b, why, sizeof(why)), -ENOENT);

	/* the archive's content changed, its size and mtime kept: the fingerprint tells, at the
	 * head (a member's data, a header) and at the tail */
	poke(ar, 1024 + 10, 0x20, true); /* in dir/a.txt's data */
	expect_rebuilt(ar, ix, &b, "content");
	poke(ar, 0, 0x01, true); /* "dir/" -> "ehr/": the header's checksum still holds */
	poke(ar, 1, 0x01, true);
	expect_rebuilt(ar, ix, &b, "content");
	CHECK_EQ(stat(ar, &st), 0);
	/* in big.bin's data, the last member's: before its padding and the end marker */
	poke(ar, st.st_size - 1024 - (512 - sizeof(d_big) % 512) - 10, 0x01, true);
	expect_rebuilt(ar, ix, &b, "content");
	/* its size */
	append_member(ar);
	expect_rebuilt(ar, ix, &b, "size");
	/* its mtime, by a second or by a nanosecond */
	struct timespec t = mtime_of(ar);
	t.tv_sec += 1;
	set_mtime(ar, t);
	expect_rebuilt(ar, ix, &b, "mtime");
	t.tv_nsec = t.tv_nsec == 5 ? 6 : 5;
	set_mtime(ar, t);
	expect_rebuilt(ar, ix, &b, "mtime");
	write_std_tar(ar);
	build_ok(ar, ix, &b);

	/* the options that shape the index; not those that do not */
	b2 = b;
	b2.threads = 4;
	b2.progress = true;
	b2.gzip_spacing = 64 * 1024; /* a plain tar has no checkpoints */
	b2.strip_ext = true;	     /* without recursion there is nothing to strip */
	CHECK_EQ(idx_validate(ix, ar, &b2, why, sizeof(why)), 0);
	b2 = b;
	b2.ignore_zeros = true;
	expect_rebuilt(ar, ix, &b2, "options");
	b2.recursion = 1;
	expect_rebuilt(ar, ix, &b2, "options");
	b2.recursion = 2;
	expect_rebuilt(ar, ix, &b2, "options");
	b2.strip_ext = true;
	expect_rebuilt(ar, ix, &b2, "options");
	build_ok(ar, ix, &b);

	/* made by another version of the format (only that changed: sealed again) */
	edit_index(ix, "UPDATE meta SET value = '3' WHERE key = 'format'", true);
	expect_rebuilt(ar, ix, &b, "version");
	edit_index(ix, "UPDATE meta SET value = '6' WHERE key = 'format'", true);
	expect_rebuilt(ar, ix, &b, "version");
	edit_index(ix, "UPDATE meta SET value = '3' WHERE key = 'format'", false);
	CHECK_EQ(idx_validate(ix, ar, &b, why, sizeof(why)), -ESTALE);
	build_ok(ar, ix, &b);

	/* an interrupted build: the members but no 'complete' marker, nor the seal */
	struct idx_input in = input_of(ar);
	CHECK_EQ(idx_build_base(&in, ix, &b, NULL), 0);
	src_free(in.src);
	expect_rebuilt(ar, ix, &b, "incomplete");
	edit_index(ix, "UPDATE meta SET value = '0' WHERE key = 'complete'", true);
	expect_rebuilt(ar, ix, &b, "incomplete");
	edit_index(ix, "DELETE FROM meta WHERE key = 'complete'", true);
	expect_rebuilt(ar, ix, &b, "incomplete");

	/* the seal: missing, of another application, or not matching the bytes */
	poke(ix, 60, 0xff, false); /* the checksum */
	expect_rebuilt(ar, ix, &b, "checksum");
	poke(ix, 71, 0x01, false); /* the application id */
	expect_rebuilt(ar, ix, &b, "checksum");
	edit_index(ix, "INSERT INTO meta VALUES ('edited', 'after the seal')", false);
	expect_rebuilt(ar, ix, &b, "checksum");
	CHECK_EQ(stat(ix, &st), 0);
	poke(ix, st.st_size / 2, 0x04, false); /* some byte of some page */
	CHECK_EQ(idx_validate(ix, ar, &b, why, sizeof(why)), -ESTALE);
	expect_rebuilt(ar, ix, &b, "");

	/* truncated: stale (rebuilt), never taken for another program's file */
	CHECK_EQ(stat(ix, &st), 0);
	off_t cuts[] = {st.st_size - 1, st.st_size / 2, 8192, 4096, 1000, 100, 16};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		copy_file(ix, cut);
		CHECK_EQ(truncate(cut, cuts[i]), 0);
		int err = idx_validate(cut, ar, &b, why, sizeof(why));
		if (err != -ESTALE) {
			fprintf(stderr,
				"%s:%d: an index cut to %lld bytes: %d (%s), expected "
				"-ESTALE\n",
				__FILE__, __LINE__, (long long)cuts[i], err, why);
			tu_failures++;
		}
		if (err == -ESTALE)
			expect_rebuilt(ar, cut, &b, "");
	}
	unlink(cut);

	/* not ours at all: never overwritten */
	write_file(cut, "just some text, not a database\n", 31);
	expect_refused(ar, cut, "not an SQLite");
	write_file(cut, "", 0);
	expect_refused(ar, cut, "not an SQLite");
	unlink(cut);
	sqlite3 *db = NULL;
	CHECK_EQ(sqlite3_open(cut, &db), SQLITE_OK);
	CHECK_EQ(sqlite3_exec(db, "CREATE TABLE t (x); INSERT INTO t VALUES (1)", NULL, NULL, NULL),
		 SQLITE_OK);
	sqlite3_close(db);
	expect_refused(ar, cut, "another program");
	edit_index(cut,
		   "CREATE TABLE meta (key TEXT PRIMARY KEY, value);"
		   "INSERT INTO meta VALUES ('owner', 'someone else')",
		   false);
	expect_refused(ar, cut, "another program");
	unlink(cut);
	CHECK_EQ(dir_count(dir, NULL), 2);
}

/* Trust (validate.h): an index is used only if it is ours, root's or the archive owner's, and
 * not writable by others.  Needs root, to give files other owners. */
static void test_trust(void)
{
	const char *dir = pth("%s/trust", top);
	const char *ar = pth("%s/a.tar", dir), *ix = pth("%s/i.sqlite", dir);
	const char *beside = pth("%s/a.tar.index.sqlite", dir);
	struct idx_opts o = dflt();
	char why[256], *p;
	bool built;

	if (geteuid() != 0) {
		fprintf(stderr, "test_trust: skipped (needs root to chown)\n");
		return;
	}
	mkdir_ok(dir);
	write_std_tar(ar);
	build_ok(ar, ix, &o.build);

	/* someone else's (not the archive owner's) */
	CHECK_EQ(chown(ix, 4242, 4242), 0);
	CHECK_EQ(idx_validate(ix, ar, &o.build, why, sizeof(why)), -EPERM);
	CHECK(strstr(why, "4242") != NULL);
	struct snap s = snap_of(ix);
	o.index_file = ix;
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EPERM);
	CHECK(logged(TFS_LOG_ERR, "not using the index", ix));
	struct snap s2 = snap_of(ix);
	CHECK(snap_same(&s, &s2));
	/* beside the archive, not chosen by the user: the next location instead */
	o.index_file = NULL;
	copy_file(ix, beside);
	CHECK_EQ(chown(beside, 4242, 4242), 0);
	s = snap_of(beside);
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	if (p)
		CHECK(strncmp(p, getenv("XDG_CACHE_HOME"), strlen(getenv("XDG_CACHE_HOME"))) == 0);
	free(p);
	CHECK(logged(TFS_LOG_NOTICE, "not using the index", beside));
	s2 = snap_of(beside);
	CHECK(snap_same(&s, &s2));

	/* the archive owner's: trusted, unless writable by others */
	CHECK_EQ(chown(ar, 4242, 4242), 0);
	CHECK_EQ(chmod(ix, 0644), 0);
	CHECK_EQ(chown(ix, 4242, 4242), 0);
	CHECK_EQ(idx_validate(ix, ar, &o.build, why, sizeof(why)), 0);
	CHECK_EQ(chmod(ix, 0664), 0);
	CHECK_EQ(idx_validate(ix, ar, &o.build, why, sizeof(why)), -EPERM);
	CHECK_EQ(chmod(ix, 0646), 0);
	CHECK_EQ(idx_validate(ix, ar, &o.build, why, sizeof(why)), -EPERM);
	/* ours, even writable by others */
	CHECK_EQ(chown(ix, 0, 0), 0);
	CHECK_EQ(chmod(ix, 0666), 0);
	CHECK_EQ(idx_validate(ix, ar, &o.build, why, sizeof(why)), 0);
	unlink(beside);
}

/* ---- failures --------------------------------------------------------------------------- */

static void test_failures(void)
{
	const char *dir = pth("%s/fail", top), *folder = pth("%s/fail/folder", top);
	const char *noise = pth("%s/noise.bin", dir), *ix = pth("%s/i.sqlite", dir);
	const char *badgz = pth("%s/bad.tar.gz", dir), *ar = pth("%s/a.tar", dir);
	struct idx_opts o = dflt();
	struct arch *a = (struct arch *)&o;
	uint8_t junk[5000];
	char *p;
	bool built;

	mkdir_ok(dir);
	tu_fill(junk, sizeof(junk), 9, 0);

	/* a missing archive */
	log_clear();
	CHECK_EQ(prep(pth("%s/none.tar", dir), &o, &p, &built, NULL), -ENOENT);
	CHECK(logged(TFS_LOG_ERR, "none.tar", NULL));
	struct arch_opts ao = aopts(&o);
	CHECK_EQ(arch_open(pth("%s/none.tar", dir), &ao, &a), -ENOENT);
	CHECK(a == NULL);
	log_clear();
	CHECK_EQ(idx_build(pth("%s/none.tar", dir), ix, &o.build, NULL), -ENOENT);
	CHECK(logged(TFS_LOG_ERR, "none.tar", NULL));
	CHECK_EQ(dir_count(dir, NULL), 0);

	/* not an archive: -EINVAL, said, nothing left (no index, no temporary file) */
	write_file(noise, junk, sizeof(junk));
	o.index_folder = folder;
	log_clear();
	CHECK_EQ(prep(noise, &o, &p, &built, NULL), -EINVAL);
	CHECK(logged(TFS_LOG_ERR, "noise.bin", "not an archive"));
	CHECK_EQ(dir_count(folder, NULL), 0);
	ao = aopts(&o);
	a = (struct arch *)&o;
	CHECK_EQ(arch_open(noise, &ao, &a), -EINVAL);
	CHECK(a == NULL);
	CHECK_EQ(dir_count(folder, NULL), 0);
	CHECK_EQ(idx_build(noise, ix, &o.build, NULL), -EINVAL);
	CHECK_EQ(dir_count(dir, NULL), 2); /* noise.bin, folder/ */

	/* damaged before anything could be indexed: -EIO */
	uint8_t gz[300] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
	memcpy(gz + 10, junk, sizeof(gz) - 10);
	write_file(badgz, gz, sizeof(gz));
	log_clear();
	CHECK_EQ(prep(badgz, &o, &p, &built, NULL), -EIO);
	CHECK(logged(TFS_LOG_ERR, "bad.tar.gz", NULL));
	CHECK_EQ(dir_count(folder, NULL), 0);
	a = (struct arch *)&o;
	CHECK_EQ(arch_open(badgz, &ao, &a), -EIO);
	CHECK(a == NULL);
	CHECK_EQ(dir_count(folder, NULL), 0);

	/* an index that cannot be written (its folder is missing): an error, nothing left */
	write_std_tar(ar);
	o.index_folder = NULL;
	o.index_file = pth("%s/missing/i.sqlite", dir);
	log_clear();
	CHECK(prep(ar, &o, &p, &built, NULL) < 0);
	CHECK(logged(TFS_LOG_ERR, "missing/i.sqlite", NULL));
	CHECK(!exists(pth("%s/missing", dir)));

	/* a build that fails at its last step (the rename into place: a folder is there)
	 * leaves no temporary file */
	mkdir_ok(pth("%s/taken", dir));
	write_file(pth("%s/taken/x", dir), "x", 1);
	log_clear();
	CHECK(idx_build(ar, pth("%s/taken", dir), &o.build, NULL) < 0);
	CHECK(logged(TFS_LOG_ERR, "cannot rename", NULL));
	CHECK_EQ(dir_count(dir, "taken"), 1);
	CHECK_EQ(dir_count(pth("%s/taken", dir), NULL), 1);
	nftw(pth("%s/taken", dir), rm_one, 16, FTW_DEPTH | FTW_PHYS);

	/* a stale index whose rebuild fails stays as it was; nothing else is left */
	o.index_file = ix;
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	free(p);
	struct snap s = snap_of(ix);
	write_file(ar, junk, sizeof(junk));
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EINVAL);
	struct snap s2 = snap_of(ix);
	CHECK(snap_same(&s, &s2));
	CHECK_EQ(dir_count(dir, ".tmp"), 0);
	CHECK_EQ(dir_count(dir, NULL), 5); /* noise.bin, folder/, bad.tar.gz, a.tar, i.sqlite */
}

/* ---- the temporary name ----------------------------------------------------------------- */

/* A source held at a gate: the first read that reaches gate.at waits while the gate is
 * closed (in a child: tells the parent through notify_fd, then waits for good). */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool closed;
	atomic_int held;
	uint64_t at;
	int notify_fd;
} gate = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .notify_fd = -1};

static ssize_t gate_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	if (off + len > gate.at) {
		pthread_mutex_lock(&gate.lock);
		if (gate.closed) {
			atomic_store(&gate.held, 1);
			if (gate.notify_fd >= 0 && write(gate.notify_fd, "h", 1) != 1)
				_exit(2);
			while (gate.closed)
				pthread_cond_wait(&gate.cond, &gate.lock);
			atomic_store(&gate.held, 0);
		}
		pthread_mutex_unlock(&gate.lock);
	}
	return src_pread(opaque, buf, len, off);
}

static void gate_src_close(void *opaque)
{
	src_free(opaque);
}

static const struct src_ops gate_ops = {.pread = gate_pread, .close = gate_src_close};

static void gate_open(void)
{
	pthread_mutex_lock(&gate.lock);
	gate.closed = false;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
}

struct held_build {
	struct idx_input in;
	const char *ix;
	struct idx_build_opts b;
	int err;
};

static void *held_build_main(void *arg)
{
	struct held_build *h = arg;

	h->err = idx_build_from(&h->in, h->ix, &h->b, NULL);
	return NULL;
}

/* While a build runs, the index is not at its path, only under another name beside it; once
 * done it is there and nothing else is.  A build killed in the middle leaves nothing at the
 * index's path, and the next build there works. */
static void test_temp_name(void)
{
	const char *dir = pth("%s/tmpname", top), *ix = pth("%s/i.sqlite", dir);
	struct buf t = std_tar();
	struct held_build h = {.ix = ix, .b = {.gzip_spacing = MIB, .threads = 1}, .err = 1};
	struct arch *a = NULL;
	pthread_t th;

	mkdir_ok(dir);
	h.in = (struct idx_input){.src = src_new(&gate_ops, src_from_mem(t.p, t.len), t.len),
				  .name = "held.tar",
				  .mode = 0100644,
				  .mtime = M0};
	gate.at = 1536; /* the second member's header: the build has begun */
	gate.closed = true;
	CHECK_EQ(pthread_create(&th, NULL, held_build_main, &h), 0);
	TU_WAIT(atomic_load(&gate.held));
	CHECK(!exists(ix));
	CHECK_EQ(dir_count(dir, NULL), 1);
	const char *tmp = dir_find(dir, "i.sqlite");
	CHECK(tmp != NULL);
	gate_open();
	pthread_join(th, NULL);
	CHECK_EQ(h.err, 0);
	CHECK(exists(ix));
	CHECK(tmp == NULL || !exists(tmp));
	CHECK_EQ(dir_count(dir, NULL), 1);
	CHECK_EQ(arch_open_index(ix, NULL, src_from_mem(t.p, t.len), "held.tar",
				 &(struct arch_env){.cache = cache}, &a),
		 0);
	if (a)
		check_tree(a, std_tree, NWANT(std_tree));
	arch_close(a);
	unlink(ix);

	/* killed while held */
	int pfd[2];
	CHECK_EQ(pipe(pfd), 0);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		tu_watchdog(20);
		gate.notify_fd = pfd[1];
		gate.closed = true;
		idx_build_from(&h.in, ix, &h.b, NULL);
		_exit(3); /* the gate stays closed: never here */
	}
	CHECK(pid > 0);
	close(pfd[1]);
	struct pollfd pf = {.fd = pfd[0], .events = POLLIN};
	CHECK_EQ(poll(&pf, 1, 20000), 1); /* the child is held in the middle of its build */
	kill(pid, SIGKILL);
	int status = 0;
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	close(pfd[0]);
	CHECK(!exists(ix));
	const char *left = dir_find(dir, "i.sqlite"); /* the dead build's temporary file */
	CHECK(left != NULL);
	char why[256];
	if (left)
		CHECK(idx_validate(left, "held.tar", &h.b, why, sizeof(why)) != 0);
	h.err = 1;
	held_build_main(&h);
	CHECK_EQ(h.err, 0);
	a = NULL;
	CHECK_EQ(arch_open_index(ix, NULL, src_from_mem(t.p, t.len), "held.tar",
				 &(struct arch_env){.cache = cache}, &a),
		 0);
	if (a)
		check_tree(a, std_tree, NWANT(std_tree));
	arch_close(a);
	/* the dead build's file was written just now: kept (a build elsewhere may own it) */
	CHECK(left == NULL || exists(left));
	/* unwritten for an hour and its process gone: the next build removes it, but not one
	 * whose process lives (our parent's pid) */
	const char *live = pth("%s.tmp.%d", ix, (int)getppid());
	write_file(live, "x", 1);
	struct timespec old[2] = {{time(NULL) - 3600, 0}, {time(NULL) - 3600, 0}};
	CHECK_EQ(utimensat(AT_FDCWD, live, old, 0), 0);
	if (left)
		CHECK_EQ(utimensat(AT_FDCWD, left, old, 0), 0);
	unlink(ix);
	log_clear();
	h.err = 1;
	held_build_main(&h);
	CHECK_EQ(h.err, 0);
	CHECK(left == NULL || !exists(left));
	CHECK(left == NULL || logged(TFS_LOG_INFO, "did not finish", left));
	CHECK(exists(live));
	unlink(live);
	if (left)
		unlink(left);
	CHECK_EQ(dir_count(dir, NULL), 1);
	src_free(h.in.src);
	free(t.p);
}

/* ---- an unprivileged user --------------------------------------------------------------- */

/* Runs fn as an unprivileged user: in a child of uid and gid NOBODY when the test runs as
 * root, else here.  Its failures count as the test's. */
static void as_user(void (*fn)(void))
{
	if (geteuid() != 0) {
		fn();
		return;
	}
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0) {
		tu_watchdog(20);
		tu_failures = 0;
		if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0) {
			fprintf(stderr, "as_user: cannot become uid %d (%s): skipped\n", NOBODY,
				strerror(errno));
			_exit(77);
		}
		fn();
		_exit(tu_failures ? 1 : 0);
	}
	int status = 0;
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 77));
}

static const char *user_dir(void)
{
	return pth("%s/user", top);
}

static void user_checks(void)
{
	const char *ro = pth("%s/ro", user_dir()), *xdg = pth("%s/xdg", user_dir());
	const char *ar = pth("%s/a.tar", ro), *prebuilt = pth("%s/b.tar", ro);
	const char *stale = pth("%s/c.tar", ro), *secret = pth("%s/secret.tar", user_dir());
	struct idx_opts o = dflt();
	struct arch *a = (struct arch *)&o;
	char *p;
	bool built;

	setenv("XDG_CACHE_HOME", xdg, 1);
	/* 3. beside the archive only if its folder is writable: else the cache */
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	if (p)
		check_hashed_name(p, pth("%s/tarseek", xdg), "a.tar");
	free(p);
	CHECK(!exists(pth("%s.index.sqlite", ar)));
	/* ... or if a valid index is there (a prebuilt one, shared with the archive) */
	CHECK_EQ(prep(prebuilt, &o, &p, &built, NULL), 0);
	CHECK_STR(p, pth("%s.index.sqlite", prebuilt));
	CHECK(!built);
	free(p);
	/* a stale one there is left alone */
	struct snap s = snap_of(pth("%s.index.sqlite", stale));
	CHECK_EQ(prep(stale, &o, &p, &built, NULL), 0);
	CHECK(built);
	if (p)
		check_hashed_name(p, pth("%s/tarseek", xdg), "c.tar");
	free(p);
	struct snap s2 = snap_of(pth("%s.index.sqlite", stale));
	CHECK(snap_same(&s, &s2));
	/* check_only finds nothing in either */
	o.check_only = true;
	CHECK_EQ(prep(pth("%s/d.tar", ro), &o, &p, &built, NULL), -ENOENT);
	o.check_only = false;
	/* an archive we may not read */
	log_clear();
	CHECK_EQ(prep(secret, &o, &p, &built, NULL), -EACCES);
	CHECK(logged(TFS_LOG_ERR, "secret.tar", NULL));
	struct arch_opts ao = aopts(&o);
	CHECK_EQ(arch_open(secret, &ao, &a), -EACCES);
	CHECK(a == NULL);
	o.index_file = pth("%s/secret.idx", xdg);
	CHECK_EQ(prep(secret, &o, &p, &built, NULL), -EACCES);
	CHECK(!exists(o.index_file));
	CHECK_EQ(idx_build(secret, o.index_file, &o.build, NULL), -EACCES);
	CHECK(!exists(o.index_file));
	CHECK_EQ(dir_count(xdg, ".tmp"), 0);
}

static void test_unprivileged(void)
{
	const char *u = user_dir(), *ro = pth("%s/ro", u);
	struct idx_build_opts b = dflt().build;
	uid_t who = geteuid() == 0 ? NOBODY : geteuid();
	gid_t grp = geteuid() == 0 ? NOBODY : getegid();

	mkdir_ok(u);
	mkdir_ok(ro);
	mkdir_ok(pth("%s/xdg", u));
	write_std_tar(pth("%s/a.tar", ro));
	write_std_tar(pth("%s/b.tar", ro));
	write_std_tar(pth("%s/c.tar", ro));
	write_std_tar(pth("%s/d.tar", ro));
	build_ok(pth("%s/b.tar", ro), pth("%s/b.tar.index.sqlite", ro), &b);
	build_ok(pth("%s/c.tar", ro), pth("%s/c.tar.index.sqlite", ro), &b);
	append_member(pth("%s/c.tar", ro));
	write_std_tar(pth("%s/secret.tar", u));
	CHECK_EQ(chmod(pth("%s/secret.tar", u), 0), 0);
	CHECK_EQ(chown(u, who, grp), 0);
	CHECK_EQ(chown(pth("%s/xdg", u), who, grp), 0);
	CHECK_EQ(chown(ro, who, grp), 0);
	CHECK_EQ(chmod(ro, 0555), 0);
	CHECK_EQ(chmod(top, 0755), 0);
	as_user(user_checks);
	CHECK_EQ(chmod(ro, 0755), 0);
	setenv("XDG_CACHE_HOME", pth("%s/loc/xdg", top), 1);
}

/* ---- the stamp -------------------------------------------------------------------------- */

/* What stamp.h promises: "size:crc-head:crc-tail", CRC32s of the first and the last MiB. */
static void fp_promised(const uint8_t *d, size_t n, char *out, size_t size)
{
	size_t span = n < MIB ? n : MIB;

	snprintf(out, size, "%zu:%08lx:%08lx", n, crc32(0, d, (uInt)span),
		 crc32(0, d + n - span, (uInt)span));
}

static void fp_mem(const uint8_t *d, size_t n, char *out)
{
	struct src *s = src_from_mem(d, n);

	strcpy(out, "unset");
	CHECK_EQ(idx_fingerprint(s, out, 64), 0);
	src_free(s);
}

/* The fingerprint of d changes when its byte at off does (changes true), or stays. */
static void fp_change_at(int line, uint8_t *d, size_t n, size_t off, bool changes)
{
	char a[64], b[64];

	fp_mem(d, n, a);
	d[off] ^= 0x5a;
	fp_mem(d, n, b);
	d[off] ^= 0x5a;
	if ((strcmp(a, b) != 0) != changes) {
		fprintf(stderr,
			"%s:%d: a byte changed at %zu of %zu: fingerprint %s -> %s, "
			"expected it %s\n",
			__FILE__, line, off, n, a, b, changes ? "to change" : "to stay");
		tu_failures++;
	}
}
#define fp_change(...) fp_change_at(__LINE__, __VA_ARGS__)

static void test_fingerprint(void)
{
	const size_t sizes[] = {0,	 1,	      100,     MIB - 1,	    MIB,
				MIB + 1, 3 * MIB / 2, 2 * MIB, 2 * MIB + 1, 3 * MIB};
	size_t n = 3 * MIB;
	uint8_t *d = malloc(n + 1);
	char got[64], want[64];

	if (!d)
		abort();
	tu_fill(d, n + 1, 77, 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		fp_mem(d, sizes[i], got);
		fp_promised(d, sizes[i], want, sizeof(want));
		CHECK_STR(got, want);
	}
	/* a small archive: every byte is in the head and the tail */
	fp_change(d, 100, 0, true);
	fp_change(d, 100, 50, true);
	fp_change(d, 100, 99, true);
	/* up to 2 MiB: every byte is in the first or the last MiB */
	fp_change(d, 3 * MIB / 2, 0, true);
	fp_change(d, 3 * MIB / 2, 3 * MIB / 4, true);
	fp_change(d, 3 * MIB / 2, 3 * MIB / 2 - 1, true);
	/* larger: the first and the last MiB, to their edges; what lies between is not
	 * sampled (validation also compares the size and the mtime) */
	fp_change(d, n, 0, true);
	fp_change(d, n, MIB - 1, true);
	fp_change(d, n, n - MIB, true);
	fp_change(d, n, n - 1, true);
	fp_change(d, n, MIB, false);
	fp_change(d, n, n / 2, false);
	fp_change(d, n, n - MIB - 1, false);
	/* the size: one more byte */
	fp_mem(d, 100, got);
	fp_mem(d, 101, want);
	CHECK(strcmp(got, want) != 0);
	/* a short buffer: truncated, terminated */
	struct src *s = src_from_mem(d, 100);
	char small[8];
	CHECK_EQ(idx_fingerprint(s, small, sizeof(small)), 0);
	CHECK_EQ(strlen(small), 7);
	CHECK(strncmp(small, "100:", 4) == 0);
	src_free(s);

	/* a file: its mtime alone changes nothing */
	const char *f = pth("%s/fp.bin", top);
	write_file(f, d, 200000);
	CHECK_EQ(src_open_file(f, &s), 0);
	CHECK_EQ(idx_fingerprint(s, got, sizeof(got)), 0);
	src_free(s);
	fp_promised(d, 200000, want, sizeof(want));
	CHECK_STR(got, want);
	struct timespec t = {.tv_sec = M0, .tv_nsec = 123};
	set_mtime(f, t);
	CHECK_EQ(src_open_file(f, &s), 0);
	CHECK_EQ(idx_fingerprint(s, want, sizeof(want)), 0);
	src_free(s);
	CHECK_STR(want, got);
	poke(f, 100000, 1, true);
	CHECK_EQ(src_open_file(f, &s), 0);
	CHECK_EQ(idx_fingerprint(s, want, sizeof(want)), 0);
	src_free(s);
	CHECK(strcmp(want, got) != 0);
	unlink(f);
	free(d);
}

/* idx_options_string: the options that shape the index of this kind of archive, and only
 * those, make the string differ. */
static void opts_differ_at(int line, const char *codec, const struct idx_build_opts *a,
			   const struct idx_build_opts *b, bool differ)
{
	char sa[256], sb[256];

	memset(sa, 'x', sizeof(sa));
	memset(sb, 'y', sizeof(sb));
	idx_options_string(codec, a, sa, sizeof(sa));
	idx_options_string(codec, b, sb, sizeof(sb));
	CHECK(strlen(sa) > 0 && strlen(sa) < sizeof(sa));
	CHECK(strlen(sb) > 0 && strlen(sb) < sizeof(sb));
	if ((strcmp(sa, sb) != 0) != differ) {
		fprintf(stderr,
			"%s:%d: options of a %s archive: \"%s\" and \"%s\", expected them "
			"%s\n",
			__FILE__, line, codec ? codec : "plain", sa, sb,
			differ ? "to differ" : "the same");
		tu_failures++;
	}
}
#define opts_differ(...) opts_differ_at(__LINE__, __VA_ARGS__)

static void test_options_string(void)
{
	const struct idx_build_opts o = {.gzip_spacing = 4 * MIB, .threads = 1};
	struct idx_build_opts x;
	const char *codecs[] = {NULL, "gzip", "xz", "bzip2"};

	for (size_t c = 0; c < sizeof(codecs) / sizeof(codecs[0]); c++) {
		const char *k = codecs[c];
		bool gzip = k && strcmp(k, "gzip") == 0;
		x = o;
		x.threads = 8;
		x.progress = true;
		opts_differ(k, &o, &x, false);
		x = o;
		x.gzip_spacing = MIB;
		opts_differ(k, &o, &x, gzip); /* checkpoints only gzip places by it */
		x = o;
		x.ignore_zeros = true;
		opts_differ(k, &o, &x, true);
		x = o;
		x.recursion = 1;
		opts_differ(k, &o, &x, true);
		struct idx_build_opts y = x;
		y.recursion = 2;
		opts_differ(k, &x, &y, true);
		y = x;
		y.strip_ext = true;
		opts_differ(k, &x, &y, true);
		x = o;
		x.strip_ext = true; /* nothing nested: nothing to strip */
		opts_differ(k, &o, &x, false);
		x = o;
		x.recursion = 1;
		x.ignore_zeros = true;
		y = o;
		y.recursion = 1; /* each option its own field: no two sets read the same */
		opts_differ(k, &x, &y, true);
	}
	/* a short buffer: truncated, terminated */
	char small[12];
	x = (struct idx_build_opts){
	    .gzip_spacing = 4 * MIB, .recursion = 3, .strip_ext = true, .ignore_zeros = true};
	memset(small, 'x', sizeof(small));
	idx_options_string("gzip", &x, small, sizeof(small));
	CHECK(memchr(small, '\0', sizeof(small)) != NULL);
}

/* ---- archives inside the archive -------------------------------------------------------- */

static uint8_t d_note[100];

static const struct want inner_tree[] = {
    {"x.txt", S_IFREG | 0644, sizeof(d_a), M0 + 10, 3, 4, d_a, NULL},
    {"y", S_IFDIR | 0555, 0, M0 + 11, 3, 4, NULL, NULL},
    {"y/z.txt", S_IFREG | 0600, sizeof(d_deep), M0 + 11, 3, 4, d_deep, NULL},
};

static struct buf inner_tar(void)
{
	const struct member m[] = {
	    {.name = "x.txt",
	     .type = '0',
	     .mode = 0644,
	     .uid = 3,
	     .gid = 4,
	     .mtime = M0 + 10,
	     .data = d_a,
	     .size = sizeof(d_a)},
	    {.name = "y/z.txt",
	     .type = '0',
	     .mode = 0600,
	     .uid = 3,
	     .gid = 4,
	     .mtime = M0 + 11,
	     .data = d_deep,
	     .size = sizeof(d_deep)},
	};
	return tar_of(m, 2);
}

/* The member at path of a is an archive shown as a folder, whose tree is w. */
static void check_nested_at(int line, struct arch *a, const char *path, const struct want *w,
			    size_t n)
{
	struct arch_attr at;
	struct arch *in = NULL;
	int before = tu_failures;

	CHECK_EQ(resolve(a, path, &at), 0);
	CHECK(at.flags & ARCH_A_NESTED);
	CHECK(S_ISDIR(at.mode));
	CHECK_EQ(arch_nested(a, at.ino, &in), 0);
	if (in)
		check_tree(in, w, n);
	arch_close(in);
	if (tu_failures != before)
		fprintf(stderr, "    (the archive %s, in the case at line %d)\n", path, line);
}
#define check_nested(...) check_nested_at(__LINE__, __VA_ARGS__)

/* The member at path of a is a plain file of these bytes. */
static void check_plain_at(int line, struct arch *a, const char *path, const uint8_t *d, size_t n)
{
	struct arch_attr at;
	int before = tu_failures;

	CHECK_EQ(resolve(a, path, &at), 0);
	CHECK(S_ISREG(at.mode));
	CHECK(!(at.flags & ARCH_A_NESTED));
	CHECK_EQ(at.size, n);
	check_bytes(a, at.ino, d, n);
	if (tu_failures != before)
		fprintf(stderr, "    (the file %s, in the case at line %d)\n", path, line);
}
#define check_plain(...) check_plain_at(__LINE__, __VA_ARGS__)

static void test_nested(void)
{
	const char *dir = pth("%s/nest", top);
	const char *ar = pth("%s/outer.tar", dir), *ix = pth("%s/i.sqlite", dir);
	struct buf in = inner_tar(), gz = gzip_of(in.p, in.len);
	uint8_t broken[120] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
	struct idx_opts o = dflt();
	struct arch *a = NULL, *mid = NULL;
	struct arch_attr at;
	char *p;
	bool built;

	mkdir_ok(dir);
	tu_fill(d_note, sizeof(d_note), 5, 1);
	tu_fill(broken + 10, sizeof(broken) - 10, 6, 0);
	const struct member mm[] = {
	    {.name = "inner.tar",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = in.p,
	     .size = in.len},
	    {.name = "m.txt",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = d_note,
	     .size = sizeof(d_note)},
	};
	struct buf mt = tar_of(mm, 2);
	const struct member om[] = {
	    {.name = "one.tar",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0 + 20,
	     .data = in.p,
	     .size = in.len},
	    {.name = "two.tar.gz",
	     .type = '0',
	     .mode = 0640,
	     .mtime = M0 + 21,
	     .data = gz.p,
	     .size = gz.len},
	    {.name = "three",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = d_note,
	     .size = sizeof(d_note)},
	    {.name = "three.tar",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = in.p,
	     .size = in.len},
	    {.name = "mid.tar",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = mt.p,
	     .size = mt.len},
	    {.name = "broken.tar.gz",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = broken,
	     .size = sizeof(broken)},
	    {.name = "notes.txt",
	     .type = '0',
	     .mode = 0644,
	     .mtime = M0,
	     .data = d_note,
	     .size = sizeof(d_note)},
	};
	struct buf ot = tar_of(om, 7);
	write_file(ar, ot.p, ot.len);
	o.index_file = ix;

	/* without recursion: files */
	struct arch_opts ao = aopts(&o);
	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	if (a) {
		check_plain(a, "one.tar", in.p, in.len);
		check_plain(a, "two.tar.gz", gz.p, gz.len);
		check_plain(a, "mid.tar", mt.p, mt.len);
		arch_close(a);
	}

	/* one level: the archives inside are folders, their members visible; an archive inside
	 * those is a file; a damaged one is a file, with a notice */
	o.build.recursion = 1;
	ao = aopts(&o);
	a = NULL;
	log_clear();
	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	CHECK(logged(TFS_LOG_NOTICE, "rebuilding", "options"));
	CHECK(logged(TFS_LOG_INFO, "outer.tar", "4 archives inside"));
	CHECK(logged(TFS_LOG_NOTICE, "broken.tar.gz", "shown as a file"));
	if (a) {
		check_nested(a, "one.tar", inner_tree, NWANT(inner_tree));
		check_nested(a, "two.tar.gz", inner_tree, NWANT(inner_tree));
		check_nested(a, "three.tar", inner_tree, NWANT(inner_tree));
		CHECK_EQ(resolve(a, "one.tar", &at), 0);
		CHECK_EQ(at.mtime, M0 + 20);
		CHECK_EQ(at.mode, S_IFDIR | 0755);
		check_plain(a, "three", d_note, sizeof(d_note));
		check_plain(a, "broken.tar.gz", broken, sizeof(broken));
		check_plain(a, "notes.txt", d_note, sizeof(d_note));
		CHECK_EQ(resolve(a, "mid.tar", &at), 0);
		CHECK(at.flags & ARCH_A_NESTED);
		CHECK_EQ(arch_nested(a, at.ino, &mid), 0);
		if (mid) {
			check_plain(mid, "inner.tar", in.p, in.len);
			check_plain(mid, "m.txt", d_note, sizeof(d_note));
			arch_close(mid);
		}
		arch_close(a);
	}
	/* valid for these options: used as it is */
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(!built);
	free(p);

	/* two levels: the archive inside the archive inside */
	o.build.recursion = 2;
	ao = aopts(&o);
	a = NULL;
	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	if (a) {
		CHECK_EQ(resolve(a, "mid.tar", &at), 0);
		mid = NULL;
		CHECK_EQ(arch_nested(a, at.ino, &mid), 0);
		if (mid) {
			check_nested(mid, "inner.tar", inner_tree, NWANT(inner_tree));
			check_plain(mid, "m.txt", d_note, sizeof(d_note));
			arch_close(mid);
		}
		check_nested(a, "one.tar", inner_tree, NWANT(inner_tree));
		arch_close(a);
	}

	/* strip_ext: one.tar -> one, two.tar.gz -> two; three.tar keeps its name (three is
	 * taken) */
	o.build.recursion = 1;
	o.build.strip_ext = true;
	ao = aopts(&o);
	a = NULL;
	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	if (a) {
		check_nested(a, "one", inner_tree, NWANT(inner_tree));
		check_nested(a, "two", inner_tree, NWANT(inner_tree));
		check_nested(a, "three.tar", inner_tree, NWANT(inner_tree));
		check_plain(a, "three", d_note, sizeof(d_note));
		CHECK_EQ(ops->lookup(a, ops->root, "one.tar", 7, &at), -ENOENT);
		CHECK_EQ(ops->lookup(a, ops->root, "two.tar.gz", 10, &at), -ENOENT);
		arch_close(a);
	}
	free(in.p);
	free(gz.p);
	free(mt.p);
	free(ot.p);
}

/* ---- bugs this test found (fixed) --------------------------------------------------------- */

static void fixed_options_length(void)
{
	/* validate.c compared the stored options string with one formatted into 64 bytes,
	 * build.c stored one of up to 96: a string of 64 bytes or more (tarseek-index takes any
	 * --gzip-spacing; -r 32, --strip-extension, -i) never matched, and the index was
	 * rebuilt at every open.  Both use IDX_OPTIONS_MAX now. */
	const char *dir = pth("%s/known", top);
	const char *gz = pth("%s/a.tar.gz", dir), *ix = pth("%s/i.sqlite", dir);
	struct idx_opts o = {.index_file = ix,
			     .build = {.gzip_spacing = 16ull << 40,
				       .threads = 1,
				       .recursion = 32,
				       .strip_ext = true,
				       .ignore_zeros = true}};
	struct buf t = std_tar();
	char s[256], why[256], *p;
	bool built;

	mkdir_ok(dir);
	write_gz(gz, t.p, t.len);
	idx_options_string("gzip", &o.build, s, sizeof(s));
	CHECK(strlen(s) >= 64); /* the case: a string that does not fit 64 bytes */
	CHECK_EQ(prep(gz, &o, &p, &built, NULL), 0);
	CHECK(built);
	free(p);
	CHECK_EQ(idx_validate(ix, gz, &o.build, why, sizeof(why)), 0);
	CHECK_EQ(prep(gz, &o, &p, &built, NULL), 0);
	CHECK(!built);
	free(p);
	free(t.p);
}

/* archive.h lists -ENOTDIR among arch_lookup's errors: a name looked up in a regular file
 * (it was -ENOENT). */
static void fixed_lookup_in_file(void)
{
	const char *dir = pth("%s/known", top), *ix = pth("%s/lookup.idx", dir);
	struct buf t = std_tar();
	struct idx_build_opts b = dflt().build;
	struct idx_input in = {.src = src_from_mem(t.p, t.len), .name = "a.tar", .mode = 0100644};
	struct arch *a = NULL;
	struct arch_attr at, at2;

	mkdir_ok(dir);
	CHECK_EQ(idx_build_from(&in, ix, &b, NULL), 0);
	src_free(in.src);
	CHECK_EQ(arch_open_index(ix, NULL, src_from_mem(t.p, t.len), "a.tar",
				 &(struct arch_env){.cache = cache}, &a),
		 0);
	if (a) {
		CHECK_EQ(resolve(a, "dir/a.txt", &at), 0);
		CHECK_EQ(ops->lookup(a, at.ino, "x", 1, &at2), -ENOTDIR);
		arch_close(a);
	}
	free(t.p);
}

/* nested.h: a member named like an archive that turns out to be damaged "stays a file, with
 * a notice" -- and no error of build.c's about it (build_stream_end logged "damaged before
 * anything could be indexed" at error level). */
static void fixed_nested_damage_level(void)
{
	const char *dir = pth("%s/known", top);
	const char *ar = pth("%s/outer.tar", dir), *ix = pth("%s/nested.idx", dir);
	uint8_t broken[120] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3};
	struct idx_build_opts b = dflt().build;

	mkdir_ok(dir);
	tu_fill(broken + 10, sizeof(broken) - 10, 6, 0);
	const struct member m = {.name = "broken.tar.gz",
				 .type = '0',
				 .mode = 0644,
				 .mtime = M0,
				 .data = broken,
				 .size = sizeof(broken)};
	struct buf t = tar_of(&m, 1);
	write_file(ar, t.p, t.len);
	b.recursion = 1;
	log_clear();
	CHECK_EQ(idx_build(ar, ix, &b, NULL), 0);
	CHECK(logged(TFS_LOG_NOTICE, "broken.tar.gz", "shown as a file"));
	CHECK(!logged(TFS_LOG_ERR, "broken.tar.gz", NULL));
	free(t.p);
}

static void test_fixed_issues(void)
{
	fixed_options_length();
	fixed_lookup_in_file();
	fixed_nested_damage_level();
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	double t0 = mono_now();

	tu_watchdog(120); /* for a call that blocks when it should not: the waits are bounded */
	snprintf(top, sizeof(top), "%s/tarseek-index-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(top)) {
		perror("mkdtemp");
		return 1;
	}
	tfs_log_set_sink(log_sink, NULL);
	tfs_log_level = TFS_LOG_INFO;
	tu_fill(d_a, sizeof(d_a), 1, 1);
	tu_fill(d_deep, sizeof(d_deep), 2, 0);
	tu_fill(d_big, sizeof(d_big), 3, 0);
	cache = cache_new(16u << 20);
	setenv("XDG_CACHE_HOME", pth("%s/xdg", top), 1);
	setenv("HOME", pth("%s/home", top), 1);

	test_build_plain();
	test_build_from();
	test_locations();
	test_prepare_flags();
	test_validate();
	test_trust();
	test_failures();
	test_temp_name();
	test_fingerprint();
	test_options_string();
	test_nested();
	test_unprivileged();
	test_fixed_issues();

	cache_free(cache);
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	paths_free();
	fprintf(stderr, "test_index: %.2f s\n", mono_now() - t0);
	return tu_exit();
}
