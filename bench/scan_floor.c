// The least any ELF scan of a tree can do on this machine, as a yardstick for
// `runpatch scan`: two threads list the directories with getdents64 and, with
// an argument of 1, open every regular file, read its first four bytes and
// close it (the only way to know whether a file is ELF). Nothing is parsed
// or printed. Usage: scan_floor 0|1 DIR...
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char** pending;
static size_t pending_count, pending_capacity;
static int busy_workers, open_files;
static long regular_files, elf_files;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wakeup = PTHREAD_COND_INITIALIZER;

static void push(char* dir) {  // mutex held
  if (pending_count == pending_capacity) {
    pending_capacity = pending_capacity ? 2 * pending_capacity : 1024;
    pending = realloc(pending, pending_capacity * sizeof *pending);
    if (!pending) abort();
  }
  pending[pending_count++] = dir;
}

static int is_elf(int dirfd, const char* name) {
  int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return 0;
  unsigned char magic[4];
  int yes = pread(fd, magic, 4, 0) == 4 && memcmp(magic, "\177ELF", 4) == 0;
  close(fd);
  return yes;
}

static void list(const char* dir, long* files, long* elf) {
  static __thread char buffer[65536];
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  long n;
  while ((n = syscall(SYS_getdents64, fd, buffer, sizeof buffer)) > 0) {
    for (long at = 0; at < n;) {
      struct dirent64* entry = (struct dirent64*)(buffer + at);
      at += entry->d_reclen;
      const char* name = entry->d_name;
      if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]))) continue;
      if (entry->d_type == DT_DIR) {
        size_t length = strlen(dir) + strlen(name) + 2;
        char* path = malloc(length);
        snprintf(path, length, "%s/%s", dir, name);
        pthread_mutex_lock(&mutex);
        push(path);
        pthread_cond_signal(&wakeup);
        pthread_mutex_unlock(&mutex);
      } else if (entry->d_type == DT_REG) {
        ++*files;
        if (open_files) *elf += is_elf(fd, name);
      }
    }
  }
  close(fd);
}

static void* worker(void* unused) {
  (void)unused;
  for (;;) {
    pthread_mutex_lock(&mutex);
    while (pending_count == 0 && busy_workers > 0) pthread_cond_wait(&wakeup, &mutex);
    if (pending_count == 0) {
      pthread_cond_broadcast(&wakeup);
      pthread_mutex_unlock(&mutex);
      return NULL;
    }
    char* dir = pending[--pending_count];
    ++busy_workers;
    pthread_mutex_unlock(&mutex);
    long files = 0, elf = 0;
    list(dir, &files, &elf);
    free(dir);
    pthread_mutex_lock(&mutex);
    --busy_workers;
    regular_files += files;
    elf_files += elf;
    if (pending_count == 0 && busy_workers == 0) pthread_cond_broadcast(&wakeup);
    pthread_mutex_unlock(&mutex);
  }
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: scan_floor 0|1 DIR...\n");
    return 2;
  }
  open_files = atoi(argv[1]);
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int i = 2; i < argc; ++i) push(strdup(argv[i]));
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, worker, NULL);
  for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &end);
  double ms = (double)(end.tv_sec - start.tv_sec) * 1e3 + (double)(end.tv_nsec - start.tv_nsec) / 1e6;
  printf("%.3f ms: %ld regular files, %ld ELF\n", ms, regular_files, elf_files);
  return 0;
}
