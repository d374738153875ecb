/* fork while other threads allocate: the child must not inherit a held
 * allocator lock (pthread_atfork handlers), and both sides keep working.
 * Also one large block (16 MiB) that must survive the forks intact.
 *
 * usage: forks FORKS
 * Prints "ok" and exits 0, or names the failure and exits 1.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int stop;

static void *churn(void *arg) {
    unsigned long seed = (unsigned long)(size_t)arg;
    void *keep[64] = {0};
    while (!atomic_load(&stop)) {
        seed = seed * 6364136223846793005UL + 1442695040888963407UL;
        int slot = (int)((seed >> 33) % 64);
        free(keep[slot]);
        keep[slot] = malloc(16 + (seed >> 40) % 20000);
        if (keep[slot] == NULL) { fprintf(stderr, "malloc failed in thread\n"); exit(1); }
        memset(keep[slot], 1, 16);
    }
    for (int i = 0; i < 64; i++) free(keep[i]);
    return NULL;
}

int main(int argc, char **argv) {
    int forks = argc > 1 ? atoi(argv[1]) : 20;
    size_t big_size = 16u << 20;
    unsigned char *big = malloc(big_size);
    if (big == NULL) { fprintf(stderr, "16 MiB malloc failed\n"); return 1; }
    for (size_t i = 0; i < big_size; i += 4096) big[i] = (unsigned char)(i >> 12);
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) pthread_create(&threads[i], NULL, churn, (void *)(size_t)(i + 1));
    for (int f = 0; f < forks; f++) {
        pid_t child = fork();
        if (child < 0) { perror("fork"); return 1; }
        if (child == 0) {
            /* Only this thread exists here; the allocator must work. */
            char *p = malloc(1 << 20);
            char *q = realloc(p, 3 << 20);
            if (q == NULL) _exit(3);
            memset(q, 7, 3 << 20);
            for (size_t i = 0; i < big_size; i += 4096)
                if (big[i] != (unsigned char)(i >> 12)) _exit(4);
            free(q);
            _exit(0);
        }
        int status;
        if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "child %d failed (status %d)\n", f, status);
            return 1;
        }
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
    for (size_t i = 0; i < big_size; i += 4096)
        if (big[i] != (unsigned char)(i >> 12)) { fprintf(stderr, "big block changed\n"); return 1; }
    free(big);
    printf("ok\n");
    return 0;
}
