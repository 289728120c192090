/* The zip container (containers/zip.c) against archives made by the real tools -- Info-ZIP zip
 * (deflate at several levels, -Z bzip2, stored, -y symlinks, -X, -P, to a pipe, -A, a
 * prepended stub), Python's zipfile (stored, deflate, bzip2, LZMA, zip64 with 70,000 entries,
 * forced zip64 headers, comments, MS-DOS and unix attributes, extra fields it is handed) and
 * bsdtar --format zip -- and against hand-made bytes for what no tool writes on purpose
 * (CP437 names, the Unicode Path field, zip64 fields in the central directory, methods tarseek
 * lacks, AES, split archives, broken records).
 *
 * Every archive is parsed with cont_zip.parse from memory (src_from_mem) into a recording
 * sink.  What it reports is compared with what Python's zipfile reads from the same bytes (an
 * independent reader: names, methods, header offsets, sizes, CRCs) and with the tree the
 * archive was made from (types, modes, owners, mtimes, symlink targets); every readable
 * member's bytes are fetched the way the index does -- zip_local_data for stored data, the
 * declared stream decoded with its codec through a window for the rest -- and checked against
 * the original and against the member's CRC-32.  Damage, the end records and the probe:
 * test_zip_damage.c.  TARSEEK_SLOW_TESTS=1 adds a real 4.2 GB entry written by
 * `zip -fz` from a pipe (about 20 s).
 *
 * The sink, the oracles, the archives and the builder of hand-made ones are in zip_fixtures.c.
 *
 * Exit 77 (skipped) if zip or python3 is missing; bsdtar's part is skipped alone.
 */
#include "common/byteio.h"
#include "codecs/codec.h"
#include "containers/container.h"
#include "common/log.h"
#include "common/source.h"
#include "testutil.h"
#include "containers/zip.h"
#include "crypto/keyring.h"
#include "crypto/zip_crypt.h"
#include "zip_fixtures.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static void test_infozip(void)
{
	struct rec r = {0};
	struct cont_stats st;

	for (size_t i = 0; i < NZV; i++) {
		size_t len;
		uint8_t *zip = read_tmp(ZV[i].name, &len);
		char path[512];
		if (!zip)
			continue;
		fprintf(stderr, "zip %s\n", ZV[i].args);
		CHECK_EQ(parse(zip, len, &r, &st), 0);
		CHECK(!st.damaged);
		CHECK_EQ(r.nm, NTREE);
		check_tree(zip, len, &r, ZV[i].how, ZV[i].codec);
		snprintf(path, sizeof(path), "%s/%s", tmpdir, ZV[i].name);
		check_against_python(path, &r);
		check_all_bytes(zip, len, &r);
		size_t nstored = 0;
		for (size_t k = 0; k < r.ns; k++)
			nstored += strcmp(r.s[k].codec, "stored") == 0;
		size_t ncrypt = 0;
		for (size_t k = 0; k < r.ns; k++)
			ncrypt += r.s[k].crypt;
		if (ZV[i].how & ZT_ENCRYPTED)
			CHECK(r.ns >= 2 && ncrypt == r.ns); /* -P: every one, read with the password */
		else if (strcmp(ZV[i].codec, "none") == 0)
			CHECK(r.ns >= 2 && nstored == r.ns); /* -0: every member stored */
		else
			CHECK(r.ns - nstored >= 2); /* big.txt and deep.txt compressed at least */
		/* the noise does not shrink: stored, a stream of its own all the same */
		struct rmember *m = find(&r, "d/noise.bin");
		if (m) {
			CHECK(m->stream > 0 && m->stream <= r.ns);
			if (m->stream > 0 && m->stream <= r.ns)
				CHECK(strcmp(r.s[m->stream - 1].codec, "stored") == 0);
		}
		free(zip);
	}
	rec_free(&r);
}

/* zip writing to a pipe: every entry has a data descriptor (its sizes after its data).  (Not
 * with -y: zip refuses to store -- symlinks are stored -- on a pipe.) */
static void test_infozip_pipe(void)
{
	struct rec r = {0};
	struct cont_stats st;
	size_t len;
	char p[512];
	uint8_t *zip = read_tmp("pipe.zip", &len);

	if (!zip)
		return;
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	CHECK(!st.damaged);
	CHECK_EQ(r.nm, 8);
	snprintf(p, sizeof(p), "%s/pipe.zip", tmpdir);
	check_against_python(p, &r);
	check_all_bytes(zip, len, &r);
	struct rmember *m = find(&r, "d/big.txt");
	CHECK(m && m->size == 300000 && m->stream && m->mtime == tree_mtime(8));
	m = find(&r, "hello.txt");
	CHECK(m && m->mode == 0600 && (geteuid() != 0 || (m->uid == 1234 && m->gid == 5678)));
	/* without its directory, the walk of local headers stops at the first descriptor */
	size_t cut = 0;
	for (size_t i = 0; i + 4 <= len; i++) /* the first central header */
		if (!memcmp(zip + i, "PK\1\2", 4)) {
			cut = i;
			break;
		}
	CHECK(cut > 0);
	CHECK_EQ(parse(zip, cut, &r, &st), 0);
	CHECK(st.damaged);
	CHECK(r.nm < 8);
	free(zip);
	rec_free(&r);
}

/* Bytes before the archive: a self-extracting stub (offsets shifted), and zip -A (offsets
 * adjusted: no shift). */
static void test_sfx(void)
{
	struct rec r = {0}, base = {0};
	struct cont_stats st;
	size_t len, blen;
	uint8_t *zip = read_tmp("z6.zip", &len);
	if (!zip)
		return;
	CHECK_EQ(parse(zip, len, &base, &st), 0);
	static const size_t stubs[] = {1, 4096, 70000};
	for (size_t k = 0; k < 3; k++) {
		size_t sl = stubs[k];
		uint8_t *sfx = malloc(sl + len);
		tu_fill(sfx, sl, 7, 0);
		memcpy(sfx + sl, zip, len);
		struct src *s = src_from_mem(sfx, sl + len);
		CHECK(cont_zip.probe(s, sfx, sl + len < 512 ? sl + len : 512));
		src_free(s);
		CHECK_EQ(parse(sfx, sl + len, &r, &st), 0);
		CHECK(!st.damaged);
		CHECK_EQ(r.nm, base.nm);
		for (size_t i = 0; i < r.nm && i < base.nm; i++) {
			CHECK_EQ(r.m[i].hdr_off, base.m[i].hdr_off + sl);
			CHECK_EQ(r.m[i].data_off, base.m[i].data_off);
		}
		for (size_t i = 0; i < r.ns && i < base.ns; i++)
			CHECK_EQ(r.s[i].coff, base.s[i].coff + sl);
		check_tree(sfx, sl + len, &r, ZT_OWNERS | ZT_SYMLINKS, "deflate");
		check_all_bytes(sfx, sl + len, &r);
		if (k == 1) { /* zip -A: the stub counted in every offset */
			char p[512];
			snprintf(p, sizeof(p), "%s/sfx.zip", tmpdir);
			FILE *f = fopen(p, "wb");
			CHECK(fwrite(sfx, 1, sl + len, f) == sl + len);
			fclose(f);
			if (run("zip -q -A %s", p) == 0) {
				uint8_t *a = read_tmp("sfx.zip", &blen);
				CHECK_EQ(parse(a, blen, &r, &st), 0);
				CHECK_EQ(r.nm, base.nm);
				for (size_t i = 0; i < r.nm && i < base.nm; i++)
					CHECK_EQ(r.m[i].hdr_off, base.m[i].hdr_off + sl);
				check_against_python(p, &r);
				check_all_bytes(a, blen, &r);
				free(a);
			}
		}
		free(sfx);
	}
	free(zip);
	rec_free(&r);
	rec_free(&base);
}

static void test_python_methods(void)
{
	struct rec r = {0};
	struct cont_stats st;
	size_t len;
	char p[512];
	uint8_t *zip = py_make("methods", "methods.zip", &len);

	if (!zip)
		return;
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	CHECK(!st.damaged);
	CHECK_EQ(r.nm, 7);
	snprintf(p, sizeof(p), "%s/methods.zip", tmpdir);
	check_against_python(p, &r);
	check_all_bytes(zip, len, &r);
	static const struct {
		const char *name, *codec;
		size_t size;
	} W[] = {{"stored.txt", NULL, 20000},	 {"deflated.txt", "deflate", 100000},
		 {"bzip2.txt", "bzip2", 100000}, {"lzma.txt", "lzma-zip", 100000},
		 {"lzma-small.txt", "lzma-zip", 7}};
	for (size_t i = 0; i < sizeof(W) / sizeof(W[0]); i++) {
		struct rmember *m = find(&r, W[i].name);
		CHECK(m != NULL);
		if (!m)
			continue;
		CHECK_EQ(m->type, MEMBER_REG);
		CHECK_EQ(m->mode, 0640);
		CHECK_EQ(m->size, W[i].size);
		CHECK(m->dos_time);
		CHECK(m->no_owner);
		struct tm tm = {.tm_year = 121, .tm_mon = 2, .tm_mday = 4, .tm_hour = 5, .tm_min = 6,
				.tm_sec = 8};
		CHECK_EQ(m->mtime, timegm(&tm));
		if (W[i].codec)
			CHECK(m->stream && strcmp(r.s[m->stream - 1].codec, W[i].codec) == 0);
		size_t n;
		uint8_t *got = member_bytes(zip, len, &r, m, &n), *want = gen(W[i].name, W[i].size);
		CHECK(got && n == W[i].size && memcmp(got, want, n) == 0);
		free(got);
		free(want);
	}
	struct rmember *m = find(&r, "empty-deflated");
	CHECK(m && m->size == 0 && m->stream == 0 && !m->unreadable);
	m = find(&r, "dir/");
	CHECK(m && m->type == MEMBER_DIR && m->mode == 0755);
	free(zip);
	rec_free(&r);
}

static void test_python_attributes(void)
{
	struct rec r = {0};
	struct cont_stats st;
	size_t len;
	char p[512];
	uint8_t *zip = py_make("dos", "dos.zip", &len);

	if (!zip)
		return;
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	snprintf(p, sizeof(p), "%s/dos.zip", tmpdir);
	check_against_python(p, &r);
	check_all_bytes(zip, len, &r);
	static const struct {
		const char *name;
		enum member_type type;
		uint32_t mode;
	} W[] = {
	    {"DOSFILE.TXT", MEMBER_REG, 0644},	/* not made on unix: 0644 */
	    {"DOSDIR/", MEMBER_DIR, 0755},	/* ... and 0755 for folders */
	    {"ATTRDIR", MEMBER_DIR, 0755},	/* the MS-DOS directory attribute */
	    {"RO.TXT", MEMBER_REG, 0444},	/* the DOS read-only attribute, as unzip */
	    {"NTFS.TXT", MEMBER_REG, 0644},	/* unix bits from another host: not used */
	    {"unix0", MEMBER_REG, 0600},	/* zipfile writes 0600 for "no mode" */
	    {"unix755", MEMBER_REG, 0755},
	    {"unixdir/", MEMBER_DIR, 0700},
	    {"unixdir-noslash", MEMBER_DIR, 0711}, /* S_IFDIR without the slash */
	    {"sym", MEMBER_SYMLINK, 0777},
	    {"sym-deflated", MEMBER_SYMLINK, 0777},
	    {"fifo", MEMBER_REG, 0644}, /* a FIFO from a zip is a file */
	};
	for (size_t i = 0; i < sizeof(W) / sizeof(W[0]); i++) {
		struct rmember *m = find(&r, W[i].name);
		CHECK(m != NULL);
		if (!m) {
			fprintf(stderr, "  %s missing\n", W[i].name);
			continue;
		}
		if (m->type != W[i].type || m->mode != W[i].mode) {
			fprintf(stderr, "  %s: type %c mode %o, expected %c %o\n", W[i].name, m->type,
				m->mode, W[i].type, W[i].mode);
			tu_failures++;
		}
		CHECK_EQ(m->link_in_data, W[i].type == MEMBER_SYMLINK);
	}
	struct rmember *m = find(&r, "sym");
	size_t n;
	uint8_t *b = m ? member_bytes(zip, len, &r, m, &n) : NULL;
	CHECK(b && n == 11 && memcmp(b, "target/path", 11) == 0);
	free(b);
	m = find(&r, "sym-deflated");
	CHECK(m && m->stream && m->size == 300);
	free(zip);
	rec_free(&r);
}

static void test_python_extras(void)
{
	struct rec r = {0};
	struct cont_stats st;
	size_t len;
	char p[512];
	uint8_t *zip = py_make("extras", "extras.zip", &len);

	if (!zip)
		return;
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	CHECK(!st.damaged);
	snprintf(p, sizeof(p), "%s/extras.zip", tmpdir);
	struct tm tm = {.tm_year = 120, .tm_mon = 4, .tm_mday = 17, .tm_hour = 10, .tm_min = 20,
			.tm_sec = 30};
	const int64_t dos = timegm(&tm);
	static const struct {
		const char *name;
		int64_t mtime; /* INT64_MIN: the DOS time */
		uint32_t nsec;
	} T[] = {
	    {"ut", 1234567890, 0},
	    {"ut-negative", -86400, 0},
	    {"ut-no-mtime", INT64_MIN, 0},
	    {"ntfs", 1500000000, 123456700},
	    {"ntfs-then-ut", 1000000000, 0}, /* the extended timestamp first, wherever it is */
	    {"ntfs-other-tag", 2, 0},
	    {"ntfs-short", INT64_MIN, 0},
	    {"dos-only", INT64_MIN, 0},
	    {"unknown-then-ut", 1500000000, 0},
	    {"overrun", INT64_MIN, 0},
	};
	for (size_t i = 0; i < sizeof(T) / sizeof(T[0]); i++) {
		struct rmember *m = find(&r, T[i].name);
		CHECK(m != NULL);
		if (!m)
			continue;
		int64_t want = T[i].mtime == INT64_MIN ? dos : T[i].mtime;
		if (m->mtime != want || m->nsec != T[i].nsec ||
		    m->dos_time != (T[i].mtime == INT64_MIN)) {
			fprintf(stderr, "  %s: mtime %lld.%09u dos %d, expected %lld.%09u\n",
				T[i].name, (long long)m->mtime, m->nsec, m->dos_time,
				(long long)want, T[i].nsec);
			tu_failures++;
		}
	}
	static const struct {
		const char *name;
		bool owner;
		uint64_t uid, gid;
	} O[] = {
	    {"ux4", true, 1234, 5678},	 {"ux2", true, 1000, 100},  {"ux1-8", true, 7, 1ull << 40},
	    {"ux0", true, 0, 0},	 {"ux-v2", false, 0, 0},    {"ux-short", false, 0, 0},
	    {"ux-size9", false, 0, 0},	 {"ut", false, 0, 0},
	};
	for (size_t i = 0; i < sizeof(O) / sizeof(O[0]); i++) {
		struct rmember *m = find(&r, O[i].name);
		CHECK(m != NULL);
		if (!m)
			continue;
		if (m->no_owner != !O[i].owner || (O[i].owner && (m->uid != O[i].uid ||
								  m->gid != O[i].gid))) {
			fprintf(stderr, "  %s: owner %llu:%llu no_owner %d\n", O[i].name,
				(unsigned long long)m->uid, (unsigned long long)m->gid, m->no_owner);
			tu_failures++;
		}
	}
	/* the Unicode Path field: used when its CRC is the stored name's and its version 1 */
	CHECK(find(&r, "caf\xc3\xa9.txt") != NULL);
	CHECK(find(&r, "cafe.txt") == NULL);
	CHECK(find(&r, "wrongcrc.txt") != NULL);
	CHECK(find(&r, "upath-v2") != NULL);
	CHECK(find(&r, "other") == NULL);
	/* the bytes and CRCs whatever the extra fields say */
	check_all_bytes(zip, len, &r);
	free(zip);
	rec_free(&r);
}

static void test_python_zip64(void)
{
	struct rec r = {0};
	struct cont_stats st;
	size_t len;
	char p[512];
	uint8_t *zip = py_make("many", "many.zip", &len);

	if (zip) {
		double t0 = mono_now();
		CHECK_EQ(parse(zip, len, &r, &st), 0);
		fprintf(stderr, "70,000 entries parsed in %.2f s\n", mono_now() - t0);
		CHECK(!st.damaged);
		CHECK_EQ(r.nm, 70000);
		CHECK_EQ(st.members, 70000);
		CHECK(r.progress_calls >= 60); /* about every 1024 members */
		/* the end record says 0xffff: the zip64 end record has the count */
		CHECK(r.nm > 0 && memcmp(r.m[69999].path, "f69999", 6) == 0);
		size_t nstored = 0; /* all stored: the ones with bytes a stream each */
		for (size_t k = 0; k < r.ns; k++)
			nstored += strcmp(r.s[k].codec, "stored") == 0;
		CHECK(r.ns > 0 && nstored == r.ns);
		/* (not dumped by Python: 70,000 lines cost seconds) every entry's local header is
		 * where its offset says, with its name */
		struct src *s = src_from_mem(zip, len);
		unsigned wrong = 0;
		for (size_t i = 0; i < r.nm; i++) {
			uint64_t at;
			char name[24];
			snprintf(name, sizeof(name), "f%05zu", i);
			if (zip_local_data(s, r.m[i].hdr_off, "t", &at) || at != r.m[i].hdr_off + 36 ||
			    memcmp(zip + r.m[i].hdr_off + 30, name, 6) || r.m[i].path_len != 6 ||
			    memcmp(r.m[i].path, name, 6))
				wrong++;
		}
		CHECK_EQ(wrong, 0);
		src_free(s);
		check_all_bytes(zip, len, &r);
		/* shifted: the zip64 locator's offset is wrong by the stub's size */
		uint8_t *sfx = malloc(len + 333);
		memset(sfx, 'S', 333);
		memcpy(sfx + 333, zip, len);
		CHECK_EQ(parse(sfx, len + 333, &r, &st), 0);
		CHECK_EQ(r.nm, 70000);
		CHECK(r.nm > 0 && r.m[0].hdr_off == 333);
		check_all_bytes(sfx, len + 333, &r);
		free(sfx);
		free(zip);
	}
	zip = py_make("force64", "force64.zip", &len);
	if (zip) {
		CHECK_EQ(parse(zip, len, &r, &st), 0);
		CHECK_EQ(r.nm, 2);
		snprintf(p, sizeof(p), "%s/force64.zip", tmpdir);
		check_against_python(p, &r);
		check_all_bytes(zip, len, &r);
		/* the local headers hold the zip64 fields: the walk without a directory reads them */
		size_t cut = 0;
		for (size_t i = 0; i + 4 <= len; i++)
			if (!memcmp(zip + i, "PK\1\2", 4)) {
				cut = i;
				break;
			}
		CHECK(cut > 0);
		CHECK_EQ(parse(zip, cut, &r, &st), 0);
		CHECK(st.damaged);
		CHECK_EQ(r.nm, 2);
		check_all_bytes(zip, cut, &r);
		free(zip);
	}
	rec_free(&r);
}

static void test_python_misc(void)
{
	struct rec r = {0};
	struct cont_stats st;
	size_t len;
	char p[512];
	uint8_t *zip = py_make("comment", "comment.zip", &len);

	if (zip) { /* the longest comment, holding end record signatures */
		CHECK_EQ(parse(zip, len, &r, &st), 0);
		CHECK_EQ(r.nm, 1);
		check_all_bytes(zip, len, &r);
		struct src *s = src_from_mem(zip, len);
		CHECK(cont_zip.probe(s, zip, 512));
		src_free(s);
		free(zip);
	}
	zip = py_make("utf8", "utf8.zip", &len);
	if (zip) { /* the UTF-8 flag: names kept as they are */
		CHECK_EQ(parse(zip, len, &r, &st), 0);
		CHECK(find(&r, "caf\xc3\xa9/") && find(&r, "caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac.txt"));
		snprintf(p, sizeof(p), "%s/utf8.zip", tmpdir);
		check_against_python(p, &r);
		free(zip);
	}
	zip = py_make("empty", "empty.zip", &len);
	if (zip) { /* the end record alone */
		CHECK_EQ(len, 22);
		CHECK_EQ(parse(zip, len, &r, &st), 0);
		CHECK_EQ(r.nm, 0);
		CHECK(!st.damaged);
		struct src *s = src_from_mem(zip, len);
		CHECK(cont_zip.probe(s, zip, len));
		src_free(s);
		free(zip);
	}
	rec_free(&r);
}

static void test_bsdtar(void)
{
	struct rec r = {0};
	struct cont_stats st;
	size_t len;
	char p[512];

	if (!tu_have("bsdtar")) {
		fprintf(stderr, "bsdtar missing: its part skipped\n");
		return;
	}
	snprintf(p, sizeof(p), "%s/bsd.zip", tmpdir);
	uint8_t *zip = read_tmp("bsd.zip", &len);
	if (!zip)
		return;
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	CHECK(!st.damaged);
	check_against_python(p, &r);
	check_all_bytes(zip, len, &r);
	/* bsdtar names everything "./..." and writes the root too */
	CHECK(find(&r, "./") != NULL);
	struct rmember *m = find(&r, "./link");
	CHECK(m && m->type == MEMBER_SYMLINK && m->link_in_data && m->size == 9);
	m = find(&r, "./d/big.txt");
	CHECK(m && m->size == 300000 && m->stream && strcmp(r.s[m->stream - 1].codec, "deflate") == 0);
	CHECK(m && m->mtime == tree_mtime(8) && !m->dos_time);
	m = find(&r, "./hello.txt");
	CHECK(m && m->mode == 0600 && !m->no_owner);
	if (m && geteuid() == 0)
		CHECK(m->uid == 1234 && m->gid == 5678);
	free(zip);
	rec_free(&r);
}

static void test_names(void)
{
	struct rec r = {0};
	struct cont_stats st;
	static const uint8_t cp437[] = "caf\x82 \x94.txt"; /* é and ö in CP437 */
	uint8_t up[64];
	size_t upl = 0;
	/* Unicode Path over a CP437 name: version 1, the CRC of the stored name, UTF-8 */
	const char *utf8 = "caf\xc3\xa9 \xc3\xb6.txt";
	up[0] = 0x75;
	up[1] = 0x70;
	set16(up + 2, (unsigned)(5 + strlen(utf8)));
	up[4] = 1;
	set32(up + 5, (uint32_t)crc32(0, cp437, (uInt)strlen((const char *)cp437)));
	memcpy(up + 9, utf8, strlen(utf8));
	upl = 9 + strlen(utf8);
	static const uint8_t data[] = "data\n";
	struct hent e[] = {
	    {.name = (const char *)cp437, .data = data, .len = 5},
	    {.name = (const char *)cp437, .data = data, .len = 5, .cextra = up, .cextra_len = upl},
	    {.name = "utf8-flag-\xc3\xa9", .flags = 0x800, .data = data, .len = 5},
	    {.name = "with\0nul", .name_len = 8, .data = data, .len = 5},
	    {.name = "", .name_len = 0, .data = data, .len = 5}, /* strlen: an empty name */
	    /* made on unix, no mode in the attributes (only MS-DOS's archive bit): 0644 */
	    {.name = "unix-no-mode", .ext_attr = 0x20, .data = data, .len = 5},
	};
	struct hzip z = hz_build(e, 6, 0, 0);
	CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
	CHECK_EQ(r.nm, 6);
	struct rmember *m = find(&r, "unix-no-mode");
	CHECK(m && m->type == MEMBER_REG && m->mode == 0644);
	if (r.nm == 5) {
		CHECK(r.m[0].path_len == 10 && !memcmp(r.m[0].path, cp437, 10)); /* as stored */
		CHECK(r.m[1].path_len == strlen(utf8) && !memcmp(r.m[1].path, utf8, strlen(utf8)));
		CHECK(!strcmp((char *)r.m[2].path, "utf8-flag-\xc3\xa9"));
		CHECK(r.m[3].path_len == 8 && !memcmp(r.m[3].path, "with\0nul", 8));
		CHECK_EQ(r.m[4].path_len, 0);
	}
	check_all_bytes(z.p, z.len, &r);
	free(z.p);
	rec_free(&r);
}

static void test_zip64_fields(void)
{
	struct rec r = {0};
	struct cont_stats st;
	uint8_t *plain = gen("zip64", 10000);
	size_t dl;
	uint8_t *def = deflate_raw(plain, 10000, &dl);
	uint32_t crc = (uint32_t)crc32(0, plain, 10000);
	struct hent e[] = {
	    {.name = "all", .method = 8, .data = def, .len = dl, .usize = 10000, .crc = crc,
	     .z64_usize = true, .z64_csize = true, .z64_lho = true},
	    {.name = "lho-only", .method = 8, .data = def, .len = dl, .usize = 10000, .crc = crc,
	     .z64_lho = true},
	    {.name = "csize-lho", .method = 0, .data = plain, .len = 10000, .z64_csize = true,
	     .z64_lho = true},
	    {.name = "usize-only", .method = 8, .data = def, .len = dl, .usize = 10000, .crc = crc,
	     .z64_usize = true},
	};
	for (int prefix = 0; prefix <= 100; prefix += 100)
		for (unsigned fl = 0; fl <= HZ_ZIP64_END; fl++) {
			struct hzip z = hz_build(e, 4, (size_t)prefix, fl);
			CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
			CHECK(!st.damaged);
			CHECK_EQ(r.nm, 4);
			for (size_t i = 0; i < r.nm; i++) {
				CHECK_EQ(r.m[i].hdr_off, z.lho[i]);
				CHECK_EQ(r.m[i].size, 10000);
			}
			check_all_bytes(z.p, z.len, &r);
			free(z.p);
		}
	/* a 0xffffffff field without its zip64 value: that entry ends the directory */
	struct hent bad[] = {
	    {.name = "fine", .data = plain, .len = 100},
	    {.name = "no-extra", .data = plain, .len = 100},
	    {.name = "after", .data = plain, .len = 100},
	};
	struct hzip z = hz_build(bad, 3, 0, 0);
	set32(z.p + z.cen[1] + 24, 0xffffffffu);
	CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
	CHECK(st.damaged);
	CHECK_EQ(r.nm, 1);
	free(z.p);
	/* an entry whose zip64 offset lies past the end: left out, the others shown */
	struct hent far[] = {
	    {.name = "fine", .data = plain, .len = 100},
	    {.name = "far", .data = plain, .len = 100, .z64_lho = true, .fake_lho = 1ull << 40},
	    {.name = "after", .data = plain, .len = 100},
	};
	z = hz_build(far, 3, 0, 0);
	CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
	CHECK(st.damaged);
	CHECK_EQ(r.nm, 2);
	CHECK(find(&r, "far") == NULL && find(&r, "after") != NULL);
	free(z.p);
	free(def);
	free(plain);
	rec_free(&r);
}

/* An entry of 4.4 GB of zeros (a real deflate stream, made of one independent block repeated:
 * a few MB) with zip64 sizes: the sizes read, the first MiB decodes. */
static void test_zip64_big(void)
{
	struct rec r = {0};
	struct cont_stats st;
	const size_t mib = 1u << 20, reps = 4200;
	uint8_t *zeros = calloc(1, mib);
	z_stream zs = {0};
	uint8_t blk[8192], fin[64];
	size_t blen, flen;

	CHECK(deflateInit2(&zs, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK);
	zs.next_in = zeros;
	zs.avail_in = (uInt)mib;
	zs.next_out = blk;
	zs.avail_out = sizeof(blk);
	CHECK(deflate(&zs, Z_FULL_FLUSH) == Z_OK && zs.avail_in == 0);
	blen = sizeof(blk) - zs.avail_out;
	zs.next_out = fin;
	zs.avail_out = sizeof(fin);
	CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
	flen = sizeof(fin) - zs.avail_out;
	deflateEnd(&zs);
	uint8_t *def = malloc(blen * reps + flen);
	uLong crc1 = crc32(0, zeros, (uInt)mib), crc = 0;
	for (size_t i = 0; i < reps; i++) {
		memcpy(def + i * blen, blk, blen);
		crc = crc32_combine(crc, crc1, (z_off_t)mib);
	}
	memcpy(def + reps * blen, fin, flen);
	const uint64_t usize = (uint64_t)reps * mib;
	struct hent e[] = {
	    {.name = "small", .data = (const uint8_t *)"x", .len = 1},
	    {.name = "zeros", .method = 8, .data = def, .len = blen * reps + flen, .usize = usize,
	     .crc = (uint32_t)crc, .z64_usize = true},
	};
	struct hzip z = hz_build(e, 2, 0, HZ_ZIP64_END);
	CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
	struct rmember *m = find(&r, "zeros");
	CHECK(m && m->size == usize && m->stream && r.s[m->stream - 1].usize == usize);
	CHECK(m && m->crc == (uint32_t)crc);
	if (m && m->stream) { /* the declared stream starts with zeros */
		const struct rstream *s = &r.s[m->stream - 1];
		struct src *file = src_from_mem(z.p, z.len);
		uint64_t start;
		CHECK_EQ(zip_local_data(file, s->coff, "t", &start), 0);
		CHECK_EQ(start + s->clen, z.cd_off);
		struct src *win = src_window(file, start, s->clen);
		struct codec_opts o = {.spacing = UINT64_MAX, .threads = 1};
		struct codec_sink sk = {.checkpoint = null_ckpt};
		struct codec_scan *scan = NULL;
		const struct codec *c = codec_by_name("deflate");
		CHECK(c && c->scan_new(win, &o, &sk, &scan) == 0);
		uint8_t *buf = malloc(mib);
		size_t got = 0;
		while (scan && got < mib) {
			ssize_t n = c->scan_read(scan, buf + got, mib - got);
			if (n <= 0)
				break;
			got += (size_t)n;
		}
		CHECK(got == mib && memcmp(buf, zeros, mib) == 0);
		free(buf);
		if (c)
			c->scan_free(scan);
		src_free(win);
		src_free(file);
	}
	free(z.p);
	free(def);
	free(zeros);
	rec_free(&r);
}

/* TARSEEK_SLOW_TESTS: a real 4.2 GB entry, zip -fz reading a pipe. */
static void test_zip64_real(void)
{
	struct rec r = {0};
	struct cont_stats st;
	size_t len;
	double t0 = mono_now();
	uint8_t *zip = tu_pipe("head -c 4400000000 /dev/zero | zip -1 -q -fz - -", NULL, 0, &len);

	CHECK(zip != NULL);
	if (!zip)
		return;
	fprintf(stderr, "zip -fz of 4.4 GB: %.1f s, %zu bytes\n", mono_now() - t0, len);
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	CHECK_EQ(r.nm, 1);
	CHECK(r.nm == 1 && r.m[0].size == 4400000000ull && r.m[0].stream);
	free(zip);
	rec_free(&r);
}

static void test_methods_and_encryption(void)
{
	struct rec r = {0};
	struct cont_stats st;
	static const uint8_t junk[] = "0123456789abcdef";
	struct hent e[] = {
	    {.name = "deflate64", .method = 9, .data = junk, .len = 16, .usize = 100},
	    {.name = "implode", .method = 6, .data = junk, .len = 16, .usize = 100},
	    {.name = "ppmd", .method = 98, .data = junk, .len = 16, .usize = 100},
	    {.name = "method77", .method = 77, .data = junk, .len = 16, .usize = 100},
	    {.name = "aes", .method = 99, .data = junk, .len = 16, .usize = 100},
	    {.name = "zipcrypto", .method = 8, .flags = 1, .data = junk, .len = 16, .usize = 100},
	    {.name = "stored-mismatch", .method = 0, .data = junk, .len = 16, .usize = 17},
	    {.name = "empty-unknown", .method = 6, .data = junk, .len = 0, .usize = 0},
	    {.name = "zstd", .method = 93, .data = junk, .len = 16, .usize = 100},
	    {.name = "xz", .method = 95, .data = junk, .len = 16, .usize = 100},
	};
	struct hzip z = hz_build(e, 10, 0, 0);
	CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
	CHECK(!st.damaged);
	CHECK_EQ(r.nm, 10);
	static const struct {
		const char *name;
		int err;
		const char *why;
		uint64_t size;
	} W[] = {
	    {"deflate64", 0, NULL, 100}, /* a stream (codec deflate64) */
	    {"implode", -EOPNOTSUPP, "implode", 100},
	    {"ppmd", 0, NULL, 100},		 /* a stream (codec ppmd-zip, the size its params) */
	    {"method77", -EOPNOTSUPP, "77", 100},
	    {"aes", -EIO, "AES extra field", 100}, /* method 99 without its 0x9901 */
	    {"zipcrypto", 0, NULL, 100},		 /* a stream, its record ZipCrypto's */
	    {"stored-mismatch", -EIO, "sizes", 17},
	    {"empty-unknown", 0, NULL, 0},
	    {"zstd", 0, NULL, 100},
	    {"xz", 0, NULL, 100},
	};
	for (size_t i = 0; i < sizeof(W) / sizeof(W[0]); i++) {
		struct rmember *m = find(&r, W[i].name);
		CHECK(m != NULL);
		if (!m)
			continue;
		if (m->unreadable != W[i].err || (W[i].why && !strstr(m->why, W[i].why))) {
			fprintf(stderr, "  %s: unreadable %d (%s), expected %d (%s)\n", W[i].name,
				m->unreadable, m->why, W[i].err, W[i].why);
			tu_failures++;
		}
		CHECK_EQ(m->size, W[i].size); /* listed with its size */
		if (m->unreadable)
			CHECK_EQ(m->stream, 0);
	}
	struct rmember *m = find(&r, "zstd");
	CHECK(m && m->stream && strcmp(r.s[m->stream - 1].codec, "zstd") == 0);
	m = find(&r, "xz");
	CHECK(m && m->stream && strcmp(r.s[m->stream - 1].codec, "xz") == 0);
	m = find(&r, "ppmd");
	CHECK(m && m->stream && strcmp(r.s[m->stream - 1].codec, "ppmd-zip") == 0 &&
	      r.s[m->stream - 1].params_len == 8 && le64(r.s[m->stream - 1].params) == 100);
	m = find(&r, "zipcrypto");
	CHECK(m && m->stream && r.s[m->stream - 1].crypt &&
	      strcmp(r.s[m->stream - 1].codec, "deflate") == 0 &&
	      r.s[m->stream - 1].crypt_rec[0] == ZCR_ZIPCRYPTO);
	free(z.p);
	rec_free(&r);
}

/* Info-ZIP -P, with the method changed to 9 in both headers: still encrypted first. */
static void test_patched_method(void)
{
	struct rec r = {0};
	struct cont_stats st;
	size_t len;
	uint8_t *zip = read_tmp("z6.zip", &len);

	if (!zip)
		return;
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	struct rmember *m = find(&r, "d/big.txt");
	CHECK(m != NULL);
	if (m) {
		uint64_t lho = m->hdr_off, cen = 0;
		for (size_t i = 0; i + 46 <= len; i++)
			if (!memcmp(zip + i, "PK\1\2", 4) && zip[i + 28] == 9 &&
			    !memcmp(zip + i + 46, "d/big.txt", 9)) {
				cen = i;
				break;
			}
		CHECK(cen > 0);
		set16(zip + lho + 8, 6);
		set16(zip + cen + 10, 6);
		CHECK_EQ(parse(zip, len, &r, &st), 0);
		m = find(&r, "d/big.txt");
		CHECK(m && m->unreadable == -EOPNOTSUPP && strstr(m->why, "implode"));
		CHECK(m && m->size == 300000 && m->stream == 0);
		CHECK_EQ(r.nm, NTREE);
	}
	free(zip);
	rec_free(&r);
}

static void test_dos_dates(void)
{
	struct rec r = {0};
	struct cont_stats st;
	static const uint8_t d[] = "x";
	/* 2107-12-31 23:59:58, the last DOS time; 1980-01-01 00:00:00; a zero date; a
	 * month 13; hour 31 (normalised, never a crash) */
	struct hent e[] = {
	    {.name = "last", .dos_date = (127 << 9) | (12 << 5) | 31,
	     .dos_time = (23 << 11) | (59 << 5) | 29, .data = d, .len = 1, .made_by = 0x0014},
	    {.name = "first", .dos_date = (0 << 9) | (1 << 5) | 1, .dos_time = 0, .data = d,
	     .len = 1, .made_by = 0x0014},
	    {.name = "zero", .dos_date = 0xffff, .data = d, .len = 1, .made_by = 0x0014},
	    {.name = "month13", .dos_date = (40 << 9) | (13 << 5) | 1, .data = d, .len = 1,
	     .made_by = 0x0014},
	    {.name = "hour31", .dos_date = (40 << 9) | (1 << 5) | 1, .dos_time = 31 << 11,
	     .data = d, .len = 1, .made_by = 0x0014},
	};
	struct hzip z = hz_build(e, 5, 0, 0);
	set16(z.p + z.cen[2] + 14, 0); /* a real zero date (hz_build writes a default for 0) */
	CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
	CHECK_EQ(r.nm, 5);
	if (r.nm == 5) {
		struct tm a = {.tm_year = 207, .tm_mon = 11, .tm_mday = 31, .tm_hour = 23,
			       .tm_min = 59, .tm_sec = 58};
		struct tm b = {.tm_year = 80, .tm_mon = 0, .tm_mday = 1};
		CHECK_EQ(r.m[0].mtime, timegm(&a));
		CHECK_EQ(r.m[1].mtime, timegm(&b));
		CHECK_EQ(r.m[2].mtime, 0);
		CHECK(r.m[0].dos_time && r.m[1].dos_time && r.m[2].dos_time);
		CHECK(r.m[0].mode == 0644 && r.m[0].no_owner); /* made on MS-DOS */
	}
	free(z.p);
	rec_free(&r);
}

/* What is refused, and what is found anyway. */

#define T(f)                                                                                       \
	do {                                                                                       \
		double _t = mono_now();                                                            \
		f();                                                                               \
		fprintf(stderr, "%-32s %.2f s\n", #f, mono_now() - _t);                             \
	} while (0)

int main(void)
{
	if (!tu_have("zip") || (!tu_have("python3") && access("/usr/bin/python3", X_OK))) {
		fprintf(stderr, "zip or python3 missing: skipped\n");
		return 77;
	}
	tfs_log_level = getenv("TEST_VERBOSE") ? TFS_LOG_DEBUG : 0;
	if (kr_add("secret", 6)) /* what the encrypted fixtures (zip -P secret) are read with */
		return 1;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/tarseek-test-zip-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	atexit(cleanup);
	T(prepare);
	T(test_infozip);
	T(test_infozip_pipe);
	T(test_sfx);
	T(test_python_methods);
	T(test_python_attributes);
	T(test_python_extras);
	T(test_python_zip64);
	T(test_python_misc);
	T(test_bsdtar);
	T(test_names);
	T(test_zip64_fields);
	T(test_zip64_big);
	if (getenv("TARSEEK_SLOW_TESTS"))
		test_zip64_real();
	T(test_methods_and_encryption);
	T(test_patched_method);
	T(test_dos_dates);
	return tu_exit();
}
