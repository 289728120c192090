/* The zip container (containers/zip.c) on damaged and hand-broken archives: the end records
 * (split archives, offsets past where they can be, zip64 locators), the local headers
 * (zip_local_data), read errors of the source, every truncation and every flipped byte of a
 * small archive, broken counts, sizes, offsets and extra fields in the directory, and the
 * probe: never a crash (run it under ASan), never a member pointing outside the archive, only
 * the errors container.h lists.  The four bugs the zip tests found first (test_found_bugs()
 * at the end) stay checked on every run.
 *
 * The sink, the oracles, the archives and the builder of hand-made ones are in zip_fixtures.c;
 * archives made by the real tools: test_zip.c.
 *
 * Exit 77 (skipped) if zip or python3 is missing.
 */
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
static void test_end_records(void)
{
	struct rec r = {0};
	struct cont_stats st;
	static const uint8_t d[] = "some data\n";
	struct hent e[] = {{.name = "a", .data = d, .len = 10}, {.name = "b", .data = d, .len = 10}};
	struct hzip z;

	/* split over disks: refused */
	z = hz_build(e, 2, 0, 0);
	set16(z.p + z.end_off + 4, 1);
	CHECK_EQ(parse(z.p, z.len, &r, &st), -ENOTSUP);
	free(z.p);
	z = hz_build(e, 2, 0, HZ_ZIP64_END);
	set32(z.p + z.end_off - 20 + 16, 3); /* the locator: three disks */
	CHECK_EQ(parse(z.p, z.len, &r, &st), -ENOTSUP);
	free(z.p);
	/* the directory's offset past where it can be: damaged */
	z = hz_build(e, 2, 0, 0);
	set32(z.p + z.end_off + 16, (uint32_t)z.cd_off + 1);
	CHECK_EQ(parse(z.p, z.len, &r, &st), -EIO);
	free(z.p);
	/* a directory larger than the file */
	z = hz_build(e, 2, 0, 0);
	set32(z.p + z.end_off + 12, 0x7fffffff);
	CHECK_EQ(parse(z.p, z.len, &r, &st), -EIO);
	free(z.p);
	/* the end record says 5 entries, or 1: the directory holds 2, all of them shown */
	for (unsigned count = 0; count <= 5; count += 5) {
		z = hz_build(e, 2, 0, 0);
		set16(z.p + z.end_off + 8, count);
		set16(z.p + z.end_off + 10, count);
		CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
		CHECK_EQ(r.nm, 2);
		free(z.p);
	}
	/* not a zip at all */
	static const uint8_t text[] = "this is not a zip archive, not even close to one........";
	CHECK_EQ(parse(text, sizeof(text), &r, &st), -EINVAL);
	CHECK_EQ(parse(text, 0, &r, &st), -EINVAL);
	struct src *s = src_from_mem(text, sizeof(text));
	CHECK(!cont_zip.probe(s, text, sizeof(text)));
	src_free(s);
	/* a comment length that does not reach the end: no end record there */
	z = hz_build(e, 2, 0, 0);
	set16(z.p + z.end_off + 20, 5);
	CHECK_EQ(parse(z.p, z.len, &r, &st), 0); /* the walk of local headers */
	CHECK(st.damaged);
	CHECK_EQ(r.nm, 2);
	free(z.p);
	/* a directory entry whose name runs past the directory: it ends the directory */
	z = hz_build(e, 2, 0, 0);
	set16(z.p + z.cen[1] + 28, 500);
	CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
	CHECK(st.damaged);
	CHECK_EQ(r.nm, 1);
	free(z.p);
	/* a member's callback error stops the parse and is returned */
	z = hz_build(e, 2, 0, 0);
	r.fail_at = 2;
	CHECK_EQ(parse(z.p, z.len, &r, &st), -ECANCELED);
	CHECK_EQ(r.nm, 1);
	r.fail_at = 1;
	CHECK_EQ(parse(z.p, z.len - 22, &r, &st), -ECANCELED); /* in the walk too */
	r.fail_at = 0;
	free(z.p);
	rec_free(&r);
}

/* zip_local_data: the data after a local header; -EIO where there is none. */
static void test_local_data(void)
{
	static const uint8_t d[] = "0123456789";
	uint8_t lx[] = {0x55, 0x54, 5, 0, 1, 0, 0, 0, 0};
	struct hent e[] = {{.name = "abc", .data = d, .len = 10, .lextra = lx, .lextra_len = 9}};
	struct hzip z = hz_build(e, 1, 7, 0);
	struct src *s = src_from_mem(z.p, z.len);
	uint64_t at = 12345;

	CHECK_EQ(zip_local_data(s, 7, "t", &at), 0);
	CHECK_EQ(at, 7 + 30 + 3 + 9); /* the local header's own extra length, not the central's */
	CHECK_EQ(zip_local_data(s, 8, "t", &at), -EIO);
	CHECK_EQ(zip_local_data(s, z.len - 10, "t", &at), -EIO);
	CHECK_EQ(zip_local_data(s, z.len + 100, "t", &at), -EIO);
	CHECK_EQ(zip_local_data(s, UINT64_MAX - 5, "t", &at), -EIO);
	src_free(s);
	free(z.p);
}

/* A source over memory whose n-th read (of its ops: from 1; 0 none) fails with err. */
struct failsrc {
	const uint8_t *p;
	size_t len;
	unsigned calls, fail_at;
	int err;
};

static ssize_t fail_pread(void *opaque, void *buf, size_t len, uint64_t off)
{
	struct failsrc *f = opaque;

	if (++f->calls == f->fail_at)
		return f->err;
	if (off >= f->len)
		return 0;
	if (len > f->len - off)
		len = f->len - off;
	memcpy(buf, f->p + off, len);
	return (ssize_t)len;
}

static int fail_stream(void *o, const struct cont_stream *cs, uint64_t *id)
{
	(void)o;
	(void)cs;
	*id = 1;
	return 0;
}

static int fail_member(void *o, const struct arc_member *m)
{
	(void)o;
	(void)m;
	return 0;
}

/* Parses p (len bytes) with its n-th read failing with err, for every n up to the last read
 * the parse makes: each time, err is what the parse returns. */
static void parse_failing(const uint8_t *p, size_t len, int err)
{
	static const struct src_ops ops = {.pread = fail_pread};
	struct cont_sink sink = {.stream = fail_stream, .member = fail_member, .name = "t"};

	for (unsigned n = 1;; n++) {
		struct failsrc f = {.p = p, .len = len, .fail_at = n, .err = err};
		struct src *s = src_new(&ops, &f, len);
		int ret;

		CHECK(s);
		if (!s)
			return;
		ret = cont_zip.parse(s, &sink, NULL);
		src_free(s);
		if (f.calls < n) { /* no n-th read: the parse is whole */
			CHECK_EQ(ret, 0);
			CHECK(n > 1);
			return;
		}
		CHECK_EQ(ret, err);
	}
}

/* A read error is returned as the source gave it (a remote timeout, no memory, an I/O
 * error) wherever it happens -- the end of the file, the zip64 records, the directory, the
 * walk of the local headers when there is no directory, zip_local_data -- never folded into
 * -EIO or into "not a zip". */
static void test_read_errors(void)
{
	static const uint8_t d[] = "some data\n";
	static const int errs[] = {-ETIMEDOUT, -ENOMEM, -EIO};
	static const struct src_ops ops = {.pread = fail_pread};
	struct hent e[] = {{.name = "a", .data = d, .len = 10}, {.name = "b", .data = d, .len = 10}};
	struct hzip z = hz_build(e, 2, 0, 0), z64 = hz_build(e, 2, 0, HZ_ZIP64_END);
	struct hzip pre = hz_build(e, 2, 100, 0); /* shifted: the directory's offset is checked */

	for (size_t k = 0; k < sizeof(errs) / sizeof(errs[0]); k++) {
		parse_failing(z.p, z.len, errs[k]);
		parse_failing(z64.p, z64.len, errs[k]);
		parse_failing(pre.p, pre.len, errs[k]);
		parse_failing(z.p, z.cd_off, errs[k]); /* no directory */

		struct failsrc f = {.p = z.p, .len = z.len, .fail_at = 1, .err = errs[k]};
		struct src *s = src_new(&ops, &f, z.len);
		uint64_t at;
		CHECK_EQ(zip_local_data(s, z.lho[1], "t", &at), errs[k]);
		src_free(s);
	}
	free(z.p);
	free(z64.p);
	free(pre.p);
}

/* Without its directory (cut anywhere): the walk of local headers shows every entry whose
 * data is whole, all of them once the cut is past the last one; never one that lies outside.
 * Every shorter length of the archive is parsed. */
static void test_truncated(void)
{
	struct rec r = {0}, full = {0};
	struct cont_stats st;
	size_t len;
	uint8_t *zip = read_tmp("z6.zip", &len);

	if (!zip)
		return;
	CHECK_EQ(parse(zip, len, &full, &st), 0);
	/* where each entry's data ends, in archive order */
	uint64_t cd = UINT64_MAX, ends[NTREE + 1];
	size_t ne = 0;
	for (size_t i = 0; i + 4 <= len; i++)
		if (!memcmp(zip + i, "PK\1\2", 4)) {
			cd = i;
			break;
		}
	CHECK(cd != UINT64_MAX);
	for (size_t i = 0; i < full.nm && ne < NTREE + 1; i++) {
		/* the next header starts where this entry's data ends */
		uint64_t next = cd;
		for (size_t j = 0; j < full.nm; j++)
			if (full.m[j].hdr_off > full.m[i].hdr_off && full.m[j].hdr_off < next)
				next = full.m[j].hdr_off;
		ends[ne++] = next;
	}
	unsigned bad = 0, cuts = 0;
	for (size_t cut = 0; cut < len; cut++) {
		/* every cut near a header, an entry's end, the directory and the ends of the file;
		 * elsewhere every 251st (each parse reads the last 64 KiB: all of them would take
		 * seconds) */
		bool near = cut < 600 || cut + 600 > len || (cut > cd - 64 && cut < cd + 64);
		for (size_t i = 0; i < full.nm && !near; i++)
			near = (cut + 64 > full.m[i].hdr_off && cut < full.m[i].hdr_off + 128) ||
			       (cut + 64 > ends[i] && cut < ends[i] + 64);
		if (!near && cut % 251)
			continue;
		cuts++;
		int err = parse(zip, cut, &r, &st);
		size_t whole = 0;
		for (size_t i = 0; i < ne; i++)
			whole += ends[i] <= cut;
		if (cut < 4 || whole == 0) { /* nothing whole: not taken for a zip (unzip) */
			CHECK_EQ(err, -EINVAL);
			continue;
		}
		if (err != 0 || !st.damaged || r.nm != whole) {
			if (bad++ < 5)
				fprintf(stderr, "  cut at %zu: err %d, %zu members, expected %zu\n",
					cut, err, r.nm, whole);
		}
		for (size_t i = 0; i < r.nm; i++) {
			CHECK(r.m[i].hdr_off + 30 <= cut);
			if (!r.m[i].stream || strcmp(r.s[r.m[i].stream - 1].codec, "stored"))
				continue;
			const struct rstream *rs = &r.s[r.m[i].stream - 1];
			struct src *s = src_from_mem(zip, cut);
			uint64_t at;
			CHECK_EQ(zip_local_data(s, rs->coff, "t", &at), 0);
			CHECK(at + rs->clen <= cut);
			src_free(s);
		}
		if (cut == cd) /* every entry, as the walk sees them */
			check_all_bytes(zip, cut, &r);
	}
	CHECK_EQ(bad, 0);
	fprintf(stderr, "truncations: %u cuts of %zu bytes\n", cuts, len);
	free(zip);
	rec_free(&r);
	rec_free(&full);
}

/* Each declared stream of a damaged archive: its local header read, its bytes decoded when
 * they lie inside the archive (whatever they decode to: no crash). */
static void test_flips(void)
{
	struct rec r = {0};
	struct cont_stats st;
	size_t len;
	char p[512];
	uint8_t *zip;

	snprintf(p, sizeof(p), "%s/small.zip", tmpdir);
	zip = read_tmp("small.zip", &len); /* the tree without big.txt */
	if (!zip)
		return;
	CHECK(len < 4096);
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	size_t n0 = r.nm;
	uint64_t total = 0;
	for (size_t i = 0; i < len; i++)
		for (unsigned mask = 0x01; mask <= 0x80; mask <<= 7) {
			zip[i] ^= (uint8_t)mask;
			int err = parse(zip, len, &r, &st);
			total += r.nm;
			if (err == 0) {
				CHECK(r.nm <= n0 + 1);
				for (size_t k = 0; k < r.nm; k++)
					if (r.m[k].stream &&
					    !strcmp(r.s[r.m[k].stream - 1].codec, "stored")) {
						size_t n;
						free(member_bytes(zip, len, &r, &r.m[k], &n));
					}
				check_streams_inside(zip, len, &r);
			}
			zip[i] ^= (uint8_t)mask;
		}
	fprintf(stderr, "flips: %zu bytes x 2 masks, %llu members reported in all\n", len,
		(unsigned long long)total);
	free(zip);
	rec_free(&r);
}

/* Damage in the directory's records that the flips do not reach on their own. */
static void test_damaged_directory(void)
{
	struct rec r = {0};
	struct cont_stats st;
	size_t len;
	uint8_t *zip = read_tmp("z6.zip", &len);

	if (!zip)
		return;
	/* where the directory's entries are */
	uint64_t cen[NTREE + 1];
	size_t nc = 0;
	for (size_t i = 0; i + 4 <= len && nc <= NTREE; i++)
		if (!memcmp(zip + i, "PK\1\2", 4))
			cen[nc++] = i;
	CHECK_EQ(nc, NTREE);
	/* a broken signature in the middle: the entries before it */
	zip[cen[5]] ^= 0xff;
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	CHECK(st.damaged);
	CHECK_EQ(r.nm, 5);
	zip[cen[5]] ^= 0xff;
	/* an extra field length past the record: the entry ends the directory */
	uint16_t x = (uint16_t)(zip[cen[7] + 30] | zip[cen[7] + 31] << 8);
	set16(zip + cen[7] + 30, 0xffff);
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	CHECK(st.damaged);
	CHECK_EQ(r.nm, 7);
	set16(zip + cen[7] + 30, x);
	/* an extra field whose own records overrun it: ignored, the time is the local header's
	 * extended timestamp (Info-ZIP's zip writes one there too), the owner unknown */
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	int64_t mtime3 = r.nm == NTREE ? r.m[3].mtime : -1;
	uint8_t save = zip[cen[3] + 46 + (zip[cen[3] + 28] | zip[cen[3] + 29] << 8) + 2];
	zip[cen[3] + 46 + (zip[cen[3] + 28] | zip[cen[3] + 29] << 8) + 2] = 0xff;
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	CHECK_EQ(r.nm, NTREE);
	CHECK(r.nm == NTREE && !r.m[3].dos_time && r.m[3].no_owner);
	CHECK(r.nm == NTREE && r.m[3].mtime == mtime3);
	zip[cen[3] + 46 + (zip[cen[3] + 28] | zip[cen[3] + 29] << 8) + 2] = save;
	/* a local header offset that points at no local header: listed (the directory is
	 * right), its read fails with -EIO */
	struct rmember *m;
	set32(zip + cen[2] + 42, (uint32_t)(cen[0] - 1));
	CHECK_EQ(parse(zip, len, &r, &st), 0);
	CHECK_EQ(r.nm, NTREE);
	m = r.nm == NTREE ? &r.m[2] : NULL;
	if (m) {
		struct src *s = src_from_mem(zip, len);
		uint64_t at;
		uint64_t lh = m->stream ? r.s[m->stream - 1].coff : m->data_off;
		CHECK_EQ(zip_local_data(s, lh, "t", &at), -EIO);
		src_free(s);
	}
	free(zip);
	rec_free(&r);
}

static void test_probe(void)
{
	size_t len;
	uint8_t *zip = read_tmp("z6.zip", &len);
	static const uint8_t tarish[512] = "ustar";

	if (!zip)
		return;
	struct src *s = src_from_mem(zip, len);
	CHECK(cont_zip.probe(s, zip, 512));
	CHECK(cont_probe(s, zip, 512) == &cont_zip);
	src_free(s);
	s = src_from_mem(tarish, sizeof(tarish));
	CHECK(!cont_zip.probe(s, tarish, sizeof(tarish)));
	CHECK(cont_probe(s, tarish, sizeof(tarish)) == NULL);
	src_free(s);
	/* a file ending in an end record with a comment reaching its end: a shifted zip */
	uint8_t *sfx = malloc(len + 600);
	memset(sfx, 0, 600);
	memcpy(sfx + 600, zip, len);
	s = src_from_mem(sfx, len + 600);
	CHECK(cont_zip.probe(s, sfx, 512));
	src_free(s);
	free(sfx);
	free(zip);
}

/* ---- bugs found by this test, fixed ---------------------------------------------------------- */

/* member.h: "path: raw bytes as stored (not normalised), NUL-terminated".  zip.c's
 * entry_name() points into the directory buffer, where the extra field follows the name (and
 * for the directory's last entry without extra field or comment, the end of the buffer:
 * build.c's "no usable name ('%s')" warning then read past it).  Fixed in fd3bd8d, as are
 * the three below. */
struct nul_rec {
	unsigned not_nul, n;
};

static int nul_stream(void *o, const struct cont_stream *cs, uint64_t *id)
{
	*id = 1;
	return 0;
}

static int nul_member(void *o, const struct arc_member *m)
{
	struct nul_rec *x = o;

	x->n++;
	if (m->path[m->path_len] != 0) /* (safe here: an extra field follows every name) */
		x->not_nul++;
	return 0;
}

static void found_path_nul(void)
{
	size_t len;
	uint8_t *zip = read_tmp("z6.zip", &len); /* every Info-ZIP entry has extra fields */
	struct src *s = src_from_mem(zip, len);
	struct nul_rec nr = {0};
	struct cont_sink sink = {.stream = nul_stream, .member = nul_member, .opaque = &nr};

	CHECK_EQ(cont_zip.parse(s, &sink, NULL), 0);
	CHECK_EQ(nr.n, NTREE);
	if (nr.not_nul) {
		fprintf(stderr, "%u of %u zip member paths are not NUL-terminated "
				"(member.h says they are)\n", nr.not_nul, nr.n);
		tu_failures++;
	}
	src_free(s);
	free(zip);
}

/* Bytes after the end record (a download's padding, a signature appended): unzip and
 * Python's zipfile find the directory anyway; zip.c's find_end() wanted the comment length
 * to reach the end exactly, so the directory is not used: the walk of local headers shows
 * symlinks as files, modes 0644, no owners (and nothing past a data descriptor). */
static void found_trailing_garbage(void)
{
	struct rec r = {0};
	struct cont_stats st;
	size_t len;
	uint8_t *zip = read_tmp("z6.zip", &len);
	uint8_t *g = malloc(len + 100);

	memcpy(g, zip, len);
	tu_fill(g + len, 100, 5, 0);
	CHECK_EQ(parse(g, len + 100, &r, &st), 0);
	struct rmember *m = find(&r, "link");
	if (st.damaged || !m || m->type != MEMBER_SYMLINK) {
		fprintf(stderr, "a zip followed by 100 bytes is read without its "
				"directory (damaged %d, link type %c)\n", st.damaged, m ? m->type : '?');
		tu_failures++;
	}
	free(g);
	free(zip);
	rec_free(&r);
}

/* parse_directory() leaves out an entry whose offset is past the end before adding the
 * shift: with bytes prepended, an offset inside the file plus the shift points past its end,
 * and that member is reported with hdr_off outside the archive. */
static void found_shifted_offset(void)
{
	struct rec r = {0};
	struct cont_stats st;
	static const uint8_t d[] = "data";
	struct hent e[] = {{.name = "a", .data = d, .len = 4}, {.name = "b", .data = d, .len = 4}};
	struct hzip z = hz_build(e, 2, 1000, 0);

	set32(z.p + z.cen[1] + 42, (uint32_t)(z.len - 10)); /* + 1000 = past the end */
	int before = tu_failures;
	CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
	CHECK_EQ(r.nm, 1);
	CHECK(st.damaged);
	if (tu_failures != before)
		fprintf(stderr, "a shifted entry offset past the end is reported\n");
	free(z.p);
	rec_free(&r);
}

/* dir_locate() trusts the directory's size over its offset: with the size one entry short
 * (a damaged field, or a record between the directory and the end record) the difference is
 * taken for bytes prepended to the archive, the parse starts at the second entry and every
 * offset is off by the first entry's record length -- the first entry is lost and the others'
 * reads fail -- although the stored offset points right at the first entry. */
static void found_directory_size(void)
{
	struct rec r = {0};
	struct cont_stats st;
	static const uint8_t d[] = "data";
	struct hent e[] = {{.name = "a", .data = d, .len = 4},
			   {.name = "b", .data = d, .len = 4},
			   {.name = "c", .data = d, .len = 4}};
	struct hzip z = hz_build(e, 3, 0, 0);
	unsigned wrong = 0;

	set32(z.p + z.end_off + 12, (uint32_t)(z.cen[2] - z.cd_off)); /* two entries' worth */
	CHECK_EQ(parse(z.p, z.len, &r, &st), 0);
	for (size_t i = 0; i < r.nm; i++)
		if (r.m[i].path_len != 1 || r.m[i].hdr_off != z.lho[r.m[i].path[0] - 'a'])
			wrong++;
	if (wrong || r.nm < 2) {
		fprintf(stderr, "a directory size one entry short: %zu entries shown, "
				"%u at a wrong offset\n", r.nm, wrong);
		tu_failures++;
	}
	free(z.p);
	rec_free(&r);
}

static void test_found_bugs(void)
{
	found_path_nul();
	found_trailing_garbage();
	found_shifted_offset();
	found_directory_size();
}

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
	T(test_end_records);
	T(test_local_data);
	T(test_read_errors);
	T(test_truncated);
	T(test_flips);
	T(test_damaged_directory);
	T(test_probe);
	T(test_found_bugs);
	return tu_exit();
}
