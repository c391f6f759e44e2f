package equeue

import "context"

// CrashConsumer stops c as a killed process would: no commit, no leave.
func CrashConsumer(c *Consumer) { c.crash() }

// AppendInternal appends as the engine does to its own %RETRY%/%DLQ%
// topics, which clients may not write; tests use it to set up state.
func AppendInternal(ctx context.Context, e *Engine, req *AppendRequest) (AppendResult, error) {
	return e.Append(allowInternal(ctx, req.Topic), req)
}
