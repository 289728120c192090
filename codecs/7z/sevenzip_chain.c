/* The 7z folder blob (sevenzip_chain.h): written by the container, read by the codec.  Both
 * sides go through szc_check, so a blob the codec accepts describes a tree of coders whose
 * every input is fed exactly once, whatever the archive said.  At the end, the questions the
 * decoder asks of a folder's graph (what feeds an input, which coders are BCJ filters). */
#include "codecs/7z/sevenzip_chain.h"

#include <errno.h>
#include <string.h>

#include "common/byteio.h"

static const struct {
	uint64_t id;
	const char *name;
	bool supported;
} szc_methods[] = {
	{SZM_COPY, "Copy", true},	    {SZM_DELTA, "Delta", true},
	{SZM_X86, "BCJ", true},		    {SZM_PPC, "PPC", true},
	{SZM_IA64, "IA64", true},	    {SZM_ARM, "ARM", true},
	{SZM_ARMT, "ARMT", true},	    {SZM_SPARC, "SPARC", true},
	{SZM_ARM64, "ARM64", true},	    {SZM_RISCV, "RISCV", true},
	{SZM_BCJ2, "BCJ2", true},	    {SZM_LZMA, "LZMA", true},
	{SZM_LZMA2, "LZMA2", true},	    {SZM_PPMD, "PPMd", true},
	{SZM_DEFLATE, "Deflate", true},	    {SZM_DEFLATE64, "Deflate64", true},
	{SZM_BZIP2, "BZip2", true},	    {SZM_AES, "AES-256", true},
	{0x04F71101u, "ZSTD", false},	    {0x04F71102u, "Brotli", false},
	{0x04F71104u, "LZ4", false},	    {0x04F71105u, "LZ5", false},
	{0x04F71106u, "Lizard", false},	    {0x020302u, "Swap2", false},
	{0x020304u, "Swap4", false},	    {0x040105u, "Shrink", false},
	{0x040106u, "Implode", false},	    {0x04010Cu, "LZMA (zip)", false},
	{0x04010Eu, "ZSTD", false},	    {0x030402u, "PPMd (zip)", false},
};

static int szc_find(uint64_t method)
{
	for (size_t i = 0; i < sizeof(szc_methods) / sizeof(szc_methods[0]); i++)
		if (szc_methods[i].id == method)
			return (int)i;
	return -1;
}

const char *szc_method_name(uint64_t method)
{
	int i = szc_find(method);

	return i < 0 ? NULL : szc_methods[i].name;
}

bool szc_method_supported(uint64_t method)
{
	int i = szc_find(method);

	return i >= 0 && szc_methods[i].supported;
}

int szc_check(const struct szc_folder *f, const char **why)
{
	uint8_t fed[SZC_MAX_IN] = {0}, taken[SZC_MAX_CODERS] = {0}, first[SZC_MAX_CODERS];
	uint8_t stack[SZC_MAX_CODERS], reached = 0, seen[SZC_MAX_CODERS] = {0};
	unsigned nin = 0, nmain = 0, sp = 0;

	if (f->ncoders < 1 || f->ncoders > SZC_MAX_CODERS) {
		*why = "number of coders out of range";
		return -EINVAL;
	}
	for (unsigned c = 0; c < f->ncoders; c++) {
		if (f->coders[c].nin < 1 || nin + f->coders[c].nin > SZC_MAX_IN) {
			*why = "number of coder inputs out of range";
			return -EINVAL;
		}
		if (f->coders[c].nprops > SZC_PROPS_MAX) {
			*why = "coder properties too long";
			return -EINVAL;
		}
		first[c] = (uint8_t)nin;
		nin += f->coders[c].nin;
	}
	if (f->nbind != f->ncoders - 1 || f->npacked < 1 || f->npacked > SZC_MAX_PACKED ||
	    f->npacked != nin - f->nbind) {
		*why = "numbers of bind pairs and packed streams do not match the coders";
		return -EINVAL;
	}
	for (unsigned b = 0; b < f->nbind; b++) {
		if (f->bind[b].in >= nin || f->bind[b].out >= f->ncoders || fed[f->bind[b].in] ||
		    taken[f->bind[b].out]) {
			*why = "bad bind pair";
			return -EINVAL;
		}
		fed[f->bind[b].in] = 1;
		taken[f->bind[b].out] = 1;
	}
	for (unsigned p = 0; p < f->npacked; p++) {
		if (f->packed[p] >= nin || fed[f->packed[p]]) {
			*why = "bad packed stream index";
			return -EINVAL;
		}
		fed[f->packed[p]] = 2;
	}
	for (unsigned c = 0; c < f->ncoders; c++)
		if (!taken[c])
			nmain++;
	if (nmain != 1 || f->main >= f->ncoders || taken[f->main]) {
		*why = "no single final coder";
		return -EINVAL;
	}
	/* every coder reached once from main: no cycle */
	stack[sp++] = f->main;
	while (sp) {
		unsigned c = stack[--sp];

		if (seen[c]++) {
			*why = "the coders form a cycle";
			return -EINVAL;
		}
		reached++;
		for (unsigned i = first[c]; i < first[c] + f->coders[c].nin; i++)
			for (unsigned b = 0; b < f->nbind; b++)
				if (f->bind[b].in == i) {
					if (sp == SZC_MAX_CODERS) {
						*why = "the coders form a cycle";
						return -EINVAL;
					}
					stack[sp++] = f->bind[b].out;
				}
	}
	if (reached != f->ncoders) {
		*why = "the coders form a cycle";
		return -EINVAL;
	}
	return 0;
}

static size_t szc_coder_part_len(const struct szc_folder *f)
{
	size_t n = SZC_HDR;

	for (unsigned c = 0; c < f->ncoders; c++)
		n += 10 + f->coders[c].nprops;
	return n + 2 * (size_t)f->nbind + 9 * (size_t)f->npacked + 8 * (size_t)f->ncoders;
}

size_t szc_blob_len(const struct szc_folder *f, uint32_t nsubs)
{
	return szc_coder_part_len(f) + (nsubs ? 4 + (size_t)SZC_SUB * nsubs : 0);
}

size_t szc_encode(const struct szc_folder *f, uint32_t nsubs, uint8_t *out)
{
	size_t len = szc_coder_part_len(f), o = SZC_HDR;

	memset(out, 0, SZC_HDR);
	memcpy(out, "7zc1", 4);
	put_le32(out + 4, (uint32_t)len);
	put_le64(out + 8, f->arc_off);
	put_le32(out + 16, f->index);
	out[20] = f->ncoders;
	out[21] = f->nbind;
	out[22] = f->npacked;
	out[23] = f->main;
	out[24] = (uint8_t)((f->has_crc ? SZC_F_CRC : 0) | (nsubs ? SZC_F_SUBS : 0));
	put_le32(out + 28, f->has_crc ? f->crc : 0);
	for (unsigned c = 0; c < f->ncoders; c++) {
		put_le64(out + o, f->coders[c].method);
		out[o + 8] = f->coders[c].nin;
		out[o + 9] = f->coders[c].nprops;
		memcpy(out + o + 10, f->coders[c].props, f->coders[c].nprops);
		o += 10 + f->coders[c].nprops;
	}
	for (unsigned b = 0; b < f->nbind; b++) {
		out[o++] = f->bind[b].in;
		out[o++] = f->bind[b].out;
	}
	for (unsigned p = 0; p < f->npacked; p++) {
		out[o] = f->packed[p];
		put_le64(out + o + 1, f->pack_size[p]);
		o += 9;
	}
	for (unsigned c = 0; c < f->ncoders; c++) {
		put_le64(out + o, f->unpack_size[c]);
		o += 8;
	}
	if (nsubs) {
		put_le32(out + o, nsubs);
		o += 4;
	}
	return o;
}

void szc_put_sub(uint8_t *table, uint32_t i, uint64_t size, bool has_crc, uint32_t crc)
{
	uint8_t *p = table + 4 + (size_t)SZC_SUB * i;

	put_le64(p, size);
	put_le32(p + 8, has_crc ? crc : 0);
	p[12] = has_crc;
}

int szc_parse(const void *blob, size_t len, struct szc_folder *f, size_t *coder_len,
	      const char **why)
{
	const uint8_t *b = blob;
	size_t o = SZC_HDR, clen;

	memset(f, 0, sizeof(*f));
	*coder_len = 0;
	*why = "too short";
	if (!b || len < SZC_HDR)
		return -EINVAL;
	if (memcmp(b, "7zc1", 4) != 0) {
		*why = "bad magic";
		return -EINVAL;
	}
	clen = le32(b + 4);
	if (clen > len || clen < SZC_HDR) {
		*why = "bad length";
		return -EINVAL;
	}
	f->arc_off = le64(b + 8);
	f->index = le32(b + 16);
	f->ncoders = b[20];
	f->nbind = b[21];
	f->npacked = b[22];
	f->main = b[23];
	f->has_crc = b[24] & SZC_F_CRC;
	f->crc = le32(b + 28);
	if (f->ncoders < 1 || f->ncoders > SZC_MAX_CODERS || f->nbind > SZC_MAX_CODERS ||
	    f->npacked > SZC_MAX_PACKED) {
		*why = "counts out of range";
		return -EINVAL;
	}
	*why = "truncated coder part";
	for (unsigned c = 0; c < f->ncoders; c++) {
		struct szc_coder *k = &f->coders[c];

		if (clen - o < 10)
			return -EINVAL;
		k->method = le64(b + o);
		k->nin = b[o + 8];
		k->nprops = b[o + 9];
		if (k->nprops > SZC_PROPS_MAX || clen - o - 10 < k->nprops)
			return -EINVAL;
		memcpy(k->props, b + o + 10, k->nprops);
		o += 10 + k->nprops;
	}
	if (clen - o < 2 * (size_t)f->nbind + 9 * (size_t)f->npacked + 8 * (size_t)f->ncoders)
		return -EINVAL;
	for (unsigned i = 0; i < f->nbind; i++) {
		f->bind[i].in = b[o++];
		f->bind[i].out = b[o++];
	}
	for (unsigned p = 0; p < f->npacked; p++) {
		f->packed[p] = b[o];
		f->pack_size[p] = le64(b + o + 1);
		o += 9;
	}
	for (unsigned c = 0; c < f->ncoders; c++) {
		f->unpack_size[c] = le64(b + o);
		o += 8;
	}
	if (o != clen) {
		*why = "bad length";
		return -EINVAL;
	}
	if (szc_check(f, why))
		return -EINVAL;
	/* the packed streams must fit one window */
	uint64_t total = 0;
	for (unsigned p = 0; p < f->npacked; p++) {
		if (f->pack_size[p] > UINT64_MAX / 2 - total) {
			*why = "packed sizes overflow";
			return -EINVAL;
		}
		total += f->pack_size[p];
	}
	if (b[24] & SZC_F_SUBS) {
		uint32_t n;

		if (len - clen < 4) {
			*why = "truncated substream table";
			return -EINVAL;
		}
		n = le32(b + clen);
		if ((len - clen - 4) / SZC_SUB < n) {
			*why = "truncated substream table";
			return -EINVAL;
		}
		f->subs = b + clen + 4;
		f->nsubs = n;
	}
	*coder_len = clen;
	return 0;
}

void szc_get_sub(const struct szc_folder *f, uint32_t i, uint64_t *size, bool *has_crc,
		 uint32_t *crc)
{
	const uint8_t *p = f->subs + (size_t)SZC_SUB * i;

	*size = le64(p);
	*crc = le32(p + 8);
	*has_crc = p[12] != 0;
}

bool szc_is_bcj(uint64_t m)
{
	return m == SZM_X86 || m == SZM_PPC || m == SZM_IA64 || m == SZM_ARM || m == SZM_ARMT ||
	       m == SZM_SPARC || m == SZM_ARM64;
}

unsigned szc_bcj_align(uint64_t m)
{
	switch (m) {
	case SZM_X86:
		return 1;
	case SZM_ARMT:
		return 2;
	case SZM_IA64:
		return 16;
	default:
		return 4;
	}
}

/* Input i (folder-wide numbering) of the folder: the coder bound to it, or -1 - packed index. */
int szc_source_of(const struct szc_folder *f, unsigned in)
{
	for (unsigned b = 0; b < f->nbind; b++)
		if (f->bind[b].in == in)
			return f->bind[b].out;
	for (unsigned p = 0; p < f->npacked; p++)
		if (f->packed[p] == in)
			return -1 - (int)p;
	return -1 - SZC_MAX_PACKED; /* never: szc_check guarantees one */
}

unsigned szc_first_in(const struct szc_folder *f, unsigned c)
{
	unsigned n = 0;

	for (unsigned k = 0; k < c; k++)
		n += f->coders[k].nin;
	return n;
}
