/* What the 7z unit tests share (sevenzip_fixtures.c): a temporary folder whose src/ holds the
 * files the archives are made from, shell commands run there, and archives made by the real
 * 7-Zip (7zz, in a UTF-8 locale: names and passwords are converted by it).  Every function
 * exits the test on a failure (it cannot go on without its inputs).
 */
#ifndef TARSEEK_TEST_SEVENZIP_FIXTURES_H
#define TARSEEK_TEST_SEVENZIP_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

/* The folder, made by sz7_begin ("/tmp/NAME.XXXXXX"), removed with what it holds by sz7_end. */
extern char sz7_tmp[64];
void sz7_begin(const char *name);
void sz7_end(void);

/* Runs a shell command (printf-like). */
__attribute__((format(printf, 1, 2))) void sz7_sh(const char *fmt, ...);

/* Writes src/REL; reads src/REL (malloc'd, *len bytes). */
void sz7_write(const char *rel, const uint8_t *data, size_t len);
uint8_t *sz7_src(const char *rel, size_t *len);

/* cont_7z.parse of the archive a (len bytes, in memory) into sink: its result. */
struct cont_sink;
int sz7_parse(const uint8_t *a, size_t len, const struct cont_sink *sink);

/* Runs 7zz a in src/ to make NAME (in the folder, anew) from files with switches; returns the
 * archive's bytes (malloc'd, *len). */
uint8_t *sz7_make(const char *name, const char *switches, const char *files, size_t *len);

#endif
