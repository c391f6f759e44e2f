package equeue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// NamespaceSeparator joins a namespace and a name into the engine's own
// name of a topic or group: topic "orders" of namespace "tenant-a" is
// "tenant-a:orders" to the engine, and its group "billing" retries through
// "%RETRY%tenant-a:billing".
const NamespaceSeparator = ":"

// Namespace is a view of an engine that holds its own topics, groups and
// offsets: the same names are free in every namespace, and nothing a view
// returns names another namespace. It implements Broker (producers and
// consumers run on it as on the engine) and the engine's admin methods.
// It is cheap, safe for concurrent use and holds no resources: closing the
// engine ends it.
//
// The engine itself sees every namespace, under the qualified names
// "namespace:name"; unqualified names are the engine's default namespace,
// which no Namespace view reaches.
type Namespace struct {
	e      *Engine
	name   string
	prefix string
}

var _ Broker = (*Namespace)(nil)

// ErrOutsideNamespace is returned when a Namespace view is asked to write
// to a reply topic of another namespace ("%REPLY%other:<id>"), as Reply
// through a producer on the view is when the request it answers names one:
// a view never writes outside its namespace. Nothing is stored.
var ErrOutsideNamespace = errors.New("equeue: outside the namespace")

// Namespace returns the view of namespace name, which is valid as a topic
// name is (1-127 characters of [A-Za-z0-9._-]). A namespace needs no
// creation: it holds what is created through it.
func (e *Engine) Namespace(name string) (*Namespace, error) {
	if err := validatePlainName(name); err != nil {
		return nil, fmt.Errorf("namespace: %w", err)
	}
	return &Namespace{e: e, name: name, prefix: name + NamespaceSeparator}, nil
}

// Name returns the namespace's name.
func (n *Namespace) Name() string { return n.name }

// Engine returns the engine the view belongs to.
func (n *Namespace) Engine() *Engine { return n.e }

// in maps a name of the namespace to the engine's name. A name that is not
// valid in a namespace (one holding the separator, say) maps to a name the
// engine refuses, so no name reaches outside the namespace. A reply topic
// the engine named in the namespace ("%REPLY%tenant:<id>") is kept: it is
// the reply address of a request of the namespace that a service consumed
// on the engine, and answers through the view (Reply) must reach it.
func (n *Namespace) in(name string) string {
	if rest, ok := strings.CutPrefix(name, ReplyTopicPrefix); ok && strings.HasPrefix(rest, n.prefix) {
		return name
	}
	return qualify(n.prefix, name)
}

// outside returns an error matching ErrOutsideNamespace when topic is a
// reply topic that the engine named in another namespace
// ("%REPLY%other:<id>"), nil otherwise: qualified again, it would be an
// invalid name, and a write to it is one outside the namespace.
func (n *Namespace) outside(topic string) error {
	rest, ok := strings.CutPrefix(topic, ReplyTopicPrefix)
	if !ok || !strings.Contains(rest, NamespaceSeparator) || strings.HasPrefix(rest, n.prefix) {
		return nil
	}
	return fmt.Errorf("%w: reply topic %q is not in namespace %q", ErrOutsideNamespace, topic, n.name)
}

// qualify is name of the namespace whose prefix ("tenant:") is given, as
// the engine names it.
func qualify(prefix, name string) string {
	for _, p := range []string{RetryTopicPrefix, DLQTopicPrefix, ReplyTopicPrefix} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			return p + prefix + rest
		}
	}
	return prefix + name
}

// out maps an engine name back, reporting whether it is in the namespace.
func (n *Namespace) out(name string) (string, bool) {
	for _, p := range []string{RetryTopicPrefix, DLQTopicPrefix, ReplyTopicPrefix} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			r, ok := strings.CutPrefix(rest, n.prefix)
			return p + r, ok
		}
	}
	return strings.CutPrefix(name, n.prefix)
}

// has reports whether the engine's name is in the namespace.
func (n *Namespace) has(name string) bool {
	_, ok := n.out(name)
	return ok
}

// outName is out for names known to be in the namespace.
func (n *Namespace) outName(name string) string {
	if v, ok := n.out(name); ok {
		return v
	}
	return name
}

func (n *Namespace) inRef(r QueueRef) QueueRef   { r.Topic = n.in(r.Topic); return r }
func (n *Namespace) outRef(r QueueRef) QueueRef  { r.Topic = n.outName(r.Topic); return r }
func (n *Namespace) inGrant(g Grant) Grant       { g.QueueRef = n.inRef(g.QueueRef); return g }
func (n *Namespace) outGrant(g Grant) Grant      { g.QueueRef = n.outRef(g.QueueRef); return g }
func (n *Namespace) inGrants(gs []Grant) []Grant { return mapSlice(gs, n.inGrant) }

func mapSlice[T any](in []T, f func(T) T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// outAssignment is a as the namespace sees it. Priorities is keyed by topic
// name too: left qualified, it would name the engine's "tenant:orders" to
// the view, and a consumer on the view, whose grants say "orders", would
// not find the lane counts of its topics by their names.
func (n *Namespace) outAssignment(a Assignment) Assignment {
	a.Group = n.outName(a.Group)
	a.Queues = mapSlice(a.Queues, n.outGrant)
	a.Revoking = mapSlice(a.Revoking, n.outGrant)
	if a.Priorities != nil {
		lanes := make(map[string]int, len(a.Priorities))
		for topic, count := range a.Priorities {
			lanes[n.outName(topic)] = count
		}
		a.Priorities = lanes
	}
	return a
}

// outMessage is m as the namespace sees it: its topic, the origin topic of
// a retried message and the reply topic of a request unqualified, and
// without the origin topic's ID (SysOriginTopicID), which is the engine's
// count of topic creations (see TopicInfo.ID: a view shows IDs
// enciphered). m is not changed.
func (n *Namespace) outMessage(m *Message) *Message {
	if m == nil {
		return nil
	}
	cp := *m
	cp.Topic = n.outName(m.Topic)
	cp.ns = n.prefix
	cloned := false
	for _, k := range namedSysProps {
		if v, ok := m.sys[k]; ok {
			if !cloned {
				cp.sys, cloned = maps.Clone(m.sys), true
			}
			cp.sys[k] = n.outName(v)
		}
	}
	if _, ok := m.sys[SysOriginTopicID]; ok {
		if !cloned {
			cp.sys, cloned = maps.Clone(m.sys), true
		}
		delete(cp.sys, SysOriginTopicID)
	}
	if m.pulled != nil {
		cp.pulled = n.outMessage(m.pulled)
	}
	return &cp
}

// namedSysProps are the system properties that hold a topic name, which a
// view maps like the message's topic: the origin of a retried message and
// the reply topic of a request.
var namedSysProps = [...]string{SysOriginTopic, SysReplyTo}

// inMessage is m with its topic and the topics its system properties name
// qualified (a copy; m is the caller's): a redrive of it stays in the
// namespace, and so does a reply to it, whatever reply topic the sender
// wrote (a remote client sends system properties as it likes; left as
// written, "%REPLY%x" would send the reply of a service on the engine to
// the default namespace's reply topic, "%REPLY%other:x" to another
// namespace's).
func (n *Namespace) inMessage(m *Message) *Message {
	if m == nil {
		return m
	}
	named := false
	for _, k := range namedSysProps {
		named = named || m.sys[k] != ""
	}
	if m.Topic == "" && !named {
		return m
	}
	cp := *m
	if m.Topic != "" {
		cp.Topic = n.in(m.Topic)
	}
	if named {
		cp.sys = maps.Clone(m.sys)
		for _, k := range namedSysProps {
			if v := m.sys[k]; v != "" {
				cp.sys[k] = n.in(v)
			}
		}
	}
	return &cp
}

// Route returns a topic's queues (Broker).
func (n *Namespace) Route(ctx context.Context, topic string) (Route, error) {
	r, err := n.e.Route(ctx, n.in(topic))
	r.Topic = n.outName(r.Topic)
	return r, n.err(err)
}

// Append stores messages in one queue (Broker; see Engine.Append).
func (n *Namespace) Append(ctx context.Context, req *AppendRequest) (AppendResult, error) {
	if req == nil {
		return n.e.Append(ctx, nil)
	}
	if err := n.outside(req.Topic); err != nil {
		return AppendResult{}, err
	}
	r := *req
	r.Topic = n.in(req.Topic)
	r.Messages = mapSlice(req.Messages, n.inMessage)
	res, err := n.e.Append(ctx, &r)
	return res, n.err(err)
}

// Pull reads messages from one queue (Broker; see Engine.Pull).
func (n *Namespace) Pull(ctx context.Context, req *PullRequest) (PullResult, error) {
	if req == nil {
		return n.e.Pull(ctx, nil)
	}
	res, err := n.e.Pull(ctx, n.inPull(req))
	res.Messages = mapSlice(res.Messages, n.outMessage)
	return res, n.err(err)
}

func (n *Namespace) inPull(req *PullRequest) *PullRequest {
	r := *req
	r.Topic = n.in(req.Topic)
	if req.Group != "" {
		r.Group = n.in(req.Group)
	}
	return &r
}

// WaitAny waits until one of pulls may find a message (see Engine.WaitAny).
func (n *Namespace) WaitAny(ctx context.Context, pulls []*PullRequest, wait time.Duration) error {
	in := make([]*PullRequest, len(pulls))
	for i, p := range pulls {
		if p == nil {
			return fmt.Errorf("%w: pull %d is nil", ErrInvalidArgument, i)
		}
		in[i] = n.inPull(p)
	}
	return n.err(n.e.WaitAny(ctx, in, wait))
}

// JoinGroup adds a member to a group of the namespace (Broker).
func (n *Namespace) JoinGroup(ctx context.Context, req *JoinRequest) (Assignment, error) {
	if req == nil {
		return n.e.JoinGroup(ctx, nil)
	}
	r := *req
	r.Group = n.in(req.Group)
	r.Subscriptions = mapSlice(req.Subscriptions, func(s Subscription) Subscription { s.Topic = n.in(s.Topic); return s })
	a, err := n.e.JoinGroup(ctx, &r)
	return n.outAssignment(a), n.err(err)
}

// Heartbeat keeps a member alive (Broker).
func (n *Namespace) Heartbeat(ctx context.Context, req *HeartbeatRequest) (Assignment, error) {
	if req == nil {
		return n.e.Heartbeat(ctx, nil)
	}
	r := *req
	r.Group = n.in(req.Group)
	a, err := n.e.Heartbeat(ctx, &r)
	return n.outAssignment(a), n.err(err)
}

// LeaveGroup removes a member (Broker).
func (n *Namespace) LeaveGroup(ctx context.Context, req *LeaveRequest) error {
	if req == nil {
		return n.e.LeaveGroup(ctx, nil)
	}
	r := *req
	r.Group = n.in(req.Group)
	return n.err(n.e.LeaveGroup(ctx, &r))
}

// ReleaseQueues gives up queues a member was asked to hand over (Broker).
func (n *Namespace) ReleaseQueues(ctx context.Context, group, member string, queues []Grant) error {
	return n.err(n.e.ReleaseQueues(ctx, n.in(group), member, n.inGrants(queues)))
}

// CommitOffsets stores offsets of owned queues (Broker).
func (n *Namespace) CommitOffsets(ctx context.Context, req *CommitRequest) error {
	if req == nil {
		return n.e.CommitOffsets(ctx, nil)
	}
	r := *req
	r.Group = n.in(req.Group)
	r.Offsets = mapSlice(req.Offsets, func(o OffsetCommit) OffsetCommit { o.Grant = n.inGrant(o.Grant); return o })
	return n.err(n.e.CommitOffsets(ctx, &r))
}

// FetchOffsets returns the committed state of granted queues (Broker).
func (n *Namespace) FetchOffsets(ctx context.Context, group, member string, queues []Grant) ([]OffsetCommit, error) {
	offs, err := n.e.FetchOffsets(ctx, n.in(group), member, n.inGrants(queues))
	return mapSlice(offs, func(o OffsetCommit) OffsetCommit { o.Grant = n.outGrant(o.Grant); return o }), n.err(err)
}

// SendBack stores a failed message in its group's retry or dead-letter
// topic, both in the namespace (Broker).
func (n *Namespace) SendBack(ctx context.Context, req *SendBackRequest) (SendBackResult, error) {
	if req == nil {
		return n.e.SendBack(ctx, nil)
	}
	r := *req
	r.Group = n.in(req.Group)
	r.Grant = n.inGrant(req.Grant)
	res, err := n.e.SendBack(ctx, &r)
	res.Topic = n.outName(res.Topic)
	return res, n.err(err)
}

// CreateTopic creates a topic in the namespace (see Engine.CreateTopic).
func (n *Namespace) CreateTopic(ctx context.Context, name string, queues int) error {
	return n.err(n.e.CreateTopic(ctx, n.in(name), queues))
}

// CreateTopicWith creates a topic with options (see Engine.CreateTopicWith).
func (n *Namespace) CreateTopicWith(ctx context.Context, name string, o TopicOptions) error {
	return n.err(n.e.CreateTopicWith(ctx, n.in(name), o))
}

// SetTopicLimits replaces a topic's limits (see Engine.SetTopicLimits).
func (n *Namespace) SetTopicLimits(ctx context.Context, name string, l TopicLimits) error {
	return n.err(n.e.SetTopicLimits(ctx, n.in(name), l))
}

// AddQueues adds queues to a topic (see Engine.AddQueues).
func (n *Namespace) AddQueues(ctx context.Context, name string, count int) error {
	return n.err(n.e.AddQueues(ctx, n.in(name), count))
}

// DeleteTopic deletes a topic of the namespace (see Engine.DeleteTopic).
func (n *Namespace) DeleteTopic(ctx context.Context, name string) error {
	return n.err(n.e.DeleteTopic(ctx, n.in(name)))
}

// SetQueueWritable opens or closes one queue (see Engine.SetQueueWritable).
func (n *Namespace) SetQueueWritable(ctx context.Context, name string, queueID int, writable bool) error {
	return n.err(n.e.SetQueueWritable(ctx, n.in(name), queueID, writable))
}

// Topic describes one topic of the namespace. Its ID is the namespace's
// (see TopicInfo.ID): not the engine's, which counts every namespace's
// creations. The first view of an engine to show an ID stores the key
// of those IDs; while the store refuses that write, Topic and Topics
// fail with its error.
func (n *Namespace) Topic(ctx context.Context, name string) (TopicInfo, error) {
	ti, err := n.e.Topic(ctx, n.in(name))
	ti.Name = n.outName(ti.Name)
	if err != nil {
		return ti, n.err(err)
	}
	ids, err := n.e.viewTopicIDs(n.name)
	if err != nil {
		return TopicInfo{}, err
	}
	ti.ID = ids.of(ti.ID)
	return ti, nil
}

// Topics lists the namespace's topics, its %RETRY% and %DLQ% topics
// included, sorted by name, with the namespace's IDs (see Topic).
func (n *Namespace) Topics(ctx context.Context) ([]TopicInfo, error) {
	all, err := n.e.listTopics(ctx, n.has)
	if err != nil {
		return nil, n.err(err)
	}
	ids, err := n.e.viewTopicIDs(n.name)
	if err != nil {
		return nil, err
	}
	out := make([]TopicInfo, 0, len(all))
	for _, t := range all {
		if name, ok := n.out(t.Name); ok {
			t.Name = name
			t.ID = ids.of(t.ID)
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (n *Namespace) outGroup(g GroupInfo) GroupInfo {
	g.Name = n.outName(g.Name)
	g.Subscriptions = mapSlice(g.Subscriptions, func(s Subscription) Subscription { s.Topic = n.outName(s.Topic); return s })
	g.Members = mapSlice(g.Members, func(m MemberInfo) MemberInfo { m.Queues = mapSlice(m.Queues, n.outRef); return m })
	g.Queues = mapSlice(g.Queues, func(q GroupQueueInfo) GroupQueueInfo { q.QueueRef = n.outRef(q.QueueRef); return q })
	return g
}

// Groups lists the namespace's consumer groups, sorted by name.
func (n *Namespace) Groups(ctx context.Context) ([]GroupInfo, error) {
	all, err := n.e.listGroups(ctx, n.has)
	if err != nil {
		return nil, n.err(err)
	}
	out := make([]GroupInfo, 0, len(all))
	for _, g := range all {
		if _, ok := n.out(g.Name); ok {
			out = append(out, n.outGroup(g))
		}
	}
	slices.SortFunc(out, func(a, b GroupInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Group describes one group of the namespace.
func (n *Namespace) Group(ctx context.Context, name string) (GroupInfo, error) {
	g, err := n.e.Group(ctx, n.in(name))
	if err != nil {
		return GroupInfo{}, n.err(err)
	}
	return n.outGroup(g), nil
}

// ResetOffsets moves a group's committed offsets (see Engine.ResetOffsets).
func (n *Namespace) ResetOffsets(ctx context.Context, group string, req ResetRequest) error {
	r := req
	if req.Offsets != nil {
		r.Offsets = make(map[QueueRef]int64, len(req.Offsets))
		for ref, off := range req.Offsets {
			r.Offsets[n.inRef(ref)] = off
		}
	}
	return n.err(n.e.ResetOffsets(ctx, n.in(group), r))
}

// ListDeadLetters lists a page of a group's dead letters (see
// Engine.ListDeadLetters).
func (n *Namespace) ListDeadLetters(ctx context.Context, group string, req ListDeadLettersRequest) ([]DLQEntry, error) {
	dls, err := n.e.ListDeadLetters(ctx, n.in(group), req)
	return mapSlice(dls, func(d DLQEntry) DLQEntry { d.Message = n.outMessage(d.Message); return d }), n.err(err)
}

// DeadLetters lists up to max dead letters of group from offset from.
//
// Deprecated: use ListDeadLetters, whose request names the two numbers.
func (n *Namespace) DeadLetters(ctx context.Context, group string, from int64, max int) ([]DLQEntry, error) {
	return n.ListDeadLetters(ctx, group, ListDeadLettersRequest{From: from, Max: max})
}

// Redrive sends dead letters back to the group's retry topic, or with
// req.ToTopic to their topics, in the namespace (see Engine.Redrive).
func (n *Namespace) Redrive(ctx context.Context, group string, req RedriveRequest) (int, error) {
	sent, err := n.e.Redrive(ctx, n.in(group), req)
	return sent, n.err(err)
}

// Delayed reports the namespace's pending delayed messages (see
// Engine.Delayed).
func (n *Namespace) Delayed(ctx context.Context, max int) (DelayedInfo, error) {
	info, err := n.e.delayed(ctx, max, func(topic string) bool { _, ok := n.out(topic); return ok })
	info.Next = mapSlice(info.Next, func(d DelayedEntry) DelayedEntry { d.QueueRef = n.outRef(d.QueueRef); return d })
	return info, n.err(err)
}

// err is an engine error as the namespace sees it: the names in its text
// unqualified, while errors.Is and errors.As still see what it wraps, but
// for a *MessageTooLargeError, which errors.As gives under the namespace's
// name of its queue (the one the puller's grant has).
func (n *Namespace) err(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if !strings.Contains(msg, n.prefix) {
		return err
	}
	// Only where a name starts: "equeue:" is no name of namespace "e". A
	// struct printed with %v (the group's subscriptions in
	// ErrSubscriptionMismatch, "[{tenant:orders *}]") starts one after "{".
	var b strings.Builder
	for i := 0; i < len(msg); {
		if strings.HasPrefix(msg[i:], n.prefix) && (i == 0 || strings.IndexByte(" \t\"'%/([{", msg[i-1]) >= 0) {
			i += len(n.prefix)
			continue
		}
		b.WriteByte(msg[i])
		i++
	}
	return &namespaceError{err: err, msg: b.String(), big: n.outTooLarge(err)}
}

// outTooLarge is the *MessageTooLargeError err holds, as the namespace
// sees it (a copy), or nil.
func (n *Namespace) outTooLarge(err error) *MessageTooLargeError {
	var big *MessageTooLargeError
	if !errors.As(err, &big) {
		return nil
	}
	cp := *big
	cp.QueueRef = n.outRef(big.QueueRef)
	return &cp
}

// namespaceError is an error whose text was mapped into a namespace.
type namespaceError struct {
	err error
	msg string
	big *MessageTooLargeError // err's, mapped into the namespace; or nil
}

func (e *namespaceError) Error() string { return e.msg }
func (e *namespaceError) Unwrap() error { return e.err }

// As gives errors.As the mapped *MessageTooLargeError, so a consumer on the
// namespace finds the queue of its grant in it, and a remote client is told
// that name, not the engine's.
func (e *namespaceError) As(target any) bool {
	p, ok := target.(**MessageTooLargeError)
	if !ok || e.big == nil {
		return false
	}
	*p = e.big
	return true
}

// AppendAsync is Append that reports through cb (see Engine.AppendAsync);
// Producer.SendAsync uses it.
func (n *Namespace) AppendAsync(ctx context.Context, req *AppendRequest, cb func(AppendResult, error)) {
	if req == nil {
		n.e.AppendAsync(ctx, nil, cb)
		return
	}
	if err := n.outside(req.Topic); err != nil {
		cb(AppendResult{}, err)
		return
	}
	r := *req
	r.Topic = n.in(req.Topic)
	r.Messages = mapSlice(req.Messages, n.inMessage)
	n.e.AppendAsync(ctx, &r, func(res AppendResult, err error) { cb(res, n.err(err)) })
}

// DeleteGroup deletes a group of the namespace and what is stored for it
// (see Engine.DeleteGroup).
func (n *Namespace) DeleteGroup(ctx context.Context, name string, o DeleteGroupOptions) error {
	return n.err(n.e.DeleteGroup(ctx, n.in(name), o))
}

// DeleteReplyTopic deletes a reply topic of the namespace (see
// Engine.DeleteReplyTopic).
func (n *Namespace) DeleteReplyTopic(ctx context.Context, name string) error {
	if !isReplyTopic(name) {
		return fmt.Errorf("%w: %q is not a reply topic", ErrInvalidName, name)
	}
	return n.err(n.e.DeleteReplyTopic(ctx, n.in(name)))
}
