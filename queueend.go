package equeue

// Queue ends at open. A queue's next offset comes back from the store
// (Store.Bounds, raised to its watermark by loadTopics). Damage the store
// cannot see can bring it back lower than offsets the engine gave out: a
// lost tail of Badger's LSM tree, a copy of the directory restored from an
// older backup, a value log cut in data written before end marks
// (store/badger_endmark.go). The next sends would then get offsets that
// messages had had, and a group committed past them would never see them.
//
// Facts Open loads anyway prove offsets were given out: a group's
// committed offset C of a queue (it consumed every offset below C), a
// send-back mark at offset o of the queue's incarnation (the message at o
// was pulled), a dedup entry of the topic's window at offset o (the
// message at o was stored, in the write that recorded the entry; a resend
// of its ID is answered with o), a redriven mark at offset o of a
// group's dead-letter topic (the dead letter at o was redriven; a later
// one stored at o would be taken as redriven, and never be), and a lost
// range an earlier open stored for the queue (queuelost.go: that open had
// given out offsets up to its end). raiseQueueEnds raises each queue's end
// to the highest of them, so no offset is given out twice. The offsets
// between the store's end and the raised one are lost: they are logged
// and counted in Stats().CorruptRecords, reads pass them (readQueue: no
// record is read there), and appends go on past them, which the store
// packs as they come. Until a send stores a record past them, every open
// finds them again; they are stored as the queue's lost ranges
// (storeLost) before any send can, so that later opens still know them.

// raiseQueueEnds raises the end of every queue that a group's committed
// offset, a send-back mark, a dedup entry, a redriven mark or a stored
// lost range shows to be higher, and stores the lost ranges of the queues
// it raised. Open calls it once the dedup windows and the groups are
// loaded, before the writer starts. It walks each window's entries once,
// in memory, and scans the redriven marks once.
func (e *Engine) raiseQueueEnds() {
	proven := map[*queue]int64{}
	// prove notes that ref's queue ends at end at least, if ref names a
	// queue of a topic that incarnation accepts. Committed offsets are
	// deleted with their topic, in the same write: any incarnation of the
	// name is theirs. A send-back mark may outlive its topic, and names
	// the incarnation it was written for.
	prove := func(ref QueueRef, incarnation func(*topic) bool, end int64) {
		t, ok := e.lookupTopic(ref.Topic)
		if !ok || !incarnation(t) {
			return
		}
		if q, err := t.queue(ref.Queue); err == nil {
			proven[q] = max(proven[q], end)
		}
	}
	anyTopic := func(*topic) bool { return true }
	for _, g := range e.groups.snapshot() {
		g.mu.Lock()
		for k, off := range g.offsets {
			prove(k.q, anyTopic, off)
		}
		g.mu.Unlock()
		g.sbMu.Lock()
		for k, byOff := range g.sentBack {
			for off, m := range byOff {
				prove(k.q, func(t *topic) bool { return t.id == m.topicID }, off+1)
			}
		}
		g.sbMu.Unlock()
	}
	// A window is kept by topic ID (loadDedup loads only the windows of
	// live topics): its entries are its incarnation's.
	for tid, x := range e.dedup {
		t := e.topicByID(tid)
		if t == nil {
			continue
		}
		for qid, end := range x.ends() {
			prove(QueueRef{Topic: t.name, Queue: qid}, func(t *topic) bool { return t.id == tid }, end)
		}
	}
	// A redriven mark names its dead letter's offset in its group's
	// dead-letter topic, and the incarnation it was written for (a mark of
	// the first format, one Open could not migrate, or a lost one, answers
	// for any).
	err := e.scanRedriven(func(group string, off int64, v []byte) {
		prove(QueueRef{Topic: DLQTopic(group)}, func(t *topic) bool {
			ok, _ := redrivenIn(v, t.id)
			return ok
		}, off+1)
	})
	if err != nil {
		e.log.Warn("queue ends at open: could not read the redriven marks", "err", err)
	}
	// Lost ranges were loaded for the queues of live topics only, and are
	// deleted with them.
	for _, t := range e.topics {
		for _, q := range t.queueList() {
			if _, _, lost := q.extent(); len(lost) > 0 {
				proven[q] = max(proven[q], lost.end())
			}
		}
	}
	var raised []*queue
	for q, end := range proven {
		if was, ok := q.raiseEnd(end); ok {
			raised = append(raised, q)
			e.stats.corrupt.Add(uint64(end - was))
			e.log.Error("queue ends below offsets already given out: the offsets between are lost, and given out no more",
				"topic", q.topic.name, "queue", q.id, "stored_end", was, "end", end)
		}
	}
	e.storeLost(raised)
}
