package remote

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// mdPullLater is the header in which the server tells which pulls of a
// PullMany call that found nothing it put off for want of room in the
// answer (laterPull): their indexes in the call, comma-separated. Such a
// pull may have a message that fits the client's limit alone but not
// next to the other pulls' answers; the call that put it off was answered
// at once, and the same call asked again would be too, with nothing for
// anyone. The client asks each of them in a call of its own, without
// waiting, before it asks the others again. A server of an older version
// sends no such header.
const mdPullLater = "equeue-pull-later"

// tellLater sets mdPullLater on the answer of a PullMany call that found
// nothing, naming the pulls it put off; it does nothing when there are
// none.
func tellLater(ctx context.Context, later []int) {
	if len(later) == 0 {
		return
	}
	var b strings.Builder
	for i, n := range later {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(n))
	}
	// Only an answer already sent fails it: then there is no one to tell.
	_ = grpc.SetHeader(ctx, metadata.Pairs(mdPullLater, b.String()))
}

// putOff returns the indexes, below n, of the pulls a PullMany answer's
// header says the server put off (mdPullLater). What is not such an index
// is ignored.
func putOff(header metadata.MD, n int) []int {
	var out []int
	for _, v := range header.Get(mdPullLater) {
		for f := range strings.SplitSeq(v, ",") {
			i, err := strconv.Atoi(strings.TrimSpace(f))
			if err == nil && i >= 0 && i < n {
				out = append(out, i)
			}
		}
	}
	return out
}
