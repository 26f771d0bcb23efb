package backend

import (
	"os"
	"os/signal"
	"sync"

	"golang.org/x/sys/unix"
)

// forwarder passes the signals bulkhead receives to the backends it is
// running: the ones that would end bulkhead, or every one for a backend
// that passes them on to the container (ForwardEverySignal). Asking the Go
// runtime for a signal is a round trip to the thread that owns its signal
// mask, with the wake-ups of the threads between: asking for all 59 cost
// about 6 ms of CPU per create (the engine bench, before and after), and
// giving them back after each backend call meant asking again for the
// next. So the signals are asked for once per process, only as many as the
// verb needs, and never given back; a signal that arrives while no backend
// runs gets what it would have got from a process that never asked: its
// default action.
type forwarder struct {
	once     sync.Once
	mu       sync.Mutex
	children map[*os.Process]struct{}
	// reset are signals given back to their default action since they
	// were asked for (one arrived with no backend running and the process
	// survived it, as after SIGCONT or SIGTSTP); they are asked for again
	// before the next backend starts.
	reset []os.Signal
	sigs  chan os.Signal
	// starting counts backends between start and add: a signal that
	// arrives then is held for the backend, as a signal arriving before
	// its start always was.
	starting int
	held     []os.Signal
	// listeners get every forwarded signal too, and while there is one
	// no signal gets its default action (run passes them to its container).
	listeners map[chan<- os.Signal]struct{}
	// every is set once every catchable signal is asked for.
	every bool
}

var forwarding forwarder

// ending are the signals that end a Go program that did not ask for them
// (the runtime ignores the rest: SIGUSR1, SIGALRM, the real-time ones),
// SIGPIPE among them for a write to a closed stdout or stderr. They are
// what would leave a create half done, and all a backend that forwards
// nothing (runc create, start, delete, a detached exec) acts on.
func ending() []os.Signal {
	return []os.Signal{unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGILL, unix.SIGTRAP, unix.SIGABRT,
		unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGPIPE, unix.SIGTERM, unix.SIGSTKFLT, unix.SIGSYS}
}

// every are the signals a backend that forwards them to the container's
// process gets (an attached exec, run's container): every catchable one
// except those whose default action is to ignore them (SIGCHLD, SIGURG,
// SIGWINCH), which were never passed on and need not be caught.
func every() []os.Signal {
	var out []os.Signal
	for s := unix.Signal(1); s <= 64; s++ {
		switch s {
		case unix.SIGKILL, unix.SIGSTOP, unix.SIGCHLD, unix.SIGURG, unix.SIGWINCH:
			continue
		}
		out = append(out, s)
	}
	return out
}

// start asks for the ending signals (once, and again for any given back
// since) before a backend starts; then exactly one of add or abandon.
// Each signal asked for is a round trip to the runtime's signal thread:
// the 59 of every() cost about 1.5 ms of CPU, the 13 of ending() a
// fifth of that, in every create.
func (f *forwarder) start() {
	f.once.Do(func() {
		f.sigs = make(chan os.Signal, 16)
		signal.Notify(f.sigs, ending()...)
		go f.loop()
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starting++
	if len(f.reset) > 0 {
		signal.Notify(f.sigs, f.reset...)
		f.reset = nil
	}
}

// ForwardEverySignal asks for every catchable signal from now on in this
// process, for a backend that passes them to the container's process
// (an attached exec, run once its container is created), as runc exec and
// runc run pass the caller's.
func ForwardEverySignal() {
	f := &forwarding
	f.start()
	f.abandon() // start counted a backend; none starts here
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.every {
		signal.Notify(f.sigs, every()...)
		f.every = true
	}
}

// add forwards to p, which started, from now on and passes it what
// arrived while it was starting.
func (f *forwarder) add(p *os.Process) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starting--
	if f.children == nil {
		f.children = map[*os.Process]struct{}{}
	}
	f.children[p] = struct{}{}
	for _, s := range f.held {
		_ = p.Signal(s)
	}
	f.held = nil
}

// abandon is add for a backend that did not start: what was held for it
// gets its default action.
func (f *forwarder) abandon() {
	f.mu.Lock()
	f.starting--
	held := f.held
	if f.starting > 0 {
		held = nil
	} else {
		f.held = nil
	}
	f.mu.Unlock()
	for _, s := range held {
		f.deliver(s)
	}
}

// remove stops forwarding to p once it has ended.
func (f *forwarder) remove(p *os.Process) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.children, p)
}

func (f *forwarder) loop() {
	for s := range f.sigs {
		f.deliver(s)
	}
}

func (f *forwarder) deliver(s os.Signal) {
	f.mu.Lock()
	for ch := range f.listeners {
		select {
		case ch <- s:
		default: // as signal.Notify: a full channel misses it
		}
	}
	if len(f.children) > 0 || len(f.listeners) > 0 {
		for p := range f.children {
			_ = p.Signal(s)
		}
		f.mu.Unlock()
		return
	}
	if f.starting > 0 {
		f.held = append(f.held, s)
		f.mu.Unlock()
		return
	}
	// No backend runs: the default action, as if never asked for.
	signal.Reset(s)
	f.reset = append(f.reset, s)
	f.mu.Unlock()
	_ = unix.Kill(os.Getpid(), s.(unix.Signal))
}

// Listen sends every forwarded signal to ch as well, as signal.Notify would,
// until the returned stop is called; meanwhile no forwarded signal gets its
// default action. A verb that handles signals itself (run) listens here:
// asking the Go runtime for them again would be its cost again, and a
// signal given back to its default action would no longer reach it.
func Listen(ch chan<- os.Signal) (stop func()) {
	f := &forwarding
	f.start()
	f.abandon() // start counted a backend; none starts here
	f.mu.Lock()
	if f.listeners == nil {
		f.listeners = map[chan<- os.Signal]struct{}{}
	}
	f.listeners[ch] = struct{}{}
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.listeners, ch)
		f.mu.Unlock()
	}
}
