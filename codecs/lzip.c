/* lzip codec: being written (a placeholder that recognises nothing). */
#include "codec.h"

#include <errno.h>

static bool sk_probe(const uint8_t *head, size_t len)
{
	return false;
}

static int sk_scan_new(struct src *in, const struct codec_opts *opts, const struct codec_sink *sink,
		       struct codec_scan **out)
{
	*out = NULL;
	return -ENOTSUP;
}

static int sk_dec_new(struct src *in, const struct codec_ckpt *ck, const void *aux, size_t auxlen,
		      struct codec_dec **out)
{
	*out = NULL;
	return -ENOTSUP;
}

const struct codec codec_lzip = {
	.name = "lzip",
	.probe = sk_probe,
	.scan_new = sk_scan_new,
	.dec_new = sk_dec_new,
};
