package equeue_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// after waits for the wall clock to pass t, so that what is stored next
// is stored after t.
func after(t time.Time) time.Time {
	for {
		if now := time.Now(); now.After(t) {
			return now
		}
	}
}

// openWithLayout opens an engine whose topic "t" holds one record per
// letter of layout, in order: o, d and n stored before the returned mark,
// y, D and N after it; o and y are readable, d and D damaged (they fail
// their checksum), n and N of a newer format version.
func openWithLayout(t *testing.T, layout string) (*equeue.Engine, time.Time) {
	t.Helper()
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	fs.OnWrite(func(b *store.Batch) error {
		_ = faultstore.Damaged(b)
		return faultstore.NewerFormat(b)
	})
	e, err := equeue.Open("", &equeue.Options{Store: fs, Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	split := strings.IndexAny(layout, "yDN")
	if split < 0 {
		split = len(layout)
	}
	require.NotContains(t, layout[split:], "o", "old records come first")
	send := func(part string, from int) {
		if part == "" {
			return
		}
		msgs := make([]*equeue.Message, 0, len(part))
		for i, c := range part {
			body := fmt.Appendf(nil, "%c%d", c, from+i)
			switch c {
			case 'd', 'D':
				body = faultstore.DamagedBody
			case 'n', 'N':
				body = faultstore.NewerFormatBody
			}
			msgs = append(msgs, &equeue.Message{Body: body})
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
	}
	send(layout[:split], 0)
	mark := after(after(time.Now()))
	after(mark)
	send(layout[split:], split)
	return e, mark
}

// TestRetention_DamagedRecordAmongOldAndYoung: a record whose time cannot
// be read (damaged, or of a newer format version) does not make a pass by
// age delete readable messages younger than the limit: the pass deletes
// the messages up to the last readable one older than the limit, and a
// damaged or newer record only when a readable record after it is older
// (records are stored in offset order, so it is older too). The damaged
// records the pass reads are counted once in Stats().CorruptRecords, as a
// pull counts them, and a later pass, once the messages after the damage
// are old, deletes past it.
func TestRetention_DamagedRecordAmongOldAndYoung(t *testing.T) {
	for _, tc := range []struct {
		layout string
		want   int64 // the low watermark after a pass at the mark
		// How many damaged records Stats().CorruptRecords counts after the
		// pass and a pull of what it left: at least minCorrupt (those kept,
		// and those the pass must read to place its cut), at most every one.
		minCorrupt uint64
	}{
		{layout: "oyDyy", want: 1, minCorrupt: 1},
		{layout: "ooDyy", want: 2, minCorrupt: 1},
		{layout: "oyyDyyyyy", want: 1, minCorrupt: 1},
		{layout: "oooooDy", want: 5, minCorrupt: 1},
		{layout: "ooooyyyyyyyDyyy", want: 4, minCorrupt: 1},
		{layout: "yyDyy", want: 0, minCorrupt: 1},
		{layout: "oodoyy", want: 4, minCorrupt: 0},
		{layout: "odoooyDyDy", want: 5, minCorrupt: 2},
		{layout: "ooood", want: 4, minCorrupt: 1},
		{layout: "oooDDDDD", want: 3, minCorrupt: 5},
		{layout: "oyNyy", want: 1},
		{layout: "ooNyy", want: 2},
		{layout: "onoyy", want: 3},
		{layout: "oondyy", want: 2, minCorrupt: 1},
	} {
		t.Run(tc.layout, func(t *testing.T) {
			ctx := ctxT(t)
			e, mark := openWithLayout(t, tc.layout)
			p := equeue.RetentionPolicy{MaxAge: time.Hour}
			res, err := equeue.ApplyRetentionAt(ctx, e, p, mark.Add(time.Hour))
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Deleted, "deleted")
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			assert.Equal(t, tc.want, info.Queues[0].MinOffset, "low watermark")

			// Every readable message younger than the limit is still there.
			var got []string
			for off := info.Queues[0].MinOffset; off < int64(len(tc.layout)); {
				pulled, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: off, Max: 100})
				if err != nil {
					require.ErrorIs(t, err, equeue.ErrUnsupportedFormat)
					off++ // read past it here, as a newer engine would
					continue
				}
				for _, m := range pulled.Messages {
					got = append(got, string(m.Body))
				}
				require.Greater(t, pulled.NextOffset, off)
				off = pulled.NextOffset
			}
			var young []string
			for i, c := range tc.layout {
				if c == 'y' {
					young = append(young, fmt.Sprintf("y%d", i))
				}
			}
			for _, y := range young {
				assert.Contains(t, got, y, "a message younger than the limit was deleted")
			}

			damaged := uint64(strings.Count(strings.ToLower(tc.layout), "d"))
			corrupt := e.Stats().CorruptRecords
			assert.GreaterOrEqual(t, corrupt, tc.minCorrupt, "damaged records read are counted")
			assert.LessOrEqual(t, corrupt, damaged, "each damaged record is counted once at most")

			// Once everything is older than the limit, a pass deletes past
			// the damage: up to the last readable record.
			res, err = equeue.ApplyRetentionAt(ctx, e, p, time.Now().Add(2*time.Hour))
			require.NoError(t, err)
			last := int64(strings.LastIndexAny(tc.layout, "oy") + 1)
			info, err = e.Topic(ctx, "t")
			require.NoError(t, err)
			assert.Equal(t, max(last, tc.want), info.Queues[0].MinOffset, "retention goes on past the damage")
			assert.LessOrEqual(t, e.Stats().CorruptRecords, damaged, "each damaged record is counted once at most")
		})
	}
}
