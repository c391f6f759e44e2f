package kafka

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	produceKey          int16 = 0
	fetchKey            int16 = 1
	listOffsetsKey      int16 = 2
	metadataKey         int16 = 3
	offsetCommitKey     int16 = 8
	offsetFetchKey      int16 = 9
	findCoordinatorKey  int16 = 10
	joinGroupKey        int16 = 11
	heartbeatKey        int16 = 12
	leaveGroupKey       int16 = 13
	syncGroupKey        int16 = 14
	describeGroupsKey   int16 = 15
	listGroupsKey       int16 = 16
	saslHandshakeKey    int16 = 17
	apiVersionsKey      int16 = 18
	createTopicsKey     int16 = 19
	deleteTopicsKey     int16 = 20
	initProducerIDKey   int16 = 22
	describeConfigsKey  int16 = 32
	saslAuthenticateKey int16 = 36
	createPartitionsKey int16 = 37
	consumerGroupHBKey  int16 = 68
	consumerGroupDKey   int16 = 69
)

// versionRange is the versions of one API the listener serves, and the
// rights any one of which a caller needs for it (0: none, for the calls
// that come before authentication).
type versionRange struct {
	min, max int16
	need     Rights
}

// anyRight is what Metadata, ListOffsets and FindCoordinator need: any one
// right. A token that holds none authenticates but reads nothing, as over
// gRPC, where it is refused every call.
const anyRight = RightAll

// supported lists every API served. Produce is advertised from v0 as Kafka
// does (older librdkafka stops compressing when it sees a higher minimum),
// though only record batches (v3+) are accepted. Fetch stops at v12, the
// last version that names topics instead of topic IDs; OffsetCommit v10,
// OffsetFetch v10 and Metadata v12 may name them by ID (topicsByID);
// transactions are not offered.
var supported = map[int16]versionRange{
	produceKey:          {0, 9, RightProduce},
	fetchKey:            {4, 12, RightConsume},
	listOffsetsKey:      {1, 7, anyRight},
	metadataKey:         {0, 12, anyRight},
	offsetCommitKey:     {2, 10, RightConsume},
	offsetFetchKey:      {1, 10, RightConsume},
	findCoordinatorKey:  {0, 4, anyRight},
	joinGroupKey:        {0, 9, RightConsume},
	heartbeatKey:        {0, 4, RightConsume},
	leaveGroupKey:       {0, 5, RightConsume},
	syncGroupKey:        {0, 5, RightConsume},
	describeGroupsKey:   {0, 5, RightAdmin},
	listGroupsKey:       {0, 5, RightAdmin},
	saslHandshakeKey:    {1, 1, 0},
	apiVersionsKey:      {0, 3, 0},
	createTopicsKey:     {0, 7, RightAdmin},
	deleteTopicsKey:     {0, 5, RightAdmin},
	initProducerIDKey:   {0, 4, RightProduce},
	describeConfigsKey:  {0, 4, RightAdmin},
	saslAuthenticateKey: {0, 2, 0},
	createPartitionsKey: {0, 3, RightAdmin},
	consumerGroupHBKey:  {0, 1, RightConsume},
	consumerGroupDKey:   {0, 1, RightAdmin},
}

func (c *conn) apiVersions() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	keys := make([]int, 0, len(supported))
	for k := range supported {
		keys = append(keys, int(k))
	}
	sort.Ints(keys)
	for _, k := range keys {
		v := supported[int16(k)]
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: int16(k), MinVersion: v.min, MaxVersion: v.max})
	}
	return resp
}

// dispatch answers one decoded request. An error closes the connection.
func (c *conn) dispatch(h header, req kmsg.Request) (kmsg.Response, error) {
	if need := supported[h.key].need; need != 0 && c.rights&need == 0 {
		return c.refuse(req, denial)
	}
	if c.s.node != nil && servedByLeaderOnly[h.key] && !c.leader().self {
		return c.refuse(req, notLeading)
	}
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		return c.apiVersions(), nil
	case *kmsg.SASLHandshakeRequest:
		return c.saslHandshake(r), nil
	case *kmsg.SASLAuthenticateRequest:
		return c.saslAuthenticate(r)
	case *kmsg.MetadataRequest:
		return c.metadata(r), nil
	case *kmsg.ProduceRequest:
		return c.produce(r)
	case *kmsg.FetchRequest:
		return c.fetchRecords(r), nil
	case *kmsg.ListOffsetsRequest:
		return c.listOffsets(r), nil
	case *kmsg.InitProducerIDRequest:
		return c.initProducerID(r), nil
	case *kmsg.FindCoordinatorRequest:
		return c.findCoordinator(r), nil
	case *kmsg.JoinGroupRequest:
		return c.s.groups.join(c.ctx, h, c.nc.RemoteAddr().String(), r), nil
	case *kmsg.SyncGroupRequest:
		return c.s.groups.sync(c.ctx, r), nil
	case *kmsg.HeartbeatRequest:
		return c.s.groups.heartbeat(r), nil
	case *kmsg.LeaveGroupRequest:
		return c.s.groups.leave(c.ctx, r), nil
	case *kmsg.OffsetCommitRequest:
		return c.s.groups.offsetCommit(c.ctx, r), nil
	case *kmsg.OffsetFetchRequest:
		return c.s.groups.offsetFetch(c.ctx, r), nil
	case *kmsg.DescribeGroupsRequest:
		return c.s.groups.describe(c.ctx, r), nil
	case *kmsg.ListGroupsRequest:
		return c.s.groups.list(c.ctx, r), nil
	case *kmsg.CreateTopicsRequest:
		return c.createTopics(r), nil
	case *kmsg.DeleteTopicsRequest:
		return c.deleteTopics(r), nil
	case *kmsg.CreatePartitionsRequest:
		return c.createPartitions(r), nil
	case *kmsg.DescribeConfigsRequest:
		return c.describeConfigs(r), nil
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return c.s.groups.consumerHeartbeat(c.ctx, h, c.nc.RemoteAddr().String(), r), nil
	case *kmsg.ConsumerGroupDescribeRequest:
		return c.s.groups.describeConsumer(r), nil
	}
	return nil, fmt.Errorf("no handler for %s", kmsg.NameForKey(h.key))
}
