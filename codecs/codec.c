/* The codec registry: which codecs are compiled in, probing by magic bytes, and the names a
 * single compressed file shows in the mount.
 */
#include "codecs/codec.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct codec *const codecs[] = {
	&codec_gzip,
	&codec_bzip2,
	&codec_xz,
#if HAVE_ZSTD
	&codec_zstd,
#endif
#if HAVE_LZO
	&codec_lzo,
#endif
#if HAVE_LZ4
	&codec_lz4,
#endif
#if HAVE_LZIP
	&codec_lzip,
#endif
	/* no magic of its own: a header that looks like LZMA properties, probed last */
	&codec_compress,
	&codec_lzma,
};

#define NCODECS (sizeof(codecs) / sizeof(codecs[0]))

/* Codecs of container streams only: found by name, never probed nor listed. */
static const struct codec *const stream_codecs[] = {
	&codec_deflate,
	&codec_lzma_zip,
	&codec_stored,
	&codec_deflate64,
	&codec_ppmd_zip,
	&codec_7z,
	&codec_sqlar,
	&codec_squashfs,
#if HAVE_LIBARCHIVE
	&codec_libarchive,
#endif
};

const struct codec *codec_probe(const uint8_t *head, size_t len)
{
	for (size_t i = 0; i < NCODECS; i++)
		if (codecs[i]->probe && codecs[i]->probe(head, len))
			return codecs[i];
	return NULL;
}

const struct codec *codec_by_name(const char *name)
{
	for (size_t i = 0; i < NCODECS; i++)
		if (strcmp(codecs[i]->name, name) == 0)
			return codecs[i];
	for (size_t i = 0; i < sizeof(stream_codecs) / sizeof(stream_codecs[0]); i++)
		if (strcmp(stream_codecs[i]->name, name) == 0)
			return stream_codecs[i];
	return NULL;
}

const char *codec_list(void)
{
	static char list[128];

	if (!list[0]) {
		for (size_t i = 0; i < NCODECS; i++) {
			if (i)
				strcat(list, ",");
			strcat(list, codecs[i]->name);
		}
	}
	return list;
}

/* Suffix -> replacement, longest first where one is a suffix of another. */
static const char *const suffixes[][2] = {
	{".tar.gz", ".tar"}, {".tgz", ".tar"},	{".taz", ".tar"},  {".tar.bz2", ".tar"},
	{".tbz2", ".tar"},   {".tbz", ".tar"},	{".tb2", ".tar"},  {".tar.xz", ".tar"},
	{".txz", ".tar"},    {".tpxz", ".tar"}, {".tar.pxz", ".tar"}, {".tar.zst", ".tar"},
	{".tzst", ".tar"},   {".tar.lzo", ".tar"}, {".tzo", ".tar"}, {".gz", ""},
	{".gzip", ""},	     {".z", ""},	{".bz2", ""},	   {".bz", ""},
	{".xz", ""},	     {".pxz", ""},	{".lzma", ""},	   {".zst", ""},
	{".zstd", ""},	     {".lzo", ""},	{".tlz", ".tar"},  {".tlz4", ".tar"},
	{".lz4", ""},	     {".lz", ""},
};

char *codec_strip_suffix(const char *archive_path)
{
	const char *base = strrchr(archive_path, '/');
	size_t n;
	char *out;

	base = base ? base + 1 : archive_path;
	n = strlen(base);
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t sl = strlen(suffixes[i][0]);
		if (n > sl && strcasecmp(base + n - sl, suffixes[i][0]) == 0) {
			size_t rl = strlen(suffixes[i][1]);
			out = malloc(n - sl + rl + 1);
			if (!out)
				return NULL;
			memcpy(out, base, n - sl);
			memcpy(out + n - sl, suffixes[i][1], rl + 1);
			return out;
		}
	}
	out = malloc(n + sizeof(".decompressed"));
	if (!out)
		return NULL;
	memcpy(out, base, n);
	memcpy(out + n, ".decompressed", sizeof(".decompressed"));
	return out;
}

bool codec_names_tar(const char *archive_path)
{
	char *name = codec_strip_suffix(archive_path);
	size_t n = name ? strlen(name) : 0;
	bool tar = n > 4 && strcasecmp(name + n - 4, ".tar") == 0;

	free(name);
	return tar;
}

/* Archives of the other containers (container.h), as -r looks for them. */
static const char *const container_suffixes[] = {
    ".tar", ".zip", ".7z",   ".jar", ".war", ".ear",  ".apk", ".whl", ".epub", ".rar", ".iso",
    ".cpio", ".deb", ".rpm", ".cab", ".lzh", ".lha", ".xar", ".warc",
    /* SquashFS images and SQLite archives (squashfs/squashfs.c, sqlar.c) */
    ".sqsh", ".squashfs", ".sfs", ".sqlar",
    /* disk images and file systems (container.h's cont_images), with -r only */
    ".img", ".raw", ".ext2", ".ext3", ".ext4", ".vfat", ".fat",
    ".qcow2", ".qcow", ".vhd", ".vhdx", ".vpc", ".vmdk"};

/* the suffix of name[0..len) among suffixes[] or container_suffixes[], or 0 */
static size_t archive_suffix(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t sl = strlen(suffixes[i][0]);
		if (len > sl && strncasecmp(name + len - sl, suffixes[i][0], sl) == 0)
			return sl;
	}
	for (size_t i = 0; i < sizeof(container_suffixes) / sizeof(container_suffixes[0]); i++) {
		size_t sl = strlen(container_suffixes[i]);
		if (len > sl && strncasecmp(name + len - sl, container_suffixes[i], sl) == 0)
			return sl;
	}
	return 0;
}

bool codec_archive_name(const char *name, size_t len)
{
	return archive_suffix(name, len) != 0;
}

char *codec_strip_archive_ext(const char *name, size_t len)
{
	size_t sl = archive_suffix(name, len);
	char *out;

	if (!sl || sl >= len)
		return NULL;
	out = malloc(len - sl + 1);
	if (out) {
		memcpy(out, name, len - sl);
		out[len - sl] = '\0';
	}
	return out;
}
