/* The merged tree of an image's layers (see oci_int.h): what an overlay of the layers shows,
 * as the OCI image spec's "Applying Changesets" and docker's extraction make it.
 *
 * Each node is one path of the merged tree: its member's metadata and where its data lies
 * (the layer it came from, an offset in that layer's decoded bytes).  A node's children are
 * found by name through one hash table (common/htable.h) keyed by (parent, name), and walked
 * through the parent's list (common/list.h), in the order they came.
 *
 * The rules, applied member by member in layer order:
 *   - a path of a later layer replaces the earlier node; a folder over a folder updates the
 *     folder's metadata and keeps its contents; anything else over a folder removes it whole;
 *     a missing parent, or a parent that is not a folder, becomes a folder (implicit, 0755);
 *   - ".wh.NAME" removes NAME (and all below it) as the earlier layers made it: what its own
 *     layer put there stays (the spec: a whiteout applies to lower layers only);
 *   - ".wh..wh..opq" in folder D removes every node below D that an earlier layer made,
 *     keeping folders that hold something of this layer;
 *   - other ".wh..wh.*" names (aufs' own) are dropped; no whiteout is ever shown;
 *   - a hard link is resolved now, against the tree as it stands: the link becomes a node
 *     sharing its target's data (a data id), so a later layer that removes or replaces the
 *     target leaves the link with the bytes it had.  A link to a missing path is dropped
 *     with a warning.
 * Paths are normalised as the builder does (index/pathmap.c's path_split): "", "." skipped,
 * ".." goes up but never above the root, so "/etc/x" and "../x" stay inside the image.
 *
 * Reporting walks the tree, parents first; a folder no layer listed (a missing parent) is left
 * to the builder, which makes it as it makes a tar's (mode 0555).  Nodes that share a data id are
 * reported as one regular file (the first met) and hard links to its path.  Recursion is bounded by
 * OCI_MAX_DEPTH (deeper members are skipped when added).
 */
#include "containers/oci/oci_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "common/htable.h"
#include "common/list.h"
#include "common/log.h"
#include "containers/tar/tar.h"

struct onode {
	struct htable_node hn; /* in t->names: (parent, name) */
	struct list_node sib;  /* in parent->kids */
	struct list_node kids;
	struct onode *parent;
	char *name;
	size_t nlen;
	unsigned layer; /* the layer that put it there (a folder: that last listed it) */
	enum member_type type;
	bool implicit;	  /* a folder no layer listed */
	uint64_t data_id; /* a regular file's data: shared by hard links */
	uint64_t data_off, size, stored;
	uint32_t mode;
	uint64_t uid, gid;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint32_t dev_major, dev_minor;
	char *uname, *gname, *link;
	size_t link_len;
	struct member_sparse *sparse;
	size_t nsparse;
	struct member_xattr *xattrs;
	size_t nxattrs;
};

struct oci_tree {
	struct htable names;
	struct onode root;
	uint64_t next_data;
	struct tbuf path; /* reporting: the path being made */
};

static uint64_t name_hash(const struct onode *parent, const char *name, size_t len)
{
	return hash_pair((uint64_t)(uintptr_t)parent, hash_bytes(name, len));
}

static struct onode *find(struct oci_tree *t, struct onode *parent, const char *name, size_t len)
{
	uint64_t h = name_hash(parent, name, len);

	for (struct htable_node *n = htable_first(&t->names, h); n; n = htable_next(n)) {
		struct onode *c = htable_entry(n, struct onode, hn);
		if (c->parent == parent && c->nlen == len && memcmp(c->name, name, len) == 0)
			return c;
	}
	return NULL;
}

/* Frees what a node owns besides its name and its place (its member's data). */
static void clear_meta(struct onode *n)
{
	free(n->uname);
	free(n->gname);
	free(n->link);
	free(n->sparse);
	for (size_t i = 0; i < n->nxattrs; i++) {
		free((char *)n->xattrs[i].name);
		free((uint8_t *)n->xattrs[i].value);
	}
	free(n->xattrs);
	n->uname = n->gname = n->link = NULL;
	n->sparse = NULL;
	n->xattrs = NULL;
	n->nsparse = n->nxattrs = 0;
	n->link_len = 0;
}

/* Removes n and everything below it. */
static void remove_node(struct oci_tree *t, struct onode *n)
{
	while (!list_empty(&n->kids))
		remove_node(t, list_entry(list_first(&n->kids), struct onode, sib));
	if (n == &t->root)
		return;
	htable_del(&t->names, &n->hn);
	list_del(&n->sib);
	clear_meta(n);
	free(n->name);
	free(n);
}

static struct onode *add_node(struct oci_tree *t, struct onode *parent, const char *name,
			      size_t len)
{
	struct onode *n = calloc(1, sizeof(*n));

	if (!n || !(n->name = malloc(len + 1))) {
		free(n);
		return NULL;
	}
	memcpy(n->name, name, len);
	n->name[len] = '\0';
	n->nlen = len;
	n->parent = parent;
	list_init(&n->kids);
	if (htable_add(&t->names, &n->hn, name_hash(parent, name, len))) {
		free(n->name);
		free(n);
		return NULL;
	}
	list_add_tail(&parent->kids, &n->sib);
	return n;
}

int oci_tree_new(struct oci_tree **out)
{
	struct oci_tree *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t)
		return -ENOMEM;
	list_init(&t->root.kids);
	t->root.type = MEMBER_DIR;
	t->next_data = 1;
	*out = t;
	return 0;
}

void oci_tree_free(struct oci_tree *t)
{
	if (!t)
		return;
	remove_node(t, &t->root);
	htable_fini(&t->names);
	tar_buf_free(&t->path);
	free(t);
}

/* Removes from d's subtree every node an earlier layer than `layer` made, but folders that
 * hold something of `layer`.  True if something of `layer` stays below d. */
static bool prune(struct oci_tree *t, struct onode *d, unsigned layer)
{
	struct list_node *p, *next;
	bool any = false;

	for (p = d->kids.next; p != &d->kids; p = next) {
		struct onode *c = list_entry(p, struct onode, sib);
		bool keep;
		next = p->next;
		keep = c->layer == layer;
		if (c->type == MEMBER_DIR)
			keep |= prune(t, c, layer);
		if (keep)
			any = true;
		else
			remove_node(t, c);
	}
	return any;
}

/* Splits path into at most OCI_MAX_DEPTH components (as path_split does).  The count, or -1
 * when deeper. */
static int split(const uint8_t *path, size_t len, const char **comp, size_t *clen)
{
	int n = 0;

	for (size_t i = 0; i < len;) {
		size_t j = i;
		while (j < len && path[j] != '/')
			j++;
		size_t l = j - i;
		if (l == 0 || (l == 1 && path[i] == '.')) {
		} else if (l == 2 && path[i] == '.' && path[i + 1] == '.') {
			if (n > 0)
				n--;
		} else {
			if (n == OCI_MAX_DEPTH)
				return -1;
			comp[n] = (const char *)path + i;
			clen[n++] = l;
		}
		i = j + 1;
	}
	return n;
}

/* The node at path, or NULL. */
static struct onode *lookup(struct oci_tree *t, const uint8_t *path, size_t len, const char **comp,
			    size_t *clen)
{
	int n = split(path, len, comp, clen);
	struct onode *d = &t->root;

	for (int i = 0; d && i < n; i++)
		d = d->type == MEMBER_DIR ? find(t, d, comp[i], clen[i]) : NULL;
	return n > 0 ? d : NULL;
}

static char *dupz(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (d) {
		memcpy(d, s, len);
		d[len] = '\0';
	}
	return d;
}

/* Copies the metadata of m (or, for a hard link, of its target's data) into n. */
static int set_meta(struct oci_tree *t, struct onode *n, const struct arc_member *m, unsigned layer,
		    const struct onode *data)
{
	clear_meta(n);
	n->layer = layer;
	n->implicit = false;
	n->type = data ? data->type : m->type;
	/* a hard link is its target's inode: the target's metadata, as tar extracts it */
	n->mode = data ? data->mode : m->mode;
	n->uid = data ? data->uid : m->uid;
	n->gid = data ? data->gid : m->gid;
	n->mtime_sec = data ? data->mtime_sec : m->mtime_sec;
	n->mtime_nsec = data ? data->mtime_nsec : m->mtime_nsec;
	n->dev_major = m->dev_major;
	n->dev_minor = m->dev_minor;
	n->uname = strdup(data ? data->uname : m->uname ? m->uname : "");
	n->gname = strdup(data ? data->gname : m->gname ? m->gname : "");
	if (!n->uname || !n->gname)
		return -ENOMEM;
	if (data) { /* a hard link: the target's data and content */
		n->layer = data->layer;
		n->data_id = data->data_id;
		n->data_off = data->data_off;
		n->size = data->size;
		n->stored = data->stored;
		n->dev_major = data->dev_major;
		n->dev_minor = data->dev_minor;
		if (data->link && !(n->link = dupz(data->link, data->link_len)))
			return -ENOMEM;
		n->link_len = data->link_len;
		m = NULL; /* sparse map and xattrs: the target's (below) */
	} else {
		n->data_id = m->type == MEMBER_REG ? t->next_data++ : 0;
		n->data_off = m->data_off;
		n->size = m->size;
		n->stored = m->stored;
		if (m->type == MEMBER_SYMLINK &&
		    !(n->link = dupz((const char *)m->link, m->link_len)))
			return -ENOMEM;
		n->link_len = m->type == MEMBER_SYMLINK ? m->link_len : 0;
	}
	const struct member_sparse *sp = m ? m->sparse : data->sparse;
	size_t nsp = m ? m->nsparse : data->nsparse;
	const struct member_xattr *xa = m ? m->xattrs : data->xattrs;
	size_t nxa = m ? m->nxattrs : data->nxattrs;
	if (sp && n->type == MEMBER_REG) {
		if (!(n->sparse = malloc((nsp ? nsp : 1) * sizeof(*sp))))
			return -ENOMEM;
		memcpy(n->sparse, sp, nsp * sizeof(*sp));
		n->nsparse = nsp;
	}
	if (nxa) {
		if (!(n->xattrs = calloc(nxa, sizeof(*xa))))
			return -ENOMEM;
		for (size_t i = 0; i < nxa; i++, n->nxattrs++) {
			n->xattrs[i].name = strdup(xa[i].name);
			n->xattrs[i].value = malloc(xa[i].len ? xa[i].len : 1);
			n->xattrs[i].len = xa[i].len;
			if (!n->xattrs[i].name || !n->xattrs[i].value) {
				n->nxattrs++;
				return -ENOMEM;
			}
			memcpy((uint8_t *)n->xattrs[i].value, xa[i].value, xa[i].len);
		}
	}
	return 0;
}

/* Moves the metadata of src (a node outside the tree) into n; src keeps nothing. */
static void move_meta(struct onode *n, struct onode *src)
{
	struct onode keep = *n;

	clear_meta(n);
	*n = *src;
	n->hn = keep.hn;
	n->sib = keep.sib;
	n->kids = keep.kids;
	n->parent = keep.parent;
	n->name = keep.name;
	n->nlen = keep.nlen;
	memset(src, 0, sizeof(*src));
}

/* The folder that holds component i of a path, made along the way. */
static int parent_dir(struct oci_tree *t, const char **comp, const size_t *clen, int n,
		      unsigned layer, struct onode **out)
{
	struct onode *d = &t->root;

	for (int i = 0; i < n; i++) {
		struct onode *c = find(t, d, comp[i], clen[i]);
		if (c && c->type != MEMBER_DIR) {
			remove_node(t, c);
			c = NULL;
		}
		if (!c) {
			if (!(c = add_node(t, d, comp[i], clen[i])))
				return -ENOMEM;
			c->type = MEMBER_DIR;
			c->implicit = true;
			c->mode = 0755;
			c->layer = layer;
		}
		d = c;
	}
	*out = d;
	return 0;
}

/* A whiteout named name (".wh." and more) in folder d, of layer `layer`. */
static void whiteout(struct oci_tree *t, struct onode *d, const char *name, size_t len,
		     unsigned layer)
{
	struct onode *n;

	if (len == 12 && memcmp(name, ".wh..wh..opq", 12) == 0) {
		prune(t, d, layer);
		return;
	}
	if (len >= 8 && memcmp(name, ".wh..wh.", 8) == 0)
		return; /* aufs' own (.wh..wh.plnk, ...): nothing to apply */
	n = len > 4 ? find(t, d, name + 4, len - 4) : NULL;
	if (!n)
		return;
	if (n->layer != layer) { /* an earlier layer's, perhaps holding this layer's nodes */
		bool keep = n->type == MEMBER_DIR && prune(t, n, layer);
		if (!keep)
			remove_node(t, n);
	} else if (n->type == MEMBER_DIR) {
		prune(t, n, layer);
	}
}

int oci_tree_add(struct oci_tree *t, unsigned layer, const struct arc_member *m)
{
	const char **comp = NULL;
	size_t *clen = NULL;
	struct onode *d, *n, *target = NULL, tmp = {0};
	int nc, err = 0;

	if (m->path_len > OCI_MAX_PATH || m->link_len > OCI_MAX_PATH) {
		tfs_log(TFS_LOG_WARNING, "an image layer's member has a path of %zu bytes: skipped",
			m->path_len > m->link_len ? m->path_len : m->link_len);
		return 0;
	}
	comp = malloc(OCI_MAX_DEPTH * sizeof(*comp));
	clen = malloc(OCI_MAX_DEPTH * sizeof(*clen));
	if (!comp || !clen) {
		err = -ENOMEM;
		goto out;
	}
	if (m->type == MEMBER_HARDLINK) {
		target = lookup(t, m->link, m->link_len, comp, clen);
		if (!target || target->type == MEMBER_DIR) {
			tfs_log(TFS_LOG_WARNING,
				"an image layer's hard link %.*s -> %.*s: no such "
				"file in the image: skipped",
				(int)m->path_len, (const char *)m->path, (int)m->link_len,
				(const char *)m->link);
			goto out;
		}
	}
	nc = split(m->path, m->path_len, comp, clen);
	if (nc < 0) {
		tfs_log(TFS_LOG_WARNING,
			"an image layer's member has a path of more than %d "
			"components: skipped",
			OCI_MAX_DEPTH);
		goto out;
	}
	if (nc == 0)
		goto out; /* the root: its metadata is the mount's */
	err = parent_dir(t, comp, clen, nc - 1, layer, &d);
	if (err)
		goto out;
	if (clen[nc - 1] >= 4 && memcmp(comp[nc - 1], ".wh.", 4) == 0) {
		whiteout(t, d, comp[nc - 1], clen[nc - 1], layer);
		goto out;
	}
	n = find(t, d, comp[nc - 1], clen[nc - 1]);
	if (n && n == target)
		goto out; /* a link to itself */
	if (target) {	  /* copied first: the target may lie below the node it replaces */
		err = set_meta(t, &tmp, m, layer, target);
		if (err)
			goto out;
	}
	if (n && !(n->type == MEMBER_DIR && m->type == MEMBER_DIR)) {
		remove_node(t, n);
		n = NULL;
	}
	if (!n && !(n = add_node(t, d, comp[nc - 1], clen[nc - 1]))) {
		err = -ENOMEM;
		goto out;
	}
	if (target)
		move_meta(n, &tmp);
	else
		err = set_meta(t, n, m, layer, NULL);
out:
	clear_meta(&tmp);
	free(comp);
	free(clen);
	return err;
}

/* ---- reporting ---------------------------------------------------------------------------- */

struct report {
	struct oci_tree *t;
	const uint64_t *stream, *base;
	const struct cont_sink *sink;
	struct htable first; /* data id -> the path reported first (struct seen) */
};

struct seen {
	struct htable_node hn;
	uint64_t data_id;
	size_t len;
	char path[];
};

static void seen_free(struct htable *h)
{
	struct htable_node *n;

	while ((n = htable_pop(h)))
		free(htable_entry(n, struct seen, hn));
	htable_fini(h);
}

static const struct seen *seen_find(const struct htable *h, uint64_t id)
{
	for (struct htable_node *n = htable_first(h, hash_u64(id)); n; n = htable_next(n)) {
		const struct seen *s = htable_entry(n, struct seen, hn);
		if (s->data_id == id)
			return s;
	}
	return NULL;
}

/* Reports node n, whose path is r->t->path (NUL-terminated). */
static int report_one(struct report *r, const struct onode *n)
{
	struct tbuf *p = &r->t->path;
	struct arc_member m = {
	    .path = p->p,
	    .path_len = p->len,
	    .link = (const uint8_t *)"",
	    .type = n->type,
	    .mode = n->mode,
	    .uid = n->uid,
	    .gid = n->gid,
	    .mtime_sec = n->mtime_sec,
	    .mtime_nsec = n->mtime_nsec,
	    .dev_major = n->dev_major,
	    .dev_minor = n->dev_minor,
	    .uname = n->uname ? n->uname : "",
	    .gname = n->gname ? n->gname : "",
	    .sparse = n->sparse,
	    .nsparse = n->nsparse,
	    .xattrs = n->xattrs,
	    .nxattrs = n->nxattrs,
	};
	const struct seen *s;

	if (n->implicit)
		m.mode = 0755;
	if (n->type == MEMBER_SYMLINK) {
		m.link = (const uint8_t *)n->link;
		m.link_len = n->link_len;
	}
	if (n->type == MEMBER_REG && (s = seen_find(&r->first, n->data_id))) {
		m.type = MEMBER_HARDLINK;
		m.link = (const uint8_t *)s->path;
		m.link_len = s->len;
		m.sparse = NULL;
		m.nsparse = 0;
		return r->sink->member(r->sink->opaque, &m);
	}
	if (n->type == MEMBER_REG) {
		struct seen *e = malloc(sizeof(*e) + p->len + 1);
		if (!e)
			return -ENOMEM;
		e->data_id = n->data_id;
		e->len = p->len;
		memcpy(e->path, p->p, p->len + 1);
		if (htable_add(&r->first, &e->hn, hash_u64(n->data_id))) {
			free(e);
			return -ENOMEM;
		}
		m.stream = r->stream[n->layer];
		m.data_off = r->base[n->layer] + n->data_off;
		m.size = n->size;
		m.stored = n->stored;
	}
	return r->sink->member(r->sink->opaque, &m);
}

/* Reports the children of d (whose path is in r->t->path) and theirs. */
static int report_kids(struct report *r, const struct onode *d)
{
	struct tbuf *p = &r->t->path;
	size_t at = p->len;
	int err = 0;

	for (struct list_node *l = d->kids.next; !err && l != &d->kids; l = l->next) {
		const struct onode *c = list_entry(l, struct onode, sib);
		p->len = at;
		if ((at && tar_buf_put(p, "/", 1)) || tar_buf_put(p, c->name, c->nlen) ||
		    tar_buf_reserve(p, p->len + 1)) {
			err = -ENOMEM;
			break;
		}
		p->p[p->len] = '\0';
		/* a folder no layer listed is the builder's to make (0555, as for a tar), unless
		 * nothing below it makes it */
		if (!(c->implicit && !list_empty(&c->kids)))
			err = report_one(r, c);
		if (!err && c->type == MEMBER_DIR)
			err = report_kids(r, c);
	}
	p->len = at;
	return err;
}

int oci_tree_report(struct oci_tree *t, const char *prefix, const uint64_t *stream,
		    const uint64_t *base, const struct cont_sink *sink)
{
	struct report r = {.t = t, .stream = stream, .base = base, .sink = sink};
	int err = 0;

	t->path.len = 0;
	if (prefix) {
		struct onode top = {.type = MEMBER_DIR, .implicit = true};
		err = tar_buf_setz(&t->path, prefix, strlen(prefix));
		err = err ? err : report_one(&r, &top);
	}
	err = err ? err : report_kids(&r, &t->root);
	seen_free(&r.first);
	return err;
}
