/* A program that starts others: system(), popen() and fork then exec.  Under
 * vlcs exec their output is the instance's, as a process of its own would have. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    int rc = system("echo child-of-system");
    FILE *p = popen("echo via-popen", "r");
    char buf[64] = "";
    if (p) { fgets(buf, sizeof buf, p); pclose(p); }
    pid_t pid = fork();
    if (pid == 0) { execlp("echo", "echo", "fork-exec", (char *)NULL); _exit(127); }
    int st; waitpid(pid, &st, 0);
    printf("system=%d popen=%s fork-exec=%d\n", WEXITSTATUS(rc), buf, WEXITSTATUS(st));
    return 0;
}
