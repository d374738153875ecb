/*
 * A task body of your own in C, on tinct's `futex` protocol
 * (docs/FORMAT.md): a 3x3 mean filter over a 64x64 image per job.
 *
 *   cargo build -p tinct-job
 *   cc -O2 -Icrates/tinct-job/include examples/programs/smooth.c \
 *      -Ltarget/debug -ltinct_job -Wl,-rpath,"$PWD/target/debug" \
 *      -o examples/programs/smooth
 *   sudo tinct run examples/programs-futex.toml --duration 2s
 *
 * tinct_job_wait() blocks until tinct releases the next job (-1: tinct asks
 * the program to exit); tinct_job_done() is the job's end as tinct records
 * it. Diagnostics go to stderr (programs/<task>.stderr of the run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tinct_job.h>

#define SIZE 64

static void smooth(const float *in, float *out)
{
    memcpy(out, in, sizeof(float) * SIZE * SIZE);
    for (int y = 1; y < SIZE - 1; y++)
        for (int x = 1; x < SIZE - 1; x++) {
            float sum = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++)
                    sum += in[(y + dy) * SIZE + x + dx];
            out[y * SIZE + x] = sum / 9.0f;
        }
}

int main(void)
{
    /* The heap: coloured by tinct when the task has partitions. */
    float *image = malloc(sizeof(float) * SIZE * SIZE);
    float *next = malloc(sizeof(float) * SIZE * SIZE);
    if (!image || !next) {
        fprintf(stderr, "smooth: out of memory\n");
        return 1;
    }
    for (int i = 0; i < SIZE * SIZE; i++)
        image[i] = (float)((i * 31) % 255);
    fprintf(stderr, "smooth: ready\n");
    int64_t job;
    while ((job = tinct_job_wait()) >= 0) {
        smooth(image, next);
        float *swap = image;
        image = next;
        next = swap;
        tinct_job_done();
    }
    if (job == -2) {
        perror("smooth: tinct_job_wait");
        return 1;
    }
    fprintf(stderr, "smooth: %.3f after the last job\n", image[SIZE * SIZE / 2]);
    free(image);
    free(next);
    return 0;
}
