/* What the benchmark's C programs share: a monotonic clock, the descriptors
 * a process holds, and a list of names (or paths) read from a file, one a
 * line, before any clock starts. Header-only: each program is one file. */
#ifndef KILN_BENCH_UTIL_H
#define KILN_BENCH_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Descriptors this process holds (less the one reading the directory). */
static inline int open_fds(void) {
  DIR* d = opendir("/proc/self/fd");
  if (!d)
    return -1;
  int n = 0;
  while (readdir(d))
    ++n;
  closedir(d);
  return n - 3; /* ".", ".." and the directory's own descriptor */
}

/* The non-empty lines of `path`; `program` names the caller in the error
 * that ends the process when the file cannot be read. */
static inline char** read_lines(const char* program, const char* path, int* count) {
  FILE* f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "%s: cannot read '%s'\n", program, path);
    exit(2);
  }
  int cap = 1024, n = 0;
  char** lines = malloc(sizeof(char*) * (size_t)cap);
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (!line[0])
      continue;
    if (n == cap) {
      cap *= 2;
      lines = realloc(lines, sizeof(char*) * (size_t)cap);
    }
    lines[n++] = strdup(line);
  }
  fclose(f);
  *count = n;
  return lines;
}

#endif
