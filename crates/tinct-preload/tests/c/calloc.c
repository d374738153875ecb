/* calloc for the tinct-preload tests (issue 27).
 *
 * usage: calloc rss MIB    calloc MIB MiB, touch two bytes, print how much
 *                          the resident set grew: "grew KIB of KIB".
 *                          Memory fresh from the kernel is zero already;
 *                          glibc does not write it, and the resident set
 *                          grows by a few pages.
 *        calloc zeros      calloc blocks of many sizes, fresh and recycled
 *                          (each is filled with a pattern and freed before
 *                          the next round), and check every byte is zero;
 *                          prints "ok" (exit 1 on a non-zero byte).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* VmRSS of /proc/self/status in KiB (-1 if unreadable). Reads with a
 * buffer on the stack: nothing is allocated between the two readings. */
static long resident_kib(void) {
    char buffer[4096];
    FILE *status = fopen("/proc/self/status", "r");
    long kib = -1;
    if (status == NULL) return -1;
    setvbuf(status, NULL, _IONBF, 0);
    while (fgets(buffer, sizeof buffer, status) != NULL) {
        if (strncmp(buffer, "VmRSS:", 6) == 0) kib = strtol(buffer + 6, NULL, 10);
    }
    fclose(status);
    return kib;
}

static int rss(size_t mib) {
    size_t size = mib << 20;
    long before = resident_kib();
    volatile unsigned char *block = calloc(1, size);
    if (block == NULL) {
        fprintf(stderr, "calloc(1, %zu MiB) failed\n", mib);
        return 1;
    }
    block[size / 2] = 1;
    block[size - 1] = 2;
    if (block[0] != 0 || block[size / 4] != 0 || block[size / 2 + 4096] != 0) {
        fprintf(stderr, "calloc returned non-zero bytes\n");
        return 1;
    }
    long after = resident_kib();
    if (before < 0 || after < 0) return 1;
    printf("grew %ld of %zu\n", after - before, size >> 10);
    free((void *)block);
    return 0;
}

static int zeros(void) {
    static const size_t sizes[] = {
        1, 16, 100, 2048, 2049, 4095, 4096, 4097, 12288, 65536, 100000, 1 << 20, (3 << 20) + 7,
    };
    for (int round = 0; round < 4; round++) {
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            size_t size = sizes[i];
            unsigned char *block = calloc(size, 1);
            if (block == NULL) {
                fprintf(stderr, "calloc(%zu, 1) failed\n", size);
                return 1;
            }
            for (size_t j = 0; j < size; j++) {
                if (block[j] != 0) {
                    fprintf(stderr, "round %d: calloc(%zu, 1): byte %zu is %#x\n", round, size, j,
                            block[j]);
                    return 1;
                }
            }
            memset(block, 0xa5, size);
            free(block);
        }
    }
    printf("ok\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "rss") == 0) return rss(strtoul(argv[2], NULL, 10));
    if (argc == 2 && strcmp(argv[1], "zeros") == 0) return zeros();
    fprintf(stderr, "usage: %s rss MIB | zeros\n", argv[0]);
    return 2;
}
