package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// maxPullMany bounds the pulls of one PullMany call.
const maxPullMany = 4096

// PullMany answers many pulls in one long-poll: each pull is tried at once;
// if none finds anything the call waits on all their queues together
// (Engine.WaitAny, no goroutine per queue) and tries them again. The
// answer never passes the client's limit: pulls beyond it answer "no new
// message" at their own offset, to be asked again. An answer that found
// nothing before the wait asked ended tells the client so (tellCapped),
// unless it put a pull off for lack of room: that pull may have a message
// (which ended the wait at once), not the engine's cap. An answer that
// found nothing tells which pulls it put off (tellLater), for the client
// to ask each in a call of its own: asked again together, they would be
// put off again.
func (v *service) PullMany(ctx context.Context, req *pb.PullManyRequest) (*pb.PullManyResponse, error) {
	if n := len(req.GetPulls()); n == 0 || n > maxPullMany {
		return nil, fmt.Errorf("%w: %d pulls in one call, want 1..%d", equeue.ErrInvalidArgument, n, maxPullMany)
	}
	wait, err := fromDurationPB(req.GetWait())
	if err != nil {
		return nil, err
	}
	if err := nonNegative("pull answer bytes", int64(req.GetMaxAnswerBytes())); err != nil {
		return nil, err
	}
	pulls := make([]*equeue.PullRequest, len(req.GetPulls()))
	versions := make([]int32, len(pulls)) // the stored batches each reads
	for i, p := range req.GetPulls() {
		if p == nil {
			return nil, fmt.Errorf("%w: pull %d is empty", equeue.ErrInvalidArgument, i)
		}
		if err := nonNegative("pull max", int64(p.GetMax())); err != nil {
			return nil, err
		}
		if err := nonNegative("pull max bytes", int64(p.GetMaxBytes())); err != nil {
			return nil, err
		}
		pulls[i] = &equeue.PullRequest{Topic: p.GetTopic(), Queue: int(p.GetQueue()), Offset: p.GetOffset(), Max: int(p.GetMax()),
			Filter: p.GetFilter(), Group: p.GetGroup(), Member: p.GetMember(), Epoch: p.GetEpoch(), MaxBytes: int(p.GetMaxBytes())}
		versions[i] = p.GetStoredBatchVersion()
	}
	limit := v.s.answerLimit(int(req.GetMaxAnswerBytes()))
	ctx, done := v.s.longPoll(ctx)
	defer done()
	out, found, later := v.pullAll(ctx, pulls, versions, limit)
	if found || wait <= 0 {
		if !found {
			tellLater(ctx, later)
		}
		return out, nil
	}
	asked, start := spread(wait), time.Now()
	if err := v.e.WaitAny(ctx, pulls, asked); err != nil {
		return nil, v.s.stopped(ctx, err)
	}
	out, found, later = v.pullAll(ctx, pulls, versions, limit)
	switch {
	case found:
	case len(later) > 0:
		tellLater(ctx, later)
	default:
		tellCapped(ctx, start, asked)
	}
	return out, nil
}

// pullAll pulls each queue once, without waiting, within limit bytes in
// all; found reports whether any pull has something for its caller (a
// message, an error, a moved offset or skipped records); later lists, in
// order, the pulls that may have something (they were not tried, or
// their message or error did not fit) answered laterPull for lack of
// room. versions are the stored batches each pull's client reads.
//
// The messages of all pulls share limit less answerSlack; the answers
// without messages take their room from the slack (see answerRoom), so
// that a pull behind many that found nothing still finds room for its
// first message. Every item is counted, and each pull leaves room for the
// items of the pulls after it (laterPull at the least), so the answer
// never passes limit. A pull whose first message fits a call of its own
// but not what this one has left answers laterPull, for a call with room
// for it; only a message that fits no answer is an error. Before any
// answer carries messages, a first message whose records or answer pass
// the room for records goes alone in what the call has left, so a call
// of one pull never puts it off.
func (v *service) pullAll(ctx context.Context, pulls []*equeue.PullRequest, versions []int32, limit int) (out *pb.PullManyResponse, found bool, later []int) {
	out = &pb.PullManyResponse{Items: make([]*pb.PullManyItem, len(pulls))}
	room := newAnswerRoom(limit, pulls)
	for i, p := range pulls {
		room.next(p)
		budget := room.left()
		alone, own := room.alone(), room.own()
		// The pull's own bound is on its messages' records, as in process,
		// not on their answer: bound is the most records it reads alone.
		bound := recordBound(own, p)
		if budget <= 0 && (room.messages > 0 || alone <= 0) {
			out.Items[i], later = room.later(p), append(later, i)
			continue
		}
		q := *p
		// The pull's own bound, when smaller, is the caller's to meet:
		// a first message past it fails as in-process.
		shared := p.MaxBytes <= 0 || budget < p.MaxBytes
		if shared {
			q.MaxBytes = max(budget, 1)
		}
		res, stored, err := pullBackend(ctx, v.e, &q, versions[i])
		if shared && room.messages == 0 && pastSlack(err, bound) {
			// No answer of the call carries messages yet: a first
			// message past the room for a full batch's records goes alone
			// in what the call has left, if it fits there. (It is pulled
			// within own, so that one that would fit a call of its own is
			// told from one that fits none.)
			q.Max, q.MaxBytes, q.Wait = 1, bound, 0
			budget = alone
			res, stored, err = pullBackend(ctx, v.e, &q, versions[i])
		}
		var resp *pb.PullResponse
		size := 0
		pulled := err == nil
		if pulled {
			resp, size, err = sizedPullAnswer(res, budget, stored)
		}
		if room.messages == 0 && budget < alone && pulled &&
			errors.Is(err, equeue.ErrMessageTooLarge) && fitsAlone(res, stored, alone) {
			// Its records fit the room for records (and the pull's own
			// bound), its answer does not: it goes alone in what the call
			// has left, as one whose records pass that room. Put off, it
			// would be put off again in a call of its own, whose room for
			// records is no larger.
			q.Max, q.MaxBytes, q.Wait = 1, bound, 0
			budget = alone
			res, stored, err = pullBackend(ctx, v.e, &q, versions[i])
			pulled = err == nil
			if pulled {
				resp, size, err = sizedPullAnswer(res, budget, stored)
			}
		}
		if (shared || pulled) && errors.Is(err, equeue.ErrMessageTooLarge) &&
			(room.messages > 0 || pulled && budget < own && fitsAlone(res, stored, own)) {
			// Too large for what the earlier answers left, not for the
			// client (or, past answers carrying messages, perhaps not);
			// pulled, its records are within the pull's own bound:
			// a call with room for it carries it. An error would have its
			// consumer take it for a message that fits no answer.
			out.Items[i], later = room.later(p), append(later, i)
			continue
		}
		item := &pb.PullManyItem{Response: resp}
		switch {
		case err != nil:
			item = &pb.PullManyItem{Error: pullError(tooLargeFor(err, bound))}
			if !room.fits(item) {
				out.Items[i], later = room.later(p), append(later, i)
				continue
			}
		case res.Status == equeue.PullFound:
			room.take(size)
		case !room.fits(item):
			out.Items[i] = room.later(p)
			continue
		}
		out.Items[i] = item
		if err != nil || res.Status != equeue.PullNoNewMessage {
			found = true
		}
	}
	return out, found, later
}

// answerRoom is what a PullMany answer has left for the next pull's
// answer: whole (the client's limit less answerSlack) is shared by the
// answers carrying messages, and the answers without any fit in the
// slack, within the limit in all, less what the items of the pulls after
// it take at the least (laterPull).
type answerRoom struct {
	whole, limit int
	messages     int // bytes of the items carrying messages so far
	all          int // bytes of every item so far
	rest         int // bytes of laterPull items of the pulls after this one
}

// newAnswerRoom returns the room of an answer to pulls within limit
// bytes, before the first pull.
func newAnswerRoom(limit int, pulls []*equeue.PullRequest) answerRoom {
	r := answerRoom{whole: recordRoom(limit), limit: limit}
	for _, p := range pulls {
		r.rest += laterSize(p)
	}
	return r
}

// next starts the turn of pull p, the next of the call: the room kept for
// its item is its own from now on.
func (r *answerRoom) next(p *equeue.PullRequest) {
	r.rest -= laterSize(p)
}

// free is the most bytes the item of this turn's pull may take.
func (r *answerRoom) free() int {
	return r.limit - r.all - r.rest
}

// itemFraming bounds what one item of the answer takes beyond its pull's
// answer (two tags and lengths).
const itemFraming = 16

// left is the most bytes the next pull's answer may take.
func (r *answerRoom) left() int {
	return min(r.whole-r.messages, r.free()-itemFraming)
}

// alone is the most bytes the answer of the turn's pull's first message
// may take when it goes alone (pastSlack): what the call's answer has
// left.
func (r *answerRoom) alone() int {
	return r.free() - itemFraming
}

// own is the most bytes the answer of a pull's first message may take in
// a call of its own: the client's limit less the item's framing. Only a
// message past it can never reach the client.
func (r *answerRoom) own() int {
	return r.limit - itemFraming
}

// recordBound is the most stored bytes p's first message may take to be
// delivered: own, or p's own bound (MaxBytes) when that is smaller. The
// pull's bound is on records, as in process and in a Pull call, not on
// the answer that carries them.
func recordBound(own int, p *equeue.PullRequest) int {
	if p.MaxBytes > 0 && p.MaxBytes < own {
		return p.MaxBytes
	}
	return own
}

// take counts the item of an answer carrying messages, which takes at
// most size bytes (within left).
func (r *answerRoom) take(size int) {
	r.all += size + itemFraming
	r.messages += size + itemFraming
}

// fits counts item, an answer without messages or an error, and reports
// true when it fits what is free; else it counts nothing. It is counted
// at its encoded size: sizedPullAnswer's bound of an answer is many times
// that, and a call's thousands of them would take the room of messages.
func (r *answerRoom) fits(item *pb.PullManyItem) bool {
	n := protowire.SizeTag(manyItems) + protowire.SizeBytes(proto.Size(item))
	if n > r.free() {
		return false
	}
	r.all += n
	return true
}

// later counts p's laterPull item and returns it.
func (r *answerRoom) later(p *equeue.PullRequest) *pb.PullManyItem {
	r.all += laterSize(p)
	return laterPull(p)
}

// Field numbers of PullManyResponse and PullManyItem (equeue.proto).
const (
	manyItems    = 1
	itemResponse = 1
)

// laterSize is the encoded size of p's laterPull item in the answer,
// reckoned without making it (every pull of a call is reckoned so).
func laterSize(p *equeue.PullRequest) int {
	resp := varintSize(pullStatus, int64(pb.PullStatus_PULL_STATUS_NO_NEW_MESSAGE)) + varintSize(pullNextOffset, p.Offset)
	item := protowire.SizeTag(itemResponse) + protowire.SizeBytes(resp)
	return protowire.SizeTag(manyItems) + protowire.SizeBytes(item)
}

// fitsAlone reports whether the answer of res's first message fits limit
// bytes.
func fitsAlone(res equeue.PullResult, stored *equeue.StoredRecords, limit int) bool {
	_, _, err := sizedPullAnswer(res, limit, stored)
	return err == nil
}

// laterPull answers a pull that the call's answer has no room left for:
// nothing new yet, from where it is.
func laterPull(p *equeue.PullRequest) *pb.PullManyItem {
	return &pb.PullManyItem{Response: &pb.PullResponse{Status: pb.PullStatus_PULL_STATUS_NO_NEW_MESSAGE, NextOffset: p.Offset}}
}

// pullError carries one pull's error as its status would.
func pullError(err error) *pb.PullError {
	st := status.Convert(toStatus(err))
	pe := &pb.PullError{Code: uint32(st.Code()), Message: st.Message()}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == errorDomain {
			pe.Reasons = info.GetMetadata()["reasons"]
			for k, v := range info.GetMetadata() {
				if k != "reasons" {
					if pe.Metadata == nil {
						pe.Metadata = map[string]string{}
					}
					pe.Metadata[k] = v
				}
			}
		}
	}
	return pe
}

// pullErrorFromPB turns a PullError back into the error a Pull returns.
// It is never nil: an error item is an error whatever its code, and one
// without a code (0 is OK, which status turns into no error at all) is
// Unknown, so that an append answered so is not taken for stored (with no
// IDs) nor a pull for found.
func pullErrorFromPB(pe *pb.PullError) error {
	return fromStatus(pullErrorStatus(pe).Err())
}

// pullErrorStatus is the status pe carries, as the broker's status of the
// call would be.
func pullErrorStatus(pe *pb.PullError) *status.Status {
	code := codes.Code(pe.GetCode())
	if code == codes.OK {
		code = codes.Unknown
	}
	st := status.New(code, pe.GetMessage())
	if pe.GetReasons() != "" {
		first, _, _ := strings.Cut(pe.GetReasons(), ",")
		md := map[string]string{"reasons": pe.GetReasons()}
		for k, v := range pe.GetMetadata() {
			if k != "reasons" {
				md[k] = v
			}
		}
		info := &errdetails.ErrorInfo{Reason: first, Domain: errorDomain, Metadata: md}
		if withInfo, err := st.WithDetails(info); err == nil {
			st = withInfo
		}
	}
	return st
}
