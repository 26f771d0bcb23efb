/* abi32 tries to open refused socket families through the i386 system
 * call ABI of an x86_64 process (int $0x80), where the x86_64 argument
 * filter does not apply: the direct socket call and socketcall, whose
 * arguments sit in memory no filter can read. Each attempt runs in a child
 * of its own, so a kill by seccomp ends only that attempt. It prints one
 * line per attempt: "<name> fd" when a socket was made, "<name> errno N",
 * "<name> not-a-socket N" when the call returned something else (gVisor
 * runs int $0x80 as a 64-bit call: 102 is getuid there) or
 * "<name> signal N". */
#include <stdio.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define AF_ALG_ 38
#define AF_VSOCK_ 40

static long int80(long nr, long a, long b, long c) {
	long r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
	return r;
}

static long direct_socket(int family) { return int80(359, family, 1 /* SOCK_STREAM */, 0); }

static long socketcall_socket(int family) {
	uint32_t *args = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (args == MAP_FAILED)
		return -1000;
	args[0] = family;
	args[1] = 5; /* SOCK_SEQPACKET */
	args[2] = 0;
	return int80(102, 1 /* SYS_SOCKET */, (long)(uintptr_t)args, 0);
}

/* socketcall's bind of descriptor -1: EBADF where the filter lets
 * socketcall's calls on sockets through. */
static long socketcall_bind_badfd(int unused) {
	(void)unused;
	uint32_t *args = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
	if (args == MAP_FAILED)
		return -1000;
	args[0] = (uint32_t)-1;
	args[1] = 0;
	args[2] = 0;
	return int80(102, 2 /* SYS_BIND */, (long)(uintptr_t)args, 0);
}

static void attempt(const char *name, long (*fn)(int), int family) {
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		long r = fn(family);
		struct stat st;
		if (r >= 0 && fstat((int)r, &st) == 0 && S_ISSOCK(st.st_mode))
			printf("%s fd\n", name);
		else if (r >= 0)
			printf("%s not-a-socket %ld\n", name, r);
		else
			printf("%s errno %ld\n", name, -r);
		fflush(stdout);
		_exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status))
		printf("%s signal %d\n", name, WTERMSIG(status));
}

int main(void) {
	attempt("socket-alg", direct_socket, AF_ALG_);
	attempt("socket-vsock", direct_socket, AF_VSOCK_);
	attempt("socketcall-alg", socketcall_socket, AF_ALG_);
	attempt("socketcall-vsock", socketcall_socket, AF_VSOCK_);
	attempt("socketcall-unix", socketcall_socket, 1 /* AF_UNIX */);
	attempt("socketcall-bind-badfd", socketcall_bind_badfd, 0);
	return 0;
}
