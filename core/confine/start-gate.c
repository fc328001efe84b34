// The start gate: preloaded (LD_PRELOAD) into a confined ffmpeg or ffprobe that is started ahead of its
// time (program-start.ts). Its constructor runs after the dynamic loader has mapped and relocated every
// library, which is most of what starting these programs costs (Debian links them BIND_NOW against
// about 200 libraries: some 90 ms), and before main(). There it writes 'r' (ready) on the gate
// descriptor and waits until the runner writes 'g' (go); anything else, or the runner going away, ends
// the program before main() runs. Without FFOP_START_GATE_FD it does nothing.
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define GATE_VARIABLE "FFOP_START_GATE_FD"
#define NOT_LET_GO 125

__attribute__((constructor)) static void wait_at_start_gate(void) {
  const char *value = getenv(GATE_VARIABLE);
  if (value == NULL) return;
  char *end = NULL;
  long fd = strtol(value, &end, 10);
  int valid = *value != '\0' && *end == '\0' && fd >= 3 && fd <= 1023;
  // Nothing the program starts later waits here again.
  unsetenv(GATE_VARIABLE);
  unsetenv("LD_PRELOAD");
  if (!valid) _exit(NOT_LET_GO);
  char byte = 'r';
  ssize_t n;
  do n = write((int)fd, &byte, 1);
  while (n < 0 && errno == EINTR);
  if (n != 1) _exit(NOT_LET_GO);
  do n = read((int)fd, &byte, 1);
  while (n < 0 && errno == EINTR);
  // main() never sees the descriptor: the command line cannot reach the runner through it.
  close((int)fd);
  if (n != 1 || byte != 'g') _exit(NOT_LET_GO);
}
