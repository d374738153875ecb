/* Copy-on-write after fork, for the tinct-preload tests.
 *
 * usage: cow MIB
 *
 * Fills a MIB-MiB heap block, forks a child that keeps it for 300 ms and
 * leaves with _exit, and writes the whole block again in the parent
 * while the child is alive: the kernel copies every page for whichever
 * process writes first. Prints a checksum of the block.
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
    pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
        usleep(300000);
        _exit(block[bytes / 2] == 1 ? 0 : 3);
    }
    memset(block, 2, bytes);
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
