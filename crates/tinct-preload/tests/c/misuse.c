/* Heap misuse for the tinct-preload tests (issue 27): each scenario makes
 * one mistake a program can make with free or realloc, then prints
 * "survived" and exits 0. glibc aborts on most of them (SIGABRT, with a
 * line such as "free(): double free detected in tcache 2"); the shim must
 * abort on every one, naming the call and the problem.
 *
 * usage: misuse SCENARIO     (no argument: list the scenarios)
 *
 * Pointers pass through launder(), or are kept in a volatile before they
 * are freed, so the compiler cannot see (and warn about, or drop) the
 * mistake.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static void *launder(void *p) {
    __asm__ volatile("" : "+r"(p));
    return p;
}

/* A pointer kept before it is freed, read back after. */
static void *volatile kept;

static void *keep(void *p) {
    kept = p;
    return p;
}

static char global_block[64] __attribute__((aligned(16)));

static void *allocate_and_free(void *unused) {
    (void)unused;
    static void *volatile freed;
    void *p = malloc(700);
    freed = p;
    free(p);
    return freed;
}

static int run(const char *name) {
    char stack_block[64] __attribute__((aligned(16)));
    memset(stack_block, 0, sizeof stack_block);
    if (!strcmp(name, "double-free-last")) {
        /* The most recently freed object, then two allocations. */
        char *p = keep(malloc(32));
        free(p);
        free(kept);
        char *a = malloc(32), *b = malloc(32);
        printf("survived: the two blocks are %s\n", a == b ? "the same" : "distinct");
    } else if (!strcmp(name, "double-free-listed")) {
        /* An object further down the free list. */
        char *p = keep(malloc(32)), *q = malloc(32);
        free(p);
        free(q);
        free(kept);
    } else if (!strcmp(name, "double-free-other-thread")) {
        /* Freed by a thread that has ended (its cache given back). */
        pthread_t thread;
        void *p;
        if (pthread_create(&thread, NULL, allocate_and_free, NULL) != 0) return 2;
        pthread_join(thread, &p);
        free(launder(p));
    } else if (!strcmp(name, "double-free-run")) {
        char *p = keep(malloc(100000));
        free(p);
        free(kept);
    } else if (!strcmp(name, "double-free-fallback")) {
        /* Larger than the pool: uncoloured fallback memory (run with a
         * small TINCT_POOL, not strict). */
        char *p = keep(malloc(64 << 20));
        if (p == NULL) return 2;
        free(p);
        free(kept);
    } else if (!strcmp(name, "interior-small")) {
        char *p = malloc(32);
        free(launder(p + 8));
    } else if (!strcmp(name, "interior-run")) {
        char *p = calloc(1, 100000);
        free(launder(p + 4096));
    } else if (!strcmp(name, "interior-run-start")) {
        char *p = calloc(1, 100000);
        free(launder(p + 16));
    } else if (!strcmp(name, "stack")) {
        free(launder(stack_block + 16));
    } else if (!strcmp(name, "static")) {
        free(launder(global_block + 16));
    } else if (!strcmp(name, "mapping")) {
        /* Another mapping of the process (zeros). */
        char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (page == MAP_FAILED) return 2;
        free(launder(page + 16));
    } else if (!strcmp(name, "realloc-freed")) {
        char *p = keep(malloc(32));
        free(p);
        p = realloc(kept, 64);
    } else if (!strcmp(name, "realloc-freed-run")) {
        char *p = keep(malloc(100000));
        free(p);
        p = realloc(kept, 200000);
    } else if (!strcmp(name, "realloc-stack")) {
        char *p = realloc(launder(stack_block + 16), 64);
        (void)p;
    } else if (!strcmp(name, "realloc-interior")) {
        char *p = malloc(32);
        p = realloc(launder(p + 8), 64);
    } else if (!strcmp(name, "valid")) {
        /* No mistake: every kind of block freed once, some by another
         * thread, fallbacks included (with a small pool). */
        pthread_t thread;
        void *from_thread, *aligned = NULL;
        free(NULL);
        char *p = realloc(NULL, 10);
        p = realloc(p, 5000);
        p = realloc(p, 100);
        char *big = malloc(64 << 20);
        if (big != NULL) big = realloc(big, 65 << 20);
        if (posix_memalign(&aligned, 4096, 100) != 0) return 2;
        if (pthread_create(&thread, NULL, allocate_and_free, NULL) != 0) return 2;
        pthread_join(thread, &from_thread);
        char *again = malloc(700);
        free(again);
        free(aligned);
        free(big);
        free(p);
        p = malloc(32);
        if (realloc(p, 0) != NULL) return 2;
    } else {
        return 3;
    }
    printf("survived\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        puts("double-free-last double-free-listed double-free-other-thread double-free-run "
             "double-free-fallback interior-small interior-run interior-run-start stack static "
             "mapping realloc-freed realloc-freed-run realloc-stack realloc-interior valid");
        return 0;
    }
    int status = run(argv[1]);
    if (status == 3) fprintf(stderr, "unknown scenario %s\n", argv[1]);
    return status;
}
