/* Where the daemon's messages go.
 *
 * Until the daemon detaches they go to stderr (the logger's default sink), and also to the
 * --log-file when one is given.  Once detached they go to that file alone, else to syslog.
 * Whatever the sink, the logger keeps the last messages in its ring (common/log.h), which the
 * mount's root answers as user.tarseek.log: on a machine without a syslog socket the reason
 * of a failed read is still there.
 *
 * Lines in the file: "YYYY-MM-DD HH:MM:SS tarseek[PID]: level: message", each written with
 * one write(2) to a descriptor opened O_APPEND, so concurrent lines never interleave.  Not
 * thread-safe to set up (the main thread, before serving); the sinks are.
 */
#ifndef TARSEEK_FS_DAEMON_LOG_H
#define TARSEEK_FS_DAEMON_LOG_H

/* --log-file path: opened (created 0600 if missing, appended to) now, before the daemon
 * changes its working folder.  0, or -1 (said why on stderr). */
int dlog_open_file(const char *path);

/* The daemon has detached: stderr is no more; the file, else syslog. */
void dlog_detached(void);

/* Back to the default sink; the file closed.  Safe to call without dlog_open_file. */
void dlog_close(void);

#endif
