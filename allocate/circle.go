package allocate

type averageByCircle struct{}

// AverageByCircle returns the strategy of RocketMQ's
// AllocateMessageQueueAveragelyByCircle: queues sorted by (Topic, ID) are
// dealt out one at a time to the consumers sorted as strings, so consumer i
// of m gets every queue whose index j satisfies j % m == i.
func AverageByCircle() Strategy { return averageByCircle{} }

func (averageByCircle) Name() string { return nameAverageByCircle }

func (averageByCircle) Allocate(queues []Queue, consumers []string) map[string][]Queue {
	cs := normalizeConsumers(consumers)
	if len(cs) == 0 {
		return map[string][]Queue{}
	}
	qs := normalizeQueues(queues)
	n, m := len(qs), len(cs)
	out := make(map[string][]Queue, m)
	for i, c := range cs {
		size := n / m
		if i < n%m {
			size++
		}
		owned := make([]Queue, 0, size)
		for j := i; j < n; j += m {
			owned = append(owned, qs[j])
		}
		out[c] = owned
	}
	return out
}
