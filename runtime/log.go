package runtime

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/sirupsen/logrus"

	"bulkhead.dev/bulkhead/runtime/escape"
)

// SetupLog sends bulkhead's messages where runc sends its own: the --log
// file in runc's format (logrus JSON lines with "level", "msg", "time" for
// --log-format json), because containerd and dockerd show the user the
// last error line of that file. A log path that cannot be opened is bad
// input, as it is to runc and runsc: the error says so on stderr and
// nothing runs.
func SetupLog(g *Globals) error {
	logrus.SetOutput(os.Stderr)
	switch g.LogFormat {
	case "json":
		logrus.SetFormatter(new(logrus.JSONFormatter))
	default:
		logrus.SetFormatter(&logrus.TextFormatter{DisableColors: true, FullTimestamp: true, TimestampFormat: "2006-01-02T15:04:05.000Z07:00"})
	}
	switch {
	case g.Debug:
		logrus.SetLevel(logrus.DebugLevel)
	case g.Log == "":
		// stderr is the engine's to show; only trouble goes there.
		logrus.SetLevel(logrus.WarnLevel)
	default:
		logrus.SetLevel(logrus.InfoLevel)
	}
	if g.Log == "" {
		return nil
	}
	f, err := os.OpenFile(g.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_SYNC, 0o644)
	if err != nil {
		logrus.SetLevel(logrus.WarnLevel)
		return fmt.Errorf("--log %s cannot be opened for appending (%w): give a file in a directory that exists, or no --log for stderr", g.Log, errors.Unwrap(err))
	}
	logrus.SetOutput(f)
	return nil
}

// LogError reports err as the last error line of the log and on stderr,
// the way runc does: containerd and dockerd show the user that line.
func LogError(err error) {
	// Names the workload chose are escaped where they enter a message;
	// this holds for any that is not.
	msg := "bulkhead: " + escape.Terminal(err.Error())
	if logrus.StandardLogger().Out != io.Writer(os.Stderr) {
		logrus.Error(msg)
	}
	fmt.Fprintln(os.Stderr, msg)
}
