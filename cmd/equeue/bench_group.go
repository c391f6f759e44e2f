package main

import (
	"context"
	"errors"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// benchCleanupWithin bounds each deletion of what a bench run made, even
// after a signal.
const benchCleanupWithin = 30 * time.Second

// deleteBenchGroup deletes the consumer group of a bench run with its
// offsets and its retry and dead-letter topics, once its consumers closed,
// so that a benchmark on a directory or a broker of the user's leaves no
// group behind. A failure is logged: the benchmark's figures stand.
func (a *app) deleteBenchGroup(b broker, group string) {
	ctx, cancel := context.WithTimeout(context.Background(), benchCleanupWithin)
	defer cancel()
	d, ok := b.(remote.GroupDeleter)
	if !ok {
		a.log.Warn("could not delete the benchmark's consumer group: this broker cannot delete groups", "group", group)
		return
	}
	// Force: the group is this run's alone, and its consumers are closed;
	// a member whose leave did not get through must not keep it.
	err := d.DeleteGroup(ctx, group, equeue.DeleteGroupOptions{Force: true})
	if err != nil && !errors.Is(err, equeue.ErrGroupNotFound) {
		a.log.Warn("could not delete the benchmark's consumer group", "group", group, "err", err)
	}
}
