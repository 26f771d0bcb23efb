# bulkhead: `make demo` and `make test` do all set-up on a fresh Debian 12
# machine as root (see README.md).
GO       ?= go
PREFIX   ?= /usr/local
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
# FUZZTIME, when set (such as 1m or 500x), bounds every fuzz target alike.
FUZZTIME ?=

.PHONY: all build install deps engines v2guest demo test lint fuzz bench conformance clean

all: build

deps:
	bash hack/install-deps.sh

# urfave_cli_no_docs leaves out the CLI library's man and markdown
# generation, which bulkhead never calls: its package initialisation
# (markdown tables) ran in every bulkhead process, about 0.4 ms of CPU.
#
# bulkhead is linked statically (libseccomp.a and glibc's libc.a, with Go's
# own user and DNS lookups, which read /etc/passwd, /etc/group and
# /etc/resolv.conf as glibc's files backend does): an engine runs it three
# or more times per container, and the dynamic loader's work cost about
# 0.35 ms of CPU in each of them. The shim judges a client's rootfs
# overlay with bulkhead's rules (specs), so it links libseccomp too.
build:
	mkdir -p bin
	$(GO) build -tags urfave_cli_no_docs,osusergo,netgo -ldflags '$(LDFLAGS) -linkmode external -extldflags -static' -o bin/bulkhead ./cmd/bulkhead
	CGO_ENABLED=0 $(GO) build -ldflags '-s -w' -o bin/bulkhead-probe ./cmd/bulkhead-probe
	CGO_ENABLED=0 $(GO) build -ldflags '-s -w' -o bin/bulkhead-seccomp-exec ./cmd/bulkhead-seccomp-exec
	CGO_ENABLED=0 $(GO) build -ldflags '-s -w' -o bin/bulkhead-egress-forward ./cmd/bulkhead-egress-forward
	$(GO) build -tags osusergo,netgo -ldflags '-s -w -linkmode external -extldflags -static' -o bin/bulkhead-egress-broker ./cmd/bulkhead-egress-broker
	ln -sf bulkhead bin/bulkhead-runsc
	$(GO) build -tags osusergo,netgo -ldflags '-s -w -linkmode external -extldflags -static' -o bin/containerd-shim-bulkhead-v2 ./cmd/containerd-shim-bulkhead-v2
	ln -sf containerd-shim-bulkhead-v2 bin/containerd-shim-bulkhead-runsc-v2

install: build
	install -m 0755 bin/bulkhead bin/bulkhead-probe bin/bulkhead-seccomp-exec bin/bulkhead-egress-forward bin/bulkhead-egress-broker bin/containerd-shim-bulkhead-v2 $(PREFIX)/bin/
	ln -sf bulkhead $(PREFIX)/bin/bulkhead-runsc
	ln -sf containerd-shim-bulkhead-v2 $(PREFIX)/bin/containerd-shim-bulkhead-runsc-v2

# containerd 2.x and crictl for the containerd and CRI tests, built from the
# module proxy once and cached in /var/tmp (about 4.5 minutes cold).
engines:
	bash hack/install-containerd2.sh
	bash hack/install-crictl.sh

# QEMU and Debian's cloud kernel (extracted, never installed) for the tests
# that need a kernel with cgroup v2 alone (test/cgroupv2), cached in /var/tmp.
v2guest:
	bash hack/install-v2guest.sh

demo: deps build
	bash hack/demo.sh

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	bash hack/staticcheck.sh

# The whole suite: unit tests, integration tests against real runc and
# runsc (as root), and a short fuzz run of every parser.
test: deps engines v2guest build lint
	BULKHEAD_BIN=$(CURDIR)/bin $(GO) test -count=1 -timeout 40m ./...
	$(MAKE) fuzz

# Fuzzing is bounded by executions, not time: go1.26's fuzz coordinator
# can fail a time-bounded run with "context deadline exceeded" when its
# workers are starved at the deadline (go.dev/issue/75804), which happens
# on a loaded 2-core machine. Each count is about 20 s of an idle one.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzApply$$' -fuzztime $(or $(FUZZTIME),200000x) ./specs
	$(GO) test -run '^$$' -fuzz '^FuzzLoadMoby$$' -fuzztime $(or $(FUZZTIME),500000x) ./seccomp
	$(GO) test -run '^$$' -fuzz '^FuzzParseArgv$$' -fuzztime $(or $(FUZZTIME),60000x) ./cmd/bulkhead
	$(GO) test -run '^$$' -fuzz '^FuzzParseObject$$' -fuzztime $(or $(FUZZTIME),600000x) ./install
	$(GO) test -run '^$$' -fuzz '^FuzzContainerdInstall$$' -fuzztime $(or $(FUZZTIME),3000x) ./install
	$(GO) test -run '^$$' -fuzz '^FuzzExportNames$$' -fuzztime $(or $(FUZZTIME),15000x) ./runtime/workspace

bench: deps build
	$(GO) test -run '^$$' -bench . -benchtime 20x ./cmd/bulkhead ./specs ./seccomp ./runtime
	$(GO) run ./test/bench -bin $(CURDIR)/bin -n 30

# The OCI runtime-tools suite (runc against bulkhead in audit mode), then
# Kubernetes' critest through containerd 2.x and 1.6 (runc, bulkhead audit,
# bulkhead enforce against docs/critest-differences.md).
conformance: deps engines build
	rc=0; bash hack/conformance.sh || rc=1; bash hack/critest.sh || rc=1; exit $$rc

clean:
	rm -rf bin
