/* tarseek-bench's progress line and messages (see bench_ui.h).  The line is redrawn in place
 * with "\r\033[K" and throttled to 10 updates a second, so a pass over many small files does
 * not spend its time writing to the terminal.
 */
#include "tools/bench/bench_ui.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "tools/bench/bench_mount.h"
#include "common/clock.h"

/* The log sink: takes the progress line away before a message so they never share a line. */
static void log_sink(int level, const char *msg, void *opaque)
{
	static const char *const names[8] = {"",	"",	  "",	  "error",
					     "warning", "notice", "info", "debug"};

	bench_ui_clear(opaque);
	fprintf(stderr, "tarseek-bench: %s%s%s\n", level <= TFS_LOG_WARNING ? names[level] : "",
		level <= TFS_LOG_WARNING ? ": " : "", msg);
	fflush(stderr);
}

void bench_ui_log_to(struct bench_ui *ui)
{
	tfs_log_set_sink(log_sink, ui);
}

void bench_ui_start(struct bench_ui *ui, int quiet)
{
	ui->tty = !quiet && isatty(STDERR_FILENO);
	ui->t_start = mono_now();
}

void bench_ui_clear(struct bench_ui *ui)
{
	if (ui->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		ui->shown = 0;
	}
}

void bench_ui_show(struct bench_ui *ui, int force, const char *fmt, ...)
{
	char detail[160];
	double now;
	va_list ap;

	if (!ui->tty)
		return;
	now = mono_now();
	if (!force && now - ui->last_ui < 0.1)
		return;
	ui->last_ui = now;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	fprintf(stderr, "\r\033[K%s  %s  [elapsed %d:%02d]", ui->status, detail,
		(int)(now - ui->t_start) / 60, (int)(now - ui->t_start) % 60);
	fflush(stderr);
	ui->shown = 1;
}

void bench_ui_status(struct bench_ui *ui, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ui->status, sizeof(ui->status), fmt, ap);
	va_end(ap);
	/* Control characters of names must not move the cursor. */
	for (char *p = ui->status; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
}
