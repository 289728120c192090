/* Shadows made after mounting (see shadow_later.h). */
#include "fs/shadow_later.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/parts.h"
#include "common/pool.h"
#include "index/shadow_make.h"

#define SL_NICE 10

struct sl_item {
	char *path, *index;
};

struct shadow_later {
	struct idx_shadow_make_opts o;
	atomic_bool stop;
	struct sl_item *items;
	size_t n, cap;
	struct pool_job *job;
};

struct shadow_later *sl_new(enum shadow_mode mode, uint64_t max, unsigned threads)
{
	struct shadow_later *sl;

	if (mode == SHADOW_NEVER || !(sl = calloc(1, sizeof(*sl))))
		return NULL;
	atomic_init(&sl->stop, false);
	sl->o = (struct idx_shadow_make_opts){.mode = mode, .max = max, .threads = threads,
					      .stop = &sl->stop};
	return sl;
}

void sl_add(struct shadow_later *sl, const char *path, const char *index)
{
	if (!sl || !path || !index)
		return;
	if (sl->n == sl->cap) {
		size_t cap = sl->cap ? sl->cap * 2 : 4;
		struct sl_item *p = realloc(sl->items, cap * sizeof(*p));
		if (!p)
			return;
		sl->items = p;
		sl->cap = cap;
	}
	struct sl_item it = {strdup(path), strdup(index)};
	if (!it.path || !it.index) {
		free(it.path);
		free(it.index);
		return;
	}
	sl->items[sl->n++] = it;
}

static void *sl_main(void *arg)
{
	struct shadow_later *sl = arg;

	for (size_t i = 0; i < sl->n && !atomic_load(&sl->stop); i++) {
		struct src *file;
		if (parts_open(sl->items[i].path, &file) < 0) /* a split archive too */
			continue;
		int r = idx_shadow_make(sl->items[i].index, file, sl->items[i].path, &sl->o);
		if (r == 1)
			tfs_log(TFS_LOG_INFO, "%s: shadow made beside its index: the next mount "
				"reads it", sl->items[i].path);
		src_free(file);
	}
	return NULL;
}

void sl_start(struct shadow_later *sl)
{
	if (sl && sl->n && !sl->job && pool_start(sl_main, sl, "tarseek-shadow", SL_NICE,
						   &sl->job) < 0)
		tfs_log(TFS_LOG_NOTICE, "no shadow made after mounting: no thread for it");
}

void sl_free(struct shadow_later *sl)
{
	if (!sl)
		return;
	atomic_store(&sl->stop, true);
	pool_join(sl->job);
	for (size_t i = 0; i < sl->n; i++) {
		free(sl->items[i].path);
		free(sl->items[i].index);
	}
	free(sl->items);
	free(sl);
}
