package tracing

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel"
)

// NewErrorLog exposes the error handler to the tests.
func NewErrorLog(log *slog.Logger) otel.ErrorHandler { return &errorLog{log: log, every: time.Minute} }
