package remote

import (
	"context"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/slab"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// A consumer's pull answers carry most of the bytes a client receives.
// Decoded by protobuf, each message of an answer costs a wire message, a
// copy of its body, its strings, and then the engine's message made of
// them: a fifth of a consumer's CPU. pullReply decodes the answer straight
// into the engine's messages instead: one copy of the answer (the one the
// codec makes from gRPC's buffers), which the messages' bodies share (as
// the engine's own messages share the record they were read from), and
// a few allocations for all the messages (internal/slab: they grow with
// the messages decoded, not with how many the answer frames). IDs are
// copied, so an application that keeps them does not keep the answer.
// It does so only for answers of the usual shape; any other answer (a field
// it does not know, a field of an unexpected type, a string that is not
// UTF-8, a delay or TTL on a message) is decoded by protobuf, so both give
// the same result, or the same refusal, for every answer.

// wireDecoder is a reply the codec (codec.go) hands the bytes of an answer
// to, instead of protobuf.
type wireDecoder interface {
	decodeWire(b []byte) error
}

// ownedDecoder is a wireDecoder that keeps parts of the answer (a pull's
// messages' bodies): the codec gives it a copy of the answer of its own,
// instead of a pooled buffer that it would copy again.
type ownedDecoder interface {
	wireDecoder
	// decodeOwned decodes b, which it may keep.
	decodeOwned(b []byte) error
}

// pullReply is the reply of a Pull call made with pullDirect.
type pullReply struct {
	res equeue.PullResult
	err error // from pullResultFromPB: protobuf decoded an invalid answer
}

var _ ownedDecoder = (*pullReply)(nil)

// pullDirect calls Pull as c.api.Pull does, and decodes its answer as
// pullResultFromPB would. A failed call's error is mapped by c.fail.
func (c *Client) pullDirect(ctx context.Context, in *pb.PullRequest) (equeue.PullResult, error) {
	var r pullReply
	if err := c.conn.Invoke(ctx, pb.Broker_Pull_FullMethodName, in, &r, grpc.StaticMethod()); err != nil {
		return equeue.PullResult{}, c.fail(err)
	}
	return r.res, r.err
}

// decodeWire decodes the answer b. Bytes protobuf cannot decode fail the
// call, as with the generated client.
func (r *pullReply) decodeWire(b []byte) error { return r.decode(b, false) }

// decodeOwned is decodeWire of an answer the messages may keep.
func (r *pullReply) decodeOwned(b []byte) error { return r.decode(b, true) }

func (r *pullReply) decode(b []byte, owned bool) error {
	if res, ok := decodePullFast(b, owned); ok {
		r.res, r.err = res, nil
		return nil
	}
	var resp pb.PullResponse
	if err := proto.Unmarshal(b, &resp); err != nil {
		return err
	}
	r.res, r.err = pullResultFromPB(&resp)
	return nil
}

// Field numbers of PullResponse and Message (equeue.proto).
const (
	pullStatus     = 1
	pullMessages   = 2
	pullNextOffset = 3
	pullMinOffset  = 4
	pullMaxOffset  = 5
	pullCorrupt    = 6
	pullExpired    = 7
	pullPriority   = 9 // after pullStored (storedanswer.go)
	// pullDeletedRetries is the count of retry copies of deleted topics
	// skipped (equeue.PullResult.DeletedTopicRetries).
	pullDeletedRetries = 10

	msgID        = 1
	msgTopic     = 2
	msgTag       = 3
	msgKeys      = 4
	msgProps     = 5
	msgBody      = 6
	msgBornAt    = 7
	msgStoredAt  = 8
	msgDeliverAt = 9
	msgExpiresAt = 10
	msgQueue     = 11
	msgOffset    = 12
	msgAttempt   = 13
	msgSysProps  = 14
)

// decodePullFast decodes a pull answer of the usual shape, as protobuf and
// pullResultFromPB would; false for any other. The messages share in when
// owned is set, else a copy of it.
func decodePullFast(in []byte, owned bool) (equeue.PullResult, bool) {
	var res equeue.PullResult
	// First pass: the answer's own fields, and how many messages.
	n := 0
	var stored []byte
	for b := in; len(b) > 0; {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return equeue.PullResult{}, false
		}
		b = b[k:]
		switch {
		case num == pullMessages && typ == protowire.BytesType:
			n++
			_, k = protowire.ConsumeBytes(b)
		case num == pullStored && typ == protowire.BytesType && stored == nil:
			stored, k = protowire.ConsumeBytes(b)
		case num == pullCorrupt && typ == protowire.BytesType:
			var packed []byte
			packed, k = protowire.ConsumeBytes(b)
			for p := packed; len(p) > 0 && k >= 0; {
				v, j := protowire.ConsumeVarint(p)
				if j < 0 {
					return equeue.PullResult{}, false
				}
				res.Corrupt = append(res.Corrupt, int64(v))
				p = p[j:]
			}
		case typ == protowire.VarintType && (num >= pullStatus && num <= pullExpired && num != pullMessages || num == pullPriority || num == pullDeletedRetries):
			var v uint64
			v, k = protowire.ConsumeVarint(b)
			switch num {
			case pullStatus:
				res.Status = equeue.PullStatus(int32(v))
			case pullNextOffset:
				res.NextOffset = int64(v)
			case pullMinOffset:
				res.MinOffset = int64(v)
			case pullMaxOffset:
				res.MaxOffset = int64(v)
			case pullCorrupt:
				res.Corrupt = append(res.Corrupt, int64(v))
			case pullExpired:
				res.Expired = int(int32(v))
			case pullPriority:
				res.Priority = int(int32(v))
			case pullDeletedRetries:
				res.DeletedTopicRetries = int(int32(v))
			}
		default:
			return equeue.PullResult{}, false
		}
		if k < 0 {
			return equeue.PullResult{}, false
		}
		b = b[k:]
	}
	if stored != nil {
		// The engine's records (storedanswer.go), in one copy that the
		// messages' bodies share. Anything amiss is left to protobuf and
		// pullResultFromPB, for their error.
		if n > 0 || len(stored) == 0 {
			return equeue.PullResult{}, false
		}
		if !owned {
			stored = append([]byte(nil), stored...)
		}
		msgs, err := equeue.DecodeStoredBatch(stored)
		if err != nil {
			return equeue.PullResult{}, false
		}
		res.Messages = msgs
		markLane(res)
		return res, true
	}
	if n == 0 {
		return res, true
	}
	// Second pass: the messages, into one copy of the answer that their
	// bodies share.
	own := in
	if !owned {
		own = append([]byte(nil), in...)
	}
	// Each message framed may take as little as its tag and length, so
	// room is made as they are decoded, not for n: an answer whose first
	// message is of another shape costs no room for those after it.
	msgs := slab.New[equeue.Message](n)
	res.Messages = make([]*equeue.Message, 0, min(n, answerAhead))
	var last strings3
	for b := own; len(b) > 0; {
		num, typ, k := protowire.ConsumeTag(b)
		b = b[k:]
		if num != pullMessages || typ != protowire.BytesType {
			k = protowire.ConsumeFieldValue(num, typ, b)
			b = b[k:]
			continue
		}
		v, k := protowire.ConsumeBytes(b)
		b = b[k:]
		m := msgs.Take()
		if !decodeMessageFast(m, v, &last) {
			return equeue.PullResult{}, false
		}
		res.Messages = append(res.Messages, m)
	}
	markLane(res)
	return res, true
}

// answerAhead is the most messages decodePullFast makes room for before it
// decoded them: a default pull's (32).
const answerAhead = 32

// strings3 remembers the last topic and tag decoded, which the messages of
// one answer share: they are made once.
type strings3 struct {
	topic, tag []byte
	topicS     string
	tagS       string
}

// str returns b as a string, reusing *s when *prev holds the same bytes.
func (l *strings3) str(b []byte, prev *[]byte, s *string) string {
	if *prev != nil && string(b) == string(*prev) {
		return *s
	}
	*prev, *s = b, string(b)
	return *s
}

// decodeMessageFast decodes one message of an answer into m, as protobuf
// and fillMessage would; false for a message of another shape. b is
// the answer's own copy: the body points into it.
func decodeMessageFast(m *equeue.Message, b []byte, last *strings3) bool {
	var props, sys map[string]string
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return false
		}
		b = b[k:]
		if typ == protowire.BytesType {
			v, k := protowire.ConsumeBytes(b)
			if k < 0 {
				return false
			}
			b = b[k:]
			switch num {
			case msgID, msgTopic, msgTag, msgKeys:
				if !utf8.Valid(v) {
					return false
				}
				switch num {
				case msgID:
					m.ID = string(v)
				case msgTopic:
					m.Topic = last.str(v, &last.topic, &last.topicS)
				case msgTag:
					m.Tag = last.str(v, &last.tag, &last.tagS)
				case msgKeys:
					m.Keys = append(m.Keys, string(v))
				}
			case msgBody:
				m.Body = v[:len(v):len(v)]
			case msgProps, msgSysProps:
				into := &props
				if num == msgSysProps {
					into = &sys
				}
				if !decodeMapEntry(into, v) {
					return false
				}
			default:
				return false
			}
			continue
		}
		if typ != protowire.VarintType {
			return false
		}
		v, k := protowire.ConsumeVarint(b)
		if k < 0 {
			return false
		}
		b = b[k:]
		switch num {
		case msgBornAt:
			m.BornAt = fromNanos(int64(v))
		case msgStoredAt:
			m.StoredAt = fromNanos(int64(v))
		case msgDeliverAt:
			m.DeliverAt = fromNanos(int64(v))
		case msgExpiresAt:
			m.ExpiresAt = fromNanos(int64(v))
		case msgQueue:
			m.Queue = int(int32(v))
		case msgOffset:
			m.Offset = int64(v)
		case msgAttempt:
			m.Attempt = int(int32(v))
		default:
			return false
		}
	}
	if len(m.Body) == 0 {
		m.Body = nil
	}
	if len(props) > 0 {
		m.Properties = props
	}
	if len(sys) > 0 {
		m.SetSysProperties(sys)
	}
	return true
}

// decodeMapEntry adds one entry of a string-to-string map field to *into;
// false for an entry of another shape.
func decodeMapEntry(into *map[string]string, b []byte) bool {
	var key, val string
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 || typ != protowire.BytesType || (num != 1 && num != 2) {
			return false
		}
		b = b[k:]
		v, k := protowire.ConsumeBytes(b)
		if k < 0 || !utf8.Valid(v) {
			return false
		}
		b = b[k:]
		if num == 1 {
			key = string(v)
		} else {
			val = string(v)
		}
	}
	if *into == nil {
		*into = map[string]string{}
	}
	(*into)[key] = val
	return true
}
