/* The separators of a zip entry name from an MS-DOS/Windows host (zip_names.h). */
#include "containers/zip_names.h"

/* Is b[0..n) Shift-JIS (cp932) text with a two-byte character whose second byte is 0x5C?
 * Every byte >= 0x80 must belong to a character: a lead byte (0x81-0x9F, 0xE0-0xFC) with its
 * second byte (0x40-0x7E, 0x80-0xFC), or a half-width katakana (0xA1-0xDF).  A name in another
 * code page seldom passes (in cp437, a lead byte is an accented letter, and the byte after it
 * would have to fit too). */
static bool sjis_with_5c(const uint8_t *b, size_t n)
{
	bool has_5c = false;

	for (size_t i = 0; i < n; i++) {
		uint8_t c = b[i];

		if (c < 0x80 || (c >= 0xa1 && c <= 0xdf))
			continue;
		if (!((c >= 0x81 && c <= 0x9f) || (c >= 0xe0 && c <= 0xfc)) || i + 1 == n)
			return false;
		c = b[++i];
		if (c < 0x40 || c == 0x7f || c > 0xfc)
			return false;
		has_5c |= c == 0x5c;
	}
	return has_5c;
}

/* An MS-DOS name's backslashes made slashes, as unzip does -- except the second byte of a
 * Shift-JIS character (Japanese Windows names, no UTF-8 flag: "\x95\x5c" is one character;
 * unzip splits it, 7-Zip under cp932 does not). */
void zip_dos_separators(uint8_t *buf, size_t n, bool utf8)
{
	bool sjis = !utf8 && sjis_with_5c(buf, n);

	for (size_t i = 0; i < n; i++) {
		if (sjis && buf[i] >= 0x80 && !(buf[i] >= 0xa1 && buf[i] <= 0xdf))
			i++; /* a two-byte character: its second byte stays */
		else if (buf[i] == '\\')
			buf[i] = '/';
	}
}
