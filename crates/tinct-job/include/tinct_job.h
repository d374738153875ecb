/*
 * tinct_job.h: the `futex` job protocol of tinct's program bodies
 * (docs/FORMAT.md, "A program of your own as the body").
 *
 * tinct starts the program with TINCT_JOB_FD naming a shared page; the
 * program loops:
 *
 *     for (;;) {
 *         int64_t job = tinct_job_wait();   // blocks until the next release
 *         if (job < 0) break;               // -1: tinct asks it to exit
 *         do_one_job(job);
 *         tinct_job_done();                 // the job's end, as tinct records it
 *     }
 *
 * Link with -ltinct_job (libtinct_job.so, built by `cargo build -p tinct-job`).
 */
#ifndef TINCT_JOB_H
#define TINCT_JOB_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Blocks until tinct releases the next job and returns its number (0, 1,
 * 2, ...); -1 when tinct asks the program to exit; -2 on an error (errno
 * says which: no TINCT_JOB_FD, or not tinct's page). tinct hands the job
 * over ahead, with its release instant, and the wait sleeps until that
 * instant on the program's own timer: it returns at the release. */
int64_t tinct_job_wait(void);

/* Ends the job tinct_job_wait returned (from any thread of the program):
 * 0, or -1 if no job is running. */
int tinct_job_done(void);

#ifdef __cplusplus
}
#endif

#endif
