/* A shadow made for an index that has none (see shadow_make.h).
 *
 * The streams the mode wants are listed from the index (those it checks by segment CRCs:
 * decoded while indexing), each decoded again from the start with its codec's scan (no sink:
 * the index has the checkpoints), and its bytes written to the shadow cut at the index's own
 * checkpoints and segment size -- so that the frames fit the CRCs the index holds, whatever
 * the codec's scan would choose today.  The reader checks every segment against them, as for
 * any shadow: a stream decoded differently is refused when read, never returned.
 */
#include "index/shadow_make.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codecs/codec.h"
#include "codecs/zstd/zstd_seekable.h"
#include "common/byteio.h"
#include "common/log.h"
#include "containers/zip.h"
#include "index/db.h"
#include "seek/segment.h"

#define SM_STEP ((size_t)1 << 20)

uint64_t idx_shadow_id(sqlite3 *db, const char *index_path)
{
	char *s = db_meta_get(db, "shadow_id");
	uint8_t seal[4];
	uint64_t id = 0;
	FILE *f;

	if (s) {
		id = strtoull(s, NULL, 16);
		free(s);
		return id;
	}
	f = fopen(index_path, "rb");
	if (!f)
		return 0;
	if (fseek(f, 60, SEEK_SET) == 0 && fread(seal, 1, 4, f) == 4 && fseek(f, 0, SEEK_END) == 0)
		id = 1ull << 63 | (uint64_t)be32(seal) << 31 | ((uint64_t)ftell(f) & 0x7fffffff);
	fclose(f);
	return id;
}

static int no_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	(void)opaque, (void)ck, (void)aux, (void)auxlen;
	return 0;
}

/* A stream of the index the shadow may hold. */
struct sm_stream {
	uint64_t id, coff, clen, usize;
	const struct codec *codec;
	unsigned shift;
	bool ziplocal;
	void *params;
	size_t params_len;
};

#if HAVE_SHADOW
/* Whether a zstd window has a seek table of small frames (seekable already). */
static bool small_frames(struct src *in)
{
	struct zsk_table *t = NULL;
	uint64_t sum = 0, n = 0;

	if (zsk_table_read(in, &t) < 0 || !t)
		return false;
	for (uint64_t i = 0; i < t->n; i++) {
		sum += t->dsize[i];
		n += t->dsize[i] != 0;
	}
	zsk_table_free(t);
	return n && sum / n <= ((uint64_t)1 << 20);
}

/* The index's checkpoint offsets of stream id, in order, malloc'd. */
static int ckpt_offsets(sqlite3 *db, uint64_t id, uint64_t **out, size_t *n)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int rc, err = db_prepare(db, "SELECT uoff FROM checkpoints WHERE stream = ?1 ORDER BY idx",
				 &st);

	*out = NULL;
	*n = 0;
	if (err)
		return err;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			uint64_t *p = realloc(*out, cap * sizeof(*p));
			if (!p) {
				sqlite3_finalize(st);
				return -ENOMEM;
			}
			*out = p;
		}
		(*out)[(*n)++] = (uint64_t)sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

/* Decodes stream s of the archive into the shadow (w), cut at the index's checkpoints.
 * 0 (the stream is in the shadow, or left out after a decode error), -ECANCELED, -errno. */
static int one_stream(sqlite3 *db, struct src *archive, const char *name,
		      const struct sm_stream *s, struct shadow_writer *w, const atomic_bool *stop)
{
	struct codec_sink sink = {.checkpoint = no_ckpt};
	struct codec_opts co = {.threads = 1, .params = s->params, .params_len = s->params_len};
	struct codec_scan *scan = NULL;
	struct shadow_stream *h = NULL;
	struct src *win = NULL;
	uint64_t *ck = NULL, start = s->coff, pos = 0;
	size_t nck = 0, next = 0;
	uint8_t *buf = malloc(SM_STEP);
	int err = buf ? ckpt_offsets(db, s->id, &ck, &nck) : -ENOMEM;

	if (!err && s->ziplocal)
		err = zip_local_data(archive, s->coff, name, &start);
	if (!err && !(win = src_window(archive, start, s->clen)))
		err = -ENOMEM;
	if (!err && s->codec->scan_new(win, &co, &sink, &scan) < 0)
		err = -EIO;
	if (!err)
		h = shadow_stream_begin(w, s->id, s->shift);
	while (!err && h) {
		if (stop && atomic_load(stop)) {
			err = -ECANCELED;
			break;
		}
		ssize_t n = s->codec->scan_read(scan, buf, SM_STEP);
		if (n <= 0) {
			if (n < 0 || pos != s->usize)
				err = -EIO;
			break;
		}
		for (size_t at = 0; at < (size_t)n;) {
			if (next < nck && ck[next] == pos) {
				shadow_chunk(h);
				next++;
			}
			size_t m = (size_t)n - at;
			if (next < nck && ck[next] - pos < m)
				m = (size_t)(ck[next] - pos);
			shadow_write(h, buf + at, m);
			at += m;
			pos += m;
		}
	}
	if (h && !err)
		shadow_stream_end(h, s->usize);
	else
		shadow_stream_drop(h);
	if (err == -EIO) {
		tfs_log(TFS_LOG_NOTICE, "%s: stream %" PRIu64 " could not be decoded again: the "
			"shadow is made without it", name, s->id);
		err = 0;
	}
	if (s->codec && scan)
		s->codec->scan_free(scan);
	src_free(win);
	free(ck);
	free(buf);
	return err;
}

/* The streams of the index that the mode wants in a shadow, malloc'd. */
static int wanted_streams(sqlite3 *db, struct src *archive, enum shadow_mode mode,
			  struct sm_stream **out, size_t *n)
{
	sqlite3_stmt *st;
	size_t cap = 0;
	int rc, err = db_prepare(db, "SELECT id, codec, coff, clen, usize, crcs, flags, params "
				 "FROM streams ORDER BY id", &st);

	*out = NULL;
	*n = 0;
	if (err)
		return err;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int crcs = sqlite3_column_int(st, 5);
		const char *cname = (const char *)sqlite3_column_text(st, 1);
		const struct codec *c = cname ? codec_by_name(cname) : NULL;
		struct sm_stream s = {.id = (uint64_t)sqlite3_column_int64(st, 0),
				      .coff = (uint64_t)sqlite3_column_int64(st, 2),
				      .clen = (uint64_t)sqlite3_column_int64(st, 3),
				      .usize = (uint64_t)sqlite3_column_int64(st, 4),
				      .codec = c,
				      .shift = crcs == IDX_CRCS_SEGMENTS_FINE ? SEG_SHIFT_FINE : SEG_SHIFT,
				      .ziplocal = (sqlite3_column_int(st, 6) & IDX_S_ZIPLOCAL) != 0};
		if (!c || !s.usize || (sqlite3_column_int(st, 6) & IDX_S_CRYPT) ||
		    (crcs != IDX_CRCS_SEGMENTS && crcs != IDX_CRCS_SEGMENTS_FINE))
			continue; /* decoded whole at its first read (an encrypted entry too: no
				     plaintext is ever written beside the index), or checked by
				     its codec */
		if (sqlite3_column_int(st, 6) & IDX_S_SECRET)
			continue; /* decrypted bytes are never written beside the index */
		if (s.coff > src_size(archive) || s.clen > src_size(archive) - s.coff)
			continue;
		struct src *win = strcmp(c->name, "zstd") == 0 && !s.ziplocal
					  ? src_window(archive, s.coff, s.clen) : NULL;
		bool want = shadow_wanted(mode, c->name, win && small_frames(win));
		src_free(win);
		if (!want)
			continue;
		if (sqlite3_column_type(st, 7) == SQLITE_BLOB) {
			s.params_len = (size_t)sqlite3_column_bytes(st, 7);
			s.params = malloc(s.params_len ? s.params_len : 1);
			if (!s.params) {
				err = -ENOMEM;
				break;
			}
			memcpy(s.params, sqlite3_column_blob(st, 7), s.params_len);
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 8;
			struct sm_stream *p = realloc(*out, cap * sizeof(*p));
			if (!p) {
				free(s.params);
				err = -ENOMEM;
				break;
			}
			*out = p;
		}
		(*out)[(*n)++] = s;
	}
	sqlite3_finalize(st);
	return err ? err : rc == SQLITE_DONE ? 0 : -EIO;
}
#endif

int idx_shadow_make(const char *index_path, struct src *archive, const char *name,
		    const struct idx_shadow_make_opts *o)
{
#if HAVE_SHADOW
	struct sm_stream *ss = NULL;
	struct shadow_writer *w = NULL;
	struct shadow *sh = NULL;
	sqlite3 *db = NULL;
	char *path = NULL, *fp = NULL;
	size_t n = 0;
	uint64_t id;
	int err;

	if (o->mode == SHADOW_NEVER)
		return 0;
	err = db_open_ro(index_path, &db);
	if (err)
		return err;
	id = idx_shadow_id(db, index_path);
	fp = db_meta_get(db, "fingerprint");
	path = shadow_path(index_path);
	if (!fp || !path || !id) {
		err = !path ? -ENOMEM : -EIO;
		goto out;
	}
	if (shadow_open(path, id, fp, &sh) == 0) { /* it has one */
		shadow_close(sh);
		goto out;
	}
	err = wanted_streams(db, archive, o->mode, &ss, &n);
	if (err || !n)
		goto out;
	uint64_t budget = shadow_budget(path, o->max);
	struct shadow_wopts wo = {.id = id, .name = name, .threads = o->threads,
				  .level = o->level, .max_bytes = budget};
	if (!budget) {
		tfs_log(TFS_LOG_NOTICE, "%s: no shadow is kept (no room beside its index)", name);
		goto out;
	}
	if (shadow_writer_new(path, &wo, &w) < 0)
		goto out; /* logged */
	for (size_t i = 0; !err && i < n && shadow_writer_ok(w); i++)
		err = one_stream(db, archive, name, &ss[i], w, o->stop);
	if (!err && shadow_writer_finish(w, fp) == 0)
		err = 1;
out:
	shadow_writer_free(w);
	for (size_t i = 0; i < n; i++)
		free(ss[i].params);
	free(ss);
	free(fp);
	free(path);
	sqlite3_close(db);
	return err;
#else
	(void)index_path, (void)archive, (void)name, (void)o;
	return 0;
#endif
}
