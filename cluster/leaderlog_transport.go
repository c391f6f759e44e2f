package cluster

import "github.com/hashicorp/raft"

// clampCommit lowers the commit index an AppendEntries call carries to
// what this leader has stored itself (leaderlog.go).
func (t *progressTransport) clampCommit(args *raft.AppendEntriesRequest) {
	if t.clamp != nil {
		args.LeaderCommitIndex = t.clamp(args.LeaderCommitIndex)
	}
}

// AppendEntriesPipeline opens the transport's pipeline, whose calls carry
// the clamped commit index too.
func (t *progressTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return clampedPipeline{AppendPipeline: p, t: t}, nil
}

// clampedPipeline is a pipeline whose calls carry the clamped commit index.
type clampedPipeline struct {
	raft.AppendPipeline
	t *progressTransport
}

// AppendEntries sends args with its commit index clamped.
func (p clampedPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	p.t.clampCommit(args)
	return p.AppendPipeline.AppendEntries(args, resp)
}
