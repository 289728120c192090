/* PATH.versions (see union.h): every stored version of a path, oldest first, as a folder of
 * "1" .. "N", found by lookup but not listed by readdir.  Its node is made at the first
 * lookup, from the versions of the name in each source holding the parent folder (in source
 * order, each source's oldest first), and never changes; a version that is an archive inside
 * a source (-r) is that archive's root.
 */
#include "mount/union_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
	int err = un_resolve_nested(vc->u, &vc->v[vc->n].src, &vc->v[vc->n].attr);
	if (err)
		return err;
	vc->n++;
	return 0;
}

/* NAME.versions in a folder whose sources are c[0..nc). */
int un_versions_lookup(struct un *u, uint64_t parent, const struct contrib *c, size_t nc,
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
	v = un_vnode_new(V_VERSIONS, parent, name, len);
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
	v = un_vnode_add(u, v);
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

int un_versions_child(const struct vnode *v, const char *name, size_t len,
		      struct arch_attr *out)
{
	int k = version_index(name, len, v->nv);

	if (k < 0)
		return -ENOENT;
	*out = v->v[k - 1].attr;
	un_from_source(v->v[k - 1].src, out);
	return 0;
}

int un_versions_list(const struct vnode *v, struct un_dir *d)
{
	int err = 0;

	d->e = calloc(v->nv ? v->nv : 1, sizeof(*d->e));
	if (!d->e)
		return -ENOMEM;
	for (size_t k = 0; k < v->nv; k++) {
		char num[16];
		d->e[k].len = (size_t)snprintf(num, sizeof(num), "%zu", k + 1);
		d->e[k].name = strdup(num);
		d->e[k].attr = v->v[k].attr;
		un_from_source(v->v[k].src, &d->e[k].attr);
		if (!d->e[k].name)
			err = -ENOMEM;
		d->n = k + 1;
	}
	return err;
}
