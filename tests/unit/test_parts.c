/* Split archives (common/parts.h): the name rules, the parts found beside a first part, reads
 * of the joined source at every offset and length across the parts' boundaries, and the
 * refusals -- a part missing in the middle, a part of the wrong length, a split zip without its
 * NAME.zip, a part cut short after it was joined. */
#include "common/parts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

static void check_whole(const char *path, const char *want)
{
	char *got = parts_whole_name(path);

	if (!want) {
		CHECK(got == NULL);
	} else {
		CHECK(got != NULL);
		if (got && strcmp(got, want) != 0) {
			fprintf(stderr, "parts_whole_name(%s) = %s, expected %s\n", path, got, want);
			tu_failures++;
		}
	}
	free(got);
}

static void test_names(void)
{
	check_whole("a/whole.tar.gz.001", "a/whole.tar.gz");
	check_whole("vol.7z.001", "vol.7z");
	check_whole("x.00", "x");
	check_whole("x.0001", "x");
	check_whole("x.002", NULL); /* not a first part */
	check_whole("x.1", NULL);   /* one digit: not split's */
	check_whole("sp.zip", "sp.zip");
	check_whole("d/sp.z01", "d/sp.zip");
	check_whole("SP.Z01", "SP.ZIP");
	check_whole("sp.z02", NULL);
	check_whole("plain.tar", NULL);
	check_whole(".001", NULL);
	check_whole("dir.001/file", NULL);
}

/* Every read of the joined source against the bytes it joins. */
static void check_reads(struct src *s, const uint8_t *want, size_t size)
{
	uint8_t buf[64];

	CHECK_EQ(src_size(s), size);
	for (size_t off = 0; off <= size + 1; off++) {
		for (size_t len = 0; len <= 20; len++) {
			memset(buf, 0xaa, sizeof(buf));
			ssize_t n = src_pread(s, buf, len, off);
			size_t expect = off >= size ? 0 : (size - off < len ? size - off : len);
			CHECK_EQ(n, (ssize_t)expect);
			if (n > 0 && memcmp(buf, want + off, (size_t)n) != 0) {
				fprintf(stderr, "joined read at %zu, %zu bytes: wrong bytes\n", off, len);
				tu_failures++;
			}
		}
	}
}

static void test_join_mem(void)
{
	uint8_t data[17];
	struct src *parts[3], *s;
	const uint64_t *starts;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 1);
	parts[0] = src_from_mem(data, 7);
	parts[1] = src_from_mem(data + 7, 7);
	parts[2] = src_from_mem(data + 14, 3);
	s = parts_join(parts, NULL, 3);
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ(parts_starts(s, &starts), 3);
	CHECK_EQ(starts[0], 0);
	CHECK_EQ(starts[1], 7);
	CHECK_EQ(starts[2], 14);
	CHECK_EQ(starts[3], 17);
	check_reads(s, data, sizeof(data));
	src_free(s);

	struct src *m = src_from_mem(data, 5);
	CHECK_EQ(parts_starts(m, &starts), 0);
	CHECK(starts == NULL);
	src_free(m);
}

static char dir[] = "/tmp/test_parts.XXXXXX";

static char *at(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		abort();
	return p;
}

static void put(const char *name, const uint8_t *data, size_t len)
{
	char *p = at(name);
	FILE *f = fopen(p, "wb");

	CHECK(f != NULL);
	if (f) {
		CHECK_EQ(fwrite(data, 1, len, f), len);
		fclose(f);
	}
	free(p);
}

static void rm(const char *name)
{
	char *p = at(name);

	unlink(p);
	free(p);
}

/* path opened and read whole: the bytes of want. */
static void check_open(const char *name, const uint8_t *want, size_t size)
{
	char *p = at(name);
	struct src *s = NULL;
	struct stat st;
	uint8_t *buf = malloc(size + 1);

	CHECK_EQ(parts_open(p, &s), 0);
	CHECK(s != NULL);
	if (s && buf) {
		CHECK_EQ(src_size(s), size);
		CHECK_EQ(src_pread(s, buf, size + 1, 0), (ssize_t)size);
		CHECK(memcmp(buf, want, size) == 0);
	}
	CHECK_EQ(parts_stat(p, &st), 0);
	CHECK_EQ(st.st_size, (off_t)size);
	src_free(s);
	free(buf);
	free(p);
}

static int find(const char *name, size_t *n)
{
	char *p = at(name), **names;
	int err = parts_find(p, true, &names, n);

	parts_names_free(names, *n);
	free(p);
	return err;
}

static void test_numbered(uint8_t *data)
{
	size_t n;
	char *p;
	struct src *s;

	put("w.tar.gz.001", data, 1000);
	CHECK_EQ(find("w.tar.gz.001", &n), 0); /* a first part alone is a file */
	CHECK_EQ(n, 0);
	check_open("w.tar.gz.001", data, 1000);
	put("w.tar.gz.002", data + 1000, 1000);
	put("w.tar.gz.003", data + 2000, 500);
	CHECK_EQ(find("w.tar.gz.001", &n), 0);
	CHECK_EQ(n, 3);
	CHECK_EQ(find("w.tar.gz.002", &n), 0); /* not a first part: a file */
	CHECK_EQ(n, 0);
	check_open("w.tar.gz.001", data, 2500);

	/* a part cut short after the source was joined: its reads fail, never short */
	p = at("w.tar.gz.001");
	CHECK_EQ(parts_open(p, &s), 0);
	free(p);
	p = at("w.tar.gz.002");
	CHECK_EQ(truncate(p, 600), 0);
	free(p);
	uint8_t buf[100];
	CHECK_EQ(src_pread(s, buf, sizeof(buf), 1450), 100); /* still there */
	CHECK_EQ(src_pread(s, buf, sizeof(buf), 1650), -EIO);
	src_free(s);

	/* a part of the wrong length, found before opening */
	CHECK_EQ(find("w.tar.gz.001", &n), -EIO);
	p = at("w.tar.gz.001");
	CHECK_EQ(parts_open(p, &s), -EIO);
	CHECK(s == NULL);
	free(p);
	put("w.tar.gz.002", data + 1000, 1000);

	/* a part missing in the middle: a later one beside says so */
	put("w.tar.gz.004", data, 10);
	rm("w.tar.gz.003");
	CHECK_EQ(find("w.tar.gz.001", &n), -ENOENT);
	rm("w.tar.gz.002");
	CHECK_EQ(find("w.tar.gz.001", &n), -ENOENT);
	rm("w.tar.gz.004");
	rm("w.tar.gz.001");

	/* numbered from 0, two digits */
	put("x.00", data, 300);
	put("x.01", data + 300, 300);
	put("x.02", data + 600, 1);
	check_open("x.00", data, 601);
	rm("x.00");
	rm("x.01");
	rm("x.02");
}

static void test_zip_names(uint8_t *data)
{
	size_t n;
	char *p, **names;

	put("sp.zip", data, 700);
	CHECK_EQ(find("sp.zip", &n), 0); /* a zip alone */
	CHECK_EQ(n, 0);
	put("sp.z01", data + 700, 1000);
	put("sp.z02", data + 1700, 1000);
	/* content order: sp.z01, sp.z02, then sp.zip, given either name */
	p = at("sp.zip");
	CHECK_EQ(parts_find(p, true, &names, &n), 0);
	CHECK_EQ(n, 3);
	if (n == 3) {
		CHECK(strstr(names[0], "/sp.z01") != NULL);
		CHECK(strstr(names[1], "/sp.z02") != NULL);
		CHECK(strstr(names[2], "/sp.zip") != NULL);
	}
	parts_names_free(names, n);
	free(p);
	uint8_t *want = malloc(2700);
	memcpy(want, data + 700, 2000);
	memcpy(want + 2000, data, 700);
	check_open("sp.zip", want, 2700);
	check_open("sp.z01", want, 2700);
	free(want);
	rm("sp.z01"); /* missing in the middle */
	CHECK_EQ(find("sp.zip", &n), -ENOENT);
	put("sp.z01", data + 700, 1000);
	rm("sp.zip"); /* the last part missing */
	CHECK_EQ(find("sp.z01", &n), -ENOENT);
	rm("sp.z01");
	rm("sp.z02");
}

/* A part rewritten later: the joined stat's mtime follows it. */
static void test_stat_mtime(uint8_t *data)
{
	struct stat a, b;
	struct timespec ts[2] = {{1000, 0}, {1000, 0}};
	char *p1, *p2;

	put("m.001", data, 100);
	put("m.002", data, 50);
	p1 = at("m.001");
	p2 = at("m.002");
	CHECK_EQ(utimensat(AT_FDCWD, p1, ts, 0), 0);
	CHECK_EQ(utimensat(AT_FDCWD, p2, ts, 0), 0);
	CHECK_EQ(parts_stat(p1, &a), 0);
	CHECK_EQ(a.st_size, 150);
	CHECK_EQ(a.st_mtim.tv_sec, 1000);
	ts[0].tv_sec = ts[1].tv_sec = 2000;
	CHECK_EQ(utimensat(AT_FDCWD, p2, ts, 0), 0);
	CHECK_EQ(parts_stat(p1, &b), 0);
	CHECK_EQ(b.st_mtim.tv_sec, 2000);
	unlink(p1);
	unlink(p2);
	free(p1);
	free(p2);
}

int main(void)
{
	uint8_t *data = malloc(4096);

	if (!data || !mkdtemp(dir))
		return 1;
	tu_fill(data, 4096, 37, 0);
	test_names();
	test_join_mem();
	test_numbered(data);
	test_zip_names(data);
	test_stat_mtime(data);
	rmdir(dir);
	free(data);
	return tu_exit();
}
