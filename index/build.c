/* The indexing pass (see build.h).
 *
 * Plain tar: the tar parser reads only headers from the file (member data is skipped by
 * offset), so a 2 GB archive of 85k members costs 85k small preads.  Compressed: the codec's
 * scan decodes the whole file once through a forward-only stream (seek/stream.c); the
 * parser reads it exactly as a plain tar while the stream records checkpoints and segment
 * CRCs.  A compressed file whose content is not a tar becomes a single-file archive.
 *
 * Entries: each member becomes a row through the row writer (build_rows.c), which resolves
 * its path in an in-memory path map: missing parents created, a repeated path a new
 * version, a repeated directory updated in place, hard links resolved to the row holding
 * the data.  nlink is computed at the end.  Containers (zip, 7z, ...) are build_cont.c's;
 * progress is told to the caller by build_progress.c (the front ends draw the line).
 *
 * Damage: whatever the parser and the codec could not verify is not indexed; the index
 * keeps the members whose data lies entirely in verified decoded data, and says so.
 */
#include "index/build.h"
#include "index/build_int.h"

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codecs/codec.h"
#include "seek/segment.h"
#include "seek/stream.h"
#include "common/clock.h"
#include "common/log.h"
#include "index/db.h"
#include "index/pathmap.h"
#include "index/stamp.h"
#include "containers/tar/tar.h"

#define ZEROS_TAR_MAX (1ull << 20) /* larger all-zero compressed files are single files */

static void on_progress(void *opaque, uint64_t off)
{
	bld_progress(opaque, false);
}

static int on_ckpt(void *opaque, uint64_t idx, const struct codec_ckpt *ck, const void *aux,
		   size_t auxlen, const uint32_t *crcs, uint64_t ncrcs)
{
	return bld_store_ckpt(opaque, IDX_STREAM, idx, ck, aux, auxlen, true, crcs, ncrcs);
}

/* Checkpoints from a codec's index_blocks: no segment CRCs (the codec checks every block). */
static int on_direct_ckpt(void *opaque, const struct codec_ckpt *ck, const void *aux, size_t auxlen)
{
	struct builder *b = opaque;

	return bld_store_ckpt(b, IDX_STREAM, b->nckpt, ck, aux, auxlen, false, NULL, 0);
}

/* The segment size of the stream of a compressed tar or file: 64 KiB for gzip, whose chunks
 * are a few hundred KiB (a read then decodes from its checkpoint to the end of what it wants,
 * plus less than a segment), 1 MiB for the others, whose blocks are decoded whole anyway or
 * are megabytes long.  The stream's crcs says which (db.h). */
static unsigned stream_seg_shift(const struct codec *c)
{
	return strcmp(c->name, "gzip") == 0 ? SEG_SHIFT_FINE : SEG_SHIFT;
}

/* A single compressed file indexed from its block metadata, without decoding.  1 if done,
 * 0 if the codec cannot (the caller scans instead), or -errno. */
static int index_fast(struct builder *b, const struct codec *codec, struct src *file,
		      const struct codec_opts *co, uint64_t *usize)
{
	struct codec_sink ds = {.checkpoint = on_direct_ckpt, .opaque = b};
	int err;

	if (!codec->index_blocks)
		return 0;
	err = codec->index_blocks(file, co, &ds, usize);
	if (err == 0)
		return 1;
	if (err == -ENOMEM)
		return err;
	/* -ENOTSUP (no per-block checks) or damaged metadata: a full scan decides */
	b->nckpt = 0;
	err = db_exec(b->db, "DELETE FROM checkpoints");
	return err ? err : 0;
}

/* Post-pass fixes: nlink of directories and hard-link targets. */
static int idx_finish_entries(sqlite3 *db)
{
	int err = db_exec(db,
		"CREATE TEMP TABLE subdirs (id INTEGER PRIMARY KEY, n INTEGER);"
		"INSERT INTO subdirs SELECT parent, count(*) FROM entries"
		" WHERE latest = 1 AND ((mode & 61440) = 16384 OR (flags & 8)) GROUP BY parent;"
		"UPDATE entries SET nlink = 2 + coalesce((SELECT n FROM subdirs WHERE subdirs.id ="
		" entries.id), 0) WHERE (mode & 61440) = 16384;"
		"CREATE TEMP TABLE links (id INTEGER PRIMARY KEY, n INTEGER);"
		"INSERT INTO links SELECT target, count(*) FROM entries"
		" WHERE target IS NOT NULL AND latest = 1 GROUP BY target;"
		"UPDATE entries SET nlink = latest + (SELECT n FROM links WHERE links.id = entries.id)"
		" WHERE id IN (SELECT id FROM links);"
		"DROP TABLE subdirs; DROP TABLE links;");
	return err;
}

/* Drops what lies past the trusted decoded size after damage, and fixes 'latest'. */
static int drop_untrusted(struct builder *b, uint64_t limit)
{
	sqlite3_stmt *st;
	int err = db_prepare(b->db,
			     "DELETE FROM entries WHERE id != 1 AND (hdr_off >= ?1 OR data_off + stored > ?1)",
			     &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)limit);
	err = bld_step_done(st);
	sqlite3_finalize(st);
	if (!err)
		err = db_exec(b->db,
			      "DELETE FROM entries WHERE target IS NOT NULL AND target NOT IN (SELECT id FROM entries);"
			      "DELETE FROM sparse WHERE id NOT IN (SELECT id FROM entries);"
			      "DELETE FROM xattrs WHERE id NOT IN (SELECT id FROM entries);"
			      "UPDATE entries SET latest = (version = (SELECT max(version) FROM entries e2"
			      " WHERE e2.parent = entries.parent AND e2.name = entries.name));");
	return err;
}

static int prepare_all(struct builder *b)
{
	int err = 0;

	err = err ? err : db_prepare(b->db,
		"INSERT INTO entries (id, parent, name, version, latest, mode, target, size, stored,"
		" data_off, hdr_off, uid, gid, mtime, mtime_nsec, rdev, nlink, link, uname, gname, flags,"
		" stream, crc32, unreadable, why) VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?7, ?8, ?9, ?10,"
		" ?11, ?12, ?13, ?19, ?14, 1, ?15, ?16, ?17, ?18, ?20, ?21, ?22, ?23)", &b->ins_entry);
	err = err ? err : db_prepare(b->db,
		"UPDATE entries SET mode = ?1, uid = ?2, gid = ?3, mtime = ?4, mtime_nsec = ?8,"
		" hdr_off = ?5, flags = ?6 WHERE id = ?7", &b->upd_dir);
	err = err ? err
		  : db_prepare(b->db, "INSERT INTO sparse VALUES (?, ?, ?, ?, ?)", &b->ins_sparse);
	err = err ? err : db_prepare(b->db, "INSERT OR REPLACE INTO xattrs VALUES (?, ?, ?)", &b->ins_xattr);
	err = err ? err : db_prepare(b->db,
		"INSERT INTO checkpoints (stream, idx, uoff, ulen, coff, clen, extra, bits, flags, crcs,"
		" aux) VALUES (?11, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)", &b->ins_ckpt);
	err = err ? err : db_prepare(b->db, "UPDATE entries SET latest = 0 WHERE id = ?", &b->set_old);
	err = err ? err : db_prepare(b->db, "UPDATE entries SET unreadable = ?2, why = ?3 WHERE id = ?1",
				     &b->set_unreadable);
	err = err ? err : db_prepare(b->db, "UPDATE entries SET link = ?2, size = ?3, stored = ?3"
				     " WHERE id = ?1", &b->set_link);
	return err;
}

static void finalize_all(struct builder *b)
{
	sqlite3_finalize(b->ins_entry);
	sqlite3_finalize(b->set_unreadable);
	sqlite3_finalize(b->set_link);
	sqlite3_finalize(b->upd_dir);
	sqlite3_finalize(b->ins_sparse);
	sqlite3_finalize(b->ins_xattr);
	sqlite3_finalize(b->ins_ckpt);
	sqlite3_finalize(b->ins_stream);
	sqlite3_finalize(b->set_old);
}

/* The single file of a compressed non-tar: its name in the mount. */
static char *single_name(const char *archive, const char *stored)
{
	if (stored) {
		const char *base = strrchr(stored, '/');
		base = base ? base + 1 : stored;
		if (*base && strcmp(base, ".") != 0 && strcmp(base, "..") != 0)
			return strdup(base);
	}
	return codec_strip_suffix(archive);
}

/* The builder's database at tmp (a new file), its schema, its statements and the root. */
static int build_open(struct builder *b, const struct idx_input *in, const char *tmp)
{
	struct row r = {.parent = 0, .version = 1, .mode = S_IFDIR | 0555, .uid = in->uid,
			.gid = in->gid, .mtime = b->mtime, .mtime_nsec = b->mtime_nsec,
			.flags = IDX_F_IMPLICIT};
	uint64_t id;
	int err;

	unlink(tmp);
	err = db_open_build(tmp, &b->db);
	err = err ? err : db_create_schema(b->db);
	err = err ? err : prepare_all(b);
	err = err ? err : db_exec(b->db, "BEGIN");
	if (err)
		return err;
	b->map = pm_new();
	if (!b->map)
		return -ENOMEM;
	b->next_id = IDX_ROOT;
	return bld_insert_row(b, &r, &id);
}

/* What the disk-image probes may read of a decoded stream: its head.  A probe that looks at
 * the end (a fixed VHD's footer) would otherwise decode the whole stream forward, and the
 * probes after it could no longer read the head (bld_progress_src's reads move on). */
#define IMAGE_PROBE_HEAD ((uint64_t)256 << 10)

static ssize_t head_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	if (off >= IMAGE_PROBE_HEAD)
		return -EIO;
	if (len > IMAGE_PROBE_HEAD - off)
		len = (size_t)(IMAGE_PROBE_HEAD - off);
	return src_pread(opaque, buf, len, off);
}

static const struct src_ops head_ops = {.pread = head_pread};

/* A disk image or file system behind the codec (cont_probe_image on the head of s only). */
static bool image_inside(struct src *s, const uint8_t *head, size_t len)
{
	struct src *h = src_new(&head_ops, s, src_size(s));
	bool yes = h && cont_probe_image(h, head, len);

	src_free(h);
	return yes;
}

/* The members: parsed as a tar from the decoded stream (or the file), else, for a compressed
 * file that is not a tar, indexed as a single file (from its block headers if the codec can).
 * *fast: no segment CRCs (index_blocks did it).  0 or -errno; -EIO after damage. */
static int build_members(struct builder *b, const struct idx_input *in,
			 const struct idx_build_opts *o, struct cstream *cs,
			 struct idx_build_stats *st, struct tar_stats *ts, bool *fast)
{
	const struct codec *codec = b->codec;
	struct src *data = cs ? cstream_src(cs) : in->src, *prog;
	const struct container *ct;
	uint8_t head[512];
	ssize_t hn;
	int err = bld_progress_src(b, data, !cs, &prog); /* an archive file: read ahead */

	if (err)
		return err;
	/* a head that cannot be read (a decode error right away) is damage, not a sign that
	 * the content is not a tar */
	hn = src_pread(prog, head, sizeof(head), 0);
	if (hn < 0 && codec) {
		err = (int)hn;
#if HAVE_JSONC
	} else if (!codec && !o->oci_raw && hn > 0 && cont_oci.probe(prog, head, (size_t)hn)) {
		/* a container image is a tar too: asked first (container.h) */
		err = bld_container(b, in, &cont_oci, o, st);
#endif
	} else if (tar_probe(prog)) {
		struct tar_callbacks cb = {.entry = bld_member, .progress = on_progress, .opaque = b,
					   .ignore_zeros = o->ignore_zeros};
		err = tar_parse(prog, &cb, ts);
		st->members = b->members;
	} else if (!codec && hn > 0 &&
		   ((ct = cont_probe(in->src, head, (size_t)hn)) ||
		    (o->recursion && (ct = cont_probe_image(in->src, head, (size_t)hn))))) {
		err = bld_container(b, in, ct, o, st);
	} else if (codec) {
		struct codec_opts co = {.spacing = idx_stream_spacing(o, codec->name),
					.threads = o->threads ? o->threads : 1};
		st->single_file = true;
		/* a cpio, zip, iso, ... (or another codec's stream) behind the codec: the
		 * decoded file is indexed as an archive of its own afterwards (idx_wrap) */
		st->inner = hn > 0 && (codec_probe(head, (size_t)hn) ||
				       cont_probe(prog, head, (size_t)hn) ||
				       (o->recursion && image_inside(prog, head, (size_t)hn)));
		err = index_fast(b, codec, in->src, &co, &st->usize);
		if (err >= 0) {
			*fast = err == 1;
			err = 0;
		}
	} else {
		tfs_log(TFS_LOG_ERR,
			"%s is not an archive nor a compressed file tarseek knows (containers: %s; "
			"codecs: %s)",
			in->name, cont_list(), codec_list());
		err = -EINVAL;
	}
	src_free(prog);
	if (ts->truncated || ts->bad_headers)
		st->damaged = true;
	return err;
}

/* After the members of a compressed archive: the rest of the stream decoded (its last
 * checkpoint stored), damage salvaged, the single file's row, the stream's row. */
static int build_stream_end(struct builder *b, const struct idx_input *in, struct cstream *cs,
			    bool fast, int err, struct idx_build_stats *st,
			    const struct tar_stats *ts)
{
	uint64_t usize = 0, trusted = UINT64_MAX; /* decoded bytes; of them verified */

	if (fast) {
		usize = st->usize;
	} else if (err == -EIO || err == 0) {
		int ferr = err ? err : cstream_finish(cs, &usize);
		if (ferr == -EIO) {
			uint64_t limit = cstream_verified(cs);
			st->damaged = true;
			err = cstream_salvage(cs, limit, &usize);
			/* the checkpoints already stored may reach past limit (a gzip member whose
			 * CRC fails after several of them): the index keeps their bytes, so that
			 * they add up, but nothing that lies in them */
			trusted = usize < limit ? usize : limit;
			if (!err)
				err = drop_untrusted(b, trusted);
			if (!err && trusted == 0) {
				/* an archive inside an archive then stays a file (a notice) */
				tfs_log(in->quiet ? TFS_LOG_NOTICE : TFS_LOG_ERR,
					"%s: damaged before anything could be indexed", in->name);
				err = -EIO;
			}
			if (!err)
				tfs_log(TFS_LOG_WARNING,
					"%s is damaged: the mount shows what lies in the first %" PRIu64
					" verified bytes of decompressed data",
					in->name, trusted);
		} else {
			err = ferr;
		}
	}
	if (err)
		return err;
	st->usize = usize;
	/* Nothing but zeros reads as an empty tar; but megabytes of them are far more likely a
	 * blank disk image (GNU tar's empty archive is 10 KiB) */
	if (!st->single_file && st->members == 0 && !ts->bad_headers && !ts->garbage &&
	    usize > ZEROS_TAR_MAX)
		st->single_file = true;
	/* nothing at all in a file that calls itself a tar (gzip < /dev/null > x.tar.gz): an
	 * empty archive, as tar -tf lists it, not an empty file x.tar */
	if (st->single_file && usize == 0 && !fast && codec_names_tar(in->name))
		st->single_file = false;
	if (st->single_file) {
		uint64_t shown = usize < trusted ? usize : trusted;
		char *name = single_name(in->name, cs ? cstream_name(cs) : NULL);
		struct row r = {.parent = IDX_ROOT, .version = 1,
				.mode = S_IFREG | (in->mode & 0444), .size = shown,
				.stored = shown, .uid = in->uid, .gid = in->gid,
				.mtime = b->mtime, .mtime_nsec = b->mtime_nsec, .stream = IDX_STREAM};
		uint64_t id;
		if (!name)
			return -ENOMEM;
		r.name = (const uint8_t *)name;
		r.name_len = strlen(name);
		err = bld_insert_row(b, &r, &id);
		free(name);
		if (err)
			return err;
	}
	struct db_stream ds = {.id = IDX_STREAM, .codec = b->codec->name, .coff = 0,
			       .clen = st->archive_size, .usize = st->usize,
			       .crcs = fast ? IDX_CRCS_CODEC
				     : b->sink.seg_shift == SEG_SHIFT_FINE ? IDX_CRCS_SEGMENTS_FINE
									   : IDX_CRCS_SEGMENTS};
	return db_insert_stream(b->db, &b->ins_stream, &ds);
}

/* What an archive object needs to read this index (the nested pass opens it). */
static int build_meta(struct builder *b, const struct idx_build_stats *st, bool fast)
{
	int err = db_meta_set_u64(b->db, "format", IDX_FORMAT);

	err = err ? err : db_meta_set(b->db, "codec", b->codec ? b->codec->name : "none");
	err = err ? err : db_meta_set(b->db, "kind", st->single_file ? "single"
						    : st->container ? st->container : "tar");
	err = err ? err : db_meta_set_u64(b->db, "usize", st->usize);
	err = err ? err : db_meta_set_u64(b->db, "members", st->members);
	err = err ? err : db_meta_set_u64(b->db, "damaged", st->damaged);
	err = err ? err : db_meta_set_u64(b->db, "readers", IDX_READERS);
	/* said of every single file, so that an index made before compressed archives were
	 * looked into is known (validate.c) */
	if (st->single_file)
		err = err ? err : db_meta_set(b->db, "inner", st->inner ? "1" : "0");
	return err;
}

int idx_build_base(const struct idx_input *in, const char *tmp, const struct idx_build_opts *o,
		   struct idx_build_stats *stats)
{
	struct builder b = {.next_id = IDX_ROOT + 1};
	struct bld_shadow sh;
	struct idx_build_stats st = {0};
	struct cstream *cs = NULL;
	struct tar_stats ts = {0};
	uint8_t head[512];
	ssize_t hn;
	bool fast = false; /* indexed by index_blocks: no segment CRCs */
	int err;

	b.t0 = b.last = mono_now();
	b.file = in->src;
	b.file_size = st.archive_size = src_size(in->src);
	b.name = strrchr(in->name, '/') ? strrchr(in->name, '/') + 1 : in->name;
	b.o = o;
	b.uid = (uint32_t)in->uid;
	b.gid = (uint32_t)in->gid;
	b.mtime = in->mtime;
	b.mtime_nsec = in->mtime_nsec;
	bld_shadow_init(&sh, in, o);
	b.shadow = &sh;

	hn = src_pread(in->src, head, sizeof(head), 0);
	if (hn < 0) {
		err = (int)hn;
		tfs_log(TFS_LOG_ERR, "cannot read %s: %s", in->name, strerror(-err));
		goto out;
	}
	b.codec = in->codec ? in->codec : codec_probe(head, (size_t)hn);
	err = build_open(&b, in, tmp);
	if (err)
		goto out;
	if (b.codec) {
		struct codec_opts co = {.spacing = idx_stream_spacing(o, b.codec->name),
					.threads = o->threads ? o->threads : 1};
		b.sink.checkpoint = on_ckpt;
		b.sink.opaque = &b;
		b.sink.seg_shift = stream_seg_shift(b.codec);
		if (!bld_shadow_later(&sh, b.codec, in->src) &&
		    bld_shadow_wants(&sh, b.codec, in->src)) /* 64 KiB segments then */
			b.sh_stream = bld_shadow_tap(&sh, IDX_STREAM, &b.sink);
		err = cstream_new(b.codec, in->src, &co, &b.sink, &cs);
		if (err) {
			tfs_log(TFS_LOG_ERR, "%s: cannot start %s decoding: %s", in->name,
				b.codec->name, strerror(-err));
			goto out;
		}
	}
	err = build_members(&b, in, o, cs, &st, &ts, &fast);
	/* built after the bulk insert: cheaper than maintaining it row by row */
	if (err == 0 || err == -EIO) {
		int ierr = db_exec(b.db, "CREATE UNIQUE INDEX entries_name ON entries"
					 " (parent, name, version)");
		if (ierr)
			err = ierr;
	}
	if (b.codec && (err == 0 || err == -EIO))
		err = build_stream_end(&b, in, cs, fast, err, &st, &ts);
	else if (!b.codec && !err && !st.container)
		st.usize = st.archive_size;
	/* the shadow holds a stream decoded whole and undamaged */
	bld_shadow_end(b.sh_stream, !err && !fast && !st.damaged, st.usize);
	b.sh_stream = NULL;
	if (err)
		goto out;
	st.checkpoints = b.nckpt;
	st.shadow_later = sh.later;
	err = bld_shadow_finish(&sh, b.db, in->src, &st);
	err = err ? err : build_meta(&b, &st, fast);
	err = err ? err : db_exec(b.db, "COMMIT");
	st.seconds = mono_now() - b.t0;
	if (stats)
		*stats = st;
out:
	bld_progress_end(&b, err);
	if (b.db) {
		finalize_all(&b);
		if (sqlite3_close(b.db) != SQLITE_OK && !err)
			err = -EIO;
	}
	if (err)
		unlink(tmp);
	pm_free(b.map);
	cstream_free(cs);
	bld_shadow_end(b.sh_stream, false, 0);
	bld_shadow_free(&sh);
	return err;
}

static int set_stream_clen(sqlite3 *db, uint64_t clen)
{
	sqlite3_stmt *st;
	int err = db_prepare(db, "UPDATE streams SET clen = ?1 WHERE id = 1", &st);

	if (err)
		return err;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)clen);
	err = bld_step_done(st);
	sqlite3_finalize(st);
	return err;
}

int idx_build_finish(const char *tmp, const struct idx_input *in, const struct idx_build_opts *o)
{
	sqlite3 *db = NULL;
	char fp[64], opts[IDX_OPTIONS_MAX], *codec;
	int err = db_open_build(tmp, &db);

	if (err)
		return err;
	codec = db_meta_get(db, "codec");
	err = db_exec(db, "BEGIN");
	err = err ? err : idx_finish_entries(db);
	err = err ? err : idx_fingerprint(in->src, fp, sizeof(fp));
	idx_options_string(codec && strcmp(codec, "none") ? codec : NULL, o, opts, sizeof(opts));
	err = err ? err : db_meta_set(db, "tarseek_version", TARSEEK_VERSION);
	err = err ? err : db_meta_set_u64(db, "archive_size", src_size(in->src));
	err = err ? err : db_meta_set_u64(db, "archive_mtime_ns",
					  (uint64_t)(in->mtime * 1000000000ll + in->mtime_nsec));
	err = err ? err : db_meta_set(db, "fingerprint", fp);
	err = err ? err : db_meta_set(db, "options", opts);
	if (in->codec) /* a stream written while indexed: its length is the file's now */
		err = err ? err : set_stream_clen(db, src_size(in->src));
	if (in->etag && *in->etag) /* built from a URL: a changed object is noticed cheaply */
		err = err ? err : db_meta_set(db, "remote_etag", in->etag);
	if (in->last_modified && *in->last_modified)
		err = err ? err : db_meta_set(db, "remote_last_modified", in->last_modified);
	err = err ? err : db_exec(db, "COMMIT");
	err = err ? err : db_meta_set(db, "complete", "1");
	free(codec);
	if (sqlite3_close(db) != SQLITE_OK && !err)
		err = -EIO;
	if (!err)
		err = db_seal(tmp);
	if (err)
		tfs_log(TFS_LOG_ERR, "cannot finish the index %s: %s", tmp, strerror(-err));
	return err;
}
