/* Names of zip entries made on MS-DOS/Windows hosts (zip_names.c), for containers/zip.c.
 *
 * zip_dos_separators turns buf[0..n)'s backslashes into slashes, as unzip does for such a
 * host -- except a 0x5C that is the second byte of a Shift-JIS character (Japanese Windows
 * names, no UTF-8 flag: "\x95\x5c" is one character, which unzip splits and 7-Zip under
 * cp932 does not), when the whole name reads as Shift-JIS.  utf8: the name is UTF-8 (the
 * entry's flag, or Info-ZIP's Unicode Path), whose bytes >= 0x80 are never 0x5C: every
 * backslash is a separator.
 */
#ifndef TARSEEK_ZIP_NAMES_H
#define TARSEEK_ZIP_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void zip_dos_separators(uint8_t *buf, size_t n, bool utf8);

#endif
