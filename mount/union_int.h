/* What the files of the union mount share (see union.h), private to them:
 *   union.c          the calls of union.h over the pieces below, open folders and files, the
 *                    user.tarseek.* attributes; the lock order of the whole daemon at its top;
 *   union_merge.c    the merged tree: lookups and folder listings by the overlay rule;
 *   union_versions.c PATH.versions folders;
 *   union_nested.c   archives inside sources (-r), opened once each as sources of their own;
 *   union_nodes.c    the tables they all use: the sources, the virtual nodes, inode numbers.
 * Each calls only the ones listed after it (union_nodes.c calls none).
 *
 * Locks (see the top of union.c): lock guards the node table's growth, the table of nodes by
 * (parent, name), the source table's growth and the open handles; nested_lock the map of
 * archives opened inside sources, and is taken before lock.
 */
#ifndef TARSEEK_UNION_INT_H
#define TARSEEK_UNION_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/htable.h"
#include "common/list.h"
#include "mount/union.h"

#define SRC_SHIFT UN_SRC_SHIFT
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
	struct htable_node h; /* in u->names, by (parent, name); lock */
};

struct un {
	bool no_union;
	struct source *src[MAX_SOURCES];
	atomic_uint nsrc;
	pthread_mutex_t nested_lock; /* opening nested archives; taken before lock */
	/* archives inside sources (-r) that were opened, by (source, member): struct nested;
	 * nested_lock */
	struct htable nested;
	/* opens an archive found in a folder source (-r), or NULL */
	int (*opener)(void *opaque, const char *path, struct arch **out);
	void *opener_opaque;
	pthread_mutex_t lock;
	/* protected by lock: */
	struct vnode **chunks[MAX_CHUNKS];
	size_t nnodes;
	struct htable names; /* the virtual nodes by (parent, name) */
	/* open files and folders, closed by un_free if the kernel never released them (the
	 * daemon stopped by a signal): struct handle */
	struct list_node open;
};

/* An open file or folder, on the union's list of open handles. */
struct handle {
	struct list_node link; /* in u->open; lock */
	bool is_dir;
};

struct un_dir {
	struct handle h; /* first: un_free closes a handle by it */
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

/* Re-numbers a source's attributes into the mount's inodes. */
static inline void un_from_source(unsigned s, struct arch_attr *a)
{
	a->ino = un_source_ino(s, a->ino);
}

/* ---- union_nodes.c ---- */

/* Node n of the table (0: the root), or NULL.  Takes lock. */
struct vnode *un_vnode_at(struct un *u, uint64_t n);

/* What a mount inode is: a virtual node (*v), or (source *s, *src, local inode *local).
 * 0 or -ENOENT.  Takes lock. */
int un_decode(struct un *u, uint64_t ino, struct vnode **v, const struct source **s,
	      unsigned *src, uint64_t *local);

/* A new node (not yet in the table) of kind for (parent, name), or NULL. */
struct vnode *un_vnode_new(enum vkind kind, uint64_t parent, const char *name, size_t len);

/* Registers v, giving it an inode, or returns the node already made for (parent, name, kind)
 * and frees v.  NULL (v freed) when out of memory or of inodes.  Takes lock. */
struct vnode *un_vnode_add(struct un *u, struct vnode *v);

void un_vnode_free(struct vnode *v); /* NULL does nothing */

/* Adds a source; top: a source of the mount (merged into the root), else an archive found
 * inside one.  *idx = its index.  0, or -ENOMEM / -EOVERFLOW: then t is still the caller's.
 * Takes lock. */
int un_add_source(struct un *u, const struct tree_ops *ops, void *t, const char *name,
		  bool top, unsigned *idx);

/* The name of source i's folder with no_union. */
void un_source_folder(struct un *u, unsigned i, char *buf, size_t size);

/* ---- union_nested.c ---- */

/* An entry of source *src flagged ARCH_A_NESTED becomes the root of that archive, opened
 * once as a source of its own: *a its root's attributes, *src that source.  Other entries
 * are left as they are.  0 or -errno (opening it).  Takes nested_lock, then lock. */
int un_resolve_nested(struct un *u, unsigned *src, struct arch_attr *a);

/* Frees the map of nested archives (un_free; the sources are freed with the others). */
void un_nested_free(struct un *u);

/* ---- union_versions.c ---- */

/* NAME.versions (name, len with the suffix) in folder parent whose sources are c[0..nc):
 * its node, made on first lookup.  -ENOENT if NAME has no version. */
int un_versions_lookup(struct un *u, uint64_t parent, const struct contrib *c, size_t nc,
		       const char *name, size_t len, struct arch_attr *out);

/* "1" .. "N" in the .versions folder v.  -ENOENT. */
int un_versions_child(const struct vnode *v, const char *name, size_t len,
		      struct arch_attr *out);

/* The listing of the .versions folder v into d.  0 or -ENOMEM. */
int un_versions_list(const struct vnode *v, struct un_dir *d);

/* ---- union_merge.c ---- */

/* The listing of virtual folder v into d (merged by name and sorted; a .versions folder's
 * versions; with no_union, the root's folders).  0 or -errno. */
int un_list_virtual(struct un *u, struct vnode *v, struct un_dir *d);

#endif
