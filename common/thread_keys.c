/* Thread keys whose destructors are opreg's code (thread_keys.h). */
#include "common/thread_keys.h"

#include <errno.h>

/* Few, and each made once: the kernels' scratch, the oneDNN glue's
 * streams, the parser's spare chunk. */
#define MAX_KEYS 8

static pthread_mutex_t keys_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t keys[MAX_KEYS];
static int key_count;

int opreg__thread_key_create(pthread_key_t *key, void (*dtor)(void *)) {
    int rc = EAGAIN;
    pthread_mutex_lock(&keys_mu);
    if (key_count < MAX_KEYS && (rc = pthread_key_create(key, dtor)) == 0) keys[key_count++] = *key;
    pthread_mutex_unlock(&keys_mu);
    return rc;
}

void opreg__thread_keys_delete(void) {
    pthread_mutex_lock(&keys_mu);
    for (int i = 0; i < key_count; i++)
        pthread_key_delete(keys[i]);
    key_count = 0;
    pthread_mutex_unlock(&keys_mu);
}
