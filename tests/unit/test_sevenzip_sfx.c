/* Self-extracting 7z archives (containers/7z/sza_archive.c): a 7z made by 7zz behind stubs
 * made here, parsed with cont_7z from memory.
 *   - behind an ELF and a PE ("MZ") stub, one holding false signatures (the magic with a
 *     start header whose CRC fails, one cut at the end of a search chunk): found, every
 *     stream where the plain archive's is plus the stub's length, the same members;
 *   - the archive's own start header damaged: no archive (probe no, parse -EINVAL);
 *   - not an executable before it: not searched (probe no);
 *   - cut short after the stub at many points: -EIO, a clean refusal, never a crash;
 *   - the stub larger than a search chunk: found across the border.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "containers/container.h"
#include "common/log.h"
#include "testutil.h"

static char tmp[64];

struct rec {
	uint64_t coff[64];
	size_t ns, nm;
};

static int rec_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	struct rec *r = opaque;

	if (r->ns < 64)
		r->coff[r->ns] = s->coff;
	*id = ++r->ns;
	return 0;
}

static int rec_member(void *opaque, const struct arc_member *m)
{
	struct rec *r = opaque;

	(void)m;
	r->nm++;
	return 0;
}

static void quiet_sink(int level, const char *msg, void *opaque)
{
	(void)level;
	(void)msg;
	(void)opaque;
}

static int parse(const uint8_t *a, size_t len, struct rec *r, bool *probed)
{
	struct src *in = src_from_mem(a, len);
	struct cont_sink sink = {.stream = rec_stream, .member = rec_member, .opaque = r};
	int err;

	memset(r, 0, sizeof(*r));
	*probed = cont_7z.probe(in, a, len < 512 ? len : 512);
	err = cont_7z.parse(in, &sink, NULL);
	src_free(in);
	return err;
}

/* stub (slen bytes, starting with magic) + the archive */
static uint8_t *behind(const char *magic, size_t slen, const uint8_t *a, size_t alen, bool lies)
{
	uint8_t *p = malloc(slen + alen);

	tu_fill(p, slen, 7, 0);
	memcpy(p, magic, strlen(magic));
	if (lies) { /* the magic with a start header whose CRC fails, twice */
		memcpy(p + 100, "7z\xbc\xaf\x27\x1c\0\4", 8);
		memcpy(p + slen - 40, "7z\xbc\xaf\x27\x1c\0\4", 8);
	}
	memcpy(p + slen, a, alen);
	return p;
}

static void check_found(const char *what, const uint8_t *p, size_t len, size_t slen,
			const struct rec *plain)
{
	struct rec r;
	bool probed;

	fprintf(stderr, "sfx: %s\n", what);
	CHECK_EQ(parse(p, len, &r, &probed), 0);
	CHECK(probed);
	CHECK_EQ(r.ns, plain->ns);
	CHECK_EQ(r.nm, plain->nm);
	for (size_t i = 0; i < r.ns && i < 64; i++)
		CHECK_EQ(r.coff[i], plain->coff[i] + slen);
}

int main(void)
{
	struct rec plain, r;
	size_t alen;
	uint8_t *a, *p;
	bool probed;
	char cmd[512];

	if (!tu_have("7zz")) {
		fprintf(stderr, "7zz missing: skipped\n");
		return 77;
	}
	tfs_log_set_sink(quiet_sink, NULL);
	snprintf(tmp, sizeof(tmp), "/tmp/test_7zsfx.XXXXXX");
	if (!mkdtemp(tmp))
		return 1;
	snprintf(cmd, sizeof(cmd),
		 "cd %s && mkdir d && seq 1 20000 > d/a && echo hi > d/b && "
		 "7zz a -bd -bso0 -bsp0 -ms=off t.7z d >/dev/null", tmp);
	CHECK_EQ(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s/t.7z", tmp);
	a = tu_read_file(cmd, &alen);
	CHECK(a != NULL);
	if (!a)
		return tu_exit();
	CHECK_EQ(parse(a, alen, &plain, &probed), 0);
	CHECK(probed && plain.ns >= 2 && plain.nm == 3);

	p = behind("\x7f" "ELF", 5000, a, alen, false);
	check_found("ELF stub", p, 5000 + alen, 5000, &plain);
	free(p);
	p = behind("MZ", 70001, a, alen, true);
	check_found("PE stub with false signatures", p, 70001 + alen, 70001, &plain);
	/* the archive's own start header damaged: nothing else to find */
	p[70001 + 9] ^= 1;
	CHECK_EQ(parse(p, 70001 + alen, &r, &probed), -EINVAL);
	CHECK(!probed);
	free(p);
	/* a stub longer than the search's 1 MiB chunk, the signature across its border */
	size_t big = (1u << 20) - 10;
	p = behind("MZ", big, a, alen, true);
	check_found("stub across a chunk border", p, big + alen, big, &plain);
	free(p);
	/* no executable before it: not searched */
	p = behind("XX", 5000, a, alen, false);
	CHECK_EQ(parse(p, 5000 + alen, &r, &probed), -EINVAL);
	CHECK(!probed);
	free(p);
	/* cut short after the stub: refused, never a crash */
	p = behind("MZ", 3000, a, alen, false);
	for (size_t cut = 3000 + 32; cut < 3000 + alen; cut += 1 + cut / 50) {
		int err = parse(p, cut, &r, &probed);
		CHECK(err == -EIO || err == -EINVAL);
	}
	free(p);
	free(a);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	(void)!system(cmd);
	return tu_exit();
}
