package cluster

import "github.com/hashicorp/raft"

// clampCommit lowers the commit index an AppendEntries call carries to
// what the call proves (commitbound.go) and to what this leader has stored
// itself (leaderlog.go).
func (t *progressTransport) clampCommit(args *raft.AppendEntriesRequest) {
	verifiedCommit(args)
	if t.clamp != nil {
		args.LeaderCommitIndex = t.clamp(args.LeaderCommitIndex)
	}
}

// AppendEntriesPipeline opens the transport's pipeline, whose calls carry
// the clamped commit index too, and which never wedges (pipeline.go).
func (t *progressTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	note := func(f raft.AppendFuture) { t.noteAnswer(id, f.Start(), f.Request(), f.Response()) }
	return newDrainedPipeline(p, t.clampCommit, note), nil
}
