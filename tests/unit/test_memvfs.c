/* Unit test of index images in memory (common/memvfs.h, db_file_to_mem, db_image_to_mem): an
 * index read into memory answers the same queries as the file, from several connections and
 * threads at once; it lives while a connection has it open and not after; what is not an
 * SQLite file in rollback mode, too large, or cut short is refused or reads as an error,
 * never as other rows.
 */
#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index/db.h"
#include "common/memvfs.h"
#include "testutil.h"

#define ROWS 20000	/* a ~0.4 MB database: an image on small pages */
#define ROWS_BIG 150000 /* ~3 MB: a 2 MiB piece on a huge page (memvfs.c), the tail on small ones */

static char dir[] = "/tmp/tarseek-memvfs-XXXXXX";

/* A database at path with rows rows of t(k, v), in journal mode mode. */
static void make_db(const char *path, const char *mode, int rows)
{
	char sql[256];
	sqlite3 *db;

	unlink(path);
	CHECK_EQ(sqlite3_open(path, &db), SQLITE_OK);
	snprintf(sql, sizeof(sql), "PRAGMA journal_mode=%s; CREATE TABLE t(k INTEGER PRIMARY KEY, v);",
		 mode);
	CHECK_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	snprintf(sql, sizeof(sql),
		 "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
		 "INSERT INTO t SELECT i, printf('row %%d', i * 7) FROM n",
		 rows);
	CHECK_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	CHECK_EQ(sqlite3_close(db), SQLITE_OK);
}

/* SELECT sum(length(v)) + sum(k) through a connection to name: -1 on any error. */
static long long checksum(const char *name)
{
	sqlite3 *db;
	sqlite3_stmt *st = NULL;
	long long r = -1;

	if (db_open_ro(name, &db) != 0)
		return -1;
	if (sqlite3_prepare_v2(db, "SELECT sum(length(v)) + sum(k) FROM t", -1, &st, NULL) ==
		    SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		r = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return r;
}

struct job {
	const char *name;
	long long want;
	int ok;
};

static void *worker(void *arg)
{
	struct job *j = arg;

	j->ok = 1;
	for (int i = 0; i < 20; i++)
		if (checksum(j->name) != j->want)
			j->ok = 0;
	return NULL;
}

/* An image of a database of rows rows, whose file is smaller than max_size or at least
 * min_size bytes. */
static void test_file(int rows, long min_size, long max_size)
{
	char path[128];
	char *name = NULL;
	sqlite3 *keeper = NULL;
	struct stat st_file;

	snprintf(path, sizeof(path), "%s/a.sqlite", dir);
	make_db(path, "DELETE", rows);
	CHECK_EQ(stat(path, &st_file), 0);
	CHECK(st_file.st_size >= min_size && st_file.st_size < max_size);
	long long want = checksum(path);
	CHECK(want > 0);

	CHECK_EQ(db_file_to_mem(path, 64u << 20, &name, &keeper), 0);
	CHECK(name && strncmp(name, MEMVFS_PREFIX, strlen(MEMVFS_PREFIX)) == 0);
	CHECK(keeper != NULL);
	unlink(path); /* the image does not read the file again */
	CHECK_EQ(checksum(name), want);

	/* four threads, each opening its own connections */
	pthread_t t[4];
	struct job j[4];
	for (int i = 0; i < 4; i++) {
		j[i] = (struct job){.name = name, .want = want};
		CHECK_EQ(pthread_create(&t[i], NULL, worker, &j[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK(j[i].ok);
	}

	/* a sort larger than the connection's cache, and a temporary table: their temporary
	 * files are the default VFS's */
	CHECK_EQ(sqlite3_exec(keeper, "PRAGMA temp_store=FILE; PRAGMA cache_size=2", NULL, NULL,
			      NULL),
		 SQLITE_OK);
	sqlite3_stmt *sort = NULL;
	CHECK_EQ(sqlite3_prepare_v2(keeper,
				    "SELECT count(*), sum(length(x)) FROM (SELECT v || k AS x FROM t "
				    "ORDER BY v || k DESC)",
				    -1, &sort, NULL),
		 SQLITE_OK);
	CHECK_EQ(sqlite3_step(sort), SQLITE_ROW);
	CHECK_EQ(sqlite3_column_int(sort, 0), rows);
	sqlite3_finalize(sort);
	CHECK_EQ(sqlite3_exec(keeper, "CREATE TEMP TABLE c AS SELECT * FROM t", NULL, NULL, NULL),
		 SQLITE_OK);
	CHECK_EQ(sqlite3_exec(keeper, "DROP TABLE c", NULL, NULL, NULL), SQLITE_OK);

	/* the image is read-only */
	CHECK(sqlite3_exec(keeper, "INSERT INTO t VALUES (0, 'x')", NULL, NULL, NULL) != SQLITE_OK);
	CHECK_EQ(checksum(name), want);

	/* it goes with its last connection: the name then opens nothing */
	sqlite3 *other = NULL;
	CHECK_EQ(db_open_ro(name, &other), 0);
	sqlite3_close(keeper);
	sqlite3_stmt *st = NULL;
	CHECK_EQ(sqlite3_prepare_v2(other, "SELECT count(*) FROM t", -1, &st, NULL), SQLITE_OK);
	CHECK_EQ(sqlite3_step(st), SQLITE_ROW);
	CHECK_EQ(sqlite3_column_int(st, 0), rows);
	sqlite3_finalize(st);
	sqlite3_close(other);
	CHECK_EQ(checksum(name), -1);
	free(name);
}

static void test_refused(void)
{
	char path[128];
	char *name = (char *)1;
	sqlite3 *keeper = (sqlite3 *)1;

	snprintf(path, sizeof(path), "%s/w.sqlite", dir);
	make_db(path, "WAL", ROWS);
	CHECK_EQ(db_file_to_mem(path, 64u << 20, &name, &keeper), -ENOTSUP);
	CHECK(name == NULL && keeper == NULL);

	snprintf(path, sizeof(path), "%s/b.sqlite", dir);
	make_db(path, "DELETE", ROWS);
	CHECK_EQ(db_file_to_mem(path, 4096, &name, &keeper), -EFBIG);
	CHECK_EQ(db_file_to_mem("/nonexistent/x.sqlite", 4096, &name, &keeper), -ENOENT);

	size_t len;
	uint8_t *img = tu_read_file(path, &len);
	CHECK(img && len > 8192);
	if (!img)
		return;
	/* not an SQLite file */
	uint8_t junk[4096];
	memset(junk, 'x', sizeof(junk));
	CHECK_EQ(db_image_to_mem(junk, sizeof(junk), &name, &keeper), -EIO);
	CHECK_EQ(db_image_to_mem(img, 50, &name, &keeper), -EIO);

	/* a copy of the whole image reads like the file */
	long long want = checksum(path);
	CHECK_EQ(db_image_to_mem(img, len, &name, &keeper), 0);
	CHECK_EQ(checksum(name), want);
	sqlite3_close(keeper);
	free(name);

	/* cut short: the rows past the cut are an error, never other rows */
	CHECK_EQ(db_image_to_mem(img, len / 2, &name, &keeper), 0);
	CHECK_EQ(checksum(name), -1);
	sqlite3_close(keeper);
	free(name);
	free(img);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_file(ROWS, 0, 2 << 20);
	test_file(ROWS_BIG, 2 << 20, 4 << 20);
	test_refused();
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
	return tu_exit();
}
