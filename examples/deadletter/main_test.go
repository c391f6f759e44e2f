package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestLuhn(t *testing.T) {
	for s, want := range map[string]bool{
		"4111 1111 1111 1111": true,
		"4111 1111 1111 1112": false,
		"79927398713":         true,
		"":                    false,
		"4111-1111":           false,
	} {
		assert.Equal(t, want, luhn(s), s)
	}
}

// A valid card is charged, an invalid one ends in the billing group's dead
// letters with the reason.
func TestRun_DeadLettersInvalidCards(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	eng, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, eng.CreateTopic(ctx, "payments", 2))
	p, err := equeue.NewProducer(eng, nil)
	require.NoError(t, err)
	for _, b := range []string{"4111 1111 1111 1111", "4111 1111 1111 1112"} {
		_, err := p.Send(ctx, &equeue.Message{Topic: "payments", Body: []byte(b)})
		require.NoError(t, err)
	}
	require.NoError(t, eng.Close())

	var out bytes.Buffer
	require.NoError(t, run(ctx, dir, &out))
	assert.Equal(t, "payments/0:0  4111 1111 1111 1111  charged\n"+
		"payments/1:0  4111 1111 1111 1112  dead letter: card number fails the Luhn check\n", out.String())

	eng, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer eng.Close()
	dls, err := eng.ListDeadLetters(ctx, "billing", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	assert.Equal(t, "4111 1111 1111 1112", string(dls[0].Message.Body))
}

// A second run continues where the group stopped: it handles the payments
// the group has not handled yet (here a redriven dead letter) and stops,
// instead of waiting for every payment ever stored.
func TestRun_ContinuesWhereTheGroupStopped(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	eng, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, eng.CreateTopic(ctx, "payments", 2))
	p, err := equeue.NewProducer(eng, nil)
	require.NoError(t, err)
	for _, b := range []string{"4111 1111 1111 1111", "4111 1111 1111 1112"} {
		_, err := p.Send(ctx, &equeue.Message{Topic: "payments", Body: []byte(b)})
		require.NoError(t, err)
	}
	require.NoError(t, eng.Close())
	require.NoError(t, run(ctx, dir, io.Discard))

	// Nothing left: the second run stops at once and prints nothing.
	var out bytes.Buffer
	requireReturns(t, func() error { return run(ctx, dir, &out) })
	assert.Empty(t, out.String())

	// A redriven dead letter comes back to the group, as it was stored.
	eng, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	n, err := eng.Redrive(ctx, "billing", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, eng.Close())
	out.Reset()
	requireReturns(t, func() error { return run(ctx, dir, &out) })
	assert.Equal(t, "payments/1:0  4111 1111 1111 1112  dead letter: card number fails the Luhn check\n", out.String())
}

// requireReturns runs f and fails the test unless it returns nil well
// before run's own one-minute limit.
func requireReturns(t *testing.T, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("run still waits for payments the group has handled")
	}
}

// A directory that holds no engine (a typo, or the wrong working
// directory) is refused before anything is written there: no empty engine
// is made in its place, and the error says what to give instead.
func TestRun_RefusesADirectoryWithoutAnEngine(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()

	missing := filepath.Join(base, "missing")
	err := run(ctx, missing, io.Discard)
	require.ErrorIs(t, err, errNoEngine)
	assert.Contains(t, err.Error(), missing)
	assert.NoDirExists(t, missing, "the run made a directory at the wrong path")

	empty := filepath.Join(base, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	require.ErrorIs(t, run(ctx, empty, io.Discard), errNoEngine)
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	assert.Empty(t, entries, "the run made an engine in an empty directory")

	other := filepath.Join(base, "other")
	require.NoError(t, os.Mkdir(other, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(other, "notes.txt"), []byte("not an engine"), 0o644))
	require.ErrorIs(t, run(ctx, other, io.Discard), errNoEngine)
	entries, err = os.ReadDir(other)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "the run wrote engine files among another program's")
}
