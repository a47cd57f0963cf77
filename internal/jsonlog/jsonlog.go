// Package jsonlog is the simulator's logger: every line, as JSON, with millisecond times.
//
// controller-runtime's zap logger, outside development mode, samples repeated messages and
// stamps whole seconds: in a burst it drops most of the lines a failure is traced through,
// and it cannot order a gate's sighting against a fake kubelet's write.
package jsonlog

import (
	"io"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New logs to w at info level (logr's V(0)), with no sampling and no stack traces below
// DPanic (client-go logs every watch a cancelled context ends as an error).
func New(w io.Writer) logr.Logger {
	cfg := zap.NewProductionEncoderConfig()
	cfg.TimeKey = "ts"
	cfg.EncodeTime = zapcore.TimeEncoderOfLayout("2006-01-02T15:04:05.000Z07:00")
	core := zapcore.NewCore(zapcore.NewJSONEncoder(cfg), zapcore.AddSync(w), zapcore.InfoLevel)
	return zapr.NewLogger(zap.New(core, zap.AddStacktrace(zapcore.DPanicLevel)))
}
