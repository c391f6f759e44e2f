package kafka_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue/kafka"
)

// TestDescribeConfigs_BrokerIsThisBroker: a broker's DescribeConfigs
// gives its broker.id as Metadata names the broker (a cluster node's
// listener has its node's ID, not 0), and, as from Kafka, a broker
// resource naming another broker ID is refused INVALID_REQUEST, while an
// empty name (the brokers' default config) and the broker's own ID are
// answered.
func TestDescribeConfigs_BrokerIsThisBroker(t *testing.T) {
	for _, clustered := range []bool{false, true} {
		name := "single engine"
		if clustered {
			name = "cluster leader"
		}
		t.Run(name, func(t *testing.T) {
			e := openEngine(t, nil)
			ctx := testCtx(t)
			var addr string
			if clustered {
				node := &fakeNode{Engine: e, id: "n1"}
				node.setLeader("n1", "")
				addr = serve(t, node, nil)
			} else {
				addr = serve(t, e, nil)
			}
			cl := kclient(t, addr)
			md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			require.NoError(t, err)
			require.Len(t, md.Brokers, 1)
			self := md.Brokers[0].NodeID
			if clustered {
				require.Equal(t, kafka.BrokerID("n1"), self)
			}
			describe := func(resource string) kmsg.DescribeConfigsResponseResource {
				t.Helper()
				req := kmsg.NewPtrDescribeConfigsRequest()
				r := kmsg.NewDescribeConfigsRequestResource()
				r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, resource
				req.Resources = append(req.Resources, r)
				// Sent to this broker, whatever broker the resource names.
				raw, err := cl.Broker(int(self)).Request(ctx, req)
				require.NoError(t, err)
				resp := raw.(*kmsg.DescribeConfigsResponse)
				require.Len(t, resp.Resources, 1)
				return resp.Resources[0]
			}
			for _, resource := range []string{strconv.Itoa(int(self)), ""} {
				rr := describe(resource)
				require.Equal(t, int16(0), rr.ErrorCode, "resource %q", resource)
				got := map[string]string{}
				for _, c := range rr.Configs {
					got[c.Name] = *c.Value
				}
				assert.Equal(t, strconv.Itoa(int(self)), got["broker.id"], "resource %q: the broker.id Metadata gives", resource)
			}
			other := describe(strconv.Itoa(int(self) + 1))
			assert.Equal(t, int16(42), other.ErrorCode, "INVALID_REQUEST: another broker's")
			assert.Empty(t, other.Configs)
		})
	}
}
