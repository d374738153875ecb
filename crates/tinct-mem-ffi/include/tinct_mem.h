/*
 * tinct_mem.h - colored, bank-aware memory for C programs.
 *
 * A pool is one anonymous mapping whose 4 KiB pages were translated once
 * through /proc/self/pagemap and filed by physical cache color (and DRAM
 * bank / controller). Allocations take memory only from pages of the colors
 * you name; a request over several colors takes the same number of pages
 * from each color, round robin (Kim et al., RTAS 2013, Section III-C), and
 * freed pages are reused before never-used ones.
 *
 * Link with -ltinct_mem_ffi (shared: libtinct_mem_ffi.so; static:
 * libtinct_mem_ffi.a, which also needs -lpthread -ldl -lm); both are built
 * by `cargo build -p tinct-mem-ffi` into target/<profile>/. Reading frame numbers needs root or
 * CAP_SYS_ADMIN; without it tinct_pool_create fails with an explanation
 * unless TINCT_POOL_UNCOLORED is given.
 *
 * Errors: functions return NULL, 0 or -1 and set a per-thread message,
 * read with tinct_last_error(). All functions are thread-safe except
 * tinct_pool_destroy, which must be the last call on a pool.
 */
#ifndef TINCT_MEM_H
#define TINCT_MEM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque pool handle. */
typedef struct tinct_pool tinct_pool;

/* tinct_pool_create flags. */
#define TINCT_POOL_LOCK      1u /* mlock the pool (needs RLIMIT_MEMLOCK or CAP_IPC_LOCK) */
#define TINCT_POOL_UNCOLORED 2u /* run even without frame numbers: no placement control */
#define TINCT_POOL_INTERLEAVE 4u /* tinct_pool_create_banked: controller-interleaved pool */

/* Fallback modes of the bank-aware allocator (Chandru & Mueller, Alg. 1);
 * 0 is EXACT: the requested bank or nothing. */
#define TINCT_CONTROLLER_RESTRICTED   1u /* the controller's bank with the most free chunks */
#define TINCT_CONTROLLER_UNRESTRICTED 2u /* the fullest controller, then its fullest bank */
#define TINCT_SPLIT                   4u /* the first run of free pages, any bank */

/* What one bank-aware request got: pages per step of Algorithm 1. */
typedef struct tinct_bank_steps {
    uint64_t exact;                   /* from the requested controller and bank */
    uint64_t controller_restricted;   /* from another bank of that controller */
    uint64_t controller_unrestricted; /* from another controller */
    uint64_t split;                   /* from the SPLIT fallback */
    uint32_t furthest;                /* 0 exact, 1 restricted, 2 unrestricted, 3 split */
} tinct_bank_steps;

/* Pool totals. */
typedef struct tinct_stats {
    uint64_t page_size;   /* bytes */
    uint64_t total_pages;
    uint64_t free_pages;
    uint64_t used_pages;
    uint32_t colors;      /* number of page colors of the pool's mapping */
    uint32_t banks;       /* DRAM banks per controller (1 if not configured) */
    uint32_t controllers; /* DRAM controllers (1 if not configured) */
    uint32_t uncolored;   /* 1: frame numbers were unreadable, colors are not real */
} tinct_stats;

/* Free and used pages of one color. */
typedef struct tinct_counts {
    uint64_t free;
    uint64_t used;
} tinct_counts;

/*
 * Creates a pool of `size` bytes (rounded up to pages). Colors come from
 * the environment's TINCT_COLOR_BITS (e.g. "12-16") when set, else from
 * this machine's last-level cache under the rule `tinct doctor` prints:
 * colors = way size / page size, selected by physical address bits
 * [12, log2(way size)), or for a sliced cache only the bits below the
 * slice hash (one slice's way). Returns NULL on error.
 */
tinct_pool *tinct_pool_create(size_t size, uint32_t flags);

/*
 * Creates a pool with explicit address functions. Each function is an XOR
 * mask (as DRAMA prints them, e.g. 0x2040): output bit i of the color
 * (bank, controller) index is the parity of (physical address & mask[i]).
 * Masks must only use bits >= 12 (page granular). Any array may be NULL
 * with count 0 (no colors / one bank / one controller).
 */
tinct_pool *tinct_pool_create_with(size_t size, uint32_t flags,
                                   const uint64_t *color_masks, size_t ncolor_masks,
                                   const uint64_t *bank_masks, size_t nbank_masks,
                                   const uint64_t *controller_masks, size_t ncontroller_masks);

/*
 * A pool for the bank-aware allocator (Chandru & Mueller, Algorithm 1):
 * address functions as in tinct_pool_create_with, chunks of `chunk_size`
 * bytes (0: the paper's 8 KiB; a power of two of at least a page; no bank
 * or controller function may read a bit inside a chunk), and with
 * TINCT_POOL_INTERLEAVE in `flags` the paper's controller-interleaved pool
 * (populated over all NUMA nodes; every controller keeps the same number
 * of free chunks).
 */
tinct_pool *tinct_pool_create_banked(size_t size, uint32_t flags,
                                     const uint64_t *color_masks, size_t ncolor_masks,
                                     const uint64_t *bank_masks, size_t nbank_masks,
                                     const uint64_t *controller_masks, size_t ncontroller_masks,
                                     size_t chunk_size);

/* The mode mask of comma-separated names: "exact", "restricted",
 * "unrestricted", "split", "all" (e.g. "restricted,split"); -1 on error. */
int64_t tinct_bank_modes(const char *names);

/* Destroys a pool; every pointer from it becomes invalid. NULL is a no-op. */
void tinct_pool_destroy(tinct_pool *pool);

/*
 * Allocates `size` bytes, 16-byte aligned, from pages of the `ncolors`
 * colors in `colors` (distinct values in 0..colors-1). Sizes up to 2048
 * bytes share pages of one size class; up to one page take a whole page;
 * larger sizes are contiguous spans of whole pages, every one of them in
 * the given colors. Returns NULL on error (e.g. the colors are exhausted).
 */
void *tinct_alloc_colored(tinct_pool *pool, const uint32_t *colors, size_t ncolors, size_t size);

/* As tinct_alloc_colored, aligned to `align` (a power of two). */
void *tinct_alloc_colored_aligned(tinct_pool *pool, const uint32_t *colors, size_t ncolors,
                                  size_t size, size_t align);

/*
 * A contiguous, page-aligned buffer of `size` bytes (whole pages) whose
 * pages are chosen chunk by chunk for DRAM `controller` and `bank` (of the
 * pool's bank/controller functions): first the requested bank; then, as
 * `modes` allow, the controller's other banks and the other controllers in
 * descending order of free chunks, then the first free pages. All or
 * nothing. If `fallback_pages` is not NULL it receives the number of pages
 * not taken from the requested bank. Free with tinct_free; tinct_realloc
 * refuses it.
 */
void *tinct_alloc_bank(tinct_pool *pool, uint32_t controller, uint32_t bank, size_t size,
                       uint32_t modes, size_t *fallback_pages);

/* As tinct_alloc_bank; `steps` (if not NULL) receives the pages each step
 * of Algorithm 1 served. */
void *tinct_alloc_bank_steps(tinct_pool *pool, uint32_t controller, uint32_t bank, size_t size,
                             uint32_t modes, tinct_bank_steps *steps);

/*
 * Resizes an allocation keeping its colors and contents (up to the smaller
 * size); may return the same pointer. `ptr` must not be NULL. On error
 * returns NULL and the old allocation is untouched.
 */
void *tinct_realloc(tinct_pool *pool, void *ptr, size_t size);

/* Frees an allocation; NULL is a no-op. Returns 0, or -1 for a pointer the
 * pool did not hand out (or one already freed, for whole pages and spans). */
int tinct_free(tinct_pool *pool, void *ptr);

/* Bytes usable at `ptr` (>= the size asked for); 0 on error. */
size_t tinct_usable_size(tinct_pool *pool, const void *ptr);

/*
 * Color of the page holding `ptr` under the pool's mapping, translated now
 * through /proc/self/pagemap (so it checks, not trusts, the pool). -1 on
 * error (page not present, frame numbers unreadable).
 */
int64_t tinct_page_color(tinct_pool *pool, const void *ptr);

/* Number of colors of the pool's mapping (0 for NULL). */
uint32_t tinct_pool_colors(const tinct_pool *pool);

/* Fills *out with the pool's totals. Returns 0, or -1. */
int tinct_pool_stats(const tinct_pool *pool, tinct_stats *out);

/* Fills *out with the free/used pages of `color`. Returns 0, or -1. */
int tinct_pool_color_counts(const tinct_pool *pool, uint32_t color, tinct_counts *out);

/* Fills *out with the free/used pages of one (controller, bank). Returns 0, or -1. */
int tinct_pool_bank_counts(const tinct_pool *pool, uint32_t controller, uint32_t bank,
                           tinct_counts *out);

/*
 * The message of the last failed call on this thread ("" if none). Valid
 * until the next failing call on this thread.
 */
const char *tinct_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* TINCT_MEM_H */
