/* The mounted tree over one or more sources (see union.h): the calls of union.h, the open
 * folders and files, the user.tarseek.* attributes.  The tree is built by the files of
 * union_int.h: union_merge.c (the overlay rule: lookups and listings), union_versions.c
 * (PATH.versions), union_nested.c (archives inside sources) over union_nodes.c (the sources,
 * the virtual nodes, what an inode number is).  An open file or folder is on a list of open
 * handles (common/list.h), so un_free closes what the kernel never released.
 *
 * Lock order of the whole daemon: every lock there is, and the order in which one may be
 * taken while another is held ("A -> B": B may be taken while A is held, never A while B
 * is); a lock not listed under another is never held with it.
 *
 * index/ and mount/:
 *   union.c nested_lock -> union.c lock: adding an archive opened inside a source as a
 *       source of its own (union_nested.c).  Nothing else is taken under nested_lock: the
 *       archive is opened, and a second copy closed, outside it.
 *   union.c lock: a leaf (the node table, the table of nodes by name, the sources' growth,
 *       the open handles).  No source's tree operation runs under a union lock.
 *   dirtree.c lock: a leaf (the inode table; the syscalls run outside it).
 *   archive streams_lock (index/archive_int.h) -> archive conns_lock, cache.c lock,
 *       reader.c pool_lock, and the locks of a read of the archive file: making a stream's
 *       reader reads its row and checkpoints (conns_lock, then SQLite's own), takes a cache
 *       stream id (cache lock) and, for a zip entry, reads its local header from the archive
 *       file -- a remote archive's net/remote.c and net/http.c locks, an archive inside another
 *       the outer one's read path (its stream's reader.c pool_lock, the cache lock and
 *       reservation, workers.c lock), the one case where an index/ lock is held while a
 *       decode is waited for; arch_get_reader_stats takes each reader's pool_lock.  No stream
 *       is freed under it (freeing a reader waits for its decoding ahead).
 *   archive conns_lock: a leaf (the free list of connections only; never held during a query).
 *   builder db_lock (index/build_int.h; indexing a container's streams on several threads):
 *       nothing but SQLite's own locks and the logger under it.
 *   common/pool.c lock: a leaf (pool.h); no job runs under it.
 *
 * cache/, seek/, net/, fs/ and the codecs' scans:
 *   cache.c lock -> cache_mem.c lock: a buffer's last reference dropped (eviction, abandon,
 *       drop_stream, the disk writer's queue); -> pool.c lock: starting the disk tier's
 *       writer.  Callers may hold archive streams_lock (above).
 *   cache_mem.c lock -> pool.c lock: starting the fault-ahead thread.
 *   workers.c lock -> pool.c lock: starting a decode-ahead thread.
 *   remote.c fetch lock -> pool.c lock: starting a fetching thread.
 *   warmup.c se_lock -> dirplus.c lock: dropping a bare listing before the walk lists the
 *       folder.
 *   shadow_write.c emit_lock -> its lock (the ring): one emitter at a time, the jobs
 *       compress without either.
 *   Leaves (nothing is taken under them): dirplus.c lock (invalidations are sent after
 *   it), reader.c pool_lock (never held while decoding, freeing a decoder, or calling the
 *   cache or the workers), prefetch.c lock (never held while decoding), http.c lock (an
 *   object's idle connections), fs/handles.c lock (never held while opening or closing);
 *   while indexing: pipeline.c lock, gzip and bzip2 scan locks (one scan's own, with no
 *   other lock held).
 *
 * No lock is held while a FUSE request waits for a decode (but for the nested zip case
 * above): readers wait on the cache's reservations (cache.h) and on the reader's decoder
 * pool, each under its own lock only.
 */
#include "mount/union_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "index/archive.h"

struct un_file {
	struct handle h; /* first: un_free closes a handle by it */
	struct un *u;
	const struct source *s;
	void *fh;
};

static void handle_add(struct un *u, struct handle *h, bool is_dir)
{
	h->is_dir = is_dir;
	pthread_mutex_lock(&u->lock);
	list_add_head(&u->open, &h->link);
	pthread_mutex_unlock(&u->lock);
}

static void handle_del(struct un *u, struct handle *h)
{
	pthread_mutex_lock(&u->lock);
	list_del(&h->link);
	pthread_mutex_unlock(&u->lock);
}

int un_new(bool no_union, struct un **out)
{
	struct un *u = calloc(1, sizeof(*u));
	struct vnode *root;

	*out = NULL;
	if (!u)
		return -ENOMEM;
	u->no_union = no_union;
	pthread_mutex_init(&u->lock, NULL);
	pthread_mutex_init(&u->nested_lock, NULL);
	list_init(&u->open);
	if (htable_init(&u->names, 1024) < 0 || htable_init(&u->nested, 16) < 0) {
		un_free(u);
		return -ENOMEM;
	}
	root = un_vnode_new(no_union ? V_SOURCES : V_MERGED, 0, "", 0);
	if (!root || un_vnode_add(u, root) != root) {
		un_free(u);
		return -ENOMEM;
	}
	root->attr = (struct arch_attr){.ino = UN_ROOT, .mode = S_IFDIR | 0555, .nlink = 2};
	*out = u;
	return 0;
}

void un_free(struct un *u)
{
	if (!u)
		return;
	while (!list_empty(&u->open)) { /* never released by the kernel (a signal ended it) */
		struct handle *h = list_entry(list_first(&u->open), struct handle, link);
		if (h->is_dir)
			un_closedir((struct un_dir *)h);
		else
			un_close((struct un_file *)h);
	}
	for (unsigned i = 0; i < atomic_load(&u->nsrc); i++) {
		free(u->src[i]->name);
		free(u->src[i]->folder);
	}
	un_nested_free(u);
	/* nested archives read through the ones holding them: close the later first */
	for (unsigned i = atomic_load(&u->nsrc); i-- > 0;) {
		u->src[i]->ops->free(u->src[i]->t);
		free(u->src[i]);
	}
	for (size_t n = 0; n < u->nnodes; n++)
		un_vnode_free(u->chunks[n / CHUNK][n % CHUNK]);
	for (size_t c = 0; c < MAX_CHUNKS && u->chunks[c]; c++)
		free(u->chunks[c]);
	htable_fini(&u->names);
	pthread_mutex_destroy(&u->lock);
	pthread_mutex_destroy(&u->nested_lock);
	free(u);
}

void un_set_opener(struct un *u, int (*open)(void *opaque, const char *path, struct arch **out),
		   void *opaque)
{
	u->opener = open;
	u->opener_opaque = opaque;
}

int un_add(struct un *u, const struct tree_ops *ops, void *t, const char *name)
{
	unsigned idx;
	int err = un_add_source(u, ops, t, name, true, &idx);

	if (err)
		ops->free(t);
	return err;
}

int un_getattr(struct un *u, uint64_t ino, struct arch_attr *out)
{
	struct vnode *v;
	const struct source *s;
	unsigned src;
	uint64_t local;
	int err = un_decode(u, ino, &v, &s, &src, &local);

	if (err)
		return err;
	if (v) {
		*out = v->attr;
		return 0;
	}
	err = s->ops->getattr(s->t, local, out);
	if (!err)
		err = un_resolve_nested(u, &src, out);
	if (!err)
		un_from_source(src, out);
	return err;
}

int un_readlink(struct un *u, uint64_t ino, char *buf, size_t size, size_t *len)
{
	struct vnode *v;
	const struct source *s;
	unsigned src;
	uint64_t local;
	int err = un_decode(u, ino, &v, &s, &src, &local);

	if (err)
		return err;
	if (v)
		return -EINVAL;
	return s->ops->readlink(s->t, local, buf, size, len);
}

ssize_t un_listxattr(struct un *u, uint64_t ino, char *buf, size_t size)
{
	struct vnode *v;
	const struct source *s;
	unsigned src;
	uint64_t local;
	int err = un_decode(u, ino, &v, &s, &src, &local);

	if (err)
		return err;
	if (v)
		return 0;
	return s->ops->listxattr(s->t, local, buf, size);
}

/* The value of key in "key=value" lines, into out. */
static bool info_value(const char *info, const char *key, char *out, size_t size)
{
	size_t kl = strlen(key);

	for (const char *p = info; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p);
		if (ll > kl && memcmp(p, key, kl) == 0 && p[kl] == '=') {
			snprintf(out, size, "%.*s", (int)(ll - kl - 1), p + kl + 1);
			return true;
		}
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

/* "key=value" lines describing ino, for user.tarseek.*. */
static int describe(struct un *u, uint64_t ino, char *buf, size_t size)
{
	struct vnode *v;
	const struct source *s;
	unsigned src;
	uint64_t local;
	int err = un_decode(u, ino, &v, &s, &src, &local);
	size_t n;

	if (err)
		return err;
	if (v) {
		n = (size_t)snprintf(buf, size, "kind=%s\nsources=",
				     v->kind == V_VERSIONS ? "versions" : "union");
		unsigned ns = atomic_load(&u->nsrc);
		for (size_t k = 0; n < size; k++) {
			unsigned i;
			if (v->kind == V_MERGED) {
				if (k >= v->nc)
					break;
				i = v->c[k].src;
			} else if (v->kind == V_VERSIONS) {
				if (k >= v->nv)
					break;
				i = v->v[k].src;
			} else {
				if (k >= ns)
					break;
				i = (unsigned)k;
			}
			n += (size_t)snprintf(buf + n, size - n, "%s%s", k ? ":" : "", u->src[i]->name);
		}
		if (n < size)
			n += (size_t)snprintf(buf + n, size - n, "\n");
	} else {
		n = (size_t)snprintf(buf, size, "source_index=%u\n", src + 1);
		if (n < size) {
			err = s->ops->describe(s->t, local, buf + n, size - n);
			if (err)
				return err;
			n = strlen(buf);
		}
	}
	if (ino == UN_ROOT && n < size) {
		/* decoding counters of all archive sources (tests check a remount decodes
		 * nothing) */
		uint64_t dec = 0, bytes = 0;
		for (unsigned i = 0; i < atomic_load(&u->nsrc); i++) {
			if (u->src[i]->ops != &tree_archive_ops)
				continue;
			struct creader_stats st;
			arch_get_reader_stats(u->src[i]->t, &st);
			dec += st.decoders_started;
			bytes += st.decoded_bytes;
		}
		snprintf(buf + n, size - n, "decoders_started=%llu\ndecoded_bytes=%llu\n",
			 (unsigned long long)dec, (unsigned long long)bytes);
	}
	return 0;
}

ssize_t un_getxattr(struct un *u, uint64_t ino, const char *name, void *buf, size_t size)
{
	static const char prefix[] = "user.tarseek.";

	if (strncmp(name, prefix, sizeof(prefix) - 1) == 0) {
		char info[4096], val[4096];
		const char *out = val;
		int err = describe(u, ino, info, sizeof(info));
		if (err)
			return err;
		if (strcmp(name + sizeof(prefix) - 1, "info") == 0)
			out = info;
		else if (!info_value(info, name + sizeof(prefix) - 1, val, sizeof(val)))
			return -ENODATA;
		size_t n = strlen(out);
		if (size && n > size)
			return -ERANGE;
		if (size)
			memcpy(buf, out, n);
		return (ssize_t)n;
	}
	struct vnode *v;
	const struct source *s;
	unsigned src;
	uint64_t local;
	int err = un_decode(u, ino, &v, &s, &src, &local);
	if (err)
		return err;
	if (v)
		return -ENODATA;
	return s->ops->getxattr(s->t, local, name, buf, size);
}

int un_opendir(struct un *u, uint64_t ino, struct un_dir **out)
{
	struct un_dir *d;
	struct vnode *v;
	const struct source *s;
	unsigned src;
	uint64_t local;
	struct arch_attr a;
	int err = un_decode(u, ino, &v, &s, &src, &local);

	*out = NULL;
	if (err)
		return err;
	if (!v) {
		err = s->ops->getattr(s->t, local, &a);
		if (err)
			return err;
		if (!S_ISDIR(a.mode))
			return -ENOTDIR;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->ino = ino;
	if (v) {
		err = un_list_virtual(u, v, d);
		if (err) {
			un_closedir(d);
			return err;
		}
	} else {
		d->s = s;
		d->src = src;
		d->local = local;
	}
	d->u = u;
	handle_add(u, &d->h, true);
	*out = d;
	return 0;
}

struct pass {
	struct un *u;
	int err;
	unsigned src;
	arch_dirent_fn fn;
	void *opaque;
};

static int pass_entry(void *opaque, const char *name, size_t len, const struct arch_attr *a,
		      uint64_t cookie)
{
	struct pass *p = opaque;
	struct arch_attr b = *a;
	unsigned src = p->src;

	p->err = un_resolve_nested(p->u, &src, &b);
	if (p->err)
		return p->err < 0 ? p->err : -EIO;
	un_from_source(src, &b);
	return p->fn(p->opaque, name, len, &b, cookie);
}

int un_readdir(struct un *u, struct un_dir *d, uint64_t after, arch_dirent_fn fn, void *opaque)
{
	if (d->s) {
		struct pass p = {.u = u, .src = d->src, .fn = fn, .opaque = opaque};
		int err = d->s->ops->readdir(d->s->t, d->local, after, pass_entry, &p);
		return err ? err : p.err;
	}
	for (size_t i = after; i < d->n; i++) {
		int stop = fn(opaque, d->e[i].name, d->e[i].len, &d->e[i].attr, i + 1);
		if (stop)
			return stop < 0 ? stop : 0;
	}
	return 0;
}

void un_closedir(struct un_dir *d)
{
	if (!d)
		return;
	if (d->u)
		handle_del(d->u, &d->h);
	for (size_t i = 0; i < d->n; i++)
		free(d->e[i].name);
	free(d->e);
	free(d);
}

int un_open(struct un *u, uint64_t ino, struct un_file **out)
{
	struct vnode *v;
	const struct source *s;
	unsigned src;
	uint64_t local;
	struct un_file *f;
	int err = un_decode(u, ino, &v, &s, &src, &local);

	*out = NULL;
	if (err)
		return err;
	if (v)
		return -EISDIR;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->s = s;
	err = s->ops->open(s->t, local, &f->fh);
	if (err) {
		free(f);
		return err;
	}
	f->u = u;
	handle_add(u, &f->h, false);
	*out = f;
	return 0;
}

ssize_t un_read(struct un_file *f, void *buf, size_t len, uint64_t off)
{
	return f->s->ops->read(f->fh, buf, len, off);
}

size_t un_direct(struct un_file *f, uint64_t off, size_t len, int *fd, uint64_t *fd_off)
{
	return f->s->ops->direct ? f->s->ops->direct(f->fh, off, len, fd, fd_off) : 0;
}

void un_close(struct un_file *f)
{
	if (!f)
		return;
	handle_del(f->u, &f->h);
	f->s->ops->close(f->fh);
	free(f);
}

void un_totals(struct un *u, uint64_t *entries, uint64_t *bytes)
{
	*entries = *bytes = 0;
	for (unsigned i = 0; i < atomic_load(&u->nsrc); i++) {
		uint64_t e = 0, b = 0;
		if (u->src[i]->ops->totals)
			u->src[i]->ops->totals(u->src[i]->t, &e, &b);
		*entries += e;
		*bytes += b;
	}
}
