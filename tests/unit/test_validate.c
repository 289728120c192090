/* Unit test of checking an index before it is used (index/validate.h, and the readers of
 * index/archive.c): every reason an index is rebuilt (the archive changed, the options, the
 * format, an interrupted build, damage) and every reason it is refused (another program's
 * file); the formats still read as they are (format 5, whose gzip streams have 1 MiB
 * segments); whose indexes are trusted (needs root).  The archives and the helpers are
 * index_fixtures.c's, shared with test_index.c.
 */
#include "index_fixtures.h"
#include "seek/segment.h"

/* idx_validate, and idx_validate_keep with the same answer and reason: every case below is
 * checked on the file and on the index read into memory.  When valid, the kept image opens by
 * its name and holds the index (its meta). */
static int validate2(const char *ix, const char *ar, const struct idx_build_opts *b, char *why,
		     size_t whylen)
{
	struct idx_kept k = {.max = 64u << 20};
	char why2[256] = "unset";
	int err = idx_validate(ix, ar, b, why, whylen);

	CHECK_EQ(idx_validate_keep(ix, ar, b, &k, why2, sizeof(why2)), err);
	CHECK_STR(why2, why);
	CHECK_EQ(k.name != NULL, err == 0);
	CHECK_EQ(k.keeper != NULL, err == 0);
	if (k.name) {
		sqlite3 *db = NULL;
		char *format = NULL;
		CHECK_EQ(db_open_ro(k.name, &db), 0);
		CHECK(db && (format = db_meta_get(db, "format")) != NULL);
		free(format);
		sqlite3_close(db);
	}
	sqlite3_close(k.keeper);
	free(k.name);
	return err;
}

/* ---- rebuilt and refused ------------------------------------------------------------------------- */

/* The index ix of ar is stale, for a reason that contains reason; idx_prepare rebuilds it,
 * logging that reason, and the new index is valid. */
static void expect_rebuilt_at(int line, const char *ar, const char *ix,
			      const struct idx_build_opts *b, const char *reason)
{
	struct idx_opts o = {.index_file = ix, .build = *b};
	int before = tu_failures;
	char why[256] = "unset", *p;
	bool built;

	CHECK_EQ(validate2(ix, ar, b, why, sizeof(why)), -ESTALE);
	if (!strstr(why, reason)) {
		fprintf(stderr, "%s:%d: why == \"%s\", expected it to say \"%s\"\n", __FILE__,
			__LINE__, why, reason);
		tu_failures++;
	}
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	CHECK(logged(TFS_LOG_NOTICE, "rebuilding", why));
	free(p);
	CHECK_EQ(validate2(ix, ar, b, why, sizeof(why)), 0);
	if (tu_failures != before)
		fprintf(stderr, "    (in the case at line %d)\n", line);
}
#define expect_rebuilt(...) expect_rebuilt_at(__LINE__, __VA_ARGS__)

/* Runs sql on the index at ix (read-write), then seals it again if reseal, so that only
 * what sql changed differs from a good index. */
static void edit_index(const char *ix, const char *sql, bool reseal)
{
	sqlite3 *db = NULL;

	CHECK_EQ(sqlite3_open_v2(ix, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	CHECK_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	CHECK_EQ(sqlite3_close(db), SQLITE_OK);
	if (reseal)
		CHECK_EQ(db_seal(ix), 0);
}

/* A file that validation calls not ours (-ENOTSUP, why says so): idx_prepare leaves it as it
 * is; at --index-file it refuses (-EEXIST), beside the archive (where ratarmount writes an
 * index of the same name) it says so and builds in the cache folder instead. */
static void expect_refused_at(int line, const char *ar, const char *ix, const char *reason)
{
	struct idx_opts o = dflt();
	int before = tu_failures;
	char why[256] = "unset", *p;
	bool built;

	CHECK_EQ(validate2(ix, ar, &o.build, why, sizeof(why)), -ENOTSUP);
	CHECK(strstr(why, reason) != NULL);
	struct snap s = snap_of(ix);
	o.index_file = ix;
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EEXIST);
	CHECK(logged(TFS_LOG_ERR, "not a tarseek index", ix));
	struct snap s2 = snap_of(ix);
	CHECK(snap_same(&s, &s2));
	CHECK_EQ(dir_count(top, ".tmp"), 0);
	/* beside the archive */
	const char *beside = pth("%s.index.sqlite", ar);
	copy_file(ix, beside);
	s = snap_of(beside);
	o.index_file = NULL;
	log_clear();
	p = NULL;
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(logged(TFS_LOG_NOTICE, "not a tarseek index", beside));
	CHECK(p && strstr(p, "/xdg/tarseek/") != NULL);
	if (p)
		unlink(p);
	free(p);
	s2 = snap_of(beside);
	CHECK(snap_same(&s, &s2));
	unlink(beside);
	if (tu_failures != before)
		fprintf(stderr, "    (in the case at line %d)\n", line);
}
#define expect_refused(...) expect_refused_at(__LINE__, __VA_ARGS__)

/* A progress callback: whether a build reports its progress does not shape its index. */
static void no_progress(void *opaque, const struct idx_progress *p)
{
}

static void test_validate(void)
{
	const char *dir = pth("%s/val", top);
	const char *ar = pth("%s/a.tar", dir), *ix = pth("%s/i.sqlite", dir);
	const char *cut = pth("%s/cut.sqlite", dir);
	struct idx_opts o = dflt();
	struct idx_build_opts b = o.build, b2;
	struct stat st;
	char why[256], *p;
	bool built;

	mkdir_ok(dir);
	write_std_tar(ar);
	o.index_file = ix;

	/* a valid index is used untouched */
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	free(p);
	struct snap s = snap_of(ix);
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(!built);
	free(p);
	struct snap s2 = snap_of(ix);
	CHECK(snap_same(&s, &s2));
	strcpy(why, "unset");
	CHECK_EQ(validate2(ix, ar, &b, why, sizeof(why)), 0);
	CHECK_STR(why, "");
	CHECK_EQ(validate2(pth("%s/none.sqlite", dir), ar, &b, why, sizeof(why)), -ENOENT);

	/* the archive's content changed, its size and mtime kept: the fingerprint tells, at the
	 * head (a member's data, a header) and at the tail */
	poke(ar, 1024 + 10, 0x20, true); /* in dir/a.txt's data */
	expect_rebuilt(ar, ix, &b, "content");
	poke(ar, 0, 0x01, true); /* "dir/" -> "ehr/": the header's checksum still holds */
	poke(ar, 1, 0x01, true);
	expect_rebuilt(ar, ix, &b, "content");
	CHECK_EQ(stat(ar, &st), 0);
	/* in big.bin's data, the last member's: before its padding and the end marker */
	poke(ar, st.st_size - 1024 - (512 - sizeof(d_big) % 512) - 10, 0x01, true);
	expect_rebuilt(ar, ix, &b, "content");
	/* its size */
	append_member(ar);
	expect_rebuilt(ar, ix, &b, "size");
	/* its mtime, by a second or by a nanosecond */
	struct timespec t = mtime_of(ar);
	t.tv_sec += 1;
	set_mtime(ar, t);
	expect_rebuilt(ar, ix, &b, "mtime");
	t.tv_nsec = t.tv_nsec == 5 ? 6 : 5;
	set_mtime(ar, t);
	expect_rebuilt(ar, ix, &b, "mtime");
	write_std_tar(ar);
	build_ok(ar, ix, &b);

	/* the options that shape the index; not those that do not */
	b2 = b;
	b2.threads = 4;
	b2.progress = no_progress;
	b2.gzip_spacing = 64 * 1024; /* a plain tar has no checkpoints */
	b2.strip_ext = true;	     /* without recursion there is nothing to strip */
	CHECK_EQ(validate2(ix, ar, &b2, why, sizeof(why)), 0);
	b2 = b;
	b2.ignore_zeros = true;
	expect_rebuilt(ar, ix, &b2, "options");
	b2.recursion = 1;
	expect_rebuilt(ar, ix, &b2, "options");
	b2.recursion = 2;
	expect_rebuilt(ar, ix, &b2, "options");
	b2.strip_ext = true;
	expect_rebuilt(ar, ix, &b2, "options");
	build_ok(ar, ix, &b);

	/* made by another version of the format (only that changed: sealed again) */
	edit_index(ix, "UPDATE meta SET value = '3' WHERE key = 'format'", true);
	expect_rebuilt(ar, ix, &b, "version");
	edit_index(ix, "UPDATE meta SET value = '7' WHERE key = 'format'", true);
	expect_rebuilt(ar, ix, &b, "version");
	edit_index(ix, "UPDATE meta SET value = '4' WHERE key = 'format'", true);
	expect_rebuilt(ar, ix, &b, "version");
	edit_index(ix, "UPDATE meta SET value = '3' WHERE key = 'format'", false);
	CHECK_EQ(validate2(ix, ar, &b, why, sizeof(why)), -ESTALE);
	build_ok(ar, ix, &b);

	/* a zip's index from before encrypted entries could be read (one marked so): rebuilt;
	 * the same mark in another kind's index, or another reason, is no reason */
	edit_index(ix, "UPDATE entries SET unreadable = -13, why = 'encrypted (no password "
		       "support)' WHERE id = (SELECT max(id) FROM entries)", true);
	CHECK_EQ(validate2(ix, ar, &b, why, sizeof(why)), 0);
	edit_index(ix, "UPDATE meta SET value = 'zip' WHERE key = 'kind'", true);
	expect_rebuilt(ar, ix, &b, "encrypted zip entries");
	edit_index(ix, "UPDATE meta SET value = 'zip' WHERE key = 'kind';"
		       "UPDATE entries SET unreadable = -13, why = 'other' WHERE id = "
		       "(SELECT max(id) FROM entries)", true);
	CHECK_EQ(validate2(ix, ar, &b, why, sizeof(why)), 0);
	build_ok(ar, ix, &b);

	/* made before tarseek read disk images, file systems and ar libraries (no meta
	 * 'readers'): rebuilt when built with -r, or when libarchive found the archive empty;
	 * else kept */
	edit_index(ix, "DELETE FROM meta WHERE key = 'readers'", true);
	CHECK_EQ(validate2(ix, ar, &b, why, sizeof(why)), 0);
	edit_index(ix, "UPDATE meta SET value = 'libarchive' WHERE key = 'kind'", true);
	CHECK_EQ(validate2(ix, ar, &b, why, sizeof(why)), 0); /* it has members */
	edit_index(ix, "UPDATE meta SET value = '0' WHERE key = 'members'", true);
	expect_rebuilt(ar, ix, &b, "disk images");
	b2 = b;
	b2.recursion = 1;
	build_ok(ar, ix, &b2);
	CHECK_EQ(validate2(ix, ar, &b2, why, sizeof(why)), 0);
	edit_index(ix, "DELETE FROM meta WHERE key = 'readers'", true);
	expect_rebuilt(ar, ix, &b2, "disk images");
	build_ok(ar, ix, &b);

	/* an interrupted build: the members but no 'complete' marker, nor the seal */
	struct idx_input in = input_of(ar);
	CHECK_EQ(idx_build_base(&in, ix, &b, NULL), 0);
	src_free(in.src);
	expect_rebuilt(ar, ix, &b, "incomplete");
	edit_index(ix, "UPDATE meta SET value = '0' WHERE key = 'complete'", true);
	expect_rebuilt(ar, ix, &b, "incomplete");
	edit_index(ix, "DELETE FROM meta WHERE key = 'complete'", true);
	expect_rebuilt(ar, ix, &b, "incomplete");

	/* the seal: missing, of another application, or not matching the bytes */
	poke(ix, 60, 0xff, false); /* the checksum */
	expect_rebuilt(ar, ix, &b, "checksum");
	poke(ix, 71, 0x01, false); /* the application id */
	expect_rebuilt(ar, ix, &b, "checksum");
	edit_index(ix, "INSERT INTO meta VALUES ('edited', 'after the seal')", false);
	expect_rebuilt(ar, ix, &b, "checksum");
	CHECK_EQ(stat(ix, &st), 0);
	poke(ix, st.st_size / 2, 0x04, false); /* some byte of some page */
	CHECK_EQ(validate2(ix, ar, &b, why, sizeof(why)), -ESTALE);
	expect_rebuilt(ar, ix, &b, "");

	/* truncated: stale (rebuilt), never taken for another program's file */
	CHECK_EQ(stat(ix, &st), 0);
	off_t cuts[] = {st.st_size - 1, st.st_size / 2, 8192, 4096, 1000, 100, 16};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		copy_file(ix, cut);
		CHECK_EQ(truncate(cut, cuts[i]), 0);
		int err = validate2(cut, ar, &b, why, sizeof(why));
		if (err != -ESTALE) {
			fprintf(stderr,
				"%s:%d: an index cut to %lld bytes: %d (%s), expected "
				"-ESTALE\n",
				__FILE__, __LINE__, (long long)cuts[i], err, why);
			tu_failures++;
		}
		if (err == -ESTALE)
			expect_rebuilt(ar, cut, &b, "");
	}
	unlink(cut);

	/* not ours at all: never overwritten */
	write_file(cut, "just some text, not a database\n", 31);
	expect_refused(ar, cut, "not an SQLite");
	write_file(cut, "", 0);
	expect_refused(ar, cut, "not an SQLite");
	unlink(cut);
	sqlite3 *db = NULL;
	CHECK_EQ(sqlite3_open(cut, &db), SQLITE_OK);
	CHECK_EQ(sqlite3_exec(db, "CREATE TABLE t (x); INSERT INTO t VALUES (1)", NULL, NULL, NULL),
		 SQLITE_OK);
	sqlite3_close(db);
	expect_refused(ar, cut, "another program");
	edit_index(cut,
		   "CREATE TABLE meta (key TEXT PRIMARY KEY, value);"
		   "INSERT INTO meta VALUES ('owner', 'someone else')",
		   false);
	expect_refused(ar, cut, "another program");
	unlink(cut);
	CHECK_EQ(dir_count(dir, NULL), 2);
}

/* Sets every checkpoint's CRCs of stream 1 in the index ix to those of segments of
 * 1 << shift bytes of the decoded stream d, as an index that cuts them so would store. */
static void set_segment_crcs(const char *ix, const uint8_t *d, unsigned shift)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL, *u = NULL;

	CHECK_EQ(sqlite3_open_v2(ix, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	CHECK_EQ(sqlite3_prepare_v2(db, "SELECT id, uoff, ulen FROM checkpoints WHERE stream = 1",
				    -1, &q, NULL), SQLITE_OK);
	CHECK_EQ(sqlite3_prepare_v2(db, "UPDATE checkpoints SET crcs = ? WHERE id = ?", -1, &u, NULL),
		 SQLITE_OK);
	CHECK_EQ(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	while (q && u && sqlite3_step(q) == SQLITE_ROW) {
		uint64_t uoff = (uint64_t)sqlite3_column_int64(q, 1);
		uint64_t ulen = (uint64_t)sqlite3_column_int64(q, 2), n = seg_count(ulen, shift);
		uint8_t *blob = malloc(4 * n + 1);
		for (uint64_t k = 0; k < n; k++) {
			uint32_t c = (uint32_t)crc32(0, d + uoff + (k << shift),
						     (uInt)seg_len(ulen, k, shift));
			for (int j = 0; j < 4; j++)
				blob[4 * k + (uint64_t)j] = (uint8_t)(c >> (8 * j));
		}
		sqlite3_bind_blob(u, 1, blob, (int)(4 * n), SQLITE_TRANSIENT);
		sqlite3_bind_int64(u, 2, sqlite3_column_int64(q, 0));
		CHECK_EQ(sqlite3_step(u), SQLITE_DONE);
		sqlite3_reset(u);
		free(blob);
	}
	CHECK_EQ(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_finalize(q);
	sqlite3_finalize(u);
	CHECK_EQ(sqlite3_close(db), SQLITE_OK);
	CHECK_EQ(db_seal(ix), 0);
}

/* A query's first integer, or -1. */
static int64_t query_int(const char *ix, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL;
	int64_t v = -1;

	CHECK_EQ(sqlite3_open_v2(ix, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return v;
}

/* Opens ar with the index ix and reads its member "big" whole: true if every byte matched,
 * false if opening or reading it failed with -EIO. */
static bool read_big(const char *ar, const char *ix, const struct idx_build_opts *b,
		     const uint8_t *want, size_t size)
{
	struct idx_opts o = {.index_file = ix, .build = *b};
	struct arch_opts ao = aopts(&o);
	struct arch *a = NULL;
	struct arch_attr at;
	uint8_t *got = malloc(size);
	void *fh = NULL;
	size_t done = 0;
	ssize_t r = 0;

	CHECK_EQ(arch_open(ar, &ao, &a), 0);
	CHECK(a && !arch_get_info(a)->built);
	if (a && resolve(a, "big", &at) == 0 && (r = ops->open(a, at.ino, &fh)) == 0) {
		while (done < size && (r = ops->read(fh, got + done, 100000, done)) > 0)
			done += (size_t)r;
		ops->close(fh);
	}
	if (a)
		arch_close(a);
	bool ok = done == size && memcmp(got, want, size) == 0;
	if (!ok && r != -EIO)
		fprintf(stderr, "read_big: %zd after %zu bytes\n", r, done);
	CHECK(ok || r == -EIO);
	free(got);
	return ok;
}

/* A gzip stream's checkpoints hold a CRC per 64 KiB segment (IDX_CRCS_SEGMENTS_FINE), other
 * streams' per 1 MiB.  An index of format 5, whose gzip streams have 1 MiB segments
 * (IDX_CRCS_SEGMENTS), is still used as it is; CRCs that do not match the stream's segment
 * size make its reads fail, never return bytes. */
static void test_gzip_segments(void)
{
	const char *dir = pth("%s/segs", top);
	const char *gz = pth("%s/a.tar.gz", dir), *ix = pth("%s/i.sqlite", dir);
	struct idx_build_opts b = {.gzip_spacing = 256 << 10, .threads = 1};
	size_t size = 1200000;
	uint8_t *d = malloc(size);
	uint32_t x = 1;
	char why[256];

	mkdir_ok(dir);
	for (size_t i = 0; i < size; i++) { /* words of a small alphabet: deflate's many blocks */
		x = x * 1103515245u + 12345u;
		d[i] = (x >> 16) % 9 == 0 ? ' ' : (uint8_t)('a' + (x >> 20) % 12);
	}
	const struct member m = {.name = "big", .type = '0', .mode = 0644, .mtime = M0,
				 .data = d, .size = size};
	struct buf t = tar_of(&m, 1);
	write_gz(gz, t.p, t.len);
	CHECK_EQ(idx_build(gz, ix, &b, NULL), 0);
	CHECK_EQ(query_int(ix, "SELECT crcs FROM streams WHERE id = 1"), IDX_CRCS_SEGMENTS_FINE);
	CHECK(query_int(ix, "SELECT count(*) FROM checkpoints WHERE stream = 1") >= 4);
	CHECK(query_int(ix, "SELECT length(crcs) FROM checkpoints WHERE stream = 1 AND idx = 0") >= 4 * 4);
	CHECK(read_big(gz, ix, &b, d, size));
	/* format 5: 1 MiB segments */
	set_segment_crcs(ix, t.p, SEG_SHIFT);
	edit_index(ix, "UPDATE meta SET value = '5' WHERE key = 'format';"
		       "UPDATE streams SET crcs = 1 WHERE id = 1", true);
	CHECK_EQ(validate2(ix, gz, &b, why, sizeof(why)), 0);
	CHECK(read_big(gz, ix, &b, d, size));
	/* 1 MiB CRCs where 64 KiB ones belong (and back): damage */
	edit_index(ix, "UPDATE streams SET crcs = 3 WHERE id = 1", true);
	CHECK(!read_big(gz, ix, &b, d, size));
	set_segment_crcs(ix, t.p, SEG_SHIFT_FINE);
	CHECK(read_big(gz, ix, &b, d, size));
	edit_index(ix, "UPDATE streams SET crcs = 1 WHERE id = 1", true);
	CHECK(!read_big(gz, ix, &b, d, size));
	free(t.p);
	free(d);
}

/* Trust (validate.h): an index is used only if it is ours, root's or the archive owner's, and
 * not writable by others.  Needs root, to give files other owners. */
static void test_trust(void)
{
	const char *dir = pth("%s/trust", top);
	const char *ar = pth("%s/a.tar", dir), *ix = pth("%s/i.sqlite", dir);
	const char *beside = pth("%s/a.tar.index.sqlite", dir);
	struct idx_opts o = dflt();
	char why[256], *p;
	bool built;

	if (geteuid() != 0) {
		fprintf(stderr, "test_trust: skipped (needs root to chown)\n");
		return;
	}
	mkdir_ok(dir);
	write_std_tar(ar);
	build_ok(ar, ix, &o.build);

	/* someone else's (not the archive owner's) */
	CHECK_EQ(chown(ix, 4242, 4242), 0);
	CHECK_EQ(validate2(ix, ar, &o.build, why, sizeof(why)), -EPERM);
	CHECK(strstr(why, "4242") != NULL);
	struct snap s = snap_of(ix);
	o.index_file = ix;
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), -EPERM);
	CHECK(logged(TFS_LOG_ERR, "not using the index", ix));
	struct snap s2 = snap_of(ix);
	CHECK(snap_same(&s, &s2));
	/* beside the archive, not chosen by the user: the next location instead */
	o.index_file = NULL;
	copy_file(ix, beside);
	CHECK_EQ(chown(beside, 4242, 4242), 0);
	s = snap_of(beside);
	log_clear();
	CHECK_EQ(prep(ar, &o, &p, &built, NULL), 0);
	CHECK(built);
	if (p)
		CHECK(strncmp(p, getenv("XDG_CACHE_HOME"), strlen(getenv("XDG_CACHE_HOME"))) == 0);
	free(p);
	CHECK(logged(TFS_LOG_NOTICE, "not using the index", beside));
	s2 = snap_of(beside);
	CHECK(snap_same(&s, &s2));

	/* the archive owner's: trusted, unless writable by others */
	CHECK_EQ(chown(ar, 4242, 4242), 0);
	CHECK_EQ(chmod(ix, 0644), 0);
	CHECK_EQ(chown(ix, 4242, 4242), 0);
	CHECK_EQ(validate2(ix, ar, &o.build, why, sizeof(why)), 0);
	CHECK_EQ(chmod(ix, 0664), 0);
	CHECK_EQ(validate2(ix, ar, &o.build, why, sizeof(why)), -EPERM);
	CHECK_EQ(chmod(ix, 0646), 0);
	CHECK_EQ(validate2(ix, ar, &o.build, why, sizeof(why)), -EPERM);
	/* ours, even writable by others */
	CHECK_EQ(chown(ix, 0, 0), 0);
	CHECK_EQ(chmod(ix, 0666), 0);
	CHECK_EQ(validate2(ix, ar, &o.build, why, sizeof(why)), 0);
	unlink(beside);
}

int main(void)
{
	if (fixtures_init("validate"))
		return 1;
	test_validate();
	test_gzip_segments();
	test_trust();
	fixtures_fini();
	return tu_exit();
}
