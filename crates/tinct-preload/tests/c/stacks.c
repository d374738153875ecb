/* Threads and their stacks, for the tinct-preload tests of coloured
 * thread stacks.
 *
 * usage:
 *   stacks wait JOINABLE DETACHED
 *       starts JOINABLE joinable and DETACHED detached threads; each
 *       writes "stack 0xADDRESS" (a local array it has written) and waits;
 *       once all have, prints "ready" and waits for a line on stdin, then
 *       lets them end, joins the joinable ones and prints "done".
 *   stacks forkwait THREADS
 *       starts THREADS joinable threads; each writes "stack 0xADDRESS" and
 *       waits; "ready"; after a line on stdin the program forks a child
 *       that waits (sharing every page copy-on-write), the threads write
 *       their locals again, "written"; after another line the child ends,
 *       the threads are joined, "done".
 *   stacks loop ROUNDS
 *       ROUNDS times: a thread created and joined (in turn by
 *       pthread_join, pthread_tryjoin_np, pthread_timedjoin_np and
 *       pthread_clockjoin_np); every 50 rounds also 10 detached threads
 *       (and one pthread_detach'ed later), awaited.
 *       Prints "loop ROUNDS".
 *   stacks deep KIB
 *       a thread (default attributes, whose stack size the program sets
 *       to KIB + 2048 KiB with pthread_setattr_default_np: RLIMIT_STACK
 *       may be anything) recurses through KIB KiB of frames, writing
 *       each. Prints "deep KIB SUM".
 *   stacks forkthread
 *       a detached thread (coloured stack) forks while another detached
 *       thread waits; the child creates and joins a thread, then exits
 *       with exit(0) (its exit reports run); the forking thread checks
 *       the child's status. Prints "forkthread ok".
 *   stacks defaults
 *       sets the process's default thread attributes (3 MiB stack, 64 KiB
 *       guard: pthread_setattr_default_np); a thread created with no
 *       attributes finds both in pthread_getattr_np. Prints "defaults ok".
 *   stacks alarm MICROSECONDS
 *       64 detached threads wait (SIGALRM blocked) while the main thread
 *       creates and joins threads in a loop; after MICROSECONDS a SIGALRM
 *       handler calls _exit(0) wherever the main thread is (inside the
 *       shim's pthread_create or pthread_join too). Prints nothing.
 *   stacks vfork
 *       a detached thread waits; the main thread vforks a child that
 *       calls exit(0) (its exit handlers run in the parent's memory);
 *       then the thread is let go and runs on. Prints "vfork ok".
 *   stacks holey
 *       a thread unmaps a page of its stack's top (inside a local array
 *       it no longer uses) and ends; it is joined, then another thread is
 *       created and joined. Prints "holey ok".
 *   stacks protfork
 *       a thread makes a page of its stack's top read-only and waits;
 *       the program forks (the child _exits at once) and checks that the
 *       child ended with status 0. Prints "protfork ok".
 *   stacks own
 *       a thread on a stack of the program's own (pthread_attr_setstack):
 *       its local lies in it. Prints "own ok".
 *   stacks size KIB
 *       a thread with a stack size of KIB KiB: its stack (from
 *       pthread_getattr_np) is at least that large. Prints "size ok".
 * Exit status 1 with a message on any failure.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int reported, go, running;

static void die(const char *what) {
    fprintf(stderr, "stacks: %s\n", what);
    exit(1);
}

static void *waiter(void *arg) {
    volatile char local[8192];
    memset((char *)local, (int)(intptr_t)arg, sizeof local);
    pthread_mutex_lock(&mutex);
    printf("stack %p\n", (void *)local);
    fflush(stdout);
    reported++;
    pthread_cond_broadcast(&changed);
    while (!go) pthread_cond_wait(&changed, &mutex);
    running--;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&mutex);
    return (void *)(intptr_t)local[100];
}

static int wait_mode(int joinable, int detached) {
    pthread_t threads[256];
    if (joinable > 256) die("at most 256 joinable threads");
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    running = joinable + detached;
    for (int i = 0; i < joinable; i++)
        if (pthread_create(&threads[i], NULL, waiter, (void *)(intptr_t)(i + 1))) die("create");
    for (int i = 0; i < detached; i++) {
        pthread_t t;
        if (pthread_create(&t, &attr, waiter, (void *)(intptr_t)(i + 1))) die("create detached");
    }
    pthread_mutex_lock(&mutex);
    while (reported < joinable + detached) pthread_cond_wait(&changed, &mutex);
    pthread_mutex_unlock(&mutex);
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) die("no line on stdin");
    pthread_mutex_lock(&mutex);
    go = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&mutex);
    for (int i = 0; i < joinable; i++) {
        void *result;
        if (pthread_join(threads[i], &result)) die("join");
        if ((intptr_t)result != i + 1) die("wrong result");
    }
    pthread_mutex_lock(&mutex);
    while (running > 0) pthread_cond_wait(&changed, &mutex);
    pthread_mutex_unlock(&mutex);
    printf("done\n");
    return 0;
}

static int phase, rewritten;
/* The threads wait on this one alone, so a count reported to the main
 * thread (on `changed`) wakes no thread: none may run, and write its
 * stack, between the fork and the child's copies. */
static pthread_cond_t phase_changed = PTHREAD_COND_INITIALIZER;

static void *fork_waiter(void *arg) {
    volatile char local[8192];
    memset((char *)local, (int)(intptr_t)arg, sizeof local);
    pthread_mutex_lock(&mutex);
    printf("stack %p\n", (void *)local);
    fflush(stdout);
    reported++;
    pthread_cond_broadcast(&changed);
    while (phase < 1) pthread_cond_wait(&phase_changed, &mutex);
    pthread_mutex_unlock(&mutex);
    memset((char *)local, (int)(intptr_t)arg + 1, sizeof local);
    pthread_mutex_lock(&mutex);
    rewritten++;
    pthread_cond_broadcast(&changed);
    while (phase < 2) pthread_cond_wait(&phase_changed, &mutex);
    pthread_mutex_unlock(&mutex);
    return (void *)(intptr_t)local[100];
}

static int fork_mode(int count) {
    pthread_t threads[64];
    if (count > 64) die("at most 64 threads");
    for (int i = 0; i < count; i++)
        if (pthread_create(&threads[i], NULL, fork_waiter, (void *)(intptr_t)(i + 1))) die("create");
    pthread_mutex_lock(&mutex);
    while (reported < count) pthread_cond_wait(&changed, &mutex);
    pthread_mutex_unlock(&mutex);
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) die("no line on stdin");
    int ends[2];
    if (pipe(ends)) die("pipe");
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        char byte;
        close(ends[1]);
        while (read(ends[0], &byte, 1) > 0) {}
        _exit(0);
    }
    close(ends[0]);
    pthread_mutex_lock(&mutex);
    phase = 1;
    pthread_cond_broadcast(&phase_changed);
    while (rewritten < count) pthread_cond_wait(&changed, &mutex);
    pthread_mutex_unlock(&mutex);
    printf("written\n");
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin)) die("no second line on stdin");
    close(ends[1]);
    if (waitpid(child, NULL, 0) != child) die("waitpid");
    pthread_mutex_lock(&mutex);
    phase = 2;
    pthread_cond_broadcast(&phase_changed);
    pthread_mutex_unlock(&mutex);
    for (int i = 0; i < count; i++) {
        void *result;
        if (pthread_join(threads[i], &result)) die("join");
        if ((intptr_t)result != i + 2) die("wrong result");
    }
    printf("done\n");
    return 0;
}

static void *short_lived(void *arg) {
    volatile char local[4096];
    memset((char *)local, 1, sizeof local);
    pthread_mutex_lock(&mutex);
    running--;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&mutex);
    return (void *)((intptr_t)arg + local[7]);
}

static int loop_mode(long rounds) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (long i = 0; i < rounds; i++) {
        pthread_t t;
        void *result;
        pthread_mutex_lock(&mutex);
        running++;
        pthread_mutex_unlock(&mutex);
        if (pthread_create(&t, NULL, short_lived, (void *)i)) die("create");
        struct timespec deadline;
        switch (i % 4) {
        case 0:
            if (pthread_join(t, &result)) die("join");
            break;
        case 1: {
            int status;
            while ((status = pthread_tryjoin_np(t, &result)) == EBUSY) sched_yield();
            if (status) die("tryjoin");
            break;
        }
        case 2:
            clock_gettime(CLOCK_REALTIME, &deadline);
            deadline.tv_sec += 60;
            if (pthread_timedjoin_np(t, &result, &deadline)) die("timedjoin");
            break;
        default:
            clock_gettime(CLOCK_MONOTONIC, &deadline);
            deadline.tv_sec += 60;
            if (pthread_clockjoin_np(t, &result, CLOCK_MONOTONIC, &deadline)) die("clockjoin");
            break;
        }
        if ((intptr_t)result != i + 1) die("wrong result");
        if (i % 50 == 0) {
            pthread_mutex_lock(&mutex);
            running += 11;
            pthread_mutex_unlock(&mutex);
            for (int d = 0; d < 10; d++)
                if (pthread_create(&t, &attr, short_lived, NULL)) die("create detached");
            if (pthread_create(&t, NULL, short_lived, NULL)) die("create");
            if (pthread_detach(t)) die("detach");
            pthread_mutex_lock(&mutex);
            while (running > 0) pthread_cond_wait(&changed, &mutex);
            pthread_mutex_unlock(&mutex);
        }
    }
    printf("loop %ld\n", rounds);
    return 0;
}

static int finished, child_status = -1;

static void *sleeper(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mutex);
    while (!finished) pthread_cond_wait(&changed, &mutex);
    running--;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&mutex);
    return NULL;
}

static void *child_thread(void *arg) {
    volatile char local[4096];
    memset((char *)local, 3, sizeof local);
    return (void *)((intptr_t)arg + local[9]);
}

static void *forker(void *arg) {
    (void)arg;
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) {
        /* The child: a thread of its own (the create and join give back
         * what has ended), then exit with the reports. */
        pthread_t t;
        void *result;
        if (pthread_create(&t, NULL, child_thread, (void *)(intptr_t)4)) die("child create");
        if (pthread_join(t, &result)) die("child join");
        if ((intptr_t)result != 7) die("child: wrong result");
        exit(0);
    }
    int status;
    if (waitpid(child, &status, 0) != child) die("waitpid");
    pthread_mutex_lock(&mutex);
    child_status = status;
    running--;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&mutex);
    return NULL;
}

static int forkthread_mode(void) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    running = 2;
    if (pthread_create(&t, &attr, sleeper, NULL)) die("create sleeper");
    if (pthread_create(&t, &attr, forker, NULL)) die("create forker");
    pthread_mutex_lock(&mutex);
    while (child_status == -1) pthread_cond_wait(&changed, &mutex);
    finished = 1;
    pthread_cond_broadcast(&changed);
    while (running > 0) pthread_cond_wait(&changed, &mutex);
    pthread_mutex_unlock(&mutex);
    if (!WIFEXITED(child_status) || WEXITSTATUS(child_status) != 0) {
        fprintf(stderr, "stacks: the child ended with status %#x\n", child_status);
        return 1;
    }
    printf("forkthread ok\n");
    return 0;
}

static void *unmapper(void *arg) {
    (void)arg;
    volatile char local[3 * 4096];
    memset((char *)local, 6, sizeof local);
    char *page = (char *)(((uintptr_t)local + 4095) & ~(uintptr_t)4095);
    if (munmap(page, 4096)) die("munmap");
    return (void *)(intptr_t)local[1];
}

static void *own_attributes(void *arg) {
    pthread_attr_t attr;
    size_t *found = arg;
    void *address;
    if (pthread_getattr_np(pthread_self(), &attr)) die("pthread_getattr_np");
    if (pthread_attr_getstack(&attr, &address, &found[0])) die("pthread_attr_getstack");
    if (pthread_attr_getguardsize(&attr, &found[1])) die("pthread_attr_getguardsize");
    pthread_attr_destroy(&attr);
    return NULL;
}

static int defaults_mode(void) {
    pthread_attr_t defaults;
    pthread_attr_init(&defaults);
    if (pthread_attr_setstacksize(&defaults, 3 << 20)) die("setstacksize");
    if (pthread_attr_setguardsize(&defaults, 64 << 10)) die("setguardsize");
    if (pthread_setattr_default_np(&defaults)) die("pthread_setattr_default_np");
    pthread_t t;
    size_t found[2] = {0, 0};
    if (pthread_create(&t, NULL, own_attributes, found)) die("create");
    if (pthread_join(t, NULL)) die("join");
    if (found[0] < (size_t)3 << 20 || found[1] != (size_t)64 << 10) {
        fprintf(stderr, "stacks: stack %zu bytes, guard %zu bytes\n", found[0], found[1]);
        return 1;
    }
    printf("defaults ok\n");
    return 0;
}

static void on_alarm(int signal_number) {
    (void)signal_number;
    _exit(0);
}

static void alarm_mode(long microseconds) __attribute__((noreturn));

static void alarm_mode(long microseconds) {
    sigset_t alarm_only;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alarm_only, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < 64; i++) {
        pthread_t t;
        if (pthread_create(&t, &attr, sleeper, NULL)) die("create sleeper");
    }
    pthread_sigmask(SIG_UNBLOCK, &alarm_only, NULL);
    signal(SIGALRM, on_alarm);
    struct itimerval timer = {{0, 0}, {microseconds / 1000000, microseconds % 1000000}};
    setitimer(ITIMER_REAL, &timer, NULL);
    for (long i = 0;; i++) {
        pthread_t t;
        void *result;
        if (pthread_create(&t, NULL, child_thread, (void *)i)) die("create");
        if (pthread_join(t, &result)) die("join");
    }
}

static int vfork_mode(void) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    running = 1;
    if (pthread_create(&t, &attr, waiter, (void *)(intptr_t)1)) die("create");
    pthread_mutex_lock(&mutex);
    while (reported < 1) pthread_cond_wait(&changed, &mutex);
    pthread_mutex_unlock(&mutex);
    pid_t child = vfork();
    if (child < 0) die("vfork");
    if (child == 0) exit(0);
    int status;
    if (waitpid(child, &status, 0) != child) die("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) die("the child failed");
    pthread_mutex_lock(&mutex);
    go = 1;
    pthread_cond_broadcast(&changed);
    while (running > 0) pthread_cond_wait(&changed, &mutex);
    pthread_mutex_unlock(&mutex);
    /* Another thread: the stack of the one above is still its own. */
    void *result;
    if (pthread_create(&t, NULL, child_thread, (void *)(intptr_t)2)) die("create again");
    if (pthread_join(t, &result)) die("join");
    printf("vfork ok\n");
    return 0;
}

static int holey_mode(void) {
    pthread_t t;
    void *result;
    if (pthread_create(&t, NULL, unmapper, NULL)) die("create");
    if (pthread_join(t, &result)) die("join");
    if ((intptr_t)result != 6) die("wrong result");
    if (pthread_create(&t, NULL, child_thread, (void *)(intptr_t)1)) die("create again");
    if (pthread_join(t, &result)) die("join again");
    if ((intptr_t)result != 4) die("wrong result again");
    printf("holey ok\n");
    return 0;
}

static void *protector(void *arg) {
    (void)arg;
    volatile char local[3 * 4096];
    memset((char *)local, 5, sizeof local);
    char *page = (char *)(((uintptr_t)local + 4095) & ~(uintptr_t)4095);
    if (mprotect(page, 4096, PROT_READ)) die("mprotect");
    pthread_mutex_lock(&mutex);
    reported = 1;
    pthread_cond_broadcast(&changed);
    while (!go) pthread_cond_wait(&changed, &mutex);
    pthread_mutex_unlock(&mutex);
    if (mprotect(page, 4096, PROT_READ | PROT_WRITE)) die("mprotect back");
    return (void *)(intptr_t)local[1];
}

static int protfork_mode(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, protector, NULL)) die("create");
    pthread_mutex_lock(&mutex);
    while (!reported) pthread_cond_wait(&changed, &mutex);
    pthread_mutex_unlock(&mutex);
    pid_t child = fork();
    if (child < 0) die("fork");
    if (child == 0) _exit(0);
    int status;
    if (waitpid(child, &status, 0) != child) die("waitpid");
    pthread_mutex_lock(&mutex);
    go = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&mutex);
    void *result;
    if (pthread_join(t, &result)) die("join");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "stacks: the child ended with status %#x\n", status);
        return 1;
    }
    printf("protfork ok\n");
    return 0;
}

static long recurse(long depth) {
    volatile char frame[1024];
    memset((char *)frame, (int)depth, sizeof frame);
    if (depth == 0) return frame[5];
    return recurse(depth - 1) + frame[9];
}

static void *deep(void *arg) {
    return (void *)recurse((long)(intptr_t)arg);
}

static void *where(void *arg) {
    volatile char local[64];
    local[0] = 1;
    *(uintptr_t *)arg = (uintptr_t)local;
    return NULL;
}

static void *own_size(void *arg) {
    pthread_attr_t attr;
    void *address;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr)) die("pthread_getattr_np");
    if (pthread_attr_getstack(&attr, &address, &size)) die("pthread_attr_getstack");
    *(size_t *)arg = size;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "wait") == 0) return wait_mode(atoi(argv[2]), atoi(argv[3]));
    if (argc >= 3 && strcmp(argv[1], "forkwait") == 0) return fork_mode(atoi(argv[2]));
    if (argc >= 2 && strcmp(argv[1], "forkthread") == 0) return forkthread_mode();
    if (argc >= 2 && strcmp(argv[1], "protfork") == 0) return protfork_mode();
    if (argc >= 2 && strcmp(argv[1], "holey") == 0) return holey_mode();
    if (argc >= 2 && strcmp(argv[1], "vfork") == 0) return vfork_mode();
    if (argc >= 3 && strcmp(argv[1], "alarm") == 0) alarm_mode(atol(argv[2]));
    if (argc >= 2 && strcmp(argv[1], "defaults") == 0) return defaults_mode();
    if (argc >= 3 && strcmp(argv[1], "loop") == 0) return loop_mode(atol(argv[2]));
    if (argc >= 3 && strcmp(argv[1], "deep") == 0) {
        long kib = atol(argv[2]);
        pthread_attr_t defaults;
        pthread_attr_init(&defaults);
        if (pthread_attr_setstacksize(&defaults, (size_t)(kib + 2048) << 10)) die("setstacksize");
        if (pthread_setattr_default_np(&defaults)) die("pthread_setattr_default_np");
        pthread_t t;
        void *result;
        /* About 1.1 KiB per level: frame and call overhead. */
        if (pthread_create(&t, NULL, deep, (void *)(intptr_t)(kib * 10 / 11))) die("create");
        if (pthread_join(t, &result)) die("join");
        printf("deep %ld %ld\n", kib, (long)(intptr_t)result);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "own") == 0) {
        size_t size = 256 << 10;
        char *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (stack == MAP_FAILED) die("mmap");
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        if (pthread_attr_setstack(&attr, stack, size)) die("setstack");
        pthread_t t;
        uintptr_t local = 0;
        if (pthread_create(&t, &attr, where, &local)) die("create");
        if (pthread_join(t, NULL)) die("join");
        if (local < (uintptr_t)stack || local >= (uintptr_t)stack + size) die("not on its own stack");
        printf("own ok\n");
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "size") == 0) {
        size_t wanted = (size_t)atol(argv[2]) << 10;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        if (pthread_attr_setstacksize(&attr, wanted)) die("setstacksize");
        pthread_t t;
        size_t got = 0;
        if (pthread_create(&t, &attr, own_size, &got)) die("create");
        if (pthread_join(t, NULL)) die("join");
        if (got < wanted) die("stack smaller than asked for");
        printf("size ok\n");
        return 0;
    }
    die("usage: stacks wait J D | forkwait N | forkthread | vfork | alarm US | holey | defaults | protfork | loop N | deep KIB "
        "| own | size KIB");
    return 1;
}
