/* tarseek-bench's progress line and messages.
 *
 * While the bench runs, the last line of a terminal shows "status  detail  [elapsed m:ss]":
 * the status says which phase and configuration (bench_ui_status), the detail what is going on
 * inside it (bench_ui_show).  Messages go through the project's logger (bench_err, bench_warn,
 * bench_info); the sink installed by bench_ui_log_to() takes the progress line away before
 * each message, so the two never share a line, and prints "tarseek-bench: LEVEL: message".
 *
 * Nothing is shown until bench_ui_start(), nor at all when stderr is not a terminal or with
 * --quiet.  A struct bench_ui is plain memory (zero it to begin); not thread-safe.
 */
#ifndef TARSEEK_BENCH_UI_H
#define TARSEEK_BENCH_UI_H

#include "common/log.h"

#define bench_err(...) tfs_log(TFS_LOG_ERR, __VA_ARGS__)
#define bench_warn(...) tfs_log(TFS_LOG_WARNING, __VA_ARGS__)
#define bench_info(...) tfs_log(TFS_LOG_INFO, __VA_ARGS__)

struct bench_ui {
	int tty;	/* the line is shown: stderr is a terminal and not --quiet */
	int shown;	/* a progress line is on screen */
	double t_start; /* mono_now() at bench_ui_start() */
	double last_ui; /* time of the line's last update */
	char status[160];
};

/* Sends the project's log messages to stderr, each after clearing ui's progress line. */
void bench_ui_log_to(struct bench_ui *ui);

/* From now on, show the line if stderr is a terminal and not quiet; elapsed counts from now. */
void bench_ui_start(struct bench_ui *ui, int quiet);

/* Takes the progress line off the screen (if it is there). */
void bench_ui_clear(struct bench_ui *ui);

/* Shows "status  detail  [elapsed]" on the terminal's last line, at most 10 times a second
 * unless force. */
void bench_ui_show(struct bench_ui *ui, int force, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets the status part of the line (control characters shown as '?'); shows nothing yet. */
void bench_ui_status(struct bench_ui *ui, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
