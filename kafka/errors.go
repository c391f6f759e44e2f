package kafka

import (
	"context"
	"errors"

	"github.com/equeue-go/equeue"
)

// Kafka protocol error codes the listener answers with.
const (
	errNone                       int16 = 0
	errOffsetOutOfRange           int16 = 1
	errCorruptMessage             int16 = 2
	errUnknownTopicOrPartition    int16 = 3
	errMessageTooLarge            int16 = 10
	errCoordinatorNotAvailable    int16 = 15
	errInvalidTopic               int16 = 17
	errRecordListTooLarge         int16 = 18
	errIllegalGeneration          int16 = 22
	errInconsistentGroupProtocol  int16 = 23
	errInvalidGroupID             int16 = 24
	errUnknownMemberID            int16 = 25
	errInvalidSessionTimeout      int16 = 26
	errRebalanceInProgress        int16 = 27
	errTopicAuthorizationFailed   int16 = 29
	errGroupAuthorizationFailed   int16 = 30
	errClusterAuthorizationFailed int16 = 31
	errInvalidTimestamp           int16 = 32
	errUnsupportedSASLMechanism   int16 = 33
	errTopicAlreadyExists         int16 = 36
	errInvalidPartitions          int16 = 37
	errInvalidReplicationFactor   int16 = 38
	errInvalidRequest             int16 = 42
	errInvalidRequiredAcks        int16 = 21
	errUnsupportedForMessageFmt   int16 = 43
	errOutOfOrderSequence         int16 = 45
	errDuplicateSequence          int16 = 46
	errInvalidProducerEpoch       int16 = 47
	errUnsupportedVersion         int16 = 35
	errInvalidConfig              int16 = 40
	errSASLAuthenticationFailed   int16 = 58
	errKafkaStorageError          int16 = 56
	errGroupIDNotFound            int16 = 69
	errNonEmptyGroup              int16 = 68
	errUnknownProducerID          int16 = 59
	errRequestTimedOut            int16 = 7
	errInvalidRecord              int16 = 87
	errUnsupportedCompressionType int16 = 76
	errOffsetNotAvailable         int16 = 78
	errGroupMaxSizeReached        int16 = 81
	errFencedInstanceID           int16 = 82
	errMemberIDRequired           int16 = 79
	errNotLeaderOrFollower        int16 = 6
	errLeaderNotAvailable         int16 = 5
	errNotCoordinator             int16 = 16
	errNotController              int16 = 41
	errUnknownTopicID             int16 = 100
)

// errorCode maps an engine error to the closest Kafka error code.
func errorCode(err error) int16 {
	switch {
	case err == nil:
		return errNone
	case errors.Is(err, equeue.ErrTopicNotFound), errors.Is(err, equeue.ErrQueueNotFound):
		return errUnknownTopicOrPartition
	case errors.Is(err, errNoTopicWithID):
		return errUnknownTopicID
	case errors.Is(err, equeue.ErrTopicExists):
		return errTopicAlreadyExists
	case errors.Is(err, equeue.ErrInvalidName):
		return errInvalidTopic
	case errors.Is(err, equeue.ErrMessageTooLarge):
		return errMessageTooLarge
	case errors.Is(err, equeue.ErrBatchTooLarge):
		return errRecordListTooLarge
	case errors.Is(err, equeue.ErrQueueNotWritable):
		return errInvalidPartitions
	case errors.Is(err, equeue.ErrInvalidArgument), errors.Is(err, equeue.ErrPartialDuplicate):
		// A partial duplicate is refused for good: a retry of the batch
		// meets the same dedup window.
		return errInvalidRecord
	case errors.Is(err, context.DeadlineExceeded):
		return errRequestTimedOut
	case errors.Is(err, equeue.ErrClosed):
		// The engine is closing: as a Kafka broker shutting down, tell
		// clients to look the partition's leader up again and retry
		// (COORDINATOR_NOT_AVAILABLE is a group code; the Java consumer's
		// fetcher throws on it). Group calls get NOT_COORDINATOR
		// (coordinatorCode).
		return errNotLeaderOrFollower
	case errors.Is(err, equeue.ErrUnsupportedFormat):
		// A fetch at a record of a format version the engine cannot read
		// (written by a newer engine): KAFKA_STORAGE_ERROR is retriable,
		// so clients stay at that offset, retrying, until an engine that
		// reads it serves the partition; they never skip it.
		return errKafkaStorageError
	case errors.Is(err, equeue.ErrNotLeader):
		// A cluster node that does not lead (serve --cluster-id): nothing was
		// stored; clients retry, and succeed once this node leads again.
		return errNotLeaderOrFollower
	}
	// A store failure: nothing stored, or (ErrIndeterminate) written but
	// not known durable. KAFKA_STORAGE_ERROR is retriable, so clients
	// retry; after an unknown outcome the retry may store a batch twice
	// unless the topic has a dedup window (see setIDs).
	return errKafkaStorageError
}

// coordinatorCode maps an engine error met while serving a group (its
// offsets, a KIP-848 heartbeat's topic reads) to the code Kafka's group
// coordinator answers. Kafka's coordinator turns the errors of its offsets
// log NOT_LEADER_OR_FOLLOWER and KAFKA_STORAGE_ERROR into NOT_COORDINATOR,
// on which group clients look the coordinator up again and retry: the
// partition errors are not among those they retry (the Java consumer fails
// a commit with them, and its poll on an offset fetch; franz-go reports
// the commit failed, and its KIP-848 member gives up its partitions and
// joins again). So a node that stopped leading, or a store failure, sends
// the group's clients to the coordinator as it is then.
func coordinatorCode(err error) int16 {
	switch code := errorCode(err); code {
	case errNotLeaderOrFollower, errKafkaStorageError:
		return errNotCoordinator
	default:
		return code
	}
}
