/* Building the 7z folder decoding graph (sevenzip_graph.h): a node per coder and packed
 * stream, each with its decoder started (liblzma, zlib or ISA-L, inflate64, ppmd7, libbz2,
 * bcj2, 7zAES) and its input buffers, from the folder's coders and a restart point; the
 * graph's memory is counted in ch->mem.  Apart from sevenzip_graph.c (the nodes' reads) so
 * that each stays under its size; neither calls the other. */
#include "codecs/7z/sevenzip_graph.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/byteio.h"
#include "common/log.h"
#include "codecs/liberr.h"
#include "crypto/cipher.h"

static lzma_vli sz_bcj_filter(uint64_t m)
{
	static const struct { uint64_t m; lzma_vli id; } t[] = {
		{SZM_X86, LZMA_FILTER_X86}, {SZM_PPC, LZMA_FILTER_POWERPC},
		{SZM_IA64, LZMA_FILTER_IA64}, {SZM_ARM, LZMA_FILTER_ARM},
		{SZM_ARMT, LZMA_FILTER_ARMTHUMB}, {SZM_SPARC, LZMA_FILTER_SPARC}};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].m == m)
			return t[i].id;
	return LZMA_FILTER_ARM64;
}

static struct sz_node *sz_node_new(struct sz_chain *ch, enum sz_kind kind, int coder,
				   uint64_t size)
{
	struct sz_node *n = &ch->nodes[ch->nnodes++];

	memset(n, 0, sizeof(*n));
	n->kind = kind;
	n->coder = coder;
	n->ch = ch;
	n->size = size;
	return n;
}

static int sz_ibuf_alloc(struct sz_chain *ch, struct sz_ibuf *ib, size_t cap)
{
	ib->buf = malloc(cap);
	if (!ib->buf)
		return -ENOMEM;
	ib->cap = cap;
	ch->mem += cap;
	return 0;
}

static int sz_build_input(struct sz_chain *ch, unsigned in, const struct sz_start *st,
			  unsigned depth, struct sz_node **out);

/* The effective dictionary of an LZMA/LZMA2 coder: as stated, but no larger than its output. */
static int sz_dict(struct sz_chain *ch, unsigned c, uint64_t stated, uint32_t *dict)
{
	uint64_t d = stated, usize = ch->f.unpack_size[c];

	if (d > usize)
		d = usize;
	if (d < LZMA_DICT_SIZE_MIN)
		d = LZMA_DICT_SIZE_MIN;
	if (d > SZ_DICT_MAX)
		return sz_refuse(ch, -ENOMEM,
				 "%s dictionary of %" PRIu64 " MiB is larger than the %" PRIu64
				 " MiB allowed; refusing to allocate it",
				 sz_coder_name(ch, (int)c), d >> 20, SZ_DICT_MAX >> 20);
	*dict = (uint32_t)d;
	return 0;
}

/* A liblzma chain: BCJ filters cs[0..n-2] stacked on LZMA/LZMA2 coder cs[n-1]; or, with wrap,
 * BCJ filters cs[0..n-1] over whatever feeds cs[n-1] (sz_xz_fill). */
static int sz_build_xz(struct sz_chain *ch, const unsigned *cs, unsigned ncs, bool wrap,
		       const struct sz_start *st, unsigned depth, struct sz_node **out)
{
	const struct szc_folder *f = &ch->f;
	unsigned lc = cs[ncs - 1];
	const struct szc_coder *k = &f->coders[lc];
	static const struct szc_coder wrap_coder = {.method = SZM_LZMA2, .nin = 1, .nprops = 1};
	uint64_t size = f->unpack_size[cs[0]] - (st ? st->uoff : 0);
	lzma_filter filters[LZMA_FILTERS_MAX + 1];
	struct sz_node *n;
	uint64_t stated;
	lzma_ret ret;
	int err;

	for (unsigned i = 1; i < ncs; i++)
		if (f->unpack_size[cs[i]] != f->unpack_size[cs[0]])
			return sz_refuse(ch, -EIO, "the sizes of a %s filter and its input differ",
					 sz_coder_name(ch, (int)cs[0]));
	n = sz_node_new(ch, SZN_XZ, (int)cs[0], size);
	n->u.xz.strm = (lzma_stream)LZMA_STREAM_INIT;
	n->u.xz.wrap = wrap;
	if (wrap) { /* the filters are cs[0..ncs); an LZMA2 of 4 KiB copies the chunks */
		if (ncs + 1 > LZMA_FILTERS_MAX)
			return sz_refuse(ch, -ENOTSUP, "too many filters in a row");
		k = &wrap_coder;
		ncs++;
	}
	if (lzma_lzma_preset(&n->u.xz.lz, 0))
		return sz_refuse(ch, -EINVAL, "liblzma has no preset 0");
	if (k->method == SZM_LZMA2) {
		if (k->nprops != 1 || k->props[0] > 40)
			return sz_refuse(ch, -EIO, "bad LZMA2 properties");
		stated = k->props[0] == 40 ? UINT32_MAX
					   : (uint64_t)(2 | (k->props[0] & 1)) << (k->props[0] / 2 + 11);
	} else {
		unsigned d;

		if (k->nprops != 5 || k->props[0] >= 9 * 5 * 5)
			return sz_refuse(ch, -EIO, "bad LZMA properties");
		d = k->props[0];
		n->u.xz.lz.lc = d % 9;
		d /= 9;
		n->u.xz.lz.lp = d % 5;
		n->u.xz.lz.pb = d / 5;
		if (n->u.xz.lz.lc + n->u.xz.lz.lp > LZMA_LCLP_MAX)
			return sz_refuse(ch, -ENOTSUP, "LZMA with lc + lp > 4 is not supported");
		stated = le32(k->props + 1);
		n->u.xz.lz.ext_flags = LZMA_LZMA1EXT_ALLOW_EOPM;
		n->u.xz.lz.ext_size_low = (uint32_t)f->unpack_size[lc];
		n->u.xz.lz.ext_size_high = (uint32_t)(f->unpack_size[lc] >> 32);
	}
	if (wrap)
		n->u.xz.lz.dict_size = LZMA_DICT_SIZE_MIN;
	else if ((err = sz_dict(ch, lc, stated, &n->u.xz.lz.dict_size)))
		return err;
	for (unsigned i = 0; i + 1 < ncs; i++) {
		const struct szc_coder *b = &f->coders[cs[i]];
		uint32_t start = 0;

		if (b->nprops == 4)
			start = le32(b->props);
		else if (b->nprops != 0)
			return sz_refuse(ch, -EIO, "bad %s filter properties",
					 sz_coder_name(ch, (int)cs[i]));
		if (st)
			start += (uint32_t)st->uoff;
		n->u.xz.bcj[i].start_offset = start;
		filters[i].id = sz_bcj_filter(b->method);
		filters[i].options = &n->u.xz.bcj[i];
	}
	filters[ncs - 1].id = k->method == SZM_LZMA2 ? LZMA_FILTER_LZMA2 : LZMA_FILTER_LZMA1EXT;
	filters[ncs - 1].options = &n->u.xz.lz;
	filters[ncs].id = LZMA_VLI_UNKNOWN;
	n->u.xz.mem = lzma_raw_decoder_memusage(filters);
	if (n->u.xz.mem == UINT64_MAX)
		return sz_refuse(ch, -ENOTSUP, "liblzma cannot decode this filter chain");
	ret = lzma_raw_decoder(&n->u.xz.strm, filters);
	if (ret != LZMA_OK)
		return sz_refuse(ch, ret == LZMA_OPTIONS_ERROR ? -ENOTSUP : liberr_lzma(ret),
				 "cannot start the %s decoder", sz_coder_name(ch, (int)lc));
	ch->mem += (size_t)n->u.xz.mem;
	n->nin = 1;
	err = sz_ibuf_alloc(ch, &n->ib[0], wrap ? 3 + ((size_t)1 << 16) : SZ_IBUF);
	if (!err)
		err = sz_build_input(ch, szc_first_in(f, lc), st, depth + 1, &n->child[0]);
	*out = n;
	return err;
}

/* An AES coder: over a packed stream of its output's size rounded up to whole blocks, with
 * the key of the chain's password.  A restart (st) at a byte of its output starts its packed
 * stream at that byte's block, with the ciphertext block before it as the IV. */
static int sz_build_aes(struct sz_chain *ch, unsigned c, const struct sz_start *st,
			unsigned depth, struct sz_node **out)
{
	const struct szc_folder *f = &ch->f;
	const struct szc_coder *k = &f->coders[c];
	int src = szc_source_of(f, szc_first_in(f, c)), err;
	uint64_t size = f->unpack_size[c], psize, off = 0;
	struct sz_start bst = {0};
	struct sz_aes_props ap;
	struct sz_node *n;

	if (src >= 0 || -1 - src >= (int)f->npacked)
		return sz_refuse(ch, -ENOTSUP, "AES over another coder (7-Zip puts it over packed "
				 "streams only)");
	err = sz_aes_props(k->props, k->nprops, &ap);
	if (err == -ENOTSUP)
		return sz_refuse(ch, err, "AES with 2^%u rounds of key derivation (7-Zip reads "
				 "at most 2^%u)", ap.cycles, SZ_AES_CYCLES_MAX);
	if (err)
		return sz_refuse(ch, err, "bad AES properties");
	psize = f->pack_size[-1 - src];
	for (int p = 0; p < -1 - src; p++)
		off += f->pack_size[p];
	if (psize % SZ_AES_BLOCK || psize < size || psize - size >= SZ_AES_BLOCK)
		return sz_refuse(ch, -EIO, "AES over %" PRIu64 " packed bytes for %" PRIu64
				 " bytes out", psize, size);
	if (st && st->coff > size)
		return sz_refuse(ch, -EINVAL, "checkpoint past the end of the decrypted data");
	if (ch->pw < 0)
		return sz_refuse(ch, -EACCES, "encrypted (AES-256), and no password opens it");
	n = sz_node_new(ch, SZN_AES, (int)c, size - (st ? st->coff : 0));
	*out = n;
	memcpy(n->u.aes.dec.iv, ap.iv, SZ_AES_BLOCK);
	if (st) { /* the packed stream from the block holding st->coff */
		bst.coff = st->coff / SZ_AES_BLOCK * SZ_AES_BLOCK;
		n->u.aes.skip = (unsigned)(st->coff - bst.coff);
		if (bst.coff && src_pread(ch->in, n->u.aes.dec.iv, SZ_AES_BLOCK,
					  off + bst.coff - SZ_AES_BLOCK) != SZ_AES_BLOCK)
			return sz_refuse(ch, -EIO, "cannot read the AES block before a checkpoint");
	}
	err = sz_aes_key(&ap, (size_t)ch->pw, n->u.aes.dec.key);
	if (err)
		return sz_refuse(ch, err, "cannot derive the AES key");
	n->nin = 1;
	return sz_build_input(ch, szc_first_in(f, c), st ? &bst : NULL, depth + 1, &n->child[0]);
}

static int sz_build_coder(struct sz_chain *ch, unsigned c, const struct sz_start *st,
			  unsigned depth, struct sz_node **out)
{
	const struct szc_folder *f = &ch->f;
	const struct szc_coder *k = &f->coders[c];
	uint64_t start = st ? st->uoff : 0;
	struct sz_node *n = NULL;
	int err;

	*out = NULL;
	if (depth > SZ_MAX_NODES || ch->nnodes >= SZ_MAX_NODES)
		return sz_refuse(ch, -EINVAL, "coder graph too deep");
	if (!szc_method_supported(k->method)) {
		const char *name = szc_method_name(k->method);
		if (name)
			return sz_refuse(ch, -ENOTSUP, "method %s is not supported", name);
		return sz_refuse(ch, -ENOTSUP, "unknown method %" PRIx64, k->method);
	}
	if (k->nin != (k->method == SZM_BCJ2 ? 4 : 1))
		return sz_refuse(ch, -EIO, "%s coder with %u inputs", sz_coder_name(ch, (int)c),
				 k->nin);
	if (f->unpack_size[c] < start && k->method != SZM_AES) /* AES: a restart is at st->coff */
		return sz_refuse(ch, -EINVAL, "checkpoint past the end of the folder");
	if (szc_is_bcj(k->method) || k->method == SZM_LZMA || k->method == SZM_LZMA2) {
		unsigned cs[LZMA_FILTERS_MAX], ncs = 0, cur = c;

		for (;;) {
			const struct szc_coder *x = &f->coders[cur];
			int src;

			if (ncs == LZMA_FILTERS_MAX)
				return sz_refuse(ch, -ENOTSUP, "too many filters in a row");
			cs[ncs++] = cur;
			if (x->method == SZM_LZMA || x->method == SZM_LZMA2)
				break;
			if (x->nin != 1 || x->nprops > 4)
				return sz_refuse(ch, -EIO, "bad %s filter", sz_coder_name(ch, (int)cur));
			src = szc_source_of(f, szc_first_in(f, cur));
			if (src < 0 || !(szc_is_bcj(f->coders[src].method) ||
					 f->coders[src].method == SZM_LZMA ||
					 f->coders[src].method == SZM_LZMA2))
				return sz_build_xz(ch, cs, ncs, true, st, depth, out);
			cur = (unsigned)src;
		}
		return sz_build_xz(ch, cs, ncs, false, st, depth, out);
	}
	switch (k->method) {
	case SZM_COPY:
		n = sz_node_new(ch, SZN_COPY, (int)c, f->unpack_size[c] - start);
		break;
	case SZM_DELTA:
		if (k->nprops != 1)
			return sz_refuse(ch, -EIO, "bad Delta properties");
		n = sz_node_new(ch, SZN_DELTA, (int)c, f->unpack_size[c] - start);
		n->u.delta.dist = k->props[0] + 1u;
		n->u.delta.pos = start;
		if (st && st->hist)
			for (unsigned i = 0; i < n->u.delta.dist; i++)
				n->u.delta.hist[(start - n->u.delta.dist + i) & 255] = st->hist[i];
		break;
	case SZM_DEFLATE: {
		n = sz_node_new(ch, SZN_DEFLATE, (int)c, f->unpack_size[c]);
		n->u.zl.inf = infl_new(infl_default(), false);
		if (!n->u.zl.inf)
			return sz_refuse(ch, -ENOMEM, "cannot start inflate");
		ch->mem += infl_memory(n->u.zl.inf);
		break;
	}
	case SZM_DEFLATE64:
		n = sz_node_new(ch, SZN_DEFLATE64, (int)c, f->unpack_size[c]);
		n->u.d64 = inf64_new();
		if (!n->u.d64)
			return sz_refuse(ch, -ENOMEM, "cannot start Deflate64");
		ch->mem += inf64_memory();
		break;
	case SZM_PPMD: {
		const char *why = NULL;
		unsigned order;
		uint32_t mem;

		if (ppmd7_props(k->props, k->nprops, &order, &mem, &why))
			return sz_refuse(ch, -EIO, "%s", why);
		n = sz_node_new(ch, SZN_PPMD, (int)c, f->unpack_size[c]);
		err = ppmd7_new(order, mem, &n->u.ppmd);
		if (err)
			return sz_refuse(ch, err, "cannot start PPMd (order %u, %" PRIu32 " bytes)",
					 order, mem);
		ch->mem += ppmd7_memory(mem);
		break;
	}
	case SZM_BZIP2: {
		int ret;

		n = sz_node_new(ch, SZN_BZIP2, (int)c, f->unpack_size[c]);
		ret = BZ2_bzDecompressInit(&n->u.bz.bz, 0, 0);
		if (ret != BZ_OK)
			return sz_refuse(ch, liberr_bz2(ret), "cannot start the BZip2 decoder");
		n->u.bz.init = true;
		ch->mem += 3700 << 10; /* 900k blocks, not the small mode */
		break;
	}
	case SZM_BCJ2:
		if (k->nprops != 0)
			return sz_refuse(ch, -EIO, "bad BCJ2 properties");
		n = sz_node_new(ch, SZN_BCJ2, (int)c, f->unpack_size[c]);
		bcj2_init(&n->u.bcj2, f->unpack_size[c]);
		break;
	case SZM_RISCV: /* never restarted inside: a checkpoint-0 folder (sevenzip_folder.c) */
		if (k->nprops != 0 && k->nprops != 4)
			return sz_refuse(ch, -EIO, "bad RISCV filter properties");
		n = sz_node_new(ch, SZN_RISCV, (int)c, f->unpack_size[c]);
		n->u.rv.at = k->nprops == 4 ? le32(k->props) : 0;
		break;
	case SZM_AES: /* builds its input itself (a restart moves it to a block) */
		return sz_build_aes(ch, c, st, depth, out);
	default:
		return sz_refuse(ch, -ENOTSUP, "method %s is not supported",
				 sz_coder_name(ch, (int)c));
	}
	*out = n;
	n->nin = k->nin;
	for (unsigned i = 0; i < n->nin; i++) {
		if (n->kind != SZN_COPY && n->kind != SZN_DELTA) {
			err = sz_ibuf_alloc(ch, &n->ib[i], n->kind == SZN_BCJ2 && i > 0 ? SZ_IBUF_SMALL
											: SZ_IBUF);
			if (err)
				return err;
		}
		err = sz_build_input(ch, szc_first_in(f, c) + i,
				     n->kind == SZN_COPY || n->kind == SZN_DELTA ? st : NULL,
				     depth + 1, &n->child[i]);
		if (err)
			return err;
	}
	return 0;
}

static int sz_build_input(struct sz_chain *ch, unsigned in, const struct sz_start *st,
			  unsigned depth, struct sz_node **out)
{
	const struct szc_folder *f = &ch->f;
	int src = szc_source_of(f, in);
	uint64_t off = 0;
	unsigned p;
	struct sz_node *n;

	if (src >= 0)
		return sz_build_coder(ch, (unsigned)src, st, depth, out);
	p = (unsigned)(-1 - src);
	if (p >= f->npacked || ch->nnodes >= SZ_MAX_NODES)
		return sz_refuse(ch, -EINVAL, "bad packed stream");
	for (unsigned i = 0; i < p; i++)
		off += f->pack_size[i];
	n = sz_node_new(ch, SZN_PACK, -1, f->pack_size[p]);
	n->u.pack.off = off;
	if (st) { /* a restart reads from its chunk on (one packed stream, see sz_restart_kind) */
		if (st->coff > f->pack_size[p])
			return sz_refuse(ch, -EINVAL, "checkpoint past the end of the packed data");
		n->u.pack.off = off + st->coff;
		n->size = f->pack_size[p] - st->coff;
	}
	*out = n;
	return 0;
}

void sz_chain_free(struct sz_chain *ch)
{
	if (!ch)
		return;
	for (unsigned i = 0; i < ch->nnodes; i++) {
		struct sz_node *n = &ch->nodes[i];

		for (unsigned k = 0; k < 4; k++)
			free(n->ib[k].buf);
		if (n->kind == SZN_XZ)
			lzma_end(&n->u.xz.strm);
		else if (n->kind == SZN_DEFLATE)
			infl_free(n->u.zl.inf);
		else if (n->kind == SZN_DEFLATE64)
			inf64_free(n->u.d64);
		else if (n->kind == SZN_PPMD)
			ppmd7_free(n->u.ppmd);
		else if (n->kind == SZN_BZIP2 && n->u.bz.init)
			BZ2_bzDecompressEnd(&n->u.bz.bz);
		else if (n->kind == SZN_AES)
			cr_wipe(&n->u.aes, sizeof(n->u.aes));
	}
	free(ch);
}

/* Builds the graph of folder f (see sevenzip_graph.h). */
int sz_chain_new(struct src *in, const struct szc_folder *f, const struct sz_start *st, int pw,
		 struct sz_chain **out)
{
	struct sz_chain *ch = calloc(1, sizeof(*ch));
	int err;

	*out = ch;
	if (!ch)
		return -ENOMEM;
	ch->in = in;
	ch->pw = pw;
	ch->f = *f;
	ch->f.subs = NULL;
	ch->f.nsubs = 0;
	ch->mem = sizeof(*ch);
	err = sz_build_coder(ch, f->main, st, 0, &ch->root);
	if (!err && ch->root && ch->root->size != f->unpack_size[f->main] - (st ? st->uoff : 0))
		err = sz_refuse(ch, -EINVAL, "internal: root size");
	return err;
}
