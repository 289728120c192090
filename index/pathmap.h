/* The builder's in-memory directory tree: (parent id, name) -> the latest entry of that
 * path, so the one indexing pass resolves parents, versions and hard-link targets without
 * querying SQLite.  Names are raw bytes.  Not thread-safe (one builder, one thread).
 */
#ifndef TARSEEK_PATHMAP_H
#define TARSEEK_PATHMAP_H

#include <stddef.h>
#include <stdint.h>

struct pm_node {
	uint64_t parent;
	uint64_t id;	  /* the latest version's row */
	uint64_t target;  /* for a hard link: the row holding the data (else 0) */
	uint32_t version; /* versions stored so far */
	uint32_t mode;	  /* st_mode of the latest version */
	const uint8_t *name;
	uint32_t name_len;
};

struct pathmap;

struct pathmap *pm_new(void); /* NULL if out of memory */
void pm_free(struct pathmap *m);

struct pm_node *pm_find(struct pathmap *m, uint64_t parent, const uint8_t *name, size_t len);

/* Adds a node for (parent, name), which must be absent; fields other than the key are 0.
 * NULL if out of memory. */
struct pm_node *pm_add(struct pathmap *m, uint64_t parent, const uint8_t *name, size_t len);

/* Splits a member path into normalised components, so that nothing escapes the root:
 * "" and "." components are dropped, ".." removes the component before it (never above
 * the root), leading "/" and "//" are ignored.  comps[i] points into path.  Returns the
 * number of components (0 = the root itself), or -1 if there are more than max. */
int path_split(const uint8_t *path, size_t len, const uint8_t **comps, size_t *lens, int max);

#endif
