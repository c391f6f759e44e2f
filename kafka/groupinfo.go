package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// Finding and describing groups: FindCoordinator, DescribeGroups, ListGroups.

// groupLister is the optional capability of listing the engine's groups
// (equeue.Engine.Groups): with it, groups that have committed offsets but no
// live member since the listener started (after a restart) are listed and
// described as Empty, as Kafka does.
type groupLister interface {
	Groups(ctx context.Context) ([]equeue.GroupInfo, error)
}

// groupDescriber is the optional capability of describing one of the
// engine's groups (equeue.Engine.Group): with it, a join, or a commit
// without a generation, is refused while a native group of that name
// exists (nativeGroup).
type groupDescriber interface {
	Group(ctx context.Context, name string) (equeue.GroupInfo, error)
}

// validGroup reports whether the broker can store a group's offsets under
// name: a valid engine name and, over a namespace (*equeue.Namespace, whose
// names are plain), one without equeue.NamespaceSeparator, which the
// namespace refuses.
func (s *Server) validGroup(name string) bool {
	if name == "" || equeue.ValidateName(name) != nil {
		return false
	}
	_, ns := s.b.(*equeue.Namespace)
	return !ns || !strings.Contains(name, equeue.NamespaceSeparator)
}

// nativeGroup reports whether the engine has a native consumer group of
// that name: one with live members, or one its consumers made (it has
// subscriptions), which keeps its name, subscriptions and offsets after
// they stopped, until it is deleted (Engine.DeleteGroup, equeue
// delete-group) or expires (Options.GroupIdleTTL). Such a group's own
// commits rule its offsets (Engine.CommitGroupOffsets refuses others with
// equeue.ErrFenced while it has members), so a Kafka member joining under
// its name would consume without ever being able to commit; and offsets
// committed while it has none would land in the native group, moving its
// offsets of a topic both read, and listed nowhere for a topic only the
// Kafka group reads (the engine lists a native group's subscribed
// queues). Without the capability, or when the engine cannot say, it
// reports false and only the engine's refusal stands.
func (c *coordinator) nativeGroup(ctx context.Context, group string) bool {
	gd, ok := c.s.b.(groupDescriber)
	if !ok {
		return false
	}
	gi, err := gd.Group(ctx, group)
	if err != nil {
		if !errors.Is(err, equeue.ErrGroupNotFound) {
			c.s.log.Warn("kafka: describe group", "group", group, "err", err)
		}
		return false
	}
	return len(gi.Members) > 0 || len(gi.Subscriptions) > 0
}

// storedGroups returns the names of the engine's groups that have no
// subscriptions of their own (Kafka-protocol groups: the engine only keeps
// their offsets).
func (c *coordinator) storedGroups(ctx context.Context) map[string]bool {
	gl, ok := c.s.b.(groupLister)
	if !ok {
		return nil
	}
	gs, err := gl.Groups(ctx)
	if err != nil {
		c.s.log.Warn("kafka: list stored groups", "err", err)
		return nil
	}
	out := map[string]bool{}
	for _, g := range gs {
		if len(g.Subscriptions) == 0 && len(g.Members) == 0 {
			out[g.Name] = true
		}
	}
	return out
}

// findCoordinator names the leading broker for every group: this one, or
// on a cluster follower the leader's listener (COORDINATOR_NOT_AVAILABLE
// while no leader is known). Other coordinators (transactions, share
// groups) are refused INVALID_REQUEST, as InitProducerId with a
// transactional ID is: they are not offered, and clients retry
// COORDINATOR_NOT_AVAILABLE until their own timeout, but not this.
func (c *conn) findCoordinator(req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	v := c.leader()
	code := errNone
	var msg *string
	switch {
	case req.CoordinatorType != 0:
		code = errInvalidRequest
		msg = kmsg.StringPtr(fmt.Sprintf("kafka: coordinator type %d: only groups are coordinated here, there are no transactions", req.CoordinatorType))
	case v.id < 0:
		code = errCoordinatorNotAvailable
	}
	if req.GetVersion() < 4 {
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = code, v.id, v.host, v.port
		if code != errNone {
			resp.NodeID, resp.Host, resp.Port, resp.ErrorMessage = -1, "", -1, msg
		}
		return resp
	}
	for _, k := range req.CoordinatorKeys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key, rc.NodeID, rc.Host, rc.Port, rc.ErrorCode = k, v.id, v.host, v.port, code
		if code != errNone {
			rc.NodeID, rc.Host, rc.Port, rc.ErrorMessage = -1, "", -1, msg
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return resp
}

// The states of a KIP-848 group, as Kafka names a consumer group's.
const (
	cgroupAssigning   = "Assigning"
	cgroupReconciling = "Reconciling"
)

// state is how a KIP-848 group reads to DescribeGroups, ListGroups and
// ConsumerGroupDescribe, as Kafka's coordinator works a consumer group's
// state out: Empty once its last member left; Assigning while the group
// epoch is ahead of the target's (a member left or was dropped, and no
// heartbeat computed the target again yet); Reconciling while a member is
// not at the target's epoch or does not hold exactly its share of it (it
// is releasing a partition, or waits for one another member has), or is a
// static member away (member epoch -2, staticmembers.go); else Stable.
func (g *cgroup) state() string {
	switch {
	case len(g.members) == 0:
		return stateEmpty.String()
	case g.target == nil || g.epoch != g.targetEpoch:
		return cgroupAssigning
	}
	for id, m := range g.members {
		if m.away || m.epoch != g.targetEpoch || len(m.releasing) > 0 || !maps.Equal(m.assigned, g.target[id]) {
			return cgroupReconciling
		}
	}
	return stateStable.String()
}

func (c *coordinator) describe(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	stored := c.storedGroups(ctx)
	c.lock()
	defer c.mu.Unlock()
	for _, name := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = name
		g := c.groups[name]
		if cg := c.cgroups[name]; cg != nil && (g == nil || len(g.members) == 0) {
			// A KIP-848 group, described as classic clients can read it:
			// its members, without protocol metadata or assignments.
			rg.State, rg.ProtocolType = cg.state(), consumerProtocolType
			for _, id := range slices.Sorted(maps.Keys(cg.members)) {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID = id
				if in := cg.members[id].instanceID; in != "" {
					rm.InstanceID = kmsg.StringPtr(in)
				}
				rg.Members = append(rg.Members, rm)
			}
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if g == nil {
			rg.State = "Dead"
			if stored[name] {
				rg.State, rg.ProtocolType = stateEmpty.String(), "consumer"
			}
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State, rg.ProtocolType = g.state.String(), g.protocolType
		if g.state == stateStable || g.state == stateCompleting {
			rg.Protocol = g.protocol
		}
		ids := slices.Sorted(maps.Keys(g.members))
		for _, id := range ids {
			m := g.members[id]
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = id, m.instanceID, m.clientID, m.clientHost
			for _, p := range m.protocols {
				if p.Name == g.protocol {
					rm.ProtocolMetadata = p.Metadata
				}
			}
			rm.MemberAssignment = m.assignment
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (c *coordinator) list(ctx context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := kmsg.NewPtrListGroupsResponse()
	stored := c.storedGroups(ctx)
	c.lock()
	defer c.mu.Unlock()
	names := make([]string, 0, len(c.groups)+len(c.cgroups)+len(stored))
	for n := range c.groups {
		names = append(names, n)
	}
	for n := range c.cgroups {
		if c.groups[n] == nil {
			names = append(names, n)
		}
	}
	for n := range stored {
		if c.groups[n] == nil && c.cgroups[n] == nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		state, ptype, gtype := stateEmpty.String(), "consumer", "classic"
		if g := c.groups[n]; g != nil {
			state, ptype = g.state.String(), g.protocolType
		}
		if cg := c.cgroups[n]; cg != nil && (c.groups[n] == nil || len(c.groups[n].members) == 0) {
			state, ptype, gtype = cg.state(), consumerProtocolType, "consumer"
		}
		if len(req.StatesFilter) > 0 && !slices.ContainsFunc(req.StatesFilter, func(s string) bool { return strings.EqualFold(s, state) }) {
			continue
		}
		if len(req.TypesFilter) > 0 && !slices.ContainsFunc(req.TypesFilter, func(t string) bool { return strings.EqualFold(t, gtype) }) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = n, ptype, state, gtype
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}
