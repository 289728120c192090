/* What an index records of the archive it was built for, so that a later mount knows whether
 * it still fits: the archive's fingerprint, and the options that shape an index.  Used by the
 * builder when it writes them and by validation when it compares them. */
#ifndef TARSEEK_STAMP_H
#define TARSEEK_STAMP_H

#include <stddef.h>

#include "common/source.h"
#include "index/build.h"

/* The archive's fingerprint as text ("size:crc-head:crc-tail", CRC32s of its first and last
 * MiB) into out.  0 or -errno. */
int idx_fingerprint(struct src *file, char *out, size_t size);

/* A hint: the source starts reading what idx_fingerprint will read of it (src_advise), so that
 * both spans are under way at once and while other work goes on. */
void idx_fingerprint_ahead(struct src *file);

/* The options string stored in (and compared with) an index: only the options that shape the
 * index of this kind of archive (codec_name NULL for a plain tar).  Writes into buf, which
 * must hold IDX_OPTIONS_MAX bytes (the longest string, with every option at its widest). */
#define IDX_OPTIONS_MAX 160
void idx_options_string(const char *codec_name, const struct idx_build_opts *o, char *buf,
			size_t size);

#endif
