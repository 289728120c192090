/* A plain directory as a tree (see dirtree.h).
 *
 * The inode table maps (st_dev, st_ino) to a local number (the one hash table,
 * common/htable.h, by hash_pair(dev, ino)) and each number to the path it was found at,
 * relative to the root (an array of the nodes, each allocated with its path).  It only grows (entries are never forgotten while
 * mounted; a union mount of a folder is browsed, not churned).  readdir sorts a folder's
 * names once per call so that resuming after a cookie (the position) is stable.
 *
 * Locks: lock guards the table.  Syscalls run without it.
 */
#include "mount/dirtree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "codecs/codec.h"
#include "common/hash.h"
#include "common/parts.h"
#include "common/htable.h"
#include "common/may_block.h"
#include "containers/container.h"
#include "containers/tar/tar.h"

struct dnode {
	struct htable_node h; /* in the table, by hash_pair(dev, ino) */
	dev_t dev;
	ino_t ino;
	uint64_t id;	/* its local inode */
	int8_t archive; /* recursive: 1 an archive (shown as a folder), 0 not, -1 not probed */
	char rel[];	/* "." for the root */
};

struct dirtree {
	char *path; /* absolute */
	char *hide; /* relative path not shown (the mount point), or NULL */
	int rootfd;
	bool recursive; /* archives found are shown as folders (-r) */
	pthread_mutex_t lock;
	/* protected by lock: */
	struct dnode **nodes; /* index = local inode - 1 */
	size_t n, cap;
	struct htable table; /* the nodes by (dev, ino) */
};

struct dfile {
	int fd;
};

/* The local inode for (dev, ino) found at rel, added if new.  0 if out of memory. */
static uint64_t intern(struct dirtree *d, dev_t dev, ino_t ino, const char *rel)
{
	uint64_t h = hash_pair((uint64_t)dev, (uint64_t)ino), id = 0;
	struct htable_node *hn;
	struct dnode *n;
	size_t len;

	pthread_mutex_lock(&d->lock);
	for (hn = htable_first(&d->table, h); hn; hn = htable_next(hn)) {
		n = htable_entry(hn, struct dnode, h);
		if (n->dev == dev && n->ino == ino) {
			id = n->id;
			goto out;
		}
	}
	if (d->n == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 256;
		struct dnode **nn = realloc(d->nodes, cap * sizeof(*nn));
		if (!nn)
			goto out;
		d->nodes = nn;
		d->cap = cap;
	}
	len = strlen(rel);
	n = malloc(sizeof(*n) + len + 1);
	if (!n)
		goto out;
	*n = (struct dnode){.dev = dev, .ino = ino, .id = d->n + 1, .archive = -1};
	memcpy(n->rel, rel, len + 1);
	if (htable_add(&d->table, &n->h, h) < 0) {
		free(n);
		goto out;
	}
	d->nodes[d->n++] = n;
	id = n->id;
out:
	pthread_mutex_unlock(&d->lock);
	return id;
}

/* A copy of the relative path of a local inode, or NULL (-ENOENT / -ENOMEM in *err). */
static char *rel_of(struct dirtree *d, uint64_t id, int *err)
{
	char *rel = NULL;

	pthread_mutex_lock(&d->lock);
	if (id >= 1 && id <= d->n) {
		rel = strdup(d->nodes[id - 1]->rel);
		*err = rel ? 0 : -ENOMEM;
	} else {
		*err = -ENOENT;
	}
	pthread_mutex_unlock(&d->lock);
	return rel;
}

static char *join(const char *dir, const char *name, size_t len)
{
	char *p;

	if (strcmp(dir, ".") == 0) {
		p = malloc(len + 1);
		if (p) {
			memcpy(p, name, len);
			p[len] = '\0';
		}
		return p;
	}
	if (asprintf(&p, "%s/%.*s", dir, (int)len, name) < 0)
		return NULL;
	return p;
}

static void to_attr(const struct stat *st, uint64_t id, struct arch_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ino = id;
	a->mode = st->st_mode;
	a->nlink = (uint32_t)st->st_nlink;
	a->uid = st->st_uid;
	a->gid = st->st_gid;
	a->size = (uint64_t)st->st_size;
	a->rdev = st->st_rdev;
	a->mtime = st->st_mtim.tv_sec;
	a->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	a->blocks = (uint64_t)st->st_blocks;
}

/* True if the file rel is an archive: named like one, and its content says so (a codec's
 * magic, a tar header, a container's).  The first part of a split archive is named like one
 * when its whole archive is (NAME.tar.gz.001: the whole name is shorter), and probed as its
 * parts joined; a split zip is shown as its NAME.zip only (NAME.z01's whole name is as long). */
static bool probe_archive(struct dirtree *d, const char *rel)
{
	const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
	char *whole = parts_whole_name(base);
	uint8_t head[512];
	struct src *s = NULL;
	bool yes = false;
	char *full = NULL;
	int err = 0;

	if (!codec_archive_name(base, strlen(base)) &&
	    (!whole || strlen(whole) >= strlen(base) || !codec_archive_name(whole, strlen(whole))))
		err = -EINVAL;
	free(whole);
	if (err || asprintf(&full, "%s/%s", d->path, rel) < 0)
		return false;
	err = parts_open(full, &s);
	free(full);
	if (err)
		return false;
	ssize_t n = src_pread(s, head, sizeof(head), 0);
	yes = n > 0 && (codec_probe(head, (size_t)n) || (n == 512 && tar_header_valid(head)) ||
			cont_probe(s, head, (size_t)n) || cont_probe_image(s, head, (size_t)n));
	src_free(s);
	return yes;
}

/* With recursive, marks a regular file that is an archive as a folder to mount (the mode
 * union.c and query.c give such members: a folder with the file's permissions). */
static void mark_archive(struct dirtree *d, uint64_t id, const char *rel, struct arch_attr *a)
{
	int8_t known;

	if (!d->recursive || !S_ISREG(a->mode))
		return;
	pthread_mutex_lock(&d->lock);
	known = d->nodes[id - 1]->archive;
	pthread_mutex_unlock(&d->lock);
	if (known < 0) {
		known = probe_archive(d, rel);
		pthread_mutex_lock(&d->lock);
		d->nodes[id - 1]->archive = known;
		pthread_mutex_unlock(&d->lock);
	}
	if (known) {
		a->flags = ARCH_A_NESTED;
		a->mode = S_IFDIR | (a->mode & 07777) | ((a->mode & 0444) >> 2);
		a->nlink = 2;
	}
}

/* stat of rel below the root, symlinks not followed; interns it. */
static int stat_rel(struct dirtree *d, const char *rel, struct arch_attr *out)
{
	struct stat st;
	uint64_t id;

	if (fstatat(d->rootfd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	id = intern(d, st.st_dev, st.st_ino, rel);
	if (!id)
		return -ENOMEM;
	to_attr(&st, id, out);
	mark_archive(d, id, rel, out);
	return 0;
}

char *dirtree_path(struct dirtree *d, uint64_t ino)
{
	int err;
	char *rel = rel_of(d, ino, &err), *out = NULL;

	if (rel && asprintf(&out, "%s/%s", d->path, rel) < 0)
		out = NULL;
	free(rel);
	return out;
}

/* True if name (in folder rel) is a file tarseek keeps beside an archive that is there too:
 * ARCHIVE.index.sqlite, ARCHIVE.index.shadow.zst, or one of their temporary files
 * (NAME.tmp.PID).  They are never shown: a mount shows what the user keeps (ratarmount's
 * index, of the same name, is hidden alike). */
static bool is_ours(struct dirtree *d, const char *rel, const char *name, size_t len)
{
	static const char *const sfx[] = {".index.sqlite", ".index.shadow.zst"};
	struct stat st;

	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		size_t k = strlen(sfx[i]);
		const char *at = memmem(name, len, sfx[i], k);
		if (!at || at == name)
			continue;
		size_t rest = len - (size_t)(at - name) - k;
		if (rest && (rest < 6 || memcmp(at + k, ".tmp.", 5) != 0))
			continue;
		char *arch = join(rel, name, (size_t)(at - name));
		bool there = arch && fstatat(d->rootfd, arch, &st, AT_SYMLINK_NOFOLLOW) == 0;
		free(arch);
		if (there)
			return true;
	}
	return false;
}

/* Not shown: the mount point inside the folder, and tarseek's own files (is_ours). */
static bool hidden(struct dirtree *d, const char *rel, const char *p, const char *name,
		   size_t len)
{
	return (d->hide && strcmp(p, d->hide) == 0) || is_ours(d, rel, name, len);
}

static int dt_lookup(void *t, uint64_t dir, const char *name, size_t len, struct arch_attr *out)
{
	struct dirtree *d = t;
	int err;
	char *rel = rel_of(d, dir, &err), *p;

	may_block(); /* the disk */
	if (!rel)
		return err;
	if (memchr(name, '/', len) || (len == 1 && name[0] == '.') ||
	    (len == 2 && name[0] == '.' && name[1] == '.')) {
		free(rel);
		return -ENOENT;
	}
	p = join(rel, name, len);
	if (!p) {
		free(rel);
		return -ENOMEM;
	}
	err = hidden(d, rel, p, name, len) ? -ENOENT : stat_rel(d, p, out);
	free(rel);
	free(p);
	return err;
}

static int dt_getattr(void *t, uint64_t ino, struct arch_attr *out)
{
	struct dirtree *d = t;
	int err;
	char *rel = rel_of(d, ino, &err);

	may_block(); /* the disk */
	if (!rel)
		return err;
	err = stat_rel(d, rel, out);
	free(rel);
	return err;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int dt_readdir(void *t, uint64_t dir, uint64_t after, arch_dirent_fn fn, void *opaque)
{
	struct dirtree *d = t;
	char **names = NULL, *rel;
	size_t n = 0, cap = 0;
	int err, fd;
	DIR *dp;
	struct dirent *de;

	may_block(); /* the disk */
	rel = rel_of(d, dir, &err);
	if (!rel)
		return err;
	fd = openat(d->rootfd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		free(rel);
		return err;
	}
	dp = fdopendir(fd);
	if (!dp) {
		err = -errno;
		close(fd);
		free(rel);
		return err;
	}
	err = 0;
	while ((de = readdir(dp))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			char **nn = realloc(names, cap * sizeof(*nn));
			if (!nn) {
				err = -ENOMEM;
				break;
			}
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name))) {
			err = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(dp);
	if (!err && n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = after; !err && i < n; i++) {
		struct arch_attr a;
		char *p = join(rel, names[i], strlen(names[i]));
		if (!p) {
			err = -ENOMEM;
			break;
		}
		int e = hidden(d, rel, p, names[i], strlen(names[i])) ? -ENOENT
								       : stat_rel(d, p, &a);
		free(p);
		if (e == -ENOENT)
			continue; /* removed meanwhile */
		if (e) {
			err = e;
			break;
		}
		int stop = fn(opaque, names[i], strlen(names[i]), &a, i + 1);
		if (stop) {
			err = stop < 0 ? stop : 0;
			break;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(rel);
	return err;
}

static int dt_readlink(void *t, uint64_t ino, char *buf, size_t size, size_t *len)
{
	struct dirtree *d = t;
	int err;
	char *rel = rel_of(d, ino, &err);
	char tmp[65536];
	ssize_t n;

	may_block(); /* the disk */
	if (!rel)
		return err;
	n = readlinkat(d->rootfd, rel, tmp, sizeof(tmp));
	free(rel);
	if (n < 0)
		return -errno;
	*len = (size_t)n;
	if ((size_t)n > size)
		return -ERANGE;
	memcpy(buf, tmp, (size_t)n);
	return 0;
}

/* Absolute path of a local inode for the l*xattr calls (they have no *at form). */
static char *abs_of(struct dirtree *d, uint64_t ino, int *err)
{
	char *rel = rel_of(d, ino, err), *p;

	if (!rel)
		return NULL;
	if (asprintf(&p, "%s/%s", d->path, rel) < 0) {
		p = NULL;
		*err = -ENOMEM;
	}
	free(rel);
	return p;
}

static ssize_t dt_listxattr(void *t, uint64_t ino, char *buf, size_t size)
{
	int err;
	char *p = abs_of(t, ino, &err);
	ssize_t n;

	may_block(); /* the disk */
	if (!p)
		return err;
	n = llistxattr(p, buf, size);
	err = errno;
	free(p);
	return n < 0 ? -err : n;
}

static ssize_t dt_getxattr(void *t, uint64_t ino, const char *name, void *buf, size_t size)
{
	int err;
	char *p = abs_of(t, ino, &err);
	ssize_t n;

	may_block(); /* the disk */
	if (!p)
		return err;
	n = lgetxattr(p, name, buf, size);
	err = errno;
	free(p);
	return n < 0 ? -err : n;
}

static int dt_versions(void *t, uint64_t dir, const char *name, size_t len, tree_version_fn fn,
		       void *opaque)
{
	struct arch_attr a;
	int err = dt_lookup(t, dir, name, len, &a);

	return err ? err : fn(opaque, &a);
}

static int dt_describe(void *t, uint64_t ino, char *buf, size_t size)
{
	struct dirtree *d = t;
	int err;
	char *rel = rel_of(d, ino, &err);

	if (!rel)
		return err;
	snprintf(buf, size, "kind=directory\nsource=%s\npath=%s\n", d->path, rel);
	free(rel);
	return 0;
}

/* Opens rel below the root without following any symlink (openat2 RESOLVE_NO_SYMLINKS
 * where the kernel has it). */
static int open_beneath(struct dirtree *d, const char *rel)
{
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS};
	long fd = syscall(SYS_openat2, d->rootfd, rel, &how, sizeof(how));

	if (fd < 0 && errno == ENOSYS)
		fd = openat(d->rootfd, rel, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : (int)fd;
}

static int dt_open(void *t, uint64_t ino, void **fh)
{
	struct dirtree *d = t;
	struct dfile *f;
	int err, fd;
	char *rel = rel_of(d, ino, &err);

	may_block(); /* the disk */
	*fh = NULL;
	if (!rel)
		return err;
	fd = open_beneath(d, rel);
	free(rel);
	if (fd < 0)
		return fd;
	f = malloc(sizeof(*f));
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	f->fd = fd;
	*fh = f;
	return 0;
}

static ssize_t dt_read(void *fh, void *buf, size_t len, uint64_t off)
{
	struct dfile *f = fh;
	size_t done = 0;

	may_block(); /* the disk */
	while (done < len) {
		ssize_t n = pread(f->fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static size_t dt_direct(void *fh, uint64_t off, size_t len, int *fd, uint64_t *fd_off)
{
	struct dfile *f = fh;

	*fd = f->fd;
	*fd_off = off;
	return len;
}

static void dt_close(void *fh)
{
	struct dfile *f = fh;

	if (f) {
		close(f->fd);
		free(f);
	}
}

static void dt_free(void *t)
{
	struct dirtree *d = t;

	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->nodes[i]);
	free(d->nodes);
	htable_fini(&d->table);
	if (d->rootfd >= 0)
		close(d->rootfd);
	pthread_mutex_destroy(&d->lock);
	free(d->path);
	free(d->hide);
	free(d);
}

int dirtree_open(const char *path, const char *hide, bool recursive, struct dirtree **out)
{
	struct dirtree *d;
	struct stat st;
	int err;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	pthread_mutex_init(&d->lock, NULL);
	d->rootfd = -1;
	d->recursive = recursive;
	err = htable_init(&d->table, 1024);
	d->path = err ? NULL : realpath(path, NULL);
	d->hide = hide ? strdup(hide) : NULL;
	if (err || !d->path || (hide && !d->hide)) {
		err = err ? err : -errno;
		goto fail;
	}
	d->rootfd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->rootfd < 0 || fstat(d->rootfd, &st) < 0) {
		err = -errno;
		goto fail;
	}
	if (intern(d, st.st_dev, st.st_ino, ".") != 1) {
		err = -ENOMEM;
		goto fail;
	}
	*out = d;
	return 0;
fail:
	dt_free(d);
	return err;
}

const struct tree_ops tree_dir_ops = {
	.kind = "directory",
	.root = 1,
	.lookup = dt_lookup,
	.getattr = dt_getattr,
	.readdir = dt_readdir,
	.readlink = dt_readlink,
	.listxattr = dt_listxattr,
	.getxattr = dt_getxattr,
	.versions = dt_versions,
	.describe = dt_describe,
	.open = dt_open,
	.read = dt_read,
	.direct = dt_direct,
	.close = dt_close,
	.free = dt_free,
};
