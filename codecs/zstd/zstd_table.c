/* The seekable format's seek table (read and checked once per scan or decoder), and where the
 * checkpoints of a zstd file go (frames under 1 MiB are grouped into one chunk).  See zstd.c. */
#include "codecs/zstd/zstd_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"

/* ---- The seek table ------------------------------------------------------------------------ */

void zs_table_free(struct zs_table *t)
{
	if (!t)
		return;
	free(t->ent);
	free(t);
}

/* Reads the seek table at the end of the file, if there is a valid one.  0 with *out set or
 * NULL (none, or an invalid one: noted, the frames are then found by walking), or -ENOMEM /
 * a read error. */
int zs_table_read(struct src *in, struct zs_table **out)
{
	uint64_t size = src_size(in), tsize, toff, sum = 0;
	uint8_t f[ZS_SEEK_FOOTER], sh[8];
	const char *why = NULL;
	struct zs_table *t;
	uint32_t n;
	unsigned esz;
	ssize_t r;
	int err;

	*out = NULL;
	if (size == SRC_SIZE_UNKNOWN || size < 8 + ZS_SEEK_FOOTER)
		return 0;
	r = src_pread(in, f, sizeof(f), size - sizeof(f));
	if (r < 0)
		return (int)r;
	if ((size_t)r < sizeof(f) || le32(f + 5) != ZS_SEEK_MAGIC)
		return 0;
	n = le32(f);
	esz = f[4] & 0x80 ? 12 : 8;
	tsize = (uint64_t)n * esz + ZS_SEEK_FOOTER;
	toff = tsize + 8 <= size ? size - tsize - 8 : 0;
	if (f[4] & 0x7c)
		why = "reserved bits set in its descriptor";
	else if (n > ZS_SEEK_MAX_FRAMES)
		why = "too many frames for this reader";
	else if (tsize + 8 > size)
		why = "it is larger than the file";
	if (why)
		goto invalid;
	r = src_pread(in, sh, sizeof(sh), toff);
	if (r < 0)
		return (int)r;
	if ((size_t)r < sizeof(sh) || le32(sh) != ZS_SEEK_SKIP_MAGIC || le32(sh + 4) != tsize) {
		why = "its skippable frame header does not match";
		goto invalid;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->n = n;
	t->esz = esz;
	t->sums = esz == 12;
	t->off = toff;
	t->ent = malloc(n ? (size_t)n * esz : 1);
	if (!t->ent) {
		err = -ENOMEM;
		goto fail;
	}
	err = src_pread_full(in, t->ent, (size_t)n * esz, toff + 8);
	if (err)
		goto fail;
	for (uint64_t i = 0; i < n; i++)
		sum += zs_tab_csize(t, i);
	if (sum != toff) {
		why = "its frame sizes do not add up to its offset";
		zs_table_free(t);
		goto invalid;
	}
	TFS_DEBUG("zstd: seek table of %" PRIu32 " frames%s", n, t->sums ? " with checksums" : "");
	*out = t;
	return 0;
fail:
	zs_table_free(t);
	return err;
invalid:
	tfs_log(
	    TFS_LOG_WARNING,
	    "zstd: ignoring the seek table at the end of the file (its footer at offset %" PRIu64
	    "): %s; finding the frames by their headers instead",
	    size - ZS_SEEK_FOOTER, why);
	return 0;
}

/* The entries aux carries for a chunk whose first frame is entry `first`: up to its last frame
 * with data, by the chunk rule (see the top of the file).  They are contiguous in the table. */
static void zs_tab_aux(const struct zs_table *t, uint64_t first, const void **aux, size_t *auxlen)
{
	uint64_t u = 0, last = first;

	for (uint64_t j = first; j < t->n; j++) {
		uint32_t d = zs_tab_dsize(t, j);

		if (d && u >= ZS_CHUNK_MIN)
			break;
		if (d) {
			last = j;
			u += d;
		}
	}
	*aux = t->ent + first * t->esz;
	*auxlen = (size_t)(last - first + 1) * t->esz;
}

/* ---- Where checkpoints go ------------------------------------------------------------------ */

/* The zstd frame f starts at decoded offset uoff. */
void zs_chunk_frame(struct zs_chunker *c, const struct zs_fdesc *f, uint64_t uoff)
{
	if (!c->pending && (!c->have || uoff - c->last >= ZS_CHUNK_MIN)) {
		c->pending = true;
		c->pend = *f;
	}
}

/* A frame's first decoded byte, at uoff: true with *ck (and the aux blob, if any) if it starts
 * a chunk. */
bool zs_chunk_data(struct zs_chunker *c, const struct zs_table *tab, uint64_t uoff,
		   struct codec_ckpt *ck, const void **aux, size_t *auxlen)
{
	*aux = NULL;
	*auxlen = 0;
	if (!c->pending)
		return false;
	memset(ck, 0, sizeof(*ck));
	ck->uoff = uoff;
	ck->coff = c->pend.coff;
	ck->flags = c->pend.number < UINT32_MAX ? (uint32_t)c->pend.number : UINT32_MAX;
	if (tab && tab->sums && c->pend.tix != ZS_UNKNOWN) {
		ck->bits = ZS_CK_TABLE;
		zs_tab_aux(tab, c->pend.tix, aux, auxlen);
	}
	c->pending = false;
	c->have = true;
	c->last = uoff;
	return true;
}
