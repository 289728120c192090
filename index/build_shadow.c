/* The shadow of a build (see build_int.h and shadow/shadow.h): which streams get one, the
 * writer made at the first of them, each stream's bytes tapped from the indexing pass
 * (stream.c's tap, called as the bytes are checksummed), and the end: the map written, the
 * file renamed into place, its id recorded in the index.
 *
 * A shadowed stream gets 64 KiB segments (SEG_SHIFT_FINE), whatever its codec: its reads then
 * decode one frame of the shadow (a few segments) and check only what they return.
 */
#include "index/build_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "codecs/zstd/zstd_seekable.h"
#include "common/env.h"
#include "common/log.h"
#include "index/db.h"
#include "index/stamp.h"
#include "seek/segment.h"

#define ZSTD_SMALL_FRAMES ((uint64_t)1 << 20) /* seekable zstd: a shadow already */

void bld_shadow_init(struct bld_shadow *s, const struct idx_input *in,
		     const struct idx_build_opts *o)
{
	*s = (struct bld_shadow){.path = in->shadow_path,
				 .name = in->name,
				 .mode = o->shadow,
				 .max = o->shadow_max,
				 .threads = o->threads ? o->threads : 1,
				 .later_min = o->shadow_later,
				 .store_min = env_number("TARSEEK_SHADOW_STORE_MIN", SHADOW_STORE_MIN,
							 0, UINT64_MAX)};
}

/* A zstd file whose seek table lists frames of ZSTD_SMALL_FRAMES or less on average. */
static bool zstd_small_frames(struct src *in)
{
	struct zsk_table *t = NULL;
	uint64_t sum = 0, n = 0;

	if (!in || zsk_table_read(in, &t) < 0 || !t)
		return false;
	for (uint64_t i = 0; i < t->n; i++) {
		sum += t->dsize[i];
		n += t->dsize[i] != 0;
	}
	zsk_table_free(t);
	return n && sum / n <= ZSTD_SMALL_FRAMES;
}

bool bld_shadow_later(struct bld_shadow *s, const struct codec *c, struct src *in)
{
#if HAVE_SHADOW
	/* its decoder holds every core: compressing the shadow now would delay the mount */
	if (!s || !s->path || s->failed || !s->later_min || s->mode != SHADOW_AUTO || !c ||
	    !c->scan_holds_cores || s->threads < 2 || src_size(in) < s->later_min)
		return false;
	tfs_log(TFS_LOG_INFO, "%s: its shadow is made after the mount", s->name);
	s->later = true;
	return true;
#else
	(void)s, (void)c, (void)in;
	return false;
#endif
}

bool bld_shadow_wants(struct bld_shadow *s, const struct codec *c, struct src *in)
{
#if HAVE_SHADOW
	if (!s || !s->path || s->failed || !c)
		return false;
	if (!shadow_wanted(s->mode, c->name,
			   strcmp(c->name, "zstd") == 0 && zstd_small_frames(in)))
		return false;
	if (!s->w) {
		struct shadow_wopts wo = {.name = s->name, .threads = s->threads};
		uint64_t budget = shadow_budget(s->path, s->max);
		if (!budget) {
			tfs_log(TFS_LOG_NOTICE, "%s: no shadow is kept (no room beside its index)",
				s->name);
			s->failed = true;
			return false;
		}
		if (shadow_store_only(c->name, src_size(in), s->store_min)) {
			wo.threads = 0; /* its decoder holds the cores: see shadow.h */
			tfs_log(TFS_LOG_INFO, "%s: its shadow is stored as it is decoded, "
				"uncompressed (%s decodes faster than the shadow would be compressed)",
				s->name, c->name);
		}
		s->id = shadow_new_id();
		wo.id = s->id;
		wo.max_bytes = budget;
		if (shadow_writer_new(s->path, &wo, &s->w) < 0) { /* logged */
			s->failed = true;
			return false;
		}
	}
	return true;
#else
	(void)s, (void)c, (void)in;
	return false;
#endif
}

#if HAVE_SHADOW
static void tap_chunk(void *t)
{
	shadow_chunk(t);
}

static void tap_bytes(void *t, const void *p, size_t len)
{
	shadow_write(t, p, len);
}
#endif

struct shadow_stream *bld_shadow_tap(struct bld_shadow *s, uint64_t id, struct cstream_sink *sink)
{
#if HAVE_SHADOW
	struct shadow_stream *h = s && s->w ? shadow_stream_begin(s->w, id, SEG_SHIFT_FINE) : NULL;

	if (h) {
		sink->seg_shift = SEG_SHIFT_FINE;
		sink->tap_chunk = tap_chunk;
		sink->tap_bytes = tap_bytes;
		sink->tap = h;
	}
	return h;
#else
	(void)s, (void)id, (void)sink;
	return NULL;
#endif
}

void bld_shadow_end(struct shadow_stream *h, bool keep, uint64_t usize)
{
#if HAVE_SHADOW
	if (keep)
		shadow_stream_end(h, usize);
	else
		shadow_stream_drop(h);
#else
	(void)h, (void)keep, (void)usize;
#endif
}

int bld_shadow_finish(struct bld_shadow *s, sqlite3 *db, struct src *archive,
		      struct idx_build_stats *st)
{
#if HAVE_SHADOW
	struct shadow_wstats ws;
	char fp[64], id[24];
	int err;

	if (!s || !s->w)
		return 0;
	shadow_writer_stats(s->w, &ws);
	if (!ws.streams || !shadow_writer_ok(s->w)) {
		shadow_writer_free(s->w); /* nothing in it, or it failed (logged) */
		s->w = NULL;
		return 0;
	}
	err = idx_fingerprint(archive, fp, sizeof(fp));
	if (err)
		return err;
	if (shadow_writer_finish(s->w, fp) < 0) {
		shadow_writer_free(s->w);
		s->w = NULL;
		return 0;
	}
	shadow_writer_stats(s->w, &ws);
	shadow_writer_free(s->w);
	s->w = NULL;
	tfs_log(TFS_LOG_INFO, "%s: its shadow: %" PRIu64 " bytes for %" PRIu64 " decoded, %" PRIu64
		" frames, %" PRIu64 " of them stored uncompressed", s->name, ws.written, ws.decoded,
		ws.frames, ws.stored_frames);
	snprintf(id, sizeof(id), "%016" PRIx64, s->id);
	st->shadow_bytes = ws.written;
	st->shadow_decoded = ws.decoded;
	return db_meta_set(db, "shadow_id", id);
#else
	(void)s, (void)db, (void)archive, (void)st;
	return 0;
#endif
}

void bld_shadow_free(struct bld_shadow *s)
{
#if HAVE_SHADOW
	if (s && s->w) {
		shadow_writer_free(s->w);
		s->w = NULL;
	}
#else
	(void)s;
#endif
}
