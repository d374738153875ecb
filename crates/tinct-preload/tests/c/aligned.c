/* Edge cases of the aligned allocations (and of malloc, calloc, realloc)
 * for the tinct-preload tests (issue 27). One line per call: what it
 * returned (a block, aligned as glibc's own rounding promises or not, or
 * NULL with errno; posix_memalign's return value and whether it left
 * *memptr alone). The output does not depend on addresses, so it must be
 * byte-identical under glibc and under the shim.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *error_name(int error) {
    switch (error) {
    case 0: return "0";
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    default: return "other";
    }
}

/* The alignment glibc's _mid_memalign gives for `align`: malloc's 16 up to
 * 16, else the next power of two. */
static size_t promised(size_t align) {
    size_t a = 16;
    while (a < align && a != 0) a <<= 1;
    return a == 0 ? SIZE_MAX : a;
}

/* Prints what `p` is, writes its `size` bytes (up to 1 MiB) and frees it. */
static void report(const char *call, size_t align, size_t size, void *p, int error) {
    if (p == NULL) {
        printf("%s(%zu, %zu): NULL, errno %s\n", call, align, size, error_name(error));
        return;
    }
    int aligned = promised(align) != SIZE_MAX && (uintptr_t)p % promised(align) == 0;
    size_t touch = size < (1 << 20) ? size : (1 << 20);
    memset(p, 0x5a, touch);
    int usable = malloc_usable_size(p) >= touch;
    printf("%s(%zu, %zu): block, %s, %s\n", call, align, size,
           aligned ? "aligned" : "MISALIGNED", usable ? "usable" : "TOO SMALL");
    free(p);
}

int main(void) {
    const size_t big = SIZE_MAX / 2 + 1; /* 2^63 */
    const size_t alignments[] = {
        0, 1, 2, 3, 8, 9, 16, 17, 24, 31, 32, 48, 64, 100, 4096, 4097, 1 << 16, 1 << 20,
        4 << 20, big, big + 1, SIZE_MAX,
    };
    const size_t sizes[] = {0, 1, 9, 100, 5000, (size_t)PTRDIFF_MAX + 1, SIZE_MAX};
    for (size_t i = 0; i < sizeof alignments / sizeof *alignments; i++) {
        for (size_t j = 0; j < sizeof sizes / sizeof *sizes; j++) {
            size_t align = alignments[i], size = sizes[j];
            errno = 0;
            void *p = aligned_alloc(align, size);
            report("aligned_alloc", align, size, p, errno);
            errno = 0;
            p = memalign(align, size);
            report("memalign", align, size, p, errno);
            void *out = &errno; /* a sentinel: must stay unless 0 is returned */
            int result = posix_memalign(&out, align, size);
            if (result == 0) {
                report("posix_memalign", align, size, out, 0);
            } else {
                printf("posix_memalign(%zu, %zu): %s, %s\n", align, size, error_name(result),
                       out == (void *)&errno ? "*memptr kept" : "*memptr CHANGED");
            }
        }
    }
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t more_sizes[] = {0, 1, 5000, SIZE_MAX - page, SIZE_MAX};
    for (size_t j = 0; j < sizeof more_sizes / sizeof *more_sizes; j++) {
        size_t size = more_sizes[j];
        errno = 0;
        void *p = valloc(size);
        report("valloc", page, size, p, errno);
        errno = 0;
        p = pvalloc(size);
        report("pvalloc", page, size, p, errno);
        errno = 0;
        p = malloc(size);
        report("malloc", 16, size, p, errno);
        errno = 0;
        p = calloc(size, 1);
        report("calloc(n, 1)", 16, size, p, errno);
        errno = 0;
        p = calloc(size, 3);
        report("calloc(n, 3)", 16, size, p, errno);
        errno = 0;
        p = realloc(NULL, size);
        report("realloc(NULL, n)", 16, size, p, errno);
        errno = 0;
        p = reallocarray(NULL, size, 3);
        report("reallocarray(NULL, n, 3)", 16, size, p, errno);
    }
    void *p = malloc(100);
    errno = 0;
    /* (Through a volatile: the compiler refuses a constant that large.) */
    volatile size_t huge = SIZE_MAX;
    void *q = realloc(p, huge);
    printf("realloc(p, SIZE_MAX): %s, errno %s\n", q == NULL ? "NULL" : "block", error_name(errno));
    free(q == NULL ? p : q);
    p = malloc(100);
    printf("realloc(p, 0): %s\n", realloc(p, 0) == NULL ? "NULL" : "block");
    /* On live blocks of each kind (small, a run of pages): a failed
     * realloc/reallocarray keeps the block and its contents; reallocarray
     * by 0 frees it; errno is left alone by calls that succeed and by free. */
    const size_t live_sizes[] = {24, 3000, 70000, 1 << 20};
    for (size_t j = 0; j < sizeof live_sizes / sizeof *live_sizes; j++) {
        size_t size = live_sizes[j];
        errno = 12345;
        unsigned char *b = malloc(size);
        memset(b, 0x77, size);
        int kept_errno = errno == 12345;
        /* The block's address through a volatile: it stays live when the
         * calls below fail (the compiler assumes realloc freed it). */
        volatile uintptr_t at = (uintptr_t)b;
        q = realloc((void *)at, huge);
        int error = errno;
        q = reallocarray((void *)at, huge, 2);
        b = (unsigned char *)at;
        printf("live %zu: malloc %s errno, realloc(SIZE_MAX) %s errno %s, reallocarray(overflow) "
               "%s errno %s, contents %s\n",
               size, kept_errno ? "keeps" : "CHANGES", q == NULL ? "NULL" : "block",
               error_name(error), q == NULL ? "NULL" : "block", error_name(errno),
               b[0] == 0x77 && b[size - 1] == 0x77 ? "kept" : "LOST");
        errno = 12345;
        unsigned char *c = reallocarray(b, size, 2);
        printf("live %zu: reallocarray(x2) %s, errno %s, contents %s\n", size,
               c == NULL ? "NULL" : "block", errno == 12345 ? "kept" : "CHANGED",
               c != NULL && c[0] == 0x77 && c[size - 1] == 0x77 ? "kept" : "LOST");
        errno = 12345;
        free(malloc(size));
        int free_kept = errno == 12345;
        printf("live %zu: reallocarray(p, n, 0) %s, free keeps errno %s\n", size,
               reallocarray(c, size, 0) == NULL ? "NULL" : "block", free_kept ? "yes" : "NO");
    }
    printf("malloc_usable_size(NULL): %zu\n", malloc_usable_size(NULL));
    printf("done\n");
    return 0;
}
