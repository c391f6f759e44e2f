package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
)

// Errors of the transport itself. Engine errors keep their equeue sentinel
// across the wire: errors.Is(err, equeue.ErrTopicNotFound) holds on the
// client exactly as in-process.
var (
	// ErrUnavailable is returned when the broker cannot be reached (connection
	// refused or lost, a call's stream reset on the way, by a proxy say, server
	// stopping) or its engine is closed, as it is while
	// the broker restarts. It is retryable: producers may send again and a
	// Consumer keeps retrying until the broker is back. The client never
	// returns equeue.ErrClosed for this, since a Consumer stops for good on
	// equeue.ErrClosed; it returns equeue.ErrClosed only after Client.Close.
	ErrUnavailable = errors.New("remote: broker unavailable")
	// ErrUnauthenticated is returned when the server requires a token and the
	// call had none, or one it does not know (gRPC code Unauthenticated).
	ErrUnauthenticated = errors.New("remote: unauthenticated")
	// ErrPermissionDenied is returned when the call's token lacks the right
	// the call needs (gRPC code PermissionDenied).
	ErrPermissionDenied = errors.New("remote: permission denied")
	// ErrBusy is returned when the server already runs its MaxInFlight calls,
	// MaxLongPolls long-polls or MaxAppendStreams AppendStream calls, or the
	// call's connection holds its share of them (MaxLongPollsPerConn,
	// MaxAppendStreamsPerConn) (gRPC code ResourceExhausted, with the
	// server's BUSY reason in its details), before the call ran: nothing
	// was stored. It is retryable, and the Client retries it itself until
	// the call's context ends. It matches equeue.ErrBusy. A
	// ResourceExhausted without those details (a proxy's rate limit, which
	// may come after the proxy forwarded the call) is not ErrBusy: an
	// append or a change so answered is equeue.ErrIndeterminate.
	ErrBusy = fmt.Errorf("remote: server busy: %w", equeue.ErrBusy)
	// ErrMetadataTooLarge is returned when the client's gRPC transport
	// refused a call whose metadata (its token, the caller's own entries)
	// is larger than the broker's bound (ServerOptions.MaxMetadataBytes),
	// before the call left the client: nothing was done, and sent again it
	// is refused again. It matches equeue.ErrInvalidArgument.
	ErrMetadataTooLarge = fmt.Errorf("remote: call metadata over the broker's bound: %w", equeue.ErrInvalidArgument)
	// ErrWindowFull is what an AppendAsync called from an AppendAsync
	// callback of the same client reports at once when the append window
	// is full, instead of waiting for a slot: the callback may run on the
	// goroutine that reads the answers that free the window. Nothing was
	// sent. It matches equeue.ErrWindowFull.
	ErrWindowFull = fmt.Errorf("remote: append window full in a callback: %w", equeue.ErrWindowFull)
)

// errorDomain is the ErrorInfo domain of engine errors.
const errorDomain = "equeue"

// leaderKey is the ErrorInfo metadata key of a follower's leader address.
const leaderKey = "leader"

// sentinel ties an engine error to its wire name and status code.
type sentinel struct {
	reason string
	err    error
	code   codes.Code
}

// sentinels lists every engine sentinel error. When an error matches several
// (errors.Join), the first one here gives the status code. INDETERMINATE
// comes first: an outcome that may be stored is Unknown on the wire,
// whatever else the error matches. A leader that lost its leadership with
// a write in flight answers ErrIndeterminate and ErrNotLeader; sent as
// Unavailable, which gRPC documents as a transient condition to retry, a
// client reading only the code would send again a write that may be
// stored. DeadlineExceeded, which gRPC also allows for a change that may
// have been made, reads as the caller's own deadline. The details still
// name every sentinel, and the leader.
var sentinels = []sentinel{
	{"INDETERMINATE", equeue.ErrIndeterminate, codes.Unknown},
	{"NOT_LEADER", equeue.ErrNotLeader, codes.Unavailable},
	{"CLOSED", equeue.ErrClosed, codes.Unavailable},
	{"STORE_FAILED", equeue.ErrStoreFailed, codes.FailedPrecondition},
	{"FENCED", equeue.ErrFenced, codes.FailedPrecondition},
	{"NOT_MEMBER", equeue.ErrNotMember, codes.FailedPrecondition},
	{"MEMBER_ID_IN_USE", equeue.ErrMemberIDInUse, codes.FailedPrecondition},
	{"SUBSCRIPTION_MISMATCH", equeue.ErrSubscriptionMismatch, codes.FailedPrecondition},
	{"GROUP_NAME_TAKEN", equeue.ErrGroupNameTaken, codes.FailedPrecondition},
	{"QUEUE_NOT_WRITABLE", equeue.ErrQueueNotWritable, codes.FailedPrecondition},
	{"TOPIC_FULL", equeue.ErrTopicFull, codes.FailedPrecondition},
	{"PARTIAL_DUPLICATE", equeue.ErrPartialDuplicate, codes.FailedPrecondition},
	{"NO_SPACE", equeue.ErrNoSpace, codes.FailedPrecondition},
	{"LOCKED", equeue.ErrLocked, codes.FailedPrecondition},
	{"TOPIC_NOT_FOUND", equeue.ErrTopicNotFound, codes.NotFound},
	{"GROUP_NOT_FOUND", equeue.ErrGroupNotFound, codes.NotFound},
	{"QUEUE_NOT_FOUND", equeue.ErrQueueNotFound, codes.NotFound},
	{"TOPIC_EXISTS", equeue.ErrTopicExists, codes.AlreadyExists},
	{"MESSAGE_TOO_LARGE", equeue.ErrMessageTooLarge, codes.InvalidArgument},
	{"BATCH_TOO_LARGE", equeue.ErrBatchTooLarge, codes.InvalidArgument},
	{"INVALID_NAME", equeue.ErrInvalidName, codes.InvalidArgument},
	{"INVALID_FILTER", equeue.ErrInvalidFilter, codes.InvalidArgument},
	{"INVALID_DELAY", equeue.ErrInvalidDelay, codes.InvalidArgument},
	{"INVALID_OPTIONS", equeue.ErrInvalidOptions, codes.InvalidArgument},
	{"INVALID_ARGUMENT", equeue.ErrInvalidArgument, codes.InvalidArgument},
	{"INTERNAL_TOPIC", equeue.ErrInternalTopic, codes.PermissionDenied},
	{"OUTSIDE_NAMESPACE", equeue.ErrOutsideNamespace, codes.PermissionDenied},
	{"NOT_PULLED", equeue.ErrNotPulled, codes.FailedPrecondition},
	{"MESSAGE_DELETED", equeue.ErrMessageDeleted, codes.FailedPrecondition},
	{"CORRUPT", equeue.ErrCorrupt, codes.DataLoss},
	{"UNSUPPORTED_FORMAT", equeue.ErrUnsupportedFormat, codes.DataLoss},
	{"HANDLER_PANIC", equeue.ErrHandlerPanic, codes.Internal},
	{"UNAUTHENTICATED", ErrUnauthenticated, codes.Unauthenticated},
	{"PERMISSION_DENIED", ErrPermissionDenied, codes.PermissionDenied},
	{"BUSY", ErrBusy, codes.ResourceExhausted},
	{"UNAVAILABLE", ErrUnavailable, codes.Unavailable},
	{"GROUP_HAS_MEMBERS", equeue.ErrGroupHasMembers, codes.FailedPrecondition},
	// Last: it rides beside the error that says why, whose code stands;
	// alone (a refusal for a failure no sentinel names) it takes the code
	// of that failure (uncodedCode), Internal unless its context ended,
	// never that of a refusal by the broker's state.
	{"JOIN_REFUSED", equeue.ErrJoinRefused, codes.Internal},
}

// toStatus turns an engine (or this package's) error into a gRPC status error whose ErrorInfo
// detail names the sentinels it matches.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if g, ok := err.(interface{ GRPCStatus() *status.Status }); ok {
		if st := g.GRPCStatus(); st == nil || st.Code() == codes.OK {
			// A failure whose status says OK (a backend's own error
			// type) is no answer the client can classify: sent as it is,
			// an append stream's item would carry no code, which read as
			// a refusal though the append may be stored.
			return status.Error(codes.Unknown, err.Error())
		} else if st.Code() != codes.Unknown && errors.Is(err, equeue.ErrIndeterminate) {
			// An outcome that may be stored is Unknown on the wire
			// whatever status the error carries (see sentinels).
			p := st.Proto()
			p.Code = int32(codes.Unknown)
			return status.ErrorProto(p)
		}
		return err
	}
	var reasons []string
	code, coded := codes.Unknown, false
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			// A refused join's mark says no member was added, not why:
			// the code is that of the error it rides beside.
			if !coded && s.err != equeue.ErrJoinRefused {
				code, coded = s.code, true
			}
			reasons = append(reasons, s.reason)
		}
	}
	if !coded {
		code = uncodedCode(err)
	}
	if len(reasons) == 0 {
		return status.Error(code, err.Error())
	}
	st := status.New(code, err.Error())
	info := &errdetails.ErrorInfo{Reason: reasons[0], Domain: errorDomain,
		Metadata: map[string]string{"reasons": strings.Join(reasons, ",")}}
	addTooLarge(err, info.Metadata)
	var hint interface{ Leader() string }
	if errors.As(err, &hint) && hint.Leader() != "" {
		info.Metadata[leaderKey] = hint.Leader()
	}
	if withInfo, derr := st.WithDetails(info); derr == nil {
		st = withInfo
	}
	return st.Err()
}

// sizeLimit reports whether st, ResourceExhausted, is gRPC's own refusal
// of a message over its size limit (MaxMessageBytes), which says "larger
// than max".
func sizeLimit(st *status.Status) bool {
	return strings.Contains(st.Message(), "larger than max")
}

// uncodedCode is the status code of an error that matches no sentinel
// but maybe ErrJoinRefused: the context's own, or Internal, never a
// refusal's (FailedPrecondition) for a failure that was none.
func uncodedCode(err error) codes.Code {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	}
	return codes.Internal
}

// Error is an error returned through the wire. Its Error text is the
// server's message; errors.Is matches the engine sentinels (or the transport
// errors of this package) it stands for, and status.Code gives its gRPC code.
type Error struct {
	// Code is the gRPC status code.
	Code codes.Code
	// Message is the server's (or the transport's) description.
	Message string
	// Leader is the client address of the cluster's leader, sent by a
	// follower of a replicated cluster with an error matching
	// equeue.ErrNotLeader when it knows the leader. Empty otherwise.
	Leader string

	st   *status.Status
	errs []error
}

// Error returns the server's description of the failure.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the sentinel errors e matches.
func (e *Error) Unwrap() []error { return e.errs }

// GRPCStatus returns the status e was made from, for status.Code and status.Convert.
func (e *Error) GRPCStatus() *status.Status { return e.st }

// fromStatus maps a call's error back to the engine's sentinels.
func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	e := &Error{Code: st.Code(), Message: st.Message(), st: st}
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != errorDomain {
			continue
		}
		e.Leader = info.GetMetadata()[leaderKey]
		names := info.GetMetadata()["reasons"]
		if names == "" {
			names = info.GetReason()
		}
		if big := tooLargeFrom(info.GetMetadata()); big != nil {
			e.errs = append(e.errs, big)
		}
		for _, name := range strings.Split(names, ",") {
			for _, s := range sentinels {
				if s.reason != name {
					continue
				}
				if s.err == equeue.ErrClosed {
					// The broker's engine is closed: from here that is a
					// broker going away, which a client retries.
					e.errs = append(e.errs, ErrUnavailable)
				} else {
					e.errs = append(e.errs, s.err)
				}
			}
		}
	}
	if len(e.errs) == 0 && streamReset(st) && st.Code() != codes.DeadlineExceeded {
		e.errs = []error{ErrUnavailable}
	}
	if len(e.errs) == 0 || (len(e.errs) == 1 && e.errs[0] == equeue.ErrJoinRefused) {
		// Nothing but maybe a refused join's mark, which says no why:
		// the code does.
		switch st.Code() {
		case codes.Unavailable:
			e.errs = append(e.errs, ErrUnavailable)
		case codes.Unauthenticated:
			e.errs = append(e.errs, ErrUnauthenticated)
		case codes.PermissionDenied:
			e.errs = append(e.errs, ErrPermissionDenied)
		case codes.ResourceExhausted:
			// gRPC's own limit on message size (MaxMessageBytes) says
			// "larger than max". Anything else exhausted without the
			// server's details (a proxy's rate limit, say) is no ErrBusy:
			// the server's refusals carry its BUSY reason, and a proxy
			// may have answered so after forwarding the call, which the
			// broker may have run (see brokerAnswer).
			if sizeLimit(st) {
				e.errs = append(e.errs, equeue.ErrMessageTooLarge)
			}
		case codes.Internal:
			if headersRefused(err) {
				// Refused by the client's transport before it left:
				// nothing was done, and sent again it is refused again.
				e.errs = append(e.errs, ErrMetadataTooLarge)
			}
		case codes.Canceled:
			e.errs = append(e.errs, context.Canceled)
		case codes.DeadlineExceeded:
			e.errs = append(e.errs, context.DeadlineExceeded)
		}
	}
	return e
}
