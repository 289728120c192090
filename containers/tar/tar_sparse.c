/* GNU sparse members: the old 'S' header's map, the PAX 0.0/0.1 keywords and the 1.0 map at
 * the start of the data, and the map put right for readers (sparse_finish: in order, not
 * overlapping, inside the size and the stored data, as bsdtar reads odd maps). */
#include "containers/tar/tar_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

int tar_sparse_push(struct parser *p, uint64_t off, uint64_t len)
{
	if (p->nsp >= TAR_MAX_SPARSE)
		return -E2BIG;
	if (tar_grow((void **)&p->sp, &p->capsp, p->nsp + 1, sizeof(*p->sp)))
		return -ENOMEM;
	p->sp[p->nsp].off = off;
	p->sp[p->nsp].len = len;
	p->nsp++;
	return 0;
}

/* GNU.sparse.map (0.1): "OFF,LEN,OFF,LEN,...". */
int tar_sparse_map01(struct parser *p, const uint8_t *v, size_t n)
{
	uint64_t num[2];
	size_t i = 0, k = 0;

	while (i < n) {
		size_t j = i;
		int err;

		while (j < n && v[j] != ',')
			j++;
		if (tar_dec_u64(v + i, j - i, UINT64_MAX, &num[k]))
			return tar_damage(p, "bad number in GNU.sparse.map");
		if (++k == 2) {
			err = tar_sparse_push(p, num[0], num[1]);
			if (err == -E2BIG)
				return tar_damage(p, "too many extents in GNU.sparse.map");
			if (err)
				return err;
			k = 0;
		}
		i = j + 1;
		if (j < n && i == n)
			return tar_damage(p, "GNU.sparse.map ends with a comma");
	}
	if (k)
		return tar_damage(p, "odd number of values in GNU.sparse.map");
	return 0;
}

/* ---- sparse maps ------------------------------------------------------------------------ */

/* Entries of an old GNU sparse area (n entries of offset[12], numbytes[12]), up to the first
 * empty one.  0, -EINVAL (damaged, logged) or -ENOMEM. */
static int gnu_sparse_area(struct parser *p, const uint8_t *area, int n)
{
	for (int i = 0; i < n; i++) {
		const uint8_t *e = area + i * 24;
		int64_t off, len;
		int err;

		if (e[12] == 0)
			break;
		if (tar_num_field(e, 12, &off) || tar_num_field(e + 12, 12, &len) || off < 0 ||
		    len < 0)
			return tar_damage(p, "bad number in the old GNU sparse map");
		err = tar_sparse_push(p, (uint64_t)off, (uint64_t)len);
		if (err == -E2BIG)
			return tar_damage(p, "too many sparse extents");
		if (err)
			return err;
	}
	return 0;
}

/* Old GNU sparse ('S'): 4 extents in the header, then 21 in each extension block while the
 * isextended flag is set.  The extension blocks sit between the header and the data; they
 * are read (even for a damaged member, to find the data) and *start moves past them.
 * Returns 1 to go on, 0 if truncated, or -errno. */
int tar_gnu_sparse(struct parser *p, const uint8_t *h, uint64_t hoff, uint64_t *start)
{
	bool ext = h[G_ISEXT] != 0;
	int err;

	if (!p->damaged) {
		err = gnu_sparse_area(p, h + G_SPARSE, 4);
		if (err && err != -EINVAL)
			return err;
	}
	while (ext) {
		ssize_t n = tar_read(p, p->blk, TAR_BLOCK, *start);

		if (n < 0)
			return (int)n;
		if (n < TAR_BLOCK)
			return tar_truncated(p, hoff, *start + TAR_BLOCK);
		*start += TAR_BLOCK;
		if (!p->damaged) {
			err = gnu_sparse_area(p, p->blk, 21);
			if (err && err != -EINVAL)
				return err;
		}
		ext = p->blk[G_EXT_ISEXT] != 0;
	}
	return 1;
}

/* PAX sparse 1.0: the map is at the start of the member's data, decimal numbers one per line
 * (the count, then offset and length of each extent), padded to a block.  Lines that start
 * with '#' are comments (GNU tar writes none and refuses them; bsdtar skips them, and is
 * followed).  Reads the map block by block and sets *map_bytes to its padded size.  Returns
 * 1 to go on (p->damaged may be set), 0 if truncated, or -errno. */
int tar_sparse1_map(struct parser *p, uint64_t hoff, uint64_t start, uint64_t stored_total,
		    uint64_t *map_bytes)
{
	uint64_t pos = start, cur = 0, count = 0, nnum = 0, ext_off = 0;
	unsigned digits = 0;
	bool line_start = true, comment = false;
	int err;

	for (;;) {
		ssize_t n;

		if (pos - start + TAR_BLOCK > stored_total) {
			tar_damage(p, "sparse map runs past the member's data");
			return 1;
		}
		n = tar_read(p, p->blk, TAR_BLOCK, pos);
		if (n < 0)
			return (int)n;
		if (n < TAR_BLOCK)
			return tar_truncated(p, hoff, pos + TAR_BLOCK);
		pos += TAR_BLOCK;
		for (size_t i = 0; i < TAR_BLOCK; i++) {
			uint8_t c = p->blk[i];

			if (comment || (line_start && c == '#')) {
				comment = c != '\n';
				line_start = !comment;
				continue;
			}
			line_start = c == '\n';
			if (c >= '0' && c <= '9') {
				if (cur > (UINT64_MAX - 9) / 10) {
					tar_damage(p, "number out of range in the sparse map");
					return 1;
				}
				cur = cur * 10 + (c - '0');
				digits++;
				continue;
			}
			if (c != '\n' || !digits) {
				tar_damage(p, "malformed sparse map");
				return 1;
			}
			if (nnum == 0) {
				count = cur;
				if (count > TAR_MAX_SPARSE) {
					tar_damage(p, "too many sparse extents");
					return 1;
				}
			} else if (nnum % 2) {
				ext_off = cur;
			} else {
				err = tar_sparse_push(p, ext_off, cur);
				if (err)
					return err; /* -E2BIG cannot happen: count was checked */
			}
			nnum++;
			cur = 0;
			digits = 0;
			if (nnum == 1 + 2 * count) {
				*map_bytes = pos - start;
				return 1;
			}
		}
	}
}

/* One extent while a map that is out of order or overlaps is put right: its map position
 * (a later extent overwrites an earlier one, as when tar writes them in turn). */
struct sp_seg {
	uint64_t off, end, src;
	size_t seq;
};

static int sp_seg_cmp(const void *x, const void *y)
{
	const struct sp_seg *a = x, *b = y;

	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return a < b ? -1 : a > b;
}

/* A max-heap of segments by seq (the extent written last wins). */
static void heap_push(struct sp_seg **h, size_t *n, struct sp_seg *s)
{
	size_t i = (*n)++;

	while (i && h[(i - 1) / 2]->seq < s->seq) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = s;
}

static void heap_pop(struct sp_seg **h, size_t *n)
{
	struct sp_seg *last = h[--(*n)];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1]->seq > h[c]->seq)
			c++;
		if (h[c]->seq <= last->seq)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
}

/* Rewrites p->sp (extents in map order, with their src set) as extents in offset order that
 * do not overlap, each byte taken from the extent that comes last in the map: a sweep over
 * the extents' ends with a heap of the extents that cover the current piece.  O(n log n).
 * 0 or -ENOMEM. */
static int sparse_sort(struct parser *p)
{
	size_t n = p->nsp, npts = 0, nheap = 0, j = 0, out = 0;
	struct sp_seg *seg = malloc(n * sizeof(*seg));
	struct sp_seg **heap = malloc(n * sizeof(*heap));
	uint64_t *pts = malloc(2 * n * sizeof(*pts));
	int err = 0;

	/* every extent can cut one other in two: at most 2n - 1 pieces */
	if (!seg || !heap || !pts || tar_grow((void **)&p->sp, &p->capsp, 2 * n, sizeof(*p->sp))) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		seg[i] =
		    (struct sp_seg){p->sp[i].off, p->sp[i].off + p->sp[i].len, p->sp[i].src, i};
		pts[npts++] = seg[i].off;
		pts[npts++] = seg[i].end;
	}
	qsort(seg, n, sizeof(*seg), sp_seg_cmp);
	qsort(pts, npts, sizeof(*pts), u64_cmp);
	for (size_t k = 0; k + 1 < npts; k++) {
		uint64_t x = pts[k], y = pts[k + 1];
		struct sp_seg *w;

		if (x == y)
			continue;
		while (j < n && seg[j].off <= x)
			heap_push(heap, &nheap, &seg[j++]);
		while (nheap && heap[0]->end <= x)
			heap_pop(heap, &nheap);
		if (!nheap)
			continue; /* a hole */
		w = heap[0];	  /* covers [x, y): its end is a point after x */
		struct member_sparse piece = {x, y - x, w->src + (x - w->off)};
		struct member_sparse *last = out ? &p->sp[out - 1] : NULL;
		if (last && last->off + last->len == x && last->src + last->len == piece.src)
			last->len += piece.len;
		else
			p->sp[out++] = piece;
	}
	p->nsp = out;
out:
	free(seg);
	free(heap);
	free(pts);
	return err;
}

/* Turns a sparse map as stored (extents in map order, their data stored one after the other)
 * into what a reader needs: extents in offset order, not overlapping, not empty, each with
 * the position of its data (src, from the member's data offset), inside the file's real size.
 * Odd maps are read as bsdtar reads them, where GNU tar 1.34 gives up or writes bytes of the
 * next header into the file: out of order or overlapping (later extents win), extents past
 * the real size (cut there), more stored data than the map needs (the rest ignored), less
 * (what is missing reads as zeros, with a warning).  *real: the real size when have_real,
 * else set to the end of the last extent.  0, -EINVAL (damaged, logged) or -ENOMEM. */
int tar_sparse_finish(struct parser *p, uint64_t *real, bool have_real, uint64_t stored)
{
	uint64_t end = 0, src = 0, max_end = 0;
	bool sorted = true;
	size_t out = 0;

	for (size_t i = 0; i < p->nsp; i++) {
		struct member_sparse *e = &p->sp[i];

		if (e->len > UINT64_MAX - e->off || e->len > UINT64_MAX - src)
			return tar_damage(p, "sparse extents out of range");
		e->src = src;
		src += e->len;
		if (e->off + e->len > max_end)
			max_end = e->off + e->len;
		if (e->len && e->off < end)
			sorted = false;
		if (e->len)
			end = e->off + e->len;
	}
	if (!have_real)
		*real = max_end;
	if (*real > INT64_MAX)
		return tar_damage(p, "sparse file size out of range");
	if (src < stored)
		tfs_log(TFS_LOG_NOTICE,
			"tar: sparse member at offset %" PRIu64 ": %" PRIu64
			" bytes of data beyond its map ignored",
			p->m_off, stored - src);
	else if (src > stored)
		tfs_log(TFS_LOG_WARNING,
			"tar: sparse member at offset %" PRIu64 ": its map needs %" PRIu64
			" bytes of data but %" PRIu64 " are stored: the rest reads as zeros",
			p->m_off, src, stored);
	if (max_end > *real)
		tfs_log(TFS_LOG_NOTICE,
			"tar: sparse member at offset %" PRIu64
			": extents past its size of %" PRIu64 " ignored",
			p->m_off, *real);
	/* cut to the stored data and to the real size */
	for (size_t i = 0; i < p->nsp; i++) {
		struct member_sparse e = p->sp[i];

		if (e.src >= stored || e.off >= *real)
			continue;
		if (e.len > stored - e.src)
			e.len = stored - e.src;
		if (e.len > *real - e.off)
			e.len = *real - e.off;
		if (e.len)
			p->sp[out++] = e;
	}
	p->nsp = out;
	if (!sorted) {
		tfs_log(TFS_LOG_NOTICE,
			"tar: sparse member at offset %" PRIu64
			": map out of order or overlapping, later extents win",
			p->m_off);
		return sparse_sort(p);
	}
	return 0;
}
