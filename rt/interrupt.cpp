// Exit status and message on SIGINT / SIGTERM (interrupt.h).
#include "rt/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>

namespace hcasim::rt {

namespace {
char g_line[2][160];  // the line for SIGINT, for SIGTERM; built before the handler is installed
int g_length[2] = {0, 0};

void on_signal(int sig) {
  const int i = sig == SIGINT ? 0 : 1;
  ssize_t ignored = ::write(2, g_line[i], static_cast<size_t>(g_length[i]));
  (void)ignored;
  ::_exit(128 + sig);
}
}  // namespace

void exit_on_interrupt(const char* program) {
  const int sigs[2] = {SIGINT, SIGTERM};
  const char* names[2] = {"SIGINT", "SIGTERM"};
  for (int i = 0; i < 2; ++i) {
    g_length[i] = std::snprintf(g_line[i], sizeof g_line[i], "%s: interrupted by signal %d (%s)\n", program, sigs[i],
                                names[i]);
    if (g_length[i] < 0 || g_length[i] >= static_cast<int>(sizeof g_line[i])) g_length[i] = 0;
    struct sigaction old {};
    ::sigaction(sigs[i], nullptr, &old);
    if (old.sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sigs[i], &sa, nullptr);
  }
}

}  // namespace hcasim::rt
