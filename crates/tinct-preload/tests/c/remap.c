/* mremap growth of anonymous mappings for the tinct-preload tests (issue
 * 27): a mapping of N pages, filled, grown to 4N pages with
 * MREMAP_MAYMOVE, with the pages after it free (grows in place) or taken
 * by another mapping (must move). One line per case: whether the old
 * contents are kept, the new part reads as zeros, and the old pages kept
 * their physical frames (read from /proc/self/pagemap: needs root). The
 * kernel's mremap moves page-table entries, so every answer is yes under
 * glibc; the output does not depend on addresses. Then a partial old_len:
 * the rest of the mapping stays, contents and all.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static size_t page;

static void fail(const char *what) {
    perror(what);
    exit(1);
}

/* The physical frame of the page at `p` (0 if not present). */
static uint64_t frame_of(const void *p) {
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0) fail("open pagemap");
    uint64_t entry = 0;
    if (pread(fd, &entry, sizeof entry, (off_t)((uintptr_t)p / page * sizeof entry)) !=
        (ssize_t)sizeof entry)
        fail("pread pagemap");
    close(fd);
    return entry & ((1ULL << 55) - 1);
}

static void grow(size_t pages, int blocked) {
    size_t n = pages * page;
    unsigned char *a = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) fail("mmap");
    unsigned char *blocker = NULL;
    if (blocked) {
        /* The next mapping handed out follows `a` (the kernel's maps go
         * downwards, the shim's upwards: block both sides). */
        blocker = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (blocker == MAP_FAILED) fail("mmap blocker");
        blocker[0] = 1;
    }
    for (size_t i = 0; i < n; i++) a[i] = (unsigned char)(i * 7 + 1);
    uint64_t *frames = malloc(pages * sizeof *frames);
    for (size_t k = 0; k < pages; k++) frames[k] = frame_of(a + k * page);
    unsigned char *b = mremap(a, n, 4 * n, MREMAP_MAYMOVE);
    if (b == MAP_FAILED) fail("mremap");
    int kept = 1, zero = 1, same = 1;
    for (size_t i = 0; i < n; i++) kept &= b[i] == (unsigned char)(i * 7 + 1);
    for (size_t i = n; i < 4 * n; i++) zero &= b[i] == 0;
    for (size_t k = 0; k < pages; k++) same &= frames[k] != 0 && frame_of(b + k * page) == frames[k];
    printf("%zu pages, %s: contents %s, new part %s, old frames %s\n", pages,
           blocked ? "blocked" : "free after", kept ? "kept" : "LOST",
           zero ? "zero" : "NOT ZERO", same ? "kept" : "CHANGED");
    free(frames);
    if (munmap(b, 4 * n) != 0) fail("munmap");
    if (blocker != NULL && munmap(blocker, page) != 0) fail("munmap blocker");
}

/* A partial `old_len`: only the first `head` pages of a mapping of
 * `pages` are remapped (shrunk to one page, or moved and grown to 4 ×
 * `pages`); the rest of the mapping stays where it is, contents and all,
 * even after another mapping of as many pages is made and filled. */
static void partial(size_t pages, size_t head, int grow_it) {
    size_t n = pages * page, h = head * page;
    unsigned char *a = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED) fail("mmap");
    for (size_t i = 0; i < n; i++) a[i] = (unsigned char)(i * 5 + 3);
    unsigned char *b = grow_it ? mremap(a, h, 4 * n, MREMAP_MAYMOVE) : mremap(a, h, page, 0);
    if (b == MAP_FAILED) fail("mremap partial");
    unsigned char *other = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (other == MAP_FAILED) fail("mmap other");
    for (size_t i = 0; i < n; i++) other[i] = 0xEE;
    size_t moved = grow_it ? h : page;
    int kept = 1, rest = 1;
    for (size_t i = 0; i < moved; i++) kept &= b[i] == (unsigned char)(i * 5 + 3);
    for (size_t i = h; i < n; i++) rest &= a[i] == (unsigned char)(i * 5 + 3);
    printf("%zu of %zu pages %s: moved part %s, the rest %s\n", head, pages,
           grow_it ? "grown" : "shrunk", kept ? "kept" : "LOST", rest ? "kept" : "LOST");
    if (munmap(other, n) != 0) fail("munmap other");
    if (munmap(a + h, n - h) != 0) fail("munmap rest");
    if (munmap(b, grow_it ? 4 * n : page) != 0) fail("munmap moved");
}

int main(void) {
    page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t sizes[] = {1, 3, 16, 64};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        grow(sizes[s], 0);
        grow(sizes[s], 1);
    }
    partial(8, 4, 0);
    partial(8, 4, 1);
    partial(16, 3, 1);
    printf("done\n");
    return 0;
}
