/* One layer of an image (see oci_int.h): its blob, a tar compressed or not, read into the
 * merged tree, and the SHA-256 of a blob.
 *
 * A compressed layer is decoded once here, start to end, through the codec's scan as a
 * forward-only stream (seek/stream.h, with no checkpoint kept: the builder decodes the
 * stream again for those), while the tar parser (containers/tar/tar.h) reads its headers;
 * that gives the members' offsets in the decoded bytes and the decoded size the stream is
 * declared with.  A plain layer is parsed in place, headers only, through a window of the
 * outer tar.  A layer that decodes wrong part way keeps what came before the damage: the
 * builder, decoding it again, marks what lies past it unreadable.
 */
#include "containers/oci/oci_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "codecs/codec.h"
#include "common/log.h"
#include "containers/tar/tar.h"
#include "crypto/cipher.h"
#include "seek/stream.h"

#define HASH_STEP ((size_t)1 << 20)

int oci_sha256(struct src *in, uint64_t off, uint64_t len, uint8_t digest[32])
{
	struct cr_md *md = NULL;
	uint8_t *buf = malloc(HASH_STEP);
	int err = buf ? cr_md_new(true, &md) : -ENOMEM;

	for (uint64_t pos = 0; !err && pos < len;) {
		size_t n = len - pos < HASH_STEP ? (size_t)(len - pos) : HASH_STEP;
		err = src_pread_full(in, buf, n, off + pos);
		err = err ? err : cr_md_update(md, buf, n);
		pos += n;
	}
	err = err ? err : cr_md_final(md, digest);
	cr_md_free(md);
	free(buf);
	return err;
}

struct lctx {
	struct oci_tree *t;
	unsigned layer;
};

static int on_entry(void *opaque, const struct arc_member *m)
{
	struct lctx *c = opaque;

	return oci_tree_add(c->t, c->layer, m);
}

static int drop_ckpt(void *opaque, uint64_t idx, const struct codec_ckpt *ck, const void *aux,
		     size_t auxlen, const uint32_t *crcs, uint64_t ncrcs)
{
	return 0;
}

int oci_layer_read(struct src *in, const struct oci_layer *ly, unsigned layer, struct oci_tree *t,
		   const char *name, uint64_t *usize, bool *damaged)
{
	struct lctx c = {.t = t, .layer = layer};
	struct tar_callbacks cb = {.entry = on_entry, .opaque = &c};
	struct codec_opts co = {.spacing = UINT64_MAX, .threads = 1};
	struct cstream_sink drop = {.checkpoint = drop_ckpt};
	const struct codec *codec = ly->codec ? codec_by_name(ly->codec) : NULL;
	struct cstream *cs = NULL;
	struct tar_stats ts = {0};
	struct src *win = src_window(in, ly->off, ly->len);
	int err = win ? 0 : -ENOMEM;

	*usize = 0;
	*damaged = false;
	if (!err && ly->len == 0)
		goto out; /* an empty blob: an empty layer */
	if (!err && ly->codec && !codec) {
		tfs_log(TFS_LOG_ERR, "%s: a layer is compressed with %s, not in this build", name,
			ly->codec);
		err = -EINVAL;
	}
	if (!err && codec)
		err = cstream_new(codec, win, &co, &drop, &cs);
	if (err)
		goto out;
	err = tar_parse(cs ? cstream_src(cs) : win, &cb, &ts);
	if (err == -EINVAL) {
		tfs_log(TFS_LOG_ERR,
			"%s: a layer (the %" PRIu64 " bytes at %" PRIu64 ") is not a "
			"tar",
			name, ly->len, ly->off);
		goto out;
	}
	if (!cs) {
		*usize = ly->len;
	} else {
		if (!err)
			err = cstream_finish(cs, usize);
		if (err == -EIO) { /* damaged: what decoded before is kept, the rest marked */
			*usize = cstream_pos(cs);
			*damaged = true;
			tfs_log(TFS_LOG_WARNING,
				"%s: a layer is damaged after %" PRIu64 " decoded "
				"bytes: the files past it cannot be read",
				name, *usize);
			err = 0;
		}
	}
	*damaged |= ts.truncated || ts.bad_headers;
	if (!err && ts.truncated)
		tfs_log(TFS_LOG_WARNING,
			"%s: a layer's tar is cut short: its last files are "
			"missing",
			name);
out:
	cstream_free(cs);
	src_free(win);
	return err;
}
