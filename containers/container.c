/* Which container an archive file is made with (see container.h). */
#include "containers/container.h"

#include <stdio.h>

#include "containers/vdisk/vdisk.h"

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

/* Disk images and file systems (container.h): virtual-disk containers first (a fixed VHD
 * starts with its disk's partition table), then partition tables, then file systems. */
const struct container *const cont_images[] = {
	&cont_qcow2,
	&cont_vhdx,
	&cont_vmdk,
	&cont_vhd, /* last of the four: its probe reads the end of the file */
	&cont_parttable,
#if HAVE_EXT2FS
	&cont_ext4,
#endif
	&cont_fat,
#if HAVE_LIBFSNTFS
	&cont_ntfs,
#endif
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
	static char list[512];

	if (!list[0]) {
		size_t n;
#if HAVE_LIBARCHIVE
		n = (size_t)snprintf(list, sizeof(list), "tar, zip, 7z, ar, sqlar, %s%slibarchive (%s)",
				     HAVE_SQUASHFS ? "squashfs, " : "", HAVE_JSONC ? "oci, " : "",
				     la_formats());
#else
		n = (size_t)snprintf(list, sizeof(list), "tar, zip, 7z, ar, sqlar%s%s",
				     HAVE_SQUASHFS ? ", squashfs" : "", HAVE_JSONC ? ", oci" : "");
#endif
		for (size_t i = 0; cont_images[i] && n < sizeof(list); i++)
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
					      i ? ", " : "; with -r: ", cont_images[i]->name);
	}
	return list;
}
