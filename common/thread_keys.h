/* Thread keys whose destructors are opreg's code. Not installed.
 *
 * A thread that ran opreg's code may keep state under a pthread key (the
 * kernels' scratch, the oneDNN glue's stream, the parser's spare chunk),
 * freed by the key's destructor when the thread exits. If the library is
 * unloaded first, that destructor is gone: the thread would call into
 * unmapped code at its exit. So every such key is made here, and the
 * pool's destructor deletes them all once opreg's own workers have exited
 * (their state freed as they did). The state of the host's threads still
 * alive then is not freed; nothing of theirs calls into opreg again. */
#ifndef OPREG_COMMON_THREAD_KEYS_H
#define OPREG_COMMON_THREAD_KEYS_H

#include <pthread.h>

/* pthread_key_create, the key kept for opreg__thread_keys_delete. 0, or
 * pthread_key_create's error (also EAGAIN when more keys are asked for
 * than are kept: a bug). */
int opreg__thread_key_create(pthread_key_t *key, void (*dtor)(void *));

/* Deletes every key made by opreg__thread_key_create (no destructor runs).
 * Afterwards a deleted key's pthread_getspecific gives NULL and its
 * pthread_setspecific fails, which the keys' users take as "no state to
 * keep". For the library's destructor, once no thread of opreg's runs. */
void opreg__thread_keys_delete(void);

#endif
