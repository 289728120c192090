/* The fixtures of test_index.c and test_validate.c (see index_fixtures.h). */
#include "index_fixtures.h"

char top[PATH_MAX]; /* every file of the test lives under it */
struct cache *cache;

/* ---- paths and files -------------------------------------------------------------------- */

/* A path built printf-like, allocated and kept until the end of the test (paths_free). */
char **paths;
static size_t npaths, paths_cap;

const char *pth(const char *fmt, ...)
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

void paths_free(void)
{
	for (size_t i = 0; i < npaths; i++)
		free(paths[i]);
	free(paths);
}

void mkdir_ok(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "mkdir %s: %s\n", path, strerror(errno));
		tu_failures++;
	}
}

void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	CHECK(f != NULL);
	if (!f)
		return;
	CHECK_EQ(fwrite(data, 1, len, f), len);
	CHECK_EQ(fclose(f), 0);
}

bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* Entries of dir whose names contain part (NULL: all), or -1 if dir cannot be read. */
int dir_count(const char *dir, const char *part)
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
const char *dir_find(const char *dir, const char *prefix)
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

struct snap snap_of(const char *path)
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

bool snap_same(const struct snap *a, const struct snap *b)
{
	return a->ok && b->ok && a->dev == b->dev && a->ino == b->ino &&
	       a->mtim.tv_sec == b->mtim.tv_sec && a->mtim.tv_nsec == b->mtim.tv_nsec &&
	       a->ctim.tv_sec == b->ctim.tv_sec && a->ctim.tv_nsec == b->ctim.tv_nsec &&
	       a->size == b->size && a->crc == b->crc;
}

struct timespec mtime_of(const char *path)
{
	struct stat st;

	CHECK_EQ(stat(path, &st), 0);
	return st.st_mtim;
}

void set_mtime(const char *path, struct timespec t)
{
	struct timespec ts[2] = {t, t};

	CHECK_EQ(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* XORs the byte at off of path with x; keeps the file's mtime if keep_mtime. */
void poke(const char *path, off_t off, uint8_t x, bool keep_mtime)
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

void copy_file(const char *from, const char *to)
{
	size_t len = 0;
	uint8_t *d = tu_read_file(from, &len);

	CHECK(d != NULL);
	if (d)
		write_file(to, d, len);
	free(d);
}

int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
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

void log_sink(int level, const char *msg, void *opaque)
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

void log_clear(void)
{
	pthread_mutex_lock(&log_lock);
	log_len = 0;
	log_text[0] = '\0';
	pthread_mutex_unlock(&log_lock);
}

/* True if a message of this level since log_clear contains a and b (b may be NULL). */
bool logged(int level, const char *a, const char *b)
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

struct buf tar_of(const struct member *m, size_t n)
{
	struct buf b = {0};

	for (size_t i = 0; i < n; i++)
		tar_add(&b, &m[i]);
	b_put(&b, NULL, 1024); /* the end-of-archive marker */
	return b;
}

/* One gzip member of d (in memory). */
struct buf gzip_of(const uint8_t *d, size_t n)
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
void write_gz(const char *path, const uint8_t *d, size_t n)
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
uint8_t d_a[1000], d_deep[513], d_big[70000];

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

const struct want std_tree[] = {
    {"big.bin", S_IFREG | 0644, sizeof(d_big), M0 + 5, 1, 1, d_big, NULL},
    {"dir", S_IFDIR | 0750, 0, M0, 1001, 1002, NULL, NULL},
    {"dir/a.txt", S_IFREG | 0640, sizeof(d_a), M0 + 1, 1001, 1002, d_a, NULL},
    /* made for deep.bin's missing parent, with its owner and mtime */
    {"dir/sub", S_IFDIR | 0555, 0, M0 + 2, 7, 8, NULL, NULL},
    {"dir/sub/deep.bin", S_IFREG | 0600, sizeof(d_deep), M0 + 2, 7, 8, d_deep, NULL},
    {"empty", S_IFREG | 0444, 0, M0 + 3, 0, 0, d_a, NULL},
    {"link", S_IFLNK | 0777, 9, M0 + 4, 0, 0, NULL, "dir/a.txt"},
};
const size_t std_tree_n = NWANT(std_tree);

struct buf std_tar(void)
{
	return tar_of(std_members, STD_MEMBERS);
}

void write_std_tar(const char *path)
{
	struct buf t = std_tar();

	write_file(path, t.p, t.len);
	free(t.p);
}

/* A different small archive: one file. */
void write_other_tar(const char *path, const char *name)
{
	struct member m = {
	    .name = name, .type = '0', .mode = 0644, .mtime = M0, .data = d_deep, .size = 100};
	struct buf t = tar_of(&m, 1);

	write_file(path, t.p, t.len);
	free(t.p);
}

/* Appends a member to a tar file: its last 1024 bytes (the end marker) are replaced. */
void append_member(const char *path)
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

const struct tree_ops *ops = &tree_archive_ops;

/* The attributes of path ("" the root), looked up component by component. */
int resolve(void *t, const char *path, struct arch_attr *out)
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
void check_bytes(void *t, uint64_t ino, const uint8_t *want, size_t size)
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
void check_tree(void *t, const struct want *w, size_t n)
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

struct idx_opts dflt(void)
{
	return (struct idx_opts){.build = {.gzip_spacing = MIB, .threads = 1}};
}

struct arch_opts aopts(const struct idx_opts *o)
{
	return (struct arch_opts){.idx = *o, .env = {.cache = cache}};
}

/* idx_prepare, checking what holds after every call: on success a path and *built set; on an
 * error *path NULL and *built false. */
int prep(const char *archive, const struct idx_opts *o, char **path, bool *built,
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
struct idx_input input_of(const char *path)
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
void check_hashed_name(const char *path, const char *dir, const char *name)
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

const char *base_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* ---- the test's setup ------------------------------------------------------------------- */

void build_ok(const char *ar, const char *ix, const struct idx_build_opts *b)
{
	char why[256];

	CHECK_EQ(idx_build(ar, ix, b, NULL), 0);
	CHECK_EQ(idx_validate(ix, ar, b, why, sizeof(why)), 0);
}

int fixtures_init(const char *name)
{
	const char *tmp = getenv("TMPDIR");

	tu_watchdog(120); /* for a call that blocks when it should not: the waits are bounded */
	snprintf(top, sizeof(top), "%s/tarseek-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
	if (!mkdtemp(top)) {
		perror("mkdtemp");
		return -1;
	}
	tfs_log_set_sink(log_sink, NULL);
	tfs_log_level = TFS_LOG_INFO;
	tu_fill(d_a, sizeof(d_a), 1, 1);
	tu_fill(d_deep, sizeof(d_deep), 2, 0);
	tu_fill(d_big, sizeof(d_big), 3, 0);
	cache = cache_new(16u << 20);
	setenv("XDG_CACHE_HOME", pth("%s/xdg", top), 1);
	setenv("HOME", pth("%s/home", top), 1);
	return 0;
}

void fixtures_fini(void)
{
	cache_free(cache);
	nftw(top, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	paths_free();
}
