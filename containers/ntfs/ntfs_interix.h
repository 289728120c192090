/* Interix symbolic links: how ntfs-3g (and Windows' Services for Unix) writes a symbolic link
 * by default -- a file with the system attribute whose data is "IntxLNK\1" and then the
 * target in UTF-16LE -- which libfsntfs shows as a plain file.  ntfs.c asks here for every
 * small system file. */
#ifndef TARSEEK_NTFS_INTERIX_H
#define TARSEEK_NTFS_INTERIX_H

#include <libfsntfs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* True if f, of size bytes, is an Interix symbolic link whose target, in UTF-8 with '\0',
 * fits buf (cap bytes): then buf holds it and *len its length.  Reads f's data through
 * libfsntfs (at most 8 + 2 * cap bytes). */
bool ntfs_interix_link(libfsntfs_file_entry_t *f, uint64_t size, char *buf, size_t cap,
		       size_t *len);

/* UTF-16LE (n code units at p) to UTF-8 into buf (cap bytes, '\0' added): its length, or -1
 * when it does not fit or holds a NUL, an unpaired surrogate being written as U+FFFD. */
ssize_t ntfs_utf16_to_utf8(const uint8_t *p, size_t n, char *buf, size_t cap);

#endif
