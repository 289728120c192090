/* Parsing sizes given on the command line (see size.h). */
#include "common/size.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

bool parse_size(const char *s, uint64_t *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return false;
	switch (*end) {
	case '\0':
	case 'M':
	case 'm':
		v *= 1 << 20;
		break;
	case 'K':
	case 'k':
		v *= 1 << 10;
		break;
	case 'G':
	case 'g':
		v *= 1 << 30;
		break;
	case 'T':
	case 't':
		v *= (double)(1ull << 40);
		break;
	default:
		return false;
	}
	if (*end && end[1] && strcasecmp(end + 1, "iB") != 0 && strcasecmp(end + 1, "B") != 0)
		return false;
	if (v > 9e18)
		return false;
	*out = (uint64_t)v;
	return true;
}

void format_size(char *buf, size_t size, double bytes)
{
	static const char *const unit[] = {"B", "KB", "MB", "GB", "TB"};
	int i = 0;

	while (bytes >= 1000 && i < 4) {
		bytes /= 1000;
		i++;
	}
	snprintf(buf, size, i ? "%.2f %s" : "%.0f %s", bytes, unit[i]);
}
