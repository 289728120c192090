/* What a thread is about to do, told to whatever runs it.
 *
 * hint_slow(): the calling thread is about to decode, or to wait for another thread's
 * decode -- work that may take milliseconds.  The request loop (fs/loop.c) hooks its threads
 * with hint_set_slow, so that a request thread about to be slow lets another thread read the
 * requests that are waiting; on any other thread (the prefetch, the tools) it does nothing.
 * Per thread; the hook must not block for long.
 */
#ifndef TARSEEK_HINT_H
#define TARSEEK_HINT_H

void hint_set_slow(void (*fn)(void *arg), void *arg);
void hint_slow(void);

#endif
