package kafka

// checkFetcher says whether an OffsetFetch v9+ of group may be answered
// to the member it names (KIP-848: the member ID and member epoch), as
// Kafka checks it (ConsumerGroup.validateOffsetFetch): a fetch that names
// no member and no epoch (an admin client's, or a consumer's outside any
// group) is answered; in a KIP-848 group, an empty one too, a member ID
// the group does not know gets UNKNOWN_MEMBER_ID, and an epoch other than
// the member's, older or newer, STALE_MEMBER_EPOCH (as does any epoch of
// a static member away for a while, whose member epoch is -2 then): the
// member's offsets may be moving under another member. A classic group's
// fetch is not checked, as in Kafka, nor is one of a group that has only
// offsets.
func (c *coordinator) checkFetcher(group string, member *string, epoch int32) int16 {
	if member == nil && epoch < 0 {
		return errNone
	}
	c.lock()
	defer c.mu.Unlock()
	cg := c.cgroups[group]
	if cg == nil {
		return errNone
	}
	var m *cmember
	if member != nil {
		m = cg.members[*member]
	}
	switch {
	case m == nil:
		return errUnknownMemberID
	case m.away || epoch != m.epoch:
		return errStaleMemberEpoch
	}
	return errNone
}
