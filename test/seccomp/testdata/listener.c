/* listener asks for a seccomp user notification listener, which would make
 * the job the supervisor of its own calls, and then for a plain filter.
 * It prints "listener errno N" or "listener fd", then "plain ok" or
 * "plain errno N". */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif

int main(void) {
	struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog prog = {.len = 1, .filter = allow};
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (r >= 0)
		printf("listener fd\n");
	else
		printf("listener errno %d\n", errno);
	r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	if (r == 0)
		printf("plain ok\n");
	else
		printf("plain errno %d\n", errno);
	return 0;
}
