/* The trace record protocol, written by the audit library (runpatch_audit.c,
 * freestanding C) and read by its parser (trace_records.cpp): both include
 * this header, so the letters, field counts, escaping and the variable that
 * names the descriptor are spelled once.
 *
 * One record a line, fields separated by tabs; in names a tab, newline or
 * backslash is escaped as \t, \n, \\:
 *   P pid ppid exe            a program starts (la_version: after exec)
 *   F pid ppid exe            a forked child's first record (no la_version runs in it)
 *   S pid flag requester name la_objsearch: requester's l_name ("" = the program)
 *   O pid lmid name           la_objopen: what got loaded (l_name)
 *   A pid flag                la_activity (LA_ACT_ADD 1, LA_ACT_DELETE 2, LA_ACT_CONSISTENT 0)
 * The variable's value is "FD:DEV:INO": the descriptor, written only while it
 * is still the file with that device and inode.
 */
#ifndef RUNPATCH_TRACE_PROTOCOL_H
#define RUNPATCH_TRACE_PROTOCOL_H

#define RUNPATCH_TRACE_FD_VARIABLE "RUNPATCH_TRACE_FD"

enum runpatch_record_kind {
  RUNPATCH_RECORD_PROCESS = 'P',
  RUNPATCH_RECORD_FORK = 'F',
  RUNPATCH_RECORD_SEARCH = 'S',
  RUNPATCH_RECORD_OPEN = 'O',
  RUNPATCH_RECORD_ACTIVITY = 'A',
};

/* Fields of a record of each kind, its letter and pid included. */
enum runpatch_record_fields {
  RUNPATCH_PROCESS_FIELDS = 4,
  RUNPATCH_SEARCH_FIELDS = 5,
  RUNPATCH_OPEN_FIELDS = 4,
  RUNPATCH_ACTIVITY_FIELDS = 3,
};

#define RUNPATCH_FIELD_SEPARATOR '\t'
#define RUNPATCH_RECORD_END '\n'
#define RUNPATCH_ESCAPE '\\'

/* The letter after RUNPATCH_ESCAPE that stands for c, or 0 when c goes as it is. */
static inline char runpatch_escape_letter(char c) { return c == '\t' ? 't' : c == '\n' ? 'n' : c == '\\' ? '\\' : 0; }

/* The character an escape letter stands for (an unknown letter stands for itself). */
static inline char runpatch_unescaped(char letter) { return letter == 't' ? '\t' : letter == 'n' ? '\n' : letter; }

#endif
