package kafka_test

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/equeue-go/equeue"
)

// TestSarama_FetchedTimesBeforeNineteenSeventy: sarama reads a record's
// time as its batch's base timestamp plus the record's delta, but takes a
// negative base for none (year 1), and holds the delta as a Duration of
// milliseconds (about 292 years at most). A batch whose first record was
// from before 1970, or had the time -1 (none), had a negative base, so
// sarama read every record of it wrong; and a batch spanning more than
// 292 years wrapped its delta. The listener's batches now have a base
// sarama reads, their records' times unchanged on the wire (franz-go reads
// the same times): every record's time comes back as stored, and one of
// time -1 as none, as from a Kafka batch of records without a time.
func TestSarama_FetchedTimesBeforeNineteenSeventy(t *testing.T) {
	ms := func(y int) time.Time { return time.Date(y, 3, 4, 5, 6, 7, 8e6, time.UTC) }
	none := time.UnixMilli(-1)
	cases := map[string][]time.Time{
		"first before 1970":  {ms(1950), ms(2024), ms(2000), ms(1969)},
		"first none":         {none, ms(2024), ms(1950), none},
		"far apart":          {ms(2024), ms(1700), ms(2200), ms(1690)},
		"after 1970":         {ms(2024), ms(2025), ms(1999)},
		"none after another": {ms(2024), none, ms(2024)},
	}
	e, addr := setup(t, nil)
	ctx := testCtx(t)
	i := 0
	for name, times := range cases {
		topic := "t" + string(rune('a'+i))
		i++
		require.NoError(t, e.CreateTopic(ctx, topic, 1))
		msgs := make([]*equeue.Message, len(times))
		for j, at := range times {
			msgs[j] = &equeue.Message{Body: []byte{byte(j)}, BornAt: at}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: topic, Messages: msgs})
		require.NoError(t, err)

		c, err := sarama.NewConsumer([]string{addr}, saramaConfig())
		require.NoError(t, err)
		pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
		require.NoError(t, err)
		for j, want := range times {
			select {
			case m := <-pc.Messages():
				require.Equal(t, int64(j), m.Offset, name)
				if want.Equal(none) {
					assert.True(t, m.Timestamp.IsZero(), "%s: record %d is none, read %v", name, j, m.Timestamp)
				} else {
					assert.Equal(t, want.UnixMilli(), m.Timestamp.UnixMilli(), "%s: record %d, want %v, read %v", name, j, want, m.Timestamp)
				}
			case err := <-pc.Errors():
				require.NoError(t, err, name)
			case <-ctx.Done():
				require.FailNow(t, "no record", "%s: record %d", name, j)
			}
		}
		require.NoError(t, pc.Close())
		require.NoError(t, c.Close())

		cl := kclient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
		recs := pollN(ctx, t, cl, len(times))
		for j, r := range recs {
			assert.Equal(t, times[j].UnixMilli(), r.Timestamp.UnixMilli(), "%s: franz-go, record %d", name, j)
		}
	}
}
