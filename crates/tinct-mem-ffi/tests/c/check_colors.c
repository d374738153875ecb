/*
 * Allocates colored memory through the C ABI and checks, through its own
 * read of /proc/self/pagemap, that every page lies in the requested colors.
 * Exit status 0 on success; prints the reason and exits 1 otherwise.
 */
#define _XOPEN_SOURCE 700
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tinct_mem.h"

#define COLOR_BITS 4 /* colors from physical address bits 12..15 */
#define NCOLORS (1u << COLOR_BITS)

static int pagemap_fd = -1;
static long page_size = 0;
static unsigned long pages_checked = 0;

#define FAIL(...)                                                                  \
    do {                                                                           \
        fprintf(stderr, "check_colors: " __VA_ARGS__);                             \
        fprintf(stderr, " (last error: %s)\n", tinct_last_error());                \
        exit(1);                                                                   \
    } while (0)

/* Color of the page holding `address`, from our own pagemap read. */
static uint32_t color_of(const void *address) {
    uint64_t entry = 0;
    off_t offset = (off_t)((uintptr_t)address / (uintptr_t)page_size) * 8;
    if (pread(pagemap_fd, &entry, sizeof entry, offset) != (ssize_t)sizeof entry)
        FAIL("pread pagemap at %p failed", address);
    if (!(entry >> 63))
        FAIL("page %p not present", address);
    uint64_t frame = entry & ((1ull << 55) - 1);
    if (frame == 0)
        FAIL("frame number reads 0: not root?");
    return (uint32_t)(frame & (NCOLORS - 1));
}

/* Every page of [ptr, ptr+size) must have a color in `colors`; counts[c]++. */
static void check_range(tinct_pool *pool, const void *ptr, size_t size, const uint32_t *colors,
                        size_t ncolors, unsigned *counts) {
    uintptr_t first = (uintptr_t)ptr / (uintptr_t)page_size * (uintptr_t)page_size;
    for (uintptr_t page = first; page < (uintptr_t)ptr + size; page += (uintptr_t)page_size) {
        uint32_t color = color_of((const void *)page);
        int wanted = 0;
        for (size_t i = 0; i < ncolors; i++)
            wanted |= colors[i] == color;
        if (!wanted)
            FAIL("page %p has color %u, not requested", (void *)page, color);
        if (tinct_page_color(pool, (const void *)page) != (int64_t)color)
            FAIL("tinct_page_color disagrees at %p", (void *)page);
        if (counts)
            counts[color]++;
        pages_checked++;
    }
}

int main(void) {
    page_size = sysconf(_SC_PAGESIZE);
    pagemap_fd = open("/proc/self/pagemap", O_RDONLY);
    if (pagemap_fd < 0)
        FAIL("cannot open /proc/self/pagemap");

    uint64_t color_masks[COLOR_BITS];
    for (int i = 0; i < COLOR_BITS; i++)
        color_masks[i] = 1ull << (12 + i);
    tinct_pool *pool = tinct_pool_create_with(16u << 20, 0, color_masks, COLOR_BITS, NULL, 0, NULL, 0);
    if (!pool)
        FAIL("tinct_pool_create_with failed");
    if (tinct_pool_colors(pool) != NCOLORS)
        FAIL("expected %u colors, got %u", NCOLORS, tinct_pool_colors(pool));

    /* The two colors with the most free pages (frames of a small pool are
     * far from uniform over colors on a busy machine). */
    uint32_t colors[2] = {0, 1};
    uint64_t best[2] = {0, 0};
    for (uint32_t color = 0; color < NCOLORS; color++) {
        tinct_counts c;
        if (tinct_pool_color_counts(pool, color, &c) != 0)
            FAIL("tinct_pool_color_counts(%u) failed", color);
        if (c.free > best[0]) {
            best[1] = best[0], colors[1] = colors[0];
            best[0] = c.free, colors[0] = color;
        } else if (c.free > best[1]) {
            best[1] = c.free, colors[1] = color;
        }
    }
    if (best[1] < 60)
        FAIL("too few pages in the two fullest colors: %llu", (unsigned long long)best[1]);
    unsigned counts[NCOLORS] = {0};

    /* Small objects. */
    void *small[200];
    for (int i = 0; i < 200; i++) {
        small[i] = tinct_alloc_colored(pool, colors, 2, 8 + (size_t)i * 7);
        if (!small[i])
            FAIL("small allocation %d failed", i);
        memset(small[i], i, 8 + (size_t)i * 7);
        if (tinct_usable_size(pool, small[i]) < 8 + (size_t)i * 7)
            FAIL("usable size too small");
        check_range(pool, small[i], 8 + (size_t)i * 7, colors, 2, NULL);
    }

    /* A multi-page span: equal pages per color (13 pages: 7 and 6). */
    size_t big_size = 13 * (size_t)page_size;
    unsigned char *big = tinct_alloc_colored(pool, colors, 2, big_size);
    if (!big)
        FAIL("span allocation failed");
    memset(big, 0xAB, big_size);
    check_range(pool, big, big_size, colors, 2, counts);
    int diff = (int)counts[colors[0]] - (int)counts[colors[1]];
    if (counts[colors[0]] + counts[colors[1]] != 13 || diff < -1 || diff > 1)
        FAIL("unequal pages per color: %u and %u", counts[colors[0]], counts[colors[1]]);

    /* Aligned allocation and realloc keep colors and contents. */
    void *aligned = tinct_alloc_colored_aligned(pool, colors, 2, 100, 256);
    if (!aligned || (uintptr_t)aligned % 256 != 0)
        FAIL("aligned allocation failed");
    unsigned char *grown = tinct_realloc(pool, big, 20 * (size_t)page_size);
    if (!grown)
        FAIL("realloc failed");
    for (size_t i = 0; i < big_size; i++)
        if (grown[i] != 0xAB)
            FAIL("realloc lost byte %zu", i);
    check_range(pool, grown, 20 * (size_t)page_size, colors, 2, NULL);

    /* Statistics and errors. */
    tinct_stats stats;
    if (tinct_pool_stats(pool, &stats) != 0 || stats.used_pages == 0 || stats.uncolored)
        FAIL("unexpected stats");
    tinct_counts color_counts;
    if (tinct_pool_color_counts(pool, colors[1], &color_counts) != 0 || color_counts.used == 0)
        FAIL("unexpected color counts");
    int local = 0;
    if (tinct_free(pool, &local) != -1 || strlen(tinct_last_error()) == 0)
        FAIL("freeing a foreign pointer must fail with a message");
    const uint32_t bad_color[1] = {NCOLORS};
    if (tinct_alloc_colored(pool, bad_color, 1, 10) != NULL)
        FAIL("an out-of-range color must fail");

    for (int i = 0; i < 200; i++)
        if (tinct_free(pool, small[i]) != 0)
            FAIL("free %d failed", i);
    if (tinct_free(pool, grown) != 0 || tinct_free(pool, aligned) != 0)
        FAIL("free failed");
    tinct_pool_destroy(pool);

    /* Bank-aware spans: banks from bits 14-15, controller from bit 16. */
    const uint64_t bank_masks[2] = {1ull << 14, 1ull << 15};
    const uint64_t controller_masks[1] = {1ull << 16};
    tinct_pool *banked = tinct_pool_create_with(8u << 20, 0, NULL, 0, bank_masks, 2, controller_masks, 1);
    if (!banked)
        FAIL("tinct_pool_create_with (banks) failed");
    unsigned want_controller = 0, want_bank = 0;
    uint64_t most = 0;
    for (unsigned c = 0; c < 2; c++)
        for (unsigned b = 0; b < 4; b++) {
            tinct_counts counts_cb;
            if (tinct_pool_bank_counts(banked, c, b, &counts_cb) != 0)
                FAIL("tinct_pool_bank_counts failed");
            if (counts_cb.free > most)
                most = counts_cb.free, want_controller = c, want_bank = b;
        }
    size_t fallback = 99;
    size_t span_size = 6 * (size_t)page_size;
    unsigned char *in_bank =
        tinct_alloc_bank(banked, want_controller, want_bank, span_size, 0, &fallback);
    if (!in_bank || fallback != 0)
        FAIL("tinct_alloc_bank failed (fallback %zu)", fallback);
    memset(in_bank, 0x11, span_size);
    for (size_t offset = 0; offset < span_size; offset += (size_t)page_size) {
        uint64_t entry = 0;
        off_t at = (off_t)(((uintptr_t)in_bank + offset) / (uintptr_t)page_size) * 8;
        if (pread(pagemap_fd, &entry, sizeof entry, at) != (ssize_t)sizeof entry)
            FAIL("pread pagemap failed");
        uint64_t address = (entry & ((1ull << 55) - 1)) * (uint64_t)page_size;
        unsigned bank = (unsigned)((address >> 14) & 3), controller = (unsigned)((address >> 16) & 1);
        if (bank != want_bank || controller != want_controller)
            FAIL("page %zu is in controller %u bank %u, not %u/%u", offset, controller, bank,
                 want_controller, want_bank);
        pages_checked++;
    }
    if (tinct_realloc(banked, in_bank, 10) != NULL)
        FAIL("realloc of a bank span must fail");
    if (tinct_free(banked, in_bank) != 0)
        FAIL("free of a bank span failed");
    tinct_pool_destroy(banked);

    /* Algorithm 1's fallback modes: exhaust a bank (then a controller)
     * and check where each mode goes, by the program's own arithmetic. */
    if (tinct_bank_modes("restricted,split") != (int64_t)(TINCT_CONTROLLER_RESTRICTED | TINCT_SPLIT) ||
        tinct_bank_modes("exact") != 0 || tinct_bank_modes("sideways") != -1 ||
        strstr(tinct_last_error(), "sideways") == NULL)
        FAIL("tinct_bank_modes names");
    tinct_pool *modes_pool = tinct_pool_create_banked(8u << 20, TINCT_POOL_INTERLEAVE, NULL, 0,
                                                      bank_masks, 2, controller_masks, 1, 0);
    if (!modes_pool)
        FAIL("tinct_pool_create_banked failed: %s", tinct_last_error());
    const unsigned c0 = 0, b0 = 1;
    size_t drained = 0;
    while (tinct_alloc_bank(modes_pool, c0, b0, (size_t)page_size, 0, NULL) != NULL)
        drained++;
    if (drained == 0)
        FAIL("bank %u/%u had no chunk", c0, b0);
    tinct_bank_steps steps;
    struct { uint32_t modes; unsigned want_furthest; } cases[] = {
        {TINCT_CONTROLLER_RESTRICTED, 1}, {TINCT_SPLIT, 3}};
    for (unsigned k = 0; k < 2; k++) {
        unsigned char *got = tinct_alloc_bank_steps(modes_pool, c0, b0, (size_t)page_size,
                                                    cases[k].modes, &steps);
        if (!got || steps.furthest != cases[k].want_furthest || steps.exact != 0)
            FAIL("mode %u: furthest %u exact %lu", cases[k].modes, steps.furthest,
                 (unsigned long)steps.exact);
        uint64_t entry = 0;
        off_t at = (off_t)((uintptr_t)got / (uintptr_t)page_size) * 8;
        if (pread(pagemap_fd, &entry, sizeof entry, at) != (ssize_t)sizeof entry)
            FAIL("pread pagemap failed");
        uint64_t address = (entry & ((1ull << 55) - 1)) * (uint64_t)page_size;
        unsigned bank = (unsigned)((address >> 14) & 3), controller = (unsigned)((address >> 16) & 1);
        if (cases[k].modes == TINCT_CONTROLLER_RESTRICTED &&
            (controller != c0 || bank == b0 || steps.controller_restricted != 1))
            FAIL("restricted went to %u/%u (%lu pages)", controller, bank,
                 (unsigned long)steps.controller_restricted);
        if (cases[k].modes == TINCT_SPLIT && steps.split != 1)
            FAIL("split served %lu pages", (unsigned long)steps.split);
        pages_checked++;
    }
    /* Drain the whole controller: unrestricted moves to the other one. */
    while (tinct_alloc_bank(modes_pool, c0, b0, (size_t)page_size, TINCT_CONTROLLER_RESTRICTED, NULL))
        drained++;
    unsigned char *other = tinct_alloc_bank_steps(modes_pool, c0, b0, (size_t)page_size,
                                                  TINCT_CONTROLLER_UNRESTRICTED, &steps);
    if (!other || steps.furthest != 2 || steps.controller_unrestricted != 1)
        FAIL("unrestricted: furthest %u", steps.furthest);
    {
        uint64_t entry = 0;
        off_t at = (off_t)((uintptr_t)other / (uintptr_t)page_size) * 8;
        if (pread(pagemap_fd, &entry, sizeof entry, at) != (ssize_t)sizeof entry)
            FAIL("pread pagemap failed");
        uint64_t address = (entry & ((1ull << 55) - 1)) * (uint64_t)page_size;
        if (((address >> 16) & 1) == c0)
            FAIL("unrestricted stayed in the drained controller %u", c0);
        pages_checked++;
    }
    if (tinct_alloc_bank(modes_pool, c0, b0, (size_t)page_size, 0, NULL) != NULL)
        FAIL("exact must still fail on the drained bank");
    tinct_pool_destroy(modes_pool);

    /* The machine's colors: TINCT_COLOR_BITS when set (the test sets
     * 12-20: 512 colors), else its own LLC's. */
    tinct_pool *machine = tinct_pool_create(4u << 20, 0);
    if (!machine || tinct_pool_colors(machine) == 0)
        FAIL("tinct_pool_create failed");
    const char *given = getenv("TINCT_COLOR_BITS");
    if (given && strcmp(given, "12-20") == 0 && tinct_pool_colors(machine) != 512)
        FAIL("TINCT_COLOR_BITS=12-20: expected 512 colors, got %u", tinct_pool_colors(machine));
    tinct_pool_destroy(machine);

    printf("tinct_mem C ABI ok: %lu pages checked\n", pages_checked);
    return 0;
}
