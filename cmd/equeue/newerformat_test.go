package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// newerFormatDir makes an engine directory whose topic "t" (one queue)
// holds "before", a record of a newer format version (one a newer engine
// wrote before this build opened the directory) and "after", at offsets
// 0, 1 and 2, and whose topic "u" holds "other".
func newerFormatDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bo := store.DefaultBadgerOptions()
	b, err := store.OpenBadger(dir, &bo)
	require.NoError(t, err)
	fs := faultstore.New(b)
	fs.OnWrite(faultstore.NewerFormat)
	e, err := equeue.Open("", &equeue.Options{Store: fs})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.CreateTopic(ctx, "u", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Body: []byte("before")}, {Body: faultstore.NewerFormatBody}, {Body: []byte("after")},
	}})
	require.NoError(t, err)
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "u", Messages: []*equeue.Message{{Body: []byte("other")}}})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	require.NoError(t, fs.Close())
	return dir
}

// TestPeek_PrintsWhatPrecedesARecordOfANewerFormat: peek of a queue that
// holds a record of a newer format version prints the messages before it,
// then fails naming it (exit code 1). Before, it failed having printed
// nothing, the messages it had read before that record included.
func TestPeek_PrintsWhatPrecedesARecordOfANewerFormat(t *testing.T) {
	t.Parallel()
	dir := newerFormatDir(t)
	r := cli(t, "--dir", dir, "peek", "t", "--output", "body")
	assert.Equal(t, 1, r.code, r.String())
	assert.Equal(t, "before\n", r.stdout)
	assert.Contains(t, r.stderr, "unsupported record format version")
}

// TestStats_ScanGoesOnPastAQueueOfANewerFormat: stats --scan of a
// directory where one queue holds a record of a newer format version
// counts what it read of every queue and the queues it could not read to
// their end (scan.newer_format_queues), instead of failing as a whole:
// such a record is not damage, and the other queues are readable.
// Before, stats --scan failed (exit code 1) and printed no counter.
func TestStats_ScanGoesOnPastAQueueOfANewerFormat(t *testing.T) {
	t.Parallel()
	dir := newerFormatDir(t)
	r := cli(t, "--dir", dir, "stats", "--scan", "--json")
	require.Equal(t, 0, r.code, r.String())
	s := decode[statsJSON](t, r.stdout)
	require.NotNil(t, s.Scan)
	assert.Equal(t, int64(2), s.Scan.Read, "before, and other of topic u")
	assert.Zero(t, s.Scan.Corrupt)
	assert.Equal(t, int64(1), s.Scan.NewerFormat)

	r = cli(t, "--dir", dir, "stats", "--scan")
	require.Equal(t, 0, r.code, r.String())
	assert.Contains(t, r.stdout, "newer-format stops:")
}
