/* Copy-on-write after fork, for the tinct-preload tests.
 *
 * usage: cow MIB
 *
 * Fills a MIB-MiB heap block, forks a child that keeps it until the parent
 * says (a pipe: not a sleep, which a loaded machine can outlast) and
 * leaves with _exit, and writes the whole block again in the parent while
 * the child is alive: the kernel copies every page for whichever process
 * writes first. Prints a checksum of the block.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    size_t bytes = (size_t)(argc > 1 ? atoi(argv[1]) : 4) << 20;
    unsigned char *block = malloc(bytes);
    if (!block) return 1;
    memset(block, 1, bytes);
    int written[2];
    if (pipe(written) != 0) return 1;
    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        char done;
        close(written[1]);
        /* Alive until the parent has written the whole block. */
        if (read(written[0], &done, 1) != 1) _exit(4);
        _exit(block[bytes / 2] == 1 ? 0 : 3);
    }
    close(written[0]);
    memset(block, 2, bytes);
    if (write(written[1], "w", 1) != 1) return 1;
    close(written[1]);
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "cow: the child failed (%d)\n", status);
        return 1;
    }
    uint64_t sum = 0;
    for (size_t i = 0; i < bytes; i += 4096) sum += block[i];
    printf("cow ok %llu\n", (unsigned long long)sum);
    return 0;
}
