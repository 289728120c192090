/* Whether an index still fits its archive (see validate.h). */
#include "index/validate.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codecs/codec.h"
#include "common/parts.h"
#include "crypto/keyring.h"
#include "index/db.h"
#include "index/stamp.h"

#define SEAL_CHECK_MAX (64ull << 20) /* larger indexes are not checksummed at every open */

static bool is_sqlite_file(const char *path)
{
	char magic[16] = {0};
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f)
		return false;
	n = fread(magic, 1, sizeof(magic), f);
	fclose(f);
	return n == 16 && memcmp(magic, "SQLite format 3", 16) == 0;
}

/* Asks the kernel to read the index file whole, now (the seal check reads every byte of one up
 * to SEAL_CHECK_MAX): cold, its pages and the archive's fingerprint spans (asked for next, see
 * validate) are then read at the same time instead of one after the other as the checks come
 * to them (a cold second mount of telemetry.tar: the checks took ~10 ms, ~6 ms now). */
static void index_ahead(const char *path, off_t size)
{
	int fd;

	if (size > (off_t)SEAL_CHECK_MAX)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)posix_fadvise(fd, 0, size, POSIX_FADV_WILLNEED);
		close(fd);
	}
}

/* Sets the reason (printf-like) and returns err. */
__attribute__((format(printf, 4, 5))) static int why_is(char *why, size_t whylen, int err,
							const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return err;
}


/* A single file's index made before idx_wrap (nested.h): no meta 'inner' says whether its
 * decoded bytes were looked into. */
static bool single_unprobed(sqlite3 *db)
{
	char *kind = db_meta_get(db, "kind"), *inner = db_meta_get(db, "inner");
	bool r = kind && strcmp(kind, "single") == 0 && !inner;

	free(kind);
	free(inner);
	return r;
}

/* A zip's index made before encrypted entries could be read: it marked them unreadable
 * (EACCES, "encrypted (no password support)") where they are now streams. */
static bool zip_unencrypted(sqlite3 *db)
{
	char *kind = db_meta_get(db, "kind");
	sqlite3_stmt *st = NULL;
	bool r = false;

	if (kind && strcmp(kind, "zip") == 0 &&
	    sqlite3_prepare_v2(db, "SELECT 1 FROM entries WHERE unreadable = ?1 AND why = "
			       "'encrypted (no password support)' LIMIT 1", -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int(st, 1, -EACCES);
		r = sqlite3_step(st) == SQLITE_ROW;
	}
	sqlite3_finalize(st);
	free(kind);
	return r;
}

/* An index made before tarseek read what it reads now (db.h's IDX_READERS): one made with -r
 * (a disk image, a file system or a virtual disk inside was left a file), or one of an
 * archive libarchive found empty (an ar of COFF import libraries, which ar.c now reads). */
static bool readers_older(sqlite3 *db)
{
	uint64_t readers = 0, members = 1;
	char *kind, *opts;
	bool r;

	if (db_meta_get_u64(db, "readers", &readers) && readers >= IDX_READERS)
		return false;
	kind = db_meta_get(db, "kind");
	opts = db_meta_get(db, "options");
	(void)db_meta_get_u64(db, "members", &members);
	r = (opts && strstr(opts, "recursion=")) ||
	    (kind && strcmp(kind, "libarchive") == 0 && members == 0);
	free(kind);
	free(opts);
	return r;
}

/* Another program's database is never ours to replace: no meta table or no format row.
 * 0, -ENOTSUP (another program's) or -ESTALE (damaged), with why. */
static int ours(sqlite3 *db, char *why, size_t whylen)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'format'", -1, &st, NULL);

	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	}
	if (rc == SQLITE_DONE || (rc == SQLITE_ERROR && strstr(sqlite3_errmsg(db), "no such"))) {
		snprintf(why, whylen, "%s", "an SQLite database of another program");
		return -ENOTSUP;
	}
	if (rc != SQLITE_ROW) {
		snprintf(why, whylen, "%s", "damaged");
		return -ESTALE;
	}
	return 0;
}

/* True (said why) if db, an index of ours, cannot be used whatever its archive: incomplete,
 * of another format, or made before something it holds could be read. */
static bool outdated(sqlite3 *db, char *why, size_t whylen)
{
	char *s = db_meta_get(db, "complete");
	bool complete = s && strcmp(s, "1") == 0, locked;
	uint64_t v;

	free(s);
	if (!complete)
		return why_is(why, whylen, true, "%s", "incomplete (an interrupted build, or damaged)");
	if (!db_meta_get_u64(db, "format", &v) || v < IDX_FORMAT_OLDEST || v > IDX_FORMAT)
		return why_is(why, whylen, true, "%s", "made by another version of tarseek");
	s = db_meta_get(db, "locked");
	locked = s != NULL;
	free(s);
	if (locked && kr_count()) /* encrypted entries no password opened: try the ones given */
		return why_is(why, whylen, true, "%s",
			      "made without the password of its encrypted entries");
	if (single_unprobed(db)) /* its file may hold an archive it would now show */
		return why_is(why, whylen, true, "%s",
			      "made before archives behind a codec were looked into");
	if (zip_unencrypted(db)) /* its encrypted entries would stay unreadable */
		return why_is(why, whylen, true, "%s",
			      "made before encrypted zip entries could be read");
	if (readers_older(db))
		return why_is(why, whylen, true, "%s",
			      "made before tarseek read disk images, file systems and ar "
			      "libraries inside archives");
	return false;
}

/* Who may have written the index: only we, root or the archive's owner, and not others.  0, or
 * -EPERM with why. */
static int trusted(const struct stat *ist, const char *archive, char *why, size_t whylen)
{
	struct stat ast;

	if (!archive && ist->st_uid != geteuid() && ist->st_uid != 0)
		return why_is(why, whylen, -EPERM, "owned by uid %u, who is neither you nor root",
			      (unsigned)ist->st_uid);
	if (archive && parts_stat(archive, &ast) == 0 && ist->st_uid != geteuid() &&
	    ist->st_uid != 0 && ist->st_uid != ast.st_uid)
		return why_is(why, whylen, -EPERM,
			      "owned by uid %u, who is neither you, root nor the archive's owner",
			      (unsigned)ist->st_uid);
	if (ist->st_uid != geteuid() && (ist->st_mode & 022))
		return why_is(why, whylen, -EPERM, "%s", "writable by other users");
	return 0;
}

/* Whether the archive is the one db was built from: its size (and a local file's mtime), its
 * format, the options that shape the index, a remote object's ETag, its fingerprint.  *file:
 * the archive's bytes, opened here for a local archive if validate has not yet.  0 or -ESTALE
 * with why. */
static int fits_archive(sqlite3 *db, const char *archive, const struct idx_subject *rem,
			struct src **file, const struct idx_build_opts *o, char *why, size_t whylen)
{
	char *s = NULL, fp[64], opts[IDX_OPTIONS_MAX];
	struct stat ast;
	uint8_t head[512];
	uint64_t v;
	int err = -ESTALE;

	if (!archive) {
		*file = rem->src;
		if (!db_meta_get_u64(db, "archive_size", &v) || v != src_size(*file))
			return why_is(why, whylen, -ESTALE, "%s", "the object's size differs");
	} else {
		err = parts_stat(archive, &ast); /* a split archive: all its parts */
		if (err && err != -ENOENT)
			return why_is(why, whylen, -ESTALE,
				      "the archive (or a part) cannot be read: %s", strerror(-err));
		if (err)
			return err;
		if (!db_meta_get_u64(db, "archive_size", &v) || v != (uint64_t)ast.st_size)
			return why_is(why, whylen, -ESTALE, "%s", "the archive's size changed");
		if (!db_meta_get_u64(db, "archive_mtime_ns", &v) ||
		    v != (uint64_t)(ast.st_mtim.tv_sec * 1000000000ll + ast.st_mtim.tv_nsec))
			return why_is(why, whylen, -ESTALE, "%s",
				      "the archive was modified (its mtime changed)");
		if (!*file && parts_open(archive, file) < 0)
			return why_is(why, whylen, -ESTALE, "%s", "the archive cannot be read");
	}
	err = -ESTALE;
	ssize_t hn = src_pread(*file, head, sizeof(head), 0);
	const struct codec *c = hn > 0 ? codec_probe(head, (size_t)hn) : NULL;
	s = db_meta_get(db, "codec");
	if (!s || strcmp(s, c ? c->name : "none") != 0) {
		snprintf(why, whylen, "%s", "the archive's format changed");
		goto out;
	}
	free(s);
	s = db_meta_get(db, "options");
	{
		/* a spacing nobody asked for is whatever the index was built with */
		struct idx_build_opts oo = *o;
		uint64_t sp;
		if (o->spacing_any && s && sscanf(s, "gzip_spacing=%" SCNu64 ";", &sp) == 1)
			oo.gzip_spacing = sp;
		idx_options_string(c ? c->name : NULL, &oo, opts, sizeof(opts));
	}
	if (!s || strcmp(s, opts) != 0) {
		why_is(why, whylen, 0, "built with other options (%s, now %s)", s ? s : "?", opts);
		goto out;
	}
	free(s);
	s = NULL;
	if (!archive && rem->etag && *rem->etag) { /* an index built from this URL: its ETag */
		s = db_meta_get(db, "remote_etag");
		if (s && *s && strcmp(s, rem->etag) != 0) {
			snprintf(why, whylen, "%s", "the object changed on the server (its ETag)");
			goto out;
		}
		if (s && *s) { /* the same object: no need to fetch its fingerprint */
			err = 0;
			goto out;
		}
		free(s);
	}
	s = db_meta_get(db, "fingerprint");
	if (idx_fingerprint(*file, fp, sizeof(fp)) < 0 || !s || strcmp(s, fp) != 0) {
		snprintf(why, whylen, "%s", "the archive's content changed");
		goto out;
	}
	err = 0;
out:
	free(s);
	return err;
}

/* archive: a local file; else rem: a remote object.  keep (may be NULL): see
 * idx_validate_keep. */
static int validate(const char *index_path, const char *archive, const struct idx_subject *rem,
		    const struct idx_build_opts *o, struct idx_kept *keep, char *why,
		    size_t whylen)
{
	struct idx_kept mem = {0};
	struct stat ist;
	sqlite3 *db = NULL;
	struct src *file = NULL;
	int err;

	why[0] = '\0';
	if (stat(index_path, &ist) < 0)
		return -errno;
	index_ahead(index_path, ist.st_size);
	if (ist.st_size == 0 || !is_sqlite_file(index_path)) {
		snprintf(why, whylen, "%s", "not an SQLite file");
		return -ENOTSUP;
	}
	/* someone else's file that we did not build and that others could have changed is not
	 * trusted: only ours, root's or the archive owner's, and not writable by others */
	if ((err = trusted(&ist, archive, why, whylen)) != 0)
		return err;
	if (archive && parts_open(archive, &file) == 0) /* read meanwhile (index_ahead) */
		idx_fingerprint_ahead(file);
	/* larger, in WAL mode, or out of memory: the checks read the file */
	if (keep && (uint64_t)ist.st_size <= keep->max &&
	    db_file_to_mem(index_path, keep->max, &mem.name, &mem.keeper) != 0)
		mem.name = NULL;
	err = -ESTALE;
	if (db_open_ro(mem.name ? mem.name : index_path, &db) < 0) {
		snprintf(why, whylen, "%s", "cannot be opened");
		goto out;
	}
	if ((err = ours(db, why, whylen)) != 0)
		goto out;
	err = -ESTALE;
	if (outdated(db, why, whylen))
		goto out;
	/* every byte, against the checksum sealed into the header (skipped for very large
	 * indexes, whose pages SQLite still checks for structure) */
	if ((uint64_t)ist.st_size <= SEAL_CHECK_MAX &&
	    (mem.name ? db_check_seal_mem(mem.name) : db_check_seal(index_path)) != 0) {
		snprintf(why, whylen, "%s", "damaged (its checksum does not match)");
		goto out;
	}
	err = fits_archive(db, archive, rem, &file, o, why, whylen);
out:
	if (archive)
		src_free(file);
	sqlite3_close(db);
	if (!err && keep) {
		keep->name = mem.name;
		keep->keeper = mem.keeper;
	} else {
		sqlite3_close(mem.keeper);
		free(mem.name);
	}
	return err;
}

int idx_validate(const char *index_path, const char *archive, const struct idx_build_opts *o,
		 char *why, size_t whylen)
{
	return validate(index_path, archive, NULL, o, NULL, why, whylen);
}

int idx_validate_keep(const char *index_path, const char *archive,
		      const struct idx_build_opts *o, struct idx_kept *keep, char *why, size_t whylen)
{
	keep->name = NULL;
	keep->keeper = NULL;
	return validate(index_path, archive, NULL, o, keep, why, whylen);
}

int idx_validate_remote(const char *index_path, const struct idx_subject *a,
			const struct idx_build_opts *o, char *why, size_t whylen)
{
	return validate(index_path, NULL, a, o, NULL, why, whylen);
}
