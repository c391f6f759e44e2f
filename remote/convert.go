package remote

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// Conversions between the engine's types and the wire's. Times travel as
// Unix nanoseconds with 0 for the zero time; decoding gives the same value
// as the engine's own record decoding (time.Unix(0, n)).

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// startNanos is t, a time the engine compares with its messages' stored
// times (a join's FromTime, a reset's Time), in Unix nanoseconds within
// the range the wire carries (1677..2262). Every stored time lies in that
// range, so a time before it starts where its first instant does, and one
// after it where its last does; nanos would wrap such a time around to
// another date (after every message would become before them all).
func startNanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Before(minWireTime):
		return math.MinInt64
	case t.After(maxWireTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func durationPB(d time.Duration) *durationpb.Duration {
	if d == 0 {
		return nil
	}
	return durationpb.New(d)
}

// fromDurationPB returns a wire duration; an invalid one is an error.
func fromDurationPB(d *durationpb.Duration) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	if err := d.CheckValid(); err != nil {
		return 0, fmt.Errorf("%w: %v", equeue.ErrInvalidArgument, err)
	}
	return d.AsDuration(), nil
}

// toInt32 narrows an int for the wire; values out of range become the
// nearest bound. It is kept for the broker's answers (values the engine
// gave, within range) and for the requests' upper bounds, where a clamp
// is harmless: a pull's Max and a listing's size (the clamped value keeps
// its sign and stays beyond what the engine allows, which refuses it as
// it refuses the caller's, naming the bound) and a pull's MaxBytes (a
// bound past 2^31-1 bytes bounds no answer, which MaxMessageBytes does).
// A queue number (checkQueue) or a count the broker acts on or stores
// (countInt32) is refused instead.
func toInt32(v int) int32 {
	return int32(max(math.MinInt32, min(v, math.MaxInt32)))
}

func messageToPB(m *equeue.Message) *pb.Message {
	out := new(pb.Message)
	fillMessagePB(out, m)
	return out
}

// fillMessagePB sets out, a new zero message, to m.
func fillMessagePB(out *pb.Message, m *equeue.Message) {
	out.Id, out.Topic, out.Tag, out.Keys, out.Properties, out.Body = m.ID, m.Topic, m.Tag, m.Keys, m.Properties, m.Body
	out.BornAtUnixNano, out.StoredAtUnixNano = nanos(m.BornAt), nanos(m.StoredAt)
	out.DeliverAtUnixNano, out.ExpiresAtUnixNano = nanos(m.DeliverAt), nanos(m.ExpiresAt)
	out.Queue, out.Offset, out.Attempt = toInt32(m.Queue), m.Offset, toInt32(m.Attempt)
	out.SysProperties, out.Delay, out.Ttl = m.SysProperties(), durationPB(m.Delay), durationPB(m.TTL)
}

func messageFromPB(p *pb.Message) (*equeue.Message, error) {
	m := new(equeue.Message)
	if err := fillMessage(m, p); err != nil {
		return nil, err
	}
	return m, nil
}

// fillMessage sets m, a new zero message, to p.
func fillMessage(m *equeue.Message, p *pb.Message) error {
	delay, err := fromDurationPB(p.GetDelay())
	if err != nil {
		return err
	}
	ttl, err := fromDurationPB(p.GetTtl())
	if err != nil {
		return err
	}
	m.ID, m.Topic, m.Tag, m.Keys, m.Properties, m.Body = p.GetId(), p.GetTopic(), p.GetTag(), p.GetKeys(), p.GetProperties(), p.GetBody()
	m.BornAt, m.StoredAt = fromNanos(p.GetBornAtUnixNano()), fromNanos(p.GetStoredAtUnixNano())
	m.DeliverAt, m.ExpiresAt = fromNanos(p.GetDeliverAtUnixNano()), fromNanos(p.GetExpiresAtUnixNano())
	m.Queue, m.Offset, m.Attempt, m.Delay, m.TTL = int(p.GetQueue()), p.GetOffset(), int(p.GetAttempt()), delay, ttl
	if len(m.Properties) == 0 {
		m.Properties = nil
	}
	if len(m.Body) == 0 {
		m.Body = nil
	}
	if sys := p.GetSysProperties(); len(sys) > 0 {
		m.SetSysProperties(sys)
	}
	return nil
}

// messagesToPB encodes ms, checking each message's times with check:
// wireTimes for an append, answerTimes for an answer.
func messagesToPB(ms []*equeue.Message, check func(int, *equeue.Message) error) ([]*pb.Message, error) {
	out := make([]*pb.Message, len(ms))
	slab := make([]pb.Message, len(ms)) // one allocation for the batch
	for i, m := range ms {
		if m == nil {
			return nil, fmt.Errorf("%w: message %d is nil", equeue.ErrInvalidArgument, i)
		}
		if err := check(i, m); err != nil {
			return nil, err
		}
		fillMessagePB(&slab[i], m)
		out[i] = &slab[i]
		if m.ExpiresAt.After(maxWireTime) {
			out[i].ExpiresAtUnixNano = 0 // beyond 2262: never expires, as in the engine
		}
	}
	return out, nil
}

// The range of times Unix nanoseconds in an int64 can carry (1677..2262).
var (
	minWireTime = time.Unix(0, math.MinInt64)
	maxWireTime = time.Unix(0, math.MaxInt64)
)

// onWire reports whether the wire carries t as it is.
func onWire(t time.Time) bool {
	return t.IsZero() || (!t.Before(minWireTime) && !t.After(maxWireTime))
}

// wireTimes refuses the times of message i that the wire cannot carry,
// with the engine's errors: UnixNano would wrap them to another date. An
// ExpiresAt after the range means "never" and is sent as none.
func wireTimes(i int, m *equeue.Message) error {
	if onWire(m.BornAt) && onWire(m.DeliverAt) && onWire(m.ExpiresAt) {
		return nil
	}
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"born-at", m.BornAt}, {"deliver-at", m.DeliverAt}, {"expires-at", m.ExpiresAt}} {
		if f.t.IsZero() || (!f.t.Before(minWireTime) && !f.t.After(maxWireTime)) {
			continue
		}
		switch {
		case f.name == "expires-at" && f.t.After(maxWireTime):
			continue
		case f.name == "deliver-at" && f.t.After(maxWireTime):
			return fmt.Errorf("%w: %w: message %d: deliver-at %v is after %v", equeue.ErrInvalidDelay, equeue.ErrInvalidArgument, i, f.t.UTC(), maxWireTime.UTC())
		}
		return fmt.Errorf("%w: message %d: %s %v outside %v..%v", equeue.ErrInvalidArgument, i, f.name, f.t.UTC(), minWireTime.UTC(), maxWireTime.UTC())
	}
	return nil
}

// answerTimes is wireTimes for a message an answer carries, which also
// refuses a StoredAt the wire cannot carry rather than send it as another
// date. The engine sets StoredAt, so only a Backend of one's own or a bug
// puts one out of range. An append's StoredAt is not checked: the engine
// ignores it and stores its own.
func answerTimes(i int, m *equeue.Message) error {
	if err := wireTimes(i, m); err != nil {
		return err
	}
	if !onWire(m.StoredAt) {
		return fmt.Errorf("%w: message %d: stored-at %v outside %v..%v", equeue.ErrInvalidArgument, i, m.StoredAt.UTC(), minWireTime.UTC(), maxWireTime.UTC())
	}
	return nil
}

func messagesFromPB(ps []*pb.Message) ([]*equeue.Message, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	out := make([]*equeue.Message, len(ps))
	slab := make([]equeue.Message, len(ps)) // one allocation for the batch
	for i, p := range ps {
		if err := fillMessage(&slab[i], p); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out[i] = &slab[i]
	}
	return out, nil
}

// syncToPB encodes a per-append sync override. SyncPolicy keeps its fields
// private, so the interval is recovered from its String form.
func syncToPB(p *equeue.SyncPolicy) (pb.SyncPolicy, *durationpb.Duration, error) {
	switch {
	case p == nil:
		return pb.SyncPolicy_SYNC_POLICY_DEFAULT, nil, nil
	case *p == equeue.SyncAlways:
		return pb.SyncPolicy_SYNC_POLICY_ALWAYS, nil, nil
	case *p == equeue.SyncNever:
		return pb.SyncPolicy_SYNC_POLICY_NEVER, nil, nil
	}
	s := p.String()
	if inner, ok := strings.CutPrefix(s, "interval("); ok {
		if d, err := time.ParseDuration(strings.TrimSuffix(inner, ")")); err == nil && equeue.SyncInterval(d) == *p {
			return pb.SyncPolicy_SYNC_POLICY_INTERVAL, durationpb.New(d), nil
		}
	}
	return 0, nil, fmt.Errorf("%w: sync policy %s cannot be sent", equeue.ErrInvalidOptions, s)
}

// The policies of most appends, shared by their requests (which only read
// them) instead of allocated for each.
var (
	syncAlways = equeue.SyncAlways
	syncNever  = equeue.SyncNever
)

func syncFromPB(k pb.SyncPolicy, every *durationpb.Duration) (*equeue.SyncPolicy, error) {
	switch k {
	case pb.SyncPolicy_SYNC_POLICY_DEFAULT:
		return nil, nil
	case pb.SyncPolicy_SYNC_POLICY_ALWAYS:
		return &syncAlways, nil
	case pb.SyncPolicy_SYNC_POLICY_NEVER:
		return &syncNever, nil
	case pb.SyncPolicy_SYNC_POLICY_INTERVAL:
		d, err := fromDurationPB(every)
		if err != nil {
			return nil, err
		}
		// Declared here: a policy declared for every case escapes to the
		// heap on every call, the usual ones too.
		p := equeue.SyncInterval(d)
		return &p, nil
	default:
		return nil, fmt.Errorf("%w: unknown sync policy %d", equeue.ErrInvalidOptions, k)
	}
}

func grantsToPB(gs []equeue.Grant) []*pb.Grant {
	out := make([]*pb.Grant, len(gs))
	for i, g := range gs {
		out[i] = &pb.Grant{Topic: g.Topic, Queue: toInt32(g.Queue), Epoch: g.Epoch}
	}
	return out
}

func grantFromPB(g *pb.Grant) equeue.Grant {
	return equeue.Grant{QueueRef: equeue.QueueRef{Topic: g.GetTopic(), Queue: int(g.GetQueue())}, Epoch: g.GetEpoch()}
}

func grantsFromPB(gs []*pb.Grant) []equeue.Grant {
	out := make([]equeue.Grant, len(gs))
	for i, g := range gs {
		out[i] = grantFromPB(g)
	}
	return out
}

// revokingFromPB keeps the engine's nil for "nothing to hand over".
func revokingFromPB(gs []*pb.Grant) []equeue.Grant {
	if len(gs) == 0 {
		return nil
	}
	return grantsFromPB(gs)
}

func assignmentToPB(a equeue.Assignment) *pb.Assignment {
	return &pb.Assignment{Group: a.Group, Member: a.Member, Epoch: a.Epoch, Version: a.Version,
		Queues: grantsToPB(a.Queues), Pending: toInt32(a.Pending), Revoking: grantsToPB(a.Revoking), Priorities: lanesToPB(a.Priorities),
		SessionTimeout: durationPB(a.SessionTimeout), MaxPullWait: durationPB(a.MaxPullWait)}
}

// lanesToPB converts Assignment.Priorities; nil stays nil.
func lanesToPB(m map[string]int) map[string]int32 {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]int32, len(m))
	for t, n := range m {
		out[t] = toInt32(n)
	}
	return out
}

// lanesFromPB converts Assignment.Priorities; empty is nil.
func lanesFromPB(m map[string]int32) map[string]int {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]int, len(m))
	for t, n := range m {
		out[t] = int(n)
	}
	return out
}

func assignmentFromPB(a *pb.Assignment) equeue.Assignment {
	return equeue.Assignment{Group: a.GetGroup(), Member: a.GetMember(), Epoch: a.GetEpoch(), Version: a.GetVersion(),
		Queues: grantsFromPB(a.GetQueues()), Pending: int(a.GetPending()), Revoking: revokingFromPB(a.GetRevoking()),
		Priorities: lanesFromPB(a.GetPriorities()), SessionTimeout: sessionFromPB(a.GetSessionTimeout()),
		MaxPullWait: sessionFromPB(a.GetMaxPullWait())}
}

// sessionFromPB converts Assignment.SessionTimeout, and MaxPullWait alike.
// A server of a version before it sends none: zero, unknown. So is one
// that is invalid or not positive, which no engine applies, rather than
// an error that would fail a heartbeat that got through.
func sessionFromPB(d *durationpb.Duration) time.Duration {
	s, err := fromDurationPB(d)
	if err != nil || s < 0 {
		return 0
	}
	return s
}

func subsToPB(ss []equeue.Subscription) []*pb.Subscription {
	out := make([]*pb.Subscription, len(ss))
	for i, s := range ss {
		out[i] = &pb.Subscription{Topic: s.Topic, Filter: s.Filter}
	}
	return out
}

func subsFromPB(ss []*pb.Subscription) []equeue.Subscription {
	if len(ss) == 0 {
		return nil
	}
	out := make([]equeue.Subscription, len(ss))
	for i, s := range ss {
		out[i] = equeue.Subscription{Topic: s.GetTopic(), Filter: s.GetFilter()}
	}
	return out
}

func topicToPB(t equeue.TopicInfo) *pb.TopicInfo {
	out := &pb.TopicInfo{Name: t.Name, Id: t.ID, CreatedAtUnixNano: nanos(t.CreatedAt), Queues: make([]*pb.QueueInfo, len(t.Queues)),
		Priorities: toInt32(t.Priorities), Limits: limitsToPB(t.Limits), Messages: t.Messages}
	for i, q := range t.Queues {
		out.Queues[i] = &pb.QueueInfo{Id: toInt32(q.ID), MinOffset: q.MinOffset, MaxOffset: q.MaxOffset, Writable: q.Writable, Messages: &q.Messages}
	}
	return out
}

func topicFromPB(t *pb.TopicInfo) equeue.TopicInfo {
	out := equeue.TopicInfo{Name: t.GetName(), ID: t.GetId(), CreatedAt: fromNanos(t.GetCreatedAtUnixNano()), Priorities: int(t.GetPriorities()), Messages: t.GetMessages()}
	out.Limits, _ = limitsFromPB(t.GetLimits()) // the server's own limits: valid
	if n := len(t.GetQueues()); n > 0 {
		out.Queues = make([]equeue.QueueInfo, n)
	}
	for i, q := range t.GetQueues() {
		out.Queues[i] = equeue.QueueInfo{ID: int(q.GetId()), MinOffset: q.GetMinOffset(), MaxOffset: q.GetMaxOffset(), Writable: q.GetWritable(), Messages: q.GetMessages()}
		if q.Messages == nil { // a server before the field: the offsets' span
			out.Queues[i].Messages = max(q.GetMaxOffset()-q.GetMinOffset(), 0)
		}
	}
	return out
}

func groupToPB(g equeue.GroupInfo) *pb.GroupInfo {
	out := &pb.GroupInfo{Name: g.Name, Model: pb.MessageModel(g.Model), Subscriptions: subsToPB(g.Subscriptions),
		Strategy: g.Strategy, Epoch: g.Epoch}
	for _, m := range g.Members {
		mi := &pb.MemberInfo{Id: m.ID}
		for _, q := range m.Queues {
			mi.Queues = append(mi.Queues, &pb.QueueRef{Topic: q.Topic, Queue: toInt32(q.Queue)})
		}
		out.Members = append(out.Members, mi)
	}
	for _, q := range g.Queues {
		out.Queues = append(out.Queues, &pb.GroupQueueInfo{Topic: q.Topic, Queue: toInt32(q.Queue), Owner: q.Owner,
			Committed: q.Committed, MaxOffset: q.MaxOffset, Lag: q.Lag})
	}
	return out
}

func groupFromPB(g *pb.GroupInfo) equeue.GroupInfo {
	out := equeue.GroupInfo{Name: g.GetName(), Model: equeue.MessageModel(g.GetModel()),
		Subscriptions: subsFromPB(g.GetSubscriptions()), Strategy: g.GetStrategy(), Epoch: g.GetEpoch()}
	for _, m := range g.GetMembers() {
		mi := equeue.MemberInfo{ID: m.GetId()}
		for _, q := range m.GetQueues() {
			mi.Queues = append(mi.Queues, equeue.QueueRef{Topic: q.GetTopic(), Queue: int(q.GetQueue())})
		}
		out.Members = append(out.Members, mi)
	}
	for _, q := range g.GetQueues() {
		out.Queues = append(out.Queues, equeue.GroupQueueInfo{QueueRef: equeue.QueueRef{Topic: q.GetTopic(), Queue: int(q.GetQueue())},
			Owner: q.GetOwner(), Committed: q.GetCommitted(), MaxOffset: q.GetMaxOffset(), Lag: q.GetLag()})
	}
	return out
}

// deadLetterToPB encodes d, entry i of a page, checking its message's
// times as a pull answer's are (answerTimes): one the wire cannot carry is
// ErrInvalidArgument naming the entry, and an ExpiresAt after the range
// (never) is sent as none.
func deadLetterToPB(i int, d equeue.DLQEntry) (*pb.DeadLetter, error) {
	out := &pb.DeadLetter{Offset: d.Offset, LastError: d.LastError, Attempts: toInt32(d.Attempts), Redriven: d.Redriven}
	if d.Message != nil {
		if err := answerTimes(i, d.Message); err != nil {
			return nil, fmt.Errorf("dead letter at offset %d: %w", d.Offset, err)
		}
		out.Message = messageToPB(d.Message)
		if d.Message.ExpiresAt.After(maxWireTime) {
			out.Message.ExpiresAtUnixNano = 0 // beyond 2262: never expires, as in the engine
		}
		out.Priority = toInt32(d.Message.Priority)
	}
	return out, nil
}

func deadLetterFromPB(d *pb.DeadLetter) (equeue.DLQEntry, error) {
	out := equeue.DLQEntry{Offset: d.GetOffset(), LastError: d.GetLastError(), Attempts: int(d.GetAttempts()), Redriven: d.GetRedriven()}
	if d.GetMessage() != nil {
		m, err := messageFromPB(d.GetMessage())
		if err != nil {
			return equeue.DLQEntry{}, err
		}
		m.Priority = originPriority(m, d.GetPriority())
		out.Message = m
	}
	return out, nil
}

// originPriority is the priority lane a dead letter's message was stored
// in: sent, the lane the broker lists it with, which for a copy made before
// copies recorded their lane it works out from the lane count of its topic
// now. A broker that predates the field sends 0: then the lane the copy
// records (equeue.SysOriginPriority), and 0 for a copy that records none.
// A negative one, which no lane is, is taken as none sent, as the engine
// ignores a negative lane a copy records: Priority is never negative.
func originPriority(m *equeue.Message, sent int32) int {
	if sent > 0 {
		return int(sent)
	}
	p, err := strconv.Atoi(m.SysProperties()[equeue.SysOriginPriority])
	if err != nil || p < 0 {
		return 0
	}
	return p
}

// consumeFromToPB and consumeFromFromPB map ConsumeFrom by name: the wire
// keeps 0 = latest for older clients, while package equeue's zero value is
// the default (earliest).
func consumeFromToPB(f equeue.ConsumeFrom) pb.ConsumeFrom {
	switch f {
	case equeue.ConsumeFromDefault:
		return pb.ConsumeFrom_CONSUME_FROM_DEFAULT
	case equeue.ConsumeFromEarliest:
		return pb.ConsumeFrom_CONSUME_FROM_EARLIEST
	case equeue.ConsumeFromTimestamp:
		return pb.ConsumeFrom_CONSUME_FROM_TIMESTAMP
	case equeue.ConsumeFromLatest:
		return pb.ConsumeFrom_CONSUME_FROM_LATEST
	}
	return pb.ConsumeFrom(-1) // the engine refuses it
}

func consumeFromFromPB(f pb.ConsumeFrom) equeue.ConsumeFrom {
	switch f {
	case pb.ConsumeFrom_CONSUME_FROM_DEFAULT:
		return equeue.ConsumeFromDefault
	case pb.ConsumeFrom_CONSUME_FROM_EARLIEST:
		return equeue.ConsumeFromEarliest
	case pb.ConsumeFrom_CONSUME_FROM_TIMESTAMP:
		return equeue.ConsumeFromTimestamp
	case pb.ConsumeFrom_CONSUME_FROM_LATEST:
		return equeue.ConsumeFromLatest
	}
	return equeue.ConsumeFrom(-1) // the engine refuses it
}

func attemptsToPB(atts []equeue.MessageAttempts) []*pb.MessageAttempts {
	if len(atts) == 0 {
		return nil
	}
	out := make([]*pb.MessageAttempts, len(atts))
	for i, a := range atts {
		out[i] = &pb.MessageAttempts{Offset: a.Offset, Attempts: toInt32(a.Attempts), Done: a.Done}
	}
	return out
}

func attemptsFromPB(atts []*pb.MessageAttempts) []equeue.MessageAttempts {
	if len(atts) == 0 {
		return nil
	}
	out := make([]equeue.MessageAttempts, len(atts))
	for i, a := range atts {
		out[i] = equeue.MessageAttempts{Offset: a.GetOffset(), Attempts: int(a.GetAttempts()), Done: a.GetDone()}
	}
	return out
}

// fetchedToPB flattens the stored attempts of fetched queues, each tagged
// with the index of its queue.
func fetchedToPB(offs []equeue.OffsetCommit) []*pb.FetchedAttempts {
	var out []*pb.FetchedAttempts
	for i, o := range offs {
		for _, a := range attemptsToPB(o.Attempts) {
			out = append(out, &pb.FetchedAttempts{QueueIndex: toInt32(i), Attempts: a})
		}
	}
	return out
}
