/* runpatch's rtld audit library (LD_AUDIT; see rtld-audit(7)).
 *
 * It is loaded into whatever program `runpatch trace` runs, whichever glibc
 * that program was built against, so it uses nothing of any libc: no
 * DT_NEEDED, no libc symbol, raw system calls only (built -nostdlib
 * -ffreestanding; the link fails on any undefined symbol). It never changes
 * what the program does: la_objsearch hands every name back unchanged, and
 * nothing is written to the program's own descriptors.
 *
 * Records go to the descriptor that RUNPATCH_TRACE_FD names, as
 * "FD:DEV:INO": the descriptor is written only while it is still the file
 * runpatch opened (a program that closed it and reused the number gets
 * nothing of ours). The file is opened O_APPEND and each record is one
 * write, so the records of forked children and exec'ed programs (LD_AUDIT
 * and the descriptor are inherited) never interleave within a line.
 *
 * The records' format is trace_protocol.h's (trace_records.cpp parses it).
 */

#include <stddef.h>
#include <stdint.h>

#include "trace_protocol.h"

/* The public head of glibc's struct link_map (<link.h>), stable since forever. */
struct runpatch_link_map {
  uintptr_t l_addr;
  const char* l_name;
  void* l_ld;
  struct runpatch_link_map *l_next, *l_prev;
};

#if defined(__x86_64__)
#define SYS_READ 0
#define SYS_WRITE 1
#define SYS_CLOSE 3
#define SYS_FSTAT 5
#define SYS_GETPID 39
#define SYS_GETPPID 110
#define SYS_OPENAT 257
#define SYS_READLINKAT 267

static long raw_syscall(long n, long a, long b, long c, long d) {
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
#define SYS_READ 63
#define SYS_WRITE 64
#define SYS_CLOSE 57
#define SYS_FSTAT 80
#define SYS_GETPID 172
#define SYS_GETPPID 173
#define SYS_OPENAT 56
#define SYS_READLINKAT 78

static long raw_syscall(long n, long a, long b, long c, long d) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
}
#else
#error "runpatch's audit library: add this architecture's system call numbers"
#endif

#define AT_FDCWD_VALUE (-100)
#define RECORD_MAX 16384

#define VISIBLE __attribute__((visibility("default")))

static long trace_fd = -1;
static unsigned long long trace_dev, trace_ino;

/* Parses the decimal number at *s, moving *s past it. */
static unsigned long long parse_number(const char** s) {
  unsigned long long value = 0;
  while (**s >= '0' && **s <= '9') value = value * 10 + (unsigned long long)(*(*s)++ - '0');
  return value;
}

/* "FD:DEV:INO" from RUNPATCH_TRACE_FD; anything else leaves tracing off. */
static void parse_trace_variable(const char* value) {
  const char* s = value;
  long fd = (long)parse_number(&s);
  if (*s++ != ':') return;
  unsigned long long dev = parse_number(&s);
  if (*s++ != ':') return;
  unsigned long long ino = parse_number(&s);
  if (*s != '\0') return;
  trace_fd = fd, trace_dev = dev, trace_ino = ino;
}

/* The environment as the program got it at exec, from /proc/self/environ:
 * without a libc there is no environ to read. It is read in pieces and
 * matched as it streams by, so its size does not matter. */
static void find_trace_variable(void) {
  static const char key[] = RUNPATCH_TRACE_FD_VARIABLE "=";
  char buffer[4096], value[128];
  long fd = raw_syscall(SYS_OPENAT, AT_FDCWD_VALUE, (long)"/proc/self/environ", 0 /* O_RDONLY */, 0);
  if (fd < 0) return;
  size_t matched = 0, length = 0;
  int at_start = 1, in_value = 0;
  for (;;) {
    long got = raw_syscall(SYS_READ, fd, (long)buffer, sizeof buffer, 0);
    if (got <= 0) break;
    for (long i = 0; i < got; ++i) {
      char c = buffer[i];
      if (in_value) {
        if (c == '\0') {
          value[length] = '\0';
          parse_trace_variable(value);
          raw_syscall(SYS_CLOSE, fd, 0, 0, 0);
          return;
        }
        if (length + 1 < sizeof value) value[length++] = c;
      } else if (at_start && c == key[matched]) {
        if (++matched == sizeof key - 1) in_value = 1;
      } else {
        at_start = c == '\0', matched = 0;
      }
    }
  }
  raw_syscall(SYS_CLOSE, fd, 0, 0, 0);
}

/* Whether the descriptor is still runpatch's file (st_dev and st_ino are the
 * first two 64-bit fields of struct stat on every architecture handled here). */
static int trace_fd_is_ours(void) {
  unsigned long long st[32];
  if (trace_fd < 0 || raw_syscall(SYS_FSTAT, trace_fd, (long)st, 0, 0) != 0) return 0;
  return st[0] == trace_dev && st[1] == trace_ino;
}

struct record {
  char text[RECORD_MAX];
  size_t size;
};

static void put_char(struct record* r, char c) {
  if (r->size < RECORD_MAX - 1) r->text[r->size++] = c;
}

static void put_field(struct record* r, const char* s) {
  put_char(r, RUNPATCH_FIELD_SEPARATOR);
  for (; s && *s; ++s) {
    char letter = runpatch_escape_letter(*s);
    if (letter) {
      put_char(r, RUNPATCH_ESCAPE);
      put_char(r, letter);
    } else {
      put_char(r, *s);
    }
  }
}

static void put_number(struct record* r, long long value) {
  char digits[24];
  int n = 0;
  unsigned long long v = value < 0 ? (unsigned long long)(-value) : (unsigned long long)value;
  do digits[n++] = (char)('0' + v % 10), v /= 10;
  while (v);
  put_char(r, RUNPATCH_FIELD_SEPARATOR);
  if (value < 0) put_char(r, '-');
  while (n) put_char(r, digits[--n]);
}

/* One write, so that records of concurrent processes stay whole lines
 * (O_APPEND). A record that would not fit was cut short: its line still ends. */
static void finish(struct record* r) {
  r->text[r->size++] = RUNPATCH_RECORD_END;
  if (!trace_fd_is_ours()) return;
  for (size_t done = 0; done < r->size;) {
    long wrote = raw_syscall(SYS_WRITE, trace_fd, (long)(r->text + done), (long)(r->size - done), 0);
    if (wrote <= 0) return;
    done += (size_t)wrote;
  }
}

static void start(struct record* r, char kind, long pid) {
  r->size = 0;
  put_char(r, kind);
  put_number(r, pid);
}

/* The loader holds its lock around every callback: one buffer for the
 * records, one for the process record that may have to come first. */
static struct record scratch, process_scratch;
static long announced_pid;

/* "P pid ppid exe" for a program starting, "F pid ppid exe" for a forked
 * child: the records after it are that process's. */
static void announce(long pid, char kind) {
  char exe[4096];
  long n = raw_syscall(SYS_READLINKAT, AT_FDCWD_VALUE, (long)"/proc/self/exe", (long)exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  announced_pid = pid;
  start(&process_scratch, kind, pid);
  put_number(&process_scratch, raw_syscall(SYS_GETPPID, 0, 0, 0, 0));
  put_field(&process_scratch, exe);
  finish(&process_scratch);
}

/* Starts a record of this kind for this process. A forked child runs on
 * without a new la_version: its first record announces it. */
static void begin(struct record* r, char kind) {
  long pid = raw_syscall(SYS_GETPID, 0, 0, 0, 0);
  if (pid != announced_pid) announce(pid, RUNPATCH_RECORD_FORK);
  start(r, kind, pid);
}

VISIBLE unsigned int la_version(unsigned int version) {
  find_trace_variable();
  if (trace_fd >= 0) announce(raw_syscall(SYS_GETPID, 0, 0, 0, 0), RUNPATCH_RECORD_PROCESS);
  /* The loader's own version: the hooks used here (la_objsearch, la_objopen,
   * la_activity) are the same in every version, and only la_pltenter/la_symbind,
   * which we do not have, changed. An older answer is not safe either: glibc
   * 2.35+ on aarch64 refuses version 1 (its register layout changed). */
  return version;
}

/* Every object gets our audit hooks: without LA_FLG_BINDTO/BINDFROM no symbol
 * binding is audited, which keeps the program's speed. */
VISIBLE unsigned int la_objopen(struct runpatch_link_map* map, long lmid, uintptr_t* cookie) {
  (void)cookie;
  if (trace_fd < 0) return 0;
  begin(&scratch, RUNPATCH_RECORD_OPEN);
  put_number(&scratch, lmid);
  put_field(&scratch, map->l_name);
  finish(&scratch);
  return 0;
}

/* The cookie is the requester's: glibc starts every object's cookie as the
 * address of its link_map (and la_objopen above leaves it so). For a dlopen
 * the requester is the object holding the caller of dlopen. */
VISIBLE char* la_objsearch(const char* name, uintptr_t* cookie, unsigned int flag) {
  if (trace_fd >= 0) {
    const struct runpatch_link_map* requester = cookie ? (const struct runpatch_link_map*)*cookie : 0;
    begin(&scratch, RUNPATCH_RECORD_SEARCH);
    put_number(&scratch, flag);
    put_field(&scratch, requester ? requester->l_name : "?");
    put_field(&scratch, name);
    finish(&scratch);
  }
  return (char*)name;
}

VISIBLE void la_activity(uintptr_t* cookie, unsigned int flag) {
  (void)cookie;
  if (trace_fd < 0) return;
  begin(&scratch, RUNPATCH_RECORD_ACTIVITY);
  put_number(&scratch, flag);
  finish(&scratch);
}
