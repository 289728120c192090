/* The 7z folder graph's error recorders and the name of a coder for messages (sevenzip_graph.h):
 * the first failure of a chain is kept in its msg, with the folder, the coder and where in the
 * archive, for the caller to log once.  A leaf of sevenzip_graph.c, apart so that file stays under
 * its size. */
#include "codecs/7z/sevenzip_graph.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *sz_coder_name(const struct sz_chain *ch, int coder)
{
	const char *n;

	if (coder < 0)
		return "packed stream";
	n = szc_method_name(ch->f.coders[coder].method);
	return n ? n : "unknown method";
}

/* Records the chain's first error, with where it happened, for the caller to log once. */
int sz_fail(struct sz_node *n, int err, const char *fmt, ...)
{
	struct sz_chain *ch = n->ch;
	va_list ap;
	int k;

	if (ch->err)
		return ch->err;
	k = snprintf(ch->msg, sizeof(ch->msg),
		     "7z: folder %" PRIu32 " (packed data at archive offset %" PRIu64 "), %s: ",
		     ch->f.index, ch->f.arc_off, sz_coder_name(ch, n->coder));
	if (k < 0 || (size_t)k >= sizeof(ch->msg))
		k = 0;
	va_start(ap, fmt);
	vsnprintf(ch->msg + k, sizeof(ch->msg) - (size_t)k, fmt, ap);
	va_end(ap);
	k = (int)strlen(ch->msg);
	if ((size_t)k < sizeof(ch->msg))
		snprintf(ch->msg + k, sizeof(ch->msg) - (size_t)k,
			 " (near compressed offset %" PRIu64 " of the archive)",
			 ch->f.arc_off + ch->last_pack);
	ch->err = err;
	return err;
}

int sz_refuse(struct sz_chain *ch, int err, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (ch->err)
		return ch->err;
	k = snprintf(ch->msg, sizeof(ch->msg), "7z: folder %" PRIu32 ": ", ch->f.index);
	if (k < 0 || (size_t)k >= sizeof(ch->msg))
		k = 0;
	va_start(ap, fmt);
	vsnprintf(ch->msg + k, sizeof(ch->msg) - (size_t)k, fmt, ap);
	va_end(ap);
	ch->err = err;
	return err;
}
