/* The tools' option tables (see topt.h): getopt_long's tables built from a tool's table, the
 * options it returns mapped back to their entries, and --help's option list written from the
 * same entries.  Long options come back from getopt_long as 256 + their index in the table,
 * short ones as their letter, which is looked up; nothing is allocated, so a tool needs no
 * cleanup for its options.
 */
#include "tools/topt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TOPT_LONG_BASE 256

int topt_init(struct topt_parser *p, const struct topt *opts, size_t n, bool in_order)
{
	size_t nl = 0, ns = 0, nopts = 0;

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < n; i++)
		nopts += !(opts[i].flags & (TOPT_HEADING | TOPT_OPERAND));
	if (nopts > TOPT_MAX)
		return -E2BIG;
	p->opts = opts;
	p->n = n;
	if (in_order)
		p->shorts[ns++] = '-';
	for (size_t i = 0; i < n; i++) {
		const struct topt *o = &opts[i];

		if (o->flags & (TOPT_HEADING | TOPT_OPERAND))
			continue;
		if (o->name)
			p->longopts[nl++] =
			    (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
					    TOPT_LONG_BASE + (int)i};
		if (o->letter) {
			p->shorts[ns++] = o->letter;
			if (o->arg)
				p->shorts[ns++] = ':';
		}
	}
	p->longopts[nl] = (struct option){0};
	p->shorts[ns] = '\0';
	return 0;
}

int topt_next(struct topt_parser *p, int argc, char **argv, const char **arg)
{
	int c = getopt_long(argc, argv, p->shorts, p->longopts, NULL);

	*arg = optarg;
	if (c == -1)
		return TOPT_END;
	if (c == 1)
		return TOPT_ARGUMENT;
	if (c >= TOPT_LONG_BASE && (size_t)(c - TOPT_LONG_BASE) < p->n)
		return p->opts[c - TOPT_LONG_BASE].id;
	for (size_t i = 0; c != '?' && c != ':' && i < p->n; i++)
		if (p->opts[i].letter == c && !(p->opts[i].flags & (TOPT_HEADING | TOPT_OPERAND)))
			return p->opts[i].id;
	return TOPT_ERROR;
}

/* An entry's head: "  -c, --check", "  -l, --list FILE", "      --index-file PATH", "  -o
 * ARG", "  ARCHIVE".  Its length. */
static int head(char *buf, size_t len, const struct topt *o)
{
	const char *sp = o->arg ? " " : "", *arg = o->arg ? o->arg : "";

	if (o->flags & TOPT_OPERAND)
		return snprintf(buf, len, "  %s", arg);
	if (o->letter && o->name)
		return snprintf(buf, len, "  -%c, --%s%s%s", o->letter, o->name, sp, arg);
	if (o->letter)
		return snprintf(buf, len, "  -%c%s%s", o->letter, sp, arg);
	return snprintf(buf, len, "      --%s%s%s", o->name, sp, arg);
}

void topt_help(FILE *f, const struct topt *opts, size_t n, int col)
{
	for (size_t i = 0; i < n; i++) {
		const struct topt *o = &opts[i];
		char buf[128];
		int w;

		if (o->flags & TOPT_HEADING) {
			fprintf(f, "%s\n", o->help);
			continue;
		}
		w = head(buf, sizeof(buf), o);
		fputs(buf, f);
		while ((o->flags & TOPT_JOIN) && i + 1 < n) {
			o = &opts[++i];
			w += head(buf, sizeof(buf), o); /* "; " in place of its indent */
			fprintf(f, "; %s", buf + 2);
		}
		if (!o->help) {
			fputc('\n', f);
			continue;
		}
		for (const char *h = o->help; *h;) {
			const char *nl = strchr(h, '\n');
			int len = nl ? (int)(nl - h) : (int)strlen(h);

			if (w >= col) {
				fputc('\n', f);
				w = 0;
			}
			fprintf(f, "%*s%.*s\n", col - w, "", len, h);
			w = 0;
			h += len + (nl != NULL);
		}
	}
}

int topt_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}
