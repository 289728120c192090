/* The sqlar container (containers/sqlar.c) and codec (codecs/sqlar/, codecs/pieces.c) on SQLite
 * archives that `sqlite3 -Ac` makes at test start, loaded into memory (read by SQLite through
 * the memory source): compressed and stored members, a stored one of several MiB pieces,
 * empty files and folders, a link; every file's bytes through its stream, the scan's and the
 * decoders' at each checkpoint.  Damage: databases cut at many lengths (never other bytes), a
 * byte flipped at many places (never a crash), a byte flipped in a compressed blob (that file
 * fails, the others read); rows that lie (sizes, data, modes), written with SQLite's API; a
 * database whose sqlar is a view or lacks its columns (not an archive).  Skipped (77) without
 * the sqlite3 shell.
 */
#include "containers/container.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "common/log.h"
#include "image_fixtures.h"
#include "testutil.h"

#define NFILES 4 /* files with bytes in the tree */
#define BIG_LEN 2500000

static char src[512];
static uint8_t *big;

static void make_tree(const char *dir)
{
	uint8_t *b = malloc(3000001);

	snprintf(src, sizeof(src), "%s/src", dir);
	big = malloc(BIG_LEN);
	tu_fill(big, BIG_LEN, 1, 1);
	img_write(src, "big.txt", big, BIG_LEN);
	tu_fill(b, 3000001, 2, 0);
	img_write(src, "d/rand.bin", b, 3000001);
	tu_fill(b, 100, 3, 1);
	img_write(src, "d/small", b, 100);
	img_write(src, "empty", "", 0);
	memset(b, 0, 100000);
	img_write(src, "zeros", b, 100000);
	free(b);
	CHECK(img_sh("cd %s && ln -s big.txt link && mkdir empty_dir", src) == 0);
}

static uint8_t *make_archive(const char *dir, size_t *len)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/x.sqlar", dir);
	if (img_sh("cd %s && sqlite3 %s -Ac big.txt d empty zeros link empty_dir >/dev/null 2>&1",
		   src, path))
		return NULL;
	return tu_read_file(path, len);
}

static void check_archive(const uint8_t *db, size_t len)
{
	struct img_parse p;
	size_t ok, failed, wrong;
	const struct img_member *m;

	img_parse(&cont_sqlar, db, len, true, &p);
	CHECK_EQ(p.err, 0);
	CHECK(!p.st.damaged);
	img_check_files(&p, db, len, src, &ok, &failed, &wrong);
	CHECK_EQ(ok, NFILES);
	CHECK_EQ(failed, 0);
	CHECK_EQ(wrong, 0);
	CHECK((m = img_find(&p, "link")) && m->type == MEMBER_SYMLINK &&
	      strcmp(m->link, "big.txt") == 0);
	CHECK((m = img_find(&p, "empty")) && m->type == MEMBER_REG && m->size == 0);
	CHECK((m = img_find(&p, "empty_dir")) && m->type == MEMBER_DIR);
	CHECK((m = img_find(&p, "d/rand.bin")) && m->size == 3000001 && m->mode == 0644);
	img_parse_free(&p);
}

static void test_truncated(const uint8_t *db, size_t len)
{
	for (size_t cut = 0; cut < len; cut += cut < 4096 ? 311 : len / 37 + 1) {
		struct img_parse p;
		size_t ok, failed, wrong;
		struct src *in = src_from_mem(db, cut);
		bool probe = cont_sqlar.probe(in, db, cut < 512 ? cut : 512);
		src_free(in);
		if (!probe)
			continue;
		img_parse(&cont_sqlar, db, cut, false, &p);
		if (p.err == 0) {
			img_check_files(&p, db, cut, src, &ok, &failed, &wrong);
			CHECK_EQ(wrong, 0);
		} else {
			CHECK(p.err == -EIO || p.err == -EINVAL);
		}
		img_parse_free(&p);
	}
}

/* Flips everywhere: never a crash (stored blobs have no check: other bytes are possible). */
static void test_flips(const uint8_t *db, size_t len)
{
	uint8_t *b = malloc(len);

	for (size_t at = 0; at < len; at += at < 200 ? 7 : len / 71 + 1) {
		struct img_parse p;
		size_t ok, failed, wrong;
		memcpy(b, db, len);
		b[at] ^= 0x5a;
		struct src *in = src_from_mem(b, len);
		bool probe = cont_sqlar.probe(in, b, 512);
		src_free(in);
		if (!probe)
			continue;
		img_parse(&cont_sqlar, b, len, false, &p);
		if (p.err == 0)
			img_check_files(&p, b, len, src, &ok, &failed, &wrong);
		img_parse_free(&p);
	}
	free(b);
}

/* A byte flipped inside big.txt's compressed blob: big.txt fails, the others read whole. */
static void test_flipped_blob(const uint8_t *db, size_t len)
{
	uLongf zlen = compressBound(BIG_LEN);
	uint8_t *z = malloc(zlen), *b = malloc(len), *at;
	struct img_parse p;
	size_t ok, failed, wrong;

	CHECK_EQ(compress(z, &zlen, big, BIG_LEN), Z_OK); /* as sqlite3 -A compresses */
	memcpy(b, db, len);
	/* a run of 40 of its bytes that lies in one page (the shell's pages are 512 bytes) */
	at = NULL;
	for (size_t k = 1000; !at && k + 40 < zlen; k += 333)
		at = memmem(b, len, z + k, 40);
	CHECK(at != NULL);
	if (at) {
		at[20] ^= 0x55;
		img_parse(&cont_sqlar, b, len, true, &p);
		CHECK_EQ(p.err, 0);
		img_check_files(&p, b, len, src, &ok, &failed, &wrong);
		CHECK_EQ(ok, NFILES - 1);
		CHECK_EQ(failed, 1);
		CHECK_EQ(wrong, 0);
		img_parse_free(&p);
	}
	free(z);
	free(b);
}

/* A database written with SQLite's API: sql run, then the rows (name, mode, sz, data of
 * dlen bytes or NULL). */
struct row {
	const char *name;
	int mode;
	long long sz;
	const void *data;
	int dlen;
};

static uint8_t *make_db(const char *dir, const char *sql, const struct row *r, size_t n,
			size_t *len)
{
	char path[600];
	sqlite3 *db;
	sqlite3_stmt *st;

	snprintf(path, sizeof(path), "%s/rows.db", dir);
	unlink(path);
	CHECK_EQ(sqlite3_open(path, &db), SQLITE_OK);
	CHECK_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	if (n) {
		CHECK_EQ(sqlite3_prepare_v2(db, "INSERT INTO sqlar VALUES (?, ?, 1600000000, ?, ?)",
					    -1, &st, NULL), SQLITE_OK);
		for (size_t i = 0; i < n; i++) {
			sqlite3_bind_text(st, 1, r[i].name, -1, SQLITE_STATIC);
			sqlite3_bind_int(st, 2, r[i].mode);
			sqlite3_bind_int64(st, 3, r[i].sz);
			if (r[i].data)
				sqlite3_bind_blob(st, 4, r[i].data, r[i].dlen, SQLITE_STATIC);
			else
				sqlite3_bind_null(st, 4);
			CHECK_EQ(sqlite3_step(st), SQLITE_DONE);
			sqlite3_reset(st);
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return tu_read_file(path, len);
}

#define SCHEMA "CREATE TABLE sqlar(name TEXT PRIMARY KEY, mode INT, mtime INT, sz INT, data BLOB);"

static void test_lying_rows(const char *dir)
{
	uint8_t good[50000], z[60000];
	uLongf zlen = sizeof(z);
	char exp[600];
	size_t len, ok, failed, wrong;
	struct img_parse p;

	tu_fill(good, sizeof(good), 9, 1);
	CHECK_EQ(compress(z, &zlen, good, sizeof(good)), Z_OK);
	const struct row rows[] = {
		{"good.txt", 0100644, sizeof(good), z, (int)zlen},
		{"stored.bin", 0100644, 5, "12345", 5},
		{"fifo", 0010644, 5, "fifo!", 5}, /* sqlite3 -Ax writes it as a file */
		{"short.bin", 0100644, 10, "123", 3},
		{"more.txt", 0100644, sizeof(good) - 1, z, (int)zlen},
		{"fewer.txt", 0100644, sizeof(good) + 1, z, (int)zlen},
		{"nodata.bin", 0100644, 7, NULL, 0},
		{"garbage.bin", 0100644, 1000, "not zlib at all", 15},
		{"bomb.bin", 0100644, 1LL << 40, "x\x9c", 2}, /* more than zlib can make */
		{"negative.bin", 0100644, -5, "abc", 3},
		{"longer.bin", 0100644, 2, "abc", 3},
		{"dir", 0040755, 0, NULL, 0},
		{"huge-link", 0120777, -1, NULL, 0},
	};
	snprintf(exp, sizeof(exp), "%s/rows", dir);
	img_write(exp, "good.txt", good, sizeof(good));
	img_write(exp, "stored.bin", "12345", 5);
	img_write(exp, "fifo", "fifo!", 5);
	uint8_t *db = make_db(dir, SCHEMA, rows, sizeof(rows) / sizeof(rows[0]), &len);
	CHECK(db != NULL);
	if (!db)
		return;
	img_parse(&cont_sqlar, db, len, true, &p);
	CHECK_EQ(p.err, 0);
	CHECK(p.st.damaged);
	img_check_files(&p, db, len, exp, &ok, &failed, &wrong);
	CHECK_EQ(ok, 3);
	CHECK_EQ(failed, 7); /* negative.bin: listed empty, unreadable */
	CHECK_EQ(wrong, 0);
	img_parse_free(&p);
	free(db);
}

/* Not archives: sqlar a view (its query must not run), without its columns, absent. */
static void test_not_sqlar(const char *dir)
{
	static const char *const sqls[] = {
		"CREATE TABLE t(name, mode, mtime, sz, data);"
		"CREATE VIEW sqlar AS SELECT * FROM t;",
		"CREATE TABLE sqlar(name TEXT, mode INT, size INT, data BLOB);",
		"CREATE TABLE other(x);",
	};

	for (size_t i = 0; i < sizeof(sqls) / sizeof(sqls[0]); i++) {
		size_t len;
		uint8_t *db = make_db(dir, sqls[i], NULL, 0, &len);
		struct src *in;
		CHECK(db != NULL);
		if (!db)
			continue;
		in = src_from_mem(db, len);
		CHECK(!cont_sqlar.probe(in, db, len < 512 ? len : 512));
		src_free(in);
		free(db);
	}
}

int main(void)
{
	const char *dir;
	uint8_t *db;
	size_t len;

	if (!tu_have("sqlite3")) {
		fprintf(stderr, "sqlite3 not found: skipped\n");
		return 77;
	}
	tfs_log_level = getenv("TEST_VERBOSE") ? TFS_LOG_DEBUG : 0;
	dir = img_tmpdir();
	CHECK(dir != NULL);
	if (!dir)
		return tu_exit();
	make_tree(dir);
	db = make_archive(dir, &len);
	CHECK(db != NULL);
	if (db) {
		check_archive(db, len);
		img_damaged = true;
		test_truncated(db, len);
		test_flips(db, len);
		test_flipped_blob(db, len);
		img_damaged = false;
		free(db);
	}
	test_lying_rows(dir);
	test_not_sqlar(dir);
	if (!getenv("TEST_KEEP"))
		img_sh("rm -rf %s", dir);
	free(big);
	return tu_exit();
}
