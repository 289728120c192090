/* Unit tests of the tar parser on archives built in memory by a small header writer below:
 * every format variant the parser claims (v7, ustar, GNU, PAX), every field of the entries,
 * and damaged archives (bad checksums, truncation, absurd sizes, lying PAX records, garbage).
 * A recording source checks that the parser reads strictly forward and never reads the data
 * of regular members on a plain source.
 */
#include "containers/tar/tar.h"
#include "common/log.h"
#include "testutil.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include "tar_fixtures.h"

/* ---- the tests -------------------------------------------------------------------------- */

static const struct got *find(const struct result *r, const char *path)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->e[i].path, path))
			return &r->e[i];
	fprintf(stderr, "entry %s not found\n", path);
	tu_failures++;
	return NULL;
}

static void test_ustar(void)
{
	struct arch a = {0};
	char name100[101], prefix155[156], want[300];
	size_t off_file, off_dir, off_long, off_sym, off_hard, off_chr, off_blk, off_fifo, off_cont;
	struct result *r;
	const struct got *g;

	struct hdr f = {.fmt = F_USTAR,
			.name = "dir/file.txt",
			.type = '0',
			.size = 11,
			.mode = 0100640,
			.uid = 1000,
			.gid = 100,
			.mtime = 1700000000,
			.uname = "alice",
			.gname = "users"};
	off_file = add(&a, &f, "hello world", 11);
	struct hdr d = {.fmt = F_USTAR, .name = "dir/", .type = '5', .mode = 040755, .mtime = 5};
	off_dir = add(&a, &d, NULL, 0);
	memset(name100, 'n', 100);
	name100[100] = 0;
	memset(prefix155, 'p', 155);
	prefix155[155] = 0;
	struct hdr l = {
	    .fmt = F_USTAR, .name = name100, .prefix = prefix155, .type = '0', .size = 3};
	off_long = add(&a, &l, "abc", 3);
	struct hdr s = {
	    .fmt = F_USTAR, .name = "sym", .type = '2', .link = "../target/x", .mode = 0777};
	off_sym = add(&a, &s, NULL, 0);
	struct hdr hl = {.fmt = F_USTAR, .name = "hard", .type = '1', .link = "dir/file.txt"};
	off_hard = add(&a, &hl, NULL, 0);
	struct hdr c = {.fmt = F_USTAR,
			.name = "dev/null",
			.type = '3',
			.devmajor = 1,
			.devminor = 3,
			.mode = 0666};
	off_chr = add(&a, &c, NULL, 0);
	struct hdr b = {.fmt = F_USTAR,
			.name = "dev/sda",
			.type = '4',
			.devmajor = 8,
			.devminor = 0,
			.mode = 0660};
	off_blk = add(&a, &b, NULL, 0);
	struct hdr p = {.fmt = F_USTAR, .name = "fifo", .type = '6', .mode = 01644};
	off_fifo = add(&a, &p, NULL, 0);
	struct hdr ct = {.fmt = F_USTAR, .name = "contig", .type = '7', .size = 2, .mode = 04755};
	off_cont = add(&a, &ct, "zz", 2);
	a_zeros(&a, 2);

	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 9);
	CHECK_EQ(r->warnings, 0);
	CHECK(!r->st.truncated && !r->st.garbage && !r->st.bad_headers);
	CHECK_EQ(r->st.end_off, a.len);

	g = find(r, "dir/file.txt");
	if (g) {
		CHECK_EQ(g->type, MEMBER_REG);
		CHECK_EQ(g->hdr_off, off_file);
		CHECK_EQ(g->data_off, off_file + 512);
		CHECK(!memcmp(a.p + g->data_off, "hello world", 11));
		CHECK_EQ(g->size, 11);
		CHECK_EQ(g->stored, 11);
		CHECK_EQ(g->mode, 0640);
		CHECK_EQ(g->uid, 1000);
		CHECK_EQ(g->gid, 100);
		CHECK_EQ(g->mtime_sec, 1700000000);
		CHECK_EQ(g->mtime_nsec, 0);
		CHECK(!strcmp(g->uname, "alice"));
		CHECK(!strcmp(g->gname, "users"));
		CHECK_EQ(g->link_len, 0);
		CHECK(!g->has_sparse);
		CHECK_EQ(g->nx, 0);
	}
	g = find(r, "dir/");
	if (g) {
		CHECK_EQ(g->type, MEMBER_DIR);
		CHECK_EQ(g->mode, 0755);
		CHECK_EQ(g->size, 0);
		CHECK_EQ(g->hdr_off, off_dir);
		CHECK_EQ(g->mtime_sec, 5);
	}
	snprintf(want, sizeof(want), "%s/%s", prefix155, name100);
	g = find(r, want);
	if (g) {
		CHECK_EQ(g->path_len, 256);
		CHECK_EQ(g->hdr_off, off_long);
		CHECK_EQ(g->size, 3);
		CHECK(!memcmp(a.p + g->data_off, "abc", 3));
	}
	g = find(r, "sym");
	if (g) {
		CHECK_EQ(g->type, MEMBER_SYMLINK);
		CHECK(!strcmp(g->link, "../target/x"));
		CHECK_EQ(g->link_len, 11);
		CHECK_EQ(g->mode, 0777);
		CHECK_EQ(g->size, 0);
		CHECK_EQ(g->hdr_off, off_sym);
	}
	g = find(r, "hard");
	if (g) {
		CHECK_EQ(g->type, MEMBER_HARDLINK);
		CHECK(!strcmp(g->link, "dir/file.txt"));
		CHECK_EQ(g->size, 0);
		CHECK_EQ(g->stored, 0);
		CHECK_EQ(g->hdr_off, off_hard);
	}
	g = find(r, "dev/null");
	if (g) {
		CHECK_EQ(g->type, MEMBER_CHR);
		CHECK_EQ(g->dev_major, 1);
		CHECK_EQ(g->dev_minor, 3);
		CHECK_EQ(g->mode, 0666);
		CHECK_EQ(g->hdr_off, off_chr);
		CHECK_EQ(g->link_len, 0);
	}
	g = find(r, "dev/sda");
	if (g) {
		CHECK_EQ(g->type, MEMBER_BLK);
		CHECK_EQ(g->dev_major, 8);
		CHECK_EQ(g->dev_minor, 0);
		CHECK_EQ(g->hdr_off, off_blk);
	}
	g = find(r, "fifo");
	if (g) {
		CHECK_EQ(g->type, MEMBER_FIFO);
		CHECK_EQ(g->mode, 01644);
		CHECK_EQ(g->hdr_off, off_fifo);
		CHECK_EQ(g->dev_major, 0);
	}
	g = find(r, "contig");
	if (g) {
		CHECK_EQ(g->type, MEMBER_REG);
		CHECK_EQ(g->mode, 04755);
		CHECK_EQ(g->size, 2);
		CHECK_EQ(g->hdr_off, off_cont);
	}
	/* entries come in archive order */
	for (size_t i = 1; i < r->n; i++)
		CHECK(r->e[i].hdr_off > r->e[i - 1].hdr_off);
	result_free(r);
	free(a.p);
}

static void test_v7(void)
{
	struct arch a = {0};
	char name100[101];
	struct result *r;
	const struct got *g;

	memset(name100, 'v', 100);
	name100[100] = 0;
	struct hdr f = {.fmt = F_V7,
			.name = name100,
			.type = '\0',
			.size = 4,
			.mode = 0600,
			.uid = 7,
			.gid = 8,
			.mtime = 123456789};
	add(&a, &f, "data", 4);
	struct hdr d = {.fmt = F_V7, .name = "olddir/", .type = '\0', .mode = 0755};
	add(&a, &d, NULL, 0);
	struct hdr l = {.fmt = F_V7, .name = "ln", .type = '1', .link = name100};
	add(&a, &l, NULL, 0);
	/* a v7 header never has a prefix: a name followed by junk where ustar has it */
	struct hdr s = {.fmt = F_V7, .name = "sym", .type = '2', .link = "t"};
	add(&a, &s, NULL, 0);
	a_zeros(&a, 2);

	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 4);
	CHECK_EQ(r->warnings, 0);
	if (r->n == 4) {
		g = &r->e[0];
		CHECK(!strcmp(g->path, name100));
		CHECK_EQ(g->path_len, 100);
		CHECK_EQ(g->type, MEMBER_REG);
		CHECK_EQ(g->size, 4);
		CHECK_EQ(g->mode, 0600);
		CHECK_EQ(g->uid, 7);
		CHECK_EQ(g->gid, 8);
		CHECK_EQ(g->mtime_sec, 123456789);
		CHECK(!strcmp(g->uname, ""));
		CHECK(!strcmp(g->gname, ""));
		CHECK_EQ(r->e[1].type, MEMBER_DIR);
		CHECK(!strcmp(r->e[1].path, "olddir/"));
		CHECK_EQ(r->e[2].type, MEMBER_HARDLINK);
		CHECK_EQ(r->e[2].link_len, 100);
		CHECK(!strcmp(r->e[2].link, name100));
		CHECK_EQ(r->e[3].type, MEMBER_SYMLINK);
	}
	result_free(r);
	free(a.p);
}

/* Old GNU sparse header: n extents, the first 4 in the header, the rest in extension blocks. */
static size_t add_gnu_sparse(struct arch *a, const char *name, const struct member_sparse *sp,
			     size_t n, uint64_t realsize, const uint8_t *data)
{
	uint8_t b[512];
	uint64_t stored = 0;
	size_t off = a->len, i = 0;

	for (size_t k = 0; k < n; k++)
		stored += sp[k].len;
	struct hdr h = {.fmt = F_GNU, .name = name, .type = 'S', .size = stored, .mtime = 77};
	mk_header(b, &h);
	for (; i < n && i < 4; i++) {
		octal(b + 386 + i * 24, 12, sp[i].off);
		octal(b + 386 + i * 24 + 12, 12, sp[i].len);
	}
	b[482] = n > 4;
	octal(b + 483, 12, realsize);
	set_chksum(b);
	a_put(a, b, 512);
	while (i < n) {
		memset(b, 0, 512);
		for (int k = 0; k < 21 && i < n; k++, i++) {
			octal(b + k * 24, 12, sp[i].off);
			octal(b + k * 24 + 12, 12, sp[i].len);
		}
		b[504] = i < n;
		a_put(a, b, 512);
	}
	a_put(a, data, stored);
	a_pad(a);
	return off;
}

static void test_gnu(void)
{
	struct arch a = {0};
	char longname[301], longlink[401];
	struct member_sparse sp[30];
	uint8_t sdata[30 * 3];
	size_t off_long, off_sparse, off_after;
	struct result *r;
	const struct got *g;

	memset(longname, 'L', 300);
	longname[300] = 0;
	memcpy(longname, "deep/", 5);
	memset(longlink, 'K', 400);
	longlink[400] = 0;

	off_long = a.len;
	add_long(&a, 'L', longname);
	struct hdr f = {.fmt = F_GNU,
			.name = "truncated-name",
			.type = '0',
			.size = 5,
			.b256_size = true,
			.mtime = -86400,
			.b256_mtime = true,
			.uid = 1ull << 40,
			.gid = 70000,
			.b256_uid = true,
			.uname = "u",
			.gname = "g"};
	add(&a, &f, "12345", 5);
	add_long(&a, 'L', "a/long/symlink/name");
	add_long(&a, 'K', longlink);
	struct hdr s = {.fmt = F_GNU, .name = "short", .type = '2', .link = "shortlink"};
	add(&a, &s, NULL, 0);
	/* an incremental dump directory: a directory whose data (the names) is skipped */
	struct hdr d = {.fmt = F_GNU, .name = "dumpdir/", .type = 'D', .size = 12, .mode = 0700};
	add(&a, &d, "Yfile\0Nold\0\0", 12);
	/* volume label, old long names, multi-volume continuation: skipped */
	struct hdr v = {.fmt = F_GNU, .name = "My Volume", .type = 'V'};
	add(&a, &v, NULL, 0);
	struct hdr nn = {.fmt = F_GNU, .name = "names", .type = 'N', .size = 600};
	add(&a, &nn, NULL, 600);
	struct hdr m = {.fmt = F_GNU, .name = "continued", .type = 'M', .size = 10};
	add(&a, &m, "0123456789", 10);
	/* old GNU sparse with 30 extents: 4 in the header, 21 + 5 in two extension blocks */
	for (int i = 0; i < 30; i++) {
		sp[i].off = (uint64_t)i * 10000 + 7;
		sp[i].len = 3;
		sdata[i * 3] = (uint8_t)i;
		sdata[i * 3 + 1] = 'x';
		sdata[i * 3 + 2] = 'y';
	}
	off_sparse = add_gnu_sparse(&a, "sparse", sp, 30, 1000000, sdata);
	off_after = add_file(&a, F_GNU, "after", "after sparse");
	a_zeros(&a, 2);

	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 5);
	CHECK_EQ(r->warnings, 2); /* N and M */
	CHECK(logged("volume label 'My Volume'"));
	g = find(r, longname);
	if (g) {
		CHECK_EQ(g->path_len, 300);
		CHECK_EQ(g->hdr_off, off_long);
		CHECK_EQ(g->type, MEMBER_REG);
		CHECK_EQ(g->size, 5);
		CHECK(!memcmp(a.p + g->data_off, "12345", 5));
		CHECK_EQ(g->mtime_sec, -86400);
		CHECK_EQ(g->uid, 1ull << 40);
		CHECK_EQ(g->gid, 70000);
		CHECK(!strcmp(g->uname, "u"));
	}
	g = find(r, "a/long/symlink/name");
	if (g) {
		CHECK_EQ(g->type, MEMBER_SYMLINK);
		CHECK_EQ(g->link_len, 400);
		CHECK(!strcmp(g->link, longlink));
	}
	g = find(r, "dumpdir/");
	if (g) {
		CHECK_EQ(g->type, MEMBER_DIR);
		CHECK_EQ(g->size, 0);
		CHECK_EQ(g->stored, 12);
		CHECK_EQ(g->mode, 0700);
	}
	g = find(r, "sparse");
	if (g) {
		CHECK_EQ(g->type, MEMBER_REG);
		CHECK_EQ(g->hdr_off, off_sparse);
		CHECK_EQ(g->data_off, off_sparse + 3 * 512);
		CHECK_EQ(g->size, 1000000);
		CHECK_EQ(g->stored, 90);
		CHECK(g->has_sparse);
		CHECK_EQ(g->nsp, 30);
		for (size_t i = 0; i < g->nsp && i < 30; i++) {
			CHECK_EQ(g->sp[i].off, sp[i].off);
			CHECK_EQ(g->sp[i].len, 3);
		}
		CHECK(!memcmp(a.p + g->data_off, sdata, 90));
		CHECK_EQ(g->mtime_sec, 77);
	}
	g = find(r, "after");
	if (g)
		CHECK_EQ(g->hdr_off, off_after);
	result_free(r);
	free(a.p);
}

/* A PAX 'x' header from a record list, then the member. */
static size_t add_pax_member(struct arch *a, struct arch *recs, const struct hdr *h,
			     const void *data, size_t len)
{
	size_t off = add_meta(a, 'x', recs->p, recs->len);

	add(a, h, data, len);
	recs->len = 0;
	return off;
}

static void test_pax(void)
{
	struct arch a = {0}, x = {0};
	char longname[600];
	static const uint8_t bin[] = {'a', 0, '\n', '=', 0xff, 'z'};
	size_t off1, off_sp0, off_sp1, off_sp10, off_hard;
	struct result *r;
	const struct got *g;

	memset(longname, 'P', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;

	/* global: uname and mtime for everyone, until overridden */
	pax_str(&x, "uname", "globaluser");
	pax_str(&x, "mtime", "42.5");
	pax_str(&x, "comment", "ignored");
	add_meta(&a, 'g', x.p, x.len);
	x.len = 0;

	pax_str(&x, "path", longname);
	pax_str(&x, "linkpath", "ignored for a regular file");
	pax_str(&x, "size", "7");
	pax_str(&x, "uid", "4000000000");
	pax_str(&x, "gid", "12345678901");
	pax_str(&x, "gname", "grp with spaces");
	pax_str(&x, "mtime", "1234567890.123456789123");
	pax_rec(&x, "SCHILY.xattr.user.bin", bin, sizeof(bin));
	pax_str(&x, "LIBARCHIVE.xattr.user.%41%3db", "aGVsbG8="); /* user.A=b: "hello" */
	pax_str(&x, "SCHILY.xattr.security.dup", "old");
	pax_str(&x, "LIBARCHIVE.xattr.security.dup", "bmV3"); /* "new" replaces "old" */
	struct hdr f = {.fmt = F_USTAR,
			.name = "short",
			.type = '0',
			.size = 3,
			.mtime = 1,
			.uid = 1,
			.gid = 2,
			.uname = "hdruser"};
	off1 = add_pax_member(&a, &x, &f, "seven!!", 7); /* PAX size 7 overrides the header's 3 */

	/* inherits the global uname and mtime */
	add_file(&a, F_USTAR, "plain", "p");

	/* negative fractional mtime; an empty value deletes the global uname */
	pax_str(&x, "mtime", "-1.25");
	pax_str(&x, "uname", "");
	struct hdr f2 = {.fmt = F_USTAR, .name = "neg", .type = '0', .uname = "fromheader"};
	add_pax_member(&a, &x, &f2, NULL, 0);

	/* a new global overrides mtime for the rest */
	pax_str(&x, "mtime", "-100");
	add_meta(&a, 'g', x.p, x.len);
	x.len = 0;
	add_file(&a, F_USTAR, "later", "l");

	/* linkpath for a symlink, a long one */
	pax_str(&x, "linkpath", longname);
	struct hdr s = {.fmt = F_USTAR, .name = "sym", .type = '2', .link = "short"};
	add_pax_member(&a, &x, &s, NULL, 0);

	/* a hard link that stores data (star, PAX): the data is skipped by the PAX size */
	pax_str(&x, "size", "1000");
	struct hdr hl = {.fmt = F_USTAR, .name = "hardwithdata", .type = '1', .link = "plain"};
	uint8_t junk[1000];
	memset(junk, 'J', sizeof(junk));
	off_hard = add_pax_member(&a, &x, &hl, junk, sizeof(junk));

	/* devices through SCHILY.devmajor/devminor */
	pax_str(&x, "SCHILY.devmajor", "300");
	pax_str(&x, "SCHILY.devminor", "70000");
	struct hdr c = {.fmt = F_USTAR, .name = "bigdev", .type = '3'};
	add_pax_member(&a, &x, &c, NULL, 0);

	/* sparse 0.0: repeated offset/numbytes */
	pax_str(&x, "GNU.sparse.size", "50000");
	pax_str(&x, "GNU.sparse.numblocks", "3");
	pax_str(&x, "GNU.sparse.offset", "0");
	pax_str(&x, "GNU.sparse.numbytes", "2");
	pax_str(&x, "GNU.sparse.offset", "40000");
	pax_str(&x, "GNU.sparse.numbytes", "3");
	pax_str(&x, "GNU.sparse.offset", "50000");
	pax_str(&x, "GNU.sparse.numbytes", "0");
	struct hdr s0 = {.fmt = F_USTAR, .name = "sparse00", .type = '0', .size = 5};
	off_sp0 = add_pax_member(&a, &x, &s0, "ABCDE", 5);

	/* sparse 0.1: GNU.sparse.map and GNU.sparse.name */
	pax_str(&x, "GNU.sparse.size", "9000");
	pax_str(&x, "GNU.sparse.numblocks", "2");
	pax_str(&x, "GNU.sparse.name", "real/sparse01");
	pax_str(&x, "GNU.sparse.map", "100,4,8000,1");
	pax_str(&x, "path", "overridden/by/sparse/name");
	struct hdr s1 = {
	    .fmt = F_USTAR, .name = "GNUSparseFile.1/sparse01", .type = '0', .size = 5};
	off_sp1 = add_pax_member(&a, &x, &s1, "abcde", 5);

	/* sparse 1.0: the map is in the data */
	pax_str(&x, "GNU.sparse.major", "1");
	pax_str(&x, "GNU.sparse.minor", "0");
	pax_str(&x, "GNU.sparse.name", "sparse10");
	pax_str(&x, "GNU.sparse.realsize", "3000000");
	{
		uint8_t d[1024 + 10];
		memset(d, 0, sizeof(d));
		strcpy((char *)d, "3\n0\n4\n1048576\n6\n3000000\n0\n");
		memcpy(d + 512, "WXYZ012345", 10);
		struct hdr s10 = {.fmt = F_USTAR,
				  .name = "GNUSparseFile.0/sparse10",
				  .type = '0',
				  .size = 512 + 10};
		off_sp10 = add_pax_member(&a, &x, &s10, d, 512 + 10);
	}
	a_zeros(&a, 2);

	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 10);
	CHECK_EQ(r->warnings, 0);
	g = find(r, longname);
	if (g) {
		CHECK_EQ(g->hdr_off, off1);
		CHECK_EQ(g->type, MEMBER_REG);
		CHECK_EQ(g->size, 7);
		CHECK_EQ(g->stored, 7);
		CHECK(!memcmp(a.p + g->data_off, "seven!!", 7));
		CHECK_EQ(g->uid, 4000000000u);
		CHECK_EQ(g->gid, 12345678901ull);
		CHECK(!strcmp(g->uname, "globaluser"));
		CHECK(!strcmp(g->gname, "grp with spaces"));
		CHECK_EQ(g->mtime_sec, 1234567890);
		CHECK_EQ(g->mtime_nsec, 123456789);
		CHECK_EQ(g->link_len, 0);
		CHECK_EQ(g->nx, 3);
		CHECK(!strcmp(g->xname[0], "user.bin"));
		CHECK_EQ(g->xlen[0], sizeof(bin));
		CHECK(!memcmp(g->xval[0], bin, sizeof(bin)));
		CHECK(!strcmp(g->xname[1], "user.A=b"));
		CHECK_EQ(g->xlen[1], 5);
		CHECK(!memcmp(g->xval[1], "hello", 5));
		CHECK(!strcmp(g->xname[2], "security.dup"));
		CHECK_EQ(g->xlen[2], 3);
		CHECK(!memcmp(g->xval[2], "new", 3));
	}
	g = find(r, "plain");
	if (g) {
		CHECK(!strcmp(g->uname, "globaluser"));
		CHECK_EQ(g->mtime_sec, 42);
		CHECK_EQ(g->mtime_nsec, 500000000);
		CHECK_EQ(g->uid, 0);
		CHECK_EQ(g->nx, 0);
	}
	g = find(r, "neg");
	if (g) {
		CHECK_EQ(g->mtime_sec, -2);
		CHECK_EQ(g->mtime_nsec, 750000000);
		CHECK(!strcmp(g->uname, "fromheader"));
	}
	g = find(r, "later");
	if (g) {
		CHECK_EQ(g->mtime_sec, -100);
		CHECK_EQ(g->mtime_nsec, 0);
		CHECK(!strcmp(g->uname, "globaluser"));
	}
	g = find(r, "sym");
	if (g) {
		CHECK_EQ(g->type, MEMBER_SYMLINK);
		CHECK(!strcmp(g->link, longname));
	}
	g = find(r, "hardwithdata");
	if (g) {
		CHECK_EQ(g->type, MEMBER_HARDLINK);
		CHECK_EQ(g->hdr_off, off_hard);
		CHECK_EQ(g->size, 0);
		CHECK_EQ(g->stored, 1000);
		CHECK(!strcmp(g->link, "plain"));
	}
	g = find(r, "bigdev");
	if (g) {
		CHECK_EQ(g->dev_major, 300);
		CHECK_EQ(g->dev_minor, 70000);
	}
	g = find(r, "sparse00");
	if (g) {
		CHECK_EQ(g->hdr_off, off_sp0);
		CHECK(g->has_sparse);
		CHECK_EQ(g->size, 50000);
		CHECK_EQ(g->stored, 5);
		CHECK_EQ(g->nsp, 2); /* the empty extent at the end is dropped */
		CHECK_EQ(g->sp[0].off, 0);
		CHECK_EQ(g->sp[0].len, 2);
		CHECK_EQ(g->sp[1].off, 40000);
		CHECK_EQ(g->sp[1].len, 3);
		CHECK(!memcmp(a.p + g->data_off, "ABCDE", 5));
	}
	g = find(r, "real/sparse01");
	if (g) {
		CHECK_EQ(g->hdr_off, off_sp1);
		CHECK_EQ(g->size, 9000);
		CHECK_EQ(g->nsp, 2);
		CHECK_EQ(g->sp[0].off, 100);
		CHECK_EQ(g->sp[0].len, 4);
		CHECK_EQ(g->sp[1].off, 8000);
		CHECK_EQ(g->sp[1].len, 1);
	}
	g = find(r, "sparse10");
	if (g) {
		CHECK_EQ(g->hdr_off, off_sp10);
		CHECK_EQ(g->data_off, off_sp10 + 2048);
		CHECK_EQ(g->size, 3000000);
		CHECK_EQ(g->stored, 10);
		CHECK_EQ(g->nsp, 2);
		CHECK_EQ(g->sp[0].off, 0);
		CHECK_EQ(g->sp[0].len, 4);
		CHECK_EQ(g->sp[1].off, 1048576);
		CHECK_EQ(g->sp[1].len, 6);
		CHECK(!memcmp(a.p + g->data_off, "WXYZ012345", 10));
	}
	result_free(r);
	free(a.p);
	free(x.p);
}

static void test_sparse_all_hole(void)
{
	struct arch a = {0}, x = {0};
	struct result *r;

	pax_str(&x, "GNU.sparse.major", "1");
	pax_str(&x, "GNU.sparse.minor", "0");
	pax_str(&x, "GNU.sparse.name", "hole");
	pax_str(&x, "GNU.sparse.realsize", "1048576");
	uint8_t d[512] = "1\n1048576\n0\n";
	struct hdr s = {.fmt = F_USTAR, .name = "GNUSparseFile.0/hole", .type = '0', .size = 512};
	add_pax_member(&a, &x, &s, d, 512);
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 1);
	if (r->n == 1) {
		CHECK(r->e[0].has_sparse);
		CHECK_EQ(r->e[0].nsp, 0);
		CHECK_EQ(r->e[0].size, 1048576);
		CHECK_EQ(r->e[0].stored, 0);
	}
	result_free(r);
	free(a.p);
	free(x.p);
}

/* Two members, the first header damaged: reported, the second found by resynchronising. */
static void test_bad_checksum(void)
{
	struct arch a = {0};
	struct result *r;
	size_t bad, good;
	char msg[64];

	add_file(&a, F_USTAR, "first", "1");
	bad = add_file(&a, F_USTAR, "damaged", "this member's header is broken");
	good = add_file(&a, F_USTAR, "second", "2");
	a_zeros(&a, 2);
	a.p[bad + 10] ^= 0x55;

	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 2);
	CHECK_EQ(r->st.bad_headers, 1);
	CHECK(!r->st.truncated && !r->st.garbage);
	CHECK_EQ(r->warnings, 1);
	snprintf(msg, sizeof(msg), "bad header at offset %zu", bad);
	CHECK(logged(msg));
	if (r->n == 2) {
		CHECK(!strcmp(r->e[0].path, "first"));
		CHECK(!strcmp(r->e[1].path, "second"));
		CHECK_EQ(r->e[1].hdr_off, good);
	}
	result_free(r);

	/* the damaged block holds zeros and a data block that looks like nothing: still found */
	a.p[bad + 512] = 0;
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->n, 2);
	CHECK_EQ(r->st.bad_headers, 1);
	result_free(r);

	/* an invalid size field with a valid checksum is a bad header too */
	memcpy(a.p + bad + 124, "99999999999x", 12);
	set_chksum(a.p + bad);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 2);
	CHECK_EQ(r->st.bad_headers, 1);
	CHECK(logged("invalid size field"));
	result_free(r);
	free(a.p);
}

static void test_signed_checksum(void)
{
	uint8_t b[512];
	int sum = 0;
	struct hdr h = {.fmt = F_USTAR, .name = "\xe9t\xe9", .type = '0'};

	mk_header(b, &h);
	CHECK(tar_header_valid(b));
	/* old Sun tar: the sum of signed chars */
	memset(b + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += (int8_t)b[i];
	snprintf((char *)b + 148, 8, "%06o", sum);
	CHECK(tar_header_valid(b));
	b[148] = 'x';
	CHECK(!tar_header_valid(b));
	memset(b, 0, sizeof(b));
	CHECK(!tar_header_valid(b));
}

static void test_truncated(void)
{
	struct arch a = {0};
	struct result *r;
	size_t second, third, cut;
	uint8_t big[3000];

	memset(big, 'B', sizeof(big));
	add_file(&a, F_USTAR, "first", "1");
	second = a.len;
	struct hdr h = {.fmt = F_USTAR, .name = "second", .type = '0', .size = sizeof(big)};
	add(&a, &h, big, sizeof(big));
	third = add_file(&a, F_USTAR, "third", "3");
	a_zeros(&a, 2);

	/* inside the data of the second member */
	r = parse_mem(a.p, second + 512 + 1000);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 1);
	CHECK(r->st.truncated);
	CHECK_EQ(r->st.end_off, second);
	CHECK_EQ(r->warnings, 1);
	CHECK(logged("truncated archive"));
	result_free(r);

	/* inside the header of the third member */
	r = parse_mem(a.p, third + 300);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 2);
	CHECK(r->st.truncated);
	CHECK_EQ(r->warnings, 1);
	result_free(r);

	/* exactly after the data of the second member, its padding missing: complete */
	r = parse_mem(a.p, second + 512 + sizeof(big));
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 2);
	CHECK(!r->st.truncated);
	CHECK_EQ(r->warnings, 0);
	result_free(r);

	/* after a long-name header, before its member */
	free(a.p);
	memset(&a, 0, sizeof(a));
	add_file(&a, F_GNU, "first", "1");
	cut = a.len;
	add_long(&a, 'L', "some/long/name");
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 1);
	CHECK(r->st.truncated);
	CHECK_EQ(r->st.end_off, cut);
	result_free(r);
	/* inside the long name's payload */
	r = parse_mem(a.p, cut + 512 + 4);
	CHECK_EQ(r->n, 1);
	CHECK(r->st.truncated);
	result_free(r);
	free(a.p);
}

static void test_absurd(void)
{
	struct arch a = {0}, x = {0};
	struct result *r;
	uint8_t *huge;
	size_t next;

	/* size of 2^62 bytes (base-256) */
	struct hdr h = {
	    .fmt = F_GNU, .name = "huge", .type = '0', .size = 1ull << 62, .b256_size = true};
	add(&a, &h, NULL, 0);
	a_zeros(&a, 4);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 0);
	CHECK(r->st.truncated);
	result_free(r);

	/* a negative size is invalid: a bad header */
	a.len = 0;
	add_file(&a, F_GNU, "ok", "x");
	struct hdr neg = {.fmt = F_GNU, .name = "neg", .type = '0'};
	uint8_t b[512];
	mk_header(b, &neg);
	b256(b + 124, 12, -5);
	set_chksum(b);
	a_put(&a, b, 512);
	add_file(&a, F_GNU, "ok2", "y");
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->n, 2);
	CHECK_EQ(r->st.bad_headers, 1);
	result_free(r);

	/* a long name of 1 GB: the archive ends long before, nothing is allocated */
	a.len = 0;
	add_file(&a, F_GNU, "ok", "x");
	struct hdr ln = {.fmt = F_GNU, .name = "././@LongLink", .type = 'L', .size = 1u << 30};
	add(&a, &ln, NULL, 0);
	a_zeros(&a, 4);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 1);
	CHECK(r->st.truncated);
	result_free(r);

	/* a long name of 2 MiB that is really there: read (GNU tar has no limit) */
	a.len = 0;
	huge = malloc(2 << 20);
	memset(huge, 'h', 2 << 20);
	add_meta(&a, 'L', huge, 2 << 20);
	add_file(&a, F_GNU, "victim", "v");
	next = add_file(&a, F_GNU, "next", "n");
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 2);
	CHECK_EQ(r->warnings, 0);
	if (r->n == 2) {
		CHECK_EQ(strlen(r->e[0].path), 2 << 20);
		CHECK(!strcmp(r->e[1].path, "next"));
		CHECK_EQ(r->e[1].hdr_off, next);
	}
	result_free(r);

	/* the same with a 2 MiB PAX header (one record of an unknown keyword) */
	a.len = 0;
	memcpy(huge, "2097152 comment=", 16);
	huge[(2 << 20) - 1] = '\n';
	add_meta(&a, 'x', huge, 2 << 20);
	add_file(&a, F_USTAR, "victim", "v");
	add_file(&a, F_USTAR, "next", "n");
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->n, 2);
	CHECK_EQ(r->warnings, 0);
	if (r->n == 2)
		CHECK(!strcmp(r->e[0].path, "victim"));
	result_free(r);
	free(huge);

	/* over the limit of 64 MiB: the member is skipped with a message naming the limit, the
	 * next one is found (the payload is never read) */
	a.len = 0;
	struct hdr big = {
	    .fmt = F_GNU, .name = "././@LongLink", .type = 'L', .size = (64u << 20) + 1};
	add(&a, &big, NULL, 0);
	a_put(&a, NULL, (64u << 20) + 512);
	add_file(&a, F_GNU, "victim", "v");
	add_file(&a, F_GNU, "next", "n");
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 1);
	CHECK_EQ(r->warnings, 1);
	CHECK(logged("limit of 64 MiB"));
	if (r->n == 1)
		CHECK(!strcmp(r->e[0].path, "next"));
	result_free(r);

	/* a sparse 1.0 map claiming 10^9 extents */
	a.len = 0;
	pax_str(&x, "GNU.sparse.major", "1");
	pax_str(&x, "GNU.sparse.minor", "0");
	pax_str(&x, "GNU.sparse.realsize", "100");
	uint8_t d[1024] = "1000000000\n0\n1\n";
	struct hdr s = {.fmt = F_USTAR, .name = "sp", .type = '0', .size = 1024};
	add_pax_member(&a, &x, &s, d, 1024);
	add_file(&a, F_USTAR, "next", "n");
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->n, 1);
	CHECK_EQ(r->warnings, 1);
	CHECK(logged("too many sparse extents"));
	result_free(r);

	/* a sparse 1.0 map that never ends inside its member */
	a.len = 0;
	pax_str(&x, "GNU.sparse.major", "1");
	pax_str(&x, "GNU.sparse.minor", "0");
	pax_str(&x, "GNU.sparse.realsize", "100");
	memset(d, 0, sizeof(d));
	strcpy((char *)d, "1000\n");
	for (int i = 5; i < 1022; i += 2)
		memcpy(d + i, "1\n", 2);
	struct hdr s2 = {.fmt = F_USTAR, .name = "sp", .type = '0', .size = 1024};
	add_pax_member(&a, &x, &s2, d, 1024);
	add_file(&a, F_USTAR, "next", "n");
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->n, 1);
	CHECK_EQ(r->warnings, 1);
	result_free(r);

	/* odd sparse maps, read as bsdtar reads them: out of order (sorted, each extent keeps
	 * its data), past the real size (cut there), needing more data than stored (the rest
	 * reads as zeros, with a warning) */
	static const char *const maps[] = {"100,4,50,1", "100,4,8000,1", "100,4,200,2"};
	static const struct member_sparse want[3][2] = {
	    {{50, 1, 4}, {100, 4, 0}}, {{100, 4, 0}, {0, 0, 0}}, {{100, 4, 0}, {200, 1, 4}}};
	static const size_t nwant[3] = {2, 1, 2};
	for (int i = 0; i < 3; i++) {
		a.len = 0;
		pax_str(&x, "GNU.sparse.size", i == 1 ? "5000" : "9000");
		pax_str(&x, "GNU.sparse.map", maps[i]);
		struct hdr s3 = {.fmt = F_USTAR, .name = "sp", .type = '0', .size = 5};
		add_pax_member(&a, &x, &s3, "12345", 5);
		add_file(&a, F_USTAR, "next", "n");
		a_zeros(&a, 2);
		r = parse_mem(a.p, a.len);
		CHECK_EQ(r->ret, 0);
		CHECK_EQ(r->n, 2);
		CHECK_EQ(r->warnings, i == 2);
		if (r->n == 2) {
			CHECK_EQ(r->e[0].size, i == 1 ? 5000 : 9000);
			CHECK_EQ(r->e[0].nsp, nwant[i]);
			for (size_t k = 0; k < nwant[i] && k < r->e[0].nsp; k++) {
				CHECK_EQ(r->e[0].sp[k].off, want[i][k].off);
				CHECK_EQ(r->e[0].sp[k].len, want[i][k].len);
				CHECK_EQ(r->e[0].sp[k].src, want[i][k].src);
			}
		}
		result_free(r);
	}

	/* an old GNU sparse header whose extension blocks never end: bounded by the source */
	a.len = 0;
	struct hdr sg = {.fmt = F_GNU, .name = "oldsparse", .type = 'S', .size = 0};
	mk_header(b, &sg);
	b[482] = 1;
	set_chksum(b);
	a_put(&a, b, 512);
	memset(b, 0, 512);
	b[504] = 1;
	for (int i = 0; i < 100; i++)
		a_put(&a, b, 512);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 0);
	CHECK(r->st.truncated);
	result_free(r);

	/* a name (and prefix) without NUL, and link name without NUL */
	a.len = 0;
	uint8_t full[512];
	struct hdr nn = {.fmt = F_USTAR, .name = "", .type = '1'};
	mk_header(full, &nn);
	memset(full, 'N', 100);
	memset(full + 157, 'K', 100);
	memset(full + 345, 'P', 155);
	memset(full + 265, 'U', 32);
	memset(full + 297, 'G', 32);
	set_chksum(full);
	a_put(&a, full, 512);
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->n, 1);
	if (r->n == 1) {
		CHECK_EQ(r->e[0].path_len, 256);
		CHECK_EQ(r->e[0].link_len, 100);
		CHECK_EQ(strlen(r->e[0].uname), 32);
		CHECK_EQ(strlen(r->e[0].gname), 32);
	}
	result_free(r);
	free(a.p);
	free(x.p);
}

/* PAX records whose length fields lie: the records before the bad one apply, the rest of
 * that header is ignored with a warning, and the member is kept (GNU tar and bsdtar), except
 * where what is left is a sparse map that cannot be read. */
static void test_pax_lies(void)
{
	static const struct {
		const char *rec, *name; /* name: the member's name then; NULL: not reported */
	} bad[] = {
	    {"99 path=foo\n", "victim"},	      /* longer than the payload */
	    {"5 path=foo\n", "victim"},		      /* shorter: does not end at a newline */
	    {"12 path=foo\n20 uid=1\n", "foo"},	      /* the second record lies */
	    {"x path=foo\n", "victim"},		      /* no length */
	    {"18446744073709551627 a=b\n", "victim"}, /* length overflows */
	    {"11 pathfoo\n\n", "victim"},	      /* no '=' */
	    {"6 =ab\n", "victim"},		      /* empty keyword */
	    {"12 size=12a\n", "victim"},	      /* bad size value: the header's size */
	    {"25 GNU.sparse.numbytes=1\n", NULL},     /* numbytes without offset */
	};
	struct arch a = {0};
	struct result *r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = bad[i].name ? 3 : 2;

		a.len = 0;
		add_file(&a, F_USTAR, "before", "b");
		add_meta(&a, 'x', bad[i].rec, strlen(bad[i].rec));
		add_file(&a, F_USTAR, "victim", "v");
		add_file(&a, F_USTAR, "after", "a");
		a_zeros(&a, 2);
		r = parse_mem(a.p, a.len);
		CHECK_EQ(r->ret, 0);
		CHECK_EQ(r->n, n);
		CHECK_EQ(r->warnings, 1);
		if (r->n == n) {
			CHECK(!strcmp(r->e[0].path, "before"));
			CHECK(!strcmp(r->e[n - 1].path, "after"));
			if (n == 3) {
				CHECK(!strcmp(r->e[1].path, bad[i].name));
				CHECK_EQ(r->e[1].size, 1);
			}
		}
		if (r->n != n || r->warnings != 1)
			fprintf(stderr, "  with record %s\n", bad[i].rec);
		result_free(r);
	}

	/* bad values of fields that do not change the layout: ignored with a warning; a time
	 * with bytes after the number is that number (GNU tar, bsdtar) */
	struct arch x = {0};
	static const struct {
		const char *mtime;
		int64_t sec;
		uint32_t nsec;
		unsigned warnings;
	} times[] = {
	    {"12x", 12, 0, 0},
	    {"1748089464.951928467a", 1748089464, 951928467, 0},
	    {"-1.25junk", -2, 750000000, 0},
	    {"1.1234567899", 1, 123456789, 0},
	    {"abc", 9, 0, 1},
	    {"-", 9, 0, 1},
	    {"99999999999999999999999", 9, 0, 1},
	};
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		a.len = 0;
		x.len = 0;
		pax_str(&x, "uid", "-1");
		pax_str(&x, "mtime", times[i].mtime);
		struct hdr h = {.fmt = F_USTAR, .name = "kept", .type = '0', .uid = 5, .mtime = 9};
		add_pax_member(&a, &x, &h, NULL, 0);
		a_zeros(&a, 2);
		r = parse_mem(a.p, a.len);
		CHECK_EQ(r->n, 1);
		CHECK_EQ(r->warnings, 1 + times[i].warnings);
		if (r->n == 1) {
			CHECK_EQ(r->e[0].uid, 5);
			CHECK_EQ(r->e[0].mtime_sec, times[i].sec);
			CHECK_EQ(r->e[0].mtime_nsec, times[i].nsec);
		}
		result_free(r);
	}
	x.len = 0;

	/* a malformed global header keeps the records before the bad one */
	a.len = 0;
	pax_str(&x, "uname", "g");
	a_put(&x, "99 gname=x\n", 11);
	add_meta(&a, 'g', x.p, x.len);
	x.len = 0;
	add_file(&a, F_USTAR, "f", "f");
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->n, 1);
	CHECK_EQ(r->warnings, 1);
	if (r->n == 1) {
		CHECK(!strcmp(r->e[0].uname, "g"));
		CHECK(!strcmp(r->e[0].gname, ""));
	}
	result_free(r);

	/* a bad number in a global header: dropped once, not a warning (or damage) per member */
	a.len = 0;
	pax_str(&x, "uid", "abc");
	pax_str(&x, "size", "-1");
	pax_str(&x, "gid", "77");
	add_meta(&a, 'g', x.p, x.len);
	x.len = 0;
	add_file(&a, F_USTAR, "f1", "1");
	add_file(&a, F_USTAR, "f2", "2");
	add_file(&a, F_USTAR, "f3", "3");
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->n, 3);
	CHECK_EQ(r->warnings, 2);
	for (size_t i = 0; i < r->n; i++) {
		CHECK_EQ(r->e[i].gid, 77);
		CHECK_EQ(r->e[i].size, 1);
	}
	result_free(r);
	free(x.p);
	free(a.p);
}

static void test_ends(void)
{
	struct arch a = {0};
	struct result *r;
	size_t end, second;
	uint8_t zeros[10240] = {0};
	static const char text[] = "This is not a tar archive, just some text that goes on and on. "
				   "It is long enough to fill one block of the tar format.";
	uint8_t notar[1024];

	/* garbage after the end marker */
	add_file(&a, F_USTAR, "one", "1");
	a_zeros(&a, 2);
	end = a.len;
	a_put(&a, text, sizeof(text));
	a_pad(&a);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 1);
	CHECK(r->st.garbage);
	CHECK_EQ(r->st.end_off, end);
	CHECK_EQ(r->warnings, 0);
	CHECK_EQ(r->notices, 1);
	CHECK(!r->st.truncated);
	result_free(r);
	/* a short tail of garbage */
	r = parse_mem(a.p, end + 100);
	CHECK_EQ(r->n, 1);
	CHECK(r->st.garbage);
	CHECK_EQ(r->warnings, 0);
	result_free(r);

	/* the same with --ignore-zeros: the garbage ends the parse as well */
	opt_ignore_zeros = true;
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->n, 1);
	CHECK(r->st.garbage);
	CHECK_EQ(r->st.end_off, end);
	CHECK_EQ(r->warnings, 0);
	result_free(r);
	opt_ignore_zeros = false;

	/* zero blocks between two archives (cat a.tar b.tar), and a lone zero block: the
	 * archive ends at the first zero block, as for tar, with a notice that says so */
	a.len = 0;
	add_file(&a, F_USTAR, "one", "1");
	end = a.len;
	a_zeros(&a, 20);
	second = add_file(&a, F_USTAR, "two", "2");
	a_zeros(&a, 1);
	add_file(&a, F_GNU, "three", "3");
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 1);
	CHECK_EQ(r->warnings, 0);
	CHECK_EQ(r->notices, 1);
	CHECK(logged("--ignore-zeros"));
	CHECK(r->st.garbage);
	CHECK_EQ(r->st.end_off, second);
	result_free(r);
	/* with --ignore-zeros, all three */
	opt_ignore_zeros = true;
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 3);
	CHECK_EQ(r->warnings, 0);
	CHECK(!r->st.garbage);
	if (r->n == 3)
		CHECK_EQ(r->e[1].hdr_off, second);
	result_free(r);
	opt_ignore_zeros = false;
	/* what follows the marker is looked at for 1 MiB, no further */
	a.len = end;
	a_zeros(&a, 2049);
	add_file(&a, F_USTAR, "far", "f");
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->n, 1);
	CHECK_EQ(r->notices, 0);
	CHECK(!r->st.garbage);
	result_free(r);

	/* an archive that starts with zero blocks: empty, unless --ignore-zeros */
	a.len = 0;
	a_zeros(&a, 3);
	add_file(&a, F_USTAR, "late", "l");
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 0);
	CHECK_EQ(r->notices, 1);
	result_free(r);
	opt_ignore_zeros = true;
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 1);
	result_free(r);
	opt_ignore_zeros = false;

	/* no end marker at all */
	a.len = 0;
	add_file(&a, F_USTAR, "one", "1");
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 1);
	CHECK_EQ(r->warnings, 0);
	CHECK(!r->st.truncated);
	result_free(r);

	/* an empty archive */
	r = parse_mem(zeros, sizeof(zeros));
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 0);
	CHECK_EQ(r->warnings, 0);
	CHECK_EQ(r->st.end_off, sizeof(zeros));
	result_free(r);

	/* not tar: text, an empty file, one lone zero block then text */
	memset(notar, 'z', sizeof(notar));
	memcpy(notar, text, sizeof(text));
	r = parse_mem(notar, sizeof(notar));
	CHECK_EQ(r->ret, -EINVAL);
	CHECK_EQ(r->n, 0);
	result_free(r);
	r = parse_mem(notar, 0);
	CHECK_EQ(r->ret, -EINVAL);
	result_free(r);
	r = parse_mem(notar, 100);
	CHECK_EQ(r->ret, -EINVAL);
	result_free(r);
	memset(notar, 0, 512);
	r = parse_mem(notar, sizeof(notar));
	CHECK_EQ(r->ret, -EINVAL);
	result_free(r);
	free(a.p);
}

static void test_probe(void)
{
	struct arch a = {0};
	uint8_t buf[4096];
	struct src *s;

	add_file(&a, F_USTAR, "one", "1");
	s = src_from_mem(a.p, a.len);
	CHECK(tar_probe(s));
	src_free(s);
	memset(buf, 0, sizeof(buf));
	s = src_from_mem(buf, sizeof(buf));
	CHECK(tar_probe(s));
	src_free(s);
	s = src_from_mem(buf, 512);
	CHECK(!tar_probe(s));
	src_free(s);
	memcpy(buf + 2048, "CD001", 5);
	s = src_from_mem(buf, sizeof(buf));
	CHECK(!tar_probe(s));
	src_free(s);
	memcpy(buf + 2048, a.p, 512);
	s = src_from_mem(buf, sizeof(buf));
	CHECK(tar_probe(s));
	src_free(s);
	memset(buf, 'x', sizeof(buf));
	s = src_from_mem(buf, sizeof(buf));
	CHECK(!tar_probe(s));
	src_free(s);
	free(a.p);
}

/* A varied archive for the read-pattern and thread tests. */
static void build_mixed(struct arch *a, struct arch *x)
{
	uint8_t data[5000];
	char name[64];

	memset(data, 'D', sizeof(data));
	pax_str(x, "mtime", "1.5");
	add_meta(a, 'g', x->p, x->len);
	x->len = 0;
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "file%02d", i);
		struct hdr h = {.fmt = i % 3 ? F_USTAR : F_GNU,
				.name = name,
				.type = '0',
				.size = (uint64_t)i * 123};
		if (i % 5 == 0) {
			pax_str(x, "path", name);
			pax_str(x, "SCHILY.xattr.user.x", "v");
			add_pax_member(a, x, &h, data, h.size);
		} else if (i % 7 == 0) {
			add_long(a, 'L', name);
			add(a, &h, data, h.size);
		} else {
			add(a, &h, data, h.size);
		}
	}
	pax_str(x, "GNU.sparse.major", "1");
	pax_str(x, "GNU.sparse.minor", "0");
	pax_str(x, "GNU.sparse.realsize", "10000");
	uint8_t d[512 + 4] = "1\n5000\n4\n";
	memcpy(d + 512, "SPAR", 4);
	struct hdr s = {.fmt = F_USTAR, .name = "sparse", .type = '0', .size = sizeof(d)};
	add_pax_member(a, x, &s, d, sizeof(d));
	struct member_sparse sp[2] = {{0, 1, 0}, {100, 2, 1}};
	add_gnu_sparse(a, "oldsparse", sp, 2, 200, (const uint8_t *)"abc");
	add_file(a, F_USTAR, "last", "end");
	a_zeros(a, 2);
}

static void test_forward_only(void)
{
	struct arch a = {0}, x = {0};
	struct rec_src rs = {0};
	struct result *r, *ref;
	struct src *s;

	build_mixed(&a, &x);
	ref = parse_mem(a.p, a.len);
	CHECK_EQ(ref->ret, 0);
	CHECK_EQ(ref->n, 43);
	CHECK_EQ(ref->warnings, 0);

	/* a plain source: strictly forward, no data of regular members read */
	rs.buf = a.p;
	rs.len = a.len;
	s = src_new(&rec_ops, &rs, a.len);
	r = parse_src(s, 0);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, ref->n);
	CHECK(!rs.backwards);
	for (size_t i = 0; i < r->n; i++) {
		const struct got *g = &r->e[i];

		if (g->type != MEMBER_REG || !g->stored)
			continue;
		for (size_t k = 0; k < rs.nreads; k++) {
			bool overlap = rs.reads[k][0] < g->data_off + g->stored &&
				       rs.reads[k][1] > g->data_off;
			if (overlap)
				fprintf(stderr, "read %" PRIu64 "+%" PRIu64 " in the data of %s\n",
					rs.reads[k][0], rs.reads[k][1] - rs.reads[k][0], g->path);
			CHECK(!overlap);
		}
	}
	for (size_t k = 0; k < rs.nreads; k++)
		CHECK(rs.reads[k][1] - rs.reads[k][0] <= 4096);
	free(rs.reads);
	result_free(r);
	src_free(s);

	/* a stream of unknown size: the same entries, still strictly forward */
	memset(&rs, 0, sizeof(rs));
	rs.buf = a.p;
	rs.len = a.len;
	s = src_new(&rec_ops, &rs, SRC_SIZE_UNKNOWN);
	r = parse_src(s, 0);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, ref->n);
	CHECK(!rs.backwards);
	for (size_t i = 0; i < r->n && i < ref->n; i++) {
		CHECK(!strcmp(r->e[i].path, ref->e[i].path));
		CHECK_EQ(r->e[i].data_off, ref->e[i].data_off);
		CHECK_EQ(r->e[i].stored, ref->e[i].stored);
		CHECK_EQ(r->e[i].size, ref->e[i].size);
		CHECK_EQ(r->e[i].mtime_nsec, 500000000);
	}
	free(rs.reads);
	result_free(r);
	src_free(s);

	/* a truncated stream of unknown size: the member cut in its data is not reported */
	memset(&rs, 0, sizeof(rs));
	rs.buf = a.p;
	rs.len = ref->e[30].data_off + ref->e[30].stored - 1;
	s = src_new(&rec_ops, &rs, SRC_SIZE_UNKNOWN);
	r = parse_src(s, 0);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 30);
	CHECK(r->st.truncated);
	CHECK(!rs.backwards);
	free(rs.reads);
	result_free(r);
	src_free(s);

	result_free(ref);
	free(a.p);
	free(x.p);
}

static void test_progress_and_stop(void)
{
	struct arch a = {0};
	struct result *r;
	struct src *s;
	char name[32];

	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		add_file(&a, F_USTAR, name, "x");
	}
	a_zeros(&a, 2);
	r = parse_mem(a.p, a.len);
	CHECK_EQ(r->ret, 0);
	CHECK_EQ(r->n, 1000);
	CHECK(r->progress_calls >= 3);
	CHECK_EQ(r->last_progress, a.len);
	result_free(r);

	s = src_from_mem(a.p, a.len);
	r = parse_src(s, 10);
	CHECK_EQ(r->ret, -ECANCELED);
	CHECK_EQ(r->n, 10);
	CHECK_EQ(r->st.members, 9);
	result_free(r);
	src_free(s);
	free(a.p);
}

struct thread_arg {
	const struct arch *a;
	size_t n;
	int ret;
};

static int count_entry(void *opaque, const struct arc_member *e)
{
	struct thread_arg *t = opaque;

	t->n++;
	return e->path_len ? 0 : -EINVAL;
}

static void *thread_main(void *arg)
{
	struct thread_arg *t = arg;
	struct tar_callbacks cb = {.entry = count_entry, .opaque = t};

	for (int i = 0; i < 50; i++) {
		struct src *s = src_from_mem(t->a->p, t->a->len);

		t->ret |= tar_parse(s, &cb, NULL);
		src_free(s);
	}
	return NULL;
}

static void test_threads(void)
{
	struct arch a = {0}, x = {0};
	struct thread_arg args[4];
	pthread_t th[4];

	build_mixed(&a, &x);
	for (int i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){.a = &a};
		pthread_create(&th[i], NULL, thread_main, &args[i]);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK_EQ(args[i].ret, 0);
		CHECK_EQ(args[i].n, 50 * 43);
	}
	free(a.p);
	free(x.p);
}

struct touch_stats {
	size_t n;
	uint64_t sum;
};

/* Reads every byte an entry points to (ASan checks the pointers). */
static int touch_entry(void *opaque, const struct arc_member *e)
{
	struct touch_stats *t = opaque;

	t->n++;
	for (size_t i = 0; i <= e->path_len; i++)
		t->sum += e->path[i];
	for (size_t i = 0; i <= e->link_len; i++)
		t->sum += e->link[i];
	t->sum += strlen(e->uname) + strlen(e->gname);
	for (size_t i = 0; i < e->nsparse; i++)
		t->sum += e->sparse[i].off + e->sparse[i].len;
	for (size_t i = 0; i < e->nxattrs; i++) {
		t->sum += strlen(e->xattrs[i].name);
		for (size_t k = 0; k < e->xattrs[i].len; k++)
			t->sum += e->xattrs[i].value[k];
	}
	CHECK(e->sparse || !e->nsparse);
	CHECK(e->type == MEMBER_REG || e->size == 0);
	return 0;
}

/* Random damage to a varied archive: bytes changed in blocks (headers re-checksummed half
 * of the time so that the parser believes them), random truncation.  Nothing may crash or
 * read outside a buffer (run under ASan), and the result is always 0 or -EINVAL. */
static void test_mutations(void)
{
	struct arch a = {0}, x = {0};
	uint8_t *m;
	uint32_t seed = 12345;

	build_mixed(&a, &x);
	m = malloc(a.len);
	int iters = getenv("TAR_MUTATIONS") ? atoi(getenv("TAR_MUTATIONS")) : 3000;

	for (int iter = 0; iter < iters; iter++) {
		size_t len = a.len, nblocks = a.len / 512;
		memcpy(m, a.p, a.len);
		for (int k = 0; k < 1 + iter % 4; k++) {
			size_t blk, pos;

			seed = seed * 1103515245 + 12345;
			blk = (seed >> 8) % nblocks;
			seed = seed * 1103515245 + 12345;
			pos = (seed >> 8) % 512;
			seed = seed * 1103515245 + 12345;
			bool valid = tar_header_valid(m + blk * 512);
			switch ((seed >> 8) % 4) {
			case 0:
				m[blk * 512 + pos] = (uint8_t)(seed >> 16);
				break;
			case 1:
				m[blk * 512 + pos] = (uint8_t)('0' + (seed >> 16) % 10);
				break;
			case 2:
				m[blk * 512 + pos] = (seed >> 16) & 1 ? 0x80 : 0xff;
				break;
			default:
				memset(m + blk * 512 + pos, (seed >> 16) & 1 ? '7' : 0, 512 - pos);
			}
			if (valid && (seed >> 20) & 1)
				set_chksum(m + blk * 512);
		}
		if (iter % 5 == 0) {
			seed = seed * 1103515245 + 12345;
			len = (seed >> 4) % (a.len + 1);
		}
		struct src *src = src_from_mem(m, len);
		struct touch_stats ts = {0};
		struct tar_callbacks cb = {.entry = touch_entry, .opaque = &ts};
		int ret = tar_parse(src, &cb, NULL);

		src_free(src);
		CHECK(ret == 0 || ret == -EINVAL);
	}
	free(m);
	free(a.p);
	free(x.p);
}

int main(void)
{
	tfs_log_set_sink(sink, NULL);
	test_ustar();
	test_v7();
	test_gnu();
	test_pax();
	test_sparse_all_hole();
	test_bad_checksum();
	test_signed_checksum();
	test_truncated();
	test_absurd();
	test_pax_lies();
	test_ends();
	test_probe();
	test_forward_only();
	test_progress_and_stop();
	test_threads();
	test_mutations();
	return tu_exit();
}
