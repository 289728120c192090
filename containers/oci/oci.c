/* cont_oci: an OCI image layout or a `docker save` tar, shown as the merged root file system
 * of its image (see oci_int.h for the files, container.h for what a container reports).
 *
 * The probe lists the first OCI_PROBE_MEMBERS headers of a tar (quietly: a damaged plain tar
 * gets its messages from the tar parser, once) and says yes when they hold
 * oci-layout and index.json, or a manifest.json that reads as docker's.  It runs before the
 * tar parser (index/build.c), which would otherwise take the file as the plain tar it also
 * is; with --oci-raw the builder does not ask it, and the tar shows as it is.
 *
 * The parse: the outer tar listed, the images read (oci_json.c), then image by image the
 * layers read into a tree (oci_layer.c, oci_merge.c) and the tree reported.  Each layer blob
 * is a stream (its codec, its bytes in the outer tar, its decoded size), declared once even
 * when several images share it; a plain layer is no stream: its members' data_off are offsets
 * in the outer tar (stream 0), as a plain tar's are.  One image shows at the archive's root,
 * several in one folder each, named by tag.  A shared layer is decoded again for each image
 * that has it (the tree of each image is made and dropped in turn, so memory holds one), but
 * for the next image when it has the very same layers (another tag): its tree is reported
 * again.
 */
#include "containers/oci/oci_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "containers/oci/oci_dl.h"
#include "containers/tar/tar.h"

static bool oci_probe(struct src *in, const uint8_t *head, size_t len)
{
	struct oci_outer o;
	bool yes = false;

	if (len < TAR_BLOCK || !tar_header_valid(head))
		return false;
	if (oci_outer_peek(in, OCI_PROBE_MEMBERS, &o) == 0)
		yes = oci_outer_is_image(in, &o);
	oci_outer_free(&o);
	return yes;
}

/* The stream of each blob, declared once: blob offset -> stream id. */
struct declared {
	uint64_t *off, *id;
	size_t n;
};

static int stream_of(struct declared *dc, const struct cont_sink *sink, const struct oci_layer *ly,
		     uint64_t usize, uint64_t *id)
{
	struct cont_stream cs = {
	    .codec = ly->codec, .coff = ly->off, .clen = ly->len, .usize = usize};
	int err;

	for (size_t i = 0; i < dc->n; i++)
		if (dc->off[i] == ly->off) {
			*id = dc->id[i];
			return 0;
		}
	err = sink->stream(sink->opaque, &cs, id);
	if (err)
		return err;
	dc->off[dc->n] = ly->off;
	dc->id[dc->n++] = *id;
	return 0;
}

/* The tree of the last image made, kept for the next image if it has the same layers (the
 * tags of one image in a docker save). */
struct made {
	const struct oci_image *im;
	struct oci_tree *t;
	uint64_t *stream, *base;
};

static void made_free(struct made *m)
{
	oci_tree_free(m->t);
	free(m->stream);
	free(m->base);
	*m = (struct made){0};
}

static bool same_layers(const struct oci_image *a, const struct oci_image *b)
{
	if (a->nlayers != b->nlayers)
		return false;
	for (size_t i = 0; i < a->nlayers; i++)
		if (a->layers[i].off != b->layers[i].off || a->layers[i].len != b->layers[i].len)
			return false;
	return true;
}

/* Image im: its layers read, declared, merged (or the last image's tree, mk, when it has the
 * same layers), reported under prefix (NULL: the root). */
static int one_image(struct src *in, const struct oci_image *im, const char *prefix,
		     struct declared *dc, const struct cont_sink *sink, struct cont_stats *st,
		     struct made *mk)
{
	int err = 0;

	if (!mk->im || !same_layers(mk->im, im)) {
		made_free(mk);
		mk->stream = calloc(im->nlayers + 1, sizeof(*mk->stream));
		mk->base = calloc(im->nlayers + 1, sizeof(*mk->base));
		err = mk->stream && mk->base ? oci_tree_new(&mk->t) : -ENOMEM;
		for (size_t i = 0; !err && i < im->nlayers; i++) {
			const struct oci_layer *ly = &im->layers[i];
			uint64_t usize;
			bool damaged;
			err = oci_layer_read(in, ly, (unsigned)i, mk->t, sink->name, &usize,
					     &damaged);
			st->damaged |= damaged;
			if (!err && ly->codec)
				err = stream_of(dc, sink, ly, usize, &mk->stream[i]);
			else
				mk->base[i] = ly->off;
			if (sink->progress)
				sink->progress(sink->opaque, ly->off + ly->len);
		}
		if (err) {
			made_free(mk);
			return err;
		}
		mk->im = im;
	}
	return oci_tree_report(mk->t, prefix, mk->stream, mk->base, sink);
}

/* Counts the members reported (the stats' count). */
struct counting {
	const struct cont_sink *sink;
	uint64_t n;
};

static int count_member(void *opaque, const struct arc_member *m)
{
	struct counting *c = opaque;

	c->n++;
	return c->sink->member(c->sink->opaque, m);
}

static int count_stream(void *opaque, const struct cont_stream *s, uint64_t *id)
{
	struct counting *c = opaque;

	return c->sink->stream(c->sink->opaque, s, id);
}

static void count_progress(void *opaque, uint64_t off)
{
	struct counting *c = opaque;

	if (c->sink->progress)
		c->sink->progress(c->sink->opaque, off);
}

static int oci_parse(struct src *in, const struct cont_sink *sink, struct cont_stats *st)
{
	struct counting cnt = {.sink = sink};
	struct cont_sink s = {.stream = count_stream,
			      .member = count_member,
			      .progress = count_progress,
			      .opaque = &cnt,
			      .name = sink->name};
	struct cont_stats dummy;
	struct oci_outer o;
	struct oci_images im = {0};
	struct declared dc = {0};
	struct made mk = {0};
	size_t layers = 0;
	int err;

	st = st ? st : &dummy;
	*st = (struct cont_stats){0};
	if (oci_dl_load()) /* said once */
		return -ENOTSUP;
	err = oci_outer_list(in, OCI_MAX_OUTER, &o);
	if (err == -EINVAL)
		tfs_log(TFS_LOG_ERR, "%s: not a tar", sink->name);
	err = err ? err : oci_read_images(in, &o, sink->name, &im);
	for (size_t i = 0; !err && i < im.n; i++)
		layers += im.v[i].nlayers;
	if (!err) {
		dc.off = calloc(layers + 1, sizeof(*dc.off));
		dc.id = calloc(layers + 1, sizeof(*dc.id));
		if (!dc.off || !dc.id)
			err = -ENOMEM;
	}
	for (size_t i = 0; !err && i < im.n; i++)
		err = one_image(in, &im.v[i], im.n > 1 ? im.v[i].name : NULL, &dc, &s, st, &mk);
	made_free(&mk);
	st->members = cnt.n;
	free(dc.off);
	free(dc.id);
	oci_images_free(&im);
	oci_outer_free(&o);
	return err;
}

const struct container cont_oci = {
    .name = "oci",
    .probe = oci_probe,
    .parse = oci_parse,
};
