package equeue

import (
	"context"
	"fmt"
	"time"
)

// checkFetchArgs refuses a Fetch's bad arguments with ErrInvalidArgument
// before the consumer looks at what it owns: a nil ctx, a max outside
// 0..MaxPullBatch (0 means DefaultPullBatch, as for a pull) or a negative
// wait.
func checkFetchArgs(ctx context.Context, max int, wait time.Duration) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	if max < 0 || max > MaxPullBatch {
		return fmt.Errorf("%w: fetch max %d not in 0..%d", ErrInvalidArgument, max, MaxPullBatch)
	}
	if wait < 0 {
		return fmt.Errorf("%w: negative fetch wait %v", ErrInvalidArgument, wait)
	}
	return nil
}

// checkCommitArgs refuses a PullConsumer.Commit's bad arguments with
// ErrInvalidArgument before the consumer looks at what it owns: a nil ctx
// or a negative offset.
func checkCommitArgs(ctx context.Context, q QueueRef, offset int64) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	if offset < 0 {
		return fmt.Errorf("%w: negative offset %d for %s", ErrInvalidArgument, offset, q)
	}
	return nil
}
