/* Anonymous mappings for the tinct-preload tests (TINCT_MMAP=1).
 *
 * usage: maps ROUNDS
 *
 * Maps anonymous private memory of several sizes, checks it reads as
 * zeros, fills it, shrinks and grows it with mremap (contents kept, new
 * part zero), unmaps part of it, zeroes part with MADV_DONTNEED, changes
 * and restores protection, and keeps the last mappings alive until exit
 * (so a page report sees them). The output is a checksum of everything
 * read, so it is byte-identical with and without the shim. Exit status 1
 * with a message on any failure.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t sum = 1469598103934665603ULL;

static void fail(const char *what) {
    fprintf(stderr, "maps: %s\n", what);
    exit(1);
}

static void zeros(const unsigned char *p, size_t n, const char *what) {
    for (size_t i = 0; i < n; i += 97)
        if (p[i] != 0) fail(what);
    if (n && p[n - 1] != 0) fail(what);
}

static void fill(unsigned char *p, size_t n, unsigned char v) {
    memset(p, v, n);
}

static void check(const unsigned char *p, size_t n, unsigned char v, const char *what) {
    for (size_t i = 0; i < n; i += 61) {
        if (p[i] != v) fail(what);
        sum = (sum ^ p[i]) * 1099511628211ULL;
    }
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 2;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char *keep[4] = {0};
    size_t keep_len[4] = {0};
    for (int r = 0; r < rounds; r++) {
        size_t sizes[4] = {page, 5 * page + 123, 64 * page, 300 * page};
        for (int k = 0; k < 4; k++) {
            size_t n = sizes[k];
            unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) fail("mmap");
            zeros(p, n, "fresh mapping not zero");
            fill(p, n, (unsigned char)(17 + k + r));
            check(p, n, (unsigned char)(17 + k + r), "filled mapping");
            /* grow with mremap: old contents kept, new part zero */
            size_t grown = n * 2 + page;
            unsigned char *q = mremap(p, n, grown, MREMAP_MAYMOVE);
            if (q == MAP_FAILED) fail("mremap grow");
            check(q, n, (unsigned char)(17 + k + r), "grown mapping lost contents");
            size_t old_end = (n + page - 1) / page * page;
            zeros(q + old_end, grown - old_end, "grown part not zero");
            /* shrink back in place */
            unsigned char *s = mremap(q, grown, n, 0);
            if (s != q) fail("mremap shrink moved");
            /* zero a page with MADV_DONTNEED, then unmap the tail */
            if (n >= 3 * page) {
                if (madvise(s + page, page, MADV_DONTNEED) != 0) fail("madvise");
                zeros(s + page, page, "MADV_DONTNEED page not zero");
                fill(s + page, page, 7);
                if (mprotect(s + 2 * page, page, PROT_READ) != 0) fail("mprotect");
                check(s + 2 * page, page, (unsigned char)(17 + k + r), "read-only page");
                if (munmap(s + 2 * page, n - 2 * page) != 0) fail("munmap tail");
                n = 2 * page;
            }
            if (r + 1 < rounds) {
                if (munmap(s, n) != 0) fail("munmap");
            } else {
                keep[k] = s;
                keep_len[k] = n;
            }
        }
        /* malloc still works beside them */
        char *text = malloc(1000);
        if (!text) fail("malloc");
        snprintf(text, 1000, "round %d", r);
        for (const char *c = text; *c; c++) sum = (sum ^ (unsigned char)*c) * 1099511628211ULL;
        free(text);
    }
    for (int k = 0; k < 4; k++)
        if (keep[k]) check(keep[k], page, keep[k][0], "kept mapping");
    for (int k = 0; k < 4; k++)
        sum = (sum ^ keep_len[k]) * 1099511628211ULL;
    printf("maps ok %016llx\n", (unsigned long long)sum);
    return 0;
}
