package allocate

type average struct{}

// Average returns the strategy of RocketMQ's AllocateMessageQueueAveragely.
//
// Queues are sorted by (Topic, ID) and consumer IDs as strings. With n
// queues and m consumers, every consumer gets one contiguous run of n/m
// queues, and the first n%m consumers one queue more. When there are fewer
// queues than consumers, the first n consumers get one queue each and the
// rest get none.
func Average() Strategy { return average{} }

func (average) Name() string { return nameAverage }

func (average) Allocate(queues []Queue, consumers []string) map[string][]Queue {
	cs := normalizeConsumers(consumers)
	out := emptyResult(cs)
	if len(cs) == 0 {
		return out
	}
	qs := normalizeQueues(queues)
	for i, c := range cs {
		start, end := averageRun(len(qs), len(cs), i)
		if start < end {
			// The three-index slice stops an append by the caller from
			// spilling into the next consumer's queues.
			out[c] = qs[start:end:end]
		}
	}
	return out
}

// averageRun returns the run [start, end) of n sorted queues that the i-th
// of m sorted consumers gets: n/m queues, one more for the first n%m
// consumers, or with fewer queues than consumers one each for the first n.
// It is empty (start >= end) for a consumer that gets none.
func averageRun(n, m, i int) (start, end int) {
	mod := n % m
	var size int
	switch {
	case n <= m:
		size = 1
	case i < mod:
		size = n/m + 1
	default:
		size = n / m
	}
	start = i * size
	if i >= mod {
		start += mod
	}
	return start, start + min(size, n-start)
}
