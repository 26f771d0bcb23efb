/* stacked installs a filter of its own on top of the profile's, as a
 * browser's sandbox does (it can only narrow what the profile allows),
 * then sleeps. It prints "stacked" once the filter is in. */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(void) {
	struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog prog = {.len = 1, .filter = allow};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
		perror("stacked");
		return 1;
	}
	printf("stacked\n");
	fflush(stdout);
	sleep(300);
	return 0;
}
