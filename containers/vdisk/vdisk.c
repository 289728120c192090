/* The extent map and the one member of a virtual-disk image (see vdisk.h). */
#include "containers/vdisk/vdisk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/log.h"

void vd_map_init(struct vd_map *m, uint64_t vsize, uint64_t fsize)
{
	memset(m, 0, sizeof(*m));
	m->vsize = vsize;
	m->fsize = fsize;
}

void vd_map_free(struct vd_map *m)
{
	extents_free(&m->x);
}

int vd_map_add(struct vd_map *m, uint64_t off, uint64_t len, uint64_t src)
{
	struct member_sparse *last = m->x.n ? &m->x.v[m->x.n - 1] : NULL;

	if (off >= m->vsize || !len)
		return 0;
	if (len > m->vsize - off)
		len = m->vsize - off;
	if (last && off < last->off + last->len) {
		m->err = "two table entries map the same part of the disk";
		return -EIO;
	}
	if (src > m->fsize || len > m->fsize - src) {
		m->err = "a table entry points past the end of the image (truncated?)";
		return -EIO;
	}
	if (len > m->fsize - m->mapped) {
		m->err = "the tables map more data than the image file holds";
		return -EIO;
	}
	m->mapped += len;
	if (src + len > m->stored)
		m->stored = src + len;
	return extents_add(&m->x, off, len, src);
}

/* Strips suffix from name[0..*n) if it ends with it (case-insensitive). */
static bool strip(const char *name, size_t *n, const char *suffix)
{
	size_t sl = strlen(suffix);

	if (*n <= sl || strncasecmp(name + *n - sl, suffix, sl))
		return false;
	*n -= sl;
	return true;
}

char *vd_member_name(const char *name)
{
	static const char *const codecs[] = {".gz", ".xz", ".bz2", ".zst", ".zstd", ".lz4",
					     ".lz", ".lzo", ".lzma", ".Z"};
	static const char *const images[] = {".qcow2", ".qcow", ".vhdx", ".vhd", ".vpc",
					     ".vmdk", ".img", ".raw"};
	const char *base = name ? strrchr(name, '/') : NULL;
	size_t n;
	char *out;

	base = base ? base + 1 : name ? name : "";
	n = strlen(base);
	for (size_t i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++)
		if (strip(base, &n, codecs[i]))
			break;
	for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++)
		if (strip(base, &n, images[i]))
			break;
	if (!n) {
		base = "disk";
		n = 4;
	}
	out = malloc(n + sizeof(".img"));
	if (out) {
		memcpy(out, base, n);
		memcpy(out + n, ".img", sizeof(".img"));
	}
	return out;
}

static int by_src(const void *x, const void *y)
{
	const struct member_sparse *a = x, *b = y;

	return a->src < b->src ? -1 : a->src > b->src;
}

/* False if two extents share bytes of the image (no writer makes such a map: damage, or a
 * table made to repeat itself).  -ENOMEM, or 0 with *shared set. */
static int shared_bytes(const struct vd_map *m, bool *shared)
{
	struct member_sparse *s;

	*shared = false;
	if (m->x.n < 2)
		return 0;
	s = malloc(m->x.n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	memcpy(s, m->x.v, m->x.n * sizeof(*s));
	qsort(s, m->x.n, sizeof(*s), by_src);
	for (size_t i = 1; i < m->x.n && !*shared; i++)
		*shared = s[i].src < s[i - 1].src + s[i - 1].len;
	free(s);
	return 0;
}

int vd_report(const struct cont_sink *sink, struct cont_stats *st, const struct vd_map *map,
	      uint64_t vsize, int64_t mtime, int unreadable, const char *why)
{
	static const struct member_sparse none;
	struct arc_member m = {0};
	char *path = vd_member_name(sink->name);
	int err = 0;

	if (!path)
		return -ENOMEM;
	if (!unreadable && map) {
		bool shared;
		err = shared_bytes(map, &shared);
		if (err) {
			free(path);
			return err;
		}
		if (shared) {
			unreadable = -EIO;
			why = "two parts of the disk are stored in the same bytes of the image: "
			      "damaged";
		}
	}
	m.path = (const uint8_t *)path;
	m.path_len = strlen(path);
	m.link = (const uint8_t *)"";
	m.type = MEMBER_REG;
	m.size = vsize;
	m.mode = 0644;
	m.no_owner = true;
	m.mtime_sec = mtime;
	m.no_mtime = !mtime;
	m.uname = m.gname = "";
	if (unreadable) {
		tfs_log(unreadable == -EIO ? TFS_LOG_WARNING : TFS_LOG_NOTICE, "%s: %s: %s",
			sink->name ? sink->name : "image", path, why);
		m.unreadable = unreadable;
		m.why = why;
		if (st && unreadable == -EIO)
			st->damaged = true;
	} else {
		m.sparse = map && map->x.n ? map->x.v : &none;
		m.nsparse = map ? map->x.n : 0;
		m.stored = map ? map->stored : 0;
	}
	if (st)
		st->members++;
	err = sink->member(sink->opaque, &m);
	free(path);
	return err;
}
