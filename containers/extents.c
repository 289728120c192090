/* A member's sparse map being built (extents.h). */
#include "containers/extents.h"

#include <errno.h>
#include <stdlib.h>

int extents_add(struct extents *x, uint64_t off, uint64_t len, uint64_t src)
{
	struct member_sparse *last = x->n ? &x->v[x->n - 1] : NULL;

	if (!len)
		return 0;
	if (last && last->off + last->len == off && last->src + last->len == src) {
		last->len += len;
		return 0;
	}
	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 16;
		struct member_sparse *v = realloc(x->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		x->v = v;
		x->cap = cap;
	}
	x->v[x->n++] = (struct member_sparse){.off = off, .len = len, .src = src};
	return 0;
}

void extents_free(struct extents *x)
{
	free(x->v);
	*x = (struct extents){0};
}
