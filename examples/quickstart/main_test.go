package main

import (
	"context"
	"os"
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
		require.NoError(t, runInTemp())
		entries, err := os.ReadDir(tmp)
		require.NoError(t, err)
		assert.Empty(t, entries, "the run left files behind")
	}
}

// With a folder the data stays, and a second run continues the offsets.
func TestQuickstart_GivenFolderIsKept(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, run(dir))
	require.NoError(t, run(dir))
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

	require.NotPanics(t, func() { require.NoError(t, run(dir)) })
}
