/* Ways a process ends, for the tinct-preload tests of the exit reports.
 *
 * usage: exits _exit     allocate, then _exit(0): no exit handlers run.
 *        exits _Exit     allocate, then _Exit(0).
 *        exits vfork     allocate; a vfork child calls _exit(0) at once
 *                        (it shares the parent's memory); the parent waits
 *                        for it, prints "child PID" and returns from main.
 *        exits fork      the same with fork: the child skips its parent's
 *                        exit handlers with _exit(0).
 *        exits pause     allocate, print "ready" and wait for a signal
 *                        (one whose default ends the process ends it).
 *        exits line      allocate, print "ready", read a line from stdin
 *                        and return from main (a normal exit).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    char *block = malloc(100000);
    if (block == NULL) return 1;
    memset(block, 1, 100000);
    if (strcmp(argv[1], "_exit") == 0) _exit(0);
    if (strcmp(argv[1], "_Exit") == 0) _Exit(0);
    if (strcmp(argv[1], "vfork") == 0 || strcmp(argv[1], "fork") == 0) {
        pid_t child = strcmp(argv[1], "vfork") == 0 ? vfork() : fork();
        if (child == 0) _exit(0);
        if (child < 0) return 1;
        int status = 0;
        if (waitpid(child, &status, 0) != child || status != 0) return 1;
        printf("child %d\n", (int)child);
        return 0;
    }
    if (strcmp(argv[1], "line") == 0) {
        char line[64];
        printf("ready\n");
        fflush(stdout);
        return fgets(line, sizeof line, stdin) == NULL;
    }
    if (strcmp(argv[1], "pause") == 0) {
        printf("ready\n");
        fflush(stdout);
        for (;;) pause();
    }
    return 2;
}
