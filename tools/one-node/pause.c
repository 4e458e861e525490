/* The pod sandbox's process: holds the pod's namespaces and reaps orphaned children
 * until it is told to stop. Same job as Kubernetes' build/pause/linux/pause.c, written
 * here so the image can be built from Debian's gcc without a registry. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction on_stop = {.sa_handler = stop};
  struct sigaction on_child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
  if (getpid() != 1) fprintf(stderr, "pause: warning: not pid 1\n");
  if (sigaction(SIGINT, &on_stop, NULL) < 0 || sigaction(SIGTERM, &on_stop, NULL) < 0 ||
      sigaction(SIGCHLD, &on_child, NULL) < 0) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) pause();
}
