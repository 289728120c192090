/* The merged tree (see union.h): lookups and folder listings over several sources by one
 * rule, the overlay rule: for a name, if the last source that has it holds a non-directory,
 * that is the entry; otherwise it is a folder merging the sources in which the name is a
 * folder, back to the first earlier source that holds a non-directory there (which hides
 * everything before it).  A folder present in only one source is passed through with that
 * source's inode; one present in several becomes a virtual node (union_nodes.c) listing its
 * sources.  Lookups query only the sources that hold the parent folder.
 *
 * A merged folder's listing is built when it is opened (all of its sources' listings, merged
 * by name and sorted), so readdir offsets are positions in a list that does not change under
 * the reader.  NAME.versions is looked up here when NAME is not found otherwise
 * (union_versions.c); entries that are archives inside a source are resolved to their roots
 * (union_nested.c).
 */
#include "mount/union_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/hash.h"

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
			err = un_resolve_nested(u, &src, &a);
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
		un_from_source(f->file_src, out);
		return 0;
	}
	if (f->ndirs == 1) {
		*out = f->dir_attr[0];
		un_from_source(f->dirs[0].src, out);
		return 0;
	}
	struct vnode *v = un_vnode_new(V_MERGED, parent, name, len);
	if (!v)
		return -ENOMEM;
	v->c = f->dirs;
	v->nc = f->ndirs;
	f->dirs = NULL;
	v->attr = f->dir_attr[f->ndirs - 1]; /* the last source's folder */
	v->attr.nlink = 1;		     /* unknown: tells find not to count */
	v = un_vnode_add(u, v);
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
	int err = un_decode(u, ino, &v, &s, &src, &local);

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

int un_lookup(struct un *u, uint64_t parent, const char *name, size_t len, struct arch_attr *out)
{
	struct contrib one;
	const struct contrib *c;
	size_t nc;
	struct vnode *v;
	struct found f;
	int err = folder_sources(u, parent, &one, &c, &nc, &v);

	if (err == -ENOTSUP && v->kind == V_VERSIONS)
		return un_versions_child(v, name, len, out);
	if (err == -ENOTSUP && v->kind == V_SOURCES) {
		char buf[512];
		for (unsigned i = 0; i < atomic_load(&u->nsrc); i++) {
			if (!u->src[i]->folder)
				continue;
			un_source_folder(u, i, buf, sizeof(buf));
			if (strlen(buf) == len && memcmp(buf, name, len) == 0) {
				const struct source *s = u->src[i];
				err = s->ops->getattr(s->t, s->ops->root, out);
				if (!err)
					un_from_source(i, out);
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
		err = un_versions_lookup(u, parent, c, nc, name, len, out);
	return err;
}

/* Building a merged folder's listing: an entry per name, found again by the one hash table
 * (common/htable.h) over the names; the entries are an array that grows, and as they move
 * then, the table is linked again from the hashes they keep. */
struct merge {
	struct un *u;
	unsigned src;
	struct mentry {
		struct htable_node h; /* in t, by hash_bytes(name) */
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
	struct htable t;
	int err;
};

/* Room for more entries: the array doubles, and its entries, moved, are linked into a new
 * table by the hashes they keep.  0 or -ENOMEM. */
static int merge_grow(struct merge *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	struct mentry *ne = realloc(m->e, cap * sizeof(*ne));

	if (!ne)
		return -ENOMEM;
	m->e = ne;
	m->cap = cap;
	htable_fini(&m->t);
	if (htable_init(&m->t, cap) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++)
		(void)htable_add(&m->t, &m->e[i].h, m->e[i].h.hash); /* has buckets */
	return 0;
}

/* The entry of name, added if new; NULL if out of memory. */
static struct mentry *merge_find(struct merge *m, const char *name, size_t len)
{
	uint64_t h = hash_bytes(name, len);
	struct htable_node *n;
	struct mentry *e;

	for (n = htable_first(&m->t, h); n; n = htable_next(n)) {
		e = htable_entry(n, struct mentry, h);
		if (e->len == len && memcmp(e->name, name, len) == 0)
			return e;
	}
	if (m->n == m->cap && merge_grow(m) < 0)
		return NULL;
	e = &m->e[m->n];
	memset(e, 0, sizeof(*e));
	e->name = malloc(len + 1);
	if (!e->name)
		return NULL;
	memcpy(e->name, name, len);
	e->name[len] = '\0';
	e->len = len;
	(void)htable_add(&m->t, &e->h, h); /* has buckets: merge_grow's */
	m->n++;
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
	m->err = un_resolve_nested(m->u, &src, &b);
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

/* The root with no_union: a folder per top source. */
static int list_sources(struct un *u, struct un_dir *d)
{
	unsigned ns = atomic_load(&u->nsrc);
	int err = 0;

	d->e = calloc(ns ? ns : 1, sizeof(*d->e));
	if (!d->e)
		return -ENOMEM;
	for (unsigned i = 0; i < ns && !err; i++) {
		char buf[512];
		const struct source *s = u->src[i];
		if (!s->folder)
			continue; /* an archive inside another: not a folder of the root */
		un_source_folder(u, i, buf, sizeof(buf));
		err = s->ops->getattr(s->t, s->ops->root, &d->e[d->n].attr);
		if (err)
			break;
		un_from_source(i, &d->e[d->n].attr);
		d->e[d->n].name = strdup(buf);
		d->e[d->n].len = strlen(buf);
		if (!d->e[d->n].name)
			err = -ENOMEM;
		d->n++;
	}
	return err;
}

/* A merged folder: its sources' listings merged by name by the overlay rule, sorted. */
static int list_merged(struct un *u, struct vnode *v, struct un_dir *d)
{
	struct merge m = {.u = u};
	int err = 0;

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
	htable_fini(&m.t);
	if (!err)
		qsort(d->e, d->n, sizeof(*d->e), cmp_dent);
	return err;
}

int un_list_virtual(struct un *u, struct vnode *v, struct un_dir *d)
{
	if (v->kind == V_VERSIONS)
		return un_versions_list(v, d);
	if (v->kind == V_SOURCES)
		return list_sources(u, d);
	return list_merged(u, v, d);
}
