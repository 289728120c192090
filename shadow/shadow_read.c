/* Reading a shadow (see shadow.h): its seek table and its map, checked against each other and
 * against the index that asks, then each stream's frames as checkpoints of codec_zstd.
 *
 * What is checked here is the structure: the seek table adds up to the file (zstd_seekable.c),
 * its last entry is the map frame, the map's CRC, identity, and streams that lie inside the
 * table with frames adding up to their sizes.  The bytes are checked when read: each frame's
 * XXH64 by the zstd decoder, each segment's CRC by the reader (seek/reader.c).
 */
#include "shadow/shadow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "codecs/zstd/zstd_seekable.h"
#include "common/byteio.h"

#define SR_MAP_MAX ((uint64_t)64 << 20) /* a larger map is not a shadow of ours */

struct sr_stream {
	uint64_t id, usize;
	uint32_t shift;
	uint32_t nframes;
	const uint8_t *runs; /* nruns x (u32 first, u32 count), in the map */
	uint32_t nruns;
};

struct shadow {
	struct src *file;
	uint8_t *map; /* the map's payload (the streams point into it) */
	struct zsk_table *tab;
	uint64_t *coff; /* per frame, where it starts */
	struct sr_stream *streams; /* by id */
	size_t nstreams;
};

static int by_id(const void *a, const void *b)
{
	uint64_t x = ((const struct sr_stream *)a)->id, y = ((const struct sr_stream *)b)->id;

	return x < y ? -1 : x > y;
}

/* Parses the map's payload p[0..n) (kept by sh).  0, -ESTALE (not this index's), -EIO
 * (damaged). */
static int parse_map(struct shadow *sh, const uint8_t *p, size_t n, uint64_t id, const char *fp)
{
	uint64_t fpl, ns, at, frames = sh->tab->n - 1; /* the map is the last */

	if (n < 8 + 4 + 4 + 8 + 4 + 4 + 4 || memcmp(p, SHADOW_MAGIC, 8) != 0)
		return -EIO;
	if (le32(p + 8) != SHADOW_VERSION)
		return -ESTALE; /* another version: made again */
	if (le32(p + 12) != n || le32(p + n - 4) != (uint32_t)crc32(0, p, (uInt)(n - 4)))
		return -EIO;
	fpl = le32(p + 24);
	if (28 + fpl + 4 + 4 > n)
		return -EIO;
	if ((id && le64(p + 16) != id) || (fp && (fpl != strlen(fp) || memcmp(p + 28, fp, fpl))))
		return -ESTALE;
	ns = le32(p + 28 + fpl);
	at = 28 + fpl + 4;
	if (ns > (n - at) / 24)
		return -EIO;
	sh->streams = calloc(ns ? ns : 1, sizeof(*sh->streams));
	if (!sh->streams)
		return -ENOMEM;
	for (uint64_t i = 0; i < ns; i++) {
		struct sr_stream *s = &sh->streams[i];
		if (at + 24 > n - 4)
			return -EIO;
		*s = (struct sr_stream){.id = le64(p + at), .usize = le64(p + at + 8),
					.shift = le32(p + at + 16), .nruns = le32(p + at + 20)};
		at += 24;
		if (s->nruns > (n - 4 - at) / 8)
			return -EIO;
		s->runs = p + at;
		at += (uint64_t)s->nruns * 8;
		uint64_t sum = 0, frames_in = 0, last_end = 0;
		for (uint32_t r = 0; r < s->nruns; r++) {
			uint64_t first = le32(s->runs + 8 * r), count = le32(s->runs + 8 * r + 4);
			if (first < last_end || first + count > frames)
				return -EIO; /* runs in order, inside the table */
			for (uint64_t k = first; k < first + count; k++)
				sum += sh->tab->dsize[k];
			frames_in += count;
			last_end = first + count;
		}
		if (sum != s->usize || frames_in > UINT32_MAX || s->shift < 16 || s->shift > 20)
			return -EIO;
		s->nframes = (uint32_t)frames_in;
	}
	if (at != n - 4)
		return -EIO;
	sh->nstreams = ns;
	qsort(sh->streams, ns, sizeof(*sh->streams), by_id);
	for (size_t i = 1; i < ns; i++)
		if (sh->streams[i].id == sh->streams[i - 1].id)
			return -EIO;
	return 0;
}

/* The map frame: the seek table's last entry.  0 or -errno as shadow_open. */
static int read_map(struct shadow *sh, uint64_t id, const char *fp)
{
	const struct zsk_table *t = sh->tab;
	uint64_t last, off;
	uint8_t hdr[8], *p;
	int err;

	if (t->n == 0 || t->dsize[t->n - 1] != 0)
		return -EIO;
	last = t->csize[t->n - 1];
	if (last < 8 || last - 8 > SR_MAP_MAX)
		return -EIO;
	off = sh->coff[t->n - 1];
	err = src_pread_full(sh->file, hdr, sizeof(hdr), off);
	if (err)
		return err == -ENOMEM ? err : -EIO;
	if (le32(hdr) != (0x184D2A50u | SHADOW_MAP_NIBBLE) || le32(hdr + 4) != last - 8)
		return -EIO;
	p = malloc((size_t)(last - 8) + 1);
	if (!p)
		return -ENOMEM;
	sh->map = p;
	err = src_pread_full(sh->file, p, (size_t)(last - 8), off + 8);
	if (!err)
		err = parse_map(sh, p, (size_t)(last - 8), id, fp);
	else if (err != -ENOMEM)
		err = -EIO;
	return err;
}

int shadow_open_src(struct src *file, uint64_t id, const char *fingerprint, struct shadow **out)
{
	struct shadow *sh;
	int err;

	*out = NULL;
	sh = calloc(1, sizeof(*sh));
	if (!sh) {
		src_free(file);
		return -ENOMEM;
	}
	sh->file = file;
	err = zsk_table_read(sh->file, &sh->tab);
	if (!err && !sh->tab)
		err = -EIO; /* no valid seek table: cut short, or not a shadow */
	if (err)
		goto fail;
	sh->coff = malloc((sh->tab->n ? sh->tab->n : 1) * sizeof(*sh->coff));
	if (!sh->coff) {
		err = -ENOMEM;
		goto fail;
	}
	uint64_t c = 0;
	for (uint64_t i = 0; i < sh->tab->n; i++) {
		sh->coff[i] = c;
		c += sh->tab->csize[i];
	}
	err = read_map(sh, id, fingerprint);
	if (err)
		goto fail;
	*out = sh;
	return 0;
fail:
	if (err != -ENOMEM && err != -ESTALE)
		err = -EIO;
	shadow_close(sh);
	return err;
}

int shadow_open(const char *path, uint64_t id, const char *fingerprint, struct shadow **out)
{
	struct src *file;
	int err = src_open_file(path, &file);

	*out = NULL;
	if (err)
		return err == -ENOENT || err == -ENOMEM || err == -EACCES ? err : -EIO;
	return shadow_open_src(file, id, fingerprint ? fingerprint : "", out);
}

int shadow_stream_ckpts(struct shadow *sh, uint64_t stream_id, uint64_t usize, unsigned seg_shift,
			struct codec_ckpt **ckpts, size_t *n)
{
	struct sr_stream key = {.id = stream_id}, *s;
	struct codec_ckpt *ck;
	uint64_t u = 0;

	*ckpts = NULL;
	*n = 0;
	s = bsearch(&key, sh->streams, sh->nstreams, sizeof(*sh->streams), by_id);
	if (!s)
		return -ENOENT;
	if (s->usize != usize || s->shift != (seg_shift ? seg_shift : 20))
		return -EIO;
	ck = malloc((s->nframes ? s->nframes : 1) * sizeof(*ck));
	if (!ck)
		return -ENOMEM;
	size_t k = 0;
	for (uint32_t r = 0; r < s->nruns; r++) {
		uint64_t first = le32(s->runs + 8 * r), count = le32(s->runs + 8 * r + 4);
		for (uint64_t f = first; f < first + count; f++, k++) {
			ck[k] = (struct codec_ckpt){
			    .uoff = u,
			    .ulen = sh->tab->dsize[f],
			    .coff = sh->coff[f],
			    .clen = sh->tab->csize[f], /* one frame: codec_zstd reads it whole */
			    .flags = f + 1 > UINT32_MAX ? UINT32_MAX : (uint32_t)(f + 1)};
			u += sh->tab->dsize[f];
		}
	}
	*ckpts = ck;
	*n = s->nframes;
	return 0;
}

struct src *shadow_src(struct shadow *sh)
{
	return sh->file;
}

size_t shadow_nstreams(const struct shadow *sh)
{
	return sh->nstreams;
}

void shadow_stream_info(const struct shadow *sh, size_t i, uint64_t *id, uint64_t *usize,
			unsigned *seg_shift)
{
	*id = sh->streams[i].id;
	*usize = sh->streams[i].usize;
	*seg_shift = sh->streams[i].shift;
}

uint64_t shadow_size(const struct shadow *sh)
{
	return src_size(sh->file);
}

void shadow_close(struct shadow *sh)
{
	if (!sh)
		return;
	zsk_table_free(sh->tab);
	src_free(sh->file);
	free(sh->map);
	free(sh->coff);
	free(sh->streams);
	free(sh);
}
