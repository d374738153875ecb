/* Multi-threaded allocation workload for the tinct-preload tests.
 *
 * usage: threads THREADS OPS ROUNDS SEED [SLOTS]
 *
 * Each thread owns SLOTS slots (256 unless given, at most 256; the peak
 * heap grows with them, about 4 MiB per thread at 256) and runs OPS random
 * operations per round:
 * allocate (malloc, calloc, posix_memalign, aligned_alloc, memalign, valloc,
 * pvalloc) with random sizes, verify and free, or realloc (checking that the
 * contents survive). Every block is filled with a pattern and verified before
 * it is touched again; alignment and malloc_usable_size are checked. At the
 * end of a round every block is freed. The output (one checksum per thread)
 * depends only on SEED, never on addresses, so it must be byte-identical with
 * and without the shim. Exit status 1 with a message on any failure.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SLOTS 256

struct worker {
    int index;
    long ops;
    int rounds;
    int slots;
    uint64_t seed;
    uint64_t checksum;
    int failed;
};

static uint64_t next(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

static void fail(struct worker *w, const char *what, size_t size) {
    fprintf(stderr, "thread %d: %s (size %zu)\n", w->index, what, size);
    w->failed = 1;
}

static size_t random_size(uint64_t *rng) {
    uint64_t r = next(rng) % 100;
    if (r < 75) return 1 + next(rng) % 2048;
    if (r < 97) return 2049 + next(rng) % (64 << 10);
    return (64 << 10) + next(rng) % (448 << 10);
}

static void fill(unsigned char *p, size_t size, unsigned char pattern) {
    memset(p, pattern, size);
}

static int verify(const unsigned char *p, size_t size, unsigned char pattern, uint64_t *sum) {
    for (size_t i = 0; i < size; i += 61) {
        if (p[i] != pattern) return 0;
        *sum = *sum * 1099511628211ULL + p[i];
    }
    return size == 0 || p[size - 1] == pattern;
}

static void *allocate(struct worker *w, uint64_t *rng, size_t size, int *zeroed) {
    void *p = NULL;
    size_t align = (size_t)16 << (next(rng) % 9); /* 16 .. 4096 */
    *zeroed = 0;
    switch (next(rng) % 8) {
    case 0: case 1: case 2: p = malloc(size); align = 16; break;
    case 3: p = calloc(1, size); *zeroed = 1; align = 16; break;
    case 4: if (posix_memalign(&p, align, size) != 0) p = NULL; break;
    case 5: p = aligned_alloc(align, size); break;
    case 6: p = memalign(align, size); break;
    default:
        if (next(rng) % 2) { p = valloc(size); } else { p = pvalloc(size); }
        align = (size_t)sysconf(_SC_PAGESIZE);
        break;
    }
    if (p == NULL) { fail(w, "allocation returned NULL", size); return NULL; }
    if ((uintptr_t)p % align != 0) fail(w, "misaligned block", size);
    if (malloc_usable_size(p) < size) fail(w, "malloc_usable_size too small", size);
    if (*zeroed) {
        const unsigned char *c = p;
        for (size_t i = 0; i < size; i++) if (c[i] != 0) { fail(w, "calloc not zeroed", size); break; }
    }
    return p;
}

static void *work(void *arg) {
    struct worker *w = arg;
    uint64_t rng = w->seed * 2654435761ULL + (uint64_t)w->index + 1;
    unsigned char *block[MAX_SLOTS] = {0};
    size_t size[MAX_SLOTS] = {0};
    unsigned char pattern[MAX_SLOTS] = {0};
    uint64_t sum = 1469598103934665603ULL;
    for (int round = 0; round < w->rounds && !w->failed; round++) {
        for (long op = 0; op < w->ops && !w->failed; op++) {
            int slot = (int)(next(&rng) % (uint64_t)w->slots);
            if (block[slot] == NULL) {
                int zeroed;
                size_t s = random_size(&rng);
                block[slot] = allocate(w, &rng, s, &zeroed);
                if (block[slot] == NULL) break;
                size[slot] = s;
                pattern[slot] = (unsigned char)(next(&rng) | 1);
                fill(block[slot], s, pattern[slot]);
                sum = sum * 31 + s;
            } else if (!verify(block[slot], size[slot], pattern[slot], &sum)) {
                fail(w, "block contents changed", size[slot]);
            } else if (next(&rng) % 3 == 0) {
                size_t s = random_size(&rng);
                unsigned char *q = realloc(block[slot], s);
                if (q == NULL) { fail(w, "realloc returned NULL", s); break; }
                size_t kept = s < size[slot] ? s : size[slot];
                if (!verify(q, kept, pattern[slot], &sum)) fail(w, "realloc lost the contents", s);
                block[slot] = q;
                size[slot] = s;
                fill(q, s, pattern[slot]);
            } else {
                free(block[slot]);
                block[slot] = NULL;
            }
        }
        for (int slot = 0; slot < w->slots; slot++) {
            free(block[slot]);
            block[slot] = NULL;
        }
    }
    w->checksum = sum;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: %s THREADS OPS ROUNDS SEED [SLOTS]\n", argv[0]);
        return 2;
    }
    int threads = atoi(argv[1]);
    int slots = argc == 6 ? atoi(argv[5]) : MAX_SLOTS;
    struct worker workers[64];
    pthread_t ids[64];
    if (threads < 1 || threads > 64 || slots < 1 || slots > MAX_SLOTS) return 2;
    for (int i = 0; i < threads; i++) {
        workers[i] = (struct worker){ i, atol(argv[2]), atoi(argv[3]), slots, strtoull(argv[4], NULL, 10), 0, 0 };
        if (pthread_create(&ids[i], NULL, work, &workers[i]) != 0) { perror("pthread_create"); return 1; }
    }
    int failed = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(ids[i], NULL);
        failed |= workers[i].failed;
        printf("thread %d checksum %016llx\n", i, (unsigned long long)workers[i].checksum);
    }
    if (failed) return 1;
    printf("ok\n");
    return 0;
}
