/* Container images (containers/oci/): the merge of layers with whiteouts, opaque folders and
 * hard links on members given directly (oci_tree_*); the JSON reader on hostile text (deep
 * nesting, huge numbers, cut, trailing bytes); and whole layouts built here in memory (an
 * outer tar of blobs, written by a small ustar writer) through cont_oci's probe and parse --
 * a good OCI layout, a docker save with two tags, and layouts with missing fields, wrong
 * types, a wrong digest, layer paths that climb ("../x", "/etc/x").
 */
#include "containers/container.h"
#include "containers/oci/oci_dl.h"
#include "containers/oci/oci_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "testutil.h"

/* ---- a collecting sink -------------------------------------------------------------------- */

struct rec {
	char path[256], link[256];
	enum member_type type;
	uint64_t stream, data_off, size;
};

struct col {
	struct rec r[256];
	size_t n;
	uint64_t streams;
	uint64_t usize[16];
};

static int col_member(void *opaque, const struct arc_member *m)
{
	struct col *c = opaque;

	if (c->n == 256)
		return -ENOSPC;
	struct rec *r = &c->r[c->n++];
	snprintf(r->path, sizeof(r->path), "%.*s", (int)m->path_len, (const char *)m->path);
	snprintf(r->link, sizeof(r->link), "%.*s", (int)m->link_len, (const char *)m->link);
	r->type = m->type;
	r->stream = m->stream;
	r->data_off = m->data_off;
	r->size = m->size;
	return 0;
}

static int col_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	struct col *c = opaque;

	if (c->streams < 16)
		c->usize[c->streams] = s->usize;
	*id = 2 + c->streams++;
	return 0;
}

static const struct rec *got(const struct col *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->r[i].path, path))
			return &c->r[i];
	return NULL;
}

/* ---- the merge ---------------------------------------------------------------------------- */

static void add(struct oci_tree *t, unsigned layer, const char *path, char type,
		uint64_t data_off, const char *link)
{
	struct arc_member m = {.path = (const uint8_t *)path, .path_len = strlen(path),
			       .link = (const uint8_t *)(link ? link : ""),
			       .link_len = link ? strlen(link) : 0, .type = (enum member_type)type,
			       .data_off = data_off, .size = type == 'f' ? 10 : 0,
			       .stored = type == 'f' ? 10 : 0, .mode = 0644, .uname = "",
			       .gname = ""};

	CHECK_EQ(oci_tree_add(t, layer, &m), 0);
}

static void report(struct oci_tree *t, struct col *c, const char *prefix)
{
	static const uint64_t stream[4] = {0, 7, 8, 9}, base[4] = {1000, 0, 0, 0};
	struct cont_sink sink = {.stream = col_stream, .member = col_member, .opaque = c,
				 .name = "test"};

	memset(c, 0, sizeof(*c));
	CHECK_EQ(oci_tree_report(t, prefix, stream, base, &sink), 0);
}

static void test_merge(void)
{
	struct oci_tree *t;
	struct col c;

	CHECK_EQ(oci_tree_new(&t), 0);
	/* layer 0: plain (stream 0, base 1000) */
	add(t, 0, "etc", 'd', 0, NULL);
	add(t, 0, "etc/gone", 'f', 1, NULL);
	add(t, 0, "etc/keep", 'f', 2, NULL);
	add(t, 0, "dir", 'd', 0, NULL);
	add(t, 0, "dir/sub", 'd', 0, NULL);
	add(t, 0, "dir/sub/x", 'f', 3, NULL);
	add(t, 0, "opq", 'd', 0, NULL);
	add(t, 0, "opq/old", 'f', 4, NULL);
	add(t, 0, "opq/olddir", 'd', 0, NULL);
	add(t, 0, "opq/olddir/y", 'f', 5, NULL);
	add(t, 0, "swap", 'f', 6, NULL);
	add(t, 0, "data", 'f', 7, NULL);
	add(t, 0, "link1", 'h', 0, "data");
	add(t, 0, "repl", 'f', 8, NULL);
	add(t, 0, "link2", 'h', 0, "./repl");
	add(t, 0, "../../climb", 'f', 9, NULL);
	add(t, 0, "/abs/path", 'f', 10, NULL);
	add(t, 0, "self", 'f', 11, NULL);
	add(t, 0, "self", 'h', 0, "self");
	add(t, 0, "nolink", 'h', 0, "missing");
	add(t, 0, "sym", 'l', 0, "../../etc/passwd");
	/* layer 1: stream 7 */
	add(t, 1, "etc/.wh.gone", 'f', 0, NULL);
	add(t, 1, ".wh.dir", 'f', 0, NULL);
	add(t, 1, "opq/new", 'f', 20, NULL);
	add(t, 1, "opq/olddir/z", 'f', 21, NULL); /* kept: this layer's */
	add(t, 1, "opq/.wh..wh..opq", 'f', 0, NULL);
	add(t, 1, "swap", 'd', 0, NULL);
	add(t, 1, "swap/in", 'f', 22, NULL);
	add(t, 1, ".wh.data", 'f', 0, NULL);
	add(t, 1, "repl", 'f', 23, NULL);
	add(t, 1, ".wh..wh.plnk", 'f', 0, NULL);
	add(t, 1, "etc/.wh.", 'f', 0, NULL);
	add(t, 1, "new/implicit/file", 'f', 24, NULL);
	/* layer 2: the file back */
	add(t, 2, "swap", 'f', 30, NULL);
	add(t, 2, "etc/.wh.keep", 'f', 0, NULL);
	add(t, 2, "etc/keep", 'f', 31, NULL); /* same layer as its whiteout: stays */
	report(t, &c, NULL);
	CHECK(!got(&c, "etc/gone"));
	CHECK(got(&c, "etc/keep") && got(&c, "etc/keep")->stream == 8 &&
	      got(&c, "etc/keep")->data_off == 31);
	CHECK(!got(&c, "dir") && !got(&c, "dir/sub/x"));
	CHECK(!got(&c, "opq/old") && !got(&c, "opq/olddir/y"));
	CHECK(got(&c, "opq/new") && got(&c, "opq/olddir/z"));
	CHECK(got(&c, "swap") && got(&c, "swap")->type == MEMBER_REG && !got(&c, "swap/in"));
	CHECK(!got(&c, "data"));
	/* link1 keeps data's bytes, from layer 0: stream 0 at base 1000 + 7 */
	CHECK(got(&c, "link1") && got(&c, "link1")->type == MEMBER_REG &&
	      got(&c, "link1")->stream == 0 && got(&c, "link1")->data_off == 1007);
	CHECK(got(&c, "repl") && got(&c, "repl")->data_off == 23 && got(&c, "repl")->stream == 7);
	CHECK(got(&c, "link2") && got(&c, "link2")->data_off == 1008);
	CHECK(got(&c, "climb") && got(&c, "abs/path") && got(&c, "self"));
	CHECK(!got(&c, "nolink"));
	CHECK(got(&c, "sym") && !strcmp(got(&c, "sym")->link, "../../etc/passwd"));
	CHECK(got(&c, "new/implicit/file") && !got(&c, "new") && !got(&c, "new/implicit"));
	for (size_t i = 0; i < c.n; i++)
		CHECK(!strstr(c.r[i].path, ".wh."));
	oci_tree_free(t);

	/* hard links that share data: one file, the others links to it; under a prefix */
	CHECK_EQ(oci_tree_new(&t), 0);
	add(t, 0, "a", 'f', 5, NULL);
	add(t, 0, "b", 'h', 0, "a");
	add(t, 1, "c", 'h', 0, "b");
	add(t, 1, "d", 'd', 0, NULL);
	add(t, 1, "d/e", 'f', 6, NULL);
	add(t, 1, "d", 'h', 0, "d/e"); /* its target below the folder it replaces */
	report(t, &c, "x:1");
	CHECK(got(&c, "x:1") && got(&c, "x:1")->type == MEMBER_DIR);
	CHECK(got(&c, "x:1/a") && got(&c, "x:1/a")->type == MEMBER_REG);
	CHECK(got(&c, "x:1/b") && got(&c, "x:1/b")->type == MEMBER_HARDLINK &&
	      !strcmp(got(&c, "x:1/b")->link, "x:1/a"));
	CHECK(got(&c, "x:1/c") && got(&c, "x:1/c")->type == MEMBER_HARDLINK);
	CHECK(got(&c, "x:1/d") && got(&c, "x:1/d")->type == MEMBER_REG &&
	      got(&c, "x:1/d")->data_off == 6 && !got(&c, "x:1/d/e"));
	oci_tree_free(t);

	/* too deep: skipped, no crash */
	CHECK_EQ(oci_tree_new(&t), 0);
	size_t deep = 2 * (OCI_MAX_DEPTH + 10);
	char *p = malloc(deep + 2);
	for (size_t i = 0; i < deep; i += 2)
		memcpy(p + i, "a/", 2);
	p[deep] = 'f';
	p[deep + 1] = '\0';
	add(t, 0, p, 'f', 0, NULL);
	add(t, 0, p + deep - 20, 'f', 0, NULL);
	report(t, &c, NULL);
	CHECK(c.n > 0 && c.n < 20);
	free(p);
	oci_tree_free(t);
	oci_tree_free(NULL);
}

/* ---- JSON --------------------------------------------------------------------------------- */

static void test_json(void)
{
	static const char *bad[] = {"", "{", "[1,2", "{\"a\":}", "{} x", "nul", "\"\\u12\"",
				    "{\"a\":1}{}", "[1e99999999999999999999]x"};
	char *deep = malloc(20001);
	struct json_object *j;

	CHECK_EQ(oci_dl_load(), 0);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = oci_json_parse(bad[i], strlen(bad[i]), "bad");
		CHECK(!j);
		sym_json_object_put(j);
	}
	memset(deep, '[', 10000);
	memset(deep + 10000, ']', 10000);
	CHECK(!oci_json_parse(deep, 20000, "deep"));
	free(deep);
	j = oci_json_parse("{\"n\": 123456789012345678901234567890}\n", 38, "huge");
	CHECK(j != NULL); /* parsed; not an int64: a size check refuses it */
	sym_json_object_put(j);
	j = oci_json_parse("[\"a\\u0000b\"] \r\n\t", 16, "nul");
	CHECK(j != NULL);
	sym_json_object_put(j);
	CHECK(!oci_json_parse("[1]\0garbage", 11, "nul after"));
}

/* ---- layouts ------------------------------------------------------------------------------ */

struct buf {
	uint8_t *p;
	size_t len;
};

static void put(struct buf *b, const void *d, size_t n)
{
	b->p = realloc(b->p, b->len + n);
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

/* A ustar member (type '0', '5', '1', '2'). */
static void member(struct buf *b, const char *name, char type, const void *data, size_t n,
		   const char *link)
{
	uint8_t h[512] = {0}, pad[512] = {0};
	unsigned sum = 0;

	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", type == '5' ? 0755 : 0644);
	snprintf((char *)h + 108, 8, "%07o", 0);
	snprintf((char *)h + 116, 8, "%07o", 0);
	snprintf((char *)h + 124, 12, "%011zo", type == '0' ? n : 0);
	snprintf((char *)h + 136, 12, "%011o", 1600000000);
	h[156] = (uint8_t)type;
	if (link)
		snprintf((char *)h + 157, 100, "%s", link);
	memcpy(h + 257, "ustar\0" "00", 8);
	memset(h + 148, ' ', 8);
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	put(b, h, 512);
	if (type == '0' && n) {
		put(b, data, n);
		put(b, pad, (512 - n % 512) % 512);
	}
}

static void end(struct buf *b)
{
	uint8_t z[1024] = {0};

	put(b, z, sizeof(z));
}

static void hex_sha(const void *d, size_t n, char out[65])
{
	struct src *s = src_from_mem(d, n);
	uint8_t dg[32];

	CHECK_EQ(oci_sha256(s, 0, n, dg), 0);
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", dg[i]);
	src_free(s);
}

/* Parses the layout in b: cont_oci's probe must say probe, its parse return want. */
static int parse(struct buf *b, bool probe, struct col *c)
{
	struct src *in = src_from_mem(b->p, b->len);
	struct cont_sink sink = {.stream = col_stream, .member = col_member, .opaque = c,
				 .name = "layout"};
	struct cont_stats st;
	int err = -EINVAL;

	memset(c, 0, sizeof(*c));
	CHECK_EQ(cont_oci.probe(in, b->p, b->len < 512 ? b->len : 512), probe);
	if (probe)
		err = cont_oci.parse(in, &sink, &st);
	src_free(in);
	return err;
}

/* An OCI layout with one plain layer; man_fmt is the manifest's JSON with %s for the layer's
 * digest and %zu its size. */
static int oci_case_hashed(const char *man_fmt, const struct buf *layer,
			   const struct buf *hashed, struct col *c)
{
	struct buf out = {0};
	char lh[65], mh[65], man[2048], idx[512];
	int err;

	hex_sha(hashed->p, hashed->len, lh);
	snprintf(man, sizeof(man), man_fmt, lh, layer->len);
	hex_sha(man, strlen(man), mh);
	snprintf(idx, sizeof(idx), "{\"manifests\":[{\"digest\":\"sha256:%s\",\"size\":%zu,"
		 "\"annotations\":{\"org.opencontainers.image.ref.name\":\"v/1\"}}]}", mh,
		 strlen(man));
	member(&out, "oci-layout", '0', "{}", 2, NULL);
	member(&out, "index.json", '0', idx, strlen(idx), NULL);
	char path[128];
	snprintf(path, sizeof(path), "blobs/sha256/%s", mh);
	member(&out, path, '0', man, strlen(man), NULL);
	snprintf(path, sizeof(path), "./blobs//sha256/%s", lh);
	member(&out, path, '0', layer->p, layer->len, NULL);
	end(&out);
	err = parse(&out, true, c);
	free(out.p);
	return err;
}

static int oci_case(const char *man_fmt, const struct buf *layer, struct col *c)
{
	return oci_case_hashed(man_fmt, layer, layer, c);
}

static void test_layouts(void)
{
	struct buf layer = {0}, dk = {0};
	struct col c;
	const char *lt = "application/vnd.oci.image.layer.v1.tar";
	char good[512];

	member(&layer, "../../escape", '0', "out", 3, NULL);
	member(&layer, "/etc/abs", '0', "abs", 3, NULL);
	member(&layer, "etc/.wh.abs", '0', "", 0, NULL); /* same layer: no effect */
	member(&layer, "l", '1', NULL, 0, "/etc/abs");
	end(&layer);
	snprintf(good, sizeof(good), "{\"layers\":[{\"mediaType\":\"%s\",\"digest\":\"sha256:%%s\","
		 "\"size\":%%zu}]}", lt);
	CHECK_EQ(oci_case(good, &layer, &c), 0);
	CHECK(got(&c, "escape") && got(&c, "escape")->stream == 0 && got(&c, "etc/abs"));
	CHECK(got(&c, "l") && got(&c, "l")->type == MEMBER_HARDLINK);
	CHECK(c.streams == 0 && c.n == 3); /* escape, etc/abs, l: etc is the builder's */
	/* the data offset: in the outer tar, where "out" is */
	const struct rec *r = got(&c, "escape");
	CHECK(r && r->size == 3);

	static const char *bad[] = {
		"{}",							    /* no layers */
		"{\"layers\":{}}",					    /* not a list */
		"{\"layers\":[{\"mediaType\":\"x\",\"digest\":\"sha256:%s\",\"size\":%zu}]}",
		"{\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\","
		"\"digest\":\"sha256:%s\",\"size\":\"%zu\"}]}",		    /* size a string */
		"{\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\","
		"\"digest\":\"sha512:%s\",\"size\":%zu}]}",		    /* sha512 */
		"{\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\","
		"\"digest\":7,\"x\":\"%s\",\"size\":%zu}]}",		    /* digest a number */
		"{\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\","
		"\"digest\":\"sha256:%s\",\"size\":1%zu}]}",		    /* wrong size */
		"{\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\","
		"\"digest\":\"sha256:../%s\",\"size\":%zu}]}",		    /* a path */
		"{\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\","
		"\"digest\":\"sha256:%s\",\"size\":%zu999999999999999999999999}]}", /* huge */
		"{\"layers\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[%s%zu]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(oci_case(bad[i], &layer, &c), -EINVAL);
	}

	/* a wrong digest of a layer: its bytes changed after the manifest was made */
	{
		struct buf other = {0};
		put(&other, layer.p, layer.len);
		other.p[600] ^= 1; /* in "out" */
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION /* a fuzz build checks no digest */
		CHECK_EQ(oci_case_hashed(good, &other, &layer, &c), -EINVAL);
#endif
		free(other.p);
	}

	/* docker save: two tags, a config; and one whose Layers hold a number */
	member(&dk, "aaa/layer.tar", '0', layer.p, layer.len, NULL);
	const char *cfg = "{\"rootfs\":{\"diff_ids\":[\"sha256:00\"]}}";
	member(&dk, "c.json", '0', cfg, strlen(cfg), NULL);
	const char *man = "[{\"Config\":\"c.json\",\"RepoTags\":[\"x:1\",\"r/y:2\"],"
			  "\"Layers\":[\"./aaa/layer.tar\"]}]";
	member(&dk, "manifest.json", '0', man, strlen(man), NULL);
	end(&dk);
	CHECK_EQ(parse(&dk, true, &c), 0);
	CHECK(got(&c, "x:1") && got(&c, "r_y:2") && got(&c, "x:1/escape") &&
	      got(&c, "r_y:2/etc/abs"));
	free(dk.p);
	dk = (struct buf){0};
	member(&dk, "c.json", '0', "{}", 2, NULL);
	man = "[{\"Config\":\"c.json\",\"RepoTags\":null,\"Layers\":[7]}]";
	member(&dk, "manifest.json", '0', man, strlen(man), NULL);
	end(&dk);
	CHECK_EQ(parse(&dk, true, &c), -EINVAL);
	free(dk.p);
	/* a manifest.json of another kind: not an image, a plain tar */
	dk = (struct buf){0};
	man = "{\"name\":\"web app\",\"icons\":[]}";
	member(&dk, "manifest.json", '0', man, strlen(man), NULL);
	end(&dk);
	CHECK_EQ(parse(&dk, false, &c), -EINVAL);
	free(dk.p);
	free(layer.p);
}

int main(void)
{
	tfs_log_level = getenv("OCI_LOG") ? TFS_LOG_DEBUG : TFS_LOG_ERR - 1; /* the damaged inputs log errors by design */
	test_merge();
	test_json();
	test_layouts();
	return tu_exit();
}
