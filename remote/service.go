package remote

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// service implements the Broker RPCs on an engine. Authentication, the
// in-flight limit and error mapping are done around it (Server.guard); its
// methods return engine errors as they are.
type service struct {
	pb.UnimplementedBrokerServer
	e Backend
	s *Server
	// async is e's AppendAsync when e owns it (equeue.OwnsFastPaths): the
	// append stream appends through it without a goroutine per append.
	async asyncBroker
}

// newService serves e for s.
func newService(e Backend, s *Server) *service {
	v := &service{e: e, s: s}
	if ab, ok := e.(asyncBroker); ok && equeue.OwnsFastPaths(e) {
		v.async = ab
	}
	return v
}

// nonNegative rejects a negative count that the engine would otherwise read
// as "use the default" or report less clearly.
func nonNegative(name string, v int64) error {
	if v < 0 {
		return fmt.Errorf("%w: negative %s %d", equeue.ErrInvalidArgument, name, v)
	}
	return nil
}

func (v *service) Route(ctx context.Context, req *pb.RouteRequest) (*pb.RouteResponse, error) {
	r, err := v.e.Route(ctx, req.GetTopic())
	if err != nil {
		return nil, err
	}
	out := &pb.RouteResponse{Topic: r.Topic, Queues: toInt32(r.Queues), Writable: make([]int32, len(r.Writable)), Priorities: toInt32(r.Priorities)}
	for i, q := range r.Writable {
		out.Writable[i] = toInt32(q)
	}
	return out, nil
}

func (v *service) Append(ctx context.Context, req *pb.AppendRequest) (*pb.AppendResponse, error) {
	in, err := appendFromPB(req)
	if err != nil {
		return nil, err
	}
	res, err := v.e.Append(ctx, in)
	if err != nil {
		return nil, err
	}
	return appendToPB(res), nil
}

// appendFromPB decodes and checks an append request.
func appendFromPB(req *pb.AppendRequest) (*equeue.AppendRequest, error) {
	if len(req.GetMessages()) == 0 {
		return nil, fmt.Errorf("%w: no messages to append", equeue.ErrInvalidArgument)
	}
	sync, err := syncFromPB(req.GetSync(), req.GetSyncInterval())
	if err != nil {
		return nil, err
	}
	msgs, err := messagesFromPB(req.GetMessages())
	if err != nil {
		return nil, err
	}
	return &equeue.AppendRequest{Topic: req.GetTopic(), Queue: int(req.GetQueue()), Messages: msgs, Sync: sync}, nil
}

// appendToPB encodes an append's answer.
func appendToPB(res equeue.AppendResult) *pb.AppendResponse {
	return &pb.AppendResponse{Queue: toInt32(res.Queue), FirstOffset: res.FirstOffset, StoredAtUnixNano: nanos(res.StoredAt),
		Ids: res.IDs, Delayed: res.Delayed, Duplicate: res.Duplicate}
}

func (v *service) Pull(ctx context.Context, req *pb.PullRequest) (*pb.PullResponse, error) {
	res, stored, limit, err := v.pull(ctx, req)
	if err != nil {
		return nil, err
	}
	return pullAnswer(res, limit, stored)
}

// pull runs a Pull call on the engine; limit is the most bytes its answer
// may take. stored holds the messages' records when the client reads them
// (storedanswer.go).
func (v *service) pull(ctx context.Context, req *pb.PullRequest) (res equeue.PullResult, stored *equeue.StoredRecords, limit int, err error) {
	wait, err := fromDurationPB(req.GetWait())
	if err != nil {
		return equeue.PullResult{}, nil, 0, err
	}
	if err := nonNegative("pull max", int64(req.GetMax())); err != nil {
		return equeue.PullResult{}, nil, 0, err
	}
	if err := nonNegative("pull answer bytes", int64(req.GetMaxAnswerBytes())); err != nil {
		return equeue.PullResult{}, nil, 0, err
	}
	if err := nonNegative("pull max bytes", int64(req.GetMaxBytes())); err != nil {
		return equeue.PullResult{}, nil, 0, err
	}
	limit = v.s.answerLimit(int(req.GetMaxAnswerBytes()))
	wait = spread(wait)
	ctx, done := v.s.longPoll(ctx)
	defer done()
	p := &equeue.PullRequest{
		Topic: req.GetTopic(), Queue: int(req.GetQueue()), Offset: req.GetOffset(), Max: int(req.GetMax()),
		Filter: req.GetFilter(), Wait: wait, Group: req.GetGroup(), Member: req.GetMember(), Epoch: req.GetEpoch(),
		MaxBytes: pullBytes(recordRoom(limit), req),
	}
	res, stored, err = pullBackend(ctx, v.e, p, req.GetStoredBatchVersion())
	alone := pullBytes(limit, req)
	if pastSlack(err, alone) {
		p.Max, p.MaxBytes, p.Wait = 1, alone, 0
		res, stored, err = pullBackend(ctx, v.e, p, req.GetStoredBatchVersion())
	}
	if err != nil {
		return equeue.PullResult{}, nil, 0, v.s.stopped(ctx, tooLargeFor(err, alone))
	}
	return res, stored, limit, nil
}

// pullBytes is the engine's MaxBytes for pull p with room for room bytes
// of records: room, or the caller's own bound when that is smaller.
func pullBytes(room int, p *pb.PullRequest) int {
	if own := int(p.GetMaxBytes()); own > 0 && own < room {
		return own
	}
	return room
}

func (v *service) SendBack(ctx context.Context, req *pb.SendBackRequest) (*pb.SendBackResponse, error) {
	if req.GetGrant() == nil {
		return nil, fmt.Errorf("%w: send-back has no grant", equeue.ErrInvalidArgument)
	}
	delay, err := fromDurationPB(req.GetDelay())
	if err != nil {
		return nil, err
	}
	res, err := v.e.SendBack(ctx, &equeue.SendBackRequest{
		Group: req.GetGroup(), Member: req.GetMember(), Grant: grantFromPB(req.GetGrant()), Offset: req.GetOffset(),
		Attempts: int(req.GetAttempts()), Delay: delay, Cause: req.GetCause(), DeadLetter: req.GetDeadLetter(),
	})
	if err != nil {
		return nil, err
	}
	return &pb.SendBackResponse{Topic: res.Topic, Attempts: toInt32(res.Attempts), Duplicate: res.Duplicate}, nil
}

func (v *service) JoinGroup(ctx context.Context, req *pb.JoinGroupRequest) (*pb.JoinGroupResponse, error) {
	subs := subsFromPB(req.GetSubscriptions())
	if err := v.joinCreatesNothing(ctx, req.GetGroup(), subs); err != nil {
		return nil, refusedJoin(err) // as the engine's own refusals are
	}
	a, err := v.e.JoinGroup(ctx, &equeue.JoinRequest{
		Group: req.GetGroup(), Member: req.GetMember(), Model: equeue.MessageModel(req.GetModel()),
		Subscriptions: subs, From: consumeFromFromPB(req.GetFrom()),
		FromTime: fromNanos(req.GetFromTimeUnixNano()), Strategy: req.GetStrategy(), Incarnation: req.GetIncarnation(),
	})
	if err != nil {
		return nil, err
	}
	return &pb.JoinGroupResponse{Assignment: assignmentToPB(a)}, nil
}

// joinCreatesNothing refuses, with the engine's ErrTopicNotFound, a join
// by a token that may not create topics (neither the produce nor the admin
// right) that subscribes to a topic that does not exist: with
// Options.AutoCreateTopics the engine creates the topics a join subscribes
// to, and a consume-only token must not create topics (as the Kafka
// listener creates topics through Metadata for the produce right only).
// The group's own retry topic is the engine's to create, as on every
// engine. A topic deleted between this check and the join is still
// created; that needs a topic that existed a moment before.
func (v *service) joinCreatesNothing(ctx context.Context, group string, subs []equeue.Subscription) error {
	if v.s.tokens == nil {
		return nil
	}
	if e, ok := v.s.tokens.bearer(ctx); ok && e.rights&(RightProduce|RightAdmin) != 0 {
		return nil
	}
	for _, sub := range subs {
		if sub.Topic == equeue.RetryTopic(group) {
			continue
		}
		if _, err := v.e.Topic(ctx, sub.Topic); errors.Is(err, equeue.ErrTopicNotFound) {
			return err
		}
	}
	return nil
}

func (v *service) Heartbeat(ctx context.Context, req *pb.HeartbeatRequest) (*pb.HeartbeatResponse, error) {
	wait, err := fromDurationPB(req.GetWait())
	if err != nil {
		return nil, err
	}
	ctx, done := v.s.longPoll(ctx)
	defer done()
	a, err := v.e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: req.GetGroup(), Member: req.GetMember(),
		KnownVersion: req.GetKnownVersion(), Wait: wait, Incarnation: req.GetIncarnation()})
	if err != nil {
		return nil, v.s.stopped(ctx, err)
	}
	return &pb.HeartbeatResponse{Assignment: assignmentToPB(a)}, nil
}

func (v *service) LeaveGroup(ctx context.Context, req *pb.LeaveGroupRequest) (*pb.LeaveGroupResponse, error) {
	if err := v.e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: req.GetGroup(), Member: req.GetMember(), Incarnation: req.GetIncarnation()}); err != nil {
		return nil, err
	}
	return &pb.LeaveGroupResponse{}, nil
}

func (v *service) ReleaseQueues(ctx context.Context, req *pb.ReleaseQueuesRequest) (*pb.ReleaseQueuesResponse, error) {
	if err := v.e.ReleaseQueues(ctx, req.GetGroup(), req.GetMember(), grantsFromPB(req.GetQueues())); err != nil {
		return nil, err
	}
	return &pb.ReleaseQueuesResponse{}, nil
}

func (v *service) CommitOffsets(ctx context.Context, req *pb.CommitOffsetsRequest) (*pb.CommitOffsetsResponse, error) {
	cr := &equeue.CommitRequest{Group: req.GetGroup(), Member: req.GetMember(), Incarnation: req.GetIncarnation(),
		Offsets: make([]equeue.OffsetCommit, len(req.GetOffsets()))}
	for i, o := range req.GetOffsets() {
		if o.GetGrant() == nil {
			return nil, fmt.Errorf("%w: offset %d has no grant", equeue.ErrInvalidArgument, i)
		}
		cr.Offsets[i] = equeue.OffsetCommit{Grant: grantFromPB(o.GetGrant()), Offset: o.GetOffset(), Attempts: attemptsFromPB(o.GetAttempts())}
	}
	if err := v.e.CommitOffsets(ctx, cr); err != nil {
		return nil, err
	}
	return &pb.CommitOffsetsResponse{}, nil
}

func (v *service) FetchOffsets(ctx context.Context, req *pb.FetchOffsetsRequest) (*pb.FetchOffsetsResponse, error) {
	offs, err := v.e.FetchOffsets(ctx, req.GetGroup(), req.GetMember(), grantsFromPB(req.GetQueues()))
	if err != nil {
		return nil, err
	}
	out := &pb.FetchOffsetsResponse{Offsets: make([]int64, len(offs)), Attempts: fetchedToPB(offs)}
	for i, o := range offs {
		out.Offsets[i] = o.Offset
	}
	return out, nil
}

func (v *service) CreateTopic(ctx context.Context, req *pb.CreateTopicRequest) (*pb.CreateTopicResponse, error) {
	if err := nonNegative("queue count", int64(req.GetQueues())); err != nil {
		return nil, err
	}
	dedup, err := fromDurationPB(req.GetDedupWindow())
	if err != nil {
		return nil, err
	}
	limits, err := limitsFromPB(req.GetLimits())
	if err != nil {
		return nil, err
	}
	if err := v.e.CreateTopicWith(ctx, req.GetName(), equeue.TopicOptions{Queues: int(req.GetQueues()), DedupWindow: dedup,
		Priorities: int(req.GetPriorities()), Limits: limits}); err != nil {
		return nil, err
	}
	return &pb.CreateTopicResponse{}, nil
}

func (v *service) AddQueues(ctx context.Context, req *pb.AddQueuesRequest) (*pb.AddQueuesResponse, error) {
	if err := v.e.AddQueues(ctx, req.GetName(), int(req.GetCount())); err != nil {
		return nil, err
	}
	return &pb.AddQueuesResponse{}, nil
}

func (v *service) DeleteTopic(ctx context.Context, req *pb.DeleteTopicRequest) (*pb.DeleteTopicResponse, error) {
	if err := v.e.DeleteTopic(ctx, req.GetName()); err != nil {
		return nil, err
	}
	return &pb.DeleteTopicResponse{}, nil
}

func (v *service) SetQueueWritable(ctx context.Context, req *pb.SetQueueWritableRequest) (*pb.SetQueueWritableResponse, error) {
	if err := v.e.SetQueueWritable(ctx, req.GetName(), int(req.GetQueue()), req.GetWritable()); err != nil {
		return nil, err
	}
	return &pb.SetQueueWritableResponse{}, nil
}

func (v *service) ListTopics(ctx context.Context, _ *pb.ListTopicsRequest) (*pb.ListTopicsResponse, error) {
	ts, err := v.e.Topics(ctx)
	if err != nil {
		return nil, err
	}
	out := &pb.ListTopicsResponse{Topics: make([]*pb.TopicInfo, len(ts))}
	for i, t := range ts {
		out.Topics[i] = topicToPB(t)
	}
	return out, nil
}

func (v *service) DescribeTopic(ctx context.Context, req *pb.DescribeTopicRequest) (*pb.DescribeTopicResponse, error) {
	t, err := v.e.Topic(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	return &pb.DescribeTopicResponse{Topic: topicToPB(t)}, nil
}

func (v *service) ListGroups(ctx context.Context, _ *pb.ListGroupsRequest) (*pb.ListGroupsResponse, error) {
	gs, err := v.e.Groups(ctx)
	if err != nil {
		return nil, err
	}
	out := &pb.ListGroupsResponse{Groups: make([]*pb.GroupInfo, len(gs))}
	for i, g := range gs {
		out.Groups[i] = groupToPB(g)
	}
	return out, nil
}

func (v *service) DescribeGroup(ctx context.Context, req *pb.DescribeGroupRequest) (*pb.DescribeGroupResponse, error) {
	g, err := v.e.Group(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	return &pb.DescribeGroupResponse{Group: groupToPB(g)}, nil
}

func (v *service) ResetOffsets(ctx context.Context, req *pb.ResetOffsetsRequest) (*pb.ResetOffsetsResponse, error) {
	rr := equeue.ResetRequest{To: equeue.ResetTarget(req.GetTo()), Time: fromNanos(req.GetTimeUnixNano())}
	if len(req.GetOffsets()) > 0 {
		rr.Offsets = make(map[equeue.QueueRef]int64, len(req.GetOffsets()))
		for _, o := range req.GetOffsets() {
			ref := equeue.QueueRef{Topic: o.GetTopic(), Queue: int(o.GetQueue())}
			if _, dup := rr.Offsets[ref]; dup {
				return nil, fmt.Errorf("%w: %s given twice", equeue.ErrInvalidArgument, ref)
			}
			rr.Offsets[ref] = o.GetOffset()
		}
	}
	if err := v.e.ResetOffsets(ctx, req.GetGroup(), rr); err != nil {
		return nil, err
	}
	return &pb.ResetOffsetsResponse{}, nil
}

func (v *service) ListDeadLetters(ctx context.Context, req *pb.ListDeadLettersRequest) (*pb.ListDeadLettersResponse, error) {
	if err := nonNegative("dead-letter answer bytes", int64(req.GetMaxAnswerBytes())); err != nil {
		return nil, err
	}
	dls, err := v.e.ListDeadLetters(ctx, req.GetGroup(), equeue.ListDeadLettersRequest{From: req.GetFrom(), Max: int(req.GetMax())})
	if err != nil {
		return nil, err
	}
	return deadLettersAnswer(req.GetGroup(), dls, v.s.answerLimit(int(req.GetMaxAnswerBytes())))
}

// deadLettersAnswer encodes a page of group's dead letters, ending it
// before the entry that would take the answer past limit bytes: a page of
// large dead letters would otherwise be refused by the client's gRPC limit,
// failing the call instead of answering a shorter page (the caller lists on
// from the last entry's offset plus one). A first entry that alone does not
// fit is ErrMessageTooLarge naming it, so the caller can list past it. An
// entry with a time the wire cannot carry is ErrInvalidArgument naming it
// (deadLetterToPB).
func deadLettersAnswer(group string, dls []equeue.DLQEntry, limit int) (*pb.ListDeadLettersResponse, error) {
	out := &pb.ListDeadLettersResponse{DeadLetters: make([]*pb.DeadLetter, 0, len(dls))}
	size := 0
	for i, d := range dls {
		dl, err := deadLetterToPB(i, d)
		if err != nil {
			return nil, err
		}
		// The answer is only this repeated field: a one-byte tag, the
		// length and the entry, so size is exact.
		size += 1 + protowire.SizeBytes(proto.Size(dl))
		if size > limit {
			if len(out.DeadLetters) == 0 {
				return nil, &equeue.MessageTooLargeError{QueueRef: equeue.QueueRef{Topic: equeue.DLQTopic(group)}, Offset: d.Offset, Limit: limit}
			}
			break
		}
		out.DeadLetters = append(out.DeadLetters, dl)
	}
	return out, nil
}

func (v *service) Redrive(ctx context.Context, req *pb.RedriveRequest) (*pb.RedriveResponse, error) {
	n, err := v.e.Redrive(ctx, req.GetGroup(), equeue.RedriveRequest{Offsets: req.GetOffsets(), From: req.GetFrom(), To: req.GetTo(), All: req.GetAll(), ToTopic: req.GetToTopic()})
	if err != nil {
		// Some may have been sent: the error names the failure, and how
		// many went back before it (the answer carries no count then).
		if n > 0 {
			err = fmt.Errorf("%d dead letters sent back, then: %w", n, err)
		}
		return nil, err
	}
	return &pb.RedriveResponse{Sent: toInt32(n)}, nil
}
