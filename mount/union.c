/* The mounted tree over one or more sources (see union.h).
 *
 * Virtual nodes -- merged folders, .versions folders, the root -- live in a table that only
 * grows: a node's contents are fixed when it is made, so readers use it without a lock once
 * they have its pointer; the table is a two-level array of pointers so it never moves.  A
 * hash of (parent inode, name) gives every virtual node one inode for the mount's lifetime.
 * Sources are likewise a fixed array of pointers filled in order.
 *
 * Merging follows one rule in lookup and in readdir, the overlay rule: for a name, if the last
 * source that has it holds a non-directory, that is the entry; otherwise it is a folder
 * merging the sources in which the name is a folder, back to the first earlier source that
 * holds a non-directory there (which hides everything before it).  A merged folder's listing is built when it is
 * opened (all of its sources' listings, merged by name and sorted), so readdir offsets are
 * positions in a list that does not change under the reader.
 *
 * Locks: lock guards the node table's growth, the hash and the open handles; nested_lock the
 * map of archives opened inside sources (-r).  The number of sources is an atomic published
 * after the source is in place.
 *
 * Lock order of the whole daemon (every lock there is, and the order in which one may be
 * taken while another is held; a lock not listed under another is never held with it):
 *
 *   union.c     nested_lock  ->  union.c lock        (adding a nested archive as a source)
 *   archive.c   streams_lock ->  archive.c conns_lock, cache.c lock   (making a stream's
 *                                reader: its checkpoints from SQLite, its cache stream id)
 *   taken alone: union.c lock, archive.c conns_lock, cache.c lock (its disk writer runs
 *   outside it), reader.c pool_lock (never held while decoding or calling the cache or the
 *   workers), workers.c lock, dirtree.c lock, prefetch.c lock (never held while decoding),
 *   fs/handles.c lock (never held while opening or closing); while indexing: pipeline.c
 *   lock, gzip.c and bzip2.c scan locks (one scan's own, with no other lock held).
 *
 * No lock is held while a FUSE request waits for a decode: readers wait on the cache's
 * reservations (cache.h) and on the reader's decoder pool, each under its own lock only.
 */
#include "mount/union.h"
#include "index/archive.h"
#include "mount/dirtree.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SRC_SHIFT 40
#define LOCAL_MASK ((1ull << SRC_SHIFT) - 1)
#define VIRT (1ull << 63)
#define MAX_SOURCES (1u << 16)
#define CHUNK 4096
#define MAX_CHUNKS 4096
#define VERSIONS_SUFFIX ".versions"
#define VSUFFIX_LEN (sizeof(VERSIONS_SUFFIX) - 1)

struct source {
	const struct tree_ops *ops;
	void *t;
	char *name;   /* display name */
	char *folder; /* its folder's name with no_union: name, or name.2, name.3, ... */
	/* archives inside this one (-r) that were opened: member -> source; nested_lock */
	struct nmap {
		uint64_t local;
		unsigned src;
	} *nested;
	size_t nnested;
};

struct contrib {
	unsigned src;
	uint64_t local;
};

enum vkind {
	V_MERGED,   /* a folder present in several sources (or the root) */
	V_VERSIONS, /* PATH.versions */
	V_SOURCES,  /* the root with no_union: one folder per source */
};

struct vnode {
	enum vkind kind;
	uint64_t ino;
	uint64_t parent;
	char *name;
	size_t len;
	struct arch_attr attr; /* ino set to this node's */
	struct contrib *c;     /* V_MERGED: sources holding it, in source order */
	size_t nc;
	struct ventry {	       /* V_VERSIONS: the versions, oldest first */
		unsigned src;
		struct arch_attr attr;
	} *v;
	size_t nv;
	struct vnode *hnext;
};

struct un {
	bool no_union;
	struct source *src[MAX_SOURCES];
	atomic_uint nsrc;
	pthread_mutex_t nested_lock; /* opening nested archives; taken before lock */
	/* opens an archive found in a folder source (-r), or NULL */
	int (*opener)(void *opaque, const char *path, struct arch **out);
	void *opener_opaque;
	pthread_mutex_t lock;
	/* protected by lock: */
	struct vnode **chunks[MAX_CHUNKS];
	size_t nnodes;
	struct vnode **hash;
	size_t nhash;
	/* open files and folders, closed by un_free if the kernel never released them (the
	 * daemon stopped by a signal): protected by lock */
	struct handle *open;
};

/* An open file or folder, on the union's list of open handles. */
struct handle {
	struct handle *prev, *next;
	bool is_dir;
};

static void handle_add(struct un *u, struct handle *h, bool is_dir)
{
	h->is_dir = is_dir;
	h->prev = NULL;
	pthread_mutex_lock(&u->lock);
	h->next = u->open;
	if (u->open)
		u->open->prev = h;
	u->open = h;
	pthread_mutex_unlock(&u->lock);
}

static void handle_del(struct un *u, struct handle *h)
{
	pthread_mutex_lock(&u->lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		u->open = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&u->lock);
}

struct un_dir {
	struct handle h; /* first: the list links */
	struct un *u;
	uint64_t ino;
	/* a pass-through folder: the source and its local inode */
	const struct source *s;
	unsigned src;
	uint64_t local;
	/* a virtual folder: its listing */
	struct dent {
		char *name;
		size_t len;
		struct arch_attr attr;
	} *e;
	size_t n;
};

struct un_file {
	struct handle h; /* first: the list links */
	struct un *u;
	const struct source *s;
	void *fh;
};

static uint64_t enc(unsigned s, uint64_t local)
{
	return ((uint64_t)(s + 1) << SRC_SHIFT) | local;
}

static struct vnode *vnode_at(struct un *u, uint64_t n)
{
	struct vnode *v = NULL;

	pthread_mutex_lock(&u->lock);
	if (n < u->nnodes)
		v = u->chunks[n / CHUNK][n % CHUNK];
	pthread_mutex_unlock(&u->lock);
	return v;
}

/* What a mount inode is: a virtual node, or (source, local inode). */
static int decode(struct un *u, uint64_t ino, struct vnode **v, const struct source **s,
		  unsigned *src, uint64_t *local)
{
	*v = NULL;
	*s = NULL;
	if (ino == UN_ROOT || (ino & VIRT)) {
		*v = vnode_at(u, ino == UN_ROOT ? 0 : ino & ~VIRT);
		return *v ? 0 : -ENOENT;
	}
	uint64_t si = (ino >> SRC_SHIFT);
	if (si == 0 || si > atomic_load(&u->nsrc))
		return -ENOENT;
	*src = (unsigned)(si - 1);
	*s = u->src[*src];
	*local = ino & LOCAL_MASK;
	return 0;
}

static size_t hash_of(uint64_t parent, const char *name, size_t len, size_t nhash)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (parent * 0x9E3779B97F4A7C15ull);

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 31)) & (nhash - 1);
}

static void vnode_free(struct vnode *v)
{
	if (!v)
		return;
	free(v->name);
	free(v->c);
	free(v->v);
	free(v);
}

/* Registers a new node (or returns the one already made for (parent, name), freeing v). */
static struct vnode *vnode_add(struct un *u, struct vnode *v)
{
	struct vnode *found = NULL;

	pthread_mutex_lock(&u->lock);
	if (v->kind != V_SOURCES && u->hash) {
		for (found = u->hash[hash_of(v->parent, v->name, v->len, u->nhash)]; found;
		     found = found->hnext)
			if (found->parent == v->parent && found->len == v->len &&
			    memcmp(found->name, v->name, v->len) == 0 && found->kind == v->kind)
				break;
	}
	if (found) {
		pthread_mutex_unlock(&u->lock);
		vnode_free(v);
		return found;
	}
	size_t n = u->nnodes;
	if (n / CHUNK >= MAX_CHUNKS)
		goto fail;
	if (!u->chunks[n / CHUNK] && !(u->chunks[n / CHUNK] = calloc(CHUNK, sizeof(struct vnode *))))
		goto fail;
	if (u->nnodes + 1 > u->nhash / 2) {
		size_t nh = u->nhash ? u->nhash * 2 : 1024;
		struct vnode **h = calloc(nh, sizeof(*h));
		if (!h)
			goto fail;
		for (size_t i = 0; i < u->nhash; i++)
			for (struct vnode *e = u->hash[i], *next; e; e = next) {
				next = e->hnext;
				size_t b = hash_of(e->parent, e->name, e->len, nh);
				e->hnext = h[b];
				h[b] = e;
			}
		free(u->hash);
		u->hash = h;
		u->nhash = nh;
	}
	v->ino = n == 0 ? UN_ROOT : (VIRT | n);
	v->attr.ino = v->ino;
	size_t b = hash_of(v->parent, v->name, v->len, u->nhash);
	v->hnext = u->hash[b];
	u->hash[b] = v;
	u->chunks[n / CHUNK][n % CHUNK] = v;
	u->nnodes++;
	pthread_mutex_unlock(&u->lock);
	return v;
fail:
	pthread_mutex_unlock(&u->lock);
	vnode_free(v);
	return NULL;
}

static struct vnode *vnode_new(enum vkind kind, uint64_t parent, const char *name, size_t len)
{
	struct vnode *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->kind = kind;
	v->parent = parent;
	v->name = malloc(len + 1);
	if (!v->name) {
		free(v);
		return NULL;
	}
	memcpy(v->name, name, len);
	v->name[len] = '\0';
	v->len = len;
	return v;
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
	root = vnode_new(no_union ? V_SOURCES : V_MERGED, 0, "", 0);
	if (!root || vnode_add(u, root) != root) {
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
	while (u->open) { /* never released by the kernel (a signal ended the daemon) */
		struct handle *h = u->open;
		if (h->is_dir)
			un_closedir((struct un_dir *)h);
		else
			un_close((struct un_file *)h);
	}
	for (unsigned i = 0; i < atomic_load(&u->nsrc); i++) {
		free(u->src[i]->name);
		free(u->src[i]->folder);
		free(u->src[i]->nested);
	}
	/* nested archives read through the ones holding them: close the later first */
	for (unsigned i = atomic_load(&u->nsrc); i-- > 0;) {
		u->src[i]->ops->free(u->src[i]->t);
		free(u->src[i]);
	}
	for (size_t n = 0; n < u->nnodes; n++)
		vnode_free(u->chunks[n / CHUNK][n % CHUNK]);
	for (size_t c = 0; c < MAX_CHUNKS && u->chunks[c]; c++)
		free(u->chunks[c]);
	free(u->hash);
	pthread_mutex_destroy(&u->lock);
	pthread_mutex_destroy(&u->nested_lock);
	free(u);
}

/* A folder name for a new top source n (lock held): its name, else name.2, name.3, ...,
 * the first that no earlier source's folder has. */
static char *unique_folder(struct un *u, unsigned n, const char *name)
{
	char *cand = strdup(name);

	for (unsigned k = 2; cand; k++) {
		bool taken = false;
		for (unsigned j = 0; j < n && !taken; j++)
			taken = u->src[j]->folder && strcmp(u->src[j]->folder, cand) == 0;
		if (!taken)
			return cand;
		free(cand);
		if (asprintf(&cand, "%s.%u", name, k) < 0)
			cand = NULL;
	}
	return NULL;
}

/* Adds a source; top: a source of the mount (merged into the root), else an archive found
 * inside one.  *idx = its index. */
static int add_source(struct un *u, const struct tree_ops *ops, void *t, const char *name,
		      bool top, unsigned *idx)
{
	struct source *s = calloc(1, sizeof(*s));
	struct vnode *root = vnode_at(u, 0);
	struct arch_attr ra;
	unsigned n;
	int err;

	if (!s || !(s->name = strdup(name))) {
		free(s);
		ops->free(t);
		return -ENOMEM;
	}
	s->ops = ops;
	s->t = t;
	pthread_mutex_lock(&u->lock);
	n = atomic_load(&u->nsrc);
	if (n == MAX_SOURCES) {
		pthread_mutex_unlock(&u->lock);
		free(s->name);
		free(s);
		ops->free(t);
		return -EOVERFLOW;
	}
	if (top && u->no_union && !(s->folder = unique_folder(u, n, name))) {
		pthread_mutex_unlock(&u->lock);
		free(s->name);
		free(s);
		ops->free(t);
		return -ENOMEM;
	}
	u->src[n] = s;
	*idx = n;
	/* the root merges every source's root; set up before the source is visible */
	if (top && !u->no_union) {
		struct contrib *c = realloc(root->c, (root->nc + 1) * sizeof(*c));
		if (!c) {
			pthread_mutex_unlock(&u->lock);
			return -ENOMEM; /* s stays owned by the table but invisible: freed never */
		}
		c[root->nc] = (struct contrib){n, ops->root};
		root->c = c;
		root->nc++;
	}
	atomic_store(&u->nsrc, n + 1);
	pthread_mutex_unlock(&u->lock);
	if (!top)
		return 0;
	err = ops->getattr(t, ops->root, &ra);
	if (!err && !u->no_union) { /* the root looks like the last source's root */
		ra.ino = UN_ROOT;
		if (n > 0)
			ra.nlink = 1; /* merged: unknown */
		root->attr = ra;
	}
	return 0;
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

	return add_source(u, ops, t, name, true, &idx);
}

/* The source already opened for member ino of s, if any (nested_lock held). */
static bool nested_find(const struct source *s, uint64_t ino, unsigned *ns)
{
	for (size_t i = 0; i < s->nnested; i++)
		if (s->nested[i].local == ino) {
			*ns = s->nested[i].src;
			return true;
		}
	return false;
}

/* An entry of source *src that is an archive mounted as a folder (-r) becomes the root of
 * that archive, opened (once) as a source of its own.  The archive is opened without
 * nested_lock (arch_nested reads the index and may take the archive's and the cache's
 * locks); two threads may both open it, and the one that comes second closes its copy. */
static int resolve_nested(struct un *u, unsigned *src, struct arch_attr *a)
{
	struct source *s = u->src[*src];
	struct arch *na = NULL;
	unsigned ns = 0;
	bool found;
	int err = 0;

	if (!(a->flags & ARCH_A_NESTED) ||
	    (s->ops != &tree_archive_ops && !(s->ops == &tree_dir_ops && u->opener)))
		return 0;
	pthread_mutex_lock(&u->nested_lock);
	found = nested_find(s, a->ino, &ns);
	pthread_mutex_unlock(&u->nested_lock);
	if (!found) {
		if (s->ops == &tree_archive_ops) {
			err = arch_nested(s->t, a->ino, &na);
		} else { /* an archive file in a folder source: opened as a top-level one */
			char *path = dirtree_path(s->t, a->ino);
			err = path ? u->opener(u->opener_opaque, path, &na) : -ENOMEM;
			free(path);
		}
		if (err)
			return err;
		/* held across add_source, which takes lock: the lock order is nested_lock, then
		 * lock (see the top of this file) */
		pthread_mutex_lock(&u->nested_lock);
		found = nested_find(s, a->ino, &ns);
		if (!found) {
			struct nmap *m = realloc(s->nested, (s->nnested + 1) * sizeof(*m));
			err = m ? 0 : -ENOMEM;
			if (m)
				s->nested = m;
			if (!err)
				err = add_source(u, &tree_archive_ops, na, arch_get_info(na)->path,
						 false, &ns);
			if (!err) {
				s->nested[s->nnested++] = (struct nmap){a->ino, ns};
				na = NULL; /* the union's now */
			}
		}
		pthread_mutex_unlock(&u->nested_lock);
		arch_close(na); /* another thread's copy won, or adding it failed */
		if (err)
			return err;
	}
	s = u->src[ns];
	err = s->ops->getattr(s->t, s->ops->root, a);
	if (!err)
		*src = ns;
	return err;
}

/* The name of source i's folder with no_union. */
static void source_folder(struct un *u, unsigned i, char *buf, size_t size)
{
	snprintf(buf, size, "%s", u->src[i]->folder ? u->src[i]->folder : u->src[i]->name);
}


/* Re-numbers a source's attributes into the mount's inodes. */
static void from_source(unsigned s, struct arch_attr *a)
{
	a->ino = enc(s, a->ino);
}

struct found {
	bool have_file;
	unsigned file_src;
	struct arch_attr file;
	struct contrib *dirs;
	struct arch_attr *dir_attr;
	size_t ndirs;
};

/* Looks name up in the sources c[0..nc) (in source order) by the union rule. */
static int lookup_merged(struct un *u, const struct contrib *c, size_t nc, const char *name,
			 size_t len, struct found *f)
{
	memset(f, 0, sizeof(*f));
	for (size_t k = nc; k-- > 0;) {
		const struct source *s = u->src[c[k].src];
		struct arch_attr a;
		unsigned src = c[k].src;
		int err = s->ops->lookup(s->t, c[k].local, name, len, &a);
		if (err == -ENOENT || err == -ENOTDIR)
			continue;
		if (!err)
			err = resolve_nested(u, &src, &a);
		if (err)
			return err;
		if (!S_ISDIR(a.mode)) {
			if (f->ndirs == 0) { /* the last source with the name holds a file */
				f->have_file = true;
				f->file_src = src;
				f->file = a;
			}
			/* a file hides this name in every earlier source (overlay rule) */
			break;
		}
		struct contrib *nd = realloc(f->dirs, (f->ndirs + 1) * sizeof(*nd));
		struct arch_attr *na = realloc(f->dir_attr, (f->ndirs + 1) * sizeof(*na));
		if (nd)
			f->dirs = nd;
		if (na)
			f->dir_attr = na;
		if (!nd || !na)
			return -ENOMEM;
		/* collected from the last source back: keep source order by prepending */
		memmove(f->dirs + 1, f->dirs, f->ndirs * sizeof(*nd));
		memmove(f->dir_attr + 1, f->dir_attr, f->ndirs * sizeof(*na));
		f->dirs[0] = (struct contrib){src, a.ino};
		f->dir_attr[0] = a;
		f->ndirs++;
	}
	return f->have_file || f->ndirs ? 0 : -ENOENT;
}

static void found_free(struct found *f)
{
	free(f->dirs);
	free(f->dir_attr);
}

/* The entry for a lookup result: a file, a passed-through folder or a merged folder. */
static int resolve_found(struct un *u, uint64_t parent, const char *name, size_t len,
			 struct found *f, struct arch_attr *out)
{
	if (f->have_file) {
		*out = f->file;
		from_source(f->file_src, out);
		return 0;
	}
	if (f->ndirs == 1) {
		*out = f->dir_attr[0];
		from_source(f->dirs[0].src, out);
		return 0;
	}
	struct vnode *v = vnode_new(V_MERGED, parent, name, len);
	if (!v)
		return -ENOMEM;
	v->c = f->dirs;
	v->nc = f->ndirs;
	f->dirs = NULL;
	v->attr = f->dir_attr[f->ndirs - 1]; /* the last source's folder */
	v->attr.nlink = 1;		     /* unknown: tells find not to count */
	v = vnode_add(u, v);
	if (!v)
		return -ENOMEM;
	*out = v->attr;
	return 0;
}

/* The sources a folder inode draws from: contributors, or one source passed through. */
static int folder_sources(struct un *u, uint64_t ino, struct contrib *one, const struct contrib **c,
			  size_t *nc, struct vnode **vout)
{
	struct vnode *v;
	const struct source *s;
	unsigned src;
	uint64_t local;
	int err = decode(u, ino, &v, &s, &src, &local);

	*vout = v;
	if (err)
		return err;
	if (v) {
		if (v->kind != V_MERGED)
			return -ENOTSUP;
		*c = v->c;
		*nc = v->nc;
		return 0;
	}
	*one = (struct contrib){src, local};
	*c = one;
	*nc = 1;
	return 0;
}

struct vcollect {
	struct un *u;
	struct ventry *v;
	size_t n;
	unsigned src;
	int err;
};

static int collect_version(void *opaque, const struct arch_attr *a)
{
	struct vcollect *vc = opaque;
	struct ventry *n = realloc(vc->v, (vc->n + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	vc->v = n;
	vc->v[vc->n].src = vc->src;
	vc->v[vc->n].attr = *a;
	int err = resolve_nested(vc->u, &vc->v[vc->n].src, &vc->v[vc->n].attr);
	if (err)
		return err;
	vc->n++;
	return 0;
}

/* NAME.versions in a folder whose sources are c[0..nc). */
static int lookup_versions(struct un *u, uint64_t parent, const struct contrib *c, size_t nc,
			   const char *name, size_t len, struct arch_attr *out)
{
	struct vcollect vc = {.u = u};
	size_t blen = len - VSUFFIX_LEN;
	struct vnode *v;

	for (size_t k = 0; k < nc; k++) {
		const struct source *s = u->src[c[k].src];
		vc.src = c[k].src;
		int err = s->ops->versions(s->t, c[k].local, name, blen, collect_version, &vc);
		if (err && err != -ENOENT && err != -ENOTDIR) {
			free(vc.v);
			return err;
		}
	}
	if (!vc.n)
		return -ENOENT;
	v = vnode_new(V_VERSIONS, parent, name, len);
	if (!v) {
		free(vc.v);
		return -ENOMEM;
	}
	v->v = vc.v;
	v->nv = vc.n;
	v->attr = (struct arch_attr){.mode = S_IFDIR | 0555, .nlink = 2,
				     .mtime = vc.v[vc.n - 1].attr.mtime,
				     .mtime_nsec = vc.v[vc.n - 1].attr.mtime_nsec,
				     .uid = vc.v[vc.n - 1].attr.uid, .gid = vc.v[vc.n - 1].attr.gid};
	v = vnode_add(u, v);
	if (!v)
		return -ENOMEM;
	*out = v->attr;
	return 0;
}

/* "1" .. "N" in a .versions folder. */
static int version_index(const char *name, size_t len, size_t nv)
{
	size_t k = 0;

	if (len == 0 || len > 9 || name[0] == '0')
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		k = k * 10 + (size_t)(name[i] - '0');
	}
	return k >= 1 && k <= nv ? (int)k : -1;
}

int un_lookup(struct un *u, uint64_t parent, const char *name, size_t len, struct arch_attr *out)
{
	struct contrib one;
	const struct contrib *c;
	size_t nc;
	struct vnode *v;
	struct found f;
	int err = folder_sources(u, parent, &one, &c, &nc, &v);

	if (err == -ENOTSUP && v->kind == V_VERSIONS) {
		int k = version_index(name, len, v->nv);
		if (k < 0)
			return -ENOENT;
		*out = v->v[k - 1].attr;
		from_source(v->v[k - 1].src, out);
		return 0;
	}
	if (err == -ENOTSUP && v->kind == V_SOURCES) {
		char buf[512];
		for (unsigned i = 0; i < atomic_load(&u->nsrc); i++) {
			if (!u->src[i]->folder)
				continue;
			source_folder(u, i, buf, sizeof(buf));
			if (strlen(buf) == len && memcmp(buf, name, len) == 0) {
				const struct source *s = u->src[i];
				err = s->ops->getattr(s->t, s->ops->root, out);
				if (!err)
					from_source(i, out);
				return err;
			}
		}
		return -ENOENT;
	}
	if (err)
		return err;
	err = lookup_merged(u, c, nc, name, len, &f);
	if (err == 0)
		err = resolve_found(u, parent, name, len, &f, out);
	found_free(&f);
	if (err == -ENOENT && len > VSUFFIX_LEN &&
	    memcmp(name + len - VSUFFIX_LEN, VERSIONS_SUFFIX, VSUFFIX_LEN) == 0)
		err = lookup_versions(u, parent, c, nc, name, len, out);
	return err;
}

int un_getattr(struct un *u, uint64_t ino, struct arch_attr *out)
{
	struct vnode *v;
	const struct source *s;
	unsigned src;
	uint64_t local;
	int err = decode(u, ino, &v, &s, &src, &local);

	if (err)
		return err;
	if (v) {
		*out = v->attr;
		return 0;
	}
	err = s->ops->getattr(s->t, local, out);
	if (!err)
		err = resolve_nested(u, &src, out);
	if (!err)
		from_source(src, out);
	return err;
}

int un_readlink(struct un *u, uint64_t ino, char *buf, size_t size, size_t *len)
{
	struct vnode *v;
	const struct source *s;
	unsigned src;
	uint64_t local;
	int err = decode(u, ino, &v, &s, &src, &local);

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
	int err = decode(u, ino, &v, &s, &src, &local);

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
	int err = decode(u, ino, &v, &s, &src, &local);
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
	int err = decode(u, ino, &v, &s, &src, &local);
	if (err)
		return err;
	if (v)
		return -ENODATA;
	return s->ops->getxattr(s->t, local, name, buf, size);
}

/* Building a virtual folder's listing. */
struct merge {
	struct un *u;
	unsigned src;
	struct mentry {
		char *name;
		size_t len;
		bool last_is_file;
		unsigned file_src;
		struct arch_attr file;
		struct contrib *dirs;
		struct arch_attr last_dir;
		size_t ndirs;
	} *e;
	size_t n, cap;
	size_t *slots; /* hash: index + 1 */
	size_t nslots;
	int err;
};

static struct mentry *merge_find(struct merge *m, const char *name, size_t len)
{
	size_t h = hash_of(0, name, len, m->nslots);

	for (; m->slots[h]; h = (h + 1) & (m->nslots - 1)) {
		struct mentry *e = &m->e[m->slots[h] - 1];
		if (e->len == len && memcmp(e->name, name, len) == 0)
			return e;
	}
	if ((m->n + 1) * 2 > m->nslots) {
		size_t ns = m->nslots * 2;
		size_t *s = calloc(ns, sizeof(*s));
		if (!s)
			return NULL;
		for (size_t i = 0; i < m->n; i++) {
			size_t k = hash_of(0, m->e[i].name, m->e[i].len, ns);
			while (s[k])
				k = (k + 1) & (ns - 1);
			s[k] = i + 1;
		}
		free(m->slots);
		m->slots = s;
		m->nslots = ns;
		h = hash_of(0, name, len, ns);
		while (m->slots[h])
			h = (h + 1) & (ns - 1);
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct mentry *ne = realloc(m->e, cap * sizeof(*ne));
		if (!ne)
			return NULL;
		m->e = ne;
		m->cap = cap;
	}
	struct mentry *e = &m->e[m->n];
	memset(e, 0, sizeof(*e));
	e->name = malloc(len + 1);
	if (!e->name)
		return NULL;
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	e->len = len;
	m->slots[h] = ++m->n;
	return e;
}

static int merge_add(void *opaque, const char *name, size_t len, const struct arch_attr *a,
		     uint64_t cookie)
{
	struct merge *m = opaque;
	struct mentry *e = merge_find(m, name, len);
	struct arch_attr b = *a;
	unsigned src = m->src;

	if (!e) {
		m->err = -ENOMEM;
		return 1;
	}
	m->err = resolve_nested(m->u, &src, &b);
	if (m->err)
		return 1;
	if (S_ISDIR(b.mode)) {
		struct contrib *d = realloc(e->dirs, (e->ndirs + 1) * sizeof(*d));
		if (!d) {
			m->err = -ENOMEM;
			return 1;
		}
		e->dirs = d;
		e->dirs[e->ndirs++] = (struct contrib){src, b.ino};
		e->last_dir = b;
		e->last_is_file = false;
	} else { /* a file hides the folders of earlier sources (overlay rule) */
		e->last_is_file = true;
		e->file_src = src;
		e->file = b;
		e->ndirs = 0;
	}
	return 0;
}

static int cmp_dent(const void *a, const void *b)
{
	const struct dent *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->name, y->name, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

static int list_virtual(struct un *u, struct vnode *v, struct un_dir *d)
{
	struct merge m = {.u = u, .nslots = 64};
	int err = 0;

	if (v->kind == V_VERSIONS) {
		d->e = calloc(v->nv ? v->nv : 1, sizeof(*d->e));
		if (!d->e)
			return -ENOMEM;
		for (size_t k = 0; k < v->nv; k++) {
			char num[16];
			d->e[k].len = (size_t)snprintf(num, sizeof(num), "%zu", k + 1);
			d->e[k].name = strdup(num);
			d->e[k].attr = v->v[k].attr;
			from_source(v->v[k].src, &d->e[k].attr);
			if (!d->e[k].name)
				err = -ENOMEM;
			d->n = k + 1;
		}
		return err;
	}
	if (v->kind == V_SOURCES) {
		unsigned ns = atomic_load(&u->nsrc);
		d->e = calloc(ns ? ns : 1, sizeof(*d->e));
		if (!d->e)
			return -ENOMEM;
		for (unsigned i = 0; i < ns && !err; i++) {
			char buf[512];
			const struct source *s = u->src[i];
			if (!s->folder)
				continue; /* an archive inside another: not a folder of the root */
			source_folder(u, i, buf, sizeof(buf));
			err = s->ops->getattr(s->t, s->ops->root, &d->e[d->n].attr);
			if (err)
				break;
			from_source(i, &d->e[d->n].attr);
			d->e[d->n].name = strdup(buf);
			d->e[d->n].len = strlen(buf);
			if (!d->e[d->n].name)
				err = -ENOMEM;
			d->n++;
		}
		return err;
	}
	m.slots = calloc(m.nslots, sizeof(*m.slots));
	if (!m.slots)
		return -ENOMEM;
	for (size_t k = 0; k < v->nc && !err; k++) {
		const struct source *s = u->src[v->c[k].src];
		m.src = v->c[k].src;
		err = s->ops->readdir(s->t, v->c[k].local, 0, merge_add, &m);
		if (!err)
			err = m.err;
	}
	if (!err) {
		d->e = calloc(m.n ? m.n : 1, sizeof(*d->e));
		if (!d->e)
			err = -ENOMEM;
	}
	for (size_t i = 0; i < m.n; i++) {
		struct mentry *e = &m.e[i];
		if (!err) {
			struct found f = {.have_file = e->last_is_file, .file_src = e->file_src,
					  .file = e->file, .dirs = e->dirs, .ndirs = e->ndirs};
			/* resolve_found reads the last folder's attributes at dir_attr[ndirs - 1] */
			if (!f.have_file && !(f.dir_attr = calloc(f.ndirs, sizeof(*f.dir_attr))))
				err = -ENOMEM;
			if (!err) {
				if (!f.have_file)
					f.dir_attr[f.ndirs - 1] = e->last_dir;
				err = resolve_found(u, v->ino, e->name, e->len, &f, &d->e[d->n].attr);
				e->dirs = f.dirs; /* NULL if a merged node took them */
			}
			free(f.dir_attr);
			if (!err) {
				d->e[d->n].name = e->name;
				d->e[d->n].len = e->len;
				e->name = NULL;
				d->n++;
			}
		}
		free(e->name);
		free(e->dirs);
	}
	free(m.e);
	free(m.slots);
	if (!err)
		qsort(d->e, d->n, sizeof(*d->e), cmp_dent);
	return err;
}

int un_opendir(struct un *u, uint64_t ino, struct un_dir **out)
{
	struct un_dir *d;
	struct vnode *v;
	const struct source *s;
	unsigned src;
	uint64_t local;
	struct arch_attr a;
	int err = decode(u, ino, &v, &s, &src, &local);

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
		err = list_virtual(u, v, d);
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

	p->err = resolve_nested(p->u, &src, &b);
	if (p->err)
		return p->err < 0 ? p->err : -EIO;
	from_source(src, &b);
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
	int err = decode(u, ino, &v, &s, &src, &local);

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
