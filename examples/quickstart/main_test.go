package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Without an argument the quickstart works in a temporary folder of its
// own and removes it: nothing grows across runs.
func TestQuickstart_TempFolderIsRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for range 2 {
		require.NoError(t, runInTemp(io.Discard))
		entries, err := os.ReadDir(tmp)
		require.NoError(t, err)
		assert.Empty(t, entries, "the run left files behind")
	}
}

// With a folder the data stays, and a second run continues the offsets.
func TestQuickstart_GivenFolderIsKept(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, run(dir, io.Discard))
	require.NoError(t, run(dir, io.Discard))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.NotEmpty(t, entries)
}

// A folder whose topic "orders" already holds a message without a key
// (the README's walkthrough sends some to ./data) is read back, not a
// panic.
func TestQuickstart_ReadsAMessageWithoutKey(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	eng, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, eng.CreateTopic(ctx, "orders", 4))
	p, err := equeue.NewProducer(eng, nil)
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte("order #1")})
	require.NoError(t, err)
	require.NoError(t, eng.Close())

	require.NotPanics(t, func() { require.NoError(t, run(dir, io.Discard)) })
}

// A folder whose queue holds more messages than one pull returns (after
// many runs, or the README's walkthrough on ./data) is read back to its
// last message, page by page, not cut at the first page.
func TestQuickstart_ReadsEveryStoredMessage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	eng, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, eng.CreateTopic(ctx, "orders", 4))
	p, err := equeue.NewProducer(eng, nil)
	require.NoError(t, err)
	const stored = 250 // more than two pages, all in one queue (one key)
	msgs := make([]*equeue.Message, stored)
	for i := range msgs {
		msgs[i] = &equeue.Message{Topic: "orders", Keys: []string{"dave"}, Body: fmt.Appendf(nil, "old order %d", i)}
	}
	_, err = p.SendBatch(ctx, msgs)
	require.NoError(t, err)
	require.NoError(t, eng.Close())

	var out bytes.Buffer
	require.NoError(t, run(dir, &out))
	reads := 0
	for line := range strings.Lines(out.String()) {
		if strings.HasPrefix(line, "read ") {
			reads++
		}
	}
	assert.Equal(t, stored+6, reads, "every stored message, and the six the run sent, is read back")
	last := fmt.Sprintf("body=%q", fmt.Sprintf("old order %d", stored-1))
	assert.True(t, strings.Contains(out.String(), last), "the last stored message is not read back")
}
