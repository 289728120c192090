/* The outer tar of an image and the JSON documents that say what is in it (see oci_int.h).
 *
 * The outer tar is listed once, headers only (tar_parse on the file), into a sorted table of
 * its regular files, so that a blob is found by name.  Names are normalised the way the
 * builder normalises paths ("./blobs//x" is "blobs/x"; ".." never climbs above the top).
 *
 * The documents, read with json-c under a depth bound and a size bound (OCI_MAX_JSON):
 *   - docker save: manifest.json, a list of {Config, RepoTags, Layers}: each layer a member of
 *     the outer tar by path; one image per tag (a tagless one named after its config);
 *   - OCI: index.json, {manifests: [descriptor...]}; a descriptor of an image index (a
 *     multi-platform image) is followed, four levels at most; one of an image manifest gives
 *     an image: {config, layers: [descriptor...]}, named by its
 *     org.opencontainers.image.ref.name annotation (else io.containerd.image.name, else the
 *     first 12 hex digits of its digest).  Attestation manifests (buildx's
 *     vnd.docker.reference.type) are skipped.
 * docker >= 25 writes both: manifest.json is then read, for docker's own tags ("x:1").
 *
 * Checks: a descriptor's digest must be "sha256:" and 64 lower-case hex digits (any other
 * algorithm is refused: it names a path, blobs/ALG/HEX, and nothing else is verified), its
 * blob must be in the outer tar with the descriptor's size, and its SHA-256 must match --
 * for the JSON documents and for the layers' compressed bytes alike.  docker save gives no
 * digest for a layer: a plain layer is checked against the config's rootfs.diff_ids (the
 * SHA-256 of the uncompressed tar) when the config gives them, a compressed one is not
 * checked.  A layer's media type must be one of the tar layers (+gzip, +zstd, docker's);
 * its codec is read from its first bytes (codec_probe), so a layer labelled gzip that is a
 * plain tar still reads.  Anything wrong refuses the image with a message (-EINVAL).
 */
#include "containers/oci/oci_int.h"
#include "containers/oci/oci_dl.h"

#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/codec.h"
#include "common/log.h"
#include "containers/tar/tar.h"

#define JSON_DEPTH 32	 /* json-c's default; deeper documents are refused */
#define INDEX_DEPTH 4	 /* image indexes inside image indexes */
#define NAME_MAX_LEN 255 /* of an image's folder */
#define JSON_BUDGET                                                                                \
	((uint64_t)256 << 20) /* bytes of JSON read in all, the same one counted                   \
				 each time it is read */

/* ---- the outer tar ------------------------------------------------------------------------ */

/* path normalised into a new string, or NULL (out of memory). */
static char *norm_path(const char *path, size_t len)
{
	char *out = malloc(len + 1);
	size_t n = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t j = i;
		while (j < len && path[j] != '/')
			j++;
		size_t l = j - i;
		if (l == 0 || (l == 1 && path[i] == '.')) {
		} else if (l == 2 && path[i] == '.' && path[i + 1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
		} else {
			if (n)
				out[n++] = '/';
			memcpy(out + n, path + i, l);
			n += l;
		}
		i = j + 1;
	}
	out[n] = '\0';
	return out;
}

struct listing {
	struct oci_outer *o;
	size_t max, seen;
};

static int on_outer(void *opaque, const struct arc_member *m)
{
	struct listing *l = opaque;
	struct oci_outer *o = l->o;

	if (++l->seen > l->max)
		return -ECANCELED;
	if (m->type != MEMBER_REG || m->sparse)
		return 0;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		struct oci_ent *v = realloc(o->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		o->v = v;
		o->cap = cap;
	}
	struct oci_ent *e = &o->v[o->n];
	if (!(e->name = norm_path((const char *)m->path, m->path_len)))
		return -ENOMEM;
	e->off = m->data_off;
	e->size = m->size;
	o->n++;
	return 0;
}

static int cmp_ent(const void *a, const void *b)
{
	const struct oci_ent *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	/* a name repeated: the later member wins, as tar extracts it */
	return c ? c : (x->off < y->off ? 1 : x->off > y->off ? -1 : 0);
}

int oci_outer_list(struct src *in, size_t max, struct oci_outer *o)
{
	struct listing l = {.o = o, .max = max};
	struct tar_callbacks cb = {.entry = on_outer, .opaque = &l};
	struct tar_stats ts;
	int err;

	*o = (struct oci_outer){0};
	err = tar_parse(in, &cb, &ts);
	if (err == -ECANCELED)
		err = 0;
	if (o->n)
		qsort(o->v, o->n, sizeof(*o->v), cmp_ent);
	return err;
}

/* An octal field of a header: its value, or UINT64_MAX (base-256, or not a number). */
static uint64_t octal(const uint8_t *f, size_t len)
{
	uint64_t v = 0;
	size_t i = 0;

	while (i < len && f[i] == ' ')
		i++;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return UINT64_MAX;
		v = v * 8 + (uint64_t)(f[i] - '0');
	}
	return i < len && f[i] != ' ' && f[i] != '\0' ? UINT64_MAX : v;
}

int oci_outer_peek(struct src *in, size_t max, struct oci_outer *o)
{
	uint64_t off = 0, size = src_size(in);
	struct arc_member m = {0};
	struct listing l = {.o = o, .max = max};
	uint8_t h[TAR_BLOCK];
	char name[256];
	int err = 0;

	*o = (struct oci_outer){0};
	while (!err && size >= TAR_BLOCK && off <= size - TAR_BLOCK) {
		if (src_pread_full(in, h, TAR_BLOCK, off) || !tar_header_valid(h))
			break;
		uint64_t len = octal(h + 124, 12);
		if (len == UINT64_MAX || len > size)
			break;
		if (h[156] == '0' || h[156] == '\0') {
			bool ustar = !memcmp(h + 257, "ustar", 5) && h[345];
			snprintf(name, sizeof(name), "%.*s%s%.*s", ustar ? 155 : 0,
				 (const char *)h + 345, ustar ? "/" : "", 100, (const char *)h);
			m.type = MEMBER_REG;
			m.path = (const uint8_t *)name;
			m.path_len = strlen(name);
			m.data_off = off + TAR_BLOCK;
			m.size = len;
			err = on_outer(&l, &m);
		} else if (++l.seen > max) {
			err = -ECANCELED;
		}
		off += TAR_BLOCK + (len + TAR_BLOCK - 1) / TAR_BLOCK * TAR_BLOCK;
	}
	if (o->n)
		qsort(o->v, o->n, sizeof(*o->v), cmp_ent);
	return err == -ECANCELED ? 0 : err;
}

const struct oci_ent *oci_outer_find(const struct oci_outer *o, const char *name)
{
	char *key = norm_path(name, strlen(name));
	size_t lo = 0, hi = o->n;
	const struct oci_ent *hit = NULL;

	while (key && lo < hi) { /* the first of equal names: the last in the tar */
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(o->v[mid].name, key);
		if (c < 0) {
			lo = mid + 1;
		} else {
			if (c == 0)
				hit = &o->v[mid];
			hi = mid;
		}
	}
	free(key);
	return hit;
}

void oci_outer_free(struct oci_outer *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->v[i].name);
	free(o->v);
	*o = (struct oci_outer){0};
}

/* ---- JSON --------------------------------------------------------------------------------- */

/* oci_json_parse, logging nothing when quiet (the probe). */
static struct json_object *parse(const void *text, size_t len, const char *name, bool quiet)
{
	struct json_tokener *tok;
	struct json_object *j = NULL;

	if (len > OCI_MAX_JSON || len > INT32_MAX) {
		if (!quiet)
			tfs_log(TFS_LOG_ERR, "%s: a JSON document of %zu bytes: too large", name,
				len);
		return NULL;
	}
	if (oci_dl_load()) /* said once */
		return NULL;
	tok = sym_json_tokener_new_ex(JSON_DEPTH);
	if (!tok)
		return NULL;
	sym_json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	j = sym_json_tokener_parse_ex(tok, text, (int)len);
	size_t end = j ? sym_json_tokener_get_parse_end(tok) : 0;
	while (end < len && strchr(" \t\r\n", ((const char *)text)[end]) &&
	       ((const char *)text)[end])
		end++; /* white space may follow */
	if (!j || sym_json_tokener_get_error(tok) != json_tokener_success || end != len) {
		enum json_tokener_error e = sym_json_tokener_get_error(tok);
		if (!quiet)
			tfs_log(TFS_LOG_ERR, "%s: bad JSON: %s", name,
				e == json_tokener_continue  ? "it ends too soon"
				: e == json_tokener_success ? "something follows the document"
							    : sym_json_tokener_error_desc(e));
		sym_json_object_put(j);
		j = NULL;
	}
	sym_json_tokener_free(tok);
	return j;
}

struct json_object *oci_json_parse(const void *text, size_t len, const char *name)
{
	return parse(text, len, name, false);
}

/* The document in outer member e, parsed. */
static int read_json(struct src *in, const struct oci_ent *e, const char *name, bool quiet,
		     uint64_t *budget, struct json_object **out)
{
	char *buf, *what;
	int err;

	*out = NULL;
	if (budget && e->size > *budget) {
		tfs_log(TFS_LOG_ERR,
			"%s: its JSON documents add up to more than %" PRIu64 " MiB, "
			"read once for each image that names them: refused",
			name, (uint64_t)JSON_BUDGET >> 20);
		return -EINVAL;
	}
	if (budget)
		*budget -= e->size;
	if (e->size > OCI_MAX_JSON) {
		tfs_log(TFS_LOG_ERR, "%s: %s: a JSON document of %" PRIu64 " bytes: too large",
			name, e->name, e->size);
		return -EINVAL;
	}
	buf = malloc(e->size ? e->size : 1);
	what = malloc(strlen(name) + strlen(e->name) + 3);
	if (!buf || !what) {
		free(buf);
		free(what);
		return -ENOMEM;
	}
	sprintf(what, "%s: %s", name, e->name);
	err = src_pread_full(in, buf, e->size, e->off);
	if (!err && !(*out = parse(buf, e->size, what, quiet)))
		err = -EINVAL;
	free(what);
	free(buf);
	return err;
}

/* key's value in object j if it is a string without NULs, else NULL. */
static const char *jstr(struct json_object *j, const char *key)
{
	struct json_object *v;

	if (!sym_json_object_is_type(j, json_type_object) || !sym_json_object_object_get_ex(j, key, &v) ||
	    !sym_json_object_is_type(v, json_type_string))
		return NULL;
	const char *s = sym_json_object_get_string(v);
	return strlen(s) == (size_t)sym_json_object_get_string_len(v) ? s : NULL;
}

/* key's value in object j if it is an array, else NULL. */
static struct json_object *jarr(struct json_object *j, const char *key)
{
	struct json_object *v;

	if (!sym_json_object_is_type(j, json_type_object) || !sym_json_object_object_get_ex(j, key, &v) ||
	    !sym_json_object_is_type(v, json_type_array))
		return NULL;
	return v;
}

bool oci_outer_is_image(struct src *in, const struct oci_outer *o)
{
	const struct oci_ent *e = oci_outer_find(o, "manifest.json");
	struct json_object *j = NULL;
	bool yes = false;

	if (oci_outer_find(o, "oci-layout") && oci_outer_find(o, "index.json"))
		return true;
	if (!e || e->size > OCI_MAX_JSON || oci_dl_load())
		return false;
	read_json(in, e, "manifest.json", true, NULL, &j); /* another kind's: quiet */
	if (sym_json_object_is_type(j, json_type_array) && sym_json_object_array_length(j) > 0)
		yes = jarr(sym_json_object_array_get_idx(j, 0), "Layers") != NULL;
	sym_json_object_put(j);
	return yes;
}

/* ---- the images --------------------------------------------------------------------------- */

struct checked {
	uint64_t off; /* the blob's */
	uint8_t digest[32];
};

struct rd {
	struct src *in;
	const struct oci_outer *o;
	const char *name; /* the archive's, for messages */
	struct oci_images *im;
	size_t cap;
	uint64_t budget;      /* JSON bytes that may still be read */
	struct checked *done; /* blobs whose digest matched: not hashed again */
	size_t ndone, done_cap;
	bool no_crypto; /* said once */
};

static int push_image(struct rd *r, char *name, struct oci_layer *layers, size_t n)
{
	struct oci_images *im = r->im;

	if (im->n == OCI_MAX_IMAGES) {
		tfs_log(TFS_LOG_ERR, "%s: more than %d images", r->name, OCI_MAX_IMAGES);
		return -EINVAL;
	}
	if (im->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 4;
		struct oci_image *v = realloc(im->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		im->v = v;
		r->cap = cap;
	}
	im->v[im->n++] = (struct oci_image){.name = name, .layers = layers, .nlayers = n};
	return 0;
}

/* A folder name from a tag: '/' becomes '_', "" "." ".." get a '_'; NULL: out of memory. */
static char *folder_name(const char *tag, size_t len)
{
	char *s;

	if (len > NAME_MAX_LEN)
		len = NAME_MAX_LEN;
	s = malloc(len + 2);
	if (!s)
		return NULL;
	for (size_t i = 0; i < len; i++)
		s[i] = tag[i] == '/' ? '_' : tag[i];
	s[len] = '\0';
	if (!strcmp(s, "") || !strcmp(s, ".") || !strcmp(s, ".."))
		strcat(s, "_");
	return s;
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[n] == '\0';
}

static int unhex(const char *h, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		if (sscanf(h + 2 * i, "%2x", &v) != 1)
			return -EINVAL;
		out[i] = (uint8_t)v;
	}
	return 0;
}

/* Checks that e's bytes have the SHA-256 hex (64 digits).  what: for messages. */
static int check_sha(struct rd *r, const struct oci_ent *e, const char *hex, const char *what)
{
	uint8_t want[32], got[32];
	int err = unhex(hex, want, 32);

	for (size_t i = 0; !err && i < r->ndone; i++)
		if (r->done[i].off == e->off && !memcmp(r->done[i].digest, want, 32))
			return 0;

#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	return err; /* a fuzz build (meson.build): a mutated blob would never pass */
#endif

	err = err ? err : oci_sha256(r->in, e->off, e->size, got);
	if (err == -ENOTSUP) {
		if (!r->no_crypto)
			tfs_log(TFS_LOG_NOTICE,
				"%s: no libcrypto: the image's digests are not "
				"checked",
				r->name);
		r->no_crypto = true;
		return 0;
	}
	if (!err && memcmp(want, got, 32) != 0) {
		tfs_log(TFS_LOG_ERR, "%s: %s (%s) does not match its digest: damaged", r->name,
			what, e->name);
		err = -EINVAL;
	}
	if (!err && r->ndone == r->done_cap) {
		size_t cap = r->done_cap ? r->done_cap * 2 : 16;
		struct checked *d = realloc(r->done, cap * sizeof(*d));
		if (!d)
			return -ENOMEM;
		r->done = d;
		r->done_cap = cap;
	}
	if (!err) {
		r->done[r->ndone].off = e->off;
		memcpy(r->done[r->ndone++].digest, want, 32);
	}
	return err;
}

/* The blob a descriptor names, its size and digest checked.  *hex: its digest's hex. */
static int descriptor_blob(struct rd *r, struct json_object *d, const char *what,
			   const struct oci_ent **out, const char **hex)
{
	const char *dg = jstr(d, "digest");
	struct json_object *sz;
	char path[80];
	int err;

	*out = NULL;
	if (!dg || strncmp(dg, "sha256:", 7) != 0 || strlen(dg) != 71 || !is_hex(dg + 7, 64)) {
		tfs_log(TFS_LOG_ERR, "%s: %s without a sha256 digest tarseek can read (%.80s)",
			r->name, what, dg ? dg : "none");
		return -EINVAL;
	}
	*hex = dg + 7;
	snprintf(path, sizeof(path), "blobs/sha256/%s", *hex);
	*out = oci_outer_find(r->o, path);
	if (!*out) {
		tfs_log(TFS_LOG_ERR, "%s: %s: its blob %s is missing", r->name, what, path);
		return -EINVAL;
	}
	if (!sym_json_object_object_get_ex(d, "size", &sz) || !sym_json_object_is_type(sz, json_type_int) ||
	    sym_json_object_get_int64(sz) < 0 || (uint64_t)sym_json_object_get_int64(sz) != (*out)->size) {
		tfs_log(TFS_LOG_ERR,
			"%s: %s: its size is missing or is not its blob's (%" PRIu64 " bytes)",
			r->name, what, (*out)->size);
		return -EINVAL;
	}
	err = check_sha(r, *out, *hex, what);
	return err;
}

/* The codec of the blob e from its first bytes: a codec's name, or NULL (a plain tar). */
static int blob_codec(struct rd *r, const struct oci_ent *e, const char **codec)
{
	uint8_t head[512];
	ssize_t n =
	    src_pread(r->in, head, e->size < sizeof(head) ? (size_t)e->size : sizeof(head), e->off);
	const struct codec *c;

	*codec = NULL;
	if (n < 0)
		return (int)n;
	c = codec_probe(head, (size_t)n);
	*codec = c ? c->name : NULL;
	return 0;
}

static bool known_layer_type(const char *t)
{
	static const char *const known[] = {
	    "application/vnd.oci.image.layer.v1.tar",
	    "application/vnd.oci.image.layer.v1.tar+gzip",
	    "application/vnd.oci.image.layer.v1.tar+zstd",
	    "application/vnd.oci.image.layer.nondistributable.v1.tar",
	    "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
	    "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
	    "application/vnd.docker.image.rootfs.diff.tar",
	    "application/vnd.docker.image.rootfs.diff.tar.gzip",
	    "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
	};

	for (size_t i = 0; t && i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(t, known[i]))
			return true;
	return false;
}

/* An image manifest j (its blob e): its layers into an image called name (owned: given on). */
static int oci_manifest(struct rd *r, const struct oci_ent *e, struct json_object *j, char *name)
{
	struct json_object *ls;
	struct oci_layer *layers = NULL;
	size_t n = 0;
	int err = 0;

	if (!(ls = jarr(j, "layers"))) {
		tfs_log(TFS_LOG_ERR, "%s: an image manifest (%s) without layers", r->name, e->name);
		err = -EINVAL;
	}
	if (!err && (n = sym_json_object_array_length(ls)) > OCI_MAX_LAYERS) {
		tfs_log(TFS_LOG_ERR, "%s: an image of %zu layers: too many", r->name, n);
		err = -EINVAL;
	}
	if (!err && !(layers = calloc(n ? n : 1, sizeof(*layers))))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < n; i++) {
		struct json_object *d = sym_json_object_array_get_idx(ls, i);
		const char *mt = jstr(d, "mediaType"), *hex;
		const struct oci_ent *b;
		if (!known_layer_type(mt)) {
			tfs_log(TFS_LOG_ERR,
				"%s: a layer of media type %.100s, which tarseek does not "
				"read",
				r->name, mt ? mt : "(none)");
			err = -EINVAL;
			break;
		}
		err = descriptor_blob(r, d, "a layer", &b, &hex);
		err = err ? err : blob_codec(r, b, &layers[i].codec);
		layers[i].off = b ? b->off : 0;
		layers[i].len = b ? b->size : 0;
	}
	if (!err)
		err = push_image(r, name, layers, n);
	if (err) {
		free(layers);
		free(name);
	}
	return err;
}

static bool is_index_type(const char *mt)
{
	return mt && (!strcmp(mt, "application/vnd.oci.image.index.v1+json") ||
		      !strcmp(mt, "application/vnd.docker.distribution.manifest.list.v2+json"));
}

/* The name of the image a descriptor gives (from its annotations), or of its platform when
 * parent already names it: malloc'd, NULL out of memory. */
static char *descriptor_name(struct json_object *d, const char *hex, const char *parent,
			     size_t siblings)
{
	struct json_object *an = NULL, *pf = NULL;
	const char *ref = NULL;
	char buf[NAME_MAX_LEN + 1];

	if (sym_json_object_object_get_ex(d, "annotations", &an)) {
		ref = jstr(an, "org.opencontainers.image.ref.name");
		ref = ref ? ref : jstr(an, "io.containerd.image.name");
	}
	if (ref && *ref)
		return folder_name(ref, strlen(ref));
	if (parent && siblings == 1)
		return strdup(parent);
	sym_json_object_object_get_ex(d, "platform", &pf);
	if (parent && jstr(pf, "os") && jstr(pf, "architecture")) {
		const char *v = jstr(pf, "variant");
		snprintf(buf, sizeof(buf), "%s_%s-%s%s%s", parent, jstr(pf, "os"),
			 jstr(pf, "architecture"), v ? "-" : "", v ? v : "");
		return folder_name(buf, strlen(buf));
	}
	return folder_name(hex, 12);
}

static bool is_attestation(struct json_object *d)
{
	struct json_object *an;

	return sym_json_object_object_get_ex(d, "annotations", &an) &&
	       jstr(an, "vnd.docker.reference.type");
}

/* An image index (index.json, or a blob of one): its images.  parent: its name, or NULL. */
static int oci_index(struct rd *r, struct json_object *j, const char *parent, int depth)
{
	struct json_object *ms = jarr(j, "manifests");
	size_t n, images = 0;
	int err = 0;

	if (!ms) {
		tfs_log(TFS_LOG_ERR, "%s: an image index without manifests", r->name);
		return -EINVAL;
	}
	n = sym_json_object_array_length(ms);
	for (size_t i = 0; i < n; i++)
		images += !is_attestation(sym_json_object_array_get_idx(ms, i));
	for (size_t i = 0; !err && i < n; i++) {
		struct json_object *d = sym_json_object_array_get_idx(ms, i), *sub = NULL;
		const struct oci_ent *b;
		const char *hex, *mt = jstr(d, "mediaType");
		char *name;
		if (is_attestation(d))
			continue;
		err = descriptor_blob(r, d, "a manifest", &b, &hex);
		if (err)
			break;
		if (!(name = descriptor_name(d, hex, parent, images))) {
			err = -ENOMEM;
			break;
		}
		err = read_json(r->in, b, r->name, false, &r->budget, &sub);
		/* an index, by its media type or, without one, by its content */
		if (!err && !is_index_type(mt) &&
		    (mt || !jarr(sub, "manifests") || jarr(sub, "layers"))) {
			err = oci_manifest(r, b, sub, name);
			sym_json_object_put(sub);
			continue;
		}
		if (!err && depth == INDEX_DEPTH) {
			tfs_log(TFS_LOG_ERR, "%s: image indexes nested too deep", r->name);
			err = -EINVAL;
		}
		err = err ? err : oci_index(r, sub, name, depth + 1);
		sym_json_object_put(sub);
		free(name);
	}
	return err;
}

/* docker save's manifest.json: one image per tag. */
static int docker_manifest(struct rd *r, struct json_object *j)
{
	size_t n;
	int err = 0;

	if (!sym_json_object_is_type(j, json_type_array)) {
		tfs_log(TFS_LOG_ERR, "%s: manifest.json is not a list", r->name);
		return -EINVAL;
	}
	n = sym_json_object_array_length(j);
	for (size_t i = 0; !err && i < n; i++) {
		struct json_object *m = sym_json_object_array_get_idx(j, i), *cfg = NULL;
		struct json_object *ls = jarr(m, "Layers"), *tags = jarr(m, "RepoTags");
		struct json_object *diff = NULL;
		const char *cname = jstr(m, "Config");
		const struct oci_ent *ce = cname ? oci_outer_find(r->o, cname) : NULL;
		struct oci_layer *layers = NULL;
		size_t nl = ls ? sym_json_object_array_length(ls) : 0, nt;
		if (!ls || !ce || nl > OCI_MAX_LAYERS) {
			tfs_log(TFS_LOG_ERR, "%s: manifest.json: an image without %s", r->name,
				!ls   ? "Layers"
				: !ce ? "its Config"
				      : "a sane number of layers");
			return -EINVAL;
		}
		err = read_json(r->in, ce, r->name, false, &r->budget, &cfg);
		if (!err && sym_json_object_object_get_ex(cfg, "rootfs", &diff))
			diff = jarr(diff, "diff_ids");
		if (!err && !(layers = calloc(nl ? nl : 1, sizeof(*layers))))
			err = -ENOMEM;
		for (size_t k = 0; !err && k < nl; k++) {
			struct json_object *p = sym_json_object_array_get_idx(ls, k);
			const char *path = sym_json_object_is_type(p, json_type_string)
					       ? sym_json_object_get_string(p)
					       : NULL;
			const struct oci_ent *b = path ? oci_outer_find(r->o, path) : NULL;
			const char *id =
			    diff && k < sym_json_object_array_length(diff)
				? sym_json_object_get_string(sym_json_object_array_get_idx(diff, k))
				: NULL;
			if (!b) {
				tfs_log(TFS_LOG_ERR,
					"%s: manifest.json: the layer %.200s is missing", r->name,
					path ? path : "(not a string)");
				err = -EINVAL;
				break;
			}
			layers[k].off = b->off;
			layers[k].len = b->size;
			err = blob_codec(r, b, &layers[k].codec);
			/* a plain layer's digest is its diff_id */
			if (!err && !layers[k].codec && id && !strncmp(id, "sha256:", 7) &&
			    strlen(id) == 71 && is_hex(id + 7, 64))
				err = check_sha(r, b, id + 7, "a layer");
		}
		sym_json_object_put(cfg);
		nt = tags ? sym_json_object_array_length(tags) : 0;
		for (size_t k = 0; !err && k < (nt ? nt : 1); k++) {
			struct json_object *t = nt ? sym_json_object_array_get_idx(tags, k) : NULL;
			const char *tag = sym_json_object_is_type(t, json_type_string)
					      ? sym_json_object_get_string(t)
					      : NULL;
			const char *base =
			    strrchr(ce->name, '/') ? strrchr(ce->name, '/') + 1 : ce->name;
			size_t bl = strcspn(base, "."); /* "<hex>.json": 12 of its digits */
			char *name = tag && *tag ? folder_name(tag, strlen(tag))
						 : folder_name(base, bl < 12 ? bl : 12);
			struct oci_layer *copy = malloc((nl ? nl : 1) * sizeof(*copy));
			if (!name || !copy) {
				free(name);
				free(copy);
				err = -ENOMEM;
				break;
			}
			memcpy(copy, layers, nl * sizeof(*copy));
			err = push_image(r, name, copy, nl);
			if (err) {
				free(name);
				free(copy);
			}
		}
		free(layers);
	}
	return err;
}

/* Folder names made unique: a repeated one gets "~N", N its place in the list (a tag that
 * is itself "x~N" could still meet it: the builder then shows both in one folder). */
static int unique_names(struct oci_images *im)
{
	for (size_t i = 1; i < im->n; i++) {
		bool taken = false;
		for (size_t m = 0; m < i && !taken; m++)
			taken = !strcmp(im->v[m].name, im->v[i].name);
		if (!taken)
			continue;
		size_t len = strlen(im->v[i].name) + 24;
		char *n = malloc(len);
		if (!n)
			return -ENOMEM;
		snprintf(n, len, "%s~%zu", im->v[i].name, i + 1);
		free(im->v[i].name);
		im->v[i].name = n;
	}
	return 0;
}

int oci_read_images(struct src *in, const struct oci_outer *o, const char *name,
		    struct oci_images *out)
{
	struct rd r = {.in = in, .o = o, .name = name, .im = out, .budget = JSON_BUDGET};
	const struct oci_ent *e = oci_outer_find(o, "manifest.json");
	struct json_object *j = NULL;
	int err;

	*out = (struct oci_images){0};
	if (e) {
		out->docker = true;
		err = read_json(in, e, name, false, &r.budget, &j);
		err = err ? err : docker_manifest(&r, j);
	} else if ((e = oci_outer_find(o, "index.json"))) {
		err = read_json(in, e, name, false, &r.budget, &j);
		err = err ? err : oci_index(&r, j, NULL, 0);
	} else {
		tfs_log(TFS_LOG_ERR, "%s: neither manifest.json nor index.json", name);
		err = -EINVAL;
	}
	sym_json_object_put(j);
	if (!err)
		err = unique_names(out);
	if (!err && out->n == 0) {
		tfs_log(TFS_LOG_ERR, "%s: no image in it", name);
		err = -EINVAL;
	}
	if (err)
		oci_images_free(out);
	free(r.done);
	return err;
}

void oci_images_free(struct oci_images *im)
{
	for (size_t i = 0; i < im->n; i++) {
		free(im->v[i].name);
		free(im->v[i].layers);
	}
	free(im->v);
	*im = (struct oci_images){0};
}
