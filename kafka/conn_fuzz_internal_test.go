package kafka

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// discardConn is a net.Conn whose writes go nowhere: the answers of the
// fuzzed requests.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error)      { return len(b), nil }
func (discardConn) Close() error                     { return nil }
func (discardConn) RemoteAddr() net.Addr             { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (discardConn) LocalAddr() net.Addr              { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9092} }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }

// requestFrame encodes req as a request frame without its size: header
// (v1, or v2 for a flexible request) and body.
func requestFrame(req kmsg.Request, correlation int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(correlation))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "fuzz"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// FuzzConn_AnyRequest: no request frame, of any served kind and version,
// makes the listener panic; it answers or closes the connection. A panic
// here would take down the host process of an embedded broker. The seeds
// are every request kind and version empty, and those of
// contentRequests, whose topics, partitions, record batches and groups
// reach the data path, the admin calls and the groups.
func FuzzConn_AnyRequest(f *testing.F) {
	for key, v := range supported {
		for version := v.min; version <= v.max; version++ {
			req := kmsg.RequestForKey(key)
			req.SetVersion(version)
			f.Add(requestFrame(req, 1))
		}
	}
	for _, req := range contentRequests() {
		v := supported[req.Key()]
		for version := v.min; version <= v.max; version++ {
			req.SetVersion(version)
			f.Add(requestFrame(req, 1))
		}
	}
	e, err := equeue.Open("", &equeue.Options{InMemory: true, AutoCreateTopics: true})
	require.NoError(f, err)
	f.Cleanup(func() { _ = e.Close() })
	require.NoError(f, e.CreateTopic(context.Background(), "t", 2))
	s, err := NewServer(e, nil)
	require.NoError(f, err)
	f.Cleanup(func() { _ = s.Close() })
	f.Fuzz(func(t *testing.T, frame []byte) {
		c := newConn(s, discardConn{})
		// A fetch or a join waits at most this long.
		ctx, cancel := context.WithTimeout(c.ctx, 20*time.Millisecond)
		defer cancel()
		c.ctx = ctx
		_ = c.handle(frame)
		c.cancel()
	})
}

// seedBatch is a record batch of the sample messages, as a produce carries.
func seedBatch() []byte {
	var w batchWriter
	w.begin(nil, sampleMessages()[0].Offset)
	for _, m := range sampleMessages() {
		w.add(m, DefaultTagHeader, false)
	}
	return w.finish(false)
}

// seedProduceBatches are record batches that reach past decodeBatch's
// CRC check into the decoders and the idempotent producer's sequence
// checks: the sample batch compressed with each codec, and an
// idempotent producer's batches (in order, a duplicate, out of order,
// an older epoch), some compressed.
func seedProduceBatches() [][]byte {
	raw := seedBatch()
	out := [][]byte{}
	for _, codec := range []int{codecGzip, codecSnappy, codecLZ4, codecZstd} {
		out = append(out, compressBatch(raw, codec))
	}
	out = append(out,
		withProducer(raw, 7, 1, 0),
		withProducer(raw, 7, 1, 0),
		withProducer(compressBatch(raw, codecGzip), 7, 1, int32(len(sampleMessages()))),
		withProducer(compressBatch(raw, codecSnappy), 7, 1, 100),
		withProducer(raw, 7, 0, 0),
		withProducer(compressBatch(raw, codecZstd), 8, 0, 0),
	)
	return out
}

// FuzzProduce_BatchWithCRC: no batch a produce carries makes the listener
// panic, with its length and CRC set to match whatever the fuzzer made
// of it, so mutations reach the decompressors and the idempotent
// producer's sequence checks (producers.go) instead of being refused at
// the CRC.
func FuzzProduce_BatchWithCRC(f *testing.F) {
	for _, b := range seedProduceBatches() {
		f.Add(int32(0), b)
	}
	f.Add(int32(1), seedBatch())
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(f, err)
	f.Cleanup(func() { _ = e.Close() })
	require.NoError(f, e.CreateTopic(context.Background(), "t", 2))
	s, err := NewServer(e, nil)
	require.NoError(f, err)
	f.Cleanup(func() { _ = s.Close() })
	f.Fuzz(func(t *testing.T, part int32, raw []byte) {
		raw = append([]byte(nil), raw...)
		if len(raw) >= 12 {
			binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
		}
		fixCRC(raw)
		c := newConn(s, discardConn{})
		defer c.cancel()
		rp := kmsg.NewProduceResponseTopicPartition()
		c.producePartition(c.ctx, 9, "t", part, raw, &rp)
	})
}

// contentRequests are requests that name topic "t" (two partitions), a
// missing topic and a group, with the fields set that reach past the
// empty requests' answers: the data path, the admin calls, the groups.
func contentRequests() []kmsg.Request {
	var out []kmsg.Request
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 10, 1, 300
	for _, name := range []string{"t", "none"} {
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = name
		for p := range int32(3) {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, int64(p), 100
			ft.Partitions = append(ft.Partitions, fp)
		}
		fetch.Topics = append(fetch.Topics, ft)
	}
	out = append(out, fetch)

	prod := kmsg.NewPtrProduceRequest()
	prod.Acks, prod.TimeoutMillis = -1, 1000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "t"
	for p := range int32(2) {
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Partition, pp.Records = p, seedBatch()
		pt.Partitions = append(pt.Partitions, pp)
	}
	prod.Topics = append(prod.Topics, pt)
	out = append(out, prod)

	// Batches compressed with every codec, and an idempotent producer's,
	// so the fuzzer starts from batches whose CRC matches past the
	// decoders and into the sequence checks.
	comp := kmsg.NewPtrProduceRequest()
	comp.Acks, comp.TimeoutMillis = -1, 1000
	cpt := kmsg.NewProduceRequestTopic()
	cpt.Topic = "t"
	for _, b := range seedProduceBatches() {
		cp := kmsg.NewProduceRequestTopicPartition()
		cp.Partition, cp.Records = int32(len(cpt.Partitions)%2), b
		cpt.Partitions = append(cpt.Partitions, cp)
	}
	comp.Topics = append(comp.Topics, cpt)
	out = append(out, comp)

	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "t"
	for p, ts := range []int64{-1, -2, -3, 0, 1_700_000_000_000} {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = int32(p%3), ts
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	out = append(out, lo)

	meta := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"t", "auto", "%DLQ%g"} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		meta.Topics = append(meta.Topics, mt)
	}
	meta.AllowAutoTopicCreation = true
	out = append(out, meta)

	ct := kmsg.NewPtrCreateTopicsRequest()
	for i, name := range []string{"c1", "t", "bad/name"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, int32(i-1), 1
		ct.Topics = append(ct.Topics, rt)
	}
	ct.ValidateOnly = true
	out = append(out, ct)

	cp := kmsg.NewPtrCreatePartitionsRequest()
	for i, name := range []string{"t", "none"} {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, int32(3+i)
		cp.Topics = append(cp.Topics, rt)
	}
	cp.ValidateOnly = true
	out = append(out, cp)

	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TopicNames = []string{"c1", "none"}
	dtt := kmsg.NewDeleteTopicsRequestTopic()
	dtt.Topic = kmsg.StringPtr("c1")
	dt.Topics = append(dt.Topics, dtt)
	out = append(out, dt)

	dc := kmsg.NewPtrDescribeConfigsRequest()
	for _, rt := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceTypeBroker, 0} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = rt, "t"
		rr.ConfigNames = []string{"cleanup.policy"}
		dc.Resources = append(dc.Resources, rr)
	}
	out = append(out, dc)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	ot := kmsg.NewOffsetCommitRequestTopic()
	ot.Topic = "t"
	op := kmsg.NewOffsetCommitRequestTopicPartition()
	op.Partition, op.Offset = 1, 1
	ot.Partitions = append(ot.Partitions, op)
	commit.Topics = append(commit.Topics, ot)
	out = append(out, commit)

	of := kmsg.NewPtrOffsetFetchRequest()
	of.Group = "g"
	oft := kmsg.NewOffsetFetchRequestTopic()
	oft.Topic, oft.Partitions = "t", []int32{0, 1, 5}
	of.Topics = append(of.Topics, oft)
	ofg := kmsg.NewOffsetFetchRequestGroup()
	ofg.Group = "g"
	of.Groups = append(of.Groups, ofg)
	out = append(out, of)

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", "consumer", 6000, 10
	jp := kmsg.NewJoinGroupRequestProtocol()
	jp.Name, jp.Metadata = "range", []byte{0, 1}
	join.Protocols = append(join.Protocols, jp)
	out = append(out, join)

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "cg", 0, 1000
	hb.SubscribedTopicNames = []string{"t"}
	hb.SubscribedTopicRegex = kmsg.StringPtr("t.*")
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	out = append(out, hb)

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = "g", []string{"g", "h"}
	out = append(out, fc)
	return out
}

// TestConn_FuzzSeedsAreAnswered: every version of every request of
// contentRequests decodes and is answered, so the fuzzer starts from
// requests that reach the handlers, not from frames closed at decoding.
func TestConn_FuzzSeedsAreAnswered(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true, AutoCreateTopics: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(context.Background(), "t", 2))
	s, err := NewServer(e, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	for _, req := range contentRequests() {
		v := supported[req.Key()]
		for version := v.min; version <= v.max; version++ {
			req.SetVersion(version)
			c := newConn(s, discardConn{})
			ctx, cancel := context.WithTimeout(c.ctx, 20*time.Millisecond)
			c.ctx = ctx
			err := c.handle(requestFrame(req, 1))
			cancel()
			c.cancel()
			require.NoError(t, err, "%s v%d", kmsg.NameForKey(req.Key()), version)
		}
	}
}

// panickyBroker panics when the topics are listed: a stand-in for a bug
// that some request trips.
type panickyBroker struct{ *equeue.Engine }

func (panickyBroker) Topics(context.Context) ([]equeue.TopicInfo, error) {
	panic("a bug in the broker")
}

// TestConn_PanicClosesOnlyThatConnection: a request that panics closes its
// connection with an error and a log line; the process and the server go
// on.
func TestConn_PanicClosesOnlyThatConnection(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	var logs strings.Builder
	var mu sync.Mutex
	s, err := NewServer(panickyBroker{e}, &Options{Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()

	meta := kmsg.NewPtrMetadataRequest() // every topic: lists them
	meta.SetVersion(4)
	err = newConn(s, discardConn{}).handleRecovered(requestFrame(meta, 1))
	require.ErrorContains(t, err, "internal error: a bug in the broker")
	mu.Lock()
	require.Contains(t, logs.String(), "panic in a request")
	mu.Unlock()

	versions := kmsg.NewPtrApiVersionsRequest()
	versions.SetVersion(3)
	require.NoError(t, newConn(s, discardConn{}).handleRecovered(requestFrame(versions, 2)), "the next connection is served")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
