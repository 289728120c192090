/* The container images' container (cont_oci, container.h), inside: an OCI image layout or a
 * `docker save` tar, whose layers are merged into the image's root file system.
 *
 *   oci.c        the container: probe, parse (layers read, streams declared, trees reported)
 *   oci_json.c   the outer tar's listing, index.json / manifest.json / the manifests read
 *                into a list of images (json-c), digests checked
 *   oci_layer.c  one layer: its blob decoded (codec.h through seek/stream.h) and its tar
 *                parsed (containers/tar/tar.h) into the tree; a blob's SHA-256
 *   oci_merge.c  the tree: layers applied in order, whiteouts, opaque folders, hard links;
 *                reported as members
 *
 * The files call down only: oci.c calls the three others, oci_json.c and oci_layer.c call
 * oci_merge.c's nothing but what is declared here.  Nothing is shared between threads: one
 * parse owns everything it makes.
 */
#ifndef TARSEEK_OCI_INT_H
#define TARSEEK_OCI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/source.h"
#include "containers/container.h"
#include "containers/member.h"

#define OCI_MAX_JSON ((size_t)16 << 20) /* a larger index or manifest is refused */
#define OCI_MAX_LAYERS 4096		/* per image (docker's limit is 127) */
#define OCI_MAX_IMAGES 4096
#define OCI_MAX_OUTER ((size_t)1 << 20) /* members of the outer tar */
#define OCI_PROBE_MEMBERS 4096		/* headers the probe reads at most */
#define OCI_MAX_DEPTH 1024		/* path components of a layer's member */
#define OCI_MAX_PATH ((size_t)64 << 10) /* bytes of a layer member's path */

/* ---- the outer tar (oci_json.c) ---- */

struct oci_ent {
	char *name;   /* normalised: no "./", no leading or doubled '/' */
	uint64_t off; /* its data in the outer tar */
	uint64_t size;
};

struct oci_outer {
	struct oci_ent *v; /* sorted by name once listed */
	size_t n, cap;
};

/* Lists the regular files of the outer tar in (at most max of its members; 0 if more, the
 * listing then holds the first max).  0, -EINVAL not a tar, -EIO, -ENOMEM. */
int oci_outer_list(struct src *in, size_t max, struct oci_outer *o);
/* The probe's listing: like oci_outer_list, but quiet (no message, whatever the bytes) and
 * cruder -- the name and size fields of plain headers only (no long names, no PAX), stopping
 * at the first block that is not a valid header.  0 or -ENOMEM. */
int oci_outer_peek(struct src *in, size_t max, struct oci_outer *o);
/* The outer member called name (normalised like the listing), or NULL. */
const struct oci_ent *oci_outer_find(const struct oci_outer *o, const char *name);
void oci_outer_free(struct oci_outer *o);

/* ---- the images (oci_json.c) ---- */

struct oci_layer {
	uint64_t off, len; /* the blob in the outer tar */
	const char *codec; /* codec.h name ("gzip", "zstd"), NULL: a plain tar (static string) */
};

struct oci_image {
	char *name; /* the folder of the image when there are several: a tag, or 12 hex digits */
	struct oci_layer *layers;
	size_t nlayers;
};

struct oci_images {
	struct oci_image *v;
	size_t n;
	bool docker; /* read from manifest.json */
};

/* True if o lists an OCI layout (oci-layout and index.json) or a docker save (manifest.json
 * that parses as a list of objects with "Layers"). */
bool oci_outer_is_image(struct src *in, const struct oci_outer *o);

/* The images of the layout in, whose outer listing is o.  manifest.json is read when there
 * is one (docker save, also docker >= 25 which writes index.json too), else index.json.
 * Every JSON document's digest is checked when the layout gives one, and every blob's size.
 * 0, or -EINVAL (logged: bad JSON, a blob missing, a digest or size that does not match, a
 * media type tarseek does not know), -EIO, -ENOMEM.  name: for messages. */
int oci_read_images(struct src *in, const struct oci_outer *o, const char *name,
		    struct oci_images *out);
void oci_images_free(struct oci_images *im);

/* Parses JSON text (len bytes, any bytes) with a bounded depth: the object, or NULL after
 * logging why (name: for messages).  Free with json_object_put. */
struct json_object *oci_json_parse(const void *text, size_t len, const char *name);

/* ---- a blob (oci_layer.c) ---- */

/* The SHA-256 of in's bytes [off, off + len).  0, -EIO (short), -ENOTSUP (no libcrypto),
 * -ENOMEM. */
int oci_sha256(struct src *in, uint64_t off, uint64_t len, uint8_t digest[32]);

/* ---- the tree (oci_merge.c) ---- */

struct oci_tree;

/* An empty tree (its root a folder).  0 or -ENOMEM; *out = NULL on error. */
int oci_tree_new(struct oci_tree **out);
void oci_tree_free(struct oci_tree *t); /* NULL does nothing */

/* Applies member m of layer `layer` (0, 1, ... in manifest order; the calls of one layer
 * come in the layer's order, after every earlier layer's): a later path replaces an earlier
 * one (a folder over a folder keeps its contents), ".wh.NAME" removes NAME of the earlier
 * layers, ".wh..wh..opq" the earlier contents of its folder; hard links are resolved now
 * against the tree.  m's data_off is in the layer's decoded bytes.  0 or -ENOMEM (paths
 * too long or too deep are skipped, with a warning). */
int oci_tree_add(struct oci_tree *t, unsigned layer, const struct arc_member *m);

/* Reports every node of t to sink as members, parents before their children, each under
 * prefix/ (NULL: at the archive's root; else the folder prefix is reported first).  A node
 * of layer i has stream stream[i] and data_off base[i] + its offset.  Files that share
 * their data (hard links) are one file and hard links to it.  0 or the sink's error. */
int oci_tree_report(struct oci_tree *t, const char *prefix, const uint64_t *stream,
		    const uint64_t *base, const struct cont_sink *sink);

/* ---- a layer (oci_layer.c) ---- */

/* Reads layer ly (the layer-th of its image) of in into t.  *usize: the bytes its blob
 * decodes to (when the blob is damaged, what decoded before the damage: the builder marks
 * what lies past it); *damaged: the blob or its tar was damaged.  0, -EINVAL (not a tar, logged),
 * -EIO (nothing readable), -ENOMEM. */
int oci_layer_read(struct src *in, const struct oci_layer *ly, unsigned layer, struct oci_tree *t,
		   const char *name, uint64_t *usize, bool *damaged);

#endif
