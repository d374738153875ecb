#!/usr/bin/env python3
"""A task body of your own: a 3x3 mean filter over a 48x48 image per job.

tinct's `lines` protocol (docs/FORMAT.md): tinct writes one line to stdin
at each release (the job's number); the program does one job and writes
one line to stdout when it is done; end of file on stdin asks it to exit.
Diagnostics go to stderr (tinct keeps them in the run directory, under
programs/<task>.stderr). No library is needed.
"""
import sys

SIZE = 48


def smooth(image):
    """One pass of a 3x3 mean filter (edges kept)."""
    out = [row[:] for row in image]
    for y in range(1, SIZE - 1):
        above, here, below = image[y - 1], image[y], image[y + 1]
        row = out[y]
        for x in range(1, SIZE - 1):
            row[x] = (
                above[x - 1] + above[x] + above[x + 1]
                + here[x - 1] + here[x] + here[x + 1]
                + below[x - 1] + below[x] + below[x + 1]
            ) / 9.0
    return out


def main():
    image = [[float((x * 31 + y * 17) % 255) for x in range(SIZE)] for y in range(SIZE)]
    print("filter: ready", file=sys.stderr, flush=True)
    for line in sys.stdin:
        job = line.strip()
        image = smooth(image)
        print(f"{job} {image[SIZE // 2][SIZE // 2]:.3f}", flush=True)
    print("filter: input ended", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
