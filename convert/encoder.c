/* The encoders tarseek-convert knows, by the extension of the file to write. */
#include <string.h>

#include "config.h"
#include "convert/encoder.h"

extern const struct encoder encoder_gzip, encoder_xz;
#if HAVE_ZSTD
extern const struct encoder encoder_zstd;
#endif
#if HAVE_LZO
extern const struct encoder encoder_lzo;
#endif

static const struct {
	const char *ext;
	const struct encoder *enc;
} forms[] = {
#if HAVE_ZSTD
    {".tar.zst", &encoder_zstd}, {".tzst", &encoder_zstd}, {".zst", &encoder_zstd},
#endif
    {".tar.xz", &encoder_xz},	 {".txz", &encoder_xz},	   {".xz", &encoder_xz},
    {".tar.gz", &encoder_gzip},	 {".tgz", &encoder_gzip},  {".gz", &encoder_gzip},
#if HAVE_LZO
    {".tar.lzo", &encoder_lzo},	 {".tzo", &encoder_lzo},   {".lzo", &encoder_lzo},
#endif
};

const struct encoder *enc_for_path(const char *path)
{
	size_t n = strlen(path);

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		size_t e = strlen(forms[i].ext);
		if (n > e && strcmp(path + n - e, forms[i].ext) == 0)
			return forms[i].enc;
	}
	return NULL;
}

const char *enc_list(void)
{
	return HAVE_ZSTD && HAVE_LZO ? "tar.zst, tar.xz, tar.gz, tar.lzo, tar"
	       : HAVE_ZSTD	     ? "tar.zst, tar.xz, tar.gz, tar"
	       : HAVE_LZO	     ? "tar.xz, tar.gz, tar.lzo, tar"
				     : "tar.xz, tar.gz, tar";
}
