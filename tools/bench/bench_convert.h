/* --convert FORMS: tarseek-convert run on the first archive, once per form, before anything is
 * mounted; each output becomes a configuration of its own, mounted with the index the
 * conversion wrote beside it (its first mount builds nothing), so one command answers "which
 * form should this archive be kept in" on the user's own archive.  The outputs go to
 * --convert-dir (kept) or to a temporary folder removed at exit (bench_convert_cleanup).
 */
#ifndef TARSEEK_BENCH_CONVERT_H
#define TARSEEK_BENCH_CONVERT_H

struct bench;

/* Converts and adds the configurations.  0, or -errno (message printed). */
int bench_convert(struct bench *b);

/* Removes the temporary folder and what it holds (nothing with --convert-dir). */
void bench_convert_cleanup(struct bench *b);

#endif
