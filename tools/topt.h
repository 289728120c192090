/* The tools' options (tarseek-index, tarseek-convert, tarseek-bench): one table per
 * tool that drives getopt_long and the option list of --help, as fs/options.c's table does for
 * the daemon -- an option is added in one place and --help cannot forget it.
 *
 * A tool lists its options in a const array of struct topt, in the order --help shows them,
 * with headings and operands between them where --help has them.  topt_init builds
 * getopt_long's long options and short option string from it; topt_next hands back each option
 * as the id its entry gives (the tool's own enum: a letter for an option with one, 256 and up
 * for the others, by habit); topt_help writes the list.  What an option does stays in the
 * tool's switch; the tool's --help text around the list (usage line, notes, exit status) stays
 * in the tool.
 *
 * Errors: getopt_long prints its own message for an unknown option or a missing argument
 * ("PROG: unrecognized option '--x'") and topt_next returns TOPT_ERROR; the tool adds its "Try
 * 'PROG --help'." and exits with its usage status.  The parser uses getopt's globals (optind,
 * optarg): one parse at a time, not thread-safe, as getopt itself.
 */
#ifndef TARSEEK_TOPT_H
#define TARSEEK_TOPT_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One entry of a tool's table: an option, or (flags) a heading or an operand of --help. */
struct topt {
	int id;		  /* what topt_next returns for it: >= 0, distinct */
	const char *name; /* the long option without "--"; NULL: none */
	char letter;	  /* the short option; 0: none */
	const char *arg;  /* the argument's name in --help; NULL: the option takes none */
	const char *help; /* the description in --help, lines separated by '\n'; NULL: none */
	unsigned flags;	  /* TOPT_* */
};

enum {
	TOPT_JOIN = 1,	  /* --help: this option's head and the next one's share a line ("-h,
			     --help; -V, --version"), the last one's description after them */
	TOPT_HEADING = 2, /* not an option: help is a line of --help on its own (a heading) */
	TOPT_OPERAND = 4, /* not an option: arg names an operand, described like an option */
};

#define TOPT_MAX 64 /* options in one table */

struct topt_parser {
	const struct topt *opts;
	size_t n;
	struct option longopts[TOPT_MAX + 1];
	char shorts[2 * TOPT_MAX + 2];
};

/* What topt_next returns besides an option's id. */
enum {
	TOPT_END = -1,	   /* no option left: the operands are argv[optind..argc) */
	TOPT_ERROR = -2,   /* an unknown option, or one without its argument (getopt said so) */
	TOPT_ARGUMENT = -3 /* in order: an operand, where it stands (in *arg) */
};

/* Builds the getopt_long tables of opts (n entries).  in_order: operands come back from
 * topt_next where they stand (TOPT_ARGUMENT), for options that apply to what follows them;
 * else getopt's default, operands left after the options.  0, or -E2BIG past TOPT_MAX
 * options. */
int topt_init(struct topt_parser *p, const struct topt *opts, size_t n, bool in_order);

/* The next option of argv: its entry's id with *arg its argument (NULL if it takes none),
 * TOPT_ARGUMENT (an operand, in *arg), TOPT_END or TOPT_ERROR (see above). */
int topt_next(struct topt_parser *p, int argc, char **argv, const char **arg);

/* The option list of --help: each option's head ("  -c, --check", "      --index-file PATH"),
 * or an operand's ("  ARCHIVE"), then its description from column col (on the next line when
 * the head reaches col), one line per '\n'; headings on a line of their own. */
void topt_help(FILE *f, const struct topt *opts, size_t n, int col);

/* A whole number from min to max (strtol, base 10: the tools' counts and seconds): 0 and *out,
 * or -EINVAL; the tool says why, naming the option. */
int topt_long(const char *s, long min, long max, long *out);

#endif
