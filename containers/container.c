/* Which container an archive file is made with (see container.h). */
#include "containers/container.h"

#include <stdio.h>

#if HAVE_LIBARCHIVE
#include "codecs/libarchive/libarchive_src.h"
#endif

/* libarchive's last: its probe reads the iso9660 descriptor at 32 KiB */
static const struct container *const all[] = {
	&cont_zip,
	&cont_7z,
	&cont_ar,
	&cont_sqlar,
#if HAVE_SQUASHFS
	&cont_squashfs,
#endif
#if HAVE_LIBARCHIVE
	&cont_libarchive,
#endif
};

const struct container *cont_probe(struct src *in, const uint8_t *head, size_t len)
{
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i]->probe(in, head, len))
			return all[i];
	return NULL;
}

/* Disk images and file systems (container.h): partition tables first, then file systems. */
const struct container *const cont_images[] = {
	NULL,
};

const struct container *cont_probe_image(struct src *in, const uint8_t *head, size_t len)
{
	for (size_t i = 0; cont_images[i]; i++)
		if (cont_images[i]->probe(in, head, len))
			return cont_images[i];
	return NULL;
}

const char *cont_list(void)
{
	static char list[256];

	if (!list[0]) {
#if HAVE_LIBARCHIVE
		snprintf(list, sizeof(list), "tar, zip, 7z, ar, sqlar%s, libarchive (%s)", HAVE_SQUASHFS ? ", squashfs" : "", la_formats());
#else
		snprintf(list, sizeof(list), "tar, zip, 7z, ar, sqlar%s", HAVE_SQUASHFS ? ", squashfs" : "");
#endif
	}
	return list;
}
