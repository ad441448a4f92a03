// Package logging sets up zerolog for fleetsaga's binaries: JSON lines by
// default, human console output on a terminal, and the Temporal SDK's own
// logger routed through the same zerolog logger.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	tlog "go.temporal.io/sdk/log"
)

// Format selects the output format.
type Format string

const (
	FormatAuto    Format = "auto" // console on a TTY, JSON otherwise
	FormatJSON    Format = "json"
	FormatConsole Format = "console"
)

// New returns a logger writing to w at level ("debug", "info", "warn", "error").
func New(w io.Writer, level string, format Format) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(strings.ToLower(level))
	if err != nil || level == "" {
		return zerolog.Nop(), fmt.Errorf("bad log level %q (use debug, info, warn or error)", level)
	}
	switch format {
	case FormatAuto, "":
		if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
			w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly}
		}
	case FormatConsole:
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: true}
	case FormatJSON:
	default:
		return zerolog.Nop(), fmt.Errorf("bad log format %q (use auto, json or console)", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// Temporal adapts zl for the Temporal SDK. The SDK adds WorkflowID, RunID,
// ActivityID and friends as fields on every workflow and activity line, and
// its workflow logger skips lines during replay.
func Temporal(zl zerolog.Logger) tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(zerolog.NewSlogHandler(zl)))
}
