package remote

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// Rights is a bitmask of what a token may do.
type Rights uint8

const (
	// RightProduce allows Route and Append, and Pull and DeleteReplyTopic
	// of the reply topics the token named (Client.NewReplyTopicName).
	RightProduce Rights = 1 << iota
	// RightConsume allows Pull, JoinGroup, Heartbeat, LeaveGroup,
	// ReleaseQueues, CommitOffsets, FetchOffsets and SendBack (retries and
	// dead letters of messages the member pulled). It does not imply
	// RightProduce: no token can append to the engine's %RETRY% and %DLQ%
	// topics, which only the engine writes, and without RightProduce or
	// RightAdmin a JoinGroup creates no topic (Options.AutoCreateTopics).
	RightConsume
	// RightAdmin allows the admin calls: topics, groups, offset resets and
	// dead letters, and DeleteReplyTopic of any reply topic.
	RightAdmin
	// RightAll allows everything.
	RightAll = RightProduce | RightConsume | RightAdmin
)

// String lists the rights as "produce|consume|admin" ("none" when empty).
func (r Rights) String() string {
	var parts []string
	for _, x := range []struct {
		r    Rights
		name string
	}{{RightProduce, "produce"}, {RightConsume, "consume"}, {RightAdmin, "admin"}} {
		if r&x.r != 0 {
			parts = append(parts, x.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// methodRights is the right each RPC needs.
var methodRights = map[string]Rights{
	pb.Broker_Route_FullMethodName:            RightProduce,
	pb.Broker_Append_FullMethodName:           RightProduce,
	pb.Broker_Pull_FullMethodName:             RightConsume,
	pb.Broker_JoinGroup_FullMethodName:        RightConsume,
	pb.Broker_Heartbeat_FullMethodName:        RightConsume,
	pb.Broker_LeaveGroup_FullMethodName:       RightConsume,
	pb.Broker_ReleaseQueues_FullMethodName:    RightConsume,
	pb.Broker_CommitOffsets_FullMethodName:    RightConsume,
	pb.Broker_FetchOffsets_FullMethodName:     RightConsume,
	pb.Broker_SendBack_FullMethodName:         RightConsume,
	pb.Broker_PullMany_FullMethodName:         RightConsume,
	pb.Broker_CreateTopic_FullMethodName:      RightAdmin,
	pb.Broker_AddQueues_FullMethodName:        RightAdmin,
	pb.Broker_DeleteTopic_FullMethodName:      RightAdmin,
	pb.Broker_SetQueueWritable_FullMethodName: RightAdmin,
	pb.Broker_ListTopics_FullMethodName:       RightAdmin,
	pb.Broker_DescribeTopic_FullMethodName:    RightAdmin,
	pb.Broker_ListGroups_FullMethodName:       RightAdmin,
	pb.Broker_DescribeGroup_FullMethodName:    RightAdmin,
	pb.Broker_ResetOffsets_FullMethodName:     RightAdmin,
	pb.Broker_ListDeadLetters_FullMethodName:  RightAdmin,
	pb.Broker_Redrive_FullMethodName:          RightAdmin,
	pb.Broker_EngineStats_FullMethodName:      RightAdmin,
	pb.Broker_SetTopicLimits_FullMethodName:   RightAdmin,
	pb.Broker_ListDelayed_FullMethodName:      RightAdmin,
	pb.Broker_DeleteGroup_FullMethodName:      RightAdmin,
	// Widened for the caller's own reply topics by replyRights.
	pb.Broker_DeleteReplyTopic_FullMethodName: RightAdmin,
	// Each append of the stream is then checked as Append (reply topics).
	pb.Broker_AppendStream_FullMethodName: RightProduce | RightConsume,
}

// neededRights returns the rights any one of which allows the call; a
// method missing from methodRights needs RightAdmin.
func neededRights(method string) Rights {
	need, ok := methodRights[method]
	if !ok {
		return RightAdmin
	}
	return need
}

// tokenTable holds token digests, so a lookup compares fixed-size hashes
// rather than the secrets themselves.
type tokenTable map[[sha256.Size]byte]tokenEntry

// tokenEntry is what a token may do, and in which namespace ("" for the
// whole engine).
type tokenEntry struct {
	rights    Rights
	namespace string
	// replyKey tags the names of the token's reply topics (replyowner.go).
	replyKey [sha256.Size]byte
}

func newTokenTable(tokens map[string]Rights, namespaces map[string]string) (tokenTable, error) {
	for tok := range namespaces {
		if _, ok := tokens[tok]; !ok {
			return nil, fmt.Errorf("%w: ServerOptions.TokenNamespaces names a token that is not in Tokens", equeue.ErrInvalidOptions)
		}
	}
	if len(tokens) == 0 {
		return nil, nil
	}
	t := make(tokenTable, len(tokens))
	for tok, r := range tokens {
		if tok == "" {
			return nil, fmt.Errorf("%w: empty token in ServerOptions.Tokens", equeue.ErrInvalidOptions)
		}
		t[sha256.Sum256([]byte(tok))] = tokenEntry{rights: r, namespace: namespaces[tok], replyKey: replyKey(tok)}
	}
	return t, nil
}

// bearer returns the call's token entry, if it carries a known one.
func (t tokenTable) bearer(ctx context.Context) (tokenEntry, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return tokenEntry{}, false
	}
	tok, ok := bearerToken(vals[0])
	if !ok {
		return tokenEntry{}, false
	}
	e, ok := t[sha256.Sum256([]byte(tok))]
	return e, ok
}

// bearerToken returns the token of an authorization value "Bearer
// <token>". The scheme is case-insensitive (RFC 7235: "bearer" and
// "BEARER" are "Bearer"); the token is taken as it is.
func bearerToken(v string) (string, bool) {
	const scheme = "Bearer "
	if len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return "", false
	}
	return v[len(scheme):], true
}

// authorize checks the call's bearer token against the table; a nil table
// admits everything.
func (t tokenTable) authorize(ctx context.Context, method string, req any) error {
	if t == nil {
		return nil
	}
	entry, err := t.authenticate(ctx)
	if err != nil {
		return err
	}
	have := entry.rights
	if need := replyRights(req, neededRights(method), &entry); have&need == 0 {
		return toStatus(fmt.Errorf("%w: %s needs %s rights, token has %s%s", ErrPermissionDenied, method, need, have, othersReplyTopic(req)))
	}
	return nil
}

// authenticate returns the entry of the call's bearer token, or an
// Unauthenticated status when it carries none or an unknown one. It needs
// only the call's metadata, so it runs before the request is decoded. A
// nil table admits everything.
func (t tokenTable) authenticate(ctx context.Context) (tokenEntry, error) {
	if t == nil {
		return tokenEntry{rights: RightAll}, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	entry, err := t.lookup(md.Get("authorization"))
	return entry, toStatus(err)
}

// lookup returns the entry of the bearer token in the first of a call's or
// a request's authorization values, or an error matching
// ErrUnauthenticated when there is none, it is not "Bearer <token>" or the
// token is unknown. It compares fixed-size digests, not the secrets.
func (t tokenTable) lookup(vals []string) (tokenEntry, error) {
	if len(vals) == 0 {
		return tokenEntry{}, fmt.Errorf("%w: no authorization token", ErrUnauthenticated)
	}
	tok, ok := bearerToken(vals[0])
	if !ok {
		return tokenEntry{}, fmt.Errorf("%w: authorization must be \"Bearer <token>\"", ErrUnauthenticated)
	}
	entry, known := t[sha256.Sum256([]byte(tok))]
	if !known {
		return tokenEntry{}, fmt.Errorf("%w: unknown token", ErrUnauthenticated)
	}
	return entry, nil
}

// tokenCreds sends "authorization: Bearer <token>" with every call.
type tokenCreds struct {
	header map[string]string
}

func newTokenCreds(token string) credentials.PerRPCCredentials {
	return tokenCreds{header: map[string]string{"authorization": "Bearer " + token}}
}

func (c tokenCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return c.header, nil
}

// RequireTransportSecurity is false so tokens work on plaintext loopback
// connections too; use TLS anywhere the network is not trusted.
func (tokenCreds) RequireTransportSecurity() bool { return false }
