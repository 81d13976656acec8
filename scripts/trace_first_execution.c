/* Runs a program under ptrace, one instruction at a time, and prints each
 * distinct instruction address of the program's own executable in the order it
 * first runs, as an offset from the executable's first mapping (so PIE and
 * non-PIE read alike). scripts/gen-startup-order turns these into the symbol
 * order the tools are linked with: the code a short run needs, packed into as
 * few pages as possible, costs fewer page faults than code spread over 3 MB.
 *
 * Usage: trace_first_execution OUT PROGRAM [ARGS...]  (exit status: PROGRAM's) */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

struct mapping {
  uint64_t start, end;
};

/* The executable's mappings: the lowest start is the load base, and only
 * addresses inside them are recorded (not the vDSO, not the stack). */
static int read_executable_mappings(pid_t pid, struct mapping* out, int max, uint64_t* base) {
  char path[64], exe[PATH_MAX], line[PATH_MAX + 128];
  snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
  ssize_t n = readlink(path, exe, sizeof exe - 1);
  if (n < 0) return -1;
  exe[n] = '\0';
  snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
  FILE* maps = fopen(path, "r");
  if (!maps) return -1;
  int count = 0;
  *base = UINT64_MAX;
  while (count < max && fgets(line, sizeof line, maps)) {
    unsigned long long start, end;
    char* name = strchr(line, '/');
    if (!name || sscanf(line, "%llx-%llx", &start, &end) != 2) continue;
    name[strcspn(name, "\n")] = '\0';
    if (strcmp(name, exe) != 0) continue;
    out[count++] = (struct mapping){start, end};
    if (start < *base) *base = start;
  }
  fclose(maps);
  return count;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s OUT PROGRAM [ARGS...]\n", argv[0]);
    return 2;
  }
  FILE* out = fopen(argv[1], "w");
  if (!out) {
    perror(argv[1]);
    return 2;
  }
  pid_t child = fork();
  if (child == 0) {
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    execv(argv[2], argv + 2);
    perror(argv[2]);
    _exit(127);
  }
  int status;
  waitpid(child, &status, 0); /* stopped at the first instruction after exec */
  if (!WIFSTOPPED(status)) return 2;

  struct mapping maps[64];
  uint64_t base;
  int map_count = read_executable_mappings(child, maps, 64, &base);
  if (map_count <= 0) {
    fprintf(stderr, "cannot read the mappings of %s\n", argv[2]);
    kill(child, SIGKILL);
    return 2;
  }
  uint64_t span = 0;
  for (int i = 0; i < map_count; ++i)
    if (maps[i].end - base > span) span = maps[i].end - base;
  unsigned char* seen = calloc(span, 1);
  if (!seen) return 2;

  for (;;) {
    struct user_regs_struct regs;
    if (ptrace(PTRACE_GETREGS, child, 0, &regs) == 0) {
      uint64_t pc = regs.rip;
      for (int i = 0; i < map_count; ++i) {
        if (pc >= maps[i].start && pc < maps[i].end && !seen[pc - base]) {
          seen[pc - base] = 1;
          fprintf(out, "%llx\n", (unsigned long long)(pc - base));
        }
      }
    }
    if (ptrace(PTRACE_SINGLESTEP, child, 0, 0) != 0) break;
    if (waitpid(child, &status, 0) < 0 || WIFEXITED(status) || WIFSIGNALED(status)) break;
  }
  fclose(out);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
