/* The escapes of tarseek-bench's reports (bench_report_int.h).  Names and paths are arbitrary
 * bytes; each format gets them in the one form it can carry: escaped like GNU tar in the text
 * (bench_put_escaped) or with control characters shown as '?' in a table cell, quoted in CSV
 * (RFC 4180), escaped with invalid UTF-8 replaced by U+FFFD in JSON and SVG (both must parse).
 * The leaf of the report writers: it calls none of them.
 */
#include "tools/bench/bench_report_int.h"

#include <errno.h>
#include <string.h>

int bench_report_finish(FILE *f)
{
	if (fflush(f) || ferror(f))
		return -EIO;
	return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if the bytes there are not one. */
size_t bench_utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	size_t n;
	unsigned min;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		min = 0x10000;
	} else {
		return 0;
	}
	unsigned cp = c & (0x3f >> (n - 1));

	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Characters a terminal shows for s: control bytes count one ('?'), UTF-8 sequences one. */
size_t bench_display_width(const char *s)
{
	size_t w = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p; w++) {
		size_t n = bench_utf8_len(p);

		p += n ? n : 1;
	}
	return w;
}

/* A name in a table cell: control characters become '?' so rows stay one line each. */
void bench_put_display(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
}

void bench_put_escaped(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\%03o", *p);
			else
				fputc(*p, f);
		}
	}
}

/* CSV (RFC 4180): a field is quoted when it holds a comma, a quote or a line break. */
void bench_csv_str(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

void bench_json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n = bench_utf8_len(p);

		if (!n) {
			fputs("\\ufffd", f);
			p++;
			continue;
		}
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fwrite(p, 1, n, f);
		p += n;
	}
	fputc('"', f);
}

/* XML character data or attribute value; invalid UTF-8 and characters XML 1.0 forbids
 * become U+FFFD; at most max characters, then an ellipsis. */
void bench_xml_str(FILE *f, const char *s, size_t max)
{
	size_t count = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p; count++) {
		size_t n = bench_utf8_len(p);

		if (count == max) {
			fputs("\xe2\x80\xa6", f);
			break;
		}
		if (!n || (*p < 0x20 && *p != '\t' && *p != '\n') || *p == 0x7f) {
			fputs("\xef\xbf\xbd", f);
			p += n ? n : 1;
			continue;
		}
		switch (*p) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&apos;", f);
			break;
		default:
			fwrite(p, 1, n, f);
		}
		p += n;
	}
}
